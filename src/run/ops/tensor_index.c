/*
 * Kernels driven by index or mask tensors: Gather, GatherElements, GatherND,
 * Scatter, ScatterElements, ScatterND, NonZero, OneHot, Compress,
 * ReverseSequence and Unique.
 *
 * Every index read from a tensor is checked against the dim it addresses
 * (negative values wrapped once where the spec allows them) before any
 * memory is touched; a bad one fails with the node name, the value and its
 * position (see cg_tens_wrap_index).
 */
#include <math.h>
#include <string.h>

#include "run/ops/kernels.h"
#include "run/ops/tensor_util.h"

static cg_status require_index_tensor(cg_kernel_ctx *k, size_t i, const char *what,
                                      const cg_tensor **out)
{
    cg_status st = cg_kernel_require(k, i, out);
    if (st != CG_OK)
        return st;
    if ((*out)->dtype != CG_DTYPE_INT32 && (*out)->dtype != CG_DTYPE_INT64)
        return cg_kernel_fail(k, CG_INVALID, "%s must be int32 or int64, got %s", what,
                              cg_dtype_name((*out)->dtype));
    return CG_OK;
}

static cg_status axis_attr(cg_kernel_ctx *k, int rank, int64_t *axis)
{
    int64_t a = cg_attr_int(k, "axis", 0);
    if (!cg_normalize_axis(a, rank, axis))
        return cg_kernel_fail(k, CG_INVALID, "axis %lld out of range for rank %d",
                              (long long)a, rank);
    return CG_OK;
}

/* --- Gather family ---------------------------------------------------------------- */

cg_status cg_op_gather(cg_kernel_ctx *k)
{
    const cg_tensor *data, *ind;
    cg_tensor *out;
    int64_t axis, dims[CG_MAX_RANK];
    cg_status st = cg_kernel_require(k, 0, &data);
    if (st != CG_OK || (st = require_index_tensor(k, 1, "indices", &ind)) != CG_OK)
        return st;
    if (data->rank == 0)
        return cg_kernel_fail(k, CG_INVALID, "data must have rank >= 1");
    if ((st = axis_attr(k, data->rank, &axis)) != CG_OK)
        return st;
    int r = data->rank - 1 + ind->rank;
    if (r > CG_MAX_RANK)
        return cg_kernel_fail(k, CG_UNSUPPORTED, "output rank %d exceeds %d", r, CG_MAX_RANK);
    int at = 0;
    for (int d = 0; d < axis; d++)
        dims[at++] = data->dims[d];
    for (int d = 0; d < ind->rank; d++)
        dims[at++] = ind->dims[d];
    for (int d = (int)axis + 1; d < data->rank; d++)
        dims[at++] = data->dims[d];
    int64_t dim = data->dims[axis], n = ind->numel;
    int64_t *idx = cg_kernel_scratch(k, (size_t)(n ? n : 1) * sizeof *idx);
    if (!idx)
        return cg_kernel_fail(k, CG_NOMEM, "out of memory");
    for (int64_t j = 0; j < n; j++)
        if ((st = cg_tens_wrap_index(k, "indices", cg_tensor_get_i64(ind, j), dim, j, &idx[j])) !=
            CG_OK)
            return st;
    if ((st = cg_kernel_output(k, 0, data->dtype, r, dims, &out)) != CG_OK)
        return st;
    /* An empty output copies nothing. Past this, outer * n * inner is its
     * element count, so neither partial product can overflow: with a zero
     * dim among them, the others need not have a product that fits. */
    if (out->numel == 0)
        return CG_OK;
    int64_t outer = 1, inner = 1;
    for (int d = 0; d < axis; d++)
        outer *= data->dims[d];
    for (int d = (int)axis + 1; d < data->rank; d++)
        inner *= data->dims[d];
    for (int64_t o = 0; o < outer; o++)
        for (int64_t j = 0; j < n; j++)
            if ((st = cg_tens_copy(k, out, (o * n + j) * inner, data, (o * dim + idx[j]) * inner,
                                   inner)) != CG_OK)
                return st;
    return CG_OK;
}

/* Checks that indices/updates of the *Elements ops fit data (same rank, no
 * non-axis dim larger than data's). */
