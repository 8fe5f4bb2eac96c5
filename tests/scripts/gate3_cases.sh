#!/usr/bin/env bash
# Gate 3 judged against the noise floor (#14), on the crafted cases:
#  - litert-gpu is judged as both its device classes by default (its
#    profile's device_classes): the fp16 RMSNorm (x*x and Pow(x, 2)) and the
#    global mean FAIL as precision breakdowns on F16 devices (fp16 sums),
#    the bisection (of that class) naming the overflowing ReduceMean (for
#    Pow: not the fp16 rounding of x^2), and never say "wrong", while the
#    F32_F16 class (fp32 sums, as measured on the real delegate) matches at
#    fp16 precision; --accumulate fp16 fails them the same way and
#    --accumulate fp32 passes them; so does the LayerNorm of width 1024 with
#    deviations ~10, its bisection naming the variance ReduceMean (whose sum
#    of squared deviations passes 65504), not the mean's;
#  - a cancelling ReduceSum, a ReduceProd whose running product passes 65504
#    and a 3x3 Conv whose running sum passes it (summed taps outer, channels
#    inner, as TFLite GPU's F16 kernels do) fail the same way on F16 devices,
#    named, and match on F32_F16 devices;
#  - the LayerNorm of values ~300 (spread 0.3) fails on both classes, a
#    breakdown of fp16 storage (of a large-mean input) at its centering Sub
#    (the mean's fp16 sum is within the fp16-sums floor; no sum overflows);
#  - the wrong-on-purpose rewrite is a wrong result (bisect and compare);
#  - the example CNN passes on xnnpack within fp32 noise and on litert-gpu at
#    fp16 precision;
#  - gate 3's path runs on litert-gpu the head gate 2 placed there, not the
#    CPU, when a folded shape subgraph is larger than the head;
#  - a detector whose near-tied boxes swap places on an fp16 target passes
#    under --task detect (and elementwise is a precision breakdown, not wrong),
#    each device class judged by detection too; one whose box is scored by
#    a ReduceSum that overflows with fp16 sums fails by detection on F16
#    devices only (a precision breakdown naming the ReduceSum);
#  - a segmenter with near-tied classes on an fp16 target: the pixels it
#    changes against float64 stand beside those fp16 storage changes,
#    within the noise, and the task verdict passes; a pixel forced to
#    another class is beyond it; outputs whose two near-tied classes are
#    swapped (a channel-order bug, each value within the fp16 noise) pass
#    elementwise but change every pixel, more than fp16 storage allows: the
#    task verdict fails the output;
#  - an fp16 conversion bisected --against its source: compared as values
#    (no dtype mismatch), within its floors (the CNN) or a precision
#    breakdown (the LayerNorm);
#  - a dynamically quantized convolution whose int32 accumulator, cast to float, does
#    not fit fp16 (the next DynamicQuantizeLinear refuses the inf and the run gives no
#    outputs) is a precision breakdown naming the Cast, on gate, compare and verify, its
#    fp16 floor "not measurable", never an error;
#  - gate --json carries every metric, inf spelled "inf";
#  - verify of outputs made elsewhere in fp16 against a golden set: the
#    emulation of the placement tells a precision breakdown (it breaks down
#    too) from a wrong result (it matches);
#  - the paths that judge one device class of litert-gpu say which in the
#    note: outputs under an explicit tolerance (--atol, a --tol entry) and
#    compare --against (outputs read back) as F32_F16 devices, each
#    --accumulate fp16 judging F16 devices instead; a golden set without the
#    fp16-sums floor judges F16 devices against the fp16 storage floor.
# Models: tests/data/fp16 and tests/data/bisect (tools/make_fp16_cases.py,
# tools/make_wrong_rewrite.py).
# Usage: gate3_cases.sh CONVGATE SOURCE_DIR
set -u
bin=${1:?convgate binary}
SRC=${2:?source dir}
. "$(dirname "${BASH_SOURCE[0]}")/lib/harness.bash"
CG=$bin
PY=$py
T=$tmp
# json FILE EXPR: the envelope's result r satisfies the Python expression (o: the
# first task output's figures against float64, when there is one)
json() {
    $PY - "$1" "$2" <<'PYEOF' || fail "JSON $1: $2"
import json, sys
text = open(sys.argv[1]).read()
env = json.loads(text[text.index("{"):])
r = env["result"]
t = r.get("task")
o = t["outputs"][0].get("against_fp64") if isinstance(t, dict) and t.get("outputs") else None
sys.exit(0 if eval(sys.argv[2]) else 1)
PYEOF
}
F=$SRC/tests/data/fp16
B=$SRC/tests/data/bisect
xnn=0
"$CG" targets 2>/dev/null | grep -q '^ *xnnpack ' && xnn=1

