// FeedLine: one line to a Pipeline, with its '\n' (Pipeline::Feed takes a
// source's bytes), for tests written line by line.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "fingerprintd/pipeline.h"

namespace fingerprintd::testing {

inline void FeedLine(Pipeline& pipeline, Pipeline::SourceId source, std::string_view line,
                     uint64_t offset) {
  std::string bytes;
  bytes.reserve(line.size() + 1);
  bytes.append(line);
  bytes.push_back('\n');
  pipeline.Feed(source, bytes, offset);
}

}  // namespace fingerprintd::testing
