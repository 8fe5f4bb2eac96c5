#!/usr/bin/env bash
# Gate 2 ("runs where intended") and assign on the cases of tests/data/gate2
# (tools/make_gate2_cases.py):
#  - the model is placed with the user's --inputs: a model that fails on
#    random inputs is placed on inputs it runs on; where it fails on the
#    inputs (random or given) the residency is "unknown" with the reason,
#    never "0/N nodes", in text and JSON, for gate and assign; gate 3 and
#    run --target lower, type and place it on those inputs too;
#  - gate 2 passes only when the targets take the majority of the reference
#    time and the mixed estimate beats the CPU alone: nothing on nnapi, a
#    minority on nnapi, and a majority undone by its boundary copy all FAIL
#    with the reason; --min-coverage sets another bar; --require-full stays
#    the strict form;
#  - dynamic dims: the sizes used are stated (DIMS in the verdict block,
#    "dims" in JSON, "Dims:" in assign); a dim the model gives no hint for is
#    refused (exit 2) naming the input, the dim and the flags, unless
#    --accept-default-dims;
#  - a .tflite: gate 2 places and counts its TFLite operators as assign does.
# Usage: gate2_cases.sh CONVGATE SOURCE_DIR
set -u
bin=${1:?convgate binary}
SRC=${2:?source dir}
. "$(dirname "${BASH_SOURCE[0]}")/lib/harness.bash"
T=$tmp
D=$SRC/tests/data/gate2
EX=$SRC/examples

# --- placed with the user's inputs; unknown where the model fails on them ---
run_named topk_random 1 gate "$D/topk_k.onnx" --target nnapi --json "$T/topk_random.json"
file_matches "$T/topk_random.out" '^GATE 2 runs where intended: FAIL  residency unknown' "unknown, not 0/N"
file_matches "$T/topk_random.out" "fails on the random sample 'random-0'.*k = -2.*--inputs DIR" "the reason and the fix"
file_lacks "$T/topk_random.out" '0/[0-9]+ nodes' "no node count without a placement"
file_matches "$T/topk_random.json" '"residency": "unknown"' "json residency unknown"
file_matches "$T/topk_random.json" '"nodes_on_target": null' "json count null"
run_named topk_good 1 gate "$D/topk_k.onnx" --target nnapi --inputs "$D/topk_k_inputs/good"
file_matches "$T/topk_good.out" '^GATE 2 runs where intended: FAIL  [1-9][0-9]*/7 nodes on nnapi' "placed on the given inputs"
run_named topk_bad 1 gate "$D/topk_k.onnx" --target nnapi --inputs "$D/topk_k_inputs/bad"
file_matches "$T/topk_bad.out" "residency unknown: the model itself fails on the given sample 'bad'" "unknown on the given inputs"
run_named assign_random 2 assign "$D/topk_k.onnx" --target nnapi
file_matches "$T/assign_random.out" '^Residency: unknown' "assign: unknown"
file_matches "$T/assign_random.err" 'residency unknown.*--inputs DIR' "assign: the fix"
file_lacks "$T/assign_random.out" '0/[0-9]+ nodes' "assign: no node count"
run_named assign_good 0 assign "$D/topk_k.onnx" --target nnapi --inputs "$D/topk_k_inputs/good"
file_matches "$T/assign_good.out" '^[1-9][0-9]*/7 nodes on nnapi' "assign placed on the given inputs"
run_named assign_bad 2 assign "$D/topk_k.onnx" --target nnapi --inputs "$D/topk_k_inputs/bad" --json
file_matches "$T/assign_bad.out" '"residency": "unknown"' "assign json unknown"
file_matches "$T/assign_bad.out" "\"inputs\": \"sample 'bad'\"" "assign json names the sample"
run_named assign_dims 2 assign "$D/topk_k.onnx" --target nnapi --inputs "$D/topk_k_inputs/good" --dims x=1
file_matches "$T/assign_dims.err" '--inputs fixes the shapes' "--inputs with --dims refused"
# the same through the ONNX->TFLite lowering (litert-gpu): lowered and typed on the given inputs
run_named lit_random 2 assign "$D/topk_k.onnx" --target litert-gpu
file_matches "$T/lit_random.out" '^Residency: unknown' "litert: unknown on random inputs"
run_named lit_good 0 assign "$D/topk_k.onnx" --target litert-gpu --inputs "$D/topk_k_inputs/good"
file_matches "$T/lit_good.out" '^2/7 nodes on litert-gpu' "litert: placed on the given inputs"
file_lacks "$T/lit_good.out" 'only declared shapes are known' "litert: the lowering has the shapes of the given inputs"
run_named lit_gate 1 gate "$D/topk_k.onnx" --target litert-gpu --inputs "$D/topk_k_inputs/good" --min-coverage 1
file_matches "$T/lit_gate.out" '^GATE 2 runs where intended: FAIL  2/7 nodes on litert-gpu' "litert gate: placed on the given inputs"
# gate 3's target path is lowered, typed and placed on the given inputs too
# (on random ones the model fails and the path could not be built)
run_named lit_gate3 0 gate "$D/topk_k.onnx" --target litert-gpu --inputs "$D/topk_k_inputs/good" --min-coverage 0
file_matches "$T/lit_gate3.out" '^GATE 3 matches: PASS' "litert gate 3: runs on the given inputs"
run_named lit_run 0 run "$D/topk_k.onnx" --target litert-gpu --inputs "$D/topk_k_inputs/good"
file_matches "$T/lit_run.out" '2/7 nodes on litert-gpu' "litert run: the target path placed on the given inputs"

