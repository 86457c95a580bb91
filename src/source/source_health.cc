// SourceHealth: see source_health.h.
#include "source/source_health.h"

#include <cerrno>
#include <cstring>

namespace fingerprintd::source {

std::string_view ProblemReason(int error, bool directory) {
  switch (error) {
    case kNotRegularFile:
      return "not_regular_file";
    case EACCES:
    case EPERM:
      return "permission_denied";
    case ENOENT:
      return directory ? "directory_missing" : "open_failed";
    case ENOTDIR:
      return "not_a_directory";
    default:
      return "open_failed";
  }
}

std::string ProblemDetail(int error) {
  if (error == kNotRegularFile) return "not a regular file (a FIFO, socket or device): not read";
  return std::string("open: ") + std::strerror(error);
}

void SourceHealth::Set(const std::string& path, Kind kind, std::string_view reason,
                       std::string detail, const Report& report) {
  if (kind == Kind::kScan) seen_in_scan_[path] = true;
  auto it = problems_.find(path);
  if (it != problems_.end() && it->second.problem.reason == reason) {
    it->second.problem.detail = std::move(detail);
    if (report) report(it->second.problem, Event::kStill);
    return;
  }
  Entry& entry = problems_[path];
  entry.problem = SourceProblem{path, std::string(reason), std::move(detail)};
  entry.kind = kind;
  if (report) report(entry.problem, Event::kFound);
}

void SourceHealth::EndScan(const Report& report) {
  for (auto it = problems_.begin(); it != problems_.end();) {
    if (it->second.kind == Kind::kScan && !seen_in_scan_.count(it->first)) {
      const SourceProblem problem = std::move(it->second.problem);
      it = problems_.erase(it);
      if (report) report(problem, Event::kResolved);
    } else {
      ++it;
    }
  }
}

void SourceHealth::Clear(const std::string& path, const Report& report) {
  auto it = problems_.find(path);
  if (it == problems_.end()) return;
  const SourceProblem problem = std::move(it->second.problem);
  problems_.erase(it);
  if (report) report(problem, Event::kResolved);
}

std::vector<SourceProblem> SourceHealth::Problems() const {
  std::vector<SourceProblem> out;
  for (const auto& [path, entry] : problems_) out.push_back(entry.problem);
  return out;
}

}  // namespace fingerprintd::source
