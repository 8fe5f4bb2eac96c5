#!/usr/bin/env bash
# convgate gate and convgate bisect end to end, on the bundled example and
# the models of tests/data/bisect (tools/make_wrong_rewrite.py):
#  - gate passes tiny_cnn on xnnpack (exit 0, verdict block, JSON report);
#  - gate fails RMSNorm on tflm at gate 2 (no fallback, POW) without running
#    gate 3, and passes tiny_cnn there (its converted ops);
#  - gate fails RMSNorm on litert-gpu accumulating in fp16 (--accumulate fp16)
#    at gate 3, bisect at the ReduceMean, triage precision loss; with
#    --accumulate fp32, as litert-gpu is profiled (measured), it passes;
#  - bisect finds the wrong rewrite (x*sigmoid(-x)) at node silu_sig with
#    triage "wrong kernel or rewrite", and JSON carries the same;
#  - usage errors exit 2.
# Usage: gate_cli.sh CONVGATE SOURCE_DIR
set -u
bin=${1:?convgate binary}
SRC=${2:?source dir}
. "$(dirname "${BASH_SOURCE[0]}")/lib/harness.bash"
CG=$bin
T=$tmp
D=$SRC/tests/data/bisect

run_named pass 0 gate "$SRC/examples/tiny_cnn.onnx" --target xnnpack --inputs "$SRC/examples/tiny_cnn_inputs" --json "$T/pass.json"
file_matches "$T/pass.out" '^GATE 1 converts: PASS' "gate 1 line"
file_matches "$T/pass.out" '18/18 nodes on xnnpack, 0 on CPU, 1 partition' "residency line"
file_matches "$T/pass.out" 'matches \(fp32 noise\) on 2 samples' "two input sets, within fp32 noise"
file_matches "$T/pass.out" 'the fp32 noise floor \(max \|d\|' "ratio to the floor"
file_matches "$T/pass.out" '^VERDICT: PASS' "verdict"
file_matches "$T/pass.json" '"pass": true' "json pass"

# tflm places the TFLite ops a converter emits (preprocess onnx-to-tflite):
# the RMSNorm's Pow becomes POW, which TFLM does not register
run_named tflm 1 gate "$D/rmsnorm_fp16.onnx" --target tflm
file_matches "$T/tflm.out" '^GATE 2 runs where intended: FAIL' "gate 2 fails"
file_matches "$T/tflm.out" 'GATE 3 matches +not run' "gate 3 not run"
file_matches "$T/tflm.out" 'VERDICT: FAIL  gate 2.*POW' "names the refused node"
# tiny_cnn converts to ops TFLM all has (its BatchNormalization folds into the
# conv): gate 3 runs on the device what gate 2 placed there
run_named tflmcnn 0 gate "$SRC/examples/tiny_cnn.onnx" --target tflm
file_matches "$T/tflmcnn.out" '10/10 nodes on tflm, 0 on CPU' "converted ops on tflm"
file_matches "$T/tflmcnn.out" '^VERDICT: PASS' "tflm verdict"

run_named full 1 gate "$D/rmsnorm_fp16.onnx" --target xnnpack --require-full
file_matches "$T/full.out" 'VERDICT: FAIL  gate 2' "require-full"

# judged against the noise floor (the default): a precision breakdown, and the
# bisection names the reduction whose sum overflows, not the fp16 rounding of x*x
run_named rms 1 gate "$D/rmsnorm_fp16.onnx" --target litert-gpu --accumulate fp16 --json -
file_matches "$T/rms.err" '^GATE 3 matches: FAIL  output .y.: precision breakdown' "gate 3 fails as a precision breakdown"
file_matches "$T/rms.err" "first tensor beyond its noise floor: 'ms' .* \\(ReduceMean" "bisect at the reduction"
file_matches "$T/rms.err" "last matching tensor: 'sq'" "the rounded squares are within their fp16 floor"
file_matches "$T/rms.err" 'triage: precision breakdown' "triage"
file_matches "$T/rms.err" "fp16 overflow in ReduceMean 'mean_sq'" "the cause named"
file_matches "$T/rms.err" 'VERDICT: FAIL  gate 3.*ReduceMean.*precision breakdown' "verdict line"
grep -q 'wrong' "$T/rms.err" && fail "a precision breakdown must not say wrong"
file_matches "$T/rms.out" '"op_type": "ReduceMean"' "json op_type"
file_matches "$T/rms.out" '"triage": "precision breakdown"' "json triage"
file_matches "$T/rms.out" '"verdict": "precision breakdown"' "json verdict"
# a fixed tolerance overrides the floors: the same tensor, judged by it
run_named rmstol 1 gate "$D/rmsnorm_fp16.onnx" --target litert-gpu --accumulate fp16 --atol 0.01 --rtol 0.01
file_matches "$T/rmstol.out" "outside tolerance \\(--atol/--rtol\\)" "tolerance named"
file_matches "$T/rmstol.out" "first divergent tensor: 'ms' .* \\(ReduceMean" "bisect by tolerance"

