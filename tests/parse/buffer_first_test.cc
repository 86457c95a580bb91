// Buffer-first matching (issue 15) gives exactly what the per-line path gives:
// every incident change byte for byte and every counter a metrics user sees,
// on every golden fixture and example, at any read size, and on seeded random
// logs built to hit its edges (atoms split by ANSI codes, CRI partials and
// read-buffer edges, repeated raw prefixes followed by text that extends the
// chain, control and non-ASCII bytes after a prefix). Quiet lines skipped
// whole (src/pipeline/quiet_lines.h) are checked the same way, on logs made of
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
#include "parse/atom_hints.h"
#include "parse/quiet_line.h"
#include "rules/buffer_matcher.h"
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

ReplayRun ReplayWith(const std::vector<std::string>& paths, bool buffer_first, size_t chunk_bytes,
                     size_t max_workers = 4096) {
  source::ReplayOptions options;
  options.parser.max_workers = max_workers;
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

// Every counter the per-line path (`oracle`) and buffer-first replay count alike.
void ExpectSameCounters(const CountingEvents& oracle, const CountingEvents& fast,
                        const std::string& what) {
  EXPECT_EQ(oracle.lines_read, fast.lines_read) << what;
  EXPECT_EQ(oracle.bytes_read, fast.bytes_read) << what;
  EXPECT_EQ(oracle.dropped, fast.dropped) << what;
  EXPECT_EQ(oracle.guessed, fast.guessed) << what;
  EXPECT_EQ(oracle.tracebacks, fast.tracebacks) << what;
  EXPECT_EQ(oracle.rule_matches, fast.rule_matches) << what;
  EXPECT_EQ(oracle.incidents_opened, fast.incidents_opened) << what;
  EXPECT_EQ(oracle.incidents_updated, fast.incidents_updated) << what;
  EXPECT_EQ(oracle.evicted, fast.evicted) << what;
}

void ExpectSameRuns(const ReplayRun& oracle, const ReplayRun& fast, const std::string& what) {
  EXPECT_EQ(oracle.changes, fast.changes) << what;
  ExpectSameCounters(oracle.events, fast.events, what);
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
// One CRI record of `text`: a `P` of its first `cut` bytes and an `F` of the
// rest, or a single `F` when cut is 0.
void AppendCriRecord(std::string* log, const std::string& stamp, const std::string& stream,
                     const std::string& text, size_t cut) {
  const std::string head = stamp + " " + stream + " ";
  if (cut > 0) *log += head + "P " + text.substr(0, cut) + "\n";
  *log += head + "F " + text.substr(cut) + "\n";
}

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

TEST(BufferFirstTest, TriggersAreFoundInALineInAnyCaseAsANaiveSearchFindsThem) {
  const std::vector<std::string>& triggers = parse::QuietLineTriggers();
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
    EXPECT_EQ(parse::HoldsQuietTrigger(line), naive) << line;
  }
}

struct PipelineRun {
  std::string changes;
  CountingEvents events;
  uint64_t skipped = 0;
};

// `text` through one Pipeline as replay feeds it, the whole text one read
// buffer: searched for the atoms and quiet-line triggers (buffer-first) or not.
PipelineRun RunPipeline(const std::string& text, bool buffer_first, size_t max_workers,
                        size_t max_line_bytes,
                        int64_t mtime_us = 1'772'700'000'000'000 /* 2026-03-05 */) {
  std::shared_ptr<const rules::RuleSet> rule_set = EmbeddedRules();
  std::shared_ptr<const rules::BufferMatcher> matcher =
      rules::BufferMatcher::ForAtoms(parse::WithQuietLineTriggers(rule_set->Atoms()));
  rules::BufferMatcher::Scratch scratch(*matcher);
  parse::AtomHints hints;
  hints.set_covers_quiet_triggers(true);
  hints.Reset(text, rule_set.get());
  EXPECT_TRUE(matcher->Search(text, hints.mutable_ends(), &scratch, hints.mutable_non_plain()));
  hints.Seal();
  ChangeLog sink;
  PipelineRun run;
  Pipeline pipeline(rule_set, Pipeline::Options(), run.events, sink);
  SourceSpec spec;
  spec.name = "quiet.log";
  spec.deployment = "quiet";
  spec.parser.current_year = 2026;
  spec.parser.mtime_us = mtime_us;  // headers' year from the mtime
  spec.parser.max_workers = max_workers;
  spec.parser.max_line_bytes = max_line_bytes;
  if (buffer_first) spec.parser.atom_hints = &hints;
  const Pipeline::SourceId id = pipeline.AddSource(spec);
  uint64_t offset = 0;
  size_t lines = 0;
  for (size_t start = 0; start < text.size();) {
    size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    pipeline.Feed(id, std::string_view(text).substr(start, end - start), offset);
    offset += end - start + 1;
    start = end + 1;
    if (++lines % 500 == 0) pipeline.Advance(0);
  }
  pipeline.Finish();
  run.skipped = pipeline.quiet_lines_skipped();
  run.changes = sink.text;
  return run;
}

// The per-line run (nothing skipped) and the buffer-first one agree on every
// incident change and counter.
void ExpectSamePipelineRuns(const PipelineRun& oracle, const PipelineRun& fast,
                            const std::string& what) {
  EXPECT_EQ(oracle.changes, fast.changes) << what;
  ExpectSameCounters(oracle.events, fast.events, what);
  EXPECT_EQ(oracle.skipped, 0u) << what;
}

// `line` and its '\n' as a plain log has it, or in a CRI envelope `stamp`.
void AppendLine(std::string* log, bool cri, const std::string& stamp, const std::string& stream,
                const std::string& line) {
  if (cri) {
    AppendCriRecord(log, stamp, stream, line, 0);
  } else {
    *log += line + "\n";
  }
}

// `log` through both paths: the same incidents (at least one) and counters.
// Returns the buffer-first run.
PipelineRun ExpectSameIncidentWithSkipping(const std::string& log, const std::string& what) {
  const PipelineRun oracle = RunPipeline(log, false, 4096, 1 << 20);
  PipelineRun fast = RunPipeline(log, true, 4096, 1 << 20);
  ExpectSamePipelineRuns(oracle, fast, what);
  EXPECT_NE(oracle.changes, "") << what;
  return fast;
}

// For seeds 1..`seeds`, the quiet log make(rng, atoms, cri) through the
// per-line path and buffer-first: the same incidents and counters. Every
// fourth seed a stream cap of `small_cap` recycles processes, every third a
// line cap cuts some lines; CRI on even seeds. Returns the lines skipped and
// adds all lines read to *lines.
template <typename MakeLog>
uint64_t SkippedOnSeededQuietLogs(MakeLog&& make, uint32_t seeds, size_t small_cap,
                                  uint64_t* lines) {
  const std::vector<std::string>& atoms = EmbeddedRules()->Atoms();
  uint64_t skipped = 0;
  for (uint32_t seed = 1; seed <= seeds; ++seed) {
    std::mt19937 rng(seed);
    const bool cri = seed % 2 == 0;
    const std::string log = make(rng, atoms, cri);
    const size_t max_workers = seed % 4 == 1 ? small_cap : 4096;
    const size_t max_line_bytes = seed % 3 == 0 ? 300 : 1 << 20;
    const PipelineRun oracle = RunPipeline(log, false, max_workers, max_line_bytes);
    const PipelineRun fast = RunPipeline(log, true, max_workers, max_line_bytes);
    ExpectSamePipelineRuns(oracle, fast,
                           "seed " + std::to_string(seed) + (cri ? " cri" : " plain"));
    skipped += fast.skipped;
    *lines += oracle.events.lines_read;
    if (::testing::Test::HasFailure()) break;
  }
  return skipped;
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
// record, also when it is skipped: the catch-up before the next parsed line
// must leave the parser as parsing the skipped line would (FollowLine), so a
// raw exception line after the skipped lines is not taken for the SGLang rank's.
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
// named, also when that line and the ones before it were skipped: the
// catch-up re-feeds the last skipped line, so the raw exception line after
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

// A new second of an SGLang rank's lines re-times its template (QuietLines'
// Retime) instead of parsing the line: after the first lines, every batch
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

// NCCL_DEBUG=INFO writes hundreds of unprefixed `host:pid:tid [dev] NCCL INFO`
// lines at start-up, without a time. They have a bare shape (parse/quiet_line.h)
// and are skipped like the prefixed INFO lines around them; a raw traceback of
// the unprefixed stream after them still gets the parser's time and worker.
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
// the parser (pipeline/quiet_lines.h, Retime): their year must be the
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
