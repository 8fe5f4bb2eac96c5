#!/usr/bin/python3
"""Writes the crafted models of the rewrite catalog's tests (tests/data/rewrite/).

Compatibility rewrites: each model holds the construct a delegate refuses
between nodes it takes, so the model is partially resident on that target
before the rewrite and fully resident after it (tests/scripts/rewrite_cli.sh):

  gathernd_box.onnx       litert-gpu  GatherND whose constant indices pick a strided
                                      box (x[:, :, ::2, :]) -> Slice
  gathernd_points.onnx    litert-gpu  GatherND of 5 scattered constant (row, col)
                                      points -> Reshape + Gather + Reshape
  pixel_shuffle.onnx      litert-gpu  PixelShuffle by hand: Reshape to rank 6,
                                      Transpose, Reshape -> DepthToSpace (CRD)
  window_partition.onnx   litert-gpu  Swin window partition (rank 6) -> the same
                                      chain at rank 4
  packed_qkv.onnx         litert-gpu  packed QKV split (rank 5 Reshape, Transpose,
                                      three Gathers) -> rank 4 and Slices
  convtranspose.onnx      nnapi       2-D ConvTranspose, stride 2, pads 1,
                                      output_padding 1 -> Concat + DepthToSpace + Conv
  where_prelu.onnx        nnapi       PReLU built from Greater + Where -> Relu/Min
  where_elu.onnx          nnapi       ELU built from Greater + Where -> Relu/Min/Exp
  where_mask.onnx         nnapi       Where(mask, 0, x) with a constant bool mask (a
                                      fixed border) -> 0 * m + x * (1 - m), m constant
  where_hardswish.onnx    nnapi       HardSwish built from two Wheres (0 below -3, x above
                                      3, x (x + 3) / 6 between) on 4x -> the product with
                                      Clip(x + 3, 0, 6)
  hard_activations.onnx   nnapi       HardSigmoid (alpha 0.2) gating x, then HardSwish ->
                                      Mul/Add + Clip(0, 6) (RELU6) + Div arithmetic
  global_pool.onnx        litert-gpu  Conv, GlobalAveragePool, Flatten, Gemm (a classifier
                                      head) -> ReduceMean over H, W and a constant Reshape
  expand.onnx             litert-gpu  Expand read only by a broadcasting Add -> dropped
  reflect_pad.onnx        nnapi       reflect Pad (2 on H and W) before a Conv ->
                                      Slices + Concat
  gelu.onnx               litert-gpu  Erf-GELU x * 0.5 * (1 + erf(x / sqrt 2)) (gelu-tanh
                                      only with --opt-in)

A rewrite that would change results, and is refused:

  where_mask_inf.onnx     nnapi       Where(mask, -inf, x): the arithmetic form gives
                                      -inf * 0 = NaN where the mask is not set

A compatibility rewrite that gains only once a later one is in (kept on pass 2):

  retry_rounds.onnx       litert-gpu  Relu, GatherND (a box), Relu, Expand, 8 Sigmoid/Tanh:
                                      one partition kept; gathernd-to-gather gains
                                      nothing until expand-to-broadcast joins the rest

Cleanups (tests/unit/test_rewrite.c applies each alone with --only):

  cleanups.onnx           Identity and Dropout, a constant subgraph (Constant ->
                          Mul -> Add), two identical Relu nodes (CSE), a dead node,
                          Conv + BatchNormalization, ConvTranspose + BatchNormalization
                          and Gemm + BatchNormalization, and Shape -> Gather ->
                          Concat -> Reshape on an input with a symbolic batch dim

  conv_bias_add.onnx      ConvTranspose without a bias, an Add of a [1, C, 1, 1] constant,
                          BatchNormalization, Relu (Paddle's export of a deconv head):
                          litert-gpu refuses the BatchNormalization until the Add is
                          folded into the bias and the BatchNormalization after it

Precision (fp16 targets; inputs in <case>_inputs/<set>/x.npy):

  l2norm_overflow.onnx    x / sqrt(ReduceSumSquare(x)) over 64 values ~100: the sum of
                          squares passes 65504 although the norm (~800) fits fp16
  layernorm_overflow.onnx LayerNorm written out (ReduceMean, Sub, Mul, ReduceMean, Add,
                          Sqrt, Div) over 256 values with deviations ~60

Run with the system python that has onnx (/usr/bin/python3 tools/make_rewrite_cases.py).
The output is committed; rerun after changing this script (byte-identical on rerun).
"""
import os

