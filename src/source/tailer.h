// Tailer: follows the files matching a set of globs, through rotation,
// truncation, deletion and restarts, and hands out their bytes as read, with
// their offset in the file's *stream* (for Pipeline::Feed, which makes lines).
//
//   Tailer tailer(options, events, client);
//   tailer.Rescan(now_us);  // open what the globs match (start_at applies)
//   tailer.Poll(now_us);    // read every open file; check rotation/truncation
//   // or, with inotify: tailer.HandleInotify(now_us) when watcher fd is readable.
//
// A stream is what one path shows over time: `0.log`, then the new `0.log`
// created after a rotation, and so on. Each stream is one source for the
// pipeline (its name is the path), so a traceback cut by a rotation is still
// one traceback. Stream offsets are monotonic: the first file of a stream
// starts at 0 (or at its checkpoint) and each file after it starts where the
// previous one ended (`base` of a FilePiece), so a checkpoint offset always
// says which file it belongs to.
//
// File identity (inode reuse): device + inode + a hash of the file's first
// bytes; see file_identity.h.
//
// What is checked, in this order, for a stream when it is polled (after its
// open file was read to its end):
//   1. The open file shrank below the read offset, or its head changed, or
//      (a file that was empty when last seen, so it has no head to compare)
//      it changed and a sibling born since holds what it does not:
//      copytruncate; FileTruncated() is counted. What was written before the
//      truncation but not read yet (the daemon was catching up after a
//      restart, or reading a busy file in budgeted slices) is in the copy:
//      a sibling (see below) whose head is the old head and which is at
//      least as long as what was read. The copy is read on from the same
//      offset to its end, and the truncated file from byte 0 follows with
//      base = old base + the copy's size. Without a copy (a plain
//      truncation), the line being read ends (OnLineEnd) and reading restarts at
//      byte 0 with base += old offset: what was not read is lost, and what
//      is provably lost (the size seen before, less what was read) goes to
//      the client's OnUnread("truncated_unread").
//   2. The path now names another file (rename+create, kubelet rotation
//      `0.log -> 0.log.<ts>`, a symlink swapped to a new target): the old file
//      was already read to its end; the line being read ends there and the new
//      file is read from byte 0 with base = old base + old size;
//      FileRotated() is counted. The old file may be gzipped or deleted later:
//      it is no longer read.
//   3. The path is gone and the open file is unlinked (nlink 0): deletion.
//      The file stays open and is read on while a process still has it open
//      for writing (OpenForWriting(): a read lease; where leases cannot be
//      taken, until nothing was written for deleted_grace_us), so what a
//      worker writes into its deleted log is read. Then the file is read to
//      its end, closed and the line being read ends; the client's OnEnded()
//      follows deleted_grace_us later if the path has not reappeared. A path
//      that reappears (a delete and recreate) is a continuation of the
//      stream, read from byte 0, so a traceback cut by it is still one.
//   4. The path is gone but the file is still linked (renamed away, the new
//      one not created yet): the file stays open and is read on; step 2
//      switches when the path reappears.
// A file whose device + inode is already open under another path (a glob
// that also matches rotated names) is not opened twice.
//
// Released heads (`release_read_bytes`, one writer appending, e.g. `tee -a`):
// the daemon may release the disk blocks of what it has read and checkpointed
// (Release(): fallocate PUNCH_HOLE | KEEP_SIZE below a line start, rounded
// down to the block size). The file keeps its size and the writer its
// offset; the released bytes read as zeros, head included. So the identity
// stays the one taken before (kept in the piece and the checkpoint), and a
// piece with `released` > 0 is the same file when device + inode match and
// its head is either the recorded one (the release was allowed but not yet
// done) or all zeros; a truncated file written again has a head of text.
// Reading a piece never starts below its `released` offset: a restart whose
// safe offset lies below it (the release went past what the pipeline held,
// ReleaseTarget in release_policy.h) goes on from there. The copy of a
// copytruncate is found by its head, which a released file no longer has:
// release is for files that are appended to, not rotated by copytruncate.
//
// Where reading starts for a stream seen for the first time: the client's
// OnOpen() may return a checkpoint (pieces + stream offset); pieces are found
// by identity at the path or among the files of its directory (a renamed
// predecessor), read from the checkpoint's offset up to where the next piece
// began, and the file now at the path follows. Otherwise `start_at` applies
// to streams found by the first Rescan() that existed before the daemon first
// ran (`first_run_us`): one born after it was created while the daemon was
// stopped (a rollout, a restart, a `kill -9` before its first checkpoint) and
// is read from its beginning. A stream that appears later was created while
// we watched and is read from its beginning too. The client hears where each
// stream without a checkpoint starts (OnStart).
//
// Sources that cannot be read (source_health.h): a glob that matches no file,
// its directory missing or not listable, a matched file that cannot be opened
// (permission denied) or read. Each is reported to OnSourceProblem() with the
// path and the reason when found, at every retry that finds it again, and
// when resolved (so the daemon logs it once and counts every failed
// attempt); a file that cannot
// be opened is not a stream (not read, not open) and is tried again at every
// Rescan(), with the start it would have had when first seen.
//
// A checkpoint's offset can lie far back: the pipeline keeps start-up lines a
// rule may still need for its maxspan (30 min), so the piece holding it may
// since have been rotated several times, copied away by copytruncate, or
// gzipped by the kubelet. A piece no longer found by device + inode is looked
// for by content among the path's siblings named `<file name>.*` or
// `<file name>-*` (`0.log.1`, `0.log.20260104-143410.gz`, logrotate's
// `0.log-20260104`): the first whose first head_bytes hash to the
// piece's head, a `.gz` read through zlib into an anonymous memory file (up
// to 256 MiB inflated). Only a piece deleted outright is lost
// (checkpoint_pieces_missing, and OnUnread("deleted_unread") with the bytes
// of it never read: past the checkpoint's `read` offset, up to where the next
// piece began; a last piece deleted leaves nothing to measure); the stream
// then goes on from the next one.
//
// Bytes: handed out as read (OnBytes), in buffers of up to read_chunk_bytes,
// cut anywhere: the client makes lines of them (Pipeline::Feed), joins a line
// cut between two reads, caps it, and waits for a last line's '\n'. Where a
// stream moves to another file (steps 1 to 3, a resumed piece read to its
// end), the bytes handed out so far end a line (OnLineEnd): a line is never
// joined across files. Bytes are passed as they are: NULs and invalid UTF-8
// are the parser's to count.
//
// Threading: single-threaded (the daemon's io_context thread). Views passed to
// OnBytes are valid for the call only. `events` and `client` must outlive the
// tailer.
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "fingerprintd/pipeline_events.h"
#include "fingerprintd/status.h"
#include "source/file_identity.h"
#include "source/source_health.h"

