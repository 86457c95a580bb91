// Tailer: releasing the disk blocks of what was read (release_read_bytes;
// tailer.h, "Released heads").
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>

#include "source/tailer_internal.h"

namespace fingerprintd::source {

uint64_t Tailer::AllowRelease(const std::string& name, uint64_t offset) {
  auto it = streams_.find(name);
  // A stream still catching up on older pieces: those are the rotator's.
  if (it == streams_.end() || !it->second->current || !it->second->queued.empty()) return 0;
  Stream& stream = *it->second;
  OpenFile& file = *stream.current;
  const uint64_t limit = std::min(offset, file.EndOffset());
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
  // A deleted file read on: a write descriptor of ours would keep it "written".
  if (file.release_refused || file.deleted || ::fstat(file.fd, &st) != 0) return result;
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

}  // namespace fingerprintd::source
