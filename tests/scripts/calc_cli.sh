#!/usr/bin/env bash
# 'convgate latency' and 'convgate queue' on the hand-checked examples:
# the printed sums and figures, the JSON (parsed by Python and compared
# with the arithmetic done there), seeded simulations that reproduce, and
# bad inputs that must exit 2 with a message naming the parameter.
set -u
bin=${1:?usage: calc_cli.sh CONVGATE_BINARY SOURCE_DIR}
: "${2:?usage: calc_cli.sh CONVGATE_BINARY SOURCE_DIR}"
. "$(dirname "${BASH_SOURCE[0]}")/lib/harness.bash"

# --- latency ---------------------------------------------------------------------------
"$bin" latency --help >"$tmp/out" 2>&1
check "latency --help exits 0" test $? -eq 0
check "latency --help states the no-overlap assumption" out_has "nothing overlaps"
check "latency --help gives the formula" out_has "1 / ((1 - f) + f/S + beta)"

ex1=(--baseline-ms 100 --accelerated-ms 80 --speedup 8 --boundaries 2 --boundary-ms 2.5)
cg latency "${ex1[@]}"
check "example 1: exit 0" rc 0
check "example 1: accelerated 80/8 = 10" grep -qE '^accelerated +80 ms / 8 += 10 ms$' "$tmp/out"
check "example 1: remainder 100-80 = 20" grep -qE '^remainder +100 - 80 += 20 ms$' "$tmp/out"
check "example 1: boundaries 2 x 2.5 = 5" grep -qE '^boundaries +2 x 2.5 ms += +5 ms$' "$tmp/out"
check "example 1: mixed 35 ms" grep -qE '^mixed latency +35 ms ' "$tmp/out"
check "example 1: speedup 2.857x" out_has "(speedup 2.857x; the accelerated part alone: 8x)"
check "example 1: Amdahl line" out_has "Amdahl: f=0.8 S=8 beta=0.05 -> 1/((1-f)+f/S+beta) = 2.857"
check "example 1: both forms printed" out_has "(B/mixed = 2.857;"

cg latency "${ex1[@]}" --json
check "example 1 --json: exit 0" rc 0
check "example 1 --json: inputs echoed" out_json 'j["baseline_ms"] == 100 and j["accelerated_ms"] == 80 and j["speedup_factor"] == 8 and j["boundaries"] == 2 and j["boundary_ms"] == 2.5'
check "example 1 --json: the terms" out_json 'j["accelerated_time_ms"] == 10 and j["remainder_ms"] == 20 and j["boundary_cost_ms"] == 5 and j["mixed_ms"] == 35'
check "example 1 --json: full-precision speedup" out_json 'j["end_to_end_speedup"] == 100 / 35'
check "example 1 --json: Amdahl" out_json 'j["amdahl"]["f"] == 0.8 and j["amdahl"]["S"] == 8 and j["amdahl"]["beta"] == 0.05 and abs(j["amdahl"]["speedup"] - 100 / 35) < 1e-12'
check "example 1 --json: key order" out_json 'list(j) == ["baseline_ms", "accelerated_ms", "speedup_factor", "boundaries", "boundary_ms", "accelerated_time_ms", "remainder_ms", "boundary_cost_ms", "mixed_ms", "end_to_end_speedup", "amdahl"] and list(j["amdahl"]) == ["f", "S", "beta", "speedup"]'
check "example 1 --json: no 17-digit noise" bash -c "! grep -q 0.80000000000000004 '$tmp/out'"

cg latency --baseline-ms 60 --accelerated-ms 45 --speedup 5 --boundaries 1 --boundary-ms 6
check "example 2: exit 0" rc 0
check "example 2: 45/5 = 9" grep -qE '^accelerated +45 ms / 5 += +9 ms$' "$tmp/out"
check "example 2: 60-45 = 15" grep -qE '^remainder +60 - 45 += 15 ms$' "$tmp/out"
check "example 2: 1 x 6 = 6" grep -qE '^boundaries +1 x 6 ms += +6 ms$' "$tmp/out"
check "example 2: mixed 30 ms" grep -qE '^mixed latency +30 ms ' "$tmp/out"
check "example 2: speedup 2.000x" out_has "(speedup 2.000x;"
check "example 2: Amdahl 2.000" out_has "f=0.75 S=5 beta=0.1 -> 1/((1-f)+f/S+beta) = 2.000"

