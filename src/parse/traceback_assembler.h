// Traceback assembly, one state machine per worker stream.
//
// Ranks interleave line by line in one file, so the assembler keeps a state
// per WorkerInfo (indexed by WorkerInfo::id) and a line only ever touches the
// state of the stream that wrote it. Per stream:
//
//   idle ──"Traceback (most recent call last):" / a frame──► open
//   idle ──a lone exception line (strict shape)──► pending   (one-line paste)
//   open ──frames, code, carets, "...<N lines>..."──► open
//   open ──`Type: message`──► pending
//   pending ──chain separator (blank lines around it)──► open, next block
//   pending ──frame/code after a Ray wrapper (`RayTaskError(...)`, `ray::`)──►
//            open, next block (Ray prints the remote traceback after it)
//   pending ──unheadered continuation (at most 3 lines)──► pending
//   pending ──frames, code after a lone exception line──► pending (a paste
//            that quotes the error first, then its stack: the frames are
//            that exception's)
//   pending ──anything else──► emit complete=true, then the line starts over
//   open ──a foreign line──► emit complete=false, then the line starts over
//
// "Same record": vLLM's logger.exception repeats one header on every line, so
// a traceback opened by a headered line accepts lines with the same header
// text; a raw traceback accepts unheadered lines; a traceback whose header
// appeared only on its first line (SGLang "Scheduler hit an exception:
// Traceback ...") accepts unheadered lines too. Any other line is foreign.
//
// Bystanders: an unheadered line that is not traceback-shaped, arriving in a
// stream whose open traceback repeats its header on every line, is the same
// process's stderr interleaving with stdout; it is passed through as a
// message and neither joins nor ends the traceback.
//
// C++ failure records: libstdc++'s `terminate called after throwing an
// instance of 'T'` opens a record (pending, exception type T) in the stream
// that printed it; its `what():` line is the message, c10's `Exception
// raised from F at FILE:N` and the backtrace that follows (`frame #N: ...`,
// TensorRT-LLM's numbered lines) are its frames, stored outermost first like
// Python's (the raise site last). After a Python exception line the same
// origin and backtrace (c10 appends them to a RuntimeError's message) are
// taken as its lines, without frames, so they neither end the traceback
// early nor become messages of their own.
//
// Multi-line exception messages: after the exception line, up to three lines
// with the same header-ness (same header, or both unheadered) that are not
// indented and have no other traceback shape are appended to the message, but
// only while the previous piece looks cut off or the line cannot start a
// record of its own (parse/message_reading.h: `RuntimeError: Assertion
// error` / `(/path/layout.hpp:60):` / `Unknown SF transformation`). Anything
// else after an exception line ends the traceback, so unrelated prints are
// not swallowed.
//
// Caps: at max_traceback_frames or max_traceback_bytes frames are dropped from
// the middle: a quarter of the frame cap stays at the head (the outermost
// calls: the path, e.g. a warm-up that vetoes a rule) and the newest frames
// are kept (the innermost ones name the failing call; they are printed last).
// The traceback is marked truncated, counted once as
// DropReason::kTracebackTruncated, and Traceback::dropped_frames says how many.
//
// Emission: a pending traceback is emitted when the next line of its stream
// is not a continuation, by Tick() once event time moved past its last line,
// or by Finish(); an open one by a foreign line, by Tick() after
// traceback_timeout_us of event time without a line, or by Finish()
// (complete=false). The lines themselves are returned to the caller, which
// delivers them as records before the traceback is emitted.
//
// Threading: single-threaded, owned by one SourceParser.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "fingerprintd/log_record.h"
#include "fingerprintd/parse.h"
#include "fingerprintd/pipeline_events.h"
#include "fingerprintd/traceback.h"

namespace fingerprintd::parse {

// One line as the assembler sees it (views valid for the call).
struct TracebackInput {
  const WorkerInfo* worker = nullptr;
  std::string_view message;  // after prefixes and header
  bool has_header = false;
  bool warning_header = false;   // `x.py:N: UserWarning: ...`: never an exception line
  bool cpp_what = false;         // libstdc++'s `  what():  text` (message: the text)
  std::string_view header_text;  // the header, compared to tell records apart
  Level level = Level::kUnknown;
  uint64_t line_number = 0;
  uint64_t offset = 0;
  int64_t time_us = 0;
  bool time_read = false;  // LogRecord::time_read
};

struct TracebackOutput {
  LineKind kind = LineKind::kMessage;
  Level level = Level::kUnknown;
};

class TracebackAssembler {
 public:
  TracebackAssembler(uint32_t source_id, const ParserOptions& options, PipelineEvents& events,
                     RecordSink& sink);

  // Classifies one line of `in.worker`'s stream. A traceback of that stream
  // that ends before this line is emitted during the call.
  TracebackOutput Process(const TracebackInput& in);
  // Emits pending tracebacks whose last line is older than now_us, and open
  // ones idle for longer than the timeout.
  void Tick(int64_t now_us);
  // Emits everything still open or pending.
  void Finish();
  // Emits what `worker`'s stream holds and resets it: the parser reuses the
  // stream's slot for another process.
  void Forget(const WorkerInfo* worker);
  // Lowers *pos to the first line of the earliest traceback still held.
  void LowestHeld(SourcePosition* pos) const;
  bool HoldsAny() const { return active_ != 0; }

 private:
  enum class State : uint8_t { kIdle, kOpen, kPending };
  struct Stream {
    State state = State::kIdle;
    bool headered = false;           // opened by a headered line
    bool header_only_first = false;  // no later line repeated the header
    bool exception_headered = false;
    bool ray_continuation = false;  // pending after a Ray wrapper exception
    bool awaiting_code = false;     // last frame has no code line yet
    int blank_run = 0;
    int continuation_lines = 0;
    bool may_continue = false;            // the last message line looked cut off
    bool frames_after_exception = false;  // a paste that quotes the error, then its frames
    bool cpp = false;             // a C++ failure record (opened by the terminate handler's line)
    Level level = Level::kError;  // level of headerless lines in this traceback
    size_t frames = 0;
    size_t bytes = 0;
    std::string header;
    Traceback tb;
  };

  Stream& StreamFor(const WorkerInfo* worker);
  std::vector<Stream*> HeldByFirstLine();
  bool SameRecord(const Stream& s, const TracebackInput& in) const;
  bool IsBystander(const Stream& s, const TracebackInput& in) const;
  bool ProcessOpen(Stream& s, const TracebackInput& in, TracebackOutput* out);
  bool ProcessPending(Stream& s, const TracebackInput& in, TracebackOutput* out);
  TracebackOutput ProcessIdle(Stream& s, const TracebackInput& in);
  bool ProcessCppLine(Stream& s, const TracebackInput& in, TracebackOutput* out);
  void Open(Stream& s, const TracebackInput& in, bool has_header);
  void AddFrame(Stream& s, std::string_view message);
  void SetException(Stream& s, const TracebackInput& in, std::string_view type,
                    std::string_view message, bool ray_wrapper);
  void Touch(Stream& s, const TracebackInput& in);
  bool ChargeBytes(Stream& s, size_t bytes);
  void MarkTruncated(Stream& s);
  void Emit(Stream& s, bool complete);

  const uint32_t source_id_;
  const ParserOptions& options_;
  PipelineEvents& events_;
  RecordSink& sink_;
  std::vector<Stream> streams_;  // indexed by WorkerInfo::id
  size_t active_ = 0;            // streams not idle; lets Tick() return at once
};

}  // namespace fingerprintd::parse
