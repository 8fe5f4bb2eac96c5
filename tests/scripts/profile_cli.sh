#!/usr/bin/env bash
# 'convgate profile' on examples/tiny_cnn.onnx: the reference timing table,
# the xnnpack placement measured (partition alone, crossings, mixed run) and
# the estimate checked against its own parts and against the measured mixed
# run (within the documented 20% bound, docs/cost-model.md; times are thread
# CPU time, so other load on the machine does not count, but one noisy
# attempt is retried up to twice); a profiled target costed from the
# assumptions given on the command line; the time-weighted verdict of
# 'convgate assign' and --no-time; bad options exit 2.
set -u
bin=${1:?usage: profile_cli.sh CONVGATE_BINARY SOURCE_DIR}
src=${2:?usage: profile_cli.sh CONVGATE_BINARY SOURCE_DIR}
. "$(dirname "${BASH_SOURCE[0]}")/lib/harness.bash"
model=$src/examples/tiny_cnn.onnx

cg profile --help
check "--help exits 0" rc 0
check "--help states the assumption defaults" out_has "conv=4"

# --- reference only ------------------------------------------------------------------------
cg profile "$model" --runs 3 --json
check "reference profile exits 0" rc 0
check "18 nodes timed, none negative" out_json 'len(j["nodes"]) == 18 and all(n["ms"] >= 0 for n in j["nodes"]) and sum(n["ms"] for n in j["nodes"]) > 0'
check "cold and warm reported apart" out_json 'j["reference"]["init_ms"] > 0 and j["reference"]["first_run_ms"] > 0 and j["reference"]["wall_ms"] > 0 and j["runs"] == 3'
check "no target: no placement" out_json '"targets" not in j and all(n["owner"] == "cpu" for n in j["nodes"])'

xnn=1
"$bin" targets 2>/dev/null | grep -q '^xnnpack ' || xnn=0
if [ $xnn = 1 ]; then
    ok=0
    for attempt in 1 2 3; do
        cg profile "$model" --target xnnpack --runs 15 --json
        check "xnnpack profile exits 0 (attempt $attempt)" rc 0
        cp "$tmp/out" "$tmp/xnn.json"
        if out_json 'j["agreement_bound"] == 0.2 and j["within_bound"] and abs(j["estimate_over_measured"] - 1) <= 0.2'; then
            ok=1
            break
        fi
        echo "attempt $attempt: estimate/measured = $("$py" -c 'import json,sys; print(json.load(open(sys.argv[1]))["result"]["estimate_over_measured"])' "$tmp/out")" >&2
    done
    check "estimate within 20% of the measured mixed run" test $ok = 1
    cp "$tmp/xnn.json" "$tmp/out"
    check "coverage: all 18 nodes, time share = target time / reference" out_json 'j["coverage"]["nodes_on_target"] == 18 and j["coverage"]["nodes_total"] == 18 and abs(j["coverage"]["time_share"] - sum(n["ms"] for n in j["nodes"] if n["owner"] == "xnnpack") / j["estimate"]["reference_ms"]) < 1e-4'
    check "one measured partition with compile, run, compute" out_json 'len(j["partitions"]) == 1 and j["partitions"][0]["measured"] and j["partitions"][0]["compile_ms"] > 0 and j["partitions"][0]["run_ms"] > 0 and abs(j["partitions"][0]["run_ms"] - j["partitions"][0]["compute_ms"] - j["partitions"][0]["boundary_ms"]) < 1e-4'
    check "input crossing: NCHW->NHWC of 1x3x64x64 float" out_json '[(c["tensor"], c["direction"], c["shape"], c["bytes"], c["layout_conversion"]) for c in j["crossings"]] == [("image", "in", [1, 3, 64, 64], 49152, True), ("logits", "out", [1, 10], 40, False)] and j["crossings"][0]["ms"] > 0 and j["crossings"][1]["ms"] == 0'
    check "estimate = on target + remainder + boundary" out_json 'abs(j["estimate"]["mixed_ms"] - (j["estimate"]["accelerated_ms"] + j["estimate"]["remainder_ms"] + j["estimate"]["boundary_ms"])) < 1e-4 * j["estimate"]["mixed_ms"]'
    check "estimate from measurements, no assumptions" out_json 'not j["estimate"]["assumed"] and j["assumptions"] is None and j["estimate"]["crossings"] == 2'
    check "the mixed run measured" out_json 'j["measured"]["mixed_ms"] > 0 and j["measured"]["init_ms"] > 0'
    check "verdict with time coverage" out_json 'j["verdict"]["time_coverage"] > 0.5 and "of reference time inside partitions" in j["verdict"]["text"]'

    cg profile "$model" --target xnnpack --runs 3
    check "text report exits 0" rc 0
    check "text: estimate and measurement side by side" out_has "estimate / measured = "
    check "text: crossing listed" out_has "P0 <- 'image' [1,3,64,64] 49152 B NCHW->NHWC"
