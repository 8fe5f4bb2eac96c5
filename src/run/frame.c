/*
 * Frames: one activation of a plan (the slot values and who owns them),
 * running its steps (reference kernels, fp16 emulation, executing
 * partitions as one step) and subgraph activation for control flow
 * kernels. Also the labels every message of the executor uses.
 *
 * With opt.node_precision, a main-graph step marked fp16 reads its float32
 * inputs rounded to fp16 (a copy in scratch, or for initializers a copy
 * rounded once at init; values from other fp16 steps are already rounded),
 * runs with k->precision telling accumulating kernels to accumulate in fp16
 * (or, in the float64 mode, with fp16's significand) when asked, and has its float32 outputs rounded in place before anyone
 * (the observer included) sees them.
 *
 * With opt.float64 (run/fp64.c) the values that hold the model's floats are
 * DOUBLE: the fp16 emulation rounds those (fp16 storage, float64 compute),
 * and a step that produces a float32/16 value fails (a kernel without a
 * float64 path must not compute part of the float64 reference).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "convgate/budget.h"
#include "convgate/partition.h"
#include "core/clock.h"
#include "run/exec.h"
#include "run/fp64.h"
#include "run/initshare.h"
#include "run/ops/simd.h"

/* --- labels ----------------------------------------------------------------- */

const char *cg_exec_step_label(const cg_node *n, size_t index, char *buf, size_t cap)
{
    const char *op = n && n->op_type ? n->op_type : "?";
    if (n && n->name && n->name[0])
        snprintf(buf, cap, "node '%s' (%s)", n->name, op);
    else
        snprintf(buf, cap, "node #%zu (%s)", index, op);
    return buf;
}

size_t cg_exec_node_index(const cg_kernel_ctx *k)
{
    const cg_exec *f = k->exec;
    if (f && f->plan && f->step < f->plan->step_count && f->plan->steps[f->step].node == k->node)
        return f->plan->steps[f->step].index;
    if (k->graph && k->node && k->node >= k->graph->nodes &&
        k->node < k->graph->nodes + k->graph->node_count)
        return (size_t)(k->node - k->graph->nodes);
    return 0;
}

void cg_exec_format_shape(int rank, const int64_t *dims, char *buf, size_t cap)
{
    size_t used = 0;
    int n = snprintf(buf, cap, "[");
    used = n > 0 ? (size_t)n : 0;
    for (int i = 0; i < rank && used < cap; i++) {
        n = snprintf(buf + used, cap - used, i ? ",%lld" : "%lld", (long long)dims[i]);
        if (n < 0)
            return;
        used += (size_t)n;
    }
    if (used < cap)
        snprintf(buf + used, cap - used, "]");
}

/* --- frames ------------------------------------------------------------------ */

/* Ends the running step's scratch: back to the mark taken before its kernel
 * (the chunks stay for later runs, reserved in the budget while they do).
 * The step's outputs are reserved (or dropped) after this. */
static void step_scratch_end(cg_exec *f, cg_scratch_mark mark)
{
    cg_scratch_reset(f->rt, mark);
    f->pending = 0;
}

cg_budget *cg_exec_budget(const cg_exec *f)
{
    return f && f->rt ? f->rt->budget : NULL;
}

/* CG_LIMIT naming where, once the run's deadline has passed. */
/* What a message names: `where`, else the step's node (st), labelled
 * only when a message needs it (a label per step cost 4% of a small
 * model's run). */
typedef struct step_where {
    const char *where;
    const cg_step *st;
} step_where;

static const char *where_label(step_where w, char *buf, size_t cap)
{
    return w.where ? w.where : cg_exec_step_label(w.st->node, w.st->index, buf, cap);
}

static cg_status check_deadline(const cg_exec *f, step_where w, cg_error *err)
{
    cg_budget *b = cg_exec_budget(f);
    if (!b || !cg_budget_expired(b))
        return CG_OK;
    char lbl[256];
    return cg_error_set(err, CG_LIMIT, "%s: the time limit of %g s was reached (--time-limit)",
                        where_label(w, lbl, sizeof lbl), cg_budget_seconds(b));
}

/* Reserves the budget for the n values a step (or partition) produced:
 * all of them or none. reserved[i] receives each value's bytes. */
static cg_status reserve_outputs(cg_exec *f, cg_value *const *vals, const uint8_t *flags,
                                 size_t n, step_where w, uint64_t *reserved)
{
    cg_budget *b = cg_exec_budget(f);
    for (size_t i = 0; i < n; i++) {
        reserved[i] = 0;
        if (!b || !vals[i] || (flags && (flags[i] & (CG_OUT_ARENA | CG_OUT_KEPT))))
            continue; /* reserved with the arena or the kept heap */
        uint64_t bytes = cg_value_bytes(vals[i]);
        (void)cg_buffers_make_room(f->rt, bytes); /* the reservation says when it fails */
        cg_status st = cg_budget_reserve(b, bytes, w.where, NULL);
        if (st != CG_OK) { /* again, for the message with the step's label */
            char lbl[256];
            st = cg_budget_reserve(b, bytes, where_label(w, lbl, sizeof lbl), f->err);
        }
        if (st != CG_OK) {
            for (size_t j = 0; j < i; j++)
                cg_budget_release(b, reserved[j]);
            return st;
        }
        reserved[i] = bytes;
    }
    return CG_OK;
}

