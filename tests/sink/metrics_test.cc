#include "sink/metrics.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "testing/incident_builder.h"
#include "testing/replay_harness.h"

namespace fingerprintd::sink {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

correlate::Incident IncidentOf(const std::string& id, std::vector<int32_t> ranks) {
  correlate::Incident incident =
      testing::IncidentOfRule("deepgemm-unknown-sf-transformation", id, "qwen3");
  incident.ranks = std::move(ranks);
  return incident;
}

TEST(MetricsTest, EveryFamilyOfTheContractIsExposedUnderItsName) {
  Metrics metrics("1.2.3");
  metrics.LineRead("/logs/0.log", 10);
  metrics.RuleMatched("cuda-out-of-memory", "symptom");
  metrics.IncidentOpened("cuda-out-of-memory", "resource", "error");
  metrics.OnIncident(correlate::IncidentChange::kOpened, IncidentOf("inc-1", {0}));
  std::string text = metrics.Serialize(0);
  for (const char* name : {"fingerprintd_incidents_total{", "fingerprintd_worker_failures{",
                           "fingerprintd_rule_matches_total{", "fingerprintd_lines_total{",
                           "fingerprintd_bytes_total{", "fingerprintd_lines_dropped_total{",
                           "fingerprintd_rotations_total ", "fingerprintd_truncations_total ",
                           "fingerprintd_checkpoint_age_seconds ", "fingerprintd_rules_loaded ",
                           "fingerprintd_rule_reload_failures_total ",
                           "fingerprintd_evictions_total{", "fingerprintd_build_info{"}) {
    EXPECT_THAT(text, HasSubstr(name)) << name;
  }
  EXPECT_THAT(text, HasSubstr(R"(fingerprintd_build_info{version="1.2.3"} 1)"));
  EXPECT_THAT(text, HasSubstr(R"(fingerprintd_lines_total{source="/logs/0.log"} 1)"));
  EXPECT_THAT(text, HasSubstr(R"(fingerprintd_bytes_total{source="/logs/0.log"} 10)"));
  EXPECT_THAT(text, HasSubstr(R"(fingerprintd_incidents_total{class="resource",)"
                              R"(rule="cuda-out-of-memory",severity="error"} 1)"));
  EXPECT_THAT(text, HasSubstr(R"(fingerprintd_evictions_total{what="held_event"} 0)"));
}

TEST(MetricsTest, AWorkerFailureIsOneWhileItsIncidentIsOpenAndZeroOnceItCloses) {
  Metrics metrics("1");
  const std::string rank1 =
      R"(fingerprintd_worker_failures{class="hardware_support",deployment="qwen3",rank="1",)"
      R"(rule="deepgemm-unknown-sf-transformation",severity="critical"})";
  metrics.OnIncident(correlate::IncidentChange::kOpened, IncidentOf("inc-a", {0}));
  EXPECT_THAT(metrics.Serialize(0), Not(HasSubstr(rank1)));
  metrics.OnIncident(correlate::IncidentChange::kUpdated, IncidentOf("inc-a", {0, 1}));
  EXPECT_THAT(metrics.Serialize(0), HasSubstr(rank1 + " 1"));
  // A second open incident holding the same rank keeps it at 1 (not 2), and
  // at 1 until both are closed.
  metrics.OnIncident(correlate::IncidentChange::kOpened, IncidentOf("inc-b", {1}));
  EXPECT_THAT(metrics.Serialize(0), HasSubstr(rank1 + " 1"));
  metrics.OnIncident(correlate::IncidentChange::kClosed, IncidentOf("inc-a", {0, 1}));
  EXPECT_THAT(metrics.Serialize(0), HasSubstr(rank1 + " 1"));
  metrics.OnIncident(correlate::IncidentChange::kClosed, IncidentOf("inc-b", {1}));
  EXPECT_THAT(metrics.Serialize(0), HasSubstr(rank1 + " 0"));
}

TEST(MetricsTest, ACrashLoopStaysOneWhileItsOccurrencesAreCountedAndTheCloseByItsReason) {
  Metrics metrics("1");
  const std::string rank0 =
      R"(fingerprintd_worker_failures{class="hardware_support",deployment="qwen3",rank="0",)"
      R"(rule="deepgemm-unknown-sf-transformation",severity="critical"})";
  correlate::Incident incident = IncidentOf("inc-loop", {0});
  metrics.OnIncident(correlate::IncidentChange::kOpened, incident);
  for (int occurrence = 2; occurrence <= 5; ++occurrence) {
    incident.occurrences = occurrence;
    metrics.OnIncident(correlate::IncidentChange::kUpdated, incident);
    EXPECT_THAT(metrics.Serialize(0), HasSubstr(rank0 + " 1")) << "restart " << occurrence;
  }
  // (fingerprintd_incidents_total counts openings, through
  // PipelineEvents::IncidentOpened: the correlator opens a crash loop once.)
  const std::string text = metrics.Serialize(0);
  EXPECT_THAT(text,
              HasSubstr(R"(fingerprintd_incident_occurrences_total{class="hardware_support",)"
                        R"(rule="deepgemm-unknown-sf-transformation",severity="critical"} 4)"));
  incident.closed = correlate::CloseReason::kRecovered;
  metrics.OnIncident(correlate::IncidentChange::kClosed, incident);
  EXPECT_THAT(metrics.Serialize(0), HasSubstr(rank0 + " 0"));
  EXPECT_THAT(metrics.Serialize(0),
              HasSubstr(R"(fingerprintd_incidents_closed_total{reason="recovered"} 1)"));
}

TEST(MetricsTest, SourcesPastTheCapAreCountedUnderOther) {
  Metrics metrics("1");
  for (size_t i = 0; i < kMaxLabelValues + 5; ++i) metrics.LineRead(std::to_string(i), 1);
  std::string text = metrics.Serialize(0);
  EXPECT_THAT(text, HasSubstr(R"(fingerprintd_lines_total{source="_other"} 5)"));
  EXPECT_THAT(text, HasSubstr(R"(fingerprintd_label_overflow_total{label="source"} 5)"));
  EXPECT_EQ(metrics.lines(), kMaxLabelValues + 5);
}

// Issue 29: lines_total counted the lines a restart read again (329 for 228
// written), so it could not show whether a line was lost or doubled.
TEST(MetricsTest, ALineReadAgainMovesLinesRereadAndNotLinesTotal) {
  Metrics metrics("1");
  metrics.LineRead("/logs/0.log", 10);
  metrics.LineReread("/logs/0.log", 10);
  metrics.LineReread("/logs/0.log", 12);
  std::string text = metrics.Serialize(0);
  EXPECT_THAT(text, HasSubstr("fingerprintd_lines_total{source=\"/logs/0.log\"} 1\n"));
  EXPECT_THAT(text, HasSubstr("fingerprintd_bytes_total{source=\"/logs/0.log\"} 10\n"));
  EXPECT_THAT(text, HasSubstr("fingerprintd_lines_reread_total{source=\"/logs/0.log\"} 2\n"));
  EXPECT_EQ(metrics.lines(), 1u);
  EXPECT_EQ(metrics.lines_reread(), 2u);
}

TEST(MetricsTest, ASourceNeverReadAgainHasItsRereadSeriesAtZero) {
  Metrics metrics("1");
  metrics.LineRead("tcp:0.0.0.0:5170#0", 10);  // a socket stream never resumes
  EXPECT_THAT(metrics.Serialize(0),
              HasSubstr("fingerprintd_lines_reread_total{source=\"tcp:0.0.0.0:5170#0\"} 0\n"));
}

TEST(MetricsTest, RereadsOfSourcesPastTheCapAreCountedUnderOther) {
  Metrics metrics("1");
  for (size_t i = 0; i < kMaxLabelValues; ++i) metrics.LineRead(std::to_string(i), 1);
  metrics.LineReread("one more", 1);
  EXPECT_THAT(metrics.Serialize(0),
              HasSubstr("fingerprintd_lines_reread_total{source=\"_other\"} 1\n"));
}

TEST(MetricsTest, ARestoreCountsTheBytesLeftToReadAgainAndHandsEachSourceToTheLogOnce) {
  Metrics metrics("1");
  EXPECT_THAT(metrics.Serialize(0), HasSubstr("fingerprintd_restart_reread_bytes_total 0\n"));
  metrics.RereadAtRestore("/logs/0.log", 4096);
  metrics.RereadAtRestore("/logs/1.log", 0);  // resumes where it stopped
  metrics.RereadAtRestore("/logs/2.log", 100);
  EXPECT_THAT(metrics.Serialize(0), HasSubstr("fingerprintd_restart_reread_bytes_total 4196\n"));
  using Rereads = std::vector<std::pair<std::string, uint64_t>>;
  EXPECT_EQ(metrics.TakeRestoreRereads(), (Rereads{{"/logs/0.log", 4096}, {"/logs/2.log", 100}}));
  EXPECT_TRUE(metrics.TakeRestoreRereads().empty());
}

TEST(MetricsTest, TheLagOfATailedFileIsItsLastValueAndGoesAwayWhenTheFileCloses) {
  Metrics metrics("1");
  metrics.SetSourceLags({{"/logs/0.log", 300}, {"/logs/1.log", 0}});
  std::string text = metrics.Serialize(0);
  EXPECT_THAT(text, HasSubstr("fingerprintd_source_lag_bytes{source=\"/logs/0.log\"} 300\n"));
  EXPECT_THAT(text, HasSubstr("fingerprintd_source_lag_bytes{source=\"/logs/1.log\"} 0\n"));
  metrics.SetSourceLags({{"/logs/0.log", 0}});  // 1.log ended
  text = metrics.Serialize(0);
  EXPECT_THAT(text, HasSubstr("fingerprintd_source_lag_bytes{source=\"/logs/0.log\"} 0\n"));
  EXPECT_THAT(text, Not(HasSubstr("/logs/1.log")));
  metrics.SetSourceLags({});
  EXPECT_THAT(metrics.Serialize(0), Not(HasSubstr("fingerprintd_source_lag_bytes{")));
}

TEST(MetricsTest, LagsPastTheCapAreSummedUnderOtherAndTheFirstSourcesKeepTheirSeries) {
  Metrics metrics("1");
  std::vector<std::pair<std::string, uint64_t>> lags;
  for (size_t i = 0; i < kMaxLabelValues; ++i) lags.emplace_back("/logs/" + std::to_string(i), 1);
  metrics.SetSourceLags(lags);
  // Two new files ahead of the others: the cap is full, they go under _other.
  lags.insert(lags.begin(), {{"/new/a", 5}, {"/new/b", 7}});
  metrics.SetSourceLags(lags);
  std::string text = metrics.Serialize(0);
  EXPECT_THAT(text, HasSubstr("fingerprintd_source_lag_bytes{source=\"_other\"} 12\n"));
  EXPECT_THAT(text, HasSubstr("fingerprintd_source_lag_bytes{source=\"/logs/0\"} 1\n"));
  EXPECT_THAT(text, Not(HasSubstr("/new/a")));
}

TEST(MetricsTest, CheckpointAgeCountsFromTheLastSave) {
  Metrics metrics("1");
  EXPECT_THAT(metrics.Serialize(5'000'000), HasSubstr("fingerprintd_checkpoint_age_seconds 0\n"));
  metrics.CheckpointSaved(1'000'000);
  EXPECT_THAT(metrics.Serialize(3'500'000), HasSubstr("fingerprintd_checkpoint_age_seconds 2.5\n"));
}

}  // namespace
}  // namespace fingerprintd::sink
