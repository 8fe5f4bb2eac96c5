/*
 * The random-input policy (convgate/samples.h): one generator per (seed,
 * sample, input) and one fill per dtype, with --range. Every random input
 * any command feeds comes from here: gate 2, gate 3, run, compare,
 * dump-ref, bisect, profile and assign.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "convgate/samples.h"
#include "core/rng.h"

/* --- the random-input policy ------------------------------------------------------ */

const cg_input_range *cg_random_range(const cg_random_inputs *p, const char *input)
{
    const cg_input_range *global = NULL;
    for (size_t i = 0; p && i < p->range_count; i++) {
        if (!p->ranges[i].input)
            global = &p->ranges[i];
        else if (input && strcmp(p->ranges[i].input, input) == 0)
            return &p->ranges[i];
    }
    return global;
}

void cg_random_seed(const cg_random_inputs *p, size_t sample, size_t input, cg_rng *rng)
{
    /* three splitmix64 steps: seed, then sample, then input, each mixed in */
    cg_rng_seed(rng, p ? p->seed : 0);
    uint64_t a = cg_rng_next(rng);
    cg_rng_seed(rng, a ^ ((uint64_t)sample * 0xbf58476d1ce4e5b9ull));
    uint64_t b = cg_rng_next(rng);
    cg_rng_seed(rng, b ^ ((uint64_t)input * 0x94d049bb133111ebull));
}

/* Uniform double in [0, 1) from the top 53 bits. */
static double rng_unit(cg_rng *rng)
{
    return cg_unit_interval(cg_rng_next(rng));
}

/* Integer limits a random value of dt must stay within. */
static void int_limits(cg_dtype dt, double *lo, double *hi)
{
    switch (dt) {
    case CG_DTYPE_INT8: *lo = -128; *hi = 127; return;
    case CG_DTYPE_INT16: *lo = -32768; *hi = 32767; return;
    case CG_DTYPE_INT32: *lo = -2147483648.0; *hi = 2147483647.0; return;
    case CG_DTYPE_UINT8: *lo = 0; *hi = 255; return;
    case CG_DTYPE_UINT16: *lo = 0; *hi = 65535; return;
    case CG_DTYPE_UINT32: *lo = 0; *hi = 4294967295.0; return;
    case CG_DTYPE_BOOL: *lo = 0; *hi = 1; return;
    default: *lo = -9223372036854775808.0; *hi = 9223372036854774784.0; return; /* < 2^63 */
    }
}

cg_status cg_random_fill(cg_tensor *t, const cg_input_range *range, cg_rng *rng, cg_error *err)
{
    cg_dtype dt = t->dtype;
    /* a range for every input leaves bools and strings to their defaults */
    if (range && !range->input && (dt == CG_DTYPE_BOOL || dt == CG_DTYPE_STRING))
        range = NULL;
    if (range && !(isfinite(range->lo) && isfinite(range->hi) && range->lo <= range->hi))
        return cg_error_set(err, CG_USAGE, "range %g,%g: give finite LO <= HI", range->lo,
                            range->hi);
    if (cg_dtype_is_float(dt)) {
        double lo = range ? range->lo : -1.0, hi = range ? range->hi : 1.0;
        for (int64_t i = 0; i < t->numel; i++) {
            double v = lo + rng_unit(rng) * (hi - lo);
            cg_tensor_set_f64(t, i, v);
            /* Rounding to a narrow type can land on HI: mirror it to keep
             * the interval half-open. */
            if (hi > lo && cg_tensor_get_f64(t, i) >= hi)
                cg_tensor_set_f64(t, i, lo + hi - v);
        }
        return CG_OK;
    }
    if (cg_dtype_is_int(dt) || dt == CG_DTYPE_BOOL) {
        double tlo, thi;
        int_limits(dt, &tlo, &thi);
        double lo = range ? ceil(range->lo) : 0, hi = range ? floor(range->hi) : 1;
        if (lo > hi)
            return cg_error_set(err, CG_USAGE, "range %g,%g holds no integer for %s", range->lo,
                                range->hi, cg_dtype_name(dt));
        if (lo < tlo || hi > thi)
            return cg_error_set(err, CG_USAGE, "range %g,%g is outside what %s holds (%.0f to "
                                "%.0f)", range->lo, range->hi, cg_dtype_name(dt), tlo, thi);
        int64_t base = (int64_t)lo;
        uint64_t span = (uint64_t)((int64_t)hi - base) + 1; /* 0: all 2^64 values */
        for (int64_t i = 0; i < t->numel; i++) {
            uint64_t r = cg_rng_next(rng);
            int64_t v = (int64_t)((uint64_t)base + (span ? r % span : r));
            if (dt == CG_DTYPE_BOOL)
                ((uint8_t *)t->data)[i] = (uint8_t)v;
            else
                cg_tensor_set_i64(t, i, v);
        }
        return CG_OK;
    }
    if (dt == CG_DTYPE_STRING) {
        if (range)
            return cg_error_set(err, CG_UNSUPPORTED, "a range does not apply to strings");
        for (int64_t i = 0; i < t->numel; i++) {
            char buf[32];
            int n = snprintf(buf, sizeof buf, "s%u", (unsigned)(cg_rng_next(rng) % 1000));
            cg_status st = cg_tensor_set_string(t, i, buf, (size_t)n);
            if (st != CG_OK)
                return cg_error_set(err, st, "out of memory");
        }
        return CG_OK;
    }
    return cg_error_set(err, CG_UNSUPPORTED, "no random fill for element type %s",
                        cg_dtype_name(dt));
}
