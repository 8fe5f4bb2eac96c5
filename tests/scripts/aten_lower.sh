#!/usr/bin/env bash
# The onnx-to-aten lowering (src/lower/onnx_to_aten.c) and the
# executorch-xnnpack profile judged on its ATen ops: one fixture per family
# of the mapping, each checking the ops the lowering writes (convgate lower
# --json: the runtime graph's histogram) and which of them the partitioner
# configs refuse (assign --json: the unsupported nodes, by name). The
# profile keys only aten:* ops, so every check here fails when the ONNX
# graph is placed unmapped.
# Usage: aten_lower.sh CONVGATE SOURCE_DIR
set -u
bin=${1:?usage: aten_lower.sh CONVGATE_BINARY SOURCE_DIR}
src=${2:?usage: aten_lower.sh CONVGATE_BINARY SOURCE_DIR}
. "$(dirname "${BASH_SOURCE[0]}")/lib/harness.bash"

$py - "$tmp" <<'PY'
import sys
import numpy as np
import onnx
from onnx import TensorProto as T, helper as h, numpy_helper as nh

d = sys.argv[1]

def f32(name, shape, seed=0):
    return nh.from_array(np.random.default_rng(seed).standard_normal(shape).astype(np.float32), name)

def i64(name, v):
    return nh.from_array(np.array(v, dtype=np.int64), name)

def save(name, nodes, ins, outs, inits):
    g = h.make_graph(nodes, name, [h.make_tensor_value_info(n, T.FLOAT, s) for n, s in ins],
                     [h.make_tensor_value_info(n, T.FLOAT, None) for n in outs], inits)
    m = h.make_model(g, opset_imports=[h.make_opsetid("", 13)])
    m.ir_version = 8
    onnx.save(m, "%s/%s.onnx" % (d, name))

# GEMM: nn.Linear's Gemm is linear; MatMul by torch.matmul's decomposition:
# 3-D x constant 2-D is view_copy, mm, view_copy; two runtime 2-D operands
# an mm without a static weight (refused); 3-D x 3-D bmm
save("gemm", [
    h.make_node("Gemm", ["x", "W", "b"], ["y1"], "fc", transB=1),
    h.make_node("MatMul", ["x3", "W2"], ["y2"], "mm_nd"),
    h.make_node("MatMul", ["a", "bb"], ["y3"], "mm_dyn"),
    h.make_node("MatMul", ["p", "q"], ["y4"], "bmm"),
], [("x", [2, 8]), ("x3", [2, 3, 8]), ("a", [4, 8]), ("bb", [8, 6]), ("p", [2, 4, 8]),
    ("q", [2, 8, 6])], ["y1", "y2", "y3", "y4"],
   [f32("W", [4, 8]), f32("b", [4]), f32("W2", [8, 5])])

# batch norm: _native_batch_norm_legit_no_training, decomposable when its
# weight, bias, mean and var are static (a runtime scale is refused)
save("bn", [
    h.make_node("Conv", ["x", "w"], ["c"], "conv", pads=[1, 1, 1, 1]),
    h.make_node("BatchNormalization", ["c", "s", "bias", "mean", "var"], ["n"], "bn_static"),
    h.make_node("Relu", ["n"], ["r"], "relu"),
    h.make_node("BatchNormalization", ["r", "scale_in", "bias", "mean", "var"], ["y"], "bn_dyn"),
], [("x", [1, 3, 8, 8]), ("scale_in", [4])], ["y"],
   [f32("w", [4, 3, 3, 3]), f32("s", [4], 1), f32("bias", [4], 2), f32("mean", [4], 3),
    nh.from_array(np.ones(4, np.float32), "var")])

# clamps: Clip with both bounds constant is hardtanh (nn.ReLU6), one bound
# computed at run time clamp.Tensor (refused); HardSigmoid decomposes to
# add, clamp, clamp, div (all taken)
save("clip", [
    h.make_node("Clip", ["x", "lo", "hi"], ["r6"], "relu6"),
    h.make_node("Clip", ["r6", "lo", "hi_in"], ["cl"], "clip_dyn"),
    h.make_node("HardSigmoid", ["cl"], ["y"], "hsig", alpha=1.0 / 6, beta=0.5),
], [("x", [1, 4, 4, 4]), ("hi_in", [])], ["y"],
   [nh.from_array(np.array(0, np.float32), "lo"), nh.from_array(np.array(6, np.float32), "hi")])

