/*
 * Decisions: the discontinuous ops, which values depend on one, and how
 * many decisions a target flipped and by what margin (convgate/noise.h).
 *
 * A decision output changes by a whole step for an arbitrarily small change
 * of its float inputs: a comparison's bool, ArgMax's index, a quantizer's
 * integer, Round's value. Elementwise error downstream of one measures the
 * step, not the arithmetic, so such values are judged by flips instead.
 *
 * Taint is per value: an output of a decision (TopK's indices, MaxPool's
 * indices; not TopK's values, which are continuous) is tainted, and so is
 * every output of a node that reads a tainted value (directly, or from a
 * subgraph through an outer-scope name). Shape and Size do not pass taint
 * on: they read a tensor's shape, not its values (a shape that itself
 * depends on data, after NonZero, is the documented blind spot).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "convgate/noise.h"
#include "ir/walk.h"

/* How a decision op's margin is measured. */
typedef enum margin_rule {
    M_NONE = 0,    /* no margin rule: flips are counted, margins unknown */
    M_COMPARE,     /* |a - b| (broadcast) */
    M_ROUND_HALF,  /* boundary at k + 0.5: Round */
    M_ROUND_INT,   /* boundary at integers: Floor, Ceil, Cast to integer */
    M_SIGN,        /* boundary at 0: |x| */
    M_QUANTIZE,    /* x / scale against k + 0.5, times the scale */
    M_ARG          /* gap between the chosen elements along the axis */
} margin_rule;

/* op, which output is the decision (-1: every output), margin rule.
 * ai.onnx only; Cast is handled apart (it depends on the types). */
static const struct {
    const char *op;
    int output;
    margin_rule rule;
} decision_ops[] = {
    {"Less", -1, M_COMPARE},
    {"LessOrEqual", -1, M_COMPARE},
    {"Greater", -1, M_COMPARE},
    {"GreaterOrEqual", -1, M_COMPARE},
    {"Equal", -1, M_COMPARE},
    {"ArgMax", -1, M_ARG},
    {"ArgMin", -1, M_ARG},
    {"TopK", 1, M_ARG},
    {"MaxPool", 1, M_NONE},
    {"Hardmax", -1, M_NONE},
    {"NonMaxSuppression", -1, M_NONE},
    {"NonZero", -1, M_NONE},
    {"Unique", -1, M_NONE},
    {"Round", -1, M_ROUND_HALF},
    {"Floor", -1, M_ROUND_INT},
    {"Ceil", -1, M_ROUND_INT},
    {"Sign", -1, M_SIGN},
    {"IsNaN", -1, M_NONE},
    {"IsInf", -1, M_NONE},
    {"Mod", -1, M_NONE},
    {"Shrink", -1, M_NONE},
    {"ThresholdedRelu", -1, M_NONE},
    {"QuantizeLinear", -1, M_QUANTIZE},
    {"DynamicQuantizeLinear", 0, M_QUANTIZE},
    {"QLinearConv", -1, M_NONE},
    {"QLinearMatMul", -1, M_NONE},
    {"GridSample", -1, M_NONE}, /* mode nearest only (node_decides) */
};

static bool is_onnx(const cg_node *n)
{
    return n->op_type && cg_domain_is_default(n->domain);
}

/* Row of the table for node n, or -1. */
static int decision_row(const cg_node *n)
{
    if (!is_onnx(n))
        return -1;
    for (size_t i = 0; i < sizeof decision_ops / sizeof decision_ops[0]; i++)
        if (strcmp(decision_ops[i].op, n->op_type) == 0)
            return (int)i;
    return -1;
}

static bool node_attr_is(const cg_node *n, const char *name, const char *value)
{
    const cg_attr *a = cg_node_attr(n, name);
    return a && a->s.data && a->s.len == strlen(value) && memcmp(a->s.data, value, a->s.len) == 0;
}

static bool is_float_dtype(int64_t dt)
{
    return cg_dtype_valid(dt) && cg_dtype_is_float((cg_dtype)dt);
}

/* The declared element type of `name` in g (inputs, initializers,
 * value_info, outputs), or 0. */
