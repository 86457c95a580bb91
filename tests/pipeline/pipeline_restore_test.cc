// Checkpoints: a restart that restores the saved state and reads every source
// on from its safe position gives exactly the uncut run's incidents, same ids,
// none doubled — wherever the cut falls (inside a CRI partial, an open
// traceback, a symptom waiting for its traceback, between a deployment's
// files).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "fingerprintd/pipeline.h"
#include "testing/counting_events.h"
#include "testing/fixture_streams.h"
#include "testing/pipeline_lines.h"
#include "testing/replay_harness.h"

namespace fingerprintd {
namespace {

namespace fs = std::filesystem;

using Stream = testing::FixtureStream;

// "split:<fixture>": the fixture written one file per process (a generated
// deployment: per-worker files plus one for the rest), else the fixture's files.
std::vector<Stream> SplitPerWorker(const std::vector<Stream>& whole) {
  std::vector<Stream> out(5);
  for (size_t k = 0; k < 5; ++k) out[k].name = "split/" + std::to_string(k) + ".log";
  for (const std::string& line : whole.at(0).lines) {
    size_t target = 4;
    for (size_t k = 0; k < 4; ++k) {
      if (line.find("Worker_TP" + std::to_string(k) + " ") != std::string::npos) target = k;
    }
    Stream& s = out[target];
    s.offsets.push_back(s.lines.empty() ? 0 : s.offsets.back() + s.lines.back().size() + 1);
    s.lines.push_back(line);
  }
  return out;
}

std::vector<Stream> ReadStreams(const std::string& fixture) {
  if (fixture.rfind("split:", 0) == 0) return SplitPerWorker(ReadStreams(fixture.substr(6)));
  return testing::ReadFixtureStreams(testing::Golden(fixture));
}

// Steps of a round-robin schedule: (stream, line index).
std::vector<std::pair<size_t, size_t>> RoundRobin(const std::vector<Stream>& streams) {
  std::vector<std::pair<size_t, size_t>> steps;
  for (size_t line = 0;; ++line) {
    bool any = false;
    for (size_t s = 0; s < streams.size(); ++s) {
      if (line < streams[s].lines.size()) {
        steps.emplace_back(s, line);
        any = true;
      }
    }
    if (!any) return steps;
  }
}

class Session {
 public:
  explicit Session(const std::vector<Stream>& streams)
      : pipeline_(testing::EmbeddedRules(), Pipeline::Options(), events_, sink_) {
    for (const Stream& s : streams) {
      SourceSpec spec;
      spec.name = s.name;
      spec.deployment = "d";
      spec.parser.current_year = 2026;
      ids_.push_back(pipeline_.AddSource(spec));
    }
  }
  void Feed(const std::vector<Stream>& streams, size_t s, size_t line) {
    testing::FeedLine(pipeline_, ids_[s], streams[s].lines[line], streams[s].offsets[line]);
  }
  Pipeline& pipeline() { return pipeline_; }
  Pipeline::SourceId id(size_t s) const { return ids_[s]; }
  correlate::LatestIncidents& sink() { return sink_; }
  const testing::CountingEvents& events() const { return events_; }

