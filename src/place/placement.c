/*
 * Placements: a model's assignment plus one per control-flow body
 * (cg_placement), the residency line, the verdict and the init failure of
 * targets without CPU fallback. The renderings of `convgate assign` are in
 * src/report/assign.c.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "convgate/assign.h"
#include "convgate/tflite.h"
#include "ir/walk.h"
#include "target/registry.h"

#define AR_LABEL 128
#define AR_MAX_DEPTH 64

/* A node's op type; "?" for a node without one (unchecked models). */
static const char *ar_op(const cg_node *n) { return n->op_type ? n->op_type : "?"; }

/* --- placement: main graph and bodies -------------------------------------------- */

cg_status cg_placement_build_tflite(const cg_tflite_model *tfl, const cg_target *const *targets,
                                    size_t target_count, cg_model **ops, cg_type_env **types,
                                    cg_placement **out, cg_error *err)
{
    *ops = NULL;
    *types = NULL;
    *out = NULL;
    cg_status st;
    if ((st = cg_tflite_op_model(tfl, ops, err)) != CG_OK ||
        (st = cg_type_env_build_declared(*ops, types, err)) != CG_OK ||
        (st = cg_placement_build(*ops, *types, targets, target_count, out, err)) != CG_OK) {
        cg_type_env_free(*types);
        cg_model_free(*ops);
        *types = NULL;
        *ops = NULL;
        return st;
    }
    (*out)->tflite_ops = true;
    return CG_OK;
}

void cg_placement_free(cg_placement *p)
{
    if (!p)
        return;
    cg_assignment_free(p->main);
    for (size_t i = 0; i < p->body_count; i++) {
        free(p->bodies[i].path);
        cg_assignment_free(p->bodies[i].assignment);
    }
    free(p->bodies);
    free(p);
}

typedef struct ar_build {
    cg_placement *p;
    size_t cap;
    const cg_target *const *targets;
    size_t target_count;
} ar_build;

/* Assigns every subgraph of g's control-flow nodes (then theirs, depth
 * first); `prefix` is the path of g ("" for the main graph). */
static cg_status ar_bodies(ar_build *b, const cg_graph *g, const char *prefix, int depth,
                           cg_error *err)
{
    char label[AR_LABEL];
    if (depth > AR_MAX_DEPTH)
        return cg_error_set(err, CG_LIMIT, "subgraphs nested deeper than %d levels",
                            AR_MAX_DEPTH);
    for (size_t i = 0; i < g->node_count; i++) {
        const cg_node *nd = &g->nodes[i];
        for (size_t a = 0; a < nd->attr_count; a++) {
            const cg_attr *at = &nd->attrs[a];
            size_t count = at->g ? 1 : at->graphs_count;
            for (size_t k = 0; k < count; k++) {
                const cg_graph *body = at->g ? at->g : at->graphs[k];
                if (!body)
                    continue;
                if (b->p->body_count == b->cap) {
                    size_t cap = b->cap ? b->cap * 2 : 8;
                    cg_body_assignment *nb = realloc(b->p->bodies, cap * sizeof *nb);
                    if (!nb)
                        return cg_error_set(err, CG_NOMEM, "out of memory");
                    b->p->bodies = nb;
                    b->cap = cap;
                }
                cg_assign_node_label(g, i, label, sizeof label);
                size_t len = strlen(prefix) + strlen(label) + strlen(at->name ? at->name : "") +
                             32;
                char *path = malloc(len);
                if (!path)
                    return cg_error_set(err, CG_NOMEM, "out of memory");
                if (at->g)
                    snprintf(path, len, "%s%s%s/%s", prefix, *prefix ? "/" : "", label,
                             at->name ? at->name : "?");
                else
                    snprintf(path, len, "%s%s%s/%s[%zu]", prefix, *prefix ? "/" : "", label,
                             at->name ? at->name : "?", k);
                cg_body_assignment *ba = &b->p->bodies[b->p->body_count];
                memset(ba, 0, sizeof *ba);
                ba->path = path;
                ba->depth = depth;
                ba->graph = body;
                b->p->body_count++;
                cg_status st = cg_assign_graph(b->p->model, body, b->p->types, b->targets,
                                               b->target_count, &ba->assignment, err);
                if (st != CG_OK) {
                    cg_error_prefix(err, "body %s: ", path);
                    return st;
                }
                if ((st = ar_bodies(b, body, path, depth + 1, err)) != CG_OK)
                    return st;
            }
        }
    }
    return CG_OK;
}

