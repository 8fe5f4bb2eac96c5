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

# save --json reports what this save wrote (#8), and no weights file is
# left beside the model that does not belong to it
cnn="$src/examples/tiny_cnn.onnx"
mkdir -p "$tmp/all" "$tmp/part" "$tmp/none" "$tmp/stale"
expect_cg 0 run "$cnn" --random --seed 3 -o "$tmp/want"
expect_cg 0 save "$cnn" -o "$tmp/all/m.onnx" --external-data w.bin --min-bytes 0
# from a model whose weights are all external, only those of 100000 bytes
# or more move to the new w.bin; the rest come inline, never pointing at the
# source's w.bin offsets (which name other bytes in the new file)
expect_cg 0 save "$tmp/all/m.onnx" -o "$tmp/part/m.onnx" --external-data w.bin \
    --min-bytes 100000 --json
check "--json: the model's and w.bin's sizes as written" out_json \
    "r['bytes'] == $(stat -c %s "$tmp/part/m.onnx") and r['external_data']['file'] == 'w.bin' \
     and r['external_data']['bytes'] == $(stat -c %s "$tmp/part/w.bin")"
"$py" - "$tmp/part/m.onnx" <<'PY' || fail "the partly external model's initializers"
import sys, onnx
m = onnx.load(sys.argv[1], load_external_data=False)
ext = [t.name for t in m.graph.initializer if t.data_location == onnx.TensorProto.EXTERNAL]
assert ext == ["features.12.weight"], ext
PY
expect_cg 0 run "$tmp/part/m.onnx" --random --seed 3 -o "$tmp/got"
cmp -s "$tmp/want/logits.npy" "$tmp/got/logits.npy" ||
    fail "the partly external model computes other outputs than the source"
# nothing reaches --min-bytes: no weights file, and --json says so
expect_cg 0 save "$cnn" -o "$tmp/none/m.onnx" --external-data w.bin --min-bytes 100000000 --json
check "--json: no weights file when nothing moved" out_json "r['external_data'] is None"
[ -e "$tmp/none/w.bin" ] && fail "an empty w.bin was written although nothing moved"
# ... and a w.bin already there would no longer belong to the model: refused,
# nothing written, the file left as it was
echo "old weights" >"$tmp/stale/w.bin"
expect_cg 2 save "$cnn" -o "$tmp/stale/m.onnx" --external-data w.bin --min-bytes 100000000 --json
expect_err "would no longer belong to the model"
[ -e "$tmp/stale/m.onnx" ] && fail "a model was written beside the stale w.bin"
[ "$(cat "$tmp/stale/w.bin")" = "old weights" ] || fail "the stale w.bin was changed"

# item 11: the writer never places external data outside the output directory
mkdir -p "$tmp/dest"
for bad in ../escape.bin /tmp/abs.bin sub/dir.bin ..; do
    expect_exit 2 "$bin" save "$src/examples/tiny_cnn.onnx" -o "$tmp/dest/w.onnx" --external-data "$bad"
    check "--external-data '$bad' refused as not a plain file name" out_has "plain file name"
done
[ -e "$tmp/escape.bin" ] && fail "escape.bin written outside the output folder"
finish
