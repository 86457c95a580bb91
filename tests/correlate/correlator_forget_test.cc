// Correlator::ForgetSource: a source that will not report again gives its
// id back and, with the last source of its deployment, the deployment's facts
// and workers; an open incident keeps what its evidence names until it closes (gone, once
// its deployment has had no source for the grace).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "fingerprintd/correlate.h"
#include "testing/bounds_fixtures.h"
#include "testing/counting_events.h"

namespace fingerprintd::correlate {
namespace {

constexpr int64_t kSecond = 1'000'000;
constexpr int64_t kT0 = 1'770'000'000LL * kSecond;

using testing::WorkerProcess;

class CorrelatorForgetTest : public ::testing::Test {
 protected:
  CorrelatorForgetTest() : rules_(testing::BoomPack()), correlator_(rules_, events_, sink_) {}

  rules::RuleHit Hit(uint32_t source, int64_t t) {
    rules::RuleHit hit;
    hit.rule = rules_->Find("boom");
    hit.source_id = source;
    hit.worker = WorkerProcess(0, 8);
    hit.confidence = rules::Confidence::kConfirmed;
    hit.first_time_us = hit.time_us = t;
    hit.stages.push_back({source, 7, t, "symptom", "boom"});
    return hit;
  }

  // A pod: its source, a worker, a fact; then it is gone.
  uint32_t Pod(int i) {
    const uint32_t id = correlator_.AddSource("pod-" + std::to_string(i) + ".log",
                                              "deployment-" + std::to_string(i));
    correlator_.OnWorkerSeen(id, WorkerProcess(0, 1000 + i));
    correlator_.OnFact(id, "tensor_parallel_size", "1");
    return id;
  }

  std::shared_ptr<const rules::RuleSet> rules_;
  testing::CountingEvents events_;
  LatestIncidents sink_;
  Correlator correlator_;
};

TEST_F(CorrelatorForgetTest, ForgottenPodsGiveBackTheirIdsAndDeploymentsAt100TimesTheOpenOnes) {
  for (int i = 0; i < 10; ++i) correlator_.ForgetSource(Pod(i));
  const size_t small_state = correlator_.SaveState().size();
  for (int i = 10; i < 1000; ++i) correlator_.ForgetSource(Pod(i));
  EXPECT_EQ(correlator_.deployment_count(), 0u);
  EXPECT_EQ(events_.Evictions(Evicted::kDeployment), 1000u);
  // Ids are reused once the forgotten ones reach the reclaim threshold (64).
  EXPECT_LE(correlator_.source_count(), 64u);
  EXPECT_EQ(correlator_.SaveState().size(), small_state);
}

TEST_F(CorrelatorForgetTest, AForgottenSourceNamedByAnOpenIncidentKeepsItsNameUntilItCloses) {
  const uint32_t pod = Pod(0);
  correlator_.OnHit(Hit(pod, kT0));
  correlator_.ForgetSource(pod);
  // The incident keeps its deployment and the source's name for its evidence.
  EXPECT_EQ(correlator_.deployment_count(), 1u);
  for (int i = 1; i < 200; ++i) correlator_.ForgetSource(Pod(i));
  EXPECT_EQ(correlator_.SourceName(pod), "pod-0.log");
  Correlator restored(rules_, events_, sink_);
  ASSERT_TRUE(restored.RestoreState(correlator_.SaveState()).ok());
  EXPECT_EQ(restored.SaveState(), correlator_.SaveState());
  // Nothing recovered: the incident stays open. With no source left its
  // deployment closes it as gone after the grace (10 min), and then goes.
  correlator_.Advance(kT0 + 121 * kSecond);
  EXPECT_EQ(correlator_.deployment_count(), 1u);
  correlator_.Advance(kT0 + 121 * kSecond + 10 * 60 * kSecond);
  EXPECT_EQ(correlator_.deployment_count(), 0u);
  const auto incidents = sink_.Sorted();
  ASSERT_EQ(incidents.size(), 1u);
  ASSERT_EQ(incidents[0].evidence.size(), 1u);
  EXPECT_EQ(incidents[0].evidence[0].source, "pod-0.log");
  EXPECT_EQ(incidents[0].closed, CloseReason::kGone);
}

TEST_F(CorrelatorForgetTest, HitsAndFactsOfAForgottenSourceAreIgnored) {
  const uint32_t pod = Pod(0);
  const uint32_t other = correlator_.AddSource("other.log", "deployment-0");
  correlator_.ForgetSource(pod);
  correlator_.OnHit(Hit(pod, kT0));
  correlator_.OnFact(pod, "model", "x");
  correlator_.Finish();
  EXPECT_TRUE(sink_.Sorted().empty());
  EXPECT_EQ(correlator_.deployment_count(), 1u);  // `other` still reports for it
  correlator_.ForgetSource(other);
  EXPECT_EQ(correlator_.deployment_count(), 0u);
}

}  // namespace
}  // namespace fingerprintd::correlate
