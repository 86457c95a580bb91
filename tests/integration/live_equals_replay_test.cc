// Live equals replay (issue 29): every fixture under examples/ and
// tests/golden/, written into a directory the real daemon tails, gives the
// incidents `fingerprintd replay` gives for the same files, ids included.
//
// A fixture set is what one replay reads: a golden case (testing/
// golden_cases.h: a file, or a directory of one run's files, with the labels
// or deployment_from that name its deployments) or examples/ (one deployment
// per subdirectory). The sets are listed from disk when the test starts; a
// golden .log no case covers is a set of its own. Each set is written in
// three ways, each into a fresh daemon:
//   whole       the set's files written complete outside the tailed
//               directory, then renamed into it (a file or a subdirectory
//               appears at once, complete);
//   chunks      each file cut at random byte offsets (mid-line, mid-UTF-8),
//               the pieces of all files interleaved at the pace of their
//               sizes, a few milliseconds apart;
//   per_worker  (sets of several files) the files written line by line
//               together, in the order of the lines' own times, as the
//               workers of one run write them.
// The daemon's last revision of each incident must equal replay's: the same
// ids, rules, classes, workers, evidence lines and facts. Paths are compared
// below the set's root, and times only where the log gave one (live dates an
// undated line by its reading; the incident id never uses such a time).
//
// Pace: live decides a source's last words (an exception with nothing after
// it) once its event time is RuleEngine::Options::last_words_after_us (60 s)
// past it, and a quiet source's event time moves with the wall clock; no
// config key shortens it, and SIGTERM does not decide it (daemon/run.cc:
// Shutdown advances once and saves the checkpoint; only stdin's end calls
// Finish). So every daemon is watched for that long after its last write,
// then stopped; the rules' correlation windows (120 s, the longest kept by
// replay) are cut to kWindow by the config, below that wait. All daemons of
// the suite run at once: SetUpTestSuite starts the ones the filter selects,
// writes, waits once, stops them; each test then compares its own.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <random>
#include <regex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "testing/cli_runner.h"
#include "testing/golden_cases.h"
#include "testing/run_harness.h"

