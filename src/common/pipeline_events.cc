// Metric label values for the reasons in fingerprintd/pipeline_events.h. They
// are part of the metrics contract (`fingerprintd_lines_dropped_total{reason}`),
// so they never change once released.
#include "fingerprintd/pipeline_events.h"

namespace fingerprintd {

std::string_view DropReasonName(DropReason reason) {
  switch (reason) {
    case DropReason::kLineTooLong:
      return "line_too_long";
    case DropReason::kPartialTooLong:
      return "partial_too_long";
    case DropReason::kInvalidUtf8:
      return "invalid_utf8";
    case DropReason::kBinary:
      return "binary";
    case DropReason::kBadEnvelope:
      return "bad_envelope";
    case DropReason::kTracebackTruncated:
      return "traceback_truncated";
    case DropReason::kInvalidJson:
      return "invalid_json";
    case DropReason::kNoTextField:
      return "no_text_field";
    case DropReason::kCutAtDisconnect:
      return "cut_at_disconnect";
    case DropReason::kCount:
      break;
  }
  return "unknown";
}

std::string_view EvictedName(Evicted what) {
  switch (what) {
    case Evicted::kProcessStream:
      return "process_stream";
    case Evicted::kIncident:
      return "incident";
    case Evicted::kHeldEvent:
      return "held_event";
    case Evicted::kIncidentHistory:
      return "incident_history";
    case Evicted::kWorker:
      return "worker";
    case Evicted::kConnection:
      return "connection";
    case Evicted::kIdleConnection:
      return "idle_connection";
    case Evicted::kSocketStream:
      return "socket_stream";
    case Evicted::kAlert:
      return "alert";
    case Evicted::kDeployment:
      return "deployment";
    case Evicted::kPartialRecord:
      return "partial_record";
    case Evicted::kStageMatch:
      return "stage_match";
    case Evicted::kPrefilterFallback:
      return "prefilter_fallback";
    case Evicted::kCount:
      break;
  }
  return "unknown";
}

std::string_view TimeFallbackName(TimeFallback fallback) {
  switch (fallback) {
    case TimeFallback::kYearFromMtime:
      return "year_from_mtime";
    case TimeFallback::kYearFromClock:
      return "year_from_clock";
    case TimeFallback::kNoTimestamp:
      return "no_timestamp";
    case TimeFallback::kMisdated:
      return "misdated";
    case TimeFallback::kCount:
      break;
  }
  return "unknown";
}

}  // namespace fingerprintd
