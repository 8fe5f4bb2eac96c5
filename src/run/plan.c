/*
 * Plan building: from a graph (and its enclosing plans) to slots, steps,
 * resolved kernels and liveness; and the main graph's memory plan, which
 * places every recorded intermediate tensor at an offset of one arena so
 * that values whose lifetimes do not overlap share bytes.
 *
 * A subgraph is planned while its parent is half-built, at the point of the
 * node that owns it: the parent's name map then holds exactly the names
 * defined before that node, which is what ONNX lets a subgraph see.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "convgate/schema.h"
#include "core/arena.h"
#include "ir/walk.h"
#include "convgate/budget.h"
#include "core/mapfile.h"
#include "core/threadpool.h"
#include "run/exec.h"
#include "run/fp64.h"
#include "run/initshare.h"

/* --- helpers ---------------------------------------------------------------- */

typedef struct plan_build {
    cg_runtime *rt;
    cg_plan *p;
    cg_arena *arena;
    cg_error *err;
} plan_build;

/* The plan's arena is stashed in a hidden slot so cg_plan_free can find it,
 * with the aligned copies of misaligned initializers it holds (shared with
 * every other runtime reading the same bytes: run/initshare.h). */
typedef struct init_copy {
    int32_t slot;
    cg_shared *copy;
} init_copy;

typedef struct plan_box {
    cg_plan plan;
    cg_arena *arena;
    cg_shared **copies; /* every copy held, released with the plan */
    size_t copy_count;
    /* copies not filled yet by this plan (cg_plan_materialize) */
    init_copy *pending;
    size_t pending_count, pending_cap;
    /* copies left unfilled until a reader asks (cg_plan_defer_slot) */
    init_copy *deferred;
    size_t deferred_count, deferred_cap;
} plan_box;

/* Appends e to a list of copies, growing it; false when memory is short. */
static bool copies_push(init_copy **list, size_t *count, size_t *cap, init_copy e)
{
    if (*count == *cap) {
        size_t ncap = *cap ? 2 * *cap : 8;
        init_copy *n = realloc(*list, ncap * sizeof *n);
        if (!n)
            return false;
        *list = n;
        *cap = ncap;
    }
    (*list)[(*count)++] = e;
    return true;
}

static cg_status add_capture(plan_build *b, const char *name)
{
    cg_plan *p = b->p;
    for (size_t i = 0; i < p->capture_count; i++)
        if (strcmp(p->captures[i], name) == 0)
            return CG_OK;
    if (p->capture_count == p->capture_cap) {
        size_t cap = p->capture_cap ? p->capture_cap * 2 : 8;
        const char **n = realloc(p->captures, cap * sizeof *n);
        if (!n)
            return cg_error_set(b->err, CG_NOMEM, "out of memory planning graph");
        p->captures = n;
        p->capture_cap = cap;
    }
    p->captures[p->capture_count++] = name;
    return CG_OK;
}

/* Resolves a name read at step `step` (-1 for graph outputs): local slot, or
 * an outer scope (recorded as a capture). *found false when undefined. */
static cg_status resolve(plan_build *b, const char *name, int32_t step, cg_ref *ref, bool *found)
{
    cg_plan *p = b->p;
    *found = true;
    int32_t s = cg_plan_slot(p, name);
    if (s >= 0) {
        ref->up = 0;
        ref->slot = s;
        if (step >= 0 && p->slot_last_use[s] < step)
            p->slot_last_use[s] = step;
        return CG_OK;
    }
    int32_t up = 1;
    for (const cg_plan *q = p->parent; q; q = q->parent, up++) {
        s = cg_plan_slot(q, name);
        if (s >= 0) {
            ref->up = up;
            ref->slot = s;
            return add_capture(b, name);
        }
    }
    *found = false;
    return CG_OK;
}

static cg_status new_slot(plan_build *b, const char *name, cg_slot_kind kind, int32_t producer,
                          int32_t *out)
{
    cg_plan *p = b->p;
    int32_t s = (int32_t)p->slot_count++;
    p->slot_names[s] = name;
    p->slot_kind[s] = (uint8_t)kind;
    p->slot_producer[s] = producer;
    p->slot_last_use[s] = -1;
    *out = s;
    if (!cg_strmap_set(&p->names, name, (size_t)s))
        return cg_error_set(b->err, CG_NOMEM, "out of memory planning graph");
    return CG_OK;
}

/* --- steps ----------------------------------------------------------------- */

