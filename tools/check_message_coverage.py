#!/usr/bin/env python3
"""Replays every harvested engine/library message as a worker's fatal exception.

For each message of the harvest (tools/harvest_messages.py, default
/work/harvest/messages.jsonl) one synthetic log file is written into a temp dir, shaped like
the engine's own worker failure (vLLM `WorkerProc failed to start.` block, SGLang `Scheduler hit
an exception:`, TensorRT-LLM `Failed to initialize executor on rank 0:`, lmdeploy/TurboMind,
Triton server); kernel libraries' messages (DeepGEMM, FlashInfer, CUTLASS, Triton) are raised
under a vLLM or SGLang worker. C++ checks print the text the user sees (TORCH_CHECK ->
`RuntimeError: <msg>`, DG_HOST_ASSERT -> `RuntimeError: Assertion error (<file>:<line>): <cond>`,
TLLM_CHECK -> `RuntimeError: [TensorRT-LLM][ERROR] Assertion failed: <msg> (<file>:<line>)`).

All files are replayed with ONE call:
    BIN replay --quiet --format jsonl --deployment-from '/([^/]+)\\.log$' TMPDIR/
and the incidents are mapped back to their message by deployment. Printed: per harvested
class, how many got their class, `unknown`, no incident at all, another class, and how many
of the messages of another class gave hardware_support (must be 0). Exit 1 if a class is below
--min (90%) or any non-hardware message gave hardware_support; 2 if the harvest is missing.
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

CLASSES = ["hardware_support", "model_bug", "resource", "distributed", "config", "unknown"]
KERNEL_LIBS = {"deepgemm", "flashinfer", "cutlass", "triton", "transformers", "pytorch"}
ENGINE_ORDER = ["vllm", "sglang", "tensorrt_llm", "deepgemm", "flashinfer", "cutlass", "triton",
                "lmdeploy", "tensorrtllm_backend", "triton_server", "transformers", "pytorch"]

# ----------------------------------------------------------------------------------------
# Plausible values for the `{}` placeholders, chosen from the placeholder's expression and the
# words just before it. Architecture tokens only where the message is about the architecture,
# so that a filled value never brings hardware words into a message that has none.
# ----------------------------------------------------------------------------------------


def fill_value(expr: str, before: str) -> str:
    e = expr.lower()
    b = before[-24:].lower()
    if re.search(r"(sm_?|sm)$", b):
        return "120"
    if re.search(r"capab|\barch\b|arch_|sm_version|cuda_arch", e) or re.search(r"capability:? ?$", b):
        return "120" if not re.search(r"\.\s*$", b) else "0"
    if "dtype" in e or re.search(r"dtype[ =:]*$", b):
        return "torch.float8_e4m3fn"
    if re.search(r"shape|size\(\)|\.size\b", e):
        return "torch.Size([4096, 7168])"
    if re.search(r"path|file|dir\b|_dir|folder", e):
        return "/models/Qwen3-30B-A3B-FP8/model.safetensors"
    if re.search(r"backend", e):
        return "FLASHINFER"
    if re.search(r"architect|model_type|model_cls|arch_name", e):
        return "DeepseekV3ForCausalLM"
    if re.search(r"quant", e):
        return "fp8"
    if re.search(r"version", e):
        return "2.9.0"
    if re.search(r"\bname\b|_name|key|prefix|param", e):
        return "model.layers.0.mlp.experts.w13_weight"
    if re.search(r"\b(e|err|exc|error|ex)\b|status|result", e):
        return "internal error"
    if re.search(r"device", e):
        return "cuda:0"
    if re.search(r"['\"]$", b):
        return "auto"
    return "4"


def fill(message: str, holes: list[str]) -> str:
    out, i, k = [], 0, 0
    for m in re.finditer(r"\{\}", message):
        out.append(message[i:m.start()])
        expr = holes[k] if k < len(holes) else ""
        out.append(fill_value(expr, "".join(out)))
        i, k = m.end(), k + 1
    out.append(message[i:])
    return "".join(out)


# ----------------------------------------------------------------------------------------
# Installed paths of a repo-relative file (what a traceback shows)
# ----------------------------------------------------------------------------------------

SITE = "/opt/venv/lib/python3.12/site-packages"


def installed_path(engine: str, path: str) -> str:
    if engine == "sglang":
        return "/sgl-workspace/sglang/" + path
    if engine == "cutlass":
        return f"{SITE}/nvidia_cutlass_dsl/python_packages/" + path.removeprefix("python/CuTeDSL/")
    if engine == "triton":
        if path.startswith("third_party/nvidia/backend/"):
            return f"{SITE}/triton/backends/nvidia/" + path.removeprefix("third_party/nvidia/backend/")
        return f"{SITE}/" + path.removeprefix("python/")
    if engine == "transformers":
        return f"{SITE}/" + path.removeprefix("src/")
    if engine == "tensorrt_llm":
        return "/usr/local/lib/python3.12/dist-packages/" + path
    if engine == "lmdeploy":
        return "/opt/py3/lib/python3.10/site-packages/" + path
    return f"{SITE}/" + path


def cpp_source_path(engine: str, path: str) -> str:
    return {
        "deepgemm": "/workspace/DeepGEMM/", "flashinfer": f"{SITE}/flashinfer/data/",
        "tensorrt_llm": "/src/tensorrt_llm/", "vllm": "/workspace/vllm/",
        "lmdeploy": "", "tensorrtllm_backend": "/workspace/tensorrtllm_backend/",
    }.get(engine, "/workspace/") + path


# ----------------------------------------------------------------------------------------
# The exception line(s) the user sees, per kind
# ----------------------------------------------------------------------------------------


def exception_text(row: dict, msg: str) -> tuple[str, str]:
    """(type, message) as printed on the traceback's last line."""
    kind, eng, path, line = row["kind"], row["engine"], row["file"], row["line"]
    src = cpp_source_path(eng, path)
    if kind == "dg_host_assert" or kind == "dg_unreachable":
        return "RuntimeError", f"Assertion error ({src}:{line}): {msg}"
    if kind == "tllm_check":
        return "RuntimeError", f"[TensorRT-LLM][ERROR] Assertion failed: {msg} ({src}:{line})"
    if kind == "tllm_throw":
        return "RuntimeError", f"[TensorRT-LLM][ERROR] {msg} ({src}:{line})"
    if kind == "flashinfer_check":
        return "RuntimeError", f"Error in function 'run' at {src}:{line}: {msg}"
    if kind == "cpp_throw" or kind.startswith("torch_check") or kind.startswith("tvm_ffi"):
        return row["type"] or "RuntimeError", msg
    if kind == "py_assert":
        return "AssertionError", msg
    return row["type"] or "RuntimeError", msg


