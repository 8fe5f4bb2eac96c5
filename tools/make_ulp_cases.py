#!/usr/bin/env python3
"""Single-op graphs for tests/scripts/ort_ulps.sh: the float kernels that must
round like ONNX Runtime 1.22's CPU EP, each on its own input, all in one
model so one ORT run and one convgate run cover them.

  make_ulp_cases.py --seed S OUTDIR

writes OUTDIR/cases.onnx, OUTDIR/in/<input>.npy, OUTDIR/ops.json (output
name -> op type, for the per-op table) and OUTDIR/quant.json (the outputs
of the DynamicQuantizeLinear that reads each case: quantized values and
scale). Shapes are chosen so that the row
lengths are not multiples of 4, 8 or 16 (vector tails) and, for Softmax,
cross MLAS's 48-element blocks."""
import argparse
import json
import os

import numpy as np
import onnx
from onnx import TensorProto as T
from onnx import helper, numpy_helper


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("out")
    a = ap.parse_args()
    rng = np.random.default_rng(a.seed)
    os.makedirs(a.out + "/in", exist_ok=True)
    nodes, inputs, outputs, inits, ops, quant = [], [], [], [], {}, []

    def inp(name, arr):
        arr = arr.astype(np.float32)
        np.save("%s/in/%s.npy" % (a.out, name), arr)
        inputs.append(helper.make_tensor_value_info(name, T.FLOAT, list(arr.shape)))
        return name

    def out(name, op):
        outputs.append(helper.make_tensor_value_info(name, T.FLOAT, None))
        ops[name] = op
        # and quantized, as a dynamically quantized model's next layer does
        q = [name + "_q", name + "_qs", name + "_qz"]
        nodes.append(helper.make_node("DynamicQuantizeLinear", [name], q))
        outputs.append(helper.make_tensor_value_info(q[0], T.UINT8, None))
        outputs.append(helper.make_tensor_value_info(q[1], T.FLOAT, None))
        quant.extend(q[:2])

    def init(name, arr):
        inits.append(numpy_helper.from_array(arr.astype(np.float32), name))
        return name

    # unary activations: a spread over the approximations' ranges, the
    # clamps (Sigmoid +-18, Tanh +-9) and small values
    for op, scale in (("Sigmoid", 6.0), ("Tanh", 3.0), ("Erf", 1.5), ("Exp", 20.0)):
        for i, shape in enumerate(((5, 67), (1, 3, 13, 11))):
            x = rng.standard_normal(shape) * scale
            x.flat[:6] = [0.0, -25.0, 25.0, 1e-4, -3e-6, 17.9][:6]
            name = "%s_%d" % (op.lower(), i)
            nodes.append(helper.make_node(op, [inp(name + "_x", x)], [name]))
            out(name, op)

    # Softmax / LogSoftmax over the last axis: rows of 7, 53, 100 and 211
    for op in ("Softmax", "LogSoftmax"):
        for d in (7, 53, 100, 211):
            x = rng.standard_normal((3, d)) * 3
            name = "%s_%d" % (op.lower(), d)
            nodes.append(helper.make_node(op, [inp(name + "_x", x)], [name], axis=-1))
            out(name, op)

    # and along a middle axis (opset 13: ORT transposes it last)
    for op in ("Softmax", "LogSoftmax"):
        x = rng.standard_normal((2, 37, 5)) * 3
        name = "%s_axis1" % op.lower()
        nodes.append(helper.make_node(op, [inp(name + "_x", x)], [name], axis=1))
        out(name, op)

    # ReduceMean over the last axis (and over H, W of NCHW), fed by a Neg
    # so that ORT reads a buffer it allocated (its Eigen sum's vector start
    # depends on the address); -mean(-x) is mean(x) exactly
    # (ORT's paths: kept-then-reduced and reduce-all by Eigen's sum, the
    # others in order; RK from 17 rows and 257 columns has its own loop)
    red = (((6, 53), [-1]), ((2, 5, 7, 9), [2, 3]), ((3, 130), [1]), ((4, 3), [-1]),
           ((7, 30), [0]), ((40, 300), [0]), ((1, 6, 10), [1]), ((5, 37), None))
    for op in ("ReduceMean", "ReduceSum"):
        for i, (shape, axes) in enumerate(red):
            x = rng.standard_normal(shape) * 2 + 0.5
            name = "%s_%d" % (op.lower(), i)
            nodes.append(helper.make_node("Neg", [inp(name + "_x", x)], [name + "_neg"]))
            ins = [name + "_neg"]
            if op == "ReduceSum" and axes is not None:  # opset 13: axes as an input
                inits.append(numpy_helper.from_array(np.array(axes, np.int64), name + "_axes"))
                ins.append(name + "_axes")
            attrs = {"axes": axes} if op == "ReduceMean" and axes is not None else {}
            nodes.append(helper.make_node(op, ins, [name], keepdims=1, **attrs))
            out(name, op)

    # LayerNormalization over the last axis / the last two
    for i, (shape, axis, off) in enumerate((((4, 6, 29), -1, 0.0), ((2, 3, 5, 7), -2, 3.0),
                                            ((3, 64), -1, 1.0))):
        x = rng.standard_normal(shape) * 2 + off
        nshape = shape[axis:]
        name = "layernorm_%d" % i
        sc = init(name + "_scale", rng.standard_normal(nshape) * 0.5 + 1)
        ins = [inp(name + "_x", x), sc]
        if i != 1:
            ins.append(init(name + "_bias", rng.standard_normal(nshape) * 0.1))
        nodes.append(helper.make_node("LayerNormalization", ins, [name], axis=axis, epsilon=1e-5))
        out(name, "LayerNormalization")

    # cubic Resize, NCHW and 2-D, up and down, several coordinate modes
    cubic = (((1, 3, 9, 11), [1, 1, 2, 2], None, "half_pixel", 0),
             ((1, 2, 10, 7), None, [1, 2, 23, 15], "pytorch_half_pixel", 0),
             ((2, 2, 12, 13), [1, 1, 0.6, 0.75], None, "asymmetric", 0),
             ((1, 1, 8, 9), None, [1, 1, 15, 17], "align_corners", 0),
             ((1, 2, 9, 10), [1, 1, 1.75, 2.25], None, "half_pixel", 1),
             ((11, 13), [1.5, 2.0], None, "half_pixel", 0))
    for i, (shape, scales, sizes, ctm, excl) in enumerate(cubic):
        x = rng.standard_normal(shape) * 2
        name = "resize_%d" % i
        roi = init(name + "_roi", np.zeros(0))
        ins = [inp(name + "_x", x), roi]
        if scales is not None:
            ins.append(init(name + "_scales", np.array(scales)))
        else:
            ins.append(init(name + "_scales", np.zeros(0)))
            s = numpy_helper.from_array(np.array(sizes, np.int64), name + "_sizes")
            inits.append(s)
            ins.append(name + "_sizes")
        nodes.append(helper.make_node("Resize", ins, [name], mode="cubic",
                                      coordinate_transformation_mode=ctm, exclude_outside=excl))
        out(name, "Resize")

    g = helper.make_graph(nodes, "ulp_cases", inputs, outputs, inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    onnx.save(m, a.out + "/cases.onnx")
    with open(a.out + "/ops.json", "w") as f:
        json.dump(ops, f)
    with open(a.out + "/quant.json", "w") as f:
        json.dump(quant, f)


if __name__ == "__main__":
    main()
