/* Graph walks and small IR queries shared by inspect, check and run. */
#include <stdio.h>
#include <string.h>

#include "ir/walk.h"

static bool walk(const cg_graph *g, cg_node_visit_fn fn, void *user, int depth)
{
    for (size_t i = 0; i < g->node_count; i++) {
        const cg_node *n = &g->nodes[i];
        if (!fn(user, g, n, depth))
            return false;
        for (size_t a = 0; a < n->attr_count; a++) {
            const cg_attr *at = &n->attrs[a];
            if (at->g && !walk(at->g, fn, user, depth + 1))
                return false;
            for (size_t k = 0; k < at->graphs_count; k++)
                if (at->graphs[k] && !walk(at->graphs[k], fn, user, depth + 1))
                    return false;
        }
    }
    return true;
}

bool cg_graph_walk(const cg_graph *graph, cg_node_visit_fn fn, void *user)
{
    return graph ? walk(graph, fn, user, 0) : true;
}

bool cg_node_is_control_flow(const cg_node *node)
{
    if (!cg_domain_is_default(node->domain))
        return false;
    const char *op = node->op_type ? node->op_type : "";
    return strcmp(op, "If") == 0 || strcmp(op, "Loop") == 0 || strcmp(op, "Scan") == 0;
}

uint64_t cg_tensor_proto_bytes(const cg_tensor_proto *t)
{
    size_t es = cg_dtype_valid(t->data_type) ? cg_dtype_size((cg_dtype)t->data_type) : 0;
    int64_t numel;
    if (es && cg_tensor_proto_numel(t, &numel, NULL) == CG_OK &&
        (uint64_t)numel <= UINT64_MAX / es)
        return (uint64_t)numel * es;
    if (t->has_data_location && t->data_location == CG_LOC_EXTERNAL)
        return t->external_payload.len;
    if (t->raw_data.data)
        return t->raw_data.len;
    uint64_t n = 0;
    for (size_t i = 0; i < t->string_count; i++)
        n += t->string_data[i].len;
    return n + t->float_data.count * 4 + t->int32_data.count * 4 + t->int64_data.count * 8 +
           t->double_data.count * 8 + t->uint64_data.count * 8;
}

static const uint8_t proto_field_of[CG_DTYPE_COUNT] = {
    [CG_DTYPE_FLOAT] = CG_PROTO_FIELD_FLOAT,
    [CG_DTYPE_COMPLEX64] = CG_PROTO_FIELD_FLOAT,
    [CG_DTYPE_UINT8] = CG_PROTO_FIELD_INT32,
    [CG_DTYPE_INT8] = CG_PROTO_FIELD_INT32,
    [CG_DTYPE_UINT16] = CG_PROTO_FIELD_INT32,
    [CG_DTYPE_INT16] = CG_PROTO_FIELD_INT32,
    [CG_DTYPE_INT32] = CG_PROTO_FIELD_INT32,
    [CG_DTYPE_BOOL] = CG_PROTO_FIELD_INT32,
    [CG_DTYPE_FLOAT16] = CG_PROTO_FIELD_INT32,
    [CG_DTYPE_BFLOAT16] = CG_PROTO_FIELD_INT32,
    [CG_DTYPE_FLOAT8E4M3FN] = CG_PROTO_FIELD_INT32,
    [CG_DTYPE_FLOAT8E4M3FNUZ] = CG_PROTO_FIELD_INT32,
    [CG_DTYPE_FLOAT8E5M2] = CG_PROTO_FIELD_INT32,
    [CG_DTYPE_FLOAT8E5M2FNUZ] = CG_PROTO_FIELD_INT32,
    [CG_DTYPE_UINT4] = CG_PROTO_FIELD_INT32,
    [CG_DTYPE_INT4] = CG_PROTO_FIELD_INT32,
    [CG_DTYPE_STRING] = CG_PROTO_FIELD_STRING,
    [CG_DTYPE_INT64] = CG_PROTO_FIELD_INT64,
    [CG_DTYPE_DOUBLE] = CG_PROTO_FIELD_DOUBLE,
    [CG_DTYPE_COMPLEX128] = CG_PROTO_FIELD_DOUBLE,
    [CG_DTYPE_UINT32] = CG_PROTO_FIELD_UINT64,
    [CG_DTYPE_UINT64] = CG_PROTO_FIELD_UINT64,
};

cg_proto_field cg_proto_field_of(int32_t data_type)
{
    return cg_dtype_valid(data_type) ? (cg_proto_field)proto_field_of[data_type]
                                     : CG_PROTO_FIELD_NONE;
}

