// The daemon's wall clock: the one place daemon/ reads the time of day (the
// parse/rules/correlate stages take it as an argument).
#pragma once

#include <chrono>
#include <cstdint>
#include <ctime>

namespace fingerprintd::daemon {

// Microseconds since the epoch.
inline int64_t WallNowMicros() {
  return std::chrono::duration_cast<std::chrono::microseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// The current year (UTC): the year of log headers that carry none.
inline int CurrentYear() {
  std::time_t now = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&now, &tm);
  return tm.tm_year + 1900;
}

}  // namespace fingerprintd::daemon