def caller_frames(row: dict) -> list[tuple[str, int, str]]:
    """The frames between the engine's entry and the raising line (path, line, function)."""
    eng, kind = row["engine"], row["kind"]
    fn = row.get("function") or "<module>"
    if kind in ("py_raise", "py_assert", "py_log_exit"):
        return [(installed_path(eng, row["file"]), row["line"], fn)]
    # a C++ check: the Python frame that called into the extension
    if eng == "deepgemm":
        return [(f"{SITE}/vllm/utils/deep_gemm.py", 212, "fp8_gemm_nt")]
    if eng == "flashinfer":
        return [(f"{SITE}/flashinfer/gemm/gemm_base.py", 1540, "mm_fp4")]
    if eng == "vllm":
        return [(f"{SITE}/vllm/model_executor/layers/quantization/utils/w8a8_utils.py", 381, "apply"),
                (f"{SITE}/torch/_ops.py", 1243, "__call__")]
    return []


# ----------------------------------------------------------------------------------------
# Engine shapes. Each returns the text of one log file.
# ----------------------------------------------------------------------------------------


def vllm_log(row, etype, emsg, frames) -> str:
    p = "(Worker_TP0 pid=101) "
    h = "ERROR 07-01 12:00:01 [multiproc_executor.py:751] "
    lines = [f"{p}INFO 07-01 12:00:00 [gpu_model_runner.py:2338] Starting to load model /models/Qwen3-30B-A3B-FP8..."]
    if row["kind"] == "py_log_exit":
        base = os.path.basename(row["file"])
        for i, t in enumerate(emsg.split("\n")):
            lines.append(f"{p}ERROR 07-01 12:00:01 [{base}:{row['line']}] {t}" if i == 0 else f"{p}{t}")
        return "\n".join(lines) + "\n"
    lines += [f"{p}{h}WorkerProc failed to start.", f"{p}{h}Traceback (most recent call last):",
              f'{p}{h}  File "{SITE}/vllm/v1/executor/multiproc_executor.py", line 722, in worker_main']
    for path, ln, fn in frames:
        lines.append(f'{p}{h}  File "{path}", line {ln}, in {fn}')
    msg_lines = emsg.split("\n")
    lines.append(f"{p}{h}{etype}: {msg_lines[0]}" if emsg else f"{p}{h}{etype}")
    lines += [f"{p}{h}{t}" for t in msg_lines[1:]]
    lines.append(f"{p}{h}")
    return "\n".join(lines) + "\n"


