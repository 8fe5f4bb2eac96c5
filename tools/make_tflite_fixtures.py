#!/usr/bin/python3
"""Write convgate's .tflite test fixtures and validate each in the real LiteRT.

No package ships small .tflite models, so they are made here with
tools/tflite_writer.py: one fixture per op convgate must run, int8/uint8
quantized ones, a few small models (a CNN, a keyword-spotting head with IF,
an int8 model) with ONNX twins carrying the same weights, and the reader's
own cases. Every fixture is run in LiteRT.js on the CPU (tools/litert/
run_node.mjs) as it is written; a fixture LiteRT refuses, or whose outputs
are not finite, stops the generator unless the fixture says LiteRT must
refuse it (then the refusal is what is checked).

Writes, under tests/data/tflite/ (or --out DIR):
  <group>/<name>.tflite           the fixture
  <group>/<name>/input_<i>.npy    its inputs (fixed seed)
  <group>/<name>/litert_<i>.npy   LiteRT's outputs on them
  twins/<name>.onnx               ONNX twins of the small models
  expectations.json               per fixture: inputs, LiteRT's CPU outputs
                                  (name, dtype, shape, file), the twins'
                                  distance from them in onnxruntime, and
                                  the WebGPU delegate's residency (headless
                                  Chromium, tools/litert/run_webgpu.mjs)

    /usr/bin/python3 tools/make_tflite_fixtures.py [--out DIR] [--only REGEX]
"""

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from tflite_writer import Model, Quant  # noqa: E402

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
RUNNER = os.path.join(ROOT, "tools", "litert", "run_node.mjs")

REGISTRY = []


class Fixture:
    def __init__(self, group, name, build, litert, note):
        self.group = group
        self.name = name
        self.build = build
        self.litert = litert  # "run", or "refuse" (LiteRT must refuse it)
        self.note = note


def fixture(group, name, litert="run", note=""):
    def register(build):
        REGISTRY.append(Fixture(group, name, build, litert, note))
        return build
    return register


def rng(name):
    """A generator seeded from the fixture's name: stable across runs."""
    return np.random.default_rng(sum(ord(c) * (i + 1) for i, c in enumerate(name)))


def floats(r, shape, scale=1.0):
    return (r.standard_normal(shape) * scale).astype(np.float32)


# ---------------------------------------------------------------------------
# Reader cases: the structures the reader must decode exactly.


@fixture("reader", "add_signature",
         note="ADD with a constant, a SignatureDef, shape_signature [-1, 4], metadata")
def _add_signature():
    m = Model()
    g = m.subgraph("main")
    x = g.tensor("x", [1, 4], "FLOAT32", shape_signature=[-1, 4])
    w = g.tensor("w", [4], "FLOAT32", data=np.arange(4, dtype=np.float32))
    y = g.tensor("y", [1, 4], "FLOAT32", shape_signature=[-1, 4])
    g.op("ADD", [x, w], [y], options=("AddOptions", {"fused_activation_function": 1}))
    g.inputs, g.outputs = [x], [y]
    m.signature("serving_default")
    m.metadata.append(("min_runtime_version", m.buffer(b"1.5.0\0\0\0\0\0\0\0\0\0\0\0")))
    return m, [np.array([[1, -2, 3, -8]], np.float32)]


@fixture("reader", "offset_buffers",
         note="FULLY_CONNECTED whose weights and bias lie past the FlatBuffer "
              "(Buffer.offset/size, as in models over 2 GiB)")
def _offset_buffers():
    r = rng("offset_buffers")
    m = Model()
    g = m.subgraph("main")
    x = g.tensor("x", [2, 8], "FLOAT32")
    wbuf = m.buffer(floats(r, (3, 8)).tobytes(), past_flatbuffer=True)
    bbuf = m.buffer(floats(r, (3,)).tobytes(), past_flatbuffer=True)
    w = g.tensor("w", [3, 8], "FLOAT32", buffer=wbuf)
    b = g.tensor("b", [3], "FLOAT32", buffer=bbuf)
    y = g.tensor("y", [2, 3], "FLOAT32")
    g.op("FULLY_CONNECTED", [x, w, b], [y],
         options=("FullyConnectedOptions", {"fused_activation_function": 0}))
    g.inputs, g.outputs = [x], [y]
    m.signature("serving_default")
    return m, [floats(r, (2, 8))]


@fixture("reader", "conv_int8_per_channel",
         note="QUANTIZE -> CONV_2D int8 with per-channel (per-axis) weight scales -> DEQUANTIZE")
def _conv_int8_per_channel():
    r = rng("conv_int8_per_channel")
    m = Model()
    g = m.subgraph("main")
    cin, cout = 3, 4
    x = g.tensor("x", [1, 5, 5, cin], "FLOAT32")
    xq = g.tensor("x_int8", [1, 5, 5, cin], "INT8", quant=Quant(0.02, -3))
    wscale = np.array([0.010, 0.012, 0.008, 0.015], np.float32)
    w = g.tensor("w", [cout, 3, 3, cin], "INT8",
                 data=r.integers(-127, 128, (cout, 3, 3, cin)).astype(np.int8),
                 quant=Quant(wscale, np.zeros(cout), quantized_dimension=0))
    b = g.tensor("b", [cout], "INT32", data=r.integers(-500, 500, cout).astype(np.int32),
                 quant=Quant(wscale * 0.02, np.zeros(cout), quantized_dimension=0))
    yq = g.tensor("y_int8", [1, 5, 5, cout], "INT8", quant=Quant(0.05, 2))
    y = g.tensor("y", [1, 5, 5, cout], "FLOAT32")
    g.op("QUANTIZE", [x], [xq])
    g.op("CONV_2D", [xq, w, b], [yq], version=3,
         options=("Conv2DOptions", {"padding": 0, "stride_w": 1, "stride_h": 1,
                                    "fused_activation_function": 1}))
    g.op("DEQUANTIZE", [yq], [y], version=2)
    g.inputs, g.outputs = [x], [y]
    m.signature("serving_default")
    return m, [floats(r, (1, 5, 5, cin))]


def kws_if_model(then_scale=2.0):
    """x [1, 4] -> cond = SUM(x) > 0 -> IF(cond, x): then x * then_scale,
    else x - 1. A keyword-spotting head's shape: a score, then a branch."""
    m = Model()
    g = m.subgraph("main")
    x = g.tensor("x", [1, 4], "FLOAT32")
    axes = g.tensor("axes", [2], "INT32", data=np.array([0, 1], np.int32))
    s = g.tensor("score", [], "FLOAT32")
    zero = g.tensor("zero", [], "FLOAT32", data=np.array(0, np.float32))
    cond = g.tensor("cond", [], "BOOL")
    y = g.tensor("y", [1, 4], "FLOAT32")
    g.op("SUM", [x, axes], [s], options=("ReducerOptions", {"keep_dims": False}))
    g.op("GREATER", [s, zero], [cond])
    g.op("IF", [cond, x], [y], options=("IfOptions", {"then_subgraph_index": 1,
                                                      "else_subgraph_index": 2}))
    g.inputs, g.outputs = [x], [y]
    then = m.subgraph("then")
    tx = then.tensor("then_x", [1, 4], "FLOAT32")
    k = then.tensor("then_k", [], "FLOAT32", data=np.array(then_scale, np.float32))
    ty = then.tensor("then_y", [1, 4], "FLOAT32")
    then.op("MUL", [tx, k], [ty], options=("MulOptions", {"fused_activation_function": 0}))
    then.inputs, then.outputs = [tx], [ty]
    other = m.subgraph("else")
    ex = other.tensor("else_x", [1, 4], "FLOAT32")
    one = other.tensor("else_one", [], "FLOAT32", data=np.array(1, np.float32))
    ey = other.tensor("else_y", [1, 4], "FLOAT32")
    other.op("SUB", [ex, one], [ey], options=("SubOptions", {"fused_activation_function": 0}))
    other.inputs, other.outputs = [ex], [ey]
    m.signature("serving_default")
    return m


@fixture("reader", "if_then_else", note="IF with then/else subgraphs (IfOptions)")
def _if_then_else():
    return kws_if_model(), [np.array([[0.5, -0.25, 1.0, 0.125]], np.float32)]


@fixture("reader", "flex_and_custom", litert="refuse",
         note="a Flex op (SELECT_TF_OPS, custom code FlexAddV2) and a custom op: LiteRT's "
              "builtin resolver has neither")
def _flex_and_custom():
    m = Model()
    g = m.subgraph("main")
    x = g.tensor("x", [1, 4], "FLOAT32")
    t = g.tensor("t", [1, 4], "FLOAT32")
    y = g.tensor("y", [1, 4], "FLOAT32")
    g.op("CUSTOM", [x, x], [t], custom_code="FlexAddV2",
         custom_options=b"\x05AddV2\x00")
    g.op("CUSTOM", [t], [y], custom_code="ConvgateTestOp", custom_options=b"\x01\x02\x03\x04")
    g.inputs, g.outputs = [x], [y]
    return m, [np.ones((1, 4), np.float32)]


