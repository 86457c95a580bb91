#!/usr/bin/env python3
"""The sidecar's cost (DESIGN.md §7): driven by bench/sidecar.sh, which has the usage.

Three measurements of `fingerprintd run` (the real binary, files in a scratch dir):

  throughput  one file written at --rate-mb MB/s for --seconds s (bench/gen_log.py output, whole
              lines, a write every 10 ms); the daemon's peak RSS (VmHWM) and CPU (utime+stime over
              the writing, as % of one core); then SIGTERM and a check that it read every byte.
  idle        --files quiet files (kubelet layout, a few lines each, one deployment per pod);
              after they are all open and a settle time, CPU over --seconds s from
              /proc/PID/task/*/schedstat (ns, so 0.1% of a core over 30 s = 30 ms is well above
              the resolution); RSS too.
  latency     --episodes TP=2 target failures (tests/golden/vllm_tp2_unknown_sf.log, times moved
              10 min apart so each is its own incident) appended to the log: everything up to rank
              1's exception line, then (--gap s later) that line alone (t0, after write() returned),
              then the rest. --shape pod: one file for both ranks (a pod with TP=2); --shape worker:
              one file per worker, as a DaemonSet's pods write them (rank 1's lines, `Worker_TP1`
              and `[rank1]`, to w1.log, all else to w0.log, each in the golden's order).
              t1 = when the 2/2 incident line is in the JSONL file (polled every 0.5 ms). p50/p99
              of t1 - t0; then --cold more episodes whose last line comes after --quiet s of silence
              (the daemon on its quiet cadence), reported as their max.
              The same episodes on GET /metrics (polled every 0.5 ms beside the file): t_match =
              when fingerprintd_rule_matches_total of the target rule has counted the line,
              t_incident = when fingerprintd_incidents_total has counted the 2/2 incident, or
              (every episode after the first: the incident stays open while the deployment
              stays broken, and each episode is an occurrence of it, one JSONL revision each)
              fingerprintd_incident_occurrences_total its occurrence.

Prints one `key value` line per figure; the .sh formats the table.
"""
import argparse
import calendar
import ctypes
import json
import os
import re
import signal
import subprocess
import sys
import time
import urllib.request

HEADER_TIME = re.compile(rb"(\d\d)-(\d\d) (\d\d):(\d\d):(\d\d)")
TICKS = os.sysconf("SC_CLK_TCK")


def proc_status(pid, key):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(key + ":"):
                return int(line.split()[1])  # kB
    return 0


def proc_cpu_ticks(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])  # utime + stime (fields 14, 15)


def proc_cpu_ns(pid):
    total = 0
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{tid}/schedstat") as f:
                total += int(f.read().split()[0])
        except FileNotFoundError:
            pass
    return total


LIVE = []  # daemons started and not stopped yet


def die_with_parent():
    ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG


class Daemon:
    """`fingerprintd run ARGS`, stderr to a file; stopped with SIGTERM (then SIGKILL)."""

    def __init__(self, binary, args, err_path):
        self.err_path = err_path
        self.err = open(err_path, "ab")
        self.proc = subprocess.Popen([binary, "run", *args], stdout=subprocess.DEVNULL,
                                     stderr=self.err, preexec_fn=die_with_parent)
        LIVE.append(self)

    def stderr(self):
        with open(self.err_path, "rb") as f:
            return f.read().decode("utf-8", "replace")

    def wait_for(self, text, timeout=60):
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            if text in self.stderr():
                return True
            if self.proc.poll() is not None:
                break
            time.sleep(0.05)
        sys.exit(f"daemon: no '{text}' in {timeout}s; stderr:\n{self.stderr()[-3000:]}")

    def stop(self):
        if self in LIVE:
            LIVE.remove(self)
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.err.close()
        m = re.findall(r"stopped: (\d+) lines, (\d+) bytes", self.stderr())
        return (int(m[-1][0]), int(m[-1][1])) if m else (None, None)


def incident_ids(path):
    if not os.path.exists(path):
        return set()
    with open(path, "rb") as f:
        return {json.loads(row)["incident_id"] for row in f.read().splitlines()}


