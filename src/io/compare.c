/*
 * Value summaries (min/max/mean, NaN and Inf counts) and the comparison
 * conformance judges outputs with.
 *
 * The comparison follows ONNX's backend test runner (numpy assert_allclose
 * with equal_nan): dtype and shape must match exactly, each numeric element
 * must satisfy |got - want| <= atol + rtol * |want|, NaN matches only NaN,
 * an infinity only the same infinity, strings compare byte for byte.
 * 64-bit integers that are equal compare equal without a round trip
 * through double, so large int64 values never pass or fail by rounding.
 */
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "core/text.h"
#include "io/io_internal.h"

void cg_io_tensor_summary(const cg_tensor *t, cg_tensor_summary *out)
{
    double lo = INFINITY, hi = -INFINITY, sum = 0.0;
    memset(out, 0, sizeof *out);
    out->min = out->max = out->mean = NAN;
    bool complex = t->dtype == CG_DTYPE_COMPLEX64 || t->dtype == CG_DTYPE_COMPLEX128;
    if (t->dtype == CG_DTYPE_STRING || !t->data || cg_dtype_size(t->dtype) == 0)
        return;
    int64_t n = complex ? t->numel * 2 : t->numel;
    for (int64_t i = 0; i < n; i++) {
        double v;
        if (t->dtype == CG_DTYPE_COMPLEX64)
            v = ((const float *)t->data)[i];
        else if (t->dtype == CG_DTYPE_COMPLEX128)
            v = ((const double *)t->data)[i];
        else
            v = cg_tensor_get_f64(t, i);
        if (isnan(v)) {
            out->nan_count++;
            continue;
        }
        if (isinf(v)) {
            out->inf_count++;
            continue;
        }
        lo = v < lo ? v : lo;
        hi = v > hi ? v : hi;
        sum += v;
        out->finite_count++;
    }
    if (out->finite_count) {
        out->min = lo;
        out->max = hi;
        out->mean = sum / (double)out->finite_count;
    }
}

#if defined(__GNUC__) || defined(__clang__)
__attribute__((format(printf, 3, 4)))
#endif
static bool mismatch(char *why, size_t why_size, const char *fmt, ...)
{
    if (why && why_size) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(why, why_size, fmt, ap);
        va_end(ap);
    }
    return false;
}

static void shape_text(const cg_tensor *t, char *buf, size_t cap)
{
    size_t n = 0;
    buf[0] = '\0';
    n += (size_t)snprintf(buf, cap, "[");
    for (int d = 0; d < t->rank && n < cap; d++)
        n += (size_t)snprintf(buf + n, cap - n, "%s%" PRId64, d ? "," : "", t->dims[d]);
    if (n < cap)
        snprintf(buf + n, cap - n, "]");
}

/* Element i as a double (complex: part i of the interleaved pairs). */
static double elem_f64(const cg_tensor *t, int64_t i)
{
    if (t->dtype == CG_DTYPE_COMPLEX64)
        return ((const float *)t->data)[i];
    if (t->dtype == CG_DTYPE_COMPLEX128)
        return ((const double *)t->data)[i];
    return cg_tensor_get_f64(t, i);
}

