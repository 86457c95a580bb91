// SimdLiteralSearch reports exactly the occurrence ends a naive
// case-insensitive search finds, with AVX2 (where the CPU has it) and without:
// random bytes of every value, literals planted in random case at every
// position near a buffer's start and end, buffers of every length around the
// 32-byte block, overlapping occurrences, and literal sets that make the
// fingerprints 1, 2 or 3 bytes wide or crowd the buckets and the bitmap.
#include "rules/simd_literal_search.h"

#include <gtest/gtest.h>

#include <random>
#include <set>
#include <string>
#include <vector>

#include "parse/quiet_line.h"
#include "rules/buffer_matcher.h"
#include "testing/replay_harness.h"

namespace fingerprintd::rules {
namespace {

char Lower(char c) { return (c >= 'A' && c <= 'Z') ? static_cast<char>(c + 32) : c; }

std::multiset<size_t> NaiveEnds(const std::vector<std::string>& literals, std::string_view text) {
  std::string lowered(text);
  for (char& c : lowered) c = Lower(c);
  std::multiset<size_t> ends;
  for (std::string literal : literals) {
    for (char& c : literal) c = Lower(c);
    if (literal.empty()) continue;
    for (size_t at = lowered.find(literal); at != std::string::npos;
         at = lowered.find(literal, at + 1)) {
      ends.insert(at + literal.size());
    }
  }
  return ends;
}

// Both paths' ends; each occurrence once (the literals given are distinct).
void ExpectNaiveEnds(const SimdLiteralSearch& search, const std::vector<std::string>& literals,
                     std::string_view text, const std::string& what) {
  const std::multiset<size_t> want = NaiveEnds(literals, text);
  std::vector<size_t> ends;
  search.FindEnds(text, &ends);
  ASSERT_EQ(std::multiset<size_t>(ends.begin(), ends.end()), want) << what;
  ends.clear();
  search.FindEndsPortable(text, &ends);
  ASSERT_EQ(std::multiset<size_t>(ends.begin(), ends.end()), want) << what << " (portable)";
}

const std::vector<std::string>& RealLiterals() {
  static const std::vector<std::string> literals =
      BufferMatcher::Searched(parse::WithQuietLineTriggers(testing::EmbeddedRules()->Atoms()));
  return literals;
}

std::string RandomCase(std::mt19937& rng, std::string s) {
  for (char& c : s) {
    if (rng() % 2 && c >= 'a' && c <= 'z') c = static_cast<char>(c - 32);
  }
  return s;
}

// `size` bytes: mostly log-like, with every byte value, ESC and newlines.
std::string RandomBytes(std::mt19937& rng, size_t size) {
  const std::string alphabet = "abcdefgkmnorstuwxyzABCDEFKOSTW _[]()'\"=:./0123\n\x1b";
  std::string text(size, ' ');
  for (char& c : text) {
    c = rng() % 8 == 0 ? static_cast<char>(rng() % 256) : alphabet[rng() % alphabet.size()];
  }
  return text;
}

TEST(SimdLiteralSearchTest, TheRealLiteralsAreTheOnesReplaySearches) {
  EXPECT_EQ(RealLiterals().size(), 136u);
  EXPECT_TRUE(!SimdLiteralSearch::UsesAvx2() || __builtin_cpu_supports("avx2"));
}

TEST(SimdLiteralSearchTest, AgreesWithANaiveSearchOnRandomBuffersWithTheRealLiterals) {
  const std::vector<std::string>& literals = RealLiterals();
  const SimdLiteralSearch search(literals);
  std::mt19937 rng(20261201);
  for (int round = 0; round < 300; ++round) {
    std::string text = RandomBytes(rng, rng() % 3000);
    for (int i = static_cast<int>(rng() % 30); i > 0; --i) {
      text.insert(rng() % (text.size() + 1), RandomCase(rng, literals[rng() % literals.size()]));
    }
    ExpectNaiveEnds(search, literals, text, "round " + std::to_string(round));
  }
}

TEST(SimdLiteralSearchTest, FindsEveryRealLiteralAtEveryPositionNearABuffersStartAndEnd) {
  const std::vector<std::string>& literals = RealLiterals();
  const SimdLiteralSearch search(literals);
  std::mt19937 rng(7);
  for (size_t size : {size_t{100}, size_t{131}, size_t{160}}) {
    const std::string background = RandomBytes(rng, size);
    for (const std::string& literal : literals) {
      if (literal.size() > size) continue;
      for (size_t at = 0; at + literal.size() <= size; ++at) {
        if (at > 40 && at + literal.size() + 40 < size) continue;  // near the edges only
        std::string text = background;
        text.replace(at, literal.size(), RandomCase(rng, literal));
        ExpectNaiveEnds(search, literals, text, "'" + literal + "' at " + std::to_string(at));
      }
    }
  }
}

TEST(SimdLiteralSearchTest, ALiteralAtOffsetZeroAndOneEndingAtTheLastByteAreFound) {
  const std::vector<std::string> literals = {"exit", "unknown sf transformation", "torch.",
                                             "this gpu"};
  const SimdLiteralSearch search(literals);
  for (const std::string& first : literals) {
    for (const std::string& last : literals) {
      for (size_t middle : {0, 1, 5, 26, 27, 28, 64, 97}) {
        const std::string text = first + std::string(middle, 'x') + last;
        ExpectNaiveEnds(search, literals, text, text);
        std::vector<size_t> ends;
        search.FindEnds(text, &ends);
        EXPECT_EQ(std::set<size_t>(ends.begin(), ends.end()).count(text.size()), 1u) << text;
      }
    }
  }
}

TEST(SimdLiteralSearchTest, BuffersOfEveryLengthAroundTheBlockSizeAreSearchedToTheEnd) {
  const std::vector<std::string>& literals = RealLiterals();
  const SimdLiteralSearch search(literals);
  std::mt19937 rng(32);
  for (size_t size = 0; size <= 200; ++size) {  // shorter than 32, not multiples of 32
    for (int round = 0; round < 20; ++round) {
      std::string text = RandomBytes(rng, size);
      const std::string& literal = literals[rng() % literals.size()];
      if (literal.size() <= size) {
        const size_t at = rng() % 2 ? size - literal.size() : rng() % (size - literal.size() + 1);
        text.replace(at, literal.size(), RandomCase(rng, literal));
      }
      ExpectNaiveEnds(search, literals, text, "size " + std::to_string(size));
    }
  }
}

TEST(SimdLiteralSearchTest, OverlappingAndRepeatedOccurrencesAreEachFound) {
  const std::vector<std::string> literals = {"aaaaaaa",  "aaaa",    "abab",
                                             "abababab", "warning", "arni"};
  const SimdLiteralSearch search(literals);
  for (size_t size = 0; size < 90; ++size) {
    ExpectNaiveEnds(search, literals, std::string(size, 'a'), "a*" + std::to_string(size));
    ExpectNaiveEnds(search, literals, std::string(size, 'A'), "A*" + std::to_string(size));
    std::string ab;
    for (size_t i = 0; i < size; ++i) ab += i % 2 ? 'B' : 'a';
    ExpectNaiveEnds(search, literals, ab, "ab*" + std::to_string(size));
    std::string warnings;
    while (warnings.size() < size) warnings += "WaRnInG";
    ExpectNaiveEnds(search, literals, warnings, "warning*" + std::to_string(size));
  }
}

// Literals of 1 and 2 bytes narrow the fingerprints; many literals crowd the
// buckets and the bitmap; punctuation folds onto other bytes (`[` onto `{`,
// '\x1b' onto ';'), which the exact comparison must reject.
TEST(SimdLiteralSearchTest, AnyLiteralSetAgreesWithANaiveSearch) {
  std::mt19937 rng(15);
  const std::string alphabet = "abcxyzAB_[{]};:@`^~ 019\x1b\n\x7f";
  for (int set = 0; set < 60; ++set) {
    std::vector<std::string> literals;
    const int count =
        set % 3 == 0 ? 1 + static_cast<int>(rng() % 4) : 1 + static_cast<int>(rng() % 300);
    const size_t max_size = set % 5 == 0 ? 3 : 12;
    std::set<std::string> seen;
    for (int i = 0; i < count; ++i) {
      std::string l(1 + rng() % max_size, ' ');
      for (char& c : l) c = Lower(alphabet[rng() % alphabet.size()]);
      if (seen.insert(l).second) literals.push_back(l);
    }
    const SimdLiteralSearch search(literals);
    for (int round = 0; round < 20; ++round) {
      std::string text(rng() % 700, ' ');
      for (char& c : text)
        c = rng() % 4 ? alphabet[rng() % alphabet.size()] : static_cast<char>(rng());
      for (int i = static_cast<int>(rng() % 8); i > 0; --i) {
        text.insert(rng() % (text.size() + 1), RandomCase(rng, literals[rng() % literals.size()]));
      }
      ExpectNaiveEnds(search, literals, text,
                      "set " + std::to_string(set) + " round " + std::to_string(round));
    }
  }
}

TEST(SimdLiteralSearchTest, NoLiteralsFindNothing) {
  const SimdLiteralSearch none;
  const SimdLiteralSearch empty({"", ""});
  std::vector<size_t> ends;
  none.FindEnds("exit error", &ends);
  empty.FindEnds("exit error", &ends);
  empty.FindEndsPortable("exit error", &ends);
  EXPECT_TRUE(ends.empty());
}

}  // namespace
}  // namespace fingerprintd::rules
