/*
 * The inspect report. It is built once as a JSON tree (jansson) and then
 * either dumped as JSON or rendered as text from the same tree, so the two
 * forms can never disagree. Nothing here touches tensor payloads: sizes come
 * from dims and dtypes, which is what keeps inspect at a few MB of RSS on
 * models of hundreds of MB.
 */
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "convgate/inspect.h"
#include "convgate/schema.h"
#include "ir/walk.h"
#include "report/inspect_common.h"
#include "report/report.h"
#include "core/text.h"

static const char *domain_name(const char *d)
{
    return (!d || !*d) ? "ai.onnx" : d;
}

static void type_string(const cg_type *t, char *buf, size_t n)
{
    if (!t) {
        snprintf(buf, n, "unknown");
        return;
    }
    char inner[200];
    switch (t->kind) {
    case CG_TYPE_TENSOR:
    case CG_TYPE_SPARSE_TENSOR: {
        const char *name = cg_dtype_valid(t->elem_type) ? cg_dtype_name((cg_dtype)t->elem_type)
                                                        : "undefined";
        if (t->kind == CG_TYPE_SPARSE_TENSOR)
            snprintf(buf, n, "sparse(%s)", name);
        else
            snprintf(buf, n, "%s", name);
        return;
    }
    case CG_TYPE_SEQUENCE:
        type_string(t->elem, inner, sizeof inner);
        snprintf(buf, n, "sequence(%s)", inner);
        return;
    case CG_TYPE_OPTIONAL:
        type_string(t->elem, inner, sizeof inner);
        snprintf(buf, n, "optional(%s)", inner);
        return;
    case CG_TYPE_MAP:
        type_string(t->elem, inner, sizeof inner);
        snprintf(buf, n, "map(%s,%s)",
                 cg_dtype_valid(t->map_key_type) ? cg_dtype_name((cg_dtype)t->map_key_type) : "?",
                 inner);
        return;
    case CG_TYPE_NONE:
        break;
    }
    snprintf(buf, n, "unknown");
}

/* {name, dtype, shape, dynamic}: shape is null when unknown; dims are ints
 * (fixed), strings (symbolic) or null (unknown). */
static json_t *value_json(const cg_value_info *v)
{
    char dtype[256];
    type_string(v->type, dtype, sizeof dtype);
    json_t *o = json_object();
    cg_json_set(o, "name", cg_json_text(v->name ? v->name : ""));
    cg_json_set(o, "dtype", cg_json_text(dtype));
    const cg_type *t = v->type;
    while (t && (t->kind == CG_TYPE_OPTIONAL || t->kind == CG_TYPE_SEQUENCE) && t->elem)
        t = t->elem;
    json_t *dyn = json_array();
    if (t && (t->kind == CG_TYPE_TENSOR || t->kind == CG_TYPE_SPARSE_TENSOR) && t->shape) {
        json_t *shape = json_array();
        for (size_t i = 0; i < t->shape->rank; i++) {
            const cg_dim *d = &t->shape->dims[i];
            if (d->has_value && d->value >= 0) {
                json_array_append_new(shape, json_integer(d->value));
            } else if (d->param && *d->param) {
                json_array_append_new(shape, cg_json_text(d->param));
                json_array_append_new(dyn, cg_json_text(d->param));
            } else {
                json_array_append_new(shape, json_null());
                char label[32];
                snprintf(label, sizeof label, "axis %zu", i);
                json_array_append_new(dyn, cg_json_text(label));
            }
        }
        cg_json_set(o, "shape", shape);
    } else {
        cg_json_set(o, "shape", json_null());
        json_array_append_new(dyn, cg_json_text("rank unknown"));
    }
    cg_json_set(o, "dynamic", dyn);
    return o;
}

typedef struct op_count {
    const char *domain;
    const char *op;
    long count;
    int depth_min;
} op_count;

typedef struct walk_state {
    op_count *ops;
    size_t op_count, op_cap;
    long nodes_total;
    long control_flow;
    bool oom;
} walk_state;