namespace fingerprintd::testing {
namespace {

using namespace run_harness;  // NOLINT(build/namespaces): test-only helpers
using Clock = std::chrono::steady_clock;

// The engine's last-words wait (RuleEngine::Options::last_words_after_us),
// plus two of the daemon's quiet advance ticks (2 s) and a margin for a
// loaded machine, stretched under the sanitizers (77 ASan daemons on 2 cores
// run their ticks late; 6 s was seen to be too little there): how long a
// daemon is watched after its last write.
constexpr auto kSettle = std::chrono::seconds(60 + 4 + 6 * kSanitizerSlowdown);
// The correlation window every daemon runs with (config `correlation.window`).
constexpr const char* kWindow = "60s";

enum class Mode { kWhole, kChunks, kPerWorker };

std::string ModeName(Mode mode) {
  switch (mode) {
    case Mode::kWhole:
      return "whole";
    case Mode::kChunks:
      return "chunks";
    case Mode::kPerWorker:
      return "per_worker";
  }
  return "?";
}

// What one replay reads, and how its deployments are named.
struct FixtureSet {
  std::string name;                // [A-Za-z0-9_], for test names and directories
  fs::path root;                   // the files' paths below it are kept live
  std::vector<std::string> files;  // relative to root, sorted
  std::map<std::string, std::string> labels;
  std::string deployment_from;
};

std::string Identifier(const std::string& text) {
  std::string out = text;
  for (char& ch : out) {
    if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
  }
  return out;
}

// Regular files below `dir` (relative to `root`), sorted.
std::vector<std::string> FilesBelow(const fs::path& root, const fs::path& dir) {
  std::vector<std::string> out;
  for (const auto& entry : fs::recursive_directory_iterator(dir)) {
    if (entry.is_regular_file()) out.push_back(fs::relative(entry.path(), root).string());
  }
  std::sort(out.begin(), out.end());
  return out;
}

// The golden cases and examples/ as found on disk now.
std::vector<FixtureSet> FixtureSets() {
  std::vector<FixtureSet> sets;
  const fs::path golden = fs::path(SourceDir()) / "tests" / "golden";
  std::set<std::string> covered;
  for (const GoldenCase& c : GoldenCases()) {
    if (!fs::exists(golden / c.path)) continue;  // golden_counts_test.cc reports it
    FixtureSet set{Identifier(c.path), golden, {}, c.labels, c.deployment_from};
    set.files = fs::is_directory(golden / c.path) ? FilesBelow(golden, golden / c.path)
                                                  : std::vector<std::string>{c.path};
    if (set.labels.count("deployment") == 0 && set.deployment_from.empty()) {
      set.labels["deployment"] = set.name;
    }
    covered.insert(set.files.begin(), set.files.end());
    sets.push_back(std::move(set));
  }
  for (const std::string& file : FilesBelow(golden, golden)) {
    if (file.rfind("tools/", 0) == 0 || fs::path(file).extension() != ".log") continue;
    if (covered.count(file) != 0) continue;
    sets.push_back({Identifier(file), golden, {file}, {{"deployment", Identifier(file)}}, ""});
  }
  // examples/: one deployment per subdirectory (README, `make demo`).
  const fs::path examples = fs::path(SourceDir()) / "examples";
  FixtureSet demo{"examples", examples, {}, {}, R"(/([^/]+)/[^/]+$)"};
  for (const auto& entry : fs::directory_iterator(examples)) {
    if (!entry.is_directory()) continue;
    for (std::string& file : FilesBelow(examples, entry.path())) demo.files.push_back(file);
  }
  std::sort(demo.files.begin(), demo.files.end());
  if (!demo.files.empty()) sets.push_back(std::move(demo));
  return sets;
}

struct LiveCase {
  FixtureSet set;
  Mode mode;
  std::string Name() const { return set.name + "_" + ModeName(mode); }
};

// gtest prints the parameter as its name, not its bytes.
void PrintTo(const LiveCase& c, std::ostream* out) { *out << c.Name(); }

std::vector<LiveCase> LiveCases() {
  std::vector<LiveCase> out;
  for (const FixtureSet& set : FixtureSets()) {
    out.push_back({set, Mode::kWhole});
    out.push_back({set, Mode::kChunks});
    if (set.files.size() > 1) out.push_back({set, Mode::kPerWorker});
  }
  return out;
}

// ---------------------------------------------------------------------------
// Comparing incidents.

// The last revision of each incident id, in order of first appearance.
std::map<std::string, Json> LastRevisions(const std::vector<Json>& lines) {
  std::map<std::string, Json> out;
  for (const Json& j : lines) out[j["incident_id"].get<std::string>()] = j;
  return out;
}

std::vector<Json> JsonLines(const std::string& text) {
  std::vector<Json> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    if (!line.empty() && line[0] == '{') out.push_back(Json::parse(line, nullptr, false));
  }
  return out;
}

// What a user compares: everything but the revision count, with source paths
// below the set's root and times only where replay has one.
Json Comparable(Json j, const std::string& root, const Json* replay) {
  j.erase("revision");
  auto strip = [&](Json& source) {
    std::string s = source.get<std::string>();
    if (s.rfind(root, 0) == 0) source = s.substr(root.size());
  };
  for (Json& e : j["evidence"]) strip(e["source"]);
  for (Json& stage : j["stages"]) {
    for (Json& e : stage["evidence"]) strip(e["source"]);
  }
  if (j.contains("consequences")) {
    for (Json& c : j["consequences"]) {
      if (c.contains("evidence")) strip(c["evidence"]["source"]);
    }
  }
  for (const char* time : {"first_seen", "last_seen"}) {
    if (replay != nullptr && (*replay)[time].is_null()) j[time] = nullptr;
  }
  return j;
}

// The fields the issue names: the id and what the incident says failed.
Json Key(const Json& j) {
  return {{"incident_id", j["incident_id"]},
          {"rule", j["rule"]},
          {"class", j["class"]},
          {"confidence", j["confidence"]},
          {"deployment", j["deployment"]},
          {"expected", j["workers"]["expected"]},
          {"affected", j["workers"]["affected"]},
          {"ranks", j["workers"]["ranks"]},
          {"identical", j["identical"]}};
}

// ---------------------------------------------------------------------------
// One daemon, one set, one mode.

class LiveRun {
 public:
  LiveRun(LiveCase c, fs::path dir) : case_(std::move(c)), dir_(std::move(dir)) {}

  const LiveCase& live_case() const { return case_; }
  const fs::path& dir() const { return dir_; }

