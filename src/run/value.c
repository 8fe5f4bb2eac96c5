/*
 * Runtime values: allocation, deep copies, freeing, and the conversion of a
 * TensorProto (inline typed fields, raw_data or resolved external payload)
 * into a dense cg_tensor.
 *
 * Ownership invariant: a cg_value made here owns its struct, its tensor data
 * (for STRING also every element string) and, for a sequence, its items.
 * The executor is the only place that holds values whose data it does not
 * own (arena slots, zero-copy initializers); it never hands those to
 * cg_value_free with the data pointer still set.
 */
#include <stdlib.h>
#include <string.h>

#include "ir/walk.h"
#include "run/exec.h"

/* --- TensorProto conversion ---------------------------------------------- */

static const char *proto_name(const cg_tensor_proto *tp)
{
    return tp->name ? tp->name : "(unnamed)";
}

/* Reads element i of a little-endian array that may be unaligned. */
static int32_t read_i32(const void *p, size_t i)
{
    int32_t v;
    memcpy(&v, (const uint8_t *)p + i * 4, 4);
    return v;
}

/* Fills t (allocated, numel elements) from the typed field. */
static cg_status fill_from_typed(cg_tensor *t, const cg_tensor_proto *tp, cg_proto_field f,
                                 cg_error *err)
{
    const char *name = proto_name(tp);
    size_t n = (size_t)t->numel;
    const cg_numbers *nums = NULL;
    switch (f) {
    case CG_PROTO_FIELD_FLOAT: nums = &tp->float_data; break;
    case CG_PROTO_FIELD_INT32: nums = &tp->int32_data; break;
    case CG_PROTO_FIELD_INT64: nums = &tp->int64_data; break;
    case CG_PROTO_FIELD_DOUBLE: nums = &tp->double_data; break;
    case CG_PROTO_FIELD_UINT64: nums = &tp->uint64_data; break;
    case CG_PROTO_FIELD_STRING:
        if (tp->string_count != n)
            return cg_error_set(err, CG_INVALID, "tensor '%s': %zu strings for %zu elements",
                                name, tp->string_count, n);
        for (size_t i = 0; i < n; i++) {
            const cg_bytes *b = &tp->string_data[i];
            if (cg_tensor_set_string(t, (int64_t)i, b->data ? (const char *)b->data : "",
                                     b->data ? b->len : 0) != CG_OK)
                return cg_error_set(err, CG_NOMEM, "tensor '%s': out of memory", name);
        }
        return CG_OK;
    case CG_PROTO_FIELD_NONE: break;
    }
    if (!nums)
        return cg_error_set(err, CG_UNSUPPORTED, "tensor '%s': dtype %s has no typed field",
                            name, cg_dtype_name(t->dtype));
    if (nums->count != cg_proto_field_values(t->dtype, (int64_t)n))
        return cg_error_set(err, CG_INVALID, "tensor '%s': %zu values for %zu elements of %s",
                            name, nums->count, n, cg_dtype_name(t->dtype));
    if (n == 0)
        return CG_OK;
    switch (f) {
    case CG_PROTO_FIELD_FLOAT:
    case CG_PROTO_FIELD_INT64:
    case CG_PROTO_FIELD_DOUBLE:
    case CG_PROTO_FIELD_UINT64:
        /* element width equals the field's width for these dtypes */
        memcpy(t->data, nums->data, cg_tensor_bytes(t));
        return CG_OK;
    default: break;
    }
    /* int32_data holds narrower types one per int32 (fp16/bf16 bit patterns). */
    for (size_t i = 0; i < n; i++) {
        int32_t v = read_i32(nums->data, i);
        switch (t->dtype) {
        case CG_DTYPE_INT32: ((int32_t *)t->data)[i] = v; break;
        case CG_DTYPE_INT16: ((int16_t *)t->data)[i] = (int16_t)v; break;
        case CG_DTYPE_UINT16:
        case CG_DTYPE_FLOAT16:
        case CG_DTYPE_BFLOAT16: ((uint16_t *)t->data)[i] = (uint16_t)v; break;
        case CG_DTYPE_INT8: ((int8_t *)t->data)[i] = (int8_t)v; break;
        case CG_DTYPE_BOOL: ((uint8_t *)t->data)[i] = v != 0; break;
        default: ((uint8_t *)t->data)[i] = (uint8_t)v; break; /* uint8, float8 */
        }
    }
    return CG_OK;
}

