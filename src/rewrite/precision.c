/*
 * Precision rewrites for fp16 targets (rewrites.def): sums and sums of
 * squares that leave fp16's range (65504) on the samples are rescaled by
 * powers of two, which is exact in binary floating point (barring
 * underflow), so the fp32 model computes the same values bit for bit.
 *
 * Calibration: c->stats holds the largest |x| of every float value over
 * the samples (the reference runtime, fp32). A site is needed when its
 * accumulator could pass RW_FP16_SAFE = 2^14 on them (a quarter of fp16's
 * largest number: headroom for inputs somewhat larger than the samples);
 * the scale is chosen to bring the accumulator back under it. Inputs far
 * larger than the samples can still overflow, and rows whose values are
 * far smaller than the largest seen can underflow: the report says the
 * scale came from the samples.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ir/walk.h"
#include "rewrite/rewrite_internal.h"

#define RW_FP16_SAFE 16384.0

static bool present(const char *s) { return s && s[0]; }

/* The axes a Reduce* node reduces (attribute, or input 1 from opset 13 for
 * ReduceSum and 18 for the others) and the element count N per output
 * element. False when unknown. */
static bool reduce_axes(rw_ctx *c, size_t r, int64_t *axes, int *naxes, int64_t *count)
{
    rw_graph *g = c->g;
    const cg_node *n = &g->nodes[r].n;
    const cg_value_type *xt = rw_static(c, n->inputs[0]);
    if (!xt)
        return false;
    *naxes = 0;
    size_t na;
    const int64_t *a = rw_attr_ints(g, r, "axes", &na);
    if (a) {
        if (na > CG_MAX_RANK)
            return false;
        for (size_t k = 0; k < na; k++)
            axes[(*naxes)++] = a[k];
    } else if (n->input_count > 1 && present(n->inputs[1])) {
        cg_value *v = NULL;
        if (rw_constant_value(g, n->inputs[1], &v, NULL) != CG_OK || !v ||
            v->tensor.numel > CG_MAX_RANK) {
            cg_value_free(v);
            return false;
        }
        for (int64_t k = 0; k < v->tensor.numel; k++)
            axes[(*naxes)++] = cg_tensor_get_i64(&v->tensor, k);
        cg_value_free(v);
    }
    if (*naxes == 0) {
        if (rw_attr_int(g, r, "noop_with_empty_axes", 0))
            return false;
        for (int k = 0; k < xt->rank; k++)
            axes[(*naxes)++] = k;
    }
    *count = 1;
    for (int k = 0; k < *naxes; k++) {
        int64_t ax = axes[k] < 0 ? axes[k] + xt->rank : axes[k];
        if (ax < 0 || ax >= xt->rank)
            return false;
        *count *= xt->dims[ax];
    }
    return *count > 0;
}

/* k >= 1 such that count * (max * 2^-k)^2 <= RW_FP16_SAFE, or 0 when the
 * sum already fits. */
static int square_shift(double count, double max)
{
    double acc = count * max * max;
    if (!(acc > RW_FP16_SAFE) || !isfinite(acc))
        return 0;
    int k = (int)ceil(0.5 * log2(acc / RW_FP16_SAFE));
    return k < 1 ? 1 : k;
}

static cg_dtype dtype_of(const rw_ctx *c, const char *name)
{
    const cg_value_type *t = rw_type(c, name);
    return t ? t->dtype : CG_DTYPE_FLOAT;
}

/* --- fp16-scale-squares --------------------------------------------------------------- */

/* sq is x*x (Mul) or x^2 (Pow): *x. */
static bool square_of(rw_graph *g, size_t node, const char **x)
{
    const cg_node *n = &g->nodes[node].n;
    double e;
    if (rw_is(&g->nodes[node], "Mul") && n->input_count == 2 &&
        strcmp(n->inputs[0], n->inputs[1]) == 0) {
        *x = n->inputs[0];
        return true;
    }
    if (rw_is(&g->nodes[node], "Pow") && n->input_count == 2 &&
        rw_constant_scalar(g, n->inputs[1], &e) && e == 2) {
        *x = n->inputs[0];
        return true;
    }
    return false;
}

