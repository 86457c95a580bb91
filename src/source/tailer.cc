// Tailer: see tailer.h for the rotation/truncation rules and their order.
#include "source/tailer.h"

#include <fcntl.h>
#include <limits.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <deque>
#include <filesystem>

#include "source/glob.h"
#include "source/inotify_watcher.h"
#include "source/tailer_internal.h"

namespace fingerprintd::source {

Tailer::Tailer(TailerOptions options, PipelineEvents& events, TailerClient& client)
    : options_(std::move(options)), events_(events), client_(client) {
  report_ = [this](const SourceProblem& problem, SourceHealth::Event event) {
    client_.OnSourceProblem(problem, event);
  };
  for (std::string& path : options_.paths) {
    if (!path.empty() && path[0] != '/' && path != "-") {
      path = (std::filesystem::current_path() / path).lexically_normal().string();
    }
  }
}

Tailer::~Tailer() = default;

void Tailer::SetWatcher(InotifyWatcher* watcher) { watcher_ = watcher; }

void Tailer::SetFirstRun(int64_t first_run_us) { options_.first_run_us = first_run_us; }

void Tailer::ReadEveryFileFromItsStart() { options_.start_at_end = false; }

std::unique_ptr<Tailer::OpenFile> Tailer::OpenPath(const std::string& path) {
  // Never an open that can block: a FIFO (or a device) put at a watched path
  // would hold the daemon's only thread in open() until a writer came. Non-
  // blocking makes no difference to reading a regular file. What is not one
  // is not opened at all (opening a FIFO would wake its writer); fstat below
  // covers a swap between the two calls.
  struct stat before;
  if (::stat(path.c_str(), &before) == 0 && !S_ISREG(before.st_mode)) {
    last_open_error_ = kNotRegularFile;
    ++stats_.open_errors;
    return nullptr;
  }
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
  if (fd < 0) {
    last_open_error_ = errno;
    if (errno != ENOENT) ++stats_.open_errors;
    return nullptr;
  }
  auto file = std::make_unique<OpenFile>();
  file->fd = fd;
  file->path = path;
  struct stat st;
  if (::fstat(fd, &st) != 0) {
    last_open_error_ = errno;
    ++stats_.open_errors;
    return nullptr;
  }
  if (!S_ISREG(st.st_mode)) {
    last_open_error_ = kNotRegularFile;  // replaced by a FIFO, a socket, a device
    ++stats_.open_errors;
    return nullptr;
  }
  auto id = ReadIdentity(fd);
  if (!id.ok()) {
    last_open_error_ = EIO;
    ++stats_.open_errors;
    return nullptr;
  }
  file->identity = *id;
  file->last_size = static_cast<uint64_t>(st.st_size);
  file->last_mtime_ns = MtimeNs(st);
  return file;
}

void Tailer::Remember(Stream& stream, const OpenFile& file) {
  if (!stream.history.empty() && stream.history.back().base == file.base) {
    // The same piece: its head extended, or its copytruncate copy (which
    // holds all of it) now read in its place; or a piece left empty.
    stream.history.back().identity = file.identity;
    stream.history.back().released = file.released;
    return;
  }
  stream.history.push_back(FilePiece{file.identity, file.base, file.released});
  if (stream.history.size() > kMaxHistory) stream.history.erase(stream.history.begin());
}

void Tailer::WatchStream(Stream& stream) {
  by_watch_path_[stream.path] = stream.path;
  stream.target = RealPath(stream.path);
  by_watch_path_[stream.target] = stream.path;
  if (watcher_ == nullptr) return;
  watcher_->WatchDirectory(DirName(stream.path));
  watcher_->WatchDirectory(DirName(stream.target));
}

void Tailer::SwitchTo(Stream& stream, std::unique_ptr<OpenFile> next) {
  if (stream.current) {
    const FileIdentity& old = stream.current->identity;
    open_inodes_.erase({old.device, old.inode});
    if (retired_
            .emplace(std::pair{old.device, old.inode},
                     FilePiece{old, stream.current->base, stream.current->released})
            .second) {
      retired_order_.emplace_back(old.device, old.inode);
      if (retired_order_.size() > 4 * options_.max_files) {
        retired_.erase(retired_order_.front());
        retired_order_.pop_front();
      }
    }
    if (!next->base_known) next->base = stream.current->EndOffset();
  } else if (!next->base_known) {
    next->base = stream.end_offset;
  }
  next->base_known = true;
  open_inodes_[{next->identity.device, next->identity.inode}] = stream.path;
  stream.current = std::move(next);
  stream.seen_file = true;
  Remember(stream, *stream.current);
  ++stats_.files_opened;
}

bool Tailer::ExtendHead(OpenFile& file) {
  // A released head reads as zeros: the identity taken before is the one kept.
  if (file.identity.head_bytes >= kHeadBytes || file.released > 0) return false;
  struct stat st;
  if (::fstat(file.fd, &st) != 0 || static_cast<uint64_t>(st.st_size) <= file.identity.head_bytes) {
    return false;
  }
  if (!IsSameFile(file.fd, file.identity, file.released)) return false;  // step 1's to see
  auto id = ReadIdentity(file.fd);
  if (!id.ok()) return false;
  file.identity = *id;
  return true;
}

void Tailer::OpenStream(const std::string& path, bool initial, int64_t now_us) {
  if (streams_.size() >= options_.max_files) {
    ++stats_.files_over_cap;
    return;
  }
  struct stat st;
  if (::stat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) return;
  if (open_inodes_.count({st.st_dev, st.st_ino})) return;  // open under another name
  // Opened before the client hears of the stream: a file renamed away right
  // after OnOpen() (a rotation racing the first open) is still the one read,
  // and step 2 of the poll then finds its successor at the path.
  std::unique_ptr<OpenFile> file = OpenPath(path);
  if (!file && last_open_error_ != ENOENT) {
    // Not a stream until it can be read: tried again at the next Rescan().
    const int error = last_open_error_;
    health_.Set(path, SourceHealth::Kind::kScan, ProblemReason(error, false), ProblemDetail(error),
                report_);
    if (initial) unreadable_at_start_[path] = true;
    return;
  }
  if (unreadable_at_start_.erase(path)) initial = true;
  if (auto it = retired_.find({st.st_dev, st.st_ino}); it != retired_.end()) {
    if (file && IsSameFile(file->fd, it->second.identity, it->second.released)) {
      return;  // a rotated piece already read
    }
  }
  bool too_old = options_.ignore_older_us > 0 &&
                 now_us - static_cast<int64_t>(st.st_mtime) * 1'000'000 > options_.ignore_older_us;
  if (too_old) {
    ignored_[path] = true;
    return;
  }
  auto stream = std::make_unique<Stream>();
  stream->path = path;
  Stream& s = *stream;
  streams_[path] = std::move(stream);
  WatchStream(s);
  if (std::optional<StreamCheckpoint> checkpoint = client_.OnOpen(path)) {
    Resume(s, *checkpoint);
  } else if (file) {
    StartFrom from = StartFrom::kBeginning;
    if (ignored_.count(path)) {
      from = StartFrom::kEnd;
    } else if (initial && options_.start_at_end) {
      const bool born_later = options_.first_run_us > 0 &&
                              BirthTimeNs(file->fd) >= options_.first_run_us * int64_t{1000};
      from = born_later ? StartFrom::kBornWhileStopped : StartFrom::kEnd;
    }
    if (from == StartFrom::kBornWhileStopped) ++stats_.born_while_stopped;
    const uint64_t skipped = from == StartFrom::kEnd ? file->last_size : 0;
    file->read_offset = skipped;
    file->base = 0;
    SwitchTo(s, std::move(file));
    client_.OnStart(path, from, skipped);
  }
  ignored_.erase(path);
  ServiceStream(s, now_us);
}

void Tailer::ScanGlob(const std::string& pattern, bool initial, int64_t now_us) {
  std::vector<std::string> files, dirs;
  std::vector<GlobError> errors;
  ExpandGlobAndDirectories(pattern, &files, &dirs, &errors);
  if (watcher_ != nullptr) {
    for (const std::string& dir : dirs) watcher_->WatchDirectory(dir);
  }
  for (const GlobError& error : errors) {
    if (error.error == kNotRegularFile) {
      if (Excluded(options_.exclude, error.path)) continue;
      health_.Set(error.path, SourceHealth::Kind::kScan, ProblemReason(error.error, false),
                  ProblemDetail(error.error) + " (matched by " + pattern + ")", report_);
      continue;
    }
    health_.Set(error.path, SourceHealth::Kind::kScan, ProblemReason(error.error, true),
                "cannot list it (" + std::string(strerror(error.error)) + ") for " + pattern,
                report_);
  }
  size_t matched = 0;
  for (const std::string& path : files) {
    if (Excluded(options_.exclude, path)) continue;
    ++matched;
    auto it = streams_.find(path);
    if (it == streams_.end()) {
      OpenStream(path, initial, now_us);
    } else if (!it->second->current) {
      ServiceStream(*it->second, now_us);  // reappeared after a deletion
    }
  }
  matched_.emplace_back(pattern, matched);
  if (matched > 0) return;
  // A file of it being rotated (renamed away, not created again yet) is not
  // a glob matching nothing.
  for (const auto& [path, stream] : streams_) {
    if (stream->current && GlobMatch(pattern, path)) return;
  }
  health_.Set(pattern, SourceHealth::Kind::kScan, "no_match", "matches no file", report_);
}

void Tailer::Rescan(int64_t now_us) {
  bool initial = !scanned_;
  scanned_ = true;
  matched_.clear();
  health_.BeginScan();
  for (const std::string& pattern : options_.paths) ScanGlob(pattern, initial, now_us);
  health_.EndScan(report_);
  // A file that could not be opened and is no longer matched is forgotten.
  for (auto it = unreadable_at_start_.begin(); it != unreadable_at_start_.end();) {
    it = health_.Has(it->first) ? std::next(it) : unreadable_at_start_.erase(it);
  }
}

void Tailer::Poll(int64_t now_us) {
  more_ = false;
  for (auto& [path, stream] : streams_) ServiceStream(*stream, now_us);
}

void Tailer::HandleInotify(int64_t now_us) {
  if (watcher_ == nullptr) return;
  std::vector<InotifyWatcher::Event> events;
  bool complete = watcher_->Drain(&events);
  if (!complete) {
    Rescan(now_us);
    Poll(now_us);
    return;
  }
  bool rescan = false;
  std::vector<std::string> touched;
  for (const auto& event : events) {
    if (event.mask & (IN_CREATE | IN_MOVED_TO | IN_MOVED_FROM | IN_DELETE | IN_DELETE_SELF |
                      IN_MOVE_SELF | IN_ATTRIB)) {
      rescan = true;
    }
    auto it = by_watch_path_.find(event.path);
    if (it != by_watch_path_.end()) touched.push_back(it->second);
  }
  std::sort(touched.begin(), touched.end());
  touched.erase(std::unique(touched.begin(), touched.end()), touched.end());
  for (const std::string& path : touched) {
    auto it = streams_.find(path);
    if (it != streams_.end()) ServiceStream(*it->second, now_us);
  }
  if (rescan) Rescan(now_us);
}

void Tailer::ServiceStream(Stream& stream, int64_t now_us) {
  // Files waiting behind a restart's catch-up are not read yet, but their
  // heads are kept up to date, so a copytruncate of one (found by its head)
  // before the catch-up reaches it still finds its copy.
  for (const std::unique_ptr<OpenFile>& waiting : stream.queued) ExtendHead(*waiting);
  size_t budget = options_.max_read_per_call;
  for (int round = 0; round < 8; ++round) {
    OpenFile* file = stream.current.get();
    if (file == nullptr) {
      // Deleted or never opened: the path may have (re)appeared.
      auto next = OpenPath(stream.path);
      if (!next && last_open_error_ != ENOENT) {
        health_.Set(stream.path, SourceHealth::Kind::kRead, ProblemReason(last_open_error_, false),
                    ProblemDetail(last_open_error_), report_);
      }
      if (!next) {
        if (stream.end_pending && now_us - stream.ended_at_us >= options_.deleted_grace_us) {
          stream.end_pending = false;
          draining_.erase(stream.path);
          client_.OnEnded(stream.path);
        }
        return;
      }
      if (open_inodes_.count({next->identity.device, next->identity.inode})) return;
      health_.Clear(stream.path, report_);
      stream.end_pending = false;
      draining_.erase(stream.path);
      next->base_known = false;
      bool rotated = stream.seen_file;
      if (rotated) {
        ++stats_.rotations;
        events_.FileRotated();
      }
      SwitchTo(stream, std::move(next));
      if (rotated) client_.OnSwitched(stream.path, false, {});
      continue;
    }
    // 1. Truncation (copytruncate): checked before reading, so bytes written
    //    after the truncation are never read as the old file's continuation.
    struct stat st;
    if (::fstat(file->fd, &st) == 0) {
      uint64_t size = static_cast<uint64_t>(st.st_size);
      const int64_t mtime_ns = MtimeNs(st);
      const uint64_t size_before = file->last_size;
      const int64_t mtime_before = file->last_mtime_ns;
      const bool changed = size != size_before || mtime_ns != mtime_before;
      bool truncated = size < file->read_offset;
      // Written since the last check (a truncated file written back to the
      // same size changed its mtime): the head tells whether it is the same.
      if (!truncated && changed && file->identity.head_bytes > 0) {
        truncated = !SameHead(file->fd, file->identity, file->released);
      }
      // Empty when last seen, so no head to tell: filled and copytruncated
      // between two checks leaves a copy born since.
      std::unique_ptr<OpenFile> copy;
      if (!truncated && changed && file->identity.head_bytes == 0 && file->released == 0) {
        copy = FindNewCopy(stream.path, *file, mtime_before);
        truncated = copy != nullptr;
      }
      file->last_size = size;
      file->last_mtime_ns = mtime_ns;
      if (truncated) {
        ++stats_.truncations;
        events_.FileTruncated();
        const bool from_copy = ReadRestFromCopy(stream, std::move(copy));
        if (!from_copy) {
          if (size_before > file->read_offset) {
            Unread(stream, "truncated_unread", size_before - file->read_offset,
                   "truncated before it was read, no copy beside it");
          }
          EndLine(stream);
          file->base += file->read_offset;
          file->read_offset = 0;
          file->released = file->punched = 0;  // written anew from byte 0
          if (auto id = ReadIdentity(file->fd); id.ok()) file->identity = *id;
          Remember(stream, *file);
        }
        client_.OnSwitched(stream.path, true, from_copy ? stream.current->path : std::string());
        if (from_copy) continue;  // the copy is current now, the truncated file next
      } else if (ExtendHead(*file)) {
        Remember(stream, *file);
      }
    }
    if (!ReadFile(stream, *file, now_us, &budget)) {
      more_ = true;
      return;
    }
    // Queued successor (checkpoint resume): switch once this one is read.
    if (!stream.queued.empty()) {
      EndLine(stream);
      auto next = std::move(stream.queued.front());
      stream.queued.pop_front();
      SwitchTo(stream, std::move(next));
      continue;
    }
    // 2-4. What does the path name now?
    struct stat path_st;
    if (::stat(stream.path.c_str(), &path_st) == 0) {
      if (path_st.st_dev == file->identity.device && path_st.st_ino == file->identity.inode) break;
      auto next = OpenPath(stream.path);
      if (!next && last_open_error_ != ENOENT) {
        health_.Set(stream.path, SourceHealth::Kind::kRead, ProblemReason(last_open_error_, false),
                    ProblemDetail(last_open_error_) + " (a new file at the path)", report_);
      }
      if (!next) break;
      health_.Clear(stream.path, report_);
      draining_.erase(stream.path);                     // a deleted file read on: replaced
      if (!ReadFile(stream, *file, now_us, &budget)) {  // what was written before the switch
        more_ = true;
        return;
      }
      EndLine(stream);
      ++stats_.rotations;
      events_.FileRotated();
      next->base_known = false;
      SwitchTo(stream, std::move(next));
      WatchStream(stream);  // a swapped symlink may point into another directory
      client_.OnSwitched(stream.path, false, {});
      continue;
    }
    if (::fstat(file->fd, &st) == 0 && st.st_nlink == 0) {
      if (ReadOnDeleted(stream, *file, now_us)) break;
      ReadFile(stream, *file, now_us, &budget);
      EndLine(stream);
      stream.end_offset = file->EndOffset();
      open_inodes_.erase({file->identity.device, file->identity.inode});
      stream.current.reset();
      ++stats_.deletions;
      stream.end_pending = true;  // OnEnded() after the grace, unless the path reappears
      stream.ended_at_us = now_us;
      draining_[stream.path] = true;
      return;
    }
    break;  // renamed away; the new file is not there yet
  }
}

bool Tailer::ReadFile(Stream& stream, OpenFile& file, int64_t now_us, size_t* budget) {
  buffer_.resize(options_.read_chunk_bytes);
  while (true) {
    if (file.read_offset >= file.end_limit) return true;
    if (*budget == 0) return false;
    size_t want = std::min(buffer_.size(), *budget);
    want = static_cast<size_t>(std::min<uint64_t>(want, file.end_limit - file.read_offset));
    ssize_t n = ::pread(file.fd, buffer_.data(), want, static_cast<off_t>(file.read_offset));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && !file.read_failed) {
      file.read_failed = true;  // tried again at the next poll
      health_.Set(file.path, SourceHealth::Kind::kRead, "read_error",
                  "read at byte " + std::to_string(file.read_offset) + ": " + strerror(errno),
                  report_);
    }
    if (n <= 0) return true;
    if (file.read_failed) {
      file.read_failed = false;
      health_.Clear(file.path, report_);
    }
    file.grew_at_us = now_us;
    uint64_t at = file.read_offset;
    file.read_offset += static_cast<uint64_t>(n);
    *budget -= static_cast<size_t>(n);
    Deliver(stream, file, std::string_view(buffer_.data(), static_cast<size_t>(n)), at);
    // A short read reached the end as it was: what is written after it
    // wakes the watch again (or the next poll), without a read of 0 bytes.
    if (static_cast<size_t>(n) < want) return true;
  }
}

