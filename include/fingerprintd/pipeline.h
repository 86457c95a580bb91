// Pipeline: the one place that wires bytes -> lines -> parse -> rules ->
// correlate. Replay, the rule tests, the fuzzer, the file tailer, the socket
// and stdin sources all hand a source's bytes to Pipeline::Feed (a `jsonl`
// record's text, decoded by its source and already a line, is followed by
// EndLine); nothing else builds a SourceParser, RuleEngine or Correlator.
//
//   Pipeline pipeline(rules, options, events, sink);
//   SourceId a = pipeline.AddSource({.name = "pods/a/0.log", .deployment = "llama"});
//   pipeline.Feed(a, bytes_read, /*offset=*/0);  // any bytes, cut anywhere
//   pipeline.Advance(wall_now_us);   // live: on a timer; replay: 0 after each chunk
//   pipeline.Finish();               // end of input: every incident decided and closed
//
// What Feed takes and guarantees. Feed(source, bytes, offset) takes the bytes
// of a source as they were read, starting at byte `offset` of its stream, cut
// anywhere: mid-line, mid-character, one byte or many megabytes at a time.
// It splits them into lines at '\n' (common/line_splitter.h: the only
// splitter), cuts a line longer than the source's
// ParserOptions::max_line_bytes there (counted once as kLineTooLong; the rest
// up to its '\n' is skipped), and keeps the bytes after the last '\n' until
// their line ends: with a later Feed, with EndLine(), EndSource() or Finish(),
// or, live, once Options::partial_line_timeout_us of wall time has passed
// since they arrived (a writer that ends its last line without '\n'). Bytes
// fed at an offset other than the one after the previous bytes (a gap:
// truncation, a checkpoint restart) end the unfinished line first. Every byte
// fed is either part of a line handed on or counted as dropped; nothing is
// read twice. The parser, rules and correlator see exactly the lines a
// per-line split gives, under their own contracts.
//
// The fast path is a tier inside Feed, the way PrefixCache is a tier inside
// the parser (Options::buffer_first, on by default): each buffer is searched
// whole for the rule set's atoms and the quiet-line triggers
// (rules/buffer_matcher.h) before its lines are parsed, so a line the search
// vouches for skips ANSI cleaning, prefix parsing and the engine's literal
// scan, and a quiet line (an INFO-like line whose shape was seen before,
// src/parse/line_templates.h) is skipped whole. It changes no incident, no
// counter a user sees and no checkpoint: the oracle tests
// (tests/parse/buffer_first_test.cc, quiet_line_skip_test.cc) hold it to
// buffer_first = false byte for byte. Large buffers make it pay; callers
// need do nothing else for it.
//
// Same incidents for any interleaving. Lines of one source arrive in order,
// but live input interleaves a deployment's sources as they are written and
// replay reads them one after another. Every event a source's engine produces
// (hit, fact, worker seen) is held per deployment and handed to the correlator
// in one canonical order: by event time, then source name, then the source's
// own sequence. An event is released once every source of the deployment has
// read past its time (the deployment's low watermark), so the correlator sees
// the same sequence whatever the pace of each source, and incident ids (which
// come from the first hit released) are the same in replay, live and after a
// restart. Event times of one source are clamped to be non-decreasing in that
// order, so a source whose clock steps back cannot reorder what was released.
//
// Who holds the watermark back:
//   * replay (Advance(0), no wall clock): every source not yet ended, started
//     or not: a deployment's second file holds its first file's hits until it
//     has been read past their time, or ended;
//   * live (Advance(now)): only sources that received a line within their
//     idle threshold of wall time: Options::caught_up_after_us for a source
//     read as it is written (SourceSpec::read_as_written: a tailed file),
//     Options::idle_source_after_us for the rest (a socket stream, whose
//     shipper may batch and reorder); a silent source does not hold its
//     deployment. An event held longer than Options::max_hold_us (wall time)
//     is released anyway, out of canonical order if need be, so a source with
//     a skewed clock delays an incident by at most that.
//
// Safe positions (checkpoints): SafePosition(source) is the earliest line the
// source's parser and engine still need (a CRI partial, an open traceback, a
// symptom waiting for its traceback, a stage that may still complete a
// sequence within maxspan), or the next line to read when they need none.
// SaveState() holds everything already consumed from the sources (held
// events, correlator, each source's parser context and the symptom lines it
// already reported), so a restart that restores the state and reads every
// source on from its safe position gives exactly the uncut run's incidents:
// re-read lines that had produced a hit before the cut are not counted twice.
//
// Threading: single-threaded. No wall clock: Advance() takes it as an argument.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "fingerprintd/correlate.h"
#include "fingerprintd/parse.h"
#include "fingerprintd/pipeline_events.h"
#include "fingerprintd/rules.h"
#include "fingerprintd/status.h"

