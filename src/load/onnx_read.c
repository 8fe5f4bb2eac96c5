/*
 * ModelProto wire bytes -> cg_model (include/convgate/model.h).
 *
 * Each message is read in two passes over its own bytes: the first counts
 * the repeated fields so their arrays are allocated once at their exact
 * size (the count is bounded by the bytes present, so a hostile count can
 * never ask for more than a small multiple of the file); the second fills
 * them. A known field arriving with an unexpected wire type is kept as an
 * unknown field, as protobuf itself does, so nothing is lost on save.
 * Tensor payloads are not copied: raw_data and packed float/double fields
 * point into the mapping.
 */
#include <stdlib.h>
#include <string.h>

#include "core/arena.h"
#include "load/load_internal.h"
#include "load/pbwire.h"

#define MAX_FIELD 32 /* field numbers tracked for counting; higher are unknown here */

static cg_status parse_fail(rd_ctx *c, const uint8_t *at, const char *why)
{
    return cg_error_set(c->err, CG_PARSE, "%s: malformed protobuf at byte %lld: %s", c->label,
                        (long long)(at - c->base), why);
}

static cg_status nomem(rd_ctx *c)
{
    return cg_error_set(c->err, CG_NOMEM, "%s: out of memory while reading the model", c->label);
}

/* Appends a field's raw bytes to an unknown-field record (zero-copy while
 * the unknown fields are contiguous in the file). */
static cg_status keep_unknown(rd_ctx *c, cg_bytes *u, const pb_field *f)
{
    size_t n = (size_t)(f->stop - f->start);
    if (!u->data) {
        u->data = f->start;
        u->len = n;
        return CG_OK;
    }
    if (u->data + u->len == f->start) {
        u->len += n;
        return CG_OK;
    }
    uint8_t *joined = cg_arena_alloc(c->arena, u->len + n);
    if (!joined)
        return nomem(c);
    memcpy(joined, u->data, u->len);
    memcpy(joined + u->len, f->start, n);
    u->data = joined;
    u->len += n;
    return CG_OK;
}

static cg_status read_string(rd_ctx *c, const pb_field *f, const char **out)
{
    if (memchr(f->data, 0, f->len))
        return parse_fail(c, f->start, "string field contains a NUL byte");
    char *s = cg_arena_strndup(c->arena, (const char *)f->data, f->len);
    if (!s)
        return nomem(c);
    *out = s;
    return CG_OK;
}

static void read_bytes(const pb_field *f, cg_bytes *out)
{
    static const uint8_t empty[1];
    out->data = f->len ? f->data : empty;
    out->len = f->len;
}

/* Counts the occurrences of each field number < MAX_FIELD. */
static cg_status count_fields(rd_ctx *c, const uint8_t *data, size_t len, size_t *counts)
{
    memset(counts, 0, MAX_FIELD * sizeof *counts);
    pb_reader r = {data, data + len};
    pb_field f;
    const char *why = NULL;
    pb_result res;
    while ((res = pb_next(&r, &f, &why)) == PB_FIELD)
        if (f.number < MAX_FIELD)
            counts[f.number]++;
    if (res == PB_ERROR)
        return parse_fail(c, f.start, why);
    return CG_OK;
}

static void *alloc_array(rd_ctx *c, size_t count, size_t size)
{
    if (count == 0)
        return NULL;
    return cg_arena_calloc(c->arena, count, size);
}

/* The end of a message reader (enter's other half). */
static cg_status leave(rd_ctx *c)
{
    c->depth--;
    return CG_OK;
}

static cg_status enter(rd_ctx *c, const uint8_t *at)
{
    if (++c->depth > c->opt.max_message_depth)
        return cg_error_set(c->err, CG_LIMIT,
                            "%s: protobuf messages nested deeper than %d at byte %lld", c->label,
                            c->opt.max_message_depth, (long long)(at - c->base));
    return CG_OK;
}

/* A repeated int64 field, unpacked (one varint) or packed (a run of them),
 * appended at arr[*count], at most cap elements in all. */
