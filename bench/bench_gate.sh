#!/usr/bin/env bash
# #11's gate figures: `convgate gate MODEL --target T --random 3` timed by
# GNU time (wall s, user + sys CPU s, peak RSS) beside one reference run
# (`convgate run MODEL --random`), and the gate's own phase breakdown
# (`gate --timings`: where the CPU time went). With --repeat N each gate
# runs N times and the row is the run with the median CPU time (on a
# shared machine the CPU time is the figure to read; the wall time counts
# the other processes too); the phases line lists every run's wall time.
# --repeat-targets LIST repeats only those targets' gates (the others run
# once: litert-gpu's take minutes). The machine's load average is printed before
# and after. bench/bench_run.sh prints these rows in its gate section.
#
#   bench/bench_gate.sh [--zoo DIR] [--repeat N] [--repeat-targets "xnnpack"] [--targets "xnnpack litert-gpu"] [--except "MODEL:TARGET ..."] [--phases] CONVGATE [MODEL...]
#
# MODELs are zoo names (default: resnet18 resnet50 mobilenet_v2 vit_b_16)
# in --zoo, else $CG_ZOO, else <repo>/zoo. --except leaves out the named
# model/target pairs (each gets a row saying so). Needs GNU time.
set -uo pipefail

repo="$(cd "$(dirname "$0")/.." && pwd)"
zoo="${CG_ZOO:-$repo/zoo}"
repeat=1
targets="xnnpack litert-gpu"
repeat_targets=""
phases=0
except=""
usage() { sed -n '11p' "$0" | sed 's/^# *//' >&2; exit 2; }
while [ $# -gt 0 ]; do
    case "$1" in
        --zoo) zoo="${2:?--zoo needs a directory}"; shift 2 ;;
        --repeat) repeat="${2:?--repeat needs a number}"; shift 2 ;;
        --repeat-targets) repeat_targets="${2:?--repeat-targets needs a list}"; shift 2 ;;
        --targets) targets="${2:?--targets needs a list}"; shift 2 ;;
        --except) except="${2?--except needs a list}"; shift 2 ;;
        --phases) phases=1; shift ;;
        -h|--help) sed -n '2,15p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
        -*) echo "bench_gate: unknown option $1" >&2; usage ;;
        *) break ;;
    esac
done
[ $# -ge 1 ] || usage
convgate="$1"; shift
case "$repeat" in ''|*[!0-9]*|0) echo "bench_gate: --repeat wants a positive integer" >&2; exit 2 ;; esac
[ -x "$convgate" ] || { echo "bench_gate: $convgate is not an executable" >&2; exit 2; }
[ -x /usr/bin/time ] || { echo "bench_gate: /usr/bin/time (GNU time) is missing" >&2; exit 2; }
export OPENBLAS_NUM_THREADS=1
if [ $# -gt 0 ]; then models=("$@"); else models=(resnet18 resnet50 mobilenet_v2 vit_b_16); fi

work="$(mktemp -d /tmp/convgate-bench-gate.XXXXXX)"
trap 'rm -rf "$work"' EXIT

echo "$(nproc) CPUs; $(uptime | sed 's/.*load average/load average/') (before)"
echo
echo "| model | target | verdict | wall s | CPU s | peak RSS MiB | ref run wall s | ref CPU s | ref RSS MiB | RSS / ref |"
echo "|---|---|---|---:|---:|---:|---:|---:|---:|---:|"
: >"$work/phases"
for m in "${models[@]}"; do
    path="$zoo/$m.onnx"
    [ -f "$path" ] || { echo "| $m | - | $path missing | | | | | | | |"; continue; }
    /usr/bin/time -f '%e %U %S %M' -o "$work/ref.time" "$convgate" run "$path" --random \
        >/dev/null 2>&1 || true
    r=$(tail -n 1 "$work/ref.time")
    for t in $targets; do
        case " $except " in
            *" $m:$t "*) echo "| $m | $t | not run (--except) | | | | | | | |"; continue ;;
        esac
        : >"$work/rows"
        n="$repeat"
        if [ -n "$repeat_targets" ]; then
            case " $repeat_targets " in *" $t "*) ;; *) n=1 ;; esac
        fi
        for i in $(seq "$n"); do
            if /usr/bin/time -f '%e %U %S %M' -o "$work/gate.time" "$convgate" gate "$path" \
                   --target "$t" --random 3 --quiet --timings >"$work/gate.out" 2>"$work/gate.err"; then
                verdict=PASS
            else
                verdict="FAIL"
                grep -q '^VERDICT' "$work/gate.out" || verdict="ERROR: $(grep -v '^Command exited' "$work/gate.err" | grep -v '^ ' | grep -v '^timings' | tail -n 1)"
            fi
            g=$(tail -n 1 "$work/gate.time")
            # cpu, then the fields, then the phases (one line)
            echo "$(awk '{ printf "%.3f", $2 + $3 }' <<<"$g") $g $verdict|$(grep -E '^  |^gate 3 schedule' "$work/gate.err" | tr '\n' ';')" >>"$work/rows"
        done
        row=$(sort -n "$work/rows" | awk -v n="$n" 'NR == int((n + 1) / 2)')
        walls=$(awk '{ printf "%s%s", (NR > 1 ? ", " : ""), $2 }' "$work/rows")
        awk -v m="$m" -v t="$t" -v r="$r" -v row="${row%%|*}" 'BEGIN {
            split(row, a, " "); split(r, b, " ")
            v = a[6]; for (i = 7; i <= length(a); i++) v = v " " a[i]
            printf "| %s | %s | %s | %.2f | %.2f | %.1f | %.2f | %.2f | %.1f | %.2f |\n",
                m, t, v, a[2], a[1], a[5] / 1024, b[1], b[2] + b[3], b[4] / 1024,
                (b[4] > 0 ? a[5] / b[4] : 0)
        }'
        if [ "$n" -gt 1 ]; then
            echo "$m $t: ${row#*|} (the median-CPU run of $n; their wall s: $walls)" >>"$work/phases"
        else
            echo "$m $t: ${row#*|}" >>"$work/phases"
        fi
    done
done
if [ "$phases" = 1 ]; then
    echo
    echo "Phases of those runs (gate --timings: wall s, CPU s; reference and target each"
    echo "their own wall and thread CPU: side by side under the overlap schedule, one"
    echo "after the other under the phased one, as each line's last field says):"
    echo
    sed 's/;  */; /g; s/:  */: /; s/  */ /g' "$work/phases" | sed 's/^/- /'
fi
echo
echo "$(uptime | sed 's/.*load average/load average/') (after)"
