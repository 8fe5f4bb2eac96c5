/*
 * Cast and CastLike: conversions between every numeric type, bool and
 * string.
 *
 * Rules (those of ONNX Cast, which follow numpy's astype):
 *  - float -> integer truncates toward zero; NaN gives 0 and values out of
 *    int64 range clamp before wrapping to the target width (never C's
 *    undefined float-to-int conversion);
 *  - integer -> integer wraps modulo 2^width; anything -> bool is "!= 0";
 *  - string -> number accepts what strtod does ("1.5", " 2 ", "INF",
 *    "-inf", "NaN", "1e999" = inf), integers parse exactly, and "true" /
 *    "false" parse for bool; anything else is a runtime error naming it;
 *  - number -> string prints like numpy's repr: the shortest digits that
 *    round-trip in the source type, positional for 1e-4 <= |v| < 1e16 and
 *    scientific otherwise ("0.039187793", "1e-05", "1e+16", "nan", "-inf"),
 *    bools as "True"/"False".
 * float8 and 4-bit types are not supported (the opset-19 `saturate`
 * attribute only concerns them and is accepted but unused).
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "run/ops/elementwise.h"
#include "run/ops/kernels.h"
#include "run/ops/simd.h"

static bool ew_cast_supported(cg_dtype dt)
{
    return dt == CG_DTYPE_STRING || dt == CG_DTYPE_BOOL || cg_dtype_is_int(dt) ||
           cg_dtype_is_float(dt);
}

/* --- number -> string ---------------------------------------------------------- */

/* True when r, printed from v, reads back as the same value of type dt. */
static bool ew_roundtrips(cg_dtype dt, double r, double v)
{
    switch (dt) {
    case CG_DTYPE_FLOAT: return (float)r == (float)v;
    case CG_DTYPE_FLOAT16: return cg_f32_to_fp16((float)r) == cg_f32_to_fp16((float)v);
    case CG_DTYPE_BFLOAT16: return cg_f32_to_bf16((float)r) == cg_f32_to_bf16((float)v);
    default: return r == v;
    }
}

/* Formats a float value of type dt like numpy's repr into buf (>= 64). */
static void ew_format_float(cg_dtype dt, double v, char *buf, size_t size)
{
    char tmp[64], digits[32];
    size_t nd = 0;
    int exp10 = 0, used = 0;

    if (isnan(v)) {
        snprintf(buf, size, "nan");
        return;
    }
    if (isinf(v)) {
        snprintf(buf, size, v > 0 ? "inf" : "-inf");
        return;
    }
    if (v == 0.0) {
        snprintf(buf, size, signbit(v) ? "-0.0" : "0.0");
        return;
    }
    /* Shortest precision that round-trips (17 digits always do for double). */
    for (int prec = 1; prec <= 17; prec++) {
        snprintf(tmp, sizeof tmp, "%.*e", prec - 1, v);
        if (ew_roundtrips(dt, strtod(tmp, NULL), v))
            break;
    }
    /* tmp is "[-]d[.ddd]e[+-]xx": collect the digits and the exponent. */
    const char *s = tmp;
    if (*s == '-')
        s++;
    for (; *s && *s != 'e'; s++)
        if (*s >= '0' && *s <= '9' && nd < sizeof digits - 1)
            digits[nd++] = *s;
    if (*s == 'e')
        exp10 = atoi(s + 1);
    while (nd > 1 && digits[nd - 1] == '0')
        nd--;
    digits[nd] = '\0';

    const double mag = fabs(v);
    used = snprintf(buf, size, "%s", v < 0 ? "-" : "");
    if (mag >= 1e-4 && mag < 1e16) {
        if (exp10 >= 0) {
            for (int i = 0; i <= exp10; i++)
                used += snprintf(buf + used, size - (size_t)used, "%c",
                                 (size_t)i < nd ? digits[i] : '0');
            used += snprintf(buf + used, size - (size_t)used, ".");
            if ((size_t)exp10 + 1 < nd)
                snprintf(buf + used, size - (size_t)used, "%s", digits + exp10 + 1);
            else
                snprintf(buf + used, size - (size_t)used, "0");
        } else {
            used += snprintf(buf + used, size - (size_t)used, "0.");
            for (int i = 0; i < -exp10 - 1; i++)
                used += snprintf(buf + used, size - (size_t)used, "0");
            snprintf(buf + used, size - (size_t)used, "%s", digits);
        }
    } else {
        used += snprintf(buf + used, size - (size_t)used, "%c", digits[0]);
        if (nd > 1)
            used += snprintf(buf + used, size - (size_t)used, ".%s", digits + 1);
        snprintf(buf + used, size - (size_t)used, "e%c%02d", exp10 < 0 ? '-' : '+',
                 exp10 < 0 ? -exp10 : exp10);
    }
}

