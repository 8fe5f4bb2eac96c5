/*
 * Gradient (ai.onnx.preview.training): dy/dx for every x named in the
 * attribute xs, by reverse-mode differentiation of the node's own graph.
 *
 * The node's inputs are the values of xs followed by those of zs (inputs of
 * the differentiated part that get no gradient). The kernel
 *  1. walks back from y through the producers in the node's graph, stopping
 *     at xs/zs names and initializers: those nodes form the sub-graph;
 *  2. re-runs that sub-graph forward in double from the node's inputs (it
 *     does not read the executor's copies of the intermediates, which may
 *     already have been released);
 *  3. seeds dy/dy = 1 (ONNX: y's gradient is all ones) and back-propagates
 *     in reverse graph order, summing over broadcast axes;
 *  4. writes dy/dx (zeros for an x that y does not depend on) in x's type.
 * Differentiable ops: Add, Sub, Mul, Div, Sum (multidirectional
 * broadcasting), Neg, Identity, Relu, Sigmoid, Tanh, Exp, Log, MatMul; Constant
 * may feed them. Any other op on the path fails, naming it. All memory is
 * kernel scratch, so every exit path is clean.
 */
#include <math.h>
#include <string.h>

#include "convgate/runtime.h"
#include "ir/walk.h"
#include "run/kernel.h"
#include "run/ops/kernels.h"

/* One value of the sub-graph: its forward result and, once reached by the
 * backward pass, the gradient of y with respect to it (same shape). */
typedef struct grad_val {
    const char *name;
    int rank;
    int64_t dims[CG_MAX_RANK];
    int64_t numel;
    double *data;
    double *grad; /* NULL until a gradient reaches the value */
} grad_val;

typedef struct grad_ctx {
    cg_kernel_ctx *k;
    const cg_graph *g;
    grad_val *vals;
    size_t count, cap;
} grad_ctx;

typedef enum grad_op {
    GOP_ADD, GOP_SUB, GOP_MUL, GOP_DIV, GOP_SUM,
    GOP_NEG, GOP_IDENTITY, GOP_RELU, GOP_SIGMOID, GOP_TANH, GOP_EXP, GOP_LOG,
    GOP_MATMUL, GOP_CONSTANT, GOP_UNKNOWN
} grad_op;

static const struct {
    const char *name;
    grad_op op;
} grad_ops[] = {
    {"Add", GOP_ADD},         {"Sub", GOP_SUB},         {"Mul", GOP_MUL},
    {"Div", GOP_DIV},         {"Sum", GOP_SUM},         {"Neg", GOP_NEG},
    {"Identity", GOP_IDENTITY}, {"Relu", GOP_RELU},     {"Sigmoid", GOP_SIGMOID},
    {"Tanh", GOP_TANH},       {"Exp", GOP_EXP},         {"Log", GOP_LOG},
    {"MatMul", GOP_MATMUL},   {"Constant", GOP_CONSTANT},
};

static grad_op lookup_op(const cg_node *n)
{
    if (!cg_domain_is_default(n->domain) || !n->op_type)
        return GOP_UNKNOWN;
    for (size_t i = 0; i < sizeof grad_ops / sizeof grad_ops[0]; i++)
        if (strcmp(n->op_type, grad_ops[i].name) == 0)
            return grad_ops[i].op;
    return GOP_UNKNOWN;
}

static const char *node_label(const cg_node *n)
{
    return n->name && n->name[0] ? n->name : (n->outputs && n->output_count ? n->outputs[0] : "?");
}

/* The value named `name`, or NULL. Sub-graphs are small; a linear scan is
 * enough. */
static grad_val *find_val(grad_ctx *c, const char *name)
{
    for (size_t i = 0; i < c->count; i++)
        if (strcmp(c->vals[i].name, name) == 0)
            return &c->vals[i];
    return NULL;
}