/* Frees a value according to who owns what. */
void cg_exec_drop_value(cg_runtime *rt, cg_value *v, uint8_t own)
{
    if (!v || own == CG_OWN_NONE)
        return;
    if (own == CG_OWN_STRUCT) {
        v->tensor.data = NULL;
    } else if (own == CG_OWN_HEAP && rt) {
        cg_heap_free(rt, v->tensor.data);
        v->tensor.data = NULL;
    } else if (own == CG_OWN_POOLED && rt && v->kind == CG_VALUE_TENSOR) {
        cg_buffer_put(rt, v->tensor.data, cg_tensor_bytes(&v->tensor));
        v->tensor.data = NULL;
    }
    cg_value_free(v);
}

static void frame_drop(cg_exec *f, int32_t slot)
{
    if (f->reserved[slot]) {
        cg_budget_release(cg_exec_budget(f), f->reserved[slot]);
        f->reserved[slot] = 0;
    }
    cg_exec_drop_value(f->rt, f->vals[slot], f->own[slot]);
    f->vals[slot] = NULL;
    f->own[slot] = CG_OWN_NONE;
}

cg_status cg_frame_init(cg_exec *f, cg_runtime *rt, const cg_plan *plan, cg_exec *parent,
                            cg_error *err)
{
    memset(f, 0, sizeof *f);
    f->rt = rt;
    f->plan = plan;
    f->parent = parent;
    f->err = err;
    size_t n = plan->slot_count + 1;
    f->vals = calloc(n, sizeof *f->vals);
    f->own = calloc(n, sizeof *f->own);
    f->reserved = calloc(n, sizeof *f->reserved);
    f->ins = calloc(plan->max_inputs + 1, sizeof *f->ins);
    f->outs = calloc(plan->max_outputs + 1, sizeof *f->outs);
    f->out_flags = calloc(plan->max_outputs + 1, sizeof *f->out_flags);
    f->out_reserved = calloc(plan->max_outputs + 1, sizeof *f->out_reserved);
    if (!f->vals || !f->own || !f->reserved || !f->ins || !f->outs || !f->out_flags ||
        !f->out_reserved) {
        free(f->vals);
        free(f->own);
        free(f->reserved);
        free(f->out_reserved);
        free(f->ins);
        free(f->outs);
        free(f->out_flags);
        memset(f, 0, sizeof *f);
        return cg_error_set(err, CG_NOMEM, "out of memory starting a graph run");
    }
    for (size_t s = 0; s < plan->slot_count; s++)
        if (plan->slot_kind[s] == CG_SLOT_INIT)
            f->vals[s] = plan->init_values[s];
    return CG_OK;
}

void cg_frame_free(cg_exec *f)
{
    if (!f->vals)
        return;
    for (size_t s = 0; s < f->plan->slot_count; s++)
        frame_drop(f, (int32_t)s);
    free(f->vals);
    free(f->own);
    free(f->reserved);
    free(f->out_reserved);
    free(f->ins);
    free(f->outs);
    free(f->out_flags);
    memset(f, 0, sizeof *f);
}

static cg_value *frame_get(cg_exec *f, cg_ref r)
{
    for (int32_t i = 0; i < r.up && f; i++)
        f = f->parent;
    return f ? f->vals[r.slot] : NULL;
}

/* Frees the outputs a step produced but did not hand to the frame. */
static void drop_step_outputs(cg_exec *f, size_t count)
{
    for (size_t i = 0; i < count; i++) {
        cg_exec_drop_value(f->rt, f->outs[i], cg_exec_out_own(f->out_flags[i]));
        f->outs[i] = NULL;
        f->out_flags[i] = 0;
    }
}

/* Thread CPU seconds for per-node timing: on a shared machine wall time
 * counts other processes' slices; the runtime runs a model on one thread. */
static double cpu_seconds(void)
{
    return cg_clock_seconds(CLOCK_THREAD_CPUTIME_ID);
}

/* Scratch owned by frame f, freed after the running step's kernel; NULL
 * above the allocation limit or when out of memory. */
void *cg_frame_scratch(cg_exec *f, size_t bytes)
{
    if (!f || !f->rt || bytes > f->rt->opt.max_alloc_bytes)
        return NULL;
    /* counted by the chunks it comes from (buffers.c), not by pending */
    return cg_scratch_alloc(f->rt, bytes);
}

/* --- fp16 emulation (cg_node_precision) ------------------------------------------ */

/* The dtype that holds the model's float values: FLOAT, or DOUBLE in the
 * float64 mode. fp16 emulation rounds tensors of this type only. */
static cg_dtype real_dtype(const cg_runtime *rt)
{
    return rt->opt.float64 ? CG_DTYPE_DOUBLE : CG_DTYPE_FLOAT;
}

static void round_tensor_fp16(const cg_runtime *rt, cg_tensor *t)
{
    const cg_simd_ops *ops = cg_simd_ops_get(rt->simd);
    if (t->dtype == CG_DTYPE_FLOAT)
        ops->fp16_store_f32(t->data, t->numel);
    else
        ops->fp16_store_f64(t->data, t->numel);
}

/* Rounds every tensor of dtype `real` held by v in place (fp16 storage). */
static void round_value_fp16(const cg_runtime *rt, cg_value *v, cg_dtype real)
{
    if (!v)
        return;
    if (v->kind == CG_VALUE_SEQUENCE ||
        (v->kind == CG_VALUE_OPTIONAL && v->has_value && v->optional_is_sequence)) {
        for (size_t i = 0; i < v->item_count; i++)
            round_value_fp16(rt, v->items[i], real);
        return;
    }
    if (v->kind == CG_VALUE_OPTIONAL && !v->has_value)
        return;
    if (v->tensor.dtype == real && v->tensor.data)
        round_tensor_fp16(rt, &v->tensor);
}

