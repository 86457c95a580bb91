// Buffer-first matching (issue 15) gives exactly what the per-line path gives:
// every incident change byte for byte and every counter a metrics user sees,
// on every golden fixture and example, at any read size, and on seeded random
// logs built to hit its edges (atoms split by ANSI codes, CRI partials and
// read-buffer edges, repeated raw prefixes followed by text that extends the
// chain, control and non-ASCII bytes after a prefix). Quiet lines skipped
// whole (src/parse/line_templates.h) are checked the same way, on logs made of
// long runs of them broken by everything that must stop a skip.
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

namespace fs = std::filesystem;

// Every fixture and example a replay can be pointed at: the files and
// directories directly under tests/golden (and its cri/, docker/) and examples/.
std::vector<std::string> Inputs() {
  std::vector<std::string> out;
  for (const std::string dir :
       {"/tests/golden", "/tests/golden/cri", "/tests/golden/docker", "/examples"}) {
    for (const auto& entry : fs::directory_iterator(SourceDir() + dir)) {
      const std::string name = entry.path().filename().string();
      if (name == "tools" || name == "cri" || name == "docker" || name[0] == '.') continue;
      if (entry.is_regular_file() && entry.path().extension() != ".log" &&
          entry.path().extension() != ".gz") {
        continue;
      }
      out.push_back(entry.path().string());
    }
  }
  std::sort(out.begin(), out.end());
  return out;
}

TEST(BufferFirstTest, EveryFixtureAndExampleGivesTheSameIncidentsAndCountersAsThePerLinePath) {
  const std::vector<std::string> inputs = Inputs();
  ASSERT_GT(inputs.size(), 15u);
  size_t with_incidents = 0;
  for (const std::string& path : inputs) {
    const ReplayRun oracle = ReplayWith({path}, false, 1 << 20);
    if (!oracle.changes.empty()) ++with_incidents;
    for (size_t chunk : {size_t{1} << 20, size_t{4096}, size_t{61}}) {
      ExpectSameRuns(oracle, ReplayWith({path}, true, chunk),
                     path + " read " + std::to_string(chunk) + " bytes at a time");
    }
  }
  EXPECT_GT(with_incidents, 10u);
}

// A log with what the fast path must get right, from a seed.
std::string RandomLog(std::mt19937& rng, const std::vector<std::string>& atoms, bool cri) {
  auto pick = [&](size_t n) { return static_cast<size_t>(rng() % n); };
  const std::vector<std::string> prefixes = {
      "\x1b[0;36m(APIServer pid=1)\x1b[0;0m ",
      "\x1b[1;36m(Worker_TP0 pid=11)\x1b[0;0m ",
      "\x1b[1;36m(Worker_TP1 pid=12)\x1b[0;0m ",
      "(EngineCore_DP0 pid=7) ",
      "(EngineCore pid=7) (RayWorkerWrapper pid=9, ip=10.0.0.2) ",
      "(Worker_TP1 pid=12)",
      "\x1b[36m(VllmWorker rank=1 pid=5)\x1b[0m ",
      "[rank1]: ",
      "",
      ""};
  const std::vector<std::string> levels = {"INFO", "INFO", "INFO", "WARNING", "ERROR", "DEBUG"};
  const std::vector<std::string> bodies = {
      "Avg prompt throughput: 0.0 tokens/s",
      "Received request cmpl-1: prompt: 'hi', params: SamplingParams(n=1)",
      "Loading weights took 12.3 seconds",
      "world_size=2 rank=1 local_rank=1 distributed_init_method=tcp://x backend=nccl",
      "Traceback (most recent call last):",
      "  File \"/usr/lib/python3.12/x.py\", line 10, in f",
      "    return g()",
      "RuntimeError: Assertion error (layout.hpp:60): Unknown SF transformation",
      "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB.",
      "KeyError: 'model.layers.0.mlp.experts.w2_weight'",
      "(Worker_TP0 pid=11) nested after a prefix",
      "[pod/x/y] kubectl prefix",
      "text with a \t tab and \x1b[31mcolour\x1b[0m inside",
      "text with \xc3\xa9 and \xff bytes",
      "progress  50%|#####     | 5/10 [00:01<00:01,  4.20it/s]",
      "ends in a carriage return\r",
      "",
      "   (paren after spaces)"};
  std::string log;
  int hour = 10, minute = 0, second = 0;
  const int lines = 300 + static_cast<int>(pick(500));
  for (int i = 0; i < lines; ++i) {
    second += static_cast<int>(pick(3));
    if (second >= 60) second -= 60, ++minute;
    if (minute >= 60) minute -= 60, ++hour;
    char time[32];
    std::snprintf(time, sizeof(time), "03-04 %02d:%02d:%02d", hour % 24, minute, second);
    std::string body = bodies[pick(bodies.size())];
    if (pick(4) == 0) {
      // An atom, in random case, somewhere in the body; sometimes cut by an ANSI code.
      std::string atom = atoms[pick(atoms.size())];
      for (char& c : atom) {
        if (pick(2) == 0 && c >= 'a' && c <= 'z') c = static_cast<char>(c - 32);
      }
      if (pick(5) == 0 && atom.size() > 2) atom.insert(1 + pick(atom.size() - 1), "\x1b[0m");
      body.insert(pick(body.size() + 1), atom);
    }
    std::string line = prefixes[pick(prefixes.size())];
    if (pick(5) != 0) {
      line += levels[pick(levels.size())] + " " + time + " [file.py:" + std::to_string(pick(999)) +
              "] ";
    }
    line += body;
    if (!cri) {
      log += line + "\n";
      continue;
    }
    char stamp[64];
    std::snprintf(stamp, sizeof(stamp), "2026-03-04T%02d:%02d:%02d.%06dZ", hour % 24, minute,
                  second, static_cast<int>(pick(999999)));
    const std::string stream = pick(3) == 0 ? "stderr" : "stdout";
    // A CRI partial: the line cut anywhere, an atom possibly split between pieces.
    const size_t cut = line.size() > 8 && pick(4) == 0 ? 1 + pick(line.size() - 1) : 0;
    AppendCriRecord(&log, stamp, stream, line, cut);
  }
  return log;
}

