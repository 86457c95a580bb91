"""Fixtures for the target's siblings and for other failure classes (see ../README.md)."""

import datetime as dt

from vlog import Line, Proc, exc, frame, multi, raw, rec, write_plain
from vllm_scenes import UNKNOWN_RECIPE, UNKNOWN_SF, Cfg, Scene, T

OOM_FMT = ("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate {alloc}. GPU {gpu} has a total capacity "
           "of {total} of which {free} is free. {other}Including non-PyTorch memory, this process has {used} memory "
           "in use. Of the allocated memory {alloc_pt} is allocated by PyTorch, and {reserved} is reserved by "
           "PyTorch but unallocated. If reserved but unallocated memory is large try setting "
           "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True to avoid fragmentation.  See documentation for Memory "
           "Management  (https://pytorch.org/docs/stable/notes/cuda.html#environment-variables)")


def tb_qwen3_to_linear(s, model_py="qwen3.py"):
    """Eager forward of a Qwen3 dense model from _dummy_run down to a quantized linear layer."""
    V = s.c.V
    M = f"{V}/model_executor/models"
    return (s.tb_module_call()
            + frame(f"{M}/{model_py}", 320, "forward",
                    "hidden_states = self.model(input_ids, positions, intermediate_tensors,",
                    "self.model(input_ids, positions, intermediate_tensors,")
            + frame(f"{V}/compilation/decorators.py", 310, "__call__", "return self.forward(*args, **kwargs)",
                    "self.forward(*args, **kwargs)")
            + frame(f"{M}/qwen2.py", 399, "forward",
                    "hidden_states, residual = layer(positions, hidden_states, residual)",
                    "layer(positions, hidden_states, residual)")
            + s.tb_module_call()
            + frame(f"{M}/{model_py}", 223, "forward", "hidden_states = self.self_attn(", "self.self_attn(")
            + s.tb_module_call()
            + frame(f"{M}/{model_py}", 141, "forward", "qkv, _ = self.qkv_proj(hidden_states)",
                    "self.qkv_proj(hidden_states)")
            + s.tb_module_call()
            + frame(f"{V}/model_executor/layers/linear.py", 565, "forward",
                    "output_parallel = self.quant_method.apply(self, input_, bias)",
                    "self.quant_method.apply(self, input_, bias)")
            + frame(f"{V}/model_executor/layers/quantization/fp8.py", 519, "apply",
                    "return self.fp8_linear.apply_weights(layer, x, bias)",
                    "self.fp8_linear.apply_weights(layer, x, bias)")
            + frame(f"{V}/model_executor/kernels/linear/scaled_mm/BlockScaledMMLinearKernel.py", 126,
                    "apply_weights", "output = self.apply_block_scaled_mm(", "self.apply_block_scaled_mm("))


def keyerror_tp4(out, G):
    c = Cfg(model="/mnt/models/qwen3-235b-a22b-fp8-requant", arch="Qwen3MoeForCausalLM", tp=4, ep=True,
            worker_name="Worker_TP{r}_EP{r}", device="NVIDIA H100 80GB HBM3", cap=None, consumer=False,
            start=dt.datetime(2026, 2, 26, 21, 7, 12), api_pid=1, engine_pid=301, worker_pids=[367, 368, 369, 370],
            seed=61, shards=24, load_secs=[61.83, 62.40, 61.95, 62.21], host="h100-pod-3", ip="10.12.4.66",
            max_len=40960, mem_util=0.93, nk="N=1152,K=4096", w8a8_warning=False,
            psm="psm_77c0de41", ipc="ipc:///tmp/2b3c4d5e-6f70-4182-93a4-b5c6d7e8f901")
    s = Scene(c)
    s.startup()
    # rank 2 never finishes load_weights, so it never logs "Loading weights took"
    s.lines = [l for l in s.lines if not (l.owner is s.workers[2] and "Loading weights took" in l.text)]
    V = c.V
    fail_t = s.at(s.load_done)
    # ranks 0, 1, 3 finish loading and wait for the ready handshake
    s.mix([rec(s.workers[r], "INFO", fail_t, "gpu_model_runner.py:2667",
               f"Model loading took 55.2187 GiB and {c.load_secs[r] + 2.1:.6f} seconds") for r in (0, 1, 3)])
    tb = s.tb_worker_head()
    tb += frame(f"{V}/model_executor/model_loader/base_loader.py", 49, "load_model",
                "self.load_weights(model, model_config)")
    tb += frame(f"{V}/model_executor/model_loader/default_loader.py", 297, "load_weights",
                "loaded_weights = model.load_weights(", "model.load_weights(")
    tb += frame(f"{V}/model_executor/models/qwen3_moe.py", 744, "load_weights",
                "return loader.load_weights(weights)", "loader.load_weights(weights)")
    tb += frame(f"{V}/model_executor/models/utils.py", 291, "load_weights",
                'autoloaded_weights = set(self._load_module("", self.module, weights))',
                'self._load_module("", self.module, weights)')
    tb += frame(f"{V}/model_executor/models/utils.py", 249, "_load_module",
                "loaded_params = module_load_weights(weights)", "module_load_weights(weights)")
    tb += frame(f"{V}/model_executor/models/qwen3_moe.py", 640, "load_weights",
                "param = params_dict[name]", tilde=("params_dict", "[name]"))
    tb.append("KeyError: 'model.layers.12.mlp.experts.w2_weight_scale_inv'")
    s.startup_failure_tail(fail_t, [2], lambda r: tb, terminated=(0, 1, 3))
    write_plain(out(G, "vllm_tp4_one_rank_keyerror.log"), s.lines)