# --- the bar: majority of the reference time, and the mixed estimate beats the CPU ---
run_named none 1 gate "$D/cpu_only.onnx" --target nnapi --random 1 --json "$T/none.json"
file_matches "$T/none.out" 'GATE 2 runs where intended: FAIL  0/2 nodes on nnapi' "nothing on nnapi"
file_matches "$T/none.out" 'VERDICT: FAIL  gate 2 .*nnapi takes 0.0% of the reference time \(0/2 nodes\), below the majority, over 50%, that running where intended needs' "why it fails"
file_matches "$T/none.json" '"detail": "nnapi takes 0.0% of the reference time \(0/2 nodes\), below the majority' "same words in JSON"
run_named minority 1 gate "$D/cpu_heavy.onnx" --target nnapi --random 1
file_matches "$T/minority.out" 'VERDICT: FAIL  gate 2 .*nnapi takes [0-9.]+% of the reference time \(4/5 nodes\), below the majority' "a minority fails"
run_named minority_bar 0 gate "$EX/tiny_cnn.onnx" --target coreml-mlprogram --random 1 --min-coverage 0.9
file_matches "$T/minority_bar.out" 'coreml-mlprogram takes the share --min-coverage asks of the reference time and the mixed latency estimate beats the CPU alone' "--min-coverage sets another bar"
run_named strict_bar 1 gate "$EX/tiny_cnn.onnx" --target coreml-mlprogram --random 1 --min-coverage 1
file_matches "$T/strict_bar.out" 'VERDICT: FAIL  gate 2 .*coreml-mlprogram takes [0-9.]+% of the reference time \(13/14 nodes\), below --min-coverage 100.0%' "a higher bar"
run_named copies 1 gate "$D/copy_bound.onnx" --target nnapi --random 1 --json "$T/copies.json"
file_matches "$T/copies.out" 'GATE 2 runs where intended: FAIL  6/7 nodes on nnapi' "the majority of nodes on nnapi"
file_matches "$T/copies.out" 'VERDICT: FAIL  gate 2 .*the mixed latency estimate .* does not beat the CPU alone' "the boundary copy undoes it"
file_matches "$T/copies.json" '"mixed_ms": [0-9]' "json mixed estimate"
run_named copies_bar 1 gate "$D/copy_bound.onnx" --target nnapi --random 1 --min-coverage 0.1
file_matches "$T/copies_bar.out" 'does not beat the CPU alone' "--min-coverage does not waive the latency bar"
run_named full 1 gate "$D/copy_bound.onnx" --target nnapi --random 1 --require-full
file_matches "$T/full.out" 'VERDICT: FAIL  gate 2 .*--require-full: 1 node fall' "--require-full stays strict"
run_named both 2 gate "$D/copy_bound.onnx" --target nnapi --require-full --min-coverage 0.5
run_named badbar 2 gate "$D/copy_bound.onnx" --target nnapi --min-coverage 1.5
file_matches "$T/badbar.err" 'in \[0, 1\]' "--min-coverage range"
run_named pass 0 gate "$EX/tiny_cnn.onnx" --target xnnpack --inputs "$EX/tiny_cnn_inputs" --json "$T/pass.json"
file_matches "$T/pass.out" 'xnnpack takes the majority of the reference time and the mixed latency estimate beats the CPU alone' "a pass says why"
file_matches "$T/pass.json" '"coverage_bar": "majority"' "json bar"

