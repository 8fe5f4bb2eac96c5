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
                                            and the variance lose most of their bits. This is
                                            fp16 *storage* of a large-mean input (it breaks on
                                            both device classes, at the centering Sub); no sum
                                            overflows (the variance is ~0.09)
  tests/data/fp16/layernorm_variance.onnx   the same LayerNorm over a width of 1024, of
                                            activations with mean ~0.5 and deviations ~10
                                            (rows 2-3; rows 0-1 ~1), as a transformer's
                                            residual stream has: the variance ReduceMean's
                                            running sum of squared deviations (~1e5) passes
                                            65504, inf with fp16 sums, fine with fp32 sums
  tests/data/fp16/global_mean.onnx          mean over C,H,W of a 1x3x32x32 map of values
                                            ~100: an fp16 accumulator passes 65504 after ~650
                                            elements (inf); with fp32 accumulation it is fine
  tests/data/fp16/<case>_inputs/<set>/x.npy input sets (the layout of --inputs DIR)

  tests/data/fp16/rmsnorm_pow.onnx          the RMSNorm as exporters often write it, Pow(x, 2)
                                            then ReduceMean, with inputs that are NOT exact in
                                            fp16 (|x| ~ 100..150 off the fp16 grid): the fp16
                                            rounding of x and of x^2 (20358.1 stored as 20352)
                                            is ordinary fp16 storage, within the fp16 storage
                                            floor, and the first tensor beyond its floor is the
                                            ReduceMean whose sum overflows (#14)
  tests/data/fp16/<m>_fp16.onnx             fp16 conversions of layernorm_precision and of
                                            examples/tiny_cnn: every float initializer, input,
                                            output and value_info in float16 (a model as a
                                            float16 converter writes it), for `bisect --against`
                                            the source: the CNN holds within its fp16 floors;
                                            the LayerNorm's deviations from a mean of ~300 keep
                                            few bits in fp16 (a precision breakdown, fine when
                                            the conversion is computed in float64)
  tests/data/fp16/detect_tie.onnx           a detector's tail: six disjoint boxes scored by
                                            Sigmoid(x * w + b), NonMaxSuppression, and the boxes,
                                            scores and labels gathered in the order NMS keeps
                                            them. Boxes 2 and 5 have biases 1e-4 apart: their
                                            scores are 1.8e-6 apart in fp32 (box 5 first) and
                                            equal in fp16, whose spacing at 2 rounds the biases
                                            together (box 2 first, the lower index), so on an fp16
                                            target the two near-tied boxes swap places in every
                                            output while every box is present on both sides
  tests/data/fp16/detect_tie_inputs/        its input x (one set)
  tests/data/fp16/detect_sum.onnx           the same tail scoring its boxes by a ReduceSum per
                                            box (/ 1024): box 0's row is sum_cancel's (70 x 1024
                                            then 69 x -1024), whose running sum passes 65504 with
                                            fp16 sums (inf: score 1 where fp32 gives 0.73) and
                                            not with fp32 sums; with detect_sum_inputs/
  tests/data/fp16/segment_tie.onnx          a per-pixel classifier (1x1 Conv, 3 classes) whose
                                            classes 0 and 1 differ by weights 1e-4..3e-4 apart:
                                            their logits are 1e-4..6e-4 apart, resolved in fp32
                                            and not in fp16 (weights rounded to fp16's spacing
                                            of 4.9e-4 at 0.5), so an fp16 target changes the
                                            class of many pixels, each within the fp16 noise
  tests/data/fp16/segment_tie_inputs/       its input x (one set, fp16-exact)

  tests/data/fp16/sum_cancel.onnx           ReduceSum over 139 values: 70 x 1024 then 69 x -1024
                                            (exact in fp16): a running sum past 65504 (inf in
                                            fp16), 1024 in fp32
  tests/data/fp16/prod_overflow.onnx        ReduceProd of rows 256, 256, 1/256, 1/256, ...:
                                            a running product of 65536 (inf in fp16), 1 in fp32
  tests/data/fp16/conv_cancel.onnx          a 3x3 Conv of 16 channels of 32 whose weights are
                                            +32 for taps 0-4 and -32 for taps 5-8: summed as
                                            TFLite GPU does (taps outer, channels inner) the
                                            running sum passes 65504 after tap 4 (inf in fp16);
                                            16384 in fp32
  tests/data/fp16/convt_cancel.onnx         a ConvTranspose of 16 channels of 32 onto one pixel
                                            (3x3 kernel, pads 2: all 9 taps meet it) whose
                                            weights are +32 for taps 0-4 and -16 for taps 5-8:
                                            summed as TFLite GPU's transposed convolution does
                                            (taps ascending, outer; channels inner) the running
                                            sum passes 65504 after tap 3 (inf in fp16); taps
                                            descending or channels outer it never does; 49153 in
                                            fp32
  tests/data/fp16/<case>_inputs/            their inputs (one set each, fp16-exact)
  tests/data/fp16/dynquant_overflow.onnx    a dynamically quantized 3x3 convolution (ONNX
                                            Runtime's quantize_dynamic layout: DynamicQuantizeLinear,
                                            ConvInteger, Cast of the int32 accumulator to float, the
                                            Mul by the two scales) followed by a DynamicQuantizeLinear
                                            and DequantizeLinear, as the next quantized layer reads
                                            it: the accumulators reach 459000, which fp16 cannot hold
                                            (65504), so fp16 storage of the Cast's output is inf and
                                            the second quantizer has no range (no output at all); in
                                            fp32 it is exact; with dynquant_overflow_inputs/
  tests/data/fp16/sums_overflow.onnx        one node each of ReduceSum, ReduceSumSquare, ReduceL2,
                                            ReduceLogSumExp, ReduceProd, Conv and ConvTranspose,
                                            on inputs
                                            (sums_overflow_inputs) whose fp16 running sums
                                            pass 65504 where an fp16 sum can (tests/unit/
                                            test_fp64.c: the F16 devices' floor mode stays
                                            finite where fp16 accumulation gives inf)

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

def layernorm_model(d=64, name="layernorm_fp16"):
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
    rows = 8 if d == 64 else 4
    return graph_model(
        name, nodes,
        [h.make_tensor_value_info("x", TP.FLOAT, [1, rows, d])],
        [h.make_tensor_value_info("y", TP.FLOAT, [1, rows, d])],
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


def layernorm_variance_inputs():
    """Width 1024: rows 0-1 with deviations ~1, rows 2-3 with deviations ~10
    (a normal of std 10, clipped to +-60) around a mean of 0.5, on a 1/8 grid
    (exact in fp16 below 64). Sum of squared deviations of rows 2-3: ~1e5,
    past 65504; the mean's running sum stays within a few hundred."""
    sets = {}
    for s in range(2):
        rng = np.random.default_rng(700 + s)
        x = np.empty((1, 4, 1024))
        x[0, :2] = rng.normal(0.0, 1.0, size=(2, 1024))
        x[0, 2:] = rng.normal(0.0, 10.0, size=(2, 1024))
        x = np.clip(np.round((x + 0.5) * 8.0) / 8.0, -60.0, 60.0)
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
    # layernorm and rmsnorm_pow inputs are deliberately not fp16-exact
    for set_name, tensors in sets.items():
        d = os.path.join(root, set_name)
        os.makedirs(d, exist_ok=True)
        for name, arr in tensors.items():
            np.save(os.path.join(d, name + ".npy"), arr)


# --- (d) RMSNorm written with Pow, inputs off the fp16 grid ---------------------

def rmsnorm_pow_model():
    d = 64
    rng = np.random.default_rng(17)
    g = (rng.integers(12, 20, size=d) / 16.0).astype(np.float32)
    nodes = [
        h.make_node("Pow", ["x", "two"], ["x_sq"], name="square"),
        h.make_node("ReduceMean", ["x_sq"], ["mean_sq"], name="mean_sq", axes=[-1], keepdims=1),
        h.make_node("Add", ["mean_sq", "eps"], ["mean_sq_eps"], name="add_eps"),
        h.make_node("Sqrt", ["mean_sq_eps"], ["rms"], name="rms"),
        h.make_node("Div", ["x", "rms"], ["x_norm"], name="normalize"),
        h.make_node("Mul", ["x_norm", "g"], ["y"], name="scale"),
    ]
    return graph_model(
        "rmsnorm_pow", nodes,
        [h.make_tensor_value_info("x", TP.FLOAT, [1, 4, d])],
        [h.make_tensor_value_info("y", TP.FLOAT, [1, 4, d])],
        [const("two", 2.0), const("eps", 1e-5), const("g", g)])


def rmsnorm_pow_inputs():
    """Rows 0-1 of magnitude ~1, rows 2-3 of magnitude 100..150 with random
    fractions (not fp16 values: fp16's spacing there is 0.0625): the squares
    round in fp16 storage, the sums pass 65504."""
    sets = {}
    for s in range(2):
        rng = np.random.default_rng(400 + s)
        x = np.empty((1, 4, 64), np.float32)
        x[0, :2] = rng.uniform(-1, 1, size=(2, 64))
        x[0, 2:] = rng.uniform(100, 150, size=(2, 64)) * rng.choice([-1.0, 1.0], (2, 64))
        sets["sample_%d" % s] = {"x": x.astype(np.float32)}
    return sets


# --- (e) fp16 conversions ---------------------------------------------------------

def to_float16(model):
    """Every float32 initializer, graph input, output and value_info, Constant
    value and Cast target in float16, as a float16 converter writes a model
    (its inputs are float16: bisect --against casts the source's inputs)."""
    m = onnx.ModelProto()
    m.CopyFrom(model)
    g = m.graph
    for i, t in enumerate(g.initializer):
        if t.data_type == TP.FLOAT:
            g.initializer[i].CopyFrom(
                numpy_helper.from_array(numpy_helper.to_array(t).astype(np.float16), t.name))
    for vi in list(g.input) + list(g.output) + list(g.value_info):
        if vi.type.tensor_type.elem_type == TP.FLOAT:
            vi.type.tensor_type.elem_type = TP.FLOAT16
    for n in g.node:
        for a in n.attribute:
            if n.op_type == "Cast" and a.name == "to" and a.i == TP.FLOAT:
                a.i = TP.FLOAT16
            if n.op_type == "Constant" and a.name == "value" and a.t.data_type == TP.FLOAT:
                a.t.CopyFrom(numpy_helper.from_array(
                    numpy_helper.to_array(a.t).astype(np.float16), a.t.name))
    m.producer_name = "convgate tools/make_fp16_cases.py (float16 conversion)"
    return m


# --- (f) a detector's tail with near-tied scores ---------------------------------------

DETECT_BOXES = 6
DETECT_LABELS = [1, 2, 3, 1, 2, 3]


def detect_model(name, head, x_shape, head_inits):
    """A detector's tail after `head`, which computes the six logits:
    scores Sigmoid(logits), NonMaxSuppression over six disjoint boxes, and
    the boxes, scores and labels gathered in the order NMS keeps them."""
    n = DETECT_BOXES
    # disjoint boxes (x1, y1, x2, y2): NMS keeps all six, in score order
    boxes = np.array([[10 * i, 0, 10 * i + 8, 8] for i in range(n)], np.float32)
    labels = np.array(DETECT_LABELS, np.int64)
    nodes = head + [
        h.make_node("Sigmoid", ["logits"], ["prob"], name="score"),
        h.make_node("Reshape", ["prob", "score_shape"], ["nms_scores"], name="to_nms_scores"),
        h.make_node("NonMaxSuppression", ["nms_boxes", "nms_scores", "max_out", "iou_thr",
                                          "score_thr"], ["selected"], name="nms"),
        h.make_node("Gather", ["selected", "col2"], ["keep"], name="kept_index", axis=1),
        h.make_node("Gather", ["box_table", "keep"], ["boxes"], name="gather_boxes", axis=0),
        h.make_node("Gather", ["prob", "keep"], ["scores"], name="gather_scores", axis=0),
        h.make_node("Gather", ["label_table", "keep"], ["labels"], name="gather_labels",
                    axis=0),
    ]
    inits = head_inits + [
        const("box_table", boxes),
        numpy_helper.from_array(boxes.reshape(1, n, 4), "nms_boxes"),
        numpy_helper.from_array(np.array([1, 1, n], np.int64), "score_shape"),
        numpy_helper.from_array(np.array([n], np.int64), "max_out"),
        const("iou_thr", [0.5]), const("score_thr", [0.0]),
        numpy_helper.from_array(np.array(2, np.int64), "col2"),
        numpy_helper.from_array(labels, "label_table"),
    ]
    return graph_model(
        name, nodes, [h.make_tensor_value_info("x", TP.FLOAT, x_shape)],
        [h.make_tensor_value_info("boxes", TP.FLOAT, ["k", 4]),
         h.make_tensor_value_info("scores", TP.FLOAT, ["k"]),
         h.make_tensor_value_info("labels", TP.INT64, ["k"])], inits)


def detect_tie_model():
    w = np.array([0.5, -0.25, 1.0, 0.75, -0.5, 1.0], np.float32)
    b = np.array([0.0, 0.5, 2.0, -1.0, 1.0, 2.0 + 1e-4], np.float32)
    head = [h.make_node("Mul", ["x", "w"], ["xw"], name="weigh"),
            h.make_node("Add", ["xw", "b"], ["logits"], name="bias")]
    return detect_model("detect_tie", head, [DETECT_BOXES], [const("w", w), const("b", b)])


def detect_sum_model():
    head = [h.make_node("ReduceSum", ["x", "axes"], ["total"], name="sum", keepdims=0),
            h.make_node("Mul", ["total", "unit"], ["logits"], name="to_logits")]
    return detect_model("detect_sum", head, [DETECT_BOXES, 139],
                        [numpy_helper.from_array(np.array([1], np.int64), "axes"),
                         const("unit", 1.0 / 1024)])


def detect_sum_inputs():
    """Row 0 is sum_cancel's row (70 x 1024 then 69 x -1024: a running sum of
    71680 in fp16 sums, inf; 1024 in fp32): logit 1; rows 1-5 hold their
    logit x 1024 in their first element (0, 4, 0.5, -1, 2), zeros after."""
    x = np.zeros((DETECT_BOXES, 139), np.float32)
    x[0] = sum_cancel_inputs()["sample_0"]["x"][0]
    x[1:, 0] = np.array([0, 4, 0.5, -1, 2]) * 1024
    return {"sample_0": {"x": x}}


def detect_tie_inputs():
    """x = 2 everywhere (exact in fp16): logits 1, 0, 4, 0.5, 0, 4 + 1e-4."""
    return {"sample_0": {"x": np.full(6, 2.0, np.float32)}}


# --- (g) a segmenter whose two classes are near-tied per pixel --------------------------

def segment_tie_model():
    w0 = np.array([0.5, -0.25, 0.75, 0.125], np.float32)
    e = np.array([3e-4, -2e-4, 1e-4, 2e-4], np.float32)
    w = np.stack([w0, w0 + e, np.zeros(4, np.float32)]).reshape(3, 4, 1, 1)
    nodes = [h.make_node("Conv", ["x", "w", "b"], ["logits"], name="classify_pixels")]
    return graph_model(
        "segment_tie", nodes, [h.make_tensor_value_info("x", TP.FLOAT, [1, 4, 16, 16])],
        [h.make_tensor_value_info("logits", TP.FLOAT, [1, 3, 16, 16])],
        [const("w", w), const("b", [0.0, 0.0, -4.0])])


def segment_tie_inputs():
    """x in [0, 1) on a 1/64 grid (exact in fp16)."""
    rng = np.random.default_rng(600)
    x = rng.integers(0, 64, size=(1, 4, 16, 16)) / 64.0
    return {"sample_0": {"x": x.astype(np.float32)}}


# --- (g2) a shape subgraph the converter folds, larger than the placed head ---------------

def folded_chain_model():
    """lstm_gru's layout in small: a shape subgraph of x (Constant, Shape,
    Gather, Unsqueeze, Concat, Expand: 9 nodes the converter folds) feeds
    an Add whose only consumer is an Erf (litert-gpu has none: both on the
    CPU), and the head (MatMul, Add, Mul, Tanh) is litert-gpu's one
    partition."""
    rng = np.random.default_rng(700)
    w = (rng.integers(-64, 64, size=(128, 16)) / 256.0).astype(np.float32)
    b = (rng.integers(-64, 64, size=(16,)) / 64.0).astype(np.float32)

    def cnode(name, arr):
        return h.make_node("Constant", [], [name], name=name + "_const",
                           value=numpy_helper.from_array(np.asarray(arr), name))
    nodes = [
        cnode("idx0", np.array(0, np.int64)), cnode("axes0", np.array([0], np.int64)),
        cnode("width", np.array([128], np.int64)),
        cnode("half", np.array([0.5], np.float32)),
        h.make_node("Shape", ["x"], ["x_shape"], name="shape"),
        h.make_node("Gather", ["x_shape", "idx0"], ["rows"], name="rows", axis=0),
        h.make_node("Unsqueeze", ["rows", "axes0"], ["rows1"], name="rows1"),
        h.make_node("Concat", ["rows1", "width"], ["zshape"], name="zshape", axis=0),
        h.make_node("Expand", ["half", "zshape"], ["z"], name="z"),
        h.make_node("Add", ["x", "z"], ["q"], name="shift"),
        h.make_node("Erf", ["q"], ["e"], name="erf"),
        h.make_node("MatMul", ["e", "w"], ["hm"], name="head_matmul"),
        h.make_node("Add", ["hm", "b"], ["hb"], name="head_bias"),
        h.make_node("Mul", ["hb", "gain"], ["hg"], name="head_gain"),
        h.make_node("Tanh", ["hg"], ["y"], name="head_tanh"),
    ]
    return graph_model(
        "folded_chain", nodes, [h.make_tensor_value_info("x", TP.FLOAT, [4, 128])],
        [h.make_tensor_value_info("y", TP.FLOAT, [4, 16])],
        [const("w", w), const("b", b), const("gain", [0.25])])


def folded_chain_inputs():
    """x in [-2, 2) on a 1/64 grid (exact in fp16)."""
    rng = np.random.default_rng(701)
    x = rng.integers(-128, 128, size=(4, 128)) / 64.0
    return {"sample_0": {"x": x.astype(np.float32)}}


# --- (h) fp16 running sums past 65504, one reduction or convolution each ------------

def sum_cancel_model():
    nodes = [h.make_node("ReduceSum", ["x", "axes"], ["total"], name="sum", keepdims=1),
             h.make_node("Mul", ["total", "half"], ["y"], name="scale")]
    return graph_model(
        "sum_cancel", nodes, [h.make_tensor_value_info("x", TP.FLOAT, [1, 139])],
        [h.make_tensor_value_info("y", TP.FLOAT, [1, 1])],
        [numpy_helper.from_array(np.array([1], np.int64), "axes"), const("half", 0.5)])


def sum_cancel_inputs():
    x = np.concatenate([np.full(70, 1024.0), np.full(69, -1024.0)]).reshape(1, 139)
    return {"sample_0": {"x": x.astype(np.float32)}}


def prod_overflow_model():
    nodes = [h.make_node("ReduceProd", ["x"], ["prod"], name="prod", axes=[1], keepdims=1),
             h.make_node("Mul", ["prod", "half"], ["y"], name="scale")]
    return graph_model(
        "prod_overflow", nodes, [h.make_tensor_value_info("x", TP.FLOAT, [2, 8])],
        [h.make_tensor_value_info("y", TP.FLOAT, [2, 1])], [const("half", 0.5)])


def prod_overflow_inputs():
    """Row 0: 256, 256, then six of 1/256 and 4s: the product reaches 65536
    after two factors and ends at 1; row 1: factors near 1 (fine)."""
    x = np.array([[256, 256, 1 / 256, 1 / 256, 4, 0.25, 2, 0.5],
                  [1.5, 0.75, 1.25, 0.5, 2, 1, 0.875, 1.125]])
    return {"sample_0": {"x": x.astype(np.float32)}}


def conv_cancel_weights():
    w = np.empty((2, 16, 3, 3), np.float32)
    taps = np.arange(9).reshape(3, 3)
    w[0] = np.where(taps < 5, 32.0, -32.0)       # +32 on taps 0-4, -32 on taps 5-8
    w[1] = np.where(taps % 2 == 0, 0.5, -0.5)    # the control: no running sum grows
    return w


def conv_cancel_model():
    nodes = [h.make_node("Conv", ["x", "w", "b"], ["y"], name="conv", kernel_shape=[3, 3])]
    return graph_model(
        "conv_cancel", nodes, [h.make_tensor_value_info("x", TP.FLOAT, [1, 16, 3, 3])],
        [h.make_tensor_value_info("y", TP.FLOAT, [1, 2, 1, 1])],
        [const("w", conv_cancel_weights()), const("b", [1.0, -1.0])])


def conv_cancel_inputs():
    return {"sample_0": {"x": np.full((1, 16, 3, 3), 32.0, np.float32)}}


def convt_cancel_weights():
    w = np.empty((16, 2, 3, 3), np.float32)      # [in, out, kH, kW]
    taps = np.arange(9).reshape(3, 3)
    w[:, 0] = np.where(taps < 5, 32.0, -16.0)    # +32 on taps 0-4, -16 on taps 5-8
    w[:, 1] = np.where(taps % 2 == 0, 0.5, -0.5)  # the control: no running sum grows
    return w


def convt_node(x, y, name):
    return h.make_node("ConvTranspose", [x, "tw", "tb"], [y], name=name, kernel_shape=[3, 3],
                       pads=[2, 2, 2, 2])


def convt_cancel_model():
    return graph_model(
        "convt_cancel", [convt_node("x", "y", "convt")],
        [h.make_tensor_value_info("x", TP.FLOAT, [1, 16, 3, 3])],
        [h.make_tensor_value_info("y", TP.FLOAT, [1, 2, 1, 1])],
        [const("tw", convt_cancel_weights()), const("tb", [1.0, -1.0])])


def convt_cancel_inputs():
    return {"sample_0": {"x": np.full((1, 16, 3, 3), 32.0, np.float32)}}


def sums_overflow_model():
    red = [("ReduceSum", "s"), ("ReduceSumSquare", "sq"), ("ReduceL2", "l2"),
           ("ReduceLogSumExp", "lse"), ("ReduceProd", "p")]
    nodes, ins, outs = [], [], []
    for op, name in red:
        if op == "ReduceSum":
            nodes.append(h.make_node(op, [name, "axes"], [name + "_y"], name=op, keepdims=1))
        else:
            nodes.append(h.make_node(op, [name], [name + "_y"], name=op, axes=[1], keepdims=1))
        ins.append(h.make_tensor_value_info(name, TP.FLOAT, [1, None]))
        outs.append(h.make_tensor_value_info(name + "_y", TP.FLOAT, [1, 1]))
    nodes.append(h.make_node("Conv", ["cx", "w", "b"], ["conv_y"], name="Conv",
                             kernel_shape=[3, 3]))
    ins.append(h.make_tensor_value_info("cx", TP.FLOAT, [1, 16, 3, 3]))
    outs.append(h.make_tensor_value_info("conv_y", TP.FLOAT, [1, 2, 1, 1]))
    nodes.append(convt_node("tx", "convt_y", "ConvTranspose"))
    ins.append(h.make_tensor_value_info("tx", TP.FLOAT, [1, 16, 3, 3]))
    outs.append(h.make_tensor_value_info("convt_y", TP.FLOAT, [1, 2, 1, 1]))
    return graph_model("sums_overflow", nodes, ins, outs,
                       [numpy_helper.from_array(np.array([1], np.int64), "axes"),
                        const("w", conv_cancel_weights()), const("b", [1.0, -1.0]),
                        const("tw", convt_cancel_weights()), const("tb", [1.0, -1.0])])


def sums_overflow_inputs():
    """s: the sum_cancel row (partial 71680, total 1024); sq: 64 values of 30
    (squares 900, total 57600: in range, where the two modes must agree);
    l2: 64 values of 40 (sum of squares 102400 past 65504, L2 320); lse: 64
    values of 12 (every exp 162755 past 65504; the kernel subtracts the max
    first, so no sum grows: the modes agree); p: prod_overflow's row 0;
    cx: conv_cancel's input; tx: convt_cancel's."""
    x = {"s": sum_cancel_inputs()["sample_0"]["x"],
         "sq": np.full((1, 64), 30.0), "l2": np.full((1, 64), 40.0),
         "lse": np.full((1, 64), 12.0),
         "p": prod_overflow_inputs()["sample_0"]["x"][:1],
         "cx": conv_cancel_inputs()["sample_0"]["x"],
         "tx": convt_cancel_inputs()["sample_0"]["x"]}
    return {"sample_0": {k: np.asarray(v, np.float32) for k, v in x.items()}}


def dynquant_overflow_model():
    """x -> DynamicQuantizeLinear -> ConvInteger (uint8 weights 200, zero
    point 0) -> Cast to float ('acc_cast') -> Mul by x's scale times the
    weights' (0.01) -> DynamicQuantizeLinear ('y_quant') -> DequantizeLinear."""
    w = np.full((2, 1, 3, 3), 200, np.uint8)
    w[1] = 100
    nodes = [
        h.make_node("DynamicQuantizeLinear", ["x"], ["x_q", "x_scale", "x_zp"], name="x_quant"),
        h.make_node("ConvInteger", ["x_q", "w", "x_zp", "w_zp"], ["acc"], name="conv",
                    kernel_shape=[3, 3]),
        h.make_node("Cast", ["acc"], ["acc_f"], name="acc_cast", to=TP.FLOAT),
        h.make_node("Mul", ["x_scale", "w_scale"], ["scale"], name="scale_mul"),
        h.make_node("Mul", ["acc_f", "scale"], ["z"], name="rescale"),
        h.make_node("DynamicQuantizeLinear", ["z"], ["z_q", "z_scale", "z_zp"], name="y_quant"),
        h.make_node("DequantizeLinear", ["z_q", "z_scale", "z_zp"], ["y"], name="y_dequant"),
    ]
    return graph_model(
        "dynquant_overflow", nodes, [h.make_tensor_value_info("x", TP.FLOAT, [1, 1, 6, 6])],
        [h.make_tensor_value_info("y", TP.FLOAT, [1, 2, 4, 4])],
        [numpy_helper.from_array(w, "w"), numpy_helper.from_array(np.array(0, np.uint8), "w_zp"),
         const("w_scale", 0.01)])


def dynquant_overflow_inputs():
    """Values in [0, 1] on a 1/64 grid (fp16-exact), with 1 present: x's
    scale is 1/255, its zero point 0, and the quantized values reach 255."""
    rng = np.random.default_rng(700)
    x = rng.integers(0, 65, size=(1, 1, 6, 6)) / 64.0
    x[0, 0, 0, 0] = 1.0
    return {"sample_0": {"x": x.astype(np.float32)}}


def main():
    save(rmsnorm_model(), os.path.join(DATA, "rmsnorm_overflow.onnx"))
    save_sets(os.path.join(DATA, "rmsnorm_overflow_inputs"), rmsnorm_inputs())
    save(layernorm_model(), os.path.join(DATA, "layernorm_precision.onnx"))
    save_layernorm_inputs(os.path.join(DATA, "layernorm_precision_inputs"), layernorm_inputs())
    save(layernorm_model(1024, "layernorm_variance"),
         os.path.join(DATA, "layernorm_variance.onnx"))
    save_sets(os.path.join(DATA, "layernorm_variance_inputs"), layernorm_variance_inputs())
    save(global_mean_model(), os.path.join(DATA, "global_mean.onnx"))
    save_sets(os.path.join(DATA, "global_mean_inputs"), global_mean_inputs())
    save(boundary_model(), os.path.join(DATA, "boundary.onnx"))
    save(dot_model(), os.path.join(DATA, "dot_accumulate.onnx"))
    save(rmsnorm_pow_model(), os.path.join(DATA, "rmsnorm_pow.onnx"))
    save_layernorm_inputs(os.path.join(DATA, "rmsnorm_pow_inputs"), rmsnorm_pow_inputs())
    save(to_float16(layernorm_model()), os.path.join(DATA, "layernorm_precision_fp16.onnx"))
    save(to_float16(onnx.load(os.path.join(EXAMPLES, "tiny_cnn.onnx"))),
         os.path.join(DATA, "tiny_cnn_fp16.onnx"))
    save(detect_tie_model(), os.path.join(DATA, "detect_tie.onnx"))
    save_sets(os.path.join(DATA, "detect_tie_inputs"), detect_tie_inputs())
    save(detect_sum_model(), os.path.join(DATA, "detect_sum.onnx"))
    save_sets(os.path.join(DATA, "detect_sum_inputs"), detect_sum_inputs())
    save(segment_tie_model(), os.path.join(DATA, "segment_tie.onnx"))
    save_sets(os.path.join(DATA, "segment_tie_inputs"), segment_tie_inputs())
    save(folded_chain_model(), os.path.join(DATA, "folded_chain.onnx"))
    save_sets(os.path.join(DATA, "folded_chain_inputs"), folded_chain_inputs())
    for name, model, inputs in (("sum_cancel", sum_cancel_model, sum_cancel_inputs),
                                ("prod_overflow", prod_overflow_model, prod_overflow_inputs),
                                ("conv_cancel", conv_cancel_model, conv_cancel_inputs),
                                ("convt_cancel", convt_cancel_model, convt_cancel_inputs),
                                ("sums_overflow", sums_overflow_model, sums_overflow_inputs),
                                ("dynquant_overflow", dynquant_overflow_model,
                                 dynquant_overflow_inputs)):
        save(model(), os.path.join(DATA, name + ".onnx"))
        save_sets(os.path.join(DATA, name + "_inputs"), inputs())
    save(rmsnorm_model(), os.path.join(EXAMPLES, "rmsnorm_fp16.onnx"))
    save_sets(os.path.join(EXAMPLES, "rmsnorm_fp16_inputs"), rmsnorm_inputs())


if __name__ == "__main__":
    main()
