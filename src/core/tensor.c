/*
 * Tensors and values (convgate/tensor.h): sizes, allocation, element access,
 * copies and freeing. The one allocation family for every stage: a tensor
 * or value made here owns its payload, strings and items (malloc'd).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "convgate/tensor.h"

size_t cg_tensor_elem_size(cg_dtype dtype)
{
    return dtype == CG_DTYPE_STRING ? sizeof(cg_string) : cg_dtype_size(dtype);
}

int64_t cg_shape_slice(int64_t rank, int64_t start, int64_t end, int64_t *first)
{
    if (start < 0)
        start += rank;
    if (end < 0)
        end += rank;
    start = start < 0 ? 0 : start > rank ? rank : start;
    end = end < 0 ? 0 : end > rank ? rank : end;
    *first = start;
    return end > start ? end - start : 0;
}

bool cg_shape_numel(int rank, const int64_t *dims, int64_t *out)
{
    /* the non-zero dims must multiply within int64 even when a 0 makes the
     * count 0: then every product of some of a tensor's dims (a kernel's
     * outer and inner extents, its strides) fits, empty or not */
    int64_t n = 1;
    bool empty = false;
    for (int i = 0; i < rank; i++) {
        if (dims[i] < 0)
            return false;
        if (dims[i] == 0) {
            empty = true;
            continue;
        }
        if (n > INT64_MAX / dims[i])
            return false;
        n *= dims[i];
    }
    *out = empty ? 0 : n;
    return true;
}

bool cg_shape_equal(int rank_a, const int64_t *a, int rank_b, const int64_t *b)
{
    if (rank_a != rank_b)
        return false;
    for (int i = 0; i < rank_a; i++)
        if (a[i] != b[i])
            return false;
    return true;
}

bool cg_tensor_byte_size(cg_dtype dtype, int64_t numel, size_t *out)
{
    size_t es = cg_tensor_elem_size(dtype);
    if (es == 0 || numel < 0)
        return false;
    if ((uint64_t)numel > SIZE_MAX / es)
        return false;
    *out = (size_t)numel * es;
    return true;
}

static uint64_t sat_add(uint64_t a, uint64_t b) { return a > UINT64_MAX - b ? UINT64_MAX : a + b; }

uint64_t cg_value_bytes(const cg_value *v)
{
    if (!v)
        return 0;
    uint64_t n = 0;
    const cg_tensor *t = &v->tensor;
    if (t->data && t->numel > 0) {
        n = cg_tensor_bytes(t);
        if (t->dtype == CG_DTYPE_STRING) {
            const cg_string *s = t->data;
            for (int64_t i = 0; i < t->numel; i++)
                if (s[i].data)
                    n = sat_add(n, cg_string_heap_bytes(s[i].len));
        }
    }
    for (size_t i = 0; i < v->item_count; i++)
        n = sat_add(n, cg_value_bytes(v->items[i]));
    return n;
}

void cg_value_clear(cg_value *v)
{
    if (!v)
        return;
    cg_tensor_release(&v->tensor);
    for (size_t i = 0; i < v->item_count; i++)
        cg_value_free(v->items[i]);
    free(v->items);
    v->items = NULL;
    v->item_count = 0;
}

void cg_value_free(cg_value *v)
{
    if (!v)
        return;
    cg_value_clear(v);
    free(v);
}

cg_status cg_value_alloc_tensor(cg_dtype dtype, int rank, const int64_t *dims, cg_value **out,
                                cg_error *err)
{
    cg_tensor t;
    *out = NULL;
    cg_status st = cg_tensor_alloc(&t, dtype, rank, dims, 0, err);
    if (st != CG_OK)
        return st;
    st = cg_value_from_tensor(&t, out, err);
    if (st != CG_OK)
        cg_tensor_release(&t);
    return st;
}

cg_status cg_tensor_set_string(cg_tensor *t, int64_t i, const char *s, size_t len)
{
    if (!t || t->dtype != CG_DTYPE_STRING || i < 0 || i >= t->numel || len == SIZE_MAX)
        return CG_INVALID;
    cg_string *slots = t->data;
    char *copy = NULL;
    if (len) { /* the empty string needs no allocation */
        copy = malloc(len + 1);
        if (!copy)
            return CG_NOMEM;
        memcpy(copy, s, len);
        copy[len] = '\0';
    }
    free(slots[i].data);
    slots[i].data = copy;
    slots[i].len = len;
    return CG_OK;
}

const char *cg_tensor_string(const cg_tensor *t, int64_t i, size_t *len)
{
    const cg_string *e = &((const cg_string *)t->data)[i];
    *len = e->data ? e->len : 0;
    return e->data ? e->data : "";
}

