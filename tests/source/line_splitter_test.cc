// LineSplitter: lines split across reads are joined, over-long lines are cut
// at the cap and counted, and an unterminated last line is not lost.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "fingerprintd/source.h"
#include "testing/counting_events.h"

namespace fingerprintd::source {
namespace {

using ::testing::ElementsAre;

using testing::CountingEvents;

std::vector<std::string> Split(const std::vector<std::string>& chunks, size_t cap,
                               CountingEvents* events) {
  std::vector<std::string> lines;
  LineSplitter splitter(cap, *events);
  auto on_line = [&](std::string_view l) { lines.emplace_back(l); };
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

}  // namespace
}  // namespace fingerprintd::source
