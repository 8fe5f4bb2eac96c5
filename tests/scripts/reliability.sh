#!/usr/bin/env bash
# Regression tests for the reliability findings of issue #8: each case
# reproduces a crash, hang, data loss or wrong result of the CLI on a
# crafted input (tests/data/reliability, made by tools/craft_reliability.py,
# or generated here) and fails unless convgate now answers correctly.
#
#   bash tests/scripts/reliability.sh CONVGATE SOURCE_DIR [CASE-REGEX]
# Exit: 0 all passed, 1 some failed, 2 usage.
set -u
cg="${1:-}"
src="${2:-}"
filter="${3:-}"
if [ -z "$cg" ] || [ -z "$src" ] || [ ! -x "$cg" ]; then
    echo "usage: $0 CONVGATE SOURCE_DIR [CASE-REGEX]" >&2
    exit 2
fi
cg="$(cd "$(dirname "$cg")" && pwd -P)/$(basename "$cg")"
bin=$cg
data="$src/tests/data/reliability"
. "$(dirname "${BASH_SOURCE[0]}")/lib/harness.bash"
# Sanitizer runtimes reserve terabytes of address space: no ulimit -v there.
vmem_limit="ulimit -v 3000000"
if grep -qaE '__(asan|tsan|msan)_init' "$cg"; then vmem_limit=":"; fi
have_python=0
/usr/bin/python3 -c 'import onnx, numpy' 2>/dev/null && have_python=1
passed=0
out="$tmp/out"

# run_cg ARGS...: runs convgate with a hang guard; sets rc, output in $out.
run_cg() {
    timeout -k 2 "${CG_TIMEOUT:-60}" "$cg" "$@" > "$out" 2>&1
    rc=$?
}
# Fails the current case with a message and the output.
no() {
    echo "      $*"
    [ -s "$out" ] && head -c 800 "$out" | sed 's/^/      | /'
    return 1
}
crashed() { [ "$rc" -ge 124 ]; }
expect_rc() {
    if crashed; then no "crash or hang (exit $rc), expected exit $1"; return 1; fi
    [ "$rc" = "$1" ] || { no "exit $rc, expected $1"; return 1; }
}
out_matches() { grep -qiE -- "$1" "$out" || { no "output does not match /$1/"; return 1; }; }

case_() {
    local name=$1
    shift
    if [ -n "$filter" ] && ! grep -qE -- "$filter" <<< "$name"; then return; fi
    if "$@"; then
        passed=$((passed + 1))
        echo "ok    $name"
    else
        fail "$name"
    fi
}

# --- crashes and data loss ---------------------------------------------------

# A graph input whose name is absent crashed `run` (NULL strcmp).
t_run_unnamed_input() {
    run_cg run "$data/unnamed_input.onnx" --random
    expect_rc 2 && out_matches "input 1 has no name"
}

# ConvTranspose over an empty spatial axis: SIGFPE on an empty last axis,
# and the output shape ONNX Runtime 1.22 gives (s*(in-1) + kernel, also for
# in = 0); an output axis of 0 or less is refused, as ORT does.
t_convtranspose_empty_axis() {
    run_cg run "$data/convt_empty_h.onnx" --random
    expect_rc 0 && out_matches "float32 \[1,1,1,4\]" || return 1
    run_cg run "$data/convt_empty_w.onnx" --random
    expect_rc 0 && out_matches "float32 \[1,1,4,1\]" || return 1
    run_cg run "$data/convt_empty_out.onnx" --random
    expect_rc 1 && out_matches "output extent 0 on spatial axis 0"
}

# Saving a model onto itself (SIGBUS, model left at 0 bytes), external data
# written over the weights the source still maps (source truncated), and
# external data named like the output (exit 0, unloadable model).
t_save_over_source() {
    local d="$tmp/save"
    mkdir -p "$d"
    run_cg save "$src/examples/tiny_cnn.onnx" -o "$d/m.onnx" --external-data w.bin --min-bytes 0
    expect_rc 0 || return 1
    cp "$d/w.bin" "$d/w.ref"
    run_cg save "$d/m.onnx" -o "$d/m2.onnx" --external-data w.bin --min-bytes 0
    expect_rc 0 || return 1
    run_cg check "$d/m.onnx"
    expect_rc 0 || { no "the source model no longer loads"; return 1; }
    cmp -s "$d/w.bin" "$d/w.ref" || { no "w.bin changed"; return 1; }
    run_cg save "$d/m.onnx" -o "$d/m.onnx" --external-data w.bin --min-bytes 0
    expect_rc 0 || return 1
    run_cg check "$d/m.onnx"
    expect_rc 0 || { no "a model saved over itself no longer loads"; return 1; }
    run_cg save "$d/m.onnx" -o "$d/m.onnx"
    expect_rc 0 || return 1
    run_cg run "$d/m.onnx" --random --dim batch=1
    expect_rc 0 || { no "a model saved inline over itself does not run"; return 1; }
    run_cg save "$d/m.onnx" -o "$d/out.onnx" --external-data out.onnx
    expect_rc 2 && out_matches "output model's own name" || return 1
    [ ! -e "$d/out.onnx" ] || { no "out.onnx was written"; return 1; }
}

