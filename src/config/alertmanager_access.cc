// The alertmanager section's checks (alertmanager_access.h).
#include "config/alertmanager_access.h"

#include <re2/re2.h>

#include <string>

namespace fingerprintd::config {

StatusOr<std::string> ParseGeneratorUrlBase(std::string_view url) {
  static const RE2 kBase(
      R"(https?://(?:\[[0-9a-fA-F:.]+\]|[A-Za-z0-9._-]+)(?::(\d{1,5}))?(?:/[^\s?#]*)?)");
  std::string port;
  if (!RE2::FullMatch(url, kBase, &port)) {
    return InvalidArgumentError(
        "expected http(s)://host[:port][/path] with no query or fragment, got '" +
        std::string(url) + "'");
  }
  if (!port.empty() && (std::stoi(port) == 0 || std::stoi(port) > 65535)) {
    return InvalidArgumentError("port out of range in '" + std::string(url) + "'");
  }
  std::string base(url);
  while (base.ends_with("/")) base.pop_back();
  return base;
}

Status CheckAlertmanagerAccess(const HttpUrl& url, const HttpClientTls& tls,
                               const HttpClientAuth& auth) {
  const bool tls_set = !tls.ca_file.empty() || !tls.cert_file.empty() || !tls.key_file.empty() ||
                       !tls.server_name.empty();
  if (tls_set && !url.tls) {
    return InvalidArgumentError("alertmanager.tls_config: needs an https:// url, got " +
                                url.ToString());
  }
  const bool basic = !auth.username.empty() || !auth.password_file.empty();
  if (basic && !auth.bearer_token_file.empty()) {
    return InvalidArgumentError(
        "alertmanager: basic_auth and bearer_token_file are two ways to log in: give one");
  }
  if (basic && (auth.username.empty() || auth.password_file.empty())) {
    return InvalidArgumentError("alertmanager.basic_auth: username and password_file go together");
  }
  return OkStatus();
}

}  // namespace fingerprintd::config
