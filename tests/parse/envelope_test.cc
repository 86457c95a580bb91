// Envelopes as a user of SourceParser sees them: the message rules get, the
// raw line kept for evidence, the event time, and the counters.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "fingerprintd/parse.h"
#include "parse/docker_json.h"
#include "parse/time_util.h"
#include "testing/collecting_sink.h"
#include "testing/counting_events.h"

namespace fingerprintd::parse {
namespace {

using ::fingerprintd::testing::CollectingSink;
using ::fingerprintd::testing::CountingEvents;

class EnvelopeTest : public ::testing::Test {
 protected:
  void Parse(const std::vector<std::string>& lines, ParserOptions options = {}) {
    parser_ = std::make_unique<SourceParser>(3, "pods/a/0.log", options, events_, sink_);
    for (const std::string& line : lines) parser_->Feed(line);
    parser_->Finish();
  }
  std::vector<std::string> Messages() const {
    std::vector<std::string> out;
    for (const auto& r : sink_.records) out.push_back(r.message);
    return out;
  }

  CountingEvents events_;
  CollectingSink sink_;
  std::unique_ptr<SourceParser> parser_;
};

// 2026-01-04T14:48:25Z
constexpr int64_t kJan4 = 1767538105LL * 1'000'000;

TEST_F(EnvelopeTest, CriLineIsDetectedAndItsContentParsed) {
  Parse(
      {"2026-01-04T14:48:25.512345Z stdout F (Worker_TP1 pid=117125) ERROR 01-04 14:48:25 "
       "[multiproc_executor.py:751] WorkerProc failed to start."});
  EXPECT_EQ(parser_->envelope(), Envelope::kCri);
  ASSERT_EQ(sink_.records.size(), 1u);
  const auto& r = sink_.records[0];
  EXPECT_EQ(r.message, "WorkerProc failed to start.");
  EXPECT_EQ(r.worker->name, "Worker_TP1");
  EXPECT_EQ(r.level, Level::kError);
  EXPECT_EQ(r.location, "multiproc_executor.py:751");
  EXPECT_EQ(r.time_us, kJan4);  // header fields, envelope year and zone
  EXPECT_EQ(r.raw.substr(0, 6), "(Worke");
}

TEST_F(EnvelopeTest, CriFractionOfOneToNineDigitsAndNumericZoneAreAccepted) {
  int64_t utc = 0;
  int32_t offset = 0;
  ASSERT_GT(ParseRfc3339("2026-01-04T14:48:25.5Z", &utc, &offset), 0u);
  EXPECT_EQ(utc, kJan4 + 500'000);
  ASSERT_GT(ParseRfc3339("2026-01-04T16:48:25.123456789+02:00", &utc, &offset), 0u);
  EXPECT_EQ(utc, kJan4 + 123'456);
  EXPECT_EQ(offset, 7200);
  ASSERT_GT(ParseRfc3339("2026-01-04T14:48:25Z", &utc, &offset), 0u);
  EXPECT_EQ(utc, kJan4);
  EXPECT_EQ(ParseRfc3339("2026-01-04 14:48:25Z", &utc, &offset), 0u);
}

TEST_F(EnvelopeTest, CriEnvelopeTimeIsUsedWhenTheContentHasNone) {
  Parse({"2026-01-04T14:48:25Z stderr F plain text"});
  ASSERT_EQ(sink_.records.size(), 1u);
  EXPECT_EQ(sink_.records[0].time_us, kJan4);
  EXPECT_EQ(sink_.records[0].message, "plain text");
  EXPECT_EQ(events_.Guessed(TimeFallback::kNoTimestamp), 0u);
}

TEST_F(EnvelopeTest, CriPartialFragmentsAreJoinedPerStreamUntilFull) {
  Parse({"2026-01-04T14:48:25Z stdout P first half ", "2026-01-04T14:48:25Z stderr F stderr line",
         "2026-01-04T14:48:26Z stdout P middle ", "2026-01-04T14:48:27Z stdout F last"});
  EXPECT_EQ(Messages(), (std::vector<std::string>{"stderr line", "first half middle last"}));
  EXPECT_EQ(sink_.records[1].line_number, 1u);  // the first fragment's line
  EXPECT_EQ(sink_.records[1].time_us, kJan4);
  EXPECT_EQ(sink_.records[0].line_number, 2u);
}

TEST_F(EnvelopeTest, CriJoinedRecordIsCappedAndCountedOnce) {
  ParserOptions options;
  options.max_line_bytes = 64;
  const std::string chunk(40, 'x');
  Parse({"2026-01-04T14:48:25Z stdout P " + chunk, "2026-01-04T14:48:25Z stdout P " + chunk,
         "2026-01-04T14:48:25Z stdout P " + chunk, "2026-01-04T14:48:25Z stdout F end"},
        options);
  ASSERT_EQ(sink_.records.size(), 1u);
  EXPECT_EQ(sink_.records[0].message.size(), 64u);
  EXPECT_EQ(events_.Dropped(DropReason::kPartialTooLong), 1u);
}

TEST_F(EnvelopeTest, CriPartialLeftAtEndOfInputIsFlushedByFinish) {
  Parse({"2026-01-04T14:48:25Z stdout P never finished"});
  ASSERT_EQ(sink_.records.size(), 1u);
  EXPECT_EQ(sink_.records[0].message, "never finished");
}

TEST_F(EnvelopeTest, CriEmptyContentAndTagsAreAccepted) {
  Parse({"2026-01-04T14:48:25Z stdout F", "2026-01-04T14:48:25Z stdout F:x:y tagged"});
  EXPECT_EQ(Messages(), (std::vector<std::string>{"", "tagged"}));
  EXPECT_EQ(events_.Dropped(DropReason::kBadEnvelope), 0u);
}

TEST_F(EnvelopeTest, LineThatBreaksTheDetectedEnvelopeIsPassedAsPlainAndCounted) {
  Parse({"2026-01-04T14:48:25Z stdout F fine", "garbage without envelope"});
  EXPECT_EQ(Messages(), (std::vector<std::string>{"fine", "garbage without envelope"}));
  EXPECT_EQ(events_.Dropped(DropReason::kBadEnvelope), 1u);
}

TEST_F(EnvelopeTest, DockerJsonLogIsUnescapedIncludingAnsiAndCarriageReturn) {
  Parse(
      {R"({"log":"\u001b[0;36m(Worker_TP0 pid=12)\u001b[0;0m ERROR 01-04 14:48:25 [core.py:1] say \"hi\"\\\r\n","stream":"stdout","time":"2026-01-04T14:48:25.000000001Z"})"});
  EXPECT_EQ(parser_->envelope(), Envelope::kDocker);
  ASSERT_EQ(sink_.records.size(), 1u);
  const auto& r = sink_.records[0];
  EXPECT_EQ(r.message, "say \"hi\"\\");
  EXPECT_EQ(r.worker->name, "Worker_TP0");
  EXPECT_EQ(r.raw.substr(0, 7), "\x1b[0;36m");  // raw keeps ANSI
  EXPECT_EQ(r.time_us, kJan4);
}

TEST_F(EnvelopeTest, DockerSplitRecordsAreJoinedUntilTheNewline) {
  Parse({R"({"log":"part one, ","stream":"stderr","time":"2026-01-04T14:48:25Z"})",
         R"({"log":"other\n","stream":"stdout","time":"2026-01-04T14:48:26Z"})",
         R"({"log":"part two\n","stream":"stderr","time":"2026-01-04T14:48:27Z"})"});
  EXPECT_EQ(Messages(), (std::vector<std::string>{"other", "part one, part two"}));
  EXPECT_EQ(sink_.records[1].time_us, kJan4);
}

TEST_F(EnvelopeTest, DockerSurrogatePairsAndExtraMembersAreDecoded) {
  JsonObjectScanner scanner;
  DockerRecord record;
  ASSERT_TRUE(DecodeDockerJson(
      R"({"attrs":{"tag":"a\"}"},"log":"\ud83d\ude00 \u00e9\t\/","stream":"stdout","time":"t"})",
      scanner, &record));
  EXPECT_EQ(record.log, "\xF0\x9F\x98\x80 \xC3\xA9\t/");
  EXPECT_EQ(record.stream, "stdout");
  EXPECT_EQ(record.time, "t");
  EXPECT_FALSE(DecodeDockerJson(R"({"log":"bad \x escape"})", scanner, &record));
  EXPECT_FALSE(DecodeDockerJson(R"({"stream":"stdout"})", scanner, &record));
  EXPECT_FALSE(DecodeDockerJson(R"({"log":"unterminated)", scanner, &record));
}

// Issue 42: one JSON decoder for Docker records and socket frames. A lone
// surrogate (a UTF-16 shipper's) no longer loses the line on one path and
// keeps it on the other: both give U+FFFD in its place.
TEST_F(EnvelopeTest, ALoneSurrogateInADockerRecordIsAReplacementCharacterNotALostLine) {
  JsonObjectScanner scanner;
  DockerRecord record;
  ASSERT_TRUE(
      DecodeDockerJson(R"({"log":"a\ud83d b \ude00c\n","stream":"stderr"})", scanner, &record));
  EXPECT_EQ(record.log,
            "a\xEF\xBF\xBD b \xEF\xBF\xBD"
            "c\n");
  EXPECT_EQ(record.stream, "stderr");
}

TEST_F(EnvelopeTest, MalformedDockerLineIsPlainAndCounted) {
  ParserOptions options;
  options.envelope = Envelope::kDocker;
  Parse({R"({"log":"ok\n","stream":"stdout","time":"2026-01-04T14:48:25Z"})", R"({"log":"broken)"},
        options);
  EXPECT_EQ(Messages(), (std::vector<std::string>{"ok", R"({"log":"broken)"}));
  EXPECT_EQ(events_.Dropped(DropReason::kBadEnvelope), 1u);
}

TEST_F(EnvelopeTest, JournaldPrefixIsRemovedAndItsYearGuessIsCounted) {
  ParserOptions options;
  options.mtime_year = 2025;
  Parse({"Aug 19 18:34:30 vllm vllm[8707]: (APIServer pid=8707)   File \"x.py\", line 1, in f",
         "Aug 19 18:34:31 vllm systemd: Scheduled restart job"},
        options);
  EXPECT_EQ(parser_->envelope(), Envelope::kJournald);
  ASSERT_EQ(sink_.records.size(), 2u);
  EXPECT_EQ(sink_.records[0].worker->name, "APIServer");
  EXPECT_EQ(sink_.records[0].kind, LineKind::kFrame);
  EXPECT_EQ(sink_.records[1].message, "Scheduled restart job");
  // 2025-08-19 18:34:31 UTC
  EXPECT_EQ(sink_.records[1].time_us, (DaysFromCivil(2025, 8, 19) * 86400 + 66871) * 1'000'000);
  EXPECT_EQ(events_.Guessed(TimeFallback::kYearFromMtime), 2u);
}

TEST_F(EnvelopeTest, ComposeServicePrefixIsRemoved) {
  Parse({"vllm-tp2-1  | INFO 01-04 14:48:25 [core.py:93] Initializing a V1 LLM engine",
         "vllm-tp2-1  |"});
  EXPECT_EQ(parser_->envelope(), Envelope::kCompose);
  EXPECT_EQ(Messages(), (std::vector<std::string>{"Initializing a V1 LLM engine", ""}));
}

TEST_F(EnvelopeTest, PlainIsChosenWhenTheFirstLinesMatchNoEnvelope) {
  std::vector<std::string> lines;
  for (int i = 0; i < 9; ++i) lines.push_back("INFO 01-04 14:48:25 [core.py:93] line");
  lines.push_back("2026-01-04T14:48:25Z stdout F looks like CRI but too late");
  Parse(lines);
  EXPECT_EQ(parser_->envelope(), Envelope::kPlain);
  EXPECT_EQ(sink_.records.back().message,
            "2026-01-04T14:48:25Z stdout F looks like CRI but too late");
  EXPECT_EQ(events_.Dropped(DropReason::kBadEnvelope), 0u);
}

TEST_F(EnvelopeTest, AutoDetectionSkipsLeadingEmptyLines) {
  Parse({"", "", "2026-01-04T14:48:25Z stdout F hello"});
  EXPECT_EQ(parser_->envelope(), Envelope::kCri);
  EXPECT_EQ(sink_.records.back().message, "hello");
}

TEST_F(EnvelopeTest, EnvelopeNamesRoundTrip) {
  for (Envelope e : {Envelope::kAuto, Envelope::kPlain, Envelope::kCri, Envelope::kDocker,
                     Envelope::kJournald, Envelope::kCompose}) {
    Envelope back = Envelope::kAuto;
    ASSERT_TRUE(ParseEnvelopeName(EnvelopeName(e), &back));
    EXPECT_EQ(back, e);
  }
  Envelope out;
  EXPECT_FALSE(ParseEnvelopeName("syslog", &out));
}

}  // namespace
}  // namespace fingerprintd::parse
