// Inputs tests/fuzz/http_fuzz.cc found that once broke http::Api, each named
// after what it found.
#include <gtest/gtest.h>

#include "http/api.h"
#include "testing/counting_events.h"

namespace fingerprintd::http {
namespace {

constexpr int64_t kNow = 1'764'504'000'000'000;  // 2025-11-30T12:00:00Z

class ApiFuzzRegressionTest : public ::testing::Test {
 protected:
  Response Get(std::string_view path, std::string_view query) {
    return api_.Handle(Request{"GET", path, query, ""}, kNow);
  }

  testing::CountingEvents events_;
  sink::Metrics metrics_{"9.9.9"};
  sink::IncidentStore store_{events_, /*max_recent_closed=*/500,
                             /*max_closed_age_us=*/24LL * 3600 * 1'000'000};
  Api api_{metrics_, store_, "9.9.9"};
};

// Unix seconds whose microseconds overflow int64 were multiplied anyway
// (signed overflow, UBSan): now a 400 like any other unreadable `since`.
TEST_F(ApiFuzzRegressionTest, SinceSecondsOverflowingMicrosecondsIsABadRequest) {
  EXPECT_EQ(Get("/incidents", "since=2029999999999999999").status, 400);
  EXPECT_EQ(Get("/incidents", "since=-9223372036855").status, 400);
  EXPECT_EQ(Get("/incidents", "since=9223372036854").status, 200);  // the largest that fits
  EXPECT_EQ(Get("/incidents", "since=1764504000").status, 200);
}

}  // namespace
}  // namespace fingerprintd::http