TEST(BufferFirstTest, SeededRandomLogsGiveTheSameIncidentsAndCountersAsThePerLinePath) {
  const std::vector<std::string>& atoms = EmbeddedRules()->Atoms();
  ASSERT_FALSE(atoms.empty());
  const std::string path =
      ::testing::TempDir() + "buffer_first_" + std::to_string(getpid()) + ".log";
  for (uint32_t seed = 1; seed <= 40; ++seed) {
    std::mt19937 rng(seed);
    const bool cri = seed % 2 == 0;
    {
      std::ofstream out(path, std::ios::binary);
      out << RandomLog(rng, atoms, cri);
    }
    const ReplayRun oracle = ReplayWith({path}, false, 1 << 20);
    for (size_t chunk : {size_t{1} << 20, size_t{1000}, size_t{37}}) {
      ExpectSameRuns(oracle, ReplayWith({path}, true, chunk),
                     "seed " + std::to_string(seed) + (cri ? " cri" : " plain") + " read " +
                         std::to_string(chunk) + " bytes at a time");
    }
    if (HasFailure()) break;
  }
  std::remove(path.c_str());
}

// A log where most lines are quiet (INFO messages of a few processes, many
// per second), broken by everything that must stop a skip or that a skipped
// line must leave as it was: atoms and symptoms, tracebacks raw and after a
// header, triggers inside INFO messages (a traceback header, a frame, an
// exception-shaped line, rank learning from `parallel_state`, a glued tqdm
// bar), warnings cut after a comma, headers that name a rank (SGLang) before
// unprefixed raw lines, NCCL lines, lines dated only by their stream's last
// time, headers with a year, control and non-ASCII bytes, time going back,
// new processes beyond the stream cap, and in CRI partials, stderr, another
// zone and envelopes that do not parse.
std::string QuietLog(std::mt19937& rng, const std::vector<std::string>& atoms, bool cri) {
  auto pick = [&](size_t n) { return static_cast<size_t>(rng() % n); };
  std::vector<std::string> prefixes = {"\x1b[0;36m(APIServer pid=1)\x1b[0;0m ",
                                       "\x1b[0;36m(Worker_TP0 pid=11)\x1b[0;0m ",
                                       "\x1b[0;36m(Worker_TP1 pid=12)\x1b[0;0m ",
                                       "(EngineCore_DP0 pid=7) ",
                                       "(VllmWorker rank=1 pid=5) ",
                                       "(RayWorkerWrapper pid=9, ip=10.0.0.2) "};
  const std::vector<std::string> bodies = {
      "Avg prompt throughput: 0.0 tokens/s, Running: 3 reqs",
      "Received request cmpl-1: prompt: 'hi', params: SamplingParams(n=1)",
      "Added request cmpl-2.",
      "Freed 2128 KV cache blocks, 16600 free",
      "Reader rank 2 caught up, lag 33 blocks",
      "Registering 3712 cuda graph addresses"};
  const std::vector<std::string> breakers = {
      "Traceback (most recent call last):",
      "  File \"/usr/lib/python3.12/x.py\", line 10, in f",
      "ValueError: bad value",
      "KeyboardInterrupt",
      "tail of a progress bar 50%|#####| 5/10 [00:01<00:01,  4.20it/s]",
      "text with a \t tab",
      "text with \xc3\xa9 and \xff bytes",
      "ends in a carriage return\r",
      "colour \x1b[31minside\x1b[0m the message",
      "cut by the terminal after a comma,",
      ""};
  std::string log;
  int hour = 10, minute = 0, second = 0, extra_pid = 100;
  const int lines = 1500 + static_cast<int>(pick(1500));
  for (int i = 0; i < lines; ++i) {
    if (pick(200) == 0) ++second;
    if (pick(1000) == 0) second -= 3;  // a clock stepping back
    if (second >= 60) second -= 60, ++minute;
    if (second < 0) second += 60, --minute;
    if (pick(500) == 0) prefixes.push_back("(Worker_TP2 pid=" + std::to_string(extra_pid++) + ") ");
    char time[32];
    std::snprintf(time, sizeof(time), "03-04 %02d:%02d:%02d", hour, minute, second);
    const std::string prefix = prefixes[pick(prefixes.size())];
    const std::string header =
        std::string("INFO ") + time + " [file.py:" + std::to_string(pick(999)) + "] ";
    std::string line;
    const size_t kind = pick(1000);
    if (kind < 780) {
      line = prefix + header + bodies[pick(bodies.size())];
    } else if (kind < 880) {
      line = prefix + "INFO:     10.0.0." + std::to_string(pick(9)) + ":5" +
             std::to_string(pick(9999)) + " - \"POST /v1/chat/completions HTTP/1.1\" 200 OK";
    } else if (kind < 920) {
      line = "host-a:27928:" + std::to_string(27928 + pick(60)) + " [" + std::to_string(pick(4)) +
             "] NCCL INFO Channel 0" + std::to_string(pick(9)) + "/0 : 1[1] -> 2[2] via " +
             (pick(3) == 0 ? atoms[pick(atoms.size())] : std::string("SHM"));
    } else if (kind < 940) {
      line = prefix + "DEBUG " + time + " [file.py:1] " + bodies[pick(bodies.size())];
    } else if (kind < 950) {
      line = prefix + header + breakers[pick(breakers.size())];
    } else if (kind < 955) {
      line = prefix + "WARNING " + time + " [file.py:2] " + breakers[pick(breakers.size())];
    } else if (kind < 965) {
      std::string atom = atoms[pick(atoms.size())];
      if (pick(2) == 0 && !atom.empty()) atom[0] = static_cast<char>(std::toupper(atom[0]));
      line = prefix + header + "quiet text with " + atom + " inside";
    } else if (kind < 967) {
      line = prefix + "ERROR " + time +
             " [core.py:1] Worker failed with error 'Unknown SF transformation'";
    } else if (kind < 970) {
      const std::string p = prefixes[1 + pick(2)];
      line = p + "Traceback (most recent call last):\n" + p +
             "  File \"/x/vllm/utils/deep_gemm.py\", line 494, in "
             "transform_sf_into_required_layout\n" +
             p + "RuntimeError: Assertion error (layout.hpp:60): Unknown SF transformation";
    } else if (kind < 972) {
      line = prefixes[1] + "INFO " + time +
             " [parallel_state.py:1] world_size=4 rank=2 local_rank=2 backend=nccl";
    } else if (kind < 974) {
      char sglang[64];
      std::snprintf(sglang, sizeof(sglang), "[2026-03-04 %02d:%02d:%02d TP1] ", hour, minute,
                    second);
      line = std::string(sglang) + "Scheduler step done\nraw print after it";
    } else if (kind < 979) {
      line = "raw print without a header";
    } else if (kind < 982) {
      line = prefix + "INFO 2026-03-04 10:00:01.123 x.py:62] a header with a year";
    } else if (kind < 984) {
      line = prefix + header + "Loading 50%|##| 1/2 [00:01<00:01, 1.00it/s]INFO " + time +
             " [x.py:1] glued after a bar";
    } else if (kind < 990) {
      line = prefix + header + std::string(200 + pick(300), 'x');  // past a small line cap
    } else {
      line = prefix + header + bodies[pick(bodies.size())];
    }
    if (!cri) {
      log += line + "\n";
      continue;
    }
    // Every physical line of `line` in a CRI envelope.
    size_t start = 0;
    while (start <= line.size()) {
      size_t end = line.find('\n', start);
      if (end == std::string::npos) end = line.size();
      const std::string piece = line.substr(start, end - start);
      start = end + 1;
      char stamp[64];
      const char* zone = pick(50) == 0 ? "+01:00" : "Z";
      std::snprintf(stamp, sizeof(stamp), "2026-03-04T%02d:%02d:%02d.%09d%s", hour, minute, second,
                    static_cast<int>(pick(999999999)), zone);
      const std::string stream = pick(10) == 0 ? "stderr" : "stdout";
      if (pick(100) == 0) {
        log += "not an envelope " + piece + "\n";
      } else {
        const size_t cut = piece.size() > 8 && pick(30) == 0 ? 1 + pick(piece.size() - 1) : 0;
        AppendCriRecord(&log, stamp, stream, piece, cut);
      }
    }
  }
  return log;
}

