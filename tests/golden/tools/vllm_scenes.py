"""vLLM V1 (multiproc executor, v0.11.2-era log shapes) start-up and failure scenes."""

import datetime as dt
import random

from vlog import Line, Proc, exc, frame, interleave, multi, raw, rec

T = dt.timedelta


class Cfg:
    def __init__(self, **kw):
        # defaults: a TP=2 block-FP8 MoE on two RTX 5090
        self.model = "Qwen/Qwen3-30B-A3B-FP8"
        self.arch = "Qwen3MoeForCausalLM"
        self.tp = 2
        self.quant = "fp8"
        self.scheme = "Fp8LinearMethod"
        self.kernel = "DeepGemmFp8BlockScaledMMKernel"
        self.device = "NVIDIA GeForce RTX 5090"
        self.cap = "12.0"  # None for data-centre parts where SymmMem works
        self.consumer = True  # PCIe consumer cards: no P2P -> custom allreduce disabled
        self.version = "0.11.2"
        self.max_len = 32768
        self.mem_util = 0.9
        self.enforce_eager = False
        self.site = "/usr/local/lib/python3.12/dist-packages"
        self.start = dt.datetime(2026, 3, 4, 10, 14, 37)
        self.api_pid = 1
        self.engine_pid = 187
        self.worker_pids = [254, 255]
        self.color = True
        self.host = "vllm-qwen3"
        self.ip = "10.42.0.17"
        self.seed = 1
        self.shards = 7
        self.load_secs = [11.42, 11.87]
        self.worker_name = "Worker_TP{r}"
        self.ep = False
        self.nccl_debug = False
        self.torch_sm_warning = False
        self.extra_args = {}
        self.env_note = None
        self.moe = True
        self.nk = "N=6144,K=2048"
        self.w8a8_warning = True
        self.batched_tokens = 8192
        self.moe_backend = None  # default: derived from the kernel
        self.moe_config = None  # e.g. "E=128,N=384": emit the default-MoE-config warning
        self.dtype_note = None
        self.psm = "psm_5a1c9e20"
        self.ipc = "ipc:///tmp/1f0c7b9e-0d52-4b61-9a3a-54d6f1c02a11"
        for k, v in kw.items():
            if not hasattr(self, k):
                raise KeyError(k)
            setattr(self, k, v)
        self.V = f"{self.site}/vllm"


