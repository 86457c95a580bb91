// ReadPieces: the reading loop of replay, shared by ReadLines (source.h) and
// Replay, which hands each buffer to Pipeline::Feed whole.
//
// Reads a source's pieces in order with zlib's gz* API (gzip and plain files
// alike) and calls on_buffer(bytes) after every read, then on_chunk(stats,
// name). Buffers are the stream's bytes in order, pieces joined as they are
// (a piece not ending in '\n' runs on into the next, as a rotated file's
// last line does into its successor when tailed).
//
// Threading: runs on the calling thread, but for a gzip piece, which
// InflateAhead decompresses on a thread of its own a few chunks ahead.
#pragma once

#include <unistd.h>
#include <zlib.h>

#include <cerrno>
#include <condition_variable>
#include <cstdint>
#include <cstring>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <system_error>
#include <thread>
#include <tuple>
#include <utility>
#include <vector>

#include "fingerprintd/source.h"

namespace fingerprintd::source {

// Inflating a gzip piece costs about as much CPU as matching the bytes it
// gives (zlib inflates some 300-500 MB/s), so for a gzip piece a thread of
// its own reads (gzread) up to kSlots chunks ahead of the caller, and the
// two overlap instead of adding up. A plain file is read on the calling
// thread: its read is a copy from the page cache. Memory: kSlots chunks.
//
// The gzFile is the thread's from construction until Next() has returned 0
// (end) or a negative count (a read error: gzerror tells which); the thread
// has then ended and the caller may use it again (gzerror, gzclose).
class InflateAhead {
 public:
  static constexpr size_t kSlots = 3;

  // Throws std::system_error when no thread can be started (the caller then
  // reads on its own thread).
  InflateAhead(gzFile in, size_t chunk_bytes) : in_(in), chunk_bytes_(chunk_bytes) {
    for (auto& slot : slots_) slot.reset(new char[chunk_bytes]);  // not zeroed: gzread fills it
    thread_ = std::thread([this] { Run(); });
  }
  ~InflateAhead() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stop_ = true;
    }
    cv_.notify_all();
    if (thread_.joinable()) thread_.join();
  }
  InflateAhead(const InflateAhead&) = delete;
  InflateAhead& operator=(const InflateAhead&) = delete;

  // The next chunk, in order: its byte count (gzread's result) and, when
  // positive, *data, valid until the next call, and *offset, the compressed
  // input read up to its end (gzoffset).
  int Next(const char** data, int64_t* offset) {
    std::unique_lock<std::mutex> lock(mu_);
    if (holding_) {  // the chunk handed out last time is done with
      holding_ = false;
      --filled_;
      cv_.notify_all();
    }
    cv_.wait(lock, [&] { return !ready_.empty(); });
    const auto [n, slot, at] = ready_.front();
    ready_.pop_front();
    *offset = at;
    if (n <= 0) {
      lock.unlock();
      thread_.join();
      return n;
    }
    holding_ = true;
    *data = slots_[slot].get();
    return n;
  }

 private:
  void Run() {
    for (size_t slot = 0;; slot = (slot + 1) % kSlots) {
      {
        // Slots are filled and handed out in turn, so when fewer than
        // kSlots are filled or held, `slot` is free.
        std::unique_lock<std::mutex> lock(mu_);
        cv_.wait(lock, [&] { return stop_ || filled_ < kSlots; });
        if (stop_) return;
      }
      const int n = gzread(in_, slots_[slot].get(), static_cast<unsigned>(chunk_bytes_));
      const int64_t at = gzoffset(in_);
      {
        std::lock_guard<std::mutex> lock(mu_);
        ready_.emplace_back(n, slot, at);
        ++filled_;
      }
      cv_.notify_all();
      if (n <= 0) return;
    }
  }

  gzFile in_;
  const size_t chunk_bytes_;
  std::unique_ptr<char[]> slots_[kSlots];
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::tuple<int, size_t, int64_t>> ready_;  // (gzread's count, slot, gzoffset)
  size_t filled_ = 0;                                   // slots ready or held by the caller
  bool holding_ = false;                                // the caller holds the last slot handed out
  bool stop_ = false;
  std::thread thread_;
};

template <typename OnBuffer, typename OnChunk>
Status ReadPieces(const ReplaySource& source, OnBuffer&& on_buffer, ReplayStats* stats,
                  OnChunk&& on_chunk, size_t chunk_bytes) {
  std::string buffer(chunk_bytes, '\0');
  for (const std::string& piece : source.pieces) {
    gzFile in = piece == "-" ? gzdopen(dup(0), "rb") : gzopen(piece.c_str(), "rb");
    if (in == nullptr) return NotFoundError(piece + ": cannot open: " + std::strerror(errno));
    gzbuffer(in, 256 << 10);
    ++stats->files;
    // gzdirect: a plain file (zlib's transparent mode), read here; a gzip
    // stream, inflated ahead on its own thread.
    std::unique_ptr<InflateAhead> ahead;
    if (gzdirect(in) == 0) {
      try {
        ahead = std::make_unique<InflateAhead>(in, buffer.size());
      } catch (const std::system_error&) {
        // No thread to be had: inflate here, as for a plain file.
      }
    }
    const uint64_t input_before = stats->input_bytes;
    while (true) {
      const char* data = buffer.data();
      int64_t offset = 0;
      int n = 0;
      if (ahead != nullptr) {
        n = ahead->Next(&data, &offset);
      } else {
        n = gzread(in, buffer.data(), static_cast<unsigned>(buffer.size()));
        offset = gzoffset(in);
      }
      if (n < 0) {
        int err = 0;
        std::string message = gzerror(in, &err);
        gzclose(in);
        // What was read is kept: a truncated .gz still yields its lines.
        return DataLossError(piece + ": read error after " + std::to_string(stats->bytes) +
                             " bytes: " + message);
      }
      if (n == 0) break;
      stats->bytes += static_cast<uint64_t>(n);
      if (offset > 0) stats->input_bytes = input_before + static_cast<uint64_t>(offset);
      on_buffer(std::string_view(data, static_cast<size_t>(n)));
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
      return DataLossError(piece + ": truncated gzip stream: input ends before the gzip trailer (" +
                           std::to_string(stats->bytes) + " bytes read)");
    }
  }
  return OkStatus();
}

}  // namespace fingerprintd::source
