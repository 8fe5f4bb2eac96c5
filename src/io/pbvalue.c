/*
 * ONNX test-data files: a serialized TensorProto, SequenceProto or
 * OptionalProto decoded straight into a cg_value.
 *
 * This is a second, deliberately small protobuf decoder, independent of the
 * model loader in src/load: conformance reads the expected outputs with it,
 * and an oracle must not be decoded by the code it judges. It reads only
 * what test data uses (dims, data_type, the typed data fields, raw_data and
 * the sequence/optional wrappers); external data is rejected. Every varint,
 * length and element count is checked against the bytes that remain, the
 * element count of the data must equal the product of the dims exactly,
 * and nesting is limited to PB_MAX_DEPTH.
 */
#include <stdlib.h>
#include <string.h>

#include "io/io_internal.h"

#define PB_MAX_DEPTH 16

typedef struct wire_field {
    uint32_t number;
    int wire;            /* 0 varint, 1 fixed64, 2 length-delimited, 5 fixed32 */
    uint64_t varint;     /* wire 0, or the raw bits for wire 1/5 */
    const uint8_t *data; /* wire 2 */
    size_t len;
} wire_field;

typedef struct wire_reader {
    const uint8_t *p, *end;
} wire_reader;

static bool wire_varint(wire_reader *r, uint64_t *out)
{
    uint64_t v = 0;
    for (int shift = 0; shift < 64; shift += 7) {
        if (r->p >= r->end)
            return false;
        uint8_t b = *r->p++;
        if (shift == 63 && b > 1)
            return false;
        v |= (uint64_t)(b & 0x7F) << shift;
        if (!(b & 0x80)) {
            *out = v;
            return true;
        }
    }
    return false;
}

/* Reads the next field; false on malformed or truncated input. */
static bool wire_next(wire_reader *r, wire_field *f)
{
    uint64_t key;
    if (!wire_varint(r, &key) || (key >> 3) == 0 || (key >> 3) > 0x1FFFFFFF)
        return false;
    f->number = (uint32_t)(key >> 3);
    f->wire = (int)(key & 7);
    f->data = NULL;
    f->len = 0;
    switch (f->wire) {
    case 0: return wire_varint(r, &f->varint);
    case 1:
        if (r->end - r->p < 8)
            return false;
        f->varint = (uint64_t)cg_io_le32(r->p) | (uint64_t)cg_io_le32(r->p + 4) << 32;
        r->p += 8;
        return true;
    case 5:
        if (r->end - r->p < 4)
            return false;
        f->varint = cg_io_le32(r->p);
        r->p += 4;
        return true;
    case 2: {
        uint64_t len;
        if (!wire_varint(r, &len) || len > (uint64_t)(r->end - r->p))
            return false;
        f->data = r->p;
        f->len = (size_t)len;
        r->p += len;
        return true;
    }
    default: return false; /* groups are not used by onnx.proto */
    }
}

/* --- TensorProto ------------------------------------------------------------- */

enum {
    TP_DIMS = 1,
    TP_DATA_TYPE = 2,
    TP_FLOAT_DATA = 4,
    TP_INT32_DATA = 5,
    TP_STRING_DATA = 6,
    TP_INT64_DATA = 7,
    TP_NAME = 8,
    TP_RAW_DATA = 9,
    TP_DOUBLE_DATA = 10,
    TP_UINT64_DATA = 11,
    TP_DATA_LOCATION = 14
};

/* The repeated field that carries dtype's values when raw_data is absent,
 * with how many field units make one element and their wire encoding. */
static uint32_t typed_field(cg_dtype dt, int *units, int *fixed)
{
    *units = 1;
    *fixed = 0;
    switch (dt) {
    case CG_DTYPE_FLOAT: *fixed = 4; return TP_FLOAT_DATA;
    case CG_DTYPE_COMPLEX64: *fixed = 4; *units = 2; return TP_FLOAT_DATA;
    case CG_DTYPE_DOUBLE: *fixed = 8; return TP_DOUBLE_DATA;
    case CG_DTYPE_COMPLEX128: *fixed = 8; *units = 2; return TP_DOUBLE_DATA;
    case CG_DTYPE_INT64: return TP_INT64_DATA;
    case CG_DTYPE_UINT32:
    case CG_DTYPE_UINT64: return TP_UINT64_DATA;
    case CG_DTYPE_STRING: return TP_STRING_DATA;
    default: return TP_INT32_DATA; /* int8..int32, uint8, uint16, bool, fp16, bf16, fp8 */
    }
}

