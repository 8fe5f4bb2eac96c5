#!/usr/bin/env bash
# ONNX backend conformance against the committed manifest.
#
# Usage: conformance.sh CONVGATE_BINARY SOURCE_DIR
# Runs 'convgate conformance' on each suite of the libonnx-testdata package
# with --expect tests/conformance/expected.txt and fails on any deviation
# (an unlisted failure, or a listed test that now passes). Exits 77 (CTest
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

status=0
for suite in node pytorch-converted pytorch-operator simple; do
    if [ ! -d "$data/$suite" ]; then
        echo "$suite: not installed, skipped"
        continue
    fi
    out=$("$bin" conformance "$data/$suite" --expect "$manifest" 2>&1)
    rc=$?
    echo "$suite: $(printf '%s\n' "$out" | tail -n 1)"
    if [ "$rc" -ne 0 ]; then
        # Show the deviations (and anything that is not a plain result line).
        printf '%s\n' "$out" | grep -Ev '^(PASS|FAIL|SKIP) |^[0-9]+ passed, ' >&2
        status=1
    fi
done
exit $status