/* Zeroed scratch doubles for numel elements (numel >= 0). */
static double *alloc_doubles(grad_ctx *c, int64_t numel)
{
    if (numel < 0 || (uint64_t)numel > SIZE_MAX / sizeof(double))
        return NULL;
    size_t bytes = (size_t)numel * sizeof(double);
    double *p = cg_kernel_scratch(c->k, bytes ? bytes : 1);
    if (p && bytes)
        memset(p, 0, bytes);
    return p;
}

/* Appends a value of the given shape with zeroed data; *out points to it. */
static cg_status add_val(grad_ctx *c, const char *name, int rank, const int64_t *dims,
                         grad_val **out)
{
    if (c->count >= c->cap) /* cap counts every name that can be added */
        return cg_kernel_fail(c->k, CG_INVALID, "internal: too many values in the "
                              "differentiated sub-graph");
    if (rank < 0 || rank > CG_MAX_RANK)
        return cg_kernel_fail(c->k, CG_UNSUPPORTED, "value '%s' has rank %d (at most %d)",
                              name, rank, CG_MAX_RANK);
    grad_val *v = &c->vals[c->count];
    memset(v, 0, sizeof *v);
    v->name = name;
    v->rank = rank;
    if (rank)
        memcpy(v->dims, dims, (size_t)rank * sizeof *dims);
    if (!cg_shape_numel(rank, v->dims, &v->numel))
        return cg_kernel_fail(c->k, CG_INVALID, "value '%s': shape overflows", name);
    v->data = alloc_doubles(c, v->numel);
    if (!v->data)
        return cg_kernel_fail(c->k, CG_LIMIT, "value '%s': %lld elements do not fit in memory "
                              "or the allocation limit", name, (long long)v->numel);
    c->count++;
    *out = v;
    return CG_OK;
}

static bool is_numeric(cg_dtype dt)
{
    return cg_dtype_is_float(dt) || cg_dtype_is_int(dt) || dt == CG_DTYPE_BOOL;
}

/* Adds a value holding a copy of tensor t converted to double. */
static cg_status add_tensor(grad_ctx *c, const char *name, const cg_tensor *t)
{
    if (!is_numeric(t->dtype))
        return cg_kernel_fail(c->k, CG_UNSUPPORTED, "value '%s' has type %s, which cannot be "
                              "differentiated", name, cg_dtype_name(t->dtype));
    grad_val *v;
    cg_status st = add_val(c, name, t->rank, t->dims, &v);
    if (st != CG_OK)
        return st;
    for (int64_t i = 0; i < v->numel; i++)
        v->data[i] = cg_tensor_get_f64(t, i);
    return CG_OK;
}

/* Adds a value converted from a TensorProto (initializer, Constant). */
static cg_status add_proto(grad_ctx *c, const char *name, const cg_tensor_proto *tp)
{
    cg_value *pv = NULL;
    cg_error perr;
    cg_error_clear(&perr);
    cg_status st = cg_value_from_tensor_proto(tp, &pv, &perr);
    if (st != CG_OK)
        return cg_kernel_fail(c->k, st, "cannot convert tensor '%s': %s", name, perr.msg);
    if (pv->kind != CG_VALUE_TENSOR)
        st = cg_kernel_fail(c->k, CG_UNSUPPORTED, "tensor '%s' is not a dense tensor", name);
    else
        st = add_tensor(c, name, &pv->tensor);
    cg_value_free(pv);
    return st;
}

/* Offset in an input of the element at linear index o of the broadcast
 * output (dims, rank), given the input's broadcast strides. */
static int64_t bcast_offset(int rank, const int64_t *dims, const int64_t *strides, int64_t o)
{
    int64_t off = 0;
    for (int d = rank - 1; d >= 0; d--) {
        int64_t idx = dims[d] ? o % dims[d] : 0;
        o = dims[d] ? o / dims[d] : 0;
        off += idx * strides[d];
    }
    return off;
}

static const char *op_name(const cg_node *n) { return n->op_type ? n->op_type : "?"; }

/* Inputs of node n as values (all must exist: the forward pass ran their
 * producers first). */
