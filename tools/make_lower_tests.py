#!/usr/bin/python3
"""Writes the models of tests/unit/test_lower.c to tests/data/lower/.

Each is a small graph with the patterns ONNX Runtime 1.22's Level-1
optimizations act on, as exporters write them:

  torch_like.onnx   Identity on a weight (torch's shared-parameter pattern),
                    a Constant node, Conv -> BatchNormalization, Dropout,
                    Flatten -> MatMul + Add (the weights fold into Conv, the
                    MatMul/Add into a Gemm)
  fold.onnx         Shape -> Gather -> Unsqueeze -> Concat -> Reshape on a
                    static input (constant folding), x + 0 (NoopElimination),
                    a Cast to the input's own type (CastElimination), and a
                    Div(1, x) * y (DivMulFusion)
  if_const.onnx     an If whose condition is a Constant: its branch is inlined
  unsorted.onnx     nodes out of topological order (the loader sorts them)
  openvino_fe.onnx  what OpenVINO's ONNX frontend creates no op for: a Constant
                    node, an Identity of a weight, a Dropout in inference, a
                    one-input Sum; and an Identity of a computed value (kept)
  openvino_train.onnx  a Dropout in training mode (the frontend refuses it)

Run with the system python that has onnx (/usr/bin/python3 tools/make_lower_tests.py).
The output is committed; rerun after changing this script.
"""
import os

import numpy as np
import onnx
from onnx import TensorProto as TP
from onnx import helper as h
from onnx import numpy_helper

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "data", "lower")
F32, I64 = TP.FLOAT, TP.INT64
rng = np.random.default_rng(0)


def vi(name, elem, shape):
    return h.make_tensor_value_info(name, elem, shape)


def init(name, arr):
    return numpy_helper.from_array(np.asarray(arr), name)


def const(name, arr):
    return h.make_node("Constant", [], [name], name=name + "_node",
                       value=numpy_helper.from_array(np.asarray(arr), name + "_value"))


def save(name, nodes, inputs, outputs, inits=(), opset=17, check=True):
    g = h.make_graph(nodes, name, inputs, outputs, initializer=list(inits))
    m = h.make_model(g, opset_imports=[h.make_opsetid("", opset)], producer_name="make_lower_tests")
    m.ir_version = 8
    if check:
        onnx.checker.check_model(m)
    onnx.save(m, os.path.join(ROOT, name + ".onnx"))


def torch_like():
    f = np.float32
    nodes = [
        h.make_node("Identity", ["conv.weight"], ["w_id"], name="identity_w"),
        h.make_node("Conv", ["x", "w_id", "conv.bias"], ["c"], name="conv", pads=[1, 1, 1, 1]),
        h.make_node("BatchNormalization", ["c", "bn.scale", "bn.bias", "bn.mean", "bn.var"],
                    ["b"], name="bn", epsilon=1e-5),
        h.make_node("Relu", ["b"], ["r"], name="relu"),
        h.make_node("Dropout", ["r"], ["d"], name="dropout"),
        h.make_node("Flatten", ["d"], ["fl"], name="flatten", axis=1),
        const("shape", np.array([1, 4 * 6 * 6], np.int64)),
        h.make_node("Reshape", ["fl", "shape"], ["rs"], name="reshape"),
        h.make_node("MatMul", ["rs", "fc.weight"], ["mm"], name="matmul"),
        h.make_node("Add", ["mm", "fc.bias"], ["y"], name="add"),
    ]
    inits = [init("conv.weight", rng.standard_normal((4, 3, 3, 3)).astype(f)),
             init("conv.bias", rng.standard_normal(4).astype(f)),
             init("bn.scale", rng.uniform(0.5, 1.5, 4).astype(f)),
             init("bn.bias", rng.standard_normal(4).astype(f)),
             init("bn.mean", rng.standard_normal(4).astype(f)),
             init("bn.var", rng.uniform(0.5, 1.5, 4).astype(f)),
             init("fc.weight", rng.standard_normal((4 * 6 * 6, 5)).astype(f)),
             init("fc.bias", rng.standard_normal(5).astype(f))]
    save("torch_like", nodes, [vi("x", F32, [1, 3, 6, 6])], [vi("y", F32, [1, 5])], inits)


