// Process prefixes: who wrote a line.
//
// vLLM patches sys.stdout/stderr of each process to write `(Name pid=P) ` in
// front of every line; Ray relays actor output as `(Actor pid=P, ip=IP) `; a
// relayed line therefore carries several prefixes, and the INNERMOST (last) one
// names the process that wrote it:
//
//   (EngineCore pid=1273) (RayWorkerWrapper pid=2395) INFO ...   -> RayWorkerWrapper 2395
//
// Also accepted: `(pid=N)` (unnamed Ray task), `(raylet)`, and torch's
// `[rankN]:` (torchrun / c10), possibly after the parenthesised ones. ANSI
// colour must already be removed (see ansi.h). The scanner is hand-written: it
// runs on every line, and the first byte rejects almost all unprefixed lines.
//
// Threading: pure functions.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "fingerprintd/log_record.h"

namespace fingerprintd::parse {

// Identity read from a prefix. Views point into the parsed text.
struct ProcessId {
  ProcessRole role = ProcessRole::kUnknown;
  std::string_view name;  // "Worker_TP1", "VllmWorker rank=1", "RayWorkerWrapper", ""
  int32_t pid = -1;
  std::string_view ip;
  int32_t dp = -1, pp = -1, tp = -1, ep = -1, rank = -1;
};

// Parses the chain of process prefixes at the start of `text`. Returns the
// number of bytes they occupy (0 if none) and the innermost identity in *out.
// `*key` receives the text of the innermost prefix, for caching lookups.
size_t ParsePrefixes(std::string_view text, ProcessId* out, std::string_view* key);

// True if a chain of process prefixes may start at the start of `clean` (a
// cleaned line): `(` or torch's `[r`. Else ParsePrefixes finds none,
// whatever follows.
inline bool MayStartPrefixChain(std::string_view clean) {
  return !clean.empty() &&
         (clean[0] == '(' || (clean[0] == '[' && clean.size() > 1 && clean[1] == 'r'));
}

// True if a chain ParsePrefixes read up to a byte `next` ends there whatever
// follows: `next` is no space and starts no further prefix.
inline bool EndsPrefixChain(char next) { return next != ' ' && next != '(' && next != '['; }

// ParsePrefixes behind a small cache keyed on the chains' bytes. In a
// container log nearly every line carries a chain seen a few lines before
// (an API server and its ranks interleaved), so the last kEntries distinct
// chains are compared with the line before any parsing (the last one hit
// first), and a chain's result is reused when its bytes are equal and
// nothing after them could extend it.
//
// Parse() returns exactly what ParsePrefixes() returns for the same text
// (tests/parse/prefix_cache_test.cc checks it on seeded random lines); the
// views in *out and *key point into `text`, as ParsePrefixes' do.
//
// Threading: one per source parser; not thread-safe.
class PrefixCache {
 public:
  static constexpr size_t kEntries = 8;

  size_t Parse(std::string_view text, ProcessId* out, std::string_view* key);

 private:
  // Where a view of a cached chain lies in it, so it can point into the next text.
  struct Span {
    size_t at = 0, size = 0;
  };
  struct Entry {
    std::string bytes;  // the chain, its separating space included; "" = unused
    ProcessId id;       // name and ip are replaced by the spans below on a hit
    Span name, ip, key;
  };
  bool Hit(const Entry& e, std::string_view text, ProcessId* out, std::string_view* key) const;

  Entry entries_[kEntries];
  size_t last_hit_ = 0;
  size_t next_victim_ = 0;  // replaced round-robin
};

// Fills role and parallel indices from a process name ("Worker_DP1_PP0_TP1_EP3",
// "EngineCore_DP0", "VllmWorker rank=2", "VllmWorker PP1_TP0").
void ClassifyProcessName(std::string_view name, ProcessId* out);

// Reads "DP1_PP0_TP1_EP3"-style parts (separated by '_' or ' '); unknown parts
// (DCP, PCP, ATTN_CP, ...) are skipped. Returns false if no part was read.
bool ParseParallelParts(std::string_view parts, ProcessId* out);

}  // namespace fingerprintd::parse