static cg_status plan_subgraphs(plan_build *b, cg_step *st, int32_t step_index)
{
    const cg_node *n = st->node;
    size_t count = 0;
    for (size_t a = 0; a < n->attr_count; a++) {
        const cg_attr *at = &n->attrs[a];
        if (at->g)
            count++;
        count += at->graphs_count;
    }
    if (!count)
        return CG_OK;
    st->subs = cg_arena_calloc(b->arena, count, sizeof *st->subs);
    if (!st->subs)
        return cg_error_set(b->err, CG_NOMEM, "out of memory planning graph");
    for (size_t a = 0; a < n->attr_count; a++) {
        const cg_attr *at = &n->attrs[a];
        for (size_t gi = 0; gi < at->graphs_count + (at->g ? 1u : 0u); gi++) {
            const cg_graph *g = gi < at->graphs_count ? at->graphs[gi] : at->g;
            if (!g)
                continue;
            cg_plan *sub = NULL;
            cg_status s = cg_plan_build(b->rt, g, b->p, b->p->depth + 1, &sub, b->err);
            /* Name the path for the outer few levels only, so a deep
             * chain does not crowd the root cause out of the message. */
            if (s != CG_OK && b->p->depth < 4) {
                char lbl[256];
                cg_error_prefix(b->err, "%s, attribute '%s': ",
                                cg_exec_step_label(n, st->index, lbl, sizeof lbl),
                                at->name ? at->name : "?");
            }
            if (s != CG_OK)
                return s;
            st->subs[st->sub_count].graph = g;
            st->subs[st->sub_count].plan = sub;
            st->sub_count++;
            /* Outer values the subgraph reads are uses by this node. */
            for (size_t c = 0; c < sub->capture_count; c++) {
                cg_ref ref;
                bool found;
                s = resolve(b, sub->captures[c], step_index, &ref, &found);
                if (s != CG_OK)
                    return s;
                (void)found; /* the subgraph resolved it through us already */
            }
        }
    }
    return CG_OK;
}

static cg_status plan_step(plan_build *b, size_t node_index)
{
    cg_plan *p = b->p;
    const cg_graph *g = p->graph;
    const cg_node *n = &g->nodes[node_index];
    int32_t si = (int32_t)p->step_count;
    cg_step *st = &p->steps[si];
    char lbl[256];
    st->node = n;
    st->index = node_index;
    if (!n->op_type || !n->op_type[0])
        return cg_error_set(b->err, CG_INVALID, "%s: node has no op_type",
                            cg_exec_step_label(n, node_index, lbl, sizeof lbl));

    /* Kernel and schema. */
    const char *domain = cg_domain_is_default(n->domain) ? "" : n->domain;
    st->opset = cg_model_opset(b->rt->model, domain);
    if (st->opset < 0)
        return cg_error_set(b->err, CG_INVALID, "%s: the model imports no opset for domain "
                            "'%s'", cg_exec_step_label(n, node_index, lbl, sizeof lbl), domain);
    const cg_schema *schema = cg_schema_find(domain, n->op_type, st->opset);
    if (!schema)
        return cg_error_set(b->err, CG_UNSUPPORTED, "%s: unknown op '%s' in domain '%s' at "
                            "opset %lld", cg_exec_step_label(n, node_index, lbl, sizeof lbl),
                            n->op_type, domain[0] ? domain : "ai.onnx", (long long)st->opset);
    st->since = schema->since_version;
    st->fn = cg_registry_find(&b->rt->registry, domain, n->op_type);
    if (!st->fn)
        return cg_error_set(b->err, CG_UNSUPPORTED, "%s: no kernel for op '%s' (domain '%s', "
                            "opset %lld) in the reference runtime",
                            cg_exec_step_label(n, node_index, lbl, sizeof lbl), n->op_type,
                            domain[0] ? domain : "ai.onnx", (long long)st->opset);

    /* Inputs. */
    st->in = cg_arena_calloc(b->arena, n->input_count ? n->input_count : 1, sizeof *st->in);
    st->out = cg_arena_calloc(b->arena, n->output_count ? n->output_count : 1, sizeof *st->out);
    st->fused_slot = st->absorbed_final = st->residual_slot = -1;
    if (!st->in || !st->out)
        return cg_error_set(b->err, CG_NOMEM, "out of memory planning graph");
    for (size_t i = 0; i < n->input_count; i++) {
        const char *name = n->inputs[i];
        if (!name || !name[0]) {
            st->in[i].up = 0;
            st->in[i].slot = -1;
            continue;
        }
        bool found;
        cg_status s = resolve(b, name, si, &st->in[i], &found);
        if (s != CG_OK)
            return s;
        if (!found)
            return cg_error_set(b->err, CG_INVALID, "%s: input %zu '%s' is not a graph input, "
                                "initializer, outer-scope value or output of an earlier node",
                                cg_exec_step_label(n, node_index, lbl, sizeof lbl), i, name);
    }
    if (n->input_count > p->max_inputs)
        p->max_inputs = n->input_count;
    if (n->output_count > p->max_outputs)
        p->max_outputs = n->output_count;

    cg_status s = plan_subgraphs(b, st, si);
    if (s != CG_OK)
        return s;

    /* Outputs: SSA, one producer per name. */
    for (size_t i = 0; i < n->output_count; i++) {
        const char *name = n->outputs[i];
        if (!name || !name[0]) {
            st->out[i] = -1;
            continue;
        }
        if (cg_plan_slot(p, name) >= 0)
            return cg_error_set(b->err, CG_INVALID, "%s: output '%s' is already defined "
                                "(graphs must be in SSA form)",
                                cg_exec_step_label(n, node_index, lbl, sizeof lbl), name);
        s = new_slot(b, name, CG_SLOT_NODE, si, &st->out[i]);
        if (s != CG_OK)
            return s;
    }
    p->step_count++;
    return CG_OK;
}