run_named rms32 0 gate "$D/rmsnorm_fp16.onnx" --target litert-gpu --accumulate fp32
file_matches "$T/rms32.out" '^VERDICT: PASS' "fp32 accumulation passes"
file_matches "$T/rms32.out" 'matches at fp16 precision' "within the fp16 floor"
# by default both device classes: F16 devices (fp16 sums) overflow, F32_F16 devices match
run_named rmsprof 1 gate "$D/rmsnorm_fp16.onnx" --target litert-gpu
file_matches "$T/rmsprof.out" 'F32_F16 devices / use_f32_accum_for_fp16 \(fp32 sums\): matches at fp16 precision' "F32_F16 class: within the fp16 floor"
file_matches "$T/rmsprof.out" '^VERDICT: FAIL .*fp16 overflow in ReduceMean' "F16 class: the sum overflows"

run_named wrong 1 bisect "$D/swish_original.onnx" --against "$D/swish_rewritten.onnx"
file_matches "$T/wrong.out" "first tensor beyond its noise floor: 'sig' .* from node 'silu_sig' \\(Sigmoid" "wrong node"
file_matches "$T/wrong.out" "input 0: 'h' float32\\[2,32\\]" "its input"
file_matches "$T/wrong.out" "last matching tensor: 'h'" "last match"
file_matches "$T/wrong.out" 'triage: wrong result \(wrong kernel or rewrite\)' "triage"
file_matches "$T/wrong.out" 'x the fp32 noise floor' "the ratio"
run_named wrongj 1 bisect "$D/swish_original.onnx" --against "$D/swish_rewritten.onnx" --json
file_matches "$T/wrongj.out" '"node": "silu_sig"' "json node"
file_matches "$T/wrongj.out" '"triage": "wrong result \(wrong kernel or rewrite\)"' "json triage"
file_matches "$T/wrongj.out" '"verdict": "wrong result"' "json verdict"

run_named same 0 bisect "$D/swish_original.onnx" --against "$D/swish_original.onnx"
file_matches "$T/same.out" 'no intermediate tensor diverges' "self"
run_named cnn 0 bisect "$SRC/examples/tiny_cnn.onnx" --target xnnpack --inputs "$SRC/examples/tiny_cnn_inputs" --sample 1

run_named usage1 2 gate "$SRC/examples/tiny_cnn.onnx"
run_named usage2 2 gate "$SRC/examples/tiny_cnn.onnx" --target nosuch
run_named usage3 2 gate "$SRC/examples/tiny_cnn.onnx" --target xnnpack --random 2 --inputs "$SRC/examples/tiny_cnn_inputs"
run_named usage4 2 bisect "$SRC/examples/tiny_cnn.onnx"
run_named usage5 2 gate "$SRC/examples/tiny_cnn.onnx" --target xnnpack --inputs "$T/nowhere"
run_named usage6 2 gate "$SRC/examples/tiny_cnn.onnx" --target xnnpack --schedule sideways
file_matches "$T/usage6.err" 'expects auto, overlap or phased' "bad schedule"
# --schedule phased: the same report as the default (overlap on this small model)
run_named sched_o 0 gate "$SRC/examples/tiny_cnn.onnx" --target xnnpack --random 3 --json "$T/sched_o.json" --timings
run_named sched_p 0 gate "$SRC/examples/tiny_cnn.onnx" --target xnnpack --random 3 --json "$T/sched_p.json" --timings --schedule phased
file_matches "$T/sched_o.err" 'gate 3 schedule: overlap' "auto overlaps a small model"
file_matches "$T/sched_p.err" 'gate 3 schedule: phased' "phased as asked"
# (gate 2's measured times aside)
grep -vE '"((reference|mixed)_ms|time_coverage)"' "$T/sched_o.json" >"$T/sched_o.cmp"
grep -vE '"((reference|mixed)_ms|time_coverage)"' "$T/sched_p.json" >"$T/sched_p.cmp"
file_matches "$T/sched_p.cmp" '"verdict": "matches \(fp32 noise\)"' "phased verdict"
cmp -s "$T/sched_o.cmp" "$T/sched_p.cmp" || fail "phased: the JSON report differs from overlap's"

finish
