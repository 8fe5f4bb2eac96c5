/*
 * The inspect report for .tflite models. Like the ONNX one (inspect.c) it
 * is one JSON tree, dumped or rendered as text, with the same keys where
 * the meaning is the same (inputs, outputs, initializers, node counts, ops,
 * custom_ops, control_flow, largest_tensors, metadata) and the TFLite
 * structure under "tflite" (docs/inspect-json.md). No payload is read but
 * the metadata buffers, which are printed when they are text.
 */
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "convgate/inspect.h"
#include "convgate/tflite.h"
#include "report/inspect_common.h"
#include "report/report.h"
#include "core/text.h"

/* JSON arrays of numbers are capped so per-channel parameters of a large
 * model do not swamp the report; the full count is given beside them. */
#define ARRAY_CAP 64

static const char *type_name(int32_t type)
{
    const char *n = cg_tflite_type_name(type);
    return n ? n : "undefined";
}

static json_t *ints_json(const int32_t *v, size_t n)
{
    json_t *a = json_array();
    for (size_t i = 0; i < n; i++)
        json_array_append_new(a, json_integer(v[i]));
    return a;
}

/* The ONNX-style shape: dims of the static shape, null where
 * shape_signature says -1 (dynamic); `dynamic` lists those axes. */
static json_t *contract_shape(const cg_tflite_tensor *t, json_t *dynamic)
{
    json_t *shape = json_array();
    bool sig = t->has_shape_signature && t->signature_rank == t->rank;
    for (size_t i = 0; i < t->rank; i++) {
        if ((sig && t->shape_signature[i] < 0) || t->shape[i] < 0) {
            char label[32];
            snprintf(label, sizeof label, "axis %zu", i);
            json_array_append_new(shape, json_null());
            json_array_append_new(dynamic, cg_json_text(label));
        } else {
            json_array_append_new(shape, json_integer(t->shape[i]));
        }
    }
    return shape;
}

static json_t *quant_json(const cg_tflite_quant *q)
{
    if (!q || (q->scale_count == 0 && q->zero_point_count == 0 && q->details_type == 0))
        return json_null();
    json_t *o = json_object();
    json_t *scale = json_array(), *zp = json_array();
    for (size_t i = 0; i < q->scale_count && i < ARRAY_CAP; i++)
        json_array_append_new(scale, cg_json_number(q->scale[i]));
    for (size_t i = 0; i < q->zero_point_count && i < ARRAY_CAP; i++)
        json_array_append_new(zp, json_integer((json_int_t)q->zero_point[i]));
    cg_json_set(o, "scale", scale);
    cg_json_set(o, "zero_point", zp);
    cg_json_set(o, "scale_count", json_integer((json_int_t)q->scale_count));
    cg_json_set(o, "per_axis", json_boolean(q->scale_count > 1));
    cg_json_set(o, "quantized_dimension", json_integer(q->quantized_dimension));
    static const char *const details[] = {NULL, "custom", "blockwise", "multi_axis"};
    if (q->details_type > 0 && q->details_type <= 3) {
        cg_json_set(o, "details", cg_json_text(details[q->details_type]));
        if (q->details_type >= 2)
            cg_json_set(o, "block_size", json_integer(q->block_size));
    }
    return o;
}

static const char *location(const cg_tflite_model *m, const cg_tflite_tensor *t)
{
    if (t->external_buffer)
        return "external";
    if (t->buffer == 0 || t->buffer >= m->buffer_count || !m->buffers[t->buffer].data.len)
        return NULL;
    return m->buffers[t->buffer].offset > 1 ? "offset" : "inline";
}

/* {name, dtype, shape, dynamic, tensor, quantization}: a subgraph input or
 * output, as the application sees it. */
static json_t *value_json(const cg_tflite_subgraph *g, int32_t index)
{
    const cg_tflite_tensor *t = &g->tensors[index];
    json_t *o = json_object(), *dyn = json_array();
    cg_json_set(o, "name", cg_json_text(t->name ? t->name : ""));
    cg_json_set(o, "dtype", cg_json_text(type_name(t->type)));
    cg_json_set(o, "shape", contract_shape(t, dyn));
    cg_json_set(o, "dynamic", dyn);
    cg_json_set(o, "tensor", json_integer(index));
    cg_json_set(o, "quantization", quant_json(t->quant));
    return o;
}

