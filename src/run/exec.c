/*
 * The executor: cg_runtime_init/run/free, subgraph activation for control
 * flow kernels, and the kernel-side API of src/run/kernel.h (inputs,
 * outputs under the allocation limit, scratch, attributes, errors).
 *
 * A run binds the caller's inputs (borrowed) and the initializers (owned by
 * the plan) into a frame, runs the steps in order, drops each intermediate
 * after its last use, and moves (or copies, when not owned) the graph
 * outputs to the caller. In the main graph, a run whose input shapes match
 * the previous run's places intermediates at offsets of one arena planned
 * from that run (plan.c); any size that turns out different falls back to
 * its own allocation, so a data-dependent shape is never unsafe.
 * A runtime holds that plan and its arena, so it runs one call at a time;
 * threads that run concurrently each need their own runtime.
 *
 * With opt.node_precision, a main-graph step marked fp16 reads its float32
 * inputs rounded to fp16 (a copy in scratch, or for initializers a copy
 * rounded once at init; values from other fp16 steps are already rounded),
 * runs with k->precision telling accumulating kernels to accumulate in fp16
 * when asked, and has its float32 outputs rounded in place before anyone
 * (the observer included) sees them.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "convgate/partition.h"
#include "run/exec.h"

void cg_runtime_options_default(cg_runtime_options *opt)
{
    memset(opt, 0, sizeof *opt);
    opt->max_alloc_bytes = CG_DEFAULT_MAX_ALLOC;
}

/* --- labels ----------------------------------------------------------------- */

static const char *step_label(const cg_node *n, size_t index, char *buf, size_t cap)
{
    const char *op = n && n->op_type ? n->op_type : "?";
    if (n && n->name && n->name[0])
        snprintf(buf, cap, "node '%s' (%s)", n->name, op);
    else
        snprintf(buf, cap, "node #%zu (%s)", index, op);
    return buf;
}

static size_t ctx_node_index(const cg_kernel_ctx *k)
{
    const cg_exec *f = k->exec;
    if (f && f->plan && f->step < f->plan->step_count && f->plan->steps[f->step].node == k->node)
        return f->plan->steps[f->step].index;
    if (k->graph && k->node && k->node >= k->graph->nodes &&
        k->node < k->graph->nodes + k->graph->node_count)
        return (size_t)(k->node - k->graph->nodes);
    return 0;
}

cg_status cg_kernel_fail(cg_kernel_ctx *k, cg_status status, const char *fmt, ...)
{
    char msg[CG_ERROR_MSG_MAX], lbl[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    step_label(k->node, ctx_node_index(k), lbl, sizeof lbl);
    return cg_error_set(k->err, status, "%s: %s", lbl, msg);
}

static void format_shape(int rank, const int64_t *dims, char *buf, size_t cap)
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

static void scratch_free_all(cg_exec *f)
{
    cg_scratch *s = f->scratch;
    while (s) {
        cg_scratch *next = s->next;
        free(s);
        s = next;
    }
    f->scratch = NULL;
}

/* Frees a value according to who owns what. */
static void drop_value(cg_value *v, uint8_t own)
{
    if (!v || own == CG_OWN_NONE)
        return;
    if (own == CG_OWN_STRUCT)
        v->tensor.data = NULL;
    cg_value_free(v);
}

static void frame_drop(cg_exec *f, int32_t slot)
{
    drop_value(f->vals[slot], f->own[slot]);
    f->vals[slot] = NULL;
    f->own[slot] = CG_OWN_NONE;
}

static cg_status frame_init(cg_exec *f, cg_runtime *rt, const cg_plan *plan, cg_exec *parent,
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
    f->ins = calloc(plan->max_inputs + 1, sizeof *f->ins);
    f->outs = calloc(plan->max_outputs + 1, sizeof *f->outs);
    f->out_flags = calloc(plan->max_outputs + 1, sizeof *f->out_flags);
    if (!f->vals || !f->own || !f->ins || !f->outs || !f->out_flags) {
        free(f->vals);
        free(f->own);
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

static void frame_free(cg_exec *f)
{
    if (!f->vals)
        return;
    for (size_t s = 0; s < f->plan->slot_count; s++)
        frame_drop(f, (int32_t)s);
    scratch_free_all(f);
    free(f->vals);
    free(f->own);
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
        drop_value(f->outs[i], (f->out_flags[i] & CG_OUT_ARENA) ? CG_OWN_STRUCT : CG_OWN_FULL);
        f->outs[i] = NULL;
        f->out_flags[i] = 0;
    }
}

static double now_seconds(void);

/* Thread CPU seconds for per-node timing: on a shared machine wall time
 * counts other processes' slices; the runtime runs a model on one thread. */
static double cpu_seconds(void)
{
    struct timespec ts;
    if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts) != 0)
        return 0.0;
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Scratch owned by frame f, freed after the running step's kernel; NULL
 * above the allocation limit or when out of memory. */
static void *frame_scratch(cg_exec *f, size_t bytes)
{
    if (!f || bytes > SIZE_MAX - sizeof(cg_scratch) - 16)
        return NULL;
    if (f->rt && bytes > f->rt->opt.max_alloc_bytes)
        return NULL;
    cg_scratch *s = malloc(sizeof *s + (bytes ? bytes : 1));
    if (!s)
        return NULL;
    s->next = f->scratch;
    f->scratch = s;
    return s->data;
}

/* --- fp16 emulation (cg_node_precision) ------------------------------------------ */

static void round_f32_to_fp16(float *d, int64_t n)
{
    for (int64_t i = 0; i < n; i++)
        d[i] = cg_fp16_to_f32(cg_f32_to_fp16(d[i]));
}

/* Rounds every float32 tensor held by v in place (fp16 storage). */
static void round_value_fp16(cg_value *v)
{
    if (!v)
        return;
    if (v->kind == CG_VALUE_SEQUENCE ||
        (v->kind == CG_VALUE_OPTIONAL && v->has_value && v->optional_is_sequence)) {
        for (size_t i = 0; i < v->item_count; i++)
            round_value_fp16(v->items[i]);
        return;
    }
    if (v->kind == CG_VALUE_OPTIONAL && !v->has_value)
        return;
    if (v->tensor.dtype == CG_DTYPE_FLOAT && v->tensor.data)
        round_f32_to_fp16(v->tensor.data, v->tensor.numel);
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
    if (v->kind != CG_VALUE_TENSOR || v->tensor.dtype != CG_DTYPE_FLOAT || r.up != 0)
        return CG_OK;
    int32_t prod = p->slot_producer[r.slot];
    if (p->slot_kind[r.slot] == CG_SLOT_NODE && prod >= 0 &&
        step_precision(f, &p->steps[prod]) != CG_NODE_PREC_FP32)
        return CG_OK;
    if (p->slot_kind[r.slot] == CG_SLOT_INIT && v == p->init_values[r.slot] &&
        f->rt->prec_init && f->rt->prec_init[r.slot]) {
        f->ins[i] = f->rt->prec_init[r.slot];
        return CG_OK;
    }
    size_t bytes = cg_tensor_bytes(&v->tensor);
    cg_value *c = frame_scratch(f, sizeof *c);
    float *d = c ? frame_scratch(f, bytes) : NULL;
    if (!d) {
        char lbl[256];
        return cg_error_set(f->err, CG_NOMEM, "%s: out of memory rounding input '%s' to fp16",
                            step_label(st->node, st->index, lbl, sizeof lbl),
                            st->node->inputs[i]);
    }
    *c = *v;
    if (bytes)
        memcpy(d, v->tensor.data, bytes);
    c->tensor.data = d;
    round_f32_to_fp16(d, v->tensor.numel);
    f->ins[i] = c;
    return CG_OK;
}

static bool target_executes(const cg_target *t);

/* Rounded copies of the float32 initializers emulated nodes read. */
static cg_status prec_init_build(cg_runtime *rt, cg_error *err)
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
            target_executes(a->targets[a->partitions[pid].target]))
            return cg_error_set(err, CG_USAGE, "node %zu runs on the executing target '%s': it "
                                "cannot also be emulated in fp16", i,
                                a->targets[a->partitions[pid].target]->name);
    }
    rt->prec_init = calloc(p->slot_count + 1, sizeof *rt->prec_init);
    if (!rt->prec_init)
        return cg_error_set(err, CG_NOMEM, "out of memory preparing fp16 emulation");
    for (size_t si = 0; si < p->step_count; si++) {
        const cg_step *st = &p->steps[si];
        if (st->index >= p->graph->node_count || np[st->index] == CG_NODE_PREC_FP32)
            continue;
        for (size_t i = 0; i < st->node->input_count; i++) {
            cg_ref r = st->in[i];
            if (r.up != 0 || r.slot < 0 || p->slot_kind[r.slot] != CG_SLOT_INIT ||
                rt->prec_init[r.slot])
                continue;
            const cg_value *v = p->init_values[r.slot];
            if (!v || v->kind != CG_VALUE_TENSOR || v->tensor.dtype != CG_DTYPE_FLOAT)
                continue;
            cg_status cs = cg_value_copy(v, &rt->prec_init[r.slot], err);
            if (cs != CG_OK)
                return cs;
            round_value_fp16(rt->prec_init[r.slot]);
        }
    }
    return CG_OK;
}