static bool count_node(void *user, const cg_graph *g, const cg_node *n, int depth)
{
    (void)g;
    walk_state *s = user;
    s->nodes_total++;
    if (cg_node_is_control_flow(n))
        s->control_flow++;
    const char *dom = domain_name(n->domain);
    const char *op = n->op_type ? n->op_type : "";
    for (size_t i = 0; i < s->op_count; i++)
        if (strcmp(s->ops[i].op, op) == 0 && strcmp(s->ops[i].domain, dom) == 0) {
            s->ops[i].count++;
            if (depth < s->ops[i].depth_min)
                s->ops[i].depth_min = depth;
            return true;
        }
    if (s->op_count == s->op_cap) {
        size_t ncap = s->op_cap ? s->op_cap * 2 : 32;
        op_count *nops = realloc(s->ops, ncap * sizeof *nops);
        if (!nops) {
            s->oom = true;
            return false;
        }
        s->ops = nops;
        s->op_cap = ncap;
    }
    s->ops[s->op_count++] = (op_count){dom, op, 1, depth};
    return true;
}

static int cmp_ops(const void *a, const void *b)
{
    const op_count *x = a, *y = b;
    if (x->count != y->count)
        return x->count < y->count ? 1 : -1;
    int d = strcmp(x->domain, y->domain);
    return d ? d : strcmp(x->op, y->op);
}

typedef struct tensor_size {
    const cg_tensor_proto *t;
    uint64_t bytes;
} tensor_size;

static int cmp_sizes(const void *a, const void *b)
{
    const tensor_size *x = a, *y = b;
    if (x->bytes != y->bytes)
        return x->bytes < y->bytes ? 1 : -1;
    return strcmp(x->t->name ? x->t->name : "", y->t->name ? y->t->name : "");
}