/* The places a scaled RMS/std reaches x again: Div(x, std) and
 * Mul(x, Reciprocal(std)). Collects (node, slot) pairs of x to replace by
 * x*s; false when std is read any other way. */
typedef struct rw_slot {
    size_t node, slot;
} rw_slot;

static bool numerators(rw_graph *g, const char *std, const char *x, rw_slot *slots, size_t *n)
{
    size_t cons[16];
    size_t nc = rw_consumers(g, std, cons, 16);
    if (nc == 0 || nc > 16 || rw_is_graph_output(g, std))
        return false;
    for (size_t k = 0; k < nc; k++) {
        const rw_node *u = &g->nodes[cons[k]];
        if (rw_is(u, "Div") && u->n.input_count == 2 && strcmp(u->n.inputs[1], std) == 0 &&
            strcmp(u->n.inputs[0], x) == 0) {
            if (*n == 16)
                return false;
            slots[(*n)++] = (rw_slot){cons[k], 0};
        } else if (rw_is(u, "Reciprocal")) {
            const char *rc = u->n.outputs[0];
            size_t rcons[16], nr = rw_consumers(g, rc, rcons, 16);
            if (nr == 0 || nr > 16 || rw_is_graph_output(g, rc))
                return false;
            for (size_t j = 0; j < nr; j++) {
                const rw_node *m = &g->nodes[rcons[j]];
                if (!rw_is(m, "Mul") || m->n.input_count != 2 || *n == 16)
                    return false;
                int slot = strcmp(m->n.inputs[0], x) == 0 ? 0
                         : strcmp(m->n.inputs[1], x) == 0 ? 1 : -1;
                if (slot < 0)
                    return false;
                slots[(*n)++] = (rw_slot){rcons[j], (size_t)slot};
            }
        } else {
            return false;
        }
    }
    return true;
}

static bool scale_squares_site(rw_ctx *c, size_t r)
{
    rw_graph *g = c->g;
    const cg_node *rn = &g->nodes[r].n;
    size_t sq = rw_producer(g, rn->inputs[0]), cons[2];
    const char *x;
    if (sq == RW_NONE || !square_of(g, sq, &x) || rw_consumers(g, rn->inputs[0], cons, 2) != 1 ||
        rw_is_graph_output(g, rn->inputs[0]) || rn->output_count != 1)
        return false;
    int64_t axes[CG_MAX_RANK], count;
    int naxes;
    double mx = rw_stats_max(c->stats, x);
    if (!reduce_axes(c, r, axes, &naxes, &count) || mx < 0)
        return false;
    /* the chain after the mean: [Add eps] -> Sqrt -> numerators */
    const char *v = rn->outputs[0];
    size_t add = RW_NONE, nx = rw_consumers(g, v, cons, 2);
    double eps = 0;
    if (nx == 1 && rw_is(&g->nodes[cons[0]], "Add")) {
        add = cons[0];
        const cg_node *an = &g->nodes[add].n;
        int other = strcmp(an->inputs[0], v) == 0 ? 1 : 0;
        if (!rw_constant_scalar(g, an->inputs[other], &eps))
            return false;
        v = an->outputs[0];
        nx = rw_consumers(g, v, cons, 2);
    }
    if (nx != 1 || !rw_is(&g->nodes[cons[0]], "Sqrt") || rw_is_graph_output(g, v))
        return false;
    size_t sqrt_node = cons[0];
    rw_slot slots[16];
    size_t ns = 0;
    if (!numerators(g, g->nodes[sqrt_node].n.outputs[0], x, slots, &ns))
        return false;
    double n_terms = strcmp(rn->op_type, "ReduceMean") == 0 || strcmp(rn->op_type, "ReduceSum") == 0
                         ? (double)count : 0;
    int k = square_shift(n_terms, mx);
    if (k == 0) {
        c->unneeded++;
        return false;
    }
    cg_dtype dt = dtype_of(c, x);
    const char *s = rw_add_scalar(g, "fp16_scale", dt, ldexp(1.0, -k));
    const char *ins[2] = {x, s};
    size_t mul = s ? rw_add_node(g, "Mul", g->nodes[sq].n.name, ins, 2, NULL, 1) : RW_NONE;
    const char *xs = rw_out(g, mul, 0);
    if (!xs)
        return false;
    for (size_t i = 0; i < g->nodes[sq].n.input_count; i++)
        if (strcmp(g->nodes[sq].n.inputs[i], x) == 0)
            rw_set_input(g, sq, i, xs);
    if (add != RW_NONE) {
        const cg_node *an = &g->nodes[add].n;
        int other = strcmp(an->inputs[0], rn->outputs[0]) == 0 ? 1 : 0;
        const char *e2 = rw_add_scalar(g, "eps_scaled", dtype_of(c, an->inputs[other]),
                                       (double)(float)eps * ldexp(1.0, -2 * k));
        if (!e2)
            return false;
        rw_set_input(g, add, (size_t)other, e2);
    }
    for (size_t i = 0; i < ns; i++)
        rw_set_input(g, slots[i].node, slots[i].slot, xs);
    rw_detail(c, "'%s': x pre-scaled by 2^-%d (largest |x| on the samples %.4g over %lld terms)",
              rn->name ? rn->name : "?", k, mx, (long long)count);
    return true;
}

