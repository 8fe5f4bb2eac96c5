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
finish
