// Correlator behaviour as operators see it: one incident per deployment and
// rule, engine-core copies are not workers, late workers update the same id,
// a failure again is another occurrence of the open incident, the catch-all stays quiet when a real
// fingerprint matched.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <functional>
#include <nlohmann/json.hpp>

#include "fingerprintd/correlate.h"
#include "testing/replay_harness.h"

namespace fingerprintd::correlate {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

constexpr int64_t kSecond = 1'000'000;
constexpr int64_t kT0 = 1'770'000'000LL * kSecond;

std::shared_ptr<const rules::RuleSet> Pack() {
  const char* facts = R"(facts:
  - name: tensor_parallel_size
    patterns: ['tensor_parallel_size=(\d+)']
kernel_support: []
)";
  auto rule = [](const std::string& id, const std::string& cls, bool fallback) {
    return "id: " + id + "\ntitle: " + id + "\nclass: " + cls +
           "\nseverity: critical\nwindow: 60s\nfallback: " + (fallback ? "true" : "false") +
           R"(
sequence:
  - id: symptom
    level: ERROR
    patterns: ['boom']
    symptom: true
explanation: "{workers} went boom."
remediation: ["Stop the boom."]
)";
  };
  auto loaded = rules::LoadRuleTexts({{"r/facts.yaml", facts},
                                      {"r/boom.yaml", rule("boom", "hardware_support", false)},
                                      {"r/catch-all.yaml", rule("catch-all", "unknown", true)},
                                      {"r/other.yaml", rule("other", "hardware_support", false)}});
  EXPECT_TRUE(loaded.ok()) << loaded.status().message();
  return *loaded;
}

WorkerInfo Worker(int tp, int pid) {
  WorkerInfo w;
  w.role = ProcessRole::kWorker;
  w.name = "Worker_TP" + std::to_string(tp);
  w.tp = tp;
  w.pid = pid;
  return w;
}

WorkerInfo EngineCore(int pid) {
  WorkerInfo w;
  w.role = ProcessRole::kEngineCore;
  w.name = "EngineCore_DP0";
  w.pid = pid;
  return w;
}

class CorrelatorTest : public ::testing::Test {
 protected:
  CorrelatorTest() : rules_(Pack()), correlator_(rules_, events_, sink_) {
    source_ = correlator_.AddSource("pod.log", "llama");
  }

  rules::RuleHit Hit(const std::string& rule, const WorkerInfo& worker, int64_t t,
                     const std::string& fingerprint = "v1:aaaa") {
    rules::RuleHit hit;
    hit.rule = rules_->Find(rule);
    hit.source_id = source_;
    hit.worker = worker;
    hit.confidence = rules::Confidence::kConfirmed;
    hit.first_time_us = hit.time_us = t;
    hit.traceback_fingerprint = fingerprint;
    hit.stages.push_back(
        {source_, static_cast<uint64_t>(t / kSecond % 1000), t, "symptom", "boom"});
    return hit;
  }

  std::shared_ptr<const rules::RuleSet> rules_;
  NullPipelineEvents events_;
  testing::LatestIncidentSink sink_;
  Correlator correlator_;
  uint32_t source_;
};

TEST_F(CorrelatorTest, AllExpectedWorkersReportedEmitsBeforeTheWindowCloses) {
  correlator_.OnFact(source_, "tensor_parallel_size", "2");
  correlator_.OnHit(Hit("boom", Worker(0, 100), kT0));
  EXPECT_EQ(sink_.emissions(), 0);
  correlator_.OnHit(Hit("boom", Worker(1, 101), kT0 + kSecond));
  ASSERT_EQ(sink_.emissions(), 1);
  auto incidents = sink_.Sorted();
  EXPECT_EQ(incidents[0].affected, 2);
  EXPECT_EQ(incidents[0].expected, 2);
  EXPECT_TRUE(incidents[0].identical);
  EXPECT_THAT(incidents[0].ranks, ElementsAre(0, 1));
  EXPECT_THAT(incidents[0].explanation,
              HasSubstr("2/2 tensor-parallel workers failed identically"));
  correlator_.Finish();
  EXPECT_EQ(sink_.emissions(), 1) << "unchanged incident must not be emitted twice";
}

