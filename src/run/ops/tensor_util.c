/*
 * Helpers shared by the tensor-shape and reduction kernels (see
 * tensor_util.h). The copy routines are the engine under Transpose, Expand,
 * Slice, Tile, Pad, DepthToSpace and friends: each op describes its output
 * as a strided or index-mapped view of its input and lets these move the
 * bytes, so the per-dtype and string handling lives in one place.
 */
#include <math.h>
#include <string.h>

#include "run/ops/kernels.h"
#include "run/ops/tensor_util.h"

void cg_tens_strides(int rank, const int64_t *dims, int64_t *strides)
{
    int64_t s = 1;
    for (int d = rank - 1; d >= 0; d--) {
        strides[d] = s;
        /* only an empty shape overflows here (numel bounds the rest) */
        s = dims[d] != 0 && s > INT64_MAX / dims[d] ? 0 : s * dims[d];
    }
}

int64_t cg_tens_dims_prod(const cg_tensor *t, int from, int to)
{
    if (t->numel == 0)
        return 0;
    int64_t p = 1;
    for (int d = from; d < to; d++)
        p *= t->dims[d];
    return p;
}

static cg_status copy_string(cg_kernel_ctx *k, cg_tensor *dst, int64_t di, const cg_tensor *src,
                             int64_t si)
{
    size_t len;
    const char *s = cg_tensor_string(src, si, &len);
    cg_status st = cg_tensor_set_string(dst, di, s, len);
    if (st != CG_OK)
        return cg_kernel_fail(k, st, "out of memory copying a string element");
    return CG_OK;
}

cg_status cg_tens_copy(cg_kernel_ctx *k, cg_tensor *dst, int64_t doff, const cg_tensor *src,
                       int64_t soff, int64_t n)
{
    if (n <= 0)
        return CG_OK;
    if (src->dtype == CG_DTYPE_STRING) {
        for (int64_t i = 0; i < n; i++) {
            cg_status st = copy_string(k, dst, doff + i, src, soff + i);
            if (st != CG_OK)
                return st;
        }
        return CG_OK;
    }
    size_t es = cg_dtype_size(src->dtype);
    memcpy((char *)dst->data + (size_t)doff * es, (const char *)src->data + (size_t)soff * es,
           (size_t)n * es);
    return CG_OK;
}

/* Copies one row of n elements read at src offset s, s+stride, ... into
 * dst starting at d. */
static cg_status copy_row(cg_kernel_ctx *k, cg_tensor *dst, int64_t d, const cg_tensor *src,
                          int64_t s, int64_t stride, int64_t n)
{
    if (src->dtype == CG_DTYPE_STRING) {
        for (int64_t i = 0; i < n; i++) {
            cg_status st = copy_string(k, dst, d + i, src, s + i * stride);
            if (st != CG_OK)
                return st;
        }
        return CG_OK;
    }
    if (stride == 1)
        return cg_tens_copy(k, dst, d, src, s, n);
    size_t es = cg_dtype_size(src->dtype);
    switch (es) {
#define CG_COPY_ROW(T)                                                                       \
    {                                                                                        \
        T *o = (T *)dst->data + d;                                                           \
        const T *in = (const T *)src->data + s;                                              \
        for (int64_t i = 0; i < n; i++)                                                      \
            o[i] = in[i * stride];                                                           \
        return CG_OK;                                                                        \
    }
    case 1: CG_COPY_ROW(uint8_t)
    case 2: CG_COPY_ROW(uint16_t)
    case 4: CG_COPY_ROW(uint32_t)
    case 8: CG_COPY_ROW(uint64_t)
#undef CG_COPY_ROW
    default: {
        char *o = (char *)dst->data + (size_t)d * es;
        const char *in = (const char *)src->data;
        for (int64_t i = 0; i < n; i++)
            memcpy(o + (size_t)i * es, in + (size_t)(s + i * stride) * es, es);
        return CG_OK;
    }
    }
}

