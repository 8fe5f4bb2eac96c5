/*
 * The .tflite reader: verifies the FlatBuffer while decoding it into the
 * structs of include/convgate/tflite.h, then range-checks every index and
 * the subgraph call graph. Field ids are the declaration order of each
 * table in schema.fbs (google-ai-edge/LiteRT@f67457790c9c:
 * tflite/converter/schema/schema.fbs); a union field takes two ids, its
 * _type and its value. docs/tflite.md lists the tables and the rules.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/mapfile.h"
#include "tflite/read.h"

/* Decoding may allocate at most this many bytes per byte of FlatBuffer
 * (plus a constant): the structs are a few times larger than the tables
 * they come from, unless tables are shared to blow the model up. */
#define DECODE_BYTES_PER_BYTE 16
#define DECODE_BYTES_EXTRA ((size_t)1 << 20)

typedef struct reader {
    fb_reader fb;
    cg_tflite_model *m;
} reader;

/* "the vector <what> of the <table>" style labels stay short: field names. */

static bool read_opcode(fb_reader *r, const fb_table *t, cg_tflite_opcode *oc)
{
    /* OperatorCode: 0 deprecated_builtin_code:byte, 1 custom_code:string,
     * 2 version:int = 1, 3 builtin_code:BuiltinOperator (int32). */
    if (!fb_i8(r, t, 0, 0, &oc->deprecated_builtin_code) ||
        !fb_string(r, t, 1, "custom_code", &oc->custom_code) ||
        !fb_i32(r, t, 2, 1, &oc->version) || !fb_i32(r, t, 3, 0, &oc->builtin_code))
        return false;
    /* schema_utils.cc GetBuiltinCode: the larger of the two fields. */
    oc->builtin = oc->builtin_code > oc->deprecated_builtin_code ? oc->builtin_code
                                                                 : oc->deprecated_builtin_code;
    return true;
}

static bool read_quant(fb_reader *r, const fb_table *t, const cg_tflite_quant **out)
{
    /* QuantizationParameters: 0 min:[float], 1 max:[float], 2 scale:[float],
     * 3 zero_point:[long], 4/5 details:QuantizationDetails,
     * 6 quantized_dimension:int. */
    cg_tflite_quant *q = fb_alloc(r, 1, sizeof *q);
    if (!q || !fb_read_f32s(r, t, 0, "min", &q->min, &q->min_count) ||
        !fb_read_f32s(r, t, 1, "max", &q->max, &q->max_count) ||
        !fb_read_f32s(r, t, 2, "scale", &q->scale, &q->scale_count) ||
        !fb_read_i64s(r, t, 3, "zero_point", &q->zero_point, &q->zero_point_count) ||
        !fb_u8(r, t, 4, 0, &q->details_type) ||
        !fb_i32(r, t, 6, 0, &q->quantized_dimension))
        return false;
    q->block_zero_points = -1;
    q->block_scales = -1;
    if (q->details_type == 0)
        return (*out = q), true;
    /* union QuantizationDetails { CustomQuantization, BlockwiseQuantization,
     * MultiAxisQuantization } */
    if (q->details_type > 3)
        return fb_fail(r, "details_type is %u, not a member of union QuantizationDetails (1..3)",
                       q->details_type);
    static const char *const names[] = {"", "CustomQuantization", "BlockwiseQuantization",
                                        "MultiAxisQuantization"};
    fb_table d;
    bool present;
    if (!fb_subtable(r, t, 5, names[q->details_type], &d, &present))
        return false;
    if (!present) {
        q->details_type = 0; /* a type without a value: no details */
        return (*out = q), true;
    }
    if (q->details_type == 1) { /* CustomQuantization: 0 custom:[ubyte] */
        if (!fb_read_bytes(r, &d, 0, "custom", &q->custom.data, &q->custom.len))
            return false;
    } else { /* Blockwise / MultiAxis: 0 scales, 1 zero_points, 2 block_size (ints),
              * MultiAxis: 3 quantized_dimensions:[int] */
        if (!fb_i32(r, &d, 0, 0, &q->block_scales) ||
            !fb_i32(r, &d, 1, 0, &q->block_zero_points) || !fb_i32(r, &d, 2, 0, &q->block_size))
            return false;
        if (q->details_type == 3 &&
            !fb_read_i32s(r, &d, 3, "quantized_dimensions", &q->quantized_dimensions,
                          &q->quantized_dimension_count))
            return false;
    }
    *out = q;
    return true;
}

