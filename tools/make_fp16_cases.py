#!/usr/bin/python3
"""Writes the crafted fp16 failure cases of tests/unit/test_targetpath.c.

Each model is correct in fp32 and breaks on a GPU-style delegate that stores
and accumulates in fp16 (the litert-gpu profile), for the reason its name
gives; the inputs are what trigger it:

  tests/data/fp16/rmsnorm_overflow.onnx     x / sqrt(mean(x*x) + eps) * g over the last
                                            axis; rows of |x| ~ 100 have a sum of squares
                                            above 65504 (fp16 max), so in fp16 the mean is
                                            inf and the row comes out exactly zero
  tests/data/fp16/layernorm_precision.onnx  LayerNorm (ReduceMean, Sub, Pow, ReduceMean, Add,
                                            Sqrt, Div, Mul, Add) of values ~300 with std ~0.3:
                                            fp16's spacing at 300 is 0.25, so the deviations
                                            and the variance lose most of their bits
  tests/data/fp16/global_mean.onnx          mean over C,H,W of a 1x3x32x32 map of values
                                            ~100: an fp16 accumulator passes 65504 after ~650
                                            elements (inf); with fp32 accumulation it is fine
  tests/data/fp16/<case>_inputs/<set>/x.npy input sets (the layout of --inputs DIR)

and two models that check the emulation itself:

  tests/data/fp16/boundary.onnx             a = Erf(x) on the CPU (litert-gpu has no Erf),
                                            y = a * 1 + x on the GPU: a and x cross into the
                                            partition and must be rounded there, while the
                                            graph output a stays fp32
  tests/data/fp16/dot_accumulate.onnx       MatMul and Gemm of x (160 x 32.0) with a column
                                            whose products are +1024 (80 times) then -1024:
                                            exactly 0 in fp32, inf with an fp16 accumulator

The RMSNorm case is also the bundled example of gate 3 failing:
examples/rmsnorm_fp16.onnx with examples/rmsnorm_fp16_inputs/<set>/x.npy.

The RMSNorm and global-mean inputs are exactly representable in fp16 (and so
is every square in the RMSNorm case), so the first tensor that differs between
fp32 and the fp16 path is the reduction's, not a rounding of the input. The
LayerNorm inputs are not: rounding them to fp16 is part of that failure.

Run with the system python that has onnx (/usr/bin/python3 tools/make_fp16_cases.py).
The output is committed; rerun after changing this script.
"""
import os

import numpy as np
import onnx
from onnx import TensorProto as TP
from onnx import helper as h
from onnx import numpy_helper

HERE = os.path.dirname(os.path.abspath(__file__))
DATA = os.path.join(HERE, "..", "tests", "data", "fp16")
EXAMPLES = os.path.join(HERE, "..", "examples")
OPSET = 13  # ReduceMean takes axes as an attribute up to opset 17; 13 is what most exporters emit


def const(name, arr):
    return numpy_helper.from_array(np.asarray(arr, dtype=np.float32), name)


def save(model, path):
    onnx.checker.check_model(model)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    onnx.save(model, path)


def save_sets(root, sets):
    for set_name, tensors in sets.items():
        d = os.path.join(root, set_name)
        os.makedirs(d, exist_ok=True)
        for name, arr in tensors.items():
            assert arr.dtype == np.float32
            assert np.array_equal(arr.astype(np.float16).astype(np.float32), arr), name
            np.save(os.path.join(d, name + ".npy"), arr)


def graph_model(name, nodes, inputs, outputs, inits):
    g = h.make_graph(nodes, name, inputs, outputs, inits)
    m = h.make_model(g, opset_imports=[h.make_opsetid("", OPSET)],
                     producer_name="convgate tools/make_fp16_cases.py")
    m.ir_version = 7
    return m


# --- (a) RMSNorm whose sum of squares overflows fp16 ------------------------------------