static cg_status elements_shape(cg_kernel_ctx *k, const cg_tensor *data, const cg_tensor *ind,
                                int64_t axis)
{
    if (ind->rank != data->rank)
        return cg_kernel_fail(k, CG_INVALID, "indices rank %d differs from data rank %d",
                              ind->rank, data->rank);
    for (int d = 0; d < data->rank; d++)
        if (d != axis && ind->dims[d] > data->dims[d])
            return cg_kernel_fail(k, CG_INVALID, "indices dim %d = %lld exceeds data's %lld", d,
                                  (long long)ind->dims[d], (long long)data->dims[d]);
    return CG_OK;
}

/* Data offset addressed by element e of an *Elements indices tensor: its own
 * coordinates, with the axis coordinate replaced by the (checked) index. */
static cg_status elements_offset(cg_kernel_ctx *k, const cg_tensor *data, const cg_tensor *ind,
                                 int64_t axis, const int64_t *dstr, const int64_t *coord,
                                 int64_t e, int64_t *off)
{
    int64_t v;
    cg_status st = cg_tens_wrap_index(k, "indices", cg_tensor_get_i64(ind, e), data->dims[axis],
                                      e, &v);
    if (st != CG_OK)
        return st;
    int64_t o = 0;
    for (int d = 0; d < data->rank; d++)
        o += (d == axis ? v : coord[d]) * dstr[d];
    *off = o;
    return CG_OK;
}

static void next_coord(int rank, const int64_t *dims, int64_t *coord)
{
    for (int d = rank - 1; d >= 0; d--) {
        if (++coord[d] < dims[d])
            return;
        coord[d] = 0;
    }
}

cg_status cg_op_gather_elements(cg_kernel_ctx *k)
{
    const cg_tensor *data, *ind;
    cg_tensor *out;
    int64_t axis, dstr[CG_MAX_RANK], coord[CG_MAX_RANK] = {0};
    cg_status st = cg_kernel_require(k, 0, &data);
    if (st != CG_OK || (st = require_index_tensor(k, 1, "indices", &ind)) != CG_OK)
        return st;
    if (data->rank == 0)
        return cg_kernel_fail(k, CG_INVALID, "data must have rank >= 1");
    if ((st = axis_attr(k, data->rank, &axis)) != CG_OK ||
        (st = elements_shape(k, data, ind, axis)) != CG_OK)
        return st;
    if ((st = cg_kernel_output(k, 0, data->dtype, ind->rank, ind->dims, &out)) != CG_OK)
        return st;
    cg_tens_strides(data->rank, data->dims, dstr);
    for (int64_t e = 0; e < ind->numel; e++) {
        int64_t off;
        if ((st = elements_offset(k, data, ind, axis, dstr, coord, e, &off)) != CG_OK ||
            (st = cg_tens_copy(k, out, e, data, off, 1)) != CG_OK)
            return st;
        next_coord(ind->rank, ind->dims, coord);
    }
    return CG_OK;
}

/* GatherND / ScatterND: the data offset of index tuple t (m coordinates
 * starting at ind element t*m) within a batch whose data block starts at
 * base; strides are data strides of the addressed dims. */
static cg_status nd_offset(cg_kernel_ctx *k, const cg_tensor *data, const cg_tensor *ind,
                           int first_dim, int64_t m, const int64_t *dstr, int64_t t,
                           int64_t *off)
{
    int64_t o = 0;
    for (int64_t j = 0; j < m; j++) {
        int64_t v;
        cg_status st = cg_tens_wrap_index(k, "indices", cg_tensor_get_i64(ind, t * m + j),
                                          data->dims[first_dim + j], t * m + j, &v);
        if (st != CG_OK)
            return st;
        o += v * dstr[first_dim + j];
    }
    *off = o;
    return CG_OK;
}