/* One SparseIndexVector (union at type_id, value type_id + 1), widened. */
static bool read_sparse_index(fb_reader *r, const fb_table *t, unsigned type_id,
                              const char *what, const int32_t **out, size_t *count)
{
    *out = NULL;
    *count = 0;
    uint8_t type;
    if (!fb_u8(r, t, type_id, 0, &type))
        return false;
    if (type == 0)
        return true;
    /* union SparseIndexVector { Int32Vector, Uint16Vector, Uint8Vector },
     * each a table with 0 values:[int] / [ushort] / [ubyte]. */
    if (type > 3)
        return fb_fail(r, "%s_type is %u, not a member of union SparseIndexVector (1..3)", what,
                       type);
    static const size_t widths[] = {0, 4, 2, 1};
    fb_table v;
    bool present;
    if (!fb_subtable(r, t, type_id + 1, what, &v, &present))
        return false;
    if (!present)
        return true;
    fb_vec vec;
    if (!fb_vector(r, &v, 0, widths[type], what, &vec, &present))
        return false;
    if (!vec.count)
        return true;
    int32_t *a = fb_alloc(r, vec.count, sizeof *a);
    if (!a)
        return false;
    for (uint32_t i = 0; i < vec.count; i++) {
        const uint8_t *p = r->base + vec.pos + widths[type] * i;
        if (type == 1) {
            uint32_t u = fb_le32(p);
            memcpy(&a[i], &u, sizeof u);
        } else {
            a[i] = type == 2 ? fb_le16(p) : p[0];
        }
    }
    *out = a;
    *count = vec.count;
    return true;
}

static bool read_sparsity(fb_reader *r, const fb_table *t, const cg_tflite_sparsity **out)
{
    /* SparsityParameters: 0 traversal_order:[int], 1 block_map:[int],
     * 2 dim_metadata:[DimensionMetadata]. */
    cg_tflite_sparsity *s = fb_alloc(r, 1, sizeof *s);
    if (!s ||
        !fb_read_i32s(r, t, 0, "traversal_order", &s->traversal_order, &s->traversal_count) ||
        !fb_read_i32s(r, t, 1, "block_map", &s->block_map, &s->block_map_count))
        return false;
    fb_vec v;
    bool present;
    if (!fb_vector(r, t, 2, 4, "dim_metadata", &v, &present))
        return false;
    if (v.count) {
        s->dims = fb_alloc(r, v.count, sizeof *s->dims);
        if (!s->dims)
            return false;
        s->dim_count = v.count;
    }
    for (uint32_t i = 0; i < v.count; i++) {
        /* DimensionMetadata: 0 format:DimensionType, 1 dense_size:int,
         * 2/3 array_segments, 4/5 array_indices (SparseIndexVector). */
        fb_table d;
        cg_tflite_sparse_dim *sd = &s->dims[i];
        size_t saved = fb_where_push(r, "dim_metadata %u", i);
        if (!fb_vec_table(r, &v, i, t->depth + 1, "DimensionMetadata", &d) ||
            !fb_i8(r, &d, 0, 0, &sd->format) || !fb_i32(r, &d, 1, 0, &sd->dense_size) ||
            !read_sparse_index(r, &d, 2, "array_segments", &sd->segments, &sd->segment_count) ||
            !read_sparse_index(r, &d, 4, "array_indices", &sd->indices, &sd->index_count))
            return false;
        fb_where_pop(r, saved);
    }
    *out = s;
    return true;
}

static bool read_variants(fb_reader *r, const fb_table *t, cg_tflite_tensor *x)
{
    fb_vec v;
    bool present;
    if (!fb_vector(r, t, 9, 4, "variant_tensors", &v, &present))
        return false;
    if (!v.count)
        return true;
    cg_tflite_variant *a = fb_alloc(r, v.count, sizeof *a);
    if (!a)
        return false;
    for (uint32_t i = 0; i < v.count; i++) {
        /* VariantSubType: 0 shape:[int], 1 type:TensorType, 2 has_rank:bool. */
        fb_table vt;
        int8_t type;
        if (!fb_vec_table(r, &v, i, t->depth + 1, "VariantSubType", &vt) ||
            !fb_read_i32s(r, &vt, 0, "variant shape", &a[i].shape, &a[i].rank) ||
            !fb_i8(r, &vt, 1, 0, &type) || !fb_bool(r, &vt, 2, false, &a[i].has_rank))
            return false;
        a[i].type = type;
    }
    x->variants = a;
    x->variant_count = v.count;
    return true;
}