import numpy as np
import onnx
from onnx import TensorProto as TP
from onnx import helper as h
from onnx import numpy_helper

HERE = os.path.dirname(os.path.abspath(__file__))
DATA = os.path.join(HERE, "..", "tests", "data", "rewrite")
OPSET = 13


def const(name, arr, dtype=np.float32):
    return numpy_helper.from_array(np.asarray(arr, dtype=dtype), name)


def model(name, nodes, inputs, outputs, inits, opset=OPSET):
    g = h.make_graph(nodes, name, inputs, outputs, inits)
    m = h.make_model(g, opset_imports=[h.make_opsetid("", opset)],
                     producer_name="convgate tools/make_rewrite_cases.py")
    m.ir_version = 7
    onnx.checker.check_model(m)
    return m


def vi(name, dims, dtype=TP.FLOAT):
    return h.make_tensor_value_info(name, dtype, dims)


def save(m, name):
    os.makedirs(DATA, exist_ok=True)
    onnx.save(m, os.path.join(DATA, name))


def save_sets(case, sets):
    for set_name, tensors in sets.items():
        d = os.path.join(DATA, case + "_inputs", set_name)
        os.makedirs(d, exist_ok=True)
        for tname, arr in tensors.items():
            np.save(os.path.join(d, tname + ".npy"), arr)


# --- compatibility ---------------------------------------------------------------------

def gathernd_box():
    idx = np.zeros((1, 4, 4, 3), np.int64)
    for c in range(4):
        for i in range(4):
            idx[0, c, i] = [0, c, 2 * i]
    nodes = [h.make_node("GatherND", ["x", "idx"], ["g"], name="gathernd"),
             h.make_node("Relu", ["g"], ["y"], name="relu")]
    return model("gathernd_box", nodes, [vi("x", [1, 4, 8, 8])], [vi("y", [1, 4, 4, 8])],
                 [const("idx", idx, np.int64)])


def gathernd_points():
    idx = np.array([[0, 3], [0, 0], [0, 15], [0, 7], [0, 3]], np.int64)
    nodes = [h.make_node("Relu", ["x"], ["r"], name="relu_in"),
             h.make_node("GatherND", ["r", "idx"], ["g"], name="gathernd"),
             h.make_node("Sigmoid", ["g"], ["y"], name="sigmoid")]
    return model("gathernd_points", nodes, [vi("x", [1, 16, 8])], [vi("y", [5, 8])],
                 [const("idx", idx, np.int64)])


def pixel_shuffle():
    r = 2
    nodes = [h.make_node("Relu", ["x"], ["a"], name="relu_in"),
             h.make_node("Reshape", ["a", "s6"], ["a6"], name="ps_reshape6"),
             h.make_node("Transpose", ["a6"], ["t6"], name="ps_transpose", perm=[0, 1, 4, 2, 5, 3]),
             h.make_node("Reshape", ["t6", "s4"], ["b"], name="ps_reshape4"),
             h.make_node("Sigmoid", ["b"], ["y"], name="sigmoid")]
    return model("pixel_shuffle", nodes, [vi("x", [1, 16, 8, 8])], [vi("y", [1, 4, 16, 16])],
                 [const("s6", [1, 4, r, r, 8, 8], np.int64),
                  const("s4", [1, 4, 16, 16], np.int64)])