cg_status cg_op_gather_nd(cg_kernel_ctx *k)
{
    const cg_tensor *data, *ind;
    cg_tensor *out;
    int64_t dims[CG_MAX_RANK], dstr[CG_MAX_RANK];
    cg_status st = cg_kernel_require(k, 0, &data);
    if (st != CG_OK || (st = cg_kernel_require(k, 1, &ind)) != CG_OK)
        return st;
    if (ind->dtype != CG_DTYPE_INT64)
        return cg_kernel_fail(k, CG_INVALID, "indices must be int64, got %s",
                              cg_dtype_name(ind->dtype));
    int r = data->rank, q = ind->rank;
    int64_t b = k->since >= 12 ? cg_attr_int(k, "batch_dims", 0) : 0;
    if (r < 1 || q < 1)
        return cg_kernel_fail(k, CG_INVALID, "data and indices need rank >= 1 (got %d, %d)", r,
                              q);
    if (b < 0 || b >= (r < q ? r : q))
        return cg_kernel_fail(k, CG_INVALID, "batch_dims %lld out of range for ranks %d, %d",
                              (long long)b, r, q);
    int64_t m = ind->dims[q - 1];
    if (m < 1 || m > r - b)
        return cg_kernel_fail(k, CG_INVALID, "indices last dim %lld out of range [1, %lld]",
                              (long long)m, (long long)(r - b));
    for (int d = 0; d < b; d++)
        if (ind->dims[d] != data->dims[d])
            return cg_kernel_fail(k, CG_INVALID, "batch dim %d differs: data %lld, indices "
                                  "%lld", d, (long long)data->dims[d], (long long)ind->dims[d]);
    int orank = q - 1 + r - (int)b - (int)m;
    if (orank > CG_MAX_RANK)
        return cg_kernel_fail(k, CG_UNSUPPORTED, "output rank %d exceeds %d", orank,
                              CG_MAX_RANK);
    int at = 0;
    for (int d = 0; d < q - 1; d++)
        dims[at++] = ind->dims[d];
    for (int d = (int)(b + m); d < r; d++)
        dims[at++] = data->dims[d];
    if ((st = cg_kernel_output(k, 0, data->dtype, orank, dims, &out)) != CG_OK)
        return st;
    if (out->numel == 0) /* else every product below is bounded by out's numel */
        return CG_OK;
    cg_tens_strides(r, data->dims, dstr);
    int64_t batches = 1, inner = 1, per_batch = 1;
    for (int d = 0; d < b; d++)
        batches *= data->dims[d];
    for (int d = (int)(b + m); d < r; d++)
        inner *= data->dims[d];
    for (int d = (int)b; d < q - 1; d++)
        per_batch *= ind->dims[d];
    int64_t batch_block = b > 0 ? dstr[b - 1] : 0;
    for (int64_t bi = 0; bi < batches; bi++)
        for (int64_t t = 0; t < per_batch; t++) {
            int64_t tuple = bi * per_batch + t, off;
            if ((st = nd_offset(k, data, ind, (int)b, m, dstr, tuple, &off)) != CG_OK)
                return st;
            if ((st = cg_tens_copy(k, out, tuple * inner, data, bi * batch_block + off,
                                   inner)) != CG_OK)
                return st;
        }
    return CG_OK;
}

/* --- Scatter family ------------------------------------------------------------- */

typedef enum scatter_red { RED_NONE, RED_ADD, RED_MUL, RED_MAX, RED_MIN } scatter_red;

static cg_status parse_reduction(cg_kernel_ctx *k, const cg_tensor *data, int64_t since_attr,
                                 scatter_red *red)
{
    *red = RED_NONE;
    if (k->since < since_attr)
        return CG_OK;
    const char *s = cg_attr_string(k, "reduction", "none");
    if (strcmp(s, "none") == 0)
        return CG_OK;
    if (strcmp(s, "add") == 0)
        *red = RED_ADD;
    else if (strcmp(s, "mul") == 0)
        *red = RED_MUL;
    else if (strcmp(s, "max") == 0 && k->since >= 18)
        *red = RED_MAX;
    else if (strcmp(s, "min") == 0 && k->since >= 18)
        *red = RED_MIN;
    else
        return cg_kernel_fail(k, CG_INVALID, "unknown reduction '%s'", s);
    if (data->dtype == CG_DTYPE_STRING)
        return cg_kernel_fail(k, CG_INVALID, "reduction '%s' on a string tensor", s);
    return CG_OK;
}

/* out[di] = red(out[di], upd[si]); integers exact (wrapping), floats in
 * double and rounded once. */
