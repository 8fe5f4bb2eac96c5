#!/usr/bin/env bash
# Installs, from Debian 12's packages, everything convgate's build and tests
# need, Node.js + npm and the pinned npm packages under bench/ included (the
# parity test runs onnxruntime-node on the npm-hosted models), and the real
# LiteRT used as the oracle of the .tflite fixtures: LiteRT.js pinned under
# tools/litert/ and Debian's chromium for its WebGPU path
# (python3-flatbuffers writes the fixtures; chromium also opens the HTML
# reports in tests/scripts/html_report.sh); with --bench,
# also what the benchmarks and the torchvision zoo need (torch/torchvision
# for the exports, GNU time for peak RSS), too heavy for every CI run.
#
# Idempotent: when every package is already installed (dpkg-query), apt is
# not touched at all, so a rerun takes well under a second.  Works as root,
# or as a user with sudo.
#
#   scripts/setup.sh            # build + tests (parity test included)
#   scripts/setup.sh --bench    # ... + benchmarks and torchvision zoo tooling
set -euo pipefail

usage() { echo "usage: $0 [--bench]" >&2; exit 2; }

want_bench=0
for arg in "$@"; do
    case "$arg" in
        --bench) want_bench=1 ;;
        -h|--help) usage ;;
        *) echo "setup.sh: unknown argument '$arg'" >&2; usage ;;
    esac
done

# libclang-rt-14-dev: the ASan/UBSan and libFuzzer runtimes of scripts/test.sh
# (only a Recommends of clang-14, which --no-install-recommends skips)
packages=(
    build-essential cmake ninja-build clang-14 clang libclang-rt-14-dev pkg-config
    libopenblas-dev libopenblas0-serial libxnnpack-dev libpthreadpool-dev libjansson-dev
    zlib1g-dev libssl-dev help2man
    python3-onnx python3-numpy libonnx-testdata
    python3-flatbuffers chromium
)
# A Node.js from elsewhere (e.g. NodeSource's, which bundles npm and
# conflicts with Debian's npm package) is used as it is: only install
# Debian's when the commands are missing.
if ! command -v node >/dev/null 2>&1; then packages+=(nodejs); fi
if ! command -v npm >/dev/null 2>&1; then packages+=(npm); fi
if [ "$want_bench" = 1 ]; then
    packages+=(python3-torch python3-torchvision time)
fi

# True when package $1 is fully installed.
is_installed() {
    [ "$(dpkg-query -W -f='${Status}' "$1" 2>/dev/null || true)" = "install ok installed" ]
}

missing=()
for p in "${packages[@]}"; do
    is_installed "$p" || missing+=("$p")
done

if [ "$(id -u)" = 0 ]; then
    as_root=()
elif command -v sudo >/dev/null 2>&1; then
    as_root=(sudo)
else
    as_root=(false)
fi

if [ "${#missing[@]}" -gt 0 ]; then
    if [ "${as_root[0]:-}" = false ]; then
        echo "setup.sh: need root or sudo to install: ${missing[*]}" >&2
        exit 1
    fi
    echo "setup.sh: installing ${missing[*]}"
    export DEBIAN_FRONTEND=noninteractive
    "${as_root[@]}" apt-get update
    "${as_root[@]}" apt-get install -y --no-install-recommends "${missing[@]}"
else
    echo "setup.sh: all ${#packages[@]} packages already installed"
fi

# onnxruntime-node, pinned by bench/package-lock.json, for the parity test
# and the benches.  Its postinstall would fetch CUDA provider libraries from
# NuGet on linux/x64 (not a registry we can reach, and we use the bundled
# CPU provider only), hence ONNXRUNTIME_NODE_INSTALL=skip.
bench_dir="$(cd "$(dirname "$0")/.." && pwd)/bench"
if [ -f "$bench_dir/node_modules/onnxruntime-node/package.json" ] &&
   node -e "process.exit(require('$bench_dir/node_modules/onnxruntime-node/package.json').version === '1.22.0' ? 0 : 1)"; then
    echo "setup.sh: bench/node_modules already has onnxruntime-node 1.22.0"
else
    echo "setup.sh: npm ci in bench/"
    (cd "$bench_dir" && ONNXRUNTIME_NODE_INSTALL=skip npm ci --no-audit --no-fund)
fi

# LiteRT.js (@litertjs/core 2.5.3 and its wasm-utils), pinned by
# tools/litert/package-lock.json: the oracle of tests/scripts/litert_oracle.sh.
# It has no install scripts and downloads nothing at run time.
litert_dir="$(cd "$(dirname "$0")/.." && pwd)/tools/litert"
if [ -f "$litert_dir/node_modules/@litertjs/core/package.json" ] &&
   node -e "process.exit(require('$litert_dir/node_modules/@litertjs/core/package.json').version === '2.5.3' ? 0 : 1)"; then
    echo "setup.sh: tools/litert/node_modules already has @litertjs/core 2.5.3"
else
    echo "setup.sh: npm ci in tools/litert/"
    (cd "$litert_dir" && npm ci --ignore-scripts --no-audit --no-fund)
fi
