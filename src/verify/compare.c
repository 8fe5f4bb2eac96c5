/*
 * Parity metrics between a reference tensor and a target's tensor.
 *
 * Definitions (tools/metrics_ref.py computes the same numbers with numpy,
 * independently, and tests/unit/test_compare.c holds the two to 1e-9):
 *
 *  - A "finite pair" is an element where both values are finite. The error
 *    statistics (mean_abs, rmse, nmse, cosine, pearson, max_rel, max_ulp)
 *    are taken over finite pairs only, so one NaN cannot turn every number
 *    into NaN; NaN and Inf are reported by the nan_/inf_ counters instead.
 *  - An element passes when |got - ref| <= atol + rtol*|ref| (finite pair);
 *    otherwise NaN passes only against NaN with nan_equal, an infinity only
 *    against the same infinity. A non-finite pair that fails makes max_abs
 *    +inf and becomes the worst element (the first such one), and lands in
 *    the top histogram bin, so the report points at it.
 *  - max_rel follows numpy's assert_allclose report: |d|/|ref| over finite
 *    pairs whose ref is not zero (an error against an exact zero shows in
 *    max_abs; dividing by zero would make every ReLU output "infinitely" off).
 *  - nmse = sum d^2 / sum ref^2; when ref is all zeros: 0 if d is all zeros,
 *    else +inf.
 *  - cosine = sum(ref*got) / (sqrt(sum ref^2) * sqrt(sum got^2)); 1 when both
 *    are all zeros, 0 when exactly one is.
 *  - pearson from centered moments; when both sides are constant: 1 if they
 *    are equal, else 0; when exactly one is constant: 0. An empty set of
 *    finite pairs gives cosine = pearson = 1 and zero errors.
 *  - dtype_mismatch: the two tensors hold different kinds of numbers
 *    (float, integer, bool). Floats of different widths (float16 against
 *    float32 or float64) are compared as values; they are never
 *    bit-identical.
 *  - max_ulp: both values rounded to float32 (to float16 when ref is a
 *    float16 tensor) and mapped to a monotonic integer line (sign-magnitude
 *    to two's complement), so +0 and -0 are 0 apart and the distance across
 *    zero counts the representable values in between.
 *  - hist[b]: |d| of finite pairs by decade: bin 0 below 1e-10, bin b in
 *    [1e-(11-b), 1e-(10-b)), bin 11 at or above 1 (plus failing non-finite
 *    pairs).
 */
#include <float.h>
#include <math.h>
#include <string.h>

#include "convgate/compare.h"
#include "convgate/tensor.h"
#include "verify_internal.h"

static const double hist_edges[CG_HIST_BINS - 1] = {1e-10, 1e-9, 1e-8, 1e-7, 1e-6, 1e-5,
                                                    1e-4,  1e-3, 1e-2, 1e-1, 1.0};

void cg_metrics_init(cg_metrics *m)
{
    memset(m, 0, sizeof *m);
    m->worst_index = -1;
    m->worst_sample = -1;
    m->bit_identical = true;
    m->pass = true;
    m->cosine = 1.0;
    m->pearson = 1.0;
}

void cg_tolerance_default(cg_tolerance *tol, bool reduced_precision)
{
    memset(tol, 0, sizeof *tol);
    tol->atol = reduced_precision ? 2.5e-3 : 1e-5;
    tol->rtol = reduced_precision ? 1e-3 : 1e-4;
    tol->justification = reduced_precision
                             ? "default for reduced-precision paths: ORT OpTester's fp16 "
                               "tolerance (atol 2.5e-3, rtol 1e-3; reliability.md section 3)"
                             : "default for fp32 paths: ORT OpTester's float tolerance (atol "
                               "1e-5, rtol 1e-4)";
}

double cg_hist_bin_low(int bin)
{
    if (bin <= 0)
        return 0.0;
    return bin >= CG_HIST_BINS ? INFINITY : hist_edges[bin - 1];
}

