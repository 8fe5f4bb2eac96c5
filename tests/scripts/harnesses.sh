#!/usr/bin/env bash
# One harness per kind of test, used by every test of that kind:
#  - each tests/unit/test_*.c includes testlib.h and checks with its EXPECT
#    (no private failure counter or check macro) and returns test_done();
#  - no tests/scripts/*.sh defines a helper of tests/scripts/lib/harness.bash
#    (check, fail, cg, ...): it sources the harness instead;
#  - every tests/scripts/*.sh sources the harness, except the few below,
#    each with its reason; a listed script that has moved onto the harness
#    must leave the list (it only shrinks).
set -u
bin=${1:?usage: harnesses.sh CONVGATE_BINARY SOURCE_DIR}
src=${2:?usage: harnesses.sh CONVGATE_BINARY SOURCE_DIR}
. "$(dirname "${BASH_SOURCE[0]}")/lib/harness.bash"

n=0
for f in "$src"/tests/unit/test_*.c; do
    n=$((n + 1))
    name=$(basename "$f")
    grep -q '#include "testlib.h"' "$f" || fail "$name does not include testlib.h"
    if grep -Eq '^static int (failures|fails|errors)\b|^#define (EXPECT|CHECK|ASSERT)\(' "$f"; then
        fail "$name keeps its own failure counter or check macro"
    fi
    # test_xnnpack.c is also a tool (check MODEL, bench MODEL RUNS): its
    # conformance mode's verdict is its totals, its skip test_skip()'s
    [ "$name" = test_xnnpack.c ] || grep -q 'return test_done("' "$f" ||
        fail "$name does not end with test_done()"
done
[ "$n" -ge 30 ] || fail "only $n unit tests found under $src/tests/unit"

harness="check fail cg rc out_has err_has has out_json expect_exit expect_cg expect_out expect_err unavailable finish"
for f in "$src"/tests/scripts/*.sh; do
    name=$(basename "$f")
    for fn in $harness; do
        if grep -Eq "^[[:space:]]*$fn\(\)" "$f"; then
            fail "$name defines $fn(): source lib/harness.bash instead"
        fi
    done
done
[ -f "$src/tests/scripts/lib/harness.bash" ] || fail "no tests/scripts/lib/harness.bash"

# Not on the harness: each hands the whole test to one program whose own
# assertions are the checks (a python3 program or unittest), so the
# harness's helpers would have nothing to check.
declare -A not_yet=(
    [layering.sh]="one python3 program"
    [litert_oracle.sh]="one python3 program, over LiteRT.js"
    [placement_pins.sh]="one python3 program (tools/placement_pins.py)"
    [progress_tty.sh]="one python3 program (a pseudo-terminal)"
    [python_binding.sh]="python3's unittest"
)
for f in "$src"/tests/scripts/*.sh; do
    name=$(basename "$f")
    if grep -q 'lib/harness\.bash"$' "$f"; then
        [ -z "${not_yet[$name]:-}" ] ||
            fail "$name sources lib/harness.bash: take it off harnesses.sh's not_yet list"
    elif [ -z "${not_yet[$name]:-}" ]; then
        fail "$name does not source lib/harness.bash"
    fi
done
for name in "${!not_yet[@]}"; do
    [ -f "$src/tests/scripts/$name" ] || fail "not_yet lists $name, which is gone"
done

finish
