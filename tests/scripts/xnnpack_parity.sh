#!/usr/bin/env bash
# XNNPACK delegate on the model zoo: for every model, residency (supports()
# == compile(), per node and per partition) and parity of the delegated run
# against the reference run (outputs and every partition boundary within
# max|diff| <= 1e-4 * max(max|ref|, 1)), via tests/unit/test_xnnpack.
#
#   xnnpack_parity.sh CONVGATE_BINARY SOURCE_DIR
#
# CG_ZOO: the zoo directory (default /tmp/scripts-zoo2); skipped (77) when
# absent or when the build has no xnnpack target. CG_XNN_BENCH_RUNS=N also
# times N runs of each (single-threaded BLAS), median reference vs delegated.
set -u
bin=${1:?usage: xnnpack_parity.sh CONVGATE_BINARY SOURCE_DIR}
. "$(dirname "${BASH_SOURCE[0]}")/lib/harness.bash"
driver="$(dirname "$bin")/tests/test_xnnpack"
zoo=${CG_ZOO:-/tmp/scripts-zoo2}
runs=${CG_XNN_BENCH_RUNS:-0}
export OPENBLAS_NUM_THREADS=1

if [ ! -x "$driver" ]; then
    echo "skip: $driver not built"; exit 77
fi
if [ ! -d "$zoo" ]; then
    echo "skip: no model zoo at $zoo (set CG_ZOO)"; exit 77
fi
if "$driver" check /nonexistent.onnx 2>/dev/null | grep -q "not available"; then
    echo "skip: this build has no xnnpack target"; exit 77
fi

# model file, then symbolic dim bindings (the OCR models have free dims)
models=(
  "resnet18.onnx"
  "resnet50.onnx"
  "mobilenet_v2.onnx"
  "mobilenet_v3_small.onnx"
  "squeezenet1_1.onnx"
  "vit_b_16.onnx"
  "ch_PP-OCRv4_det_infer.onnx p2o.DynamicDimension.0=1 p2o.DynamicDimension.1=320 p2o.DynamicDimension.2=320"
  "ch_PP-OCRv4_rec_infer.onnx p2o.DynamicDimension.0=1 p2o.DynamicDimension.1=320"
  "ch_ppocr_mobile_v2.0_cls_infer.onnx p2o.DynamicDimension.0=1 p2o.DynamicDimension.1=48 p2o.DynamicDimension.2=192"
  "silero_vad_legacy.onnx batch=1 sequence=512"
)
ran=0
for entry in "${models[@]}"; do
    read -r file bindings <<<"$entry"
    [ -f "$zoo/$file" ] || { echo "missing $zoo/$file: skipped"; continue; }
    ran=$((ran + 1))
    # shellcheck disable=SC2086
    if [ "$runs" -gt 1 ]; then
        "$driver" bench "$zoo/$file" "$runs" $bindings || fail "$file: residency or parity"
    else
        "$driver" check "$zoo/$file" $bindings || fail "$file: residency or parity"
    fi
done
echo "xnnpack parity: $ran models, $fails failed"
[ "$ran" -gt 0 ] || finish "no model of the list in $zoo"
finish