static json_t *tensor_json(const cg_tflite_model *m, const cg_tflite_subgraph *g, size_t i)
{
    const cg_tflite_tensor *t = &g->tensors[i];
    json_t *o = json_object(), *dyn = json_array();
    json_t *contract = contract_shape(t, dyn);
    json_decref(contract);
    cg_json_set(o, "index", json_integer((json_int_t)i));
    cg_json_set(o, "name", cg_json_text(t->name ? t->name : ""));
    cg_json_set(o, "dtype", cg_json_text(type_name(t->type)));
    cg_json_set(o, "shape", ints_json(t->shape, t->rank));
    cg_json_set(o, "shape_signature", t->has_shape_signature
                                                  ? ints_json(t->shape_signature, t->signature_rank)
                                                  : json_null());
    cg_json_set(o, "dynamic", dyn);
    cg_json_set(o, "buffer", json_integer(t->buffer));
    cg_bytes data = cg_tflite_tensor_data(m, t);
    cg_json_set(o, "bytes", json_integer((json_int_t)data.len));
    const char *loc = location(m, t);
    cg_json_set(o, "location", loc ? cg_json_text(loc) : json_null());
    cg_json_set(o, "variable", json_boolean(t->is_variable));
    cg_json_set(o, "sparse", json_boolean(t->sparsity != NULL));
    cg_json_set(o, "quantization", quant_json(t->quant));
    return o;
}

typedef struct op_row {
    const cg_tflite_opcode *oc;
    char name[64];
    long count;
    size_t first_subgraph;
} op_row;

static int cmp_rows(const void *a, const void *b)
{
    const op_row *x = a, *y = b;
    if (x->count != y->count)
        return x->count < y->count ? 1 : -1;
    int d = strcmp(x->name, y->name);
    return d ? d : x->oc->version - y->oc->version;
}

static bool is_control_flow(int32_t builtin)
{
    return builtin == CG_TFLITE_OP_IF || builtin == CG_TFLITE_OP_WHILE ||
           builtin == CG_TFLITE_OP_CALL_ONCE || builtin == CG_TFLITE_OP_CALL;
}

/* ops, custom_ops, control_flow: one row per operator code used. */
static bool op_inventory(const cg_tflite_model *m, json_t *r)
{
    op_row *rows = m->opcode_count ? calloc(m->opcode_count, sizeof *rows) : NULL;
    if (m->opcode_count && !rows)
        return false;
    for (size_t i = 0; i < m->opcode_count; i++) {
        char buf[32];
        rows[i].oc = &m->opcodes[i];
        snprintf(rows[i].name, sizeof rows[i].name, "%s",
                 cg_tflite_op_name(&m->opcodes[i], buf, sizeof buf));
        rows[i].first_subgraph = SIZE_MAX;
    }
    for (size_t s = 0; s < m->subgraph_count; s++)
        for (size_t i = 0; i < m->subgraphs[s].operator_count; i++) {
            op_row *row = &rows[m->subgraphs[s].operators[i].opcode_index];
            row->count++;
            if (s < row->first_subgraph)
                row->first_subgraph = s;
        }
    if (m->opcode_count)
        qsort(rows, m->opcode_count, sizeof *rows, cmp_rows);
    json_t *ops = json_array(), *custom = json_array(), *cflow = json_array();
    for (size_t i = 0; i < m->opcode_count; i++) {
        const op_row *row = &rows[i];
        if (!row->count)
            continue;
        bool is_custom = row->oc->builtin == CG_TFLITE_OP_CUSTOM;
        bool flex = cg_tflite_op_is_flex(row->oc);
        json_t *o = json_pack("{s:o, s:i, s:i, s:i, s:b}", "op_type", cg_json_text(row->name),
                              "builtin_code", (int)row->oc->builtin, "version",
                              (int)row->oc->version, "count", (int)row->count,
                              "in_subgraph_only", row->first_subgraph > 0);
        if (is_custom) {
            cg_json_set(o, "custom", json_true());
            json_array_append_new(custom, json_pack("{s:o, s:i, s:b}", "op_type",
                                                    cg_json_text(row->name), "count",
                                                    (int)row->count, "flex", flex));
        }
        if (flex)
            cg_json_set(o, "flex", json_true());
        if (!cg_tflite_builtin_name(row->oc->builtin))
            cg_json_set(o, "unknown", json_true());
        if (is_control_flow(row->oc->builtin))
            json_array_append_new(cflow, json_pack("{s:o, s:i}", "op_type",
                                                   cg_json_text(row->name), "count",
                                                   (int)row->count));
        json_array_append_new(ops, o);
    }
    free(rows);
    cg_json_set(r, "ops", ops);
    cg_json_set(r, "custom_ops", custom);
    cg_json_set(r, "control_flow", cflow);
    return true;
}