// A garbled config line: tensor_parallel_size=2000000000 and
// pipeline_parallel_size=4 overflowed int into a negative worker count.
TEST_F(CorrelatorTest, ParallelSizesFromAGarbledLineDoNotOverflowTheExpectedWorkers) {
  correlator_.OnFact(source_, "tensor_parallel_size", "2000000000");
  correlator_.OnFact(source_, "pipeline_parallel_size", "4");
  correlator_.OnHit(Hit("boom", Worker(0, 100), kT0));
  correlator_.Finish();
  ASSERT_EQ(sink_.Sorted().size(), 1u);
  EXPECT_EQ(sink_.Sorted()[0].expected, 1 << 20);
  EXPECT_EQ(sink_.Sorted()[0].affected, 1);
}

TEST_F(CorrelatorTest, WorldSizeGivesTheExpectedWorkersWhenTheConfigWasNotLogged) {
  correlator_.OnFact(source_, "world_size", "4");
  correlator_.OnHit(Hit("boom", Worker(0, 100), kT0));
  correlator_.Finish();
  ASSERT_EQ(sink_.Sorted().size(), 1u);
  EXPECT_EQ(sink_.Sorted()[0].expected, 4);
  EXPECT_EQ(sink_.Sorted()[0].affected, 1);
}

TEST_F(CorrelatorTest, EngineCoreReraiseIsEvidenceNotAnotherWorker) {
  correlator_.OnFact(source_, "tensor_parallel_size", "2");
  correlator_.OnHit(Hit("boom", Worker(0, 100), kT0));
  rules::RuleHit reraise = Hit("boom", EngineCore(50), kT0 + kSecond);
  correlator_.OnHit(reraise);
  rules::RuleHit ray = Hit("boom", EngineCore(50), kT0 + kSecond);
  ray.origin_pid = 100;
  correlator_.OnHit(ray);
  correlator_.Finish();
  auto incidents = sink_.Sorted();
  ASSERT_EQ(incidents.size(), 1u);
  EXPECT_EQ(incidents[0].affected, 1);
  EXPECT_EQ(incidents[0].expected, 2);
}

TEST_F(CorrelatorTest, OnlyAnEngineCoreCopyStillYieldsAnIncident) {
  rules::RuleHit ray = Hit("boom", EngineCore(50), kT0);
  ray.origin_pid = 2346;
  ray.origin_ip = "10.0.0.1";
  correlator_.OnHit(ray);
  correlator_.Finish();
  auto incidents = sink_.Sorted();
  ASSERT_EQ(incidents.size(), 1u);
  EXPECT_EQ(incidents[0].affected, 1);
  EXPECT_THAT(incidents[0].workers, ElementsAre("pid=2346 ip=10.0.0.1"));
}

TEST_F(CorrelatorTest, EngineCoreOnlyMatchOfAnotherRuleYieldsToTheWorkersIncident) {
  // The workers' own tracebacks identify the failure; the engine core's
  // one-line copy of the message also matches a sibling rule: one incident.
  correlator_.OnHit(Hit("boom", Worker(0, 100), kT0));
  correlator_.OnHit(Hit("other", EngineCore(50), kT0 + kSecond, ""));
  correlator_.Finish();
  EXPECT_THAT(testing::RuleIds(sink_.Sorted()), ElementsAre("boom"));
}

TEST_F(CorrelatorTest, EngineCoreOnlyMatchBeatsTheCatchAll) {
  correlator_.OnHit(Hit("catch-all", EngineCore(50), kT0));
  correlator_.OnHit(Hit("other", EngineCore(50), kT0 + kSecond));
  correlator_.Finish();
  EXPECT_THAT(testing::RuleIds(sink_.Sorted()), ElementsAre("other"));
}