/* Stores field unit k (of an element of width es, `units` per element). */
static void store_unit(cg_tensor *t, size_t es, int units, int fixed, int64_t k, uint64_t bits)
{
    uint8_t *dst = (uint8_t *)t->data + (size_t)k * (es / (size_t)units);
    if (fixed == 4) {
        uint32_t v = (uint32_t)bits;
        memcpy(dst, &v, 4);
        return;
    }
    if (fixed == 8) {
        memcpy(dst, &bits, 8);
        return;
    }
    switch (es) {
    case 1: {
        uint8_t v = (uint8_t)bits;
        if (t->dtype == CG_DTYPE_BOOL)
            v = bits != 0;
        *dst = v;
        break;
    }
    case 2: {
        uint16_t v = (uint16_t)bits;
        memcpy(dst, &v, 2);
        break;
    }
    case 4: {
        uint32_t v = (uint32_t)bits;
        memcpy(dst, &v, 4);
        break;
    }
    default: memcpy(dst, &bits, 8); break;
    }
}

static cg_status parse_tensor(const uint8_t *data, size_t size, const char *what,
                              size_t max_bytes, cg_tensor *out, cg_error *err)
{
    cg_status st = CG_OK;
    wire_reader r = {data, data + size};
    wire_field f;
    int64_t dims[CG_MAX_RANK];
    int rank = 0;
    int64_t dtype = 0;
    const uint8_t *raw = NULL;
    size_t raw_len = 0;
    bool external = false;
    cg_tensor t;
    memset(&t, 0, sizeof t);
    memset(out, 0, sizeof *out);

    /* Pass 1: shape, type, raw data. */
    while (r.p < r.end) {
        if (!wire_next(&r, &f))
            return cg_error_set(err, CG_PARSE, "%s: malformed TensorProto", what);
        if (f.number == TP_DIMS) {
            wire_reader pr = {f.data, f.data ? f.data + f.len : NULL};
            uint64_t v = f.varint;
            bool packed = f.wire == 2;
            if (!packed && f.wire != 0)
                return cg_error_set(err, CG_PARSE, "%s: TensorProto.dims has wire type %d",
                                    what, f.wire);
            while (!packed || pr.p < pr.end) {
                if (packed && !wire_varint(&pr, &v))
                    return cg_error_set(err, CG_PARSE, "%s: malformed TensorProto.dims", what);
                if (rank >= CG_MAX_RANK)
                    return cg_error_set(err, CG_LIMIT, "%s: tensor rank exceeds %d", what,
                                        CG_MAX_RANK);
                if ((int64_t)v < 0)
                    return cg_error_set(err, CG_INVALID, "%s: negative dimension %lld", what,
                                        (long long)(int64_t)v);
                dims[rank++] = (int64_t)v;
                if (!packed)
                    break;
            }
        } else if (f.number == TP_DATA_TYPE && f.wire == 0) {
            dtype = (int64_t)f.varint;
        } else if (f.number == TP_RAW_DATA && f.wire == 2) {
            raw = f.data;
            raw_len = f.len;
        } else if (f.number == TP_DATA_LOCATION && f.wire == 0) {
            external = f.varint == 1;
        }
    }
    if (external)
        return cg_error_set(err, CG_UNSUPPORTED, "%s: external tensor data is not supported in "
                            "test-data files", what);
    if (!cg_dtype_valid(dtype) || cg_tensor_elem_size((cg_dtype)dtype) == 0)
        return cg_error_set(err, CG_UNSUPPORTED, "%s: TensorProto data_type %lld is not "
                            "supported", what, (long long)dtype);
    st = cg_tensor_alloc(&t, (cg_dtype)dtype, rank, dims, cg_io_limit(max_bytes), err);
    if (st != CG_OK) {
        cg_error_prefix(err, "%s: ", what);
        return st;
    }
    size_t es = cg_tensor_elem_size(t.dtype);

    if (raw) {
        if (t.dtype == CG_DTYPE_STRING) {
            st = cg_error_set(err, CG_INVALID, "%s: string tensor with raw_data", what);
            goto fail;
        }
        if (raw_len != (size_t)t.numel * es) {
            st = cg_error_set(err, CG_INVALID, "%s: raw_data holds %zu bytes, %s shape needs "
                              "%zu", what, raw_len, cg_dtype_name(t.dtype),
                              (size_t)t.numel * es);
            goto fail;
        }
        if (raw_len)
            memcpy(t.data, raw, raw_len);
        if (t.dtype == CG_DTYPE_BOOL)
            for (int64_t i = 0; i < t.numel; i++)
                ((uint8_t *)t.data)[i] = ((uint8_t *)t.data)[i] != 0;
        *out = t;
        return CG_OK;
    }

    /* Pass 2: the typed repeated field, packed or not, possibly split. */
    int units, fixed;
    uint32_t field = typed_field(t.dtype, &units, &fixed);
    int64_t want = t.numel * units, k = 0;
    size_t str_total = cg_tensor_bytes(&t);
    r.p = data;
    while (r.p < r.end) {
        if (!wire_next(&r, &f)) {
            st = cg_error_set(err, CG_PARSE, "%s: malformed TensorProto", what);
            goto fail;
        }
        if (f.number != field)
            continue;
        if (field == TP_STRING_DATA) {
            if (f.wire != 2 || k >= want) {
                st = cg_error_set(err, CG_INVALID, "%s: more string_data entries than the "
                                  "%lld elements of the shape", what, (long long)t.numel);
                goto fail;
            }
            /* the limit covers the strings too, not just the element array */
            str_total += cg_string_heap_bytes(f.len);
            if (str_total > cg_io_limit(max_bytes)) {
                st = cg_error_set(err, CG_LIMIT, "%s: the strings take over the limit of %zu "
                                  "bytes", what, cg_io_limit(max_bytes));
                goto fail;
            }
            if (cg_tensor_set_string(&t, k++, (const char *)f.data, f.len) != CG_OK) {
                st = cg_error_set(err, CG_NOMEM, "%s: out of memory", what);
                goto fail;
            }
            continue;
        }
        int unpacked_wire = fixed == 4 ? 5 : fixed == 8 ? 1 : 0;
        if (f.wire == unpacked_wire) {
            if (k >= want)
                goto too_many;
            store_unit(&t, es, units, fixed, k++, f.varint);
            continue;
        }
        if (f.wire != 2) {
            st = cg_error_set(err, CG_PARSE, "%s: data field %u has wire type %d", what, field,
                              f.wire);
            goto fail;
        }
        if (fixed) {
            if (f.len % (size_t)fixed) {
                st = cg_error_set(err, CG_PARSE, "%s: packed data length %zu is not a multiple "
                                  "of %d", what, f.len, fixed);
                goto fail;
            }
            size_t n = f.len / (size_t)fixed;
            if ((uint64_t)n > (uint64_t)(want - k))
                goto too_many;
            for (size_t i = 0; i < n; i++) {
                const uint8_t *p = f.data + i * (size_t)fixed;
                uint64_t bits = fixed == 4 ? cg_io_le32(p)
                                           : (uint64_t)cg_io_le32(p) |
                                                 (uint64_t)cg_io_le32(p + 4) << 32;
                store_unit(&t, es, units, fixed, k++, bits);
            }
        } else {
            wire_reader pr = {f.data, f.data ? f.data + f.len : NULL};
            while (pr.p < pr.end) {
                uint64_t v;
                if (!wire_varint(&pr, &v)) {
                    st = cg_error_set(err, CG_PARSE, "%s: malformed packed varints", what);
                    goto fail;
                }
                if (k >= want)
                    goto too_many;
                store_unit(&t, es, units, fixed, k++, v);
            }
        }
    }
    if (k != want) {
        st = cg_error_set(err, CG_INVALID, "%s: tensor data holds %lld values, shape needs %lld",
                          what, (long long)k, (long long)want);
        goto fail;
    }
    *out = t;
    return CG_OK;
too_many:
    st = cg_error_set(err, CG_INVALID, "%s: tensor data holds more values than the %lld the "
                      "shape needs", what, (long long)want);
fail:
    cg_tensor_release(&t);
    return st;
}

