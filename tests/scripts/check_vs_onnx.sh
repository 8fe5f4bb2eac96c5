#!/usr/bin/env bash
# Agreement test: `convgate check` must pass exactly the models that
# onnx.checker.check_model (onnx 1.12 in /usr/bin/python3, no full_check)
# passes, over every model.onnx of the ONNX backend test data plus the
# broken copies tools/onnx_check_all.py --mutants writes (one rule broken
# each, so the failure paths are compared too). Lists every disagreement.
# Deliberate differences (DELIBERATE below, each with its reason) must be
# exactly the disagreements they name: convgate passing with a warning
# where onnx.checker fails.
# Usage: check_vs_onnx.sh PATH/TO/convgate SOURCE_DIR
# Exit: 0 agreement, 1 disagreements, 77 skipped (no onnx or no test data).
set -u
bin=${1:?usage: check_vs_onnx.sh CONVGATE SOURCE_DIR}
SRC=${2:?usage: check_vs_onnx.sh CONVGATE SOURCE_DIR}
CONVGATE=$bin
. "$(dirname "${BASH_SOURCE[0]}")/lib/harness.bash"
DATA=${CG_ONNX_TESTDATA:-/usr/share/libonnx-testdata/data}

if ! /usr/bin/python3 -c 'import onnx' 2>/dev/null; then
    echo "SKIP: /usr/bin/python3 has no onnx module"
    exit 77
fi
if [ ! -d "$DATA" ]; then
    echo "SKIP: no ONNX test data at $DATA"
    exit 77
fi

WORK="$tmp/work"
mkdir -p "$WORK"

if ! /usr/bin/python3 "$SRC/tools/onnx_check_all.py" --mutants "$WORK/mutants" "$DATA" \
        > "$WORK/onnx.tsv"; then
    fail "tools/onnx_check_all.py failed"
    finish
fi

# mutant name -> why convgate accepts (with a warning) what onnx.checker refuses
declare -A DELIBERATE=(
    [not_topological]="acyclic nodes out of order: the loader sorts them as ONNX Runtime does (src/load/topo.c) and check warns"
    [subgraph_not_topological]="the same, in a Loop body"
)
total=0 agree=0 onnx_ok=0 onnx_fail=0 deliberate=0
disagreements=()
while IFS=$'\t' read -r path verdict; do
    total=$((total + 1))
    "$CONVGATE" check --quiet "$path"
    rc=$?
    case "$rc" in
        0) ours=ok ;;
        1) ours=fail ;;
        *) ours="load-error(rc=$rc)" ;;
    esac
    [ "$verdict" = ok ] && onnx_ok=$((onnx_ok + 1)) || onnx_fail=$((onnx_fail + 1))
    mutant=$(basename "$(dirname "$path")")
    if [ "$ours" = "$verdict" ]; then
        agree=$((agree + 1))
        [ -n "${DELIBERATE[$mutant]:-}" ] && [ "$path" != "${path#"$WORK/mutants/"}" ] &&
            disagreements+=("$path: expected a deliberate difference (${DELIBERATE[$mutant]}), both say $ours")
    elif [ "$path" != "${path#"$WORK/mutants/"}" ] && [ -n "${DELIBERATE[$mutant]:-}" ] &&
         [ "$ours" = ok ] && [ "$verdict" = fail ]; then
        deliberate=$((deliberate + 1))
    else
        disagreements+=("$path: onnx says $verdict, convgate says $ours")
    fi
done < "$WORK/onnx.tsv"

echo "check_vs_onnx: $total models (onnx: $onnx_ok ok, $onnx_fail fail), $agree agree, $deliberate differ on purpose, ${#disagreements[@]} disagree"
[ "$total" -gt 0 ] || fail "no models found under $DATA"
for d in "${disagreements[@]}"; do
    fail "DISAGREE $d"
    "$CONVGATE" check "${d%%: onnx says*}" 2>&1 | head -5 | sed 's/^/      /'
done
finish
