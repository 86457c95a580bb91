// JsonlIncidentSink: see jsonl_sink.h.
#include "sink/jsonl_sink.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <nlohmann/json.hpp>

namespace fingerprintd::sink {

StatusOr<std::unique_ptr<JsonlIncidentSink>> JsonlIncidentSink::Open(const std::string& path) {
  if (path == "-") {
    return std::unique_ptr<JsonlIncidentSink>(
        new JsonlIncidentSink(STDOUT_FILENO, /*owned=*/false, /*sync=*/false));
  }
  int fd = ::open(path.c_str(), O_RDWR | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) return NotFoundError(path + ": " + std::strerror(errno));
  std::unique_ptr<JsonlIncidentSink> sink(new JsonlIncidentSink(fd, /*owned=*/true, /*sync=*/true));
  sink->LoadWritten();
  return sink;
}

JsonlIncidentSink::~JsonlIncidentSink() {
  if (owned_ && fd_ >= 0) ::close(fd_);
}

void JsonlIncidentSink::LoadWritten() {
  struct stat st;
  if (::fstat(fd_, &st) != 0 || st.st_size == 0) return;
  off_t size = st.st_size;
  off_t from = size > static_cast<off_t>(kDedupWindowBytes) ? size - kDedupWindowBytes : 0;
  std::string text(static_cast<size_t>(size - from), '\0');
  ssize_t n = ::pread(fd_, text.data(), text.size(), from);
  if (n <= 0) return;
  text.resize(static_cast<size_t>(n));
  size_t pos = 0;
  if (from > 0) {  // skip the first line: it was cut
    pos = text.find('\n');
    if (pos == std::string::npos) return;
    ++pos;
  }
  while (pos < text.size()) {
    size_t nl = text.find('\n', pos);
    if (nl == std::string::npos) break;  // a torn last line is ignored
    nlohmann::json j = nlohmann::json::parse(text.begin() + static_cast<ptrdiff_t>(pos),
                                             text.begin() + static_cast<ptrdiff_t>(nl), nullptr,
                                             /*allow_exceptions=*/false);
    if (j.is_object() && j.contains("incident_id") && j["incident_id"].is_string() &&
        j.contains("revision") && j["revision"].is_number_integer()) {
      written_.emplace(j["incident_id"].get<std::string>(), j["revision"].get<int>());
    }
    pos = nl + 1;
  }
}

// Every change is a revision, the close included: one line each.
void JsonlIncidentSink::OnIncident(correlate::IncidentChange /*change*/,
                                   const correlate::Incident& incident) {
  if (written_.size() > kMaxRemembered) written_.clear();  // only a restart's re-reads matter
  if (!written_.emplace(incident.incident_id, incident.revision).second) {
    ++duplicates_skipped_;
    return;
  }
  std::string line = correlate::IncidentToJson(incident);
  line += '\n';
  size_t done = 0;
  while (done < line.size()) {
    ssize_t n = ::write(fd_, line.data() + done, line.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      ++write_errors_;
      return;
    }
    done += static_cast<size_t>(n);
  }
  if (sync_ && ::fsync(fd_) != 0) ++write_errors_;
  ++lines_written_;
}

}  // namespace fingerprintd::sink