def window_partition():
    nodes = [h.make_node("Relu", ["x"], ["a"], name="relu_in"),
             h.make_node("Reshape", ["a", "s6"], ["a6"], name="win_reshape6"),
             h.make_node("Transpose", ["a6"], ["t6"], name="win_transpose", perm=[0, 1, 3, 2, 4, 5]),
             h.make_node("Reshape", ["t6", "s4"], ["b"], name="win_reshape4"),
             h.make_node("Sigmoid", ["b"], ["y"], name="sigmoid")]
    return model("window_partition", nodes, [vi("x", [1, 8, 8, 4])], [vi("y", [4, 4, 4, 4])],
                 [const("s6", [1, 2, 4, 2, 4, 4], np.int64),
                  const("s4", [4, 4, 4, 4], np.int64)])


def packed_qkv():
    heads, dim, n = 2, 8, 6
    nodes = [h.make_node("Relu", ["x"], ["a"], name="relu_in"),
             h.make_node("Reshape", ["a", "s5"], ["a5"], name="qkv_reshape5"),
             h.make_node("Transpose", ["a5"], ["t5"], name="qkv_transpose", perm=[2, 0, 3, 1, 4]),
             h.make_node("Gather", ["t5", "i0"], ["q"], name="take_q", axis=0),
             h.make_node("Gather", ["t5", "i1"], ["k"], name="take_k", axis=0),
             h.make_node("Gather", ["t5", "i2"], ["v"], name="take_v", axis=0),
             h.make_node("Add", ["q", "k"], ["qk"], name="add_qk"),
             h.make_node("Add", ["qk", "v"], ["y"], name="add_v")]
    return model("packed_qkv", nodes, [vi("x", [1, n, 3 * heads * dim])],
                 [vi("y", [1, heads, n, dim])],
                 [const("s5", [1, n, 3, heads, dim], np.int64), const("i0", 0, np.int64),
                  const("i1", 1, np.int64), const("i2", 2, np.int64)])


def convtranspose():
    rng = np.random.default_rng(41)
    w = (rng.standard_normal((4, 3, 3, 3)) * 0.3).astype(np.float32)
    b = (rng.standard_normal(3) * 0.1).astype(np.float32)
    nodes = [h.make_node("Relu", ["x"], ["a"], name="relu_in"),
             h.make_node("ConvTranspose", ["a", "w", "b"], ["c"], name="deconv", strides=[2, 2],
                         pads=[1, 1, 1, 1], output_padding=[1, 1], kernel_shape=[3, 3]),
             h.make_node("Relu", ["c"], ["y"], name="relu_out")]
    return model("convtranspose", nodes, [vi("x", [1, 4, 8, 8])], [vi("y", [1, 3, 16, 16])],
                 [const("w", w), const("b", b)])


def where_prelu():
    slope = np.array([0.25, 0.1, 0.5, 0.125], np.float32).reshape(1, 4, 1, 1)
    nodes = [h.make_node("Greater", ["x", "zero"], ["pos"], name="is_pos"),
             h.make_node("Mul", ["x", "slope"], ["neg"], name="leak"),
             h.make_node("Where", ["pos", "x", "neg"], ["p"], name="prelu_where"),
             h.make_node("Add", ["p", "bias"], ["y"], name="bias_add")]
    return model("where_prelu", nodes, [vi("x", [1, 4, 8, 8])], [vi("y", [1, 4, 8, 8])],
                 [const("zero", 0.0), const("slope", slope), const("bias", 0.5)])


def where_elu():
    nodes = [h.make_node("Greater", ["x", "zero"], ["pos"], name="is_pos"),
             h.make_node("Exp", ["x"], ["e"], name="exp"),
             h.make_node("Sub", ["e", "one"], ["em1"], name="expm1"),
             h.make_node("Mul", ["alpha", "em1"], ["neg"], name="scale_neg"),
             h.make_node("Where", ["pos", "x", "neg"], ["p"], name="elu_where"),
             h.make_node("Add", ["p", "bias"], ["y"], name="bias_add")]
    return model("where_elu", nodes, [vi("x", [1, 4, 8, 8])], [vi("y", [1, 4, 8, 8])],
                 [const("zero", 0.0), const("one", 1.0), const("alpha", 1.5),
                  const("bias", 0.5)])


