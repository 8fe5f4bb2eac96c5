/*
 * Activation fusion at init: an activation that alone reads a convolution's
 * output (Relu, Clip with constant bounds, LeakyRelu, HardSwish, or the
 * Sigmoid/Mul pair of x * sigmoid(x)), or a residual Add that alone reads
 * it (with such an activation after it, when that alone reads the sum), is
 * handed to the convolution as an epilogue (kernel.h, cg_kernel_epilogue),
 * which applies it while the output tile is in cache instead of a pass over
 * the whole tensor, and writes the result straight into the last fused
 * step's output slot. The residual must exist when the convolution runs (a
 * graph input or initializer, or made by an earlier step); its lifetime
 * then overlaps the fused output's, so the memory plan never places the two
 * in the same bytes. The model
 * is not rewritten: the activation's steps stay in the plan, marked
 * absorbed, and run as before whenever the kernel declines the epilogue
 * (another dtype, another path), so a fused plan computes exactly what the
 * unfused one does.
 *
 * Not fused: values a graph output, a subgraph or a second consumer reads,
 * and in the main graph anything an observer, an assignment, fp16
 * emulation or the float64 mode looks at (they see every node's output).
 * The fused output's lifetime in the memory plan starts at the
 * convolution (its slot's producer becomes the convolution's step).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "run/exec.h"

static bool is_op(const cg_node *n, const char *op)
{
    return n->op_type && strcmp(n->op_type, op) == 0 &&
           (!n->domain || !n->domain[0] || strcmp(n->domain, "ai.onnx") == 0);
}

/* Readers of each local slot: step count, or SIZE_MAX when a subgraph
 * captures it. */
static size_t *count_uses(const cg_plan *p)
{
    size_t *uses = calloc(p->slot_count + 1, sizeof *uses);
    if (!uses)
        return NULL;
    for (size_t si = 0; si < p->step_count; si++) {
        const cg_step *st = &p->steps[si];
        for (size_t i = 0; i < st->node->input_count; i++)
            if (st->in[i].up == 0 && st->in[i].slot >= 0 && uses[st->in[i].slot] != SIZE_MAX)
                uses[st->in[i].slot]++;
        for (size_t k = 0; k < st->sub_count; k++)
            for (size_t c = 0; c < st->subs[k].plan->capture_count; c++) {
                int32_t s = cg_plan_slot(p, st->subs[k].plan->captures[c]);
                if (s >= 0)
                    uses[s] = SIZE_MAX;
            }
    }
    return uses;
}

/* The constant float scalar in input i of step st, or dflt when omitted.
 * Its copy is made now if the plan left it for the first run. */
static bool const_scalar(cg_plan *p, const cg_step *st, size_t i, float dflt, float *out)
{
    *out = dflt;
    if (i >= st->node->input_count || st->in[i].slot < 0)
        return true;
    cg_ref r = st->in[i];
    if (r.up != 0 || p->slot_kind[r.slot] != CG_SLOT_INIT)
        return false;
    for (size_t j = 0; j < p->graph->input_count; j++)
        if (p->input_slots[j] == r.slot)
            return false; /* a feed may replace it */
    cg_plan_materialize_slot(p, r.slot);
    const cg_value *v = p->init_values[r.slot];
    if (!v || v->kind != CG_VALUE_TENSOR || v->tensor.dtype != CG_DTYPE_FLOAT ||
        v->tensor.numel != 1 || !v->tensor.data)
        return false;
    *out = ((const float *)v->tensor.data)[0];
    return true;
}

static float attr_f(const cg_node *n, const char *name, float dflt)
{
    for (size_t i = 0; i < n->attr_count; i++)
        if (n->attrs[i].name && strcmp(n->attrs[i].name, name) == 0 &&
            (n->attrs[i].type == CG_ATTR_FLOAT || (!n->attrs[i].has_type && n->attrs[i].has_f)))
            return n->attrs[i].f;
    return dflt;
}

/* The step reading slot s, when it is the only one (uses[s] == 1). */
static cg_step *only_reader(cg_plan *p, size_t from, int32_t s)
{
    for (size_t j = from; j < p->step_count; j++) {
        const cg_step *sj = &p->steps[j];
        for (size_t i = 0; i < sj->node->input_count; i++)
            if (sj->in[i].up == 0 && sj->in[i].slot == s)
                return &p->steps[j];
    }
    return NULL;
}

/* The single-input activation step c reading slot s as its input 0, as an
 * epilogue; false when c is not one. */