def throughput(a):
    os.makedirs(f"{a.dir}/tp", exist_ok=True)
    log = f"{a.dir}/tp/w.log"
    if os.path.exists(log):
        os.remove(log)
    daemon = Daemon(a.binary, ["--label", "deployment=bench", "--incidents", f"{a.dir}/tp.jsonl",
                               "--start-at", "beginning", f"{a.dir}/tp/*.log"], f"{a.dir}/tp.err")
    daemon.wait_for("running")
    rate = a.rate_mb * 1_000_000
    budget = int(rate * a.seconds)
    written = 0
    cpu0, t0 = proc_cpu_ticks(daemon.proc.pid), time.monotonic()
    rss_samples = []
    with open(a.input, "rb") as src, open(log, "ab", buffering=0) as out:
        step = rate / 100  # every 10 ms
        carry = b""
        tick = t0
        while written < budget:
            chunk = carry + src.read(int(step))
            if not chunk:
                break
            cut = chunk.rfind(b"\n") + 1  # whole lines, as a logger writes
            out.write(chunk[:cut])
            carry = chunk[cut:]
            written += cut
            tick += 0.01
            delay = tick - time.monotonic()
            if delay > 0:
                time.sleep(delay)
            if len(rss_samples) < written // 10_000_000:
                rss_samples.append(proc_status(daemon.proc.pid, "VmRSS"))
    elapsed = time.monotonic() - t0
    # Let it drain what is written (bounded), then take CPU over the whole run.
    end = time.monotonic() + 30
    while time.monotonic() < end:
        time.sleep(0.2)
        with open(f"/proc/{daemon.proc.pid}/io") as f:
            rchar = int(f.read().split("rchar:")[1].split()[0])
        if rchar >= written:
            break
    cpu = (proc_cpu_ticks(daemon.proc.pid) - cpu0) / TICKS
    drained = time.monotonic() - t0
    hwm = proc_status(daemon.proc.pid, "VmHWM")
    lines, nbytes = daemon.stop()
    live = incident_ids(f"{a.dir}/tp.jsonl")
    # The same bytes replayed: live must have found nothing replay does not
    # (replay also decides what was still open when the daemon stopped).
    with open(f"{a.dir}/tp-replay.jsonl", "wb") as out:
        subprocess.run([a.binary, "replay", "--format", "jsonl", "--label", "deployment=bench",
                        log], stdout=out, stderr=subprocess.DEVNULL, check=False)
    replayed = incident_ids(f"{a.dir}/tp-replay.jsonl")
    print(f"throughput_written_mb {written / 1e6:.1f}")
    print(f"throughput_seconds {elapsed:.1f}")
    print(f"throughput_rate_mb_s {written / 1e6 / elapsed:.2f}")
    print(f"throughput_cpu_pct {100 * cpu / drained:.1f}")
    print(f"throughput_rss_max_mib {max(rss_samples or [0]) / 1024:.1f}")
    print(f"throughput_hwm_mib {hwm / 1024:.1f}")
    print(f"throughput_bytes_read {nbytes}")
    print(f"throughput_bytes_ok {int(nbytes == written)}")
    print(f"throughput_incidents_live {len(live)}")
    print(f"throughput_incidents_replay {len(replayed)}")
    print(f"throughput_incidents_live_not_in_replay {len(live - replayed)}")


def idle(a):
    root = f"{a.dir}/idle"
    subprocess.run(["rm", "-rf", root], check=True)
    line = (b"\x1b[0;36m(Worker_TP0 pid=254)\x1b[0;0m INFO 03-04 10:15:02 [gpu_model_runner.py:2602]"
            b" Model loading took 15.2 GiB and 9.8 seconds\n")
    for i in range(a.files):
        d = f"{root}/pods/default_vllm-{i:04d}-7d9f8b6c4-x2x4z_0f1e2d3c-{i:04d}/vllm"
        os.makedirs(d)
        with open(f"{d}/0.log", "wb") as f:
            f.write(line * 5)
    daemon = Daemon(a.binary, ["--incidents", f"{a.dir}/idle.jsonl", "--start-at", "beginning",
                               f"{root}/pods/*/*/*.log"], f"{a.dir}/idle.err")
    daemon.wait_for("running")
    time.sleep(a.settle)
    pid = daemon.proc.pid
    fds = len(os.listdir(f"/proc/{pid}/fd"))
    ns0, t0 = proc_cpu_ns(pid), time.monotonic()
    time.sleep(a.seconds)
    ns1, t1 = proc_cpu_ns(pid), time.monotonic()
    rss = proc_status(pid, "VmRSS")
    hwm = proc_status(pid, "VmHWM")
    daemon.stop()
    print(f"idle_files {a.files}")
    print(f"idle_open_fds {fds}")
    print(f"idle_seconds {t1 - t0:.1f}")
    print(f"idle_cpu_ms {(ns1 - ns0) / 1e6:.1f}")
    print(f"idle_cpu_pct {100 * (ns1 - ns0) / 1e9 / (t1 - t0):.3f}")
    print(f"idle_rss_mib {rss / 1024:.1f}")
    print(f"idle_hwm_mib {hwm / 1024:.1f}")