# --- the crafted fp16 breakdowns: precision, naming the reduction -----------------
# by default both device classes: F16 devices (fp16 sums) fail, F32_F16 devices match
for c in rmsnorm_overflow rmsnorm_pow global_mean layernorm_variance; do
    run_named "$c" 1 gate "$F/$c.onnx" --target litert-gpu --inputs "$F/${c}_inputs" --json "$T/$c.json"
    file_matches "$T/$c.out" "^GATE 3 matches: FAIL  output 'y': precision breakdown: F16 devices \\(fp16 sums\\)"
    file_matches "$T/$c.out" "^ +F32_F16 devices / use_f32_accum_for_fp16 \\(fp32 sums\\): matches at fp16 precision"
    file_matches "$T/$c.out" "on sample [a-z_0-9]+, as F16 devices \\(fp16 sums\\):"
    file_matches "$T/$c.out" "first tensor beyond its noise floor: '[a-z_]+' .*\\(ReduceMean"
    file_matches "$T/$c.out" "^VERDICT: FAIL  gate 3.*ReduceMean.*: precision breakdown"
    file_matches "$T/$c.out" "fp16 overflow in ReduceMean"
    file_lacks "$T/$c.out" "wrong"
    json "$T/$c.json" 'r["matches"]["outputs"][0]["verdict"]["verdict"] == "precision breakdown" and r["matches"]["bisect"]["first_divergent"]["op_type"] == "ReduceMean" and r["matches"]["bisect"]["triage"] == "precision breakdown" and r["matches"]["bisect"]["device_class"] == "F16 devices (fp16 sums)"'
    json "$T/$c.json" '[(d["accumulate"], d["verdict"]["verdict"]) for d in r["matches"]["outputs"][0]["device_classes"]] == [("fp16", "precision breakdown"), ("fp32", "matches at fp16 precision")] and r["matches"]["outputs"][0]["noise"]["fp16_sums_floor"]["max_abs"] > 0'
    # one class: --accumulate fp16 fails the same way, --accumulate fp32 passes
    run_named "${c}_16" 1 gate "$F/$c.onnx" --target litert-gpu --inputs "$F/${c}_inputs" --json "$T/${c}_16.json" --accumulate fp16
    file_matches "$T/${c}_16.out" "^GATE 3 matches: FAIL  output 'y': precision breakdown"
    file_lacks "$T/${c}_16.out" "F32_F16"
    file_matches "$T/${c}_16.out" "fp16 overflow in ReduceMean"
    json "$T/${c}_16.json" 'r["matches"]["bisect"]["first_divergent"]["op_type"] == "ReduceMean" and r["matches"]["outputs"][0]["device_classes"] is None'
    run_named "${c}_32" 0 gate "$F/$c.onnx" --target litert-gpu --inputs "$F/${c}_inputs" --accumulate fp32
    file_matches "$T/${c}_32.out" "matches at fp16 precision"
done
# the other accumulating kernels litert-gpu places (SUM, REDUCE_PROD, CONV_2D,
# TRANSPOSE_CONV): a running sum or product past 65504 fails F16 devices, named;
# F32_F16 devices match
for c in sum_cancel:ReduceSum:sum prod_overflow:ReduceProd:prod conv_cancel:Conv:conv \
         convt_cancel:ConvTranspose:convt; do
    IFS=: read -r n op node <<<"$c"
    run_named "$n" 1 gate "$F/$n.onnx" --target litert-gpu --inputs "$F/${n}_inputs" --min-coverage 0 --json "$T/$n.json"
    file_matches "$T/$n.out" "^GATE 3 matches: FAIL  output 'y': precision breakdown: F16 devices \\(fp16 sums\\)"
    file_matches "$T/$n.out" "^ +F32_F16 devices / use_f32_accum_for_fp16 \\(fp32 sums\\): matches"
    file_matches "$T/$n.out" "fp16 overflow in $op '$node'"
    file_lacks "$T/$n.out" "wrong"
    json "$T/$n.json" 'r["matches"]["bisect"]["first_divergent"]["op_type"] == "'"$op"'" and r["matches"]["bisect"]["device_class"] == "F16 devices (fp16 sums)"'
