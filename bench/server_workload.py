"""The driver of the server-shaped workload generators (gen_sglang_log.py, gen_trtllm_log.py).

A generator is an object with a seeded `r` (random.Random), the lines not written yet in `out`
and their size in bytes, newlines included, in `bytes`, and `steady_line()` and `failure(kind)`
that append to them. `generate` writes start-up, then steady lines with a failure (and a new
start-up) about every --failure-every-mb MiB (randomised 0.5x..1.5x) until --size-mb MiB, and
summarises the failures it injected on stderr. Same arguments => byte-identical output.
"""
import argparse
import sys


def parser(doc):
    """The arguments every generator takes; a generator may add its own before parsing."""
    ap = argparse.ArgumentParser(description=doc.split("\n\n")[0])
    ap.add_argument("--size-mb", type=float, default=64, help="output size in MiB (default 64)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--failure-every-mb", type=float, default=16,
                    help="mean MiB between failures (default 16)")
    ap.add_argument("-o", "--output", default="-", help="output file (default stdout)")
    return ap


def generate(gen, start, args, failure_kinds, name):
    """Writes the workload of `gen` (start() writes a start-up) as `args` ask."""
    target = int(args.size_mb * (1 << 20))
    out = sys.stdout.buffer if args.output == "-" else open(args.output, "wb")
    kinds, weights = zip(*failure_kinds)
    injected = {k: 0 for k in kinds}
    written = 0

    def flush():
        nonlocal written
        out.write(("\n".join(gen.out) + "\n").encode("utf-8"))
        written += gen.bytes
        gen.out, gen.bytes = [], 0

    start()
    next_failure = gen.r.uniform(0.5, 1.5) * args.failure_every_mb * (1 << 20)
    while written + gen.bytes < target:
        if written + gen.bytes >= next_failure:
            kind = gen.r.choices(kinds, weights)[0]
            injected[kind] += 1
            gen.failure(kind)
            start()
            next_failure += gen.r.uniform(0.5, 1.5) * args.failure_every_mb * (1 << 20)
        else:
            gen.steady_line()
        if len(gen.out) >= 4096:
            flush()
    if gen.out:
        flush()
    if out is not sys.stdout.buffer:
        out.close()
    total = sum(injected.values())
    print(f"{name}: {written} bytes, {total} failures: " +
          ", ".join(f"{k}={v}" for k, v in injected.items()), file=sys.stderr)
