// Buffer-first matching (issue 15) gives exactly what the per-line path gives:
// every incident change byte for byte and every counter a metrics user sees,
// on every golden fixture and example, at any read size, and on seeded random
// logs built to hit its edges (atoms split by ANSI codes, CRI partials and
// read-buffer edges, repeated raw prefixes followed by text that extends the
// chain, control and non-ASCII bytes after a prefix).
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "fingerprintd/correlate.h"
#include "fingerprintd/source.h"
#include "testing/counting_events.h"
#include "testing/replay_harness.h"

namespace fingerprintd::testing {
namespace {

namespace fs = std::filesystem;

// Every change an incident sink sees, in order.
class ChangeLog final : public correlate::IncidentSink {
 public:
  void OnIncident(correlate::IncidentChange change, const correlate::Incident& incident) override {
    text +=
        std::to_string(static_cast<int>(change)) + " " + correlate::IncidentToJson(incident) + "\n";
  }
  std::string text;
};

struct ReplayRun {
  std::string changes;
  CountingEvents events;
  source::ReplayStats stats;
};

ReplayRun ReplayWith(const std::vector<std::string>& paths, bool buffer_first, size_t chunk_bytes) {
  source::ReplayOptions options;
  options.paths = paths;
  options.parser.current_year = 2026;
  options.read_chunk_bytes = chunk_bytes;
  options.buffer_first = buffer_first;
  ChangeLog sink;
  ReplayRun run;
  Status s = source::Replay(options, EmbeddedRules(), run.events, sink, &run.stats);
  EXPECT_TRUE(s.ok()) << s.message();
  run.changes = sink.text;
  return run;
}

void ExpectSameRuns(const ReplayRun& oracle, const ReplayRun& fast, const std::string& what) {
  EXPECT_EQ(oracle.changes, fast.changes) << what;
  EXPECT_EQ(oracle.events.lines_read, fast.events.lines_read) << what;
  EXPECT_EQ(oracle.events.bytes_read, fast.events.bytes_read) << what;
  EXPECT_EQ(oracle.events.dropped, fast.events.dropped) << what;
  EXPECT_EQ(oracle.events.guessed, fast.events.guessed) << what;
  EXPECT_EQ(oracle.events.tracebacks, fast.events.tracebacks) << what;
  EXPECT_EQ(oracle.events.rule_matches, fast.events.rule_matches) << what;
  EXPECT_EQ(oracle.events.incidents_opened, fast.events.incidents_opened) << what;
  EXPECT_EQ(oracle.events.incidents_updated, fast.events.incidents_updated) << what;
  EXPECT_EQ(oracle.events.evicted, fast.events.evicted) << what;
  EXPECT_EQ(oracle.stats.lines, fast.stats.lines) << what;
  EXPECT_EQ(oracle.stats.bytes, fast.stats.bytes) << what;
}

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
    if (line.size() > 8 && pick(4) == 0) {
      // A CRI partial: the line cut anywhere, an atom possibly split between pieces.
      const size_t cut = 1 + pick(line.size() - 1);
      log += std::string(stamp) + " " + stream + " P " + line.substr(0, cut) + "\n";
      log += std::string(stamp) + " " + stream + " F " + line.substr(cut) + "\n";
    } else {
      log += std::string(stamp) + " " + stream + " F " + line + "\n";
    }
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

}  // namespace
}  // namespace fingerprintd::testing
