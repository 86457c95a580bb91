// Tailer: finding a stream's files again (tailer.h, "Where reading starts"
// and step 1): a checkpoint's pieces by identity or by head among the path's
// siblings (gzipped ones inflated), and the copy of a copytruncate.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>

#include "source/tailer_internal.h"

namespace fingerprintd::source {

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
      int fd = InflateIfHeadMatches(candidate, identity, kMaxInflatedBytes);
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

std::unique_ptr<Tailer::OpenFile> Tailer::FindNewCopy(const std::string& path, const OpenFile& file,
                                                      int64_t since_ns) {
  const std::string name = std::filesystem::path(path).filename().string();
  std::string now_head;
  if (!ReadHead(file.fd, kHeadBytes, &now_head)) return nullptr;
  std::error_code ec;
  for (std::filesystem::directory_iterator it(DirName(path), ec), end; !ec && it != end;
       it.increment(ec)) {
    const std::string candidate = it->path().filename().string();
    if (candidate.size() <= name.size() + 1 || !candidate.starts_with(name) ||
        (candidate[name.size()] != '.' && candidate[name.size()] != '-') ||
        candidate.ends_with(".gz")) {
      continue;
    }
    auto copy = OpenPath(it->path().string());
    if (!copy || copy->last_size <= file.read_offset) continue;
    const std::pair<uint64_t, uint64_t> inode{copy->identity.device, copy->identity.inode};
    if (open_inodes_.count(inode) || retired_.count(inode)) continue;
    // Born after the file was last seen changing (strictly: a copy of an
    // earlier copytruncate is born before the truncation that followed it).
    if (BirthTimeNs(copy->fd) <= since_ns) continue;
    std::string head;
    if (!ReadHead(copy->fd, kHeadBytes, &head)) continue;
    if (!now_head.starts_with(head)) return copy;  // not what the file holds now: its past
  }
  return nullptr;
}

bool Tailer::ReadRestFromCopy(Stream& stream, std::unique_ptr<OpenFile> copy) {
  OpenFile& truncated = *stream.current;
  if (!copy) copy = FindByHead(stream.path, truncated.identity, truncated.read_offset);
  if (!copy) return false;
  // The copy takes the truncated file's place at the same stream offsets
  // (the line being read runs on in it); it is read to the size it had when
  // found.
  copy->base = truncated.base;
  copy->read_offset = truncated.read_offset;
  copy->end_limit = copy->last_size;
  // The truncated file follows it from byte 0, where the copy ends.
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
      // Lost for good: what of it was never read (what was, the restart only
      // reads again for the pipeline's state).
      const uint64_t from = std::max({checkpoint.offset, pieces[i].base, checkpoint.read});
      if (end != UINT64_MAX && end > from) {
        Unread(stream, "deleted_unread", end - from,
               "a file of the stream (stream offsets " + std::to_string(from) + " to " +
                   std::to_string(end) + ") was deleted before it was read");
      }
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

}  // namespace fingerprintd::source