cg_status rw_scale_squares(rw_ctx *c)
{
    rw_graph *g = c->g;
    if (!c->stats)
        return CG_OK;
    for (size_t i = 0; i < g->src_node_count && !g->oom; i++)
        if ((rw_is(&g->nodes[i], "ReduceMean") || rw_is(&g->nodes[i], "ReduceSum")) &&
            scale_squares_site(c, i))
            c->sites++;
    return g->oom ? cg_error_set(c->err, CG_NOMEM, "out of memory") : CG_OK;
}

/* --- fp16-hierarchical-mean ------------------------------------------------------------ */

#define RW_STAGE_MAX 64 /* terms one fp16 accumulator sums */
#define RW_MEAN_NEEDED 256

/* A divisor pair of n, both <= RW_STAGE_MAX and as balanced as can be: *a. */
static bool split_pair(int64_t n, int64_t *a)
{
    for (int64_t d = (int64_t)sqrt((double)n); d >= 2; d--)
        if (n % d == 0 && d <= RW_STAGE_MAX && n / d <= RW_STAGE_MAX) {
            *a = d;
            return true;
        }
    return false;
}

static bool mean_site(rw_ctx *c, size_t r)
{
    rw_graph *g = c->g;
    const cg_node *rn = &g->nodes[r].n;
    int64_t axes[CG_MAX_RANK], count;
    int naxes;
    const char *x = rn->input_count ? rn->inputs[0] : NULL;
    const cg_value_type *xt = x ? rw_static(c, x) : NULL, *yt;
    double mx = x ? rw_stats_max(c->stats, x) : -1;
    if (rn->output_count != 1 || mx < 0 || !xt || !(yt = rw_static(c, rn->outputs[0])) ||
        !reduce_axes(c, r, axes, &naxes, &count))
        return false;
    bool overflow = (double)count * mx > RW_FP16_SAFE;
    if (!overflow && count < RW_MEAN_NEEDED) {
        c->unneeded++;
        return false;
    }
    /* the shape with each large reduced axis split in two, and the axes to
     * average one at a time, innermost first */
    bool red[CG_MAX_RANK] = {false};
    for (int k = 0; k < naxes; k++)
        red[axes[k] < 0 ? axes[k] + xt->rank : axes[k]] = true;
    int64_t shape[CG_MAX_RANK];
    bool sred[CG_MAX_RANK];
    int rank = 0, max_rank = xt->rank > 4 ? xt->rank : 4;
    bool split = false;
    for (int d = 0; d < xt->rank; d++) {
        int64_t a;
        if (red[d] && xt->dims[d] > RW_STAGE_MAX && rank + 2 <= CG_MAX_RANK &&
            rank + 2 + (xt->rank - d - 1) <= max_rank && split_pair(xt->dims[d], &a)) {
            shape[rank] = a;
            sred[rank++] = true;
            shape[rank] = xt->dims[d] / a;
            sred[rank++] = true;
            split = true;
        } else {
            shape[rank] = xt->dims[d];
            sred[rank++] = red[d];
        }
    }
    int stages = 0;
    int64_t biggest = 1;
    for (int d = 0; d < rank; d++)
        if (sred[d]) {
            stages++;
            biggest = shape[d] > biggest ? shape[d] : biggest;
        }
    if (stages < 2 && !overflow)
        return false; /* nothing to split: one accumulator whatever we do */
    /* a stage's sum: at most biggest terms of at most mx; pre-scale the
     * terms by a power of two when that could overflow (exact) */
    int sh = (double)biggest * mx > RW_FP16_SAFE ? (int)ceil(log2((double)biggest * mx / RW_FP16_SAFE))
                                                 : 0;
    cg_dtype dt = dtype_of(c, x);
    const char *out = rn->outputs[0], *hint = rn->name, *cur = x;
    rw_kill(g, r);
    if (sh > 0) {
        const char *s = rw_add_scalar(g, "mean_scale", dt, ldexp(1.0, -sh));
        const char *ins[2] = {cur, s};
        size_t m = s ? rw_add_node(g, "Mul", hint, ins, 2, NULL, 1) : RW_NONE;
        cur = rw_out(g, m, 0);
    }
    if (cur && split) {
        int64_t sd[1] = {rank};
        const char *shp = rw_add_i64(g, "shape", 1, sd, shape);
        const char *ins[2] = {cur, shp};
        size_t rs = shp ? rw_add_node(g, "Reshape", hint, ins, 2, NULL, 1) : RW_NONE;
        cur = rw_out(g, rs, 0);
    }
    for (int d = rank - 1; d >= 0 && cur; d--) {
        if (!sred[d])
            continue;
        int64_t ax = d;
        bool as_input = rw_reduce_axes_as_input(g, "ReduceMean");
        int64_t one[1] = {1};
        const char *ins[2] = {cur, as_input ? rw_add_i64(g, "axes", 1, one, &ax) : NULL};
        size_t m = rw_add_node(g, "ReduceMean", hint, ins, as_input ? 2 : 1, NULL, 1);
        if (m == RW_NONE || !rw_set_attr_int(g, m, "keepdims", 1) ||
            (!as_input && !rw_set_attr_ints(g, m, "axes", &ax, 1)))
            return false;
        cur = rw_out(g, m, 0);
    }
    if (cur && sh > 0) {
        const char *s = rw_add_scalar(g, "mean_unscale", dt, ldexp(1.0, sh));
        const char *ins[2] = {cur, s};
        size_t m = s ? rw_add_node(g, "Mul", hint, ins, 2, NULL, 1) : RW_NONE;
        cur = rw_out(g, m, 0);
    }
    if (cur && (split || rw_attr_int(g, r, "keepdims", 1) == 0)) {
        int64_t sd[1] = {yt->rank};
        const char *shp = rw_add_i64(g, "shape", 1, sd, yt->dims);
        const char *ins[2] = {cur, shp};
        size_t rs = shp ? rw_add_node(g, "Reshape", hint, ins, 2, NULL, 1) : RW_NONE;
        cur = rw_out(g, rs, 0);
    }
    if (!cur || !rw_replace(g, out, cur))
        return false;
    rw_detail(c, "'%s': mean of %lld terms as %d successive means of at most %lld%s (largest "
              "|x| on the samples %.4g)", hint ? hint : "?", (long long)count, stages,
              (long long)biggest, sh ? ", terms pre-scaled by a power of two" : "", mx);
    return true;
}