  // Replays the set with the binary, as a user would.
  void Replay() {
    std::string args = "replay --quiet --format jsonl";
    for (const auto& [k, v] : case_.set.labels) args += " --label " + Quoted(k + "=" + v);
    if (!case_.set.deployment_from.empty()) {
      args += " --deployment-from " + Quoted(case_.set.deployment_from);
    }
    for (const std::string& file : case_.set.files) args += " " + Quoted(case_.set.root / file);
    CommandResult r = Fingerprintd(args, Quoted(dir_ / "replay.jsonl"));
    replay_exit_ = r.exit_code;
    replay_err_ = r.out;
    replay_ = JsonLines(ReadFile(dir_ / "replay.jsonl"));
  }

  void Start() {
    fs::create_directories(dir_ / "logs");
    Json labels = case_.set.labels;
    std::ofstream(dir_ / "config.yaml")
        << "sources:\n  - type: file\n    paths: [" << Json((dir_ / "logs/**/*.log").string())
        << "]\n    start_at: beginning\n"
        << (labels.empty() ? "" : "    labels: " + labels.dump() + "\n")
        << (case_.set.deployment_from.empty()
                ? ""
                : "    deployment_from: " + Json(case_.set.deployment_from).dump() + "\n")
        << "http: {listen: '127.0.0.1:0'}\n"
        << "incidents: {path: " << Json(Incidents().string()) << "}\n"
        << "correlation: {window: " << kWindow << "}\n";
    daemon_ = std::make_unique<DaemonProcess>(
        std::vector<std::string>{"--config", (dir_ / "config.yaml").string()}, dir_ / "daemon.err");
  }
  bool Running() const { return Stderr().find("running") != std::string::npos; }

  // Writes the set into logs/ the case's way; returns when the last byte is written.
  void Write() {
    switch (case_.mode) {
      case Mode::kWhole:
        WriteWhole();
        break;
      case Mode::kChunks:
        WriteChunks();
        break;
      case Mode::kPerWorker:
        WritePerWorker();
        break;
    }
    last_write_ = Clock::now();
  }
  Clock::time_point last_write() const { return last_write_; }

  void Stop() {
    stop_exit_ = daemon_->Kill(SIGTERM);
    daemon_.reset();
    live_ = IncidentLines(Incidents());
  }

  // The comparison; failures name what differs.
  void Check() const {
    const std::string set_root = case_.set.root.string() + "/";
    const std::string live_root = (dir_ / "logs").string() + "/";
    EXPECT_TRUE(replay_exit_ == 0 || replay_exit_ == 1) << replay_err_;
    EXPECT_EQ(stop_exit_, 0) << Stderr();
    std::map<std::string, Json> replay = LastRevisions(replay_);
    std::map<std::string, Json> live = LastRevisions(live_);
    Json replay_keys = Json::array(), live_keys = Json::array();
    for (const auto& [id, j] : replay) replay_keys.push_back(Key(j));
    for (const auto& [id, j] : live) live_keys.push_back(Key(j));
    EXPECT_EQ(live_keys.dump(1), replay_keys.dump(1)) << Context();
    for (const auto& [id, want] : replay) {
      auto got = live.find(id);
      if (got == live.end()) continue;  // reported above
      EXPECT_EQ(Comparable(got->second, live_root, &want).dump(1),
                Comparable(want, set_root, nullptr).dump(1))
          << "incident " << id << " differs beyond its id, rule and workers\n"
          << Context();
    }
  }

 private:
  fs::path Incidents() const { return dir_ / "incidents.jsonl"; }
  std::string Stderr() const { return ReadFile(dir_ / "daemon.err"); }
  std::string Context() const {
    return "set " + case_.set.name + ", mode " + ModeName(case_.mode) + ", in " + dir_.string() +
           "\nreplay:\n" + ReadFile(dir_ / "replay.jsonl") + "live:\n" + ReadFile(Incidents());
  }
  // The complete lines of the daemon's incident log.
  static std::vector<Json> IncidentLines(const fs::path& path) {
    std::string text = ReadFile(path);
    text.resize(text.rfind('\n') == std::string::npos ? 0 : text.rfind('\n') + 1);
    return JsonLines(text);
  }
  std::string Content(const std::string& file) const { return ReadFile(case_.set.root / file); }
  fs::path Live(const std::string& file) const { return dir_ / "logs" / file; }

  // Complete outside logs/, then each top-level entry renamed in.
  void WriteWhole() {
    std::set<std::string> tops;
    for (const std::string& file : case_.set.files) {
      fs::path staged = dir_ / "staged" / file;
      fs::create_directories(staged.parent_path());
      std::ofstream(staged, std::ios::binary) << Content(file);
      tops.insert(fs::path(file).begin()->string());
    }
    for (const std::string& top : tops) fs::rename(dir_ / "staged" / top, dir_ / "logs" / top);
  }

