#!/usr/bin/python3
"""The .npy side of bench/parity.sh: makes seeded model inputs and compares
convgate's outputs with onnxruntime's.

  compare_npy.py gen DIR --seed S NAME=DTYPE:SHAPE:DIST...
      writes DIR/NAME.npy for each spec.  SHAPE is AxBxC ('' for a scalar);
      DIST is one of
        u01        uniform in [0, 1)
        imagenet   uniform in [0, 1), then (x - mean) / std per channel
                   (axis 1) with ImageNet's mean and std, as torchvision's
                   and PaddleOCR det's preprocessing does
        pm1        uniform in [0, 1), then (x - 0.5) / 0.5: PaddleOCR rec/cls
        audio      uniform in [-0.5, 0.5): a 16 kHz chunk of noise
        state      uniform in [-0.1, 0.1): a recurrent state mid-stream
        const:V    every element V
      Each input gets its own stream, seeded from S and its position, so
      adding an input does not change the others.

  compare_npy.py expose MODEL OUT
      copies MODEL to OUT with one more graph output per tensor that feeds
      a node producing a graph output (initializers excepted): the features
      before a classifier head.  vit_b_16's export had torchvision's
      zero-initialized head, so its logits were all 0 whatever the encoder
      computed (tools/export_zoo.py gives it a seeded init since #14); its
      features are still compared beside the logits.  Needs onnx.

  compare_npy.py compare ORT_DIR CG_JSON [--argmax]
      ORT_DIR holds onnxruntime's outputs as <sanitized name>.npy
      (bench/ort_session.js --save-outputs); CG_JSON is `convgate run
      --json -o DIR` output, which names each output and its file.  An
      output passes iff dtype and shape agree, NaNs sit at the same places,
      and max|cg - ort| <= 1e-4 * max(max|ort|, 1) (2^-10 instead of 1e-4
      for float16 outputs); with --argmax the
      argmax over the last axis must also agree everywhere.  Prints one line
      for the worst output (by diff / bound) and exits 0 if all pass, 1 if
      not, 2 on a usage or file error.
"""
import json
import os
import re
import sys

import numpy as np

REL_TOL = 1e-4
# float16 outputs: one fp16 epsilon (2^-10).  Both runtimes compute each op
# in float32, but onnxruntime drops the fp16 round trips between ops that
# its inserted Casts make, while convgate rounds every float16 value a node
# writes, so they differ by a few fp16 roundings, far above 1e-4.
REL_TOL_FP16 = 2.0 ** -10
IMAGENET_MEAN = np.array([0.485, 0.456, 0.406])
IMAGENET_STD = np.array([0.229, 0.224, 0.225])


def die(msg):
    print("compare_npy: " + msg, file=sys.stderr)
    sys.exit(2)


def parse_shape(text):
    if text == "":
        return ()
    try:
        dims = tuple(int(d) for d in text.split("x"))
    except ValueError:
        die("bad shape '%s'" % text)
    if any(d < 0 for d in dims):
        die("bad shape '%s'" % text)
    return dims


def make_input(rng, dtype, shape, dist):
    """One input array of DTYPE and SHAPE drawn from DIST (see the module doc)."""
    if dist.startswith("const:"):
        return np.full(shape, float(dist[6:])).astype(dtype)
    if dist == "u01":
        x = rng.random(shape)
    elif dist in ("imagenet", "pm1"):
        x = rng.random(shape)
        if dist == "pm1":
            x = (x - 0.5) / 0.5
        else:
            if len(shape) < 2 or shape[1] != 3:
                die("imagenet wants N x 3 x ... , got %s" % (shape,))
            bshape = (1, 3) + (1,) * (len(shape) - 2)
            x = (x - IMAGENET_MEAN.reshape(bshape)) / IMAGENET_STD.reshape(bshape)
    elif dist == "audio":
        x = rng.random(shape) - 0.5
    elif dist == "state":
        x = (rng.random(shape) - 0.5) * 0.2
    else:
        die("unknown distribution '%s'" % dist)
    return x.astype(dtype)


def cmd_gen(argv):
    if len(argv) < 3 or argv[1] != "--seed":
        die("usage: gen DIR --seed S NAME=DTYPE:SHAPE:DIST...")
    out_dir, seed = argv[0], int(argv[2])
    os.makedirs(out_dir, exist_ok=True)
    for index, spec in enumerate(argv[3:]):
        m = re.fullmatch(r"([^=]+)=([a-z0-9]+):([0-9x]*):(.+)", spec)
        if not m:
            die("bad input spec '%s' (NAME=DTYPE:SHAPE:DIST)" % spec)
        name, dtype, shape, dist = m.groups()
        rng = np.random.default_rng([seed, index])
        arr = make_input(rng, np.dtype(dtype), parse_shape(shape), dist)
        np.save(os.path.join(out_dir, name + ".npy"), arr)


def sanitize(name):
    """The file stem bench/ort_session.js gives output NAME."""
    return re.sub(r"[^A-Za-z0-9_.-]", "_", name)