# --- dynamic dims: stated in the verdict block, never guessed unless accepted ---
run_named seq_guess 2 gate "$D/dyn_seq.onnx" --target nnapi
file_matches "$T/seq_guess.err" "input 'tokens' dim 1 \('seq'\) has no size.*--dim seq=N, --shape tokens=DxD\.\.\. or --inputs DIR, or accept 1 with --accept-default-dims" "gate refuses to guess, naming the dim and the flags"
run_named seq_dim 1 gate "$D/dyn_seq.onnx" --target nnapi --dim seq=16 --json "$T/seq_dim.json"
file_matches "$T/seq_dim.out" '^DIMS: batch=1 \(batch default\), seq=16 \(--dim/--shape\)$' "the sizes stated in the verdict block"
file_matches "$T/seq_dim.json" '"source": "batch default"' "json dims"
run_named seq_accept 1 gate "$D/dyn_seq.onnx" --target nnapi --accept-default-dims
file_matches "$T/seq_accept.out" '^DIMS: batch=1 \(batch default\), seq=1 \(default, a guess\)$' "an accepted guess is stated as one"
run_named seq_assign 2 assign "$D/dyn_seq.onnx" --target nnapi
file_matches "$T/seq_assign.err" "input 'tokens' dim 1 \('seq'\) has no size" "assign refuses to guess"
run_named unnamed_assign 2 assign "$D/dyn_unnamed.onnx" --target nnapi
file_matches "$T/unnamed_assign.err" "input 'audio' dim 1 \(unnamed\) has no size.*--shape audio=DxD" "an unnamed dim: --shape"
run_named unnamed_shape 0 assign "$D/dyn_unnamed.onnx" --target nnapi --shape audio=1x512 --json
file_matches "$T/unnamed_shape.out" '"value": 512' "assign json dims"
run_named unnamed_text 0 assign "$D/dyn_unnamed.onnx" --target nnapi --shape audio=1x512
file_matches "$T/unnamed_text.out" "^Dims: 'audio' axis 1=512 \(--dim/--shape\)" "assign states the dims"
file_matches "$T/pass.out" '^DIMS: batch=1 \(the inputs\)$' "sizes from the given inputs"
run_named cnn_batch 0 assign "$EX/tiny_cnn.onnx" --target xnnpack
file_matches "$T/cnn_batch.out" '^Dims: batch=1 \(batch default\)' "a leading batch dim takes 1, stated"

# --- a .tflite: gate 2 counts its TFLite operators, as assign does (#10) ---
TF=$SRC/tests/data/tflite/models
run_named tfl_assign 0 assign "$TF/kws_if.tflite" --target litert-gpu
file_matches "$T/tfl_assign.out" '^6/8 TFLite ops on litert-gpu, 2 on CPU' "assign on the .tflite"
run_named tfl_gate 1 gate "$TF/kws_if.tflite" --target litert-gpu --min-coverage 1 --json "$T/tfl_gate.json" \
    --html "$T/tfl.html" --model-explorer "$T/tfl_me"
file_matches "$T/tfl_gate.out" '^GATE 2 runs where intended: [A-Z]+  6/8 TFLite ops on litert-gpu, 2 on CPU' "gate counts the same TFLite ops"
file_matches "$T/tfl_gate.json" '"unit": "tflite_ops"' "json unit"
[ -s "$T/tfl.html" ] || fail "the HTML view of a .tflite gate"
run_named tfl_cnn 0 gate "$TF/cnn.tflite" --target litert-gpu
file_matches "$T/tfl_cnn.out" '^GATE 2 runs where intended: PASS  6/6 TFLite ops on litert-gpu, 0 on CPU, 1 partition' "a resident .tflite"

finish