TEST_F(CorrelatorTest, LateWorkerUpdatesTheSameIncidentId) {
  correlator_.OnFact(source_, "tensor_parallel_size", "4");
  correlator_.OnHit(Hit("boom", Worker(0, 100), kT0));
  correlator_.OnHit(Hit("boom", Worker(1, 101), kT0));
  correlator_.Advance(kT0 + 61 * kSecond);
  ASSERT_EQ(sink_.emissions(), 1);
  std::string id = sink_.Sorted()[0].incident_id;
  correlator_.OnHit(Hit("boom", Worker(2, 102), kT0 + 30 * kSecond));
  correlator_.Advance(kT0 + 95 * kSecond);
  ASSERT_EQ(sink_.emissions(), 2);
  auto incidents = sink_.Sorted();
  ASSERT_EQ(incidents.size(), 1u);
  EXPECT_EQ(incidents[0].incident_id, id);
  EXPECT_EQ(incidents[0].revision, 2);
  EXPECT_EQ(incidents[0].affected, 3);
}

TEST_F(CorrelatorTest, TheSameFailureAgainAfterTheWindowIsTheNextOccurrenceOfTheOpenIncident) {
  correlator_.OnHit(Hit("boom", Worker(0, 100), kT0));
  correlator_.OnHit(Hit("boom", Worker(0, 200), kT0 + 600 * kSecond));
  correlator_.Finish();
  auto incidents = sink_.Sorted();
  ASSERT_EQ(incidents.size(), 1u);
  EXPECT_EQ(incidents[0].occurrences, 2);
  EXPECT_EQ(incidents[0].first_seen_us, kT0);
  EXPECT_EQ(incidents[0].last_seen_us, kT0 + 600 * kSecond);
}

TEST_F(CorrelatorTest, AnotherRuleFailingInTheSameDeploymentIsAnotherIncident) {
  correlator_.OnHit(Hit("boom", Worker(0, 100), kT0));
  correlator_.OnHit(Hit("other", Worker(0, 200), kT0 + 600 * kSecond));
  correlator_.Finish();
  auto incidents = sink_.Sorted();
  ASSERT_EQ(incidents.size(), 2u);
  EXPECT_NE(incidents[0].incident_id, incidents[1].incident_id);
}

TEST_F(CorrelatorTest, DifferingTracebacksAreNotIdentical) {
  correlator_.OnHit(Hit("boom", Worker(0, 100), kT0, "v1:aaaa"));
  correlator_.OnHit(Hit("boom", Worker(1, 101), kT0, "v1:bbbb"));
  correlator_.Finish();
  auto incidents = sink_.Sorted();
  ASSERT_EQ(incidents.size(), 1u);
  EXPECT_FALSE(incidents[0].identical);
  EXPECT_THAT(incidents[0].explanation, HasSubstr("differing tracebacks"));
}

TEST_F(CorrelatorTest, CatchAllIsSuppressedWhenARealFingerprintMatched) {
  correlator_.OnHit(Hit("catch-all", Worker(0, 100), kT0));
  correlator_.OnHit(Hit("boom", Worker(0, 100), kT0));
  correlator_.Finish();
  EXPECT_THAT(testing::RuleIds(sink_.Sorted()), ElementsAre("boom"));
}

TEST_F(CorrelatorTest, CatchAllIsReportedWhenNothingElseMatched) {
  correlator_.OnHit(Hit("catch-all", Worker(0, 100), kT0));
  correlator_.Finish();
  auto incidents = sink_.Sorted();
  ASSERT_EQ(incidents.size(), 1u);
  EXPECT_EQ(incidents[0].rule->rule_class, "unknown");
  EXPECT_EQ(incidents[0].traceback_fingerprint, "v1:aaaa");
}

