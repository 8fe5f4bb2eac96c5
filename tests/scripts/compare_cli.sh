#!/bin/bash
# convgate compare end to end: input sets from folders and .npz, outputs read
# from files (--outputs-from) and produced by the target path, tolerance
# files with justifications, NaN rules, task checks, the fp16 overflow of a
# sum of squares on an fp16 profile, the silent-fallback warning, JSON and
# exit codes. Models and data are made by /usr/bin/python3 (onnx + numpy);
# without them the test is skipped (77).
set -u
bin=${1:?usage: compare_cli.sh CONVGATE_BINARY SOURCE_DIR}
SRC=${2:?usage: compare_cli.sh CONVGATE_BINARY SOURCE_DIR}
PY=/usr/bin/python3
$PY -c "import onnx, numpy" 2>/dev/null || { echo "skip: python3 onnx/numpy missing"; exit 77; }
. "$(dirname "${BASH_SOURCE[0]}")/lib/harness.bash"
CG=$bin
W=$tmp

# Model: y = Softmax(x), z = ReduceMean(x*x) (a sum of squares: overflows fp16
# for |x| >= 256). Input sets a (folder), b (.npz), c (folder, a NaN in x).
# good/ holds numpy's outputs, bad/ the same with y[1,3] of set b off by 0.01.
cat >"$W/mk.py" <<'PYEOF'
import os, sys
import numpy as np
import onnx
from onnx import helper, TensorProto as TP
d = sys.argv[1]
x = helper.make_tensor_value_info("x", TP.FLOAT, [2, 8])
y = helper.make_tensor_value_info("y", TP.FLOAT, [2, 8])
z = helper.make_tensor_value_info("z", TP.FLOAT, [2, 1])
nodes = [helper.make_node("Softmax", ["x"], ["y"], axis=1),
         helper.make_node("Mul", ["x", "x"], ["sq"]),
         helper.make_node("ReduceMean", ["sq"], ["z"], axes=[1], keepdims=1)]
m = helper.make_model(helper.make_graph(nodes, "cmp", [x], [y, z]),
                      opset_imports=[helper.make_opsetid("", 13)])
onnx.save(m, os.path.join(d, "model.onnx"))
rs = np.random.RandomState(3)
ins = {s: rs.uniform(-1, 1, (2, 8)).astype(np.float32) for s in "abc"}
ins["c"][1, 2] = np.nan
for s, xv in ins.items():
    if s == "b":
        os.makedirs(os.path.join(d, "in"), exist_ok=True)
        np.savez(os.path.join(d, "in", "b.npz"), x=xv)
    else:
        os.makedirs(os.path.join(d, "in", s), exist_ok=True)
        np.save(os.path.join(d, "in", s, "x.npy"), xv)
    e = np.exp(xv - xv.max(axis=1, keepdims=True))
    yv = (e / e.sum(axis=1, keepdims=True)).astype(np.float32)
    zv = (xv * xv).mean(axis=1, keepdims=True).astype(np.float32)
    for name in ("good", "bad"):
        os.makedirs(os.path.join(d, name, s), exist_ok=True)
        yy = yv.copy()
        if name == "bad" and s == "b":
            yy[1, 3] += 0.01
        np.save(os.path.join(d, name, s, "y.npy"), yy)
        np.save(os.path.join(d, name, s, "z.npy"), zv)
PYEOF
$PY "$W/mk.py" "$W" || { echo "model generation failed"; exit 1; }
M=$W/model.onnx

# help and usage errors
expect_exit 0 "$CG" compare --help; expect_out "--outputs-from DIR"; expect_out "2.5e-3"
expect_exit 2 "$CG" compare "$M"; expect_out "give --target T"
expect_exit 2 "$CG" compare "$M" --target nosuch
expect_exit 2 "$CG" compare "$M" --target xnnpack --range x=3,1; expect_out "LO <= HI"
expect_exit 2 "$CG" compare "$M" --target xnnpack --range nosuch=0,1; expect_out "--range nosuch: the model has no input of that name; its inputs are: x"
expect_exit 2 "$CG" compare "$M" --target xnnpack --inputs "$W/in" --random 2
expect_exit 2 "$CG" compare "$M" --target xnnpack --inputs "$W/nosuch"
expect_exit 2 "$CG" compare "$M" --target xnnpack --atol 1 --tol "$W/tol.json"