static cg_status read_varints(rd_ctx *c, const pb_field *f, int64_t *arr, size_t *count,
                              size_t cap, const char *what)
{
    if (f->wire == PB_VARINT) {
        if (*count >= cap)
            return parse_fail(c, f->start, what);
        arr[(*count)++] = (int64_t)f->u;
        return CG_OK;
    }
    pb_reader r = {f->data, f->data + f->len};
    uint64_t v;
    while (r.p < r.end) {
        if (!pb_read_varint(&r, &v) || *count >= cap)
            return parse_fail(c, r.p, what);
        arr[(*count)++] = (int64_t)v;
    }
    return CG_OK;
}

/* enter, and counts[k]: how many fields numbered k the message holds. */
static cg_status enter_counted(rd_ctx *c, const uint8_t *data, size_t len, size_t *counts)
{
    cg_status st = enter(c, data);
    return st == CG_OK ? count_fields(c, data, len, counts) : st;
}

#define ALLOC_REPEATED(arr, n)                                                                 \
    do {                                                                                       \
        if ((n) && !((arr) = alloc_array(c, (n), sizeof *(arr))))                             \
            return nomem(c);                                                                   \
    } while (0)

/* The field loop shared by every message reader. Within BODY, `f` is the
 * current field; `goto unknown` keeps it verbatim. */
#define FOR_EACH_FIELD(data, len, unknown_rec, ...)                                           \
    do {                                                                                       \
        pb_reader r_ = {(data), (data) + (len)};                                               \
        pb_field f;                                                                            \
        const char *why_ = NULL;                                                               \
        pb_result res_;                                                                        \
        while ((res_ = pb_next(&r_, &f, &why_)) == PB_FIELD) {                                \
            cg_status st_ = CG_OK;                                                             \
            __VA_ARGS__;                                                                       \
            continue;                                                                          \
        unknown:                                                                               \
            st_ = keep_unknown(c, (unknown_rec), &f);                                          \
            if (st_ != CG_OK)                                                                  \
                return st_;                                                                    \
        }                                                                                      \
        if (res_ == PB_ERROR)                                                                  \
            return parse_fail(c, f.start, why_);                                               \
    } while (0)

/* FOR_EACH_FIELD over a switch on the field number: CASES are its case
 * labels; any other field number is kept verbatim. */
#define FOR_EACH_CASE(data, len, unknown_rec, ...)                                            \
    FOR_EACH_FIELD(data, len, unknown_rec, {                                                   \
        switch (f.number) {                                                                    \
            __VA_ARGS__                                                                        \
        default: goto unknown;                                                                 \
        }                                                                                      \
        (void)st_;                                                                             \
    })

#define CHECK(expr)                                                                            \
    do {                                                                                       \
        cg_status s_ = (expr);                                                                 \
        if (s_ != CG_OK)                                                                       \
            return s_;                                                                         \
    } while (0)

#define WANT(w)                                                                                \
    if (f.wire != (w))                                                                         \
    goto unknown

/* A repeated int64 field in either encoding (read_varints). */
#define READ_VARINTS(arr, count, cap, what)                                                    \
    do {                                                                                       \
        if (f.wire != PB_VARINT && f.wire != PB_LEN)                                           \
            goto unknown;                                                                      \
        CHECK(read_varints(c, &f, (arr), &(count), (cap), (what)));                            \
    } while (0)

/* A length-delimited field: the next element of a repeated message field
 * (arr[count++]), a string, or one message allocated in the arena. */
#define READ_NEXT(fn, arr, count)                                                              \
    do {                                                                                       \
        WANT(PB_LEN);                                                                          \
        CHECK(fn(c, f.data, f.len, &(arr)[(count)++]));                                        \
    } while (0)

#define READ_STRING(dst)                                                                       \
    do {                                                                                       \
        WANT(PB_LEN);                                                                          \
        CHECK(read_string(c, &f, (dst)));                                                      \
    } while (0)

#define READ_ONE(fn, ptr)                                                                      \
    do {                                                                                       \
        WANT(PB_LEN);                                                                          \
        if (!((ptr) = cg_arena_alloc(c->arena, sizeof *(ptr))))                                \
            return nomem(c);                                                                   \
        CHECK(fn(c, f.data, f.len, (ptr)));                                                    \
    } while (0)

static cg_status read_pair(rd_ctx *c, const uint8_t *data, size_t len, cg_string_pair *out)
{
    CHECK(enter(c, data));
    FOR_EACH_CASE(data, len, &out->unknown,
        case 1: READ_STRING(&out->key); break;
        case 2: READ_STRING(&out->value); break;
    );
    return leave(c);
}

