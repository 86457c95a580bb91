// Pod churn: every pod of a Kubernetes deployment that restarts comes back
// under a new name, so a daemon fed by a log shipper sees a new stream name,
// and with the `<namespace>/<pod>` default a new deployment, per restart.
// Whatever it remembers of a stream that ended must be forgotten, or memory
// grows with every restart ever seen. These tests drive 100 times more pods
// than stay open at once and check that the saved state (everything the
// pipeline and the correlator hold) does not grow with them.
#include <gtest/gtest.h>

#include <cstdio>

#include "fingerprintd/pipeline.h"
#include "testing/bounds_fixtures.h"
#include "testing/counting_events.h"
#include "testing/pipeline_lines.h"
#include "testing/replay_harness.h"

namespace fingerprintd {
namespace {

using testing::CountingEvents;

constexpr int64_t kMinute = 60'000'000;

// "03-DD HH:MM:SS" for `minutes` after 03-01 00:00.
std::string Stamp(int minutes) {
  char out[32];
  std::snprintf(out, sizeof out, "03-%02d %02d:%02d:00", 1 + minutes / 1440, minutes / 60 % 24,
                minutes % 60);
  return out;
}

// One pod's life at minute `minute`: the engine's start-up (its facts), then
// its worker's DeepGEMM traceback.
std::vector<std::string> PodLines(int minute) {
  const std::string t = Stamp(minute);
  std::vector<std::string> lines = {
      "(EngineCore_DP0 pid=7) INFO " + t +
      " [core.py:93] Initializing a V1 LLM engine (v0.11.2) with config: "
      "model='Qwen/Qwen3-30B-A3B-FP8', quantization=fp8, tensor_parallel_size=1"};
  for (const std::string& line : testing::DeepGemmTraceback("(Worker_TP0 pid=8) ERROR " + t +
                                                            " [multiproc_executor.py:743] ")) {
    lines.push_back(line);
  }
  return lines;
}

struct Churned {
  size_t state_bytes = 0;
  size_t sources = 0;
  size_t deployments = 0;
  uint64_t deployments_forgotten = 0;
  size_t incidents = 0;
};

// `pods` pods one minute apart, each a transient source (a socket stream) of
// its own deployment that ends after its lines; the daemon's Advance every
// minute of wall time.
Churned Churn(int pods) {
  CountingEvents events;
  correlate::LatestIncidents sink;
  Pipeline pipeline(testing::EmbeddedRules(), Pipeline::Options(), events, sink);
  int64_t wall = 1'800'000'000'000'000;
  for (int i = 0; i < pods; ++i) {
    const std::string pod = "inference/qwen3-fp8-7d9f8c6b5-" + std::to_string(100000 + i);
    SourceSpec spec;
    spec.name = "tcp:127.0.0.1:5170#0/" + pod + "/vllm";
    spec.deployment = pod;
    spec.transient = true;
    spec.parser.current_year = 2026;
    const Pipeline::SourceId id = pipeline.AddSource(spec);
    for (const std::string& line : PodLines(i)) {
      testing::FeedLine(pipeline, id, line, pipeline.NextPosition(id).offset);
    }
    pipeline.EndSource(id);
    wall += kMinute;
    pipeline.Advance(wall);
  }
  Churned out;
  out.state_bytes = pipeline.SaveState().size();
  out.sources = pipeline.source_count();
  out.deployments = pipeline.deployment_count();
  out.deployments_forgotten = events.Evictions(Evicted::kDeployment);
  pipeline.Finish();
  out.incidents = sink.Sorted().size();
  return out;
}

TEST(SourceChurnBoundsTest,
     StreamsOfEndedPodsAreForgottenAndTheStateStaysFlatAt100TimesTheOpenOnes) {
  const Churned small = Churn(20);
  const Churned large = Churn(2000);
  std::printf(
      "pods 20 -> 2000: saved state %zu -> %zu bytes, deployments kept %zu -> %zu, "
      "forgotten %llu -> %llu\n",
      small.state_bytes, large.state_bytes, small.deployments, large.deployments,
      static_cast<unsigned long long>(small.deployments_forgotten),
      static_cast<unsigned long long>(large.deployments_forgotten));
  // Every pod's failure was reported: forgetting streams loses no incident.
  EXPECT_EQ(small.incidents, 20u);
  EXPECT_EQ(large.incidents, 2000u);
  // No ended stream is remembered; only deployments whose incident is still
  // open (their sources gone for less than incidents.gone_after, 10 min) are.
  EXPECT_EQ(large.sources, 0u);
  EXPECT_EQ(large.deployments, small.deployments);
  EXPECT_LE(large.deployments, 12u);
  EXPECT_EQ(large.deployments_forgotten, 2000u - large.deployments);
  // 100 times the pods, the same state (pod numbers have the same digits).
  EXPECT_LE(large.state_bytes, small.state_bytes + 64);
}

TEST(SourceChurnBoundsTest, AStreamNameUsedAgainAfterItWasForgottenStartsAFreshSource) {
  CountingEvents events;
  correlate::LatestIncidents sink;
  Pipeline pipeline(testing::EmbeddedRules(), Pipeline::Options(), events, sink);
  SourceSpec spec;
  spec.name = "tcp:127.0.0.1:5170#0/inference/qwen3/vllm";
  spec.deployment = "inference/qwen3";
  spec.transient = true;
  spec.parser.current_year = 2026;
  int64_t wall = 1'800'000'000'000'000;
  for (int restart = 0; restart < 3; ++restart) {
    const Pipeline::SourceId id = pipeline.AddSource(spec);
    EXPECT_EQ(pipeline.NextPosition(id).offset, 0u) << "restart " << restart;
    for (const std::string& line : PodLines(10 * restart)) {
      testing::FeedLine(pipeline, id, line, pipeline.NextPosition(id).offset);
    }
    pipeline.EndSource(id);
    wall += 10 * kMinute;
    pipeline.Advance(wall);
    EXPECT_EQ(pipeline.source_count(), 0u);
  }
  pipeline.Finish();
  // Each restart came back within incidents.gone_after: one incident, three occurrences.
  ASSERT_EQ(sink.Sorted().size(), 1u);
  EXPECT_EQ(sink.Sorted()[0].occurrences, 3);
}

TEST(SourceChurnBoundsTest,
     AfterARestartTheIncidentOfAGonePodStillClosesAsGoneAndItsDeploymentGoes) {
  CountingEvents events;
  correlate::LatestIncidents before, after;
  SourceSpec spec;
  spec.name = "tcp:127.0.0.1:5170#0/inference/qwen3-fp8-1/vllm";
  spec.deployment = "inference/qwen3-fp8-1";
  spec.transient = true;
  spec.parser.current_year = 2026;
  int64_t wall = 1'800'000'000'000'000;
  Pipeline first(testing::EmbeddedRules(), Pipeline::Options(), events, before);
  const Pipeline::SourceId id = first.AddSource(spec);
  for (const std::string& line : PodLines(0))
    testing::FeedLine(first, id, line, first.NextPosition(id).offset);
  first.EndSource(id);
  first.Advance(wall);
  ASSERT_EQ(first.source_count(), 0u);
  ASSERT_EQ(first.deployment_count(), 1u);  // its incident is open
  ASSERT_EQ(before.Sorted().size(), 1u);
  ASSERT_EQ(before.Sorted()[0].closed, correlate::CloseReason::kNone);

  Pipeline second(testing::EmbeddedRules(), Pipeline::Options(), events, after);
  ASSERT_TRUE(second.RestoreState(first.SaveState()).ok());
  EXPECT_EQ(second.deployment_count(), 1u);
  // Its source is gone for good: the incident closes once incidents.gone_after (10 min) passed.
  for (int minute = 1; minute <= 12; ++minute) second.Advance(wall + minute * kMinute);
  ASSERT_EQ(after.Sorted().size(), 1u);
  EXPECT_EQ(after.Sorted()[0].incident_id, before.Sorted()[0].incident_id);
  EXPECT_EQ(after.Sorted()[0].closed, correlate::CloseReason::kGone);
  EXPECT_EQ(second.deployment_count(), 0u);
}

TEST(SourceChurnBoundsTest, ADeletedFileForgottenThroughForgetSourceFreesItsDeployment) {
  CountingEvents events;
  correlate::LatestIncidents sink;
  Pipeline pipeline(testing::EmbeddedRules(), Pipeline::Options(), events, sink);
  int64_t wall = 1'800'000'000'000'000;
  for (int i = 0; i < 200; ++i) {
    SourceSpec spec;
    spec.name = "/var/log/pods/inference_qwen3-" + std::to_string(i) + "_uid/vllm/0.log";
    spec.deployment = "inference/qwen3-" + std::to_string(i);
    spec.parser.current_year = 2026;
    const Pipeline::SourceId id = pipeline.AddSource(spec);
    testing::FeedLine(pipeline, id, PodLines(i).front(), 0);
    pipeline.ForgetSource(id);
    wall += kMinute;
    pipeline.Advance(wall);
  }
  EXPECT_EQ(pipeline.source_count(), 0u);
  EXPECT_EQ(pipeline.deployment_count(), 0u);
  EXPECT_EQ(events.Evictions(Evicted::kDeployment), 200u);
}

}  // namespace
}  // namespace fingerprintd
