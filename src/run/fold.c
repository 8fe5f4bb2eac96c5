/*
 * Constant folding at init: a node whose inputs are all initializers (or
 * values folded before it) computes the same thing on every run, so it runs
 * once, when the runtime is built, and its outputs become initializers of
 * its graph (owned by the plan). Constant nodes are the main case: a
 * subgraph that holds its weights as Constant nodes (Silero VAD's If
 * branches) otherwise copies every weight on every run; casts and reshapes
 * of initializers are the others.
 *
 * The same pass calls the prepare functions of ops/prepare.def on the steps
 * it does not fold (weights packed for the convolution GEMM), so that work
 * is part of building the runtime rather than of the first run.
 *
 * The model is not rewritten: the step stays in the plan, marked folded, and
 * frames skip it. Not folded: nodes with subgraphs, random ops, nodes that
 * fail (the run reports the failure where it happens), outputs much larger
 * than their inputs (memory kept for the runtime's life), and in the main
 * graph nodes the observer must see (opt.observe), nodes of executing
 * partitions and fp16-emulated nodes.
 */
#include <stdlib.h>
#include <string.h>

#include "convgate/partition.h"
#include "ir/fold_policy.h"
#include "ir/walk.h"
#include "run/exec.h"
#include "run/ops/kernels.h"

static const struct {
    const char *domain, *op;
    cg_kernel_fn fn;
} prepare_table[] = {
#define CG_PREPARE(domain, op, fn) {domain, op, fn},
#include "run/ops/prepare.def"
#undef CG_PREPARE
};

static cg_kernel_fn prepare_fn(const cg_node *n)
{
    const char *d = n->domain && strcmp(n->domain, "ai.onnx") != 0 ? n->domain : "";
    for (size_t i = 0; i < sizeof prepare_table / sizeof prepare_table[0]; i++)
        if (strcmp(prepare_table[i].op, n->op_type) == 0 && strcmp(prepare_table[i].domain, d) == 0)
            return prepare_table[i].fn;
    return NULL;
}

static bool slot_is_graph_input(const cg_plan *p, int32_t slot)
{
    for (size_t j = 0; j < p->graph->input_count; j++)
        if (p->input_slots[j] == slot)
            return true;
    return false;
}

/* A main-graph node the reference kernels run as written: not emulated in
 * fp16, not inside an executing partition. */
static bool runs_as_written(const cg_runtime *rt, const cg_plan *p, const cg_step *st)
{
    if (p != rt->main || st->index >= p->graph->node_count)
        return true;
    if (rt->opt.node_precision && rt->opt.node_precision[st->index] != CG_NODE_PREC_FP32)
        return false;
    const cg_assignment *a = rt->opt.assignment;
    if (a) {
        int pid = a->partition_of[st->index];
        if (pid >= 0 && (size_t)pid < a->partition_count) {
            const cg_target *t = a->targets[a->partitions[pid].target];
            if (t && t->kind == CG_TARGET_EXECUTING)
                return false;
        }
    }
    return true;
}

/* The plan `up` scopes above p (ONNX lets a subgraph read its ancestors'
 * values), NULL past the main graph. */
static cg_plan *owner_plan(cg_plan *p, int32_t up)
{
    for (int32_t i = 0; i < up && p; i++)
        p = p->parent;
    return p;
}

/* Whether step si of p may be folded, judged before running it. */
static bool foldable(const cg_runtime *rt, cg_plan *p, const cg_step *st)
{
    const cg_node *n = st->node;
    if (st->sub_count || !n->op_type || cg_fold_op_is_random(n->op_type) || !n->output_count)
        return false;
    if (!runs_as_written(rt, p, st) || (p == rt->main && rt->opt.observe))
        return false;
    for (size_t i = 0; i < n->input_count; i++) {
        cg_ref r = st->in[i];
        if (r.slot < 0)
            continue;
        /* an outer scope's constant (folded there first: its step comes
         * before the node that owns this subgraph) is as constant as a
         * local one (Silero VAD's nested If branches slice and reorder the
         * LSTM weights held as Constants one level up) */
        const cg_plan *o = owner_plan(p, r.up);
        if (!o || o->slot_kind[r.slot] != CG_SLOT_INIT || slot_is_graph_input(o, r.slot))
            return false;
    }
    return true;
}

static size_t value_bytes(const cg_value *v)
{
    if (!v)
        return 0;
    if (v->kind == CG_VALUE_TENSOR)
        return cg_tensor_bytes(&v->tensor);
    size_t b = 0;
    for (size_t i = 0; i < v->item_count; i++)
        b += value_bytes(v->items[i]);
    return b;
}

/* The initializer copies the step reads, made now (plan.c leaves them for
 * the first run). */
static void materialize_inputs(cg_plan *p, const cg_step *st)
{
    for (size_t i = 0; i < st->node->input_count; i++) {
        cg_plan *o = owner_plan(p, st->in[i].up);
        /* one the float64 mode promotes per step reaches the step as a
         * promoted copy made from the model's bytes (frame.c) */
        if (o && st->in[i].slot >= 0 && o->slot_kind[st->in[i].slot] == CG_SLOT_INIT &&
            !o->init_lazy64[st->in[i].slot])
            cg_plan_materialize_slot(o, st->in[i].slot);
    }
}