# ---------------------------------------------------------------------------
# One fixture per op: runtime inputs In(...), constants Const(...), outputs
# Out(...). Inputs are float32 N(0, 1) unless said otherwise.


class In:
    def __init__(self, shape, ttype="FLOAT32", positive=False, quant=None, low=None, high=None):
        self.shape, self.ttype, self.positive, self.quant = list(shape), ttype, positive, quant
        self.low, self.high = low, high


class Const:
    def __init__(self, value, ttype="FLOAT32", quant=None):
        self.value, self.ttype, self.quant = np.asarray(value), ttype, quant


class Out:
    def __init__(self, shape, ttype="FLOAT32", quant=None):
        self.shape, self.ttype, self.quant = list(shape), ttype, quant


def sample(r, spec):
    if spec.ttype == "FLOAT32":
        a = r.standard_normal(spec.shape).astype(np.float32)
        return np.abs(a) + np.float32(0.1) if spec.positive else a
    if spec.ttype in ("UINT8", "INT8", "INT32"):
        lo = 0 if spec.low is None else spec.low
        hi = 255 if spec.high is None else spec.high
        return r.integers(lo, hi + 1, spec.shape).astype(
            {"UINT8": np.uint8, "INT8": np.int8, "INT32": np.int32}[spec.ttype])
    raise ValueError(spec.ttype)


def op_fixture(name, op, args, outs, options=None, version=1, note="", group="ops",
               litert="run"):
    """Registers a fixture: one operator `op` over `args` (In/Const/None for
    an omitted optional input) writing `outs`."""
    def build():
        r = rng(name)
        m = Model()
        g = m.subgraph("main")
        ins, feeds, idx = [], [], []
        for i, a in enumerate(args):
            if a is None:
                idx.append(-1)
            elif isinstance(a, Const):
                idx.append(g.tensor("c%d" % i, a.value.shape, a.ttype, data=a.value,
                                    quant=a.quant))
            else:
                t = g.tensor("x%d" % i, a.shape, a.ttype, quant=a.quant)
                idx.append(t)
                ins.append(t)
                feeds.append(sample(r, a))
        oidx = [g.tensor("y%d" % i, o.shape, o.ttype, quant=o.quant) for i, o in enumerate(outs)]
        g.op(op, idx, oidx, options=options, version=version)
        g.inputs, g.outputs = ins, oidx
        m.signature("serving_default")
        return m, feeds
    fixture(group, name, litert=litert, note=note or op)(build)


def w(name, shape, scale=0.5):
    return (rng(name).standard_normal(shape) * scale).astype(np.float32)


F = "FLOAT32"
ACT = {"NONE": 0, "RELU": 1, "RELU_N1_TO_1": 2, "RELU6": 3, "TANH": 4}
SAME, VALID = 0, 1

# convolutions
op_fixture("conv_2d_same_relu", "CONV_2D",
           [In([1, 8, 8, 3]), Const(w("c2a", [4, 3, 3, 3])), Const(w("c2ab", [4]))],
           [Out([1, 8, 8, 4])],
           ("Conv2DOptions", {"padding": SAME, "stride_w": 1, "stride_h": 1,
                              "fused_activation_function": ACT["RELU"]}),
           note="CONV_2D 3x3, SAME, stride 1, fused RELU")
op_fixture("conv_2d_valid_stride2", "CONV_2D",
           [In([1, 9, 9, 2]), Const(w("c2b", [3, 3, 3, 2])), Const(w("c2bb", [3]))],
           [Out([1, 4, 4, 3])],
           ("Conv2DOptions", {"padding": VALID, "stride_w": 2, "stride_h": 2,
                              "fused_activation_function": ACT["NONE"]}),
           note="CONV_2D 3x3, VALID, stride 2")
op_fixture("conv_2d_dilated_relu6", "CONV_2D",
           [In([1, 8, 8, 2]), Const(w("c2c", [2, 3, 3, 2])), Const(w("c2cb", [2]))],
           [Out([1, 8, 8, 2])],
           ("Conv2DOptions", {"padding": SAME, "stride_w": 1, "stride_h": 1,
                              "dilation_w_factor": 2, "dilation_h_factor": 2,
                              "fused_activation_function": ACT["RELU6"]}),
           version=2, note="CONV_2D 3x3, SAME, dilation 2, fused RELU6")
op_fixture("depthwise_conv_2d_mult2_relu6", "DEPTHWISE_CONV_2D",
           [In([1, 8, 8, 3]), Const(w("dw", [1, 3, 3, 6])), Const(w("dwb", [6]))],
           [Out([1, 8, 8, 6])],
           ("DepthwiseConv2DOptions", {"padding": SAME, "stride_w": 1, "stride_h": 1,
                                       "depth_multiplier": 2,
                                       "fused_activation_function": ACT["RELU6"]}),
           note="DEPTHWISE_CONV_2D 3x3, depth multiplier 2, SAME, fused RELU6")
op_fixture("depthwise_conv_2d_valid_stride2", "DEPTHWISE_CONV_2D",
           [In([1, 9, 9, 4]), Const(w("dw2", [1, 3, 3, 4])), Const(w("dw2b", [4]))],
           [Out([1, 4, 4, 4])],
           ("DepthwiseConv2DOptions", {"padding": VALID, "stride_w": 2, "stride_h": 2,
                                       "depth_multiplier": 1}),
           note="DEPTHWISE_CONV_2D 3x3, VALID, stride 2")
op_fixture("transpose_conv_stride2", "TRANSPOSE_CONV",
           [Const(np.array([1, 8, 8, 2], np.int32), "INT32"), Const(w("tc", [2, 3, 3, 4])),
            In([1, 4, 4, 4]), Const(w("tcb", [2]))],
           [Out([1, 8, 8, 2])],
           ("TransposeConvOptions", {"padding": SAME, "stride_w": 2, "stride_h": 2}),
           version=3, note="TRANSPOSE_CONV 3x3, stride 2, SAME, with bias (inputs: output "
                           "shape, weights OHWI, input, bias)")
op_fixture("fully_connected_relu", "FULLY_CONNECTED",
           [In([2, 8]), Const(w("fc", [5, 8])), Const(w("fcb", [5]))], [Out([2, 5])],
           ("FullyConnectedOptions", {"fused_activation_function": ACT["RELU"]}),
           note="FULLY_CONNECTED [2, 8] x [5, 8]^T + bias, fused RELU")
op_fixture("fully_connected_no_bias_keep_dims", "FULLY_CONNECTED",
           [In([1, 3, 8]), Const(w("fc2", [4, 8])), None], [Out([1, 3, 4])],
           ("FullyConnectedOptions", {"keep_num_dims": True}), version=5,
           note="FULLY_CONNECTED without bias (input -1), keep_num_dims")
op_fixture("batch_matmul", "BATCH_MATMUL", [In([2, 3, 4]), In([2, 4, 5])], [Out([2, 3, 5])],
           ("BatchMatMulOptions", {"adj_x": False, "adj_y": False}),
           note="BATCH_MATMUL of two runtime inputs")
op_fixture("batch_matmul_adj_y_broadcast", "BATCH_MATMUL",
           [In([2, 3, 4]), Const(w("bmm", [1, 5, 4]))], [Out([2, 3, 5])],
           ("BatchMatMulOptions", {"adj_y": True}), version=2,
           note="BATCH_MATMUL with a constant, adj_y, batch broadcast")

# elementwise binary
for op, opts, pos in (("ADD", "AddOptions", False), ("SUB", "SubOptions", False),
                      ("MUL", "MulOptions", False), ("DIV", "DivOptions", True)):
    op_fixture(op.lower() + "_broadcast", op, [In([1, 4, 4, 3]), In([3], positive=pos)],
               [Out([1, 4, 4, 3])], (opts, {"fused_activation_function": 0}),
               note="%s with a [3] operand broadcast over [1, 4, 4, 3]" % op)
op_fixture("add_relu6", "ADD", [In([2, 6]), Const(w("addc", [2, 6], 3.0))], [Out([2, 6])],
           ("AddOptions", {"fused_activation_function": ACT["RELU6"]}),
           note="ADD with a constant and fused RELU6")
for op in ("MAXIMUM", "MINIMUM", "SQUARED_DIFFERENCE"):
    op_fixture(op.lower(), op, [In([2, 3, 4]), In([1, 3, 1])], [Out([2, 3, 4])],
               note="%s with broadcasting" % op)
op_fixture("pow", "POW", [In([2, 5], positive=True), Const(np.float32([[1.5, 2, 0.5, 3, -1]]))],
           [Out([2, 5])], note="POW of a positive base")

# elementwise unary and activations
UNARY = [("ABS", False), ("NEG", False), ("EXP", False), ("LOG", True), ("SQRT", True),
         ("RSQRT", True), ("SQUARE", False), ("TANH", False), ("LOGISTIC", False),
         ("RELU", False), ("RELU6", False), ("RELU_N1_TO_1", False), ("HARD_SWISH", False),
         ("ELU", False), ("FLOOR", False), ("CEIL", False), ("SIN", False), ("COS", False),
         ("ROUND", False)]
