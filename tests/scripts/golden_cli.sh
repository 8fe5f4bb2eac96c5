#!/usr/bin/env bash
# 'convgate dump-ref' and 'convgate verify' on examples/tiny_cnn.onnx: a
# golden set dumped from examples/tiny_cnn_inputs verifies (reference,
# --outputs-from with `convgate run -o` dumps), and every way a golden set
# can be wrong is an error naming the problem, never a pass: a flipped byte,
# a deleted file, another model, another format_version, an unsafe path;
# perturbed foreign outputs fail (exit 1).
set -u
bin=${1:?usage: golden_cli.sh CONVGATE_BINARY SOURCE_DIR}
src=${2:?usage: golden_cli.sh CONVGATE_BINARY SOURCE_DIR}
. "$(dirname "${BASH_SOURCE[0]}")/lib/harness.bash"
model="$src/examples/tiny_cnn.onnx"
other="$src/tests/data/io/cli_model.onnx"
ex="$src/examples/tiny_cnn_inputs"
# flips every bit of the byte at offset $2 of file $1
flip() {
    local b
    b=$(od -An -tu1 -j "$2" -N1 "$1" | tr -d ' ')
    printf "$(printf '\\%03o' $((b ^ 255)))" | dd of="$1" bs=1 seek="$2" conv=notrunc status=none
}

# input sets: DIR/<set>/<input>.npy
mkdir -p "$tmp/in/one" "$tmp/in/two"
cp "$ex/image_0.npy" "$tmp/in/one/image.npy"
cp "$ex/image_1.npy" "$tmp/in/two/image.npy"

cg dump-ref --help
check "dump-ref --help exits 0" rc 0
check "dump-ref --help names --inputs" out_has "--inputs DIR"
cg --help
check "help lists dump-ref with a dash" out_has "dump-ref"

cg dump-ref "$model" --inputs "$tmp/in" -o "$tmp/g"
check "dump-ref: exit 0" rc 0
check "dump-ref: manifest" test -f "$tmp/g/manifest.json"
check "dump-ref: input file" test -f "$tmp/g/one/inputs/image.npy"
check "dump-ref: output file" test -f "$tmp/g/two/outputs/logits.npy"
check "dump-ref: reports the sets" out_has "wrote 2 sets"
sha=$(sha256sum "$model" | cut -d' ' -f1)
check "manifest: model sha256" grep -qF "\"sha256\": \"$sha\"" "$tmp/g/manifest.json"
check "manifest: format_version 2" grep -qF '"format_version": 2' "$tmp/g/manifest.json"
check "manifest: the outputs' noise floors" grep -qF '"fp32_floor":' "$tmp/g/manifest.json"
check "manifest: the fp16 storage floor" grep -qF '"fp16_floor":' "$tmp/g/manifest.json"
fsha=$(sha256sum "$tmp/g/two/outputs/logits.npy" | cut -d' ' -f1)
check "manifest: file sha256" grep -qF "\"sha256\": \"$fsha\"" "$tmp/g/manifest.json"
check "manifest: shape" grep -qF '"shape": [' "$tmp/g/manifest.json"
check "manifest: opset_import" grep -qF '"opset_import"' "$tmp/g/manifest.json"
check "inputs copied exactly" cmp -s <(tail -c 98304 "$ex/image_0.npy") \
    <(tail -c 98304 "$tmp/g/one/inputs/image.npy")

cg dump-ref "$model" --inputs "$tmp/in" -o "$tmp/g"
check "non-empty GOLDEN refused: exit 2" rc 2
check "non-empty GOLDEN refused: says --force" err_has "--force"
cp -r "$tmp/g" "$tmp/gf"
cg dump-ref "$model" --inputs "$tmp/in" -o "$tmp/gf" --force
check "--force rewrites: exit 0" rc 0

# the reference against its own golden set
cg verify "$model" --golden "$tmp/g"
check "verify: exit 0" rc 0
check "verify: PASS verdict" out_has "verdict: PASS on reference (2/2 outputs within the noise floor)"
check "verify: the ratio" out_has "x the fp32 noise floor"
cg verify "$model" --golden "$tmp/g" --json
check "verify --json: exit 0" rc 0
check "verify --json: pass" out_has '"pass": true'
check "verify --json: model_sha256" out_has "\"model_sha256\": \"$sha\""
check "verify --json: per-set outputs" out_has '"name": "logits"'
check "verify --json: cosine" out_has '"cosine":'

