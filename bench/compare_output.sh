#!/usr/bin/env bash
# Do two fingerprintd binaries give the same replay output? For a change that
# must not change behaviour (a refactor, a fast path): every input is replayed
# by both with the same arguments, `--format jsonl`, and their stdout (the
# incidents) and stderr (the summary; its wall time and progress lines left
# out) are compared byte for byte.
#
#   bench/compare_output.sh BIN_A BIN_B
#
# Inputs: examples/ (as `make demo` replays it), each file or directory of
# tests/golden/, each log of $CORPUS (default ../shared/corpus/real, skipped
# when absent), and every *.log of $BENCH_DIR (default /tmp/fingerprintd-bench:
# bench/run.sh's plain and CRI logs, and with --against its SGLang-shaped
# (bench/gen_sglang_log.py) and TensorRT-LLM-shaped (bench/gen_trtllm_log.py)
# ones; any other log put there is replayed too). Prints one line per input that differs and `N identical, N different`;
# exits 1 when any differs, 2 on bad arguments.
set -euo pipefail

if [[ $# -ne 2 || ! -x $1 || ! -x $2 ]]; then
  echo "usage: $0 BIN_A BIN_B (two fingerprintd executables)" >&2
  exit 2
fi
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BIN_A=$(realpath "$1")
BIN_B=$(realpath "$2")
CORPUS=${CORPUS:-$ROOT/../shared/corpus/real}
BENCH_DIR=${BENCH_DIR:-/tmp/fingerprintd-bench}
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT

identical=0
different=0

# replay_with BIN OUT ARGS...: stdout to OUT.out, stderr (wall time removed) to OUT.err.
replay_with() {
  local bin=$1 out=$2
  shift 2
  local rc=0
  "$bin" replay --format jsonl "$@" >"$out.out" 2>"$out.err" || rc=$?
  # The wall time and the progress lines of a long input differ from run to run.
  sed -i -E -e 's/ in [0-9.e+-]+ s;/ in - s;/' -e '/ MB\/s\), reading /d' "$out.err"
  echo "exit $rc" >>"$out.err"
}

# compare NAME ARGS...: replays ARGS with both binaries and compares.
compare() {
  local name=$1
  shift
  replay_with "$BIN_A" "$WORK/a" "$@"
  replay_with "$BIN_B" "$WORK/b" "$@"
  if cmp -s "$WORK/a.out" "$WORK/b.out" && cmp -s "$WORK/a.err" "$WORK/b.err"; then
    identical=$((identical + 1))
  else
    different=$((different + 1))
    echo "DIFFERENT $name"
    diff <(cat "$WORK/a.out" "$WORK/a.err") <(cat "$WORK/b.out" "$WORK/b.err") | head -5 || true
  fi
}

cd "$ROOT"
compare "examples/" --deployment-from '^examples/([^/]+)/' examples/*/
for input in tests/golden/*; do
  [[ $input == */README.md || $input == */tools ]] && continue
  compare "$input" "$input"
done
if [[ -d $CORPUS ]]; then
  for log in "$CORPUS"/*.log; do compare "corpus/$(basename "$log")" --label deployment=corpus "$log"; done
else
  echo "($CORPUS absent: the real corpus is skipped)"
fi
found_bench=0
for log in "$BENCH_DIR"/*.log; do
  [[ -f $log ]] || continue
  found_bench=1
  compare "bench/$(basename "$log")" "$log"
done
[[ $found_bench == 1 ]] || echo "($BENCH_DIR has no bench log: run bench/run.sh first)"

echo "$identical identical, $different different"
[[ $different == 0 ]]
