// SourceStatus: one thing a live source reads (a tailed file, a listening
// socket, stdin) or cannot read, as LiveSource::AppendStatus reports it and
// the status page (http/status_page.h) lists it.
#pragma once

#include <cstdint>
#include <string>

namespace fingerprintd::source {

struct SourceStatus {
  std::string name;   // a file's path, a glob, "tcp:127.0.0.1:5170", "stdin"
  std::string type;   // file, tcp, unix, stdin
  std::string state;  // "reading", "deleted, still written: read on", "permission_denied (...)"
  int64_t last_line_us = 0;  // wall time it last gave a line; 0: none since the daemon started
  bool problem = false;      // it cannot be read (listed first, marked)
};

}  // namespace fingerprintd::source
