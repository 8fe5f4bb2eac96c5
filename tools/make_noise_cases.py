#!/usr/bin/python3
"""Writes the models of the noise-floor and decision tests (tests/data/noise/):

  decisions.onnx   logits = MatMul(x, w) [1,4,5], then one of each kind of
                   output: continuous ones (logits, relu, top_values: TopK's
                   values are the k largest, continuous) and decisions or
                   values downstream of one (class = ArgMax, mask = Greater,
                   rounded = Round(10 * logits), top_indices, q =
                   QuantizeLinear, deq = DequantizeLinear(q): downstream).
                   tests/unit/test_noise.c checks the graph analysis on it.
  promote.onnx     y = Cast(Cast(x, float16), float) + c + zeros, c = Constant
                   value_float 0.1, zeros = ConstantOfShape(Shape(x)) with no
                   value (float zeros): in the float64 mode every edge where a
                   float type enters is promoted, so y = x + (double)0.1f
                   exactly, with no fp16 rounding (tests/unit/test_fp64.c).
  zero_head.onnx   the defect of an untrained export (ViT's zero-initialized
                   classifier head): features = MatMul(x, w) [1,4,5] varies
                   with x, logits = Gemm(features, zero weight, zero bias)
                   is 0 whatever x, half = 0 * features + 0.5 is 0.5: gate 3
                   must call the last two comparisons vacuous
                   (tests/unit/test_noise.c, tests/scripts/noise_cli.sh)
  shape_flip.onnx  sel = Compress(x, x > 0.1), then a decision read from sel
                   (flag = sel > 0.5) summed to a count: with x holding
                   0.100003 (above 0.1 in float32, 0.1 once rounded to fp16)
                   the fp16-storage run keeps one element fewer in sel than
                   float64, so sel has no elementwise fp16 floor
                   (tests/unit/test_noise.c)
  swish_inputs/s1/x.npy  an input set for tests/data/bisect/swish_*.onnx: the
                   wrong-on-purpose rewrite judged against the original's
                   floors (tests/scripts/noise_cli.sh)

Run with /usr/bin/python3 (onnx, numpy); the output is committed.
"""
import os

import numpy as np
import onnx
from onnx import TensorProto as TP
from onnx import helper as h
from onnx import numpy_helper as nh

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "..", "tests", "data", "noise")


def decisions_model():
    rng = np.random.default_rng(5)
    w = nh.from_array(rng.standard_normal((8, 5)).astype(np.float32), "w")
    inits = [w,
             nh.from_array(np.array(0.1, np.float32), "thr"),
             nh.from_array(np.array(10.0, np.float32), "ten"),
             nh.from_array(np.array([2], np.int64), "k"),
             nh.from_array(np.array(0.05, np.float32), "qs"),
             nh.from_array(np.array(128, np.uint8), "qz")]
    nodes = [
        h.make_node("MatMul", ["x", "w"], ["logits"], name="fc"),
        h.make_node("Relu", ["logits"], ["relu"], name="relu"),
        h.make_node("ArgMax", ["logits"], ["class"], name="argmax", axis=-1, keepdims=0),
        h.make_node("Greater", ["logits", "thr"], ["mask"], name="greater"),
        h.make_node("Mul", ["logits", "ten"], ["scaled"], name="scale10"),
        h.make_node("Round", ["scaled"], ["rounded"], name="round"),
        h.make_node("TopK", ["logits", "k"], ["top_values", "top_indices"], name="topk", axis=-1),
        h.make_node("QuantizeLinear", ["logits", "qs", "qz"], ["q"], name="quant"),
        h.make_node("DequantizeLinear", ["q", "qs", "qz"], ["deq"], name="dequant"),
    ]
    outs = [h.make_tensor_value_info("logits", TP.FLOAT, [1, 4, 5]),
            h.make_tensor_value_info("relu", TP.FLOAT, [1, 4, 5]),
            h.make_tensor_value_info("class", TP.INT64, [1, 4]),
            h.make_tensor_value_info("mask", TP.BOOL, [1, 4, 5]),
            h.make_tensor_value_info("rounded", TP.FLOAT, [1, 4, 5]),
            h.make_tensor_value_info("top_values", TP.FLOAT, [1, 4, 2]),
            h.make_tensor_value_info("top_indices", TP.INT64, [1, 4, 2]),
            h.make_tensor_value_info("q", TP.UINT8, [1, 4, 5]),
            h.make_tensor_value_info("deq", TP.FLOAT, [1, 4, 5])]
    g = h.make_graph(nodes, "decisions", [h.make_tensor_value_info("x", TP.FLOAT, [1, 4, 8])],
                     outs, inits)
    m = h.make_model(g, opset_imports=[h.make_opsetid("", 13)],
                     producer_name="convgate tools/make_noise_cases.py")
    m.ir_version = 7
    onnx.checker.check_model(m)
    return m


