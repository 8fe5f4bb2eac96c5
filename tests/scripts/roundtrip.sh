#!/bin/bash
# Round-trip property: load -> save -> load gives a model that python3-onnx
# parses to a message equal to the original, for every model of the ONNX
# backend test data (and every .onnx under $CG_ZOO when set). Also checks the
# external-data path: save with --external-data, reload, compare payloads.
set -u
cg=$1
src=$2
data=/usr/share/libonnx-testdata/data
[ -d "$data" ] || { echo "libonnx-testdata not installed"; exit 77; }
/usr/bin/python3 -c 'import onnx' 2>/dev/null || { echo "python3-onnx missing"; exit 77; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
pairs=()
i=0
models=$(find "$data" -name model.onnx | sort)
if [ -n "${CG_ZOO:-}" ] && [ -d "$CG_ZOO" ]; then
    models="$models $(find "$CG_ZOO" -name '*.onnx' | sort)"
fi
fail=0
for m in $models; do
    out="$tmp/m$i.onnx"
    if ! "$cg" save "$m" -o "$out" >/dev/null 2>"$tmp/err"; then
        echo "FAIL save $m: $(cat "$tmp/err")"
        fail=1
    else
        pairs+=("$m" "$out")
    fi
    i=$((i + 1))
done
/usr/bin/python3 "$src/tools/pb_equal.py" "${pairs[@]}" || fail=1
# test-data tensors (.pb) go through the same reader; inspect them via save? no:
# they are TensorProto files, checked by the unit tests.

# external data: move every payload out, reload, compare to the inline copy
ext_ok=0
for m in "$src/examples/tiny_cnn.onnx" "$data/node/test_conv_with_strides_padding/model.onnx"; do
    [ -f "$m" ] || continue
    mkdir -p "$tmp/ext"
    "$cg" save "$m" -o "$tmp/ext/model.onnx" --external-data weights.bin --min-bytes 0 || { fail=1; continue; }
    "$cg" save "$tmp/ext/model.onnx" -o "$tmp/ext/inline.onnx" || { fail=1; continue; }
    /usr/bin/python3 - "$m" "$tmp/ext/inline.onnx" "$tmp/ext/model.onnx" <<'PY' || fail=1
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
# item 11: the writer never places external data outside the output directory
for bad in ../escape.bin /tmp/abs.bin sub/dir.bin ..; do
    out=$("$cg" save "$src/examples/tiny_cnn.onnx" -o "$tmp/w.onnx" --external-data "$bad" 2>&1)
    rc=$?
    if [ $rc -ne 2 ] || ! echo "$out" | grep -q "plain file name"; then
        echo "FAIL: --external-data '$bad' was not refused (rc $rc): $out"
        fail=1
    fi
done
[ -e "$tmp/../escape.bin" ] && { echo "FAIL: escape.bin written outside"; fail=1; }
[ $ext_ok = 1 ] || { echo "no model for the external-data check"; fail=1; }
exit $fail
