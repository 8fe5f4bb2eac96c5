/*
 * The target path (convgate/targetpath.h): a model placed on a list of
 * targets and run on this machine, the way those targets would run it.
 *
 * init builds the type environment for the requested dims, on the user's
 * inputs when the caller gives them (the feeds: a model that only runs on
 * real data is typed and placed on it, as gate 2 places it; else random
 * inputs), assigns the nodes (cg_assign) and starts one runtime with that
 * assignment: partitions
 * of executing targets are compiled and run by the target; every other node
 * runs on the reference kernels. Nodes in a partition of a profiled fp16
 * target carry a per-node precision (cg_node_precision) that makes the
 * executor round what they read and write to fp16 and makes reductions and
 * dot products accumulate as the target's profile says (the caller may
 * force fp32 or fp16 accumulation). Since the precision is per node and rounding is
 * idempotent, the casts land exactly where the partitioning puts the
 * boundary: a value entering the partition is rounded once, values inside
 * stay rounded, and a value leaving it is an fp32 tensor holding fp16
 * values, as a delegate's dequantized output is.
 *
 * Targets whose runtime partitions a graph of other ops (a lowering with
 * declared types, onnx-to-tflite: the TFLite ops a converter emits) place
 * that graph, not the ONNX one this path runs: each such target is replaced
 * by a proxy that takes exactly the source nodes whose ops it takes in the
 * placement of the lowered graph (a node folded away goes where the op it
 * folded into goes; a node that leaves no op goes wherever its neighbours
 * do), so gate 3 runs on the device what gate 2 placed there; what the
 * conversion folded computes in fp32, as the converter computed it.
 *
 * Invariant: the path owns the assignment, the per-node precision array,
 * the proxies and the runtime, and the type environment unless it borrows
 * it (options.types or .like); the runtime borrows the other four, so they
 * are freed after it.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <stdio.h>

#include "convgate/assign.h"
#include "convgate/lower.h"
#include "convgate/targetpath.h"
#include "verify_internal.h"

/* A target standing for t on the source graph of a lowering it places. */
typedef struct tp_proxy {
    cg_target t;              /* t's description, with the proxy's vtable */
    const cg_graph *graph;    /* the source main graph */
    const int *owner;         /* per source node: the target index, CG_OWNER_CPU, or
                                 TP_ANY (no op on the runtime's side) */
    int index;                /* t's index among the path's targets */
    const char *lowering;
} tp_proxy;

#define TP_ANY (-2)

struct cg_target_path {
    const cg_model *model;
    cg_target_path_options opt;
    const cg_target **targets;   /* copy of opt.targets (the array, not the targets) */
    const cg_type_env *types;
    cg_type_env *own_types;      /* types, when built here */
    cg_assignment *assign;
    uint8_t *node_prec;          /* cg_node_precision per main-graph node */
    tp_proxy *proxies;           /* one per target when they place a lowered graph */
    int *proxy_owner;            /* their owners, per source node */
    bool *folded;                /* per source node: the conversion folded it (no op of its
                                    own): it computes in fp32, as the converter did */
    cg_runtime *rt;
    bool reduced;                /* some node has an fp16 precision */
};

cg_status cg_accumulate_parse(const char *text, cg_accumulate *out, cg_error *err)
{
    if (text && strcmp(text, "fp16") == 0)
        *out = CG_ACCUMULATE_FP16;
    else if (text && strcmp(text, "fp32") == 0)
        *out = CG_ACCUMULATE_FP32;
    else
        return cg_error_set(err, CG_USAGE, "accumulate expects fp16 or fp32, got '%s'",
                            text ? text : "(none)");
    return CG_OK;
}

const char *cg_accumulate_name(cg_accumulate a)
{
    switch (a) {
    case CG_ACCUMULATE_PROFILE: return "profile";
    case CG_ACCUMULATE_FP16: return "fp16";
    case CG_ACCUMULATE_FP32: return "fp32";
    }
    return NULL;
}

/* The precision a node owned by target t computes in on this path. */
static cg_node_precision target_node_precision(const cg_target *t,
                                               const cg_target_path_options *opt)
{
    if (!t || t->kind != CG_TARGET_PROFILED || t->precision != CG_PRECISION_FP16 ||
        opt->force_fp32)
        return CG_NODE_PREC_FP32;
    if (opt->accumulate == CG_ACCUMULATE_FP32)
        return CG_NODE_PREC_FP16;
    if (opt->accumulate == CG_ACCUMULATE_FP16 || (opt->device_classes && t->device_class[0]))
        return CG_NODE_PREC_FP16_ACC16;
    return t->accumulate_fp32 ? CG_NODE_PREC_FP16 : CG_NODE_PREC_FP16_ACC16;
}