typedef struct sized {
    size_t subgraph, tensor;
    size_t bytes;
} sized;

static int cmp_sized(const void *a, const void *b)
{
    const sized *x = a, *y = b;
    if (x->bytes != y->bytes)
        return x->bytes < y->bytes ? 1 : -1;
    if (x->subgraph != y->subgraph)
        return x->subgraph < y->subgraph ? -1 : 1;
    return x->tensor < y->tensor ? -1 : x->tensor > y->tensor;
}

/* initializers (constants of the main subgraph) and largest_tensors (of
 * every subgraph). */
static bool constants(const cg_tflite_model *m, int top, json_t *r)
{
    size_t total = 0;
    for (size_t s = 0; s < m->subgraph_count; s++)
        total += m->subgraphs[s].tensor_count;
    sized *all = total ? calloc(total, sizeof *all) : NULL;
    if (total && !all)
        return false;
    size_t n = 0;
    uint64_t count = 0, bytes = 0, external = 0, sparse = 0;
    for (size_t s = 0; s < m->subgraph_count; s++) {
        const cg_tflite_subgraph *g = &m->subgraphs[s];
        for (size_t i = 0; i < g->tensor_count; i++) {
            const cg_tflite_tensor *t = &g->tensors[i];
            const char *loc = location(m, t);
            if (!loc)
                continue;
            size_t len = cg_tflite_tensor_data(m, t).len;
            all[n++] = (sized){s, i, len};
            if (s != 0)
                continue;
            count++;
            bytes += len;
            external += strcmp(loc, "external") == 0 ? len : 0;
            sparse += t->sparsity != NULL;
        }
    }
    cg_json_set(r, "initializers",
                        json_pack("{s:I, s:I, s:I, s:I}", "count", (json_int_t)count, "bytes",
                                  (json_int_t)bytes, "external_bytes", (json_int_t)external,
                                  "sparse_count", (json_int_t)sparse));
    if (n)
        qsort(all, n, sizeof *all, cmp_sized);
    json_t *largest = json_array();
    for (size_t k = 0; k < n && k < (size_t)top; k++) {
        const cg_tflite_tensor *t = &m->subgraphs[all[k].subgraph].tensors[all[k].tensor];
        json_array_append_new(
            largest, json_pack("{s:o, s:s, s:o, s:I, s:s, s:i, s:i}", "name",
                               cg_json_text(t->name ? t->name : ""), "dtype", type_name(t->type),
                               "shape",
                               ints_json(t->shape, t->rank), "bytes", (json_int_t)all[k].bytes,
                               "location", location(m, t), "subgraph", (int)all[k].subgraph,
                               "tensor", (int)all[k].tensor));
    }
    free(all);
    cg_json_set(r, "largest_tensors", largest);
    return true;
}

/* The text of a metadata buffer when it is printable (trailing NULs
 * dropped), else NULL. */
static char *printable(cg_bytes b)
{
    size_t n = b.len;
    while (n && b.data[n - 1] == 0)
        n--;
    if (!n || n > 4096)
        return NULL;
    for (size_t i = 0; i < n; i++)
        if (b.data[i] < 0x20 || b.data[i] > 0x7e)
            return NULL;
    char *s = malloc(n + 1);
    if (s) {
        memcpy(s, b.data, n);
        s[n] = '\0';
    }
    return s;
}

static json_t *metadata_json(const cg_tflite_model *m, json_t *r)
{
    json_t *flat = json_object(), *list = json_array();
    for (size_t i = 0; i < m->metadata_count; i++) {
        const cg_tflite_metadata *md = &m->metadata[i];
        cg_bytes b = m->buffers[md->buffer].data;
        char *text = printable(b);
        const char *name = md->name ? md->name : "";
        if (text)
            cg_json_set(flat, name, cg_json_text(text));
        json_array_append_new(list, json_pack("{s:o, s:i, s:I, s:o}", "name",
                                              cg_json_text(name), "buffer",
                                              (int)md->buffer, "bytes", (json_int_t)b.len, "text",
                                              text ? cg_json_text(text) : json_null()));
        free(text);
    }
    cg_json_set(r, "metadata", flat);
    return list;
}