void Tailer::Deliver(Stream& stream, OpenFile& file, std::string_view bytes, uint64_t at) {
  stats_.bytes += bytes.size();
  client_.OnBytes(stream.path, bytes, file.base + at);
}

void Tailer::EndLine(Stream& stream) { client_.OnLineEnd(stream.path); }

std::vector<FilePiece> Tailer::PiecesFor(const std::string& stream, uint64_t offset) const {
  auto it = streams_.find(stream);
  if (it == streams_.end()) return {};
  const auto& history = it->second->history;
  std::vector<FilePiece> out;
  for (size_t i = 0; i < history.size(); ++i) {
    uint64_t end = i + 1 < history.size() ? history[i + 1].base : UINT64_MAX;
    if (end > offset || i + 1 == history.size()) out.push_back(history[i]);
  }
  return out;
}

uint64_t Tailer::NextOffset(const std::string& stream) const {
  auto it = streams_.find(stream);
  if (it == streams_.end()) return 0;
  const Stream& s = *it->second;
  return s.current ? s.current->EndOffset() : s.end_offset;
}

bool Tailer::ReadOnDeleted(Stream& stream, OpenFile& file, int64_t now_us) {
  const bool first = !file.deleted;
  if (first) {
    file.deleted = true;
    file.grew_at_us = now_us;  // the grace without leases counts from here
    draining_[stream.path] = true;
    if (file.write_fd >= 0) {  // our own (Release) would count as a writer
      ::close(file.write_fd);
      file.write_fd = -1;
    }
  }
  bool read_on = false;
  switch (OpenForWriting(file.fd)) {
    case Writers::kSome:
      read_on = true;
      break;
    case Writers::kUnknown:
      read_on = now_us - file.grew_at_us < options_.deleted_grace_us;
      break;
    case Writers::kNone:
      break;
  }
  if (read_on && !file.read_on) {
    file.read_on = true;
    ++stats_.deleted_read_on;
  }
  if (first) client_.OnDeleted(stream.path, read_on);
  return read_on;
}

