// BufferMatcher: searches a whole read buffer once for the rule set's
// prefilter atoms and reports where each occurrence ends (parse/buffer_hints.h).
//
//   rules::BufferMatcher matcher(rule_set->Atoms());
//   rules::BufferMatcher::Scratch scratch(matcher);    // one per thread
//   matcher.Search(buffer, &ends, &scratch);
//   std::vector<uint64_t> non_plain((buffer.size() + 63) / 64);  // and the
//   matcher.Search(buffer, &ends, &scratch, non_plain.data());   // non-ASCII bytes
//
// Buffer-first matching (DESIGN.md §7): one pass over a 1 MiB buffer instead
// of one scan per message, so the per-line cost of a line without an atom is
// a binary search in a nearly empty list. Atoms are ASCII and matched
// case-insensitively, as the per-line LiteralScanner does.
//
// Only the atoms that hold no other atom are searched (Searched()): an
// occurrence of `error executing method 'load_model'` holds one of `error`,
// so a text holds an atom exactly when it holds an occurrence of a searched
// one, which is all parse::BufferHints asks.
//
// The backend: SimdLiteralSearch (simd_literal_search.h), the project's own
// AVX2 filter with exact verification, on any CPU with AVX2 (checked at run
// time; the build targets plain x86-64). Without AVX2, and off x86, the
// LiteralScanner does the search, with the same results. Backend::kHyperscan
// exists only so that the benchmark and the tests can compare against it; it
// is linked only when asked (cmake -DFINGERPRINTD_HYPERSCAN=ON), and neither
// deploy/install-deps.sh nor the image installs it. What each costs is in
// bench/README.md ("Own matcher").
//
// Threading: a BufferMatcher is immutable once built and may be shared; a
// Scratch belongs to one thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "rules/literal_scanner.h"
#include "rules/simd_literal_search.h"

namespace fingerprintd::rules {

class BufferMatcher {
 public:
  enum class Backend {
    kOwn,        // SimdLiteralSearch with AVX2, else LiteralScanner
    kHyperscan,  // hs_scan where the build has it (HasHyperscan()), else not ok()
  };
  // `atoms` are lowercased ASCII literals without '\n' (RuleSet::Atoms()).
  explicit BufferMatcher(const std::vector<std::string>& atoms, Backend backend = Backend::kOwn);
  ~BufferMatcher();
  BufferMatcher(const BufferMatcher&) = delete;
  BufferMatcher& operator=(const BufferMatcher&) = delete;

  // The matcher of `atoms` (Backend::kOwn), built once and shared while the
  // same atoms are asked for again (building it for the pack takes about
  // 1.5 ms; rule tests and the fuzzer replay many small texts with one
  // pack). Thread-safe.
  static std::shared_ptr<const BufferMatcher> ForAtoms(const std::vector<std::string>& atoms);

  // False when there is nothing to search with (no atoms, an atom with a
  // newline or a non-ASCII byte, or the backend failed to compile): callers
  // then vouch for no line.
  bool ok() const { return ok_; }
  // "simd-literal-search", "literal-scanner" (kOwn without AVX2) or "hyperscan".
  const char* backend_name() const;
  // True if the build links Hyperscan (FINGERPRINTD_HAVE_HYPERSCAN).
  static bool HasHyperscan();
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
  // `buffer` of a searched atom (see above), unordered, possibly repeated.
  // With `non_plain`, also writes the (buffer.size() + 63) / 64 words there,
  // all of them, a bitmap of the bytes that are not printable ASCII
  // (c < 0x20 || c > 0x7e, '\n' too): bit i % 64 of word i / 64 is set
  // exactly when buffer[i] is one (parse::BufferHints::PlainAscii).
  // SimdLiteralSearch finds them in its own pass over the bytes, the other
  // backends in a loop of their own. Returns false (ends and non_plain
  // unusable) if the search failed; the caller then vouches for nothing in
  // this buffer.
  bool Search(std::string_view buffer, std::vector<size_t>* ends, Scratch* scratch,
              uint64_t* non_plain = nullptr) const;

 private:
  bool ok_ = false;
  size_t longest_ = 1;
  Backend backend_;
  void* hs_database_ = nullptr;
  SimdLiteralSearch search_;  // Backend::kOwn with AVX2
  LiteralScanner scanner_;    // Backend::kOwn without
};

}  // namespace fingerprintd::rules
