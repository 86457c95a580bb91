// `fingerprintd replay --shard I/N` (DESIGN.md §8): an archive too large for
// one machine is replayed as N independent shards (a Kubernetes Indexed Job,
// deploy/k8s/replay-job/), each keeping the deployments whose name hashes to
// it; concatenated, the shards' JSONL is the unsharded replay's, line for line.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "testing/cli_runner.h"
#include "testing/run_harness.h"

namespace fingerprintd::testing {
namespace {

using ::testing::HasSubstr;

// Four deployments: the two interleaved golden files and the two examples,
// each named by its directory and file (`examples/qwen3-fp8-rtx5090/worker`).
std::string Inputs() {
  return "--deployment-from '([^/]+/[^/]+)\\.log$' " + Golden("two_deployments_interleaved") + " " +
         SourceDir() + "/examples/qwen3-fp8-rtx5090 " + SourceDir() +
         "/examples/moonlight-16b-h100-oom";
}

std::vector<std::string> Lines(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

std::string DeploymentOf(const std::string& jsonl_line) {
  const std::string key = "\"deployment\":\"";
  size_t at = jsonl_line.find(key);
  if (at == std::string::npos) return "";
  at += key.size();
  return jsonl_line.substr(at, jsonl_line.find('"', at) - at);
}

class ReplayShardTest : public CliTest {
 protected:
  std::string Stdout() const { return (dir_ / "stdout.jsonl").string(); }
};

TEST_F(ReplayShardTest, ConcatenatedShardsEqualTheUnshardedReplayAfterSorting) {
  CommandResult whole = Fingerprintd("replay --quiet --format jsonl " + Inputs(), Stdout());
  ASSERT_EQ(whole.exit_code, 0) << whole.out;
  std::vector<std::string> expected = Lines(run_harness::ReadFile(Stdout()));
  std::sort(expected.begin(), expected.end());
  std::set<std::string> deployments;
  for (const std::string& line : expected) deployments.insert(DeploymentOf(line));
  ASSERT_GE(deployments.size(), 3u) << whole.out;  // else sharding proves nothing

  for (int count : {1, 2, 3, 4}) {
    std::vector<std::string> united;
    int non_empty = 0;
    std::set<std::string> seen;
    for (int index = 0; index < count; ++index) {
      const std::string shard = std::to_string(index) + "/" + std::to_string(count);
      CommandResult part =
          Fingerprintd("replay --quiet --format jsonl --shard " + shard + " " + Inputs(), Stdout());
      ASSERT_EQ(part.exit_code, 0) << shard << ": " << part.out;
      std::vector<std::string> lines = Lines(run_harness::ReadFile(Stdout()));
      non_empty += lines.empty() ? 0 : 1;
      std::set<std::string> mine;
      for (const std::string& line : lines) mine.insert(DeploymentOf(line));
      for (const std::string& deployment : mine) {
        EXPECT_TRUE(seen.insert(deployment).second)
            << deployment << " is in two shards of " << count;
      }
      united.insert(united.end(), lines.begin(), lines.end());
    }
    std::sort(united.begin(), united.end());
    EXPECT_EQ(united, expected) << "shards of " << count;
    if (count > 1) {
      EXPECT_GT(non_empty, 1) << "every deployment hashed to one of " << count;
    }
  }
}

TEST_F(ReplayShardTest, ShardSummaryNamesTheShardAndCountsOnlyItsSources) {
  CommandResult whole = Fingerprintd("replay --format jsonl " + Inputs(), "/dev/null");
  ASSERT_EQ(whole.exit_code, 0) << whole.out;
  EXPECT_THAT(whole.out, HasSubstr("fingerprintd replay: 4 source(s)"));
  size_t sources = 0;
  for (int index = 0; index < 2; ++index) {
    const std::string shard = std::to_string(index) + "/2";
    CommandResult part =
        Fingerprintd("replay --format jsonl --shard " + shard + " " + Inputs(), "/dev/null");
    ASSERT_EQ(part.exit_code, 0) << part.out;
    EXPECT_THAT(part.out, HasSubstr("; shard " + shard));
    size_t at = part.out.find("fingerprintd replay: ");
    ASSERT_NE(at, std::string::npos) << part.out;
    sources += std::stoul(part.out.substr(at + 21));
  }
  EXPECT_EQ(sources, 4u);
}

TEST_F(ReplayShardTest, ShardOutsideItsCountOrMalformedExitsTwoNamingTheFlag) {
  for (const char* bad : {"4/4", "1", "a/2", "0/0", "-1/2", "1/", "''"}) {
    CommandResult run = Fingerprintd(std::string("replay --shard ") + bad + " " + Inputs());
    EXPECT_EQ(run.exit_code, 2) << bad << ": " << run.out;
    EXPECT_THAT(run.out, HasSubstr("--shard")) << bad;
  }
}

}  // namespace
}  // namespace fingerprintd::testing
