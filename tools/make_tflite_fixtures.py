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
  expectations.json               per fixture: inputs, LiteRT's outputs
                                  (name, dtype, shape), and the WebGPU
                                  delegate's residency once recorded by
                                  tools/litert/record_webgpu.mjs

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


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default=os.path.join(ROOT, "tests", "data", "tflite"))
    ap.add_argument("--only", help="regex over group/name: regenerate only those")
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
    for fx in REGISTRY:
        key = "%s/%s" % (fx.group, fx.name)
        if args.only and not re.search(args.only, key):
            continue
        model, inputs = fx.build()
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
        expectations[key] = entry
        print("%-40s %6d bytes  LiteRT: %s" % (key, len(data),
                                                 entry["litert_cpu"]["status"] if
                                                 entry["litert_cpu"] else "FAILED"))
    with open(exp_path, "w") as f:
        json.dump({"runtime": "@litertjs/core 2.5.3 (tools/litert/package-lock.json)",
                   "generator": "tools/make_tflite_fixtures.py",
                   "fixtures": dict(sorted(expectations.items()))}, f, indent=1)
        f.write("\n")
    if failed:
        sys.exit("make_tflite_fixtures: " + "\n  ".join([""] + failed))


if __name__ == "__main__":
    main()