static cg_node_precision step_precision(const cg_exec *f, const cg_step *st)
{
    const uint8_t *np = f->rt->opt.node_precision;
    if (!f->is_main || !np || st->index >= f->plan->graph->node_count)
        return CG_NODE_PREC_FP32;
    return (cg_node_precision)np[st->index];
}

/* Input i of an emulated step as fp16 would hold it: values produced by
 * another emulated node are already rounded; initializers use the copy
 * rounded at init; anything else crossing into the emulated region (a graph
 * input, a CPU node's output) is rounded into scratch. */
static cg_status emulated_input(cg_exec *f, const cg_step *st, size_t i)
{
    const cg_value *v = f->ins[i];
    const cg_plan *p = f->plan;
    cg_ref r = st->in[i];
    /* (an initializer the float64 mode keeps float comes here unpromoted:
     * its rounded form is double) */
    if (r.up == 0 && p->slot_kind[r.slot] == CG_SLOT_INIT && v == p->init_values[r.slot] &&
        f->rt->prec_init && f->rt->prec_init[r.slot]) {
        f->ins[i] = f->rt->prec_init[r.slot];
        return CG_OK;
    }
    if (v->kind != CG_VALUE_TENSOR || v->tensor.dtype != real_dtype(f->rt) || r.up != 0)
        return CG_OK;
    int32_t prod = p->slot_producer[r.slot];
    if (p->slot_kind[r.slot] == CG_SLOT_NODE && prod >= 0 &&
        step_precision(f, &p->steps[prod]) != CG_NODE_PREC_FP32)
        return CG_OK;
    size_t bytes = cg_tensor_bytes(&v->tensor);
    cg_value *c = cg_frame_scratch(f, sizeof *c);
    void *d = c ? cg_frame_scratch(f, bytes) : NULL;
    if (!d) {
        char lbl[256];
        return cg_error_set(f->err, CG_NOMEM, "%s: out of memory rounding input '%s' to fp16",
                            cg_exec_step_label(st->node, st->index, lbl, sizeof lbl),
                            st->node->inputs[i]);
    }
    *c = *v;
    if (bytes)
        memcpy(d, v->tensor.data, bytes);
    c->tensor.data = d;
    round_tensor_fp16(f->rt, &c->tensor);
    f->ins[i] = c;
    return CG_OK;
}

/* Initializers from this size get their rounded form from the process-wide
 * table; smaller ones are not worth an entry. */
#define PREC_SHARE_MIN_BYTES (16u * 1024u)

/* Fills d (numel elements of dtype `to`) with initializer slot s's value t
 * as the runtime reads it: a copy, or (t left in its stored float type by
 * the float64 mode, cg_plan.init_lazy64) its promotion to double, read from
 * the model's bytes while the aligned copy is not made (as promoted_input
 * reads it); then rounded to fp16 storage. */
static void fill_rounded(const cg_runtime *rt, const cg_plan *p, int32_t s, const cg_tensor *t,
                         cg_dtype to, void *d)
{
    if (to == t->dtype) {
        memcpy(d, t->data, cg_tensor_bytes(t));
    } else {
        const void *raw = cg_plan_copy_source(p, s);
        if (raw)
            cg_fp64_convert_bytes(t->dtype, raw, t->numel, d);
        else
            cg_fp64_convert(t, d);
    }
    cg_tensor r = *t;
    r.dtype = to;
    r.data = d;
    round_tensor_fp16(rt, &r);
}

/* The fp16-rounded form (element type `to`) of t, the value of initializer
 * slot s, shared by every runtime of the process that rounds the same
 * initializer to the same element type (run/initshare.h): a gate on an fp16
 * target runs two fp16 floors and the target path's device classes and
 * reruns, each of which rounded its own copy. The buffer is a function of
 * the initializer alone, whoever fills it: the same conversion and the same
 * rounding, bit for bit at every SIMD level (test_simd). NULL when the slot
 * is not one of the graph's initializers, the tensor is small, or memory
 * is short (the caller then rounds its own copy). */
static cg_shared *rounded_share(const cg_runtime *rt, const cg_plan *p, int32_t s,
                                const cg_tensor *t, cg_dtype to)
{
    const cg_tensor_proto *tp = p->init_proto[s];
    size_t bytes;
    if (!tp || !t->data || !cg_tensor_byte_size(to, t->numel, &bytes) ||
        bytes < PREC_SHARE_MIN_BYTES)
        return NULL;
    struct {
        char what[8];
        int64_t dtype, numel;
    } tag;
    memset(&tag, 0, sizeof tag);
    memcpy(tag.what, "fp16rnd", 8);
    tag.dtype = to;
    tag.numel = t->numel;
    cg_shared *sh = cg_shared_acquire(tp, &tag, sizeof tag, bytes);
    if (sh && cg_shared_fill_begin(sh)) {
        fill_rounded(rt, p, s, t, to, cg_shared_data(sh));
        cg_shared_fill_end(sh, true);
    }
    return sh;
}

/* prec_init[s]: v, the value of initializer slot s, rounded to fp16 storage
 * as an emulated step reads it: of element type `to` (v's own, or double
 * for a float the float64 mode left in its stored type,
 * cg_plan.init_lazy64), over the shared rounded form, or over the
 * runtime's own copy when there is none (small, or not one of the graph's
 * initializers). */
