# The check harness the script tests share (sourced, never run: CTest takes
# only tests/scripts/*.sh, and this file is neither there nor named *.sh).
#
# A script sets `bin` (the convgate binary) and then sources this file:
#   . "$(dirname "${BASH_SOURCE[0]}")/lib/harness.bash"
# It gets `tmp` (a fresh folder, removed on exit), `fails` (0), `py` (the
# Python that has onnx and numpy) and the helpers below. Every helper that
# reads output reads the last command's: $tmp/out (stdout) and $tmp/err
# (stderr); `expect_exit` writes both streams to $tmp/out.
#
# check WHAT CMD...   CMD must succeed; otherwise "FAILED: WHAT", the last
#                     output and error, and one more failure counted
# fail WHAT           one more failure counted, "FAILED: WHAT" (for checks
#                     that are not one command: `cmd || fail "..."`)
# cg ARGS...          run "$bin" ARGS; status in $tmp/rc
# rc N                the last cg exited N
# out_has S / has S   stdout of the last command holds the fixed string S
# err_has S           its stderr holds S
# out_json EXPR       Python EXPR over j (or r), the "result" of the JSON on
#                     stdout (json, math and sys imported)
# expect_exit N CMD.. run CMD (both streams to $tmp/out), check it exits N
# expect_cg N ARGS... cg ARGS (stdout and stderr apart), check it exits N
# expect_out S...     check that stdout of the last command holds each S
# expect_err S...     the same for its stderr
# run_named NAME N ARGS...  run "$bin" ARGS, stdout in $tmp/NAME.out and
#                     stderr in $tmp/NAME.err, check it exits N
# file_matches FILE ERE [WHAT]  FILE has a line matching ERE (else the file
#                     is shown); file_lacks FILE ERE [WHAT]: it has none
# unavailable WHAT    a tool or file the test needs is missing: fails
#                     naming WHAT, or exits 77 (skipped) when
#                     CG_ALLOW_SKIP_PARITY=1
# finish [SKIPPED]    the verdict: exit 1 after a failure; 77 when SKIPPED
#                     (what was not checked) is given; 0 otherwise
set -u
: "${bin:?harness.bash: set bin (the convgate binary) before sourcing it}"
harness_name=$(basename "$0" .sh)
py=/usr/bin/python3
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0

check() {
    local what=$1
    shift
    if ! "$@"; then
        echo "FAILED: $what" >&2
        [ -f "$tmp/out" ] && sed 's/^/  stdout: /' "$tmp/out" | head -60 >&2
        [ -f "$tmp/err" ] && sed 's/^/  stderr: /' "$tmp/err" | head -60 >&2
        fails=$((fails + 1))
    fi
    return 0
}
fail() {
    echo "FAILED: $*" >&2
    fails=$((fails + 1))
    return 0
}
cg() {
    "$bin" "$@" >"$tmp/out" 2>"$tmp/err"
    echo $? >"$tmp/rc"
}
rc() { [ "$(cat "$tmp/rc")" = "$1" ]; }
out_has() { grep -qF -- "$1" "$tmp/out"; }
has() { out_has "$1"; }
err_has() { grep -qF -- "$1" "$tmp/err"; }
out_json() {
    "$py" -c 'import json, math, sys
j = r = json.load(open(sys.argv[1]))["result"]
sys.exit(0 if eval(sys.argv[2]) else 1)' "$tmp/out" "$1"
}
expect_exit() {
    local want=$1
    shift
    rm -f "$tmp/err"
    "$@" >"$tmp/out" 2>&1
    local got=$?
    echo "$got" >"$tmp/rc"
    check "exit $got (wanted $want): $*" test "$got" -eq "$want"
}
expect_cg() {
    local want=$1
    shift
    cg "$@"
    check "exit $(cat "$tmp/rc") (wanted $want): convgate $*" rc "$want"
}
expect_out() {
    local s
    for s in "$@"; do check "stdout has '$s'" out_has "$s"; done
}
expect_err() {
    local s
    for s in "$@"; do check "stderr has '$s'" err_has "$s"; done
}
run_named() {
    local name=$1 want=$2
    shift 2
    "$bin" "$@" >"$tmp/$name.out" 2>"$tmp/$name.err"
    local got=$?
    if [ "$got" != "$want" ]; then
        fail "$name: exit $got, expected $want: convgate $*"
        head -30 "$tmp/$name.out" "$tmp/$name.err" >&2
    fi
    return 0
}
file_matches() {
    grep -Eq -- "$2" "$1" && return 0
    fail "${3:-$1}: /$2/ not in $1"
    sed 's/^/    /' "$1" 2>/dev/null | head -40 >&2
    return 0
}
file_lacks() {
    grep -Eq -- "$2" "$1" || return 0
    fail "${3:-$1}: /$2/ in $1"
    grep -E -- "$2" "$1" | head -5 >&2
    return 0
}
unavailable() {
    if [ "${CG_ALLOW_SKIP_PARITY:-0}" = 1 ]; then
        echo "$harness_name: skipped (CG_ALLOW_SKIP_PARITY=1): $*" >&2
        exit 77
    fi
    echo "$harness_name: FAILED: $* (run scripts/setup.sh; set CG_ALLOW_SKIP_PARITY=1 to skip instead)" >&2
    exit 1
}
finish() {
    if [ "$fails" -ne 0 ]; then
        echo "$harness_name: $fails check(s) failed" >&2
        exit 1
    fi
    if [ $# -gt 0 ] && [ -n "$1" ]; then
        echo "$harness_name: passed, but not checked: $1"
        exit 77
    fi
    echo "$harness_name: ok"
    exit 0
}