static cg_status scatter_apply(cg_kernel_ctx *k, cg_tensor *out, int64_t di,
                               const cg_tensor *upd, int64_t si, scatter_red red)
{
    if (red == RED_NONE)
        return cg_tens_copy(k, out, di, upd, si, 1);
    if (cg_dtype_is_float(out->dtype)) {
        double a = cg_tensor_get_f64(out, di), b = cg_tensor_get_f64(upd, si), r;
        switch (red) {
        case RED_ADD: r = a + b; break;
        case RED_MUL: r = a * b; break;
        case RED_MAX: r = (isnan(a) || a >= b) && !isnan(b) ? a : b; break;
        default: r = (isnan(a) || a <= b) && !isnan(b) ? a : b; break;
        }
        if (isnan(a))
            r = a;
        cg_tensor_set_f64(out, di, r);
        return CG_OK;
    }
    if (out->dtype == CG_DTYPE_UINT64) {
        uint64_t a = ((uint64_t *)out->data)[di], b = ((const uint64_t *)upd->data)[si], r;
        switch (red) {
        case RED_ADD: r = a + b; break;
        case RED_MUL: r = a * b; break;
        case RED_MAX: r = a > b ? a : b; break;
        default: r = a < b ? a : b; break;
        }
        ((uint64_t *)out->data)[di] = r;
        return CG_OK;
    }
    int64_t a = cg_tensor_get_i64(out, di), b = cg_tensor_get_i64(upd, si), r;
    switch (red) {
    case RED_ADD: r = (int64_t)((uint64_t)a + (uint64_t)b); break;
    case RED_MUL: r = (int64_t)((uint64_t)a * (uint64_t)b); break;
    case RED_MAX: r = a > b ? a : b; break;
    default: r = a < b ? a : b; break;
    }
    if (out->dtype == CG_DTYPE_BOOL && red == RED_MUL)
        r = a && b;
    cg_tensor_set_i64(out, di, r);
    return CG_OK;
}

static cg_status scatter_elements(cg_kernel_ctx *k, int64_t since_reduction)
{
    const cg_tensor *data, *ind, *upd;
    cg_tensor *out;
    int64_t axis, dstr[CG_MAX_RANK], coord[CG_MAX_RANK] = {0};
    scatter_red red;
    cg_status st = cg_kernel_require(k, 0, &data);
    if (st != CG_OK || (st = require_index_tensor(k, 1, "indices", &ind)) != CG_OK ||
        (st = cg_kernel_require(k, 2, &upd)) != CG_OK)
        return st;
    if (data->rank == 0)
        return cg_kernel_fail(k, CG_INVALID, "data must have rank >= 1");
    if ((st = axis_attr(k, data->rank, &axis)) != CG_OK ||
        (st = elements_shape(k, data, ind, axis)) != CG_OK ||
        (st = parse_reduction(k, data, since_reduction, &red)) != CG_OK)
        return st;
    if (upd->dtype != data->dtype || upd->rank != ind->rank ||
        memcmp(upd->dims, ind->dims, sizeof(int64_t) * (size_t)ind->rank) != 0)
        return cg_kernel_fail(k, CG_INVALID, "updates must match indices' shape and data's type");
    if ((st = cg_tens_output_copy(k, 0, data, data->rank, data->dims, &out)) != CG_OK)
        return st;
    cg_tens_strides(data->rank, data->dims, dstr);
    for (int64_t e = 0; e < ind->numel; e++) {
        int64_t off;
        if ((st = elements_offset(k, data, ind, axis, dstr, coord, e, &off)) != CG_OK ||
            (st = scatter_apply(k, out, off, upd, e, red)) != CG_OK)
            return st;
        next_coord(ind->rank, ind->dims, coord);
    }
    return CG_OK;
}

cg_status cg_op_scatter_elements(cg_kernel_ctx *k)
{
    return scatter_elements(k, 16);
}

cg_status cg_op_scatter(cg_kernel_ctx *k)
{
    return scatter_elements(k, INT64_MAX); /* deprecated Scatter has no reduction */
}

