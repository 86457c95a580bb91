// The shared FNV-1a hash keeps the values ids were built with before it was
// shared, and separates its parts.
#include "common/hash.h"

#include <gtest/gtest.h>

namespace fingerprintd {
namespace {

TEST(HashTest, Fnv1a64KeepsTheValuesOfTheCorrelatorsOwnCopy) {
  // Computed with the correlator's former local Fnv (0x1f after every part).
  EXPECT_EQ(Hex64(Fnv1a64({"deployment", "rule", "v1:0123", "42"})), "2b45d74f6dde2461");
}

TEST(HashTest, PartsAreSeparatedSoMovedBoundariesHashDifferently) {
  EXPECT_NE(Fnv1a64({"ab", "c"}), Fnv1a64({"a", "bc"}));
  EXPECT_NE(Fnv1a64({"abc"}), Fnv1a64({"abc", ""}));
}

TEST(HashTest, IncrementalHasherEqualsThePartsForm) {
  Fnv1a64Hasher hasher;
  hasher.Add("a");
  hasher.Add("bc");
  EXPECT_EQ(hasher.value(), Fnv1a64({"a", "bc"}));
}

}  // namespace
}  // namespace fingerprintd
