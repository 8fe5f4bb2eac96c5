#!/usr/bin/env bash
# ONNX backend conformance of the kernels' other code paths, against the
# same manifest as conformance.sh: the portable C path (--simd portable, so
# every vector kernel's reference runs on any machine), the AVX2 path when
# the CPU has AVX-512 (auto picks AVX-512 there), and three threads (an odd
# count, so work splits unevenly). Exits 77 when the test data is missing.
#
# Usage: conformance_variants.sh CONVGATE_BINARY SOURCE_DIR
set -u
bin=${1:?usage: conformance_variants.sh CONVGATE_BINARY SOURCE_DIR}
src=${2:?usage: conformance_variants.sh CONVGATE_BINARY SOURCE_DIR}
data=${CG_ONNX_TESTDATA:-/usr/share/libonnx-testdata/data}
manifest="$src/tests/conformance/expected.txt"
if [ ! -d "$data/node" ]; then
    echo "conformance_variants: $data not found (install libonnx-testdata); skipping"
    exit 77
fi
variants=("--simd portable" "--threads 3")
if grep -qw avx512f /proc/cpuinfo 2>/dev/null; then
    variants+=("--simd avx2")
fi
status=0
for v in "${variants[@]}"; do
    for suite in node pytorch-converted pytorch-operator simple; do
        [ -d "$data/$suite" ] || continue
        # shellcheck disable=SC2086 # the variant is two words on purpose
        out=$("$bin" conformance "$data/$suite" --expect "$manifest" $v 2>&1)
        rc=$?
        echo "$v, $suite: $(printf '%s\n' "$out" | tail -n 1)"
        if [ "$rc" -ne 0 ]; then
            printf '%s\n' "$out" | grep -Ev '^(PASS|FAIL|SKIP) |^[0-9]+ passed, ' >&2
            status=1
        fi
    done
done
exit $status