# A mapped external-data file truncated during a run: SIGBUS. Now the
# command names the file and exits 2.
t_mapped_file_shrinks() {
    local d="$tmp/shrink"
    mkdir -p "$d"
    cp "$data/shrink/model.onnx" "$d/"
    truncate -s 33554432 "$d/w.bin"
    ( sleep 1; truncate -s 0 "$d/w.bin" ) &
    local bg=$!
    run_cg run "$d/model.onnx"
    wait "$bg"
    expect_rc 2 && out_matches "w\.bin' shrank while"
}

# Writes are atomic: over a file size limit (ulimit -f, like a full disk)
# save -o, run -o, dump-ref --force and gate --html fail and leave the
# previous file.
t_atomic_writes() {
    local d="$tmp/atomic" m="$src/examples/tiny_cnn.onnx"
    mkdir -p "$d/o"
    cp "$m" "$d/good.onnx"
    ( ulimit -f 64; exec "$cg" save "$m" -o "$d/good.onnx" ) > "$out" 2>&1
    rc=$?
    expect_rc 2 && out_matches "failed|too large" || return 1
    cmp -s "$m" "$d/good.onnx" || { no "save replaced a good model with a truncated one"; return 1; }
    ls "$d" | grep -q '\.tmp\.' && { no "a temporary file was left behind"; return 1; }
    run_cg run "$m" --random --dim batch=1 -o "$d/o"
    expect_rc 0 || return 1
    local f
    f="$(ls "$d/o" | head -1)"
    cp "$d/o/$f" "$d/o.ref"
    ( ulimit -f 0; exec "$cg" run "$m" --random --dim batch=1 --seed 7 -o "$d/o" ) > "$out" 2>&1
    rc=$?
    expect_rc 2 || return 1
    cmp -s "$d/o.ref" "$d/o/$f" || { no "run -o truncated $f"; return 1; }
    run_cg dump-ref "$m" -o "$d/g" --random 1 --dim batch=1
    expect_rc 0 || return 1
    cp -r "$d/g" "$d/g.ref"
    ( ulimit -f 0; exec "$cg" dump-ref "$m" -o "$d/g" --random 2 --dim batch=1 --force ) \
        > "$out" 2>&1
    rc=$?
    [ "$rc" != 0 ] && ! crashed || { no "dump-ref over the size limit: exit $rc"; return 1; }
    # every file is the old one (the old manifest is dropped first, on purpose)
    (cd "$d/g.ref" && find . -type f ! -name manifest.json) | while read -r f; do
        [ ! -e "$d/g/$f" ] || cmp -s "$d/g.ref/$f" "$d/g/$f" || { echo "$f"; break; }
    done | grep -q . && { no "dump-ref truncated a golden file"; return 1; }
    # gate --html: the page was opened with fopen("w") up front (truncated
    # by a failed run) and removed after --help
    run_cg gate "$m" --target xnnpack --random 1 --dim batch=1 --html "$d/r.html"
    expect_rc 0 || return 1
    cp "$d/r.html" "$d/r.ref"
    ( ulimit -f 8; exec "$cg" gate "$m" --target xnnpack --random 1 --dim batch=1 --seed 3 \
        --html "$d/r.html" ) > "$out" 2>&1
    rc=$?
    [ "$rc" != 0 ] && ! crashed || { no "gate --html over the size limit: exit $rc"; return 1; }
    cmp -s "$d/r.ref" "$d/r.html" || { no "gate --html truncated the previous page"; return 1; }
    run_cg gate --html "$d/r.html" --help
    expect_rc 0 || return 1
    cmp -s "$d/r.ref" "$d/r.html" || { no "gate --html FILE --help removed FILE"; return 1; }
    find "$d" -name '*.tmp.*' | grep -q . && { no "a temporary file was left behind"; return 1; }
    return 0
}

# --- hangs ---------------------------------------------------------------------

