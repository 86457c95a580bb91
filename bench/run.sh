#!/usr/bin/env bash
# Replay throughput benchmark (DESIGN.md §7). See bench/README.md.
#
#   bench/run.sh [--size-mb N] [--runs N] [--seed N] [--with-mtail] [--mtail-mb N]
#                [--profile] [--rebuild] [--clean]
#
# Generates a realistic vLLM TP=4 log (bench/gen_log.py) as plain text and as CRI under
# /tmp/fingerprintd-bench (never in the repository), then for each file: replays it N times with
# `fingerprintd replay --quiet --format jsonl FILE` under /usr/bin/time -v (wall time, max RSS) and
# runs `LC_ALL=C grep -cE <symptom patterns of the pack>`, `wc -l` and `LC_ALL=C grep -cF` of one
# literal (the floor of any line-oriented tool) N times on the same file. Prints the median MB/s
# (MB = 10^6 bytes) with the spread (min-max) and the load average, and writes a Markdown table to
# /tmp/fingerprintd-bench/results.md.
#
#   --size-mb N     size of each generated file in MiB (default 1024; 512 if /tmp is tight)
#   --runs N        repetitions per measurement, median reported (default 3)
#   --with-mtail    apt-get install mtail if missing (Debian has it) and measure an equivalent program
#                   (bench/symptom_patterns.py --mtail) on the first --mtail-mb MiB of the plain file;
#                   MTAIL=/path/to/mtail uses that binary instead, without installing anything
#   --mtail-mb N    size of the mtail slice (default 32; mtail runs at ~2 MB/s)
#   --profile       also sample the replay of the plain file with perf (cpu-clock: wall time by
#                   function, at full size) and run valgrind --tool=callgrind on a 20 MiB plain file
#                   (instructions), printing the top functions of each
#   --rebuild       cmake --build build before measuring (default: build only if the binary is missing)
#   --against OLD   instead of the tools above: the binary and OLD (another fingerprintd) replay the
#                   plain, CRI, SGLang-shaped (bench/gen_sglang_log.py) and TensorRT-LLM-shaped
#                   (bench/gen_trtllm_log.py) logs, alternating run by run on one core (taskset -c 1),
#                   and their median wall times and ratio are printed and written to $WORK/against.md
#   --clean         delete /tmp/fingerprintd-bench and exit
#
# The binary is copied to /tmp/fingerprintd-bench before measuring, so a concurrent rebuild of
# build/ does not change it mid-run. FINGERPRINTD=/path/to/binary overrides build/fingerprintd.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
WORK=/tmp/fingerprintd-bench
SIZE_MB=
RUNS=3
SEED=1
WITH_MTAIL=0
MTAIL_MB=32
PROFILE=0
REBUILD=0
AGAINST=

while [ $# -gt 0 ]; do
  case "$1" in
    --size-mb) SIZE_MB=$2; shift 2 ;;
    --runs) RUNS=$2; shift 2 ;;
    --seed) SEED=$2; shift 2 ;;
    --with-mtail) WITH_MTAIL=1; shift ;;
    --mtail-mb) MTAIL_MB=$2; shift 2 ;;
    --profile) PROFILE=1; shift ;;
    --rebuild) REBUILD=1; shift ;;
    --against) AGAINST=$2; shift 2 ;;
    --clean) rm -rf "$WORK"; echo "removed $WORK"; exit 0 ;;
    -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) echo "run.sh: unknown argument $1" >&2; exit 2 ;;
  esac
done

[ -x /usr/bin/time ] || { echo "run.sh: /usr/bin/time missing (apt-get install time)" >&2; exit 2; }
mkdir -p "$WORK"

# --- size: 1 GiB per file unless /tmp is tight (two files + slack) -------------------------------
avail_mb=$(df -Pm "$WORK" | awk 'NR==2 {print $4}')
if [ -z "$SIZE_MB" ]; then
  SIZE_MB=1024
  if [ "$avail_mb" -lt $((3 * 1024 + 512)) ]; then SIZE_MB=512; fi