cg_status cg_placement_build(const cg_model *model, const cg_type_env *types,
                             const cg_target *const *targets, size_t target_count,
                             cg_placement **out, cg_error *err)
{
    *out = NULL;
    cg_placement *p = calloc(1, sizeof *p);
    if (!p)
        return cg_error_set(err, CG_NOMEM, "out of memory");
    p->model = model;
    p->types = types;
    cg_status st = cg_assign(model, types, targets, target_count, &p->main, err);
    if (st == CG_OK) {
        ar_build b = {p, 0, targets, target_count};
        st = ar_bodies(&b, model->graph, "", 1, err);
    }
    if (st != CG_OK) {
        cg_placement_free(p);
        return st;
    }
    *out = p;
    return CG_OK;
}

/* --- counts, verdict, init failure ---------------------------------------------- */

size_t cg_assign_count_owned(const cg_assignment *a, int target)
{
    size_t n = 0;
    for (size_t v = 0; v < a->graph->node_count; v++)
        n += a->owner[v] == target;
    return n;
}

static size_t ar_nodes_on_targets(const cg_assignment *a)
{
    return a->graph->node_count - cg_assign_count_owned(a, CG_OWNER_CPU);
}

const char *cg_verdict_kind_name(cg_verdict_kind kind)
{
    switch (kind) {
    case CG_VERDICT_FULL: return "full";
    case CG_VERDICT_PARTIAL: return "partial";
    case CG_VERDICT_NONE: return "none";
    case CG_VERDICT_INIT_FAILURE: return "init_failure";
    }
    return "?";
}

/* The runtime's own name for messages ("TensorFlow Lite Micro" from a
 * profile's "TensorFlow Lite Micro (MicroMutableOpResolver ...)"), else the
 * target's name. */
static const char *ar_runtime_name(const cg_target *t, char *buf, size_t len)
{
    const char *r = cg_profile_is(t) ? cg_profile_runtime(t) : NULL;
    if (!r || !*r)
        return t->name;
    const char *paren = strstr(r, " (");
    size_t n = paren ? (size_t)(paren - r) : strlen(r);
    snprintf(buf, len, "%.*s", (int)(n < len ? n : len - 1), r);
    return buf;
}

/* Why target t leaves node v on the CPU, in its own words. */
static void ar_reason_for(const cg_assignment *a, const cg_type_env *types, int t, size_t v,
                          char *out, size_t len)
{
    for (size_t i = 0; i < a->unsupported_count; i++)
        if (a->unsupported[i].node == v && a->unsupported[i].target == t) {
            snprintf(out, len, "%s", a->unsupported[i].reason);
            return;
        }
    for (size_t i = 0; i < a->dropped_count; i++)
        if (a->dropped[i].node == v && a->dropped[i].target == t) {
            snprintf(out, len, "%s", a->dropped[i].reason);
            return;
        }
    const cg_node *nd = &a->graph->nodes[v];
    if (cg_node_is_control_flow(nd)) {
        snprintf(out, len, "control flow: %s stays on the CPU", nd->op_type);
        return;
    }
    /* another target refused first and recorded its reason: ask this one */
    const cg_target *tg = a->targets[t];
    cg_support_query q = {a->model, a->graph, nd,
                          cg_model_opset(a->model, nd->domain ? nd->domain : ""), types};
    out[0] = '\0';
    if (!tg->vt->supports(tg, &q, out, len)) {
        if (!out[0])
            snprintf(out, len, "not supported (no reason given)");
        return;
    }
    snprintf(out, len, "left on the CPU by the partitioner");
}

