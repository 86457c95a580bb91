// The parse stage: turns the physical lines of ONE source into LogRecords and
// per-worker Tracebacks.
//
//   parse::SourceParser parser(source_id, "pods/a/0.log", options, events, sink);
//   for (std::string_view line : lines) parser.Feed(line);   // without '\n'
//   parser.Finish();                                          // end of input
//
// Pipeline inside: envelope decoding (plain, Kubernetes CRI, Docker json-file,
// journald short, docker-compose; auto-detected from the first lines, or
// fixed) and partial-record joining -> ANSI and trailing '\r' removal ->
// process prefixes (worker identity) -> header (level, time, location) ->
// traceback assembly per worker stream.
//
// Threading: single-threaded; one SourceParser per source. No wall clock: time
// comes from the lines, the envelope, or ParserOptions (injected). Bad input
// never throws or aborts: it is counted through PipelineEvents and skipped or
// kept as text. No allocation per ordinary line once buffers have grown.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "fingerprintd/log_record.h"
#include "fingerprintd/pipeline_events.h"
#include "fingerprintd/status.h"
#include "fingerprintd/traceback.h"

namespace fingerprintd::parse {

enum class Envelope : uint8_t { kAuto = 0, kPlain, kCri, kDocker, kJournald, kCompose };
std::string_view EnvelopeName(Envelope envelope);  // "auto", "plain", "cri", ...
// Accepts the config/CLI names: auto | plain | cri | docker | journald | compose.
bool ParseEnvelopeName(std::string_view name, Envelope* out);

struct ParserOptions {
  Envelope envelope = Envelope::kAuto;
  // Lines (and joined CRI/Docker partials) beyond this are truncated, counted.
  size_t max_line_bytes = 1 << 20;
  size_t max_traceback_frames = 512;
  size_t max_traceback_bytes = 512 << 10;
  // An open traceback idle for longer than this (event time) is flushed by
  // Tick(), and so is a CRI/Docker record joined from partials whose first
  // fragment is older.
  int64_t traceback_timeout_us = 5'000'000;
  // The year of headers without one (vLLM `MM-DD HH:MM:SS`) when the envelope
  // has none: the latest year that does not date the line after the file was
  // last written (mtime_us), or after now_us (stdin) when there is no mtime.
  // Per line, so a log crossing New Year stays monotonic: lines before the
  // Dec -> Jan wrap get the year before. Headers carry local time in an often
  // unknown zone, so "after" allows the widest zone offset (14 h). Microseconds
  // since the epoch; 0 = unknown. Counted as kYearFromMtime / kYearFromClock.
  int64_t mtime_us = 0;
  int64_t now_us = 0;
  // Live: the daemon's wall clock (common/wall_clock.h), microseconds since the
  // epoch; when set, it replaces now_us and current_year, read as lines are
  // parsed, so a daemon running across New Year dates January's lines in the
  // new year (now_us is when the source was registered). Null: replay.
  int64_t (*wall_clock)() = nullptr;
  // Older inputs, used when the two above are 0: the mtime's year (no line
  // after the end of that year, nor after now_us), else current_year as is.
  int32_t mtime_year = 0;
  int32_t current_year = 1970;
  // Headers carry local time without a zone; this offset (seconds east of
  // UTC) converts them when the envelope gives no zone. 0 = assume UTC.
  int32_t local_utc_offset_s = 0;
  // Process streams kept per source. Past it, the stream silent the longest
  // (event time) is forgotten and its slot reused, counted as
  // Evicted::kProcessStream: a crash loop brings new pids at every restart.
  size_t max_workers = 4096;
};

// Receives the parser's output. Views inside LogRecord are valid only for the
// call; Traceback is passed by const reference and may be copied.
class RecordSink {
 public:
  virtual ~RecordSink() = default;
  virtual void OnRecord(const LogRecord& record) = 0;
  // Called when a traceback is complete (exception line), or flushed by a
  // foreign line, Tick() or Finish().
  virtual void OnTraceback(const Traceback& traceback) = 0;
  // The stream is forgotten: its open traceback was emitted just before, and
  // its WorkerInfo (same id, same address) is about to describe another
  // process. Drop whatever is kept for it.
  virtual void OnStreamForgotten(const WorkerInfo& /*worker*/) {}
};

// The process streams of one source. Stable addresses.
class WorkerTable {
 public:
  const WorkerInfo& Get(uint32_t id) const { return *workers_[id]; }
  WorkerInfo* Mutable(uint32_t id) { return workers_[id].get(); }
  size_t size() const { return workers_.size(); }
  // Finds or adds the stream.
  WorkerInfo* Intern(ProcessRole role, std::string_view name, int32_t pid, std::string_view ip);
  // Makes `worker` (same id and address) describe another process.
  static void Reuse(WorkerInfo* worker, ProcessRole role, std::string_view name, int32_t pid,
                    std::string_view ip);
  WorkerInfo* Unprefixed();  // the stream of lines without a process prefix
  // Makes the table exactly `workers`, in order: each keeps its index as
  // its id (a checkpoint's streams, which the engine's state refers to).
  void Assign(const std::vector<WorkerInfo>& workers);

