// BufferMatcher: searches a whole read buffer once for the rule set's
// prefilter atoms and reports where each occurrence ends (parse/atom_hints.h).
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
// one, which is all parse::AtomHints asks. With the pack and the quiet-line
// triggers that is 136 literals of 221, and the search costs 14% less
// (callgrind, bench/README.md).
//
// The engine: SimdLiteralSearch (simd_literal_search.h), the project's own
// AVX2 filter (nibble masks for literals under 7 bytes, hashed 4-byte windows
// probed every 4 bytes and 8-byte ones every 8 for the others) with exact
// verification, on any CPU with AVX2 (checked at run time; the build targets
// plain x86-64).
// Without AVX2, and off x86, the LiteralScanner does the search, with the
// same results. Measured on the bench mix (bench/README.md, "Own matcher"),
// the 136 literals replay searches:
//
//   callgrind, replay --quiet of the 8 MiB files (at a5d56f9; 16.7 M with
//   the non-plain bitmap since 1415b75): the search 36.0 M
//   instructions with Hyperscan, 16.1 M with SimdLiteralSearch (plain; CRI
//   34.0 M -> 15.6 M), ReplayGroup 84.6 M -> 64.4 M (CRI 85.8 M -> 67.0 M);
//   building the matcher at start-up (MatcherFor) 22.9 M -> 4.6 M.
//   BM_BufferMatcherSearch (CPU time, 4 MiB in 1 MiB buffers, shared VM):
//   SimdLiteralSearch 1.8-2.4 ms, Hyperscan 3.5-4.2 ms, LiteralScanner
//   10.2-11.3 ms.
//
// Hyperscan's cost grows with the number of literals (0.2-0.7 M each here);
// the own filter's is mostly fixed per 32-byte block (about 50 instructions)
// plus the few candidates. Hyperscan stays as Engine::kHyperscan only so that
// the benchmark and the tests can compare against it: replay does not use it,
// so the build links it only when asked (cmake -DFINGERPRINTD_HYPERSCAN=ON,
// FINGERPRINTD_HAVE_HYPERSCAN), and neither deploy/install-deps.sh nor the
// image installs it.
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
  enum class Engine {
    kOwn,        // SimdLiteralSearch with AVX2, else LiteralScanner
    kHyperscan,  // hs_scan where the build has it (HasHyperscan()), else not ok()
  };
  // `atoms` are lowercased ASCII literals without '\n' (RuleSet::Atoms()).
  explicit BufferMatcher(const std::vector<std::string>& atoms, Engine engine = Engine::kOwn);
  ~BufferMatcher();
  BufferMatcher(const BufferMatcher&) = delete;
  BufferMatcher& operator=(const BufferMatcher&) = delete;

  // The matcher of `atoms` (Engine::kOwn), built once and shared while the
  // same atoms are asked for again (for the pack, Searched() and the build
  // cost 4.6 M instructions, about 1.5 ms; rule tests and the fuzzer replay
  // many small texts with one pack). Thread-safe.
  static std::shared_ptr<const BufferMatcher> ForAtoms(const std::vector<std::string>& atoms);

  // False when there is nothing to search with (no atoms, an atom with a
  // newline or a non-ASCII byte, or the engine failed to compile): callers
  // then vouch for no line.
  bool ok() const { return ok_; }
  // "simd-literal-search", "literal-scanner" (kOwn without AVX2) or "hyperscan".
  const char* engine_name() const;
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
  // exactly when buffer[i] is one (parse::AtomHints::PlainAscii).
  // SimdLiteralSearch finds them in its own pass over the bytes, the other
  // engines in a loop of their own. Returns false (ends and non_plain
  // unusable) if the search failed; the caller then vouches for nothing in
  // this buffer.
  bool Search(std::string_view buffer, std::vector<size_t>* ends, Scratch* scratch,
              uint64_t* non_plain = nullptr) const;

 private:
  bool ok_ = false;
  size_t longest_ = 1;
  Engine engine_;
  void* hs_database_ = nullptr;
  SimdLiteralSearch search_;  // Engine::kOwn with AVX2
  LiteralScanner scanner_;    // Engine::kOwn without
};

}  // namespace fingerprintd::rules
