#!/usr/bin/env bash
# Replays the reference corpus of real vLLM logs (kept outside this repository;
# never commit them) and checks each gives the classes its README lists.
#   tests/corpus/check_real_logs.sh [CORPUS_DIR] [BINARY]
# Run by hand (make check-real-corpus); CI has no corpus.
set -euo pipefail
corpus=${1:-../shared/corpus/real}
bin=${2:-build/fingerprintd}
if [ ! -d "$corpus" ]; then
  echo "check_real_logs: no corpus at $corpus" >&2
  exit 2
fi
# file prefix -> the exact "rule class confidence" lines replay must print
declare -A expected=(
  [01_]="deepgemm-unknown-sf-transformation hardware_support confirmed"
  [02_]="deepgemm-unknown-recipe hardware_support confirmed"
  [03_]="cutlass-error-internal hardware_support confirmed"
  [04_]="free-memory-below-utilization resource confirmed"
)
failed=0
for prefix in 01_ 02_ 03_ 04_; do
  file=$(ls "$corpus"/"$prefix"*.log 2>/dev/null | head -1)
  if [ -z "$file" ]; then
    echo "MISSING $prefix*.log"
    failed=1
    continue
  fi
  got=$("$bin" replay --quiet --format jsonl "$file" |
        sed -E 's/.*"rule":"([^"]+)","class":"([^"]+)","severity":"[^"]+","confidence":"([^"]+)".*/\1 \2 \3/')
  if [ "$got" == "${expected[$prefix]}" ]; then
    echo "ok   $(basename "$file"): $got"
  else
    echo "FAIL $(basename "$file"): got [$got], want [${expected[$prefix]}]"
    failed=1
  fi
done
exit $failed