static cg_status read_opset(rd_ctx *c, const uint8_t *data, size_t len, cg_opset_id *out)
{
    CHECK(enter(c, data));
    FOR_EACH_CASE(data, len, &out->unknown,
        case 1: READ_STRING(&out->domain); break;
        case 2:
            WANT(PB_VARINT);
            out->version = (int64_t)f.u;
            out->has_version = true;
            break;
    );
    return leave(c);
}

static cg_status read_type(rd_ctx *c, const uint8_t *data, size_t len, cg_type *out);

static cg_status read_dim(rd_ctx *c, const uint8_t *data, size_t len, cg_dim *out)
{
    CHECK(enter(c, data));
    FOR_EACH_CASE(data, len, &out->unknown,
        case 1: /* oneof value: dim_value / dim_param, last wins */
            WANT(PB_VARINT);
            out->value = (int64_t)f.u;
            out->has_value = true;
            out->param = NULL;
            break;
        case 2:
            WANT(PB_LEN);
            CHECK(read_string(c, &f, &out->param));
            out->has_value = false;
            out->value = 0;
            break;
        case 3: READ_STRING(&out->denotation); break;
    );
    return leave(c);
}

static cg_status read_shape(rd_ctx *c, const uint8_t *data, size_t len, cg_shape *out)
{
    size_t counts[MAX_FIELD];
    CHECK(enter_counted(c, data, len, counts));
    if (counts[1] > CG_MAX_LOAD_RANK)
        return cg_error_set(c->err, CG_LIMIT, "%s: shape of rank %zu exceeds the limit of %d",
                            c->label, counts[1], CG_MAX_LOAD_RANK);
    ALLOC_REPEATED(out->dims, counts[1]);
    FOR_EACH_CASE(data, len, &out->unknown,
        case 1: READ_NEXT(read_dim, out->dims, out->rank); break;
    );
    return leave(c);
}

/* TypeProto.Tensor and TypeProto.SparseTensor share field numbers. */
static cg_status read_type_tensor(rd_ctx *c, const uint8_t *data, size_t len, cg_type *out)
{
    CHECK(enter(c, data));
    FOR_EACH_CASE(data, len, &out->inner_unknown,
        case 1:
            WANT(PB_VARINT);
            out->elem_type = (int32_t)f.u;
            out->has_elem_type = true;
            break;
        case 2: READ_ONE(read_shape, out->shape); break;
    );
    return leave(c);
}

/* TypeProto.Sequence / Optional: elem_type (1); Map: key_type (1), value_type (2). */
static cg_status read_type_wrapper(rd_ctx *c, const uint8_t *data, size_t len, cg_type *out)
{
    CHECK(enter(c, data));
    FOR_EACH_FIELD(data, len, &out->inner_unknown, {
        if (out->kind == CG_TYPE_MAP && f.number == 1) {
            WANT(PB_VARINT);
            out->map_key_type = (int32_t)f.u;
            out->has_map_key_type = true;
        } else if ((out->kind == CG_TYPE_MAP && f.number == 2) ||
                   (out->kind != CG_TYPE_MAP && f.number == 1)) {
            READ_ONE(read_type, out->elem);
        } else {
            goto unknown;
        }
        (void)st_;
    });
    return leave(c);
}

static cg_status read_type(rd_ctx *c, const uint8_t *data, size_t len, cg_type *out)
{
    CHECK(enter(c, data));
    FOR_EACH_FIELD(data, len, &out->unknown, {
        cg_type_kind kind = CG_TYPE_NONE;
        switch (f.number) {
        case 1: kind = CG_TYPE_TENSOR; break;
        case 4: kind = CG_TYPE_SEQUENCE; break;
        case 5: kind = CG_TYPE_MAP; break;
        case 8: kind = CG_TYPE_SPARSE_TENSOR; break;
        case 9: kind = CG_TYPE_OPTIONAL; break;
        case 6: READ_STRING(&out->denotation); continue;
        default: goto unknown;
        }
        WANT(PB_LEN);
        /* oneof: a later member replaces an earlier one */
        out->kind = kind;
        out->shape = NULL;
        out->elem = NULL;
        out->has_elem_type = out->has_map_key_type = false;
        out->inner_unknown.data = NULL;
        out->inner_unknown.len = 0;
        if (kind == CG_TYPE_TENSOR || kind == CG_TYPE_SPARSE_TENSOR)
            CHECK(read_type_tensor(c, f.data, f.len, out));
        else
            CHECK(read_type_wrapper(c, f.data, f.len, out));
        (void)st_;
    });
    return leave(c);
}

