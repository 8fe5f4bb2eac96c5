#!/usr/bin/env bash
# The HTML report in a real browser (tests/browser/check_report.js drives
# Debian's headless Chromium over the DevTools pipe):
#  - gate tiny_cnn on xnnpack (PASS) and RMSNorm on litert-gpu --accumulate fp16 (FAIL at
#    gate 3, bisected): the page loads with no console error, its verdict
#    and node count are the JSON report's, partitions collapse and expand,
#    search finds a node; a screenshot of each is kept in
#    BUILD/tests/html_report/ for people to look at;
#  - gate tests/data/lower/torch_like on nnapi (ONNX Runtime's Level-1
#    graph: 10 nodes in the file, 5 partitioned, 6 removed): the page draws
#    the file's 10 nodes, and the removed ones, in the table, the figures
#    and the graph, are as many as the JSON report's removed_by_runtime;
#  - a model whose node name is an HTML/script injection: the file holds
#    no raw markup from it, and in the browser the name is text and nothing
#    it spells runs;
#  - the file is self-contained: no src/href but data:, no http(s) URL
#    other than the SVG namespace.
# Skips (77) without chromium or node. Usage: html_report.sh CONVGATE SOURCE_DIR
set -u
bin=${1:?convgate binary}
SRC=${2:?source dir}
CG=$bin
CHROMIUM=${CG_CHROMIUM:-$(command -v chromium || command -v chromium-browser || true)}
if [ -z "$CHROMIUM" ] || [ ! -x "$CHROMIUM" ]; then
    echo "SKIP: no chromium (scripts/setup.sh installs Debian's chromium package)"
    exit 77
fi
if ! command -v node >/dev/null 2>&1; then
    echo "SKIP: no node (scripts/setup.sh installs Debian's nodejs)"
    exit 77
fi
OUT=$(pwd)/html_report
rm -rf "$OUT"
mkdir -p "$OUT"
. "$(dirname "${BASH_SOURCE[0]}")/lib/harness.bash"
browser_check() { # browser_check NAME [--hostile TEXT]
    local name=$1
    shift
    node "$SRC/tests/browser/check_report.js" --chromium "$CHROMIUM" --html "$OUT/$name.html" \
        --json "$OUT/$name.json" --screenshot "$OUT/$name.png" "$@" || fail "$name: browser check"
}
static_checks() { # static_checks NAME
    local f=$OUT/$1.html
    [ -s "$f" ] || { fail "$1: no HTML written"; return; }
    if grep -Eo '(src|href)="[^"]*"' "$f" | grep -v '="data:' | grep -q .; then
        fail "$1: an external src/href: $(grep -Eo '(src|href)="[^"]*"' "$f" | grep -v '="data:' | head -3)"
    fi
    if grep -Eo 'https?://[^"'"'"' )]*' "$f" | grep -v '^http://www.w3.org/2000/svg$' | grep -q .; then
        fail "$1: a URL other than the SVG namespace: $(grep -Eo 'https?://[^"'"'"' )]*' "$f" | grep -v 'w3.org/2000/svg' | head -3)"
    fi
    [ "$(grep -o '<script' "$f" | wc -l)" = 2 ] || fail "$1: expected exactly two <script> elements"
    grep -q "Content-Security-Policy\" content=\"default-src 'none'" "$f" || fail "$1: no CSP"
}
gate() { # gate NAME EXPECTED_RC ARGS...
    local name=$1 want=$2
    shift 2
    "$CG" gate "$@" --json "$OUT/$name.json" --html "$OUT/$name.html" >"$OUT/$name.out" 2>&1
    local rc=$?
    [ "$rc" = "$want" ] || { fail "$name: exit $rc, expected $want"; cat "$OUT/$name.out"; }
}

gate tiny_cnn_xnnpack 0 "$SRC/examples/tiny_cnn.onnx" --target xnnpack \
    --inputs "$SRC/examples/tiny_cnn_inputs"
static_checks tiny_cnn_xnnpack
browser_check tiny_cnn_xnnpack

gate rmsnorm_litert_gpu 1 "$SRC/examples/rmsnorm_fp16.onnx" --target litert-gpu \
    --accumulate fp16 --inputs "$SRC/examples/rmsnorm_fp16_inputs"
static_checks rmsnorm_litert_gpu
grep -q '"first_divergent"' "$OUT/rmsnorm_litert_gpu.json" || fail "rmsnorm: no bisection in the JSON"
browser_check rmsnorm_litert_gpu

gate torch_like_nnapi 0 "$SRC/tests/data/lower/torch_like.onnx" --target nnapi --random 1
static_checks torch_like_nnapi
grep -q '"removed_by_runtime": 6' "$OUT/torch_like_nnapi.json" || fail "torch_like: removed_by_runtime is not 6"
grep -q '"nodes_in_file": 10' "$OUT/torch_like_nnapi.json" || fail "torch_like: nodes_in_file is not 10"
check torch_like_nnapi

# a node name that is markup and script, an output name with quotes and &
HOSTILE='</script><script>window.__pwned=true</script><img src=x onerror="window.__pwned=true"><b class="pwn">&amp;'
if /usr/bin/python3 - "$OUT/hostile.onnx" "$HOSTILE" <<'EOF'
import sys
import onnx
from onnx import TensorProto, helper
path, name = sys.argv[1], sys.argv[2]
x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 8])
y = helper.make_tensor_value_info("y\"'&<y>", TensorProto.FLOAT, [1, 8])
nodes = [helper.make_node("Relu", ["x"], ["r"], name=name),
         helper.make_node("Sigmoid", ["r"], ["y\"'&<y>"], name="<i>second</i>")]
graph = helper.make_graph(nodes, "<svg onload=alert(1)>", [x], [y])
model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
model.ir_version = 8
onnx.save(model, path)
EOF
then
    gate hostile 0 "$OUT/hostile.onnx" --target xnnpack --random 1
    static_checks hostile
    grep -q 'window.__pwned=true' "$OUT/hostile.html" || fail "hostile: the name is not in the page's data"
    if grep -q '<script>window.__pwned\|<img\|<b class\|<svg onload\|<i>second' "$OUT/hostile.html"; then
        fail "hostile: raw markup from the model in the HTML file"
    fi
    browser_check hostile --hostile "$HOSTILE"
else
    fail "hostile: could not build the model (python3-onnx)"
fi

echo "screenshots: $OUT/*.png"
finish
