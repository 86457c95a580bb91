// The rule loader rejects every malformed rule with one error naming file,
// line, rule and field, and loads a pack whole or not at all.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>

#include "fingerprintd/rules.h"
#include "testing/scratch_path.h"

namespace fingerprintd::rules {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;

constexpr const char* kFacts = R"(facts:
  - name: model
    patterns: ["model='([^']+)'"]
kernel_support:
  - library: DeepGEMM
    implements: ["9.0", "10.0"]
)";

std::string ValidRule(const std::string& id = "good-rule") {
  return "id: " + id + R"(
title: A good rule
class: resource
severity: error
sequence:
  - id: symptom
    level: ERROR
    patterns: ['CUDA out of memory']
    symptom: true
facts: [model]
explanation: "{workers} ran out of memory."
remediation: ["Lower --gpu-memory-utilization."]
tests:
  - name: one line
    log: |
      torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB.
    expect: []
)";
}

Status Load(const std::string& file, const std::string& text) {
  auto result = LoadRuleTexts({{"rules/facts.yaml", kFacts}, {file, text}});
  return result.status();
}

TEST(RuleLoaderTest, ValidRuleLoads) {
  auto result =
      LoadRuleTexts({{"rules/facts.yaml", kFacts}, {"rules/good-rule.yaml", ValidRule()}});
  ASSERT_TRUE(result.ok()) << result.status().message();
  ASSERT_EQ((*result)->rules().size(), 1u);
  const Rule& rule = (*result)->rules()[0];
  EXPECT_EQ(rule.id, "good-rule");
  EXPECT_EQ(rule.stages.size(), 1u);
  EXPECT_TRUE(rule.stages[0].symptom);
  EXPECT_EQ(rule.tests.size(), 1u);
  EXPECT_EQ(rule.window_us, 120'000'000);
}

TEST(RuleLoaderTest, BadYamlNamesFileAndLine) {
  Status s = Load("rules/good-rule.yaml", "id: good-rule\ntitle: [unclosed\nclass: resource\n");
  ASSERT_FALSE(s.ok());
  EXPECT_THAT(s.message(), StartsWith("rules/good-rule.yaml:3: rule good-rule: yaml: "));
}

TEST(RuleLoaderTest, InvalidRe2PatternNamesRuleFieldAndLine) {
  std::string text = ValidRule();
  text.replace(text.find("'CUDA out of memory'"), 20, "'(?<=lookbehind)x'");
  Status s = Load("rules/good-rule.yaml", text);
  ASSERT_FALSE(s.ok());
  EXPECT_THAT(s.message(), StartsWith("rules/good-rule.yaml:8: rule good-rule: "
                                      "sequence[0].patterns[0]: invalid RE2 pattern"));
}

// A ready rule: the line a server prints once it serves.
std::string ReadyRule(const std::string& extra = "") {
  return R"(id: up
kind: ready
title: "The server serves"
sequence:
  - id: ready
    patterns: ['Application startup complete']
    symptom: true
)" + extra +
         R"(tests:
  - name: recovered
    log: |
      x
    expect:
      - {rule: other, occurrences: 2, closed: recovered}
)";
}

TEST(RuleLoaderTest, AReadyRuleLoadsWithoutClassSeverityOrRemedies) {
  auto result = LoadRuleTexts({{"rules/facts.yaml", kFacts}, {"rules/up.yaml", ReadyRule()}});
  ASSERT_TRUE(result.ok()) << result.status().message();
  const Rule* rule = (*result)->Find("up");
  ASSERT_NE(rule, nullptr);
  EXPECT_EQ(rule->kind, RuleKind::kReady);
  ASSERT_EQ(rule->tests.size(), 1u);
  EXPECT_EQ(rule->tests[0].expect[0].occurrences, 2);
  EXPECT_EQ(rule->tests[0].expect[0].closed, "recovered");
}

