// Tailer: see tailer.h for the rotation/truncation rules and their order.
#include "source/tailer.h"

#include <fcntl.h>
#include <limits.h>
#include <sys/inotify.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <deque>
#include <filesystem>

#include "source/glob.h"
#include "source/inotify_watcher.h"

namespace fingerprintd::source {

namespace {

// Pieces remembered per stream for checkpoints. A checkpoint's safe offset
// may lag a rule's maxspan (30 min) behind what was read (tailer.h), so it
// must still name the piece holding it after many rotations.
constexpr size_t kMaxHistory = 64;
// A gzipped piece is inflated into memory to be read from its checkpoint
// offset; a larger one is not used (counted as missing).
constexpr uint64_t kMaxInflatedBytes = 256ull << 20;

uint64_t Fnv1a(std::string_view bytes) {
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : bytes) {
    h ^= c;
    h *= 1099511628211ull;
  }
  return h;
}

// Reads up to `n` bytes at offset 0; short on a shorter file.
bool ReadHead(int fd, size_t n, std::string* out) {
  out->resize(n);
  size_t got = 0;
  while (got < n) {
    ssize_t r = ::pread(fd, out->data() + got, n - got, static_cast<off_t>(got));
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) return false;
    if (r == 0) break;
    got += static_cast<size_t>(r);
  }
  out->resize(got);
  return true;
}

std::string DirName(const std::string& path) {
  std::string dir = std::filesystem::path(path).parent_path().string();
  return dir.empty() ? "." : dir;
}

bool HeadMatches(std::string_view head, const FileIdentity& identity) {
  return head.size() == identity.head_bytes && Fnv1a(head) == identity.head_hash;
}

// Inflates the gzip file `path` into an anonymous memory file when its first
// `identity.head_bytes` inflated bytes are the identity's head; -1 otherwise.
int InflateIfHeadMatches(const std::string& path, const FileIdentity& identity) {
  gzFile gz = ::gzopen(path.c_str(), "rb");
  if (gz == nullptr) return -1;
  std::string head(identity.head_bytes, '\0');
  int n = ::gzread(gz, head.data(), static_cast<unsigned>(head.size()));
  if (n < 0 || !HeadMatches(std::string_view(head.data(), static_cast<size_t>(n)), identity)) {
    ::gzclose(gz);
    return -1;
  }
  int fd = ::memfd_create("fingerprintd-gz-piece", MFD_CLOEXEC);
  bool ok = fd >= 0 && ::write(fd, head.data(), static_cast<size_t>(n)) == n;
  uint64_t total = static_cast<uint64_t>(n);
  std::string buffer(256 << 10, '\0');
  while (ok) {
    int got = ::gzread(gz, buffer.data(), static_cast<unsigned>(buffer.size()));
    if (got == 0) break;
    total += static_cast<uint64_t>(std::max(got, 0));
    ok = got > 0 && total <= kMaxInflatedBytes &&
         ::write(fd, buffer.data(), static_cast<size_t>(got)) == got;
  }
  ::gzclose(gz);
  if (!ok) {
    if (fd >= 0) ::close(fd);
    return -1;
  }
  return fd;
}

int64_t MtimeNs(const struct stat& st) {
  return static_cast<int64_t>(st.st_mtim.tv_sec) * 1'000'000'000 + st.st_mtim.tv_nsec;
}

// For errors: the file system type of an open file, by name when common.
std::string FileSystemName(int fd) {
  struct statfs fs;
  if (::fstatfs(fd, &fs) != 0) return "unknown";
  switch (static_cast<uint64_t>(fs.f_type)) {
    case 0xEF53:
      return "ext4";
    case 0x58465342:
      return "xfs";
    case 0x9123683E:
      return "btrfs";
    case 0x01021994:
      return "tmpfs";
    case 0x794C7630:
      return "overlayfs";
    case 0x6969:
      return "nfs";
    case 0x65735546:
      return "fuse";
    default:
      break;
  }
  char hex[32];
  snprintf(hex, sizeof(hex), "type 0x%llx", static_cast<unsigned long long>(fs.f_type));
  return hex;
}

std::string RealPath(const std::string& path) {
  char buf[PATH_MAX];
  if (::realpath(path.c_str(), buf) == nullptr) return path;
  return buf;
}

}  // namespace