  // Every file cut at random offsets; the next piece comes from a file drawn
  // in proportion to what it has left, so all files progress together.
  void WriteChunks() {
    std::mt19937 random(static_cast<uint32_t>(std::hash<std::string>{}(case_.set.name)));
    std::vector<std::string> contents;
    std::vector<size_t> done(case_.set.files.size(), 0);
    for (const std::string& file : case_.set.files) {
      contents.push_back(Content(file));
      fs::create_directories(Live(file).parent_path());
    }
    for (;;) {
      std::vector<double> left;
      for (size_t i = 0; i < contents.size(); ++i) left.push_back(contents[i].size() - done[i]);
      if (std::all_of(left.begin(), left.end(), [](double n) { return n == 0; })) break;
      size_t i = std::discrete_distribution<size_t>(left.begin(), left.end())(random);
      size_t n = std::min<size_t>(std::uniform_int_distribution<size_t>(1, 3000)(random),
                                  contents[i].size() - done[i]);
      std::ofstream(Live(case_.set.files[i]), std::ios::binary | std::ios::app)
          << contents[i].substr(done[i], n);
      done[i] += n;
      std::this_thread::sleep_for(
          std::chrono::milliseconds(std::uniform_int_distribution<int>(1, 15)(random)));
    }
  }

  // A sortable time of a line ("MM-DD HH:MM:SS.frac" from a vLLM header, an
  // RFC 3339 time, an SGLang header), "" when it has none.
  static std::string TimeOf(const std::string& line) {
    static const std::regex kTime(R"((\d\d-\d\d)[ T](\d\d:\d\d:\d\d)(?:[.,](\d+))?)");
    std::smatch m;
    if (!std::regex_search(line, m, kTime)) return "";
    std::string frac = m[3].str();
    frac.resize(9, '0');
    return m[1].str() + " " + m[2].str() + "." + frac;
  }