def where_mask(fill, name):
    mask = np.zeros((1, 1, 8, 8), bool)
    mask[..., 6:, :] = True  # a fixed border: rows 6 and 7 are masked
    nodes = [h.make_node("Relu", ["x"], ["a"], name="relu_in"),
             h.make_node("Where", ["mask", "fill", "a"], ["m"], name="mask_where"),
             h.make_node("Add", ["m", "bias"], ["y"], name="bias_add")]
    return model(name, nodes, [vi("x", [1, 4, 8, 8])], [vi("y", [1, 4, 8, 8])],
                 [const("mask", mask, bool), const("fill", fill), const("bias", 0.5)])


def expand():
    nodes = [h.make_node("Relu", ["x"], ["a"], name="relu_in"),
             h.make_node("Expand", ["a", "shape"], ["e"], name="expand"),
             h.make_node("Add", ["e", "z"], ["y"], name="add")]
    return model("expand", nodes, [vi("x", [1, 4, 1, 8]), vi("z", [1, 4, 6, 8])],
                 [vi("y", [1, 4, 6, 8])], [const("shape", [1, 4, 6, 8], np.int64)])


def reflect_pad():
    rng = np.random.default_rng(43)
    w = (rng.standard_normal((4, 3, 3, 3)) * 0.3).astype(np.float32)
    nodes = [h.make_node("Relu", ["x"], ["a"], name="relu_in"),
             h.make_node("Pad", ["a", "pads"], ["p"], name="reflect_pad", mode="reflect"),
             h.make_node("Conv", ["p", "w"], ["y"], name="conv", kernel_shape=[3, 3])]
    return model("reflect_pad", nodes, [vi("x", [1, 3, 8, 8])], [vi("y", [1, 4, 10, 10])],
                 [const("pads", [0, 0, 2, 2, 0, 0, 2, 2], np.int64), const("w", w)])


def gelu():
    nodes = [h.make_node("Relu", ["x"], ["a"], name="relu_in"),
             h.make_node("Sub", ["a", "half"], ["x0"], name="center"),
             h.make_node("Div", ["x0", "sqrt2"], ["z"], name="gelu_div"),
             h.make_node("Erf", ["z"], ["e"], name="gelu_erf"),
             h.make_node("Add", ["e", "one"], ["e1"], name="gelu_add"),
             h.make_node("Mul", ["x0", "e1"], ["m"], name="gelu_mul"),
             h.make_node("Mul", ["m", "half"], ["y"], name="gelu_half")]
    return model("gelu", nodes, [vi("x", [1, 8, 16])], [vi("y", [1, 8, 16])],
                 [const("half", 0.5), const("sqrt2", 1.4142135381698608), const("one", 1.0)])


# --- cleanups ----------------------------------------------------------------------------

