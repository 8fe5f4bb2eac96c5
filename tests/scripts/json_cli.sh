#!/usr/bin/env bash
# --json takes one form on every command (docs/json.md): each subcommand
# that `convgate --help` lists documents --json, and with --json its errors
# (an unknown option, a missing model) print the envelope on stdout, status
# "error", exit 2, the message in `errors`. save --json reports the files it
# wrote and their sizes.
set -u
bin=${1:?usage: json_cli.sh CONVGATE_BINARY SOURCE_DIR}
src=${2:?usage: json_cli.sh CONVGATE_BINARY SOURCE_DIR}
. "$(dirname "${BASH_SOURCE[0]}")/lib/harness.bash"

# the envelope of an error: EXPR over env holds too
error_envelope() {
    "$py" -c 'import json, sys
env = json.load(open(sys.argv[1]))
ok = (env["status"] == "error" and env["exit_code"] == 2 and env["result"] is None and
      env["errors"] and all(e["message"] for e in env["errors"]) and
      env["command"] == sys.argv[2] and eval(sys.argv[3]))
sys.exit(0 if ok else 1)' "$tmp/out" "$1" "${2:-True}"
}

commands=$("$bin" --help | awk '/^Commands:/ { on = 1; next } on && /^  [a-z]/ { print $1 }')
check "--help lists the commands" test "$(echo "$commands" | wc -w)" -ge 19
for c in $commands; do
    cg "$c" --help
    check "$c --help: exit 0" rc 0
    check "$c --help documents --json" out_has "--json"
    cg "$c" --no-such-option --json
    check "$c --no-such-option --json: exit 2" rc 2
    check "$c --no-such-option --json: the error as JSON" error_envelope "$c" \
        'any("no-such-option" in e["message"] for e in env["errors"])'
done
# nothing to work on is an error that says so, as JSON
for c in inspect check save run conformance lower assign bisect dump-ref verify profile rewrite \
         convert noise compare latency queue; do
    cg "$c" --json
    check "$c --json alone: exit 2" rc 2
    check "$c --json alone: the error as JSON" error_envelope "$c"
done
# the commands that read a model: a missing one is an error envelope too
for c in inspect check run lower assign bisect dump-ref verify profile rewrite noise compare; do
    cg "$c" "$tmp/nosuch.onnx" --json
    check "$c MISSING --json: exit 2" rc 2
    check "$c MISSING --json: the error as JSON" error_envelope "$c"
done
cg save "$tmp/nosuch.onnx" -o "$tmp/x.onnx" --json
check "save MISSING --json: exit 2" rc 2
check "save MISSING --json: the error names the file" error_envelope save \
    'any("nosuch.onnx" in e["message"] for e in env["errors"])'
check "save MISSING: nothing written" test ! -e "$tmp/x.onnx"

# save --json: what was written
m="$src/examples/tiny_cnn.onnx"
cg save "$m" -o "$tmp/inline.onnx" --json
check "save --json: exit 0" rc 0
check "save --json: the model written and its size" out_json \
    "j['model'] == '$m' and j['output'] == '$tmp/inline.onnx' and j['bytes'] == $(stat -c %s "$tmp/inline.onnx" 2>/dev/null || echo -1) and j['external_data'] is None"
cg save "$m" -o "$tmp/ext/model.onnx" --external-data w.bin --min-bytes 16 --json
check "save --external-data --json: exit 2 (no folder ext)" rc 2
mkdir -p "$tmp/ext"
cg save "$m" -o "$tmp/ext/model.onnx" --external-data w.bin --min-bytes 16 --json
check "save --external-data --json: exit 0" rc 0
check "save --external-data --json: both files and their sizes" out_json \
    "j['bytes'] == $(stat -c %s "$tmp/ext/model.onnx" 2>/dev/null || echo -1) and j['external_data'] == {'file': 'w.bin', 'bytes': $(stat -c %s "$tmp/ext/w.bin" 2>/dev/null || echo -1)} and j['bytes'] < j['external_data']['bytes']"
cg run "$tmp/ext/model.onnx" --random
check "the saved model with external data runs" rc 0
cg save "$m" -o "$tmp/quiet.onnx"
check "save without --json: exit 0" rc 0
check "save without --json: nothing on stdout" test ! -s "$tmp/out"
finish
