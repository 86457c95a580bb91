#!/usr/bin/env python3
"""Deterministic generator of a realistic fingerprintd replay workload (DESIGN.md §7).

One vLLM V1 deployment with 4 interleaved tensor-parallel workers (Worker_TP0..3), an engine core
and an API server, as one container log:

  * ~99% INFO: worker / engine-core / API-server lines with the ANSI process prefix
    (`\\x1b[0;36m(Worker_TP1 pid=8761)\\x1b[0;0m INFO 03-04 10:15:22 [file.py:NNN] ...`), uvicorn
    access lines, `Received request` / `Added request` lines, throughput metrics lines, NCCL INFO
    lines without a process prefix, safetensors progress bars;
  * a sprinkling of WARNING lines;
  * about every --failure-every-mb MB (randomised 0.5x..1.5x) a failure: a headered vLLM
    `logger.exception` traceback on every rank (20-40 lines per rank, ranks interleaved), the
    engine core's headered traceback, the unheadered `Process EngineCore_DP0:` and API-server
    tracebacks, then a restart (new pids, startup lines, NCCL bootstrap). Kinds: the target
    (DeepGEMM `Unknown SF transformation` in process_weights_after_loading), CUDA OOM in the
    profile run, DeepGEMM `Unknown recipe` in warm-up, a KeyError in load_weights (one rank), an
    NCCL watchdog timeout.

Same arguments => byte-identical output. The injected failures are summarised on stderr.

    bench/gen_log.py --size-mb 1024 --format plain --seed 1 -o /tmp/fingerprintd-bench/plain.log
"""
import argparse
import datetime as _dt
import random
import sys

ESC = "\x1b"
VLLM = "/usr/local/lib/python3.12/dist-packages/vllm"
TORCH = "/usr/local/lib/python3.12/dist-packages/torch"
MODEL = "Qwen/Qwen3-30B-A3B-FP8"
TP = 4
START = _dt.datetime(2026, 3, 4, 10, 15, 22, tzinfo=_dt.timezone.utc)

PROMPT_WORDS = (
    "the of and to in is that for it as with was on be by this are or from at which an have not "
    "summarize explain translate write code python function kubernetes cluster latency gpu "
    "memory tensor parallel cache request batch token model inference quantization fp8 review "
    "customer order invoice shipping refund weather report meeting notes schedule email draft"
).split()

FAILURE_KINDS = (
    # (name, weight)
    ("unknown_sf_transformation", 35),
    ("cuda_oom_profile_run", 20),
    ("unknown_recipe_warmup", 20),
    ("load_weights_keyerror", 10),
    ("nccl_watchdog_timeout", 15),
)


