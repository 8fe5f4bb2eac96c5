#!/usr/bin/env bash
# 'convgate convert' and 'convgate verify DIR': the fp16 RMSNorm example
# converted for litert-gpu accumulating in fp16 (--accumulate fp16: a GPU
# computing in f16; the profile's fp32 accumulation needs no rewrite) passes
# all three gates (gate 3 included, which the source fails); the artifact holds model.onnx, golden/, deploy/,
# README.md and a manifest with every figure and hash; converting twice
# gives byte-identical files; verify DIR passes, on the reference and on
# the target path, and rejects every tampering (a flipped byte in the model,
# a golden output, the README, a file removed, a link planted in a file's
# place, a manifest of an unknown format); large weights go to
# model.onnx.data and are checked too; a source that fails the checker
# writes nothing; a non-empty DIR needs --force.
set -u
bin=${1:?usage: convert_cli.sh CONVGATE_BINARY SOURCE_DIR}
src=${2:?usage: convert_cli.sh CONVGATE_BINARY SOURCE_DIR}
bin=$(readlink -f "$bin")
src=$(cd "$src" && pwd)
. "$(dirname "${BASH_SOURCE[0]}")/lib/harness.bash"
model="$src/examples/rmsnorm_fp16.onnx"
inputs="$src/examples/rmsnorm_fp16_inputs"
# man EXPR: a python expression over m (DIR/manifest.json) must be true
man() { "$py" -c 'import json,sys; m=json.load(open(sys.argv[1])); sys.exit(0 if eval(sys.argv[2]) else 1)' "$1/manifest.json" "$2"; }
flip() {
    local b
    b=$(od -An -tu1 -j "$2" -N1 "$1" | tr -d ' ')
    printf "$(printf '\\%03o' $((b ^ 255)))" | dd of="$1" bs=1 seek="$2" conv=notrunc status=none
}

cg gate "$model" --target litert-gpu --accumulate fp16 --inputs "$inputs"
check "the source fails gate 3 on litert-gpu" rc 1

# two runs, same options, from two folders: byte-identical artifacts
mkdir -p "$tmp/r1" "$tmp/r2"
(cd "$tmp/r1" && "$bin" convert "$model" --target litert-gpu --accumulate fp16 --inputs "$inputs" -o art \
    >"$tmp/out" 2>"$tmp/err"; echo $? >"$tmp/rc")
check "convert: exit 0 (every gate passes)" rc 0
check "convert: reports the gates" out_has "gates: 1 PASS, 2 PASS, 3 PASS"
(cd "$tmp/r2" && "$bin" convert "$model" --target litert-gpu --accumulate fp16 --inputs "$inputs" -o art \
    >/dev/null 2>&1)
check "convert twice: byte-identical files" diff -r "$tmp/r1/art" "$tmp/r2/art"
a="$tmp/r1/art"
for f in model.onnx README.md manifest.json golden/manifest.json \
         deploy/ort_required_operators.config deploy/tflm_op_resolver.cc; do
    check "artifact has $f" test -s "$a/$f"
done
check "manifest: format" man "$a" 'm["format"] == "convgate-artifact" and m["format_version"] == 1'
check "manifest: convgate version and commit" man "$a" 'm["convgate"]["version"] and len(m["convgate"]["commit"]) >= 7'
sha=$(sha256sum "$model" | cut -d' ' -f1)
rsha=$(sha256sum "$a/model.onnx" | cut -d' ' -f1)
check "manifest: source sha256" man "$a" "m['source']['sha256'] == '$sha'"
check "manifest: result sha256" man "$a" "m['result']['sha256'] == '$rsha'"
check "manifest: the command line" man "$a" 'm["command"][:2] == ["convgate", "convert"] and "-o" in m["command"]'
check "manifest: the profile, its version and sources" man "$a" 'm["targets"][0]["name"] == "litert-gpu" and m["targets"][0]["profile"] == "litert-gpu.json" and m["targets"][0]["version"] and len(m["targets"][0]["sources"]) > 0'
check "manifest: the rewrite with its parity" man "$a" 'any(s["name"] == "fp16-scale-squares" and s["outcome"] == "applied" and s["exact"] and s["checks"] for s in m["rewrites"])'
check "manifest: residency, partitions, boundaries" man "$a" '"7/7 nodes on litert-gpu" in m["placement"]["after"]["residency"] and len(m["placement"]["after"]["partitions"]) == 1 and m["placement"]["after"]["boundaries"] == []'
check "manifest: coverage and mixed latency (deterministic estimate)" man "$a" 'm["estimate"]["time_coverage"] == 1 and m["estimate"]["mixed_ms"] > 0 and "not a timing" in m["estimate"]["basis"]'
check "manifest: tolerance and each gate's verdict" man "$a" 'm["tolerance"]["atol"] == 1e-05 and m["gates"]["converts"] == m["gates"]["runs"] == m["gates"]["matches"] == "PASS"'
check "manifest: fp32 first, then the target path" man "$a" 'm["compare"]["fp32"]["pass"] and m["compare"]["target"]["pass"] and m["compare"]["target"]["reduced_precision"]'
check "manifest: golden hashes" man "$a" 'm["golden"]["manifest_sha256"] and sum(f["path"].startswith("golden/") for f in m["files"]) == 5'
check "README: the numbers and the recipe" grep -q "## Recipe" "$a/README.md"

