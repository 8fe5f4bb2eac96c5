#!/usr/bin/env bash
# Quantization parity with onnxruntime-node 1.22.0 on a dynamically
# quantized model (tests/data/quant/dynquant_resize.onnx, written by
# tools/make_quant_cases.py): DynamicQuantizeLinear + ConvInteger blocks with
# linear Resizes feeding the quantizers, the layout of ISNet's failure. A
# quantizer turns one ulp upstream into a whole step, so the float kernels
# that feed it (Resize, the scale Muls) and DynamicQuantizeLinear itself
# must round as ONNX Runtime does:
#   - every quantized tensor (q*), scale (s*) and zero point (z*) that the
#     model exposes must be bit-identical to ORT's;
#   - the float output (mask) must lie within one quantization step of ORT's
#     (the last block's step: x_scale * w_scale, times Sigmoid's slope 1/4).
# And on a real dynamically quantized model, $CG_ZOO/resnet18_dynquant.onnx
# (torchvision's ResNet-18 through quantize_dynamic's layout: 20 ConvInteger
# blocks) when the zoo is there, on a seeded ImageNet-normalized image, with
# every DynamicQuantizeLinear's outputs exposed as graph outputs:
#   - every quantized tensor and scale bit-identical to ORT's (the float
#     kernels feeding the quantizers: Mul, Add, Relu, MaxPool);
#   - the global average pool after the last block bit-identical (its
#     float sum in ORT's order, MlasPoolGlobalKernel);
#   - the logits within one quantization step of ORT's: the last quantized
#     block's accumulator step, x_scale * w_scale (the logits follow it
#     through a Relu, the average pool and the float Gemm).
# Needs node, bench/node_modules and numpy; without them the test FAILS,
# naming what is missing, unless CG_ALLOW_SKIP_PARITY=1 (then exit 77).
set -u
bin=${1:?usage: quant_parity.sh CONVGATE_BINARY SOURCE_DIR}
src=${2:?usage: quant_parity.sh CONVGATE_BINARY SOURCE_DIR}
model="$src/tests/data/quant/dynquant_resize.onnx"
input="$src/tests/data/quant/dynquant_resize_input.npy"

unavailable() {
    if [ "${CG_ALLOW_SKIP_PARITY:-0}" = 1 ]; then
        echo "quant_parity: skipped (CG_ALLOW_SKIP_PARITY=1): $*" >&2
        exit 77
    fi
    echo "quant_parity: FAILED: $* (run scripts/setup.sh; set CG_ALLOW_SKIP_PARITY=1 to skip instead)" >&2
    exit 1
}
command -v node >/dev/null 2>&1 || unavailable "missing node"
[ -f "$src/bench/node_modules/onnxruntime-node/package.json" ] ||
    unavailable "missing $src/bench/node_modules/onnxruntime-node"
/usr/bin/python3 -c 'import numpy' >/dev/null 2>&1 || unavailable "missing numpy"

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
if ! node "$src/bench/ort_session.js" --run --runs 1 --input "x=$input" \
        --save-outputs "$work/ort" "$model" >"$work/ort.log" 2>&1; then
    cat "$work/ort.log" >&2
    unavailable "onnxruntime could not run $model"
fi
if ! "$bin" run "$model" -i "x=$input" -o "$work/cg" >"$work/cg.log" 2>&1; then
    cat "$work/cg.log" >&2
    echo "quant_parity: FAILED: convgate run" >&2
    exit 1
fi
/usr/bin/python3 - "$work" "$model" <<'PY'
import sys, numpy as np, onnx
from onnx import numpy_helper
work, model = sys.argv[1], sys.argv[2]
m = onnx.load(model)
inits = {t.name: numpy_helper.to_array(t) for t in m.graph.initializer}
names = [o.name for o in m.graph.output]
ok = True
for n in names:
    a, b = np.load("%s/ort/%s.npy" % (work, n)), np.load("%s/cg/%s.npy" % (work, n))
    if a.shape != b.shape or a.dtype != b.dtype:
        print("%-5s shape/dtype %s %s vs ORT %s %s" % (n, b.shape, b.dtype, a.shape, a.dtype))
        ok = False
        continue
    d = np.abs(a.astype(np.float64) - b.astype(np.float64))
    if n == "mask":
        last = max(int(k[1:]) for k in names if k.startswith("s"))
        step = 0.25 * float(np.load("%s/ort/s%d.npy" % (work, last))) * float(inits["w%d_s" % last])
        good = d.max() <= step
        print("%-5s max |convgate - ORT| %.3g, one quantization step %.3g: %s"
              % (n, d.max(), step, "within" if good else "BEYOND"))
    else:
        good = a.tobytes() == b.tobytes()
        print("%-5s %d of %d differ%s" % (n, int((d > 0).sum()), d.size,
                                          "" if good else " (must be bit-identical)"))
    ok = ok and good
