// The golden fixtures (tests/golden/README.md, "Expected incidents") as
// cases: which path is replayed as one input, how its deployments are named
// and which incidents it gives. One table for every test that goes over all
// fixtures (golden_counts_test.cc checks the counts and that every fixture has
// a row; live_equals_replay_test.cc writes each into a tailed directory).
#pragma once

#include <map>
#include <string>
#include <utility>
#include <vector>

namespace fingerprintd::testing {

inline constexpr const char* kGoldenTarget = "deepgemm-unknown-sf-transformation";

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

// The README's "Expected incidents" table, row by row.
inline const std::vector<GoldenCase>& GoldenCases() {
  static const std::vector<GoldenCase> cases = {
      {"vllm_tp2_unknown_sf.log", {kGoldenTarget}},
      {"vllm_tp4_unknown_sf.log", {kGoldenTarget}},
      {"vllm_tp4_unknown_sf_per_worker", {kGoldenTarget}, "", {{"deployment", "tp4"}}},
      {"two_deployments_interleaved", {kGoldenTarget, kGoldenTarget}, R"(([^/]+)\.log$)"},
      {"vllm_tp4_one_rank_keyerror.log", {"load-weights-keyerror"}},
      {"vllm_tp2_healthy.log", {}},
      {"vllm_tp2_unknown_recipe_warmup.log", {"deepgemm-unknown-recipe"}},
      {"vllm_tp2_unknown_sf_runtime.log", {"deepgemm-unknown-sf-transformation-runtime"}},
      {"vllm_tp2_cutlass_error_internal.log", {"cutlass-error-internal"}},
      {"vllm_tp2_cuda_oom.log", {"cuda-out-of-memory"}},
      {"vllm_tp2_nccl_timeout.log", {"nccl-watchdog-timeout"}},
      {"vllm_tp4_oom_cascade.log", {"cuda-out-of-memory"}},
      {"one_line_paste.log", {kGoldenTarget}},
      {"one_line_paste_elided.log", {kGoldenTarget}},
      {"one_line_paste_prefixed.log", {kGoldenTarget}},
      {"cri", {kGoldenTarget}, "/var/log/pods/[^_]+_([^_]+)-[0-9a-z]+-[0-9a-z]+_"},
      {"docker/container-json.log", {kGoldenTarget}},
      {"sglang_tp2_unknown_sf.log", {kGoldenTarget}},
      // Logs as they arrive in the wild: pasted, quoted, wrapped, relayed, other engines.
      {"wild/markdown_quoted_ci_keyerror.log", {"load-weights-keyerror"}},
      {"wild/grep_n_cuda_oom.log", {"cuda-out-of-memory"}},
      {"wild/kubectl_prefix_nccl_error.log", {"nccl-error"}},
      {"wild/torchserve_model_log_unknown_sf.log", {kGoldenTarget}},
      {"wild/tqdm_glued_free_memory.log", {"free-memory-below-utilization"}},
      {"wild/hard_wrapped_unknown_sf.log", {kGoldenTarget}},
      {"wild/bare_paste_kv_cache.log", {"kv-cache-too-small"}},
      {"wild/sglang_tvm_unknown_sf.log", {kGoldenTarget}},
      {"wild/trtllm_rank_kv_cache.log", {"cuda-out-of-memory", "kv-cache-too-small"}},
      // Read as a person reads, and partial evidence (rules/README.md "Confidence").
      {"wild/trimmed_traceback_unknown_sf.log", {kGoldenTarget}},
      {"wild/split_three_lines_unknown_sf.log", {kGoldenTarget}},
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

}  // namespace fingerprintd::testing