 private:
  std::vector<std::unique_ptr<WorkerInfo>> workers_;
};

class SourceParser {
 public:
  SourceParser(uint32_t source_id, std::string source_name, ParserOptions options,
               PipelineEvents& events, RecordSink& sink);
  ~SourceParser();
  SourceParser(const SourceParser&) = delete;
  SourceParser& operator=(const SourceParser&) = delete;

  // Feeds one physical line without its '\n'. Never throws.
  void Feed(std::string_view line);
  // The next line fed starts at byte `offset` and has `lines_before` lines
  // before it (a restart at a checkpoint, or a gap in the input).
  void Seek(uint64_t offset, uint64_t lines_before);
  // Lines up to `line` (1-based, inclusive) were read before a restart: they
  // are counted as read again (PipelineEvents::LineReread), not as read.
  void CountAsRereadUntil(uint64_t line);
  // What the parser learnt of its source that reading on from a checkpoint
  // after `safe_line` lines cannot learn again: its process streams in id
  // order (names, pids, ranks learnt from earlier lines) and their latest
  // times as they were after that line, so lines read again get the times
  // they got the first time. JSON text, for Pipeline::SaveState.
  std::string SaveState(uint64_t safe_line) const;
  // No SaveState will be asked for before `line`: the time changes up to it
  // are forgotten (kept for at most 65,536 changes anyway).
  void ForgetTimesBefore(uint64_t line);
  // Takes SaveState()'s text into a parser not yet fed: the streams keep
  // their ids. Fails (and changes nothing) on a text it cannot read.
  Status RestoreState(const std::string& state);
  // Lowers *pos to the earliest line still held: a record being joined from
  // CRI/Docker partials, an open or pending traceback. Reading again from
  // there reproduces what is held (the checkpoint's safe position).
  void LowestHeld(SourcePosition* pos) const;
  // Whether LowestHeld would leave *pos as it is (nothing held), without
  // visiting the streams: the pipeline asks after every line it parses.
  bool HoldsNothing() const;
  // Hands on a record being joined from CRI/Docker partials whose first
  // fragment is older than now_us - traceback_timeout_us, unfinished (its
  // stream's next fragment starts a new record; counted as
  // Evicted::kPartialRecord), so a `P` whose `F` never comes holds the safe
  // position back by at most the timeout. Then flushes open tracebacks idle
  // since before now_us - traceback_timeout_us, and emits a finished
  // traceback still waiting for a possible chained or Ray-remote
  // continuation once now_us has moved past its last line.
  void Tick(int64_t now_us);
  // End of input: flushes joined partials and every open traceback.
  void Finish();

  Envelope envelope() const;  // detected (or configured) envelope; kAuto until decided
  const WorkerTable& workers() const;
  const std::string& source_name() const;

  // The pipeline's fast path reaches into the parser through this
  // (src/parse/source_parser_fast_path.h); nothing else uses it.
  struct FastPath;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace fingerprintd::parse
