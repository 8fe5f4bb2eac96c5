#!/usr/bin/env bash
# 'convgate inspect' and 'convgate check' on .tflite files: every fixture
# under tests/data/tflite checks clean (custom/Flex ops only warned), the
# format is found from the "TFL3" identifier and not the extension (a
# .tflite renamed .bin, an ONNX file renamed .tflite, standard input), the
# JSON has the keys docs/inspect-json.md documents with their values on
# known fixtures, and the text report shows the contract and flags.
set -u
bin=${1:?usage: tflite_cli.sh CONVGATE_BINARY SOURCE_DIR}
src=${2:?usage: tflite_cli.sh CONVGATE_BINARY SOURCE_DIR}
. "$(dirname "${BASH_SOURCE[0]}")/lib/harness.bash"
d="$src/tests/data/tflite"

n=0
while IFS= read -r f; do
    n=$((n + 1))
    "$bin" check "$f" >"$tmp/out" 2>&1
    rc=$?
    check "check $f: exit $rc" test "$rc" -eq 0
    "$bin" inspect --json "$f" >"$tmp/$n.json" 2>"$tmp/err"
    check "inspect --json $f" test $? -eq 0
    "$bin" inspect "$f" >/dev/null 2>&1
    check "inspect $f" test $? -eq 0
done < <(find "$d" -name '*.tflite' | sort)
check "fixtures found" test "$n" -ge 5

# the identifier decides, not the extension
cp "$d/reader/add_signature.tflite" "$tmp/model.bin"
"$bin" inspect "$tmp/model.bin" >"$tmp/out" 2>&1
check ".tflite named .bin is read as TFLite" out_has "format       TFLite, schema version 3"
cp "$src/examples/tiny_cnn.onnx" "$tmp/onnx.tflite"
"$bin" check "$tmp/onnx.tflite" >"$tmp/out" 2>&1
check "ONNX named .tflite is read as ONNX" test $? -eq 0
"$bin" inspect --json - <"$d/reader/add_signature.tflite" >"$tmp/out" 2>&1
check "standard input is detected" out_has '"format": "tflite"'

# text report
"$bin" inspect "$d/reader/add_signature.tflite" >"$tmp/out" 2>&1
check "dynamic dim shown" out_has "[?, 4]   dynamic: axis 0"
check "signature shown" out_has "signature    'serving_default' -> subgraph 0; inputs x=#0; outputs y=#2"
check "metadata shown" out_has 'metadata     min_runtime_version = "1.5.0"'
"$bin" inspect "$d/reader/flex_and_custom.tflite" >"$tmp/out" 2>&1
check "Flex flagged" out_has "FlexAddV2                              1      1  FLEX (SELECT_TF_OPS)"
"$bin" check "$d/reader/flex_and_custom.tflite" >"$tmp/out" 2>&1
check "check warns about Flex" out_has "warning [flex-op]"
check "check warns about custom" out_has "warning [custom-op]"
"$bin" inspect "$d/reader/offset_buffers.tflite" >"$tmp/out" 2>&1
check "offset buffers counted" out_has "2 stored past the FlatBuffer (108 B)"

# JSON keys and values
"$bin" inspect --json "$d/reader/conv_int8_per_channel.tflite" >"$tmp/conv.json"
"$bin" inspect --json "$d/reader/if_then_else.tflite" >"$tmp/if.json"
"$bin" inspect --json "$d/reader/add_signature.tflite" >"$tmp/add.json"
"$bin" inspect --json "$src/examples/tiny_cnn.onnx" >"$tmp/onnx.json"
$py - "$tmp" <<'EOF'
import json, sys
tmp = sys.argv[1]
# --json prints docs/json.md's envelope; the report is its result
conv = json.load(open(tmp + "/conv.json"))["result"]
iff = json.load(open(tmp + "/if.json"))["result"]
add = json.load(open(tmp + "/add.json"))["result"]
onnx = json.load(open(tmp + "/onnx.json"))["result"]
errors = []
def expect(cond, what):
    if not cond:
        errors.append(what)
shared = ["schema_version", "format", "file", "file_bytes", "graph_name", "inputs", "outputs",
          "inputs_with_initializer_default", "initializers", "node_count",
          "node_count_with_subgraphs", "ops", "custom_ops", "control_flow", "largest_tensors",
          "metadata"]
