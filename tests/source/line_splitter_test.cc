// LineSplitter: lines split across reads are joined, over-long lines are cut
// at the cap and counted, and an unterminated last line is not lost.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "fingerprintd/source.h"

namespace fingerprintd::source {
namespace {

using ::testing::ElementsAre;

class CountDrops final : public PipelineEvents {
 public:
  void LineRead(std::string_view, uint64_t) override {}
  void LineDropped(DropReason reason) override {
    if (reason == DropReason::kLineTooLong) ++too_long;
  }
  void TimeGuessed(TimeFallback) override {}
  void TracebackAssembled() override {}
  void RuleMatched(std::string_view, std::string_view) override {}
  void IncidentOpened(std::string_view, std::string_view, std::string_view) override {}
  void IncidentUpdated(std::string_view) override {}
  void FileRotated() override {}
  void FileTruncated() override {}
  int too_long = 0;
};

std::vector<std::string> Split(const std::vector<std::string>& chunks, size_t cap,
                               CountDrops* events) {
  std::vector<std::string> lines;
  LineSplitter splitter(cap, *events);
  auto on_line = [&](std::string_view l) { lines.emplace_back(l); };
  for (const auto& c : chunks) splitter.Append(c, on_line);
  splitter.Finish(on_line);
  return lines;
}

TEST(LineSplitterTest, LineSplitAcrossReadsIsJoined) {
  CountDrops events;
  EXPECT_THAT(Split({"ab", "c\nde", "f\n"}, 100, &events), ElementsAre("abc", "def"));
}

TEST(LineSplitterTest, UnterminatedLastLineIsDeliveredAtFinish) {
  CountDrops events;
  EXPECT_THAT(Split({"one\ntwo"}, 100, &events), ElementsAre("one", "two"));
}

TEST(LineSplitterTest, EmptyInputYieldsNoLines) {
  CountDrops events;
  EXPECT_TRUE(Split({}, 100, &events).empty());
  EXPECT_TRUE(Split({""}, 100, &events).empty());
}

TEST(LineSplitterTest, EmptyLinesAreKept) {
  CountDrops events;
  EXPECT_THAT(Split({"\n\nx\n"}, 100, &events), ElementsAre("", "", "x"));
}

TEST(LineSplitterTest, OverLongLineIsTruncatedAtTheCapAndCounted) {
  CountDrops events;
  std::string big(5 << 20, 'x');
  auto lines = Split({"short\n", big.substr(0, 3 << 20), big.substr(3 << 20) + "\nafter\n"},
                     1 << 20, &events);
  ASSERT_EQ(lines.size(), 3u);
  EXPECT_EQ(lines[0], "short");
  EXPECT_EQ(lines[1].size(), 1u << 20);
  EXPECT_EQ(lines[2], "after");
  EXPECT_EQ(events.too_long, 1);
}

TEST(LineSplitterTest, OverLongLineInsideOneChunkIsTruncated) {
  CountDrops events;
  auto lines = Split({std::string(50, 'y') + "\nz\n"}, 10, &events);
  EXPECT_THAT(lines, ElementsAre(std::string(10, 'y'), "z"));
  EXPECT_EQ(events.too_long, 1);
}

}  // namespace
}  // namespace fingerprintd::source
