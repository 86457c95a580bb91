// ReadPieces: the reading loop of replay, shared by ReadLines (source.h) and
// Replay's buffer-first path. A template over its handlers, so each line goes
// straight to the pipeline without a std::function call in between.
//
// Reads a source's pieces in order with zlib's gz* API (gzip and plain files
// alike); after every read, on_buffer(bytes) is called BEFORE the buffer's
// lines are split off and handed to on_line, so a whole-buffer search can run
// first (buffer-first matching); on_chunk(stats, name) after them.
//
// Threading: runs on the calling thread.
#pragma once

#include <unistd.h>
#include <zlib.h>

#include <cerrno>
#include <cstring>
#include <string>

#include "fingerprintd/source.h"

namespace fingerprintd::source {

template <typename OnBuffer, typename OnLine, typename OnChunk>
Status ReadPieces(const ReplaySource& source, size_t max_line_bytes, PipelineEvents& events,
                  OnBuffer&& on_buffer, OnLine&& on_line, ReplayStats* stats, OnChunk&& on_chunk,
                  size_t chunk_bytes) {
  LineSplitter splitter(max_line_bytes, events);
  std::string buffer(chunk_bytes, '\0');
  auto counted = [&](std::string_view line) {
    on_line(line);
    ++stats->lines;
  };
  for (const std::string& piece : source.pieces) {
    gzFile in = piece == "-" ? gzdopen(dup(0), "rb") : gzopen(piece.c_str(), "rb");
    if (in == nullptr) {
      splitter.Finish(counted);
      return NotFoundError(piece + ": cannot open: " + std::strerror(errno));
    }
    gzbuffer(in, 256 << 10);
    ++stats->files;
    while (true) {
      int n = gzread(in, buffer.data(), static_cast<unsigned>(buffer.size()));
      if (n < 0) {
        int err = 0;
        std::string message = gzerror(in, &err);
        gzclose(in);
        // Keep what was read: a truncated .gz still yields its lines.
        splitter.Finish(counted);
        return DataLossError(piece + ": read error after " + std::to_string(stats->bytes) +
                             " bytes: " + message);
      }
      if (n == 0) break;
      stats->bytes += static_cast<uint64_t>(n);
      const std::string_view bytes(buffer.data(), static_cast<size_t>(n));
      on_buffer(bytes);
      splitter.Append(bytes, counted);
      on_chunk(*stats, source.name);
    }
    // A gzip stream cut short (a piece copied while kubelet was still
    // compressing it, a partial download) reads as a clean end of file: zlib
    // only reports it as Z_BUF_ERROR, from gzerror after the last read and
    // from gzclose.
    int err = Z_OK;
    gzerror(in, &err);
    const int closed = gzclose(in);
    if (err == Z_BUF_ERROR || closed == Z_BUF_ERROR) {
      splitter.Finish(counted);
      return DataLossError(piece + ": truncated gzip stream: input ends before the gzip trailer (" +
                           std::to_string(stats->bytes) + " bytes read)");
    }
  }
  splitter.Finish(counted);
  return OkStatus();
}

}  // namespace fingerprintd::source