cg_status cg_value_from_proto_ex(const cg_tensor_proto *tp, bool allow_borrow, cg_value **out,
                                 bool *borrowed, cg_error *err)
{
    *out = NULL;
    if (borrowed)
        *borrowed = false;
    const char *name = proto_name(tp);
    if (!tp->has_data_type || !cg_dtype_valid(tp->data_type))
        return cg_error_set(err, CG_INVALID, "tensor '%s': undefined or unknown data_type %d",
                            name, (int)tp->data_type);
    cg_dtype dt = (cg_dtype)tp->data_type;
    if (tp->rank > CG_MAX_RANK)
        return cg_error_set(err, CG_UNSUPPORTED, "tensor '%s': rank %zu exceeds the runtime "
                            "maximum %d", name, tp->rank, CG_MAX_RANK);
    if (tp->has_segment)
        return cg_error_set(err, CG_UNSUPPORTED, "tensor '%s': segmented tensors are not "
                            "supported", name);
    int64_t numel;
    if (!cg_shape_numel((int)tp->rank, tp->dims, &numel))
        return cg_error_set(err, CG_INVALID, "tensor '%s': negative dimension or element "
                            "count overflow", name);
    size_t bytes;
    if (!cg_tensor_byte_size(dt, numel, &bytes))
        return cg_error_set(err, CG_UNSUPPORTED, "tensor '%s': dtype %s is not supported by "
                            "the runtime", name, cg_dtype_name(dt));

    bool external = tp->has_data_location && tp->data_location == CG_LOC_EXTERNAL;
    const cg_bytes *raw = NULL;
    if (external) {
        if (!tp->external_payload.data && numel > 0)
            return cg_error_set(err, CG_UNSUPPORTED, "tensor '%s': external data was not "
                                "loaded", name);
        raw = &tp->external_payload;
    } else if (tp->raw_data.data) {
        raw = &tp->raw_data;
    }
    cg_proto_field f = cg_proto_field_of(dt);
    int typed_fields = (tp->float_data.count > 0) + (tp->int32_data.count > 0) +
                       (tp->int64_data.count > 0) + (tp->double_data.count > 0) +
                       (tp->uint64_data.count > 0) + (tp->string_count > 0);
    if (typed_fields + (raw != NULL && raw->len > 0) > 1)
        return cg_error_set(err, CG_INVALID, "tensor '%s': payload set in several data "
                            "fields", name);
    if (raw && dt == CG_DTYPE_STRING)
        return cg_error_set(err, CG_INVALID, "tensor '%s': STRING data in raw_data", name);
    if (raw && raw->len != (dt == CG_DTYPE_STRING ? 0 : bytes))
        return cg_error_set(err, CG_INVALID, "tensor '%s': %zu payload bytes, expected %zu "
                            "(%lld x %s)", name, raw->len, bytes, (long long)numel,
                            cg_dtype_name(dt));

    /* The payload must match the shape before anything of that size is
     * allocated: a header claiming a huge shape with no data is rejected. */
    if (!raw) {
        if (f == CG_PROTO_FIELD_NONE)
            return cg_error_set(err, CG_UNSUPPORTED, "tensor '%s': dtype %s has no typed "
                                "field", name, cg_dtype_name(dt));
        size_t have = cg_proto_field_count(tp, f);
        if (have != cg_proto_field_values(dt, numel))
            return cg_error_set(err, CG_INVALID, "tensor '%s': %zu values for %lld elements of "
                                "%s", name, have, (long long)numel, cg_dtype_name(dt));
    }
    cg_value *v = NULL;
    cg_status st;
    if (raw && allow_borrow && dt != CG_DTYPE_STRING && dt != CG_DTYPE_BOOL && bytes > 0 &&
        ((uintptr_t)raw->data % cg_dtype_size(dt)) == 0) {
        /* Zero-copy: the kernel contract makes inputs read-only. The data
         * only needs its element type's alignment (kernels use unaligned
         * vector loads; BLAS takes any element-aligned matrix): exporters
         * lay raw_data out at arbitrary offsets, and copying vit_b_16's
         * 346 MB of weights was most of its set-up time. BOOL is copied
         * because the file may hold bytes other than 0 and 1. */
        v = calloc(1, sizeof *v);
        if (!v)
            return cg_error_set(err, CG_NOMEM, "tensor '%s': out of memory", name);
        v->kind = CG_VALUE_TENSOR;
        v->tensor.dtype = dt;
        v->tensor.rank = (int)tp->rank;
        for (size_t i = 0; i < tp->rank; i++)
            v->tensor.dims[i] = tp->dims[i];
        v->tensor.numel = numel;
        v->tensor.data = (void *)raw->data;
        v->seq_dtype = dt;
        v->has_value = true;
        if (borrowed)
            *borrowed = true;
        *out = v;
        return CG_OK;
    }
    st = cg_value_alloc_tensor(dt, (int)tp->rank, tp->dims, &v, err);
    if (st != CG_OK) {
        cg_error_prefix(err, "tensor '%s': ", name);
        return st;
    }
    if (raw) {
        if (bytes)
            memcpy(v->tensor.data, raw->data, bytes);
        if (dt == CG_DTYPE_BOOL) /* kernels may compare with 1 */
            for (size_t i = 0; i < bytes; i++)
                ((uint8_t *)v->tensor.data)[i] = ((uint8_t *)v->tensor.data)[i] != 0;
    } else if (numel > 0) {
        st = fill_from_typed(&v->tensor, tp, f, err);
        if (st != CG_OK) {
            cg_value_free(v);
            return st;
        }
    }
    *out = v;
    return CG_OK;
}