bool cg_target_path_options_sum16(const cg_target_path_options *opt)
{
    for (size_t i = 0; opt && i < opt->target_count; i++)
        if (target_node_precision(opt->targets[i], opt) == CG_NODE_PREC_FP16_ACC16)
            return true;
    return false;
}

/* True when `name`, produced by node, is visible on this path: a CPU
 * node's output, or a value leaving a partition. */
static bool path_value_visible(const cg_target_path *p, const cg_node *node, const char *name)
{
    const cg_graph *g = p->assign->graph;
    if (node < g->nodes || node >= g->nodes + g->node_count)
        return true;
    int pid = p->assign->partition_of[node - g->nodes];
    if (pid < 0 || (size_t)pid >= p->assign->partition_count)
        return true;
    const cg_partition *part = &p->assign->partitions[pid];
    for (size_t i = 0; i < part->output_count; i++)
        if (name && strcmp(part->outputs[i], name) == 0)
            return true;
    return false;
}

/* The runtime's observer: forwards what the path shows. Values inside an
 * executing partition never reach it; values inside a reference-run
 * partition do and are held back here. */
static cg_status path_observe(void *user, const cg_node *node, const char *name,
                              const cg_value *value)
{
    cg_target_path *p = user;
    cg_status st;
    if (p->opt.observe_inside &&
        (st = p->opt.observe_inside(p->opt.observe_user, node, name, value)) != CG_OK)
        return st;
    if (!p->opt.observe || !path_value_visible(p, node, name))
        return CG_OK;
    return p->opt.observe(p->opt.observe_user, node, name, value);
}

static bool proxy_supports(const cg_target *t, const cg_support_query *q, char *reason,
                           size_t reason_len)
{
    const tp_proxy *px = t->impl;
    if (q->graph != px->graph || q->node < q->graph->nodes ||
        q->node >= q->graph->nodes + q->graph->node_count) {
        snprintf(reason, reason_len, "inside a control-flow body, which preprocess '%s' does "
                 "not lower", px->lowering);
        return false;
    }
    int o = px->owner[q->node - q->graph->nodes];
    if (o == px->index || o == TP_ANY)
        return true;
    snprintf(reason, reason_len, "its ops in the graph %s partitions (preprocess '%s') are not "
             "on it", t->name, px->lowering);
    return false;
}

static const cg_target_vtable proxy_vt = {proxy_supports, NULL, NULL, NULL, NULL};

/* Replaces p->targets by proxies that place the source graph as
 * p->proxy_owner says (p->proxies allocated). */
static void proxies_use(cg_target_path *p, const char *lowering)
{
    for (size_t i = 0; i < p->opt.target_count; i++) {
        tp_proxy *px = &p->proxies[i];
        px->t = *p->targets[i];
        /* the lowered graph's placement applied the partition rules; on the
         * source graph they would count again nodes the conversion folded
         * away (lstm_gru's shape subgraph of 10 nodes outranked its 4-op
         * head under litert-gpu's one partition, and gate 3 ran the head
         * on the CPU in fp32 while gate 2 placed it on the GPU) */
        memset(&px->t.rules, 0, sizeof px->t.rules);
        px->t.vt = &proxy_vt;
        px->t.impl = px;
        px->graph = p->model->graph;
        px->owner = p->proxy_owner;
        px->index = (int)i;
        px->lowering = lowering;
        p->targets[i] = &px->t;
    }
}

/* The lowered placement of `like` (built for the same model, dims and
 * feeds), copied: the same proxies without lowering again. */
static cg_status copy_lowered_placement(cg_target_path *p, const cg_target_path *like,
                                        cg_error *err)
{
    size_t n = p->model->graph->node_count + 1;
    if (like->model != p->model || like->opt.target_count != p->opt.target_count)
        return cg_error_set(err, CG_USAGE, "target path: the path it is built like has "
                            "another model or other targets");
    if (!like->proxies)
        return CG_OK;
    p->proxy_owner = malloc(n * sizeof *p->proxy_owner);
    p->proxies = calloc(p->opt.target_count, sizeof *p->proxies);
    p->folded = calloc(n, sizeof *p->folded);
    if (!p->proxy_owner || !p->proxies || !p->folded)
        return cg_error_set(err, CG_NOMEM, "out of memory creating the target path");
    memcpy(p->proxy_owner, like->proxy_owner, n * sizeof *p->proxy_owner);
    if (like->folded)
        memcpy(p->folded, like->folded, n * sizeof *p->folded);
    proxies_use(p, like->proxies[0].lowering);
    return CG_OK;
}

/* When the targets partition a lowered graph of other ops (declared types),
 * replaces p->targets by proxies placing the source graph as the lowered
 * graph is placed. */
