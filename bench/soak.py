#!/usr/bin/env python3
"""The soak (issue 13, DESIGN.md §7 "Nothing lost, nothing doubled"); driven by bench/soak.sh.

One `fingerprintd run --config C --audit A` is SIGKILLed at seeded random moments and restarted
(at once or after up to 2 s) while a writer produces logs for four deployments of two TP ranks each
at a fixed rate:

  rc-a    logs/rc-a/rank{0,1}.log, plain     rename+create rotation (rank0.log -> rank0.log.1 ...)
  ct-b    logs/ct-b/rank{0,1}.log, plain     copytruncate (copy to rank0.log.1, truncate)
  kube-c  pods/soak_kube-c-rank{0,1}_uid/vllm/0.log, CRI   kubelet rotation: 0.log ->
          0.log.<YYYYmmdd-HHMMSS>, a new 0.log, every rotated file but the newest gzipped (.gz);
          the glob `*/*/*.log` matches 0.log only
  sock-d  two TCP clients (one per rank), jsonl {"log": line, "deployment": "sock-d"}

Every filler line carries a unique id (`soak d=<dep> r=<rank> n=<seq>`). Every ~45-75 s each
deployment gets an episode: the lines of examples/qwen3-fp8-rtx5090/worker.log (the target,
deepgemm-unknown-sf-transformation) or examples/moonlight-16b-h100-oom/worker.log (a sibling,
cuda-out-of-memory), Worker_TP1's lines to rank 1 and the rest to rank 0, times moved to now and
pids made unique. Ground truth = the (deployment, rule, time) of every episode written.

Accounting (what "lost" and "doubled" mean, see sink/audit_log.h):
  * written: per source (a file's path; `tcp:ADDR` for sockets) a multiset of line digests
    (zlib crc32 << 32 | adler32), as the daemon's audit computes them;
  * audited: the audit file after the final clean stop (SIGTERM: its last checkpoint commits
    what the state no longer needs). Before that stop the writer stops and every file gets one
    last line dated --drain-hours later (past every rule's maxspan), so the daemon's state needs
    no earlier line and the final checkpoint covers everything written;
  * file lines: lost = written and not audited, doubled = audited more often than written;
  * socket lines: there is no acknowledgement in the protocol, so lines a kill cut off in flight
    (kernel buffers, read but not yet checkpointed) are the shipper's to resend and not counted as
    lost; lost counts only lines sent on connections opened after the last restart (the final
    run, which ends cleanly). Doubled counts every socket line. A client whose connection breaks
    reconnects and resends its last episode if it was sent in the 15 s before the break (same
    text and times, so the same incident id); resent lines count as written twice;
  * rotated files kept: --keep-rotated (40). A checkpoint's safe offset can lag a rule's maxspan
    (30 min) behind what was read (start-up lines a later failure may still need), and a restart
    reads again from there: a file deleted within that window is lost at a restart (the tailer
    finds renamed, copied and gzipped pieces, not deleted ones). Rotating every ~20 s squeezes
    hours of kubelet rotation (10 MiB files) into minutes, so the soak keeps more files;
  * copytruncate: at any moment, as logrotate does it (copy to rank0.log.1, then truncate; the
    writer writes nothing in between), also while the daemon is down or still catching up after a
    restart: lines the tailer had not read yet are read from the copy, found by its head;
  * incidents, counted by occurrences (a failure again while its incident is open is another
    occurrence of it, a revision whose `occurrences` grew): each occurrence is matched to the
    episode of its deployment and rule nearest in time (within 15 s of first_seen for the first,
    last_seen for a later one): missed = an episode with none, doubled = with more than one;
    unexpected = occurrences matching no episode.

RSS (VmRSS) and CPU (utime+stime, % of one core) of the daemon are sampled once a second into
soak.csv. Prints `key value` lines; exit 1 when any of lost/doubled/missed/doubled incidents is not 0.
"""
import argparse
import collections
import csv
import datetime
import gzip
import json
import os
import random
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
import zlib

