// The calendar is <chrono>'s, in one place: the parser's conversions and the
// incident renderer's RFC 3339 dates agree on every day, checked against a
// naive day-by-day walk of the Gregorian calendar.
#include "parse/time_util.h"

#include <gtest/gtest.h>

#include <cstdio>

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

}  // namespace
}  // namespace fingerprintd::parse