def compare_one(name, ort, cg, want_argmax):
    """(ratio, text, ok) for one output; ratio = diff / bound orders outputs."""
    if ort.dtype != cg.dtype:
        return float("inf"), "%s: dtype %s vs ORT %s" % (name, cg.dtype, ort.dtype), False
    if ort.shape != cg.shape:
        return float("inf"), "%s: shape %s vs ORT %s" % (name, list(cg.shape), list(ort.shape)), False
    a = ort.astype(np.float64)
    b = cg.astype(np.float64)
    nan_a, nan_b = np.isnan(a), np.isnan(b)
    if not np.array_equal(nan_a, nan_b):
        return float("inf"), "%s: NaN at %d places, ORT at %d" % (
            name, int(nan_b.sum()), int(nan_a.sum())), False
    keep = ~nan_a
    a, b = a[keep], b[keep]
    if a.size == 0:
        return 0.0, "%s: empty" % name, True
    with np.errstate(invalid="ignore"):
        diffs = np.abs(a - b)
    # inf - inf is NaN: equal infinities are a diff of 0, others are inf.
    same_inf = np.isinf(a) & (a == b)
    diffs[same_inf] = 0.0
    diffs[np.isnan(diffs)] = np.inf
    diff = float(diffs.max())
    finite = a[np.isfinite(a)]
    peak = float(np.abs(finite).max()) if finite.size else 0.0
    bound = (REL_TOL_FP16 if ort.dtype == np.float16 else REL_TOL) * max(peak, 1.0)
    ok = diff <= bound
    # The bound is absolute for outputs under 1 in magnitude; the diff
    # relative to the output's own scale shows how close they really are
    # (the torchvision exports' random weights give logits near 1e-9).
    rel = " (rel %.2g)" % (diff / peak) if 0.0 < peak < 1.0 else ""
    text = "%s: max|diff| %.3g%s  bound %.3g" % (name, diff, rel, bound)
    if a.size > 1 and float(a.max()) == float(a.min()):
        text += "  [ORT output constant]"
    if want_argmax:
        if ort.ndim == 0 or ort.shape[-1] == 0:
            return float("inf"), text + "  argmax n/a", False
        same = np.array_equal(np.argmax(ort, axis=-1), np.argmax(cg, axis=-1))
        text += "  argmax %s" % ("same" if same else "DIFFERS")
        ok = ok and same
    return diff / bound, text, ok


def cmd_compare(argv):
    want_argmax = "--argmax" in argv
    args = [a for a in argv if a != "--argmax"]
    if len(args) != 2:
        die("usage: compare ORT_DIR CG_JSON [--argmax]")
    ort_dir, cg_json = args
    try:
        with open(cg_json) as f:
            report = json.load(f)["result"]  # docs/json.md: the envelope's result
        outputs = report["outputs"]
    except (OSError, ValueError, KeyError, TypeError) as e:
        die("%s: no convgate outputs: %s" % (cg_json, e))
    ort_files = sorted(f for f in os.listdir(ort_dir) if f.endswith(".npy"))
    if len(ort_files) != len(outputs):
        print("FAIL  %d outputs from convgate, %d from ORT" % (len(outputs), len(ort_files)))
        return 1
    results = []
    for out in outputs:
        name = out.get("name", "")
        ort_path = os.path.join(ort_dir, sanitize(name) + ".npy")
        if not out.get("file") or not os.path.exists(ort_path):
            results.append((float("inf"), "%s: missing on one side" % name, False))
            continue
        try:
            ort = np.load(ort_path, allow_pickle=False)
            cg = np.load(out["file"], allow_pickle=False)
        except (OSError, ValueError) as e:
            results.append((float("inf"), "%s: unreadable: %s" % (name, e), False))
            continue
        results.append(compare_one(name, ort, cg, want_argmax))
    all_ok = all(ok for _, _, ok in results)
    # Show the first failing output, else the one closest to its bound.
    failing = [r for r in results if not r[2]]
    worst = failing[0] if failing else max(results, key=lambda r: r[0])
    more = "" if len(results) == 1 else "  (worst of %d outputs)" % len(results)
    print("%s  %s%s" % ("PASS" if all_ok else "FAIL", worst[1], more))
    return 0 if all_ok else 1


def cmd_expose(argv):
    if len(argv) != 2:
        die("usage: expose MODEL OUT")
    import onnx  # only this subcommand needs it

    model = onnx.load(argv[0])
    g = model.graph
    inferred = onnx.shape_inference.infer_shapes(model).graph
    types = {v.name: v.type.tensor_type.elem_type
             for v in list(inferred.value_info) + list(g.input) if v.type.HasField("tensor_type")}
    outputs = {o.name for o in g.output}
    inits = {t.name for t in g.initializer}
    added = []
    for node in g.node:
        if not any(o in outputs for o in node.output):
            continue
        for name in node.input:
            if (name and name not in inits and name not in outputs and name not in added
                    and types.get(name)):
                added.append(name)
    if not added:
        die("%s: nothing to expose" % argv[0])
    for name in added:
        # Element type only: both runtimes infer the shape.
        g.output.append(onnx.helper.make_tensor_value_info(name, types[name], None))
    onnx.save(model, argv[1])
    print(" ".join(added))


def main():
    cmds = ("gen", "expose", "compare")
    if len(sys.argv) < 2 or sys.argv[1] not in cmds:
        die("usage: compare_npy.py gen ... | expose ... | compare ...  (see the file's doc)")
    if sys.argv[1] == "gen":
        cmd_gen(sys.argv[2:])
        return 0
    if sys.argv[1] == "expose":
        cmd_expose(sys.argv[2:])
        return 0
    return cmd_compare(sys.argv[2:])


if __name__ == "__main__":
    sys.exit(main())
