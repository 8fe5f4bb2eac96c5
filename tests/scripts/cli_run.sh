#!/usr/bin/env bash
# 'convgate run' on tests/data/io/cli_model.onnx (made by
# tools/make_io_fixtures.py): inputs from .npy / .npz / @npz, --random with
# seeds and symbolic dims, input errors (exit 2 with the name in the
# message), and output files whose names are sanitized and stay in DIR.
set -u
bin=${1:?usage: cli_run.sh CONVGATE_BINARY SOURCE_DIR}
src=${2:?usage: cli_run.sh CONVGATE_BINARY SOURCE_DIR}
. "$(dirname "${BASH_SOURCE[0]}")/lib/harness.bash"
d="$src/tests/data/io"
model="$d/cli_model.onnx"
run() { cg run "$model" "$@"; }

"$bin" run --help >"$tmp/out" 2>&1
check "--help exits 0" test $? -eq 0
check "--help documents --random" out_has "--random"

run -i "@$d/cli_inputs.npz" -o "$tmp/o"
check "run from @npz: exit 0" rc 0
check "summary of Sum" out_has "output 'Sum': float32 [2,3]  min 3  max 3  mean 3  nan 0  inf 0"
check "int64 output" out_has "output 'i_out': int64 [2]  min 4  max 5"
check "Sum.npy written" test -f "$tmp/o/Sum.npy"
check "case collision disambiguated" test -f "$tmp/o/sum_2.npy"
check "'../evil' stays inside DIR" test -f "$tmp/o/_._evil.npy"
check "nothing written above DIR" test ! -e "$tmp/evil.npy"
check "leading dot replaced" test -f "$tmp/o/_hidden.npy"
check "slash replaced" test -f "$tmp/o/a_b.npy"
check "exactly 7 files" test "$(ls -A "$tmp/o" | wc -l)" -eq 7

# The written file reads back as the same tensor.
run -i "x=$tmp/o/Sum.npy" -i "y=$d/cli_inputs.npz:y" -i "i=$d/cli_inputs.npz:i" -i "b=$d/cli_inputs.npz:b"
check "written .npy and npz:KEY inputs: exit 0" rc 0
check "3 + 2 = 5" out_has "output 'Sum': float32 [2,3]  min 5  max 5  mean 5"

run -i "x=$d/x_2x3.npy" --random --json --seed 7
check "--random fills the rest" rc 0
check "json has outputs" out_has '"outputs"'
check "json has the file field" out_has '"file": null'
sed '/time_ms/d' "$tmp/out" >"$tmp/a.json"
run -i "x=$d/x_2x3.npy" --random --json --seed 7
sed '/time_ms/d' "$tmp/out" >"$tmp/b.json"
check "same seed, same outputs" cmp -s "$tmp/a.json" "$tmp/b.json"
run -i "x=$d/x_2x3.npy" --random --json --seed 8
sed '/time_ms/d' "$tmp/out" >"$tmp/c.json"
check "other seed, other outputs" bash -c "! cmp -s '$tmp/a.json' '$tmp/c.json'"

run --random
check "symbolic dim without --dim: 1, as everywhere" rc 0
check "unbound symbol is 1" out_has "output 'Sum': float32 [1,3]"
run --random --dim M=4
check "unknown --dim symbol: exit 2" rc 2
check "names the known symbols" err_has "--dim M: no input has a dim of that name; the model's symbolic dims are: N"
run --random --dim N=4
check "--dim N=4" rc 0
check "shape from --dim" out_has "output 'Sum': float32 [4,3]"
run --random --dim N=4 -i "x=$d/x_2x3.npy"
check "fed size contradicting --dim: exit 2" rc 2

run -i "x=$d/x_2x3.npy"
check "missing input: exit 2" rc 2
check "names the missing input" err_has "no value for input 'y'"
run -i "q=$d/x_2x3.npy" --random
check "unknown input: exit 2" rc 2
check "lists the real inputs" err_has "unknown input 'q'"
run -i "x=$d/x_2x3_f64.npy" --random
check "dtype mismatch: exit 2" rc 2
check "says dtype mismatch" err_has "dtype mismatch"
run -i "x=$d/x_2x3.npy" -i "x=$d/x_2x3.npy" --random
check "input fed twice: exit 2" rc 2
run -i "x=$d/nonexistent.npy" --random
check "unreadable file: exit 2" rc 2
run -i "x=$d/cli_inputs.npz:nokey" --random
check "missing npz key: exit 2" rc 2
check "lists npz keys" err_has "has no array 'nokey'"
run --bogus
check "unknown option: exit 2" rc 2

# --repeat times warm runs after the first; --cold evicts the caches before
# each of them and says so; --cold alone is a usage error.
run -i "@$d/cli_inputs.npz" --repeat 3 --json
check "--repeat: exit 0" rc 0
check "--repeat: timing has the warm runs" /usr/bin/python3 -c '
import json, sys
t = json.load(open(sys.argv[1]))["result"]["timing"]
assert t["runs"] == 3 and t["cold"] is False, t
assert 0 <= t["min_ms"] <= t["median_ms"] <= t["max_ms"], t
assert t["first_ms"] > 0 and t["threads"] == 1, t
# the sample gives every input a shape: set-up followed the sizes
assert t["memory_plan"] == "set-up", t' "$tmp/out"
run -i "@$d/cli_inputs.npz" --repeat 2 --cold --json
check "--cold: exit 0" rc 0
check "--cold: timing.cold is true" /usr/bin/python3 -c '
import json, sys
t = json.load(open(sys.argv[1]))["result"]["timing"]
assert t["runs"] == 2 and t["cold"] is True, t' "$tmp/out"
run -i "@$d/cli_inputs.npz" --repeat 2 --cold
check "--cold text names its runs" out_has "2 cold-cache runs: median"
run -i "@$d/cli_inputs.npz" --cold
check "--cold without --repeat: exit 2" rc 2
check "--cold without --repeat: says why" err_has "--cold times the warm runs of --repeat N"
run --help
check "--help documents --cold" out_has "--cold"

# A link planted where an output goes is not followed.
mkdir -p "$tmp/o2"
ln -s "$tmp/target" "$tmp/o2/Sum.npy"
run -i "@$d/cli_inputs.npz" -o "$tmp/o2"
check "planted link: error" rc 2
check "link target untouched" test ! -e "$tmp/target"

finish
