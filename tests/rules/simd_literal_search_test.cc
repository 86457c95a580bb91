// SimdLiteralSearch reports exactly the occurrence ends a naive
// case-insensitive search finds, with AVX2 (where the CPU has it) and without:
// random bytes of every value, literals planted in random case at every
// position near a buffer's start and end, buffers of every length around the
// 32-byte block, overlapping occurrences, and literal sets that make the
// fingerprints 1, 2 or 3 bytes wide or crowd the buckets and the bitmap. And
// the bitmap of the bytes that are not printable ASCII, which the same pass
// writes, is exactly a naive loop's, whichever filter writes it.
#include "rules/simd_literal_search.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "parse/line_templates.h"
#include "rules/buffer_matcher.h"
#include "testing/naive_non_plain.h"
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

using testing::NaiveNonPlain;

constexpr uint64_t kGarbage = 0xa5a5a5a5a5a5a5a5u;

// FindEnds (AVX2 where the CPU has it) or FindEndsPortable into words holding
// garbage (all must be written), with a guard word past them (none other).
std::vector<uint64_t> NonPlainOf(const SimdLiteralSearch& search, std::string_view text,
                                 bool portable) {
  const size_t words = (text.size() + 63) / 64;
  std::vector<uint64_t> bits(words + 1, kGarbage);
  std::vector<size_t> ends;
  if (portable) {
    search.FindEndsPortable(text, &ends, bits.data());
  } else {
    search.FindEnds(text, &ends, bits.data());
  }
  EXPECT_EQ(bits.back(), kGarbage) << "a word past the text was written";
  bits.pop_back();
  return bits;
}

