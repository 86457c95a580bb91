// Golden replays: the project's own fixtures in tests/golden/ through the whole
// pipeline (parse -> rules -> correlate) with the embedded rule pack, checked
// for what an operator would see: how many incidents, which rule and class,
// how many workers, whether they failed identically, the facts.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "testing/replay_harness.h"

namespace fingerprintd::testing {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::UnorderedElementsAre;

constexpr const char* kTarget = "deepgemm-unknown-sf-transformation";

void ExpectTarget(const correlate::Incident& incident, int workers) {
  EXPECT_EQ(incident.rule->id, kTarget);
  EXPECT_EQ(incident.rule->rule_class, "hardware_support");
  EXPECT_EQ(rules::ConfidenceName(incident.confidence), "confirmed");
  EXPECT_EQ(incident.affected, workers);
  EXPECT_EQ(incident.expected, workers);
  EXPECT_TRUE(incident.identical);
}

TEST(ReplayGoldenTest, TensorParallelFourFailureIsOneIdenticalHardwareIncident) {
  ReplayResult r = ReplayPaths({Golden("vllm_tp4_unknown_sf.log")});
  ASSERT_TRUE(r.status.ok()) << r.status.message();
  ASSERT_EQ(r.incidents.size(), 1u) << r.jsonl;
  const correlate::Incident& incident = r.incidents[0];
  ExpectTarget(incident, 4);
  EXPECT_THAT(incident.ranks, ElementsAre(0, 1, 2, 3));
  EXPECT_EQ(incident.facts.count("model"), 1u) << r.jsonl;
  EXPECT_EQ(incident.facts.count("quantization"), 1u) << r.jsonl;
  EXPECT_EQ(incident.facts.count("kernel"), 1u) << r.jsonl;
  EXPECT_EQ(incident.facts.at("compute_capability"), "12.0") << r.jsonl;
  EXPECT_THAT(incident.explanation, HasSubstr("4/4 tensor-parallel workers failed identically"));
  EXPECT_THAT(incident.explanation, HasSubstr("12.0"));
  EXPECT_FALSE(incident.remediation.empty());
}

TEST(ReplayGoldenTest, TensorParallelTwoFailureIsConfirmedOnEveryWorker) {
  ReplayResult r = ReplayPaths({Golden("vllm_tp2_unknown_sf.log")});
  ASSERT_TRUE(r.status.ok()) << r.status.message();
  ASSERT_EQ(r.incidents.size(), 1u) << r.jsonl;
  ExpectTarget(r.incidents[0], 2);
  EXPECT_THAT(r.incidents[0].ranks, ElementsAre(0, 1));
}

TEST(ReplayGoldenTest, PerWorkerFilesOfOneDeploymentGiveTheSameSingleIncident) {
  ReplayResult single = ReplayPaths({Golden("vllm_tp4_unknown_sf.log")});
  ReplayResult split = ReplayPaths({Golden("vllm_tp4_unknown_sf_per_worker")});
  ASSERT_TRUE(split.status.ok()) << split.status.message();
  ASSERT_EQ(split.incidents.size(), 1u) << split.jsonl;
  ExpectTarget(split.incidents[0], 4);
  ASSERT_EQ(single.incidents.size(), 1u);
  EXPECT_EQ(split.incidents[0].traceback_fingerprint, single.incidents[0].traceback_fingerprint);
  EXPECT_EQ(split.incidents[0].ranks, single.incidents[0].ranks);
}

TEST(ReplayGoldenTest, TwoInterleavedDeploymentsGiveTwoIncidents) {
  ReplayResult r = ReplayPaths({Golden("two_deployments_interleaved")}, R"(/([^/]+)\.log$)");
  ASSERT_TRUE(r.status.ok()) << r.status.message();
  ASSERT_EQ(r.incidents.size(), 2u) << r.jsonl;
  EXPECT_THAT((std::vector<std::string>{r.incidents[0].deployment, r.incidents[1].deployment}),
              UnorderedElementsAre("deployment_a", "deployment_b"));
  for (const auto& incident : r.incidents) ExpectTarget(incident, 2);
  EXPECT_NE(r.incidents[0].incident_id, r.incidents[1].incident_id);
}

TEST(ReplayGoldenTest, ReplayingTwiceGivesByteIdenticalJsonl) {
  std::vector<std::string> inputs = {Golden("vllm_tp4_unknown_sf.log"),
                                     Golden("vllm_tp2_unknown_recipe_warmup.log"),
                                     Golden("vllm_tp4_one_rank_keyerror.log")};
  ReplayResult first = ReplayPaths(inputs);
  ReplayResult second = ReplayPaths(inputs);
  ASSERT_FALSE(first.jsonl.empty());
  EXPECT_EQ(first.jsonl, second.jsonl);
}

TEST(ReplayGoldenTest, ThreadsGiveTheSameIncidentsAsOneThread) {
  std::vector<std::string> inputs = {
      Golden("vllm_tp4_unknown_sf.log"),        Golden("two_deployments_interleaved"),
      Golden("vllm_tp4_unknown_sf_per_worker"), Golden("vllm_tp2_cuda_oom.log"),
      Golden("vllm_tp4_one_rank_keyerror.log"), Golden("vllm_tp2_healthy.log")};
  ReplayResult one = ReplayPaths(inputs, R"(/([^/]+)\.log$)", {}, 1);
  ReplayResult three = ReplayPaths(inputs, R"(/([^/]+)\.log$)", {}, 3);
  ASSERT_TRUE(three.status.ok()) << three.status.message();
  EXPECT_GE(one.incidents.size(), 5u);
  EXPECT_EQ(one.jsonl, three.jsonl);
}

TEST(ReplayGoldenTest, OneRankKeyErrorIsOneModelBugIncident) {
  ReplayResult r = ReplayPaths({Golden("vllm_tp4_one_rank_keyerror.log")});
  ASSERT_EQ(r.incidents.size(), 1u) << r.jsonl;
  EXPECT_EQ(r.incidents[0].rule->rule_class, "model_bug") << r.jsonl;
  EXPECT_EQ(r.incidents[0].affected, 1);
  EXPECT_EQ(r.incidents[0].expected, 4);
  EXPECT_THAT(r.incidents[0].ranks, ElementsAre(2));
}

TEST(ReplayGoldenTest, HealthyStartupGivesNoIncident) {
  ReplayResult r = ReplayPaths({Golden("vllm_tp2_healthy.log")});
  EXPECT_TRUE(r.incidents.empty()) << r.jsonl;
}

TEST(ReplayGoldenTest, SiblingsAreNotTheTarget) {
  struct Case {
    const char* file;
    const char* rule_class;
  };
  for (const Case& c : {Case{"vllm_tp2_unknown_recipe_warmup.log", "hardware_support"},
                        Case{"vllm_tp2_unknown_sf_runtime.log", "hardware_support"},
                        Case{"vllm_tp2_cutlass_error_internal.log", "hardware_support"},
                        Case{"vllm_tp2_cuda_oom.log", "resource"},
                        Case{"vllm_tp2_nccl_timeout.log", "distributed"}}) {
    ReplayResult r = ReplayPaths({Golden(c.file)});
    ASSERT_FALSE(r.incidents.empty()) << c.file;
    for (const auto& incident : r.incidents) {
      EXPECT_NE(incident.rule->id, kTarget) << c.file << "\n" << r.jsonl;
    }
    EXPECT_EQ(r.incidents[0].rule->rule_class, c.rule_class) << c.file << "\n" << r.jsonl;
  }
}

// One rank's out-of-memory in the forward pass of a serving TP=4 deployment,
// and ten minutes later what it provoked: the other ranks' watchdogs, the
// dead worker, the dead engine. One incident, the cause's: resource, rank 2,
// as loud as the loudest consequence, which it lists.
TEST(ReplayGoldenTest, AnOutOfMemoryCascadeIsOneIncidentOfItsCauseWithTheConsequencesListed) {
  ReplayResult r = ReplayPaths({Golden("vllm_tp4_oom_cascade.log")});
  ASSERT_EQ(r.incidents.size(), 1u) << r.jsonl;
  const correlate::Incident& incident = r.incidents[0];
  EXPECT_EQ(incident.rule->id, "cuda-out-of-memory");
  EXPECT_EQ(incident.rule->rule_class, "resource");
  EXPECT_EQ(incident.ranks, std::vector<int32_t>({2}));
  EXPECT_EQ(incident.affected, 1);
  EXPECT_EQ(incident.expected, 4);
  EXPECT_EQ(incident.severity, rules::Severity::kCritical);
  ASSERT_EQ(incident.consequences.size(), 2u) << r.jsonl;
  EXPECT_EQ(incident.consequences[0].rule->id, "nccl-watchdog-timeout");
  EXPECT_EQ(incident.consequences[0].ranks, std::vector<int32_t>({0, 1, 3}));
  EXPECT_EQ(incident.consequences[1].rule->id, "engine-dead");
  // Ten minutes later (c10's times carry nanoseconds past the second).
  EXPECT_GE(incident.consequences[0].first_seen_us - incident.first_seen_us, 600'000'000);
  EXPECT_LT(incident.consequences[0].first_seen_us - incident.first_seen_us, 601'000'000);
}

TEST(ReplayGoldenTest, OneLinePasteIsRecognisedAsPartial) {
  for (const char* file : {"one_line_paste.log", "one_line_paste_prefixed.log"}) {
    ReplayResult r = ReplayPaths({Golden(file)});
    ASSERT_EQ(r.incidents.size(), 1u) << file << "\n" << r.jsonl;
    EXPECT_EQ(r.incidents[0].rule->id, kTarget);
    EXPECT_EQ(rules::ConfidenceName(r.incidents[0].confidence), "partial");
  }
}

TEST(ReplayGoldenTest, ATracebackTrimmedAboveItsPhaseFrameIsStillTheTargetAsPartial) {
  ReplayResult r = ReplayPaths({Golden("wild/trimmed_traceback_unknown_sf.log")});
  ASSERT_EQ(r.incidents.size(), 1u) << r.jsonl;
  EXPECT_EQ(r.incidents[0].rule->id, kTarget);
  EXPECT_EQ(rules::ConfidenceName(r.incidents[0].confidence), "partial");
}

TEST(ReplayGoldenTest, AnAssertionSplitOverThreeLinesIsTheTarget) {
  ReplayResult r = ReplayPaths({Golden("wild/split_three_lines_unknown_sf.log")});
  ASSERT_EQ(r.incidents.size(), 1u) << r.jsonl;
  EXPECT_EQ(r.incidents[0].rule->id, kTarget);
  EXPECT_THAT(r.incidents[0].exception, HasSubstr("Unknown SF transformation"));
}

TEST(ReplayGoldenTest, AReprTupleMinimumCapabilityIsHardwareSupportWithTheCapability) {
  ReplayResult r = ReplayPaths({Golden("wild/repr_tuple_min_capability.log")});
  ASSERT_EQ(r.incidents.size(), 1u) << r.jsonl;
  EXPECT_EQ(r.incidents[0].rule->rule_class, "hardware_support");
  EXPECT_EQ(r.incidents[0].facts["compute_capability"], "8.6") << r.jsonl;
}

TEST(ReplayGoldenTest, AJsonRecordWithAnEscapedTracebackIsReadAsItsLines) {
  ReplayResult r = ReplayPaths({Golden("wild/json_record_cuda_oom.log")});
  ASSERT_EQ(r.incidents.size(), 1u) << r.jsonl;
  EXPECT_EQ(r.incidents[0].rule->id, "cuda-out-of-memory");
  EXPECT_THAT(r.incidents[0].exception, HasSubstr("torch.OutOfMemoryError: CUDA out of memory"));
}

TEST(ReplayGoldenTest, APasteEndingInAnUnknownExceptionIsNeverSilent) {
  ReplayResult r = ReplayPaths({Golden("wild/paste_ends_in_unknown_exception.log")});
  ASSERT_EQ(r.incidents.size(), 1u) << r.jsonl;
  EXPECT_EQ(r.incidents[0].rule->rule_class, "unknown");
  EXPECT_EQ(rules::ConfidenceName(r.incidents[0].confidence), "partial");
  EXPECT_THAT(r.incidents[0].exception, HasSubstr("JSONDecodeError: Expecting value"));
}

TEST(ReplayGoldenTest, AnOperatorsCtrlCAtTheEndIsNoFailure) {
  ReplayResult r = ReplayPaths({Golden("wild/paste_ends_in_keyboard_interrupt.log")});
  EXPECT_TRUE(r.incidents.empty()) << r.jsonl;
}

TEST(ReplayGoldenTest, KubernetesCriAndDockerEnvelopesGiveTheSameIncident) {
  ReplayResult cri = ReplayPaths({Golden("cri")});
  ASSERT_EQ(cri.incidents.size(), 1u) << cri.jsonl;
  ExpectTarget(cri.incidents[0], 2);
  EXPECT_THAT(cri.incidents[0].deployment, HasSubstr("qwen3-fp8"));
  ReplayResult docker = ReplayPaths({Golden("docker")});
  ASSERT_EQ(docker.incidents.size(), 1u) << docker.jsonl;
  ExpectTarget(docker.incidents[0], 2);
}

TEST(ReplayGoldenTest, SglangFailureIsTheTarget) {
  ReplayResult r = ReplayPaths({Golden("sglang_tp2_unknown_sf.log")});
  ASSERT_EQ(r.incidents.size(), 1u) << r.jsonl;
  EXPECT_EQ(r.incidents[0].rule->id, kTarget);
  EXPECT_EQ(r.incidents[0].affected, 2);
}

TEST(ReplayGoldenTest, MissingPathIsAClearError) {
  ReplayResult r = ReplayPaths({Golden("does-not-exist.log")});
  EXPECT_FALSE(r.status.ok());
  EXPECT_THAT(r.status.message(), HasSubstr("does-not-exist.log: no such file or directory"));
}

}  // namespace
}  // namespace fingerprintd::testing
