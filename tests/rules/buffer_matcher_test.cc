// BufferMatcher (its own SimdLiteralSearch, and Hyperscan where the build has
// it) reports the end of exactly the occurrences of the searched atoms (those holding no other)
// a naive case-insensitive search finds, over whole buffers: at the edges,
// overlapping, in any case, many per buffer; and a text holds one of them
// exactly when it holds any atom. With the bitmap of the bytes that are not
// printable ASCII, every backend writes a naive loop's, also in two parts as
// replay searches a buffer.
#include "rules/buffer_matcher.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <set>

#include "parse/line_templates.h"
#include "testing/naive_non_plain.h"
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

// Up to `max_size` random bytes with up to `max_planted` of `atoms` planted,
// each in random case.
std::string RandomTextWithAtoms(std::mt19937& rng, const std::vector<std::string>& atoms,
                                size_t max_size, int max_planted) {
  const std::string alphabet = "abcdefgkmnorstuABCDEFKOS _[]()'\":.0123\n\x1b\x80\xff";
  std::string text(rng() % max_size, ' ');
  for (char& c : text) c = alphabet[rng() % alphabet.size()];
  for (int i = static_cast<int>(rng() % max_planted); i > 0; --i) {
    std::string atom = atoms[rng() % atoms.size()];
    for (char& c : atom) {
      if (rng() % 2 && c >= 'a' && c <= 'z') c = static_cast<char>(c - 32);
    }
    text.insert(rng() % (text.size() + 1), atom);
  }
  return text;
}

using testing::NaiveNonPlain;

std::vector<BufferMatcher::Backend> Backends() {
  std::vector<BufferMatcher::Backend> backends = {BufferMatcher::Backend::kOwn};
  if (BufferMatcher::HasHyperscan()) backends.push_back(BufferMatcher::Backend::kHyperscan);
  return backends;
}

TEST(BufferMatcherTest, ReportsTheEndOfEveryOccurrence) {
  BufferMatcher matcher({"unknown sf transformation", "keyerror: '", "out of memory"});
  ASSERT_TRUE(matcher.ok()) << matcher.backend_name();
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

TEST(BufferMatcherTest, NoAtomsOrAnAtomWithANewlineOrANonAsciiByteIsNotOk) {
  for (BufferMatcher::Backend backend : Backends()) {
    EXPECT_FALSE(BufferMatcher({}, backend).ok());
    EXPECT_FALSE(BufferMatcher({"a\nb"}, backend).ok());
    EXPECT_FALSE(BufferMatcher({"exit", "caf\xc3\xa9"}, backend).ok());
  }
}

TEST(BufferMatcherTest, AgreesWithANaiveSearchOnRandomBuffersWithThePacksAtoms) {
  const std::vector<std::string>& atoms = testing::EmbeddedRules()->Atoms();
  ASSERT_FALSE(atoms.empty());
  BufferMatcher matcher(atoms);
  ASSERT_TRUE(matcher.ok());
  std::mt19937 rng(20261130);
  for (int round = 0; round < 200; ++round) {
    const std::string text = RandomTextWithAtoms(rng, atoms, 4000, 20);
    ASSERT_EQ(Ends(matcher, text), NaiveEnds(BufferMatcher::Searched(atoms), text))
        << "round " << round;
  }
}

TEST(BufferMatcherTest, OnlyAtomsHoldingNoOtherAreSearched) {
  EXPECT_EQ(BufferMatcher::Searched({"error executing method", "error", "out of memory", "error",
                                     "cuda out of memory", "oom"}),
            (std::vector<std::string>{"error", "out of memory", "oom"}));
  EXPECT_EQ(BufferMatcher::Searched({"a", ""}), std::vector<std::string>{});
  EXPECT_EQ(BufferMatcher::Searched({"a\nb", "c"}), std::vector<std::string>{});
  BufferMatcher matcher({"error executing method", "error", "exit"});
  ASSERT_TRUE(matcher.ok());
  EXPECT_EQ(matcher.longest(), 5u);
}

// What parse::BufferHints::AtomFree asks of the reported ends: no end inside
// a text whenever the text holds an atom, whichever atoms were searched.
TEST(BufferMatcherTest, ATextHoldingAnyOfThePacksAtomsHoldsAReportedEnd) {
  const std::vector<std::string>& atoms = testing::EmbeddedRules()->Atoms();
  BufferMatcher matcher(atoms);
  ASSERT_TRUE(matcher.ok());
  std::mt19937 rng(20261201);
  for (int round = 0; round < 100; ++round) {
    const std::string text = RandomTextWithAtoms(rng, atoms, 2000, 10);
    const std::set<size_t> ends = Ends(matcher, text);
    for (int w = 0; w < 50; ++w) {
      const size_t lo = rng() % (text.size() + 1);
      const size_t hi = lo + rng() % (text.size() - lo + 1);
      const std::string_view window = std::string_view(text).substr(lo, hi - lo);
      const bool holds_atom = !NaiveEnds(atoms, window).empty();
      auto end = ends.upper_bound(lo);
      const bool end_inside = end != ends.end() && *end <= hi;
      if (holds_atom) {
        EXPECT_TRUE(end_inside) << "round " << round << " [" << lo << ", " << hi << ")";
      }
    }
  }
}

// What replay searches: the pack's atoms and the quiet-line triggers, in
// random buffers with bytes of every value, ESC and newlines, planted in
// random case, also as a buffer's first and last bytes.
TEST(BufferMatcherTest, EveryEngineAgreesWithANaiveSearchOnReplaysLiterals) {
  const std::vector<std::string> atoms =
      parse::WithQuietLineTriggers(testing::EmbeddedRules()->Atoms());
  const std::vector<std::string> searched = BufferMatcher::Searched(atoms);
  ASSERT_EQ(searched.size(), 127u);  // the every-line tier's atoms and the triggers
  for (BufferMatcher::Backend backend : Backends()) {
    BufferMatcher matcher(atoms, backend);
    ASSERT_TRUE(matcher.ok()) << matcher.backend_name();
    std::mt19937 rng(20261201);
    for (int round = 0; round < 300; ++round) {
      std::string text = RandomTextWithAtoms(rng, searched, 5000, 30);
      for (char& c : text) {
        if (rng() % 16 == 0) c = static_cast<char>(rng());
      }
      if (round % 3 == 0) text = searched[rng() % searched.size()] + text;
      if (round % 4 == 0) text += searched[rng() % searched.size()];
      ASSERT_EQ(Ends(matcher, text), NaiveEnds(searched, text))
          << matcher.backend_name() << " round " << round;
    }
    for (const std::string& literal : searched) {  // the whole buffer, and at both edges
      for (const std::string& text :
           {literal, literal + " x", "x " + literal, std::string(37, 'q') + literal}) {
        ASSERT_EQ(Ends(matcher, text), NaiveEnds(searched, text)) << matcher.backend_name();
      }
    }
  }
}

}  // namespace
}  // namespace fingerprintd::rules