static int64_t declared_dtype(const cg_graph *g, const char *name)
{
    const cg_tensor_proto *init = cg_graph_initializer(g, name);
    if (init)
        return init->data_type;
    const cg_value_info *lists[3] = {g->inputs, g->value_infos, g->outputs};
    size_t counts[3] = {g->input_count, g->value_info_count, g->output_count};
    for (int l = 0; l < 3; l++)
        for (size_t i = 0; i < counts[l]; i++) {
            const cg_value_info *vi = &lists[l][i];
            if (vi->name && strcmp(vi->name, name) == 0 && vi->type &&
                vi->type->kind == CG_TYPE_TENSOR && vi->type->has_elem_type)
                return vi->type->elem_type;
        }
    return 0;
}

/* The element type of a value: from the type environment when it knows
 * it, else as declared; 0 when unknown. */
static int64_t value_dtype(const cg_graph *g, const cg_type_env *types, const char *name)
{
    const cg_value_type *vt = types ? cg_type_env_get(types, name) : NULL;
    if (vt && vt->known)
        return vt->dtype;
    return declared_dtype(g, name);
}

/* A decision is only one on floats: comparing, rounding or ranking exact
 * integers flips nothing. True when an input is a known float, or of
 * unknown type (it may be one), unless the op's inputs share one type (the
 * comparisons) and one of them is known not to be a float. */
static bool reads_float(const cg_graph *g, const cg_node *n, const cg_type_env *types,
                        margin_rule rule)
{
    bool unknown = false, known_other = false;
    for (size_t i = 0; i < n->input_count; i++) {
        if (!n->inputs[i] || !n->inputs[i][0])
            continue;
        int64_t dt = value_dtype(g, types, n->inputs[i]);
        if (is_float_dtype(dt))
            return true;
        if (dt == 0)
            unknown = true;
        else
            known_other = true;
    }
    if (rule == M_COMPARE && known_other)
        return false;
    return unknown || !known_other;
}

/* A Cast from a float to an integer or bool truncates: a decision (only
 * when the input is known to be a float: most integer Casts are shape
 * arithmetic). */
static bool cast_decides(const cg_graph *g, const cg_node *n, const cg_type_env *types)
{
    if (!is_onnx(n) || strcmp(n->op_type, "Cast") != 0 || n->input_count < 1)
        return false;
    int64_t to = cg_node_attr_int(n, "to", 0);
    if (!cg_dtype_valid(to) || !(cg_dtype_is_int((cg_dtype)to) || to == CG_DTYPE_BOOL))
        return false;
    return is_float_dtype(value_dtype(g, types, n->inputs[0]));
}

/* A node whose outputs are decisions: a row of the table reading floats,
 * or a truncating Cast. */
static bool node_decides(const cg_graph *g, const cg_node *n, const cg_type_env *types)
{
    int row = decision_row(n);
    if (row >= 0 && strcmp(n->op_type, "GridSample") == 0 && !node_attr_is(n, "mode", "nearest"))
        return false; /* bilinear and bicubic sampling are continuous */
    if (row >= 0 && decision_ops[row].output >= 0) { /* that output must be there */
        size_t o = (size_t)decision_ops[row].output;
        if (o >= n->output_count || !n->outputs[o] || !n->outputs[o][0])
            return false;
    }
    return (row >= 0 && reads_float(g, n, types, decision_ops[row].rule)) ||
           cast_decides(g, n, types);
}

bool cg_decision_op(const cg_node *node)
{
    return decision_row(node) >= 0;
}

/* --- names -> producers ---------------------------------------------------------- */

typedef struct cg_decision_value {
    const char *name;
    size_t node;
    size_t output;
    bool tainted;  /* a decision output, or produced by a node reading one */
    bool decides;  /* a decision output itself */
} name_entry;

static int cmp_entry(const void *a, const void *b)
{
    return strcmp(((const name_entry *)a)->name, ((const name_entry *)b)->name);
}

static const name_entry *find_entry(const name_entry *e, size_t n, const char *name)
{
    name_entry key = {name, 0, 0, false, false};
    return n ? bsearch(&key, e, n, sizeof *e, cmp_entry) : NULL;
}

/* Sorted (name, node, output) of every named node output of g; NULL on no
 * memory (count 0 with a non-NULL result for an empty graph). */
