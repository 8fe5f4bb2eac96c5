#!/usr/bin/env bash
# Source against converted on the fixtures' ONNX twins (docs/tflite.md):
#  - compare SOURCE --against CONVERTED passes the true twins (the CNN and
#    the keyword head with IF, in both directions, NCHW <-> NHWC found from
#    the shapes; the int8 CNN against its float source within a justified
#    quantization tolerance on its calibration input, and not within the
#    float32 default) and fails the wrong twin, with the noise-floor verdict;
#  - --map pairs and lays out explicitly, and refuses a layout the shapes
#    contradict or a name the model lacks;
#  - the JSON carries the pairs and the verdicts;
#  - gate CONVERTED --source SOURCE passes the twin and fails the wrong
#    one, saying the difference is the conversion's;
#  - ONNX against ONNX.
set -u
bin=${1:?usage: tflite_compare.sh CONVGATE_BINARY SOURCE_DIR}
src=${2:?usage: tflite_compare.sh CONVGATE_BINARY SOURCE_DIR}
. "$(dirname "${BASH_SOURCE[0]}")/lib/harness.bash"
d="$src/tests/data/tflite"

# the true twins, both directions
expect_exit 0 "$bin" compare "$d/twins/cnn.onnx" --against "$d/models/cnn.tflite"
check "cnn: NCHW -> NHWC found" has "x [1, 3, 16, 16] -> x [1, 16, 16, 3] (by name, NCHW -> NHWC)"
check "cnn: fp32 noise verdict" has "probs: matches (fp32 noise)"
expect_exit 0 "$bin" compare "$d/models/cnn.tflite" --against "$d/twins/cnn.onnx"
check "cnn reversed: NHWC -> NCHW" has "(by name, NHWC -> NCHW)"
expect_exit 0 "$bin" compare "$d/twins/kws_if.onnx" --against "$d/models/kws_if.tflite" --random 8 --seed 3
check "kws: same layout" has "x [1, 49, 10] -> x [1, 49, 10] (by name, same)"

# the int8 CNN against its float source: its calibration input (the NCHW
# twin input), a justified quantization tolerance; the float32 default fails
mkdir -p "$tmp/i8"
cp "$d/twins/int8_cnn/input_0.npy" "$tmp/i8/x.npy"
expect_exit 0 "$bin" compare "$d/twins/int8_cnn.onnx" --against "$d/models/int8_cnn.tflite" \
    --inputs "$tmp/i8" --tol "$d/twins/int8_cnn.tol.json"
check "int8: justification printed" has "justification: int8 conversion against its float source"
check "int8: quantization named" has "the other side computes in integers"
expect_exit 1 "$bin" compare "$d/twins/int8_cnn.onnx" --against "$d/models/int8_cnn.tflite" \
    --inputs "$tmp/i8"

# the wrong twin (kernels' H and W swapped in the first conv)
expect_exit 1 "$bin" compare "$d/twins/cnn_wrong.onnx" --against "$d/models/cnn.tflite"
check "wrong twin: verdict FAIL" has "verdict: FAIL"
check "wrong twin: wrong result beyond the noise floor" has "probs: wrong result"
expect_exit 1 "$bin" compare "$d/models/cnn.tflite" --against "$d/twins/cnn_wrong.onnx" --random 2

# --map
expect_exit 0 "$bin" compare "$d/twins/cnn.onnx" --against "$d/models/cnn.tflite" --map x=x:nhwc
check "--map pairs" has "(by --map, NCHW -> NHWC)"
expect_exit 0 "$bin" compare "$d/twins/cnn.onnx" --against "$d/models/cnn.tflite" --map x=x:0,2,3,1
expect_exit 2 "$bin" compare "$d/twins/cnn.onnx" --against "$d/models/cnn.tflite" --map x=x:none
check "--map layout refused" has "laid out same is not 'x' [1, 16, 16, 3]"
expect_exit 2 "$bin" compare "$d/twins/cnn.onnx" --against "$d/models/cnn.tflite" --map x=nope
check "--map unknown name" has "the converted model has no input 'nope'"
expect_exit 2 "$bin" compare "$d/twins/cnn.onnx" --against "$d/models/cnn.tflite" --map x=x:0,0,1,2
check "--map bad permutation" has "is not a permutation"
expect_exit 2 "$bin" compare "$d/twins/cnn.onnx" --map x=x:nhwc --target xnnpack
check "--map needs --against" has "--map applies with --against"

# JSON: the pairs and the verdicts
"$bin" compare "$d/twins/cnn.onnx" --against "$d/models/cnn.tflite" --json >"$tmp/c.json"
check "json exit" test $? -eq 0
$py - "$tmp/c.json" <<'PY' || fails=$((fails + 1))
import json, sys
r = json.load(open(sys.argv[1]))["result"]
a = r["against"]
p = a["inputs"][0]
assert (p["source"], p["converted"], p["by"], p["layout"], p["perm"]) == \
    ("x", "x", "name", "NCHW -> NHWC", [0, 2, 3, 1]), p
assert a["outputs"][0]["layout"] == "same" and a["outputs"][0]["perm"] is None
v = a["noise_verdicts"][0]
assert v["output"] == "probs" and v["judged"] and v["verdict"]["verdict"] == "matches (fp32 noise)", v
assert r["produced_by"].endswith("cnn.tflite on the reference runtime"), r["produced_by"]
assert r["pass"] is True
PY

# gate CONVERTED --source SOURCE
expect_exit 0 "$bin" gate "$d/models/cnn.tflite" --source "$d/twins/cnn.onnx" --target litert-gpu
check "gate: source named" has "gate 3 reference: $d/twins/cnn.onnx on the reference runtime"
expect_exit 1 "$bin" gate "$d/models/cnn.tflite" --source "$d/twins/cnn_wrong.onnx" --target litert-gpu
check "gate: the conversion blamed" has "(the conversion), not in the target"
expect_exit 2 "$bin" gate "$d/models/cnn.tflite" --source "$d/twins/cnn.onnx" --target litert-gpu \
    --golden "$tmp/nothing"
check "gate: --golden and --source refused" has "give one"

# ONNX against ONNX
expect_exit 0 "$bin" compare "$d/twins/cnn.onnx" --against "$d/twins/cnn.onnx" --random 2
check "onnx/onnx: bit-identical" has "bit-identical"
expect_exit 1 "$bin" compare "$d/twins/cnn.onnx" --against "$d/twins/cnn_wrong.onnx" --random 2

finish
