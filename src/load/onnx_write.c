/*
 * cg_model -> ModelProto wire bytes.
 *
 * Fields are written in field-number order followed by the unknown fields
 * kept at load time, which is also how protobuf serializes, so a model that
 * was loaded and saved parses to a message equal to the original. Nested
 * messages are length-prefixed. Their lengths come from one measuring pass
 * over the whole model (a writer in measure mode only counts bytes) that
 * records every nested message's length in the order the writing pass
 * meets them, so each message is measured once however deep it is nested
 * (measuring a message again inside each enclosing one would cost 2^depth),
 * nothing is buffered twice, and tensor payloads stream straight from the
 * mapping to the output.
 *
 * With external data, every initializer payload of at least
 * external_min_bytes bytes is written to one file beside the model, at
 * 64-byte aligned offsets, and replaced by location/offset/length entries.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/file.h"
#include "load/pbwire.h"
#include "convgate/model.h"

#define EXT_ALIGN 64u

typedef struct ext_entry {
    const cg_tensor_proto *t;
    uint64_t offset;
    cg_bytes payload;
    char offset_s[24], length_s[24];
} ext_entry;

/* Lengths of the nested messages in the order put_msg meets them. */
typedef struct msg_sizes {
    uint64_t *len;
    size_t count, cap;
    size_t next;    /* writing pass: the next length to use */
    bool measuring; /* measuring pass: record, do not look up */
    bool failed;    /* out of memory, or the passes disagreed */
} msg_sizes;

typedef struct wctx {
    const char *ext_name; /* NULL: inline */
    ext_entry *ext;       /* sorted by tensor pointer */
    size_t ext_count;
    msg_sizes *sizes;
} wctx;

typedef void (*emit_fn)(pb_writer *w, const void *msg, const wctx *c);

/* One message field; nothing for an absent (NULL) optional message. */
static void put_msg(pb_writer *w, uint32_t field, emit_fn fn, const void *msg, const wctx *c)
{
    msg_sizes *z = c->sizes;
    if (!msg)
        return;
    if (z->measuring) {
        /* reserve this message's entry before its children take theirs */
        if (z->count == z->cap) {
            size_t ncap = z->cap ? z->cap * 2 : 256;
            uint64_t *n = ncap > SIZE_MAX / sizeof *n ? NULL : realloc(z->len, ncap * sizeof *n);
            if (!n) {
                z->failed = true;
                return;
            }
            z->len = n;
            z->cap = ncap;
        }
        size_t slot = z->count++;
        uint64_t start = w->size;
        fn(w, msg, c);
        uint64_t len = w->size - start;
        z->len[slot] = len;
        w->size += pb_varint_size(((uint64_t)field << 3) | PB_LEN) + pb_varint_size(len);
        return;
    }
    if (z->next >= z->count) {
        z->failed = true;
        return;
    }
    uint64_t len = z->len[z->next++];
    pb_put_tag(w, field, PB_LEN);
    pb_put_varint(w, len);
    fn(w, msg, c);
}

/* Every element of a repeated message field: arr[0..n) (PUT_EACH) or the
 * messages that arr[0..n) point to (PUT_EACH_PTR). */
#define PUT_EACH(w, field, fn, arr, n, c)                                                      \
    for (size_t i_ = 0; i_ < (n); i_++)                                                        \
    put_msg((w), (field), (fn), &(arr)[i_], (c))
#define PUT_EACH_PTR(w, field, fn, arr, n, c)                                                  \
    for (size_t i_ = 0; i_ < (n); i_++)                                                        \
    put_msg((w), (field), (fn), (arr)[i_], (c))

static void put_str(pb_writer *w, uint32_t field, const char *s)
{
    if (s)
        pb_put_bytes(w, field, s, strlen(s));
}

static void put_varint_field(pb_writer *w, uint32_t field, uint64_t v)
{
    pb_put_tag(w, field, PB_VARINT);
    pb_put_varint(w, v);
}