static cg_status use_lowered_placement(cg_target_path *p, cg_error *err)
{
    const cg_target_path_options *opt = &p->opt;
    const char *name = NULL;
    cg_status st = cg_lowering_for_targets(p->targets, opt->target_count, &name, err);
    if (st != CG_OK || strcmp(name, "none") == 0)
        return st;
    cg_lowered *own = NULL;
    const cg_lowered *l = opt->lowered;
    cg_type_env *lt = NULL;
    cg_assignment *la = NULL;
    if (l && (l->source != p->model || strcmp(l->lowering, name) != 0))
        return cg_error_set(err, CG_USAGE, "target path: the lowering given ('%s') is not "
                            "this model's for these targets ('%s')", l->lowering, name);
    if (!l && (st = cg_lower_fed(p->model, name, opt->dims, opt->dim_count, opt->feeds,
                                 opt->feed_count, &own, err)) != CG_OK)
        return st;
    if (own)
        l = own;
    if (!l->declared_types) {
        cg_lowered_free(own);
        return CG_OK; /* the same ops: the source graph is judged as it is */
    }
    const cg_graph *g = p->model->graph;
    if ((st = cg_lowered_types_fed(l, opt->dims, opt->dim_count, opt->random, opt->feeds,
                                   opt->feed_count, &lt, err)) != CG_OK ||
        (st = cg_assign(l->model, lt, p->targets, opt->target_count, &la, err)) != CG_OK)
        goto done;
    p->proxy_owner = malloc((g->node_count + 1) * sizeof *p->proxy_owner);
    p->proxies = calloc(opt->target_count, sizeof *p->proxies);
    if (!p->proxy_owner || !p->proxies) {
        st = cg_error_set(err, CG_NOMEM, "out of memory creating the target path");
        goto done;
    }
    p->folded = calloc(g->node_count + 1, sizeof *p->folded);
    if (!p->folded) {
        st = cg_error_set(err, CG_NOMEM, "out of memory creating the target path");
        goto done;
    }
    for (size_t s = 0; s < g->node_count; s++)
        p->proxy_owner[s] = TP_ANY;
    /* what the conversion folded (a batch norm into its conv's weights, a
     * constant subgraph) was computed once, in fp32, by the converter */
    for (size_t r = 0; r < l->removed_count; r++)
        if (!l->removed[r].graph[0] && l->removed[r].node < g->node_count)
            p->folded[l->removed[r].node] = true;
    /* a source node goes where all of its ops go (the CPU when they split) */
    for (size_t i = 0; i < l->model->graph->node_count; i++) {
        const size_t *o = NULL;
        size_t n = cg_lowered_origins(l, i, &o);
        for (size_t k = 0; k < n; k++) {
            if (o[k] >= g->node_count)
                continue;
            int *own = &p->proxy_owner[o[k]];
            *own = *own == TP_ANY || *own == la->owner[i] ? la->owner[i] : CG_OWNER_CPU;
        }
    }
    proxies_use(p, l->lowering);
done:
    cg_assignment_free(la);
    cg_type_env_free(lt);
    cg_lowered_free(own);
    if (st != CG_OK)
        cg_error_prefix(err, "the graph the targets partition: ");
    return st;
}

