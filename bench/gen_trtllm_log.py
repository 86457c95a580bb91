#!/usr/bin/env python3
"""Deterministic generator of a TensorRT-LLM-shaped fingerprintd replay workload.

bench/gen_log.py writes what a vLLM deployment logs, bench/gen_sglang_log.py an SGLang server;
this writes what `trtllm-serve` (TensorRT-LLM's PyTorch backend) with 4 tensor-parallel MPI ranks
logs, in TensorRT-LLM's own headers, as one plain container log:

  * `[01/16/2026-06:20:17] [TRT-LLM] [RANK 2] [I] ...` for the ranks (`[E]` for their failures;
    with `--rank-tag mpi` the ranks write `[MPI_Rank 2]`), `[01/16/2026-06:20:17] [TRT-LLM] [I]
    ...` for the main process (`[W]`, `[E]` too), `[TensorRT-LLM][INFO] ...` for the C++ runtime
    of each rank (no rank), `[TensorRT-LLM] TensorRT-LLM version: ...` at import, tqdm bars and
    uvicorn's own lines bare;
  * start-up: the main process's backend and `start MpiSession with 4 workers`, then per
    rank (ranks interleaved) `Starting TensorRT-LLM init.`, the attention features, the weight
    prefetch, tqdm bars of the weight loading, `Model init total`, the KV cache estimate and
    allocation, CUDA graph warm-up; then uvicorn's start lines;
  * steady state, over 99% of the bytes: every rank's per-iteration line (`iter = N, global_rank =
    ..., host_step_time = ...ms, ..., num_scheduled_requests: N, states = {...}`, trtllm-serve
    with `print_iter_log`), the ranks interleaved, and uvicorn's access lines, many per second;
  * about every --failure-every-mb MB (randomised 0.5x..1.5x) the server is stopped (uvicorn's
    shutdown lines), starts again and fails on every rank: `[RANK n] [E] Failed to initialize
    executor on rank n: MSG` and `[RANK n] [E] Traceback (most recent call last):` with the
    traceback's lines bare (one logger.error each, ranks one after the other), then the main
    process's `Executor worker initialization error` and its chained `RuntimeError: Executor
    worker returned error` traceback, bare; then the pod restarts and starts up cleanly. Kinds:
    the target (DeepGEMM `Unknown SF transformation` in post_load_weights, after the weights
    loaded), CUDA out of memory while loading the weights (`Error executing load_single_module`
    glued onto a tqdm bar, as the ranks write it), an NCCL error at the communicator's first
    barrier (then Open MPI's `MPI_ABORT was invoked` box).

Modelled on the shapes of the TensorRT-LLM logs of ../shared/corpus/real (FORMATS.md); every line
is synthetic. Its iteration and access lines are quiet lines that buffer-first replay skips
whole (bench/README.md, "TensorRT-LLM-shaped replay"). Same arguments => byte-identical output.
The injected failures are summarised on stderr.

    bench/gen_trtllm_log.py --size-mb 512 --seed 1 -o /tmp/fingerprintd-bench/trtllm.log
"""
import datetime as _dt
import random

import server_workload

TRT = "/usr/local/lib/python3.12/dist-packages/tensorrt_llm"
TORCH = "/usr/local/lib/python3.12/dist-packages/torch"
MODEL = "Qwen/Qwen3-235B-A22B-FP8"
VERSION = "1.1.0"
TP = 4
PORT = 8000
KV_BYTES_PER_TOKEN = 48128  # 94 layers x K and V x 1 KV head per rank x 128 x bf16
START = _dt.datetime(2026, 1, 16, 6, 20, 17, tzinfo=_dt.timezone.utc)

FAILURE_KINDS = (
    # (name, weight)
    ("unknown_sf_transformation", 50),
    ("cuda_oom_weight_loading", 25),
    ("nccl_error_init", 25),
)

