#!/usr/bin/env python3
"""Harvest the messages the engines' and kernel libraries' fatal checks raise.

Reads source trees kept OUTSIDE this repository (a bare git directory as `fetch` brings it,
or a plain directory of copied files with a MANIFEST.tsv) and writes one JSON record per
message to --out (default /work/harvest/messages.jsonl). The harvested text is the upstream
projects' own: never commit it. Only this tool and tools/message_corrections.tsv are ours.

What counts as a fatal check (the `kind` field):
  py_raise        Python `raise X("...")` / `raise X(f"...")` (ast; f-string fields -> `{}`,
                  concatenated / %-formatted / .format()ted strings joined)
  py_assert       `assert cond, "..."`                              (AssertionError)
  py_log_exit     `logger.error(...)` / `.critical` / `.exception` / `.fatal` immediately
                  followed by `sys.exit` / `exit` / `os._exit` / `raise`  (the logged line)
  torch_check     TORCH_CHECK(cond, ...)                            (RuntimeError)
  torch_check_not_implemented / torch_check_value / torch_check_type / torch_check_index
  tllm_check      TLLM_CHECK_WITH_INFO(cond, fmt, ...)              (RuntimeError, TRT-LLM text)
  tllm_throw      TLLM_THROW(fmt, ...)                              (RuntimeError, TRT-LLM text)
  dg_host_assert  DG_HOST_ASSERT(cond): the message is the condition text (RuntimeError)
  dg_unreachable  DG_HOST_UNREACHABLE("reason")                     (RuntimeError)
  flashinfer_check FLASHINFER_CHECK(cond, ...) / FLASHINFER_ERROR(msg)  (RuntimeError)
  tvm_ffi_throw   TVM_FFI_THROW(Type) << "..."   (FlashInfer's TVM-FFI bindings; Type as named)
  tvm_ffi_icheck  TVM_FFI_ICHECK*(...) << "..."  (only with a message)
  tm_check        TM_CHECK*(...) << "..."        (lmdeploy TurboMind: fatal log + abort; only with a message)
  triton_error    TRITONSERVER_ErrorNew(CODE, msg) / Status(Status::Code::X, msg) (Triton server)
  cpp_throw       throw std::runtime_error("...") / std::invalid_argument / std::logic_error

Exclusion rule (documented here, applied in `excluded_reason`): a message is left out when
  * its file is a test, benchmark, example, doc or build script (never runs in a server);
  * it is raised by request-time code (sampling params, protocol/serving, input/output
    processing, tokenizer/detokenizer): those become an HTTP 4xx answer, never a fatal error;
  * it has no words of its own (empty, or only placeholders/punctuation once `{}` are removed);
  * it is a C++ check with no message of its own (TORCH_CHECK(cond), TVM_FFI_ICHECK(cond),
    TM_CHECK(cond), bare TLLM_CHECK(cond)): an internal invariant. DG_HOST_ASSERT is the
    exception: its condition text IS what the user sees (`Assertion error (file:line): cond`).
Everything else is kept, internal invariants included: those usually get class `unknown`.

Class (the `class` and `class_reason` fields) comes from `classify()`: words first (an
architecture token, out-of-memory, a missing package...), then the location (config modules,
model loaders, distributed code), then generic config words; see the comments there.
tools/message_corrections.tsv overrides the class of single messages (file + hash).
"""

from __future__ import annotations

import argparse
import ast
import collections
import hashlib
import json
import os
import re
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parent
DEFAULT_OUT = "/work/harvest/messages.jsonl"
DEFAULT_CORRECTIONS = HERE / "message_corrections.tsv"
MIRROR = "/work/.mirror"
COPIES = "/work/harvest/src"

# ----------------------------------------------------------------------------------------
# Sources. `engine` is the label of the engine or library; `repo` the GitHub owner/name the
# text comes from; `git` a bare git directory (with `rev`, default HEAD) or `dir` a plain
# directory (commits per file from its MANIFEST.tsv: repo, path, commit, how).
# ----------------------------------------------------------------------------------------


@dataclass
class Source:
    engine: str
    repo: str
    git: str | None = None
    rev: str = "HEAD"
    dir: str | None = None
    subpaths: list[str] = field(default_factory=list)
    note: str = ""