def rmsnorm_model():
    d = 64
    rng = np.random.default_rng(7)
    g = (rng.integers(12, 20, size=d) / 16.0).astype(np.float32)  # 0.75..1.19, exact in fp16
    nodes = [
        h.make_node("Mul", ["x", "x"], ["x_sq"], name="square"),
        h.make_node("ReduceMean", ["x_sq"], ["mean_sq"], name="mean_sq", axes=[-1], keepdims=1),
        h.make_node("Add", ["mean_sq", "eps"], ["mean_sq_eps"], name="add_eps"),
        h.make_node("Sqrt", ["mean_sq_eps"], ["rms"], name="rms"),
        h.make_node("Div", ["x", "rms"], ["x_norm"], name="normalize"),
        h.make_node("Mul", ["x_norm", "g"], ["y"], name="scale"),
    ]
    return graph_model(
        "rmsnorm_fp16", nodes,
        [h.make_tensor_value_info("x", TP.FLOAT, [1, 4, d])],
        [h.make_tensor_value_info("y", TP.FLOAT, [1, 4, d])],
        [const("eps", 1e-5), const("g", g)])


def rmsnorm_inputs():
    """Rows 0-1 of magnitude ~1 (fine in fp16), rows 2-3 of magnitude ~100:
    even multiples of 4 in [64, 124] with random signs, whose squares (4096..15376,
    multiples of 16) are exact in fp16 but sum to > 262144 per row."""
    sets = {}
    for s in range(2):
        rng = np.random.default_rng(100 + s)
        x = np.empty((1, 4, 64), np.float32)
        x[0, :2] = rng.integers(-32, 33, size=(2, 64)) / 32.0
        x[0, 2:] = rng.integers(16, 32, size=(2, 64)) * 4.0 * rng.choice([-1.0, 1.0], (2, 64))
        sets["sample_%d" % s] = {"x": x}
    return sets


# --- (b) LayerNorm with a large mean and a small variance -----------------------------

def layernorm_model():
    d = 64
    rng = np.random.default_rng(11)
    gamma = (rng.integers(12, 20, size=d) / 16.0).astype(np.float32)
    beta = (rng.integers(-8, 9, size=d) / 16.0).astype(np.float32)
    nodes = [
        h.make_node("ReduceMean", ["x"], ["mean"], name="mean", axes=[-1], keepdims=1),
        h.make_node("Sub", ["x", "mean"], ["centered"], name="center"),
        h.make_node("Pow", ["centered", "two"], ["centered_sq"], name="square"),
        h.make_node("ReduceMean", ["centered_sq"], ["var"], name="variance", axes=[-1],
                    keepdims=1),
        h.make_node("Add", ["var", "eps"], ["var_eps"], name="add_eps"),
        h.make_node("Sqrt", ["var_eps"], ["std"], name="std"),
        h.make_node("Div", ["centered", "std"], ["x_norm"], name="normalize"),
        h.make_node("Mul", ["x_norm", "gamma"], ["scaled"], name="scale"),
        h.make_node("Add", ["scaled", "beta"], ["y"], name="shift"),
    ]
    return graph_model(
        "layernorm_fp16", nodes,
        [h.make_tensor_value_info("x", TP.FLOAT, [1, 8, d])],
        [h.make_tensor_value_info("y", TP.FLOAT, [1, 8, d])],
        [const("two", 2.0), const("eps", 1e-5), const("gamma", gamma), const("beta", beta)])


def layernorm_inputs():
    """Values ~300 with std ~0.3, on a 1/128 grid (exact in fp16 only at the
    coarser spacing 0.25 of [256, 512): the input itself is what fp16 storage
    rounds, as a GPU delegate's fp16 input tensor does)."""
    sets = {}
    for s in range(2):
        rng = np.random.default_rng(200 + s)
        x = 300.0 + np.round(rng.normal(0.0, 0.3, size=(1, 8, 64)) * 128.0) / 128.0
        sets["sample_%d" % s] = {"x": x.astype(np.float32)}
    return sets


