// BufferMatcher: searches a whole read buffer once for the rule set's
// prefilter atoms and reports where each occurrence ends (parse/atom_hints.h).
//
//   rules::BufferMatcher matcher(rule_set->Atoms());
//   rules::BufferMatcher::Scratch scratch(matcher);    // one per thread
//   matcher.Search(buffer, &ends, &scratch);
//
// Buffer-first matching (DESIGN.md §7): one pass over a 1 MiB buffer instead
// of one scan per message, so the per-line cost of a line without an atom is
// a binary search in a nearly empty list. Atoms are ASCII and matched
// case-insensitively, as the per-line LiteralScanner does.
//
// Only the atoms that hold no other atom are searched (Searched()): an
// occurrence of `error executing method 'load_model'` holds one of `error`,
// so a text holds an atom exactly when it holds an occurrence of a searched
// one, which is all parse::AtomHints asks. With the pack and the quiet-line
// triggers that is 136 literals of 221, and the search costs 14% less
// (callgrind, bench/README.md).
//
// The engine: Hyperscan (Debian's libhyperscan-dev; libvectorscan-dev
// elsewhere) when the build found it (FINGERPRINTD_HAVE_HYPERSCAN), else
// LiteralScanner::FindEnds over the whole buffer, with the same results.
// Measured on the bench mix (bench/README.md, issue 15; BM_BufferMatcherSearch
// against BM_LiteralScannerFindEndsPerBuffer, same 1 MiB buffers, CPU time on
// the shared 2-core VM): Hyperscan 1.28-1.40 GB/s, the scanner 0.85-0.90 GB/s,
// so Hyperscan is used where it exists. Searching each atom's rarest 8-byte
// window instead of the whole atom (fewer, rarer literals) measured no faster
// and was dropped. Neither reaches the 5+ GB/s a 2 GB/s replay needs from it.
//
// Threading: a BufferMatcher is immutable once built and may be shared; a
// Scratch belongs to one thread.
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "rules/literal_scanner.h"

namespace fingerprintd::rules {

class BufferMatcher {
 public:
  // `atoms` are lowercased ASCII literals without '\n' (RuleSet::Atoms()).
  explicit BufferMatcher(const std::vector<std::string>& atoms);
  ~BufferMatcher();
  BufferMatcher(const BufferMatcher&) = delete;
  BufferMatcher& operator=(const BufferMatcher&) = delete;

  // The matcher of `atoms`, compiled once and shared while the same atoms are
  // asked for again (a Hyperscan compile of the pack costs ~10 ms; rule
  // tests and the fuzzer replay many small texts with one pack). Thread-safe.
  static std::shared_ptr<const BufferMatcher> ForAtoms(const std::vector<std::string>& atoms);

  // False when there is nothing to search with (no atoms, an atom with a
  // newline, or the engine failed to compile): callers then vouch for no line.
  bool ok() const { return ok_; }
  // "hyperscan" or "literal-scanner".
  static const char* EngineName();
  // The length of the longest searched atom (1 when there are none): two
  // searches of a buffer's parts overlapping by one less find every occurrence.
  size_t longest() const { return longest_; }

  // The atoms searched: those of `atoms` that hold no other of them (of equal
  // ones, the first). Empty when an atom is empty or holds a newline.
  static std::vector<std::string> Searched(const std::vector<std::string>& atoms);

  // Per-thread search state.
  class Scratch {
   public:
    explicit Scratch(const BufferMatcher& matcher);
    ~Scratch();
    Scratch(const Scratch&) = delete;
    Scratch& operator=(const Scratch&) = delete;

   private:
    friend class BufferMatcher;
    void* hs_scratch_ = nullptr;
  };

  // Appends to `ends` the end offset (exclusive) of every occurrence in
  // `buffer` of a searched atom (see above), unordered, possibly repeated. Returns false (ends
  // unusable) if the search failed; the caller then vouches for nothing in this buffer.
  bool Search(std::string_view buffer, std::vector<size_t>* ends, Scratch* scratch) const;

 private:
  bool ok_ = false;
  size_t longest_ = 1;
  void* hs_database_ = nullptr;
  LiteralScanner scanner_;  // without Hyperscan
};

}  // namespace fingerprintd::rules
