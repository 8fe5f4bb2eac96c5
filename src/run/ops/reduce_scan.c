/*
 * Order-dependent reductions along one axis: CumSum (running sums, optionally
 * exclusive and/or reversed) and TopK (the k largest or smallest entries with
 * their indices). Both view the input as [outer, n, inner].
 *
 * TopK order: by value, and for equal values the lower index first, which is
 * what ONNX's reference (a stable sort) produces; NaN ranks above every
 * number (first when largest=1, last when largest=0).
 */
#include <math.h>
#include <string.h>

#include "run/ops/kernels.h"
#include "run/ops/tensor_util.h"

static cg_status axis_view(cg_kernel_ctx *k, const cg_tensor *x, int64_t a, int64_t *outer,
                           int64_t *n, int64_t *inner, int64_t *axis)
{
    if (x->rank == 0)
        return cg_kernel_fail(k, CG_INVALID, "input must have rank >= 1");
    if (!cg_normalize_axis(a, x->rank, axis))
        return cg_kernel_fail(k, CG_INVALID, "axis %lld out of range for rank %d", (long long)a,
                              x->rank);
    *outer = 1;
    *inner = 1;
    for (int d = 0; d < *axis; d++)
        *outer *= x->dims[d];
    for (int d = (int)*axis + 1; d < x->rank; d++)
        *inner *= x->dims[d];
    *n = x->dims[*axis];
    return CG_OK;
}

/* --- CumSum --------------------------------------------------------------------- */

cg_status cg_op_cum_sum(cg_kernel_ctx *k)
{
    const cg_tensor *x, *axis_t;
    cg_tensor *out;
    int64_t a, axis, outer, n, inner;
    cg_status st = cg_kernel_require(k, 0, &x);
    if (st != CG_OK || (st = cg_kernel_require(k, 1, &axis_t)) != CG_OK ||
        (st = cg_tens_read_scalar_int(k, axis_t, "axis", &a)) != CG_OK ||
        (st = axis_view(k, x, a, &outer, &n, &inner, &axis)) != CG_OK)
        return st;
    if (x->dtype == CG_DTYPE_STRING || x->dtype == CG_DTYPE_BOOL)
        return cg_kernel_fail(k, CG_INVALID, "unsupported type %s", cg_dtype_name(x->dtype));
    bool exclusive = cg_attr_int(k, "exclusive", 0) != 0;
    bool reverse = cg_attr_int(k, "reverse", 0) != 0;
    if ((st = cg_kernel_output(k, 0, x->dtype, x->rank, x->dims, &out)) != CG_OK)
        return st;
    bool is_int = cg_dtype_is_int(x->dtype);
    for (int64_t o = 0; o < outer; o++)
        for (int64_t i = 0; i < inner; i++) {
            int64_t base = o * n * inner + i;
            double facc = 0.0;
            uint64_t iacc = 0; /* wraps like the element type (two's complement) */
            for (int64_t s = 0; s < n; s++) {
                int64_t j = reverse ? n - 1 - s : s, at = base + j * inner;
                if (is_int) {
                    uint64_t v = (uint64_t)cg_tensor_get_i64(x, at);
                    if (!exclusive)
                        iacc += v;
                    cg_tensor_set_i64(out, at, (int64_t)iacc);
                    if (exclusive)
                        iacc += v;
                } else {
                    double v = cg_tensor_get_f64(x, at);
                    if (!exclusive)
                        facc += v;
                    cg_tensor_set_f64(out, at, facc);
                    if (exclusive)
                        facc += v;
                }
            }
        }
    return CG_OK;
}

/* --- TopK ----------------------------------------------------------------------- */

typedef struct topk_keys {
    const double *f;   /* float keys, or NULL */
    const int64_t *i;  /* integer keys (uint64 as bit patterns) */
    bool uns;
    bool largest;
} topk_keys;

/* <0 when row entry a goes before b. Ties return 0 so the stable sort keeps
 * index order. */
