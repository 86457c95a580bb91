// Names that are not valid UTF-8 (a path, a shipper's pod name) are escaped
// byte by byte, never replaced: the same bytes give the same name, and an
// operator can read which byte it was.
#include "common/utf8.h"

#include <gtest/gtest.h>

namespace fingerprintd {
namespace {

TEST(Utf8Test, ValidTextIsLeftAsItIs) {
  for (std::string_view text : {"", "vllm-0", "Qwen/Qwen3-30B-A3B-FP8", "été", "模型", "🙂"}) {
    EXPECT_TRUE(IsValidUtf8(text)) << text;
    EXPECT_EQ(EscapeInvalidUtf8(text), text);
  }
}

TEST(Utf8Test, EachInvalidByteIsWrittenAsBackslashXHexAndTheRestKept) {
  EXPECT_EQ(EscapeInvalidUtf8("vllm-\xff-0"), "vllm-\\xFF-0");
  EXPECT_EQ(EscapeInvalidUtf8("\xc3"), "\\xC3");                    // a sequence cut short
  EXPECT_EQ(EscapeInvalidUtf8("\xc3\xa9\xc3"), "é\\xC3");           // after a whole one
  EXPECT_EQ(EscapeInvalidUtf8("\xed\xa0\x80"), "\\xED\\xA0\\x80");  // a surrogate
  EXPECT_EQ(EscapeInvalidUtf8("\xc0\xaf"), "\\xC0\\xAF");           // an overlong '/'
  EXPECT_EQ(EscapeInvalidUtf8(std::string("a\0b", 3)), std::string("a\0b", 3));
  EXPECT_FALSE(IsValidUtf8("vllm-\xff-0"));
  EXPECT_TRUE(IsValidUtf8(EscapeInvalidUtf8("vllm-\xff\xfe\x80-0")));
}

TEST(Utf8Test, TwoNamesThatDifferInAnInvalidByteStayDifferent) {
  EXPECT_NE(EscapeInvalidUtf8("pod-\xfe"), EscapeInvalidUtf8("pod-\xff"));
}

}  // namespace
}  // namespace fingerprintd
