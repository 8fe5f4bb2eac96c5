/*
 * Reductions over a set of axes: ReduceSum/Mean/Max/Min/Prod/L1/L2/LogSum/
 * LogSumExp/SumSquare, MeanVarianceNormalization, and ArgMax/ArgMin over one
 * axis.
 *
 * A reduce plan splits the input into groups (one per output element) of
 * rn elements each; a group's elements sit at base(g) + roff[j]. Values are
 * gathered into a scratch row and reduced there: floating types in double
 * and rounded once on store, integer types exactly in 64 bits (wrapping like
 * the element type would), so int64 sums never pass through double.
 * float32 ReduceSum and ReduceMean instead add in float in ONNX Runtime's
 * order where we know it (ort_reduce_f32).
 *
 * Under CG_KPREC_FP16_ACC16 (a node of a partition emulating an fp16
 * target) float reductions run the way fp16 hardware does instead: in
 * order, with every partial sum, square and product rounded to fp16, so a
 * sum of squares past 65504 becomes inf and a long sum drifts as the
 * accumulator's spacing grows.
 */
#include <math.h>
#include <string.h>

#include "run/ops/kernels.h"
#include "run/ops/tensor_util.h"

typedef struct reduce_plan {
    int kr;                     /* kept dims (with their input strides) */
    int64_t kdims[CG_MAX_RANK];
    int64_t kstr[CG_MAX_RANK];
    int64_t groups;             /* product of kept dims */
    int64_t rn;                 /* elements per group */
    int64_t *roff;              /* offsets inside a group; NULL: 0..rn-1 */
} reduce_plan;

/* a * b for dims (non-negative), saturating: an empty input's other dims
 * may multiply past int64, and the 0 among them decides the result */
static int64_t sat_mul(int64_t a, int64_t b)
{
    if (a == 0 || b == 0)
        return 0;
    return a > INT64_MAX / b ? INT64_MAX : a * b;
}

static cg_status plan_init(cg_kernel_ctx *k, const cg_tensor *x, const bool *reduced,
                           reduce_plan *p)
{
    int64_t str[CG_MAX_RANK], rdims[CG_MAX_RANK], rstr[CG_MAX_RANK];
    int rr = 0, first_reduced = x->rank;
    cg_tens_strides(x->rank, x->dims, str);
    p->kr = 0;
    p->groups = 1;
    p->rn = 1;
    p->roff = NULL;
    for (int d = 0; d < x->rank; d++) {
        if (reduced[d]) {
            if (first_reduced == x->rank)
                first_reduced = d;
            rdims[rr] = x->dims[d];
            rstr[rr++] = str[d];
            p->rn = sat_mul(p->rn, x->dims[d]);
        } else {
            p->kdims[p->kr] = x->dims[d];
            p->kstr[p->kr++] = str[d];
            p->groups = sat_mul(p->groups, x->dims[d]);
        }
    }
    if (p->groups == 0) /* an empty output: nothing is reduced or addressed */
        return CG_OK;
    /* Contiguous groups: every kept dim after the first reduced one is 1. */
    bool contiguous = true;
    for (int d = first_reduced; d < x->rank; d++)
        if (!reduced[d] && x->dims[d] != 1)
            contiguous = false;
    if (contiguous || p->rn == 0)
        return CG_OK;
    p->roff = cg_kernel_scratch(k, (size_t)p->rn * sizeof *p->roff);
    if (!p->roff)
        return cg_kernel_fail(k, CG_NOMEM, "out of memory for %lld reduction offsets",
                              (long long)p->rn);
    int64_t idx[CG_MAX_RANK] = {0}, off = 0;
    for (int64_t j = 0; j < p->rn; j++) {
        p->roff[j] = off;
        for (int d = rr - 1; d >= 0; d--) {
            off += rstr[d];
            if (++idx[d] < rdims[d])
                break;
            off -= rstr[d] * rdims[d];
            idx[d] = 0;
        }
    }
    return CG_OK;
}

static int64_t plan_base(const reduce_plan *p, int64_t g)
{
    int64_t base = 0;
    for (int d = p->kr - 1; d >= 0; d--) {
        base += (g % p->kdims[d]) * p->kstr[d];
        g /= p->kdims[d];
    }
    return base;
}