static cg_status node_inputs(grad_ctx *c, const cg_node *n, grad_val **ins)
{
    for (size_t i = 0; i < n->input_count; i++) {
        const char *nm = n->inputs[i];
        ins[i] = nm && nm[0] ? find_val(c, nm) : NULL;
        if (!ins[i])
            return cg_kernel_fail(c->k, CG_INVALID, "node '%s' (%s): input %zu '%s' has no "
                                  "value in the differentiated sub-graph", node_label(n),
                                  op_name(n), i, nm ? nm : "");
    }
    return CG_OK;
}

/* Checks arity: node n of a supported op takes [lo, hi] inputs and 1 output. */
static cg_status check_arity(grad_ctx *c, const cg_node *n, size_t lo, size_t hi)
{
    if (n->input_count < lo || n->input_count > hi || n->output_count != 1 ||
        !n->outputs[0] || !n->outputs[0][0])
        return cg_kernel_fail(c->k, CG_INVALID, "node '%s' (%s) has %zu inputs and %zu "
                              "outputs; Gradient expects %zu..%zu inputs and one output",
                              node_label(n), op_name(n), n->input_count, n->output_count, lo,
                              hi);
    return CG_OK;
}

/* --- MatMul geometry ------------------------------------------------------ */

/* numpy matmul of A and B: batch dims broadcast, rank-1 operands promoted
 * (A to [1, K], B to [K, 1]) and the promoted axis dropped from the result. */
typedef struct mm_geom {
    int64_t m, kk, n;
    int batch_rank;
    int64_t batch[CG_MAX_RANK];
    int64_t a_strides[CG_MAX_RANK], b_strides[CG_MAX_RANK]; /* in matrices */
    int64_t batches;
    int out_rank;
    int64_t out_dims[CG_MAX_RANK];
} mm_geom;

static cg_status mm_plan(grad_ctx *c, const cg_node *n, const grad_val *a, const grad_val *b,
                         mm_geom *g)
{
    memset(g, 0, sizeof *g);
    if (a->rank < 1 || b->rank < 1)
        return cg_kernel_fail(c->k, CG_INVALID, "node '%s' (MatMul): operands must have rank "
                              ">= 1, got %d and %d", node_label(n), a->rank, b->rank);
    g->m = a->rank == 1 ? 1 : a->dims[a->rank - 2];
    g->kk = a->dims[a->rank - 1];
    int64_t kb = b->rank == 1 ? b->dims[0] : b->dims[b->rank - 2];
    g->n = b->rank == 1 ? 1 : b->dims[b->rank - 1];
    if (kb != g->kk)
        return cg_kernel_fail(c->k, CG_INVALID, "node '%s' (MatMul): inner dimensions differ "
                              "(%lld vs %lld)", node_label(n), (long long)g->kk, (long long)kb);
    int ab = a->rank > 2 ? a->rank - 2 : 0, bb = b->rank > 2 ? b->rank - 2 : 0;
    if (!cg_broadcast_shapes(ab, a->dims, bb, b->dims, &g->batch_rank, g->batch))
        return cg_kernel_fail(c->k, CG_INVALID, "node '%s' (MatMul): batch dimensions do not "
                              "broadcast", node_label(n));
    cg_broadcast_strides(ab, a->dims, g->batch_rank, g->batch, g->a_strides);
    cg_broadcast_strides(bb, b->dims, g->batch_rank, g->batch, g->b_strides);
    if (!cg_shape_numel(g->batch_rank, g->batch, &g->batches))
        return cg_kernel_fail(c->k, CG_INVALID, "node '%s' (MatMul): shape overflows",
                              node_label(n));
    g->out_rank = g->batch_rank;
    memcpy(g->out_dims, g->batch, (size_t)g->batch_rank * sizeof g->batch[0]);
    if (a->rank > 1)
        g->out_dims[g->out_rank++] = g->m;
    if (b->rank > 1)
        g->out_dims[g->out_rank++] = g->n;
    return CG_OK;
}

/* --- forward -------------------------------------------------------------- */