void Tailer::Unread(Stream& stream, std::string_view reason, uint64_t bytes,
                    const std::string& detail) {
  stats_.bytes_unread += bytes;
  client_.OnUnread(stream.path, reason, bytes, detail);
}

size_t Tailer::OpenFiles() const {
  size_t open = 0;
  for (const auto& [path, stream] : streams_) open += stream->current != nullptr;
  return open;
}

namespace {

// What of `file` is on disk and not read yet.
uint64_t UnreadBytes(int fd, uint64_t read_offset, uint64_t end_limit) {
  struct stat st;
  if (::fstat(fd, &st) != 0) return 0;
  const uint64_t size = std::min(static_cast<uint64_t>(st.st_size), end_limit);
  // Shrunk below what was read: truncated, and the next poll reads it from byte 0.
  return size < read_offset ? size : size - read_offset;
}

}  // namespace

std::vector<std::pair<std::string, uint64_t>> Tailer::Lags() const {
  std::vector<std::pair<std::string, uint64_t>> out;
  for (const auto& [path, stream] : streams_) {
    const OpenFile* file = stream->current.get();
    if (file == nullptr) continue;
    uint64_t lag = UnreadBytes(file->fd, file->read_offset, file->end_limit);
    for (const std::unique_ptr<OpenFile>& waiting : stream->queued) {
      lag += UnreadBytes(waiting->fd, waiting->read_offset, waiting->end_limit);
    }
    // A file at the path that is none of these: rotated in, not switched to yet.
    struct stat st;
    if (::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode) &&
        !open_inodes_.count({st.st_dev, st.st_ino})) {
      bool queued = false;
      for (const std::unique_ptr<OpenFile>& waiting : stream->queued) {
        queued = queued || (waiting->identity.device == static_cast<uint64_t>(st.st_dev) &&
                            waiting->identity.inode == static_cast<uint64_t>(st.st_ino));
      }
      if (!queued) lag += static_cast<uint64_t>(st.st_size);
    }
    out.emplace_back(path, lag);
  }
  return out;
}

std::vector<std::string> Tailer::Streams() const {
  std::vector<std::string> out;
  for (const auto& [path, stream] : streams_) out.push_back(path);
  return out;
}

}  // namespace fingerprintd::source
