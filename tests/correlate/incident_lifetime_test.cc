// An incident lasts as long as its failure, as an operator paged at 3 a.m.
// needs it to: a TP=2 failure stays open through any silence and closes only
// when the deployment starts healthy (recovered), when all its sources are
// removed (gone), after max_age without a new occurrence (expired); a crash
// loop is one incident whose occurrences count its restarts; the same failure
// after a recovery is a new incident that names the one it regressed from; a
// restart of the daemon in the middle of all this continues the same incident.
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

using testing::WorkerProcess;

std::shared_ptr<const rules::RuleSet> Pack() {
  auto loaded = rules::LoadRuleTexts({{"r/facts.yaml", R"(facts:
  - name: tensor_parallel_size
    patterns: ['tensor_parallel_size=(\d+)']
)"},
                                      {"r/boom.yaml", R"(id: boom
title: boom
class: hardware_support
severity: critical
window: 60s
sequence:
  - id: symptom
    level: ERROR
    patterns: ['boom']
    symptom: true
explanation: "{workers} went boom."
remediation: ["Stop the boom."]
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

class IncidentLifetimeTest : public ::testing::Test {
 protected:
  IncidentLifetimeTest() : IncidentLifetimeTest(Correlator::Options()) {}
  explicit IncidentLifetimeTest(Correlator::Options options)
      : rules_(Pack()), correlator_(std::make_unique<Correlator>(rules_, events_, sink_, options)) {
    AddSources(*correlator_);
  }

  void AddSources(Correlator& correlator) {
    for (int rank = 0; rank < 2; ++rank) {
      sources_[rank] = correlator.AddSource("rank" + std::to_string(rank) + ".log", "llm");
      correlator.OnFact(sources_[rank], "tensor_parallel_size", "2");
    }
  }

  rules::RuleHit Hit(const std::string& rule, int rank, int pid, int64_t t) {
    rules::RuleHit hit;
    hit.rule = rules_->Find(rule);
    hit.source_id = sources_[rank];
    hit.worker = WorkerProcess(rank, pid);
    hit.confidence = rules::Confidence::kConfirmed;
    hit.first_time_us = hit.time_us = t;
    hit.stages.push_back({sources_[rank], static_cast<uint64_t>(t / kSecond % 100000), t,
                          rule == "boom" ? "symptom" : "ready", rule});
    return hit;
  }

  // One start-up of the deployment that fails on both ranks at `t` (new pids
  // each time, as a restarted pod has).
  void FailingStart(int64_t t, int attempt = 0) {
    for (int rank = 0; rank < 2; ++rank) {
      correlator_->OnWorkerSeen(sources_[rank], WorkerProcess(rank, 100 * attempt + rank));
      correlator_->OnHit(Hit("boom", rank, 100 * attempt + rank, t + rank * kSecond));
    }
  }

  void HealthyStart(int64_t t) { correlator_->OnHit(Hit("serving", 0, 9000, t)); }

  std::map<std::string, Incident> Latest() const { return sink_.Latest(); }
  int Count(IncidentChange kind) const { return sink_.Count(kind); }

  std::shared_ptr<const rules::RuleSet> rules_;
  testing::CountingEvents events_;
  RecordingSink sink_;
  std::unique_ptr<Correlator> correlator_;
  uint32_t sources_[2] = {0, 0};
};

TEST_F(IncidentLifetimeTest, ATpTwoFailureStaysOpenThroughHalfAnHourOfSilenceAndClosesWhenHealthy) {
  FailingStart(kT0);
  ASSERT_EQ(Count(IncidentChange::kOpened), 1);
  // The old lifetime closed it two windows (2 minutes) after the last hit.
  for (int64_t m = 1; m <= 30; ++m) correlator_->Advance(kT0 + m * kMinute);
  EXPECT_EQ(Count(IncidentChange::kClosed), 0);
  ASSERT_EQ(Latest().size(), 1u);
  EXPECT_EQ(Latest().begin()->second.closed, CloseReason::kNone);

  HealthyStart(kT0 + 31 * kMinute);
  ASSERT_EQ(Count(IncidentChange::kClosed), 1);
  const auto& [change, closed] = sink_.changes.back();
  EXPECT_EQ(change, IncidentChange::kClosed);
  EXPECT_EQ(closed.closed, CloseReason::kRecovered);
  EXPECT_EQ(closed.closed_us, kT0 + 31 * kMinute);
  EXPECT_EQ(closed.revision, sink_.changes[sink_.changes.size() - 2].second.revision + 1)
      << "the close is a revision of its own";
  EXPECT_EQ(closed.affected, 2);
  EXPECT_EQ(closed.occurrences, 1);
  EXPECT_THAT(IncidentToJson(closed), ::testing::HasSubstr("\"closed\":\"recovered\""));
}

TEST_F(IncidentLifetimeTest, AReadyLineBeforeTheFailureDoesNotCloseIt) {
  HealthyStart(kT0);  // up first, then a failure at run time
  FailingStart(kT0 + 10 * kMinute);
  correlator_->Advance(kT0 + 20 * kMinute);
  EXPECT_EQ(Count(IncidentChange::kClosed), 0);
  EXPECT_EQ(Count(IncidentChange::kOpened), 1);
}

TEST_F(IncidentLifetimeTest, ACrashLoopOfFiveRestartsIsOneIncidentWithFiveOccurrences) {
  // CrashLoopBackOff: 10 s, 20 s, 40 s, 80 s of back-off plus a start-up each.
  int64_t t = kT0;
  for (int attempt = 0; attempt < 5; ++attempt) {
    FailingStart(t, attempt);
    correlator_->Advance(t + 90 * kSecond);
    t += 90 * kSecond + (10 * kSecond << attempt) + 2 * kMinute;
  }
  const auto latest = Latest();
  ASSERT_EQ(latest.size(), 1u);
  const Incident& incident = latest.begin()->second;
  EXPECT_EQ(incident.occurrences, 5);
  EXPECT_EQ(incident.closed, CloseReason::kNone);
  EXPECT_EQ(incident.affected, 2) << "the workers are the latest attempt's";
  EXPECT_EQ(incident.first_seen_us, kT0);
  EXPECT_GT(incident.last_seen_us, kT0 + 10 * kMinute);
  EXPECT_EQ(Count(IncidentChange::kOpened), 1);
  EXPECT_EQ(Count(IncidentChange::kClosed), 0);
  int previous = 0;
  for (const auto& [change, i] : sink_.changes) {
    EXPECT_EQ(i.revision, previous + 1) << "one revision per change";
    previous = i.revision;
  }
}

TEST_F(IncidentLifetimeTest, TheSameFailureAfterARecoveryIsANewIncidentThatRegressedFromTheOld) {
  FailingStart(kT0);
  HealthyStart(kT0 + 10 * kMinute);
  FailingStart(kT0 + 3 * 60 * kMinute, 1);
  correlator_->Advance(kT0 + 4 * 60 * kMinute);
  const auto latest = Latest();
  ASSERT_EQ(latest.size(), 2u);
  std::vector<Incident> incidents;
  for (const auto& [id, i] : latest) incidents.push_back(i);
  std::sort(incidents.begin(), incidents.end(),
            [](const Incident& a, const Incident& b) { return a.first_seen_us < b.first_seen_us; });
  EXPECT_EQ(incidents[0].closed, CloseReason::kRecovered);
  EXPECT_EQ(incidents[1].closed, CloseReason::kNone);
  EXPECT_EQ(incidents[1].regressed_from, incidents[0].incident_id);
  EXPECT_THAT(IncidentToJson(incidents[1]),
              ::testing::HasSubstr("\"regressed_from\":\"" + incidents[0].incident_id + "\""));
}

class ShortLifetimeTest : public IncidentLifetimeTest {
 protected:
  static Correlator::Options Short() {
    Correlator::Options options;
    options.gone_after_us = 10 * kMinute;
    options.max_age_us = 60 * kMinute;
    return options;
  }
  ShortLifetimeTest() : IncidentLifetimeTest(Short()) {}
};

TEST_F(ShortLifetimeTest, AnIncidentWithoutANewOccurrenceForMaxAgeExpires) {
  FailingStart(kT0);
  correlator_->Advance(kT0 + 59 * kMinute);
  EXPECT_EQ(Count(IncidentChange::kClosed), 0);
  correlator_->Advance(kT0 + 62 * kMinute);
  ASSERT_EQ(Count(IncidentChange::kClosed), 1);
  EXPECT_EQ(sink_.changes.back().second.closed, CloseReason::kExpired);
  // Nothing healthy was seen: the same failure later is not a regression.
  FailingStart(kT0 + 120 * kMinute, 1);
  correlator_->Advance(kT0 + 125 * kMinute);
  EXPECT_EQ(sink_.changes.back().second.regressed_from, "");
  EXPECT_EQ(Latest().size(), 2u);
}

TEST_F(ShortLifetimeTest, ADeploymentWhoseSourcesWereAllRemovedClosesAsGoneAfterTheGrace) {
  FailingStart(kT0);
  correlator_->ForgetSource(sources_[0]);
  correlator_->Advance(kT0 + 5 * kMinute);
  correlator_->ForgetSource(sources_[1]);  // the kubelet deleted the pod's logs
  correlator_->Advance(kT0 + 6 * kMinute);
  correlator_->Advance(kT0 + 15 * kMinute);
  EXPECT_EQ(Count(IncidentChange::kClosed), 0) << "9 minutes without a source";
  correlator_->Advance(kT0 + 16 * kMinute + kSecond);
  ASSERT_EQ(Count(IncidentChange::kClosed), 1);
  EXPECT_EQ(sink_.changes.back().second.closed, CloseReason::kGone);
  EXPECT_EQ(correlator_->deployment_count(), 0u);
}

TEST_F(ShortLifetimeTest, ASourceOfTheDeploymentComingBackKeepsItsIncidentOpen) {
  FailingStart(kT0);
  correlator_->ForgetSource(sources_[0]);
  correlator_->ForgetSource(sources_[1]);
  correlator_->Advance(kT0 + 5 * kMinute);
  correlator_->AddSource("rank0.1.log", "llm");  // the restarted container's log
  correlator_->Advance(kT0 + 30 * kMinute);
  EXPECT_EQ(Count(IncidentChange::kClosed), 0);
}

TEST_F(IncidentLifetimeTest, ADaemonRestartedInTheMiddleOfACrashLoopContinuesTheSameIncident) {
  FailingStart(kT0, 0);
  correlator_->Advance(kT0 + 3 * kMinute);
  FailingStart(kT0 + 5 * kMinute, 1);
  correlator_->Advance(kT0 + 8 * kMinute);
  const std::string state = correlator_->SaveState();
  const std::string id = Latest().begin()->first;

  // A new process: the same sources registered again, the state restored.
  correlator_ = std::make_unique<Correlator>(rules_, events_, sink_);
  AddSources(*correlator_);
  ASSERT_TRUE(correlator_->RestoreState(state).ok());
  FailingStart(kT0 + 10 * kMinute, 2);
  correlator_->Advance(kT0 + 13 * kMinute);
  ASSERT_EQ(Latest().size(), 1u);
  EXPECT_EQ(Latest().at(id).occurrences, 3);
  HealthyStart(kT0 + 20 * kMinute);
  EXPECT_EQ(Latest().at(id).closed, CloseReason::kRecovered);
  EXPECT_EQ(Count(IncidentChange::kOpened), 1);
}

TEST_F(IncidentLifetimeTest, TheEndOfTheInputLeavesItOpenAsStillFailing) {
  FailingStart(kT0);
  correlator_->Finish();
  EXPECT_EQ(Count(IncidentChange::kClosed), 0);
  EXPECT_THAT(IncidentToText(Latest().begin()->second),
              ::testing::HasSubstr("state:       open, still failing (1 occurrence)"));
  EXPECT_EQ(IncidentToJson(Latest().begin()->second).find("\"closed\""), std::string::npos);
}

}  // namespace
}  // namespace fingerprintd::correlate