for k in shared:
    expect(k in conv and k in onnx, "key %s in both formats" % k)
expect(onnx["format"] == "onnx" and conv["format"] == "tflite", "format")
expect(set(conv["inputs"][0]) >= set(onnx["inputs"][0]), "value keys are a superset of ONNX's")
expect(set(conv["initializers"]) == set(onnx["initializers"]), "initializers keys")
ops = {(o["op_type"], o["version"]): o for o in conv["ops"]}
expect(("CONV_2D", 3) in ops and ops[("CONV_2D", 3)]["builtin_code"] == 3, "CONV_2D v3")
w = conv["tflite"]["subgraphs"][0]["tensors"][2]
expect(w["name"] == "w" and w["quantization"]["per_axis"] and
       w["quantization"]["scale_count"] == 4 and w["quantization"]["quantized_dimension"] == 0,
       "per-axis quantization")
expect(conv["tflite"]["per_axis_quantized_tensors"] == 2, "per-axis count")
expect(iff["control_flow"] == [{"op_type": "IF", "count": 1}], "control flow")
expect(iff["node_count"] == 3 and iff["node_count_with_subgraphs"] == 5, "node counts")
expect([o["op_type"] for o in iff["ops"] if o["in_subgraph_only"]] == ["MUL", "SUB"],
       "ops only in branches")
expect(add["inputs"][0]["shape"] == [None, 4] and add["inputs"][0]["dynamic"] == ["axis 0"],
       "dynamic input")
x = add["tflite"]["subgraphs"][0]["tensors"][0]
expect(x["shape"] == [1, 4] and x["shape_signature"] == [-1, 4], "stored shape and signature")
expect(add["metadata"] == {"min_runtime_version": "1.5.0"}, "metadata text")
expect(add["tflite"]["signature_defs"][0]["key"] == "serving_default", "signature def")
codes = add["tflite"]["operator_codes"][0]
expect(codes["op_type"] == "ADD" and codes["builtin"] == 0 and codes["version"] == 1, "opcode")
for e in errors:
    print("FAILED: json: " + e, file=sys.stderr)
sys.exit(1 if errors else 0)
EOF
check "JSON keys and values" test $? -eq 0

# assign places a .tflite on its own operators (docs/tflite.md "Placement")
"$bin" assign "$d/models/kws_if.tflite" --target litert-gpu >"$tmp/out" 2>&1
check "assign kws_if: exit" test $? -eq 0
check "assign counts TFLite ops" out_has "6/8 TFLite ops on litert-gpu, 2 on CPU"
check "assign: the delegate's wording" out_has \
    '"6 operations will run on litert-gpu, and the remaining 2 operations will run on the CPU."'
check "assign: IF refused as a TFLite op" out_has "IF '#7': op tflite:IF not in litert-gpu's"
"$bin" assign --json "$d/ops/softmax_beta.tflite" --target litert-gpu >"$tmp/a.json" 2>&1
check "assign --json: exit" test $? -eq 0
$py - "$tmp/a.json" <<'PYEOF'
import json, sys
r = json.load(open(sys.argv[1]))["result"]
ok = (r["unit"] == "tflite_ops" and r["nodes_on_target"] == 0 and
      r["unsupported"][0]["op_type"] == "SOFTMAX" and
      "Softmax.beta != 1" in r["unsupported"][0]["reason"] and
      r["delegate_log"] == ["0 operations will run on litert-gpu, and the remaining 1 "
                            "operations will run on the CPU."])
sys.exit(0 if ok else 1)
PYEOF
check "assign --json on a .tflite" test $? -eq 0
"$bin" assign "$d/models/cnn.tflite" --target tflm >"$tmp/out" 2>&1
check "assign tflm: every op registered" out_has "6/6 TFLite ops on tflm"
"$bin" assign "$d/reader/flex_and_custom.tflite" --target tflm >"$tmp/out" 2>&1
check "assign tflm: a Flex op fails setup (exit 2)" test $? -eq 2
check "assign tflm: names the op" out_has "FlexAddV2"
"$bin" assign "$d/models/cnn.tflite" --target litert-gpu --dim batch=2 >"$tmp/out" 2>&1
check "assign .tflite --dim: usage error" test $? -eq 2
check "assign .tflite --dim: says why" out_has "static shapes it stores"

finish
