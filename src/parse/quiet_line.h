// Quiet lines: the lines buffer-first replay may skip whole (issue 15).
//
//   parse::LineShape shape;
//   if (parse::LearnLineShape(content, record, &shape, &scratch)) ...  // after the parser made
//   `record` if (parse::HasLineShape(next_content, shape)) ...                  // a later line,
//   unparsed
//
// Nearly every line of a vLLM log is an INFO message of a process whose last
// lines looked the same: the same raw prefix chain (ANSI included), the same
// level and the same second. For such a line the parser and the engine change
// nothing but counters and times. A LineShape, learnt from a line the parser
// did process, says which lines those are from their bytes alone: a line L
// whose content starts with the shape's raw head (prefix chain and header up
// to the end of its time) and goes on with printable ASCII only, and which
// holds none of the rule set's atoms nor any of QuietLineTriggers(), is
// parsed into a record with the shape's worker, level and header time, kind
// kMessage, only its location and message differing. Step by step, in the
// order of SourceParser::Impl::Process:
//
// - CleanLine(L) = CleanLine(head) + rest: every escape sequence of the head
//   ends before its last byte (checked when learnt), the rest has no ESC, no
//   control byte, no '\r' and no non-ASCII byte.
// - StripPasteWrappers leaves it alone: the cleaned head does not start with
//   '>', '[' or a digit, the only first bytes a wrapper starts with; or it is
//   an SGLang header, `[YYYY-MM-DD HH:MM:SS`, whose space at byte 11 is no
//   wrapper's `[YYYY-MM-DDT` (IsSglangStart).
// - The prefix parse reads the chain and stops at the header's first letter,
//   all inside the head (so the raw prefix cache and the parse agree too).
//   An SGLang header has none: a chain starts with `(` or `[r`.
// - No '\r' follows the chain; AfterProgressBar needs "it/s]" or "s/it]",
//   which are triggers.
// - ParseHeader: a vLLM, uvicorn or SGLang header whose Header::fixed_size
//   bytes are in the head, so the same kind, level, time and rank tags; not a
//   kind the host-logger rule re-parses. Only SGLang's header names a worker
//   (names_worker): the record's, and the one raw lines after it follow, so
//   the catch-up leaves the parser with the window's last line's
//   (pipeline/quiet_lines.h). Its level is INFO or DEBUG, or none for an
//   SGLang message without an inner level word.
// - Rank learning needs "parallel_state" in the location: a trigger.
// - The traceback assembler, when the stream is idle, reacts only to a frame
//   (`File "`), a traceback header, or an exception line whose type ends in
//   Error, Exception, Warning, Interrupt or Exit: all triggers
//   (case-insensitive, so a superset).
// - The engine finds no atom; an INFO message changes nothing else there when
//   RuleEngine::SkipQuietRecord(worker) holds (a carried line ends).
//
// A bare shape stands for unprefixed lines whose header holds no time and
// varies in its bytes (NCCL's `host:pid:tid [dev] NCCL INFO `): its head is
// empty, and a line has it when it is printable ASCII, starts with a
// lowercase letter (no prefix chain, no paste wrapper) and ParseHeader gives
// it the shape's kind and level, no time and no worker: the parser's own
// header parse of the same bytes.
//
// What the caller still owns: the source must hold nothing (no CRI partial,
// no open or pending traceback), the line must fit max_line_bytes, and the
// parser's times must be brought up to date before it next parses a line
// (see pipeline.cc).
//
// Threading: pure functions.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "fingerprintd/log_record.h"
#include "parse/header.h"

namespace fingerprintd::parse {

// Literals (lowercase, matched case-insensitively) that a line must not hold
// to be skipped; the read buffer is searched for them with the rule set's atoms.
const std::vector<std::string>& QuietLineTriggers();

// True if `text` holds one of QuietLineTriggers(), in any case. For a line the
// buffer search saw an atom in, which may still be trigger-free.
bool HoldsQuietTrigger(std::string_view text);

// `atoms` followed by QuietLineTriggers(), for one whole-buffer search.
std::vector<std::string> WithQuietLineTriggers(const std::vector<std::string>& atoms);

struct LineShape {
  bool bare = false;     // see above: the header is parsed, `head` is empty
  std::string head;      // the content's first bytes, up to the header's fixed part
  size_t chain_end = 0;  // where the raw prefix chain ends in `head` (0: none)
  HeaderKind kind = HeaderKind::kNone;
  Level level = Level::kUnknown;
  bool header_time = false;   // the header carries a time (vLLM, SGLang), else none (uvicorn)
  bool names_worker = false;  // the header names the worker (SGLang's rank tags)
  const WorkerInfo* worker = nullptr;
};

// True if `line` starts as an SGLang header, `[YYYY-MM-DD HH:MM:SS`.
bool IsSglangStart(std::string_view line);

// Learns the shape of `content` (an envelope's content, ANSI kept) from the
// record the parser made of it. False when the line cannot stand for others:
// not an INFO/DEBUG vLLM or uvicorn message, a paste wrapper, control or
// non-ASCII bytes after the chain, or a record that differs from what the
// steps above give (the check that the steps are the parser's).
bool LearnLineShape(std::string_view content, const LogRecord& record, LineShape* out,
                    std::string* scratch);

// True if `content` (a plain source's line) would be given a bare shape's
// header: no time, no rank, no prefix chain.
bool HasBareHeader(std::string_view content);

// True if `content` starts with the shape's head and the rest is printable
// ASCII (a bare shape: see above). Atoms and triggers are the caller's to
// rule out.
bool HasLineShape(std::string_view content, const LineShape& shape);

}  // namespace fingerprintd::parse
