#!/usr/bin/env bash
# Seeds the fuzz corpora from fixtures/ (nothing generated is checked in):
#   corpus/loader  every fixture file as it is;
#   corpus/check   `F`, no edit choices, then a fixture file (the target edits it);
#   corpus/cel     `O` then a fixture file, and `E` then each CEL expression of the catalog.
set -euo pipefail
cd "$(dirname "$0")"
root=..
mkdir -p corpus/loader corpus/check corpus/cel
n=0
while IFS= read -r -d '' file; do
    n=$((n + 1))
    cp "$file" "corpus/loader/fixture-$n"
    { printf 'F\000'; cat "$file"; } > "corpus/check/fixture-$n"
    { printf 'O'; cat "$file"; } > "corpus/cel/fixture-$n"
done < <(find "$root/fixtures" -type f \( -name '*.yaml' -o -name '*.yml' -o -name '*.json' \) -print0 | sort -z)
credlint="$root/target/release/credlint"
[ -x "$credlint" ] || credlint="$root/target/debug/credlint"
if [ -x "$credlint" ]; then
    "$credlint" rules --format json | python3 -c '
import json, sys
n = 0
for rule in json.load(sys.stdin):
    cel = rule.get("cel") or {}
    texts = [v["expression"] for v in cel.get("validations", [])]
    texts += [v["expression"] for v in cel.get("variables", [])]
    if cel.get("condition"):
        texts.append(cel["condition"])
    for t in texts:
        n += 1
        with open("corpus/cel/expression-%d" % n, "wb") as f:
            f.write(b"E" + t.encode())
print("seeded %d expressions" % n)
'
fi
echo "seeded $n fixture files into fuzz/corpus/{loader,check,cel}"
