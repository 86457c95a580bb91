// The year of lines that print none (vLLM `MM-DD HH:MM:SS`, journald
// `Mon DD HH:MM:SS`) in a daemon that runs for days: guessed from the wall
// clock as the lines are read (ParserOptions::wall_clock, which the daemon
// sets to common/wall_clock.h's WallNowMicros), not from the clock read when the
// source was registered. Here the clock is a fake the test moves.
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "fingerprintd/parse.h"
#include "parse/time_util.h"
#include "testing/collecting_sink.h"
#include "testing/counting_events.h"

namespace fingerprintd::parse {
namespace {

using ::fingerprintd::testing::CollectingSink;
using ::fingerprintd::testing::CountingEvents;

int64_t fake_now_us = 0;
int64_t FakeClock() { return fake_now_us; }

int64_t Utc(int32_t year, int32_t month, int32_t day, int32_t hour, int32_t minute,
            int32_t second) {
  CivilTime t{0, month, day, hour, minute, second, 0};
  return CivilToUnixMicros(t, year, 0);
}

class YearClockTest : public ::testing::Test {
 protected:
  // A source registered on 2025-12-01, as a daemon started then would have it.
  void Register(Envelope envelope) {
    ParserOptions options;
    options.envelope = envelope;
    options.now_us = Utc(2025, 12, 1, 0, 0, 0);
    options.current_year = 2025;
    options.wall_clock = &FakeClock;
    parser_ = std::make_unique<SourceParser>(1, "live.log", options, events_, sink_);
  }
  // Feeds `line` at wall time `now_us`; the time the parser gave it.
  int64_t ReadAt(int64_t now_us, const std::string& line) {
    fake_now_us = now_us;
    const size_t before = sink_.records.size();
    parser_->Feed(line);
    parser_->Tick(now_us);
    EXPECT_EQ(sink_.records.size(), before + 1) << line;
    return sink_.records.empty() ? 0 : sink_.records.back().time_us;
  }

