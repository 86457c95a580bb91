// LogRecord: one physical log line after envelopes, ANSI, `\r` and process
// prefixes are removed. The unit every stage after parsing consumes.
//
// Records are produced by parse::SourceParser and handed to a RecordSink by
// const reference; the string_views inside are valid only for that call.
// WorkerInfo objects are owned by the parser's WorkerTable and live as long as
// the parser (stable addresses), so a `const WorkerInfo*` may be kept; at the
// stream cap a silent stream's object is reused for a new process, announced
// by RecordSink::OnStreamForgotten.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace fingerprintd {

// Python logging levels. kUnknown = the line carried no level (raw traceback
// bodies, C++ output, prints); such lines inherit the level of the traceback
// they belong to when there is one.
enum class Level : uint8_t { kUnknown = 0, kDebug, kInfo, kWarning, kError, kCritical };

std::string_view LevelName(Level level);  // "INFO", ... ("UNKNOWN")
// Parses "INFO", "WARNING", "WARN", "ERROR", "CRITICAL", "DEBUG", "I","W","E","F","V".
Level ParseLevel(std::string_view text);

// What kind of process wrote the line, from its prefix.
enum class ProcessRole : uint8_t {
  kUnknown = 0,  // no prefix: main process, import-time lines, C/C++ output
  kWorker,      // Worker_TPn, VllmWorker, RayWorkerWrapper, SGLang TPn, TRT-LLM RANK n, torch rankN
  kEngineCore,  // EngineCore, EngineCore_DPn, EngineCore_n
  kApiServer,   // APIServer, ApiServer_n
  kOther,       // any other named prefix (raylet, LLMRayActor without rank, ...)
};
std::string_view ProcessRoleName(ProcessRole role);  // "worker", "engine_core", "api_server", ...

// One process stream seen in a source. Interned by the parser: one object per
// distinct (process name, pid, ip) of a source.
struct WorkerInfo {
  uint32_t id = 0;  // index in the source's WorkerTable, stable
  ProcessRole role = ProcessRole::kUnknown;
  std::string name;  // "Worker_TP1", "RayWorkerWrapper", "EngineCore_DP0", "" if unprefixed
  int32_t pid = -1;
  std::string ip;  // Ray actors on other nodes; "" otherwise
  // Parallel-group indices from the prefix (-1 = not present).
  int32_t dp = -1, pp = -1, tp = -1, ep = -1;
  // Explicit global rank (`VllmWorker rank=N`, `[rankN]:`, `[RANK n]`, Ray's
  // `world_size=W rank=R` line learnt later). -1 until known.
  int32_t rank = -1;

  // Global rank if it can be told: the explicit rank, else pp*tp_size+tp.
  // tp_size <= 0 means unknown (then a bare tp index is used when pp <= 0).
  int32_t GlobalRank(int32_t tp_size) const;
  // Stable human label: "Worker_TP1 pid=8761", "RayWorkerWrapper pid=340 ip=10.10.10.2",
  // "(unprefixed)".
  std::string Label() const;
};

// What a line is, structurally. Set by the parser/traceback assembler.
enum class LineKind : uint8_t {
  kMessage = 0,      // ordinary log message
  kTracebackHeader,  // "Traceback (most recent call last):"
  kFrame,            // '  File "x.py", line N, in f'
  kCode,             // source / caret / "...<N lines>..." line inside a traceback
  kChainSeparator,   // "The above exception was..." / "During handling..."
  kException,        // "RuntimeError: ..." that ends a traceback (or a one-line paste)
};

// A line position in a source: the byte offset of the line's first byte and
// the number of lines before it (so `line + 1` is its 1-based line number).
struct SourcePosition {
  uint64_t offset = 0;
  uint64_t line = 0;
  bool operator==(const SourcePosition&) const = default;
  // Lowers *this to `other` if `other` is earlier.
  void LowerTo(const SourcePosition& other) {
    if (other.offset < offset) *this = other;
  }
};

struct LogRecord {
  uint32_t source_id = 0;
  uint64_t line_number = 0;  // 1-based physical line in the source (first line of a joined record)
  uint64_t offset = 0;       // byte offset of that line in the source
  const WorkerInfo* worker = nullptr;  // never null once emitted by the parser
  Level level = Level::kUnknown;
  LineKind kind = LineKind::kMessage;
  bool headered = false;  // the line had a logging header (level/time/location)
  int64_t time_us = 0;    // event time, microseconds since the Unix epoch (UTC); 0 = unknown
  // Live only: the source has given no time of its own yet, and time_us is
  // when the line was read (ParserOptions::wall_clock). Replay leaves it 0.
  bool time_read = false;
  std::string_view location;  // "core.py:1110" or empty
  std::string_view message;   // text after every prefix and header
  std::string_view raw;       // the envelope content as read (ANSI kept), for evidence
  // Set by the parser when the bytes `message` was cut from were searched as
  // part of a whole read buffer and hold none of the prefilter atoms of this
  // rule set (rules::RuleSet*): the engine may skip its own literal scan.
  const void* atom_free_for = nullptr;
};

}  // namespace fingerprintd