# a flipped byte in a golden output
cp -r "$tmp/g" "$tmp/t1"
flip "$tmp/t1/one/outputs/logits.npy" 130
cg verify "$model" --golden "$tmp/t1"
check "tampered: exit 2" rc 2
check "tampered: names the file" err_has "one/outputs/logits.npy"
check "tampered: says altered" err_has "altered"
check "tampered: no verdict" test ! -s "$tmp/out"

# a flipped byte in a golden input
cp -r "$tmp/g" "$tmp/t2"
flip "$tmp/t2/two/inputs/image.npy" 200
cg verify "$model" --golden "$tmp/t2"
check "tampered input: exit 2" rc 2
check "tampered input: names the file" err_has "two/inputs/image.npy"

# a deleted file
cp -r "$tmp/g" "$tmp/t3"
rm "$tmp/t3/two/outputs/logits.npy"
cg verify "$model" --golden "$tmp/t3"
check "deleted: exit 2" rc 2
check "deleted: names the file" err_has "two/outputs/logits.npy"
check "deleted: says missing" err_has "missing"

# no manifest at all (an interrupted dump)
cp -r "$tmp/g" "$tmp/t4"
rm "$tmp/t4/manifest.json"
cg verify "$model" --golden "$tmp/t4"
check "no manifest: exit 2" rc 2
check "no manifest: says so" err_has "manifest.json"

# another model
osha=$(sha256sum "$other" | cut -d' ' -f1)
cg verify "$other" --golden "$tmp/g"
check "other model: exit 2" rc 2
check "other model: says so" err_has "made for another model"
check "other model: golden's hash" err_has "$sha"
check "other model: model's hash" err_has "$osha"

# another format_version
cp -r "$tmp/g" "$tmp/t5"
sed -i 's/"format_version": 2/"format_version": 7/' "$tmp/t5/manifest.json"
cg verify "$model" --golden "$tmp/t5"
check "format_version 7: exit 2" rc 2
check "format_version 7: says so" err_has "format_version 7"
# format 1 (no floors recorded) is still read: judged by the fixed tolerance,
# and the report says why
cp -r "$tmp/g" "$tmp/t7"
$py - "$tmp/t7/manifest.json" <<'PYEOF'
import json, sys
m = json.load(open(sys.argv[1]))
m["format_version"] = 1
for s in m["sets"]:
    for o in s["outputs"]:
        o.pop("noise", None)
json.dump(m, open(sys.argv[1], "w"))
PYEOF
cg verify "$model" --golden "$tmp/t7"
check "format 1: exit 0" rc 0
check "format 1: judged by the tolerance" out_has "within tolerance"
check "format 1: says why" out_has "records no noise floors"
# so is a set dumped without floors
cg dump-ref "$model" --inputs "$tmp/in" -o "$tmp/t8" --no-floors
cg verify "$model" --golden "$tmp/t8"
check "--no-floors: exit 0" rc 0
check "--no-floors: judged by the tolerance" out_has "records no noise floors"
# a broken floor is refused like any other manifest error
cp -r "$tmp/g" "$tmp/t9"
sed -i '0,/"fp32_floor": [^,]*/s//"fp32_floor": -1/' "$tmp/t9/manifest.json"
cg verify "$model" --golden "$tmp/t9"
check "negative floor: exit 2" rc 2
check "negative floor: says so" err_has "noise is not"

# a manifest pointing outside the directory
cp -r "$tmp/g" "$tmp/t6"
sed -i 's|"file": "one/outputs/logits.npy"|"file": "../g/one/outputs/logits.npy"|' \
    "$tmp/t6/manifest.json"
cg verify "$model" --golden "$tmp/t6"
check "unsafe path: exit 2" rc 2
check "unsafe path: says so" err_has "not a safe relative path"

# outputs produced elsewhere: `convgate run -o DIR/<set>` per set
mkdir -p "$tmp/dev"
"$bin" run "$model" -i "image=$ex/image_0.npy" -o "$tmp/dev/one" >/dev/null 2>&1
"$bin" run "$model" -i "image=$ex/image_1.npy" -o "$tmp/dev/two" >/dev/null 2>&1
cg verify "$model" --golden "$tmp/g" --outputs-from "$tmp/dev"
check "--outputs-from: exit 0" rc 0
check "--outputs-from: PASS" out_has "verdict: PASS on outputs from $tmp/dev"