fi
if [ "$avail_mb" -lt $((2 * SIZE_MB + 256)) ]; then
  echo "run.sh: only ${avail_mb} MiB free on $WORK; need ~$((2 * SIZE_MB + 256)) MiB for --size-mb $SIZE_MB" >&2
  exit 2
fi

# --- binary ---------------------------------------------------------------------------------------
SRC_BIN=${FINGERPRINTD:-$ROOT/build/fingerprintd}
if [ -z "${FINGERPRINTD:-}" ]; then
  if [ ! -x "$SRC_BIN" ]; then
    echo "== building (make build) =="
    make -C "$ROOT" build
  elif [ "$REBUILD" = 1 ]; then
    echo "== rebuilding (cmake --build build -j2) =="
    cmake --build "$ROOT/build" -j2
  fi
fi
BIN=$WORK/fingerprintd
cp "$SRC_BIN" "$BIN"
build_type=$(sed -n 's/^CMAKE_BUILD_TYPE:STRING=//p' "$ROOT/build/CMakeCache.txt" 2>/dev/null || true)
commit=$(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo unknown)
dirty=$(git -C "$ROOT" status --porcelain -- src include daemon CMakeLists.txt 2>/dev/null | wc -l)
# What the results table says the binary is: build/'s type and HEAD, or only
# the path given (FINGERPRINTD may be any build of any commit).
if [ -n "${FINGERPRINTD:-}" ]; then
  binary_label="$SRC_BIN (FINGERPRINTD)"
else
  binary_label="${build_type:-?} at $commit"
fi

cpu=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1)
ncpu=$(nproc)
echo "== machine: $cpu, $ncpu cores; binary: $SRC_BIN (${build_type:-?}, HEAD $commit, $dirty uncommitted change(s) in src/include/daemon at copy time)"

# --- inputs ---------------------------------------------------------------------------------------
gen() { # format -> path
  local f=$WORK/$1-${SIZE_MB}M-seed$SEED.log
  if [ ! -s "$f" ] || [ "$f" -ot "$ROOT/bench/gen_log.py" ]; then
    echo "== generating $f ==" >&2
    python3 "$ROOT/bench/gen_log.py" --size-mb "$SIZE_MB" --format "$1" --seed "$SEED" -o "$f.tmp" 2> "$f.gen"
    mv "$f.tmp" "$f"
    cat "$f.gen" >&2
  fi
  echo "$f"
}
PLAIN=$(gen plain)
CRI=$(gen cri)