static double unary_fwd(grad_op op, double x)
{
    switch (op) {
    case GOP_NEG: return -x;
    case GOP_RELU: return x > 0.0 ? x : 0.0;
    case GOP_SIGMOID: return 1.0 / (1.0 + exp(-x));
    case GOP_TANH: return tanh(x);
    case GOP_EXP: return exp(x);
    case GOP_LOG: return log(x);
    default: return x; /* Identity */
    }
}

/* d(out)/d(in) from the input x and the output y. */
static double unary_deriv(grad_op op, double x, double y)
{
    switch (op) {
    case GOP_NEG: return -1.0;
    case GOP_RELU: return x > 0.0 ? 1.0 : 0.0;
    case GOP_SIGMOID: return y * (1.0 - y);
    case GOP_TANH: return 1.0 - y * y;
    case GOP_EXP: return y;
    case GOP_LOG: return 1.0 / x;
    default: return 1.0; /* Identity */
    }
}

static double binary_fwd(grad_op op, double a, double b)
{
    switch (op) {
    case GOP_SUB: return a - b;
    case GOP_MUL: return a * b;
    case GOP_DIV: return a / b;
    default: return a + b; /* Add, Sum */
    }
}

/* Broadcast output shape of a node's inputs. */
static cg_status bcast_shape(grad_ctx *c, const cg_node *n, grad_val **ins, size_t nin,
                             int *rank, int64_t *dims)
{
    *rank = ins[0]->rank;
    memcpy(dims, ins[0]->dims, (size_t)ins[0]->rank * sizeof dims[0]);
    for (size_t i = 1; i < nin; i++) {
        int64_t tmp[CG_MAX_RANK];
        int r;
        if (!cg_broadcast_shapes(*rank, dims, ins[i]->rank, ins[i]->dims, &r, tmp))
            return cg_kernel_fail(c->k, CG_INVALID, "node '%s' (%s): input shapes do not "
                                  "broadcast", node_label(n), op_name(n));
        *rank = r;
        memcpy(dims, tmp, (size_t)r * sizeof dims[0]);
    }
    return CG_OK;
}

/* Evaluates Constant node n into a new value. */
static cg_status eval_constant(grad_ctx *c, const cg_node *n)
{
    const char *out = n->outputs[0];
    for (size_t i = 0; i < n->attr_count; i++) {
        const cg_attr *a = &n->attrs[i];
        if (!a->name)
            continue;
        grad_val *v;
        cg_status st;
        if (strcmp(a->name, "value") == 0 && a->t)
            return add_proto(c, out, a->t);
        if (strcmp(a->name, "value_float") == 0 || strcmp(a->name, "value_int") == 0) {
            st = add_val(c, out, 0, NULL, &v);
            if (st == CG_OK)
                v->data[0] = a->name[6] == 'f' ? (double)a->f : (double)a->i;
            return st;
        }
        if (strcmp(a->name, "value_floats") == 0 || strcmp(a->name, "value_ints") == 0) {
            bool fl = a->name[6] == 'f';
            int64_t len = (int64_t)(fl ? a->floats_count : a->ints_count);
            st = add_val(c, out, 1, &len, &v);
            for (int64_t e = 0; st == CG_OK && e < len; e++)
                v->data[e] = fl ? (double)a->floats[e] : (double)a->ints[e];
            return st;
        }
    }
    return cg_kernel_fail(c->k, CG_UNSUPPORTED, "node '%s' (Constant): only value, value_float"
                          "(s) and value_int(s) are supported inside Gradient's sub-graph",
                          node_label(n));
}

