// File identity: see file_identity.h.
#include "source/file_identity.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/vfs.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "common/hash.h"

namespace fingerprintd::source {

namespace {

int64_t Nanos(int64_t sec, int64_t nsec) { return sec * 1'000'000'000 + nsec; }

int64_t BirthOf(const struct statx& stx) {
  if (stx.stx_mask & STATX_BTIME) return Nanos(stx.stx_btime.tv_sec, stx.stx_btime.tv_nsec);
  if (stx.stx_mask & STATX_CTIME) return Nanos(stx.stx_ctime.tv_sec, stx.stx_ctime.tv_nsec);
  return 0;
}

}  // namespace

uint64_t HeadHash(std::string_view bytes) {
  Fnv1a64Hasher hasher;
  hasher.AddBytes(bytes);
  return hasher.value();
}

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

bool HeadMatches(std::string_view head, const FileIdentity& identity) {
  return head.size() == identity.head_bytes && HeadHash(head) == identity.head_hash;
}

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
  id.head_hash = HeadHash(head);
  return id;
}

bool IsSameFile(int fd, const FileIdentity& identity, uint64_t released) {
  struct stat st;
  if (::fstat(fd, &st) != 0) return false;
  if (st.st_dev != identity.device || st.st_ino != identity.inode) return false;
  return SameHead(fd, identity, released);
}

bool SameHead(int fd, const FileIdentity& identity, uint64_t released) {
  if (identity.head_bytes == 0) return true;
  std::string head;
  if (!ReadHead(fd, identity.head_bytes, &head)) return false;
  if (head.size() != identity.head_bytes) return false;
  if (HeadHash(head) == identity.head_hash) return true;
  // Released (tailer.h): the head is a hole now, zeros as far as it goes.
  return released > 0 && head.find_first_not_of('\0') == std::string::npos;
}

int InflateIfHeadMatches(const std::string& path, const FileIdentity& identity,
                         uint64_t max_bytes) {
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
    ok = got > 0 && total <= max_bytes &&
         ::write(fd, buffer.data(), static_cast<size_t>(got)) == got;
  }
  ::gzclose(gz);
  if (!ok) {
    if (fd >= 0) ::close(fd);
    return -1;
  }
  return fd;
}

int64_t MtimeNs(const struct stat& st) { return Nanos(st.st_mtim.tv_sec, st.st_mtim.tv_nsec); }

int64_t BirthTimeNs(int fd) {
  struct statx stx;
  if (::statx(fd, "", AT_EMPTY_PATH, STATX_BTIME | STATX_CTIME, &stx) != 0) return 0;
  return BirthOf(stx);
}

int64_t BirthTimeNs(const std::string& path) {
  struct statx stx;
  if (::statx(AT_FDCWD, path.c_str(), 0, STATX_BTIME | STATX_CTIME, &stx) != 0) return 0;
  return BirthOf(stx);
}

Writers OpenForWriting(int fd) {
  // Were the lease broken in the instant it is held, the kernel would signal
  // its owner (this process); SIGURG is ignored unless handled, unlike SIGIO.
  ::fcntl(fd, F_SETSIG, SIGURG);
  if (::fcntl(fd, F_SETLEASE, F_RDLCK) == 0) {
    ::fcntl(fd, F_SETLEASE, F_UNLCK);
    return Writers::kNone;
  }
  return errno == EAGAIN || errno == EBUSY ? Writers::kSome : Writers::kUnknown;
}

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

}  // namespace fingerprintd::source
