/*
 * Broadcasting binary and variadic elementwise ops: arithmetic (Add, Sub,
 * Mul, Div, Pow, Mod), bit and logic ops, comparisons, Max/Min/Sum/Mean,
 * PRelu and Where.
 *
 * Integer arithmetic wraps (it is done in the type's unsigned "wrap" type, so
 * overflow is never undefined behaviour); integer division and modulo by zero
 * and MIN / -1 are runtime errors. Max/Min propagate NaN like numpy.maximum.
 */
#include <math.h>
#include <string.h>

#include "run/ops/elementwise.h"
#include "run/ops/kernels.h"

/* --- Add / Sub / Mul --------------------------------------------------------- */

#define add_E(T, W, K) (W)x + (W)y
#define sub_E(T, W, K) (W)x - (W)y
#define mul_E(T, W, K) (W)x *(W)y
CG_EW_NUMS(CG_EW_GEN2, add)
CG_EW_NUMS(CG_EW_GEN2, sub)
CG_EW_NUMS(CG_EW_GEN2, mul)
static const cg_ew_row_fn add_rows[CG_DTYPE_COUNT] = {CG_EW_NUMS(CG_EW_REG, add)};
static const cg_ew_row_fn sub_rows[CG_DTYPE_COUNT] = {CG_EW_NUMS(CG_EW_REG, sub)};
static const cg_ew_row_fn mul_rows[CG_DTYPE_COUNT] = {CG_EW_NUMS(CG_EW_REG, mul)};

cg_status cg_op_add(cg_kernel_ctx *k)
{
    cg_ew_params p = {0};
    return cg_ew_apply(k, 2, true, true, CG_DTYPE_UNDEFINED, add_rows, &p);
}

cg_status cg_op_sub(cg_kernel_ctx *k)
{
    cg_ew_params p = {0};
    return cg_ew_apply(k, 2, true, true, CG_DTYPE_UNDEFINED, sub_rows, &p);
}

cg_status cg_op_mul(cg_kernel_ctx *k)
{
    cg_ew_params p = {0};
    return cg_ew_apply(k, 2, true, true, CG_DTYPE_UNDEFINED, mul_rows, &p);
}

/* --- Div ---------------------------------------------------------------------- */

/* Signed division truncates toward zero (C, onnxruntime); x / 0 and
 * MIN / -1 flag an error and yield 0 / MIN. */
#define EW_DEF_SDIV(DT, T, SFX, W, K, A)                                       \
    static inline T ew_sdiv_##SFX(T x, T y, cg_ew_params *p)                   \
    {                                                                          \
        if (y == 0) {                                                          \
            p->error = CG_EW_ERR_DIV_ZERO;                                     \
            return 0;                                                          \
        }                                                                      \
        if (y == -1) {                                                         \
            T r = (T)(0u - (W)x);                                              \
            if (x < 0 && r < 0)                                                \
                p->error = CG_EW_ERR_OVERFLOW;                                 \
            return r;                                                          \
        }                                                                      \
        return (T)(x / y);                                                     \
    }
#define EW_DEF_UDIV(DT, T, SFX, W, K, A)                                       \
    static inline T ew_udiv_##SFX(T x, T y, cg_ew_params *p)                   \
    {                                                                          \
        if (y == 0) {                                                          \
            p->error = CG_EW_ERR_DIV_ZERO;                                     \
            return 0;                                                          \
        }                                                                      \
        return (T)(x / y);                                                     \
    }
CG_EW_SINTS(EW_DEF_SDIV, _)
CG_EW_UINTS(EW_DEF_UDIV, _)

#define divf_E(T, W, K) x / y
#define EW_GEN_SDIV(DT, T, SFX, W, K, A) CG_EW_ROW2(ew_div_##SFX, T, T, T, ew_sdiv_##SFX(x, y, p))
#define EW_GEN_UDIV(DT, T, SFX, W, K, A) CG_EW_ROW2(ew_div_##SFX, T, T, T, ew_udiv_##SFX(x, y, p))
CG_EW_FLOATS(CG_EW_GEN2, divf)
CG_EW_SINTS(EW_GEN_SDIV, _)
CG_EW_UINTS(EW_GEN_UDIV, _)
#define EW_REG_DIV(DT, T, SFX, W, K, A) [CG_DTYPE_##DT] = ew_div_##SFX,
static const cg_ew_row_fn div_rows[CG_DTYPE_COUNT] = {
    CG_EW_FLOATS(CG_EW_REG, divf) CG_EW_INTS(EW_REG_DIV, _)};