/* Release lists: a node-produced, non-output slot goes after its last use
 * (or right after its producer when nothing reads it). */
static cg_status plan_liveness(plan_build *b)
{
    cg_plan *p = b->p;
    size_t *counts = calloc(p->step_count ? p->step_count : 1, sizeof *counts);
    if (!counts)
        return cg_error_set(b->err, CG_NOMEM, "out of memory planning graph");
    for (size_t s = 0; s < p->slot_count; s++) {
        if (p->slot_kind[s] != CG_SLOT_NODE || p->slot_is_output[s])
            continue;
        int32_t last = p->slot_last_use[s] > p->slot_producer[s] ? p->slot_last_use[s]
                                                                 : p->slot_producer[s];
        p->slot_last_use[s] = last;
        counts[last]++;
    }
    cg_status st = CG_OK;
    for (size_t i = 0; i < p->step_count; i++) {
        if (!counts[i])
            continue;
        p->steps[i].release = cg_arena_calloc(b->arena, counts[i], sizeof(int32_t));
        if (!p->steps[i].release) {
            st = cg_error_set(b->err, CG_NOMEM, "out of memory planning graph");
            goto done;
        }
    }
    for (size_t s = 0; s < p->slot_count; s++) {
        if (p->slot_kind[s] != CG_SLOT_NODE || p->slot_is_output[s])
            continue;
        cg_step *step = &p->steps[p->slot_last_use[s]];
        step->release[step->release_count++] = (int32_t)s;
    }
done:
    free(counts);
    return st;
}

/* Reserves a converted initializer's bytes in the runtime's budget. */
static cg_status reserve_init(plan_build *b, const cg_value *v, const char *name)
{
    uint64_t bytes = cg_value_bytes(v);
    char what[256];
    snprintf(what, sizeof what, "initializer '%s'", name);
    cg_status st = cg_budget_reserve(b->rt->budget, bytes, what, b->err);
    if (st == CG_OK)
        b->p->init_reserved += bytes;
    return st;
}

/* Bytes of aligned copies the graph's misaligned payloads need (0 when
 * none, or when the sum overflows: then every tensor is copied on its own). */
static size_t plan_copy_bytes(const cg_graph *g)
{
    size_t total = 0;
    for (size_t i = 0; i < g->initializer_count; i++) {
        const cg_bytes *raw = cg_init_payload_misaligned(&g->initializers[i]);
        if (!raw)
            continue;
        if (raw->len > SIZE_MAX - total)
            return 0;
        total += raw->len;
    }
    return total;
}

static bool promotes_lazily(const plan_build *b, const cg_value *v)
{
    const cg_runtime_options *o = &b->rt->opt;
    /* delegates read the initializers at init, as double; fp16 emulation
     * makes its rounded doubles from the stored values (frame.c
     * cg_prec_init_build), and steps kept as written promote per step */
    if (o->assignment || v->kind != CG_VALUE_TENSOR)
        return false;
    cg_dtype d = v->tensor.dtype;
    return (d == CG_DTYPE_FLOAT || d == CG_DTYPE_FLOAT16 || d == CG_DTYPE_BFLOAT16) &&
           v->tensor.numel >= CG_LAZY64_MIN_NUMEL;
}

/* An initializer that is also a graph input is promoted at init after all:
 * a feed may replace it, and the memory plan is keyed by the inputs' element
 * types. (One that is a graph output may stay float: the frame hands out a
 * promoted copy, as it copies any initializer it returns.) */
static cg_status plan_fp64(plan_build *b)
{
    cg_plan *p = b->p;
    for (size_t j = 0; j < p->graph->input_count; j++) {
        int32_t s = p->input_slots[j];
        if (s < 0 || !p->init_lazy64[s])
            continue;
        p->init_lazy64[s] = false;
        cg_plan_materialize_slot(p, s); /* its bytes are read now */
        cg_status st = cg_fp64_promote_value(p->init_values[s], p->init_borrowed[s], b->err);
        if (st == CG_OK) {
            p->init_borrowed[s] = false;
            st = reserve_init(b, p->init_values[s], p->slot_names[s]);
        }
        if (st != CG_OK) {
            cg_error_prefix(b->err, "initializer '%s': ", p->slot_names[s]);
            return st;
        }
    }
    return CG_OK;
}

