// What the buffer-first tests run both ways and compare: replay or one
// Pipeline over the same text, per line (the oracle) and buffer-first, with
// every incident change and counter kept (tests/parse/buffer_first_test.cc,
// tests/parse/quiet_line_skip_test.cc).
#pragma once

#include <gtest/gtest.h>

#include <memory>
#include <random>
#include <string>
#include <vector>

#include "fingerprintd/correlate.h"
#include "fingerprintd/pipeline.h"
#include "fingerprintd/source.h"
#include "parse/buffer_hints.h"
#include "parse/line_templates.h"
#include "rules/buffer_matcher.h"
#include "testing/counting_events.h"
#include "testing/replay_harness.h"

namespace fingerprintd::testing {

// Every change an incident sink sees, in order.
class ChangeLog final : public correlate::IncidentSink {
 public:
  void OnIncident(correlate::IncidentChange change, const correlate::Incident& incident) override {
    text +=
        std::to_string(static_cast<int>(change)) + " " + correlate::IncidentToJson(incident) + "\n";
  }
  std::string text;
};

struct ReplayRun {
  std::string changes;
  CountingEvents events;
  source::ReplayStats stats;
};

inline ReplayRun ReplayWith(const std::vector<std::string>& paths, bool buffer_first,
                            size_t chunk_bytes, size_t max_workers = 4096) {
  source::ReplayOptions options;
  options.parser.max_workers = max_workers;
  options.paths = paths;
  options.parser.current_year = 2026;
  options.read_chunk_bytes = chunk_bytes;
  options.buffer_first = buffer_first;
  ChangeLog sink;
  ReplayRun run;
  Status s = source::Replay(options, EmbeddedRules(), run.events, sink, &run.stats);
  EXPECT_TRUE(s.ok()) << s.message();
  run.changes = sink.text;
  return run;
}

// Every counter the per-line path (`oracle`) and buffer-first replay count alike.
inline void ExpectSameCounters(const CountingEvents& oracle, const CountingEvents& fast,
                               const std::string& what) {
  EXPECT_EQ(oracle.lines_read, fast.lines_read) << what;
  EXPECT_EQ(oracle.bytes_read, fast.bytes_read) << what;
  EXPECT_EQ(oracle.dropped, fast.dropped) << what;
  EXPECT_EQ(oracle.guessed, fast.guessed) << what;
  EXPECT_EQ(oracle.tracebacks, fast.tracebacks) << what;
  EXPECT_EQ(oracle.rule_matches, fast.rule_matches) << what;
  EXPECT_EQ(oracle.incidents_opened, fast.incidents_opened) << what;
  EXPECT_EQ(oracle.incidents_updated, fast.incidents_updated) << what;
  EXPECT_EQ(oracle.evicted, fast.evicted) << what;
}

inline void ExpectSameRuns(const ReplayRun& oracle, const ReplayRun& fast,
                           const std::string& what) {
  EXPECT_EQ(oracle.changes, fast.changes) << what;
  ExpectSameCounters(oracle.events, fast.events, what);
  EXPECT_EQ(oracle.stats.lines, fast.stats.lines) << what;
  EXPECT_EQ(oracle.stats.bytes, fast.stats.bytes) << what;
}

// One CRI record of `text`: a `P` of its first `cut` bytes and an `F` of the
// rest, or a single `F` when cut is 0.
inline void AppendCriRecord(std::string* log, const std::string& stamp, const std::string& stream,
                            const std::string& text, size_t cut) {
  const std::string head = stamp + " " + stream + " ";
  if (cut > 0) *log += head + "P " + text.substr(0, cut) + "\n";
  *log += head + "F " + text.substr(cut) + "\n";
}

struct PipelineRun {
  std::string changes;
  CountingEvents events;
  uint64_t skipped = 0;
};

// `text` through one Pipeline as replay feeds it, the whole text one
// buffer: searched for the atoms and quiet-line triggers (the fast path,
// Pipeline::Options::buffer_first) or not.
inline PipelineRun RunPipeline(const std::string& text, bool buffer_first, size_t max_workers,
                               size_t max_line_bytes,
                               int64_t mtime_us = 1'772'700'000'000'000 /* 2026-03-05 */) {
  std::shared_ptr<const rules::RuleSet> rule_set = EmbeddedRules();
  ChangeLog sink;
  PipelineRun run;
  Pipeline::Options options;
  options.buffer_first = buffer_first;
  Pipeline pipeline(rule_set, options, run.events, sink);
  SourceSpec spec;
  spec.name = "quiet.log";
  spec.deployment = "quiet";
  spec.parser.current_year = 2026;
  spec.parser.mtime_us = mtime_us;  // headers' year from the mtime
  spec.parser.max_workers = max_workers;
  spec.parser.max_line_bytes = max_line_bytes;
  const Pipeline::SourceId id = pipeline.AddSource(spec);
  pipeline.Feed(id, text, 0);
  pipeline.Finish();
  run.skipped = pipeline.quiet_lines_skipped();
  run.changes = sink.text;
  return run;
}

// The per-line run (nothing skipped) and the buffer-first one agree on every
// incident change and counter.
inline void ExpectSamePipelineRuns(const PipelineRun& oracle, const PipelineRun& fast,
                                   const std::string& what) {
  EXPECT_EQ(oracle.changes, fast.changes) << what;
  ExpectSameCounters(oracle.events, fast.events, what);
  EXPECT_EQ(oracle.skipped, 0u) << what;
}

// `line` and its '\n' as a plain log has it, or in a CRI envelope `stamp`.
inline void AppendLine(std::string* log, bool cri, const std::string& stamp,
                       const std::string& stream, const std::string& line) {
  if (cri) {
    AppendCriRecord(log, stamp, stream, line, 0);
  } else {
    *log += line + "\n";
  }
}

// `log` through both paths: the same incidents (at least one) and counters.
// Returns the buffer-first run.
inline PipelineRun ExpectSameIncidentWithSkipping(const std::string& log, const std::string& what) {
  const PipelineRun oracle = RunPipeline(log, false, 4096, 1 << 20);
  PipelineRun fast = RunPipeline(log, true, 4096, 1 << 20);
  ExpectSamePipelineRuns(oracle, fast, what);
  EXPECT_NE(oracle.changes, "") << what;
  return fast;
}

// For seeds 1..`seeds`, the quiet log make(rng, atoms, cri) through the
// per-line path and buffer-first: the same incidents and counters. Every
// fourth seed a stream cap of `small_cap` recycles processes, every third a
// line cap cuts some lines; CRI on even seeds. Returns the lines skipped and
// adds all lines read to *lines.
template <typename MakeLog>
uint64_t SkippedOnSeededQuietLogs(MakeLog&& make, uint32_t seeds, size_t small_cap,
                                  uint64_t* lines) {
  const std::vector<std::string>& atoms = EmbeddedRules()->Atoms();
  uint64_t skipped = 0;
  for (uint32_t seed = 1; seed <= seeds; ++seed) {
    std::mt19937 rng(seed);
    const bool cri = seed % 2 == 0;
    const std::string log = make(rng, atoms, cri);
    const size_t max_workers = seed % 4 == 1 ? small_cap : 4096;
    const size_t max_line_bytes = seed % 3 == 0 ? 300 : 1 << 20;
    const PipelineRun oracle = RunPipeline(log, false, max_workers, max_line_bytes);
    const PipelineRun fast = RunPipeline(log, true, max_workers, max_line_bytes);
    ExpectSamePipelineRuns(oracle, fast,
                           "seed " + std::to_string(seed) + (cri ? " cri" : " plain"));
    skipped += fast.skipped;
    *lines += oracle.events.lines_read;
    if (::testing::Test::HasFailure()) break;
  }
  return skipped;
}

}  // namespace fingerprintd::testing
