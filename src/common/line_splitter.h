// LineSplitter: the one place bytes become lines. The pipeline splits every
// source's bytes with it (Pipeline::Feed), and `fingerprintd parse` the files
// it reads (source::ReadLines).
//
//   LineSplitter splitter(max_line_bytes, events);
//   splitter.Restart(offset);             // the stream offset of the next byte
//   splitter.Append(bytes, [&](std::string_view line, uint64_t start) { ... });
//   splitter.Finish(on_line);             // the bytes so far end a line
//
// A line is what lies before a '\n', without it (a '\r' before it is kept for
// the parser). A line wholly inside the bytes of one Append is handed out as
// a view of them, without a copy: a whole-buffer search of those bytes can
// vouch for it. A line joined across Appends, or cut at the cap, is a view
// of the splitter's own copy. A line longer than max_line_bytes is cut at
// the cap and counted once as DropReason::kLineTooLong; the rest of it, up
// to its '\n', is skipped. `start` is the stream offset of the line's first
// byte. Finish() hands out an unfinished line as it is (a rotation, the end
// of input, a partial line that waited too long); Drop() forgets it (a
// client cut mid-line).
//
// Memory: the unfinished line, at most max_line_bytes.
#pragma once

#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

#include "fingerprintd/pipeline_events.h"

namespace fingerprintd {

class LineSplitter {
 public:
  LineSplitter(size_t max_line_bytes, PipelineEvents& events)
      : max_(max_line_bytes), events_(&events) {}

  // Calls on_line(line, start) for every line the bytes complete. Views are
  // valid for the call.
  template <typename OnLine>
  void Append(std::string_view bytes, OnLine&& on_line);
  // The bytes appended so far end a line: an unfinished one (not empty, or
  // cut at the cap) is handed out.
  template <typename OnLine>
  void Finish(OnLine&& on_line);
  // Forgets the unfinished line; true when there was one.
  bool Drop();
  // The next byte appended is at stream offset `offset`. Call Finish() or
  // Drop() first: an unfinished line is forgotten.
  void Restart(uint64_t offset) {
    Drop();
    end_ = offset;
  }

  // Inside a line: bytes after the last '\n' were appended.
  bool mid_line() const { return in_line_; }
  // The unfinished line went past the cap: the rest of it up to its '\n' is
  // being skipped.
  bool cutting() const { return skipping_; }
  // The stream offset of the unfinished line's first byte (mid_line()).
  uint64_t line_start() const { return line_start_; }
  // The stream offset after the last byte appended.
  uint64_t end() const { return end_; }

 private:
  size_t max_;
  PipelineEvents* events_;
  std::string partial_;
  bool in_line_ = false;
  bool skipping_ = false;  // inside the ignored tail of an over-long line
  uint64_t line_start_ = 0;
  uint64_t end_ = 0;
};

template <typename OnLine>
void LineSplitter::Append(std::string_view bytes, OnLine&& on_line) {
  const uint64_t base = end_;
  end_ += bytes.size();
  const char* const data = bytes.data();
  const size_t size = bytes.size();
  size_t pos = 0;
  while (pos < size) {
    const void* found = std::memchr(data + pos, '\n', size - pos);
    const size_t nl =
        found == nullptr ? size : static_cast<size_t>(static_cast<const char*>(found) - data);
    const std::string_view piece(data + pos, nl - pos);
    if (!in_line_) {
      in_line_ = true;
      line_start_ = base + pos;
      // The common case: the whole line is inside these bytes; a view, no copy.
      if (found != nullptr && piece.size() <= max_) {
        on_line(piece, line_start_);
        in_line_ = false;
        pos = nl + 1;
        continue;
      }
    }
    if (!skipping_) {
      const size_t room = max_ - partial_.size();
      if (piece.size() > room) {
        partial_.append(piece.data(), room);
        events_->LineDropped(DropReason::kLineTooLong);
        skipping_ = true;  // the rest of this line is dropped
      } else {
        partial_.append(piece);
      }
    }
    if (found == nullptr) break;
    on_line(std::string_view(partial_), line_start_);
    partial_.clear();
    in_line_ = false;
    skipping_ = false;
    pos = nl + 1;
  }
}

template <typename OnLine>
void LineSplitter::Finish(OnLine&& on_line) {
  if (in_line_ && (!partial_.empty() || skipping_))
    on_line(std::string_view(partial_), line_start_);
  Drop();
}

inline bool LineSplitter::Drop() {
  const bool had = in_line_ && (!partial_.empty() || skipping_);
  partial_.clear();
  in_line_ = false;
  skipping_ = false;
  return had;
}

}  // namespace fingerprintd