static cg_status plan_initializers(plan_build *b)
{
    cg_plan *p = b->p;
    const cg_graph *g = p->graph;
    plan_box *box = (plan_box *)p;
    /* Exporters put raw_data at any byte offset, so most weights cannot be
     * used in place: they are copied to aligned memory, one copy per
     * process shared by every runtime that reads the same bytes
     * (run/initshare.h). Each plan counts what it holds against its budget. */
    size_t copy_bytes = plan_copy_bytes(g);
    if (copy_bytes) {
        cg_status st = cg_budget_reserve(b->rt->budget, copy_bytes,
                                         "aligned copies of the initializers", b->err);
        if (st != CG_OK)
            return st;
        p->init_reserved += copy_bytes;
        box->copies = calloc(g->initializer_count, sizeof *box->copies);
        if (!box->copies)
            return cg_error_set(b->err, CG_NOMEM, "out of memory planning initializers");
    }
    /* The copies are filled at the first run (first touches, as the
     * runtime's other first-run work) unless something reads initializers
     * at init: fp16 emulation's rounded copies in float32. Those only an
     * executing partition reads are never made (schedule.c): its delegate
     * reads the model's bytes. The float64 mode fills those it promotes at
     * init (small ones) here; the big ones it promotes per step, and fp16
     * emulation rounds into doubles at init, read the model's bytes
     * (cg_fp64_convert_bytes), so their copies are deferred and never made
     * (fold.c). */
    const cg_runtime_options *o = &b->rt->opt;
    bool lazy = !o->node_precision || o->float64;
    if (box->copies && lazy) {
        box->pending = calloc(g->initializer_count, sizeof *box->pending);
        if (!box->pending)
            lazy = false;
        else
            box->pending_cap = g->initializer_count;
    }
    for (size_t i = 0; i < g->initializer_count; i++) {
        const cg_tensor_proto *tp = &g->initializers[i];
        cg_tensor_proto aligned;
        const cg_bytes *raw = box->copies ? cg_init_payload_misaligned(tp) : NULL;
        init_copy *later = NULL;
        cg_shared *copy = NULL;
        if (raw && (copy = cg_init_copy_acquire(raw->data, raw->len)) != NULL) {
            /* the same tensor, its payload in the shared aligned copy */
            box->copies[box->copy_count++] = copy;
            uint8_t *dst = cg_shared_data(copy);
            if (lazy) {
                later = &box->pending[box->pending_count];
                later->copy = copy;
            } else {
                cg_init_copy_fill(copy);
            }
            cg_init_proto_over(tp, raw, dst, &aligned);
            tp = &aligned;
        }
        if (!tp->name || !tp->name[0])
            return cg_error_set(b->err, CG_INVALID, "initializer %zu has no name", i);
        if (cg_plan_slot(p, tp->name) >= 0)
            return cg_error_set(b->err, CG_INVALID, "initializer '%s' is defined twice",
                                tp->name);
        int32_t s;
        cg_status st = new_slot(b, tp->name, CG_SLOT_INIT, -1, &s);
        if (st != CG_OK)
            return st;
        bool borrowed = false;
        st = cg_value_from_proto_ex(tp, true, &p->init_values[s], &borrowed, b->err);
        if (st != CG_OK) {
            cg_error_prefix(b->err, "initializer %zu: ", i);
            return st;
        }
        p->init_borrowed[s] = borrowed;
        p->init_proto[s] = &g->initializers[i];
        if (later) {
            later->slot = s;
            box->pending_count++;
        }
        if (b->rt->opt.float64 && cg_fp64_leaks(p->init_values[s])) {
            if (promotes_lazily(b, p->init_values[s])) {
                p->init_lazy64[s] = true; /* plan_fp64 decides, once the inputs are known */
            } else {
                /* converted once; the double copy is the plan's own (read
                 * from the aligned copy, filled for it now) */
                cg_plan_materialize_slot(p, s);
                if ((st = cg_fp64_promote_value(p->init_values[s], borrowed, b->err)) != CG_OK) {
                    cg_error_prefix(b->err, "initializer '%s': ", tp->name);
                    return st;
                }
                p->init_borrowed[s] = false;
            }
        }
        if (!p->init_borrowed[s] && (st = reserve_init(b, p->init_values[s], tp->name)) != CG_OK)
            return st;
    }
    /* Sparse initializers are densified once; kernels only see dense tensors. */
    for (size_t i = 0; i < g->sparse_initializer_count; i++) {
        const cg_sparse_tensor_proto *sp = &g->sparse_initializers[i];
        const char *name = sp->values ? sp->values->name : NULL;
        if (!name || !name[0])
            return cg_error_set(b->err, CG_INVALID, "sparse initializer %zu has no name", i);
        if (cg_plan_slot(p, name) >= 0)
            return cg_error_set(b->err, CG_INVALID, "initializer '%s' is defined twice", name);
        int32_t s;
        cg_status st = new_slot(b, name, CG_SLOT_INIT, -1, &s);
        if (st != CG_OK)
            return st;
        /* densified once: held to the allocation limit and the budget */
        uint64_t left = cg_budget_left(b->rt->budget);
        size_t cap = b->rt->opt.max_alloc_bytes;
        if (left < cap)
            cap = left ? (size_t)left : 1;
        st = cg_value_from_sparse_proto(sp, cap, &p->init_values[s], b->err);
        if (st == CG_OK && b->rt->opt.float64)
            st = cg_fp64_promote_value(p->init_values[s], false, b->err);
        if (st == CG_OK)
            st = reserve_init(b, p->init_values[s], name);
        if (st != CG_OK)
            return st;
    }
    return CG_OK;
}

