// Test helper: a golden fixture (a file, or a directory of files) read as the
// line streams a Pipeline is fed, one per file, with each line's byte offset.
#pragma once

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "testing/replay_harness.h"

namespace fingerprintd::testing {

struct FixtureStream {
  std::string name;  // path relative to the source tree
  std::vector<std::string> lines;
  std::vector<uint64_t> offsets;  // of each line
};

// `path` is absolute; directories are read recursively in path order.
inline std::vector<FixtureStream> ReadFixtureStreams(const std::string& path) {
  namespace fs = std::filesystem;
  std::vector<std::string> files;
  if (fs::is_directory(path)) {
    for (const auto& e : fs::recursive_directory_iterator(path)) {
      if (e.is_regular_file()) files.push_back(e.path().string());
    }
    std::sort(files.begin(), files.end());
  } else {
    files.push_back(path);
  }
  std::vector<FixtureStream> out;
  for (const std::string& f : files) {
    FixtureStream s{f.substr(SourceDir().size() + 1), {}, {}};
    std::ifstream in(f);
    uint64_t offset = 0;
    for (std::string line; std::getline(in, line);) {
      s.offsets.push_back(offset);
      offset += line.size() + 1;
      s.lines.push_back(line);
    }
    out.push_back(std::move(s));
  }
  return out;
}

}  // namespace fingerprintd::testing
