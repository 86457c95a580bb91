// The wall clock: the one place the daemon and its live sources read the time
// of day. The parse/rules/correlate stages take it as an argument, and the
// live sources (source/live_source.h) are given it, so tests step a clock of
// their own instead (WallClock).
#pragma once

#include <chrono>
#include <cstdint>
#include <ctime>

namespace fingerprintd {

// A wall clock: microseconds since the epoch.
using WallClock = int64_t (*)();

// Microseconds since the epoch.
inline int64_t WallNowMicros() {
  return std::chrono::duration_cast<std::chrono::microseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// The same at the clock's last tick (CLOCK_REALTIME_COARSE, a few
// milliseconds old at most): a read of memory, not of the hardware clock. For
// what is read per line (the year of year-less headers, ParserOptions::
// wall_clock), where milliseconds do not matter.
inline int64_t CoarseWallNowMicros() {
  timespec ts{};
  clock_gettime(CLOCK_REALTIME_COARSE, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1'000'000 + ts.tv_nsec / 1000;
}

// The current year (UTC): the year of log headers that carry none.
inline int CurrentYear() {
  std::time_t now = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&now, &tm);
  return tm.tm_year + 1900;
}

}  // namespace fingerprintd
