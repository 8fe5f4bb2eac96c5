#!/usr/bin/python3
"""Measures how the real LiteRT GPU delegate (ML Drift, LiteRT.js's WebGPU
path in headless Chromium, precision 'fp16') accumulates the dot products of
FULLY_CONNECTED and the sums of MEAN, against convgate's two fp16 emulations
(docs/gate3.md "litert-gpu's accumulation"):

  fp16 storage, fp32 accumulation: operands and results rounded to fp16,
                                   products summed in fp32
  fp16 storage, fp16 accumulation: the running sum rounded to fp16 after
                                   every product (what convgate emulated
                                   before this measurement)

Cases (each a .tflite written here with tools/tflite_writer.py):
  fc_cancel     FULLY_CONNECTED [1,160] x [2,160]^T: row 0 of the weights
                gives products +1024 (80 times) then -1024 (80 times), i.e.
                exactly 0 in fp32 and inf (or a large error) with an fp16
                running sum; row 1 the same with the signs interleaved, so no
                order overflows (the control)
  mean_global   MEAN over H, W of a [1,32,32,3] map of values 96..124: the
                sum passes 65504 after ~600 elements
  rmsnorm       x / sqrt(mean(x*x) + eps) over the last axis of [1,4,64],
                rows 2-3 of |x| 64..124 (sum of squares > 65504)
  layernorm_var a LayerNorm over the last axis of [1,4,1024] (MEAN, SUB, MUL,
                MEAN, ADD, SQRT, DIV, MUL, ADD), rows 2-3 with deviations
                ~10 (tests/data/fp16/layernorm_variance's input, sample_0):
                the variance MEAN's sum of squared deviations (~1e5)
                passes 65504
  conv_cancel   CONV_2D 3x3 VALID of a [1,3,3,16] map of 32s, weights +32 on
                taps 0-4 and -32 on taps 5-8 (tests/data/fp16/conv_cancel,
                NHWC): summed taps outer, channels inner (TFLite GPU's
                ConvGeneric) the running sum passes 65504 after tap 4, the
                answer is 16384 (+ bias 1); channel 1 is a control
  resnet18_head the classifier of zoo resnet18: MEAN over the 7x7 map of
                the network's last activation on a real input, then
                FULLY_CONNECTED 512 -> 1000 with its weights (needs
                --activation NPY, the [1,512,7,7] input of GlobalAveragePool,
                and --zoo)

Run:  /usr/bin/python3 tools/measure_litert_fp16.py [--zoo DIR --activation NPY] OUTDIR
It prints, per case and output, the max |error| against the float64
reference of the WebGPU delegate at fp16 and at fp32 and of the two
emulations, and the delegate's distance from each emulation; OUTDIR gets
each case's CASE.tflite, its input CASE_in0.npy, the delegate's fp16 output
CASE_webgpu_fp16.npy and report.json (tests/scripts/litert_fp16.sh runs
convgate's litert-gpu emulation on them). Needs node, tools/litert/
node_modules (scripts/setup.sh) and chromium.

Measured 2026-12 (LiteRT.js 2.5.3, Chromium 156 on SwiftShader, resnet18's
activation from bench/parity.sh's input, seed 1), max |error| against float64:
                 delegate fp16   emul. acc fp32   emul. acc fp16   delegate - acc32
  fc_cancel      0               0                inf              0
  mean_global    0.0195          0.0195           inf              0
  rmsnorm        6.9e-4          6.9e-4           1.26             0
  resnet18_head  2.5e-3          2.5e-3           0.037            9.5e-7
  layernorm_var  2.2e-3          3.7e-3           3.52             3.9e-3 (one fp16
                                                                    spacing at 4)
The delegate at fp16 stores in fp16 and accumulates in fp32.
"""
import argparse
import json
import os
import subprocess
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from tflite_writer import Model  # noqa: E402

F = "FLOAT32"
NONE = {"fused_activation_function": 0}


