#!/usr/bin/env python3
"""credlint's benchmark: whole runs of the release binary, timed from outside.

    python3 bench/run.py [--runs 5] [--sizes 1000,4000] [--dir DIR]
    python3 bench/run.py --simulate [--runs 5]

Builds the release binary and the corpus generator, writes a corpus per size (one file per
owner in split/, everything in all.yaml), and for each size, layout and thread count (1, 2)
runs `credlint check --no-cache --format json --threads T --timings` several times (cold: every
file linted), beside loading the same bytes with PyYAML and libyaml. It reports medians of wall
time, MB/s, documents/s, peak RSS (of that child alone, from wait4), and from the same runs the
time spent reading and in the YAML parse alone, against the rest. Then the cache on the largest
tree: warm with nothing changed, warm with one file changed before each run, and `--pre-commit`
with that one changed file. Then: one 10-object file as a pre-commit hook sees it (process start
included; cold and warm), how time grows from 1,000 to 4,000 bundles, and what a diagnostic near
the end of the largest file costs to render. It prints markdown tables and checks the figures
against the targets of issues 6 and 16. `--simulate` instead times `simulate fixtures/clean`
cold and warm against issue 32's targets.

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


def build(examples=True):
    subprocess.run(["cargo", "build", "--release", "--quiet", "--bin", "credlint"]
                   + (["--examples"] if examples else []), cwd=ROOT, check=True)


def simulate_rows(runs):
    """`simulate fixtures/clean`, cold (`--no-cache`) and warm (a cache filled by one run
    before), `runs` times each, alternating; medians of wall time, CPU time (user + system of
    credlint and every program it ran, from wait4) and peak RSS; checked against issue 32's
    targets (cold at most 8 s, CPU at most 0.5 s per bundle, warm at most 0.5 s)."""
    fixtures = os.path.join(ROOT, "fixtures", "clean")
    cache = tempfile.mkdtemp(prefix="credlint-bench-simulate-")
    env = dict(os.environ, CREDLINT_CACHE_DIR=cache)
    rows = {"cold": [], "warm": []}
    bundles = None

    def once(extra):
        with tempfile.TemporaryFile() as out:
            started = time.perf_counter()
            pid = os.posix_spawn(BIN, [BIN, "simulate", fixtures, "--format", "json"] + extra, env,
                                 file_actions=[(os.POSIX_SPAWN_DUP2, out.fileno(), 1)])
            _, status, usage = os.wait4(pid, 0)
            wall = time.perf_counter() - started
            if os.waitstatus_to_exitcode(status) != 0:
                sys.exit("credlint simulate fixtures/clean did not pass")
            out.seek(0)
            summary = json.loads(out.read())["summary"]
        return wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024, summary

    once([])  # fills the cache
    for _ in range(runs):
        for name, extra in [("cold", ["--no-cache"]), ("warm", [])]:
            wall, cpu, rss, summary = once(extra)
            rows[name].append((wall, cpu, rss))
            bundles = summary["bundles"]
    med = statistics.median
    print(f"\n`simulate fixtures/clean` ({bundles} bundles), medians of {runs} alternating runs:\n")
    print("| run | wall s | CPU s | CPU per bundle s | peak RSS MB |")
    print("|---|---|---|---|---|")
    figures = {}
    for name, measured in rows.items():
        wall, cpu, rss = (med(m[i] for m in measured) for i in range(3))
        figures[name] = (wall, cpu / bundles)
        print(f"| {name} | {wall:.2f} | {cpu:.2f} | {cpu / bundles:.3f} | {rss:.0f} |")
    checks = [("cold wall", figures["cold"][0], 8.0), ("CPU per bundle", figures["cold"][1], 0.5),
              ("warm wall", figures["warm"][0], 0.5)]
    for name, value, limit in checks:
        print(f"  {name}: {value:.2f} s (target {limit}: {'met' if value <= limit else 'NOT met'})")


def timed(args, runs, cwd=None, before=None):
    walls, rss, read, parse, rules, bundles = [], [], [], [], [], []
    summary = None
    for _ in range(runs):
        if before:
            before()
        with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
            # posix_spawn (vfork and exec), not fork: forking this Python process would add
            # its own milliseconds to a 10 ms run.
            actions = [(os.POSIX_SPAWN_DUP2, out.fileno(), 1), (os.POSIX_SPAWN_DUP2, err.fileno(), 2)]
            # The child inherits the current folder (posix_spawn has no chdir of its own).
            home = os.getcwd()
            os.chdir(cwd or home)
            started = time.perf_counter()
            pid = os.posix_spawn(BIN, [BIN] + args + ["--timings"], os.environ, file_actions=actions)
            os.chdir(home)
            _, status, usage = os.wait4(pid, 0)
            walls.append(time.perf_counter() - started)
            if os.waitstatus_to_exitcode(status) not in (0, 1):
                err.seek(0)
                sys.exit(f"credlint {' '.join(args)} failed: {err.read().decode()}")
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


# Loads every document of the given files with PyYAML's libyaml loader: the yardstick of issue 16.
PYYAML = """
import sys, time, yaml
paths = sys.argv[1:]
started = time.perf_counter()
for path in paths:
    with open(path, 'rb') as f:
        for _ in yaml.load_all(f, Loader=yaml.CSafeLoader):
            pass
