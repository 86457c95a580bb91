#!/usr/bin/env bash
# The soak (issue 13): `fingerprintd run` SIGKILLed at seeded random moments and restarted while
# a writer logs four deployments through rename+create, copytruncate and kubelet (gzip) rotation
# and TCP clients; then, line by line, what was written against what the daemon committed
# (`run --audit`, sink/audit_log.h), and the incidents against the injected episodes.
# bench/soak.py has the accounting; bench/README.md "Soak (issue 13)" the results.
#
#   bench/soak.sh DURATION_SECONDS [KILLS]         # e.g. bench/soak.sh 660 24
#   BIN=build-x/fingerprintd RATE_KB=256 SEED=13 DIR=/tmp/x bench/soak.sh 20 3
#
# Prints `key value` lines and a verdict; exit 1 when a line or incident was lost or doubled.
# Scratch files go to $DIR (default /tmp/fingerprintd-soak; kept: audit.txt, incidents.jsonl,
# daemon.log, soak.csv with RSS and CPU once a second). The binary is copied there first, so a
# concurrent rebuild cannot swap it mid-run.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
BIN=${BIN:-$root/build/fingerprintd}
DIR=${DIR:-/tmp/fingerprintd-soak}
RATE_KB=${RATE_KB:-256}
SEED=${SEED:-13}
duration=${1:?usage: bench/soak.sh DURATION_SECONDS [KILLS]}
kills=${2:-20}

if [ ! -x "$BIN" ]; then
  echo "soak.sh: no $BIN (make build, or BIN=path)" >&2
  exit 2
fi
mkdir -p "$DIR"
cp "$BIN" "$DIR/fingerprintd"
echo "$("$DIR/fingerprintd" version 2>/dev/null | head -1), $(nproc) cores," \
  "load $(cut -d' ' -f1-3 /proc/loadavg)"
exec python3 "$here/soak.py" --binary "$DIR/fingerprintd" --dir "$DIR" --root "$root" \
  --seconds "$duration" --kills "$kills" --seed "$SEED" --rate-kb "$RATE_KB" ${SOAK_ARGS:-}
