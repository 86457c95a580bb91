// The status line `fingerprintd replay` rewrites on a terminal while it runs
// (daemon/main.cc decides when: stderr a terminal, or --progress; never with
// --quiet), so a replay of a month of archives says how far it is:
//
//   replay: 1.21 of 2.00 GB (60%), files 12 of 40, 310 MB/s, 0:04 elapsed, ~0:03 left, 3 incidents
//
// Sizes are of the input as stored (a .gz piece's compressed bytes, which is
// what the disk and the estimate are about); the rate is of log text read.
// Pure formatting: the caller owns the clock and the terminal.
#pragma once

#include <cstdint>
#include <string>

#include "fingerprintd/source.h"

namespace fingerprintd::source {

struct ReplayTotals {
  uint64_t input_bytes = 0;  // ReplayInputBytes(plan); 0 = unknown (stdin)
  uint64_t files = 0;        // pieces in the plan
};

// One line, no newline. Without a known total (stdin), no percentage and no
// estimate; no estimate either before a second has passed.
std::string ReplayProgressLine(const ReplayStats& done, const ReplayTotals& totals,
                               double elapsed_s, uint64_t incidents);

}  // namespace fingerprintd::source