static bool read_tensor(fb_reader *r, const fb_table *t, cg_tflite_tensor *x)
{
    /* Tensor: 0 shape:[int], 1 type:TensorType, 2 buffer:uint, 3 name:string,
     * 4 quantization, 5 is_variable:bool, 6 sparsity, 7 shape_signature:[int],
     * 8 has_rank:bool, 9 variant_tensors, 10 external_buffer:uint. */
    int8_t type;
    fb_table sub;
    bool present;
    if (!fb_read_i32s(r, t, 0, "shape", &x->shape, &x->rank) || !fb_i8(r, t, 1, 0, &type) ||
        !fb_u32(r, t, 2, 0, &x->buffer) || !fb_string(r, t, 3, "name", &x->name) ||
        !fb_bool(r, t, 5, false, &x->is_variable) || !fb_bool(r, t, 8, false, &x->has_rank) ||
        !fb_u32(r, t, 10, 0, &x->external_buffer))
        return false;
    x->type = type;
    fb_vec sig;
    if (!fb_vector(r, t, 7, 4, "shape_signature", &sig, &present))
        return false;
    x->has_shape_signature = present;
    if (present &&
        !fb_read_i32s(r, t, 7, "shape_signature", &x->shape_signature, &x->signature_rank))
        return false;
    if (!fb_subtable(r, t, 4, "QuantizationParameters", &sub, &present))
        return false;
    if (present) {
        size_t saved = fb_where_push(r, "quantization");
        if (!read_quant(r, &sub, &x->quant))
            return false;
        fb_where_pop(r, saved);
    }
    if (!fb_subtable(r, t, 6, "SparsityParameters", &sub, &present))
        return false;
    if (present) {
        size_t saved = fb_where_push(r, "sparsity");
        if (!read_sparsity(r, &sub, &x->sparsity))
            return false;
        fb_where_pop(r, saved);
    }
    return read_variants(r, t, x);
}

/* [bool] as bytes decoded into 0/1 flags. */
static bool read_flags(fb_reader *r, const fb_table *t, unsigned id, const char *what,
                       const uint8_t **out, size_t *count)
{
    const uint8_t *raw;
    if (!fb_read_bytes(r, t, id, what, &raw, count))
        return false;
    *out = NULL;
    if (!*count)
        return true;
    uint8_t *a = fb_alloc(r, *count, 1);
    if (!a)
        return false;
    for (size_t i = 0; i < *count; i++)
        a[i] = raw[i] != 0;
    *out = a;
    return true;
}

/* A byte range [offset, offset + size) of the whole file, for data stored
 * past the FlatBuffer; `what` names it. */
static bool file_range(reader *rd, uint64_t offset, uint64_t size, const char *what,
                       cg_bytes *out)
{
    size_t file = rd->m->file_size;
    if (offset > file || size > file - offset)
        return fb_fail(&rd->fb, "%s at file offset %llu with size %llu runs past the end of the "
                                "%zu-byte file",
                       what, (unsigned long long)offset, (unsigned long long)size, file);
    out->data = rd->m->bytes + offset;
    out->len = (size_t)size;
    return true;
}

static bool read_operator(reader *rd, const fb_table *t, cg_tflite_operator *op)
{
    /* Operator: 0 opcode_index:uint, 1 inputs:[int], 2 outputs:[int],
     * 3/4 builtin_options, 5 custom_options:[ubyte],
     * 6 custom_options_format, 7 mutating_variable_inputs:[bool],
     * 8 intermediates:[int], 9 large_custom_options_offset:ulong,
     * 10 large_custom_options_size:ulong, 11/12 builtin_options_2,
     * 13 debug_metadata_index:int = -1. */
    fb_reader *r = &rd->fb;
    uint64_t large_offset, large_size;
    if (!fb_u32(r, t, 0, 0, &op->opcode_index) ||
        !fb_read_i32s(r, t, 1, "inputs", &op->inputs, &op->input_count) ||
        !fb_read_i32s(r, t, 2, "outputs", &op->outputs, &op->output_count) ||
        !fb_read_bytes(r, t, 5, "custom_options", &op->custom_options.data,
                       &op->custom_options.len) ||
        !fb_i8(r, t, 6, 0, &op->custom_options_format) ||
        !read_flags(r, t, 7, "mutating_variable_inputs", &op->mutating_variable_inputs,
                    &op->mutating_count) ||
        !fb_read_i32s(r, t, 8, "intermediates", &op->intermediates, &op->intermediate_count) ||
        !fb_u64(r, t, 9, 0, &large_offset) || !fb_u64(r, t, 10, 0, &large_size) ||
        !fb_i32(r, t, 13, -1, &op->debug_metadata_index) ||
        !cg_tflite_read_options(r, t, &op->options, &op->options2_type))
        return false;
    /* offset_buffer.h IsValidBufferOffset: only offsets > 1 are real (the
     * exporter writes 1 as a placeholder). */
    if (large_offset > 1) {
        if (!file_range(rd, large_offset, large_size, "large custom options",
                        &op->custom_options))
            return false;
        op->custom_options_large = true;
    }
    return true;
}

