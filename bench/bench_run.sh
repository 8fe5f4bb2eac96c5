#!/usr/bin/env bash
# Inference latency of convgate's reference runtime against onnxruntime-node
# 1.22.0 on the model zoo, both single-threaded (ORT: intra- and inter-op
# threads 1; convgate: OPENBLAS_NUM_THREADS=1), on the same seeded inputs
# (written by bench/parity.sh --inputs-only), in the same run.  Per model:
#
#   cg run ms    median of N warm cg_runtime_run calls in one process after
#                the first run (`convgate run --repeat N --json`:
#                timing.median_ms); model load, runtime set-up and the
#                first (memory-planning) run excluded, as for ORT.
#   cg 1st ms    that process's first run (allocations, first touches of
#                the weights, building the memory plan).
#   cg proc ms   wall time of the whole process: start-up, load, set-up,
#                1 + N runs, the output summary and exit.
#   ort run ms   median of N session.run calls in one process after one
#                warm-up run (bench/ort_session.js --run).
#   cg/ort       cg run ms / ort run ms.
#   cg RSS MiB   peak RSS of a convgate process (GNU time, largest of N).
#   ort RSS MiB  peak RSS of the node process (Node's maxRSS), which
#                includes node + ORT's own ~50 MiB before any model.
#
# then the geometric mean of cg/ort over the conv nets (resnet18, resnet50,
# mobilenet_v2, mobilenet_v3_small, squeezenet1_1), and, unless
# --no-conformance, the wall time of `convgate conformance` over the node,
# pytorch-converted, pytorch-operator and simple suites of libonnx-testdata.
#
#   bench/bench_run.sh [--zoo DIR] [--runs N] [--no-conformance] CONVGATE [MODEL...]
#
# MODELs are zoo file names or paths (default: all of bench/zoo.sha256 in
# --zoo, else $CG_ZOO, else <repo>/zoo).  Needs scripts/setup.sh --bench
# (node, bench/node_modules, GNU time).
set -uo pipefail

repo="$(cd "$(dirname "$0")/.." && pwd)"
zoo="${CG_ZOO:-$repo/zoo}"
runs=10
want_conformance=1
testdata="${CG_ONNX_TESTDATA:-/usr/share/libonnx-testdata/data}"
usage() { sed -n '26p' "$0" | sed 's/^# *//' >&2; exit 2; }
while [ $# -gt 0 ]; do
    case "$1" in
        --zoo) zoo="${2:?--zoo needs a directory}"; shift 2 ;;
        --runs) runs="${2:?--runs needs a number}"; shift 2 ;;
        --no-conformance) want_conformance=0; shift ;;
        -h|--help) sed -n '2,30p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
        -*) echo "bench_run: unknown option $1" >&2; usage ;;
        *) break ;;
    esac
done
[ $# -ge 1 ] || usage
convgate="$1"; shift
case "$runs" in ''|*[!0-9]*|0) echo "bench_run: --runs wants a positive integer" >&2; exit 2 ;; esac
if [ ! -x "$convgate" ]; then
    echo "bench_run: $convgate is not an executable (build it: ninja -C build)" >&2
    exit 2
fi
if [ ! -x /usr/bin/time ]; then
    echo "bench_run: /usr/bin/time (GNU time) is missing: scripts/setup.sh --bench" >&2
    exit 2
fi
export OPENBLAS_NUM_THREADS=1

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

# median of the numbers on stdin, one per line
median() { sort -g | awk '{v[NR]=$1} END {if (NR==0) print "nan"; else if (NR%2) print v[(NR+1)/2]; else print (v[NR/2]+v[NR/2+1])/2}'; }
now_us() { local t="${EPOCHREALTIME/[.,]/}"; echo "$t"; }
# FIELD of the JSON document on stdin
json_field() { /usr/bin/python3 -c 'import json,sys; print(json.load(sys.stdin)[sys.argv[1]])' "$1"; }

printf '%-32s %10s %10s %10s %10s %7s %10s %11s\n' \
    model "cg run ms" "cg 1st ms" "cg proc ms" "ort run ms" "cg/ort" "cg RSS MiB" "ort RSS MiB"