static void put_unknown(pb_writer *w, cg_bytes u)
{
    if (u.data)
        pb_put_raw(w, u.data, u.len);
}

static void emit_pair(pb_writer *w, const void *msg, const wctx *c)
{
    (void)c;
    const cg_string_pair *p = msg;
    put_str(w, 1, p->key);
    put_str(w, 2, p->value);
    put_unknown(w, p->unknown);
}

static void emit_opset(pb_writer *w, const void *msg, const wctx *c)
{
    (void)c;
    const cg_opset_id *o = msg;
    put_str(w, 1, o->domain);
    if (o->has_version)
        put_varint_field(w, 2, (uint64_t)o->version);
    put_unknown(w, o->unknown);
}

static void emit_dim(pb_writer *w, const void *msg, const wctx *c)
{
    (void)c;
    const cg_dim *d = msg;
    if (d->has_value)
        put_varint_field(w, 1, (uint64_t)d->value);
    put_str(w, 2, d->param);
    put_str(w, 3, d->denotation);
    put_unknown(w, d->unknown);
}

static void emit_shape(pb_writer *w, const void *msg, const wctx *c)
{
    const cg_shape *s = msg;
    PUT_EACH(w, 1, emit_dim, s->dims, s->rank, c);
    put_unknown(w, s->unknown);
}

static void emit_type(pb_writer *w, const void *msg, const wctx *c);

/* The oneof member's inner message (Tensor, Sequence, Map, Optional, SparseTensor). */
static void emit_type_inner(pb_writer *w, const void *msg, const wctx *c)
{
    const cg_type *t = msg;
    switch (t->kind) {
    case CG_TYPE_TENSOR:
    case CG_TYPE_SPARSE_TENSOR:
        if (t->has_elem_type)
            put_varint_field(w, 1, (uint64_t)(int64_t)t->elem_type);
        put_msg(w, 2, emit_shape, t->shape, c);
        break;
    case CG_TYPE_MAP:
        if (t->has_map_key_type)
            put_varint_field(w, 1, (uint64_t)(int64_t)t->map_key_type);
        put_msg(w, 2, emit_type, t->elem, c);
        break;
    case CG_TYPE_SEQUENCE:
    case CG_TYPE_OPTIONAL:
        put_msg(w, 1, emit_type, t->elem, c);
        break;
    case CG_TYPE_NONE:
        break;
    }
    put_unknown(w, t->inner_unknown);
}

static void emit_type(pb_writer *w, const void *msg, const wctx *c)
{
    const cg_type *t = msg;
    static const uint32_t field_of_kind[] = {0, 1, 4, 5, 9, 8};
    uint32_t kf = field_of_kind[t->kind];
    /* field order: tensor(1) sequence(4) map(5) denotation(6) sparse(8) optional(9) */
    if (kf && kf < 6)
        put_msg(w, kf, emit_type_inner, t, c);
    put_str(w, 6, t->denotation);
    if (kf > 6)
        put_msg(w, kf, emit_type_inner, t, c);
    put_unknown(w, t->unknown);
}

static void emit_value_info(pb_writer *w, const void *msg, const wctx *c)
{
    const cg_value_info *v = msg;
    put_str(w, 1, v->name);
    put_msg(w, 2, emit_type, v->type, c);
    put_str(w, 3, v->doc_string);
    put_unknown(w, v->unknown);
}

static void emit_segment(pb_writer *w, const void *msg, const wctx *c)
{
    (void)c;
    const cg_tensor_proto *t = msg;
    if (t->has_segment_begin)
        put_varint_field(w, 1, (uint64_t)t->segment_begin);
    if (t->has_segment_end)
        put_varint_field(w, 2, (uint64_t)t->segment_end);
    put_unknown(w, t->segment_unknown);
}

