#!/usr/bin/env python3
"""Workloads for the state bounds of DESIGN.md §7 (issue 7), written to stdout.

  crash-loop N   N start-ups of a vLLM TP=4 deployment, each with new pids, each
                 failing with the DeepGEMM traceback on all four ranks, 10 minutes
                 apart: must give N incidents of 4/4 (no stream table filling up).
  repeat N       one worker repeating one traceback every 0.1 s, N times: one
                 incident per window run, and flat memory however large N is.

Deterministic: the same arguments give the same bytes.
"""
import sys

FRAMES = [
    ("/usr/local/lib/python3.12/dist-packages/vllm/v1/worker/gpu_model_runner.py", 3120, "load_model"),
    ("/usr/local/lib/python3.12/dist-packages/vllm/model_executor/model_loader/base_loader.py", 56, "load_model"),
    ("/usr/local/lib/python3.12/dist-packages/vllm/model_executor/model_loader/utils.py", 109, "process_weights_after_loading"),
    ("/usr/local/lib/python3.12/dist-packages/vllm/model_executor/layers/quantization/fp8.py", 412, "process_weights_after_loading"),
    ("/usr/local/lib/python3.12/dist-packages/vllm/model_executor/kernels/linear/scaled_mm/deep_gemm.py", 96, "process_weights_after_loading"),
    ("/usr/local/lib/python3.12/dist-packages/vllm/model_executor/layers/quantization/utils/fp8_utils.py", 1077, "deepgemm_post_process_weight_scale_block"),
    ("/usr/local/lib/python3.12/dist-packages/vllm/utils/deep_gemm.py", 494, "transform_sf_into_required_layout"),
]
ERROR = ("RuntimeError: Assertion error (/workspace/.deps/deepgemm-src/csrc/apis/layout.hpp:60): "
         "Unknown SF transformation")


def stamp(t):
    t = int(t)
    return "03-%02d %02d:%02d:%02d" % (1 + t // 86400, t // 3600 % 24, t // 60 % 60, t % 60)


def traceback(out, prefix, t):
    head = "%s ERROR %s [multiproc_executor.py:743] " % (prefix, stamp(t))
    out.append(head + "Traceback (most recent call last):")
    for f, n, fn in FRAMES:
        out.append(head + '  File "%s", line %d, in %s' % (f, n, fn))
    out.append(head + ERROR)


def crash_loop(n):
    w = sys.stdout.write
    for r in range(n):
        t0 = 600 * r
        api = "(APIServer pid=%d)" % (100000 + r)
        w("%s INFO %s [utils.py:243] non-default args: {'model': 'Qwen/Qwen3-30B-A3B-FP8', "
          "'tensor_parallel_size': 4}\n" % (api, stamp(t0)))
        w("(EngineCore_DP0 pid=%d) INFO %s [core.py:93] Initializing a V1 LLM engine (v0.11.2) with "
          "config: model='Qwen/Qwen3-30B-A3B-FP8', quantization=fp8, tensor_parallel_size=4\n"
          % (200000 + r, stamp(t0 + 1)))
        for k in range(4):
            w("(Worker_TP%d pid=%d) INFO %s [gpu_model_runner.py:2602] Starting to load model "
              "Qwen/Qwen3-30B-A3B-FP8...\n" % (k, 300000 + 10 * r + k, stamp(t0 + 5)))
        out = []
        for k in range(4):
            traceback(out, "(Worker_TP%d pid=%d)" % (k, 300000 + 10 * r + k), t0 + 30)
        w("\n".join(out) + "\n")


def repeat(n):
    w = sys.stdout.write
    w("(EngineCore_DP0 pid=7) INFO %s [core.py:93] Initializing a V1 LLM engine (v0.11.2) with "
      "config: model='Qwen/Qwen3-30B-A3B-FP8', quantization=fp8, tensor_parallel_size=1\n" % stamp(0))
    chunk = []
    for i in range(n):
        traceback(chunk, "(Worker_TP0 pid=8)", 1 + i // 10)
        if len(chunk) > 10000:
            w("\n".join(chunk) + "\n")
            chunk = []
    if chunk:
        w("\n".join(chunk) + "\n")


if __name__ == "__main__":
    if len(sys.argv) != 3 or sys.argv[1] not in ("crash-loop", "repeat"):
        sys.exit("usage: state_bounds.py crash-loop|repeat N")
    {"crash-loop": crash_loop, "repeat": repeat}[sys.argv[1]](int(sys.argv[2]))