# (file under TRT, line, function, source line): the MPI worker down to the model engine.
WORKER_FRAMES = (
    ("executor/worker.py", 1147, "worker_main", "worker: GenerationExecutorWorker = worker_cls("),
    ("executor/worker.py", 153, "__init__", "self.engine = _create_py_executor("),
    ("executor/worker.py", 126, "_create_py_executor", "_executor = create_executor(**args)"),
)

# From the executor's creation down to the model's loading, where both load failures start.
MODEL_ENGINE_FRAMES = (
    ("_torch/pyexecutor/py_executor_creator.py", 317, "create_py_executor",
     "model_engine = PyTorchModelEngine("),
    ("_torch/pyexecutor/model_engine.py", 385, "__init__", "self.model = self._load_model("),
)

# (frames under TRT, frames outside it (absolute path), exception lines) per failure kind.
TAILS = {
    "unknown_sf_transformation": (
        MODEL_ENGINE_FRAMES + (
            ("_torch/pyexecutor/model_engine.py", 1206, "_load_model", "module.post_load_weights()"),
            ("_torch/modules/fused_moe/fused_moe_deepgemm.py", 412, "post_load_weights",
             "self.quant_method.post_load_weights(self)"),
            ("_torch/modules/fused_moe/quantization.py", 1087, "post_load_weights",
             "transformed_scale = transform_sf_into_required_layout("),
        ),
        (
            ("/usr/local/lib/python3.12/dist-packages/deep_gemm/utils/layout.py", 25,
             "transform_sf_into_required_layout",
             "return _C.transform_sf_into_required_layout(*args, **kwargs)"),
        ),
        ("RuntimeError: Assertion error (/workspace/.deps/deepgemm-src/csrc/apis/layout.hpp:60): "
         "Unknown SF transformation",),
    ),
    "cuda_oom_weight_loading": (
        MODEL_ENGINE_FRAMES + (
            ("_torch/pyexecutor/model_engine.py", 1174, "_load_model", "model.load_weights(weights)"),
            ("_torch/models/modeling_qwen3_moe.py", 512, "load_weights",
             "_load_weights_impl(self, weights, params_map)"),
            ("_torch/models/modeling_utils.py", 871, "_load_weights_impl",
             "run_concurrently(load_single_module, args_list, pbar=pbar)"),
            ("_torch/models/modeling_utils.py", 802, "run_concurrently", "result = future.result()"),
        ),
        (
            ("/usr/lib/python3.12/concurrent/futures/_base.py", 449, "result",
             "return self.__get_result()"),
            ("/usr/lib/python3.12/concurrent/futures/_base.py", 401, "__get_result",
             "raise self._exception"),
            ("/usr/lib/python3.12/concurrent/futures/thread.py", 59, "run",
             "result = self.fn(*self.args, **self.kwargs)"),
            (TRT + "/_torch/models/modeling_utils.py", 845, "load_single_module",
             "module.load_weights(weights=module_weights)"),
            (TRT + "/_torch/modules/fused_moe/quantization.py", 251, "load_weights",
             "dst_w3_w1_weight = torch.empty_like(module.w3_w1_weight.data)"),
        ),
        None,  # the OOM message, per rank (its GPU)
    ),
    "nccl_error_init": (
        (
            ("_torch/pyexecutor/py_executor_creator.py", 262, "create_py_executor",
             "dist = TorchDist(mapping=mapping)"),
            ("_torch/distributed/communicator.py", 402, "__init__",
             "torch.distributed.barrier(group=self.tp_group)"),
        ),
        (
            (TORCH + "/distributed/c10d_logger.py", 81, "wrapper", "return func(*args, **kwargs)"),
            (TORCH + "/distributed/distributed_c10d.py", 4811, "barrier",
             "work = group.barrier(opts=opts)"),
        ),
        ("torch.distributed.DistBackendError: NCCL error in: /opt/pytorch/pytorch/torch/csrc/"
         "distributed/c10d/ProcessGroupNCCL.cpp:3699, unhandled cuda error (run with "
         "NCCL_DEBUG=INFO for details), NCCL version 2.27.3",
         "ncclUnhandledCudaError: Call to CUDA function failed.",
         "Last error:",
         "Cuda failure 'peer access is not supported between these two devices'"),
    ),
}