namespace fingerprintd::source {

class InotifyWatcher;

// One file of a stream: its identity and the stream offset of its byte 0.
struct FilePiece {
  FileIdentity identity;
  uint64_t base = 0;
  // File offset (a line start) below which the disk blocks may have been
  // released (read as zeros); reading the piece never starts below it. 0: none.
  uint64_t released = 0;
  bool operator==(const FilePiece&) const = default;
};

// What Release() did to one file.
struct ReleaseResult {
  uint64_t released_bytes = 0;   // newly released (block-aligned range lengths)
  uint64_t allocated_bytes = 0;  // the file's allocated blocks afterwards (st_blocks * 512)
  std::string path;              // the file released (as opened)
};

// Where to resume a stream: its recent pieces (oldest first) and the stream
// offset of the first line still needed.
struct StreamCheckpoint {
  std::vector<FilePiece> pieces;
  uint64_t offset = 0;
  // The stream offset read up to when it was taken (NextOffset()); what lies
  // between `offset` and it was read once already. 0: not known.
  uint64_t read = 0;
};

// Where a stream without a checkpoint starts (TailerClient::OnStart).
enum class StartFrom {
  kBeginning,         // start_at: beginning, or created while the daemon ran
  kEnd,               // start_at: end, for a file that existed before the daemon first ran
  kBornWhileStopped,  // start_at: end, but born after the daemon first ran: from byte 0
};

// Receives what the tailer reads. Called on the tailer's thread.
class TailerClient {
 public:
  virtual ~TailerClient() = default;
  // A stream is about to be read for the first time since start; return its
  // checkpoint to resume, or nullopt to apply start_at.
  virtual std::optional<StreamCheckpoint> OnOpen(const std::string& stream) = 0;
  // Bytes of `stream` as read, starting at stream offset `offset`; the next
  // call's bytes follow them, unless OnLineEnd() or a gap says otherwise.
  virtual void OnBytes(const std::string& stream, std::string_view bytes, uint64_t offset) = 0;
  // The bytes handed out so far end a line: the stream moves to another file.
  virtual void OnLineEnd(const std::string& /*stream*/) {}
  // The stream's file was deleted (step 3); `read_on`: it is still written
  // and is read on. Once per deletion.
  virtual void OnDeleted(const std::string& /*stream*/, bool /*read_on*/) {}
  // The stream's file was deleted, read to its end, and its path did not
  // reappear within deleted_grace_us.
  virtual void OnEnded(const std::string& stream) = 0;
  // The stream moved on to another file (rotation, a reappearance after a
  // deletion) or its file was truncated (copytruncate); reading goes on at
  // byte 0. `copy`: for a truncation, the copy the lines not read yet are
  // read from first, or empty when none was found. For the daemon's log;
  // FileRotated/FileTruncated count them.
  virtual void OnSwitched(const std::string& /*stream*/, bool /*truncated*/,
                          const std::string& /*copy*/) {}
  // A stream without a checkpoint is read from `from`; `skipped`: the bytes
  // start_at: end left unread.
  virtual void OnStart(const std::string& /*stream*/, StartFrom /*from*/, uint64_t /*skipped*/) {}
  // A source cannot be read: found (once), found again by a retry, resolved.
  virtual void OnSourceProblem(const SourceProblem& /*problem*/, SourceHealth::Event /*event*/) {}
  // Bytes of `stream` that were written and can no longer be read: "truncated_unread"
  // (a plain truncation before they were read), "deleted_unread" (a checkpointed
  // piece deleted before a restart read it). `bytes` 0: how many is not known.
  virtual void OnUnread(const std::string& /*stream*/, std::string_view /*reason*/,
                        uint64_t /*bytes*/, const std::string& /*detail*/) {}
};

struct TailerOptions {
  std::vector<std::string> paths;  // globs
  std::vector<std::string> exclude;
  int64_t ignore_older_us = 0;  // 0 = any age
  bool start_at_end = true;
  size_t max_files = 10'000;  // streams tracked at once; beyond: not opened, counted
  size_t read_chunk_bytes = 256 << 10;
  // Bytes read from one file per Poll/HandleInotify call; the rest waits for
  // the next call (HasMoreToRead()), so one busy file cannot starve the others.
  size_t max_read_per_call = 8 << 20;
  // Wall time the daemon first ran (its checkpoint says; 0: unknown, start_at
  // applies to every file of the first Rescan). See "Where reading starts".
  int64_t first_run_us = 0;
  // A deleted file nobody can be shown to write any more is closed; its
  // stream ends this long after, unless its path reappears (step 3). Where
  // leases cannot tell whether it is still written, it is read on until
  // nothing was written to it for this long.
  int64_t deleted_grace_us = 5'000'000;
};

struct TailerStats {
  uint64_t files_opened = 0;
  uint64_t rotations = 0;
  uint64_t truncations = 0;
  uint64_t deletions = 0;
  uint64_t bytes = 0;
  uint64_t checkpoint_pieces_missing = 0;
  uint64_t files_over_cap = 0;
  uint64_t open_errors = 0;
  uint64_t born_while_stopped = 0;  // start_at: end overridden (OnStart kBornWhileStopped)
  uint64_t deleted_read_on = 0;     // deleted files kept open because they were still written
  uint64_t bytes_unread = 0;        // OnUnread() bytes
};

class Tailer {
 public:
  Tailer(TailerOptions options, PipelineEvents& events, TailerClient& client);
  ~Tailer();
  Tailer(const Tailer&) = delete;
  Tailer& operator=(const Tailer&) = delete;