namespace fingerprintd::rules {
namespace {

// Lines as replay reads them: ESC heads, tabs, '\r', UTF-8, DEL, bytes of
// every value, newlines; atoms planted.
std::string RandomLogBuffer(std::mt19937& rng, const std::vector<std::string>& atoms, size_t size) {
  std::string text;
  while (text.size() < size) {
    if (rng() % 2) text += "\x1b[0;36m(Worker_TP0 pid=27928)\x1b[0;0m ";
    text += RandomTextWithAtoms(rng, atoms, 300, 2);
    if (rng() % 8 == 0) text += "\t\r\x7f caf\xc3\xa9\x01";
    text += '\n';
  }
  return text;
}

TEST(BufferMatcherTest, EveryEngineMarksExactlyTheBytesThatAreNotPrintableAscii) {
  const std::vector<std::string> atoms =
      parse::WithQuietLineTriggers(testing::EmbeddedRules()->Atoms());
  std::mt19937 rng(1616);
  for (BufferMatcher::Backend backend : Backends()) {
    BufferMatcher matcher(atoms, backend);
    ASSERT_TRUE(matcher.ok()) << matcher.backend_name();
    BufferMatcher::Scratch scratch(matcher);
    for (int round = 0; round < 60; ++round) {
      const std::string buffer = RandomLogBuffer(rng, atoms, rng() % (round < 30 ? 700 : 40000));
      const std::string_view text = std::string_view(buffer).substr(rng() % 40);
      std::vector<size_t> ends;
      std::vector<uint64_t> bits(text.size() / 64 + 2, 0xa5a5a5a5a5a5a5a5u);  // all written
      ASSERT_TRUE(matcher.Search(text, &ends, &scratch, bits.data()));
      EXPECT_EQ(bits.back(), 0xa5a5a5a5a5a5a5a5u) << "a word past the text was written";
      bits.resize((text.size() + 63) / 64);
      ASSERT_EQ(bits, NaiveNonPlain(text)) << matcher.backend_name() << " round " << round;
      ASSERT_EQ(std::set<size_t>(ends.begin(), ends.end()),
                NaiveEnds(BufferMatcher::Searched(atoms), text))
          << matcher.backend_name() << " round " << round;
    }
  }
}

// As source/replay.cc searches a read buffer: a probe, then the rest from a
// multiple of 64 at least the longest atom less one before the probe's end,
// its bitmap written from that word on.
TEST(BufferMatcherTest, TwoPartsFromAMultipleOf64GiveTheWholeBuffersBitmap) {
  const std::vector<std::string> atoms =
      parse::WithQuietLineTriggers(testing::EmbeddedRules()->Atoms());
  std::mt19937 rng(64);
  for (BufferMatcher::Backend backend : Backends()) {
    BufferMatcher matcher(atoms, backend);
    ASSERT_TRUE(matcher.ok());
    BufferMatcher::Scratch scratch(matcher);
    const std::string buffer = RandomLogBuffer(rng, atoms, 3000);
    const std::vector<uint64_t> whole_bits = NaiveNonPlain(buffer);
    const std::set<size_t> whole_ends = NaiveEnds(BufferMatcher::Searched(atoms), buffer);
    for (size_t probe = 0; probe <= buffer.size(); probe += 1 + rng() % 9) {
      std::vector<size_t> ends;
      std::vector<uint64_t> bits(buffer.size() / 64 + 1, 0xa5a5a5a5a5a5a5a5u);
      const std::string_view view(buffer);
      ASSERT_TRUE(matcher.Search(view.substr(0, probe), &ends, &scratch, bits.data()));
      const size_t from = (probe - std::min(probe, matcher.longest() - 1)) / 64 * 64;
      const size_t before = ends.size();
      ASSERT_TRUE(matcher.Search(view.substr(from), &ends, &scratch, bits.data() + from / 64));
      for (size_t i = before; i < ends.size(); ++i) ends[i] += from;
      bits.resize(whole_bits.size());
      ASSERT_EQ(bits, whole_bits) << matcher.backend_name() << " probe " << probe;
      ASSERT_EQ(std::set<size_t>(ends.begin(), ends.end()), whole_ends) << "probe " << probe;
    }
  }
}

}  // namespace
}  // namespace fingerprintd::rules
