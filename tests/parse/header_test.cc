// Headers: level, time and location in front of a message, and how the event
// time is completed when the header has no year.
#include "parse/header.h"

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "fingerprintd/parse.h"
#include "testing/collecting_sink.h"
#include "testing/counting_events.h"

namespace fingerprintd::parse {
namespace {

Header Parse(std::string_view line) {
  Header h;
  EXPECT_TRUE(ParseHeader(line, &h)) << line;
  return h;
}

int64_t Utc(int y, int mo, int d, int h, int mi, int s) {
  return (DaysFromCivil(y, mo, d) * 86400 + h * 3600 + mi * 60 + s) * 1'000'000;
}

TEST(HeaderTest, VllmHeaderGivesLevelTimeLocationAndMessage) {
  Header h = Parse("ERROR 12-23 19:34:21 [multiproc_executor.py:824]     raise RuntimeError(");
  EXPECT_EQ(h.kind, HeaderKind::kVllm);
  EXPECT_EQ(h.level, Level::kError);
  EXPECT_EQ(h.time.month, 12);
  EXPECT_EQ(h.time.day, 23);
  EXPECT_EQ(h.time.hour, 19);
  EXPECT_EQ(h.time.year, 0);
  EXPECT_EQ(h.location, "multiproc_executor.py:824");
  EXPECT_EQ(h.message, "    raise RuntimeError(");  // indentation kept
  EXPECT_EQ(h.text, "ERROR 12-23 19:34:21 [multiproc_executor.py:824]");
}

TEST(HeaderTest, PreBracketVllmHeaderAndPathLocationsAreAccepted) {
  Header h = Parse("INFO 07-03 11:58:36 llm_engine.py:161] Initializing an LLM engine (v0.5.0)");
  EXPECT_EQ(h.location, "llm_engine.py:161");
  EXPECT_EQ(h.message, "Initializing an LLM engine (v0.5.0)");
  h = Parse("DEBUG 09-10 01:02:03 [model_executor/.../quantization/utils/fp8_utils.py:77] m");
  EXPECT_EQ(h.location, "model_executor/.../quantization/utils/fp8_utils.py:77");
  h = Parse("WARNING 09-10 01:02:03 [<frozen importlib._bootstrap>:488] m");
  EXPECT_EQ(h.location, "<frozen importlib._bootstrap>:488");
  EXPECT_EQ(h.level, Level::kWarning);
}

TEST(HeaderTest, BlankLoggerExceptionLineKeepsAnEmptyMessage) {
  Header h = Parse("ERROR 12-23 19:34:21 [multiproc_executor.py:824] ");
  EXPECT_EQ(h.message, "");
}

TEST(HeaderTest, UvicornLevelColonIsAHeader) {
  Header h = Parse("INFO:     Started server process [1]");
  EXPECT_EQ(h.kind, HeaderKind::kUvicorn);
  EXPECT_EQ(h.level, Level::kInfo);
  EXPECT_EQ(h.message, "Started server process [1]");
}

TEST(HeaderTest, APaddedLevelWithTheMessageAtColumnNineIsAHeader) {
  Header h = Parse("ERROR    Backend supervisor: NotImplementedError: TP=1 only");
  EXPECT_EQ(h.kind, HeaderKind::kPaddedLevel);
  EXPECT_EQ(h.level, Level::kError);
  EXPECT_FALSE(h.has_time);
  EXPECT_EQ(h.message, "Backend supervisor: NotImplementedError: TP=1 only");
  EXPECT_EQ(Parse("WARNING  disk almost full").level, Level::kWarning);
  EXPECT_EQ(Parse("INFO     started").message, "started");
}

TEST(HeaderTest, ALevelWordWithOtherSpacingIsNoPaddedHeader) {
  for (std::string_view line :
       {"ERROR occurred while loading", "ERROR      too far right", "CRITICAL section entered"}) {
    Header h;
    EXPECT_FALSE(ParseHeader(line, &h)) << line;
  }
}

TEST(HeaderTest, PythonLoggingDefaultFormat) {
  Header h = Parse("2025-01-02 03:04:05,678 - vllm.engine - WARNING - careful - really");
  EXPECT_EQ(h.kind, HeaderKind::kPythonLogging);
  EXPECT_EQ(h.level, Level::kWarning);
  EXPECT_EQ(h.time.year, 2025);
  EXPECT_EQ(h.time.micros, 678000);
  EXPECT_EQ(h.message, "careful - really");
}

TEST(HeaderTest, RayDriverFormatMapsSuccToInfo) {
  Header h = Parse("2026-04-25 06:10:57,245\tSUCC scripts.py:980 -- Ray runtime started.");
  EXPECT_EQ(h.kind, HeaderKind::kRay);
  EXPECT_EQ(h.level, Level::kInfo);
  EXPECT_EQ(h.location, "scripts.py:980");
  EXPECT_EQ(h.message, "Ray runtime started.");
  h = Parse("2026-04-25 06:11:34,445\tINFO worker.py:1814 -- Connecting to existing Ray cluster");
  EXPECT_EQ(h.level, Level::kInfo);
}

TEST(HeaderTest, SglangBracketNamesTheRankAndMayCarryALevel) {
  Header h = Parse("[2025-11-03 18:48:34 TP7] Scheduler hit an exception: Traceback");
  EXPECT_EQ(h.kind, HeaderKind::kSglang);
  EXPECT_TRUE(h.has_worker);
  EXPECT_EQ(h.worker.tp, 7);
  EXPECT_EQ(h.worker.role, ProcessRole::kWorker);
  EXPECT_EQ(h.level, Level::kUnknown);
  EXPECT_EQ(h.message, "Scheduler hit an exception: Traceback");

  h = Parse("[2026-05-28 00:11:09.816 DP0 TP0 EP0] Load weight end.");
  EXPECT_EQ(h.time.micros, 816000);
  EXPECT_EQ(h.worker.dp, 0);
  EXPECT_EQ(h.worker.ep, 0);

  h = Parse("[2025-07-09 11:52:19] server_args=ServerArgs(model_path='x')");
  EXPECT_FALSE(h.has_worker);

  h = Parse("[2025-11-18 18:04:02] WARNING compile_utils.py:94: Entering DeepGEMM JIT");
  EXPECT_EQ(h.level, Level::kWarning);
  EXPECT_EQ(h.location, "compile_utils.py:94");
  EXPECT_EQ(h.message, "Entering DeepGEMM JIT");
}

// fixed_size (buffer-first quiet lines): the bytes that decide an SGLang
// header's kind, time, rank tags and level, up to the byte after the
// message's uppercase first word; none when the bytes after it decide.
TEST(HeaderTest, SglangFixedSizeEndsAfterTheMessagesFirstWordWhenThatDecidesTheLevel) {
  auto fixed = [](std::string_view line) {
    Header h;
    EXPECT_TRUE(ParseHeader(line, &h)) << line;
    return std::string(line.substr(0, h.fixed_size));
  };
  EXPECT_EQ(fixed("[2026-03-04 10:15:22 TP0] Decode batch. #running-req: 12"),
            "[2026-03-04 10:15:22 TP0] De");
  EXPECT_EQ(fixed("[2026-03-04 10:15:22] INFO:     10.244.1.7:51234 - \"POST /v1 HTTP/1.1\" 200"),
            "[2026-03-04 10:15:22] INFO:");
  EXPECT_EQ(fixed("[2026-03-04 10:15:22 DP0 TP1 EP1] load weight begin."),
            "[2026-03-04 10:15:22 DP0 TP1 EP1] l");
  EXPECT_EQ(fixed("[2026-03-04 10:15:22 TP0] KV Cache is allocated."),
            "[2026-03-04 10:15:22 TP0] KV ");  // "KV" is no level word
  // A level word and a space: whether a location follows decides the level.
  EXPECT_EQ(fixed("[2026-03-04 10:15:22 TP0] INFO done"), "");
  EXPECT_EQ(fixed("[2026-03-04 10:15:22 TP0] WARNING x.py:9: careful"), "");
  EXPECT_EQ(fixed("[2026-03-04 10:15:22 TP0] DEBUG"), "");  // the word may go on
  EXPECT_EQ(fixed("[2026-03-04 10:15:22 TP0]Glued"), "");   // no space after the tags
}

TEST(HeaderTest, TensorRtLlmFormsGiveRankAndLevel) {
  Header h = Parse("[01/16/2026-06:20:17] [TRT-LLM] [RANK 3] [E] iter = 5559");
  EXPECT_EQ(h.kind, HeaderKind::kTrtLlm);
  EXPECT_EQ(h.level, Level::kError);
  EXPECT_EQ(h.time.year, 2026);
  EXPECT_TRUE(h.has_worker);
  EXPECT_EQ(h.worker.rank, 3);
  EXPECT_EQ(h.message, "iter = 5559");

  h = Parse("[10/21/2025-23:23:13] [TRT-LLM] [MPI_Rank 1] [W] x");
  EXPECT_EQ(h.worker.rank, 1);
  EXPECT_EQ(h.level, Level::kWarning);

  h = Parse("[10/21/2025-23:23:13] [TRT-LLM] [I] Starting TensorRT-LLM init.");
  EXPECT_FALSE(h.has_worker);
  EXPECT_EQ(h.level, Level::kInfo);

  h = Parse("[TensorRT-LLM][WARNING] low memory");
  EXPECT_EQ(h.kind, HeaderKind::kTrtCpp);
  EXPECT_EQ(h.level, Level::kWarning);
  EXPECT_EQ(h.message, "low memory");
}

TEST(HeaderTest, PythonWarningsLineIsAWarningThatKeepsItsCategory) {
  Header h = Parse(
      "/usr/lib/python3.12/multiprocessing/resource_tracker.py:279: UserWarning: leaked objects");
  EXPECT_EQ(h.kind, HeaderKind::kPythonWarning);
  EXPECT_EQ(h.level, Level::kWarning);
  EXPECT_EQ(h.location, "/usr/lib/python3.12/multiprocessing/resource_tracker.py:279");
  EXPECT_EQ(h.message, "UserWarning: leaked objects");
}

TEST(HeaderTest, GlogTorchAndNcclLines) {
  Header h = Parse("I20250312 15:30:37.177192 3083291 file.cpp:41] hello");
  EXPECT_EQ(h.kind, HeaderKind::kGlog);
  EXPECT_EQ(h.level, Level::kInfo);
  EXPECT_EQ(h.time.year, 2025);
  EXPECT_EQ(h.time.micros, 177192);
  EXPECT_EQ(h.location, "file.cpp:41");
  EXPECT_EQ(h.message, "hello");

  h = Parse("[W730 15:32:17.841273251 ProcessGroupNCCL.cpp:1479] Warning: WARNING: destroy");
  EXPECT_EQ(h.kind, HeaderKind::kTorch);
  EXPECT_EQ(h.level, Level::kWarning);
  EXPECT_EQ(h.time.month, 7);
  EXPECT_EQ(h.time.day, 30);
  EXPECT_EQ(h.location, "ProcessGroupNCCL.cpp:1479");

  h = Parse("spark01:2395:2395 [0] NCCL INFO Bootstrap: Using enp1s0f0np0");
  EXPECT_EQ(h.kind, HeaderKind::kNccl);
  EXPECT_EQ(h.level, Level::kInfo);
  EXPECT_EQ(h.message, "Bootstrap: Using enp1s0f0np0");
  h = Parse("k8s17:581:600 [3] NCCL WARN Call to ibv_create_qp failed");
  EXPECT_EQ(h.level, Level::kWarning);
}

TEST(HeaderTest, OrdinaryTextHasNoHeader) {
  Header h;
  for (std::string_view line :
       {"RuntimeError: boom", "Traceback (most recent call last):", "  File \"x.py\", line 1",
        "[entrypoint] Applying patch", "ERRORS were found", "INFO", "spark01:2395:2395 [0] NCCL IN",
        "Loading safetensors checkpoint shards: 100% Completed | 46/46", ""}) {
    EXPECT_FALSE(ParseHeader(line, &h)) << line;
    EXPECT_EQ(h.message, line);
  }
}

class HeaderTimeTest : public ::testing::Test {
 protected:
  int64_t TimeOf(std::string_view line, ParserOptions options = {}) {
    SourceParser parser(1, "x", options, events_, sink_);
    parser.Feed(line);
    parser.Finish();
    return sink_.records.back().time_us;
  }
  fingerprintd::testing::CountingEvents events_;
  fingerprintd::testing::CollectingSink sink_;
};

TEST_F(HeaderTimeTest, YearComesFromTheEnvelope) {
  EXPECT_EQ(TimeOf("2025-04-06T07:55:21.108632509Z stdout F INFO 04-06 07:55:21 [a.py:1] x"),
            Utc(2025, 4, 6, 7, 55, 21));
  EXPECT_EQ(events_.Guessed(TimeFallback::kYearFromClock), 0u);
  EXPECT_EQ(events_.Guessed(TimeFallback::kYearFromMtime), 0u);
}

TEST_F(HeaderTimeTest, DecemberLineReadInJanuaryKeepsThePreviousYear) {
  EXPECT_EQ(TimeOf("2026-01-01T00:00:02Z stdout F INFO 12-31 23:59:59 [a.py:1] x"),
            Utc(2025, 12, 31, 23, 59, 59));
  EXPECT_EQ(TimeOf("2025-12-31T23:59:59Z stdout F INFO 01-01 00:00:01 [a.py:1] x"),
            Utc(2026, 1, 1, 0, 0, 1));
}

TEST_F(HeaderTimeTest, EnvelopeZoneConvertsTheHeaderFields) {
  EXPECT_EQ(TimeOf("2025-04-06T00:55:21-07:00 stdout F INFO 04-06 00:55:21 [a.py:1] x"),
            Utc(2025, 4, 6, 7, 55, 21));
}

TEST_F(HeaderTimeTest, WithoutEnvelopeTheMtimeYearIsUsedAndCounted) {
  ParserOptions options;
  options.mtime_year = 2024;
  options.current_year = 2030;
  EXPECT_EQ(TimeOf("INFO 02-29 10:00:00 [a.py:1] x", options), Utc(2024, 2, 29, 10, 0, 0));
  EXPECT_EQ(events_.Guessed(TimeFallback::kYearFromMtime), 1u);
}

TEST_F(HeaderTimeTest, WithoutEnvelopeOrMtimeTheInjectedYearIsUsedAndCounted) {
  ParserOptions options;
  options.current_year = 2026;
  options.local_utc_offset_s = 3600;  // the log was written at UTC+1
  EXPECT_EQ(TimeOf("INFO 04-25 07:11:27 [a.py:1] x", options), Utc(2026, 4, 25, 6, 11, 27));
  EXPECT_EQ(events_.Guessed(TimeFallback::kYearFromClock), 1u);
}

TEST_F(HeaderTimeTest, YearlessHeaderIsNotDatedAfterTheFileMtime) {
  // Last written on Jan 2 2027: a Dec 31 line is from 2026, not December 2027.
  ParserOptions options;
  options.mtime_us = Utc(2027, 1, 2, 9, 0, 0);
  options.current_year = 2027;
  EXPECT_EQ(TimeOf("INFO 12-31 23:50:00 [a.py:1] x", options), Utc(2026, 12, 31, 23, 50, 0));
  EXPECT_EQ(TimeOf("INFO 01-02 08:59:00 [a.py:1] x", options), Utc(2027, 1, 2, 8, 59, 0));
  EXPECT_EQ(events_.Guessed(TimeFallback::kYearFromMtime), 2u);
}

TEST_F(HeaderTimeTest, YearlessLogCrossingNewYearStaysMonotonic) {
  ParserOptions options;
  options.mtime_us = Utc(2025, 1, 1, 1, 0, 0);
  SourceParser parser(1, "x", options, events_, sink_);
  parser.Feed("INFO 12-31 23:50:00 [a.py:1] before midnight");
  parser.Feed("INFO 01-01 00:10:00 [a.py:1] after midnight");
  parser.Finish();
  ASSERT_EQ(sink_.records.size(), 2u);
  EXPECT_EQ(sink_.records[0].time_us, Utc(2024, 12, 31, 23, 50, 0));
  EXPECT_EQ(sink_.records[1].time_us, Utc(2025, 1, 1, 0, 10, 0));
}

TEST_F(HeaderTimeTest, YearlessHeaderInAnUnknownEasternZoneKeepsTheNewYear) {
  // Written at 20:00 UTC on Dec 31 by a UTC+9 host that stamps local time; the
  // zone is unknown, so the header reads as 05:00 UTC: a wrong hour, not a year.
  ParserOptions options;
  options.mtime_us = Utc(2026, 12, 31, 20, 0, 0);
  EXPECT_EQ(TimeOf("INFO 01-01 05:00:00 [a.py:1] x", options), Utc(2027, 1, 1, 5, 0, 0));
}

TEST_F(HeaderTimeTest, YearlessHeaderWithoutMtimeIsNotDatedAfterNow) {
  // stdin: no mtime, so the injected now bounds the year.
  ParserOptions options;
  options.now_us = Utc(2026, 3, 1, 12, 0, 0);
  options.current_year = 2026;
  EXPECT_EQ(TimeOf("INFO 11-30 10:00:00 [a.py:1] x", options), Utc(2025, 11, 30, 10, 0, 0));
  EXPECT_EQ(TimeOf("INFO 03-01 11:00:00 [a.py:1] x", options), Utc(2026, 3, 1, 11, 0, 0));
  EXPECT_EQ(events_.Guessed(TimeFallback::kYearFromClock), 2u);
}

TEST_F(HeaderTimeTest, LinesWithoutTimeInheritTheStreamTimeAndCountOnlyWhenThereIsNone) {
  ParserOptions options;
  options.current_year = 2026;
  SourceParser parser(1, "x", options, events_, sink_);
  parser.Feed("(Worker_TP0 pid=1) no time yet");
  parser.Feed("(Worker_TP0 pid=1) INFO 04-25 06:11:27 [a.py:1] x");
  parser.Feed("(Worker_TP0 pid=1) raw print");
  parser.Finish();
  EXPECT_EQ(sink_.records[0].time_us, 0);
  EXPECT_EQ(sink_.records[2].time_us, Utc(2026, 4, 25, 6, 11, 27));
  EXPECT_EQ(events_.Guessed(TimeFallback::kNoTimestamp), 1u);
}

TEST_F(HeaderTimeTest, FullYearHeadersNeedNoFallback) {
  EXPECT_EQ(TimeOf("2026-04-25 06:10:52,133\tINFO usage_lib.py:448 -- x"),
            Utc(2026, 4, 25, 6, 10, 52) + 133000);
  EXPECT_EQ(events_.Guessed(TimeFallback::kYearFromClock), 0u);
}

// A header's byte shape (parse/line_templates.h): its fixed bytes decide it
// but for location and message, and the time sits at [time_begin, time_end).
TEST(HeaderTest, EachFormatsShapeSaysWhereItsFixedBytesEndAndItsTimeSits) {
  struct Case {
    std::string line, fixed, time;
  };
  const std::vector<Case> cases = {
      {"INFO 03-04 10:15:22 [api_server.py:1885] vLLM API server", "INFO 03-04 10:15:22 ",
       "03-04 10:15:22"},
      {"DEBUG 03-04 10:15:22.123 [a.py:1] x", "DEBUG 03-04 10:15:22.123 ", "03-04 10:15:22.123"},
      {"INFO:     10.0.0.1:5000 - \"GET /health HTTP/1.1\" 200 OK", "INFO: ", ""},
      {"[2026-03-04 10:15:22 TP0] Decode batch.", "[2026-03-04 10:15:22 TP0] De",
       "2026-03-04 10:15:22"},
      {"[2026-03-04 10:15:22.123 DP0 TP1] load x", "[2026-03-04 10:15:22.123 DP0 TP1] l",
       "2026-03-04 10:15:22.123"},
      {"[01/16/2026-06:20:17] [TRT-LLM] [RANK 3] [I] iter = 5559",
       "[01/16/2026-06:20:17] [TRT-LLM] [RANK 3] [I] ", "01/16/2026-06:20:17"},
      {"[10/21/2025-23:23:13] [TRT-LLM] [I] Starting TensorRT-LLM init.",
       "[10/21/2025-23:23:13] [TRT-LLM] [I] ", "10/21/2025-23:23:13"},
      // No shape: the bytes after a fixed prefix still decide.
      {"[10/21/2025-23:23:13] [TRT-LLM] [RANK 0] no level tag", "", ""},
      {"[TensorRT-LLM][INFO] low memory", "", ""},
      {"vllm-0:27928:27940 [0] NCCL INFO Channel 00/0", "", ""},
  };
  for (const Case& c : cases) {
    Header h;
    ASSERT_TRUE(ParseHeader(c.line, &h)) << c.line;
    EXPECT_EQ(c.line.substr(0, h.fixed_size), c.fixed) << c.line;
    EXPECT_EQ(c.line.substr(h.time_begin, h.time_end - h.time_begin), c.time) << c.line;
    if (h.fixed_size == 0) continue;
    // Another second of the same line has the same shape and its own time.
    std::string other = c.line;
    if (h.time_end > h.time_begin) other[h.time_end - 1] = other[h.time_end - 1] == '1' ? '2' : '1';
    Header o;
    ASSERT_TRUE(ParseHeader(other, &o)) << other;
    EXPECT_EQ(o.fixed_size, h.fixed_size);
    EXPECT_EQ(o.time_begin, h.time_begin);
    EXPECT_EQ(o.time_end, h.time_end);
    EXPECT_EQ(o.kind, h.kind);
    EXPECT_EQ(o.level, h.level);
  }
}

}  // namespace
}  // namespace fingerprintd::parse
