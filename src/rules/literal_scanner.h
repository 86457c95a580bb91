// LiteralScanner: finds which of a fixed set of literals occur in a text,
// ASCII case-insensitively. The first pass of the rule prefilter, run on the
// message of every line, so it is built for texts that contain none of them.
//
// Literals of 4 bytes or more are keyed by their case-folded 4-byte windows
// in a 2^18-bit bitmap that fits in L1. With m the shortest such literal,
// each literal registers its windows at offsets 0 .. m-4, so probing the text
// only every (m-3)th byte still meets one window of every occurrence. A probe
// loads 4 bytes, folds, hashes and tests one bit; only on a hit is the key
// looked up and the whole literal compared. Shorter literals (rare:
// FilteredRE2 is built with a minimum atom length) are searched naively.
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
  // Appends to `ends` the end offset (exclusive) in `text` of every
  // occurrence of every literal, unordered, possibly repeated: a whole read
  // buffer searched once (rules/buffer_matcher.h without Hyperscan).
  void FindEnds(std::string_view text, std::vector<size_t>* ends) const;

  size_t size() const { return literals_.size(); }

 private:
  // Calls on_match(literal index, start offset) for every occurrence;
  // on_match returns false to stop the scan.
  template <typename OnMatch>
  void Scan(std::string_view text, OnMatch on_match) const;

  std::vector<std::string> literals_;  // ASCII-lowercased
  std::vector<uint64_t> bitmap_;       // 2^kBits bits over folded 4-byte keys
  struct Window {
    uint32_t key;     // folded 4 bytes
    int literal;      // index in literals_
    uint32_t offset;  // where the window starts in the literal
    bool operator<(const Window& o) const { return key < o.key; }
  };
  std::vector<Window> windows_;      // sorted by key
  size_t stride_ = 1;                // probe every stride_-th byte
  std::vector<int> short_literals_;  // shorter than 4 bytes
};

}  // namespace fingerprintd::rules
