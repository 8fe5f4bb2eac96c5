#!/usr/bin/env python3
"""Test models for convgate bisect and gate (tests/data/bisect/).

  swish_original.onnx   x -> MatMul -> Add -> SiLU (h * Sigmoid(h)) -> MatMul -> y
  swish_rewritten.onnx  the same graph, value for value, except that a
                        'rewrite' gone wrong computes the Sigmoid of -h: a
                        Neg node is inserted and the Sigmoid node 'silu_sig'
                        reads it. Every other value keeps its name, so bisect
                        can compare the two models tensor by tensor; the first
                        divergent tensor must be 'sig' (node 'silu_sig').
  rmsnorm_fp16.onnx     an activation gain (x * 8) followed by RMSNorm over
                        4096 channels: Pow 2 -> ReduceMean -> Add eps -> Sqrt
                        -> Div -> Mul gamma. With inputs in [-1, 1) the sum of
                        squares is about 4096 * 64 / 3 = 87381, past fp16's
                        65504: on an fp16 target that accumulates in fp16 the
                        mean becomes inf and the output exactly zero.

Deterministic: fixed numpy seed, so a rerun gives byte-identical files.
Run with /usr/bin/python3 (onnx 1.12, numpy):
    /usr/bin/python3 tools/make_wrong_rewrite.py [OUTDIR]
"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto as TP
from onnx import helper as h
from onnx import numpy_helper as nh


def save(graph, path):
    m = h.make_model(graph, opset_imports=[h.make_opsetid("", 17)],
                     producer_name="convgate-tools")
    m.ir_version = 8
    onnx.checker.check_model(m)
    onnx.save(m, path)


def swish(out, wrong):
    rng = np.random.default_rng(20240601)
    w1 = nh.from_array(rng.standard_normal((16, 32)).astype(np.float32) * 0.25, "w1")
    b1 = nh.from_array(rng.standard_normal((32,)).astype(np.float32) * 0.1, "b1")
    w2 = nh.from_array(rng.standard_normal((32, 8)).astype(np.float32) * 0.25, "w2")
    nodes = [h.make_node("MatMul", ["x", "w1"], ["mm1"], name="fc1"),
             h.make_node("Add", ["mm1", "b1"], ["h"], name="fc1_bias")]
    if wrong:
        nodes.append(h.make_node("Neg", ["h"], ["h_neg"], name="rewrite_neg"))
        nodes.append(h.make_node("Sigmoid", ["h_neg"], ["sig"], name="silu_sig"))
    else:
        nodes.append(h.make_node("Sigmoid", ["h"], ["sig"], name="silu_sig"))
    nodes += [h.make_node("Mul", ["h", "sig"], ["act"], name="silu_mul"),
              h.make_node("MatMul", ["act", "w2"], ["y"], name="fc2")]
    g = h.make_graph(nodes, "swish_wrong" if wrong else "swish",
                     [h.make_tensor_value_info("x", TP.FLOAT, [2, 16])],
                     [h.make_tensor_value_info("y", TP.FLOAT, [2, 8])], [w1, b1, w2])
    save(g, os.path.join(out, "swish_rewritten.onnx" if wrong else "swish_original.onnx"))


def rmsnorm(out):
    rng = np.random.default_rng(20240602)
    c = 4096
    inits = [nh.from_array(np.array(8.0, dtype=np.float32), "gain"),
             nh.from_array(np.array(2.0, dtype=np.float32), "two"),
             nh.from_array(np.array(1e-6, dtype=np.float32), "eps"),
             nh.from_array((1.0 + 0.1 * rng.standard_normal(c)).astype(np.float32), "gamma")]
    nodes = [h.make_node("Mul", ["x", "gain"], ["xs"], name="gain"),
             h.make_node("Pow", ["xs", "two"], ["sq"], name="square"),
             h.make_node("ReduceMean", ["sq"], ["ms"], name="mean_sq", axes=[-1], keepdims=1),
             h.make_node("Add", ["ms", "eps"], ["ms_eps"], name="add_eps"),
             h.make_node("Sqrt", ["ms_eps"], ["rms"], name="rms"),
             h.make_node("Div", ["xs", "rms"], ["normed"], name="normalize"),
             h.make_node("Mul", ["normed", "gamma"], ["y"], name="scale")]
    g = h.make_graph(nodes, "rmsnorm_fp16",
                     [h.make_tensor_value_info("x", TP.FLOAT, [1, 4, c])],
                     [h.make_tensor_value_info("y", TP.FLOAT, [1, 4, c])], inits)
    save(g, os.path.join(out, "rmsnorm_fp16.onnx"))


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(here, "..", "tests", "data", "bisect")
    os.makedirs(out, exist_ok=True)
    swish(out, False)
    swish(out, True)
    rmsnorm(out)


if __name__ == "__main__":
    main()
