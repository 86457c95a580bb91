// The age limit of a CRI `P` / Docker partial record in the pipeline
// (bench/README.md, Bounds): one whose final fragment never comes is handed
// on once it is older than the traceback timeout, counted as
// evictions_total{what="partial_record"}, and stops holding the source's
// safe position back; what a restart re-reads stays flat however many of
// them a stream leaves behind, and a restart at any line gives the uncut
// run's incidents.
#include <gtest/gtest.h>

#include <cstdio>
#include <string>
#include <vector>

#include "fingerprintd/pipeline.h"
#include "testing/bounds_fixtures.h"
#include "testing/counting_events.h"
#include "testing/pipeline_lines.h"

namespace fingerprintd {
namespace {

using testing::CountingEvents;

// CRI line of `stream` at 2026-03-04 10:00:00 + `second`.
std::string Cri(int second, const char* stream, const char* tag, const std::string& text) {
  char stamp[40];
  std::snprintf(stamp, sizeof stamp, "2026-03-04T%02d:%02d:%02dZ", 10 + second / 3600,
                second / 60 % 60, second % 60);
  return std::string(stamp) + " " + stream + " " + tag + " " + text;
}

// A vLLM header at the same time: "ERROR 03-04 10:00:20 [x.py:1] ".
std::string Header(int second, const char* level) {
  char header[64];
  std::snprintf(header, sizeof header, "%s 03-04 %02d:%02d:%02d [x.py:1] ", level,
                10 + second / 3600, second / 60 % 60, second % 60);
  return header;
}

// A pod that, every 20 s, writes a `boom` ERROR on stdout whose newline
// never comes (a `P` without its `F`), then an INFO line on stderr every
// second: `stuck` times.
std::vector<std::string> StuckPartials(int stuck) {
  std::vector<std::string> lines;
  for (int i = 0; i < stuck; ++i) {
    const int t = i * 20;
    lines.push_back(Cri(t, "stdout", "P",
                        Header(t, "ERROR") + "boom " + std::to_string(i) + " and no newline"));
    for (int s = 1; s < 20; ++s) {
      lines.push_back(Cri(t + s, "stderr", "F", Header(t + s, "INFO") + "still here"));
    }
  }
  return lines;
}

struct CriPod {
  explicit CriPod(CountingEvents& events)
      : pipeline(testing::BoomPack(), Pipeline::Options(), events, sink) {
    SourceSpec spec;
    spec.name = "pods/p/0.log";
    spec.deployment = "d";
    spec.parser.envelope = parse::Envelope::kCri;
    id = pipeline.AddSource(spec);
  }
  void Feed(const std::string& line) {
    testing::FeedLine(pipeline, id, line, pipeline.NextPosition(id).offset);
  }

  correlate::LatestIncidents sink;
  Pipeline pipeline;
  Pipeline::SourceId id = 0;
};

// Bytes a restart would read again: from the safe position to the end.
uint64_t ReReadBytes(int stuck, CountingEvents* events) {
  CriPod run(*events);
  for (const std::string& line : StuckPartials(stuck)) run.Feed(line);
  run.pipeline.Advance(0);
  return run.pipeline.NextPosition(run.id).offset - run.pipeline.SafePosition(run.id).offset;
}

TEST(PartialRecordBoundsTest, PartialsWithoutTheirFinalPieceAreHandedOnAndTheSafePositionMovesOn) {
  CountingEvents small_events, large_events;
  const uint64_t small = ReReadBytes(1, &small_events);
  const uint64_t large = ReReadBytes(100, &large_events);
  std::printf("stuck CRI partials, 1 -> 100: bytes a restart re-reads %llu -> %llu\n",
              static_cast<unsigned long long>(small), static_cast<unsigned long long>(large));
  // Each stuck record is handed on about two timeouts (10 s of log time)
  // after it began. What a restart re-reads is the last `boom` line on,
  // which the rule engine keeps for its rule's maxspan: the same at 100x
  // (one more digit). Held until its source ended, the first `P` would make
  // a restart re-read the whole input.
  EXPECT_EQ(small_events.Evictions(Evicted::kPartialRecord), 1u);
  EXPECT_EQ(large_events.Evictions(Evicted::kPartialRecord), 100u);
  EXPECT_LE(large, small + 1);
  // Handed on, the text is matched: every `boom` is a hit of the rule.
  EXPECT_EQ(large_events.rule_matches["boom/symptom"], 100u);
}

TEST(PartialRecordBoundsTest, APartialBeforeTheTimeoutStillHoldsTheSafePosition) {
  CountingEvents events;
  CriPod run(events);
  run.Feed(Cri(0, "stdout", "P", Header(0, "ERROR") + "bo"));
  for (int s = 1; s <= 9; ++s) run.Feed(Cri(s, "stderr", "F", Header(s, "INFO") + "x"));
  run.pipeline.Advance(0);
  EXPECT_EQ(run.pipeline.SafePosition(run.id).line, 0u);
  run.Feed(Cri(9, "stdout", "F", "om"));  // joined: "bo" + "om"
  run.pipeline.Finish();
  EXPECT_EQ(events.Evictions(Evicted::kPartialRecord), 0u);
  EXPECT_EQ(events.rule_matches["boom/symptom"], 1u);
}

std::string Jsonl(const std::vector<correlate::Incident>& incidents) {
  std::string out;
  for (const auto& i : incidents) out += correlate::IncidentToJson(i) + "\n";
  return out;
}

TEST(PartialRecordBoundsTest, ARestartAtTheSafePositionAfterAnyLineGivesTheUncutIncidentsOnce) {
  // Two stuck partials, the second one's `F` arriving after it was handed on.
  std::vector<std::string> lines = StuckPartials(2);
  lines.push_back(Cri(40, "stdout", "F", "late end"));
  for (int s = 41; s < 60; ++s) {
    lines.push_back(Cri(s, "stderr", "F", Header(s, "INFO") + "still here"));
  }
  std::vector<uint64_t> offsets(1, 0);
  for (const std::string& line : lines) offsets.push_back(offsets.back() + line.size() + 1);
  CountingEvents uncut_events;
  CriPod uncut(uncut_events);
  for (const std::string& line : lines) uncut.Feed(line);
  uncut.pipeline.Finish();
  const std::string expected = Jsonl(uncut.sink.Sorted());
  ASSERT_FALSE(expected.empty());
  ASSERT_EQ(uncut_events.Evictions(Evicted::kPartialRecord), 2u);

  for (size_t cut = 0; cut <= lines.size(); ++cut) {
    CountingEvents before_events;
    CriPod before(before_events);
    for (size_t k = 0; k < cut; ++k) before.Feed(lines[k]);
    before.pipeline.Advance(0);
    const std::string state = before.pipeline.SaveState();

    CountingEvents after_events;
    CriPod after(after_events);
    ASSERT_TRUE(after.pipeline.RestoreState(state).ok()) << "cut " << cut;
    const SourcePosition from = after.pipeline.NextPosition(after.id);
    ASSERT_LE(from.line, cut);
    ASSERT_EQ(from.offset, offsets[from.line]) << "cut " << cut;
    for (size_t k = from.line; k < lines.size(); ++k)
      testing::FeedLine(after.pipeline, after.id, lines[k], offsets[k]);
    after.pipeline.Finish();
    EXPECT_EQ(Jsonl(after.sink.Sorted()), expected) << "cut " << cut;
  }
}

}  // namespace
}  // namespace fingerprintd