static void prec_init_free(cg_runtime *rt)
{
    if (!rt->prec_init)
        return;
    for (size_t s = 0; rt->main && s < rt->main->slot_count; s++)
        cg_value_free(rt->prec_init[s]);
    free(rt->prec_init);
    rt->prec_init = NULL;
}

/* Runs step si; with release, drops the slots whose last use it is (the
 * plan's liveness; a schedule applies its own). */
static cg_status run_step(cg_exec *f, size_t si, bool release)
{
    const cg_plan *p = f->plan;
    const cg_step *st = &p->steps[si];
    const cg_node *n = st->node;
    cg_error *err = f->err;
    char lbl[256];
    f->step = si;
    for (size_t i = 0; i < n->input_count; i++) {
        if (st->in[i].slot < 0) {
            f->ins[i] = NULL;
            continue;
        }
        f->ins[i] = frame_get(f, st->in[i]);
        if (!f->ins[i])
            return cg_error_set(err, CG_RUNTIME, "%s: input '%s' has no value (released "
                                "early or never produced)",
                                step_label(n, st->index, lbl, sizeof lbl), n->inputs[i]);
    }
    cg_node_precision prec = step_precision(f, st);
    for (size_t i = 0; prec != CG_NODE_PREC_FP32 && i < n->input_count; i++) {
        if (!f->ins[i])
            continue;
        cg_status rs = emulated_input(f, st, i);
        if (rs != CG_OK) {
            scratch_free_all(f);
            return rs;
        }
    }
    for (size_t i = 0; i < n->output_count; i++) {
        f->outs[i] = NULL;
        f->out_flags[i] = 0;
    }
    cg_kernel_ctx k = {n, p->graph, st->since, st->opset, f->ins, n->input_count,
                       f->outs, n->output_count, f, err,
                       prec == CG_NODE_PREC_FP16_ACC16 ? CG_KPREC_FP16_ACC16 : CG_KPREC_FP32};
    /* per-node timing only when asked: two clock reads per step otherwise wasted */
    double *timing = f->is_main ? f->rt->opt.node_seconds : NULL;
    double t_start = timing ? cpu_seconds() : 0.0;
    cg_status status = st->fn(&k);
    if (timing)
        timing[st->index] += cpu_seconds() - t_start;
    scratch_free_all(f);
    if (status == CG_OK) {
        for (size_t i = 0; i < n->output_count; i++)
            if (st->out[i] >= 0 && !f->outs[i]) {
                status = cg_error_set(err, CG_RUNTIME, "%s: kernel did not produce output %zu "
                                      "'%s'", step_label(n, st->index, lbl, sizeof lbl), i,
                                      n->outputs[i]);
                break;
            }
    } else if (err && err->status == CG_OK) {
        cg_error_set(err, status, "%s: kernel failed (%s)",
                     step_label(n, st->index, lbl, sizeof lbl), cg_status_name(status));
    }
    if (status != CG_OK) {
        drop_step_outputs(f, n->output_count);
        return status;
    }

    cg_runtime *rt = f->rt;
    for (size_t i = 0; i < n->output_count; i++) {
        int32_t slot = st->out[i];
        if (slot < 0)
            continue;
        cg_value *v = f->outs[i];
        f->vals[slot] = v;
        f->own[slot] = (f->out_flags[i] & CG_OUT_ARENA) ? CG_OWN_STRUCT : CG_OWN_FULL;
        if (prec != CG_NODE_PREC_FP32)
            round_value_fp16(v);
        if (f->recording && (f->out_flags[i] & CG_OUT_PLANNABLE) &&
            v->kind == CG_VALUE_TENSOR && v->tensor.dtype != CG_DTYPE_STRING)
            rt->record_bytes[slot] = cg_tensor_bytes(&v->tensor);
        f->outs[i] = NULL;
    }
    drop_step_outputs(f, n->output_count); /* unnamed outputs */

    if (f->is_main && rt->opt.observe) {
        for (size_t i = 0; i < n->output_count; i++) {
            int32_t slot = st->out[i];
            if (slot < 0)
                continue;
            status = rt->opt.observe(rt->opt.observe_user, n, n->outputs[i], f->vals[slot]);
            if (status != CG_OK)
                return cg_error_set(err, status, "%s: the observer stopped the run at output "
                                    "'%s'", step_label(n, st->index, lbl, sizeof lbl),
                                    n->outputs[i]);
        }
    }
    for (size_t r = 0; release && r < st->release_count; r++)
        frame_drop(f, st->release[r]);
    return CG_OK;
}

