// No rule file can make RE2 use unbounded memory: every pattern the loader
// compiles has an explicit budget (common/re2_limits.h), and a pattern whose
// program does not fit is rejected naming file, line, rule and field.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <re2/re2.h>

#include "common/re2_limits.h"
#include "fingerprintd/rules.h"

namespace fingerprintd::rules {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;

constexpr const char* kFacts = "facts:\n  - name: model\n    patterns: [\"model='([^']+)'\"]\n";

// A rule whose symptom pattern (line 8) and traceback frame function (line
// 13) are the given patterns.
std::string RuleWith(const std::string& symptom, const std::string& function = "load") {
  return R"(id: big-rule
title: A rule
class: resource
severity: error
sequence:
  - id: symptom
    level: ERROR
    patterns: [')" +
         symptom + R"(']
    symptom: true
traceback:
  exception: RuntimeError
  frames:
    - function: ')" +
         function + R"('
explanation: "x"
)";
}

Status Load(const std::string& text) {
  return LoadRuleTexts({{"rules/facts.yaml", kFacts}, {"rules/big-rule.yaml", text}}).status();
}

TEST(RuleLoaderBoundsTest, APatternWhoseProgramDoesNotFitTheMemoryBudgetIsRejectedNamingTheRule) {
  // 1,000 letters of any script: RE2 cannot compile it within 1 MiB.
  Status s = Load(RuleWith(R"((?:\pL{100}){10})"));
  ASSERT_FALSE(s.ok());
  EXPECT_THAT(s.message(), StartsWith("rules/big-rule.yaml:8: rule big-rule: "
                                      "sequence[0].patterns[0]: pattern too large ("));
  EXPECT_THAT(s.message(), HasSubstr("1024 KiB"));
}

TEST(RuleLoaderBoundsTest, APatternOverTheInstructionCapIsRejectedEvenWhenItFitsInMemory) {
  // 10,004 instructions: fits RE2's budget, but every line would run it.
  Status s = Load(RuleWith(R"((\w+\s*){1000})"));
  ASSERT_FALSE(s.ok());
  EXPECT_THAT(s.message(), StartsWith("rules/big-rule.yaml:8: rule big-rule: "
                                      "sequence[0].patterns[0]: pattern too large (its RE2 "
                                      "program has 10004 instructions, more than 5000"));
}

TEST(RuleLoaderBoundsTest, ATracebackFramePatternIsBoundedToo) {
  Status s = Load(RuleWith("CUDA out of memory", R"(.{1000})"));
  ASSERT_FALSE(s.ok());
  EXPECT_THAT(s.message(), StartsWith("rules/big-rule.yaml:13: rule big-rule: "
                                      "traceback.frames[0].function: pattern too large"));
}

TEST(RuleLoaderBoundsTest, NestedRepetitionsBeyondRe2sOwnLimitAreInvalidPatterns) {
  Status s = Load(RuleWith("(a{1000}){1000}"));
  ASSERT_FALSE(s.ok());
  EXPECT_THAT(s.message(), HasSubstr("sequence[0].patterns[0]: invalid RE2 pattern: "
                                     "invalid repetition size"));
}

TEST(RuleLoaderBoundsTest, EveryPatternOfTheEmbeddedPackFitsWellUnderTheCaps) {
  auto pack = LoadEmbeddedRules();
  ASSERT_TRUE(pack.ok()) << pack.status().message();
  int largest = 0;
  for (const Rule& rule : (*pack)->rules()) {
    for (const Stage& stage : rule.stages) {
      for (const std::string& pattern : stage.patterns) {
        RE2 re(pattern, BoundedRe2Options());
        EXPECT_EQ(Re2Problem(re), "") << rule.id << ": " << pattern;
        largest = std::max(largest, re.ProgramSize());
      }
    }
  }
  std::printf("largest stage program of the pack: %d instructions (cap %d)\n", largest,
              kRe2MaxProgramSize);
  // The largest are the family rules' "a token near a refusal", whose bounded
  // gaps ([^\n]{0,60}) cost a few hundred instructions; a fifth of the cap
  // leaves a user's pack room.
  EXPECT_LT(largest * 5, kRe2MaxProgramSize);
}

}  // namespace
}  // namespace fingerprintd::rules
