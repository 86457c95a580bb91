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

// Fills role and parallel indices from a process name ("Worker_DP1_PP0_TP1_EP3",
// "EngineCore_DP0", "VllmWorker rank=2", "VllmWorker PP1_TP0").
void ClassifyProcessName(std::string_view name, ProcessId* out);

// Reads "DP1_PP0_TP1_EP3"-style parts (separated by '_' or ' '); unknown parts
// (DCP, PCP, ATTN_CP, ...) are skipped. Returns false if no part was read.
bool ParseParallelParts(std::string_view parts, ProcessId* out);

}  // namespace fingerprintd::parse