/* Gathers group g into buf as doubles. */
static void gather_f64(const cg_tensor *x, const reduce_plan *p, int64_t base, double *buf)
{
    if (x->dtype == CG_DTYPE_FLOAT) {
        const float *d = (const float *)x->data + base;
        for (int64_t j = 0; j < p->rn; j++)
            buf[j] = d[p->roff ? p->roff[j] : j];
        return;
    }
    for (int64_t j = 0; j < p->rn; j++)
        buf[j] = cg_tensor_get_f64(x, base + (p->roff ? p->roff[j] : j));
}

/* Gathers group g into buf as int64 (uint64 bit patterns kept). */
static void gather_i64(const cg_tensor *x, const reduce_plan *p, int64_t base, int64_t *buf)
{
    for (int64_t j = 0; j < p->rn; j++)
        buf[j] = cg_tensor_get_i64(x, base + (p->roff ? p->roff[j] : j));
}

/* --- the Reduce* ops ---------------------------------------------------------- */

typedef enum reduce_kind {
    R_SUM, R_MEAN, R_MAX, R_MIN, R_PROD, R_L1, R_L2, R_LOGSUM, R_LOGSUMEXP, R_SUMSQ
} reduce_kind;

static double reduce_f64(reduce_kind kind, const double *v, int64_t n)
{
    double acc = 0.0;
    switch (kind) {
    case R_MAX:
    case R_MIN: {
        acc = kind == R_MAX ? -INFINITY : INFINITY;
        for (int64_t i = 0; i < n; i++) {
            if (isnan(v[i]))
                return v[i];
            if (kind == R_MAX ? v[i] > acc : v[i] < acc)
                acc = v[i];
        }
        return acc;
    }
    case R_PROD:
        acc = 1.0;
        for (int64_t i = 0; i < n; i++)
            acc *= v[i];
        return acc;
    case R_LOGSUMEXP: {
        double m = -INFINITY;
        for (int64_t i = 0; i < n; i++)
            if (v[i] > m || isnan(v[i]))
                m = v[i];
        if (n == 0 || isinf(m) || isnan(m))
            return n == 0 ? -INFINITY : m == -INFINITY ? -INFINITY : m;
        for (int64_t i = 0; i < n; i++)
            acc += exp(v[i] - m);
        return m + log(acc);
    }
    default: break;
    }
    for (int64_t i = 0; i < n; i++) {
        double x = v[i];
        switch (kind) {
        case R_L1: acc += fabs(x); break;
        case R_L2:
        case R_SUMSQ: acc += x * x; break;
        default: acc += x; break;
        }
    }
    switch (kind) {
    case R_MEAN: return acc / (double)n; /* NaN for an empty set, as 0/0 */
    case R_L2: return sqrt(acc);
    case R_LOGSUM: return log(acc);
    default: return acc;
    }
}

static double r16_fp16(double x)
{
    return cg_fp16_round(x);
}

/* reduce_f64 with an fp16 accumulator (CG_KPREC_FP16_ACC16), or with
 * r16 = cg_fp16_round_significand, one that has fp16's significand and an
 * unbounded exponent (CG_KPREC_FP16_SUM11). Max and Min are exact in any
 * precision. */
static double reduce_f16acc(reduce_kind kind, const double *v, int64_t n, double (*r16)(double))
{
    double acc = 0.0;
    switch (kind) {
    case R_MAX:
    case R_MIN: return r16(reduce_f64(kind, v, n));
    case R_PROD:
        acc = 1.0;
        for (int64_t i = 0; i < n; i++)
            acc = r16(acc * r16(v[i]));
        return acc;
    case R_LOGSUMEXP: {
        double m = -INFINITY;
        for (int64_t i = 0; i < n; i++)
            if (v[i] > m || isnan(v[i]))
                m = v[i];
        if (n == 0 || isinf(m) || isnan(m))
            return n == 0 ? -INFINITY : m == -INFINITY ? -INFINITY : m;
        m = r16(m);
        for (int64_t i = 0; i < n; i++)
            acc = r16(acc + r16(exp(r16(v[i]) - m)));
        return r16(m + r16(log(acc)));
    }
    default: break;
    }
    for (int64_t i = 0; i < n; i++) {
        double x = r16(v[i]);
        switch (kind) {
        case R_L1: acc = r16(acc + fabs(x)); break;
        case R_L2:
        case R_SUMSQ: acc = r16(acc + r16(x * x)); break;
        default: acc = r16(acc + x); break;
        }
    }
    switch (kind) {
    case R_MEAN: return r16(acc / (double)n);
    case R_L2: return r16(sqrt(acc));
    case R_LOGSUM: return r16(log(acc));
    default: return acc;
    }
}

