/*
 * Linear quantization: QuantizeLinear, DequantizeLinear and
 * DynamicQuantizeLinear.
 *
 * Scales and zero points are per tensor (one value), per axis (a 1-D tensor
 * along `axis`) or, from opset 21, blocked (same rank as x, `axis` divided
 * into blocks of block_size). Quantization divides in float32 as the scales
 * are float32, rounds half to even and saturates to the integer type; the
 * 8/16-bit integer types are supported, float8 and 4-bit types are not.
 */
#include <math.h>
#include <string.h>

#include "run/ops/nn_common.h"

/* How element i of x finds its scale / zero point. */
typedef struct q_layout {
    int64_t axis_len, inner; /* x dims: outer x axis_len x inner */
    int64_t mode;            /* 0 scalar, 1 per-axis, 2 blocked */
    int64_t block, blocks;   /* blocked: block size, scale entries along axis */
} q_layout;

static int64_t q_index(const q_layout *l, int64_t i)
{
    if (l->mode == 0)
        return 0;
    int64_t a = (i / l->inner) % l->axis_len;
    if (l->mode == 1)
        return a;
    int64_t outer = i / (l->inner * l->axis_len), in = i % l->inner;
    return (outer * l->blocks + a / l->block) * l->inner + in;
}

static cg_status q_layout_init(cg_kernel_ctx *k, const cg_tensor *x, const cg_tensor *scale,
                               const cg_tensor *zp, q_layout *l)
{
    memset(l, 0, sizeof(*l));
    l->axis_len = 1;
    l->inner = 1;
    int64_t block = k->since >= 21 ? cg_attr_int(k, "block_size", 0) : 0;
    if (zp && (zp->rank != scale->rank || memcmp(zp->dims, scale->dims, sizeof(int64_t) * (size_t)scale->rank) != 0) &&
        !(zp->numel == 1 && scale->numel == 1))
        return cg_kernel_fail(k, CG_INVALID, "zero point and scale shapes differ");
    if (scale->numel == 1 && block == 0 && scale->rank <= 1)
        return CG_OK;
    int64_t axis;
    int64_t raw = cg_attr_int(k, "axis", 1);
    if (!cg_normalize_axis(raw, x->rank, &axis))
        return cg_kernel_fail(k, CG_INVALID, "axis %lld out of range for rank %d",
                              (long long)raw, x->rank);
    l->axis_len = x->dims[axis];
    l->inner = cg_nn_prod(x->rank - (int)axis - 1, x->dims + axis + 1);
    if (l->axis_len == 0 || l->inner == 0)
        return CG_OK;
    if (block == 0) {
        if (scale->rank != 1 || scale->dims[0] != l->axis_len)
            return cg_kernel_fail(k, CG_INVALID, "per-axis scale must be 1-D of %lld values",
                                  (long long)l->axis_len);
        l->mode = 1;
        return CG_OK;
    }
    if (block < 0)
        return cg_kernel_fail(k, CG_INVALID, "block_size is %lld", (long long)block);
    if (scale->rank != x->rank)
        return cg_kernel_fail(k, CG_INVALID, "blocked scale must have x's rank %d", x->rank);
    l->block = block;
    l->blocks = (l->axis_len + block - 1) / block;
    for (int d = 0; d < x->rank; d++) {
        int64_t want = d == axis ? l->blocks : x->dims[d];
        if (scale->dims[d] != want)
            return cg_kernel_fail(k, CG_INVALID, "blocked scale dim %d is %lld, expected %lld", d,
                                  (long long)scale->dims[d], (long long)want);
    }
    l->mode = 2;
    return CG_OK;
}

static bool q_int_type(cg_dtype dt)
{
    return dt == CG_DTYPE_INT8 || dt == CG_DTYPE_UINT8 || dt == CG_DTYPE_INT16 ||
           dt == CG_DTYPE_UINT16;
}

cg_status cg_op_quantizelinear(cg_kernel_ctx *k)
{
    const cg_tensor *x, *scale, *zp;
    cg_tensor *y;
    cg_status st;
    q_layout l;
    if ((st = cg_kernel_require(k, 0, &x)) != CG_OK || (st = cg_kernel_require(k, 1, &scale)) != CG_OK)
        return st;
    zp = cg_kernel_input(k, 2);
    if (!cg_nn_is_real(x->dtype) && x->dtype != CG_DTYPE_INT32)
        return cg_kernel_fail(k, CG_UNSUPPORTED, "QuantizeLinear of %s", cg_dtype_name(x->dtype));
    if (!cg_nn_is_real(scale->dtype))
        return cg_kernel_fail(k, CG_INVALID, "y_scale is %s", cg_dtype_name(scale->dtype));
    cg_dtype odt = CG_DTYPE_UINT8;
    if (zp)
        odt = zp->dtype;
    else if (k->since >= 21 && cg_attr_int(k, "output_dtype", 0) != 0)
        odt = (cg_dtype)cg_attr_int(k, "output_dtype", 0);
    if (!q_int_type(odt))
        return cg_kernel_fail(k, CG_UNSUPPORTED, "quantizing to type %d (only 8/16-bit integers)",
                              (int)odt);
    if ((st = q_layout_init(k, x, scale, zp, &l)) != CG_OK)
        return st;
    if ((st = cg_kernel_output(k, 0, odt, x->rank, x->dims, &y)) != CG_OK)
        return st;
    for (int64_t i = 0; i < x->numel; i++) {
        int64_t q = q_index(&l, i);
        float s = (float)cg_tensor_get_f64(scale, q);
        double z = zp ? (double)cg_tensor_get_i64(zp, q) : 0.0;
        double v;
        if (x->dtype == CG_DTYPE_INT32)
            v = (double)cg_tensor_get_i64(x, i) / (double)s;
        else
            v = (double)((float)cg_tensor_get_f64(x, i) / s);
        cg_tensor_set_i64(y, i, cg_nn_saturate(odt, cg_nn_round_even(v) + z));
    }
    return CG_OK;
}

