#!/usr/bin/python3
"""Measures noise floors and how far correct libraries are from them: the
data behind the multiples of docs/noise-floor.md.

  measure_noise.py CONVGATE OUTDIR [--zoo DIR] [--conformance DIR]
                   [--only SUBSTR[,SUBSTR...]] [--no-litert]

Zoo models (--zoo, default $CG_ZOO): two input sets made by bench/parity.sh's
input contracts (seeds 1 and 2); vit_b_16 with its head's input exposed as
parity does (its head was zero-initialized before #14: logits all 0). For each:
  convgate noise MODEL --inputs SETS --target xnnpack --json
  convgate noise MODEL --inputs SETS --target litert-gpu --json
  convgate noise MODEL --inputs SETS --outputs-from ORT --json
ORT being onnxruntime-node 1.22.0 (bench/ort_session.js) on the same sets.

ONNX backend tests (--conformance DIR, e.g. /usr/share/libonnx-testdata/data/node):
every test whose outputs are float32: convgate noise on its test data sets
judging onnxruntime's outputs and the test's own expected outputs (numpy's
reference implementation) against the floors.

Writes OUTDIR/zoo.jsonl and OUTDIR/conformance.jsonl (one JSON record per
model/output/judged side; a rerun replaces the records of the models it
measured) and prints a summary: per correct library the
distribution of error / fp32 floor, which fixes k_fp32, and per fp16 run the
error / fp16 storage floor, which fixes k_fp16.
Run with /usr/bin/python3 (numpy, onnx).
"""
import glob
import json
import os
import shutil
import subprocess
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
ZOO_MODELS = ["resnet18", "resnet50", "mobilenet_v2", "mobilenet_v3_small", "squeezenet1_1",
              "vit_b_16", "ch_PP-OCRv4_det_infer", "ch_PP-OCRv4_rec_infer",
              "ch_ppocr_mobile_v2.0_cls_infer", "silero_vad_legacy", "silero_vad_v5",
              "silero_vad_v6"]


def run(cmd, **kw):
    return subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, **kw)


def noise_json(convgate, model, args):
    r = run([convgate, "noise", model, "--json"] + args)
    if r.returncode not in (0, 1):
        return None, (r.stderr.strip().splitlines() or ["exit %d" % r.returncode])[-1]
    try:
        doc = json.loads(r.stdout)
    except json.JSONDecodeError as e:
        return None, "bad JSON: %s" % e
    return doc.get("result") or {}, None  # the --json envelope (docs/json.md)


def records(kind, name, doc):
    out = []
    for o in doc.get("outputs", []):
        base = {"kind": kind, "model": name, "output": o["name"],
                "discontinuous": o.get("discontinuous", False), "scale": o.get("scale"),
                "fp32_floor": (o.get("fp32") or {}).get("max_abs"),
                "fp16_floor": (o.get("fp16") or {}).get("max_abs"),
                "fp32_rel": (o.get("fp32") or {}).get("rel"),
                "fp16_rel": (o.get("fp16") or {}).get("rel")}
        for j in o.get("judged", []):
            r = dict(base)
            r.update({"side": j["side"], "precision": j["precision"], "verdict": j["verdict"],
                      "ratio": j["ratio"], "error": j["error"], "against": j["against"],
                      "reason": j["reason"], "by_flips": j["by_flips"]})
            # error over the effective floor of the target's own precision
            # (the verdict's ratio is against fp32 when it matched there)
            e, sc = num(j["error"]), num(r["scale"] or 0)
            if j["precision"] == "fp32":
                f = max(num(r["fp32_floor"] or 0), 2**-24 * sc)
            else:
                f = max(num(r["fp16_floor"] or 0), 2**-11 * sc)
            r["ratio_own"] = 0.0 if e == 0 else (e / f if f > 0 else float("inf"))
            out.append(r)
    return out