StatusOr<FileIdentity> ReadIdentity(int fd) {
  struct stat st;
  if (::fstat(fd, &st) != 0) return DataLossError(std::string("fstat: ") + strerror(errno));
  FileIdentity id;
  id.device = st.st_dev;
  id.inode = st.st_ino;
  std::string head;
  size_t want =
      std::min<uint64_t>(static_cast<uint64_t>(std::max<off_t>(st.st_size, 0)), kHeadBytes);
  if (!ReadHead(fd, want, &head)) return DataLossError(std::string("read: ") + strerror(errno));
  id.head_bytes = static_cast<uint32_t>(head.size());
  id.head_hash = Fnv1a(head);
  return id;
}

bool IsSameFile(int fd, const FileIdentity& identity, uint64_t released) {
  struct stat st;
  if (::fstat(fd, &st) != 0) return false;
  if (st.st_dev != identity.device || st.st_ino != identity.inode) return false;
  if (identity.head_bytes == 0) return true;
  std::string head;
  if (!ReadHead(fd, identity.head_bytes, &head)) return false;
  if (head.size() != identity.head_bytes) return false;
  if (Fnv1a(head) == identity.head_hash) return true;
  // Released (tailer.h): the head is a hole now, zeros as far as it goes.
  return released > 0 && head.find_first_not_of('\0') == std::string::npos;
}

struct Tailer::OpenFile {
  int fd = -1;
  std::string path;  // as opened (a gzipped piece: the .gz)
  FileIdentity identity;
  uint64_t base = 0;         // stream offset of byte 0
  bool base_known = true;    // false: set when switched to (base = previous end)
  uint64_t read_offset = 0;  // file offset read up to
  // File offset where a checkpoint's piece ended when it was switched away
  // from (its successor's base): a resumed piece is read up to there only.
  uint64_t end_limit = UINT64_MAX;
  // File offset below which blocks may be released (AllowRelease), and up
  // to which they were (block-aligned, <= released); see tailer.h.
  uint64_t released = 0;
  uint64_t punched = 0;
  int write_fd = -1;             // opened for the first Release()
  bool release_refused = false;  // Release() failed for good; reported once
  uint64_t last_size = 0;        // size at the last check
  int64_t last_mtime_ns = 0;     // modification time at the last check
  // The line being assembled: bytes since its start, up to the cap.
  std::string partial;
  uint64_t line_start = 0;  // file offset of its first byte
  bool in_line = false;     // a line has started and has not ended
  bool skipping = false;    // its head was delivered at the cap; drop to '\n'
  int64_t line_since_us = 0;

  ~OpenFile() {
    if (fd >= 0) ::close(fd);
    if (write_fd >= 0) ::close(write_fd);
  }
  // Stream offset where the next line starts.
  uint64_t ConsumedOffset() const { return base + (in_line ? line_start : read_offset); }
  uint64_t EndOffset() const { return base + read_offset; }
};

struct Tailer::Stream {
  std::string path;
  std::string target;                            // realpath when opened
  std::unique_ptr<OpenFile> current;             // being read
  std::deque<std::unique_ptr<OpenFile>> queued;  // successors (checkpoint resume)
  std::vector<FilePiece> history;                // recent pieces, oldest first
  uint64_t end_offset = 0;                       // stream offset where the next file continues
  bool seen_file = false;                        // a file was open for this stream since start
};

Tailer::Tailer(TailerOptions options, PipelineEvents& events, TailerClient& client)
    : options_(std::move(options)), events_(events), client_(client) {
  for (std::string& path : options_.paths) {
    if (!path.empty() && path[0] != '/' && path != "-") {
      path = (std::filesystem::current_path() / path).lexically_normal().string();
    }
  }
}

Tailer::~Tailer() = default;

void Tailer::SetWatcher(InotifyWatcher* watcher) { watcher_ = watcher; }

std::unique_ptr<Tailer::OpenFile> Tailer::OpenPath(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    if (errno != ENOENT) ++stats_.open_errors;
    return nullptr;
  }
  auto file = std::make_unique<OpenFile>();
  file->fd = fd;
  file->path = path;
  struct stat st;
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ++stats_.open_errors;
    return nullptr;
  }
  auto id = ReadIdentity(fd);
  if (!id.ok()) {
    ++stats_.open_errors;
    return nullptr;
  }
  file->identity = *id;
  file->last_size = static_cast<uint64_t>(st.st_size);
  file->last_mtime_ns = MtimeNs(st);
  return file;
}