static bool read_subgraph(reader *rd, const fb_table *t, cg_tflite_subgraph *g)
{
    /* SubGraph: 0 tensors:[Tensor], 1 inputs:[int], 2 outputs:[int],
     * 3 operators:[Operator], 4 name:string, 5 debug_metadata_index = -1. */
    fb_reader *r = &rd->fb;
    fb_vec v;
    bool present;
    if (!fb_string(r, t, 4, "name", &g->name) ||
        !fb_read_i32s(r, t, 1, "inputs", &g->inputs, &g->input_count) ||
        !fb_read_i32s(r, t, 2, "outputs", &g->outputs, &g->output_count) ||
        !fb_i32(r, t, 5, -1, &g->debug_metadata_index) ||
        !fb_vector(r, t, 0, 4, "tensors", &v, &present))
        return false;
    if (v.count && !(g->tensors = fb_alloc(r, v.count, sizeof *g->tensors)))
        return false;
    g->tensor_count = v.count;
    for (uint32_t i = 0; i < v.count; i++) {
        fb_table x;
        size_t saved = fb_where_push(r, "tensor %u", i);
        if (!fb_vec_table(r, &v, i, t->depth + 1, "Tensor", &x) ||
            !read_tensor(r, &x, &g->tensors[i]))
            return false;
        fb_where_pop(r, saved);
    }
    if (!fb_vector(r, t, 3, 4, "operators", &v, &present))
        return false;
    if (v.count && !(g->operators = fb_alloc(r, v.count, sizeof *g->operators)))
        return false;
    g->operator_count = v.count;
    for (uint32_t i = 0; i < v.count; i++) {
        fb_table x;
        size_t saved = fb_where_push(r, "operator %u", i);
        if (!fb_vec_table(r, &v, i, t->depth + 1, "Operator", &x) ||
            !read_operator(rd, &x, &g->operators[i]))
            return false;
        fb_where_pop(r, saved);
    }
    return true;
}

static bool read_buffer(reader *rd, const fb_table *t, cg_tflite_buffer *b)
{
    /* Buffer: 0 data:[ubyte] (force_align: 16), 1 offset:ulong, 2 size:ulong. */
    fb_reader *r = &rd->fb;
    uint64_t size;
    if (!fb_read_bytes(r, t, 0, "data", &b->data.data, &b->data.len) ||
        !fb_u64(r, t, 1, 0, &b->offset) || !fb_u64(r, t, 2, 0, &size))
        return false;
    if (b->offset > 1) /* stored past the FlatBuffer (IsValidBufferOffset) */
        return file_range(rd, b->offset, size, "buffer data", &b->data);
    return true;
}

static bool read_tensor_maps(fb_reader *r, const fb_table *t, unsigned id, const char *what,
                             cg_tflite_tensor_map **out, size_t *count)
{
    fb_vec v;
    bool present;
    if (!fb_vector(r, t, id, 4, what, &v, &present))
        return false;
    *count = v.count;
    if (v.count && !(*out = fb_alloc(r, v.count, sizeof **out)))
        return false;
    for (uint32_t i = 0; i < v.count; i++) {
        /* TensorMap: 0 name:string, 1 tensor_index:uint. */
        fb_table m;
        if (!fb_vec_table(r, &v, i, t->depth + 1, "TensorMap", &m) ||
            !fb_string(r, &m, 0, "name", &(*out)[i].name) ||
            !fb_u32(r, &m, 1, 0, &(*out)[i].tensor_index))
            return false;
    }
    return true;
}

/* A vector of tables: allocates count elements of elem bytes and calls
 * each(rd, table, element) with "<label> <i>" pushed on the path. */
typedef bool (*table_fn)(reader *rd, const fb_table *t, void *elem);

static bool read_tables(reader *rd, const fb_table *parent, unsigned id, const char *what,
                        const char *label, size_t elem, table_fn each, void **out, size_t *count)
{
    fb_reader *r = &rd->fb;
    fb_vec v;
    bool present;
    if (!fb_vector(r, parent, id, 4, what, &v, &present))
        return false;
    *count = v.count;
    *out = NULL;
    if (!v.count)
        return true;
    uint8_t *a = fb_alloc(r, v.count, elem);
    if (!a)
        return false;
    for (uint32_t i = 0; i < v.count; i++) {
        fb_table t;
        size_t saved = fb_where_push(r, "%s %u", label, i);
        if (!fb_vec_table(r, &v, i, parent->depth + 1, what, &t) || !each(rd, &t, a + i * elem))
            return false;
        fb_where_pop(r, saved);
    }
    *out = a;
    return true;
}