static cg_status rounded_value(cg_runtime *rt, cg_plan *p, int32_t s, const cg_value *v,
                               cg_dtype to, cg_error *err)
{
    cg_value *c = malloc(sizeof *c);
    if (!c)
        return cg_error_set(err, CG_NOMEM, "out of memory preparing fp16 emulation");
    *c = *v;
    c->tensor.dtype = to;
    /* the slot's bytes are read now: an aligned copy the float64 mode left
     * for the first run (a double payload at an odd offset) is made first
     * (a promotion reads the model's bytes: fill_rounded) */
    if (to == v->tensor.dtype)
        cg_plan_materialize_slot(p, s);
    cg_shared *sh = rounded_share(rt, p, s, &v->tensor, to);
    if (sh) {
        c->tensor.data = cg_shared_data(sh);
    } else {
        size_t bytes;
        void *d = cg_tensor_byte_size(to, v->tensor.numel, &bytes) ? malloc(bytes ? bytes : 1)
                                                                  : NULL;
        if (!d) {
            free(c);
            return cg_error_set(err, CG_NOMEM, "out of memory rounding initializer '%s' to "
                                "fp16", p->slot_names[s]);
        }
        fill_rounded(rt, p, s, &v->tensor, to, d);
        c->tensor.data = d;
    }
    rt->prec_init[s] = c;
    rt->prec_shared[s] = sh;
    return CG_OK;
}

/* Rounded copies of the float32 initializers emulated nodes read. */
cg_status cg_prec_init_build(cg_runtime *rt, cg_error *err)
{
    const cg_plan *p = rt->main;
    const uint8_t *np = rt->opt.node_precision;
    const cg_assignment *a = rt->opt.assignment;
    /* An executing partition's outputs come from the target unrounded, but
     * emulated consumers trust an emulated producer to have rounded: so a
     * node there cannot be emulated. */
    for (size_t i = 0; a && i < p->graph->node_count; i++) {
        int pid = a->partition_of[i];
        if (np[i] != CG_NODE_PREC_FP32 && pid >= 0 && (size_t)pid < a->partition_count &&
            cg_target_executes(a->targets[a->partitions[pid].target]))
            return cg_error_set(err, CG_USAGE, "node %zu runs on the executing target '%s': it "
                                "cannot also be emulated in fp16", i,
                                a->targets[a->partitions[pid].target]->name);
    }
    /* float64 mode computes in double: fp16 storage is emulated, fp16
     * accumulation (a float32 kernel feature) is not */
    for (size_t i = 0; rt->opt.float64 && i < p->graph->node_count; i++)
        if (np[i] == CG_NODE_PREC_FP16_ACC16)
            return cg_error_set(err, CG_USAGE, "node %zu: fp16 accumulation cannot be "
                                "emulated in the float64 mode (fp16 storage can)", i);
    /* ... and the significand-rounded sums are a float64-mode floor only */
    for (size_t i = 0; !rt->opt.float64 && i < p->graph->node_count; i++)
        if (np[i] == CG_NODE_PREC_FP16_SUM11)
            return cg_error_set(err, CG_USAGE, "node %zu: fp16-significand sums are "
                                "emulated in the float64 mode only", i);
    for (size_t i = 0; i < p->graph->node_count; i++)
        if (np[i] > CG_NODE_PREC_FP16_SUM11)
            return cg_error_set(err, CG_USAGE, "node %zu: node precision %d is unknown", i,
                                (int)np[i]);
    rt->prec_init = calloc(p->slot_count + 1, sizeof *rt->prec_init);
    rt->prec_shared = calloc(p->slot_count + 1, sizeof *rt->prec_shared);
    if (!rt->prec_init || !rt->prec_shared)
        return cg_error_set(err, CG_NOMEM, "out of memory preparing fp16 emulation");
    /* The plan keeps each initializer as written, for steps that read it as
     * written; emulated steps read its rounded form (emulated_input), which
     * every runtime of the process rounding that initializer shares. */
    cg_status cs = CG_OK;
    for (size_t si = 0; si < p->step_count && cs == CG_OK; si++) {
        const cg_step *st = &p->steps[si];
        if (st->index >= p->graph->node_count || np[st->index] == CG_NODE_PREC_FP32)
            continue;
        for (size_t i = 0; i < st->node->input_count && cs == CG_OK; i++) {
            cg_ref r = st->in[i];
            if (r.up != 0 || r.slot < 0 || p->slot_kind[r.slot] != CG_SLOT_INIT ||
                rt->prec_init[r.slot])
                continue;
            const cg_value *v = p->init_values[r.slot];
            if (v && rt->opt.float64 && p->init_lazy64[r.slot])
                cs = rounded_value(rt, rt->main, r.slot, v, CG_DTYPE_DOUBLE, err);
            else if (v && v->kind == CG_VALUE_TENSOR && v->tensor.dtype == real_dtype(rt))
                cs = rounded_value(rt, rt->main, r.slot, v, v->tensor.dtype, err);
        }
    }
    return cs;
}

void cg_prec_init_free(cg_runtime *rt)
{
    for (size_t s = 0; rt->prec_init && rt->main && s < rt->main->slot_count; s++) {
        if (rt->prec_shared && rt->prec_shared[s]) {
            rt->prec_init[s]->tensor.data = NULL; /* the shared buffer's */
            cg_shared_release(rt->prec_shared[s]);
        }
        cg_value_free(rt->prec_init[s]);
    }
    free(rt->prec_init);
    free(rt->prec_shared);
    rt->prec_init = NULL;
    rt->prec_shared = NULL;
}

