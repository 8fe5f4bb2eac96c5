#!/usr/bin/env bash
# The HTML report on a large graph: file size, page load, render and layout
# time in Debian's headless Chromium (tests/browser/check_report.js prints
# them), for gate on the zoo's vit_b_16 (or the models given).
#   bench/bench_html.sh [--target T] [MODEL...]     (CG_ZOO: the zoo folder)
set -u
repo=$(cd "$(dirname "$0")/.." && pwd)
convgate=${CONVGATE:-$repo/build/convgate}
target=xnnpack
if [ "${1:-}" = --target ]; then target=${2:?--target T}; shift 2; fi
models=("$@")
[ ${#models[@]} -gt 0 ] || models=("${CG_ZOO:-$repo/zoo}/vit_b_16.onnx")
chromium=$(command -v chromium || true)
[ -n "$chromium" ] || { echo "bench_html: chromium missing (scripts/setup.sh)" >&2; exit 2; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
for m in "${models[@]}"; do
    name=$(basename "$m" .onnx)
    [ -f "$m" ] || { echo "$name: missing"; continue; }
    start=$EPOCHREALTIME
    "$convgate" gate "$m" --target "$target" --random 1 --quiet --html "$work/$name.html" \
        --json "$work/$name.json" >/dev/null 2>&1
    rc=$?
    gate_s=$(awk -v a="$start" -v b="$EPOCHREALTIME" 'BEGIN {printf "%.1f", b - a}')
    [ $rc -le 1 ] || { echo "$name: gate failed (exit $rc)"; continue; }
    nodes=$(/usr/bin/python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["result"]["runs_where_intended"].get("nodes", "?"))' "$work/$name.json")
    echo "$name: $nodes nodes, gate ${gate_s}s"
    for run in 1 2 3; do
        node "$repo/tests/browser/check_report.js" --chromium "$chromium" --html "$work/$name.html" \
            --json "$work/$name.json" --screenshot "$work/$name.png" | grep -v ': ok$' |
            sed "s|$work/||; s/^check_report: /  run $run: /"
    done
done
