#include "common/host_port.h"

#include <arpa/inet.h>
#include <netinet/in.h>

namespace fingerprintd {

bool SplitHostPort(std::string_view listen, std::string* host, uint16_t* port) {
  size_t colon = listen.rfind(':');
  if (colon == std::string_view::npos || colon + 1 == listen.size()) return false;
  std::string_view h = listen.substr(0, colon);
  if (h.size() >= 2 && h.front() == '[' && h.back() == ']') h = h.substr(1, h.size() - 2);
  if (h.empty()) return false;
  uint32_t p = 0;
  for (char c : listen.substr(colon + 1)) {
    if (c < '0' || c > '9') return false;
    p = p * 10 + static_cast<uint32_t>(c - '0');
    if (p > 65535) return false;
  }
  *host = std::string(h);
  *port = static_cast<uint16_t>(p);
  return true;
}

bool IsLoopbackHost(std::string_view host) {
  if (host == "localhost") return true;
  const std::string text(host);
  in_addr v4{};
  if (::inet_pton(AF_INET, text.c_str(), &v4) == 1) return (ntohl(v4.s_addr) >> 24) == 127;
  in6_addr v6{};
  return ::inet_pton(AF_INET6, text.c_str(), &v6) == 1 && IN6_IS_ADDR_LOOPBACK(&v6);
}

}  // namespace fingerprintd
