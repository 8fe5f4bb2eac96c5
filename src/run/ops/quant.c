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

#include "run/ops/kernels.h"
#include "run/ops/nn_common.h"
#include "run/ops/simd.h"

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
    /* double x or scale (the float64 mode): the division in double */
    bool wide = x->dtype == CG_DTYPE_DOUBLE || scale->dtype == CG_DTYPE_DOUBLE;
    for (int64_t i = 0; i < x->numel; i++) {
        int64_t q = q_index(&l, i);
        double sd = cg_tensor_get_f64(scale, q);
        float s = (float)sd;
        double z = zp ? (double)cg_tensor_get_i64(zp, q) : 0.0;
        double v;
        if (x->dtype == CG_DTYPE_INT32)
            v = (double)cg_tensor_get_i64(x, i) / (wide ? sd : (double)s);
        else if (wide)
            v = cg_tensor_get_f64(x, i) / sd;
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
    cg_dtype odt = k->since >= 19 ? scale->dtype : cg_kernel_float_dtype(k, CG_DTYPE_FLOAT);
    if ((st = cg_kernel_output(k, 0, odt, x->rank, x->dims, &y)) != CG_OK)
        return st;
    bool wide = odt == CG_DTYPE_DOUBLE || scale->dtype == CG_DTYPE_DOUBLE;
    for (int64_t i = 0; i < x->numel; i++) {
        int64_t q = q_index(&l, i);
        int64_t z = zp ? cg_tensor_get_i64(zp, q) : 0;
        double sd = cg_tensor_get_f64(scale, q);
        double v = wide ? (double)(cg_tensor_get_i64(x, i) - z) * sd
                        : (double)((float)(cg_tensor_get_i64(x, i) - z) * (float)sd);
        cg_tensor_set_f64(y, i, v);
    }
    return CG_OK;
}

/* DynamicQuantizeLinear as ONNX Runtime 1.22 computes it in float32
 * (GetQuantizationParameter in core/util/qmath.h, MlasQuantizeLinear in
 * core/mlas/lib/quantize.cpp), operation for operation, because a quantizer
 * turns one ulp into a whole step: the range is [min(x, 0), max(x, 0)];
 * scale = max == min ? 1 : (max - min) / 255 (a float division); the zero
 * point is RoundHalfToEven(clamp(0 - min / scale, 0, 255)); each element is
 * x / scale (float division), clamped to [-zp, 255 - zp] in float, rounded
 * to nearest even, plus zp. The spec's formula agrees except where max ==
 * min (the spec divides by zero; ORT uses scale 1). Double input (the
 * float64 mode) runs the same steps in double. */
#define DQL_STEPS(T, xs, n, scale_out, zp_out, yd)                             \
    do {                                                                       \
        T lo = 0, hi = 0;                                                      \
        for (int64_t i = 0; i < (n); i++) {                                    \
            lo = (xs)[i] < lo ? (xs)[i] : lo;                                  \
            hi = (xs)[i] > hi ? (xs)[i] : hi;                                  \
        }                                                                      \
        T sc = hi == lo ? (T)1 : (hi - lo) / (T)255;                           \
        T zp0 = (T)0 - lo / sc;                                                \
        zp0 = zp0 < (T)0 ? (T)0 : zp0 > (T)255 ? (T)255 : zp0;                 \
        int32_t zpi = (int32_t)cg_nn_round_even((double)zp0);                  \
        T qlo = (T)(0 - zpi), qhi = (T)(255 - zpi);                            \
        for (int64_t i = 0; i < (n); i++) {                                    \
            T v = (xs)[i] / sc;                                                \
            v = v < qlo ? qlo : v > qhi ? qhi : v;                             \
            (yd)[i] = (uint8_t)((int32_t)cg_nn_round_even((double)v) + zpi);   \
        }                                                                      \
        *(scale_out) = sc;                                                     \
        *(zp_out) = (uint8_t)zpi;                                              \
    } while (0)

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
    bool wide = x->dtype == CG_DTYPE_DOUBLE;
    const float *xf = wide ? NULL : cg_nn_as_f32(k, x);
    const double *xd = wide ? x->data : NULL;
    if (!wide && !xf)
        return cg_kernel_fail(k, CG_NOMEM, "out of scratch memory");
    /* v - v is 0 for every finite v: one vectorizable pass counts the
     * others, and only a bad input is searched for its first bad element */
    int64_t bad = 0;
    for (int64_t i = 0; i < x->numel; i++)
        bad += wide ? (xd[i] - xd[i]) != 0.0 : (xf[i] - xf[i]) != 0.0f;
    for (int64_t i = 0; bad && i < x->numel; i++) {
        double v = wide ? xd[i] : (double)xf[i];
        if (!isfinite(v))
            return cg_kernel_fail(k, CG_RUNTIME, "input holds %s at %lld (no quantization range)",
                                  isnan(v) ? "NaN" : "an infinity", (long long)i);
    }
    cg_dtype sdt = wide ? CG_DTYPE_DOUBLE : CG_DTYPE_FLOAT;
    if ((st = cg_kernel_output(k, 0, CG_DTYPE_UINT8, x->rank, x->dims, &y)) != CG_OK ||
        (st = cg_kernel_output(k, 1, sdt, 0, NULL, &ys)) != CG_OK ||
        (st = cg_kernel_output(k, 2, CG_DTYPE_UINT8, 0, NULL, &yz)) != CG_OK)
        return st;
    uint8_t *yd = y->data, *zd = yz->data;
    if (wide) {
        DQL_STEPS(double, xd, x->numel, (double *)ys->data, zd, yd);
    } else {
        /* the same steps; the per-element ones through the vector tables:
         * clamping x / scale to [-zp, 255 - zp] before rounding is clamping
         * round(x / scale) + zp to [0, 255] after (the bounds are integers) */
        float lo = 0, hi = 0;
        for (int64_t i = 0; i < x->numel; i++) {
            lo = xf[i] < lo ? xf[i] : lo;
            hi = xf[i] > hi ? xf[i] : hi;
        }
        float sc = hi == lo ? 1.0f : (hi - lo) / 255.0f;
        float zp0 = 0.0f - lo / sc;
        zp0 = zp0 < 0.0f ? 0.0f : zp0 > 255.0f ? 255.0f : zp0;
        int32_t zpi = (int32_t)cg_nn_round_even((double)zp0);
        cg_simd_ops_get(cg_kernel_simd(k))->quantize_u8(yd, xf, x->numel, sc, (float)zpi);
        *(float *)ys->data = sc;
        *zd = (uint8_t)zpi;
    }
    if (!isfinite(cg_tensor_get_f64(ys, 0)))
        return cg_kernel_fail(k, CG_RUNTIME, "input range is too wide: the scale is not finite");
    return CG_OK;
}
