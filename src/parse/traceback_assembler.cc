#include "parse/traceback_assembler.h"

#include <algorithm>

#include "parse/message_reading.h"
#include "parse/traceback_lines.h"

namespace fingerprintd::parse {
namespace {

constexpr int kMaxBlankRun = 2;           // blank lines allowed before a chain separator
constexpr int kMaxContinuationLines = 3;  // extra lines appended to an exception message

bool IsIndented(std::string_view s) { return !s.empty() && (s[0] == ' ' || s[0] == '\t'); }

Level AtLeast(Level level, Level floor) { return level < floor ? floor : level; }

// An exception line is an ERROR, unless the logger that printed its traceback
// said WARNING: a traceback logged as a warning is one the process survived.
Level ExceptionLevel(Level logged) {
  return logged == Level::kWarning ? Level::kWarning : AtLeast(logged, Level::kError);
}

}  // namespace

TracebackAssembler::TracebackAssembler(uint32_t source_id, const ParserOptions& options,
                                       PipelineEvents& events, RecordSink& sink)
    : source_id_(source_id), options_(options), events_(events), sink_(sink) {}

TracebackAssembler::Stream& TracebackAssembler::StreamFor(const WorkerInfo* worker) {
  if (worker->id >= streams_.size()) streams_.resize(worker->id + 1);
  return streams_[worker->id];
}

bool TracebackAssembler::SameRecord(const Stream& s, const TracebackInput& in) const {
  if (in.has_header) return s.headered && in.header_text == s.header;
  return !s.headered || s.header_only_first;
}

void TracebackAssembler::Touch(Stream& s, const TracebackInput& in) {
  s.tb.last_line = in.line_number;
  if (in.time_us != 0) {
    if (s.tb.first_time_us == 0) s.tb.first_time_us = in.time_us;
    s.tb.last_time_us = in.time_us;
    s.tb.time_read = in.time_read;
  }
  if (in.has_header) s.header_only_first = s.header_only_first && s.tb.first_line == in.line_number;
}

void TracebackAssembler::MarkTruncated(Stream& s) {
  if (!s.tb.truncated) events_.LineDropped(DropReason::kTracebackTruncated);
  s.tb.truncated = true;
}

bool TracebackAssembler::ChargeBytes(Stream& s, size_t bytes) {
  if (s.bytes + bytes > options_.max_traceback_bytes) {
    MarkTruncated(s);
    return false;
  }
  s.bytes += bytes;
  return true;
}

void TracebackAssembler::Open(Stream& s, const TracebackInput& in, bool has_header) {
  s = Stream{};
  s.state = State::kOpen;
  s.headered = in.has_header;
  s.header_only_first = in.has_header;
  s.header.assign(in.header_text.data(), in.header_text.size());
  s.level = in.has_header && in.level != Level::kUnknown ? in.level : Level::kError;
  s.tb.source_id = source_id_;
  s.tb.worker = in.worker;
  s.tb.first_line = in.line_number;
  s.tb.first_offset = in.offset;
  s.tb.blocks.emplace_back().has_header = has_header;
  ++active_;
  Touch(s, in);
}

void TracebackAssembler::AddFrame(Stream& s, std::string_view message) {
  FrameLine line;
  if (!ParseFrameLine(message, &line)) return;
  const size_t cost = line.file.size() + line.function.size() + sizeof(Frame);
  // Keep the newest frames: drop the oldest until the new one fits.
  while (s.frames > 0 && (s.frames >= options_.max_traceback_frames ||
                          s.bytes + cost > options_.max_traceback_bytes)) {
    // Drop from the middle: the innermost frames name the failing call
    // (printed last), the outermost ones the path that led there (a warm-up
    // or profile run that vetoes a rule); a quarter of the cap stays at the head.
    const size_t head = options_.max_traceback_frames / 4;
    size_t skipped = 0;
    for (ExceptionBlock& block : s.tb.blocks) {
      if (block.frames.empty()) continue;
      const size_t keep = skipped + block.frames.size() > head ? head - std::min(head, skipped) : 0;
      skipped += block.frames.size();
      if (keep >= block.frames.size()) continue;
      const Frame& f = block.frames[keep];
      s.bytes -=
          std::min(s.bytes, f.file.size() + f.function.size() + f.code.size() + sizeof(Frame));
      block.frames.erase(block.frames.begin() + static_cast<std::ptrdiff_t>(keep));
      --s.frames;
      ++s.tb.dropped_frames;
      break;
    }
    MarkTruncated(s);
  }
  if (options_.max_traceback_frames == 0 || cost > options_.max_traceback_bytes) {
    MarkTruncated(s);
    s.awaiting_code = false;
    return;
  }
  Frame& frame = s.tb.blocks.back().frames.emplace_back();
  frame.file.assign(line.file.data(), line.file.size());
  frame.line = line.line;
  frame.function.assign(line.function.data(), line.function.size());
  s.bytes += cost;
  ++s.frames;
  s.awaiting_code = true;
}

void TracebackAssembler::SetException(Stream& s, const TracebackInput& in, std::string_view type,
                                      std::string_view message, bool ray_wrapper) {
  ExceptionBlock& block = s.tb.blocks.back();
  block.type.assign(type.data(), type.size());
  size_t room = options_.max_traceback_bytes > s.bytes ? options_.max_traceback_bytes - s.bytes : 0;
  if (message.size() > room) {
    message = message.substr(0, room);
    MarkTruncated(s);
  }
  block.message.assign(message.data(), message.size());
  s.bytes += type.size() + message.size();
  s.state = State::kPending;
  s.exception_headered = in.has_header;
  s.ray_continuation = ray_wrapper;
  s.awaiting_code = false;
  s.blank_run = 0;
  s.continuation_lines = 0;
  s.frames_after_exception = false;
  s.may_continue = LooksCutOff(in.message);
}

bool TracebackAssembler::IsBystander(const Stream& s, const TracebackInput& in) const {
  // vLLM's logger.exception goes to stdout with a header on every line, while
  // the same process's raw stderr output ("Process EngineCore:", a plain
  // print) interleaves with it. Such a line neither belongs to nor ends the
  // headered traceback; traceback-shaped raw lines still do.
  if (in.has_header || !s.headered || s.header_only_first) return false;
  FrameLine frame;
  ExceptionLine exc;
  return !ParseFrameLine(in.message, &frame) && !IsTracebackHeaderLine(in.message) &&
         !IsChainSeparatorLine(in.message) &&
         !ParseExceptionLine(in.message, /*strict=*/true, &exc);
}

bool TracebackAssembler::ProcessOpen(Stream& s, const TracebackInput& in, TracebackOutput* out) {
  std::string_view msg = in.message;
  ExceptionBlock& block = s.tb.blocks.back();
  const bool fresh_block = block.frames.empty() && block.type.empty();
  if (IsTracebackHeaderLine(msg)) {
    if (!fresh_block || block.has_header) return false;  // a new traceback starts
    block.has_header = true;
    out->kind = LineKind::kTracebackHeader;
    return true;
  }
  if (IsChainSeparatorLine(msg)) {
    s.tb.blocks.emplace_back();
    s.awaiting_code = false;
    out->kind = LineKind::kChainSeparator;
    return true;
  }
  const std::string_view trimmed = TrimSpaces(msg);
  if (trimmed.empty()) {
    out->kind = fresh_block ? LineKind::kChainSeparator : LineKind::kCode;
    return true;
  }
  FrameLine frame;
  if (ParseFrameLine(msg, &frame)) {
    AddFrame(s, msg);
    out->kind = LineKind::kFrame;
    return true;
  }
  if (IsIndented(msg)) {
    if (s.awaiting_code && !IsTracebackMarkerLine(trimmed) && !block.frames.empty()) {
      if (ChargeBytes(s, trimmed.size())) block.frames.back().code.assign(trimmed);
      s.awaiting_code = false;
    }
    out->kind = LineKind::kCode;
    return true;
  }
  ExceptionLine exc;
  if (ParseExceptionLine(msg, /*strict=*/false, &exc)) {
    SetException(s, in, exc.type, exc.message, IsRayWrapperException(exc));
    out->kind = LineKind::kException;
    out->level = ExceptionLevel(out->level);
    return true;
  }
  return false;
}

bool TracebackAssembler::ProcessCppLine(Stream& s, const TracebackInput& in, TracebackOutput* out) {
  const std::string_view msg = in.message;
  if (msg.empty()) return false;
  ExceptionBlock& block = s.tb.blocks.back();
  std::string_view what = msg;
  if (s.cpp && block.message.empty() && (in.cpp_what || ParseCppWhatLine(msg, &what))) {
    if (ChargeBytes(s, what.size())) block.message.assign(what.data(), what.size());
    s.may_continue = LooksCutOff(what);
    s.continuation_lines = 0;
    out->kind = LineKind::kException;
    out->level = ExceptionLevel(out->level);
    return true;
  }
  FrameLine frame;
  if (!ParseCppRaisedFromLine(msg, &frame) && !ParseCppFrameLine(msg, &frame)) return false;
  if (s.cpp && s.frames < options_.max_traceback_frames) {
    const size_t cost = frame.file.size() + frame.function.size() + sizeof(Frame);
    if (ChargeBytes(s, cost)) {
      Frame f;
      f.file.assign(frame.file.data(), frame.file.size());
      f.line = frame.line;
      f.function.assign(frame.function.data(), frame.function.size());
      // Printed innermost first: each goes before the ones already read.
      block.frames.insert(block.frames.begin(), std::move(f));
      ++s.frames;
    }
  } else if (s.cpp) {
    MarkTruncated(s);
  }
  s.may_continue = false;
  s.continuation_lines = kMaxContinuationLines;  // the message is over
  out->kind = s.cpp ? LineKind::kFrame : LineKind::kCode;
  return true;
}

bool TracebackAssembler::ProcessPending(Stream& s, const TracebackInput& in, TracebackOutput* out) {
  std::string_view msg = in.message;
  if (in.has_header == s.exception_headered && ProcessCppLine(s, in, out)) return true;
  if (IsChainSeparatorLine(msg)) {
    s.tb.blocks.emplace_back();
    s.state = State::kOpen;
    out->kind = LineKind::kChainSeparator;
    return true;
  }
  const std::string_view trimmed = TrimSpaces(msg);
  if (trimmed.empty()) {
    if (s.blank_run >= kMaxBlankRun) return false;
    ++s.blank_run;
    out->kind = LineKind::kChainSeparator;
    return true;
  }
  if (s.blank_run > 0) return false;
  FrameLine frame;
  const bool is_frame = ParseFrameLine(msg, &frame);
  if (s.ray_continuation) {
    // The remote worker's traceback follows the wrapper line: its frames (and
    // the caret lines Ray leaves before them) belong to the same Traceback.
    if (is_frame || IsTracebackHeaderLine(msg)) {
      s.tb.blocks.emplace_back().has_header = !is_frame;
      s.state = State::kOpen;
      s.ray_continuation = false;
      if (is_frame) AddFrame(s, msg);
      out->kind = is_frame ? LineKind::kFrame : LineKind::kTracebackHeader;
      return true;
    }
    if (IsIndented(msg)) {
      out->kind = LineKind::kCode;
      return true;
    }
  }
  // Python prints frames before the exception; a person pasting the error
  // first and its stack after it puts them after a lone exception line.
  if (is_frame && !s.frames_after_exception && in.has_header == s.exception_headered &&
      s.tb.blocks.size() == 1 && s.tb.blocks[0].frames.empty() && !s.tb.blocks[0].has_header) {
    s.frames_after_exception = true;
  }
  if (s.frames_after_exception && in.has_header == s.exception_headered &&
      (is_frame || IsIndented(msg))) {
    if (is_frame) {
      AddFrame(s, msg);
      out->kind = LineKind::kFrame;
    } else {
      out->kind = LineKind::kCode;
    }
    return true;
  }
  if (is_frame || IsIndented(msg) || IsTracebackHeaderLine(msg)) return false;
  if (!(s.may_continue || CannotStartRecord(msg)) ||
      s.continuation_lines >= kMaxContinuationLines || in.has_header != s.exception_headered) {
    return false;
  }
  ExceptionLine exc;
  if (ParseExceptionLine(msg, /*strict=*/true, &exc)) return false;
  // A wrapped exception message ("RuntimeError: dispatch_scaled_mm," then the
  // path on the next line; "RuntimeError: Assertion error" then
  // "(/path/layout.hpp:60):" then the text): parse/message_reading.h.
  std::string& message = s.tb.blocks.back().message;
  if (ChargeBytes(s, msg.size() + 1)) {
    message.push_back('\n');
    message.append(msg.data(), msg.size());
  }
  ++s.continuation_lines;
  s.may_continue = LooksCutOff(msg);
  out->kind = LineKind::kException;
  out->level = ExceptionLevel(out->level);
  return true;
}

TracebackOutput TracebackAssembler::ProcessIdle(Stream& s, const TracebackInput& in) {
  TracebackOutput out;
  out.level = in.level;
  std::string_view msg = in.message;
  if (msg.empty()) return out;
  const char c = msg[0];
  // First-byte filter: traceback lines start with 'T', ' ' (frames), or an
  // identifier character (exception lines); most messages are rejected here
  // or by the cheap checks inside the recognisers.
  if (c == ' ' || c == 'F') {
    FrameLine frame;
    if (ParseFrameLine(msg, &frame)) {
      Open(s, in, /*has_header=*/false);
      AddFrame(s, msg);
      out.kind = LineKind::kFrame;
      out.level = in.has_header ? in.level : s.level;
      return out;
    }
  }
  if (IsTracebackHeaderLine(msg)) {
    Open(s, in, /*has_header=*/true);
    out.kind = LineKind::kTracebackHeader;
    out.level = in.has_header ? in.level : s.level;
    return out;
  }
  std::string_view cpp_type;
  if (c == 't' && ParseCppTerminateLine(msg, &cpp_type)) {
    Open(s, in, /*has_header=*/false);
    SetException(s, in, cpp_type, {}, /*ray_wrapper=*/false);
    s.cpp = true;
    s.may_continue = false;
    out.kind = LineKind::kException;
    out.level = ExceptionLevel(in.level);
    return out;
  }
  ExceptionLine exc;
  if (!in.warning_header && c != ' ' && ParseExceptionLine(msg, /*strict=*/true, &exc)) {
    Open(s, in, /*has_header=*/false);
    SetException(s, in, exc.type, exc.message, IsRayWrapperException(exc));
    out.kind = LineKind::kException;
    const bool warning = exc.type.size() >= 7 && exc.type.substr(exc.type.size() - 7) == "Warning";
    out.level = warning ? AtLeast(in.level, Level::kWarning) : ExceptionLevel(in.level);
  }
  return out;
}

TracebackOutput TracebackAssembler::Process(const TracebackInput& in) {
  Stream& s = StreamFor(in.worker);
  if (s.state != State::kIdle) {
    if (IsBystander(s, in)) return TracebackOutput{LineKind::kMessage, in.level};
    TracebackOutput out;
    out.level = in.has_header ? in.level : s.level;
    bool handled = false;
    if (in.cpp_what && s.cpp) {
      // The what() line reads as a header of its own (parse/header.h).
      handled = s.state == State::kPending && ProcessCppLine(s, in, &out);
    } else if (SameRecord(s, in)) {
      handled = s.state == State::kPending ? ProcessPending(s, in, &out) : ProcessOpen(s, in, &out);
    }
    if (handled) {
      Touch(s, in);
      return out;
    }
    Emit(s, s.state == State::kPending);
  }
  return ProcessIdle(s, in);
}

void TracebackAssembler::Emit(Stream& s, bool complete) {
  s.tb.complete = complete;
  sink_.OnTraceback(s.tb);
  events_.TracebackAssembled();
  s = Stream{};
  --active_;
}

// Held tracebacks in the order of their first line, not of their streams'
// ids (the order processes were first seen), so that they come out in the same
// order however far back the input was read.
std::vector<TracebackAssembler::Stream*> TracebackAssembler::HeldByFirstLine() {
  std::vector<Stream*> held;
  for (Stream& s : streams_) {
    if (s.state != State::kIdle) held.push_back(&s);
  }
  std::sort(held.begin(), held.end(),
            [](const Stream* a, const Stream* b) { return a->tb.first_line < b->tb.first_line; });
  return held;
}

void TracebackAssembler::Tick(int64_t now_us) {
  if (active_ == 0) return;
  for (Stream* held : HeldByFirstLine()) {
    Stream& s = *held;
    if (s.state == State::kPending && now_us > s.tb.last_time_us) {
      Emit(s, true);
    } else if (s.state == State::kOpen &&
               s.tb.last_time_us < now_us - options_.traceback_timeout_us) {
      Emit(s, false);
    }
  }
}

void TracebackAssembler::Forget(const WorkerInfo* worker) {
  if (worker->id >= streams_.size()) return;
  Stream& s = streams_[worker->id];
  if (s.state != State::kIdle) Emit(s, s.state == State::kPending);
}

void TracebackAssembler::LowestHeld(SourcePosition* pos) const {
  if (active_ == 0) return;
  for (const Stream& s : streams_) {
    if (s.state != State::kIdle) pos->LowerTo({s.tb.first_offset, s.tb.first_line - 1});
  }
}

void TracebackAssembler::Finish() {
  if (active_ == 0) return;
  for (Stream* s : HeldByFirstLine()) Emit(*s, s->state == State::kPending);
}

}  // namespace fingerprintd::parse
