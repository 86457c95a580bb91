// Sources for replay: reading files (plain or gzip), directories and stdin,
// split into lines and fed through parse -> rules -> correlate, the same path
// the live daemon uses.
//
//   source::ReplayOptions options;
//   options.paths = {"logs/"};
//   source::ReplayStats stats;
//   Status s = source::Replay(options, rule_set, events, incident_sink, &stats);
//
// Threading: Replay runs on the calling thread, plus ReplayOptions::threads - 1
// helpers when asked. No wall clock: the current year for headers without one
// is ReplayOptions::parser.current_year.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "fingerprintd/correlate.h"
#include "fingerprintd/parse.h"
#include "fingerprintd/pipeline_events.h"
#include "fingerprintd/rules.h"
#include "fingerprintd/status.h"

namespace fingerprintd::source {

// One input of a replay: the ordered pieces of one log stream (a file and its
// rotated predecessors) and the deployment it belongs to.
struct ReplaySource {
  std::string name;                 // shown in evidence
  std::vector<std::string> pieces;  // oldest first; "-" = stdin
  std::string deployment;
  // The deployment came from ReplayOptions::deployment_from's captures; false
  // when a pattern was given but captured nothing from this path (the caller
  // says so: the default naming applies).
  bool deployment_from_matched = false;
};

struct ReplayStats;
using LineCallback = std::function<void(std::string_view line)>;
// Running totals and the source being read.
using ProgressCallback = std::function<void(const ReplayStats&, const std::string& source)>;

struct ReplayOptions {
  std::vector<std::string> paths;             // files, directories, "-"
  std::map<std::string, std::string> labels;  // label "deployment" names the deployment
  std::string deployment_from;                // RE2 over the path; capture groups joined by '/'
  parse::ParserOptions parser;
  size_t read_chunk_bytes = 1 << 20;
  // Threads replaying different deployments in parallel (DESIGN.md §8); the
  // incidents are the same for any count. With more than one, `events` must be
  // thread-safe; incidents reach the sink one at a time.
  size_t threads = 1;
  // Called after every chunk read (about 1 MiB) with the running totals and
  // the source being read; the caller decides whether to print (it owns the clock).
  ProgressCallback progress;
  // One shard of an archive too large for one machine (DESIGN.md §8,
  // `replay --shard I/N`): only the sources of deployments with
  // ShardOf(deployment, shard_count) == shard_index are planned, so every
  // deployment lands whole on one shard and the union of the N shards'
  // incidents is the unsharded replay's. shard_count 1 keeps everything.
  uint32_t shard_index = 0;
  uint32_t shard_count = 1;
  // The pipeline's fast path (Pipeline::Options::buffer_first). false: every
  // line takes the per-line path; the incidents are the same
  // (tests/parse/buffer_first_test.cc).
  bool buffer_first = true;
};

struct ReplayStats {
  uint64_t files = 0;
  uint64_t lines = 0;
  uint64_t bytes = 0;  // of log text (a .gz piece's after inflating)
  // Of the pieces as stored (a .gz piece's compressed bytes), read so far:
  // how far a replay is through its input (ReplayInputBytes is the whole).
  uint64_t input_bytes = 0;
  // Of `lines`, those buffer-first replay skipped whole (quiet lines: see
  // Pipeline::quiet_lines_skipped); counted when a deployment is done.
  uint64_t lines_skipped = 0;
};

// Expands paths into sources: directories recursively in a stable order
// (symlinked directories followed, each real directory and file once),
// rotated pieces (`0.log.20260104-143410[.gz]`, `x-json.log.1[.gz]`) joined to
// their live file, deployment from labels / deployment_from / path. A missing
// path, an unreadable directory or subdirectory, or a deployment_from that is
// not RE2 or has no capture group is an error naming it. With a shard
// (ReplayOptions::shard_count > 1) only that shard's sources are returned; a
// shard_index not below shard_count is an InvalidArgumentError.
StatusOr<std::vector<ReplaySource>> PlanReplay(const ReplayOptions& options);

// The bytes of every piece of `plan` as stored (a .gz piece compressed), 0
// for stdin or a piece that cannot be stat'ed: the whole of what
// ReplayStats::input_bytes counts, for a progress display.
uint64_t ReplayInputBytes(const std::vector<ReplaySource>& plan);

// The shard of `deployment` among `shard_count` (at least 1): FNV-1a 64 of
// the name modulo the count, the same on every machine, build and run.
uint32_t ShardOf(std::string_view deployment, uint32_t shard_count);

// Reads a source's pieces in order (gzip or plain; "-" is stdin) and calls
// on_line for every line, capped at max_line_bytes (counted through events),
// the unterminated last one included; on_chunk, if set, after every chunk of
// chunk_bytes. A piece that cannot be opened or read returns NotFoundError or
// DataLossError naming it (a gzip piece cut before its trailer is DataLoss),
// after the lines read so far were delivered.
Status ReadLines(const ReplaySource& source, size_t max_line_bytes, PipelineEvents& events,
                 const LineCallback& on_line, ReplayStats* stats,
                 const ProgressCallback& on_chunk = nullptr, size_t chunk_bytes = 1 << 20);

// A file's modification time in microseconds since the epoch, or 0 when it
// cannot be read: the latest time its lines can carry (ParserOptions::mtime_us).
int64_t FileMtimeMicros(const std::string& path);
// The deployment a file belongs to, for replay and the live daemon alike: the
// `deployment` label; else the captures of `deployment_from` (compiled, may
// be null) over the path, joined by '/' (*matched set when it captured);
// else `<namespace>/<pod>` for the kubelet layout
// `/var/log/pods/<ns>_<pod>_<uid>/...`; else `fallback`.
std::string DeploymentForPath(const std::map<std::string, std::string>& labels,
                              const re2::RE2* deployment_from, const std::string& path,
                              const std::string& fallback, bool* matched = nullptr);

// Replays every source through parse -> rules -> correlate into `sink`.
Status Replay(const ReplayOptions& options, std::shared_ptr<const rules::RuleSet> rules,
              PipelineEvents& events, correlate::IncidentSink& sink, ReplayStats* stats);

// Replays one in-memory log (rule tests, fixtures) as one source of one deployment.
// The text is one buffer for buffer-first matching unless `buffer_first` is false.
void ReplayText(std::string_view text, const std::string& name, const std::string& deployment,
                const parse::ParserOptions& parser, std::shared_ptr<const rules::RuleSet> rules,
                PipelineEvents& events, correlate::IncidentSink& sink, bool buffer_first = true);

}  // namespace fingerprintd::source