fi

# --- a profiled target: assumptions from the command line ----------------------------------------
cg profile "$model" --target coreml-mlprogram --runs 3 --speedup all=3 --speedup conv=6 --boundary-us 50 --bandwidth-gbps 2 --json
check "profiled target exits 0" rc 0
check "profiled target takes part of the model" out_json '0 < j["coverage"]["nodes_on_target"] < 18 and len(j["partitions"]) >= 1'
check "assumptions echoed" out_json 'j["assumptions"]["speedup"]["conv"] == 6 and j["assumptions"]["speedup"]["pool"] == 3 and j["assumptions"]["boundary_us"] == 50 and j["assumptions"]["bandwidth_gbps"] == 2'
check "profiled partitions are not measured; assumed = sum(ms / speedup)" out_json 'all(not p["measured"] for p in j["partitions"]) and abs(sum(p["assumed_ms"] for p in j["partitions"]) - sum(n["ms"] / (6 if n["class"] == "conv" else 3) for n in j["nodes"] if n["owner"] == "coreml-mlprogram")) < 1e-4 and j["measured"] is None and j["estimate"]["assumed"]'
cg profile "$model" --target coreml-mlprogram --runs 2 --speedup all=3
check "text: assumptions printed as such" out_has "ASSUMPTIONS (not measurements)"
check "text: partitions marked assumed" out_has "ASSUMED:"

# --- assign's time-weighted verdict --------------------------------------------------------------
cg assign "$model" --target coreml-mlprogram --json
check "assign exits 0" rc 0
check "assign verdict carries time" out_json 'j["verdict"]["time_coverage"] is not None and 0 < j["verdict"]["time_coverage"] <= 1 and j["verdict"]["estimate_ms"] > 0 and "reference time inside partitions" in j["verdict"]["text"]'
cg assign "$model" --target coreml-mlprogram --json --no-time
check "assign --no-time: node counts only" out_json 'j["verdict"]["time_coverage"] is None and j["verdict"]["estimate_ms"] is None'
cg assign "$model" --target coreml-mlprogram
check "assign text verdict with time" out_has "of reference time inside partitions"

# --- bad options ---------------------------------------------------------------------------------
cg profile "$model" --runs 0
check "--runs 0 exits 2" rc 2
check "--runs 0 names the option" err_has "--runs"
cg profile "$model" --speedup vector=2
check "unknown op class exits 2" rc 2
check "unknown op class named" err_has "unknown op class 'vector'"
cg profile "$model" --bandwidth-gbps 0
check "zero bandwidth exits 2" rc 2
cg profile "$model" --target no-such-target
check "unknown target exits 2" rc 2
cg profile /nonexistent.onnx
check "missing model exits 2" rc 2

finish "$([ $xnn = 0 ] && echo "the xnnpack part (no xnnpack target)")"