def cleanups():
    rng = np.random.default_rng(47)
    wc = (rng.standard_normal((8, 3, 3, 3)) * 0.3).astype(np.float32)
    wt = (rng.standard_normal((8, 4, 2, 2)) * 0.3).astype(np.float32)
    wg = (rng.standard_normal((16, 6)) * 0.3).astype(np.float32)

    def bn(prefix, c):
        return [const(prefix + "_scale", rng.uniform(0.8, 1.2, c)),
                const(prefix + "_bias", rng.uniform(-0.1, 0.1, c)),
                const(prefix + "_mean", rng.uniform(-0.2, 0.2, c)),
                const(prefix + "_var", rng.uniform(0.5, 1.5, c))]

    nodes = [
        h.make_node("Identity", ["x"], ["xi"], name="identity"),
        h.make_node("Constant", [], ["k"], name="k_const",
                    value=numpy_helper.from_array(np.array(2.0, np.float32))),
        h.make_node("Mul", ["k", "k"], ["k2"], name="k_square"),
        h.make_node("Add", ["k2", "one"], ["k5"], name="k_plus_one"),
        h.make_node("Conv", ["xi", "wc"], ["c1"], name="conv", pads=[1, 1, 1, 1]),
        h.make_node("BatchNormalization", ["c1", "bn1_scale", "bn1_bias", "bn1_mean", "bn1_var"],
                    ["b1"], name="bn_conv"),
        h.make_node("Relu", ["b1"], ["r1"], name="relu_a"),
        h.make_node("Relu", ["b1"], ["r2"], name="relu_b"),
        h.make_node("Add", ["r1", "r2"], ["s"], name="sum"),
        h.make_node("Dropout", ["s"], ["d"], name="dropout"),
        h.make_node("Mul", ["d", "k5"], ["dk"], name="times_k5"),
        h.make_node("Sigmoid", ["dk"], ["unused"], name="dead_sigmoid"),
        h.make_node("ConvTranspose", ["dk", "wt"], ["t"], name="deconv", strides=[2, 2]),
        h.make_node("BatchNormalization", ["t", "bn2_scale", "bn2_bias", "bn2_mean", "bn2_var"],
                    ["b2"], name="bn_deconv"),
        h.make_node("Shape", ["b2"], ["shp"], name="shape"),
        h.make_node("Gather", ["shp", "zero_i"], ["batch"], name="take_batch", axis=0),
        h.make_node("Unsqueeze", ["batch", "axes0"], ["batch1"], name="unsqueeze_batch"),
        h.make_node("Concat", ["batch1", "minus1"], ["flat_shape"], name="concat_shape", axis=0),
        h.make_node("Reshape", ["b2", "flat_shape"], ["f"], name="flatten"),
        h.make_node("Slice", ["f", "s0", "s16", "ax1"], ["f16"], name="first16"),
        h.make_node("Gemm", ["f16", "wg", "gb"], ["gm"], name="gemm"),
        h.make_node("BatchNormalization", ["gm", "bn3_scale", "bn3_bias", "bn3_mean", "bn3_var"],
                    ["y"], name="bn_gemm"),
    ]
    inits = [const("one", 1.0), const("wc", wc), const("wt", wt), const("wg", wg),
             const("gb", rng.uniform(-0.1, 0.1, 6)), const("zero_i", 0, np.int64),
             const("axes0", [0], np.int64), const("minus1", [-1], np.int64),
             const("s0", [0], np.int64), const("s16", [16], np.int64),
             const("ax1", [1], np.int64)]
    inits += bn("bn1", 8) + bn("bn2", 4) + bn("bn3", 6)
    return model("cleanups", nodes, [vi("x", ["batch", 3, 4, 4])], [vi("y", ["batch", 6])],
                 inits)


# --- precision -------------------------------------------------------------------------------

def l2norm():
    nodes = [h.make_node("ReduceSumSquare", ["x"], ["ss"], name="sum_sq", axes=[-1], keepdims=1),
             h.make_node("Sqrt", ["ss"], ["norm"], name="norm"),
             h.make_node("Div", ["x", "norm"], ["y"], name="normalize")]
    return model("l2norm_overflow", nodes, [vi("x", [1, 4, 64])], [vi("y", [1, 4, 64])], [])


def l2norm_inputs():
    sets = {}
    for s in range(2):
        rng = np.random.default_rng(500 + s)
        x = rng.integers(16, 32, size=(1, 4, 64)) * 4.0 * rng.choice([-1.0, 1.0], (1, 4, 64))
        sets["sample_%d" % s] = {"x": x.astype(np.float32)}
    return sets


