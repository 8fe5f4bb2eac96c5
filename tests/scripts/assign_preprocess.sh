#!/usr/bin/env bash
# The graph each runtime partitions, end to end (docs/placement.md): assign,
# gate and profile place the ORT EP targets on ONNX Runtime's Level-1 graph,
# report the nodes its optimizations removed apart from the CPU's share (on
# the LiteRT targets, naming the converter that removed them), and never
# count an Identity on a weight or a Constant node as unsupported; the
# executing xnnpack target places the graph convgate's runtime runs, and
# openvino what OpenVINO's ONNX frontend translates.
# Models: tests/data/lower (tools/make_lower_tests.py); resnet50 from $CG_ZOO
# when it is there (torchvision's export carries 47 Identity nodes on
# weights). Usage: assign_preprocess.sh CONVGATE SOURCE_DIR
set -u
bin=${1:?convgate binary}
SRC=${2:?source dir}
D="$SRC/tests/data/lower"
. "$(dirname "${BASH_SOURCE[0]}")/lib/harness.bash"
CG=$bin
T=$tmp

# torch_like: Identity on the conv weight, a Constant, Conv+BN, Dropout, MatMul+Add
for t in coreml-mlprogram nnapi coreml-nn; do
    "$CG" assign "$D/torch_like.onnx" --target "$t" --no-time >"$T/a.txt" 2>&1 ||
        fail "assign torch_like on $t: exit $?"
    file_matches "$T/a.txt" "^Graph partitioned: preprocess 'ort-basic': 10 nodes of the file -> 5" "$t: the ORT-basic graph"
    file_matches "$T/a.txt" "removed by ONNX Runtime's basic graph optimizations: 6 \(" "$t: removed count"
    file_lacks "$T/a.txt" "^  (Identity|Constant|BatchNormalization|Dropout) '" "$t: a removed node listed as unsupported"
done
file_matches "$T/a.txt" "Identity x1" "the removed Identity by op"

# #9: a PyTorch export's Constant node failed TFLite Micro and --require-full
# on NNAPI; the same graph is fully resident on both now
"$CG" assign "$D/torch_like.onnx" --target tflm --no-time >"$T/c.txt" 2>&1 ||
    fail "assign torch_like on tflm: exit $?"
file_matches "$T/c.txt" "^5/5 nodes on tflm, 0 on CPU" "tflm: the Constant is no op, full residency"
file_matches "$T/c.txt" "removed by the ONNX-to-TFLite converter: 5 \(.*Constant x1" "tflm: the Constant removed by the converter"
"$CG" gate "$D/torch_like.onnx" --target nnapi --require-full >"$T/c.txt" 2>&1 ||
    fail "gate --require-full on nnapi with a Constant node: exit $?"
file_matches "$T/c.txt" "^VERDICT: PASS .*5/5 nodes on nnapi" "nnapi: --require-full passes with the Constant"

"$CG" assign "$D/torch_like.onnx" --target nnapi --no-time --json >"$T/a.json" 2>&1 ||
    fail "assign --json: exit $?"
file_matches "$T/a.json" '"removed_by_runtime": 6' "JSON removed_by_runtime"
file_matches "$T/a.json" '"preprocess": \{' "JSON preprocess report"
file_matches "$T/a.json" '"nodes_in_file": 10' "JSON nodes_in_file"
file_matches "$T/a.json" '"android_api": 29' "JSON target parameters"

# the target parameter: the default is printed, @API sets it
"$CG" assign "$D/torch_like.onnx" --target nnapi --no-time >"$T/p.txt" 2>&1
file_matches "$T/p.txt" "parameters: android_api=29 \(the profile's default\)" "nnapi's default API level"
"$CG" assign "$D/torch_like.onnx" --target nnapi@27 --no-time >"$T/p.txt" 2>&1 ||
    fail "nnapi@27: exit $?"
file_matches "$T/p.txt" "nodes on nnapi@27" "the bound target's name"
file_matches "$T/p.txt" "Conv needs android_api >= 28 on nnapi@27" "Conv below feature level 2"
"$CG" assign "$D/torch_like.onnx" --target nnapi@26 >"$T/p.txt" 2>&1 && fail "nnapi@26 accepted"
file_matches "$T/p.txt" "android_api must be an integer in \[27, 35\]" "parameter range"