  // Uses `watcher` (may be null: polling only) for directory and file
  // watches. Call before the first Rescan. The watcher must outlive the tailer.
  void SetWatcher(InotifyWatcher* watcher);
  // Sets TailerOptions::first_run_us (the checkpoint's); before the first Rescan.
  void SetFirstRun(int64_t first_run_us);
  // The first Rescan reads every file it opens from its beginning, whatever
  // start_at says (ignore_older still applies): the checkpoint that said where
  // each stopped was corrupt, so what was written while the daemon was down
  // is read rather than skipped. Before the first Rescan.
  void ReadEveryFileFromItsStart();

  // Expands the globs; opens new streams (the first call applies start_at,
  // later ones read new files from their beginning) and reads them.
  void Rescan(int64_t now_us);
  // Reads every open file to its end (up to the per-call budget), runs the
  // rotation/truncation/deletion checks.
  void Poll(int64_t now_us);
  // Reads the watcher's pending events and services only the streams and
  // directories they name (a directory change triggers a Rescan); an event
  // queue overflow falls back to Rescan + Poll.
  void HandleInotify(int64_t now_us);
  // True when a file still had unread bytes at the end of the last call that
  // serviced it; false only after a Poll, which services them all (a
  // HandleInotify for one file leaves another's catch-up pending).
  bool HasMoreToRead() const { return more_; }
  // True while a deleted file is read on or a deleted stream waits to end:
  // poll at the poll interval (writes to a deleted file may wake no watch).
  bool Draining() const { return !draining_.empty(); }

