// SIGHUP reloads parse the config again for as long as the daemon runs:
// a parse must leave nothing behind. Measured as the heap bytes in use
// (glibc mallinfo2) and the resident set before and after 2,000 parses of a
// config with every key; not timed.
#include <gtest/gtest.h>
#include <malloc.h>

#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>

#include "config/config.h"
#include "source/source_schemas.h"
#include "testing/sanitizers.h"

namespace fingerprintd::config {
namespace {

// The config as the daemon reads it: with the built-in source types.
StatusOr<DaemonConfig> ParseConfig(const std::string& file, const std::string& text) {
  return config::ParseConfig(file, text, source::BuiltInSourceTypes());
}

std::string EveryKey() {
  std::ifstream in(std::string(FINGERPRINTD_SOURCE_DIR) +
                   "/tests/fuzz/seeds/config/every_key.yaml");
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

long ResidentPages() {
  long size = 0, resident = 0;
  if (FILE* f = std::fopen("/proc/self/statm", "r")) {
    if (std::fscanf(f, "%ld %ld", &size, &resident) != 2) resident = 0;
    std::fclose(f);
  }
  return resident;
}

TEST(ConfigMemoryTest, ParsingTheConfigAgainAndAgainLeavesNothingBehind) {
#if defined(FINGERPRINTD_ASAN)
  GTEST_SKIP() << "ASan keeps freed memory in quarantine; mallinfo2 is not its allocator's";
#else
  const std::string text = EveryKey();
  ASSERT_NE(text.find("tailer:"), std::string::npos);
  // The first parses initialise what lives for the process (regex constants).
  for (int i = 0; i < 20; ++i) ASSERT_TRUE(ParseConfig("every_key.yaml", text).ok());
  // And a parse that fails half-way, at a bad deployment_from.
  std::string bad = text;
  bad.replace(bad.find("deployment_from: '/var"), 22, "deployment_from: '((x)");
  ASSERT_FALSE(ParseConfig("bad.yaml", bad).ok());
  const size_t heap_before = mallinfo2().uordblks;
  const long pages_before = ResidentPages();
  constexpr int kParses = 2000;
  for (int i = 0; i < kParses; ++i) {
    ASSERT_TRUE(ParseConfig("every_key.yaml", text).ok());
    ASSERT_FALSE(ParseConfig("bad.yaml", bad).ok());
  }
  const size_t heap_after = mallinfo2().uordblks;
  const long pages_after = ResidentPages();
  std::printf(
      "%d good and %d bad parses: heap in use %zu -> %zu bytes, resident %ld -> %ld pages\n",
      kParses, kParses, heap_before, heap_after, pages_before, pages_after);
  // Not a byte per parse.
  EXPECT_LT(heap_after, heap_before + kParses);
  EXPECT_LT(pages_after, pages_before + 64);  // 256 KiB of slack for the allocator's own choices
#endif
}

}  // namespace
}  // namespace fingerprintd::config
