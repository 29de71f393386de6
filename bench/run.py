#!/usr/bin/env python3
"""credlint's benchmark: whole runs of the release binary, timed from outside.

    python3 bench/run.py [--runs 5] [--sizes 1000,4000] [--dir DIR]

Builds the release binary and the corpus generator, writes a corpus per size (one file per
owner in split/, everything in all.yaml), and for each size, layout and thread count (1, 2)
runs `credlint check --format json --threads T --timings` several times. It reports medians of
wall time, MB/s, documents/s, peak RSS (of that child alone, from wait4), and from the same runs
the time spent reading and in the YAML parse alone, against the rest. Then: one 10-object file
as a pre-commit hook sees it (process start included), how time grows from 1,000 to 4,000
bundles, and what a diagnostic near the end of the largest file costs to render. It prints
markdown tables and checks the figures against issue 6's targets.

Timings on a shared machine are noisy: run it on an idle one and read the medians.
"""

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BIN = os.path.join(ROOT, "target", "release", "credlint")
EXAMPLES = os.path.join(ROOT, "target", "release", "examples")
TIMINGS = re.compile(
    r"wall ([\d.]+); read ([\d.]+), YAML parse ([\d.]+), rules ([\d.]+) .*; bundles ([\d.]+)"
)


def build():
    subprocess.run(["cargo", "build", "--release", "--quiet", "--bin", "credlint", "--examples"],
                   cwd=ROOT, check=True)


def timed(args, runs):
    walls, rss, read, parse, rules, bundles = [], [], [], [], [], []
    summary = None
    for _ in range(runs):
        with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
            # posix_spawn (vfork and exec), not fork: forking this Python process would add
            # its own milliseconds to a 10 ms run.
            actions = [(os.POSIX_SPAWN_DUP2, out.fileno(), 1), (os.POSIX_SPAWN_DUP2, err.fileno(), 2)]
            started = time.perf_counter()
            pid = os.posix_spawn(BIN, [BIN] + args + ["--timings"], os.environ, file_actions=actions)
            _, status, usage = os.wait4(pid, 0)
            walls.append(time.perf_counter() - started)
            rss.append(usage.ru_maxrss / 1024)
            out.seek(0)
            err.seek(0)
            text = err.read().decode()
            m = TIMINGS.search(text)
            if not m:
                sys.exit(f"no timings from credlint {' '.join(args)}: {text}")
            read.append(float(m.group(2)))
            parse.append(float(m.group(3)))
            rules.append(float(m.group(4)))
            bundles.append(float(m.group(5)))
            body = out.read()
            if body.startswith(b"{"):
                summary = json.loads(body)["summary"]
    med = statistics.median
    return {
        "wall": med(walls), "rss": max(rss), "read": med(read), "parse": med(parse),
        "rules": med(rules), "bundles": med(bundles), "summary": summary,
    }


def size_of(path):
    if os.path.isfile(path):
        return os.path.getsize(path)
    return sum(os.path.getsize(os.path.join(d, f)) for d, _, fs in os.walk(path) for f in fs)