def healthy_tp2(out, G):
    c = Cfg(kernel="TritonFp8BlockScaledMMKernel", moe_backend="Triton", moe_config="E=128,N=384",
            start=dt.datetime(2026, 3, 6, 7, 52, 18), api_pid=1, engine_pid=164, worker_pids=[230, 231], seed=71,
            load_secs=[10.96, 11.31], host="vllm-qwen3-ok", ip="10.42.0.23",
            psm="psm_e1f2a3b4", ipc="ipc:///tmp/8a7b6c5d-4e3f-4210-9fed-cba098765432")
    s = Scene(c)
    s.startup()
    t = s.post_load(15.2734)
    t = s.kv_and_ready(t, 9.84, 214_896, 6.56)
    t = s.graphs(t)
    s.server_up(t + 1, 71.46)
    write_plain(out(G, "vllm_tp2_healthy.log"), s.lines)


def unknown_recipe_warmup(out, G):
    c = Cfg(model="Qwen/Qwen3-Coder-30B-A3B-Instruct-FP8", start=dt.datetime(2026, 2, 3, 18, 26, 40), api_pid=1,
            engine_pid=139, worker_pids=[205, 206], seed=81, shards=6, load_secs=[9.71, 10.05],
            host="coder-5090", ip="10.8.0.14", psm="psm_3a4b5c6d",
            ipc="ipc:///tmp/6f5e4d3c-2b1a-4098-8765-43210fedcba9")
    s = Scene(c)
    s.startup()
    s.add(rec(s.workers[0], "INFO", s.at(s.load_done), "deep_gemm.py:95", "DeepGEMM E8M0 disabled on current configuration."))
    t = s.post_load(15.2734)
    t = s.kv_and_ready(t, 9.61, 209_872, 6.40)
    V, S = c.V, c.site
    w0 = s.workers[0]
    s.add([Line(w0, "stderr", f"{w0.pfx()}\rDeepGEMM warmup:   0%|          | 0/1568 [00:00<?, ?it/s]"
                              "\rDeepGEMM warmup:   0%|          | 0/1568 [00:01<?, ?it/s]", s.at(t + 2))])

    def tb(r):
        x = (["Traceback (most recent call last):"]
             + frame(f"{V}/v1/executor/multiproc_executor.py", 817, "worker_busy_loop",
                     "output = func(*args, **kwargs)", "func(*args, **kwargs)")
             + frame(f"{V}/v1/worker/gpu_worker.py", 404, "compile_or_warm_up_model", "kernel_warmup(self)")
             + frame(f"{V}/model_executor/warmup/kernel_warmup.py", 46, "kernel_warmup",
                     "deep_gemm_warmup(model, max_tokens)")
             + frame(f"{V}/model_executor/warmup/deep_gemm_warmup.py", 394, "deep_gemm_warmup",
                     "deepgemm_fp8_gemm_nt_warmup(model, max_tokens)")
             + frame(f"{V}/model_executor/warmup/deep_gemm_warmup.py", 209, "deepgemm_fp8_gemm_nt_warmup",
                     "_deepgemm_fp8_gemm_nt_warmup(w=w, ws=ws, max_tokens=max_tokens, pbar=pbar)")
             + frame(f"{V}/model_executor/warmup/deep_gemm_warmup.py", 178, "_deepgemm_fp8_gemm_nt_warmup",
                     "fp8_gemm_nt((a1q, a1q_scales), (w, ws), out)")
             + frame(f"{V}/utils/deep_gemm.py", 190, "fp8_gemm_nt",
                     "return _fp8_gemm_nt_impl(*args, disable_ue8m0_cast=not is_deep_gemm_e8m0_used(), **kwargs)",
                     "_fp8_gemm_nt_impl(*args, disable_ue8m0_cast=not is_deep_gemm_e8m0_used(), **kwargs)")
             + [UNKNOWN_RECIPE])
        return x

    s.rpc_failure_tail(s.at(t + 3), "compile_or_warm_up_model", UNKNOWN_RECIPE.split(": ", 1)[1], tb)
    write_plain(out(G, "vllm_tp2_unknown_recipe_warmup.log"), s.lines)