cg latency --baseline-ms 60 --accelerated-ms 45 --speedup 5 --boundaries 1 --boundary-ms 6 --json
check "example 2 --json" out_json 'j["mixed_ms"] == 30 and j["end_to_end_speedup"] == 2.0 and abs(j["amdahl"]["speedup"] - 2) < 1e-12 and j["amdahl"]["f"] == 0.75'

# edges: nothing moved, everything moved
cg latency --baseline-ms 10 --accelerated-ms 0 --speedup 3 --boundaries 0 --boundary-ms 0 --json
check "A=0: speedup 1" out_json 'j["mixed_ms"] == 10 and j["end_to_end_speedup"] == 1'
cg latency --baseline-ms 10 --accelerated-ms 10 --speedup 4 --boundaries 0 --boundary-ms 1 --json
check "A=B, K=0: speedup S" out_json 'j["mixed_ms"] == 2.5 and j["end_to_end_speedup"] == 4 and j["remainder_ms"] == 0'

# bad inputs: exit 2, the parameter named
lat_bad() {
    local what=$1 needle=$2
    shift 2
    cg latency "$@"
    check "$what: exit 2" rc 2
    check "$what: message names it" err_has "$needle"
    check "$what: nothing on stdout" test ! -s "$tmp/out"
}
lat_bad "B = 0" "baseline B" --baseline-ms 0 --accelerated-ms 0 --speedup 1 --boundaries 0 --boundary-ms 0
lat_bad "A > B" "cannot exceed" --baseline-ms 10 --accelerated-ms 11 --speedup 1 --boundaries 0 --boundary-ms 0
lat_bad "A < 0" "accelerated part A" --baseline-ms 10 --accelerated-ms -1 --speedup 1 --boundaries 0 --boundary-ms 0
lat_bad "S = 0" "speedup S" --baseline-ms 10 --accelerated-ms 5 --speedup 0 --boundaries 0 --boundary-ms 0
lat_bad "K fractional" "--boundaries" --baseline-ms 10 --accelerated-ms 5 --speedup 2 --boundaries 1.5 --boundary-ms 0
lat_bad "K negative" "--boundaries" --baseline-ms 10 --accelerated-ms 5 --speedup 2 --boundaries -1 --boundary-ms 0
lat_bad "C < 0" "boundary cost C" --baseline-ms 10 --accelerated-ms 5 --speedup 2 --boundaries 1 --boundary-ms -1
lat_bad "not a number" "--speedup" --baseline-ms 10 --accelerated-ms 5 --speedup fast --boundaries 1 --boundary-ms 1
lat_bad "NaN" "--baseline-ms" --baseline-ms nan --accelerated-ms 5 --speedup 2 --boundaries 1 --boundary-ms 1
lat_bad "missing C" "missing --boundary-ms" --baseline-ms 10 --accelerated-ms 5 --speedup 2 --boundaries 1
lat_bad "stray argument" "unexpected argument" model.onnx --baseline-ms 10

# --- queue -----------------------------------------------------------------------------
"$bin" queue --help >"$tmp/out" 2>&1
check "queue --help exits 0" test $? -eq 0
check "queue --help explains the fluid model" out_has "Q(t) = max(0, Q0 + (L - M) t)"
check "queue --help explains Poisson arrivals" out_has "Poisson"

cg queue --backlog 4 --lambda 4 --mu 3
check "L>M: exit 0" rc 0
check "L>M: net rate +1" out_has "net rate +1/s"
check "L>M: Q(0) = 4" grep -qE '^  0 +4$' "$tmp/out"
check "L>M: Q(0.5) = 4.5" grep -qE '^  0.5 +4.5$' "$tmp/out"
check "L>M: Q(1) = 5" grep -qE '^  1 +5$' "$tmp/out"
check "L>M: grows without bound" out_has "grows without bound, at L - M = 1 per second"
check "L>M: no M/M/1 figures" bash -c "! grep -q 'mean residence' '$tmp/out'"

cg queue --backlog 4 --lambda 4 --mu 3 --json
check "L>M --json" out_json '[r["backlog"] for r in j["fluid"]] == [4, 4.5, 5] and [r["t"] for r in j["fluid"]] == [0, 0.5, 1] and j["net_rate"] == 1 and j["stable"] is False and j["mm1"] is None and j["growth_rate"] == 1 and j["drain_time"] is None'

