#include "common/re2_limits.h"

namespace fingerprintd {

RE2::Options BoundedRe2Options() {
  RE2::Options options;
  options.set_log_errors(false);
  options.set_max_mem(kRe2MaxMem);
  return options;
}

std::string Re2Problem(const RE2& re) {
  if (re.error_code() == RE2::ErrorPatternTooLarge) {
    return "pattern too large (its RE2 program does not fit in " +
           std::to_string(kRe2MaxMem >> 10) + " KiB; use fewer or smaller repetitions)";
  }
  if (!re.ok()) return "invalid RE2 pattern: " + re.error();
  if (re.ProgramSize() > kRe2MaxProgramSize) {
    return "pattern too large (its RE2 program has " + std::to_string(re.ProgramSize()) +
           " instructions, more than " + std::to_string(kRe2MaxProgramSize) +
           "; use fewer or smaller repetitions)";
  }
  return "";
}

}  // namespace fingerprintd