// Both paths' ends; each occurrence once (the literals given are distinct);
// with the bitmap of non-plain bytes and without.
void ExpectNaiveEnds(const SimdLiteralSearch& search, const std::vector<std::string>& literals,
                     std::string_view text, const std::string& what) {
  const std::multiset<size_t> want = NaiveEnds(literals, text);
  const std::vector<uint64_t> want_non_plain = NaiveNonPlain(text);
  for (bool portable : {false, true}) {
    const std::string path = portable ? " (portable)" : "";
    for (bool with_non_plain : {false, true}) {
      std::vector<size_t> ends;
      std::vector<uint64_t> bits(text.size() / 64 + 1, kGarbage);
      uint64_t* non_plain = with_non_plain ? bits.data() : nullptr;
      if (portable) {
        search.FindEndsPortable(text, &ends, non_plain);
      } else {
        search.FindEnds(text, &ends, non_plain);
      }
      ASSERT_EQ(std::multiset<size_t>(ends.begin(), ends.end()), want) << what << path;
      if (with_non_plain) {
        bits.resize(want_non_plain.size());
        ASSERT_EQ(bits, want_non_plain) << what << path << " (non-plain)";
      }
    }
  }
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
  EXPECT_EQ(RealLiterals().size(),
            127u);  // the ready, stop and start rules' INFO lines included; no ERROR stage's
                    // literal: RuleSet::Atoms()
#if defined(__x86_64__) && defined(__GNUC__)
  EXPECT_TRUE(!SimdLiteralSearch::UsesAvx2() || __builtin_cpu_supports("avx2"));
#else
  EXPECT_FALSE(SimdLiteralSearch::UsesAvx2());  // the AVX2 tier is x86-64 only (arm64: portable)
#endif
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

// The probes look at 64 bytes at a time, 8-byte windows every 8 bytes in
// lanes that alternate between the two halves: each literal at every
// alignment in a unit, across the units' and halves' edges, and in the
// 32-byte block a buffer may end with.
TEST(SimdLiteralSearchTest, FindsEveryRealLiteralAtEveryOffsetOfSeveralBlocks) {
  const std::vector<std::string>& literals = RealLiterals();
  const SimdLiteralSearch search(literals);
  std::mt19937 rng(64);
  for (size_t size : {size_t{260}, size_t{292}}) {  // 64-byte units, then a 32-byte block or not
    const std::string background = RandomBytes(rng, size);
    for (const std::string& literal : literals) {
      for (size_t at = 0; at + literal.size() <= size; ++at) {
        std::string text = background;
        text.replace(at, literal.size(), RandomCase(rng, literal));
        std::vector<size_t> ends;
        search.FindEnds(text, &ends);
        EXPECT_NE(std::find(ends.begin(), ends.end(), at + literal.size()), ends.end())
            << "'" << literal << "' at " << at << " of " << size;
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

// Every byte value that matters (the edges of 0x20..0x7e, '\n', ESC, DEL,
// bytes >= 0x80) at every position of buffers of every length around the
// block, the pair of blocks and the last bytes, starting at every alignment;
// for literal sets that make the short filter write the bitmap, the probes
// (no literal under 7 bytes), and none (one byte at a time).
TEST(SimdLiteralSearchTest, MarksExactlyTheBytesThatAreNotPrintableAsciiAtEveryPosition) {
  const std::vector<std::vector<std::string>> sets = {
      RealLiterals(), {"exit", "oom"}, {"unknown sf transformation", "keyerror"}, {}};
  const std::string marked = std::string("\x00\x09\n\x0d\x1b\x1f\x7f\x80\xc3\xff", 10);
  const std::string plain = " ~Aa0";  // 0x20 and 0x7e are printable
  std::mt19937 rng(16);
  for (const std::vector<std::string>& literals : sets) {
    const SimdLiteralSearch search(literals);
    std::string backing(300, ' ');
    for (char& c : backing) c = plain[rng() % plain.size()];
    for (size_t size : {size_t{0}, size_t{1}, size_t{31}, size_t{32}, size_t{35}, size_t{36},
                        size_t{37}, size_t{63}, size_t{64}, size_t{67}, size_t{68}, size_t{96},
                        size_t{100}, size_t{127}, size_t{128}, size_t{131}, size_t{200}}) {
      for (size_t align = 0; align < 32; align += (size > 100 ? 7 : 1)) {
        for (size_t at = 0; at < size; ++at) {
          std::string copy = backing;
          copy[align + at] = marked[rng() % marked.size()];
          const std::string_view text = std::string_view(copy).substr(align, size);
          const std::vector<uint64_t> want = NaiveNonPlain(text);
          const std::string what = std::to_string(literals.size()) + " literals, size " +
                                   std::to_string(size) + " align " + std::to_string(align) +
                                   " at " + std::to_string(at);
          ASSERT_EQ(NonPlainOf(search, text, false), want) << what;
          ASSERT_EQ(NonPlainOf(search, text, true), want) << what << " (portable)";
        }
        const std::string_view text = std::string_view(backing).substr(align, size);
        ASSERT_EQ(NonPlainOf(search, text, false), NaiveNonPlain(text)) << "all plain " << size;
      }
    }
  }
}

// Log-like buffers of many 16 KiB chunks, with ESC heads, tabs, '\r', UTF-8,
// DEL and random bytes, many per 64 bytes or none for long stretches.
TEST(SimdLiteralSearchTest, MarksTheNonPlainBytesOfLargeRandomBuffers) {
  const std::vector<std::vector<std::string>> sets = {
      RealLiterals(), {"unknown sf transformation", "keyerror: '"}, {"exit"}};
  std::mt19937 rng(1616);
  for (const std::vector<std::string>& literals : sets) {
    const SimdLiteralSearch search(literals);
    for (int round = 0; round < 12; ++round) {
      std::string text;
      const size_t size = 1000 + rng() % 70000;
      const int density = 1 + static_cast<int>(rng() % 400);
      while (text.size() < size) {
        if (rng() % 3 == 0) text += "\x1b[0;36m(Worker pid=1)\x1b[0;0m ";
        text += RandomBytes(rng, rng() % 200);
        for (char& c : text) {
          if (static_cast<int>(rng() % 1000) < density) c = static_cast<char>(rng());
        }
        text += rng() % 2 ? "\n" : "\t\r\x7f caf\xc3\xa9\n";
      }
      const std::string_view view = std::string_view(text).substr(rng() % 32);
      const std::string what = "round " + std::to_string(round);
      ASSERT_EQ(NonPlainOf(search, view, false), NaiveNonPlain(view)) << what;
      ASSERT_EQ(NonPlainOf(search, view, true), NaiveNonPlain(view)) << what << " (portable)";
      std::vector<uint64_t> bits(view.size() / 64 + 1, kGarbage);
      SimdLiteralSearch::FindNonPlain(view, bits.data());
      bits.resize((view.size() + 63) / 64);
      ASSERT_EQ(bits, NaiveNonPlain(view)) << what << " (FindNonPlain)";
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
