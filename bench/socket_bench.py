#!/usr/bin/env python3
"""Socket ingestion throughput of `fingerprintd run` (DESIGN.md §7: >= 500k lines/s per core for
`lines`, >= 250k for `jsonl`). A benchmark, not a timed test.

    bench/socket_bench.py                          # 1, 8, 64 connections x lines, jsonl
    bench/socket_bench.py --size-mb 64 --connections 1 8 --framing lines
    BIN=build-x/fingerprintd bench/socket_bench.py

For each (framing, connections): a fresh daemon with one `tcp` source on 127.0.0.1:0 (HTTP on a
free port, incidents to a scratch file); bench/gen_log.py's realistic mix (--size-mb MB, 99% INFO,
a failure every ~4 MB, 4 interleaved TP ranks) split into contiguous slices, one per connection,
each connection a pod of its own (`jsonl`: a Vector-shaped record per line with the pod name; the
deployment comes from deployment_from over it). All connections send at once from threads; the run
ends when GET /metrics counts every line (fingerprintd_lines_total summed over sources).

Figures per run: lines/s over wall time; lines per CPU-second of the daemon (utime+stime from
/proc: the daemon is one thread, so this is lines/s on one core when the sender and the daemon do
not share a core); CPU as % of one core over the run; peak RSS (VmHWM). Scratch files go to
/tmp/fingerprintd-socket-bench (removed at the end unless --keep); the binary is copied there
first, so a concurrent rebuild cannot swap it mid-run.
"""
import argparse
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
TICKS = os.sysconf("SC_CLK_TCK")


def proc_cpu_s(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICKS  # utime + stime


def proc_hwm_mb(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    return 0.0


def wait_for(pattern, path, deadline_s=15):
    end = time.time() + deadline_s
    while time.time() < end:
        with open(path, errors="replace") as f:
            m = re.search(pattern, f.read())
        if m:
            return m
        time.sleep(0.02)
    sys.exit(f"socket_bench: '{pattern}' not in {path}")


def lines_read(http_port):
    body = urllib.request.urlopen(f"http://127.0.0.1:{http_port}/metrics", timeout=5).read()
    total = 0
    for line in body.decode().splitlines():
        if line.startswith("fingerprintd_lines_total{"):
            total += float(line.rsplit(" ", 1)[1])
    return int(total)


def payloads(lines, framing, connections):
    """One bytes object per connection: a contiguous slice of the lines."""
    per = (len(lines) + connections - 1) // connections
    out = []
    for c in range(connections):
        part = lines[c * per:(c + 1) * per]
        if framing == "lines":
            out.append(b"\n".join(part) + b"\n")
            continue
        pod = f"bench{c}-7d9f8c6b5d-x{c:04d}"
        head = json.dumps({"kubernetes": {"pod_name": pod, "pod_namespace": "bench",
                                          "container_name": "vllm"},
                           "stream": "stdout", "source_type": "kubernetes_logs"})[:-1]
        out.append(b"".join(
            (head + ',"message":' + json.dumps(l.decode("utf-8", "replace")) + "}\n").encode()
            for l in part))
    return out


def run_one(binary, scratch, framing, connections, lines):
    config = os.path.join(scratch, "config.yaml")
    err = os.path.join(scratch, f"daemon-{framing}-{connections}.err")
    with open(config, "w") as f:
        f.write("sources:\n  - type: tcp\n    listen: 127.0.0.1:0\n"
                f"    framing: {framing}\n    labels: {{deployment: bench}}\n"
                "    deployment_from: '^(bench[0-9]+)-'\n"
                "http: {listen: 127.0.0.1:0}\n"
                f"incidents: {{path: {os.path.join(scratch, 'incidents.jsonl')}}}\n")
    data = payloads(lines, framing, connections)
    total_bytes = sum(len(d) for d in data)
    daemon = subprocess.Popen([binary, "run", "--config", config], stdout=subprocess.DEVNULL,
                              stderr=open(err, "w"))
    try:
        port = int(wait_for(r"listening on tcp:[^\n]*\(127\.0\.0\.1:(\d+)\)", err).group(1))
        http_port = int(wait_for(r"http: listening on 127\.0\.0\.1:(\d+)", err).group(1))
        socks = [socket.create_connection(("127.0.0.1", port)) for _ in range(connections)]
        cpu0, t0 = proc_cpu_s(daemon.pid), time.time()
        threads = [threading.Thread(target=s.sendall, args=(d,)) for s, d in zip(socks, data)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        while lines_read(http_port) < len(lines):
            if daemon.poll() is not None:
                sys.exit(f"socket_bench: the daemon exited; see {err}")
            time.sleep(0.05)
        wall, cpu = time.time() - t0, proc_cpu_s(daemon.pid) - cpu0
        rss = proc_hwm_mb(daemon.pid)
        for s in socks:
            s.close()
    finally:
        daemon.send_signal(signal.SIGTERM)
        daemon.wait(timeout=30)
    return {"framing": framing, "connections": connections, "lines": len(lines),
            "mb": total_bytes / 1e6, "wall_s": wall, "cpu_s": cpu,
            "lines_per_s": len(lines) / wall, "lines_per_cpu_s": len(lines) / max(cpu, 1e-9),
            "cpu_pct": 100 * cpu / wall, "rss_mb": rss}


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--size-mb", type=int, default=128)
    parser.add_argument("--connections", type=int, nargs="+", default=[1, 8, 64])
    parser.add_argument("--framing", nargs="+", default=["lines", "jsonl"])
    parser.add_argument("--scratch", default="/tmp/fingerprintd-socket-bench")
    parser.add_argument("--keep", action="store_true")
    args = parser.parse_args()
    binary_src = os.environ.get("BIN", os.path.join(ROOT, "build", "fingerprintd"))
    if not os.access(binary_src, os.X_OK):
        sys.exit(f"socket_bench: no {binary_src} (make build, or BIN=path)")
    os.makedirs(args.scratch, exist_ok=True)
    binary = os.path.join(args.scratch, "fingerprintd")
    shutil.copy2(binary_src, binary)
    log = os.path.join(args.scratch, f"input-{args.size_mb}.log")
    if not os.path.exists(log):
        subprocess.run([sys.executable, os.path.join(HERE, "gen_log.py"), "--size-mb",
                        str(args.size_mb), "-o", log], check=True, stderr=subprocess.DEVNULL)
    with open(log, "rb") as f:
        lines = f.read().split(b"\n")
    if lines and lines[-1] == b"":
        lines.pop()
    print(f"input: {len(lines):,} lines, {args.size_mb} MB (bench/gen_log.py); "
          f"load average {os.getloadavg()[0]:.2f}; {os.cpu_count()} cores")
    print("| framing | connections | lines/s (wall) | lines per CPU-second | CPU % of a core "
          "| peak RSS MiB | MB sent |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    try:
        for framing in args.framing:
            for connections in args.connections:
                r = run_one(binary, args.scratch, framing, connections, lines)
                print(f"| {framing} | {connections} | {r['lines_per_s']:,.0f} | "
                      f"{r['lines_per_cpu_s']:,.0f} | {r['cpu_pct']:.0f} | {r['rss_mb']:.1f} | "
                      f"{r['mb']:.0f} |", flush=True)
    finally:
        if not args.keep:
            shutil.rmtree(args.scratch, ignore_errors=True)


if __name__ == "__main__":
    main()
