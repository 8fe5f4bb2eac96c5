#!/usr/bin/env bash
# ONNX backend conformance of the kernels' other code paths, against the
# same manifest as conformance.sh and with its runner (lib/conformance.bash):
# the portable C path (--simd portable, so every vector kernel's reference
# runs on any machine), the AVX2 path when the CPU has AVX-512 (auto picks
# AVX-512 there), and three threads (an odd count, so work splits
# unevenly). Exits 77 when the test data is missing.
#
# Usage: conformance_variants.sh CONVGATE_BINARY SOURCE_DIR
bin=${1:?usage: conformance_variants.sh CONVGATE_BINARY SOURCE_DIR}
src=${2:?usage: conformance_variants.sh CONVGATE_BINARY SOURCE_DIR}
. "$(dirname "${BASH_SOURCE[0]}")/lib/harness.bash"
. "$(dirname "${BASH_SOURCE[0]}")/lib/conformance.bash"
manifest="$src/tests/conformance/expected.txt"

conformance_suites "--simd portable" "$manifest" --simd portable
conformance_suites "--threads 3" "$manifest" --threads 3
if grep -qw avx512f /proc/cpuinfo 2>/dev/null; then
    conformance_suites "--simd avx2" "$manifest" --simd avx2
fi
finish