TEST_F(CorrelatorTest, IncidentIdsAreDeterministic) {
  correlator_.OnHit(Hit("boom", Worker(0, 100), kT0));
  correlator_.Finish();
  testing::LatestIncidentSink other_sink;
  Correlator other(rules_, events_, other_sink);
  uint32_t source = other.AddSource("pod.log", "llama");
  rules::RuleHit hit = Hit("boom", Worker(0, 100), kT0);
  hit.source_id = source;
  other.OnHit(hit);
  other.Finish();
  EXPECT_EQ(sink_.Sorted()[0].incident_id, other_sink.Sorted()[0].incident_id);
}

TEST_F(CorrelatorTest, ALineWithoutATimeOfItsOwnGivesReplaysIdWhenLiveDatesItByItsReading) {
  // Replay: the log gave no time, the hits are undated, decided at the end.
  correlator_.OnHit(Hit("boom", Worker(0, 100), 0));
  correlator_.Finish();
  // Live: the same lines dated by when they were read, rank 1 read first.
  testing::LatestIncidentSink live_sink;
  Correlator live(rules_, events_, live_sink);
  const uint32_t source = live.AddSource("pod.log", "llama");
  for (auto [rank, t] : {std::pair{1, kT0 + 7 * kSecond}, std::pair{0, kT0 + 9 * kSecond}}) {
    rules::RuleHit hit = Hit("boom", Worker(rank, 100 + rank), t);
    hit.source_id = source;
    hit.time_read = true;
    live.OnHit(hit);
  }
  // Decided in wall time: the window passed without a line of the log.
  live.AdvanceDeployment("llama", kT0 + 600 * kSecond);
  ASSERT_EQ(live_sink.Sorted().size(), 1u);
  EXPECT_EQ(live_sink.Sorted()[0].incident_id, sink_.Sorted()[0].incident_id);
}

TEST_F(CorrelatorTest, IncidentJsonCarriesTheContractFieldsInOrder) {
  correlator_.OnHit(Hit("boom", Worker(0, 100), kT0));
  correlator_.Finish();
  std::string json = IncidentToJson(sink_.Sorted()[0]);
  size_t last = 0;
  for (const char* field :
       {"\"schema\":\"fingerprintd/incident/v1\"", "\"incident_id\"", "\"rule\"", "\"class\"",
        "\"severity\"", "\"confidence\"", "\"title\"", "\"deployment\"", "\"workers\"",
        "\"identical\"", "\"first_seen\"", "\"last_seen\"", "\"occurrences\"", "\"stages\"",
        "\"facts\"", "\"evidence\"", "\"explanation\"", "\"remediation\""}) {
    size_t at = json.find(field, last);
    ASSERT_NE(at, std::string::npos) << field << " in order in " << json;
    last = at;
  }
  EXPECT_THAT(json, HasSubstr("\"first_seen\":\"2026-02-02T02:40:00Z\""));
  EXPECT_EQ(json.find('\n'), std::string::npos);
}

TEST(Rfc3339Test, FormatsWholeAndFractionalSeconds) {
  EXPECT_EQ(FormatRfc3339(0 + 1), "1970-01-01T00:00:00.000001Z");
  EXPECT_EQ(FormatRfc3339(951782400LL * kSecond), "2000-02-29T00:00:00Z");
}

TEST_F(CorrelatorTest, RestartFromSavedStateContinuesTheSameIncident) {
  correlator_.OnFact(source_, "tensor_parallel_size", "2");
  correlator_.OnHit(Hit("boom", Worker(0, 100), kT0));
  std::string state = correlator_.SaveState();

  // A new process: registers its sources in another order, restores, goes on.
  testing::LatestIncidentSink restarted_sink;
  Correlator restarted(rules_, events_, restarted_sink);
  restarted.AddSource("other.log", "elsewhere");
  ASSERT_TRUE(restarted.RestoreState(state).ok());
  rules::RuleHit second = Hit("boom", Worker(1, 101), kT0 + kSecond);
  second.source_id = 1;  // "pod.log" was registered by RestoreState after "other.log"
  second.stages[0].source_id = 1;
  restarted.OnHit(second);
  restarted.Finish();

  correlator_.OnHit(Hit("boom", Worker(1, 101), kT0 + kSecond));
  correlator_.Finish();
  ASSERT_EQ(restarted_sink.Sorted().size(), 1u);
  EXPECT_EQ(IncidentToJson(restarted_sink.Sorted()[0]), IncidentToJson(sink_.Sorted()[0]));
  EXPECT_EQ(restarted_sink.Sorted()[0].affected, 2);
}