/* Smallest / largest value of an integer dtype (identity of Max / Min). */
static int64_t int_limit(cg_dtype dt, bool largest)
{
    switch (dt) {
    case CG_DTYPE_INT8: return largest ? INT8_MAX : INT8_MIN;
    case CG_DTYPE_UINT8: return largest ? UINT8_MAX : 0;
    case CG_DTYPE_INT16: return largest ? INT16_MAX : INT16_MIN;
    case CG_DTYPE_UINT16: return largest ? UINT16_MAX : 0;
    case CG_DTYPE_INT32: return largest ? INT32_MAX : INT32_MIN;
    case CG_DTYPE_UINT32: return largest ? (int64_t)UINT32_MAX : 0;
    case CG_DTYPE_UINT64: return largest ? -1 /* all ones */ : 0;
    case CG_DTYPE_BOOL: return largest ? 1 : 0;
    default: return largest ? INT64_MAX : INT64_MIN;
    }
}

/* Exact integer reduction; the L2 and log kinds go through double. */
static void reduce_int(reduce_kind kind, cg_dtype dt, const int64_t *v, int64_t n,
                       cg_tensor *out, int64_t o)
{
    bool uns = dt == CG_DTYPE_UINT64;
    uint64_t acc = 0;
    switch (kind) {
    case R_MAX:
    case R_MIN: {
        bool mx = kind == R_MAX;
        int64_t best = int_limit(dt, !mx);
        for (int64_t i = 0; i < n; i++) {
            bool better = uns ? (mx ? (uint64_t)v[i] > (uint64_t)best
                                    : (uint64_t)v[i] < (uint64_t)best)
                              : (mx ? v[i] > best : v[i] < best);
            if (better)
                best = v[i];
        }
        cg_tensor_set_i64(out, o, best);
        return;
    }
    case R_PROD:
        acc = 1;
        for (int64_t i = 0; i < n; i++)
            acc *= (uint64_t)v[i];
        break;
    case R_SUM:
    case R_MEAN:
        for (int64_t i = 0; i < n; i++)
            acc += (uint64_t)v[i];
        if (kind == R_MEAN && n > 0)
            acc = uns ? acc / (uint64_t)n : (uint64_t)((int64_t)acc / n);
        break;
    case R_L1:
        for (int64_t i = 0; i < n; i++)
            acc += uns || v[i] >= 0 ? (uint64_t)v[i] : (uint64_t)0 - (uint64_t)v[i];
        break;
    case R_SUMSQ:
        for (int64_t i = 0; i < n; i++)
            acc += (uint64_t)v[i] * (uint64_t)v[i];
        break;
    default: {
        double s = 0.0, m = -INFINITY;
        for (int64_t i = 0; i < n; i++) {
            double x = uns ? (double)(uint64_t)v[i] : (double)v[i];
            if (kind == R_LOGSUMEXP)
                m = x > m ? x : m;
            else
                s += kind == R_L2 ? x * x : x;
        }
        if (kind == R_LOGSUMEXP) {
            for (int64_t i = 0; i < n; i++)
                s += exp((uns ? (double)(uint64_t)v[i] : (double)v[i]) - m);
            s = n ? m + log(s) : -INFINITY;
        } else {
            s = kind == R_L2 ? sqrt(s) : log(s);
        }
        cg_tensor_set_f64(out, o, s);
        return;
    }
    }
    if (uns)
        ((uint64_t *)out->data)[o] = acc;
    else
        cg_tensor_set_i64(out, o, (int64_t)acc);
}