static cg_status ew_to_string(cg_kernel_ctx *k, const cg_tensor *x, cg_tensor *out)
{
    char buf[96];
    for (int64_t i = 0; i < x->numel; i++) {
        if (x->dtype == CG_DTYPE_BOOL)
            snprintf(buf, sizeof buf, "%s", ((const uint8_t *)x->data)[i] ? "True" : "False");
        else if (x->dtype == CG_DTYPE_UINT64)
            snprintf(buf, sizeof buf, "%llu",
                     (unsigned long long)((const uint64_t *)x->data)[i]);
        else if (cg_dtype_is_int(x->dtype))
            snprintf(buf, sizeof buf, "%lld", (long long)cg_tensor_get_i64(x, i));
        else
            ew_format_float(x->dtype, cg_tensor_get_f64(x, i), buf, sizeof buf);
        if (cg_tensor_set_string(out, i, buf, strlen(buf)) != CG_OK)
            return cg_kernel_fail(k, CG_NOMEM, "out of memory writing string %lld",
                                  (long long)i);
    }
    return CG_OK;
}

/* --- string -> number ---------------------------------------------------------- */

static bool ew_is_space(char c)
{
    return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
}

/* True when only whitespace remains. */
static bool ew_rest_blank(const char *s)
{
    while (ew_is_space(*s))
        s++;
    return *s == '\0';
}

/* Case-insensitive match of a trimmed string against a lower-case word. */
static bool ew_word_is(const char *s, const char *word)
{
    while (ew_is_space(*s))
        s++;
    for (; *word; s++, word++) {
        char c = *s;
        if (c >= 'A' && c <= 'Z')
            c = (char)(c - 'A' + 'a');
        if (c != *word)
            return false;
    }
    return ew_rest_blank(s);
}

static cg_status ew_from_string(cg_kernel_ctx *k, const cg_tensor *x, cg_tensor *out)
{
    for (int64_t i = 0; i < x->numel; i++) {
        size_t len;
        const char *s = cg_tensor_string(x, i, &len);
        char *end = NULL;
        if (memchr(s, '\0', len)) /* the parsers below would stop at the NUL */
            return cg_kernel_fail(k, CG_RUNTIME, "cannot convert string element %lld to %s: it "
                                  "holds a NUL byte", (long long)i, cg_dtype_name(out->dtype));
        if (out->dtype == CG_DTYPE_BOOL) {
            if (ew_word_is(s, "true")) {
                ((uint8_t *)out->data)[i] = 1;
                continue;
            }
            if (ew_word_is(s, "false")) {
                ((uint8_t *)out->data)[i] = 0;
                continue;
            }
        }
        if (cg_dtype_is_int(out->dtype)) {
            /* exact integer parse first; fall back to a float literal */
            errno = 0;
            if (out->dtype == CG_DTYPE_UINT64 && !strchr(s, '-')) {
                unsigned long long u = strtoull(s, &end, 10);
                if (end != s && errno == 0 && ew_rest_blank(end)) {
                    ((uint64_t *)out->data)[i] = (uint64_t)u;
                    continue;
                }
            } else {
                long long v = strtoll(s, &end, 10);
                if (end != s && errno == 0 && ew_rest_blank(end)) {
                    cg_tensor_set_i64(out, i, (int64_t)v);
                    continue;
                }
            }
        }
        double v = strtod(s, &end);
        if (end == s || !ew_rest_blank(end))
            return cg_kernel_fail(k, CG_RUNTIME, "cannot convert string \"%.64s\" (element %lld) to %s",
                                  s, (long long)i, cg_dtype_name(out->dtype));
        cg_tensor_set_f64(out, i, v);
    }
    return CG_OK;
}

