#!/usr/bin/env bash
# convgate noise: floors against the float64 reference and the verdicts of
# issue #14's cases.
#   - the example CNN on xnnpack (a correct fp32 library): matches (fp32 noise)
#   - the crafted fp16 cases on litert-gpu accumulating in fp16 (--accumulate
#     fp16; tests/data/fp16: the RMSNorm whose sum of squares overflows, the
#     LayerNorm of values ~300 (fp16 storage), the LayerNorm whose variance
#     sum overflows, the global mean past 65504): precision
#     breakdown, exit 1; the RMSNorm on litert-gpu without --accumulate is
#     judged as both device classes: F16 devices (fp16 sums, against the
#     fp16-sums floor) a precision breakdown, F32_F16 devices (fp32 sums, the
#     measured delegate) matching at fp16 precision (text and JSON); with
#     --accumulate fp32 the F32_F16 class alone matches
#   - the wrong-on-purpose rewrite (tests/data/bisect/swish_rewritten.onnx)
#     judged against the original's floors: wrong result; the original's own
#     outputs: matches
#   - zero_head.onnx (a head that outputs 0 whatever its input, and an
#     output that is 0.5): gate 3 calls them vacuous (text and JSON)
#   - decisions.onnx on litert-gpu: the quantizer's output is judged by its
#     flips, which are within the fp16 noise: matches
#   - resnet50 on xnnpack: matches (fp32 noise), when ${CG_ZOO:-SOURCE_DIR/zoo}
#     holds it (tools/fetch_zoo.sh)
#   - usage errors exit 2
bin=${1:?usage: noise_cli.sh CONVGATE_BINARY SOURCE_DIR}
src=${2:?usage: noise_cli.sh CONVGATE_BINARY SOURCE_DIR}
. "$(dirname "${BASH_SOURCE[0]}")/lib/harness.bash"

# noise_case NAME WANT_RC ERE -- ARGS...: convgate noise ARGS exits WANT_RC
# and its output (both streams) has a line matching ERE
noise_case() {
    local name=$1 want=$2 pattern=$3
    shift 4
    expect_exit "$want" "$bin" noise "$@"
    file_matches "$tmp/out" "$pattern" "$name"
}

# the XNNPACK delegate is optional at build time
xnn=0
skipped=
"$bin" targets 2>/dev/null | grep -q '^ *xnnpack ' && xnn=1
if [ "$xnn" = 1 ]; then
    noise_case "tiny_cnn on xnnpack" 0 "xnnpack +matches \(fp32 noise\)" -- \
        "$src/examples/tiny_cnn.onnx" --inputs "$src/examples/tiny_cnn_inputs" --target xnnpack
else
    skipped="the xnnpack cases (no XNNPACK delegate in this build)"
fi
for c in rmsnorm_overflow layernorm_precision layernorm_variance global_mean; do
    noise_case "$c on litert-gpu" 1 "litert-gpu +precision breakdown" -- \
        "$src/tests/data/fp16/$c.onnx" --inputs "$src/tests/data/fp16/${c}_inputs" \
        --target litert-gpu --accumulate fp16
done
# litert-gpu by default: both device classes, each against the floor of how it sums
noise_case "rmsnorm_overflow on litert-gpu, both classes" 1 \
    "^ +F16 devices \(fp16 sums\): precision breakdown, [0-9.e+]+x the fp16-sums floor" -- \
    "$src/tests/data/fp16/rmsnorm_overflow.onnx" \
    --inputs "$src/tests/data/fp16/rmsnorm_overflow_inputs" --target litert-gpu
file_matches "$tmp/out" "^ +F32_F16 devices / use_f32_accum_for_fp16 \(fp32 sums\): matches at fp16 precision, [0-9.e+-]+x the fp16 storage floor" "rmsnorm: F32_F16 class"
file_matches "$tmp/out" "^ +fp16-sums floor +max" "rmsnorm: the fp16-sums floor measured"
file_matches "$tmp/out" "litert-gpu +precision breakdown: F16 devices \(fp16 sums\): " "rmsnorm: the worse class named"
expect_cg 1 noise "$src/tests/data/fp16/rmsnorm_overflow.onnx" --json \
    --inputs "$src/tests/data/fp16/rmsnorm_overflow_inputs" --target litert-gpu
"$py" - "$tmp/out" <<'PYEOF' || fail "noise --json: device_classes of litert-gpu"
import json, sys
text = open(sys.argv[1]).read()
o = json.loads(text[text.index("{"):])["result"]["outputs"][0]
c = o["judged"][0]["device_classes"]
sys.exit(0 if [(d["accumulate"], d["verdict"]["verdict"]) for d in c] ==
         [("fp16", "precision breakdown"), ("fp32", "matches at fp16 precision")] and
         o["fp16_sums"]["max_abs"] > 0 else 1)
PYEOF
# one class: --accumulate fp32 is the F32_F16 class alone (the measured delegate)
noise_case "rmsnorm_overflow on litert-gpu, --accumulate fp32" 0 "litert-gpu +matches at fp16 precision" -- \
    "$src/tests/data/fp16/rmsnorm_overflow.onnx" \
    --inputs "$src/tests/data/fp16/rmsnorm_overflow_inputs" --target litert-gpu --accumulate fp32