static name_entry *producers(const cg_graph *g, size_t *count)
{
    size_t n = 0;
    for (size_t i = 0; i < g->node_count; i++)
        n += g->nodes[i].output_count;
    name_entry *e = malloc((n + 1) * sizeof *e);
    if (!e)
        return NULL;
    n = 0;
    for (size_t i = 0; i < g->node_count; i++)
        for (size_t k = 0; k < g->nodes[i].output_count; k++)
            if (g->nodes[i].outputs[k] && g->nodes[i].outputs[k][0])
                e[n++] = (name_entry){g->nodes[i].outputs[k], i, k, false, false};
    qsort(e, n, sizeof *e, cmp_entry);
    *count = n;
    return e;
}

/* --- the map ------------------------------------------------------------------------ */

typedef struct body_scan {
    bool decision;              /* a node of the body decides */
    const cg_graph *outer;
    const name_entry *prod;
    size_t prod_count;
    bool reads_tainted;
} body_scan;

static bool scan_body_node(void *user, const cg_graph *graph, const cg_node *node, int depth)
{
    body_scan *s = user;
    (void)depth;
    if (node_decides(graph, node, NULL))
        s->decision = true;
    for (size_t i = 0; i < node->input_count; i++) {
        const name_entry *e = node->inputs[i] && node->inputs[i][0]
                                  ? find_entry(s->prod, s->prod_count, node->inputs[i])
                                  : NULL;
        if (e && e->tainted)
            s->reads_tainted = true;
    }
    return true;
}

cg_status cg_decision_map_build(const cg_graph *g, const cg_type_env *types,
                                cg_decision_map *out, cg_error *err)
{
    memset(out, 0, sizeof *out);
    out->graph = g;
    size_t n = g->node_count, pc = 0;
    name_entry *prod = producers(g, &pc);
    out->values = prod;
    out->value_count = pc;
    out->is_decision = calloc(n + 1, sizeof *out->is_decision);
    out->downstream = calloc(n + 1, sizeof *out->downstream);
    if (!prod || !out->is_decision || !out->downstream) {
        cg_decision_map_free(out);
        return cg_error_set(err, CG_NOMEM, "out of memory analysing the decisions of graph '%s'",
                            g->name ? g->name : "");
    }
    /* Nodes are in topological order (the runtime requires it), so one pass
     * sees every producer before its consumers. */
    for (size_t i = 0; i < n; i++) {
        const cg_node *nd = &g->nodes[i];
        int row = decision_row(nd);
        bool reads = false;
        bool shape_only = is_onnx(nd) && (strcmp(nd->op_type, "Shape") == 0 ||
                                          strcmp(nd->op_type, "Size") == 0);
        for (size_t k = 0; k < nd->input_count && !shape_only; k++) {
            const name_entry *e = nd->inputs[k] && nd->inputs[k][0]
                                      ? find_entry(prod, pc, nd->inputs[k])
                                      : NULL;
            if (e && e->tainted)
                reads = true;
        }
        bool decides = node_decides(g, nd, types), body_decides = false;
        for (size_t a = 0; a < nd->attr_count; a++) {
            const cg_attr *at = &nd->attrs[a];
            const cg_graph *bodies[64];
            size_t nb = 0;
            if (at->g)
                bodies[nb++] = at->g;
            for (size_t b = 0; b < at->graphs_count && nb < 64; b++)
                bodies[nb++] = at->graphs[b];
            for (size_t b = 0; b < nb; b++) {
                body_scan s = {false, g, prod, pc, false};
                cg_graph_walk(bodies[b], scan_body_node, &s);
                body_decides = body_decides || s.decision;
                reads = reads || s.reads_tainted;
            }
        }
        /* a control-flow node deciding inside a body taints its outputs, but
         * its own outputs are continuous: no flips are counted on them */
        out->is_decision[i] = decides;
        out->downstream[i] = decides || reads || body_decides;
        out->decision_count += decides;
        reads = reads || body_decides;
        for (size_t k = 0; k < nd->output_count; k++) {
            if (!nd->outputs[k] || !nd->outputs[k][0])
                continue;
            name_entry *e = (name_entry *)find_entry(prod, pc, nd->outputs[k]);
            if (!e)
                continue;
            e->decides = decides && (row < 0 || decision_ops[row].output < 0 ||
                                     (size_t)decision_ops[row].output == k);
            e->tainted = reads || e->decides;
        }
    }
    return CG_OK;
}

