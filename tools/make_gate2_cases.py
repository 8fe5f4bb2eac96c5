#!/usr/bin/python3
"""Writes the models of tests/scripts/gate2_cases.sh to tests/data/gate2/.

Gate 2 ("runs where intended") cases, each small and built so the verdict
does not hang on timing noise:

  topk_k.onnx       TopK whose k is floor(max(x)) - 2: on random inputs in
                    [-1, 1) k is negative and the model itself fails (as
                    torchvision's detectors do on random images); on
                    topk_k_inputs/good (max 6.5) it runs, on
                    topk_k_inputs/bad (max 0.5) it fails again
  cpu_heavy.onnx    four Tanh NNAPI takes, then an Einsum (no NNAPI builder)
                    doing most of the work: a minority of the time on nnapi,
                    and yet the mixed estimate beats the CPU alone
  cpu_only.onnx     Einsum then Erf: nothing NNAPI takes (0 nodes)
  copy_bound.onnx   six bilinear Resizes NNAPI takes (data movement: no
                    assumed speedup, so no gain), then a ReduceMax it does not: the
                    majority of the time on nnapi, yet the boundary copy
                    makes the mixed estimate slower than the CPU alone
  dyn_seq.onnx      a transformer-like input [batch, seq, 64] (both
                    symbolic): gate and assign must state or refuse to
                    guess the dims
  dyn_unnamed.onnx  an input [1, ?] whose dim has no name (Silero VAD's)
  if_ok.onnx        an If whose branches (Relu, Neg) OpenVINO's ONNX frontend
                    translates: the If goes to openvino with them
  if_det.onnx       the same with a Det in the else branch, which the
                    frontend does not translate: the If stays on the CPU

Run with the system python that has onnx (/usr/bin/python3
tools/make_gate2_cases.py). The output is committed; rerun after changing
this script.
"""
import os

import numpy as np
import onnx
from onnx import TensorProto as TP
from onnx import helper as h
from onnx import numpy_helper

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "data", "gate2")
F32, I64 = TP.FLOAT, TP.INT64
rng = np.random.default_rng(20261201)


def vi(name, elem, shape):
    return h.make_tensor_value_info(name, elem, shape)


def init(name, arr):
    return numpy_helper.from_array(np.asarray(arr), name)


def save(graph, name):
    m = h.make_model(graph, opset_imports=[h.make_opsetid("", 17)], producer_name="make_gate2_cases")
    m.ir_version = 8
    onnx.checker.check_model(m)
    onnx.save(m, os.path.join(ROOT, name))


def topk_k():
    nodes = [
        h.make_node("ReduceMax", ["x"], ["mx"], name="max", keepdims=0),
        h.make_node("Floor", ["mx"], ["fl"], name="floor"),
        h.make_node("Cast", ["fl"], ["fi"], name="to_int", to=I64),
        h.make_node("Sub", ["fi", "two"], ["k0"], name="minus_two"),
        h.make_node("Reshape", ["k0", "one"], ["k"], name="k"),
        h.make_node("Relu", ["x"], ["r"], name="relu"),
        h.make_node("TopK", ["r", "k"], ["vals", "idx"], name="topk", axis=1),
    ]
    g = h.make_graph(nodes, "topk_k", [vi("x", F32, [1, 8])],
                     [vi("vals", F32, [1, None]), vi("idx", I64, [1, None])],
                     [init("two", np.array(2, np.int64)), init("one", np.array([1], np.int64))])
    save(g, "topk_k.onnx")
    for sub, top in (("good", 6.5), ("bad", 0.5)):
        d = os.path.join(ROOT, "topk_k_inputs", sub)
        os.makedirs(d, exist_ok=True)
        x = rng.uniform(0, top, (1, 8)).astype(np.float32)
        x[0, 3] = top
        np.save(os.path.join(d, "x.npy"), x)