/* Decade bin of a non-negative |diff| (NaN never reaches here). */
static int hist_bin(double d)
{
    int b = 0;
    while (b < CG_HIST_BINS - 1 && d >= hist_edges[b])
        b++;
    return b;
}

/* Position of v on the integer line of float32 (or float16) values. */
static int64_t ulp_key(double v, bool half)
{
    if (half) {
        float f = v > 65504.0 * 2 ? INFINITY : v < -65504.0 * 2 ? -INFINITY : (float)v;
        uint16_t h = cg_f32_to_fp16(f);
        return (h & 0x8000u) ? -(int64_t)(h & 0x7fffu) : (int64_t)h;
    }
    /* converting an out-of-range double to float is undefined: clamp first */
    float f = v > FLT_MAX ? INFINITY : v < -FLT_MAX ? -INFINITY : (float)v;
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return (u & 0x80000000u) ? -(int64_t)(u & 0x7fffffffu) : (int64_t)u;
}

static bool dtype_comparable(cg_dtype dt)
{
    return cg_dtype_is_float(dt) || cg_dtype_is_int(dt) || dt == CG_DTYPE_BOOL;
}

/* 0 float, 1 integer, 2 bool */
static int dtype_kind(cg_dtype dt)
{
    return cg_dtype_is_float(dt) ? 0 : cg_dtype_is_int(dt) ? 1 : 2;
}

/* Derived metrics from the running sums and moments (single or merged). */
static void finalize(cg_metrics *m)
{
    double n = (double)m->finite_count;
    m->mean_abs = m->finite_count ? m->sum_abs / n : 0.0;
    m->rmse = m->finite_count ? sqrt(m->sum_sq_diff / n) : 0.0;
    if (m->sum_sq_ref > 0)
        m->nmse = m->sum_sq_diff / m->sum_sq_ref;
    else
        m->nmse = m->sum_sq_diff > 0 ? INFINITY : 0.0;
    if (m->sum_ref2 == 0 && m->sum_got2 == 0)
        m->cosine = 1.0;
    else if (m->sum_ref2 == 0 || m->sum_got2 == 0)
        m->cosine = 0.0;
    else
        m->cosine = m->sum_refgot / (sqrt(m->sum_ref2) * sqrt(m->sum_got2));
    if (m->m2_ref == 0 && m->m2_got == 0)
        m->pearson = m->sum_sq_diff == 0 ? 1.0 : 0.0;
    else if (m->m2_ref == 0 || m->m2_got == 0)
        m->pearson = 0.0;
    else
        m->pearson = m->co_refgot / (sqrt(m->m2_ref) * sqrt(m->m2_got));
    m->pass = m->mismatches == 0 && !m->shape_mismatch && !m->dtype_mismatch;
}

/* Tensors of different shapes (or element counts) fail with no value
 * compared: true after marking out so. */
static bool shapes_differ(const cg_tensor *ref, const cg_tensor *got, cg_metrics *out)
{
    if (cg_shape_equal(ref->rank, ref->dims, got->rank, got->dims) && ref->numel == got->numel)
        return false;
    out->shape_mismatch = true;
    out->bit_identical = false;
    out->pass = false;
    return true;
}

