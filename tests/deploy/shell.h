// Test helper for tests/deploy: shell text run as a user would type it
// (kubectl, systemd-analyze, ldd, a README block), from /bin/sh.
#pragma once

#include <sys/wait.h>

#include <cstdio>
#include <string>

#include "testing/cli_runner.h"

namespace fingerprintd::testing {

// Runs `command` with /bin/sh; `out` has its stdout and stderr together.
inline CommandResult Shell(const std::string& command) {
  CommandResult run;
  FILE* pipe = popen((command + " 2>&1").c_str(), "r");
  if (pipe == nullptr) return run;
  char buffer[4096];
  for (size_t n; (n = fread(buffer, 1, sizeof(buffer), pipe)) > 0;) run.out.append(buffer, n);
  int status = pclose(pipe);
  run.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return run;
}

}  // namespace fingerprintd::testing