/* Runs node n forward, adding its output value. */
static cg_status eval_node(grad_ctx *c, const cg_node *n, grad_op op)
{
    if (op == GOP_CONSTANT) {
        cg_status st = check_arity(c, n, 0, 0);
        return st != CG_OK ? st : eval_constant(c, n);
    }
    /* The supported ops take no attributes in any current opset; old ones
     * (broadcast/axis, consumed_inputs) would change the semantics. */
    if (n->attr_count)
        return cg_kernel_fail(c->k, CG_UNSUPPORTED, "node '%s' (%s): attribute '%s' is not "
                              "supported inside Gradient's sub-graph", node_label(n),
                              op_name(n), n->attrs[0].name ? n->attrs[0].name : "?");
    size_t lo = 1, hi = 1;
    if (op == GOP_ADD || op == GOP_SUB || op == GOP_MUL || op == GOP_DIV || op == GOP_MATMUL)
        lo = hi = 2;
    else if (op == GOP_SUM)
        hi = SIZE_MAX;
    cg_status st = check_arity(c, n, lo, hi);
    if (st != CG_OK)
        return st;
    grad_val **ins = cg_kernel_scratch(c->k, n->input_count * sizeof *ins);
    if (!ins)
        return cg_kernel_fail(c->k, CG_NOMEM, "out of memory");
    st = node_inputs(c, n, ins);
    if (st != CG_OK)
        return st;
    grad_val *out;

    if (op == GOP_MATMUL) {
        mm_geom g;
        st = mm_plan(c, n, ins[0], ins[1], &g);
        if (st == CG_OK)
            st = add_val(c, n->outputs[0], g.out_rank, g.out_dims, &out);
        if (st != CG_OK)
            return st;
        const double *A = ins[0]->data, *B = ins[1]->data;
        for (int64_t bi = 0; bi < g.batches; bi++) {
            const double *a = A + bcast_offset(g.batch_rank, g.batch, g.a_strides, bi) * g.m * g.kk;
            const double *b = B + bcast_offset(g.batch_rank, g.batch, g.b_strides, bi) * g.kk * g.n;
            double *o = out->data + bi * g.m * g.n;
            for (int64_t i = 0; i < g.m; i++)
                for (int64_t p = 0; p < g.kk; p++)
                    for (int64_t j = 0; j < g.n; j++)
                        o[i * g.n + j] += a[i * g.kk + p] * b[p * g.n + j];
        }
        return CG_OK;
    }

    if (n->input_count == 1 && op != GOP_SUM) {
        st = add_val(c, n->outputs[0], ins[0]->rank, ins[0]->dims, &out);
        if (st != CG_OK)
            return st;
        for (int64_t e = 0; e < out->numel; e++)
            out->data[e] = unary_fwd(op, ins[0]->data[e]);
        return CG_OK;
    }

    /* Add/Sub/Mul/Div and Sum: fold the inputs left to right. */
    int rank;
    int64_t dims[CG_MAX_RANK], strides[CG_MAX_RANK];
    st = bcast_shape(c, n, ins, n->input_count, &rank, dims);
    if (st == CG_OK)
        st = add_val(c, n->outputs[0], rank, dims, &out);
    if (st != CG_OK)
        return st;
    for (size_t i = 0; i < n->input_count; i++) {
        cg_broadcast_strides(ins[i]->rank, ins[i]->dims, rank, dims, strides);
        for (int64_t e = 0; e < out->numel; e++) {
            double v = ins[i]->data[bcast_offset(rank, dims, strides, e)];
            out->data[e] = i == 0 ? v : binary_fwd(op, out->data[e], v);
        }
    }
    return CG_OK;
}

/* --- backward ------------------------------------------------------------- */

/* The gradient buffer of v, allocated (zeros) on first use. */
static cg_status ensure_grad(grad_ctx *c, grad_val *v)
{
    if (v->grad)
        return CG_OK;
    v->grad = alloc_doubles(c, v->numel);
    if (!v->grad)
        return cg_kernel_fail(c->k, CG_NOMEM, "out of memory for the gradient of '%s'", v->name);
    return CG_OK;
}

