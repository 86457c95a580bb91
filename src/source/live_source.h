// LiveSource: a source living on an io_context that hands a Pipeline its
// bytes: the file tailer (file_source.h) and the socket and stdin sources
// (socket_source.h). Each is built from its config section, the pipeline, the
// io_context it waits on and a wall clock, so tests drive it in virtual time
// (tests/source/file_source_test.cc, socket_source_test.cc). The daemon
// (daemon/run.cc) starts each, calls Tick and Rescan from its timers,
// collects checkpoints and stops them on SIGTERM or before a reload.
//
// Threading: every call on the io_context's one thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "fingerprintd/pipeline.h"
#include "fingerprintd/status.h"
#include "source/checkpoint_store.h"
#include "source/source_status.h"

namespace fingerprintd::source {

class LiveSource {
 public:
  virtual ~LiveSource() = default;
  // Opens what the source reads (files, a listening socket); an error names it.
  virtual Status Start() = 0;
  // Stops every pending wait; no callback runs after it.
  virtual void Stop() = 0;
  // Periodic work on the daemon's timer (partial-line ages, fallback polls, idle timeouts).
  virtual void Tick(int64_t now_us) = 0;
  virtual void Rescan(int64_t now_us) = 0;
  // Shutdown (SIGTERM), before Stop: one last read of what was written and
  // not read yet, so the last lines a dying workload wrote just before the
  // daemon was told to stop are seen. A source still catching up on a backlog
  // skips it: a restart resumes from the checkpoint.
  virtual void ReadRemaining(int64_t /*now_us*/) {}
  // What a restart needs to resume this source (nothing for a socket).
  virtual void AppendCheckpoint(const Pipeline& pipeline,
                                std::vector<SourceCheckpoint>* out) const = 0;
  // Before a checkpoint is taken to be committed, and after it was: a file
  // source with release_read_bytes decides what it may release, then
  // releases it (file_source.h).
  virtual void PrepareCheckpoint(const Pipeline& /*pipeline*/) {}
  virtual void CheckpointCommitted() {}
  // "file", "tcp", ...: the type label of fingerprintd_sources_open.
  virtual std::string_view Type() const = 0;
  // Streams being read now (files open, connections' streams).
  virtual size_t OpenStreams() const = 0;
  // Each tailed file's read lag now, bytes on disk not read yet
  // (fingerprintd_source_lag_bytes); a socket has none.
  virtual void AppendLags(std::vector<std::pair<std::string, uint64_t>>* /*out*/) const {}
  // What keeps it from reading what it should, one line each ("PATH: reason
  // (detail)"); empty when healthy. /readyz names them.
  virtual std::vector<std::string> Problems() const { return {}; }
  // A row per thing it reads, and per problem, for the status page.
  virtual void AppendStatus(std::vector<SourceStatus>* out) const = 0;
};

}  // namespace fingerprintd::source
