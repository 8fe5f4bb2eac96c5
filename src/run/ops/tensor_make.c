/*
 * Kernels that make tensors from attributes or scalars rather than
 * rearranging an input: Constant (every value_* form, sparse densified),
 * ConstantOfShape, Range, EyeLike and Trilu (which keeps one triangle).
 */
#include <math.h>
#include <string.h>

#include "convgate/runtime.h"
#include "run/ops/kernels.h"
#include "run/ops/tensor_util.h"

/* --- Constant ------------------------------------------------------------------ */

/* Densifies a SparseTensorProto: indices are [NNZ] linear or [NNZ, rank]. */
static cg_status constant_sparse(cg_kernel_ctx *k, const cg_sparse_tensor_proto *sp)
{
    cg_value *vals = NULL, *idx = NULL;
    cg_tensor *out;
    int64_t dims[CG_MAX_RANK];
    cg_status st;
    if (!sp->values || !sp->indices)
        return cg_kernel_fail(k, CG_INVALID, "sparse_value lacks values or indices");
    if (sp->rank > CG_MAX_RANK)
        return cg_kernel_fail(k, CG_UNSUPPORTED, "sparse_value rank %zu exceeds %d", sp->rank,
                              CG_MAX_RANK);
    int r = (int)sp->rank;
    for (int d = 0; d < r; d++)
        dims[d] = sp->dims[d];
    if ((st = cg_value_from_tensor_proto(sp->values, &vals, k->err)) != CG_OK ||
        (st = cg_value_from_tensor_proto(sp->indices, &idx, k->err)) != CG_OK) {
        cg_error_prefix(k->err, "node '%s' (Constant): sparse_value: ",
                        k->node->name ? k->node->name : "");
        goto done;
    }
    const cg_tensor *v = &vals->tensor, *ix = &idx->tensor;
    int64_t nnz = v->numel;
    if ((st = cg_kernel_output(k, 0, v->dtype, r, dims, &out)) != CG_OK)
        goto done;
    bool linear = ix->rank == 1;
    if (!cg_dtype_is_int(ix->dtype) || v->rank != 1 || (linear && ix->dims[0] != nnz) ||
        (!linear && (ix->rank != 2 || ix->dims[0] != nnz || ix->dims[1] != r))) {
        st = cg_kernel_fail(k, CG_INVALID, "sparse_value indices do not match %lld values",
                            (long long)nnz);
        goto done;
    }
    int64_t str[CG_MAX_RANK];
    cg_tens_strides(r, dims, str);
    for (int64_t i = 0; i < nnz; i++) {
        int64_t off = 0;
        if (linear) {
            off = cg_tensor_get_i64(ix, i);
            if (off < 0 || off >= out->numel) {
                st = cg_kernel_fail(k, CG_INVALID, "sparse_value index %lld out of range "
                                    "[0, %lld)", (long long)off, (long long)out->numel);
                goto done;
            }
        } else {
            for (int d = 0; d < r; d++) {
                int64_t c = cg_tensor_get_i64(ix, i * r + d);
                if (c < 0 || c >= dims[d]) {
                    st = cg_kernel_fail(k, CG_INVALID, "sparse_value index %lld out of range "
                                        "for dim %d of size %lld", (long long)c, d,
                                        (long long)dims[d]);
                    goto done;
                }
                off += c * str[d];
            }
        }
        if ((st = cg_tens_copy(k, out, off, v, i, 1)) != CG_OK)
            goto done;
    }
done:
    cg_value_free(vals);
    cg_value_free(idx);
    return st;
}