print(time.perf_counter() - started)
"""


def files_of(path):
    if os.path.isfile(path):
        return [path]
    return sorted(os.path.join(d, f) for d, _, fs in os.walk(path) for f in fs)


def pyyaml_load(path, runs):
    """Median seconds PyYAML with libyaml takes to load every document under `path` (the load
    alone, timed inside Python), or None when PyYAML or its libyaml binding is missing."""
    probe = subprocess.run([sys.executable, "-c", "import yaml; yaml.CSafeLoader"], capture_output=True)
    if probe.returncode != 0:
        return None
    times = []
    for _ in range(runs):
        out = subprocess.run([sys.executable, "-c", PYYAML] + files_of(path), capture_output=True,
                             text=True, check=True)
        times.append(float(out.stdout))
    return statistics.median(times)


def cache_rows(corpus, runs):
    """The cache on the tree `corpus/split`, each figure beside the cold run it saves."""
    tree = os.path.join(corpus, "split")
    cache = os.path.join(corpus, "bench-cache")
    subprocess.run(["rm", "-rf", cache], check=True)
    changed = files_of(tree)[len(files_of(tree)) // 2]
    with open(changed, "rb") as f:
        original = f.read()
    edits = [0]

    def edit():
        # A different comment each time: every timed run finds this one file changed.
        edits[0] += 1
        with open(changed, "wb") as f:
            f.write(original + f"# edit {edits[0]}\n".encode())

    common = ["--format", "json", "--cache-dir", cache]
    # The first run fills the cache; every later one finds it warm.
    timed(["check", tree] + common, 1)
    rows = {
        "warm, nothing changed": timed(["check", tree] + common, runs),
        "warm, one file changed": timed(["check", tree] + common, runs, before=edit),
        "--pre-commit, one file changed": timed(
            ["check", "--pre-commit", os.path.relpath(changed, tree)] + common, runs, cwd=tree,
            before=edit),
    }
    one_cold = timed(["check", changed, "--no-cache", "--format", "json"], max(runs, 10))
    with open(changed, "wb") as f:
        f.write(original)
    return rows, one_cold


def machine_state():
    """The commit measured (with `+changes` when the work tree differs from it) and the load
    average, printed with the tables so that a README table says where it came from."""
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True,
                            text=True).stdout.strip() or "unknown"
    dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=ROOT,
                           capture_output=True, text=True).stdout.strip()
    with open("/proc/loadavg") as f:
        load = " ".join(f.read().split()[:3])
    return commit + ("+changes" if dirty else ""), load


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--sizes", default="1000,4000")
    parser.add_argument("--dir", default=None, help="where to write the corpora (default: a temp dir)")
    parser.add_argument("--simulate", action="store_true",
                        help="only `simulate fixtures/clean`, cold and warm (needs python3)")
    args = parser.parse_args()
    build(examples=not args.simulate)
    if args.simulate:
        simulate_rows(args.runs)
        return
    commit, load_before = machine_state()
    base = os.path.abspath(args.dir or tempfile.mkdtemp(prefix="credlint-bench-"))
    sizes = [int(s) for s in args.sizes.split(",")]
    rows, results, pyyaml = [], {}, {}
    for n in sizes:
        corpus = os.path.join(base, f"c{n}")
        if not os.path.exists(os.path.join(corpus, "all.yaml")):
            subprocess.run([os.path.join(EXAMPLES, "gen-corpus"), corpus, str(n)], check=True)
        for layout in ["split", "all.yaml"]:
            path = os.path.join(corpus, layout)
            mb = size_of(path) / 1e6
            pyyaml[(n, layout)] = pyyaml_load(path, min(args.runs, 3))
            for threads in [1, 2]:
                r = timed(["check", path, "--no-cache", "--format", "json", "--threads", str(threads)],
                          args.runs)
                results[(n, layout, threads)] = r
                docs = r["summary"]["documents"]
                after = r["wall"] - r["read"] - r["parse"]
                limit = 2 * largest_file(path) / 2**20 + 30
                py = pyyaml[(n, layout)]
                versus = f"{py:.2f} ({py / r['wall']:.1f}x)" if py else "(no PyYAML)"
                rows.append(
                    f"| {n} | {layout} | {mb:.1f} | {threads} | {r['wall']:.2f} | {mb / r['wall']:.0f} "
                    f"| {docs / r['wall']:,.0f} | {r['rss']:.0f} (limit {limit:.0f}) | {r['read']:.2f} "
                    f"| {r['parse']:.2f} | {r['rules']:.2f} | {after / r['parse']:.0%} | {versus} |"
                    # With two threads parsing and rules overlap: the share would mean nothing.
                    if threads == 1 else
                    f"| {n} | {layout} | {mb:.1f} | {threads} | {r['wall']:.2f} | {mb / r['wall']:.0f} "
                    f"| {docs / r['wall']:,.0f} | {r['rss']:.0f} (limit {limit:.0f}) | {r['read']:.2f} "
                    f"| {r['parse']:.2f} | {r['rules']:.2f} | | {versus} |"
                )
    _, load_after = machine_state()
    print(f"Measured at commit {commit} (`python3 bench/run.py --runs {args.runs} --sizes {args.sizes}`), "
          f"load average {load_before} before the cold rows and {load_after} after them.\n")
    print("| bundles | input | MB | threads | wall s | MB/s | documents/s | peak RSS MB | read s | "
          "YAML parse s | rules s | after parsing, vs parse | PyYAML+libyaml load s (credlint faster) |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    print("\n".join(rows))
    print("\n(cold: --no-cache; read, parse and rules are CPU time summed over threads; 'after "
          "parsing' is wall time minus reading and parsing, as a share of the parse, from the "
          "1-thread runs)")

    # The cache, on the largest tree, with the default thread count.
    largest_corpus = os.path.join(base, f"c{sizes[-1]}")
    cached, one_cold = cache_rows(largest_corpus, args.runs)
    cold_tree = results[(sizes[-1], "split", 2)]["wall"]
    print(f"\n| {sizes[-1]} bundles, split, cache | wall ms | peak RSS MB | target ms |")
    print("|---|---|---|---|")
    targets = {
        "warm, nothing changed": 150,
        "warm, one file changed": 150 + one_cold["wall"] * 1000,
        "--pre-commit, one file changed": 150 + one_cold["wall"] * 1000,
    }
    for name, r in cached.items():
        print(f"| {name} | {r['wall'] * 1000:.0f} | {r['rss']:.0f} | {targets[name]:.0f} |")
    print(f"\n(cold, --no-cache, 2 threads: {cold_tree * 1000:.0f} ms; the changed file alone, cold: "
          f"{one_cold['wall'] * 1000:.1f} ms, which the targets add to 150 ms)")

    # One 10-object file, as the pre-commit hook lints a changed file.
    small = os.path.join(base, "small.yaml")
    with open(os.path.join(base, f"c{sizes[0]}", "split", sorted(os.listdir(os.path.join(base, f"c{sizes[0]}", "split")))[0])) as f:
        bundle = f.read()
    with open(small, "w") as f:
        f.write(bundle)
        f.write("---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: extra-a, namespace: team-00}\ndata: {a: b}\n")
        f.write("---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: extra-b, namespace: team-00}\ndata: {a: b}\n")
    objects = None
    small_walls, small_warm = [], []
    small_cache = os.path.join(base, "small-cache")
    for _ in range(max(args.runs, 40)):
        r = timed(["check", small, "--no-cache", "--format", "json"], 1)
        small_walls.append(r["wall"])
        objects = r["summary"]["objects"]
        small_warm.append(timed(["check", small, "--format", "json", "--cache-dir", small_cache], 1)["wall"])
    floor = []
    for _ in range(len(small_walls)):
        started = time.perf_counter()
        os.wait4(os.posix_spawn("/bin/true", ["/bin/true"], os.environ), 0)
        floor.append(time.perf_counter() - started)
    print(f"\nOne {objects}-object file, process start included: median {statistics.median(small_walls) * 1000:.1f} ms "
          f"cold (--no-cache), {statistics.median(small_warm) * 1000:.1f} ms warm, "
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
    if out.returncode != 0:
        # A benchmark that cannot measure says so rather than printing an empty row.
        sys.exit(f"diagnostic-bench failed ({out.returncode}): {out.stderr.strip()[-2000:]}")
    print("Diagnostic near the end of the largest file: " + out.stdout.strip())

    big = results.get((sizes[-1], "all.yaml", 1)), results.get((sizes[-1], "all.yaml", 2))
    split = results.get((sizes[-1], "split", 1)), results.get((sizes[-1], "split", 2))
    verdicts = []

    def target(name, value, limit, higher_is_better=True):
        met = value >= limit if higher_is_better else value <= limit
        verdicts.append((name, met))
        return "met" if met else "NOT met"

    print("\nTargets on the largest corpus:")
    for name, (one, two) in [("split", split), ("all.yaml", big)]:
        if one and two:
            mb = size_of(os.path.join(base, f"c{sizes[-1]}", name)) / 1e6
            py = pyyaml[(sizes[-1], name)]
            one_rate, two_rate = mb / one["wall"], mb / two["wall"]
            after = (one["wall"] - one["read"] - one["parse"]) / one["parse"]
            limit = 2 * largest_file(os.path.join(base, f"c{sizes[-1]}", name)) / 2**20 + 30
            versus = (f"; {py / two['wall']:.1f}x PyYAML+libyaml (target 12x: "
                      f"{target(name + ' vs PyYAML', py / two['wall'], 12)})") if py else ""
            print(f"  {name}, cold: {one_rate:.0f} MB/s with 1 thread (target 75: "
                  f"{target(name + ' 1 thread', one_rate, 75)}), {two_rate:.0f} MB/s with 2 (target 130: "
                  f"{target(name + ' 2 threads', two_rate, 130)}){versus}; peak RSS "
                  f"{max(one['rss'], two['rss']):.0f} MB (limit {limit:.0f}: "
                  f"{target(name + ' RSS', max(one['rss'], two['rss']), limit, False)}); after "
                  f"parsing adds {after:.0%} of the parse (target 50%)")
    one_changed = targets["warm, one file changed"]
    warm = cached["warm, nothing changed"]["wall"] * 1000
    changed = cached["warm, one file changed"]["wall"] * 1000
    hook = cached["--pre-commit, one file changed"]["wall"] * 1000
    small_ms = statistics.median(small_walls) * 1000
    print(f"  cache: warm {warm:.0f} ms (target 150: {target('warm', warm, 150, False)}), one file "
          f"changed {changed:.0f} ms ({target('one changed', changed, one_changed, False)}) and "
          f"--pre-commit {hook:.0f} ms ({target('pre-commit', hook, one_changed, False)}) "
          f"(target {one_changed:.0f})")
    print(f"  one {objects}-object file: {small_ms:.1f} ms (target 10: "
          f"{target('small file', small_ms, 10, False)})")
    missed = [name for name, met in verdicts if not met]
    print(f"  {len(verdicts) - len(missed)} of {len(verdicts)} targets met"
          + (f"; not met: {', '.join(missed)}" if missed else ""))


if __name__ == "__main__":
    main()