# files from elsewhere, numpy's outputs: judged against the noise floor (the
# default) they match, the NaN of set c included (the float64 reference has it
# too); under a fixed tolerance the NaN fails without --nan-equal (NaN never
# equals by default) and passes with it
expect_exit 0 "$CG" compare "$M" --target xnnpack --inputs "$W/in" --outputs-from "$W/good"
expect_out "output y: PASS (matches (fp32 noise))"; expect_out "the fp32 noise floor"; expect_out "NaN ref 8 target 8"
expect_exit 1 "$CG" compare "$M" --target xnnpack --inputs "$W/in" --outputs-from "$W/good" --atol 1e-5 --rtol 1e-4
expect_out "output y: FAIL (outside tolerance)"; expect_out "failing samples: 1 of 3: c"
expect_out "overrides the noise-floor verdict"
expect_exit 0 "$CG" compare "$M" --target xnnpack --inputs "$W/in" --outputs-from "$W/good" --atol 1e-5 --rtol 1e-4 --nan-equal
expect_out "output z: PASS"; expect_out "samples: 3 from"
# one element off by 0.01 in set b (an .npz set): a wrong result, far beyond
# the fp32 floor, and the report says where
expect_exit 1 "$CG" compare "$M" --target xnnpack --inputs "$W/in" --outputs-from "$W/bad"
expect_out "output y: FAIL (wrong result)"; expect_out "worst: sample b at [1,3]"; expect_out "mismatches 1/48"
expect_out "1e-02..1e-01:1"; expect_out "failing samples: 1 of 3: b"
# a tolerance file: per-output tolerance with its justification printed
cat >"$W/tol.json" <<'EOF2'
{"outputs": {"y": {"atol": 0.02, "rtol": 0, "justification": "softmax probabilities: 2e-2 is below any decision margin we use"}},
 "default": {"atol": 1e-6, "rtol": 1e-5, "nan_equal": true, "justification": "tight default"}}
EOF2
expect_exit 0 "$CG" compare "$M" --target xnnpack --inputs "$W/in" --outputs-from "$W/bad" --tol "$W/tol.json"
expect_out "justification: softmax probabilities"; expect_out "justification: tight default"; expect_out "atol 0.02 rtol 0"
echo '{"outputs": {"nosuch": {"atol": 1}}}' >"$W/tol_bad.json"
expect_exit 2 "$CG" compare "$M" --target xnnpack --inputs "$W/in" --outputs-from "$W/good" --tol "$W/tol_bad.json"
expect_out "no output 'nosuch'"

# JSON report: every metric, the verdict and the floors
expect_exit 1 "$CG" compare "$M" --target xnnpack --inputs "$W/in" --outputs-from "$W/bad" --json
$PY - "$W/out" <<'PYEOF' || fail "JSON report"
import json, sys
env = json.load(open(sys.argv[1]))
assert env["command"] == "compare" and env["status"] == "fail" and env["exit_code"] == 1, env
r = env["result"]
assert r["target"] == "xnnpack" and r["pass"] is False and r["samples"] == 3, r
assert r["judged_by_noise_floor"] is True and r["precision"] == "fp32", r
o = {x["name"]: x for x in r["outputs"]}
assert o["y"]["pass"] is False and o["y"]["nan_ref"] == 8 and o["y"]["nan_target"] == 8
assert o["y"]["judged_by"] == "noise floor" and o["y"]["verdict"]["verdict"] == "wrong result"
assert float(o["y"]["verdict"]["ratio"]) > 1000, o["y"]["verdict"]
assert o["y"]["noise"]["fp32_floor"]["max_abs"] >= 0 and o["y"]["noise"]["fp16_floor"] is None
assert o["z"]["pass"] is True and o["z"]["verdict"]["verdict"] == "matches (fp32 noise)"
assert o["z"]["nan_ref"] == 1 and o["z"]["within_tolerance"] is True
for k in ("max_abs", "max_rel", "cosine", "pearson", "rmse", "nmse", "max_ulp", "hist", "worst"):
    assert k in o["y"], k