static bool each_opcode(reader *rd, const fb_table *t, void *e)
{
    return read_opcode(&rd->fb, t, e);
}

static bool each_subgraph(reader *rd, const fb_table *t, void *e)
{
    return read_subgraph(rd, t, e);
}

static bool each_buffer(reader *rd, const fb_table *t, void *e)
{
    return read_buffer(rd, t, e);
}

static bool each_metadata(reader *rd, const fb_table *t, void *e)
{
    /* Metadata: 0 name:string, 1 buffer:uint. */
    cg_tflite_metadata *md = e;
    return fb_string(&rd->fb, t, 0, "name", &md->name) && fb_u32(&rd->fb, t, 1, 0, &md->buffer);
}

static bool each_signature(reader *rd, const fb_table *t, void *e)
{
    /* SignatureDef: 0 inputs:[TensorMap], 1 outputs:[TensorMap],
     * 2 signature_key:string, 3 deprecated_tag (deprecated),
     * 4 subgraph_index:uint. */
    cg_tflite_signature *s = e;
    return read_tensor_maps(&rd->fb, t, 0, "inputs", &s->inputs, &s->input_count) &&
           read_tensor_maps(&rd->fb, t, 1, "outputs", &s->outputs, &s->output_count) &&
           fb_string(&rd->fb, t, 2, "signature_key", &s->key) &&
           fb_u32(&rd->fb, t, 4, 0, &s->subgraph_index);
}

static bool each_external_group(reader *rd, const fb_table *t, void *e)
{
    return fb_string(&rd->fb, t, 0, "name", (const char **)e); /* ExternalBufferGroup.name */
}

static bool each_external_buffer(reader *rd, const fb_table *t, void *e)
{
    /* ExternalBuffer: 0 id:uint, 1 group:uint, 2 offset:ulong,
     * 3 length:ulong, 4 packing:string. */
    cg_tflite_external_buffer *x = e;
    return fb_u32(&rd->fb, t, 0, 0, &x->id) && fb_u32(&rd->fb, t, 1, 0, &x->group) &&
           fb_u64(&rd->fb, t, 2, 0, &x->offset) && fb_u64(&rd->fb, t, 3, 0, &x->length) &&
           fb_string(&rd->fb, t, 4, "packing", &x->packing);
}

static bool read_model(reader *rd, const fb_table *t)
{
    /* Model: 0 version:uint, 1 operator_codes, 2 subgraphs,
     * 3 description:string, 4 buffers, 5 metadata_buffer:[int],
     * 6 metadata, 7 signature_defs, 8 external_buffer_groups,
     * 9 external_buffers. */
    fb_reader *r = &rd->fb;
    cg_tflite_model *m = rd->m;
    return fb_u32(r, t, 0, 0, &m->version) &&
           fb_string(r, t, 3, "description", &m->description) &&
           fb_read_i32s(r, t, 5, "metadata_buffer", &m->metadata_buffer,
                        &m->metadata_buffer_count) &&
           read_tables(rd, t, 1, "OperatorCode", "operator_code", sizeof *m->opcodes, each_opcode,
                       (void **)&m->opcodes, &m->opcode_count) &&
           read_tables(rd, t, 4, "Buffer", "buffer", sizeof *m->buffers, each_buffer,
                       (void **)&m->buffers, &m->buffer_count) &&
           read_tables(rd, t, 2, "SubGraph", "subgraph", sizeof *m->subgraphs, each_subgraph,
                       (void **)&m->subgraphs, &m->subgraph_count) &&
           read_tables(rd, t, 6, "Metadata", "metadata", sizeof *m->metadata, each_metadata,
                       (void **)&m->metadata, &m->metadata_count) &&
           read_tables(rd, t, 7, "SignatureDef", "signature_def", sizeof *m->signatures,
                       each_signature, (void **)&m->signatures, &m->signature_count) &&
           read_tables(rd, t, 8, "ExternalBufferGroup", "external_buffer_group",
                       sizeof *m->external_groups, each_external_group,
                       (void **)&m->external_groups, &m->external_group_count) &&
           read_tables(rd, t, 9, "ExternalBuffer", "external_buffer",
                       sizeof *m->external_buffers, each_external_buffer,
                       (void **)&m->external_buffers, &m->external_buffer_count);
}

/* ---- index checks ------------------------------------------------------ */