for op, pos in UNARY:
    op_fixture(op.lower(), op, [In([2, 3, 5], positive=pos)], [Out([2, 3, 5])],
               note=op + (" of positive inputs" if pos else ""))
op_fixture("leaky_relu", "LEAKY_RELU", [In([2, 8])], [Out([2, 8])],
           ("LeakyReluOptions", {"alpha": 0.2}), note="LEAKY_RELU alpha 0.2")
op_fixture("gelu", "GELU", [In([2, 8])], [Out([2, 8])], ("GeluOptions", {"approximate": False}),
           note="GELU (exact)")
op_fixture("prelu", "PRELU", [In([1, 4, 4, 3]), Const(np.float32([0.1, 0.25, -0.5]))],
           [Out([1, 4, 4, 3])], note="PRELU with a per-channel alpha")

# reductions, softmax
op_fixture("mean_hw", "MEAN", [In([1, 4, 4, 3]), Const(np.int32([1, 2]), "INT32")],
           [Out([1, 3])], ("ReducerOptions", {"keep_dims": False}),
           note="MEAN over H and W (global average pool)")
op_fixture("sum_keep_dims", "SUM", [In([1, 4, 4, 3]), Const(np.int32([2]), "INT32")],
           [Out([1, 4, 1, 3])], ("ReducerOptions", {"keep_dims": True}),
           note="SUM over one axis, keep_dims")
op_fixture("reduce_max_last", "REDUCE_MAX", [In([1, 4, 4, 3]), Const(np.int32([-1]), "INT32")],
           [Out([1, 4, 4])], ("ReducerOptions", {"keep_dims": False}),
           note="REDUCE_MAX over the last axis (-1)")
op_fixture("softmax", "SOFTMAX", [In([2, 10])], [Out([2, 10])], ("SoftmaxOptions", {"beta": 1.0}),
           note="SOFTMAX beta 1")
op_fixture("softmax_beta", "SOFTMAX", [In([1, 3, 6])], [Out([1, 3, 6])],
           ("SoftmaxOptions", {"beta": 0.5}), note="SOFTMAX beta 0.5 over a rank-3 tensor")
op_fixture("log_softmax", "LOG_SOFTMAX", [In([2, 10])], [Out([2, 10])], note="LOG_SOFTMAX")

# shape and data movement
op_fixture("reshape", "RESHAPE", [In([1, 4, 4, 3]), Const(np.int32([1, -1]), "INT32")],
           [Out([1, 48])], ("ReshapeOptions", {"new_shape": [1, 48]}),
           note="RESHAPE with a shape input holding -1 (and new_shape options)")
op_fixture("transpose", "TRANSPOSE", [In([1, 2, 3, 4]), Const(np.int32([0, 3, 1, 2]), "INT32")],
           [Out([1, 4, 2, 3])], note="TRANSPOSE NHWC -> NCHW")
op_fixture("concatenation", "CONCATENATION", [In([1, 2, 2, 3]), In([1, 2, 2, 5])],
           [Out([1, 2, 2, 8])], ("ConcatenationOptions", {"axis": 3}),
           note="CONCATENATION on the channel axis")
op_fixture("concatenation_neg_axis", "CONCATENATION", [In([2, 3]), In([1, 3]), In([3, 3])],
           [Out([6, 3])], ("ConcatenationOptions", {"axis": -2}),
           note="CONCATENATION of three inputs, axis -2")
op_fixture("pad", "PAD", [In([1, 3, 3, 2]),
                          Const(np.int32([[0, 0], [1, 1], [2, 0], [0, 0]]), "INT32")],
           [Out([1, 5, 5, 2])], note="PAD with zeros, asymmetric")
op_fixture("strided_slice", "STRIDED_SLICE",
           [In([1, 6, 6, 4]), Const(np.int32([0, 1, 0, 0]), "INT32"),
            Const(np.int32([1, 5, 6, 4]), "INT32"), Const(np.int32([1, 2, 1, 2]), "INT32")],
           [Out([1, 2, 6, 2])], ("StridedSliceOptions", {}), note="STRIDED_SLICE with strides")
op_fixture("strided_slice_masks", "STRIDED_SLICE",
           [In([2, 6, 5]), Const(np.int32([1, -4, 0]), "INT32"),
            Const(np.int32([2, -1, 3]), "INT32"), Const(np.int32([1, 1, 1]), "INT32")],
           [Out([3, 5])], ("StridedSliceOptions", {"shrink_axis_mask": 1, "end_mask": 4}),
           note="STRIDED_SLICE with negative begin/end, shrink_axis_mask and end_mask")
op_fixture("slice", "SLICE", [In([1, 5, 5, 3]), Const(np.int32([0, 1, 1, 0]), "INT32"),
                              Const(np.int32([1, 3, -1, 2]), "INT32")],
           [Out([1, 3, 4, 2])], note="SLICE with size -1 (to the end)")
op_fixture("gather", "GATHER", [In([5, 4]), Const(np.int32([4, 0, 2]), "INT32")], [Out([3, 4])],
           ("GatherOptions", {"axis": 0}), note="GATHER rows")
op_fixture("gather_axis1", "GATHER", [In([2, 5, 3]), Const(np.int32([[1, 1], [4, 0]]), "INT32")],
           [Out([2, 2, 2, 3])], ("GatherOptions", {"axis": 1}),
           note="GATHER on axis 1 with 2-D indices")
op_fixture("gather_nd", "GATHER_ND", [In([4, 3, 2]), Const(np.int32([[1, 2], [3, 0]]), "INT32")],
           [Out([2, 2])], note="GATHER_ND of two (i, j) slices")
op_fixture("expand_dims", "EXPAND_DIMS", [In([2, 3]), Const(np.int32([1]), "INT32")],
           [Out([2, 1, 3])], note="EXPAND_DIMS at axis 1")
op_fixture("squeeze", "SQUEEZE", [In([1, 3, 1, 4])], [Out([3, 4])],
           ("SqueezeOptions", {"squeeze_dims": [0, 2]}), note="SQUEEZE dims 0 and 2")

# pools, resize
op_fixture("average_pool_2d", "AVERAGE_POOL_2D", [In([1, 8, 8, 3])], [Out([1, 4, 4, 3])],
           ("Pool2DOptions", {"padding": VALID, "stride_w": 2, "stride_h": 2, "filter_width": 2,
                              "filter_height": 2}), note="AVERAGE_POOL_2D 2x2, stride 2, VALID")
op_fixture("average_pool_2d_same", "AVERAGE_POOL_2D", [In([1, 5, 5, 2])], [Out([1, 3, 3, 2])],
           ("Pool2DOptions", {"padding": SAME, "stride_w": 2, "stride_h": 2, "filter_width": 3,
                              "filter_height": 3}),
           note="AVERAGE_POOL_2D 3x3, stride 2, SAME (padding not counted in the mean)")
op_fixture("max_pool_2d_same_relu", "MAX_POOL_2D", [In([1, 8, 8, 3])], [Out([1, 4, 4, 3])],
           ("Pool2DOptions", {"padding": SAME, "stride_w": 2, "stride_h": 2, "filter_width": 3,
                              "filter_height": 3, "fused_activation_function": ACT["RELU"]}),
           note="MAX_POOL_2D 3x3, stride 2, SAME, fused RELU")
op_fixture("resize_bilinear_half_pixel", "RESIZE_BILINEAR",
           [In([1, 4, 4, 2]), Const(np.int32([8, 8]), "INT32")], [Out([1, 8, 8, 2])],
           ("ResizeBilinearOptions", {"half_pixel_centers": True}), version=3,
           note="RESIZE_BILINEAR x2, half_pixel_centers")
op_fixture("resize_bilinear_align_corners", "RESIZE_BILINEAR",
           [In([1, 3, 5, 2]), Const(np.int32([5, 9]), "INT32")], [Out([1, 5, 9, 2])],
           ("ResizeBilinearOptions", {"align_corners": True}),
           note="RESIZE_BILINEAR, align_corners")
op_fixture("resize_nearest_neighbor", "RESIZE_NEAREST_NEIGHBOR",
           [In([1, 4, 4, 2]), Const(np.int32([8, 8]), "INT32")], [Out([1, 8, 8, 2])],
           ("ResizeNearestNeighborOptions", {}), note="RESIZE_NEAREST_NEIGHBOR x2")
op_fixture("resize_nearest_neighbor_half_pixel", "RESIZE_NEAREST_NEIGHBOR",
           [In([1, 3, 3, 2]), Const(np.int32([7, 5]), "INT32")], [Out([1, 7, 5, 2])],
           ("ResizeNearestNeighborOptions", {"half_pixel_centers": True}), version=3,
           note="RESIZE_NEAREST_NEIGHBOR to a non-integer scale, half_pixel_centers")


@fixture("ops", "if_else_branch", note="IF taking its else branch (x - 1)")
def _if_else():
    return kws_if_model(), [np.array([[-0.5, -0.25, 1.0, -1.5]], np.float32)]


