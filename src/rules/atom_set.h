// AtomSet: the rule set's prefilter atoms as one case-insensitive RE2::Set,
// for a pack with an atom the LiteralScanner cannot case-fold (non-ASCII
// bytes). RuleSet::Compile builds it; RuleSet::Match asks it which atoms a
// line holds, and runs only the patterns those atoms allow.
//
//   auto set = AtomSet::Compile(atoms, kRe2MaxMem);
//   if (!set.ok()) return set.status();
//   std::vector<int> found;
//   if ((*set)->Find(line, &found)) ...found holds the indices of the atoms in `line`
//
// Memory: the set's program and DFA live in `max_mem` bytes (RE2's default
// would be 8 MiB). RE2::Set has no fallback when its DFA cannot build a
// state in that budget: Match() returns false, which reads as "no atom"
// unless an ErrorInfo is asked for (kOutOfMemory, RE2 2022-06-01). A line
// that made the prefilter say "no atom" would skip every filtered pattern,
// so Find() asks, and when the set failed it searches each atom on its own
// (RE2s that fall back to the NFA, built on the first failure) and counts
// the line in FallbackCount(). Find() never reports fewer atoms than occur.
//
// Threading: Find() is const and may be called from several threads at once
// (RE2 locks its DFA cache; the fallback RE2s are built once).
#pragma once

#include <re2/re2.h>
#include <re2/set.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "fingerprintd/status.h"

namespace fingerprintd::rules {

class AtomSet {
 public:
  // Compiles `atoms` (literals, matched case-insensitively) within `max_mem`
  // bytes; InternalError when RE2 cannot (the budget does not hold the
  // program).
  static StatusOr<std::unique_ptr<AtomSet>> Compile(const std::vector<std::string>& atoms,
                                                    int64_t max_mem);

  // Sets *found (cleared first) to the indices of the atoms that occur in
  // `text`, in increasing order; returns !found->empty().
  bool Find(std::string_view text, std::vector<int>* found) const;

  // The options of the set and of its per-atom fallbacks: case-insensitive
  // literals within `max_mem` bytes, errors not logged.
  static re2::RE2::Options Options(int64_t max_mem);

  // Lines for which the set ran out of memory and the atoms were searched
  // one by one, over every AtomSet of the process.
  static uint64_t FallbackCount();

 private:
  AtomSet(std::vector<std::string> atoms, int64_t max_mem);
  void FindEachAtom(std::string_view text, std::vector<int>* found) const;

  const std::vector<std::string> atoms_;
  const int64_t max_mem_;
  re2::RE2::Set set_;
  mutable std::once_flag fallback_once_;
  mutable std::vector<std::unique_ptr<re2::RE2>> fallback_;  // one per atom, built once
  static std::atomic<uint64_t> fallback_count_;
};

}  // namespace fingerprintd::rules
