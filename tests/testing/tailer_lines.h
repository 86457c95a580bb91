// TailerLines: the lines of the bytes a source::Tailer hands out, split as
// Pipeline::Feed splits them (common/line_splitter.h, one splitter per
// stream; a gap or OnLineEnd ends the line being read), for tailer tests
// written line by line.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>

#include "common/line_splitter.h"
#include "fingerprintd/pipeline_events.h"

namespace fingerprintd::testing {

class TailerLines {
 public:
  // on_line(stream, line, offset) for each line the bytes complete.
  template <typename OnLine>
  void Bytes(const std::string& stream, std::string_view bytes, uint64_t offset, OnLine&& on_line) {
    LineSplitter& lines = Of(stream);
    if (offset != lines.end()) {
      End(stream, on_line);
      lines.Restart(offset);
    }
    lines.Append(bytes,
                 [&](std::string_view line, uint64_t start) { on_line(stream, line, start); });
  }
  template <typename OnLine>
  void End(const std::string& stream, OnLine&& on_line) {
    Of(stream).Finish([&](std::string_view line, uint64_t start) { on_line(stream, line, start); });
  }

  size_t max_line_bytes = 1 << 20;
  PipelineEvents* events = nullptr;  // counts kLineTooLong; null: not counted

 private:
  LineSplitter& Of(const std::string& stream) {
    auto& lines = streams_[stream];
    if (!lines) lines = std::make_unique<LineSplitter>(max_line_bytes, events ? *events : null_);
    return *lines;
  }
  NullPipelineEvents null_;
  std::map<std::string, std::unique_ptr<LineSplitter>> streams_;
};

}  // namespace fingerprintd::testing
