#include "common/http_url.h"

#include <re2/re2.h>

namespace fingerprintd {

std::string HttpUrl::ToString() const {
  const std::string bracketed = host.find(':') != std::string::npos ? "[" + host + "]" : host;
  return std::string(tls ? "https://" : "http://") + bracketed + ":" + port + prefix;
}

StatusOr<HttpUrl> ParseHttpUrl(const std::string& url) {
  HttpUrl out;
  std::string scheme;
  std::string port;
  static const RE2 kUrl(R"((https?)://(\[[0-9a-fA-F:.]+\]|[A-Za-z0-9._-]+)(?::(\d{1,5}))?(/\S*)?)");
  if (!RE2::FullMatch(url, kUrl, &scheme, &out.host, &port, &out.prefix)) {
    return InvalidArgumentError("expected http(s)://host[:port][/path], got '" + url + "'");
  }
  out.tls = scheme == "https";
  if (out.host.starts_with("[")) out.host = out.host.substr(1, out.host.size() - 2);
  if (port.empty()) port = out.tls ? "443" : "80";
  if (std::stoi(port) == 0 || std::stoi(port) > 65535) {
    return InvalidArgumentError("port out of range in '" + url + "'");
  }
  out.port = port;
  while (out.prefix.ends_with("/")) out.prefix.pop_back();
  return out;
}

}  // namespace fingerprintd