bool cg_assign_init_failure(const cg_assignment *a, const cg_type_env *types, char *msg,
                            size_t msg_len)
{
    if (msg_len)
        msg[0] = '\0';
    size_t v = (size_t)-1;
    /* the first CPU node: refusals are listed in topological order; a node
     * only dropped by rules comes from the dropped list */
    if (a->unsupported_count)
        v = a->unsupported[0].node;
    else if (a->dropped_count)
        v = a->dropped[0].node;
    else
        for (size_t i = 0; i < a->graph->node_count && v == (size_t)-1; i++)
            if (a->owner[i] == CG_OWNER_CPU)
                v = i;
    if (v == (size_t)-1)
        return false;
    for (size_t t = 0; t < a->target_count; t++) {
        const cg_target *tg = a->targets[t];
        if (tg->fallback != CG_FALLBACK_FAIL)
            continue;
        char reason[512], label[AR_LABEL], runtime[128];
        ar_reason_for(a, types, (int)t, v, reason, sizeof reason);
        snprintf(msg, msg_len, "%s: node '%s' (%s) is not supported and %s has no fallback: %s",
                 tg->name, cg_assign_node_label(a->graph, v, label, sizeof label),
                 ar_op(&a->graph->nodes[v]), ar_runtime_name(tg, runtime, sizeof runtime),
                 cg_assign_bare_reason(a->graph, v, reason));
        return true;
    }
    return false;
}

cg_verdict_kind cg_assign_verdict(const cg_assignment *a, const cg_type_env *types, char *text,
                                  size_t text_len)
{
    size_t n = a->graph->node_count, on = ar_nodes_on_targets(a), cpu = n - on;
    char why[768];
    if (cg_assign_init_failure(a, types, why, sizeof why)) {
        snprintf(text, text_len,
                 "init failure: %zu node%s would stay on the CPU and a target has no CPU "
                 "fallback (%s)",
                 cpu, cpu == 1 ? "" : "s", why);
        return CG_VERDICT_INIT_FAILURE;
    }
    if (on == 0) {
        snprintf(text, text_len, "no residency: all %zu nodes run on the CPU", n);
        return CG_VERDICT_NONE;
    }
    if (cpu == 0 && a->partition_count == 1) {
        snprintf(text, text_len,
                 "full residency: all %zu nodes on %s in one partition, no boundary crossings",
                 n, a->targets[a->partitions[0].target]->name);
        return CG_VERDICT_FULL;
    }
    if (cpu == 0)
        snprintf(text, text_len,
                 "partial: all %zu nodes on targets, but split into %zu partitions with %zu "
                 "boundary crossing%s",
                 n, a->partition_count, a->boundary_count, a->boundary_count == 1 ? "" : "s");
    else
        snprintf(text, text_len,
                 "partial residency: %zu/%zu nodes on targets in %zu partition%s, %zu boundary "
                 "crossing%s, %zu node%s on the CPU",
                 on, n, a->partition_count, a->partition_count == 1 ? "" : "s",
                 a->boundary_count, a->boundary_count == 1 ? "" : "s", cpu,
                 cpu == 1 ? "" : "s");
    return CG_VERDICT_PARTIAL;
}

void cg_assign_residency(const cg_assignment *a, char *buf, size_t cap)
{
    cg_assign_residency_in(a, "nodes", buf, cap);
}

void cg_assign_residency_in(const cg_assignment *a, const char *unit, char *buf, size_t cap)
{
    size_t n = a->graph ? a->graph->node_count : 0, used = 0;
    if (!cap)
        return;
    buf[0] = '\0';
    for (size_t t = 0; t < a->target_count && used < cap; t++) {
        int w = snprintf(buf + used, cap - used, "%s%zu/%zu %s on %s", t ? ", " : "",
                         cg_assign_count_owned(a, (int)t), n, unit, a->targets[t]->name);
        used = w < 0 ? cap : used + (size_t)w;
    }
    if (used < cap)
        snprintf(buf + used, cap - used, "%s%zu on CPU", a->target_count ? ", " : "",
                 cg_assign_count_owned(a, CG_OWNER_CPU));
}