# targets of different runtimes partition different graphs
"$CG" assign "$D/torch_like.onnx" --target nnapi,litert-gpu --no-time >"$T/m.txt" 2>&1 &&
    fail "nnapi with litert-gpu accepted"
file_matches "$T/m.txt" "partition different graphs" "mixed preprocess refused"

# 'lower' itself
"$CG" lower "$D/fold.onnx" --target coreml-mlprogram >"$T/l.txt" 2>&1 || fail "lower: exit $?"
file_matches "$T/l.txt" "main graph: 9 nodes -> 2" "lower: node counts"
file_matches "$T/l.txt" "ConstantFolding x" "lower: by transformation"
"$CG" lower "$D/fold.onnx" --preprocess ort-basic -o "$T/fold_ort.onnx" >/dev/null 2>&1 ||
    fail "lower -o: exit $?"
"$CG" check "$T/fold_ort.onnx" >/dev/null 2>&1 || fail "the written ORT-basic graph does not check"

# on the LiteRT targets the converter removed them, and the reports say so
"$CG" assign "$D/torch_like.onnx" --target litert-gpu --no-time >"$T/lt.txt" 2>&1 ||
    fail "assign torch_like on litert-gpu: exit $?"
file_matches "$T/lt.txt" "removed by the ONNX-to-TFLite converter: [1-9]" "litert-gpu: the converter named"
file_lacks "$T/lt.txt" "ONNX Runtime|graph optimizations" "litert-gpu: not the runtime's optimizations"
"$CG" assign "$D/torch_like.onnx" --target litert-gpu --no-time --json >"$T/lt.json" 2>&1 ||
    fail "assign --json torch_like on litert-gpu: exit $?"
file_matches "$T/lt.json" '"removed_by": "the ONNX-to-TFLite converter"' "litert-gpu: json removed_by"

# gate 2 states the graph it placed
"$CG" gate "$D/torch_like.onnx" --target coreml-mlprogram >"$T/g.txt" 2>&1
file_matches "$T/g.txt" "graph partitioned: preprocess 'ort-basic'; removed by ONNX Runtime's basic graph optimizations: 6" "gate 2 line"

# the per-node views draw the file's 10 nodes with the placement of the
# graph placed (5 nodes) mapped back to them
for cmd in gate assign; do
    rm -rf "$T/me"
    bar=()
    [ "$cmd" = gate ] && bar=(--min-coverage 0) # the views are tested, not gate 2's bar
    "$CG" "$cmd" "$D/torch_like.onnx" --target coreml-mlprogram --html "$T/v.html" \
        --model-explorer "$T/me" "${bar[@]}" >"$T/v.txt" 2>&1 || fail "$cmd --html --model-explorer: exit $?"
    /usr/bin/python3 - "$T/me/convgate_owner.json" >"$T/o.txt" 2>&1 <<'PY' || fail "$cmd: owner overlay"
import json, sys
nodes = json.load(open(sys.argv[1]))["torch_like"]["results"]
print(len(nodes), sorted(nodes))
PY
    # the file's nodes (what the user opens in Model Explorer), mapped back
    # from the placed graph's through the lowering's origins
    file_matches "$T/o.txt" "^10 \['add', 'bn', 'conv'" "$cmd: the owner overlay keys the file's nodes"
    file_lacks "$T/o.txt" "MatMulAddFusion" "$cmd: a runtime-only node name in the overlay"
done

# the executing xnnpack target places the graph convgate's runtime runs:
# the Identity on the weight and the Constant are folded when it is built
"$CG" assign "$D/torch_like.onnx" --target xnnpack --no-time >"$T/x.txt" 2>&1 ||
    fail "assign torch_like on xnnpack: exit $?"
