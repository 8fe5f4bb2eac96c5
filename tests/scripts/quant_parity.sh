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
# And the float pools that feed quantizers in ORT's rounding: a graph made
# here of AveragePool (3x3 pad 1; stride 2; count_include_pad; 5x5; 2x2
# stride 2) and GlobalAveragePool on 1x8x20x20 seeded normal values, each
# into a DynamicQuantizeLinear: every pooled value, quantized tensor and
# scale bit-identical to ORT's (MlasPool2DVectorKernel divides; the
# reference multiplied by the reciprocal and was 1 ulp off on up to 739 of
# 3200 values).
# Needs node, bench/node_modules and numpy; without them the test FAILS,
# naming what is missing, unless CG_ALLOW_SKIP_PARITY=1 (then exit 77).
set -u
bin=${1:?usage: quant_parity.sh CONVGATE_BINARY SOURCE_DIR}
src=${2:?usage: quant_parity.sh CONVGATE_BINARY SOURCE_DIR}
model="$src/tests/data/quant/dynquant_resize.onnx"
input="$src/tests/data/quant/dynquant_resize_input.npy"
. "$(dirname "${BASH_SOURCE[0]}")/lib/harness.bash"

command -v node >/dev/null 2>&1 || unavailable "missing node"
[ -f "$src/bench/node_modules/onnxruntime-node/package.json" ] ||
    unavailable "missing $src/bench/node_modules/onnxruntime-node"
/usr/bin/python3 -c 'import numpy' >/dev/null 2>&1 || unavailable "missing numpy"

work="$tmp/work"
mkdir -p "$work"
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

# --- the float pools feeding quantizers -------------------------------------------------------
/usr/bin/python3 - "$work/pool.onnx" "$work/pool_x.npy" <<'PY' || { echo "quant_parity: FAILED: making the pool graph" >&2; exit 1; }
import sys, numpy as np, onnx
from onnx import helper, TensorProto as T
out, inp = sys.argv[1], sys.argv[2]
x = helper.make_tensor_value_info("x", T.FLOAT, [1, 8, 20, 20])
nodes, outs = [], []
def pool(tag, op, **attrs):
    nodes.append(helper.make_node(op, ["x"], [tag], **attrs))
    nodes.append(helper.make_node("DynamicQuantizeLinear", [tag], [tag + "_q", tag + "_s", tag + "_z"]))
    outs.append(helper.make_tensor_value_info(tag, T.FLOAT, None))
    outs.append(helper.make_tensor_value_info(tag + "_q", T.UINT8, None))
    outs.append(helper.make_tensor_value_info(tag + "_s", T.FLOAT, None))
pool("ap3", "AveragePool", kernel_shape=[3, 3], pads=[1, 1, 1, 1])
pool("ap3s2", "AveragePool", kernel_shape=[3, 3], pads=[1, 1, 1, 1], strides=[2, 2])
pool("ap3inc", "AveragePool", kernel_shape=[3, 3], pads=[1, 1, 1, 1], count_include_pad=1)
pool("ap5", "AveragePool", kernel_shape=[5, 5], pads=[2, 2, 2, 2])
pool("ap2", "AveragePool", kernel_shape=[2, 2], strides=[2, 2])
pool("gap", "GlobalAveragePool")
g = helper.make_graph(nodes, "pool_quant", [x], outs)
m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
m.ir_version = 8
onnx.save(m, out)
np.save(inp, (np.random.default_rng(7).standard_normal((1, 8, 20, 20)) * 2).astype(np.float32))
PY
if ! node "$src/bench/ort_session.js" --run --runs 1 --input "x=$work/pool_x.npy" \
        --save-outputs "$work/pool_ort" "$work/pool.onnx" >"$work/ort.log" 2>&1; then
    cat "$work/ort.log" >&2
    unavailable "onnxruntime could not run the pool graph"
fi
if ! "$bin" run "$work/pool.onnx" -i "x=$work/pool_x.npy" -o "$work/pool_cg" >"$work/cg.log" 2>&1; then
    cat "$work/cg.log" >&2
    echo "quant_parity: FAILED: convgate run of the pool graph" >&2
    exit 1
fi
/usr/bin/python3 - "$work" <<'PY' || exit 1
import os, sys, numpy as np
work = sys.argv[1]
names = sorted(os.listdir(work + "/pool_ort"))
bad = []
for f in names:
    a, b = np.load(work + "/pool_ort/" + f), np.load(work + "/pool_cg/" + f)
    if a.shape != b.shape or a.dtype != b.dtype or a.tobytes() != b.tobytes():
        bad.append("%s (%s of %d)" % (f[:-4], int((a != b).sum()) if a.shape == b.shape else "all", a.size))
print("pools: %d tensors, %d differ from ORT%s" % (len(names), len(bad), (": " + ", ".join(bad)) if bad else ""))
sys.exit(1 if bad or len(names) != 18 else 0)
PY

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