done
# --- a run that stops on an inf fp16 made: a precision breakdown, not an error -------------
# dynquant_overflow: ConvInteger's int32 accumulators (up to 459000) cast to float do not
# fit fp16; on litert-gpu (the Cast is placed there) and in the fp16 storage reference the
# Cast gives inf and the DynamicQuantizeLinear after it refuses it (no outputs); in fp32
# the model is exact. The verdict names the Cast and the node that stopped the run, the
# fp16 floor is "not measurable", and `convgate run` still refuses the infinity.
D=dynquant_overflow
run_named "$D" 1 gate "$F/$D.onnx" --target litert-gpu --inputs "$F/${D}_inputs" --min-coverage 0 --json "$T/$D.json"
file_matches "$T/$D.out" "^GATE 3 matches: FAIL  output 'y': precision breakdown: F16 devices \\(fp16 sums\\): fp16 overflow in Cast 'acc_cast' \\('acc_f' is inf where the fp64 reference is 247200; fp16 holds at most 65504\\), and the run stopped: node 'y_quant' \\(DynamicQuantizeLinear\\): input holds an infinity"
file_matches "$T/$D.out" "in fp32: matches \\(fp32 noise\\), [0-9.]+x the fp32 floor: fp16 storage"
file_matches "$T/$D.out" "^ +F32_F16 devices / use_f32_accum_for_fp16 \\(fp32 sums\\): precision breakdown"
file_matches "$T/$D.out" "fp16 storage: not measurable \\(the fp16 storage reference stopped on sample 0: fp16 overflow in Cast 'acc_cast'"
file_matches "$T/$D.out" "bisect could not run: the target path stopped on sample 0 before giving its outputs.*Cast 'acc_cast'"
file_lacks "$T/$D.out" "wrong|not judged"
file_lacks "$T/$D.err" "."
json "$T/$D.json" 'r["matches"]["state"] == "fail" and r["matches"]["outputs"][0]["max_abs"] == "inf" and r["matches"]["outputs"][0]["noise"]["error"]["max_abs"] == "inf"'
json "$T/$D.json" '(lambda v: v["verdict"] == "precision breakdown" and v["error"] == "inf" and v["ratio"] == "inf" and v["stopped"]["node"] == "acc_cast" and v["stopped"]["op_type"] == "Cast" and v["stopped"]["tensor"] == "acc_f" and v["stopped"]["value"] == "inf" and v["stopped"]["fp64"] == 247200 and v["stopped"]["overflow"] is True and v["stopped"]["nonfinite"] == 32 and v["stopped"]["elements"] == 32 and "y_quant" in v["stopped"]["stopped_by"] and v["stopped"]["sample"] == 0 and v["stopped"]["samples"] == 1)(r["matches"]["outputs"][0]["verdict"])'
json "$T/$D.json" '[(d["verdict"]["verdict"], d["verdict"]["stopped"]["node"]) for d in r["matches"]["outputs"][0]["device_classes"]] == [("precision breakdown", "acc_cast")] * 2'
json "$T/$D.json" '(lambda n: n["fp16_floor"] is None and n["fp16_sums_floor"] is None and n["fp16_floor_stop"]["node"] == "acc_cast" and n["fp16_floor_stop"]["fp64"] == 247200 and n["fp32_floor"]["max_abs"] > 0)(r["matches"]["outputs"][0]["noise"])'
json "$T/$D.json" '"acc_cast" in r["matches"]["bisect_error"]'
# compare and verify share the judge: the same verdict
run_named "${D}_cmp" 1 compare "$F/$D.onnx" --target litert-gpu --inputs "$F/${D}_inputs"
file_matches "$T/${D}_cmp.out" "precision breakdown: F16 devices \\(fp16 sums\\): fp16 overflow in Cast 'acc_cast'"
run_named "${D}_dump" 0 dump-ref "$F/$D.onnx" --inputs "$F/${D}_inputs" -o "$T/${D}_golden"
run_named "${D}_verify" 1 verify "$F/$D.onnx" --golden "$T/${D}_golden" --target litert-gpu
file_matches "$T/${D}_verify.out" "precision breakdown: F16 devices \\(fp16 sums\\): non-finite value in Cast 'acc_cast' \\('acc_f' is inf \\(the fp64 reference was not run\\)\\)"
file_lacks "$T/${D}_verify.out" "dumped before the device classes"
# on xnnpack (fp32) nothing overflows; the reference runtime still refuses an infinity
if [ "$xnn" = 1 ]; then
    run_named "${D}_xnn" 0 gate "$F/$D.onnx" --target xnnpack --inputs "$F/${D}_inputs" --min-coverage 0
fi
run_named "${D}_run" 1 run "$F/$D.onnx" -i "x=$F/${D}_inputs/sample_0/x.npy" --target litert-gpu
file_matches "$T/${D}_run.err" "node 'y_quant' \\(DynamicQuantizeLinear\\): input holds an infinity at 0 \\(no quantization range\\)"

