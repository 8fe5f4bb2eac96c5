#!/usr/bin/env bash
# Writes man pages generated from convgate's --help into DIR: convgate.1 for
# the tool and convgate-COMMAND.1 for each command (`convgate COMMAND --help`),
# with help2man, so the pages never drift from the help text.
#   tools/gen_man.sh PATH/TO/convgate DIR
set -euo pipefail
bin="$1"
out="$2"
mkdir -p "$out"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
help2man --no-info --no-discard-stderr --name "gate a converted model before it ships" \
    --output "$out/convgate.1" "$bin"
# the commands are the indented first words of the Commands: section
commands=$("$bin" --help | awk '/^Commands:/{on=1; next} on && /^  [a-z]/{print $1} on && /^$/{exit}')
for c in $commands; do
    # help2man runs PROGRAM --help / --version: a wrapper per command
    w="$tmp/convgate-$c"
    printf '#!/bin/sh\ncase "$1" in --version) "%s" --version | sed "s/^convgate/convgate-%s/"; exit ;; esac\nexec "%s" %s "$@"\n' \
        "$bin" "$c" "$bin" "$c" > "$w"
    chmod +x "$w"
    summary=$("$bin" --help | awk -v c="$c" '$1 == c {$1 = ""; sub(/^ +/, ""); print; exit}')
    help2man --no-info --no-discard-stderr --name "$summary" --output "$out/convgate-$c.1" "$w"
done