def fold():
    f = np.float32
    nodes = [
        h.make_node("Shape", ["x"], ["s"], name="shape"),
        h.make_node("Gather", ["s", "zero"], ["n"], name="gather", axis=0),
        h.make_node("Unsqueeze", ["n", "axes"], ["n1"], name="unsqueeze"),
        h.make_node("Concat", ["n1", "minus1"], ["target"], name="concat", axis=0),
        h.make_node("Reshape", ["x", "target"], ["flat"], name="reshape"),
        h.make_node("Add", ["flat", "zero_f"], ["a"], name="add_zero"),
        h.make_node("Cast", ["a"], ["c"], name="cast_same", to=F32),
        h.make_node("Div", ["one_f", "c"], ["inv"], name="div"),
        h.make_node("Mul", ["inv", "scale"], ["y"], name="mul"),
    ]
    inits = [init("zero", np.array(0, np.int64)), init("axes", np.array([0], np.int64)),
             init("minus1", np.array([-1], np.int64)), init("zero_f", np.array(0, f)),
             init("one_f", np.array(1, f)), init("scale", rng.uniform(1, 2, 12).astype(f))]
    save("fold", nodes, [vi("x", F32, [2, 3, 4])], [vi("y", F32, [2, 12])], inits)


def if_const():
    then_g = h.make_graph([h.make_node("Add", ["x", "x"], ["t"], name="then_add")], "then", [],
                          [vi("t", F32, [2])])
    else_g = h.make_graph([h.make_node("Neg", ["x"], ["e"], name="else_neg")], "else", [],
                          [vi("e", F32, [2])])
    nodes = [const("cond", np.array(True)),
             h.make_node("If", ["cond"], ["i"], name="if", then_branch=then_g,
                         else_branch=else_g),
             h.make_node("Relu", ["i"], ["y"], name="relu")]
    save("if_const", nodes, [vi("x", F32, [2])], [vi("y", F32, [2])])


def unsorted():
    nodes = [h.make_node("Relu", ["t"], ["y"], name="second"),
             h.make_node("Neg", ["x"], ["t"], name="first")]
    save("unsorted", nodes, [vi("x", F32, [2])], [vi("y", F32, [2])], check=False)


def openvino_fe():
    w = rng.standard_normal((4, 4)).astype(np.float32)
    nodes = [const("scale", np.array([2.0], np.float32)),
             h.make_node("Identity", ["w"], ["w_id"], name="identity_w"),
             h.make_node("MatMul", ["x", "w_id"], ["a"], name="mm"),
             h.make_node("Identity", ["a"], ["b"], name="identity_a"),
             h.make_node("Mul", ["b", "scale"], ["c"], name="mul"),
             h.make_node("Dropout", ["c"], ["d"], name="drop"),
             h.make_node("Sum", ["d"], ["e"], name="sum1"),
             h.make_node("Relu", ["e"], ["y"], name="relu")]
    save("openvino_fe", nodes, [vi("x", F32, [1, 4])], [vi("y", F32, [1, 4])], [init("w", w)])


def openvino_train():
    nodes = [h.make_node("Dropout", ["x", "ratio", "training"], ["d"], name="drop_train"),
             h.make_node("Relu", ["d"], ["y"], name="relu")]
    inits = [init("ratio", np.array(0.5, np.float32)), init("training", np.array(True))]
    save("openvino_train", nodes, [vi("x", F32, [1, 4])], [vi("y", F32, [1, 4])], inits)


def main():
    os.makedirs(ROOT, exist_ok=True)
    torch_like()
    fold()
    if_const()
    unsorted()
    openvino_fe()
    openvino_train()


if __name__ == "__main__":
    main()