static json_t *build(const cg_model *m, const cg_inspect_options *opt, cg_error *err)
{
    json_t *r = json_object();
    const cg_graph *g = m->graph;
    cg_json_set(r, "schema_version", json_integer(CG_INSPECT_SCHEMA_VERSION));
    cg_json_set(r, "format", cg_json_text("onnx"));
    cg_json_set(r, "file", m->path ? cg_json_text(m->path) : json_null());
    cg_json_set(r, "file_bytes", json_integer((json_int_t)m->file_size));
    cg_json_set(r, "ir_version", m->has_ir_version ? json_integer(m->ir_version)
                                                           : json_null());
    cg_json_set(r, "producer",
                        json_pack("{s:s, s:s}", "name",
                                  m->producer_name ? m->producer_name : "", "version",
                                  m->producer_version ? m->producer_version : ""));
    cg_json_set(r, "graph_name", cg_json_text(g && g->name ? g->name : ""));
    json_t *opsets = json_array();
    for (size_t i = 0; i < m->opset_count; i++)
        json_array_append_new(opsets, json_pack("{s:s, s:I}", "domain",
                                                domain_name(m->opsets[i].domain), "version",
                                                (json_int_t)m->opsets[i].version));
    cg_json_set(r, "opset_import", opsets);

    json_t *inputs = json_array(), *outputs = json_array();
    size_t overridable = 0;
    if (g) {
        for (size_t i = 0; i < g->input_count; i++) {
            if (cg_graph_initializer(g, g->inputs[i].name)) {
                overridable++;
                continue;
            }
            json_array_append_new(inputs, value_json(&g->inputs[i]));
        }
        for (size_t i = 0; i < g->output_count; i++)
            json_array_append_new(outputs, value_json(&g->outputs[i]));
    }
    cg_json_set(r, "inputs", inputs);
    cg_json_set(r, "outputs", outputs);
    cg_json_set(r, "inputs_with_initializer_default", json_integer((json_int_t)overridable));

    size_t ninit = g ? g->initializer_count : 0;
    tensor_size *sizes = ninit ? calloc(ninit, sizeof *sizes) : NULL;
    if (ninit && !sizes) {
        cg_error_set(err, CG_NOMEM, "inspect: out of memory");
        json_decref(r);
        return NULL;
    }
    uint64_t total = 0, external = 0;
    for (size_t i = 0; i < ninit; i++) {
        const cg_tensor_proto *t = &g->initializers[i];
        sizes[i] = (tensor_size){t, cg_tensor_proto_bytes(t)};
        total += sizes[i].bytes;
        if (t->has_data_location && t->data_location == CG_LOC_EXTERNAL)
            external += sizes[i].bytes;
    }
    cg_json_set(r, "initializers",
                        json_pack("{s:I, s:I, s:I, s:I}", "count", (json_int_t)ninit, "bytes",
                                  (json_int_t)total, "external_bytes", (json_int_t)external,
                                  "sparse_count",
                                  (json_int_t)(g ? g->sparse_initializer_count : 0)));
    cg_json_set(r, "node_count", json_integer(g ? (json_int_t)g->node_count : 0));

    walk_state ws = {0};
    cg_graph_walk(g, count_node, &ws);
    if (ws.oom) {
        free(ws.ops);
        free(sizes);
        json_decref(r);
        cg_error_set(err, CG_NOMEM, "inspect: out of memory");
        return NULL;
    }
    cg_json_set(r, "node_count_with_subgraphs", json_integer(ws.nodes_total));
    if (ws.op_count)
        qsort(ws.ops, ws.op_count, sizeof *ws.ops, cmp_ops);
    json_t *ops = json_array(), *custom = json_array(), *cflow = json_array();
    for (size_t i = 0; i < ws.op_count; i++) {
        const op_count *oc = &ws.ops[i];
        bool std_domain = strcmp(oc->domain, "ai.onnx") == 0;
        int64_t opset = cg_model_opset(m, std_domain ? "" : oc->domain);
        const cg_schema *s = opset >= 0 ? cg_schema_find(oc->domain, oc->op, opset) : NULL;
        json_t *o = json_pack("{s:s, s:s, s:o, s:i, s:b}", "domain", oc->domain, "op_type", oc->op,
                              "since_version", s ? json_integer(s->since_version) : json_null(),
                              "count", (int)oc->count, "in_subgraph_only", oc->depth_min > 0);
        bool known_domain = cg_schema_known_domain(oc->domain);
        if (!known_domain) {
            cg_json_set(o, "custom", json_true());
            json_array_append_new(custom, json_pack("{s:s, s:s, s:i}", "domain", oc->domain,
                                                    "op_type", oc->op, "count", (int)oc->count));
        } else if (!s) {
            cg_json_set(o, "unknown", json_true());
        }
        if (std_domain && (strcmp(oc->op, "If") == 0 || strcmp(oc->op, "Loop") == 0 ||
                           strcmp(oc->op, "Scan") == 0))
            json_array_append_new(cflow, json_pack("{s:s, s:i}", "op_type", oc->op, "count",
                                                   (int)oc->count));
        json_array_append_new(ops, o);
    }
    free(ws.ops);
    cg_json_set(r, "ops", ops);
    cg_json_set(r, "custom_ops", custom);
    cg_json_set(r, "control_flow", cflow);

    int top = opt && opt->top_tensors > 0 ? opt->top_tensors : 10;
    if (ninit)
        qsort(sizes, ninit, sizeof *sizes, cmp_sizes);
    json_t *largest = json_array();
    for (size_t i = 0; i < ninit && i < (size_t)top; i++) {
        const cg_tensor_proto *t = sizes[i].t;
        json_t *shape = json_array();
        for (size_t d = 0; d < t->rank; d++)
            json_array_append_new(shape, json_integer(t->dims[d]));
        json_array_append_new(
            largest,
            json_pack("{s:s, s:s, s:o, s:I, s:s}", "name", t->name ? t->name : "", "dtype",
                      cg_dtype_valid(t->data_type) ? cg_dtype_name((cg_dtype)t->data_type)
                                                   : "undefined",
                      "shape", shape, "bytes", (json_int_t)sizes[i].bytes, "location",
                      (t->has_data_location && t->data_location == CG_LOC_EXTERNAL) ? "external"
                                                                                   : "inline"));
    }
    free(sizes);
    cg_json_set(r, "largest_tensors", largest);
    json_t *meta = json_object();
    for (size_t i = 0; i < m->metadata_count; i++)
        cg_json_set(meta, m->metadata[i].key ? m->metadata[i].key : "",
                            cg_json_text(m->metadata[i].value ? m->metadata[i].value : ""));
    cg_json_set(r, "metadata", meta);
    cg_json_set(r, "local_functions", json_integer((json_int_t)m->function_count));
    return r;
}