static bool activation_of(cg_plan *p, const cg_step *c, int32_t s, cg_epilogue *e)
{
    const cg_node *n = c->node;
    if (!n->input_count || c->in[0].up != 0 || c->in[0].slot != s || n->output_count < 1 ||
        c->out[0] < 0)
        return false;
    memset(e, 0, sizeof *e);
    if (is_op(n, "Relu") && n->input_count == 1) {
        e->kind = CG_EPI_RELU;
    } else if (is_op(n, "LeakyRelu") && n->input_count == 1) {
        e->kind = CG_EPI_LEAKYRELU;
        e->a = attr_f(n, "alpha", 0.01f);
    } else if (is_op(n, "HardSwish") && n->input_count == 1) {
        e->kind = CG_EPI_HARDSWISH;
    } else if (is_op(n, "Clip")) {
        e->kind = CG_EPI_CLIP;
        if (c->since < 11) {
            if (n->input_count != 1)
                return false;
            e->a = attr_f(n, "min", -3.402823466e+38f);
            e->b = attr_f(n, "max", 3.402823466e+38f);
        } else if (!const_scalar(p, c, 1, -INFINITY, &e->a) ||
                   !const_scalar(p, c, 2, INFINITY, &e->b)) {
            return false;
        }
    } else {
        return false;
    }
    return true;
}

static void fuse_plan(cg_runtime *rt, cg_plan *p)
{
    for (size_t si = 0; si < p->step_count; si++)
        for (size_t k = 0; k < p->steps[si].sub_count; k++)
            fuse_plan(rt, p->steps[si].subs[k].plan);
    const cg_runtime_options *o = &rt->opt;
    if (p == rt->main && (o->observe || o->assignment || o->node_precision || o->float64))
        return;
    size_t *uses = count_uses(p);
    if (!uses)
        return; /* no fusion is no error */
    /* the consumers of each slot: found by scanning forward from the producer */
    for (size_t si = 0; si < p->step_count; si++) {
        cg_step *st = &p->steps[si];
        if (!is_op(st->node, "Conv") || st->folded || !st->node->output_count)
            continue;
        int32_t s = st->out[0];
        if (s < 0 || p->slot_is_output[s] || uses[s] == 0 || uses[s] > 2)
            continue;
        cg_step *c1 = NULL, *c2 = NULL;
        for (size_t j = si + 1; j < p->step_count && !(c1 && c2); j++) {
            const cg_step *sj = &p->steps[j];
            for (size_t i = 0; i < sj->node->input_count; i++)
                if (sj->in[i].up == 0 && sj->in[i].slot == s) {
                    if (!c1)
                        c1 = &p->steps[j];
                    else if (&p->steps[j] != c1)
                        c2 = &p->steps[j];
                    break;
                }
        }
        cg_epilogue e;
        int32_t final = -1;
        const cg_node *an = c1 ? c1->node : NULL;
        int other = an && is_op(an, "Add") && an->input_count == 2 && c1->in[0].up == 0 &&
                            c1->in[1].up == 0
                        ? (c1->in[0].slot == s ? 1 : c1->in[1].slot == s ? 0 : -1)
                        : -1;
        int32_t r = other >= 0 ? c1->in[other].slot : -1;
        if (uses[s] == 1 && r >= 0 && r != s && c1->out[0] >= 0 &&
            (p->slot_kind[r] != CG_SLOT_NODE || p->slot_producer[r] < (int32_t)si)) {
            /* Conv, Add(residual) [, activation]: the residual exists when
             * the convolution runs (made before it, or an input) */
            int32_t sum = c1->out[0];
            cg_step *c3 = !p->slot_is_output[sum] && uses[sum] == 1
                              ? only_reader(p, (size_t)(c1 - p->steps) + 1, sum) : NULL;
            if (c3 && activation_of(p, c3, sum, &e)) {
                final = c3->out[0];
                c3->absorbed_final = final;
            } else {
                memset(&e, 0, sizeof e);
                final = sum;
            }
            c1->absorbed_final = final;
            st->residual_slot = r;
        } else if (uses[s] == 1 && c1 && activation_of(p, c1, s, &e)) {
            final = c1->out[0];
            c1->absorbed_final = final;
        } else if (uses[s] == 2 && c1 && c2 && is_op(c1->node, "Sigmoid") &&
                   c1->node->input_count == 1 && c1->in[0].up == 0 && c1->in[0].slot == s &&
                   c1->out[0] >= 0 && !p->slot_is_output[c1->out[0]] &&
                   uses[c1->out[0]] == 1 && is_op(c2->node, "Mul") &&
                   c2->node->input_count == 2 && c2->out[0] >= 0 && c2->in[0].up == 0 &&
                   c2->in[1].up == 0 &&
                   ((c2->in[0].slot == s && c2->in[1].slot == c1->out[0]) ||
                    (c2->in[1].slot == s && c2->in[0].slot == c1->out[0]))) {
            memset(&e, 0, sizeof e);
            e.kind = CG_EPI_SILU;
            final = c2->out[0];
            c1->absorbed_final = final;
            c2->absorbed_final = final;
        }
        if (final < 0)
            continue;
        st->epi = e;
        st->fused_slot = final;
        /* the fused value is written by the convolution's step */
        p->slot_producer[final] = (int32_t)si;
    }
    free(uses);
}

void cg_fuse_activations(cg_runtime *rt)
{
    fuse_plan(rt, rt->main);
}