# without --accumulate, litert-gpu is judged as both device classes (F16
# devices sum in fp16): the rewrite is kept because it removes the overflow
# of the class that sums in fp16, as gate 3 judges it (demo.sh's step 4)
cg convert "$model" --target litert-gpu --inputs "$inputs" -o "$tmp/classes"
check "convert, both device classes: exit 0 (every gate passes)" rc 0
check "convert, both device classes: the rewrite is applied" man "$tmp/classes" 'any(s["name"] == "fp16-scale-squares" and s["outcome"] == "applied" for s in m["rewrites"])'

# the placement before and after is assign's: on the graph litert-gpu
# partitions (the TFLite ops a converter emits: BatchNormalization folded,
# the pool as MEAN, Flatten as RESHAPE), not the ONNX file's
cg convert "$src/examples/tiny_cnn.onnx" --target litert-gpu --random 1 -o "$tmp/tiny"
check "tiny_cnn: convert exit 0" rc 0
# same JSON_FILE: assign's --json residency line is the manifest's (before|after)
same() { "$py" -c 'import json,sys; a=json.load(open(sys.argv[1]))["result"]; m=json.load(open(sys.argv[2])); p=m["placement"]["before"] if sys.argv[3] == "before" else m["placement"]["after"]["residency"]; sys.exit(0 if p.startswith("%d/%d nodes on litert-gpu, %d on CPU" % (a["nodes_on_target"], a["nodes_total"], a["nodes_on_cpu"])) and a["removed_by_runtime"] > 0 else 1)' "$1" "$tmp/tiny/manifest.json" "$2"; }
cg assign "$src/examples/tiny_cnn.onnx" --target litert-gpu --no-time --json
cp "$tmp/out" "$tmp/assign_src.json"
check "tiny_cnn: the placement before is assign's on the source" same "$tmp/assign_src.json" before
cg assign "$tmp/tiny/model.onnx" --target litert-gpu --no-time --json
cp "$tmp/out" "$tmp/assign_res.json"
check "tiny_cnn: the placement after is assign's on the result" same "$tmp/assign_res.json" after
check "README: how to verify" grep -qF "convgate verify ." "$a/README.md"
check "ORT config" grep -qx "ai.onnx;13;Add,Div,Mul,ReduceMean,Sqrt" "$a/deploy/ort_required_operators.config"
check "TFLM resolver" grep -qF "resolver.AddMean()" "$a/deploy/tflm_op_resolver.cc"
# the golden set records the source's noise floors (format 2), and verify
# and gate 3 judge the result against them, not by a fixed tolerance
gm() { "$py" -c 'import json,sys; m=json.load(open(sys.argv[1])); sys.exit(0 if eval(sys.argv[2]) else 1)' "$a/golden/manifest.json" "$1"; }
check "golden: format 2" gm 'm["format_version"] == 2'
check "golden: every output of every set has its fp32 and fp16 floors" gm 'all(isinstance(o["noise"]["fp32_floor"], float) and isinstance(o["noise"]["fp16_floor"], float) and o["noise"]["fp32_floor"] <= o["noise"]["fp16_floor"] and o["noise"]["scale"] > 0 for s in m["sets"] for o in s["outputs"])'
cg gate "$a/model.onnx" --target litert-gpu --accumulate fp16 --golden "$a/golden" --json "$tmp/gate.json"
check "the result passes gate 3 on litert-gpu against the source's golden outputs" rc 0
check "gate --golden: judged by the recorded floors, at fp16 precision" "$py" -c 'import json,sys; m=json.load(open(sys.argv[1]))["result"]["matches"]; sys.exit(0 if m["judged_by_noise_floor"] and all(o["verdict"]["verdict"] == "matches at fp16 precision" for o in m["outputs"]) else 1)' "$tmp/gate.json"

