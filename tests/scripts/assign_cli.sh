#!/usr/bin/env bash
# convgate assign end to end: models made with onnx (python3) and profiles
# written here, so the expectations do not move when the shipped profiles
# do. Checks the report order, the boundary ledger (bytes, NHWC and fp16
# conversions), refusal reasons, partition rules, control-flow bodies,
# --dims settings where placement changes with shape, the JSON fields, the
# init failure of a no-fallback target (exit 2), and usage errors.
# Usage: assign_cli.sh CONVGATE SOURCE_DIR
set -u
bin=${1:?convgate binary}
SRC=${2:?source dir}
PY=/usr/bin/python3
if ! "$PY" -c 'import onnx' 2>/dev/null; then
    echo "skip: /usr/bin/python3 has no onnx"
    exit 77
fi
. "$(dirname "${BASH_SOURCE[0]}")/lib/harness.bash"
CG=$bin
T=$tmp

"$PY" - "$T" <<'EOF' || { echo "model generation failed"; exit 1; }
import sys
import onnx
from onnx import helper as h, TensorProto as TP
d = sys.argv[1]
def save(g, name, opset=17):
    m = h.make_model(g, opset_imports=[h.make_opsetid("", opset)])
    m.ir_version = 8
    onnx.save(m, f"{d}/{name}")
# chain: two Relu, an Erf, two Relu, on an NCHW tensor with a symbolic batch
x = h.make_tensor_value_info("x", TP.FLOAT, ["N", 3, 8, 8])
y = h.make_tensor_value_info("y", TP.FLOAT, None)
nodes = [h.make_node("Relu", ["x"], ["t1"], name="r1"),
         h.make_node("Relu", ["t1"], ["t2"], name="r2"),
         h.make_node("Erf", ["t2"], ["t3"], name="erf"),
         h.make_node("Relu", ["t3"], ["t4"], name="r3"),
         h.make_node("Relu", ["t4"], ["y"], name="r4")]
save(h.make_graph(nodes, "chain", [x], [y]), "chain.onnx")
# If whose branches read an outer value
c = h.make_tensor_value_info("c", TP.BOOL, [])
then_g = h.make_graph([h.make_node("Relu", ["t1"], ["a1"], name="then_relu"),
                       h.make_node("Erf", ["a1"], ["ao"], name="then_erf")], "then", [],
                      [h.make_tensor_value_info("ao", TP.FLOAT, None)])
else_g = h.make_graph([h.make_node("Relu", ["t1"], ["bo"], name="else_relu")], "else", [],
                      [h.make_tensor_value_info("bo", TP.FLOAT, None)])
nodes = [h.make_node("Relu", ["x"], ["t1"], name="pre"),
         h.make_node("If", ["c"], ["z"], name="branch", then_branch=then_g, else_branch=else_g),
         h.make_node("Relu", ["z"], ["y"], name="post")]
save(h.make_graph(nodes, "cf", [x, c], [y]), "if.onnx")
EOF

mkprofile() { # mkprofile FILE NAME FALLBACK COMPUTE PARTITION OPS [LIMITS] [LAYOUT]
    cat >"$1" <<EOF
{
  "format_version": 1,
  "name": "$2",
  "runtime": "Test Runtime $2 (made by assign_cli.sh)",
  "version": "0.1",
  "description": "test profile",
  "sources": [{"repo": "convgate/tests", "path": "tests/scripts/assign_cli.sh", "revision": "test"}],
  "fallback": "$3",
  "precision": {"compute": "$4", "accumulate": "fp32"},
  "layout": "${8:-nchw}",
  "partition": $5,
  "limits": ${7:-{\}},
  "not_modelled": ["everything outside this test"],
  "ops": $6
}
EOF
}
P="$T/profiles"
mkdir -p "$P"
mkprofile "$P/nhwc.json" test-xnnpack cpu fp32 '{}' '{"Relu": {}}' '{}' nhwc
mkprofile "$P/gpu.json" test-gpu cpu fp16 '{}' '{"Relu": {}}'
mkprofile "$P/micro.json" micro fail fp32 '{}' '{"Relu": {}}'
mkprofile "$P/big.json" bigpart cpu fp32 '{"min_nodes": 3}' '{"Relu": {}}'
mkprofile "$P/small.json" smalldims cpu fp32 '{}' '{"Relu": {}, "Erf": {}}' '{"max_dim": 4}'