def promote_model():
    nodes = [
        h.make_node("Cast", ["x"], ["x16"], name="to_fp16", to=TP.FLOAT16),
        h.make_node("Cast", ["x16"], ["x32"], name="to_fp32", to=TP.FLOAT),
        h.make_node("Constant", [], ["c"], name="c", value_float=0.1),
        h.make_node("Shape", ["x"], ["shape"], name="shape"),
        h.make_node("ConstantOfShape", ["shape"], ["zeros"], name="zeros"),
        h.make_node("Add", ["x32", "c"], ["xc"], name="add_c"),
        h.make_node("Add", ["xc", "zeros"], ["y"], name="add_zeros"),
    ]
    g = h.make_graph(nodes, "promote", [h.make_tensor_value_info("x", TP.FLOAT, [2, 3])],
                     [h.make_tensor_value_info("y", TP.FLOAT, [2, 3])])
    m = h.make_model(g, opset_imports=[h.make_opsetid("", 13)],
                     producer_name="convgate tools/make_noise_cases.py")
    m.ir_version = 7
    onnx.checker.check_model(m)
    return m


def zero_head_model():
    rng = np.random.default_rng(11)
    inits = [nh.from_array(rng.standard_normal((8, 5)).astype(np.float32), "w"),
             nh.from_array(np.zeros((3, 5), np.float32), "head_w"),
             nh.from_array(np.zeros((3,), np.float32), "head_b"),
             nh.from_array(np.array([-1, 5], np.int64), "rows"),
             nh.from_array(np.array(0.0, np.float32), "zero"),
             nh.from_array(np.array(0.5, np.float32), "half_c")]
    nodes = [
        h.make_node("MatMul", ["x", "w"], ["features"], name="fc"),
        h.make_node("Reshape", ["features", "rows"], ["flat"], name="flatten"),
        h.make_node("Gemm", ["flat", "head_w", "head_b"], ["logits"], name="head", transB=1),
        h.make_node("Mul", ["features", "zero"], ["zeroed"], name="zeroed"),
        h.make_node("Add", ["zeroed", "half_c"], ["half"], name="half"),
    ]
    outs = [h.make_tensor_value_info("features", TP.FLOAT, [1, 4, 5]),
            h.make_tensor_value_info("logits", TP.FLOAT, [4, 3]),
            h.make_tensor_value_info("half", TP.FLOAT, [1, 4, 5])]
    g = h.make_graph(nodes, "zero_head", [h.make_tensor_value_info("x", TP.FLOAT, [1, 4, 8])],
                     outs, inits)
    m = h.make_model(g, opset_imports=[h.make_opsetid("", 13)],
                     producer_name="convgate tools/make_noise_cases.py")
    m.ir_version = 7
    onnx.checker.check_model(m)
    return m


def shape_flip_model():
    inits = [nh.from_array(np.array(0.1, np.float32), "thr"),
             nh.from_array(np.array(0.5, np.float32), "thr2")]
    nodes = [
        h.make_node("Greater", ["x", "thr"], ["keep"], name="keep"),
        h.make_node("Compress", ["x", "keep"], ["sel"], name="select", axis=0),
        h.make_node("Greater", ["sel", "thr2"], ["flag"], name="flag"),
        h.make_node("Cast", ["flag"], ["flagf"], name="tofloat", to=TP.FLOAT),
        h.make_node("ReduceSum", ["flagf"], ["count"], name="count", keepdims=0),
    ]
    g = h.make_graph(nodes, "shape_flip", [h.make_tensor_value_info("x", TP.FLOAT, [6])],
                     [h.make_tensor_value_info("count", TP.FLOAT, [])], inits)
    m = h.make_model(g, opset_imports=[h.make_opsetid("", 13)],
                     producer_name="convgate tools/make_noise_cases.py")
    m.ir_version = 7
    onnx.checker.check_model(m)
    return m


def main():
    os.makedirs(OUT, exist_ok=True)
    onnx.save(decisions_model(), os.path.join(OUT, "decisions.onnx"))
    onnx.save(promote_model(), os.path.join(OUT, "promote.onnx"))
    onnx.save(zero_head_model(), os.path.join(OUT, "zero_head.onnx"))
    onnx.save(shape_flip_model(), os.path.join(OUT, "shape_flip.onnx"))
    d = os.path.join(OUT, "swish_inputs", "s1")
    os.makedirs(d, exist_ok=True)
    np.save(os.path.join(d, "x.npy"), np.random.default_rng(3).standard_normal((2, 16))
            .astype(np.float32))


if __name__ == "__main__":
    main()
