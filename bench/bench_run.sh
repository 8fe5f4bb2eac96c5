#!/usr/bin/env bash
# Inference latency of convgate's reference runtime against onnxruntime-node
# 1.22.0 on the model zoo, at each thread count of --threads (default "1 2";
# convgate --threads T, ORT intraOpNumThreads T and interOpNumThreads 1,
# OPENBLAS_NUM_THREADS=1 for convgate, which splits work over its own
# threads), on the same seeded inputs (written by bench/parity.sh
# --inputs-only), in the same run.  Per model and thread count:
#
#   cg ms        median of N warm cg_runtime_run calls in one process after
#                the first run (`convgate run --repeat N --json`:
#                timing.median_ms); load, set-up and the first run excluded,
#                as for ORT. N is --runs, or more for a model whose runs
#                are short: enough for --min-ms of warm runs (a calibration
#                run of convgate per model and thread count sets it, at
#                most 2000), the same N for both runtimes.
#   ort ms       median of N session.run calls in one process after one
#                warm-up run (bench/ort_session.js --run).
#   cg/ort       cg ms / ort ms.
#   cpu cg/ort   the same ratio of the median process CPU time per run
#                (convgate's timing.cpu_median_ms, ORT's cpu_ms): on a
#                machine shared with other work it moves less than wall
#                time; at one thread it is the latency of a quiet machine.
#   1st ms       convgate's first run: the first touches of scratch and of
#                the weights read in place, and of its values where the
#                memory plan is made by that run (plan "1st run": set-up
#                could not follow every value's size from the input shapes)
#                rather than at set-up (plan "set-up": src/run/predict.c,
#                the arena's pages touched in load+plan); 1st/warm is 1st ms / cg ms, and ort
#                1st/warm the same for ORT's first session.run (its warm-up
#                run). Each timed process (convgate's and ORT's) starts
#                right after 0.2 s of busy CPU on as many cores as it uses
#                (wake_cpus below).
#   load+plan    convgate's model load plus runtime set-up (timing.load_ms +
#                init_ms), and ORT's session creation (create_ms).
#   RSS MiB      peak RSS of the convgate process (GNU time) and of the node
#                process (Node's maxRSS: node + ORT's own ~50 MiB included).
#
# The zoo rows (every model of bench/zoo.sha256 above the slow families)
# give the geometric mean of cg/ort per thread count; the slow-family rows
# (LSTM/GRU, ConvInteger, float16, SSDlite NMS, transformer at 2048) are
# reported apart.  For each model the xnnpack target covers fully (one
# partition, no boundary crossing: `convgate assign --target xnnpack`), the
# target path (`run --target xnnpack`) against ORT, both as above.  Then,
# unless --no-gate, #11's gate figures (bench/bench_gate.sh): `convgate gate
# --target xnnpack` and `--target litert-gpu` (3 random samples) on
# resnet18, resnet50, mobilenet_v2 and vit_b_16, wall and CPU (user + sys)
# time and peak RSS beside one reference run (`run --random`), and each
# gate's phases (`gate --timings`); and the
# float64 reference mode (`run --fp64`) against float32 on resnet18,
# mobilenet_v2 and squeezenet1_1 (median CPU per warm run, one thread).
# Then, unless --no-conformance, the wall time of `convgate conformance`
# over the libonnx-testdata suites.  The machine's load average is printed
# before and after: on a shared machine, run it when the load is low.
#
#   bench/bench_run.sh [--zoo DIR] [--runs N] [--min-ms MS] [--rounds R] [--threads "1 2"] [--no-gate] [--no-conformance] CONVGATE [MODEL...]
#
# --min-ms MS (default 250): a model's runs per process cover at least MS
# ms (N above). Ten runs of a 1 ms model are 10 ms of measurement, and this
# host's speed moves within seconds (mobilenet_v3_small, ten runs after a
# 1 s pause, four processes: medians 1.39-2.03 ms; 200 runs: 1.37-1.41).
#
# --rounds R (default 1) makes R passes over the models per thread count,
# each running convgate then ORT on every model, and reports the median of
# the R per-pass figures: on a virtual machine whose speed changes from
# minute to minute (seen here: the same process 5 ms in one minute, 10 ms in
# the next), one pass can put a slow spell on one side only.
#
# MODELs are zoo file names or paths (default: all of bench/zoo.sha256 in
# --zoo, else $CG_ZOO, else <repo>/zoo).  Needs scripts/setup.sh --bench
# (node, bench/node_modules, GNU time) and tools/fetch_zoo.sh.
set -uo pipefail