static void put_packed_fixed(pb_writer *w, uint32_t field, cg_numbers n, size_t es)
{
    if (!n.count)
        return;
    pb_put_tag(w, field, PB_LEN);
    pb_put_varint(w, n.count * es);
    pb_put_raw(w, n.data, n.count * es);
}

/* kind: 0 int32 (sign-extended), 1 int64, 2 uint64 */
static void put_packed_varint(pb_writer *w, uint32_t field, cg_numbers n, int kind)
{
    if (!n.count)
        return;
    size_t es = kind == 0 ? 4 : 8;
    const uint8_t *p = n.data;
    uint64_t len = 0;
    for (size_t i = 0; i < n.count; i++) {
        uint64_t v;
        if (kind == 0) {
            int32_t x;
            memcpy(&x, p + i * es, 4);
            v = (uint64_t)(int64_t)x;
        } else {
            memcpy(&v, p + i * es, 8);
        }
        len += pb_varint_size(v);
    }
    pb_put_tag(w, field, PB_LEN);
    pb_put_varint(w, len);
    for (size_t i = 0; i < n.count; i++) {
        uint64_t v;
        if (kind == 0) {
            int32_t x;
            memcpy(&x, p + i * es, 4);
            v = (uint64_t)(int64_t)x;
        } else {
            memcpy(&v, p + i * es, 8);
        }
        pb_put_varint(w, v);
    }
}

static const ext_entry *ext_find(const wctx *c, const cg_tensor_proto *t)
{
    size_t lo = 0, hi = c->ext_count;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if ((uintptr_t)c->ext[mid].t < (uintptr_t)t)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < c->ext_count && c->ext[lo].t == t ? &c->ext[lo] : NULL;
}

static void emit_tensor(pb_writer *w, const void *msg, const wctx *c)
{
    const cg_tensor_proto *t = msg;
    const ext_entry *moved = c->ext_name ? ext_find(c, t) : NULL;
    /* a tensor loaded from external data that does not move to this save's
     * weights file gets raw_data: its old location names the source's file
     * (which this save may even replace) */
    bool inline_external = !moved && t->has_data_location &&
                           t->data_location == CG_LOC_EXTERNAL && t->external_payload.data;
    for (size_t i = 0; i < t->rank; i++)
        put_varint_field(w, 1, (uint64_t)t->dims[i]);
    if (t->has_data_type)
        put_varint_field(w, 2, (uint64_t)(int64_t)t->data_type);
    if (t->has_segment)
        put_msg(w, 3, emit_segment, t, c);
    put_packed_fixed(w, 4, t->float_data, 4);
    put_packed_varint(w, 5, t->int32_data, 0);
    for (size_t i = 0; i < t->string_count; i++)
        pb_put_bytes(w, 6, t->string_data[i].data, t->string_data[i].len);
    put_packed_varint(w, 7, t->int64_data, 1);
    put_str(w, 8, t->name);
    if (moved) {
        /* raw_data goes to the external file */
    } else if (inline_external) {
        pb_put_bytes(w, 9, t->external_payload.data, t->external_payload.len);
    } else if (t->raw_data.data) {
        pb_put_bytes(w, 9, t->raw_data.data, t->raw_data.len);
    }
    put_packed_fixed(w, 10, t->double_data, 8);
    put_packed_varint(w, 11, t->uint64_data, 2);
    put_str(w, 12, t->doc_string);
    if (moved) {
        cg_string_pair kv[3] = {{"location", c->ext_name, {0}},
                                {"offset", moved->offset_s, {0}},
                                {"length", moved->length_s, {0}}};
        for (int i = 0; i < 3; i++)
            put_msg(w, 13, emit_pair, &kv[i], c);
        put_varint_field(w, 14, CG_LOC_EXTERNAL);
    } else if (!inline_external) {
        PUT_EACH(w, 13, emit_pair, t->external_data, t->external_count, c);
        if (t->has_data_location)
            put_varint_field(w, 14, (uint64_t)(int64_t)t->data_location);
    }
    put_unknown(w, t->unknown);
}