def h(a):
    """a rounded to fp16 (storage), back in float64."""
    return np.asarray(a, np.float64).astype(np.float16).astype(np.float64)


def dot_acc16(x, w):
    """x[k] . w[n, k] with the running sum rounded to fp16 after each product."""
    out = np.zeros(w.shape[0])
    for n in range(w.shape[0]):
        s = np.float16(0)
        for k in range(w.shape[1]):
            s = np.float16(s + np.float16(x[k] * w[n, k]))
        out[n] = float(s)
    return out


def mean_acc16(x, axis):
    """mean along axis with an fp16 running sum."""
    x = np.moveaxis(np.asarray(x, np.float64), axis, -1)
    flat = x.reshape(-1, x.shape[-1])
    out = np.empty(flat.shape[0])
    for i, row in enumerate(flat):
        s = np.float16(0)
        for v in row:
            s = np.float16(s + np.float16(v))
        out[i] = float(np.float16(float(s) / row.size))
    return out.reshape(x.shape[:-1])


# ---- cases: (model bytes, inputs, float64 reference, acc32 emul, acc16 emul) ----------

def fc_model(w, b):
    m = Model()
    g = m.subgraph("main")
    x = g.tensor("x", [1, w.shape[1]], F)
    wt = g.tensor("w", list(w.shape), F, data=w.astype(np.float32))
    bt = g.tensor("b", [w.shape[0]], F, data=b.astype(np.float32))
    y = g.tensor("y", [1, w.shape[0]], F)
    g.op("FULLY_CONNECTED", [x, wt, bt], [y], options=("FullyConnectedOptions", NONE))
    g.inputs, g.outputs = [x], [y]
    m.signature("serving_default")
    return m.serialize()


def case_fc_cancel():
    k = 160
    x = np.full((1, k), 32.0, np.float32)
    w = np.empty((2, k), np.float32)
    w[0, :80], w[0, 80:] = 32.0, -32.0
    w[1] = np.where(np.arange(k) % 2 == 0, 32.0, -32.0)
    b = np.zeros(2, np.float32)
    ref = x.astype(np.float64) @ w.T.astype(np.float64)
    acc32 = h(h(x) @ h(w).T)
    acc16 = h(dot_acc16(h(x)[0], h(w)))[None]
    return fc_model(w, b), [x], ref, acc32, acc16


def mean_model(shape, axes):
    m = Model()
    g = m.subgraph("main")
    x = g.tensor("x", list(shape), F)
    ax = g.tensor("axes", [len(axes)], "INT32", data=np.int32(axes))
    out_shape = [d for i, d in enumerate(shape) if i not in axes]
    y = g.tensor("y", out_shape, F)
    g.op("MEAN", [x, ax], [y], options=("ReducerOptions", {"keep_dims": False}))
    g.inputs, g.outputs = [x], [y]
    m.signature("serving_default")
    return m.serialize()


def case_mean_global():
    rng = np.random.default_rng(3)
    x = (rng.integers(24, 32, size=(1, 32, 32, 3)) * 4.0).astype(np.float32)
    ref = x.astype(np.float64).mean(axis=(1, 2))
    acc32 = h(h(x).mean(axis=(1, 2)))
    flat = h(x).reshape(1, 32 * 32, 3)
    acc16 = mean_acc16(flat, 1)
    return mean_model(x.shape, [1, 2]), [x], ref, acc32, acc16


