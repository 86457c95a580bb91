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
        new JsonlIncidentSink(path, STDOUT_FILENO, /*owned=*/false, /*sync=*/false));
  }
  int fd = ::open(path.c_str(), O_RDWR | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) return NotFoundError(path + ": " + std::strerror(errno));
  std::unique_ptr<JsonlIncidentSink> sink(
      new JsonlIncidentSink(path, fd, /*owned=*/true, /*sync=*/true));
  sink->CutTornTail();
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

void JsonlIncidentSink::CutTornTail() {
  struct stat st;
  if (::fstat(fd_, &st) != 0 || st.st_size == 0) return;
  off_t end = st.st_size;
  char block[4096];
  while (end > 0) {
    const off_t from = end > static_cast<off_t>(sizeof(block)) ? end - sizeof(block) : 0;
    const ssize_t n = ::pread(fd_, block, static_cast<size_t>(end - from), from);
    if (n <= 0) return;
    for (ssize_t i = n; i > 0; --i) {
      if (block[i - 1] == '\n') {
        const off_t whole = from + i;
        if (whole == st.st_size) return;
        if (::ftruncate(fd_, whole) == 0)
          torn_bytes_cut_ = static_cast<uint64_t>(st.st_size - whole);
        return;
      }
    }
    end = from;
  }
  if (::ftruncate(fd_, 0) == 0) torn_bytes_cut_ = static_cast<uint64_t>(st.st_size);
}

// Every change is a revision, the close included: one line each.
void JsonlIncidentSink::OnIncident(correlate::IncidentChange /*change*/,
                                   const correlate::Incident& incident) {
  if (written_.size() > kMaxRemembered) written_.clear();  // only a restart's re-reads matter
  if (!written_.emplace(incident.incident_id, incident.revision).second) {
    ++duplicates_skipped_;
    return;
  }
  if (pending_.size() >= kMaxPending) {
    pending_.pop_front();
    front_done_ = 0;  // stdout: the rest of a half-written line is lost with it
    ++dropped_records_;
  }
  pending_.push_back(correlate::IncidentToJson(incident) + '\n');
  Flush();
}

void JsonlIncidentSink::Retry() {
  if (!pending_.empty()) Flush();
}

void JsonlIncidentSink::Flush() {
  while (!pending_.empty()) {
    if (!WriteFront()) {
      ++write_errors_;
      return;
    }
    pending_.pop_front();
    ++lines_written_;
  }
  error_.clear();
}

bool JsonlIncidentSink::WriteFront() {
  const std::string& line = pending_.front();
  const bool can_cut = owned_;
  struct stat st;
  if (can_cut && ::fstat(fd_, &st) != 0) {
    error_ = std::string("fstat: ") + std::strerror(errno);
    return false;
  }
  size_t done = can_cut ? 0 : front_done_;
  while (done < line.size()) {
    ssize_t n = ::write(fd_, line.data() + done, line.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      error_ = n < 0 ? std::strerror(errno) : "nothing written";
      if (can_cut && done > 0 && ::ftruncate(fd_, st.st_size) != 0) {
        error_ +=
            std::string("; and the partial record could not be cut back: ") + std::strerror(errno);
      }
      if (!can_cut) front_done_ = done;
      return false;
    }
    done += static_cast<size_t>(n);
  }
  front_done_ = 0;
  if (sync_ && ::fsync(fd_) != 0) {
    // The record is in the file (page cache) but may not survive a crash:
    // counted, not written again (that would double it).
    ++write_errors_;
  }
  return true;
}

}  // namespace fingerprintd::sink