# the LayerNorm's variance overflows, not its mean (whose fp16 sum is within its floor)
file_matches "$T/layernorm_variance.out" "fp16 overflow in ReduceMean 'variance'"
json "$T/layernorm_variance.json" 'r["matches"]["bisect"]["first_divergent"]["node"] == "variance" and r["matches"]["bisect"]["last_matching"]["tensor"] == "centered_sq"'
# the Pow's rounding is fp16 storage, within its floor
file_matches "$T/rmsnorm_pow.out" "last matching tensor: 'x_sq' from node 'square' \\(Pow"
json "$T/rmsnorm_pow.json" 'r["matches"]["bisect"]["last_matching"]["tensor"] == "x_sq" and float(r["matches"]["bisect"]["last_matching"]["max_abs"]) > 1'
# every metric in the JSON, inf spelled out (the overflowed sum)
json "$T/rmsnorm_overflow.json" 'r["matches"]["bisect"]["first_divergent"]["max_abs"] == "inf" and r["matches"]["bisect"]["first_divergent"]["inf_target"] == 2'
json "$T/rmsnorm_overflow.json" 'all(k in r["matches"]["outputs"][0] for k in ("max_abs", "mean_abs", "max_rel", "rmse", "nmse", "cosine", "pearson", "max_ulp", "hist", "worst", "verdict", "noise", "judged_by", "within_tolerance", "device_classes"))'
json "$T/rmsnorm_overflow.json" 'float(r["matches"]["outputs"][0]["verdict"]["ratio"]) > 100 and r["matches"]["outputs"][0]["noise"]["fp16_floor"]["max_abs"] > 0'
# the LayerNorm of values ~300: fp16 storage (of a large-mean input) breaks it on
# both classes, at the centering Sub; no sum overflows (its variance is ~0.09)
run_named layernorm_precision 1 gate "$F/layernorm_precision.onnx" --target litert-gpu --inputs "$F/layernorm_precision_inputs" --json "$T/layernorm_precision.json"
file_matches "$T/layernorm_precision.out" "^GATE 3 matches: FAIL  output 'y': precision breakdown"
file_matches "$T/layernorm_precision.out" "on sample [a-z_0-9]+, as F32_F16 devices"
file_matches "$T/layernorm_precision.out" "precision breakdown: fp16 precision lost in Sub 'center'; in fp32 0x the fp32 floor: fp16 storage"
file_lacks "$T/layernorm_precision.out" "wrong"
json "$T/layernorm_precision.json" '[d["verdict"]["verdict"] for d in r["matches"]["outputs"][0]["device_classes"]] == ["precision breakdown"] * 2 and r["matches"]["bisect"]["first_divergent"]["op_type"] == "Sub"'
run_named layernorm_16 1 gate "$F/layernorm_precision.onnx" --target litert-gpu --inputs "$F/layernorm_precision_inputs" --accumulate fp16
file_matches "$T/layernorm_16.out" "last matching tensor: 'mean' from node 'mean' \\(ReduceMean"

# --- the wrong-on-purpose rewrite: a wrong result ------------------------------------------
run_named wrong 1 bisect "$B/swish_original.onnx" --against "$B/swish_rewritten.onnx" --json
json "$T/wrong.out" 'r["verdict"] == "wrong result" and r["first_divergent"]["node"] == "silu_sig" and float(r["first_divergent"]["judgement"]["ratio"]) > 1e4'
mkdir -p "$T/rw"
"$CG" run "$B/swish_rewritten.onnx" -i "x=$SRC/tests/data/noise/swish_inputs/s1/x.npy" -o "$T/rw/s1" >/dev/null || fail "run the rewrite"
run_named wrongc 1 compare "$B/swish_original.onnx" --inputs "$SRC/tests/data/noise/swish_inputs" --outputs-from "$T/rw"
file_matches "$T/wrongc.out" "FAIL \\(wrong result\\)"

# --- the example CNN: within fp32 noise on xnnpack, at fp16 precision on litert-gpu ------------
if [ "$xnn" = 1 ]; then
    run_named cnn 0 gate "$SRC/examples/tiny_cnn.onnx" --target xnnpack --inputs "$SRC/examples/tiny_cnn_inputs"
    file_matches "$T/cnn.out" "matches \\(fp32 noise\\): [0-9.]+x the fp32 noise floor"
fi
# (--min-coverage 0: gate 3 is judged whatever share litert-gpu takes)
run_named cnn16 0 gate "$SRC/examples/tiny_cnn.onnx" --target litert-gpu --inputs "$SRC/examples/tiny_cnn_inputs" --min-coverage 0
# both device classes, each against the floor of how it sums
file_matches "$T/cnn16.out" "matches at fp16 precision: F16 devices \\(fp16 sums\\): [0-9.e-]+x the fp16-sums floor"
file_matches "$T/cnn16.out" "^ +F32_F16 devices / use_f32_accum_for_fp16 \\(fp32 sums\\): matches at fp16 precision, [0-9.e-]+x the fp16 storage floor"