class Gen:
    def __init__(self, seed, fmt):
        self.r = random.Random(seed)
        self.cri = fmt == "cri"
        self.ns = 0  # simulated nanoseconds since START
        self._sec = -1
        self.hdr = ""  # "03-04 10:15:22"
        self.cri_sec = ""  # "2026-03-04T10:15:22"
        self.out = []
        self.lines = 0
        self.levels = {"INFO": 0, "WARNING": 0, "ERROR": 0, "other": 0}
        self.failures = {k: 0 for k, _ in FAILURE_KINDS}
        self.restarts = 0
        self.req = self.r.getrandbits(64)
        self.new_pids()

    # --- time -----------------------------------------------------------------------------
    def tick(self, max_ns):
        self.ns += self.r.randrange(max_ns)
        s = self.ns // 1_000_000_000
        if s != self._sec:
            self._sec = s
            t = START + _dt.timedelta(seconds=s)
            self.hdr = t.strftime("%m-%d %H:%M:%S")
            self.cri_sec = t.strftime("%Y-%m-%dT%H:%M:%S")

    # --- emission -------------------------------------------------------------------------
    def emit(self, line, level="INFO", stream="stdout"):
        self.lines += 1
        self.levels[level] += 1
        if self.cri:
            self.out.append(f"{self.cri_sec}.{self.ns % 1_000_000_000:09d}Z {stream} F {line}\n")
        else:
            self.out.append(line + "\n")

    def new_pids(self):
        base = self.r.randrange(100, 30000)
        self.api = f"{ESC}[0;36m(APIServer pid=1){ESC}[0;0m "
        self.core_pid = base
        self.core = f"{ESC}[0;36m(EngineCore_DP0 pid={base}){ESC}[0;0m "
        self.wpid = [base + 60 + i for i in range(TP)]
        self.w = [f"{ESC}[0;36m(Worker_TP{i} pid={self.wpid[i]}){ESC}[0;0m " for i in range(TP)]
        self.host = f"vllm-qwen3-{self.r.getrandbits(32):08x}"

    def req_id(self):
        self.req = (self.req * 6364136223846793005 + 1442695040888963407) & (2**64 - 1)
        return f"chatcmpl-{self.req:016x}{(self.req >> 7) & 0xFFFFFFFF:08x}"

    # --- steady state ---------------------------------------------------------------------
    def serve(self, nbytes_target, size):
        """Steady-state serving lines until the chunk reaches nbytes_target (approx)."""
        r = self.r
        rnd = r.random
        rr = r.randrange
        emit = self.emit
        api, core, w = self.api, self.core, self.w
        out = self.out
        words = PROMPT_WORDS
        nwords = len(words)
        acc = 0
        last_metrics = self.ns
        while acc < nbytes_target:
            n0 = len(out)
            self.tick(8_000_000)
            h = self.hdr
            x = rnd()
            if x < 0.30:
                ip = f"10.244.{rr(256)}.{rr(1, 255)}:{rr(32768, 60999)}"
                path = "/v1/chat/completions" if rnd() < 0.8 else "/v1/completions"
                if rnd() < 0.97:
                    emit(f'{api}INFO:     {ip} - "POST {path} HTTP/1.1" 200 OK')
                else:
                    emit(f'{api}INFO:     {ip} - "GET /metrics HTTP/1.1" 200 OK')
            elif x < 0.52:
                rid = self.req_id()
                k = rr(8, 60)
                prompt = " ".join(words[rr(nwords)] for _ in range(k))
                emit(
                    f"{api}INFO {h} [logger.py:49] Received request {rid}: prompt: "
                    f"'<|im_start|>user\\n{prompt}<|im_end|>\\n<|im_start|>assistant\\n', "
                    f"params: SamplingParams(n=1, presence_penalty=0.0, frequency_penalty=0.0, "
                    f"repetition_penalty=1.0, temperature={rr(0, 11) / 10:.1f}, top_p=1.0, top_k=0, "
                    f"min_p=0.0, seed=None, stop=[], stop_token_ids=[], bad_words=[], "
                    f"include_stop_str_in_output=False, ignore_eos=False, max_tokens={rr(64, 4096)}, "
                    f"min_tokens=0, logprobs=None, prompt_logprobs=None, skip_special_tokens=True, "
                    f"spaces_between_special_tokens=True, truncate_prompt_tokens=None, "
                    f"structured_outputs=None, extra_args=None), prompt_token_ids: None, "
                    f"prompt_embeds shape: None, lora_request: None."
                )
            elif x < 0.70:
                emit(f"{api}INFO {h} [async_llm.py:348] Added request {self.req_id()}.")
            elif x < 0.88:
                # the TP ranks log the same event, interleaved
                y = rnd()
                if y < 0.5:
                    n = rr(1024, 9000)
                    msg = f"[custom_all_reduce.py:203] Registering {n} cuda graph addresses"
                elif y < 0.75:
                    msg = (f"[gpu_model_runner.py:2338] Cached {rr(1, 512)} request states, "
                           f"{rr(0, 64)} preempted, step time {rnd() * 40:.2f} ms")
                elif y < 0.9:
                    msg = (f"[block_pool.py:321] Freed {rr(16, 4096)} KV cache blocks, "
                           f"{rr(10000, 44000)} free")
                else:
                    msg = f"[shm_broadcast.py:466] Reader rank {rr(TP)} caught up, lag {rr(1, 40)} blocks"
                order = list(range(TP))
                r.shuffle(order)
                for i in order:
                    emit(f"{w[i]}INFO {h} {msg}")
            elif x < 0.93:
                rank = rr(TP)
                ch = rr(32)
                emit(
                    f"{self.host}:{self.wpid[rank]}:{self.wpid[rank] + rr(1, 400)} [{rank}] NCCL INFO "
                    f"Channel {ch:02d}/0 : {rank}[{rank}] -> {(rank + 1) % TP}[{(rank + 1) % TP}] "
                    f"via P2P/CUMEM/read",
                    "INFO", "stderr")
            elif x < 0.96:
                emit(f"{core}INFO {h} [scheduler.py:{rr(200, 900)}] Scheduled {rr(1, 256)} requests, "
                     f"{rr(0, 131072)} tokens, KV cache usage {rnd() * 100:.1f}%")
            elif x < 0.9945:
                emit(f"{api}INFO {h} [serving_chat.py:{rr(200, 1400)}] Finished request "
                     f"{self.req_id()} in {rnd() * 30:.3f} s, {rr(1, 4096)} generated tokens")
            else:
                y = rnd()
                if y < 0.35:
                    emit(f"{api}WARNING {h} [protocol.py:94] The following fields were present in "
                         f"the request but ignored: {{'stream_options'}}", "WARNING")
                elif y < 0.6:
                    emit(f"{core}WARNING {h} [scheduler.py:1512] Sequence group {self.req_id()} is "
                         f"preempted by PreemptionMode.RECOMPUTE mode because there is not enough KV "
                         f"cache space. This can affect the end-to-end performance. Increase "
                         f"gpu_memory_utilization or tensor_parallel_size to provide more KV cache "
                         f"memory. total_num_cumulative_preemption={rr(1, 500)}", "WARNING")
                elif y < 0.8:
                    emit(f"{w[rr(TP)]}WARNING {h} [shm_broadcast.py:466] No available shared memory "
                         f"broadcast block found in 60 second. This typically happens when some "
                         f"processes are hanging or doing some time-consuming work (e.g. "
                         f"compilation).", "WARNING")
                else:
                    emit(f"{api}WARNING {h} [serving_chat.py:{rr(100, 300)}] Request "
                         f"{self.req_id()} exceeded max_tokens hint; output truncated", "WARNING")
            if self.ns - last_metrics > 10_000_000_000:
                last_metrics = self.ns
                emit(f"{api}INFO {h} [loggers.py:236] Engine 000: Avg prompt throughput: "
                     f"{rnd() * 9000:.1f} tokens/s, Avg generation throughput: {rnd() * 3000:.1f} "
                     f"tokens/s, Running: {rr(0, 256)} reqs, Waiting: {rr(0, 40)} reqs, GPU KV cache "
                     f"usage: {rnd() * 100:.1f}%, Prefix cache hit rate: {rnd() * 100:.1f}%")
            for s in out[n0:]:
                acc += len(s)
        return acc

    # --- startup (after each restart) -----------------------------------------------------
    def startup(self):
        r, rr = self.r, self.r.randrange
        api, core, w = self.api, self.core, self.w
        e = self.emit

        def t():
            self.tick(40_000_000)
            return self.hdr

        e(f"INFO {t()} [__init__.py:216] Automatically detected platform cuda.")
        e(f"{api}INFO {t()} [api_server.py:1885] vLLM API server version 0.11.2")
        e(f"{api}INFO {t()} [utils.py:243] non-default args: {{'model_tag': '{MODEL}', 'host': "
          f"'0.0.0.0', 'model': '{MODEL}', 'max_model_len': 32768, 'tensor_parallel_size': {TP}, "
          f"'gpu_memory_utilization': 0.9, 'enable_log_requests': True}}")
        e(f"{api}INFO {t()} [model.py:631] Resolved architecture: Qwen3MoeForCausalLM")
        e(f"{api}INFO {t()} [model.py:1745] Using max model len 32768")
        e(f"{api}INFO {t()} [scheduler.py:225] Chunked prefill is enabled with max_num_batched_tokens=8192.")
        e(f"INFO {t()} [__init__.py:216] Automatically detected platform cuda.")
        e(f"{core}INFO {t()} [core.py:730] Waiting for init message from front-end.")
        e(f"{core}INFO {t()} [core.py:93] Initializing a V1 LLM engine (v0.11.2) with config: "
          f"model='{MODEL}', speculative_config=None, tokenizer='{MODEL}', skip_tokenizer_init=False, "
          f"tokenizer_mode=auto, revision=None, tokenizer_revision=None, trust_remote_code=False, "
          f"dtype=torch.bfloat16, max_seq_len=32768, download_dir=None, load_format=auto, "
          f"tensor_parallel_size={TP}, pipeline_parallel_size=1, data_parallel_size=1, "
          f"disable_custom_all_reduce=False, quantization=fp8, enforce_eager=False, "
          f"kv_cache_dtype=auto, device_config=cuda, structured_outputs_config="
          f"StructuredOutputsConfig(backend='auto', disable_fallback=False, "
          f"disable_any_whitespace=False, disable_additional_properties=False, reasoning_parser=''), "
          f"observability_config=ObservabilityConfig(show_hidden_metrics_for_version=None, "
          f"otlp_traces_endpoint=None, collect_detailed_traces=None), seed=0, "
          f"served_model_name={MODEL}, enable_prefix_caching=True, enable_chunked_prefill=True, "
          f"pooler_config=None, compilation_config={{\"level\":3,\"debug_dump_path\":\"\","
          f"\"cache_dir\":\"\",\"backend\":\"\",\"custom_ops\":[\"none\"],\"splitting_ops\":"
          f"[\"vllm.unified_attention\",\"vllm.unified_attention_with_output\"],"
          f"\"use_inductor\":true,\"cudagraph_mode\":[2,1],\"use_cudagraph\":true,"
          f"\"cudagraph_capture_sizes\":[512,504,496,488,480,472,464,456,448,440,432,424,416,408,"
          f"400,392,384,376,368,360,352,344,336,328,320,312,304,296,288,280,272,264,256,248,240,232,"
          f"224,216,208,200,192,184,176,168,160,152,144,136,128,120,112,104,96,88,80,72,64,56,48,40,"
          f"32,24,16,8,4,2,1],\"max_capture_size\":512,\"local_cache_dir\":null}}")
        e(f"{core}WARNING {t()} [multiproc_executor.py:720] Reducing Torch parallelism from 24 "
          f"threads to 1 to avoid unnecessary CPU contention. Set OMP_NUM_THREADS in the external "
          f"environment to tune this value as needed.", "WARNING")
        for i in range(TP):
            e(f"INFO {t()} [__init__.py:216] Automatically detected platform cuda.")
        # NCCL bootstrap, unprefixed
        comm = [f"0x{r.getrandbits(32):08x}" for _ in range(TP)]
        cid = f"0x{r.getrandbits(64):016x}"
        for i in range(TP):
            e(f"{w[i]}INFO {t()} [pynccl.py:103] vLLM is using nccl==2.27.3")
        nccl = []
        for i in range(TP):
            p = f"{self.host}:{self.wpid[i]}:{self.wpid[i]} [{i}] NCCL INFO "
            nccl.append([
                p + "Bootstrap: Using eth0:10.42.0.17<0>",
                p + "cudaDriverVersion 12090",
                p + "NCCL version 2.27.3+cuda12.9",
                p + "NET/Plugin: Could not find: libnccl-net.so. Using internal net plugin.",
                p + "NET/Socket : Using [0]eth0:10.42.0.17<0>",
                p + "Using network Socket",
                p + f"ncclCommInitRank comm {comm[i]} rank {i} nranks {TP} cudaDev {i} nvmlDev {i} "
                    f"busId {i + 1}000 commId {cid} - Init START",
                p + f"comm {comm[i]} rank {i} nRanks {TP} nNodes 1 localRanks {TP} localRank {i} MNNVL 0",
            ] + [p + f"Channel {c:02d}/0 : {i}[{i}] -> {(i + 1) % TP}[{(i + 1) % TP}] via P2P/CUMEM/read"
                 for c in range(16)] + [
                p + "Connected all rings, use ring PXN 0 GDR 1",
                p + f"ncclCommInitRank comm {comm[i]} rank {i} nranks {TP} cudaDev {i} nvmlDev {i} "
                    f"busId {i + 1}000 commId {cid} - Init COMPLETE",
            ])
        self.interleave(nccl, level="INFO", stream="stderr", tick=2_000_000)
        for i in range(TP):
            e(f"{w[i]}WARNING {t()} [custom_all_reduce.py:154] Custom allreduce is disabled because "
              f"your platform lacks GPU P2P capability or P2P test failed. To silence this warning, "
              f"specify disable_custom_all_reduce=True explicitly.", "WARNING")
            e(f"{w[i]}INFO {t()} [parallel_state.py:1325] rank {i} in world size {TP} is assigned as "
              f"DP rank 0, PP rank 0, PCP rank 0, TP rank {i}, EP rank {i}")
        for i in range(TP):
            e(f"{w[i]}INFO {t()} [gpu_model_runner.py:2602] Starting to load model {MODEL}...")
            e(f"{w[i]}INFO {t()} [cuda.py:403] Using FLASH_ATTN attention backend out of potential "
              f"backends: ['FLASH_ATTN', 'FLASHINFER', 'TRITON_ATTN', 'FLEX_ATTENTION']")
            e(f"{w[i]}INFO {t()} [fp8.py:177] Selected DeepGemmFp8BlockScaledMMKernel for Fp8LinearMethod")
        e(f"{w[0]}INFO {t()} [weight_utils.py:413] Using model weights format ['*.safetensors']")
        for k in range(17):
            e(f"{w[0]}Loading safetensors checkpoint shards: {k * 100 // 16:3d}% Completed | {k}/16 "
              f"[00:{k:02d}<00:{16 - k:02d},  {0.9 + r.random() / 5:.2f}s/it]")
        for i in range(TP):
            e(f"{w[i]}INFO {t()} [default_loader.py:314] Loading weights took {10 + r.random() * 8:.2f} seconds")
        self.restarts += 1

    # --- failures ---------------------------------------------------------------------------
    def interleave(self, per_rank, level="ERROR", stream="stdout", tick=300_000):
        """Merge per-rank line lists preserving each rank's order, randomly interleaved."""
        rr = self.r.randrange
        idx = [0] * len(per_rank)
        live = [i for i in range(len(per_rank)) if per_rank[i]]
        while live:
            k = live[rr(len(live))]
            self.tick(tick)
            line = per_rank[k][idx[k]]
            if callable(line):
                line = line()
            self.emit(line, level, stream)
            idx[k] += 1
            if idx[k] == len(per_rank[k]):
                live.remove(k)

    def frames(self, spec):
        """spec: list of (file, line, func, source, caret_len or 0) -> traceback body lines."""
        out = []
        for f, ln, fn, src, caret in spec:
            out.append(f'  File "{f}", line {ln}, in {fn}')
            if src:
                out.append(f"    {src}")
                if caret:
                    ind = len(src) - len(src.lstrip()) + 4 + 0
                    out.append(" " * (ind + 4) + "^" * caret)
        return out

    def worker_traceback(self, kind, rank):
        mp = f"{VLLM}/v1/executor/multiproc_executor.py"
        if kind == "unknown_sf_transformation":
            head = "WorkerProc failed to start."
            body = self.frames([
                (mp, 701, "worker_main", "worker = WorkerProc(*args, **kwargs)", 27),
                (mp, 542, "__init__", "self.worker.load_model()", 0),
                (f"{VLLM}/v1/worker/gpu_worker.py", 264, "load_model",
                 "self.model_runner.load_model(eep_scale_up=eep_scale_up)", 0),
                (f"{VLLM}/v1/worker/gpu_model_runner.py", 2608, "load_model",
                 "self.model = model_loader.load_model(", 24),
                (f"{VLLM}/model_executor/model_loader/base_loader.py", 56, "load_model",
                 "process_weights_after_loading(model, model_config, target_device)", 0),
                (f"{VLLM}/model_executor/model_loader/utils.py", 116, "process_weights_after_loading",
                 "quant_method.process_weights_after_loading(module)", 0),
                (f"{VLLM}/model_executor/layers/quantization/fp8.py", 455, "process_weights_after_loading",
                 "self.fp8_linear.process_weights_after_loading(layer)", 0),
                (f"{VLLM}/model_executor/kernels/linear/scaled_mm/deep_gemm.py", 91,
                 "process_weights_after_loading",
                 "dg_weight, dg_weight_scale = deepgemm_post_process_fp8_weight_block(", 39),
                (f"{VLLM}/model_executor/layers/quantization/utils/fp8_utils.py", 1052,
                 "deepgemm_post_process_fp8_weight_block", "dg_ws = transform_sf_into_required_layout(", 34),
                (f"{VLLM}/utils/deep_gemm.py", 494, "transform_sf_into_required_layout",
                 "return _transform_sf_into_required_layout_impl(", 40),
            ])
            exc = ("RuntimeError: Assertion error (/workspace/.deps/deepgemm-src/csrc/apis/layout.hpp:60): "
                   "Unknown SF transformation")
        elif kind == "cuda_oom_profile_run":
            head = "WorkerProc hit an exception."
            body = self.frames([
                (mp, 817, "worker_busy_loop", "output = func(*args, **kwargs)", 21),
                (f"{TORCH}/utils/_contextlib.py", 120, "decorate_context", "return func(*args, **kwargs)", 21),
                (f"{VLLM}/v1/worker/gpu_worker.py", 283, "determine_available_memory",
                 "self.model_runner.profile_run()", 0),
                (f"{VLLM}/v1/worker/gpu_model_runner.py", 3354, "profile_run",
                 "hidden_states, last_hidden_states = self._dummy_run(", 16),
                (f"{TORCH}/utils/_contextlib.py", 120, "decorate_context", "return func(*args, **kwargs)", 21),
                (f"{VLLM}/v1/worker/gpu_model_runner.py", 3109, "_dummy_run", "outputs = self.model(", 11),
                (f"{TORCH}/nn/modules/module.py", 1775, "_wrapped_call_impl",
                 "return self._call_impl(*args, **kwargs)", 32),
                (f"{TORCH}/nn/modules/module.py", 1786, "_call_impl",
                 "return forward_call(*args, **kwargs)", 29),
                (f"{VLLM}/model_executor/layers/fused_moe/layer.py", 2061, "forward_cuda",
                 "final_hidden_states = self.quant_method.apply(", 0),
            ])
            free = 0.5 + self.r.random()
            exc = (f"torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU {rank} "
                   f"has a total capacity of 79.19 GiB of which {free:.2f} GiB is free. Including "
                   f"non-PyTorch memory, this process has 77.6{rank} GiB memory in use. Of the allocated "
                   f"memory 75.12 GiB is allocated by PyTorch, and 1.02 GiB is reserved by PyTorch but "
                   f"unallocated. If reserved but unallocated memory is large try setting "
                   f"PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True to avoid fragmentation.  See "
                   f"documentation for Memory Management  "
                   f"(https://pytorch.org/docs/stable/notes/cuda.html#environment-variables)")
        elif kind == "unknown_recipe_warmup":
            head = "WorkerProc hit an exception."
            w = f"{VLLM}/model_executor/warmup"
            body = self.frames([
                (mp, 817, "worker_busy_loop", "output = func(*args, **kwargs)", 21),
                (f"{VLLM}/v1/worker/gpu_worker.py", 404, "compile_or_warm_up_model", "kernel_warmup(self)", 0),
                (f"{w}/kernel_warmup.py", 46, "kernel_warmup", "deep_gemm_warmup(model, max_tokens)", 0),
                (f"{w}/deep_gemm_warmup.py", 394, "deep_gemm_warmup",
                 "deepgemm_fp8_gemm_nt_warmup(model, max_tokens)", 0),
                (f"{w}/deep_gemm_warmup.py", 209, "deepgemm_fp8_gemm_nt_warmup",
                 "_deepgemm_fp8_gemm_nt_warmup(w=w, ws=ws, max_tokens=max_tokens, pbar=pbar)", 0),
                (f"{w}/deep_gemm_warmup.py", 178, "_deepgemm_fp8_gemm_nt_warmup",
                 "fp8_gemm_nt((a1q, a1q_scales), (w, ws), out)", 0),
                (f"{VLLM}/utils/deep_gemm.py", 190, "fp8_gemm_nt",
                 "return _fp8_gemm_nt_impl(*args, disable_ue8m0_cast=not is_deep_gemm_e8m0_used(), **kwargs)", 83),
            ])
            exc = ("RuntimeError: Assertion error (/workspace/.deps/deepgemm-src/csrc/apis/../jit_kernels/"
                   "impls/../heuristics/../../utils/layout.hpp:76): Unknown recipe")
        elif kind == "load_weights_keyerror":
            head = "WorkerProc failed to start."
            body = self.frames([
                (mp, 701, "worker_main", "worker = WorkerProc(*args, **kwargs)", 27),
                (mp, 542, "__init__", "self.worker.load_model()", 0),
                (f"{VLLM}/v1/worker/gpu_worker.py", 264, "load_model",
                 "self.model_runner.load_model(eep_scale_up=eep_scale_up)", 0),
                (f"{VLLM}/v1/worker/gpu_model_runner.py", 2608, "load_model",
                 "self.model = model_loader.load_model(", 24),
                (f"{VLLM}/model_executor/model_loader/base_loader.py", 49, "load_model",
                 "self.load_weights(model, model_config)", 0),
                (f"{VLLM}/model_executor/model_loader/default_loader.py", 305, "load_weights",
                 "loaded_weights = model.load_weights(self.get_all_weights(model_config, model))", 0),
                (f"{VLLM}/model_executor/models/qwen3_moe.py", 721, "load_weights",
                 "return loader.load_weights(weights)", 0),
                (f"{VLLM}/model_executor/models/utils.py", 291, "load_weights",
                 "autoloaded_weights = set(self._load_module(\"\", self.module, weights))", 0),
                (f"{VLLM}/model_executor/models/qwen3_moe.py", 640, "load_weights",
                 "param = params_dict[name]", 0),
            ])
            exc = f"KeyError: 'model.layers.{self.r.randrange(48)}.mlp.experts.w2_weight_scale_inv'"
        else:
            raise ValueError(kind)
        return head, ["Traceback (most recent call last):"] + body + [exc]

    def failure(self, kind):
        r, rr = self.r, self.r.randrange
        h = self.hdr
        self.failures[kind] += 1
        if kind == "nccl_watchdog_timeout":
            per = []
            seq = rr(1000, 90000)
            for i in range(TP):
                # C++ (c10d) output bypasses vLLM's Python-level process prefix
                p = f"[rank{i}]:[E304 {h[6:]}.{rr(10**6):06d} {self.wpid[i]} ProcessGroupNCCL.cpp:632] "
                per.append([
                    p + f"[PG ID 2 PG GUID 3 Rank {i}] Watchdog caught collective operation timeout: "
                        f"WorkNCCL(SeqNum={seq}, OpType=ALLREDUCE, NumelIn=1048576, NumelOut=1048576, "
                        f"Timeout(ms)=600000) ran for 600047 milliseconds before timing out.",
                    p.replace("632]", "2268]") + f"[PG ID 2 PG GUID 3 Rank {i}]  failure detected by "
                        f"watchdog at work sequence id: {seq} PG status: last enqueued work: {seq}, "
                        f"last completed work: {seq - 1}",
                    p.replace("632]", "2310]") + f"[PG ID 2 PG GUID 3 Rank {i}] To avoid data "
                        f"inconsistency, we are taking the entire process down.",
                    p.replace("632]", "1595]") + f"[PG ID 2 PG GUID 3 Rank {i}] Process group watchdog "
                        f"thread terminated with exception: [Rank {i}] Watchdog caught collective "
                        f"operation timeout: WorkNCCL(SeqNum={seq}, OpType=ALLREDUCE, NumelIn=1048576, "
                        f"NumelOut=1048576, Timeout(ms)=600000) ran for 600047 milliseconds before timing out.",
                    "Exception raised from checkTimeout at /pytorch/torch/csrc/distributed/c10d/"
                                "ProcessGroupNCCL.cpp:635 (most recent call first):",
                ] + [f"frame #{k}: c10d::ProcessGroupNCCL::Watchdog::run() + 0x{rr(16**3):x} "
                                 f"(0x7f{r.getrandbits(40):010x} in {TORCH}/lib/libtorch_cuda.so)"
                     for k in range(rr(6, 12))])
            self.interleave(per, level="other", stream="stderr")
            return
        per = []
        ranks = [rr(TP)] if kind == "load_weights_keyerror" else list(range(TP))
        for i in ranks:
            head, tb = self.worker_traceback(kind, i)
            loc = "[multiproc_executor.py:743]" if head.endswith("start.") else "[multiproc_executor.py:822]"
            pre = f"{self.w[i]}ERROR "

            def mk(text, pre=pre, loc=loc):
                return lambda: f"{pre}{self.hdr} {loc} {text}"
            per.append([mk(head)] + [mk(x) for x in tb])
        self.interleave(per)
        self.tick(800_000_000)
        cp = f"{self.core}ERROR {self.hdr} [core.py:843] "
        cfr = self.frames([
            (f"{VLLM}/v1/engine/core.py", 834, "run_engine_core",
             "engine_core = EngineCoreProc(*args, **kwargs)", 31),
            (f"{VLLM}/v1/engine/core.py", 610, "__init__", "super().__init__(", 0),
            (f"{VLLM}/v1/engine/core.py", 102, "__init__",
             "self.model_executor = executor_class(vllm_config)", 27),
            (f"{VLLM}/v1/executor/abstract.py", 101, "__init__", "self._init_executor()", 0),
            (f"{VLLM}/v1/executor/multiproc_executor.py", 172, "_init_executor",
             "self.workers = WorkerProc.wait_for_ready(unready_workers)", 42),
            (f"{VLLM}/v1/executor/multiproc_executor.py", 660, "wait_for_ready", "raise e from None", 0),
        ])
        exc = ("Exception: WorkerProc initialization failed due to an exception in a background "
               "process. See stack trace for root cause.")
        for x in ["EngineCore failed to start.", "Traceback (most recent call last):"] + cfr + [exc]:
            self.tick(100_000)
            self.emit(cp + x, "ERROR")
        self.emit(f"{self.core}Process EngineCore_DP0:", "other", "stderr")
        for x in ["Traceback (most recent call last):"] + self.frames([
                ("/usr/lib/python3.12/multiprocessing/process.py", 314, "_bootstrap", "self.run()", 0),
                ("/usr/lib/python3.12/multiprocessing/process.py", 108, "run",
                 "self._target(*self._args, **self._kwargs)", 0),
                (f"{VLLM}/v1/engine/core.py", 847, "run_engine_core", "raise e", 0)]) + cfr[:6] + [exc]:
            self.emit(f"{self.core}{x}", "other", "stderr")
        self.tick(500_000_000)
        for x in ["Traceback (most recent call last):"] + self.frames([
                ("/usr/local/bin/vllm", 10, "<module>", "sys.exit(main())", 6),
                (f"{VLLM}/entrypoints/cli/main.py", 73, "main", "args.dispatch_function(args)", 0),
                (f"{VLLM}/entrypoints/cli/serve.py", 59, "cmd", "uvloop.run(run_server(args))", 0),
                (f"{VLLM}/v1/engine/core_client.py", 479, "__init__",
                 "with launch_core_engines(vllm_config, executor_class, log_stats) as (", 0),
                ("/usr/lib/python3.12/contextlib.py", 144, "__exit__", "next(self.gen)", 0),
                (f"{VLLM}/v1/engine/utils.py", 921, "launch_core_engines",
                 "wait_for_engine_startup(", 0),
                (f"{VLLM}/v1/engine/utils.py", 978, "wait_for_engine_startup",
                 "raise RuntimeError(", 0)]) + [
                "RuntimeError: Engine core initialization failed. See root cause above. "
                "Failed core proc(s): {}"]:
            self.emit(f"{self.api}{x}", "other", "stderr")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--size-mb", type=float, default=64, help="output size in MiB (default 64)")
    ap.add_argument("--format", choices=("plain", "cri"), default="plain")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--failure-every-mb", type=float, default=4.0,
                    help="mean MiB of serving between failures (default 4)")
    ap.add_argument("-o", "--output", default="-", help="output file (default stdout)")
    a = ap.parse_args()

    target = int(a.size_mb * 1024 * 1024)
    g = Gen(a.seed, a.format)
    f = sys.stdout.buffer if a.output == "-" else open(a.output, "wb")
    written = 0
    nlines = 0
    chunk = 4 * 1024 * 1024
    kinds = [k for k, _ in FAILURE_KINDS]
    weights = [wt for _, wt in FAILURE_KINDS]
    next_failure = int(a.failure_every_mb * 1024 * 1024 * (0.5 + g.r.random()))
    g.startup()
    done = False
    while not done:
        # serve up to the next failure or the next chunk boundary
        budget = min(chunk, next_failure - written, target - written)
        if budget > 0:
            g.serve(budget, target)
        data = "".join(g.out).encode()
        g.out.clear()
        if written + len(data) >= target:
            # cut at the last line boundary at or after target
            cut = data.find(b"\n", max(0, target - written - 1))
            data = data[: cut + 1] if cut >= 0 else data
            done = True
        f.write(data)
        written += len(data)
        nlines += data.count(b"\n")
        if not done and written >= next_failure:
            g.tick(2_000_000_000)
            kind = g.r.choices(kinds, weights)[0]
            g.failure(kind)
            g.tick(g.r.randrange(60_000_000_000, 300_000_000_000))  # crash-loop back-off
            g.new_pids()
            g.startup()
            next_failure = written + int(a.failure_every_mb * 1024 * 1024 * (0.5 + g.r.random()))
    if f is not sys.stdout.buffer:
        f.close()
    tot = sum(g.levels.values())
    print(f"gen_log: {written} bytes, {nlines} lines, format={a.format} seed={a.seed}; levels "
          f"(of {tot} generated, incl. the cut tail): "
          + ", ".join(f"{k}={v} ({100 * v / max(tot, 1):.2f}%)" for k, v in g.levels.items())
          + "; failures injected: " + ", ".join(f"{k}={v}" for k, v in g.failures.items() if v)
          + f"; startups={g.restarts}", file=sys.stderr)


if __name__ == "__main__":
    main()