def unknown_sf_runtime(out, G):
    c = Cfg(model="Qwen/Qwen3-8B-FP8", arch="Qwen3ForCausalLM", moe=False, nk="N=6144,K=4096", enforce_eager=True,
            start=dt.datetime(2026, 2, 19, 13, 2, 55), api_pid=1, engine_pid=128, worker_pids=[194, 195], seed=91,
            shards=2, load_secs=[3.88, 4.02], host="sf-runtime", ip="10.9.1.7", psm="psm_aa11bb22",
            ipc="ipc:///tmp/13572468-ace0-4bdf-9753-1eca86420bdf")
    s = Scene(c)
    s.startup()
    t = s.post_load(4.7921)
    V = c.V

    def tb(r):
        return (s.tb_rpc_head("determine_available_memory") + tb_qwen3_to_linear(s)
                + frame(f"{V}/model_executor/kernels/linear/scaled_mm/deep_gemm.py", 128, "apply_block_scaled_mm",
                        "Bs = transform_sf_into_required_layout(", "transform_sf_into_required_layout(")
                + frame(f"{V}/utils/deep_gemm.py", 494, "transform_sf_into_required_layout",
                        "return _transform_sf_into_required_layout_impl(", "_transform_sf_into_required_layout_impl(")
                + [UNKNOWN_SF])

    s.rpc_failure_tail(s.at(t + 1), "determine_available_memory", UNKNOWN_SF.split(": ", 1)[1], tb)
    write_plain(out(G, "vllm_tp2_unknown_sf_runtime.log"), s.lines)


def cutlass_error_internal(out, G):
    c = Cfg(model="Qwen/Qwen3-8B-FP8", arch="Qwen3ForCausalLM", moe=False, kernel="CutlassFp8BlockScaledMMKernel",
            device="NVIDIA RTX PRO 6000 Blackwell Max-Q Workstation Edition", nk="N=6144,K=4096", enforce_eager=True,
            color=False, start=dt.datetime(2026, 1, 28, 11, 40, 3), api_pid=1, engine_pid=117, worker_pids=[183, 184],
            seed=101, shards=2, load_secs=[4.21, 4.37], host="maxq-01", ip="10.3.3.3", w8a8_warning=False,
            psm="psm_c0ffee01", ipc="ipc:///tmp/0f1e2d3c-4b5a-4697-8877-665544332211")
    s = Scene(c)
    s.startup()
    t = s.post_load(4.7921)
    V, S = c.V, c.site
    err = "cutlass_gemm_caller, /workspace/csrc/quantization/w8a8/cutlass/c3x/cutlass_gemm_caller.cuh:61, Error Internal"

    def tb(r):
        return (s.tb_rpc_head("determine_available_memory") + tb_qwen3_to_linear(s)
                + frame(f"{V}/model_executor/kernels/linear/scaled_mm/cutlass.py", 274, "apply_block_scaled_mm",
                        "return ops.cutlass_scaled_mm(", "ops.cutlass_scaled_mm(")
                + frame(f"{V}/_custom_ops.py", 908, "cutlass_scaled_mm",
                        "torch.ops._C.cutlass_scaled_mm(out, a, b, scale_a, scale_b, bias)")
                + frame(f"{S}/torch/_ops.py", 1243, "__call__", "return self._op(*args, **kwargs)",
                        "self._op(*args, **kwargs)")
                + ["RuntimeError: " + err])

    s.rpc_failure_tail(s.at(t + 1), "determine_available_memory", err, tb)
    write_plain(out(G, "vllm_tp2_cutlass_error_internal.log"), s.lines)


def cuda_oom_tp2(out, path, **kw):
    """Profile-run OOM on both ranks (dense bf16 model, eager)."""
    c = Cfg(**kw)
    s = Scene(c)
    s.startup()
    t = s.post_load(c.dtype_note["model_gib"])
    V = c.V
    M = f"{V}/model_executor/models"
    d = c.dtype_note

    def tb(r):
        x = s.tb_rpc_head("determine_available_memory") + s.tb_module_call()
        x += d["frames"](s, M, V)
        x.append(OOM_FMT.format(gpu=r, **d["oom"][r]))
        return x

    first = OOM_FMT.format(gpu=0, **d["oom"][0]).split(": ", 1)[1]
    s.rpc_failure_tail(s.at(t + 2), "determine_available_memory", first, tb)
    write_plain(path, s.lines)
    return s


