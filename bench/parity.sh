#!/usr/bin/env bash
# Output parity of convgate's reference runtime with onnxruntime-node 1.22.0
# on the model zoo.  For each model: seeded inputs of a realistic range are
# written as .npy (bench/compare_npy.py gen), both runtimes run on those same
# files, and every output is compared: a model passes iff, for each output,
# dtype and shape agree and max|diff| <= 1e-4 (float16: 2^-10) * max(max|ort|,
# 1), and for a classifier (the torchvision nets, PaddleOCR cls) argmax too.
# A model convgate cannot run is a FAIL with convgate's message.
#
#   bench/parity.sh [--zoo DIR] [--seed S] [--keep DIR] [--inputs-only] CONVGATE [MODEL...]
#
# MODEL is a zoo file name (resnet18.onnx, silero_vad_v5.onnx, ...) or a
# path to one; default: every model in bench/zoo.sha256 found in the zoo
# (--zoo, else $CG_ZOO, else <repo>/zoo; fill it with tools/fetch_zoo.sh).
# A missing zoo file is a FAIL.  Needs node with bench/node_modules
# (scripts/setup.sh) and /usr/bin/python3 with numpy.  --keep DIR keeps the
# inputs and both runtimes' outputs under DIR/<model>/; with --inputs-only
# it only writes the inputs, DIR/<model>/in/<input>.npy, and runs nothing
# (bench/bench_run.sh times both runtimes on them).
# Exit status: 0 all passed, 1 some failed, 2 usage or missing tools.
set -uo pipefail

repo="$(cd "$(dirname "$0")/.." && pwd)"
zoo="${CG_ZOO:-$repo/zoo}"
seed=1
keep=""
inputs_only=0
usage() { sed -n '10p' "$0" | sed 's/^# *//' >&2; exit 2; }
while [ $# -gt 0 ]; do
    case "$1" in
        --zoo) zoo="${2:?--zoo needs a directory}"; shift 2 ;;
        --seed) seed="${2:?--seed needs a number}"; shift 2 ;;
        --keep) keep="${2:?--keep needs a directory}"; shift 2 ;;
        --inputs-only) inputs_only=1; shift ;;
        -h|--help) sed -n '2,20p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
        -*) echo "parity: unknown option $1" >&2; usage ;;
        *) break ;;
    esac
done
[ $# -ge 1 ] || usage
convgate="$1"; shift
if [ "$inputs_only" = 1 ] && [ -z "$keep" ]; then
    echo "parity: --inputs-only needs --keep DIR" >&2
    exit 2
fi
case "$seed" in ''|*[!0-9]*) echo "parity: --seed wants a non-negative integer" >&2; exit 2 ;; esac
if [ ! -x "$convgate" ]; then
    echo "parity: $convgate is not an executable (build it: ninja -C build)" >&2
    exit 2
fi
python=/usr/bin/python3
missing=()
command -v node >/dev/null 2>&1 || missing+=("node")
[ -f "$repo/bench/node_modules/onnxruntime-node/package.json" ] ||
    missing+=("bench/node_modules/onnxruntime-node (npm ci in bench/)")
"$python" -c 'import numpy' >/dev/null 2>&1 || missing+=("numpy for $python")
if [ "${#missing[@]}" -gt 0 ]; then
    echo "parity: missing ${missing[*]}: run scripts/setup.sh" >&2
    exit 2
fi

if [ $# -gt 0 ]; then
    models=("$@")
else
    models=()
    while IFS=$'\t' read -r file _source _sha; do
        case "$file" in ''|'#'*) continue ;; esac
        models+=("$file")
    done < "$repo/bench/zoo.sha256"
fi

if [ -n "$keep" ]; then
    work="$keep"
    mkdir -p "$work"
else
    work="$(mktemp -d /tmp/convgate-parity.XXXXXX)"
    trap 'rm -rf "$work"' EXIT
fi

