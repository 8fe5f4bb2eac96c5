#!/usr/bin/env bash
# Installs what convgate needs, builds it, and runs the main job on the
# bundled examples:
#   1. convgate inspect: the example CNN's contract (inputs, outputs, ops).
#   2. convgate gate on the example CNN for the XNNPACK delegate: converts,
#      runs fully on XNNPACK, matches the reference -> PASS.
#   3. convgate gate on an RMSNorm block for the LiteRT GPU delegate's fp16
#      profile: full residency, but the sum of squares overflows fp16 -> gate
#      3 FAILS and bisect names the ReduceMean (the example exists to show
#      this failure; the script succeeds when convgate reports it).
#   4. convgate convert on the same block: a verified, exact rewrite pre-scales
#      the sum of squares, all three gates pass, and the artifact directory
#      (model, golden set, manifest, README) passes convgate verify.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
scripts/setup.sh
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build -j "$(nproc 2>/dev/null || echo 2)"
cg=./build/convgate
show() { echo; echo "\$ convgate ${*:2}"; "$@"; }

show "$cg" inspect examples/tiny_cnn.onnx
show "$cg" gate examples/tiny_cnn.onnx --target xnnpack --inputs examples/tiny_cnn_inputs
set +e
show "$cg" gate examples/rmsnorm_fp16.onnx --target litert-gpu --inputs examples/rmsnorm_fp16_inputs
rc=$?
set -e
if [ "$rc" -ne 1 ]; then
    echo "demo: expected gate 3 to fail on the fp16 RMSNorm example (exit 1), got exit $rc" >&2
    exit 1
fi
echo
echo "demo: the fp16 RMSNorm example failed gate 3 as designed (exit 1): see the bisect above."
art=$(mktemp -d)/rmsnorm_litert_gpu
show "$cg" convert examples/rmsnorm_fp16.onnx --target litert-gpu --inputs examples/rmsnorm_fp16_inputs -o "$art"
show "$cg" verify "$art"