static double now_seconds(void)
{
    struct timespec ts;
    if (clock_gettime(CLOCK_MONOTONIC, &ts) != 0)
        return 0.0;
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
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
    } else if (err && err->status == CG_OK) {
        cg_error_set(err, st, "partition %d (%s) failed (%s)", rp->id, rp->target->name,
                     cg_status_name(st));
    } else {
        cg_error_prefix(err, "partition %d (%s, %zu nodes): ", rp->id, rp->target->name,
                        d->node_count);
    }
    if (st != CG_OK) {
        for (size_t i = 0; i < d->output_count; i++) {
            cg_value_free(rp->outs[i]);
            rp->outs[i] = NULL;
        }
        return st;
    }
    for (size_t i = 0; i < d->output_count; i++) {
        int32_t slot = rp->out_slots[i];
        drop_value(f->vals[slot], f->own[slot]);
        f->vals[slot] = rp->outs[i];
        f->own[slot] = CG_OWN_FULL;
        rp->outs[i] = NULL;
    }
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

static cg_status frame_run(cg_exec *f)
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
static cg_status frame_take_outputs(cg_exec *f, cg_value **outs, size_t count, cg_error *err)
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
        if (r.up == 0 && f->own[r.slot] == CG_OWN_FULL) {
            /* The pointer stays in the slot so a repeated output can copy it. */
            f->own[r.slot] = CG_OWN_NONE;
            outs[i] = v;
            continue;
        }
        st = cg_value_copy(v, &outs[i], err);
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

/* --- schedule with an assignment ------------------------------------------------ */

static void schedule_free(cg_runtime *rt)
{
    for (size_t i = 0; i < rt->part_count; i++) {
        cg_rt_partition *rp = &rt->parts[i];
        if (rp->state)
            rp->target->vt->release(rp->state);
        free(rp->in_slots);
        free(rp->out_slots);
        free(rp->out_nodes);
        free(rp->ins);
        free(rp->outs);
    }
    free(rt->parts);
    for (size_t u = 0; u < rt->unit_count; u++)
        free(rt->units[u].release);
    free(rt->units);
    free(rt->slot_first);
    free(rt->slot_last);
    rt->parts = NULL;
    rt->units = NULL;
    rt->slot_first = rt->slot_last = NULL;
    rt->part_count = rt->unit_count = 0;
}

static bool target_executes(const cg_target *t)
{
    return t && t->kind == CG_TARGET_EXECUTING && t->vt && t->vt->compile && t->vt->run &&
           t->vt->release;
}

/* Main-graph slots node i reads: its inputs and its subgraphs' captures. */
static size_t step_reads(const cg_plan *p, size_t i, int32_t *out)
{
    const cg_step *st = &p->steps[i];
    size_t n = 0;
    for (size_t k = 0; k < st->node->input_count; k++)
        if (st->in[k].up == 0 && st->in[k].slot >= 0)
            out[n++] = st->in[k].slot;
    for (size_t k = 0; k < st->sub_count; k++)
        for (size_t c = 0; c < st->subs[k].plan->capture_count; c++) {
            int32_t s = cg_name_map_get(&p->names, st->subs[k].plan->captures[c]);
            if (s >= 0)
                out[n++] = s;
        }
    return n;
}

static size_t step_read_bound(const cg_plan *p, size_t i)
{
    const cg_step *st = &p->steps[i];
    size_t n = st->node->input_count;
    for (size_t k = 0; k < st->sub_count; k++)
        n += st->subs[k].plan->capture_count;
    return n;
}

/* Min-heap of unit indices keyed by their first node. */
static void heap_push(int32_t *h, size_t *n, const cg_rt_unit *units, int32_t u)
{
    size_t i = (*n)++;
    h[i] = u;
    while (i > 0) {
        size_t parent = (i - 1) / 2;
        if (units[h[parent]].first_node <= units[h[i]].first_node)
            break;
        int32_t t = h[parent];
        h[parent] = h[i];
        h[i] = t;
        i = parent;
    }
}

static int32_t heap_pop(int32_t *h, size_t *n, const cg_rt_unit *units)
{
    int32_t top = h[0];
    h[0] = h[--(*n)];
    size_t i = 0;
    for (;;) {
        size_t l = 2 * i + 1, r = l + 1, m = i;
        if (l < *n && units[h[l]].first_node < units[h[m]].first_node)
            m = l;
        if (r < *n && units[h[r]].first_node < units[h[m]].first_node)
            m = r;
        if (m == i)
            break;
        int32_t t = h[m];
        h[m] = h[i];
        h[i] = t;
        i = m;
    }
    return top;
}