# --- (c) a large global mean ----------------------------------------------------------

def global_mean_model():
    nodes = [
        h.make_node("ReduceMean", ["x"], ["mean"], name="global_mean", axes=[1, 2, 3],
                    keepdims=1),
        h.make_node("Mul", ["mean", "scale"], ["y"], name="scale"),
    ]
    return graph_model(
        "global_mean_fp16", nodes,
        [h.make_tensor_value_info("x", TP.FLOAT, [1, 3, 32, 32])],
        [h.make_tensor_value_info("y", TP.FLOAT, [1, 1, 1, 1])],
        [const("scale", 0.5)])


def global_mean_inputs():
    """3072 values in [90, 110] on a 1/16 grid (exact in fp16)."""
    sets = {}
    for s in range(2):
        rng = np.random.default_rng(300 + s)
        x = rng.integers(90 * 16, 110 * 16 + 1, size=(1, 3, 32, 32)) / 16.0
        sets["sample_%d" % s] = {"x": x.astype(np.float32)}
    return sets


# --- emulation checks ---------------------------------------------------------------

def boundary_model():
    nodes = [
        h.make_node("Erf", ["x"], ["a"], name="erf"),
        h.make_node("Mul", ["a", "one"], ["a1"], name="gpu_scale"),
        h.make_node("Add", ["a1", "x"], ["y"], name="gpu_add"),
    ]
    return graph_model(
        "boundary_fp16", nodes,
        [h.make_tensor_value_info("x", TP.FLOAT, [1, 64])],
        [h.make_tensor_value_info("a", TP.FLOAT, [1, 64]),
         h.make_tensor_value_info("y", TP.FLOAT, [1, 64])],
        [const("one", 1.0)])


def dot_model():
    k = 160
    w = np.zeros((k, 2), np.float32)
    w[:80, 0] = 32.0
    w[80:, 0] = -32.0
    w[:, 1] = 0.5
    nodes = [
        h.make_node("MatMul", ["x", "w"], ["y_matmul"], name="matmul"),
        h.make_node("Gemm", ["x", "w", "bias"], ["y_gemm"], name="gemm"),
    ]
    return graph_model(
        "dot_fp16", nodes,
        [h.make_tensor_value_info("x", TP.FLOAT, [1, k])],
        [h.make_tensor_value_info("y_matmul", TP.FLOAT, [1, 2]),
         h.make_tensor_value_info("y_gemm", TP.FLOAT, [1, 2])],
        [const("w", w), const("bias", [1.0, 2.0])])


def save_layernorm_inputs(root, sets):
    # layernorm inputs are deliberately not fp16-exact (see layernorm_inputs)
    for set_name, tensors in sets.items():
        d = os.path.join(root, set_name)
        os.makedirs(d, exist_ok=True)
        for name, arr in tensors.items():
            np.save(os.path.join(d, name + ".npy"), arr)


def main():
    save(rmsnorm_model(), os.path.join(DATA, "rmsnorm_overflow.onnx"))
    save_sets(os.path.join(DATA, "rmsnorm_overflow_inputs"), rmsnorm_inputs())
    save(layernorm_model(), os.path.join(DATA, "layernorm_precision.onnx"))
    save_layernorm_inputs(os.path.join(DATA, "layernorm_precision_inputs"), layernorm_inputs())
    save(global_mean_model(), os.path.join(DATA, "global_mean.onnx"))
    save_sets(os.path.join(DATA, "global_mean_inputs"), global_mean_inputs())
    save(boundary_model(), os.path.join(DATA, "boundary.onnx"))
    save(dot_model(), os.path.join(DATA, "dot_accumulate.onnx"))
    save(rmsnorm_model(), os.path.join(EXAMPLES, "rmsnorm_fp16.onnx"))
    save_sets(os.path.join(EXAMPLES, "rmsnorm_fp16_inputs"), rmsnorm_inputs())


if __name__ == "__main__":
    main()