def make_sets(convgate, model_name, work):
    """Two input sets by bench/parity.sh's contract (seeds 1, 2)."""
    sets = os.path.join(work, "sets")
    for seed in (1, 2):
        keep = os.path.join(work, "gen%d" % seed)
        r = run(["bash", os.path.join(REPO, "bench", "parity.sh"), "--zoo", ZOO, "--seed",
                 str(seed), "--keep", keep, "--inputs-only", convgate, model_name + ".onnx"])
        if r.returncode != 0:
            raise RuntimeError("inputs: " + (r.stdout + r.stderr).strip().splitlines()[-1])
        dst = os.path.join(sets, "s%d" % seed)
        os.makedirs(dst, exist_ok=True)
        for f in glob.glob(os.path.join(keep, model_name, "in", "*.npy")):
            shutil.copy(f, dst)
    return sets


def ort_outputs(model, sets, out):
    for s in sorted(os.listdir(sets)):
        feeds = []
        for f in sorted(glob.glob(os.path.join(sets, s, "*.npy"))):
            feeds += ["--input", "%s=%s" % (os.path.basename(f)[:-4], f)]
        r = run(["node", os.path.join(REPO, "bench", "ort_session.js"), "--run", "--runs", "1"] +
                feeds + ["--save-outputs", os.path.join(out, s), model])
        if r.returncode != 0:
            raise RuntimeError("onnxruntime: " + (r.stdout + r.stderr).strip().splitlines()[-1])


def measure_zoo(convgate, outdir, only, litert):
    recs = []
    for name in ZOO_MODELS:
        if only and not any(o in name for o in only.split(",")):
            continue
        model = os.path.join(ZOO, name + ".onnx")
        if not os.path.exists(model):
            print("zoo: %s missing" % model, file=sys.stderr)
            continue
        work = os.path.join(outdir, "zoo", name)
        shutil.rmtree(work, ignore_errors=True)
        os.makedirs(work)
        try:
            sets = make_sets(convgate, name, work)
            if name == "vit_b_16":
                exposed = os.path.join(work, "exposed.onnx")
                r = run(["/usr/bin/python3", os.path.join(REPO, "bench", "compare_npy.py"),
                         "expose", model, exposed])
                if r.returncode != 0:
                    raise RuntimeError("expose: " + r.stderr.strip())
                model = exposed
            ort_outputs(model, sets, os.path.join(work, "ort"))
        except RuntimeError as e:
            print("zoo: %s: %s" % (name, e), file=sys.stderr)
            continue
        sides = [["--target", "xnnpack"], ["--outputs-from", os.path.join(work, "ort")]]
        if litert:
            sides.append(["--target", "litert-gpu"])
        for args in sides:
            doc, err = noise_json(convgate, model, ["--inputs", sets] + args)
            if doc is None:
                print("zoo: %s %s: %s" % (name, " ".join(args), err), file=sys.stderr)
                continue
            for r in records("zoo", name, doc):
                if r["side"].endswith("/ort"):
                    r["side"] = "onnxruntime"
                recs.append(r)
        print("zoo: %s done" % name, file=sys.stderr)
    return recs


def pb_to_npy(pb, npy):
    import onnx
    from onnx import numpy_helper
    t = onnx.TensorProto()
    with open(pb, "rb") as f:
        t.ParseFromString(f.read())
    np.save(npy, numpy_helper.to_array(t))
    return t.name