int cg_string_compare(const char *a, size_t alen, const char *b, size_t blen)
{
    size_t n = alen < blen ? alen : blen;
    int c = n ? memcmp(a, b, n) : 0;
    if (c != 0)
        return c;
    return alen < blen ? -1 : alen > blen;
}

/* Copies tensor payload src into the freshly allocated dst (same shape). */
static cg_status copy_tensor_data(cg_tensor *dst, const cg_tensor *src, cg_error *err)
{
    if (src->dtype != CG_DTYPE_STRING) {
        size_t bytes = cg_tensor_bytes(src);
        if (bytes)
            memcpy(dst->data, src->data, bytes);
        return CG_OK;
    }
    for (int64_t i = 0; i < src->numel; i++) {
        size_t len;
        const char *e = cg_tensor_string(src, i, &len);
        if (cg_tensor_set_string(dst, i, e, len) != CG_OK)
            return cg_error_set(err, CG_NOMEM, "out of memory copying a string tensor");
    }
    return CG_OK;
}

cg_status cg_value_copy(const cg_value *src, cg_value **out, cg_error *err)
{
    *out = NULL;
    cg_value *v = NULL;
    cg_status st;
    bool has_tensor = src->kind == CG_VALUE_TENSOR ||
                      (src->kind == CG_VALUE_OPTIONAL && src->has_value &&
                       !src->optional_is_sequence);
    if (has_tensor) {
        st = cg_value_alloc_tensor(src->tensor.dtype, src->tensor.rank, src->tensor.dims, &v,
                                   err);
        if (st != CG_OK)
            return st;
        st = copy_tensor_data(&v->tensor, &src->tensor, err);
        if (st != CG_OK)
            goto fail;
    } else {
        v = calloc(1, sizeof *v);
        if (!v)
            return cg_error_set(err, CG_NOMEM, "out of memory copying a value");
        v->tensor.dtype = src->tensor.dtype;
    }
    v->kind = src->kind;
    v->seq_dtype = src->seq_dtype;
    v->has_value = src->has_value;
    v->optional_is_sequence = src->optional_is_sequence;
    if (src->item_count) {
        v->items = calloc(src->item_count, sizeof *v->items);
        if (!v->items) {
            st = cg_error_set(err, CG_NOMEM, "out of memory copying a sequence");
            goto fail;
        }
        for (size_t i = 0; i < src->item_count; i++) {
            st = cg_value_copy(src->items[i], &v->items[i], err);
            if (st != CG_OK)
                goto fail;
            v->item_count = i + 1;
        }
    }
    *out = v;
    return CG_OK;
fail:
    cg_value_free(v);
    return st;
}


cg_status cg_tensor_alloc(cg_tensor *t, cg_dtype dtype, int rank, const int64_t *dims,
                          size_t max_bytes, cg_error *err)
{
    int64_t numel;
    size_t bytes;
    memset(t, 0, sizeof *t);
    if (!cg_dtype_valid(dtype))
        return cg_error_set(err, CG_UNSUPPORTED, "element type %d is not a known dtype",
                            (int)dtype);
    if (rank < 0 || rank > CG_MAX_RANK)
        return cg_error_set(err, CG_LIMIT, "rank %d exceeds the maximum of %d", rank,
                            CG_MAX_RANK);
    if (!cg_shape_numel(rank, dims, &numel))
        return cg_error_set(err, CG_LIMIT, "shape has a negative dimension or overflows");
    if (!cg_tensor_byte_size(dtype, numel, &bytes))
        return cg_error_set(err, CG_UNSUPPORTED, "%lld elements of %s have no byte size here",
                            (long long)numel, cg_dtype_name(dtype));
    if (max_bytes && bytes > max_bytes)
        return cg_error_set(err, CG_LIMIT, "%lld elements of %s (%zu bytes) exceed the limit of "
                            "%zu bytes", (long long)numel, cg_dtype_name(dtype), bytes,
                            max_bytes);
    /* Never a NULL data pointer, even for empty tensors: kernels may rely on it. */
    void *data = calloc(bytes ? bytes : 1, 1);
    if (!data)
        return cg_error_set(err, CG_NOMEM, "out of memory for %zu bytes", bytes);
    t->dtype = dtype;
    t->rank = rank;
    for (int i = 0; i < rank; i++)
        t->dims[i] = dims[i];
    t->numel = numel;
    t->data = data;
    return CG_OK;
}

