// AtomHints::AtomFree keeps a cursor for texts asked in buffer order (lines)
// and searches for the others: either way it must answer what a scan of all
// the ends answers.
#include "parse/atom_hints.h"

#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

namespace fingerprintd::parse {
namespace {

TEST(AtomHintsTest, AtomFreeAnswersAsAScanOfEveryEndInOrderAndOutOfOrder) {
  std::mt19937 rng(20261130);
  for (int round = 0; round < 200; ++round) {
    const std::string buffer(1 + rng() % 3000, 'x');
    AtomHints hints;
    int marker = 0;
    hints.Reset(buffer, &marker);
    std::vector<size_t> ends;
    for (int i = static_cast<int>(rng() % 40); i > 0; --i)
      ends.push_back(1 + rng() % buffer.size());
    *hints.mutable_ends() = ends;
    hints.Seal();
    auto naive = [&](size_t lo, size_t size) {
      for (size_t end : ends) {
        if (end > lo && end <= lo + size) return false;
      }
      return true;
    };
    size_t lo = 0;
    for (int ask = 0; ask < 100; ++ask) {
      // Mostly forward, as lines come; sometimes back (a message inside a
      // line, a line re-fed), sometimes past the buffer.
      lo = rng() % 4 == 0 ? rng() % buffer.size() : std::min(buffer.size(), lo + rng() % 80);
      const size_t size = rng() % 120;
      if (lo + size > buffer.size()) {
        EXPECT_FALSE(hints.AtomFree(std::string_view(buffer.data() + lo, buffer.size() - lo + 1)));
        continue;
      }
      ASSERT_EQ(hints.AtomFree(std::string_view(buffer).substr(lo, size)), naive(lo, size))
          << "round " << round << " [" << lo << ", " << lo + size << ")";
    }
    hints.Clear();
    EXPECT_FALSE(hints.AtomFree(std::string_view(buffer).substr(0, 1)));
  }
}

}  // namespace
}  // namespace fingerprintd::parse
