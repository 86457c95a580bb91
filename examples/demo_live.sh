#!/usr/bin/env bash
# `make demo`, live part: starts `fingerprintd run` on a temporary directory,
# writes the example logs (examples/*/worker.log) into it as the workers
# would (a few lines at a time, with small pauses, both deployments at once),
# prints each incident as the daemon writes it to its JSONL log and the
# matching lines of its /metrics (fingerprintd_worker_failures: one series per
# failed rank, what Prometheus alerts on), then stops everything it started (a trap on exit: no process left behind, the
# directory removed).
#
#   examples/demo_live.sh [BINARY]       # default build/fingerprintd
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
bin=${1:-$root/build/fingerprintd}
chunk=${DEMO_CHUNK_LINES:-12}
pause=${DEMO_PAUSE:-0.05}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/fingerprintd-demo.XXXXXX")
daemon=""

cleanup() {
  if [ -n "$daemon" ] && kill -0 "$daemon" 2>/dev/null; then
    kill -TERM "$daemon" 2>/dev/null || true
    for _ in $(seq 50); do kill -0 "$daemon" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$daemon" 2>/dev/null || true
    wait "$daemon" 2>/dev/null || true
  fi
  rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# One JSON string field of a one-line JSON object ("" when absent).
field() { sed -n "s/.*\"$1\":\"\\([^\"]*\\)\".*/\\1/p" <<<"$2"; }
number() { sed -n "s/.*\"$1\":\\([0-9]*\\).*/\\1/p" <<<"$2"; }

# Prints the incident lines the daemon appended since the last call.
shown=0
show_new_incidents() {
  [ -f "$tmp/incidents.jsonl" ] || return 0
  local n=0 line
  while IFS= read -r line; do
    n=$((n + 1))
    [ $n -le $shown ] && continue
    local workers=${line#*\"workers\":}
    printf '  [%5.1fs] INCIDENT %s  [%s] %s\n' "$(elapsed)" "$(field incident_id "$line")" \
      "$(field severity "$line")" "$(field title "$line")"
    printf '           rule %s (%s), class %s, deployment %s, workers %s/%s, revision %s\n' \
      "$(field rule "$line")" "$(field confidence "$line")" "$(field class "$line")" \
      "$(field deployment "$line")" "$(number affected "$workers")" \
      "$(number expected "$workers")" "$(number revision "$line")"
    show_metrics "$(field deployment "$line")" "$(field rule "$line")"
  done <"$tmp/incidents.jsonl"
  shown=$n
}

# GET on the daemon's HTTP port with bash alone (no curl on a fresh machine).
http_get() {
  local fd
  exec {fd}<>"/dev/tcp/127.0.0.1/$port" || return 1
  printf 'GET %s HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n' "$1" >&$fd
  sed '1,/^\r\{0,1\}$/d' <&$fd
  exec {fd}<&-
}

# The /metrics lines of one deployment's rule: its failed ranks (what
# Prometheus alerts on), its expected workers, its incidents counted.
show_metrics() {
  local deployment=$1 rule=$2
  echo "           GET /metrics:"
  http_get /metrics | grep -E '^fingerprintd_(worker_failures|incident_expected_workers|incidents_total)\{' |
    grep -F "rule=\"$rule\"" | grep -E "deployment=\"$deployment\"|^fingerprintd_incidents_total" |
    grep -v ' 0$' | sed 's/^/             /'
}

start_ns=$(date +%s%N)
elapsed() { awk -v s="$start_ns" -v n="$(date +%s%N)" 'BEGIN { printf "%.1f", (n - s) / 1e9 }'; }

mkdir -p "$tmp/logs"
"$bin" run --deployment-from '/logs/([^/]+)/' --start-at beginning \
  --checkpoint-dir "$tmp/checkpoints" --incidents "$tmp/incidents.jsonl" \
  --http 127.0.0.1:0 "$tmp/logs/*/*.log" 2>"$tmp/daemon.err" &
daemon=$!
for _ in $(seq 100); do
  grep -q running "$tmp/daemon.err" 2>/dev/null && break
  kill -0 "$daemon" 2>/dev/null || { cat "$tmp/daemon.err"; exit 1; }
  sleep 0.1
done
port=$(sed -n 's/.*http: listening on 127\.0\.0\.1:\([0-9]*\).*/\1/p' "$tmp/daemon.err" | head -1)
echo "fingerprintd run (pid $daemon) is tailing $tmp/logs/*/*.log, serving http://127.0.0.1:$port/"
echo "writing the example logs into it:"

# Both deployments' logs, $chunk lines at a time, interleaved, with pauses.
examples=("$root"/examples/*/worker.log)
declare -A offset
for log in "${examples[@]}"; do offset[$log]=1; done
pending=${#examples[@]}
while [ "$pending" -gt 0 ]; do
  pending=0
  for log in "${examples[@]}"; do
    name=$(basename "$(dirname "$log")")
    total=$(wc -l <"$log")
    from=${offset[$log]}
    [ "$from" -gt "$total" ] && continue
    mkdir -p "$tmp/logs/$name"
    sed -n "${from},$((from + chunk - 1))p" "$log" >>"$tmp/logs/$name/worker.log"
    offset[$log]=$((from + chunk))
    pending=1
  done
  sleep "$pause"
  show_new_incidents
done
printf '  [%5.1fs] all lines written\n' "$(elapsed)"

expected=${#examples[@]}
for _ in $(seq 200); do
  show_new_incidents
  [ "$shown" -ge "$expected" ] && break
  kill -0 "$daemon" 2>/dev/null || break
  sleep 0.1
done
kill -TERM "$daemon"
wait "$daemon" || true
daemon=""
echo "SIGTERM: the daemon $(grep -o 'stopped: .*' "$tmp/daemon.err" || echo 'stopped (no summary)')"
if [ "$shown" -lt "$expected" ]; then
  echo "expected $expected incidents, saw $shown; the daemon's log:" >&2
  cat "$tmp/daemon.err" >&2
  exit 1
fi