cg_status cg_op_scatter_nd(cg_kernel_ctx *k)
{
    const cg_tensor *data, *ind, *upd;
    cg_tensor *out;
    int64_t dstr[CG_MAX_RANK];
    scatter_red red;
    cg_status st = cg_kernel_require(k, 0, &data);
    if (st != CG_OK || (st = cg_kernel_require(k, 1, &ind)) != CG_OK ||
        (st = cg_kernel_require(k, 2, &upd)) != CG_OK)
        return st;
    if (ind->dtype != CG_DTYPE_INT64)
        return cg_kernel_fail(k, CG_INVALID, "indices must be int64, got %s",
                              cg_dtype_name(ind->dtype));
    if ((st = parse_reduction(k, data, 16, &red)) != CG_OK)
        return st;
    int r = data->rank, q = ind->rank;
    if (r < 1 || q < 1)
        return cg_kernel_fail(k, CG_INVALID, "data and indices need rank >= 1 (got %d, %d)", r,
                              q);
    int64_t m = ind->dims[q - 1];
    if (m < 1 || m > r)
        return cg_kernel_fail(k, CG_INVALID, "indices last dim %lld out of range [1, %d]",
                              (long long)m, r);
    /* updates shape = indices.shape[:-1] + data.shape[m:] */
    bool ok = upd->dtype == data->dtype && upd->rank == q - 1 + r - (int)m;
    for (int d = 0; ok && d < q - 1; d++)
        ok = upd->dims[d] == ind->dims[d];
    for (int d = (int)m; ok && d < r; d++)
        ok = upd->dims[q - 1 + d - m] == data->dims[d];
    if (!ok)
        return cg_kernel_fail(k, CG_INVALID, "updates shape/type does not match "
                              "indices.shape[:-1] + data.shape[%lld:]", (long long)m);
    if ((st = cg_tens_output_copy(k, 0, data, r, data->dims, &out)) != CG_OK)
        return st;
    cg_tens_strides(r, data->dims, dstr);
    int64_t inner = 1, tuples = ind->numel / m;
    for (int d = (int)m; d < r; d++)
        inner *= data->dims[d];
    for (int64_t t = 0; t < tuples; t++) {
        int64_t off;
        if ((st = nd_offset(k, data, ind, 0, m, dstr, t, &off)) != CG_OK)
            return st;
        for (int64_t i = 0; i < inner; i++)
            if ((st = scatter_apply(k, out, off + i, upd, t * inner + i, red)) != CG_OK)
                return st;
    }
    return CG_OK;
}

/* --- NonZero, OneHot, Compress, ReverseSequence ------------------------------------ */

static bool is_nonzero(const cg_tensor *t, int64_t i)
{
    switch (t->dtype) {
    case CG_DTYPE_STRING: { /* nonzero: not the empty string ("\0" is not empty) */
        size_t len;
        cg_tensor_string(t, i, &len);
        return len > 0;
    }
    case CG_DTYPE_UINT64: return ((const uint64_t *)t->data)[i] != 0;
    default:
        if (cg_dtype_is_float(t->dtype))
            return cg_tensor_get_f64(t, i) != 0.0; /* NaN counts as nonzero */
        return cg_tensor_get_i64(t, i) != 0;
    }
}

cg_status cg_op_nonzero(cg_kernel_ctx *k)
{
    const cg_tensor *x;
    cg_tensor *out;
    cg_status st = cg_kernel_require(k, 0, &x);
    if (st != CG_OK)
        return st;
    int64_t nnz = 0;
    for (int64_t i = 0; i < x->numel; i++)
        nnz += is_nonzero(x, i);
    /* A scalar reads as a 1-element vector, as NumPy's reference does. */
    int r = x->rank ? x->rank : 1;
    int64_t dims[2] = {r, nnz}, coord[CG_MAX_RANK] = {0}, one = 1;
    const int64_t *xd = x->rank ? x->dims : &one;
    if ((st = cg_kernel_output(k, 0, CG_DTYPE_INT64, 2, dims, &out)) != CG_OK)
        return st;
    int64_t *o = out->data, j = 0;
    for (int64_t i = 0; i < x->numel; i++) {
        if (is_nonzero(x, i)) {
            for (int d = 0; d < r; d++)
                o[d * nnz + j] = coord[d];
            j++;
        }
        next_coord(r, xd, coord);
    }
    return CG_OK;
}

