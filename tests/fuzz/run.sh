#!/usr/bin/env bash
# Runs the libFuzzer targets built in BUILD (tests/fuzz/*_fuzz.cc), each for
# SECONDS, one after the other, from its seeds (the fixtures) and its corpus
# of earlier runs (BUILD/corpora/NAME). Prints one line of figures per target;
# a crash, leak, timeout or failed invariant stops with the target's log and
# the input saved in BUILD/artifacts.
#   tests/fuzz/run.sh BUILD SECONDS [NAME...]     (default: every target)
set -euo pipefail
cd "$(dirname "$0")/../.."
build=$1 seconds=$2
shift 2
names=("$@")
if [ ${#names[@]} -eq 0 ]; then
  names=(pipeline envelope prefix_header traceback rules config checkpoint state socket_framing http)
fi

# Seeds: directories (read recursively), a dictionary, the longest input.
seeds() {
  case $1 in
    pipeline | envelope | traceback) echo "tests/golden examples" ;;
    prefix_header) echo "$build/seeds/lines" ;;
    rules) echo "rules" ;;
    config | checkpoint | state | http) echo "tests/fuzz/seeds/$1" ;;
    socket_framing) echo "tests/fuzz/seeds/socket_framing tests/golden/docker" ;;
  esac
}
dict() {
  case $1 in
    http) echo "-dict=tests/fuzz/http.dict" ;;
    checkpoint | state | socket_framing) echo "-dict=tests/fuzz/json.dict" ;;
  esac
}
max_len() {
  case $1 in
    rules) echo 16384 ;;
    checkpoint | state) echo 32768 ;;
    *) echo 4096 ;;
  esac
}

# One seed per distinct log line of the fixtures, for the prefix and header parser.
if [ ! -d "$build/seeds/lines" ]; then
  mkdir -p "$build/seeds/lines"
  cat tests/golden/*.log tests/golden/*/*.log examples/*/*.log 2>/dev/null |
    sed 's/^[0-9TZ:.+-]* std[a-z]* [FP] //' | sort -u | head -3000 |
    awk -v dir="$build/seeds/lines" '{ f = sprintf("%s/%05d", dir, NR); printf "%s", $0 > f; close(f) }'
fi

mkdir -p "$build/artifacts" "$build/logs"
for name in "${names[@]}"; do
  corpus=$build/corpora/$name log=$build/logs/$name.log
  mkdir -p "$corpus"
  # Inputs that once failed (tests/fuzz/regressions/NAME) run first with the seeds.
  regressions=""
  [ -d "tests/fuzz/regressions/$name" ] && regressions="tests/fuzz/regressions/$name"
  # shellcheck disable=SC2046
  if ! "$build/fingerprintd_${name}_fuzz" -max_total_time="$seconds" -max_len="$(max_len "$name")" \
      -timeout=25 -rss_limit_mb=2048 -print_final_stats=1 -artifact_prefix="$build/artifacts/$name-" \
      $(dict "$name") "$corpus" $(seeds "$name") $regressions >"$log" 2>&1; then
    tail -n 60 "$log"
    echo "fuzz $name: FAILED (input in $build/artifacts/, log $log)"
    exit 1
  fi
  runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log")
  cov=$(grep -o 'cov: [0-9]*' "$log" | tail -1 | cut -d' ' -f2)
  ft=$(grep -o 'ft: [0-9]*' "$log" | tail -1 | cut -d' ' -f2)
  echo "fuzz $name: ${seconds}s, ${runs:-?} runs, 0 crashes, cov ${cov:-?}, ft ${ft:-?}," \
    "corpus $(find "$corpus" -type f | wc -l) files"
done
