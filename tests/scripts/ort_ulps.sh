#!/usr/bin/env bash
# Float kernels that round like ONNX Runtime 1.22's CPU EP, in ulps.
#
# A quantizer turns one ulp upstream into a whole step (docs/gate3.md,
# "Dynamically quantized models against ONNX Runtime"), so the float kernels
# that feed quantizers compute ORT's formula in ORT's operation order. This
# test builds single-op graphs (tools/make_ulp_cases.py: Sigmoid, Tanh, Erf,
# Exp, Softmax, LogSoftmax, ReduceMean, ReduceSum, LayerNormalization, cubic
# Resize, on several shapes whose sizes are not multiples of the vector
# widths, on three seeds), runs them on onnxruntime-node 1.22.0 and on `convgate run`
# at every SIMD level this CPU has (portable, avx2, avx512: they must agree
# bit for bit), and asserts the largest ulp distance per op against the
# table below, the level reached (0: bit-identical), and that the
# DynamicQuantizeLinear reading each asserted case quantizes it exactly as
# ORT does (values and scale). MLAS picks its kernels
# by CPU: Softmax's exp sums in 16 lanes on AVX-512F (what we copy) and in
# 8 on AVX2-only CPUs, whose Exp kernel also differs, so on a CPU without
# AVX-512F Exp, Softmax and LogSoftmax are measured but not asserted.
# Needs node, bench/node_modules and numpy; without them the test FAILS,
# naming what is missing, unless CG_ALLOW_SKIP_PARITY=1 (then exit 77).
set -u
bin=${1:?usage: ort_ulps.sh CONVGATE_BINARY SOURCE_DIR}
src=${2:?usage: ort_ulps.sh CONVGATE_BINARY SOURCE_DIR}
. "$(dirname "${BASH_SOURCE[0]}")/lib/harness.bash"

# op -> the most ulps allowed (what the kernels reach; before ORT's formulas
# were copied: Sigmoid 841071437 (0 where MLAS clamps at -18, 1e-11 in
# libm), Tanh 3, Erf 2, Exp 1, Softmax 3, LogSoftmax 4, ReduceMean 283,
# LayerNormalization 1527, cubic Resize 10181). An op not listed would be
# measured and printed, not asserted.
limits="Sigmoid=0 Tanh=0 Erf=0 Exp=0 Softmax=0 LogSoftmax=0 ReduceMean=0 ReduceSum=0 LayerNormalization=0 Resize=0"
if ! grep -qw avx512f /proc/cpuinfo 2>/dev/null; then
    # ORT's other exp kernels there (not measured): printed, not asserted
    limits=${limits/Exp=0 /}
    limits=${limits/LogSoftmax=0 /}
    limits=${limits/Softmax=0 /}
fi

command -v node >/dev/null 2>&1 || unavailable "missing node"
[ -f "$src/bench/node_modules/onnxruntime-node/package.json" ] ||
    unavailable "missing $src/bench/node_modules/onnxruntime-node"
/usr/bin/python3 -c 'import numpy, onnx' >/dev/null 2>&1 || unavailable "missing numpy or onnx"