  CountingEvents events_;
  CollectingSink sink_;
  std::unique_ptr<SourceParser> parser_;
};

TEST_F(YearClockTest, NewYearAcrossARunningDaemonDatesJanuaryLinesInTheNewYear) {
  Register(Envelope::kPlain);
  EXPECT_EQ(ReadAt(Utc(2025, 12, 31, 23, 59, 58), "INFO 12-31 23:59:57 [a.py:1] last of the year"),
            Utc(2025, 12, 31, 23, 59, 57));
  // Read after midnight: the new year, not 2025-01-01 (a year back) as the
  // clock of 2025-12-01 read at registration gave.
  EXPECT_EQ(ReadAt(Utc(2026, 1, 1, 0, 0, 3), "INFO 01-01 00:00:02 [a.py:1] first of the next"),
            Utc(2026, 1, 1, 0, 0, 2));
  // A Dec 31 line read (late) after midnight keeps its year.
  EXPECT_EQ(ReadAt(Utc(2026, 1, 1, 0, 0, 4), "INFO 12-31 23:59:59 [a.py:1] late"),
            Utc(2025, 12, 31, 23, 59, 59));
  EXPECT_EQ(events_.Guessed(TimeFallback::kYearFromClock), 3u);
}

TEST_F(YearClockTest, ARepeatedTimeIsDatedAgainOnceTheClockPassesNewYear) {
  Register(Envelope::kPlain);
  // Read 15 h before it can have been written (beyond the 14 h zone slack):
  // last year's. The same time read again after New Year: this year's.
  EXPECT_EQ(ReadAt(Utc(2025, 12, 31, 9, 0, 0), "INFO 01-01 00:00:20 [a.py:1] early"),
            Utc(2025, 1, 1, 0, 0, 20));
  EXPECT_EQ(ReadAt(Utc(2025, 12, 31, 9, 0, 1), "INFO 01-01 00:00:20 [a.py:1] early again"),
            Utc(2025, 1, 1, 0, 0, 20));
  EXPECT_EQ(ReadAt(Utc(2026, 1, 1, 0, 0, 30), "INFO 01-01 00:00:20 [a.py:1] on time"),
            Utc(2026, 1, 1, 0, 0, 20));
}

TEST_F(YearClockTest, NewYearAcrossARunningDaemonDatesJanuaryJournaldLinesInTheNewYear) {
  Register(Envelope::kJournald);
  EXPECT_EQ(ReadAt(Utc(2025, 12, 31, 23, 59, 58), "Dec 31 23:59:57 gpu-7 vllm[88]: last"),
            Utc(2025, 12, 31, 23, 59, 57));
  EXPECT_EQ(ReadAt(Utc(2026, 1, 1, 0, 0, 3), "Jan 01 00:00:02 gpu-7 vllm[88]: first"),
            Utc(2026, 1, 1, 0, 0, 2));
}

TEST_F(YearClockTest, YearlessLinesAfterADatedLineKeepItsYearNotTheClocks) {
  Register(Envelope::kPlain);
  // A copied log read a year and a half later: before any dated line the
  // clock's year; after Ray's full date, that year, for the yearless lines
  // of the same moments.
  EXPECT_EQ(ReadAt(Utc(2026, 12, 5, 0, 0, 0), "INFO 04-25 05:13:44 [utils.py:299] start"),
            Utc(2026, 4, 25, 5, 13, 44));
  EXPECT_EQ(ReadAt(Utc(2026, 12, 5, 0, 0, 1), "2025-04-25 05:13:51,243\tINFO worker.py:1 -- Ray"),
            Utc(2025, 4, 25, 5, 13, 51) + 243'000);
  EXPECT_EQ(ReadAt(Utc(2026, 12, 5, 0, 0, 2), "ERROR 04-25 05:14:10 [core.py:1] failed"),
            Utc(2025, 4, 25, 5, 14, 10));
  // A log goes forward from its dated line: December after that April is
  // the same year's, never one the clock or the file could not have seen.
  EXPECT_EQ(ReadAt(Utc(2026, 12, 5, 0, 0, 3), "INFO 12-30 10:00:00 [core.py:1] late in the year"),
            Utc(2025, 12, 30, 10, 0, 0));
}

// One line dated far ahead of when it can have been written must not move
// time on: the deployment's clock would pass its open incidents' max_age and
// close them in the millisecond they open.
TEST_F(YearClockTest, ALineDatedAfterItCanHaveBeenWrittenIsDatedByTheLineBeforeAndCounted) {
  Register(Envelope::kPlain);
  EXPECT_EQ(ReadAt(Utc(2026, 12, 5, 9, 0, 0), "INFO 12-05 08:59:59 [a.py:1] serving"),
            Utc(2026, 12, 5, 8, 59, 59));
  EXPECT_EQ(ReadAt(Utc(2026, 12, 5, 9, 0, 1), "2099-01-01 00:00:00,000\tERROR a.py:1 -- from 2099"),
            Utc(2026, 12, 5, 8, 59, 59));
  // A header in local time up to 14 h ahead of UTC is not misdated.
  EXPECT_EQ(ReadAt(Utc(2026, 12, 5, 9, 0, 2), "2026-12-05 18:00:02,000\tINFO a.py:1 -- UTC+9"),
            Utc(2026, 12, 5, 18, 0, 2));
  EXPECT_EQ(ReadAt(Utc(2026, 12, 5, 9, 0, 3), "ERROR 12-05 09:00:03 [core.py:1] failed"),
            Utc(2026, 12, 5, 9, 0, 3));
  EXPECT_EQ(events_.Guessed(TimeFallback::kMisdated), 1u);
}

TEST_F(YearClockTest, AYearlessHeaderInsideACriRecordTakesTheRecordsTimeWhenItIsFarAhead) {
  Register(Envelope::kCri);
  // torch's glog date inside a record containerd wrote today: the nearest
  // year to the envelope puts February next year, months after the record.
  EXPECT_EQ(ReadAt(Utc(2026, 12, 5, 9, 0, 1),
                   "2026-12-05T09:00:00.500000000Z stderr F [rank0]:[W217 10:00:00.000000000 "
                   "ProcessGroupNCCL.cpp:1000] Warning: something"),
            Utc(2026, 12, 5, 9, 0, 0) + 500'000);
  EXPECT_EQ(events_.Guessed(TimeFallback::kMisdated), 1u);
  // The usual case: the header a moment before its record, taken as is.
  EXPECT_EQ(ReadAt(Utc(2026, 12, 5, 9, 0, 2),
                   "2026-12-05T09:00:01.900000000Z stdout F INFO 12-05 09:00:01 [a.py:1] fine"),
            Utc(2026, 12, 5, 9, 0, 1));
  EXPECT_EQ(events_.Guessed(TimeFallback::kMisdated), 1u);
}

}  // namespace
}  // namespace fingerprintd::parse
