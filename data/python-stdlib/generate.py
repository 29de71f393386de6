#!/usr/bin/env python3
"""Writes <version>.txt (3.9 .. 3.14): the top-level standard-library module names.

Usage: generate.py LISTS_DIR OUT_DIR
LISTS_DIR is the `stdlib_list/lists` folder of the stdlib-list 0.12.0 wheel.
See README.md beside this file for what the lists mean and why 3.9 is derived.
"""

import sys
from pathlib import Path

VERSIONS = ["3.9", "3.10", "3.11", "3.12", "3.13", "3.14"]

# Names the upstream lists carry that CPython's own sys.stdlib_module_names leaves out
# (test modules, frozen demo modules) or that came from the machine that made a list.
NOT_STDLIB = {"xxsubtype", "__phello__", "test", "lib"}


def top_level_names(path: Path) -> set[str]:
    names = set()
    for line in path.read_text().splitlines():
        name = line.strip().split(".")[0]
        if not name or name in NOT_STDLIB or name.startswith("_sysconfigdata_"):
            continue
        names.add(name)
    return names


def main() -> None:
    lists_dir, out_dir = Path(sys.argv[1]), Path(sys.argv[2])
    lists = {v: top_level_names(lists_dir / f"{v}.txt") for v in VERSIONS}
    # The 3.9 upstream list comes from the documentation index, which omits undocumented C
    # accelerators; 3.10 added no module, so 3.10's names all existed in 3.9 as well.
    lists["3.9"] |= lists["3.10"]

    here = f"{sys.version_info.major}.{sys.version_info.minor}"
    if here in lists and hasattr(sys, "stdlib_module_names"):
        expected = set(sys.stdlib_module_names) | {"__main__"}
        if lists[here] != expected:
            extra, missing = lists[here] - expected, expected - lists[here]
            sys.exit(f"{here} disagrees with this interpreter: extra {extra}, missing {missing}")

    for v, names in lists.items():
        (out_dir / f"{v}.txt").write_text("".join(f"{n}\n" for n in sorted(names)))


if __name__ == "__main__":
    main()
