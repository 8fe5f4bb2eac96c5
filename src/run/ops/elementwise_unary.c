/*
 * Unary elementwise ops: math functions (Sqrt, Exp, Sin, ...), activations
 * (Relu, Sigmoid, Elu, Gelu, ...), Abs/Neg/Sign, IsNaN/IsInf, Not,
 * BitwiseNot, Clip and Shrink.
 *
 * Float rows are written once for float and double with <tgmath.h>, so
 * exp(x) is expf for float: float32 inputs compute in float32 like the
 * reference (float16/bfloat16 are widened to float32 by the driver).
 * Activations are written in their numerically stable forms (Sigmoid and
 * Softplus never evaluate exp of a large positive number).
 */
#include <float.h>
#include <math.h>
#include <string.h>
#include <tgmath.h>

#include "run/ops/elementwise.h"
#include "run/ops/kernels.h"
#include "run/ops/simd.h"

#define EW_SQRT1_2 0.70710678118654752440  /* 1/sqrt(2) */
#define EW_SQRT2_PI 0.79788456080286535588 /* sqrt(2/pi) */

/* Helpers needing locals, one per float kind (K is f32 or f64). */
#define EW_DEF_FLOAT_HELPERS(DT, T, SFX, W, K, A)                              \
    static inline T ew_h_sigmoid_##K(T x)                                        \
    {                                                                          \
        const T e = exp(-fabs(x));                                             \
        const T r = (T)1 / ((T)1 + e);                                         \
        return x >= 0 ? r : e * r;                                             \
    }                                                                          \
    static inline T ew_h_softplus_##K(T x)                                       \
    {                                                                          \
        return x > 0 ? x + log1p(exp(-x)) : log1p(exp(x));                     \
    }                                                                          \
    static inline T ew_h_hardsigmoid_##K(T x, T alpha, T beta)                   \
    {                                                                          \
        const T v = alpha * x + beta;                                          \
        return v < 0 ? (T)0 : (v > 1 ? (T)1 : v);                              \
    }                                                                          \
    static inline T ew_h_gelu_tanh_##K(T x)                                      \
    {                                                                          \
        const T inner = (T)EW_SQRT2_PI * (x + (T)0.044715 * x * x * x);        \
        return (T)0.5 * x * ((T)1 + tanh(inner));                              \
    }
CG_EW_FLOATS(EW_DEF_FLOAT_HELPERS, _)

/* Clip: the lower bound first, then the upper, so min > max yields max as
 * the spec requires; NaN passes through. */
#define EW_DEF_CLIP(DT, T, SFX, W, K, A)                                       \
    static inline T ew_h_clip_##SFX(T x, const cg_ew_params *p)                  \
    {                                                                          \
        const T t = x < p->lo_##K ? (T)p->lo_##K : x;                          \
        return t > p->hi_##K ? (T)p->hi_##K : t;                               \
    }
CG_EW_NUMS(EW_DEF_CLIP, _)

/* --- float-only ops ------------------------------------------------------------ */