static json_t *tensor_maps_json(const cg_tflite_tensor_map *maps, size_t n)
{
    json_t *a = json_array();
    for (size_t i = 0; i < n; i++)
        json_array_append_new(a, json_pack("{s:o, s:i}", "name",
                                           cg_json_text(maps[i].name ? maps[i].name : ""),
                                           "tensor", (int)maps[i].tensor_index));
    return a;
}

static json_t *tflite_section(const cg_tflite_model *m, json_t *metadata_list)
{
    json_t *o = json_object();
    cg_json_set(o, "schema_version", json_integer(m->version));
    cg_json_set(o, "description", m->description ? cg_json_text(m->description)
                                                         : json_null());
    json_t *codes = json_array();
    for (size_t i = 0; i < m->opcode_count; i++) {
        const cg_tflite_opcode *oc = &m->opcodes[i];
        char buf[32];
        json_array_append_new(
            codes, json_pack("{s:i, s:o, s:i, s:i, s:i, s:o, s:i, s:b, s:b}", "index", (int)i,
                             "op_type", cg_json_text(cg_tflite_op_name(oc, buf, sizeof buf)),
                             "builtin",
                             (int)oc->builtin, "builtin_code", (int)oc->builtin_code,
                             "deprecated_builtin_code", (int)oc->deprecated_builtin_code,
                             "custom_code",
                             oc->custom_code ? cg_json_text(oc->custom_code) : json_null(),
                             "version", (int)oc->version, "custom",
                             oc->builtin == CG_TFLITE_OP_CUSTOM, "flex", cg_tflite_op_is_flex(oc)));
    }
    cg_json_set(o, "operator_codes", codes);
    json_t *subs = json_array();
    size_t quantized = 0, per_axis = 0, dynamic = 0;
    for (size_t s = 0; s < m->subgraph_count; s++) {
        const cg_tflite_subgraph *g = &m->subgraphs[s];
        json_t *tensors = json_array();
        for (size_t i = 0; i < g->tensor_count; i++) {
            json_t *t = tensor_json(m, g, i);
            quantized += !json_is_null(json_object_get(t, "quantization"));
            per_axis += g->tensors[i].quant && g->tensors[i].quant->scale_count > 1;
            dynamic += json_array_size(json_object_get(t, "dynamic")) > 0;
            json_array_append_new(tensors, t);
        }
        json_array_append_new(
            subs, json_pack("{s:i, s:o, s:o, s:o, s:i, s:o}", "index", (int)s, "name",
                            cg_json_text(g->name ? g->name : ""), "inputs",
                            ints_json(g->inputs, g->input_count),
                            "outputs", ints_json(g->outputs, g->output_count), "operators",
                            (int)g->operator_count, "tensors", tensors));
    }
    cg_json_set(o, "subgraphs", subs);
    uint64_t bytes = 0, offset_bytes = 0, offset_count = 0;
    for (size_t i = 0; i < m->buffer_count; i++) {
        bytes += m->buffers[i].data.len;
        if (m->buffers[i].offset > 1) {
            offset_count++;
            offset_bytes += m->buffers[i].data.len;
        }
    }
    cg_json_set(o, "buffers",
                        json_pack("{s:I, s:I, s:I, s:I}", "count", (json_int_t)m->buffer_count,
                                  "bytes", (json_int_t)bytes, "offset_count",
                                  (json_int_t)offset_count, "offset_bytes",
                                  (json_int_t)offset_bytes));
    json_t *sigs = json_array();
    for (size_t i = 0; i < m->signature_count; i++) {
        const cg_tflite_signature *sg = &m->signatures[i];
        json_array_append_new(
            sigs, json_pack("{s:o, s:i, s:o, s:o}", "key", cg_json_text(sg->key ? sg->key : ""),
                            "subgraph",
                            (int)sg->subgraph_index, "inputs",
                            tensor_maps_json(sg->inputs, sg->input_count), "outputs",
                            tensor_maps_json(sg->outputs, sg->output_count)));
    }
    cg_json_set(o, "signature_defs", sigs);
    cg_json_set(o, "metadata", metadata_list);
    cg_json_set(o, "quantized_tensors", json_integer((json_int_t)quantized));
    cg_json_set(o, "per_axis_quantized_tensors", json_integer((json_int_t)per_axis));
    cg_json_set(o, "dynamic_tensors", json_integer((json_int_t)dynamic));
    cg_json_set(o, "external_buffers", json_integer((json_int_t)m->external_buffer_count));
    return o;
}