static void emit_sparse(pb_writer *w, const void *msg, const wctx *c)
{
    const cg_sparse_tensor_proto *s = msg;
    put_msg(w, 1, emit_tensor, s->values, c);
    put_msg(w, 2, emit_tensor, s->indices, c);
    for (size_t i = 0; i < s->rank; i++)
        put_varint_field(w, 3, (uint64_t)s->dims[i]);
    put_unknown(w, s->unknown);
}

static void emit_graph(pb_writer *w, const void *msg, const wctx *c);

static void emit_attr(pb_writer *w, const void *msg, const wctx *c)
{
    const cg_attr *a = msg;
    put_str(w, 1, a->name);
    if (a->has_f) {
        uint32_t bits;
        memcpy(&bits, &a->f, 4);
        pb_put_tag(w, 2, PB_FIXED32);
        pb_put_fixed32(w, bits);
    }
    if (a->has_i)
        put_varint_field(w, 3, (uint64_t)a->i);
    if (a->s.data)
        pb_put_bytes(w, 4, a->s.data, a->s.len);
    put_msg(w, 5, emit_tensor, a->t, c);
    put_msg(w, 6, emit_graph, a->g, c);
    for (size_t i = 0; i < a->floats_count; i++) {
        uint32_t bits;
        memcpy(&bits, &a->floats[i], 4);
        pb_put_tag(w, 7, PB_FIXED32);
        pb_put_fixed32(w, bits);
    }
    for (size_t i = 0; i < a->ints_count; i++)
        put_varint_field(w, 8, (uint64_t)a->ints[i]);
    for (size_t i = 0; i < a->strings_count; i++)
        pb_put_bytes(w, 9, a->strings[i].data, a->strings[i].len);
    PUT_EACH_PTR(w, 10, emit_tensor, a->tensors, a->tensors_count, c);
    PUT_EACH_PTR(w, 11, emit_graph, a->graphs, a->graphs_count, c);
    put_str(w, 13, a->doc_string);
    put_msg(w, 14, emit_type, a->tp, c);
    PUT_EACH_PTR(w, 15, emit_type, a->type_protos, a->type_protos_count, c);
    if (a->has_type)
        put_varint_field(w, 20, (uint64_t)(int64_t)a->type);
    put_str(w, 21, a->ref_attr_name);
    put_msg(w, 22, emit_sparse, a->sparse_tensor, c);
    PUT_EACH_PTR(w, 23, emit_sparse, a->sparse_tensors, a->sparse_tensors_count, c);
    put_unknown(w, a->unknown);
}

static void emit_node(pb_writer *w, const void *msg, const wctx *c)
{
    const cg_node *n = msg;
    for (size_t i = 0; i < n->input_count; i++)
        put_str(w, 1, n->inputs[i]);
    for (size_t i = 0; i < n->output_count; i++)
        put_str(w, 2, n->outputs[i]);
    put_str(w, 3, n->name);
    put_str(w, 4, n->op_type);
    PUT_EACH(w, 5, emit_attr, n->attrs, n->attr_count, c);
    put_str(w, 6, n->doc_string);
    put_str(w, 7, n->domain);
    put_unknown(w, n->unknown);
}

static void emit_annotation(pb_writer *w, const void *msg, const wctx *c)
{
    const cg_tensor_annotation *a = msg;
    put_str(w, 1, a->tensor_name);
    PUT_EACH(w, 2, emit_pair, a->quant_params, a->quant_param_count, c);
    put_unknown(w, a->unknown);
}