namespace fingerprintd::source {

// The result of one embedded rule test (rules/*.yaml `tests:`).
struct RuleTestResult {
  std::string rule;
  std::string test;
  std::string file;
  int line = 0;
  bool passed = false;
  std::string detail;  // what differed, when it failed
};

// Runs every embedded test of every rule: its log replayed alone, as one
// deployment, through the whole pack; the incidents must equal `expect`.
std::vector<RuleTestResult> RunRuleTests(std::shared_ptr<const rules::RuleSet> rules,
                                         int current_year);

// The least a shipped rule is tested with: two positive tests (their `expect`
// names the rule: two shapes of its failure, such as another engine, prefix,
// envelope or a paste) and one negative (its `expect` omits the rule: the
// look-alike that must not become it). For a ready rule: two positive tests
// (a failure, then its line in two shapes: the incident expected `closed:
// recovered`) and one negative (a line before the server is up: nothing
// recovers).
inline constexpr int kMinPositiveRuleTests = 2;
inline constexpr int kMinNegativeRuleTests = 1;

// Lints what the loader accepts but `rules check` rejects: a rule with fewer
// embedded tests than the minimums above. Returns one
// `file:line: rule <id>: tests: <reason>` per minimum a rule falls short of,
// in pack order; empty when every rule has them.
std::vector<std::string> LintRuleTests(const rules::RuleSet& rules);

}  // namespace fingerprintd::source