const char *cg_proto_field_name(cg_proto_field f)
{
    switch (f) {
    case CG_PROTO_FIELD_NONE: break;
    case CG_PROTO_FIELD_FLOAT: return "float_data";
    case CG_PROTO_FIELD_INT32: return "int32_data";
    case CG_PROTO_FIELD_STRING: return "string_data";
    case CG_PROTO_FIELD_INT64: return "int64_data";
    case CG_PROTO_FIELD_DOUBLE: return "double_data";
    case CG_PROTO_FIELD_UINT64: return "uint64_data";
    }
    return NULL;
}

size_t cg_proto_field_count(const cg_tensor_proto *t, cg_proto_field f)
{
    switch (f) {
    case CG_PROTO_FIELD_NONE: break;
    case CG_PROTO_FIELD_FLOAT: return t->float_data.count;
    case CG_PROTO_FIELD_INT32: return t->int32_data.count;
    case CG_PROTO_FIELD_STRING: return t->string_count;
    case CG_PROTO_FIELD_INT64: return t->int64_data.count;
    case CG_PROTO_FIELD_DOUBLE: return t->double_data.count;
    case CG_PROTO_FIELD_UINT64: return t->uint64_data.count;
    }
    return 0;
}

uint64_t cg_proto_field_values(int32_t data_type, int64_t nelem)
{
    uint64_t n = nelem > 0 ? (uint64_t)nelem : 0;
    switch (data_type) {
    case CG_DTYPE_COMPLEX64:
    case CG_DTYPE_COMPLEX128: return n * 2; /* n <= INT64_MAX: no wrap */
    case CG_DTYPE_UINT4:
    case CG_DTYPE_INT4: return n / 2 + n % 2;
    default: return n;
    }
}

bool cg_domain_is_default(const char *domain)
{
    return !domain || !domain[0] || strcmp(domain, "ai.onnx") == 0;
}

const cg_attr *cg_node_attr(const cg_node *n, const char *name)
{
    for (size_t i = 0; i < n->attr_count; i++)
        if (n->attrs[i].name && strcmp(n->attrs[i].name, name) == 0)
            return &n->attrs[i];
    return NULL;
}

int64_t cg_node_attr_int(const cg_node *n, const char *name, int64_t dflt)
{
    const cg_attr *a = cg_node_attr(n, name);
    return a && (a->type == CG_ATTR_INT || (!a->has_type && a->has_i)) ? a->i : dflt;
}

float cg_node_attr_float(const cg_node *n, const char *name, float dflt)
{
    const cg_attr *a = cg_node_attr(n, name);
    if (!a)
        return dflt;
    if (a->type == CG_ATTR_FLOAT || (!a->has_type && a->has_f))
        return a->f;
    if (a->type == CG_ATTR_INT)
        return (float)a->i;
    return dflt;
}

const int64_t *cg_node_attr_ints(const cg_node *n, const char *name, size_t *count)
{
    const cg_attr *a = cg_node_attr(n, name);
    *count = 0;
    if (!a || !(a->type == CG_ATTR_INTS || (!a->has_type && a->ints_count)))
        return NULL;
    *count = a->ints_count;
    return a->ints;
}

const float *cg_node_attr_floats(const cg_node *n, const char *name, size_t *count)
{
    const cg_attr *a = cg_node_attr(n, name);
    *count = 0;
    if (!a || !(a->type == CG_ATTR_FLOATS || (!a->has_type && a->floats_count)))
        return NULL;
    *count = a->floats_count;
    return a->floats;
}

const cg_tensor_proto *cg_graph_initializer(const cg_graph *g, const char *name)
{
    if (!name)
        return NULL;
    for (size_t i = 0; i < g->initializer_count; i++)
        if (g->initializers[i].name && strcmp(g->initializers[i].name, name) == 0)
            return &g->initializers[i];
    return NULL;
}

const char *cg_graph_node_name(const cg_graph *g, size_t node, char *buf, size_t len)
{
    if (!len)
        return buf;
    const char *name = node < g->node_count ? g->nodes[node].name : NULL;
    if (name && name[0])
        snprintf(buf, len, "%s", name);
    else
        snprintf(buf, len, "#%zu", node);
    return buf;
}

int64_t cg_model_opset(const cg_model *model, const char *domain)
{
    bool want_default = cg_domain_is_default(domain);
    for (size_t i = 0; i < model->opset_count; i++) {
        const char *d = model->opsets[i].domain;
        if (want_default ? cg_domain_is_default(d) : (d && strcmp(d, domain) == 0))
            return model->opsets[i].version;
    }
    return -1;
}
