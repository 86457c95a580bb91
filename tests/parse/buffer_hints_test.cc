// BufferHints::AtomFree keeps a cursor for texts asked in buffer order (lines)
// and searches for the others: either way it must answer what a scan of all
// the ends answers. BufferHints::PlainAscii answers from the matcher's bitmap
// what parse::IsPlainAscii answers from the bytes, for every line and any
// part of one, in any order.
#include "parse/buffer_hints.h"

#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "parse/ansi.h"
#include "parse/line_templates.h"
#include "rules/buffer_matcher.h"
#include "testing/replay_harness.h"

namespace fingerprintd::parse {
namespace {

TEST(BufferHintsTest, AtomFreeAnswersAsAScanOfEveryEndInOrderAndOutOfOrder) {
  std::mt19937 rng(20261130);
  for (int round = 0; round < 200; ++round) {
    const std::string buffer(1 + rng() % 3000, 'x');
    BufferHints hints;
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

// Log lines with what PlainAscii must see: ESC heads, tabs, '\r', DEL,
// UTF-8, bytes of every value, empty lines, and lines of plain ASCII only.
std::string RandomLines(std::mt19937& rng, size_t size) {
  const std::string plain = "abcdefghijklmnopqrstuvwxyz ABCDEFGHIJ 0123456789 []():'\"=/.,~";
  std::string text;
  while (text.size() < size) {
    if (rng() % 2) text += "\x1b[0;36m(Worker_TP0 pid=27928)\x1b[0;0m ";
    const size_t length = rng() % 8 == 0 ? 0 : rng() % 300;
    const int odd = static_cast<int>(rng() % 4);  // 0: plain only
    for (size_t i = 0; i < length; ++i) {
      if (odd != 0 && rng() % (40 * odd) == 0) {
        const std::string marked("\x00\t\r\x1b\x1f\x7f\x80\xc3\xa9\xff", 10);
        text += marked[rng() % marked.size()];
      } else {
        text += plain[rng() % plain.size()];
      }
    }
    text += '\n';
  }
  return text;
}

// A buffer searched as replay searches one (rules::BufferMatcher with the
// pack's atoms and the quiet-line triggers).
void Search(std::string_view buffer, BufferHints* hints) {
  static const rules::BufferMatcher matcher(
      WithQuietLineTriggers(testing::EmbeddedRules()->Atoms()));
  rules::BufferMatcher::Scratch scratch(matcher);
  static int marker = 0;
  hints->Reset(buffer, &marker);
  ASSERT_TRUE(matcher.Search(buffer, hints->mutable_ends(), &scratch, hints->mutable_non_plain()));
  hints->Seal();
}

TEST(BufferHintsTest, PlainAsciiAnswersAsIsPlainAsciiForEveryLineAndPartOfOneInAnyOrder) {
  std::mt19937 rng(1616);
  BufferHints hints;  // one for all buffers, as replay keeps it
  for (int round = 0; round < 40; ++round) {
    const std::string text = RandomLines(rng, round < 20 ? rng() % 3000 : 100000 + rng() % 200000);
    const std::string_view buffer = std::string_view(text).substr(rng() % 16);
    Search(buffer, &hints);
    std::vector<std::string_view> lines;
    for (size_t at = 0; at <= buffer.size();) {
      const size_t end = std::min(buffer.find('\n', at), buffer.size());
      lines.push_back(buffer.substr(at, end - at));
      at = end + 1;
    }
    const std::string what = "round " + std::to_string(round);
    size_t plain = 0;
    for (std::string_view line : lines) {  // in order, then parts of each
      ASSERT_EQ(hints.PlainAscii(line), IsPlainAscii(line)) << what << " line " << line;
      plain += IsPlainAscii(line) ? 1 : 0;
      for (int part = 0; part < 3; ++part) {
        const size_t lo = rng() % (line.size() + 1);
        const std::string_view sub = line.substr(lo, rng() % (line.size() - lo + 1));
        ASSERT_EQ(hints.PlainAscii(sub), IsPlainAscii(sub)) << what << " part " << sub;
      }
    }
    EXPECT_GT(plain, 0u) << what;
    EXPECT_LT(plain, lines.size()) << what;
    for (int ask = 0; ask < 2000; ++ask) {  // out of order, across lines and newlines too
      const std::string_view line = lines[rng() % lines.size()];
      const size_t lo =
          static_cast<size_t>(line.data() - buffer.data()) + rng() % (line.size() + 1);
      const size_t size = rng() % 4 == 0 ? rng() % (buffer.size() - lo + 1)
                                         : std::min(buffer.size() - lo, size_t{rng() % 200});
      const std::string_view sub = buffer.substr(lo, size);
      ASSERT_EQ(hints.PlainAscii(sub), IsPlainAscii(sub))
          << what << " [" << lo << ", +" << size << ")";
    }
  }
}

TEST(BufferHintsTest, PlainAsciiVouchesForNothingOutsideTheBufferOrUnmarked) {
  const std::string text = "plain line\nanother plain line\n";
  const std::string_view buffer = std::string_view(text).substr(0, 20);
  BufferHints hints;
  EXPECT_FALSE(hints.PlainAscii(buffer.substr(0, 5)));  // nothing searched
  int marker = 0;
  hints.Reset(buffer, &marker);
  hints.Seal();
  EXPECT_FALSE(hints.PlainAscii(buffer.substr(0, 5)));  // searched without the bitmap
  Search(buffer, &hints);
  EXPECT_TRUE(hints.PlainAscii(buffer.substr(0, 5)));
  EXPECT_TRUE(hints.PlainAscii(buffer.substr(0, 0)));
  EXPECT_TRUE(hints.PlainAscii(buffer.substr(11, 9)));
  EXPECT_FALSE(hints.PlainAscii(buffer.substr(0, 11)));                   // holds the '\n'
  EXPECT_FALSE(hints.PlainAscii(std::string_view(text).substr(11, 10)));  // past the end
  EXPECT_FALSE(hints.PlainAscii("plain"));                                // another string
  hints.Clear();
  EXPECT_FALSE(hints.PlainAscii(buffer.substr(0, 5)));
}

}  // namespace
}  // namespace fingerprintd::parse
