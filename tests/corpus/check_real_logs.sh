#!/usr/bin/env bash
# Replays the reference corpus of real worker logs (kept outside this
# repository; never commit them) and checks each file against its
# MANIFEST.tsv row (the corpus README says what a row requires):
#   healthy            no incident of severity error or critical
#   any other class    at least one incident of that class
#   target yes / no    the target rule reported / never reported as confirmed
# Files 01-04 (full logs of one setup) must also give exactly their one
# incident. Prints one line per file and `N passed, N failed`.
#   tests/corpus/check_real_logs.sh [CORPUS_DIR] [BINARY]
# RULES=DIR replays with `--rules DIR` instead of the binary's embedded pack
# (to try a rule change without rebuilding).
# Run by hand (make check-real-corpus); CI has no corpus.
set -euo pipefail
corpus=${1:-../shared/corpus/real}
bin=${2:-build/fingerprintd}
if [ ! -f "$corpus/MANIFEST.tsv" ]; then
  echo "check_real_logs: no corpus manifest at $corpus/MANIFEST.tsv" >&2
  exit 2
fi
exec python3 - "$bin" "$corpus" "${RULES:-}" <<'PY'
import csv, json, subprocess, sys

binary, corpus, rules = sys.argv[1:4]
rules_args = ["--rules", rules] if rules else []
target = "deepgemm-unknown-sf-transformation"
# file prefix -> the exact "rule class confidence" lines replay must print
exact = {
    "01_": ["deepgemm-unknown-sf-transformation hardware_support confirmed"],
    "02_": ["deepgemm-unknown-recipe hardware_support confirmed"],
    "03_": ["cutlass-error-internal hardware_support confirmed"],
    "04_": ["free-memory-below-utilization resource confirmed"],
}
rows = list(csv.DictReader(open(f"{corpus}/MANIFEST.tsv"), delimiter="\t"))
passed = failed = 0
for row in rows:
    name = row["file"]
    p = subprocess.run([binary, "replay", "--quiet", "--format", "jsonl", *rules_args, f"{corpus}/{name}"],
                       capture_output=True, timeout=60)
    incidents = [json.loads(l) for l in p.stdout.decode("utf-8", "replace").splitlines()
                 if l.startswith("{")]
    got = [f"{i['rule']} {i['class']} {i['confidence']}" for i in incidents]
    why = []
    if p.returncode not in (0, 1):
        why.append(f"exit {p.returncode}")
    if row["expected_class"] == "healthy":
        loud = [g for g, i in zip(got, incidents) if i["severity"] in ("error", "critical")]
        if loud:
            why.append("healthy log gave " + "; ".join(loud))
    elif row["expected_class"] not in {i["class"] for i in incidents}:
        why.append(f"no {row['expected_class']} incident")
    confirmed = any(i["rule"] == target and i["confidence"] == "confirmed" for i in incidents)
    if row["target"] == "yes" and target not in {i["rule"] for i in incidents}:
        why.append("target not reported")
    if row["target"] != "yes" and confirmed:
        why.append("target confirmed on a sibling")
    want = exact.get(name[:3])
    if want is not None and sorted(got) != sorted(want):
        why.append(f"want exactly {want}")
    shown = "; ".join(got) if got else "no incident"
    if why:
        failed += 1
        print(f"FAIL {name}: got [{shown}]: {', '.join(why)}")
    else:
        passed += 1
        print(f"ok   {name}: {shown}")
print(f"{passed} passed, {failed} failed")
sys.exit(1 if failed else 0)
PY
