/*
 * Row-wise normalizations: Softmax, LogSoftmax, Hardmax and LpNormalization.
 *
 * Each sees the input as [outer, n, inner] and transforms every row of n
 * elements (stride inner). Before opset 13 the Softmax family coerced the
 * input to 2-D at `axis` (row = everything from axis on: inner = 1, n =
 * prod(dims[axis:])); from 13 a row runs along the single axis. float32
 * Softmax and LogSoftmax round like ONNX Runtime 1.22's MLAS kernels
 * (row_softmax_f32); other float types go through double and round once.
 */
#include <float.h>
#include <math.h>
#include <string.h>

#include "run/ops/kernels.h"
#include "run/ops/simd.h"
#include "run/ops/tensor_util.h"

typedef enum row_kind { ROW_SOFTMAX, ROW_LOGSOFTMAX, ROW_HARDMAX, ROW_LP1, ROW_LP2 } row_kind;

/* Transforms one row in place. */
static void row_transform(row_kind kind, double *v, int64_t n)
{
    if (kind == ROW_LP1 || kind == ROW_LP2) {
        double s = 0.0;
        for (int64_t i = 0; i < n; i++)
            s += kind == ROW_LP1 ? fabs(v[i]) : v[i] * v[i];
        if (kind == ROW_LP2)
            s = sqrt(s);
        for (int64_t i = 0; i < n; i++)
            v[i] /= s; /* 0/0 = NaN for an all-zero row, as the spec's x / norm */
        return;
    }
    int64_t arg = 0;
    double m = -INFINITY;
    for (int64_t i = 0; i < n; i++) {
        if (v[i] > m || (isnan(v[i]) && !isnan(m))) {
            m = v[i];
            arg = i;
        }
    }
    if (kind == ROW_HARDMAX) {
        for (int64_t i = 0; i < n; i++)
            v[i] = i == arg ? 1.0 : 0.0;
        return;
    }
    if (isinf(m) && m < 0)
        m = 0.0; /* all -inf: keep exp() finite-safe; results follow the math */
    double s = 0.0;
    for (int64_t i = 0; i < n; i++)
        s += exp(v[i] - m);
    double ls = log(s);
    for (int64_t i = 0; i < n; i++)
        v[i] = kind == ROW_SOFTMAX ? exp(v[i] - m) / s : v[i] - m - ls;
}

/* float32 softmax / log-softmax of one contiguous row as ONNX Runtime 1.22
 * computes it (MlasComputeSoftmaxThreaded): the maximum from the lowest
 * float, the exps and their float sum by sumexp_f32 (MLAS's polynomial and
 * 16 lanes), then y = e * (1 / sum), or log-softmax (x - max) - logf(sum). */
static void row_softmax_f32(const cg_simd_ops *ops, bool log_form, const float *in, float *out,
                            int64_t n)
{
    float m = ops->max_f32(in, n);
    if (m < -FLT_MAX)
        m = -FLT_MAX; /* MLAS starts its maximum there */
    float negmax = -m;
    float s = ops->sumexp_f32(log_form ? NULL : out, in, negmax, n);
    if (log_form) {
        float ls = logf(s);
        for (int64_t i = 0; i < n; i++) {
            float v = in[i] + negmax;
            out[i] = v - ls;
        }
    } else {
        float inv = 1.0f / s;
        for (int64_t i = 0; i < n; i++)
            out[i] *= inv;
    }
}