# --- gate 3 runs on the GPU what gate 2 placed there: the partition rules are not applied again
# to the ONNX graph, where a shape subgraph the converter folds (9 nodes) outranked the 4-op head
run_named folded 0 gate "$F/folded_chain.onnx" --target litert-gpu --inputs "$F/folded_chain_inputs" --min-coverage 0
file_matches "$T/folded.out" "4/6 nodes on litert-gpu"
file_matches "$T/folded.out" "^ +F16 devices \\(fp16 sums\\): matches at fp16 precision"
file_lacks "$T/folded.out" "matches \\(fp32 noise\\)"

# --- near-tied detections that swap places on an fp16 target --------------------------------
run_named det 1 gate "$F/detect_tie.onnx" --target litert-gpu --inputs "$F/detect_tie_inputs" --min-coverage 0
file_matches "$T/det.out" "output 'boxes' precision breakdown"
file_lacks "$T/det.out" "wrong"
run_named detect 0 gate "$F/detect_tie.onnx" --target litert-gpu --inputs "$F/detect_tie_inputs" --min-coverage 0 --task detect --json "$T/detect.json"
file_matches "$T/detect.out" "6 reference boxes, 6 target boxes, 6 matched .*0 missing, 0 extra"
json "$T/detect.json" 'r["matches"]["task"]["detect"]["matched"] == 6 and r["matches"]["task"]["detect"]["pass"] and r["matches"]["outputs"][0]["noise"]["detection"] and float(r["matches"]["outputs"][0]["max_abs"]) >= 20'
# each device class judged by detection too (the matcher of the verdict), so its lines agree
# with the verdict: F16 devices against the fp16-sums floor of the matched pairs, F32_F16 devices
# (the rerun with fp32 sums) against the fp16 storage floor; no elementwise "breakdown" under it
file_matches "$T/detect.out" "^ +detections: matches at fp16 precision: F16 devices \\(fp16 sums\\): scores: "
file_matches "$T/detect.out" "^ +F16 devices \\(fp16 sums\\): matches at fp16 precision: scores: [0-9.e-]+x the fp16-sums floor"
file_matches "$T/detect.out" "^ +F32_F16 devices / use_f32_accum_for_fp16 \\(fp32 sums\\): matches at fp16 precision: scores: [0-9.e-]+x the fp16 storage floor"
file_lacks "$T/detect.out" "precision breakdown"
json "$T/detect.json" '[c["verdict"]["verdict"] for c in r["matches"]["task"]["detect"]["device_classes"]] == ["matches at fp16 precision"] * 2 and all([c["verdict"]["verdict"] for c in out["device_classes"]] == ["matches at fp16 precision"] * 2 for out in r["matches"]["outputs"])'
# a detector whose box 0 is scored by a ReduceSum that overflows with fp16 sums: F16 devices
# fail by detection (a precision breakdown, gone with fp32 accumulation), F32_F16 devices match
run_named detsum 1 gate "$F/detect_sum.onnx" --target litert-gpu --inputs "$F/detect_sum_inputs" --min-coverage 0 --task detect --json "$T/detsum.json"
file_matches "$T/detsum.out" "^GATE 3 matches: FAIL  output 'boxes': precision breakdown: F16 devices \\(fp16 sums\\): scores: max \\|d\\| 0.269"
file_matches "$T/detsum.out" "^ +F16 devices \\(fp16 sums\\): precision breakdown: scores: .*with fp32 accumulation"
file_matches "$T/detsum.out" "^ +F32_F16 devices / use_f32_accum_for_fp16 \\(fp32 sums\\): matches at fp16 precision: scores: "
file_matches "$T/detsum.out" "on sample sample_0, as F16 devices \\(fp16 sums\\):"
file_matches "$T/detsum.out" "verdict: precision breakdown: fp16 overflow in ReduceSum 'sum'"
file_lacks "$T/detsum.out" "wrong"
json "$T/detsum.json" '[c["verdict"]["verdict"] for c in r["matches"]["task"]["detect"]["device_classes"]] == ["precision breakdown", "matches at fp16 precision"] and [c["verdict"]["verdict"] for c in r["matches"]["outputs"][1]["device_classes"]] == ["precision breakdown", "matches at fp16 precision"]'
run_named detsum32 0 gate "$F/detect_sum.onnx" --target litert-gpu --inputs "$F/detect_sum_inputs" --min-coverage 0 --task detect --accumulate fp32
run_named detsum16 1 gate "$F/detect_sum.onnx" --target litert-gpu --inputs "$F/detect_sum_inputs" --min-coverage 0 --task detect --accumulate fp16
file_matches "$T/detsum16.out" "^ +detections: precision breakdown: scores: .*fp16 storage and sums alone"
run_named detectc 0 compare "$F/detect_tie.onnx" --target litert-gpu --inputs "$F/detect_tie_inputs" --task detect:boxes,scores,labels
file_matches "$T/detectc.out" "detections: matches at fp16 precision"
run_named detectbad 2 compare "$F/detect_tie.onnx" --target litert-gpu --inputs "$F/detect_tie_inputs" --task detect:boxes,nosuch
file_matches "$T/detectbad.err" "no output 'nosuch'"
run_named detectgolden 2 gate "$F/detect_tie.onnx" --target litert-gpu --golden "$T/nowhere" --task detect