cg_status cg_compare_tensors(const cg_tensor *ref, const cg_tensor *got, const cg_tolerance *tol,
                             cg_metrics *out, cg_error *err)
{
    cg_tolerance deflt;
    cg_metrics_init(out);
    if (!ref || !got || !out)
        return cg_error_set(err, CG_USAGE, "compare: NULL tensor");
    if (!tol) {
        cg_tolerance_default(&deflt, false);
        tol = &deflt;
    }
    if (ref->dtype == CG_DTYPE_STRING && got->dtype == CG_DTYPE_STRING) {
        /* strings match exactly, every byte of their length (a NUL too) */
        out->count = (uint64_t)(ref->numel > 0 ? ref->numel : 0);
        if (shapes_differ(ref, got, out))
            return CG_OK;
        for (int64_t i = 0; i < ref->numel; i++) {
            size_t rl, gl;
            const char *r = cg_tensor_string(ref, i, &rl), *g = cg_tensor_string(got, i, &gl);
            if (cg_string_compare(r, rl, g, gl) != 0 && out->mismatches++ == 0)
                out->worst_index = i;
        }
        out->bit_identical = out->mismatches == 0;
        out->pass = out->mismatches == 0;
        return CG_OK;
    }
    if (!dtype_comparable(ref->dtype) || !dtype_comparable(got->dtype))
        return cg_error_set(err, CG_UNSUPPORTED,
                            "compare: cannot compare %s against %s (numeric real tensors only)",
                            cg_dtype_name(ref->dtype), cg_dtype_name(got->dtype));
    /* float16 against float32 (an fp16 conversion against its source, a
     * target against the float64 reference) is compared as values; only a
     * change of kind (float, integer, bool) is a mismatch */
    out->dtype_mismatch = dtype_kind(ref->dtype) != dtype_kind(got->dtype);
    if (shapes_differ(ref, got, out))
        return CG_OK;
    if (ref->numel < 0 || (ref->numel > 0 && (!ref->data || !got->data)))
        return cg_error_set(err, CG_INVALID, "compare: tensor without data (%lld elements)",
                            (long long)ref->numel);
    if (ref->dtype != got->dtype) {
        out->bit_identical = false;
    } else if (ref->numel > 0) {
        size_t bytes = cg_tensor_bytes(ref);
        out->bit_identical = memcmp(ref->data, got->data, bytes) == 0;
    }

    bool half = ref->dtype == CG_DTYPE_FLOAT16;
    bool nonfinite_worst = false;
    /* the figures in a local copy, written back once: through `out` every
     * sum was stored and reloaded on each element (the block reads below
     * might alias it), a chain of store-to-load forwarding per sum */
    cg_metrics m = *out;
    int64_t n = ref->numel;
    m.count = (uint64_t)n;
    /* a block of both sides at a time, element by element in order */
    double rb[CG_VERIFY_BLOCK], gb[CG_VERIFY_BLOCK];
    for (int64_t i = 0; i < n; i++) {
        int64_t k = cg_verify_pair_at(ref, got, i, n, rb, gb);
        double r = rb[k], g = gb[k];
        bool rn = isnan(r), gn = isnan(g);
        m.nan_ref += rn;
        m.nan_got += gn;
        m.inf_ref += isinf(r) != 0;
        m.inf_got += isinf(g) != 0;
        if (!isfinite(r) || !isfinite(g)) {
            bool ok = (rn || gn) ? (rn && gn && tol->nan_equal) : r == g;
            if (!ok) {
                m.mismatches++;
                m.hist[CG_HIST_BINS - 1]++;
                if (!nonfinite_worst) {
                    nonfinite_worst = true;
                    m.max_abs = INFINITY;
                    m.worst_index = i;
                    m.worst_ref = r;
                    m.worst_got = g;
                }
            }
            continue;
        }
        double d = fabs(g - r);
        if (!(d <= tol->atol + tol->rtol * fabs(r)))
            m.mismatches++;
        if (!nonfinite_worst && (m.worst_index < 0 || d > m.max_abs)) {
            m.max_abs = d;
            m.worst_index = i;
            m.worst_ref = r;
            m.worst_got = g;
        }
        if (r != 0) {
            double rel = d / fabs(r);
            m.max_rel = rel > m.max_rel ? rel : m.max_rel;
        }
        int64_t ka = ulp_key(r, half), kb = ulp_key(g, half);
        uint64_t ulp = ka > kb ? (uint64_t)(ka - kb) : (uint64_t)(kb - ka);
        m.max_ulp = ulp > m.max_ulp ? ulp : m.max_ulp;
        m.hist[hist_bin(d)]++;
        m.finite_count++;
        m.sum_abs += d;
        m.sum_sq_diff += d * d;
        m.sum_ref += r;
        m.sum_got += g;
        m.sum_ref2 += r * r;
        m.sum_got2 += g * g;
        m.sum_refgot += r * g;
    }
    m.sum_sq_ref = m.sum_ref2;
    if (m.finite_count) {
        /* second pass: centered moments, so Pearson does not cancel when
         * the mean is large against the spread */
        double fc = (double)m.finite_count;
        m.mean_ref = m.sum_ref / fc;
        m.mean_got = m.sum_got / fc;
        for (int64_t i = 0; i < n; i++) {
            int64_t k = cg_verify_pair_at(ref, got, i, n, rb, gb);
            double r = rb[k], g = gb[k];
            if (!isfinite(r) || !isfinite(g))
                continue;
            double dr = r - m.mean_ref, dg = g - m.mean_got;
            m.m2_ref += dr * dr;
            m.m2_got += dg * dg;
            m.co_refgot += dr * dg;
        }
    }
    *out = m;
    out->worst_sample = 0;
    finalize(out);
    return CG_OK;
}