cg_status rw_hierarchical_mean(rw_ctx *c)
{
    rw_graph *g = c->g;
    if (!c->stats)
        return CG_OK;
    for (size_t i = 0; i < g->src_node_count && !g->oom; i++)
        if (rw_is(&g->nodes[i], "ReduceMean") && mean_site(c, i))
            c->sites++;
    return g->oom ? cg_error_set(c->err, CG_NOMEM, "out of memory") : CG_OK;
}

/* --- fp16-sumsquare-rescale ---------------------------------------------------------------- */

static bool sumsquare_site(rw_ctx *c, size_t r)
{
    rw_graph *g = c->g;
    const cg_node *rn = &g->nodes[r].n;
    bool l2 = rw_is(&g->nodes[r], "ReduceL2");
    int64_t axes[CG_MAX_RANK], count;
    int naxes;
    size_t cons[2];
    double mx = rn->input_count ? rw_stats_max(c->stats, rn->inputs[0]) : -1;
    if (rn->output_count != 1 || mx < 0 || !reduce_axes(c, r, axes, &naxes, &count))
        return false;
    size_t sq = RW_NONE;
    if (!l2) {
        if (rw_consumers(g, rn->outputs[0], cons, 2) != 1 || rw_is_graph_output(g, rn->outputs[0]) ||
            !rw_is(&g->nodes[cons[0]], "Sqrt"))
            return false;
        sq = cons[0];
    }
    if (g->opset < 13)
        return false; /* ReduceSum takes its axes as an input */
    int k = square_shift((double)count, mx);
    if (k == 0) {
        c->unneeded++;
        return false;
    }
    cg_dtype dt = dtype_of(c, rn->inputs[0]);
    const char *x = rn->inputs[0], *hint = rn->name;
    const char *out = l2 ? rn->outputs[0] : g->nodes[sq].n.outputs[0];
    const char *s = rw_add_scalar(g, "fp16_scale", dt, ldexp(1.0, -k));
    const char *back = rw_add_scalar(g, "fp16_unscale", dt, ldexp(1.0, k));
    const char *ins[2] = {x, s};
    size_t mul = s && back ? rw_add_node(g, "Mul", hint, ins, 2, NULL, 1) : RW_NONE;
    const char *xs = rw_out(g, mul, 0);
    rw_kill(g, r);
    if (sq != RW_NONE)
        rw_kill(g, sq);
    /* the squares as a Mul and a ReduceSum: the same products and sum, and
     * ops the fp16 delegates take (litert-gpu has SUM, not a sum of squares) */
    const char *sq_ins[2] = {xs, xs};
    size_t sqn = xs ? rw_add_node(g, "Mul", hint, sq_ins, 2, NULL, 1) : RW_NONE;
    const char *sqv = rw_out(g, sqn, 0);
    const char *red = sqv ? rw_add_reduce(g, "ReduceSum", sqv, axes, naxes,
                                          rw_attr_int(g, r, "keepdims", 1), hint)
                          : NULL;
    size_t root = red ? rw_add_node(g, "Sqrt", hint, &red, 1, NULL, 1) : RW_NONE;
    const char *norm = rw_out(g, root, 0);
    const char *mins[2] = {norm, back};
    size_t scaled = norm ? rw_add_node(g, "Mul", hint, mins, 2, NULL, 1) : RW_NONE;
    if (scaled == RW_NONE || !rw_replace(g, out, rw_out(g, scaled, 0)))
        return false;
    rw_detail(c, "'%s': x pre-scaled by 2^-%d and the root by 2^%d (largest |x| on the samples "
              "%.4g over %lld terms)", hint ? hint : "?", k, k, mx, (long long)count);
    return true;
}

cg_status rw_sumsquare_rescale(rw_ctx *c)
{
    rw_graph *g = c->g;
    if (!c->stats)
        return CG_OK;
    for (size_t i = 0; i < g->src_node_count && !g->oom; i++)
        if ((rw_is(&g->nodes[i], "ReduceSumSquare") || rw_is(&g->nodes[i], "ReduceL2")) &&
            sumsquare_site(c, i))
            c->sites++;
    return g->oom ? cg_error_set(c->err, CG_NOMEM, "out of memory") : CG_OK;
}