# --- a segmenter whose classes are near-tied per pixel: judged against what a correct run changes
# (the fp16 target changes many pixels' class, as fp16 storage alone does, each within the fp16 noise)
run_named seg 0 compare "$F/segment_tie.onnx" --target litert-gpu --inputs "$F/segment_tie_inputs" --task segment --json
json "$T/seg.out" 'o["target"]["flips"] > 10 and o["fp16_storage"]["flips"] > 10 and o["fp32_reference"]["flips"] < o["target"]["flips"] and o["within_noise"] and float(o["target"]["max_margin"]) <= float(o["limit"])'
json "$T/seg.out" 'o["judged"] and o["pass"] and o["correct_flips"] == o["fp16_storage"]["flips"] and o["allowed"] == 2 * o["correct_flips"] + 3 and o["decisions"] == 256'
run_named segg 0 gate "$F/segment_tie.onnx" --target litert-gpu --inputs "$F/segment_tie_inputs" --task segment
file_matches "$T/segg.out" "against float64, pixels whose class changed: target [1-9][0-9]*; a correct run: fp32 reference [0-9]+, fp16 storage [1-9][0-9]*; mean IoU: .* within the noise"
# one pixel's class forced far from any tie: beyond the noise (and elementwise a wrong result)
mkdir -p "$T/seg_in/s" "$T/seg_out/s"
cp "$F/segment_tie_inputs/sample_0/x.npy" "$T/seg_in/s/x.npy"
"$CG" run "$F/segment_tie.onnx" -i "x=$T/seg_in/s/x.npy" -o "$T/seg_out/s" >/dev/null || fail "run segment_tie"
$PY - "$T/seg_out/s/logits.npy" <<'PYEOF'
import sys
import numpy as np
y = np.load(sys.argv[1]); y[0, 2, 3, 3] = 10.0; np.save(sys.argv[1], y)
PYEOF
run_named segbad 1 compare "$F/segment_tie.onnx" --inputs "$T/seg_in" --outputs-from "$T/seg_out" --task segment
file_matches "$T/segbad.out" "FAIL \\(wrong result\\)"
file_matches "$T/segbad.out" "the target's largest reference gap [0-9.]+ is beyond the noise"
file_matches "$T/segbad.out" "task verdict: FAIL: .*; a change is beyond the noise"
# classes 0 and 1 swapped in every pixel, as an fp16 target made them: every
# value within the fp16 noise, every pixel's class changed (fp16 storage
# changes a third): the task fails the output, a wrong result
mkdir -p "$T/swap_out/s"
"$CG" run "$F/segment_tie.onnx" -i "x=$T/seg_in/s/x.npy" -o "$T/swap_out/s" >/dev/null || fail "run segment_tie"
$PY - "$T/swap_out/s/logits.npy" <<'PYEOF'
import sys
import numpy as np
y = np.load(sys.argv[1]); y[:, [0, 1]] = y[:, [1, 0]]; np.save(sys.argv[1], y)
PYEOF
run_named segswap 1 compare "$F/segment_tie.onnx" --target litert-gpu --inputs "$T/seg_in" --outputs-from "$T/swap_out" --task segment --json
json "$T/segswap.out" 'o["judged"] and not o["pass"] and o["within_noise"] and o["target"]["flips"] == 256 and o["target"]["flips"] > o["allowed"] and float(r["outputs"][0]["verdict"]["ratio"]) < 1 and r["outputs"][0]["verdict"]["verdict"] == "wrong result" and not r["pass"]'
run_named segswapt 1 compare "$F/segment_tie.onnx" --target litert-gpu --inputs "$T/seg_in" --outputs-from "$T/swap_out" --task segment
file_matches "$T/segswapt.out" "task segment: 256 of 256 pixels change class against float64, a correct fp16 run [0-9]+ \\(allowed [0-9]+\\)"
file_matches "$T/segswapt.out" "task verdict: FAIL: 256 changed"
# the same outputs without --task: elementwise they pass at fp16 precision
run_named segswapn 0 compare "$F/segment_tie.onnx" --target litert-gpu --inputs "$T/seg_in" --outputs-from "$T/swap_out"