static cg_status read_value_info(rd_ctx *c, const uint8_t *data, size_t len, cg_value_info *out)
{
    CHECK(enter(c, data));
    FOR_EACH_CASE(data, len, &out->unknown,
        case 1: READ_STRING(&out->name); break;
        case 2: READ_ONE(read_type, out->type); break;
        case 3: READ_STRING(&out->doc_string); break;
    );
    return leave(c);
}

/* --- tensors ------------------------------------------------------------- */

/* Element count contributed by one occurrence of a repeated numeric field. */
static size_t numeric_count(const pb_field *f, size_t fixed_size)
{
    if (f->wire == PB_LEN)
        return fixed_size ? f->len / fixed_size : pb_packed_varint_count(f->data, f->len);
    return 1;
}

typedef enum num_kind { NUM_F32, NUM_F64, NUM_I32, NUM_I64, NUM_U64 } num_kind;

/* A repeated numeric field collector: counts first, then fills. */
typedef struct num_field {
    num_kind kind;
    size_t total; /* elements over all occurrences */
    size_t occurrences;
    size_t filled;
    uint8_t *buf; /* arena array, unless a single packed fixed-width run is referenced */
} num_field;

static size_t num_size(num_kind k) { return k == NUM_F32 || k == NUM_I32 ? 4 : 8; }
static bool num_fixed(num_kind k) { return k == NUM_F32 || k == NUM_F64; }

static bool num_wire_ok(num_kind k, uint32_t wire)
{
    if (wire == PB_LEN)
        return true;
    if (k == NUM_F32)
        return wire == PB_FIXED32;
    if (k == NUM_F64)
        return wire == PB_FIXED64;
    return wire == PB_VARINT;
}

static cg_status num_fill(rd_ctx *c, num_field *nf, const pb_field *f, cg_numbers *out)
{
    size_t es = num_size(nf->kind);
    if (nf->kind != NUM_F32 && nf->kind != NUM_F64 && f->wire == PB_LEN) {
        /* packed varints: decode */
        pb_reader r = {f->data, f->data + f->len};
        while (r.p < r.end) {
            uint64_t v;
            if (!pb_read_varint(&r, &v))
                return parse_fail(c, r.p, "truncated packed varint");
            if (nf->filled >= nf->total)
                return parse_fail(c, r.p, "packed field count mismatch");
            uint8_t *dst = nf->buf + nf->filled * es;
            if (nf->kind == NUM_I32) {
                int32_t x = (int32_t)(uint32_t)v;
                memcpy(dst, &x, 4);
            } else {
                memcpy(dst, &v, 8);
            }
            nf->filled++;
        }
    } else if (f->wire == PB_LEN) {
        if (f->len % es)
            return parse_fail(c, f->start, "packed fixed-width field length is not a multiple "
                                           "of the element size");
        if (nf->occurrences == 1) {
            out->data = f->data; /* zero-copy: little-endian like the file */
            out->count = f->len / es;
            return CG_OK;
        }
        if (f->len) { /* an empty packed run adds nothing (and buf may be NULL) */
            memcpy(nf->buf + nf->filled * es, f->data, f->len);
            nf->filled += f->len / es;
        }
    } else {
        uint8_t *dst = nf->buf + nf->filled * es;
        if (nf->kind == NUM_I32) {
            int32_t x = (int32_t)(uint32_t)f->u;
            memcpy(dst, &x, 4);
        } else if (nf->kind == NUM_F32) {
            uint32_t x = (uint32_t)f->u;
            memcpy(dst, &x, 4);
        } else {
            memcpy(dst, &f->u, 8);
        }
        nf->filled++;
    }
    out->data = nf->buf;
    out->count = nf->filled;
    return CG_OK;
}

static cg_status read_segment(rd_ctx *c, const uint8_t *data, size_t len, cg_tensor_proto *out)
{
    CHECK(enter(c, data));
    FOR_EACH_CASE(data, len, &out->segment_unknown,
        case 1:
            WANT(PB_VARINT);
            out->segment_begin = (int64_t)f.u;
            out->has_segment_begin = true;
            break;
        case 2:
            WANT(PB_VARINT);
            out->segment_end = (int64_t)f.u;
            out->has_segment_end = true;
            break;
    );
    return leave(c);
}

