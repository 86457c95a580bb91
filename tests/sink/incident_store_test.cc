#include "sink/incident_store.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "testing/counting_events.h"
#include "testing/incident_builder.h"
#include "testing/replay_harness.h"

namespace fingerprintd::sink {
namespace {

constexpr int64_t kHour = 3600LL * 1'000'000;

correlate::Incident IncidentOf(const std::string& id, int64_t last_seen_us) {
  correlate::Incident incident = testing::IncidentOfRule("cuda-out-of-memory", id, "d");
  incident.last_seen_us = last_seen_us;
  return incident;
}

std::vector<std::string> Ids(const IncidentStore& store) {
  std::vector<std::string> out;
  for (const StoredIncident* s : store.Query({})) out.push_back(s->incident.incident_id);
  return out;
}

TEST(IncidentStoreTest, KeepsTheLatestRevisionAndKnowsWhichAreOpen) {
  testing::CountingEvents events;
  IncidentStore store(events, /*max_recent_closed=*/500, /*max_closed_age_us=*/24 * kHour);
  correlate::Incident i = IncidentOf("a", 10);
  i.revision = 1;
  store.OnIncident(correlate::IncidentChange::kOpened, i);
  i.revision = 2;
  store.OnIncident(correlate::IncidentChange::kUpdated, i);
  ASSERT_EQ(store.size(), 1u);
  EXPECT_EQ(store.open_count(), 1u);
  EXPECT_EQ(store.Query({})[0]->incident.revision, 2);
  i.closed = correlate::CloseReason::kRecovered;
  store.OnIncident(correlate::IncidentChange::kClosed, i);
  EXPECT_EQ(store.open_count(), 0u);
  EXPECT_FALSE(store.Query({})[0]->open);
}

TEST(IncidentStoreTest, ClosedIncidentsBeyondTheCapAreForgottenOldestFirstAndCounted) {
  testing::CountingEvents events;
  IncidentStore store(events, /*max_recent_closed=*/3, /*max_closed_age_us=*/24 * kHour);
  store.OnIncident(correlate::IncidentChange::kOpened, IncidentOf("open", 100));
  for (int n = 0; n < 5; ++n) {
    correlate::Incident i = IncidentOf("c" + std::to_string(n), n);
    store.OnIncident(correlate::IncidentChange::kOpened, i);
    store.OnIncident(correlate::IncidentChange::kClosed, i);
  }
  EXPECT_THAT(Ids(store), ::testing::ElementsAre("open", "c4", "c3", "c2"));
  EXPECT_EQ(events.Evictions(Evicted::kIncidentHistory), 2u);
}

TEST(IncidentStoreTest, PruneForgetsClosedIncidentsOlderThanTheAgeLimitButNeverOpenOnes) {
  testing::CountingEvents events;
  IncidentStore store(events, 100, /*max_closed_age_us=*/24 * kHour);
  store.OnIncident(correlate::IncidentChange::kOpened, IncidentOf("old-open", 0));
  correlate::Incident old_closed = IncidentOf("old-closed", 0);
  store.OnIncident(correlate::IncidentChange::kClosed, old_closed);
  correlate::Incident recent = IncidentOf("recent-closed", 20 * kHour);
  store.OnIncident(correlate::IncidentChange::kClosed, recent);
  store.Prune(30 * kHour);
  EXPECT_THAT(Ids(store), ::testing::ElementsAre("old-open", "recent-closed"));
}

}  // namespace
}  // namespace fingerprintd::sink
