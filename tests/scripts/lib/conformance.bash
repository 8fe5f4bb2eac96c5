# The ONNX backend conformance runner that conformance.sh and
# conformance_variants.sh share (sourced after lib/harness.bash, never run).
#
# It sets `conformance_data` (${CG_ONNX_TESTDATA:-/usr/share/libonnx-
# testdata/data}) and exits 77 when that has no node suite; then
#
# conformance_suites LABEL MANIFEST [ARGS...]
#     runs `convgate conformance SUITE --expect MANIFEST ARGS...` on each
#     suite of the test data (node, pytorch-converted, pytorch-operator,
#     simple; one not installed is named and passed over), prints each
#     suite's totals line, and counts a failure, showing the deviations (an
#     unlisted failure, or a listed test that now passes), for each suite
#     whose run does not exit 0.
: "${bin:?lib/conformance.bash: source lib/harness.bash first}"
conformance_data=${CG_ONNX_TESTDATA:-/usr/share/libonnx-testdata/data}
if [ ! -d "$conformance_data/node" ]; then
    echo "$harness_name: $conformance_data not found (install libonnx-testdata); skipping"
    exit 77
fi

conformance_suites() {
    local label=$1 manifest=$2 suite out rc
    shift 2
    [ -f "$manifest" ] || { fail "$label: manifest $manifest is missing"; return 0; }
    for suite in node pytorch-converted pytorch-operator simple; do
        if [ ! -d "$conformance_data/$suite" ]; then
            echo "$label, $suite: not installed, skipped"
            continue
        fi
        out=$("$bin" conformance "$conformance_data/$suite" --expect "$manifest" "$@" 2>&1)
        rc=$?
        echo "$label, $suite: $(printf '%s\n' "$out" | tail -n 1)"
        if [ "$rc" -ne 0 ]; then
            # the deviations, and anything that is not a plain result line
            printf '%s\n' "$out" | grep -Ev '^(PASS|FAIL|SKIP) |^[0-9]+ passed, ' >&2
            fail "$label, $suite: convgate conformance exited $rc"
        fi
    done
    return 0
}
