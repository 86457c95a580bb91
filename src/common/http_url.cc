#include "common/http_url.h"

#include <re2/re2.h>

namespace fingerprintd {

StatusOr<HttpUrl> ParseHttpUrl(const std::string& url) {
  if (url.starts_with("https://")) {
    return InvalidArgumentError("https is not supported (no TLS client): use http://, or a TLS " +
                                std::string("proxy in front of Alertmanager; got '") + url + "'");
  }
  HttpUrl out;
  std::string port;
  static const RE2 kUrl(R"(http://(\[[0-9a-fA-F:.]+\]|[A-Za-z0-9._-]+)(?::(\d{1,5}))?(/\S*)?)");
  if (!RE2::FullMatch(url, kUrl, &out.host, &port, &out.prefix)) {
    return InvalidArgumentError("expected http://host[:port][/path], got '" + url + "'");
  }
  if (out.host.starts_with("[")) out.host = out.host.substr(1, out.host.size() - 2);
  if (port.empty()) port = "80";
  if (std::stoi(port) == 0 || std::stoi(port) > 65535) {
    return InvalidArgumentError("port out of range in '" + url + "'");
  }
  out.port = port;
  while (out.prefix.ends_with("/")) out.prefix.pop_back();
  return out;
}

}  // namespace fingerprintd