/* Propagates the gradient of node n's output to its inputs. */
static cg_status back_node(grad_ctx *c, const cg_node *n, grad_op op)
{
    if (op == GOP_CONSTANT)
        return CG_OK;
    grad_val *out = find_val(c, n->outputs[0]);
    if (!out || !out->grad)
        return CG_OK; /* y does not depend on this node */
    grad_val **ins = cg_kernel_scratch(c->k, n->input_count * sizeof *ins);
    if (!ins)
        return cg_kernel_fail(c->k, CG_NOMEM, "out of memory");
    cg_status st = node_inputs(c, n, ins);
    for (size_t i = 0; st == CG_OK && i < n->input_count; i++)
        st = ensure_grad(c, ins[i]);
    if (st != CG_OK)
        return st;
    const double *go = out->grad;

    if (op == GOP_MATMUL) {
        mm_geom g;
        st = mm_plan(c, n, ins[0], ins[1], &g);
        if (st != CG_OK)
            return st;
        /* dA = dC B^T and dB = A^T dC, summed over broadcast batches. */
        for (int64_t bi = 0; bi < g.batches; bi++) {
            int64_t ao = bcast_offset(g.batch_rank, g.batch, g.a_strides, bi) * g.m * g.kk;
            int64_t bo = bcast_offset(g.batch_rank, g.batch, g.b_strides, bi) * g.kk * g.n;
            const double *a = ins[0]->data + ao, *b = ins[1]->data + bo;
            double *da = ins[0]->grad + ao, *db = ins[1]->grad + bo;
            const double *dc = go + bi * g.m * g.n;
            for (int64_t i = 0; i < g.m; i++)
                for (int64_t p = 0; p < g.kk; p++)
                    for (int64_t j = 0; j < g.n; j++) {
                        da[i * g.kk + p] += dc[i * g.n + j] * b[p * g.n + j];
                        db[p * g.n + j] += a[i * g.kk + p] * dc[i * g.n + j];
                    }
        }
        return CG_OK;
    }

    if (n->input_count == 1 && op != GOP_SUM) {
        grad_val *x = ins[0];
        for (int64_t e = 0; e < out->numel; e++)
            x->grad[e] += go[e] * unary_deriv(op, x->data[e], out->data[e]);
        return CG_OK;
    }

    int64_t sa[CG_MAX_RANK], sb[CG_MAX_RANK];
    if (op == GOP_SUM) {
        /* Every input receives the output gradient, reduced over the axes
         * along which it was broadcast. */
        for (size_t i = 0; i < n->input_count; i++) {
            cg_broadcast_strides(ins[i]->rank, ins[i]->dims, out->rank, out->dims, sa);
            for (int64_t e = 0; e < out->numel; e++)
                ins[i]->grad[bcast_offset(out->rank, out->dims, sa, e)] += go[e];
        }
        return CG_OK;
    }
    grad_val *A = ins[0], *B = ins[1];
    cg_broadcast_strides(A->rank, A->dims, out->rank, out->dims, sa);
    cg_broadcast_strides(B->rank, B->dims, out->rank, out->dims, sb);
    for (int64_t e = 0; e < out->numel; e++) {
        int64_t ia = bcast_offset(out->rank, out->dims, sa, e);
        int64_t ib = bcast_offset(out->rank, out->dims, sb, e);
        double a = A->data[ia], b = B->data[ib], da, db;
        switch (op) {
        case GOP_SUB: da = 1.0; db = -1.0; break;
        case GOP_MUL: da = b; db = a; break;
        case GOP_DIV: da = 1.0 / b; db = -a / (b * b); break;
        default: da = 1.0; db = 1.0; break; /* Add */
        }
        /* A and B may be the same value (Mul(x, x)): both terms add up. */
        A->grad[ia] += go[e] * da;
        B->grad[ib] += go[e] * db;
    }
    return CG_OK;
}

/* --- the kernel ------------------------------------------------------------ */

/* NUL-terminated scratch copy of a STRINGS attribute element. */
static const char *attr_text(cg_kernel_ctx *k, const cg_bytes *b)
{
    if (!b->data && b->len)
        return NULL;
    if (b->len && memchr(b->data, '\0', b->len))
        return NULL;
    char *s = cg_kernel_scratch(k, b->len + 1);
    if (!s)
        return NULL;
    if (b->len)
        memcpy(s, b->data, b->len);
    s[b->len] = '\0';
    return s;
}

