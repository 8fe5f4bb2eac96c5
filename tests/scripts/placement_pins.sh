#!/usr/bin/env bash
# Where convgate places the bundled examples and every model of the zoo on
# nnapi, coreml-nn, coreml-mlprogram, litert-gpu, xnnpack, openvino and executorch-xnnpack: residency and
# partition count, pinned in tests/data/placement_pins.tsv (#9's "done
# when"); docs/placement-zoo.md shows the same rows with the reason for every
# node left on the CPU. Both are written by tools/placement_pins.py --update
# (see its header): a change to a profile or a lowering that moves a row
# fails here until the pins are regenerated on purpose.
# The zoo is $CG_ZOO (tools/fetch_zoo.sh); without it the examples are
# checked and the test is skipped (77).
# Usage: placement_pins.sh CONVGATE SOURCE_DIR
set -u
CG=${1:?convgate binary}
SRC=${2:?source dir}
PY=/usr/bin/python3
if [ -n "${CG_ZOO:-}" ] && [ -d "$CG_ZOO" ]; then
    exec "$PY" "$SRC/tools/placement_pins.py" "$CG" "$SRC" --zoo "$CG_ZOO"
fi
"$PY" "$SRC/tools/placement_pins.py" "$CG" "$SRC"
rc=$?
[ "$rc" = 77 ] && echo "skip: no zoo (CG_ZOO): the examples match their pins"
exit "$rc"