cg_status cg_op_div(cg_kernel_ctx *k)
{
    cg_ew_params p = {0};
    return cg_ew_apply(k, 2, true, true, CG_DTYPE_UNDEFINED, div_rows, &p);
}

/* --- Mod ---------------------------------------------------------------------- */

/* Python's remainder: the result takes the divisor's sign (fmod=0). */
static double ew_pymod(double x, double y)
{
    double r = fmod(x, y);
    if (r != 0.0) {
        if ((r < 0.0) != (y < 0.0))
            r += y;
    } else {
        r = copysign(0.0, y);
    }
    return r;
}

#define EW_DEF_SMOD(DT, T, SFX, W, K, A)                                       \
    static inline T ew_smod_##SFX(T x, T y, bool python, cg_ew_params *p)      \
    {                                                                          \
        if (y == 0) {                                                          \
            p->error = CG_EW_ERR_DIV_ZERO;                                     \
            return 0;                                                          \
        }                                                                      \
        if (y == -1) /* MIN % -1 overflows in C; the answer is 0 */            \
            return 0;                                                          \
        T r = (T)(x % y);                                                      \
        if (python && r != 0 && ((r < 0) != (y < 0)))                          \
            r = (T)((W)r + (W)y);                                              \
        return r;                                                              \
    }
#define EW_DEF_UMOD(DT, T, SFX, W, K, A)                                       \
    static inline T ew_umod_##SFX(T x, T y, cg_ew_params *p)                   \
    {                                                                          \
        if (y == 0) {                                                          \
            p->error = CG_EW_ERR_DIV_ZERO;                                     \
            return 0;                                                          \
        }                                                                      \
        return (T)(x % y);                                                     \
    }
CG_EW_SINTS(EW_DEF_SMOD, _)
CG_EW_UINTS(EW_DEF_UMOD, _)

