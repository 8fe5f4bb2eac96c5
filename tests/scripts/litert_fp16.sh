#!/usr/bin/env bash
# convgate's litert-gpu emulation against the real LiteRT GPU delegate at
# precision fp16 (LiteRT.js's WebGPU path, ML Drift, in headless Chromium:
# shared/reference/litert-oracles.md), on the accumulation cases of
# tools/measure_litert_fp16.py: a FULLY_CONNECTED whose products cancel
# (0 with an fp32 sum, inf with an fp16 one), a MEAN of 3072 values ~100, an
# RMSNorm whose sum of squares passes 65504, and (when the zoo has it)
# resnet18's head (MEAN 7x7 + FULLY_CONNECTED 512 -> 1000) on its real
# activation, a LayerNorm of width 1024 whose variance MEAN sums squared
# deviations past 65504 (tests/data/fp16/layernorm_variance), and a 3x3
# CONV_2D whose running sum passes 65504 when summed as TFLite GPU's F16
# kernels do (tests/data/fp16/conv_cancel). For each, `convgate run
# CASE.tflite --target litert-gpu` must match the delegate's output within one fp16 spacing at the output's
# scale, with the same inf/NaN elements: the profile's accumulation is the
# delegate's (fp32). With --accumulate fp16 (a GPU computing in f16) the
# emulation must differ from the delegate on every case, so the comparison
# can tell the two apart. Gate 3 on the cases judges both device classes
# (below).
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

cases="fc_cancel mean_global rmsnorm layernorm_var conv_cancel"
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

# Gate 3 judges litert-gpu as both device classes (its profile's
# device_classes): on F16 devices (fp16 sums) the cancelling
# FULLY_CONNECTED, the global MEAN, the RMSNorm's MEAN, the LayerNorm's
# variance MEAN (not its mean's) and the CONV_2D overflow, a precision
# breakdown bisected to that op; on F32_F16 devices (fp32 sums:
# the delegate measured here) they match, and so do the delegate's own
# outputs judged as that class (--accumulate fp32). The resnet18 head
# (MEAN + FULLY_CONNECTED 512 -> 1000) passes on both: its fp16 sums stay
# within the fp16-sums floor.
for c in $cases; do
    mkdir -p "$tmp/gin/$c/s0" "$tmp/dev/$c/s0"
    cp "$M/${c}_in0.npy" "$tmp/gin/$c/s0/x.npy"
    node=
    case $c in
    fc_cancel) op=MatMul ;;
    conv_cancel) op=Conv ;;
    resnet18_head) op= ;;
    layernorm_var) op=ReduceMean node='MEAN#3' ;; # the variance's MEAN, not the mean's (#0)
    *) op=ReduceMean ;;
    esac
    cg gate "$M/$c.tflite" --target litert-gpu --inputs "$tmp/gin/$c" --min-coverage 0 --json "$tmp/g_$c.json"
    if [ -n "$op" ]; then
        check "$c: gate 3 fails by default" rc 1
        "$py" - "$tmp/g_$c.json" "$op" "$node" <<'PYEOF' >"$tmp/cmp" 2>&1
import json, sys
g = json.load(open(sys.argv[1]))["result"]["matches"]
o = g["outputs"][0]
classes = [(c["accumulate"], c["verdict"]["verdict"]) for c in o["device_classes"]]
b = g["bisect"]
ok = (o["verdict"]["verdict"] == "precision breakdown" and
      classes[0] == ("fp16", "precision breakdown") and classes[1][1].startswith("matches") and
      b["device_class"].startswith("F16 devices") and
      b["first_divergent"]["op_type"] == sys.argv[2] and b["triage"] == "precision breakdown" and
      "fp16 overflow in " + sys.argv[2] in b["verdict_reason"] and
      sys.argv[3] in ("", b["first_divergent"]["node"]))
print("%s; bisected: %s" % (classes, b["verdict_reason"]))
sys.exit(0 if ok else 1)
PYEOF
        if [ $? = 0 ]; then echo "ok   $c, gate 3 on both classes: $(cat "$tmp/cmp")"; else fail "$c, gate 3 on both classes: $(cat "$tmp/cmp")"; fi
        cg gate "$M/$c.tflite" --target litert-gpu --inputs "$tmp/gin/$c" --min-coverage 0 --accumulate fp32
        check "$c: gate 3 passes as F32_F16 devices (--accumulate fp32)" rc 0
        # the delegate's own outputs, judged as the class it is
        cp "$M/${c}_webgpu_fp16.npy" "$tmp/dev/$c/s0/y.npy"
        cg compare "$M/$c.tflite" --target litert-gpu --inputs "$tmp/gin/$c" --outputs-from "$tmp/dev/$c" --accumulate fp32
        check "$c: the delegate's outputs match as F32_F16 devices" rc 0
    else
        check "$c: gate 3 passes on both classes" rc 0
        check "$c: ... the F16 class within the fp16-sums floor" grep -q "F16 devices (fp16 sums): matches at fp16 precision" "$tmp/out"
    fi
done
finish