@fixture("ops", "while_loop",
         note="WHILE: i = 0; while i < 3: (i, x) = (i + 1, x * 1.5) -> outputs i and x")
def _while():
    m = Model()
    g = m.subgraph("main")
    x = g.tensor("x", [1, 4], F)
    i0 = g.tensor("i0", [], F, data=np.array(0, np.float32))
    i_out = g.tensor("i_out", [], F)
    y = g.tensor("y", [1, 4], F)
    g.op("WHILE", [i0, x], [i_out, y], options=("WhileOptions", {"cond_subgraph_index": 1,
                                                                 "body_subgraph_index": 2}))
    g.inputs, g.outputs = [x], [i_out, y]
    cond = m.subgraph("cond")
    ci = cond.tensor("c_i", [], F)
    cx = cond.tensor("c_x", [1, 4], F)
    limit = cond.tensor("c_limit", [], F, data=np.array(3, np.float32))
    cb = cond.tensor("c_b", [], "BOOL")
    cond.op("LESS", [ci, limit], [cb])
    cond.inputs, cond.outputs = [ci, cx], [cb]
    body = m.subgraph("body")
    bi = body.tensor("b_i", [], F)
    bx = body.tensor("b_x", [1, 4], F)
    one = body.tensor("b_one", [], F, data=np.array(1, np.float32))
    k = body.tensor("b_k", [], F, data=np.array(1.5, np.float32))
    bi2 = body.tensor("b_i2", [], F)
    bx2 = body.tensor("b_x2", [1, 4], F)
    body.op("ADD", [bi, one], [bi2], options=("AddOptions", {"fused_activation_function": 0}))
    body.op("MUL", [bx, k], [bx2], options=("MulOptions", {"fused_activation_function": 0}))
    body.inputs, body.outputs = [bi, bx], [bi2, bx2]
    m.signature("serving_default")
    return m, [floats(rng("while"), (1, 4))]


# ---------------------------------------------------------------------------
# Quantized ops. int8 tensors cannot cross LiteRT.js's API (float32, int32
# and uint8 only), so int8 ops sit between QUANTIZE and DEQUANTIZE, as in a
# converter's "float interface" int8 model; uint8 ones take uint8 directly.
# Output scales are chosen from a float reference computed with numpy so
# that outputs use the int8 range without saturating much.