cg_status cg_op_one_hot(cg_kernel_ctx *k)
{
    const cg_tensor *ind, *depth_t, *vals;
    cg_tensor *out;
    int64_t dims[CG_MAX_RANK];
    cg_status st = cg_kernel_require(k, 0, &ind);
    if (st != CG_OK || (st = cg_kernel_require(k, 1, &depth_t)) != CG_OK ||
        (st = cg_kernel_require(k, 2, &vals)) != CG_OK)
        return st;
    if (depth_t->numel != 1 || depth_t->dtype == CG_DTYPE_STRING)
        return cg_kernel_fail(k, CG_INVALID, "depth must be one number");
    if (vals->numel != 2)
        return cg_kernel_fail(k, CG_INVALID, "values must hold [off, on], got %lld elements",
                              (long long)vals->numel);
    if (ind->dtype == CG_DTYPE_STRING)
        return cg_kernel_fail(k, CG_INVALID, "indices must be numeric");
    double dd = cg_tensor_get_f64(depth_t, 0);
    int64_t depth = cg_tensor_get_i64(depth_t, 0);
    if (!(dd >= 1.0) || depth < 1)
        return cg_kernel_fail(k, CG_INVALID, "depth %g must be at least 1", dd);
    int r = ind->rank + 1;
    if (r > CG_MAX_RANK)
        return cg_kernel_fail(k, CG_UNSUPPORTED, "output rank %d exceeds %d", r, CG_MAX_RANK);
    int64_t axis_in = cg_attr_int(k, "axis", -1), axis;
    if (!cg_normalize_axis(axis_in, r, &axis))
        return cg_kernel_fail(k, CG_INVALID, "axis %lld out of range for output rank %d",
                              (long long)axis_in, r);
    for (int d = 0, s = 0; d < r; d++)
        dims[d] = d == axis ? depth : ind->dims[s++];
    if ((st = cg_kernel_output(k, 0, vals->dtype, r, dims, &out)) != CG_OK)
        return st;
    for (int64_t i = 0; i < out->numel; i++)
        if ((st = cg_tens_copy(k, out, i, vals, 0, 1)) != CG_OK)
            return st;
    int64_t outer = 1, inner = 1;
    for (int d = 0; d < axis; d++)
        outer *= dims[d];
    for (int d = (int)axis + 1; d < r; d++)
        inner *= dims[d];
    for (int64_t e = 0; e < ind->numel; e++) {
        /* The spec defines indices outside [-depth, depth) as an all-off
         * row rather than an error; non-finite float indices count as such. */
        int64_t v;
        if (cg_dtype_is_float(ind->dtype)) {
            double f = cg_tensor_get_f64(ind, e);
            if (!isfinite(f) || f >= (double)depth || f <= -(double)depth - 1.0)
                continue;
            v = (int64_t)f;
        } else {
            v = cg_tensor_get_i64(ind, e);
        }
        if (ind->dtype == CG_DTYPE_UINT64 && ((const uint64_t *)ind->data)[e] > INT64_MAX)
            continue;
        if (v < -depth || v >= depth)
            continue;
        if (v < 0)
            v += depth;
        int64_t o = e / inner, in = e % inner;
        if ((st = cg_tens_copy(k, out, (o * depth + v) * inner + in, vals, 1, 1)) != CG_OK)
            return st;
    }
    (void)outer;
    return CG_OK;
}