/* Every entry of list names a tensor of g (or -1 where optional_ok). */
static bool check_tensor_list(fb_reader *r, const cg_tflite_subgraph *g, const int32_t *list,
                              size_t n, const char *what, bool optional_ok)
{
    for (size_t i = 0; i < n; i++) {
        int32_t x = list[i];
        if (x == CG_TFLITE_OPTIONAL && optional_ok)
            continue;
        if (x < 0 || (size_t)x >= g->tensor_count)
            return fb_fail(r, "%s %zu is tensor %d, but the subgraph has %zu tensors%s", what, i,
                           x, g->tensor_count,
                           optional_ok ? " (-1 marks an omitted optional tensor)" : "");
    }
    return true;
}

static bool check_buffer_index(fb_reader *r, const cg_tflite_model *m, int64_t b, const char *what)
{
    if (b < 0 || (uint64_t)b >= m->buffer_count)
        return fb_fail(r, "%s is buffer %lld, but the model has %zu buffers", what, (long long)b,
                       m->buffer_count);
    return true;
}

static bool subgraph_index_ok(const cg_tflite_model *m, int64_t s)
{
    return s >= 0 && (uint64_t)s < m->subgraph_count;
}

/* The subgraphs an operator calls (If, While, CallOnce, Call options). */
static size_t op_calls(const cg_tflite_operator *op, int32_t calls[2])
{
    switch (op->options.type) {
    case CG_TFLITE_OPT_IfOptions:
    case CG_TFLITE_OPT_WhileOptions:
        calls[0] = op->options.u.subgraphs.first;
        calls[1] = op->options.u.subgraphs.second;
        return 2;
    case CG_TFLITE_OPT_CallOnceOptions:
    case CG_TFLITE_OPT_CallOptions:
        calls[0] = op->options.u.subgraphs.first;
        return 1;
    default:
        return 0;
    }
}

static bool check_indexes(reader *rd)
{
    fb_reader *r = &rd->fb;
    const cg_tflite_model *m = rd->m;
    for (size_t s = 0; s < m->subgraph_count; s++) {
        const cg_tflite_subgraph *g = &m->subgraphs[s];
        size_t saved = fb_where_push(r, "subgraph %zu", s);
        if (!check_tensor_list(r, g, g->inputs, g->input_count, "input", false) ||
            !check_tensor_list(r, g, g->outputs, g->output_count, "output", false))
            return false;
        for (size_t i = 0; i < g->tensor_count; i++) {
            const cg_tflite_tensor *t = &g->tensors[i];
            size_t saved_t = fb_where_push(r, "tensor %zu", i);
            /* Buffer 0 is the schema's always-present empty buffer: it is
             * "no data" even in a model that lists no buffers. */
            if (t->buffer != 0 && !check_buffer_index(r, m, t->buffer, "its buffer"))
                return false;
            const cg_tflite_quant *q = t->quant;
            if (q && (q->details_type == 2 || q->details_type == 3)) {
                int32_t idx[2] = {q->block_scales, q->block_zero_points};
                if (!check_tensor_list(r, g, &idx[0], 1, "quantization scales", false) ||
                    !check_tensor_list(r, g, &idx[1], 1, "quantization zero_points", true))
                    return false;
            }
            if (t->external_buffer != 0) {
                bool found = false;
                for (size_t e = 0; e < m->external_buffer_count && !found; e++)
                    found = m->external_buffers[e].id == t->external_buffer;
                if (!found)
                    return fb_fail(r, "external_buffer %u is not the id of any of the model's "
                                      "%zu external buffers",
                                   t->external_buffer, m->external_buffer_count);
            }
            fb_where_pop(r, saved_t);
        }
        for (size_t i = 0; i < g->operator_count; i++) {
            const cg_tflite_operator *op = &g->operators[i];
            size_t saved_op = fb_where_push(r, "operator %zu", i);
            if (op->opcode_index >= m->opcode_count)
                return fb_fail(r, "opcode_index is %u, but the model has %zu operator codes",
                               op->opcode_index, m->opcode_count);
            if (!check_tensor_list(r, g, op->inputs, op->input_count, "input", true) ||
                !check_tensor_list(r, g, op->outputs, op->output_count, "output", true) ||
                !check_tensor_list(r, g, op->intermediates, op->intermediate_count,
                                   "intermediate", false))
                return false;
            int32_t calls[2];
            size_t n = op_calls(op, calls);
            for (size_t c = 0; c < n; c++)
                if (!subgraph_index_ok(m, calls[c]))
                    return fb_fail(r, "%s names subgraph %d, but the model has %zu subgraphs",
                                   cg_tflite_options_name(op->options.type), calls[c],
                                   m->subgraph_count);
            fb_where_pop(r, saved_op);
        }
        fb_where_pop(r, saved);
    }
    for (size_t i = 0; i < m->metadata_buffer_count; i++) {
        size_t saved = fb_where_push(r, "metadata_buffer %zu", i);
        if (!check_buffer_index(r, m, m->metadata_buffer[i], "it"))
            return false;
        fb_where_pop(r, saved);
    }
    for (size_t i = 0; i < m->metadata_count; i++) {
        size_t saved = fb_where_push(r, "metadata %zu", i);
        if (!check_buffer_index(r, m, m->metadata[i].buffer, "its buffer"))
            return false;
        fb_where_pop(r, saved);
    }
    for (size_t i = 0; i < m->signature_count; i++) {
        const cg_tflite_signature *sg = &m->signatures[i];
        size_t saved = fb_where_push(r, "signature_def %zu", i);
        if (!subgraph_index_ok(m, sg->subgraph_index))
            return fb_fail(r, "subgraph_index is %u, but the model has %zu subgraphs",
                           sg->subgraph_index, m->subgraph_count);
        const cg_tflite_subgraph *g = &m->subgraphs[sg->subgraph_index];
        for (int io = 0; io < 2; io++) {
            const cg_tflite_tensor_map *maps = io ? sg->outputs : sg->inputs;
            size_t n = io ? sg->output_count : sg->input_count;
            for (size_t k = 0; k < n; k++)
                if (maps[k].tensor_index >= g->tensor_count)
                    return fb_fail(r, "%s %zu ('%s') is tensor %u, but subgraph %u has %zu "
                                      "tensors",
                                   io ? "output" : "input", k, maps[k].name ? maps[k].name : "",
                                   maps[k].tensor_index, sg->subgraph_index, g->tensor_count);
        }
        fb_where_pop(r, saved);
    }
    for (size_t i = 0; i < m->external_buffer_count; i++) {
        if (m->external_buffers[i].group < m->external_group_count)
            continue;
        fb_where_push(r, "external_buffer %zu", i);
        return fb_fail(r, "group is %u, but the model has %zu external buffer groups",
                       m->external_buffers[i].group, m->external_group_count);
    }
    return true;
}

