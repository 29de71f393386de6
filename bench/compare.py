#!/usr/bin/env python3
"""Two or more credlint binaries side by side, alternating, on the rows the cache and the
pre-commit hook care about.

    python3 bench/compare.py [--rounds 10] [--dir /tmp/bench-corpus] [--cold] OLD NEW [...]

On a shared machine a figure measured an hour ago says little about a change: a neighbour's
build can double every time. This runs each row once per binary in turn, round after round, so
that every binary meets the same neighbours, and reports per binary the minimum and the median
of the wall time and of the CPU time (user + system, from wait4). Each binary gets a cache
folder of its own, filled by one run before the timed ones. The rows, on the corpus bench/run.py
writes (DIR/c4000/split, 4,000 files, and DIR/small.yaml, or the tree's first file):

- warm, nothing changed: `check TREE --format json`;
- warm, one file changed before each run: the same, on a copy of the tree whose middle file
  gets a new first comment line before every run (the corpus itself is never written);
- `--pre-commit` with that one changed file, run in the copy;
- one small file: `check FILE --no-cache` (cold) and `check FILE` (warm);
- with `--cold`, also the tree and DIR/c4000/all.yaml linted without the cache
  (`--no-cache --threads T`, T = 1 and 2), with the peak RSS of each run.
"""

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time


def run(argv, cwd=None, env=None):
    """Wall and CPU seconds, and peak RSS in MB, of one run, output discarded."""
    started = time.perf_counter()
    child = subprocess.Popen(argv, cwd=cwd, env=env, stdout=subprocess.DEVNULL,
                             stderr=subprocess.DEVNULL)
    _, _, usage = os.wait4(child.pid, 0)
    return (time.perf_counter() - started, usage.ru_utime + usage.ru_stime,
            usage.ru_maxrss / 1024)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("binaries", nargs="+")
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--dir", default="/tmp/bench-corpus")
    parser.add_argument("--cold", action="store_true",
                        help="also the cold rows: the tree and all.yaml at 1 and 2 threads")
    args = parser.parse_args()
    binaries = [os.path.abspath(b) for b in args.binaries]
    names = [f"{i}:{os.path.basename(b)}" for i, b in enumerate(binaries)]
    tree = os.path.join(args.dir, "c4000", "split")
    if not os.path.isdir(tree):
        sys.exit(f"no corpus in {tree}: run bench/run.py --dir {args.dir} first")
    small = os.path.join(args.dir, "small.yaml")
    if not os.path.isfile(small):
        small = os.path.join(tree, sorted(os.listdir(tree))[0])
    work = tempfile.mkdtemp(prefix="credlint-compare-")
    try:
        copy = os.path.join(work, "tree")
        shutil.copytree(tree, copy)
        changed = sorted(os.listdir(copy))[len(os.listdir(copy)) // 2]
        counter = [0]

        def edit():
            counter[0] += 1
            path = os.path.join(copy, changed)
            with open(path, "rb") as f:
                lines = f.read().split(b"\n")
            if lines[0].startswith(b"# compare "):
                lines = lines[1:]
            with open(path, "wb") as f:
                f.write(b"# compare %d\n" % counter[0] + b"\n".join(lines))

        def env(i, what):
            e = dict(os.environ)
            e["CREDLINT_CACHE_DIR"] = os.path.join(work, f"cache-{i}-{what}")
            return e

        rows = [
            ("warm, nothing changed", "tree", None, lambda b: [b, "check", tree, "--format", "json"], None),
            ("warm, one file changed", "copy", edit, lambda b: [b, "check", copy, "--format", "json"], None),
            ("--pre-commit, one file changed", "copy", edit,
             lambda b: [b, "check", "--pre-commit", changed, "--format", "json"], copy),
            ("small file, cold (--no-cache)", "small", None,
             lambda b: [b, "check", "--no-cache", small, "--format", "json"], None),
            ("small file, warm", "small", None, lambda b: [b, "check", small, "--format", "json"], None),
        ]
        whole = os.path.join(args.dir, "c4000", "all.yaml")
        if args.cold:
            for threads in ["1", "2"]:
                for label, path in [("tree", tree), ("all.yaml", whole)]:
                    rows.append((f"cold {label}, {threads} thread(s)", "none", None,
                                 lambda b, p=path, t=threads: [b, "check", p, "--no-cache",
                                                               "--format", "json",
                                                               "--threads", t], None))
        print(f"{args.rounds} rounds, alternating; load average before: "
              f"{os.getloadavg()[0]:.2f}")
        print("\n| row | binary | wall min ms | wall median ms | CPU min ms | CPU median ms "
              "| peak RSS MB |")
        print("|---|---|---|---|---|---|---|")
        for title, cache, before, argv, cwd in rows:
            # A first run per binary fills its cache (the copy's entries then differ only in the
            # changed file).
            for i, b in enumerate(binaries):
                run(argv(b), cwd=cwd, env=env(i, cache))
            times = {n: [] for n in names}
            for _ in range(args.rounds):
                for i, b in enumerate(binaries):
                    if before:
                        before()
                    times[names[i]].append(run(argv(b), cwd=cwd, env=env(i, cache)))
            for n in names:
                walls = [w * 1000 for w, _, _ in times[n]]
                cpus = [c * 1000 for _, c, _ in times[n]]
                rss = max(r for _, _, r in times[n])
                print(f"| {title} | {n} | {min(walls):.1f} | {statistics.median(walls):.1f} | "
                      f"{min(cpus):.1f} | {statistics.median(cpus):.1f} | {rss:.0f} |")
        print(f"\nload average after: {os.getloadavg()[0]:.2f}")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