file_matches "$T/x.txt" "^Graph partitioned: preprocess 'convgate-init': 10 nodes of the file -> 8" "xnnpack: the runtime's graph"
file_matches "$T/x.txt" "removed by convgate's runtime \(constant folding at init\): 2 \(" "xnnpack: folded at init"
file_lacks "$T/x.txt" "^  (Identity|Constant) '" "xnnpack: a folded node listed as unsupported"

# openvino places what its ONNX frontend translates: no op for the Constant,
# the Identity of a weight, the Dropout in inference, the one-input Sum; the
# Identity of a computed value stays (src/lower/openvino_fe.c)
"$CG" assign "$D/openvino_fe.onnx" --target openvino --no-time >"$T/ov.txt" 2>&1 ||
    fail "assign openvino_fe on openvino: exit $?"
file_matches "$T/ov.txt" "^Graph partitioned: preprocess 'openvino-onnx-fe': 8 nodes of the file -> 4" "openvino: the frontend's graph"
file_matches "$T/ov.txt" "removed by OpenVINO's ONNX frontend: 4 \(Constant x1, Dropout x1, Identity x1, Sum x1\)" "openvino: removed by the frontend"
file_matches "$T/ov.txt" "^4/4 nodes on openvino, 0 on CPU" "openvino: residency"
# a Dropout in training mode fails the conversion, and OpenVINO has no fallback
"$CG" assign "$D/openvino_train.onnx" --target openvino --no-time >"$T/ovt.txt" 2>"$T/ovt.err"
rc=$?
[ "$rc" = 2 ] || fail "openvino_train: exit $rc, want 2 (init failure)"
file_matches "$T/ovt.err" "Dropout.*no fallback" "openvino: the training Dropout is a load failure"
file_matches "$T/ovt.txt" "training_mode" "openvino: the refusal names the rule"

# nodes out of topological order: sorted with a warning, then placed
"$CG" check "$D/unsorted.onnx" >"$T/c.txt" 2>&1 || fail "unsorted: check exit $?"
file_matches "$T/c.txt" "warning \[topo-order\].*sorted them" "the topo-order warning"
"$CG" assign "$D/unsorted.onnx" --target nnapi --no-time >"$T/u.txt" 2>&1 || fail "unsorted: assign exit $?"

# resnet50 (torchvision): its 47 Identity nodes never reach the CPU
zoo="${CG_ZOO:-}"
if [ -n "$zoo" ] && [ -f "$zoo/resnet50.onnx" ]; then
    "$CG" assign "$zoo/resnet50.onnx" --target coreml-mlprogram --no-time >"$T/r.txt" 2>&1 ||
        fail "resnet50: exit $?"
    file_matches "$T/r.txt" "169 nodes of the file -> 122" "resnet50: 169 -> 122"
    file_matches "$T/r.txt" "removed by ONNX Runtime's basic graph optimizations: 47 \(Identity x47\)" "resnet50: 47 Identity removed"
    file_matches "$T/r.txt" "^121/122 nodes on coreml-mlprogram, 1 on CPU" "resnet50: residency"
    file_lacks "$T/r.txt" "^  Identity '" "resnet50: an Identity on the CPU"
    "$CG" assign "$zoo/resnet50.onnx" --target xnnpack --no-time >"$T/rx.txt" 2>&1 ||
        fail "resnet50 on xnnpack: exit $?"
    file_matches "$T/rx.txt" "removed by convgate's runtime \(constant folding at init\): 47 \(Identity x47\)" "resnet50 on xnnpack: 47 Identity folded"
    file_matches "$T/rx.txt" "^122/122 nodes on xnnpack, 0 on CPU" "resnet50 on xnnpack: residency"
    "$CG" assign "$zoo/resnet50.onnx" --target openvino --no-time >"$T/ro.txt" 2>&1 ||
        fail "resnet50 on openvino: exit $?"
    file_matches "$T/ro.txt" "removed by OpenVINO's ONNX frontend: 47 \(Identity x47\)" "resnet50 on openvino: 47 Identity removed"
    file_matches "$T/ro.txt" "^122/122 nodes on openvino, 0 on CPU" "resnet50 on openvino: residency"
else
    echo "note: \$CG_ZOO/resnet50.onnx not present; the resnet50 case did not run"
fi

finish
