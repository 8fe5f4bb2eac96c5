/*
 * The structural checker (include/convgate/check.h).
 *
 * It follows onnx.checker of ONNX 1.12 (onnx/checker.cc and
 * OpSchema::Verify) rule for rule, so that a model from the ONNX test data
 * passes here exactly when it passes there, and adds the hardening rules
 * onnx.checker lacks (graph outputs produced, tensor payload sizes,
 * overflow-checked element counts, subgraphs only on control-flow ops,
 * Loop/Scan/If body arity, function call cycles, training_info graphs).
 * Where a rule is ours and not onnx's, the code says so.
 *
 * Differences that are deliberate and keep agreement on the ONNX test data
 * (every model there imports ai.onnx opset <= 17 and has IR <= 8):
 *  - IR versions up to CG_CHECK_MAX_IR_VERSION (10) and ai.onnx opsets up to
 *    21 are accepted, where onnx 1.12 stops at IR 8 / opset 17. Schemas for
 *    opset <= 17 come from onnx 1.12 itself (schema_table.inc), so a model
 *    at opset <= 17 is judged against exactly the schemas onnx 1.12 uses;
 *    the hand-written 18-21 rows (schema_extra.inc) only come into play for
 *    models that import opset 18 or later, which onnx 1.12 cannot check.
 *  - "ai.onnx" is treated as the default domain, as the IR spec says.
 *  - Opset imports newer than the schema table knows are errors: the
 *    checker cannot vouch for them.
 *
 * Scopes: a graph's scope holds the names its inputs, initializers and
 * nodes define; a subgraph's scope points to the scope of the graph that
 * holds its node, so outer names are visible (and may not be redefined:
 * SSA is checked across scopes). Function bodies see only their own names.
 *
 * Every problem is recorded with the current path (ck->where), so nothing
 * stops at the first error; allocation failure is the only early exit.
 */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check/report.h"
#include "convgate/check.h"
#include "convgate/dtype.h"
#include "convgate/schema.h"
#include "core/strmap.h"
#include "ir/walk.h"

#define WHERE_MAX 2048
#define MESSAGE_MAX 1024
/* Subgraph and function-call nesting the checker follows; the loader caps
 * subgraph depth lower (32), this only bounds the C stack. */
#define MAX_DEPTH 64

/* ---- name sets and scopes -------------------------------------------- */

/* A set of borrowed strings (they live in the model): a string map whose
 * values are unused. */
typedef cg_strmap name_set;

typedef struct scope {
    name_set names;
    const struct scope *parent; /* enclosing graph's scope, or NULL */
} scope;

static bool set_has(const name_set *set, const char *name) { return cg_strmap_has(set, name); }

/* Adds name (no-op if present). Returns false only when memory ran out. */
static bool set_add(name_set *set, const char *name)
{
    return cg_strmap_add(set, name, 0) != CG_STRMAP_NONE;
}

static void set_free(name_set *set) { cg_strmap_free(set); }

static bool scope_has_any(const scope *sc, const char *name)
{
    for (; sc != NULL; sc = sc->parent)
        if (set_has(&sc->names, name))
            return true;
    return false;
}

/* ---- opset maps ------------------------------------------------------- */

typedef struct opset_entry {
    const char *domain; /* canonical: "" for ai.onnx */
    int64_t version;
} opset_entry;

/* One entry per domain, in first-import order, indexed by domain: a model
 * may import hundreds of thousands of domains, and every node looks its
 * domain up (a linear scan made check quadratic). */
typedef struct opset_map {
    opset_entry *entries;
    size_t count, cap;
    cg_strmap index; /* domain -> entry */
} opset_map;

static const char *canon_domain(const char *domain)
{
    return cg_domain_is_default(domain) ? "" : domain;
}

/* The imported version for domain, or -1. */
static int64_t opset_get(const opset_map *map, const char *domain)
{
    size_t e = cg_strmap_get(&map->index, canon_domain(domain));
    return e == CG_STRMAP_NONE ? -1 : map->entries[e].version;
}

/* Sets domain's version; a later import of a domain wins, like the
 * std::unordered_map assignment in onnx.checker. */
static bool opset_put(opset_map *map, const char *domain, int64_t version)
{
    domain = canon_domain(domain);
    size_t e = cg_strmap_get(&map->index, domain);
    if (e != CG_STRMAP_NONE) {
        map->entries[e].version = version;
        return true;
    }
    if (map->count == map->cap) {
        size_t cap = map->cap ? map->cap * 2 : 8;
        if (cap > SIZE_MAX / sizeof(opset_entry))
            return false;
        opset_entry *grown = realloc(map->entries, cap * sizeof *grown);
        if (grown == NULL)
            return false;
        map->entries = grown;
        map->cap = cap;
    }
    if (cg_strmap_add(&map->index, domain, map->count) == CG_STRMAP_NONE)
        return false;
    map->entries[map->count].domain = domain;
    map->entries[map->count].version = version;
    map->count++;
    return true;
}

static void opset_free(opset_map *map)
{
    free(map->entries);
    cg_strmap_free(&map->index);
    memset(map, 0, sizeof *map);
}

/* ---- checker state and problem recording ------------------------------ */

typedef struct checker {
    const cg_model *model;
    cg_check_report *report;
    size_t max_problems;
    bool oom;
    int64_t ir_version;
    opset_map model_opsets;
    char where[WHERE_MAX];
    size_t where_len;
    /* innermost node, for the report's node/op_type columns */
    const char *node_label;
    const char *op_type;
    int depth;
} checker;

/* Per-graph context: which opsets resolve node domains, and how strict. */
typedef struct graph_ctx {
    const opset_map *opsets;
    bool main_graph;  /* onnx relaxes value_info rules inside subgraphs */
    bool in_function; /* nodes of a function body, or graphs inside one */
} graph_ctx;