def sglang_log(row, etype, emsg, frames) -> str:
    t0, t1 = "[2026-05-02 10:00:00 TP0]", "[2026-05-02 10:00:01 TP0]"
    lines = [f"{t0} Load weight begin. avail mem=78.50 GB"]
    if row["kind"] == "py_log_exit":
        lines.append(f"{t1} {emsg}")
    else:
        lines += [f"{t1} Scheduler hit an exception: Traceback (most recent call last):",
                  '  File "/sgl-workspace/sglang/python/sglang/srt/managers/scheduler.py", line 2552, in run_scheduler_process',
                  "    scheduler = Scheduler(",
                  '  File "/sgl-workspace/sglang/python/sglang/srt/model_executor/model_runner.py", line 293, in load_model',
                  "    self.model = get_model(",
                  ]
        for path, ln, fn in frames:
            path = path.replace(f"{SITE}/vllm/utils/deep_gemm.py",
                                "/sgl-workspace/sglang/python/sglang/srt/layers/deep_gemm_wrapper/entrypoint.py")
            lines.append(f'  File "{path}", line {ln}, in {fn}')
        lines.append(f"{etype}: {emsg}" if emsg else etype)
        lines.append("")
    lines.append("[2026-05-02 10:00:01] Received sigquit from a child process. It usually means the child failed.")
    return "\n".join(lines) + "\n"


def trtllm_log(row, etype, emsg, frames) -> str:
    lines = ["[07/01/2026-12:00:00] [TRT-LLM] [I] Starting TensorRT-LLM init.",
             "[TensorRT-LLM] TensorRT-LLM version: 1.1.0"]
    first = emsg.split("\n")[0]
    if row["kind"] in ("tllm_check", "tllm_throw", "cpp_throw") or row["kind"].startswith("torch_check"):
        lines.append(f"[07/01/2026-12:00:01] [TRT-LLM] [RANK 0] [E] Failed to initialize executor on rank 0: {first}")
        lines.append("1       0x7f7bdd5655dd tensorrt_llm::common::throwRuntimeError(char const*, int, char const*) + 76")
    elif row["kind"] == "py_log_exit":
        lines.append(f"[07/01/2026-12:00:01] [TRT-LLM] [RANK 0] [E] {emsg}")
    else:
        lines += [f"[07/01/2026-12:00:01] [TRT-LLM] [RANK 0] [E] Failed to initialize executor on rank 0: {first}",
                  "Traceback (most recent call last):",
                  '  File "/usr/local/lib/python3.12/dist-packages/tensorrt_llm/executor/worker.py", line 356, in worker_main']
        for path, ln, fn in frames:
            lines.append(f'  File "{path}", line {ln}, in {fn}')
        lines.append(f"{etype}: {emsg}")
    return "\n".join(lines) + "\n"


def lmdeploy_log(row, etype, emsg, frames) -> str:
    lines = ["2026-07-01 12:00:00,000 - lmdeploy - INFO - builder.py:66 - matching vision model: None"]
    if row["kind"] == "tm_check":
        lines.append(f"[TM][FATAL][0701.12:00:01.000000][{os.path.basename(row['file'])}:{row['line']}] {emsg}")
        lines.append("Aborted (core dumped)")
    elif row["kind"] == "py_log_exit":
        lines.append(f"2026-07-01 12:00:01,000 - lmdeploy - ERROR - {os.path.basename(row['file'])}:{row['line']} - {emsg}")
    else:
        lines += ["Traceback (most recent call last):",
                  '  File "/opt/py3/bin/lmdeploy", line 8, in <module>',
                  "    sys.exit(run())"]
        for path, ln, fn in frames:
            lines.append(f'  File "{path}", line {ln}, in {fn}')
        lines.append(f"{etype}: {emsg}")
    return "\n".join(lines) + "\n"