static cg_status plan_inputs(plan_build *b)
{
    cg_plan *p = b->p;
    const cg_graph *g = p->graph;
    for (size_t i = 0; i < g->input_count; i++) {
        const char *name = g->inputs[i].name;
        if (!name || !name[0])
            return cg_error_set(b->err, CG_INVALID, "graph input %zu has no name", i);
        int32_t s = cg_plan_slot(p, name);
        if (s >= 0 && p->slot_kind[s] != CG_SLOT_INIT)
            return cg_error_set(b->err, CG_INVALID, "graph input '%s' is listed twice", name);
        if (s < 0) {
            cg_status st = new_slot(b, name, CG_SLOT_INPUT, -1, &s);
            if (st != CG_OK)
                return st;
        }
        p->input_slots[i] = s;
    }
    return CG_OK;
}

static cg_status plan_outputs(plan_build *b)
{
    cg_plan *p = b->p;
    const cg_graph *g = p->graph;
    for (size_t i = 0; i < g->output_count; i++) {
        const char *name = g->outputs[i].name;
        if (!name || !name[0])
            return cg_error_set(b->err, CG_INVALID, "graph output %zu has no name", i);
        bool found;
        cg_status st = resolve(b, name, -1, &p->output_refs[i], &found);
        if (st != CG_OK)
            return st;
        if (!found)
            return cg_error_set(b->err, CG_INVALID, "graph output '%s' is not produced by any "
                                "node, input or initializer", name);
        /* (the main graph's outputs past those a run returns are inner
         * values: cg_runtime_options.returned_outputs) */
        size_t kept = b->rt->opt.returned_outputs;
        if (p->output_refs[i].up == 0 && (p->parent || !kept || i < kept))
            p->slot_is_output[p->output_refs[i].slot] = true;
    }
    return CG_OK;
}

cg_status cg_plan_build(cg_runtime *rt, const cg_graph *g, cg_plan *parent, int depth,
                        cg_plan **out, cg_error *err)
{
    *out = NULL;
    if (depth > CG_MAX_SUBGRAPH_DEPTH)
        return cg_error_set(err, CG_LIMIT, "subgraph nesting deeper than %d",
                            CG_MAX_SUBGRAPH_DEPTH);
    cg_status st = CG_OK;
    cg_arena *arena = cg_arena_new();
    plan_box *box = calloc(1, sizeof *box);
    if (!arena || !box) {
        cg_arena_free(arena);
        free(box);
        return cg_error_set(err, CG_NOMEM, "out of memory planning graph");
    }
    box->arena = arena;
    cg_plan *p = &box->plan;
    p->graph = g;
    p->parent = parent;
    p->depth = depth;
    p->budget = rt->budget;

    /* Upper bound on slots: every input, initializer and node output. */
    size_t slots = g->input_count + g->initializer_count + g->sparse_initializer_count;
    for (size_t i = 0; i < g->node_count; i++) {
        if (g->nodes[i].output_count > SIZE_MAX / 4 - slots) {
            st = cg_error_set(err, CG_LIMIT, "graph has too many values");
            goto fail;
        }
        slots += g->nodes[i].output_count;
    }
    if (slots > INT32_MAX / 4 || g->node_count > INT32_MAX / 4) {
        st = cg_error_set(err, CG_LIMIT, "graph has too many values (%zu)", slots);
        goto fail;
    }
    size_t n1 = slots ? slots : 1;
    p->slot_names = cg_arena_calloc(arena, n1, sizeof *p->slot_names);
    p->slot_kind = cg_arena_calloc(arena, n1, sizeof *p->slot_kind);
    p->slot_producer = cg_arena_calloc(arena, n1, sizeof *p->slot_producer);
    p->slot_last_use = cg_arena_calloc(arena, n1, sizeof *p->slot_last_use);
    p->slot_is_output = cg_arena_calloc(arena, n1, sizeof *p->slot_is_output);
    p->init_values = cg_arena_calloc(arena, n1, sizeof *p->init_values);
    p->init_borrowed = cg_arena_calloc(arena, n1, sizeof *p->init_borrowed);
    p->init_lazy64 = cg_arena_calloc(arena, n1, sizeof *p->init_lazy64);
    p->init_proto = cg_arena_calloc(arena, n1, sizeof *p->init_proto);
    p->input_slots = cg_arena_calloc(arena, g->input_count + 1, sizeof *p->input_slots);
    p->output_refs = cg_arena_calloc(arena, g->output_count + 1, sizeof *p->output_refs);
    p->steps = cg_arena_calloc(arena, g->node_count + 1, sizeof *p->steps);
    if (!p->slot_names || !p->slot_kind || !p->slot_producer || !p->slot_last_use ||
        !p->slot_is_output || !p->init_values || !p->init_borrowed || !p->init_lazy64 ||
        !p->init_proto || !p->input_slots ||
        !p->output_refs || !p->steps || !cg_strmap_reserve(&p->names, slots)) {
        st = cg_error_set(err, CG_NOMEM, "out of memory planning graph");
        goto fail;
    }

    plan_build b = {rt, p, arena, err};
    if ((st = plan_initializers(&b)) != CG_OK || (st = plan_inputs(&b)) != CG_OK)
        goto fail;
    for (size_t i = 0; i < g->node_count; i++)
        if ((st = plan_step(&b, i)) != CG_OK)
            goto fail;
    if ((st = plan_outputs(&b)) != CG_OK || (st = plan_liveness(&b)) != CG_OK ||
        (st = plan_fp64(&b)) != CG_OK)
        goto fail;
    *out = p;
    return CG_OK;
fail:
    cg_plan_free(p);
    return st;
}