# --- an fp16 conversion against its source ------------------------------------------------------
run_named conv 0 bisect "$SRC/examples/tiny_cnn.onnx" --against "$F/tiny_cnn_fp16.onnx" --inputs "$SRC/examples/tiny_cnn_inputs"
file_matches "$T/conv.out" "18 compared, 0 beyond the noise floor"
file_lacks "$T/conv.out" "DTYPE MISMATCH"
run_named convj 0 bisect "$SRC/examples/tiny_cnn.onnx" --against "$F/tiny_cnn_fp16.onnx" --inputs "$SRC/examples/tiny_cnn_inputs" --json
json "$T/convj.out" 'r["divergent"] == 0 and r["last_matching"]["dtype_mismatch"] is False'
run_named ln16 1 bisect "$F/layernorm_precision.onnx" --against "$F/layernorm_precision_fp16.onnx" --inputs "$F/layernorm_precision_inputs" --json
json "$T/ln16.out" 'r["verdict"] == "precision breakdown" and r["triage"] == "precision breakdown" and r["first_divergent"]["precision"] == "fp16" and not r["first_divergent"]["dtype_mismatch"]'
run_named ln16t 1 bisect "$F/layernorm_precision.onnx" --against "$F/layernorm_precision_fp16.onnx" --inputs "$F/layernorm_precision_inputs"
file_matches "$T/ln16t.out" "triage: precision breakdown \\(rerun in float64"
file_lacks "$T/ln16t.out" "wrong"

# --- a golden set and outputs made elsewhere in fp16 (a device run) -----------------------------
# the floors are recorded with the golden set; the emulation of the same
# placement tells a precision breakdown from a wrong result
"$CG" dump-ref "$SRC/examples/rmsnorm_fp16.onnx" --inputs "$SRC/examples/rmsnorm_fp16_inputs" -o "$T/g_rms" >/dev/null || fail "dump-ref rmsnorm"
mkdir -p "$T/cnn_in/a" "$T/cnn_in/b"
cp "$SRC/examples/tiny_cnn_inputs/image_0.npy" "$T/cnn_in/a/image.npy"
cp "$SRC/examples/tiny_cnn_inputs/image_1.npy" "$T/cnn_in/b/image.npy"
"$CG" dump-ref "$SRC/examples/tiny_cnn.onnx" --inputs "$T/cnn_in" -o "$T/g_cnn" >/dev/null || fail "dump-ref cnn"
for s in sample_0 sample_1; do
    "$CG" run "$SRC/examples/rmsnorm_fp16.onnx" --target litert-gpu --accumulate fp16 -i "x=$SRC/examples/rmsnorm_fp16_inputs/$s/x.npy" -o "$T/dev_rms/$s" >/dev/null || fail "run rmsnorm $s"
done
for s in a b; do
    "$CG" run "$SRC/examples/tiny_cnn.onnx" --target litert-gpu -i "image=$T/cnn_in/$s/image.npy" -o "$T/dev_cnn/$s" >/dev/null || fail "run cnn $s"
done
run_named vrms 1 verify "$SRC/examples/rmsnorm_fp16.onnx" --golden "$T/g_rms" --outputs-from "$T/dev_rms" --target litert-gpu --accumulate fp16
file_matches "$T/vrms.out" "precision breakdown: .*the fp16 emulation of this placement breaks down too"
file_lacks "$T/vrms.out" "wrong"
run_named vcnn 0 verify "$SRC/examples/tiny_cnn.onnx" --golden "$T/g_cnn" --outputs-from "$T/dev_cnn" --target litert-gpu
file_matches "$T/vcnn.out" "matches at fp16 precision"
# a device whose output is off by 0.5 somewhere: the emulation matches, so it is wrong
$PY - "$T/dev_cnn/b/logits.npy" <<'PYEOF'
import sys
import numpy as np
x = np.load(sys.argv[1]); x.flat[3] += 0.5; np.save(sys.argv[1], x)
PYEOF
run_named vbad 1 verify "$SRC/examples/tiny_cnn.onnx" --golden "$T/g_cnn" --outputs-from "$T/dev_cnn" --target litert-gpu
file_matches "$T/vbad.out" "wrong result: .*the fp16 emulation of this placement matches"