cg_status cg_value_from_tensor_proto(const cg_tensor_proto *tp, cg_value **out, cg_error *err)
{
    return cg_value_from_proto_ex(tp, false, out, NULL, err);
}

cg_status cg_value_from_sparse_proto(const cg_sparse_tensor_proto *sp, size_t max_bytes,
                                     cg_value **out, cg_error *err)
{
    *out = NULL;
    const char *name = sp->values && sp->values->name ? sp->values->name : "(unnamed)";
    if (!sp->values || !sp->indices)
        return cg_error_set(err, CG_INVALID, "sparse tensor '%s': values or indices missing",
                            name);
    if (sp->rank > CG_MAX_RANK)
        return cg_error_set(err, CG_UNSUPPORTED, "sparse tensor '%s': rank %zu too large", name,
                            sp->rank);
    cg_value *vals = NULL, *idx = NULL, *dense = NULL;
    cg_status st = cg_value_from_tensor_proto(sp->values, &vals, err);
    if (st != CG_OK)
        return st;
    if ((st = cg_value_from_tensor_proto(sp->indices, &idx, err)) != CG_OK)
        goto done;
    const cg_tensor *v = &vals->tensor, *ix = &idx->tensor;
    int64_t nnz = v->rank == 1 ? v->dims[0] : -1;
    int rank = (int)sp->rank;
    bool linear = ix->rank == 1 && ix->dims[0] == nnz;
    bool coords = ix->rank == 2 && ix->dims[0] == nnz && ix->dims[1] == rank;
    if (nnz < 0 || ix->dtype != CG_DTYPE_INT64 || !(linear || coords)) {
        st = cg_error_set(err, CG_INVALID, "sparse tensor '%s': values must be 1-D and indices "
                          "int64 [NNZ] or [NNZ, rank]", name);
        goto done;
    }
    /* the dense form can be far larger than the file: hold it to max_bytes */
    cg_tensor dt;
    if ((st = cg_tensor_alloc(&dt, v->dtype, rank, sp->dims, max_bytes, err)) != CG_OK) {
        cg_error_prefix(err, "sparse tensor '%s': ", name);
        goto done;
    }
    if ((st = cg_value_from_tensor(&dt, &dense, err)) != CG_OK) {
        cg_tensor_release(&dt);
        goto done;
    }
    const int64_t *ind = ix->data;
    for (int64_t i = 0; i < nnz; i++) {
        int64_t at = 0;
        if (linear) {
            at = ind[i];
        } else {
            for (int d = 0; d < rank; d++) {
                int64_t c = ind[i * rank + d];
                if (c < 0 || c >= sp->dims[d]) {
                    at = -1;
                    break;
                }
                at = at * sp->dims[d] + c;
            }
        }
        if (at < 0 || at >= dense->tensor.numel) {
            st = cg_error_set(err, CG_INVALID, "sparse tensor '%s': index %lld out of range",
                              name, (long long)i);
            goto done;
        }
        if (v->dtype == CG_DTYPE_STRING) {
            size_t len;
            const char *e = cg_tensor_string(v, i, &len);
            if (cg_tensor_set_string(&dense->tensor, at, e, len) != CG_OK) {
                st = cg_error_set(err, CG_NOMEM, "sparse tensor '%s': out of memory", name);
                goto done;
            }
        } else {
            size_t es = cg_dtype_size(v->dtype);
            memcpy((uint8_t *)dense->tensor.data + (size_t)at * es,
                   (const uint8_t *)v->data + (size_t)i * es, es);
        }
    }
    *out = dense;
    dense = NULL;
done:
    cg_value_free(vals);
    cg_value_free(idx);
    cg_value_free(dense);
    return st;
}
