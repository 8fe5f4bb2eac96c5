#!/usr/bin/python3
"""Writes the dynamically quantized model of tests/scripts/quant_parity.sh
(tests/data/quant/), built as onnxruntime.quantization.quantize_dynamic
lays out a quantized Conv (uint8 weights, ConvInteger only takes uint8 on
ONNX Runtime's CPU provider):

  x -> DynamicQuantizeLinear -> ConvInteger(w_q, x_zp, w_zp) -> Cast(float)
    -> Mul(x_scale * w_scale) -> Add(bias) -> Relu            (one "qconv")

  dynquant_resize.onnx   x [1,3,24,24] -> qconv 3->8 (3x3, pad 1) -> Relu
                         -> Resize linear x2 (half_pixel, scales) [1,8,48,48]
                         -> qconv 8->8 -> Relu -> Resize linear to 61x61
                         (sizes 61x61, half_pixel) -> qconv 8->1 -> Sigmoid -> mask
                         Every DynamicQuantizeLinear's outputs are graph outputs
                         too (q0, s0, z0, ...): the quantized tensors are where a
                         1-ulp difference upstream (the linear Resize feeding a
                         quantizer, ISNet's failure) shows as a flipped step.
  dynquant_resize_input.npy  the input (seeded, values in [0, 1) like an image)

Run with /usr/bin/python3 (onnx, numpy); the output is committed.
"""
import os

import numpy as np
import onnx
from onnx import TensorProto as TP
from onnx import helper as h
from onnx import numpy_helper as nh

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "..", "tests", "data", "quant")


def quantize_weight(w):
    """Per-tensor asymmetric uint8, as quantize_dynamic's QUInt8 weights."""
    lo, hi = min(float(w.min()), 0.0), max(float(w.max()), 0.0)
    scale = np.float32((hi - lo) / 255.0)
    zp = np.uint8(np.clip(np.round(-lo / scale), 0, 255))
    q = np.clip(np.round(w / scale) + zp, 0, 255).astype(np.uint8)
    return q, scale, zp


def qconv(i, x, cin, cout, rng, nodes, inits, outputs):
    w = (rng.standard_normal((cout, cin, 3, 3)) * 0.3).astype(np.float32)
    b = (rng.standard_normal(cout) * 0.1).astype(np.float32)
    wq, ws, wz = quantize_weight(w)
    inits += [nh.from_array(wq, "w%d_q" % i), nh.from_array(np.array(ws, np.float32), "w%d_s" % i),
              nh.from_array(np.array(wz, np.uint8), "w%d_z" % i),
              nh.from_array(b.reshape(1, cout, 1, 1), "b%d" % i)]
    q, s, z = "q%d" % i, "s%d" % i, "z%d" % i
    nodes += [
        h.make_node("DynamicQuantizeLinear", [x], [q, s, z], name="dql%d" % i),
        h.make_node("ConvInteger", [q, "w%d_q" % i, z, "w%d_z" % i], ["c%d" % i],
                    name="conv%d" % i, pads=[1, 1, 1, 1]),
        h.make_node("Cast", ["c%d" % i], ["cf%d" % i], name="cast%d" % i, to=TP.FLOAT),
        h.make_node("Mul", [s, "w%d_s" % i], ["sc%d" % i], name="scale%d" % i),
        h.make_node("Mul", ["cf%d" % i, "sc%d" % i], ["m%d" % i], name="rescale%d" % i),
        h.make_node("Add", ["m%d" % i, "b%d" % i], ["a%d" % i], name="bias%d" % i),
    ]
    outputs += [h.make_tensor_value_info(q, TP.UINT8, [1, cin, None, None]),
                h.make_tensor_value_info(s, TP.FLOAT, []),
                h.make_tensor_value_info(z, TP.UINT8, [])]
    return "a%d" % i


def model():
    rng = np.random.default_rng(14)
    nodes, inits, outs = [], [], []
    inits += [nh.from_array(np.array([], np.float32), "roi"),
              nh.from_array(np.array([1, 1, 2, 2], np.float32), "up2"),
              nh.from_array(np.array([1, 8, 61, 61], np.int64), "size61")]
    a = qconv(0, "x", 3, 8, rng, nodes, inits, outs)
    nodes += [h.make_node("Relu", [a], ["r0"], name="relu0"),
              h.make_node("Resize", ["r0", "roi", "up2"], ["u0"], name="upsample0",
                          mode="linear", coordinate_transformation_mode="half_pixel")]
    a = qconv(1, "u0", 8, 8, rng, nodes, inits, outs)
    nodes += [h.make_node("Relu", [a], ["r1"], name="relu1"),
              h.make_node("Resize", ["r1", "roi", "", "size61"], ["u1"], name="upsample1",
                          mode="linear", coordinate_transformation_mode="half_pixel")]
    a = qconv(2, "u1", 8, 1, rng, nodes, inits, outs)
    nodes.append(h.make_node("Sigmoid", [a], ["mask"], name="sigmoid"))
    outs = [h.make_tensor_value_info("mask", TP.FLOAT, [1, 1, 61, 61])] + outs
    g = h.make_graph(nodes, "dynquant_resize",
                     [h.make_tensor_value_info("x", TP.FLOAT, [1, 3, 24, 24])], outs, inits)
    m = h.make_model(g, opset_imports=[h.make_opsetid("", 13)],
                     producer_name="convgate tools/make_quant_cases.py")
    m.ir_version = 7
    onnx.checker.check_model(m)
    return m


def main():
    os.makedirs(OUT, exist_ok=True)
    onnx.save(model(), os.path.join(OUT, "dynquant_resize.onnx"))
    x = np.random.default_rng(1401).random((1, 3, 24, 24)).astype(np.float32)
    np.save(os.path.join(OUT, "dynquant_resize_input.npy"), x)


if __name__ == "__main__":
    main()