/* ---- the subgraph call graph ------------------------------------------ */

enum { UNSEEN = 0, ACTIVE, DONE };

typedef struct calls {
    reader *rd;
    uint8_t *state;
    unsigned *depth;    /* longest call chain from the subgraph, itself included */
    int32_t chain[CG_TFLITE_MAX_CALL_DEPTH + 2];
} calls;

static bool chain_fail(calls *c, unsigned level, int32_t again, const char *why)
{
    char text[256];
    size_t used = 0;
    for (unsigned i = 0; i < level && used < sizeof text; i++)
        used += (size_t)snprintf(text + used, sizeof text - used, "%s%d", i ? " -> " : "",
                                 c->chain[i]);
    if (again >= 0 && used < sizeof text)
        snprintf(text + used, sizeof text - used, " -> %d", again);
    return fb_fail(&c->rd->fb, "subgraph calls (IF/WHILE/CALL/CALL_ONCE) %s: %s", why, text);
}

/* Walks the calls out of subgraph s, reached at chain position level. */
static bool walk_calls(calls *c, int32_t s, unsigned level)
{
    const cg_tflite_model *m = c->rd->m;
    if (c->state[s] == ACTIVE)
        return chain_fail(c, level, s, "form a cycle, which would recurse forever");
    /* A chain holds the caller at level 0 and at most 32 nested levels. */
    if (c->state[s] == DONE) {
        if (level + c->depth[s] - 1 > CG_TFLITE_MAX_CALL_DEPTH)
            return chain_fail(c, level, s, "nest deeper than 32 levels");
        return true;
    }
    if (level > CG_TFLITE_MAX_CALL_DEPTH)
        return chain_fail(c, level, s, "nest deeper than 32 levels");
    c->chain[level] = s;
    c->state[s] = ACTIVE;
    unsigned best = 1;
    const cg_tflite_subgraph *g = &m->subgraphs[s];
    for (size_t i = 0; i < g->operator_count; i++) {
        int32_t callee[2];
        size_t n = op_calls(&g->operators[i], callee);
        for (size_t k = 0; k < n; k++) {
            if (!walk_calls(c, callee[k], level + 1))
                return false;
            if (c->depth[callee[k]] + 1 > best)
                best = c->depth[callee[k]] + 1;
        }
    }
    c->state[s] = DONE;
    c->depth[s] = best;
    return true;
}

_Static_assert(CG_TFLITE_MAX_CALL_DEPTH == 32, "update the messages above");

static bool check_calls(reader *rd)
{
    size_t n = rd->m->subgraph_count;
    if (!n)
        return true;
    calls c = {rd, calloc(n, 1), calloc(n, sizeof(unsigned)), {0}};
    bool ok = c.state && c.depth;
    if (!ok)
        cg_error_set(rd->fb.err, CG_NOMEM, "%s: out of memory", rd->fb.label);
    for (size_t s = 0; ok && s < n; s++)
        ok = walk_calls(&c, (int32_t)s, 0);
    free(c.state);
    free(c.depth);
    return ok;
}