static json_t *build(const cg_tflite_model *m, const cg_inspect_options *opt, cg_error *err)
{
    json_t *r = json_object();
    cg_json_set(r, "schema_version", json_integer(CG_INSPECT_SCHEMA_VERSION));
    cg_json_set(r, "format", cg_json_text("tflite"));
    cg_json_set(r, "file", m->path ? cg_json_text(m->path) : json_null());
    cg_json_set(r, "file_bytes", json_integer((json_int_t)m->file_size));
    const cg_tflite_subgraph *main = m->subgraph_count ? &m->subgraphs[0] : NULL;
    cg_json_set(r, "graph_name", cg_json_text(main && main->name ? main->name : ""));
    json_t *inputs = json_array(), *outputs = json_array();
    size_t with_default = 0;
    for (size_t i = 0; main && i < main->input_count; i++) {
        if (cg_tflite_tensor_data(m, &main->tensors[main->inputs[i]]).len) {
            with_default++;
            continue;
        }
        json_array_append_new(inputs, value_json(main, main->inputs[i]));
    }
    for (size_t i = 0; main && i < main->output_count; i++)
        json_array_append_new(outputs, value_json(main, main->outputs[i]));
    cg_json_set(r, "inputs", inputs);
    cg_json_set(r, "outputs", outputs);
    cg_json_set(r, "inputs_with_initializer_default",
                        json_integer((json_int_t)with_default));
    int top = opt && opt->top_tensors > 0 ? opt->top_tensors : 10;
    size_t all_ops = 0;
    for (size_t s = 0; s < m->subgraph_count; s++)
        all_ops += m->subgraphs[s].operator_count;
    cg_json_set(r, "node_count", json_integer(main ? (json_int_t)main->operator_count : 0));
    cg_json_set(r, "node_count_with_subgraphs", json_integer((json_int_t)all_ops));
    if (!constants(m, top, r) || !op_inventory(m, r)) {
        json_decref(r);
        cg_error_set(err, CG_NOMEM, "inspect: out of memory");
        return NULL;
    }
    json_t *md = metadata_json(m, r);
    cg_json_set(r, "tflite", tflite_section(m, md));
    return r;
}

static long long int_at(json_t *o, const char *key)
{
    return (long long)json_integer_value(json_object_get(o, key));
}

static const char *str_at(json_t *o, const char *key)
{
    const char *s = json_string_value(json_object_get(o, key));
    return s ? s : "";
}

