#!/usr/bin/env python3
"""Worst case for buffer-first replay (issue 15): every line is a candidate.

Every line carries a process prefix and an INFO header and holds one of the
pack's atoms, so the whole-buffer search finds something on every line, no
line can be skipped, and every line takes the parser and the engine's scan.
Deterministic for a given --seed and --size-mb.

    bench/gen_worst_case.py --size-mb 4 -o /tmp/worst4.log
"""
import argparse
import random
import sys

TEXTS = [
    "RuntimeError: Assertion error (layout.hpp:60): Unknown SF transformation seen in a warm-up log line",
    "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB while profiling",
    "Using DeepGEMM kernels for fp8 block-scaled matmul on this device",
    "CUDA error: no kernel image is available for execution on the device",
]
PREFIXES = [
    "\x1b[0;36m(Worker_TP0 pid=101)\x1b[0;0m ",
    "\x1b[0;36m(Worker_TP1 pid=102)\x1b[0;0m ",
    "\x1b[0;36m(EngineCore_DP0 pid=100)\x1b[0;0m ",
    "\x1b[0;36m(APIServer pid=1)\x1b[0;0m ",
]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size-mb", type=float, default=4)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("-o", "--output", default="-")
    args = parser.parse_args()
    rng = random.Random(args.seed)
    limit = int(args.size_mb * (1 << 20))
    out = sys.stdout if args.output == "-" else open(args.output, "w", encoding="utf-8", newline="\n")
    written = lines = 0
    second = 0
    while written < limit:
        second += rng.random() < 0.01
        time = "03-04 10:%02d:%02d" % ((second // 60) % 60, second % 60)
        line = "%sINFO %s [file.py:%d] %s\n" % (
            rng.choice(PREFIXES), time, rng.randrange(1, 999), rng.choice(TEXTS))
        out.write(line)
        written += len(line.encode())
        lines += 1
    if out is not sys.stdout:
        out.close()
    print("gen_worst_case: %d bytes, %d lines, seed=%d" % (written, lines, args.seed), file=sys.stderr)


if __name__ == "__main__":
    main()