def qwen3_mlp_frames(s, M, V):
    return (frame(f"{M}/qwen3.py", 320, "forward",
                  "hidden_states = self.model(input_ids, positions, intermediate_tensors,",
                  "self.model(input_ids, positions, intermediate_tensors,")
            + frame(f"{V}/compilation/decorators.py", 310, "__call__", "return self.forward(*args, **kwargs)",
                    "self.forward(*args, **kwargs)")
            + frame(f"{M}/qwen2.py", 399, "forward",
                    "hidden_states, residual = layer(positions, hidden_states, residual)",
                    "layer(positions, hidden_states, residual)")
            + s.tb_module_call()
            + frame(f"{M}/qwen3.py", 236, "forward", "hidden_states = self.mlp(hidden_states)",
                    "self.mlp(hidden_states)")
            + s.tb_module_call()
            + frame(f"{M}/qwen2.py", 99, "forward", "x = self.act_fn(gate_up)", "self.act_fn(gate_up)")
            + s.tb_module_call()
            + frame(f"{V}/model_executor/custom_op.py", 46, "forward",
                    "return self._forward_method(*args, **kwargs)", "self._forward_method(*args, **kwargs)")
            + frame(f"{V}/model_executor/layers/activation.py", 96, "forward_cuda",
                    "out = torch.empty(output_shape, dtype=x.dtype, device=x.device)",
                    "torch.empty(output_shape, dtype=x.dtype, device=x.device)"))


def deepseek_moe_frames(s, M, V):
    return (frame(f"{M}/deepseek_v2.py", 1342, "forward",
                  "hidden_states = self.model(input_ids, positions, intermediate_tensors,",
                  "self.model(input_ids, positions, intermediate_tensors,")
            + frame(f"{V}/compilation/decorators.py", 310, "__call__", "return self.forward(*args, **kwargs)",
                    "self.forward(*args, **kwargs)")
            + frame(f"{M}/deepseek_v2.py", 1267, "forward",
                    "hidden_states, residual = layer(positions, hidden_states, residual)",
                    "layer(positions, hidden_states, residual)")
            + s.tb_module_call()
            + frame(f"{M}/deepseek_v2.py", 1163, "forward", "hidden_states = self.mlp(hidden_states)",
                    "self.mlp(hidden_states)")
            + s.tb_module_call()
            + frame(f"{M}/deepseek_v2.py", 301, "forward", "fused_moe_out = self.experts(",
                    "self.experts(")
            + s.tb_module_call()
            + frame(f"{V}/model_executor/layers/fused_moe/layer.py", 2004, "forward_native",
                    "return self.forward_impl(hidden_states, router_logits)",
                    "self.forward_impl(hidden_states, router_logits)")
            + frame(f"{V}/model_executor/layers/fused_moe/layer.py", 2186, "forward_impl",
                    "final_hidden_states = self.quant_method.apply(", "self.quant_method.apply(")
            + frame(f"{V}/model_executor/layers/fused_moe/fused_moe.py", 1596, "fused_experts_impl",
                    "cache13 = torch.empty(", "torch.empty("))


def oom_files(out, G, EX):
    cuda_oom_tp2(
        out, out(G, "vllm_tp2_cuda_oom.log"),
        model="Qwen/Qwen3-14B", arch="Qwen3ForCausalLM", quant=None, kernel=None, moe=False, w8a8_warning=False,
        enforce_eager=True, color=False, batched_tokens=65536, mem_util=0.96,
        extra_args={"max_num_batched_tokens": 65536}, start=dt.datetime(2026, 1, 15, 22, 9, 31), api_pid=1,
        engine_pid=152, worker_pids=[218, 219], seed=111, shards=8, load_secs=[8.44, 8.91], host="rtx5090-lab",
        ip="10.5.5.21", psm="psm_0dd0beef", ipc="ipc:///tmp/fedcba98-7654-4321-8abc-def012345678",
        dtype_note={"model_gib": 13.9081, "frames": qwen3_mlp_frames, "oom": [
            dict(alloc="2.00 GiB", total="31.36 GiB", free="1.43 GiB", other="", used="29.91 GiB",
                 alloc_pt="28.77 GiB", reserved="402.18 MiB"),
            dict(alloc="2.00 GiB", total="31.36 GiB", free="1.41 GiB", other="", used="29.93 GiB",
                 alloc_pt="28.77 GiB", reserved="424.07 MiB")]})
    cuda_oom_tp2(
        out, out(EX, "moonlight-16b-h100-oom", "worker.log"),
        model="moonshotai/Moonlight-16B-A3B-Instruct", arch="DeepseekV3ForCausalLM", quant=None, kernel=None,
        moe=False, w8a8_warning=False, device="NVIDIA H100 80GB HBM3", cap=None, consumer=False,
        enforce_eager=True, batched_tokens=131072, mem_util=0.95, max_len=131072,
        extra_args={"max_num_batched_tokens": 131072, "trust_remote_code": True},
        start=dt.datetime(2026, 3, 12, 9, 31, 2), api_pid=1, engine_pid=98, worker_pids=[164, 165], seed=121,
        shards=14, load_secs=[14.62, 15.03], host="h100-shared-2", ip="10.30.1.12", psm="psm_5e5e5e5e",
        ipc="ipc:///tmp/a1b2c3d4-e5f6-4a7b-8c9d-0e1f2a3b4c5d",
        dtype_note={"model_gib": 14.7412, "frames": deepseek_moe_frames, "oom": [
            dict(alloc="11.25 GiB", total="79.19 GiB", free="6.87 GiB", other="Process 48213 has 37.50 GiB memory in use. ",
                 used="34.80 GiB", alloc_pt="33.91 GiB", reserved="318.44 MiB"),
            dict(alloc="11.25 GiB", total="79.19 GiB", free="6.91 GiB", other="Process 48297 has 37.50 GiB memory in use. ",
                 used="34.76 GiB", alloc_pt="33.91 GiB", reserved="276.02 MiB")]})