# PyTorch's logits (examples/README.md: within 3.7e-8 of onnxruntime) pass the defaults
mkdir -p "$tmp/pt/one" "$tmp/pt/two"
cp "$ex/logits_0.npy" "$tmp/pt/one/logits.npy"
cp "$ex/logits_1.npy" "$tmp/pt/two/logits.npy"
cg verify "$model" --golden "$tmp/g" --outputs-from "$tmp/pt"
check "PyTorch outputs: exit 0" rc 0

cp -r "$tmp/dev" "$tmp/bad"
size=$(stat -c %s "$tmp/bad/two/logits.npy")
flip "$tmp/bad/two/logits.npy" $((size - 1))
cg verify "$model" --golden "$tmp/g" --outputs-from "$tmp/bad" --json
check "perturbed outputs: exit 1" rc 1
check "perturbed outputs: pass false" out_has '"pass": false'
cg verify "$model" --golden "$tmp/g" --outputs-from "$tmp/bad"
check "perturbed outputs (text): exit 1" rc 1
check "perturbed outputs: FAIL verdict" out_has "verdict: FAIL"
check "perturbed outputs: set one still passes" grep -qE "logits +PASS" "$tmp/out"

rm "$tmp/bad/one/logits.npy"
cg verify "$model" --golden "$tmp/g" --outputs-from "$tmp/bad"
check "missing foreign output: exit 2" rc 2
check "missing foreign output: names it" err_has "'logits'"

# a tolerance file: loose enough for the perturbation? No: 1e30 is
cat >"$tmp/tol.json" <<'EOF'
{"default": {"atol": 1e-5, "rtol": 1e-4},
 "outputs": {"logits": {"atol": 1e38, "justification": "test: anything goes"}}}
EOF
cp "$tmp/dev/one/logits.npy" "$tmp/bad/one/logits.npy"
cg verify "$model" --golden "$tmp/g" --outputs-from "$tmp/bad" --tol "$tmp/tol.json"
check "--tol: exit 0" rc 0
check "--tol: justification printed" out_has "test: anything goes"
echo '{"outputs": {"logits": {"atol": -1}}}' >"$tmp/badtol.json"
cg verify "$model" --golden "$tmp/g" --tol "$tmp/badtol.json"
check "bad --tol: exit 2" rc 2
cg verify "$model" --golden "$tmp/g" --tol "$tmp/tol.json" --atol 1
check "--tol with --atol: exit 2" rc 2

# random sets
cg dump-ref "$model" --random 2 --seed 7 --dim batch=1 -o "$tmp/r"
check "dump-ref --random: exit 0" rc 0
check "dump-ref --random: set dirs" test -f "$tmp/r/random-1/inputs/image.npy"
cg verify "$model" --golden "$tmp/r"
check "verify random golden: exit 0" rc 0
cg dump-ref "$model" --random 1 -o "$tmp/r2/deep/er"
check "--random without --dim batch: 1, as everywhere" rc 0
check "-o makes the missing parent folders" test -f "$tmp/r2/deep/er/manifest.json"
cg dump-ref "$model" --random 1 --dim batsh=2 -o "$tmp/r3"
check "unknown --dim symbol: exit 2" rc 2
check "unknown --dim symbol: names the model's" err_has "symbolic dims are: batch"

# bad input sets
mkdir -p "$tmp/in2/x"
cp "$ex/image_0.npy" "$tmp/in2/x/imag.npy"
cg dump-ref "$model" --inputs "$tmp/in2" -o "$tmp/g2"
check "misnamed input: exit 2" rc 2
check "misnamed input: names the set and input" err_has "sample 'x': no file for input 'image'"
cp "$ex/image_0.npy" "$tmp/in2/x/image.npy"
cg dump-ref "$model" --inputs "$tmp/in2" -o "$tmp/g3"
check "extra file in a set: exit 2" rc 2
check "extra file: named" err_has "imag.npy"

# a target path, where one is listed (xnnpack computes in fp32)
xnn_skipped=0
if "$bin" targets 2>/dev/null | grep -q '^ *xnnpack'; then
    cg verify "$model" --golden "$tmp/g" --target xnnpack --json
    check "--target xnnpack: exit 0" rc 0
    check "--target xnnpack: target named" out_has '"target": "xnnpack"'
else
    xnn_skipped=1
fi
cg verify "$model" --golden "$tmp/g" --target no-such-target
check "unknown target: exit 2" rc 2

finish "$([ "$xnn_skipped" = 1 ] && echo "the xnnpack part (no xnnpack target)")"