cg_status cg_op_compress(cg_kernel_ctx *k)
{
    const cg_tensor *x, *cond;
    cg_tensor *out;
    int64_t dims[CG_MAX_RANK];
    cg_status st = cg_kernel_require(k, 0, &x);
    if (st != CG_OK || (st = cg_kernel_require(k, 1, &cond)) != CG_OK)
        return st;
    if (cond->rank != 1)
        return cg_kernel_fail(k, CG_INVALID, "condition must be 1-D, got rank %d", cond->rank);
    bool has_axis = cg_kernel_attr(k, "axis") != NULL;
    int64_t axis = 0, outer = 1, inner = 1, dim;
    int r;
    if (has_axis) {
        if (x->rank == 0)
            return cg_kernel_fail(k, CG_INVALID, "axis given for a scalar input");
        if ((st = axis_attr(k, x->rank, &axis)) != CG_OK)
            return st;
        r = x->rank;
        memcpy(dims, x->dims, sizeof dims);
        dim = x->dims[axis];
        outer = cg_tens_dims_prod(x, 0, (int)axis);
        inner = cg_tens_dims_prod(x, (int)axis + 1, r);
    } else {
        r = 1;
        dim = x->numel;
    }
    int64_t kept = 0;
    for (int64_t i = 0; i < cond->numel; i++) {
        if (!is_nonzero(cond, i))
            continue;
        if (i >= dim)
            return cg_kernel_fail(k, CG_INVALID, "condition selects index %lld beyond dim "
                                  "%lld", (long long)i, (long long)dim);
        kept++;
    }
    dims[has_axis ? axis : 0] = kept;
    if ((st = cg_kernel_output(k, 0, x->dtype, r, dims, &out)) != CG_OK)
        return st;
    int64_t limit = cond->numel < dim ? cond->numel : dim;
    for (int64_t o = 0, at = 0; o < outer; o++)
        for (int64_t i = 0; i < limit; i++) {
            if (!is_nonzero(cond, i))
                continue;
            if ((st = cg_tens_copy(k, out, at, x, (o * dim + i) * inner, inner)) != CG_OK)
                return st;
            at += inner;
        }
    return CG_OK;
}

cg_status cg_op_reverse_sequence(cg_kernel_ctx *k)
{
    const cg_tensor *x, *lens;
    cg_tensor *out;
    int64_t str[CG_MAX_RANK];
    cg_status st = cg_kernel_require(k, 0, &x);
    if (st != CG_OK || (st = require_index_tensor(k, 1, "sequence_lens", &lens)) != CG_OK)
        return st;
    if (x->rank < 2)
        return cg_kernel_fail(k, CG_INVALID, "input must have rank >= 2, got %d", x->rank);
    int64_t ta = cg_attr_int(k, "time_axis", 0), ba = cg_attr_int(k, "batch_axis", 1);
    if (!((ta == 0 && ba == 1) || (ta == 1 && ba == 0)))
        return cg_kernel_fail(k, CG_INVALID, "time_axis %lld / batch_axis %lld must be 0 and 1",
                              (long long)ta, (long long)ba);
    int64_t steps = x->dims[ta], batch = x->dims[ba];
    if (lens->rank != 1 || lens->dims[0] != batch)
        return cg_kernel_fail(k, CG_INVALID, "sequence_lens must have shape [%lld]",
                              (long long)batch);
    if ((st = cg_tens_output_copy(k, 0, x, x->rank, x->dims, &out)) != CG_OK)
        return st;
    cg_tens_strides(x->rank, x->dims, str);
    int64_t inner = str[1];
    for (int64_t b = 0; b < batch; b++) {
        int64_t len = cg_tensor_get_i64(lens, b);
        if (len < 0 || len > steps)
            return cg_kernel_fail(k, CG_RUNTIME, "sequence_lens value %lld at position %lld out "
                                  "of range [0, %lld]", (long long)len, (long long)b,
                                  (long long)steps);
        for (int64_t t = 0; t < len; t++) {
            int64_t dst = t * str[ta] + b * str[ba], src = (len - 1 - t) * str[ta] + b * str[ba];
            if ((st = cg_tens_copy(k, out, dst, x, src, inner)) != CG_OK)
                return st;
        }
    }
    return CG_OK;
}

/* --- Unique --------------------------------------------------------------------- */

/* Slices of x along an axis: slice i is the elements with that axis
 * coordinate, in row-major order of the others. */
typedef struct unique_view {
    const cg_tensor *x;
    int64_t outer, dim, inner;
} unique_view;

static int unique_cmp(const void *ctx, int64_t a, int64_t b)
{
    const unique_view *v = ctx;
    for (int64_t o = 0; o < v->outer; o++)
        for (int64_t i = 0; i < v->inner; i++) {
            int64_t base = o * v->dim * v->inner + i;
            int c = cg_tens_cmp_elem(v->x, base + a * v->inner, v->x, base + b * v->inner);
            if (c)
                return c;
        }
    return 0;
}

static int index_cmp(const void *ctx, int64_t a, int64_t b)
{
    const int64_t *first = ctx;
    return (first[a] > first[b]) - (first[a] < first[b]);
}

