// SocketStreams with a real Pipeline: streams inside one connection are
// separate sources of the right deployments, the limits end streams and
// count it, and short connections leave nothing behind in the pipeline.
#include "source/socket_streams.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <re2/re2.h>

#include "testing/counting_events.h"
#include "testing/fixture_streams.h"
#include "testing/replay_harness.h"

namespace fingerprintd::source {
namespace {

using testing::CountingEvents;

constexpr int64_t kSecond = 1'000'000;
constexpr int64_t kNow = 1'772'619'319 * kSecond;

StreamLabels Labels(std::string ns, std::string pod, std::string container = "vllm",
                    std::string deployment = "") {
  StreamLabels l;
  l[static_cast<size_t>(StreamLabel::kNamespace)] = std::move(ns);
  l[static_cast<size_t>(StreamLabel::kPod)] = std::move(pod);
  l[static_cast<size_t>(StreamLabel::kContainer)] = std::move(container);
  l[static_cast<size_t>(StreamLabel::kDeployment)] = std::move(deployment);
  return l;
}

class SocketStreamsTest : public ::testing::Test {
 protected:
  SocketStreamsTest() : pipeline_(testing::EmbeddedRules(), Pipeline::Options(), events_, sink_) {
    options_.source_name = "tcp:127.0.0.1:5170";
    options_.parser.current_year = 2026;
  }
  CountingEvents events_;
  correlate::LatestIncidents sink_;
  Pipeline pipeline_;
  SocketStreamOptions options_;
};

TEST_F(SocketStreamsTest, StreamsAreNamedByConnectionSlotPodContainerAndFile) {
  SocketStreams streams(options_, 3, pipeline_, events_);
  StreamLabels l = Labels("inference", "qwen3-7d9f8c6b5-x2x9k");
  EXPECT_EQ(streams.StreamName(l), "tcp:127.0.0.1:5170#3/inference/qwen3-7d9f8c6b5-x2x9k/vllm");
  l[static_cast<size_t>(StreamLabel::kFile)] = "/var/log/x.log";
  EXPECT_EQ(streams.StreamName(l),
            "tcp:127.0.0.1:5170#3/inference/qwen3-7d9f8c6b5-x2x9k/vllm:/var/log/x.log");
  EXPECT_EQ(streams.StreamName(StreamLabels{}), "tcp:127.0.0.1:5170#3");
}

TEST_F(SocketStreamsTest, DeploymentIsTheFieldThenDeploymentFromThenTheStaticLabel) {
  RE2 from("^(.+)-[0-9a-f]+-[0-9a-z]{5}$");
  options_.deployment_from = &from;
  options_.labels = {{"deployment", "static"}};
  SocketStreams streams(options_, 0, pipeline_, events_);
  EXPECT_EQ(streams.DeploymentOf(Labels("ns", "qwen3-7d9f8c6b5-x2x9k", "vllm", "field")), "field");
  EXPECT_EQ(streams.DeploymentOf(Labels("ns", "qwen3-7d9f8c6b5-x2x9k")), "qwen3");
  EXPECT_EQ(streams.DeploymentOf(Labels("ns", "no_match")), "static");
  options_.labels.clear();
  EXPECT_EQ(streams.DeploymentOf(Labels("ns", "no_match")), "ns/no_match");
  EXPECT_EQ(streams.DeploymentOf(StreamLabels{}), "tcp:127.0.0.1:5170");
}

TEST_F(SocketStreamsTest, TwoDeploymentsInterleavedOnOneConnectionGiveTwoIncidents) {
  // Each file's lines are one pod's; the pods alternate line by line on one
  // connection, as a shipper multiplexes them.
  auto files = testing::ReadFixtureStreams(testing::Golden("two_deployments_interleaved"));
  ASSERT_EQ(files.size(), 2u);
  RE2 from("^(deployment_[ab])-");
  options_.deployment_from = &from;
  SocketStreams streams(options_, 0, pipeline_, events_);
  const StreamLabels pods[2] = {Labels("ns", "deployment_a-5d9f8c6b5-aaaaa"),
                                Labels("ns", "deployment_b-5d9f8c6b5-bbbbb")};
  size_t next[2] = {0, 0};
  while (next[0] < files[0].lines.size() || next[1] < files[1].lines.size()) {
    for (int i = 0; i < 2; ++i) {
      if (next[i] < files[i].lines.size()) streams.Feed(files[i].lines[next[i]++], pods[i], kNow);
    }
  }
  streams.EndAll();
  pipeline_.Finish();
  std::vector<correlate::Incident> incidents = sink_.Sorted();
  ASSERT_EQ(incidents.size(), 2u);
  std::set<std::string> deployments;
  for (const auto& incident : incidents) {
    deployments.insert(incident.deployment);
    EXPECT_EQ(incident.rule->id, "deepgemm-unknown-sf-transformation");
    EXPECT_EQ(incident.affected, 2);
    EXPECT_EQ(incident.expected, 2);
    EXPECT_TRUE(incident.identical);  // tracebacks not mixed
  }
  EXPECT_EQ(deployments, (std::set<std::string>{"deployment_a", "deployment_b"}));
}

TEST_F(SocketStreamsTest, ThousandsOfShortConnectionsLeaveNoSourceBehind) {
  for (int i = 0; i < 5000; ++i) {
    SocketStreams streams(options_, i % 8, pipeline_, events_);
    streams.Feed("INFO 03-04 10:15:19 [core.py:61] hello",
                 Labels("ns", "pod-" + std::to_string(i % 3)), kNow + i);
    streams.EndAll();
    if (i % 100 == 0) pipeline_.Advance(kNow + i);
  }
  pipeline_.Advance(kNow + kSecond);
  EXPECT_EQ(pipeline_.source_count(), 0u);
  EXPECT_EQ(events_.lines_read, 5000u);
}

TEST_F(SocketStreamsTest, AFreshSourceUnderARecycledNameStartsAtLineZero) {
  SocketStreams first(options_, 0, pipeline_, events_);
  first.Feed("one", StreamLabels{}, kNow);
  first.EndAll();
  pipeline_.Advance(kNow);
  SocketStreams second(options_, 0, pipeline_, events_);
  second.Feed("two", StreamLabels{}, kNow);
  EXPECT_EQ(pipeline_.source_count(), 1u);
  second.EndAll();
}

TEST_F(SocketStreamsTest, AStreamStillOpenAtASaveIsEndedAndForgottenAfterTheRestore) {
  // A reload or restart cannot resume a connection: its streams end.
  SocketStreams streams(options_, 0, pipeline_, events_);
  streams.Feed("INFO 03-04 10:15:19 [core.py:61] hello", Labels("ns", "a"), kNow);
  const std::string state = pipeline_.SaveState();
  streams.EndAll();
  correlate::LatestIncidents sink;
  Pipeline restored(testing::EmbeddedRules(), Pipeline::Options(), events_, sink);
  ASSERT_TRUE(restored.RestoreState(state).ok());
  EXPECT_EQ(restored.source_count(), 1u);
  restored.Advance(kNow + kSecond);
  EXPECT_EQ(restored.source_count(), 0u);
}

TEST_F(SocketStreamsTest, StreamsBeyondMaxStreamsEndTheOldestAndCountIt) {
  options_.max_streams = 2;
  SocketStreams streams(options_, 0, pipeline_, events_);
  streams.Feed("a", Labels("ns", "a"), kNow);
  streams.Feed("b", Labels("ns", "b"), kNow + 1);
  streams.Feed("a again", Labels("ns", "a"), kNow + 2);
  streams.Feed("c", Labels("ns", "c"), kNow + 3);  // b is the oldest
  EXPECT_EQ(streams.size(), 2u);
  EXPECT_EQ(events_.Evictions(Evicted::kSocketStream), 1u);
  streams.EndAll();
}

TEST_F(SocketStreamsTest, AStreamWithoutALineForTheIdleTimeoutEnds) {
  options_.idle_timeout_us = 10 * kSecond;
  SocketStreams streams(options_, 0, pipeline_, events_);
  streams.Feed("a", Labels("ns", "a"), kNow);
  streams.Feed("b", Labels("ns", "b"), kNow + 5 * kSecond);
  streams.EndIdle(kNow + 11 * kSecond);
  EXPECT_EQ(streams.size(), 1u);
  streams.Feed("a is back", Labels("ns", "a"), kNow + 12 * kSecond);
  EXPECT_EQ(streams.size(), 2u);
  streams.EndAll();
}

}  // namespace
}  // namespace fingerprintd::source
