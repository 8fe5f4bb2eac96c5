#!/usr/bin/env bash
# --model-explorer DIR: the node data files validate against Model
# Explorer's documented schema (tests/model_explorer/validate_node_data.py
# cites it) and key the model's own nodes:
#  - gate tiny_cnn on xnnpack: owner (every node, "xnnpack"), reference time,
#    the error at the graph output;
#  - gate RMSNorm on litert-gpu: the bisection's error per node, "inf" at the
#    ReduceMean whose sum of squares overflows fp16;
#  - assign writes owner and time but no error file; bisect writes errors;
#  - a lowered placement (tests/data/lower/torch_like on nnapi: ONNX
#    Runtime fuses MatMul+Add into a Gemm named 'matmul/MatMulAddFusion')
#    is keyed by the file's node names: every node of the file, the fused
#    ones "nnapi (fused)", the removed Identity "removed by ONNX Runtime's
#    basic graph optimizations" (on litert-gpu the converter removes it:
#    "removed by the ONNX-to-TFLite converter");
#  - the validator rejects broken files (so this test can fail).
# Usage: model_explorer.sh CONVGATE SOURCE_DIR
set -u
bin=${1:?convgate binary}
SRC=${2:?source dir}
CG=$bin
PY=/usr/bin/python3
if ! $PY -c 'import onnx' 2>/dev/null; then
    echo "SKIP: no python3-onnx (scripts/setup.sh installs it)"
    exit 77
fi
. "$(dirname "${BASH_SOURCE[0]}")/lib/harness.bash"
T=$tmp
V="$SRC/tests/model_explorer/validate_node_data.py"
valid() { # valid MODEL FILE [--expect-key K=V]...
    $PY "$V" "$@" || fail "$2 does not validate"
}
invalid() { # invalid MODEL FILE WHAT
    $PY "$V" "$1" "$2" >"$T/invalid.out" 2>&1 && fail "the validator accepted $3"
}
CNN=$SRC/examples/tiny_cnn.onnx
RMS=$SRC/examples/rmsnorm_fp16.onnx

"$CG" gate "$CNN" --target xnnpack --inputs "$SRC/examples/tiny_cnn_inputs" \
    --model-explorer "$T/cnn" >"$T/cnn.out" 2>&1 || fail "gate tiny_cnn: exit $?"
for f in owner reference_ms max_abs_error; do
    [ -f "$T/cnn/convgate_$f.json" ] || fail "tiny_cnn: no convgate_$f.json"
done
valid "$CNN" "$T/cnn/convgate_owner.json" --expect-key /features/features.0/Conv=xnnpack \
    --expect-key /classifier/Gemm=xnnpack
valid "$CNN" "$T/cnn/convgate_reference_ms.json"
valid "$CNN" "$T/cnn/convgate_max_abs_error.json"
# every node has an owner
n=$($PY -c 'import json,sys; d=json.load(open(sys.argv[1])); print(sum(len(g["results"]) for g in d.values()))' \
    "$T/cnn/convgate_owner.json")
[ "$n" = 18 ] || fail "tiny_cnn: $n owners, expected 18"

"$CG" gate "$RMS" --target litert-gpu --accumulate fp16 --inputs "$SRC/examples/rmsnorm_fp16_inputs" \
    --model-explorer "$T/rms" >"$T/rms.out" 2>&1
[ $? = 1 ] || fail "gate rmsnorm: expected exit 1 (gate 3 fails)"
valid "$RMS" "$T/rms/convgate_owner.json" --expect-key mean_sq=litert-gpu
valid "$RMS" "$T/rms/convgate_reference_ms.json"
valid "$RMS" "$T/rms/convgate_max_abs_error.json" --expect-key mean_sq=inf --expect-key square=0.0

"$CG" assign "$CNN" --target litert-gpu,tflite-xnnpack --model-explorer "$T/assign" >/dev/null 2>&1 ||
    fail "assign: exit $?"
valid "$CNN" "$T/assign/convgate_owner.json"
valid "$CNN" "$T/assign/convgate_reference_ms.json"
[ ! -e "$T/assign/convgate_max_abs_error.json" ] || fail "assign wrote errors it did not measure"

"$CG" bisect "$RMS" --target litert-gpu --accumulate fp16 --inputs "$SRC/examples/rmsnorm_fp16_inputs" \
    --model-explorer "$T/bisect" >/dev/null 2>&1
[ $? = 1 ] || fail "bisect rmsnorm: expected exit 1"
valid "$RMS" "$T/bisect/convgate_max_abs_error.json" --expect-key mean_sq=inf

TL=$SRC/tests/data/lower/torch_like.onnx
for cmd in gate assign; do
    if [ $cmd = gate ]; then
        "$CG" gate "$TL" --target nnapi --random 1 --model-explorer "$T/tl_$cmd" >"$T/tl.out" 2>&1 ||
            fail "gate torch_like on nnapi: exit $?"
    else
        "$CG" assign "$TL" --target nnapi --model-explorer "$T/tl_$cmd" >"$T/tl.out" 2>&1 ||
            fail "assign torch_like on nnapi: exit $?"
    fi
    valid "$TL" "$T/tl_$cmd/convgate_owner.json" --expect-key matmul="nnapi (fused)" \
        --expect-key add="nnapi (fused)" --expect-key bn="nnapi (fused)" \
        --expect-key identity_w="removed by ONNX Runtime's basic graph optimizations" \
        --expect-key dropout="removed by ONNX Runtime's basic graph optimizations" \
        --expect-key relu=nnapi
    valid "$TL" "$T/tl_$cmd/convgate_reference_ms.json"
    n=$($PY -c 'import json,sys; d=json.load(open(sys.argv[1])); print(sum(len(g["results"]) for g in d.values()))' \
        "$T/tl_$cmd/convgate_owner.json")
    [ "$n" = 10 ] || fail "torch_like $cmd: $n owners, expected the file's 10 nodes"
done
"$CG" assign "$TL" --target litert-gpu --model-explorer "$T/tl_lit" >"$T/tl.out" 2>&1 ||
    fail "assign torch_like on litert-gpu: exit $?"
valid "$TL" "$T/tl_lit/convgate_owner.json" \
    --expect-key identity_w="removed by the ONNX-to-TFLite converter"
valid "$TL" "$T/tl_gate/convgate_max_abs_error.json" --expect-key add=0.0

# the validator must refuse what Model Explorer would not read
B=$T/bad
mkdir -p "$B"
echo '{"rmsnorm_fp16": {"thresholds": []}}' >"$B/no_results.json"
invalid "$RMS" "$B/no_results.json" "node data without results"
echo '{"rmsnorm_fp16": {"results": {"mean_sq": {"value": NaN}}}}' >"$B/nan.json"
invalid "$RMS" "$B/nan.json" "a NaN value"
echo '{"rmsnorm_fp16": {"results": {"no_such_node": {"value": 1}}}}' >"$B/key.json"
invalid "$RMS" "$B/key.json" "a key that is not a node"
echo '{"other_graph": {"results": {"mean_sq": {"value": 1}}}}' >"$B/graph.json"
invalid "$RMS" "$B/graph.json" "another graph id"
echo '{"rmsnorm_fp16": {"results": {"mean_sq": {"value": 1}}, "gradient": [{"stop": 0.5, "bgColor": "#fff"}]}}' >"$B/grad.json"
invalid "$RMS" "$B/grad.json" "a gradient without stops 0 and 1"
echo '{"rmsnorm_fp16": {"results": {"mean_sq": {"value": 1, "colour": "red"}}}}' >"$B/field.json"
invalid "$RMS" "$B/field.json" "an unknown result field"

finish