# no op: a Constant (a constant of the exported program) and an Identity
# (nn.Identity returns its input) are removed; inference Dropout is a clone
save("removed", [
    h.make_node("Constant", [], ["k"], "const", value=nh.from_array(np.ones([1, 4], np.float32))),
    h.make_node("Identity", ["x"], ["i"], "ident"),
    h.make_node("Add", ["i", "k"], ["a"], "add"),
    h.make_node("Dropout", ["a"], ["y"], "drop"),
], [("x", [2, 4])], ["y"], [])

# views: Flatten is view_copy; unsqueeze_copy only on the trailing dim;
# Slice is slice_copy, step 1 only
save("views", [
    h.make_node("Flatten", ["x"], ["f"], "flatten", axis=1),
    h.make_node("Unsqueeze", ["f", "ax_last"], ["u1"], "unsq_last"),
    h.make_node("Unsqueeze", ["f", "ax1"], ["u2"], "unsq_mid"),
    h.make_node("Slice", ["f", "st", "en", "ax_s", "step1"], ["s1"], "slice_1"),
    h.make_node("Slice", ["f", "st", "en", "ax_s", "step2"], ["s2"], "slice_2"),
], [("x", [2, 3, 4])], ["u1", "u2", "s1", "s2"],
   [i64("ax_last", [-1]), i64("ax1", [1]), i64("st", [0]), i64("en", [8]), i64("ax_s", [1]),
    i64("step1", [1]), i64("step2", [2])])

# pools and reductions: global average pooling stays _adaptive_avg_pool2d
# (no config); ReduceMean over {2,3} with keepdims is mean.dim, over {1}
# refused; avg_pool2d refuses count_include_pad with padding; pow only ^2
save("pools", [
    h.make_node("GlobalAveragePool", ["x"], ["g"], "gap"),
    h.make_node("ReduceMean", ["x"], ["m23"], "mean_hw", axes=[2, 3], keepdims=1),
    h.make_node("ReduceMean", ["x"], ["m1"], "mean_c", axes=[1], keepdims=1),
    h.make_node("AveragePool", ["x"], ["ap0"], "avg_nopad_count", kernel_shape=[2, 2],
                pads=[1, 1, 1, 1], count_include_pad=0),
    h.make_node("AveragePool", ["x"], ["ap1"], "avg_pad_count", kernel_shape=[2, 2],
                pads=[1, 1, 1, 1], count_include_pad=1),
    h.make_node("Pow", ["x", "two"], ["p2"], "square"),
    h.make_node("Pow", ["x", "three"], ["p3"], "cube"),
], [("x", [1, 4, 6, 6])], ["g", "m23", "m1", "ap0", "ap1", "p2", "p3"],
   [nh.from_array(np.array(2, np.float32), "two"), nh.from_array(np.array(3, np.float32), "three")])

# GELU: torch.onnx writes nn.GELU as Div, Erf, Add, Mul, Mul (constants in
# Constant nodes) and nn.GELU(approximate="tanh") as nine Mul/Add/Tanh
# nodes; torch.export gives one aten.gelu for each, which GeluConfig takes.
# The formula spelled out in another order (x * 0.5 * (1 + erf(x / sqrt 2)))
# is not nn.GELU: its element ops stay, and the erf is refused.
def const(name, v):
    return h.make_node("Constant", [], [name], name, value=nh.from_array(np.array(v, np.float32)))
save("gelu", [
    const("sqrt2", 1.4142135623730951), const("one", 1.0), const("half", 0.5),
    h.make_node("Div", ["x", "sqrt2"], ["e_div"], "e_div"),
    h.make_node("Erf", ["e_div"], ["e_erf"], "e_erf"),
    h.make_node("Add", ["e_erf", "one"], ["e_add"], "e_add"),
    h.make_node("Mul", ["x", "e_add"], ["e_mul"], "e_mul"),
    h.make_node("Mul", ["e_mul", "half"], ["g1"], "e_half"),
    const("kappa", 0.044715), const("beta", 0.7978845608028654),
    h.make_node("Mul", ["g1", "g1"], ["t_sq"], "t_sq"),
    h.make_node("Mul", ["g1", "t_sq"], ["t_cube"], "t_cube"),
    h.make_node("Mul", ["kappa", "t_cube"], ["t_k"], "t_k"),
    h.make_node("Add", ["g1", "t_k"], ["t_in"], "t_in"),
    h.make_node("Mul", ["beta", "t_in"], ["t_b"], "t_b"),
    h.make_node("Tanh", ["t_b"], ["t_tanh"], "t_tanh"),
    h.make_node("Add", ["one", "t_tanh"], ["t_add"], "t_add"),
    h.make_node("Mul", ["g1", "t_add"], ["t_mul"], "t_mul"),
    h.make_node("Mul", ["half", "t_mul"], ["g2"], "t_half"),
    h.make_node("Mul", ["g2", "half"], ["b_half"], "b_half"),
    h.make_node("Div", ["g2", "sqrt2"], ["b_div"], "b_div"),
    h.make_node("Erf", ["b_div"], ["b_erf"], "b_erf"),
    h.make_node("Add", ["one", "b_erf"], ["b_add"], "b_add"),
    h.make_node("Mul", ["b_half", "b_add"], ["y"], "b_mul"),
], [("x", [2, 16])], ["y"], [])

