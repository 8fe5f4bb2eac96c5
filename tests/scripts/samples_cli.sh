#!/usr/bin/env bash
# One samples module and one report layer, end to end: every command that
# feeds a model reads the same input folders, makes the same random inputs
# and names files the same way; tolerances are refused the same way; JSON
# is one envelope with one number and string encoder. Each block is a
# divergence or a finding of issue #8 that failed before the consolidation.
# Models are made by /usr/bin/python3 (onnx + numpy); without them: skip (77).
# Usage: samples_cli.sh CONVGATE SOURCE_DIR
set -u
bin=${1:?convgate binary}
SRC=${2:?source dir}
PY=/usr/bin/python3
$PY -c "import onnx, numpy" 2>/dev/null || { echo "skip: python3 onnx/numpy missing"; exit 77; }
. "$(dirname "${BASH_SOURCE[0]}")/lib/harness.bash"
CG=$bin
T=$tmp
# json FILE 'python over env' : the envelope of FILE satisfies the expression
json() { $PY -c 'import json, sys; env = json.load(open(sys.argv[1])); r = env["result"]; sys.exit(0 if eval(sys.argv[2]) else 1)' "$1" "$2" || fail "JSON $1: $2"; }

# Models:
#  two.onnx   x[N,4] -> "a:0" = x + 1, "a/0" = x * 2  (names that meet on one file)
#  sq.onnx    x[2,8] -> z = ReduceMean(x*x)             (overflows fp16 for |x| >= 256)
#  ids.onnx   ids:int64[1,5] -> e = Gather(table[10,3], ids)   (token ids)
#  odd.onnx   x[2] -> the output named "o\xff\xfe" (not UTF-8)
cat >"$T/mk.py" <<'PYEOF'
import os, sys
import numpy as np
import onnx
from onnx import helper, numpy_helper, TensorProto as TP
d = sys.argv[1]
def save(m, name):
    onnx.save(m, os.path.join(d, name))
x = helper.make_tensor_value_info("x", TP.FLOAT, ["N", 4])
g = helper.make_graph(
    [helper.make_node("Add", ["x", "one"], ["a:0"]), helper.make_node("Mul", ["x", "two"], ["a/0"])],
    "two", [x],
    [helper.make_tensor_value_info("a:0", TP.FLOAT, ["N", 4]),
     helper.make_tensor_value_info("a/0", TP.FLOAT, ["N", 4])],
    [numpy_helper.from_array(np.array(1, np.float32), "one"),
     numpy_helper.from_array(np.array(2, np.float32), "two")])
save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]), "two.onnx")
x = helper.make_tensor_value_info("x", TP.FLOAT, [2, 8])
g = helper.make_graph(
    [helper.make_node("Mul", ["x", "x"], ["sq"]),
     helper.make_node("ReduceMean", ["sq"], ["z"], axes=[1], keepdims=1)],
    "sq", [x], [helper.make_tensor_value_info("z", TP.FLOAT, [2, 1])])
save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]), "sq.onnx")
ids = helper.make_tensor_value_info("ids", TP.INT64, [1, 5])
g = helper.make_graph(
    [helper.make_node("Gather", ["table", "ids"], ["e"], axis=0)], "ids", [ids],
    [helper.make_tensor_value_info("e", TP.FLOAT, [1, 5, 3])],
    [numpy_helper.from_array(np.arange(30, dtype=np.float32).reshape(10, 3), "table")])
save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]), "ids.onnx")
# an input whose dims have no names (as Silero VAD's [?, ?]): the Reshape
# needs 64 values, so the 1x1 a missing size defaults to fails
x = helper.make_tensor_value_info("x", TP.FLOAT, [None, None])
g = helper.make_graph([helper.make_node("Reshape", ["x", "shape"], ["r"])], "unnamed", [x],
                      [helper.make_tensor_value_info("r", TP.FLOAT, [1, 64])],
                      [numpy_helper.from_array(np.array([1, 64], np.int64), "shape")])