cg_status cg_read_tensor(rd_ctx *c, const uint8_t *data, size_t len, cg_tensor_proto *out)
{
    size_t counts[MAX_FIELD];
    CHECK(enter_counted(c, data, len, counts));
    num_field nums[5] = {{NUM_F32, 0, 0, 0, NULL}, {NUM_I32, 0, 0, 0, NULL},
                         {NUM_I64, 0, 0, 0, NULL}, {NUM_F64, 0, 0, 0, NULL},
                         {NUM_U64, 0, 0, 0, NULL}};
    static const uint32_t num_field_no[5] = {4, 5, 7, 10, 11};
    size_t dims_total = 0;
    {
        /* second counting pass for element totals of numeric fields */
        pb_reader r = {data, data + len};
        pb_field f;
        const char *why = NULL;
        while (pb_next(&r, &f, &why) == PB_FIELD) {
            if (f.number == 1 && (f.wire == PB_VARINT || f.wire == PB_LEN))
                dims_total += numeric_count(&f, 0);
            for (int k = 0; k < 5; k++)
                if (f.number == num_field_no[k] && num_wire_ok(nums[k].kind, f.wire)) {
                    nums[k].total += numeric_count(&f, num_fixed(nums[k].kind) ? num_size(nums[k].kind) : 0);
                    nums[k].occurrences++;
                }
        }
    }
    if (dims_total > CG_MAX_LOAD_RANK)
        return cg_error_set(c->err, CG_LIMIT, "%s: tensor of rank %zu exceeds the limit of %d",
                            c->label, dims_total, CG_MAX_LOAD_RANK);
    ALLOC_REPEATED(out->dims, dims_total);
    for (int k = 0; k < 5; k++) {
        /* one packed fixed-width run is referenced in place (see num_fill) */
        bool in_place = num_fixed(nums[k].kind) && nums[k].occurrences == 1 && nums[k].total > 1;
        if (nums[k].total && !in_place) {
            nums[k].buf = alloc_array(c, nums[k].total, num_size(nums[k].kind));
            if (!nums[k].buf)
                return nomem(c);
        }
    }
    ALLOC_REPEATED(out->string_data, counts[6]);
    ALLOC_REPEATED(out->external_data, counts[13]);
    cg_numbers *num_out[5] = {&out->float_data, &out->int32_data, &out->int64_data,
                              &out->double_data, &out->uint64_data};
    FOR_EACH_FIELD(data, len, &out->unknown, {
        int nk = -1;
        for (int k = 0; k < 5; k++)
            if (f.number == num_field_no[k])
                nk = k;
        if (nk >= 0) {
            if (!num_wire_ok(nums[nk].kind, f.wire))
                goto unknown;
            CHECK(num_fill(c, &nums[nk], &f, num_out[nk]));
            continue;
        }
        switch (f.number) {
        case 1: READ_VARINTS(out->dims, out->rank, dims_total, "malformed packed dims"); break;
        case 2:
            WANT(PB_VARINT);
            out->data_type = (int32_t)f.u;
            out->has_data_type = true;
            break;
        case 3:
            WANT(PB_LEN);
            out->has_segment = true;
            CHECK(read_segment(c, f.data, f.len, out));
            break;
        case 6: WANT(PB_LEN); read_bytes(&f, &out->string_data[out->string_count++]); break;
        case 8: READ_STRING(&out->name); break;
        case 9: WANT(PB_LEN); read_bytes(&f, &out->raw_data); break;
        case 12: READ_STRING(&out->doc_string); break;
        case 13: READ_NEXT(read_pair, out->external_data, out->external_count); break;
        case 14:
            WANT(PB_VARINT);
            out->data_location = (int32_t)f.u;
            out->has_data_location = true;
            break;
        default: goto unknown;
        }
        (void)st_;
    });
    c->depth--;
    return cg_register_tensor(c, out);
}

