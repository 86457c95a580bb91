// Calendar arithmetic and timestamp scanners shared by the envelope and header
// parsers. Event times are microseconds since the Unix epoch (UTC).
//
// Calendar conversions use <chrono>'s civil calendar (sys_days,
// year_month_day), not timegm()/mktime(): those depend on the process TZ and
// locale, and replay must give the same times on every machine.
//
// Threading: pure functions; no state.
#pragma once

#include <cstdint>
#include <string_view>

namespace fingerprintd::parse {

// A wall-clock time as printed. year == 0 means the text carried no year.
struct CivilTime {
  int32_t year = 0;
  int32_t month = 1;  // 1-12
  int32_t day = 1;    // 1-31
  int32_t hour = 0, minute = 0, second = 0;
  int32_t micros = 0;
};

// Days since 1970-01-01 of a proleptic Gregorian date.
int64_t DaysFromCivil(int64_t year, int32_t month, int32_t day);
// Inverse of DaysFromCivil.
void CivilFromDays(int64_t days, int32_t* year, int32_t* month, int32_t* day);

// Converts a civil time observed at `offset_s` seconds east of UTC.
int64_t CivilToUnixMicros(const CivilTime& t, int32_t year, int32_t offset_s);

// For a civil time printed without a year (t.year ignored): the time in the
// latest year that is not after `limit_us`, the last moment the line can have
// been written. Lines of a log crossing New Year thus stay in order.
int64_t LatestNotAfter(const CivilTime& t, int64_t limit_us, int32_t offset_s);

// How far after the wall clock a year-less line's local time may read and
// still be of this year: the widest zone offset, since a header's zone is
// often unknown (a wrong hour beats a wrong year).
inline constexpr int64_t kYearGuessZoneSlackUs = 14LL * 3600 * 1'000'000;
// A header time more than this after the latest the line can have been
// written (its envelope's time, the wall clock, the file's mtime) is
// misdated: the widest zone offset a header in local time can be ahead by,
// and an hour.
inline constexpr int64_t kMisdatedSlackUs = kYearGuessZoneSlackUs + 3600LL * 1'000'000;

// For `guessed_us`, the time LatestNotAfter(t, now_us + slack_us, offset_s)
// gave: the earliest now_us at which it would give t's next year instead. A
// guess cached for `t` holds while the clock is before it, so a running
// daemon re-reads the year only when New Year can have changed it.
int64_t YearGuessChangesAt(const CivilTime& t, int64_t guessed_us, int32_t offset_s,
                           int64_t slack_us);

// The local day (days since the epoch) of `time_us` at `offset_s` seconds
// east of UTC: an envelope's calendar day, which dates a header without a year.
int64_t LocalDayOf(int64_t time_us, int32_t offset_s);

// A header without a year dated by an envelope of a known year: `t` in the
// envelope's local year (of `local_day`), the year before and the year after
// (in that order, at `offset_s`), of which NearestTo picks the one closest to
// the envelope time, the first of equals (a Dec 31 line read on Jan 1).
void NearestYearCandidates(const CivilTime& t, int64_t local_day, int32_t offset_s, int64_t out[3]);
int64_t NearestTo(const int64_t candidates[3], int64_t envelope_us);

// Reads exactly `n` ASCII digits at text[pos]; false if any is not a digit.
inline bool ReadDigits(std::string_view text, size_t pos, size_t n, int32_t* out) {
  if (pos + n > text.size()) return false;
  int32_t v = 0;
  for (size_t i = 0; i < n; ++i) {
    unsigned d = static_cast<unsigned char>(text[pos + i]) - '0';
    if (d > 9) return false;
    v = v * 10 + static_cast<int32_t>(d);
  }
  *out = v;
  return true;
}

// True when the civil fields are in range (month 1-12, day 1-31, 23:59:60).
bool PlausibleCivil(const CivilTime& t);

// Parses an RFC 3339 timestamp with 0-9 fraction digits and a `Z` or `+hh:mm`
// zone at the start of `text` (Go's RFC3339Nano, as written by CRI runtimes and
// Docker). Returns the bytes consumed, or 0 if `text` does not start with one.
size_t ParseRfc3339(std::string_view text, int64_t* utc_us, int32_t* offset_s);

// ParseRfc3339 behind the last minute it read. Kubelets write every CRI
// line's time in UTC, and consecutive lines mostly share their minute: a text
// whose first 17 bytes (`YYYY-MM-DDTHH:MM:`) are the last `Z` time's reads
// only its seconds, fraction and zone. Parse() returns exactly what
// ParseRfc3339 returns for the same text (tests/parse/time_util_test.cc).
class Rfc3339Cache {
 public:
  size_t Parse(std::string_view text, int64_t* utc_us, int32_t* offset_s);

 private:
  static constexpr size_t kMinuteBytes = 17;
  char minute_[kMinuteBytes] = {};
  bool valid_ = false;
  int64_t minute_us_ = 0;  // the minute's first microsecond
};

// Parses "YYYY-MM-DD HH:MM:SS" at the start of `text` (no fraction). Returns the
// bytes consumed or 0.
size_t ParseIsoDateTime(std::string_view text, CivilTime* out);

// Parses "MM-DD HH:MM:SS" (vLLM) at the start of `text`. Returns consumed or 0.
size_t ParseMonthDayTime(std::string_view text, CivilTime* out);

// Parses ".fff" / ",fff" (1-9 digits) at text[pos] into micros. Returns the
// bytes consumed (0 if none).
size_t ParseFraction(std::string_view text, size_t pos, int32_t* micros);

}  // namespace fingerprintd::parse
