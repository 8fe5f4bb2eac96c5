#!/usr/bin/env bash
# 'convgate rewrite' on the crafted models of tests/data/rewrite
# (tools/make_rewrite_cases.py): each compatibility rewrite takes its model
# from partial to full residency on the target that refused it, verified
# exact or within the fp32 noise floor; the written model passes our checker
# and python3-onnx's and reloads; a rewrite that would change results is
# refused (exit 1, model unchanged); the GELU approximation waits for
# --opt-in; the precision rewrites make the fp16 cases pass gate 3 on
# litert-gpu; --what-if writes nothing and estimates after each step;
# MobileNetV3-small from the zoo (when there) goes to full residency on
# nnapi. Residency is counted as assign counts it, on the graph the target's
# runtime partitions.
set -u
bin=${1:?usage: rewrite_cli.sh CONVGATE_BINARY SOURCE_DIR}
src=${2:?usage: rewrite_cli.sh CONVGATE_BINARY SOURCE_DIR}
. "$(dirname "${BASH_SOURCE[0]}")/lib/harness.bash"
data="$src/tests/data/rewrite"
# json EXPR: a python expression over r (the --json result) must be true
have_onnx=0
"$py" -c 'import onnx' 2>/dev/null && have_onnx=1
onnx_checks() { [ $have_onnx = 0 ] || "$py" -c 'import onnx,sys; onnx.checker.check_model(onnx.load(sys.argv[1]))' "$1"; }

cg rewrite --list
check "--list: exit 0" rc 0
check "--list names the catalog" out_has "gathernd-to-gather"
cg rewrite "$data/expand.onnx" --target litert-gpu -o "$tmp/x.onnx" --only no-such-rewrite
check "--only unknown: exit 2" rc 2
check "--only unknown: names the catalog" err_has "no rewrite is called 'no-such-rewrite'"
cg rewrite "$data/expand.onnx" --target litert-gpu
check "neither -o nor --what-if: exit 2" rc 2

# model, target, the rewrite that must apply
while read -r case target name; do
    out="$tmp/$case.onnx"
    cg rewrite "$data/$case.onnx" --target "$target" -o "$out" --json
    check "$case: exit 0" rc 0
    check "$case: partial before ($target)" out_json 'r["before"]["cpu"] > 0'
    check "$case: full after ($target)" out_json 'r["after"]["cpu"] == 0 and r["after"]["partitions"] == 1'
    check "$case: $name applied" out_json "any(s['name'] == '$name' and s['outcome'] == 'applied' for s in r['steps'])"
    check "$case: $name verified (exact or within the fp32 floor)" out_json "all(c['exact'] or c['judgement']['verdict'] == 'matches (fp32 noise)' for s in r['steps'] if s['name'] == '$name' for c in s['checks'])"
    cg check "$out"
    check "$case: the result passes convgate check" rc 0
    check "$case: the result passes onnx.checker" onnx_checks "$out"
    cg assign "$out" --target "$target"
    check "$case: assign on the result: full residency" out_has "full residency"
done <<'EOF'
gathernd_box litert-gpu gathernd-to-gather
gathernd_points litert-gpu gathernd-to-gather
pixel_shuffle litert-gpu rank-reduction
window_partition litert-gpu rank-reduction
packed_qkv litert-gpu rank-reduction
convtranspose nnapi convtranspose-to-conv
where_prelu nnapi where-to-arithmetic
where_elu nnapi where-to-arithmetic
where_mask nnapi where-to-arithmetic
where_hardswish nnapi where-to-arithmetic
conv_bias_add nnapi conv-bias-folding
conv_bias_add nnapi bn-folding
hard_activations nnapi hard-activations
global_pool coreml-mlprogram flatten-to-reshape
expand litert-gpu expand-to-broadcast
reflect_pad nnapi reflect-pad-to-concat
EOF
# placed on the graph each runtime partitions, as assign places it: a
# converter already writes GlobalAveragePool as MEAN and Flatten as RESHAPE
# for litert-gpu, so neither rewrite is needed there; ExecuTorch's XNNPACK
# partitioner has no config for the global pool (_adaptive_avg_pool2d, the
# edge op torch.export writes for it), so the rewrite takes it
cg rewrite "$data/global_pool.onnx" --target litert-gpu --what-if --json
check "global_pool on litert-gpu: full before (MEAN, RESHAPE)" out_json 'r["before"]["cpu"] == 0 and r["before"]["partitions"] == 1'
check "global_pool on litert-gpu: neither pool nor Flatten rewritten" out_json 'all(s["outcome"] != "applied" for s in r["steps"] if s["name"] in ("global-pool-to-reduce", "flatten-to-reshape"))'
cp "$tmp/out" "$tmp/rewrite.json"
cg assign "$data/global_pool.onnx" --target litert-gpu --json
check "global_pool on litert-gpu: rewrite's residency is assign's" "$py" -c 'import json,sys; a=json.load(open(sys.argv[1]))["result"]; b=json.load(open(sys.argv[2]))["result"]["before"]; sys.exit(0 if (a["nodes_total"], a["nodes_on_target"], len(a["partitions"]), a["removed_by_runtime"]) == (b["nodes"], b["on_target"], b["partitions"], b["removed_by_runtime"]) else 1)' "$tmp/out" "$tmp/rewrite.json"
cg rewrite "$data/global_pool.onnx" --target executorch-xnnpack --what-if --json
check "global_pool on executorch-xnnpack: global-pool-to-reduce applied, fewer on the CPU" out_json 'any(s["name"] == "global-pool-to-reduce" and s["outcome"] == "applied" for s in r["steps"]) and r["after"]["cpu"] < r["before"]["cpu"]'

