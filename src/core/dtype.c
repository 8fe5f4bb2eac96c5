/* The element-type table and fp16/bf16 conversions. */
#include <float.h>
#include <math.h>
#include <string.h>

#include "convgate/dtype.h"

typedef struct dtype_info {
    const char *name;
    size_t size;
    const char *npy;
} dtype_info;

static const dtype_info dtype_table[] = {
#define X(n, value, str, sz, npy) [value] = {str, sz, npy},
#include "convgate/dtype.def"
#undef X
};
_Static_assert(sizeof dtype_table / sizeof dtype_table[0] == CG_DTYPE_COUNT,
               "dtype table must be dense in ONNX order");

bool cg_dtype_valid(int64_t value) { return value > 0 && value < CG_DTYPE_COUNT; }

const char *cg_dtype_name(cg_dtype dt)
{
    if ((unsigned)dt >= CG_DTYPE_COUNT)
        return "invalid";
    return dtype_table[dt].name;
}

size_t cg_dtype_size(cg_dtype dt)
{
    return (unsigned)dt < CG_DTYPE_COUNT ? dtype_table[dt].size : 0;
}

const char *cg_dtype_npy_descr(cg_dtype dt)
{
    return (unsigned)dt < CG_DTYPE_COUNT ? dtype_table[dt].npy : NULL;
}

cg_dtype cg_dtype_from_name(const char *name)
{
    for (int i = 1; i < CG_DTYPE_COUNT; i++)
        if (strcmp(dtype_table[i].name, name) == 0)
            return (cg_dtype)i;
    if (strcmp(name, "float") == 0)
        return CG_DTYPE_FLOAT;
    if (strcmp(name, "double") == 0)
        return CG_DTYPE_DOUBLE;
    return CG_DTYPE_UNDEFINED;
}

bool cg_dtype_is_float(cg_dtype dt)
{
    return dt == CG_DTYPE_FLOAT || dt == CG_DTYPE_DOUBLE || dt == CG_DTYPE_FLOAT16 ||
           dt == CG_DTYPE_BFLOAT16;
}

bool cg_dtype_is_signed(cg_dtype dt)
{
    return dt == CG_DTYPE_INT8 || dt == CG_DTYPE_INT16 || dt == CG_DTYPE_INT32 ||
           dt == CG_DTYPE_INT64;
}

bool cg_dtype_is_int(cg_dtype dt)
{
    return cg_dtype_is_signed(dt) || dt == CG_DTYPE_UINT8 || dt == CG_DTYPE_UINT16 ||
           dt == CG_DTYPE_UINT32 || dt == CG_DTYPE_UINT64;
}

static uint32_t f32_bits(float f)
{
    uint32_t u;
    memcpy(&u, &f, 4);
    return u;
}

static float bits_f32(uint32_t u)
{
    float f;
    memcpy(&f, &u, 4);
    return f;
}

float cg_fp16_to_f32(uint16_t h)
{
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
    uint32_t exp = (h >> 10) & 0x1fu;
    uint32_t mant = h & 0x3ffu;
    if (exp == 0) {
        /* zero or subnormal: mant * 2^-24 */
        float v = (float)mant * 5.9604644775390625e-8f;
        return sign ? -v : v;
    }
    if (exp == 31)
        return bits_f32(sign | 0x7f800000u | (mant << 13));
    return bits_f32(sign | ((exp + 112u) << 23) | (mant << 13));
}

uint16_t cg_f32_to_fp16(float f)
{
    uint32_t u = f32_bits(f);
    uint16_t sign = (uint16_t)((u >> 16) & 0x8000u);
    uint32_t abs = u & 0x7fffffffu;
    if (abs >= 0x7f800000u) /* inf or nan */
        return (uint16_t)(sign | 0x7c00u | (abs > 0x7f800000u ? 0x200u : 0));
    if (abs >= 0x477ff000u) /* rounds to >= 65520: overflow to inf */
        return (uint16_t)(sign | 0x7c00u);
    if (abs < 0x38800000u) { /* below 2^-14: subnormal half */
        float v = bits_f32(abs);
        /* scale so that one half-ulp (2^-24) is 1.0, then round to even */
        float scaled = v * 16777216.0f;
        uint32_t m = (uint32_t)nearbyintf(scaled);
        return (uint16_t)(sign | m);
    }
    uint32_t mant = abs & 0x7fffffu;
    uint32_t exp = (abs >> 23) - 112u;
    uint32_t half = (exp << 10) | (mant >> 13);
    uint32_t rest = mant & 0x1fffu;
    if (rest > 0x1000u || (rest == 0x1000u && (half & 1u)))
        half++;
    return (uint16_t)(sign | half);
}