def triton_server_log(row, etype, emsg, frames) -> str:
    lines = ["I0701 12:00:00.000000 1 server.cc:674] Started model repository polling"]
    text = emsg
    if row["kind"] not in ("triton_error",):
        text = f"{etype}: {emsg}"
        if row["kind"] in ("py_raise", "py_assert"):
            text = f"Internal: {etype}: {emsg}\n\nAt:\n  /models/tensorrt_llm/1/model.py({row['line']}): initialize\n"
    else:
        text = f"{etype}: {emsg}" if etype else emsg
    first, *rest = text.split("\n")
    lines.append(f"E0701 12:00:01.000000 1 model_lifecycle.cc:654] failed to load 'tensorrt_llm' version 1: {first}")
    lines += rest
    lines.append("E0701 12:00:01.000000 1 server.cc:249] failed to load all models")
    return "\n".join(lines) + "\n"


def synth_log(row: dict) -> str:
    msg = fill(row["message"], row.get("holes") or [])
    if row["kind"] == "dg_host_assert":
        msg = row["message"]  # the condition text as written (no placeholders)
    etype, emsg = exception_text(row, msg)
    frames = caller_frames(row)
    eng = row["engine"]
    if eng in ("vllm",):
        return vllm_log(row, etype, emsg, frames)
    if eng == "sglang":
        return sglang_log(row, etype, emsg, frames)
    if eng == "tensorrt_llm":
        return trtllm_log(row, etype, emsg, frames)
    if eng == "lmdeploy":
        return lmdeploy_log(row, etype, emsg, frames)
    if eng in ("triton_server", "tensorrtllm_backend"):
        return triton_server_log(row, etype, emsg, frames)
    # kernel libraries and shared Python libraries: under a vLLM or an SGLang worker (by hash)
    if int(row["hash"], 16) % 2:
        return sglang_log(row, etype, emsg, frames)
    return vllm_log(row, etype, emsg, frames)


# ----------------------------------------------------------------------------------------


def outcome(incidents: list[dict]) -> str:
    if not incidents:
        return "none"
    classes = {i.get("class", "unknown") for i in incidents} - {"unknown", "", None}
    if not classes:
        return "unknown"
    if len(classes) == 1:
        return next(iter(classes))
    return "+".join(sorted(classes))