/* The transpose pattern (innermost output dim strided, the one above it
 * contiguous in the source) for 4-byte elements, in square tiles so both
 * sides stay in cache. */
static cg_status tiled_transpose32(cg_tensor *dst, const cg_tensor *src, int mr,
                                   const int64_t *md, const int64_t *ms, int64_t base)
{
    enum { TILE = 32 };
    int64_t rows = md[mr - 2], cols = md[mr - 1], cstride = ms[mr - 1];
    int64_t idx[CG_TENS_MAX_VIEW_RANK] = {0};
    uint32_t *out = (uint32_t *)dst->data;
    const uint32_t *in = (const uint32_t *)src->data;
    int64_t soff = base;
    for (;;) {
        for (int64_t r0 = 0; r0 < rows; r0 += TILE) {
            int64_t r1 = r0 + TILE < rows ? r0 + TILE : rows;
            for (int64_t c0 = 0; c0 < cols; c0 += TILE) {
                int64_t c1 = c0 + TILE < cols ? c0 + TILE : cols;
                for (int64_t r = r0; r < r1; r++)
                    for (int64_t c = c0; c < c1; c++)
                        out[r * cols + c] = in[soff + r + c * cstride];
            }
        }
        out += rows * cols;
        int d = mr - 3;
        for (; d >= 0; d--) {
            idx[d]++;
            soff += ms[d];
            if (idx[d] < md[d])
                break;
            soff -= ms[d] * md[d];
            idx[d] = 0;
        }
        if (d < 0)
            break;
    }
    return CG_OK;
}

cg_status cg_tens_strided_copy(cg_kernel_ctx *k, cg_tensor *dst, const cg_tensor *src,
                               int rank, const int64_t *dims, const int64_t *sstrides,
                               int64_t base)
{
    int64_t md[CG_TENS_MAX_VIEW_RANK], ms[CG_TENS_MAX_VIEW_RANK];
    int mr = 0;
    /* nothing to copy; and the merging below would multiply an empty
     * view's other, possibly huge, dims */
    for (int d = 0; d < rank; d++)
        if (dims[d] == 0)
            return CG_OK;
    /* Drop unit dims and merge neighbours that are contiguous in the source
     * too, so the common cases become a few long rows. */
    for (int d = 0; d < rank; d++) {
        if (dims[d] == 1)
            continue;
        if (mr > 0 && ms[mr - 1] == sstrides[d] * dims[d]) {
            md[mr - 1] *= dims[d];
            ms[mr - 1] = sstrides[d];
            continue;
        }
        md[mr] = dims[d];
        ms[mr] = sstrides[d];
        mr++;
    }
    if (mr == 0)
        return copy_row(k, dst, 0, src, base, 1, 1);
    if (mr >= 2 && ms[mr - 2] == 1 && ms[mr - 1] != 1 && src->dtype != CG_DTYPE_STRING &&
        cg_dtype_size(src->dtype) == 4)
        return tiled_transpose32(dst, src, mr, md, ms, base);
    int64_t idx[CG_TENS_MAX_VIEW_RANK] = {0};
    int64_t row = md[mr - 1], rstride = ms[mr - 1];
    int64_t out = 0, soff = base;
    for (;;) {
        cg_status st = copy_row(k, dst, out, src, soff, rstride, row);
        if (st != CG_OK)
            return st;
        out += row;
        int d = mr - 2;
        for (; d >= 0; d--) {
            idx[d]++;
            soff += ms[d];
            if (idx[d] < md[d])
                break;
            soff -= ms[d] * md[d];
            idx[d] = 0;
        }
        if (d < 0)
            break;
    }
    return CG_OK;
}

