#!/usr/bin/env bash
# convgate's litert-gpu emulation against the real LiteRT GPU delegate at
# precision fp16 (LiteRT.js's WebGPU path, ML Drift, in headless Chromium:
# shared/reference/litert-oracles.md), on the accumulation cases of
# tools/measure_litert_fp16.py: a FULLY_CONNECTED whose products cancel
# (0 with an fp32 sum, inf with an fp16 one), a MEAN of 3072 values ~100, an
# RMSNorm whose sum of squares passes 65504, and (when the zoo has it)
# resnet18's head (MEAN 7x7 + FULLY_CONNECTED 512 -> 1000) on its real
# activation. For each, `convgate run CASE.tflite --target litert-gpu`
# must match the delegate's output within one fp16 spacing at the output's
# scale, with the same inf/NaN elements: the profile's accumulation is the
# delegate's (fp32). With --accumulate fp16 (a GPU computing in f16) the
# emulation must differ from the delegate on every case, so the comparison
# can tell the two apart.
# Exit 77 when node, the pinned packages (tools/litert/node_modules) or
# chromium are missing, saying which.
set -u
bin=${1:?usage: litert_fp16.sh CONVGATE_BINARY SOURCE_DIR}
src=${2:?usage: litert_fp16.sh CONVGATE_BINARY SOURCE_DIR}
. "$(dirname "${BASH_SOURCE[0]}")/lib/harness.bash"
ZOO=${CG_ZOO:-$src/zoo}
command -v node >/dev/null 2>&1 || finish "node is not installed (scripts/setup.sh installs it)"
[ -f "$src/tools/litert/node_modules/@litertjs/core/package.json" ] ||
    finish "tools/litert/node_modules has no @litertjs/core (scripts/setup.sh runs npm ci there)"
command -v chromium >/dev/null 2>&1 || finish "chromium is not installed"
"$py" -c 'import numpy, flatbuffers' 2>/dev/null || finish "python3 numpy/flatbuffers missing"

cases="fc_cancel mean_global rmsnorm"
extra=()
if [ -f "$ZOO/resnet18.onnx" ]; then
    # the classifier's input: resnet18's last activation on bench/parity.sh's input
    if bash "$src/bench/parity.sh" --zoo "$ZOO" --seed 1 --keep "$tmp/in" --inputs-only "$bin" \
            resnet18.onnx >"$tmp/gen.log" 2>&1 &&
       "$py" - "$ZOO/resnet18.onnx" "$tmp/act.onnx" <<'PYEOF'
import sys
import onnx
m = onnx.load(sys.argv[1])
pool = [n for n in m.graph.node if n.op_type == "GlobalAveragePool"][0]
m.graph.output.append(onnx.helper.make_tensor_value_info(pool.input[0], onnx.TensorProto.FLOAT,
                                                         None))
onnx.save(m, sys.argv[2])
PYEOF
    then
        cg run "$tmp/act.onnx" --inputs "$tmp/in/resnet18/in" -o "$tmp/act"
        act=$(ls "$tmp"/act/_layer4*.npy 2>/dev/null | head -n 1)
        if rc 0 && [ -n "$act" ]; then
            extra=(--zoo "$ZOO" --activation "$act")
            cases="$cases resnet18_head"
        else
            fail "resnet18's activation: $(tail -n 2 "$tmp/err")"
        fi
    else
        fail "resnet18's input: $(tail -n 2 "$tmp/gen.log")"
    fi
else
    echo "resnet18 not in $ZOO: its head is not checked (tools/fetch_zoo.sh)"
fi
M=$tmp/m
if ! "$py" -W ignore "$src/tools/measure_litert_fp16.py" "${extra[@]}" "$M" >"$tmp/measure.log" 2>&1; then
    cat "$tmp/measure.log" >&2
    fail "tools/measure_litert_fp16.py failed"
    finish
fi
sed 's/^/  /' "$tmp/measure.log"

# same NAME CASE ACC [differ]: convgate's litert-gpu output on CASE (with
# --accumulate ACC unless "profile") against the delegate's
same() {
    local what=$1 c=$2 acc=$3 want=${4:-same}
    local args=(run "$M/$c.tflite" -i "x=$M/${c}_in0.npy" --target litert-gpu -o "$tmp/o_${c}_$acc")
    [ "$acc" = profile ] || args+=(--accumulate "$acc")
    cg "${args[@]}"
    check "$what: convgate run exit 0" rc 0
    "$py" - "$tmp/o_${c}_$acc" "$M/${c}_webgpu_fp16.npy" "$want" <<'PYEOF' >"$tmp/cmp" 2>&1
import glob, sys
import numpy as np
got = np.load(glob.glob(sys.argv[1] + "/*.npy")[0]).astype(np.float64).ravel()
dev = np.load(sys.argv[2]).astype(np.float64).ravel()
fin = np.isfinite(dev)
scale = float(np.abs(dev[fin]).max()) if fin.any() else 0.0
limit = max(scale, 2.0 ** -14) * 2.0 ** -10  # one fp16 spacing at the scale
same_pattern = got.shape == dev.shape and np.array_equal(np.isfinite(got), fin)
d = float(np.abs(got[fin] - dev[fin]).max()) if same_pattern and fin.any() else float("inf")
ok = same_pattern and d <= limit
print("max |convgate - delegate| %.3g (limit %.3g, scale %.4g)%s"
      % (d, limit, scale, "" if same_pattern else "; inf/NaN elements differ"))
sys.exit(0 if ok == (sys.argv[3] == "same") else 1)
PYEOF
    if [ $? = 0 ]; then
        echo "ok   $what: $(cat "$tmp/cmp")"
    else
        fail "$what: $(cat "$tmp/cmp")"
    fi
}
for c in $cases; do
    same "$c, litert-gpu as profiled, matches the delegate" "$c" profile
done
for c in $cases; do
    same "$c, --accumulate fp16, differs from the delegate" "$c" fp16 differ
done
finish