def case_rmsnorm():
    d = 64
    m = Model()
    g = m.subgraph("main")
    x = g.tensor("x", [1, 4, d], F)
    sq = g.tensor("x_sq", [1, 4, d], F)
    ax = g.tensor("axes", [1], "INT32", data=np.int32([2]))
    ms = g.tensor("mean_sq", [1, 4, 1], F)
    eps = g.tensor("eps", [1], F, data=np.float32([1e-5]))
    mse = g.tensor("mean_sq_eps", [1, 4, 1], F)
    rms = g.tensor("rms", [1, 4, 1], F)
    y = g.tensor("y", [1, 4, d], F)
    g.op("MUL", [x, x], [sq], options=("MulOptions", NONE))
    g.op("MEAN", [sq, ax], [ms], options=("ReducerOptions", {"keep_dims": True}))
    g.op("ADD", [ms, eps], [mse], options=("AddOptions", NONE))
    g.op("SQRT", [mse], [rms])
    g.op("DIV", [x, rms], [y], options=("DivOptions", NONE))
    g.inputs, g.outputs = [x], [y]
    m.signature("serving_default")
    rng = np.random.default_rng(100)
    xv = np.empty((1, 4, d), np.float32)
    xv[0, :2] = rng.integers(-32, 33, size=(2, d)) / 32.0
    xv[0, 2:] = rng.integers(16, 32, size=(2, d)) * 4.0 * rng.choice([-1.0, 1.0], (2, d))
    x64 = xv.astype(np.float64)
    ref = x64 / np.sqrt((x64 * x64).mean(axis=-1, keepdims=True) + 1e-5)
    sq16 = h(x64 * x64)
    acc32 = h(x64 / h(np.sqrt(h(h(sq16.mean(axis=-1, keepdims=True)) + h(1e-5)))))
    with np.errstate(over="ignore", divide="ignore", invalid="ignore"):
        m16 = mean_acc16(sq16, 2)[..., None]
        acc16 = h(x64 / h(np.sqrt(h(m16 + h(1e-5)))))
    return m.serialize(), [xv], ref, acc32, acc16


def case_layernorm_var(src):
    d = 1024
    x_in = np.load(os.path.join(src, "tests", "data", "fp16", "layernorm_variance_inputs",
                                "sample_0", "x.npy")).astype(np.float32)
    rng = np.random.default_rng(11)  # tools/make_fp16_cases.py's layernorm_model
    gamma = (rng.integers(12, 20, size=d) / 16.0).astype(np.float32)
    beta = (rng.integers(-8, 9, size=d) / 16.0).astype(np.float32)
    m = Model()
    g = m.subgraph("main")
    shape, row = [1, 4, d], [1, 4, 1]
    x = g.tensor("x", shape, F)
    ax = g.tensor("axes", [1], "INT32", data=np.int32([2]))
    mean = g.tensor("mean", row, F)
    cen = g.tensor("centered", shape, F)
    sq = g.tensor("centered_sq", shape, F)
    var = g.tensor("var", row, F)
    eps = g.tensor("eps", [1], F, data=np.float32([1e-5]))
    ve = g.tensor("var_eps", row, F)
    std = g.tensor("std", row, F)
    xn = g.tensor("x_norm", shape, F)
    gt = g.tensor("gamma", [d], F, data=gamma)
    bt = g.tensor("beta", [d], F, data=beta)
    sc = g.tensor("scaled", shape, F)
    y = g.tensor("y", shape, F)
    mean_opts = ("ReducerOptions", {"keep_dims": True})
    g.op("MEAN", [x, ax], [mean], options=mean_opts)
    g.op("SUB", [x, mean], [cen], options=("SubOptions", NONE))
    g.op("MUL", [cen, cen], [sq], options=("MulOptions", NONE))
    g.op("MEAN", [sq, ax], [var], options=mean_opts)
    g.op("ADD", [var, eps], [ve], options=("AddOptions", NONE))
    g.op("SQRT", [ve], [std])
    g.op("DIV", [cen, std], [xn], options=("DivOptions", NONE))
    g.op("MUL", [xn, gt], [sc], options=("MulOptions", NONE))
    g.op("ADD", [sc, bt], [y], options=("AddOptions", NONE))
    g.inputs, g.outputs = [x], [y]
    m.signature("serving_default")
    x64, g64, b64 = x_in.astype(np.float64), gamma.astype(np.float64), beta.astype(np.float64)
    c64 = x64 - x64.mean(axis=-1, keepdims=True)
    ref = c64 / np.sqrt((c64 * c64).mean(axis=-1, keepdims=True) + 1e-5) * g64 + b64

    def tail(c, v):
        return h(h(h(c / h(np.sqrt(h(v + h(1e-5))))) * h(g64)) + h(b64))
    c32 = h(x64 - h(x64.mean(axis=-1, keepdims=True)))
    acc32 = tail(c32, h(h(c32 * c32).mean(axis=-1, keepdims=True)))
    with np.errstate(over="ignore", divide="ignore", invalid="ignore"):
        c16 = h(x64 - mean_acc16(x64, 2)[..., None])
        acc16 = tail(c16, mean_acc16(h(c16 * c16), 2)[..., None])
    return m.serialize(), [x_in], ref, acc32, acc16