def layernorm():
    d = 256
    rng = np.random.default_rng(13)
    gamma = (rng.integers(12, 20, size=d) / 16.0).astype(np.float32)
    nodes = [
        h.make_node("ReduceMean", ["x"], ["mean"], name="mean", axes=[-1], keepdims=1),
        h.make_node("Sub", ["x", "mean"], ["centered"], name="center"),
        h.make_node("Mul", ["centered", "centered"], ["centered_sq"], name="square"),
        h.make_node("ReduceMean", ["centered_sq"], ["var"], name="variance", axes=[-1],
                    keepdims=1),
        h.make_node("Add", ["var", "eps"], ["var_eps"], name="add_eps"),
        h.make_node("Sqrt", ["var_eps"], ["std"], name="std"),
        h.make_node("Div", ["centered", "std"], ["x_norm"], name="normalize"),
        h.make_node("Mul", ["x_norm", "gamma"], ["y"], name="scale"),
    ]
    return model("layernorm_overflow", nodes, [vi("x", [1, 4, d])], [vi("y", [1, 4, d])],
                 [const("eps", 1e-5), const("gamma", gamma)])


def where_hardswish():
    # the input scaled by 4 so that random samples in [-1, 1) reach both outer branches
    nodes = [h.make_node("Mul", ["x", "four"], ["a"], name="scale"),
             h.make_node("LessOrEqual", ["a", "minus_three"], ["low"], name="is_low"),
             h.make_node("GreaterOrEqual", ["a", "three"], ["high"], name="is_high"),
             h.make_node("Add", ["a", "three"], ["a3"], name="shift"),
             h.make_node("Mul", ["a", "a3"], ["prod"], name="prod"),
             h.make_node("Div", ["prod", "six"], ["mid"], name="sixth"),
             h.make_node("Where", ["high", "a", "mid"], ["upper"], name="hswish_high"),
             h.make_node("Where", ["low", "zero", "upper"], ["hs"], name="hswish_low"),
             h.make_node("Add", ["hs", "bias"], ["y"], name="bias_add")]
    return model("where_hardswish", nodes, [vi("x", [1, 4, 8, 8])], [vi("y", [1, 4, 8, 8])],
                 [const("four", 4.0), const("three", 3.0), const("minus_three", -3.0),
                  const("six", 6.0), const("zero", 0.0), const("bias", 0.5)])


def hard_activations():
    nodes = [h.make_node("Mul", ["x", "four"], ["a"], name="scale"),
             h.make_node("HardSigmoid", ["a"], ["g"], name="gate", alpha=0.2, beta=0.5),
             h.make_node("Mul", ["a", "g"], ["ag"], name="gated"),
             h.make_node("HardSwish", ["ag"], ["hs"], name="hswish"),
             h.make_node("Add", ["hs", "bias"], ["y"], name="bias_add")]
    return model("hard_activations", nodes, [vi("x", [1, 4, 8, 8])], [vi("y", [1, 4, 8, 8])],
                 [const("four", 4.0), const("bias", 0.5)], opset=14)


def global_pool():
    rng = np.random.default_rng(43)
    w = (rng.standard_normal((8, 4, 3, 3)) * 0.3).astype(np.float32)
    fc = (rng.standard_normal((5, 8)) * 0.3).astype(np.float32)
    fb = (rng.standard_normal(5) * 0.1).astype(np.float32)
    nodes = [h.make_node("Conv", ["x", "w"], ["c"], name="conv", pads=[1, 1, 1, 1]),
             h.make_node("Relu", ["c"], ["r"], name="relu"),
             h.make_node("GlobalAveragePool", ["r"], ["p"], name="gap"),
             h.make_node("Flatten", ["p"], ["f"], name="flatten", axis=1),
             h.make_node("Gemm", ["f", "fc", "fb"], ["y"], name="fc", transB=1)]
    return model("global_pool", nodes, [vi("x", [1, 4, 8, 8])], [vi("y", [1, 5])],
                 [const("w", w), const("fc", fc), const("fb", fb)])