class Scene:
    def __init__(self, cfg):
        c = self.c = cfg
        self.rng = random.Random(cfg.seed)
        self.lines = []
        self.api = Proc("APIServer", c.api_pid, c.color)
        self.engine = Proc("EngineCore_DP0", c.engine_pid, c.color)
        self.workers = [
            Proc(c.worker_name.format(r=r), c.worker_pids[r], c.color, host=c.host) for r in range(c.tp)
        ]
        # pre-decoration lines of each process (platform detection) carry no prefix
        self.t = c.start

    # -- helpers
    def at(self, secs):
        return self.c.start + T(seconds=secs)

    def add(self, lines):
        self.lines.extend(lines)

    def mix(self, seqs, weights=None):
        self.add(interleave(seqs, self.rng, weights))

    def platform(self, p, ts):
        return [Line(p, "stdout", f"INFO {ts:%m-%d %H:%M:%S} [__init__.py:216] Automatically detected platform cuda.", ts)]

    # -- start-up
    def startup(self, upto="loaded"):
        c, V = self.c, self.c.V
        api, eng, W = self.api, self.engine, self.workers
        self.add(self.platform(api, self.at(0)))
        args = {
            "model_tag": c.model,
            "host": "0.0.0.0",
            "model": c.model,
            "max_model_len": c.max_len,
            "tensor_parallel_size": c.tp,
            "gpu_memory_utilization": c.mem_util,
        }
        if c.ep:
            args["enable_expert_parallel"] = True
        if c.enforce_eager:
            args["enforce_eager"] = True
        args.update(c.extra_args)
        self.add(rec(api, "INFO", self.at(3), "api_server.py:1885", f"vLLM API server version {c.version}"))
        self.add(rec(api, "INFO", self.at(3), "utils.py:243", f"non-default args: {args!r}"))
        self.add(rec(api, "INFO", self.at(5), "model.py:631", f"Resolved architecture: {c.arch}"))
        self.add(rec(api, "INFO", self.at(5), "model.py:1745", f"Using max model len {c.max_len}"))
        self.add(rec(api, "INFO", self.at(6), "scheduler.py:225", f"Chunked prefill is enabled with max_num_batched_tokens={c.batched_tokens}."))
        if c.enforce_eager:
            self.add(rec(api, "WARNING", self.at(6), "vllm.py:498", "Enforce eager set, overriding optimization level to -O0"))
        self.add(self.platform(eng, self.at(12)))
        self.add(rec(eng, "INFO", self.at(14), "core.py:730", "Waiting for init message from front-end."))
        self.add(rec(eng, "INFO", self.at(14), "core.py:93", self.config_line()))
        self.add(rec(eng, "WARNING", self.at(14), "multiproc_executor.py:720",
                     "Reducing Torch parallelism from 24 threads to 1 to avoid unnecessary CPU contention. "
                     "Set OMP_NUM_THREADS in the external environment to tune this value as needed."))
        self.add(rec(eng, "INFO", self.at(14), "shm_broadcast.py:289",
                     f"vLLM message queue communication handle: Handle(local_reader_ranks={list(range(c.tp))}, "
                     f"buffer_handle=({c.tp}, 16777216, 10, '{c.psm}'), local_subscribe_addr='{c.ipc}', "
                     "remote_subscribe_addr=None, remote_addr_ipv6=False)"))
        self.add([l for w in W for l in self.platform(w, self.at(21))])
        # distributed init, per rank
        per = []
        for r, w in enumerate(W):
            s = []
            s += rec(w, "INFO", self.at(25), "__init__.py:1384", "Found nccl from library libnccl.so.2")
            s += rec(w, "INFO", self.at(25), "pynccl.py:103", "vLLM is using nccl==2.27.3")
            if c.nccl_debug:
                s += self.nccl_init(w, r, self.at(25))
            if c.consumer:
                s += rec(w, "WARNING", self.at(26), "custom_all_reduce.py:154",
                         "Custom allreduce is disabled because your platform lacks GPU P2P capability or P2P test "
                         "failed. To silence this warning, specify disable_custom_all_reduce=True explicitly.")
            if c.cap:
                s += rec(w, "WARNING", self.at(26), "symm_mem.py:64",
                         f"SymmMemCommunicator: Device capability {c.cap} not supported, communicator is not available.")
            if r == 0:
                s += rec(w, "INFO", self.at(26), "shm_broadcast.py:289",
                         f"vLLM message queue communication handle: Handle(local_reader_ranks={list(range(1, c.tp))}, "
                         f"buffer_handle=({c.tp - 1}, 4194304, 6, 'psm_{self.rng.getrandbits(32):08x}'), "
                         f"local_subscribe_addr='ipc:///tmp/{self.uuid()}', remote_subscribe_addr=None, "
                         "remote_addr_ipv6=False)")
            s += rec(w, "INFO", self.at(26), "parallel_state.py:1325",
                     f"rank {r} in world size {c.tp} is assigned as DP rank 0, PP rank 0, PCP rank 0, TP rank {r}, EP rank {r}")
            if c.torch_sm_warning:
                s += raw(w, self.at(26), [
                    f"{c.site}/torch/cuda/__init__.py:283: UserWarning: ",
                    f"{c.device} with CUDA capability sm_120 is not compatible with the current PyTorch installation.",
                    "The current PyTorch install supports CUDA capabilities sm_50 sm_60 sm_70 sm_75 sm_80 sm_86 sm_90.",
                    f"If you want to use the {c.device} GPU with PyTorch, please check the instructions at https://pytorch.org/get-started/locally/",
                    "",
                    "  warnings.warn(",
                ])
            s += rec(w, "INFO", self.at(27), "gpu_model_runner.py:2602", f"Starting to load model {c.model}...")
            s += rec(w, "INFO", self.at(27), "gpu_model_runner.py:2634", "Loading model from scratch...")
            s += rec(w, "INFO", self.at(27), "cuda.py:403",
                     "Using FLASH_ATTN attention backend out of potential backends: "
                     "['FLASH_ATTN', 'FLASHINFER', 'TRITON_ATTN', 'FLEX_ATTENTION']")
            if r == 0 and c.kernel:
                s += rec(w, "INFO", self.at(27), "__init__.py:384", f"Selected {c.kernel} for {c.scheme}")
                if c.moe:
                    moe_be = c.moe_backend or ("DeepGEMM" if "DeepGemm" in c.kernel else "Triton")
                    s += rec(w, "INFO", self.at(27), "fp8.py:181", f"Using {moe_be} backend for FP8 MoE")
            s += rec(w, "INFO", self.at(28), "weight_utils.py:413", "Using model weights format ['*.safetensors']")
            if r == 0:
                s += self.tqdm(w, self.at(28), c.shards, c.load_secs[0])
            lt = 28 + int(c.load_secs[r]) + 1
            s += rec(w, "INFO", self.at(lt), "default_loader.py:314", f"Loading weights took {c.load_secs[r]:.2f} seconds")
            if c.w8a8_warning and r == 0:
                s += rec(w, "WARNING", self.at(lt), "fp8_utils.py:707",
                         "Using default W8A8 Block FP8 kernel config. Performance might be sub-optimal! Config file "
                         f"not found at {c.V}/model_executor/layers/quantization/utils/configs/{c.nk},"
                         f"device_name={c.device.replace(' ', '_')},dtype=fp8_w8a8,block_shape=[128,128].json")
            per.append(s)
        self.mix(per)
        self.load_done = 28 + int(max(c.load_secs)) + 1

    def post_load(self, model_gib, upto="kv"):
        """Every rank finishes loading; profile run, KV cache sizing (optionally graphs + server up)."""
        c, V = self.c, self.c.V
        t = self.load_done + 1
        per = []
        for r, w in enumerate(self.workers):
            s = rec(w, "INFO", self.at(t), "gpu_model_runner.py:2667",
                    f"Model loading took {model_gib:.4f} GiB and {c.load_secs[r] + 1.83:.6f} seconds")
            per.append(s)
        self.mix(per)
        t += 1
        if not c.enforce_eager:
            per = []
            cache = f"{self.rng.getrandbits(40):010x}"
            for r, w in enumerate(self.workers):
                s = rec(w, "INFO", self.at(t + 4), "backends.py:548",
                        f"Using cache directory: /root/.cache/vllm/torch_compile_cache/{cache}/rank_{r}_0/backbone "
                        "for vLLM's torch.compile")
                s += rec(w, "INFO", self.at(t + 4), "backends.py:559", f"Dynamo bytecode transform time: {5.91 + 0.07 * r:.2f} s")
                s += rec(w, "INFO", self.at(t + 9), "backends.py:197", "Cache the graph for dynamic shape for later use")
                s += rec(w, "INFO", self.at(t + 31), "backends.py:218",
                         f"Compiling a graph for dynamic shape takes {26.48 + 0.31 * r:.2f} s")
                if c.moe_config and r == 0:
                    s += rec(w, "WARNING", self.at(t + 33), "fused_moe.py:798",
                             "Using default MoE config. Performance might be sub-optimal! Config file not found at "
                             f"{V}/model_executor/layers/fused_moe/configs/{c.moe_config},"
                             f"device_name={c.device.replace(' ', '_')},dtype=fp8_w8a8,block_shape=[128,128].json")
                s += rec(w, "INFO", self.at(t + 36), "monitor.py:34", f"torch.compile takes {32.39 + 0.38 * r:.2f} s in total")
                per.append(s)
            self.mix(per)
            t += 37
        self.t_profiled = t
        return t

    def kv_and_ready(self, t, kv_gib, tokens, conc, graphs=True):
        c, V = self.c, self.c.V
        per = []
        for r, w in enumerate(self.workers):
            per.append(rec(w, "INFO", self.at(t), "gpu_worker.py:298", f"Available KV cache memory: {kv_gib + 0.01 * r:.2f} GiB"))
        self.mix(per)
        self.add(rec(self.engine, "INFO", self.at(t + 1), "kv_cache_utils.py:1087", f"GPU KV cache size: {tokens:,} tokens"))
        self.add(rec(self.engine, "INFO", self.at(t + 1), "kv_cache_utils.py:1091",
                     f"Maximum concurrency for {c.max_len:,} tokens per request: {conc:.2f}x"))
        t += 1
        return t

    def graphs(self, t):
        w0 = self.workers[0]
        bar = "\u2588" * 10
        self.add([Line(w0, "stderr", f"{w0.pfx()}\rCapturing CUDA graphs (mixed prefill-decode, PIECEWISE):   0%|          | 0/67 [00:00<?, ?it/s]"
                       f"\rCapturing CUDA graphs (mixed prefill-decode, PIECEWISE): 100%|{bar}| 67/67 [00:05<00:00, 12.37it/s]", self.at(t + 5))])
        self.add([Line(w0, "stderr", f"{w0.pfx()}\rCapturing CUDA graphs (decode, FULL):   0%|          | 0/35 [00:00<?, ?it/s]"
                       f"\rCapturing CUDA graphs (decode, FULL): 100%|{bar}| 35/35 [00:02<00:00, 14.11it/s]", self.at(t + 8))])
        per = [rec(w, "INFO", self.at(t + 8), "gpu_model_runner.py:3480", "Graph capturing finished in 8 secs, took 0.58 GiB")
               for w in self.workers]
        self.mix(per)
        return t + 8

    def server_up(self, t, init_secs, port=8000):
        c, api = self.c, self.api
        self.add(rec(self.engine, "INFO", self.at(t), "core.py:210",
                     f"init engine (profile, create kv cache, warmup model) took {init_secs:.2f} seconds"))
        t += 1
        L = []
        L += rec(api, "INFO", self.at(t), "loggers.py:147",
                 "Engine 000: vllm cache_config_info with initialization after num_gpu_blocks is: 13476")
        L += rec(api, "INFO", self.at(t), "api_server.py:1634", "Supported_tasks: ['generate']")
        L += rec(api, "WARNING", self.at(t), "model.py:1568",
                 "Default sampling parameters have been overridden by the model's Hugging Face generation config "
                 "recommended from the model creator. If this is not intended, please relaunch vLLM instance with "
                 "`--generation-config vllm`.")
        L += rec(api, "INFO", self.at(t), "serving_responses.py:137",
                 "Using default chat sampling params from model: {'temperature': 0.6, 'top_k': 20, 'top_p': 0.95}")
        L += rec(api, "INFO", self.at(t), "serving_chat.py:139",
                 "Using default chat sampling params from model: {'temperature': 0.6, 'top_k': 20, 'top_p': 0.95}")
        L += rec(api, "INFO", self.at(t), "api_server.py:1912", f"Starting vLLM API server 0 on http://0.0.0.0:{port}")
        L += rec(api, "INFO", self.at(t), "launcher.py:34", "Available routes are:")
        for route, m in [("/openapi.json", "HEAD, GET"), ("/docs", "HEAD, GET"), ("/health", "GET"),
                         ("/load", "GET"), ("/tokenize", "POST"), ("/detokenize", "POST"), ("/v1/models", "GET"),
                         ("/version", "GET"), ("/v1/responses", "POST"), ("/v1/chat/completions", "POST"),
                         ("/v1/completions", "POST"), ("/metrics", "GET")]:
            L += rec(api, "INFO", self.at(t), "launcher.py:42", f"Route: {route}, Methods: {m}")
        L += [Line(api, "stderr", f"{api.pfx()}INFO:     Started server process [{api.pid}]", self.at(t)),
              Line(api, "stderr", f"{api.pfx()}INFO:     Waiting for application startup.", self.at(t)),
              Line(api, "stderr", f"{api.pfx()}INFO:     Application startup complete.", self.at(t))]
        self.add(L)
        return t

    def uuid(self):
        h = f"{self.rng.getrandbits(128):032x}"
        return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"

    def tqdm(self, w, ts, n, secs):
        out = [Line(w, "stderr", f"{w.pfx()}\rLoading safetensors checkpoint shards:   0% Completed | 0/{n} [00:00<?, ?it/s]", ts)]
        per = secs / n
        for i in range(1, n + 1):
            el = per * i
            rem = per * (n - i)
            rate = per * (1 + 0.05 * ((i * 7) % 5 - 2))
            out.append(Line(w, "stderr",
                            f"{w.pfx()}\rLoading safetensors checkpoint shards: {int(100 * i / n):3d}% Completed | {i}/{n} "
                            f"[00:{int(el):02d}<00:{int(rem):02d},  {rate:.2f}s/it]", ts + T(seconds=int(el))))
        out.append(Line(w, "stderr",
                        f"{w.pfx()}\rLoading safetensors checkpoint shards: 100% Completed | {n}/{n} [00:{int(secs):02d}<00:00,  {per:.2f}s/it]",
                        ts + T(seconds=int(secs))))
        out.append(Line(w, "stderr", f"{w.pfx()}", ts + T(seconds=int(secs))))
        return out

    def nccl_init(self, w, r, ts):
        c = self.c
        tag = f"{c.host}:{w.pid}:{w.pid} [{r}]"
        comm = f"0x{self.rng.getrandbits(32):08x}"
        lines = [
            f"{tag} NCCL INFO Bootstrap: Using eth0:{c.ip}<0>",
            f"{tag} NCCL INFO cudaDriverVersion 12090",
            f"{tag} NCCL INFO NCCL version 2.27.3+cuda12.9",
            f"{tag} NCCL INFO NET/Plugin: Could not find: libnccl-net.so. Using internal net plugin.",
            f"{tag} NCCL INFO NET/Socket : Using [0]eth0:{c.ip}<0>",
            f"{tag} NCCL INFO Using network Socket",
            f"{tag} NCCL INFO ncclCommInitRank comm {comm} rank {r} nranks {c.tp} cudaDev {r} nvmlDev {r} "
            f"busId {['1000', '2000', '41000', '61000'][r % 4]} commId 0x5e7a91c4d2b3f086 - Init START",
            f"{tag} NCCL INFO comm {comm} rank {r} nRanks {c.tp} nNodes 1 localRanks {c.tp} localRank {r} MNNVL 0",
            f"{tag} NCCL INFO P2P is disabled between connected GPUs",
            f"{tag} NCCL INFO ncclCommInitRank comm {comm} rank {r} nranks {c.tp} cudaDev {r} nvmlDev {r} "
            f"busId {['1000', '2000', '41000', '61000'][r % 4]} commId 0x5e7a91c4d2b3f086 - Init COMPLETE",
        ]
        return [Line(w, "stdout", l, ts) for l in lines]

    def config_line(self):
        c = self.c
        sizes = [512, 504, 496, 488, 480, 472, 464, 456, 448, 440, 432, 424, 416, 408, 400, 392, 384, 376, 368,
                 360, 352, 344, 336, 328, 320, 312, 304, 296, 288, 280, 272, 264, 256, 248, 240, 232, 224, 216, 208,
                 200, 192, 184, 176, 168, 160, 152, 144, 136, 128, 120, 112, 104, 96, 88, 80, 72, 64, 56, 48, 40,
                 32, 24, 16, 8, 4, 2, 1]
        level = 0 if c.enforce_eager else 3
        cg = "[]" if c.enforce_eager else "[" + ",".join(map(str, sizes)) + "]"
        comp = ('{"level":%d,"debug_dump_path":"","cache_dir":"","backend":"","custom_ops":[],'
                '"splitting_ops":["vllm.unified_attention","vllm.unified_attention_with_output",'
                '"vllm.mamba_mixer2","vllm.mamba_mixer","vllm.short_conv","vllm.linear_attention",'
                '"vllm.plamo2_mamba_mixer","vllm.gdn_attention","vllm.sparse_attn_indexer"],'
                '"use_inductor":true,"compile_sizes":[],"inductor_compile_config":{"enable_auto_functionalized_v2":false},'
                '"inductor_passes":{},"cudagraph_mode":[2,1],"use_cudagraph":true,"cudagraph_num_of_warmups":1,'
                '"cudagraph_capture_sizes":%s,"cudagraph_copy_inputs":false,"full_cuda_graph":false,'
                '"use_inductor_graph_partition":false,"pass_config":{},"max_capture_size":512,'
                '"local_cache_dir":null}') % (level, cg)
        return (f"Initializing a V1 LLM engine (v{c.version}) with config: model='{c.model}', speculative_config=None, "
                f"tokenizer='{c.model}', skip_tokenizer_init=False, tokenizer_mode=auto, revision=None, "
                f"tokenizer_revision=None, trust_remote_code=False, dtype=torch.bfloat16, max_seq_len={c.max_len}, "
                f"download_dir=None, load_format=auto, tensor_parallel_size={c.tp}, pipeline_parallel_size=1, "
                f"data_parallel_size=1, disable_custom_all_reduce=False, quantization={c.quant}, "
                f"enforce_eager={c.enforce_eager}, kv_cache_dtype=auto, device_config=cuda, "
                "structured_outputs_config=StructuredOutputsConfig(backend='auto', disable_fallback=False, "
                "disable_any_whitespace=False, disable_additional_properties=False, reasoning_parser='', "
                "reasoning_parser_plugin='', enable_in_reasoning=False), observability_config=ObservabilityConfig("
                "show_hidden_metrics_for_version=None, otlp_traces_endpoint=None, collect_detailed_traces=None), "
                f"seed=0, served_model_name={c.model}, enable_prefix_caching=True, enable_chunked_prefill=True, "
                f"pooler_config=None, compilation_config={comp}")

    # -- tracebacks (lists of text lines, no prefix/header)
    def tb_worker_head(self):
        V = self.c.V
        return (["Traceback (most recent call last):"]
                + frame(f"{V}/v1/executor/multiproc_executor.py", 701, "worker_main",
                        "worker = WorkerProc(*args, **kwargs)", "WorkerProc(*args, **kwargs)")
                + frame(f"{V}/v1/executor/multiproc_executor.py", 542, "__init__", "self.worker.load_model()")
                + frame(f"{V}/v1/worker/gpu_worker.py", 264, "load_model",
                        "self.model_runner.load_model(eep_scale_up=eep_scale_up)")
                + frame(f"{V}/v1/worker/gpu_model_runner.py", 2608, "load_model",
                        "self.model = model_loader.load_model(", "model_loader.load_model("))

    def tb_unknown_sf(self, variant=None):
        V = self.c.V
        variant = variant or ("ct" if self.c.quant == "compressed-tensors" else "fp8")
        tb = self.tb_worker_head()
        tb += frame(f"{V}/model_executor/model_loader/base_loader.py", 56, "load_model",
                    "process_weights_after_loading(model, model_config, target_device)")
        tb += frame(f"{V}/model_executor/model_loader/utils.py", 116, "process_weights_after_loading",
                    "quant_method.process_weights_after_loading(module)")
        if variant == "fp8":
            tb += frame(f"{V}/model_executor/layers/quantization/fp8.py", 455, "process_weights_after_loading",
                        "self.fp8_linear.process_weights_after_loading(layer)")
            tb += frame(f"{V}/model_executor/kernels/linear/scaled_mm/deep_gemm.py", 91,
                        "process_weights_after_loading",
                        "dg_weight, dg_weight_scale = deepgemm_post_process_fp8_weight_block(",
                        "deepgemm_post_process_fp8_weight_block(")
            tb += frame(f"{V}/model_executor/layers/quantization/utils/fp8_utils.py", 1052,
                        "deepgemm_post_process_fp8_weight_block",
                        "dg_ws = transform_sf_into_required_layout(", "transform_sf_into_required_layout(")
        else:
            tb += frame(f"{V}/model_executor/layers/quantization/compressed_tensors/compressed_tensors.py", 783,
                        "process_weights_after_loading", "layer.scheme.process_weights_after_loading(layer)")
            tb += frame(f"{V}/model_executor/layers/quantization/compressed_tensors/schemes/"
                        "compressed_tensors_w8a8_fp8.py", 169, "process_weights_after_loading",
                        "self.fp8_linear.process_weights_after_loading(layer)")
            tb += frame(f"{V}/model_executor/kernels/linear/scaled_mm/deep_gemm.py", 96,
                        "process_weights_after_loading",
                        "layer.weight_scale.data = deepgemm_post_process_weight_scale_block(",
                        "deepgemm_post_process_weight_scale_block(")
            tb += frame(f"{V}/model_executor/layers/quantization/utils/fp8_utils.py", 1077,
                        "deepgemm_post_process_weight_scale_block",
                        "return transform_sf_into_required_layout(", "transform_sf_into_required_layout(")
        tb += frame(f"{V}/utils/deep_gemm.py", 494, "transform_sf_into_required_layout",
                    "return _transform_sf_into_required_layout_impl(", "_transform_sf_into_required_layout_impl(")
        tb.append(UNKNOWN_SF)
        return tb

    def tb_engine_startup(self):
        V = self.c.V
        return (["Traceback (most recent call last):"]
                + frame(f"{V}/v1/engine/core.py", 834, "run_engine_core",
                        "engine_core = EngineCoreProc(*args, **kwargs)", "EngineCoreProc(*args, **kwargs)")
                + frame(f"{V}/v1/engine/core.py", 610, "__init__", "super().__init__(")
                + frame(f"{V}/v1/engine/core.py", 102, "__init__",
                        "self.model_executor = executor_class(vllm_config)", "executor_class(vllm_config)")
                + frame(f"{V}/v1/executor/abstract.py", 101, "__init__", "self._init_executor()")
                + frame(f"{V}/v1/executor/multiproc_executor.py", 172, "_init_executor",
                        "self.workers = WorkerProc.wait_for_ready(unready_workers)",
                        "WorkerProc.wait_for_ready(unready_workers)")
                + frame(f"{V}/v1/executor/multiproc_executor.py", 660, "wait_for_ready", "raise e from None")
                + [WORKERPROC_INIT_FAILED])

    def tb_engine_rpc(self, method, err):
        """EngineCore side of a worker RPC failure during _initialize_kv_caches."""
        V = self.c.V
        tb = (["Traceback (most recent call last):"]
              + frame(f"{V}/v1/engine/core.py", 834, "run_engine_core",
                      "engine_core = EngineCoreProc(*args, **kwargs)", "EngineCoreProc(*args, **kwargs)")
              + frame(f"{V}/v1/engine/core.py", 610, "__init__", "super().__init__(")
              + frame(f"{V}/v1/engine/core.py", 109, "__init__",
                      "num_gpu_blocks, num_cpu_blocks, kv_cache_config = self._initialize_kv_caches(",
                      "self._initialize_kv_caches("))
        if method == "determine_available_memory":
            tb += frame(f"{V}/v1/engine/core.py", 218, "_initialize_kv_caches",
                        "available_gpu_memory = self.model_executor.determine_available_memory()",
                        "self.model_executor.determine_available_memory()")
            tb += frame(f"{V}/v1/executor/abstract.py", 126, "determine_available_memory",
                        'return self.collective_rpc("determine_available_memory")',
                        'self.collective_rpc("determine_available_memory")')
        else:
            tb += frame(f"{V}/v1/engine/core.py", 254, "_initialize_kv_caches",
                        "self.model_executor.initialize_from_config(kv_cache_configs)")
            tb += frame(f"{V}/v1/executor/abstract.py", 116, "initialize_from_config",
                        'self.collective_rpc("compile_or_warm_up_model")')
        tb += frame(f"{V}/v1/executor/multiproc_executor.py", 358, "collective_rpc",
                    "return aggregate(get_response())", "get_response()")
        tb += frame(f"{V}/v1/executor/multiproc_executor.py", 341, "get_response", "raise RuntimeError(")
        tb.append(f"RuntimeError: Worker failed with error '{err}', please check the stack trace above for the root cause")
        return tb

    def tb_process_engine(self, engine_tb):
        """multiprocessing's `Process EngineCore_DP0:` copy (stderr, no header)."""
        V = self.c.V
        body = engine_tb[1:]  # frames + exception, after "Traceback ..."
        return (["Process EngineCore_DP0:", "Traceback (most recent call last):"]
                + frame("/usr/lib/python3.12/multiprocessing/process.py", 314, "_bootstrap", "self.run()")
                + frame("/usr/lib/python3.12/multiprocessing/process.py", 108, "run",
                        "self._target(*self._args, **self._kwargs)")
                + frame(f"{V}/v1/engine/core.py", 847, "run_engine_core", "raise e")
                + body)

    def tb_api(self):
        V, S = self.c.V, self.c.site
        return (["Traceback (most recent call last):"]
                + frame("/usr/local/bin/vllm", 10, "<module>", "sys.exit(main())", "main()")
                + frame(f"{V}/entrypoints/cli/main.py", 73, "main", "args.dispatch_function(args)")
                + frame(f"{V}/entrypoints/cli/serve.py", 59, "cmd", "uvloop.run(run_server(args))")
                + frame(f"{S}/uvloop/__init__.py", 109, "run", "return __asyncio.run(", "__asyncio.run(")
                + frame("/usr/lib/python3.12/asyncio/runners.py", 195, "run", "return runner.run(main)",
                        "runner.run(main)")
                + frame("/usr/lib/python3.12/asyncio/runners.py", 118, "run",
                        "return self._loop.run_until_complete(task)", "self._loop.run_until_complete(task)")
                + ['  File "uvloop/loop.pyx", line 1518, in uvloop.loop.Loop.run_until_complete']
                + frame(f"{S}/uvloop/__init__.py", 61, "wrapper", "return await main", "await main")
                + frame(f"{V}/entrypoints/openai/api_server.py", 1941, "run_server",
                        "await run_server_worker(listen_address, sock, args, **uvicorn_kwargs)")
                + frame(f"{V}/entrypoints/openai/api_server.py", 1957, "run_server_worker",
                        "async with build_async_engine_client(")
                + frame("/usr/lib/python3.12/contextlib.py", 210, "__aenter__", "return await anext(self.gen)",
                        "await anext(self.gen)")
                + frame(f"{V}/entrypoints/openai/api_server.py", 175, "build_async_engine_client",
                        "async with build_async_engine_client_from_engine_args(")
                + frame("/usr/lib/python3.12/contextlib.py", 210, "__aenter__", "return await anext(self.gen)",
                        "await anext(self.gen)")
                + frame(f"{V}/entrypoints/openai/api_server.py", 220, "build_async_engine_client_from_engine_args",
                        "async_llm = AsyncLLM.from_vllm_config(", "AsyncLLM.from_vllm_config(")
                + frame(f"{V}/utils/func_utils.py", 116, "inner", "return fn(*args, **kwargs)", "fn(*args, **kwargs)")
                + frame(f"{V}/v1/engine/async_llm.py", 205, "from_vllm_config", "return cls(", "cls(")
                + frame(f"{V}/v1/engine/async_llm.py", 132, "__init__",
                        "self.engine_core = EngineCoreClient.make_async_mp_client(",
                        "EngineCoreClient.make_async_mp_client(")
                + frame(f"{V}/v1/engine/core_client.py", 122, "make_async_mp_client",
                        "return AsyncMPClient(*client_args)", "AsyncMPClient(*client_args)")
                + frame(f"{V}/v1/engine/core_client.py", 824, "__init__", "super().__init__(")
                + frame(f"{V}/v1/engine/core_client.py", 479, "__init__",
                        "with launch_core_engines(vllm_config, executor_class, log_stats) as (")
                + frame("/usr/lib/python3.12/contextlib.py", 144, "__exit__", "next(self.gen)")
                + frame(f"{V}/v1/engine/utils.py", 921, "launch_core_engines", "wait_for_engine_startup(")
                + frame(f"{V}/v1/engine/utils.py", 980, "wait_for_engine_startup", "raise RuntimeError(")
                + ["RuntimeError: Engine core initialization failed. See root cause above. "
                   "Failed core proc(s): {'EngineCore_DP0': 1}"])

    def tb_rpc_head(self, method):
        """Worker side of a failing collective_rpc, down to the worker method."""
        V, S = self.c.V, self.c.site
        tb = (["Traceback (most recent call last):"]
              + frame(f"{V}/v1/executor/multiproc_executor.py", 817, "worker_busy_loop",
                      "output = func(*args, **kwargs)", "func(*args, **kwargs)")
              + frame(f"{S}/torch/utils/_contextlib.py", 120, "decorate_context",
                      "return func(*args, **kwargs)", "func(*args, **kwargs)"))
        if method == "determine_available_memory":
            tb += frame(f"{V}/v1/worker/gpu_worker.py", 283, "determine_available_memory",
                        "self.model_runner.profile_run()")
            tb += frame(f"{V}/v1/worker/gpu_model_runner.py", 3354, "profile_run",
                        "hidden_states, last_hidden_states = self._dummy_run(", "self._dummy_run(")
            tb += frame(f"{S}/torch/utils/_contextlib.py", 120, "decorate_context",
                        "return func(*args, **kwargs)", "func(*args, **kwargs)")
            tb += frame(f"{V}/v1/worker/gpu_model_runner.py", 3109, "_dummy_run", "outputs = self.model(",
                        "self.model(")
        return tb

    def tb_module_call(self):
        S = self.c.site
        return (frame(f"{S}/torch/nn/modules/module.py", 1775, "_wrapped_call_impl",
                      "return self._call_impl(*args, **kwargs)", "self._call_impl(*args, **kwargs)")
                + frame(f"{S}/torch/nn/modules/module.py", 1786, "_call_impl",
                        "return forward_call(*args, **kwargs)", "forward_call(*args, **kwargs)"))

    # -- failure tails
    def startup_failure_tail(self, ts, failing_ranks, tb_of, trailing_blank=False, terminated=()):
        """Workers' `WorkerProc failed to start.` blocks, then EngineCore, Process copy, APIServer."""
        eng, api = self.engine, self.api
        blocks = [exc(self.workers[r], ts, "multiproc_executor.py:743", "WorkerProc failed to start.", tb_of(r),
                      trailing_blank=trailing_blank) for r in failing_ranks]
        self.mix(blocks)
        t2 = ts + T(seconds=1)
        etb = self.tb_engine_startup()
        self.add(exc(eng, t2, "core.py:843", "EngineCore failed to start.", etb))
        for r in terminated:
            self.add(rec(self.workers[r], "WARNING", t2, "multiproc_executor.py:771", "WorkerProc was terminated"))
        self.add(raw(eng, t2, self.tb_process_engine(etb)))
        t3 = t2 + T(seconds=1)
        self.add(raw(api, t3, self.tb_api()))
        self.exit_noise(t3, failing_ranks, terminated)

    def exit_noise(self, ts, ranks=(), terminated=()):
        out = []
        for r in sorted(set(ranks) | set(terminated)):
            out.append(Line(self.workers[r], "stderr",
                            f"[rank{r}]:[W{ts:%m%d %H:%M:%S}.{self.rng.randint(100000000, 999999999)} "
                            "ProcessGroupNCCL.cpp:1538] Warning: WARNING: destroy_process_group() was not called "
                            "before program exit, which can leak resources. For more info, please see "
                            "https://pytorch.org/docs/stable/distributed.html#shutdown (function operator())", ts))
        self.add(out)
        self.add([Line(None, "stderr",
                       "/usr/lib/python3.12/multiprocessing/resource_tracker.py:279: UserWarning: resource_tracker: "
                       "There appear to be 1 leaked shared_memory objects to clean up at shutdown", ts),
                  Line(None, "stderr", "  warnings.warn('resource_tracker: There appear to be %d '", ts)])

    def rpc_failure_tail(self, ts, method, err, tb_of, ranks=None):
        """A worker RPC during _initialize_kv_caches raises on the given ranks."""
        ranks = list(range(self.c.tp)) if ranks is None else ranks
        blocks = [exc(self.workers[r], ts, "multiproc_executor.py:822", "WorkerProc hit an exception.", tb_of(r))
                  for r in ranks]
        self.mix(blocks)
        t2 = ts + T(seconds=1)
        etb = self.tb_engine_rpc(method, err)
        self.add(exc(self.engine, t2, "core.py:843", "EngineCore failed to start.", etb))
        self.add(raw(self.engine, t2, self.tb_process_engine(etb)))
        self.add(rec(self.workers[0], "INFO", t2, "multiproc_executor.py:702", "Parent process exited, terminating worker"))
        self.add(rec(self.workers[1], "INFO", t2, "multiproc_executor.py:702", "Parent process exited, terminating worker"))
        t3 = t2 + T(seconds=1)
        self.add(raw(self.api, t3, self.tb_api()))
        self.exit_noise(t3, range(self.c.tp))


UNKNOWN_SF = ("RuntimeError: Assertion error (/workspace/.deps/deepgemm-src/csrc/apis/layout.hpp:60): "
              "Unknown SF transformation")
UNKNOWN_RECIPE = ("RuntimeError: Assertion error (/workspace/.deps/deepgemm-src/csrc/apis/../jit_kernels/impls/"
                  "../heuristics/../../utils/layout.hpp:76): Unknown recipe")
WORKERPROC_INIT_FAILED = ("Exception: WorkerProc initialization failed due to an exception in a background process. "
                          "See stack trace for root cause.")