#define sqrt_E(T, W, K) sqrt(x)
#define exp_E(T, W, K) exp(x)
#define log_E(T, W, K) log(x)
#define ceil_E(T, W, K) ceil(x)
#define floor_E(T, W, K) floor(x)
#define round_E(T, W, K) rint(x) /* default rounding mode: half to even */
#define erf_E(T, W, K) erf(x)
#define sin_E(T, W, K) sin(x)
#define cos_E(T, W, K) cos(x)
#define tan_E(T, W, K) tan(x)
#define asin_E(T, W, K) asin(x)
#define acos_E(T, W, K) acos(x)
#define atan_E(T, W, K) atan(x)
#define sinh_E(T, W, K) sinh(x)
#define cosh_E(T, W, K) cosh(x)
#define tanh_E(T, W, K) tanh(x)
#define asinh_E(T, W, K) asinh(x)
#define acosh_E(T, W, K) acosh(x)
#define atanh_E(T, W, K) atanh(x)
#define reciprocal_E(T, W, K) (T)1 / x
#define sigmoid_E(T, W, K) ew_h_sigmoid_##K(x)
#define softplus_E(T, W, K) ew_h_softplus_##K(x)
#define softsign_E(T, W, K) x / ((T)1 + fabs(x))
#define mish_E(T, W, K) x *tanh(ew_h_softplus_##K(x))
#define elu_E(T, W, K) x >= 0 ? x : p->alpha_##K * expm1(x)
#define selu_E(T, W, K) x > 0 ? p->gamma_##K * x : p->gamma_##K * p->alpha_##K * expm1(x)
#define celu_E(T, W, K) x > 0 ? x : p->alpha_##K * expm1(x / p->alpha_##K)
#define leakyrelu_E(T, W, K) x >= 0 ? x : p->alpha_##K * x
#define hardsigmoid_E(T, W, K) ew_h_hardsigmoid_##K(x, p->alpha_##K, p->beta_##K)
#define hardswish_E(T, W, K) x *ew_h_hardsigmoid_##K(x, (T)1 / (T)6, (T)0.5)
#define thresholdedrelu_E(T, W, K) x > p->alpha_##K ? x : (T)0
#define gelu_E(T, W, K) (T)0.5 * x * ((T)1 + erf(x * (T)EW_SQRT1_2))
#define gelu_tanh_E(T, W, K) ew_h_gelu_tanh_##K(x)
#define shrink_E(T, W, K)                                                      \
    x < -p->alpha_##K ? x + p->beta_##K : (x > p->alpha_##K ? x - p->beta_##K : (T)0)
#define isnan_E(T, W, K) isnan(x) != 0
#define isinf_E(T, W, K) isinf(x) && (x > 0 ? p->flag_b : p->flag_a)

/* One row pair and one table per float-only op. */
#define EW_FLOAT_OP(op)                                                        \
    CG_EW_FLOATS(CG_EW_GEN1, op)                                               \
    static const cg_ew_row_fn op##_rows[CG_DTYPE_COUNT] = {CG_EW_FLOATS(CG_EW_REG, op)};
/* Float-only ops with a vector entry (run/ops/simd.h) for contiguous
 * float32 rows; a strided row computes the same function in scalar C. */
#define EW_FLOAT_OP_SIMD(op, entry)                                                           \
    CG_EW_FLOATS(CG_EW_GEN1, op)                                                              \
    static void ew_##op##_vec_f32(void *o, const void *const *in, const int64_t *st,          \
                                  int64_t n, cg_ew_params *p)                                 \
    {                                                                                          \
        if (st[0] == 1 && p->simd)                                                             \
            p->simd->entry((float *)o, (const float *)in[0], n);                               \
        else                                                                                   \
            ew_##op##_f32(o, in, st, n, p);                                                    \
    }                                                                                          \
    static const cg_ew_row_fn op##_rows[CG_DTYPE_COUNT] = {                                    \
        [CG_DTYPE_FLOAT] = ew_##op##_vec_f32, [CG_DTYPE_DOUBLE] = ew_##op##_f64};
EW_FLOAT_OP(sqrt)
EW_FLOAT_OP_SIMD(exp, exp_f32)
EW_FLOAT_OP(log)
EW_FLOAT_OP(ceil)
EW_FLOAT_OP(floor)
EW_FLOAT_OP(round)
EW_FLOAT_OP_SIMD(erf, erf_f32)
EW_FLOAT_OP(sin)
EW_FLOAT_OP(cos)
EW_FLOAT_OP(tan)
EW_FLOAT_OP(asin)
EW_FLOAT_OP(acos)
EW_FLOAT_OP(atan)
EW_FLOAT_OP(sinh)
EW_FLOAT_OP(cosh)
EW_FLOAT_OP_SIMD(tanh, tanh_f32)
EW_FLOAT_OP(asinh)
EW_FLOAT_OP(acosh)
EW_FLOAT_OP(atanh)
EW_FLOAT_OP(reciprocal)
EW_FLOAT_OP_SIMD(sigmoid, sigmoid_f32)
EW_FLOAT_OP(softplus)
EW_FLOAT_OP(softsign)
EW_FLOAT_OP(mish)
EW_FLOAT_OP(elu)
EW_FLOAT_OP(selu)
EW_FLOAT_OP(celu)
EW_FLOAT_OP(leakyrelu)
/* HardSigmoid and HardSwish: float32 contiguous rows through the vector
 * tables (the compiler keeps the clamp's branches scalar). */
