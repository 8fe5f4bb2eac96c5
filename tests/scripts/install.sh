#!/usr/bin/env bash
# `cmake --install` into a temporary prefix, then use only what was installed:
# the binary runs the main job on an example with the installed profiles
# (found beside the binary, not in the source tree), a C program builds
# against the installed headers with pkg-config and runs against the
# installed shared library, and the man pages are there.
set -u
bin=${1:?usage: install.sh CONVGATE_BINARY SOURCE_DIR}
src=${2:?usage: install.sh CONVGATE_BINARY SOURCE_DIR}
build=$(dirname "$bin")
. "$(dirname "${BASH_SOURCE[0]}")/lib/harness.bash"

prefix="$tmp/prefix"
if ! cmake --install "$build" --prefix "$prefix" >"$tmp/install.log" 2>&1; then
    cat "$tmp/install.log" >&2
    echo "FAILED: cmake --install" >&2
    exit 1
fi
ibin="$prefix/bin/convgate"
[ -x "$ibin" ] || fail "no installed binary at $ibin"

# Every RUNPATH/RPATH entry of the binaries and libraries, built and
# installed, is an absolute directory (or $ORIGIN-relative): an empty entry
# (CMake pads build RUNPATHs with a trailing ':') or a relative one makes the
# loader search the current directory, where a planted library would load.
if command -v readelf >/dev/null 2>&1; then
    for f in "$bin" "$build"/libconvgate.so "$ibin" "$prefix"/lib*/libconvgate.so \
             "$prefix"/lib/*/libconvgate.so; do
        [ -e "$f" ] || continue
        for rp in $(readelf -d "$f" | sed -n 's/.*(R\(UN\)\{0,1\}PATH).*\[\(.*\)\]$/\2/p' | tr ' ' '_'); do
            case ":$rp:" in *::*) fail "$f: RUNPATH '$rp' has an empty entry (the current directory)" ;; esac
            IFS=: read -r -a dirs <<<"$rp"
            for d in "${dirs[@]}"; do
                case "$d" in /*|'$ORIGIN'*) ;; *) fail "$f: RUNPATH entry '$d' is not absolute" ;; esac
            done
        done
    done
fi
for h in "$src"/include/convgate/*.h; do
    [ -f "$prefix/include/convgate/$(basename "$h")" ] || fail "header $(basename "$h") not installed"
done
nprof=$(ls "$src"/profiles/*.json | wc -l)
[ "$(ls "$prefix"/share/convgate/profiles/*.json 2>/dev/null | wc -l)" = "$nprof" ] ||
    fail "not all $nprof profiles installed"

# the installed binary, run from elsewhere with no hint, reads the installed profiles
cd "$tmp" || exit 1
env -u CONVGATE_PROFILES "$ibin" targets --json >"$tmp/targets.json" 2>"$tmp/err" ||
    fail "installed convgate targets: $(cat "$tmp/err")"
/usr/bin/python3 - "$tmp/targets.json" "$prefix" <<'PY' || fail "profiles not read from the installed prefix"
import json, os, sys
targets = json.load(open(sys.argv[1]))["result"]  # docs/json.md: the envelope
want = os.path.realpath(os.path.join(sys.argv[2], "share/convgate/profiles"))
paths = [t["profile"] for t in targets if "profile" in t]
assert paths, "no profiled target listed"
bad = [p for p in paths if not os.path.realpath(p).startswith(want + "/")]
assert not bad, f"profiles read from elsewhere: {bad}"
PY
# a profile target works end to end from the installed copy
env -u CONVGATE_PROFILES "$ibin" assign "$src/examples/tiny_cnn.onnx" --target litert-gpu \
    >"$tmp/out" 2>"$tmp/err" || fail "installed assign on litert-gpu: $(cat "$tmp/err")"
grep -q 'litert-gpu' "$tmp/out" || fail "assign output does not name litert-gpu"
# the main job on the bundled example
"$ibin" gate "$src/examples/tiny_cnn.onnx" --target xnnpack >"$tmp/out" 2>"$tmp/err"
rc=$?
if "$ibin" targets | grep -q '^xnnpack '; then
    [ $rc = 0 ] && grep -q 'VERDICT: PASS' "$tmp/out" || fail "installed gate on tiny_cnn (rc $rc)"
fi

# the library: pkg-config, headers, shared library
pc=$(find "$prefix" -name convgate.pc | head -1)
[ -n "$pc" ] || fail "no convgate.pc installed"
export PKG_CONFIG_PATH="$(dirname "${pc:-/nonexistent/x}")"
cat >"$tmp/use.c" <<'C'
#include <stdio.h>
#include "convgate/model.h"
#include "convgate/check.h"
#include "convgate/runtime.h"
#include "convgate/target.h"
#include "convgate/tensor.h"
int main(int argc, char **argv)
{
    cg_error err;
    cg_error_clear(&err);
    cg_model *m = NULL;
    if (argc < 2 || cg_model_load(argv[1], NULL, &m, &err) != CG_OK) {
        fprintf(stderr, "load: %s\n", err.msg);
        return 1;
    }
    cg_target_registry *reg = NULL;
    if (cg_target_registry_load(NULL, &reg, &err) != CG_OK) {
        fprintf(stderr, "targets: %s\n", err.msg);
        return 1;
    }
    printf("nodes %zu targets %zu dir %s\n", m->graph ? m->graph->node_count : 0,
           cg_target_registry_count(reg), cg_target_registry_profile_dir(reg));
    cg_target_registry_free(reg);
    cg_model_free(m);
    return 0;
}
C
# (a sanitizer build's library needs the sanitizer runtime in every program
# that links it: there only the pkg-config file and headers are checked)
sanitized=0
grep -q '^CG_SANITIZE:BOOL=ON' "$build/CMakeCache.txt" 2>/dev/null && sanitized=1
if ! flags=$(pkg-config --cflags --libs convgate 2>"$tmp/err"); then
    fail "pkg-config convgate: $(cat "$tmp/err")"
elif [ $sanitized = 1 ]; then
    cc -std=c11 -Wall -Wextra -Werror -fsyntax-only "$tmp/use.c" $(pkg-config --cflags convgate) 2>"$tmp/err" ||
        fail "the installed headers do not compile: $(cat "$tmp/err")"
elif ! cc -std=c11 -Wall -Wextra -Werror "$tmp/use.c" -o "$tmp/use" $flags 2>"$tmp/err"; then
    fail "a program against the installed headers and library does not build: $(cat "$tmp/err")"
else
    libdir=$(pkg-config --variable=libdir convgate)
    if ! LD_LIBRARY_PATH="$libdir" env -u CONVGATE_PROFILES "$tmp/use" "$src/examples/tiny_cnn.onnx" >"$tmp/out" 2>"$tmp/err"; then
        fail "the linked program: $(cat "$tmp/err")"
    else
        ldd_lib=$(LD_LIBRARY_PATH="$libdir" ldd "$tmp/use" | grep libconvgate)
        case "$ldd_lib" in *"$prefix"*) ;; *) fail "not linked to the installed libconvgate: $ldd_lib" ;; esac
        grep -q "dir $(realpath "$prefix")/share/convgate/profiles\|dir $prefix/" "$tmp/out" ||
            fail "the library did not find the installed profiles: $(cat "$tmp/out")"
    fi
fi

# the Python package, imported from the installed prefix only: it finds the
# installed library on its own and runs the main job (docs/python.md)
pydir="$prefix/lib/python3/dist-packages"
[ -f "$pydir/convgate/__init__.py" ] || fail "no Python package at $pydir/convgate"
if [ $sanitized = 1 ]; then
    echo "note: a sanitizer build's library cannot be loaded by python3; import not checked"
elif ! /usr/bin/python3 -c 'import numpy' 2>/dev/null; then
    fail "python3-numpy missing (scripts/setup.sh installs it)"
else
    (cd "$tmp" && env -u CONVGATE_LIB -u CONVGATE_PROFILES PYTHONPATH="$pydir" /usr/bin/python3 - \
        "$prefix" "$src/examples/tiny_cnn.onnx" <<'PY') || fail "the installed Python package"
import os, sys
import convgate
prefix = os.path.realpath(sys.argv[1])
assert os.path.realpath(convgate.__file__).startswith(prefix + "/"), convgate.__file__
lib = os.path.realpath(convgate.library_path())
assert lib.startswith(prefix + "/"), f"loaded {lib}, not the installed library"
with convgate.load(sys.argv[2]) as m:
    r = m.gate(target="litert-gpu")   # a profiled target: the installed profiles
    assert r["verdict"] in ("PASS", "FAIL"), r
    assert r["converts"]["state"] == "pass", r["converts"]
    out = m.run(seed=1).outputs["logits"]
    assert out.shape == (1, 10), out.shape
print("python: convgate from", os.path.dirname(convgate.__file__), "with", lib)
PY
fi

if command -v help2man >/dev/null; then
    for p in convgate convgate-gate convgate-assign convgate-compare; do
        [ -f "$prefix/share/man/man1/$p.1" ] || fail "man page $p.1 not installed"
    done
else
    echo "note: help2man absent, man pages not checked"
fi

[ "$fails" -ne 0 ] ||
    echo "install: binary, library, headers, profiles, pkg-config and man pages work from $prefix"
finish