static cg_status read_sparse(rd_ctx *c, const uint8_t *data, size_t len,
                             cg_sparse_tensor_proto *out)
{
    CHECK(enter(c, data));
    size_t dims_total = 0;
    {
        pb_reader r = {data, data + len};
        pb_field f;
        const char *why = NULL;
        pb_result res;
        while ((res = pb_next(&r, &f, &why)) == PB_FIELD)
            if (f.number == 3 && (f.wire == PB_VARINT || f.wire == PB_LEN))
                dims_total += numeric_count(&f, 0);
        if (res == PB_ERROR)
            return parse_fail(c, f.start, why);
    }
    if (dims_total > CG_MAX_LOAD_RANK)
        return cg_error_set(c->err, CG_LIMIT, "%s: sparse tensor of rank %zu exceeds the limit",
                            c->label, dims_total);
    ALLOC_REPEATED(out->dims, dims_total);
    FOR_EACH_CASE(data, len, &out->unknown,
        case 1:
        case 2: {
            WANT(PB_LEN);
            cg_tensor_proto *t = cg_arena_alloc(c->arena, sizeof *t);
            if (!t)
                return nomem(c);
            CHECK(cg_read_tensor(c, f.data, f.len, t));
            if (f.number == 1)
                out->values = t;
            else
                out->indices = t;
            break;
        }
        case 3: READ_VARINTS(out->dims, out->rank, dims_total, "malformed packed dims"); break;
    );
    return leave(c);
}

/* --- graphs -------------------------------------------------------------- */

static cg_status read_graph(rd_ctx *c, const uint8_t *data, size_t len, cg_graph *out);

static cg_status read_subgraph(rd_ctx *c, const pb_field *f, cg_graph **out)
{
    if (++c->graph_depth > c->opt.max_subgraph_depth)
        return cg_error_set(c->err, CG_LIMIT,
                            "%s: subgraphs nested deeper than %d (If/Loop/Scan bodies)", c->label,
                            c->opt.max_subgraph_depth);
    cg_graph *g = cg_arena_alloc(c->arena, sizeof *g);
    if (!g)
        return nomem(c);
    CHECK(read_graph(c, f->data, f->len, g));
    c->graph_depth--;
    *out = g;
    return CG_OK;
}

static cg_status read_attr(rd_ctx *c, const uint8_t *data, size_t len, cg_attr *out)
{
    size_t counts[MAX_FIELD];
    CHECK(enter_counted(c, data, len, counts));
    /* floats (7) and ints (8) may be packed: count elements */
    size_t nfloats = 0, nints = 0;
    {
        pb_reader r = {data, data + len};
        pb_field f;
        const char *why = NULL;
        while (pb_next(&r, &f, &why) == PB_FIELD) {
            if (f.number == 7 && (f.wire == PB_FIXED32 || f.wire == PB_LEN))
                nfloats += numeric_count(&f, 4);
            if (f.number == 8 && (f.wire == PB_VARINT || f.wire == PB_LEN))
                nints += numeric_count(&f, 0);
        }
    }
    ALLOC_REPEATED(out->floats, nfloats);
    ALLOC_REPEATED(out->ints, nints);
    ALLOC_REPEATED(out->strings, counts[9]);
    ALLOC_REPEATED(out->tensors, counts[10]);
    ALLOC_REPEATED(out->graphs, counts[11]);
    ALLOC_REPEATED(out->sparse_tensors, counts[23]);
    ALLOC_REPEATED(out->type_protos, counts[15]);
    FOR_EACH_CASE(data, len, &out->unknown,
        case 1: READ_STRING(&out->name); break;
        case 21: READ_STRING(&out->ref_attr_name); break;
        case 13: READ_STRING(&out->doc_string); break;
        case 20:
            WANT(PB_VARINT);
            out->type = (int32_t)f.u;
            out->has_type = true;
            break;
        case 2: {
            WANT(PB_FIXED32);
            uint32_t bits = (uint32_t)f.u;
            memcpy(&out->f, &bits, 4);
            out->has_f = true;
            break;
        }
        case 3:
            WANT(PB_VARINT);
            out->i = (int64_t)f.u;
            out->has_i = true;
            break;
        case 4: WANT(PB_LEN); read_bytes(&f, &out->s); break;
        case 5: READ_ONE(cg_read_tensor, out->t); break;
        case 6: WANT(PB_LEN); CHECK(read_subgraph(c, &f, &out->g)); break;
        case 22: READ_ONE(read_sparse, out->sparse_tensor); break;
        case 14: READ_ONE(read_type, out->tp); break;
        case 7:
            if (f.wire == PB_FIXED32) {
                uint32_t bits = (uint32_t)f.u;
                memcpy(&out->floats[out->floats_count++], &bits, 4);
            } else if (f.wire == PB_LEN) {
                if (f.len % 4)
                    return parse_fail(c, f.start, "packed floats length not a multiple of 4");
                if (f.len == 0) /* an empty run: floats may be NULL (NULL + 0 is UB) */
                    break;
                memcpy(out->floats + out->floats_count, f.data, f.len);
                out->floats_count += f.len / 4;
            } else {
                goto unknown;
            }
            break;
        case 8: READ_VARINTS(out->ints, out->ints_count, nints, "malformed packed ints"); break;
        case 9: WANT(PB_LEN); read_bytes(&f, &out->strings[out->strings_count++]); break;
        case 10:
            READ_ONE(cg_read_tensor, out->tensors[out->tensors_count]);
            out->tensors_count++;
            break;
        case 11:
            WANT(PB_LEN);
            CHECK(read_subgraph(c, &f, &out->graphs[out->graphs_count]));
            out->graphs_count++;
            break;
        case 23:
            READ_ONE(read_sparse, out->sparse_tensors[out->sparse_tensors_count]);
            out->sparse_tensors_count++;
            break;
        case 15:
            READ_ONE(read_type, out->type_protos[out->type_protos_count]);
            out->type_protos_count++;
            break;
    );
    return leave(c);
}

