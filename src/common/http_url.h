// An http:// URL taken apart for a client that connects itself (the
// Alertmanager push; `config check` validates the same URL with it).
#pragma once

#include <string>

#include "fingerprintd/status.h"

namespace fingerprintd {

// "http://am:9093/prefix" -> host "am", port "9093", prefix "/prefix".
struct HttpUrl {
  std::string host;    // an IPv6 address without its brackets
  std::string port;    // "80" when the URL names none
  std::string prefix;  // "" or "/..." without a trailing '/'
};

// InvalidArgumentError naming the problem (https, no host, bad port).
StatusOr<HttpUrl> ParseHttpUrl(const std::string& url);

}  // namespace fingerprintd