/* --- float32 ReduceSum / ReduceMean in ONNX Runtime's order --------------------
 *
 * ORT 1.22 (core/providers/cpu/reduction/reduction_ops.cc) merges adjacent
 * dims that are both reduced or both kept. Kept-then-reduced (KR), or every
 * dim reduced, sums each row with Eigen's vectorized sum (ort_eigen_sum);
 * the other shapes it sums without a fast path (or with RK's, which adds
 * rows in order too) add the group's elements to 0 in order; KRK and RKR
 * with two or more outer blocks take BLAS-like paths we do not copy (double
 * there). Mean divides the float sum by the count in float. A quantizer
 * downstream turns one ulp into a step; the double sum stays for the
 * float64 mode and the other reductions. */

typedef enum ort_reduce_path { ORT_RED_NONE, ORT_RED_EIGEN, ORT_RED_SEQ } ort_reduce_path;

/* Which of ORT's paths reduces x over reduced[] (with one intra-op thread). */
static ort_reduce_path ort_reduce_kind(const cg_tensor *x, const bool *reduced)
{
    int64_t blk[CG_MAX_RANK];
    bool first_reduced = x->rank > 0 && reduced[0];
    int nb = 0;
    for (int d = 0; d < x->rank; d++) {
        if (d == 0 || reduced[d] != reduced[d - 1])
            blk[nb++] = x->dims[d];
        else
            blk[nb - 1] *= x->dims[d];
    }
    if (nb == 1)
        return first_reduced ? ORT_RED_EIGEN : ORT_RED_NONE;
    if (nb == 2)
        return first_reduced ? ORT_RED_SEQ : ORT_RED_EIGEN;
    if (nb == 3 && first_reduced) /* RKR: its fast path from 2 kept rows */
        return blk[1] >= 2 ? ORT_RED_NONE : ORT_RED_SEQ;
    if (nb == 3) /* KRK: a matrix-vector product from 2 outer rows */
        return blk[0] >= 2 ? ORT_RED_NONE : ORT_RED_SEQ;
    return ORT_RED_SEQ;
}

/* Eigen's sum() of n >= 1 contiguous floats built with SSE (4-float
 * packets): from the first 16-byte-aligned element (`off`, the row's
 * offset in a tensor ORT allocated 64-byte aligned), two packet
 * accumulators striding 8, added, a last packet, the lanes added
 * (a0 + a2) + (a1 + a3), then the unaligned head and the tail in order. */
static float ort_eigen_sum(const float *x, int64_t n, int64_t off)
{
    int64_t start = (4 - off % 4) % 4;
    if (start > n)
        start = n;
    int64_t size1 = (n - start) / 4 * 4, size2 = (n - start) / 8 * 8;
    int64_t end1 = start + size1, end2 = start + size2;
    if (size1 == 0) {
        float r = x[0];
        for (int64_t i = 1; i < n; i++)
            r += x[i];
        return r;
    }
    float p0[4], p1[4];
    for (int l = 0; l < 4; l++)
        p0[l] = x[start + l];
    if (size1 > 4) {
        for (int l = 0; l < 4; l++)
            p1[l] = x[start + 4 + l];
        for (int64_t i = start + 8; i < end2; i += 8)
            for (int l = 0; l < 4; l++) {
                p0[l] += x[i + l];
                p1[l] += x[i + 4 + l];
            }
        for (int l = 0; l < 4; l++)
            p0[l] += p1[l];
        if (end1 > end2)
            for (int l = 0; l < 4; l++)
                p0[l] += x[end2 + l];
    }
    float r = (p0[0] + p0[2]) + (p0[1] + p0[3]);
    for (int64_t i = 0; i < start; i++)
        r += x[i];
    for (int64_t i = end1; i < n; i++)
        r += x[i];
    return r;
}

/* Group g of a float32 ReduceSum/Mean by `path` (not ORT_RED_NONE). */
static float ort_reduce_f32(const cg_tensor *x, const reduce_plan *p, int64_t base,
                            ort_reduce_path path, bool mean)
{
    const float *d = (const float *)x->data + base;
    float s = 0.0f;
    if (p->rn == 0)
        s = 0.0f;
    else if (path == ORT_RED_EIGEN && !p->roff)
        s = ort_eigen_sum(d, p->rn, base);
    else
        for (int64_t j = 0; j < p->rn; j++)
            s += d[p->roff ? p->roff[j] : j];
    return mean ? s / (float)p->rn : s;
}

