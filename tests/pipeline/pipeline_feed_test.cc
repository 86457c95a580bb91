// Pipeline::Feed, the one entry for bytes: a source's bytes cut anywhere give
// the incidents, counters and positions the whole log gives, with the fast
// path on or off; an unfinished last line waits for its '\n', for EndLine, for
// the end of the source or, live, for the partial-line timeout; a gap ends
// it; a line over the cap is cut once however it is read.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "fingerprintd/pipeline.h"
#include "testing/counting_events.h"
#include "testing/replay_harness.h"
#include "testing/run_harness.h"

namespace fingerprintd {
namespace {

using testing::CountingEvents;
using ::testing::ElementsAre;

std::string Jsonl(const std::vector<correlate::Incident>& incidents) {
  std::string out;
  for (const auto& incident : incidents) out += correlate::IncidentToJson(incident) + "\n";
  return out;
}

// One log through one Pipeline, handed over in the chunk sizes `cut` gives.
struct FedRun {
  std::string jsonl;
  CountingEvents events;
  std::vector<std::pair<std::string, uint64_t>> lines;  // what the parser got, and where
  SourcePosition next;
};

template <typename Cut>
void FeedLog(const std::string& log, bool buffer_first, Cut&& cut, FedRun* run) {
  correlate::LatestIncidents sink;
  Pipeline::Options options;
  options.buffer_first = buffer_first;
  options.line_observer = [run](const SourceSpec&, std::string_view line, uint64_t offset) {
    run->lines.emplace_back(std::string(line), offset);
  };
  Pipeline pipeline(testing::EmbeddedRules(), options, run->events, sink);
  SourceSpec spec;
  spec.name = "pods/vllm-0/0.log";
  spec.deployment = "d";
  spec.parser.current_year = 2026;
  const Pipeline::SourceId id = pipeline.AddSource(spec);
  for (size_t at = 0; at < log.size();) {
    const size_t n = std::min(log.size() - at, cut());
    pipeline.Feed(id, std::string_view(log).substr(at, n), at);
    at += n;
    pipeline.Advance(0);
  }
  run->next = pipeline.NextPosition(id);
  pipeline.Finish();
  run->jsonl = Jsonl(sink.Sorted());
}

// Bytes cut anywhere (one byte, mid-line, mid-character, whole megabytes)
// give the same lines at the same offsets, the same incidents and the same
// counters as the log fed whole; with the fast path and without.
TEST(PipelineFeedTest, BytesCutAnywhereGiveWhatTheWholeLogGives) {
  for (const char* name :
       {"vllm_tp2_unknown_sf.log", "sglang_tp2_unknown_sf.log", "vllm_tp2_cuda_oom.log"}) {
    SCOPED_TRACE(name);
    const std::string log = testing::run_harness::ReadFile(testing::Golden(name));
    ASSERT_FALSE(log.empty());
    FedRun whole;
    FeedLog(
        log, /*buffer_first=*/false, [&] { return log.size(); }, &whole);
    ASSERT_FALSE(whole.jsonl.empty());
    for (uint32_t seed : {1u, 2u, 3u}) {
      std::mt19937 rng(seed);
      for (bool buffer_first : {false, true}) {
        SCOPED_TRACE("seed " + std::to_string(seed) + (buffer_first ? " fast" : " per line"));
        FedRun cut;
        FeedLog(
            log, buffer_first, [&] { return size_t{1} + rng() % 9000; }, &cut);
        EXPECT_EQ(cut.jsonl, whole.jsonl);
        EXPECT_EQ(cut.lines, whole.lines);
        EXPECT_EQ(cut.next.line, whole.next.line);
        EXPECT_EQ(cut.next.offset, whole.next.offset);
        EXPECT_EQ(cut.events.lines_read, whole.events.lines_read);
        EXPECT_EQ(cut.events.bytes_read, whole.events.bytes_read);
        EXPECT_EQ(cut.events.dropped, whole.events.dropped);
        EXPECT_EQ(cut.events.guessed, whole.events.guessed);
        EXPECT_EQ(cut.events.rule_matches, whole.events.rule_matches);
      }
      FedRun bytewise;
      FeedLog(
          log, true, [] { return size_t{1}; }, &bytewise);
      EXPECT_EQ(bytewise.jsonl, whole.jsonl);
      EXPECT_EQ(bytewise.lines, whole.lines);
    }
  }
}

class OneSource {
 public:
  explicit OneSource(Pipeline::Options options = {}, size_t max_line_bytes = 1 << 20) {
    options.line_observer = [this](const SourceSpec&, std::string_view line, uint64_t offset) {
      lines_.emplace_back(std::string(line), offset);
    };
    pipeline_ = std::make_unique<Pipeline>(testing::EmbeddedRules(), options, events_, sink_);
    SourceSpec spec;
    spec.name = "0.log";
    spec.deployment = "d";
    spec.parser.current_year = 2026;
    spec.parser.max_line_bytes = max_line_bytes;
    id_ = pipeline_->AddSource(spec);
  }
  Pipeline& pipeline() { return *pipeline_; }
  Pipeline::SourceId id() const { return id_; }
  const std::vector<std::pair<std::string, uint64_t>>& lines() const { return lines_; }
  CountingEvents& events() { return events_; }