DEFAULT_SOURCES = [
    # vLLM is read from a fork's mirror small enough to `fetch` (local-inference-lab/vllm); the
    # revision is an upstream vllm-project/vllm squash-merge commit (PR #43119), so the text is
    # upstream's. Later commits of that mirror are fork-only and are not read.
    Source("vllm", "vllm-project/vllm", git=f"{MIRROR}/local-inference-lab+vllm/repo",
           rev="9aaf83ef502fc37bc647f6e474314d48ba36cd1c",
           subpaths=["vllm/config/", "vllm/engine/arg_utils.py", "vllm/platforms/",
                     "vllm/model_executor/layers/quantization/", "vllm/model_executor/model_loader/",
                     "vllm/distributed/", "vllm/v1/engine/", "vllm/v1/executor/", "vllm/v1/worker/",
                     "vllm/utils/deep_gemm.py", "vllm/utils/flashinfer.py", "csrc/quantization/"],
           note="upstream commit inside the local-inference-lab/vllm mirror"),
    Source("sglang", "sgl-project/sglang", dir=f"{COPIES}/sgl-project+sglang"),
    Source("tensorrt_llm", "NVIDIA/TensorRT-LLM", dir=f"{COPIES}/NVIDIA+TensorRT-LLM"),
    Source("deepgemm", "deepseek-ai/DeepGEMM", git=f"{MIRROR}/deepseek-ai+DeepGEMM/repo",
           subpaths=["csrc/", "deep_gemm/"]),
    Source("flashinfer", "flashinfer-ai/flashinfer", git=f"{MIRROR}/flashinfer-ai+flashinfer/repo",
           # a sample: the Python API, JIT, GEMM, MLA and comm front ends, the top-level
           # C++/CUDA bindings (csrc/*.cu) and the kernel headers
           subpaths=["flashinfer/*.py", "flashinfer/jit/", "flashinfer/gemm/", "flashinfer/mla/",
                     "flashinfer/comm/", "csrc/*.cu", "include/flashinfer/"]),
    Source("lmdeploy", "InternLM/lmdeploy", git=f"{MIRROR}/InternLM+lmdeploy/repo",
           subpaths=["lmdeploy/", "src/turbomind/"]),
    Source("cutlass", "NVIDIA/cutlass", git=f"{MIRROR}/NVIDIA+cutlass/repo",
           # a sample of CuTe DSL: its compiler/JIT base, arch and per-arch ops, utils, torch glue
           subpaths=["python/CuTeDSL/cutlass/base_dsl/", "python/CuTeDSL/cutlass/cute/arch/",
                     "python/CuTeDSL/cutlass/cute/nvgpu/", "python/CuTeDSL/cutlass/utils/",
                     "python/CuTeDSL/cutlass/torch.py", "python/CuTeDSL/cutlass/_pth_hook.py"]),
    Source("triton_server", "triton-inference-server/server",
           git=f"{MIRROR}/triton-inference-server+server/repo", subpaths=["src/"]),
    # The backend's sources were removed from its HEAD (6a749f5, "Remove backend files"): read
    # the last commit that has them.
    Source("tensorrtllm_backend", "triton-inference-server/tensorrtllm_backend",
           git=f"{MIRROR}/triton-inference-server+tensorrtllm_backend/repo", rev="6a749f5^",
           subpaths=["inflight_batcher_llm/", "all_models/"]),
    Source("triton", "triton-lang/triton", dir=f"{COPIES}/triton-lang+triton"),
    Source("transformers", "huggingface/transformers", dir=f"{COPIES}/huggingface+transformers"),
    Source("pytorch", "pytorch/pytorch", dir=f"{COPIES}/pytorch+pytorch"),
]

PY_EXT = (".py",)
CPP_EXT = (".cc", ".cpp", ".cu", ".cuh", ".h", ".hpp", ".hh", ".cxx", ".inl")


def git(gitdir: str, *args: str) -> str:
    return subprocess.run(["git", "--git-dir", gitdir, *args], check=True, capture_output=True,
                          text=True).stdout


def wanted(path: str, subpaths: list[str]) -> bool:
    """A subpath ending in `/` is a folder, one with `*` a pattern (`*` stays in one folder),
    any other a file. No subpaths: everything."""
    if not subpaths:
        return True
    for s in subpaths:
        if s.endswith("/") and path.startswith(s):
            return True
        if "*" in s and re.fullmatch(re.escape(s).replace(r"\*", "[^/]*"), path):
            return True
        if path == s:
            return True
    return False