def watchdog_record(s, r, ns0, fire):
    """Rank r's c10 watchdog timeout at `fire`: its [rankN]: lines, the frame dump, and the C++
    failure record (terminate/what()/dump) on raw stderr."""
    c = s.c
    w = s.workers[r]

    def c10(us, _ns0=ns0):  # c10 log time: the record second plus nanoseconds
        return f"{fire:%m%d %H:%M:%S}.{_ns0 + us * 1000:09d}"

    ts = c10(0)
    work = "WorkNCCL(SeqNum=5, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000)"
    lib = f"{c.site}/torch/lib"
    body = [
        f"[rank{r}]:[E{ts} ProcessGroupNCCL.cpp:632] [Rank {r}] Watchdog caught collective operation timeout: "
        f"{work} ran for 600000 milliseconds before timing out.",
        f"[rank{r}]:[E{c10(311)} ProcessGroupNCCL.cpp:2268] [PG ID 2 PG GUID 3 Rank {r}]  "
        "failure detected by watchdog at work sequence id: 5 PG status: last enqueued work: 5, last completed work: 4",
        f"[rank{r}]:[E{c10(402)} ProcessGroupNCCL.cpp:670] Stack trace of the failed "
        "collective not found, potentially because FlightRecorder is disabled. You can enable it by setting "
        "TORCH_NCCL_TRACE_BUFFER_SIZE to a non-zero value.",
        f"[rank{r}]:[E{c10(455)} ProcessGroupNCCL.cpp:684] [Rank {r}] Some NCCL operations "
        "have failed or timed out. Due to the asynchronous nature of CUDA kernels, subsequent GPU operations might "
        "run on corrupted/incomplete data.",
        f"[rank{r}]:[E{c10(497)} ProcessGroupNCCL.cpp:698] [Rank {r}] To avoid data "
        "inconsistency, we are taking the entire process down.",
        f"[rank{r}]:[E{c10(812)} ProcessGroupNCCL.cpp:1899] [PG ID 2 PG GUID 3 Rank {r}] "
        f"Process group watchdog thread terminated with exception: [Rank {r}] Watchdog caught collective operation "
        f"timeout: {work} ran for 600000 milliseconds before timing out.",
        "Exception raised from checkTimeout at /pytorch/torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:635 (most recent call first):",
        f"frame #0: c10::Error::Error(c10::SourceLocation, std::string) + 0x98 (0x7f{r}e3b2d1eb8 in {lib}/libc10.so)",
        "frame #1: c10d::ProcessGroupNCCL::WorkNCCL::checkTimeout(std::optional<std::chrono::duration<long, "
        f"std::ratio<1l, 1000l> > >) + 0x23d (0x7f{r}de1a4b8ad in {lib}/libtorch_cuda.so)",
        f"frame #2: c10d::ProcessGroupNCCL::Watchdog::runLoop() + 0xc6c (0x7f{r}de1a4d2fc in {lib}/libtorch_cuda.so)",
        f"frame #3: c10d::ProcessGroupNCCL::Watchdog::run() + 0xdf (0x7f{r}de1a4e1ff in {lib}/libtorch_cuda.so)",
        f"frame #4: <unknown function> + 0xdc253 (0x7f{r}e3a8dc253 in /lib/x86_64-linux-gnu/libstdc++.so.6)",
        f"frame #5: <unknown function> + 0x94ac3 (0x7f{r}e3c694ac3 in /lib/x86_64-linux-gnu/libc.so.6)",
        f"frame #6: <unknown function> + 0x126850 (0x7f{r}e3c726850 in /lib/x86_64-linux-gnu/libc.so.6)",
        "",
        "terminate called after throwing an instance of 'c10::DistBackendError'",
        f"  what():  [PG ID 2 PG GUID 3 Rank {r}] Process group watchdog thread terminated with exception: "
        f"[Rank {r}] Watchdog caught collective operation timeout: {work} ran for 600000 milliseconds before timing out.",
        "Exception raised from checkTimeout at /pytorch/torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:635 (most recent call first):",
        f"frame #0: c10::Error::Error(c10::SourceLocation, std::string) + 0x98 (0x7f{r}e3b2d1eb8 in {lib}/libc10.so)",
        "<omitting python frames>",
        f"frame #1: c10d::ProcessGroupNCCL::Watchdog::run() + 0x1a4 (0x7f{r}de1a4e2c4 in {lib}/libtorch_cuda.so)",
        "",
    ]
    return [Line(w, "stderr", l, fire) for l in body]