conv_ratios=()
. "$(dirname "$0")/progress.sh"
model_i=0
for m in "${models[@]}"; do
    model_i=$((model_i + 1)); bench_progress bench_run "$model_i" "${#models[@]}" "$(basename "$m")"
    case "$m" in */*) path="$m" ;; *) path="$zoo/$m" ;; esac
    name="$(basename "$m" .onnx)"
    row() { bench_progress_clear; printf '%-32s %10s %10s %10s %10s %7s %10s %11s\n' "$name" "$@"; }
    if [ ! -f "$path" ]; then
        row missing - - - - - -; continue
    fi
    # The inputs parity.sh would use; the model is looked up by its name.
    if ! bash "$repo/bench/parity.sh" --zoo "$(dirname "$path")" --keep "$work" --inputs-only \
            "$convgate" "$(basename "$path")" >"$work/gen.log" 2>&1; then
        bench_progress_clear; echo "$name: no inputs: $(grep FAIL "$work/gen.log" | head -n 1)" >&2
        row fail - - - - - -; continue
    fi
    feeds=(); ort_feeds=()
    for f in "$work/$name/in/"*.npy; do
        n="$(basename "$f" .npy)"
        feeds+=(-i "$n=$f"); ort_feeds+=(--input "$n=$f")
    done

    cg_run=fail; cg_first=fail; cg_proc=fail; cg_rss=fail
    t0=$(now_us)
    if OPENBLAS_NUM_THREADS=1 /usr/bin/time -f '%M' -o "$work/rss" "$convgate" run "$path" \
            "${feeds[@]}" --repeat "$runs" --json >"$work/cg.json" 2>"$work/cg.err"; then
        t1=$(now_us)
        cg_run=$(/usr/bin/python3 -c 'import json,sys; print("%.2f" % json.load(sys.stdin)["result"]["timing"]["median_ms"])' <"$work/cg.json")
        cg_first=$(/usr/bin/python3 -c 'import json,sys; print("%.2f" % json.load(sys.stdin)["result"]["timing"]["first_ms"])' <"$work/cg.json")
        cg_proc=$(awk -v a="$t0" -v b="$t1" 'BEGIN {printf "%.2f", (b - a) / 1000}')
        cg_rss=$(awk -v k="$(tail -n 1 "$work/rss")" 'BEGIN {printf "%.1f", k / 1024}')
    else
        bench_progress_clear; echo "$name: convgate: $(grep -v '^Command exited' "$work/cg.err" | tr '\n' ' ')" >&2
    fi

    ort_run=fail; ort_rss=fail
    if line=$(node "$repo/bench/ort_session.js" --run --json --runs "$runs" "${ort_feeds[@]}" \
                   "$path" 2>"$work/ort.err"); then
        ort_run=$(json_field run_ms <<< "$line" | awk '{printf "%.2f", $1}')
        ort_rss=$(json_field peak_rss_kb <<< "$line" | awk '{printf "%.1f", $1 / 1024}')
    else
        bench_progress_clear; echo "$name: onnxruntime: $(tail -n 1 "$work/ort.err")" >&2
    fi

    ratio=-
    if [ "$cg_run" != fail ] && [ "$ort_run" != fail ]; then
        ratio=$(awk -v c="$cg_run" -v o="$ort_run" 'BEGIN {printf "%.2f", c / o}')
        case "$name" in
            resnet18|resnet50|mobilenet_v2|mobilenet_v3_small|squeezenet1_1)
                conv_ratios+=("$(awk -v c="$cg_run" -v o="$ort_run" 'BEGIN {print c / o}')") ;;
        esac
    fi
    row "$cg_run" "$cg_first" "$cg_proc" "$ort_run" "$ratio" "$cg_rss" "$ort_rss"
done
echo "(medians of $runs warm runs in one process for both; convgate's first run shown apart)"
if [ "${#conv_ratios[@]}" -gt 0 ]; then
    printf '%s\n' "${conv_ratios[@]}" |
        awk '{s += log($1); n++} END {printf "geometric mean of cg/ort over %d conv net(s): %.2f\n", n, exp(s / n)}'
fi

if [ "$want_conformance" = 1 ]; then
    total=0
    for suite in node pytorch-converted pytorch-operator simple; do
        if [ ! -d "$testdata/$suite" ]; then
            echo "conformance $suite: $testdata/$suite missing"; continue
        fi
        t0=$(now_us)
        summary=$("$convgate" conformance "$testdata/$suite" 2>&1 | tail -n 1)
        t1=$(now_us)
        total=$((total + t1 - t0))
        echo "conformance $suite: $(awk -v u=$((t1 - t0)) 'BEGIN {printf "%.1f", u / 1e6}') s ($summary)"
    done
    echo "conformance, four suites: $(awk -v u="$total" 'BEGIN {printf "%.1f", u / 1e6}') s wall"
fi
