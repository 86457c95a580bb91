// CollectingSink: a parse::RecordSink fake that keeps a copy of everything it
// is given, so tests can look at records after the parser's views expired.
//
// Threading: not thread-safe; one test thread.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "fingerprintd/log_record.h"
#include "fingerprintd/parse.h"
#include "fingerprintd/traceback.h"

namespace fingerprintd::testing {

// A LogRecord whose views were copied into owned strings.
struct CollectedRecord {
  uint32_t source_id = 0;
  uint64_t line_number = 0;
  uint64_t offset = 0;
  const WorkerInfo* worker = nullptr;  // owned by the parser's WorkerTable
  Level level = Level::kUnknown;
  LineKind kind = LineKind::kMessage;
  int64_t time_us = 0;
  std::string location;
  std::string message;
  std::string raw;
};

class CollectingSink final : public parse::RecordSink {
 public:
  void OnRecord(const LogRecord& record) override {
    CollectedRecord& r = records.emplace_back();
    r.source_id = record.source_id;
    r.line_number = record.line_number;
    r.offset = record.offset;
    r.worker = record.worker;
    r.level = record.level;
    r.kind = record.kind;
    r.time_us = record.time_us;
    r.location.assign(record.location.data(), record.location.size());
    r.message.assign(record.message.data(), record.message.size());
    r.raw.assign(record.raw.data(), record.raw.size());
    // Which records came before which traceback: the emission-order contract.
    records_before_traceback.push_back(tracebacks.size());
  }
  void OnTraceback(const Traceback& traceback) override { tracebacks.push_back(traceback); }

  std::vector<CollectedRecord> records;
  std::vector<Traceback> tracebacks;
  // records_before_traceback[i] = number of tracebacks emitted before record i.
  std::vector<size_t> records_before_traceback;
};

}  // namespace fingerprintd::testing
