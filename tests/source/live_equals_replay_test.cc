// Live equals replay, in virtual time: every fixture set (testing/
// live_fixtures.h) written into a directory a FileSource tails, chunk by
// chunk or worker by worker at the pace the real daemon's test writes them,
// gives the incidents source::Replay gives for the same files, ids included.
// The source and the pipeline are wired as the daemon wires them (config::
// PipelineOptionsFor, a tick every 30 ms), on a clock the test steps: the
// 60 s a source's last words wait for (RuleEngine::Options::
// last_words_after_us) pass in no time. The real daemon's own test keeps a
// few sets in real time (tests/integration/live_equals_replay_test.cc).
#include <gtest/gtest.h>
#include <unistd.h>

#include <boost/asio/io_context.hpp>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "common/wall_clock.h"
#include "config/config.h"
#include "fingerprintd/pipeline.h"
#include "fingerprintd/source.h"
#include "sink/metrics.h"
#include "source/file_source.h"
#include "testing/live_fixtures.h"
#include "testing/run_harness.h"

namespace fingerprintd::testing {
namespace {

using namespace live_fixtures;  // NOLINT(build/namespaces): test-only helpers

int64_t g_now = 0;
int64_t VirtualNow() { return g_now; }
int g_sets_with_incidents = 0;

constexpr int64_t kTickUs = 30'000;        // the daemon's busy advance cadence
constexpr int64_t kSettleUs = 70'000'000;  // last words (60 s) and two quiet ticks
// correlation.window, as the daemon's test sets it: replay keeps the rules'
// own (120 s at most), live closes its windows within the settle time.
constexpr int64_t kWindowUs = 60'000'000;

std::vector<Json> ToJson(const std::vector<correlate::Incident>& incidents) {
  std::vector<Json> out;
  for (const auto& incident : incidents) {
    out.push_back(Json::parse(correlate::IncidentToJson(incident)));
  }
  return out;
}

// The set replayed in-process, as `fingerprintd replay` replays it.
std::vector<Json> Replayed(const FixtureSet& set) {
  source::ReplayOptions options;
  for (const std::string& file : set.files) options.paths.push_back((set.root / file).string());
  options.labels = set.labels;
  options.deployment_from = set.deployment_from;
  options.parser.current_year = CurrentYear();
  options.parser.now_us = WallNowMicros();
  correlate::LatestIncidents sink;
  NullPipelineEvents events;
  source::ReplayStats stats;
  EXPECT_TRUE(source::Replay(options, EmbeddedRules(), events, sink, &stats).ok());
  return ToJson(sink.Sorted());
}

class LiveInVirtualTime {
 public:
  LiveInVirtualTime(const LiveCase& c, const fs::path& dir)
      : case_(c), dir_(dir), metrics_("test") {
    fs::remove_all(dir_);
    fs::create_directories(dir_ / "logs");
    config::SourceConfig source;
    source.type = config::SourceType::kFile;
    source.paths = {(dir_ / "logs/**/*.log").string()};
    source.start_at = config::StartAt::kBeginning;
    source.labels = case_.set.labels;
    source.deployment_from = case_.set.deployment_from;
    config::TailerConfig tailer;
    tailer.inotify = false;
    tailer.poll_interval_us = kTickUs;  // every tick reads what was written
    tailer.rescan_interval_us = kTickUs;
    config::DaemonConfig daemon;
    daemon.correlation_window_us = kWindowUs;
    pipeline_ = std::make_unique<Pipeline>(EmbeddedRules(), config::PipelineOptionsFor(daemon),
                                           metrics_, sink_);
    source_ = std::make_unique<source::FileSource>(
        io_, source, tailer, *pipeline_, metrics_, restored_, [] {}, [] {}, &VirtualNow);
    EXPECT_TRUE(source_->Start().ok());
  }
  ~LiveInVirtualTime() {
    source_->Stop();
    fs::remove_all(dir_);
  }