work=$tmp
levels="portable"
grep -qw avx2 /proc/cpuinfo 2>/dev/null && levels="$levels avx2"
grep -qw avx512f /proc/cpuinfo 2>/dev/null && levels="$levels avx512"
for seed in 1 2 3; do
    d="$work/s$seed"
    mkdir -p "$d"
    if ! /usr/bin/python3 "$src/tools/make_ulp_cases.py" --seed "$seed" "$d" >"$d/make.log" 2>&1; then
        cat "$d/make.log" >&2
        echo "ort_ulps: FAILED: making the cases (seed $seed)" >&2
        exit 1
    fi
    ins=()
    cgins=()
    for f in "$d"/in/*.npy; do
        n=$(basename "$f" .npy)
        ins+=(--input "$n=$f")
        cgins+=(-i "$n=$f")
    done
    if ! node "$src/bench/ort_session.js" --run --runs 1 "${ins[@]}" \
            --save-outputs "$d/ort" "$d/cases.onnx" >"$d/ort.log" 2>&1; then
        cat "$d/ort.log" >&2
        unavailable "onnxruntime could not run the cases (seed $seed)"
    fi
    for lv in $levels; do
        if ! "$bin" run "$d/cases.onnx" --simd "$lv" "${cgins[@]}" -o "$d/cg_$lv" \
                >"$d/cg.log" 2>&1; then
            cat "$d/cg.log" >&2
            echo "ort_ulps: FAILED: convgate run --simd $lv (seed $seed)" >&2
            exit 1
        fi
    done
done
/usr/bin/python3 - "$work" "$limits" $levels <<'PY' || fail "ulps or quantized outputs beyond the table (above)"
import glob, json, os, sys
import numpy as np
work, limits, levels = sys.argv[1], dict(kv.split("=") for kv in sys.argv[2].split()), sys.argv[3:]

def key(a):
    i = a.astype(np.float32).view(np.int32).astype(np.int64)
    return np.where(i < 0, -2**31 - i, i)

worst, ok = {}, True
for d in sorted(glob.glob(work + "/s*")):
    ops = json.load(open(d + "/ops.json"))
    for name, op in sorted(ops.items()):
        a = np.load("%s/ort/%s.npy" % (d, name))
        checked = op in limits
        first = None
        for lv in levels:
            b = np.load("%s/cg_%s/%s.npy" % (d, lv, name))
            if a.shape != b.shape:
                print("%s %s --simd %s: shape %s, ORT %s" % (os.path.basename(d), name, lv, b.shape, a.shape))
                ok = False
                continue
            if first is None:
                first = b
            elif checked and first.tobytes() != b.tobytes():
                print("%s %s: --simd %s differs from --simd %s in %d of %d values"
                      % (os.path.basename(d), name, lv, levels[0], int((first != b).sum()), b.size))
                ok = False
            if checked and (np.isnan(a).any() or np.isnan(b).any()):
                same = bool((np.isnan(a) == np.isnan(b)).all())
                if not same:
                    print("%s %s --simd %s: NaN where ORT has none or the reverse" % (os.path.basename(d), name, lv))
                    ok = False
            fin = ~(np.isnan(a) | np.isnan(b))
            u = int(np.abs(key(a[fin]) - key(b[fin])).max()) if fin.any() else 0
            w = worst.setdefault(op, [0, 0, 0])
            w[0] = max(w[0], u)
            w[1] += int((a[fin] != b[fin]).sum())
            w[2] += a.size
# each case's DynamicQuantizeLinear: bit-identical where its op is asserted
qbad = qn = 0
for d in sorted(glob.glob(work + "/s*")):
    ops = json.load(open(d + "/ops.json"))
    for q in json.load(open(d + "/quant.json")):
        src = q[:q.rindex("_")]
        if ops[src] not in limits:
            continue
        a = np.load("%s/ort/%s.npy" % (d, q))
        for lv in levels:
            qn += 1
            b = np.load("%s/cg_%s/%s.npy" % (d, lv, q))
            if a.shape != b.shape or a.dtype != b.dtype or a.tobytes() != b.tobytes():
                qbad += 1
                print("%s %s --simd %s: quantized output differs from ORT's" % (os.path.basename(d), q, lv))
ok = ok and qbad == 0
print("DynamicQuantizeLinear after each asserted op: %d of %d tensors differ from ORT" % (qbad, qn))
print("%-20s %9s %14s %7s" % ("op", "max ulps", "values differ", "limit"))
for op in sorted(worst):
    u, n, tot = worst[op]
    lim = limits.get(op)
    bad = lim is not None and u > int(lim)
    ok = ok and not bad
    print("%-20s %9d %7d/%-7d %6s%s" % (op, u, n, tot, "-" if lim is None else lim,
                                        "  BEYOND" if bad else ""))
print("ort_ulps (%s): %s" % (", ".join(levels), "PASS" if ok else "FAIL"))
sys.exit(0 if ok else 1)
PY
finish
