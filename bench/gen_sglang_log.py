#!/usr/bin/env python3
"""Deterministic generator of an SGLang-shaped fingerprintd replay workload (issue 15).

bench/gen_log.py writes what a vLLM deployment logs; this writes what an SGLang server with
4 tensor-parallel ranks logs, in SGLang's own header (`[2026-03-04 10:15:22 TP0] ...`, and
`[2026-03-04 10:15:22] ...` for the main process), as one plain container log:

  * start-up: server_args, per-rank `Init torch distributed`, `Load weight begin/end`,
    `KV Cache is allocated`, `Capture cuda graph begin/end` (ranks interleaved), then uvicorn's
    start lines and `The server is fired up and ready to roll!`;
  * steady state, ~99% of the bytes: TP0's `Prefill batch.` and `Decode batch.` lines and the
    main process's uvicorn access lines, many per second;
  * about every --failure-every-mb MB (randomised 0.5x..1.5x) a failure on every rank, each as
    `[... TPn] Scheduler hit an exception: Traceback ...` (ranks one after the other, as the
    scheduler processes write them), then `Received sigquit from a child process` and
    `kill_process_tree` from the main process, and a restart. Kinds: the target (DeepGEMM
    `Unknown SF transformation` in process_weights_after_loading), `name 'deep_gemm' is not
    defined` (DeepGEMM gated off for the GPU), CUDA out of memory in cuda graph capture.

Its batch and access lines are quiet lines that buffer-first replay skips whole, as it skips
vLLM's (bench/README.md, "SGLang-shaped replay"). Same arguments => byte-identical output. The
injected failures are summarised on stderr.

    bench/gen_sglang_log.py --size-mb 512 --seed 1 -o /tmp/fingerprintd-bench/sglang-512M-seed1.log
"""
import datetime as _dt
import random

import server_workload

SGL = "/sgl-workspace/sglang/python/sglang/srt"
MODEL = "deepseek-ai/DeepSeek-V3-0324"
TP = 4
START = _dt.datetime(2026, 3, 4, 10, 15, 22, tzinfo=_dt.timezone.utc)

FAILURE_KINDS = (
    # (name, weight)
    ("unknown_sf_transformation", 50),
    ("deep_gemm_not_defined", 30),
    ("cuda_oom_cuda_graph", 20),
)

# (file, line, function, source line) from the scheduler down to the model runner.
SCHEDULER_FRAMES = (
    ("managers/scheduler.py", 2712, "run_scheduler_process",
     "scheduler = Scheduler(server_args, port_args, gpu_id, tp_rank, moe_ep_rank, pp_rank, dp_rank)"),
    ("managers/scheduler.py", 554, "__init__", "self.init_model_worker()"),
    ("managers/scheduler.py", 1062, "init_model_worker", "self.tp_worker = TpModelWorker("),
    ("managers/tp_worker.py", 237, "__init__", "self._model_runner = ModelRunner("),
    ("model_executor/model_runner.py", 329, "__init__", "self.initialize(min_per_gpu_memory)"),
)

TAILS = {
    "unknown_sf_transformation": (
        (
            ("model_executor/model_runner.py", 403, "initialize", "self.load_model()"),
            ("model_executor/model_runner.py", 789, "load_model", "self.model = get_model("),
            ("model_loader/loader.py", 471, "load_model",
             "quant_method.process_weights_after_loading(module)"),
            ("layers/quantization/fp8.py", 412, "process_weights_after_loading",
             "requant_weight_ue8m0_inplace(layer.weight, layer.weight_scale_inv, block_size)"),
        ),
        ("/usr/local/lib/python3.12/dist-packages/deep_gemm/utils/layout.py", 25,
         "transform_sf_into_required_layout",
         "return _C.transform_sf_into_required_layout(*args, **kwargs)"),
        "RuntimeError: Assertion error (/sgl-workspace/DeepGEMM/csrc/apis/layout.hpp:60): "
        "Unknown SF transformation",
    ),
    "deep_gemm_not_defined": (
        (
            ("model_executor/model_runner.py", 460, "initialize", "self.init_device_graphs()"),
            ("model_executor/model_runner.py", 2270, "init_device_graphs",
             "self.graph_runner = CudaGraphRunner(self)"),
            ("model_executor/cuda_graph_runner.py", 388, "__init__", "self.capture()"),
            ("layers/mhc.py", 96, "mhc_pre", "tf32_hc_prenorm_gemm(x, weight, out)"),
        ),
        (SGL + "/layers/deep_gemm_wrapper/entrypoint.py", 118, "tf32_hc_prenorm_gemm",
         "deep_gemm.tf32_hc_prenorm_gemm(*args)"),
        "NameError: name 'deep_gemm' is not defined",
    ),
    "cuda_oom_cuda_graph": (
        (
            ("model_executor/model_runner.py", 460, "initialize", "self.init_device_graphs()"),
            ("model_executor/model_runner.py", 2270, "init_device_graphs",
             "self.graph_runner = CudaGraphRunner(self)"),
            ("model_executor/cuda_graph_runner.py", 388, "__init__", "self.capture()"),
        ),
        (SGL + "/model_executor/cuda_graph_runner.py", 512, "capture_one_batch_size",
         "out = run_once()"),
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a "
        "total capacity of 31.36 GiB of which 1.21 GiB is free. Including non-PyTorch memory, "
        "this process has 30.14 GiB memory in use.",
    ),
}