def dead_engine_tail(s, t1, dead_worker, port):
    """The engine core noticing a dead worker, the API server's EngineDeadError, 500s and shutdown."""
    c, api = s.c, s.api
    s.add(rec(s.engine, "ERROR", t1, "multiproc_executor.py:154",
              f"Worker proc VllmWorker-{dead_worker} died unexpectedly, shutting down executor."))
    V = c.V
    tb = (["Traceback (most recent call last):"]
          + frame(f"{V}/v1/engine/async_llm.py", 439, "output_handler",
                  "outputs = await engine_core.get_output_async()", "await engine_core.get_output_async()")
          + frame(f"{V}/v1/engine/core_client.py", 846, "get_output_async",
                  "raise self._format_exception(outputs) from None")
          + ["vllm.v1.engine.exceptions.EngineDeadError: EngineCore encountered an issue. "
             "See stack trace (above) for the root cause."])
    s.add(exc(api, t1, "async_llm.py:480", "AsyncLLM output_handler failed.", tb))
    for k in range(3):
        s.add([Line(api, "stderr", f"{api.pfx()}INFO:     10.77.3.41:{port + 5 + k} - \"POST /v1/chat/completions HTTP/1.1\" 500 Internal Server Error", t1)])
    s.add([Line(api, "stderr", f"{api.pfx()}INFO:     Shutting down", t1 + T(seconds=1)),
           Line(api, "stderr", f"{api.pfx()}INFO:     Waiting for application shutdown.", t1 + T(seconds=1)),
           Line(api, "stderr", f"{api.pfx()}INFO:     Application shutdown complete.", t1 + T(seconds=1)),
           Line(api, "stderr", f"{api.pfx()}INFO:     Finished server process [{api.pid}]", t1 + T(seconds=1))])
    s.add([Line(None, "stderr",
                "/usr/lib/python3.12/multiprocessing/resource_tracker.py:279: UserWarning: resource_tracker: "
                "There appear to be 1 leaked shared_memory objects to clean up at shutdown", t1 + T(seconds=1)),
           Line(None, "stderr", "  warnings.warn('resource_tracker: There appear to be %d '", t1 + T(seconds=1))])


def serving(s, api_port=53100):
    """Start-up, the server up, five requests served and three throughput lines: returns the time
    the traffic began."""
    t = s.post_load(30.5813)
    t = s.kv_and_ready(t, 7.12, 58_304, 1.78)
    t = s.graphs(t)
    t = s.server_up(t + 1, 96.04)
    api = s.api
    base = s.at(t)
    acc = []
    for k, (dt_s, code) in enumerate([(6, 200), (9, 200), (13, 200), (17, 200), (24, 200)]):
        acc.append(Line(api, "stderr", f"{api.pfx()}INFO:     10.77.3.41:{api_port + k} - \"POST /v1/chat/completions HTTP/1.1\" {code} OK",
                        base + T(seconds=dt_s)))
    stats = [(10, 412.3, 88.1, 3, 2.1), (20, 0.0, 121.6, 2, 2.9), (30, 905.7, 0.0, 4, 4.4)]
    for sec, pt, gt, run, kv in stats:
        acc += rec(api, "INFO", base + T(seconds=sec), "loggers.py:127",
                   f"Engine 000: Avg prompt throughput: {pt:.1f} tokens/s, Avg generation throughput: {gt:.1f} tokens/s, "
                   f"Running: {run} reqs, Waiting: 0 reqs, GPU KV cache usage: {kv:.1f}%, Prefix cache hit rate: 38.2%")
    acc.sort(key=lambda l: l.ts)
    s.add(acc)
    return base


