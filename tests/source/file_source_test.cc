// FileSource (source/file_source.h) as a component, in virtual time: built
// from its config section, a Pipeline, an io_context and a clock the test
// steps. Rotation, a restart from a checkpoint, a partial line, and a busy
// file's inotify wake-ups batched on the daemon's tick, without the binary
// and without waiting for wall time.
#include "source/file_source.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <filesystem>
#include <fstream>
#include <string>
#include <utility>
#include <vector>

#include "fingerprintd/pipeline.h"
#include "sink/metrics.h"
#include "testing/replay_harness.h"
#include "testing/run_harness.h"
#include "testing/scratch_path.h"

namespace fingerprintd::source {
namespace {

namespace fs = std::filesystem;
using Lines = std::vector<std::pair<std::string, uint64_t>>;

constexpr int64_t kStart = 1'796'000'000'000'000;  // 2026-11-29, microseconds
int64_t g_now = kStart;
int64_t VirtualNow() { return g_now; }

// One generation of the daemon's file source: its pipeline (every line it is
// handed recorded), its metrics, the source itself.
class Generation {
 public:
  Generation(const config::SourceConfig& config, const config::TailerConfig& tailer,
             const RestoredSources& restored = {}, Pipeline::Options options = {})
      : metrics_("test"), restored_(restored) {
    options.partial_line_timeout_us = tailer.partial_line_timeout_us;
    options.line_observer = [this](const SourceSpec& spec, std::string_view line, uint64_t offset) {
      lines_.emplace_back(std::string(line), offset);
      names_.push_back(spec.name);
    };
    pipeline_ = std::make_unique<Pipeline>(testing::EmbeddedRules(), options, metrics_, sink_);
    source_ = std::make_unique<FileSource>(
        io_, config, tailer, *pipeline_, metrics_, restored_, [] {}, [] {}, &VirtualNow);
  }
  ~Generation() { source_->Stop(); }

  FileSource& source() { return *source_; }
  Pipeline& pipeline() { return *pipeline_; }
  boost::asio::io_context& io() { return io_; }
  const Lines& lines() const { return lines_; }
  const std::vector<std::string>& names() const { return names_; }
  std::vector<correlate::Incident> incidents() const { return sink_.Sorted(); }
  // A tick of the daemon's timer: the source, then the pipeline.
  void Tick() {
    source_->Tick(g_now);
    pipeline_->Advance(g_now);
  }

 private:
  boost::asio::io_context io_;
  // As the daemon's timers do: the io_context never runs out of work (a
  // poll() that finds none stops it).
  boost::asio::executor_work_guard<boost::asio::io_context::executor_type> work_{
      io_.get_executor()};
  sink::Metrics metrics_;
  correlate::LatestIncidents sink_;
  const RestoredSources restored_;  // FileSource keeps a reference to it
  std::unique_ptr<Pipeline> pipeline_;
  std::unique_ptr<FileSource> source_;
  Lines lines_;
  std::vector<std::string> names_;
};

class FileSourceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    g_now = kStart;
    dir_ = testing::ScratchPath("file-source");
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    config_.type = config::SourceType::kFile;
    config_.paths = {(dir_ / "*.log").string()};
    config_.start_at = config::StartAt::kBeginning;
    config_.labels = {{"deployment", "d"}};
    tailer_.inotify = false;  // polled on Tick, at poll_interval
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::string Path(const std::string& name) const { return (dir_ / name).string(); }
  void Append(const std::string& name, const std::string& bytes) {
    std::ofstream(Path(name), std::ios::binary | std::ios::app) << bytes;
  }
  // The clock moves on by a poll interval.
  void Step(int64_t us = 1'000'000) { g_now += us; }