/* Reads the axes (attribute or input) and fills reduced[]; *noop is set
 * when the op must return its input unchanged. */
static cg_status reduce_axes(cg_kernel_ctx *k, const cg_tensor *x, int64_t since_input,
                             bool *reduced, bool *noop)
{
    int64_t axes[CG_MAX_RANK];
    size_t n = 0;
    cg_status st;
    *noop = false;
    if (k->since >= since_input) {
        const cg_tensor *t = cg_kernel_input(k, 1);
        if (t && (st = cg_tens_read_ints(k, t, "axes", axes, CG_MAX_RANK, &n)) != CG_OK)
            return st;
        if (n == 0 && cg_attr_int(k, "noop_with_empty_axes", 0) != 0) {
            *noop = true;
            return CG_OK;
        }
    } else {
        const int64_t *a = cg_attr_ints(k, "axes", &n);
        if (n > CG_MAX_RANK)
            return cg_kernel_fail(k, CG_INVALID, "axes has %zu entries", n);
        if (n)
            memcpy(axes, a, n * sizeof *a);
    }
    if ((st = cg_tens_normalize_axes(k, axes, n, x->rank, axes)) != CG_OK)
        return st;
    for (int d = 0; d < x->rank; d++)
        reduced[d] = n == 0;
    for (size_t i = 0; i < n; i++)
        reduced[axes[i]] = true;
    return CG_OK;
}

static cg_status reduce_op(cg_kernel_ctx *k, reduce_kind kind, int64_t since_input)
{
    const cg_tensor *x;
    cg_tensor *out;
    bool reduced[CG_MAX_RANK], noop;
    int64_t dims[CG_MAX_RANK];
    reduce_plan p;
    cg_status st = cg_kernel_require(k, 0, &x);
    if (st != CG_OK)
        return st;
    if (x->dtype == CG_DTYPE_STRING)
        return cg_kernel_fail(k, CG_INVALID, "cannot reduce a string tensor");
    if ((st = reduce_axes(k, x, since_input, reduced, &noop)) != CG_OK)
        return st;
    if (noop)
        return cg_tens_output_copy(k, 0, x, x->rank, x->dims, NULL);
    bool keep = cg_attr_int(k, "keepdims", 1) != 0;
    int r = 0;
    for (int d = 0; d < x->rank; d++) {
        if (!reduced[d])
            dims[r++] = x->dims[d];
        else if (keep)
            dims[r++] = 1;
    }
    if ((st = plan_init(k, x, reduced, &p)) != CG_OK)
        return st;
    if ((st = cg_kernel_output(k, 0, x->dtype, r, dims, &out)) != CG_OK)
        return st;
    if (p.groups == 0) /* empty output */
        return CG_OK;
    size_t row = (size_t)(p.rn ? p.rn : 1);
    bool is_int = cg_dtype_is_int(x->dtype) || x->dtype == CG_DTYPE_BOOL;
    /* fp16 hardware never sees double; an emulated node reducing one keeps it exact */
    bool acc16 = k->precision == CG_KPREC_FP16_ACC16 && x->dtype != CG_DTYPE_DOUBLE && !is_int;
    bool sum11 = k->precision == CG_KPREC_FP16_SUM11 && !is_int;
    void *buf = cg_kernel_scratch(k, row * 8);
    if (!buf)
        return cg_kernel_fail(k, CG_NOMEM, "out of memory");
    ort_reduce_path ort = x->dtype == CG_DTYPE_FLOAT && !acc16 && (kind == R_SUM || kind == R_MEAN)
                              ? ort_reduce_kind(x, reduced)
                              : ORT_RED_NONE;
    if (ort != ORT_RED_NONE) {
        float *of = out->data;
        for (int64_t g = 0; g < p.groups; g++)
            of[g] = ort_reduce_f32(x, &p, plan_base(&p, g), ort, kind == R_MEAN);
        return CG_OK;
    }
    for (int64_t g = 0; g < p.groups; g++) {
        int64_t base = plan_base(&p, g);
        if (is_int) {
            gather_i64(x, &p, base, buf);
            reduce_int(kind, x->dtype, buf, p.rn, out, g);
            continue;
        }
        gather_f64(x, &p, base, buf);
        double v = acc16   ? reduce_f16acc(kind, buf, p.rn, r16_fp16)
                   : sum11 ? reduce_f16acc(kind, buf, p.rn, cg_fp16_round_significand)
                           : reduce_f64(kind, buf, p.rn);
        if (out->dtype == CG_DTYPE_FLOAT)
            ((float *)out->data)[g] = (float)v;
        else
            cg_tensor_set_f64(out, g, v);
    }
    return CG_OK;
}