/* --- SequenceProto / OptionalProto -------------------------------------------- */

enum { ELEM_UNDEFINED = 0, ELEM_TENSOR = 1, ELEM_SPARSE = 2, ELEM_SEQUENCE = 3, ELEM_MAP = 4,
       ELEM_OPTIONAL = 5 };

static cg_status parse_any(const uint8_t *data, size_t size, const cg_type *type,
                           const char *what, size_t max_bytes, int depth, cg_value **out,
                           cg_error *err);

static cg_value *value_new(cg_value_kind kind)
{
    cg_value *v = calloc(1, sizeof *v);
    if (v)
        v->kind = kind;
    return v;
}

static cg_status parse_sequence(const uint8_t *data, size_t size, const cg_type *type,
                                const char *what, size_t max_bytes, int depth, cg_value **out,
                                cg_error *err)
{
    cg_status st = CG_OK;
    wire_reader r = {data, data + size};
    wire_field f;
    int64_t elem_type = ELEM_UNDEFINED;
    size_t count = 0;
    cg_value *v = value_new(CG_VALUE_SEQUENCE);
    if (!v)
        return cg_error_set(err, CG_NOMEM, "out of memory");
    if (type && type->kind == CG_TYPE_SEQUENCE && type->elem && type->elem->has_elem_type)
        v->seq_dtype = (cg_dtype)type->elem->elem_type;
    while (r.p < r.end) {
        if (!wire_next(&r, &f)) {
            st = cg_error_set(err, CG_PARSE, "%s: malformed SequenceProto", what);
            goto fail;
        }
        if (f.number == 2 && f.wire == 0)
            elem_type = (int64_t)f.varint;
        else if (f.number == 3 && f.wire == 2)
            count++;
        else if (f.number >= 4 && f.number <= 7) {
            st = cg_error_set(err, CG_UNSUPPORTED, "%s: sequences of sparse tensors, sequences, "
                              "maps or optionals are not supported", what);
            goto fail;
        }
    }
    if (elem_type != ELEM_TENSOR && elem_type != ELEM_UNDEFINED) {
        st = cg_error_set(err, CG_UNSUPPORTED, "%s: sequence element type %lld is not supported",
                          what, (long long)elem_type);
        goto fail;
    }
    v->items = calloc(count ? count : 1, sizeof *v->items);
    if (!v->items) {
        st = cg_error_set(err, CG_NOMEM, "out of memory");
        goto fail;
    }
    r.p = data;
    while (r.p < r.end && wire_next(&r, &f)) {
        if (f.number != 3 || f.wire != 2)
            continue;
        cg_tensor t;
        st = parse_tensor(f.data, f.len, what, max_bytes, &t, err);
        if (st == CG_OK)
            st = cg_value_from_tensor(&t, &v->items[v->item_count], err);
        if (st != CG_OK) {
            cg_tensor_release(&t);
            cg_error_prefix(err, "sequence item %zu: ", v->item_count);
            goto fail;
        }
        if (v->item_count == 0 && !v->seq_dtype)
            v->seq_dtype = v->items[0]->tensor.dtype;
        v->item_count++;
    }
    (void)depth;
    *out = v;
    return CG_OK;
fail:
    cg_value_free(v);
    return st;
}