def shifted(lines, shift_s, year):
    out = []
    for line in lines:
        m = HEADER_TIME.search(line)
        if m:
            t = calendar.timegm((year, int(m[1]), int(m[2]), int(m[3]), int(m[4]), int(m[5])))
            stamp = time.strftime("%m-%d %H:%M:%S", time.gmtime(t + shift_s)).encode()
            line = line[:m.start()] + stamp + line[m.end():]
        out.append(line)
    return out


def percentile(values, p):
    values = sorted(values)
    k = min(len(values) - 1, max(0, int(round(p / 100 * len(values) + 0.5)) - 1))
    return values[k]


def metric_sum(port, *prefixes):
    """The sum of the samples of /metrics whose line starts with one of `prefixes`."""
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as r:
        text = r.read().decode()
    return sum(float(line.rsplit(" ", 1)[1]) for line in text.splitlines()
               if line.startswith(prefixes))


def rank_of(line):
    """--shape worker: the file (0 or 1) a golden line goes to."""
    return 1 if b"Worker_TP1" in line or line.startswith(b"[rank1]") else 0


def write_lines(fds, lines):
    """Writes `lines` in order, one write() per run of lines for the same file."""
    run, run_fd = [], None
    for line in lines:
        fd = fds[rank_of(line)] if len(fds) > 1 else fds[0]
        if fd != run_fd and run:
            os.write(run_fd, b"".join(run))
            run = []
        run_fd = fd
        run.append(line)
    if run:
        os.write(run_fd, b"".join(run))