cg_status cg_target_path_init(const cg_model *model, const cg_target_path_options *opt,
                              cg_target_path **out, cg_error *err)
{
    cg_status st;
    cg_target_path *p = NULL;
    if (out)
        *out = NULL;
    if (!model || !model->graph || !opt || !out)
        return cg_error_set(err, CG_USAGE, "cg_target_path_init: model, options and out are "
                            "required");
    if (opt->target_count && !opt->targets)
        return cg_error_set(err, CG_USAGE, "cg_target_path_init: %zu targets but no target "
                            "array", opt->target_count);
    for (size_t i = 0; i < opt->target_count; i++)
        if (!opt->targets[i])
            return cg_error_set(err, CG_USAGE, "cg_target_path_init: target %zu is NULL", i);
    p = calloc(1, sizeof *p);
    if (!p)
        return cg_error_set(err, CG_NOMEM, "out of memory creating the target path");
    p->model = model;
    p->opt = *opt;
    p->targets = calloc(opt->target_count + 1, sizeof *p->targets);
    p->node_prec = calloc(model->graph->node_count + 1, sizeof *p->node_prec);
    if (!p->targets || !p->node_prec) {
        st = cg_error_set(err, CG_NOMEM, "out of memory creating the target path");
        goto fail;
    }
    for (size_t i = 0; i < opt->target_count; i++)
        p->targets[i] = opt->targets[i];
    p->opt.targets = p->targets;
    st = opt->like ? copy_lowered_placement(p, opt->like, err) : use_lowered_placement(p, err);
    if (st != CG_OK) {
        cg_error_prefix(err, "target path: ");
        goto fail;
    }

    p->types = opt->like ? opt->like->types : opt->types;
    if (!p->types) {
        st = cg_type_env_build_fed(model, opt->dims, opt->dim_count, opt->random, opt->feeds,
                                   opt->feed_count, &p->own_types, err);
        if (st != CG_OK) {
            cg_error_prefix(err, "target path: types: ");
            goto fail;
        }
        p->types = p->own_types;
    }
    st = cg_assign(model, p->types, p->targets, opt->target_count, &p->assign, err);
    if (st != CG_OK) {
        cg_error_prefix(err, "target path: assignment: ");
        goto fail;
    }
    /* A target without CPU fallback refuses the whole model at init on the
     * device; running the rest on the CPU here would report numbers the
     * device never produces. */
    char why[768];
    if (cg_assign_init_failure(p->assign, p->types, why, sizeof why)) {
        st = cg_error_set(err, CG_UNSUPPORTED, "target path: %s", why);
        goto fail;
    }
    for (size_t i = 0; i < model->graph->node_count; i++) {
        int owner = p->assign->owner[i];
        const cg_target *t = owner >= 0 && (size_t)owner < opt->target_count ? p->targets[owner]
                                                                             : NULL;
        cg_node_precision prec = p->folded && p->folded[i] ? CG_NODE_PREC_FP32
                                                            : target_node_precision(t, opt);
        p->node_prec[i] = (uint8_t)prec;
        if (prec != CG_NODE_PREC_FP32)
            p->reduced = true;
    }

    cg_runtime_options ro;
    cg_verify_runtime_options(&ro, opt->max_alloc_bytes, opt->threads);
    ro.assignment = p->assign;
    ro.types = p->types;
    ro.returned_outputs = opt->returned_outputs;
    ro.node_precision = p->reduced ? p->node_prec : NULL;
    if (opt->observe || opt->observe_inside) {
        ro.observe = path_observe;
        ro.observe_user = p;
    }
    st = cg_runtime_init(model, &ro, &p->rt, err);
    if (st != CG_OK) {
        cg_error_prefix(err, "target path: ");
        goto fail;
    }
    p->opt.feeds = NULL; /* borrowed for init only */
    p->opt.feed_count = 0;
    p->opt.types = NULL;
    p->opt.like = NULL;
    p->opt.lowered = NULL;
    *out = p;
    return CG_OK;
fail:
    cg_target_path_free(p);
    return st;
}

cg_status cg_target_path_run(cg_target_path *p, const cg_named_value *inputs, size_t input_count,
                             cg_named_value **outputs, size_t *output_count, cg_error *err)
{
    if (!p || !p->rt) {
        if (outputs)
            *outputs = NULL;
        if (output_count)
            *output_count = 0;
        return cg_error_set(err, CG_USAGE, "cg_target_path_run: no target path");
    }
    return cg_runtime_run(p->rt, inputs, input_count, outputs, output_count, err);
}

const cg_assignment *cg_target_path_assignment(const cg_target_path *p)
{
    return p ? p->assign : NULL;
}

bool cg_target_path_reduced_precision(const cg_target_path *p)
{
    return p && p->reduced;
}

void cg_verify_runtime_options(cg_runtime_options *ro, size_t max_alloc_bytes, int threads)
{
    cg_runtime_options_default(ro);
    ro->strict_output_shapes = true; /* verification: a contradicted declaration fails */
    if (max_alloc_bytes)
        ro->max_alloc_bytes = max_alloc_bytes;
    ro->threads = threads;
}

const cg_type_env *cg_target_path_types(const cg_target_path *p)
{
    return p ? p->types : NULL;
}

cg_node_precision cg_target_path_node_precision(const cg_target_path *p, size_t node)
{
    if (!p || node >= p->model->graph->node_count)
        return CG_NODE_PREC_FP32;
    return (cg_node_precision)p->node_prec[node];
}

const cg_runtime *cg_target_path_runtime(const cg_target_path *p)
{
    return p ? p->rt : NULL;
}

void cg_target_path_drop_runtime(cg_target_path *p)
{
    if (!p)
        return;
    cg_runtime_free(p->rt);
    p->rt = NULL;
}

void cg_target_path_free(cg_target_path *p)
{
    if (!p)
        return;
    cg_runtime_free(p->rt); /* borrows the rest */
    cg_assignment_free(p->assign);
    cg_type_env_free(p->own_types);
    free(p->node_prec);
    free(p->targets);
    free(p->proxies);
    free(p->proxy_owner);
    free(p->folded);
    free(p);
}
