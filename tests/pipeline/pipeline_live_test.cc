// Live latency on the pipeline's injected wall clock (no timed test: the wall
// figures are bench/sidecar.sh's). One file per worker, the DaemonSet shape:
// the last worker's failure is held until the other worker's file, quiet
// since its own failure, stops holding the deployment.
#include <gtest/gtest.h>

#include <optional>

#include "fingerprintd/pipeline.h"
#include "testing/fixture_streams.h"
#include "testing/pipeline_lines.h"
#include "testing/replay_harness.h"

namespace fingerprintd {
namespace {

constexpr int64_t kWall = 1'796'000'000'000'000;  // 2026-11-29, microseconds
constexpr int64_t kTick = 30'000;                 // the daemon's busy Advance cadence

// vllm_tp2_unknown_sf.log written one file per worker: rank 1's lines to
// file 1, all the rest (rank 0, engine core, API server) to file 0.
struct PerWorker {
  std::vector<std::string> lines;  // the golden's order
  std::vector<int> file;           // of each line
  size_t last = 0;                 // rank 1's exception line: its failure's last word
};

PerWorker ReadPerWorker() {
  PerWorker out;
  out.lines = testing::ReadFixtureStreams(testing::Golden("vllm_tp2_unknown_sf.log")).at(0).lines;
  for (size_t i = 0; i < out.lines.size(); ++i) {
    const std::string& line = out.lines[i];
    const bool rank1 =
        line.find("Worker_TP1 ") != std::string::npos || line.rfind("[rank1]", 0) == 0;
    out.file.push_back(rank1 ? 1 : 0);
    if (rank1 && line.find("Unknown SF transformation") != std::string::npos) out.last = i;
  }
  return out;
}

class TwoFiles {
 public:
  TwoFiles(bool read_as_written, Pipeline::Options options = {})
      : pipeline_(testing::EmbeddedRules(), options, events_, sink_) {
    for (int k = 0; k < 2; ++k) {
      SourceSpec spec;
      spec.name = "pods/vllm-" + std::to_string(k) + "/0.log";
      spec.deployment = "d";
      spec.parser.current_year = 2026;
      spec.read_as_written = read_as_written;
      ids_[k] = pipeline_.AddSource(spec);
    }
  }
  void Feed(const PerWorker& log, size_t from, size_t to) {
    for (size_t i = from; i < to; ++i) {
      const Pipeline::SourceId id = ids_[log.file[i]];
      testing::FeedLine(pipeline_, id, log.lines[i], pipeline_.NextPosition(id).offset);
    }
  }
  // The 2/2 incident, once written.
  std::optional<correlate::Incident> Complete() {
    for (const auto& incident : sink_.Sorted()) {
      if (incident.affected == 2) return incident;
    }
    return std::nullopt;
  }
  Pipeline& pipeline() { return pipeline_; }

 private:
  NullPipelineEvents events_;
  correlate::LatestIncidents sink_;
  Pipeline pipeline_;
  Pipeline::SourceId ids_[2] = {0, 0};
};

// Live: both files written up to rank 1's exception line and read, one busy
// tick, then that line alone, then ticks every 30 ms. Returns the wall time
// from that line to the 2/2 incident (-1: none within 5 s), and its id.
int64_t LastLineToIncident(TwoFiles& live, const PerWorker& log, std::string* id) {
  live.pipeline().Advance(kWall);
  live.Feed(log, 0, log.last);
  live.pipeline().Advance(kWall + kTick);
  const int64_t written = kWall + kTick + 1'000;  // just after that tick: the worst case
  live.Feed(log, log.last, log.last + 1);
  for (int64_t t = kWall + 2 * kTick; t <= written + 5'000'000; t += kTick) {
    live.pipeline().Advance(t);
    if (auto incident = live.Complete()) {
      *id = incident->incident_id;
      return t - written;
    }
  }
  return -1;
}

// Issue 29: with one file per worker the 2/2 incident came 1,036 ms (p50)
// after rank 1's last line, against 37 ms with both ranks in one file: the
// two ranks' hits share a second, so each waited for the other's file to be
// quiet for the 1 s idle threshold. A tailed file has nothing unread once it
// was quiet for a tick, so it holds only for caught_up_after_us.
TEST(LiveLatencyTest, TheLastWorkersFailureIsNotHeldASecondForTheOtherWorkersQuietFile) {
  const PerWorker log = ReadPerWorker();
  ASSERT_GT(log.last, 0u);

  TwoFiles replay(/*read_as_written=*/true);
  replay.Feed(log, 0, log.lines.size());
  replay.pipeline().Finish();
  const auto expected = replay.Complete();
  ASSERT_TRUE(expected.has_value());

  const Pipeline::Options defaults;
  TwoFiles tailed(/*read_as_written=*/true);
  std::string id;
  const int64_t latency = LastLineToIncident(tailed, log, &id);
  ASSERT_GE(latency, 0) << "no 2/2 incident";
  EXPECT_LE(latency, defaults.caught_up_after_us + 3 * kTick);
  EXPECT_EQ(id, expected->incident_id);

  // A socket stream's shipper may batch: such a source keeps the 1 s threshold.
  TwoFiles shipped(/*read_as_written=*/false);
  const int64_t shipped_latency = LastLineToIncident(shipped, log, &id);
  ASSERT_GE(shipped_latency, 0) << "no 2/2 incident";
  EXPECT_GT(shipped_latency, defaults.idle_source_after_us);
  EXPECT_EQ(id, expected->incident_id);
}

}  // namespace
}  // namespace fingerprintd