#define fmodf_E(T, W, K) fmod((double)x, (double)y) /* exact, so no double rounding */
#define pymodf_E(T, W, K) ew_pymod((double)x, (double)y)
#define EW_GEN_SMOD(DT, T, SFX, W, K, A)                                       \
    CG_EW_ROW2(ew_cmod_##SFX, T, T, T, ew_smod_##SFX(x, y, false, p))          \
    CG_EW_ROW2(ew_pmod_##SFX, T, T, T, ew_smod_##SFX(x, y, true, p))
#define EW_GEN_UMOD(DT, T, SFX, W, K, A)                                       \
    CG_EW_ROW2(ew_cmod_##SFX, T, T, T, ew_umod_##SFX(x, y, p))                 \
    CG_EW_ROW2(ew_pmod_##SFX, T, T, T, ew_umod_##SFX(x, y, p))
CG_EW_FLOATS(CG_EW_GEN2, fmodf)
CG_EW_FLOATS(CG_EW_GEN2, pymodf)
CG_EW_SINTS(EW_GEN_SMOD, _)
CG_EW_UINTS(EW_GEN_UMOD, _)
#define EW_REG_CMOD(DT, T, SFX, W, K, A) [CG_DTYPE_##DT] = ew_cmod_##SFX,
#define EW_REG_PMOD(DT, T, SFX, W, K, A) [CG_DTYPE_##DT] = ew_pmod_##SFX,
static const cg_ew_row_fn cmod_rows[CG_DTYPE_COUNT] = {
    CG_EW_FLOATS(CG_EW_REG, fmodf) CG_EW_INTS(EW_REG_CMOD, _)};
static const cg_ew_row_fn pmod_rows[CG_DTYPE_COUNT] = {
    CG_EW_FLOATS(CG_EW_REG, pymodf) CG_EW_INTS(EW_REG_PMOD, _)};

cg_status cg_op_mod(cg_kernel_ctx *k)
{
    cg_ew_params p = {0};
    int64_t fmod_attr = cg_attr_int(k, "fmod", 0);
    if (fmod_attr != 0 && fmod_attr != 1)
        return cg_kernel_fail(k, CG_INVALID, "fmod must be 0 or 1, got %lld",
                              (long long)fmod_attr);
    /* fmod=0 on floats is outside the spec; numpy's np.mod (Python
     * semantics) is what the reference does, so follow it. */
    return cg_ew_apply(k, 2, true, true, CG_DTYPE_UNDEFINED, fmod_attr ? cmod_rows : pmod_rows,
                       &p);
}

/* --- Pow ---------------------------------------------------------------------- */

#define powf_E(T, W, K) pow((double)x, (double)y)
CG_EW_FLOATS(CG_EW_GEN2, powf)
static const cg_ew_row_fn pow_rows[CG_DTYPE_COUNT] = {CG_EW_FLOATS(CG_EW_REG, powf)};
/* x^2 in float32 as x * x: the square of a float32 is exact in double, so
 * pow's double result rounds to the same float as the product does (one
 * rounding of the exact square), without a libm call per element
 * (Silero VAD's magnitude spent a tenth of its run in pow). */
#define sqf_E(T, W, K) ((void)y, x * x)
CG_EW_ROW2(ew_sqf_f32, float, float, float, sqf_E(float, float, f32))

/* A tensor header over raw row data, to read elements of any dtype. */
static cg_tensor ew_view(cg_dtype dt, const void *data)
{
    cg_tensor t;
    memset(&t, 0, sizeof t);
    t.dtype = dt;
    t.data = (void *)(uintptr_t)data;
    return t;
}

/* Integer base and exponent: exact repeated squaring, wrapping like the
 * output type. Negative exponents give the truncated quotient 1/x^n. */
static void ew_pow_int(void *o, const void *const *in, const int64_t *st, int64_t n,
                       cg_ew_params *p)
{
    cg_tensor a = ew_view(p->ta, in[0]), b = ew_view(p->tb, in[1]), out = ew_view(p->to, o);
    for (int64_t i = 0; i < n; i++) {
        int64_t base = cg_tensor_get_i64(&a, i * st[0]);
        uint64_t e, r = 1;
        bool negative = false;
        if (p->tb == CG_DTYPE_UINT64) {
            e = ((const uint64_t *)in[1])[i * st[1]];
        } else {
            int64_t v = cg_tensor_get_i64(&b, i * st[1]);
            negative = v < 0;
            e = negative ? 0u - (uint64_t)v : (uint64_t)v;
        }
        if (negative) {
            if (base == 0) {
                p->error = CG_EW_ERR_ZERO_NEG;
                r = 0;
            } else if (base == 1) {
                r = 1;
            } else if (base == -1 && p->ta != CG_DTYPE_UINT64) {
                r = (e & 1u) ? (uint64_t)-1 : 1u;
            } else {
                r = 0;
            }
        } else {
            uint64_t sq = (uint64_t)base;
            while (e) {
                if (e & 1u)
                    r *= sq;
                sq *= sq;
                e >>= 1;
            }
        }
        cg_tensor_set_i64(&out, i, (int64_t)r);
    }
}

/* Mixed float/integer operands: compute in double, convert to X's type. */
static void ew_pow_mixed(void *o, const void *const *in, const int64_t *st, int64_t n,
                         cg_ew_params *p)
{
    cg_tensor a = ew_view(p->ta, in[0]), b = ew_view(p->tb, in[1]), out = ew_view(p->to, o);
    for (int64_t i = 0; i < n; i++)
        cg_tensor_set_f64(&out, i,
                          pow(cg_tensor_get_f64(&a, i * st[0]), cg_tensor_get_f64(&b, i * st[1])));
}

static bool ew_is_numeric(cg_dtype dt)
{
    return cg_dtype_is_int(dt) || cg_dtype_is_float(dt);
}

cg_status cg_op_pow(cg_kernel_ctx *k)
{
    cg_ew_params p = {0};
    const cg_tensor *in[2];
    cg_tensor legacy;
    cg_status st = cg_kernel_require(k, 0, &in[0]);
    if (st == CG_OK)
        st = cg_kernel_require(k, 1, &in[1]);
    if (st == CG_OK)
        st = cg_ew_legacy_broadcast(k, in[0], &in[1], &legacy);
    if (st != CG_OK)
        return st;
    if (!ew_is_numeric(in[0]->dtype) || !ew_is_numeric(in[1]->dtype))
        return cg_kernel_fail(k, CG_UNSUPPORTED, "unsupported types %s ^ %s",
                              cg_dtype_name(in[0]->dtype), cg_dtype_name(in[1]->dtype));
    cg_dtype ca = cg_ew_compute_dtype(in[0]->dtype), cb = cg_ew_compute_dtype(in[1]->dtype);
    cg_ew_row_fn fn;
    if (ca == CG_DTYPE_FLOAT && cb == CG_DTYPE_FLOAT && in[1]->numel == 1 &&
        cg_tensor_get_f64(in[1], 0) == 2.0)
        fn = ew_sqf_f32;
    else if (ca == cb && pow_rows[ca])
        fn = pow_rows[ca];
    else if (cg_dtype_is_int(ca) && cg_dtype_is_int(cb))
        fn = ew_pow_int;
    else
        fn = ew_pow_mixed;
    return cg_ew_apply_fn(k, 2, in, true, in[0]->dtype, fn, &p);
}

/* --- BitShift and bitwise ops ----------------------------------------------- */

/* Shifting by the width or more is 0 (in C it is undefined). */
#define shl_E(T, W, K) ((uint64_t)y >= sizeof(T) * 8u ? (W)0 : (W)((W)x << y))
#define shr_E(T, W, K) ((uint64_t)y >= sizeof(T) * 8u ? (W)0 : (W)(x >> y))
#define band_E(T, W, K) x &y
#define bor_E(T, W, K) x | y
#define bxor_E(T, W, K) x ^ y
CG_EW_UINTS(CG_EW_GEN2, shl)
CG_EW_UINTS(CG_EW_GEN2, shr)
CG_EW_INTS(CG_EW_GEN2, band)
CG_EW_INTS(CG_EW_GEN2, bor)
CG_EW_INTS(CG_EW_GEN2, bxor)
static const cg_ew_row_fn shl_rows[CG_DTYPE_COUNT] = {CG_EW_UINTS(CG_EW_REG, shl)};
static const cg_ew_row_fn shr_rows[CG_DTYPE_COUNT] = {CG_EW_UINTS(CG_EW_REG, shr)};
static const cg_ew_row_fn band_rows[CG_DTYPE_COUNT] = {CG_EW_INTS(CG_EW_REG, band)};
static const cg_ew_row_fn bor_rows[CG_DTYPE_COUNT] = {CG_EW_INTS(CG_EW_REG, bor)};
static const cg_ew_row_fn bxor_rows[CG_DTYPE_COUNT] = {CG_EW_INTS(CG_EW_REG, bxor)};

cg_status cg_op_bitshift(cg_kernel_ctx *k)
{
    cg_ew_params p = {0};
    const char *dir = cg_attr_string(k, "direction", NULL);
    if (!dir)
        return cg_kernel_fail(k, CG_INVALID, "missing required attribute 'direction'");
    if (strcmp(dir, "LEFT") == 0)
        return cg_ew_apply(k, 2, true, false, CG_DTYPE_UNDEFINED, shl_rows, &p);
    if (strcmp(dir, "RIGHT") == 0)
        return cg_ew_apply(k, 2, true, false, CG_DTYPE_UNDEFINED, shr_rows, &p);
    return cg_kernel_fail(k, CG_INVALID, "direction must be LEFT or RIGHT, got '%s'", dir);
}

cg_status cg_op_bitwise_and(cg_kernel_ctx *k)
{
    cg_ew_params p = {0};
    return cg_ew_apply(k, 2, true, false, CG_DTYPE_UNDEFINED, band_rows, &p);
}

cg_status cg_op_bitwise_or(cg_kernel_ctx *k)
{
    cg_ew_params p = {0};
    return cg_ew_apply(k, 2, true, false, CG_DTYPE_UNDEFINED, bor_rows, &p);
}

cg_status cg_op_bitwise_xor(cg_kernel_ctx *k)
{
    cg_ew_params p = {0};
    return cg_ew_apply(k, 2, true, false, CG_DTYPE_UNDEFINED, bxor_rows, &p);
}

/* --- logical ops (bool) ------------------------------------------------------ */

CG_EW_ROW2(ew_and_b, uint8_t, uint8_t, uint8_t, (x != 0) & (y != 0))
CG_EW_ROW2(ew_or_b, uint8_t, uint8_t, uint8_t, (x != 0) | (y != 0))
CG_EW_ROW2(ew_xor_b, uint8_t, uint8_t, uint8_t, (x != 0) ^ (y != 0))
static const cg_ew_row_fn and_rows[CG_DTYPE_COUNT] = {[CG_DTYPE_BOOL] = ew_and_b};
static const cg_ew_row_fn or_rows[CG_DTYPE_COUNT] = {[CG_DTYPE_BOOL] = ew_or_b};
static const cg_ew_row_fn xor_rows[CG_DTYPE_COUNT] = {[CG_DTYPE_BOOL] = ew_xor_b};

cg_status cg_op_and(cg_kernel_ctx *k)
{
    cg_ew_params p = {0};
    return cg_ew_apply(k, 2, true, false, CG_DTYPE_BOOL, and_rows, &p);
}

cg_status cg_op_or(cg_kernel_ctx *k)
{
    cg_ew_params p = {0};
    return cg_ew_apply(k, 2, true, false, CG_DTYPE_BOOL, or_rows, &p);
}

cg_status cg_op_xor(cg_kernel_ctx *k)
{
    cg_ew_params p = {0};
    return cg_ew_apply(k, 2, true, false, CG_DTYPE_BOOL, xor_rows, &p);
}

/* --- comparisons (bool output; NaN compares false) -------------------------- */

#define eq_E(T, W, K) x == y
#define gt_E(T, W, K) x > y
#define ge_E(T, W, K) x >= y
#define lt_E(T, W, K) x < y
#define le_E(T, W, K) x <= y
CG_EW_NUMS(CG_EW_GEN2_BOOL, eq)
CG_EW_NUMS(CG_EW_GEN2_BOOL, gt)
CG_EW_NUMS(CG_EW_GEN2_BOOL, ge)
CG_EW_NUMS(CG_EW_GEN2_BOOL, lt)
CG_EW_NUMS(CG_EW_GEN2_BOOL, le)
CG_EW_ROW2(ew_eq_b, uint8_t, uint8_t, uint8_t, (x != 0) == (y != 0))

static void ew_eq_str(void *o_, const void *const *in, const int64_t *st, int64_t n,
                      cg_ew_params *p)
{
    uint8_t *o = (uint8_t *)o_;
    const cg_string *a = (const cg_string *)in[0];
    const cg_string *b = (const cg_string *)in[1];
    (void)p;
    for (int64_t i = 0; i < n; i++) {
        const cg_string *x = &a[i * st[0]], *y = &b[i * st[1]];
        /* the whole length: "a\0b" and "a\0c" differ */
        o[i] = x->len == y->len && (x->len == 0 || memcmp(x->data, y->data, x->len) == 0);
    }
}

static const cg_ew_row_fn eq_rows[CG_DTYPE_COUNT] = {
    CG_EW_NUMS(CG_EW_REG, eq)[CG_DTYPE_BOOL] = ew_eq_b, [CG_DTYPE_STRING] = ew_eq_str};
static const cg_ew_row_fn gt_rows[CG_DTYPE_COUNT] = {CG_EW_NUMS(CG_EW_REG, gt)};
static const cg_ew_row_fn ge_rows[CG_DTYPE_COUNT] = {CG_EW_NUMS(CG_EW_REG, ge)};
static const cg_ew_row_fn lt_rows[CG_DTYPE_COUNT] = {CG_EW_NUMS(CG_EW_REG, lt)};
static const cg_ew_row_fn le_rows[CG_DTYPE_COUNT] = {CG_EW_NUMS(CG_EW_REG, le)};

cg_status cg_op_equal(cg_kernel_ctx *k)
{
    cg_ew_params p = {0};
    return cg_ew_apply(k, 2, true, true, CG_DTYPE_BOOL, eq_rows, &p);
}

cg_status cg_op_greater(cg_kernel_ctx *k)
{
    cg_ew_params p = {0};
    return cg_ew_apply(k, 2, true, true, CG_DTYPE_BOOL, gt_rows, &p);
}

cg_status cg_op_greater_or_equal(cg_kernel_ctx *k)
{
    cg_ew_params p = {0};
    return cg_ew_apply(k, 2, true, true, CG_DTYPE_BOOL, ge_rows, &p);
}

cg_status cg_op_less(cg_kernel_ctx *k)
{
    cg_ew_params p = {0};
    return cg_ew_apply(k, 2, true, true, CG_DTYPE_BOOL, lt_rows, &p);
}

cg_status cg_op_less_or_equal(cg_kernel_ctx *k)
{
    cg_ew_params p = {0};
    return cg_ew_apply(k, 2, true, true, CG_DTYPE_BOOL, le_rows, &p);
}

/* --- PRelu ---------------------------------------------------------------------- */

#define prelu_E(T, W, K) x < 0 ? (T)((W)x * (W)y) : x
#define prelu_u_E(T, W, K) ((void)y, x) /* unsigned x is never negative */
CG_EW_SIGNED(CG_EW_GEN2, prelu)
CG_EW_UINTS(CG_EW_GEN2, prelu_u)
static const cg_ew_row_fn prelu_rows[CG_DTYPE_COUNT] = {
    CG_EW_SIGNED(CG_EW_REG, prelu) CG_EW_UINTS(CG_EW_REG, prelu_u)};

/* Slope broadcasts to X one way: the output keeps X's shape. Before opset 7
 * a 1-D slope of X's channel count applied per channel (axis 1). */
cg_status cg_op_prelu(cg_kernel_ctx *k)
{
    cg_ew_params p = {0};
    const cg_tensor *in[2];
    cg_tensor legacy;
    int64_t dims[CG_MAX_RANK];
    int rank;
    cg_status st = cg_kernel_require(k, 0, &in[0]);
    if (st == CG_OK)
        st = cg_kernel_require(k, 1, &in[1]);
    if (st != CG_OK)
        return st;
    if (in[0]->dtype != in[1]->dtype)
        return cg_kernel_fail(k, CG_INVALID, "slope has type %s but X has %s",
                              cg_dtype_name(in[1]->dtype), cg_dtype_name(in[0]->dtype));
    if (k->since < 7 && in[1]->rank == 1 && in[1]->numel > 1 && in[0]->rank >= 2 &&
        in[1]->dims[0] == in[0]->dims[1]) {
        legacy = *in[1];
        legacy.rank = in[0]->rank - 1;
        for (int i = 1; i < legacy.rank; i++)
            legacy.dims[i] = 1;
        in[1] = &legacy;
    }
    if (!cg_broadcast_shapes(in[0]->rank, in[0]->dims, in[1]->rank, in[1]->dims, &rank, dims) ||
        rank != in[0]->rank || memcmp(dims, in[0]->dims, sizeof(int64_t) * (size_t)rank) != 0) {
        char sx[256], ss[256];
        cg_ew_shape_str(in[0], sx, sizeof sx);
        cg_ew_shape_str(in[1], ss, sizeof ss);
        return cg_kernel_fail(k, CG_INVALID, "slope shape %s does not broadcast to X shape %s",
                              ss, sx);
    }
    cg_ew_row_fn fn = prelu_rows[cg_ew_compute_dtype(in[0]->dtype)];
    if (!fn)
        return cg_kernel_fail(k, CG_UNSUPPORTED, "input type %s is not supported",
                              cg_dtype_name(in[0]->dtype));
    return cg_ew_apply_fn(k, 2, in, true, in[0]->dtype, fn, &p);
}

/* --- Max / Min / Sum / Mean (variadic) --------------------------------------- */

#define maxf_E(T, W, K) (isnan(x) || x > y) ? x : y
#define minf_E(T, W, K) (isnan(x) || x < y) ? x : y
#define maxi_E(T, W, K) x > y ? x : y
#define mini_E(T, W, K) x < y ? x : y
CG_EW_FLOATS(CG_EW_GEN2, maxf)
CG_EW_FLOATS(CG_EW_GEN2, minf)
CG_EW_INTS(CG_EW_GEN2, maxi)
CG_EW_INTS(CG_EW_GEN2, mini)
static const cg_ew_row_fn max_rows[CG_DTYPE_COUNT] = {
    CG_EW_FLOATS(CG_EW_REG, maxf) CG_EW_INTS(CG_EW_REG, maxi)};
static const cg_ew_row_fn min_rows[CG_DTYPE_COUNT] = {
    CG_EW_FLOATS(CG_EW_REG, minf) CG_EW_INTS(CG_EW_REG, mini)};

CG_EW_ROW1(ew_copy_1, uint8_t, uint8_t, x)
CG_EW_ROW1(ew_copy_2, uint16_t, uint16_t, x)
CG_EW_ROW1(ew_copy_4, uint32_t, uint32_t, x)
CG_EW_ROW1(ew_copy_8, uint64_t, uint64_t, x)

static cg_ew_row_fn ew_copy_row(size_t elem_size)
{
    switch (elem_size) {
    case 1: return ew_copy_1;
    case 2: return ew_copy_2;
    case 4: return ew_copy_4;
    case 8: return ew_copy_8;
    default: return NULL;
    }
}

/* Folds the inputs pairwise: op(in0, in1), then op(acc, in2), ... Rows
 * never write where they read, so the accumulator alternates between the
 * output and one scratch tensor, starting where the last step ends in the
 * output. Mean divides the sum at the end. */
static cg_status ew_variadic(cg_kernel_ctx *k, const cg_ew_row_fn *table, bool mean)
{
    cg_ew_params p = {0};
    size_t n = k->input_count;
    const cg_tensor **in;
    cg_tensor *wide, *out, *work, work_storage, spare;
    cg_status st;

    if (n == 0)
        return cg_kernel_fail(k, CG_INVALID, "needs at least one input");
    if (n > (size_t)INT32_MAX)
        return cg_kernel_fail(k, CG_LIMIT, "too many inputs (%zu)", n);
    in = (const cg_tensor **)cg_kernel_scratch(k, n * sizeof(*in));
    wide = (cg_tensor *)cg_kernel_scratch(k, n * sizeof(*wide));
    if (!in || !wide)
        return cg_kernel_fail(k, CG_NOMEM, "out of memory for %zu inputs", n);
    for (size_t i = 0; i < n; i++) {
        st = cg_kernel_require(k, i, &in[i]);
        if (st != CG_OK)
            return st;
        if (in[i]->dtype != in[0]->dtype)
            return cg_kernel_fail(k, CG_INVALID, "input %zu has type %s but input 0 has %s", i,
                                  cg_dtype_name(in[i]->dtype), cg_dtype_name(in[0]->dtype));
    }
    cg_dtype ct = cg_ew_compute_dtype(in[0]->dtype);
    cg_ew_row_fn fn = ((int)ct >= 0 && ct < CG_DTYPE_COUNT) ? table[ct] : NULL;
    if (!fn || (mean && ct != CG_DTYPE_FLOAT && ct != CG_DTYPE_DOUBLE))
        return cg_kernel_fail(k, CG_UNSUPPORTED, "input type %s is not supported",
                              cg_dtype_name(in[0]->dtype));
    st = cg_ew_output(k, (int)n, in, in[0]->dtype, &out);
    if (st != CG_OK)
        return st;
    for (size_t i = 0; i < n; i++) {
        st = cg_ew_widen(k, &in[i], &wide[i]);
        if (st != CG_OK)
            return st;
    }
    st = cg_ew_work(k, out, &work_storage, &work);
    if (st != CG_OK)
        return st;
    if (n == 1) {
        cg_ew_run(1, &in[0], work, ew_copy_row(cg_tensor_elem_size(ct)), &p);
    } else {
        spare = *work;
        if (n > 2 && work->numel > 0) {
            spare.data = cg_kernel_scratch(k, cg_tensor_bytes(work));
            if (!spare.data)
                return cg_kernel_fail(k, CG_NOMEM, "out of memory for an accumulator");
        }
        const cg_tensor *acc = in[0];
        for (size_t i = 1; i < n; i++) {
            /* step i writes the output when (n - 1 - i) is even */
            cg_tensor *dst = ((n - 1 - i) % 2 == 0) ? work : &spare;
            const cg_tensor *pair[2] = {acc, in[i]};
            cg_ew_run(2, pair, dst, fn, &p);
            acc = dst;
        }
    }
    if (mean) {
        if (ct == CG_DTYPE_FLOAT) {
            float *w = (float *)work->data;
            for (int64_t i = 0; i < work->numel; i++)
                w[i] /= (float)n;
        } else {
            double *w = (double *)work->data;
            for (int64_t i = 0; i < work->numel; i++)
                w[i] /= (double)n;
        }
    }
    return cg_ew_finish(k, work, out, &p);
}

cg_status cg_op_max(cg_kernel_ctx *k) { return ew_variadic(k, max_rows, false); }
cg_status cg_op_min(cg_kernel_ctx *k) { return ew_variadic(k, min_rows, false); }
cg_status cg_op_sum(cg_kernel_ctx *k) { return ew_variadic(k, add_rows, false); }
cg_status cg_op_mean(cg_kernel_ctx *k) { return ew_variadic(k, add_rows, true); }

/* --- Where ---------------------------------------------------------------------- */

#define EW_WHERE_ROW(name, T)                                                  \
    static void name(void *o_, const void *const *in, const int64_t *st, int64_t n, \
                     cg_ew_params *p)                                          \
    {                                                                          \
        T *o = (T *)o_;                                                        \
        const uint8_t *c = (const uint8_t *)in[0];                             \
        const T *x = (const T *)in[1], *y = (const T *)in[2];                  \
        (void)p;                                                               \
        if (st[0] == 1 && st[1] == 1 && st[2] == 1) {                          \
            for (int64_t i = 0; i < n; i++)                                    \
                o[i] = c[i] ? x[i] : y[i];                                     \
        } else {                                                               \
            for (int64_t i = 0; i < n; i++)                                    \
                o[i] = c[i * st[0]] ? x[i * st[1]] : y[i * st[2]];             \
        }                                                                      \
    }
EW_WHERE_ROW(ew_where_1, uint8_t)
EW_WHERE_ROW(ew_where_2, uint16_t)
EW_WHERE_ROW(ew_where_4, uint32_t)
EW_WHERE_ROW(ew_where_8, uint64_t)

static void ew_where_str(void *o_, const void *const *in, const int64_t *st, int64_t n,
                         cg_ew_params *p)
{
    const int64_t base = (cg_string *)o_ - (cg_string *)p->out->data;
    const uint8_t *c = (const uint8_t *)in[0];
    const cg_string *x = (const cg_string *)in[1];
    const cg_string *y = (const cg_string *)in[2];
    for (int64_t i = 0; i < n; i++) {
        const cg_string *s = c[i * st[0]] ? &x[i * st[1]] : &y[i * st[2]];
        if (!s->data)
            continue; /* the empty string, which the zero-filled output holds */
        if (cg_tensor_set_string(p->out, base + i, s->data, s->len) != CG_OK) {
            p->error = CG_EW_ERR_NOMEM;
            return;
        }
    }
}

cg_status cg_op_where(cg_kernel_ctx *k)
{
    cg_ew_params p = {0};
    const cg_tensor *in[3];
    for (size_t i = 0; i < 3; i++) {
        cg_status st = cg_kernel_require(k, i, &in[i]);
        if (st != CG_OK)
            return st;
    }
    if (in[0]->dtype != CG_DTYPE_BOOL)
        return cg_kernel_fail(k, CG_INVALID, "condition must be bool, got %s",
                              cg_dtype_name(in[0]->dtype));
    if (in[1]->dtype != in[2]->dtype)
        return cg_kernel_fail(k, CG_INVALID, "X has type %s but Y has %s",
                              cg_dtype_name(in[1]->dtype), cg_dtype_name(in[2]->dtype));
    cg_ew_row_fn fn;
    if (in[1]->dtype == CG_DTYPE_STRING) {
        fn = ew_where_str;
    } else {
        switch (cg_tensor_elem_size(in[1]->dtype)) {
        case 1: fn = ew_where_1; break;
        case 2: fn = ew_where_2; break;
        case 4: fn = ew_where_4; break;
        case 8: fn = ew_where_8; break;
        default:
            return cg_kernel_fail(k, CG_UNSUPPORTED, "type %s is not supported",
                                  cg_dtype_name(in[1]->dtype));
        }
    }
    return cg_ew_apply_fn(k, 3, in, false, in[1]->dtype, fn, &p);
}