repo="$(cd "$(dirname "$0")/.." && pwd)"
zoo="${CG_ZOO:-$repo/zoo}"
runs=20
min_ms=250
rounds=1
thread_counts="1 2"
want_conformance=1
want_gate=1
testdata="${CG_ONNX_TESTDATA:-/usr/share/libonnx-testdata/data}"
usage() { sed -n '53p' "$0" | sed 's/^# *//' >&2; exit 2; }
while [ $# -gt 0 ]; do
    case "$1" in
        --zoo) zoo="${2:?--zoo needs a directory}"; shift 2 ;;
        --runs) runs="${2:?--runs needs a number}"; shift 2 ;;
        --min-ms) min_ms="${2:?--min-ms needs a number}"; shift 2 ;;
        --rounds) rounds="${2:?--rounds needs a number}"; shift 2 ;;
        --threads) thread_counts="${2:?--threads needs a list}"; shift 2 ;;
        --no-conformance) want_conformance=0; shift ;;
        --no-gate) want_gate=0; shift ;;
        -h|--help) sed -n '2,68p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
        -*) echo "bench_run: unknown option $1" >&2; usage ;;
        *) break ;;
    esac
done
[ $# -ge 1 ] || usage
convgate="$1"; shift
case "$runs" in ''|*[!0-9]*|0) echo "bench_run: --runs wants a positive integer" >&2; exit 2 ;; esac
case "$rounds" in ''|*[!0-9]*|0) echo "bench_run: --rounds wants a positive integer" >&2; exit 2 ;; esac
case "$min_ms" in ''|*[!0-9]*) echo "bench_run: --min-ms wants a whole number of ms" >&2; exit 2 ;; esac
for t in $thread_counts; do
    case "$t" in ''|*[!0-9]*|0) echo "bench_run: --threads wants positive integers" >&2; exit 2 ;; esac
done
if [ ! -x "$convgate" ]; then
    echo "bench_run: $convgate is not an executable (build it: ninja -C build)" >&2
    exit 2
fi
if [ ! -x /usr/bin/time ]; then
    echo "bench_run: /usr/bin/time (GNU time) is missing: scripts/setup.sh --bench" >&2
    exit 2
fi
export OPENBLAS_NUM_THREADS=1

# "zoo" or "family": the slow families of bench/zoo.sha256, by name.
families=" lstm_gru resnet18_dynquant resnet18_fp16 ssdlite320_mobilenet_v3_large transformer_s2048 "
group_of() { case "$families" in *" $1 "*) echo family ;; *) echo zoo ;; esac; }

if [ $# -gt 0 ]; then
    models=("$@")
else
    models=()
    while IFS=$'\t' read -r file _source _sha; do
        case "$file" in ''|'#'*) continue ;; esac
        models+=("$file")
    done < "$repo/bench/zoo.sha256"
fi