# --- the chain on an NHWC target: report order, crossings, layout conversion
"$CG" assign "$T/chain.onnx" --target test-xnnpack --profiles "$P" --dim N=2 >"$T/out" 2>"$T/err"
rc=$?
[ $rc -eq 0 ] || fail "chain: exit $rc ($(cat "$T/err"))"
head -1 "$T/out" | grep -Eq '^4/5 nodes on test-xnnpack, 1 on CPU$' || fail "residency line first: $(head -1 "$T/out")"
file_matches "$T/out" '^Partitions \(2\):' "two partitions"
file_matches "$T/out" "^  #0 test-xnnpack: 2 nodes: Relu x2" "partition 0 histogram"
file_matches "$T/out" '^      r1, r2$' "partition 0 node names"
file_matches "$T/out" '^Boundaries \(2 crossings' "two crossings"
file_matches "$T/out" "'t2'  #0 test-xnnpack -> CPU  float32 \[2,3,8,8\]  1536 B  layout NHWC->NCHW" "t2 out of the NHWC partition"
file_matches "$T/out" "'t3'  CPU -> #1 test-xnnpack  float32 \[2,3,8,8\]  1536 B  layout NCHW->NHWC" "t3 into it"
file_matches "$T/out" "^  Erf 'erf': op Erf not in test-xnnpack's supported-op list  \[test-xnnpack\]" "refusal reason"
file_matches "$T/out" '^Verdict: partial residency: 4/5 nodes on targets in 2 partitions, 2 boundary crossings, 1 node on the CPU' "verdict"
file_matches "$T/out" 'of reference time inside partitions' "time-weighted verdict"
file_matches "$T/out" '^Prediction for test-xnnpack, not a run: from profile test-xnnpack 0.1' "prediction source"
file_matches "$T/out" '^  - everything outside this test' "not_modelled list"
# sections in the promised order
order=$(grep -nE '^(Partitions|Boundaries|Unsupported|Dropped|Verdict)' "$T/out" | cut -d: -f2 | cut -c1-4 | tr '\n' ' ')
[ "$order" = "Part Boun Unsu Drop Verd " ] || fail "section order: $order"

# --- fp16 target: dtype conversions at its crossings, then the NHWC target next
"$CG" assign "$T/chain.onnx" --target test-gpu,test-xnnpack --profiles "$P" >"$T/out" 2>"$T/err" ||
    fail "fp16: exit $? ($(cat "$T/err"))"
file_matches "$T/out" '^4/5 nodes on test-gpu, 0/5 nodes on test-xnnpack, 1 on CPU' "priority: the first target takes the Relus"
file_matches "$T/out" "'t2'  #0 test-gpu -> CPU  float32 \[1,3,8,8\]  768 B  dtype float16->float32" "fp16 out"
file_matches "$T/out" "'t3'  CPU -> #1 test-gpu  float32 \[1,3,8,8\]  768 B  dtype float32->float16" "fp16 in"
file_matches "$T/out" "^Dims: N=1 \\(batch default\\)" "the batch dim's size is stated"

# --- JSON
"$CG" assign "$T/chain.onnx" --target test-xnnpack --profiles "$P" --json >"$T/json" 2>"$T/err" ||
    fail "json: exit $?"