static int topk_cmp(const void *ctx, int64_t a, int64_t b)
{
    const topk_keys *t = ctx;
    int c;
    if (t->f) {
        double x = t->f[a], y = t->f[b];
        bool xn = isnan(x), yn = isnan(y);
        if (xn || yn)
            c = (int)xn - (int)yn; /* NaN is the greatest */
        else
            c = (x > y) - (x < y);
    } else if (t->uns) {
        uint64_t x = (uint64_t)t->i[a], y = (uint64_t)t->i[b];
        c = (x > y) - (x < y);
    } else {
        c = (t->i[a] > t->i[b]) - (t->i[a] < t->i[b]);
    }
    return t->largest ? -c : c;
}

cg_status cg_op_top_k(cg_kernel_ctx *k)
{
    const cg_tensor *x;
    cg_tensor *vals, *idxs;
    int64_t kk, axis, outer, n, inner, dims[CG_MAX_RANK];
    cg_status st = cg_kernel_require(k, 0, &x);
    if (st != CG_OK)
        return st;
    if (x->dtype == CG_DTYPE_STRING || x->dtype == CG_DTYPE_BOOL)
        return cg_kernel_fail(k, CG_INVALID, "unsupported type %s", cg_dtype_name(x->dtype));
    if (k->since < 10) {
        kk = cg_attr_int(k, "k", -1);
    } else {
        const cg_tensor *kt;
        if ((st = cg_kernel_require(k, 1, &kt)) != CG_OK ||
            (st = cg_tens_read_scalar_int(k, kt, "K", &kk)) != CG_OK)
            return st;
    }
    if ((st = axis_view(k, x, cg_attr_int(k, "axis", -1), &outer, &n, &inner, &axis)) != CG_OK)
        return st;
    if (kk < 0 || kk > n)
        return cg_kernel_fail(k, CG_INVALID, "k = %lld out of range [0, %lld]", (long long)kk,
                              (long long)n);
    topk_keys keys = {NULL, NULL, x->dtype == CG_DTYPE_UINT64,
                      k->since < 11 || cg_attr_int(k, "largest", 1) != 0};
    /* sorted=0 leaves the order unspecified; sorted order is a valid answer. */
    memcpy(dims, x->dims, sizeof dims);
    dims[axis] = kk;
    if ((st = cg_kernel_output(k, 0, x->dtype, x->rank, dims, &vals)) != CG_OK ||
        (st = cg_kernel_output(k, 1, CG_DTYPE_INT64, x->rank, dims, &idxs)) != CG_OK)
        return st;
    if (vals->numel == 0)
        return CG_OK;
    size_t row = (size_t)n;
    int64_t *order = cg_kernel_scratch(k, row * sizeof *order);
    int64_t *tmp = cg_kernel_scratch(k, row * sizeof *tmp);
    void *kbuf = cg_kernel_scratch(k, row * 8);
    if (!order || !tmp || !kbuf)
        return cg_kernel_fail(k, CG_NOMEM, "out of memory");
    bool flt = cg_dtype_is_float(x->dtype);
    if (flt)
        keys.f = kbuf;
    else
        keys.i = kbuf;
    int64_t *oi = idxs->data;
    for (int64_t o = 0; o < outer; o++)
        for (int64_t i = 0; i < inner; i++) {
            int64_t base = o * n * inner + i, obase = o * kk * inner + i;
            for (int64_t j = 0; j < n; j++) {
                if (flt)
                    ((double *)kbuf)[j] = cg_tensor_get_f64(x, base + j * inner);
                else
                    ((int64_t *)kbuf)[j] = cg_tensor_get_i64(x, base + j * inner);
                order[j] = j;
            }
            cg_tens_sort(order, n, tmp, topk_cmp, &keys);
            for (int64_t j = 0; j < kk; j++) {
                oi[obase + j * inner] = order[j];
                if ((st = cg_tens_copy(k, vals, obase + j * inner, x, base + order[j] * inner,
                                       1)) != CG_OK)
                    return st;
            }
        }
    return CG_OK;
}