def conv_ref(x, wt, b, stride, pad, depthwise=False, mult=1):
    """NHWC float convolution; wt OHWI (depthwise: 1HW(C*mult))."""
    n, h, wd, c = x.shape
    kh, kw = wt.shape[1], wt.shape[2]
    if pad == SAME:
        oh, ow = -(-h // stride), -(-wd // stride)
        ph = max((oh - 1) * stride + kh - h, 0)
        pw = max((ow - 1) * stride + kw - wd, 0)
        x = np.pad(x, ((0, 0), (ph // 2, ph - ph // 2), (pw // 2, pw - pw // 2), (0, 0)))
    else:
        oh, ow = (h - kh) // stride + 1, (wd - kw) // stride + 1
    cout = wt.shape[3] if depthwise else wt.shape[0]
    y = np.zeros((n, oh, ow, cout), np.float64)
    for i in range(oh):
        for j in range(ow):
            patch = x[:, i * stride:i * stride + kh, j * stride:j * stride + kw, :]
            if depthwise:
                rep = np.repeat(patch, mult, axis=3)
                y[:, i, j, :] = np.sum(rep * wt[0], axis=(1, 2))
            else:
                y[:, i, j, :] = np.tensordot(patch, wt, axes=([1, 2, 3], [1, 2, 3]))
    return y + b


def qparams(lo, hi, ttype="INT8"):
    """Affine (scale, zero_point) covering [lo, hi] (0 included)."""
    lo, hi = min(lo, 0.0), max(hi, 0.0)
    qmin, qmax = (-128, 127) if ttype == "INT8" else (0, 255)
    scale = (hi - lo) / (qmax - qmin) or 1.0
    zp = int(round(qmin - lo / scale))
    return float(np.float32(scale)), max(qmin, min(qmax, zp))


def per_channel(wt, axis):
    """Symmetric int8 per-channel weights: (int8 values, scales)."""
    red = tuple(i for i in range(wt.ndim) if i != axis)
    scales = np.maximum(np.abs(wt).max(axis=red), 1e-6) / 127.0
    shape = [1] * wt.ndim
    shape[axis] = -1
    q = np.clip(np.round(wt / scales.reshape(shape)), -127, 127).astype(np.int8)
    return q, scales.astype(np.float32)


def dequant(q, scales, axis):
    shape = [1] * q.ndim
    shape[axis] = -1
    return q.astype(np.float32) * scales.reshape(shape)


def quant_wrapped(name, build_inner, x_shape, note):
    """float x -> QUANTIZE (int8) -> inner ops -> DEQUANTIZE -> float y."""
    def build():
        r = rng(name)
        x = floats(r, x_shape)
        m = Model()
        g = m.subgraph("main")
        xs, xz = qparams(float(x.min()), float(x.max()))
        xf = g.tensor("x", x_shape, F)
        xq = g.tensor("x_int8", x_shape, "INT8", quant=Quant(xs, xz))
        g.op("QUANTIZE", [xf], [xq], version=2)
        yq, y_shape = build_inner(m, g, xq, x, xs, xz, r)
        y = g.tensor("y", y_shape, F)
        g.op("DEQUANTIZE", [yq], [y], version=2)
        g.inputs, g.outputs = [xf], [y]
        m.signature("serving_default")
        return m, [x]
    fixture("quant", name, note=note)(build)


def _conv_int8(m, g, xq, x, xs, xz, r):
    wt = floats(r, (4, 3, 3, 3), 0.4)
    b = floats(r, (4,), 0.2)
    q, s = per_channel(wt, 0)
    ref = np.maximum(conv_ref(x, dequant(q, s, 0), b, 1, SAME), 0)
    ys, yz = qparams(0.0, float(ref.max()))
    wq = g.tensor("w", wt.shape, "INT8", data=q, quant=Quant(s, np.zeros(4), 0))
    bq = g.tensor("b", [4], "INT32", data=np.round(b / (s * xs)).astype(np.int32),
                  quant=Quant(s * xs, np.zeros(4), 0))
    yq = g.tensor("y_int8", [1, 6, 6, 4], "INT8", quant=Quant(ys, yz))
    g.op("CONV_2D", [xq, wq, bq], [yq], version=3,
         options=("Conv2DOptions", {"padding": SAME, "stride_w": 1, "stride_h": 1,
                                    "fused_activation_function": ACT["RELU"]}))
    return yq, [1, 6, 6, 4]


def _dw_int8(m, g, xq, x, xs, xz, r):
    wt = floats(r, (1, 3, 3, 4), 0.4)
    b = floats(r, (4,), 0.2)
    q, s = per_channel(wt, 3)
    ref = conv_ref(x, dequant(q, s, 3), b, 2, VALID, depthwise=True)
    ys, yz = qparams(float(ref.min()), float(ref.max()))
    wq = g.tensor("w", wt.shape, "INT8", data=q, quant=Quant(s, np.zeros(4), 3))
    bq = g.tensor("b", [4], "INT32", data=np.round(b / (s * xs)).astype(np.int32),
                  quant=Quant(s * xs, np.zeros(4), 0))
    yq = g.tensor("y_int8", [1, 3, 3, 4], "INT8", quant=Quant(ys, yz))
    g.op("DEPTHWISE_CONV_2D", [xq, wq, bq], [yq], version=3,
         options=("DepthwiseConv2DOptions", {"padding": VALID, "stride_w": 2, "stride_h": 2,
                                             "depth_multiplier": 1}))
    return yq, [1, 3, 3, 4]


def _fc_int8(m, g, xq, x, xs, xz, r):
    wt = floats(r, (5, 8), 0.4)
    b = floats(r, (5,), 0.2)
    ws = float(np.abs(wt).max() / 127.0)
    q = np.clip(np.round(wt / ws), -127, 127).astype(np.int8)
    ref = x @ (q.astype(np.float32) * ws).T + b
    ys, yz = qparams(float(ref.min()), float(ref.max()))
    wq = g.tensor("w", wt.shape, "INT8", data=q, quant=Quant(ws, 0))
    bq = g.tensor("b", [5], "INT32", data=np.round(b / (ws * xs)).astype(np.int32),
                  quant=Quant(ws * xs, 0))
    yq = g.tensor("y_int8", [2, 5], "INT8", quant=Quant(ys, yz))
    g.op("FULLY_CONNECTED", [xq, wq, bq], [yq], version=4,
         options=("FullyConnectedOptions", {"fused_activation_function": 0}))
    return yq, [2, 5]


def _binary_int8(op, opts):
    def inner(m, g, xq, x, xs, xz, r):
        c = floats(r, x.shape[-1:], 1.5)
        cs, cz = qparams(float(c.min()), float(c.max()))
        cq_vals = np.clip(np.round(c / cs) + cz, -128, 127).astype(np.int8)
        cdq = (cq_vals.astype(np.float32) - cz) * cs
        ref = x + cdq if op == "ADD" else x * cdq
        ys, yz = qparams(float(ref.min()), float(ref.max()))
        cq = g.tensor("c", list(c.shape), "INT8", data=cq_vals, quant=Quant(cs, cz))
        yq = g.tensor("y_int8", list(x.shape), "INT8", quant=Quant(ys, yz))
        g.op(op, [xq, cq], [yq], version=2, options=(opts, {"fused_activation_function": 0}))
        return yq, list(x.shape)
    return inner


quant_wrapped("quantize_dequantize_int8", lambda m, g, xq, x, xs, xz, r: (xq, list(x.shape)),
              [2, 3, 4], "QUANTIZE float -> int8, DEQUANTIZE back (round trip)")
quant_wrapped("conv_2d_int8", _conv_int8, [1, 6, 6, 3],
              "CONV_2D int8, per-channel weights, int32 bias, fused RELU")
quant_wrapped("depthwise_conv_2d_int8", _dw_int8, [1, 7, 7, 4],
              "DEPTHWISE_CONV_2D int8, per-channel weights (axis 3), stride 2, VALID")
quant_wrapped("fully_connected_int8", _fc_int8, [2, 8],
              "FULLY_CONNECTED int8, per-tensor weights, int32 bias")
quant_wrapped("add_int8", _binary_int8("ADD", "AddOptions"), [1, 4, 4, 3],
              "ADD int8 of operands with different scales (broadcast constant)")
quant_wrapped("mul_int8", _binary_int8("MUL", "MulOptions"), [1, 4, 4, 3],
              "MUL int8 (broadcast constant)")


@fixture("quant", "quantize_uint8", note="QUANTIZE float -> uint8 output")
def _quantize_uint8():
    m = Model()
    g = m.subgraph("main")
    x = g.tensor("x", [2, 8], F)
    y = g.tensor("y", [2, 8], "UINT8", quant=Quant(0.03, 128))
    g.op("QUANTIZE", [x], [y])
    g.inputs, g.outputs = [x], [y]
    m.signature("serving_default")
    return m, [floats(rng("quantize_uint8"), (2, 8), 1.5)]


@fixture("quant", "dequantize_uint8", note="DEQUANTIZE uint8 input -> float")
def _dequantize_uint8():
    m = Model()
    g = m.subgraph("main")
    x = g.tensor("x", [2, 8], "UINT8", quant=Quant(0.05, 100))
    y = g.tensor("y", [2, 8], F)
    g.op("DEQUANTIZE", [x], [y])
    g.inputs, g.outputs = [x], [y]
    m.signature("serving_default")
    return m, [rng("dequantize_uint8").integers(0, 256, (2, 8)).astype(np.uint8)]


@fixture("quant", "dequantize_int8_weights",
         note="weight-only int8: DEQUANTIZE of a constant feeding a float FULLY_CONNECTED")
def _dequantize_weights():
    r = rng("dequantize_int8_weights")
    wt = floats(r, (4, 6), 0.5)
    q, s = per_channel(wt, 0)
    m = Model()
    g = m.subgraph("main")
    x = g.tensor("x", [3, 6], F)
    wq = g.tensor("w_int8", [4, 6], "INT8", data=q, quant=Quant(s, np.zeros(4), 0))
    wf = g.tensor("w", [4, 6], F)
    y = g.tensor("y", [3, 4], F)
    g.op("DEQUANTIZE", [wq], [wf], version=2)
    g.op("FULLY_CONNECTED", [x, wf, -1], [y],
         options=("FullyConnectedOptions", {"fused_activation_function": 0}))
    g.inputs, g.outputs = [x], [y]
    m.signature("serving_default")
    return m, [floats(r, (3, 6))]


@fixture("quant", "conv_2d_uint8", note="CONV_2D uint8 (per-tensor, asymmetric) with uint8 I/O")
def _conv_uint8():
    r = rng("conv_2d_uint8")
    xs, xz = 0.02, 128
    xv = r.integers(0, 256, (1, 5, 5, 2)).astype(np.uint8)
    wt = floats(r, (3, 3, 3, 2), 0.3)
    ws, wz = qparams(float(wt.min()), float(wt.max()), "UINT8")
    wq = np.clip(np.round(wt / ws) + wz, 0, 255).astype(np.uint8)
    b = floats(r, (3,), 0.1)
    xf = (xv.astype(np.float32) - xz) * xs
    ref = conv_ref(xf, (wq.astype(np.float32) - wz) * ws, b, 1, SAME)
    ys, yz = qparams(float(ref.min()), float(ref.max()), "UINT8")
    m = Model()
    g = m.subgraph("main")
    x = g.tensor("x", [1, 5, 5, 2], "UINT8", quant=Quant(xs, xz))
    wtn = g.tensor("w", [3, 3, 3, 2], "UINT8", data=wq, quant=Quant(ws, wz))
    bt = g.tensor("b", [3], "INT32", data=np.round(b / (ws * xs)).astype(np.int32),
                  quant=Quant(ws * xs, 0))
    y = g.tensor("y", [1, 5, 5, 3], "UINT8", quant=Quant(ys, yz))
    g.op("CONV_2D", [x, wtn, bt], [y],
         options=("Conv2DOptions", {"padding": SAME, "stride_w": 1, "stride_h": 1}))
    g.inputs, g.outputs = [x], [y]
    m.signature("serving_default")
    return m, [xv]


# ---------------------------------------------------------------------------
# Small models, each with ONNX twins carrying the same weights: the source a
# converter would have started from (NCHW where the model has images), and
# for the CNN a deliberately wrong twin (one conv filter negated) that a
# source-against-converted comparison must catch. The generator runs the
# twins in onnxruntime-node (bench/) on the same inputs and records how
# close they come to LiteRT's outputs.

from onnx import TensorProto, helper, numpy_helper  # noqa: E402

ONNX_OPSET = 13


class Twin:
    """tol: the largest max-abs difference from LiteRT's output, relative to
    that output's largest magnitude, for a twin that should match; a wrong
    twin must differ by more than 100 times the float tolerance."""

    def __init__(self, suffix, model, inputs, should_match, note, tol=1e-4):
        self.suffix, self.model, self.inputs = suffix, model, inputs
        self.should_match, self.note, self.tol = should_match, note, tol


def onnx_model(name, nodes, inputs, outputs, inits):
    g = helper.make_graph(nodes, name, inputs, outputs,
                          initializer=[numpy_helper.from_array(np.asarray(v), k)
                                       for k, v in inits.items()])
    m = helper.make_model(g, producer_name="convgate make_tflite_fixtures.py",
                          opset_imports=[helper.make_opsetid("", ONNX_OPSET)])
    m.ir_version = 7
    return m


def same_pads(size, k, stride):
    """TFLite SAME padding (extra at the end) as (begin, end)."""
    out = -(-size // stride)
    total = max((out - 1) * stride + k - size, 0)
    return total // 2, total - total // 2


def cnn_weights(r):
    return {"w1": floats(r, (8, 3, 3, 3), 0.3), "b1": floats(r, (8,), 0.1),
            "w2": floats(r, (1, 3, 3, 8), 0.3), "b2": floats(r, (8,), 0.1),
            "w3": floats(r, (16, 1, 1, 8), 0.3), "b3": floats(r, (16,), 0.1),
            "w4": floats(r, (10, 16), 0.3), "b4": floats(r, (10,), 0.1)}


def cnn_onnx(wts, name):
    p = same_pads(16, 3, 2)
    nodes = [
        helper.make_node("Conv", ["x", "w1", "b1"], ["c1"], kernel_shape=[3, 3],
                         pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["c1"], ["r1"]),
        helper.make_node("Conv", ["r1", "w2", "b2"], ["c2"], kernel_shape=[3, 3], group=8,
                         strides=[2, 2], pads=[p[0], p[0], p[1], p[1]]),
        helper.make_node("Clip", ["c2", "zero", "six"], ["r2"]),
        helper.make_node("Conv", ["r2", "w3", "b3"], ["c3"], kernel_shape=[1, 1]),
        helper.make_node("Relu", ["c3"], ["r3"]),
        helper.make_node("ReduceMean", ["r3"], ["pooled"], axes=[2, 3], keepdims=0),
        helper.make_node("Gemm", ["pooled", "w4", "b4"], ["logits"], transB=1),
        helper.make_node("Softmax", ["logits"], ["probs"], axis=-1),
    ]
    inits = {"w1": wts["w1"].transpose(0, 3, 1, 2), "b1": wts["b1"],
             "w2": wts["w2"].transpose(3, 0, 1, 2), "b2": wts["b2"],
             "w3": wts["w3"].transpose(0, 3, 1, 2), "b3": wts["b3"],
             "w4": wts["w4"], "b4": wts["b4"],
             "zero": np.float32(0), "six": np.float32(6)}
    return onnx_model(name, nodes,
                      [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 16, 16])],
                      [helper.make_tensor_value_info("probs", TensorProto.FLOAT, [1, 10])], inits)


@fixture("models", "cnn",
         note="float CNN: CONV 3x3 RELU -> DEPTHWISE 3x3 s2 RELU6 -> CONV 1x1 RELU -> MEAN -> "
              "FULLY_CONNECTED -> SOFTMAX; ONNX twins in NCHW (one wrong)")
def _cnn():
    r = rng("models/cnn")
    wts = cnn_weights(r)
    m = Model()
    g = m.subgraph("main")
    x = g.tensor("x", [1, 16, 16, 3], F)
    t = {k: g.tensor(k, v.shape, F, data=v) for k, v in wts.items()}
    c1 = g.tensor("r1", [1, 16, 16, 8], F)
    c2 = g.tensor("r2", [1, 8, 8, 8], F)
    c3 = g.tensor("r3", [1, 8, 8, 16], F)
    axes = g.tensor("axes", [2], "INT32", data=np.int32([1, 2]))
    pooled = g.tensor("pooled", [1, 16], F)
    logits = g.tensor("logits", [1, 10], F)
    probs = g.tensor("probs", [1, 10], F)
    g.op("CONV_2D", [x, t["w1"], t["b1"]], [c1],
         options=("Conv2DOptions", {"padding": SAME, "stride_w": 1, "stride_h": 1,
                                    "fused_activation_function": ACT["RELU"]}))
    g.op("DEPTHWISE_CONV_2D", [c1, t["w2"], t["b2"]], [c2],
         options=("DepthwiseConv2DOptions", {"padding": SAME, "stride_w": 2, "stride_h": 2,
                                             "depth_multiplier": 1,
                                             "fused_activation_function": ACT["RELU6"]}))
    g.op("CONV_2D", [c2, t["w3"], t["b3"]], [c3],
         options=("Conv2DOptions", {"padding": SAME, "stride_w": 1, "stride_h": 1,
                                    "fused_activation_function": ACT["RELU"]}))
    g.op("MEAN", [c3, axes], [pooled], options=("ReducerOptions", {"keep_dims": False}))
    g.op("FULLY_CONNECTED", [pooled, t["w4"], t["b4"]], [logits],
         options=("FullyConnectedOptions", {"fused_activation_function": 0}))
    g.op("SOFTMAX", [logits], [probs], options=("SoftmaxOptions", {"beta": 1.0}))
    g.inputs, g.outputs = [x], [probs]
    m.signature("serving_default")
    xin = floats(r, (1, 16, 16, 3))
    nchw = np.ascontiguousarray(xin.transpose(0, 3, 1, 2))
    wrong = dict(wts)
    wrong["w1"] = np.ascontiguousarray(wts["w1"].transpose(0, 2, 1, 3))
    return m, [xin], [Twin("", cnn_onnx(wts, "cnn"), [nchw], True,
                           "the source model: same weights, NCHW input"),
                      Twin("_wrong", cnn_onnx(wrong, "cnn_wrong"), [nchw], False,
                           "deliberately wrong: the first conv's kernels have H and W swapped, "
                           "a classic layout bug of a converter")]


@fixture("models", "kws_if",
         note="keyword-spotting head with IF: RESHAPE -> CONV s2 RELU -> MEAN -> "
              "FULLY_CONNECTED -> SOFTMAX -> REDUCE_MAX > threshold ? probs : zeros")
def _kws_if():
    r = rng("models/kws_if")
    wc, bc = floats(r, (8, 3, 3, 1), 0.5), floats(r, (8,), 0.1)
    wf, bf = floats(r, (4, 8), 0.8), floats(r, (4,), 0.1)
    x = floats(r, (1, 49, 10))
    # The threshold sits just under this input's top score: it takes "then".
    h = np.maximum(conv_ref(x.reshape(1, 49, 10, 1), wc, bc, 2, SAME), 0)
    logits = h.mean(axis=(1, 2)) @ wf.T + bf
    probs = np.exp(logits - logits.max()) / np.exp(logits - logits.max()).sum()
    threshold = np.float32(probs.max() - 0.02)

    m = Model()
    g = m.subgraph("main")
    xi = g.tensor("x", [1, 49, 10], F)
    shape = g.tensor("shape", [4], "INT32", data=np.int32([1, 49, 10, 1]))
    x4 = g.tensor("x4", [1, 49, 10, 1], F)
    wct = g.tensor("wc", wc.shape, F, data=wc)
    bct = g.tensor("bc", bc.shape, F, data=bc)
    hc = g.tensor("h", [1, 25, 5, 8], F)
    axes = g.tensor("axes", [2], "INT32", data=np.int32([1, 2]))
    pooled = g.tensor("pooled", [1, 8], F)
    wft = g.tensor("wf", wf.shape, F, data=wf)
    bft = g.tensor("bf", bf.shape, F, data=bf)
    lg = g.tensor("logits", [1, 4], F)
    pr = g.tensor("probs", [1, 4], F)
    ax1 = g.tensor("ax1", [1], "INT32", data=np.int32([1]))
    score = g.tensor("score", [1], F)
    thr = g.tensor("threshold", [], F, data=np.array(threshold, np.float32))
    cond = g.tensor("cond", [1], "BOOL")
    out = g.tensor("out", [1, 4], F)
    g.op("RESHAPE", [xi, shape], [x4])
    g.op("CONV_2D", [x4, wct, bct], [hc],
         options=("Conv2DOptions", {"padding": SAME, "stride_w": 2, "stride_h": 2,
                                    "fused_activation_function": ACT["RELU"]}))
    g.op("MEAN", [hc, axes], [pooled], options=("ReducerOptions", {"keep_dims": False}))
    g.op("FULLY_CONNECTED", [pooled, wft, bft], [lg],
         options=("FullyConnectedOptions", {"fused_activation_function": 0}))
    g.op("SOFTMAX", [lg], [pr], options=("SoftmaxOptions", {"beta": 1.0}))
    g.op("REDUCE_MAX", [pr, ax1], [score], options=("ReducerOptions", {"keep_dims": False}))
    g.op("GREATER", [score, thr], [cond])
    g.op("IF", [cond, pr], [out], options=("IfOptions", {"then_subgraph_index": 1,
                                                         "else_subgraph_index": 2}))
    g.inputs, g.outputs = [xi], [out]
    for name, k in (("accept", 1.0), ("reject", 0.0)):
        b = m.subgraph(name)
        bi = b.tensor(name + "_probs", [1, 4], F)
        bk = b.tensor(name + "_k", [], F, data=np.array(k, np.float32))
        bo = b.tensor(name + "_out", [1, 4], F)
        b.op("MUL", [bi, bk], [bo], options=("MulOptions", {"fused_activation_function": 0}))
        b.inputs, b.outputs = [bi], [bo]
    m.signature("serving_default")

    ph, pw = same_pads(49, 3, 2), same_pads(10, 3, 2)
    then_g = helper.make_graph([helper.make_node("Identity", ["probs"], ["accepted"])],
                               "accept", [], [helper.make_tensor_value_info(
                                   "accepted", TensorProto.FLOAT, [1, 4])])
    else_g = helper.make_graph([helper.make_node("Mul", ["probs", "zero"], ["rejected"])],
                               "reject", [], [helper.make_tensor_value_info(
                                   "rejected", TensorProto.FLOAT, [1, 4])])
    nodes = [
        helper.make_node("Reshape", ["x", "shape"], ["x4"]),
        helper.make_node("Conv", ["x4", "wc", "bc"], ["c"], kernel_shape=[3, 3],
                         strides=[2, 2], pads=[ph[0], pw[0], ph[1], pw[1]]),
        helper.make_node("Relu", ["c"], ["h"]),
        helper.make_node("ReduceMean", ["h"], ["pooled"], axes=[2, 3], keepdims=0),
        helper.make_node("Gemm", ["pooled", "wf", "bf"], ["logits"], transB=1),
        helper.make_node("Softmax", ["logits"], ["probs"], axis=-1),
        helper.make_node("ReduceMax", ["probs"], ["score"], axes=[1], keepdims=0),
        helper.make_node("Greater", ["score", "threshold"], ["cond"]),
        helper.make_node("If", ["cond"], ["out"], then_branch=then_g, else_branch=else_g),
    ]
    twin = onnx_model("kws_if", nodes,
                      [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 49, 10])],
                      [helper.make_tensor_value_info("out", TensorProto.FLOAT, [1, 4])],
                      {"shape": np.int64([1, 1, 49, 10]), "wc": wc.transpose(0, 3, 1, 2),
                       "bc": bc, "wf": wf, "bf": bf, "threshold": threshold,
                       "zero": np.float32(0)})
    return m, [x], [Twin("", twin, [x], True, "the source model: same weights, ONNX If")]


@fixture("models", "int8_cnn",
         note="int8 CNN with a float interface: QUANTIZE -> CONV int8 RELU -> DEPTHWISE int8 "
              "s2 -> MEAN int8 -> FULLY_CONNECTED int8 -> DEQUANTIZE; its ONNX twin is the "
              "float source with the dequantized weights")
def _int8_cnn():
    r = rng("models/int8_cnn")
    x = floats(r, (1, 8, 8, 3))
    w1, b1 = floats(r, (8, 3, 3, 3), 0.3), floats(r, (8,), 0.1)
    w2, b2 = floats(r, (1, 3, 3, 8), 0.3), floats(r, (8,), 0.1)
    w4, b4 = floats(r, (4, 8), 0.5), floats(r, (4,), 0.1)
    q1, s1 = per_channel(w1, 0)
    q2, s2 = per_channel(w2, 3)
    q4, s4 = per_channel(w4, 0)
    d1, d2, d4 = dequant(q1, s1, 0), dequant(q2, s2, 3), dequant(q4, s4, 0)
    xs, xz = qparams(float(x.min()), float(x.max()))
    h1 = np.maximum(conv_ref(x, d1, b1, 1, SAME), 0)
    h1s, h1z = qparams(0.0, float(h1.max()))
    h2 = conv_ref(h1, d2, b2, 2, SAME, depthwise=True)
    h2s, h2z = qparams(float(h2.min()), float(h2.max()))
    pooled = h2.mean(axis=(1, 2))
    ps, pz = qparams(float(pooled.min()), float(pooled.max()))
    y = pooled @ d4.T + b4
    ys, yz = qparams(float(y.min()), float(y.max()))
    # int32 biases, as the converter rounds them; the twin uses the same values
    qb1 = np.round(b1 / (s1 * xs)).astype(np.int32)
    qb2 = np.round(b2 / (s2 * h1s)).astype(np.int32)
    qb4 = np.round(b4 / (s4 * ps)).astype(np.int32)
    fb1, fb2, fb4 = qb1 * s1 * xs, qb2 * s2 * h1s, qb4 * s4 * ps

    m = Model()
    g = m.subgraph("main")
    xf = g.tensor("x", [1, 8, 8, 3], F)
    xq = g.tensor("x_int8", [1, 8, 8, 3], "INT8", quant=Quant(xs, xz))
    t1 = g.tensor("w1", w1.shape, "INT8", data=q1, quant=Quant(s1, np.zeros(8), 0))
    tb1 = g.tensor("b1", [8], "INT32", data=qb1, quant=Quant(s1 * xs, np.zeros(8), 0))
    a1 = g.tensor("h1", [1, 8, 8, 8], "INT8", quant=Quant(h1s, h1z))
    t2 = g.tensor("w2", w2.shape, "INT8", data=q2, quant=Quant(s2, np.zeros(8), 3))
    tb2 = g.tensor("b2", [8], "INT32", data=qb2, quant=Quant(s2 * h1s, np.zeros(8), 0))
    a2 = g.tensor("h2", [1, 4, 4, 8], "INT8", quant=Quant(h2s, h2z))
    axes = g.tensor("axes", [2], "INT32", data=np.int32([1, 2]))
    a3 = g.tensor("pooled", [1, 8], "INT8", quant=Quant(ps, pz))
    t4 = g.tensor("w4", w4.shape, "INT8", data=q4, quant=Quant(s4, np.zeros(4), 0))
    tb4 = g.tensor("b4", [4], "INT32", data=qb4, quant=Quant(s4 * ps, np.zeros(4), 0))
    a4 = g.tensor("logits_int8", [1, 4], "INT8", quant=Quant(ys, yz))
    out = g.tensor("logits", [1, 4], F)
    g.op("QUANTIZE", [xf], [xq], version=2)
    g.op("CONV_2D", [xq, t1, tb1], [a1], version=3,
         options=("Conv2DOptions", {"padding": SAME, "stride_w": 1, "stride_h": 1,
                                    "fused_activation_function": ACT["RELU"]}))
    g.op("DEPTHWISE_CONV_2D", [a1, t2, tb2], [a2], version=3,
         options=("DepthwiseConv2DOptions", {"padding": SAME, "stride_w": 2, "stride_h": 2,
                                             "depth_multiplier": 1}))
    g.op("MEAN", [a2, axes], [a3], version=2, options=("ReducerOptions", {"keep_dims": False}))
    g.op("FULLY_CONNECTED", [a3, t4, tb4], [a4], version=4,
         options=("FullyConnectedOptions", {"fused_activation_function": 0}))
    g.op("DEQUANTIZE", [a4], [out], version=2)
    g.inputs, g.outputs = [xf], [out]
    m.signature("serving_default")

    p = same_pads(8, 3, 2)
    nodes = [
        helper.make_node("Conv", ["x", "w1", "b1"], ["c1"], kernel_shape=[3, 3],
                         pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["c1"], ["h1"]),
        helper.make_node("Conv", ["h1", "w2", "b2"], ["h2"], kernel_shape=[3, 3], group=8,
                         strides=[2, 2], pads=[p[0], p[0], p[1], p[1]]),
        helper.make_node("ReduceMean", ["h2"], ["pooled"], axes=[2, 3], keepdims=0),
        helper.make_node("Gemm", ["pooled", "w4", "b4"], ["logits"], transB=1),
    ]
    twin = onnx_model("int8_cnn_float_source", nodes,
                      [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 8, 8])],
                      [helper.make_tensor_value_info("logits", TensorProto.FLOAT, [1, 4])],
                      {"w1": d1.transpose(0, 3, 1, 2), "b1": fb1.astype(np.float32),
                       "w2": d2.transpose(3, 0, 1, 2), "b2": fb2.astype(np.float32),
                       "w4": d4, "b4": fb4.astype(np.float32)})
    nchw = np.ascontiguousarray(x.transpose(0, 3, 1, 2))
    return m, [x], [Twin("", twin, [nchw], True,
                         "the float source: dequantized weights and biases, NCHW input; "
                         "matches within int8 quantization error", tol=0.1)]