# --- against: two binaries alternating on the same files ------------------------------------------
if [ -n "$AGAINST" ]; then
  [ -x "$AGAINST" ] || { echo "run.sh: --against $AGAINST is not an executable" >&2; exit 2; }
  OLD=$WORK/fingerprintd-against
  cp "$AGAINST" "$OLD"
  server_log() { # name generator [its arguments] -> path
    local f=$WORK/$1-${SIZE_MB}M-seed$SEED.log script=$ROOT/bench/$2
    shift 2
    if [ ! -s "$f" ] || [ "$f" -ot "$script" ]; then
      echo "== generating $f ==" >&2
      python3 "$script" "$@" --size-mb "$SIZE_MB" --seed "$SEED" -o "$f.tmp" 2> "$f.gen"
      mv "$f.tmp" "$f"
      cat "$f.gen" >&2
    fi
    echo "$f"
  }
  SGLANG=$(server_log sglang gen_sglang_log.py)
  TRTLLM=$(server_log trtllm gen_trtllm_log.py)
  OUT=$WORK/against.md
  {
    echo "machine: $cpu, $ncpu cores; new: $binary_label; old: $AGAINST; median of $RUNS alternating runs, taskset -c 1"
    echo
    echo "| input | size | old wall | new wall | new / old | old MB/s | new MB/s |"
    echo "|---|---|---|---|---|---|---|"
  } > "$OUT"
  for input in "plain:$PLAIN" "cri:$CRI" "sglang:$SGLANG" "trtllm:$TRTLLM"; do
    name=${input%%:*}
    f=${input#*:}
    bytes=$(stat -c %s "$f")
    : > "$WORK/against.old"
    : > "$WORK/against.new"
    for _ in $(seq "$RUNS"); do
      for which in old new; do
        bin=$BIN
        [ "$which" = old ] && bin=$OLD
        /usr/bin/time -f %e -o "$WORK/against.time" taskset -c 1 "$bin" replay --quiet --format jsonl \
          "$f" > /dev/null 2>&1
        cat "$WORK/against.time" >> "$WORK/against.$which"
      done
    done
    python3 - "$name" "$bytes" "$WORK/against.old" "$WORK/against.new" >> "$OUT" <<'EOF2'
import statistics, sys
name, size = sys.argv[1], int(sys.argv[2])
old = statistics.median(float(x) for x in open(sys.argv[3]))
new = statistics.median(float(x) for x in open(sys.argv[4]))
print(f"| {name} | {size / 2**20:.0f} MiB | {old:.3f} s | {new:.3f} s | {new / old:.3f} | "
      f"{size / old / 1e6:.0f} | {size / new / 1e6:.0f} |")
EOF2
  done
  cat "$OUT"
  exit 0
fi

ERE=$(python3 "$ROOT/bench/symptom_patterns.py" --ere 2> "$WORK/ere.notes")
cat "$WORK/ere.notes"
printf '%s\n' "$ERE" > "$WORK/symptoms.ere"

RES=$WORK/results.tsv
: > "$RES"

# run <label> <file> <cmd...>: one timed run; appends "label file bytes wall_s maxrss_kb cpu% load1"
run() {
  local label=$1 file=$2; shift 2
  local bytes load t0 t1 tv=$WORK/time.out
  bytes=$(stat -c %s "$file")
  load=$(cut -d' ' -f1 /proc/loadavg)
  t0=$(date +%s%N)
  /usr/bin/time -v -o "$tv" "$@" > "$WORK/$label.out" 2> "$WORK/$label.err" || {
    local rc=$?
    # grep -c exits 1 when nothing matched; anything else is a failure
    if ! { [ "$rc" = 1 ] && [[ $label == grep* ]]; }; then  # grep-* and grepF-*
      echo "run.sh: $label failed (exit $rc):" >&2; cat "$WORK/$label.err" >&2; exit 1
    fi
  }
  t1=$(date +%s%N)
  local rss cpup
  rss=$(sed -n 's/.*Maximum resident set size (kbytes): //p' "$tv")
  cpup=$(sed -n 's/.*Percent of CPU this job got: //p' "$tv")
  local wall
  wall=$(awk -v a="$t0" -v b="$t1" 'BEGIN {printf "%.3f", (b - a) / 1e9}')
  printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$label" "$file" "$bytes" "$wall" "$rss" "$cpup" "$load" >> "$RES"
  printf '  %-16s %8.3f s  %8.1f MB/s  maxrss %7s KiB  cpu %5s  load %s\n' "$label" "$wall" \
    "$(awk -v b="$bytes" -v w="$wall" 'BEGIN {print b / w / 1e6}')" "$rss" "$cpup" "$load"
}

for fmt in plain cri; do
  f=$PLAIN; [ "$fmt" = cri ] && f=$CRI
  echo "== $fmt: $f ($(stat -c %s "$f") bytes); load: $(cut -d' ' -f1-3 /proc/loadavg) =="
  cat "$f" > /dev/null # page cache
  # one untimed replay for the summary line (lines, bytes, incidents) and the incidents
  "$BIN" replay --format jsonl "$f" > "$WORK/$fmt.jsonl" 2> "$WORK/$fmt.summary"
  echo "  summary: $(cat "$WORK/$fmt.summary")"
  python3 - "$WORK/$fmt.jsonl" <<'EOF'
import collections, json, sys
c = collections.Counter(json.loads(l)["rule"] for l in open(sys.argv[1]))
print("  incidents: " + ", ".join(f"{k}={v}" for k, v in sorted(c.items())))
EOF
  for _ in $(seq "$RUNS"); do
    run "fingerprintd-$fmt" "$f" "$BIN" replay --quiet --format jsonl "$f"
  done
  for _ in $(seq "$RUNS"); do
    run "grep-$fmt" "$f" env LC_ALL=C grep -cE "$ERE" "$f"
  done
  for _ in $(seq "$RUNS"); do
    run "wc-$fmt" "$f" wc -l "$f"
  done
  for _ in $(seq "$RUNS"); do
    run "grepF-$fmt" "$f" env LC_ALL=C grep -cF "Unknown SF transformation" "$f"
  done
  echo "  grep -c: $(cat "$WORK/grep-$fmt.out") matching lines"
done

# --- mtail (optional) -----------------------------------------------------------------------------
if [ "$WITH_MTAIL" = 1 ] || [ -n "${MTAIL:-}" ]; then
  M=${MTAIL:-$(command -v mtail || true)}
  if [ -z "$M" ]; then
    echo "== installing mtail (apt-get) =="
    if [ "$(id -u)" = 0 ]; then apt-get install -y mtail; else sudo apt-get install -y mtail; fi
    M=$(command -v mtail)
  fi
  mkdir -p "$WORK/mtail-progs"
  python3 "$ROOT/bench/symptom_patterns.py" --mtail > "$WORK/mtail-progs/symptoms.mtail" 2> /dev/null
  slice=$WORK/plain-${MTAIL_MB}M-slice.log
  head -c $((MTAIL_MB * 1024 * 1024)) "$PLAIN" | sed '$d' > "$slice" # drop the cut last line
  echo "== mtail ($M) on $slice ($(stat -c %s "$slice") bytes) =="
  run "mtail-plain" "$slice" "$M" --one_shot --one_shot_format prometheus --logtostderr \
    --address 127.0.0.1 --port 0 --progs "$WORK/mtail-progs" --logs "$slice"
  grep -v '^#' "$WORK/mtail-plain.out" | sed 's/^/  /'
  run "fingerprintd-slice" "$slice" "$BIN" replay --quiet --format jsonl "$slice"
fi

# --- summary --------------------------------------------------------------------------------------
python3 - "$RES" "$WORK/results.md" "$cpu" "$ncpu" "$binary_label" <<'EOF'
import collections, statistics, sys
res, out, cpu, ncpu, binary = sys.argv[1:6]
rows = collections.defaultdict(list)
for l in open(res):
    label, f, b, wall, rss, cpup, load = l.rstrip("\n").split("\t")
    rows[label].append((int(b), float(wall), int(rss), cpup, float(load)))
def med(label):
    r = rows[label]
    mbs = statistics.median(b / w / 1e6 for b, w, *_ in r)
    return mbs, max(x[2] for x in r), r[0][0], [x[4] for x in r], statistics.median(x[1] for x in r), r[0][3]
def spread(label):
    v = [b / w / 1e6 for b, w, *_ in rows[label]]
    return f"{min(v):.0f}-{max(v):.0f}"
lines = [f"machine: {cpu}, {ncpu} cores; fingerprintd {binary}; median of {len(rows['fingerprintd-plain'])} runs; MB = 10^6 bytes", "",
         "| input | size | fingerprintd MB/s (min-max) | wall (median) | max RSS | CPU | wc -l MB/s | grep -cF MB/s | grep -cE MB/s | fingerprintd / grep -cE | target 2000 MB/s | load1 during runs |",
         "|---|---|---|---|---|---|---|---|---|---|---|---|"]
for fmt in ("plain", "cri"):
    fb, rss, size, loads, wall, cpup = med(f"fingerprintd-{fmt}")
    gb, grss, _, gloads, _, _ = med(f"grep-{fmt}")
    wb, *_ = med(f"wc-{fmt}")
    fgb, *_ = med(f"grepF-{fmt}")
    all_loads = loads + gloads
    lines.append(f"| {fmt} | {size / 2**20:.0f} MiB | {fb:.0f} ({spread(f'fingerprintd-{fmt}')}) | {wall:.2f} s | {rss / 1024:.1f} MiB | {cpup} |"
                 f" {wb:.0f} | {fgb:.0f} | {gb:.0f} | {fb / gb:.2f}x | {fb / 2000:.0%} of target |"
                 f" {min(all_loads):.2f}-{max(all_loads):.2f} |")
if "mtail-plain" in rows:
    mb, mrss, msize, *_ = med("mtail-plain")
    fb, *_ = med("fingerprintd-slice")
    lines += ["", f"mtail on a {msize / 2**20:.0f} MiB plain slice: {mb:.1f} MB/s (max RSS {mrss / 1024:.1f} MiB, 1 run); "
              f"fingerprintd on the same slice: {fb:.0f} MB/s = {fb / mb:.0f}x mtail (target >= 50x)"]
text = "\n".join(lines) + "\n"
open(out, "w").write(text)
print("\n" + text)
EOF
echo "(results: $WORK/results.md, raw: $RES)"

# --- profile (optional) ---------------------------------------------------------------------------
if [ "$PROFILE" = 1 ]; then
  # Wall time by function on the measured plain file itself, sampling the
  # cpu-clock software event (no hardware counters needed). Costs that grow
  # with a log's length (state visited per tick, per line or per read buffer)
  # show at full size only, not in the small file below.
  if command -v perf > /dev/null; then
    echo "== perf record -e cpu-clock on $PLAIN (top 20, self time) =="
    if perf record -e cpu-clock -F 5000 -o "$WORK/perf-full.data" \
      "$BIN" replay --quiet --format jsonl "$PLAIN" > /dev/null 2> "$WORK/perf-full.log"; then
      perf report -i "$WORK/perf-full.data" --no-children --sort symbol --stdio 2> /dev/null |
        grep -v '^#' | grep '%' | head -20 | cut -c1-140
    else
      echo "  perf record failed: $(tail -1 "$WORK/perf-full.log")"
    fi
  fi
  command -v valgrind > /dev/null || { echo "run.sh: valgrind missing" >&2; exit 2; }
  small=$WORK/plain-20M-seed$SEED.log
  [ -s "$small" ] || python3 "$ROOT/bench/gen_log.py" --size-mb 20 --seed "$SEED" -o "$small" 2> /dev/null
  if perf stat -e instructions true > /dev/null 2> "$WORK/perf.check" && ! grep -q 'not supported' "$WORK/perf.check"; then
    echo "== perf record on $small =="
    perf record -g -o "$WORK/perf.data" "$BIN" replay --quiet --format jsonl "$small" > /dev/null
    perf report -i "$WORK/perf.data" --no-children --stdio 2> /dev/null | grep -v '^#' | grep '%' | head -15
  else
    echo "== perf has no hardware counters here; valgrind --tool=callgrind on $small =="
    valgrind --tool=callgrind --callgrind-out-file="$WORK/callgrind.out" \
      "$BIN" replay --quiet --format jsonl "$small" > /dev/null 2> "$WORK/callgrind.log"
    callgrind_annotate --inclusive=no "$WORK/callgrind.out" 2> /dev/null | sed -n '1,40p' | cut -c1-220
    echo "-- inclusive --"
    callgrind_annotate --inclusive=yes "$WORK/callgrind.out" 2> /dev/null | sed -n '1,45p' | cut -c1-220
  fi
fi
