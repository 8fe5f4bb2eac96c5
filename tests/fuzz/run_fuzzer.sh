#!/bin/bash
# run_fuzzer.sh FUZZER CORPUS_DIR SECONDS: runs FUZZER for SECONDS on a
# scratch copy of its committed corpus (the tree is never written) and
# prints the coverage it reached. Any crash, leak, timeout or sanitizer
# report fails, and so does a run that reached fewer than CG_FUZZ_MIN_COV
# (default 20) edges: a library built without -fsanitize=fuzzer-no-link
# shows the fuzzer only its own few edges (cov 3-4) and fuzzes blind; the
# smallest instrumented target (fuzz_tol) reaches about 75.
# To grow and re-minimize a corpus by hand:
#   FUZZER -max_total_time=600 NEW/ CORPUS_DIR/     # explore
#   FUZZER -merge=1 MIN/ CORPUS_DIR/ NEW/           # keep what adds coverage
set -eu
fuzzer="$(cd "$(dirname "$1")" && pwd)/$(basename "$1")"
corpus="$(cd "$(dirname "$2")" && pwd)/$(basename "$2")"
seconds=$3
name=$(basename "$fuzzer")
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/corpus"
seeds=0
if [ -d "$corpus" ]; then
    cp -r "$corpus/." "$work/corpus/"
    seeds=$(find "$work/corpus" -type f | wc -l)
fi
# Inputs that once crashed (tests/fuzz/regressions/<name>/) run first, each
# once, whatever the corpus minimization kept.
regress="$(dirname "$corpus")/../regressions/$(basename "$corpus")"
if [ -d "$regress" ] && [ -n "$(ls -A "$regress")" ]; then
    if ! (cd "$work" && TMPDIR="$work" "$fuzzer" -timeout=10 "$regress"/* > "$work/regress.log" 2>&1); then
        tail -40 "$work/regress.log"
        echo "$name: a regression input fails again"
        exit 1
    fi
    echo "$name: $(ls "$regress" | wc -l) regression inputs pass"
fi
echo "$name: $seeds seed inputs from $corpus; fuzzing for ${seconds}s"
set +e
(cd "$work" && TMPDIR="$work" "$fuzzer" -max_total_time="$seconds" -rss_limit_mb=2048 \
    -max_len=65536 -timeout=10 -print_final_stats=1 corpus) > "$work/log" 2>&1
rc=$?
set -e
# the last status line holds the totals: "#N DONE cov: C ft: F corp: K/..."
last=$(grep -E '^#[0-9]+' "$work/log" | tail -1)
cov=$(sed -n 's/.* cov: \([0-9]*\).*/\1/p' <<< "$last")
ft=$(sed -n 's/.* ft: \([0-9]*\).*/\1/p' <<< "$last")
corp=$(sed -n 's/.* corp: \([0-9]*\).*/\1/p' <<< "$last")
execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$work/log")
echo "$name: coverage ${cov:-?} edges, ${ft:-?} features, corpus ${corp:-?}, ${execs:-?} runs"
min_cov=${CG_FUZZ_MIN_COV:-20}
if [ "$rc" = 0 ] && [ "${cov:-0}" -lt "$min_cov" ]; then
    echo "$name: coverage ${cov:-?} < $min_cov edges: is the library instrumented (CG_FUZZ=ON)?"
    exit 1
fi
if [ "$rc" != 0 ]; then
    tail -40 "$work/log"
    # keep every reproducer past the scratch folder's removal: beside the
    # test's working directory (the build tree under CTest), or in
    # $CG_FUZZ_ARTIFACTS
    keep="${CG_FUZZ_ARTIFACTS:-$PWD/fuzz-artifacts}"
    for f in "$work"/crash-* "$work"/leak-* "$work"/timeout-* "$work"/oom-* \
             "$work"/slow-unit-*; do
        [ -e "$f" ] || continue
        mkdir -p "$keep" && cp "$f" "$keep/$name-$(basename "$f")" &&
            echo "reproducer kept: $keep/$name-$(basename "$f")"
        echo "reproducer: $(basename "$f") ($(base64 -w0 < "$f" | head -c 400))"
    done
fi
exit "$rc"
