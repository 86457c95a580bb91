// File identity and the facts about one open file the tailer (tailer.h) goes
// by: which file it is, when it was born, whether anyone may still write it.
//
//   StatusOr<FileIdentity> id = ReadIdentity(fd);
//   if (IsSameFile(fd, checkpointed.identity)) ...   // a checkpoint's piece found
//
// Identity (inode reuse): device + inode + a 64-bit FNV-1a hash of the file's
// first min(size, kHeadBytes) bytes (common/hash.h), with the length hashed.
// Two identities are the same file when device and inode are equal and the
// shorter head is a prefix of the other's file (checked by re-hashing the
// file on disk over the recorded length). A file shorter than kHeadBytes is
// thus identified by what it holds so far (an empty file by device + inode
// only), and its identity is extended as it grows. A head released by
// release_read_bytes reads as zeros, which IsSameFile accepts when told.
//
// Threading: pure functions over file descriptors.
#pragma once

#include <sys/stat.h>

#include <cstdint>
#include <string>
#include <string_view>

#include "fingerprintd/status.h"

namespace fingerprintd::source {

inline constexpr size_t kHeadBytes = 1024;

struct FileIdentity {
  uint64_t device = 0;
  uint64_t inode = 0;
  uint32_t head_bytes = 0;  // bytes hashed: min(size, kHeadBytes) when taken
  uint64_t head_hash = 0;   // FNV-1a 64 of those bytes
  bool operator==(const FileIdentity&) const = default;
};

// Reads the identity of an open file, hashing min(size, kHeadBytes) bytes.
StatusOr<FileIdentity> ReadIdentity(int fd);
// True when the open file `fd` is the file `identity` was taken from (see
// above). `released` > 0: the file's head may have been released, so a head
// of zeros matches too.
bool IsSameFile(int fd, const FileIdentity& identity, uint64_t released = 0);
// IsSameFile's head check alone, for a file `identity` was taken from while
// it stayed open (its device and inode cannot change): one read, no fstat.
bool SameHead(int fd, const FileIdentity& identity, uint64_t released = 0);

// The FNV-1a 64 of `bytes` as a head is hashed.
uint64_t HeadHash(std::string_view bytes);
// Reads up to `n` bytes at offset 0 into *out (short on a shorter file);
// false on a read error.
bool ReadHead(int fd, size_t n, std::string* out);
// True when `head` is the bytes `identity` hashed.
bool HeadMatches(std::string_view head, const FileIdentity& identity);

// Inflates the gzip file `path` into an anonymous memory file (up to
// `max_bytes`) when its first `identity.head_bytes` inflated bytes are the
// identity's head; -1 otherwise.
int InflateIfHeadMatches(const std::string& path, const FileIdentity& identity, uint64_t max_bytes);

int64_t MtimeNs(const struct stat& st);
// When the file was created (statx birth time), or its last change (ctime)
// on a file system that does not record births; nanoseconds since the epoch,
// 0 when neither can be read.
int64_t BirthTimeNs(int fd);
int64_t BirthTimeNs(const std::string& path);

// Whether a file (a deleted one, for the tailer) is still open for writing by
// anyone. Asked with a read lease (fcntl F_SETLEASE, taken and given back at
// once), which the kernel refuses while the file has a writer; it needs the
// file's owner or CAP_LEASE and a file system with leases, else kUnknown.
// Only for a file nobody can open any more (nlink 0); were an open to break
// the lease in the instant it is held, the signal sent is SIGURG (ignored).
enum class Writers { kNone, kSome, kUnknown };
Writers OpenForWriting(int fd);

// For errors: the file system type of an open file, by name when common.
std::string FileSystemName(int fd);

}  // namespace fingerprintd::source