# ---------------------------------------------------------------------------


def run_litert(tflite, inputs, workdir):
    """LiteRT.js CPU outputs: (ok, [arrays] or the error text, result json)."""
    in_files = []
    for i, a in enumerate(inputs):
        p = os.path.join(workdir, "input_%d.npy" % i)
        np.save(p, a)
        in_files.append(p)
    out = os.path.join(workdir, "out")
    proc = subprocess.run(["node", RUNNER, tflite, out] + in_files, capture_output=True,
                          text=True, timeout=300)
    if proc.returncode != 0:
        return False, (proc.stderr or proc.stdout).strip(), None
    with open(os.path.join(out, "result.json")) as f:
        result = json.load(f)
    arrays = [np.load(os.path.join(out, o["file"])) for o in result["outputs"]]
    return True, arrays, result


ORT_RUNNER = os.path.join(ROOT, "bench", "ort_session.js")


def run_ort(onnx_path, names, inputs, workdir):
    """onnxruntime-node's outputs ({name: array}), or None when bench/ lacks it."""
    if not os.path.exists(os.path.join(ROOT, "bench", "node_modules", "onnxruntime-node")):
        return None
    args = ["node", ORT_RUNNER, "--run", "--runs", "1"]
    for name, a in zip(names, inputs):
        p = os.path.join(workdir, "ort_in_%s.npy" % name)
        np.save(p, a)
        args += ["--input", "%s=%s" % (name, p)]
    out = os.path.join(workdir, "ort_out")
    args += ["--save-outputs", out, onnx_path]
    proc = subprocess.run(args, capture_output=True, text=True, timeout=300)
    if proc.returncode != 0:
        raise RuntimeError("onnxruntime-node failed on %s: %s" % (onnx_path, proc.stderr))
    return {f[:-4]: np.load(os.path.join(out, f)) for f in os.listdir(out)}