namespace fingerprintd {

struct SourceSpec {
  std::string name;        // stable across restarts: checkpoints and evidence use it
  std::string deployment;  // groups sources into one correlation scope
  std::map<std::string, std::string> labels;  // static labels carried by incidents
  parse::ParserOptions parser;
  SourcePosition start;  // where reading starts (a checkpoint's safe position)
  // A source that never resumes (a socket stream): once ended and with none
  // of its events still held, the next Advance forgets it: its state, its
  // name (AddSource with the name again starts a fresh source), and in the
  // correlator its id (reused once no open incident names it) and its
  // deployment once that has no source and no open incident left. So what
  // the pipeline remembers is bounded by the sources open at once, however
  // many come and go (pod churn).
  bool transient = false;
  // Live: whoever feeds the source reads every line as soon as it is written
  // (a file the daemon tails: inotify, or one poll pass over all its files),
  // so once it was silent for a whole Advance interval nothing written to it
  // before is unread, and it stops holding after Options::caught_up_after_us.
  bool read_as_written = false;
};

// Caps on one source's parser state, for every source of a pipeline (the
// config's `limits:` section); each overrides the field of the same meaning
// in SourceSpec::parser.
struct SourceLimits {
  size_t max_process_streams = 4096;         // ParserOptions::max_workers
  size_t max_traceback_frames = 512;         // ParserOptions::max_traceback_frames
  size_t max_traceback_bytes = 512 << 10;    // ParserOptions::max_traceback_bytes
  int64_t traceback_timeout_us = 5'000'000;  // ParserOptions::traceback_timeout_us
};

class Pipeline {
 public:
  using SourceId = uint32_t;

  struct Options {
    rules::RuleEngine::Options engine;
    correlate::Correlator::Options correlator;
    // Live: a source that received no line for this long (wall time) stops
    // holding its deployment's watermark.
    int64_t idle_source_after_us = 1'000'000;
    // The same for a source read as it is written (SourceSpec::read_as_written).
    // Only a grace for a line written just after another source's, with an
    // earlier time (a second-resolution timestamp, a runtime's write delay).
    // It bounds the latency with one file per worker: the ranks' hits share a
    // second, so one waits until the other's file was silent for this long.
    int64_t caught_up_after_us = 200'000;
    // Live: an event waits at most this long (wall time) for slower sources.
    int64_t max_hold_us = 10'000'000;
    // Events held over all deployments; beyond, the oldest are released early
    // (counted as Evicted::kHeldEvent).
    size_t max_held_events = 100'000;
    // When set, every source added takes these caps (daemon: `limits:`).
    std::optional<SourceLimits> source_limits;
    // The fast path inside Feed (see above); false: every line is parsed and
    // scanned on its own (the oracle the fast path is tested against).
    bool buffer_first = true;
    // Live: an unfinished last line is handed on as it is once it waited this
    // long (wall time, measured by Advance) for its '\n'.
    int64_t partial_line_timeout_us = 5'000'000;
    // Called with every line handed to the parser, its source and its
    // stream offset (the daemon's --audit log); empty: nothing is called.
    std::function<void(const SourceSpec& source, std::string_view line, uint64_t offset)>
        line_observer;
  };

