#!/bin/bash
# convgate run --target: the XNNPACK target path matches the reference on the
# bundled example, reports its residency, and an fp16 profile is emulated.
set -u
cg=$1
src=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0
check() { if eval "$2"; then :; else echo "FAILED: $1"; fail=1; fi; }
if ! "$cg" targets | grep -q '^xnnpack '; then
    echo "xnnpack target not built here"; exit 77
fi
m="$src/examples/tiny_cnn.onnx"
in="image=$src/examples/tiny_cnn_inputs/image_1.npy"
"$cg" run "$m" -i "$in" -o "$tmp/ref" >/dev/null || { echo "FAILED: reference run"; exit 1; }
"$cg" run "$m" -i "$in" --target xnnpack -o "$tmp/xnn" >"$tmp/out" || { echo "FAILED: xnnpack run"; exit 1; }
check "residency line" "grep -q 'target path: 18/18 nodes on xnnpack, 0 on CPU; 1 partition' '$tmp/out'"
/usr/bin/python3 - "$tmp/ref/logits.npy" "$tmp/xnn/logits.npy" <<'PY' || fail=1
import sys, numpy as np
a, b = np.load(sys.argv[1]), np.load(sys.argv[2])
bound = 1e-4 * max(float(np.abs(a).max()), 1.0)
d = float(np.abs(a - b).max())
assert a.shape == b.shape and d <= bound, f"xnnpack vs reference: max|diff| {d} > {bound}"
assert (a.argmax(-1) == b.argmax(-1)).all(), "argmax differs"
PY
"$cg" run "$m" -i "$in" --target xnnpack --json >"$tmp/j" || fail=1
check "json target block" "/usr/bin/python3 -c 'import json,sys; t=json.load(open(\"$tmp/j\"))[\"result\"][\"target\"]; assert t[\"targets\"]==\"xnnpack\" and \"18/18\" in t[\"residency\"] and t[\"reduced_precision\"] is False'"
r="$src/examples/rmsnorm_fp16.onnx"
"$cg" run "$r" -i "x=$src/examples/rmsnorm_fp16_inputs/sample_0/x.npy" --target litert-gpu >"$tmp/f" || fail=1
check "fp16 emulation announced" "grep -q 'fp16 emulated' '$tmp/f'"
out=$("$cg" run "$m" -i "$in" --target no-such-target 2>&1); rc=$?
check "unknown target is a usage error" "[ $rc -eq 2 ] && echo \"\$out\" | grep -q 'no-such-target'"
[ $fail = 0 ] && echo "run_target: ok"
exit $fail