 private:
  CountingEvents events_;
  correlate::LatestIncidents sink_;
  std::unique_ptr<Pipeline> pipeline_;
  Pipeline::SourceId id_ = 0;
  std::vector<std::pair<std::string, uint64_t>> lines_;
};

using Lines = std::vector<std::pair<std::string, uint64_t>>;

// A writer's last line without its '\n' waits for it: the safe position
// stays at the line's start (a checkpoint re-reads it), and the rest of the
// line joins it.
TEST(PipelineFeedTest, AnUnfinishedLineWaitsForItsNewline) {
  OneSource s;
  s.pipeline().Feed(s.id(), "whole\npart", 0);
  EXPECT_EQ(s.lines(), (Lines{{"whole", 0}}));
  EXPECT_EQ(s.pipeline().SafePosition(s.id()).offset, 6u);
  EXPECT_EQ(s.pipeline().NextPosition(s.id()).offset, 6u);
  s.pipeline().Advance(0);  // replay: no wall clock, no timeout
  s.pipeline().Feed(s.id(), "ial\n", 10);
  EXPECT_EQ(s.lines(), (Lines{{"whole", 0}, {"partial", 6}}));
  EXPECT_EQ(s.pipeline().NextPosition(s.id()).offset, 14u);
}

// Live: a last line never ended is parsed once it waited the partial-line
// timeout of wall time (Advance's clock), not before.
TEST(PipelineFeedTest, LiveAnUnfinishedLineIsParsedAfterThePartialLineTimeout) {
  Pipeline::Options options;
  options.partial_line_timeout_us = 5'000'000;
  OneSource s(options);
  const int64_t wall = 1'796'000'000'000'000;
  s.pipeline().Feed(s.id(), "whole\nnever ends", 0);
  s.pipeline().Advance(wall);
  s.pipeline().Advance(wall + 4'000'000);
  EXPECT_EQ(s.lines(), (Lines{{"whole", 0}}));
  s.pipeline().Advance(wall + 5'000'000);
  EXPECT_EQ(s.lines(), (Lines{{"whole", 0}, {"never ends", 6}}));
  EXPECT_EQ(s.pipeline().NextPosition(s.id()).offset, 17u);
  // What the writer adds later is a line of its own.
  s.pipeline().Feed(s.id(), ", but it did\n", 16);
  EXPECT_EQ(s.lines(), (Lines{{"whole", 0}, {"never ends", 6}, {", but it did", 16}}));
}

// Live: a line cut at the cap is not ended by the timeout, or the rest of it
// would come out as a line of its own: its head waits for its '\n'.
TEST(PipelineFeedTest, LiveALineCutAtTheCapWaitsForItsNewlinePastTheTimeout) {
  Pipeline::Options options;
  options.partial_line_timeout_us = 5'000'000;
  OneSource s(options, 8);
  const int64_t wall = 1'796'000'000'000'000;
  s.pipeline().Feed(s.id(), "0123456789", 0);
  s.pipeline().Advance(wall);
  s.pipeline().Advance(wall + 60'000'000);
  EXPECT_TRUE(s.lines().empty());
  s.pipeline().Feed(s.id(), "abc\nnext\n", 10);
  EXPECT_EQ(s.lines(), (Lines{{"01234567", 0}, {"next", 14}}));
}

// EndLine (the tailer moved to another file), a gap (truncation, a restart at
// a checkpoint) and EndSource each end the unfinished line where its bytes stop.
TEST(PipelineFeedTest, EndLineAGapAndTheEndOfTheSourceEndTheUnfinishedLine) {
  OneSource s;
  s.pipeline().Feed(s.id(), "a1\nrotated away", 0);
  s.pipeline().EndLine(s.id());
  s.pipeline().Feed(s.id(), "b1\n", 15);
  s.pipeline().Feed(s.id(), "b2 cut", 18);
  s.pipeline().Feed(s.id(), "c1\nc2", 100);  // a gap
  s.pipeline().EndSource(s.id());
  EXPECT_EQ(
      s.lines(),
      (Lines{
          {"a1", 0}, {"rotated away", 3}, {"b1", 15}, {"b2 cut", 18}, {"c1", 100}, {"c2", 103}}));
}

// The source's line cap holds for a line however it is cut: its first
// max_line_bytes reach the parser, counted once, and the next line is whole.
TEST(PipelineFeedTest, ALineOverTheCapIsCutOnceWhateverTheReads) {
  OneSource s({}, 8);
  s.pipeline().Feed(s.id(), "0123", 0);
  s.pipeline().Feed(s.id(), "456789abc", 4);
  s.pipeline().Feed(s.id(), "def\nnext\n", 13);
  EXPECT_EQ(s.lines(), (Lines{{"01234567", 0}, {"next", 17}}));
  EXPECT_EQ(s.events().Dropped(DropReason::kLineTooLong), 1u);
}

}  // namespace
}  // namespace fingerprintd