float cg_bf16_to_f32(uint16_t b) { return bits_f32((uint32_t)b << 16); }

uint16_t cg_f32_to_bf16(float f)
{
    uint32_t u = f32_bits(f);
    if ((u & 0x7fffffffu) > 0x7f800000u)
        return (uint16_t)((u >> 16) | 0x40u); /* quiet NaN */
    uint32_t rounding = 0x7fffu + ((u >> 16) & 1u);
    return (uint16_t)((u + rounding) >> 16);
}

/* x rounded to nearest even on a binary format with `digits` significant
 * bits, smallest normal exponent emin (subnormal spacing 2^(emin-digits+1))
 * and largest finite value max_finite. Rounding in one step from double:
 * going through float first would round twice (a double just above a
 * half-way point of the narrow format can land exactly on it as a float
 * and then go to even, the wrong way). */
static double round_to_format(double x, int digits, int emin, double max_finite)
{
    if (!isfinite(x) || x == 0.0)
        return x;
    double a = fabs(x);
    int e;
    (void)frexp(a, &e); /* a = m * 2^e, m in [0.5, 1) */
    int sh = e - digits; /* spacing of the format at a */
    if (sh < emin - digits + 1)
        sh = emin - digits + 1;
    double r = ldexp(nearbyint(ldexp(a, -sh)), sh); /* exact scalings */
    if (r > max_finite)
        r = INFINITY;
    return copysign(r, x);
}

double cg_fp16_round(double x)
{
    /* fp16's normal range: its 11-bit significand is all that rounds
     * (cg_fp16_round_significand, bit operations; the fp16 emulation calls
     * this for every product and partial sum), and what rounds past 65504
     * is inf; subnormals, zero, inf and NaN take the general path */
    double a = fabs(x);
    if (a >= 0x1p-14 && a <= DBL_MAX) {
        double r = cg_fp16_round_significand(x);
        return fabs(r) > 65504.0 ? copysign(INFINITY, x) : r;
    }
    return round_to_format(x, 11, -14, 65504.0);
}

double cg_fp16_round_significand(double x)
{
    uint64_t u;
    memcpy(&u, &x, sizeof u);
    uint64_t exp = (u >> 52) & 0x7ffu;
    if (exp == 0 || exp == 0x7ffu) /* zero, double subnormals, inf, NaN */
        return round_to_format(x, 11, -2000, INFINITY);
    /* a normal double: keep 11 of its 53 significand bits, to nearest
     * even; a carry out of the significand steps the exponent, as it must
     * (the floor run calls this for every product and partial sum) */
    u += 0x1ffffffffffull + ((u >> 42) & 1u);
    u &= ~0x3ffffffffffull;
    memcpy(&x, &u, sizeof x);
    return x;
}

double cg_bf16_round(double x)
{
    return round_to_format(x, 8, -126, 3.3895313892515355e38);
}

uint16_t cg_f64_to_fp16(double x)
{
    if (isnan(x))
        return (uint16_t)(signbit(x) ? 0xfe00u : 0x7e00u);
    /* exact in float once rounded to fp16, so the float conversion is exact */
    return cg_f32_to_fp16((float)cg_fp16_round(x));
}

uint16_t cg_f64_to_bf16(double x)
{
    if (isnan(x))
        return (uint16_t)(signbit(x) ? 0xffc0u : 0x7fc0u);
    return cg_f32_to_bf16((float)cg_bf16_round(x));
}