  fs::path dir_;
  config::SourceConfig config_;
  config::TailerConfig tailer_;
};

TEST_F(FileSourceTest, ARotatedFileIsReadToItsEndAndItsSuccessorGoesOnTheSameStream) {
  Append("0.log", "a1\nunfinished");
  Generation g(config_, tailer_);
  ASSERT_TRUE(g.source().Start().ok());
  EXPECT_EQ(g.lines(), (Lines{{"a1", 0}}));
  fs::rename(Path("0.log"), Path("0.log.1"));  // the kubelet's rotation
  Append("0.log", "b1\n");
  Step();
  g.Tick();
  // The old file's last line ends with it; the new file starts where it ended.
  EXPECT_EQ(g.lines(), (Lines{{"a1", 0}, {"unfinished", 3}, {"b1", 13}}));
  EXPECT_THAT(g.names(), ::testing::Each(Path("0.log")));
}

// A pod being deleted: the worker writes its last words and the daemon gets
// its SIGTERM at the same moment. The shutdown's last read (ReadRemaining)
// sees them, though no poll or inotify wake-up was due yet.
TEST_F(FileSourceTest, TheLastLinesWrittenBeforeAShutdownAreReadByItsLastRead) {
  Append("0.log", "a1\n");
  Generation g(config_, tailer_);
  ASSERT_TRUE(g.source().Start().ok());
  g.Tick();
  Append("0.log", "last words\n");
  g.Tick();  // the poll interval has not passed: not read yet
  ASSERT_EQ(g.lines(), (Lines{{"a1", 0}}));
  g.source().ReadRemaining(g_now);
  EXPECT_EQ(g.lines(), (Lines{{"a1", 0}, {"last words", 3}}));
}

// A daemon far behind (a restart, start_at beginning on large logs) reads its
// backlog slice after slice in turns of the loop, not one 8 MiB slice per
// tick: no Tick and no clock step here, only the loop run once.
TEST_F(FileSourceTest, ABacklogOverTheReadBudgetIsReadOnWithoutWaitingForTicks) {
  const std::string line(999, 'x');
  std::string backlog;
  for (int i = 0; i < 10'000; ++i) backlog += line + "\n";  // 10 MB: over the 8 MiB budget
  Append("0.log", backlog);
  Generation g(config_, tailer_);
  ASSERT_TRUE(g.source().Start().ok());
  ASSERT_LT(g.lines().size(), 10'000u);  // the first slice
  g.io().poll();
  EXPECT_EQ(g.lines().size(), 10'000u);
  EXPECT_EQ(g.lines().back().second, 9'999u * 1'000u);
}

TEST_F(FileSourceTest, ARestartResumesAtTheCheckpointsSafePosition) {
  Append("0.log", "INFO 03-04 10:00:00 [a.py:1] l1\nINFO 03-04 10:00:01 [a.py:1] l2\n");
  RestoredSources restored;
  {
    Generation first(config_, tailer_);
    ASSERT_TRUE(first.source().Start().ok());
    first.Tick();
    ASSERT_EQ(first.lines().size(), 2u);
    std::vector<SourceCheckpoint> checkpoints;
    first.source().AppendCheckpoint(first.pipeline(), &checkpoints);
    ASSERT_EQ(checkpoints.size(), 1u);
    EXPECT_EQ(checkpoints[0].safe.offset, 64u);
    EXPECT_EQ(checkpoints[0].read, 64u);
    restored[checkpoints[0].name] = checkpoints[0];
  }
  Append("0.log", "INFO 03-04 10:00:02 [a.py:1] l3\n");  // written while it was down
  Step();
  Generation second(config_, tailer_, restored);
  ASSERT_TRUE(second.source().Start().ok());
  EXPECT_EQ(second.lines(), (Lines{{"INFO 03-04 10:00:02 [a.py:1] l3", 64}}));
}

TEST_F(FileSourceTest, APartialLastLineWaitsForItsNewlineThenForTheTimeout) {
  tailer_.partial_line_timeout_us = 5'000'000;
  Append("0.log", "whole\npart");
  Generation g(config_, tailer_);
  ASSERT_TRUE(g.source().Start().ok());
  g.Tick();
  Step();
  Append("0.log", "ial\nnever ends");
  g.Tick();
  EXPECT_EQ(g.lines(), (Lines{{"whole", 0}, {"partial", 6}}));
  // Nothing more is written: the checkpoint keeps the line's start ...
  std::vector<SourceCheckpoint> checkpoints;
  g.source().AppendCheckpoint(g.pipeline(), &checkpoints);
  EXPECT_EQ(checkpoints.at(0).safe.offset, 14u);
  // ... and once it waited the timeout, it is a line.
  for (int i = 0; i < 6; ++i) {
    Step();
    g.Tick();
  }
  EXPECT_EQ(g.lines(), (Lines{{"whole", 0}, {"partial", 6}, {"never ends", 14}}));
}

// With inotify, a write after a quiet spell is read at once; a busy file's
// next wake-up within 25 ms is left for the daemon's next tick.
TEST_F(FileSourceTest, ABusyFilesWakeUpsAreReadOnTheNextTick) {
  tailer_.inotify = true;
  Append("0.log", "x0\n");
  Generation g(config_, tailer_);
  ASSERT_TRUE(g.source().Start().ok());
  EXPECT_EQ(g.lines(), (Lines{{"x0", 0}}));
  Step();
  Append("0.log", "x1\n");
  g.io().poll();  // the inotify wake-up
  EXPECT_EQ(g.lines().size(), 2u);
  Step(10'000);
  Append("0.log", "x2\n");
  g.io().poll();  // 10 ms after the last read: parked
  EXPECT_EQ(g.lines().size(), 2u);
  Step(20'000);
  g.Tick();  // the daemon's 30 ms tick reads it
  EXPECT_EQ(g.lines(), (Lines{{"x0", 0}, {"x1", 3}, {"x2", 6}}));
  Step(10'000);
  Append("0.log", "x3\n");
  EXPECT_EQ(g.io().poll(), 1u);  // re-armed by the tick; 10 ms after its read: parked again
  EXPECT_EQ(g.lines().size(), 3u);
  Step(30'000);
  g.Tick();
  EXPECT_EQ(g.lines().size(), 4u);
}

// The incident lifetime on the daemon's wiring (PipelineOptionsFor), in
// virtual time: a TP=2 failure stays open through a minute of silence,
// thirty 2 s correlation windows, and closes as recovered when the same
// deployment starts healthy. The real daemon's test
// (tests/integration/incident_lifetime_run_test.cc) keeps three windows of
// silence in real time, with /metrics.
TEST_F(FileSourceTest, AFailureStaysOpenPastManyWindowsAndClosesWhenTheServerStartsHealthy) {
  config::DaemonConfig daemon;  // the daemon's options, with `correlation: {window: 2s}`
  daemon.correlation_window_us = 2'000'000;
  std::string failure;
  for (const std::string& line : testing::run_harness::GoldenLines("vllm_tp2_unknown_sf.log")) {
    failure += line + "\n";
  }
  Append("vllm.log", failure);
  Generation g(config_, tailer_, {}, config::PipelineOptionsFor(daemon));
  ASSERT_TRUE(g.source().Start().ok());
  auto ticks = [&](int n) {  // the daemon's busy cadence: a tick every 30 ms
    for (int i = 0; i < n; ++i) {
      Step(30'000);
      g.Tick();
    }
  };
  ticks(2000);  // a minute of silence
  std::vector<correlate::Incident> incidents = g.incidents();
  ASSERT_EQ(incidents.size(), 1u);
  EXPECT_EQ(incidents[0].affected, 2);
  EXPECT_EQ(incidents[0].closed, correlate::CloseReason::kNone);
  Append("vllm.log",
         "\x1b[0;36m(APIServer pid=1)\x1b[0;0m INFO:     Application startup complete.\n");
  // The ready line is decided once nothing else of its stream follows it
  // (about 5 s: 173 ticks here), like any symptom.
  ticks(200);
  EXPECT_EQ(g.incidents().at(0).closed, correlate::CloseReason::kRecovered);
}

}  // namespace
}  // namespace fingerprintd::source