# The input contract of each zoo model: "NAME=DTYPE:SHAPE:DIST" specs for
# compare_npy.py gen, and whether the model is a classifier (argmax checked).
# Shapes follow how the models are used: 224x224 ImageNet-normalized images
# for torchvision; PaddleOCR det at 640x640 with ImageNet normalization, rec
# at 48x320 and cls at 48x192 scaled to [-1, 1); Silero VAD v5/v6 take 512
# samples at 16 kHz with a [2, 1, 128] state, the legacy model 1536 samples
# (what @ricky0123/vad-web feeds it) with [2, 1, 64] h and c.  The slow
# families of tools/export_zoo.py: SSDlite takes [0, 1) images at 320x320
# (it normalizes itself), the LSTM/GRU 200 frames of 80 features and the
# transformer 2048 tokens of 256, both in [-1, 1).
# expose=1: compare a copy with the classifier head's input as an extra
# output: the encoder's features are judged directly, not only through the
# head (see compare_npy.py).
contract() {
    specs=()
    classifier=0
    expose=0
    case "$1" in
        resnet18|resnet50|mobilenet_v2|mobilenet_v3_small|squeezenet1_1|efficientnet_b0|\
        resnet18_dynquant)
            specs=(image=float32:1x3x224x224:imagenet); classifier=1 ;;
        resnet18_fp16) specs=(image=float16:1x3x224x224:imagenet); classifier=1 ;;
        ssdlite320_mobilenet_v3_large) specs=(image=float32:1x3x320x320:u01) ;;
        lstm_gru) specs=(features=float32:1x200x80:pm1) ;;
        transformer_s2048) specs=(tokens=float32:1x2048x256:pm1) ;;
        vit_b_16) specs=(image=float32:1x3x224x224:imagenet); classifier=1; expose=1 ;;
        ch_PP-OCRv4_det_infer) specs=(x=float32:1x3x640x640:imagenet) ;;
        ch_PP-OCRv4_rec_infer) specs=(x=float32:1x3x48x320:pm1) ;;
        ch_ppocr_mobile_v2.0_cls_infer) specs=(x=float32:1x3x48x192:pm1); classifier=1 ;;
        silero_vad_legacy)
            specs=(input=float32:1x1536:audio sr=int64::const:16000
                   h=float32:2x1x64:state c=float32:2x1x64:state) ;;
        silero_vad_v5|silero_vad_v6)
            specs=(input=float32:1x512:audio state=float32:2x1x128:state sr=int64::const:16000) ;;
        *) return 1 ;;
    esac
}

passed=0
failed=0
for m in "${models[@]}"; do
    case "$m" in */*) path="$m" ;; *) path="$zoo/$m" ;; esac
    name="$(basename "$m" .onnx)"
    label="$(printf '%-32s' "$name")"
    if ! contract "$name"; then
        echo "$label FAIL  no input contract for this model in bench/parity.sh"
        failed=$((failed + 1)); continue
    fi
    if [ ! -f "$path" ]; then
        echo "$label FAIL  $path missing (tools/fetch_zoo.sh)"
        failed=$((failed + 1)); continue
    fi
    d="$work/$name"
    rm -rf "$d"
    mkdir -p "$d"
    if ! "$python" "$repo/bench/compare_npy.py" gen "$d/in" --seed "$seed" "${specs[@]}" 2>"$d/gen.err"; then
        echo "$label FAIL  input generation: $(tail -n 1 "$d/gen.err")"
        failed=$((failed + 1)); continue
    fi
    if [ "$inputs_only" = 1 ]; then
        passed=$((passed + 1))
        continue
    fi
    if [ "$expose" = 1 ]; then
        if ! "$python" "$repo/bench/compare_npy.py" expose "$path" "$d/exposed.onnx" \
                >"$d/expose.log" 2>&1; then
            echo "$label FAIL  exposing the head's input: $(tail -n 1 "$d/expose.log")"
            failed=$((failed + 1)); continue
        fi
        path="$d/exposed.onnx"
    fi
    feeds=()
    ort_feeds=()
    for s in "${specs[@]}"; do
        n="${s%%=*}"
        feeds+=(-i "$n=$d/in/$n.npy")
        ort_feeds+=(--input "$n=$d/in/$n.npy")
    done
    if ! node "$repo/bench/ort_session.js" --run --runs 1 "${ort_feeds[@]}" \
            --save-outputs "$d/ort" "$path" >"$d/ort.log" 2>&1; then
        echo "$label FAIL  onnxruntime: $(tail -n 1 "$d/ort.log")"
        failed=$((failed + 1)); continue
    fi
    "$convgate" run "$path" "${feeds[@]}" -o "$d/cg" --json >"$d/cg.json" 2>"$d/cg.err"
    rc=$?
    if [ "$rc" != 0 ]; then
        msg="$(tr '\n' ' ' <"$d/cg.err")"
        echo "$label FAIL  convgate: ${msg:-exit status $rc and no message}"
        failed=$((failed + 1)); continue
    fi
    argmax=()
    [ "$classifier" = 1 ] && argmax=(--argmax)
    if line="$("$python" "$repo/bench/compare_npy.py" compare "$d/ort" "$d/cg.json" "${argmax[@]}" 2>&1)"; then
        passed=$((passed + 1))
    else
        failed=$((failed + 1))
        case "$line" in PASS*|FAIL*) ;; *) line="FAIL  $line" ;; esac
    fi
    echo "$label $line"
done
if [ "$inputs_only" = 1 ]; then
    echo "inputs for $passed model(s) in $work, $failed failed"
else
    echo "$passed passed, $failed failed"
fi
[ "$failed" = 0 ]