void cg_decision_map_free(cg_decision_map *m)
{
    if (!m)
        return;
    free(m->is_decision);
    free(m->downstream);
    free(m->values);
    memset(m, 0, sizeof *m);
}

bool cg_decision_depends(const cg_decision_map *m, const char *name)
{
    const name_entry *e = m->values ? find_entry(m->values, m->value_count, name) : NULL;
    return e && e->tainted;
}

size_t cg_decision_upstream(const cg_decision_map *m, const char *name, size_t *nodes,
                            size_t cap)
{
    const cg_graph *g = m->graph;
    size_t found = 0;
    if (!g || !m->values)
        return 0;
    const name_entry *start = find_entry(m->values, m->value_count, name);
    if (!start || !start->tainted)
        return 0;
    bool *seen = calloc(m->value_count + 1, sizeof *seen);     /* per value */
    bool *chosen = calloc(g->node_count + 1, sizeof *chosen);  /* decision nodes found */
    size_t *stack = malloc((m->value_count + 1) * sizeof *stack);
    if (!seen || !chosen || !stack)
        goto done;
    size_t top = 0;
    stack[top++] = (size_t)(start - m->values);
    seen[start - m->values] = true;
    while (top) {
        const name_entry *e = &m->values[stack[--top]];
        if (e->decides)
            chosen[e->node] = true;
        /* a decision output's own inputs are continuous unless tainted */
        const cg_node *nd = &g->nodes[e->node];
        for (size_t k = 0; k < nd->input_count; k++) {
            const name_entry *p = nd->inputs[k] && nd->inputs[k][0]
                                      ? find_entry(m->values, m->value_count, nd->inputs[k])
                                      : NULL;
            if (p && p->tainted && !seen[p - m->values]) {
                seen[p - m->values] = true;
                stack[top++] = (size_t)(p - m->values);
            }
        }
    }
    for (size_t i = 0; i < g->node_count; i++)
        if (chosen[i]) {
            if (found < cap)
                nodes[found] = i;
            found++;
        }
done:
    free(seen);
    free(chosen);
    free(stack);
    return found;
}

/* --- flips ---------------------------------------------------------------------------- */

void cg_flip_stats_init(cg_flip_stats *f)
{
    memset(f, 0, sizeof *f);
    f->worst_index = -1;
    f->margin_known = true;
}

void cg_flip_stats_merge(cg_flip_stats *a, const cg_flip_stats *b)
{
    if (b->flips && (!a->flips || b->max_margin > a->max_margin || isnan(b->max_margin))) {
        a->max_margin = b->max_margin;
        a->worst_index = b->worst_index;
        memcpy(a->node, b->node, sizeof a->node);
    }
    if (b->flips && (!a->flips || b->min_margin < a->min_margin))
        a->min_margin = b->min_margin;
    a->decisions += b->decisions;
    a->flips += b->flips;
    a->noise_fp32 += b->noise_fp32;
    a->noise_fp16 += b->noise_fp16;
    a->max_steps = b->max_steps > a->max_steps ? b->max_steps : a->max_steps;
    a->margin_known = a->margin_known && b->margin_known;
}

/* Flat offset in a tensor of shape `in` for output index i of shape `out`
 * under numpy broadcasting (in's dims align to the right). */
static int64_t bcast_offset(const cg_tensor *in, const cg_tensor *out, int64_t i)
{
    int64_t off = 0, stride = 1;
    for (int d = out->rank - 1, e = in->rank - 1; d >= 0; d--, e--) {
        int64_t od = out->dims[d];
        int64_t idx = od ? i % od : 0;
        i = od ? i / od : 0;
        if (e >= 0) {
            if (in->dims[e] != 1)
                off += idx * stride;
            stride *= in->dims[e];
        }
    }
    return off;
}

static double frac_dist_int(double v) /* distance to the nearest integer */
{
    double f = v - floor(v);
    return f < 0.5 ? f : 1.0 - f;
}