save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]), "unnamed.onnx")
x = helper.make_tensor_value_info("x", TP.FLOAT, [2])
g = helper.make_graph([helper.make_node("Relu", ["x"], ["oXX"])], "odd", [x],
                      [helper.make_tensor_value_info("oXX", TP.FLOAT, [2])])
raw = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]).SerializeToString()
open(os.path.join(d, "odd.onnx"), "wb").write(raw.replace(b"oXX", b"o\xff\xfe"))
# input folders: flat (one sample), numbered, and sets
rs = np.random.RandomState(5)
os.makedirs(os.path.join(d, "flat"))
np.save(os.path.join(d, "flat", "x.npy"), rs.uniform(-1, 1, (3, 4)).astype(np.float32))
os.makedirs(os.path.join(d, "numbered"))
for n in range(2):
    np.save(os.path.join(d, "numbered", "x_%d.npy" % n), rs.uniform(-1, 1, (2, 4)).astype(np.float32))
for s in ("s1", "s2"):
    os.makedirs(os.path.join(d, "sets", s))
    np.save(os.path.join(d, "sets", s, "x.npy"), rs.uniform(-1, 1, (2, 4)).astype(np.float32))
os.makedirs(os.path.join(d, "big", "s"))
np.save(os.path.join(d, "big", "s", "x.npy"), rs.uniform(300, 400, (2, 8)).astype(np.float32))
PYEOF
$PY "$T/mk.py" "$T" || { echo "model generation failed"; exit 1; }
TWO=$T/two.onnx

# --- one input-folder rule: every command reads the same three layouts -----------------
for layout in flat numbered sets; do
    expect_cg 0 compare "$TWO" --target xnnpack --inputs "$T/$layout"
    expect_out "verdict: PASS"
    expect_cg 0 dump-ref "$TWO" --inputs "$T/$layout" -o "$T/g_$layout"
    [ -f "$T/g_$layout/manifest.json" ] || fail "dump-ref --inputs $layout wrote no golden set"
    expect_cg 0 gate "$TWO" --target xnnpack --inputs "$T/$layout"
    expect_cg 0 bisect "$TWO" --target xnnpack --inputs "$T/$layout"
done
expect_out "no intermediate tensor diverges"
expect_cg 0 run "$TWO" --inputs "$T/flat"
expect_out "output 'a:0': float32 [3,4]"
expect_cg 2 run "$TWO" --inputs "$T/sets"
expect_err "holds 2 samples: pick one with --sample N or NAME"
expect_cg 0 run "$TWO" --inputs "$T/sets" --sample s2
# a flat set is named after its folder; numbered sets by N
json_file=$T/flat.json
"$CG" verify "$TWO" --golden "$T/g_flat" --json >"$json_file" 2>"$T/err" || fail "verify flat golden"
json "$json_file" 'r["sets"][0]["name"] == "flat" and r["pass"] is True'
"$CG" verify "$TWO" --golden "$T/g_numbered" --json >"$json_file" 2>"$T/err" || fail "verify numbered golden"
json "$json_file" '[s["name"] for s in r["sets"]] == ["0", "1"]'

# --- one output-name-to-file rule: run -o then compare --outputs-from pairs right ------
# "a:0" and "a/0" both keep to "a_0": the second is a_0_2, by the same rule on
# both sides, so the pairing is exact (before: compare read a_0.npy for both)
expect_cg 0 run "$TWO" --inputs "$T/flat" -o "$T/dev/deep/er"
[ -f "$T/dev/deep/er/a_0.npy" ] && [ -f "$T/dev/deep/er/a_0_2.npy" ] ||
    fail "-o made its parent folders and wrote a_0.npy and a_0_2.npy"
# --outputs-from needs no --target (before: "--target is required")
expect_cg 0 compare "$TWO" --inputs "$T/flat" --outputs-from "$T/dev/deep/er"
expect_out "output a/0: PASS"; expect_out "verdict: PASS"
cp "$T/dev/deep/er/a_0.npy" "$T/dev/deep/er/a_0_2.npy"
expect_cg 1 compare "$TWO" --inputs "$T/flat" --outputs-from "$T/dev/deep/er"
expect_out "output a/0: FAIL"
expect_cg 0 compare --help
expect_out "input:0 -> input_0.npy"

