#!/usr/bin/env bash
# assign's what-if: --assume-supported OP places the model as if every target
# took that op, and without it assign ranks each refused op by what
# supporting it alone would gain (CPU nodes, partitions, estimated ms).
# Each ranked line must agree with the placement --assume-supported gives.
# Usage: assign_whatif.sh CONVGATE SOURCE_DIR
set -u
bin=${1:?convgate binary}
SRC=${2:?source dir}
. "$(dirname "${BASH_SOURCE[0]}")/lib/harness.bash"
tiny=$SRC/examples/tiny_cnn.onnx
G=$SRC/tests/data/gate2

# ort-xnnpack (after ORT's basic optimizations fold the batch norms into the
# convs) refuses tiny_cnn's 4 Relu, its GlobalAveragePool and its Flatten:
# 6 nodes on the CPU in 5 partitions.
# --no-time: ranked by CPU nodes moved, then partitions, then name.
expect_cg 0 assign "$tiny" --target ort-xnnpack --no-time
expect_out "What supporting each refused op would gain"
check "Relu ranked first" \
    grep -Eq '^  Relu +4 refused: 6 -> 2 nodes on CPU, partitions 5 -> 2$' "$tmp/out"
rank_relu=$(grep -n '^  Relu .*refused:' "$tmp/out" | cut -d: -f1)
rank_gap=$(grep -n '^  GlobalAveragePool .*refused:' "$tmp/out" | cut -d: -f1)
check "Relu above GlobalAveragePool" test "${rank_relu:-99}" -lt "${rank_gap:-0}"
check "no time without a timed run" bash -c "! grep -q 'est\\.' '$tmp/out'"

# The ranked line is what --assume-supported shows.
expect_cg 0 assign "$tiny" --target ort-xnnpack --no-time --assume-supported Relu
expect_out "What-if: placed as if every target took Relu" ", 2 on CPU"
check "the assumed op is no longer ranked" bash -c "! grep -Eq '^  Relu .*refused:' '$tmp/out'"
expect_cg 0 assign "$tiny" --target ort-xnnpack --no-time \
    --assume-supported Relu,GlobalAveragePool --assume-supported Flatten
expect_out ", 0 on CPU" "Verdict: full residency"
check "nothing left to rank" bash -c "! grep -q 'What supporting' '$tmp/out'"
# a domain-qualified key matches only that domain
expect_cg 0 assign "$tiny" --target ort-xnnpack --no-time --assume-supported ai.onnx:Relu
expect_out ", 2 on CPU"
expect_cg 0 assign "$tiny" --target ort-xnnpack --no-time --assume-supported com.example:Relu
expect_out ", 6 on CPU"

# JSON: the ranking with the estimate, and the assumed ops
expect_cg 0 assign "$tiny" --target ort-xnnpack --json
check "what_if in JSON, timed" out_json \
    'r["what_if"][0]["op"] == "Relu" and r["what_if"][0]["cpu_after"] == 2 and r["what_if"][0]["partitions_after"] == 2 and r["what_if"][0]["saved_ms"] > 0 and r["what_if"][0]["mixed_ms_after"] < r["what_if"][0]["mixed_ms_before"] and r["assumed_supported"] == []'
expect_cg 0 assign "$tiny" --target ort-xnnpack --json --no-time --assume-supported Flatten
check "assumed ops in JSON, untimed gains null" out_json \
    'r["assumed_supported"] == ["Flatten"] and all(g["saved_ms"] is None for g in r["what_if"]) and "Flatten" not in [g["op"] for g in r["what_if"]]'

# executorch-xnnpack judges ATen ops (preprocess onnx-to-aten): its one
# refusal on tiny_cnn is the global pool, the _adaptive_avg_pool2d edge op
# no XNNPACK config names, and the key names the ATen op
expect_cg 0 assign "$tiny" --target executorch-xnnpack --no-time
check "executorch ranks the ATen op" \
    grep -Eq '^  aten:_adaptive_avg_pool2d +1 refused: 1 -> 0 ATen ops on CPU, partitions 2 -> 1$' "$tmp/out"
expect_cg 0 assign "$tiny" --target executorch-xnnpack --no-time \
    --assume-supported aten:_adaptive_avg_pool2d
expect_out "18/18 nodes on executorch-xnnpack, 0 on CPU" "Verdict: full residency"

# LiteRT targets judge TFLite ops: keys name them (tflite:GREATER), and an
# op the converter leaves as ONNX keeps its onnx: domain
expect_cg 0 assign "$G/if_ok.onnx" --target litert-gpu --no-time
expect_out "tflite:GREATER" "onnx:If"
expect_cg 0 assign "$G/cpu_heavy.onnx" --target litert-gpu
check "the Einsum saves time" grep -Eq '^  onnx:Einsum +1 refused: 1 -> 0 TFLite ops on CPU.*saves' "$tmp/out"
expect_cg 0 assign "$G/cpu_heavy.onnx" --target litert-gpu --no-time --assume-supported Einsum
expect_out "0 on CPU"

# an executing target can be assumed on too (it only places then)
expect_cg 0 assign "$tiny" --target xnnpack --no-time --assume-supported Flatten

# usage errors
expect_cg 2 assign "$tiny" --target nnapi --assume-supported ""
expect_err "an empty op name"
expect_cg 2 assign "$tiny" --target nnapi --assume-supported "Relu,,Conv"
expect_err "an empty op name"
expect_cg 2 assign "$tiny" --target nnapi --assume-supported "tflite:"
expect_err "an empty op name"
finish
