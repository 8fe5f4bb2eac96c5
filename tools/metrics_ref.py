#!/usr/bin/python3
"""Reference values for convgate's parity metrics, computed with numpy.

Writes fixed comparison cases (a ref and a got array each) as .npy files to
OUT_DIR and prints JSON to stdout:
  {"cases": [{"name", "ref", "got", "atol", "rtol", "nan_equal", "expect": {...}}],
   "merges": [{"name", "parts": [case names], "expect": {...}}]}
"expect" holds the metrics of include/convgate/compare.h computed here from
the definitions in src/verify/compare.c's header comment, written
independently of the C code (vectorised numpy, no shared code). A merge's
expectation is computed on the concatenation of its parts, so it checks
that cg_metrics_merge equals one comparison over all samples. Infinities
and NaN are written as the strings "inf", "-inf", "nan" (JSON has neither).

Usage: /usr/bin/python3 tools/metrics_ref.py OUT_DIR
"""
import json
import os
import sys

import numpy as np

EDGES = np.array([1e-10, 1e-9, 1e-8, 1e-7, 1e-6, 1e-5, 1e-4, 1e-3, 1e-2, 1e-1, 1.0])


def ulp_keys(x, half):
    if half:
        u = x.astype(np.float16).view(np.int16).astype(np.int64)
        return np.where(u < 0, -(u & 0x7FFF), u)
    u = x.astype(np.float32).view(np.int32).astype(np.int64)
    return np.where(u < 0, -(u & 0x7FFFFFFF), u)


def metrics(ref_parts, got_parts, atol, rtol, nan_equal):
    """Metrics over the concatenation of the parts (one part: one tensor)."""
    ref0, got0 = ref_parts[0], got_parts[0]
    e = {}
    shape_mm = any(a.shape != b.shape for a, b in zip(ref_parts, got_parts))
    kind = lambda dt: "f" if dt.kind == "f" else "b" if dt.kind == "b" else "i"
    dtype_mm = any(kind(a.dtype) != kind(b.dtype) for a, b in zip(ref_parts, got_parts))
    same_dtype = all(a.dtype == b.dtype for a, b in zip(ref_parts, got_parts))
    e["shape_mismatch"] = shape_mm
    e["dtype_mismatch"] = dtype_mm
    if shape_mm:
        e["pass"] = False
        e["bit_identical"] = False
        e["count"] = 0
        return e
    e["bit_identical"] = same_dtype and all(
        a.tobytes() == b.tobytes() for a, b in zip(ref_parts, got_parts))
    sizes = [a.size for a in ref_parts]
    r = np.concatenate([a.astype(np.float64).ravel() for a in ref_parts])
    g = np.concatenate([b.astype(np.float64).ravel() for b in got_parts])
    with np.errstate(invalid="ignore", over="ignore"):
        rn, gn = np.isnan(r), np.isnan(g)
        fin = np.isfinite(r) & np.isfinite(g)
        nonfin_ok = np.where(rn | gn, rn & gn & nan_equal, r == g)
        bad_nonfin = ~fin & ~nonfin_ok
        d = np.where(fin, np.abs(g - r), 0.0)
        bad_fin = fin & ~(d <= atol + rtol * np.abs(r))
    e["count"] = int(r.size)
    e["mismatches"] = int(bad_fin.sum() + bad_nonfin.sum())
    e["pass"] = e["mismatches"] == 0 and not dtype_mm
    e["nan_ref"], e["nan_got"] = int(rn.sum()), int(gn.sum())
    e["inf_ref"], e["inf_got"] = int(np.isinf(r).sum()), int(np.isinf(g).sum())
    e["finite_count"] = int(fin.sum())
    if bad_nonfin.any():
        flat = int(np.flatnonzero(bad_nonfin)[0])
        e["max_abs"] = float("inf")
    elif fin.any():
        flat = int(np.argmax(np.where(fin, d, -1.0)))
        e["max_abs"] = float(d[flat])
    else:
        flat = -1
        e["max_abs"] = 0.0
    if flat >= 0:
        starts = np.cumsum([0] + sizes)
        sample = int(np.searchsorted(starts, flat, side="right") - 1)
        e["worst_sample"] = sample
        e["worst_index"] = flat - int(starts[sample])
        e["worst_ref"], e["worst_got"] = float(r[flat]), float(g[flat])
    else:
        e["worst_index"] = -1
    nz = fin & (r != 0)
    e["max_rel"] = float(np.max(d[nz] / np.abs(r[nz]))) if nz.any() else 0.0
    half = ref0.dtype == np.float16
    if fin.any():
        e["max_ulp"] = int(np.max(np.abs(ulp_keys(r[fin], half) - ulp_keys(g[fin], half))))
    else:
        e["max_ulp"] = 0
    hist = np.bincount(np.searchsorted(EDGES, d[fin], side="right"), minlength=12)
    hist[11] += int(bad_nonfin.sum())
    e["hist"] = [int(x) for x in hist]
    rf, gf, df = r[fin], g[fin], d[fin]
    n = rf.size
    e["mean_abs"] = float(df.mean()) if n else 0.0
    e["rmse"] = float(np.sqrt(np.mean(df * df))) if n else 0.0
    ssd, ssr, ssg = float(np.sum(df * df)), float(np.sum(rf * rf)), float(np.sum(gf * gf))
    if ssr > 0:
        e["nmse"] = ssd / ssr
    else:
        e["nmse"] = float("inf") if ssd > 0 else 0.0
    if ssr == 0 and ssg == 0:
        e["cosine"] = 1.0
    elif ssr == 0 or ssg == 0:
        e["cosine"] = 0.0
    else:
        e["cosine"] = float(np.dot(rf, gf) / (np.sqrt(ssr) * np.sqrt(ssg)))
    if n:
        cr, cg = rf - rf.mean(), gf - gf.mean()
        vr, vg = float(np.sum(cr * cr)), float(np.sum(cg * cg))
    else:
        vr = vg = 0.0
    if vr == 0 and vg == 0:
        e["pearson"] = 1.0 if ssd == 0 else 0.0
    elif vr == 0 or vg == 0:
        e["pearson"] = 0.0
    else:
        e["pearson"] = float(np.sum(cr * cg) / (np.sqrt(vr) * np.sqrt(vg)))
    return e


