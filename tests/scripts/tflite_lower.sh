#!/usr/bin/env bash
# The lowering of .tflite files onto the reference runtime, beyond the
# fixtures' numbers (test_tflite_run checks those against LiteRT):
#  - an op the lowering does not know, a quantized variant it has no
#    integer kernel for, and an operand it needs constant fail at load,
#    naming the subgraph, operator and op;
#  - the commands that take an ONNX model take a .tflite: dump-ref and
#    verify (a golden set), bisect (node names carry the TFLite op), the
#    float64 mode (noise), save (the lowered model is valid ONNX), a model
#    on standard input; rewrite and convert refuse it, saying why.
# Models with unsupported ops are written with tools/tflite_writer.py
# (python3-flatbuffers); that part is skipped, saying so, without it.
set -u
bin=${1:?usage: tflite_lower.sh CONVGATE_BINARY SOURCE_DIR}
src=${2:?usage: tflite_lower.sh CONVGATE_BINARY SOURCE_DIR}
. "$(dirname "${BASH_SOURCE[0]}")/lib/harness.bash"
d="$src/tests/data/tflite"

if $py -c 'import flatbuffers, numpy' 2>/dev/null; then
    $py - "$src/tools" "$tmp" <<'PY'
import sys
sys.path.insert(0, sys.argv[1])
import numpy as np
from tflite_writer import Model, Quant

def one(path, op, ins, outs, options=None, consts=()):
    m = Model()
    g = m.subgraph("main")
    idx = []
    for i, (shape, ttype, quant) in enumerate(ins):
        if i in consts:
            idx.append(g.tensor("c%d" % i, shape, ttype, data=consts[i], quant=quant))
        else:
            idx.append(g.tensor("x%d" % i, shape, ttype, quant=quant))
    o = [g.tensor("y%d" % i, s, t, quant=q) for i, (s, t, q) in enumerate(outs)]
    g.op(op, idx, o, options=options)
    g.inputs = [t for i, t in enumerate(idx) if i not in consts]
    g.outputs = o
    open(path, "wb").write(m.serialize())

d = sys.argv[2]
pool = ("Pool2DOptions", {"padding": 1, "stride_w": 1, "stride_h": 1, "filter_width": 2,
                          "filter_height": 2})
one(d + "/l2pool.tflite", "L2_POOL_2D", [([1, 4, 4, 2], "FLOAT32", None)],
    [([1, 3, 3, 2], "FLOAT32", None)], pool)
q = Quant(0.1, 3)
one(d + "/qavgpool.tflite", "AVERAGE_POOL_2D", [([1, 4, 4, 2], "INT8", q)],
    [([1, 3, 3, 2], "INT8", q)], pool)
ss = ("StridedSliceOptions", {})
one(d + "/slice_dyn.tflite", "STRIDED_SLICE",
    [([4, 4], "FLOAT32", None), ([2], "INT32", None), ([2], "INT32", None),
     ([2], "INT32", None)], [([2, 2], "FLOAT32", None)], ss,
    consts={2: np.int32([2, 2]), 3: np.int32([1, 1])})
PY
    check "writing the models" test $? -eq 0
    expect_exit 2 "$bin" run "$tmp/l2pool.tflite" --random
    check "unknown op named" has "subgraph 0 'main' > operator #0 (L2_POOL_2D): L2_POOL_2D is not lowered onto the reference runtime"
    expect_exit 2 "$bin" run "$tmp/qavgpool.tflite" --random
    check "quantized variant named" has "operator #0 (AVERAGE_POOL_2D): quantized AVERAGE_POOL_2D"
    expect_exit 2 "$bin" compare "$tmp/slice_dyn.tflite" --target xnnpack
    check "constant operand named" has "operator #0 (STRIDED_SLICE): its begin (tensor 1 'x1') is not a constant"
    expect_exit 0 "$bin" check "$tmp/l2pool.tflite"
else
    echo "tflite_lower: python3-flatbuffers or numpy missing: the unsupported-op models are not written"
fi

# dump-ref and verify take a .tflite; the golden set pins its hash
expect_exit 0 "$bin" dump-ref "$d/models/cnn.tflite" --random 2 -o "$tmp/golden"
expect_exit 0 "$bin" verify "$d/models/cnn.tflite" --golden "$tmp/golden"
expect_exit 0 "$bin" verify "$d/models/cnn.tflite" --golden "$tmp/golden" --target litert-gpu
cp "$d/models/cnn.tflite" "$tmp/other.tflite"
printf 'x' >>"$tmp/other.tflite"
expect_exit 2 "$bin" verify "$tmp/other.tflite" --golden "$tmp/golden"
check "verify: another file's golden set" has "sha256"
# bisect: node names carry the TFLite op and its index
"$bin" bisect "$d/models/cnn.tflite" --target litert-gpu --random --json >"$tmp/b.json"
check "bisect --json" test $? -le 1
$py - "$tmp/b.json" <<'PY' || fails=$((fails + 1))
import json, sys
r = json.load(open(sys.argv[1]))["result"]
text = json.dumps(r)
assert r["last_matching"]["node"] == "SOFTMAX#5", r["last_matching"]
PY
# the float64 reference mode (noise floors) on a float and an int8 model
expect_exit 0 "$bin" noise "$d/models/int8_cnn.tflite" --random 2
check "noise on int8" has "fp32 noise floor"
expect_exit 0 "$bin" run "$d/models/kws_if.tflite" --random --fp64
check "fp64 output" has "float64"
# save: the lowered model is ONNX that loads back and checks clean
expect_exit 0 "$bin" save "$d/models/kws_if.tflite" -o "$tmp/kws.onnx"
expect_exit 0 "$bin" check "$tmp/kws.onnx"
expect_exit 0 "$bin" run "$tmp/kws.onnx" --random
# standard input
expect_exit 0 sh -c "'$bin' run - --random < '$d/ops/while_loop.tflite'"
check "stdin" has "output 'y'"
# rewrite and convert edit and write ONNX graphs: a .tflite is refused, saying why
expect_exit 2 "$bin" rewrite "$d/models/cnn.tflite" --target litert-gpu --what-if
check "rewrite refuses a .tflite" has "is a .tflite: rewrite edits ONNX graphs"
expect_exit 2 "$bin" convert "$d/models/cnn.tflite" --target litert-gpu -o "$tmp/art"
check "convert refuses a .tflite" has "is a .tflite: convert edits ONNX graphs"
check "convert wrote nothing" test ! -e "$tmp/art"

finish
