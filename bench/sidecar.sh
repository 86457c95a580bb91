#!/usr/bin/env bash
# The sidecar's cost against DESIGN.md §7 (a benchmark, not a timed test):
#   1. RSS and CPU of `fingerprintd run` tailing one file written at 10 MB/s;
#   2. idle CPU (and RSS) with 1,000 quiet files: must be inotify, not polling;
#   3. latency from the last expected worker's traceback line being written to
#      its incident line in the JSONL file, p50/p99/max over 100 episodes, with
#      one file per pod (both ranks in one file) and one file per worker.
#      The same episodes on GET /metrics: the line counted by
#      fingerprintd_rule_matches_total, and the incident by fingerprintd_incidents_total.
# Targets: RSS <= 32 MB, idle CPU <= 0.1% of a core, latency p99 <= 500 ms to
# the JSONL and <= 100 ms to /metrics (issue 11).
#
#   bench/sidecar.sh                 # all three (about 2 minutes)
#   bench/sidecar.sh latency idle    # some of them
#   BIN=build-x/fingerprintd RATE_MB=10 SECONDS_=30 FILES=1000 EPISODES=100 bench/sidecar.sh
#   GAP=0.02 SHAPES=worker bench/sidecar.sh latency   # the last line 20 ms after the rest
#
# Scratch files go to /tmp/fingerprintd-sidecar (deleted at the end unless
# KEEP=1). The binary is copied there first, so a concurrent rebuild cannot
# swap it mid-run. Every daemon it starts is stopped on exit, even on Ctrl-C.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
BIN=${BIN:-$root/build/fingerprintd}
DIR=${DIR:-/tmp/fingerprintd-sidecar}
RATE_MB=${RATE_MB:-10}
SECONDS_=${SECONDS_:-30}
FILES=${FILES:-1000}
EPISODES=${EPISODES:-100}
GAP=${GAP:-0.2}
SHAPES=${SHAPES:-pod worker}
parts=("$@")
[ ${#parts[@]} -eq 0 ] && parts=(throughput idle latency)

if [ ! -x "$BIN" ]; then
  echo "sidecar.sh: no $BIN (make build, or BIN=path)" >&2
  exit 2
fi
mkdir -p "$DIR"
cp "$BIN" "$DIR/fingerprintd"

cleanup() {
  # sidecar.py stops its daemons (SIGTERM, then SIGKILL) and they die with it
  # (PR_SET_PDEATHSIG); this only stops our own children on an interrupted run.
  pkill -TERM -P $$ 2>/dev/null || true
  wait 2>/dev/null || true
  [ "${KEEP:-0}" = 1 ] || rm -rf "$DIR"
}
trap cleanup EXIT INT TERM

py() { python3 "$here/sidecar.py" "$1" --binary "$DIR/fingerprintd" --dir "$DIR" "${@:2}"; }
out="$DIR/results.txt"
: > "$out"
echo "$("$DIR/fingerprintd" version 2>/dev/null | head -1), $(nproc) cores," \
  "load $(cut -d' ' -f1-3 /proc/loadavg)"

for part in "${parts[@]}"; do
  case $part in
    throughput)
      size_mb=$(awk -v r="$RATE_MB" -v s="$SECONDS_" 'BEGIN { printf "%d", r * s / 1.048576 + 8 }')
      echo "== throughput: one file at $RATE_MB MB/s for ${SECONDS_}s (gen_log.py --size-mb $size_mb)"
      python3 "$here/gen_log.py" --size-mb "$size_mb" --format plain --seed 7 \
        -o "$DIR/input.log" 2>/dev/null
      py throughput --input "$DIR/input.log" --rate-mb "$RATE_MB" --seconds "$SECONDS_" | tee -a "$out"
      rm -f "$DIR/input.log"
      ;;
    idle)
      echo "== idle: $FILES quiet files, CPU over ${SECONDS_}s"
      py idle --files "$FILES" --seconds "$SECONDS_" | tee -a "$out"
      ;;
    latency)
      for shape in $SHAPES; do
        echo "== latency: $EPISODES TP=2 episodes, one file per $shape, last worker's" \
          "exception line ${GAP}s after the rest -> JSONL incident"
        py latency --golden "$root/tests/golden/vllm_tp2_unknown_sf.log" --episodes "$EPISODES" \
          --shape "$shape" --gap "$GAP" | tee -a "$out"
      done
      ;;
    *)
      echo "sidecar.sh: unknown part $part (throughput, idle, latency)" >&2
      exit 2
      ;;
  esac
done

val() { awk -v k="$1" '$1 == k { print $2 }' "$out"; }
verdict() {  # value target unit lower-is-better
  awk -v v="$1" -v t="$2" -v u="$3" 'BEGIN {
    if (v == "") { print "-"; exit }
    if (v <= t) printf "met (%s%s <= %s%s)\n", v, u, t, u;
    else printf "MISSED by %.2fx (%s%s > %s%s)\n", v / t, v, u, t, u }'
}
echo "== against DESIGN.md §7"
if [ -n "$(val throughput_hwm_mib)" ]; then
  echo "RSS tailing ${RATE_MB} MB/s: $(verdict "$(val throughput_hwm_mib)" 30.5 ' MiB')" \
    "(32 MB = 30.5 MiB); CPU $(val throughput_cpu_pct)% of a core;" \
    "read every byte: $([ "$(val throughput_bytes_ok)" = 1 ] && echo yes || echo NO);" \
    "incidents live/replay $(val throughput_incidents_live)/$(val throughput_incidents_replay)," \
    "live but not in replay: $(val throughput_incidents_live_not_in_replay)"
fi
if [ -n "$(val idle_cpu_pct)" ]; then
  echo "idle CPU, $FILES files: $(verdict "$(val idle_cpu_pct)" 0.1 '%'); RSS $(val idle_rss_mib) MiB"
fi
for shape in pod worker; do
  lat=latency met=metrics
  [ "$shape" = worker ] && lat=latency_worker met=metrics_worker
  [ -n "$(val ${lat}_p99_ms)" ] || continue
  echo "latency, one file per $shape, p99: $(verdict "$(val ${lat}_p99_ms)" 500 ' ms');" \
    "p50 $(val ${lat}_p50_ms) ms, max $(val ${lat}_max_ms) ms;" \
    "after 12 s of silence: max $(val ${lat}_after_quiet_max_ms) ms" \
    "over $(val ${lat}_after_quiet_episodes) episodes"
  echo "GET /metrics ($shape), line matched -> counted: p99" \
    "$(verdict "$(val ${met}_match_p99_ms)" 100 ' ms'); p50 $(val ${met}_match_p50_ms) ms"
  echo "GET /metrics ($shape), last worker's line -> incident counted: p99" \
    "$(verdict "$(val ${met}_incident_p99_ms)" 100 ' ms'); p50 $(val ${met}_incident_p50_ms) ms"
done