TEST(RuleLoaderTest, WhatDescribesAnIncidentIsAnErrorInAReadyRuleNamingItsLine) {
  for (const char* key : {"class: config", "severity: info", "explanation: x", "remediation: [x]",
                          "fallback: true", "facts: [model]"}) {
    Status s = Load("rules/up.yaml", ReadyRule(std::string(key) + "\n"));
    ASSERT_FALSE(s.ok()) << key;
    EXPECT_THAT(s.message(), StartsWith("rules/up.yaml:8:")) << key;
    EXPECT_THAT(s.message(), HasSubstr("not allowed for kind: ready")) << key;
  }
}

TEST(RuleLoaderTest, AnUnknownKindAndAnUnknownCloseReasonAreRejected) {
  std::string text = ReadyRule();
  text.replace(text.find("kind: ready"), 11, "kind: healthy");
  EXPECT_THAT(
      Load("rules/up.yaml", text).message(),
      HasSubstr(
          "rules/up.yaml:2: rule up: kind: expected failure, ready, stop or start, got 'healthy'"));
  text = ReadyRule();
  text.replace(text.find("closed: recovered"), 17, "closed: healed");
  EXPECT_THAT(Load("rules/up.yaml", text).message(),
              HasSubstr("expect.closed: expected open, recovered, gone, expired or evicted"));
}

TEST(RuleLoaderTest, UnknownKeyIsRejectedWithItsLine) {
  std::string text = ValidRule() + "colour: blue\n";
  Status s = Load("rules/good-rule.yaml", text);
  ASSERT_FALSE(s.ok());
  EXPECT_THAT(s.message(), HasSubstr("rule good-rule: colour: unknown key"));
  EXPECT_THAT(s.message(), StartsWith("rules/good-rule.yaml:18:"));
}

TEST(RuleLoaderTest, UnknownKeyInsideAStageIsRejected) {
  std::string text = ValidRule();
  text.replace(text.find("    symptom: true"), 17, "    symptom: true\n    weight: 3");
  Status s = Load("rules/good-rule.yaml", text);
  ASSERT_FALSE(s.ok());
  EXPECT_THAT(s.message(), HasSubstr("rule good-rule: sequence[0].weight: unknown key"));
}

TEST(RuleLoaderTest, MissingRequiredFieldIsNamed) {
  std::string text = ValidRule();
  text.erase(text.find("title: A good rule\n"), 19);
  Status s = Load("rules/good-rule.yaml", text);
  ASSERT_FALSE(s.ok());
  EXPECT_THAT(s.message(), HasSubstr("rule good-rule: title: missing required key"));
}

TEST(RuleLoaderTest, InvalidClassAndSeverityAreRejected) {
  std::string text = ValidRule();
  text.replace(text.find("class: resource"), 15, "class: gremlins");
  EXPECT_THAT(Load("rules/good-rule.yaml", text).message(), HasSubstr("class: expected"));
  text = ValidRule();
  text.replace(text.find("severity: error"), 15, "severity: loud");
  EXPECT_THAT(Load("rules/good-rule.yaml", text).message(), HasSubstr("severity: expected"));
}

TEST(RuleLoaderTest, IdMustMatchFileName) {
  Status s = Load("rules/other-name.yaml", ValidRule());
  ASSERT_FALSE(s.ok());
  EXPECT_THAT(s.message(), HasSubstr("id: must equal the file name stem 'other-name'"));
}

TEST(RuleLoaderTest, ExactlyOneSymptomStageIsRequired) {
  std::string text = ValidRule();
  text.replace(text.find("    symptom: true\n"), 18, "");
  Status s = Load("rules/good-rule.yaml", text);
  ASSERT_FALSE(s.ok());
  EXPECT_THAT(s.message(), HasSubstr("sequence: exactly one stage must have `symptom: true`"));
}

TEST(RuleLoaderTest, UnknownFactIsRejected) {
  std::string text = ValidRule();
  text.replace(text.find("facts: [model]"), 14, "facts: [colour]");
  EXPECT_THAT(Load("rules/good-rule.yaml", text).message(),
              HasSubstr("facts: unknown fact 'colour'"));
}

TEST(RuleLoaderTest, ARuleIsAFamilyOrAFallbackNotBoth) {
  std::string text = ValidRule();
  text.replace(text.find("sequence:"), 9, "family: true\nfallback: true\nsequence:");
  EXPECT_THAT(Load("rules/good-rule.yaml", text).message(),
              HasSubstr("family: a rule is a family rule or a fallback, not both"));
}