  void Write() {
    std::vector<std::string> contents;
    for (const std::string& file : case_.set.files)
      contents.push_back(run_harness::ReadFile(case_.set.root / file));
    if (case_.mode == Mode::kWhole) {
      for (size_t i = 0; i < contents.size(); ++i) {
        const fs::path staged = dir_ / "staged" / case_.set.files[i];
        fs::create_directories(staged.parent_path());
        std::ofstream(staged, std::ios::binary) << contents[i];
      }
      for (const auto& entry : fs::directory_iterator(dir_ / "staged")) {
        fs::rename(entry.path(), dir_ / "logs" / entry.path().filename());
      }
      Tick();
    } else {
      const std::vector<Append> appends = case_.mode == Mode::kChunks
                                              ? ChunkAppends(contents, case_.set.name)
                                              : PerWorkerAppends(contents);
      int64_t next_tick = g_now + kTickUs;
      for (const Append& append : appends) {
        const fs::path live = dir_ / "logs" / case_.set.files[append.file];
        fs::create_directories(live.parent_path());
        std::ofstream(live, std::ios::binary | std::ios::app) << append.bytes;
        g_now += append.pause_ms * 1000;
        while (g_now >= next_tick) {
          Tick();
          next_tick += kTickUs;
        }
      }
    }
    // Nothing more is written: the ticks go on until last words are decided.
    for (const int64_t end = g_now + kSettleUs; g_now < end;) {
      g_now += kTickUs;
      Tick();
    }
  }

  // The live incidents, with their paths below logs/.
  std::vector<Json> Incidents() const { return ToJson(sink_.Sorted()); }
  std::string live_root() const { return (dir_ / "logs").string() + "/"; }

 private:
  void Tick() {
    source_->Rescan(g_now);
    source_->Tick(g_now);
    pipeline_->Advance(g_now);
  }

  LiveCase case_;
  fs::path dir_;
  boost::asio::io_context io_;
  sink::Metrics metrics_;
  correlate::LatestIncidents sink_;
  source::RestoredSources restored_;
  std::unique_ptr<Pipeline> pipeline_;
  std::unique_ptr<source::FileSource> source_;
};

class LiveEqualsReplayInVirtualTimeTest : public ::testing::TestWithParam<LiveCase> {};

TEST_P(LiveEqualsReplayInVirtualTimeTest, FileSourceGivesReplaysIncidents) {
  const LiveCase& c = GetParam();
  g_now = WallNowMicros();
  const std::vector<Json> replayed = Replayed(c.set);
  std::vector<Json> live;
  std::string live_root;
  {
    LiveInVirtualTime run(
        c, fs::temp_directory_path() /
               ("fingerprintd-live-virtual-" + std::to_string(::getpid()) + "-" + c.Name()));
    run.Write();
    live = run.Incidents();
    live_root = run.live_root();
  }
  std::map<std::string, Json> want = LastRevisions(replayed);
  std::map<std::string, Json> got = LastRevisions(live);
  RecordProperty("incidents", static_cast<int>(want.size()));
  if (!want.empty()) ++g_sets_with_incidents;
  Json want_keys = Json::array(), got_keys = Json::array();
  for (const auto& [id, j] : want) want_keys.push_back(Key(j));
  for (const auto& [id, j] : got) got_keys.push_back(Key(j));
  EXPECT_EQ(got_keys.dump(1), want_keys.dump(1));
  const std::string set_root = c.set.root.string() + "/";
  for (const auto& [id, j] : want) {
    auto it = got.find(id);
    if (it == got.end()) continue;  // reported above
    EXPECT_EQ(Comparable(it->second, live_root, &j).dump(1),
              Comparable(j, set_root, nullptr).dump(1))
        << "incident " << id;
  }
}

// Not a comparison of two empty lists: most sets fail in some way.
class LiveEqualsReplayInVirtualTimeEnvironment : public ::testing::Environment {
 public:
  void TearDown() override {
    const ::testing::TestSuite* suite = nullptr;
    for (int i = 0; i < ::testing::UnitTest::GetInstance()->total_test_suite_count(); ++i) {
      const auto* s = ::testing::UnitTest::GetInstance()->GetTestSuite(i);
      if (std::string(s->name()) == "EveryFixture/LiveEqualsReplayInVirtualTimeTest") suite = s;
    }
    if (suite != nullptr && suite->test_to_run_count() > 20) {
      EXPECT_GT(g_sets_with_incidents, suite->test_to_run_count() / 2);
    }
  }
};
const auto* const kEnvironment =
    ::testing::AddGlobalTestEnvironment(new LiveEqualsReplayInVirtualTimeEnvironment);

INSTANTIATE_TEST_SUITE_P(EveryFixture, LiveEqualsReplayInVirtualTimeTest,
                         ::testing::ValuesIn(LiveCases()),
                         [](const ::testing::TestParamInfo<LiveCase>& info) {
                           return info.param.Name();
                         });

}  // namespace
}  // namespace fingerprintd::testing