/* Compiles one executing partition and resolves its slots. */
static cg_status partition_prepare(cg_runtime *rt, const cg_assignment *a, size_t pi,
                                   cg_rt_partition *rp, cg_error *err)
{
    const cg_plan *p = rt->main;
    const cg_partition *part = &a->partitions[pi];
    const cg_target *t = a->targets[part->target];
    rp->id = part->id;
    rp->target = t;
    cg_partition_desc *d = &rp->desc;
    d->model = rt->model;
    d->graph = p->graph;
    d->nodes = part->nodes;
    d->node_count = part->node_count;
    d->inputs = (const char *const *)part->inputs;
    d->input_count = part->input_count;
    d->outputs = (const char *const *)part->outputs;
    d->output_count = part->output_count;
    d->types = rt->opt.types;
    rp->in_slots = calloc(d->input_count + 1, sizeof *rp->in_slots);
    rp->out_slots = calloc(d->output_count + 1, sizeof *rp->out_slots);
    rp->out_nodes = calloc(d->output_count + 1, sizeof *rp->out_nodes);
    rp->ins = calloc(d->input_count + 1, sizeof *rp->ins);
    rp->outs = calloc(d->output_count + 1, sizeof *rp->outs);
    if (!rp->in_slots || !rp->out_slots || !rp->out_nodes || !rp->ins || !rp->outs)
        return cg_error_set(err, CG_NOMEM, "out of memory preparing partition %d", part->id);
    for (size_t i = 0; i < d->input_count; i++) {
        rp->in_slots[i] = cg_name_map_get(&p->names, d->inputs[i]);
        if (rp->in_slots[i] < 0)
            return cg_error_set(err, CG_INVALID, "partition %d: input '%s' is not a value of "
                                "the main graph", part->id, d->inputs[i]);
    }
    for (size_t i = 0; i < d->output_count; i++) {
        int32_t s = cg_name_map_get(&p->names, d->outputs[i]);
        if (s < 0 || p->slot_kind[s] != CG_SLOT_NODE ||
            a->partition_of[p->steps[p->slot_producer[s]].index] != part->id)
            return cg_error_set(err, CG_INVALID, "partition %d: output '%s' is not produced by "
                                "one of its nodes", part->id, d->outputs[i]);
        rp->out_slots[i] = s;
        rp->out_nodes[i] = p->steps[p->slot_producer[s]].node;
    }
    cg_status st = t->vt->compile(t, d, &rp->state, err);
    if (st != CG_OK) {
        if (err && err->status == CG_OK)
            cg_error_set(err, st, "compile failed");
        cg_error_prefix(err, "compiling partition %d (%s, %zu nodes): ", part->id, t->name,
                        d->node_count);
    }
    return st;
}

/* Compiles the executing partitions of rt->opt.assignment and orders the
 * units (reference steps and partitions) topologically, earliest model
 * position first, then computes liveness in schedule positions. A
 * partition is convex (the assignment's partition graph is acyclic), so it
 * runs as one unit once all its inputs exist. */
static cg_status schedule_build(cg_runtime *rt, cg_error *err)
{
    const cg_assignment *a = rt->opt.assignment;
    const cg_plan *p = rt->main;
    size_t n = p->step_count;
    cg_status st = CG_OK;
    int32_t *part_index = NULL, *unit_of = NULL, *pos = NULL, *reads = NULL, *heap = NULL;
    size_t *indeg = NULL, *eoff = NULL;
    int32_t *edges = NULL;
    size_t *rcount = NULL;
    cg_rt_unit *units = NULL;
    size_t unit_count = 0, max_reads = 1;

    if (a->model != rt->model || a->graph != p->graph || p->step_count != p->graph->node_count)
        return cg_error_set(err, CG_USAGE, "the assignment was made for another model");
    part_index = malloc((a->partition_count + 1) * sizeof *part_index);
    unit_of = malloc((n + 1) * sizeof *unit_of);
    if (!part_index || !unit_of)
        goto nomem;
    size_t exec_parts = 0;
    for (size_t i = 0; i < a->partition_count; i++) {
        const cg_partition *part = &a->partitions[i];
        bool ok = part->target >= 0 && (size_t)part->target < a->target_count;
        part_index[i] = ok && target_executes(a->targets[part->target]) ? (int32_t)exec_parts++
                                                                        : -1;
        for (size_t k = 0; ok && k < part->node_count; k++)
            ok = part->nodes[k] < n && a->partition_of[part->nodes[k]] == part->id;
        if (!ok || part->id != (int)i) {
            st = cg_error_set(err, CG_USAGE, "assignment partition %zu is inconsistent (target "
                              "or node indices)", i);
            goto done;
        }
    }
    rt->parts = calloc(exec_parts + 1, sizeof *rt->parts);
    if (!rt->parts)
        goto nomem;
    for (size_t i = 0; i < a->partition_count; i++) {
        if (part_index[i] < 0)
            continue;
        cg_rt_partition *rp = &rt->parts[rt->part_count++];
        if ((st = partition_prepare(rt, a, i, rp, err)) != CG_OK)
            goto done;
    }

    /* units: one per reference node, one per executing partition */
    units = calloc(n + 1, sizeof *units);
    if (!units)
        goto nomem;
    for (size_t i = 0; i < n; i++) {
        int pid = a->partition_of[i];
        int32_t rpi = pid >= 0 ? part_index[pid] : -1;
        unit_of[i] = -1;
        if (rpi >= 0) {
            /* partition nodes are listed in topological order: the first one
             * makes the unit, the rest join it */
            const cg_partition *part = &a->partitions[pid];
            if (part->nodes[0] != i) {
                unit_of[i] = unit_of[part->nodes[0]];
                continue;
            }
            units[unit_count].step = -1;
            units[unit_count].part = rpi;
        } else {
            units[unit_count].step = (int32_t)i;
            units[unit_count].part = -1;
        }
        units[unit_count].first_node = (int32_t)i;
        unit_of[i] = (int32_t)unit_count++;
    }
    for (size_t i = 0; i < n; i++)
        if (unit_of[i] < 0) {
            st = cg_error_set(err, CG_USAGE, "assignment partition of node %zu does not list "
                              "its nodes in topological order", i);
            goto done;
        }

    /* edges producer unit -> consumer unit (CSR), in-degrees */
    for (size_t i = 0; i < n; i++) {
        size_t b = step_read_bound(p, i);
        if (b > max_reads)
            max_reads = b;
    }
    reads = malloc(max_reads * sizeof *reads);
    indeg = calloc(unit_count + 1, sizeof *indeg);
    eoff = calloc(unit_count + 2, sizeof *eoff);
    if (!reads || !indeg || !eoff)
        goto nomem;
    for (int pass = 0; pass < 2; pass++) {
        for (size_t i = 0; i < n; i++) {
            size_t nr = step_reads(p, i, reads);
            for (size_t k = 0; k < nr; k++) {
                int32_t prod = p->slot_producer[reads[k]];
                if (p->slot_kind[reads[k]] != CG_SLOT_NODE || prod < 0)
                    continue;
                int32_t from = unit_of[prod], to = unit_of[i];
                if (from == to)
                    continue;
                if (pass == 0) {
                    eoff[from + 1]++;
                } else {
                    edges[eoff[from] + rcount[from]++] = to;
                    indeg[to]++;
                }
            }
        }
        if (pass == 0) {
            for (size_t u = 0; u < unit_count; u++)
                eoff[u + 1] += eoff[u];
            edges = malloc((eoff[unit_count] + 1) * sizeof *edges);
            rcount = calloc(unit_count + 1, sizeof *rcount);
            if (!edges || !rcount)
                goto nomem;
        }
    }

    /* Kahn, earliest model position first */
    heap = malloc((unit_count + 1) * sizeof *heap);
    pos = malloc((unit_count + 1) * sizeof *pos);
    rt->units = calloc(unit_count + 1, sizeof *rt->units);
    if (!heap || !pos || !rt->units)
        goto nomem;
    size_t hn = 0, placed = 0;
    for (size_t u = 0; u < unit_count; u++)
        if (!indeg[u])
            heap_push(heap, &hn, units, (int32_t)u);
    while (hn) {
        int32_t u = heap_pop(heap, &hn, units);
        pos[u] = (int32_t)placed;
        rt->units[placed++] = units[u];
        for (size_t e = eoff[u]; e < eoff[u + 1]; e++)
            if (--indeg[edges[e]] == 0)
                heap_push(heap, &hn, units, edges[e]);
    }
    rt->unit_count = placed;
    if (placed != unit_count) {
        st = cg_error_set(err, CG_USAGE, "the assignment's partitions form a cycle (%zu of %zu "
                          "steps could be ordered)", placed, unit_count);
        goto done;
    }

    /* liveness in schedule positions */
    rt->slot_first = malloc((p->slot_count + 1) * sizeof *rt->slot_first);
    rt->slot_last = malloc((p->slot_count + 1) * sizeof *rt->slot_last);
    if (!rt->slot_first || !rt->slot_last)
        goto nomem;
    for (size_t s = 0; s < p->slot_count; s++) {
        int32_t prod = p->slot_producer[s];
        bool node = p->slot_kind[s] == CG_SLOT_NODE && prod >= 0;
        rt->slot_first[s] = rt->slot_last[s] = node ? pos[unit_of[prod]] : -1;
    }
    for (size_t i = 0; i < n; i++) {
        size_t nr = step_reads(p, i, reads);
        int32_t at = pos[unit_of[i]];
        for (size_t k = 0; k < nr; k++)
            if (rt->slot_last[reads[k]] >= 0 && rt->slot_last[reads[k]] < at)
                rt->slot_last[reads[k]] = at;
    }
    for (size_t u = 0; u < unit_count; u++)
        rcount[u] = 0;
    for (size_t s = 0; s < p->slot_count; s++)
        if (rt->slot_last[s] >= 0 && !p->slot_is_output[s])
            rcount[rt->slot_last[s]]++;
    for (size_t u = 0; u < unit_count; u++) {
        if (!rcount[u])
            continue;
        rt->units[u].release = malloc(rcount[u] * sizeof *rt->units[u].release);
        if (!rt->units[u].release)
            goto nomem;
    }
    for (size_t s = 0; s < p->slot_count; s++)
        if (rt->slot_last[s] >= 0 && !p->slot_is_output[s]) {
            cg_rt_unit *un = &rt->units[rt->slot_last[s]];
            un->release[un->release_count++] = (int32_t)s;
        }
    goto done;
nomem:
    st = cg_error_set(err, CG_NOMEM, "out of memory scheduling the assignment");
done:
    free(part_index);
    free(unit_of);
    free(pos);
    free(reads);
    free(heap);
    free(indeg);
    free(eoff);
    free(edges);
    free(rcount);
    free(units);
    return st;
}

