// Process prefixes: which process wrote a line, and its parallel indices.
#include "parse/prefix.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "fingerprintd/parse.h"
#include "testing/collecting_sink.h"
#include "testing/counting_events.h"

namespace fingerprintd::parse {
namespace {

ProcessId Innermost(std::string_view line, size_t* consumed = nullptr) {
  ProcessId id;
  std::string_view key;
  const size_t n = ParsePrefixes(line, &id, &key);
  if (consumed != nullptr) *consumed = n;
  return id;
}

TEST(PrefixTest, WorkerNamesCarryTheirParallelIndices) {
  ProcessId id = Innermost("(Worker_TP1 pid=8761) INFO x");
  EXPECT_EQ(id.role, ProcessRole::kWorker);
  EXPECT_EQ(id.name, "Worker_TP1");
  EXPECT_EQ(id.pid, 8761);
  EXPECT_EQ(id.tp, 1);
  EXPECT_EQ(id.pp, -1);

  id = Innermost("(Worker_PP1_TP0 pid=5) x");
  EXPECT_EQ(id.pp, 1);
  EXPECT_EQ(id.tp, 0);

  id = Innermost("(Worker_TP2_EP2 pid=5) x");
  EXPECT_EQ(id.tp, 2);
  EXPECT_EQ(id.ep, 2);

  id = Innermost("(Worker_DP1_PP0_TP1_EP3 pid=5) x");
  EXPECT_EQ(id.dp, 1);
  EXPECT_EQ(id.pp, 0);
  EXPECT_EQ(id.tp, 1);
  EXPECT_EQ(id.ep, 3);

  id = Innermost("(Worker_DP0_PCP1_TP3_DCP1 pid=5) x");
  EXPECT_EQ(id.dp, 0);
  EXPECT_EQ(id.tp, 3);

  id = Innermost("(Worker pid=5) x");
  EXPECT_EQ(id.role, ProcessRole::kWorker);
  EXPECT_EQ(id.tp, -1);
}

TEST(PrefixTest, VllmWorkerVariantsAreWorkers) {
  ProcessId id = Innermost("(VllmWorker rank=1 pid=808339) ERROR x");
  EXPECT_EQ(id.role, ProcessRole::kWorker);
  EXPECT_EQ(id.name, "VllmWorker rank=1");
  EXPECT_EQ(id.rank, 1);
  EXPECT_EQ(id.pid, 808339);

  id = Innermost("(VllmWorker TP1 pid=2012390) INFO x");
  EXPECT_EQ(id.tp, 1);
  id = Innermost("(VllmWorker PP1_TP0 pid=2) INFO x");
  EXPECT_EQ(id.pp, 1);
  EXPECT_EQ(id.tp, 0);
  id = Innermost("(VllmWorkerProcess pid=3737) ERROR x");
  EXPECT_EQ(id.role, ProcessRole::kWorker);
  EXPECT_EQ(id.name, "VllmWorkerProcess");
}

TEST(PrefixTest, EngineCoreAndApiServerAreNotWorkers) {
  ProcessId id = Innermost("(EngineCore_DP0 pid=44) INFO x");
  EXPECT_EQ(id.role, ProcessRole::kEngineCore);
  EXPECT_EQ(id.dp, 0);
  id = Innermost("(EngineCore_1 pid=44) INFO x");
  EXPECT_EQ(id.role, ProcessRole::kEngineCore);
  EXPECT_EQ(id.dp, 1);
  EXPECT_EQ(Innermost("(EngineCore pid=44) x").role, ProcessRole::kEngineCore);
  EXPECT_EQ(Innermost("(APIServer pid=1) x").role, ProcessRole::kApiServer);
  EXPECT_EQ(Innermost("(ApiServer_0 pid=1) x").role, ProcessRole::kApiServer);
}

TEST(PrefixTest, RayActorsKeepTheirIpAndOtherActorsAreOther) {
  ProcessId id = Innermost("(RayWorkerWrapper pid=581, ip=10.225.128.18) k8s17:581:581 [0] NCCL");
  EXPECT_EQ(id.role, ProcessRole::kWorker);
  EXPECT_EQ(id.pid, 581);
  EXPECT_EQ(id.ip, "10.225.128.18");
  EXPECT_EQ(Innermost("(RayWorkerWrapper pid=581) x").ip, "");

  id = Innermost("(LLMRayActor pid=2146589, ip=10.124.70.173) INFO x");
  EXPECT_EQ(id.role, ProcessRole::kOther);
  EXPECT_EQ(id.name, "LLMRayActor");

  id = Innermost("(pid=77) hello");
  EXPECT_EQ(id.role, ProcessRole::kOther);
  EXPECT_EQ(id.pid, 77);
  EXPECT_EQ(id.name, "");

  id = Innermost("(raylet) [2025-01-01 ...] warning");
  EXPECT_EQ(id.role, ProcessRole::kOther);
  EXPECT_EQ(id.name, "raylet");
}

TEST(PrefixTest, NestedRayPrefixYieldsInnermostWorker) {
  size_t consumed = 0;
  const std::string_view line =
      "(EngineCore pid=1273) (RayWorkerWrapper pid=340, ip=10.10.10.2) WARNING 04-25 06:11:51 x";
  ProcessId id = Innermost(line, &consumed);
  EXPECT_EQ(id.name, "RayWorkerWrapper");
  EXPECT_EQ(id.pid, 340);
  EXPECT_EQ(id.ip, "10.10.10.2");
  EXPECT_EQ(line.substr(consumed), "WARNING 04-25 06:11:51 x");
}

TEST(PrefixTest, ThreeGluedPrefixesWithoutSpacesYieldTheLast) {
  size_t consumed = 0;
  ProcessId id =
      Innermost("(Worker_TP0 pid=1)(Worker_TP1 pid=2) (EngineCore pid=3)ERROR x", &consumed);
  EXPECT_EQ(id.role, ProcessRole::kEngineCore);
  EXPECT_EQ(id.pid, 3);
}

TEST(PrefixTest, TorchRankPrefixIsAWorkerWithExplicitRank) {
  size_t consumed = 0;
  const std::string_view line = "[rank1]:[W730 15:32:17.841 ProcessGroupNCCL.cpp:1479] Warning";
  ProcessId id = Innermost(line, &consumed);
  EXPECT_EQ(id.role, ProcessRole::kWorker);
  EXPECT_EQ(id.rank, 1);
  EXPECT_EQ(line.substr(consumed), "[W730 15:32:17.841 ProcessGroupNCCL.cpp:1479] Warning");
}

TEST(PrefixTest, ParenthesisedProseIsNotAPrefix) {
  size_t consumed = 1;
  Innermost("(note) this is text", &consumed);
  EXPECT_EQ(consumed, 0u);
  Innermost("(a b c d) text", &consumed);
  EXPECT_EQ(consumed, 0u);
  Innermost("(Worker_TP1 pid=abc) text", &consumed);
  EXPECT_EQ(consumed, 0u);
  Innermost("[rankX]: text", &consumed);
  EXPECT_EQ(consumed, 0u);
}

TEST(PrefixTest, ColourWrappedPrefixAndTqdmCarriageReturnAreRemovedByTheParser) {
  fingerprintd::testing::CountingEvents events;
  fingerprintd::testing::CollectingSink sink;
  SourceParser parser(1, "x", ParserOptions{}, events, sink);
  parser.Feed(
      "\x1b[0;36m(Worker_TP0 pid=101)\x1b[0;0m \rLoading safetensors checkpoint shards:   2%");
  parser.Feed(
      "\x1b[2m\x1b[36m(RayWorkerWrapper pid=2395)\x1b[0m INFO 04-25 06:11:53 [a.py:1] hi\r");
  ASSERT_EQ(sink.records.size(), 2u);
  EXPECT_EQ(sink.records[0].worker->name, "Worker_TP0");
  EXPECT_EQ(sink.records[0].message, "Loading safetensors checkpoint shards:   2%");
  EXPECT_EQ(sink.records[1].worker->name, "RayWorkerWrapper");
  EXPECT_EQ(sink.records[1].message, "hi");
}

}  // namespace
}  // namespace fingerprintd::parse
