// What the bound tests (tests/bounds/, the correlator's ForgetSource tests)
// feed: a one-rule pack whose symptom is `boom`, a worker process, and the
// DeepGEMM traceback of the target fingerprint as one process prints it.
#pragma once

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "fingerprintd/rules.h"

namespace fingerprintd::testing {

// Rule `boom` (hardware_support, critical, 60 s window): an ERROR line with
// "boom" is its symptom; facts.yaml extracts tensor_parallel_size.
inline std::shared_ptr<const rules::RuleSet> BoomPack() {
  auto loaded = rules::LoadRuleTexts({{"r/facts.yaml", R"(facts:
  - name: tensor_parallel_size
    patterns: ['tensor_parallel_size=(\d+)']
)"},
                                      {"r/boom.yaml", R"(id: boom
title: boom
class: hardware_support
severity: critical
window: 60s
sequence:
  - id: symptom
    level: ERROR
    patterns: ['boom']
    symptom: true
explanation: "{workers} went boom."
remediation: ["Stop the boom."]
)"}});
  EXPECT_TRUE(loaded.ok()) << loaded.status().message();
  return *loaded;
}

// Worker_TP<tp>, pid `pid`.
inline WorkerInfo WorkerProcess(int tp, int pid) {
  WorkerInfo w;
  w.role = ProcessRole::kWorker;
  w.name = "Worker_TP" + std::to_string(tp);
  w.tp = tp;
  w.pid = pid;
  return w;
}

// The DeepGEMM `Unknown SF transformation` traceback, every line after `head`
// (vLLM's logger.exception repeats its header on each line).
inline std::vector<std::string> DeepGemmTraceback(const std::string& head) {
  std::vector<std::string> lines;
  for (const char* line :
       {"Traceback (most recent call last):",
        "  File \"/x/vllm/model_executor/layers/quantization/fp8.py\", line 412, in "
        "process_weights_after_loading",
        "  File \"/x/vllm/model_executor/kernels/linear/scaled_mm/deep_gemm.py\", line 96, in "
        "process_weights_after_loading",
        "  File \"/x/vllm/model_executor/layers/quantization/utils/fp8_utils.py\", line 1077, in "
        "deepgemm_post_process_weight_scale_block",
        "  File \"/x/vllm/utils/deep_gemm.py\", line 494, in transform_sf_into_required_layout",
        "RuntimeError: Assertion error (/workspace/.deps/deepgemm-src/csrc/apis/layout.hpp:60): "
        "Unknown SF transformation"}) {
    lines.push_back(head + line);
  }
  return lines;
}

}  // namespace fingerprintd::testing