void cg_plan_free(cg_plan *p)
{
    if (!p)
        return;
    plan_box *box = (plan_box *)p; /* the plan is the first member of its box */
    for (size_t i = 0; i < p->step_count + 1 && p->steps; i++) {
        cg_step *st = &p->steps[i];
        for (size_t j = 0; j < st->sub_count; j++)
            cg_plan_free(st->subs[j].plan);
        if (st->state && st->state_free)
            st->state_free(st->state);
    }
    for (size_t s = 0; s < p->slot_count; s++) {
        cg_value *v = p->init_values ? p->init_values[s] : NULL;
        if (!v)
            continue;
        if (p->init_borrowed[s])
            v->tensor.data = NULL; /* points into the model mapping */
        cg_value_free(v);
    }
    if (p->budget)
        cg_budget_release(p->budget, p->init_reserved);
    free(p->captures);
    cg_strmap_free(&p->names);
    free(box->pending);
    free(box->deferred);
    for (size_t i = 0; i < box->copy_count; i++)
        cg_shared_release(box->copies[i]);
    free(box->copies);
    cg_arena_free(box->arena);
    free(box);
}

/* --- initializer copies made at the first run ----------------------------------- */

typedef struct materialize_job {
    plan_box *box;
    size_t bytes; /* total pending */
} materialize_job;

/* Thread t copies the pending tensors whose bytes start in its share. */
static void materialize_task(void *arg, int t, int n)
{
    const materialize_job *j = arg;
    int64_t lo, hi;
    cg_kernel_share((int64_t)j->bytes, 1, t, n, &lo, &hi);
    size_t at = 0;
    for (size_t i = 0; i < j->box->pending_count; i++) {
        cg_shared *c = j->box->pending[i].copy;
        if ((int64_t)at >= lo && (int64_t)at < hi)
            cg_init_copy_fill(c);
        at += cg_shared_len(c);
    }
}

void cg_plan_materialize(cg_plan *p, struct cg_threadpool *pool)
{
    plan_box *box = (plan_box *)p;
    if (box->pending_count) {
        materialize_job j = {box, 0};
        for (size_t i = 0; i < box->pending_count; i++)
            j.bytes += cg_shared_len(box->pending[i].copy);
        cg_threadpool_run(pool, materialize_task, &j);
        box->pending_count = 0;
    }
    for (size_t si = 0; si < p->step_count; si++)
        for (size_t k = 0; k < p->steps[si].sub_count; k++)
            cg_plan_materialize(p->steps[si].subs[k].plan, pool);
}

size_t cg_plan_pending_bytes(const cg_plan *p)
{
    const plan_box *box = (const plan_box *)p;
    size_t bytes = 0;
    for (size_t i = 0; i < box->pending_count; i++)
        bytes += cg_shared_len(box->pending[i].copy);
    for (size_t si = 0; si < p->step_count; si++)
        for (size_t k = 0; k < p->steps[si].sub_count; k++)
            bytes += cg_plan_pending_bytes(p->steps[si].subs[k].plan);
    return bytes;
}

void cg_plan_materialize_slot(cg_plan *p, int32_t slot)
{
    plan_box *box = (plan_box *)p;
    for (size_t i = 0; i < box->pending_count; i++)
        if (box->pending[i].slot == slot) {
            cg_init_copy_fill(box->pending[i].copy);
            box->pending[i] = box->pending[--box->pending_count];
            return;
        }
    for (size_t i = 0; i < box->deferred_count; i++)
        if (box->deferred[i].slot == slot) {
            cg_init_copy_fill(box->deferred[i].copy);
            box->deferred[i] = box->deferred[--box->deferred_count];
            return;
        }
}

const void *cg_plan_copy_source(const cg_plan *p, int32_t slot)
{
    const plan_box *box = (const plan_box *)p;
    for (size_t i = 0; i < box->pending_count; i++)
        if (box->pending[i].slot == slot)
            return cg_shared_is_filled(box->pending[i].copy) ? NULL
                                                             : cg_shared_src(box->pending[i].copy);
    for (size_t i = 0; i < box->deferred_count; i++)
        if (box->deferred[i].slot == slot)
            return cg_shared_is_filled(box->deferred[i].copy)
                       ? NULL
                       : cg_shared_src(box->deferred[i].copy);
    return NULL;
}

void cg_plan_defer_slot(cg_plan *p, int32_t slot)
{
    plan_box *box = (plan_box *)p;
    for (size_t i = 0; i < box->pending_count; i++)
        if (box->pending[i].slot == slot) {
            if (!copies_push(&box->deferred, &box->deferred_count, &box->deferred_cap,
                             box->pending[i]))
                return; /* it stays pending: filled at the first run */
            box->pending[i] = box->pending[--box->pending_count];
            return;
        }
}

