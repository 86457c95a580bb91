// The property live input relies on: the same per-source streams give the
// same incidents whatever order and pace their lines arrive in. Live input
// interleaves a deployment's files as they are written; replay reads them one
// after another; a restart resumes in the middle. Every schedule below must
// give byte-identical JSONL.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <random>
#include <regex>
#include <sstream>

#include "fingerprintd/pipeline.h"
#include "testing/bounds_fixtures.h"
#include "testing/fixture_streams.h"
#include "testing/pipeline_lines.h"
#include "testing/replay_harness.h"

namespace fingerprintd {
namespace {

namespace fs = std::filesystem;

using SourceLines = testing::FixtureStream;

std::vector<SourceLines> ReadSources(const std::string& path) {
  return testing::ReadFixtureStreams(path);
}

enum class Schedule { kOneAfterTheOther, kReverseFiles, kRoundRobin, kRandom };

// Feeds every source's lines in order, interleaving sources per `schedule`,
// with Advance(0) at random points, and returns the final incidents as JSONL.
std::string RunSchedule(const std::vector<SourceLines>& sources, Schedule schedule, uint32_t seed) {
  correlate::LatestIncidents sink;
  NullPipelineEvents events;
  Pipeline pipeline(testing::EmbeddedRules(), Pipeline::Options(), events, sink);
  std::vector<Pipeline::SourceId> ids;
  for (const SourceLines& s : sources) {
    SourceSpec spec;
    spec.name = s.name;
    spec.deployment = "d";
    spec.parser.current_year = 2026;
    ids.push_back(pipeline.AddSource(spec));
  }
  std::vector<size_t> next(sources.size(), 0);
  std::mt19937 rng(seed);
  auto feed = [&](size_t i) {
    const std::string& line = sources[i].lines[next[i]++];
    testing::FeedLine(pipeline, ids[i], line, pipeline.NextPosition(ids[i]).offset);
    if (next[i] == sources[i].lines.size()) pipeline.EndSource(ids[i]);
    if (rng() % 7 == 0) pipeline.Advance(0);
  };
  std::vector<size_t> order(sources.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  if (schedule == Schedule::kReverseFiles) std::reverse(order.begin(), order.end());
  if (schedule == Schedule::kOneAfterTheOther || schedule == Schedule::kReverseFiles) {
    for (size_t i : order) {
      while (next[i] < sources[i].lines.size()) feed(i);
    }
  } else {
    bool more = true;
    while (more) {
      more = false;
      for (size_t i : order) {
        size_t burst = schedule == Schedule::kRoundRobin ? 1 : rng() % 5;
        for (size_t b = 0; b < burst && next[i] < sources[i].lines.size(); ++b) feed(i);
        if (next[i] < sources[i].lines.size()) more = true;
      }
      if (schedule == Schedule::kRandom) std::shuffle(order.begin(), order.end(), rng);
    }
  }
  pipeline.Finish();
  std::string out;
  for (const auto& incident : sink.Sorted()) out += correlate::IncidentToJson(incident) + "\n";
  return out;
}

class InterleavingTest : public ::testing::TestWithParam<std::string> {};

TEST_P(InterleavingTest, AnyInterleavingOfTheSameStreamsGivesTheSameIncidents) {
  const auto sources = ReadSources(testing::Golden(GetParam()));
  const std::string expected = RunSchedule(sources, Schedule::kOneAfterTheOther, 1);
  ASSERT_FALSE(expected.empty()) << "fixture gives no incident: the property would be vacuous";
  EXPECT_EQ(RunSchedule(sources, Schedule::kReverseFiles, 2), expected);
  EXPECT_EQ(RunSchedule(sources, Schedule::kRoundRobin, 3), expected);
  for (uint32_t seed = 10; seed < 30; ++seed) {
    ASSERT_EQ(RunSchedule(sources, Schedule::kRandom, seed), expected) << "seed " << seed;
  }
}

INSTANTIATE_TEST_SUITE_P(Fixtures, InterleavingTest,
                         ::testing::Values("vllm_tp4_unknown_sf_per_worker",
                                           "two_deployments_interleaved", "vllm_tp2_unknown_sf.log",
                                           "vllm_tp4_unknown_sf.log", "vllm_tp2_cuda_oom.log",
                                           "vllm_tp2_nccl_timeout.log", "vllm_tp4_oom_cascade.log",
                                           "vllm_tp2_unknown_recipe_warmup.log",
                                           "vllm_tp4_one_rank_keyerror.log",
                                           "sglang_tp2_unknown_sf.log", "docker", "cri"),
                         [](const auto& info) {
                           std::string name = info.param;
                           for (char& c : name) {
                             if (!isalnum(static_cast<unsigned char>(c))) c = '_';
                           }
                           return name;
                         });

}  // namespace
}  // namespace fingerprintd

namespace fingerprintd {
namespace {

// `restarts` start-ups of the TP=4 fixture, each with new pids and 10 minutes
// after the previous one (more than two correlation windows apart).
std::vector<std::string> CrashLoop(int restarts) {
  std::vector<std::string> base;
  std::ifstream in(testing::Golden("vllm_tp4_unknown_sf.log"));
  for (std::string line; std::getline(in, line);) base.push_back(line);
  static const std::regex kPid(R"(pid=(\d+))");
  static const std::regex kTime(R"((\d\d)-(\d\d) (\d\d):(\d\d):(\d\d))");
  std::vector<std::string> out;
  for (int r = 0; r < restarts; ++r) {
    for (const std::string& line : base) {
      std::string s;
      std::smatch m;
      std::string rest = line;
      while (std::regex_search(rest, m, kPid)) {
        s += m.prefix().str() + "pid=" + std::to_string(std::stoi(m[1]) + 1000 * (r + 1));
        rest = m.suffix().str();
      }
      s += rest;
      if (std::regex_search(s, m, kTime)) {
        int64_t t = ((std::stoi(m[2]) * 24 + std::stoi(m[3])) * 60 + std::stoi(m[4])) * 60 +
                    std::stoi(m[5]) + 600LL * r;
        char buf[32];
        std::snprintf(buf, sizeof(buf), "%s-%02d %02d:%02d:%02d", m[1].str().c_str(),
                      static_cast<int>(t / 86400), static_cast<int>(t / 3600 % 24),
                      static_cast<int>(t / 60 % 60), static_cast<int>(t % 60));
        s = m.prefix().str() + buf + m.suffix().str();
      }
      out.push_back(std::move(s));
    }
  }
  return out;
}

TEST(PipelineBoundsTest, CrashLoopWithNewPidsEveryRestartIsOneIncidentWithAnOccurrencePerRestart) {
  constexpr int kRestarts = 60;
  correlate::LatestIncidents sink;
  NullPipelineEvents events;
  Pipeline pipeline(testing::EmbeddedRules(), Pipeline::Options(), events, sink);
  SourceSpec spec;
  spec.name = "crashloop.log";
  spec.deployment = "llama";
  spec.parser.current_year = 2026;
  spec.parser.max_workers = 64;  // ~6 processes per start-up: the table fills after ~10
  const auto id = pipeline.AddSource(spec);
  for (const std::string& line : CrashLoop(kRestarts)) {
    testing::FeedLine(pipeline, id, line, pipeline.NextPosition(id).offset);
  }
  pipeline.Finish();
  const auto incidents = sink.Sorted();
  ASSERT_EQ(incidents.size(), 1u);
  const auto& incident = incidents.front();
  EXPECT_EQ(incident.rule->id, "deepgemm-unknown-sf-transformation");
  EXPECT_EQ(incident.occurrences, kRestarts);
  EXPECT_EQ(incident.closed, correlate::CloseReason::kNone);
  // The latest restart's workers: every rank, though the pids are new each time.
  EXPECT_EQ(incident.affected, 4);
  EXPECT_EQ(incident.expected, 4);
}

}  // namespace
}  // namespace fingerprintd

namespace fingerprintd {
namespace {

// One worker printing the DeepGEMM traceback `repeats` times within one second.
void FeedRepeatedTraceback(Pipeline& pipeline, Pipeline::SourceId id, int repeats) {
  const std::vector<std::string> lines = testing::DeepGemmTraceback(
      "(Worker_TP0 pid=8) ERROR 03-04 10:15:19 [multiproc_executor.py:743] ");
  for (int i = 0; i < repeats; ++i) {
    for (const std::string& line : lines) {
      testing::FeedLine(pipeline, id, line, pipeline.NextPosition(id).offset);
    }
  }
}

// The state kept for an incident does not grow with the hits folded into it.
size_t StateSizeAfter(int repeats, correlate::Incident* final_incident) {
  correlate::LatestIncidents sink;
  NullPipelineEvents events;
  Pipeline pipeline(testing::EmbeddedRules(), Pipeline::Options(), events, sink);
  SourceSpec spec;
  spec.name = "w.log";
  spec.deployment = "d";
  spec.parser.current_year = 2026;
  const auto id = pipeline.AddSource(spec);
  FeedRepeatedTraceback(pipeline, id, repeats);
  const size_t size = pipeline.SaveState().size();
  pipeline.Finish();
  const auto incidents = sink.Sorted();
  EXPECT_EQ(incidents.size(), 1u);
  if (!incidents.empty()) *final_incident = incidents.front();
  return size;
}

TEST(PipelineBoundsTest, AWorkerRepeatingOneTracebackKeepsABoundedSampleOfItsHits) {
  correlate::Incident small, large;
  const size_t small_state = StateSizeAfter(200, &small);
  const size_t large_state = StateSizeAfter(4000, &large);
  EXPECT_EQ(small.hits, 200u);
  EXPECT_EQ(large.hits, 4000u);
  EXPECT_EQ(large.affected, 1);
  EXPECT_LE(large.evidence.size(), 24u);
  // Twenty times the hits, the same state (give or take the counters' digits).
  EXPECT_LT(large_state, small_state + 64) << small_state << " -> " << large_state;
}

}  // namespace
}  // namespace fingerprintd

namespace fingerprintd {
namespace {

// A generated deployment written one file per process (as `vllm ... 2>&1 |
// tee worker_N.log` setups do): a 6-restart crash loop of the TP=4 fixture,
// split by process prefix into per-worker files and one for the rest.
std::vector<SourceLines> GeneratedPerWorkerFiles() {
  std::vector<SourceLines> sources(5);
  for (size_t k = 0; k < 4; ++k) sources[k].name = "gen/tp" + std::to_string(k) + ".log";
  sources[4].name = "gen/main.log";
  for (const std::string& line : CrashLoop(6)) {
    size_t target = 4;
    for (size_t k = 0; k < 4; ++k) {
      if (line.find("Worker_TP" + std::to_string(k) + " ") != std::string::npos) target = k;
    }
    sources[target].lines.push_back(line);
  }
  return sources;
}

TEST(GeneratedDeploymentTest, AnyInterleavingOfPerWorkerFilesGivesTheSameIncidents) {
  const auto sources = GeneratedPerWorkerFiles();
  const std::string expected = RunSchedule(sources, Schedule::kOneAfterTheOther, 1);
  // The 6 restarts are one incident, open, with 6 occurrences.
  EXPECT_EQ(std::count(expected.begin(), expected.end(), '\n'), 1) << expected;
  EXPECT_NE(expected.find("\"occurrences\":6"), std::string::npos) << expected;
  EXPECT_EQ(RunSchedule(sources, Schedule::kReverseFiles, 2), expected);
  EXPECT_EQ(RunSchedule(sources, Schedule::kRoundRobin, 3), expected);
  for (uint32_t seed = 40; seed < 50; ++seed) {
    ASSERT_EQ(RunSchedule(sources, Schedule::kRandom, seed), expected) << "seed " << seed;
  }
}

}  // namespace
}  // namespace fingerprintd