/* Whether the step reads an initializer the float64 mode left float
 * (cg_plan.init_lazy64): folding it would hold a double result for the
 * runtime's life, what leaving it float saves: only results smaller than
 * the initializers left float fold. */
static bool reads_lazy64(cg_plan *p, const cg_step *step)
{
    for (size_t i = 0; i < step->node->input_count; i++) {
        const cg_plan *o = owner_plan(p, step->in[i].up);
        if (step->in[i].slot >= 0 && o && o->init_lazy64[step->in[i].slot])
            return true;
    }
    return false;
}

/* An Identity of an initializer folds to a view of the initializer's bytes
 * rather than to a copy (torchvision routes every resnet50 weight through
 * one: 47 nodes, 98 MB). The view borrows: the bytes belong to the model
 * mapping or to the plan's initializer copy, which live as long as the
 * plan. In the float64 mode the view stays float as its source does. The
 * packed-weight cache keys on the bytes' address, so a convolution fed by
 * the Identity shares the initializer's packing. */
static bool alias_identity(cg_plan *p, cg_exec *f, const cg_step *step)
{
    const cg_node *n = step->node;
    if (strcmp(n->op_type, "Identity") != 0 ||
        (n->domain && n->domain[0] && strcmp(n->domain, "ai.onnx") != 0))
        return false;
    if (n->input_count != 1 || n->output_count != 1 || step->in[0].slot < 0 ||
        step->in[0].up != 0 || step->out[0] < 0)
        return false;
    int32_t in = step->in[0].slot, out = step->out[0];
    /* a graph output is handed out as its own value */
    if (p->slot_is_output[out] || f->vals[out])
        return false;
    /* an initializer the float64 mode promotes per step is read from the
     * model's bytes while its copy is not made: the view reads them too
     * (through a share of the copy's entry; failing that, the copy) */
    if (p->init_lazy64[in] && cg_plan_copy_source(p, in) && !cg_plan_share_copy(p, in, out))
        cg_plan_materialize_slot(p, in);
    materialize_inputs(p, step);
    const cg_value *src = f->vals[in];
    if (!src || src != p->init_values[in] || src->kind != CG_VALUE_TENSOR ||
        src->tensor.dtype == CG_DTYPE_STRING || !src->tensor.data)
        return false;
    cg_value *view = calloc(1, sizeof *view);
    if (!view)
        return false; /* the step runs as written */
    *view = *src;
    p->init_values[out] = view;
    p->init_borrowed[out] = true;
    p->init_lazy64[out] = p->init_lazy64[in];
    p->slot_kind[out] = CG_SLOT_INIT;
    f->vals[out] = view;
    f->own[out] = CG_OWN_NONE;
    return true;
}

/* Whether a subgraph of one of p's steps captures slot s (it reads the
 * value itself, not through a step's inputs). */
static bool captured(const cg_plan *p, int32_t s)
{
    for (size_t si = 0; si < p->step_count; si++)
        for (size_t k = 0; k < p->steps[si].sub_count; k++) {
            const cg_plan *sub = p->steps[si].subs[k].plan;
            for (size_t c = 0; c < sub->capture_count; c++)
                if (cg_plan_slot(p, sub->captures[c]) == s)
                    return true;
        }
    return false;
}

/* Leaves out of the first run's copies those of initializers every reader
 * of which has a prepared state standing for them (cg_kernel_state_covers):
 * vit_b_16's MatMul weights are read from the model's bytes (in place,
 * later packed from there), and their 346 MB of aligned copies need never
 * be made. A graph output or a subgraph's capture reads the value itself. */
static void defer_covered_copies(cg_plan *p)
{
    for (int32_t s = 0; s < (int32_t)p->slot_count; s++) {
        if (p->slot_kind[s] != CG_SLOT_INIT || p->slot_is_output[s] || !cg_plan_copy_source(p, s))
            continue;
        bool covered = true, read = false;
        for (size_t si = 0; si < p->step_count && covered; si++) {
            const cg_step *st = &p->steps[si];
            for (size_t i = 0; i < st->node->input_count && covered; i++)
                if (st->in[i].up == 0 && st->in[i].slot == s) {
                    read = true;
                    covered = i < 32 && st->state && (st->state_covers >> i & 1u);
                }
        }
        if (covered && read && !captured(p, s))
            cg_plan_defer_slot(p, s);
    }
}

/* Leaves out of the first run's copies those of the initializers the
 * float64 mode promotes per step (cg_plan.init_lazy64): the promotion
 * reads the model's bytes (frame.c promoted_input), so their aligned float
 * copies (resnet50: 71 MB, made and faulted in at init) need never be
 * made. A graph output or a subgraph's capture reads the value itself. */