"$PY" - "$T/json" <<'EOF' || fail "JSON fields"
import json, sys
j = json.load(open(sys.argv[1]))["result"]
assert j["target"] == "test-xnnpack", j["target"]
assert [t["name"] for t in j["targets"]] == ["test-xnnpack"]
assert j["targets"][0]["prediction"] is True and j["targets"][0]["not_modelled"]
assert j["nodes_total"] == 5 and j["nodes_on_target"] == 4 and j["nodes_on_cpu"] == 1
assert [p["nodes"] for p in j["partitions"]] == [["r1", "r2"], ["r3", "r4"]], j["partitions"]
assert j["partitions"][0]["target"] == "test-xnnpack" and j["partitions"][0]["id"] == 0
b = {x["tensor"]: x for x in j["boundaries"]}
assert set(b) == {"t2", "t3"}, b
assert b["t2"]["from"] == 0 and b["t2"]["to"] == -1 and b["t2"]["bytes"] == 768
assert b["t2"]["dtype"] == "float32" and b["t2"]["shape"] == [1, 3, 8, 8]
assert b["t2"]["layout_conversion"] is True and b["t2"]["dtype_conversion"] is False
assert j["unsupported"] == [{"node": "erf", "op_type": "Erf", "target": "test-xnnpack",
                             "reason": "op Erf not in test-xnnpack's supported-op list"}], j["unsupported"]
assert j["dropped"] == []
assert j["verdict"]["kind"] == "partial" and j["verdict"]["estimate"] is None
assert "partial residency" in j["verdict"]["text"]
EOF

# --- partition rules: min_nodes 3 drops both 2-node partitions
"$CG" assign "$T/chain.onnx" --target bigpart --profiles "$P" >"$T/out" 2>&1 || fail "min_nodes: exit $?"
file_matches "$T/out" '^0/5 nodes on bigpart, 5 on CPU' "min_nodes residency"
file_matches "$T/out" '^Dropped by partition rules \(4\):' "four dropped"
file_matches "$T/out" "^  Relu 'r1': min_nodes: its partition has 2 nodes, bigpart needs >= 3  \[bigpart\]" "min_nodes rule"
file_matches "$T/out" '^Verdict: no residency' "nothing placed"

# --- no fallback: the report, then exit 2 naming the first refused node
"$CG" assign "$T/chain.onnx" --target micro --profiles "$P" >"$T/out" 2>"$T/err"
rc=$?
[ $rc -eq 2 ] || fail "fallback fail: exit $rc, expected 2"
grep -Fxq "convgate assign: micro: node 'erf' (Erf) is not supported and Test Runtime micro has no fallback: op Erf not in micro's supported-op list" "$T/err" ||
    fail "init failure message: $(cat "$T/err")"
file_matches "$T/out" '^Verdict: init failure' "init failure verdict"

# --- shape settings: max_dim 4 refuses everything at N=8, nothing at N=2
"$CG" assign "$T/chain.onnx" --target smalldims --profiles "$P" --dims N=2 --dims N=8 \
    >"$T/out" 2>"$T/err" || fail "--dims: exit $? ($(cat "$T/err"))"
head -1 "$T/out" | grep -q '^0/5 nodes on smalldims' || fail "N=2 has dims of 8 (H, W): $(head -1 "$T/out")"
mkprofile "$P/small.json" smalldims cpu fp32 '{}' '{"Relu": {}, "Erf": {}}' '{"max_dim": 8}'
"$CG" assign "$T/chain.onnx" --target smalldims --profiles "$P" --dims N=2 --dims N=9 \
    >"$T/out" 2>"$T/err" || fail "--dims: exit $? ($(cat "$T/err"))"
file_matches "$T/out" '^5/5 nodes on smalldims, 0 on CPU' "N=2 fits"
file_matches "$T/out" '^Verdict: full residency: all 5 nodes on smalldims in one partition' "full residency"
file_matches "$T/out" '^Shape settings \(2' "settings section"
file_matches "$T/out" '^  N=2: 5/5 nodes on smalldims, 0 on CPU; 1 partition, 0 crossings' "N=2 line"
file_matches "$T/out" '^  N=9: 0/5 nodes on smalldims, 5 on CPU; 0 partitions, 0 crossings' "N=9 line"
file_matches "$T/out" '^Nodes that change owner with shape \(5\):' "five owner changes"
file_matches "$T/out" "^  Relu 'r1': N=2: smalldims; N=9: CPU \(.*9.*8" "r1 changes owner, with the reason"
"$CG" assign "$T/chain.onnx" --target smalldims --profiles "$P" --dims N=2 --dims N=9 --json \
    >"$T/json" 2>"$T/err" || fail "--dims --json: exit $?"
