// RE2 memory at match time: what an RE2::Set does when its DFA runs out of
// memory (Debian 12's RE2 2022-06-01), and that the prefilter's AtomSet never
// takes that for "no atom"; the rule set's patterns under the bounded budget.
#include "rules/atom_set.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <re2/re2.h>
#include <re2/set.h>

#include <cstdio>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "common/re2_limits.h"
#include "fingerprintd/correlate.h"
#include "fingerprintd/pipeline.h"
#include "fingerprintd/rules.h"
#include "testing/counting_events.h"
#include "testing/pipeline_lines.h"
#include "testing/replay_harness.h"

namespace fingerprintd::rules {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;

// A set RE2 cannot match within a budget that compiles it: one DFA state
// must hold the match ids of every atom (the same literal 1,000 times), and
// the budget only holds states of the program's size.
const std::vector<std::string> kSameAtomThousandTimes(1000, "abc");

// The smallest budget (in 5% steps from 1 KB) with which the set compiles.
int64_t SmallestBudgetThatCompiles(const std::vector<std::string>& atoms) {
  for (int64_t mem = 1000; mem < (64 << 20); mem = mem * 21 / 20) {
    RE2::Set set(AtomSet::Options(mem), RE2::UNANCHORED);
    for (const std::string& atom : atoms) set.Add(atom, nullptr);
    if (set.Compile()) return mem;
  }
  return 0;
}

TEST(Re2SetMemoryTest, ASetOutOfDfaMemoryAtMatchTimeReturnsFalseAsIfNothingMatched) {
  const int64_t tiny = SmallestBudgetThatCompiles(kSameAtomThousandTimes);
  ASSERT_GT(tiny, 0);
  std::printf("RE2::Set of 1000 x \"abc\": compiles from %lld bytes\n",
              static_cast<long long>(tiny));
  RE2::Set set(AtomSet::Options(tiny), RE2::UNANCHORED);
  for (const std::string& atom : kSameAtomThousandTimes) set.Add(atom, nullptr);
  ASSERT_TRUE(set.Compile());

  // Without an ErrorInfo, a line holding the atom is indistinguishable from
  // one without it: both are `false`.
  std::vector<int> found;
  EXPECT_FALSE(set.Match("xx ABC yy", &found));
  EXPECT_THAT(found, IsEmpty());
  EXPECT_FALSE(set.Match("xx ABC yy", nullptr));
  EXPECT_FALSE(set.Match("nothing here", nullptr));
  // Only the ErrorInfo tells: the DFA ran out of memory.
  RE2::Set::ErrorInfo error{RE2::Set::kNoError};
  EXPECT_FALSE(set.Match("xx ABC yy", &found, &error));
  EXPECT_EQ(error.kind, RE2::Set::kOutOfMemory);
  error.kind = RE2::Set::kNoError;
  EXPECT_FALSE(set.Match("nothing here", nullptr, &error));
  EXPECT_EQ(error.kind, RE2::Set::kNoError);

  // With RE2's default budget (8 MiB) the same set finds every atom.
  RE2::Set roomy(AtomSet::Options(8 << 20), RE2::UNANCHORED);
  for (const std::string& atom : kSameAtomThousandTimes) roomy.Add(atom, nullptr);
  ASSERT_TRUE(roomy.Compile());
  EXPECT_TRUE(roomy.Match("xx ABC yy", &found));
  EXPECT_EQ(found.size(), 1000u);
}

TEST(AtomSetTest, ASetThatRunsOutOfMemorySearchesEachAtomAndCountsTheLine) {
  const int64_t tiny = SmallestBudgetThatCompiles(kSameAtomThousandTimes);
  ASSERT_GT(tiny, 0);
  auto set = AtomSet::Compile(kSameAtomThousandTimes, tiny);
  ASSERT_TRUE(set.ok()) << set.status().message();

  const uint64_t before = AtomSet::FallbackCount();
  std::vector<int> found;
  EXPECT_TRUE((*set)->Find("xx ABC yy", &found));
  std::vector<int> every(1000);
  std::iota(every.begin(), every.end(), 0);
  EXPECT_EQ(found, every);
  EXPECT_EQ(AtomSet::FallbackCount(), before + 1);

  // A line without the atom: the set answers (no fallback), and says so.
  EXPECT_FALSE((*set)->Find("nothing here", &found));
  EXPECT_THAT(found, IsEmpty());
  EXPECT_EQ(AtomSet::FallbackCount(), before + 1);
}

// An operator sees the fallback on /metrics: the pipeline reports each
// counted line once, at its next tick, as evictions_total{what="prefilter_fallback"}.
TEST(AtomSetTest, EachFallbackIsReportedOnceByThePipelineAsAnEviction) {
  testing::CountingEvents events;
  correlate::LatestIncidents sink;
  Pipeline pipeline(testing::EmbeddedRules(), Pipeline::Options(), events, sink);
  SourceSpec spec;
  spec.name = "0.log";
  spec.deployment = "d";
  spec.parser.current_year = 2026;
  const Pipeline::SourceId id = pipeline.AddSource(spec);
  auto feed = [&](const std::string& line) {
    testing::FeedLine(pipeline, id, line, pipeline.NextPosition(id).offset);
  };
  feed("INFO 11-30 12:00:00 [api_server.py:1] started");  // first tick: earlier fallbacks
  const uint64_t reported_before = events.Evictions(Evicted::kPrefilterFallback);

  const int64_t tiny = SmallestBudgetThatCompiles(kSameAtomThousandTimes);
  ASSERT_GT(tiny, 0);
  auto set = AtomSet::Compile(kSameAtomThousandTimes, tiny);
  ASSERT_TRUE(set.ok()) << set.status().message();
  std::vector<int> found;
  ASSERT_TRUE((*set)->Find("xx ABC yy", &found));

  feed("INFO 11-30 12:00:02 [api_server.py:1] two seconds on");  // the next tick
  EXPECT_EQ(events.Evictions(Evicted::kPrefilterFallback), reported_before + 1);
  feed("INFO 11-30 12:00:04 [api_server.py:1] and two more");
  EXPECT_EQ(events.Evictions(Evicted::kPrefilterFallback), reported_before + 1);
}

TEST(AtomSetTest, AtomsAreFoundCaseInsensitivelyIncludingNonAsciiOnes) {
  auto set = AtomSet::Compile({"défaut", "ÉCHEC du noyau", "ｆｕｌｌ"}, kRe2MaxMem);
  ASSERT_TRUE(set.ok()) << set.status().message();
  std::vector<int> found;
  EXPECT_TRUE((*set)->Find("ERROR: Échec du noyau (DÉFAUT)", &found));
  EXPECT_THAT(found, ElementsAre(0, 1));
  EXPECT_FALSE((*set)->Find("defaut sans accent", &found));
  EXPECT_THAT(found, IsEmpty());
}

TEST(AtomSetTest, ABudgetThatCannotHoldTheProgramIsAnError) {
  auto set = AtomSet::Compile(kSameAtomThousandTimes, 1000);
  ASSERT_FALSE(set.ok());
  EXPECT_THAT(std::string(set.status().message()), ::testing::HasSubstr("does not compile"));
}

// ---- the rule set --------------------------------------------------------

std::shared_ptr<const RuleSet> Pack(const std::string& pattern) {
  auto loaded = LoadRuleTexts({{"r/facts.yaml", R"(facts:
  - name: tensor_parallel_size
    patterns: ['tensor_parallel_size=(\d+)']
)"},
                               {"r/x.yaml", R"(id: x
title: x
class: unknown
severity: error
sequence:
  - id: symptom
    level: WARNING
    patterns: [')" + pattern + R"(']
    symptom: true
explanation: "x"
remediation: ["x"]
)"}});
  EXPECT_TRUE(loaded.ok()) << loaded.status().message();
  return loaded.ok() ? *loaded : nullptr;
}

TEST(RuleSetMemoryTest, MatchTimePatternsAreCompiledWithinTheBoundedBudget) {
  auto pack = Pack("Unknown SF transformation");
  ASSERT_NE(pack, nullptr);
  EXPECT_EQ(pack->Pattern(0).options().max_mem(), kRe2MaxMem);
}

TEST(RuleSetMemoryTest, AHostileLineIsStillMatchedWhenThePatternsDfaOutgrowsItsBudget) {
  // x[ab]{16}y needs 2^16 DFA states on random a/b text, far beyond 1 MiB:
  // RE2 resets its cache or falls back to the NFA, and the match is found.
  auto pack = Pack("x[ab]{16}y");
  ASSERT_NE(pack, nullptr);
  std::mt19937 rng(7);
  std::string line;
  while (line.size() < (256 << 10)) line += "xab"[rng() % 3];
  RuleSet::MatchScratch scratch;
  std::vector<int> matches;
  pack->Match(line + "yy", Level::kError, &scratch, &matches);
  const bool expected = RE2::PartialMatch(line + "yy", "x[ab]{16}y");
  EXPECT_EQ(!matches.empty(), expected);
  std::string sixteen;
  for (int i = 0; i < 8; ++i) sixteen += "ab";
  pack->Match(line + "x" + sixteen + "y", Level::kError, &scratch, &matches);
  EXPECT_THAT(matches, ElementsAre(0));
}

TEST(RuleSetMemoryTest, APackWithNonAsciiAtomsMatchesThemCaseInsensitively) {
  auto pack = Pack("échec du noyau: .*");
  ASSERT_NE(pack, nullptr);
  EXPECT_TRUE(pack->Atoms().empty());  // the atom set, not the ASCII scanner
  RuleSet::MatchScratch scratch;
  std::vector<int> matches;
  pack->Match("ERROR 01-04 14:48:25 [x.py:1] ÉCHEC DU NOYAU: sm_120", Level::kError, &scratch,
              &matches);
  EXPECT_THAT(matches, IsEmpty());  // the pattern itself is case-sensitive
  pack->Match("ERROR 01-04 14:48:25 [x.py:1] échec du noyau: sm_120", Level::kError, &scratch,
              &matches);
  EXPECT_THAT(matches, ElementsAre(0));
}

}  // namespace
}  // namespace fingerprintd::rules