bool cg_plan_share_copy(cg_plan *p, int32_t from, int32_t to)
{
    plan_box *box = (plan_box *)p;
    for (size_t i = 0; i < box->pending_count; i++)
        if (box->pending[i].slot == from) {
            init_copy e = {to, box->pending[i].copy};
            return copies_push(&box->pending, &box->pending_count, &box->pending_cap, e);
        }
    for (size_t i = 0; i < box->deferred_count; i++)
        if (box->deferred[i].slot == from) {
            init_copy e = {to, box->deferred[i].copy};
            return copies_push(&box->deferred, &box->deferred_count, &box->deferred_cap, e);
        }
    return false;
}

/* --- memory plan ------------------------------------------------------------ */

size_t *cg_plan_input_index(const cg_plan *p)
{
    size_t *index = calloc(p->slot_count + 1, sizeof *index);
    for (size_t i = p->graph->input_count; index && i-- > 0;) /* the first of a name wins */
        index[p->input_slots[i]] = i + 1;
    return index;
}

void cg_mem_plan_clear(cg_mem_plan *m)
{
    if (m->budget)
        cg_budget_release(m->budget, m->arena_bytes);
    free(m->signature);
    free(m->slot_offset);
    free(m->slot_bytes);
    if (m->arena_map_bytes)
        cg_unmap_anon(m->arena, m->arena_map_bytes);
    else
        free(m->arena);
    memset(m, 0, sizeof *m);
}

#define MEM_ALIGN 64u

typedef struct mem_item {
    int32_t slot;
    int32_t first, last; /* steps, inclusive */
    size_t bytes;        /* rounded to MEM_ALIGN */
    size_t offset;
} mem_item;

static int by_size_desc(const void *a, const void *b)
{
    const mem_item *x = a, *y = b;
    if (x->bytes != y->bytes)
        return x->bytes < y->bytes ? 1 : -1;
    return x->first - y->first;
}

/* Placed tensors by lifetime: bucket b lists (as indices into the items
 * array) every placed tensor alive at some step in [b * TI_WIDTH,
 * (b + 1) * TI_WIDTH). The tensors a lifetime overlaps are then found in
 * the buckets it spans: O(tensors alive nearby), where scanning every
 * placed tensor made planning O(n^2) (40% of the first run of an
 * 8,000-node chain). A tensor is in span / TI_WIDTH + 1 buckets. */
#define TI_WIDTH 32

typedef struct time_bucket {
    uint32_t *ids;
    size_t count, cap;
} time_bucket;

typedef struct time_index {
    time_bucket *buckets;
    size_t nb;
    uint32_t *seen; /* per item: 1 + the query that last saw it */
} time_index;

static cg_status time_index_init(time_index *ti, const mem_item *items, size_t n, cg_error *err)
{
    int32_t end = 0;
    for (size_t i = 0; i < n; i++)
        if (items[i].last > end)
            end = items[i].last;
    ti->nb = (size_t)end / TI_WIDTH + 1;
    ti->buckets = calloc(ti->nb, sizeof *ti->buckets);
    ti->seen = calloc(n + 1, sizeof *ti->seen);
    if (!ti->buckets || !ti->seen || n > UINT32_MAX - 1)
        return cg_error_set(err, CG_NOMEM, "out of memory building the memory plan");
    return CG_OK;
}

static void time_index_free(time_index *ti)
{
    for (size_t b = 0; b < ti->nb && ti->buckets; b++)
        free(ti->buckets[b].ids);
    free(ti->buckets);
    free(ti->seen);
}

/* Buckets of a lifetime [first, last] (first <= last, both >= 0). */
static void time_span(const mem_item *it, size_t *b0, size_t *b1)
{
    *b0 = it->first > 0 ? (size_t)it->first / TI_WIDTH : 0;
    *b1 = it->last > 0 ? (size_t)it->last / TI_WIDTH : 0;
}

/* Records placed item i; false when out of memory (the index then misses
 * it, so the caller must fail). */
static bool time_index_add(time_index *ti, const mem_item *items, size_t i)
{
    size_t b0, b1;
    time_span(&items[i], &b0, &b1);
    for (size_t b = b0; b <= b1 && b < ti->nb; b++) {
        time_bucket *tb = &ti->buckets[b];
        if (tb->count == tb->cap) {
            size_t cap = tb->cap ? tb->cap * 2 : 8;
            uint32_t *ids = realloc(tb->ids, cap * sizeof *ids);
            if (!ids)
                return false;
            tb->ids = ids;
            tb->cap = cap;
        }
        tb->ids[tb->count++] = (uint32_t)i;
    }
    return true;
}

/* Writes the placed items whose lifetimes overlap items[i]'s to out; each
 * once. Returns their count. */
static size_t time_index_overlaps(time_index *ti, mem_item *items, size_t i, mem_item **out)
{
    const mem_item *it = &items[i];
    size_t b0, b1, np = 0;
    time_span(it, &b0, &b1);
    for (size_t b = b0; b <= b1 && b < ti->nb; b++) {
        const time_bucket *tb = &ti->buckets[b];
        for (size_t k = 0; k < tb->count; k++) {
            uint32_t j = tb->ids[k];
            if (ti->seen[j] == (uint32_t)i + 1)
                continue;
            ti->seen[j] = (uint32_t)i + 1;
            if (items[j].first <= it->last && it->first <= items[j].last)
                out[np++] = &items[j];
        }
    }
    return np;
}

