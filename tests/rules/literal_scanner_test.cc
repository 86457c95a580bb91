// LiteralScanner finds exactly the literals a naive case-insensitive search
// finds: at the start and end of the text, overlapping, in any case, short
// literals included.
#include "rules/literal_scanner.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <random>

namespace fingerprintd::rules {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;

std::vector<int> Naive(const std::vector<std::string>& literals, std::string text) {
  auto lower = [](std::string s) {
    for (char& c : s) c = (c >= 'A' && c <= 'Z') ? static_cast<char>(c + 32) : c;
    return s;
  };
  text = lower(text);
  std::vector<int> out;
  for (size_t i = 0; i < literals.size(); ++i) {
    if (!literals[i].empty() && text.find(lower(literals[i])) != std::string::npos) {
      out.push_back(static_cast<int>(i));
    }
  }
  return out;
}

std::vector<int> Find(const LiteralScanner& scanner, std::string_view text) {
  std::vector<int> out;
  scanner.FindAll(text, &out);
  return out;
}

TEST(LiteralScannerTest, FindsLiteralsAnywhereInAnyCase) {
  LiteralScanner scanner({"unknown sf transformation", "keyerror: '", "oom", "cuda out of"});
  EXPECT_THAT(Find(scanner, "RuntimeError: ... Unknown SF transformation"), ElementsAre(0));
  EXPECT_THAT(Find(scanner, "KeyError: 'x'"), ElementsAre(1));
  EXPECT_THAT(Find(scanner, "OOM"), ElementsAre(2));
  EXPECT_THAT(Find(scanner, "CUDA out of memory, oom"), ElementsAre(2, 3));
  EXPECT_THAT(Find(scanner, "nothing to see here"), IsEmpty());
  EXPECT_THAT(Find(scanner, ""), IsEmpty());
  EXPECT_THAT(Find(scanner, "cud"), IsEmpty());
  EXPECT_FALSE(scanner.Any("Unknown SF transformatio"));
  EXPECT_TRUE(scanner.Any("xx unknown sf transformation"));
}

TEST(LiteralScannerTest, PunctuationIsNotCaseFolded) {
  // Bit 5 folding maps '[' onto '{' in the key; the exact compare must not.
  LiteralScanner scanner({"[rank0]", "_idx"});
  EXPECT_THAT(Find(scanner, "{rank0}"), IsEmpty());
  EXPECT_THAT(Find(scanner, "\x7fidx"), IsEmpty());
  EXPECT_THAT(Find(scanner, "x [RANK0] g_IDX"), ElementsAre(0, 1));
}

TEST(LiteralScannerTest, AgreesWithANaiveSearchOnRandomTexts) {
  std::mt19937 rng(20261129);
  const std::string alphabet = "abcdeABCDE _[]{}'\":.0123\x80\xff";
  auto random_string = [&](size_t min_len, size_t max_len) {
    std::string s(std::uniform_int_distribution<size_t>(min_len, max_len)(rng), ' ');
    for (char& c : s)
      c = alphabet[std::uniform_int_distribution<size_t>(0, alphabet.size() - 1)(rng)];
    return s;
  };
  for (int round = 0; round < 200; ++round) {
    std::vector<std::string> literals;
    // Some rounds with only long literals, so the scan strides over the text.
    size_t min_len = round % 2 ? 1 : static_cast<size_t>(4 + round % 5);
    for (int i = 0; i < 12; ++i) literals.push_back(random_string(min_len, min_len + 6));
    LiteralScanner scanner(literals);
    for (int t = 0; t < 50; ++t) {
      std::string text = random_string(0, 120);
      // Plant a literal sometimes, in a random case.
      if (t % 3 == 0) {
        std::string planted = literals[rng() % literals.size()];
        for (char& c : planted) {
          if (rng() % 2 && c >= 'a' && c <= 'z') c = static_cast<char>(c - 32);
        }
        text.insert(std::uniform_int_distribution<size_t>(0, text.size())(rng), planted);
      }
      ASSERT_EQ(Find(scanner, text), Naive(literals, text)) << "text: " << text;
      ASSERT_EQ(scanner.Any(text), !Naive(literals, text).empty());
    }
  }
}

}  // namespace
}  // namespace fingerprintd::rules
