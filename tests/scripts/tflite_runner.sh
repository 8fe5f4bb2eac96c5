#!/usr/bin/env bash
# The real LiteRT as a runner (--runner litert-node / litert-webgpu on run,
# compare and gate; convgate/runner.h): outputs come back from LiteRT.js as
# it recorded them for the fixtures, inputs reach LiteRT by signature name,
# compare and gate judge them (measured, not predicted), the WebGPU
# delegate's residency lines are read back, and a missing node, LiteRT.js
# or chromium is an error saying what to install.
# Exit 77 (skipped) without node or tools/litert's packages, saying which;
# the WebGPU part is skipped, with a message, without chromium.
set -u
bin=${1:?usage: tflite_runner.sh CONVGATE_BINARY SOURCE_DIR}
src=${2:?usage: tflite_runner.sh CONVGATE_BINARY SOURCE_DIR}
. "$(dirname "${BASH_SOURCE[0]}")/lib/harness.bash"
d="$src/tests/data/tflite"
if ! command -v node >/dev/null 2>&1; then
    echo "tflite_runner: skipped: node is not installed (scripts/setup.sh installs it)"
    exit 77
fi
if [ ! -f "$src/tools/litert/node_modules/@litertjs/core/package.json" ]; then
    echo "tflite_runner: skipped: tools/litert/node_modules has no @litertjs/core" \
         "(scripts/setup.sh runs npm ci there)"
    exit 77
fi
if ! $py -c 'import numpy' 2>/dev/null; then
    echo "tflite_runner: skipped: /usr/bin/python3 has no numpy"
    exit 77
fi
export CONVGATE_LITERT="$src/tools/litert"
same() { # a.npy b.npy: within 1e-5 of b's scale
    $py - "$1" "$2" <<'PY'
import sys, numpy as np
a, b = np.load(sys.argv[1]), np.load(sys.argv[2])
assert a.shape == b.shape and a.dtype == b.dtype, (a.shape, b.shape, a.dtype, b.dtype)
d = np.abs(a.astype(np.float64) - b.astype(np.float64)).max()
assert d <= 1e-5 * max(float(np.abs(b).max()), 1e-30), d
PY
}

# run: LiteRT's outputs, as recorded when the fixtures were made
expect_exit 0 "$bin" run "$d/models/cnn.tflite" --runner litert-node \
    -i "x=$d/models/cnn/input_0.npy" -o "$tmp/cnn"
check "run: measured" has "measured by @litertjs/core"
check "run: cnn output as recorded" same "$tmp/cnn/probs.npy" "$d/models/cnn/litert_0.npy"
# two inputs, fed by their signature names
expect_exit 0 "$bin" run "$d/ops/batch_matmul.tflite" --runner litert-node \
    -i "x1=$d/ops/batch_matmul/input_1.npy" -i "x0=$d/ops/batch_matmul/input_0.npy" -o "$tmp/bm"
check "run: batch_matmul as recorded" same "$tmp/bm/y0.npy" "$d/ops/batch_matmul/litert_0.npy"
"$bin" run "$d/models/kws_if.tflite" --runner litert-node --random --json >"$tmp/r.json"
check "run --json" test $? -eq 0
$py - "$tmp/r.json" <<'PY' || fails=$((fails + 1))
import json, sys
r = json.load(open(sys.argv[1]))["result"]["runner"]
assert r["measured"] is True and r["runtime"] == "@litertjs/core 2.5.3", r
assert r["accelerator"] == "wasm (XNNPACK)" and r["residency"] is None, r
PY

# compare: the reference against LiteRT (CPU)
expect_exit 0 "$bin" compare "$d/models/cnn.tflite" --runner litert-node --random 3
check "compare: producer named" has "target outputs: the model in the real LiteRT: litert-node"
expect_exit 0 "$bin" compare "$d/twins/cnn.onnx" --against "$d/models/cnn.tflite" --runner litert-node
check "compare --against --runner: NCHW -> NHWC" has "(by name, NCHW -> NHWC)"
expect_exit 1 "$bin" compare "$d/twins/cnn_wrong.onnx" --against "$d/models/cnn.tflite" \
    --runner litert-node --random 2
# XNNPACK requantizes in fp32 where TFLite's reference (convgate) uses fixed
# point: the int8 CNN's logits differ by up to 2 LSB (scale 0.00432)
expect_exit 0 "$bin" compare "$d/models/int8_cnn.tflite" --runner litert-node --random 8 \
    --atol 0.0087 --rtol 0

# errors that say what to install
mkdir -p "$tmp/nonode" "$tmp/withnode" "$tmp/fake"
expect_exit 2 env PATH="$tmp/nonode" "$bin" run "$d/models/cnn.tflite" --runner litert-node --random
check "no node" has "node is not installed"
cp "$src/tools/litert/run_node.mjs" "$tmp/fake/"
expect_exit 2 env CONVGATE_LITERT="$tmp/fake" "$bin" run "$d/models/cnn.tflite" --runner litert-node \
    --random
check "no LiteRT.js" has "LiteRT.js is not installed in $tmp/fake/node_modules"
expect_exit 2 "$bin" run "$d/twins/cnn.onnx" --runner litert-node --random
check "ONNX refused" has "litert-node runs .tflite models"
expect_exit 2 "$bin" run "$d/models/cnn.tflite" --runner litert-node --random --precision fp16
check "--precision needs webgpu" has "--precision applies to --runner litert-webgpu"
ln -s "$(command -v node)" "$tmp/withnode/node"
expect_exit 2 env PATH="$tmp/withnode" CG_CHROMIUM= "$bin" run "$d/models/cnn.tflite" \
    --runner litert-webgpu --random
check "no chromium" has "chromium is not installed"

# WebGPU: the delegate's residency, read back, and a gate on the real runner
if command -v chromium >/dev/null 2>&1 || command -v chromium-browser >/dev/null 2>&1; then
    "$bin" compare "$d/models/kws_if.tflite" --runner litert-webgpu --random 2 --json \
        >"$tmp/w.json"
    check "compare --runner litert-webgpu" test $? -eq 0
    $py - "$tmp/w.json" <<'PY' || fails=$((fails + 1))
import json, sys
r = json.load(open(sys.argv[1]))["result"]
w = r["against"]["runner"]
assert r["pass"] is True, r["pass"]
assert w["accelerator"] == "webgpu" and w["precision"] == "fp32", w
res = w["residency"]
assert (res["gpu_ops"], res["cpu_ops"], res["fully_accelerated"]) == (7, 1, False), res
assert [(x["op"], x["reason"]) for x in res["rejected"]] == [("IF", "Operation is not supported.")], res
PY
    expect_exit 0 "$bin" gate "$d/models/cnn.tflite" --source "$d/twins/cnn.onnx" --target litert-gpu \
        --runner litert-webgpu --precision fp16 --random 2
    check "gate --runner: measured residency" has "6 ops on the GPU, 0 on the CPU (fully accelerated)"
    check "gate --runner: fp16 tolerance" has "atol 0.0025"
else
    echo "tflite_runner: chromium is not installed: the WebGPU runner is not checked"
fi

finish