  // The pieces still needed to resume `stream` from stream offset `offset`
  // (a safe position), oldest first; empty when the stream is unknown.
  std::vector<FilePiece> PiecesFor(const std::string& stream, uint64_t offset) const;
  // The stream offset after the last byte handed out.
  uint64_t NextOffset(const std::string& stream) const;

  // Allows the release of the stream's bytes below stream offset `offset` (a
  // line start already handed out) in the file being read: from now on
  // PiecesFor() records it, so a checkpoint saved next resumes at or after
  // it, and the identity check accepts a released head. Only ever raised;
  // clamped to what was read; nothing below the current file's byte 0 (a
  // rotated piece is the rotator's). Returns the stream offset allowed.
  uint64_t AllowRelease(const std::string& stream, uint64_t offset);
  // Releases the disk blocks of what AllowRelease() allowed and was not
  // released yet (call it once a checkpoint recording it is committed):
  // fallocate(FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE) from the last
  // released block to the allowed offset rounded down to the file system's
  // block size. Never truncates, never touches a byte not read, never blocks
  // the writer for longer than the file system's extent update. The file is
  // reopened for writing through /proc/self/fd (the same inode, whatever its
  // path names now). FailedPreconditionError naming the file and the reason
  // when the file system cannot punch holes or the file is not writable; the
  // stream is then not released again (the error is reported once).
  StatusOr<ReleaseResult> Release(const std::string& stream);
  std::vector<std::string> Streams() const;
  // Streams with a file open now (a deleted one read on included).
  size_t OpenFiles() const;
  // Each stream with a file open and its read lag: the bytes on disk it has
  // not read yet. That is the open file's size now less the position read
  // (what the file holds once truncated below it; up to where a resumed
  // piece ended), the same for the files queued behind it at a restore, and
  // the size of a file that replaced it at its path and is not read yet. One
  // fstat per open file and one stat per path, made by this call: a tailer
  // that stopped reading while its files grow shows a lag that grows. A line
  // read but not complete yet (no '\n') is read: a caught-up stream is at 0.
  std::vector<std::pair<std::string, uint64_t>> Lags() const;
  // What cannot be read now (source_health.h).
  std::vector<SourceProblem> Problems() const { return health_.Problems(); }
  // Each glob (as given, made absolute) and the files it matched at the last Rescan.
  const std::vector<std::pair<std::string, size_t>>& GlobMatches() const { return matched_; }