  // `rules` is shared with the engines and with every incident made from it.
  // `events` and `sink` must outlive the pipeline.
  Pipeline(std::shared_ptr<const rules::RuleSet> rules, Options options, PipelineEvents& events,
           correlate::IncidentSink& sink);
  ~Pipeline();
  Pipeline(const Pipeline&) = delete;
  Pipeline& operator=(const Pipeline&) = delete;

  // Registers a source. Names are unique: adding a name again returns the
  // existing id (its spec unchanged), so a restored state and a tailer that
  // rediscovers its files agree on ids. A forgotten source's name gives a
  // fresh source, whose id may be one a forgotten source had. The name,
  // deployment and labels are kept with each byte that is not valid UTF-8
  // escaped as `\xHH` (a path or a shipper's pod name may hold any byte):
  // that is how they appear in the state, in incidents and in alerts.
  SourceId AddSource(const SourceSpec& spec);

  // Feeds bytes of the source starting at byte `offset` of its stream (see
  // "What Feed takes and guarantees" above). Never throws.
  void Feed(SourceId source, std::string_view bytes, uint64_t offset);
  // The bytes fed so far end a line: an unfinished last line is handed on as
  // it is (the tailer moved to another file; a socket frame that is a whole
  // line). Nothing to do when the last byte fed was a '\n'.
  void EndLine(SourceId source);
  // The bytes fed after the last '\n' will never end their line (a socket
  // client went away mid-line): they are dropped and counted once as
  // DropReason::kCutAtDisconnect. Nothing to do when the last byte fed was a
  // '\n'.
  void DropUnfinishedLine(SourceId source);

  // The source has no more input (replay: its file was read; live: the file
  // was deleted or the connection closed): ends its unfinished line
  // (EndLine), flushes its CRI/Docker partial records, open
  // tracebacks and pending symptoms, and it stops holding its deployment.
  void EndSource(SourceId source);

  // EndSource, and the source is forgotten as a transient one is (see
  // SourceSpec::transient): for a file deleted for good. Its id must not be
  // used again; AddSource with its name gives a fresh source.
  void ForgetSource(SourceId source);

  // Releases what every deployment's sources have read past, closes incidents
  // whose window ended, flushes tracebacks and pending symptoms that timed
  // out. wall_now_us = 0 means no wall clock (replay): only event time counts.
  void Advance(int64_t wall_now_us);

  // End of input: ends every source, releases everything, decides and closes
  // every incident.
  void Finish();

  // The earliest line this source's state still needs (see above).
  SourcePosition SafePosition(SourceId source) const;
  // The position after the last line handed on: where its next line starts
  // (the bytes of an unfinished line are after it).
  SourcePosition NextPosition(SourceId source) const;
  // Feed, EndSource and the positions of a forgotten source do nothing and
  // return {}.

  // Sources remembered (forgotten transient sources are not), and
  // deployments (those with a source, a held event or an open incident).
  size_t source_count() const;
  size_t deployment_count() const;

  // Serialises everything consumed from the sources (versioned JSON).
  std::string SaveState() const;
  // Completes the spec of a source the state names and the caller did not
  // add: name, deployment, labels and transient are the saved ones; the
  // caller sets what was not saved (its parser options: envelope, line cap,
  // clock).
  using RestoredSpec = std::function<void(SourceSpec* spec)>;
  // Restores a SaveState() blob into a pipeline that has not been fed yet.
  // Sources are matched by name; those absent are registered with their spec
  // completed by `restored_spec` (default parser options when it is empty).
  // Each source then reads on from its safe position at the save:
  // NextPosition() says where. On error (DataLossError naming what was wrong)
  // no incident, event or position changed (sources named in the blob may
  // have been registered).
  Status RestoreState(const std::string& state, const RestoredSpec& restored_spec = {});
  // The open incidents a RestoreState resumed, to `sink` (Correlator::ReportOpen).
  void ReportOpenIncidents(correlate::IncidentSink& sink) const;

  const rules::RuleSet& rules() const;

  // Lines the fast path skipped whole, over all sources: quiet lines the
  // parser and engine would have changed nothing for but counters and times
  // (src/parse/line_templates.h). What is reported does not depend on it;
  // for tests and benchmarks.
  uint64_t quiet_lines_skipped() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace fingerprintd
