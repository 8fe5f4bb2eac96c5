#!/usr/bin/env bash
# Re-checks the real LiteRT against what tests/data/tflite/expectations.json
# recorded when the fixtures were made (tools/make_tflite_fixtures.py):
#  - CPU (LiteRT.js in Node, XNNPACK): every fixture runs, or is refused
#    where it was refused; each output has the recorded name, dtype and
#    shape, and matches the recorded values: integers exactly (uint8 within
#    1 LSB), floats within 1e-5 of the output's scale (its largest
#    magnitude). The same binary on the same inputs gives the same bits on
#    one machine; the margin covers XNNPACK's code paths differing between
#    CPUs.
#  - WebGPU (LiteRT.js in headless Chromium, ML Drift on SwiftShader), when
#    Chromium is installed: the delegate's residency is the recorded one
#    (ops on the GPU and on the CPU, the rejected ops with their reasons,
#    whether the model is fully accelerated, whether it fails), and the
#    difference of its outputs from the CPU's is no more than twice the
#    recorded one (or 1e-5 of the scale where it was ~0).
#  - Every .tflite under tests/data/tflite is in the expectations, and every
#    file the expectations name exists.
# Exit 77 (skipped) when node or the pinned packages (tools/litert/
# node_modules, installed by scripts/setup.sh) are missing, saying which.
set -u
bin=${1:?usage: litert_oracle.sh CONVGATE_BINARY SOURCE_DIR}
src=${2:?usage: litert_oracle.sh CONVGATE_BINARY SOURCE_DIR}
: "$bin"
if ! command -v node >/dev/null 2>&1; then
    echo "litert_oracle: skipped: node is not installed (scripts/setup.sh installs it)"
    exit 77
fi
if [ ! -f "$src/tools/litert/node_modules/@litertjs/core/package.json" ]; then
    echo "litert_oracle: skipped: tools/litert/node_modules has no @litertjs/core" \
         "(scripts/setup.sh runs npm ci there)"
    exit 77
fi
if ! /usr/bin/python3 -c 'import numpy' 2>/dev/null; then
    echo "litert_oracle: skipped: /usr/bin/python3 has no numpy (apt-get install python3-numpy)"
    exit 77
fi
webgpu=1
if ! command -v chromium >/dev/null 2>&1; then
    echo "litert_oracle: chromium is not installed: the WebGPU residency is not re-checked"
    webgpu=0
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
exec /usr/bin/python3 - "$src" "$tmp" "$webgpu" <<'EOF'
import json, os, subprocess, sys
import numpy as np

src, tmp, webgpu = sys.argv[1], sys.argv[2], sys.argv[3] == "1"
root = os.path.join(src, "tests", "data", "tflite")
exp = json.load(open(os.path.join(root, "expectations.json")))["fixtures"]
errors = []

def err(key, msg):
    errors.append("%s: %s" % (key, msg))

# every fixture file is listed, every listed file exists
listed = {e["file"] for e in exp.values()}
for dirpath, _, names in os.walk(root):
    for n in names:
        rel = os.path.relpath(os.path.join(dirpath, n), root)
        if n.endswith(".tflite") and rel not in listed:
            err(rel, "not in expectations.json")
for key, e in exp.items():
    files = [e["file"]] + [i["file"] for i in e["inputs"]]
    files += [o["file"] for o in (e.get("litert_cpu") or {}).get("outputs", [])]
    for t in e.get("twins", []):
        files += [t["file"]] + t["inputs"]
    for f in files:
        if not os.path.exists(os.path.join(root, f)):
            err(key, "%s is missing" % f)

keys = sorted(exp)
jobs = [{"id": k, "model": os.path.join(root, exp[k]["file"]),
         "inputs": [os.path.join(root, i["file"]) for i in exp[k]["inputs"]]} for k in keys]
with open(os.path.join(tmp, "jobs.json"), "w") as f:
    json.dump(jobs, f)

# ---- CPU ----------------------------------------------------------------
out = os.path.join(tmp, "cpu")
p = subprocess.run(["node", os.path.join(src, "tools", "litert", "run_node.mjs"), "--batch",
                    os.path.join(tmp, "jobs.json"), out], capture_output=True, text=True)
if p.returncode != 0:
    print("litert_oracle: run_node.mjs failed: " + p.stderr)
    sys.exit(1)