cg_status cg_tensor_permute(const cg_tensor *src, const int *perm, cg_tensor *out,
                            cg_error *err)
{
    int64_t dims[CG_MAX_RANK], strides[CG_MAX_RANK], idx[CG_MAX_RANK] = {0};
    bool seen[CG_MAX_RANK] = {false};
    int r = src->rank;
    memset(out, 0, sizeof *out);
    if (src->dtype == CG_DTYPE_STRING)
        return cg_error_set(err, CG_UNSUPPORTED, "permuting string tensors is not supported");
    for (int d = 0; d < r; d++) {
        if (perm[d] < 0 || perm[d] >= r || seen[perm[d]])
            return cg_error_set(err, CG_USAGE, "perm is not a permutation of 0..%d", r - 1);
        seen[perm[d]] = true;
        dims[d] = src->dims[perm[d]];
    }
    int64_t st = 1; /* the dims multiply to numel, which fits */
    for (int d = r - 1; d >= 0; d--) {
        strides[d] = st;
        st *= src->dims[d];
    }
    cg_status s = cg_tensor_alloc(out, src->dtype, r, dims, 0, err);
    if (s != CG_OK)
        return s;
    size_t es = cg_tensor_bytes(src) / (size_t)(src->numel ? src->numel : 1);
    const uint8_t *in = src->data;
    uint8_t *o = out->data;
    for (int64_t k = 0; k < out->numel; k++) {
        int64_t from = 0;
        for (int d = 0; d < r; d++)
            from += idx[d] * strides[perm[d]];
        memcpy(o + (size_t)k * es, in + (size_t)from * es, es);
        for (int d = r - 1; d >= 0; d--) {
            if (++idx[d] < dims[d])
                break;
            idx[d] = 0;
        }
    }
    return CG_OK;
}

cg_status cg_tensor_convert(const cg_tensor *src, cg_dtype to, cg_tensor *out, cg_error *err)
{
    memset(out, 0, sizeof *out);
    if (src->dtype == CG_DTYPE_STRING || to == CG_DTYPE_STRING)
        return cg_error_set(err, CG_UNSUPPORTED, "cannot convert %s to %s",
                            cg_dtype_name(src->dtype), cg_dtype_name(to));
    cg_status st = cg_tensor_alloc(out, to, src->rank, src->dims, 0, err);
    if (st != CG_OK)
        return st;
    bool ints = !cg_dtype_is_float(src->dtype) && !cg_dtype_is_float(to);
    for (int64_t i = 0; i < out->numel; i++) {
        if (ints)
            cg_tensor_set_i64(out, i, cg_tensor_get_i64(src, i));
        else
            cg_tensor_set_f64(out, i, cg_tensor_get_f64(src, i));
    }
    return CG_OK;
}

void cg_tensor_release(cg_tensor *t)
{
    if (!t)
        return;
    if (t->dtype == CG_DTYPE_STRING && t->data) {
        cg_string *s = t->data;
        for (int64_t i = 0; i < t->numel; i++)
            free(s[i].data);
    }
    free(t->data);
    memset(t, 0, sizeof *t);
}

cg_status cg_value_from_tensor(cg_tensor *t, cg_value **out, cg_error *err)
{
    cg_value *v = calloc(1, sizeof *v);
    *out = NULL;
    if (!v)
        return cg_error_set(err, CG_NOMEM, "out of memory");
    v->kind = CG_VALUE_TENSOR;
    v->tensor = *t;
    v->seq_dtype = t->dtype;
    v->has_value = true;
    memset(t, 0, sizeof *t);
    *out = v;
    return CG_OK;
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

void cg_tensor_get_f64_block(const cg_tensor *t, int64_t at, int64_t n, double *out)
{
    switch (t->dtype) {
    case CG_DTYPE_FLOAT: {
        const float *d = (const float *)t->data + at;
        for (int64_t i = 0; i < n; i++)
            out[i] = d[i];
        return;
    }
    case CG_DTYPE_DOUBLE:
        if (n > 0)
            memcpy(out, (const double *)t->data + at, (size_t)n * sizeof *out);
        return;
    default:
        for (int64_t i = 0; i < n; i++)
            out[i] = cg_tensor_get_f64(t, at + i);
        return;
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
    case CG_DTYPE_FLOAT16: ((uint16_t *)d)[i] = cg_f64_to_fp16(v); return;
    case CG_DTYPE_BFLOAT16: ((uint16_t *)d)[i] = cg_f64_to_bf16(v); return;
    case CG_DTYPE_BOOL: ((uint8_t *)d)[i] = v != 0.0; return;
    case CG_DTYPE_COMPLEX64:
        ((float *)d)[2 * i] = (float)v;
        ((float *)d)[2 * i + 1] = 0.0f;
        return;
    case CG_DTYPE_COMPLEX128:
        ((double *)d)[2 * i] = v;
        ((double *)d)[2 * i + 1] = 0.0;
        return;
    default: break;
    }
    /* strings, float8 and 4-bit types are not set one element at a time:
     * nothing to write (and no call into cg_tensor_set_i64, which would
     * call back here forever) */
    if (!cg_dtype_is_int(t->dtype))
        return;
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
    return (size_t)t->numel * cg_tensor_elem_size(t->dtype);
}
