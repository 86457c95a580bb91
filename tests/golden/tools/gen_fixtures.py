#!/usr/bin/env python3
"""Regenerates every fixture under tests/golden/ and examples/ (deterministic).

    python3 tests/golden/tools/gen_fixtures.py        # from the repository root

The logs are synthetic, modelled on the shapes in docs/log-formats.md; no real log is copied.
"""

import datetime as dt
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from vlog import Line, Proc, exc, frame, raw, rec, write_cri, write_docker, write_plain  # noqa: E402
from vllm_scenes import UNKNOWN_RECIPE, UNKNOWN_SF, Cfg, Scene, T  # noqa: E402

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
G = os.path.join(ROOT, "tests", "golden")
EX = os.path.join(ROOT, "examples")


def out(*parts):
    p = os.path.join(*parts)
    os.makedirs(os.path.dirname(p), exist_ok=True)
    return p


# ---------------------------------------------------------------------------------- target


def target_tp2(**kw):
    """TP=2 block-FP8 checkpoint, both ranks fail in process_weights_after_loading."""
    c = Cfg(**kw)
    s = Scene(c)
    s.startup()
    s.startup_failure_tail(s.at(s.load_done + 2), range(c.tp), lambda r: s.tb_unknown_sf())
    return s


def gen_target_files():
    s = target_tp2(seed=11, nccl_debug=True)
    write_plain(out(G, "vllm_tp2_unknown_sf.log"), s.lines)

    # TP=4, compressed-tensors FP8-block, RTX PRO 6000 Blackwell; each worker block ends with the
    # blank headered line some versions print after the exception.
    c4 = Cfg(model="/models/Llama-3.3-70B-Instruct-FP8-block", arch="LlamaForCausalLM", tp=4,
             quant="compressed-tensors", scheme="CompressedTensorsW8A8Fp8",
             device="NVIDIA RTX PRO 6000 Blackwell Workstation Edition", moe=False, nk="N=2560,K=8192",
             start=dt.datetime(2026, 2, 17, 8, 3, 51), api_pid=1, engine_pid=211,
             worker_pids=[278, 279, 280, 281], host="gpu-ws-04", ip="10.20.7.31", seed=4, shards=15,
             load_secs=[37.61, 38.02, 37.88, 38.47], nccl_debug=True, max_len=65536, mem_util=0.92,
             psm="psm_0b7d31fa", ipc="ipc:///tmp/7c1d2e3f-9a8b-4c5d-8e6f-0a1b2c3d4e5f")
    s4 = Scene(c4)
    s4.startup()
    s4.startup_failure_tail(s4.at(s4.load_done + 3), range(4), lambda r: s4.tb_unknown_sf(), trailing_blank=True)
    write_plain(out(G, "vllm_tp4_unknown_sf.log"), s4.lines)
    d = os.path.join(G, "vllm_tp4_unknown_sf_per_worker")
    for r, w in enumerate(s4.workers):
        write_plain(out(d, f"worker_tp{r}.log"), [l for l in s4.lines if l.owner is w])
    write_plain(out(d, "engine_core.log"),
                [l for l in s4.lines if l.owner not in s4.workers])

    # two deployments replayed together; same worker names, different pids, overlapping time
    a = target_tp2(model="Qwen/Qwen3-30B-A3B-FP8", start=dt.datetime(2026, 3, 9, 14, 20, 5), api_pid=1,
                   engine_pid=143, worker_pids=[209, 210], seed=21, host="node-a", ip="10.61.2.8",
                   psm="psm_2f0e91aa", ipc="ipc:///tmp/0a4d5c61-1be2-4f27-9d3e-8c60b1d7f412")
    b = target_tp2(model="Qwen/Qwen3-32B-FP8", arch="Qwen3ForCausalLM", moe=False, nk="N=5120,K=5120",
                   start=dt.datetime(2026, 3, 9, 14, 20, 19), api_pid=7, engine_pid=388, worker_pids=[455, 456],
                   seed=22, shards=17, load_secs=[20.14, 20.65], host="node-b", ip="10.61.2.9", torch_sm_warning=True,
                   device="NVIDIA RTX PRO 6000 Blackwell Server Edition",
                   psm="psm_9c3b7d10", ipc="ipc:///tmp/5e8f0c2d-7a91-4b36-a0d4-2f6e9b1c8d73")
    write_plain(out(G, "two_deployments_interleaved", "deployment_a.log"), a.lines)
    write_plain(out(G, "two_deployments_interleaved", "deployment_b.log"), b.lines)

    # Kubernetes CRI; containerd on this node runs with max_container_log_line_size = 1024, so the
    # long engine-config line arrives as P, P, ..., F fragments.
    k = target_tp2(start=dt.datetime(2026, 3, 4, 10, 15, 22), api_pid=1, engine_pid=96, worker_pids=[161, 162],
                   seed=31, host="qwen3-fp8-7d9f8c6b5-x2x9k", ip="10.244.3.41",
                   psm="psm_61d0a7c3", ipc="ipc:///tmp/c4f1b2a9-3e5d-4a7b-9c0e-1d2f3a4b5c6d")
    write_cri(out(G, "cri", "var", "log", "pods",
                  "inference_qwen3-fp8-7d9f8c6b5-x2x9k_0f3e6a2c-91b4-4d8e-a7f5-3c2b1d0e9f84", "vllm", "0.log"),
              k.lines, seed=32, max_line=1024)

    # Docker json-file
    dk = target_tp2(start=dt.datetime(2026, 1, 22, 16, 41, 9), api_pid=1, engine_pid=120, worker_pids=[186, 187],
                    seed=41, host="e2f7c9a01b3d", ip="172.17.0.2",
                    psm="psm_d4e5f6a7", ipc="ipc:///tmp/9b8a7c6d-5e4f-4321-8fed-cba987654321")
    write_docker(out(G, "docker", "container-json.log"), dk.lines, seed=42)

    # demo: the target, with the full start-up a newcomer would see
    ex = target_tp2(start=dt.datetime(2026, 3, 12, 9, 30, 44), api_pid=1, engine_pid=172, worker_pids=[239, 240],
                    seed=51, host="rtx5090-box", ip="192.168.1.50", nccl_debug=True, torch_sm_warning=False,
                    psm="psm_4c2a8e19", ipc="ipc:///tmp/3d2c1b0a-9f8e-47d6-b5c4-a3b2c1d0e9f8")
    write_plain(out(EX, "qwen3-fp8-rtx5090", "worker.log"), ex.lines)


# ---------------------------------------------------------------------------------- one-line pastes


def gen_pastes():
    with open(out(G, "one_line_paste.log"), "wb") as f:
        f.write((UNKNOWN_SF + "\n").encode())
    with open(out(G, "one_line_paste_elided.log"), "wb") as f:
        f.write(b"RuntimeError: Assertion error (.../deepgemm-src/csrc/apis/layout.hpp:60): Unknown SF transformation\n")
    with open(out(G, "one_line_paste_prefixed.log"), "wb") as f:
        f.write(b"(EngineCore pid=412) " + UNKNOWN_SF.encode() + b"\n")


if __name__ == "__main__":
    gen_target_files()
    gen_pastes()
    from wild import gen_wild  # noqa: E402

    gen_wild()
    import siblings  # noqa: E402

    siblings.generate(out, G, EX)
