/*
 * Helpers shared by the misc kernel family (rnn.c, resize.c, signal.c,
 * string.c, misc.c). Most of these kernels are not hot paths, so they read
 * floating inputs into double scratch arrays, compute in double, and round
 * once when writing the output; integer inputs (indices, sizes) are read
 * exactly through cg_tensor_get_i64.
 */
#ifndef CG_RUN_OPS_MISC_COMMON_H
#define CG_RUN_OPS_MISC_COMMON_H

#include <stdint.h>

#include "run/kernel.h"

/* True for the floating dtypes the float-only kernels of this family accept. */
static inline bool mc_is_float(cg_dtype dt)
{
    return dt == CG_DTYPE_FLOAT || dt == CG_DTYPE_DOUBLE || dt == CG_DTYPE_FLOAT16 ||
           dt == CG_DTYPE_BFLOAT16;
}

/* Copies a numeric tensor into double scratch; NULL (after recording a
 * failure) when scratch cannot be had. An empty tensor gives a valid pointer. */
static inline double *mc_to_f64(cg_kernel_ctx *k, const cg_tensor *t)
{
    size_t n = (size_t)t->numel;
    if (n > SIZE_MAX / sizeof(double)) {
        cg_kernel_fail(k, CG_LIMIT, "input of %lld elements is too large", (long long)t->numel);
        return NULL;
    }
    double *d = cg_kernel_scratch(k, (n ? n : 1) * sizeof(double));
    if (!d) {
        cg_kernel_fail(k, CG_NOMEM, "out of scratch memory (%zu doubles)", n);
        return NULL;
    }
    if (t->dtype == CG_DTYPE_FLOAT) {
        const float *s = t->data;
        for (size_t i = 0; i < n; i++)
            d[i] = s[i];
    } else if (t->dtype == CG_DTYPE_DOUBLE) {
        const double *s = t->data;
        for (size_t i = 0; i < n; i++)
            d[i] = s[i];
    } else {
        for (size_t i = 0; i < n; i++)
            d[i] = cg_tensor_get_f64(t, (int64_t)i);
    }
    return d;
}

/* Zeroed scratch of n doubles (n may be 0); NULL after recording a failure. */
static inline double *mc_scratch_f64(cg_kernel_ctx *k, int64_t n)
{
    if (n < 0 || (uint64_t)n > SIZE_MAX / sizeof(double)) {
        cg_kernel_fail(k, CG_LIMIT, "scratch of %lld elements is too large", (long long)n);
        return NULL;
    }
    double *d = cg_kernel_scratch(k, ((size_t)n ? (size_t)n : 1) * sizeof(double));
    if (!d) {
        cg_kernel_fail(k, CG_NOMEM, "out of scratch memory (%lld doubles)", (long long)n);
        return NULL;
    }
    for (int64_t i = 0; i < n; i++)
        d[i] = 0.0;
    return d;
}

/* Writes n doubles into a floating (or integer) output tensor. */
static inline void mc_from_f64(cg_tensor *t, const double *src)
{
    int64_t n = t->numel;
    if (t->dtype == CG_DTYPE_FLOAT) {
        float *d = t->data;
        for (int64_t i = 0; i < n; i++)
            d[i] = (float)src[i];
    } else if (t->dtype == CG_DTYPE_DOUBLE) {
        double *d = t->data;
        for (int64_t i = 0; i < n; i++)
            d[i] = src[i];
    } else {
        for (int64_t i = 0; i < n; i++)
            cg_tensor_set_f64(t, i, src[i]);
    }
}

/* Element count of a shape, failing with a message on overflow. */
static inline cg_status mc_numel(cg_kernel_ctx *k, int rank, const int64_t *dims, int64_t *out)
{
    if (!cg_shape_numel(rank, dims, out))
        return cg_kernel_fail(k, CG_INVALID, "shape overflows or has a negative dimension");
    return CG_OK;
}

#endif
