// Listen addresses, as the config gives them (`http_listen`, a `tcp`
// source's `listen`): split into host and port, and whether a host is
// loopback (a non-loopback address needs allow_remote). Pure functions, for
// the config's checks and for the servers that bind.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace fingerprintd {

// Splits "host:port" / "[v6]:port"; false when it is not that shape (no
// colon, an empty host, a port that is not a number up to 65535).
bool SplitHostPort(std::string_view listen, std::string* host, uint16_t* port);

// True when `host` is a loopback address (127.0.0.0/8, ::1) or "localhost".
bool IsLoopbackHost(std::string_view host);

}  // namespace fingerprintd