void cg_inspect_human_bytes(uint64_t b, char *buf, size_t n)
{
    if (b >= (uint64_t)1 << 30)
        snprintf(buf, n, "%.2f GiB", (double)b / (1 << 30));
    else if (b >= 1 << 20)
        snprintf(buf, n, "%.1f MiB", (double)b / (1 << 20));
    else if (b >= 1 << 10)
        snprintf(buf, n, "%.1f KiB", (double)b / (1 << 10));
    else
        snprintf(buf, n, "%llu B", (unsigned long long)b);
}

void cg_inspect_shape_text(json_t *shape, char *buf, size_t n)
{
    if (!json_is_array(shape)) {
        snprintf(buf, n, "(unknown rank)");
        return;
    }
    size_t used = 0;
    used += (size_t)snprintf(buf + used, n - used, "[");
    size_t i;
    json_t *d;
    json_array_foreach(shape, i, d)
    {
        if (used >= n)
            break;
        const char *sep = i ? ", " : "";
        if (json_is_integer(d))
            used += (size_t)snprintf(buf + used, n - used, "%s%lld", sep,
                                     (long long)json_integer_value(d));
        else if (json_is_string(d))
            used += (size_t)snprintf(buf + used, n - used, "%s%s", sep, json_string_value(d));
        else
            used += (size_t)snprintf(buf + used, n - used, "%s?", sep);
    }
    if (used < n)
        snprintf(buf + used, n - used, "]");
}

void cg_inspect_print_values(FILE *f, const char *title, json_t *arr)
{
    cg_text_printf(f, "%s (%zu)\n", title, json_array_size(arr));
    size_t i;
    json_t *v;
    json_array_foreach(arr, i, v)
    {
        char shape[512];
        cg_inspect_shape_text(json_object_get(v, "shape"), shape, sizeof shape);
        cg_text_printf(f, "  %-24s %-10s %s", json_string_value(json_object_get(v, "name")),
                json_string_value(json_object_get(v, "dtype")), shape);
        json_t *dyn = json_object_get(v, "dynamic");
        if (json_array_size(dyn)) {
            fprintf(f, "   dynamic:");
            size_t k;
            json_t *d;
            json_array_foreach(dyn, k, d) cg_text_printf(f, " %s", json_string_value(d));
        }
        fputc('\n', f);
    }
}

