// Every golden fixture gives exactly the incidents tests/golden/README.md
// expects: how many, and of which rules. A second, spurious incident (the
// NCCL fixture once gave two) fails here, and a fixture added without an
// expectation fails GoldenCountsTest.EveryFixtureHasAnExpectedCount.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "testing/golden_cases.h"
#include "testing/replay_harness.h"

namespace fingerprintd::testing {
namespace {

class GoldenCountsTest : public ::testing::TestWithParam<GoldenCase> {};

TEST_P(GoldenCountsTest, FixtureGivesExactlyTheExpectedIncidents) {
  const GoldenCase& c = GetParam();
  ReplayResult r = ReplayPaths({Golden(c.path)}, c.deployment_from, c.labels);
  ASSERT_TRUE(r.status.ok()) << r.status.message();
  std::vector<std::string> rules = RuleIds(r.incidents);
  std::sort(rules.begin(), rules.end());
  EXPECT_EQ(rules, c.rules) << c.path << "\n" << r.jsonl;
}

std::string CaseName(const ::testing::TestParamInfo<GoldenCase>& info) {
  std::string name = info.param.path;
  for (char& ch : name) {
    if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
  }
  return name;
}

INSTANTIATE_TEST_SUITE_P(EveryFixture, GoldenCountsTest, ::testing::ValuesIn(GoldenCases()),
                         CaseName);

TEST(GoldenFixturesTest, EveryFixtureHasAnExpectedCount) {
  namespace fs = std::filesystem;
  const fs::path root = Golden("");
  for (const auto& entry : fs::recursive_directory_iterator(root)) {
    if (!entry.is_regular_file() || entry.path().extension() != ".log") continue;
    const std::string relative = fs::relative(entry.path(), root).string();
    if (relative.rfind("tools/", 0) == 0) continue;
    const bool covered =
        std::any_of(GoldenCases().begin(), GoldenCases().end(), [&](const GoldenCase& c) {
          return relative == c.path || relative.rfind(c.path + "/", 0) == 0;
        });
    EXPECT_TRUE(covered) << relative << " has no expected incident count in golden_counts_test.cc";
  }
}

}  // namespace
}  // namespace fingerprintd::testing