static void render_text(json_t *r, FILE *f)
{
    char buf[64], shape[512];
    json_t *tf = json_object_get(r, "tflite");
    size_t i;
    json_t *v;
    cg_inspect_human_bytes((uint64_t)int_at(r, "file_bytes"), buf, sizeof buf);
    json_t *file = json_object_get(r, "file");
    cg_text_printf(f, "model        %s (%s)\n",
                   json_is_string(file) ? json_string_value(file) : "-", buf);
    fprintf(f, "format       TFLite, schema version %lld", int_at(tf, "schema_version"));
    if (json_is_string(json_object_get(tf, "description")))
        cg_text_printf(f, ", \"%s\"", str_at(tf, "description"));
    fputc('\n', f);
    json_t *subs = json_object_get(tf, "subgraphs");
    fprintf(f, "subgraphs    %zu:", json_array_size(subs));
    json_array_foreach(subs, i, v)
        cg_text_printf(f, "%s %zu '%s' (%lld ops, %zu tensors)", i ? "," : "", i, str_at(v, "name"),
                int_at(v, "operators"), json_array_size(json_object_get(v, "tensors")));
    fputc('\n', f);
    cg_inspect_print_values(f, "inputs", json_object_get(r, "inputs"));
    if (int_at(r, "inputs_with_initializer_default"))
        fprintf(f, "  (+%lld inputs with constant data)\n",
                int_at(r, "inputs_with_initializer_default"));
    cg_inspect_print_values(f, "outputs", json_object_get(r, "outputs"));
    json_t *sigs = json_object_get(tf, "signature_defs");
    json_array_foreach(sigs, i, v)
    {
        cg_text_printf(f, "signature    '%s' -> subgraph %lld; inputs", str_at(v, "key"),
                int_at(v, "subgraph"));
        size_t k;
        json_t *t;
        json_array_foreach(json_object_get(v, "inputs"), k, t)
            cg_text_printf(f, " %s=#%lld", str_at(t, "name"), int_at(t, "tensor"));
        fprintf(f, "; outputs");
        json_array_foreach(json_object_get(v, "outputs"), k, t)
            cg_text_printf(f, " %s=#%lld", str_at(t, "name"), int_at(t, "tensor"));
        fputc('\n', f);
    }
    json_t *init = json_object_get(r, "initializers");
    json_t *bufs = json_object_get(tf, "buffers");
    cg_inspect_human_bytes((uint64_t)int_at(init, "bytes"), buf, sizeof buf);
    cg_text_printf(f, "constants    %lld tensors in the main subgraph, %s; %lld buffers",
                   int_at(init, "count"), buf, int_at(bufs, "count"));
    if (int_at(bufs, "offset_count")) {
        cg_inspect_human_bytes((uint64_t)int_at(bufs, "offset_bytes"), buf, sizeof buf);
        cg_text_printf(f, ", %lld stored past the FlatBuffer (%s)", int_at(bufs, "offset_count"),
                       buf);
    }
    fputc('\n', f);
    fprintf(f, "quantized    %lld tensors (%lld per-axis); %lld tensors with dynamic dims\n",
            int_at(tf, "quantized_tensors"), int_at(tf, "per_axis_quantized_tensors"),
            int_at(tf, "dynamic_tensors"));
    fprintf(f, "operators    %lld in the main subgraph, %lld in all\n", int_at(r, "node_count"),
            int_at(r, "node_count_with_subgraphs"));
    json_t *ops = json_object_get(r, "ops");
    fprintf(f, "ops (%zu codes)\n", json_array_size(ops));
    cg_text_printf(f, "  %-32s %7s %6s\n", "op", "version", "count");
    json_array_foreach(ops, i, v)
    {
        const char *flag = json_is_true(json_object_get(v, "flex"))      ? "  FLEX (SELECT_TF_OPS)"
                           : json_is_true(json_object_get(v, "custom"))  ? "  custom"
                           : json_is_true(json_object_get(v, "unknown")) ? "  UNKNOWN code"
                           : json_is_true(json_object_get(v, "in_subgraph_only"))
                               ? "  (in subgraphs)"
                               : "";
        cg_text_printf(f, "  %-32s %7lld %6lld%s\n", str_at(v, "op_type"), int_at(v, "version"),
                int_at(v, "count"), flag);
    }
    json_t *cflow = json_object_get(r, "control_flow");
    fprintf(f, "control flow ");
    if (!json_array_size(cflow))
        fprintf(f, "none");
    json_array_foreach(cflow, i, v)
        cg_text_printf(f, "%s%s x%lld", i ? ", " : "", str_at(v, "op_type"), int_at(v, "count"));
    fputc('\n', f);
    json_t *md = json_object_get(tf, "metadata");
    json_array_foreach(md, i, v)
    {
        cg_inspect_human_bytes((uint64_t)int_at(v, "bytes"), buf, sizeof buf);
        if (json_is_string(json_object_get(v, "text")))
            cg_text_printf(f, "metadata     %s = \"%s\"\n", str_at(v, "name"), str_at(v, "text"));
        else
            cg_text_printf(f, "metadata     %s (%s, binary)\n", str_at(v, "name"), buf);
    }
    json_t *largest = json_object_get(r, "largest_tensors");
    if (json_array_size(largest)) {
        fprintf(f, "largest tensors\n");
        json_array_foreach(largest, i, v)
        {
            cg_inspect_shape_text(json_object_get(v, "shape"), shape, sizeof shape);
            cg_inspect_human_bytes((uint64_t)int_at(v, "bytes"), buf, sizeof buf);
            cg_text_printf(f, "  %-40s %-8s %-22s %10s %s\n", str_at(v, "name"), str_at(v, "dtype"),
                    shape, buf, str_at(v, "location"));
        }
    }
}

json_t *cg_report_inspect_tflite_json(const cg_tflite_model *model,
                                      const cg_inspect_options *opt, cg_error *err)
{
    return build(model, opt, err);
}

cg_status cg_inspect_write_tflite(const cg_tflite_model *model, const cg_inspect_options *opt,
                                  bool json, FILE *f, cg_error *err)
{
    json_t *r = build(model, opt, err);
    if (!r)
        return err && err->status ? err->status : CG_NOMEM;
    return cg_inspect_emit(r, json, f, render_text, err);
}