static void render_text(json_t *r, FILE *f)
{
    char buf[64];
    cg_inspect_human_bytes((uint64_t)json_integer_value(json_object_get(r, "file_bytes")), buf, sizeof buf);
    json_t *file = json_object_get(r, "file");
    cg_text_printf(f, "model        %s (%s)\n",
                   json_is_string(file) ? json_string_value(file) : "-", buf);
    json_t *ir = json_object_get(r, "ir_version");
    json_t *prod = json_object_get(r, "producer");
    cg_text_printf(f, "ir_version   %s%lld\n", json_is_null(ir) ? "missing " : "",
            (long long)json_integer_value(ir));
    cg_text_printf(f, "producer     %s %s\n", json_string_value(json_object_get(prod, "name")),
            json_string_value(json_object_get(prod, "version")));
    fprintf(f, "opsets      ");
    size_t i;
    json_t *v;
    json_array_foreach(json_object_get(r, "opset_import"), i, v)
        cg_text_printf(f, " %s %lld", json_string_value(json_object_get(v, "domain")),
                (long long)json_integer_value(json_object_get(v, "version")));
    fputc('\n', f);
    cg_inspect_print_values(f, "inputs", json_object_get(r, "inputs"));
    long long overridable = json_integer_value(json_object_get(r, "inputs_with_initializer_default"));
    if (overridable)
        fprintf(f, "  (+%lld inputs that default to an initializer)\n", overridable);
    cg_inspect_print_values(f, "outputs", json_object_get(r, "outputs"));
    json_t *init = json_object_get(r, "initializers");
    cg_inspect_human_bytes((uint64_t)json_integer_value(json_object_get(init, "bytes")), buf, sizeof buf);
    cg_text_printf(f, "initializers %lld tensors, %s",
                   (long long)json_integer_value(json_object_get(init, "count")), buf);
    long long ext = json_integer_value(json_object_get(init, "external_bytes"));
    if (ext) {
        cg_inspect_human_bytes((uint64_t)ext, buf, sizeof buf);
        cg_text_printf(f, " (%s external)", buf);
    }
    fputc('\n', f);
    fprintf(f, "nodes        %lld in the main graph, %lld with subgraphs\n",
            (long long)json_integer_value(json_object_get(r, "node_count")),
            (long long)json_integer_value(json_object_get(r, "node_count_with_subgraphs")));
    json_t *ops = json_object_get(r, "ops");
    fprintf(f, "ops (%zu kinds)\n", json_array_size(ops));
    cg_text_printf(f, "  %-20s %-28s %5s %6s\n", "domain", "op", "since", "count");
    json_array_foreach(ops, i, v)
    {
        json_t *since = json_object_get(v, "since_version");
        char since_s[16];
        if (json_is_integer(since))
            snprintf(since_s, sizeof since_s, "%lld", (long long)json_integer_value(since));
        else
            snprintf(since_s, sizeof since_s, "?");
        const char *flag = json_is_true(json_object_get(v, "custom"))    ? "  custom domain"
                           : json_is_true(json_object_get(v, "unknown")) ? "  UNKNOWN at this opset"
                           : json_is_true(json_object_get(v, "in_subgraph_only"))
                               ? "  (in subgraphs)"
                               : "";
        cg_text_printf(f, "  %-20s %-28s %5s %6lld%s\n",
                       json_string_value(json_object_get(v, "domain")),
                       json_string_value(json_object_get(v, "op_type")), since_s,
                       (long long)json_integer_value(json_object_get(v, "count")), flag);
    }
    json_t *custom = json_object_get(r, "custom_ops");
    json_t *cflow = json_object_get(r, "control_flow");
    cg_text_printf(f, "custom ops   %s\n", json_array_size(custom) ? "yes (see above)" : "none");
    fprintf(f, "control flow ");
    if (!json_array_size(cflow))
        fprintf(f, "none");
    json_array_foreach(cflow, i, v) cg_text_printf(
        f, "%s%s x%lld", i ? ", " : "", json_string_value(json_object_get(v, "op_type")),
        (long long)json_integer_value(json_object_get(v, "count")));
    fputc('\n', f);
    json_t *largest = json_object_get(r, "largest_tensors");
    if (json_array_size(largest)) {
        fprintf(f, "largest tensors\n");
        json_array_foreach(largest, i, v)
        {
            char shape[256];
            cg_inspect_shape_text(json_object_get(v, "shape"), shape, sizeof shape);
            cg_inspect_human_bytes((uint64_t)json_integer_value(json_object_get(v, "bytes")), buf, sizeof buf);
            cg_text_printf(f, "  %-40s %-8s %-22s %10s %s\n",
                           json_string_value(json_object_get(v, "name")),
                           json_string_value(json_object_get(v, "dtype")), shape, buf,
                           json_string_value(json_object_get(v, "location")));
        }
    }
}

json_t *cg_report_inspect_json(const cg_model *model, const cg_inspect_options *opt,
                               cg_error *err)
{
    return build(model, opt, err);
}

cg_status cg_inspect_emit(json_t *r, bool json, FILE *f, void (*render)(json_t *r, FILE *f),
                          cg_error *err)
{
    cg_status st = CG_OK;
    if (json) {
        if (cg_json_write(f, r) != 0)
            st = cg_error_set(err, CG_IO, "inspect: writing JSON failed");
    } else {
        render(r, f);
    }
    json_decref(r);
    return st;
}

cg_status cg_inspect_write(const cg_model *model, const cg_inspect_options *opt, bool json,
                           FILE *f, cg_error *err)
{
    json_t *r = build(model, opt, err);
    if (!r)
        return err && err->status ? err->status : CG_NOMEM;
    return cg_inspect_emit(r, json, f, render_text, err);
}