// The read buffer's search vouches for a line only when it holds none of the
// triggers, in any case (the parser skips no line holding one).
TEST(BufferFirstTest, TriggersAreFoundInALineInAnyCaseAsANaiveSearchFindsThem) {
  const std::vector<std::string>& triggers = parse::QuietLineTriggers();
  std::shared_ptr<const rules::BufferMatcher> matcher = rules::BufferMatcher::ForAtoms(triggers);
  rules::BufferMatcher::Scratch scratch(*matcher);
  std::mt19937 rng(15);
  const std::string filler = "abc eRr xit Exi WARN in tr fi s/i /it] ( \" ";
  for (int round = 0; round < 2000; ++round) {
    std::string line;
    while (line.size() < rng() % 120) line += filler[rng() % filler.size()];
    if (rng() % 2 == 0) {
      std::string t = triggers[rng() % triggers.size()];
      for (char& c : t) {
        if (rng() % 2 == 0 && c >= 'a' && c <= 'z') c = static_cast<char>(c - 32);
      }
      if (rng() % 3 == 0) t.pop_back();  // a trigger cut short is none
      line.insert(rng() % (line.size() + 1), t);
    }
    std::string lowered = line;
    for (char& c : lowered) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    bool naive = false;
    for (const std::string& t : triggers) naive = naive || lowered.find(t) != std::string::npos;
    parse::BufferHints hints;
    hints.Reset(line, nullptr);
    ASSERT_TRUE(matcher->Search(line, hints.mutable_ends(), &scratch, hints.mutable_non_plain()));
    hints.Seal();
    EXPECT_EQ(hints.AtomFree(line), !naive) << line;
  }
}