def check_twins(key, fx_dir, twins, litert_out, out_root, failed):
    """Writes the twins, runs them in ORT and compares with LiteRT's outputs."""
    rows = []
    for tw in twins:
        name = os.path.basename(fx_dir) + tw.suffix
        tdir = os.path.join(out_root, "twins")
        os.makedirs(os.path.join(tdir, name), exist_ok=True)
        onnx_path = os.path.join(tdir, name + ".onnx")
        with open(onnx_path, "wb") as f:
            f.write(tw.model.SerializeToString())
        in_names = [i.name for i in tw.model.graph.input]
        files = []
        for i, a in enumerate(tw.inputs):
            p = os.path.join(tdir, name, "input_%d.npy" % i)
            np.save(p, a)
            files.append(os.path.relpath(p, out_root))
        row = {"file": os.path.relpath(onnx_path, out_root), "note": tw.note,
               "should_match": tw.should_match, "inputs": files, "tolerance": tw.tol}
        with tempfile.TemporaryDirectory() as work:
            got = run_ort(onnx_path, in_names, tw.inputs, work)
        if got is None:
            print("  (bench/node_modules has no onnxruntime-node: twin %s not run)" % name)
            row["onnxruntime"] = None
            rows.append(row)
            continue
        out_name = tw.model.graph.output[0].name
        ref = litert_out[0].astype(np.float64)
        diff = float(np.max(np.abs(got[out_name].astype(np.float64) - ref)))
        scale = max(float(np.max(np.abs(ref))), 1e-30)
        row["onnxruntime"] = {"version": "onnxruntime-node 1.22.0", "max_abs_diff": diff,
                              "relative_to_output_scale": diff / scale}
        if tw.should_match and diff > tw.tol * scale:
            failed.append("%s: twin %s differs from LiteRT by %g (tolerance %g x %g)"
                          % (key, name, diff, tw.tol, scale))
        if not tw.should_match and diff <= 100 * 1e-4 * scale:
            failed.append("%s: wrong twin %s is too close to LiteRT (%g)" % (key, name, diff))
        print("  twin %-28s max |ORT - LiteRT| = %.3g (%.2g of the output scale)%s"
              % (name, diff, diff / scale, "" if tw.should_match else "  [wrong on purpose]"))
        rows.append(row)
    return rows