static void emit_graph(pb_writer *w, const void *msg, const wctx *c)
{
    const cg_graph *g = msg;
    PUT_EACH(w, 1, emit_node, g->nodes, g->node_count, c);
    put_str(w, 2, g->name);
    PUT_EACH(w, 5, emit_tensor, g->initializers, g->initializer_count, c);
    put_str(w, 10, g->doc_string);
    PUT_EACH(w, 11, emit_value_info, g->inputs, g->input_count, c);
    PUT_EACH(w, 12, emit_value_info, g->outputs, g->output_count, c);
    PUT_EACH(w, 13, emit_value_info, g->value_infos, g->value_info_count, c);
    PUT_EACH(w, 14, emit_annotation, g->quant_annotations, g->quant_annotation_count, c);
    PUT_EACH(w, 15, emit_sparse, g->sparse_initializers, g->sparse_initializer_count, c);
    put_unknown(w, g->unknown);
}

static void emit_function(pb_writer *w, const void *msg, const wctx *c)
{
    const cg_function *f = msg;
    put_str(w, 1, f->name);
    for (size_t i = 0; i < f->input_count; i++)
        put_str(w, 4, f->inputs[i]);
    for (size_t i = 0; i < f->output_count; i++)
        put_str(w, 5, f->outputs[i]);
    for (size_t i = 0; i < f->attribute_name_count; i++)
        put_str(w, 6, f->attribute_names[i]);
    PUT_EACH(w, 7, emit_node, f->nodes, f->node_count, c);
    put_str(w, 8, f->doc_string);
    PUT_EACH(w, 9, emit_opset, f->opsets, f->opset_count, c);
    put_str(w, 10, f->domain);
    PUT_EACH(w, 11, emit_attr, f->attribute_protos, f->attribute_proto_count, c);
    put_unknown(w, f->unknown);
}

static void emit_training(pb_writer *w, const void *msg, const wctx *c)
{
    const cg_training_info *t = msg;
    put_msg(w, 1, emit_graph, t->initialization, c);
    put_msg(w, 2, emit_graph, t->algorithm, c);
    PUT_EACH(w, 3, emit_pair, t->init_bindings, t->init_binding_count, c);
    PUT_EACH(w, 4, emit_pair, t->update_bindings, t->update_binding_count, c);
    put_unknown(w, t->unknown);
}

static void emit_model(pb_writer *w, const cg_model *m, const wctx *c)
{
    if (m->has_ir_version)
        put_varint_field(w, 1, (uint64_t)m->ir_version);
    put_str(w, 2, m->producer_name);
    put_str(w, 3, m->producer_version);
    put_str(w, 4, m->domain);
    if (m->has_model_version)
        put_varint_field(w, 5, (uint64_t)m->model_version);
    put_str(w, 6, m->doc_string);
    put_msg(w, 7, emit_graph, m->graph, c);
    PUT_EACH(w, 8, emit_opset, m->opsets, m->opset_count, c);
    PUT_EACH(w, 14, emit_pair, m->metadata, m->metadata_count, c);
    PUT_EACH(w, 20, emit_training, m->training_infos, m->training_info_count, c);
    PUT_EACH(w, 25, emit_function, m->functions, m->function_count, c);
    put_unknown(w, m->unknown);
}

/* The measuring pass: fills c->sizes and the total in *total. */
static cg_status measure_model(const cg_model *model, const wctx *c, uint64_t *total,
                               cg_error *err)
{
    pb_writer m = {0};
    c->sizes->measuring = true;
    emit_model(&m, model, c);
    c->sizes->measuring = false;
    c->sizes->next = 0;
    if (c->sizes->failed)
        return cg_error_set(err, CG_NOMEM, "serializing the model: out of memory");
    if (total)
        *total = m.size;
    return CG_OK;
}

