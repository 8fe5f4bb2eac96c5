#!/usr/bin/python3
"""Gate 3's verdict on every zoo model and both examples, on XNNPACK and on
LiteRT GPU (the fp16 emulation): the table of docs/gate3.md.

For each model and target it runs

    convgate gate MODEL --target T --inputs SET [--range sr=16000,16000] --json FILE
                  --min-coverage 0   (gate 3 is judged whatever share T takes)

on one input set made by bench/parity.sh's input contracts (seed 1: ImageNet-
normalized images, PaddleOCR's ranges, 16 kHz audio with a zero state), or the
example's own inputs, and prints one markdown row per (model, target): gate 2,
each output's gate-3 category with its ratio to the floor, and for a failure
the first tensor beyond its noise floor and the bisection's verdict.

    /usr/bin/python3 tools/measure_gate3.py CONVGATE [--zoo DIR] [--json OUT]
                                            [--target T] [MODEL ...]

MODEL names a zoo model or an example (tiny_cnn, rmsnorm_fp16); default: all.
--target runs one target only (default: xnnpack and litert-gpu). An output of
a target with two device classes (litert-gpu) gives each class's category.
"""
import json
import os
import subprocess
import sys
import tempfile

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ZOO_MODELS = ["resnet18", "resnet50", "mobilenet_v2", "mobilenet_v3_small", "squeezenet1_1",
              "efficientnet_b0", "vit_b_16", "ch_PP-OCRv4_det_infer", "ch_PP-OCRv4_rec_infer",
              "ch_ppocr_mobile_v2.0_cls_infer", "silero_vad_legacy", "silero_vad_v5",
              "silero_vad_v6", "ssdlite320_mobilenet_v3_large", "lstm_gru", "transformer_s2048",
              "resnet18_dynquant", "resnet18_fp16"]
# Detectors: judged with --task detect, on a seeded image in [0, 1) (torchvision's
# detection models normalize inside the graph); bench/parity.sh has no contract for them.
DETECTORS = {"ssdlite320_mobilenet_v3_large": ("image", (1, 3, 320, 320))}
EXAMPLES = {"tiny_cnn": "examples/tiny_cnn_inputs", "rmsnorm_fp16": "examples/rmsnorm_fp16_inputs"}
TARGETS = ["xnnpack", "litert-gpu"]


def num(v):
    return float(v) if isinstance(v, str) else v


def fmt(x):
    x = num(x)
    if x is None:
        return "-"
    if x == float("inf"):
        return "inf"
    return "%.3g" % x


