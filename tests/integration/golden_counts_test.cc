// Every golden fixture gives exactly the incidents tests/golden/README.md
// expects: how many, and of which rules. A second, spurious incident (the
// NCCL fixture once gave two) fails here, and a fixture added without an
// expectation fails GoldenCountsTest.EveryFixtureHasAnExpectedCount.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "testing/replay_harness.h"

namespace fingerprintd::testing {
namespace {

struct GoldenCase {
  GoldenCase(std::string path, std::vector<std::string> rules, std::string deployment_from = "",
             std::map<std::string, std::string> labels = {})
      : path(std::move(path)),
        rules(std::move(rules)),
        deployment_from(std::move(deployment_from)),
        labels(std::move(labels)) {}
  std::string path;                // under tests/golden/: a file, or a directory replayed whole
  std::vector<std::string> rules;  // expected incidents' rules, sorted (empty: none)
  std::string deployment_from;
  std::map<std::string, std::string> labels;
};

constexpr const char* kTarget = "deepgemm-unknown-sf-transformation";

// The README's "Expected incidents" table, row by row.
const std::vector<GoldenCase>& Cases() {
  static const std::vector<GoldenCase> cases = {
      {"vllm_tp2_unknown_sf.log", {kTarget}},
      {"vllm_tp4_unknown_sf.log", {kTarget}},
      {"vllm_tp4_unknown_sf_per_worker", {kTarget}, "", {{"deployment", "tp4"}}},
      {"two_deployments_interleaved", {kTarget, kTarget}, R"(([^/]+)\.log$)"},
      {"vllm_tp4_one_rank_keyerror.log", {"load-weights-keyerror"}},
      {"vllm_tp2_healthy.log", {}},
      {"vllm_tp2_unknown_recipe_warmup.log", {"deepgemm-unknown-recipe"}},
      {"vllm_tp2_unknown_sf_runtime.log", {"deepgemm-unknown-sf-transformation-runtime"}},
      {"vllm_tp2_cutlass_error_internal.log", {"cutlass-error-internal"}},
      {"vllm_tp2_cuda_oom.log", {"cuda-out-of-memory"}},
      {"vllm_tp2_nccl_timeout.log", {"nccl-watchdog-timeout"}},
      {"one_line_paste.log", {kTarget}},
      {"one_line_paste_elided.log", {kTarget}},
      {"one_line_paste_prefixed.log", {kTarget}},
      {"cri", {kTarget}, "/var/log/pods/[^_]+_([^_]+)-[0-9a-z]+-[0-9a-z]+_"},
      {"docker/container-json.log", {kTarget}},
      {"sglang_tp2_unknown_sf.log", {kTarget}},
      // Logs as they arrive in the wild: pasted, quoted, wrapped, relayed, other engines.
      {"wild/markdown_quoted_ci_keyerror.log", {"load-weights-keyerror"}},
      {"wild/grep_n_cuda_oom.log", {"cuda-out-of-memory"}},
      {"wild/kubectl_prefix_nccl_error.log", {"nccl-error"}},
      {"wild/torchserve_model_log_unknown_sf.log", {kTarget}},
      {"wild/tqdm_glued_free_memory.log", {"free-memory-below-utilization"}},
      {"wild/hard_wrapped_unknown_sf.log", {kTarget}},
      {"wild/bare_paste_kv_cache.log", {"kv-cache-too-small"}},
      {"wild/sglang_tvm_unknown_sf.log", {kTarget}},
      {"wild/trtllm_rank_kv_cache.log", {"cuda-out-of-memory", "kv-cache-too-small"}},
      // Read as a person reads, and partial evidence (rules/README.md "Confidence").
      {"wild/trimmed_traceback_unknown_sf.log", {kTarget}},
      {"wild/split_three_lines_unknown_sf.log", {kTarget}},
      {"wild/repr_tuple_min_capability.log", {"gpu-below-min-capability"}},
      {"wild/json_record_cuda_oom.log", {"cuda-out-of-memory"}},
      {"wild/paste_ends_in_unknown_exception.log", {"unclassified-startup-failure"}},
      {"wild/paste_ends_in_keyboard_interrupt.log", {}},
      {"wild/uncaught_unknown_engine_core.log", {"unclassified-startup-failure"}},
      {"wild/host_logger_no_kernel_image.log", {"cuda-no-kernel-image"}},
      {"wild/healthy_pasted_warnings.log", {}},
  };
  return cases;
}

class GoldenCountsTest : public ::testing::TestWithParam<GoldenCase> {};

TEST_P(GoldenCountsTest, FixtureGivesExactlyTheExpectedIncidents) {
  const GoldenCase& c = GetParam();
  ReplayResult r = ReplayPaths({Golden(c.path)}, c.deployment_from, c.labels);
  ASSERT_TRUE(r.status.ok()) << r.status.message();
  std::vector<std::string> rules = RuleIds(r.incidents);
  std::sort(rules.begin(), rules.end());
  EXPECT_EQ(rules, c.rules) << c.path << "\n" << r.jsonl;
}

std::string CaseName(const ::testing::TestParamInfo<GoldenCase>& info) {
  std::string name = info.param.path;
  for (char& ch : name) {
    if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
  }
  return name;
}

INSTANTIATE_TEST_SUITE_P(EveryFixture, GoldenCountsTest, ::testing::ValuesIn(Cases()), CaseName);

TEST(GoldenFixturesTest, EveryFixtureHasAnExpectedCount) {
  namespace fs = std::filesystem;
  const fs::path root = Golden("");
  for (const auto& entry : fs::recursive_directory_iterator(root)) {
    if (!entry.is_regular_file() || entry.path().extension() != ".log") continue;
    const std::string relative = fs::relative(entry.path(), root).string();
    if (relative.rfind("tools/", 0) == 0) continue;
    const bool covered = std::any_of(Cases().begin(), Cases().end(), [&](const GoldenCase& c) {
      return relative == c.path || relative.rfind(c.path + "/", 0) == 0;
    });
    EXPECT_TRUE(covered) << relative << " has no expected incident count in golden_counts_test.cc";
  }
}

}  // namespace
}  // namespace fingerprintd::testing
