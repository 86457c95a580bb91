// Test helper: runs the real fingerprintd binary (FINGERPRINTD_BINARY) through
// the shell, as a user would, and a fixture with a scratch directory per test.
#pragma once

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <string>

#include "testing/scratch_path.h"

namespace fingerprintd::testing {

struct CommandResult {
  int exit_code = -1;
  std::string out;  // stderr, and stdout unless it was redirected
};

// Runs `fingerprintd <args>`; `args` is shell text (quote paths yourself).
// With `stdout_to`, stdout goes there and only stderr is captured.
inline CommandResult Fingerprintd(const std::string& args, const std::string& stdout_to = "",
                                  const std::string& run_as = "") {
  std::string command = run_as + std::string(FINGERPRINTD_BINARY) + " " + args + " 2>&1";
  if (!stdout_to.empty()) command += " >" + stdout_to;
  CommandResult run;
  FILE* pipe = popen(command.c_str(), "r");
  if (pipe == nullptr) return run;
  char buffer[4096];
  size_t n;
  while ((n = fread(buffer, 1, sizeof(buffer), pipe)) > 0) run.out.append(buffer, n);
  int status = pclose(pipe);
  run.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return run;
}

// Permission tests mean nothing to root, so as root they run the binary as
// `nobody`; "" when already unprivileged.
inline std::string Unprivileged() {
  return ::geteuid() == 0 ? "setpriv --reuid=65534 --regid=65534 --clear-groups " : "";
}

inline std::string Quoted(const std::filesystem::path& path) { return "'" + path.string() + "'"; }

class CliTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = ScratchPath("cli");
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override {
    // Restore permissions a test removed, so the scratch directory can go.
    std::error_code ec;
    for (auto it = std::filesystem::recursive_directory_iterator(dir_, ec);
         it != std::filesystem::recursive_directory_iterator(); it.increment(ec)) {
      if (!it->is_symlink())
        std::filesystem::permissions(it->path(), std::filesystem::perms::owner_all,
                                     std::filesystem::perm_options::add, ec);
    }
    std::filesystem::remove_all(dir_, ec);
  }
  std::filesystem::path dir_;
};

}  // namespace fingerprintd::testing
