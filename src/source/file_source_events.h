// FileSourceEvents: what a file source reports beyond the pipeline's events:
// where each file starts, what could not be read, what each glob matched and
// what release_read_bytes did. The daemon's sink::Metrics counts them
// (fingerprintd_files_opened_total, fingerprintd_source_errors_total, ...:
// sink/metrics.h says which series each feeds); tests may count them too.
//
// Threading: called on the daemon's io_context thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "fingerprintd/pipeline_events.h"

namespace fingerprintd::source {

class FileSourceEvents : public PipelineEvents {
 public:
  // A file opened where it starts: checkpoint, beginning, end, born_while_stopped.
  virtual void FileOpened(std::string_view start) = 0;
  // An attempt to read a source failed (reasons of source/source_health.h).
  virtual void SourceError(std::string_view reason) = 0;
  // The files `glob` matches now.
  virtual void SetGlobMatched(const std::string& glob, size_t files) = 0;
  // Bytes written that could not be read: truncated_unread, deleted_unread.
  virtual void BytesUnread(std::string_view reason) = 0;
  // release_read_bytes (source/release_policy.h): bytes released from disk; a
  // file that could not be; a release after which the file still held more
  // than its bound; a release past the pipeline's safe position.
  virtual void BytesReleased(uint64_t bytes) = 0;
  virtual void ReleaseFailed() = 0;
  virtual void ReleaseOverBound() = 0;
  virtual void RetainedBytesEvicted() = 0;
};

}  // namespace fingerprintd::source
