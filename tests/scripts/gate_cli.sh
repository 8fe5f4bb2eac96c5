#!/usr/bin/env bash
# convgate gate and convgate bisect end to end, on the bundled example and
# the models of tests/data/bisect (tools/make_wrong_rewrite.py):
#  - gate passes tiny_cnn on xnnpack (exit 0, verdict block, JSON report);
#  - gate fails tiny_cnn on tflm at gate 2 (no fallback) without running gate 3;
#  - gate fails RMSNorm on litert-gpu (fp16) at gate 3, bisect at the ReduceMean,
#    triage precision loss; with --accumulate fp32 it passes;
#  - bisect finds the wrong rewrite (x*sigmoid(-x)) at node silu_sig with
#    triage "wrong kernel or rewrite", and JSON carries the same;
#  - usage errors exit 2.
# Usage: gate_cli.sh CONVGATE SOURCE_DIR
set -u
CG=${1:?convgate binary}
SRC=${2:?source dir}
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
expect() { # expect FILE REGEX WHAT
    grep -Eq -- "$2" "$1" || { fail "$3: /$2/ not in $1"; sed 's/^/    /' "$1" | head -40; }
}
run() { # run NAME EXPECTED_RC ARGS...
    local name=$1 want=$2
    shift 2
    "$CG" "$@" >"$T/$name.out" 2>"$T/$name.err"
    local rc=$?
    [ "$rc" = "$want" ] || { fail "$name: exit $rc, expected $want"; cat "$T/$name.err"; }
}
D=$SRC/tests/data/bisect

run pass 0 gate "$SRC/examples/tiny_cnn.onnx" --target xnnpack --inputs "$SRC/examples/tiny_cnn_inputs" --json "$T/pass.json"
expect "$T/pass.out" '^GATE 1 converts: PASS' "gate 1 line"
expect "$T/pass.out" '18/18 nodes on xnnpack, 0 on CPU, 1 partition' "residency line"
expect "$T/pass.out" 'matches \(fp32 noise\) on 2 samples' "two input sets, within fp32 noise"
expect "$T/pass.out" 'the fp32 noise floor \(max \|d\|' "ratio to the floor"
expect "$T/pass.out" '^VERDICT: PASS' "verdict"
expect "$T/pass.json" '"pass": true' "json pass"

run tflm 1 gate "$SRC/examples/tiny_cnn.onnx" --target tflm
expect "$T/tflm.out" '^GATE 2 runs where intended: FAIL' "gate 2 fails"
expect "$T/tflm.out" 'GATE 3 matches +not run' "gate 3 not run"
expect "$T/tflm.out" 'VERDICT: FAIL  gate 2.*BatchNormalization' "names the refused node"

run full 1 gate "$D/rmsnorm_fp16.onnx" --target xnnpack --require-full
expect "$T/full.out" 'VERDICT: FAIL  gate 2' "require-full"

# judged against the noise floor (the default): a precision breakdown, and the
# bisection names the reduction whose sum overflows, not the fp16 rounding of x*x
run rms 1 gate "$D/rmsnorm_fp16.onnx" --target litert-gpu --json -
expect "$T/rms.err" '^GATE 3 matches: FAIL  output .y.: precision breakdown' "gate 3 fails as a precision breakdown"
expect "$T/rms.err" "first tensor beyond its noise floor: 'ms' .* \\(ReduceMean" "bisect at the reduction"
expect "$T/rms.err" "last matching tensor: 'sq'" "the rounded squares are within their fp16 floor"
expect "$T/rms.err" 'triage: precision breakdown' "triage"
expect "$T/rms.err" "fp16 overflow in ReduceMean 'mean_sq'" "the cause named"
expect "$T/rms.err" 'VERDICT: FAIL  gate 3.*ReduceMean.*precision breakdown' "verdict line"
grep -q 'wrong' "$T/rms.err" && fail "a precision breakdown must not say wrong"
expect "$T/rms.out" '"op_type": "ReduceMean"' "json op_type"
expect "$T/rms.out" '"triage": "precision breakdown"' "json triage"
expect "$T/rms.out" '"verdict": "precision breakdown"' "json verdict"
# a fixed tolerance overrides the floors: the same tensor, judged by it
run rmstol 1 gate "$D/rmsnorm_fp16.onnx" --target litert-gpu --atol 0.01 --rtol 0.01
expect "$T/rmstol.out" "outside tolerance \\(--atol/--rtol\\)" "tolerance named"
expect "$T/rmstol.out" "first divergent tensor: 'ms' .* \\(ReduceMean" "bisect by tolerance"

run rms32 0 gate "$D/rmsnorm_fp16.onnx" --target litert-gpu --accumulate fp32
expect "$T/rms32.out" '^VERDICT: PASS' "fp32 accumulation passes"
expect "$T/rms32.out" 'matches at fp16 precision' "within the fp16 floor"

run wrong 1 bisect "$D/swish_original.onnx" --against "$D/swish_rewritten.onnx"
expect "$T/wrong.out" "first tensor beyond its noise floor: 'sig' .* from node 'silu_sig' \\(Sigmoid" "wrong node"
expect "$T/wrong.out" "input 0: 'h' float32\\[2,32\\]" "its input"
expect "$T/wrong.out" "last matching tensor: 'h'" "last match"
expect "$T/wrong.out" 'triage: wrong result \(wrong kernel or rewrite\)' "triage"
expect "$T/wrong.out" 'x the fp32 noise floor' "the ratio"
run wrongj 1 bisect "$D/swish_original.onnx" --against "$D/swish_rewritten.onnx" --json
expect "$T/wrongj.out" '"node": "silu_sig"' "json node"
expect "$T/wrongj.out" '"triage": "wrong result \(wrong kernel or rewrite\)"' "json triage"
expect "$T/wrongj.out" '"verdict": "wrong result"' "json verdict"

run same 0 bisect "$D/swish_original.onnx" --against "$D/swish_original.onnx"
expect "$T/same.out" 'no intermediate tensor diverges' "self"
run cnn 0 bisect "$SRC/examples/tiny_cnn.onnx" --target xnnpack --inputs "$SRC/examples/tiny_cnn_inputs" --sample 1

run usage1 2 gate "$SRC/examples/tiny_cnn.onnx"
run usage2 2 gate "$SRC/examples/tiny_cnn.onnx" --target nosuch
run usage3 2 gate "$SRC/examples/tiny_cnn.onnx" --target xnnpack --random 2 --inputs "$SRC/examples/tiny_cnn_inputs"
run usage4 2 bisect "$SRC/examples/tiny_cnn.onnx"
run usage5 2 gate "$SRC/examples/tiny_cnn.onnx" --target xnnpack --inputs "$T/nowhere"

[ "$fails" = 0 ] && echo "gate_cli: ok" || echo "gate_cli: $fails failure(s)"
[ "$fails" = 0 ]