size_t cg_runtime_partition_count(const cg_runtime *rt)
{
    return rt ? rt->part_count : 0;
}

cg_status cg_runtime_partition_info_get(const cg_runtime *rt, size_t i,
                                        cg_runtime_partition_info *out, cg_error *err)
{
    if (!rt || i >= rt->part_count)
        return cg_error_set(err, CG_USAGE, "partition %zu out of range (%zu executed)", i,
                            rt ? rt->part_count : (size_t)0);
    const cg_rt_partition *rp = &rt->parts[i];
    out->id = rp->id;
    out->target = rp->target->name;
    out->node_count = rp->desc.node_count;
    out->state = rp->state;
    out->runs = rp->runs;
    out->seconds = rp->seconds;
    return CG_OK;
}

/* --- runtime ------------------------------------------------------------------ */

cg_status cg_runtime_init(const cg_model *model, const cg_runtime_options *opt,
                          cg_runtime **out, cg_error *err)
{
    *out = NULL;
    if (!model || !model->graph)
        return cg_error_set(err, CG_USAGE, "cg_runtime_init: model has no graph");
    cg_runtime *rt = calloc(1, sizeof *rt);
    if (!rt)
        return cg_error_set(err, CG_NOMEM, "out of memory creating the runtime");
    rt->model = model;
    if (opt)
        rt->opt = *opt;
    else
        cg_runtime_options_default(&rt->opt);
    if (!rt->opt.max_alloc_bytes)
        rt->opt.max_alloc_bytes = CG_DEFAULT_MAX_ALLOC;
    cg_status st;
    /* A duplicate kernel row is a registry bug, not the model's: the first
     * row wins and the registry unit test reports it. */
    cg_error reg_err;
    cg_error_clear(&reg_err);
    if (cg_registry_index_init(&rt->registry, &reg_err) == CG_NOMEM) {
        st = cg_error_set(err, CG_NOMEM, "%s", reg_err.msg);
        goto fail;
    }
    st = cg_plan_build(rt, model->graph, NULL, 0, &rt->main, err);
    if (st != CG_OK)
        goto fail;
    rt->record_bytes = calloc(rt->main->slot_count + 1, sizeof *rt->record_bytes);
    if (!rt->record_bytes) {
        st = cg_error_set(err, CG_NOMEM, "out of memory creating the runtime");
        goto fail;
    }
    if (rt->opt.assignment && (st = schedule_build(rt, err)) != CG_OK)
        goto fail;
    if (rt->opt.node_precision && (st = prec_init_build(rt, err)) != CG_OK)
        goto fail;
    *out = rt;
    return CG_OK;
fail:
    cg_runtime_free(rt);
    return st;
}

void cg_runtime_free(cg_runtime *rt)
{
    if (!rt)
        return;
    schedule_free(rt);
    prec_init_free(rt);
    cg_plan_free(rt->main);
    cg_mem_plan_clear(&rt->mem);
    cg_registry_index_free(&rt->registry);
    free(rt->record_bytes);
    free(rt);
}

void cg_runtime_free_outputs(cg_named_value *outputs, size_t count)
{
    if (!outputs)
        return;
    for (size_t i = 0; i < count; i++)
        cg_value_free(outputs[i].value);
    free(outputs);
}

