// A test per cap of the data path (bench/README.md, "Bounds"): each drives
// its table 100 times past the cap and checks what an operator sees, the
// eviction (or drop) counter, and that the state stays flat: the saved state,
// or what a stage hands on, is the same size at 100x as at 1x.
#include <gtest/gtest.h>

#include <cstdio>

#include "fingerprintd/pipeline.h"
#include "sink/incident_store.h"
#include "testing/bounds_fixtures.h"
#include "testing/collecting_sink.h"
#include "testing/counting_events.h"
#include "testing/incident_builder.h"
#include "testing/pipeline_lines.h"
#include "testing/replay_harness.h"

namespace fingerprintd {
namespace {

using testing::CountingEvents;

constexpr int64_t kSecond = 1'000'000;
constexpr int64_t kT0 = 1'770'000'000LL * kSecond;

using testing::BoomPack;
using testing::DeepGemmTraceback;
using testing::WorkerProcess;

// ---- correlator: open incidents --------------------------------------------

// `hits` hits, each of a deployment of its own (a pod whose source then
// ended), with no event time moving past them: only the cap closes.
size_t OpenIncidentsState(int hits, CountingEvents* events, size_t* closed) {
  auto rules = BoomPack();
  correlate::LatestIncidents sink;
  correlate::Correlator::Options options;
  options.max_open_incidents = 10;
  correlate::Correlator correlator(rules, *events, sink, options);
  for (int i = 0; i < hits; ++i) {
    const uint32_t source = correlator.AddSource("pod-" + std::to_string(1000 + i) + ".log",
                                                 "llama-" + std::to_string(1000 + i));
    rules::RuleHit hit;
    hit.rule = rules->Find("boom");
    hit.source_id = source;
    hit.worker = WorkerProcess(0, 8);
    hit.first_time_us = hit.time_us = kT0 + i * 600 * kSecond;
    hit.stages.push_back({source, static_cast<uint64_t>(1000 + i), hit.time_us, "symptom", "boom"});
    correlator.OnHit(std::move(hit));
    correlator.ForgetSource(source);
  }
  const size_t size = correlator.SaveState().size();
  *closed = 0;
  for (const auto& incident : sink.Sorted()) {
    if (incident.closed == correlate::CloseReason::kEvicted) ++*closed;
  }
  return size;
}

TEST(StateCapsTest, OpenIncidentsPastTheCapCloseTheOldestEvictedAndTheStateStaysFlat) {
  CountingEvents small_events, large_events;
  size_t small_closed = 0, large_closed = 0;
  const size_t small = OpenIncidentsState(10, &small_events, &small_closed);
  const size_t large = OpenIncidentsState(1000, &large_events, &large_closed);
  std::printf("open incidents, cap 10: 10 -> 1000 incidents, saved state %zu -> %zu bytes\n", small,
              large);
  EXPECT_EQ(small_events.Evictions(Evicted::kIncident), 0u);
  EXPECT_EQ(large_events.Evictions(Evicted::kIncident), 990u);
  EXPECT_EQ(large_closed, 990u);     // each closed with reason "evicted", not lost
  EXPECT_LE(large, small + 10 * 8);  // line numbers have one more digit
}

// ---- correlator: workers per deployment ------------------------------------

size_t KnownWorkersState(int processes, CountingEvents* events) {
  correlate::LatestIncidents sink;
  correlate::Correlator::Options options;
  options.max_known_workers = 16;
  correlate::Correlator correlator(BoomPack(), *events, sink, options);
  const uint32_t source = correlator.AddSource("pod.log", "llama");
  // Processes without a rank (pid only): a restart cannot take an old one's place.
  for (int i = 0; i < processes; ++i) {
    WorkerInfo w;
    w.role = ProcessRole::kWorker;
    w.name = "VllmWorkerProcess";
    w.pid = 100000 + i;
    correlator.OnWorkerSeen(source, w);
  }
  return correlator.SaveState().size();
}

TEST(StateCapsTest, WorkerProcessesPastTheCapForgetTheOldestAndTheStateStaysFlat) {
  CountingEvents small_events, large_events;
  const size_t small = KnownWorkersState(16, &small_events);
  const size_t large = KnownWorkersState(1600, &large_events);
  std::printf("known workers, cap 16: 16 -> 1600 processes, saved state %zu -> %zu bytes\n", small,
              large);
  EXPECT_EQ(small_events.Evictions(Evicted::kWorker), 0u);
  EXPECT_EQ(large_events.Evictions(Evicted::kWorker), 1584u);
  EXPECT_EQ(large, small);
}

// ---- pipeline: held events and process streams -----------------------------

// The DeepGEMM traceback of `pid`'s Worker_TP0 at second `second` of 10:00.
std::vector<std::string> WorkerTraceback(int pid, int second) {
  char stamp[32];
  std::snprintf(stamp, sizeof stamp, "03-04 10:%02d:%02d", second / 60 % 60, second % 60);
  return DeepGemmTraceback("(Worker_TP0 pid=" + std::to_string(pid) + ") ERROR " + stamp +
                           " [multiproc_executor.py:743] ");
}

void FeedLines(Pipeline& pipeline, Pipeline::SourceId id, const std::vector<std::string>& lines) {
  for (const std::string& line : lines)
    testing::FeedLine(pipeline, id, line, pipeline.NextPosition(id).offset);
}

// Source a.log repeats a traceback `repeats` times while b.log, of the same
// deployment, stays at an earlier time (replay: it holds the watermark), so
// a.log's hits are held until the cap releases them.
size_t HeldEventsState(int repeats, CountingEvents* events) {
  correlate::LatestIncidents sink;
  Pipeline::Options options;
  options.max_held_events = 10;
  Pipeline pipeline(testing::EmbeddedRules(), options, *events, sink);
  SourceSpec a, b;
  a.name = "a.log";
  b.name = "b.log";
  a.deployment = b.deployment = "d";
  a.parser.current_year = b.parser.current_year = 2026;
  const Pipeline::SourceId ida = pipeline.AddSource(a), idb = pipeline.AddSource(b);
  testing::FeedLine(pipeline, idb, "INFO 03-04 09:59:00 [core.py:61] starting", 0);
  for (int i = 0; i < repeats; ++i) {
    FeedLines(pipeline, ida, WorkerTraceback(8, i % 60));  // one incident: within its window
    pipeline.Advance(0);
  }
  return pipeline.SaveState().size();
}

TEST(StateCapsTest, HeldEventsPastTheCapAreReleasedEarlyCountedAndTheStateStaysFlat) {
  // 11 and 110 times the cap: the hits released early made the same incident.
  CountingEvents small_events, large_events;
  const size_t small = HeldEventsState(110, &small_events);
  const size_t large = HeldEventsState(1100, &large_events);
  std::printf("held events, cap 10: 110 -> 1100 hits held, saved state %zu -> %zu bytes\n", small,
              large);
  EXPECT_GE(small_events.Evictions(Evicted::kHeldEvent), 99u);
  EXPECT_GE(large_events.Evictions(Evicted::kHeldEvent), 1089u);
  EXPECT_LE(large, small + 10 * 64);  // the same ten events, later lines and counts
}

// Every line from a new process: a crash loop with a new pid per line.
size_t ProcessStreamsState(int processes, CountingEvents* events) {
  correlate::LatestIncidents sink;
  Pipeline::Options options;
  options.source_limits = SourceLimits();  // as `limits:` gives it
  options.source_limits->max_process_streams = 8;
  Pipeline pipeline(testing::EmbeddedRules(), options, *events, sink);
  SourceSpec spec;
  spec.name = "crashloop.log";
  spec.deployment = "d";
  spec.parser.current_year = 2026;
  const Pipeline::SourceId id = pipeline.AddSource(spec);
  for (int i = 0; i < processes; ++i) {
    testing::FeedLine(pipeline, id,
                      "(Worker_TP0 pid=" + std::to_string(100000 + i) +
                          ") INFO 03-04 10:00:00 [gpu_model_runner.py:2602] Starting to load model",
                      pipeline.NextPosition(id).offset);
  }
  pipeline.Advance(0);
  return pipeline.SaveState().size();
}

TEST(StateCapsTest, ProcessStreamsPastTheCapRecycleTheQuietestAndTheStateStaysFlat) {
  CountingEvents small_events, large_events;
  const size_t small = ProcessStreamsState(8, &small_events);
  const size_t large = ProcessStreamsState(800, &large_events);
  std::printf("process streams, cap 8: 8 -> 800 processes, saved state %zu -> %zu bytes\n", small,
              large);
  EXPECT_EQ(small_events.Evictions(Evicted::kProcessStream), 0u);
  EXPECT_EQ(large_events.Evictions(Evicted::kProcessStream), 792u);
  EXPECT_LE(large, small + 64);  // positions have more digits
}

// ---- parser: traceback frames and bytes ------------------------------------

Traceback LongTraceback(int frames, size_t max_frames, size_t max_bytes, CountingEvents* events) {
  testing::CollectingSink sink;
  parse::ParserOptions options;
  options.max_traceback_frames = max_frames;
  options.max_traceback_bytes = max_bytes;
  parse::SourceParser parser(0, "deep.log", options, *events, sink);
  parser.Feed("Traceback (most recent call last):");
  for (int i = 0; i < frames; ++i) {
    parser.Feed("  File \"/srv/app/recursive.py\", line " + std::to_string(i) + ", in f" +
                std::to_string(i));
    parser.Feed("    return f(n - 1)");
  }
  parser.Feed("RecursionError: maximum recursion depth exceeded");
  parser.Finish();
  EXPECT_EQ(sink.tracebacks.size(), 1u);
  return sink.tracebacks.empty() ? Traceback() : sink.tracebacks[0];
}

size_t FrameBytes(const Traceback& tb) {
  size_t bytes = 0;
  for (const ExceptionBlock& b : tb.blocks) {
    for (const Frame& f : b.frames) bytes += f.file.size() + f.function.size() + f.code.size();
  }
  return bytes;
}

TEST(StateCapsTest, ATracebackOf100TimesTheFrameCapKeepsTheCapAndCountsTheCutOnce) {
  CountingEvents events;
  const Traceback tb = LongTraceback(1600, 16, 1 << 20, &events);
  EXPECT_EQ(tb.FrameCount(), 16u);
  EXPECT_EQ(tb.dropped_frames, 1584u);
  EXPECT_TRUE(tb.truncated);
  EXPECT_EQ(events.Dropped(DropReason::kTracebackTruncated), 1u);
}

TEST(StateCapsTest, ATracebackOf100TimesTheByteCapKeepsUnderTheCap) {
  CountingEvents events;
  const Traceback tb = LongTraceback(2000, 100'000, 2048, &events);  // ~130 KB of frames
  std::printf("traceback, byte cap 2048: 2000 frames kept as %zu frames, %zu bytes\n",
              tb.FrameCount(), FrameBytes(tb));
  EXPECT_LE(FrameBytes(tb), 2048u);
  EXPECT_TRUE(tb.truncated);
  EXPECT_EQ(events.Dropped(DropReason::kTracebackTruncated), 1u);
}

// ---- sinks: incident history (/incidents, the status page) -----------------

// Incident `inc-<i>` opened and closed, its last hit i seconds after kT0.
void OpenAndClose(sink::IncidentStore& store, int i) {
  correlate::Incident incident =
      testing::IncidentOfRule("cuda-out-of-memory", "inc-" + std::to_string(i), "d");
  incident.last_seen_us = kT0 + i * kSecond;
  store.OnIncident(correlate::IncidentChange::kOpened, incident);
  incident.closed = correlate::CloseReason::kRecovered;
  store.OnIncident(correlate::IncidentChange::kClosed, incident);
}

TEST(StateCapsTest, ClosedIncidentsPastTheHistoryCapAreForgottenCountedAndTheStoreStaysFlat) {
  CountingEvents events;
  constexpr int64_t kDay = 24LL * 3600 * 1'000'000;
  sink::IncidentStore store(events, /*max_recent_closed=*/5, /*max_closed_age_us=*/kDay);
  for (int i = 0; i < 500; ++i) {
    OpenAndClose(store, i);
    ASSERT_LE(store.size(), 5u);
  }
  EXPECT_EQ(events.Evictions(Evicted::kIncidentHistory), 495u);
  // And the age limit: a day after the last one, none is left.
  store.Prune(kT0 + 500 * kSecond + kDay + 1);
  EXPECT_EQ(store.size(), 0u);
  EXPECT_EQ(events.Evictions(Evicted::kIncidentHistory), 500u);
}

// A SIGHUP reload with smaller http.history_* keys: the running store
// shrinks to them at once, and the new age applies at the next prune.
TEST(StateCapsTest, ReloadedHistoryLimitsApplyToTheRunningStore) {
  CountingEvents events;
  sink::IncidentStore store(events, /*max_recent_closed=*/10,
                            /*max_closed_age_us=*/24LL * 3600 * 1'000'000);
  for (int i = 0; i < 10; ++i) OpenAndClose(store, i);
  ASSERT_EQ(store.size(), 10u);
  store.SetLimits(3, 5 * kSecond);
  EXPECT_EQ(store.size(), 3u);  // inc-7, inc-8, inc-9
  EXPECT_EQ(events.Evictions(Evicted::kIncidentHistory), 7u);
  store.Prune(kT0 + 13 * kSecond);  // inc-7 is 6 s old, inc-8 5 s: the new age keeps inc-8
  EXPECT_EQ(store.size(), 2u);
  EXPECT_EQ(events.Evictions(Evicted::kIncidentHistory), 8u);
}

}  // namespace
}  // namespace fingerprintd