def largest_file(path):
    if os.path.isfile(path):
        return os.path.getsize(path)
    return max(os.path.getsize(os.path.join(d, f)) for d, _, fs in os.walk(path) for f in fs)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--sizes", default="1000,4000")
    parser.add_argument("--dir", default=None, help="where to write the corpora (default: a temp dir)")
    args = parser.parse_args()
    build()
    base = args.dir or tempfile.mkdtemp(prefix="credlint-bench-")
    sizes = [int(s) for s in args.sizes.split(",")]
    rows, results = [], {}
    for n in sizes:
        corpus = os.path.join(base, f"c{n}")
        if not os.path.exists(os.path.join(corpus, "all.yaml")):
            subprocess.run([os.path.join(EXAMPLES, "gen-corpus"), corpus, str(n)], check=True)
        for layout in ["split", "all.yaml"]:
            path = os.path.join(corpus, layout)
            mb = size_of(path) / 1e6
            for threads in [1, 2]:
                r = timed(["check", path, "--format", "json", "--threads", str(threads)], args.runs)
                results[(n, layout, threads)] = r
                docs = r["summary"]["documents"]
                after = r["wall"] - r["read"] - r["parse"]
                limit = 2 * largest_file(path) / 2**20 + 30
                rows.append(
                    f"| {n} | {layout} | {mb:.1f} | {threads} | {r['wall']:.2f} | {mb / r['wall']:.0f} "
                    f"| {docs / r['wall']:,.0f} | {r['rss']:.0f} (limit {limit:.0f}) | {r['read']:.2f} "
                    f"| {r['parse']:.2f} | {r['rules']:.2f} | {after / r['parse']:.0%} |"
                    # With two threads parsing and rules overlap: the share would mean nothing.
                    if threads == 1 else
                    f"| {n} | {layout} | {mb:.1f} | {threads} | {r['wall']:.2f} | {mb / r['wall']:.0f} "
                    f"| {docs / r['wall']:,.0f} | {r['rss']:.0f} (limit {limit:.0f}) | {r['read']:.2f} "
                    f"| {r['parse']:.2f} | {r['rules']:.2f} | |"
                )
    print("| bundles | input | MB | threads | wall s | MB/s | documents/s | peak RSS MB | read s | "
          "YAML parse s | rules s | after parsing, vs parse |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    print("\n".join(rows))
    print("\n(read, parse and rules are CPU time summed over threads; 'after parsing' is wall time "
          "minus reading and parsing, as a share of the parse, from the 1-thread runs)")

    # One 10-object file, as the pre-commit hook lints a changed file.
    small = os.path.join(base, "small.yaml")
    with open(os.path.join(base, f"c{sizes[0]}", "split", sorted(os.listdir(os.path.join(base, f"c{sizes[0]}", "split")))[0])) as f:
        bundle = f.read()
    with open(small, "w") as f:
        f.write(bundle)
        f.write("---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: extra-a, namespace: team-00}\ndata: {a: b}\n")
        f.write("---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: extra-b, namespace: team-00}\ndata: {a: b}\n")
    objects = None
    small_walls = []
    for _ in range(max(args.runs, 40)):
        r = timed(["check", small, "--format", "json"], 1)
        small_walls.append(r["wall"])
        objects = r["summary"]["objects"]
    floor = []
    for _ in range(len(small_walls)):
        started = time.perf_counter()
        os.wait4(os.posix_spawn("/bin/true", ["/bin/true"], os.environ), 0)
        floor.append(time.perf_counter() - started)
    print(f"\nOne {objects}-object file, process start included: median {statistics.median(small_walls) * 1000:.1f} ms "
          f"over {len(small_walls)} runs (target: under 10 ms; starting and waiting for /bin/true: "
          f"{statistics.median(floor) * 1000:.1f} ms)")

    if len(sizes) >= 2:
        a, b = sizes[0], sizes[-1]
        for layout in ["split", "all.yaml"]:
            ratio = results[(b, layout, 1)]["wall"] / results[(a, layout, 1)]["wall"]
            print(f"Growth {a} -> {b} bundles ({b // a}x input), {layout}, 1 thread: {ratio:.2f}x time "
                  f"(target: at most {b / a * 1.1:.1f}x)")

    largest = os.path.join(base, f"c{sizes[-1]}", "all.yaml")
    out = subprocess.run([os.path.join(EXAMPLES, "diagnostic-bench"), largest], capture_output=True, text=True)
    print("Diagnostic near the end of the largest file: " + out.stdout.strip())

    big = results.get((sizes[-1], "all.yaml", 1)), results.get((sizes[-1], "all.yaml", 2))
    split = results.get((sizes[-1], "split", 1)), results.get((sizes[-1], "split", 2))
    print("\nTargets on the largest corpus:")
    for name, (one, two) in [("split", split), ("all.yaml", big)]:
        if one and two:
            mb = size_of(os.path.join(base, f"c{sizes[-1]}", name)) / 1e6
            print(f"  {name}: {mb / one['wall']:.0f} MB/s with 1 thread (target 60), "
                  f"{mb / two['wall']:.0f} MB/s with 2 (target 100); after parsing adds "
                  f"{(one['wall'] - one['read'] - one['parse']) / one['parse']:.0%} of the parse (target 50%)")


if __name__ == "__main__":
    main()