static const char *type_kind_name(cg_type_kind k)
{
    switch (k) {
    case CG_TYPE_TENSOR: return "tensor";
    case CG_TYPE_SEQUENCE: return "sequence";
    case CG_TYPE_MAP: return "map";
    case CG_TYPE_OPTIONAL: return "optional";
    case CG_TYPE_SPARSE_TENSOR: return "sparse tensor";
    default: return "untyped";
    }
}

static const char *value_kind_name(cg_value_kind k)
{
    switch (k) {
    case CG_VALUE_TENSOR: return "tensor";
    case CG_VALUE_SEQUENCE: return "sequence";
    default: return "optional";
    }
}

/* A fed input against its declared type: kind, dtype, rank, fixed dims. */
static cg_status check_input(const cg_value_info *vi, const cg_value *v, cg_error *err)
{
    const cg_type *t = vi->type;
    if (!t || t->kind == CG_TYPE_NONE || t->kind == CG_TYPE_OPTIONAL)
        return CG_OK;
    if ((t->kind == CG_TYPE_TENSOR && v->kind != CG_VALUE_TENSOR) ||
        (t->kind == CG_TYPE_SEQUENCE && v->kind != CG_VALUE_SEQUENCE))
        return cg_error_set(err, CG_INVALID, "input '%s': expected a %s, got a %s", vi->name,
                            type_kind_name(t->kind), value_kind_name(v->kind));
    if (t->kind != CG_TYPE_TENSOR)
        return CG_OK;
    const cg_tensor *x = &v->tensor;
    if (t->has_elem_type && t->elem_type != 0 && t->elem_type != (int32_t)x->dtype)
        return cg_error_set(err, CG_INVALID, "input '%s': expected element type %s, got %s",
                            vi->name,
                            cg_dtype_valid(t->elem_type) ? cg_dtype_name((cg_dtype)t->elem_type)
                                                         : "unknown",
                            cg_dtype_name(x->dtype));
    if (!t->shape)
        return CG_OK;
    char got[256];
    format_shape(x->rank, x->dims, got, sizeof got);
    if (t->shape->rank != (size_t)x->rank)
        return cg_error_set(err, CG_INVALID, "input '%s': expected rank %zu, got shape %s",
                            vi->name, t->shape->rank, got);
    for (size_t d = 0; d < t->shape->rank; d++) {
        const cg_dim *dim = &t->shape->dims[d];
        if (dim->has_value && dim->value >= 0 && dim->value != x->dims[d])
            return cg_error_set(err, CG_INVALID, "input '%s': dimension %zu must be %lld, got "
                                "shape %s", vi->name, d, (long long)dim->value, got);
    }
    return CG_OK;
}

/* Input shapes that key the memory plan; false when an input is not a
 * tensor (sequence contents are not captured by a shape). */
static bool build_signature(const cg_exec *f, int64_t **out, size_t *len)
{
    const cg_plan *p = f->plan;
    size_t n = 0, cap = p->graph->input_count * (CG_MAX_RANK + 2) + 1;
    int64_t *sig = malloc(cap * sizeof *sig);
    if (!sig)
        return false;
    for (size_t i = 0; i < p->graph->input_count; i++) {
        const cg_value *v = f->vals[p->input_slots[i]];
        if (!v || v->kind != CG_VALUE_TENSOR) {
            free(sig);
            return false;
        }
        sig[n++] = v->tensor.dtype;
        sig[n++] = v->tensor.rank;
        for (int d = 0; d < v->tensor.rank; d++)
            sig[n++] = v->tensor.dims[d];
    }
    *out = sig;
    *len = n;
    return true;
}

cg_status cg_runtime_run(cg_runtime *rt, const cg_named_value *inputs, size_t input_count,
                         cg_named_value **outputs, size_t *output_count, cg_error *err)
{
    cg_error local;
    if (!err) {
        cg_error_clear(&local);
        err = &local;
    }
    *outputs = NULL;
    *output_count = 0;
    if (!rt)
        return cg_error_set(err, CG_USAGE, "cg_runtime_run: no runtime");
    const cg_plan *p = rt->main;
    const cg_graph *g = p->graph;
    cg_exec f;
    cg_value **outs = NULL;
    cg_named_value *named = NULL;
    int64_t *sig = NULL;
    size_t sig_len = 0;
    bool *fed = NULL;
    cg_status st = frame_init(&f, rt, p, NULL, err);
    if (st != CG_OK)
        return st;
    f.is_main = true;
    fed = calloc(g->input_count + 1, sizeof *fed);
    outs = calloc(g->output_count + 1, sizeof *outs);
    if (!fed || !outs) {
        st = cg_error_set(err, CG_NOMEM, "out of memory starting a run");
        goto done;
    }

    for (size_t j = 0; j < input_count; j++) {
        const char *name = inputs[j].name;
        size_t i = 0;
        while (i < g->input_count && !(name && strcmp(g->inputs[i].name, name) == 0))
            i++;
        if (i == g->input_count) {
            st = cg_error_set(err, CG_USAGE, "the model has no input named '%s'",
                              name ? name : "(null)");
            goto done;
        }
        if (fed[i] || !inputs[j].value) {
            st = cg_error_set(err, CG_USAGE, "input '%s' is %s", name,
                              fed[i] ? "given twice" : "NULL");
            goto done;
        }
        st = check_input(&g->inputs[i], inputs[j].value, err);
        if (st != CG_OK)
            goto done;
        fed[i] = true;
        f.vals[p->input_slots[i]] = inputs[j].value;
        f.own[p->input_slots[i]] = CG_OWN_NONE;
    }
    for (size_t i = 0; i < g->input_count; i++) {
        if (!fed[i] && p->slot_kind[p->input_slots[i]] != CG_SLOT_INIT) {
            st = cg_error_set(err, CG_USAGE, "input '%s' was not given", g->inputs[i].name);
            goto done;
        }
    }

    if (build_signature(&f, &sig, &sig_len)) {
        if (rt->mem.valid && rt->mem.signature_len == sig_len &&
            memcmp(rt->mem.signature, sig, sig_len * sizeof *sig) == 0) {
            f.use_arena = true;
        } else {
            f.recording = true;
            memset(rt->record_bytes, 0, (p->slot_count + 1) * sizeof *rt->record_bytes);
        }
    }

    st = frame_run(&f);
    if (st != CG_OK)
        goto done;
    st = frame_take_outputs(&f, outs, g->output_count, err);
    if (st != CG_OK)
        goto done;
    named = calloc(g->output_count + 1, sizeof *named);
    if (!named) {
        for (size_t i = 0; i < g->output_count; i++)
            cg_value_free(outs[i]);
        st = cg_error_set(err, CG_NOMEM, "out of memory returning outputs");
        goto done;
    }
    for (size_t i = 0; i < g->output_count; i++) {
        named[i].name = g->outputs[i].name;
        named[i].value = outs[i];
    }
    *outputs = named;
    *output_count = g->output_count;
    if (f.recording) /* a plan that cannot be built just means no arena */
        (void)cg_mem_plan_build(rt, sig, sig_len, NULL);
done:
    frame_free(&f);
    free(fed);
    free(outs);
    free(sig);
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
    cg_status status = frame_init(&f, parent->rt, sub, parent, k->err);
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
    status = frame_run(&f);
    if (status == CG_OK)
        status = frame_take_outputs(&f, outs, out_count, k->err);
    if (status != CG_OK) {
        char lbl[256];
        cg_error_prefix(k->err, "%s, subgraph '%s': ",
                        step_label(k->node, ctx_node_index(k), lbl, sizeof lbl), gname);
    }
done:
    frame_free(&f);
    return status;
}