# a compatibility rewrite with no gain alone is retried once later ones are
# in: on litert-gpu (one partition) the GatherND's Slice only grows a small
# piece until the Expand after it is rewritten too
cg rewrite "$data/retry_rounds.onnx" --target litert-gpu -o "$tmp/retry.onnx" --json
check "retry_rounds: exit 0" rc 0
check "retry_rounds: partial -> full on litert-gpu" out_json 'r["before"]["cpu"] > 0 and r["after"]["cpu"] == 0 and r["after"]["partitions"] == 1'
check "retry_rounds: gathernd-to-gather kept on pass 2" out_json 'any(s["name"] == "gathernd-to-gather" and s["outcome"] == "applied" and "kept on pass 2" in s["detail"] for s in r["steps"])'
check "retry_rounds: expand-to-broadcast applied on the first pass" out_json 'any(s["name"] == "expand-to-broadcast" and s["outcome"] == "applied" and "kept on pass" not in s["detail"] for s in r["steps"])'

# the pixel shuffle becomes one DepthToSpace
check "pixel shuffle: DepthToSpace" grep -q DepthToSpace "$tmp/pixel_shuffle.onnx"
# the Where-built HardSwish becomes a Clip (RELU6), no Where or comparison left
check "hardswish: Clip, no Where" "$py" -c 'import onnx,sys; ops=[n.op_type for n in onnx.load(sys.argv[1]).graph.node]; sys.exit(0 if "Clip" in ops and not {"Where", "LessOrEqual", "GreaterOrEqual"} & set(ops) else 1)' "$tmp/where_hardswish.onnx"

# a rewrite that would change results is refused
cg rewrite "$data/where_mask_inf.onnx" --target nnapi -o "$tmp/inf.onnx" --json
check "-inf mask: exit 1 (a rewrite refused)" rc 1
check "-inf mask: where-to-arithmetic refused" out_json 'any(s["name"] == "where-to-arithmetic" and s["outcome"] == "refused" and "wrong result" in s["detail"] for s in r["steps"])'
check "-inf mask: still partial" out_json 'r["after"]["cpu"] > 0 and r["applied"] == 0'
cg rewrite "$data/where_mask_inf.onnx" --target nnapi -o "$tmp/inf.onnx"
check "-inf mask text: says refused and why" out_has "refused: output 'y': wrong result"

# an approximation only when opted in
# (on nnapi: for litert-gpu a converter writes the Erf-GELU pattern as one GELU)
cg rewrite "$data/gelu.onnx" --target nnapi -o "$tmp/gelu.onnx" --json
check "gelu: exit 0" rc 0
check "gelu: not opted in" out_json 'any(s["name"] == "gelu-tanh" and s["outcome"] == "not opted in" for s in r["steps"])'
check "gelu: Erf stays on the CPU" out_json 'r["after"]["cpu"] > 0'
cg rewrite "$data/gelu.onnx" --target nnapi -o "$tmp/gelu.onnx" --opt-in gelu-tanh --json
check "gelu opted in: full residency" out_json 'r["after"]["cpu"] == 0'
check "gelu opted in: the change is measured and stated" out_json 'any(s["name"] == "gelu-tanh" and s["outcome"] == "applied" and not s["exact"] and 0 < s["checks"][0]["max_abs"] < 1e-3 and "accepted: opted in" in s["detail"] for s in r["steps"])'

