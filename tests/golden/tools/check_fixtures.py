#!/usr/bin/env python3
"""Sanity checks on the generated fixtures (shape invariants, not detector behaviour).

    python3 tests/golden/tools/check_fixtures.py
"""

import glob
import json
import os
import re
import sys

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
G = os.path.join(ROOT, "tests", "golden")
ANSI = re.compile(r"\x1b\[[0-9;]*m")
# docs/log-formats.md §1.1 practical regex
VLLM = re.compile(r"^(?:\((?P<proc>[A-Za-z_][\w\-]*(?: [\w=]+)?) pid=(?P<pid>\d+)(?:, ip=(?P<ip>[^)]+))?\) )*"
                  r"(?P<level>DEBUG|INFO|WARNING|ERROR|CRITICAL) (?P<ts>\d{2}-\d{2} \d{2}:\d{2}:\d{2}) "
                  r"\[?(?P<file>[\w./\-]+?\.py|<[^>]+>):(?P<line>\d+)\] (?P<msg>.*)$")
PFX = re.compile(r"^\((?P<proc>[^)]+) pid=(?P<pid>\d+)\) ")
CRI = re.compile(r"^(?P<ts>\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:\.\d{1,9})?(?:Z|[+-]\d{2}:\d{2})) "
                 r"(?P<stream>stdout|stderr) (?P<tag>[PF])(?::\S+)? (?P<content>.*)$")
errors = []


def err(msg):
    errors.append(msg)


def check_vllm_plain(path, lines):
    last_ts = {}
    for n, raw in enumerate(lines, 1):
        clean = ANSI.sub("", raw).rstrip("\r")
        m = VLLM.match(clean)
        pm = PFX.match(clean)
        if m:
            key = m.group("pid") or "bare"
            ts = m.group("ts")
            if key != "bare" and key in last_ts and ts < last_ts[key]:
                err(f"{path}:{n}: time goes back for pid {key}: {ts} < {last_ts[key]}")
            last_ts[key] = ts
        if raw.endswith("\r"):
            # a \r-terminated line is a non-final line of a multi-line record: the next line
            # of the same process must carry the same header
            if not m:
                err(f"{path}:{n}: \\r on a line without a vLLM header")
    return last_ts


def main():
    plain = sorted(glob.glob(os.path.join(G, "vllm_*.log")) + glob.glob(os.path.join(G, "*", "*.log"))
                   + glob.glob(os.path.join(ROOT, "examples", "*", "*.log")))
    plain = [p for p in plain if "/docker/" not in p and "/cri/" not in p]
    for p in plain:
        data = open(p, "rb").read()
        assert data.endswith(b"\n"), p
        lines = data.decode("utf-8").split("\n")[:-1]
        check_vllm_plain(os.path.relpath(p, ROOT), lines)

    # per-worker split == single file
    one = open(os.path.join(G, "vllm_tp4_unknown_sf.log"), "rb").read().split(b"\n")[:-1]
    parts = []
    for f in sorted(glob.glob(os.path.join(G, "vllm_tp4_unknown_sf_per_worker", "*.log"))):
        parts += open(f, "rb").read().split(b"\n")[:-1]
    if sorted(one) != sorted(parts):
        err("per-worker split does not partition vllm_tp4_unknown_sf.log")

    # CRI reassembles to the plain stream without \r
    for f in glob.glob(os.path.join(G, "cri", "**", "*.log"), recursive=True):
        buf = {"stdout": b"", "stderr": b""}
        prev = ""
        for n, l in enumerate(open(f, "rb").read().split(b"\n")[:-1], 1):
            m = CRI.match(l.decode("utf-8"))
            if not m:
                err(f"{f}:{n}: not CRI")
                continue
            if m.group("ts") < prev and len(m.group("ts")) == len(prev):
                pass  # lexical compare is only indicative with trimmed fractions
            prev = m.group("ts")
            c = m.group("content").encode("utf-8")
            if c.endswith(b"\r"):
                err(f"{f}:{n}: CRI content keeps a trailing \\r")
            buf[m.group("stream")] += c
            if m.group("tag") == "F":
                buf[m.group("stream")] = b""
        if any(buf.values()):
            err(f"{f}: unterminated P fragment")

    # Docker json-file lines parse and keep their terminator
    for f in glob.glob(os.path.join(G, "docker", "*.log")):
        for n, l in enumerate(open(f, "rb").read().split(b"\n")[:-1], 1):
            o = json.loads(l)
            if set(o) != {"log", "stream", "time"} or not o["log"].endswith("\n"):
                err(f"{f}:{n}: bad docker record")

    for e in errors:
        print(e)
    print(f"{len(plain)} plain files checked, {len(errors)} problems")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