TICKS = os.sysconf("SC_CLK_TCK")
TARGET_RULE = "deepgemm-unknown-sf-transformation"
SIBLING_RULE = "cuda-out-of-memory"
HEADER_TIME = re.compile(r"\b\d\d-\d\d \d\d:\d\d:\d\d\b")
TORCH_TIME = re.compile(r"\[([WEI])\d{4} \d\d:\d\d:\d\d\.\d+")
PID = re.compile(r"pid=(\d+)")


def digest(b):
    return (zlib.crc32(b) << 32) | zlib.adler32(b)


def header_time(t):
    return time.strftime("%m-%d %H:%M:%S", time.localtime(t))


def cri_time(t):
    return datetime.datetime.fromtimestamp(t, datetime.timezone.utc).strftime(
        "%Y-%m-%dT%H:%M:%S.%f000Z")


class Ledger:
    """What was written, per source: digest -> count."""

    def __init__(self, keep_text=False):
        self.by_source = collections.defaultdict(collections.Counter)
        self.text = {} if keep_text else None
        self.lines = 0
        self.bytes = 0

    def add(self, source, line):
        self.by_source[source][digest(line)] += 1
        if self.text is not None:
            self.text[digest(line)] = line[:100]
        self.lines += 1
        self.bytes += len(line) + 1