def oom_cascade_tp4(out, G):
    """TP=4 serving; rank 2 runs out of memory in the forward pass and dies; ten minutes later the
    other ranks' watchdogs time out, the engine core reports the dead worker, the API server the
    dead engine: one failure and what it provoked."""
    c = Cfg(model="Qwen/Qwen3-32B", arch="Qwen3ForCausalLM", quant=None, kernel=None, moe=False, w8a8_warning=False,
            tp=4, device="NVIDIA L40S", cap=None, consumer=True, start=dt.datetime(2026, 11, 12, 8, 2, 41), api_pid=1,
            engine_pid=141, worker_pids=[205, 206, 207, 208], seed=173, shards=17,
            load_secs=[21.07, 21.66, 21.31, 21.48], host="l40s-12", ip="10.77.0.12", nccl_debug=True,
            psm="psm_6b6b6b6b", ipc="ipc:///tmp/5a4b3c2d-1e0f-4a9b-8c7d-6e5f4a3b2c1d")
    s = Scene(c)
    s.startup()
    base = serving(s)
    oom_at = base + T(seconds=31)
    V = c.V
    M = f"{V}/model_executor/models"
    tb = (["Traceback (most recent call last):"]
          + frame(f"{V}/v1/executor/multiproc_executor.py", 817, "worker_busy_loop",
                  "output = func(*args, **kwargs)", "func(*args, **kwargs)")
          + frame(f"{c.site}/torch/utils/_contextlib.py", 120, "decorate_context",
                  "return func(*args, **kwargs)", "func(*args, **kwargs)")
          + frame(f"{V}/v1/worker/gpu_worker.py", 447, "execute_model",
                  "output = self.model_runner.execute_model(scheduler_output,", "self.model_runner.execute_model(")
          + frame(f"{c.site}/torch/utils/_contextlib.py", 120, "decorate_context",
                  "return func(*args, **kwargs)", "func(*args, **kwargs)")
          + frame(f"{V}/v1/worker/gpu_model_runner.py", 2410, "execute_model",
                  "model_output = self._model_forward(", "self._model_forward(")
          + frame(f"{V}/v1/worker/gpu_model_runner.py", 2216, "_model_forward",
                  "return self.model(", "self.model(")
          + s.tb_module_call()
          + qwen3_mlp_frames(s, M, V)
          + [OOM_FMT.format(gpu=2, alloc="1.75 GiB", total="44.42 GiB", free="1.21 GiB", other="",
                            used="43.19 GiB", alloc_pt="38.02 GiB", reserved="2.66 GiB")])
    s.add(exc(s.workers[2], oom_at, "multiproc_executor.py:822", "WorkerProc hit an exception.", tb))
    fire = oom_at + T(seconds=600)
    for r, ns0 in ((0, 402118735), (1, 123456789), (3, 298765432)):
        s.add(watchdog_record(s, r, ns0, fire))
    dead_engine_tail(s, fire + T(seconds=1), dead_worker=2, port=53100)
    write_plain(out(G, "vllm_tp4_oom_cascade.log"), s.lines)


def nccl_timeout(out, G):
    c = Cfg(model="Qwen/Qwen3-32B", arch="Qwen3ForCausalLM", quant=None, kernel=None, moe=False, w8a8_warning=False,
            device="NVIDIA L40S", cap=None, consumer=True, start=dt.datetime(2026, 11, 4, 10, 9, 22), api_pid=1,
            engine_pid=133, worker_pids=[199, 200], seed=131, shards=17, load_secs=[21.07, 21.66], host="l40s-09",
            ip="10.77.0.9", nccl_debug=True, psm="psm_4e4e4e4e", ipc="ipc:///tmp/99887766-5544-4332-a110-ffeeddccbbaa")
    s = Scene(c)
    s.startup()
    base = serving(s)
    port = 53100
    # rank 1 stops making progress at base+31; ten minutes later both watchdogs fire
    hang = base + T(seconds=31)
    fire = hang + T(seconds=600)
    wd = [watchdog_record(s, r, ns0, fire) for r, ns0 in ((1, 123456789), (0, 402118735))]
    s.add(wd[0])
    s.add(wd[1])
    dead_engine_tail(s, fire + T(seconds=1), dead_worker=1, port=port)
    write_plain(out(G, "vllm_tp2_nccl_timeout.log"), s.lines)