/* Names of a STRINGS attribute as C strings; *n = 0 when absent. */
static cg_status attr_names(cg_kernel_ctx *k, const char *name, const char ***out, size_t *n)
{
    const cg_attr *a = cg_kernel_attr(k, name);
    *out = NULL;
    *n = 0;
    if (!a)
        return CG_OK;
    if (a->has_type && a->type != CG_ATTR_STRINGS)
        return cg_kernel_fail(k, CG_INVALID, "attribute '%s' must be a list of strings", name);
    if (!a->strings_count)
        return CG_OK;
    const char **names = cg_kernel_scratch(k, a->strings_count * sizeof *names);
    if (!names)
        return cg_kernel_fail(k, CG_NOMEM, "out of memory");
    for (size_t i = 0; i < a->strings_count; i++) {
        names[i] = attr_text(k, &a->strings[i]);
        if (!names[i] || !names[i][0])
            return cg_kernel_fail(k, CG_INVALID, "attribute '%s' entry %zu is empty or not "
                                  "a valid name", name, i);
    }
    *out = names;
    *n = a->strings_count;
    return CG_OK;
}

/* Index of the node of g producing `name`, or -1. */
static ptrdiff_t find_producer(const cg_graph *g, const char *name)
{
    for (size_t i = 0; i < g->node_count; i++) {
        const cg_node *n = &g->nodes[i];
        for (size_t o = 0; o < n->output_count; o++)
            if (n->outputs[o] && strcmp(n->outputs[o], name) == 0)
                return (ptrdiff_t)i;
    }
    return -1;
}

/* Marks (needed[i]) the nodes between the leaves (already in c->vals) and
 * y, loading the initializers they read. */
static cg_status mark_subgraph(grad_ctx *c, const char *y, bool *needed)
{
    const cg_graph *g = c->g;
    size_t stack_cap = 1;
    for (size_t i = 0; i < g->node_count; i++)
        stack_cap += g->nodes[i].input_count;
    const char **stack = cg_kernel_scratch(c->k, stack_cap * sizeof *stack);
    if (!stack)
        return cg_kernel_fail(c->k, CG_NOMEM, "out of memory");
    size_t top = 0;
    stack[top++] = y;
    while (top) {
        const char *name = stack[--top];
        if (!name || !name[0] || find_val(c, name))
            continue;
        ptrdiff_t p = find_producer(g, name);
        if (p >= 0) {
            const cg_node *n = &g->nodes[p];
            if (n == c->k->node)
                return cg_kernel_fail(c->k, CG_INVALID, "y '%s' depends on this Gradient "
                                      "node's own output '%s'", y, name);
            if (needed[p])
                continue;
            needed[p] = true;
            /* Each node is marked once, so its inputs are pushed once:
             * stack_cap bounds the pushes. */
            for (size_t i = 0; i < n->input_count; i++)
                stack[top++] = n->inputs[i];
            continue;
        }
        const cg_tensor_proto *init = cg_graph_initializer(g, name);
        if (init) {
            cg_status st = add_proto(c, name, init);
            if (st != CG_OK)
                return st;
            continue;
        }
        return cg_kernel_fail(c->k, CG_INVALID, "value '%s', needed to compute y '%s', is not "
                              "in xs or zs, not an initializer and not produced by a node of "
                              "this graph", name, y);
    }
    return CG_OK;
}

