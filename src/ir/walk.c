/* Graph walks and small IR queries shared by inspect, check and run. */
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
    if (node->domain && *node->domain && strcmp(node->domain, "ai.onnx") != 0)
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
