// Inputs tests/fuzz/prefix_header_fuzz.cc found that once broke the header
// parser, each named after what it found.
#include <gtest/gtest.h>

#include "parse/header.h"

namespace fingerprintd::parse {
namespace {

// `[RANK n]` with more digits than an int32 holds overflowed while reading the
// rank (UBSan): such a tag is not a rank; the header itself still parses.
TEST(HeaderFuzzRegressionTest, TrtLlmRankTooLongForInt32IsNotARank) {
  Header h;
  ASSERT_TRUE(ParseHeader(
      "[02/19/2026-07:31:02] [TRT-LLM] [RANK 3000000000000000000000000000000000] [I] M(E", &h));
  EXPECT_EQ(h.kind, HeaderKind::kTrtLlm);
  EXPECT_FALSE(h.has_worker);

  ASSERT_TRUE(ParseHeader("[02/19/2026-07:31:02] [TRT-LLM] [RANK 999999999] [I] x", &h));
  EXPECT_TRUE(h.has_worker);
  EXPECT_EQ(h.worker.rank, 999999999);
}

}  // namespace
}  // namespace fingerprintd::parse
