// Quiet lines skipped whole by the parser's line templates
// (src/parse/line_templates.h) give exactly what parsing them gives, in the
// formats whose headers have a byte shape: SGLang's rank-naming headers, a
// new second re-timing a template (and its year), NCCL's headers read again,
// TensorRT-LLM's; and a skipped line ends what parsing it would end.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cctype>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "fingerprintd/correlate.h"
#include "fingerprintd/pipeline.h"
#include "fingerprintd/source.h"
#include "parse/buffer_hints.h"
#include "parse/line_templates.h"
#include "rules/buffer_matcher.h"
#include "testing/buffer_first_runs.h"
#include "testing/counting_events.h"
#include "testing/replay_harness.h"

namespace fingerprintd::testing {
namespace {

// An SGLang server's log: its header names the rank (`[date time TP1] `) or
// none (the main process), carries a year and may hold an inner level word
// (`INFO x.py:3: `). Quiet lines of it are skipped by a head that ends after
// the message's first word (parse/header.cc, ParseSglang's fixed_size); raw
// lines (tracebacks, prints) follow the rank the last header named.
std::string SglangQuietLog(std::mt19937& rng, const std::vector<std::string>& atoms, bool cri) {
  auto pick = [&](size_t n) { return static_cast<size_t>(rng() % n); };
  const std::vector<std::string> tags = {" TP0", " TP1", " TP2", " TP3", " DP0 TP1 EP1", ""};
  const std::vector<std::string> bodies = {
      "Decode batch. #running-req: 12, #token: 40412, token usage: 0.41, #queue-req: 0, ",
      "Prefill batch. #new-seq: 1, #new-token: 812, #cached-token: 0, #running-req: 3, ",
      "INFO:     10.244.1.7:51234 - \"POST /v1/chat/completions HTTP/1.1\" 200 OK",
      "KV Cache is allocated. #tokens: 2243474, K size: 8.12 GB, V size: 8.12 GB",
      "load weight begin. avail mem=93.12 GB",
      "INFO scheduler.py:312: Cache flushed",  // an inner level word: parsed
      "INFO done",                             // a level word and a space, no location
      "DEBUG",                                 // an uppercase word to the end
      "OK"};
  const std::vector<std::string> breakers = {
      "Scheduler hit an exception: Traceback (most recent call last):",
      "  File \"/sgl-workspace/sglang/python/sglang/srt/managers/scheduler.py\", line 2712, in run",
      "RuntimeError: Assertion error (/sgl-workspace/DeepGEMM/csrc/apis/layout.hpp:60): "
      "Unknown SF transformation",
      "NameError: name 'deep_gemm' is not defined",
      "WARNING x.py:9: careful",
      "text with \xc3\xa9 and a \t tab",
      "Received sigquit from a child process. It usually means the child failed."};
  std::string log;
  int minute = 0, second = 0;
  const int lines = 1500 + static_cast<int>(pick(1500));
  for (int i = 0; i < lines; ++i) {
    if (pick(100) == 0) ++second;
    if (pick(1000) == 0) second -= 3;  // a clock stepping back
    if (second >= 60) second -= 60, ++minute;
    if (second < 0) second += 60, --minute;
    char time[32];
    std::snprintf(time, sizeof(time), "2026-03-04 10:%02d:%02d", minute, second);
    const std::string fraction = pick(100) == 0 ? ".123" : "";
    // Mostly TP0's batch lines and the main process's access lines, as SGLang writes.
    const size_t tag = pick(10);
    const std::string header = "[" + std::string(time) + fraction +
                               (tag < 6   ? tags[0]
                                : tag < 8 ? tags.back()
                                          : tags[pick(tags.size())]) +
                               "] ";
    std::string line;
    const size_t kind = pick(1000);
    if (kind < 900) {
      // The first five bodies can be skipped; the others are parsed, always.
      line = header + bodies[pick(10) < 8 ? pick(5) : pick(bodies.size())];
    } else if (kind < 920) {
      std::string atom = atoms[pick(atoms.size())];
      line = header + "quiet text with " + atom + " inside";
    } else if (kind < 925) {
      line = header + breakers[pick(breakers.size())];
    } else if (kind < 930) {
      line = breakers[pick(3)];  // raw: the rank the last header named
    } else if (kind < 945) {
      line = "raw print without a header";
    } else if (kind < 960) {
      line = "\x1b[0;36m(Worker_TP0 pid=7)\x1b[0;0m INFO 03-04 10:00:0" + std::to_string(pick(9)) +
             " [a.py:1] a vLLM line between";
    } else if (kind < 970) {
      line = "[2026-03-04T10:00:00.702Z] " + header + "behind a paste wrapper";
    } else {
      line = header + std::string(200 + pick(300), 'x');  // past a small line cap
    }
    if (!cri) {
      log += line + "\n";
      continue;
    }
    char stamp[64];
    const char* zone = pick(50) == 0 ? "+01:00" : "Z";
    std::snprintf(stamp, sizeof(stamp), "2026-03-04T10:%02d:%02d.%09d%s", minute, second,
                  static_cast<int>(pick(999999999)), zone);
    const size_t cut = line.size() > 8 && pick(30) == 0 ? 1 + pick(line.size() - 1) : 0;
    AppendCriRecord(&log, stamp, pick(10) == 0 ? "stderr" : "stdout", line, cut);
  }
  return log;
}

TEST(BufferFirstTest, SkippingSglangQuietLinesGivesTheSameIncidentsAndCountersAsParsingThem) {
  uint64_t lines = 0;
  const uint64_t skipped = SkippedOnSeededQuietLogs(SglangQuietLog, 30, 3, &lines);
  // The skip path is what was tested: a line in a new second of its rank and
  // first word is parsed, and so are the breakers.
  EXPECT_GT(skipped * 3, lines);
}

// The rank a raw line is given is the one the header of the line before it
// named, also when that line and the ones before it were skipped: a skipped
// line leaves the rank its header named, so the raw exception line after
// TP1's skipped lines is TP1's, and after the main process's (no rank) the
// unprefixed stream's.
TEST(BufferFirstTest, ARawLineAfterSkippedSglangLinesIsTheRankTheLastHeaderNamed) {
  for (const std::string last : {"[2026-03-04 10:00:00 TP1] ", "[2026-03-04 10:00:00] "}) {
    std::string log;
    for (int i = 0; i < 12; ++i) {
      log += "[2026-03-04 10:00:00 TP" + std::to_string(i % 2 == 0 ? 0 : 2) +
             "] Decode batch. #running-req: 1, #token: 4" + std::to_string(i) + "\n";
      log += last + "Decode batch. #running-req: 2, #token: 5" + std::to_string(i) + "\n";
    }
    log +=
        "RuntimeError: Assertion error (/sgl-workspace/DeepGEMM/csrc/apis/layout.hpp:60): "
        "Unknown SF transformation\n";
    // An incident, whose workers the test compares.
    const PipelineRun fast = ExpectSameIncidentWithSkipping(log, last);
    EXPECT_GT(fast.skipped, 12u) << last;  // most of the header lines took the skip path
  }
}

// A new second of an SGLang rank's lines re-times its template
// (LineTemplates::Retime) instead of parsing the line: after the first lines, every batch
// line is skipped, and the times they leave date the raw error after them
// as parsing them would.
TEST(BufferFirstTest, SglangLinesOfANewSecondAreRetimedAndSkipped) {
  for (const bool cri : {false, true}) {
    std::string log;
    int lines = 0;
    for (int second = 0; second < 120; ++second) {
      char time[32];
      std::snprintf(time, sizeof(time), "2026-03-04 10:%02d:%02d", second / 60, second % 60);
      for (int i = 0; i < 4; ++i, ++lines) {
        const std::string line = "[" + std::string(time) +
                                 " TP0] Decode batch. #running-req: " + std::to_string(i) +
                                 ", #token: 4012" + std::to_string(second);
        AppendLine(&log, cri,
                   "2026-03-04T10:" + std::string(time + 14) + ".5" + std::to_string(i) + "Z",
                   "stdout", line);
      }
    }
    AppendLine(&log, cri, "2026-03-04T10:02:00.000Z", "stderr",
               "RuntimeError: Assertion error (/sgl-workspace/DeepGEMM/csrc/apis/layout.hpp:60): "
               "Unknown SF transformation");
    const PipelineRun fast = ExpectSameIncidentWithSkipping(log, cri ? "cri" : "plain");
    // All but the first few (the envelope is decided after 8 lines; one line
    // learns the shape).
    EXPECT_GT(fast.skipped, static_cast<uint64_t>(lines) - 12) << (cri ? "cri" : "plain");
  }
}

// TensorRT-LLM's header (`[MM/DD/YYYY-HH:MM:SS] [TRT-LLM] [RANK n] [I] `)
// names the rank and has a year: its lines are skipped and re-timed like
// SGLang's, by the shape its header parser gives (parse/header.cc) and no
// code of its own. Interleaved ranks, the C++ runtime's and uvicorn's lines
// among them; the raw error after rank 2's lines is rank 2's, dated by them.
TEST(BufferFirstTest, TensorRtLlmLinesAreSkippedAndRetimedByTheirHeadersShape) {
  for (const bool cri : {false, true}) {
    std::string log;
    int lines = 0;
    for (int second = 0; second < 90; ++second) {
      char time[32];
      std::snprintf(time, sizeof(time), "03/04/2026-10:%02d:%02d", second / 60, second % 60);
      for (int rank : {0, 1, 3, 2}) {
        const std::string line = "[" + std::string(time) + "] [TRT-LLM] [RANK " +
                                 std::to_string(rank) +
                                 "] [I] iter = " + std::to_string(second * 4 + rank) +
                                 ", host_step_time = 12.5ms, num_scheduled_requests: 8";
        AppendLine(&log, cri, "2026-03-04T10:" + std::string(time + 14) + ".5Z", "stdout", line);
        ++lines;
      }
      if (second % 10 == 0) {
        AppendLine(&log, cri, "2026-03-04T10:" + std::string(time + 14) + ".6Z", "stdout",
                   "[TensorRT-LLM][INFO] Refreshed the MPI local session");
        AppendLine(&log, cri, "2026-03-04T10:" + std::string(time + 14) + ".7Z", "stdout",
                   "INFO:     10.0.0.7:5000 - \"POST /v1/chat/completions HTTP/1.1\" 200 OK");
      }
    }
    AppendLine(&log, cri, "2026-03-04T10:01:30.000Z", "stderr",
               "RuntimeError: Assertion error (/workspace/.deps/deepgemm-src/csrc/apis/"
               "layout.hpp:60): Unknown SF transformation");
    const PipelineRun fast = ExpectSameIncidentWithSkipping(log, cri ? "cri" : "plain");
    // All but the first few (the envelope is decided after 8 lines; each
    // rank's first line learns its template).
    EXPECT_GT(fast.skipped, static_cast<uint64_t>(lines) - 16) << (cri ? "cri" : "plain");
  }
}

// NCCL_DEBUG=INFO writes hundreds of unprefixed `host:pid:tid [dev] NCCL INFO`
// lines at start-up, without a time. They have a template without a head
// (parse/line_templates.h) and are skipped like the prefixed INFO lines around them; a raw
// traceback of the unprefixed stream after them still gets the parser's time and worker.
TEST(BufferFirstTest, NcclInfoLinesAreSkippedAndWhatFollowsThemIsDatedAsWhenParsed) {
  for (const bool cri : {false, true}) {
    std::string log;
    int nccl = 0;
    for (int i = 0; i < 400; ++i) {
      char time[16];
      std::snprintf(time, sizeof(time), "10:00:%02d", i / 10);
      std::string line;
      if (i % 4 == 0) {
        line = "\x1b[0;36m(Worker_TP0 pid=7)\x1b[0;0m INFO 03-04 " + std::string(time) +
               " [a.py:1] warming up";
      } else {
        line = "vllm-0:" + std::to_string(27928 + i % 4) + ":" + std::to_string(27940 + i % 7) +
               " [" + std::to_string(i % 4) + "] NCCL INFO Channel 0" + std::to_string(i % 8) +
               "/0 : 0[0] -> 1[1] via P2P/CUMEM/read";
        ++nccl;
      }
      AppendLine(&log, cri, "2026-03-04T" + std::string(time) + ".5" + std::to_string(i % 10) + "Z",
                 "stdout", line);
    }
    AppendLine(
        &log, cri, "2026-03-04T10:00:40.000Z", "stderr",
        "RuntimeError: Assertion error (/workspace/.deps/deepgemm-src/csrc/apis/layout.hpp:60): "
        "Unknown SF transformation");
    const PipelineRun fast = ExpectSameIncidentWithSkipping(log, cri ? "cri" : "plain");
    // All but the first few of the 300 NCCL lines (the envelope is decided
    // after 8 lines; one line learns the shape) took the skip path.
    EXPECT_GT(fast.skipped, static_cast<uint64_t>(nccl) + 100 - 20) << (cri ? "cri" : "plain");
  }
}

// A warning cut at the terminal's width is carried for a bare continuation
// (rules/engine.cc, Rejoin). A quiet line of another process between them,
// skipped, ends the carry as parsing it would: the bare line after it is not
// joined into a warning a rule matches.
TEST(BufferFirstTest, ASkippedLineEndsAMessageCarriedForItsWrappedContinuation) {
  std::string log;
  for (int i = 0; i < 12; ++i) {
    log += "(Worker_TP0 pid=7) INFO 03-04 10:00:00 [a.py:1] warming up\n";
    log += "(Worker_TP1 pid=8) INFO 03-04 10:00:00 [a.py:1] warming up\n";
  }
  log +=
      "(Worker_TP0 pid=7) WARNING 03-04 10:00:00 [w.py:1] The kernels chosen for this GPU "
      "may be slow or fail later because the Device capability 12.0 not sup\n";
  const std::string cut = log;
  log += "(Worker_TP1 pid=8) INFO 03-04 10:00:00 [a.py:1] warming up\n";
  log += "ported\n";
  const PipelineRun oracle = RunPipeline(log, false, 4096, 1 << 20);
  const PipelineRun fast = RunPipeline(log, true, 4096, 1 << 20);
  ExpectSamePipelineRuns(oracle, fast, "a carry, a skipped line, a bare line");
  // The line between took the skip path (the bare line after it never does).
  EXPECT_EQ(fast.skipped, RunPipeline(cut, true, 4096, 1 << 20).skipped + 1);
  // Without the line between, the two pieces are one message and match.
  EXPECT_TRUE(oracle.events.rule_matches.empty());
  EXPECT_FALSE(RunPipeline(cut + "ported\n", false, 4096, 1 << 20).events.rule_matches.empty());
}

// Lines of a process in a new second are re-timed from its template without
// the parser (parse/line_templates.h): their year must be the
// parser's. Plain: guessed from the mtime, also where it flips to the year
// before within one minute (the mtime plus 14 h of zone slack falls inside
// the log). CRI: the envelope's year or a neighbour, across New Year with
// envelopes a second behind or ahead of the headers. Both across midnight,
// with headers that carry a year or a fraction. Raw exception lines without
// a header take the parser's last times, which re-timed lines set, into
// the incidents.
TEST(BufferFirstTest, RetimedLinesGetTheParsersYearAcrossTheMtimeLimitMidnightAndNewYear) {
  const std::vector<std::string> prefixes = {"\x1b[0;36m(APIServer pid=1)\x1b[0;0m ",
                                             "(Worker_TP0 pid=11) ", "(Worker_TP1 pid=12) ", ""};
  // 2026-03-04 10:00:30 UTC less the 14 h slack: headers after 03-04 10:00:30 are last year's.
  const int64_t mtime_us = (1'772'618'430LL - 14 * 3600) * 1'000'000;
  // 2026-03-04 10:00:00 (the mtime limit), 2026-03-04 23:59:30, 2026-12-31 23:59:30 UTC.
  const int64_t starts[] = {1'772'618'400, 1'772'668'770, 1'798'761'570};
  uint64_t skipped = 0;
  for (uint32_t seed = 1; seed <= 12; ++seed) {
    std::mt19937 rng(seed);
    auto pick = [&](size_t n) { return static_cast<size_t>(rng() % n); };
    const bool cri = seed % 2 == 0;
    time_t now = static_cast<time_t>(starts[seed % 3] + static_cast<int64_t>(pick(20)));
    auto format = [](time_t t, const char* layout) {
      struct tm tm;
      gmtime_r(&t, &tm);
      char out[64];
      std::strftime(out, sizeof(out), layout, &tm);
      return std::string(out);
    };
    std::string log;
    for (int i = 0; i < 3000; ++i) {
      if (pick(4) == 0) ++now;
      const std::string time = format(now, "%m-%d %H:%M:%S");
      const std::string& prefix = prefixes[pick(prefixes.size())];
      const size_t kind = pick(100);
      std::string line;
      if (kind < 85) {
        line = prefix + (pick(10) == 0 ? "DEBUG " : "INFO ") + time +
               " [f.py:" + std::to_string(pick(99)) + "] Added request cmpl-" + std::to_string(i) +
               ".";
      } else if (kind < 90) {
        line = prefix + "INFO " + format(now, "%Y-%m-%d %H:%M:%S") +
               ".123 x.py:62] a header with a year";
      } else if (kind < 93) {
        line = prefix + "INFO " + time + ".5 [f.py:1] a header with a fraction";
      } else if (kind < 95) {
        line = prefix + "RuntimeError: Assertion error (layout.hpp:60): Unknown SF transformation";
      } else if (kind < 97) {
        line = prefix + "INFO:     10.0.0.1:5000 - \"GET /health HTTP/1.1\" 200 OK";
      } else {
        line = prefix + "INFO " + time + " [f.py:2] Loading weights took 1." +
               std::to_string(pick(9)) + " seconds";
      }
      if (!cri) {
        log += line + "\n";
        continue;
      }
      const time_t envelope = now + static_cast<time_t>(pick(5) == 0) - (pick(9) == 0 ? 1 : 0);
      AppendCriRecord(
          &log, format(envelope, "%Y-%m-%dT%H:%M:%S.") + std::to_string(100000000 + pick(9)) + "Z",
          "stdout", line, 0);
    }
    const PipelineRun oracle = RunPipeline(log, false, 4096, 1 << 20, mtime_us);
    const PipelineRun fast = RunPipeline(log, true, 4096, 1 << 20, mtime_us);
    const std::string what = "seed " + std::to_string(seed) + (cri ? " cri" : " plain");
    EXPECT_FALSE(oracle.changes.empty()) << what;
    ExpectSamePipelineRuns(oracle, fast, what);
    skipped += fast.skipped;
    if (HasFailure()) break;
  }
  EXPECT_GT(skipped, 12u * 3000 / 2);
}

}  // namespace
}  // namespace fingerprintd::testing