def conv_bias_add():
    rng = np.random.default_rng(53)
    w = (rng.standard_normal((4, 6, 2, 2)) * 0.3).astype(np.float32)
    b = (rng.standard_normal((1, 6, 1, 1)) * 0.1).astype(np.float32)
    nodes = [h.make_node("Relu", ["x"], ["a"], name="relu_in"),
             h.make_node("ConvTranspose", ["a", "w"], ["t"], name="deconv", strides=[2, 2]),
             h.make_node("Add", ["t", "b"], ["tb"], name="deconv_bias"),
             h.make_node("BatchNormalization", ["tb", "bn_scale", "bn_bias", "bn_mean", "bn_var"],
                         ["n"], name="bn"),
             h.make_node("Relu", ["n"], ["y"], name="relu_out")]
    return model("conv_bias_add", nodes, [vi("x", [1, 4, 8, 8])], [vi("y", [1, 6, 16, 16])],
                 [const("w", w), const("b", b),
                  const("bn_scale", rng.uniform(0.8, 1.2, 6)),
                  const("bn_bias", rng.uniform(-0.1, 0.1, 6)),
                  const("bn_mean", rng.uniform(-0.2, 0.2, 6)),
                  const("bn_var", rng.uniform(0.5, 1.5, 6))])


def retry_rounds():
    # litert-gpu keeps one partition: a GatherND and an Expand (both refused)
    # cut the chain into Relu | Relu | 8 ops; the GatherND's Slice alone only
    # grows the small piece, so gathernd-to-gather gains nothing until
    # expand-to-broadcast, later in the catalog, joins the rest
    idx = np.zeros((1, 4, 4, 3), np.int64)
    for c in range(4):
        for i in range(4):
            idx[0, c, i] = [0, c, 2 * i]
    nodes = [h.make_node("Relu", ["x"], ["a"], name="relu_in"),
             h.make_node("GatherND", ["a", "idx"], ["g"], name="gathernd"),
             h.make_node("Relu", ["g"], ["b"], name="relu_mid"),
             h.make_node("Expand", ["b", "shape"], ["e"], name="expand")]
    prev = "e"
    for k in range(8):
        op = "Sigmoid" if k % 2 == 0 else "Tanh"
        nodes.append(h.make_node(op, [prev], ["t%d" % k], name="tail%d" % k))
        prev = "t%d" % k
    nodes.append(h.make_node("Neg", [prev], ["y"], name="out"))
    return model("retry_rounds", nodes, [vi("x", [1, 4, 8, 8])], [vi("y", [1, 4, 4, 8])],
                 [const("idx", idx, np.int64), const("shape", [1, 4, 4, 8], np.int64)])


def layernorm_inputs():
    sets = {}
    for s in range(2):
        rng = np.random.default_rng(600 + s)
        x = rng.integers(-16, 17, size=(1, 4, 256)) * 4.0
        sets["sample_%d" % s] = {"x": x.astype(np.float32)}
    return sets


def main():
    save(gathernd_box(), "gathernd_box.onnx")
    save(gathernd_points(), "gathernd_points.onnx")
    save(pixel_shuffle(), "pixel_shuffle.onnx")
    save(window_partition(), "window_partition.onnx")
    save(packed_qkv(), "packed_qkv.onnx")
    save(convtranspose(), "convtranspose.onnx")
    save(where_prelu(), "where_prelu.onnx")
    save(where_elu(), "where_elu.onnx")
    save(where_mask(0.0, "where_mask"), "where_mask.onnx")
    save(where_mask(-np.inf, "where_mask_inf"), "where_mask_inf.onnx")
    save(where_hardswish(), "where_hardswish.onnx")
    save(hard_activations(), "hard_activations.onnx")
    save(global_pool(), "global_pool.onnx")
    save(expand(), "expand.onnx")
    save(reflect_pad(), "reflect_pad.onnx")
    save(gelu(), "gelu.onnx")
    save(cleanups(), "cleanups.onnx")
    save(conv_bias_add(), "conv_bias_add.onnx")
    save(retry_rounds(), "retry_rounds.onnx")
    save(l2norm(), "l2norm_overflow.onnx")
    save_sets("l2norm_overflow", l2norm_inputs())
    save(layernorm(), "layernorm_overflow.onnx")
    save_sets("layernorm_overflow", layernorm_inputs())


if __name__ == "__main__":
    main()