cg_status cg_model_serialize(const cg_model *model, uint8_t **out, size_t *out_size,
                             cg_error *err)
{
    *out = NULL;
    *out_size = 0;
    msg_sizes sizes = {0};
    wctx c = {0};
    c.sizes = &sizes;
    cg_status st = measure_model(model, &c, NULL, err);
    if (st != CG_OK) {
        free(sizes.len);
        return st;
    }
    pb_writer w = {0};
    w.cap = SIZE_MAX; /* buffer mode */
    emit_model(&w, model, &c);
    free(sizes.len);
    if (w.failed || sizes.failed || sizes.next != sizes.count) {
        free(w.buf);
        return cg_error_set(err, CG_NOMEM, "serializing the model: out of memory");
    }
    if (!w.buf) { /* empty model */
        w.buf = malloc(1);
        if (!w.buf)
            return cg_error_set(err, CG_NOMEM, "serializing the model: out of memory");
    }
    *out = w.buf;
    *out_size = (size_t)w.size;
    return CG_OK;
}

static int cmp_ext(const void *a, const void *b)
{
    uintptr_t x = (uintptr_t)((const ext_entry *)a)->t, y = (uintptr_t)((const ext_entry *)b)->t;
    return x < y ? -1 : x > y;
}

/* The payload bytes a tensor can move to external data, or {NULL,0}. */
static cg_bytes movable_payload(const cg_tensor_proto *t)
{
    if (t->has_data_location && t->data_location == CG_LOC_EXTERNAL)
        return t->external_payload;
    return t->raw_data;
}

static bool bare_file_name(const char *s)
{
    return s && *s && !strchr(s, '/') && !strchr(s, '\\') && strcmp(s, ".") != 0 &&
           strcmp(s, "..") != 0;
}

static const char *base_of(const char *path)
{
    const char *slash = strrchr(path, '/');
    return slash ? slash + 1 : path;
}

/* Writes the moved payloads (c->ext, in offset order) to f, 64-byte aligned;
 * *size: the bytes written. */
static bool write_external(FILE *f, const wctx *c, uint64_t *size)
{
    static const uint8_t zeros[EXT_ALIGN];
    uint64_t pos = 0;
    *size = 0;
    for (size_t i = 0; i < c->ext_count; i++) {
        const ext_entry *e = &c->ext[i];
        size_t pad = (size_t)(e->offset - pos);
        if ((pad && fwrite(zeros, 1, pad, f) != pad) ||
            fwrite(e->payload.data, 1, e->payload.len, f) != e->payload.len)
            return false;
        pos = e->offset + e->payload.len;
        *size = pos;
    }
    return true;
}

/* Both files are written to temporaries beside the destination and renamed
 * only once both are complete (cg_atomic_*): saving over the source model,
 * or writing external data over the file the source still maps, never
 * truncates what is being read, and a failed write leaves the old files. */
cg_status cg_model_save(const cg_model *model, const char *path, const cg_save_options *opt,
                        cg_error *err)
{
    return cg_model_save_written(model, path, opt, NULL, err);
}

