// Line headers: level, event time and source location in front of a message.
//
// Recognised (after envelopes, ANSI and process prefixes are removed):
//   vLLM        `INFO 04-25 06:11:27 [utils.py:299] msg` and the pre-2025
//               `INFO 07-03 11:58:36 llm_engine.py:161] msg` (file may be a
//               relative path with `/` and `...`, or `<frozen ...>`)
//   uvicorn     `INFO:     msg`
//   logging     `2025-01-02 03:04:05,678 - name - LEVEL - msg`
//   Ray         `2026-04-25 06:10:52,133\tINFO usage_lib.py:448 -- msg` (SUCC = INFO)
//   SGLang      `[2025-11-03 18:48:34.123 DP0 TP7] msg` (worker from the tags;
//               `LEVEL file.py:N: ` at the start of msg is taken when present)
//   TRT-LLM     `[01/16/2026-06:20:17] [TRT-LLM] [RANK 0] [I] msg`, `[MPI_Rank n]`,
//               `[TensorRT-LLM][INFO] msg`
//   warnings    `/path/x.py:279: UserWarning: msg` (level WARNING; the message
//               keeps `UserWarning: msg`)
//   glog        `I20250312 15:30:37.177192 3083291 file.cpp:41] msg` (also MMDD)
//   torch c10   `[W730 15:32:17.841273251 ProcessGroupNCCL.cpp:1479] msg`
//   NCCL        `host:pid:tid [dev] NCCL INFO msg` / `NCCL WARN msg` (the message
//               is the text after `NCCL INFO `; the raw line keeps all of it)
//   generic     `YYYY-MM-DD HH:MM:SS[,.fff] msg` (time only, level if obvious)
//   NIM         `ERROR 2025-07-21 14:34:24.934 file.py:62] msg` (vLLM's shape with a year)
//   C++ abort   `  what():  msg` after `terminate called after throwing ...`
//               (CRITICAL: the process ends; a `[TensorRT-LLM][ERROR] ` inside
//               is part of the header)
//
// Every scanner is hand-written and starts with a first-byte check, because
// the parse runs on every line (no std::regex, no RE2 here).
//
// Threading: pure functions.
#pragma once

#include <cstdint>
#include <string_view>

#include "fingerprintd/log_record.h"
#include "fingerprintd/parse.h"
#include "fingerprintd/pipeline_events.h"
#include "parse/prefix.h"
#include "parse/time_util.h"

namespace fingerprintd::parse {

enum class HeaderKind : uint8_t {
  kNone = 0,
  kVllm,
  kUvicorn,
  kPaddedLevel,  // Python logging's `%(levelname)-8s %(message)s`: `ERROR    msg`
  kPythonLogging,
  kRay,
  kSglang,
  kTrtLlm,
  kTrtCpp,
  kPythonWarning,
  kGlog,
  kTorch,
  kNccl,
  kGenericTime,
  kCppTerminate,
  kFatalWords,  // a library's own last words before it aborts: `LLVM ERROR: msg`
};

// A parsed header. Views point into the parsed line.
struct Header {
  HeaderKind kind = HeaderKind::kNone;
  Level level = Level::kUnknown;
  bool has_time = false;
  CivilTime time;             // time.year == 0: the header has no year (vLLM, torch, glog MMDD)
  std::string_view location;  // "core.py:1110"
  std::string_view text;      // the header itself, e.g. "ERROR 04-25 06:14:37 [core.py:1110]"
  std::string_view message;   // the rest of the line
  // SGLang rank tags and TRT-LLM `[RANK n]` name the writing process.
  bool has_worker = false;
  ProcessId worker;
  // The header's byte shape (vLLM, uvicorn, SGLang and TensorRT-LLM
  // headers; else fixed_size 0): its first fixed_size bytes alone decide
  // kind, level, time and rank tags, so any line starting with them parses
  // to the same header but for location and message. The time is read from
  // bytes [time_begin, time_end) of them (equal when the header has none): a
  // line alike but for those bytes is a header of the same shape at another
  // time (parse/line_templates.h). SGLang: up to the byte after the
  // message's uppercase first word, when that decides there is no inner level.
  size_t fixed_size = 0;
  size_t time_begin = 0, time_end = 0;
};

// Parses a header at the start of `line`. Returns false (and leaves *out with
// message == line) when there is none.
bool ParseHeader(std::string_view line, Header* out);

// The time of a header without a year (`t.year == 0`) when no envelope
// gives one: from ParserOptions::mtime_us and what follows it there, at
// `offset` seconds east of UTC. *fallback is what it counts.
int64_t GuessedHeaderTime(const ParserOptions& options, const CivilTime& t, int32_t offset,
                          TimeFallback* fallback);

}  // namespace fingerprintd::parse
