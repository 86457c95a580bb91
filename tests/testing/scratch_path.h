// A scratch path of the running test, unique per process and test:
// <temp dir>/fingerprintd-<kind>-<pid>-<test name>, one path component (a
// parameterized test's "Name/3" becomes "Name_3", so that removing the path
// leaves nothing behind). The caller creates and removes what it puts there.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <string>
#include <string_view>

namespace fingerprintd::testing {

inline std::filesystem::path ScratchPath(std::string_view kind) {
  std::string name = ::testing::UnitTest::GetInstance()->current_test_info()->name();
  for (char& c : name) {
    if (c == '/') c = '_';
  }
  return std::filesystem::temp_directory_path() /
         ("fingerprintd-" + std::string(kind) + "-" + std::to_string(::getpid()) + "-" + name);
}

}  // namespace fingerprintd::testing