static bool tensors_match(const cg_tensor *got, const cg_tensor *want, double rtol, double atol,
                          char *why, size_t why_size)
{
    char gs[160], ws[160];
    if (got->dtype != want->dtype)
        return mismatch(why, why_size, "dtype %s, expected %s", cg_dtype_name(got->dtype),
                        cg_dtype_name(want->dtype));
    if (!cg_shape_equal(got->rank, got->dims, want->rank, want->dims)) {
        shape_text(got, gs, sizeof gs);
        shape_text(want, ws, sizeof ws);
        return mismatch(why, why_size, "shape %s, expected %s", gs, ws);
    }
    if (want->numel == 0)
        return true;
    if (!got->data || !want->data)
        return mismatch(why, why_size, "tensor has no data");
    if (want->dtype == CG_DTYPE_STRING) {
        for (int64_t i = 0; i < want->numel; i++) {
            size_t gl, wl;
            const char *g = cg_tensor_string(got, i, &gl), *w = cg_tensor_string(want, i, &wl);
            if (cg_string_compare(g, gl, w, wl) != 0) {
                char gs[128], ws[128]; /* bytes from files: escaped, NULs shown */
                cg_text_escape(gs, sizeof gs, g, gl < 40 ? gl : 40);
                cg_text_escape(ws, sizeof ws, w, wl < 40 ? wl : 40);
                return mismatch(why, why_size, "element %" PRId64 ": \"%s\", expected \"%s\"",
                                i, gs, ws);
            }
        }
        return true;
    }
    if (cg_dtype_size(want->dtype) == 0)
        return mismatch(why, why_size, "cannot compare %s tensors", cg_dtype_name(want->dtype));
    bool complex = want->dtype == CG_DTYPE_COMPLEX64 || want->dtype == CG_DTYPE_COMPLEX128;
    bool int64ish = want->dtype == CG_DTYPE_INT64 || want->dtype == CG_DTYPE_UINT64;
    int64_t n = complex ? want->numel * 2 : want->numel;
    int64_t bad = 0, first = -1, worst = -1;
    double worst_excess = -1.0;
    for (int64_t i = 0; i < n; i++) {
        if (int64ish && ((const int64_t *)got->data)[i] == ((const int64_t *)want->data)[i])
            continue;
        double g = elem_f64(got, i), w = elem_f64(want, i);
        bool ok;
        if (isnan(w) || isnan(g))
            ok = isnan(w) && isnan(g);
        else if (isinf(w) || isinf(g))
            ok = g == w;
        else
            ok = fabs(g - w) <= atol + rtol * fabs(w);
        if (ok)
            continue;
        bad++;
        if (first < 0)
            first = i;
        double excess = isnan(g) || isnan(w) || isinf(g) || isinf(w)
                            ? INFINITY
                            : fabs(g - w) - (atol + rtol * fabs(w));
        if (excess > worst_excess) {
            worst_excess = excess;
            worst = i;
        }
    }
    if (!bad)
        return true;
    return mismatch(why, why_size,
                    "%" PRId64 " of %" PRId64 " values differ; first at %" PRId64
                    ": %.9g vs expected %.9g; worst at %" PRId64 ": %.9g vs expected %.9g",
                    bad, n, first, elem_f64(got, first), elem_f64(want, first), worst,
                    elem_f64(got, worst), elem_f64(want, worst));
}

static bool items_match(const cg_value *got, const cg_value *want, double rtol, double atol,
                        char *why, size_t why_size)
{
    if (got->item_count != want->item_count)
        return mismatch(why, why_size, "sequence of %zu items, expected %zu", got->item_count,
                        want->item_count);
    for (size_t i = 0; i < want->item_count; i++) {
        char inner[400];
        if (!got->items[i] || !want->items[i])
            return mismatch(why, why_size, "sequence item %zu is missing", i);
        if (!cg_io_values_match(got->items[i], want->items[i], rtol, atol, inner, sizeof inner))
            return mismatch(why, why_size, "sequence item %zu: %s", i, inner);
    }
    return true;
}

bool cg_io_values_match(const cg_value *got, const cg_value *want, double rtol, double atol,
                        char *why, size_t why_size)
{
    static const char *const kinds[] = {"tensor", "sequence", "optional"};
    if (!got || !want)
        return mismatch(why, why_size, "value missing");
    if (got->kind != want->kind)
        return mismatch(why, why_size, "a %s, expected a %s",
                        (unsigned)got->kind < 3 ? kinds[got->kind] : "?",
                        (unsigned)want->kind < 3 ? kinds[want->kind] : "?");
    switch (want->kind) {
    case CG_VALUE_TENSOR: return tensors_match(&got->tensor, &want->tensor, rtol, atol, why,
                                               why_size);
    case CG_VALUE_SEQUENCE: return items_match(got, want, rtol, atol, why, why_size);
    case CG_VALUE_OPTIONAL:
        if (got->has_value != want->has_value)
            return mismatch(why, why_size, "optional %s, expected %s",
                            got->has_value ? "has a value" : "is empty",
                            want->has_value ? "a value" : "empty");
        if (!want->has_value)
            return true;
        if (got->optional_is_sequence != want->optional_is_sequence)
            return mismatch(why, why_size, "optional holds a %s, expected a %s",
                            got->optional_is_sequence ? "sequence" : "tensor",
                            want->optional_is_sequence ? "sequence" : "tensor");
        if (want->optional_is_sequence)
            return items_match(got, want, rtol, atol, why, why_size);
        return tensors_match(&got->tensor, &want->tensor, rtol, atol, why, why_size);
    }
    return mismatch(why, why_size, "unknown value kind");
}