cg_status cg_op_constant(cg_kernel_ctx *k)
{
    cg_tensor *out;
    cg_status st;
    const cg_attr *a;
    if ((a = cg_kernel_attr(k, "value")) != NULL) {
        cg_tensor *t;
        if ((st = cg_attr_tensor(k, "value", &t)) != CG_OK)
            return st;
        return cg_tens_output_copy(k, 0, t, t->rank, t->dims, NULL);
    }
    if ((a = cg_kernel_attr(k, "sparse_value")) != NULL) {
        if (!a->sparse_tensor)
            return cg_kernel_fail(k, CG_INVALID, "sparse_value holds no sparse tensor");
        return constant_sparse(k, a->sparse_tensor);
    }
    if ((a = cg_kernel_attr(k, "value_float")) != NULL) {
        cg_dtype dt = cg_kernel_float_dtype(k, CG_DTYPE_FLOAT);
        if ((st = cg_kernel_output(k, 0, dt, 0, NULL, &out)) != CG_OK)
            return st;
        cg_tensor_set_f64(out, 0, a->f);
        return CG_OK;
    }
    if ((a = cg_kernel_attr(k, "value_int")) != NULL) {
        if ((st = cg_kernel_output(k, 0, CG_DTYPE_INT64, 0, NULL, &out)) != CG_OK)
            return st;
        *(int64_t *)out->data = a->i;
        return CG_OK;
    }
    if ((a = cg_kernel_attr(k, "value_floats")) != NULL) {
        int64_t n = (int64_t)a->floats_count;
        cg_dtype dt = cg_kernel_float_dtype(k, CG_DTYPE_FLOAT);
        if ((st = cg_kernel_output(k, 0, dt, 1, &n, &out)) != CG_OK)
            return st;
        for (int64_t i = 0; i < n; i++)
            cg_tensor_set_f64(out, i, a->floats[i]);
        return CG_OK;
    }
    if ((a = cg_kernel_attr(k, "value_ints")) != NULL) {
        int64_t n = (int64_t)a->ints_count;
        if ((st = cg_kernel_output(k, 0, CG_DTYPE_INT64, 1, &n, &out)) != CG_OK)
            return st;
        if (n)
            memcpy(out->data, a->ints, (size_t)n * sizeof(int64_t));
        return CG_OK;
    }
    if ((a = cg_kernel_attr(k, "value_string")) != NULL) {
        if ((st = cg_kernel_output(k, 0, CG_DTYPE_STRING, 0, NULL, &out)) != CG_OK)
            return st;
        if (cg_tensor_set_string(out, 0, a->s.data ? (const char *)a->s.data : "", a->s.len) !=
            CG_OK)
            return cg_kernel_fail(k, CG_NOMEM, "out of memory");
        return CG_OK;
    }
    if ((a = cg_kernel_attr(k, "value_strings")) != NULL) {
        int64_t n = (int64_t)a->strings_count;
        if ((st = cg_kernel_output(k, 0, CG_DTYPE_STRING, 1, &n, &out)) != CG_OK)
            return st;
        for (int64_t i = 0; i < n; i++) {
            const cg_bytes *b = &a->strings[i];
            if (cg_tensor_set_string(out, i, b->data ? (const char *)b->data : "", b->len) !=
                CG_OK)
                return cg_kernel_fail(k, CG_NOMEM, "out of memory");
        }
        return CG_OK;
    }
    return cg_kernel_fail(k, CG_INVALID, "no value attribute is set");
}

cg_status cg_op_constant_of_shape(cg_kernel_ctx *k)
{
    const cg_tensor *shape_t;
    cg_tensor *out, *value = NULL;
    int64_t dims[CG_MAX_RANK];
    size_t n;
    cg_status st = cg_kernel_require(k, 0, &shape_t);
    if (st != CG_OK)
        return st;
    if ((st = cg_tens_read_ints(k, shape_t, "shape", dims, CG_MAX_RANK, &n)) != CG_OK)
        return st;
    for (size_t i = 0; i < n; i++)
        if (dims[i] < 0)
            return cg_kernel_fail(k, CG_INVALID, "shape[%zu] = %lld is negative", i,
                                  (long long)dims[i]);
    cg_dtype dt = cg_kernel_float_dtype(k, CG_DTYPE_FLOAT);
    if (cg_kernel_attr(k, "value")) {
        if ((st = cg_attr_tensor(k, "value", &value)) != CG_OK)
            return st;
        if (value->numel != 1)
            return cg_kernel_fail(k, CG_INVALID, "value must hold one element, got %lld",
                                  (long long)value->numel);
        dt = value->dtype;
    }
    /* cg_kernel_output checks the byte size against the limit before it
     * allocates, so a huge shape fails here without touching memory. */
    if ((st = cg_kernel_output(k, 0, dt, (int)n, dims, &out)) != CG_OK)
        return st;
    if (!value)
        return CG_OK;
    for (int64_t i = 0; i < out->numel; i++)
        if ((st = cg_tens_copy(k, out, i, value, 0, 1)) != CG_OK)
            return st;
    return CG_OK;
}