work="$(mktemp -d /tmp/convgate-bench-run.XXXXXX)"
trap 'rm -rf "$work"' EXIT
json() { /usr/bin/python3 -c 'import json,sys
d = json.load(sys.stdin)
for k in sys.argv[1:]:
    d = d[k]
print(d)' "$@"; }
fmt() { awk -v v="$1" 'BEGIN { if (v == "" || v == "-") print "-"; else printf "%.2f", v }'; }
fmt1() { awk -v v="$1" 'BEGIN { if (v == "" || v == "-") print "-"; else printf "%.1f", v }'; }
# Keeps T cores busy for 0.2 s, right before a timed process starts. This
# host leaves idle slowly: a process started after a pause (even the few ms
# between one model's ORT process and the next convgate process) ran its
# first 30-50 ms at about a third of its speed (mobilenet_v2: set-up 25-40
# ms against 12-15, first run 28-34 ms against 11-13; 2026-12-03, "First
# runs after idle" in docs/BENCHMARKS.md). ORT's session creation keeps its
# CPU busy for 50-700 ms before its first run anyway, convgate's set-up for
# 2-30 ms: without this the first-run column measured the host's wake-up
# on one side only. Both sides get it.
wake_cpus() {
    local i
    for ((i = 0; i < $1; i++)); do
        timeout 0.2 bash -c 'while :; do :; done' &
    done
    wait
}
# The median of the arguments (numbers), "-" when there are none.
median() {
    [ $# -gt 0 ] || { echo -; return; }
    printf '%s\n' "$@" | sort -g | awk '{ v[NR] = $1 } END {
        if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}

echo "convgate: $("$convgate" --version 2>/dev/null | head -n 1); $(nproc) CPUs; $(uptime | sed 's/.*load average/load average/') (before)"
echo "runs: median of $runs warm runs per model, runtime and thread count, or more where $runs take under $min_ms ms (column N); $rounds pass(es) over the models, the median pass reported"

# per thread count: "name group ratio" lines for the summary
. "$(dirname "$0")/progress.sh"
for t in $thread_counts; do
    : > "$work/ratios.$t"
    : > "$work/xnnrows.$t"
    echo
    echo "## $t thread(s)"
    echo
    echo "| model | N | cg ms | ort ms | cg/ort | cpu cg/ort | cg 1st ms | 1st/warm | plan | ort 1st/warm | cg load+plan ms | ort session ms | cg RSS MiB | ort RSS MiB |"
    echo "|---|---:|---:|---:|---:|---:|---:|---:|---|---:|---:|---:|---:|---:|"
    # --rounds R: R passes over the models, each running convgate then ORT on
    # every model; a figure is the median of its R per-pass values, so the
    # passes of one model lie minutes apart and a slow spell of the machine
    # hits both sides, in one pass of several, rather than one side's only run
    for ((round = 1; round <= rounds; round++)); do
        model_i=0
        for m in "${models[@]}"; do
            model_i=$((model_i + 1))
            bench_progress "bench_run ($t thread(s), round $round of $rounds)" "$model_i" \
                "${#models[@]}" "$(basename "$m")"
            case "$m" in */*) path="$m" ;; *) path="$zoo/$m" ;; esac
            name="$(basename "$m" .onnx)"
            [ -f "$path" ] || continue
            # the inputs parity.sh would use; the model is looked up by its name
            if [ ! -d "$work/in/$name/in" ] && [ ! -f "$work/noin.$name" ] &&
               ! bash "$repo/bench/parity.sh" --zoo "$(dirname "$path")" --keep "$work/in" \
                    --inputs-only "$convgate" "$(basename "$path")" >"$work/gen.log" 2>&1; then
                bench_progress_clear; echo "$name: no inputs: $(grep FAIL "$work/gen.log" | head -n 1)" >&2
                : > "$work/noin.$name"
            fi
            [ -f "$work/noin.$name" ] && continue
            feeds=(); ort_feeds=()
            for f in "$work/in/$name/in/"*.npy; do
                n="$(basename "$f" .npy)"
                feeds+=(-i "$n=$f"); ort_feeds+=(--input "$n=$f")
            done
            # N: enough warm runs for --min-ms, from a short calibration run
            if [ ! -f "$work/runs.$t.$name" ]; then
                n_runs=$runs
                if "$convgate" run "$path" "${feeds[@]}" --threads "$t" --repeat 3 --json \
                       >"$work/cal.json" 2>/dev/null; then
                    n_runs=$(awk -v r="$runs" -v ms="$min_ms" \
                                 -v m="$(json result timing median_ms <"$work/cal.json")" 'BEGIN {
                        n = (m > 0) ? int(ms / m) + 1 : r; if (n > 2000) n = 2000
                        if (n < r) n = r; print n }')
                fi
                echo "$n_runs" > "$work/runs.$t.$name"
            fi
            n_runs=$(cat "$work/runs.$t.$name")
            wake_cpus "$t"
            if /usr/bin/time -f '%M' -o "$work/rss" "$convgate" run "$path" "${feeds[@]}" \
                    --threads "$t" --repeat "$n_runs" --json >"$work/cg.json" 2>"$work/cg.err"; then
                echo "$(json result timing median_ms <"$work/cg.json")" \
                     "$(json result timing first_ms <"$work/cg.json")" \
                     "$(json result timing cpu_median_ms <"$work/cg.json")" \
                     "$(awk -v a="$(json result timing load_ms <"$work/cg.json")" \
                            -v b="$(json result timing init_ms <"$work/cg.json")" 'BEGIN {print a + b}')" \
                     "$(awk -v k="$(tail -n 1 "$work/rss")" 'BEGIN {printf "%.1f", k / 1024}')" \
                     "$(json result timing memory_plan <"$work/cg.json" | tr ' ' _)" \
                     >> "$work/cg.$t.$name"
            else
                bench_progress_clear; echo "$name: convgate: $(grep -v '^Command exited' "$work/cg.err" | tr '\n' ' ')" >&2
            fi
            wake_cpus "$t"
            if line=$(node "$repo/bench/ort_session.js" --run --json --runs "$n_runs" --threads "$t" \
                           "${ort_feeds[@]}" "$path" 2>"$work/ort.err"); then
                echo "$(json run_ms <<< "$line") $(json create_ms <<< "$line") $(json cpu_ms <<< "$line")" \
                     "$(awk -v k="$(json peak_rss_kb <<< "$line")" 'BEGIN {printf "%.1f", k / 1024}')" \
                     "$(json first_ms <<< "$line")" >> "$work/ort.$t.$name"
            else
                bench_progress_clear; echo "$name: onnxruntime: $(tail -n 1 "$work/ort.err")" >&2
            fi
        done
    done

    # column c of a per-pass file, as median's arguments
    col() { [ -f "$1" ] && awk -v c="$2" '{ print $c }' "$1"; }
    for m in "${models[@]}"; do
        case "$m" in */*) path="$m" ;; *) path="$zoo/$m" ;; esac
        name="$(basename "$m" .onnx)"
        row() { bench_progress_clear; echo "| $name | $* |"; }
        if [ ! -f "$path" ]; then
            row "- | missing | - | - | - | - | - | - | - | - | - | - | -"; continue
        fi
        if [ -f "$work/noin.$name" ]; then
            row "- | fail | - | - | - | - | - | - | - | - | - | - | -"; continue
        fi
        n_runs=$(cat "$work/runs.$t.$name" 2>/dev/null || echo "$runs")
        feeds=()
        for f in "$work/in/$name/in/"*.npy; do
            feeds+=(-i "$(basename "$f" .npy)=$f")
        done
        cgf="$work/cg.$t.$name" ortf="$work/ort.$t.$name"
        cg_run=$(median $(col "$cgf" 1)); cg_first=$(median $(col "$cgf" 2))
        cg_cpu=$(median $(col "$cgf" 3)); cg_load=$(median $(col "$cgf" 4))
        cg_rss=$(fmt1 "$(median $(col "$cgf" 5))")
        # where the memory plan was made, as the passes saw it ("a/b" if they differ)
        cg_plan=$(col "$cgf" 6 | sed 's/first_run/1st run/' | sort -u | paste -sd/ -)
        ort_run=$(median $(col "$ortf" 1)); ort_create=$(median $(col "$ortf" 2))
        ort_cpu=$(median $(col "$ortf" 3)); ort_rss=$(fmt1 "$(median $(col "$ortf" 4))")
        ort_first=$(median $(col "$ortf" 5))

        # the xnnpack target path, where the target covers the whole model
        if [ ! -f "$work/xnn.$name" ]; then
            if "$convgate" assign "$path" --target xnnpack --inputs "$work/in/$name/in" \
                   >"$work/assign.txt" 2>&1 &&
               grep -q '^Partitions (1)' "$work/assign.txt" &&
               grep -q '^Boundaries (0 crossings' "$work/assign.txt"; then
                echo full > "$work/xnn.$name"
            else
                echo partial > "$work/xnn.$name"
            fi
        fi
        if [ "$(cat "$work/xnn.$name")" = full ] && [ "$ort_run" != - ]; then
            wake_cpus "$t"
            if "$convgate" run "$path" "${feeds[@]}" --target xnnpack --threads "$t" \
                   --repeat "$n_runs" --json >"$work/xnn.json" 2>"$work/xnn.err"; then
                echo "$name $(json result timing median_ms <"$work/xnn.json") $ort_run" \
                     "$(json result timing cpu_median_ms <"$work/xnn.json") $ort_cpu" >> "$work/xnnrows.$t"
            else
                bench_progress_clear; echo "$name: convgate --target xnnpack: $(tail -n 1 "$work/xnn.err")" >&2
            fi
        fi

        ratio=-; first_ratio=-; cpu_ratio=-; ort_first_ratio=-
        if [ "$cg_run" != - ] && [ "$ort_run" != - ]; then
            ratio=$(awk -v c="$cg_run" -v o="$ort_run" 'BEGIN {print c / o}')
            cpu_ratio=$(awk -v c="$cg_cpu" -v o="$ort_cpu" 'BEGIN {print (o > 0 ? c / o : 0)}')
            echo "$name $(group_of "$name") $ratio $cpu_ratio" >> "$work/ratios.$t"
        fi
        if [ "$cg_run" != - ]; then
            first_ratio=$(awk -v f="$cg_first" -v c="$cg_run" 'BEGIN {print f / c}')
        fi
        if [ "$ort_run" != - ] && [ "$ort_first" != - ]; then
            ort_first_ratio=$(awk -v f="$ort_first" -v c="$ort_run" 'BEGIN {print f / c}')
        fi
        row "$n_runs | $(fmt "$cg_run") | $(fmt "$ort_run") | $(fmt "$ratio") | $(fmt "$cpu_ratio") | $(fmt "$cg_first") |" \
            "$(fmt "$first_ratio") | ${cg_plan:--} | $(fmt "$ort_first_ratio") | $(fmt "$cg_load") | $(fmt "$ort_create") | $cg_rss | $ort_rss"
    done