static int by_offset(const void *a, const void *b)
{
    const mem_item *x = *(const mem_item *const *)a, *y = *(const mem_item *const *)b;
    return x->offset < y->offset ? -1 : x->offset > y->offset;
}

cg_status cg_mem_plan_build(cg_runtime *rt, const int64_t *signature, size_t signature_len,
                            cg_error *err)
{
    const cg_plan *p = rt->main;
    cg_mem_plan *m = &rt->mem;
    cg_mem_plan_clear(m);
    cg_status st = CG_OK;
    size_t n = 0;
    time_index ti = {0};
    mem_item *items = calloc(p->slot_count + 1, sizeof *items);
    mem_item **placed = calloc(p->slot_count + 1, sizeof *placed);
    m->slot_offset = malloc((p->slot_count + 1) * sizeof *m->slot_offset);
    m->slot_bytes = calloc(p->slot_count + 1, sizeof *m->slot_bytes);
    m->signature = malloc((signature_len + 1) * sizeof *m->signature);
    if (!items || !placed || !m->slot_offset || !m->slot_bytes || !m->signature) {
        st = cg_error_set(err, CG_NOMEM, "out of memory building the memory plan");
        goto done;
    }
    memcpy(m->signature, signature, signature_len * sizeof *signature);
    m->signature_len = signature_len;
    for (size_t s = 0; s < p->slot_count; s++) {
        m->slot_offset[s] = SIZE_MAX;
        size_t bytes = rt->record_bytes[s];
        if (!bytes || p->slot_kind[s] != CG_SLOT_NODE || p->slot_is_output[s])
            continue;
        if (bytes > SIZE_MAX - MEM_ALIGN)
            continue;
        mem_item *it = &items[n++];
        it->slot = (int32_t)s;
        /* with a schedule, lifetimes are in schedule positions */
        it->first = rt->slot_first ? rt->slot_first[s] : p->slot_producer[s];
        it->last = rt->slot_last ? rt->slot_last[s] : p->slot_last_use[s];
        it->bytes = (bytes + MEM_ALIGN - 1) / MEM_ALIGN * MEM_ALIGN;
        m->slot_bytes[s] = bytes;
    }
    qsort(items, n, sizeof *items, by_size_desc);
    if ((st = time_index_init(&ti, items, n, err)) != CG_OK)
        goto done;

    /* Greedy by size, best fit: each tensor goes into the smallest gap left
     * between already-placed tensors whose lifetimes overlap its own (found
     * through the time index, not by scanning every placed tensor). */
    size_t total = 0;
    for (size_t i = 0; i < n; i++) {
        mem_item *it = &items[i];
        size_t np = time_index_overlaps(&ti, items, i, placed);
        qsort(placed, np, sizeof *placed, by_offset);
        size_t prev_end = 0, best = SIZE_MAX, best_gap = SIZE_MAX;
        for (size_t j = 0; j < np; j++) {
            if (placed[j]->offset > prev_end) {
                size_t gap = placed[j]->offset - prev_end;
                if (gap >= it->bytes && gap < best_gap) {
                    best = prev_end;
                    best_gap = gap;
                }
            }
            size_t end = placed[j]->offset + placed[j]->bytes;
            if (end > prev_end)
                prev_end = end;
        }
        it->offset = best != SIZE_MAX ? best : prev_end;
        if (it->offset > SIZE_MAX - it->bytes) {
            st = cg_error_set(err, CG_LIMIT, "memory plan overflows");
            goto done;
        }
        if (it->offset + it->bytes > total)
            total = it->offset + it->bytes;
        m->slot_offset[it->slot] = it->offset;
        if (!time_index_add(&ti, items, i)) {
            st = cg_error_set(err, CG_NOMEM, "out of memory building the memory plan");
            goto done;
        }
    }
    if (total > 0) {
        /* the arena holds the intermediates of a run: reserved in the budget
         * for as long as it lives (no arena, just separate allocations, when
         * it does not fit) */
        if ((st = cg_budget_reserve(rt->budget, total, "the memory plan's arena", err)) != CG_OK)
            goto done;
        m->budget = rt->budget;
        m->arena_bytes = total;
        /* the recording run's heap, whose pages are already there */
        m->arena = cg_heap_adopt(rt, total, &m->arena_map_bytes);
        if (!m->arena)
            m->arena = cg_alloc_bulk(MEM_ALIGN, total);
        if (!m->arena) {
            st = cg_error_set(err, CG_NOMEM, "out of memory allocating the %zu-byte arena",
                              total);
            goto done;
        }
    }
    m->arena_bytes = total;
    m->valid = true;
done:
    time_index_free(&ti);
    free(items);
    free(placed);
    if (st != CG_OK)
        cg_mem_plan_clear(m);
    return st;
}
