#!/usr/bin/env bash
# The shared library exports exactly the functions the public headers
# declare with CG_API (include/convgate/api.h): nothing internal leaks out
# (hidden visibility), and nothing declared public is left hidden (a
# private header redeclaring it without CG_API would do that).
#
#   exports.sh CONVGATE_BINARY SOURCE_DIR
bin=${1:?usage: exports.sh CONVGATE_BINARY SOURCE_DIR}
src=${2:?usage: exports.sh CONVGATE_BINARY SOURCE_DIR}
. "$(dirname "${BASH_SOURCE[0]}")/lib/harness.bash"
lib=$(ls "$(dirname "$bin")"/libconvgate.so.* 2>/dev/null | head -1)
if [ -z "$lib" ]; then
    echo "skip: no libconvgate.so beside $bin"; exit 77
fi
if ! command -v nm >/dev/null; then
    echo "skip: no nm"; exit 77
fi
nm -D --defined-only "$lib" | awk '$2 == "T" {print $3}' | sort -u >"$tmp/exported"
grep -ho '^CG_API[^(]*\bcg_[a-z0-9_]*(' "$src"/include/convgate/*.h |
    grep -o 'cg_[a-z0-9_]*($' | tr -d '(' | sort -u >"$tmp/declared"
[ -s "$tmp/exported" ] || fail "nm lists no exported function in $lib"
[ -s "$tmp/declared" ] || fail "no CG_API function found in include/convgate"
if comm -23 "$tmp/exported" "$tmp/declared" | grep -q .; then
    fail "exported but not declared CG_API in include/convgate:"
    comm -23 "$tmp/exported" "$tmp/declared" | sed 's/^/  /' >&2
fi
if comm -13 "$tmp/exported" "$tmp/declared" | grep -q .; then
    fail "declared CG_API but not exported by $(basename "$lib"):"
    comm -13 "$tmp/exported" "$tmp/declared" | sed 's/^/  /' >&2
fi
echo "exports: $(wc -l <"$tmp/exported") exported, $(wc -l <"$tmp/declared") declared"
finish
