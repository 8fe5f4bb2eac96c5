#!/usr/bin/env bash
# Installs what convgate needs, builds it, and runs the main job on the
# bundled example model (examples/tiny_cnn.onnx, made by
# tools/export_example.py): inspect its contract, then check its structure.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
scripts/setup.sh
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build -j "$(nproc 2>/dev/null || echo 2)"
model=examples/tiny_cnn.onnx
echo
echo "\$ convgate inspect $model"
./build/convgate inspect "$model"
echo
echo "\$ convgate check $model"
./build/convgate check "$model"
