#!/usr/bin/env bash
# If/Loop/Scan placed per profile: a control-flow node goes to a target whose
# profile lists the op, with its subgraphs, when every node in them passes
# the same rules (OpenVINO's ONNX frontend translates If); otherwise it stays
# on the CPU and the reason names the op or the first subgraph node refused.
# Models: tests/data/gate2/if_ok.onnx (branches Relu / Neg) and if_det.onnx
# (a Det, which the frontend lacks, in the else branch), written by
# tools/make_gate2_cases.py (branch gate2).
# Usage: control_flow_place.sh CONVGATE SOURCE_DIR
set -u
bin=${1:?convgate binary}
SRC=${2:?source dir}
. "$(dirname "${BASH_SOURCE[0]}")/lib/harness.bash"
D=$SRC/tests/data/gate2
run_named if_ok 0 assign "$D/if_ok.onnx" --target openvino
file_matches "$tmp/if_ok.out" '^4/4 nodes on openvino, 0 on CPU' "the If goes to openvino with its branches"
run_named if_det 2 assign "$D/if_det.onnx" --target openvino
file_matches "$tmp/if_det.out" "control flow: If stays on the CPU \(subgraph 'else_branch': Det 'else_det': op Det not in" "a branch op the frontend lacks keeps it on the CPU"
file_matches "$tmp/if_det.err" "If.*no fallback" "openvino fails at initialization on it"
run_named if_nnapi 0 assign "$D/if_ok.onnx" --target nnapi
file_matches "$tmp/if_nnapi.out" "control flow: If stays on the CPU \(op If not in" "a profile without If keeps it on the CPU"

# Loop, the same way: OpenVINO's frontend translates Loop (the profile lists
# it), so a loop whose body it takes goes with the body; a Det in the body
# keeps it on the CPU; a profile without Loop keeps it there
$py - "$tmp" <<'PY'
import sys
import numpy as np
import onnx
from onnx import TensorProto as T, helper as h, numpy_helper as nh
d = sys.argv[1]
io = ([h.make_tensor_value_info("it", T.INT64, []), h.make_tensor_value_info("c_in", T.BOOL, []),
       h.make_tensor_value_info("v_in", T.FLOAT, [4, 4])],
      [h.make_tensor_value_info("c_out", T.BOOL, []),
       h.make_tensor_value_info("v_out", T.FLOAT, [4, 4])])
bodies = {
    "loop_ok": [h.make_node("Identity", ["c_in"], ["c_out"], "body_cond"),
                h.make_node("Add", ["v_in", "x"], ["v_out"], "body_add")],
    "loop_det": [h.make_node("Identity", ["c_in"], ["c_out"], "body_cond"),
                 h.make_node("Det", ["v_in"], ["det"], "body_det"),
                 h.make_node("Add", ["v_in", "det"], ["v_out"], "body_add")],
}
for name, nodes in bodies.items():
    g = h.make_graph([h.make_node("Relu", ["x"], ["r"], "relu"),
                      h.make_node("Loop", ["trips", "", "r"], ["y"], "loop",
                                  body=h.make_graph(nodes, "body", *io))],
                     name, [h.make_tensor_value_info("x", T.FLOAT, [4, 4])],
                     [h.make_tensor_value_info("y", T.FLOAT, [4, 4])],
                     [nh.from_array(np.array(3, np.int64), "trips")])
    m = h.make_model(g, opset_imports=[h.make_opsetid("", 13)])
    m.ir_version = 8
    onnx.save(m, "%s/%s.onnx" % (d, name))
PY
run_named loop_ok 0 assign "$tmp/loop_ok.onnx" --target openvino --no-time
file_matches "$tmp/loop_ok.out" '^2/2 nodes on openvino, 0 on CPU' "the Loop goes to openvino with its body"
run_named loop_det 2 assign "$tmp/loop_det.onnx" --target openvino --no-time
file_matches "$tmp/loop_det.out" "control flow: Loop stays on the CPU \(subgraph 'body': Det 'body_det': op Det not in" "a body op the frontend lacks keeps the Loop on the CPU"
run_named loop_nnapi 0 assign "$tmp/loop_ok.onnx" --target nnapi --no-time
file_matches "$tmp/loop_nnapi.out" "control flow: Loop stays on the CPU \(op Loop not in" "a profile without Loop keeps it on the CPU"
finish