# The main process's traceback under the proxy's re-raise, bare.
MAIN_FRAMES = (
    ("/usr/local/bin/trtllm-serve", 8, "<module>", "sys.exit(main())"),
    ("/usr/local/lib/python3.12/dist-packages/click/core.py", 1442, "__call__",
     "return self.main(*args, **kwargs)"),
    ("/usr/local/lib/python3.12/dist-packages/click/core.py", 788, "invoke",
     "return __callback(*args, **kwargs)"),
    (TRT + "/commands/serve.py", 361, "serve", "launch_server(host, port, llm_args)"),
    (TRT + "/commands/serve.py", 168, "launch_server", "llm = PyTorchLLM(**llm_args)"),
    (TRT + "/llmapi/llm.py", 1082, "__init__", "super().__init__(model, tokenizer, tokenizer_mode,"),
    (TRT + "/llmapi/llm.py", 236, "__init__", "self._build_model()"),
    (TRT + "/llmapi/llm.py", 1033, "_build_model", "self._executor = self._executor_cls.create("),
    (TRT + "/executor/executor.py", 481, "create", "return GenerationExecutorProxy("),
    (TRT + "/executor/proxy.py", 104, "__init__", "self._start_executor_workers(worker_kwargs)"),
    (TRT + "/executor/proxy.py", 338, "_start_executor_workers", "raise RuntimeError("),
)

PATHS = ("/v1/chat/completions", "/v1/chat/completions", "/v1/chat/completions", "/v1/completions")