cg_status cg_op_dequantizelinear(cg_kernel_ctx *k)
{
    const cg_tensor *x, *scale, *zp;
    cg_tensor *y;
    cg_status st;
    q_layout l;
    if ((st = cg_kernel_require(k, 0, &x)) != CG_OK || (st = cg_kernel_require(k, 1, &scale)) != CG_OK)
        return st;
    zp = cg_kernel_input(k, 2);
    if (!q_int_type(x->dtype) && x->dtype != CG_DTYPE_INT32)
        return cg_kernel_fail(k, CG_UNSUPPORTED, "DequantizeLinear of %s", cg_dtype_name(x->dtype));
    if (!cg_nn_is_real(scale->dtype))
        return cg_kernel_fail(k, CG_INVALID, "x_scale is %s", cg_dtype_name(scale->dtype));
    if (zp && zp->dtype != x->dtype)
        return cg_kernel_fail(k, CG_INVALID, "x_zero_point is %s but x is %s",
                              cg_dtype_name(zp->dtype), cg_dtype_name(x->dtype));
    if ((st = q_layout_init(k, x, scale, zp, &l)) != CG_OK)
        return st;
    cg_dtype odt = k->since >= 19 ? scale->dtype : CG_DTYPE_FLOAT;
    if ((st = cg_kernel_output(k, 0, odt, x->rank, x->dims, &y)) != CG_OK)
        return st;
    for (int64_t i = 0; i < x->numel; i++) {
        int64_t q = q_index(&l, i);
        int64_t z = zp ? cg_tensor_get_i64(zp, q) : 0;
        float s = (float)cg_tensor_get_f64(scale, q);
        cg_tensor_set_f64(y, i, (double)((float)(cg_tensor_get_i64(x, i) - z) * s));
    }
    return CG_OK;
}

cg_status cg_op_dynamicquantizelinear(cg_kernel_ctx *k)
{
    const cg_tensor *x;
    cg_tensor *y, *ys, *yz;
    cg_status st;
    if ((st = cg_kernel_require(k, 0, &x)) != CG_OK)
        return st;
    if (!cg_nn_is_real(x->dtype))
        return cg_kernel_fail(k, CG_UNSUPPORTED, "DynamicQuantizeLinear of %s",
                              cg_dtype_name(x->dtype));
    const float *xf = cg_nn_as_f32(k, x);
    if (!xf)
        return cg_kernel_fail(k, CG_NOMEM, "out of scratch memory");
    /* The range always includes 0 so that 0 is exactly representable. */
    float lo = 0.0f, hi = 0.0f;
    for (int64_t i = 0; i < x->numel; i++) {
        if (xf[i] != xf[i])
            return cg_kernel_fail(k, CG_RUNTIME, "input holds NaN at %lld", (long long)i);
        lo = xf[i] < lo ? xf[i] : lo;
        hi = xf[i] > hi ? xf[i] : hi;
    }
    float scale = (hi - lo) / 255.0f;
    if (!isfinite(scale))
        return cg_kernel_fail(k, CG_RUNTIME, "input range is not finite");
    int64_t zp = scale > 0 ? cg_nn_saturate(CG_DTYPE_UINT8, cg_nn_round_even((double)(0.0f - lo / scale)))
                           : 0;
    if ((st = cg_kernel_output(k, 0, CG_DTYPE_UINT8, x->rank, x->dims, &y)) != CG_OK ||
        (st = cg_kernel_output(k, 1, CG_DTYPE_FLOAT, 0, NULL, &ys)) != CG_OK ||
        (st = cg_kernel_output(k, 2, CG_DTYPE_UINT8, 0, NULL, &yz)) != CG_OK)
        return st;
    ((float *)ys->data)[0] = scale;
    ((uint8_t *)yz->data)[0] = (uint8_t)zp;
    uint8_t *yd = y->data;
    for (int64_t i = 0; i < x->numel; i++)
        yd[i] = scale > 0 ? (uint8_t)cg_nn_saturate(CG_DTYPE_UINT8,
                                                    cg_nn_round_even((double)(xf[i] / scale)) + (double)zp)
                          : 0;
    return CG_OK;
}