cg_status cg_op_unique(cg_kernel_ctx *k)
{
    const cg_tensor *x;
    cg_tensor *y, *t;
    int64_t dims[CG_MAX_RANK];
    cg_status st = cg_kernel_require(k, 0, &x);
    if (st != CG_OK)
        return st;
    unique_view v = {x, 1, x->numel, 1};
    int64_t axis = -1;
    bool has_axis = cg_kernel_attr(k, "axis") != NULL;
    if (has_axis) {
        if ((st = axis_attr(k, x->rank, &axis)) != CG_OK)
            return st;
        v.dim = x->dims[axis];
        v.outer = cg_tens_dims_prod(x, 0, (int)axis);
        v.inner = cg_tens_dims_prod(x, (int)axis + 1, x->rank);
    }
    bool sorted = cg_attr_int(k, "sorted", 1) != 0;
    int64_t n = v.dim;
    size_t cells = (size_t)(n ? n : 1);
    int64_t *order = cg_kernel_scratch(k, cells * sizeof *order);
    int64_t *tmp = cg_kernel_scratch(k, cells * sizeof *tmp);
    int64_t *group = cg_kernel_scratch(k, cells * sizeof *group); /* slice -> group */
    int64_t *first = cg_kernel_scratch(k, cells * sizeof *first); /* group -> first slice */
    int64_t *count = cg_kernel_scratch(k, cells * sizeof *count);
    int64_t *pos = cg_kernel_scratch(k, cells * sizeof *pos);     /* group -> output slot */
    int64_t *gorder = cg_kernel_scratch(k, cells * sizeof *gorder);
    if (!order || !tmp || !group || !first || !count || !pos || !gorder)
        return cg_kernel_fail(k, CG_NOMEM, "out of memory");
    for (int64_t i = 0; i < n; i++)
        order[i] = i;
    /* Stable sort: equal slices stay in index order, so a group's first
     * member is its first occurrence. */
    cg_tens_sort(order, n, tmp, unique_cmp, &v);
    int64_t groups = 0;
    for (int64_t i = 0; i < n; i++) {
        if (i == 0 || unique_cmp(&v, order[i - 1], order[i]) != 0) {
            first[groups] = order[i];
            count[groups] = 0;
            groups++;
        }
        group[order[i]] = groups - 1;
        count[groups - 1]++;
    }
    for (int64_t g = 0; g < groups; g++)
        gorder[g] = g;
    if (!sorted)
        cg_tens_sort(gorder, groups, tmp, index_cmp, first);
    for (int64_t g = 0; g < groups; g++)
        pos[gorder[g]] = g;

    int yr = has_axis ? x->rank : 1;
    if (has_axis)
        memcpy(dims, x->dims, sizeof dims);
    dims[has_axis ? axis : 0] = groups;
    if ((st = cg_kernel_output(k, 0, x->dtype, yr, dims, &y)) != CG_OK)
        return st;
    for (int64_t o = 0; o < v.outer; o++)
        for (int64_t g = 0; g < groups; g++)
            if ((st = cg_tens_copy(k, y, (o * groups + g) * v.inner, x,
                                   (o * v.dim + first[gorder[g]]) * v.inner, v.inner)) != CG_OK)
                return st;
    if (k->output_count > 1) {
        if ((st = cg_kernel_output(k, 1, CG_DTYPE_INT64, 1, &groups, &t)) != CG_OK)
            return st;
        for (int64_t g = 0; g < groups; g++)
            ((int64_t *)t->data)[g] = first[gorder[g]];
    }
    if (k->output_count > 2) {
        if ((st = cg_kernel_output(k, 2, CG_DTYPE_INT64, 1, &n, &t)) != CG_OK)
            return st;
        for (int64_t i = 0; i < n; i++)
            ((int64_t *)t->data)[i] = pos[group[i]];
    }
    if (k->output_count > 3) {
        if ((st = cg_kernel_output(k, 3, CG_DTYPE_INT64, 1, &groups, &t)) != CG_OK)
            return st;
        for (int64_t g = 0; g < groups; g++)
            ((int64_t *)t->data)[g] = count[gorder[g]];
    }
    return CG_OK;
}
