#!/bin/bash
# run_fuzzer.sh FUZZER PATTERN SECONDS: seeds a corpus with up to 400 files
# named PATTERN from the ONNX backend test data (plus the crafted bad inputs
# and the .tflite fixtures)
# and runs FUZZER for SECONDS. Any crash, leak or sanitizer report fails.
set -eu
fuzzer=$1
pattern=$2
seconds=$3
src=$(cd "$(dirname "$0")/../.." && pwd)
corpus=$(mktemp -d)
trap 'rm -rf "$corpus"' EXIT
i=0
for f in $(find /usr/share/libonnx-testdata/data "$src/tests/data/bad" "$src/tests/data/tflite" \
             -name "$pattern" -type f 2>/dev/null | sort | head -400); do
    cp "$f" "$corpus/seed$i"
    i=$((i + 1))
done
echo "seeded $i inputs; fuzzing for ${seconds}s"
"$fuzzer" -max_total_time="$seconds" -rss_limit_mb=2048 -max_len=65536 -timeout=10 \
    -print_final_stats=1 "$corpus" 2>&1 | tail -20
exit "${PIPESTATUS[0]}"