assert len(o["y"]["per_sample"]) == 3 and r["task"]["kind"] == "none"
assert [p["pass"] for p in o["y"]["per_sample"]] == [True, False, True], o["y"]["per_sample"]
PYEOF
# under a fixed tolerance, a NaN against NaN is inf and is kept in the JSON
expect_exit 1 "$CG" compare "$M" --target xnnpack --inputs "$W/in" --outputs-from "$W/good" --atol 1e-5 --rtol 1e-4 --json
$PY - "$W/out" <<'PYEOF' || fail "JSON report under a tolerance"
import json, sys
r = json.load(open(sys.argv[1]))["result"]
o = {x["name"]: x for x in r["outputs"]}
assert o["z"]["max_abs"] == "inf" and o["z"]["judged_by"] == "tolerance" and o["z"]["verdict"] is None
assert o["z"]["tolerance"]["source"] == "--atol/--rtol"
PYEOF

# a missing output file is an error, not a pass
rm "$W/bad/a/z.npy"
expect_exit 2 "$CG" compare "$M" --target xnnpack --inputs "$W/in" --outputs-from "$W/bad"
expect_out "no file for output 'z'"

# the target path, run here: xnnpack executes for real, fp32 tolerance
expect_exit 0 "$CG" compare "$M" --target xnnpack --random 3 --seed 7 --task classify
expect_out "top-1 agreement 6/6"; expect_out "verdict: PASS"
expect_exit 0 "$CG" compare "$M" --target xnnpack --random 2 --task segment --threshold 0.1
expect_out "mask IoU 1.000000"

# fp16 profile: the sum of squares of x in [300, 400) overflows fp16 to inf;
# Softmax stays on the CPU (litert-gpu keeps one partition), so y is
# bit-identical to the fp32 reference and is flagged as a silent fallback
# a precision breakdown (fp16 storage: fine in fp32), not a wrong kernel
expect_exit 1 "$CG" compare "$M" --target litert-gpu --random 2 --range x=300,400
expect_out "reduced precision: fp16"; expect_out "atol 0.0025 rtol 0.001"; expect_out "Inf ref 0 target 4"
expect_out "output z: FAIL (precision breakdown)"; expect_out "inf/NaN where the fp64 reference is finite"
expect_out "probably did not run on litert-gpu"
# in range the same path passes within the fp16 tolerance
expect_exit 0 "$CG" compare "$M" --target litert-gpu --random 2 --range x=-1,1
expect_out "output z: PASS (matches"

# outputs dumped by `convgate run` are bit-identical: an fp16 target that
# reports them gets the silent-fallback warning, in JSON too
mkdir -p "$W/dump"
"$CG" run "$M" -i x="$W/in/a/x.npy" -o "$W/dump/a" >/dev/null || fail "convgate run"
mkdir -p "$W/ina" && cp -r "$W/in/a" "$W/ina/"
expect_exit 0 "$CG" compare "$M" --target litert-gpu --inputs "$W/ina" --outputs-from "$W/dump" --json
$PY - "$W/out" <<'PYEOF' || fail "silent fallback JSON"
import json, sys
text = open(sys.argv[1]).read()
env = json.loads(text[text.index("{"):])
r = env["result"]
assert r["reduced_precision"] is True and r["pass"] is True
assert all(o["silent_fallback_suspect"] and o["bit_identical"] for o in r["outputs"])
assert len(env["warnings"]) == 2 and env["status"] == "ok"
PYEOF

finish