/* --- kernel API: inputs -------------------------------------------------------- */

const cg_tensor *cg_kernel_input(const cg_kernel_ctx *k, size_t i)
{
    if (i >= k->input_count || !k->inputs[i] || k->inputs[i]->kind != CG_VALUE_TENSOR)
        return NULL;
    return &k->inputs[i]->tensor;
}

cg_status cg_kernel_require(cg_kernel_ctx *k, size_t i, const cg_tensor **out)
{
    *out = cg_kernel_input(k, i);
    if (*out)
        return CG_OK;
    if (i < k->input_count && k->inputs[i])
        return cg_kernel_fail(k, CG_INVALID, "input %zu '%s' must be a tensor, got a %s", i,
                              k->node->inputs[i], value_kind_name(k->inputs[i]->kind));
    return cg_kernel_fail(k, CG_INVALID, "required input %zu is missing", i);
}

/* --- kernel API: outputs --------------------------------------------------------- */

cg_status cg_exec_check_alloc(cg_kernel_ctx *k, cg_dtype dtype, int rank, const int64_t *dims,
                              size_t *bytes)
{
    char shape[256];
    if (rank < 0 || rank > CG_MAX_RANK)
        return cg_kernel_fail(k, CG_UNSUPPORTED, "output rank %d exceeds the runtime maximum "
                              "%d", rank, CG_MAX_RANK);
    for (int d = 0; d < rank; d++) {
        if (dims[d] < 0) {
            format_shape(rank, dims, shape, sizeof shape);
            return cg_kernel_fail(k, CG_INVALID, "output shape %s has a negative dimension",
                                  shape);
        }
    }
    size_t limit = k->exec ? k->exec->rt->opt.max_alloc_bytes : CG_DEFAULT_MAX_ALLOC;
    int64_t numel;
    if (!cg_shape_numel(rank, dims, &numel)) {
        format_shape(rank, dims, shape, sizeof shape);
        return cg_kernel_fail(k, CG_LIMIT, "output shape %s (%s) has more elements than int64 "
                              "can count", shape, cg_dtype_name(dtype));
    }
    if (dtype == CG_DTYPE_UNDEFINED || (dtype != CG_DTYPE_STRING && cg_dtype_size(dtype) == 0))
        return cg_kernel_fail(k, CG_UNSUPPORTED, "output element type %s is not supported",
                              cg_dtype_name(dtype));
    size_t b;
    if (!cg_tensor_byte_size(dtype, numel, &b) || b > limit) {
        format_shape(rank, dims, shape, sizeof shape);
        return cg_kernel_fail(k, CG_LIMIT, "output shape %s (%s) needs %lld x %zu bytes, over "
                              "the allocation limit of %zu bytes", shape, cg_dtype_name(dtype),
                              (long long)numel,
                              dtype == CG_DTYPE_STRING ? sizeof(char *) : cg_dtype_size(dtype),
                              limit);
    }
    *bytes = b;
    return CG_OK;
}

/* Replaces whatever output i held. */
static void clear_output(cg_kernel_ctx *k, size_t i)
{
    uint8_t flags = k->exec ? k->exec->out_flags[i] : 0;
    drop_value(k->outputs[i], (flags & CG_OUT_ARENA) ? CG_OWN_STRUCT : CG_OWN_FULL);
    k->outputs[i] = NULL;
    if (k->exec)
        k->exec->out_flags[i] = 0;
}

cg_status cg_kernel_output(cg_kernel_ctx *k, size_t i, cg_dtype dtype, int rank,
                           const int64_t *dims, cg_tensor **out)
{
    *out = NULL;
    if (i >= k->output_count)
        return cg_kernel_fail(k, CG_INVALID, "output %zu requested but the node has %zu "
                              "outputs", i, k->output_count);
    size_t bytes;
    cg_status st = cg_exec_check_alloc(k, dtype, rank, dims, &bytes);
    if (st != CG_OK)
        return st;
    clear_output(k, i);
    cg_exec *f = k->exec;
    uint8_t *arena_at = NULL;
    if (f && f->use_arena && dtype != CG_DTYPE_STRING) {
        int32_t slot = f->plan->steps[f->step].out[i];
        const cg_mem_plan *m = &f->rt->mem;
        if (slot >= 0 && m->slot_offset[slot] != SIZE_MAX && bytes > 0 &&
            bytes <= m->slot_bytes[slot])
            arena_at = m->arena + m->slot_offset[slot];
    }
    cg_value *v = calloc(1, sizeof *v);
    if (!v)
        return cg_kernel_fail(k, CG_NOMEM, "out of memory allocating output %zu", i);
    if (arena_at) {
        memset(arena_at, 0, bytes);
        v->tensor.data = arena_at;
    } else {
        v->tensor.data = calloc(1, bytes ? bytes : 1);
        if (!v->tensor.data) {
            free(v);
            return cg_kernel_fail(k, CG_NOMEM, "out of memory allocating %zu bytes for output "
                                  "%zu", bytes, i);
        }
    }
    v->kind = CG_VALUE_TENSOR;
    v->has_value = true;
    v->seq_dtype = dtype;
    v->tensor.dtype = dtype;
    v->tensor.rank = rank;
    int64_t numel = 1;
    for (int d = 0; d < rank; d++) {
        v->tensor.dims[d] = dims[d];
        numel *= dims[d]; /* checked by cg_exec_check_alloc */
    }
    v->tensor.numel = numel;
    k->outputs[i] = v;
    if (f)
        f->out_flags[i] = (uint8_t)(CG_OUT_PLANNABLE | (arena_at ? CG_OUT_ARENA : 0));
    *out = &v->tensor;
    return CG_OK;
}