/* Runs step si; with release, drops the slots whose last use it is (the
 * plan's liveness; a schedule applies its own). */
/* Input i of a step in the float64 mode when it is an initializer left
 * float (cg_plan.init_lazy64): promoted into scratch for this step. */
static cg_status promoted_input(cg_exec *f, const cg_step *st, size_t i)
{
    cg_ref r = st->in[i];
    const cg_exec *owner = f;
    for (int32_t up = 0; up < r.up && owner; up++)
        owner = owner->parent;
    const cg_plan *p = owner ? owner->plan : NULL;
    const cg_value *v = f->ins[i];
    if (!p || !p->init_lazy64[r.slot] || v != p->init_values[r.slot])
        return CG_OK; /* promoted at init, or replaced by a feed */
    /* (an emulated step is the main graph's: its slots index prec_init) */
    if (r.up == 0 && step_precision(f, st) != CG_NODE_PREC_FP32 && f->rt->prec_init &&
        f->rt->prec_init[r.slot])
        return CG_OK; /* an emulated step reads the rounded double (emulated_input) */
    if (i < 32 && (st->stored64 >> i & 1u))
        return CG_OK; /* the kernel widens it as it reads it (cg_kernel_input_stored64) */
    const cg_tensor *t = &v->tensor;
    size_t bytes;
    cg_value *c = cg_frame_scratch(f, sizeof *c);
    double *d = c && cg_tensor_byte_size(CG_DTYPE_DOUBLE, t->numel, &bytes)
                    ? cg_frame_scratch(f, bytes ? bytes : 1) : NULL;
    if (!d) {
        char lbl[256];
        return cg_error_set(f->err, CG_NOMEM, "%s: out of memory promoting initializer '%s' "
                            "to float64", cg_exec_step_label(st->node, st->index, lbl,
                                                             sizeof lbl), st->node->inputs[i]);
    }
    *c = *v;
    c->tensor.dtype = CG_DTYPE_DOUBLE;
    c->tensor.data = d;
    /* the model's bytes while its aligned copy is not made (fold.c) */
    const void *raw = cg_plan_copy_source(p, r.slot);
    if (raw)
        cg_fp64_convert_bytes(t->dtype, raw, t->numel, d);
    else
        cg_fp64_convert(t, d);
    f->ins[i] = c;
    return CG_OK;
}