def cpu_heavy():
    w = rng.standard_normal((384, 16)).astype(np.float32)
    nodes, prev = [], "x"
    for i in range(4):
        nodes.append(h.make_node("Tanh", [prev], [f"t{i}"], name=f"tanh{i}"))
        prev = f"t{i}"
    nodes.append(h.make_node("Einsum", [prev, "w"], ["z"], name="einsum",
                             equation="ij,jk->ik"))
    g = h.make_graph(nodes, "cpu_heavy", [vi("x", F32, [64, 384])], [vi("z", F32, [64, 16])],
                     [init("w", w)])
    save(g, "cpu_heavy.onnx")
    w = rng.standard_normal((384, 384)).astype(np.float32)
    nodes = [
        h.make_node("Einsum", ["x", "w"], ["y"], name="einsum", equation="ij,jk->ik"),
        h.make_node("Erf", ["y"], ["z"], name="erf"),
    ]
    g = h.make_graph(nodes, "cpu_only", [vi("x", F32, [64, 384])], [vi("z", F32, [64, 384])],
                     [init("w", w)])
    save(g, "cpu_only.onnx")


def copy_bound():
    nodes, prev = [], "x"
    for i in range(3):
        nodes.append(h.make_node("Resize", [prev, "", "up"], [f"u{i}"], name=f"up{i}",
                                 mode="linear"))
        nodes.append(h.make_node("Resize", [f"u{i}", "", "down"], [f"d{i}"], name=f"down{i}",
                                 mode="linear"))
        prev = f"d{i}"
    nodes.append(h.make_node("ReduceMax", [prev], ["y"], name="reducemax", keepdims=0))
    g = h.make_graph(nodes, "copy_bound", [vi("x", F32, [1, 8, 128, 128])], [vi("y", F32, [])],
                     [init("up", np.array([1, 1, 2, 2], np.float32)),
                      init("down", np.array([1, 1, 0.5, 0.5], np.float32))])
    save(g, "copy_bound.onnx")


def dynamic():
    w = rng.standard_normal((64, 64)).astype(np.float32)
    nodes = [
        h.make_node("MatMul", ["tokens", "w"], ["y"], name="proj"),
        h.make_node("Softmax", ["y"], ["p"], name="softmax", axis=-1),
    ]
    g = h.make_graph(nodes, "dyn_seq", [vi("tokens", F32, ["batch", "seq", 64])],
                     [vi("p", F32, ["batch", "seq", 64])], [init("w", w)])
    save(g, "dyn_seq.onnx")
    nodes = [h.make_node("Relu", ["audio"], ["y"], name="relu")]
    g = h.make_graph(nodes, "dyn_unnamed", [vi("audio", F32, [1, None])],
                     [vi("y", F32, [1, None])])
    save(g, "dyn_unnamed.onnx")


def control_flow():
    def branch(name, nodes, out):
        return h.make_graph(nodes, name, [], [vi(out, F32, [3, 3])])
    then_g = branch("then_body", [h.make_node("Relu", ["x"], ["t"], name="then_relu")], "t")
    ok_else = branch("else_body", [h.make_node("Neg", ["x"], ["e"], name="else_neg")], "e")
    det_else = branch("else_body", [h.make_node("Det", ["x"], ["d"], name="else_det"),
                                    h.make_node("Mul", ["x", "d"], ["e"], name="else_mul")], "e")
    for name, els in (("if_ok.onnx", ok_else), ("if_det.onnx", det_else)):
        nodes = [
            h.make_node("ReduceSum", ["x"], ["s"], name="sum", keepdims=0),
            h.make_node("Greater", ["s", "zero"], ["cond"], name="positive"),
            h.make_node("If", ["cond"], ["y0"], name="branch", then_branch=then_g,
                        else_branch=els),
            h.make_node("Abs", ["y0"], ["y"], name="abs"),
        ]
        g = h.make_graph(nodes, name[:-5], [vi("x", F32, [3, 3])], [vi("y", F32, [3, 3])],
                         [init("zero", np.array(0, np.float32))])
        save(g, name)


def main():
    os.makedirs(ROOT, exist_ok=True)
    control_flow()
    topk_k()
    cpu_heavy()
    copy_bound()
    dynamic()


if __name__ == "__main__":
    main()