cg_status cg_kernel_output_value(cg_kernel_ctx *k, size_t i, cg_value **out)
{
    *out = NULL;
    if (i >= k->output_count)
        return cg_kernel_fail(k, CG_INVALID, "output %zu requested but the node has %zu "
                              "outputs", i, k->output_count);
    cg_value *v = calloc(1, sizeof *v);
    if (!v)
        return cg_kernel_fail(k, CG_NOMEM, "out of memory allocating output %zu", i);
    clear_output(k, i);
    k->outputs[i] = v;
    *out = v;
    return CG_OK;
}

cg_status cg_kernel_set_output(cg_kernel_ctx *k, size_t i, cg_value *v)
{
    if (i >= k->output_count) {
        cg_value_free(v);
        return cg_kernel_fail(k, CG_INVALID, "output %zu requested but the node has %zu "
                              "outputs", i, k->output_count);
    }
    clear_output(k, i);
    k->outputs[i] = v;
    return CG_OK;
}

cg_status cg_value_new_tensor(cg_kernel_ctx *k, cg_dtype dtype, int rank, const int64_t *dims,
                              cg_value **out)
{
    *out = NULL;
    size_t bytes;
    cg_status st = cg_exec_check_alloc(k, dtype, rank, dims, &bytes);
    if (st != CG_OK)
        return st;
    st = cg_value_alloc_tensor(dtype, rank, dims, out, k->err);
    if (st != CG_OK) {
        char lbl[256];
        cg_error_prefix(k->err, "%s: ", step_label(k->node, ctx_node_index(k), lbl, sizeof lbl));
    }
    return st;
}

cg_status cg_value_clone(cg_kernel_ctx *k, const cg_value *src, cg_value **out)
{
    cg_status st = cg_value_copy(src, out, k->err);
    if (st != CG_OK) {
        char lbl[256];
        cg_error_prefix(k->err, "%s: ", step_label(k->node, ctx_node_index(k), lbl, sizeof lbl));
    }
    return st;
}

void *cg_kernel_scratch(cg_kernel_ctx *k, size_t bytes)
{
    return frame_scratch(k->exec, bytes);
}

/* --- kernel API: attributes -------------------------------------------------- */

const cg_attr *cg_kernel_attr(const cg_kernel_ctx *k, const char *name)
{
    const cg_node *n = k->node;
    for (size_t i = 0; i < n->attr_count; i++)
        if (n->attrs[i].name && strcmp(n->attrs[i].name, name) == 0)
            return &n->attrs[i];
    return NULL;
}

int64_t cg_attr_int(const cg_kernel_ctx *k, const char *name, int64_t dflt)
{
    const cg_attr *a = cg_kernel_attr(k, name);
    if (!a)
        return dflt;
    if (a->type == CG_ATTR_INT || (!a->has_type && a->has_i))
        return a->i;
    return dflt;
}

float cg_attr_float(const cg_kernel_ctx *k, const char *name, float dflt)
{
    const cg_attr *a = cg_kernel_attr(k, name);
    if (!a)
        return dflt;
    if (a->type == CG_ATTR_FLOAT || (!a->has_type && a->has_f))
        return a->f;
    if (a->type == CG_ATTR_INT)
        return (float)a->i;
    return dflt;
}

const char *cg_attr_string(const cg_kernel_ctx *k, const char *name, const char *dflt)
{
    const cg_attr *a = cg_kernel_attr(k, name);
    if (!a || !(a->type == CG_ATTR_STRING || (!a->has_type && a->s.data)))
        return dflt;
    char *s = cg_kernel_scratch((cg_kernel_ctx *)k, a->s.len + 1);
    if (!s)
        return dflt;
    if (a->s.len)
        memcpy(s, a->s.data, a->s.len);
    s[a->s.len] = '\0';
    return s;
}

const int64_t *cg_attr_ints(const cg_kernel_ctx *k, const char *name, size_t *n)
{
    const cg_attr *a = cg_kernel_attr(k, name);
    *n = 0;
    if (!a || !(a->type == CG_ATTR_INTS || (!a->has_type && a->ints_count)))
        return NULL;
    *n = a->ints_count;
    return a->ints;
}

const float *cg_attr_floats(const cg_kernel_ctx *k, const char *name, size_t *n)
{
    const cg_attr *a = cg_kernel_attr(k, name);
    *n = 0;
    if (!a || !(a->type == CG_ATTR_FLOATS || (!a->has_type && a->floats_count)))
        return NULL;
    *n = a->floats_count;
    return a->floats;
}

cg_status cg_attr_tensor(cg_kernel_ctx *k, const char *name, cg_tensor **out)
{
    *out = NULL;
    const cg_attr *a = cg_kernel_attr(k, name);
    if (!a || !a->t)
        return cg_kernel_fail(k, CG_INVALID, "tensor attribute '%s' is missing", name);
    cg_value *v = NULL;
    cg_status st = cg_value_from_tensor_proto(a->t, &v, k->err);
    if (st != CG_OK) {
        char lbl[256];
        cg_error_prefix(k->err, "%s: attribute '%s': ",
                        step_label(k->node, ctx_node_index(k), lbl, sizeof lbl), name);
        return st;
    }
    /* Move it into scratch so it is released with the kernel's other scratch. */
    size_t bytes = cg_tensor_bytes(&v->tensor);
    cg_tensor *t = cg_kernel_scratch(k, sizeof *t);
    void *data = t ? cg_kernel_scratch(k, bytes) : NULL;
    if (!t || !data) {
        cg_value_free(v);
        return cg_kernel_fail(k, CG_NOMEM, "out of memory reading attribute '%s'", name);
    }
    *t = v->tensor;
    t->data = data;
    if (v->tensor.dtype == CG_DTYPE_STRING) {
        char **dst = data;
        char *const *src = v->tensor.data;
        for (int64_t i = 0; i < v->tensor.numel; i++) {
            size_t len = src[i] ? strlen(src[i]) : 0;
            dst[i] = cg_kernel_scratch(k, len + 1);
            if (!dst[i]) {
                cg_value_free(v);
                return cg_kernel_fail(k, CG_NOMEM, "out of memory reading attribute '%s'",
                                      name);
            }
            if (len)
                memcpy(dst[i], src[i], len);
            dst[i][len] = '\0';
        }
    } else if (bytes) {
        memcpy(data, v->tensor.data, bytes);
    }
    cg_value_free(v);
    *out = t;
    return CG_OK;
}
