// One failure, whatever shape torch prints it in: the NCCL watchdog's
// timeout as c10's log line, as a C++ failure record on raw stderr
// (`terminate called ...` / `what():` / frame dump) and as a Python re-raise
// in the workers is one `distributed` incident naming the ranks that timed
// out. And an operator's stop: what the shutdown provokes pages nothing.
// The logs are written here in the shapes torch and vLLM print, with
// invented values.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

#include "testing/replay_harness.h"

namespace fingerprintd::testing {
namespace {

using ::testing::ElementsAre;

constexpr const char* kStart =
    "INFO 06-11 09:00:00 [api_server.py:1800] vLLM API server version 0.10.2\n"
    "INFO 06-11 09:00:01 [core.py:70] tensor_parallel_size=2, pipeline_parallel_size=1\n";

std::string Timeout(int rank, int seq) {
  return "[Rank " + std::to_string(rank) +
         "] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=" + std::to_string(seq) +
         ", OpType=ALLREDUCE, NumelIn=2048, NumelOut=2048, Timeout(ms)=600000) ran for 6000" +
         std::to_string(20 + rank) + " milliseconds before timing out.";
}

void ExpectOneDistributedIncidentOnRanks(const std::vector<correlate::Incident>& incidents,
                                         std::vector<int32_t> ranks) {
  ASSERT_THAT(RuleIds(incidents), ElementsAre("nccl-watchdog-timeout"));
  EXPECT_EQ(incidents[0].rule->rule_class, "distributed");
  EXPECT_EQ(incidents[0].ranks, ranks);
  EXPECT_EQ(incidents[0].affected, static_cast<int>(ranks.size()));
}

TEST(TorchShapesTest, TheWatchdogTimeoutAsC10LinesIsOneIncidentOfBothRanks) {
  std::string log = kStart;
  for (int rank : {1, 0}) {
    log += "[rank" + std::to_string(rank) + "]:[E611 09:20:00.1" + std::to_string(rank) +
           "0000 40" + std::to_string(rank) +
           " ProcessGroupNCCL.cpp:632] [PG ID 0 PG GUID 0 Rank " + std::to_string(rank) + "] " +
           Timeout(rank, 311).substr(9) + "\n";
  }
  ExpectOneDistributedIncidentOnRanks(ReplayString(log), {0, 1});
}

// The C++ record is printed on the process's raw stderr, outside any prefix:
// it belongs to the rank its own `what():` text names, so rank 1's record is
// not rank 0's nor a third worker.
TEST(TorchShapesTest, TheWatchdogTimeoutAsTerminateWhatAndFrameDumpIsOneIncidentOfBothRanks) {
  std::string log = kStart;
  for (int rank : {1, 0}) {
    log += "terminate called after throwing an instance of 'c10::DistBackendError'\n";
    log += "  what():  [PG ID 0 PG GUID 0(default_pg) Rank " + std::to_string(rank) +
           "] Process group watchdog thread terminated with exception: " + Timeout(rank, 97) + "\n";
    log +=
        "Exception raised from checkTimeout at "
        "/src/torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:688 (most recent call first):\n"
        "frame #0: c10::Error::Error(c10::SourceLocation, std::string) + 0x9a (0x7f01 in "
        "/opt/venv/lib/python3.11/site-packages/torch/lib/libc10.so)\n"
        "frame #1: c10d::ProcessGroupNCCL::watchdogHandler() + 0x2b0 (0x7f02 in "
        "/opt/venv/lib/python3.11/site-packages/torch/lib/libtorch_cuda.so)\n"
        "frame #2: <unknown function> + 0xdbad3 (0x7f03 in /lib/x86_64-linux-gnu/libstdc++.so.6)\n";
  }
  ExpectOneDistributedIncidentOnRanks(ReplayString(log), {0, 1});
}

TEST(TorchShapesTest, TheWatchdogTimeoutReRaisedInPythonByEachWorkerIsOneIncidentOfBothRanks) {
  std::string log = kStart;
  for (int rank : {0, 1}) {
    const std::string p = "(VllmWorker rank=" + std::to_string(rank) + " pid=5" +
                          std::to_string(rank) +
                          ") ERROR 06-11 09:20:03 [multiproc_executor.py:520] ";
    log += p + "WorkerProc hit an exception.\n";
    log += p + "Traceback (most recent call last):\n";
    log +=
        p +
        "  File \"/opt/venv/lib/python3.11/site-packages/vllm/v1/executor/multiproc_executor.py\", "
        "line 515, in worker_busy_loop\n";
    log +=
        p +
        "  File \"/opt/venv/lib/python3.11/site-packages/torch/distributed/distributed_c10d.py\", "
        "line 2790, in all_reduce\n";
    log += p + "torch.distributed.DistBackendError: " + Timeout(rank, 12) + "\n";
  }
  ExpectOneDistributedIncidentOnRanks(ReplayString(log), {0, 1});
}

// All three shapes of one rank's timeout together (its c10 line, its C++
// record, its Python re-raise) are still one incident of that rank.
TEST(TorchShapesTest, TheThreeShapesOfOneRanksTimeoutAreOneIncidentOfThatRank) {
  std::string log = kStart;
  log += "[rank1]:[E611 09:20:00.100000 401 ProcessGroupNCCL.cpp:632] " + Timeout(1, 5) + "\n";
  log +=
      "(VllmWorker rank=1 pid=51) ERROR 06-11 09:20:00 [multiproc_executor.py:520] "
      "torch.distributed.DistBackendError: " +
      Timeout(1, 5) + "\n";
  log += "terminate called after throwing an instance of 'c10::DistBackendError'\n";
  log +=
      "  what():  [PG ID 0 PG GUID 0(default_pg) Rank 1] Process group watchdog thread "
      "terminated with exception: " +
      Timeout(1, 5) + "\n";
  ExpectOneDistributedIncidentOnRanks(ReplayString(log), {1});
}

bool AnyAtErrorOrAbove(const std::vector<correlate::Incident>& incidents) {
  for (const auto& incident : incidents) {
    if (incident.severity >= rules::Severity::kError) return true;
  }
  return false;
}

// An operator's stop: SIGTERM, the API server's shutdown, then the engine's
// dead-engine traceback the shutdown provokes. Nothing of it is a failure.
TEST(TorchShapesTest, ASigtermShutdownWithAnEngineDeadErrorAfterItGivesNothingAtError) {
  const std::string api = "(APIServer pid=7) ";
  std::string log = kStart;
  log += api + "INFO 06-11 10:00:00 [launcher.py:80] Shutting down FastAPI HTTP server.\n";
  log += api + "INFO 06-11 10:00:00 [api_server.py:1900] Received SIGTERM, shutting down.\n";
  log += "(EngineCore_DP0 pid=9) INFO 06-11 10:00:00 [core.py:720] Shutdown initiated\n";
  log += api + "ERROR 06-11 10:00:01 [async_llm.py:470] AsyncLLM output_handler failed.\n";
  log += api + "ERROR 06-11 10:00:01 [async_llm.py:470] Traceback (most recent call last):\n";
  log += api +
         "ERROR 06-11 10:00:01 [async_llm.py:470]   File "
         "\"/opt/venv/lib/python3.11/site-packages/vllm/v1/engine/async_llm.py\", line 430, in "
         "output_handler\n";
  log += api +
         "ERROR 06-11 10:00:01 [async_llm.py:470]   File "
         "\"/opt/venv/lib/python3.11/site-packages/vllm/v1/engine/core_client.py\", line 850, in "
         "get_output_async\n";
  log += api +
         "ERROR 06-11 10:00:01 [async_llm.py:470] vllm.v1.engine.exceptions.EngineDeadError: "
         "EngineCore encountered an issue. See stack trace (above) for the root cause.\n";
  const auto incidents = ReplayString(log);
  EXPECT_FALSE(AnyAtErrorOrAbove(incidents)) << RuleIds(incidents).size() << " incident(s)";

  // The same dead-engine error with no stop before it is a failure.
  std::string no_stop = kStart;
  for (size_t at = 0; (at = log.find(api + "ERROR", at)) != std::string::npos;) {
    const size_t end = log.find('\n', at);
    no_stop += log.substr(at, end + 1 - at);
    at = end;
  }
  EXPECT_TRUE(AnyAtErrorOrAbove(ReplayString(no_stop)));
}

}  // namespace
}  // namespace fingerprintd::testing