class Daemon:
    def __init__(self, binary, config, audit, log_path):
        self.args = [binary, "run", "--config", config, "--audit", audit]
        self.log_path = log_path
        self.proc = None
        self.started_at = 0.0
        self.starts = 0
        self.last_ticks = None

    def start(self):
        log = open(self.log_path, "ab")
        self.proc = subprocess.Popen(self.args, stdout=log, stderr=log, stdin=subprocess.DEVNULL)
        log.close()
        self.started_at = time.monotonic()
        self.starts += 1
        self.last_ticks = None

    def alive(self):
        return self.proc is not None and self.proc.poll() is None

    def kill(self):
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait()
        self.proc = None

    def stop(self, timeout=30):
        self.proc.send_signal(signal.SIGTERM)
        try:
            rc = self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            rc = self.proc.wait()
        self.proc = None
        return rc

    def sample(self):
        """(rss_kb, cpu ticks since the last sample of this pid) or None."""
        if not self.alive():
            return None
        pid = self.proc.pid
        try:
            with open(f"/proc/{pid}/status") as f:
                rss = next((int(l.split()[1]) for l in f if l.startswith("VmRSS:")), 0)
            with open(f"/proc/{pid}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
            ticks = int(fields[11]) + int(fields[12])
        except (OSError, StopIteration, ValueError):
            return None
        delta = None if self.last_ticks is None else ticks - self.last_ticks
        self.last_ticks = ticks
        return rss, delta


class FileRank:
    """One rank's log file of a file deployment."""

    def __init__(self, deployment, rank, path, cri):
        self.deployment, self.rank, self.path, self.cri = deployment, rank, path, cri
        self.seq = 0
        os.makedirs(os.path.dirname(path), exist_ok=True)
        open(path, "ab").close()

    def wrap(self, text, t):
        return (f"{cri_time(t)} stdout F {text}" if self.cri else text).encode()

    def filler(self, t, pad):
        self.seq += 1
        return self.wrap(f"INFO {header_time(t)} [soak.py:1] soak d={self.deployment} "
                         f"r={self.rank} n={self.seq:08d} {pad}", t)

    def write(self, lines, ledger):
        if not lines:
            return
        with open(self.path, "ab") as f:
            f.write(b"".join(l + b"\n" for l in lines))
        for l in lines:
            ledger.add(self.path, l)


class SocketRank:
    """One rank's TCP client of sock-d (jsonl)."""

    def __init__(self, deployment, rank, address):
        self.deployment, self.rank, self.address = deployment, rank, address
        self.seq = 0
        self.sock = None
        self.connection = 0  # connections opened so far
        self.connected_at = 0.0
        self.last_episode = None  # (sent at, [text])
        self.resends = 0

    def filler(self, t, pad):
        self.seq += 1
        return (f"INFO {header_time(t)} [soak.py:1] soak d={self.deployment} r={self.rank} "
                f"n={self.seq:08d} {pad}")

    def connect(self):
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        s.settimeout(2)
        try:
            s.connect(self.address)
        except OSError:
            s.close()
            return False
        self.sock = s
        self.connection += 1
        self.connected_at = time.monotonic()
        return True

    def send(self, texts, ledger, final_ledger, final_start):
        """Sends; on a broken connection reconnects (and resends a recent episode) next time."""
        if self.sock is None:
            if not self.connect():
                return False  # the daemon is down: these lines are not sent (not written)
            if self.last_episode and time.monotonic() - self.last_episode[0] < 15:
                self.resends += 1
                episode = self.last_episode[1]
                self.last_episode = None
                self.send(episode, ledger, final_ledger, final_start)
                if self.sock is None:
                    return False
        payload = b"".join(json.dumps({"log": t, "deployment": self.deployment}).encode() + b"\n"
                           for t in texts)
        try:
            self.sock.sendall(payload)
        except OSError:
            self.sock.close()
            self.sock = None
            return False
        source = f"tcp:{self.address[0]}:{self.address[1]}"
        final = final_start is not None and self.connected_at >= final_start
        for t in texts:
            ledger.add(source, t.encode())
            if final:
                final_ledger.add(source, t.encode())
        return True

    def close(self):
        if self.sock is not None:
            try:
                self.sock.shutdown(socket.SHUT_WR)
                self.sock.settimeout(5)
                while self.sock.recv(4096):
                    pass
            except OSError:
                pass
            self.sock.close()
            self.sock = None


def load_episode(path, pid_base, t, rank_of):
    """The example's lines for rank 0 and rank 1 at time t, pids moved by pid_base."""
    ranks = ([], [])
    hm = header_time(t)
    torch = time.strftime("%m%d %H:%M:%S", time.localtime(t))
    with open(path, encoding="utf-8", errors="surrogateescape") as f:
        for line in f.read().split("\n"):
            if not line:
                continue
            line = HEADER_TIME.sub(hm, line)
            line = TORCH_TIME.sub(lambda m: f"[{m.group(1)}{torch}.000000", line)
            line = PID.sub(lambda m: f"pid={int(m.group(1)) + pid_base}", line)
            ranks[rank_of(line)].append(line)
    return ranks


def rank_of(line):
    return 1 if ("Worker_TP1" in line or " [1] NCCL" in line or "[rank1]" in line) else 0


def rotate_rename(rank, keep):
    if os.path.exists(f"{rank.path}.{keep}"):
        os.remove(f"{rank.path}.{keep}")
    for i in range(keep - 1, 0, -1):
        src = f"{rank.path}.{i}"
        if os.path.exists(src):
            os.replace(src, f"{rank.path}.{i + 1}")
    os.replace(rank.path, f"{rank.path}.1")
    open(rank.path, "ab").close()


def rotate_copytruncate(rank, keep):
    if os.path.exists(f"{rank.path}.{keep}"):
        os.remove(f"{rank.path}.{keep}")
    for i in range(keep - 1, 0, -1):
        if os.path.exists(f"{rank.path}.{i}"):
            os.replace(f"{rank.path}.{i}", f"{rank.path}.{i + 1}")
    shutil.copyfile(rank.path, f"{rank.path}.1")
    os.truncate(rank.path, 0)


def rotate_kubelet(rank, keep):
    d = os.path.dirname(rank.path)
    stamp = time.strftime("%Y%m%d-%H%M%S", time.gmtime())
    target = f"{rank.path}.{stamp}"
    n = 0
    while os.path.exists(target) or os.path.exists(target + ".gz"):
        n += 1
        target = f"{rank.path}.{stamp}-{n}"
    os.replace(rank.path, target)
    open(rank.path, "ab").close()
    rotated = sorted(f for f in os.listdir(d) if f.startswith("0.log."))
    plain = [f for f in rotated if not f.endswith(".gz")]
    for f in plain[:-1]:  # kubelet keeps the newest rotated file uncompressed
        src = os.path.join(d, f)
        with open(src, "rb") as fin, gzip.open(src + ".gz", "wb") as fout:
            shutil.copyfileobj(fin, fout)
        os.remove(src)
    rotated = sorted(f for f in os.listdir(d) if f.startswith("0.log."))
    for f in rotated[:-keep]:
        os.remove(os.path.join(d, f))


def reread_bytes(checkpoint_path):
    """What a restart from this checkpoint reads again: per file source, the
    offset read up to when it was saved minus its safe offset."""
    try:
        with open(checkpoint_path) as f:
            cp = json.load(f)
    except (OSError, ValueError):
        return None
    return sum(max(0, s.get("read", s["safe"]["offset"]) - s["safe"]["offset"])
               for s in cp.get("sources", []))


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def write_config(path, root, port, checkpoint_interval, rules_dir):
    rules = f"rules: {rules_dir}\n" if rules_dir else ""
    text = f"""# bench/soak.py
{rules}sources:
  - type: file
    paths: ["{root}/logs/*/*.log"]
    start_at: beginning
    format: plain
    deployment_from: '/logs/([^/]+)/'
  - type: file
    paths: ["{root}/pods/*/*/*.log"]
    start_at: beginning
    format: cri
    deployment_from: '/pods/[^_]+_([^_]+)-rank[0-9]+_'
  - type: tcp
    listen: 127.0.0.1:{port}
    framing: jsonl
checkpoint_dir: {root}/checkpoints
checkpoint_interval: {checkpoint_interval}
http: {{listen: "127.0.0.1:0"}}
incidents: {{path: "{root}/incidents.jsonl"}}
correlation: {{window: 20s}}
"""
    with open(path, "w") as f:
        f.write(text)


def parse_time(s):
    return datetime.datetime.fromisoformat(s.replace("Z", "+00:00")).timestamp()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--binary", required=True)
    ap.add_argument("--dir", required=True)
    ap.add_argument("--root", required=True, help="the repository (examples/)")
    ap.add_argument("--seconds", type=float, default=600)
    ap.add_argument("--kills", type=int, default=20)
    ap.add_argument("--seed", type=int, default=13)
    ap.add_argument("--rate-kb", type=float, default=256, help="KB/s over all ranks")
    ap.add_argument("--rotate-every", type=float, default=20, help="mean s between rotations")
    ap.add_argument("--episode-every", type=float, default=60, help="mean s between episodes")
    ap.add_argument("--checkpoint-interval", default="2s")
    ap.add_argument("--keep-rotated", type=int, default=40,
                    help="rotated files kept (rename+create, kubelet); see the docstring")
    ap.add_argument("--drain-hours", type=float, default=7)
    ap.add_argument("--keep-text", action="store_true", help="print lost lines' text")
    ap.add_argument("--maxspan", default="",
                    help="e.g. 60s: run with the pack's maxspans shortened (default: the pack)")
    args = ap.parse_args()

    rng = random.Random(args.seed)
    root = os.path.abspath(args.dir)
    for sub in ("logs", "pods", "checkpoints"):
        shutil.rmtree(os.path.join(root, sub), ignore_errors=True)
    for f in ("incidents.jsonl", "audit.txt", "daemon.log", "soak.csv"):
        if os.path.exists(os.path.join(root, f)):
            os.remove(os.path.join(root, f))
    os.makedirs(root, exist_ok=True)
    port = free_port()
    config = os.path.join(root, "soak.yaml")
    rules_dir = None
    if args.maxspan:
        # The pack with every rule's maxspan shortened: start-up lines stop holding the safe
        # offset back after that much log time, so checkpoints commit lines during the run.
        rules_dir = os.path.join(root, "rules")
        shutil.rmtree(rules_dir, ignore_errors=True)
        os.makedirs(rules_dir)
        for name in os.listdir(os.path.join(args.root, "rules")):
            if name.endswith(".yaml"):
                with open(os.path.join(args.root, "rules", name)) as f:
                    text = re.sub(r"(?m)^maxspan: .*$", f"maxspan: {args.maxspan}", f.read())
                with open(os.path.join(rules_dir, name), "w") as f:
                    f.write(text)
    write_config(config, root, port, args.checkpoint_interval, rules_dir)
    audit_path = os.path.join(root, "audit.txt")
    daemon = Daemon(args.binary, config, audit_path, os.path.join(root, "daemon.log"))

    deployments = {
        "rc-a": [FileRank("rc-a", r, f"{root}/logs/rc-a/rank{r}.log", False) for r in (0, 1)],
        "ct-b": [FileRank("ct-b", r, f"{root}/logs/ct-b/rank{r}.log", False) for r in (0, 1)],
        "kube-c": [FileRank("kube-c", r, f"{root}/pods/soak_kube-c-rank{r}_uid{r}/vllm/0.log",
                            True) for r in (0, 1)],
        "sock-d": [SocketRank("sock-d", r, ("127.0.0.1", port)) for r in (0, 1)],
    }
    rotation = {"rc-a": rotate_rename, "ct-b": rotate_copytruncate, "kube-c": rotate_kubelet}
    examples = {TARGET_RULE: os.path.join(args.root, "examples/qwen3-fp8-rtx5090/worker.log"),
                SIBLING_RULE: os.path.join(args.root, "examples/moonlight-16b-h100-oom/worker.log")}

    # Seeded schedule: kill times (at least 2 s apart), first episode and rotation per deployment.
    duration = args.seconds
    kills = []
    while len(kills) < args.kills:
        t = rng.uniform(2.0, max(3.0, duration - 4.0))
        if all(abs(t - k) >= min(2.0, duration / (3 * args.kills + 1)) for k in kills):
            kills.append(t)
    kills.sort()
    next_episode = {d: rng.uniform(1.5, min(8.0, duration / 3)) for d in deployments}
    next_rotation = {d: rng.uniform(3.0, max(3.5, min(args.rotate_every, duration * 0.6)))
                     for d in rotation}

    ledger = Ledger(args.keep_text)
    final_ledger = Ledger()  # socket lines on connections of the final run
    episodes = []  # (deployment, rule, t)
    samples = []
    counts = collections.Counter()
    pad_rng = random.Random(args.seed + 1)
    per_tick_bytes = args.rate_kb * 1024 / 8 / 20  # 8 ranks, 20 ticks/s
    line_bytes = 170
    restart_at = None
    final_start = None
    episode_n = 0

    daemon.start()
    start = time.monotonic()
    next_tick = start
    next_sample = start
    kill_i = 0
    rereads = []  # bytes each restart reads again (reread_bytes)
    while True:
        now_m = time.monotonic()
        elapsed = now_m - start
        if elapsed >= duration:
            break
        now = time.time()
        # Kills and restarts.
        if kill_i < len(kills) and elapsed >= kills[kill_i] and daemon.alive():
            daemon.kill()
            counts["kills"] += 1
            kill_i += 1
            delay = 0.0 if rng.random() < 0.4 else rng.uniform(0.05, 2.0)
            restart_at = now_m + delay
        if not daemon.alive() and restart_at is not None and now_m >= restart_at:
            reread = reread_bytes(os.path.join(root, "checkpoints", "checkpoint.json"))
            if reread is not None:
                rereads.append(reread)
            daemon.start()
            restart_at = None
            if kill_i >= len(kills):
                final_start = daemon.started_at
        # Rotations.
        for d, fn in rotation.items():
            if elapsed < next_rotation[d]:
                continue
            for rank in deployments[d]:
                fn(rank, args.keep_rotated)
            counts[f"rotations_{d}"] += 1
            next_rotation[d] = elapsed + rng.uniform(0.5, 1.5) * args.rotate_every
        # Episodes.
        for d, ranks in deployments.items():
            if elapsed < next_episode[d]:
                continue
            rule = TARGET_RULE if rng.random() < 0.7 else SIBLING_RULE
            episode_n += 1
            lines = load_episode(examples[rule], 1000 * episode_n, now, rank_of)
            episodes.append((d, rule, now))
            for rank, texts in zip(ranks, lines):
                if isinstance(rank, SocketRank):
                    if rank.send(texts, ledger, final_ledger, final_start):
                        rank.last_episode = (time.monotonic(), texts)
                    else:
                        counts["socket_episode_unsent"] += 1
                        rank.last_episode = (time.monotonic(), texts)
                else:
                    rank.write([rank.wrap(t, now) for t in texts], ledger)
            next_episode[d] = elapsed + rng.uniform(0.75, 1.25) * args.episode_every
        # Filler at the fixed rate.
        if now_m >= next_tick:
            next_tick += 0.05
            n = max(1, int(per_tick_bytes / line_bytes))
            for d, ranks in deployments.items():
                for rank in ranks:
                    pad = "x" * pad_rng.randint(60, 120)
                    lines = [rank.filler(now, pad) for _ in range(n)]
                    if isinstance(rank, SocketRank):
                        rank.send(lines, ledger, final_ledger, final_start)
                    else:
                        rank.write(lines, ledger)
        if now_m >= next_sample:
            next_sample += 1.0
            s = daemon.sample()
            if s is not None and now_m - daemon.started_at >= 1.0:
                rss, ticks = s
                cpu = None if ticks is None else 100.0 * ticks / TICKS
                samples.append((round(elapsed, 1), daemon.proc.pid, rss, cpu, counts["kills"],
                                ledger.lines))
        time.sleep(max(0.0, min(next_tick, next_sample) - time.monotonic()))

    # The end: restart if the last kill left it down, close the sockets, drain, stop cleanly.
    if not daemon.alive():
        daemon.start()
        final_start = daemon.started_at
    if final_start is None:
        final_start = daemon.started_at
    for rank in deployments["sock-d"]:
        rank.close()
    drain_t = time.time() + args.drain_hours * 3600
    for d in ("rc-a", "ct-b", "kube-c"):
        for rank in deployments[d]:
            rank.write([rank.wrap(f"INFO {header_time(drain_t)} [soak.py:2] soak end d={d} "
                                  f"r={rank.rank}", drain_t)], ledger)
    time.sleep(3.0)
    s = daemon.sample()
    if s is not None:
        samples.append((round(time.monotonic() - start, 1), daemon.proc.pid, s[0],
                        None if s[1] is None else 100.0 * s[1] / TICKS, counts["kills"],
                        ledger.lines))
    rc = daemon.stop()

    # Audit: (source, digest) counts.
    audited = collections.defaultdict(collections.Counter)
    audit_lines = 0
    with open(audit_path, "rb") as f:
        for raw in f:
            dg, offset, source = raw.rstrip(b"\n").split(b" ", 2)
            source = source.decode()
            if offset == b"-":  # a socket stream's line: its source, '#', its slot, ...
                source = source.split("#", 1)[0]
            audited[source][int(dg, 16)] += 1
            audit_lines += 1
    file_lost = file_doubled = sock_doubled = sock_lost_final = unknown = 0
    lost_examples = []
    for source, written in ledger.by_source.items():
        got = audited.get(source, collections.Counter())
        is_socket = source.startswith("tcp:")
        for dg, n in written.items():
            a = got.get(dg, 0)
            if is_socket:
                sock_doubled += max(0, a - n)
            else:
                if a < n:
                    file_lost += n - a
                    if len(lost_examples) < 12:
                        text = ledger.text.get(dg, b"") if ledger.text is not None else b""
                        lost_examples.append((source, f"{dg:016x} {text!r}"))
                file_doubled += max(0, a - n)
        for dg, a in got.items():
            if dg not in written:
                unknown += a
    for source, written in final_ledger.by_source.items():
        got = audited.get(source, collections.Counter())
        for dg, n in written.items():
            sock_lost_final += max(0, min(n, ledger.by_source[source][dg]) - got.get(dg, 0))
    for source, got in audited.items():
        if source not in ledger.by_source:
            unknown += sum(got.values())
    socket_written = sum(sum(c.values()) for s, c in ledger.by_source.items() if s.startswith("tcp:"))
    socket_audited = sum(sum(c.values()) for s, c in audited.items() if s.startswith("tcp:"))
    file_written = ledger.lines - socket_written

    # Incidents, counted by occurrences: an incident stays open while its
    # deployment is broken, so a later episode of the same failure is another
    # occurrence of it (a revision whose `occurrences` grew, at its
    # `last_seen`), not another incident. Each occurrence is matched to the
    # episode of its deployment and rule nearest in time (within 15 s).
    revisions = collections.defaultdict(dict)  # incident_id -> revision -> record
    records = collections.Counter()
    with open(os.path.join(root, "incidents.jsonl")) as f:
        for line in f:
            if not line.strip():
                continue
            j = json.loads(line)
            records[j["incident_id"]] += 1
            revisions[j["incident_id"]][j["revision"]] = j
    ids = set(revisions)
    occurrences = []  # (incident_id, deployment, rule, time)
    for iid, by_revision in revisions.items():
        seen = 0
        for rev in sorted(by_revision):
            j = by_revision[rev]
            n = j.get("occurrences", 1)
            while seen < n:
                seen += 1
                at = j["first_seen"] if seen == 1 else j["last_seen"]
                occurrences.append((iid, j["deployment"], j["rule"], parse_time(at)))
    per_episode = collections.defaultdict(list)
    unmatched = []
    for iid, d, rule, t in occurrences:
        best = None
        for i, (ed, erule, et) in enumerate(episodes):
            if ed == d and erule == rule and abs(et - t) < 15:
                if best is None or abs(et - t) < abs(episodes[best][2] - t):
                    best = i
        if best is None:
            unmatched.append((iid, d, rule))
        else:
            per_episode[best].append(iid)
    missed = [episodes[i] for i in range(len(episodes)) if not per_episode[i]]
    doubled_inc = [episodes[i] for i in range(len(episodes)) if len(per_episode[i]) > 1]

    with open(os.path.join(root, "soak.csv"), "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["t_s", "pid", "rss_kb", "cpu_pct", "kills", "lines_written"])
        w.writerows(samples)
    rss = [s[2] for s in samples if s[2]]
    cpu = [s[3] for s in samples if s[3] is not None]

    out = [
        ("seconds", round(duration)), ("kills", counts["kills"]), ("starts", daemon.starts),
        ("final_stop_rc", rc), ("rate_kb_s", args.rate_kb),
        ("lines_written", ledger.lines), ("bytes_written", ledger.bytes),
        ("file_lines_written", file_written), ("audit_lines", audit_lines),
        ("file_lines_lost", file_lost), ("file_lines_doubled", file_doubled),
        ("socket_lines_sent", socket_written), ("socket_lines_audited", socket_audited),
        ("socket_lines_final_run", final_ledger.lines),
        ("socket_lines_lost_final_run", sock_lost_final), ("socket_lines_doubled", sock_doubled),
        ("socket_lines_in_flight_at_kills", max(0, socket_written - socket_audited)),
        ("socket_episode_resends", sum(r.resends for r in deployments["sock-d"])),
        ("audited_unknown", unknown),
        ("rotations_rename", counts["rotations_rc-a"]),
        ("rotations_copytruncate", counts["rotations_ct-b"]),
        ("rotations_kubelet", counts["rotations_kube-c"]),
        ("episodes", len(episodes)),
        ("episodes_target", sum(1 for e in episodes if e[1] == TARGET_RULE)),
        ("incidents_expected", len(episodes)), ("incident_ids", len(ids)),
        ("occurrences", len(occurrences)),
        ("incidents_missed", len(missed)), ("incidents_doubled", len(doubled_inc)),
        ("incidents_unexpected", len(unmatched)),
        ("incident_records", sum(records.values())),
        ("rss_min_mib", round(min(rss) / 1024, 1) if rss else 0),
        ("rss_max_mib", round(max(rss) / 1024, 1) if rss else 0),
        ("cpu_mean_pct", round(sum(cpu) / len(cpu), 1) if cpu else 0),
        ("cpu_max_pct", round(max(cpu), 1) if cpu else 0),
        ("restarts_from_checkpoint", len(rereads)),
        ("reread_bytes_per_restart_mean", round(sum(rereads) / len(rereads)) if rereads else 0),
        ("reread_bytes_per_restart_max", max(rereads) if rereads else 0),
    ]
    for k, v in out:
        print(k, v)
    for source, dg in lost_examples:
        print("lost_example", source, dg)
    for e in missed[:5]:
        print("missed_example", e[0], e[1], round(e[2], 1))
    for e in doubled_inc[:5]:
        print("doubled_example", e[0], e[1], round(e[2], 1))
    for e in unmatched[:5]:
        print("unexpected_example", *e)
    ok = (file_lost == 0 and file_doubled == 0 and sock_doubled == 0 and sock_lost_final == 0
          and unknown == 0 and not missed and not doubled_inc and not unmatched and rc == 0
          and counts["kills"] == args.kills)
    print("verdict", "PASS" if ok else "FAIL")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