/* --- number -> number ---------------------------------------------------------- */

static uint16_t ew_f32_to_half(float f, bool fp16)
{
    return fp16 ? cg_f32_to_fp16(f) : cg_f32_to_bf16(f);
}

static double ew_half_to_f64(uint16_t h, bool fp16)
{
    return fp16 ? cg_fp16_to_f32(h) : cg_bf16_to_f32(h);
}

/* Rounds a double to float16/bfloat16 once. Going through float rounds
 * twice, which differs only when the float lands exactly on a tie between
 * two half values while the double did not: then the double's side wins. */
static uint16_t ew_double_to_half(double v, bool fp16)
{
    const float f = (float)v;
    uint16_t h = ew_f32_to_half(f, fp16);
    if ((double)f != v && isfinite(f)) {
        uint16_t up = ew_f32_to_half(nextafterf(f, INFINITY), fp16);
        uint16_t down = ew_f32_to_half(nextafterf(f, -INFINITY), fp16);
        if (up != down &&
            (double)f == (ew_half_to_f64(up, fp16) + ew_half_to_f64(down, fp16)) / 2.0)
            h = v > (double)f ? up : down;
    }
    return h;
}

static void ew_cast_numeric(const cg_simd_ops *ops, const cg_tensor *x, cg_tensor *out)
{
    const int64_t n = x->numel;
    const cg_dtype from = x->dtype, to = out->dtype;

    /* Fast paths for the conversions models use in hot loops. */
    if (from == CG_DTYPE_FLOAT && to == CG_DTYPE_FLOAT16) {
        ops->f32_to_fp16((uint16_t *)out->data, (const float *)x->data, n);
        return;
    }
    if (from == CG_DTYPE_FLOAT16 && to == CG_DTYPE_FLOAT) {
        ops->fp16_to_f32((float *)out->data, (const uint16_t *)x->data, n);
        return;
    }
    if (from == CG_DTYPE_FLOAT && to == CG_DTYPE_DOUBLE) {
        const float *s = (const float *)x->data;
        double *d = (double *)out->data;
        for (int64_t i = 0; i < n; i++)
            d[i] = s[i];
        return;
    }
    if (from == CG_DTYPE_DOUBLE && to == CG_DTYPE_FLOAT) {
        const double *s = (const double *)x->data;
        float *d = (float *)out->data;
        for (int64_t i = 0; i < n; i++)
            d[i] = (float)s[i];
        return;
    }
    if (from == CG_DTYPE_INT64 && to == CG_DTYPE_FLOAT) {
        const int64_t *s = (const int64_t *)x->data;
        float *d = (float *)out->data;
        for (int64_t i = 0; i < n; i++)
            d[i] = (float)s[i]; /* one rounding, not two through double */
        return;
    }
    if (from == CG_DTYPE_INT32 && to == CG_DTYPE_FLOAT) { /* integer conv outputs */
        const int32_t *s = (const int32_t *)x->data;
        float *d = (float *)out->data;
        for (int64_t i = 0; i < n; i++)
            d[i] = (float)s[i];
        return;
    }
    if (from == CG_DTYPE_UINT8 && to == CG_DTYPE_FLOAT) {
        const uint8_t *s = (const uint8_t *)x->data;
        float *d = (float *)out->data;
        for (int64_t i = 0; i < n; i++)
            d[i] = (float)s[i];
        return;
    }
    if (from == CG_DTYPE_UINT64 && to == CG_DTYPE_FLOAT) {
        const uint64_t *s = (const uint64_t *)x->data;
        float *d = (float *)out->data;
        for (int64_t i = 0; i < n; i++)
            d[i] = (float)s[i];
        return;
    }
    if (from == CG_DTYPE_DOUBLE && (to == CG_DTYPE_FLOAT16 || to == CG_DTYPE_BFLOAT16)) {
        /* Round the double straight to half precision: going through float
         * first could round twice. */
        const double *s = (const double *)x->data;
        uint16_t *d = (uint16_t *)out->data;
        for (int64_t i = 0; i < n; i++)
            d[i] = ew_double_to_half(s[i], to == CG_DTYPE_FLOAT16);
        return;
    }
    const bool from_int = cg_dtype_is_int(from) || from == CG_DTYPE_BOOL;
    const bool to_int = cg_dtype_is_int(to) || to == CG_DTYPE_BOOL;
    if (from_int && to_int) {
        for (int64_t i = 0; i < n; i++)
            cg_tensor_set_i64(out, i, cg_tensor_get_i64(x, i));
    } else if (from_int) { /* int -> float */
        for (int64_t i = 0; i < n; i++) {
            double v = from == CG_DTYPE_UINT64 ? (double)((const uint64_t *)x->data)[i]
                                               : (double)cg_tensor_get_i64(x, i);
            cg_tensor_set_f64(out, i, v);
        }
    } else { /* float -> float or int */
        for (int64_t i = 0; i < n; i++)
            cg_tensor_set_f64(out, i, cg_tensor_get_f64(x, i));
    }
}