def sglang(out, G):
    d0 = dt.datetime(2026, 2, 10, 9, 11, 20)

    def ts(sec, rank=None):
        t = d0 + T(seconds=sec)
        return f"[{t:%Y-%m-%d %H:%M:%S}{'' if rank is None else f' TP{rank}'}]"

    SG = "/sgl-workspace/sglang/python/sglang/srt"
    S = "/usr/local/lib/python3.12/dist-packages"
    L = []
    L.append(f"{ts(0)} server_args=ServerArgs(model_path='Qwen/Qwen3-30B-A3B-FP8', tokenizer_path='Qwen/Qwen3-30B-A3B-FP8', "
             "tokenizer_mode='auto', skip_tokenizer_init=False, load_format='auto', trust_remote_code=False, "
             "context_length=None, is_embedding=False, revision=None, host='0.0.0.0', port=30000, dtype='auto', "
             "kv_cache_dtype='auto', quantization='fp8', mem_fraction_static=0.85, max_running_requests=None, "
             "chunked_prefill_size=8192, max_prefill_tokens=16384, schedule_policy='fcfs', device='cuda', "
             "tp_size=2, pp_size=1, stream_interval=1, random_seed=718263519, log_level='info', "
             "served_model_name='Qwen/Qwen3-30B-A3B-FP8', dp_size=1, ep_size=1, attention_backend=None, "
             "enable_torch_compile=False, cuda_graph_max_bs=None, disable_cuda_graph=False)")
    L.append(f"{ts(1)} Using default HuggingFace chat template with detected content format: string")
    per = {0: [], 1: []}
    for r in (0, 1):
        p = per[r]
        p.append((7, f"{ts(7, r)} Attention backend not explicitly specified. Use flashinfer backend by default."))
        p.append((7, f"{ts(7, r)} Init torch distributed begin."))
        p.append((8, f"{ts(8, r)} sglang is using nccl==2.27.3"))
        p.append((9, f"{ts(9, r)} Custom allreduce is disabled because your platform lacks GPU P2P capability or P2P test failed."))
        p.append((10, f"{ts(10, r)} Init torch distributed ends. mem usage={0.61 + 0.02 * r:.2f} GB"))
        p.append((10, f"{ts(10, r)} Load weight begin. avail mem={30.12 - 0.02 * r:.2f} GB"))
        p.append((10, f"{ts(10, r)} Detected fp8 checkpoint. Please note that the format is experimental and subject to change."))
        p.append((11, f"{ts(11, r)} Using model weights format ['*.safetensors']"))
    per[0].append((11, "Loading safetensors checkpoint shards:   0% Completed | 0/7 [00:00<?, ?it/s]"))
    for i in range(1, 8):
        per[0].append((11 + 2 * i, f"Loading safetensors checkpoint shards: {int(100 * i / 7):3d}% Completed | {i}/7 "
                                    f"[00:{2 * i:02d}<00:{2 * (7 - i):02d},  1.9{i}s/it]"))
    per[0].append((25, "Loading safetensors checkpoint shards: 100% Completed | 7/7 [00:14<00:00,  1.98s/it]"))
    per[0].append((25, ""))
    per[0].append((26, f"{ts(26, 0)} Using default W8A8 Block FP8 kernel config. Performance might be sub-optimal! "
                       f"Config file not found at {SG}/layers/quantization/configs/N=6144,K=2048,"
                       "device_name=NVIDIA_GeForce_RTX_5090,dtype=fp8_w8a8,block_shape=[128,128].json"))
    import random
    rng = random.Random(141)
    merged = []
    a, b = per[0], per[1]
    while a or b:
        pick = a if (a and (not b or a[0][0] < b[0][0] or (a[0][0] == b[0][0] and rng.random() < 0.5))) else b
        merged.append(pick.pop(0)[1])
    L += merged

    def tb(r):
        return ([f"{ts(27, r)} Scheduler hit an exception: Traceback (most recent call last):"]
                + frame(f"{SG}/managers/scheduler.py", 2869, "run_scheduler_process", "scheduler = Scheduler(",
                        "Scheduler(")
                + frame(f"{SG}/managers/scheduler.py", 338, "__init__", "self.init_tp_model_worker()")
                + frame(f"{SG}/managers/scheduler.py", 474, "init_tp_model_worker", "self.tp_worker = TpModelWorker(",
                        "TpModelWorker(")
                + frame(f"{SG}/managers/tp_worker.py", 246, "__init__", "self._model_runner = ModelRunner(",
                        "ModelRunner(")
                + frame(f"{SG}/model_executor/model_runner.py", 340, "__init__", "self.initialize(min_per_gpu_memory)")
                + frame(f"{SG}/model_executor/model_runner.py", 423, "initialize", "self.load_model()")
                + frame(f"{SG}/model_executor/model_runner.py", 846, "load_model", "self.model = get_model(",
                        "get_model(")
                + frame(f"{SG}/model_loader/__init__.py", 28, "get_model", "return loader.load_model(",
                        "loader.load_model(")
                + frame(f"{SG}/model_loader/loader.py", 616, "load_model", "self.load_weights_and_postprocess(")
                + frame(f"{SG}/model_loader/loader.py", 633, "load_weights_and_postprocess",
                        "quant_method.process_weights_after_loading(module)")
                + frame(f"{SG}/layers/quantization/fp8.py", 437, "process_weights_after_loading",
                        "layer.weight_scale_inv.data = deep_gemm_wrapper.transform_sf_into_required_layout(",
                        "deep_gemm_wrapper.transform_sf_into_required_layout(")
                + frame(f"{SG}/layers/deep_gemm_wrapper/entrypoint.py", 143, "transform_sf_into_required_layout",
                        "return deep_gemm.transform_sf_into_required_layout(",
                        "deep_gemm.transform_sf_into_required_layout(")
                + ['  File "python/tvm_ffi/cython/function.pxi", line 904, in tvm_ffi.core.Function.__call__']
                + ["tvm.error.InternalError: Assertion error (/sgl-workspace/DeepGEMM/csrc/apis/layout.hpp:60): "
                   "Unknown SF transformation", ""])

    L += tb(1)
    L += tb(0)
    L.append(f"{ts(28)} Received sigquit from a child process. It usually means the child failed.")
    with open(out(G, "sglang_tp2_unknown_sf.log"), "wb") as f:
        for l in L:
            f.write(l.encode() + b"\n")


def generate(out, G, EX):
    keyerror_tp4(out, G)
    healthy_tp2(out, G)
    unknown_recipe_warmup(out, G)
    unknown_sf_runtime(out, G)
    cutlass_error_internal(out, G)
    oom_files(out, G, EX)
    nccl_timeout(out, G)
    oom_cascade_tp4(out, G)
    sglang(out, G)