# fp16 precision: gate 3 on litert-gpu accumulating in fp16 (a GPU computing
# in f16) fails before, passes after
while read -r model inputs name; do
    cg gate "$src/$model" --target litert-gpu --accumulate fp16 --inputs "$src/$inputs" --min-coverage 0
    check "$model: gate 3 fails before" rc 1
    cg rewrite "$src/$model" --target litert-gpu --accumulate fp16 --inputs "$src/$inputs" -o "$tmp/p.onnx" --json
    check "$model: rewrite exit 0" rc 0
    check "$model: $name applied, the target path's error falls" out_json "any(s['name'] == '$name' and s['outcome'] == 'applied' and float(s['target_error_after']) < float(s['target_error_before']) for s in r['steps'])"
    cg gate "$tmp/p.onnx" --target litert-gpu --accumulate fp16 --inputs "$src/$inputs" --min-coverage 0
    check "$model: gate passes after" rc 0
    check "$model: the result passes onnx.checker" onnx_checks "$tmp/p.onnx"
done <<'EOF'
examples/rmsnorm_fp16.onnx examples/rmsnorm_fp16_inputs fp16-scale-squares
tests/data/rewrite/l2norm_overflow.onnx tests/data/rewrite/l2norm_overflow_inputs fp16-sumsquare-rescale
tests/data/rewrite/layernorm_overflow.onnx tests/data/rewrite/layernorm_overflow_inputs fp16-scale-squares
tests/data/fp16/global_mean.onnx tests/data/fp16/global_mean_inputs fp16-hierarchical-mean
EOF
# on an fp32 target the precision rewrites do not apply
cg rewrite "$src/examples/rmsnorm_fp16.onnx" --target tflite-xnnpack --inputs "$src/examples/rmsnorm_fp16_inputs" --what-if --json
check "fp32 target: precision rewrites not applicable" out_json 'all(s["outcome"] == "not applicable" for s in r["steps"] if s["kind"] == "precision")'

# --what-if writes nothing and estimates after each applied step
cg rewrite "$src/examples/tiny_cnn.onnx" --target executorch-xnnpack --dim batch=1 --what-if --json
check "what-if: exit 0" rc 0
check "what-if: no output" out_json 'r["output"] is None'
check "what-if: global-pool-to-reduce applied with residency, partitions and latency after it" out_json 'any(s["name"] == "global-pool-to-reduce" and s["outcome"] == "applied" and s["after"]["cpu"] < r["before"]["cpu"] and s["after"]["partitions"] >= 1 and isinstance(s["after"]["mixed_ms"], float) for s in r["steps"])'
cg rewrite "$src/examples/tiny_cnn.onnx" --target executorch-xnnpack --dim batch=1 --what-if
check "what-if text: after it" out_has "after it:"
check "what-if text: mixed latency" out_has "mixed latency"

# a real model (the zoo, when there): torchvision's MobileNetV3-small goes to
# full residency on nnapi (ONNX Runtime's graph: its Identity nodes already
# gone) once its HardSigmoid and HardSwish are arithmetic NNAPI takes
zoo=${CG_ZOO:-$src/zoo}
if [ -f "$zoo/mobilenet_v3_small.onnx" ]; then
    cg rewrite "$zoo/mobilenet_v3_small.onnx" --target nnapi --random 1 -o "$tmp/mv3.onnx" --json
    check "mobilenet_v3_small: exit 0" rc 0
    check "mobilenet_v3_small: partial -> full on nnapi" out_json 'r["before"]["cpu"] > 20 and r["before"]["partitions"] > 20 and r["after"]["cpu"] == 0 and r["after"]["partitions"] == 1'
    check "mobilenet_v3_small: hard-activations applied" out_json 'any(s["name"] == "hard-activations" and s["outcome"] == "applied" for s in r["steps"])'
    check "mobilenet_v3_small: every step verified" out_json 'all(c["exact"] or c["judgement"]["verdict"] == "matches (fp32 noise)" for s in r["steps"] if s["outcome"] == "applied" for c in s["checks"])'
    # on litert-gpu a converter writes its pools as MEAN and drops its
    # Identity nodes: fully resident before any rewrite, as assign says
    cg rewrite "$zoo/mobilenet_v3_small.onnx" --target litert-gpu --random 1 --what-if --json
    check "mobilenet_v3_small: full on litert-gpu before any rewrite" out_json 'r["before"]["cpu"] == 0 and r["before"]["partitions"] == 1 and r["before"]["removed_by_runtime"] > 0'
fi

finish "$([ $have_onnx = 0 ] && echo "onnx.checker (python3-onnx missing)")"
