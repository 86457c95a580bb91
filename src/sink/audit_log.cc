// AuditLog: see audit_log.h.
#include "sink/audit_log.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

namespace fingerprintd::sink {

namespace {

Status Errno(const std::string& what) { return InternalError(what + ": " + std::strerror(errno)); }

void AppendRecord(uint64_t digest, const uint64_t* offset, std::string_view source,
                  std::string* out) {
  char head[48];
  int n = offset != nullptr ? std::snprintf(head, sizeof(head), "%016llx %llu ",
                                            static_cast<unsigned long long>(digest),
                                            static_cast<unsigned long long>(*offset))
                            : std::snprintf(head, sizeof(head), "%016llx - ",
                                            static_cast<unsigned long long>(digest));
  out->append(head, static_cast<size_t>(n));
  out->append(source);
  out->push_back('\n');
}

}  // namespace

uint64_t AuditDigest(std::string_view line) {
  const auto* bytes = reinterpret_cast<const Bytef*>(line.data());
  uint64_t crc = ::crc32(0L, bytes, static_cast<uInt>(line.size()));
  uint64_t adler = ::adler32(1L, bytes, static_cast<uInt>(line.size()));
  return crc << 32 | adler;
}

StatusOr<std::unique_ptr<AuditLog>> AuditLog::Open(const std::string& path,
                                                   uint64_t committed_bytes) {
  int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) return Errno("audit: " + path);
  struct stat st;
  if (::fstat(fd, &st) != 0) {
    Status s = Errno("audit: " + path);
    ::close(fd);
    return s;
  }
  if (static_cast<uint64_t>(st.st_size) < committed_bytes) {
    ::close(fd);
    return DataLossError("audit: " + path + " has " + std::to_string(st.st_size) +
                         " bytes, the checkpoint committed " + std::to_string(committed_bytes));
  }
  if (::ftruncate(fd, static_cast<off_t>(committed_bytes)) != 0 ||
      ::lseek(fd, static_cast<off_t>(committed_bytes), SEEK_SET) < 0) {
    Status s = Errno("audit: " + path);
    ::close(fd);
    return s;
  }
  return std::unique_ptr<AuditLog>(new AuditLog(fd, path, committed_bytes));
}

AuditLog::~AuditLog() {
  if (fd_ >= 0) ::close(fd_);
}

void AuditLog::OnFileLine(const std::string& source, std::string_view line, uint64_t offset) {
  files_[source].push_back(Entry{offset, AuditDigest(line)});
}

std::function<void(const SourceSpec&, std::string_view, uint64_t)> AuditLog::LineObserver() {
  return [this](const SourceSpec& spec, std::string_view line, uint64_t offset) {
    if (spec.transient) {
      OnSocketLine(spec.name, line);
    } else {
      OnFileLine(spec.name, line, offset);
    }
  };
}

void AuditLog::OnSocketLine(std::string_view stream, std::string_view line) {
  sockets_.emplace_back(std::string(stream), AuditDigest(line));
}

StatusOr<uint64_t> AuditLog::Prepare(const source::Checkpoint& checkpoint) {
  prepared_files_.clear();
  prepared_sockets_ = 0;
  std::string text;
  for (const source::SourceCheckpoint& source : checkpoint.sources) {
    auto it = files_.find(source.name);
    if (it == files_.end()) continue;
    size_t n = 0;
    for (const Entry& e : it->second) {
      if (e.offset >= source.safe.offset) break;
      AppendRecord(e.digest, &e.offset, source.name, &text);
      ++n;
    }
    if (n > 0) prepared_files_[source.name] = n;
  }
  for (const auto& [source, digest] : sockets_) AppendRecord(digest, nullptr, source, &text);
  prepared_sockets_ = sockets_.size();
  size_t done = 0;
  while (done < text.size()) {
    ssize_t n = ::write(fd_, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      Status s = Errno("audit: write " + path_);
      Abort();
      return s;
    }
    done += static_cast<size_t>(n);
  }
  if (::fdatasync(fd_) != 0) {
    Status s = Errno("audit: fdatasync " + path_);
    Abort();
    return s;
  }
  prepared_bytes_ = committed_bytes_ + text.size();
  return prepared_bytes_;
}

void AuditLog::Confirm() {
  for (const auto& [source, n] : prepared_files_) {
    auto& waiting = files_[source];
    waiting.erase(waiting.begin(), waiting.begin() + static_cast<ptrdiff_t>(n));
  }
  sockets_.erase(sockets_.begin(), sockets_.begin() + static_cast<ptrdiff_t>(prepared_sockets_));
  prepared_files_.clear();
  prepared_sockets_ = 0;
  committed_bytes_ = prepared_bytes_ > committed_bytes_ ? prepared_bytes_ : committed_bytes_;
}

void AuditLog::Abort() {
  prepared_files_.clear();
  prepared_sockets_ = 0;
  prepared_bytes_ = committed_bytes_;
  // Best effort: if even this fails, the next start truncates to the checkpoint's length.
  if (::ftruncate(fd_, static_cast<off_t>(committed_bytes_)) == 0) {
    ::lseek(fd_, static_cast<off_t>(committed_bytes_), SEEK_SET);
  }
}

void AuditLog::Rewind(const source::Checkpoint& snapshot) {
  for (const source::SourceCheckpoint& source : snapshot.sources) {
    auto it = files_.find(source.name);
    if (it == files_.end()) continue;
    auto& waiting = it->second;
    while (!waiting.empty() && waiting.back().offset >= source.safe.offset) waiting.pop_back();
  }
}

size_t AuditLog::waiting() const {
  size_t n = sockets_.size();
  for (const auto& [source, waiting] : files_) n += waiting.size();
  return n;
}

}  // namespace fingerprintd::sink