TEST(BufferFirstTest, SkippingQuietLinesGivesTheSameIncidentsAndCountersAsParsingThem) {
  uint64_t lines = 0;
  const uint64_t skipped = SkippedOnSeededQuietLogs(QuietLog, 40, 4, &lines);
  // The skip path is what was tested: about a third of all lines took it
  // (a stream cap of 4 recycles processes, one prefix holds an atom, the
  // envelope is decided after 8 lines; without those, about half).
  EXPECT_GT(skipped * 4, lines);
}

// SGLang names a rank only in a record's header, and raw lines after it are
// that record's (source_parser.cc). A prefixed line after the header ends the
// record, also when it is skipped: a skipped line must leave the parser as
// parsing it would (SourceParser's SkipQuietLine), so a raw exception line
// after the skipped lines is not taken for the SGLang rank's.
TEST(BufferFirstTest, ARawErrorAfterSkippedLinesIsNotTheRankAnEarlierSglangHeaderNamed) {
  const std::string quiet =
      "\x1b[0;36m(Worker_TP0 pid=7)\x1b[0;0m INFO 03-04 10:00:00 [a.py:1] warming up\n";
  std::string log;
  for (int i = 0; i < 12; ++i) log += quiet;  // the envelope is decided after 8 lines
  log += "[2026-03-04 10:00:00 TP1] Load weight begin. avail mem=88.10 GB\n";
  for (int i = 0; i < 3; ++i) log += quiet;
  log +=
      "RuntimeError: Assertion error (/workspace/.deps/deepgemm-src/csrc/apis/layout.hpp:60): "
      "Unknown SF transformation\n";
  const PipelineRun oracle = RunPipeline(log, false, 4096, 1 << 20);
  const PipelineRun fast = RunPipeline(log, true, 4096, 1 << 20);
  ExpectSamePipelineRuns(oracle, fast, "sglang header, then skipped lines");
  EXPECT_GT(fast.skipped, 0u);    // the lines after the header took the skip path
  EXPECT_NE(oracle.changes, "");  // an incident, whose workers the test compares
}

