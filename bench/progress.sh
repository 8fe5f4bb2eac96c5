# Progress of a bench script on stderr, as convgate's own (cli/progress.c):
# one line redrawn in place, only when stderr is a terminal; --quiet
# (BENCH_QUIET=1) and a piped stderr draw nothing; no colour under NO_COLOR.
# Sourced by bench_run.sh and bench_load.sh:
#   bench_progress NAME I N ITEM    line "NAME I/N models Ts ITEM"
#   bench_progress_clear            erase it (before a table row is printed)
bench_progress_start=${EPOCHREALTIME:-0}
bench_progress() {
    [ -t 2 ] && [ "${BENCH_QUIET:-0}" != 1 ] || return 0
    local c='' r=''
    [ -z "${NO_COLOR:-}" ] && { c=$'\e[36m'; r=$'\e[0m'; }
    local el
    el=$(awk -v a="$bench_progress_start" -v b="${EPOCHREALTIME:-0}" 'BEGIN {printf "%.1f", b - a}')
    printf '\r\e[K%s%s:%s %s/%s models %ss %s' "$c" "$1" "$r" "$2" "$3" "$el" "$4" >&2
}
bench_progress_clear() {
    [ -t 2 ] && [ "${BENCH_QUIET:-0}" != 1 ] || return 0
    printf '\r\e[K' >&2
}