/* --- Range -------------------------------------------------------------------- */

static cg_status scalar_input(cg_kernel_ctx *k, size_t i, const char *what,
                              const cg_tensor **out)
{
    cg_status st = cg_kernel_require(k, i, out);
    if (st != CG_OK)
        return st;
    if ((*out)->numel != 1)
        return cg_kernel_fail(k, CG_INVALID, "%s must be a scalar, got %lld elements", what,
                              (long long)(*out)->numel);
    return CG_OK;
}

cg_status cg_op_range(cg_kernel_ctx *k)
{
    const cg_tensor *ts, *tl, *td;
    cg_tensor *out;
    cg_status st;
    if ((st = scalar_input(k, 0, "start", &ts)) != CG_OK ||
        (st = scalar_input(k, 1, "limit", &tl)) != CG_OK ||
        (st = scalar_input(k, 2, "delta", &td)) != CG_OK)
        return st;
    cg_dtype dt = ts->dtype;
    if (tl->dtype != dt || td->dtype != dt)
        return cg_kernel_fail(k, CG_INVALID, "start, limit and delta must share a type");
    int64_t n;
    if (cg_dtype_is_int(dt)) {
        /* Exact: count via the unsigned distance so extreme values do not
         * overflow. */
        int64_t s = cg_tensor_get_i64(ts, 0), l = cg_tensor_get_i64(tl, 0),
                d = cg_tensor_get_i64(td, 0);
        if (d == 0)
            return cg_kernel_fail(k, CG_INVALID, "delta is 0");
        uint64_t dist, step;
        if (d > 0 && l > s) {
            dist = (uint64_t)l - (uint64_t)s;
            step = (uint64_t)d;
        } else if (d < 0 && l < s) {
            dist = (uint64_t)s - (uint64_t)l;
            step = (uint64_t)0 - (uint64_t)d;
        } else {
            dist = 0;
            step = 1;
        }
        uint64_t cnt = dist ? (dist - 1) / step + 1 : 0;
        if (cnt > (uint64_t)INT64_MAX)
            return cg_kernel_fail(k, CG_LIMIT, "range has too many elements");
        n = (int64_t)cnt;
        if ((st = cg_kernel_output(k, 0, dt, 1, &n, &out)) != CG_OK)
            return st;
        for (int64_t i = 0; i < n; i++)
            cg_tensor_set_i64(out, i, (int64_t)((uint64_t)s + (uint64_t)i * (uint64_t)d));
        return CG_OK;
    }
    if (!cg_dtype_is_float(dt))
        return cg_kernel_fail(k, CG_INVALID, "unsupported type %s", cg_dtype_name(dt));
    double s = cg_tensor_get_f64(ts, 0), l = cg_tensor_get_f64(tl, 0), d = cg_tensor_get_f64(td, 0);
    if (d == 0.0 || !isfinite(s) || !isfinite(l) || !isfinite(d))
        return cg_kernel_fail(k, CG_INVALID, "start %g, limit %g, delta %g give no finite "
                              "range", s, l, d);
    double cnt = ceil((l - s) / d);
    if (cnt < 0)
        cnt = 0;
    if (cnt >= 9.2e18)
        return cg_kernel_fail(k, CG_LIMIT, "range has too many elements (%g)", cnt);
    n = (int64_t)cnt;
    if ((st = cg_kernel_output(k, 0, dt, 1, &n, &out)) != CG_OK)
        return st;
    if (dt == CG_DTYPE_FLOAT) {
        /* ONNX's reference accumulates in the element type. */
        float fs = (float)s, fd = (float)d, *o = out->data;
        for (int64_t i = 0; i < n; i++)
            o[i] = fs + (float)i * fd;
        return CG_OK;
    }
    for (int64_t i = 0; i < n; i++)
        cg_tensor_set_f64(out, i, s + (double)i * d);
    return CG_OK;
}

