// IsPlainAscii takes 16 or 32 bytes per test (SSE2, or AVX2 where the CPU has
// it) and overlaps the tail: checked against a byte-by-byte oracle at every
// length and position of the one byte that is not plain.
#include "parse/ansi.h"

#include <gtest/gtest.h>

#include <random>
#include <string>

namespace fingerprintd::parse {
namespace {

bool NaivePlainAscii(std::string_view text) {
  for (char c : text) {
    const unsigned char u = static_cast<unsigned char>(c);
    if (u < 0x20 || u >= 0x7f) return false;
  }
  return true;
}

TEST(AnsiTest, PlainAsciiAgreesWithAByteByByteCheckAtEveryLengthAndPosition) {
  const std::string others = std::string("\x1b\t\r\x7f\x80\xff\x1f", 7) + std::string(1, '\0');
  for (size_t n = 0; n <= 130; ++n) {
    const std::string plain(n, 'a');
    EXPECT_TRUE(IsPlainAscii(plain)) << n;
    for (size_t at = 0; at < n; ++at) {
      for (char c : others) {
        std::string text = plain;
        text[at] = c;
        ASSERT_FALSE(IsPlainAscii(text)) << "length " << n << " at " << at << " byte " << +c;
      }
    }
  }
  std::mt19937 rng(20261130);
  for (int round = 0; round < 5000; ++round) {
    std::string text(rng() % 300, ' ');
    for (char& c : text) c = static_cast<char>(rng() % 200 ? 0x20 + rng() % 0x5f : rng() % 256);
    // Views at every alignment of the same bytes.
    const size_t skip = rng() % 8;
    const std::string_view view = std::string_view(text).substr(std::min(skip, text.size()));
    ASSERT_EQ(IsPlainAscii(view), NaivePlainAscii(view)) << round;
  }
}

}  // namespace
}  // namespace fingerprintd::parse
