#!/usr/bin/env bash
# 'convgate conformance' harness behaviour on the tiny committed suite
# tests/data/io/conf_suite and conf_slow (made by tools/make_io_fixtures.py): result
# lines and summary, timeouts, manifest deviations in both directions, stale
# entries, --update-expect keeping reasons, --json, single-test mode.
set -u
bin=${1:?usage: cli_conformance.sh CONVGATE_BINARY SOURCE_DIR}
src=${2:?usage: cli_conformance.sh CONVGATE_BINARY SOURCE_DIR}
. "$(dirname "${BASH_SOURCE[0]}")/lib/harness.bash"
suite="$src/tests/data/io/conf_suite"
run() { cg conformance "$suite" --timeout 2 "$@"; }

run
check "exit 1 when a test fails (no manifest)" rc 1
check "pass line" has "PASS conf_suite/test_pass_add"
check "fail line with reason" has "FAIL conf_suite/test_fail_add: test_data_set_0 output 'c'"
check "missing data is a SKIP" has "SKIP conf_suite/test_nodata: no test_data_set_N"
check "summary line" bash -c "tail -n 1 '$tmp/out' | grep -qx '1 passed, 1 failed, 1 skipped'"

printf '# expected\nconf_suite/test_fail_add\tfail\twrong expected data\nconf_suite/test_nodata\tskip\tno data\nother/test_x\tfail\tanother suite\n' >"$tmp/ok.txt"
run --expect "$tmp/ok.txt"
check "exact manifest: exit 0" rc 0

grep -v test_fail_add "$tmp/ok.txt" >"$tmp/missing.txt"
run --expect "$tmp/missing.txt"
check "unlisted failure: exit 1" rc 1
check "unlisted failure is named" has "unexpected fail: conf_suite/test_fail_add"

printf 'conf_suite/test_pass_add\tfail\tused to fail\n' >>"$tmp/ok.txt"
run --expect "$tmp/ok.txt"
check "listed test passing: exit 1" rc 1
check "unexpected pass is named" has "unexpected pass: conf_suite/test_pass_add"

sed -e '/test_pass_add/d' -e 's/test_nodata\tskip/test_nodata\tfail/' "$tmp/ok.txt" >"$tmp/kind.txt"
run --expect "$tmp/kind.txt"
check "skip listed as fail is a deviation" has "unexpected skip: conf_suite/test_nodata (listed as fail)"

sed -e '/test_pass_add/d' "$tmp/ok.txt" >"$tmp/stale.txt"
printf 'conf_suite/test_gone\tfail\tremoved upstream\n' >>"$tmp/stale.txt"
run --expect "$tmp/stale.txt"
check "stale entry is a deviation" has "stale manifest entry: conf_suite/test_gone"
run --expect "$tmp/stale.txt" --filter add
check "no stale check under --filter" rc 0

printf 'conf_suite/test_fail_add\tbroken\n' >"$tmp/bad.txt"
run --expect "$tmp/bad.txt"
check "malformed manifest: exit 2" rc 2

printf '# header kept\nconf_suite/test_fail_add\tfail\tkeep this reason\nconf_suite/test_pass_add\tfail\told\nother/test_y\tskip\tother suite\n' >"$tmp/upd.txt"
run --update-expect "$tmp/upd.txt"
check "update keeps the header" grep -qx '# header kept' "$tmp/upd.txt"
check "update keeps reasons" grep -qP '^conf_suite/test_fail_add\tfail\tkeep this reason$' "$tmp/upd.txt"
check "update adds TODO for skips" grep -qP '^conf_suite/test_nodata\tskip\tTODO$' "$tmp/upd.txt"
check "update drops passing tests" bash -c "! grep -q test_pass_add '$tmp/upd.txt'"
check "update keeps other suites" grep -qP '^other/test_y\tskip\tother suite$' "$tmp/upd.txt"
run --expect "$tmp/upd.txt"
check "updated manifest matches" rc 0

run --json --filter add
check "json counts" bash -c "tr -d ' \n' <'$tmp/out' | grep -q '\"passed\":1,\"failed\":1,\"skipped\":0'"
check "json test entry" bash -c "tr -d ' \n' <'$tmp/out' | grep -q '\"name\":\"conf_suite/test_pass_add\",\"status\":\"pass\"'"

"$bin" conformance "$src/tests/data/io/conf_slow" --timeout 1 >"$tmp/out" 2>&1
check "timeout is a FAIL naming it" has "FAIL conf_slow/test_slow_loop: timed out after 1 s"

"$bin" conformance "$suite/test_pass_add" >"$tmp/out" 2>&1
check "single test dir: named by its suite" has "PASS conf_suite/test_pass_add"

"$bin" conformance "$tmp/nowhere" >"$tmp/out" 2>&1
check "missing directory: exit 2" test $? -eq 2

finish