static cg_status read_node(rd_ctx *c, const uint8_t *data, size_t len, cg_node *out)
{
    size_t counts[MAX_FIELD];
    CHECK(enter_counted(c, data, len, counts));
    ALLOC_REPEATED(out->inputs, counts[1]);
    ALLOC_REPEATED(out->outputs, counts[2]);
    ALLOC_REPEATED(out->attrs, counts[5]);
    FOR_EACH_CASE(data, len, &out->unknown,
        case 1: READ_STRING(&out->inputs[out->input_count++]); break;
        case 2: READ_STRING(&out->outputs[out->output_count++]); break;
        case 3: READ_STRING(&out->name); break;
        case 4: READ_STRING(&out->op_type); break;
        case 7: READ_STRING(&out->domain); break;
        case 6: READ_STRING(&out->doc_string); break;
        case 5: READ_NEXT(read_attr, out->attrs, out->attr_count); break;
    );
    return leave(c);
}

static cg_status read_annotation(rd_ctx *c, const uint8_t *data, size_t len,
                                 cg_tensor_annotation *out)
{
    size_t counts[MAX_FIELD];
    CHECK(enter_counted(c, data, len, counts));
    ALLOC_REPEATED(out->quant_params, counts[2]);
    FOR_EACH_CASE(data, len, &out->unknown,
        case 1: READ_STRING(&out->tensor_name); break;
        case 2: READ_NEXT(read_pair, out->quant_params, out->quant_param_count); break;
    );
    return leave(c);
}

static cg_status read_graph(rd_ctx *c, const uint8_t *data, size_t len, cg_graph *out)
{
    size_t counts[MAX_FIELD];
    CHECK(enter_counted(c, data, len, counts));
    ALLOC_REPEATED(out->nodes, counts[1]);
    ALLOC_REPEATED(out->initializers, counts[5]);
    ALLOC_REPEATED(out->sparse_initializers, counts[15]);
    ALLOC_REPEATED(out->inputs, counts[11]);
    ALLOC_REPEATED(out->outputs, counts[12]);
    ALLOC_REPEATED(out->value_infos, counts[13]);
    ALLOC_REPEATED(out->quant_annotations, counts[14]);
    FOR_EACH_CASE(data, len, &out->unknown,
        case 1: READ_NEXT(read_node, out->nodes, out->node_count); break;
        case 2: READ_STRING(&out->name); break;
        case 5: READ_NEXT(cg_read_tensor, out->initializers, out->initializer_count); break;
        case 15:
            READ_NEXT(read_sparse, out->sparse_initializers, out->sparse_initializer_count);
            break;
        case 10: READ_STRING(&out->doc_string); break;
        case 11: READ_NEXT(read_value_info, out->inputs, out->input_count); break;
        case 12: READ_NEXT(read_value_info, out->outputs, out->output_count); break;
        case 13: READ_NEXT(read_value_info, out->value_infos, out->value_info_count); break;
        case 14:
            READ_NEXT(read_annotation, out->quant_annotations, out->quant_annotation_count);
            break;
    );
    return leave(c);
}