static cg_status parse_optional(const uint8_t *data, size_t size, const cg_type *type,
                                const char *what, size_t max_bytes, int depth, cg_value **out,
                                cg_error *err)
{
    cg_status st = CG_OK;
    wire_reader r = {data, data + size};
    wire_field f;
    const uint8_t *payload = NULL;
    size_t payload_len = 0;
    uint32_t payload_field = 0;
    cg_value *inner = NULL;
    cg_value *v = value_new(CG_VALUE_OPTIONAL);
    const cg_type *elem = type && type->kind == CG_TYPE_OPTIONAL ? type->elem : NULL;
    if (!v)
        return cg_error_set(err, CG_NOMEM, "out of memory");
    v->optional_is_sequence = elem && elem->kind == CG_TYPE_SEQUENCE;
    while (r.p < r.end) {
        if (!wire_next(&r, &f)) {
            st = cg_error_set(err, CG_PARSE, "%s: malformed OptionalProto", what);
            goto fail;
        }
        if (f.wire == 2 && f.number >= 3 && f.number <= 7) {
            if (f.number != 3 && f.number != 5) {
                st = cg_error_set(err, CG_UNSUPPORTED, "%s: optional of a sparse tensor, map or "
                                  "optional is not supported", what);
                goto fail;
            }
            payload = f.data;
            payload_len = f.len;
            payload_field = f.number;
        }
    }
    if (payload) {
        cg_type synth;
        memset(&synth, 0, sizeof synth);
        synth.kind = payload_field == 5 ? CG_TYPE_SEQUENCE : CG_TYPE_TENSOR;
        const cg_type *inner_type = elem && elem->kind == synth.kind ? elem : &synth;
        st = parse_any(payload, payload_len, inner_type, what, max_bytes, depth + 1, &inner,
                       err);
        if (st != CG_OK)
            goto fail;
        v->has_value = true;
        if (inner->kind == CG_VALUE_SEQUENCE) {
            v->optional_is_sequence = true;
            v->items = inner->items;
            v->item_count = inner->item_count;
            v->seq_dtype = inner->seq_dtype;
            inner->items = NULL;
            inner->item_count = 0;
        } else {
            v->optional_is_sequence = false;
            v->tensor = inner->tensor;
            memset(&inner->tensor, 0, sizeof inner->tensor);
        }
        cg_value_free(inner);
    } else if (elem && elem->kind == CG_TYPE_SEQUENCE && elem->elem && elem->elem->has_elem_type) {
        v->seq_dtype = (cg_dtype)elem->elem->elem_type;
    } else if (elem && elem->kind == CG_TYPE_TENSOR && elem->has_elem_type) {
        v->tensor.dtype = (cg_dtype)elem->elem_type;
    }
    *out = v;
    return CG_OK;
fail:
    cg_value_free(v);
    return st;
}