static void defer_lazy64_copies(cg_plan *p)
{
    for (int32_t s = 0; s < (int32_t)p->slot_count; s++) {
        if (p->init_lazy64[s] && p->slot_kind[s] == CG_SLOT_INIT && !p->slot_is_output[s] &&
            cg_plan_copy_source(p, s) && !captured(p, s))
            cg_plan_defer_slot(p, s);
    }
}

/* The float64 mode's Conv reads a big float32 W as stored (its GEMM packs
 * it widened to double, its other paths widen it into scratch): the
 * promotion into a double copy and the packing of that copy were a
 * quarter of resnet50's float64 run. Marks input 1 of those steps
 * (cg_step.stored64); frame.c then leaves it unpromoted. */
static void mark_stored64(cg_plan *p)
{
    for (size_t si = 0; si < p->step_count; si++) {
        cg_step *st = &p->steps[si];
        const cg_node *n = st->node;
        if (st->folded || !n->op_type || strcmp(n->op_type, "Conv") != 0 ||
            !cg_domain_is_default(n->domain) || n->input_count < 2 || st->in[1].slot < 0)
            continue;
        const cg_plan *o = owner_plan(p, st->in[1].up);
        int32_t s = st->in[1].slot;
        const cg_value *v = o && o->slot_kind[s] == CG_SLOT_INIT ? o->init_values[s] : NULL;
        if (v && o->init_lazy64[s] && v->kind == CG_VALUE_TENSOR &&
            v->tensor.dtype == CG_DTYPE_FLOAT)
            st->stored64 |= 1u << 1;
    }
}

/* parent: the enclosing plan's folding frame (a subgraph's steps read the
 * outer constants through it), NULL for the main graph. */
static cg_status fold_plan(cg_runtime *rt, cg_plan *p, cg_exec *parent, cg_error *err)
{
    cg_exec f;
    cg_status st = cg_frame_init(&f, rt, p, parent, err);
    if (st != CG_OK)
        return st;
    f.folding = true;
    for (size_t si = 0; si < p->step_count; si++) {
        cg_step *step = &p->steps[si];
        for (size_t s = 0; s < step->sub_count; s++)
            if ((st = fold_plan(rt, step->subs[s].plan, &f, err)) != CG_OK)
                goto done;
        if (!foldable(rt, p, step)) {
            /* the float64 mode packs nothing (the prepared forms are float) */
            cg_kernel_fn prep = step->node->op_type && runs_as_written(rt, p, step) &&
                                        !rt->opt.float64
                                    ? prepare_fn(step->node) : NULL;
            if (prep) {
                /* a prepare function fills the copies it reads
                 * (cg_kernel_input_fill) or reads the model's bytes */
                cg_error local;
                cg_error_clear(&local);
                f.err = &local;
                (void)cg_frame_prepare_step(&f, si, prep); /* declining is fine */
                f.err = err;
            }
            continue;
        }
        const cg_node *n = step->node;
        if (alias_identity(p, &f, step)) {
            step->folded = true;
            continue;
        }
        size_t in_bytes = 0;
        for (size_t i = 0; i < n->input_count; i++)
            if (step->in[i].slot >= 0)
                in_bytes += value_bytes(f.vals[step->in[i].slot]);
        materialize_inputs(p, step);
        cg_error local;
        cg_error_clear(&local);
        f.err = &local;
        cg_status rs = cg_frame_step(&f, si);
        f.err = err;
        if (rs != CG_OK)
            continue; /* the run will fail here and say why */
        bool keep = true;
        for (size_t o = 0; o < n->output_count && keep; o++) {
            int32_t slot = step->out[o];
            size_t b = slot >= 0 ? value_bytes(f.vals[slot]) : 0;
            keep = slot < 0 || ((f.own[slot] == CG_OWN_FULL || f.own[slot] == CG_OWN_POOLED) &&
                                cg_fold_size_ok(b, in_bytes) &&
                                (!reads_lazy64(p, step) || b < CG_LAZY64_MIN_NUMEL * sizeof(double)));
        }
        for (size_t o = 0; o < n->output_count; o++) {
            int32_t slot = step->out[o];
            if (slot < 0)
                continue;
            if (keep) {
                p->init_values[slot] = f.vals[slot];
                p->init_borrowed[slot] = false;
                p->slot_kind[slot] = CG_SLOT_INIT;
                f.own[slot] = CG_OWN_NONE;
                /* the plan holds it now: its bytes stay reserved, as the
                 * converted initializers' are, until the plan is freed */
                p->init_reserved += f.reserved[slot];
                f.reserved[slot] = 0;
            } else {
                cg_exec_drop_value(rt, f.vals[slot], f.own[slot]);
                f.vals[slot] = NULL;
                f.own[slot] = CG_OWN_NONE;
            }
        }
        step->folded = keep;
    }
    defer_covered_copies(p);
    if (rt->opt.float64) {
        defer_lazy64_copies(p);
        mark_stored64(p);
    }
done:
    cg_frame_free(&f);
    return st;
}

cg_status cg_fold_constants(cg_runtime *rt, cg_error *err)
{
    return fold_plan(rt, rt->main, NULL, err);
}