def case_conv_cancel():
    taps = np.arange(9).reshape(3, 3)
    w = np.empty((2, 3, 3, 16), np.float32)  # OHWI
    w[0] = np.where(taps < 5, 32.0, -32.0)[..., None]
    w[1] = np.where(taps % 2 == 0, 0.5, -0.5)[..., None]
    b = np.array([1.0, -1.0], np.float32)
    x = np.full((1, 3, 3, 16), 32.0, np.float32)
    m = Model()
    g = m.subgraph("main")
    xt = g.tensor("x", list(x.shape), F)
    wt = g.tensor("w", list(w.shape), F, data=w)
    bt = g.tensor("b", [2], F, data=b)
    y = g.tensor("y", [1, 1, 1, 2], F)
    g.op("CONV_2D", [xt, wt, bt], [y],
         options=("Conv2DOptions", {"padding": 1, "stride_w": 1, "stride_h": 1,
                                    "fused_activation_function": 0}))
    g.inputs, g.outputs = [xt], [y]
    m.signature("serving_default")
    x64, w64 = x.astype(np.float64), w.astype(np.float64)
    ref = (np.einsum("hwc,ohwc->o", x64[0], w64) + b)[None, None, None]
    acc32 = h(h(np.einsum("hwc,ohwc->o", h(x64)[0], h(w64))) + h(b))[None, None, None]
    acc16 = np.empty(2)
    with np.errstate(over="ignore", invalid="ignore"):
        for o in range(2):
            s = np.float16(0)
            for ky in range(3):
                for kx in range(3):
                    for c in range(16):
                        s = np.float16(s + np.float16(w64[o, ky, kx, c] * x64[0, ky, kx, c]))
            acc16[o] = float(np.float16(float(s) + b[o]))
    return m.serialize(), [x], ref, acc32, acc16[None, None, None]


def case_resnet18_head(zoo, activation):
    import onnx
    from onnx import numpy_helper
    model = onnx.load(os.path.join(zoo, "resnet18.onnx"))
    inits = {i.name: numpy_helper.to_array(i) for i in model.graph.initializer}
    w, b = inits["fc.weight"].astype(np.float32), inits["fc.bias"].astype(np.float32)
    a = np.load(activation).astype(np.float32)            # [1, 512, 7, 7]
    x = np.ascontiguousarray(a.transpose(0, 2, 3, 1))      # NHWC, as the converter feeds it
    m = Model()
    g = m.subgraph("main")
    xt = g.tensor("x", list(x.shape), F)
    ax = g.tensor("axes", [2], "INT32", data=np.int32([1, 2]))
    pooled = g.tensor("pooled", [1, 512], F)
    wt = g.tensor("fc.weight", list(w.shape), F, data=w)
    bt = g.tensor("fc.bias", [w.shape[0]], F, data=b)
    y = g.tensor("logits", [1, w.shape[0]], F)
    g.op("MEAN", [xt, ax], [pooled], options=("ReducerOptions", {"keep_dims": False}))
    g.op("FULLY_CONNECTED", [pooled, wt, bt], [y], options=("FullyConnectedOptions", NONE))
    g.inputs, g.outputs = [xt], [y]
    m.signature("serving_default")
    x64, w64, b64 = x.astype(np.float64), w.astype(np.float64), b.astype(np.float64)
    ref = x64.mean(axis=(1, 2)) @ w64.T + b64
    p32 = h(h(x64).mean(axis=(1, 2)))
    acc32 = h(p32 @ h(w64).T + h(b64))
    p16 = mean_acc16(h(x64).reshape(1, 49, 512), 1)
    acc16 = h(dot_acc16(p16[0], h(w64)) + h(b64))[None]
    return m.serialize(), [x], ref, acc32, acc16