static cg_status run_step(cg_exec *f, size_t si, bool release)
{
    const cg_plan *p = f->plan;
    const cg_step *st = &p->steps[si];
    const cg_node *n = st->node;
    cg_error *err = f->err;
    char lbl[256];
    f->step = si;
    /* computed at init (its outputs are initializers), or fused into an
     * earlier step that already wrote its result */
    if (st->folded || (st->absorbed_final >= 0 && f->vals[st->absorbed_final])) {
        for (size_t r = 0; release && r < st->release_count; r++)
            frame_drop(f, st->release[r]);
        return CG_OK;
    }
    cg_status ts = check_deadline(f, (step_where){NULL, st}, err);
    if (ts != CG_OK)
        return ts;
    cg_scratch_mark mark = cg_scratch_mark_get(f->rt);
    for (size_t i = 0; i < n->input_count; i++) {
        if (st->in[i].slot < 0) {
            f->ins[i] = NULL;
            continue;
        }
        f->ins[i] = frame_get(f, st->in[i]);
        if (!f->ins[i])
            return cg_error_set(err, CG_RUNTIME, "%s: input '%s' has no value (released "
                                "early or never produced)",
                                cg_exec_step_label(n, st->index, lbl, sizeof lbl), n->inputs[i]);
    }
    for (size_t i = 0; f->rt->opt.float64 && i < n->input_count; i++) {
        if (!f->ins[i])
            continue;
        cg_status rs = promoted_input(f, st, i);
        if (rs != CG_OK) {
            step_scratch_end(f, mark);
            return rs;
        }
    }
    cg_node_precision prec = step_precision(f, st);
    for (size_t i = 0; prec != CG_NODE_PREC_FP32 && i < n->input_count; i++) {
        if (!f->ins[i])
            continue;
        cg_status rs = emulated_input(f, st, i);
        if (rs != CG_OK) {
            step_scratch_end(f, mark);
            return rs;
        }
    }
    for (size_t i = 0; i < n->output_count; i++) {
        f->outs[i] = NULL;
        f->out_flags[i] = 0;
    }
    f->epi_taken = false;
    if (st->fused_slot >= 0) {
        f->epi_run = st->epi;
        f->epi_run.add = NULL;
        if (st->residual_slot >= 0) {
            const cg_value *r = f->vals[st->residual_slot];
            if (r && r->kind == CG_VALUE_TENSOR)
                f->epi_run.add = &r->tensor;
            else
                f->epi_run.kind = CG_EPI_NONE; /* no residual: no fusion this run */
        }
    }
    cg_kernel_ctx k = {n, p->graph, st->since, st->opset, f->ins, n->input_count,
                       f->outs, n->output_count, f, err,
                       prec == CG_NODE_PREC_FP16_ACC16   ? CG_KPREC_FP16_ACC16
                       : prec == CG_NODE_PREC_FP16_SUM11 ? CG_KPREC_FP16_SUM11
                                                         : CG_KPREC_FP32};
    /* per-node timing only when asked: two clock reads per step otherwise wasted */
    double *timing = f->is_main && !f->shadow ? f->rt->opt.node_seconds : NULL;
    double t_start = timing ? cpu_seconds() : 0.0;
    cg_status status = st->fn(&k);
    if (timing)
        timing[st->index] += cpu_seconds() - t_start;
    step_scratch_end(f, mark);
    if (status == CG_OK) {
        for (size_t i = 0; i < n->output_count; i++)
            if (st->out[i] >= 0 && !f->outs[i]) {
                status = cg_error_set(err, CG_RUNTIME, "%s: kernel did not produce output %zu "
                                      "'%s'", cg_exec_step_label(n, st->index, lbl, sizeof lbl), i,
                                      n->outputs[i]);
                break;
            }
    } else if (err && err->status == CG_OK) {
        cg_error_set(err, status, "%s: kernel failed (%s)",
                     cg_exec_step_label(n, st->index, lbl, sizeof lbl), cg_status_name(status));
    }
    if (status != CG_OK) {
        drop_step_outputs(f, n->output_count);
        return status;
    }

    cg_runtime *rt = f->rt;
    for (size_t i = 0; rt->opt.float64 && i < n->output_count; i++) {
        if (st->out[i] >= 0 && cg_fp64_leaks(f->outs[i])) {
            cg_error_set(err, CG_UNSUPPORTED, "%s: output %zu '%s' is %s in the float64 mode "
                         "(the kernel has no float64 path)",
                         cg_exec_step_label(n, st->index, lbl, sizeof lbl), i, n->outputs[i],
                         cg_dtype_name(f->outs[i]->kind == CG_VALUE_TENSOR
                                           ? f->outs[i]->tensor.dtype : f->outs[i]->seq_dtype));
            drop_step_outputs(f, n->output_count);
            return CG_UNSUPPORTED;
        }
    }
    uint64_t *out_reserved = f->out_reserved;
    status = reserve_outputs(f, f->outs, f->out_flags, n->output_count, (step_where){NULL, st},
                             out_reserved);
    if (status != CG_OK) {
        drop_step_outputs(f, n->output_count);
        return status;
    }
    for (size_t i = 0; i < n->output_count; i++) {
        /* a taken epilogue: output 0 is the fused activation's output */
        int32_t slot = i == 0 && f->epi_taken ? st->fused_slot : st->out[i];
        if (slot < 0) {
            cg_budget_release(cg_exec_budget(f), out_reserved[i]); /* dropped below */
            continue;
        }
        cg_value *v = f->outs[i];
        f->reserved[slot] = out_reserved[i];
        f->vals[slot] = v;
        f->own[slot] = cg_exec_out_own(f->out_flags[i]);
        if (prec != CG_NODE_PREC_FP32)
            round_value_fp16(rt, v, real_dtype(rt));
        if (f->recording && (f->out_flags[i] & CG_OUT_PLANNABLE) &&
            v->kind == CG_VALUE_TENSOR && v->tensor.dtype != CG_DTYPE_STRING)
            rt->record_bytes[slot] = cg_tensor_bytes(&v->tensor);
        f->outs[i] = NULL;
    }
    drop_step_outputs(f, n->output_count); /* unnamed outputs */

    if (f->is_main && rt->opt.observe && !f->shadow) {
        for (size_t i = 0; i < n->output_count; i++) {
            int32_t slot = st->out[i];
            if (slot < 0)
                continue;
            status = rt->opt.observe(rt->opt.observe_user, n, n->outputs[i], f->vals[slot]);
            if (status != CG_OK)
                return cg_error_set(err, status, "%s: the observer stopped the run at output "
                                    "'%s'", cg_exec_step_label(n, st->index, lbl, sizeof lbl),
                                    n->outputs[i]);
        }
    }
    for (size_t r = 0; release && r < st->release_count; r++)
        frame_drop(f, st->release[r]);
    return CG_OK;
}

static double now_seconds(void)
{
    return cg_clock_seconds(CLOCK_MONOTONIC);
}

/* true when a float32 tensor among v has an infinite lane */
static bool any_inf(cg_value *const *v, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        if (!v[i] || v[i]->kind != CG_VALUE_TENSOR || v[i]->tensor.dtype != CG_DTYPE_FLOAT)
            continue;
        const float *x = v[i]->tensor.data;
        for (int64_t k = 0; k < v[i]->tensor.numel; k++)
            if (isinf(x[k]))
                return true;
    }
    return false;
}

/* A nan_clamped target (cg_target) gave an infinite lane: the partition's
 * nodes run again as reference steps, in shadow (no observer, timing, arena
 * or memory-plan recording), and each output lane where the target has
 * +-inf and the reference NaN takes the reference's NaN. Every other lane
 * keeps the target's value: an inf where the reference is finite stays for
 * the comparison to see. What the shadow run made is dropped again. */
