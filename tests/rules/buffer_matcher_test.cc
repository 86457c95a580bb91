// BufferMatcher (Hyperscan, or the LiteralScanner without it) reports the end
// of exactly the occurrences a naive case-insensitive search finds, over
// whole buffers: at the edges, overlapping, in any case, many per buffer.
#include "rules/buffer_matcher.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <set>

#include "testing/replay_harness.h"

namespace fingerprintd::rules {
namespace {

char Lower(char c) { return (c >= 'A' && c <= 'Z') ? static_cast<char>(c + 32) : c; }

std::set<size_t> NaiveEnds(const std::vector<std::string>& atoms, std::string_view text) {
  std::string lowered(text);
  for (char& c : lowered) c = Lower(c);
  std::set<size_t> ends;
  for (const std::string& atom : atoms) {
    for (size_t at = lowered.find(atom); at != std::string::npos; at = lowered.find(atom, at + 1)) {
      ends.insert(at + atom.size());
    }
  }
  return ends;
}

std::set<size_t> Ends(const BufferMatcher& matcher, std::string_view text) {
  BufferMatcher::Scratch scratch(matcher);
  std::vector<size_t> ends;
  EXPECT_TRUE(matcher.Search(text, &ends, &scratch));
  return std::set<size_t>(ends.begin(), ends.end());
}

TEST(BufferMatcherTest, ReportsTheEndOfEveryOccurrence) {
  BufferMatcher matcher({"unknown sf transformation", "keyerror: '", "out of memory"});
  ASSERT_TRUE(matcher.ok()) << BufferMatcher::EngineName();
  const std::string text = "KeyError: 'x'\nCUDA Out Of Memory\nout of memoryout of memory";
  EXPECT_EQ(Ends(matcher, text),
            NaiveEnds({"unknown sf transformation", "keyerror: '", "out of memory"}, text));
  EXPECT_EQ(Ends(matcher, ""), std::set<size_t>{});
}

TEST(BufferMatcherTest, TwoPartsOverlappingByTheLongestAtomLessOneFindEveryOccurrence) {
  const std::vector<std::string> atoms = {"unknown sf transformation", "oom", "keyerror: '"};
  BufferMatcher matcher(atoms);
  ASSERT_TRUE(matcher.ok());
  EXPECT_EQ(matcher.longest(), 25u);
  const std::string text =
      "x Unknown SF transformation oom KeyError: 'k' unknown sf transformationoom keyerror: '";
  const std::set<size_t> whole = NaiveEnds(atoms, text);
  BufferMatcher::Scratch scratch(matcher);
  for (size_t cut = 0; cut <= text.size(); ++cut) {  // as replay splits a buffer at its probe
    std::vector<size_t> ends;
    ASSERT_TRUE(matcher.Search(std::string_view(text).substr(0, cut), &ends, &scratch));
    const size_t from = cut - std::min(cut, matcher.longest() - 1);
    const size_t before = ends.size();
    ASSERT_TRUE(matcher.Search(std::string_view(text).substr(from), &ends, &scratch));
    for (size_t i = before; i < ends.size(); ++i) ends[i] += from;
    EXPECT_EQ(std::set<size_t>(ends.begin(), ends.end()), whole) << "cut at " << cut;
  }
}

TEST(BufferMatcherTest, NoAtomsOrAnAtomWithANewlineIsNotOk) {
  EXPECT_FALSE(BufferMatcher({}).ok());
  EXPECT_FALSE(BufferMatcher({"a\nb"}).ok());
}

TEST(BufferMatcherTest, AgreesWithANaiveSearchOnRandomBuffersWithThePacksAtoms) {
  const std::vector<std::string>& atoms = testing::EmbeddedRules()->Atoms();
  ASSERT_FALSE(atoms.empty());
  BufferMatcher matcher(atoms);
  ASSERT_TRUE(matcher.ok());
  std::mt19937 rng(20261130);
  const std::string alphabet = "abcdefgkmnorstuABCDEFKOS _[]()'\":.0123\n\x1b\x80\xff";
  for (int round = 0; round < 200; ++round) {
    std::string text(rng() % 4000, ' ');
    for (char& c : text) c = alphabet[rng() % alphabet.size()];
    const int planted = static_cast<int>(rng() % 20);
    for (int i = 0; i < planted; ++i) {
      std::string atom = atoms[rng() % atoms.size()];
      for (char& c : atom) {
        if (rng() % 2 && c >= 'a' && c <= 'z') c = static_cast<char>(c - 32);
      }
      text.insert(rng() % (text.size() + 1), atom);
    }
    ASSERT_EQ(Ends(matcher, text), NaiveEnds(atoms, text)) << "round " << round;
  }
}

}  // namespace
}  // namespace fingerprintd::rules