def cases():
    rs = np.random.RandomState(20240605)
    out = []

    def add(name, ref, got, atol=1e-5, rtol=1e-4, nan_equal=False):
        out.append((name, ref, got, atol, rtol, nan_equal))

    add("small", np.array([1, 2, 3, 4], np.float32), np.array([1, 2.0001, 2.9, 4], np.float32))
    base = (rs.randn(3, 17, 20) * 3 + 10).astype(np.float32)
    base.ravel()[::37] = 0
    noisy = (base + rs.randn(*base.shape).astype(np.float32) * 1e-3).astype(np.float32)
    add("random_f32", base, noisy, 1e-3, 1e-4)
    nanref = rs.uniform(-2, 2, 64).astype(np.float32)
    nangot = nanref + np.float32(1e-6)
    nanref[[3, 10, 20]] = np.nan
    nangot[[3, 11]] = np.nan
    nanref[30], nangot[30] = np.inf, np.inf
    nanref[31], nangot[31] = -np.inf, np.inf
    nanref[40], nangot[40] = 1.5, np.inf
    add("nan_inf", nanref, nangot)
    add("nan_equal", nanref, nangot, 1e-5, 1e-4, True)
    only_nan_r = np.array([np.nan, 1.0, 2.0], np.float32)
    add("nan_vs_nan_ok", only_nan_r, only_nan_r.copy(), 1e-5, 1e-4, True)
    h = (rs.randn(4, 8) * 100).astype(np.float16)
    hg = (h.astype(np.float32) * np.float32(1.001)).astype(np.float16)
    hg[0, 0] = -h[0, 0]
    add("fp16", h, hg, 2.5e-3, 1e-3)
    add("zeros_ref", np.zeros(10, np.float32), np.linspace(-1e-4, 1e-4, 10).astype(np.float32))
    add("zeros_both", np.zeros(5, np.float32), np.zeros(5, np.float32))
    signed = np.array([0.0, -0.0, 1e-45, -1e-45, 1.0], np.float32)
    add("signed_zero", signed, np.array([-0.0, 0.0, -1e-45, 1e-45, np.nextafter(np.float32(1), np.float32(2))], np.float32))
    ident = rs.randn(50).astype(np.float32)
    add("identical", ident, ident.copy())
    add("const_shift", np.full(8, 3.0, np.float32), np.full(8, 3.5, np.float32), 1.0, 0.0)
    add("int32", rs.randint(-100, 100, (5, 5)).astype(np.int32),
        rs.randint(-100, 100, (5, 5)).astype(np.int32), 0.0, 0.0)
    f64 = rs.randn(30)
    add("float64", f64, f64 * (1 + 1e-7), 1e-12, 1e-9)
    add("shape_mismatch", np.zeros((2, 3), np.float32), np.zeros((3, 2), np.float32))
    add("float16_vs_float32", h, h.astype(np.float32) * np.float32(1.0005), 2.5e-3, 1e-3)
    add("dtype_mismatch", rs.randint(-3, 3, 12).astype(np.int32),
        rs.randint(-3, 3, 12).astype(np.float32), 0.5, 0.0)
    a2 = (rs.randn(3, 40) * 2 - 5).astype(np.float32)
    add("sample_b", a2, (a2 * np.float32(1.01)).astype(np.float32), 1e-3, 1e-3)
    return out


def jsonable(v):
    if isinstance(v, float) and np.isnan(v):
        return "nan"
    if isinstance(v, float) and np.isinf(v):
        return "inf" if v > 0 else "-inf"
    return v


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    outdir = sys.argv[1]
    os.makedirs(outdir, exist_ok=True)
    doc = {"cases": [], "merges": []}
    arrays = {}
    for name, ref, got, atol, rtol, nan_equal in cases():
        rp, gp = os.path.join(outdir, name + "_ref.npy"), os.path.join(outdir, name + "_got.npy")
        np.save(rp, ref)
        np.save(gp, got)
        arrays[name] = (ref, got, atol, rtol, nan_equal)
        e = metrics([ref], [got], atol, rtol, nan_equal)
        doc["cases"].append({"name": name, "ref": rp, "got": gp, "atol": atol, "rtol": rtol,
                             "nan_equal": nan_equal,
                             "expect": {k: jsonable(v) for k, v in e.items()}})
    # merges: each part compared with the first part's tolerance
    for name, parts in (("merge_random_b", ["random_f32", "sample_b"]),
                        ("merge_nan_random", ["random_f32", "nan_inf", "sample_b"]),
                        ("merge_identical_small", ["identical", "small"])):
        atol, rtol, nan_equal = arrays[parts[0]][2:]
        e = metrics([arrays[p][0] for p in parts], [arrays[p][1] for p in parts], atol, rtol,
                    nan_equal)
        doc["merges"].append({"name": name, "parts": parts,
                              "expect": {k: jsonable(v) for k, v in e.items()}})
    json.dump(doc, sys.stdout, indent=1)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
