// One failure, one page: a TP=4 deployment where rank 2 runs out of memory
// and, ten minutes later, the other ranks' collective watchdogs fire and the
// engine is reported dead is ONE incident, the out-of-memory, with what it
// provoked listed under it and its severity that of the loudest. The cause
// read after its consequences were reported still becomes the incident (the
// reported one closes as folded); a consequence with no failure before it is
// an incident of its own; a start line or a rank failing again from a new
// process begins the next attempt, whatever the spacing (a crash loop under
// Kubernetes' back-off counts every start).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "fingerprintd/correlate.h"
#include "testing/bounds_fixtures.h"
#include "testing/counting_events.h"
#include "testing/recording_incident_sink.h"

namespace fingerprintd::correlate {
namespace {

constexpr int64_t kSecond = 1'000'000;
constexpr int64_t kMinute = 60 * kSecond;
constexpr int64_t kT0 = 1'770'000'000LL * kSecond;

using ::testing::ElementsAre;
using testing::WorkerProcess;

std::shared_ptr<const rules::RuleSet> Pack() {
  auto loaded = rules::LoadRuleTexts({{"r/facts.yaml", R"(facts:
  - name: tensor_parallel_size
    patterns: ['tensor_parallel_size=(\d+)']
)"},
                                      {"r/oom.yaml", R"(id: oom
title: out of memory
class: resource
severity: error
window: 120s
sequence:
  - id: symptom
    level: ERROR
    patterns: ['OutOfMemoryError']
    symptom: true
explanation: "{workers} ran out of memory."
remediation: ["Use less memory."]
)"},
                                      {"r/watchdog.yaml", R"(id: watchdog
title: collective timed out
class: distributed
severity: critical
consequence: true
window: 300s
sequence:
  - id: symptom
    level: ERROR
    patterns: ['Watchdog caught collective operation timeout']
    symptom: true
explanation: "{workers} waited for a collective."
remediation: ["Find the rank that stopped."]
)"},
                                      {"r/dead.yaml", R"(id: dead
title: engine dead
class: distributed
severity: critical
consequence: true
fallback: true
window: 120s
sequence:
  - id: symptom
    level: ERROR
    patterns: ['died unexpectedly']
    symptom: true
explanation: "The engine died."
remediation: ["Read the log before it."]
)"},
                                      {"r/start.yaml", R"(id: start
kind: start
title: the engine starts
sequence:
  - id: start
    patterns: ['API server version']
    symptom: true
)"},
                                      {"r/serving.yaml", R"(id: serving
kind: ready
title: The server is serving
sequence:
  - id: ready
    patterns: ['Application startup complete']
    symptom: true
)"}});
  EXPECT_TRUE(loaded.ok()) << loaded.status().message();
  return *loaded;
}

using RecordingSink = testing::RecordingIncidentSink;

class CauseAndConsequencesTest : public ::testing::Test {
 protected:
  CauseAndConsequencesTest()
      : rules_(Pack()), correlator_(std::make_unique<Correlator>(rules_, events_, sink_)) {
    AddSources(*correlator_);
  }

  void AddSources(Correlator& correlator) {
    for (int rank = 0; rank < 4; ++rank) {
      sources_[rank] = correlator.AddSource("rank" + std::to_string(rank) + ".log", "llm");
      correlator.OnFact(sources_[rank], "tensor_parallel_size", "4");
    }
    server_ = correlator.AddSource("server.log", "llm");
  }

  // A hit of `rule` in rank `rank`'s stream (pid `pid`) at `t`, its symptom
  // on a line of its own. rank -1: the engine core's stream (no worker).
  rules::RuleHit Hit(const std::string& rule, int rank, int pid, int64_t t,
                     const std::string& fingerprint = "") {
    rules::RuleHit hit;
    hit.rule = rules_->Find(rule);
    hit.source_id = rank < 0 ? server_ : sources_[rank];
    if (rank < 0) {
      hit.worker.role = ProcessRole::kEngineCore;
      hit.worker.name = "EngineCore_DP0";
      hit.worker.pid = pid;
    } else {
      hit.worker = WorkerProcess(rank, pid);
    }
    hit.confidence = rules::Confidence::kConfirmed;
    hit.first_time_us = hit.time_us = t;
    hit.traceback_fingerprint = fingerprint;
    const std::string stage = hit.rule->stages[hit.rule->symptom_stage].id;
    hit.stages.push_back({hit.source_id, next_line_++, t, stage, rule + " line"});
    return hit;
  }

  void Workers(int attempt) {
    for (int rank = 0; rank < 4; ++rank) {
      correlator_->OnWorkerSeen(sources_[rank], WorkerProcess(rank, 100 * attempt + rank));
    }
  }

  // The cascade: rank 2 out of memory in the forward pass at `t`; 600 s
  // later the other ranks' watchdogs and the engine core's dead worker.
  void Oom(int64_t t, int attempt = 0) { correlator_->OnHit(Hit("oom", 2, 100 * attempt + 2, t)); }
  void Consequences(int64_t t, int attempt = 0) {
    for (int rank : {0, 1, 3}) {
      correlator_->OnHit(Hit("watchdog", rank, 100 * attempt + rank, t + rank * kSecond / 10));
    }
    correlator_->OnHit(Hit("dead", -1, 90 + attempt, t + kSecond));
  }

  std::map<std::string, Incident> Latest() const { return sink_.Latest(); }
  int Count(IncidentChange kind) const { return sink_.Count(kind); }

  std::shared_ptr<const rules::RuleSet> rules_;
  testing::CountingEvents events_;
  RecordingSink sink_;
  std::unique_ptr<Correlator> correlator_;
  uint32_t sources_[4] = {0, 0, 0, 0};
  uint32_t server_ = 0;
  uint64_t next_line_ = 1;
};

TEST_F(CauseAndConsequencesTest, OneRanksOutOfMemoryAndTheWatchdogsItProvokedAreOneIncident) {
  Workers(0);
  Oom(kT0);
  correlator_->Advance(kT0 + 5 * kMinute);
  Consequences(kT0 + 10 * kMinute);
  correlator_->Advance(kT0 + 30 * kMinute);

  const auto latest = Latest();
  ASSERT_EQ(latest.size(), 1u) << "the consequences open no incident of their own";
  const Incident& incident = latest.begin()->second;
  EXPECT_EQ(incident.rule->id, "oom");
  EXPECT_EQ(incident.rule->rule_class, "resource");
  EXPECT_THAT(incident.ranks, ElementsAre(2)) << "the cause's rank is the failed one";
  EXPECT_EQ(incident.severity, rules::Severity::kCritical)
      << "as loud as the loudest thing it provoked";
  ASSERT_EQ(incident.consequences.size(), 2u);
  EXPECT_EQ(incident.consequences[0].rule->id, "watchdog");
  EXPECT_THAT(incident.consequences[0].ranks, ElementsAre(0, 1, 3));
  EXPECT_EQ(incident.consequences[0].first_seen_us, kT0 + 10 * kMinute);
  EXPECT_EQ(incident.consequences[0].evidence.source, "rank3.log") << "the latest to say it";
  EXPECT_EQ(incident.consequences[1].rule->id, "dead");
  EXPECT_THAT(incident.consequences[1].workers, ElementsAre("EngineCore_DP0 pid=90"));
  const std::string json = IncidentToJson(incident);
  EXPECT_THAT(json, ::testing::HasSubstr("\"severity\":\"critical\""));
  EXPECT_THAT(json, ::testing::HasSubstr("\"consequences\":[{\"rule\":\"watchdog\""));
  EXPECT_THAT(IncidentToText(incident),
              ::testing::HasSubstr("then:        watchdog [critical] ranks 0,1,3"));
  EXPECT_EQ(Count(IncidentChange::kClosed), 0);
}

TEST_F(CauseAndConsequencesTest, TheCauseReadAfterItsConsequencesWereReportedTakesThemIn) {
  // The in-order run, for the id.
  Workers(0);
  Oom(kT0);
  Consequences(kT0 + 10 * kMinute);
  correlator_->Advance(kT0 + 30 * kMinute);
  ASSERT_EQ(Latest().size(), 1u);
  const std::string id = Latest().begin()->first;

  // The same, the out-of-memory decided last (its source read late).
  sink_.changes.clear();
  correlator_ = std::make_unique<Correlator>(rules_, events_, sink_);
  AddSources(*correlator_);
  Workers(0);
  for (int rank : {0, 1, 3}) {
    correlator_->OnHit(Hit("watchdog", rank, rank, kT0 + 10 * kMinute + rank * kSecond / 10));
  }
  correlator_->Advance(kT0 + 20 * kMinute);  // the watchdog's window is over: it was reported
  ASSERT_EQ(Count(IncidentChange::kOpened), 1);
  const std::string watchdog_id = sink_.changes.front().second.incident_id;
  EXPECT_EQ(sink_.changes.front().second.rule->id, "watchdog");
  Oom(kT0);
  correlator_->Advance(kT0 + 30 * kMinute);

  const auto latest = Latest();
  ASSERT_EQ(latest.size(), 2u);
  EXPECT_EQ(latest.at(watchdog_id).closed, CloseReason::kFolded);
  EXPECT_EQ(latest.at(watchdog_id).folded_into, id);
  ASSERT_EQ(latest.count(id), 1u) << "the cause's id is the same whatever the order";
  const Incident& cause = latest.at(id);
  EXPECT_EQ(cause.closed, CloseReason::kNone);
  ASSERT_EQ(cause.consequences.size(), 1u);
  EXPECT_EQ(cause.consequences[0].rule->id, "watchdog");
  EXPECT_THAT(cause.consequences[0].ranks, ElementsAre(0, 1, 3));
  EXPECT_THAT(IncidentToJson(latest.at(watchdog_id)),
              ::testing::HasSubstr("\"closed\":\"folded\""));
}

TEST_F(CauseAndConsequencesTest, AConsequenceWithNoFailureBeforeItIsAnIncidentOfItsOwn) {
  Workers(0);
  Consequences(kT0);  // the watchdogs, and the engine reported dead a second later
  correlator_->OnHit(Hit("dead", -1, 91, kT0 + 6 * kMinute));  // and again, past their window
  correlator_->Advance(kT0 + 30 * kMinute);
  const auto latest = Latest();
  ASSERT_EQ(latest.size(), 1u);
  const Incident& incident = latest.begin()->second;
  EXPECT_EQ(incident.rule->id, "watchdog") << "the earliest failure is the cause";
  EXPECT_EQ(incident.severity, rules::Severity::kCritical);
  // The catch-all's reading within the cause's window is the same failure
  // told by another process (it yields, unlisted); past the window it is
  // what the cause provoked.
  ASSERT_EQ(incident.consequences.size(), 1u);
  EXPECT_EQ(incident.consequences[0].rule->id, "dead");
  EXPECT_EQ(incident.consequences[0].first_seen_us, kT0 + 6 * kMinute);
}

TEST_F(CauseAndConsequencesTest, ACopyOfTheCausesOwnTracebackIsNoConsequence) {
  Workers(0);
  correlator_->OnHit(Hit("oom", 2, 2, kT0, "fp-oom"));
  correlator_->OnHit(Hit("dead", -1, 90, kT0 + kSecond, "fp-oom"));  // the same traceback, relayed
  correlator_->Advance(kT0 + 30 * kMinute);
  const auto latest = Latest();
  ASSERT_EQ(latest.size(), 1u);
  EXPECT_TRUE(latest.begin()->second.consequences.empty());
  EXPECT_EQ(latest.begin()->second.severity, rules::Severity::kError);
}

TEST_F(CauseAndConsequencesTest, AFailureAfterAStartLineIsNoConsequenceOfOneBeforeIt) {
  Workers(0);
  Oom(kT0);
  correlator_->OnHit(Hit("start", -1, 1, kT0 + 30 * kSecond));
  Workers(1);
  Consequences(kT0 + 10 * kMinute, 1);
  correlator_->Advance(kT0 + 30 * kMinute);
  // The watchdogs after the restart are the new attempt's earliest failure:
  // an incident of their own, and the out-of-memory before the start keeps
  // none of them.
  const auto latest = Latest();
  ASSERT_EQ(latest.size(), 2u);
  for (const auto& [id, incident] : latest) {
    if (incident.rule->id == "oom") {
      EXPECT_TRUE(incident.consequences.empty()) << id;
    } else {
      EXPECT_EQ(incident.rule->id, "watchdog");
      EXPECT_TRUE(incident.consequences.empty()) << "the dead engine a second later yields to it";
    }
  }
}

TEST_F(CauseAndConsequencesTest, ACrashLoopUnderBackOffCountsEveryStartAsAnOccurrence) {
  // Five failing starts, restarted 10, 20, 40 and 80 s after each failure:
  // closer than the rule's 120 s window, told apart by the start lines.
  int64_t t = kT0;
  for (int attempt = 0; attempt < 5; ++attempt) {
    correlator_->OnHit(Hit("start", -1, 1 + attempt, t));
    Workers(attempt);
    Oom(t + 20 * kSecond, attempt);
    correlator_->Advance(t + 21 * kSecond);
    t += 20 * kSecond + (10 * kSecond << attempt);
  }
  correlator_->Advance(t + 10 * kMinute);
  const auto latest = Latest();
  ASSERT_EQ(latest.size(), 1u);
  EXPECT_EQ(latest.begin()->second.occurrences, 5);
  EXPECT_EQ(Count(IncidentChange::kOpened), 1);
}

TEST_F(CauseAndConsequencesTest, ARankFailingAgainFromANewProcessIsTheNextAttempt) {
  Workers(0);
  Oom(kT0, 0);
  Workers(1);
  Oom(kT0 + 30 * kSecond, 1);  // within the window, but rank 2 is another process now
  Oom(kT0 + 31 * kSecond, 1);  // the same process again: the same attempt
  correlator_->Advance(kT0 + 10 * kMinute);
  const auto latest = Latest();
  ASSERT_EQ(latest.size(), 1u);
  EXPECT_EQ(latest.begin()->second.occurrences, 2);
}

TEST_F(CauseAndConsequencesTest, ADaemonRestartKeepsTheConsequencesAndTheStarts) {
  Workers(0);
  correlator_->OnHit(Hit("start", -1, 1, kT0 - kMinute));
  Oom(kT0);
  Consequences(kT0 + 10 * kMinute);
  correlator_->Advance(kT0 + 20 * kMinute);
  const std::string state = correlator_->SaveState();
  const std::string id = Latest().begin()->first;

  correlator_ = std::make_unique<Correlator>(rules_, events_, sink_);
  AddSources(*correlator_);
  ASSERT_TRUE(correlator_->RestoreState(state).ok());
  // A late watchdog of the same attempt still folds in; a failure after a
  // new start is the next occurrence.
  correlator_->OnHit(Hit("watchdog", 3, 3, kT0 + 11 * kMinute));
  correlator_->OnHit(Hit("start", -1, 2, kT0 + 12 * kMinute));
  Workers(1);
  correlator_->Advance(kT0 + 13 * kMinute);
  auto latest = Latest();
  ASSERT_EQ(latest.size(), 1u);
  ASSERT_EQ(latest.at(id).consequences.size(), 2u);
  EXPECT_EQ(latest.at(id).consequences[0].first_seen_us, kT0 + 10 * kMinute);
  EXPECT_EQ(latest.at(id).consequences[0].evidence.source, "rank3.log")
      << "rank 3's later line, read after the restore";
  EXPECT_THAT(latest.at(id).consequences[0].ranks, ElementsAre(0, 1, 3));
  Oom(kT0 + 12 * kMinute + 40 * kSecond, 1);
  correlator_->Advance(kT0 + 30 * kMinute);
  latest = Latest();
  ASSERT_EQ(latest.size(), 1u);
  EXPECT_EQ(latest.at(id).occurrences, 2);
  EXPECT_TRUE(latest.at(id).consequences.empty()) << "the consequences are the attempt's";
}

}  // namespace
}  // namespace fingerprintd::correlate