print("quant_parity: %s" % ("PASS" if ok else "FAIL"))
sys.exit(0 if ok else 1)
PY
rc=$?
[ "$rc" = 0 ] || exit "$rc"

# --- resnet18_dynquant from the zoo ------------------------------------------------------------
zoo=${CG_ZOO:-$src/zoo}
rn="$zoo/resnet18_dynquant.onnx"
if [ ! -f "$rn" ]; then
    echo "quant_parity: $rn not present; the resnet18_dynquant case did not run"
    exit 0
fi
/usr/bin/python3 - "$rn" "$work" <<'PY' || { echo "quant_parity: FAILED: preparing resnet18_dynquant" >&2; exit 1; }
import sys, numpy as np, onnx
from onnx import helper, TensorProto
model, work = sys.argv[1], sys.argv[2]
m = onnx.load(model)
for n in m.graph.node:
    if n.op_type == "DynamicQuantizeLinear":
        m.graph.output.append(helper.make_tensor_value_info(n.output[0], TensorProto.UINT8, None))
        m.graph.output.append(helper.make_tensor_value_info(n.output[1], TensorProto.FLOAT, None))
    if n.op_type == "GlobalAveragePool":
        m.graph.output.append(helper.make_tensor_value_info(n.output[0], TensorProto.FLOAT, None))
onnx.save(m, work + "/rn_exposed.onnx")
rng = np.random.default_rng(1)
mean = np.array([0.485, 0.456, 0.406], np.float32).reshape(1, 3, 1, 1)
std = np.array([0.229, 0.224, 0.225], np.float32).reshape(1, 3, 1, 1)
np.save(work + "/rn_image.npy", ((rng.random((1, 3, 224, 224)) - mean) / std).astype(np.float32))
PY
if ! node "$src/bench/ort_session.js" --run --runs 1 --input "image=$work/rn_image.npy" \
        --save-outputs "$work/rn_ort" "$work/rn_exposed.onnx" >"$work/ort.log" 2>&1; then
    cat "$work/ort.log" >&2
    unavailable "onnxruntime could not run resnet18_dynquant"
fi
if ! "$bin" run "$work/rn_exposed.onnx" -i "image=$work/rn_image.npy" -o "$work/rn_cg" \
        >"$work/cg.log" 2>&1; then
    cat "$work/cg.log" >&2
    echo "quant_parity: FAILED: convgate run resnet18_dynquant" >&2
    exit 1
fi
/usr/bin/python3 - "$work" "$rn" <<'PY'
import sys, numpy as np, onnx
from onnx import numpy_helper
work, model = sys.argv[1], sys.argv[2]
m = onnx.load(model)
inits = {t.name: numpy_helper.to_array(t) for t in m.graph.initializer}
quant = [n for n in m.graph.node if n.op_type == "DynamicQuantizeLinear"]
pools = [n for n in m.graph.node if n.op_type == "GlobalAveragePool"]
ok, differ = True, 0
for n in quant + pools:
    for t in n.output[:2] if n.op_type == "DynamicQuantizeLinear" else n.output[:1]:
        f = t.replace("/", "_")  # as both runners name the files
        a, b = np.load("%s/rn_ort/%s.npy" % (work, f)), np.load("%s/rn_cg/%s.npy" % (work, f))
        if a.shape != b.shape or a.dtype != b.dtype or a.tobytes() != b.tobytes():
            d = np.abs(a.astype(np.float64) - b.astype(np.float64)) if a.shape == b.shape else None
            print("resnet18_dynquant %s: %s of %d differ (must be bit-identical)"
                  % (t, "all" if d is None else int((d > 0).sum()), a.size))
            differ += 1
ok = differ == 0
print("resnet18_dynquant: %d quantized tensors and scales and %d average pool, %d differ from ORT"
      % (2 * len(quant), len(pools), differ))
# the last block: its ConvInteger's weight scale and input quantizer's scale
last = quant[-1]
conv = next(n for n in m.graph.node if n.op_type == "ConvInteger" and n.input[0] == last.output[0])
w_scale = next(n for n in m.graph.node if n.op_type == "Mul" and n.input[0] == last.output[1]).input[1]
step = float(np.load("%s/rn_ort/%s.npy" % (work, last.output[1]))) * float(np.max(inits[w_scale]))
a, b = np.load(work + "/rn_ort/logits.npy"), np.load(work + "/rn_cg/logits.npy")
d = float(np.abs(a.astype(np.float64) - b).max())
good = d <= step
print("resnet18_dynquant logits: max |convgate - ORT| %.3g, one quantization step %.3g: %s"
      % (d, step, "within" if good else "BEYOND"))
ok = ok and good
print("quant_parity resnet18_dynquant: %s" % ("PASS" if ok else "FAIL"))
sys.exit(0 if ok else 1)
PY
