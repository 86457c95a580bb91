// LiteralScanner: finds which of a fixed set of literals occur in a text,
// ASCII case-insensitively. The first pass of the rule prefilter, run on the
// message of every line, so it is built for texts that contain none of them.
//
// Every literal of 4 bytes or more is keyed by its first 4 bytes (case-folded)
// in a 2^18-bit bitmap that fits in L1. A scan loads 4 bytes at each offset,
// folds, hashes and tests one bit; only on a hit does it look the key up and
// compare whole literals. Shorter literals (rare: FilteredRE2 is built with a
// minimum atom length) are searched naively.
//
// Threading: immutable after construction; FindAll is const and allocates
// nothing once `out` has grown.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace fingerprintd::rules {

class LiteralScanner {
 public:
  LiteralScanner() = default;
  explicit LiteralScanner(const std::vector<std::string>& literals);

  // Appends to `out` (cleared first) the index of every literal occurring in
  // `text`, each once, ascending. Returns whether any did.
  bool FindAll(std::string_view text, std::vector<int>* out) const;
  // True if any literal occurs in `text`.
  bool Any(std::string_view text) const;

  size_t size() const { return literals_.size(); }

 private:
  template <bool kStopAtFirst>
  bool Scan(std::string_view text, std::vector<int>* out) const;

  std::vector<std::string> literals_;           // ASCII-lowercased
  std::vector<uint64_t> bitmap_;                // 2^kBits bits over folded 4-byte keys
  std::vector<std::pair<uint32_t, int>> keys_;  // (folded first 4 bytes, literal), sorted
  std::vector<int> short_literals_;             // shorter than 4 bytes
};

}  // namespace fingerprintd::rules
