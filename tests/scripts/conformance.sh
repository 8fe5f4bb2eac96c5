#!/usr/bin/env bash
# ONNX backend conformance against the committed manifest.
#
# Usage: conformance.sh CONVGATE_BINARY SOURCE_DIR
# Runs 'convgate conformance' on each suite of the libonnx-testdata package
# with --expect tests/conformance/expected.txt and fails on any deviation
# (an unlisted failure, or a listed test that now passes); then again in the
# float64 reference mode (--fp64) against expected.txt + expected_fp64.txt. Exits 77 (CTest
# "skipped") when the test data is not installed.
set -u

bin=${1:?usage: conformance.sh CONVGATE_BINARY SOURCE_DIR}
src=${2:?usage: conformance.sh CONVGATE_BINARY SOURCE_DIR}
data=${CG_ONNX_TESTDATA:-/usr/share/libonnx-testdata/data}
manifest="$src/tests/conformance/expected.txt"

if [ ! -d "$data/node" ]; then
    echo "conformance: $data not found (install libonnx-testdata); skipping"
    exit 77
fi
if [ ! -f "$manifest" ]; then
    echo "conformance: manifest $manifest is missing" >&2
    exit 1
fi

# The float64 reference mode (--fp64) is held to the same manifest plus
# expected_fp64.txt (the tests whose meaning differs in double).
manifest64=$(mktemp)
trap 'rm -f "$manifest64"' EXIT
cat "$manifest" "$src/tests/conformance/expected_fp64.txt" >"$manifest64"

status=0
for mode in fp32 fp64; do
    for suite in node pytorch-converted pytorch-operator simple; do
        if [ ! -d "$data/$suite" ]; then
            echo "$suite: not installed, skipped"
            continue
        fi
        if [ "$mode" = fp64 ]; then
            out=$("$bin" conformance "$data/$suite" --fp64 --expect "$manifest64" 2>&1)
        else
            out=$("$bin" conformance "$data/$suite" --expect "$manifest" 2>&1)
        fi
        rc=$?
        echo "$suite ($mode): $(printf '%s\n' "$out" | tail -n 1)"
        if [ "$rc" -ne 0 ]; then
            # Show the deviations (and anything that is not a plain result line).
            printf '%s\n' "$out" | grep -Ev '^(PASS|FAIL|SKIP) |^[0-9]+ passed, ' >&2
            status=1
        fi
    done
done
exit $status
