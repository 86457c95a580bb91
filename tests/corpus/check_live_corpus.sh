#!/usr/bin/env bash
# Live equals replay over the reference corpus of real worker logs (kept
# outside this repository; never commit them): each file of MANIFEST.tsv is
# replayed alone (`replay --label deployment=<file's stem>`), then copied into
# a fresh directory tailed by ONE running daemon, each file in a subdirectory
# of its own that names its deployment (`deployment_from`), complete at once
# (written beside, then renamed in). The daemon is watched for the engine's
# last-words wait (60 s of quiet) plus a margin and stopped; each file's
# incidents (last revision per id: id, rule, class, confidence, workers) must
# be replay's. The daemon runs with `correlation: {window: 60s}`, as
# tests/integration/live_equals_replay_test.cc does: a rule's own window (up
# to an hour) would hold a partial incident that long. Prints one line per
# file (FAIL lines with both sides), `N passed, N failed` and the wall time.
#   tests/corpus/check_live_corpus.sh [CORPUS_DIR] [BINARY]
# Run by hand (make check-live-corpus); CI has no corpus.
set -euo pipefail
corpus=${1:-../shared/corpus/real}
bin=${2:-build/fingerprintd}
if [ ! -f "$corpus/MANIFEST.tsv" ]; then
  echo "check_live_corpus: no corpus manifest at $corpus/MANIFEST.tsv" >&2
  exit 2
fi
exec python3 - "$bin" "$corpus" <<'PY'
import concurrent.futures, csv, json, os, re, shutil, signal, subprocess, sys, tempfile, time

binary, corpus = os.path.abspath(sys.argv[1]), sys.argv[2]
# For reproductions: LIVE_WINDOW=rule keeps each rule's own window (then
# LIVE_SETTLE must exceed the longest window that matters), LIVE_FILES=REGEX
# checks only the files it matches.
WINDOW = os.environ.get("LIVE_WINDOW", "60s")
SETTLE = int(os.environ.get("LIVE_SETTLE", 60 + 4 + 6))  # last words + two quiet ticks + margin
started = time.monotonic()
rows = list(csv.DictReader(open(f"{corpus}/MANIFEST.tsv"), delimiter="\t"))
names = [row["file"] for row in rows if re.search(os.environ.get("LIVE_FILES", ""), row["file"])]

def deployment(name):
    return re.sub(r"\.log$", "", name)

def jsonl(text):
    out = []
    for line in text.splitlines():
        if line.startswith("{"):
            out.append(json.loads(line))
    return out

def last_revisions(incidents):
    latest = {}
    for i in incidents:
        latest[i["incident_id"]] = i
    return latest

def key(i):
    w = i["workers"]
    return (i["incident_id"], i["rule"], i["class"], i["confidence"],
            f"{w['affected']}/{w['expected']}", tuple(w["ranks"]), i["identical"])

def shown(keys):
    return "; ".join(f"{k[0]} {k[1]} {k[2]} {k[3]} {k[4]}" for k in sorted(keys)) or "no incident"

def replay(name):
    p = subprocess.run([binary, "replay", "--quiet", "--format", "jsonl", "--label",
                        f"deployment={deployment(name)}", f"{corpus}/{name}"],
                       capture_output=True, timeout=120)
    if p.returncode not in (0, 1):
        return None, f"replay exit {p.returncode}: {p.stderr.decode(errors='replace')[-300:]}"
    return jsonl(p.stdout.decode("utf-8", "replace")), ""

with concurrent.futures.ThreadPoolExecutor(2) as pool:
    replays = dict(zip(names, pool.map(replay, names)))

work = tempfile.mkdtemp(prefix="fingerprintd-live-corpus-")
logs, staged = f"{work}/logs", f"{work}/staged"
os.makedirs(logs)
os.makedirs(staged)
incidents_path = f"{work}/incidents.jsonl"
with open(f"{work}/config.yaml", "w") as config:
    config.write(
        "sources:\n  - type: file\n"
        f"    paths: [{json.dumps(logs + '/*/*.log')}]\n"
        "    start_at: beginning\n"
        f"    deployment_from: {json.dumps('/logs/([^/]+)/[^/]+$')}\n"
        "http: {listen: '127.0.0.1:0'}\n"
        f"incidents: {{path: {json.dumps(incidents_path)}}}\n"
        + ("" if WINDOW == "rule" else f"correlation: {{window: {WINDOW}}}\n"))
err = open(f"{work}/daemon.err", "w")
daemon = subprocess.Popen([binary, "run", "--config", f"{work}/config.yaml"], stderr=err,
                          stdout=subprocess.DEVNULL)
try:
    deadline = time.monotonic() + 30
    while "running" not in open(f"{work}/daemon.err").read():
        if time.monotonic() > deadline or daemon.poll() is not None:
            sys.exit(f"check_live_corpus: the daemon did not start; see {work}/daemon.err")
        time.sleep(0.05)
    for name in names:
        d = deployment(name)
        os.makedirs(f"{staged}/{d}")
        shutil.copyfile(f"{corpus}/{name}", f"{staged}/{d}/{name}")
        os.rename(f"{staged}/{d}", f"{logs}/{d}")
    last_write = time.monotonic()
    time.sleep(max(0, last_write + SETTLE - time.monotonic()))
    daemon.send_signal(signal.SIGTERM)
    code = daemon.wait(timeout=30)
finally:
    if daemon.poll() is None:
        daemon.kill()
text = open(incidents_path).read() if os.path.exists(incidents_path) else ""
live_by_deployment = {}
for i in last_revisions(jsonl(text)).values():
    live_by_deployment.setdefault(i["deployment"], []).append(i)

passed = failed = 0
if code != 0:
    failed += 1
    print(f"FAIL daemon: SIGTERM exit {code}; see {work}/daemon.err")
for name in names:
    incidents, problem = replays[name]
    if incidents is None:
        failed += 1
        print(f"FAIL {name}: {problem}")
        continue
    want = {key(i) for i in last_revisions(incidents).values()}
    got = {key(i) for i in live_by_deployment.pop(deployment(name), [])}
    if want == got:
        passed += 1
        print(f"ok   {name}: {shown(want)}")
    else:
        failed += 1
        print(f"FAIL {name}:\n       replay [{shown(want)}]\n       live   [{shown(got)}]"
              f"\n       only replay [{shown(want - got)}]\n       only live   [{shown(got - want)}]")
for d, extra in sorted(live_by_deployment.items()):
    failed += 1
    print(f"FAIL {d}: live incidents of no corpus file: {shown({key(i) for i in extra})}")
print(f"{passed} passed, {failed} failed")
print(f"wall time {time.monotonic() - started:.0f} s ({len(names)} files, one daemon)")
if failed == 0:
    shutil.rmtree(work)
else:
    print(f"kept {work} (config.yaml, daemon.err, incidents.jsonl)")
sys.exit(1 if failed else 0)
PY
