// SourceHealth: what keeps a file source from reading what it should, for
// the tailer (tailer.h) to report once and for the daemon to show until it
// is gone: a glob that matches no file, a directory that is missing or
// cannot be listed, a file that cannot be opened or read.
//
//   SourceHealth health;
//   health.BeginScan();
//   health.Set(path, Problem::kScan, "permission_denied", "open: Permission denied", report);
//   health.EndScan(report);          // a kScan problem not set again is resolved
//   health.Clear(path, report);      // a file read again
//
// `report(problem, event)` is called when a problem appears (or its reason
// changes: kFound), at every retry that finds it again (kStill) and when it
// is resolved (kResolved), so the daemon logs each once and counts every
// failed attempt (a rate that stays above 0 while it lasts).
// Problems are keyed by path (a glob's pattern for "no_match").
//
// Reasons (fingerprintd_source_errors_total{reason}): "no_match",
// "directory_missing", "permission_denied", "not_a_directory",
// "not_regular_file" (a FIFO, socket or device the glob matches, or that
// took a watched file's place: never opened in a way that could block),
// "open_failed", "read_error".
//
// Threading: the tailer's thread.
#pragma once

#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace fingerprintd::source {

struct SourceProblem {
  std::string path;    // a file or directory, or a glob for "no_match"
  std::string reason;  // see above
  std::string detail;  // for the log: the call and the system's message
};

// Not an errno: what was found at a file's path is not a regular file.
inline constexpr int kNotRegularFile = -1;

// The reason for an errno (or kNotRegularFile) from opening `path` (a
// directory when `directory`), and what the log says of it.
std::string_view ProblemReason(int error, bool directory);
std::string ProblemDetail(int error);

class SourceHealth {
 public:
  // kScan: found by a rescan of the globs, resolved by the first rescan that
  // does not find it again. kRead: found reading a file, resolved by Clear().
  enum class Kind { kScan, kRead };
  enum class Event { kFound, kStill, kResolved };
  using Report = std::function<void(const SourceProblem& problem, Event event)>;

  void BeginScan() { seen_in_scan_.clear(); }
  void Set(const std::string& path, Kind kind, std::string_view reason, std::string detail,
           const Report& report);
  void EndScan(const Report& report);
  void Clear(const std::string& path, const Report& report);

  // Problems now, by path.
  std::vector<SourceProblem> Problems() const;
  bool Has(const std::string& path) const { return problems_.count(path) > 0; }

 private:
  struct Entry {
    SourceProblem problem;
    Kind kind;
  };
  std::map<std::string, Entry> problems_;
  std::map<std::string, bool> seen_in_scan_;
};

}  // namespace fingerprintd::source