std::unique_ptr<Tailer::OpenFile> Tailer::FindPiece(const std::string& path,
                                                    const FilePiece& piece) {
  const FileIdentity& identity = piece.identity;
  if (auto file = OpenPath(path); file && IsSameFile(file->fd, identity, piece.released)) {
    return file;
  }
  // Renamed by a rotation: look among the files of its directory (and of its
  // symlink target's), matching device + inode first, then the head.
  for (const std::string& dir : {DirName(path), DirName(RealPath(path))}) {
    std::error_code ec;
    for (std::filesystem::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
      std::string candidate = it->path().string();
      struct stat st;
      if (::stat(candidate.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) continue;
      if (st.st_dev != identity.device || st.st_ino != identity.inode) continue;
      auto file = OpenPath(candidate);
      if (file && IsSameFile(file->fd, identity, piece.released)) return file;
    }
  }
  return FindByHead(path, identity);
}

std::unique_ptr<Tailer::OpenFile> Tailer::FindByHead(const std::string& path,
                                                     const FileIdentity& identity,
                                                     uint64_t min_size) {
  if (identity.head_bytes == 0) return nullptr;  // nothing to recognise it by
  const std::string name = std::filesystem::path(path).filename().string();
  std::error_code ec;
  std::vector<std::string> candidates;
  for (std::filesystem::directory_iterator it(DirName(path), ec), end; !ec && it != end;
       it.increment(ec)) {
    // `0.log.1`, `0.log.20260104-143410.gz` (kubelet, logrotate), `0.log-20260104` (dateext)
    const std::string candidate = it->path().filename().string();
    if (candidate.size() > name.size() + 1 && candidate.starts_with(name) &&
        (candidate[name.size()] == '.' || candidate[name.size()] == '-')) {
      candidates.push_back(it->path().string());
    }
  }
  std::sort(candidates.begin(), candidates.end());
  for (const std::string& candidate : candidates) {
    struct stat st;
    if (::stat(candidate.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) continue;
    if (candidate.ends_with(".gz")) {
      int fd = InflateIfHeadMatches(candidate, identity);
      if (fd < 0) continue;
      auto file = std::make_unique<OpenFile>();
      file->fd = fd;
      file->path = candidate;
      auto id = ReadIdentity(fd);
      if (!id.ok()) continue;
      file->identity = *id;
      file->last_size = static_cast<uint64_t>(::lseek(fd, 0, SEEK_END));
      if (file->last_size < min_size) continue;
      return file;
    }
    auto file = OpenPath(candidate);
    if (!file || file->last_size < min_size) continue;
    if (open_inodes_.count({file->identity.device, file->identity.inode})) continue;
    std::string head;
    if (ReadHead(file->fd, identity.head_bytes, &head) && HeadMatches(head, identity)) return file;
  }
  return nullptr;
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

bool Tailer::ReadRestFromCopy(Stream& stream) {
  OpenFile& truncated = *stream.current;
  std::unique_ptr<OpenFile> copy =
      FindByHead(stream.path, truncated.identity, truncated.read_offset);
  if (!copy) return false;
  // The copy takes the truncated file's place at the same stream offsets,
  // with the line being assembled; it is read to the size it had when found.
  copy->base = truncated.base;
  copy->read_offset = truncated.read_offset;
  copy->end_limit = copy->last_size;
  copy->partial = std::move(truncated.partial);
  copy->line_start = truncated.line_start;
  copy->in_line = truncated.in_line;
  copy->skipping = truncated.skipping;
  copy->line_since_us = truncated.line_since_us;
  // The truncated file follows it from byte 0, where the copy ends.
  truncated.partial.clear();
  truncated.in_line = false;
  truncated.skipping = false;
  truncated.read_offset = 0;
  truncated.released = truncated.punched = 0;  // written anew from byte 0
  truncated.base_known = false;
  if (auto id = ReadIdentity(truncated.fd); id.ok()) truncated.identity = *id;
  open_inodes_[{copy->identity.device, copy->identity.inode}] = stream.path;
  stream.queued.push_front(std::move(stream.current));
  stream.current = std::move(copy);
  Remember(stream, *stream.current);
  return true;
}

void Tailer::Resume(Stream& stream, const StreamCheckpoint& checkpoint) {
  const auto& pieces = checkpoint.pieces;
  for (size_t i = 0; i < pieces.size(); ++i) {
    uint64_t end = i + 1 < pieces.size() ? pieces[i + 1].base : UINT64_MAX;
    if (end <= checkpoint.offset) continue;  // wholly consumed before the cut
    auto file = FindPiece(stream.path, pieces[i]);
    if (!file) {
      ++stats_.checkpoint_pieces_missing;
      continue;
    }
    file->base = pieces[i].base;
    file->read_offset = checkpoint.offset > file->base ? checkpoint.offset - file->base : 0;
    // Released past the safe offset: what lies below reads as zeros.
    file->released = pieces[i].released;  // `punched`: found by the first Release()
    file->read_offset = std::max(file->read_offset, file->released);
    if (i + 1 < pieces.size()) file->end_limit = end - file->base;
    stream.queued.push_back(std::move(file));
  }
  // The file now at the path follows, unless it is the last piece found.
  auto at_path = OpenPath(stream.path);
  if (at_path) {
    bool known = !stream.queued.empty() &&
                 stream.queued.back()->identity.device == at_path->identity.device &&
                 stream.queued.back()->identity.inode == at_path->identity.inode;
    if (!known) {
      at_path->base_known = !stream.queued.empty() ? false : true;
      if (stream.queued.empty()) {
        at_path->base =
            std::max(checkpoint.offset, pieces.empty() ? uint64_t{0} : pieces.back().base);
      }
      stream.queued.push_back(std::move(at_path));
    }
  }
  stream.end_offset = checkpoint.offset;
  if (!stream.queued.empty()) {
    auto first = std::move(stream.queued.front());
    stream.queued.pop_front();
    SwitchTo(stream, std::move(first));
  }
}

void Tailer::OpenStream(const std::string& path, bool initial, int64_t now_us) {
  if (streams_.size() >= options_.max_files) {
    ++stats_.files_over_cap;
    return;
  }
  struct stat st;
  if (::stat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) return;
  if (open_inodes_.count({st.st_dev, st.st_ino})) return;  // open under another name
  if (auto it = retired_.find({st.st_dev, st.st_ino}); it != retired_.end()) {
    auto file = OpenPath(path);
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
  // Opened before the client hears of the stream: a file renamed away right
  // after OnOpen() (a rotation racing the first open) is still the one read,
  // and step 2 of the poll then finds its successor at the path.
  std::unique_ptr<OpenFile> file = OpenPath(path);
  if (std::optional<StreamCheckpoint> checkpoint = client_.OnOpen(path)) {
    Resume(s, *checkpoint);
  } else if (file) {
    bool at_end = (initial && options_.start_at_end) || ignored_.count(path);
    file->read_offset = at_end ? file->last_size : 0;
    file->base = 0;
    SwitchTo(s, std::move(file));
  }
  ignored_.erase(path);
  ServiceStream(s, now_us);
}

void Tailer::Rescan(int64_t now_us) {
  bool initial = !scanned_;
  scanned_ = true;
  std::vector<std::string> files, dirs;
  for (const std::string& pattern : options_.paths) {
    ExpandGlobAndDirectories(pattern, &files, &dirs);
    if (watcher_ != nullptr) {
      for (const std::string& dir : dirs) watcher_->WatchDirectory(dir);
    }
    for (const std::string& path : files) {
      if (Excluded(options_.exclude, path)) continue;
      auto it = streams_.find(path);
      if (it == streams_.end()) {
        OpenStream(path, initial, now_us);
      } else if (!it->second->current) {
        ServiceStream(*it->second, now_us);  // reappeared after a deletion
      }
    }
  }
}

void Tailer::Poll(int64_t now_us) {
  more_ = false;
  for (auto& [path, stream] : streams_) ServiceStream(*stream, now_us);
}

void Tailer::Tick(int64_t now_us) {
  // Nothing can be due before the oldest partial line started: most ticks
  // of an idle daemon stop here instead of visiting every stream.
  if (now_us - earliest_partial_us_ < options_.partial_line_timeout_us) return;
  earliest_partial_us_ = INT64_MAX;
  for (auto& [path, stream] : streams_) {
    OpenFile* file = stream->current.get();
    if (!file || !file->in_line || file->skipping) continue;
    if (now_us - file->line_since_us >= options_.partial_line_timeout_us) {
      ++stats_.partial_lines_flushed;
      FlushPartial(*stream, *file);
    } else {
      earliest_partial_us_ = std::min(earliest_partial_us_, file->line_since_us);
    }
  }
}

void Tailer::HandleInotify(int64_t now_us) {
  if (watcher_ == nullptr) return;
  std::vector<InotifyWatcher::Event> events;
  bool complete = watcher_->Drain(&events);
  more_ = false;
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
      if (!next) return;
      if (open_inodes_.count({next->identity.device, next->identity.inode})) return;
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
      bool truncated = size < file->read_offset;
      // Written since the last check (a truncated file written back to the
      // same size changed its mtime): the head tells whether it is the same.
      if (!truncated && (size != file->last_size || mtime_ns != file->last_mtime_ns) &&
          file->identity.head_bytes > 0) {
        truncated = !IsSameFile(file->fd, file->identity, file->released);
      }
      file->last_size = size;
      file->last_mtime_ns = mtime_ns;
      if (truncated) {
        ++stats_.truncations;
        events_.FileTruncated();
        const bool from_copy = ReadRestFromCopy(stream);
        if (!from_copy) {
          FlushPartial(stream, *file);
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
      FlushPartial(stream, *file);
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
      if (!next) break;
      if (!ReadFile(stream, *file, now_us, &budget)) {  // what was written before the switch
        more_ = true;
        return;
      }
      FlushPartial(stream, *file);
      ++stats_.rotations;
      events_.FileRotated();
      next->base_known = false;
      SwitchTo(stream, std::move(next));
      WatchStream(stream);  // a swapped symlink may point into another directory
      client_.OnSwitched(stream.path, false, {});
      continue;
    }
    if (::fstat(file->fd, &st) == 0 && st.st_nlink == 0) {
      ReadFile(stream, *file, now_us, &budget);
      FlushPartial(stream, *file);
      stream.end_offset = file->EndOffset();
      open_inodes_.erase({file->identity.device, file->identity.inode});
      stream.current.reset();
      ++stats_.deletions;
      client_.OnEnded(stream.path);
      return;
    }
    break;  // renamed away; the new file is not there yet
  }
  OpenFile* file = stream.current.get();
  if (file && file->in_line && !file->skipping &&
      now_us - file->line_since_us >= options_.partial_line_timeout_us) {
    ++stats_.partial_lines_flushed;
    FlushPartial(stream, *file);
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
    if (n <= 0) return true;
    uint64_t at = file.read_offset;
    file.read_offset += static_cast<uint64_t>(n);
    *budget -= static_cast<size_t>(n);
    Deliver(stream, file, std::string_view(buffer_.data(), static_cast<size_t>(n)), at, now_us);
  }
}

void Tailer::Emit(Stream& stream, std::string_view line, uint64_t offset) {
  ++stats_.lines;
  stats_.bytes += line.size() + 1;
  client_.OnLine(stream.path, line, offset);
}

void Tailer::Deliver(Stream& stream, OpenFile& file, std::string_view bytes, uint64_t at,
                     int64_t now_us) {
  const size_t cap = options_.max_line_bytes;
  size_t pos = 0;
  while (pos < bytes.size()) {
    size_t nl = bytes.find('\n', pos);
    size_t stop = nl == std::string_view::npos ? bytes.size() : nl;
    std::string_view piece = bytes.substr(pos, stop - pos);
    if (!file.in_line) {
      file.in_line = true;
      file.line_start = at + pos;
      file.line_since_us = now_us;
    }
    if (!file.skipping) {
      if (file.partial.empty() && nl != std::string_view::npos && piece.size() <= cap) {
        Emit(stream, piece, file.base + file.line_start);  // common case: no copy
      } else {
        size_t room = cap - file.partial.size();
        file.partial.append(piece.substr(0, std::min(room, piece.size())));
        if (piece.size() > room) {
          // Over the cap: deliver the head now, drop the rest up to '\n'.
          ++stats_.lines_truncated;
          events_.LineDropped(DropReason::kLineTooLong);
          Emit(stream, file.partial, file.base + file.line_start);
          file.partial.clear();
          file.skipping = true;
        } else if (nl != std::string_view::npos) {
          Emit(stream, file.partial, file.base + file.line_start);
          file.partial.clear();
        }
      }
    }
    if (nl == std::string_view::npos) {
      if (!file.skipping) earliest_partial_us_ = std::min(earliest_partial_us_, file.line_since_us);
      break;
    }
    file.in_line = false;
    file.skipping = false;
    pos = nl + 1;
  }
}

void Tailer::FlushPartial(Stream& stream, OpenFile& file) {
  if (!file.in_line) return;
  if (!file.skipping) Emit(stream, file.partial, file.base + file.line_start);
  file.partial.clear();
  file.in_line = false;
  file.skipping = false;
}

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
  return s.current ? s.current->ConsumedOffset() : s.end_offset;
}

uint64_t Tailer::AllowRelease(const std::string& name, uint64_t offset) {
  auto it = streams_.find(name);
  // A stream still catching up on older pieces: those are the rotator's.
  if (it == streams_.end() || !it->second->current || !it->second->queued.empty()) return 0;
  Stream& stream = *it->second;
  OpenFile& file = *stream.current;
  const uint64_t limit = std::min(offset, file.ConsumedOffset());
  if (limit > file.base && limit - file.base > file.released) {
    file.released = limit - file.base;
    Remember(stream, file);
  }
  return file.base + file.released;
}

StatusOr<ReleaseResult> Tailer::Release(const std::string& name) {
  ReleaseResult result;
  auto it = streams_.find(name);
  if (it == streams_.end() || !it->second->current) return result;
  OpenFile& file = *it->second->current;
  result.path = file.path;
  struct stat st;
  if (file.release_refused || ::fstat(file.fd, &st) != 0) return result;
  const uint64_t block = st.st_blksize > 0 ? static_cast<uint64_t>(st.st_blksize) : 4096;
  const uint64_t end = file.released / block * block;
  if (end > file.punched && file.write_fd < 0) {
    // The inode already open, whatever its path names now (a rename, a swap).
    const std::string self = "/proc/self/fd/" + std::to_string(file.fd);
    file.write_fd = ::open(self.c_str(), O_WRONLY | O_CLOEXEC | O_NOCTTY);
    if (file.write_fd < 0) {
      file.release_refused = true;
      return FailedPreconditionError(file.path + ": cannot release read bytes: not writable (" +
                                     strerror(errno) + ")");
    }
    // Released before a restart: the head is a hole up to where data starts.
    off_t data = ::lseek(file.fd, 0, SEEK_DATA);
    if (data < 0 && errno == ENXIO) data = static_cast<off_t>(end);
    if (data > 0) file.punched = std::min(static_cast<uint64_t>(data) / block * block, end);
  }
  if (end > file.punched) {
    int r;
    do {
      r = ::fallocate(file.write_fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
                      static_cast<off_t>(file.punched), static_cast<off_t>(end - file.punched));
    } while (r != 0 && errno == EINTR);
    if (r != 0) {
      const int error = errno;
      std::string reason = std::string("fallocate(PUNCH_HOLE): ") + strerror(error);
      if (error == EOPNOTSUPP || error == ENOSYS) {
        reason =
            "its file system (" + FileSystemName(file.fd) + ") cannot punch holes (" + reason + ")";
      }
      // Anything but a transient failure will not go away by trying again.
      file.release_refused = error != EINTR && error != EIO && error != EAGAIN;
      return FailedPreconditionError(file.path + ": cannot release read bytes: " + reason);
    }
    result.released_bytes = end - file.punched;
    file.punched = end;
    if (::fstat(file.fd, &st) != 0) return result;
  }
  result.allocated_bytes = static_cast<uint64_t>(st.st_blocks) * 512;
  return result;
}

std::vector<std::string> Tailer::Streams() const {
  std::vector<std::string> out;
  for (const auto& [path, stream] : streams_) out.push_back(path);
  return out;
}

}  // namespace fingerprintd::source