  // All files line by line, the earliest line (by its own time, else the time
  // of its file's line before it) first; ties go to the first file.
  void WritePerWorker() {
    struct File {
      std::vector<std::string> lines;  // each with its '\n' (the last maybe without)
      std::vector<std::string> times;
      size_t next = 0;
      std::ofstream out;
    };
    std::vector<File> files(case_.set.files.size());
    for (size_t i = 0; i < files.size(); ++i) {
      std::string text = Content(case_.set.files[i]);
      std::string time;
      for (size_t at = 0; at < text.size();) {
        size_t end = text.find('\n', at);
        end = end == std::string::npos ? text.size() : end + 1;
        files[i].lines.push_back(text.substr(at, end - at));
        if (std::string t = TimeOf(files[i].lines.back()); !t.empty()) time = t;
        files[i].times.push_back(time);
        at = end;
      }
      fs::create_directories(Live(case_.set.files[i]).parent_path());
      files[i].out.open(Live(case_.set.files[i]), std::ios::binary | std::ios::app);
    }
    for (size_t written = 0;; ++written) {
      File* first = nullptr;
      for (File& f : files) {
        if (f.next == f.lines.size()) continue;
        if (first == nullptr || f.times[f.next] < first->times[first->next]) first = &f;
      }
      if (first == nullptr) break;
      first->out << first->lines[first->next++] << std::flush;
      if (written % 8 == 7) std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
  }

  LiveCase case_;
  fs::path dir_;
  std::unique_ptr<DaemonProcess> daemon_;
  int replay_exit_ = -1;
  std::string replay_err_;
  std::vector<Json> replay_;
  std::vector<Json> live_;
  int stop_exit_ = -1;
  Clock::time_point last_write_;
};

// ---------------------------------------------------------------------------

class LiveEqualsReplayTest : public ::testing::TestWithParam<LiveCase> {
 protected:
  // Starts a daemon per selected case, writes them all at once, waits the
  // settle time once for all, and stops them.
  static void SetUpTestSuite() {
    root_ = fs::temp_directory_path() / ("fingerprintd-live-" + std::to_string(::getpid()));
    fs::remove_all(root_);
    std::set<std::string> selected;
    const ::testing::TestSuite* suite = ::testing::UnitTest::GetInstance()->current_test_suite();
    for (int i = 0; suite != nullptr && i < suite->total_test_count(); ++i) {
      const ::testing::TestInfo* info = suite->GetTestInfo(i);
      std::string name = info->name();
      if (info->should_run()) selected.insert(name.substr(name.find('/') + 1));
    }
    runs_ = new std::map<std::string, std::unique_ptr<LiveRun>>();
    const auto start = Clock::now();
    for (LiveCase& c : LiveCases()) {
      if (selected.count(c.Name()) == 0) continue;
      std::string name = c.Name();
      auto run = std::make_unique<LiveRun>(std::move(c), root_ / name);
      run->Start();
      (*runs_)[name] = std::move(run);
    }
    for (auto& [name, run] : *runs_) {
      // 77 daemons compile the pack at once: under the sanitizers, on 2
      // cores, one took more than 30 s to start.
      if (!WaitFor([&run = run] { return run->Running(); },
                   std::chrono::seconds(30) * kSanitizerSlowdown)) {
        ADD_FAILURE() << name << ": the daemon did not start";
      }
    }
    std::vector<std::thread> threads;
    for (auto& [name, run] : *runs_) threads.emplace_back([&run = run] { run->Write(); });
    for (std::thread& t : threads) t.join();
    const auto written = Clock::now();
    // Replays while the daemons settle, two at a time.
    std::vector<LiveRun*> pending;
    for (auto& [name, run] : *runs_) pending.push_back(run.get());
    std::atomic<size_t> next{0};
    threads.clear();
    for (int i = 0; i < 2; ++i) {
      threads.emplace_back([&] {
        for (size_t at; (at = next++) < pending.size();) pending[at]->Replay();
      });
    }
    for (std::thread& t : threads) t.join();
    // Waiting for nothing more to happen: the condition is the time that has
    // passed since each daemon's last line (kSettle), not an event.
    for (auto& [name, run] : *runs_) std::this_thread::sleep_until(run->last_write() + kSettle);
    for (auto& [name, run] : *runs_) run->Stop();
    auto seconds = [](Clock::duration d) {
      return std::chrono::duration_cast<std::chrono::milliseconds>(d).count() / 1000.0;
    };
    std::printf(
        "LiveEqualsReplay: %zu daemons, started and written in %.1f s, stopped after %.1f s\n",
        runs_->size(), seconds(written - start), seconds(Clock::now() - start));
  }
  static void TearDownTestSuite() {
    delete runs_;
    runs_ = nullptr;
    if (!failed_) fs::remove_all(root_);
  }
  void TearDown() override { failed_ = failed_ || HasFailure(); }

  static fs::path root_;
  static std::map<std::string, std::unique_ptr<LiveRun>>* runs_;
  static bool failed_;
};

fs::path LiveEqualsReplayTest::root_;
std::map<std::string, std::unique_ptr<LiveRun>>* LiveEqualsReplayTest::runs_ = nullptr;
bool LiveEqualsReplayTest::failed_ = false;

TEST_P(LiveEqualsReplayTest, DaemonGivesReplaysIncidents) {
  auto run = runs_->find(GetParam().Name());
  ASSERT_NE(run, runs_->end());
  run->second->Check();
}

INSTANTIATE_TEST_SUITE_P(EveryFixture, LiveEqualsReplayTest, ::testing::ValuesIn(LiveCases()),
                         [](const ::testing::TestParamInfo<LiveCase>& info) {
                           return info.param.Name();
                         });

// Every fixture file is in some set (a new golden case or example is picked
// up without editing this test).
TEST(LiveEqualsReplayFixturesTest, EveryFixtureFileIsWrittenLive) {
  std::set<std::string> listed;
  for (const FixtureSet& set : FixtureSets()) {
    for (const std::string& file : set.files) listed.insert((set.root / file).string());
  }
  for (const auto& entry :
       fs::recursive_directory_iterator(fs::path(SourceDir()) / "tests" / "golden")) {
    const std::string path = entry.path().string();
    if (!entry.is_regular_file() || entry.path().extension() != ".log") continue;
    if (path.find("/tests/golden/tools/") != std::string::npos) continue;
    EXPECT_EQ(listed.count(path), 1u) << path;
  }
  for (const auto& entry : fs::directory_iterator(fs::path(SourceDir()) / "examples")) {
    if (!entry.is_directory()) continue;
    for (const auto& file : fs::recursive_directory_iterator(entry.path())) {
      if (!file.is_regular_file()) continue;
      EXPECT_EQ(listed.count(file.path().string()), 1u) << file.path();
    }
  }
}

}  // namespace
}  // namespace fingerprintd::testing