static cg_status restore_nan(cg_exec *f, cg_rt_partition *rp)
{
    const cg_partition_desc *d = &rp->desc;
    bool arena = f->use_arena, recording = f->recording;
    f->shadow = true;
    f->use_arena = f->recording = false;
    cg_status st = CG_OK;
    for (size_t k = 0; k < d->node_count && st == CG_OK; k++)
        st = run_step(f, d->nodes[k], false);
    f->shadow = false;
    f->use_arena = arena;
    f->recording = recording;
    rp->nan_checks++;
    for (size_t i = 0; i < d->output_count && st == CG_OK; i++) {
        const cg_value *ref = f->vals[rp->out_slots[i]];
        cg_value *x = rp->outs[i];
        if (!ref || ref->kind != CG_VALUE_TENSOR || x->kind != CG_VALUE_TENSOR ||
            x->tensor.dtype != CG_DTYPE_FLOAT || ref->tensor.numel != x->tensor.numel)
            continue;
        float *xv = x->tensor.data;
        for (int64_t k = 0; k < x->tensor.numel; k++) {
            if (!isinf(xv[k]))
                continue;
            double r = ref->tensor.dtype == CG_DTYPE_FLOAT ? ((const float *)ref->tensor.data)[k]
                       : ref->tensor.dtype == CG_DTYPE_DOUBLE
                           ? ((const double *)ref->tensor.data)[k] : 0.0;
            if (isnan(r)) {
                xv[k] = (float)r;
                rp->nan_restored++;
            }
        }
    }
    for (size_t k = 0; k < d->node_count; k++) {
        const cg_step *s = &f->plan->steps[d->nodes[k]];
        for (size_t o = 0; o < s->node->output_count; o++)
            if (s->out[o] >= 0)
                frame_drop(f, s->out[o]);
    }
    return st;
}

/* Runs a compiled partition as one step: inputs from the frame, outputs
 * (allocated by the target) handed to the frame. */
static cg_status run_partition(cg_exec *f, cg_rt_partition *rp)
{
    cg_error *err = f->err;
    cg_runtime *rt = f->rt;
    const cg_partition_desc *d = &rp->desc;
    for (size_t i = 0; i < d->input_count; i++) {
        rp->ins[i] = f->vals[rp->in_slots[i]];
        if (!rp->ins[i])
            return cg_error_set(err, CG_RUNTIME, "partition %d (%s): input '%s' has no value",
                                rp->id, rp->target->name, d->inputs[i]);
    }
    for (size_t i = 0; i < d->output_count; i++)
        rp->outs[i] = NULL;
    char where[128];
    snprintf(where, sizeof where, "partition %d (%s)", rp->id, rp->target->name);
    cg_status ts = check_deadline(f, (step_where){where, NULL}, err);
    if (ts != CG_OK)
        return ts;
    double t0 = now_seconds();
    cg_status st = rp->target->vt->run(rp->state, rp->ins, rp->outs, err);
    rp->seconds += now_seconds() - t0;
    rp->runs++;
    if (st == CG_OK) {
        for (size_t i = 0; i < d->output_count; i++)
            if (!rp->outs[i]) {
                st = cg_error_set(err, CG_RUNTIME, "partition %d (%s) did not produce output "
                                  "'%s'", rp->id, rp->target->name, d->outputs[i]);
                break;
            }
        if (st == CG_OK && rp->target->nan_clamped && any_inf(rp->outs, d->output_count))
            st = restore_nan(f, rp);
    } else if (err && err->status == CG_OK) {
        cg_error_set(err, st, "partition %d (%s) failed (%s)", rp->id, rp->target->name,
                     cg_status_name(st));
    } else {
        cg_error_prefix(err, "partition %d (%s, %zu nodes): ", rp->id, rp->target->name,
                        d->node_count);
    }
    uint64_t *out_reserved = st == CG_OK ? calloc(d->output_count + 1, sizeof *out_reserved)
                                          : NULL;
    if (st == CG_OK && !out_reserved)
        st = cg_error_set(err, CG_NOMEM, "%s: out of memory", where);
    if (st == CG_OK)
        st = reserve_outputs(f, rp->outs, NULL, d->output_count, (step_where){where, NULL},
                             out_reserved);
    if (st != CG_OK) {
        for (size_t i = 0; i < d->output_count; i++) {
            cg_value_free(rp->outs[i]);
            rp->outs[i] = NULL;
        }
        free(out_reserved);
        return st;
    }
    for (size_t i = 0; i < d->output_count; i++) {
        int32_t slot = rp->out_slots[i];
        frame_drop(f, slot);
        f->vals[slot] = rp->outs[i];
        f->own[slot] = CG_OWN_FULL;
        f->reserved[slot] = out_reserved[i];
        rp->outs[i] = NULL;
    }
    free(out_reserved);
    if (rt->opt.observe) {
        for (size_t i = 0; i < d->output_count; i++) {
            st = rt->opt.observe(rt->opt.observe_user, rp->out_nodes[i], d->outputs[i],
                                 f->vals[rp->out_slots[i]]);
            if (st != CG_OK)
                return cg_error_set(err, st, "partition %d (%s): the observer stopped the run "
                                    "at output '%s'", rp->id, rp->target->name, d->outputs[i]);
        }
    }
    return CG_OK;
}

cg_status cg_frame_prepare_step(cg_exec *f, size_t si, cg_kernel_fn fn)
{
    const cg_plan *p = f->plan;
    const cg_step *st = &p->steps[si];
    const cg_node *n = st->node;
    f->step = si;
    for (size_t i = 0; i < n->input_count; i++) {
        /* an initializer of this graph or of an enclosing one (a capture:
         * Silero VAD's If branches read their weights from the main graph) */
        cg_ref r = st->in[i];
        cg_exec *a = f;
        for (int32_t up = 0; up < r.up && a; up++)
            a = a->parent;
        f->ins[i] = a && r.slot >= 0 && a->plan->slot_kind[r.slot] == CG_SLOT_INIT
                        ? a->vals[r.slot] : NULL;
    }
    for (size_t i = 0; i < n->output_count; i++) {
        f->outs[i] = NULL;
        f->out_flags[i] = 0;
    }
    cg_scratch_mark mark = cg_scratch_mark_get(f->rt);
    cg_kernel_ctx k = {n, p->graph, st->since, st->opset, f->ins, n->input_count,
                       f->outs, n->output_count, f, f->err, CG_KPREC_FP32};
    cg_status status = fn(&k);
    step_scratch_end(f, mark);
    drop_step_outputs(f, n->output_count);
    return status;
}

