// Names and small helpers of the line model (fingerprintd/log_record.h).
#include "fingerprintd/log_record.h"

#include <string>

namespace fingerprintd {

std::string_view LevelName(Level level) {
  switch (level) {
    case Level::kDebug:
      return "DEBUG";
    case Level::kInfo:
      return "INFO";
    case Level::kWarning:
      return "WARNING";
    case Level::kError:
      return "ERROR";
    case Level::kCritical:
      return "CRITICAL";
    case Level::kUnknown:
      break;
  }
  return "UNKNOWN";
}

Level ParseLevel(std::string_view text) {
  // Exact spellings only: a level is a token the parser already delimited, and
  // guessing from lowercase or prefixes would turn message words into levels.
  switch (text.size()) {
    case 1:
      switch (text[0]) {
        case 'I':
          return Level::kInfo;
        case 'W':
          return Level::kWarning;
        case 'E':
          return Level::kError;
        case 'F':
          return Level::kCritical;
        case 'V':
        case 'D':
          return Level::kDebug;
      }
      return Level::kUnknown;
    case 4:
      if (text == "INFO") return Level::kInfo;
      if (text == "WARN") return Level::kWarning;
      if (text == "SUCC") return Level::kInfo;  // Ray's "success" level
      return Level::kUnknown;
    case 5:
      if (text == "DEBUG") return Level::kDebug;
      if (text == "ERROR") return Level::kError;
      if (text == "FATAL") return Level::kCritical;
      if (text == "TRACE") return Level::kDebug;
      return Level::kUnknown;
    case 7:
      if (text == "WARNING") return Level::kWarning;
      if (text == "VERBOSE") return Level::kDebug;
      return Level::kUnknown;
    case 8:
      if (text == "CRITICAL") return Level::kCritical;
      return Level::kUnknown;
  }
  return Level::kUnknown;
}

std::string_view ProcessRoleName(ProcessRole role) {
  switch (role) {
    case ProcessRole::kWorker:
      return "worker";
    case ProcessRole::kEngineCore:
      return "engine_core";
    case ProcessRole::kApiServer:
      return "api_server";
    case ProcessRole::kOther:
      return "other";
    case ProcessRole::kUnknown:
      break;
  }
  return "unknown";
}

int32_t WorkerInfo::GlobalRank(int32_t tp_size) const {
  if (rank >= 0) return rank;
  if (pp > 0) {
    // Without a tp index the pipeline stage has one rank (TP=1).
    if (tp < 0) return pp;
    if (tp_size > 0) return pp * tp_size + tp;
    return -1;
  }
  return tp;  // -1 when not present
}

std::string WorkerInfo::Label() const {
  if (name.empty() && pid < 0) return "(unprefixed)";
  std::string label = name;
  if (pid >= 0) {
    if (!label.empty()) label += ' ';
    label += "pid=";
    label += std::to_string(pid);
  }
  if (!ip.empty()) {
    label += " ip=";
    label += ip;
  }
  return label;
}

}  // namespace fingerprintd
