#include "parse/time_util.h"

#include <chrono>
#include <cstring>

namespace fingerprintd::parse {

// <chrono>'s proleptic Gregorian calendar: independent of TZ and locale. A
// day past the month's end carries into the next month (Feb 30 -> Mar 2), as
// the standard defines for year_month_day with a valid year and month.
int64_t DaysFromCivil(int64_t y, int32_t m, int32_t d) {
  using namespace std::chrono;
  const year_month_day ymd{year{static_cast<int>(y)}, month{static_cast<unsigned>(m)},
                           day{static_cast<unsigned>(d)}};
  return sys_days{ymd}.time_since_epoch().count();
}

void CivilFromDays(int64_t z, int32_t* year, int32_t* month, int32_t* day) {
  using namespace std::chrono;
  const year_month_day ymd{sys_days{days{z}}};
  *year = static_cast<int>(ymd.year());
  *month = static_cast<int32_t>(static_cast<unsigned>(ymd.month()));
  *day = static_cast<int32_t>(static_cast<unsigned>(ymd.day()));
}

int64_t CivilToUnixMicros(const CivilTime& t, int32_t year, int32_t offset_s) {
  const int64_t days = DaysFromCivil(year, t.month, t.day);
  const int64_t secs = days * 86400 + t.hour * 3600 + t.minute * 60 + t.second - offset_s;
  return secs * 1'000'000 + t.micros;
}

int64_t LatestNotAfter(const CivilTime& t, int64_t limit_us, int32_t offset_s) {
  const int64_t limit_secs = limit_us / 1'000'000 - (limit_us % 1'000'000 < 0 ? 1 : 0);
  int32_t y, m, d;
  CivilFromDays(limit_secs / 86400 - (limit_secs % 86400 < 0 ? 1 : 0), &y, &m, &d);
  for (int32_t candidate : {y + 1, y}) {
    const int64_t v = CivilToUnixMicros(t, candidate, offset_s);
    if (v <= limit_us) return v;
  }
  return CivilToUnixMicros(t, y - 1, offset_s);
}

int64_t YearGuessChangesAt(const CivilTime& t, int64_t guessed_us, int32_t offset_s,
                           int64_t slack_us) {
  int32_t y, m, d;
  CivilFromDays(LocalDayOf(guessed_us, offset_s), &y, &m, &d);
  return CivilToUnixMicros(t, y + 1, offset_s) - slack_us;
}

int64_t LocalDayOf(int64_t time_us, int32_t offset_s) {
  const int64_t local_secs = time_us / 1'000'000 + offset_s;
  return local_secs / 86400 - (local_secs % 86400 < 0 ? 1 : 0);
}

void NearestYearCandidates(const CivilTime& t, int64_t local_day, int32_t offset_s,
                           int64_t out[3]) {
  int32_t y, m, d;
  CivilFromDays(local_day, &y, &m, &d);
  out[0] = CivilToUnixMicros(t, y, offset_s);
  out[1] = CivilToUnixMicros(t, y - 1, offset_s);
  out[2] = CivilToUnixMicros(t, y + 1, offset_s);
}

int64_t NearestTo(const int64_t candidates[3], int64_t envelope_us) {
  int64_t best = candidates[0];
  for (int i = 1; i < 3; ++i) {
    const int64_t v = candidates[i];
    if ((v > envelope_us ? v - envelope_us : envelope_us - v) <
        (best > envelope_us ? best - envelope_us : envelope_us - best)) {
      best = v;
    }
  }
  return best;
}

bool PlausibleCivil(const CivilTime& t) {
  return t.month >= 1 && t.month <= 12 && t.day >= 1 && t.day <= 31 && t.hour <= 23 &&
         t.minute <= 59 && t.second <= 60;
}

size_t ParseFraction(std::string_view text, size_t pos, int32_t* micros) {
  if (pos >= text.size() || (text[pos] != '.' && text[pos] != ',')) return 0;
  // Nine digits (CRI's nanoseconds, on every line of a kubelet log): eight of
  // them tested at once. A byte is a digit when its high nibble is 3 and so is
  // that of the byte plus 6 (no carry crosses bytes whose high nibble is 3).
  if (text.size() - pos >= 10) {
    uint64_t w;
    std::memcpy(&w, text.data() + pos + 1, sizeof(w));
    constexpr uint64_t kHigh = 0xF0F0F0F0F0F0F0F0u;
    const unsigned ninth = static_cast<unsigned char>(text[pos + 9]) - '0';
    if (((w & kHigh) | (((w + 0x0606060606060606u) & kHigh) >> 4)) == 0x3333333333333333u &&
        ninth <= 9) {
      // The eight digits' value, pairs then quads (the first digit is the
      // lowest byte), of which the first six are the microseconds.
      uint64_t v = w - 0x3030303030303030u;
      v = (v * 10 + (v >> 8)) & 0x00FF00FF00FF00FFu;
      v = (v * 100 + (v >> 16)) & 0x0000FFFF0000FFFFu;
      v = (v * 10000 + (v >> 32)) & 0xFFFFFFFFu;
      *micros = static_cast<int32_t>(v / 100);
      return 10;  // as below: at most nine digits are read
    }
  }
  size_t i = pos + 1;
  int32_t value = 0;
  int digits = 0;
  while (i < text.size() && digits < 9) {
    unsigned d = static_cast<unsigned char>(text[i]) - '0';
    if (d > 9) break;
    if (digits < 6) value = value * 10 + static_cast<int32_t>(d);
    ++digits;
    ++i;
  }
  if (digits == 0) return 0;
  for (int k = digits; k < 6; ++k) value *= 10;
  *micros = value;
  return i - pos;
}

size_t ParseMonthDayTime(std::string_view text, CivilTime* out) {
  // MM-DD HH:MM:SS
  if (text.size() < 14 || text[2] != '-' || text[5] != ' ' || text[8] != ':' || text[11] != ':') {
    return 0;
  }
  CivilTime t;
  if (!ReadDigits(text, 0, 2, &t.month) || !ReadDigits(text, 3, 2, &t.day) ||
      !ReadDigits(text, 6, 2, &t.hour) || !ReadDigits(text, 9, 2, &t.minute) ||
      !ReadDigits(text, 12, 2, &t.second) || !PlausibleCivil(t)) {
    return 0;
  }
  *out = t;
  return 14;
}

namespace {

// YYYY-MM-DD?HH:MM:SS, where ? is one of `separators`; returns 19 or 0.
size_t ParseDateAndTime(std::string_view text, std::string_view separators, CivilTime* out) {
  if (text.size() < 19 || text[4] != '-' || text[7] != '-' ||
      separators.find(text[10]) == std::string_view::npos || text[13] != ':' || text[16] != ':') {
    return 0;
  }
  CivilTime t;
  if (!ReadDigits(text, 0, 4, &t.year) || !ReadDigits(text, 5, 2, &t.month) ||
      !ReadDigits(text, 8, 2, &t.day) || !ReadDigits(text, 11, 2, &t.hour) ||
      !ReadDigits(text, 14, 2, &t.minute) || !ReadDigits(text, 17, 2, &t.second) ||
      !PlausibleCivil(t)) {
    return 0;
  }
  *out = t;
  return 19;
}

}  // namespace

size_t ParseIsoDateTime(std::string_view text, CivilTime* out) {
  return ParseDateAndTime(text, " ", out);
}

size_t ParseRfc3339(std::string_view text, int64_t* utc_us, int32_t* offset_s) {
  // YYYY-MM-DDTHH:MM:SS[.f{1,9}](Z|+hh:mm|-hh:mm)
  CivilTime t;
  if (text.size() < 20 || ParseDateAndTime(text, "Tt", &t) == 0) return 0;
  size_t pos = 19;
  if (pos < text.size() && text[pos] == '.') pos += ParseFraction(text, pos, &t.micros);
  if (pos >= text.size()) return 0;
  int32_t offset = 0;
  if (text[pos] == 'Z' || text[pos] == 'z') {
    ++pos;
  } else if (text[pos] == '+' || text[pos] == '-') {
    int32_t hh = 0, mm = 0;
    if (pos + 6 > text.size() || text[pos + 3] != ':' || !ReadDigits(text, pos + 1, 2, &hh) ||
        !ReadDigits(text, pos + 4, 2, &mm) || hh > 23 || mm > 59) {
      return 0;
    }
    offset = (hh * 3600 + mm * 60) * (text[pos] == '-' ? -1 : 1);
    pos += 6;
  } else {
    return 0;
  }
  *utc_us = CivilToUnixMicros(t, t.year, offset);
  *offset_s = offset;
  return pos;
}

size_t Rfc3339Cache::Parse(std::string_view text, int64_t* utc_us, int32_t* offset_s) {
  constexpr int64_t kMicrosPerSecond = 1'000'000;
  // The seconds (00-59; a leap second takes the full parse) and the fraction
  // after the minute, as ParseRfc3339 reads them; 0 where it must decide.
  auto seconds = [&](int32_t* sec, int32_t* micros) -> size_t {
    *micros = 0;
    if (text.size() < 20 || !ReadDigits(text, kMinuteBytes, 2, sec) || *sec > 59) return 0;
    size_t pos = 19;
    if (text[pos] == '.') pos += ParseFraction(text, pos, micros);
    return pos;
  };
  int32_t sec, micros;
  if (valid_ && text.size() > kMinuteBytes &&
      std::memcmp(text.data(), minute_, kMinuteBytes) == 0) {
    const size_t pos = seconds(&sec, &micros);
    if (pos != 0 && pos < text.size() && text[pos] == 'Z') {
      *utc_us = minute_us_ + sec * kMicrosPerSecond + micros;
      *offset_s = 0;
      return pos + 1;
    }
  }
  const size_t end = ParseRfc3339(text, utc_us, offset_s);
  if (end != 0 && *offset_s == 0) {
    const size_t pos = seconds(&sec, &micros);
    if (pos != 0 && pos + 1 == end && text[pos] == 'Z') {
      std::memcpy(minute_, text.data(), kMinuteBytes);
      valid_ = true;
      minute_us_ = *utc_us - sec * kMicrosPerSecond - micros;
    }
  }
  return end;
}

}  // namespace fingerprintd::parse
