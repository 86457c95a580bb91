// `rules check` lints the embedded tests of a pack: every rule needs two
// positive tests (two shapes of its failure) and one look-alike negative, and
// a rule short of either is named with its file and line.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

#include "fingerprintd/rules.h"
#include "fingerprintd/source.h"

namespace fingerprintd::source {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;
using ::testing::StartsWith;

constexpr const char* kFacts = "facts: []\n";

// A rule whose tests are `positive` tests expecting it and `negative` tests
// expecting nothing; the first test is at line 13 of the file.
std::string RuleWithTests(const std::string& id, int positive, int negative) {
  std::string text = "id: " + id + R"(
title: GPU out of memory
class: resource
severity: error
sequence:
  - id: symptom
    level: ERROR
    patterns: ['CUDA out of memory']
    symptom: true
explanation: "{workers} ran out of memory."
remediation: ["Lower --gpu-memory-utilization."]
)";
  if (positive + negative == 0) return text;
  text += "tests:\n";
  for (int i = 0; i < positive; ++i) {
    text += "  - name: positive " + std::to_string(i) +
            "\n    log: |\n      torch.OutOfMemoryError: CUDA out of memory.\n"
            "    expect:\n      - {rule: " +
            id + "}\n";
  }
  for (int i = 0; i < negative; ++i) {
    text += "  - name: negative " + std::to_string(i) +
            "\n    log: |\n      INFO 01-02 03:04:05 [gpu_worker.py:1] memory profiling done\n"
            "    expect: []\n";
  }
  return text;
}

std::vector<std::string> Lint(const std::vector<std::pair<std::string, std::string>>& rule_files) {
  std::vector<std::pair<std::string, std::string>> files = {{"rules/facts.yaml", kFacts}};
  files.insert(files.end(), rule_files.begin(), rule_files.end());
  auto pack = rules::LoadRuleTexts(files);
  EXPECT_TRUE(pack.ok()) << pack.status().message();
  if (!pack.ok()) return {"(pack did not load)"};
  return LintRuleTests(**pack);
}

TEST(RuleTestsLintTest, ARuleWithTwoPositiveTestsAndOneNegativeIsAccepted) {
  EXPECT_THAT(Lint({{"rules/gpu-oom.yaml", RuleWithTests("gpu-oom", 2, 1)}}), IsEmpty());
}

TEST(RuleTestsLintTest, ARuleWithOnePositiveTestIsRejectedNamingItsFileLineAndId) {
  EXPECT_THAT(Lint({{"rules/gpu-oom.yaml", RuleWithTests("gpu-oom", 2, 1)},
                    {"rules/one-shape.yaml", RuleWithTests("one-shape", 1, 1)}}),
              ElementsAre("rules/one-shape.yaml:13: rule one-shape: tests: 1 positive test(s) "
                          "(whose expect names this rule), at least 2 required"));
}

TEST(RuleTestsLintTest, ARuleWithoutANegativeTestIsRejected) {
  EXPECT_THAT(Lint({{"rules/gpu-oom.yaml", RuleWithTests("gpu-oom", 3, 0)}}),
              ElementsAre("rules/gpu-oom.yaml:13: rule gpu-oom: tests: 0 negative test(s) "
                          "(whose expect omits this rule), at least 1 required"));
}

TEST(RuleTestsLintTest, ARuleWithoutTestsIsShortOfBothKinds) {
  std::vector<std::string> problems =
      Lint({{"rules/gpu-oom.yaml", RuleWithTests("gpu-oom", 0, 0)}});
  ASSERT_EQ(problems.size(), 2u);
  EXPECT_THAT(problems[0], StartsWith("rules/gpu-oom.yaml:1: rule gpu-oom: tests: 0 positive"));
  EXPECT_THAT(problems[1], StartsWith("rules/gpu-oom.yaml:1: rule gpu-oom: tests: 0 negative"));
}

TEST(RuleTestsLintTest, TheEmbeddedPackHasEnoughTestsForEveryRule) {
  auto pack = rules::LoadEmbeddedRules();
  ASSERT_TRUE(pack.ok()) << pack.status().message();
  EXPECT_THAT(LintRuleTests(**pack), IsEmpty());
}

}  // namespace
}  // namespace fingerprintd::source
