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
// Only whole records reach the file, and none is lost to a write error (a
// full disk, a quota, EIO):
//   * a record that cannot be written whole is cut back from the file (the
//     file's length before it restored: nothing half-written for the next
//     record to be glued onto) and kept, with every record after it, in
//     order, to be written by Retry() (the daemon calls it every second) or
//     by the next change; at most kMaxPending records are kept, the oldest
//     dropped beyond (counted in dropped_records(), logged);
//   * each failed attempt is counted (write_errors()); the daemon logs the
//     change of state once: when writes start failing, and when they work
//     again;
//   * while records are pending the daemon is not ready (/readyz names the
//     error) and does not commit a checkpoint past them, so a restart reads
//     their lines again, decides the same revisions and writes them (the
//     dedup above skips what did reach the file);
//   * a file whose last line was torn (a crash, or a disk that filled in an
//     older version) is cut back to its last whole line when opened
//     (torn_bytes_cut(), for the daemon's log).
// For stdout nothing can be cut back: the rest of a record half written is
// written at the next attempt. Never throws.
//
// Threading: single-threaded (the pipeline's thread).
#pragma once

#include <cstdint>
#include <deque>
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
  static constexpr size_t kMaxPending = 10'000;      // records kept while writes fail

  // "-" = stdout; otherwise the file is created if needed (mode 0644) and
  // appended to. NotFound/Internal errors name the path.
  static StatusOr<std::unique_ptr<JsonlIncidentSink>> Open(const std::string& path);
  ~JsonlIncidentSink() override;

  void OnIncident(correlate::IncidentChange change, const correlate::Incident& incident) override;

  // Writes the records kept after a failed write (a no-op when none are).
  void Retry();

  const std::string& path() const { return path_; }
  uint64_t lines_written() const { return lines_written_; }
  uint64_t duplicates_skipped() const { return duplicates_skipped_; }
  uint64_t write_errors() const { return write_errors_; }
  uint64_t dropped_records() const { return dropped_records_; }
  size_t pending() const { return pending_.size(); }
  uint64_t torn_bytes_cut() const { return torn_bytes_cut_; }
  // The last write error while records are pending ("" when none are).
  const std::string& error() const { return error_; }

 private:
  JsonlIncidentSink(std::string path, int fd, bool owned, bool sync)
      : path_(std::move(path)), fd_(fd), owned_(owned), sync_(sync) {}
  void CutTornTail();
  void LoadWritten();
  // Writes pending_ from its front until done or a write fails.
  void Flush();
  // Writes the front record whole; false (and the file as it was) on error.
  bool WriteFront();

  std::string path_;  // "-" for stdout
  int fd_;
  bool owned_;
  bool sync_;
  std::set<std::pair<std::string, int>> written_;  // (incident_id, revision)
  std::deque<std::string> pending_;                // lines not written yet, in order
  size_t front_done_ = 0;  // stdout: bytes of pending_.front() already written
  std::string error_;
  uint64_t lines_written_ = 0;
  uint64_t duplicates_skipped_ = 0;
  uint64_t write_errors_ = 0;
  uint64_t dropped_records_ = 0;
  uint64_t torn_bytes_cut_ = 0;
};

}  // namespace fingerprintd::sink