cg queue --backlog 4 --lambda 2 --mu 3
check "L<M: exit 0" rc 0
check "L<M: Q(1) = 3" grep -qE '^  1 +3$' "$tmp/out"
check "L<M: drains at 4 s" out_has "the backlog empties at t = 4 s"
check "L<M: rho" grep -qE '^  utilisation +rho = L/M +0.666667$' "$tmp/out"
check "L<M: mean in system 2" grep -qE '^  mean in system +L/\(M-L\) +2$' "$tmp/out"
check "L<M: mean residence 1 s" grep -qE '^  mean residence +1/\(M-L\) +1 s$' "$tmp/out"
check "L<M: mean wait" grep -qE '^  mean wait in queue +rho/\(M-L\) +0.666667 s$' "$tmp/out"

cg queue --backlog 4 --lambda 2 --mu 3 --json
check "L<M --json" out_json 'j["fluid"][-1] == {"t": 1, "backlog": 3} and j["stable"] and j["mm1"]["mean_residence"] == 1 and j["mm1"]["mean_in_system"] == 2 and j["mm1"]["rho"] == 2/3 and j["mm1"]["mean_wait"] == 2/3 and j["drain_time"] == 4 and j["simulation"] is None'

cg queue --lambda 3 --mu 3 --backlog 2
check "L=M: holds at Q0" grep -qE '^  1 +2$' "$tmp/out"
check "L=M: no steady state" out_has "L = M:"

cg queue --lambda 0 --mu 3 --backlog 2 --time 1 --step 0.3 --json
check "grid ends at T" out_json '[r["t"] for r in j["fluid"]] == [0, 0.3, 0.6, 0.8999999999999999, 1] or [r["t"] for r in j["fluid"]] == [0, 0.3, 0.6, 0.9, 1]'
check "fluid clamps at 0" out_json 'j["fluid"][-1]["backlog"] == 0 and abs(j["fluid"][1]["backlog"] - 1.1) < 1e-12'

cg queue --backlog 4 --lambda 2 --mu 3 --simulate 200000 --seed 42
check "simulate: exit 0" rc 0
check "simulate: columns" out_has "simulated    rel. diff"
check "simulate: summary" out_has "simulated: 200000 customers from an empty system, seed 42"
cg queue --backlog 4 --lambda 2 --mu 3 --simulate 200000 --seed 42 --json
check "simulate --json: within 5% of the formulas" out_json 'abs(j["simulation"]["mean_residence"] - 1) < 0.05 and abs(j["simulation"]["time_avg_in_system"] - 2) < 0.1 and abs(j["simulation"]["utilisation"] - 2/3) < 0.02'
check "simulate --json: relative differences consistent" out_json 'abs(j["simulation"]["relative_difference"]["mean_residence"] - (j["simulation"]["mean_residence"] - 1)) < 1e-12'
check "simulate --json: seed and count" out_json 'j["simulation"]["customers"] == 200000 and j["simulation"]["seed"] == "42"'
cp "$tmp/out" "$tmp/a.json"
cg queue --backlog 4 --lambda 2 --mu 3 --simulate 200000 --seed 42 --json
check "same seed, same output" cmp -s "$tmp/a.json" "$tmp/out"
cg queue --backlog 4 --lambda 2 --mu 3 --simulate 200000 --seed 43 --json
check "other seed, other output" bash -c "! cmp -s '$tmp/a.json' '$tmp/out'"

q_bad() {
    local what=$1 needle=$2
    shift 2
    cg queue "$@"
    check "$what: exit 2" rc 2
    check "$what: message names it" err_has "$needle"
    check "$what: nothing on stdout" test ! -s "$tmp/out"
}
q_bad "L < 0" "lambda" --lambda -1 --mu 3
q_bad "M = 0" "mu" --lambda 1 --mu 0
q_bad "Q0 < 0" "Q0" --lambda 1 --mu 3 --backlog -1
q_bad "DT = 0" "step DT" --lambda 1 --mu 3 --step 0
q_bad "T < 0" "time T" --lambda 1 --mu 3 --time -1
q_bad "too many steps" "steps" --lambda 1 --mu 3 --time 1e9 --step 1
q_bad "N = 0" "--simulate" --lambda 1 --mu 3 --simulate 0
q_bad "N too large" "--simulate" --lambda 1 --mu 3 --simulate 100000001
q_bad "simulate L = M" "0 < lambda < mu" --lambda 3 --mu 3 --simulate 100
q_bad "seed negative" "--seed" --lambda 1 --mu 3 --simulate 10 --seed -5
q_bad "seed without simulate" "--seed only applies" --lambda 1 --mu 3 --seed 5
q_bad "missing mu" "missing --mu" --lambda 1

finish