def latency(a):
    subprocess.run(["rm", "-rf", f"{a.dir}/lat"], check=True)
    os.makedirs(f"{a.dir}/lat")
    logs = [f"{a.dir}/lat/w.log"] if a.shape == "pod" else [f"{a.dir}/lat/w0.log",
                                                             f"{a.dir}/lat/w1.log"]
    jsonl = f"{a.dir}/lat.jsonl"
    for p in (jsonl, f"{a.dir}/lat.err"):  # one daemon's port and stderr per run
        if os.path.exists(p):
            os.remove(p)
    with open(a.golden, "rb") as f:
        golden = f.read().splitlines(keepends=True)
    last = next(i for i in range(len(golden) - 1, -1, -1)
                if b"Worker_TP1" in golden[i] and b"Unknown SF transformation" in golden[i])
    year = time.gmtime().tm_year
    first = calendar.timegm((year, 3, 4, 10, 14, 37))
    # Episodes 10 min apart (each its own incident), the last one ending before now.
    base = int(time.time()) - (a.episodes + a.cold + 1) * 600 - first
    daemon = Daemon(a.binary, ["--label", "deployment=bench", "--incidents", jsonl,
                               "--http", "127.0.0.1:0", "--start-at", "beginning",
                               f"{a.dir}/lat/*.log"], f"{a.dir}/lat.err")
    daemon.wait_for("running")
    port = int(re.search(r"http: listening on 127\.0\.0\.1:(\d+)", daemon.stderr())[1])
    rule = "deepgemm-unknown-sf-transformation"
    match_metric = f'fingerprintd_rule_matches_total{{rule="{rule}",stage="symptom"}}'
    incident_metrics = [f'fingerprintd_{name}{{class="hardware_support",rule="{rule}"'
                        for name in ("incidents_total", "incident_occurrences_total")]
    samples, cold, match_ms, incident_ms = [], [], [], []
    seen = 0
    fds = [os.open(log, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644) for log in logs]
    try:
        for k in range(a.episodes + a.cold):
            ep = shifted(golden, base + k * 600, year)
            write_lines(fds, ep[:last])
            if k < a.episodes:
                time.sleep(a.gap)  # the lines before reach the daemon first, as in a real log
            else:
                time.sleep(a.quiet)  # silence: the daemon goes to its quiet cadence
            matches0 = metric_sum(port, match_metric)
            incidents0 = metric_sum(port, *incident_metrics)
            write_lines(fds, [ep[last]])
            t0 = time.monotonic()
            deadline = t0 + 10
            found = False
            t_match = t_incident = None
            while time.monotonic() < deadline and (not found or t_incident is None):
                if t_match is None and metric_sum(port, match_metric) > matches0:
                    t_match = time.monotonic()
                if t_incident is None and metric_sum(port, *incident_metrics) > incidents0:
                    t_incident = time.monotonic()
                if found:
                    time.sleep(0.0005)
                    continue
                with open(jsonl, "rb") if os.path.exists(jsonl) else open(os.devnull, "rb") as f:
                    data = f.read()
                # Only complete lines: the daemon may be in the middle of writing one.
                rows = data[:data.rfind(b"\n") + 1].splitlines()
                for row in rows[seen:]:
                    j = json.loads(row)
                    if j["workers"]["affected"] == 2 and j["workers"]["expected"] == 2:
                        found = True
                seen = len(rows) if found else seen
                if found:
                    t1 = time.monotonic()
                else:
                    time.sleep(0.0005)
            if not found:
                sys.exit(f"episode {k}: no 2/2 incident within 10 s; stderr:\n"
                         f"{daemon.stderr()[-3000:]}")
            (cold if k >= a.episodes else samples).append((t1 - t0) * 1000)
            if k < a.episodes and t_match is not None and t_incident is not None:
                match_ms.append((t_match - t0) * 1000)
                incident_ms.append((t_incident - t0) * 1000)
            write_lines(fds, ep[last + 1:])
    finally:
        for fd in fds:
            os.close(fd)
        daemon.stop()
    rows = [json.loads(r) for r in open(jsonl, "rb").read().splitlines()]
    ids = {r["incident_id"] for r in rows if r["rule"] == "deepgemm-unknown-sf-transformation"}
    # Keys of --shape pod as before; --shape worker's carry `_worker`.
    lat, met = ("latency", "metrics") if a.shape == "pod" else ("latency_worker", "metrics_worker")
    print(f"{lat}_episodes {len(samples)}")
    print(f"{lat}_distinct_incidents {len(ids)}")
    print(f"{lat}_p50_ms {percentile(samples, 50):.1f}")
    print(f"{lat}_p99_ms {percentile(samples, 99):.1f}")
    print(f"{lat}_max_ms {max(samples):.1f}")
    print(f"{lat}_min_ms {min(samples):.1f}")
    print(f"{met}_episodes {len(match_ms)}")
    print(f"{met}_match_p50_ms {percentile(match_ms, 50):.1f}")
    print(f"{met}_match_p99_ms {percentile(match_ms, 99):.1f}")
    print(f"{met}_incident_p50_ms {percentile(incident_ms, 50):.1f}")
    print(f"{met}_incident_p99_ms {percentile(incident_ms, 99):.1f}")
    if cold:
        print(f"{lat}_after_quiet_episodes {len(cold)}")
        print(f"{lat}_after_quiet_max_ms {max(cold):.1f}")


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("part", choices=["throughput", "idle", "latency"])
    p.add_argument("--binary", required=True)
    p.add_argument("--dir", required=True)
    p.add_argument("--input", help="throughput: a bench/gen_log.py file")
    p.add_argument("--golden", help="latency: tests/golden/vllm_tp2_unknown_sf.log")
    p.add_argument("--rate-mb", type=float, default=10)
    p.add_argument("--seconds", type=float, default=30)
    p.add_argument("--files", type=int, default=1000)
    p.add_argument("--settle", type=float, default=15)
    p.add_argument("--episodes", type=int, default=100)
    p.add_argument("--gap", type=float, default=0.2)
    p.add_argument("--shape", choices=["pod", "worker"], default="pod",
                   help="latency: one file for both ranks (pod) or one file per worker")
    p.add_argument("--cold", type=int, default=5,
                   help="latency: extra episodes, each after --quiet s of silence")
    p.add_argument("--quiet", type=float, default=12)
    a = p.parse_args()
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    try:
        {"throughput": throughput, "idle": idle, "latency": latency}[a.part](a)
    finally:
        for daemon in list(LIVE):
            daemon.stop()


if __name__ == "__main__":
    main()
