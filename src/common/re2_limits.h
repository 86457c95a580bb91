// Bounds on what one regular expression read from a user's file (a rule
// pack, the config's deployment_from) may cost, so that no file can make RE2
// use unbounded memory.
//
//   RE2 re(pattern, BoundedRe2Options());
//   if (std::string problem = Re2Problem(re); !problem.empty()) return Error(field, problem);
//
// RE2's own default budget is 8 MiB per RE2 (its programs and DFA caches),
// and a rule pack compiles two hundred patterns. The budget here is smaller
// and explicit; a program that does not fit it, or that has more than
// kRe2MaxProgramSize instructions, is rejected with "pattern too large" and
// the caller names file, line, rule and field. A DFA cache that fills at
// match time is reset by RE2, or RE2 falls back to the NFA (slower, never
// larger). The rule set compiles its match-time patterns with these options
// too, and gives its prefilter's RE2::Set the same budget; a Set cannot fall
// back, so a Set match that runs out of memory is handled by the caller
// (rules/atom_set.h).
//
// Threading: constants and pure functions.
#pragma once

#include <re2/re2.h>

#include <cstdint>
#include <string>

namespace fingerprintd {

// Memory one RE2 may use: programs plus DFA caches.
inline constexpr int64_t kRe2MaxMem = 1 << 20;
// Instructions one compiled program may have. The largest pattern of the
// embedded pack has 172; `.{1000}` has 8,004.
inline constexpr int kRe2MaxProgramSize = 5000;

// Options for a pattern from a user's file: max_mem = kRe2MaxMem, errors
// not logged (the caller reports them).
RE2::Options BoundedRe2Options();

// Why `re` (compiled with BoundedRe2Options) cannot be used; "" when it can.
// "invalid RE2 pattern: <RE2's error>", or "pattern too large (...)" for a
// program over the budget or over kRe2MaxProgramSize instructions.
std::string Re2Problem(const RE2& re);

}  // namespace fingerprintd