"$PY" - "$T/json" <<'EOF' || fail "JSON shape settings"
import json, sys
j = json.load(open(sys.argv[1]))["result"]
s = j["shape_settings"]
assert [x["dims"] for x in s] == [{"N": 2}, {"N": 9}], s
assert [x["nodes_per_target"]["smalldims"] for x in s] == [5, 0]
ch = j["owner_changes"]
assert len(ch) == 5 and ch[0]["node"] == "r1"
assert [o["owner"] for o in ch[0]["owners"]] == ["smalldims", "cpu"] and ch[0]["owners"][1]["reason"]
EOF

# --- control flow: the If stays on the CPU, its branches are assigned on their own
"$CG" assign "$T/if.onnx" --target test-xnnpack --profiles "$P" >"$T/out" 2>"$T/err" ||
    fail "if: exit $? ($(cat "$T/err"))"
file_matches "$T/out" '^2/3 nodes on test-xnnpack, 1 on CPU' "If main graph"
file_matches "$T/out" "^  If 'branch': control flow: If stays on the CPU" "If reason"
file_matches "$T/out" "'t1'  #0 test-xnnpack -> CPU" "the branch's outer read is a crossing"
file_matches "$T/out" '^Control-flow bodies \(2' "bodies listed"
file_matches "$T/out" '^  branch/then_branch: 1/2 nodes on test-xnnpack, 1 on CPU' "then body"
file_matches "$T/out" '^  branch/else_branch: 1/1 nodes on test-xnnpack, 0 on CPU' "else body"

# --- usage errors
# a --dims setting binds named dims: a --shape key is refused by name (it
# was accepted and left the setting without a symbol: SIGSEGV)
"$CG" assign "$T/chain.onnx" --target smalldims --profiles "$P" \
    --dims 'x[0]=2,x[1]=3,x[2]=8,x[3]=8' >/dev/null 2>"$T/err"
rc=$?
[ $rc -eq 2 ] && grep -qF "'x[0]' is not a symbolic dim" "$T/err" ||
    fail "--dims with a --shape key: exit $rc ($(cat "$T/err"))"
"$CG" assign "$T/chain.onnx" --profiles "$P" >/dev/null 2>"$T/err"
[ $? -eq 2 ] && grep -q -- '--target is required' "$T/err" || fail "missing --target"
"$CG" assign "$T/chain.onnx" --target nosuch --profiles "$P" >/dev/null 2>"$T/err"
[ $? -eq 2 ] && grep -q "nosuch" "$T/err" && grep -q "test-xnnpack" "$T/err" || fail "unknown target: $(cat "$T/err")"
"$CG" assign "$T/chain.onnx" --target test-xnnpack --dim N=x --profiles "$P" >/dev/null 2>"$T/err"
[ $? -eq 2 ] && grep -q -- "--dim N=x" "$T/err" || fail "bad --dim: $(cat "$T/err")"
"$CG" assign "$T/chain.onnx" --target test-xnnpack,test-xnnpack --profiles "$P" >/dev/null 2>"$T/err"
[ $? -eq 2 ] && grep -q "given twice" "$T/err" || fail "duplicate target: $(cat "$T/err")"
"$CG" assign "$T/nosuch.onnx" --target test-xnnpack --profiles "$P" >/dev/null 2>"$T/err"
[ $? -eq 2 ] || fail "missing model"

# --- the shipped example against a shipped profile (exercises real profiles)
if [ -f "$SRC/examples/tiny_cnn.onnx" ]; then
    "$CG" assign "$SRC/examples/tiny_cnn.onnx" --target ort-xnnpack --json >"$T/json" 2>"$T/err" ||
        fail "tiny_cnn: exit $? ($(cat "$T/err"))"
    "$PY" -c 'import json,sys; j=json.load(open(sys.argv[1]))["result"]; assert j["nodes_total"]==j["nodes_on_target"]+j["nodes_on_cpu"]' "$T/json" ||
        fail "tiny_cnn JSON"
fi

finish