done

echo
echo "## Summary"
echo
for t in $thread_counts; do
    awk -v t="$t" '
        $2 == "zoo" { s += log($3); n++; if ($3 > worst) { worst = $3; wname = $1 }
                      if ($4 > 0) { sc += log($4); nc++ } }
        $2 == "family" { fam = fam sprintf("%s %.2f, ", $1, $3); if ($3 > fworst) fworst = $3 }
        END {
            if (n) printf "- %s thread(s): geometric mean of cg/ort over %d zoo models %.2f (of the CPU-time ratios %.2f); worst %s %.2f\n", t, n, exp(s / n), nc ? exp(sc / nc) : 0, wname, worst
            if (fam != "") printf "- %s thread(s), slow families: %s(worst %.2f)\n", t, substr(fam, 1, length(fam) - 2) " ", fworst
        }' "$work/ratios.$t"
done

for t in $thread_counts; do
    [ -s "$work/xnnrows.$t" ] || continue
    echo
    echo "## xnnpack target path, $t thread(s) (models it covers fully)"
    echo
    echo "| model | xnnpack ms | ort ms | xnn/ort | cpu xnn/ort |"
    echo "|---|---:|---:|---:|---:|"
    awk '{ printf "| %s | %.2f | %.2f | %.2f | %.2f |\n", $1, $2, $3, $2 / $3, ($5 > 0 ? $4 / $5 : 0) }' \
        "$work/xnnrows.$t"
