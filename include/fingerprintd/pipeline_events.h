// PipelineEvents: the one interface through which every stage reports what a
// user may want counted. Only sink/metrics knows Prometheus; tests use
// testing::CountingEvents. Stages hold a reference and call it on their thread;
// implementations must be cheap (called per line) and, for the daemon,
// thread-safe.
#pragma once

#include <cstdint>
#include <string_view>

namespace fingerprintd {

// Why a line (or part of one) was not processed as-is.
enum class DropReason : uint8_t {
  kLineTooLong = 0,     // truncated at the line byte cap
  kPartialTooLong,      // CRI/Docker partial fragments joined beyond the cap
  kInvalidUtf8,         // bytes replaced (line kept, counted)
  kBinary,              // NUL/control bytes; line kept, counted
  kBadEnvelope,         // declared envelope did not parse; line passed as plain
  kTracebackTruncated,  // traceback frame/byte cap hit
  kInvalidJson,         // socket `jsonl`: a line that is not a JSON object (skipped)
  kNoTextField,         // socket `jsonl`: a JSON object without a text field (skipped)
  kCutAtDisconnect,     // socket: a line cut by its client disconnecting (skipped)
  kCount
};
std::string_view DropReasonName(DropReason reason);  // "line_too_long", ...

// Why an event time had to be guessed.
enum class TimeFallback : uint8_t {
  kYearFromMtime = 0,  // year taken from the file's mtime
  kYearFromClock,      // year taken from the (injected) current year
  kNoTimestamp,        // line had no time at all; previous time of the stream kept
  // The line's time was after it can have been written (its envelope's time,
  // the wall clock, the file's mtime, by more than the widest zone offset):
  // dated by its envelope or the source's previous line instead.
  kMisdated,
  kCount
};
std::string_view TimeFallbackName(TimeFallback fallback);

// What state was forgotten to keep memory bounded (fingerprintd_evictions_total{what}).
enum class Evicted : uint8_t {
  kProcessStream = 0,  // a source's process stream silent the longest, at the stream cap
  kIncident,           // the oldest open incident, at the open-incident cap
  kHeldEvent,          // an event released early, at the held-event cap
  kWorker,             // a deployment's oldest remembered worker process, at its cap
  kAlert,              // the oldest alert waiting for Alertmanager, at the queue cap
  kIncidentHistory,    // a closed incident dropped from /incidents and the status page
  kConnection,         // a socket connection refused at max_connections
  kIdleConnection,     // a socket connection closed after idle_timeout without a byte
  kSocketStream,       // a connection's stream ended early, least recent first, at max_streams
  kDeployment,         // a deployment with no source left and no open incident (facts, workers)
  kPartialRecord,      // a CRI/Docker record whose last fragment did not come in time, handed on
  kStageMatch,         // a rule's earlier-stage match older than its maxspan plus a day, forgotten
  kPrefilterFallback,  // the prefilter's RE2::Set ran out of DFA memory; a line's atoms searched
                       // one by one
  kCount
};
std::string_view EvictedName(Evicted what);  // "process_stream", "incident", "held_event", ...

class PipelineEvents {
 public:
  virtual ~PipelineEvents() = default;

  virtual void LineRead(std::string_view source, uint64_t bytes) = 0;
  virtual void LineDropped(DropReason reason) = 0;
  virtual void TimeGuessed(TimeFallback fallback) = 0;
  virtual void TracebackAssembled() = 0;
  virtual void RuleMatched(std::string_view rule, std::string_view stage) = 0;
  virtual void IncidentOpened(std::string_view rule, std::string_view rule_class,
                              std::string_view severity) = 0;
  virtual void IncidentUpdated(std::string_view rule) = 0;
  // The live daemon's file tailer; replay never calls these.
  virtual void FileRotated() = 0;
  virtual void FileTruncated() = 0;
  // A finding of `rule` that followed an operator's stop (a stop rule's hit)
  // within its window: what the stop provoked, not a failure; no incident.
  virtual void HitAfterStop(std::string_view /*rule*/) {}
  // State forgotten at a cap (not a line lost: counted apart from drops).
  virtual void StateEvicted(Evicted /*what*/) {}
  // A line read again after a restart or a reload: LineRead counted it before
  // the checkpoint, so it is counted here instead (lines_reread_total), and
  // LineRead counts each line of a source once.
  virtual void LineReread(std::string_view /*source*/, uint64_t /*bytes*/) {}
  // At a restore from a checkpoint: the bytes `source` will read again,
  // from its checkpoint's safe position to the end of the last line it had
  // processed (0 when it resumes where it stopped).
  virtual void RereadAtRestore(std::string_view /*source*/, uint64_t /*bytes*/) {}
};

// Does nothing; for callers that do not count.
class NullPipelineEvents final : public PipelineEvents {
 public:
  void LineRead(std::string_view, uint64_t) override {}
  void LineDropped(DropReason) override {}
  void TimeGuessed(TimeFallback) override {}
  void TracebackAssembled() override {}
  void RuleMatched(std::string_view, std::string_view) override {}
  void IncidentOpened(std::string_view, std::string_view, std::string_view) override {}
  void IncidentUpdated(std::string_view) override {}
  void FileRotated() override {}
  void FileTruncated() override {}
};

}  // namespace fingerprintd
