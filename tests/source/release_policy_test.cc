// ReleasePolicy (source/release_policy.h): releases follow the pipeline's
// safe offset while it keeps up, and go past it (counted by the caller) only
// when it holds lines further back than a quarter of the bound.
#include "source/release_policy.h"

#include <gtest/gtest.h>

#include <random>

namespace fingerprintd::source {
namespace {

constexpr uint64_t kMiB = 1 << 20;

TEST(ReleasePolicyTest, AReleaseIsDueOnceHalfTheBoundWasReadPastTheLastOne) {
  ReleasePolicy policy(64 * kMiB);
  policy.OnLine(0);
  policy.OnLine(31 * kMiB);
  EXPECT_FALSE(policy.due());
  policy.OnLine(32 * kMiB);
  EXPECT_TRUE(policy.due());
  policy.Allowed(30 * kMiB);
  EXPECT_FALSE(policy.due());
  policy.OnLine(33 * kMiB);
  EXPECT_FALSE(policy.due());
}

TEST(ReleasePolicyTest, TheTargetIsTheSafeOffsetWhileItIsWithinAQuarterOfTheBound) {
  ReleasePolicy policy(64 * kMiB);
  for (uint64_t at = 0; at < 40 * kMiB; at += 100) policy.OnLine(at);
  bool forced = true;
  EXPECT_EQ(policy.Target(25 * kMiB, 40 * kMiB, &forced), 25 * kMiB);
  EXPECT_FALSE(forced);
}

TEST(ReleasePolicyTest, APipelineHoldingLinesFurtherBackIsOvertakenAtALineStartWithinTheBound) {
  ReleasePolicy policy(64 * kMiB);
  for (uint64_t at = 0; at < 40 * kMiB; at += 100) policy.OnLine(at);
  bool forced = false;
  uint64_t target = policy.Target(/*safe=*/1000, /*next=*/40 * kMiB, &forced);
  EXPECT_TRUE(forced);
  EXPECT_GE(target, 40 * kMiB - 16 * kMiB);
  EXPECT_LE(target, 40 * kMiB - 14 * kMiB);  // the oldest sample in range, 2 MiB apart
  EXPECT_EQ(target % 100, 0u);               // a line start
}

TEST(ReleasePolicyTest, TheTargetNeverGoesBackBelowWhatWasAllowed) {
  ReleasePolicy policy(64 * kMiB);
  policy.Allowed(10 * kMiB);
  bool forced = true;
  EXPECT_EQ(policy.Target(5 * kMiB, 12 * kMiB, &forced), 10 * kMiB);
  EXPECT_FALSE(forced);
}

TEST(ReleasePolicyTest, ReadBytesKeptStayUnderHalfTheBoundWhateverTheSafeOffsetDoes) {
  // A seeded model: lines of random lengths, a safe offset that sometimes
  // follows and sometimes stays put, a release whenever one is due.
  std::mt19937_64 rng(33);
  const uint64_t bound = 16 * kMiB;
  ReleasePolicy policy(bound);
  uint64_t next = 0, safe = 0, allowed = 0, max_kept = 0;
  for (int i = 0; i < 2'000'000; ++i) {
    policy.OnLine(next);
    next += 20 + rng() % 400;
    if (rng() % 1000 == 0) safe = next;  // the pipeline let go of what it held
    if (policy.due()) {
      bool forced = false;
      uint64_t target = policy.Target(safe, next, &forced);
      ASSERT_GE(target, allowed);
      ASSERT_LE(target, next);
      ASSERT_TRUE(forced || target == safe || target == allowed);
      allowed = target;
      policy.Allowed(allowed);
    }
    max_kept = std::max(max_kept, next - allowed);
  }
  EXPECT_LE(max_kept, bound / 2 + 512);
}

}  // namespace
}  // namespace fingerprintd::source