def iter_source_files(src: Source):
    """Yields (path, commit, text) for the files of a source that we can parse."""
    if src.git:
        if not os.path.isdir(src.git):
            print(f"warning: {src.engine}: no git dir {src.git} (fetch it first)", file=sys.stderr)
            return
        commit = git(src.git, "rev-parse", src.rev).strip()
        names = git(src.git, "ls-tree", "-r", "--name-only", commit).splitlines()
        names = [n for n in names if n.endswith(PY_EXT + CPP_EXT) and wanted(n, src.subpaths)]
        # one `cat-file --batch` for all blobs
        proc = subprocess.Popen(["git", "--git-dir", src.git, "cat-file", "--batch"],
                                stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        for name in names:
            proc.stdin.write(f"{commit}:{name}\n".encode())
            proc.stdin.flush()
            header = proc.stdout.readline().decode().split()
            if len(header) < 3 or header[1] != "blob":
                continue
            data = proc.stdout.read(int(header[2]))
            proc.stdout.read(1)
            yield name, commit, data.decode("utf-8", "replace")
        proc.stdin.close()
        proc.wait()
        return
    root = Path(src.dir)
    if not root.is_dir():
        print(f"warning: {src.engine}: no directory {root}", file=sys.stderr)
        return
    commits = {}
    manifest = root.parent / "MANIFEST.tsv"
    if manifest.exists():
        for line in manifest.read_text().splitlines():
            if line.startswith("#") or not line.strip():
                continue
            repo, path, commit = line.split("\t")[:3]
            if repo == src.repo:
                commits[path] = commit
    for p in sorted(root.rglob("*")):
        rel = p.relative_to(root).as_posix()
        if not p.is_file() or not rel.endswith(PY_EXT + CPP_EXT):
            continue
        if not wanted(rel, src.subpaths):
            continue
        yield rel, commits.get(rel, "unknown"), p.read_text("utf-8", "replace")


# ----------------------------------------------------------------------------------------
# Python: ast
# ----------------------------------------------------------------------------------------

PCT_SPEC = re.compile(r"%(?:\([^)]*\))?[-+ #0]*(?:\d+|\*)?(?:\.\d+)?[hlLqjzt]*[diouxXeEfFgGcrsa%]")
BRACE_FIELD = re.compile(r"\{[^{}]*\}")


def pct_to_marker(s: str) -> str:
    return PCT_SPEC.sub(lambda m: "%" if m.group(0) == "%%" else "{}", s)


class Unrenderable(Exception):
    pass


def render_py(node, holes: list[str], top=True) -> str:
    """The message a string expression produces, with `{}` for every value only known at run
    time; `holes` collects the source text of those values (used to fill them plausibly)."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.JoinedStr):
        out = []
        for v in node.values:
            if isinstance(v, ast.Constant):
                out.append(str(v.value))
            elif isinstance(v, ast.FormattedValue):
                holes.append(ast.unparse(v.value))
                out.append("{}")
        return "".join(out)
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        return render_py(node.left, holes, False) + render_py(node.right, holes, False)
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mod):
        left = render_py(node.left, holes, top)
        n = len(PCT_SPEC.findall(left))
        holes.extend(["%"] * n)
        return pct_to_marker(left)
    if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
            and node.func.attr == "format"):
        base = render_py(node.func.value, holes, top)
        holes.extend(m.group(0)[1:-1] for m in BRACE_FIELD.finditer(base))
        return BRACE_FIELD.sub("{}", base)
    if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
            and node.func.attr == "join" and node.args):
        if top:
            raise Unrenderable
        holes.append(ast.unparse(node))
        return "{}"
    if top:
        raise Unrenderable
    holes.append(ast.unparse(node))
    return "{}"


def dotted(node) -> str:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return dotted(node.value) + "." + node.attr
    if isinstance(node, ast.Call):
        return dotted(node.func)
    return ast.unparse(node)


LOG_FATAL_ATTRS = {"error", "critical", "exception", "fatal"}
EXIT_CALLS = {"sys.exit", "exit", "os._exit", "quit", "os.abort"}


def is_exit_stmt(stmt) -> bool:
    if isinstance(stmt, ast.Raise):
        return True
    return (isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call)
            and dotted(stmt.value.func) in EXIT_CALLS)


def harvest_python(text: str):
    """Yields dicts: kind, type, message, holes, line, function."""
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return
    # enclosing function of every node
    func_of = {}

    def walk(node, func):
        for child in ast.iter_child_nodes(node):
            f = child.name if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)) else func
            func_of[id(child)] = func if f is func else f
            walk(child, f)

    walk(tree, "<module>")

    for node in ast.walk(tree):
        fn = func_of.get(id(node), "<module>")
        if isinstance(node, ast.Raise) and isinstance(node.exc, ast.Call):
            call = node.exc
            if not call.args:
                continue
            holes: list[str] = []
            try:
                msg = render_py(call.args[0], holes)
            except Unrenderable:
                continue
            typ = dotted(call.func)
            yield dict(kind="py_raise", type=typ, message=msg, holes=holes, line=node.lineno,
                       function=fn)
        elif isinstance(node, ast.Assert) and node.msg is not None:
            holes = []
            try:
                msg = render_py(node.msg, holes)
            except Unrenderable:
                continue
            yield dict(kind="py_assert", type="AssertionError", message=msg, holes=holes,
                       line=node.lineno, function=fn, condition=ast.unparse(node.test))
        # logger.error(...) immediately followed by an exit or a raise
        for fieldname in ("body", "orelse", "finalbody", "handlers"):
            stmts = getattr(node, fieldname, None)
            if not isinstance(stmts, list):
                continue
            for a, b in zip(stmts, stmts[1:]):
                if not (isinstance(a, ast.Expr) and isinstance(a.value, ast.Call)
                        and isinstance(a.value.func, ast.Attribute)
                        and a.value.func.attr in LOG_FATAL_ATTRS
                        and "log" in dotted(a.value.func.value).lower() and a.value.args):
                    continue
                if not is_exit_stmt(b):
                    continue
                holes = []
                try:
                    msg = render_py(a.value.args[0], holes)
                except Unrenderable:
                    continue
                if len(a.value.args) > 1:  # logger-style %-args
                    holes.extend(["%"] * len(PCT_SPEC.findall(msg)))
                    msg = pct_to_marker(msg)
                yield dict(kind="py_log_exit", type="", message=msg, holes=holes,
                           line=a.lineno, function=fn, level=a.value.func.attr)


# ----------------------------------------------------------------------------------------
# C / C++ / CUDA: the macro's balanced argument list, string literals joined
# ----------------------------------------------------------------------------------------

# name -> (kind, exception type Python sees, message layout)
CPP_MACROS = {
    "TORCH_CHECK": ("torch_check", "RuntimeError", "args"),
    "TORCH_CHECK_NOT_IMPLEMENTED": ("torch_check_not_implemented", "NotImplementedError", "args"),
    "TORCH_CHECK_VALUE": ("torch_check_value", "ValueError", "args"),
    "TORCH_CHECK_TYPE": ("torch_check_type", "TypeError", "args"),
    "TORCH_CHECK_INDEX": ("torch_check_index", "IndexError", "args"),
    "TLLM_CHECK_WITH_INFO": ("tllm_check", "RuntimeError", "printf"),
    "TLLM_THROW": ("tllm_throw", "RuntimeError", "printf0"),
    "DG_HOST_ASSERT": ("dg_host_assert", "RuntimeError", "cond"),
    "DG_HOST_UNREACHABLE": ("dg_unreachable", "RuntimeError", "args0"),
    "FLASHINFER_CHECK": ("flashinfer_check", "RuntimeError", "args"),
    "FLASHINFER_ERROR": ("flashinfer_check", "RuntimeError", "args0"),
    "TVM_FFI_THROW": ("tvm_ffi_throw", None, "stream"),
    "TVM_FFI_ICHECK": ("tvm_ffi_icheck", "RuntimeError", "stream"),
    "TM_CHECK": ("tm_check", "", "stream"),
    "TRITONSERVER_ErrorNew": ("triton_error", None, "args"),
}
CPP_MACRO_RE = re.compile(
    r"\b(TORCH_CHECK(?:_NOT_IMPLEMENTED|_VALUE|_TYPE|_INDEX)?|TLLM_CHECK_WITH_INFO|TLLM_THROW"
    r"|DG_HOST_ASSERT|DG_HOST_UNREACHABLE|FLASHINFER_CHECK|FLASHINFER_ERROR|TVM_FFI_THROW"
    r"|TVM_FFI_ICHECK(?:_EQ|_NE|_LT|_LE|_GT|_GE|_NOTNULL)?|TM_CHECK(?:_EQ|_NE|_LT|_LE|_GT|_GE|_NOTNULL)?"
    r"|TRITONSERVER_ErrorNew|Status\s*(?=\(\s*Status::Code::)"
    r"|throw\s+std::(?:runtime_error|invalid_argument|logic_error|out_of_range))\s*\(")
CPP_STR = re.compile(r'(?:u8|u|U|L)?"((?:[^"\\\n]|\\.)*)"|R"([^(]*)\((.*?)\)\2"', re.S)
PRINTF_SPEC = re.compile(r"%[-+ #0]*(?:\d+|\*)?(?:\.\d+)?(?:hh|h|ll|l|z|j|t|L)?[diouxXeEfFgGcspn%]")
TRITON_CODES = {
    "TRITONSERVER_ERROR_INVALID_ARG": "Invalid argument", "INVALID_ARG": "Invalid argument",
    "TRITONSERVER_ERROR_INTERNAL": "Internal", "INTERNAL": "Internal",
    "TRITONSERVER_ERROR_NOT_FOUND": "Not found", "NOT_FOUND": "Not found",
    "TRITONSERVER_ERROR_UNSUPPORTED": "Unsupported", "UNSUPPORTED": "Unsupported",
    "TRITONSERVER_ERROR_UNAVAILABLE": "Unavailable", "UNAVAILABLE": "Unavailable",
    "TRITONSERVER_ERROR_ALREADY_EXISTS": "Already exists", "ALREADY_EXISTS": "Already exists",
    "TRITONSERVER_ERROR_UNKNOWN": "Unknown", "UNKNOWN": "Unknown",
}
CPP_EXC_TYPES = {"runtime_error": "RuntimeError", "invalid_argument": "ValueError",
                 "logic_error": "RuntimeError", "out_of_range": "IndexError"}


def unescape_c(s: str) -> str:
    return (s.replace("\\n", "\n").replace("\\t", "\t").replace('\\"', '"')
            .replace("\\'", "'").replace("\\\\", "\\"))


def string_end(text: str, i: int) -> int:
    """text[i] opens a C/C++ string or char literal; returns the index after its closing quote."""
    c, j, n = text[i], i + 1, len(text)
    while j < n and text[j] != c:
        j += 2 if text[j] == "\\" else 1
    return j + 1


def strip_cpp_comments(text: str) -> str:
    """Comments -> spaces (newlines kept, so line numbers stay right); strings untouched."""
    out = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if c == '"' or c == "'":
            j = string_end(text, i)
            out.append(text[i:j])
            i = j
        elif text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            out.append(" " * (j - i))
            i = j
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append("".join("\n" if ch == "\n" else " " for ch in text[i:j]))
            i = j
        else:
            out.append(c)
            i += 1
    return "".join(out)


def balanced_args(text: str, start: int):
    """text[start] == '('. Returns (list of top-level argument strings, index after ')')."""
    depth, i, n = 0, start, len(text)
    args, cur_start = [], start + 1
    while i < n:
        c = text[i]
        if c == '"' or c == "'":
            i = string_end(text, i)
            continue
        if c in "([{":
            depth += 1
        elif c in ")]}":
            depth -= 1
            if depth == 0:
                args.append(text[cur_start:i])
                return args, i + 1
        elif c == "," and depth == 1:
            args.append(text[cur_start:i])
            cur_start = i + 1
        i += 1
    return None, n


def render_cpp_pieces(pieces: list[str], holes: list[str]) -> str:
    """Each piece is an expression streamed/concatenated into the message: string literals
    give their text, anything else a `{}`."""
    out = []
    for piece in pieces:
        p = piece.strip()
        if not p:
            continue
        lits = list(CPP_STR.finditer(p))
        # a piece made only of (adjacent) literals
        rest = CPP_STR.sub("", p).strip()
        if lits and not rest:
            out.append("".join(unescape_c(m.group(1)) if m.group(1) is not None else m.group(3)
                               for m in lits))
        elif lits and re.fullmatch(r"std::string\s*\(\s*\)", rest.replace(" ", "")) is None and \
                re.fullmatch(r"(std::string|c10::str|fmt::format|std::to_string)?\s*\(\s*\)", rest):
            out.append("".join(unescape_c(m.group(1) or "") for m in lits))
        else:
            holes.append(re.sub(r"\s+", " ", p)[:80])
            out.append("{}")
    return "".join(out)


def split_plus(expr: str) -> list[str]:
    """`std::string("a") + x + "b"` -> ['std::string("a")', 'x', '"b"'] (top level only)."""
    parts, depth, cur, i = [], 0, [], 0
    while i < len(expr):
        c = expr[i]
        if c in "\"'":
            m = CPP_STR.match(expr, i) if c == '"' else None
            j = m.end() if m else expr.find(c, i + 1) + 1
            cur.append(expr[i:j])
            i = j
            continue
        if c in "([{":
            depth += 1
        elif c in ")]}":
            depth -= 1
        if c == "+" and depth == 0 and not expr.startswith("++", i):
            parts.append("".join(cur))
            cur = []
        else:
            cur.append(c)
        i += 1
    parts.append("".join(cur))
    return parts


def split_stream(text: str, pos: int):
    """The `<< a << "b"` operands that follow a macro up to its `;` (top level)."""
    operands, depth, cur, i, n = [], 0, [], pos, len(text)
    while i < n:
        c = text[i]
        if c in "\"'":
            j = i + 1
            while j < n and text[j] != c:
                j += 2 if text[j] == "\\" else 1
            cur.append(text[i:j + 1])
            i = j + 1
            continue
        if c in "([{":
            depth += 1
        elif c in ")]}":
            if depth == 0:
                break
            depth -= 1
        if depth == 0 and (c == ";" or c == "{"):
            break
        if depth == 0 and text.startswith("<<", i):
            operands.append("".join(cur))
            cur = []
            i += 2
            continue
        cur.append(c)
        i += 1
    operands.append("".join(cur))
    first = operands[0].strip()
    return [o for o in operands[1:]] if first == "" else None


def harvest_cpp(text: str):
    clean = strip_cpp_comments(text)
    line_starts = [0]
    for m in re.finditer("\n", clean):
        line_starts.append(m.end())

    def lineno(pos):
        import bisect
        return bisect.bisect_right(line_starts, pos)

    for m in CPP_MACRO_RE.finditer(clean):
        name = re.sub(r"\s+", " ", m.group(1)).strip()
        # skip the macro's own #define
        ls = line_starts[lineno(m.start()) - 1]
        if clean[ls:m.start()].lstrip().startswith("#"):
            continue
        args, end = balanced_args(clean, m.end() - 1)
        if not args:
            continue
        holes: list[str] = []
        line = lineno(m.start())
        if name.startswith("throw std::"):
            typ = CPP_EXC_TYPES[name.split("::")[1]]
            msg = render_cpp_pieces(split_plus(args[0]), holes)
            yield dict(kind="cpp_throw", type=typ, message=msg, holes=holes, line=line)
            continue
        if name == "Status":
            code = args[0].strip().split("::")[-1]
            msg = render_cpp_pieces(split_plus(",".join(args[1:])), holes) if len(args) > 1 else ""
            yield dict(kind="triton_error", type=TRITON_CODES.get(code, code), message=msg,
                       holes=holes, line=line)
            continue
        base = re.sub(r"_(EQ|NE|LT|LE|GT|GE|NOTNULL)$", "", name)
        kind, typ, layout = CPP_MACROS[base]
        cond = re.sub(r"\s+", " ", args[0]).strip()
        if base == "TRITONSERVER_ErrorNew":
            code = args[0].strip()
            typ = TRITON_CODES.get(code, code)
            msg = render_cpp_pieces(split_plus(",".join(args[1:])), holes) if len(args) > 1 else ""
            msg = re.sub(r"^\{\}$", "", msg)
            yield dict(kind=kind, type=typ, message=msg, holes=holes, line=line)
            continue
        if layout == "cond":
            yield dict(kind=kind, type=typ, message=cond, holes=[], line=line, condition=cond)
            continue
        if layout == "args":
            msg = render_cpp_pieces(args[1:], holes)
        elif layout == "args0":
            msg = render_cpp_pieces(args, holes)
        elif layout in ("printf", "printf0"):
            fmt_args = args[1:] if layout == "printf" else args
            if not fmt_args:
                continue
            msg = render_cpp_pieces(split_plus(fmt_args[0]), holes)
            n = len([s for s in PRINTF_SPEC.findall(msg) if s != "%%"])
            holes.extend(re.sub(r"\s+", " ", a).strip()[:80] for a in fmt_args[1:1 + n])
            msg = PRINTF_SPEC.sub(lambda s: "%" if s.group(0) == "%%" else "{}", msg)
        elif layout == "stream":
            ops = split_stream(clean, end)
            if not ops:
                continue
            msg = render_cpp_pieces(ops, holes)
            if base == "TVM_FFI_THROW":
                typ = cond
            elif base == "TVM_FFI_ICHECK":
                msg = f"Check failed: ({cond}) is false: {msg}"
            elif base == "TM_CHECK":
                msg = f"Check failed: {cond} {msg}"
        else:
            continue
        rec = dict(kind=kind, type=typ, message=msg, holes=holes, line=line)
        if layout != "args0" and base != "TVM_FFI_THROW":
            rec["condition"] = cond
        yield rec


# ----------------------------------------------------------------------------------------
# Exclusions (see the module docstring)
# ----------------------------------------------------------------------------------------

EXCLUDED_PATHS = [
    (re.compile(r"(^|/)(tests?|testing|benchmarks?|examples?|docs?|scripts|ci|tools/bench)/|(^|/)test_[^/]*$|_test\.(py|cc|cpp|cu)$|(^|/)setup\.py$|(^|/)conftest\.py$"),
     "test, benchmark, example, doc or build script"),
    (re.compile(r"sampling_params|/protocol\.py$|/serving_|/entrypoints/|/(input|output)_processor\.py$|/processor\.py$|detokenizer|tokenizer|logprobs|parallel_sampling|structured_output|/openai/"),
     "request-time validation (an HTTP 4xx answer, not a fatal error)"),
]


def excluded_reason(path: str, rec: dict) -> str | None:
    for rx, why in EXCLUDED_PATHS:
        if rx.search(path):
            return why
    words = re.sub(r"\{\}", " ", rec["message"])
    if not re.search(r"[A-Za-z]{3,}", words):
        return "no words of its own"
    return None


# ----------------------------------------------------------------------------------------
# Classing: words first, then location, then generic config words. Returns (class, reason).
# ----------------------------------------------------------------------------------------

# An architecture or capability token, or a refusal naming the GPU/platform.
HW_WORDS = re.compile(
    r"\bsm_?\d{2,3}[af]?\b|\bSM ?\d{2,3}[af]?\b|\bsm_?\d{2,3}x\b|\b(SM|sm_?)\{\}|compute[ _]capability|device capability|"
    r"\bcapability\b|get_device_capability|is_device_capability|has_device_capability|"
    r"\barch_(major|minor)\b|get_arch_major|\bsm_version\b|get_sm_version|__CUDA_ARCH__|\bcuda_arch\b|"
    r"\b(Hopper|Blackwell|Ampere|Turing|Volta|Pascal|Maxwell|Ada Lovelace)\b|"
    r"\bgfx\d+|\bMI\d{3}\b|\bCDNA\d?\b|\bRDNA\d?\b|"
    r"(not supported|unsupported|not available|only supported|only supports?|requires?)\b[^.]{0,60}"
    r"\b(GPUs?|devices?|platforms?|hardware|ROCm|XPU|TPU|HPU|NPU|MPS)\b|"
    r"\b(GPU|device|platform|hardware)s?\b[^.]{0,40}\b(not supported|unsupported|is not compatible)|"
    r"Unsupported (architecture|arch|SM|GPU|device)\b|no kernel image|not compiled for|No compiled \w+ for",
    re.I)
# Statements that a recipe/transformation has no implementation for this GPU in the kernel
# libraries' dispatch code (DeepGEMM `Unknown recipe`, `Unknown SF transformation`).
HW_DISPATCH = re.compile(r"^(Unknown|Unsupported|Invalid) (recipe|SF transformation|cases|arch)", re.I)

MODEL_ARCH_WORDS = re.compile(
    r"model architectures?\b.*\b(not supported|are not supported|not recognized)|"
    r"does not recognize this architecture|Unrecognized (model|configuration class)|"
    r"model type\b.*\b(not recognized|not supported|unknown)|no model architectures? (are )?specified|"
    r"\bUnsupported [A-Z][\w.-]+ (model|architecture)\b|"
    r"is not supported (in|by) (TRT-LLM|TensorRT-LLM|vLLM|SGLang|lmdeploy)", re.I)

RESOURCE_WORDS = re.compile(
    r"out of memory|\bOOM\b|insufficient (GPU |device |host )?memory|not enough (GPU |device )?memory|"
    r"(no|not enough) (available )?memory for|memory (is )?(insufficient|exhausted)|"
    r"exceeds? (the )?(available|free) (GPU |device )?memory|"
    r"KV cache\b[^.]{0,60}\b(too small|not enough|insufficient|exceed|cannot (hold|fit)|larger than)|"
    r"(larger|greater) than the maximum number of tokens that can be stored in KV cache|"
    r"cache blocks|free memory|gpu_memory_utilization|mem[-_]fraction|"
    r"(failed|unable) to allocate|allocation failed|_ALLOC_FAILED|MemoryError|"
    r"max_num_batched_tokens\b[^.]{0,40}\b(exceed|too large)", re.I)

MISSING_DEP_WORDS = re.compile(
    r"\bNo module named\b|\bis not installed\b|not installed\b|please install|pip install|ensure\b[^.]{0,40}\binstalled\b|"
    r"\b(CUDA|driver|torch|PyTorch|NCCL)\s*\d+(\.\d+)*\+|\brequires? (CUDA|torch|PyTorch|driver|NCCL)\s*(>=|version)?\s*\d|"
    r"\b(package|library|module|extension|toolchain|binary|executable|compiler)\b[^.]{0,40}\b(not found|missing|not available|unavailable|cannot be (found|loaded|imported)|is not executable)|"
    r"\b(failed|unable) to (import|load|find)\b|cannot import|ImportError|undefined symbol|"
    r"\bnvcc\b|\bnvrtc\b|\bptxas\b|CUDA_HOME|CUDA toolkit|\bcuobjdump\b|library_root|\bninja\b|"
    r"environment variable|\benv(ironment)? var|"
    r"\b(driver|CUDA|NCCL|torch|PyTorch|transformers|triton|flashinfer|deep_gemm|DeepGEMM|cutlass|CuTe DSL)\b"
    r"[^.]{0,40}\b(version|too old|outdated|newer|>=|at least)\b|"
    r"\bversion\b[^.]{0,40}\b(required|is required|too old|outdated|not compatible|mismatch)", re.I)
# An engine variable named in the message (case-sensitive: VLLM_USE_DEEP_GEMM, NCCL_P2P_DISABLE...)
ENV_VAR = re.compile(r"\b(VLLM|SGLANG|SGL|TRTLLM|TLLM|TRT_LLM|NCCL|CUDA|FLASHINFER|DG|DEEPGEMM|TORCH|PYTORCH|HF|"
                     r"TRITON|LMDEPLOY|TM|CUTE_DSL|CUTLASS|NVSHMEM|UCX|NIXL)_[A-Z0-9_]{2,}\b")

DISTRIBUTED_WORDS = re.compile(
    r"\bNCCL\b|\bnccl\w*|\bRCCL\b|\bHCCL\b|\bgloo\b|\bc10d\b|process ?group|ProcessGroup|collective|"
    r"all_?reduce|all_?gather|all_?to_?all|reduce_?scatter|\bTCPStore\b|rendezvous|"
    r"timed out|heartbeat|\bpeers?\b|\bRay\b|placement group|\bNVSHMEM\b|\bMNNVL\b|\bNIXL\b|Mooncake|"
    r"(worker|rank|process|engine|proc)\b[^.]{0,40}\b(died|dead|crashed|exited|terminated|failed unexpectedly|is not alive)|"
    r"EngineDead|\bMPI\b|\bmpi4py\b|shared memory broadcast|message queue|\bZMQ\b|\bzmq\b", re.I)

MODEL_BUG_WORDS = re.compile(
    r"size mismatch|shape mismatch|(shape|size)s? (do(es)? not|don't) match|"
    r"Attempted to load weight|not the same shape|must match the size|"
    r"(missing|unexpected) key|(missing|unexpected) (keys|weights|parameters)|"
    r"\b(weight|parameter|param|checkpoint|state_dict|safetensors?)\b[^.]{0,60}\b(not found|missing|mismatch|does not exist|is not in|unexpected|expected shape)|"
    r"\b(checkpoint|state_dict|weights?)\b[^.]{0,40}\b(corrupt|malformed|invalid|incompatible)|"
    r"quantization config\b[^.]{0,40}\b(not found|missing|cannot find)|Cannot find the config file|"
    r"\bhf_config\b|config\.json|has no attribute", re.I)

# Generic words of a rejected setting: the message names what to change (engines only).
CONFIG_WORDS = re.compile(
    r"\bmust be\b|\bshould be\b|must (not )?(be )?(divisible|a multiple|equal|greater|less|set|specified|provided|positive|one of)|"
    r"\bis not supported (with|when|for|in|together|if|yet)\b|not (yet )?supported (with|when|for|in combination)|"
    r"\bnot compatible with\b|\bincompatible with\b|cannot be (used|combined|set|enabled)|"
    r"can only be (used|set|enabled)|only (supports?|supported|works|available) (with|when|for|if)|"
    r"\bplease (set|use|specify|pass|install|provide|disable|enable|increase|decrease|reduce|choose|remove|add)\b|"
    r"\binvalid\b|\bunknown\b|\bunsupported\b|\bnot supported\b|\bnot (a )?valid\b|expected one of|choose from|"
    r"\bis required\b|\brequires?\b|\bdeprecated\b|--[a-z][a-z0-9-]+|\b\w+_size\b|\bmax_\w+|\b\w+_len\b|"
    r"\bdtype\b|\bkv_cache_dtype\b|\bquantization\b|\bbackend\b|\bconfig\b", re.I)

CONFIG_PATHS = re.compile(
    r"(^|/)(vllm/config/|engine/arg_utils\.py|server_args\.py|llm_args\.py|llmapi/|configuration_utils\.py|"
    r"configs?/|[^/]*config[^/]*\.py$|args\.py$|arg_parser|cli/|envs\.py$)")
CONFIG_FUNCS = re.compile(r"__post_init__|verify|validate|_check_|^check_|parse_args|from_cli|_parse_|model_post_init")
MODEL_LOADER_PATHS = re.compile(r"(model_loader/|weight_utils|weight_loader|models/auto/|modeling_utils\.py)")
MODEL_LOADER_FUNCS = re.compile(r"load_weights|weight_loader|load_state_dict|load_checkpoint|_load_weight")
DISTRIBUTED_PATHS = re.compile(r"(distributed/|c10d/|nccl|ProcessGroup|/comm/|communicat|parallel_state|ray_)", re.I)

# Kernel libraries, and the engines' own kernel sources: their argument checks ("x must be
# contiguous", "Unsupported dtype") are invariants of the engine's call, class unknown unless
# their words or their place say more.
KERNEL_LIBS = {"deepgemm", "flashinfer", "cutlass", "triton"}
KERNEL_PATHS = re.compile(r"^(csrc/|sgl-kernel/|cpp/tensorrt_llm/kernels/|src/turbomind/kernels/|include/)")
# The pack's documented choices for DeepGEMM (rules/README.md): API and heuristics checks guard
# what the GPU runs (kernel-library-check-failed, hardware_support); its JIT is the toolchain
# (deepgemm-jit-toolchain, config).
DG_HW_PATHS = re.compile(r"^csrc/(apis|jit_kernels/heuristics)/")
DG_JIT_PATHS = re.compile(r"^(csrc/jit/|deep_gemm/.*jit)")


def classify(engine: str, path: str, rec: dict) -> tuple[str, str]:
    msg = rec["message"]
    text = msg + " " + rec.get("condition", "")
    fn = rec.get("function", "")
    typ = rec["type"].rsplit(".", 1)[-1]
    kernel = engine in KERNEL_LIBS or bool(KERNEL_PATHS.search(path))
    # 1. A model architecture/type the engine does not know: model_bug (the pack's
    #    unsupported-model-architecture), checked before the hardware words ("architecture").
    if MODEL_ARCH_WORDS.search(msg):
        return "model_bug", "words: model architecture/type not supported"
    # 2. Architecture / capability tokens, refusals naming the GPU: hardware_support.
    m = HW_WORDS.search(text)
    if m:
        return "hardware_support", f"words: architecture/capability '{m.group(0)[:40]}'"
    if engine == "deepgemm" and DG_JIT_PATHS.search(path):
        return "config", "location: DeepGEMM JIT (toolchain; the pack's deepgemm-jit-toolchain)"
    if engine == "deepgemm" and DG_HW_PATHS.search(path):
        return "hardware_support", "location: DeepGEMM API/heuristics check (the pack's kernel-library-check-failed)"
    if HW_DISPATCH.search(msg) and kernel:
        return "hardware_support", "words+location: kernel dispatch has no case for this GPU"
    # 3. Out of memory, KV cache that does not fit: resource.
    m = RESOURCE_WORDS.search(msg)
    if m or typ in ("OutOfMemoryError", "MemoryError"):
        return "resource", f"words: memory '{m.group(0)[:40] if m else typ}'"
    # 4. A missing module/package/toolchain/env var or a too-old dependency: config.
    if typ in ("ImportError", "ModuleNotFoundError"):
        return "config", f"type: {typ} (a missing module)"
    m = MISSING_DEP_WORDS.search(msg) or ENV_VAR.search(msg)
    if m:
        return "config", f"words: dependency/toolchain/env '{m.group(0)[:40]}'"
    if engine == "flashinfer" and path.startswith("flashinfer/jit/"):
        return "config", "location: FlashInfer JIT (toolchain)"
    # 5. Collectives, process groups, peers and timeouts: distributed.
    m = DISTRIBUTED_WORDS.search(msg)
    if m and (kernel or not CONFIG_WORDS.search(msg)):
        return "distributed", f"words: distributed '{m.group(0)[:40]}'"
    if kernel:
        # 6k. Kernel code: the remaining checks are the call's invariants.
        if re.search(r"Attempted to load weight", msg):
            return "model_bug", "words: weight shape"
        return "unknown", "kernel argument/invariant check (no class signal)"
    # 6. Shape/key mismatches, missing weights: model_bug.
    m = MODEL_BUG_WORDS.search(msg)
    if m and (MODEL_LOADER_PATHS.search(path) or MODEL_LOADER_FUNCS.search(fn)
              or re.search(r"mismatch|Attempted to load weight|not the same shape|key|has no attribute|config\.json",
                           m.group(0), re.I)):
        return "model_bug", f"words: checkpoint/weight '{m.group(0)[:40]}'"
    # 7. Location: configuration modules and argument validation: config.
    if CONFIG_PATHS.search(path) or CONFIG_FUNCS.search(fn):
        return "config", "location: configuration / argument validation"
    # 8. Location: model loaders and load_weights: model_bug (shape/key checks live there).
    if MODEL_LOADER_PATHS.search(path) or MODEL_LOADER_FUNCS.search(fn):
        if CONFIG_WORDS.search(msg):  # a load format / loader option rejected
            return "config", "location: model loader, words of a rejected setting"
        return "model_bug", "location: model loader / load_weights"
    # 9. Location: distributed code (its remaining checks are about ranks and groups).
    if DISTRIBUTED_PATHS.search(path):
        if not CONFIG_WORDS.search(msg):
            return "distributed", "location: distributed code"
        return "config", "location: distributed code, words of a rejected setting"
    # 10. Generic words of a rejected setting (must be, not supported with, --flag...): config.
    m = CONFIG_WORDS.search(msg)
    if m:
        return "config", f"words: rejected setting '{m.group(0)[:40]}'"
    # 11. No class signal: an internal invariant.
    return "unknown", "no class signal (internal invariant)"


# ----------------------------------------------------------------------------------------


def msg_hash(path: str, message: str) -> str:
    return hashlib.sha1(f"{path}\n{message}".encode()).hexdigest()[:12]


def load_corrections(path: Path) -> dict:
    out = {}
    if not path.exists():
        return out
    for n, line in enumerate(path.read_text().splitlines(), 1):
        if not line.strip() or line.startswith("#"):
            continue
        cols = line.split("\t")
        if len(cols) < 4:
            sys.exit(f"{path}:{n}: want 4 tab-separated columns: file, hash, class, why")
        out[(cols[0], cols[1])] = (cols[2], cols[3])
    return out


CLASSES = ["hardware_support", "model_bug", "resource", "distributed", "config", "unknown"]


def parse_source_arg(spec: str) -> Source:
    """ENGINE=REPO=git:/gitdir[@rev][:sub1,sub2] or ENGINE=REPO=dir:/path[:sub1,...]"""
    engine, repo, loc = spec.split("=", 2)
    kind, rest = loc.split(":", 1)
    subs = []
    if ":" in rest:
        rest, s = rest.split(":", 1)
        subs = [x for x in s.split(",") if x]
    if kind == "git":
        rev = "HEAD"
        if "@" in rest:
            rest, rev = rest.split("@", 1)
        return Source(engine, repo, git=rest, rev=rev, subpaths=subs)
    return Source(engine, repo, dir=rest, subpaths=subs)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default=DEFAULT_OUT, help=f"JSONL output (default {DEFAULT_OUT})")
    ap.add_argument("--corrections", default=str(DEFAULT_CORRECTIONS))
    ap.add_argument("--source", action="append", default=[],
                    help="ENGINE=OWNER/REPO=git:/gitdir[@rev][:sub,...] or ENGINE=OWNER/REPO=dir:/path[:sub,...]; "
                         "replaces the built-in list")
    ap.add_argument("--only", action="append", default=[], help="harvest only these engines")
    args = ap.parse_args(argv)

    out = Path(args.out)
    repo_root = HERE.parent.resolve()
    if repo_root in out.resolve().parents:
        sys.exit(f"refusing to write the harvest inside the repository ({out}): it is upstream text")
    sources = [parse_source_arg(s) for s in args.source] or DEFAULT_SOURCES
    if args.only:
        sources = [s for s in sources if s.engine in args.only]
    corrections = load_corrections(Path(args.corrections))
    used_corrections = set()

    out.parent.mkdir(parents=True, exist_ok=True)
    excluded_path = out.with_name(out.stem + ".excluded.jsonl")
    per_engine = collections.Counter()
    per_engine_files = collections.Counter()
    per_class = collections.defaultdict(collections.Counter)
    excluded = collections.Counter()
    commits = collections.defaultdict(set)
    seen = set()
    with out.open("w") as fo, excluded_path.open("w") as fx:
        for src in sources:
            for path, commit, text in iter_source_files(src):
                per_engine_files[src.engine] += 1
                commits[(src.engine, src.repo)].add(commit)
                recs = harvest_python(text) if path.endswith(PY_EXT) else harvest_cpp(text)
                for rec in recs:
                    rec["message"] = rec["message"].strip()
                    h = msg_hash(path, rec["message"])
                    if (path, h) in seen:  # the same message raised twice in one file
                        continue
                    seen.add((path, h))
                    row = dict(engine=src.engine, repo=src.repo, commit=commit, file=path,
                               line=rec["line"], kind=rec["kind"], type=rec["type"],
                               message=rec["message"], hash=h, function=rec.get("function", ""),
                               holes=rec.get("holes", []))
                    if rec.get("condition"):
                        row["condition"] = rec["condition"]
                    why = excluded_reason(path, rec)
                    if why:
                        row["excluded"] = why
                        excluded[(src.engine, why)] += 1
                        fx.write(json.dumps(row) + "\n")
                        continue
                    cls, reason = classify(src.engine, path, rec)
                    if (path, h) in corrections:
                        cls, why_c = corrections[(path, h)]
                        reason = f"correction: {why_c}"
                        used_corrections.add((path, h))
                    row["class"], row["class_reason"] = cls, reason
                    per_engine[src.engine] += 1
                    per_class[src.engine][cls] += 1
                    fo.write(json.dumps(row) + "\n")

    print(f"wrote {sum(per_engine.values())} messages to {out} "
          f"({sum(excluded.values())} excluded -> {excluded_path})")
    print(f"{'engine':<20} {'repo':<44} {'files':>5} {'msgs':>5}  " + " ".join(f"{c[:8]:>8}" for c in CLASSES))
    for src in sources:
        e = src.engine
        print(f"{e:<20} {src.repo:<44} {per_engine_files[e]:>5} {per_engine[e]:>5}  "
              + " ".join(f"{per_class[e][c]:>8}" for c in CLASSES))
    for (e, repo), cs in sorted(commits.items()):
        cs = sorted(cs)
        print(f"  {e}: {repo} @ {cs[0] if len(cs) == 1 else f'{len(cs)} commits (see MANIFEST.tsv)'}")
    for (e, why), n in sorted(excluded.items()):
        print(f"  excluded {e}: {n} ({why})")
    unused = set(corrections) - used_corrections
    for path, h in sorted(unused):
        print(f"warning: correction not used (message gone?): {path} {h}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