# --- one random-input policy -------------------------------------------------------------
# token ids are never negative by default: integers are 0 or 1, documented
expect_cg 0 run "$T/ids.onnx" --random --json
json "$T/out" 'r["outputs"][0]["min"] >= 0 and r["outputs"][0]["max"] <= 5'
expect_cg 0 run --help
expect_out "integers 0 or 1"
# --range on every command that feeds a model, per input or for all
expect_cg 0 run "$T/ids.onnx" --random --range ids=9,9 --json
json "$T/out" 'r["outputs"][0]["min"] == 27 and r["outputs"][0]["max"] == 29'
for cmd in "compare --target xnnpack" "gate --target xnnpack --min-coverage 0" \
           "bisect --target xnnpack" "profile --runs 1" "assign --target xnnpack"; do
    expect_cg 0 $cmd "$T/ids.onnx" --range ids=2,4
    expect_cg 2 $cmd "$T/ids.onnx" --range idz=2,4
    expect_err "--range idz: the model has no input of that name; its inputs are: ids"
done
expect_cg 0 dump-ref "$T/ids.onnx" --random 1 --range 9,9 -o "$T/g_ids"
# the same seed gives the same inputs to run, dump-ref (sample 0) and gate
"$CG" run "$TWO" --random --seed 11 --dim N=2 -o "$T/r11" >/dev/null 2>&1 || fail "run --seed 11"
expect_cg 0 dump-ref "$TWO" --random 1 --seed 11 --dim N=2 -o "$T/g11"
cmp -s "$T/r11/a_0.npy" "$T/g11/random-0/outputs/a_0.npy" || fail "run and dump-ref sample 0 differ"
# an unknown --dim symbol is an error naming the model's (before: ignored)
for cmd in "run --random" "compare --target xnnpack" "gate --target xnnpack" \
           "bisect --target xnnpack" "profile --runs 1" "assign --target xnnpack"; do
    expect_cg 2 $cmd "$TWO" --dim n=2
    expect_err "--dim n: no input has a dim of that name; the model's symbolic dims are: N"
done

# --shape NAME=DxD... sizes an input whose dims have no names, everywhere --dim is
U="$T/unnamed.onnx"
expect_cg 1 run "$U" --random
expect_cg 0 run "$U" --random --shape x=2x32 --json
json "$T/out" 'r["outputs"][0]["shape"] == [1, 64]'
for cmd in "compare --target xnnpack" "gate --target xnnpack --min-coverage 0" \
           "bisect --target xnnpack" "profile --runs 1" "assign --target xnnpack" "noise"; do
    expect_cg 0 $cmd "$U" --shape x=4x16
done
expect_cg 0 dump-ref "$U" --random 1 --shape x=8x8 -o "$T/g_unnamed"
expect_cg 2 run "$U" --random --shape y=2x32
expect_err "--shape y: the model has no input of that name; its inputs are: x"
expect_cg 2 run "$U" --random --shape x=2x4x8
expect_err "--shape x: 3 dims given, but input 'x' has rank 2"
expect_cg 2 run "$U" --random --shape x=0x64
expect_err "--shape x: dim 0 is '0'"
expect_cg 2 run "$TWO" --random --shape x=2x5
expect_err "--shape x: dim 1 is 4 in the model, not 5"
expect_cg 0 run "$TWO" --random --shape x=3x4 --json
json "$T/out" 'r["outputs"][0]["shape"] == [3, 4]'

# --- tolerance files: one parser, a typo refused everywhere ---------------------------------
echo '{"outputs": {"a:O": {"atol": 1}}}' >"$T/typo.json"
expect_cg 2 compare "$TWO" --target xnnpack --inputs "$T/sets" --tol "$T/typo.json"
expect_err "the model has no output 'a:O'"
# before: verify ignored the typo and passed
expect_cg 2 verify "$TWO" --golden "$T/g_sets" --tol "$T/typo.json"
expect_err "the model has no output 'a:O'"

