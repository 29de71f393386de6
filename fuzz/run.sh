#!/usr/bin/env bash
# Runs the fuzz targets one after another: `fuzz/run.sh [SECONDS] [TARGET ...]` (default 600 s
# each, every target). Seeds the corpora from fixtures/ first; a crash stops the run with the
# input under fuzz/artifacts/<target>/. cargo fuzz needs nightly flags: RUSTC_BOOTSTRAP=1 lets
# the stable toolchain take them.
set -euo pipefail
cd "$(dirname "$0")"
seconds="${1:-600}"
shift || true
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(loader check cel)
export RUSTC_BOOTSTRAP=1
./seed.sh
for target in "${targets[@]}"; do
    echo "== fuzz $target for ${seconds}s"
    # Built first, unfiltered: a target that no longer compiles stops the run (the filter
    # below would hide the error and pass).
    cargo fuzz build -O "$target"
    cargo fuzz run -O "$target" "corpus/$target" -- \
        -max_total_time="$seconds" -print_final_stats=1 -rss_limit_mb=4096 -timeout=60 2>&1 |
        grep -E '^(#[0-9]+ +(INITED|DONE|pulse))|^Done|stat::|panicked|ERROR|SUMMARY|Test unit' || true
    if [ -n "$(ls -A "artifacts/$target" 2>/dev/null)" ]; then
        echo "fuzz $target: crash, see fuzz/artifacts/$target/" >&2
        exit 1
    fi
done