def pick_misses(misses: list[dict], n: int) -> list[dict]:
    """n misses, engines in ENGINE_ORDER first, one per file before a second from the same file."""
    order = {e: i for i, e in enumerate(ENGINE_ORDER)}
    misses = sorted(misses, key=lambda r: (order.get(r["engine"], 99), r["file"], r["line"]))
    seen = collections.Counter()
    out = []
    for rnd in range(1, 1000):
        for r in misses:
            if len(out) >= n:
                return out
            if seen[r["file"]] < rnd and r not in out:
                if seen[r["file"]] == rnd - 1:
                    seen[r["file"]] += 1
                    out.append(r)
        if len(out) == len(misses):
            break
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--bin", default="build/fingerprintd")
    ap.add_argument("--harvest", default="/work/harvest/messages.jsonl")
    ap.add_argument("--rules", metavar="DIR",
                    help="rule directory passed to `replay --rules` (default: the binary's embedded pack)")
    ap.add_argument("--misses", type=int, default=0, metavar="N", help="list N misses per class")
    ap.add_argument("--json", metavar="PATH", help="write per-message results (JSONL)")
    ap.add_argument("--min", type=float, default=90.0, help="minimum %% per class (default 90)")
    ap.add_argument("--keep", metavar="DIR", help="write the synthetic logs into DIR and keep them")
    ap.add_argument("--engine", action="append", default=[], help="only these engines")
    args = ap.parse_args(argv)

    harvest = Path(args.harvest)
    if not harvest.exists():
        print(f"no harvest at {harvest}. Make it with:\n"
              f"  python3 tools/harvest_messages.py --out {harvest}\n"
              "(tools/README.md: the sources it reads and how to bring them here)", file=sys.stderr)
        return 2
    if not os.access(args.bin, os.X_OK):
        print(f"no fingerprintd binary at {args.bin} (make daemon)", file=sys.stderr)
        return 2
    rows = [json.loads(l) for l in harvest.read_text().splitlines() if l.strip()]
    if args.engine:
        rows = [r for r in rows if r["engine"] in args.engine]

    tmp = tempfile.TemporaryDirectory(prefix="msgcov-") if not args.keep else None
    d = Path(args.keep or tmp.name)
    d.mkdir(parents=True, exist_ok=True)
    by_dep = {}
    for i, r in enumerate(rows):
        dep = f"m{i:05d}-{r['hash']}"
        by_dep[dep] = r
        (d / f"{dep}.log").write_text(synth_log(r))
    if args.rules and not Path(args.rules).is_dir():
        print(f"no rule directory at {args.rules}", file=sys.stderr)
        return 2
    cmd = [args.bin, "replay", "--quiet", "--format", "jsonl", "--deployment-from", r"/([^/]+)\.log$"]
    if args.rules:
        cmd += ["--rules", args.rules]
    proc = subprocess.run(cmd + [str(d) + "/"], capture_output=True, text=True)
    if proc.returncode not in (0, 1):
        print(f"replay failed ({proc.returncode}): {proc.stderr[:2000]}", file=sys.stderr)
        return 2
    incidents = collections.defaultdict(list)
    for line in proc.stdout.splitlines():
        if not line.startswith("{"):
            continue
        inc = json.loads(line)
        incidents[inc.get("deployment", "")].append(inc)
    if tmp:
        tmp.cleanup()

    results = []
    for dep, r in by_dep.items():
        incs = incidents.get(dep, [])
        got = outcome(incs)
        results.append(dict(r, got=got, rules=sorted({i.get("rule", "") for i in incs}), deployment=dep))

    # ---- table per harvested class
    hdr = f"{'class':<18} {'total':>6} {'got':>6} {'got%':>6} {'unknown':>8} {'none':>6} {'other':>6} {'->hw':>5}"
    print(hdr)
    print("-" * len(hdr))
    failed = False
    tot = collections.Counter()
    for c in CLASSES:
        rs = [x for x in results if x["class"] == c]
        if not rs:
            continue
        got = sum(x["got"] == c for x in rs)
        unk = sum(x["got"] == "unknown" for x in rs) if c != "unknown" else 0
        none = sum(x["got"] == "none" for x in rs)
        other = len(rs) - got - unk - none
        hw = sum("hardware_support" in x["got"].split("+") for x in rs) if c != "hardware_support" else 0
        pct = 100.0 * got / len(rs)
        print(f"{c:<18} {len(rs):>6} {got:>6} {pct:>5.1f}% {unk:>8} {none:>6} {other:>6} {hw:>5}")
        tot.update(total=len(rs), got=got, unknown=unk, none=none, other=other, hw=hw)
        if pct < args.min or hw:
            failed = True
    print("-" * len(hdr))
    print(f"{'overall':<18} {tot['total']:>6} {tot['got']:>6} {100.0 * tot['got'] / max(1, tot['total']):>5.1f}% "
          f"{tot['unknown']:>8} {tot['none']:>6} {tot['other']:>6} {tot['hw']:>5}")
    print("(unknown: the catch-all; none: no incident at all; other: another class; "
          "->hw: messages of another class that gave hardware_support, must be 0)")

    # ---- per engine, for orientation
    print()
    print(f"{'engine':<20} {'total':>6} {'got':>6} {'got%':>6} {'->hw':>5}")
    for e in ENGINE_ORDER:
        rs = [x for x in results if x["engine"] == e]
        if not rs:
            continue
        got = sum(x["got"] == x["class"] for x in rs)
        hw = sum(x["class"] != "hardware_support" and "hardware_support" in x["got"].split("+") for x in rs)
        print(f"{e:<20} {len(rs):>6} {got:>6} {100.0 * got / len(rs):>5.1f}% {hw:>5}")

    if args.misses:
        for c in CLASSES:
            ms = [x for x in results if x["class"] == c and x["got"] != c]
            if not ms:
                continue
            # hardware false positives first: they are the ones that must go
            hwfp = [x for x in ms if c != "hardware_support" and "hardware_support" in x["got"].split("+")]
            rest = [x for x in ms if x not in hwfp]
            picked = hwfp[:args.misses] + pick_misses(rest, max(0, args.misses - len(hwfp)))
            print(f"\n== misses: {c} ({len(ms)} of {sum(x['class'] == c for x in results)}; {len(picked)} shown)")
            for x in picked:
                m = x["message"].replace("\n", "\\n")
                if len(m) > 160:
                    m = m[:157] + "..."
                print(f"  {x['engine']}:{x['file']}:{x['line']} [{x['hash']}] {x['type'] or x['kind']}: {m}")
                print(f"      got {x['got']} ({', '.join(x['rules']) or 'no incident'}); harvest: {x['class_reason']}")

    if args.json:
        with open(args.json, "w") as f:
            for x in results:
                f.write(json.dumps(x) + "\n")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
