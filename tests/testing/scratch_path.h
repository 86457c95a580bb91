// A scratch path of the running test, unique per process and test:
// <temp dir>/fingerprintd-<kind>-<pid>-<test name>. The caller creates and
// removes what it puts there.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <string>
#include <string_view>

namespace fingerprintd::testing {

inline std::filesystem::path ScratchPath(std::string_view kind) {
  return std::filesystem::temp_directory_path() /
         ("fingerprintd-" + std::string(kind) + "-" + std::to_string(::getpid()) + "-" +
          ::testing::UnitTest::GetInstance()->current_test_info()->name());
}

}  // namespace fingerprintd::testing
