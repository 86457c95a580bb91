"""Fixtures for logs as they arrive in the wild (tests/golden/wild/): pasted, quoted, wrapped,
relayed by other tools, and in other engines' words. Each is modelled on a shape seen in public
issue threads (the README's table says which); names, numbers, paths and times are invented.

Written by gen_fixtures.py; the text is literal so that each file shows exactly one shape.
"""

import os

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
W = os.path.join(ROOT, "tests", "golden", "wild")

SF = "RuntimeError: Assertion error (/opt/build/.deps/deepgemm-src/csrc/apis/layout.hpp:61): Unknown SF transformation"
DL = "/opt/conda/lib/python3.11/site-packages"


def worker_tb(prefix, hdr, frames, last):
    out = [f"{prefix}{hdr} Traceback (most recent call last):"]
    for path, line, func in frames:
        out.append(f'{prefix}{hdr}   File "{path}", line {line}, in {func}')
    out.append(f"{prefix}{hdr} {last}")
    return out


def files():
    f = {}
    # Markdown quote (`> `, blank quoted lines between) around CI console times around SGLang.
    ci = [
        f'[2026-02-17T08:41:19.114Z]   File "/srv/sglang/python/sglang/srt/models/qwen2_vl.py", line 611, in load_weights',
        "[2026-02-17T08:41:19.114Z]     param = params_dict[name]",
        "[2026-02-17T08:41:19.114Z]             ~~~~~~~~~~~^^^^^^",
        "[2026-02-17T08:41:19.115Z] KeyError: 'visual.merger.mlp.0.weight'",
        "[2026-02-17T08:41:19.115Z] ",
        "[2026-02-17T08:41:19.116Z] [2026-02-17 08:41:19] Received sigquit from a child process. It usually means the child failed.",
    ]
    f["markdown_quoted_ci_keyerror.log"] = [x for line in ci for x in ("> " + line, ">")]
    # grep -n over a vLLM V1 worker's CUDA OOM in the profile run.
    hdr = "ERROR 09-14 21:03:55 [multiproc_executor.py:702]"
    tb = worker_tb("(Worker_TP1 pid=6012) ", hdr, [
        (f"{DL}/vllm/v1/worker/gpu_model_runner.py", 3301, "profile_run"),
        (f"{DL}/vllm/model_executor/layers/activation.py", 120, "forward_cuda"),
    ], "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 1.50 GiB. GPU 1 has a total capacity of 23.64 GiB of which 402.00 MiB is free.")
    f["grep_n_cuda_oom.log"] = [f"{n}:{line}" for n, line in enumerate(tb, 4411)]
    # kubectl logs --prefix around a V0 worker's NCCL error.
    pod = "[pod/chat-llm-6b9f7c5d4-qz8kd/vllm] "
    tb = worker_tb("(VllmWorkerProcess pid=88) ", "ERROR 03-22 05:17:40 multiproc_worker_utils.py:233]", [
        (f"{DL}/vllm/worker/worker.py", 142, "init_device"),
        (f"{DL}/vllm/distributed/device_communicators/pynccl.py", 101, "__init__"),
    ], "RuntimeError: NCCL error: unhandled system error (run with NCCL_DEBUG=INFO for details)")
    f["kubectl_prefix_nccl_error.log"] = [pod + "INFO 03-22 05:17:31 config.py:1020] Defaulting to use mp for distributed inference"] + [pod + x for x in tb]
    # TorchServe MODEL_LOG around a vLLM worker failing with the target.
    ts = "2026-06-03T10:22:{s:02d},{ms:03d} [INFO ] W-9000-qwen_fp8_1.0-stdout MODEL_LOG - "
    tb = worker_tb("", "ERROR 06-03 10:22:41 [multiproc_executor.py:751]", [
        (f"{DL}/vllm/model_executor/model_loader/utils.py", 104, "process_weights_after_loading"),
        (f"{DL}/vllm/model_executor/layers/quantization/fp8.py", 398, "process_weights_after_loading"),
        (f"{DL}/vllm/utils/deep_gemm.py", 480, "transform_sf_into_required_layout"),
    ], SF)
    f["torchserve_model_log_unknown_sf.log"] = [ts.format(s=41, ms=100 + i) + x for i, x in enumerate(tb)]
    # A tqdm bar with no newline before the error (the free-memory check right after the load bar).
    f["tqdm_glued_free_memory.log"] = [
        "INFO 10-08 14:02:11 [gpu_model_runner.py:2602] Starting to load model /models/Mistral-Small-24B...",
        "Loading safetensors checkpoint shards: 100%|##########| 10/10 [00:21<00:00,  2.10s/it]ValueError: Free memory on device cuda:0 (18.1/47.5 GiB) on startup is less than desired GPU memory utilization (0.92, 43.7 GiB). Decrease GPU memory utilization or reduce GPU memory used by other processes.",
    ]
    # The target hard-wrapped over three lines by a terminal (type / path / message).
    f["hard_wrapped_unknown_sf.log"] = [
        "(Worker_TP0 pid=2210) ERROR 01-30 16:45:09 [multiproc_executor.py:751] RuntimeError: Assertion error",
        "(/opt/build/.deps/deepgemm-src/csrc/apis/layout.hpp:61):",
        "Unknown SF transformation",
    ]
    # A short paste without level, prefix or time: the KV cache does not fit.
    f["bare_paste_kv_cache.log"] = [
        "# GPU blocks: 2131, # CPU blocks: 4096",
        "The model's max seq len (65536) is larger than the maximum number of tokens that can be stored in KV cache (34096). Try increasing `gpu_memory_utilization` or decreasing `max_model_len` when initializing the engine.",
    ]
    # SGLang form of the target: tvm.error.InternalError under `[time TPn]` records.
    f["sglang_tvm_unknown_sf.log"] = [
        "[2026-04-02 19:05:10 TP1] Load weight begin. avail mem=30.44 GB",
        "[2026-04-02 19:07:52 TP1] Scheduler hit an exception: Traceback (most recent call last):",
        '  File "/srv/sglang/python/sglang/srt/managers/scheduler.py", line 2890, in run_scheduler_process',
        '  File "/srv/sglang/python/sglang/srt/model_executor/model_runner.py", line 702, in load_model',
        '  File "/srv/sglang/python/sglang/srt/layers/quantization/fp8.py", line 540, in process_weights_after_loading',
        f'  File "{DL}/deep_gemm/__init__.py", line 239, in transform_sf_into_required_layout',
        "tvm.error.InternalError: Assertion error (/deepgemm/csrc/apis/layout.hpp:61): Unknown SF transformation",
    ]
    # TensorRT-LLM: `[TRT-LLM] [RANK n] [E]` executor failing on memory for the KV cache.
    f["trtllm_rank_kv_cache.log"] = [
        "[02/19/2026-07:31:02] [TRT-LLM] [RANK 3] [I] Memory used after loading model weights (inside torch) in memory usage profiling: 70.12 GiB",
        "[02/19/2026-07:31:40] [TRT-LLM] [RANK 3] [E] Failed to initialize executor on rank 3: Executor creation failed due to insufficient GPU memory.",
        "",
        "The following component could not be created: KV cache",
        "Total GPU memory (GiB): 79.11",
    ]
    # An uncaught exception no rule knows, ending the engine core: class unknown, never silent.
    f["uncaught_unknown_engine_core.log"] = [
        "(EngineCore_DP0 pid=301) INFO 12-02 09:10:00 [core.py:90] Initializing a V1 LLM engine (v0.12.1) with config: model='acme/chat-7b', tensor_parallel_size=1, quantization=None",
        "(EngineCore_DP0 pid=301) Process EngineCore_DP0:",
        "(EngineCore_DP0 pid=301) Traceback (most recent call last):",
        '(EngineCore_DP0 pid=301)   File "/usr/lib/python3.12/multiprocessing/process.py", line 314, in _bootstrap',
        "(EngineCore_DP0 pid=301)     self.run()",
        f'(EngineCore_DP0 pid=301)   File "{DL}/vllm/v1/engine/core.py", line 712, in run_engine_core',
        "(EngineCore_DP0 pid=301)     raise e",
        f'(EngineCore_DP0 pid=301)   File "{DL}/vllm/v1/engine/core.py", line 530, in process_input_sockets',
        "(EngineCore_DP0 pid=301) zmq.error.ZMQError: Address family not supported by protocol",
    ]
    # A host application's Python logger around vLLM's own prefixed, headered lines.
    host = "2026-05-20 11:02:{s} - acme.serving.engine - {lvl} - "
    tb = worker_tb("(EngineCore_DP0 pid=52) ", "ERROR 05-20 11:02:58 [core.py:708]", [
        (f"{DL}/vllm/v1/engine/core.py", 500, "__init__"),
        (f"{DL}/vllm/v1/worker/gpu_worker.py", 201, "init_device"),
    ], "RuntimeError: CUDA error: no kernel image is available for execution on the device")
    f["host_logger_no_kernel_image.log"] = [
        host.format(s="33,410", lvl="INFO") + "(EngineCore_DP0 pid=52) INFO 05-20 11:02:33 [core.py:90] Initializing a V1 LLM engine (v0.11.0) with config: model='acme/coder-14b', tensor_parallel_size=1",
        host.format(s="58,902", lvl="ERROR") + "(EngineCore_DP0 pid=52) ERROR 05-20 11:02:58 [core.py:708] EngineCore failed to start.",
    ] + [host.format(s="58,903", lvl="ERROR") + x for x in tb]
    # Healthy: a warning-level traceback the server survives, a tqdm bar, quoted INFO lines.
    f["healthy_pasted_warnings.log"] = [
        "> INFO 12-02 09:10:00 [__init__.py:235] Automatically detected platform cuda.",
        "> WARNING 12-02 09:10:04 [utils.py:190] Failed to import optional package, falling back",
        "> WARNING 12-02 09:10:04 [utils.py:190] Traceback (most recent call last):",
        '> WARNING 12-02 09:10:04 [utils.py:190]   File "/opt/app/plugins.py", line 12, in load_plugins',
        "> WARNING 12-02 09:10:04 [utils.py:190] ModuleNotFoundError: No module named 'acme_plugins'",
        "Loading safetensors checkpoint shards: 100%|##########| 4/4 [00:03<00:00,  1.33it/s]",
        "> INFO 12-02 09:11:20 [api_server.py:1850] Starting vLLM API server 0 on http://0.0.0.0:8000",
    ]
    # Reading as a person reads (parse/message_reading.h) and partial evidence.
    # The target pasted from the middle of its traceback: no header, the outer frames
    # (post_load_weights) cut off. Missing evidence: the target, partial.
    f["trimmed_traceback_unknown_sf.log"] = [
        'File "/srv/sglang/python/sglang/srt/models/deepseek_v3.py", line 2210, in _requant_fp8_block_scales',
        "    layer.weight_scale_inv.data = transform_sf_into_required_layout(",
        f'File "{DL}/deep_gemm/__init__.py", line 239, in transform_sf_into_required_layout',
        "    return _C.transform_sf_into_required_layout(sf, mn, k, recipe, ...)",
        "tvm.error.InternalError: Assertion error (/deepgemm/csrc/apis/layout.hpp:61): Unknown SF transformation",
    ]
    # The assertion split where no terminal splits it: the type alone, the location, the text.
    f["split_three_lines_unknown_sf.log"] = [
        "RuntimeError: Assertion error",
        "(/opt/build/.deps/deepgemm-src/csrc/apis/layout.hpp:61):",
        "Unknown SF transformation",
    ]
    # An exception built with several strings prints as Python's repr of a tuple.
    f["repr_tuple_min_capability.log"] = [
        "RuntimeError: ('The quantization method fp8 is not supported for ', 'the current GPU. Min capability: 89. ', 'Current capability: 86.')",
    ]
    # A structured logger's one-line JSON record holding a traceback with escaped newlines.
    f["json_record_cuda_oom.log"] = [
        '{"time": "2026-07-14T06:12:09Z", "level": "error", "msg": "Traceback (most recent call last):\\n  File \\"/srv/app/engine.py\\", line 88, in warm_up\\n    runner.profile_run()\\ntorch.OutOfMemoryError: CUDA out of memory. Tried to allocate 3.00 GiB. GPU 0 has a total capacity of 44.53 GiB of which 1.02 GiB is free.\\n"}',
    ]
    # A paste that ends in an exception no rule knows: never silent, the catch-all, partial.
    f["paste_ends_in_unknown_exception.log"] = [
        "INFO 11-20 08:00:01 [api_server.py:1520] vLLM API server version 0.12.0",
        "Traceback (most recent call last):",
        '  File "/srv/app/launch.py", line 41, in build_tokenizer',
        "    vocab = json.load(fh)",
        "json.decoder.JSONDecodeError: Expecting value: line 1 column 1 (char 0)",
    ]
    # An operator's Ctrl-C at the end of a log: a stop, not a failure.
    f["paste_ends_in_keyboard_interrupt.log"] = [
        "INFO 11-20 08:00:01 [api_server.py:1520] vLLM API server version 0.12.0",
        "INFO 11-20 08:03:10 [launcher.py:44] Route: /v1/chat/completions, Methods: POST",
        "^CTraceback (most recent call last):",
        '  File "/srv/venv/bin/vllm", line 8, in <module>',
        "    sys.exit(main())",
        "KeyboardInterrupt",
    ]
    return f


def gen_wild():
    os.makedirs(W, exist_ok=True)
    for name, lines in files().items():
        with open(os.path.join(W, name), "w", encoding="utf-8", newline="\n") as fh:
            fh.write("\n".join(lines) + "\n")