/* --- EyeLike, Trilu ------------------------------------------------------------- */

cg_status cg_op_eye_like(cg_kernel_ctx *k)
{
    const cg_tensor *x;
    cg_tensor *out;
    cg_status st = cg_kernel_require(k, 0, &x);
    if (st != CG_OK)
        return st;
    if (x->rank != 2)
        return cg_kernel_fail(k, CG_INVALID, "input must be 2-D, got rank %d", x->rank);
    int64_t dt_attr = cg_attr_int(k, "dtype", x->dtype);
    if (!cg_dtype_valid(dt_attr) || dt_attr == CG_DTYPE_STRING ||
        cg_dtype_size((cg_dtype)dt_attr) == 0 ||
        !(cg_dtype_is_int((cg_dtype)dt_attr) || cg_dtype_is_float((cg_dtype)dt_attr) ||
          dt_attr == CG_DTYPE_BOOL))
        return cg_kernel_fail(k, CG_INVALID, "dtype %lld is not supported", (long long)dt_attr);
    int64_t off = cg_attr_int(k, "k", 0);
    if ((st = cg_kernel_output(k, 0, (cg_dtype)dt_attr, 2, x->dims, &out)) != CG_OK)
        return st;
    int64_t rows = x->dims[0], cols = x->dims[1];
    for (int64_t i = 0; i < rows; i++) {
        if (off > cols || off < -rows) /* avoids i + off overflowing */
            break;
        int64_t j = i + off;
        if (j >= 0 && j < cols)
            cg_tensor_set_i64(out, i * cols + j, 1);
    }
    return CG_OK;
}

cg_status cg_op_trilu(cg_kernel_ctx *k)
{
    const cg_tensor *x, *kt;
    cg_tensor *out;
    cg_status st = cg_kernel_require(k, 0, &x);
    if (st != CG_OK)
        return st;
    if (x->rank < 2)
        return cg_kernel_fail(k, CG_INVALID, "input must have rank >= 2, got %d", x->rank);
    int64_t diag = 0;
    if ((kt = cg_kernel_input(k, 1)) &&
        (st = cg_tens_read_scalar_int(k, kt, "k", &diag)) != CG_OK)
        return st;
    bool upper = cg_attr_int(k, "upper", 1) != 0;
    if ((st = cg_kernel_output(k, 0, x->dtype, x->rank, x->dims, &out)) != CG_OK)
        return st;
    int64_t rows = x->dims[x->rank - 2], cols = x->dims[x->rank - 1];
    if (out->numel == 0)
        return CG_OK;
    int64_t mats = out->numel / (rows * cols);
    /* Clamp so i + diag cannot overflow; beyond +-(rows + cols) nothing changes. */
    int64_t lim = rows + cols;
    diag = diag > lim ? lim : diag < -lim ? -lim : diag;
    for (int64_t m = 0; m < mats; m++) {
        for (int64_t i = 0; i < rows; i++) {
            int64_t lo, hi; /* kept columns [lo, hi) */
            if (upper) {
                lo = i + diag;
                hi = cols;
            } else {
                lo = 0;
                hi = i + diag + 1;
            }
            lo = lo < 0 ? 0 : lo > cols ? cols : lo;
            hi = hi < 0 ? 0 : hi > cols ? cols : hi;
            int64_t row = (m * rows + i) * cols;
            if (hi > lo && (st = cg_tens_copy(k, out, row + lo, x, row + lo, hi - lo)) != CG_OK)
                return st;
        }
    }
    return CG_OK;
}
