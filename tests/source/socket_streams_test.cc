// SocketStreams with a real Pipeline: streams inside one connection are
// separate sources of the right deployments, the limits end streams and
// count it, short connections leave nothing behind in the pipeline, and a
// `lines` connection's bytes, cut anywhere, give the lines a naive split does.
#include "source/socket_streams.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <re2/re2.h>

#include <random>
#include <string>
#include <vector>

#include "testing/counting_events.h"
#include "testing/fixture_streams.h"
#include "testing/replay_harness.h"

namespace fingerprintd::source {
namespace {

using testing::CountingEvents;
using ::testing::ElementsAre;

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
  streams.EndAll(false);
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
    streams.EndAll(false);
    if (i % 100 == 0) pipeline_.Advance(kNow + i);
  }
  pipeline_.Advance(kNow + kSecond);
  EXPECT_EQ(pipeline_.source_count(), 0u);
  EXPECT_EQ(events_.lines_read, 5000u);
}

TEST_F(SocketStreamsTest, AFreshSourceUnderARecycledNameStartsAtLineZero) {
  SocketStreams first(options_, 0, pipeline_, events_);
  first.Feed("one", StreamLabels{}, kNow);
  first.EndAll(false);
  pipeline_.Advance(kNow);
  SocketStreams second(options_, 0, pipeline_, events_);
  second.Feed("two", StreamLabels{}, kNow);
  EXPECT_EQ(pipeline_.source_count(), 1u);
  second.EndAll(false);
}

TEST_F(SocketStreamsTest, AStreamStillOpenAtASaveIsEndedAndForgottenAfterTheRestore) {
  // A reload or restart cannot resume a connection: its streams end.
  SocketStreams streams(options_, 0, pipeline_, events_);
  streams.Feed("INFO 03-04 10:15:19 [core.py:61] hello", Labels("ns", "a"), kNow);
  const std::string state = pipeline_.SaveState();
  streams.EndAll(false);
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
  streams.EndAll(false);
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
  streams.EndAll(false);
}

// The oracle for `lines`: split the whole text at '\n', cut each line at the
// cap; a last line without its '\n' is kept only when deliver_partial.
std::vector<std::string> NaiveLines(const std::string& text, size_t cap, bool deliver_partial,
                                    uint64_t* too_long, uint64_t* cut) {
  std::vector<std::string> lines;
  size_t start = 0;
  while (start < text.size()) {
    size_t nl = text.find('\n', start);
    if (nl == std::string::npos && !deliver_partial) {
      ++*cut;
      if (text.size() - start > cap) ++*too_long;  // counted as it arrived
      break;
    }
    std::string line = text.substr(start, nl == std::string::npos ? nl : nl - start);
    if (line.size() > cap) {
      line.resize(cap);
      ++*too_long;
    }
    lines.push_back(line);
    if (nl == std::string::npos) break;
    start = nl + 1;
  }
  return lines;
}

std::string RandomText(std::mt19937& rng) {
  static const char kAlphabet[] = "ab \r\n\n\x00\xff{}";
  std::string text;
  size_t n = rng() % 200;
  for (size_t i = 0; i < n; ++i) {
    if (rng() % 50 == 0) text.append(rng() % 40, 'x');  // now and then a long line
    text.push_back(kAlphabet[rng() % (sizeof(kAlphabet) - 1)]);
  }
  return text;
}

// A `lines` connection: the bytes of each read, as they came, through
// FeedBytes; the lines the pipeline hands its parser (its line_observer).
struct LinesConnection {
  LinesConnection(size_t cap, CountingEvents& events) {
    Pipeline::Options options;
    options.line_observer = [this](const SourceSpec&, std::string_view line, uint64_t) {
      lines.emplace_back(line);
    };
    pipeline = std::make_unique<Pipeline>(testing::EmbeddedRules(), options, events, sink);
    stream_options.source_name = "tcp:127.0.0.1:5170";
    stream_options.parser.current_year = 2026;
    stream_options.parser.max_line_bytes = cap;
    streams = std::make_unique<SocketStreams>(stream_options, 0, *pipeline, events);
  }
  std::vector<std::string> Send(const std::vector<std::string>& reads, bool deliver_partial) {
    for (const std::string& bytes : reads) streams->FeedBytes(bytes, kNow);
    streams->EndAll(deliver_partial);
    return lines;
  }
  correlate::LatestIncidents sink;
  std::unique_ptr<Pipeline> pipeline;
  SocketStreamOptions stream_options;
  std::unique_ptr<SocketStreams> streams;
  std::vector<std::string> lines;
};

TEST(SocketLinesTest, ReadsCutAtEveryByteBoundaryGiveTheNaiveSplit) {
  std::mt19937 rng(20261130);
  for (int round = 0; round < 300; ++round) {
    const std::string text = RandomText(rng);
    const size_t cap = 1 + rng() % 16;
    const bool deliver_partial = rng() % 2 == 0;
    uint64_t too_long = 0, cut = 0;
    const std::vector<std::string> expected =
        NaiveLines(text, cap, deliver_partial, &too_long, &cut);
    for (size_t at = 0; at <= text.size(); ++at) {
      CountingEvents events;
      LinesConnection connection(cap, events);
      ASSERT_EQ(connection.Send({text.substr(0, at), text.substr(at)}, deliver_partial), expected)
          << "round " << round << " cut at " << at;
      EXPECT_EQ(events.Dropped(DropReason::kLineTooLong), too_long);
      EXPECT_EQ(events.Dropped(DropReason::kCutAtDisconnect), cut);
    }
    // And in random pieces, one byte at a time included.
    std::vector<std::string> reads;
    for (size_t at = 0; at < text.size();) {
      size_t n = 1 + rng() % 5;
      reads.push_back(text.substr(at, n));
      at += n;
    }
    CountingEvents events;
    LinesConnection connection(cap, events);
    EXPECT_EQ(connection.Send(reads, deliver_partial), expected) << "round " << round;
  }
}

TEST(SocketLinesTest, ALineCutByTheClientDisconnectingIsCountedAndNotDelivered) {
  CountingEvents events;
  LinesConnection connection(100, events);
  EXPECT_THAT(connection.Send({"one\ntw"}, /*deliver_partial=*/false), ElementsAre("one"));
  EXPECT_EQ(events.Dropped(DropReason::kCutAtDisconnect), 1u);
}

TEST(SocketLinesTest, TheEndOfStdinEndsItsLastLine) {
  CountingEvents events;
  LinesConnection connection(100, events);
  EXPECT_THAT(connection.Send({"one\ntw"}, /*deliver_partial=*/true), ElementsAre("one", "tw"));
  EXPECT_EQ(events.Dropped(DropReason::kCutAtDisconnect), 0u);
}

// A shipper that stalls mid-line: its line is handed on once it waited
// Pipeline::Options::partial_line_timeout_us for its '\n', as a file's is.
TEST(SocketLinesTest, ALineLeftUnfinishedIsHandedOnAfterThePartialLineTimeout) {
  CountingEvents events;
  LinesConnection connection(100, events);
  connection.streams->FeedBytes("one\ntw", kNow);
  connection.pipeline->Advance(kNow);
  EXPECT_THAT(connection.lines, ElementsAre("one"));
  connection.pipeline->Advance(kNow + Pipeline::Options().partial_line_timeout_us);
  EXPECT_THAT(connection.lines, ElementsAre("one", "tw"));
  connection.streams->EndAll(/*deliver_partial=*/false);
  EXPECT_EQ(events.Dropped(DropReason::kCutAtDisconnect), 0u);
}

}  // namespace
}  // namespace fingerprintd::source