# save measured each nested message again inside every enclosing one:
# 2^depth work (If nested 8 deep took over 2 minutes).
t_save_nesting_depth() {
    CG_TIMEOUT=20 run_cg save "$data/if_nest_30.onnx" -o "$tmp/nest.onnx"
    expect_rc 0 || return 1
    cmp -s "$data/if_nest_30.onnx" "$tmp/nest.onnx" || { no "bytes differ after a round trip"; return 1; }
}

# check and run were quadratic in attributes, metadata, opset imports and
# graph inputs (200 000 of them took over a minute).
t_many_items() {
    [ "$have_python" = 1 ] || { echo "      (python3-onnx missing: generated inputs skipped)"; return 0; }
    /usr/bin/python3 "$src/tools/craft_reliability.py" --big "$tmp/big" || { no "crafting failed"; return 1; }
    local f
    for f in attrs metadata opsets; do
        CG_TIMEOUT=20 run_cg check "$tmp/big/many_$f.onnx"
        crashed && { no "check of 200k $f: exit $rc (timeout 20 s)"; return 1; }
    done
    grep -q "attr-duplicate" "$out" && { no "false duplicates"; return 1; }
    CG_TIMEOUT=20 run_cg run "$tmp/big/many_inputs.onnx" --random
    expect_rc 0 || { no "run with 200k graph inputs"; return 1; }
}

# Pooling with a kernel far larger than the image (SAME padding) walked
# every padding tap for minutes; ONNX Runtime takes milliseconds. Work
# inside the image is bounded up front.
t_pool_huge_kernel() {
    CG_TIMEOUT=10 run_cg run "$data/pool_huge_kernel.onnx" --random
    expect_rc 0 && out_matches "float32 \[1,1,4,4\]" || return 1
    CG_TIMEOUT=10 run_cg run "$data/pool_huge_work.onnx" --random
    expect_rc 1 && out_matches "window taps"
}

# A FIFO anywhere convgate opens a file blocked forever.
t_fifo_inputs() {
    local d="$tmp/fifo" m="$src/examples/tiny_cnn.onnx"
    mkdir -p "$d/ext" "$d/gold"
    mkfifo "$d/model.onnx" "$d/x.npy" "$d/tol.json" "$d/gold/manifest.json" "$d/ext/w.bin"
    CG_TIMEOUT=10 run_cg check "$d/model.onnx"
    expect_rc 2 && out_matches "FIFO" || return 1
    CG_TIMEOUT=10 run_cg run "$m" -i "input=$d/x.npy"
    expect_rc 2 && out_matches "FIFO" || return 1
    CG_TIMEOUT=10 run_cg compare "$m" --target xnnpack --tol "$d/tol.json"
    crashed && { no "compare --tol FIFO"; return 1; }
    [ "$rc" = 2 ] || { no "compare --tol FIFO: exit $rc"; return 1; }
    CG_TIMEOUT=10 run_cg verify "$m" --golden "$d/gold"
    crashed && { no "verify with a FIFO manifest"; return 1; }
    [ "$rc" = 2 ] || { no "verify with a FIFO manifest: exit $rc"; return 1; }
    run_cg save "$m" -o "$d/ext/m.onnx" --external-data real.bin --min-bytes 0
    expect_rc 0 || return 1
    /usr/bin/python3 - "$d/ext/m.onnx" <<'PY' 2>/dev/null || return 0
import sys, onnx
m = onnx.load(sys.argv[1], load_external_data=False)
for t in m.graph.initializer:
    for e in t.external_data:
        if e.key == "location":
            e.value = "w.bin"
open(sys.argv[1], "wb").write(m.SerializeToString())
PY
    CG_TIMEOUT=10 run_cg check "$d/ext/m.onnx"
    expect_rc 2 && out_matches "FIFO|not a regular file"
}

# --- budgets -----------------------------------------------------------------