#define EW_FLOAT_OP_HARD(op, entry, A, B)                                                      \
    CG_EW_FLOATS(CG_EW_GEN1, op)                                                              \
    static void ew_##op##_vec_f32(void *o, const void *const *in, const int64_t *st,          \
                                  int64_t n, cg_ew_params *p)                                 \
    {                                                                                          \
        if (st[0] == 1 && p->simd)                                                             \
            p->simd->entry((float *)o, (const float *)in[0], n, A, B);                         \
        else                                                                                   \
            ew_##op##_f32(o, in, st, n, p);                                                    \
    }                                                                                          \
    static const cg_ew_row_fn op##_rows[CG_DTYPE_COUNT] = {                                    \
        [CG_DTYPE_FLOAT] = ew_##op##_vec_f32, [CG_DTYPE_DOUBLE] = ew_##op##_f64};
EW_FLOAT_OP_HARD(hardsigmoid, hardsigmoid_f32, p->alpha_f32, p->beta_f32)
EW_FLOAT_OP_HARD(hardswish, hardswish_f32, 1.0f / 6.0f, 0.5f)
EW_FLOAT_OP(thresholdedrelu)
EW_FLOAT_OP(gelu)
EW_FLOAT_OP(gelu_tanh)
EW_FLOAT_OP(shrink)

CG_EW_FLOATS(CG_EW_GEN1_BOOL, isnan)
CG_EW_FLOATS(CG_EW_GEN1_BOOL, isinf)
static const cg_ew_row_fn isnan_rows[CG_DTYPE_COUNT] = {CG_EW_FLOATS(CG_EW_REG, isnan)};
static const cg_ew_row_fn isinf_rows[CG_DTYPE_COUNT] = {CG_EW_FLOATS(CG_EW_REG, isinf)};