static cg_status ew_cast(cg_kernel_ctx *k, const cg_tensor *x, int64_t to_value)
{
    cg_tensor *out;
    cg_status st;

    if (!cg_dtype_valid(to_value))
        return cg_kernel_fail(k, CG_INVALID, "'to' = %lld is not a valid data type",
                              (long long)to_value);
    const cg_dtype to = (cg_dtype)to_value;
    if (!ew_cast_supported(x->dtype) || !ew_cast_supported(to))
        return cg_kernel_fail(k, CG_UNSUPPORTED, "cast from %s to %s is not supported",
                              cg_dtype_name(x->dtype), cg_dtype_name(to));
    st = cg_kernel_output(k, 0, to, x->rank, x->dims, &out);
    if (st != CG_OK)
        return st;
    if (x->numel == 0)
        return CG_OK;
    if (x->dtype == to && to != CG_DTYPE_STRING) {
        memcpy(out->data, x->data, cg_tensor_bytes(x));
        return CG_OK;
    }
    if (x->dtype == CG_DTYPE_STRING && to == CG_DTYPE_STRING) {
        for (int64_t i = 0; i < x->numel; i++) {
            size_t len;
            const char *s = cg_tensor_string(x, i, &len);
            if (len && cg_tensor_set_string(out, i, s, len) != CG_OK)
                return cg_kernel_fail(k, CG_NOMEM, "out of memory copying strings");
        }
        return CG_OK;
    }
    if (to == CG_DTYPE_STRING)
        return ew_to_string(k, x, out);
    if (x->dtype == CG_DTYPE_STRING)
        return ew_from_string(k, x, out);
    ew_cast_numeric(cg_simd_ops_get(cg_kernel_simd(k)), x, out);
    return CG_OK;
}

cg_status cg_op_cast(cg_kernel_ctx *k)
{
    const cg_tensor *x;
    cg_status st = cg_kernel_require(k, 0, &x);
    if (st != CG_OK)
        return st;
    if (!cg_kernel_attr(k, "to"))
        return cg_kernel_fail(k, CG_INVALID, "missing required attribute 'to'");
    return ew_cast(k, x, cg_attr_int(k, "to", 0));
}

cg_status cg_op_cast_like(cg_kernel_ctx *k)
{
    const cg_tensor *x, *like;
    cg_status st = cg_kernel_require(k, 0, &x);
    if (st == CG_OK)
        st = cg_kernel_require(k, 1, &like);
    if (st != CG_OK)
        return st;
    return ew_cast(k, x, like->dtype);
}