static cg_status read_function(rd_ctx *c, const uint8_t *data, size_t len, cg_function *out)
{
    size_t counts[MAX_FIELD];
    CHECK(enter_counted(c, data, len, counts));
    ALLOC_REPEATED(out->inputs, counts[4]);
    ALLOC_REPEATED(out->outputs, counts[5]);
    ALLOC_REPEATED(out->attribute_names, counts[6]);
    ALLOC_REPEATED(out->attribute_protos, counts[11]);
    ALLOC_REPEATED(out->nodes, counts[7]);
    ALLOC_REPEATED(out->opsets, counts[9]);
    FOR_EACH_CASE(data, len, &out->unknown,
        case 1: READ_STRING(&out->name); break;
        case 4: READ_STRING(&out->inputs[out->input_count++]); break;
        case 5: READ_STRING(&out->outputs[out->output_count++]); break;
        case 6: READ_STRING(&out->attribute_names[out->attribute_name_count++]); break;
        case 11: READ_NEXT(read_attr, out->attribute_protos, out->attribute_proto_count); break;
        case 7: READ_NEXT(read_node, out->nodes, out->node_count); break;
        case 8: READ_STRING(&out->doc_string); break;
        case 9: READ_NEXT(read_opset, out->opsets, out->opset_count); break;
        case 10: READ_STRING(&out->domain); break;
    );
    return leave(c);
}

static cg_status read_training_info(rd_ctx *c, const uint8_t *data, size_t len,
                                    cg_training_info *out)
{
    size_t counts[MAX_FIELD];
    CHECK(enter_counted(c, data, len, counts));
    ALLOC_REPEATED(out->init_bindings, counts[3]);
    ALLOC_REPEATED(out->update_bindings, counts[4]);
    FOR_EACH_CASE(data, len, &out->unknown,
        case 1: WANT(PB_LEN); CHECK(read_subgraph(c, &f, &out->initialization)); break;
        case 2: WANT(PB_LEN); CHECK(read_subgraph(c, &f, &out->algorithm)); break;
        case 3: READ_NEXT(read_pair, out->init_bindings, out->init_binding_count); break;
        case 4: READ_NEXT(read_pair, out->update_bindings, out->update_binding_count); break;
    );
    return leave(c);
}

cg_status cg_read_model(rd_ctx *c, const uint8_t *data, size_t len, cg_model *out)
{
    size_t counts[MAX_FIELD];
    CHECK(count_fields(c, data, len, counts));
    if (counts[25] > c->opt.max_functions)
        return cg_error_set(c->err, CG_LIMIT, "%s: %zu local functions exceed the limit of %zu",
                            c->label, counts[25], c->opt.max_functions);
    ALLOC_REPEATED(out->opsets, counts[8]);
    ALLOC_REPEATED(out->metadata, counts[14]);
    ALLOC_REPEATED(out->training_infos, counts[20]);
    ALLOC_REPEATED(out->functions, counts[25]);
    c->depth = 0;
    FOR_EACH_FIELD(data, len, &out->unknown, {
        switch (f.number) {
        case 1:
            WANT(PB_VARINT);
            out->ir_version = (int64_t)f.u;
            out->has_ir_version = true;
            break;
        case 8: READ_NEXT(read_opset, out->opsets, out->opset_count); break;
        case 2: READ_STRING(&out->producer_name); break;
        case 3: READ_STRING(&out->producer_version); break;
        case 4: READ_STRING(&out->domain); break;
        case 5:
            WANT(PB_VARINT);
            out->model_version = (int64_t)f.u;
            out->has_model_version = true;
            break;
        case 6: READ_STRING(&out->doc_string); break;
        case 7: READ_ONE(read_graph, out->graph); break;
        case 14: READ_NEXT(read_pair, out->metadata, out->metadata_count); break;
        case 20:
            READ_NEXT(read_training_info, out->training_infos, out->training_info_count);
            break;
        case 25: READ_NEXT(read_function, out->functions, out->function_count); break;
        default: goto unknown;
        }
        (void)st_;
    });
    return CG_OK;
}