static double frac_dist_half(double v) /* distance to the nearest k + 0.5 */
{
    double f = v - floor(v);
    return fabs(f - 0.5);
}

/* Reference margin of output element i (NaN: unknown). */
static double margin_of(const cg_node *node, margin_rule rule, const cg_tensor *const *in,
                        size_t in_count, const cg_tensor *ref_out, const cg_tensor *got_out,
                        int64_t i)
{
    const cg_tensor *x = in_count > 0 ? in[0] : NULL;
    if (!x || !x->data || !cg_dtype_is_float(x->dtype))
        return NAN;
    switch (rule) {
    case M_COMPARE: {
        const cg_tensor *y = in_count > 1 ? in[1] : NULL;
        if (!y || !y->data)
            return NAN;
        double a = cg_tensor_get_f64(x, bcast_offset(x, ref_out, i));
        double b = cg_tensor_get_f64(y, bcast_offset(y, ref_out, i));
        return fabs(a - b);
    }
    case M_ROUND_HALF:
        return i < x->numel ? frac_dist_half(cg_tensor_get_f64(x, i)) : NAN;
    case M_ROUND_INT:
        return i < x->numel ? frac_dist_int(cg_tensor_get_f64(x, i)) : NAN;
    case M_SIGN:
        return i < x->numel ? fabs(cg_tensor_get_f64(x, i)) : NAN;
    case M_QUANTIZE: {
        const cg_tensor *s = in_count > 1 ? in[1] : NULL;
        if (i >= x->numel)
            return NAN;
        double scale;
        if (!s || !s->data || s->numel < 1) /* DynamicQuantizeLinear: see the caller */
            return NAN;
        if (s->numel == 1) {
            scale = cg_tensor_get_f64(s, 0);
        } else {
            int64_t axis = cg_node_attr_int(node, "axis", 1);
            if (axis < 0)
                axis += x->rank;
            if (axis < 0 || axis >= x->rank || s->numel != x->dims[axis])
                return NAN;
            int64_t inner = 1;
            for (int d = (int)axis + 1; d < x->rank; d++)
                inner *= x->dims[d];
            scale = cg_tensor_get_f64(s, (i / inner) % x->dims[axis]);
        }
        double v = cg_tensor_get_f64(x, i) / scale;
        return frac_dist_half(v) * fabs(scale);
    }
    case M_ARG: {
        /* the output holds indices along `axis` of x */
        int64_t axis = cg_node_attr_int(node, "axis", strcmp(node->op_type, "TopK") == 0 ? -1 : 0);
        if (axis < 0)
            axis += x->rank;
        if (axis < 0 || axis >= x->rank ||
            (ref_out->rank != x->rank && ref_out->rank != x->rank - 1))
            return NAN;
        int64_t inner = 1;
        for (int d = (int)axis + 1; d < x->rank; d++)
            inner *= x->dims[d];
        /* keepdims=0 folds the axis away: one choice per (outer, inner) */
        int64_t olen = ref_out->rank == x->rank ? ref_out->dims[axis] : 1;
        int64_t alen = x->dims[axis];
        int64_t outer = i / (olen * inner), in_i = i % inner;
        int64_t ir = cg_tensor_get_i64(ref_out, i), ig = cg_tensor_get_i64(got_out, i);
        if (ir < 0 || ir >= alen || ig < 0 || ig >= alen)
            return NAN;
        double vr = cg_tensor_get_f64(x, (outer * alen + ir) * inner + in_i);
        double vg = cg_tensor_get_f64(x, (outer * alen + ig) * inner + in_i);
        return fabs(vr - vg);
    }
    case M_NONE: break;
    }
    return NAN;
}

/* Counts a flip with margin m (NaN: unknown) at element i. */
static void add_flip(cg_flip_stats *f, const cg_node *node, double m, int64_t i, double floor32,
                     double floor16, const cg_noise_multiples *k)
{
    f->flips++;
    if (isnan(m)) {
        f->margin_known = false;
        if (!f->node[0]) /* name the decision even without a margin */
            snprintf(f->node, sizeof f->node, "%s", node->name && node->name[0] ? node->name
                                                                               : node->op_type);
        return;
    }
    f->noise_fp32 += m <= k->k_fp32 * floor32;
    f->noise_fp16 += m <= k->k_fp16 * floor16;
    if (f->worst_index < 0 || m > f->max_margin) {
        f->max_margin = m;
        f->worst_index = i;
        snprintf(f->node, sizeof f->node, "%s", node->name && node->name[0] ? node->name
                                                                           : node->op_type);
    }
    if (f->flips == 1 || m < f->min_margin)
        f->min_margin = m;
}

