#!/bin/bash
# convgate run --target: the XNNPACK target path matches the reference on the
# bundled example, reports its residency, and an fp16 profile is emulated.
set -u
bin=${1:?usage: run_target.sh CONVGATE_BINARY SOURCE_DIR}
src=${2:?usage: run_target.sh CONVGATE_BINARY SOURCE_DIR}
. "$(dirname "${BASH_SOURCE[0]}")/lib/harness.bash"
if ! "$bin" targets | grep -q '^xnnpack '; then
    echo "xnnpack target not built here"; exit 77
fi
m="$src/examples/tiny_cnn.onnx"
in="image=$src/examples/tiny_cnn_inputs/image_1.npy"
cg run "$m" -i "$in" -o "$tmp/ref"
check "reference run: exit 0" rc 0
cg run "$m" -i "$in" --target xnnpack -o "$tmp/xnn"
check "xnnpack run: exit 0" rc 0
check "residency line" out_has "target path: 18/18 nodes on xnnpack, 0 on CPU; 1 partition"
check "xnnpack matches the reference" "$py" - "$tmp/ref/logits.npy" "$tmp/xnn/logits.npy" <<'PY'
import sys, numpy as np
a, b = np.load(sys.argv[1]), np.load(sys.argv[2])
bound = 1e-4 * max(float(np.abs(a).max()), 1.0)
d = float(np.abs(a - b).max())
assert a.shape == b.shape and d <= bound, f"xnnpack vs reference: max|diff| {d} > {bound}"
assert (a.argmax(-1) == b.argmax(-1)).all(), "argmax differs"
PY
cg run "$m" -i "$in" --target xnnpack --json
check "--json: exit 0" rc 0
check "json target block" out_json 'j["target"]["targets"] == "xnnpack" and "18/18" in j["target"]["residency"] and j["target"]["reduced_precision"] is False'
r="$src/examples/rmsnorm_fp16.onnx"
cg run "$r" -i "x=$src/examples/rmsnorm_fp16_inputs/sample_0/x.npy" --target litert-gpu
check "litert-gpu run: exit 0" rc 0
check "fp16 emulation announced" out_has "fp16 emulated"
cg run "$m" -i "$in" --target no-such-target
check "unknown target is a usage error" rc 2
check "unknown target is named" err_has "no-such-target"
finish
