// LineSplitter: lines split across reads are joined, over-long lines are cut
// at the cap and counted, and an unterminated last line is not lost.
#include "common/line_splitter.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "testing/counting_events.h"

namespace fingerprintd::source {
namespace {

using ::testing::ElementsAre;

using testing::CountingEvents;

std::vector<std::string> Split(const std::vector<std::string>& chunks, size_t cap,
                               CountingEvents* events) {
  std::vector<std::string> lines;
  LineSplitter splitter(cap, *events);
  auto on_line = [&](std::string_view l, uint64_t) { lines.emplace_back(l); };
  for (const auto& c : chunks) splitter.Append(c, on_line);
  splitter.Finish(on_line);
  return lines;
}

TEST(LineSplitterTest, LineSplitAcrossReadsIsJoined) {
  CountingEvents events;
  EXPECT_THAT(Split({"ab", "c\nde", "f\n"}, 100, &events), ElementsAre("abc", "def"));
}

TEST(LineSplitterTest, UnterminatedLastLineIsDeliveredAtFinish) {
  CountingEvents events;
  EXPECT_THAT(Split({"one\ntwo"}, 100, &events), ElementsAre("one", "two"));
}

TEST(LineSplitterTest, EmptyInputYieldsNoLines) {
  CountingEvents events;
  EXPECT_TRUE(Split({}, 100, &events).empty());
  EXPECT_TRUE(Split({""}, 100, &events).empty());
}

TEST(LineSplitterTest, EmptyLinesAreKept) {
  CountingEvents events;
  EXPECT_THAT(Split({"\n\nx\n"}, 100, &events), ElementsAre("", "", "x"));
}

TEST(LineSplitterTest, OverLongLineIsTruncatedAtTheCapAndCounted) {
  CountingEvents events;
  std::string big(5 << 20, 'x');
  auto lines = Split({"short\n", big.substr(0, 3 << 20), big.substr(3 << 20) + "\nafter\n"},
                     1 << 20, &events);
  ASSERT_EQ(lines.size(), 3u);
  EXPECT_EQ(lines[0], "short");
  EXPECT_EQ(lines[1].size(), 1u << 20);
  EXPECT_EQ(lines[2], "after");
  EXPECT_EQ(events.Dropped(DropReason::kLineTooLong), 1);
}

TEST(LineSplitterTest, OverLongLineInsideOneChunkIsTruncated) {
  CountingEvents events;
  auto lines = Split({std::string(50, 'y') + "\nz\n"}, 10, &events);
  EXPECT_THAT(lines, ElementsAre(std::string(10, 'y'), "z"));
  EXPECT_EQ(events.Dropped(DropReason::kLineTooLong), 1);
}

// Each line's stream offset: where its first byte was, counting from the
// offset given to Restart, through joins, cuts and empty lines.
TEST(LineSplitterTest, EachLineCarriesTheStreamOffsetOfItsFirstByte) {
  CountingEvents events;
  LineSplitter splitter(4, events);
  std::vector<std::pair<std::string, uint64_t>> lines;
  auto on_line = [&](std::string_view l, uint64_t at) { lines.emplace_back(l, at); };
  splitter.Restart(100);
  splitter.Append("ab\n\ncd", on_line);
  EXPECT_TRUE(splitter.mid_line());
  EXPECT_EQ(splitter.line_start(), 104u);
  splitter.Append("efgh\nx", on_line);  // "cdefgh" is cut at 4 bytes
  splitter.Finish(on_line);
  EXPECT_THAT(lines, ElementsAre(std::pair<std::string, uint64_t>{"ab", 100},
                                 std::pair<std::string, uint64_t>{"", 103},
                                 std::pair<std::string, uint64_t>{"cdef", 104},
                                 std::pair<std::string, uint64_t>{"x", 111}));
  EXPECT_EQ(splitter.end(), 112u);
  EXPECT_EQ(events.Dropped(DropReason::kLineTooLong), 1u);
}

// A client killed mid-line: Drop forgets the unfinished line.
TEST(LineSplitterTest, DropForgetsTheUnfinishedLine) {
  CountingEvents events;
  LineSplitter splitter(100, events);
  std::vector<std::string> lines;
  auto on_line = [&](std::string_view l, uint64_t) { lines.emplace_back(l); };
  splitter.Append("done\ncut mid-", on_line);
  EXPECT_TRUE(splitter.Drop());
  EXPECT_FALSE(splitter.Drop());
  splitter.Finish(on_line);
  EXPECT_THAT(lines, ElementsAre("done"));
}

}  // namespace
}  // namespace fingerprintd::source