/* Kernels of float-only ops whose only parameters are attributes. */
#define EW_SIMPLE_KERNEL(fname, op)                                            \
    cg_status fname(cg_kernel_ctx *k)                                          \
    {                                                                          \
        cg_ew_params p;                                                        \
        memset(&p, 0, sizeof p);                                               \
        return cg_ew_apply_unary(k, CG_DTYPE_UNDEFINED, op##_rows, &p);        \
    }
EW_SIMPLE_KERNEL(cg_op_sqrt, sqrt)
EW_SIMPLE_KERNEL(cg_op_exp, exp)
EW_SIMPLE_KERNEL(cg_op_log, log)
EW_SIMPLE_KERNEL(cg_op_ceil, ceil)
EW_SIMPLE_KERNEL(cg_op_floor, floor)
EW_SIMPLE_KERNEL(cg_op_round, round)
EW_SIMPLE_KERNEL(cg_op_erf, erf)
EW_SIMPLE_KERNEL(cg_op_sin, sin)
EW_SIMPLE_KERNEL(cg_op_cos, cos)
EW_SIMPLE_KERNEL(cg_op_tan, tan)
EW_SIMPLE_KERNEL(cg_op_asin, asin)
EW_SIMPLE_KERNEL(cg_op_acos, acos)
EW_SIMPLE_KERNEL(cg_op_atan, atan)
EW_SIMPLE_KERNEL(cg_op_sinh, sinh)
EW_SIMPLE_KERNEL(cg_op_cosh, cosh)
EW_SIMPLE_KERNEL(cg_op_tanh, tanh)
EW_SIMPLE_KERNEL(cg_op_asinh, asinh)
EW_SIMPLE_KERNEL(cg_op_acosh, acosh)
EW_SIMPLE_KERNEL(cg_op_atanh, atanh)
EW_SIMPLE_KERNEL(cg_op_reciprocal, reciprocal)
EW_SIMPLE_KERNEL(cg_op_sigmoid, sigmoid)
EW_SIMPLE_KERNEL(cg_op_softplus, softplus)
EW_SIMPLE_KERNEL(cg_op_softsign, softsign)
EW_SIMPLE_KERNEL(cg_op_mish, mish)
EW_SIMPLE_KERNEL(cg_op_hardswish, hardswish)

/* Kernels whose attributes map to alpha/beta/gamma. */
static cg_status ew_unary_attrs(cg_kernel_ctx *k, const cg_ew_row_fn *rows, double alpha,
                                double beta, double gamma)
{
    cg_ew_params p;
    memset(&p, 0, sizeof p);
    cg_ew_set_attrs(&p, alpha, beta, gamma);
    return cg_ew_apply_unary(k, CG_DTYPE_UNDEFINED, rows, &p);
}

cg_status cg_op_elu(cg_kernel_ctx *k)
{
    return ew_unary_attrs(k, elu_rows, cg_attr_float(k, "alpha", 1.0f), 0, 0);
}

cg_status cg_op_selu(cg_kernel_ctx *k)
{
    return ew_unary_attrs(k, selu_rows, cg_attr_float(k, "alpha", 1.67326319217681884765625f), 0,
                          cg_attr_float(k, "gamma", 1.05070102214813232421875f));
}

cg_status cg_op_celu(cg_kernel_ctx *k)
{
    float alpha = cg_attr_float(k, "alpha", 1.0f);
    if (alpha == 0.0f)
        return cg_kernel_fail(k, CG_INVALID, "alpha must not be 0");
    return ew_unary_attrs(k, celu_rows, alpha, 0, 0);
}

cg_status cg_op_leaky_relu(cg_kernel_ctx *k)
{
    return ew_unary_attrs(k, leakyrelu_rows, cg_attr_float(k, "alpha", 0.01f), 0, 0);
}

cg_status cg_op_hard_sigmoid(cg_kernel_ctx *k)
{
    return ew_unary_attrs(k, hardsigmoid_rows, cg_attr_float(k, "alpha", 0.2f),
                          cg_attr_float(k, "beta", 0.5f), 0);
}

cg_status cg_op_thresholded_relu(cg_kernel_ctx *k)
{
    return ew_unary_attrs(k, thresholdedrelu_rows, cg_attr_float(k, "alpha", 1.0f), 0, 0);
}

cg_status cg_op_gelu(cg_kernel_ctx *k)
{
    const char *approx = cg_attr_string(k, "approximate", "none");
    if (strcmp(approx, "none") == 0)
        return ew_unary_attrs(k, gelu_rows, 0, 0, 0);
    if (strcmp(approx, "tanh") == 0)
        return ew_unary_attrs(k, gelu_tanh_rows, 0, 0, 0);
    return cg_kernel_fail(k, CG_INVALID, "approximate must be 'none' or 'tanh', got '%s'",
                          approx);
}

cg_status cg_op_isnan(cg_kernel_ctx *k)
{
    cg_ew_params p;
    memset(&p, 0, sizeof p);
    return cg_ew_apply_unary(k, CG_DTYPE_BOOL, isnan_rows, &p);
}

cg_status cg_op_isinf(cg_kernel_ctx *k)
{
    cg_ew_params p;
    memset(&p, 0, sizeof p);
    p.flag_a = cg_attr_int(k, "detect_negative", 1) != 0;
    p.flag_b = cg_attr_int(k, "detect_positive", 1) != 0;
    return cg_ew_apply_unary(k, CG_DTYPE_BOOL, isinf_rows, &p);
}

/* Shrink takes any numeric type; integers go through double like the
 * reference (its bias and lambd are floats). */
cg_status cg_op_shrink(cg_kernel_ctx *k)
{
    const double lambd = cg_attr_float(k, "lambd", 0.5f);
    const double bias = cg_attr_float(k, "bias", 0.0f);
    const cg_tensor *x;
    cg_tensor *out;
    cg_status st = cg_kernel_require(k, 0, &x);
    if (st != CG_OK)
        return st;
    if (cg_dtype_is_float(x->dtype))
        return ew_unary_attrs(k, shrink_rows, lambd, bias, 0);
    if (!cg_dtype_is_int(x->dtype))
        return cg_kernel_fail(k, CG_UNSUPPORTED, "input type %s is not supported",
                              cg_dtype_name(x->dtype));
    st = cg_kernel_output(k, 0, x->dtype, x->rank, x->dims, &out);
    if (st != CG_OK)
        return st;
    for (int64_t i = 0; i < x->numel; i++) {
        double v = cg_tensor_get_f64(x, i);
        v = v < -lambd ? v + bias : (v > lambd ? v - bias : 0.0);
        cg_tensor_set_f64(out, i, v);
    }
    return CG_OK;
}

/* --- ops over floats and integers ---------------------------------------------- */

#define relu_E(T, W, K) x < 0 ? (T)0 : x /* NaN passes, as numpy.maximum */
#define negf_E(T, W, K) -x
#define negi_E(T, W, K) 0u - (W)x /* wraps: -MIN is MIN */
#define absf_E(T, W, K) fabs(x)
#define abss_E(T, W, K) x < 0 ? (T)(0u - (W)x) : x
#define absu_E(T, W, K) x
#define signf_E(T, W, K) x > 0 ? (T)1 : (x < 0 ? (T)-1 : x) /* NaN stays NaN */
#define signs_E(T, W, K) x > 0 ? 1 : (x < 0 ? -1 : 0)
#define signu_E(T, W, K) x > 0 ? 1 : 0
#define bnot_E(T, W, K) ~(W)x

CG_EW_SIGNED(CG_EW_GEN1, relu)
CG_EW_FLOATS(CG_EW_GEN1, negf)
CG_EW_INTS(CG_EW_GEN1, negi)
CG_EW_FLOATS(CG_EW_GEN1, absf)
CG_EW_SINTS(CG_EW_GEN1, abss)
CG_EW_UINTS(CG_EW_GEN1, absu)
CG_EW_FLOATS(CG_EW_GEN1, signf)
CG_EW_SINTS(CG_EW_GEN1, signs)
CG_EW_UINTS(CG_EW_GEN1, signu)
CG_EW_INTS(CG_EW_GEN1, bnot)
#define EW_GEN_CLIP(DT, T, SFX, W, K, A) CG_EW_ROW1(ew_clip_##SFX, T, T, ew_h_clip_##SFX(x, p))
CG_EW_NUMS(EW_GEN_CLIP, _)
CG_EW_ROW1(ew_not_b, uint8_t, uint8_t, x == 0)

static const cg_ew_row_fn relu_rows[CG_DTYPE_COUNT] = {CG_EW_SIGNED(CG_EW_REG, relu)};
static const cg_ew_row_fn neg_rows[CG_DTYPE_COUNT] = {
    CG_EW_FLOATS(CG_EW_REG, negf) CG_EW_INTS(CG_EW_REG, negi)};
static const cg_ew_row_fn abs_rows[CG_DTYPE_COUNT] = {
    CG_EW_FLOATS(CG_EW_REG, absf) CG_EW_SINTS(CG_EW_REG, abss) CG_EW_UINTS(CG_EW_REG, absu)};
static const cg_ew_row_fn sign_rows[CG_DTYPE_COUNT] = {
    CG_EW_FLOATS(CG_EW_REG, signf) CG_EW_SINTS(CG_EW_REG, signs) CG_EW_UINTS(CG_EW_REG, signu)};
static const cg_ew_row_fn bnot_rows[CG_DTYPE_COUNT] = {CG_EW_INTS(CG_EW_REG, bnot)};
#define EW_REG_CLIP(DT, T, SFX, W, K, A) [CG_DTYPE_##DT] = ew_clip_##SFX,
static const cg_ew_row_fn clip_rows[CG_DTYPE_COUNT] = {CG_EW_NUMS(EW_REG_CLIP, _)};
static const cg_ew_row_fn not_rows[CG_DTYPE_COUNT] = {[CG_DTYPE_BOOL] = ew_not_b};

EW_SIMPLE_KERNEL(cg_op_relu, relu)
EW_SIMPLE_KERNEL(cg_op_neg, neg)
EW_SIMPLE_KERNEL(cg_op_abs, abs)
EW_SIMPLE_KERNEL(cg_op_sign, sign)
EW_SIMPLE_KERNEL(cg_op_bitwise_not, bnot)
EW_SIMPLE_KERNEL(cg_op_not, not)

/* Reads a Clip bound (input 1 or 2) into the kind-specific fields. */
static cg_status ew_clip_bound(cg_kernel_ctx *k, const cg_tensor *x, size_t idx, bool upper,
                               cg_ew_params *p)
{
    const cg_tensor *b = cg_kernel_input(k, idx);
    const char *name = upper ? "max" : "min";
    if (!b)
        return CG_OK;
    if (b->dtype != x->dtype)
        return cg_kernel_fail(k, CG_INVALID, "%s has type %s but input has %s", name,
                              cg_dtype_name(b->dtype), cg_dtype_name(x->dtype));
    if (b->numel != 1)
        return cg_kernel_fail(k, CG_INVALID, "%s must be a scalar, has %lld elements", name,
                              (long long)b->numel);
    if (cg_dtype_is_float(b->dtype)) {
        double v = cg_tensor_get_f64(b, 0);
        *(upper ? &p->hi_f64 : &p->lo_f64) = v;
        *(upper ? &p->hi_f32 : &p->lo_f32) = (float)v;
    } else if (b->dtype == CG_DTYPE_UINT64) {
        *(upper ? &p->hi_u : &p->lo_u) = ((const uint64_t *)b->data)[0];
    } else if (cg_dtype_is_signed(b->dtype)) {
        *(upper ? &p->hi_s : &p->lo_s) = cg_tensor_get_i64(b, 0);
    } else {
        *(upper ? &p->hi_u : &p->lo_u) = (uint64_t)cg_tensor_get_i64(b, 0);
    }
    return CG_OK;
}

/* Clip: bounds are attributes (float only) before opset 11, optional scalar
 * inputs since; an absent bound is the type's extreme. */
cg_status cg_op_clip(cg_kernel_ctx *k)
{
    cg_ew_params p;
    const cg_tensor *x;
    memset(&p, 0, sizeof p);
    p.lo_f32 = -INFINITY;
    p.hi_f32 = INFINITY;
    p.lo_f64 = -INFINITY;
    p.hi_f64 = INFINITY;
    p.lo_s = INT64_MIN;
    p.hi_s = INT64_MAX;
    p.lo_u = 0;
    p.hi_u = UINT64_MAX;
    cg_status st = cg_kernel_require(k, 0, &x);
    if (st != CG_OK)
        return st;
    if (k->since < 11) {
        float lo = cg_attr_float(k, "min", -FLT_MAX), hi = cg_attr_float(k, "max", FLT_MAX);
        p.lo_f32 = lo;
        p.hi_f32 = hi;
        p.lo_f64 = lo;
        p.hi_f64 = hi;
    } else {
        st = ew_clip_bound(k, x, 1, false, &p);
        if (st == CG_OK)
            st = ew_clip_bound(k, x, 2, true, &p);
        if (st != CG_OK)
            return st;
    }
    return cg_ew_apply_unary(k, CG_DTYPE_UNDEFINED, clip_rows, &p);
}