def run_webgpu(jobs_path, precision, out_path):
    r = subprocess.run(["node", os.path.join(HERE, "litert", "run_webgpu.mjs"),
                        "--precision", precision, "--batch", jobs_path, out_path],
                       capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit("run_webgpu (%s) failed: %s" % (precision, r.stderr.strip()[-2000:]))
    return json.load(open(out_path))["results"]


def max_err(got, ref):
    d = np.abs(np.asarray(got, np.float64).reshape(ref.shape) - ref)
    if np.isnan(d).any():
        return float("nan")
    return float(d.max())


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("outdir")
    ap.add_argument("--zoo")
    ap.add_argument("--activation")
    args = ap.parse_args()
    os.makedirs(args.outdir, exist_ok=True)
    cases = {"fc_cancel": case_fc_cancel(), "mean_global": case_mean_global(),
             "rmsnorm": case_rmsnorm(),
             "layernorm_var": case_layernorm_var(os.path.join(HERE, "..")),
             "conv_cancel": case_conv_cancel()}
    if args.zoo and args.activation:
        cases["resnet18_head"] = case_resnet18_head(args.zoo, args.activation)
    jobs = []
    for name, (blob, inputs, *_rest) in cases.items():
        path = os.path.join(args.outdir, name + ".tflite")
        open(path, "wb").write(blob)
        files = []
        for i, arr in enumerate(inputs):
            f = os.path.join(args.outdir, "%s_in%d.npy" % (name, i))
            np.save(f, arr)
            files.append(f)
        jobs.append({"id": name, "model": path, "inputs": files})
    jobs_path = os.path.join(args.outdir, "jobs.json")
    json.dump(jobs, open(jobs_path, "w"))
    res = {p: run_webgpu(jobs_path, p, os.path.join(args.outdir, "webgpu_%s.json" % p))
           for p in ("fp16", "fp32")}
    report = {}
    for name, (_blob, _inputs, ref, acc32, acc16) in cases.items():
        row = {}
        for p in ("fp16", "fp32"):
            r = res[p][name]
            if not r.get("ok"):
                row["webgpu_" + p] = "failed: %s" % r.get("error")
                continue
            row["webgpu_" + p] = max_err(r["outputs"][0]["data"], ref)
            row["webgpu_%s_gpu_ops" % p] = (r.get("residency") or {}).get("gpu_ops")
            if p == "fp16":
                got = np.asarray(r["outputs"][0]["data"], np.float64).reshape(ref.shape)
                np.save(os.path.join(args.outdir, name + "_webgpu_fp16.npy"),
                        got.astype(np.float32))
                row["webgpu_fp16_vs_acc32_emulation"] = max_err(got, acc32)
                row["webgpu_fp16_vs_acc16_emulation"] = max_err(got, acc16)
                if name == "fc_cancel":
                    row["webgpu_fp16_values"] = got.ravel().tolist()
        row["emulation_fp16_storage_fp32_acc"] = max_err(acc32, ref)
        row["emulation_fp16_storage_fp16_acc"] = max_err(acc16, ref)
        row["output_scale"] = float(np.abs(ref).max())
        report[name] = row
        print(name)
        for k, v in row.items():
            print("  %-36s %s" % (k, v))
    json.dump(report, open(os.path.join(args.outdir, "report.json"), "w"), indent=1)


if __name__ == "__main__":
    main()