class Gen:
    def __init__(self, seed, rank_tag="rank"):
        self.r = random.Random(seed)
        self.tag = "MPI_Rank" if rank_tag == "mpi" else "RANK"
        self.us = 0  # simulated microseconds since START
        self._sec = -1
        self.ts = ""  # "01/16/2026-06:20:17", the header's
        self.iso = ""  # "2026-01-16 06:20:17", the iteration line's own
        self.out = []
        self.bytes = 0
        self.iter = 0
        self.requests = 0  # requests fetched since the start, as every rank counts them
        self.pid = 1
        self.kv_tokens = 0

    def tick(self, lo_us, hi_us):
        self.us += self.r.randint(lo_us, hi_us)
        sec = self.us // 1_000_000
        if sec != self._sec:
            self._sec = sec
            t = START + _dt.timedelta(seconds=sec)
            self.ts = t.strftime("%m/%d/%Y-%H:%M:%S")
            self.iso = t.strftime("%Y-%m-%d %H:%M:%S")

    def emit(self, line):
        self.out.append(line)
        self.bytes += (len(line) if line.isascii() else len(line.encode("utf-8"))) + 1

    def main(self, msg, level="I"):
        self.emit(f"[{self.ts}] [TRT-LLM] [{level}] {msg}")

    def rank(self, n, msg, level="I"):
        self.emit(f"[{self.ts}] [TRT-LLM] [{self.tag} {n}] [{level}] {msg}")

    def cpp(self, msg, level="INFO"):
        self.emit(f"[TensorRT-LLM][{level}] {msg}")

    def ranks(self, msgs, lo_us=1000, hi_us=90000):
        """Every rank writes msgs[i] (a function of the rank), the ranks interleaved."""
        for m in msgs:
            for n in self.r.sample(range(TP), TP):
                self.tick(lo_us, hi_us)
                m(n)

    @staticmethod
    def bar(desc, done, total, elapsed, rate):
        """A tqdm line as the ranks print it (no header)."""
        filled = done * 10 // total
        part = "" if filled == 10 else " ▏▎▍▌▋▊▉"[(done * 80 // total) % 8]
        cells = ("█" * filled + part).ljust(10)
        left = (total - done) / rate if rate else 0
        return (f"{desc}: {done * 100 // total:3d}%|{cells}| {done}/{total} "
                f"[{int(elapsed) // 60:02d}:{int(elapsed) % 60:02d}<{int(left) // 60:02d}:"
                f"{int(left) % 60:02d}, {rate:.2f}it/s]")

    # --- start-up -------------------------------------------------------------------------
    def launch(self):
        """The main process up to the MPI workers' first lines."""
        r = self.r
        self.pid = r.randint(2, 400)
        self.tick(1000, 5000)
        self.emit(f"[TensorRT-LLM] TensorRT-LLM version: {VERSION}")
        self.tick(100_000, 900_000)
        self.main("Using LLM with PyTorch backend")
        self.main("Set nccl_plugin to None.")
        self.main("neither checkpoint_format nor checkpoint_loader were provided, "
                  "checkpoint_format will be set to HF.")
        self.main("Logger level already set from environment. Discard new verbosity: info", "W")
        self.tick(1000, 50000)
        self.main(f"start MpiSession with {TP} workers")
        self.emit("rank 0 using MpiPoolSession to spawn MPI processes")
        self.tick(2_000_000, 6_000_000)
        self.ranks((lambda n: self.emit(f"[TensorRT-LLM] TensorRT-LLM version: {VERSION}"),
                    lambda n: self.rank(n, "Starting TensorRT-LLM init."),
                    lambda n: self.cpp("Set logger level to INFO"),
                    lambda n: self.rank(n, "TensorRT-LLM inited."),
                    lambda n: self.cpp("Refreshed the MPI local session")))
        return self

    def init_ranks(self):
        """Per rank: the executor's configuration, before the weights load."""
        r = self.r
        self.ranks((
            lambda n: self.rank(n, "ATTENTION RUNTIME FEATURES:  AttentionRuntimeFeatures("
                                   "chunked_prefill=False, cache_reuse=True, "
                                   "has_speculative_draft_tokens=False, chunk_size=8192)"),
            lambda n: self.rank(n, 'Validating KV Cache config against kv_cache_dtype="auto"'),
            lambda n: self.rank(n, f"Use {r.uniform(58.5, 59.5):.2f} GB for model weights."),
            lambda n: self.rank(n, f"Prefetching {r.uniform(58.5, 59.5):.2f}GB checkpoint files."),
        ))
        return self

    def load_weights(self, upto=None):
        """The ranks' tqdm bars while the weights load; stops at the fraction upto (OOM)."""
        r = self.r
        for n in r.sample(range(TP), TP):
            self.tick(500_000, 3_000_000)
            rate = r.uniform(8, 12)
            self.emit(self.bar("Loading safetensors weights in parallel", 24, 24, 24 / rate, rate))
        total = 1523
        steps = (0.25, 0.5, 0.75, 1.0) if upto is None else (0.25, 0.5, upto)
        for frac in steps:
            for n in r.sample(range(TP), TP):
                self.tick(500_000, 6_000_000)
                rate = r.uniform(30, 45)
                done = int(total * frac)
                if frac == upto:
                    return self  # the rank's last bar is the failure's (glued)
                self.emit(self.bar("Loading weights concurrently", done, total, done / rate, rate))
        return self

    def after_load(self):
        """Per rank: model init done, KV cache sized and allocated, CUDA graphs warmed up."""
        r = self.r
        kv_gib = r.uniform(97, 99)  # what the ranks agree on (the smallest)
        self.kv_tokens = int(kv_gib * 2**30 / KV_BYTES_PER_TOKEN)
        self.ranks((
            lambda n: self.emit(f"Model init total -- {r.uniform(45, 75):.2f}s"),
            lambda n: self.rank(n, "max_seq_len is not specified, using inferred value 40960"),
            lambda n: self.rank(n, "Using Sampler: TorchSampler"),
            lambda n: self.cpp("Number of tokens per block: 32."),
            lambda n: self.cpp("[MemUsageChange] Allocated 0.37 GiB for max tokens in paged KV "
                               "cache (8224)."),
            lambda n: self.rank(n, "Memory used after loading model weights (inside torch) in "
                                   f"memory usage profiling: {r.uniform(59.5, 61):.2f} GiB"),
            lambda n: self.rank(n, "Peak memory during memory usage profiling (torch + non-torch): "
                                   f"{r.uniform(64, 66):.2f} GiB, available KV cache memory when "
                                   f"calculating max tokens: {kv_gib + r.uniform(0, 0.4):.2f} GiB, "
                                   f"fraction is set 0.9, kv size is {KV_BYTES_PER_TOKEN}. device "
                                   "total memory 178.35 GiB, , tmp kv_mem 0.37 GiB"),
            lambda n: self.rank(n, f"Estimated max tokens in KV cache : {self.kv_tokens}"),
            lambda n: self.cpp("[MemUsageChange] Allocated "
                               f"{self.kv_tokens * KV_BYTES_PER_TOKEN / 2**30:.2f} GiB for max "
                               f"tokens in paged KV cache ({self.kv_tokens})."),
            lambda n: self.rank(n, "Creating CUDA graph instances for 34 batch sizes."),
        ), 1000, 400_000)
        for bs in (256, 128, 64, 32, 16, 8, 4, 2, 1):
            self.ranks((lambda n: self.rank(n, f"Run generation only CUDA graph warmup for batch "
                                               f"size={bs}, draft_len=0"),), 1000, 200_000)
        return self

    def serving(self):
        for msg in (f"INFO:     Started server process [{self.pid}]",
                    "INFO:     Waiting for application startup.",
                    "INFO:     Application startup complete.",
                    f"INFO:     Uvicorn running on http://0.0.0.0:{PORT} (Press CTRL+C to quit)"):
            self.tick(1000, 20000)
            self.emit(msg)
        return self

    def startup(self):
        return self.launch().init_ranks().load_weights().after_load().serving()

    # --- steady state ---------------------------------------------------------------------
    def steady_line(self):
        r = self.r
        self.tick(1000, 60000)
        if r.random() < 0.8:
            # one iteration, every rank's line (their order varies)
            self.iter += 1
            reqs = r.randint(1, 96)
            ctx = r.randint(0, 3) if r.random() < 0.3 else 0
            ctx_tokens = sum(r.randint(64, 4096) for _ in range(ctx))
            host = r.uniform(8, 60)
            device = host * r.uniform(0.85, 1.0)
            req = self.requests
            for n in r.sample(range(TP), TP):
                self.tick(0, 2000)
                self.rank(n, f"iter = {self.iter}, global_rank = {n}, rank = {n}, "
                             f"currank_total_requests = {req}/{req}, host_step_time = "
                             f"{host + r.uniform(-0.5, 0.5)!r}ms, prev_device_step_time = "
                             f"{device + r.uniform(-0.5, 0.5)!r}ms, timestamp = {self.iso}, "
                             f"num_scheduled_requests: {reqs}, states = {{'num_ctx_requests': "
                             f"{ctx}, 'num_ctx_tokens': {ctx_tokens}, 'num_generation_tokens': "
                             f"{reqs - ctx}}}")
        else:
            ip = f"10.0.{r.randint(0, 255)}.{r.randint(1, 254)}:{r.randint(32768, 60999)}"
            if r.random() < 0.96:
                self.requests += 1
                self.emit(f'INFO:     {ip} - "POST {r.choice(PATHS)} HTTP/1.1" 200 OK')
            else:
                path = r.choice(("/metrics", "/health"))
                self.emit(f'INFO:     {ip} - "GET {path} HTTP/1.1" 200 OK')

    # --- failure --------------------------------------------------------------------------
    def oom_message(self, n):
        r = self.r
        free = r.randint(20, 900)
        return (f"CUDA out of memory. Tried to allocate 1.50 GiB. GPU {n} has a total capacity of "
                f"178.35 GiB of which {free}.00 MiB is free. Process {self.pid + 1 + n} has "
                f"{178.35 - free / 1024:.2f} GiB memory in use. Of the allocated memory "
                f"{r.uniform(174, 176):.2f} GiB is allocated by PyTorch, and "
                f"{r.uniform(100, 900):.2f} MiB is reserved by PyTorch but unallocated. If "
                "reserved but unallocated memory is large try setting "
                "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True to avoid fragmentation.  See "
                "documentation for Memory Management  "
                "(https://pytorch.org/docs/stable/notes/cuda.html#environment-variables)")

    def traceback(self, frames):
        self.emit("Traceback (most recent call last):")
        for path, line, func, src in frames:
            self.emit(f'  File "{path}", line {line}, in {func}')
            self.emit(f"    {src}")

    def failure(self, kind):
        r = self.r
        # the running server is stopped (a redeploy) and the new one starts
        for msg in ("INFO:     Shutting down", "INFO:     Waiting for application shutdown.",
                    "INFO:     Application shutdown complete.",
                    f"INFO:     Finished server process [{self.pid}]"):
            self.tick(1000, 200_000)
            self.emit(msg)
        self.tick(5_000_000, 20_000_000)
        self.launch().init_ranks()
        if kind == "unknown_sf_transformation":
            self.load_weights()
        elif kind == "cuda_oom_weight_loading":
            self.load_weights(upto=r.uniform(0.8, 0.98))
        ours, theirs, exception = TAILS[kind]
        frames = tuple((f"{TRT}/{p}", ln, fn, src) for p, ln, fn, src in WORKER_FRAMES + ours)
        frames += theirs
        first = None
        for n in r.sample(range(TP), TP):
            self.tick(1000, 30000)
            lines = exception
            if kind == "cuda_oom_weight_loading":
                msg = self.oom_message(n)
                lines = ("torch.OutOfMemoryError: " + msg,)
                done = int(1523 * r.uniform(0.8, 0.98))
                rate = r.uniform(30, 45)
                # tqdm's \r-rewritten bar without its newline, the rank's error glued on
                self.emit(self.bar("Loading weights concurrently", done, 1523, done / rate, rate)
                          + f"[{self.ts}] [TRT-LLM] [{self.tag} {n}] [E] Error executing "
                          f"load_single_module with args ('model.layers.{r.randint(0, 93)}"
                          f".mlp.experts', CutlassFusedMoE()): {msg}")
            self.rank(n, f"Failed to initialize executor on rank {n}: "
                         f"{lines[0].split(': ', 1)[1]}", "E")
            # logger.error(traceback.format_exc()): one header, the rest of the lines bare
            self.rank(n, "Traceback (most recent call last):", "E")
            for path, line, func, src in frames:
                self.emit(f'  File "{path}", line {line}, in {func}')
                self.emit(f"    {src}")
            for line in lines:
                self.emit(line)
            first = first or lines
        if kind == "nccl_error_init":
            self.tick(1000, 50000)
            bad = r.randrange(TP)
            for line in ("-" * 74,
                         f"MPI_ABORT was invoked on rank {bad} in communicator MPI_COMM_WORLD",
                         f"  Proc: [[{r.randint(10000, 65000)},1],{bad}]",
                         "  Errorcode: 1",
                         "",
                         "NOTE: invoking MPI_ABORT causes Open MPI to kill all MPI processes.",
                         "You may or may not see output from other processes, depending on",
                         "exactly when Open MPI kills them.",
                         "-" * 74):
                self.emit(line)
        # the main process: the proxy logs the worker's error and re-raises it, chained
        self.tick(10_000, 500_000)
        self.main(f"Executor worker initialization error: {first[0]}", "E")
        self.emit(first[0])
        self.emit("")
        self.emit("The above exception was the direct cause of the following exception:")
        self.emit("")
        self.traceback(MAIN_FRAMES)
        self.emit("RuntimeError: Executor worker returned error")
        self.tick(10_000_000, 30_000_000)  # the pod restarts
        self.iter = self.requests = 0


def main():
    ap = server_workload.parser(__doc__)
    ap.add_argument("--rank-tag", choices=("rank", "mpi"), default="rank",
                    help="the ranks' tag: [RANK n] (default) or [MPI_Rank n]")
    args = ap.parse_args()
    g = Gen(args.seed, args.rank_tag)
    server_workload.generate(g, g.startup, args, FAILURE_KINDS, "gen_trtllm_log")


if __name__ == "__main__":
    main()