/* Writes n fill elements (or zeros / empty strings when fill is NULL). */
static cg_status fill_run(cg_kernel_ctx *k, cg_tensor *dst, int64_t at, int64_t n,
                          const cg_tensor *fill)
{
    if (!fill || fill->numel == 0) {
        if (dst->dtype != CG_DTYPE_STRING) {
            size_t es = cg_dtype_size(dst->dtype);
            memset((char *)dst->data + (size_t)at * es, 0, (size_t)n * es);
        }
        return CG_OK;
    }
    for (int64_t i = 0; i < n; i++) {
        cg_status st = cg_tens_copy(k, dst, at + i, fill, 0, 1);
        if (st != CG_OK)
            return st;
    }
    return CG_OK;
}

cg_status cg_tens_map_copy(cg_kernel_ctx *k, cg_tensor *dst, const cg_tensor *src,
                           int64_t *const *maps, const cg_tensor *fill)
{
    int rank = dst->rank;
    if (dst->numel == 0)
        return CG_OK;
    if (rank == 0)
        return cg_tens_copy(k, dst, 0, src, 0, 1);
    int64_t sstr[CG_MAX_RANK], idx[CG_MAX_RANK] = {0};
    cg_tens_strides(src->rank, src->dims, sstr);
    const int64_t *last = maps[rank - 1];
    int64_t row = dst->dims[rank - 1];
    cg_status st = CG_OK;
    /* One output row (all dims but the last fixed) at a time; along the last
     * dim, runs of consecutive source coordinates become one block copy. */
    for (int64_t at = 0; at < dst->numel; at += row) {
        int64_t base = 0;
        bool filled = false;
        for (int d = 0; d < rank - 1; d++) {
            int64_t c = maps[d][idx[d]];
            if (c < 0) {
                filled = true;
                break;
            }
            base += c * sstr[d];
        }
        if (filled) {
            st = fill_run(k, dst, at, row, fill);
        } else {
            for (int64_t o = 0; o < row && st == CG_OK;) {
                int64_t n = 1;
                if (last[o] < 0) {
                    while (o + n < row && last[o + n] < 0)
                        n++;
                    st = fill_run(k, dst, at + o, n, fill);
                } else {
                    while (o + n < row && last[o + n] == last[o] + n)
                        n++;
                    st = cg_tens_copy(k, dst, at + o, src, base + last[o], n);
                }
                o += n;
            }
        }
        if (st != CG_OK)
            return st;
        for (int d = rank - 2; d >= 0; d--) {
            if (++idx[d] < dst->dims[d])
                break;
            idx[d] = 0;
        }
    }
    return CG_OK;
}

cg_status cg_tens_read_ints(cg_kernel_ctx *k, const cg_tensor *t, const char *what,
                            int64_t *out, size_t max, size_t *n)
{
    if (!cg_dtype_is_int(t->dtype))
        return cg_kernel_fail(k, CG_INVALID, "%s must be an integer tensor, got %s", what,
                              cg_dtype_name(t->dtype));
    if (t->rank > 1)
        return cg_kernel_fail(k, CG_INVALID, "%s must be 1-D, got rank %d", what, t->rank);
    if ((uint64_t)t->numel > max)
        return cg_kernel_fail(k, CG_INVALID, "%s has %lld elements, at most %zu allowed", what,
                              (long long)t->numel, max);
    for (int64_t i = 0; i < t->numel; i++)
        out[i] = cg_tensor_get_i64(t, i);
    *n = (size_t)t->numel;
    return CG_OK;
}

cg_status cg_tens_read_scalar_int(cg_kernel_ctx *k, const cg_tensor *t, const char *what,
                                  int64_t *out)
{
    if (!cg_dtype_is_int(t->dtype))
        return cg_kernel_fail(k, CG_INVALID, "%s must be an integer tensor, got %s", what,
                              cg_dtype_name(t->dtype));
    if (t->numel != 1)
        return cg_kernel_fail(k, CG_INVALID, "%s must hold one element, got %lld", what,
                              (long long)t->numel);
    *out = cg_tensor_get_i64(t, 0);
    return CG_OK;
}