class Gen:
    def __init__(self, seed):
        self.r = random.Random(seed)
        self.us = 0  # simulated microseconds since START
        self._sec = -1
        self.ts = ""
        self.out = []
        self.bytes = 0

    def tick(self, lo_us, hi_us):
        self.us += self.r.randint(lo_us, hi_us)
        sec = self.us // 1_000_000
        if sec != self._sec:
            self._sec = sec
            self.ts = (START + _dt.timedelta(seconds=sec)).strftime("%Y-%m-%d %H:%M:%S")

    def emit(self, line):
        self.out.append(line)
        self.bytes += len(line) + 1

    def main(self, msg):
        self.emit(f"[{self.ts}] {msg}")

    def rank(self, tp, msg):
        self.emit(f"[{self.ts} TP{tp}] {msg}")

    def startup(self):
        r = self.r
        self.tick(1000, 5000)
        self.main(f"server_args=ServerArgs(model_path='{MODEL}', tokenizer_path='{MODEL}', "
                  f"tp_size={TP}, dp_size=1, mem_fraction_static=0.82, port=30000, "
                  f"random_seed={r.randint(1, 10**9)}, enable_dp_attention=False)")
        for step in ("Init torch distributed begin.", "Init torch distributed ends. mem usage=0.21 GB",
                     "Load weight begin. avail mem=93.12 GB"):
            for tp in r.sample(range(TP), TP):
                self.tick(1000, 90000)
                self.rank(tp, step)
        for tp in r.sample(range(TP), TP):
            self.tick(1_000_000, 3_000_000)
            self.rank(tp, f"Load weight end. type=DeepseekV3ForCausalLM, dtype=torch.bfloat16, "
                          f"avail mem={r.uniform(20, 30):.2f} GB, mem usage={r.uniform(60, 70):.2f} GB.")
        for tp in r.sample(range(TP), TP):
            self.tick(1000, 50000)
            self.rank(tp, f"KV Cache is allocated. #tokens: {r.randint(1_000_000, 3_000_000)}, "
                          f"K size: 8.12 GB, V size: 8.12 GB")
        for tp in r.sample(range(TP), TP):
            self.tick(1000, 50000)
            self.rank(tp, "Capture cuda graph begin. This can take up to several minutes. "
                          f"avail mem={r.uniform(3, 5):.2f} GB")
        return self

    def serving(self):
        r = self.r
        for tp in r.sample(range(TP), TP):
            self.tick(2_000_000, 9_000_000)
            self.rank(tp, f"Capture cuda graph end. Time elapsed: {r.uniform(5, 30):.2f} s. "
                          f"mem usage={r.uniform(0.5, 2):.2f} GB. avail mem={r.uniform(1, 3):.2f} GB.")
        for msg in ("INFO:     Started server process [1]", "INFO:     Waiting for application startup.",
                    "INFO:     Application startup complete.",
                    "INFO:     Uvicorn running on http://0.0.0.0:30000 (Press CTRL+C to quit)",
                    "The server is fired up and ready to roll!"):
            self.tick(1000, 20000)
            self.main(msg)

    def steady_line(self):
        r = self.r
        self.tick(1000, 60000)
        x = r.random()
        if x < 0.45:
            self.rank(0, f"Decode batch. #running-req: {r.randint(1, 64)}, #token: "
                         f"{r.randint(1000, 99999)}, token usage: 0.{r.randint(10, 99)}, cuda graph: "
                         f"True, gen throughput (token/s): {r.uniform(100, 3000):.2f}, #queue-req: "
                         f"{r.randint(0, 9)}, ")
        elif x < 0.65:
            self.rank(0, f"Prefill batch. #new-seq: {r.randint(1, 4)}, #new-token: "
                         f"{r.randint(10, 4000)}, #cached-token: {r.randint(0, 4000)}, token usage: "
                         f"0.{r.randint(10, 99)}, #running-req: {r.randint(1, 64)}, #queue-req: "
                         f"{r.randint(0, 9)}, ")
        else:
            self.main(f"INFO:     10.244.{r.randint(0, 255)}.{r.randint(0, 255)}:"
                      f"{r.randint(30000, 60000)} - \"POST /v1/chat/completions HTTP/1.1\" 200 OK")

    def failure(self, kind):
        frames, last, exception = TAILS[kind]
        for tp in self.r.sample(range(TP), TP):
            self.tick(1000, 30000)
            self.rank(tp, "Scheduler hit an exception: Traceback (most recent call last):")
            for path, line, func, src in SCHEDULER_FRAMES + frames:
                self.emit(f'  File "{SGL}/{path}", line {line}, in {func}')
                self.emit(f"    {src}")
            path, line, func, src = last
            self.emit(f'  File "{path}", line {line}, in {func}')
            self.emit(f"    {src}")
            self.emit(exception)
            self.emit("")
        for _ in range(2):
            self.tick(1000, 5000)
            self.main("Received sigquit from a child process. It usually means the child failed.")
            self.main("kill_process_tree called: parent_pid=1, include_parent=True, pid=1")
        self.tick(10_000_000, 30_000_000)  # the pod restarts


def main():
    args = server_workload.parser(__doc__).parse_args()
    g = Gen(args.seed)
    server_workload.generate(g, lambda: g.startup().serving(), args, FAILURE_KINDS, "gen_sglang_log")


if __name__ == "__main__":
    main()
