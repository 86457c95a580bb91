// The age limit on CRI `P` / Docker partial records (bench/README.md, Bounds):
// SourceParser::Tick hands on a record whose last fragment is overdue, the
// safe position moves past it, and a restart there does not read it again.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "fingerprintd/parse.h"
#include "testing/collecting_sink.h"
#include "testing/counting_events.h"

namespace fingerprintd::parse {
namespace {

using ::fingerprintd::testing::CollectingSink;
using ::fingerprintd::testing::CountingEvents;

constexpr int64_t kSecond = 1'000'000;
constexpr int64_t kJan4 = 1767538105LL * kSecond;  // 2026-01-04T14:48:25Z

// A CRI line of `stream` at kJan4 + `second` seconds.
std::string Cri(int second, const char* stream, const char* tag, const std::string& text) {
  char stamp[32];
  std::snprintf(stamp, sizeof stamp, "2026-01-04T14:%02d:%02dZ", 48 + (25 + second) / 60,
                (25 + second) % 60);
  return std::string(stamp) + " " + stream + " " + tag + " " + text;
}

class PartialAgeTest : public ::testing::Test {
 protected:
  void SetUp() override { Start(0, 0); }
  // A parser that reads on from `offset` (`lines_before` lines before it).
  void Start(uint64_t offset, uint64_t lines_before) {
    ParserOptions options;
    options.envelope = Envelope::kCri;
    options.current_year = 2026;
    parser_ = std::make_unique<SourceParser>(1, "pod/0.log", options, events_, sink_);
    parser_->Seek(offset, lines_before);
    offset_ = offset;
  }
  void Feed(const std::string& line) {
    offsets_.push_back(offset_);
    offset_ += line.size() + 1;
    parser_->Feed(line);
  }
  SourcePosition Held() const {
    SourcePosition pos{offset_, offsets_.size()};
    parser_->LowestHeld(&pos);
    EXPECT_EQ(parser_->HoldsNothing(), pos.offset == offset_);  // the O(1) answer agrees
    return pos;
  }
  std::vector<std::string> Messages() const {
    std::vector<std::string> out;
    for (const auto& r : sink_.records) out.push_back(r.message);
    return out;
  }