TEST(BufferFirstTest, QuietLogsReadInPiecesGiveTheSameAsThePerLinePath) {
  const std::vector<std::string>& atoms = EmbeddedRules()->Atoms();
  const std::string path = ::testing::TempDir() + "quiet_" + std::to_string(getpid()) + ".log";
  for (uint32_t seed = 101; seed <= 110; ++seed) {
    std::mt19937 rng(seed);
    const bool cri = seed % 2 == 0;
    {
      std::ofstream out(path, std::ios::binary);
      out << QuietLog(rng, atoms, cri);
    }
    const size_t max_workers = seed % 3 == 0 ? 4 : 4096;
    const ReplayRun oracle = ReplayWith({path}, false, 1 << 20, max_workers);
    for (size_t chunk : {size_t{1} << 20, size_t{4096}, size_t{333}}) {
      ExpectSameRuns(oracle, ReplayWith({path}, true, chunk, max_workers),
                     "seed " + std::to_string(seed) + (cri ? " cri" : " plain") + " read " +
                         std::to_string(chunk) + " bytes at a time");
    }
    if (HasFailure()) break;
  }
  std::remove(path.c_str());
}

// A startup's config lines crowd the first 64 KiB of one read buffer with
// atoms. That buffer is parsed line by line (it vouches for nothing); the
// quiet buffers after it are searched and skipped as usual, not parsed for
// the next 9 MiB as when one dense buffer stopped the search.
TEST(BufferFirstTest, ABurstOfAtomsInOneBufferLeavesTheBuffersAfterItSkipped) {
  const std::vector<std::string>& atoms = EmbeddedRules()->Atoms();
  const std::string path = ::testing::TempDir() + "burst_" + std::to_string(getpid()) + ".log";
  constexpr size_t kBuffer = 1 << 20;
  std::string log;
  auto quiet_until = [&](size_t bytes) {
    for (int i = 0; log.size() < bytes; ++i) {
      log +=
          "\x1b[0;36m(APIServer pid=1)\x1b[0;0m INFO 03-04 10:15:" + std::to_string(10 + i % 40) +
          " [loggers.py:123] Engine 000: Avg prompt throughput: " + std::to_string(i % 97) +
          ".0 tokens/s, Running: 3 reqs\n";
    }
  };
  quiet_until(kBuffer + 100);
  for (size_t i = 0; log.size() < kBuffer + 100 + (64 << 10); ++i) {
    log += "(APIServer pid=1) INFO 03-04 10:15:50 [config.py:1] resolved " +
           atoms[i % atoms.size()] + " from the config\n";
  }
  quiet_until(12 * kBuffer);
  {
    std::ofstream out(path, std::ios::binary);
    out << log;
  }
  const ReplayRun oracle = ReplayWith({path}, false, kBuffer);
  const ReplayRun fast = ReplayWith({path}, true, kBuffer);
  ExpectSameRuns(oracle, fast, "a burst of atoms");
  EXPECT_EQ(oracle.stats.lines_skipped, 0u);
  // All but about the burst's buffer: the lines of 10 of the 12 MiB at least.
  EXPECT_GT(fast.stats.lines_skipped, fast.stats.lines * 10 / 12);
  std::remove(path.c_str());
}

}  // namespace
}  // namespace fingerprintd::testing