file_lacks "$tmp/out" "F16 devices" "one class: no class lines"
noise_case "rmsnorm: fp16 accumulation named" 1 "with fp32 accumulation .*: fp16 accumulation" -- \
    "$src/tests/data/fp16/rmsnorm_overflow.onnx" \
    --inputs "$src/tests/data/fp16/rmsnorm_overflow_inputs" --target litert-gpu --accumulate fp16
noise_case "layernorm: fp16 storage named" 1 "fp16 storage$" -- \
    "$src/tests/data/fp16/layernorm_precision.onnx" \
    --inputs "$src/tests/data/fp16/layernorm_precision_inputs" --target litert-gpu --accumulate fp16
noise_case "layernorm variance: fp16 accumulation named" 1 "with fp32 accumulation .*: fp16 accumulation" -- \
    "$src/tests/data/fp16/layernorm_variance.onnx" \
    --inputs "$src/tests/data/fp16/layernorm_variance_inputs" --target litert-gpu --accumulate fp16
noise_case "global mean: inf named" 1 "inf/NaN where the fp64 reference is finite" -- \
    "$src/tests/data/fp16/global_mean.onnx" \
    --inputs "$src/tests/data/fp16/global_mean_inputs" --target litert-gpu --accumulate fp16

# the rewrite's outputs on the same inputs, judged against the original's floors
ins="$src/tests/data/noise/swish_inputs"
mkdir -p "$tmp/wrong" "$tmp/right"
expect_cg 0 run "$src/tests/data/bisect/swish_rewritten.onnx" -i "x=$ins/s1/x.npy" \
    -o "$tmp/wrong/s1"
expect_cg 0 run "$src/tests/data/bisect/swish_original.onnx" -i "x=$ins/s1/x.npy" \
    -o "$tmp/right/s1"
noise_case "wrong rewrite" 1 "wrong result: [0-9.e+]+x the fp32 noise floor" -- \
    "$src/tests/data/bisect/swish_original.onnx" --inputs "$ins" --outputs-from "$tmp/wrong"
noise_case "the original's own outputs" 0 "matches \(fp32 noise\)" -- \
    "$src/tests/data/bisect/swish_original.onnx" --inputs "$ins" --outputs-from "$tmp/right"

noise_case "decisions judged by flips" 0 \
    "decisions flipped, largest margin .* at 'quant', every one within the fp16 storage noise" \
    -- "$src/tests/data/noise/decisions.onnx" --target litert-gpu --random 3 --seed 2
expect_cg 0 noise "$src/tests/data/noise/decisions.onnx" --json --random 2
expect_out '"discontinuous": true' '"fp16"'

# a constant reference output (an untrained export's zero head) judges
# nothing: gate 3 says so per output and in its verdict, text and JSON
expect_cg 0 gate "$src/tests/data/noise/zero_head.onnx" --random 2 --target litert-gpu \
    --json "$tmp/zero_head.json"
file_matches "$tmp/out" "^ +ok +logits \(matches \(fp32 noise\), vacuous\)" "zero head: logits vacuous"
file_matches "$tmp/out" "vacuous: the fp64 reference is 0 on every one of its 24 elements" \
    "zero head: the reason says the reference is 0"
file_matches "$tmp/out" "^ +ok +features \(matches at fp16 precision\)$" "zero head: features judged"
file_matches "$tmp/out" "2 vacuous \(the fp64 reference is constant, so they judge nothing: 'logits', 'half'\)" \
    "zero head: the gate's verdict names the vacuous outputs"
"$py" - "$tmp/zero_head.json" <<'PYEOF' || fail "gate --json: vacuous outputs of zero_head"
import json, sys
outs = {o["name"]: o for o in json.load(open(sys.argv[1]))["result"]["matches"]["outputs"]}
want = {"features": (False, None), "logits": (True, 0.0), "half": (True, 0.5)}
for name, (vac, const) in want.items():
    v = outs[name]["verdict"]
    assert v["vacuous"] is vac and v["constant"] == const, (name, v)
    for c in outs[name]["device_classes"]:
        assert c["verdict"]["vacuous"] is vac, (name, c)
PYEOF

noise_case "usage: --precision alone" 2 "--precision describes --outputs-from" -- \
    "$src/tests/data/noise/decisions.onnx" --precision fp16
noise_case "usage: no model" 2 "no model given" --
noise_case "usage: fp16 target without its floor" 2 "drop --no-fp16" -- \
    "$src/tests/data/noise/decisions.onnx" --target litert-gpu --no-fp16

zoo=${CG_ZOO:-$src/zoo}
if [ "$xnn" = 1 ] && [ -f "$zoo/resnet50.onnx" ]; then
    noise_case "resnet50 on xnnpack" 0 "xnnpack +matches \(fp32 noise\)" -- \
        "$zoo/resnet50.onnx" --target xnnpack --random 1 --no-fp16
else
    echo "skip resnet50 on xnnpack: no XNNPACK, or no $zoo/resnet50.onnx (set CG_ZOO)"
fi
finish "$skipped"