WEBGPU_RUNNER = os.path.join(ROOT, "tools", "litert", "run_webgpu.mjs")


def record_webgpu(keys, out_root, expectations, failed):
    """Runs the fixtures through LiteRT.js's WebGPU delegate in headless
    Chromium (fp32) and records residency and the largest difference from
    the CPU outputs under "litert_webgpu"."""
    if shutil.which("chromium") is None:
        print("make_tflite_fixtures: chromium is not installed: WebGPU residency not recorded")
        return
    jobs = []
    for key in keys:
        e = expectations[key]
        jobs.append({"id": key, "model": os.path.join(out_root, e["file"]),
                     "inputs": [os.path.join(out_root, i["file"]) for i in e["inputs"]]})
    with tempfile.TemporaryDirectory() as work:
        jobs_path = os.path.join(work, "jobs.json")
        with open(jobs_path, "w") as f:
            json.dump(jobs, f)
        res_path = os.path.join(work, "results.json")
        proc = subprocess.run(["node", WEBGPU_RUNNER, "--batch", jobs_path, res_path],
                              capture_output=True, text=True, timeout=3600)
        if proc.returncode != 0:
            failed.append("WebGPU run failed: " + proc.stderr.strip())
            return
        with open(res_path) as f:
            batch = json.load(f)
    adapter = batch.get("adapter") or {}
    for key in keys:
        r = batch["results"].get(key)
        if r is None:
            failed.append("%s: no WebGPU result" % key)
            continue
        rec = {"precision": batch["precision"],
               "adapter": "%s/%s" % (adapter.get("vendor"), adapter.get("architecture")),
               "status": "ok" if r["ok"] else "failed"}
        if not r["ok"]:
            rec["error"] = r.get("error", "")[:300]
        res = r.get("residency") or {}
        rec.update({"fully_accelerated": r.get("fully_accelerated"),
                    "gpu_ops": res.get("gpu_ops"), "cpu_ops": res.get("cpu_ops"),
                    "rejected": res.get("rejected", []), "graph_inits": res.get("graph_inits"),
                    "residency_from": res.get("source")})
        if res.get("delegate_error"):
            rec["delegate_error"] = res["delegate_error"][:300]
        cpu = expectations[key].get("litert_cpu") or {}
        if r["ok"] and cpu.get("status") == "ok":
            diffs = []
            for o, c in zip(r["outputs"], cpu["outputs"]):
                ref = np.load(os.path.join(out_root, c["file"])).astype(np.float64)
                got = np.asarray(o["data"], np.float64).reshape(ref.shape)
                diffs.append(float(np.max(np.abs(got - ref))) if ref.size else 0.0)
            rec["max_abs_diff_vs_cpu"] = diffs
        expectations[key]["litert_webgpu"] = rec
        print("%-40s WebGPU: %s, %s GPU / %s CPU ops%s" % (
            key, rec["status"], rec["gpu_ops"], rec["cpu_ops"],
            "; rejected " + ", ".join(x["op"] for x in rec["rejected"]) if rec["rejected"]
            else ""))


def write_expectations(path, fixtures):
    """expectations.json, indented, with lists of numbers kept on one line."""
    order = ["file", "note", "inputs", "litert_cpu", "litert_webgpu", "twins"]
    ordered = {k: {f: v[f] for f in sorted(v, key=lambda f: (order + [f]).index(f))}
               for k, v in sorted(fixtures.items())}
    text = json.dumps({"runtime": "@litertjs/core 2.5.3 (tools/litert/package-lock.json)",
                       "generator": "tools/make_tflite_fixtures.py",
                       "fixtures": ordered}, indent=1)
    text = re.sub(r"\[\s*((?:-?[\d.e+-]+,\s*)*-?[\d.e+-]+)\s*\]",
                  lambda m: "[" + ", ".join(m.group(1).split()).replace(",,", ",") + "]", text)
    with open(path, "w") as f:
        f.write(text + "\n")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default=os.path.join(ROOT, "tests", "data", "tflite"))
    ap.add_argument("--only", help="regex over group/name: regenerate only those")
    ap.add_argument("--no-webgpu", action="store_true",
                    help="do not record the WebGPU delegate's residency (keeps old records)")
    ap.add_argument("--webgpu-only", action="store_true",
                    help="only record the WebGPU residency again, for the fixtures as they are")
    args = ap.parse_args()
    if shutil.which("node") is None or not os.path.exists(
            os.path.join(ROOT, "tools", "litert", "node_modules", "@litertjs", "core")):
        sys.exit("make_tflite_fixtures: node and tools/litert/node_modules are needed to "
                 "validate the fixtures (scripts/setup.sh installs them)")
    exp_path = os.path.join(args.out, "expectations.json")
    expectations = {}
    if os.path.exists(exp_path):
        with open(exp_path) as f:
            expectations = json.load(f).get("fixtures", {})
    failed = []
    done = []
    if args.webgpu_only:
        keys = [k for k in sorted(expectations) if not args.only or re.search(args.only, k)]
        record_webgpu(keys, args.out, expectations, failed)
        write_expectations(exp_path, expectations)
        if failed:
            sys.exit("make_tflite_fixtures: " + "\n  ".join([""] + failed))
        return
    for fx in REGISTRY:
        key = "%s/%s" % (fx.group, fx.name)
        if args.only and not re.search(args.only, key):
            continue
        built = fx.build()
        model, inputs = built[0], built[1]
        twins = built[2] if len(built) > 2 else []
        data = model.serialize()
        gdir = os.path.join(args.out, fx.group)
        fdir = os.path.join(gdir, fx.name)
        os.makedirs(gdir, exist_ok=True)
        if os.path.isdir(fdir):
            shutil.rmtree(fdir)
        os.makedirs(fdir)
        tflite = os.path.join(gdir, fx.name + ".tflite")
        with open(tflite, "wb") as f:
            f.write(data)
        for i, a in enumerate(inputs):
            np.save(os.path.join(fdir, "input_%d.npy" % i), a)
        entry = {"file": os.path.relpath(tflite, args.out), "note": fx.note,
                 "inputs": [{"file": "%s/%s/input_%d.npy" % (fx.group, fx.name, i),
                             "dtype": str(a.dtype), "shape": list(a.shape)}
                            for i, a in enumerate(inputs)],
                 "litert_cpu": None}
        old = expectations.get(key, {})
        if "litert_webgpu" in old:
            entry["litert_webgpu"] = old["litert_webgpu"]
        with tempfile.TemporaryDirectory() as work:
            ok, got, result = run_litert(tflite, inputs, work)
        if fx.litert == "refuse":
            if ok:
                failed.append("%s: LiteRT ran it, but the fixture says LiteRT refuses it" % key)
            got = got.replace(tflite, entry["file"]) if not ok else got
            entry["litert_cpu"] = {"status": "refused",
                                   "error": re.sub(r"\s+", " ", got.splitlines()[0])[:300]
                                   if not ok else None}
        elif not ok:
            failed.append("%s: LiteRT refused it: %s" % (key, got))
        else:
            outs = []
            for i, (a, o) in enumerate(zip(got, result["outputs"])):
                if a.dtype.kind == "f" and not np.all(np.isfinite(a)):
                    failed.append("%s: LiteRT output %d is not finite" % (key, i))
                name = "litert_%d.npy" % i
                np.save(os.path.join(fdir, name), a)
                outs.append({"name": o["name"], "dtype": o["dtype"], "shape": o["shape"],
                             "file": "%s/%s/%s" % (fx.group, fx.name, name)})
            entry["litert_cpu"] = {"status": "ok", "outputs": outs}
            if twins:
                entry["twins"] = check_twins(key, fdir, twins, got, args.out, failed)
        expectations[key] = entry
        done.append(key)
        print("%-40s %6d bytes  LiteRT: %s" % (key, len(data),
                                                 entry["litert_cpu"]["status"] if
                                                 entry["litert_cpu"] else "FAILED"))
    if not args.no_webgpu:
        record_webgpu(done, args.out, expectations, failed)
    write_expectations(exp_path, expectations)
    if failed:
        sys.exit("make_tflite_fixtures: " + "\n  ".join([""] + failed))


if __name__ == "__main__":
    main()