def measure_conformance(convgate, outdir, root, only):
    import onnx
    recs = []
    for test in sorted(glob.glob(os.path.join(root, "*", "model.onnx"))):
        tdir = os.path.dirname(test)
        name = os.path.basename(tdir)
        if only and not any(o in name for o in only.split(",")):
            continue
        try:
            m = onnx.load(test)
        except Exception:
            continue
        outs = m.graph.output
        if not outs or any(o.type.tensor_type.elem_type != onnx.TensorProto.FLOAT for o in outs):
            continue
        ins = [i for i in m.graph.input if i.name not in {x.name for x in m.graph.initializer}]
        work = os.path.join(outdir, "conf", name)
        shutil.rmtree(work, ignore_errors=True)
        ok = True
        for sdir in sorted(glob.glob(os.path.join(tdir, "test_data_set_*"))):
            s = os.path.basename(sdir)
            feeds = []
            try:
                for k, vi in enumerate(ins):
                    pb = os.path.join(sdir, "input_%d.pb" % k)
                    if not os.path.exists(pb):
                        break
                    npy = os.path.join(work, "in", s, vi.name.replace("/", "_") + ".npy")
                    os.makedirs(os.path.dirname(npy), exist_ok=True)
                    pb_to_npy(pb, npy)
                    feeds += ["--input", "%s=%s" % (vi.name, npy)]
                for k, vo in enumerate(outs):
                    pb = os.path.join(sdir, "output_%d.pb" % k)
                    npy = os.path.join(work, "expected", s, vo.name + ".npy")
                    os.makedirs(os.path.dirname(npy), exist_ok=True)
                    pb_to_npy(pb, npy)
            except Exception:
                ok = False
                break
            r = run(["node", os.path.join(REPO, "bench", "ort_session.js"), "--run", "--runs",
                     "1"] + feeds + ["--save-outputs", os.path.join(work, "ort", s), test])
            if r.returncode != 0:
                ok = False
                break
        if not ok:
            continue
        for side, d in (("onnxruntime", "ort"), ("numpy reference", "expected")):
            doc, err = noise_json(convgate, test, ["--inputs", tdir, "--outputs-from",
                                                   os.path.join(work, d), "--no-fp16"])
            if doc is None:
                continue
            for rec in records("conformance", name, doc):
                rec["side"] = side
                recs.append(rec)
    return recs


def num(v):
    return float("inf") if v == "inf" else float("nan") if v == "nan" else float(v)


def summarize(recs):
    def quant(vals):
        v = np.array(sorted(vals))
        return "n=%d  median %.3g  p90 %.3g  p99 %.3g  max %.3g" % (
            len(v), np.median(v), np.quantile(v, 0.9), np.quantile(v, 0.99), v.max())
    for kind in ("zoo", "conformance"):
        for side in sorted({r["side"] for r in recs if r["kind"] == kind}):
            rs = [r for r in recs if r["kind"] == kind and r["side"] == side and
                  not r["discontinuous"]]
            if not rs:
                continue
            label = ("error / fp32 floor" if rs[0]["precision"] == "fp32"
                     else "error / fp16 storage floor")
            vals = [r["ratio_own"] for r in rs]
            vals = [v for v in vals if v == v]
            if vals:
                print("%-12s %-18s %-27s %s" % (kind, side, label, quant(vals)))
            bad = [r for r in rs if r["verdict"] not in ("matches (fp32 noise)",
                                                        "matches at fp16 precision")]
            for r in bad:
                print("    %s/%s: %s: %s" % (r["model"], r["output"], r["verdict"], r["reason"]))


def save_merged(path, recs):
    """Records of the models measured now replace theirs; the others stay."""
    keep = []
    if os.path.exists(path):
        now = {r["model"] for r in recs}
        with open(path) as f:
            keep = [json.loads(l) for l in f if l.strip()]
        keep = [r for r in keep if r["model"] not in now]
    with open(path, "w") as f:
        for r in keep + recs:
            f.write(json.dumps(r) + "\n")
    return keep + recs


def main():
    global ZOO
    args = sys.argv[1:]
    if len(args) < 2:
        print(__doc__, file=sys.stderr)
        sys.exit(2)
    convgate, outdir = os.path.abspath(args[0]), os.path.abspath(args[1])
    ZOO = os.environ.get("CG_ZOO", os.path.join(REPO, "zoo"))
    conf, only, litert = None, None, True
    i = 2
    while i < len(args):
        if args[i] == "--zoo":
            ZOO = args[i + 1]
            i += 2
        elif args[i] == "--conformance":
            conf = args[i + 1]
            i += 2
        elif args[i] == "--only":
            only = args[i + 1]
            i += 2
        elif args[i] == "--no-litert":
            litert = False
            i += 1
        else:
            print("measure_noise: unknown option %s" % args[i], file=sys.stderr)
            sys.exit(2)
    os.makedirs(outdir, exist_ok=True)
    recs = []
    if ZOO and os.path.isdir(ZOO):
        recs += save_merged(os.path.join(outdir, "zoo.jsonl"),
                            measure_zoo(convgate, outdir, only, litert))
    if conf:
        recs += save_merged(os.path.join(outdir, "conformance.jsonl"),
                            measure_conformance(convgate, outdir, conf, only))
    summarize(recs)


ZOO = None
if __name__ == "__main__":
    main()