summary = json.load(open(os.path.join(out, "summary.json")))
cpu_outputs = {}
checked = 0
for k in keys:
    want, got = exp[k]["litert_cpu"], summary.get(k, {})
    if want["status"] == "refused":
        if got.get("ok"):
            err(k, "LiteRT now runs it; it was refused")
        continue
    if not got.get("ok"):
        err(k, "LiteRT refused it: " + got.get("error", "?"))
        continue
    res = json.load(open(os.path.join(got["dir"], "result.json")))
    if len(res["outputs"]) != len(want["outputs"]):
        err(k, "%d outputs, %d recorded" % (len(res["outputs"]), len(want["outputs"])))
        continue
    arrays = []
    for o, w in zip(res["outputs"], want["outputs"]):
        a = np.load(os.path.join(got["dir"], o["file"]))
        ref = np.load(os.path.join(root, w["file"]))
        arrays.append(a)
        if (o["name"], o["dtype"], list(o["shape"])) != (w["name"], w["dtype"], w["shape"]):
            err(k, "output %s %s %s, recorded %s %s %s" % (o["name"], o["dtype"], o["shape"],
                                                           w["name"], w["dtype"], w["shape"]))
            continue
        d = np.abs(a.astype(np.float64) - ref.astype(np.float64))
        worst = float(d.max()) if d.size else 0.0
        if a.dtype.kind == "f":
            scale = float(np.abs(ref).max()) if ref.size else 0.0
            if not np.array_equal(np.isnan(a), np.isnan(ref)) or worst > 1e-5 * max(scale, 1e-30):
                err(k, "output %s differs from the record by %g (scale %g)"
                    % (o["name"], worst, scale))
        elif worst > (1 if a.dtype == np.uint8 else 0):
            err(k, "output %s differs from the record by %g" % (o["name"], worst))
        checked += 1
    cpu_outputs[k] = arrays
print("litert_oracle: CPU: %d fixtures, %d outputs re-checked" % (len(keys), checked))

# ---- WebGPU -------------------------------------------------------------
if webgpu:
    res_path = os.path.join(tmp, "webgpu.json")
    p = subprocess.run(["node", os.path.join(src, "tools", "litert", "run_webgpu.mjs"),
                        "--batch", os.path.join(tmp, "jobs.json"), res_path],
                       capture_output=True, text=True)
    if p.returncode != 0:
        print("litert_oracle: run_webgpu.mjs failed: " + p.stderr)
        sys.exit(1)
    batch = json.load(open(res_path))
    print("litert_oracle: WebGPU adapter %s" % json.dumps(batch.get("adapter")))
    n = 0
    for k in keys:
        want = exp[k].get("litert_webgpu")
        if not want:
            err(k, "no WebGPU record (rerun tools/make_tflite_fixtures.py with chromium)")
            continue
        r = batch["results"].get(k)
        if r is None:
            err(k, "no WebGPU result")
            continue
        res = r.get("residency") or {}
        now = {"status": "ok" if r["ok"] else "failed",
               "fully_accelerated": r.get("fully_accelerated"),
               "gpu_ops": res.get("gpu_ops"), "cpu_ops": res.get("cpu_ops"),
               "rejected": res.get("rejected", [])}
        for f in now:
            if now[f] != want.get(f):
                err(k, "WebGPU %s is %s, recorded %s" % (f, json.dumps(now[f]),
                                                         json.dumps(want.get(f))))
        if r["ok"] and k in cpu_outputs and want.get("max_abs_diff_vs_cpu") is not None:
            for i, (o, c) in enumerate(zip(r["outputs"], cpu_outputs[k])):
                got = np.asarray(o["data"], np.float64).reshape(c.shape)
                d = float(np.max(np.abs(got - c.astype(np.float64)))) if c.size else 0.0
                rec = want["max_abs_diff_vs_cpu"][i]
                scale = float(np.abs(c).max()) if c.size else 0.0
                if d > max(2 * rec, 1e-5 * scale):
                    err(k, "WebGPU output %d is %g from the CPU's; recorded %g" % (i, d, rec))
        n += 1
    print("litert_oracle: WebGPU: %d fixtures' residency re-checked" % n)

for e in errors:
    print("FAILED: " + e)
sys.exit(1 if errors else 0)
EOF
