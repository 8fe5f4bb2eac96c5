#!/usr/bin/env bash
# Runs convgate on every crafted bad input in tests/data/bad/manifest.tsv
# (made by tools/craft_bad_models.py) and the manifests of its subfolders
# (tflite/manifest.tsv, made by tools/craft_bad_tflite.py) and asserts, per
# case:
#   - the exit status the manifest expects (2 could not load, 1 the checker
#     found problems, 0 for the valid controls);
#   - the output matches the case's regex once the file's own path is taken
#     out of it (so a path like nesting/deep.onnx cannot match "deep");
#   - no crash (status >= 128, or a sanitizer report), no hang (10 s), and
#     bounded memory (ulimit -v, 1 GiB; not under ASan/TSan/MSan, whose
#     shadow memory needs terabytes of address space).
#
# It works in a scratch copy of tests/data/bad, where it also makes what git
# cannot carry: the symlinks in links.tsv are made again (a checkout with
# core.symlinks=false turns them into plain files), hard links are made for
# the first time, and 'gen:' files (a sparse 2 GiB model) are generated.
#
#   bash tests/scripts/bad_inputs.sh BUILD/convgate SOURCE_DIR [FILTER-REGEX]
# Environment: CG_BAD_TIMEOUT (seconds, 10), CG_BAD_VMEM_KB (1048576).
# Exit: 0 all passed, 1 some failed, 2 usage, 77 nothing could run (the
# subcommands are still placeholders).
set -u

bin="${1:-}"
src="${2:-}"
filter="${3:-}"
if [ -z "$bin" ] || [ -z "$src" ]; then
    echo "usage: $0 CONVGATE_BINARY SOURCE_DIR [FILTER-REGEX]" >&2
    exit 2
fi
if [ ! -x "$bin" ]; then
    echo "bad_inputs: $bin is not an executable" >&2
    exit 2
fi
bin="$(cd "$(dirname "$bin")" && pwd -P)/$(basename "$bin")"
data="$src/tests/data/bad"
manifest="$data/manifest.tsv"
if [ ! -f "$manifest" ]; then
    echo "bad_inputs: $manifest missing (run tools/craft_bad_models.py)" >&2
    exit 2
fi
time_limit="${CG_BAD_TIMEOUT:-10}"
vmem_kb="${CG_BAD_VMEM_KB:-1048576}"

# Sanitizer runtimes reserve far more address space than any sane ulimit -v.
limit_memory=1
if grep -qaE '__(asan|tsan|msan)_init' "$bin"; then
    limit_memory=0
    echo "bad_inputs: sanitizer build: no ulimit -v (the sanitizer watches memory instead)"
fi

. "$(dirname "${BASH_SOURCE[0]}")/lib/harness.bash"
scratch_parent="$(cd "$tmp" && pwd -P)"
scratch="$scratch_parent/bad"
cp -a "$data" "$scratch"

# Links: git keeps the symlinks, but make them again in case the checkout
# did not (core.symlinks=false), and make the hard links git cannot store.
while IFS=$'\t' read -r kind link target; do
    case "$kind" in ''|'#'*) continue ;; esac
    rm -rf "${scratch:?}/$link"
    mkdir -p "$(dirname "$scratch/$link")"
    case "$kind" in
        symlink) ln -s "$target" "$scratch/$link" ;;
        hardlink) ln "$scratch/$target" "$scratch/$link" ;;
        *) echo "bad_inputs: links.tsv: unknown kind '$kind'" >&2; exit 2 ;;
    esac
done < "$data/links.tsv"

# gen: files, by name.
generate() {
    case "$1" in
        proto/huge_2gb.onnx)
            # A valid model's bytes, then zeros up to 2 GiB + 1 (sparse: no disk used).
            cp "$scratch/proto/huge_2gb.head" "$scratch/$1" &&
                truncate -s 2147483649 "$scratch/$1" ;;
        *) echo "bad_inputs: no generator for '$1'" >&2; return 1 ;;
    esac
}

passed=0
skipped=0
out="$scratch_parent/output"

case_failed() {
    fail "$1"
    echo "      $2"
    echo "      case: $3"
    if [ -s "$out" ]; then head -c 600 "$out" | sed 's/^/      | /'; echo; fi
}

while IFS=$'\t' read -r file item command expect regex description; do
    case "$file" in ''|'#'*|file) continue ;; esac
    label="[$item] $command $file"
    if [ -n "$filter" ] && ! grep -qE -- "$filter" <<< "$file"; then continue; fi
    if [ "$command" = skip ]; then
        skipped=$((skipped + 1))
        echo "skip  $label: $description"
        continue
    fi

    stdin=/dev/null
    case "$file" in
        stdin:*)
            path="$scratch/${file#stdin:}"
            stdin="$path"
            arg=-
            # Run beside the external file: a loader that resolves against the
            # working directory would find it, load, and so fail this case.
            cwd="$(dirname "$path")" ;;
        gen:*)
            path="$scratch/${file#gen:}"
            if ! generate "${file#gen:}"; then
                case_failed "$label" "could not generate the input" "$description"
                continue
            fi
            arg="$path"
            cwd="$scratch_parent" ;;
        *)
            path="$scratch/$file"
            arg="$path"
            cwd="$scratch_parent" ;;
    esac

    (
        cd "$cwd" || exit 99
        if [ "$limit_memory" = 1 ]; then ulimit -v "$vmem_kb" || exit 99; fi
        # One BLAS thread and few malloc arenas keep a healthy process far
        # below the limit on machines with many cores.
        OPENBLAS_NUM_THREADS=1 MALLOC_ARENA_MAX=2 \
            exec timeout -k 2 "$time_limit" "$bin" "$command" "$arg"
    ) < "$stdin" > "$out" 2>&1
    rc=$?

    # The file's own path must not satisfy the regex: take it out, longest
    # form first, then its folder (not a bare folder name like "version",
    # which would eat "ir_version" out of a message).
    msg="$(cat "$out")"
    rel="${path#"$scratch/"}"
    for p in "$path" "bad/$rel" "$rel" "$(dirname "$path")" "$(basename "$path")"; do
        [ "$p" = . ] && continue
        msg="${msg//"$p"/<file>}"
    done

    if grep -q "not built yet" "$out"; then
        skipped=$((skipped + 1))
        echo "skip  $label: 'convgate $command' is not built yet"
    elif [ "$rc" = 99 ]; then
        case_failed "$label" "harness could not set up the run (cd or ulimit)" "$description"
    elif [ "$rc" = 124 ] || [ "$rc" = 137 ]; then
        case_failed "$label" "hang: no exit within ${time_limit}s" "$description"
    elif [ "$rc" -ge 128 ]; then
        case_failed "$label" "crash: killed by signal $((rc - 128))" "$description"
    elif grep -qE "Sanitizer|runtime error:" "$out"; then
        case_failed "$label" "sanitizer report (exit $rc)" "$description"
    elif [ "$rc" != "$expect" ]; then
        case_failed "$label" "exit $rc, expected $expect" "$description"
    elif [ "$regex" != "-" ] && ! grep -qiE -- "$regex" <<< "$msg"; then
        case_failed "$label" "message does not match /$regex/" "$description"
    else
        passed=$((passed + 1))
        echo "ok    $label"
    fi
    rm -f "$scratch/proto/huge_2gb.onnx"
done < <(cat "$manifest" "$data"/*/manifest.tsv 2>/dev/null) # + tflite/manifest.tsv

echo "bad_inputs: $passed passed, $fails failed, $skipped skipped"
[ "$passed" -gt 0 ] || finish "no case could run"
finish