cg_status cg_op_gradient(cg_kernel_ctx *k)
{
    const char **xs, **zs;
    size_t nx, nz;
    cg_status st = attr_names(k, "xs", &xs, &nx);
    if (st == CG_OK)
        st = attr_names(k, "zs", &zs, &nz);
    if (st != CG_OK)
        return st;
    if (nx == 0)
        return cg_kernel_fail(k, CG_INVALID, "attribute 'xs' is required and must name at "
                              "least one value");
    const char *y = cg_attr_string(k, "y", NULL);
    if (!y || !y[0])
        return cg_kernel_fail(k, CG_INVALID, "attribute 'y' is required");
    if (k->input_count != nx + nz)
        return cg_kernel_fail(k, CG_INVALID, "%zu inputs, but xs and zs name %zu values",
                              k->input_count, nx + nz);
    if (k->output_count > nx)
        return cg_kernel_fail(k, CG_INVALID, "%zu outputs, but xs names only %zu values",
                              k->output_count, nx);
    if (!k->graph)
        return cg_kernel_fail(k, CG_INVALID, "the node's graph is not available");

    grad_ctx c;
    memset(&c, 0, sizeof c);
    c.k = k;
    c.g = k->graph;
    c.cap = nx + nz + c.g->initializer_count;
    for (size_t i = 0; i < c.g->node_count; i++)
        c.cap += c.g->nodes[i].output_count;
    c.vals = cg_kernel_scratch(k, c.cap * sizeof *c.vals);
    bool *needed = cg_kernel_scratch(k, c.g->node_count ? c.g->node_count : 1);
    if (!c.vals || !needed)
        return cg_kernel_fail(k, CG_NOMEM, "out of memory");
    memset(needed, 0, c.g->node_count);

    /* Leaves: the node's inputs under their xs / zs names. */
    for (size_t i = 0; i < nx + nz; i++) {
        const char *name = i < nx ? xs[i] : zs[i - nx];
        const cg_tensor *t;
        st = cg_kernel_require(k, i, &t);
        if (st != CG_OK)
            return st;
        if (find_val(&c, name))
            continue; /* a name listed twice: the first binding wins */
        st = add_tensor(&c, name, t);
        if (st != CG_OK)
            return st;
    }

    st = mark_subgraph(&c, y, needed);
    if (st != CG_OK)
        return st;
    for (size_t i = 0; i < c.g->node_count; i++) {
        if (!needed[i])
            continue;
        const cg_node *n = &c.g->nodes[i];
        grad_op op = lookup_op(n);
        if (op == GOP_UNKNOWN)
            return cg_kernel_fail(k, CG_UNSUPPORTED, "node '%s' (%s%s%s) lies between xs and y "
                                  "'%s', and Gradient cannot differentiate it (supported: Add, "
                                  "Sub, Mul, Div, Sum, Neg, Identity, Relu, Sigmoid, Tanh, "
                                  "Exp, Log, MatMul, Constant)", node_label(n),
                                  cg_domain_is_default(n->domain) ? "" : n->domain,
                                  cg_domain_is_default(n->domain) ? "" : ".", op_name(n), y);
        st = eval_node(&c, n, op);
        if (st != CG_OK)
            return st;
    }

    grad_val *yv = find_val(&c, y);
    if (!yv)
        return cg_kernel_fail(k, CG_INVALID, "y '%s' was not computed", y);
    st = ensure_grad(&c, yv);
    if (st != CG_OK)
        return st;
    for (int64_t e = 0; e < yv->numel; e++)
        yv->grad[e] = 1.0;
    for (size_t i = c.g->node_count; i-- > 0;) {
        if (!needed[i])
            continue;
        const cg_node *n = &c.g->nodes[i];
        st = back_node(&c, n, lookup_op(n));
        if (st != CG_OK)
            return st;
    }

    for (size_t i = 0; i < k->output_count; i++) {
        const cg_tensor *x = cg_kernel_input(k, i);
        grad_val *xv = find_val(&c, xs[i]);
        if (x->dtype != CG_DTYPE_FLOAT && x->dtype != CG_DTYPE_DOUBLE &&
            x->dtype != CG_DTYPE_FLOAT16)
            return cg_kernel_fail(k, CG_UNSUPPORTED, "xs[%zu] '%s' has type %s; gradients are "
                                  "float16, float or double", i, xs[i],
                                  cg_dtype_name(x->dtype));
        cg_tensor *out;
        st = cg_kernel_output(k, i, x->dtype, x->rank, x->dims, &out);
        if (st != CG_OK)
            return st;
        /* xv->grad is NULL when y does not depend on x: the output stays 0. */
        for (int64_t e = 0; xv && xv->grad && e < out->numel; e++)
            cg_tensor_set_f64(out, e, xv->grad[e]);
    }
    return CG_OK;
}