  const TailerStats& stats() const { return stats_; }

 private:
  struct Stream;
  struct OpenFile;
  void OpenStream(const std::string& path, bool initial, int64_t now_us);
  void ServiceStream(Stream& stream, int64_t now_us);
  // Reads `file` to its end or the budget; false when the budget ran out.
  bool ReadFile(Stream& stream, OpenFile& file, int64_t now_us, size_t* budget);
  void Deliver(Stream& stream, OpenFile& file, std::string_view bytes, uint64_t at);
  void EndLine(Stream& stream);
  void Resume(Stream& stream, const StreamCheckpoint& checkpoint);
  void SwitchTo(Stream& stream, std::unique_ptr<OpenFile> next);
  // Opens a regular file; null with last_open_error_ set (ENOENT, EACCES, ...).
  std::unique_ptr<OpenFile> OpenPath(const std::string& path);
  std::unique_ptr<OpenFile> FindPiece(const std::string& path, const FilePiece& piece);
  // A sibling `<name>.*` or `<name>-*` of `path` (not open as another stream)
  // whose first bytes are `identity`'s head and which holds at least
  // `min_size` bytes; a `.gz` is inflated into memory.
  std::unique_ptr<OpenFile> FindByHead(const std::string& path, const FileIdentity& identity,
                                       uint64_t min_size = 0);
  // Copytruncate seen on the stream's current file: when its copy is found,
  // the copy becomes current (read from the same offset to its end) and the
  // truncated file its successor; false when there is no copy.
  // `copy`: found already (an empty file's, FindNewCopy), else looked for by head.
  bool ReadRestFromCopy(Stream& stream, std::unique_ptr<OpenFile> copy);
  // A file that was empty when last seen has no head to find its copy by: a
  // sibling (not gzipped, not read before) born since `since_ns` whose head
  // the file does not start with.
  std::unique_ptr<OpenFile> FindNewCopy(const std::string& path, const OpenFile& file,
                                        int64_t since_ns);
  // Step 3: true when the deleted `file` stays open to be read on.
  bool ReadOnDeleted(Stream& stream, OpenFile& file, int64_t now_us);
  void Unread(Stream& stream, std::string_view reason, uint64_t bytes, const std::string& detail);
  // Rescan(): the globs' matches, directory errors and "no_match" problems.
  void ScanGlob(const std::string& pattern, bool initial, int64_t now_us);
  // Hashes more of a file's head when it grew and still starts with the
  // head it had; true when the identity changed.
  bool ExtendHead(OpenFile& file);
  void Remember(Stream& stream, const OpenFile& file);
  void WatchStream(Stream& stream);

  TailerOptions options_;
  PipelineEvents& events_;
  TailerClient& client_;
  InotifyWatcher* watcher_ = nullptr;
  std::map<std::string, std::unique_ptr<Stream>> streams_;
  std::map<std::pair<uint64_t, uint64_t>, std::string> open_inodes_;  // (dev, ino) -> stream
  // Files a stream has switched away from (rotated, read to their end), so a
  // glob that also matches rotated names does not read them again. Bounded.
  std::map<std::pair<uint64_t, uint64_t>, FilePiece> retired_;
  std::deque<std::pair<uint64_t, uint64_t>> retired_order_;
  std::map<std::string, std::string> by_watch_path_;  // path or symlink target -> stream
  std::map<std::string, bool> ignored_;               // too old when seen (start at end later)
  SourceHealth health_;
  SourceHealth::Report report_;
  std::vector<std::pair<std::string, size_t>> matched_;  // per glob, at the last Rescan
  // Unreadable when the first Rescan saw them: start_at applies once readable.
  std::map<std::string, bool> unreadable_at_start_;
  std::map<std::string, bool> draining_;  // streams in step 3's grace
  int last_open_error_ = 0;
  std::string buffer_;
  bool scanned_ = false;
  bool more_ = false;
  TailerStats stats_;
};

}  // namespace fingerprintd::source