TEST(RuleLoaderTest, FamilyAndLastExceptionKeysLoad) {
  std::string family = ValidRule();
  family.replace(family.find("sequence:"), 9, "family: true\nsequence:");
  auto loaded = LoadRuleTexts({{"rules/facts.yaml", kFacts}, {"rules/good-rule.yaml", family}});
  ASSERT_TRUE(loaded.ok()) << loaded.status().message();
  EXPECT_TRUE((*loaded)->rules()[0].family);

  std::string catch_all = ValidRule();
  catch_all.replace(catch_all.find("sequence:"), 9, "last_exception: true\nsequence:");
  EXPECT_THAT(Load("rules/good-rule.yaml", catch_all).message(),
              HasSubstr("last_exception: only a fallback rule may have it"));
}

TEST(RuleLoaderTest, RequireFramesNeedsFramesAndAnExceptionVetoIsARegex) {
  std::string text = ValidRule();
  text.replace(text.find("facts: [model]"), 14,
               "traceback:\n  exception: '^RuntimeError$'\n  require_frames: true\nfacts: [model]");
  EXPECT_THAT(Load("rules/good-rule.yaml", text).message(),
              HasSubstr("traceback.require_frames: needs a non-empty traceback.frames"));

  std::string veto = ValidRule();
  veto.replace(veto.find("facts: [model]"), 14,
               "unless:\n  - exception: '(unclosed'\nfacts: [model]");
  EXPECT_THAT(Load("rules/good-rule.yaml", veto).message(), HasSubstr("unless[0].exception"));
}

TEST(RuleLoaderTest, OneBadFileRejectsTheWholePack) {
  auto result = LoadRuleTexts({{"rules/facts.yaml", kFacts},
                               {"rules/good-rule.yaml", ValidRule()},
                               {"rules/bad-rule.yaml", ValidRule("bad-rule") + "oops: 1\n"}});
  EXPECT_FALSE(result.ok());
}

TEST(RuleLoaderTest, DuplicateRuleIdsAreRejected) {
  auto result = LoadRuleTexts({{"rules/facts.yaml", kFacts},
                               {"rules/good-rule.yaml", ValidRule()},
                               {"other/good-rule.yaml", ValidRule()}});
  ASSERT_FALSE(result.ok());
  EXPECT_THAT(result.status().message(), HasSubstr("duplicate rule id"));
}

TEST(RuleLoaderTest, UnterminatedQuoteIsAYamlErrorAtItsLineNotAMissingField) {
  // Open to the end of the file: yaml-cpp would swallow `class:` and below.
  std::string text = ValidRule();
  text.replace(text.find("title: A good rule"), 18, "title: \"A good rule");
  text.erase(text.find("explanation:"));
  Status s = Load("rules/good-rule.yaml", text);
  EXPECT_THAT(s.message(), StartsWith("rules/good-rule.yaml:2: rule good-rule: title: "
                                      "unterminated quote: the string runs on into line 3"));
  // Closed by a later quote: the syntax error it causes is reported at the quote.
  text = ValidRule();
  text.replace(text.find("title: A good rule"), 18, "title: \"A good rule");
  s = Load("rules/good-rule.yaml", text);
  EXPECT_THAT(s.message(),
              StartsWith("rules/good-rule.yaml:2: rule good-rule: yaml: unterminated quote"));
}

TEST(RuleLoaderTest, DuplicateKeyIsRejectedNamingBothLines) {
  std::string text = ValidRule() + "severity: critical\n";
  Status s = Load("rules/good-rule.yaml", text);
  EXPECT_THAT(s.message(), StartsWith("rules/good-rule.yaml:18: rule good-rule: severity: "
                                      "duplicate key (first at line 4; a second value would be "
                                      "ignored)"));
  text = ValidRule();
  text.replace(text.find("    symptom: true"), 17, "    symptom: true\n    level: INFO");
  s = Load("rules/good-rule.yaml", text);
  EXPECT_THAT(s.message(), HasSubstr(":10: rule good-rule: sequence[0].level: duplicate key "
                                     "(first at line 7; a second value would be ignored)"));
}

class RuleDirTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = testing::ScratchPath("rules");
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
    Write("facts.yaml", kFacts);
    Write("good-rule.yaml", ValidRule());
    Write("README.md", "not a rule\n");
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  void Write(const std::string& name, const std::string& text) {
    std::ofstream(dir_ / name) << text;
  }
  std::filesystem::path dir_;
};

TEST_F(RuleDirTest, PackDirectoryWithOnlyYamlRulesLoads) {
  auto result = LoadRuleDir(dir_.string());
  ASSERT_TRUE(result.ok()) << result.status().message();
  EXPECT_EQ((*result)->rules().size(), 1u);
}

TEST_F(RuleDirTest, YmlFileIsRejectedNamingItInsteadOfIgnored) {
  Write("other-rule.yml", ValidRule("other-rule"));
  auto result = LoadRuleDir(dir_.string());
  ASSERT_FALSE(result.ok());
  EXPECT_THAT(result.status().message(),
              HasSubstr("other-rule.yml: rule files end in .yaml; rename it to other-rule.yaml"));
}

TEST_F(RuleDirTest, SubdirectoryIsRejectedNamingItInsteadOfIgnored) {
  std::filesystem::create_directories(dir_ / "extra");
  auto result = LoadRuleDir(dir_.string());
  ASSERT_FALSE(result.ok());
  EXPECT_THAT(result.status().message(),
              HasSubstr((dir_ / "extra").string() + ": subdirectories of a rule pack are not"));
}

TEST(RuleLoaderTest, StageLevelsAreExactlyTheDocumentedNames) {
  for (const std::string level : {"ANY", "DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"}) {
    std::string text = ValidRule();
    text.replace(text.find("level: ERROR"), 12, "level: " + level);
    EXPECT_TRUE(Load("rules/good-rule.yaml", text).ok()) << level;
  }
  for (const std::string level : {"FATAL", "WARN", "TRACE", "error"}) {
    std::string text = ValidRule();
    text.replace(text.find("level: ERROR"), 12, "level: " + level);
    EXPECT_THAT(Load("rules/good-rule.yaml", text).message(),
                HasSubstr(":7: rule good-rule: sequence[0].level: expected ANY, DEBUG, INFO, "
                          "WARNING, ERROR or CRITICAL, got '" +
                          level + "'"));
  }
}

TEST(RuleLoaderTest, BadPatternIsReportedAtItsOwnLineWithItsIndex) {
  std::string text = ValidRule();
  text.replace(text.find("    patterns: ['CUDA out of memory']"), 36,
               "    patterns:\n      - 'CUDA out of memory'\n      - 'CUDA error'\n"
               "      - '(?<=lookbehind)x'");
  Status s = Load("rules/good-rule.yaml", text);
  EXPECT_THAT(s.message(), StartsWith("rules/good-rule.yaml:11: rule good-rule: "
                                      "sequence[0].patterns[2]: invalid RE2 pattern"));
}

// Issue 45: a bad class or severity was reported without the value that was
// given (config check echoes it: got 'middle').
TEST(RuleLoaderTest, ABadClassOrSeverityIsEchoed) {
  std::string text = ValidRule();
  text.replace(text.find("class: resource"), 15, "class: hardware");
  EXPECT_THAT(Load("rules/good-rule.yaml", text).message(),
              HasSubstr("class: expected hardware_support, model_bug, resource, distributed, "
                        "config or unknown, got 'hardware'"));
  text = ValidRule();
  text.replace(text.find("severity: error"), 15, "severity: urgent");
  EXPECT_THAT(Load("rules/good-rule.yaml", text).message(),
              HasSubstr("severity: expected critical, error, warning or info, got 'urgent'"));
}

// Issue 45: `rules check /nonexistent` said "not a directory" for a path that
// does not exist.
TEST(RuleLoaderTest, AMissingDirectoryAndAFileAreTwoDifferentErrors) {
  EXPECT_EQ(LoadRuleDir("/nonexistent-rules").status().message(),
            "/nonexistent-rules: no such directory");
  const std::string file = ::testing::TempDir() + "fingerprintd-rules-a-file.yaml";
  std::ofstream(file) << "id: x\n";
  EXPECT_EQ(LoadRuleDir(file).status().message(), file + ": not a directory");
  std::remove(file.c_str());
}