/* ---- entry points ------------------------------------------------------- */

void cg_tflite_load_options_default(cg_tflite_load_options *opt)
{
    opt->max_tables = 1000000;
    opt->max_depth = 64;
}

bool cg_tflite_detect(const void *bytes, size_t size)
{
    return bytes && size >= 8 && memcmp((const uint8_t *)bytes + 4, "TFL3", 4) == 0;
}

static cg_status parse(cg_tflite_model *m, const char *label, const cg_tflite_load_options *opt,
                       cg_error *err)
{
    cg_tflite_load_options defaults;
    cg_tflite_load_options_default(&defaults);
    if (!opt)
        opt = &defaults;
    if (m->file_size < 8)
        return cg_error_set(err, CG_PARSE,
                            "%s: %zu bytes is too small for a .tflite file (its header alone, "
                            "the root offset and the \"TFL3\" identifier, is 8 bytes)",
                            label, m->file_size);
    if (!cg_tflite_detect(m->bytes, m->file_size)) {
        char id[5];
        for (int i = 0; i < 4; i++) {
            uint8_t c = m->bytes[4 + i];
            id[i] = c >= 0x20 && c < 0x7f ? (char)c : '?';
        }
        id[4] = '\0';
        return cg_error_set(err, CG_PARSE,
                            "%s: no \"TFL3\" file identifier at bytes 4-7 (found \"%s\"): not a "
                            "TFLite model",
                            label, id);
    }
    reader rd;
    memset(&rd, 0, sizeof rd);
    rd.m = m;
    rd.fb.base = m->bytes;
    rd.fb.size = m->file_size < FB_MAX_BUFFER ? m->file_size : FB_MAX_BUFFER;
    rd.fb.label = label;
    rd.fb.err = err;
    rd.fb.arena = m->arena;
    rd.fb.max_tables = opt->max_tables;
    rd.fb.max_depth = opt->max_depth;
    rd.fb.budget = rd.fb.size * DECODE_BYTES_PER_BYTE + DECODE_BYTES_EXTRA;
    m->flatbuffer_size = rd.fb.size;
    fb_table root;
    if (!fb_root(&rd.fb, &root) || !read_model(&rd, &root) || !check_indexes(&rd) ||
        !check_calls(&rd))
        return err && err->status != CG_OK ? err->status : CG_PARSE;
    return CG_OK;
}

static cg_tflite_model *model_new(void)
{
    cg_tflite_model *m = calloc(1, sizeof *m);
    if (m && !(m->arena = cg_arena_new())) {
        free(m);
        return NULL;
    }
    return m;
}

cg_status cg_tflite_load(const char *path, const cg_tflite_load_options *opt,
                         cg_tflite_model **out, cg_error *err)
{
    *out = NULL;
    cg_tflite_model *m = model_new();
    if (!m)
        return cg_error_set(err, CG_NOMEM, "%s: out of memory", path);
    cg_status st = cg_map_path(path, &m->mapping, err);
    if (st == CG_OK) {
        m->bytes = m->mapping->addr;
        m->file_size = m->mapping->size;
        m->path = cg_arena_strndup(m->arena, path, strlen(path));
        st = m->path ? parse(m, path, opt, err)
                     : cg_error_set(err, CG_NOMEM, "%s: out of memory", path);
    }
    if (st != CG_OK) {
        cg_tflite_free(m);
        return st;
    }
    *out = m;
    return CG_OK;
}

cg_status cg_tflite_load_bytes(const void *bytes, size_t size, const char *label,
                               const cg_tflite_load_options *opt, cg_tflite_model **out,
                               cg_error *err)
{
    *out = NULL;
    if (!label)
        label = "<bytes>";
    cg_tflite_model *m = model_new();
    if (!m || (size && !(m->copy = malloc(size)))) {
        cg_tflite_free(m);
        return cg_error_set(err, CG_NOMEM, "%s: out of memory for %zu bytes", label, size);
    }
    if (size)
        memcpy(m->copy, bytes, size);
    m->bytes = m->copy;
    m->file_size = size;
    cg_status st = parse(m, label, opt, err);
    if (st != CG_OK) {
        cg_tflite_free(m);
        return st;
    }
    *out = m;
    return CG_OK;
}

void cg_tflite_free(cg_tflite_model *model)
{
    if (!model)
        return;
    cg_arena_free(model->arena);
    cg_mappings_free(model->mapping);
    free(model->copy);
    free(model);
}
