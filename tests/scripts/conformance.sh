#!/usr/bin/env bash
# ONNX backend conformance against the committed manifest.
#
# Usage: conformance.sh CONVGATE_BINARY SOURCE_DIR
# Runs 'convgate conformance' on each suite of the libonnx-testdata package
# with --expect tests/conformance/expected.txt and fails on any deviation
# (an unlisted failure, or a listed test that now passes); then again in the
# float64 reference mode (--fp64) against expected.txt + expected_fp64.txt
# (the tests whose meaning differs in double). The runner is
# lib/conformance.bash, which conformance_variants.sh shares. Exits 77
# (CTest "skipped") when the test data is not installed.
bin=${1:?usage: conformance.sh CONVGATE_BINARY SOURCE_DIR}
src=${2:?usage: conformance.sh CONVGATE_BINARY SOURCE_DIR}
. "$(dirname "${BASH_SOURCE[0]}")/lib/harness.bash"
. "$(dirname "${BASH_SOURCE[0]}")/lib/conformance.bash"
manifest="$src/tests/conformance/expected.txt"

conformance_suites fp32 "$manifest"
if [ -f "$manifest" ]; then
    cat "$manifest" "$src/tests/conformance/expected_fp64.txt" >"$tmp/expected_fp64_all.txt" ||
        fail "expected_fp64.txt is missing"
    conformance_suites fp64 "$tmp/expected_fp64_all.txt" --fp64
fi
finish
