// The replay's progress line (issue 45): how far, how fast, how long left.
#include "source/replay_progress.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace fingerprintd::source {
namespace {

TEST(ReplayProgressTest, AGzipArchiveHalfReadSaysHowFarHowFastAndHowLongIsLeft) {
  ReplayStats done;
  done.input_bytes = 1'000'000'000;  // compressed, of 2 GB
  done.bytes = 4'000'000'000;        // of log text inflated from it
  done.files = 12;
  EXPECT_EQ(ReplayProgressLine(done, {2'000'000'000, 40}, 10.0, 3),
            "replay: 1.00 GB of 2.00 GB (50%), files 12 of 40, 400 MB/s, 0:10 elapsed, ~0:10 "
            "left, 3 incidents");
}

TEST(ReplayProgressTest, StdinHasNoTotalSoNoPercentageAndNoEstimate) {
  ReplayStats done;
  done.bytes = 25'000'000;
  done.files = 1;
  EXPECT_EQ(ReplayProgressLine(done, {0, 1}, 0.5, 1),
            "replay: 25 MB read, files 1 of 1, 50 MB/s, 0:01 elapsed, 1 incident");
}

TEST(ReplayProgressTest, AnHourLongReplayShowsHours) {
  ReplayStats done;
  done.input_bytes = 100'000'000;
  done.bytes = 100'000'000;
  done.files = 1;
  EXPECT_THAT(ReplayProgressLine(done, {200'000'000, 2}, 3723.0, 0),
              ::testing::HasSubstr("1:02:03 elapsed, ~1:02:03 left, 0 incidents"));
}

}  // namespace
}  // namespace fingerprintd::source