void cg_metrics_merge(cg_metrics *a, const cg_metrics *b)
{
    if (b->worst_index >= 0 && (a->worst_index < 0 || b->max_abs > a->max_abs)) {
        a->worst_index = b->worst_index;
        a->worst_ref = b->worst_ref;
        a->worst_got = b->worst_got;
        a->worst_sample = b->worst_sample;
    }
    a->max_abs = b->max_abs > a->max_abs ? b->max_abs : a->max_abs;
    a->max_rel = b->max_rel > a->max_rel ? b->max_rel : a->max_rel;
    a->max_ulp = b->max_ulp > a->max_ulp ? b->max_ulp : a->max_ulp;
    a->count += b->count;
    a->mismatches += b->mismatches;
    a->nan_ref += b->nan_ref;
    a->nan_got += b->nan_got;
    a->inf_ref += b->inf_ref;
    a->inf_got += b->inf_got;
    for (int i = 0; i < CG_HIST_BINS; i++)
        a->hist[i] += b->hist[i];
    a->shape_mismatch = a->shape_mismatch || b->shape_mismatch;
    a->dtype_mismatch = a->dtype_mismatch || b->dtype_mismatch;
    a->bit_identical = a->bit_identical && b->bit_identical;
    a->sum_abs += b->sum_abs;
    a->sum_sq_diff += b->sum_sq_diff;
    a->sum_sq_ref += b->sum_sq_ref;
    a->sum_ref += b->sum_ref;
    a->sum_got += b->sum_got;
    a->sum_ref2 += b->sum_ref2;
    a->sum_got2 += b->sum_got2;
    a->sum_refgot += b->sum_refgot;
    /* Chan, Golub and LeVeque's pairwise update of means and co-moments */
    if (b->finite_count) {
        if (!a->finite_count) {
            a->mean_ref = b->mean_ref;
            a->mean_got = b->mean_got;
            a->m2_ref = b->m2_ref;
            a->m2_got = b->m2_got;
            a->co_refgot = b->co_refgot;
        } else {
            double na = (double)a->finite_count, nb = (double)b->finite_count, nt = na + nb;
            double dr = b->mean_ref - a->mean_ref, dg = b->mean_got - a->mean_got;
            double w = na * nb / nt;
            a->m2_ref += b->m2_ref + dr * dr * w;
            a->m2_got += b->m2_got + dg * dg * w;
            a->co_refgot += b->co_refgot + dr * dg * w;
            a->mean_ref += dr * nb / nt;
            a->mean_got += dg * nb / nt;
        }
        a->finite_count += b->finite_count;
    }
    bool pass = a->pass && b->pass;
    finalize(a);
    a->pass = a->pass && pass;
}
