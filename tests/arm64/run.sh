#!/usr/bin/env bash
# `make test-arm64`: the arm64 cross build (cmake/aarch64-linux-gnu.cmake) run on this amd64 host
# under qemu-aarch64-static, against the arm64 runtime libraries installed beside the amd64 ones
# (deploy/install-deps.sh arm64). Four parts, each ending with `<part>: N passed, N failed`:
#
#   rules   `fingerprintd rules test rules/`: every rule's embedded tests
#   golden  the golden fixtures replayed (ReplayGoldenTest, GoldenCountsTest, GoldenFixturesTest)
#   corpus  tests/corpus/check_real_logs.sh on the real logs kept outside the repository, as `make
#           check-real-corpus` does; where they are absent (CI's clean clone) it says so and is
#           skipped, not failed
#   units   the unit tests of the parser (tests/parse), the matcher (tests/rules) and the
#           correlator (tests/correlate), every suite of those directories: with them every fast
#           path's seeded oracle test (SimdLiteralSearch, BufferMatcher, PrefixCache,
#           LiteralScanner, BufferFirst, QuietLineTriggers), which on arm64 check the portable
#           tiers (the AVX2 ones are x86-64 only)
#
# Left out, because emulation makes them slow or meaningless rather than because arm64 differs:
# the tests that start the daemon and wait on sockets, files, signals and wall-clock deadlines
# (integration, source, http, sink, pipeline_live, bounds; qemu's slowdown makes their deadlines
# the thing tested), the end-to-end tests against real Prometheus/Alertmanager/Chromium (host
# programs), the soak, and the deploy/config/format checks (architecture-independent text checks
# that `make test` runs). Nothing timed here is a performance figure: it is emulated.
#
#   tests/arm64/run.sh BUILD_DIR [CORPUS_DIR]
# BUILD_DIR: the arm64 build with fingerprintd and fingerprintd_emulated_tests (the test files of
# these parts only: cmake/EmulatedTests.cmake).
set -uo pipefail
cd "$(dirname "$0")/../.."
build=${1:?usage: tests/arm64/run.sh BUILD_DIR [CORPUS_DIR]}
corpus=${2:-../shared/corpus/real}
qemu=qemu-aarch64-static
bin="$build/fingerprintd"
tests="$build/fingerprintd_emulated_tests"
for f in "$bin" "$tests"; do
  if ! file -L "$f" | grep -q 'ARM aarch64'; then
    echo "test-arm64: $f is not an arm64 executable" >&2
    exit 2
  fi
done
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
# Scripts that run the binary themselves get it through qemu, binfmt_misc registered or not.
printf '#!/bin/sh\nexec %s %s "$@"\n' "$qemu" "$(realpath "$bin")" > "$work/fingerprintd"
chmod +x "$work/fingerprintd"
failed_parts=()

# gtest under qemu with a filter; prints the failures and `<part>: N passed, N failed`.
gtest_part() {  # gtest_part PART FILTER
  local part=$1 filter=$2 json="$work/$1.json"
  echo "== $part (under $qemu) =="
  "$qemu" "$tests" --gtest_filter="$filter" --gtest_brief=1 --gtest_output="json:$json" \
    > "$work/$part.log" 2>&1
  local rc=$?
  grep -E '^\[  FAILED  \]|Failure$' "$work/$part.log" | head -40
  python3 - "$part" "$json" <<'PY' || failed_parts+=("$part")
import json, sys
part, path = sys.argv[1:3]
try:
    suites = json.load(open(path))["testsuites"]
except (OSError, ValueError) as e:
    print(f"{part}: no result ({e})")
    sys.exit(1)
tests = [t for s in suites for t in s["testsuite"] if t.get("status") == "RUN"]
skipped = sum(1 for t in tests if t.get("result") == "SKIPPED")
failed = sum(1 for t in tests if t.get("failures"))
passed = len(tests) - failed - skipped
print(f"{part}: {passed} passed, {failed} failed" + (f", {skipped} skipped" if skipped else ""))
sys.exit(1 if failed or not tests else 0)
PY
  [ "$rc" -eq 0 ] || [[ " ${failed_parts[*]} " == *" $part "* ]] || failed_parts+=("$part")
}

# The suites of the test files in these directories: `Suite.*` and, for parameterized ones,
# `*/Suite.*`.
suites_of() {
  grep -hoE '^(TEST|TEST_F|TEST_P|TYPED_TEST)\(\w+' "$@" | sed -E 's/^[A-Z_]+\(//' | sort -u |
    sed -E 's|.*|&.*:*/&.*|' | paste -sd: -
}

echo "== rules: fingerprintd rules test rules (under $qemu) =="
out="$("$work/fingerprintd" rules test rules 2>&1)"
rc=$?
echo "$out" | grep -vE '^(ok|PASS)\b|^[0-9]+ passed, [0-9]+ failed$' | tail -n 20
counts="$(echo "$out" | grep -oE '[0-9]+ passed, [0-9]+ failed' | tail -n 1)"
echo "rules: ${counts:-no count printed}"
[ "$rc" -eq 0 ] && [ -n "$counts" ] || failed_parts+=(rules)

gtest_part golden "$(suites_of tests/integration/replay_golden_test.cc tests/integration/golden_counts_test.cc)"

echo "== corpus: tests/corpus/check_real_logs.sh $corpus (under $qemu) =="
if [ -f "$corpus/MANIFEST.tsv" ]; then
  tests/corpus/check_real_logs.sh "$corpus" "$work/fingerprintd" > "$work/corpus.log" 2>&1
  rc=$?
  grep -v '^ok ' "$work/corpus.log" | sed '$d'
  echo "corpus: $(tail -n 1 "$work/corpus.log")"
  [ "$rc" -eq 0 ] || failed_parts+=(corpus)
else
  echo "corpus: skipped, no real corpus at $corpus (kept outside the repository; CI has none)"
fi

gtest_part units "$(suites_of tests/parse/*.cc tests/rules/*.cc tests/correlate/*.cc)"

if [ ${#failed_parts[@]} -ne 0 ]; then
  echo "test-arm64: failed: ${failed_parts[*]}"
  exit 1
fi
echo "test-arm64: every part passed"
