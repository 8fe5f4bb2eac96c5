#!/usr/bin/env bash
# The Python package (python/convgate) on the build's libconvgate:
# python/tests/test_convgate.py, run by Debian's python3 with numpy (no
# PyPI). Its reports must be the CLI's --json results, arrays go in and
# out, and errors raise with the CLI's messages.
# Usage: python_binding.sh CONVGATE SOURCE_DIR
set -u
CG=${1:?convgate binary}
SRC=${2:?source dir}
BUILD=$(cd "$(dirname "$CG")" && pwd)
if ! /usr/bin/python3 -c 'import numpy' 2>/dev/null; then
    echo "SKIP: no python3-numpy (scripts/setup.sh installs it)"
    exit 77
fi
if grep -q '^CG_SANITIZE:BOOL=ON' "$BUILD/CMakeCache.txt" 2>/dev/null; then
    # python3 would have to preload the sanitizer runtime before the library
    echo "SKIP: a sanitizer build's libconvgate cannot be loaded into python3"
    exit 77
fi
export CONVGATE_LIB="$BUILD/libconvgate.so" CONVGATE_BIN="$CG" CONVGATE_SOURCE="$SRC"
export PYTHONPATH="$SRC/python" PYTHONDONTWRITEBYTECODE=1
exec /usr/bin/python3 -m unittest discover -s "$SRC/python/tests" -v