# No time budget: a Loop without a trip count ran forever in every command
# that executes the model. --time-limit stops it with an error naming it.
t_time_limit() {
    local m="$data/loop_forever.onnx" c
    CG_TIMEOUT=20 run_cg run "$m" --time-limit 2
    expect_rc 1 && out_matches "node 'forever' \(Loop\).*time limit of 2 s" || return 1
    for c in gate compare bisect profile assign; do
        CG_TIMEOUT=30 run_cg "$c" "$m" --target xnnpack --time-limit 2
        crashed && { no "$c --time-limit 2: exit $rc"; return 1; }
        out_matches "time limit of 2 s" || { no "$c did not stop at the time limit"; return 1; }
    done
    CG_TIMEOUT=30 run_cg convert "$m" --target xnnpack -o "$tmp/tlc" --random 1 --time-limit 2
    crashed && { no "convert --time-limit 2: exit $rc"; return 1; }
    out_matches "time limit of 2 s" || { no "convert did not stop at the time limit"; return 1; }
    CG_TIMEOUT=20 run_cg dump-ref "$m" -o "$tmp/tl" --random 1 --time-limit 2
    [ "$rc" != 0 ] && ! crashed && out_matches "time limit of 2 s" || return 1
    run_cg dump-ref "$src/examples/tiny_cnn.onnx" -o "$tmp/tl2" --random 1 --dim batch=1
    expect_rc 0 || return 1
    run_cg verify "$src/examples/tiny_cnn.onnx" --golden "$tmp/tl2" --time-limit 100
    expect_rc 0 || { no "verify does not take --time-limit"; return 1; }
}

# No total memory budget: eight 512 MiB outputs, each under the
# per-allocation cap, were all allocated. --max-memory refuses the one that
# does not fit, before allocating it.
t_max_memory() {
    # 512 MiB filled before the refusal: ~20 s under ASan on a busy machine
    CG_TIMEOUT=120 run_cg run "$data/alloc_8x512m.onnx" --max-memory 1G
    expect_rc 1 && out_matches "node 'big1' \(ConstantOfShape\).*memory budget" || return 1
    run_cg run "$data/alloc_8x512m.onnx" --max-memory lots
    expect_rc 2 && out_matches "--max-memory expects BYTES"
}

# Densifying a sparse initializer ignored --max-alloc (4 GiB from 1 value).
t_sparse_densify_limit() {
    run_cg run "$data/sparse_4g.onnx" --max-alloc 1M
    expect_rc 2 && out_matches "sparse tensor 'S'.*exceed the limit"
}

# A small .npz of many short strings took gigabytes: every string's heap
# block counts against the limit now.
t_npz_strings() {
    [ "$have_python" = 1 ] || { echo "      (python3 numpy missing: skipped)"; return 0; }
    /usr/bin/python3 -c "import numpy as np; np.savez_compressed('$tmp/s.npz', x=np.full((20 << 20,), 'a', dtype='<U1'))" ||
        { no "numpy failed"; return 1; }
    ( $vmem_limit; exec timeout 30 "$cg" run "$data/strings_identity.onnx" -i "x=$tmp/s.npz" \
        --max-alloc 256M ) > "$out" 2>&1
    rc=$?
    expect_rc 2 && out_matches "exceed the limit"
}

# --- wrong results -----------------------------------------------------------

# Declared output types were never checked: gate PASSed when float32[4] is
# declared and int64[4] or float32[8] is produced.
t_declared_outputs() {
    run_cg run "$data/out_dtype.onnx" --random
    expect_rc 1 && out_matches "declares element type float32, the graph produced int64" ||
        return 1
    run_cg run "$data/out_shape.onnx" --random
    expect_rc 0 && out_matches "warning: graph output 'y': the model declares shape \[4\], the graph produced \[8\]" ||
        return 1
    local f
    for f in out_dtype out_shape; do
        run_cg gate "$data/$f.onnx" --target xnnpack
        crashed && { no "gate $f: exit $rc"; return 1; }
        [ "$rc" != 0 ] || { no "gate passed $f"; return 1; }
        grep -q "VERDICT: PASS" "$out" && { no "gate said PASS on $f"; return 1; }
    done
    return 0
}

# Strings were cut at an embedded NUL: Equal("a\0b", "a\0c") was true.
t_strings_with_nul() {
    run_cg run "$data/equal_strings.onnx" -i "a=$data/equal_a.pb" -i "b=$data/equal_b.pb"
    expect_rc 0 && out_matches "output 'eq': bool \[1\]  min 0  max 0"
}

# Model strings with terminal escape codes were printed raw: a model could
# clear the screen or fake a verdict line.
t_escaped_names() {
    local c
    for c in inspect check "run --random" "gate --target xnnpack" "assign --target xnnpack"; do
        # shellcheck disable=SC2086
        run_cg $c "$data/escape_names.onnx"
        crashed && { no "$c: exit $rc"; return 1; }
        if LC_ALL=C grep -q $'\x1b' "$out"; then no "$c printed an escape byte"; return 1; fi
        if grep -q "^VERDICT: PASS  all gates" "$out"; then no "$c printed the fake line"; return 1; fi
    done
    return 0
}