# --- a golden set covers every model output (before: verify passed a partial one) ---------
cp -r "$T/g_sets" "$T/g_part"
$PY - "$T/g_part/manifest.json" <<'PYEOF'
import json, sys
m = json.load(open(sys.argv[1]))
for s in m["sets"]:
    s["outputs"] = [o for o in s["outputs"] if o["name"] != "a/0"]
json.dump(m, open(sys.argv[1], "w"))
PYEOF
# and the missing output is wrong by 1000 on the device
for s in s1 s2; do
    "$CG" run "$TWO" -i "x=$T/sets/$s/x.npy" -o "$T/dev2/$s" >/dev/null 2>&1
    $PY -c 'import numpy as np, sys; p = sys.argv[1]; np.save(p, np.load(p) + 1000)' "$T/dev2/$s/a_0_2.npy"
done
expect_cg 2 verify "$TWO" --golden "$T/g_part" --outputs-from "$T/dev2"
expect_err "golden set 's1' has no output 'a/0' of the model"
expect_cg 2 gate "$TWO" --target xnnpack --golden "$T/g_part"
expect_err "has no output 'a/0'"

# --- JSON: one envelope, inf encoded, never a dropped key ------------------------------------
# gate --json: the fp16 sum of squares overflows: max_abs is inf (before: the key was dropped)
expect_cg 1 gate "$T/sq.onnx" --target litert-gpu --inputs "$T/big" --json "$T/gate.json"
json "$T/gate.json" 'env["command"] == "gate" and env["status"] == "fail" and env["exit_code"] == 1'
$PY -c 'import json, sys; o = json.load(open(sys.argv[1])); o = o.get("result", o)["matches"]["outputs"][0]; sys.exit(0 if o.get("max_abs") == "inf" else 1)' "$T/gate.json" ||
    fail "gate --json: max_abs of the overflowing output is not \"inf\""
# an unwritable --json PATH fails before the gate runs (before: after the whole gate)
touch "$T/file"
expect_cg 2 gate "$T/sq.onnx" --target litert-gpu --json "$T/file/report.json"
expect_err "--json $T/file/report.json"
grep -q "GATE 1" "$T/out" && fail "gate ran before its unwritable --json failed"
# ...and a writable one in missing folders is made
expect_cg 1 gate "$T/sq.onnx" --target litert-gpu --random 1 --range 300,400 --json "$T/j/k/g.json"
[ -f "$T/j/k/g.json" ] || fail "--json PATH: folders not made"
# errors print JSON too when --json is given
expect_cg 2 compare "$TWO" --target nosuch --json
json "$T/out" 'env["status"] == "error" and env["exit_code"] == 2 and r is None and "nosuch" in env["errors"][0]["message"]'
expect_cg 2 run "$T/nosuch.onnx" --json
json "$T/out" 'env["command"] == "run" and env["status"] == "error" and len(env["errors"]) == 1'
expect_cg 0 check "$TWO" --json
json "$T/out" 'env["command"] == "check" and env["status"] == "ok" and r["ok"] is True'
for cmd in "inspect" "targets"; do
    "$CG" $cmd $([ "$cmd" = inspect ] && echo "$TWO") --json >"$T/out" 2>"$T/err" || fail "$cmd --json"
    json "$T/out" 'set(env) == {"command", "version", "status", "exit_code", "errors", "warnings", "result"}'
done
# a name that is not UTF-8 is escaped as \xNN, never dropped (before: run dropped
# "name", assign --json failed)
expect_cg 0 run "$T/odd.onnx" --random --json
json "$T/out" 'r["outputs"][0]["name"] == "o\\xFF\\xFE"'
expect_cg 0 assign "$T/odd.onnx" --target xnnpack --json
json "$T/out" 'env["status"] == "ok" and r is not None'
grep -qF 'o\\xFF\\xFE' "$T/out" || fail "assign --json: escaped name missing"

finish