done

if [ "$want_gate" = 1 ]; then
    echo
    echo "## Gate and float64"
    echo
    # the xnnpack gates (seconds each) as many times as there are rounds
    # (the median-CPU run is the row); litert-gpu's (up to a minute and a
    # half: vit_b_16's, since the fp16-sums chains run on vectors) once
    "$repo/bench/bench_gate.sh" --zoo "$zoo" --phases \
        --repeat "$rounds" --repeat-targets xnnpack \
        "$convgate" resnet18 resnet50 mobilenet_v2 vit_b_16
    echo
    for m in resnet18 mobilenet_v2 squeezenet1_1; do
        path="$zoo/$m.onnx"
        [ -f "$path" ] || { echo "- float64 $m: $path missing"; continue; }
        if "$convgate" run "$path" --random --threads 1 --repeat "$runs" --json >"$work/f32.json" 2>/dev/null &&
           "$convgate" run "$path" --random --threads 1 --repeat "$runs" --fp64 --json >"$work/f64.json" 2>/dev/null; then
            awk -v n="$m" -v a="$(json result timing cpu_median_ms <"$work/f64.json")" \
                -v b="$(json result timing cpu_median_ms <"$work/f32.json")" \
                'BEGIN { printf "- float64 %s: %.2f ms CPU per run against float32 %.2f: %.2fx\n", n, a, b, a / b }'
        else
            echo "- float64 $m: the run failed"
        fi
    done
fi
echo "- $(uptime | sed 's/.*load average/load average/') (after)"

if [ "$want_conformance" = 1 ]; then
    total=0
    echo
    for suite in node pytorch-converted pytorch-operator simple; do
        if [ ! -d "$testdata/$suite" ]; then
            echo "- conformance $suite: $testdata/$suite missing"; continue
        fi
        t0="${EPOCHREALTIME/[.,]/}"
        summary=$("$convgate" conformance "$testdata/$suite" 2>&1 | tail -n 1)
        t1="${EPOCHREALTIME/[.,]/}"
        total=$((total + t1 - t0))
        echo "- conformance $suite: $(awk -v u=$((t1 - t0)) 'BEGIN {printf "%.1f", u / 1e6}') s ($summary)"
    done
    echo "- conformance, four suites: $(awk -v u="$total" 'BEGIN {printf "%.1f", u / 1e6}') s wall"
fi