static cg_status row_op(cg_kernel_ctx *k, row_kind kind, bool coerce_2d, int64_t axis_default)
{
    const cg_tensor *x;
    cg_tensor *out;
    int64_t axis;
    cg_status st = cg_kernel_require(k, 0, &x);
    if (st != CG_OK)
        return st;
    if (!cg_dtype_is_float(x->dtype))
        return cg_kernel_fail(k, CG_INVALID, "input must be floating point, got %s",
                              cg_dtype_name(x->dtype));
    int64_t a = cg_attr_int(k, "axis", axis_default);
    int r = x->rank;
    if (coerce_2d) {
        /* axis may equal rank here ([N, 1] view). */
        if (a < -(int64_t)r || a > r)
            return cg_kernel_fail(k, CG_INVALID, "axis %lld out of range for rank %d",
                                  (long long)a, r);
        axis = a < 0 ? a + r : a;
    } else {
        if (r == 0)
            return cg_kernel_fail(k, CG_INVALID, "input must have rank >= 1");
        if (!cg_normalize_axis(a, r, &axis))
            return cg_kernel_fail(k, CG_INVALID, "axis %lld out of range for rank %d",
                                  (long long)a, r);
    }
    int64_t outer = 1, n = 1, inner = 1;
    for (int d = 0; d < axis; d++)
        outer *= x->dims[d];
    if (coerce_2d) {
        for (int d = (int)axis; d < r; d++)
            n *= x->dims[d];
    } else {
        n = x->dims[axis];
        for (int d = (int)axis + 1; d < r; d++)
            inner *= x->dims[d];
    }
    if ((st = cg_kernel_output_uninit(k, 0, x->dtype, r, x->dims, &out)) != CG_OK)
        return st;
    if (out->numel == 0)
        return CG_OK;
    if (x->dtype == CG_DTYPE_FLOAT && (kind == ROW_SOFTMAX || kind == ROW_LOGSOFTMAX)) {
        const cg_simd_ops *ops = cg_simd_ops_get(cg_kernel_simd(k));
        const float *xf = x->data;
        float *yf = out->data;
        if (inner == 1) {
            for (int64_t o = 0; o < outer; o++)
                row_softmax_f32(ops, kind == ROW_LOGSOFTMAX, xf + o * n, yf + o * n, n);
            return CG_OK;
        }
        /* a strided row: gathered, as ORT transposes the axis last */
        float *row = cg_kernel_scratch(k, 2 * (size_t)n * sizeof *row);
        if (!row)
            return cg_kernel_fail(k, CG_NOMEM, "out of memory");
        for (int64_t o = 0; o < outer; o++)
            for (int64_t i = 0; i < inner; i++) {
                int64_t base = o * n * inner + i;
                for (int64_t j = 0; j < n; j++)
                    row[j] = xf[base + j * inner];
                row_softmax_f32(ops, kind == ROW_LOGSOFTMAX, row, row + n, n);
                for (int64_t j = 0; j < n; j++)
                    yf[base + j * inner] = row[n + j];
            }
        return CG_OK;
    }
    double *buf = cg_kernel_scratch(k, (size_t)n * sizeof *buf);
    if (!buf)
        return cg_kernel_fail(k, CG_NOMEM, "out of memory");
    for (int64_t o = 0; o < outer; o++)
        for (int64_t i = 0; i < inner; i++) {
            int64_t base = o * n * inner + i;
            for (int64_t j = 0; j < n; j++)
                buf[j] = cg_tensor_get_f64(x, base + j * inner);
            row_transform(kind, buf, n);
            for (int64_t j = 0; j < n; j++)
                cg_tensor_set_f64(out, base + j * inner, buf[j]);
        }
    return CG_OK;
}

cg_status cg_op_softmax(cg_kernel_ctx *k)
{
    return row_op(k, ROW_SOFTMAX, k->since < 13, k->since < 13 ? 1 : -1);
}

cg_status cg_op_log_softmax(cg_kernel_ctx *k)
{
    return row_op(k, ROW_LOGSOFTMAX, k->since < 13, k->since < 13 ? 1 : -1);
}

cg_status cg_op_hardmax(cg_kernel_ctx *k)
{
    return row_op(k, ROW_HARDMAX, k->since < 13, k->since < 13 ? 1 : -1);
}

cg_status cg_op_lp_normalization(cg_kernel_ctx *k)
{
    int64_t p = cg_attr_int(k, "p", 2);
    if (p != 1 && p != 2)
        return cg_kernel_fail(k, CG_INVALID, "p must be 1 or 2, got %lld", (long long)p);
    return row_op(k, p == 1 ? ROW_LP1 : ROW_LP2, false, -1);
}