TEST_F(CorrelatorTest, MalformedStateIsADataLossError) {
  Status s = correlator_.RestoreState("{\"version\": 99}");
  EXPECT_EQ(s.code(), StatusCode::kDataLoss);
  EXPECT_EQ(correlator_.RestoreState("not json").code(), StatusCode::kDataLoss);
}

TEST_F(CorrelatorTest, AStateThatFailsHalfwayLeavesTheCorrelatorAsItWas) {
  correlator_.OnFact(source_, "tensor_parallel_size", "2");
  Correlator other(rules_, events_, sink_);
  other.AddSource("pod.log", "llama");
  other.OnHit(Hit("boom", Worker(0, 100), kT0));
  std::string state = other.SaveState();
  // Break the last incident's last field: deployments and sources parse
  // first, then the incident fails.
  const size_t at = state.rfind("\"revision\"");
  ASSERT_NE(at, std::string::npos);
  state.replace(at, 10, "\"revisionX\"");
  const std::string before = correlator_.SaveState();
  EXPECT_EQ(correlator_.RestoreState(state).code(), StatusCode::kDataLoss);
  EXPECT_EQ(correlator_.SaveState(), before);
}

// A damaged checkpoint's process role out of the enum's range was cast
// unchecked into a ProcessRole.
TEST_F(CorrelatorTest, AStateWithAnUnknownProcessRoleIsADataLossErrorNamingIt) {
  Correlator other(rules_, events_, sink_);
  other.AddSource("pod.log", "llama");
  other.OnHit(Hit("boom", Worker(0, 100), kT0));
  nlohmann::json state = nlohmann::json::parse(other.SaveState());
  bool changed = false;
  std::function<void(nlohmann::json&)> first_role = [&](nlohmann::json& j) {
    if (changed) return;
    if (j.is_object() && j.contains("role")) {
      j["role"] = 77;
      changed = true;
      return;
    }
    if (j.is_structured()) {
      for (auto& child : j) first_role(child);
    }
  };
  first_role(state);
  ASSERT_TRUE(changed) << state.dump();
  Status s = correlator_.RestoreState(state.dump());
  EXPECT_EQ(s.code(), StatusCode::kDataLoss);
  EXPECT_THAT(s.message(), HasSubstr("unknown process role 77"));
}

TEST_F(CorrelatorTest, ARankThatRestartedWithANewPidIsStillOneWorker) {
  correlator_.OnFact(source_, "tensor_parallel_size", "2");
  correlator_.OnHit(Hit("boom", Worker(0, 100), kT0));
  correlator_.OnHit(Hit("boom", Worker(0, 900), kT0 + 30 * kSecond));  // TP0 after a restart
  correlator_.Finish();
  auto incidents = sink_.Sorted();
  ASSERT_EQ(incidents.size(), 1u);
  EXPECT_EQ(incidents[0].affected, 1);
  EXPECT_EQ(incidents[0].expected, 2);
  EXPECT_THAT(incidents[0].ranks, ElementsAre(0));
}

TEST_F(CorrelatorTest, SameTensorRankInAnotherDataParallelGroupIsAnotherWorker) {
  WorkerInfo dp1 = Worker(0, 300);
  dp1.dp = 1;
  correlator_.OnHit(Hit("boom", Worker(0, 100), kT0));
  correlator_.OnHit(Hit("boom", dp1, kT0));
  correlator_.Finish();
  ASSERT_EQ(sink_.Sorted().size(), 1u);
  EXPECT_EQ(sink_.Sorted()[0].affected, 2);
}

}  // namespace
}  // namespace fingerprintd::correlate
