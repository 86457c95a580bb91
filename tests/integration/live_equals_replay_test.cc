// Live equals replay (issue 29), END TO END IN REAL TIME: the real daemon
// tails a directory a few fixture sets are written into (RealTimeCases: the
// examples/ set in every way, one multi-worker golden set worker by worker),
// and its incidents must be the ones `fingerprintd replay` gives for the same
// files, ids included. Every set in every way is checked in virtual time, in
// process, by tests/source/live_equals_replay_test.cc; this test keeps the
// binary, its config, inotify and wall time honest. The sets, the ways they
// are written and the comparison are testing/live_fixtures.h.
//
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
#include "testing/live_fixtures.h"
#include "testing/run_harness.h"

namespace fingerprintd::testing {
namespace {

using namespace run_harness;    // NOLINT(build/namespaces): test-only helpers
using namespace live_fixtures;  // NOLINT(build/namespaces): test-only helpers
using Clock = std::chrono::steady_clock;

// The engine's last-words wait (RuleEngine::Options::last_words_after_us),
// plus two of the daemon's quiet advance ticks (2 s) and a margin for a
// loaded machine, stretched under the sanitizers (77 ASan daemons on 2 cores
// run their ticks late; 6 s was seen to be too little there): how long a
// daemon is watched after its last write.
constexpr auto kSettle = std::chrono::seconds(60 + 4 + 6 * kSanitizerSlowdown);
// The correlation window every daemon runs with (config `correlation.window`).
constexpr const char* kWindow = "60s";

// The sets the real daemon is run on (the rest: in virtual time only).
std::vector<LiveCase> RealTimeCases() {
  std::vector<LiveCase> out;
  for (LiveCase& c : LiveCases()) {
    if (c.set.name == "examples" || c.Name() == "vllm_tp4_unknown_sf_per_worker_per_worker") {
      out.push_back(std::move(c));
    }
  }
  return out;
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
        WriteAppends(ChunkAppends(Contents(), case_.set.name));
        break;
      case Mode::kPerWorker:
        WriteAppends(PerWorkerAppends(Contents()));
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

  // The set's appends (live_fixtures.h), with their pauses in real time.
  void WriteAppends(const std::vector<Append>& appends) {
    std::vector<std::ofstream> out;
    for (const std::string& file : case_.set.files) {
      fs::create_directories(Live(file).parent_path());
      out.emplace_back(Live(file), std::ios::binary | std::ios::app);
    }
    for (const Append& append : appends) {
      out[append.file] << append.bytes << std::flush;
      if (append.pause_ms > 0) {
        std::this_thread::sleep_for(std::chrono::milliseconds(append.pause_ms));
      }
    }
  }
  std::vector<std::string> Contents() const {
    std::vector<std::string> out;
    for (const std::string& file : case_.set.files) out.push_back(Content(file));
    return out;
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

INSTANTIATE_TEST_SUITE_P(EveryFixture, LiveEqualsReplayTest, ::testing::ValuesIn(RealTimeCases()),
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