# control flow: If is torch.cond, Loop torch.while_loop (higher-order ops
# no config names); the notes say what ExecuTorch does with each
then_g = h.make_graph([h.make_node("Relu", ["x"], ["t"], "then_relu")], "then", [],
                      [h.make_tensor_value_info("t", T.FLOAT, [2, 4])])
else_g = h.make_graph([h.make_node("Neg", ["x"], ["e"], "else_neg")], "else", [],
                      [h.make_tensor_value_info("e", T.FLOAT, [2, 4])])
body = h.make_graph([h.make_node("Identity", ["c_in"], ["c_out"], "body_cond"),
                     h.make_node("Add", ["v_in", "x"], ["v_out"], "body_add")], "body",
                    [h.make_tensor_value_info("it", T.INT64, []),
                     h.make_tensor_value_info("c_in", T.BOOL, []),
                     h.make_tensor_value_info("v_in", T.FLOAT, [2, 4])],
                    [h.make_tensor_value_info("c_out", T.BOOL, []),
                     h.make_tensor_value_info("v_out", T.FLOAT, [2, 4])])
g = h.make_graph([
    h.make_node("ReduceSum", ["x"], ["s"], "sum", keepdims=0),
    h.make_node("Greater", ["s", "zero"], ["pos"], "pos"),
    h.make_node("If", ["pos"], ["b"], "branch", then_branch=then_g, else_branch=else_g),
    h.make_node("Loop", ["trips", "", "b"], ["y"], "loop", body=body),
], "flow", [h.make_tensor_value_info("x", T.FLOAT, [2, 4])],
    [h.make_tensor_value_info("y", T.FLOAT, [2, 4])],
    [nh.from_array(np.array(0, np.float32), "zero"), i64("trips", 3)])
m = h.make_model(g, opset_imports=[h.make_opsetid("", 13)])
m.ir_version = 8
onnx.save(m, "%s/flow.onnx" % d)
PY

lowered() { # MODEL: the runtime graph's op histogram into $tmp/ops.json
    cg lower "$tmp/$1.onnx" --preprocess onnx-to-aten --json
    check "$1: lowered" rc 0
    $py -c 'import json,sys; print(json.dumps(json.load(open(sys.argv[1]))["result"]["runtime"]["ops"]))' \
        "$tmp/out" >"$tmp/ops.json" 2>/dev/null
}
ops_are() { # WHAT PYTHON-DICT: the histogram is exactly that
    check "$1" $py -c 'import json,sys; a=json.load(open(sys.argv[1])); e=eval(sys.argv[2]); sys.exit(0 if a == e else print(a) or 1)' "$tmp/ops.json" "$2"
}
refused_are() { # MODEL WHAT PYTHON-SET: assign's unsupported nodes, by name
    cg assign "$tmp/$1.onnx" --target executorch-xnnpack --json --no-time
    check "$2" out_json "set(u['node'] for u in r['unsupported']) == $3 and r['nodes_on_cpu'] == len($3)"
}

# the profile judges the lowered graph only: every rule keyed by an ATen op
check "executorch-xnnpack: preprocess onnx-to-aten, every op key aten:*" $py -c '
import json, sys
p = json.load(open(sys.argv[1]))
sys.exit(0 if p["preprocess"] == "onnx-to-aten" and all(k.startswith("aten:") for k in p["ops"]) else 1)' \
    "$src/profiles/executorch-xnnpack.json"

lowered gemm
ops_are "gemm: linear, view/mm/view, mm, bmm" \
    '{"aten:linear": 1, "aten:view_copy": 2, "aten:mm": 2, "aten:bmm": 1}'