cg_status cg_decision_flips(const cg_node *node, const cg_tensor *const *ref_in,
                            size_t in_count, const cg_tensor *const *ref_outs,
                            size_t out_count, size_t output, const cg_tensor *got_out,
                            double floor_fp32, double floor_fp16, const cg_noise_multiples *k,
                            cg_flip_stats *out, cg_error *err)
{
    const cg_tensor *ref_out = output < out_count ? ref_outs[output] : NULL;
    cg_noise_multiples dk;
    cg_flip_stats_init(out);
    if (!k) {
        cg_noise_multiples_default(&dk);
        k = &dk;
    }
    if (!node || !ref_out || !got_out)
        return cg_error_set(err, CG_USAGE, "decision flips: NULL node or tensor");
    int row = decision_row(node);
    margin_rule rule = row >= 0 ? decision_ops[row].rule
                                : (strcmp(node->op_type, "Cast") == 0 ? M_ROUND_INT : M_NONE);
    if (row >= 0 && decision_ops[row].output >= 0 && (size_t)decision_ops[row].output != output)
        return cg_error_set(err, CG_USAGE, "node '%s' (%s): output %zu is not a decision",
                            node->name ? node->name : "", node->op_type, output);
    if (ref_out->dtype == CG_DTYPE_STRING || got_out->dtype == CG_DTYPE_STRING)
        return cg_error_set(err, CG_UNSUPPORTED, "node '%s' (%s): string decisions are not "
                            "compared", node->name ? node->name : "", node->op_type);
    if (!cg_shape_equal(ref_out->rank, ref_out->dims, got_out->rank, got_out->dims)) {
        /* a different number of selections (NMS, NonZero): every element of
         * the longer one past the shorter counts, margins unknown */
        int64_t a = ref_out->numel, b = got_out->numel;
        out->decisions = (uint64_t)(a > b ? a : b);
        int64_t common = a < b ? a : b;
        for (int64_t i = 0; i < common; i++)
            if (cg_tensor_get_f64(ref_out, i) != cg_tensor_get_f64(got_out, i))
                add_flip(out, node, NAN, i, floor_fp32, floor_fp16, k);
        for (int64_t i = common; i < (a > b ? a : b); i++)
            add_flip(out, node, NAN, i, floor_fp32, floor_fp16, k);
        out->margin_known = false;
        return CG_OK;
    }
    /* DynamicQuantizeLinear's margin uses the scale it computed (output 1) */
    double dq_scale = NAN;
    if (rule == M_QUANTIZE && strcmp(node->op_type, "DynamicQuantizeLinear") == 0 &&
        out_count > 1 && ref_outs[1] && ref_outs[1]->numel == 1)
        dq_scale = cg_tensor_get_f64(ref_outs[1], 0);
    out->decisions = (uint64_t)ref_out->numel;
    for (int64_t i = 0; i < ref_out->numel; i++) {
        double r = cg_tensor_get_f64(ref_out, i), g = cg_tensor_get_f64(got_out, i);
        if (r == g || (isnan(r) && isnan(g)))
            continue;
        double m;
        if (!isnan(dq_scale) && in_count > 0 && ref_in[0] && i < ref_in[0]->numel)
            m = frac_dist_half(cg_tensor_get_f64(ref_in[0], i) / dq_scale) * fabs(dq_scale);
        else
            m = margin_of(node, rule, ref_in, in_count, ref_out, got_out, i);
        if (rule == M_QUANTIZE) {
            int64_t steps = (int64_t)fabs(g - r);
            out->max_steps = steps > out->max_steps ? steps : out->max_steps;
        }
        add_flip(out, node, m, i, floor_fp32, floor_fp16, k);
    }
    if (rule == M_NONE && out->flips)
        out->margin_known = false;
    return CG_OK;
}