# convert and rewrite (newer than the printer) printed model strings raw:
# the producer in the artifact's README.md, and `verify DIR` printed an
# altered manifest's commit, which could clear the screen and fake a verdict.
t_escaped_artifact() {
    local m="$data/escape_names.onnx" d="$tmp/artifact"
    run_cg rewrite "$m" --target xnnpack --what-if
    crashed && { no "rewrite: exit $rc"; return 1; }
    if LC_ALL=C grep -q $'\x1b' "$out"; then no "rewrite printed an escape byte"; return 1; fi
    run_cg convert "$m" --target xnnpack -o "$d" --random 1
    expect_rc 0 || return 1
    if LC_ALL=C grep -q $'\x1b' "$out" "$d/README.md"; then
        no "convert wrote an escape byte"; return 1
    fi
    [ "$have_python" = 1 ] || { echo "      (python3 missing: verify DIR skipped)"; return 0; }
    /usr/bin/python3 - "$d/manifest.json" <<'PYEOF' || { no "editing the manifest failed"; return 1; }
import json, sys
d = json.load(open(sys.argv[1]))
d["convgate"]["commit"] = "\x1b[2J\nVERDICT: PASS  all gates"
json.dump(d, open(sys.argv[1], "w"))
PYEOF
    run_cg verify "$d"
    crashed && { no "verify DIR: exit $rc"; return 1; }
    if LC_ALL=C grep -q $'\x1b' "$out"; then no "verify DIR printed an escape byte"; return 1; fi
    if grep -q "^VERDICT: PASS  all gates" "$out"; then no "verify DIR printed the fake line"; return 1; fi
    return 0
}

# Golden sets followed a symlinked set folder and a symlinked manifest.
t_golden_symlinks() {
    local m="$src/examples/tiny_cnn.onnx" g="$tmp/gold"
    run_cg dump-ref "$m" -o "$g" --random 1 --dim batch=1
    expect_rc 0 || return 1
    local set
    set="$(cd "$g" && ls -d */ | head -1)"
    set="${set%/}"
    cp -r "$g" "$tmp/gold.real"
    rm -rf "${g:?}/$set"
    ln -s "$tmp/gold.real/$set" "$g/$set"
    run_cg verify "$m" --golden "$g"
    expect_rc 2 && out_matches "symbolic link" || return 1
    rm -f "$g/$set"
    cp -r "$tmp/gold.real/$set" "$g/$set"
    rm -f "$g/manifest.json"
    ln -s "$tmp/gold.real/manifest.json" "$g/manifest.json"
    run_cg verify "$m" --golden "$g"
    expect_rc 2 && out_matches "symbolic link"
}

# --- sanitizer-only -----------------------------------------------------------

# Tensors with no elements but huge other dims overflowed int64 in stride
# and extent products (Transpose, Tile, Concat, Flatten, Split, Compress,
# Expand, GatherND, reductions, DepthToSpace, the output allocator), and a
# random op's float seed past int64 was converted anyway: undefined
# behaviour that only a UBSan build reports (script.reliability runs in
# the sanitizer build too).
t_sanitizer_inputs() {
    local f
    for f in "$data"/ubsan/*.onnx; do
        UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 run_cg run "$f" --random
        crashed && { no "$(basename "$f"): exit $rc"; return 1; }
        if grep -qE "runtime error|Sanitizer" "$out"; then no "$(basename "$f"): sanitizer report"; return 1; fi
        [ "$rc" -le 2 ] || { no "$(basename "$f"): exit $rc"; return 1; }
    done
    return 0
}

case_ run_unnamed_input t_run_unnamed_input
case_ convtranspose_empty_axis t_convtranspose_empty_axis
case_ save_over_source t_save_over_source
case_ mapped_file_shrinks t_mapped_file_shrinks
case_ atomic_writes t_atomic_writes
case_ save_nesting_depth t_save_nesting_depth
case_ many_items t_many_items
case_ pool_huge_kernel t_pool_huge_kernel
case_ fifo_inputs t_fifo_inputs
case_ time_limit t_time_limit
case_ max_memory t_max_memory
case_ sparse_densify_limit t_sparse_densify_limit
case_ npz_strings t_npz_strings
case_ declared_outputs t_declared_outputs
case_ strings_with_nul t_strings_with_nul
case_ escaped_names t_escaped_names
case_ escaped_artifact t_escaped_artifact
case_ golden_symlinks t_golden_symlinks
case_ sanitizer_inputs t_sanitizer_inputs

echo "reliability: $passed passed, $fails failed"
finish
