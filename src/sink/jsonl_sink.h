// JsonlIncidentSink: the daemon's incident log. One `fingerprintd/incident/v1`
// object per line (correlate::IncidentToJson, the same objects as `replay
// --format jsonl`), to stdout or appended to a file.
//
//   auto sink = JsonlIncidentSink::Open("/var/log/fingerprintd/incidents.jsonl");
//   Pipeline pipeline(rules, options, events, **sink);
//
// What is written for each change:
//   * kOpened and kUpdated: the incident's current revision, one line each,
//     so a reader tailing the file sees a failure the moment it is decided
//     and every later worker as a new line with a higher `revision`;
//   * kClosed: the close, a revision of its own with `closed` (the reason)
//     and `closed_at`. An incident with no such line is still open; the last
//     line written for an id is its final state.
//
// Durability: each line is written with one write(2) and, for a file,
// fsync'd before OnIncident returns. Exactly once across restarts: when a
// file is opened, the (incident_id, revision) pairs of its last
// kDedupWindowBytes are remembered, and a revision already in the file is not
// written again (a restart that re-reads lines from its checkpoint re-decides
// incidents it had already written). stdout cannot be re-read, so there a
// restart may repeat the last revisions written before a crash.
//
// A failed write is counted (write_errors()) and logged by the caller; it
// never throws. Threading: single-threaded (the pipeline's thread).
#pragma once

#include <cstdint>
#include <memory>
#include <set>
#include <string>
#include <utility>

#include "fingerprintd/correlate.h"
#include "fingerprintd/status.h"

namespace fingerprintd::sink {

class JsonlIncidentSink final : public correlate::IncidentSink {
 public:
  static constexpr size_t kDedupWindowBytes = 8 << 20;
  static constexpr size_t kMaxRemembered = 100'000;  // (id, revision) pairs

  // "-" = stdout; otherwise the file is created if needed (mode 0644) and
  // appended to. NotFound/Internal errors name the path.
  static StatusOr<std::unique_ptr<JsonlIncidentSink>> Open(const std::string& path);
  ~JsonlIncidentSink() override;

  void OnIncident(correlate::IncidentChange change, const correlate::Incident& incident) override;

  uint64_t lines_written() const { return lines_written_; }
  uint64_t duplicates_skipped() const { return duplicates_skipped_; }
  uint64_t write_errors() const { return write_errors_; }

 private:
  JsonlIncidentSink(int fd, bool owned, bool sync) : fd_(fd), owned_(owned), sync_(sync) {}
  void LoadWritten();

  int fd_;
  bool owned_;
  bool sync_;
  std::set<std::pair<std::string, int>> written_;  // (incident_id, revision)
  uint64_t lines_written_ = 0;
  uint64_t duplicates_skipped_ = 0;
  uint64_t write_errors_ = 0;
};

}  // namespace fingerprintd::sink
