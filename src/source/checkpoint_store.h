// CheckpointStore: where the daemon keeps, across restarts, how far every
// source was consumed and the pipeline state that goes with it.
//
// One file, `<checkpoint_dir>/checkpoint.json`, versioned:
//
//   {"format":"fingerprintd/checkpoint","version":1,
//    "sources":[{"name":"/var/log/pods/.../0.log","safe":{"offset":1234,"line":40},
//                "read":5678,                       // "name_hex": see below
//                "pieces":[{"device":2049,"inode":131,"head_bytes":1024,
//                           "head_hash":"9ae1...","base":0,"released":1048576}]}],
//    "pipeline":"<Pipeline::SaveState() text>",
//    "first_run_us":1767225600000000,      // when the daemon first ran here
//    "audit_bytes":5120}                   // only with `run --audit` (sink/audit_log.h)
//
// `safe` is Pipeline::SafePosition(): the earliest line the pipeline still
// needs, so a restart re-reads from there and the restored pipeline state
// keeps what was already reported from being reported twice. The pipeline
// state keeps what earlier lines taught it (streams, ranks, stage matches),
// so `safe` is the end of the last line processed unless a failure is still
// being decided (an open traceback, a symptom waiting for it). `pieces` are the
// files of the stream from the one holding `safe` on (see source/tailer.h);
// a piece's optional `released` (release_read_bytes) is the file offset below
// which its disk blocks may have been released: its head may read as zeros,
// and reading it starts no lower (absent in checkpoints of older versions:
// nothing released). `read` (optional) is the stream offset read up to when
// it was saved: bytes of a deleted piece below it were read once and are not
// counted lost at a restart. A name that is not valid UTF-8 (a path may hold
// any byte) is written escaped (common/utf8.h) with its bytes in hex beside
// it, `name_hex`, which Load gives back. `first_run_us` is the wall time the daemon first ran
// with this directory, carried by every checkpoint after: a file not in the
// checkpoint born after it was created while the daemon was stopped and is
// read from its start whatever start_at says (source/tailer.h). A checkpoint
// of an older version has none; Load() gives it the file's modification
// time (its last save) instead.
//
//   CheckpointStore store("/var/lib/fingerprintd");
//   if (Status s = store.Lock(); !s.ok()) ...            // one daemon per directory
//   StatusOr<Checkpoint> cp = store.Load();              // NotFound on first start
//   ...
//   Status s = store.Save(checkpoint);                   // periodic and at shutdown
//
// Save writes `checkpoint.json.tmp`, fsyncs it, renames it over the old file
// and fsyncs the directory, so a crash at any point leaves either the old or
// the new checkpoint, never a torn one. A Save whose content equals the last
// one written is skipped (no disk write when nothing was read). Load returns
// DataLossError for a file that does not parse, has another format or
// version, or has a field of the wrong type: the daemon logs and counts it and
// starts from start_at, never crashes.
//
// Threading: not thread-safe; the daemon's io_context thread.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "fingerprintd/pipeline.h"
#include "fingerprintd/status.h"
#include "source/tailer.h"

namespace fingerprintd::source {

struct SourceCheckpoint {
  std::string name;
  SourcePosition safe;
  std::vector<FilePiece> pieces;  // oldest first
  uint64_t read = 0;              // stream offset read up to (0: not known)
};

struct Checkpoint {
  std::vector<SourceCheckpoint> sources;
  std::string pipeline_state;  // Pipeline::SaveState()
  // `run --audit`: the audit log's length that goes with this checkpoint (its
  // committed lines); -1 (not written) without an audit log.
  int64_t audit_bytes = -1;
  // Wall time the daemon first ran with this checkpoint directory; 0: unknown.
  int64_t first_run_us = 0;
};

// The file's text; Decode(Encode(c)) == c.
std::string EncodeCheckpoint(const Checkpoint& checkpoint);
// DataLossError naming what is wrong for corrupt or foreign text.
StatusOr<Checkpoint> DecodeCheckpoint(const std::string& text);

class CheckpointStore {
 public:
  explicit CheckpointStore(std::string dir);
  ~CheckpointStore();
  CheckpointStore(const CheckpointStore&) = delete;
  CheckpointStore& operator=(const CheckpointStore&) = delete;

  // Creates the directory if needed and takes an exclusive lock on
  // `<dir>/checkpoint.lock` (held until destruction): FailedPreconditionError
  // when another process holds it.
  Status Lock();
  // NotFoundError when there is no checkpoint yet; DataLossError when it is
  // corrupt or foreign.
  StatusOr<Checkpoint> Load();
  // Writes atomically (see above) unless unchanged since the last Save or Load.
  // *written (optional) tells which.
  Status Save(const Checkpoint& checkpoint, bool* written = nullptr);

  std::string path() const { return dir_ + "/checkpoint.json"; }
  // Renames a checkpoint that did not decode to `checkpoint.json.corrupt-<UTC
  // time>` beside it, kept for inspection; the new path.
  StatusOr<std::string> MoveAside(int64_t now_us);
  uint64_t writes() const { return writes_; }
  uint64_t skipped() const { return skipped_; }

 private:
  std::string dir_;
  std::string last_text_;
  int lock_fd_ = -1;
  uint64_t writes_ = 0;
  uint64_t skipped_ = 0;
};

}  // namespace fingerprintd::source