static cg_status parse_any(const uint8_t *data, size_t size, const cg_type *type,
                           const char *what, size_t max_bytes, int depth, cg_value **out,
                           cg_error *err)
{
    *out = NULL;
    if (depth > PB_MAX_DEPTH)
        return cg_error_set(err, CG_LIMIT, "%s: values nested deeper than %d", what,
                            PB_MAX_DEPTH);
    if (type && type->kind == CG_TYPE_SEQUENCE)
        return parse_sequence(data, size, type, what, max_bytes, depth, out, err);
    if (type && type->kind == CG_TYPE_OPTIONAL)
        return parse_optional(data, size, type, what, max_bytes, depth, out, err);
    if (type && type->kind != CG_TYPE_TENSOR && type->kind != CG_TYPE_NONE)
        return cg_error_set(err, CG_UNSUPPORTED, "%s: maps and sparse tensors are not supported",
                            what);
    cg_tensor t;
    cg_status st = parse_tensor(data, size, what, max_bytes, &t, err);
    if (st != CG_OK)
        return st;
    st = cg_value_from_tensor(&t, out, err);
    cg_tensor_release(&t);
    return st;
}

cg_status cg_io_pb_parse(const void *data, size_t size, const cg_type *type, const char *what,
                         size_t max_bytes, cg_value **out, cg_error *err)
{
    return parse_any(data, size, type, what, max_bytes, 0, out, err);
}

cg_status cg_io_pb_load(const char *path, const cg_type *type, size_t max_bytes,
                        cg_value **out, cg_error *err)
{
    uint8_t *buf;
    size_t size;
    *out = NULL;
    char *bytes = NULL;
    cg_status st = cg_file_read_all(path, cg_io_limit(max_bytes), &bytes, &size, err);
    if (st != CG_OK)
        return st;
    buf = (uint8_t *)bytes;
    st = cg_io_pb_parse(buf, size, type, path, max_bytes, out, err);
    free(buf);
    return st;
}