def inputs_for(convgate, zoo, name, work):
    if name in EXAMPLES:
        return os.path.join(REPO, EXAMPLES[name]), os.path.join(REPO, "examples", name + ".onnx")
    if name in DETECTORS:
        import numpy as np
        input_name, shape = DETECTORS[name]
        d = os.path.join(work, "gen", name, "in", "sample_0")
        os.makedirs(d)
        np.save(os.path.join(d, input_name + ".npy"),
                np.random.default_rng(1).random(shape).astype(np.float32))
        return os.path.dirname(d), os.path.join(zoo, name + ".onnx")
    keep = os.path.join(work, "gen")
    r = subprocess.run(["bash", os.path.join(REPO, "bench", "parity.sh"), "--zoo", zoo,
                        "--seed", "1", "--keep", keep, "--inputs-only", convgate, name + ".onnx"],
                       capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError("inputs: " + (r.stdout + r.stderr).strip().splitlines()[-1])
    return os.path.join(keep, name, "in"), os.path.join(zoo, name + ".onnx")


def gate(convgate, model, target, inputs, extra, work):
    out = os.path.join(work, "gate-%s.json" % target)
    r = subprocess.run([convgate, "gate", model, "--target", target, "--inputs", inputs,
                        "--json", out, "--min-coverage", "0"] + extra,
                       capture_output=True, text=True)
    if not os.path.exists(out):
        raise RuntimeError("gate: exit %d: %s" % (r.returncode, r.stderr.strip()[-300:]))
    return json.load(open(out))


def row(name, target, env):
    r = env["result"]
    if r is None:
        return {"model": name, "target": target, "gate": "error",
                "text": "; ".join(e["message"] for e in env["errors"])}
    g2, g3 = r["runs_where_intended"], r["matches"]
    rec = {"model": name, "target": target, "gate": r["verdict"], "gate2": g2["state"],
           "gate3": g3["state"], "residency": g2.get("residency"), "outputs": [],
           "reason": r["reason"]}
    if g3["state"] == "not_run":
        rec["text"] = "gate 2: " + g2["detail"]
        return rec
    parts = []
    for o in g3["outputs"]:
        v = o.get("verdict")
        if v:
            rec["outputs"].append({"name": o["name"], "verdict": v["verdict"],
                                   "against": v["against"], "ratio": num(v["ratio"]),
                                   "error": num(v["error"]), "floor": num(v["floor"])})
            text = "%s: %s, %sx the %s floor" % (o["name"], v["verdict"], fmt(v["ratio"]),
                                                 v["against"])
            classes = o.get("device_classes") or []
            if classes:
                rec["outputs"][-1]["classes"] = [
                    {"name": c["name"], "verdict": c["verdict"]["verdict"],
                     "ratio": num(c["verdict"]["ratio"])} for c in classes]
                text = "%s: %s" % (o["name"], "; ".join(
                    "%s: %s, %sx the %s floor" % (
                        c["name"], c["verdict"]["verdict"], fmt(c["verdict"]["ratio"]),
                        "fp32" if c["verdict"]["against"] == "fp32" else
                        "fp16-sums" if c["accumulate"] == "fp16" else "fp16 storage")
                    for c in classes))
            if not v["passes"]:
                text += " (%s)" % v["reason"]
            parts.append(text)
        else:
            parts.append("%s: %s" % (o["name"], "within tolerance" if o["pass"] else
                                     "outside tolerance"))
    b = g3.get("bisect")
    if b and b.get("first_divergent"):
        fd = b["first_divergent"]
        rec["first"] = {"tensor": fd["tensor"], "op_type": fd["op_type"], "node": fd["node"]}
        rec["bisect"] = b.get("verdict_reason")
        parts.append("first tensor beyond its floor%s: '%s' (%s): %s" %
                     (" (bisected as %s)" % b["device_class"] if b.get("device_class") else "",
                      fd["tensor"], fd["op_type"], b.get("verdict_reason") or b.get("triage")))
    rec["text"] = "; ".join(parts)
    return rec


def main():
    args = sys.argv[1:]
    if not args or args[0].startswith("-"):
        sys.exit(__doc__)
    convgate = os.path.abspath(args.pop(0))
    zoo = os.environ.get("CG_ZOO", os.path.join(REPO, "zoo"))
    json_out = None
    targets = list(TARGETS)
    while args and args[0].startswith("--"):
        opt = args.pop(0)
        if opt == "--zoo":
            zoo = args.pop(0)
        elif opt == "--json":
            json_out = args.pop(0)
        elif opt == "--target":
            targets[:] = [args.pop(0)]
        else:
            sys.exit("unknown option " + opt)
    names = args or ZOO_MODELS + list(EXAMPLES)
    rows = []
    print("| model | target | placement (gate 2) | gate 3 | outputs (category, ratio to the floor "
          "of the target's precision) and, for a failure, the first tensor beyond its floor |")
    print("|---|---|---|---|---|")
    for name in names:
        with tempfile.TemporaryDirectory() as work:
            try:
                inputs, model = inputs_for(convgate, zoo, name, work)
            except RuntimeError as e:
                print("| %s | - | - | - | %s |" % (name, e))
                continue
            extra = ["--range", "sr=16000,16000"] if name.startswith("silero") else []
            if name in DETECTORS:
                extra = ["--task", "detect"]
            for t in targets:
                try:
                    rec = row(name, t, gate(convgate, model, t, inputs, extra, work))
                except RuntimeError as e:
                    rec = {"model": name, "target": t, "gate": "error", "text": str(e)}
                rows.append(rec)
                print("| %s | %s | %s | %s | %s |" % (name, t, rec.get("residency") or "-",
                                                      rec.get("gate3", "-").upper(),
                                                      rec["text"].replace("|", "\\|")),
                      flush=True)
    if json_out:
        json.dump(rows, open(json_out, "w"), indent=1)


if __name__ == "__main__":
    main()
