// The tailer's private parts, shared by its translation units: tailer.cc
// (scans, reading, the poll's checks), tailer_pieces.cc (finding a stream's
// files again: checkpoint pieces, rotated and copied files) and
// tailer_release.cc (release_read_bytes). Not for use outside src/source/tailer*.
#pragma once

#include <limits.h>
#include <stdlib.h>
#include <unistd.h>

#include <cstdint>
#include <deque>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "source/tailer.h"

namespace fingerprintd::source {

// Pieces remembered per stream for checkpoints. A checkpoint's safe offset
// may lag a rule's maxspan (30 min) behind what was read (tailer.h), so it
// must still name the piece holding it after many rotations.
inline constexpr size_t kMaxHistory = 64;
// A gzipped piece is inflated into memory to be read from its checkpoint
// offset; a larger one is not used (counted as missing).
inline constexpr uint64_t kMaxInflatedBytes = 256ull << 20;

inline std::string DirName(const std::string& path) {
  std::string dir = std::filesystem::path(path).parent_path().string();
  return dir.empty() ? "." : dir;
}

inline std::string RealPath(const std::string& path) {
  char buf[PATH_MAX];
  if (::realpath(path.c_str(), buf) == nullptr) return path;
  return buf;
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
  int64_t grew_at_us = 0;        // when a read last returned bytes (step 3 without leases)
  bool deleted = false;          // step 3: unlinked
  bool read_on = false;          // step 3: kept open because it was still written
  bool read_failed = false;      // the last read failed (reported once)

  ~OpenFile() {
    if (fd >= 0) ::close(fd);
    if (write_fd >= 0) ::close(write_fd);
  }
  // Stream offset after the last byte handed out.
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
  int64_t ended_at_us = 0;  // step 3: its deleted file was closed; OnEnded() after the grace
  bool end_pending = false;
};

}  // namespace fingerprintd::source
