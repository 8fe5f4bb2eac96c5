/* Shape arithmetic and typed element access shared by every kernel. */
#include <math.h>
#include <string.h>

#include "run/kernel.h"

bool cg_shape_numel(int rank, const int64_t *dims, int64_t *out)
{
    int64_t n = 1;
    for (int i = 0; i < rank; i++) {
        if (dims[i] < 0)
            return false;
        if (dims[i] != 0 && n > INT64_MAX / dims[i])
            return false;
        n *= dims[i];
    }
    *out = n;
    return true;
}

bool cg_broadcast_shapes(int ra, const int64_t *a, int rb, const int64_t *b, int *rout,
                         int64_t *out)
{
    int r = ra > rb ? ra : rb;
    if (r > CG_MAX_RANK)
        return false;
    for (int i = 0; i < r; i++) {
        int ia = i - (r - ra), ib = i - (r - rb);
        int64_t da = ia >= 0 ? a[ia] : 1, db = ib >= 0 ? b[ib] : 1;
        if (da == db || db == 1)
            out[i] = da;
        else if (da == 1)
            out[i] = db;
        else
            return false;
    }
    *rout = r;
    return true;
}

void cg_broadcast_strides(int rin, const int64_t *in, int rout, const int64_t *out,
                          int64_t *strides)
{
    int64_t s = 1;
    for (int i = rout - 1; i >= 0; i--) {
        int j = i - (rout - rin);
        if (j < 0) {
            strides[i] = 0;
            continue;
        }
        strides[i] = (in[j] == 1 && out[i] != 1) ? 0 : s;
        s *= in[j];
    }
}

bool cg_normalize_axis(int64_t axis, int rank, int64_t *out)
{
    if (axis < -(int64_t)rank || axis >= rank)
        return false;
    *out = axis < 0 ? axis + rank : axis;
    return true;
}

double cg_tensor_get_f64(const cg_tensor *t, int64_t i)
{
    const void *d = t->data;
    switch (t->dtype) {
    case CG_DTYPE_FLOAT: return ((const float *)d)[i];
    case CG_DTYPE_DOUBLE: return ((const double *)d)[i];
    case CG_DTYPE_FLOAT16: return cg_fp16_to_f32(((const uint16_t *)d)[i]);
    case CG_DTYPE_BFLOAT16: return cg_bf16_to_f32(((const uint16_t *)d)[i]);
    case CG_DTYPE_INT8: return ((const int8_t *)d)[i];
    case CG_DTYPE_UINT8: return ((const uint8_t *)d)[i];
    case CG_DTYPE_INT16: return ((const int16_t *)d)[i];
    case CG_DTYPE_UINT16: return ((const uint16_t *)d)[i];
    case CG_DTYPE_INT32: return ((const int32_t *)d)[i];
    case CG_DTYPE_UINT32: return ((const uint32_t *)d)[i];
    case CG_DTYPE_INT64: return (double)((const int64_t *)d)[i];
    case CG_DTYPE_UINT64: return (double)((const uint64_t *)d)[i];
    case CG_DTYPE_BOOL: return ((const uint8_t *)d)[i] ? 1.0 : 0.0;
    default: return NAN;
    }
}

int64_t cg_tensor_get_i64(const cg_tensor *t, int64_t i)
{
    const void *d = t->data;
    switch (t->dtype) {
    case CG_DTYPE_INT8: return ((const int8_t *)d)[i];
    case CG_DTYPE_UINT8: return ((const uint8_t *)d)[i];
    case CG_DTYPE_INT16: return ((const int16_t *)d)[i];
    case CG_DTYPE_UINT16: return ((const uint16_t *)d)[i];
    case CG_DTYPE_INT32: return ((const int32_t *)d)[i];
    case CG_DTYPE_UINT32: return ((const uint32_t *)d)[i];
    case CG_DTYPE_INT64: return ((const int64_t *)d)[i];
    case CG_DTYPE_UINT64: return (int64_t)((const uint64_t *)d)[i];
    case CG_DTYPE_BOOL: return ((const uint8_t *)d)[i] ? 1 : 0;
    default: {
        double v = cg_tensor_get_f64(t, i);
        if (isnan(v))
            return 0;
        if (v >= 9.2233720368547758e18)
            return INT64_MAX;
        if (v <= -9.2233720368547758e18)
            return INT64_MIN;
        return (int64_t)v;
    }
    }
}

void cg_tensor_set_f64(cg_tensor *t, int64_t i, double v)
{
    void *d = t->data;
    switch (t->dtype) {
    case CG_DTYPE_FLOAT: ((float *)d)[i] = (float)v; return;
    case CG_DTYPE_DOUBLE: ((double *)d)[i] = v; return;
    case CG_DTYPE_FLOAT16: ((uint16_t *)d)[i] = cg_f32_to_fp16((float)v); return;
    case CG_DTYPE_BFLOAT16: ((uint16_t *)d)[i] = cg_f32_to_bf16((float)v); return;
    case CG_DTYPE_BOOL: ((uint8_t *)d)[i] = v != 0.0; return;
    default: break;
    }
    /* integers: truncate toward zero, NaN -> 0, clamp to int64 first */
    int64_t iv;
    if (isnan(v))
        iv = 0;
    else if (v >= 9.2233720368547758e18)
        iv = INT64_MAX;
    else if (v <= -9.2233720368547758e18)
        iv = INT64_MIN;
    else
        iv = (int64_t)v;
    if (t->dtype == CG_DTYPE_UINT64 && v >= 9.2233720368547758e18 && v < 1.8446744073709552e19) {
        ((uint64_t *)d)[i] = (uint64_t)v;
        return;
    }
    cg_tensor_set_i64(t, i, iv);
}

void cg_tensor_set_i64(cg_tensor *t, int64_t i, int64_t v)
{
    void *d = t->data;
    switch (t->dtype) {
    case CG_DTYPE_INT8: ((int8_t *)d)[i] = (int8_t)v; return;
    case CG_DTYPE_UINT8: ((uint8_t *)d)[i] = (uint8_t)v; return;
    case CG_DTYPE_INT16: ((int16_t *)d)[i] = (int16_t)v; return;
    case CG_DTYPE_UINT16: ((uint16_t *)d)[i] = (uint16_t)v; return;
    case CG_DTYPE_INT32: ((int32_t *)d)[i] = (int32_t)v; return;
    case CG_DTYPE_UINT32: ((uint32_t *)d)[i] = (uint32_t)v; return;
    case CG_DTYPE_INT64: ((int64_t *)d)[i] = v; return;
    case CG_DTYPE_UINT64: ((uint64_t *)d)[i] = (uint64_t)v; return;
    case CG_DTYPE_BOOL: ((uint8_t *)d)[i] = v != 0; return;
    default: cg_tensor_set_f64(t, i, (double)v); return;
    }
}

size_t cg_tensor_bytes(const cg_tensor *t)
{
    size_t es = t->dtype == CG_DTYPE_STRING ? sizeof(char *) : cg_dtype_size(t->dtype);
    return (size_t)t->numel * es;
}