# --- the paths that judge one device class say which, and why -----------------------------------
R=$F/rmsnorm_overflow
# an explicit tolerance: compared with the F32_F16 class's run; --accumulate fp16: the F16 class's
run_named tol 0 compare "$R.onnx" --target litert-gpu --inputs "${R}_inputs" --atol 1e-2 --rtol 1e-2 --json
json "$T/tol.out" '"explicit tolerance" in r["note"] and "judged as F32_F16 devices" in r["note"] and r["pass"]'
run_named tol16 1 compare "$R.onnx" --target litert-gpu --inputs "${R}_inputs" --atol 1e-2 --rtol 1e-2 --accumulate fp16
file_lacks "$T/tol16.out" "^note:"
# a tolerance on one output beside the floors (a --tol file): the same class's run
printf '{"outputs": {"y": {"atol": 0.01, "rtol": 0.01}}}\n' >"$T/tol.json"
run_named tolf 0 compare "$F/boundary.onnx" --target litert-gpu --random 2 --tol "$T/tol.json" --json
json "$T/tolf.out" '"explicit tolerance" in r["note"] and "judged as F32_F16 devices" in r["note"] and r["pass"] and [o["judged_by"] for o in r["outputs"]] == ["noise floor", "tolerance"]'

# compare --against: the other side runs once and is read back: the F32_F16 class, said
run_named agst 0 compare "$R.onnx" --against "$R.onnx" --target litert-gpu --inputs "${R}_inputs"
file_matches "$T/agst.out" "^note: outputs read back \\(one device's, not rerun\\) are judged as F32_F16 devices .*--accumulate fp16 judges them as F16 devices"
run_named agst16 1 compare "$R.onnx" --against "$R.onnx" --target litert-gpu --inputs "${R}_inputs" --accumulate fp16
file_matches "$T/agst16.out" "precision breakdown: .*fp16 storage and sums alone"
# a golden set dumped before the device classes (no fp16_sums_floor): said
"$CG" dump-ref "$R.onnx" --inputs "${R}_inputs" -o "$T/g_old" >/dev/null || fail "dump-ref for the old set"
$PY - "$T/g_old/manifest.json" <<'PYEOF'
import json, sys
m = json.load(open(sys.argv[1]))
def strip(o):
    if isinstance(o, dict):
        o.pop("fp16_sums_floor", None)
        [strip(v) for v in o.values()]
    elif isinstance(o, list):
        [strip(v) for v in o]
strip(m)
json.dump(m, open(sys.argv[1], "w"))
PYEOF
run_named gold 1 verify "$R.onnx" --golden "$T/g_old" --target litert-gpu
file_matches "$T/gold.out" "^note: the golden set records no fp16-sums floor .*F16 devices \\(fp16 sums\\) are judged against the fp16 storage floor"
file_matches "$T/gold.out" "F16 devices \\(fp16 sums\\): precision breakdown, [0-9.e+]+x the fp16 storage floor"


# --- gate 3 in phases (--schedule phased: the float32 reference, the target path and the
# float64 reference each over every sample, one after another) gives the report the overlapped
# schedule gives, on the cases with decision values (segmenter, detector), an fp16 overflow
# that stops the run, and a precision breakdown bisected (gate 2's measured times aside)
for c in "segment_tie --task segment" "detect_tie --task detect --min-coverage 0" "rmsnorm_overflow" "layernorm_precision"; do
    n=${c%% *}
    extra=""
    [ "$n" != "$c" ] && extra=${c#* }
    for sched in overlap phased; do
        # shellcheck disable=SC2086
        "$bin" gate "$F/$n.onnx" --target litert-gpu --inputs "$F/${n}_inputs" $extra --schedule "$sched" --json "$T/sch_${n}_$sched.json" >"$T/sch_${n}_$sched.out" 2>&1
        echo $? >"$T/sch_${n}_$sched.rc"
        grep -vE '"((reference|mixed)_ms|time_coverage)"' "$T/sch_${n}_$sched.json" >"$T/sch_${n}_$sched.cmp" 2>/dev/null
    done
    [ -s "$T/sch_${n}_phased.cmp" ] || fail "phased $n: no JSON report ($(head -3 "$T/sch_${n}_phased.out"))"
    cmp -s "$T/sch_${n}_overlap.rc" "$T/sch_${n}_phased.rc" || fail "phased $n: exit $(cat "$T/sch_${n}_phased.rc"), overlapped $(cat "$T/sch_${n}_overlap.rc")"
    cmp -s "$T/sch_${n}_overlap.cmp" "$T/sch_${n}_phased.cmp" || { fail "phased $n: the JSON report differs from the overlapped one"; diff "$T/sch_${n}_overlap.cmp" "$T/sch_${n}_phased.cmp" | head -10 >&2; }
done

finish
