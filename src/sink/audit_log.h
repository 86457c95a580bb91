// AuditLog: `fingerprintd run --audit FILE` (a hidden debug flag, for
// bench/soak.sh): which input lines the daemon has *committed*, so a test that
// kills it can count lines lost and lines doubled across restarts.
//
// What "committed" means. After a crash the daemon resumes from its last
// checkpoint: every tailed file is read again from the checkpoint's safe
// offset (Pipeline::SafePosition: the earliest line its state still needs),
// and the restored state keeps re-read lines from being reported twice. So a
// line counts as committed when a checkpoint on disk has its source's safe
// offset past it: from then on no restart reads it again. A socket line is
// never read again (nothing is checkpointed for sockets; socket_source.h):
// it counts as committed when a checkpoint saved after it was fed is on disk.
//
// How it stays in step with the checkpoint. Lines fed to the pipeline wait in
// memory (offset and digest, 16 bytes each). At every checkpoint save the
// daemon calls Prepare(checkpoint): the waiting lines the checkpoint now
// covers are appended to the file and fsync'd, and the file's new length goes
// into the checkpoint (`audit_bytes`) before it is written (tmp + fsync +
// rename). Confirm() then forgets them; if the checkpoint write failed,
// Abort() truncates the file back and keeps them waiting. On start the file is
// truncated to the `audit_bytes` of the checkpoint being resumed (0 without
// one): a crash between the fsync and the rename leaves lines in the file that
// the restart will read and append again, and the truncation removes them. So
// the file always holds exactly the lines below the resumed checkpoint, each
// once, and a line appears twice only if the daemon really read it twice past
// a checkpoint.
//
// Format, one line per committed input line:
//
//   <digest, 16 hex> <stream offset, or - for a socket line> <source>\n
//
// where <source> is a file's path, or a socket stream's name: its source,
// '#', the connection's slot and, for `jsonl`, the pod and container
// (source/socket_streams.h).
//
// digest = crc32(line) << 32 | adler32(line) (zlib; in Python
// `zlib.crc32(b) << 32 | zlib.adler32(b)`), over the line as the pipeline got
// it: without its '\n', a file line with its envelope, a jsonl socket line's
// text field. A line with a unique id in it has a unique digest.
//
// A reload (SIGHUP) re-reads the files from an in-memory snapshot: Rewind()
// drops the waiting lines the new sources will feed again.
//
// Cost: 16 bytes of memory per line waiting for a checkpoint (a file's safe
// offset lags only while a failure is being decided), and one write +
// fdatasync per checkpoint. A test tool, not for production.
//
// Threading: the daemon's io_context thread.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "fingerprintd/pipeline.h"
#include "fingerprintd/status.h"
#include "source/checkpoint_store.h"

namespace fingerprintd::sink {

// The digest the audit writes for `line` (see above).
uint64_t AuditDigest(std::string_view line);

class AuditLog {
 public:
  // Opens (creates, mode 0644) `path` and truncates it to `committed_bytes`,
  // the `audit_bytes` of the checkpoint being resumed (0 without one).
  // DataLossError when the file is shorter than that (not the file the
  // checkpoint was written with); InternalError naming the path otherwise.
  static StatusOr<std::unique_ptr<AuditLog>> Open(const std::string& path,
                                                  uint64_t committed_bytes);
  ~AuditLog();
  AuditLog(const AuditLog&) = delete;
  AuditLog& operator=(const AuditLog&) = delete;

  // A line of a tailed file, fed at stream `offset` (offsets of one source increase).
  void OnFileLine(const std::string& source, std::string_view line, uint64_t offset);
  // A line of a socket or stdin stream, named by its stream
  // (`tcp:127.0.0.1:5170#3/ns/pod/container`, source/socket_streams.h).
  void OnSocketLine(std::string_view stream, std::string_view line);
  // The Pipeline::Options::line_observer that records every line as the
  // pipeline gets it: a tailed file's with OnFileLine, a socket stream's (a
  // transient source) with OnSocketLine.
  std::function<void(const SourceSpec& spec, std::string_view line, uint64_t offset)>
  LineObserver();

  // Appends the waiting lines below each source's safe offset in
  // `checkpoint`, and every socket line, then fsyncs; returns the file's
  // length for checkpoint.audit_bytes. Then Confirm() or Abort().
  StatusOr<uint64_t> Prepare(const source::Checkpoint& checkpoint);
  // The checkpoint is on disk: the prepared lines are committed.
  void Confirm();
  // The checkpoint was not written: the file goes back to its last committed length.
  void Abort();
  // Drops waiting file lines at or after `snapshot`'s safe offsets (a reload
  // reads them again).
  void Rewind(const source::Checkpoint& snapshot);

  uint64_t committed_bytes() const { return committed_bytes_; }
  // Lines waiting for a checkpoint (file and socket).
  size_t waiting() const;

 private:
  struct Entry {
    uint64_t offset;
    uint64_t digest;
  };
  AuditLog(int fd, std::string path, uint64_t committed)
      : fd_(fd), path_(std::move(path)), committed_bytes_(committed) {}

  int fd_;
  std::string path_;
  uint64_t committed_bytes_;
  std::map<std::string, std::deque<Entry>> files_;  // source -> waiting lines, by offset
  std::vector<std::pair<std::string, uint64_t>> sockets_;
  // What the last Prepare wrote: lines per file source, and socket lines.
  std::map<std::string, size_t> prepared_files_;
  size_t prepared_sockets_ = 0;
  uint64_t prepared_bytes_ = 0;
};

}  // namespace fingerprintd::sink