cg verify "$a"
check "verify DIR: exit 0" rc 0
check "verify DIR: files checked" out_has "files match manifest.json"
cg verify "$a" --target litert-gpu --accumulate fp16 --json
check "verify DIR --target: exit 0" rc 0
check "verify DIR --json: artifact and verify" "$py" -c 'import json,sys; r=json.load(open(sys.argv[1]))["result"]; sys.exit(0 if r["artifact"]["files_checked"] == 9 and r["verify"]["pass"] else 1)' "$tmp/out"
check "verify DIR --json: judged by the golden set's floors" "$py" -c 'import json,sys; r=json.load(open(sys.argv[1]))["result"]["verify"]; sys.exit(0 if r["judged_by_noise_floor"] and not r["note"] else 1)' "$tmp/out"

# tampering: each a fresh copy, each refused (exit 2) naming the file
tamper() {
    local what=$1 file=$2
    rm -rf "$tmp/t"
    cp -r "$a" "$tmp/t"
    shift 2
    "$@"
    cg verify "$tmp/t"
    check "tampered $what: exit 2" rc 2
    check "tampered $what: names $file" err_has "'$file'"
}
tamper "model" model.onnx flip "$tmp/t/model.onnx" 40
tamper "golden output" golden/sample_1/outputs/y.npy flip "$tmp/t/golden/sample_1/outputs/y.npy" 200
tamper "README" README.md sh -c "echo extra >> '$tmp/t/README.md'"
tamper "deploy list" deploy/tflm_op_resolver.cc sh -c "echo '// x' >> '$tmp/t/deploy/tflm_op_resolver.cc'"
tamper "removed golden manifest" golden/manifest.json rm "$tmp/t/golden/manifest.json"
tamper "linked model" model.onnx sh -c "rm '$tmp/t/model.onnx' && ln -s '$a/model.onnx' '$tmp/t/model.onnx'"
# a link in place of a folder above a listed file: the bytes behind it are
# the same, and still refused (a folder is no more trusted than a file)
for folder in golden deploy; do
    rm -rf "$tmp/t" && cp -r "$a" "$tmp/t"
    rm -rf "$tmp/t/$folder" && ln -s "$a/$folder" "$tmp/t/$folder"
    cg verify "$tmp/t"
    check "linked folder $folder: exit 2" rc 2
    check "linked folder $folder: names it as a link" err_has "'$folder' in '$folder/"
    check "linked folder $folder: says link" err_has "symbolic link"
done
# a listed path with '..' that leads to a real, correctly hashed file
rm -rf "$tmp/t" && cp -r "$a" "$tmp/t"
"$py" - "$tmp/t/manifest.json" <<'PY'
import json, sys
m = json.load(open(sys.argv[1]))
readme = next(f for f in m["files"] if f["path"] == "README.md")
m["files"].append(dict(readme, path="golden/../README.md"))
json.dump(m, open(sys.argv[1], "w"))
PY
cg verify "$tmp/t"
check "'..' in a listed path: exit 2" rc 2
check "'..' in a listed path: refused as unsafe" err_has "unsafe path 'golden/../README.md'"
rm -rf "$tmp/t" && cp -r "$a" "$tmp/t"
sed -i 's/"format_version": 1,/"format_version": 99,/' "$tmp/t/manifest.json"
cg verify "$tmp/t"
check "unknown format_version: exit 2" rc 2
check "unknown format_version: says so" err_has "format_version 99"

# a non-empty DIR needs --force
cg convert "$model" --target litert-gpu --accumulate fp16 --inputs "$inputs" -o "$a"
check "non-empty DIR: exit 2" rc 2
check "non-empty DIR: names --force" err_has "--force"
cg convert "$model" --target litert-gpu --accumulate fp16 --inputs "$inputs" -o "$a" --force
check "--force: exit 0" rc 0

# large weights beside the model, hashed and checked too
cg convert "$src/examples/tiny_cnn.onnx" --target xnnpack --dim batch=1 --random 2 \
    -o "$tmp/cnn" --external-data-above 1000
check "tiny_cnn on xnnpack: written" test -s "$tmp/cnn/model.onnx.data"
check "tiny_cnn: the manifest lists model.onnx.data" man "$tmp/cnn" 'm["result"]["external_data"] == "model.onnx.data" and any(f["path"] == "model.onnx.data" for f in m["files"])'
check "tiny_cnn: BatchNormalization folded" man "$tmp/cnn" 'any(s["name"] == "bn-folding" and s["outcome"] == "applied" for s in m["rewrites"])'
cg verify "$tmp/cnn"
check "tiny_cnn: verify DIR exit 0" rc 0
flip "$tmp/cnn/model.onnx.data" 1000
cg verify "$tmp/cnn"
check "tampered external data: exit 2" rc 2
check "tampered external data: named" err_has "'model.onnx.data'"

# a source that fails the checker writes nothing
cg convert "$src/tests/data/bad/version/ir_version_99.onnx" --target litert-gpu -o "$tmp/bad"
check "failing source: exit 1" rc 1
check "failing source: nothing written" test ! -e "$tmp/bad/manifest.json"

finish