cg_status cg_tens_wrap_index(cg_kernel_ctx *k, const char *what, int64_t v, int64_t dim,
                             int64_t pos, int64_t *out)
{
    if (v < -dim || v >= dim)
        return cg_kernel_fail(k, CG_RUNTIME,
                              "%s value %lld at position %lld out of range [%lld, %lld)", what,
                              (long long)v, (long long)pos, (long long)-dim, (long long)dim);
    *out = v < 0 ? v + dim : v;
    return CG_OK;
}

cg_status cg_tens_normalize_axes(cg_kernel_ctx *k, const int64_t *axes, size_t n, int rank,
                                 int64_t *out)
{
    bool seen[CG_TENS_MAX_VIEW_RANK] = {false};
    for (size_t i = 0; i < n; i++) {
        int64_t a;
        if (!cg_normalize_axis(axes[i], rank, &a))
            return cg_kernel_fail(k, CG_INVALID, "axis %lld out of range for rank %d",
                                  (long long)axes[i], rank);
        if (seen[a])
            return cg_kernel_fail(k, CG_INVALID, "axis %lld repeated", (long long)axes[i]);
        seen[a] = true;
        out[i] = a;
    }
    return CG_OK;
}

int cg_tens_cmp_elem(const cg_tensor *a, int64_t i, const cg_tensor *b, int64_t j)
{
    if (a->dtype == CG_DTYPE_STRING) {
        size_t xl, yl;
        const char *x = cg_tensor_string(a, i, &xl), *y = cg_tensor_string(b, j, &yl);
        int c = cg_string_compare(x, xl, y, yl);
        return (c > 0) - (c < 0);
    }
    if (a->dtype == CG_DTYPE_UINT64) {
        uint64_t x = ((const uint64_t *)a->data)[i], y = ((const uint64_t *)b->data)[j];
        return (x > y) - (x < y);
    }
    if (cg_dtype_is_int(a->dtype) || a->dtype == CG_DTYPE_BOOL) {
        int64_t x = cg_tensor_get_i64(a, i), y = cg_tensor_get_i64(b, j);
        return (x > y) - (x < y);
    }
    double x = cg_tensor_get_f64(a, i), y = cg_tensor_get_f64(b, j);
    if (isnan(x) || isnan(y))
        return isnan(x) - isnan(y);
    return (x > y) - (x < y);
}

void cg_tens_sort(int64_t *idx, int64_t n, int64_t *tmp, cg_tens_cmp_fn cmp, const void *ctx)
{
    /* Bottom-up merge sort: stable, O(n log n), no recursion. */
    int64_t *a = idx, *b = tmp;
    for (int64_t width = 1; width < n; width *= 2) {
        for (int64_t lo = 0; lo < n; lo += 2 * width) {
            int64_t mid = lo + width < n ? lo + width : n;
            int64_t hi = lo + 2 * width < n ? lo + 2 * width : n;
            int64_t i = lo, j = mid, o = lo;
            while (i < mid && j < hi)
                b[o++] = cmp(ctx, a[j], a[i]) < 0 ? a[j++] : a[i++];
            while (i < mid)
                b[o++] = a[i++];
            while (j < hi)
                b[o++] = a[j++];
        }
        int64_t *t = a;
        a = b;
        b = t;
    }
    if (a != idx)
        memcpy(idx, a, (size_t)n * sizeof *idx);
}

cg_status cg_tens_output_copy(cg_kernel_ctx *k, size_t i, const cg_tensor *src, int rank,
                              const int64_t *dims, cg_tensor **result)
{
    cg_tensor *out;
    cg_status st = cg_kernel_output(k, i, src->dtype, rank, dims, &out);
    if (st != CG_OK)
        return st;
    if (out->numel != src->numel)
        return cg_kernel_fail(k, CG_INVALID, "output has %lld elements, input %lld",
                              (long long)out->numel, (long long)src->numel);
    if (result)
        *result = out;
    return cg_tens_copy(k, out, 0, src, 0, src->numel);
}
