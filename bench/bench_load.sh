#!/usr/bin/env bash
# Load-cost table for the model zoo: for each model, its file size; convgate
# `inspect` wall time (median of N runs, page cache warm) and peak RSS
# (GNU time); onnxruntime-node 1.22.0 session creation (median, one thread)
# and its process's peak RSS; python3-onnx's onnx.load time (median); and
# convgate's peak RSS divided by the file size, which shows whether weights
# are mapped (ratio well under 1) or copied (1 and over).
#
#   bench/bench_load.sh [--runs N] [--zoo DIR] [--no-ort] [--no-onnx] CONVGATE [MODEL...]
#
# MODELs default to examples/tiny_cnn.onnx plus every model in
# bench/zoo.sha256, found in --zoo DIR (default $CG_ZOO, else <repo>/zoo;
# fill it with tools/fetch_zoo.sh).  The ORT column needs
# `scripts/setup.sh --bench` (bench/node_modules).  Peak RSS of node and
# python includes their own runtimes (node + ORT is about 50 MiB before any
# model): compare those columns with care.
set -euo pipefail

repo="$(cd "$(dirname "$0")/.." && pwd)"
runs=5
zoo="${CG_ZOO:-$repo/zoo}"
want_ort=1
want_onnx=1
usage() { sed -n '9p' "$0" | sed 's/^# *//' >&2; exit 2; }
while [ $# -gt 0 ]; do
    case "$1" in
        --runs) runs="${2:?}"; shift 2 ;;
        --zoo) zoo="${2:?}"; shift 2 ;;
        --no-ort) want_ort=0; shift ;;
        --no-onnx) want_onnx=0; shift ;;
        -h|--help) usage ;;
        -*) echo "bench_load: unknown option $1" >&2; usage ;;
        *) break ;;
    esac
done
[ $# -ge 1 ] || usage
convgate="$1"; shift
if [ ! -x "$convgate" ]; then
    echo "bench_load: $convgate is not an executable (build it: ninja -C build)" >&2
    exit 2
fi
case "$runs" in ''|*[!0-9]*|0) echo "bench_load: --runs wants a positive integer" >&2; exit 2 ;; esac

if [ $# -gt 0 ]; then
    models=("$@")
else
    models=("$repo/examples/tiny_cnn.onnx")
    while IFS=$'\t' read -r file _source _sha; do
        case "$file" in ''|'#'*) continue ;; esac
        models+=("$zoo/$file")
    done < "$repo/bench/zoo.sha256"
fi

if [ ! -x /usr/bin/time ]; then
    echo "bench_load: /usr/bin/time (GNU time) is missing: scripts/setup.sh --bench" >&2
    exit 2
fi
if [ "$want_ort" = 1 ] && [ ! -d "$repo/bench/node_modules/onnxruntime-node" ]; then
    echo "bench_load: bench/node_modules missing (scripts/setup.sh --bench); ORT column skipped" >&2
    want_ort=0
fi

time_log="$(mktemp /tmp/convgate-bench.XXXXXX)"
trap 'rm -f "$time_log"' EXIT

# median of the numbers on stdin, one per line
median() { sort -g | awk '{v[NR]=$1} END {if (NR==0) print "nan"; else if (NR%2) print v[(NR+1)/2]; else print (v[NR/2]+v[NR/2+1])/2}'; }

# now in microseconds, from bash's EPOCHREALTIME (no fork, so the timing
# is of convgate alone)
now_us() { local t="${EPOCHREALTIME/[.,]/}"; echo "$t"; }

# JSON field from a one-line object, via python (always present: onnx needs it)
json_field() { /usr/bin/python3 -c 'import json,sys; print(json.loads(sys.stdin.readline())[sys.argv[1]])' "$1"; }

# Process start-up alone (dynamic linking, BLAS init): the floor under the
# "cg ms" column.
"$convgate" --help > /dev/null 2>&1 || true
times=()
for _ in $(seq "$runs"); do
    t0=$(now_us)
    "$convgate" --help > /dev/null 2>&1 || true
    t1=$(now_us)
    times+=("$(( t1 - t0 ))")
done
echo "convgate start-up (--help): $(printf '%s\n' "${times[@]}" | median | awk '{printf "%.2f", $1 / 1000}') ms"

printf '%-36s %9s %10s %10s %8s %10s %10s %10s\n' \
    model "size MiB" "cg ms" "cg RSS MiB" "RSS/size" "ort ms" "ortRSS MiB" "onnx ms"
. "$(dirname "$0")/progress.sh"
model_i=0
for m in "${models[@]}"; do
    model_i=$((model_i + 1)); bench_progress bench_load "$model_i" "${#models[@]}" "$(basename "$m")"
    name="$(basename "$m")"
    if [ ! -f "$m" ]; then
        bench_progress_clear; printf '%-36s missing (run tools/fetch_zoo.sh)\n' "$name"
        continue
    fi
    size=$(stat -c %s "$m")
    size_mib=$(awk -v b="$size" 'BEGIN {printf "%.2f", b / 1048576}')

    cg_ms=fail; cg_rss=fail; ratio=-
    if "$convgate" inspect "$m" > /dev/null 2>&1; then   # also warms the page cache
        times=()
        for _ in $(seq "$runs"); do
            t0=$(now_us)
            "$convgate" inspect "$m" > /dev/null 2>&1
            t1=$(now_us)
            times+=("$(( t1 - t0 ))")
        done
        cg_ms=$(printf '%s\n' "${times[@]}" | median | awk '{printf "%.2f", $1 / 1000}')
        /usr/bin/time -v -o "$time_log" "$convgate" inspect "$m" > /dev/null 2>&1
        rss_kb=$(awk -F': ' '/Maximum resident set size/ {print $2}' "$time_log")
        cg_rss=$(awk -v k="$rss_kb" 'BEGIN {printf "%.1f", k / 1024}')
        ratio=$(awk -v k="$rss_kb" -v b="$size" 'BEGIN {printf "%.3f", k * 1024 / b}')
    fi

    ort_ms=-; ort_rss=-
    if [ "$want_ort" = 1 ]; then
        if line=$(node "$repo/bench/ort_session.js" --json --runs "$runs" "$m" 2>/dev/null); then
            ort_ms=$(json_field create_ms <<< "$line" | awk '{printf "%.2f", $1}')
            ort_rss=$(json_field peak_rss_kb <<< "$line" | awk '{printf "%.1f", $1 / 1024}')
        else
            ort_ms=fail; ort_rss=fail
        fi
    fi

    onnx_ms=-
    if [ "$want_onnx" = 1 ]; then
        if line=$(/usr/bin/python3 "$repo/bench/onnx_load.py" --json --runs "$runs" "$m" 2>/dev/null); then
            onnx_ms=$(json_field load_ms <<< "$line" | awk '{printf "%.2f", $1}')
        else
            onnx_ms=fail
        fi
    fi

    bench_progress_clear; printf '%-36s %9s %10s %10s %8s %10s %10s %10s\n' \
        "$name" "$size_mib" "$cg_ms" "$cg_rss" "$ratio" "$ort_ms" "$ort_rss" "$onnx_ms"
done
echo "(medians of $runs runs; single-threaded ORT: intra/inter-op threads 1; RSS from GNU time and Node's maxRSS)"