 private:
  testing::CountingEvents events_;
  correlate::LatestIncidents sink_;
  Pipeline pipeline_;
  std::vector<Pipeline::SourceId> ids_;
};

std::string Jsonl(const std::vector<correlate::Incident>& incidents) {
  std::string out;
  for (const auto& i : incidents) out += correlate::IncidentToJson(i) + "\n";
  return out;
}

// The incidents of the first stream read whole, without a cut.
std::string UncutIncidents(const std::vector<Stream>& streams) {
  Session uncut(streams);
  for (size_t line = 0; line < streams[0].lines.size(); ++line) uncut.Feed(streams, 0, line);
  uncut.pipeline().Finish();
  return Jsonl(uncut.sink().Sorted());
}

class CutAndRestoreTest : public ::testing::TestWithParam<std::string> {};

TEST_P(CutAndRestoreTest, RestoringAtTheSafePositionAfterAnyLineGivesTheUncutIncidents) {
  const auto streams = ReadStreams(GetParam());
  const auto steps = RoundRobin(streams);
  Session uncut(streams);
  for (const auto& [s, line] : steps) uncut.Feed(streams, s, line);
  uncut.pipeline().Finish();
  const std::string expected = Jsonl(uncut.sink().Sorted());
  ASSERT_FALSE(expected.empty());

  for (size_t cut = 0; cut <= steps.size(); ++cut) {
    Session before(streams);
    for (size_t k = 0; k < cut; ++k) before.Feed(streams, steps[k].first, steps[k].second);
    before.pipeline().Advance(0);
    const std::string state = before.pipeline().SaveState();

    Session after(streams);
    ASSERT_TRUE(after.pipeline().RestoreState(state).ok()) << "cut " << cut;
    for (size_t s = 0; s < streams.size(); ++s) {
      const SourcePosition from = after.pipeline().NextPosition(after.id(s));
      ASSERT_LE(from.line, streams[s].lines.size());
      if (from.line < streams[s].lines.size()) {
        ASSERT_EQ(from.offset, streams[s].offsets[from.line]) << "cut " << cut;
      }
    }
    // Each stream resumes at its own safe line, in the same round-robin order.
    for (const auto& [s, line] : steps) {
      if (line >= after.pipeline().NextPosition(after.id(s)).line) after.Feed(streams, s, line);
    }
    after.pipeline().Finish();
    // What a user sees: every incident's last revision, whichever run wrote it.
    correlate::LatestIncidents merged;
    for (const auto& i : before.sink().Sorted())
      merged.OnIncident(correlate::IncidentChange::kUpdated, i);
    for (const auto& i : after.sink().Sorted())
      merged.OnIncident(correlate::IncidentChange::kUpdated, i);
    ASSERT_EQ(Jsonl(merged.Sorted()), expected)
        << "cut after step " << cut << " of " << steps.size();
  }
}

// A live restart: the state was saved while rank 0's failure waited for
// rank 1, and the restarted daemon advances its wall clock before the first
// line is read again (a shipper that reconnects late, a slow start). Wall
// times are not saved, so a restored source's quiet spell must start at that
// first Advance; counted from the epoch, its event time jumped decades ahead
// and closed the restored incident (window_over) before rank 1 arrived, and
// the incident then made again from the re-read lines had the same id and
// revision, which the JSONL sink wrote only once, so 2/2 was never written.
TEST(LiveRestoreTest, ARestoredSourceQuietUntilItsFirstLineDoesNotCloseTheRestoredIncident) {
  const auto streams = ReadStreams("vllm_tp2_unknown_sf.log");
  const int64_t wall = 1'796'000'000'000'000;  // 2026-11-29, microseconds
  Session before(streams);
  for (size_t line = 0; line < 118; ++line) before.Feed(streams, 0, line);  // rank 0 failed
  // Seconds of quiet on the wall clock: rank 0's traceback is decided and
  // its hit reaches the correlator, which holds the incident at 1/2.
  for (int64_t t = 0; t <= 8'000'000; t += 100'000) before.pipeline().Advance(wall + t);
  const std::string state = before.pipeline().SaveState();

  Session after(streams);
  ASSERT_TRUE(after.pipeline().RestoreState(state).ok());
  after.pipeline().Advance(wall + 20'000'000);
  after.pipeline().Advance(wall + 20'100'000);
  for (const auto& incident : after.sink().Sorted()) {
    EXPECT_EQ(incident.closed, correlate::CloseReason::kNone)
        << correlate::IncidentToJson(incident);
  }
  const size_t from = after.pipeline().NextPosition(after.id(0)).line;
  for (size_t line = from; line < streams[0].lines.size(); ++line) after.Feed(streams, 0, line);
  after.pipeline().Finish();
  const auto incidents = after.sink().Sorted();
  ASSERT_EQ(incidents.size(), 1u) << Jsonl(incidents);
  EXPECT_EQ(incidents[0].affected, 2) << Jsonl(incidents);
}

// Issue 29: a restart re-read up to a rule's maxspan (30 minutes) of log,
// because the stage matches a later symptom may use were not in the
// checkpoint. They are now: a cut after the weights loaded, with nothing
// waiting, reads nothing again, and the failure after the restart is still
// confirmed by the stages seen before it.
TEST(RestartCostTest, ARestartAfterTheEarlierStagesReadsNothingAgainAndStillConfirmsTheSequence) {
  const auto streams = ReadStreams("vllm_tp2_unknown_sf.log");
  const size_t lines = streams[0].lines.size();
  const std::string expected = UncutIncidents(streams);
  ASSERT_NE(expected.find("\"confirmed\""), std::string::npos) << expected;

  // Line 66 is rank 1's "Loading weights took"; the failure starts at 68.
  Session before(streams);
  for (size_t line = 0; line < 66; ++line) before.Feed(streams, 0, line);
  before.pipeline().Advance(0);
  EXPECT_EQ(before.pipeline().SafePosition(before.id(0)),
            before.pipeline().NextPosition(before.id(0)));
  const std::string state = before.pipeline().SaveState();

  Session after(streams);
  ASSERT_TRUE(after.pipeline().RestoreState(state).ok());
  EXPECT_EQ(after.pipeline().NextPosition(after.id(0)).line, 66u);
  EXPECT_EQ(after.events().bytes_to_reread, 0u);
  for (size_t line = 66; line < lines; ++line) after.Feed(streams, 0, line);
  after.pipeline().Finish();
  EXPECT_EQ(Jsonl(after.sink().Sorted()), expected);
  EXPECT_EQ(before.events().lines_read + after.events().lines_read, lines);
  EXPECT_EQ(after.events().lines_reread, 0u);
}

// A restart whose caller does not add a source the state names (the daemon's
// socket streams): the pipeline registers it with the saved name, deployment
// and labels, and the caller completes the rest. Without its year a vLLM
// header was dated 1970 and the incident came out a second time, under
// another id (found by bench/soak.sh); completed, it is the uncut run's.
TEST(RestoredSpecTest, ASourceTheCallerDidNotAddGetsItsParserOptionsFromTheCaller) {
  const auto streams = ReadStreams("vllm_tp2_unknown_sf.log");
  const size_t lines = streams[0].lines.size();
  const std::string expected = UncutIncidents(streams);

  Session before(streams);
  for (size_t line = 0; line < 66; ++line) before.Feed(streams, 0, line);
  before.pipeline().Advance(0);
  const std::string state = before.pipeline().SaveState();

  testing::CountingEvents events;
  correlate::LatestIncidents sink;
  Pipeline after(testing::EmbeddedRules(), Pipeline::Options(), events, sink);
  std::vector<std::string> completed;
  ASSERT_TRUE(after
                  .RestoreState(state,
                                [&](SourceSpec* spec) {
                                  completed.push_back(spec->name + " " + spec->deployment);
                                  spec->parser.current_year = 2026;
                                })
                  .ok());
  EXPECT_EQ(completed, std::vector<std::string>{streams[0].name + " d"});
  SourceSpec again;
  again.name = streams[0].name;
  const Pipeline::SourceId id = after.AddSource(again);  // the restored one's id
  ASSERT_EQ(after.NextPosition(id).line, 66u);
  for (size_t line = 66; line < lines; ++line) {
    testing::FeedLine(after, id, streams[0].lines[line], streams[0].offsets[line]);
  }
  after.Finish();
  EXPECT_EQ(Jsonl(sink.Sorted()), expected);
}

// A cut inside a traceback reads the lines of the waiting failure again
// (from its first line), and counts them as read again, not as read: the
// lines_total of both runs together is the file's line count.
TEST(RestartCostTest, ACutInsideATracebackRereadsItsLinesAndCountsThemOnce) {
  const auto streams = ReadStreams("vllm_tp2_unknown_sf.log");
  const size_t lines = streams[0].lines.size();
  Session before(streams);
  for (size_t line = 0; line < 73; ++line) before.Feed(streams, 0, line);
  before.pipeline().Advance(0);
  const SourcePosition safe = before.pipeline().SafePosition(before.id(0));
  const SourcePosition next = before.pipeline().NextPosition(before.id(0));
  ASSERT_LT(safe.line, next.line);
  EXPECT_GE(safe.line, 67u);  // the symptom "WorkerProc failed to start." (line 68) on
  const std::string state = before.pipeline().SaveState();

  Session after(streams);
  ASSERT_TRUE(after.pipeline().RestoreState(state).ok());
  EXPECT_EQ(after.events().bytes_to_reread, next.offset - safe.offset);
  for (size_t line = safe.line; line < lines; ++line) after.Feed(streams, 0, line);
  after.pipeline().Finish();
  EXPECT_EQ(after.events().lines_reread, next.line - safe.line);
  EXPECT_EQ(after.events().bytes_reread, next.offset - safe.offset);
  EXPECT_EQ(before.events().lines_read + after.events().lines_read, lines);
  const auto incidents = after.sink().Sorted();
  ASSERT_EQ(incidents.size(), 1u) << Jsonl(incidents);
  EXPECT_EQ(incidents[0].affected, 2) << Jsonl(incidents);
}

INSTANTIATE_TEST_SUITE_P(
    Fixtures, CutAndRestoreTest,
    ::testing::Values("vllm_tp2_unknown_sf.log", "vllm_tp4_unknown_sf.log", "vllm_tp2_cuda_oom.log",
                      "vllm_tp2_nccl_timeout.log", "vllm_tp2_unknown_recipe_warmup.log",
                      "vllm_tp4_one_rank_keyerror.log", "sglang_tp2_unknown_sf.log", "docker",
                      "cri", "vllm_tp4_unknown_sf_per_worker", "two_deployments_interleaved",
                      "one_line_paste.log", "split:vllm_tp4_unknown_sf.log"),
    [](const auto& info) {
      std::string name = info.param;
      for (char& c : name) {
        if (!isalnum(static_cast<unsigned char>(c))) c = '_';
      }
      return name;
    });

// Live input never ends: a failure that is the input's last word (the last
// exception with nothing healthy after it) is decided once it is old on the
// wall clock, as replay decides it at the end of the input, under one id.
TEST(LiveTest, TheLastExceptionOfASourceThatWentQuietIsReportedWithoutAnEndOfInput) {
  const auto streams = ReadStreams("wild/paste_ends_in_unknown_exception.log");
  Session replay(streams);
  for (size_t line = 0; line < streams[0].lines.size(); ++line) replay.Feed(streams, 0, line);
  replay.pipeline().Finish();
  const auto expected = replay.sink().Sorted();
  ASSERT_EQ(expected.size(), 1u);

  Session live(streams);
  const int64_t wall = 1'796'000'000'000'000;  // 2026-11-29, microseconds
  live.pipeline().Advance(wall);
  for (size_t line = 0; line < streams[0].lines.size(); ++line) live.Feed(streams, 0, line);
  for (int64_t t = 0; t <= 30'000'000; t += 1'000'000) live.pipeline().Advance(wall + t);
  EXPECT_TRUE(live.sink().Sorted().empty()) << "decided before it was the last word";
  for (int64_t t = 30'000'000; t <= 200'000'000; t += 1'000'000) {
    live.pipeline().Advance(wall + t);
  }
  const auto incidents = live.sink().Sorted();
  ASSERT_EQ(incidents.size(), 1u) << Jsonl(incidents);
  EXPECT_EQ(incidents[0].rule->id, expected[0].rule->id);
  EXPECT_EQ(incidents[0].incident_id, expected[0].incident_id);
}

}  // namespace
}  // namespace fingerprintd

namespace fingerprintd {
namespace {

// A shipper's pod name with byte 0xFF became a source name and a deployment:
// the state is JSON, whose strings must be UTF-8, and saving it killed the
// daemon at its next checkpoint. The pipeline keeps such names escaped, so
// the state saves, restores onto the same source (added again with the same
// raw bytes) and the incident names the deployment readably.
TEST(InvalidUtf8NameTest, ASourceNamedWithByteFFSavesRestoresAndIsReportedEscaped) {
  const auto streams = testing::ReadFixtureStreams(testing::Golden("vllm_tp2_unknown_sf.log"));
  const std::vector<std::string>& lines = streams[0].lines;
  auto make_spec = [] {
    SourceSpec spec;
    spec.name = "tcp:127.0.0.1:0#1 ns/vllm-\xff-0";
    spec.deployment = "vllm-\xff";
    spec.labels = {{"pod", "vllm-\xff-0"}};
    spec.parser.current_year = 2026;
    return spec;
  };
  testing::CountingEvents events;
  correlate::LatestIncidents before_sink;
  Pipeline before(testing::EmbeddedRules(), Pipeline::Options(), events, before_sink);
  Pipeline::SourceId id = before.AddSource(make_spec());
  for (size_t line = 0; line < 66; ++line)
    testing::FeedLine(before, id, lines[line], streams[0].offsets[line]);
  before.Advance(0);
  std::string state;
  ASSERT_NO_THROW(state = before.SaveState());

  correlate::LatestIncidents sink;
  Pipeline after(testing::EmbeddedRules(), Pipeline::Options(), events, sink);
  id = after.AddSource(make_spec());
  ASSERT_TRUE(after.RestoreState(state).ok());
  EXPECT_EQ(after.source_count(), 1u) << "restored onto the source added with the same bytes";
  for (size_t line = after.NextPosition(id).line; line < lines.size(); ++line) {
    testing::FeedLine(after, id, lines[line], streams[0].offsets[line]);
  }
  after.Finish();
  std::vector<correlate::Incident> incidents = sink.Sorted();
  ASSERT_EQ(incidents.size(), 1u);
  EXPECT_EQ(incidents[0].deployment, "vllm-\\xFF");
  EXPECT_EQ(incidents[0].labels.at("pod"), "vllm-\\xFF-0");
  EXPECT_EQ(incidents[0].affected, 2);
  EXPECT_NO_THROW(after.SaveState());
}

}  // namespace
}  // namespace fingerprintd

namespace fingerprintd {
namespace {

// A state whose second source's parser state is damaged: the first source
// had already been restored (its parser, engine and position), against the
// promise that a failed restore changes nothing.
TEST(FailedRestoreTest, ARestoreThatFailsHalfwayChangesNoSource) {
  const auto streams = testing::ReadFixtureStreams(testing::Golden("vllm_tp2_unknown_sf.log"));
  auto add = [&](Pipeline& p, const std::string& name) {
    SourceSpec spec;
    spec.name = name;
    spec.deployment = "d";
    spec.parser.current_year = 2026;
    return p.AddSource(spec);
  };
  testing::CountingEvents events;
  correlate::LatestIncidents sink;
  Pipeline before(testing::EmbeddedRules(), Pipeline::Options(), events, sink);
  const Pipeline::SourceId a = add(before, "a.log"), b = add(before, "b.log");
  for (size_t line = 0; line < 66; ++line) {
    testing::FeedLine(before, a, streams[0].lines[line], streams[0].offsets[line]);
    testing::FeedLine(before, b, streams[0].lines[line], streams[0].offsets[line]);
  }
  before.Advance(0);
  std::string state = before.SaveState();
  // b.log's parser state: its workers' first role made unknown.
  const size_t b_at = state.find("\"name\":\"b.log\"");
  ASSERT_NE(b_at, std::string::npos);
  const size_t role = state.find("\"role\":", state.find("\"parser\"", b_at));
  ASSERT_NE(role, std::string::npos);
  state.replace(role, 7, "\"role\":99,\"x\":");

  correlate::LatestIncidents after_sink;
  Pipeline after(testing::EmbeddedRules(), Pipeline::Options(), events, after_sink);
  const Pipeline::SourceId a2 = add(after, "a.log");
  add(after, "b.log");
  const std::string untouched = after.SaveState();
  Status s = after.RestoreState(state);
  ASSERT_EQ(s.code(), StatusCode::kDataLoss) << s.message();
  EXPECT_EQ(after.SaveState(), untouched);
  EXPECT_EQ(after.NextPosition(a2).line, 0u);
}

}  // namespace
}  // namespace fingerprintd