/* Records one problem at the current path. */
#if defined(__GNUC__) || defined(__clang__)
__attribute__((format(printf, 4, 5)))
#endif
static void problem(checker *ck, cg_check_severity sev, const char *rule, const char *fmt, ...)
{
    if (ck->oom) { /* still counted, as before memory ran out */
        if (sev == CG_CHECK_ERROR)
            ck->report->error_count++;
        else
            ck->report->warning_count++;
        return;
    }
    char msg[MESSAGE_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (!cg_check_report_add(ck->report, ck->max_problems, sev, rule,
                             ck->where_len ? ck->where : "model", ck->node_label, ck->op_type,
                             msg))
        ck->oom = true;
}

#define ERR(ck, rule, ...) problem((ck), CG_CHECK_ERROR, (rule), __VA_ARGS__)
#define WARN(ck, rule, ...) problem((ck), CG_CHECK_WARNING, (rule), __VA_ARGS__)

/* Appends " > <segment>" to the path; returns the length to restore. */
#if defined(__GNUC__) || defined(__clang__)
__attribute__((format(printf, 2, 3)))
#endif
static size_t where_push(checker *ck, const char *fmt, ...)
{
    size_t saved = ck->where_len;
    size_t room = sizeof ck->where - ck->where_len;
    int n = 0;
    if (ck->where_len > 0 && room > 3) {
        memcpy(ck->where + ck->where_len, " > ", 4);
        ck->where_len += 3;
        room -= 3;
    }
    va_list ap;
    va_start(ap, fmt);
    n = vsnprintf(ck->where + ck->where_len, room, fmt, ap);
    va_end(ap);
    if (n > 0)
        ck->where_len += (size_t)n < room ? (size_t)n : room - 1;
    return saved;
}

static void where_pop(checker *ck, size_t saved)
{
    ck->where_len = saved;
    ck->where[saved] = '\0';
}

/* A printable form of a possibly-absent string. */
static const char *str_or(const char *s, const char *absent)
{
    return s != NULL ? s : absent;
}

static bool str_empty(const char *s)
{
    return s == NULL || s[0] == '\0';
}

/* ---- tensors ---------------------------------------------------------- */

/* Element count of dims with overflow and sign checks. */
static bool tensor_numel(checker *ck, const int64_t *dims, size_t rank, const char *name,
                         int64_t *out)
{
    int64_t n = 1;
    for (size_t i = 0; i < rank; i++) {
        if (dims[i] < 0) {
            ERR(ck, "tensor-dims", "tensor '%s' has negative dimension %" PRId64 " at axis %zu",
                str_or(name, ""), dims[i], i);
            return false;
        }
        if (dims[i] != 0 && n > INT64_MAX / dims[i]) {
            ERR(ck, "tensor-numel-overflow",
                "tensor '%s': the element count of its dims overflows int64 at axis %zu",
                str_or(name, ""), i);
            return false;
        }
        n *= dims[i];
    }
    *out = n;
    return true;
}

/* Bytes a dense payload of n elements of dtype takes in raw_data. */
static bool payload_bytes(int32_t dtype, int64_t n, uint64_t *out)
{
    if (dtype == CG_DTYPE_UINT4 || dtype == CG_DTYPE_INT4) {
        *out = ((uint64_t)n + 1) / 2; /* two 4-bit values per byte */
        return true;
    }
    size_t es = cg_dtype_size((cg_dtype)dtype);
    if (es == 0)
        return false;
    if ((uint64_t)n > UINT64_MAX / es)
        return false;
    *out = (uint64_t)n * es;
    return true;
}

/* Parses a non-negative decimal integer external_data value. */
static bool parse_u64(const char *s, uint64_t *out)
{
    if (str_empty(s))
        return false;
    uint64_t v = 0;
    for (const char *p = s; *p; p++) {
        if (*p < '0' || *p > '9')
            return false;
        unsigned digit = (unsigned)(*p - '0');
        if (v > (UINT64_MAX - digit) / 10)
            return false;
        v = v * 10 + digit;
    }
    *out = v;
    return true;
}

static void check_external(checker *ck, const cg_tensor_proto *t, const char *name,
                           int64_t nelem, int num_fields, const char *field)
{
    if (num_fields != 0)
        ERR(ck, "tensor-data-fields",
            "tensor '%s' is stored externally and must not have a data field, but has %s", name,
            field);
    bool has_location = false;
    bool has_length = false;
    uint64_t length = 0;
    for (size_t i = 0; i < t->external_count; i++) {
        const cg_string_pair *kv = &t->external_data[i];
        const char *key = str_or(kv->key, "");
        uint64_t value = 0;
        if (strcmp(key, "location") == 0) {
            if (kv->value != NULL)
                has_location = !str_empty(kv->value) || has_location;
            if (kv->value != NULL && kv->value[0] == '\0')
                ERR(ck, "tensor-external", "tensor '%s': external data location is empty", name);
        } else if (strcmp(key, "offset") == 0 || strcmp(key, "length") == 0) {
            if (!parse_u64(kv->value, &value)) {
                ERR(ck, "tensor-external",
                    "tensor '%s': external data %s '%s' is not a non-negative integer", name, key,
                    str_or(kv->value, "(absent)"));
            } else if (key[0] == 'l') {
                has_length = true;
                length = value;
            }
        } else if (strcmp(key, "checksum") != 0) {
            /* Ours: onnx >= 1.21 whitelists these keys (CVE-2026-34445). */
            ERR(ck, "tensor-external", "tensor '%s': unknown external data key '%s'", name, key);
        }
    }
    if (!has_location) {
        ERR(ck, "tensor-external", "tensor '%s' is stored externally but has no location", name);
        return;
    }
    uint64_t expected = 0;
    if (t->data_type == CG_DTYPE_STRING) {
        ERR(ck, "tensor-external", "tensor '%s': STRING data cannot be stored externally", name);
        return;
    }
    if (!payload_bytes(t->data_type, nelem, &expected))
        return;
    /* Ours: the payload must be exactly the tensor's size (reliability #9). */
    if (has_length && length != expected)
        ERR(ck, "tensor-external",
            "tensor '%s': external data length %" PRIu64 " != %" PRId64
            " elements x element size = %" PRIu64 " bytes",
            name, length, nelem, expected);
    if (t->external_payload.data != NULL && t->external_payload.len != expected)
        ERR(ck, "tensor-external",
            "tensor '%s': external payload is %zu bytes, expected %" PRIu64, name,
            t->external_payload.len, expected);
}

/* Checks one TensorProto (onnx check_tensor, plus payload sizes).
 * `what` names it when it has no name ("initializer #3"). */
static void check_tensor(checker *ck, const cg_tensor_proto *t, const char *what)
{
    const char *name = !str_empty(t->name) ? t->name : what;
    if (!t->has_data_type) {
        ERR(ck, "tensor-dtype", "tensor '%s' has no data_type", name);
        return;
    }
    if (t->data_type == CG_DTYPE_UNDEFINED) {
        ERR(ck, "tensor-dtype", "tensor '%s' has data_type UNDEFINED", name);
        return;
    }
    if (!cg_dtype_valid(t->data_type)) {
        ERR(ck, "tensor-dtype", "tensor '%s' has unknown data_type %" PRId32, name, t->data_type);
        return;
    }
    int num_fields = 0;
    const char *field = NULL;
#define COUNT_FIELD(present, fname)                                                            \
    do {                                                                                       \
        if (present) {                                                                         \
            num_fields++;                                                                      \
            field = fname;                                                                     \
        }                                                                                      \
    } while (0)
    COUNT_FIELD(t->float_data.count > 0, "float_data");
    COUNT_FIELD(t->int32_data.count > 0, "int32_data");
    COUNT_FIELD(t->string_count > 0, "string_data");
    COUNT_FIELD(t->int64_data.count > 0, "int64_data");
    COUNT_FIELD(t->raw_data.data != NULL && t->raw_data.len > 0, "raw_data");
    COUNT_FIELD(t->double_data.count > 0, "double_data");
    COUNT_FIELD(t->uint64_data.count > 0, "uint64_data");
#undef COUNT_FIELD

    int64_t nelem = 0;
    if (!tensor_numel(ck, t->dims, t->rank, name, &nelem))
        return;
    uint64_t total_bytes = 0;
    if (cg_dtype_size((cg_dtype)t->data_type) != 0 &&
        (!payload_bytes(t->data_type, nelem, &total_bytes) || total_bytes > (uint64_t)INT64_MAX)) {
        /* Ours: the count fits but count x element size does not (CVE-2022-23558 class). */
        ERR(ck, "tensor-bytes-overflow",
            "tensor '%s': %" PRId64 " elements of %s overflow a 64-bit byte size", name, nelem,
            cg_dtype_name((cg_dtype)t->data_type));
        return;
    }
    if (t->has_data_location && t->data_location == CG_LOC_EXTERNAL) {
        check_external(ck, t, name, nelem, num_fields, field);
        return;
    }
    if (nelem == 0 && num_fields != 0) {
        ERR(ck, "tensor-data-fields", "tensor '%s' has 0 elements but contains data in %s", name,
            field);
        return;
    }
    if (nelem != 0 && num_fields != 1) {
        ERR(ck, "tensor-data-fields",
            "tensor '%s' must have exactly one data field, but has %d (%" PRId64 " elements)",
            name, num_fields, nelem);
        return;
    }
    if (nelem == 0)
        return;
    if (t->raw_data.data != NULL && t->raw_data.len > 0) {
        if (t->data_type == CG_DTYPE_STRING) {
            ERR(ck, "tensor-string-raw", "tensor '%s': STRING data must not be in raw_data", name);
            return;
        }
        uint64_t expected = 0;
        /* Ours: onnx 1.12 does not compare the size (o#8109). */
        if (payload_bytes(t->data_type, nelem, &expected) && t->raw_data.len != expected)
            ERR(ck, "tensor-data-size",
                "tensor '%s': raw_data is %zu bytes, but %" PRId64 " elements of %s need %" PRIu64,
                name, t->raw_data.len, nelem, cg_dtype_name((cg_dtype)t->data_type), expected);
        return;
    }

    /* The typed field the dtype must use, and how many values it needs. */
    cg_proto_field f = cg_proto_field_of(t->data_type);
    if (f == CG_PROTO_FIELD_NONE) {
        ERR(ck, "tensor-dtype", "tensor '%s' has unsupported data_type %" PRId32, name,
            t->data_type);
        return;
    }
    const char *want = cg_proto_field_name(f);
    size_t have = cg_proto_field_count(t, f);
    uint64_t need = cg_proto_field_values(t->data_type, nelem);
    if (strcmp(want, field) != 0) {
        ERR(ck, "tensor-data-fields", "tensor '%s': values of data_type %s must be in %s, not %s",
            name, cg_dtype_name((cg_dtype)t->data_type), want, field);
        return;
    }
    /* Ours: onnx 1.12 does not compare the count. */
    if ((uint64_t)have != need)
        ERR(ck, "tensor-data-size", "tensor '%s': %s holds %zu values, but its dims need %" PRIu64,
            name, want, have, need);
}

/* Reads index i of an INT64 tensor whose payload was found to hold at least
 * i+1 values (see sparse_index_count). */
static int64_t index_at(const cg_tensor_proto *t, size_t i)
{
    int64_t v = 0;
    if (t->int64_data.count > 0) {
        memcpy(&v, (const uint8_t *)t->int64_data.data + i * sizeof v, sizeof v);
        return v;
    }
    const uint8_t *base =
        t->raw_data.data != NULL && t->raw_data.len > 0 ? t->raw_data.data : t->external_payload.data;
    uint64_t u = 0;
    for (int b = 7; b >= 0; b--) /* little-endian on every host */
        u = (u << 8) | base[i * 8 + (size_t)b];
    memcpy(&v, &u, sizeof v);
    return v;
}

/* Number of int64 values the indices tensor actually holds. */
static size_t sparse_index_count(const cg_tensor_proto *t)
{
    if (t->int64_data.count > 0)
        return t->int64_data.count;
    if (t->raw_data.data != NULL && t->raw_data.len > 0)
        return t->raw_data.len / 8;
    if (t->external_payload.data != NULL)
        return t->external_payload.len / 8;
    return 0;
}

static void check_sparse(checker *ck, const cg_sparse_tensor_proto *sp, const char *what)
{
    if (sp->values == NULL) {
        ERR(ck, "sparse", "sparse tensor %s has no values", what);
        return;
    }
    const cg_tensor_proto *values = sp->values;
    const char *name = !str_empty(values->name) ? values->name : what;
    size_t before = ck->report->error_count;
    check_tensor(ck, values, what);
    if (values->rank != 1) {
        ERR(ck, "sparse", "sparse tensor '%s': values must have rank 1, not %zu", name,
            values->rank);
        return;
    }
    if (values->dims[0] < 0)
        return; /* reported by check_tensor */
    uint64_t nnz = (uint64_t)values->dims[0];
    if (sp->rank == 0) {
        ERR(ck, "sparse", "sparse tensor '%s' must have a dense rank > 0", name);
        return;
    }
    int64_t dense_size = 1;
    for (size_t i = 0; i < sp->rank; i++) {
        if (sp->dims[i] <= 0) {
            ERR(ck, "sparse", "sparse tensor '%s': dimension %zu is %" PRId64 ", not positive",
                name, i, sp->dims[i]);
            return;
        }
        if (dense_size > INT64_MAX / sp->dims[i]) {
            ERR(ck, "sparse", "sparse tensor '%s': dense element count overflows int64", name);
            return;
        }
        dense_size *= sp->dims[i];
    }
    if (sp->indices == NULL) {
        if (nnz != 0)
            ERR(ck, "sparse", "sparse tensor '%s' has %" PRIu64 " values but no indices", name,
                nnz);
        return;
    }
    const cg_tensor_proto *idx = sp->indices;
    const char *iname = !str_empty(idx->name) ? idx->name : "indices";
    check_tensor(ck, idx, "indices");
    if (!idx->has_data_type || idx->data_type != CG_DTYPE_INT64) {
        ERR(ck, "sparse", "sparse tensor indices '%s' must be INT64, not %" PRId32, iname,
            idx->data_type);
        return;
    }
    if (ck->report->error_count != before)
        return; /* the payloads are not trustworthy enough to read */
    uint64_t per = 0;
    if (idx->rank == 1) {
        per = 1;
        if ((uint64_t)idx->dims[0] != nnz) {
            ERR(ck, "sparse", "sparse tensor indices '%s' has %" PRId64 " values, but NNZ is %" PRIu64,
                iname, idx->dims[0], nnz);
            return;
        }
    } else if (idx->rank == 2) {
        per = sp->rank;
        if ((uint64_t)idx->dims[0] != nnz) {
            ERR(ck, "sparse", "sparse tensor indices '%s': first dimension %" PRId64 " != NNZ %" PRIu64,
                iname, idx->dims[0], nnz);
            return;
        }
        if ((uint64_t)idx->dims[1] != (uint64_t)sp->rank) {
            ERR(ck, "sparse",
                "sparse tensor indices '%s': second dimension %" PRId64 " != dense rank %zu",
                iname, idx->dims[1], sp->rank);
            return;
        }
    } else {
        ERR(ck, "sparse", "sparse tensor indices '%s' must have rank 1 or 2, not %zu", iname,
            idx->rank);
        return;
    }
    if (nnz > SIZE_MAX / per || sparse_index_count(idx) < nnz * per) {
        ERR(ck, "sparse", "sparse tensor indices '%s' hold fewer than %" PRIu64 " values", iname,
            nnz * per);
        return;
    }
    int64_t prev = -1;
    for (size_t i = 0; i < (size_t)nnz; i++) {
        int64_t linear = 0;
        if (per == 1) {
            linear = index_at(idx, i);
            if (linear < 0 || linear >= dense_size) {
                ERR(ck, "sparse",
                    "sparse tensor '%s': index %" PRId64 " at position %zu is out of range [0, %" PRId64 ")",
                    name, linear, i, dense_size);
                return;
            }
        } else {
            for (size_t j = 0; j < sp->rank; j++) {
                int64_t v = index_at(idx, i * sp->rank + j);
                if (v < 0 || v >= sp->dims[j]) {
                    ERR(ck, "sparse",
                        "sparse tensor '%s': index %" PRId64 " at [%zu,%zu] is out of range [0, %" PRId64 ")",
                        name, v, i, j, sp->dims[j]);
                    return;
                }
                linear = linear * sp->dims[j] + v; /* < dense_size: no overflow */
            }
        }
        if (linear <= prev) {
            ERR(ck, "sparse", "sparse tensor '%s': index at position %zu is not in sorted order",
                name, i);
            return;
        }
        prev = linear;
    }
}

/* ---- value infos ------------------------------------------------------ */

static void check_value_info(checker *ck, const cg_value_info *vi, const graph_ctx *gc,
                             const char *kind, size_t index)
{
    if (str_empty(vi->name)) {
        ERR(ck, "value-info", "graph %s #%zu has an empty name", kind, index);
        return;
    }
    /* onnx relaxes the type requirements inside subgraphs. */
    if (!gc->main_graph)
        return;
    const cg_type *ty = vi->type;
    if (ty == NULL) {
        ERR(ck, "value-info", "graph %s '%s' has no type", kind, vi->name);
        return;
    }
    switch (ty->kind) {
    case CG_TYPE_TENSOR:
    case CG_TYPE_SPARSE_TENSOR:
        if (!ty->has_elem_type)
            ERR(ck, "value-info", "graph %s '%s': tensor type has no elem_type", kind, vi->name);
        else if (!cg_dtype_valid(ty->elem_type))
            /* Ours: onnx 1.12 only checks that the field is present. */
            ERR(ck, "value-dtype", "graph %s '%s': elem_type %" PRId32 " is %s", kind, vi->name,
                ty->elem_type, ty->elem_type == 0 ? "UNDEFINED" : "not a known data type");
        if (ty->shape == NULL)
            ERR(ck, "value-info", "graph %s '%s': tensor type has no shape", kind, vi->name);
        else
            for (size_t d = 0; d < ty->shape->rank; d++)
                if (ty->shape->dims[d].has_value && ty->shape->dims[d].value < 0)
                    /* Ours: a negative static dim can only be a corrupt contract. */
                    ERR(ck, "value-dims", "graph %s '%s': dimension %zu is negative (%" PRId64 ")",
                        kind, vi->name, d, ty->shape->dims[d].value);
        break;
    case CG_TYPE_SEQUENCE:
    case CG_TYPE_OPTIONAL:
        if (ty->elem == NULL)
            ERR(ck, "value-info", "graph %s '%s': %s type has no elem_type", kind, vi->name,
                ty->kind == CG_TYPE_SEQUENCE ? "sequence" : "optional");
        break;
    case CG_TYPE_MAP:
        if (!ty->has_map_key_type)
            ERR(ck, "value-info", "graph %s '%s': map type has no key_type", kind, vi->name);
        if (ty->elem == NULL)
            ERR(ck, "value-info", "graph %s '%s': map type has no value_type", kind, vi->name);
        break;
    default:
        ERR(ck, "value-info", "graph %s '%s' has no recognized type case", kind, vi->name);
        break;
    }
}

/* ---- nodes ------------------------------------------------------------ */

static void check_graph(checker *ck, const cg_graph *g, const scope *parent, const graph_ctx *gc);

/* Ops onnx.checker knows were experimental and removed: it warns and skips. */
static bool is_experimental_op(const char *op)
{
    static const char *const ops[] = {"ATen",     "Affine",        "ConstantFill",
                                      "Crop",     "DynamicSlice",  "GRUUnit",
                                      "GivenTensorFill", "ImageScaler", "ParametricSoftplus",
                                      "Scale",    "ScaledTanh"};
    for (size_t i = 0; i < sizeof ops / sizeof ops[0]; i++)
        if (strcmp(op, ops[i]) == 0)
            return true;
    return false;
}

static const char *attr_type_name(int32_t type)
{
    static const char *const names[] = {"UNDEFINED", "FLOAT",         "INT",
                                        "STRING",    "TENSOR",        "GRAPH",
                                        "FLOATS",    "INTS",          "STRINGS",
                                        "TENSORS",   "GRAPHS",        "SPARSE_TENSOR",
                                        "SPARSE_TENSORS", "TYPE_PROTO", "TYPE_PROTOS"};
    if (type >= 0 && (size_t)type < sizeof names / sizeof names[0])
        return names[type];
    return "unknown";
}

/* onnx check_attribute: well-formedness independent of the schema, then
 * recursion into the tensors and graphs it holds. */
static void check_attribute(checker *ck, const cg_attr *a, const scope *node_scope,
                            const graph_ctx *gc)
{
    const char *name = str_or(a->name, "");
    if (name[0] == '\0')
        ERR(ck, "attr-name", "attribute has an empty name");
    if (ck->ir_version >= 2 && !a->has_type)
        ERR(ck, "attr-type", "attribute '%s' has no type", name);

    int used = 0;
    struct {
        bool present;
        cg_attr_type type;
    } fields[] = {
        {a->has_f, CG_ATTR_FLOAT},
        {a->has_i, CG_ATTR_INT},
        {a->s.data != NULL, CG_ATTR_STRING},
        {a->t != NULL, CG_ATTR_TENSOR},
        {a->g != NULL, CG_ATTR_GRAPH},
        {a->tp != NULL, CG_ATTR_TYPE_PROTO},
        {a->sparse_tensor != NULL, CG_ATTR_SPARSE_TENSOR},
        {a->floats_count > 0, CG_ATTR_FLOATS},
        {a->ints_count > 0, CG_ATTR_INTS},
        {a->strings_count > 0, CG_ATTR_STRINGS},
        {a->tensors_count > 0, CG_ATTR_TENSORS},
        {a->graphs_count > 0, CG_ATTR_GRAPHS},
        {a->sparse_tensors_count > 0, CG_ATTR_SPARSE_TENSORS},
        {a->type_protos_count > 0, CG_ATTR_TYPE_PROTOS},
    };
    for (size_t i = 0; i < sizeof fields / sizeof fields[0]; i++) {
        if (!fields[i].present)
            continue;
        used++;
        if (a->has_type && a->type != (int32_t)fields[i].type)
            ERR(ck, "attr-type",
                "attribute '%s': type is %s but the value is in the %s field", name,
                attr_type_name(a->type), attr_type_name(fields[i].type));
    }
    if (used > 1)
        ERR(ck, "attr-fields", "attribute '%s' has %d value fields set; at most one is allowed",
            name, used);
    if (!gc->main_graph && a->ref_attr_name != NULL && used != 0)
        ERR(ck, "attr-ref", "attribute '%s' refers to parent attribute '%s' but also has a value",
            name, a->ref_attr_name);

    size_t saved = where_push(ck, "attribute '%s'", name);
    if (a->t != NULL)
        check_tensor(ck, a->t, name);
    if (a->sparse_tensor != NULL)
        check_sparse(ck, a->sparse_tensor, name);
    graph_ctx sub = *gc;
    sub.main_graph = false;
    if (a->g != NULL)
        check_graph(ck, a->g, node_scope, &sub);
    for (size_t i = 0; i < a->tensors_count; i++)
        if (a->tensors[i] != NULL)
            check_tensor(ck, a->tensors[i], name);
    for (size_t i = 0; i < a->sparse_tensors_count; i++)
        if (a->sparse_tensors[i] != NULL)
            check_sparse(ck, a->sparse_tensors[i], name);
    for (size_t i = 0; i < a->graphs_count; i++)
        if (a->graphs[i] != NULL)
            check_graph(ck, a->graphs[i], node_scope, &sub);
    where_pop(ck, saved);
}

/* Output counts OpSchema::NumOutputs(std::set) allows beyond [min, max]:
 * the Python bindings of onnx 1.12 do not expose these sets, so they are
 * copied here from onnx/defs/nn (BatchNormalization only). */
static bool output_count_allowed(const cg_schema *s, size_t n)
{
    if (s->domain[0] == '\0' && strcmp(s->name, "BatchNormalization") == 0) {
        if (s->since_version < 14)
            return n == 1 || n == 5;
        return n == 1 || n == 3;
    }
    return true;
}

/* OpSchema::Verify: arity, empty names for single formals, attributes. */
static void verify_schema(checker *ck, const cg_node *n, const cg_schema *s)
{
    char max_in[16], max_out[16];
    if (s->max_input == INT32_MAX)
        snprintf(max_in, sizeof max_in, "any number");
    else
        snprintf(max_in, sizeof max_in, "%d", s->max_input);
    if (s->max_output == INT32_MAX)
        snprintf(max_out, sizeof max_out, "any number");
    else
        snprintf(max_out, sizeof max_out, "%d", s->max_output);
    if ((int64_t)n->input_count < s->min_input || (int64_t)n->input_count > s->max_input)
        ERR(ck, "input-count", "has %zu inputs; %s-%d takes %d to %s", n->input_count, s->name,
            s->since_version, s->min_input, max_in);
    if ((int64_t)n->output_count < s->min_output || (int64_t)n->output_count > s->max_output)
        ERR(ck, "output-count", "has %zu outputs; %s-%d takes %d to %s", n->output_count,
            s->name, s->since_version, s->min_output, max_out);
    else if (!output_count_allowed(s, n->output_count))
        ERR(ck, "output-count", "has %zu outputs; %s-%d takes 1 or %s", n->output_count, s->name,
            s->since_version, max_out);
    /* Past the last formal only a variadic one continues; more inputs than
     * formals otherwise is caught by the count check above. */
    for (size_t i = 0; i < n->input_count && i < s->input_count; i++) {
        if (str_empty(n->inputs[i]) && s->inputs[i].option == CG_FORMAL_SINGLE)
            ERR(ck, "input-empty", "input %zu ('%s') is required but the name is empty", i,
                s->inputs[i].name);
    }
    for (size_t i = 0; i < n->output_count && i < s->output_count; i++) {
        if (str_empty(n->outputs[i]) && s->outputs[i].option == CG_FORMAL_SINGLE)
            ERR(ck, "output-empty", "output %zu ('%s') is required but the name is empty", i,
                s->outputs[i].name);
    }
    for (size_t i = 0; i < n->attr_count; i++) {
        const cg_attr *a = &n->attrs[i];
        const char *name = str_or(a->name, "");
        const cg_schema_attr *sa = cg_schema_find_attr(s, name);
        if (sa == NULL) {
            /* "__"-prefixed names are implementation details onnx skips. */
            if (!s->allows_unchecked_attributes && strncmp(name, "__", 2) != 0)
                ERR(ck, "attr-unknown", "attribute '%s' is not an attribute of %s-%d", name,
                    s->name, s->since_version);
            continue;
        }
        int32_t type = a->has_type ? a->type : CG_ATTR_UNDEFINED;
        if (type != (int32_t)sa->type) {
            ERR(ck, "attr-type", "attribute '%s' has type %s; %s-%d expects %s", name,
                attr_type_name(type), s->name, s->since_version, attr_type_name(sa->type));
            continue;
        }
        if (!str_empty(a->ref_attr_name))
            continue;
        const char *missing = NULL;
        switch (sa->type) {
        case CG_ATTR_TENSOR: missing = a->t == NULL ? "t" : NULL; break;
        case CG_ATTR_SPARSE_TENSOR: missing = a->sparse_tensor == NULL ? "sparse_tensor" : NULL; break;
        case CG_ATTR_GRAPH: missing = a->g == NULL ? "g" : NULL; break;
        case CG_ATTR_TYPE_PROTO: missing = a->tp == NULL ? "tp" : NULL; break;
        case CG_ATTR_FLOATS: missing = a->floats_count == 0 ? "floats" : NULL; break;
        case CG_ATTR_INTS: missing = a->ints_count == 0 ? "ints" : NULL; break;
        case CG_ATTR_STRINGS: missing = a->strings_count == 0 ? "strings" : NULL; break;
        case CG_ATTR_TENSORS: missing = a->tensors_count == 0 ? "tensors" : NULL; break;
        case CG_ATTR_GRAPHS: missing = a->graphs_count == 0 ? "graphs" : NULL; break;
        case CG_ATTR_TYPE_PROTOS: missing = a->type_protos_count == 0 ? "type_protos" : NULL; break;
        default: break; /* scalars and SPARSE_TENSORS may be empty */
        }
        if (missing != NULL)
            ERR(ck, "attr-value", "attribute '%s' of type %s has no value in field '%s'", name,
                attr_type_name(sa->type), missing);
    }
    for (size_t i = 0; i < s->attr_count; i++)
        if (s->attrs[i].required && cg_node_attr(n, s->attrs[i].name) == NULL)
            ERR(ck, "attr-required", "required attribute '%s' of %s-%d is missing",
                s->attrs[i].name, s->name, s->since_version);
}

static bool schema_has_graph_attr(const cg_schema *s)
{
    for (size_t i = 0; i < s->attr_count; i++)
        if (s->attrs[i].type == CG_ATTR_GRAPH || s->attrs[i].type == CG_ATTR_GRAPHS)
            return true;
    return false;
}

/* The graph held by a GRAPH attribute of the node, or NULL. */
static const cg_graph *node_graph(const cg_node *n, const char *name)
{
    const cg_attr *a = cg_node_attr(n, name);
    if (a == NULL || !a->has_type || a->type != CG_ATTR_GRAPH)
        return NULL;
    return a->g;
}

/* Ours (reliability #32, ort#32609): a body input that an initializer of the
 * body shadows would let a constant replace the loop-carried value. */
static void check_body_inputs_not_initializers(checker *ck, const cg_graph *body,
                                               const char *attr)
{
    for (size_t i = 0; i < body->input_count; i++) {
        const char *in = body->inputs[i].name;
        if (str_empty(in))
            continue;
        if (cg_graph_initializer(body, in))
            ERR(ck, "body-signature", "%s input '%s' is also an initializer of the body", attr,
                in);
    }
}

/* Ours (reliability #32): control-flow bodies must match the node's arity. */
static void check_control_flow(checker *ck, const cg_node *n, const cg_schema *s)
{
    if (s->domain[0] != '\0')
        return;
    if (strcmp(s->name, "If") == 0) {
        static const char *const branches[] = {"then_branch", "else_branch"};
        for (int b = 0; b < 2; b++) {
            const cg_graph *g = node_graph(n, branches[b]);
            if (g == NULL)
                continue;
            if (g->output_count != n->output_count)
                ERR(ck, "body-signature", "%s has %zu outputs but the If node has %zu",
                    branches[b], g->output_count, n->output_count);
            if (g->input_count != 0)
                ERR(ck, "body-signature", "%s declares %zu inputs; If branches take none",
                    branches[b], g->input_count);
        }
    } else if (strcmp(s->name, "Loop") == 0) {
        const cg_graph *body = node_graph(n, "body");
        if (body == NULL)
            return;
        /* body: (iteration_num, condition, N carried) -> (condition, N carried, K scans) */
        if (body->input_count != n->input_count)
            ERR(ck, "body-signature",
                "Loop body has %zu inputs but the node has %zu (M, cond and %zu loop-carried)",
                body->input_count, n->input_count, n->input_count >= 2 ? n->input_count - 2 : 0);
        if (body->output_count != n->output_count + 1)
            ERR(ck, "body-signature",
                "Loop body has %zu outputs; the node's %zu outputs need %zu (cond first)",
                body->output_count, n->output_count, n->output_count + 1);
        else if (n->input_count >= 2 && body->output_count < 1 + (n->input_count - 2))
            ERR(ck, "body-signature", "Loop body has %zu outputs, fewer than 1 + %zu loop-carried",
                body->output_count, n->input_count - 2);
        check_body_inputs_not_initializers(ck, body, "Loop body");
    } else if (strcmp(s->name, "Scan") == 0) {
        const cg_graph *body = node_graph(n, "body");
        if (body == NULL)
            return;
        /* Scan-8 has a leading sequence_lens input the body does not see. */
        size_t lead = s->since_version < 9 ? 1 : 0;
        size_t node_states = n->input_count >= lead ? n->input_count - lead : 0;
        if (body->input_count != node_states)
            ERR(ck, "body-signature", "Scan body has %zu inputs but the node passes %zu",
                body->input_count, node_states);
        if (body->output_count != n->output_count)
            ERR(ck, "body-signature", "Scan body has %zu outputs but the node has %zu",
                body->output_count, n->output_count);
        const cg_attr *m_attr = cg_node_attr(n, "num_scan_inputs");
        if (m_attr != NULL && m_attr->has_i) {
            int64_t m = m_attr->i;
            if (m < 1 || (uint64_t)m > node_states) {
                ERR(ck, "body-signature", "num_scan_inputs %" PRId64 " is not in [1, %zu]", m,
                    node_states);
            } else {
                size_t carried = node_states - (size_t)m;
                size_t scans_out = n->output_count >= carried ? n->output_count - carried : 0;
                if (n->output_count < carried)
                    ERR(ck, "body-signature",
                        "Scan has %zu outputs, fewer than its %zu loop-carried states",
                        n->output_count, carried);
                static const struct {
                    const char *name;
                    bool inputs;
                } lists[] = {{"scan_input_axes", true},
                             {"scan_input_directions", true},
                             {"scan_output_axes", false},
                             {"scan_output_directions", false}};
                for (size_t i = 0; i < sizeof lists / sizeof lists[0]; i++) {
                    const cg_attr *l = cg_node_attr(n, lists[i].name);
                    size_t want = lists[i].inputs ? (size_t)m : scans_out;
                    if (l != NULL && l->ints_count > 0 && l->ints_count != want)
                        ERR(ck, "body-signature", "%s has %zu entries; expected %zu",
                            lists[i].name, l->ints_count, want);
                }
            }
        }
        check_body_inputs_not_initializers(ck, body, "Scan body");
    }
}

static const cg_function *find_function(const cg_model *m, const char *domain, const char *name)
{
    for (size_t i = 0; i < m->function_count; i++) {
        const cg_function *f = &m->functions[i];
        if (f->name != NULL && strcmp(f->name, name) == 0 &&
            strcmp(canon_domain(f->domain), canon_domain(domain)) == 0)
            return f;
    }
    return NULL;
}

static bool builtin_domain(const char *domain)
{
    /* The domains onnx.checker fails an unknown op in; others it skips. */
    return domain[0] == '\0' || strcmp(domain, "ai.onnx.ml") == 0 ||
           strcmp(domain, "ai.onnx.training") == 0;
}

static void check_node(checker *ck, const cg_node *n, const scope *sc, const graph_ctx *gc)
{
    const char *op = str_or(n->op_type, "");
    const char *domain = canon_domain(n->domain);
    if (op[0] == '\0')
        ERR(ck, "node-op", "node has no op_type");
    if (n->input_count == 0 && n->output_count == 0)
        ERR(ck, "node-io", "node has neither inputs nor outputs");
    if (op[0] != '\0' && is_experimental_op(op)) {
        WARN(ck, "experimental-op",
             "%s is a removed experimental op; onnx.checker skips it and so does this check", op);
        return;
    }

    /* Ours: attribute names are unique on every node, schema or not
     * (hashed: a node may carry hundreds of thousands of attributes). */
    name_set attr_names = {0};
    for (size_t i = 0; i < n->attr_count && !ck->oom; i++) {
        const char *an = n->attrs[i].name;
        if (an == NULL)
            continue;
        if (set_has(&attr_names, an))
            ERR(ck, "attr-duplicate", "attribute '%s' appears more than once", an);
        else if (!set_add(&attr_names, an))
            ck->oom = true;
    }
    set_free(&attr_names);

    int64_t version = opset_get(gc->opsets, domain);
    if (version < 0)
        ERR(ck, "opset-missing", "no opset import for domain '%s'",
            domain[0] ? domain : "ai.onnx");

    for (size_t i = 0; i < n->attr_count; i++)
        check_attribute(ck, &n->attrs[i], sc, gc);
    if (version < 0 || op[0] == '\0')
        return;

    const cg_schema *s = cg_schema_find(domain, op, version);
    if (s == NULL) {
        const cg_function *f = find_function(ck->model, domain, op);
        if (f != NULL) {
            /* Ours: a call to a model-local function. */
            if (n->input_count > f->input_count)
                ERR(ck, "input-count", "has %zu inputs; function %s takes at most %zu",
                    n->input_count, op, f->input_count);
            if (n->output_count > f->output_count)
                ERR(ck, "output-count", "has %zu outputs; function %s returns at most %zu",
                    n->output_count, op, f->output_count);
            return;
        }
        if (builtin_domain(domain))
            ERR(ck, "op-unknown", "no operator %s in domain '%s' at opset %" PRId64, op,
                domain[0] ? domain : "ai.onnx", version);
        else
            WARN(ck, "op-unverified", "operator %s of custom domain '%s' has no schema here; not verified",
                 op, domain);
        /* Ours: only a schema can grant a subgraph; a custom op has none. */
        return;
    }
    if (s->deprecated) {
        ERR(ck, "op-deprecated", "%s is deprecated at %s opset %" PRId64 " (since version %d)", op,
            domain[0] ? domain : "ai.onnx", version, s->since_version);
        return;
    }
    verify_schema(ck, n, s);

    /* Ours (ort#32641): a subgraph on an op that takes none would escape
     * every control-flow rule, including unchecked/internal attributes. */
    if (!schema_has_graph_attr(s))
        for (size_t i = 0; i < n->attr_count; i++) {
            const cg_attr *a = &n->attrs[i];
            if (a->g != NULL || a->graphs_count > 0 ||
                (a->has_type && (a->type == CG_ATTR_GRAPH || a->type == CG_ATTR_GRAPHS)))
                ERR(ck, "subgraph-misplaced",
                    "attribute '%s' holds a subgraph, but %s is not a control-flow op",
                    str_or(a->name, ""), op);
        }
    check_control_flow(ck, n, s);
}

/* Formats a node's label ("name" or "#index") into buf. */
static const char *node_label(const cg_node *n, size_t index, char *buf, size_t size)
{
    if (!str_empty(n->name))
        return n->name;
    snprintf(buf, size, "#%zu", index);
    return buf;
}

/* Visits one node in graph or function order: inputs defined, node rules,
 * then its outputs enter the scope (SSA across scopes). */
static void visit_node(checker *ck, const cg_node *n, size_t index, scope *sc,
                       const graph_ctx *gc, bool own_scope_only)
{
    char buf[32];
    const char *label = node_label(n, index, buf, sizeof buf);
    const char *saved_label = ck->node_label, *saved_op = ck->op_type;
    size_t saved = where_push(ck, str_empty(n->name) ? "node %s (%s)" : "node '%s' (%s)", label,
                              str_or(n->op_type, "?"));
    ck->node_label = label;
    ck->op_type = str_or(n->op_type, "");

    for (size_t i = 0; i < n->input_count; i++) {
        const char *in = n->inputs[i];
        if (str_empty(in))
            continue; /* an omitted optional input */
        bool defined = own_scope_only ? set_has(&sc->names, in) : scope_has_any(sc, in);
        if (!defined)
            ERR(ck, "topo-order",
                "input '%s' is not a graph input, initializer, or output of an earlier node%s "
                "(nodes out of order are sorted when they form no cycle: this one is undefined "
                "or part of a cycle)",
                in, own_scope_only ? " or function input" : " (or outer-scope value)");
    }
    /* Before the outputs are added: a subgraph may not see the node's own
     * outputs, and must not collide with them either. */
    check_node(ck, n, sc, gc);
    for (size_t i = 0; i < n->output_count; i++) {
        const char *out = n->outputs[i];
        if (str_empty(out))
            continue; /* an omitted optional output */
        if (scope_has_any(sc, out))
            ERR(ck, "ssa", "output '%s' is already defined (names must be assigned once)", out);
        else if (!set_add(&sc->names, out))
            ck->oom = true;
    }
    ck->node_label = saved_label;
    ck->op_type = saved_op;
    where_pop(ck, saved);
}

/* ---- graphs ----------------------------------------------------------- */

static void check_graph(checker *ck, const cg_graph *g, const scope *parent, const graph_ctx *gc)
{
    size_t saved = where_push(ck, "graph '%s'", str_or(g->name, ""));
    const char *saved_label = ck->node_label, *saved_op = ck->op_type;
    ck->node_label = NULL;
    ck->op_type = NULL;
    scope sc = {{0}, parent};
    name_set inits = {0};
    if (ck->depth >= MAX_DEPTH) {
        ERR(ck, "depth", "subgraphs nest deeper than %d levels", MAX_DEPTH);
        goto done;
    }
    ck->depth++;
    if (str_empty(g->name))
        ERR(ck, "graph-name", "graph has an empty name");
    if (g->reordered_nodes)
        WARN(ck, "topo-order",
             "the nodes are not in topological order (%zu moved): convgate sorted them, as ONNX "
             "Runtime does; ONNX requires the order and onnx.checker rejects the model",
             g->reordered_nodes);
    for (size_t i = 0; i < g->input_count; i++)
        check_value_info(ck, &g->inputs[i], gc, "input", i);
    for (size_t i = 0; i < g->output_count; i++)
        check_value_info(ck, &g->outputs[i], gc, "output", i);

    for (size_t i = 0; i < g->input_count && !ck->oom; i++) {
        const char *name = str_or(g->inputs[i].name, "");
        if (set_has(&sc.names, name))
            ERR(ck, "ssa", "graph input '%s' is declared more than once", name);
        else if (!set_add(&sc.names, name))
            ck->oom = true;
    }
    for (size_t i = 0; i < g->initializer_count && !ck->oom; i++) {
        const cg_tensor_proto *t = &g->initializers[i];
        char what[48];
        snprintf(what, sizeof what, "initializer #%zu", i);
        size_t at = where_push(ck, "initializer '%s'", str_or(t->name, what));
        if (str_empty(t->name)) {
            ERR(ck, "init-name", "initializer #%zu has an empty name", i);
            check_tensor(ck, t, what);
            where_pop(ck, at);
            continue;
        }
        if (set_has(&inits, t->name))
            ERR(ck, "init-duplicate", "initializer name '%s' is not unique", t->name);
        else if (!set_add(&inits, t->name))
            ck->oom = true;
        check_tensor(ck, t, what);
        if (ck->ir_version <= 3) {
            /* onnx.checker makes this an error; ONNX Runtime loads such a
             * model (the initializer is a constant) and writes them itself
             * when constant folding adds an initializer to an IR 3 model */
            if (!set_has(&sc.names, t->name)) {
                WARN(ck, "init-not-input",
                     "initializer '%s' is not a graph input (IR version <= 3 wants every "
                     "initializer listed as an input; onnx.checker rejects this, ONNX Runtime "
                     "accepts it)",
                     t->name);
                if (!set_add(&sc.names, t->name))
                    ck->oom = true;
            }
        } else if (!set_add(&sc.names, t->name)) {
            ck->oom = true;
        }
        where_pop(ck, at);
    }
    for (size_t i = 0; i < g->sparse_initializer_count && !ck->oom; i++) {
        const cg_sparse_tensor_proto *sp = &g->sparse_initializers[i];
        const char *name = sp->values != NULL ? sp->values->name : NULL;
        char what[48];
        snprintf(what, sizeof what, "sparse initializer #%zu", i);
        size_t at = where_push(ck, "sparse initializer '%s'", str_or(name, what));
        if (str_empty(name)) {
            ERR(ck, "init-name", "sparse initializer #%zu has an empty name", i);
        } else {
            if (set_has(&inits, name))
                ERR(ck, "init-duplicate",
                    "sparse initializer name '%s' is not unique across initializers", name);
            else if (!set_add(&inits, name))
                ck->oom = true;
            if (!set_add(&sc.names, name))
                ck->oom = true;
        }
        check_sparse(ck, sp, what);
        where_pop(ck, at);
    }

    for (size_t i = 0; i < g->node_count && !ck->oom; i++)
        visit_node(ck, &g->nodes[i], i, &sc, gc, false);

    /* Ours: onnx 1.12 never checks that outputs are produced. */
    for (size_t i = 0; i < g->output_count && !ck->oom; i++) {
        const char *name = g->outputs[i].name;
        if (!str_empty(name) && !scope_has_any(&sc, name))
            ERR(ck, "output-unproduced",
                "graph output '%s' is not produced by any node, input or initializer", name);
    }
    ck->depth--;
done:
    set_free(&sc.names);
    set_free(&inits);
    ck->node_label = saved_label;
    ck->op_type = saved_op;
    where_pop(ck, saved);
}

/* ---- functions -------------------------------------------------------- */

/* onnx check_opset_compatibility: a function's import of a domain must pick
 * the same schema version for the op as the model's import does. */
static void check_opset_compat(checker *ck, const cg_node *n, const opset_map *fn_opsets,
                               const opset_map *merged)
{
    const char *domain = canon_domain(n->domain);
    int64_t fv = opset_get(fn_opsets, domain);
    int64_t mv = opset_get(merged, domain);
    if (fv < 0) {
        ERR(ck, "opset-missing", "the function imports no opset for domain '%s'",
            domain[0] ? domain : "ai.onnx");
        return;
    }
    if (mv < 0 || fv == mv || n->op_type == NULL)
        return;
    const cg_schema *sm = cg_schema_find(domain, n->op_type, mv);
    const cg_schema *sf = cg_schema_find(domain, n->op_type, fv);
    if (sm == NULL && sf == NULL)
        return;
    if (sm == NULL || sf == NULL || sm->since_version != sf->since_version)
        ERR(ck, "opset-compat",
            "%s: the function imports %s opset %" PRId64 " but the model imports %" PRId64
            ", which resolve to different versions of the op",
            n->op_type, domain[0] ? domain : "ai.onnx", fv, mv);
}

static void check_function(checker *ck, const cg_function *f, const opset_map *merged)
{
    size_t saved = where_push(ck, "function '%s'", str_or(f->name, ""));
    opset_map fn_opsets = {0};
    scope sc = {{0}, NULL};
    name_set seen = {0};
    if (str_empty(f->name))
        ERR(ck, "function", "function has an empty name");
    if (ck->ir_version >= 8 && f->domain == NULL)
        ERR(ck, "function", "function has no domain (required for IR version >= 8)");
    for (size_t i = 0; i < f->opset_count && !ck->oom; i++)
        if (!opset_put(&fn_opsets, f->opsets[i].domain, f->opsets[i].version))
            ck->oom = true;
    for (size_t i = 0; i < f->input_count && !ck->oom; i++) {
        const char *in = str_or(f->inputs[i], "");
        if (set_has(&sc.names, in))
            ERR(ck, "function", "function input '%s' is declared more than once", in);
        else if (!set_add(&sc.names, in))
            ck->oom = true;
    }
    for (size_t i = 0; i < f->output_count && !ck->oom; i++) {
        const char *out = str_or(f->outputs[i], "");
        if (set_has(&seen, out))
            ERR(ck, "function", "function output '%s' is declared more than once", out);
        else if (!set_add(&seen, out))
            ck->oom = true;
    }
    set_free(&seen);
    for (size_t i = 0; i < f->attribute_name_count && !ck->oom; i++) {
        const char *a = str_or(f->attribute_names[i], "");
        if (set_has(&seen, a))
            ERR(ck, "function", "function attribute '%s' is declared more than once", a);
        else if (!set_add(&seen, a))
            ck->oom = true;
    }
    graph_ctx gc = {&fn_opsets, true, true};
    for (size_t i = 0; i < f->node_count && !ck->oom; i++) {
        const cg_node *n = &f->nodes[i];
        char buf[32];
        const char *label = node_label(n, i, buf, sizeof buf);
        size_t at = where_push(ck, "node '%s' (%s)", label, str_or(n->op_type, "?"));
        const char *saved_label = ck->node_label, *saved_op = ck->op_type;
        ck->node_label = label;
        ck->op_type = str_or(n->op_type, "");
        check_opset_compat(ck, n, &fn_opsets, merged);
        ck->node_label = saved_label;
        ck->op_type = saved_op;
        where_pop(ck, at);
        visit_node(ck, n, i, &sc, &gc, true);
    }
    /* Ours: every declared output must be computed by the body. */
    for (size_t i = 0; i < f->output_count && !ck->oom; i++)
        if (!str_empty(f->outputs[i]) && !set_has(&sc.names, f->outputs[i]))
            ERR(ck, "output-unproduced", "function output '%s' is not produced by the body",
                f->outputs[i]);
    set_free(&seen);
    set_free(&sc.names);
    opset_free(&fn_opsets);
    where_pop(ck, saved);
}

/* Adds to calls[] the index of every local function called by the nodes
 * (and subgraph nodes) of a body. */
static void collect_calls(const cg_model *m, const cg_node *nodes, size_t count, bool *calls,
                          int depth)
{
    if (depth > MAX_DEPTH)
        return;
    for (size_t i = 0; i < count; i++) {
        const cg_node *n = &nodes[i];
        if (n->op_type != NULL) {
            const cg_function *f = find_function(m, n->domain, n->op_type);
            if (f != NULL)
                calls[f - m->functions] = true;
        }
        for (size_t a = 0; a < n->attr_count; a++) {
            const cg_attr *at = &n->attrs[a];
            if (at->g != NULL)
                collect_calls(m, at->g->nodes, at->g->node_count, calls, depth + 1);
            for (size_t k = 0; k < at->graphs_count; k++)
                if (at->graphs[k] != NULL)
                    collect_calls(m, at->graphs[k]->nodes, at->graphs[k]->node_count, calls,
                                  depth + 1);
        }
    }
}

/* Ours (GHSA-7w46-vvrh-m8q5): local functions must not call each other in a
 * cycle, or inlining them never ends. Iterative DFS over the call matrix. */
static void check_function_cycles(checker *ck)
{
    const cg_model *m = ck->model;
    size_t n = m->function_count;
    if (n == 0)
        return;
    if (n > SIZE_MAX / n) {
        ck->oom = true;
        return;
    }
    bool *edges = calloc(n * n, sizeof *edges);
    unsigned char *color = calloc(n, 1); /* 0 new, 1 on stack, 2 done */
    size_t *stack = calloc(n, sizeof *stack);
    size_t *next = calloc(n, sizeof *next);
    if (edges == NULL || color == NULL || stack == NULL || next == NULL) {
        ck->oom = true;
        goto done;
    }
    for (size_t i = 0; i < n; i++)
        collect_calls(m, m->functions[i].nodes, m->functions[i].node_count, &edges[i * n], 0);
    for (size_t root = 0; root < n; root++) {
        if (color[root] != 0)
            continue;
        size_t top = 0;
        stack[top++] = root;
        color[root] = 1;
        next[root] = 0;
        while (top > 0) {
            size_t u = stack[top - 1];
            if (next[u] == n) {
                color[u] = 2;
                top--;
                continue;
            }
            size_t v = next[u]++;
            if (!edges[u * n + v])
                continue;
            if (color[v] == 1) {
                ERR(ck, "function-cycle",
                    "local function '%s' calls '%s', which leads back to it (recursive functions)",
                    str_or(m->functions[u].name, ""), str_or(m->functions[v].name, ""));
            } else if (color[v] == 0) {
                color[v] = 1;
                next[v] = 0;
                stack[top++] = v;
            }
        }
    }
done:
    free(edges);
    free(color);
    free(stack);
    free(next);
}

static void check_functions(checker *ck)
{
    const cg_model *m = ck->model;
    if (m->function_count == 0)
        return;
    if (ck->ir_version < 8)
        WARN(ck, "function", "model-local functions need IR version >= 8, the model has %" PRId64,
             ck->ir_version);
    /* onnx: the model's imports, plus each function import for a domain the
     * model does not import. */
    opset_map merged = {0};
    for (size_t i = 0; i < ck->model_opsets.count && !ck->oom; i++)
        if (!opset_put(&merged, ck->model_opsets.entries[i].domain,
                       ck->model_opsets.entries[i].version))
            ck->oom = true;
    for (size_t i = 0; i < m->function_count && !ck->oom; i++)
        for (size_t j = 0; j < m->functions[i].opset_count && !ck->oom; j++) {
            const cg_opset_id *id = &m->functions[i].opsets[j];
            if (opset_get(&merged, id->domain) < 0 && !opset_put(&merged, id->domain, id->version))
                ck->oom = true;
        }
    for (size_t i = 0; i < m->function_count && !ck->oom; i++) {
        const cg_function *f = &m->functions[i];
        for (size_t j = 0; j < i; j++)
            if (f->name != NULL && m->functions[j].name != NULL &&
                strcmp(f->name, m->functions[j].name) == 0 &&
                strcmp(canon_domain(f->domain), canon_domain(m->functions[j].domain)) == 0) {
                ERR(ck, "function", "local function '%s' (domain '%s') is defined more than once",
                    f->name, canon_domain(f->domain));
                break;
            }
        check_function(ck, f, &merged);
    }
    opset_free(&merged);
    check_function_cycles(ck);
}

/* ---- training info ------------------------------------------------------ */

/* Ours (onnx 1.12 skips training_info): its graphs are checked like
 * subgraphs; the algorithm sees every name the main graph defines, and the
 * bindings must name main-graph initializers and graph outputs. */
static void check_training(checker *ck)
{
    const cg_model *m = ck->model;
    if (m->training_info_count == 0 || m->graph == NULL)
        return;
    scope main_names = {{0}, NULL};
    name_set init_names = {0};
    const cg_graph *g = m->graph;
    for (size_t i = 0; i < g->input_count; i++)
        if (g->inputs[i].name != NULL && !set_add(&main_names.names, g->inputs[i].name))
            ck->oom = true;
    for (size_t i = 0; i < g->initializer_count; i++)
        if (g->initializers[i].name != NULL &&
            (!set_add(&main_names.names, g->initializers[i].name) ||
             !set_add(&init_names, g->initializers[i].name)))
            ck->oom = true;
    for (size_t i = 0; i < g->node_count; i++)
        for (size_t j = 0; j < g->nodes[i].output_count; j++)
            if (!str_empty(g->nodes[i].outputs[j]) &&
                !set_add(&main_names.names, g->nodes[i].outputs[j]))
                ck->oom = true;
    graph_ctx gc = {&ck->model_opsets, false, false};
    for (size_t t = 0; t < m->training_info_count && !ck->oom; t++) {
        const cg_training_info *ti = &m->training_infos[t];
        size_t saved = where_push(ck, "training_info #%zu", t);
        struct {
            const cg_graph *graph;
            const cg_string_pair *bind;
            size_t count;
            const char *what;
            const scope *outer;
        } parts[] = {{ti->initialization, ti->init_bindings, ti->init_binding_count,
                      "initialization_binding", NULL},
                     {ti->algorithm, ti->update_bindings, ti->update_binding_count,
                      "update_binding", &main_names}};
        for (size_t p = 0; p < 2; p++) {
            if (parts[p].graph != NULL)
                check_graph(ck, parts[p].graph, parts[p].outer, &gc);
            for (size_t b = 0; b < parts[p].count; b++) {
                const char *key = str_or(parts[p].bind[b].key, "");
                const char *value = str_or(parts[p].bind[b].value, "");
                if (!set_has(&init_names, key))
                    ERR(ck, "training", "%s key '%s' is not an initializer of the main graph",
                        parts[p].what, key);
                bool produced = false;
                for (size_t o = 0; parts[p].graph != NULL && o < parts[p].graph->output_count; o++)
                    if (parts[p].graph->outputs[o].name != NULL &&
                        strcmp(parts[p].graph->outputs[o].name, value) == 0)
                        produced = true;
                if (!produced)
                    ERR(ck, "training", "%s value '%s' is not an output of its graph",
                        parts[p].what, value);
            }
        }
        where_pop(ck, saved);
    }
    set_free(&main_names.names);
    set_free(&init_names);
}

/* ---- model -------------------------------------------------------------- */

static void check_model_fields(checker *ck)
{
    const cg_model *m = ck->model;
    if (!m->has_ir_version || m->ir_version == 0)
        ERR(ck, "ir-version", "the model has no ir_version");
    else if (m->ir_version < 0)
        ERR(ck, "ir-version", "ir_version %" PRId64 " is negative", m->ir_version);
    else if (m->ir_version > CG_CHECK_MAX_IR_VERSION)
        ERR(ck, "ir-version", "ir_version %" PRId64 " is newer than the newest supported (%d)",
            m->ir_version, CG_CHECK_MAX_IR_VERSION);

    name_set keys = {0};
    for (size_t i = 0; i < m->metadata_count && !ck->oom; i++) {
        const char *key = str_or(m->metadata[i].key, "");
        if (set_has(&keys, key))
            ERR(ck, "metadata", "metadata_props key '%s' appears more than once", key);
        else if (!set_add(&keys, key))
            ck->oom = true;
    }
    set_free(&keys);

    if (m->ir_version >= 3) {
        if (m->opset_count == 0)
            ERR(ck, "opset-import", "IR version %" PRId64 " requires opset_import", m->ir_version);
    } else if (m->opset_count != 0) {
        ERR(ck, "opset-import", "IR version %" PRId64 " (< 3) must not have opset_import",
            m->ir_version);
    } else if (!opset_put(&ck->model_opsets, "", 1)) {
        ck->oom = true; /* IR < 3 implies ai.onnx opset 1 */
    }
    for (size_t i = 0; i < m->opset_count && !ck->oom; i++) {
        const cg_opset_id *id = &m->opsets[i];
        const char *domain = canon_domain(id->domain);
        const char *shown = domain[0] ? domain : "ai.onnx";
        if (opset_get(&ck->model_opsets, domain) >= 0)
            WARN(ck, "opset-import", "domain '%s' is imported more than once; the last wins",
                 shown);
        if (!opset_put(&ck->model_opsets, domain, id->version)) {
            ck->oom = true;
            break;
        }
        if (id->version < 1) {
            ERR(ck, "opset-import", "opset version %" PRId64 " for domain '%s' is not positive",
                id->version, shown);
            continue;
        }
        int max = cg_schema_max_opset(domain);
        if (max > 0 && id->version > max)
            ERR(ck, "opset-import",
                "%s opset %" PRId64 " is newer than the newest this checker knows (%d)", shown,
                id->version, max);
    }
}

void cg_check_options_default(cg_check_options *opt)
{
    opt->max_problems = 1000;
}

cg_status cg_check_model(const cg_model *model, const cg_check_options *opt,
                         cg_check_report *report, cg_error *err)
{
    if (report == NULL)
        return cg_error_set(err, CG_USAGE, "cg_check_model: report is NULL");
    memset(report, 0, sizeof *report);
    if (model == NULL)
        return cg_error_set(err, CG_USAGE, "cg_check_model: model is NULL");
    cg_check_options defaults;
    cg_check_options_default(&defaults);
    if (opt == NULL)
        opt = &defaults;

    checker ck;
    memset(&ck, 0, sizeof ck);
    ck.model = model;
    ck.report = report;
    ck.max_problems = opt->max_problems ? opt->max_problems : 1;
    ck.ir_version = model->has_ir_version ? model->ir_version : 0;
    ck.where[0] = '\0';

    check_model_fields(&ck);
    if (model->graph == NULL) {
        ERR(&ck, "graph", "the model has no graph");
    } else if (!ck.oom) {
        graph_ctx gc = {&ck.model_opsets, true, false};
        check_graph(&ck, model->graph, NULL, &gc);
    }
    if (!ck.oom)
        check_functions(&ck);
    if (!ck.oom)
        check_training(&ck);
    opset_free(&ck.model_opsets);

    return cg_check_report_status(report, ck.oom, err);
}

void cg_check_report_free(cg_check_report *report)
{
    if (report == NULL)
        return;
    for (size_t i = 0; i < report->count; i++) {
        free(report->problems[i].where);
        free(report->problems[i].node);
        free(report->problems[i].op_type);
        free(report->problems[i].message);
    }
    free(report->problems);
    memset(report, 0, sizeof *report);
}