cg_status cg_model_save_written(const cg_model *model, const char *path,
                                const cg_save_options *opt, cg_save_written *written,
                                cg_error *err)
{
    msg_sizes sizes = {0};
    uint64_t ext_bytes = 0;
    if (written)
        memset(written, 0, sizeof *written);
    wctx c = {0};
    c.sizes = &sizes;
    cg_status st = CG_OK;
    cg_atomic_file ext_file = {0}, model_file = {0};
    char *ext_path = NULL;
    if (opt && opt->external_file) {
        if (!bare_file_name(opt->external_file))
            return cg_error_set(err, CG_SECURITY,
                                "external data file '%s' must be a plain file name written "
                                "beside the model (no directories, no '..')",
                                opt->external_file);
        if (strcmp(opt->external_file, base_of(path)) == 0)
            return cg_error_set(err, CG_USAGE,
                                "external data file '%s' is the output model's own name: the "
                                "weights would overwrite the model",
                                opt->external_file);
        c.ext_name = opt->external_file;
        const cg_graph *g = model->graph;
        size_t n = g ? g->initializer_count : 0;
        c.ext = n ? calloc(n, sizeof *c.ext) : NULL;
        if (n && !c.ext)
            return cg_error_set(err, CG_NOMEM, "saving '%s': out of memory", path);
        uint64_t off = 0;
        for (size_t i = 0; i < n; i++) {
            const cg_tensor_proto *t = &g->initializers[i];
            cg_bytes p = movable_payload(t);
            if (!p.data || p.len < opt->external_min_bytes || p.len == 0)
                continue;
            ext_entry *e = &c.ext[c.ext_count++];
            off = (off + EXT_ALIGN - 1) & ~(uint64_t)(EXT_ALIGN - 1);
            e->t = t;
            e->offset = off;
            e->payload = p;
            snprintf(e->offset_s, sizeof e->offset_s, "%llu", (unsigned long long)off);
            snprintf(e->length_s, sizeof e->length_s, "%zu", p.len);
            off += p.len;
        }
        size_t dir_len = (size_t)(base_of(path) - path);
        ext_path = malloc(dir_len + strlen(c.ext_name) + 1);
        if (!ext_path) {
            st = cg_error_set(err, CG_NOMEM, "saving '%s': out of memory", path);
            goto done;
        }
        memcpy(ext_path, path, dir_len);
        strcpy(ext_path + dir_len, c.ext_name);
        if (c.ext_count == 0) {
            /* nothing moves: no weights file, and none left standing that
             * a reader would take for this model's */
            if (cg_file_exists(ext_path)) {
                st = cg_error_set(err, CG_USAGE,
                                  "saving '%s': no initializer has %zu bytes or more, so "
                                  "nothing moves to external data '%s', yet '%s' exists and "
                                  "would no longer belong to the model: remove it, lower "
                                  "--min-bytes or pick another name",
                                  path, opt->external_min_bytes, c.ext_name, ext_path);
                goto done;
            }
            free(ext_path);
            ext_path = NULL;
            c.ext_name = NULL;
        }
    }
    if (ext_path) {
        if ((st = cg_atomic_begin(&ext_file, ext_path, err)) != CG_OK)
            goto done;
        if (!write_external(ext_file.f, &c, &ext_bytes)) {
            st = cg_error_set(err, CG_IO, "saving '%s': writing external data '%s' failed: %s",
                              path, c.ext_name, strerror(errno));
            goto done;
        }
        if (c.ext_count)
            qsort(c.ext, c.ext_count, sizeof *c.ext, cmp_ext);
    }
    uint64_t total = 0;
    if ((st = measure_model(model, &c, &total, err)) != CG_OK)
        goto done;
    if (total > 2147483647u) {
        st = cg_error_set(err, CG_LIMIT,
                          "saving '%s': the model would be %llu bytes, over protobuf's 2 GiB "
                          "limit; save with external data",
                          path, (unsigned long long)total);
        goto done;
    }
    if ((st = cg_atomic_begin(&model_file, path, err)) != CG_OK)
        goto done;
    {
        pb_writer w = {0};
        w.file = model_file.f;
        emit_model(&w, model, &c);
        if (w.failed || sizes.failed || sizes.next != sizes.count) {
            st = cg_error_set(err, CG_IO, "saving '%s': write failed: %s", path,
                              w.failed ? strerror(errno) : "the size pass disagreed");
            goto done;
        }
    }
    /* both complete before either replaces anything */
    if ((ext_path && (st = cg_atomic_finish(&ext_file, err)) != CG_OK) ||
        (st = cg_atomic_finish(&model_file, err)) != CG_OK)
        goto done;
    if (ext_path && (st = cg_atomic_commit(&ext_file, err)) != CG_OK)
        goto done;
    if ((st = cg_atomic_commit(&model_file, err)) == CG_OK && written) {
        written->model_bytes = total;
        written->external_file = ext_path ? opt->external_file : NULL;
        written->external_bytes = ext_bytes;
        written->external_count = ext_path ? c.ext_count : 0;
    }
done:
    cg_atomic_abort(&ext_file);
    cg_atomic_abort(&model_file);
    free(ext_path);
    free(sizes.len);
    free(c.ext);
    return st;
}