  CountingEvents events_;
  CollectingSink sink_;
  std::unique_ptr<SourceParser> parser_;
  uint64_t offset_ = 0;
  std::vector<uint64_t> offsets_;  // of every line fed, by line index
};

TEST_F(PartialAgeTest, APartialWhoseFinalPieceNeverComesIsHandedOnAfterTheTimeout) {
  Feed(Cri(0, "stdout", "P", "ERROR 01-04 14:48:25 [a.py:1] half a line "));
  Feed(Cri(1, "stderr", "F", "INFO 01-04 14:48:26 [a.py:2] other stream"));
  parser_->Tick(kJan4 + 5 * kSecond);  // exactly the timeout: still joining
  EXPECT_EQ(Messages(), (std::vector<std::string>{"other stream"}));
  EXPECT_EQ(Held().line, 0u);  // the checkpoint must re-read the P
  EXPECT_EQ(events_.Evictions(Evicted::kPartialRecord), 0u);

  parser_->Tick(kJan4 + 5 * kSecond + 1);
  ASSERT_EQ(sink_.records.size(), 2u);
  EXPECT_EQ(sink_.records[1].message, "half a line ");
  EXPECT_EQ(sink_.records[1].level, Level::kError);
  EXPECT_EQ(sink_.records[1].line_number, 1u);
  EXPECT_EQ(sink_.records[1].time_us, kJan4);
  EXPECT_EQ(events_.Evictions(Evicted::kPartialRecord), 1u);
  EXPECT_EQ(Held().line, 2u);  // nothing held: the safe position is the next line
  EXPECT_EQ(Held().offset, offset_);

  // Its final piece, late: a record of its own, the flushed text not repeated.
  Feed(Cri(9, "stdout", "F", "and its end"));
  parser_->Finish();
  EXPECT_EQ(Messages(), (std::vector<std::string>{"other stream", "half a line ", "and its end"}));
  EXPECT_EQ(sink_.records[2].line_number, 3u);
  EXPECT_EQ(events_.Evictions(Evicted::kPartialRecord), 1u);
}

TEST_F(PartialAgeTest, APartialAndItsFinalPieceWithinTheTimeoutAreStillJoined) {
  Feed(Cri(0, "stdout", "P", "first "));
  Feed(Cri(2, "stdout", "P", "middle "));
  parser_->Tick(kJan4 + 4 * kSecond);
  Feed(Cri(4, "stdout", "F", "last"));
  parser_->Tick(kJan4 + 60 * kSecond);
  parser_->Finish();
  EXPECT_EQ(Messages(), (std::vector<std::string>{"first middle last"}));
  EXPECT_EQ(sink_.records[0].line_number, 1u);
  EXPECT_EQ(events_.Evictions(Evicted::kPartialRecord), 0u);
}

TEST_F(PartialAgeTest, TheAgeCountsFromTheFirstFragmentSoAnEndlessRecordIsCutToo) {
  // A stream writing fragments without a newline for longer than the
  // timeout (a progress bar): the record is cut once its first fragment is
  // too old, and the fragments after it start the next one.
  for (int second = 0; second <= 8; ++second) {
    Feed(Cri(second, "stdout", "P", std::to_string(second) + " "));
    parser_->Tick(kJan4 + second * kSecond);
  }
  Feed(Cri(9, "stdout", "F", "done"));
  parser_->Finish();
  EXPECT_EQ(Messages(), (std::vector<std::string>{"0 1 2 3 4 5 6 ", "7 8 done"}));
  EXPECT_EQ(events_.Evictions(Evicted::kPartialRecord), 1u);
}

TEST_F(PartialAgeTest, ADockerRecordWithoutItsNewlineIsHandedOnAfterTheTimeout) {
  ParserOptions options;
  options.envelope = Envelope::kDocker;
  options.current_year = 2026;
  parser_ = std::make_unique<SourceParser>(1, "c.log", options, events_, sink_);
  parser_->Feed(R"({"log":"no newline yet","stream":"stdout","time":"2026-01-04T14:48:25Z"})");
  parser_->Tick(kJan4 + 6 * kSecond);
  EXPECT_EQ(Messages(), (std::vector<std::string>{"no newline yet"}));
  EXPECT_EQ(events_.Evictions(Evicted::kPartialRecord), 1u);
}

TEST_F(PartialAgeTest, ADockerPartialWithoutATimeAgesFromTheFirstTickThatSeesIt) {
  ParserOptions options;
  options.envelope = Envelope::kDocker;
  options.current_year = 2026;
  parser_ = std::make_unique<SourceParser>(1, "c.log", options, events_, sink_);
  parser_->Feed(R"({"log":"undated","stream":"stdout"})");
  parser_->Tick(kJan4 + 100 * kSecond);
  parser_->Tick(kJan4 + 105 * kSecond);
  EXPECT_TRUE(sink_.records.empty());
  parser_->Tick(kJan4 + 105 * kSecond + 1);
  EXPECT_EQ(Messages(), (std::vector<std::string>{"undated"}));
  EXPECT_EQ(events_.Evictions(Evicted::kPartialRecord), 1u);
}

// A daemon checkpoints the safe position and restarts there: the line the
// timeout handed on before the checkpoint is not read, or handed on, again.
TEST_F(PartialAgeTest, ARestartAtTheSafePositionAfterTheTimeoutDoesNotRepeatTheFlushedLine) {
  const std::vector<std::string> lines = {
      Cri(0, "stdout", "P", "stuck "), Cri(1, "stderr", "F", "a"), Cri(7, "stderr", "F", "b"),
      Cri(8, "stdout", "F", "tail"), Cri(9, "stderr", "F", "c")};
  // Uncut: the P handed on at the tick after line 3.
  for (size_t i = 0; i < lines.size(); ++i) {
    Feed(lines[i]);
    if (i == 2) parser_->Tick(kJan4 + 7 * kSecond);
  }
  parser_->Finish();
  const std::vector<std::string> uncut = Messages();
  EXPECT_EQ(uncut, (std::vector<std::string>{"a", "b", "stuck ", "tail", "c"}));

  // Cut after the tick: the checkpoint is past the P.
  sink_.records.clear();
  offsets_.clear();
  Start(0, 0);
  for (size_t i = 0; i < 3; ++i) Feed(lines[i]);
  parser_->Tick(kJan4 + 7 * kSecond);
  const SourcePosition safe = Held();
  EXPECT_EQ(safe.line, 3u);
  const std::vector<std::string> before = Messages();

  sink_.records.clear();
  Start(safe.offset, safe.line);
  for (size_t i = safe.line; i < lines.size(); ++i) parser_->Feed(lines[i]);
  parser_->Finish();
  std::vector<std::string> restarted = before;
  for (const std::string& m : Messages()) restarted.push_back(m);
  EXPECT_EQ(restarted, uncut);
  EXPECT_EQ(std::count(restarted.begin(), restarted.end(), "stuck "), 1);
}

}  // namespace
}  // namespace fingerprintd::parse
