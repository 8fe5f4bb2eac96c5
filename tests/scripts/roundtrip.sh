#!/usr/bin/env bash
# Round-trip property: load -> save -> load gives a model that python3-onnx
# parses to a message equal to the original, for every model of the ONNX
# backend test data (and every .onnx under $CG_ZOO when set). Also checks the
# external-data path: save with --external-data, reload, compare payloads;
# and that the writer never places external data outside the output folder.
bin=${1:?usage: roundtrip.sh CONVGATE_BINARY SOURCE_DIR}
src=${2:?usage: roundtrip.sh CONVGATE_BINARY SOURCE_DIR}
. "$(dirname "${BASH_SOURCE[0]}")/lib/harness.bash"
data=/usr/share/libonnx-testdata/data
[ -d "$data" ] || { echo "libonnx-testdata not installed"; exit 77; }
"$py" -c 'import onnx' 2>/dev/null || { echo "python3-onnx missing"; exit 77; }

pairs=()
i=0
models=$(find "$data" -name model.onnx | sort)
if [ -n "${CG_ZOO:-}" ] && [ -d "$CG_ZOO" ]; then
    models="$models $(find "$CG_ZOO" -name '*.onnx' | sort)"
fi
for m in $models; do
    saved="$tmp/m$i.onnx"
    if "$bin" save "$m" -o "$saved" >/dev/null 2>"$tmp/err"; then
        pairs+=("$m" "$saved")
    else
        fail "save $m: $(cat "$tmp/err")"
    fi
    i=$((i + 1))
done
# (the test data's .pb tensors are TensorProto files: the unit tests read them)
"$py" "$src/tools/pb_equal.py" "${pairs[@]}" || fail "a saved model differs from its source"

# external data: move every payload out, reload, compare to the inline copy
ext_ok=0
for m in "$src/examples/tiny_cnn.onnx" "$data/node/test_conv_with_strides_padding/model.onnx"; do
    [ -f "$m" ] || continue
    mkdir -p "$tmp/ext"
    expect_exit 0 "$bin" save "$m" -o "$tmp/ext/model.onnx" --external-data weights.bin --min-bytes 0
    expect_exit 0 "$bin" save "$tmp/ext/model.onnx" -o "$tmp/ext/inline.onnx"
    "$py" - "$m" "$tmp/ext/inline.onnx" "$tmp/ext/model.onnx" <<'PY' || fail "external data round trip of $m"
import sys, onnx
from onnx import numpy_helper
a = onnx.load(sys.argv[1])
b = onnx.load(sys.argv[2])
c = onnx.load(sys.argv[3])  # loads external data through onnx's own resolver
for x, y in ((a, b), (a, c)):
    ia = {t.name: numpy_helper.to_array(t) for t in x.graph.initializer}
    ib = {t.name: numpy_helper.to_array(t) for t in y.graph.initializer}
    assert ia.keys() == ib.keys(), "initializer names differ"
    for k in ia:
        assert (ia[k] == ib[k]).all() and ia[k].dtype == ib[k].dtype, k
print("external data round trip ok:", sys.argv[1])
PY
    ext_ok=1
    rm -rf "$tmp/ext"
done
[ $ext_ok = 1 ] || fail "no model for the external-data check"

# item 11: the writer never places external data outside the output directory
mkdir -p "$tmp/dest"
for bad in ../escape.bin /tmp/abs.bin sub/dir.bin ..; do
    expect_exit 2 "$bin" save "$src/examples/tiny_cnn.onnx" -o "$tmp/dest/w.onnx" --external-data "$bad"
    check "--external-data '$bad' refused as not a plain file name" out_has "plain file name"
done
[ -e "$tmp/escape.bin" ] && fail "escape.bin written outside the output folder"
finish