cg_status cg_frame_step(cg_exec *f, size_t si)
{
    return run_step(f, si, false);
}

cg_status cg_frame_run(cg_exec *f)
{
    const cg_runtime *rt = f->rt;
    if (f->is_main && rt->units) {
        for (size_t u = 0; u < rt->unit_count; u++) {
            const cg_rt_unit *un = &rt->units[u];
            cg_status st = un->step >= 0 ? run_step(f, (size_t)un->step, false)
                                         : run_partition(f, &rt->parts[un->part]);
            if (st != CG_OK)
                return st;
            for (size_t r = 0; r < un->release_count; r++)
                frame_drop(f, un->release[r]);
        }
        return CG_OK;
    }
    for (size_t si = 0; si < f->plan->step_count; si++) {
        cg_status st = run_step(f, si, true);
        if (st != CG_OK)
            return st;
    }
    return CG_OK;
}

/* Moves (when the frame owns them) or copies the graph outputs into outs. */
cg_status cg_frame_take_outputs(cg_exec *f, cg_value **outs, size_t count, cg_error *err)
{
    const cg_plan *p = f->plan;
    cg_status st = CG_OK;
    size_t i = 0;
    for (; i < count; i++) {
        cg_ref r = p->output_refs[i];
        cg_value *v = frame_get(f, r);
        if (!v) {
            st = cg_error_set(err, CG_RUNTIME, "graph output '%s' has no value",
                              p->graph->outputs[i].name);
            goto fail;
        }
        if (r.up == 0 && (f->own[r.slot] == CG_OWN_FULL || f->own[r.slot] == CG_OWN_POOLED)) {
            /* The pointer stays in the slot so a repeated output can copy it;
             * the caller holds the value now, outside this run's budget. */
            f->own[r.slot] = CG_OWN_NONE;
            cg_budget_release(cg_exec_budget(f), f->reserved[r.slot]);
            f->reserved[r.slot] = 0;
            outs[i] = v;
            continue;
        }
        /* in the float64 mode a float value here is an initializer left
         * float (cg_plan.init_lazy64), read from an enclosing graph */
        st = f->rt->opt.float64 ? cg_fp64_promoted_copy(v, &outs[i], err)
                                : cg_value_copy(v, &outs[i], err);
        if (st != CG_OK)
            goto fail;
    }
    return CG_OK;
fail:
    for (size_t j = 0; j < i; j++) {
        cg_value_free(outs[j]);
        outs[j] = NULL;
    }
    return st;
}

/* --- subgraphs ------------------------------------------------------------------ */

cg_status cg_exec_subgraph(cg_kernel_ctx *k, const cg_graph *g, const cg_value *const *inputs,
                           size_t input_count, cg_value **outs, size_t out_count)
{
    cg_exec *parent = k->exec;
    if (!parent)
        return cg_kernel_fail(k, CG_USAGE, "subgraphs need an executor context");
    const cg_step *st = &parent->plan->steps[parent->step];
    const cg_plan *sub = NULL;
    for (size_t i = 0; i < st->sub_count; i++)
        if (st->subs[i].graph == g)
            sub = st->subs[i].plan;
    const char *gname = g && g->name ? g->name : "";
    if (!sub)
        return cg_kernel_fail(k, CG_INVALID, "subgraph '%s' is not an attribute of this node",
                              gname);
    if (g->input_count != input_count)
        return cg_kernel_fail(k, CG_INVALID, "subgraph '%s' declares %zu inputs, the op binds "
                              "%zu", gname, g->input_count, input_count);
    if (g->output_count != out_count)
        return cg_kernel_fail(k, CG_INVALID, "subgraph '%s' declares %zu outputs, the op needs "
                              "%zu", gname, g->output_count, out_count);
    cg_exec f;
    cg_status status = cg_frame_init(&f, parent->rt, sub, parent, k->err);
    if (status != CG_OK)
        return status;
    for (size_t i = 0; i < input_count; i++) {
        int32_t slot = sub->input_slots[i];
        if (inputs[i]) {
            f.vals[slot] = (cg_value *)inputs[i]; /* borrowed, never written */
            f.own[slot] = CG_OWN_NONE;
        } else if (sub->slot_kind[slot] != CG_SLOT_INIT) {
            status = cg_kernel_fail(k, CG_INVALID, "subgraph '%s' input %zu '%s' has no value",
                                    gname, i, g->inputs[i].name);
            goto done;
        }
    }
    for (size_t i = 0; i < out_count; i++)
        outs[i] = NULL;
    status = cg_frame_run(&f);
    if (status == CG_OK)
        status = cg_frame_take_outputs(&f, outs, out_count, k->err);
    if (status != CG_OK) {
        char lbl[256];
        cg_error_prefix(k->err, "%s, subgraph '%s': ",
                        cg_exec_step_label(k->node, cg_exec_node_index(k), lbl, sizeof lbl), gname);
    }
done:
    cg_frame_free(&f);
    return status;
}