/* ReduceSum took axes as an input from opset 13, the others from 18. */
cg_status cg_op_reduce_sum(cg_kernel_ctx *k) { return reduce_op(k, R_SUM, 13); }
cg_status cg_op_reduce_mean(cg_kernel_ctx *k) { return reduce_op(k, R_MEAN, 18); }
cg_status cg_op_reduce_max(cg_kernel_ctx *k) { return reduce_op(k, R_MAX, 18); }
cg_status cg_op_reduce_min(cg_kernel_ctx *k) { return reduce_op(k, R_MIN, 18); }
cg_status cg_op_reduce_prod(cg_kernel_ctx *k) { return reduce_op(k, R_PROD, 18); }
cg_status cg_op_reduce_l1(cg_kernel_ctx *k) { return reduce_op(k, R_L1, 18); }
cg_status cg_op_reduce_l2(cg_kernel_ctx *k) { return reduce_op(k, R_L2, 18); }
cg_status cg_op_reduce_log_sum(cg_kernel_ctx *k) { return reduce_op(k, R_LOGSUM, 18); }
cg_status cg_op_reduce_log_sum_exp(cg_kernel_ctx *k) { return reduce_op(k, R_LOGSUMEXP, 18); }
cg_status cg_op_reduce_sum_square(cg_kernel_ctx *k) { return reduce_op(k, R_SUMSQ, 18); }

/* --- MeanVarianceNormalization ------------------------------------------------- */

cg_status cg_op_mean_variance_normalization(cg_kernel_ctx *k)
{
    const cg_tensor *x;
    cg_tensor *out;
    bool reduced[CG_MAX_RANK] = {false};
    int64_t axes[CG_MAX_RANK];
    reduce_plan p;
    cg_status st = cg_kernel_require(k, 0, &x);
    if (st != CG_OK)
        return st;
    if (!cg_dtype_is_float(x->dtype))
        return cg_kernel_fail(k, CG_INVALID, "input must be floating point, got %s",
                              cg_dtype_name(x->dtype));
    size_t n;
    const int64_t *a = cg_attr_ints(k, "axes", &n);
    static const int64_t default_axes[3] = {0, 2, 3};
    if (!cg_kernel_attr(k, "axes")) {
        a = default_axes;
        n = 3;
    }
    if (n > CG_MAX_RANK)
        return cg_kernel_fail(k, CG_INVALID, "axes has %zu entries", n);
    if ((st = cg_tens_normalize_axes(k, a, n, x->rank, axes)) != CG_OK)
        return st;
    for (size_t i = 0; i < n; i++)
        reduced[axes[i]] = true;
    if ((st = plan_init(k, x, reduced, &p)) != CG_OK)
        return st;
    if ((st = cg_kernel_output(k, 0, x->dtype, x->rank, x->dims, &out)) != CG_OK)
        return st;
    if (p.groups == 0 || x->numel == 0) /* empty: nothing to normalize */
        return CG_OK;
    double *buf = cg_kernel_scratch(k, (size_t)(p.rn ? p.rn : 1) * sizeof *buf);
    if (!buf)
        return cg_kernel_fail(k, CG_NOMEM, "out of memory");
    bool acc16 = k->precision == CG_KPREC_FP16_ACC16 && x->dtype != CG_DTYPE_DOUBLE;
    double (*r16)(double) = r16_fp16;
    if (k->precision == CG_KPREC_FP16_SUM11) {
        acc16 = true;
        r16 = cg_fp16_round_significand;
    }
    for (int64_t g = 0; g < p.groups && p.rn > 0; g++) {
        int64_t base = plan_base(&p, g);
        gather_f64(x, &p, base, buf);
        double sum = 0.0, sq = 0.0;
        for (int64_t j = 0; j < p.rn; j++) {
            if (acc16) {
                sum = r16(sum + r16(buf[j]));
                sq = r16(sq + r16(r16(buf[j]) * r16(buf[j])));
                continue;
            }
            sum += buf[j];
            sq += buf[j] * buf[j];
        }
        /* The spec's function body: (X - E[X]) / (sqrt(E[X^2] - E[X]^2) + 1e-9). */
        double mean = sum / (double)p.rn, var = sq / (double)p.rn - mean * mean;
        if (acc16) {
            mean = r16(mean);
            var = r16(r16(sq / (double)p.rn) - r16(mean * mean));
        }
        double denom = sqrt(var > 0 ? var : 0) + 1e-9;
        for (int64_t j = 0; j < p.rn; j++)
            cg_tensor_set_f64(out, base + (p.roff ? p.roff[j] : j), (buf[j] - mean) / denom);
    }
    return CG_OK;
}