TEST(RuleLoaderTest, AbsurdDurationIsRejected) {
  std::string text = ValidRule() + "window: 99999999999999999h\n";
  EXPECT_THAT(Load("rules/good-rule.yaml", text).message(),
              HasSubstr("window: expected a positive duration"));
  text = ValidRule() + "maxspan: 200h\n";
  EXPECT_THAT(Load("rules/good-rule.yaml", text).message(),
              HasSubstr("maxspan: '200h' is longer than the maximum of 7d"));
  text = ValidRule() + "maxspan: 168h\n";
  EXPECT_TRUE(Load("rules/good-rule.yaml", text).ok());
}

TEST(RuleLoaderTest, EmbeddedPackLoads) {
  auto result = LoadEmbeddedRules();
  ASSERT_TRUE(result.ok()) << result.status().message();
  EXPECT_NE((*result)->Find("deepgemm-unknown-sf-transformation"), nullptr);
}

// Replay and the daemon load the embedded pack without its rule tests, which
// are two thirds of its YAML: everything else must be what the whole pack gives.
TEST(RuleLoaderTest, EmbeddedPackWithoutTestsIsThePackLessItsTests) {
  auto whole = LoadEmbeddedRules(EmbeddedTests::kLoad);
  auto lean = LoadEmbeddedRules(EmbeddedTests::kSkip);
  ASSERT_TRUE(whole.ok()) << whole.status().message();
  ASSERT_TRUE(lean.ok()) << lean.status().message();
  const RuleSet& a = **whole;
  const RuleSet& b = **lean;
  ASSERT_EQ(a.rules().size(), b.rules().size());
  size_t tests = 0;
  for (size_t i = 0; i < a.rules().size(); ++i) {
    const Rule& x = a.rules()[i];
    const Rule& y = b.rules()[i];
    SCOPED_TRACE(x.id);
    tests += x.tests.size();
    EXPECT_TRUE(y.tests.empty());
    EXPECT_EQ(x.id, y.id);
    EXPECT_EQ(x.title, y.title);
    EXPECT_EQ(x.rule_class, y.rule_class);
    EXPECT_EQ(x.severity, y.severity);
    EXPECT_EQ(x.library, y.library);
    EXPECT_EQ(x.phase, y.phase);
    EXPECT_EQ(x.maxspan_us, y.maxspan_us);
    EXPECT_EQ(x.window_us, y.window_us);
    EXPECT_EQ(x.fallback, y.fallback);
    EXPECT_EQ(x.symptom_stage, y.symptom_stage);
    EXPECT_EQ(x.traceback.has_value(), y.traceback.has_value());
    EXPECT_EQ(x.unless.size(), y.unless.size());
    EXPECT_EQ(x.facts, y.facts);
    EXPECT_EQ(x.explanation, y.explanation);
    EXPECT_EQ(x.remediation, y.remediation);
    EXPECT_EQ(x.file, y.file);
    ASSERT_EQ(x.stages.size(), y.stages.size());
    for (size_t k = 0; k < x.stages.size(); ++k) {
      EXPECT_EQ(x.stages[k].id, y.stages[k].id);
      EXPECT_EQ(x.stages[k].level, y.stages[k].level);
      EXPECT_EQ(x.stages[k].patterns, y.stages[k].patterns);
    }
  }
  EXPECT_GT(tests, a.rules().size());  // the whole pack has them: the test compares something
  EXPECT_EQ(a.Atoms(), b.Atoms());
  ASSERT_EQ(a.facts().size(), b.facts().size());
  for (size_t i = 0; i < a.facts().size(); ++i) {
    EXPECT_EQ(a.facts()[i].name, b.facts()[i].name);
    EXPECT_EQ(a.facts()[i].patterns, b.facts()[i].patterns);
  }
}

}  // namespace
}  // namespace fingerprintd::rules
