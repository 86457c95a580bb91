// The calendar is <chrono>'s, in one place: the parser's conversions and the
// incident renderer's RFC 3339 dates agree on every day, checked against a
// naive day-by-day walk of the Gregorian calendar.
#include "parse/time_util.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <random>
#include <string>

#include "fingerprintd/correlate.h"

namespace fingerprintd::parse {
namespace {

bool Leap(int y) { return (y % 4 == 0 && y % 100 != 0) || y % 400 == 0; }
int DaysIn(int y, int m) {
  static constexpr int kDays[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  return m == 2 && Leap(y) ? 29 : kDays[m - 1];
}

TEST(TimeUtilTest, CalendarAgreesWithADayByDayWalkFrom1600To2400) {
  // Walk back from the epoch to 1600-01-01, then forward to 2400-12-31.
  int y = 1970, m = 1, d = 1;
  int64_t n = 0;
  while (y > 1600 || m > 1 || d > 1) {
    if (--d == 0) {
      if (--m == 0) m = 12, --y;
      d = DaysIn(y, m);
    }
    --n;
  }
  for (; y <= 2400; ++n) {
    ASSERT_EQ(DaysFromCivil(y, m, d), n) << y << "-" << m << "-" << d;
    int32_t cy, cm, cd;
    CivilFromDays(n, &cy, &cm, &cd);
    ASSERT_EQ(cy * 10000 + cm * 100 + cd, y * 10000 + m * 100 + d) << n;
    if (d == 1 || (m == 2 && d >= 28)) {
      char expected[64];
      std::snprintf(expected, sizeof(expected), "%04d-%02d-%02dT00:00:00Z", y, m, d);
      ASSERT_EQ(correlate::FormatRfc3339(n * 86400 * 1'000'000), expected);
    }
    if (++d > DaysIn(y, m)) {
      d = 1;
      if (++m > 12) m = 1, ++y;
    }
  }
}

TEST(TimeUtilTest, YearlessTimeTakesTheLatestYearNotAfterTheLimit) {
  const auto at = [](int y, int mo, int d, int h) {
    return (DaysFromCivil(y, mo, d) * 86400 + h * 3600) * 1'000'000;
  };
  CivilTime dec31{0, 12, 31, 23, 50, 0, 0};
  CivilTime jan1{0, 1, 1, 0, 10, 0, 0};
  const int64_t limit = at(2027, 1, 2, 0);
  EXPECT_EQ(LatestNotAfter(dec31, limit, 0), at(2026, 12, 31, 23) + 50 * 60'000'000LL);
  EXPECT_EQ(LatestNotAfter(jan1, limit, 0), at(2027, 1, 1, 0) + 10 * 60'000'000LL);
  // A limit just past New Year still gives the new year's first minutes.
  EXPECT_EQ(LatestNotAfter(jan1, at(2026, 12, 31, 22), 0), at(2026, 1, 1, 0) + 10 * 60'000'000LL);
  EXPECT_EQ(LatestNotAfter(jan1, at(2027, 1, 1, 1), 0), at(2027, 1, 1, 0) + 10 * 60'000'000LL);
}

TEST(TimeUtilTest, DayPastTheMonthsEndCarriesIntoTheNextMonth) {
  EXPECT_EQ(DaysFromCivil(2025, 2, 29), DaysFromCivil(2025, 3, 1));
  EXPECT_EQ(DaysFromCivil(2024, 2, 31), DaysFromCivil(2024, 3, 2));
}

// ParseFraction reads nine digits at once (CRI's nanoseconds): it must give
// what reading them one by one gives, for any bytes around them.
TEST(TimeUtilTest, FractionOfNineDigitsReadAtOnceAgreesWithReadingDigitByDigit) {
  auto naive = [](std::string_view text, size_t pos, int32_t* micros) -> size_t {
    if (pos >= text.size() || (text[pos] != '.' && text[pos] != ',')) return 0;
    size_t i = pos + 1;
    int32_t value = 0;
    int digits = 0;
    for (; i < text.size() && digits < 9 && text[i] >= '0' && text[i] <= '9'; ++i, ++digits) {
      if (digits < 6) value = value * 10 + (text[i] - '0');
    }
    if (digits == 0) return 0;
    for (int k = digits; k < 6; ++k) value *= 10;
    *micros = value;
    return i - pos;
  };
  std::mt19937 rng(20261130);
  const std::string alphabet = "0123456789.,Z :\x2f\x3a\xf9\xff";  // digits and their neighbours
  for (int round = 0; round < 20000; ++round) {
    std::string text(rng() % 14, '0');
    for (char& c : text)
      c = rng() % 4 ? static_cast<char>('0' + rng() % 10) : alphabet[rng() % alphabet.size()];
    if (!text.empty() && rng() % 2) text[0] = '.';
    int32_t fast = -1, slow = -1;
    ASSERT_EQ(ParseFraction(text, 0, &fast), naive(text, 0, &slow)) << text;
    ASSERT_EQ(fast, slow) << text;
  }
  int32_t micros = 0;
  EXPECT_EQ(ParseFraction(".123456789Z", 0, &micros), 10u);
  EXPECT_EQ(micros, 123456);
  EXPECT_EQ(ParseFraction(".1234567890", 0, &micros), 10u);
  EXPECT_EQ(ParseFraction(".12345678:9", 0, &micros), 9u);
  EXPECT_EQ(micros, 123456);
}

// Rfc3339Cache reads the minute of the last `Z` time once: on runs of CRI
// times in and around a few minutes (fractions of 0-9 digits, leap seconds,
// other zones, damaged bytes) it returns exactly what ParseRfc3339 returns.
TEST(TimeUtilTest, Rfc3339CacheAgreesWithParseRfc3339OnRunsOfTimes) {
  std::mt19937 rng(3339);
  Rfc3339Cache cache;
  const std::string minutes[] = {"2026-03-04T10:15:", "2026-03-04T10:16:", "2026-12-31T23:59:",
                                 "2027-01-01T00:00:", "2026-02-29T10:15:"};
  const std::string zones[] = {"Z", "Z", "Z", "z", "+02:00", "-05:30", "", "Q"};
  for (int round = 0; round < 50000; ++round) {
    char sec[3];
    std::snprintf(sec, sizeof(sec), "%02u", static_cast<unsigned>(rng() % 62));
    std::string text = minutes[rng() % 5] + sec;
    if (rng() % 3 != 0) text += "." + std::to_string(rng() % 1000000000).substr(0, rng() % 10);
    text += zones[rng() % 8];
    if (rng() % 2) text += " stdout F x";
    if (rng() % 20 == 0) text[rng() % text.size()] = "0:T.Z-x"[rng() % 7];
    int64_t want_us = -1, got_us = -1;
    int32_t want_zone = -1, got_zone = -1;
    const size_t want = ParseRfc3339(text, &want_us, &want_zone);
    ASSERT_EQ(cache.Parse(text, &got_us, &got_zone), want) << text;
    if (want == 0) continue;
    ASSERT_EQ(got_us, want_us) << text;
    ASSERT_EQ(got_zone, want_zone) << text;
  }
}

}  // namespace
}  // namespace fingerprintd::parse
