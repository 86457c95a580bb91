// The explanation sentence states its evidence: workers, identical
// tracebacks, and the device capability against the library's list.
#include "correlate/explanation.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace fingerprintd::correlate {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

std::shared_ptr<const rules::RuleSet> Pack() {
  auto loaded = rules::LoadRuleTexts({{"r/facts.yaml", R"(facts:
  - name: compute_capability
    patterns: ['capability (\d+\.\d+)']
  - name: model
    patterns: ['model=(\S+)']
  - name: kernel
    patterns: ['kernel=(\S+)']
kernel_support:
  - library: Lib
    implements: ["9.0", "10.*"]
)"},
                                      {"r/x.yaml", R"(id: x
title: x
class: hardware_support
severity: critical
library: Lib
sequence:
  - {id: s, level: ERROR, patterns: ['x'], symptom: true}
explanation: "{workers} in Lib (model: {fact.model}, kernel: {fact.kernel}); {capability}; model {fact.model}."
remediation: ["r"]
)"}});
  EXPECT_TRUE(loaded.ok()) << loaded.status().message();
  return *loaded;
}

std::string Explain(const std::map<std::string, std::string>& facts, int affected, int expected,
                    bool identical, std::string traceback_fingerprint = "tb-1") {
  auto pack = Pack();
  Incident incident;
  incident.affected = affected;
  incident.expected = expected;
  incident.identical = identical;
  incident.traceback_fingerprint = std::move(traceback_fingerprint);
  return ExpandExplanation(pack->rules()[0], *pack, incident, facts, true);
}

TEST(ExplanationTest, NamesTheCapabilityTheLibraryDoesNotImplement) {
  std::string text = Explain({{"compute_capability", "12.0"}}, 2, 2, true);
  EXPECT_THAT(text, HasSubstr("2/2 tensor-parallel workers failed identically in Lib"));
  EXPECT_THAT(text, HasSubstr("compute capability 12.0, which Lib does not implement (9.0, 10.*)"));
  EXPECT_THAT(text, HasSubstr("model unknown."));
}

TEST(ExplanationTest, MajorFamilyEntryCoversEveryMinorVersion) {
  EXPECT_THAT(Explain({{"compute_capability", "10.3"}}, 1, 4, false),
              HasSubstr("10.3, which Lib lists as implemented"));
  EXPECT_THAT(Explain({{"compute_capability", "9.0"}}, 1, 4, false),
              HasSubstr("9.0, which Lib lists as implemented"));
  EXPECT_THAT(Explain({{"compute_capability", "1.0"}}, 1, 4, false),
              HasSubstr("1.0, which Lib does not implement"));
}

TEST(ExplanationTest, SaysWhenTheCapabilityWasNotLogged) {
  std::string text = Explain({}, 1, 4, false);
  EXPECT_THAT(text, HasSubstr("1/4 tensor-parallel workers failed in Lib"));
  EXPECT_THAT(text, HasSubstr("compute capability was not logged (Lib implements 9.0, 10.*)"));
}

TEST(ExplanationTest, UnknownFactsAreLeftOutOfAParenthesisedList) {
  EXPECT_THAT(Explain({{"model", "m/x"}}, 2, 2, true),
              HasSubstr("failed identically in Lib (model: m/x); the device"));
  EXPECT_THAT(Explain({{"model", "m/x"}, {"kernel", "K"}}, 2, 2, true),
              HasSubstr("in Lib (model: m/x, kernel: K); the device"));
  EXPECT_THAT(Explain({}, 2, 2, true), HasSubstr("failed identically in Lib; the device"));
  // Outside such a list an unknown fact still says so.
  EXPECT_THAT(Explain({}, 2, 2, true), HasSubstr("model unknown."));
}

TEST(ExplanationTest, DifferingTracebacksAreSaid) {
  EXPECT_THAT(Explain({}, 3, 4, false),
              HasSubstr("3/4 tensor-parallel workers failed with differing tracebacks"));
}

// Issue 45: failures without a Python traceback (an NCCL watchdog, a C++
// abort) did not differ: there was nothing to compare.
TEST(ExplanationTest, FailuresWithoutTracebacksAreNotSaidToDiffer) {
  const std::string text = Explain({}, 3, 4, false, /*traceback_fingerprint=*/"");
  EXPECT_THAT(text, HasSubstr("3/4 tensor-parallel workers failed in Lib"));
  EXPECT_THAT(text, Not(HasSubstr("differing")));
}

}  // namespace
}  // namespace fingerprintd::correlate