refused_are gemm "gemm: only the mm of two runtime operands refused" '{"mm_dyn"}'
check "gemm: the refusal names the static weight" out_json \
    'any(u["node"] == "mm_dyn" and "input 1" in u["reason"] and "constant" in u["reason"] for u in r["unsupported"])'

lowered bn
ops_are "bn: convolution, two batch norms, relu" \
    '{"aten:convolution": 1, "aten:_native_batch_norm_legit_no_training": 2, "aten:relu": 1}'
refused_are bn "bn: the batch norm with a runtime scale refused" '{"bn_dyn"}'

lowered clip
ops_are "clip: hardtanh, clamp.Tensor, hardsigmoid's add/clamp/clamp/div" \
    '{"aten:hardtanh": 1, "aten:clamp": 3, "aten:add": 1, "aten:div": 1}'
refused_are clip "clip: only the clamp with a runtime bound refused" '{"clip_dyn"}'

lowered removed
ops_are "removed: add and the dropout's clone remain" '{"aten:add": 1, "aten:clone": 1}'
check "removed: Constant and Identity removed, by name" out_json \
    'r["removed_count"] == 2 and sorted(x["op_type"] for x in r["removed"]) == ["Constant", "Identity"]'
refused_are removed "removed: fully resident" 'set()'

lowered views
ops_are "views: view_copy, two unsqueeze_copy, two slice_copy" \
    '{"aten:view_copy": 1, "aten:unsqueeze_copy": 2, "aten:slice_copy": 2}'
refused_are views "views: the inner unsqueeze and the step-2 slice refused" '{"unsq_mid", "slice_2"}'

lowered pools
ops_are "pools: each op as torch exports it" \
    '{"aten:_adaptive_avg_pool2d": 1, "aten:mean": 2, "aten:avg_pool2d": 2, "aten:pow": 2}'
refused_are pools "pools: global pool, mean over C, counted padding, cube refused" \
    '{"gap", "mean_c", "avg_pad_count", "cube"}'

lowered gelu
ops_are "gelu: the erf and tanh patterns one gelu each, the hand-written formula its ops" \
    '{"aten:gelu": 2, "aten:mul": 2, "aten:div": 1, "aten:erf": 1, "aten:add": 1}'
check "gelu: the other twelve pattern nodes recorded as folded into the gelu" out_json \
    'sorted(x["op_type"] for x in r["removed"] if "gelu" in x["by"]) == ["Add"] * 3 + ["Div"] + ["Mul"] * 8'
refused_are gelu "gelu: only the hand-written formula's erf refused" '{"b_erf"}'
cg lower "$tmp/gelu.onnx" --preprocess onnx-to-aten -o "$tmp/gelu_aten.onnx"
check "gelu: lowered graph written" rc 0
check "gelu: approximate none on e_erf, tanh on t_tanh, reading x and g1" $py -c '
import onnx, sys
g = onnx.load(sys.argv[1]).graph
gelu = {n.name: (list(n.input), list(n.output), {a.name: a.s.decode() for a in n.attribute if a.type == onnx.AttributeProto.STRING}) for n in g.node if n.op_type == "gelu"}
sys.exit(0 if gelu == {"e_erf": (["x"], ["g1"], {"overload": "default", "approximate": "none"}),
                       "t_tanh": (["g1"], ["g2"], {"overload": "default", "approximate": "tanh"})} else print(gelu) or 1)' \
    "$tmp/gelu_aten.onnx"

lowered flow
ops_are "flow: If and Loop as torch's higher-order ops" \
    '{"onnx:ReduceSum": 1, "aten:gt": 1, "higher_order:cond": 1, "higher_order:while_loop": 1}'
refused_are flow "flow: cond and while_loop refused with the rest" '{"sum", "pos", "branch", "loop"}'
check "flow: the notes say cond runs in the portable runtime and while_loop does not convert" out_json \
    'any("torch.cond" in n and "portable runtime" in n and "_emit_cond" in n for n in r["preprocess"]["notes"]) and any("torch.while_loop" in n and "Unsupported control flow operator: while_loop" in n for n in r["preprocess"]["notes"])'

# the mapping keeps its way back to the ONNX nodes: the view/mm/view of
# mm_nd all stand for it
cg lower "$tmp/gemm.onnx" --preprocess onnx-to-aten -o "$tmp/gemm_aten.onnx"
check "gemm: lowered graph written" rc 0
cg assign "$tmp/gemm.onnx" --target executorch-xnnpack --no-time
expect_out "Graph partitioned: preprocess 'onnx-to-aten': 4 nodes of the file -> 6 on the runtime's side"

finish