/* --- ArgMax / ArgMin ---------------------------------------------------------- */

static cg_status arg_op(cg_kernel_ctx *k, bool want_max)
{
    const cg_tensor *x;
    cg_tensor *out;
    int64_t dims[CG_MAX_RANK], axis;
    cg_status st = cg_kernel_require(k, 0, &x);
    if (st != CG_OK)
        return st;
    if (x->dtype == CG_DTYPE_STRING || x->rank == 0)
        return cg_kernel_fail(k, CG_INVALID, "input must be a numeric tensor of rank >= 1");
    int64_t a = cg_attr_int(k, "axis", 0);
    if (!cg_normalize_axis(a, x->rank, &axis))
        return cg_kernel_fail(k, CG_INVALID, "axis %lld out of range for rank %d", (long long)a,
                              x->rank);
    bool keep = cg_attr_int(k, "keepdims", 1) != 0;
    bool last = k->since >= 12 && cg_attr_int(k, "select_last_index", 0) != 0;
    int64_t n = x->dims[axis];
    if (n == 0)
        return cg_kernel_fail(k, CG_INVALID, "cannot take %s over an empty axis",
                              want_max ? "ArgMax" : "ArgMin");
    int r = 0;
    for (int d = 0; d < x->rank; d++) {
        if (d != axis)
            dims[r++] = x->dims[d];
        else if (keep)
            dims[r++] = 1;
    }
    if ((st = cg_kernel_output(k, 0, CG_DTYPE_INT64, r, dims, &out)) != CG_OK)
        return st;
    int64_t outer = 1, inner = 1;
    for (int d = 0; d < axis; d++)
        outer *= x->dims[d];
    for (int d = (int)axis + 1; d < x->rank; d++)
        inner *= x->dims[d];
    int64_t *o = out->data;
    bool flt = cg_dtype_is_float(x->dtype);
    for (int64_t g = 0; g < outer * inner; g++) {
        int64_t base = (g / inner) * n * inner + g % inner, best = 0;
        for (int64_t j = 1; j < n; j++) {
            int c = cg_tens_cmp_elem(x, base + j * inner, x, base + best * inner);
            if (flt) {
                /* NaN wins (NumPy): the first one, or the last with select_last_index. */
                bool bn = isnan(cg_tensor_get_f64(x, base + best * inner));
                bool jn = isnan(cg_tensor_get_f64(x, base + j * inner));
                if (bn || jn) {
                    if (jn && (!bn || last))
                        best = j;
                    continue;
                }
            }
            if ((want_max ? c > 0 : c < 0) || (last && c == 0))
                best = j;
        }
        o[g] = best;
    }
    return CG_OK;
}

cg_status cg_op_arg_max(cg_kernel_ctx *k) { return arg_op(k, true); }
cg_status cg_op_arg_min(cg_kernel_ctx *k) { return arg_op(k, false); }
