/*
 * "onnx-to-aten": the graph ExecuTorch's XNNPACK partitioner sees when the
 * model is the PyTorch module an ONNX graph stands for, exported with
 * torch.export and lowered with to_edge_transform_and_lower: each ONNX node
 * becomes the edge-dialect core-ATen op(s) that module's call decomposes
 * to, named as the partitioner's configs name them (target_name,
 * pytorch/executorch@cff6f4dd32e6 backends/xnnpack/partition/config/)
 * and judged by the executorch-xnnpack profile's `aten:*` rules.
 *
 * Sources (each row of the mapping cites one):
 *  [ET-cfg]  pytorch/executorch@cff6f4dd32e6 backends/xnnpack/partition/
 *            config/{generic_node_configs,gemm_configs,node_configs}.py:
 *            the target names; get_original_aten() keeps linear, max_pool2d,
 *            hardswish and upsample_bilinear2d from being decomposed
 *            (exir/backend/canonical_partitioners/config_partitioner.py,
 *            ops_to_not_decompose).
 *  [ET-test] the same revision, backends/xnnpack/test/ops/test_<op>.py: the
 *            edge ops each module is checked to produce
 *            (executorch_exir_dialects_edge__ops_aten_<op>): test_linear
 *            (linear, addmm, mm), test_bmm, test_batch_norm
 *            (_native_batch_norm_legit_no_training), test_hardtanh,
 *            test_clamp, test_clone (clone, _clone_dim_order), test_permute
 *            (permute_copy), test_prelu (prelu kept), test_maxpool2d.
 *  [ET-edge] exir_ops.edge.aten._adaptive_avg_pool2d.default, an edge op
 *            other backends convert (backends/arm/_passes/
 *            decompose_adaptive_avg_pool2d_pass.py, backends/nxp/
 *            neutron_partitioner.py): global average pooling stays that op.
 *  [PT-dec]  pytorch/pytorch@dec01e4c6f71 torch/_decomp/decompositions.py:
 *            dropout(train=False) is input.clone().
 *  [PT-mm]   torch.matmul (ATen LinearAlgebra.cpp _matmul_impl): 2-D x 2-D
 *            is mm; N-D x 2-D folds the batch into rows (view, mm, view);
 *            N-D x N-D is bmm between views (expand where batch dims
 *            broadcast); 1-D x 1-D dot, 2-D x 1-D mv.
 *  [ET-flow] the same revision: exir/backend/canonical_partitioners/
 *            config_partitioner.py get_matched_nodes_from_configs walks
 *            ep.graph_module.graph.nodes (the top-level graph; to_backend's
 *            recursion into cond/map/scan submodules in exir/backend/
 *            backend_api.py lowers only nodes a partitioner tagged);
 *            exir/emit/_emitter.py emits cond as JumpFalseCall around the
 *            inlined branches (_emit_cond), map and scan likewise, and
 *            raises "Unsupported control flow operator" for while_loop
 *            (_emit_control_flow; exir/program/test/test_program.py
 *            test_while expects exactly that from to_executorch).
 *  [edge]    the edge dialect's view ops are the copy variants (view_copy,
 *            permute_copy, squeeze_copy, unsqueeze_copy, slice_copy,
 *            expand_copy), as the configs' target names are.
 *
 * GELU: nn.GELU is aten.gelu under torch.export (a core ATen op, taken by
 * [ET-cfg] GeluConfig in fp32, test_gelu); torch.onnx writes it as five
 * nodes (nine for approximate="tanh"), which lower_match_gelu finds and
 * which become that one gelu, the others folded into it.
 *
 * What has no op: a Constant node (a lifted constant of the exported
 * program), an Identity (nn.Identity returns its input), a node computed
 * only from constants, and the Shape of a tensor whose shape is static (a
 * Python int under torch.export): the equivalent module holds the folded
 * value as a parameter. These are removed (lg_remove, with why). An ONNX
 * op this mapping does not know keeps its op type in domain "onnx", which
 * no aten:* rule takes, so it is refused naming it.
 *
 * Control flow ([ET-flow]): If, Loop and Scan become the higher-order ops
 * torch.cond, torch.while_loop and torch.scan (domain "higher_order"),
 * which no config names; only the main graph is mapped. The partitioner
 * tags nodes of the top-level graph only, so nothing inside a cond or scan
 * is delegated: it and its bodies run in ExecuTorch's portable runtime.
 * while_loop is not emitted at all at this revision: to_executorch fails.
 *
 * Values keep their names and NCHW types (every value's type is declared:
 * the reference cannot run ATen ops); values the mapping makes are named
 * "<node>/<what>".
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/arena.h"
#include "core/strmap.h"
#include "ir/walk.h"
#include "lower/lower_internal.h"

#define EA_DOMAIN "aten"
/* torch.ops.higher_order: cond, while_loop, scan ([ET-flow]) */
#define EA_HIGHER_ORDER "higher_order"

/* 1:1 ops: the ONNX op, the ATen op its module call exports as, the
 * overload ([ET-cfg] target names; ops without an XNNPACK config are
 * listed so that the refusal names the ATen op). */
typedef struct ea_row {
    const char *onnx, *aten, *overload;
} ea_row;

static const ea_row one_to_one[] = {
    {"Abs", "abs", "default"},           {"Ceil", "ceil", "default"},
    {"Floor", "floor", "default"},       {"Exp", "exp", "default"},
    {"Log", "log", "default"},           {"Sin", "sin", "default"},
    {"Cos", "cos", "default"},           {"Sigmoid", "sigmoid", "default"},
    {"Tanh", "tanh", "default"},         {"Neg", "neg", "default"},
    {"Sqrt", "sqrt", "default"},         {"Relu", "relu", "default"},
    {"HardSwish", "hardswish", "default"}, {"LeakyRelu", "leaky_relu", "default"},
    {"Gelu", "gelu", "default"},         {"Elu", "elu", "default"},
    {"PRelu", "prelu", "default"},       {"Add", "add", "Tensor"},
    {"Sub", "sub", "Tensor"},            {"Mul", "mul", "Tensor"},
    {"Div", "div", "Tensor"},            {"Concat", "cat", "default"},
    {"Erf", "erf", "default"},           {"Reciprocal", "reciprocal", "default"},
    {"Where", "where", "self"},
    {"Equal", "eq", "Tensor"},           {"Less", "lt", "Tensor"},
    {"Greater", "gt", "Tensor"},         {"Not", "logical_not", "default"},
    {"Cast", "_to_copy", "default"},     {"Tile", "repeat", "default"},
    {"Expand", "expand_copy", "default"}, {"Round", "round", "default"},
};

typedef struct ea_ctx {
    lg_model *m;
    lg_graph *lg;        /* the main graph: source node i is its node i */
    const cg_graph *g;   /* the source main graph */
    cg_type_env *types;  /* the source's types at the lowering's dims */
    size_t n;            /* source node count */
    lower_alias alias;     /* removed node's output -> the value it passes through */
    cg_strmap folded;    /* values with no op behind them (constants) */
    cg_strmap made;      /* names taken: the source's values (0) and the mapping's (1) */
    bool *skip;          /* per source node: removed */
    const char **why;    /* per source node: why */
    size_t *into;        /* per source node: the source node it folded into, or SIZE_MAX */
    size_t *op;          /* per source node: its (first) ATen node, or SIZE_MAX */
    lower_gelu *gelu;    /* per source node: the GELU pattern it opens (count 0: none) */
    int64_t opset;       /* of the default domain */
} ea_ctx;

static bool is_op(const cg_node *n, const char *op) { return lower_is_onnx_op(n, op); }

static const char *resolve(ea_ctx *c, const char *name)
{
    return lower_alias_resolve(&c->alias, name);
}

static bool add_alias(ea_ctx *c, const char *from, const char *to)
{
    return lower_alias_add(&c->alias, from, to);
}

static const cg_value_type *vtype(ea_ctx *c, const char *name)
{
    if (!name || !*name)
        return NULL;
    const cg_value_type *t = cg_type_env_get(c->types, name);
    if (!t)
        t = cg_type_env_get(c->types, resolve(c, name));
    return t;
}

/* The rank and every dim of a value, when all are known. */
static bool known_shape(ea_ctx *c, const char *name, int *rank, int64_t *dims)
{
    const cg_value_type *t = vtype(c, name);
    if (!t || !t->known || t->rank > CG_MAX_RANK)
        return false;
    for (int d = 0; d < t->rank; d++)
        if (t->dims[d] < 0)
            return false;
    *rank = t->rank;
    memcpy(dims, t->dims, (size_t)t->rank * sizeof *dims);
    return true;
}

static int value_rank(ea_ctx *c, const char *name)
{
    const cg_value_type *t = vtype(c, name);
    return t && t->known ? t->rank : -1;
}

static bool is_const(ea_ctx *c, const char *name)
{
    const cg_value_type *t = cg_type_env_get(c->types, name);
    if (t && t->is_const)
        return true;
    name = resolve(c, name);
    return name && cg_strmap_has(&c->folded, name);
}

/* The value of a constant: an initializer of the lowered graph that has
 * data (a source initializer, or a Constant / folded value evaluated by
 * plan_removals). */
static const cg_tensor_proto *source_init(ea_ctx *c, const char *name)
{
    return lg_initializer(c->lg, name, false);
}

/* A float scalar (one element) of an initializer of the lowered graph (a
 * folded value too) or of the source (lower_graph_scalar). */
static bool const_scalar(ea_ctx *c, const char *name, double *out)
{
    if (!name || !*name)
        return false;
    const cg_tensor_proto *t = source_init(c, name);
    int64_t numel = 0;
    if (t)
        return lg_tensor_numel(t, &numel) && numel == 1 && lg_tensor_f64(t, 0, out);
    return lower_graph_scalar(c->g, name, out);
}

/* The int64 elements of a constant vector (initializer or Constant node). */
static bool const_ints(ea_ctx *c, const char *name, int64_t *out, size_t *count, size_t max)
{
    const cg_tensor_proto *t = name && *name ? source_init(c, name) : NULL;
    for (size_t i = 0; !t && name && *name && i < c->g->node_count; i++) {
        const cg_node *n = &c->g->nodes[i];
        if (is_op(n, "Constant") && n->output_count && strcmp(n->outputs[0], name) == 0) {
            const cg_attr *v = cg_node_attr(n, "value");
            t = v ? v->t : NULL;
        }
    }
    int64_t numel = 0;
    if (!t || !lg_tensor_numel(t, &numel) || numel < 0 || (uint64_t)numel > max)
        return false;
    for (int64_t k = 0; k < numel; k++)
        if (!lg_tensor_i64(t, k, &out[k]))
            return false;
    *count = (size_t)numel;
    return true;
}

/* n's "axes": the attribute (Squeeze, Unsqueeze and ReduceMean before
 * opsets 13 and 18) or the constant second input; *count 0 when neither is
 * given. False when the input is not a constant (axes computed at run time). */
static bool node_axes(ea_ctx *c, const cg_node *n, int64_t axes[CG_MAX_RANK], size_t *count)
{
    const cg_attr *aa = cg_node_attr(n, "axes");
    *count = 0;
    if (aa && aa->ints_count <= CG_MAX_RANK) {
        memcpy(axes, aa->ints, aa->ints_count * sizeof *axes);
        *count = aa->ints_count;
    } else if (n->input_count > 1 && *n->inputs[1]) {
        return const_ints(c, n->inputs[1], axes, count, CG_MAX_RANK);
    }
    return true;
}

/* The declared type of a value made here, or a source value's own. */
static bool declare(ea_ctx *c, const char *name, int32_t dtype, int rank, const int64_t *dims)
{
    lg_type lt;
    memset(&lt, 0, sizeof lt);
    lt.has_dtype = true;
    lt.dtype = dtype;
    if (rank >= 0 && rank <= CG_MAX_RANK) {
        lt.has_shape = true;
        lt.rank = rank;
        for (int d = 0; d < rank; d++) {
            lt.dims[d] = dims[d];
            if (dims[d] >= 0)
                lt.dim_known |= 1u << d;
        }
    }
    return lg_type_set(c->lg, name, &lt);
}

static bool declare_source(ea_ctx *c, const char *name)
{
    const cg_value_type *t = cg_type_env_get(c->types, name);
    if (!t || !t->known)
        return true;
    return declare(c, name, (int32_t)t->dtype, t->rank, t->dims);
}

static int32_t dtype_of(ea_ctx *c, const char *name)
{
    const cg_value_type *t = vtype(c, name);
    return t && t->known ? (int32_t)t->dtype : CG_DTYPE_FLOAT;
}

/* A name for a value the mapping makes: "<base>/<what>", unique. */
static const char *made_name(ea_ctx *c, const char *base, const char *what)
{
    char buf[512];
    snprintf(buf, sizeof buf, "%s/%s", base, what);
    const char *name = lg_strdup(c->m, buf);
    for (unsigned k = 1; name && cg_strmap_has(&c->made, name) && k < 1000000; k++) {
        snprintf(buf, sizeof buf, "%s/%s_%u", base, what, k);
        name = lg_strdup(c->m, buf);
    }
    if (!name || cg_strmap_add(&c->made, name, 1) == CG_STRMAP_NONE)
        return NULL;
    return name;
}

/* Appends ATen op `op` (domain EA_DOMAIN, or "onnx" for an op left
 * unmapped) for source node `origin`; `translates`: the source op it is
 * the translation of (NULL for a view the decomposition adds). */
static bool emit(ea_ctx *c, size_t origin, const char *domain, const char *op, const char *name,
                 const char *const *ins, size_t n_in, const char *const *outs, size_t n_out,
                 const lower_attrs *as, const char *translates)
{
    const char **resolved = malloc((n_in ? n_in : 1) * sizeof *resolved);
    if (!resolved)
        return false;
    for (size_t i = 0; i < n_in; i++)
        resolved[i] = ins[i] && *ins[i] ? resolve(c, ins[i]) : "";
    /* lg_add_node copies the attribute structs only: their int lists go
     * into the arena here */
    cg_attr attrs[sizeof as->a / sizeof as->a[0]];
    size_t n_attr = as ? as->n : 0;
    for (size_t a = 0; a < n_attr; a++) {
        attrs[a] = as->a[a];
        if (attrs[a].ints_count) {
            int64_t *v = cg_arena_alloc(c->m->arena, attrs[a].ints_count * sizeof *v);
            if (!v) {
                free(resolved);
                return false;
            }
            memcpy(v, as->a[a].ints, attrs[a].ints_count * sizeof *v);
            attrs[a].ints = v;
        }
    }
    size_t k = lg_add_node(c->lg, op, domain, name, resolved, n_in, outs, n_out,
                           n_attr ? attrs : NULL, n_attr);
    free(resolved);
    if (k == SIZE_MAX || !lg_add_origins(c->lg, k, origin))
        return false;
    c->lg->nodes[k].translates = translates;
    return true;
}

static bool emit_aten(ea_ctx *c, size_t origin, const char *op, const char *overload,
                      const char *name, const char *const *ins, size_t n_in, const char *out,
                      lower_attrs *as, const char *translates)
{
    lower_attrs none = {.n = 0};
    if (!as)
        as = &none;
    lower_attrs_str(as, "overload", overload);
    return emit(c, origin, EA_DOMAIN, op, name, ins, n_in, &out, 1, as, translates);
}

/* A view_copy of `in` to `rank`/`dims`, named "<base>/<what>": the
 * reshape the decomposition adds ([PT-mm], [edge]). */
static const char *emit_view(ea_ctx *c, size_t origin, const char *base, const char *what,
                             const char *in, int rank, const int64_t *dims)
{
    const char *out = made_name(c, base, what);
    const char *vname = made_name(c, base, "view");
    lower_attrs as = {.n = 0};
    lower_attrs_ints(&as, "size", dims, (size_t)rank);
    if (!out || !vname || !emit_aten(c, origin, "view_copy", "default", vname, &in, 1, out, &as,
                                     NULL) ||
        !declare(c, out, dtype_of(c, in), rank, dims))
        return NULL;
    return out;
}

static int64_t norm_axis(int64_t a, int rank)
{
    return a < 0 ? a + rank : a;
}

static const char *node_name(ea_ctx *c, const cg_node *n, size_t i)
{
    if (n->name && *n->name)
        return n->name;
    char buf[64];
    snprintf(buf, sizeof buf, "node%zu", i);
    return lg_strdup(c->m, buf);
}

/* --- the op families ---------------------------------------------------------------- */

/* Conv, ConvTranspose -> convolution ([ET-cfg] ConvolutionConfig:
 * convolution.default, transposed is its args[6]). */
static bool map_conv(ea_ctx *c, size_t i, const cg_node *n, const char *name)
{
    lower_attrs as = {.n = 0};
    lower_attrs_int(&as, "transposed", is_op(n, "ConvTranspose"));
    lower_attrs_int(&as, "groups", cg_node_attr_int(n, "group", 1));
    const char *ins[3] = {n->inputs[0], n->input_count > 1 ? n->inputs[1] : "",
                          n->input_count > 2 ? n->inputs[2] : ""};
    return emit_aten(c, i, "convolution", "default", name, ins, 3, n->outputs[0], &as,
                     n->op_type);
}

/* The permute_copy [1, 0] of a 2-D runtime value `x` (Gemm's transA /
 * transB), named "<base>/permute_<tag>"; its output, NULL when x is not a
 * known 2-D value or out of memory. */
static const char *emit_transpose_2d(ea_ctx *c, size_t i, const char *base, const char *x,
                                     const char *tag)
{
    int rank = 0;
    int64_t dims[CG_MAX_RANK];
    if (!known_shape(c, x, &rank, dims) || rank != 2)
        return NULL;
    int64_t t[2] = {dims[1], dims[0]}, perm[2] = {1, 0};
    char what[32];
    snprintf(what, sizeof what, "%s_t", tag);
    const char *out = made_name(c, base, what);
    snprintf(what, sizeof what, "permute_%s", tag);
    const char *pname = made_name(c, base, what);
    lower_attrs as = {.n = 0};
    lower_attrs_ints(&as, "dims", perm, 2);
    if (!out || !pname ||
        !emit_aten(c, i, "permute_copy", "default", pname, &x, 1, out, &as, NULL) ||
        !declare(c, out, dtype_of(c, x), 2, t))
        return NULL;
    return out;
}

/* Gemm: nn.Linear (transB=1, alpha=beta=1) is linear, kept whole by
 * LinearConfig.get_original_aten ([ET-cfg], [ET-test] test_linear); other
 * forms are torch.addmm(C, A, B) / torch.mm(A, B), with a permute_copy
 * for a transposed runtime operand. */
static bool map_gemm(ea_ctx *c, size_t i, const cg_node *n, const char *name)
{
    const char *a = n->inputs[0], *b = n->input_count > 1 ? n->inputs[1] : "";
    const char *bias = n->input_count > 2 ? n->inputs[2] : "";
    int64_t trans_a = cg_node_attr_int(n, "transA", 0), trans_b = cg_node_attr_int(n, "transB", 0);
    float alpha = cg_node_attr_float(n, "alpha", 1), beta = cg_node_attr_float(n, "beta", 1);
    if (trans_a && !(a = emit_transpose_2d(c, i, name, a, "a")))
        return false;
    if (trans_b && alpha == 1 && beta == 1) {
        const char *ins[3] = {a, b, bias};
        return emit_aten(c, i, "linear", "default", name, ins, 3, n->outputs[0], NULL,
                         n->op_type);
    }
    /* a constant B^T is a parameter of the module */
    if (trans_b && !is_const(c, b) && !(b = emit_transpose_2d(c, i, name, b, "b")))
        return false;
    lower_attrs as = {.n = 0};
    if (*bias) {
        lower_attrs_float(&as, "beta", beta);
        lower_attrs_float(&as, "alpha", alpha);
        const char *ins[3] = {bias, a, b};
        return emit_aten(c, i, "addmm", "default", name, ins, 3, n->outputs[0], &as,
                         n->op_type);
    }
    const char *ins[2] = {a, b};
    return emit_aten(c, i, "mm", "default", name, ins, 2, n->outputs[0], &as, n->op_type);
}

/* Product of dims[from, to). */
static int64_t dims_product(const int64_t *dims, int from, int to)
{
    int64_t p = 1;
    for (int d = from; d < to; d++)
        p *= dims[d];
    return p;
}

/* MatMul as torch.matmul decomposes it ([PT-mm]). Returns false with
 * *unmapped set when the ranks are not known or not a decomposed form. */
static bool map_matmul(ea_ctx *c, size_t i, const cg_node *n, const char *name, bool *unmapped)
{
    const char *a = n->inputs[0], *b = n->input_count > 1 ? n->inputs[1] : "";
    const char *y = n->outputs[0];
    int ra = 0, rb = 0, ry = 0;
    int64_t da[CG_MAX_RANK], db[CG_MAX_RANK], dy[CG_MAX_RANK];
    *unmapped = false;
    if (!known_shape(c, a, &ra, da) || !known_shape(c, b, &rb, db) ||
        !known_shape(c, y, &ry, dy)) {
        *unmapped = true;
        return true;
    }
    if (ra == 2 && rb == 2) {
        const char *ins[2] = {a, b};
        return emit_aten(c, i, "mm", "default", name, ins, 2, y, NULL, n->op_type);
    }
    if (ra == 1 && rb == 1) {
        const char *ins[2] = {a, b};
        return emit_aten(c, i, "dot", "default", name, ins, 2, y, NULL, n->op_type);
    }
    if (ra == 2 && rb == 1) {
        const char *ins[2] = {a, b};
        return emit_aten(c, i, "mv", "default", name, ins, 2, y, NULL, n->op_type);
    }
    if (ra >= 3 && rb == 2) {
        /* the batch folds into the rows: view [prod(batch) * M, K], mm, view */
        int64_t rows[2] = {dims_product(da, 0, ra - 1), da[ra - 1]};
        int64_t out2[2] = {rows[0], db[1]};
        const char *va = emit_view(c, i, name, "view_in", a, 2, rows);
        const char *mm_out = made_name(c, name, "mm_out");
        const char *mm_name = made_name(c, name, "mm");
        const char *ins[2] = {va, b};
        if (!va || !mm_out || !mm_name ||
            !emit_aten(c, i, "mm", "default", mm_name, ins, 2, mm_out, NULL, n->op_type) ||
            !declare(c, mm_out, dtype_of(c, y), 2, out2))
            return false;
        lower_attrs as = {.n = 0};
        lower_attrs_ints(&as, "size", dy, (size_t)ry);
        return emit_aten(c, i, "view_copy", "default", name, &mm_out, 1, y, &as, NULL);
    }
    if (ra >= 2 && rb >= 2 && ry >= 3) {
        /* bmm between 3-D views; expand_copy where a batch dim broadcasts */
        int64_t batch = dims_product(dy, 0, ry - 2);
        const char *ops[2] = {a, b};
        const int *ranks[2] = {&ra, &rb};
        const int64_t *ds[2] = {da, db};
        const char *tags[2] = {"a", "b"};
        for (int s = 0; s < 2; s++) {
            int r = *ranks[s];
            const int64_t *d = ds[s];
            bool same = r == ry;
            for (int k = 0; same && k < ry - 2; k++)
                same = d[k] == dy[k];
            int64_t m = d[r - 2], k2 = d[r - 1];
            if (!same) {
                int64_t ex[CG_MAX_RANK];
                memcpy(ex, dy, (size_t)(ry - 2) * sizeof *ex);
                ex[ry - 2] = m;
                ex[ry - 1] = k2;
                char what[32];
                snprintf(what, sizeof what, "expand_%s", tags[s]);
                const char *out = made_name(c, name, what);
                const char *ename = made_name(c, name, "expand");
                lower_attrs as = {.n = 0};
                lower_attrs_ints(&as, "size", ex, (size_t)ry);
                if (!out || !ename ||
                    !emit_aten(c, i, "expand_copy", "default", ename, &ops[s], 1, out, &as,
                               NULL) ||
                    !declare(c, out, dtype_of(c, ops[s]), ry, ex))
                    return false;
                ops[s] = out;
                r = ry;
            }
            if (r != 3) {
                int64_t v3[3] = {batch, m, k2};
                char what[32];
                snprintf(what, sizeof what, "view_%s", tags[s]);
                if (!(ops[s] = emit_view(c, i, name, what, ops[s], 3, v3)))
                    return false;
            }
        }
        int64_t o3[3] = {batch, dy[ry - 2], dy[ry - 1]};
        if (ry == 3)
            return emit_aten(c, i, "bmm", "default", name, ops, 2, y, NULL, n->op_type);
        const char *bmm_out = made_name(c, name, "bmm_out");
        const char *bmm_name = made_name(c, name, "bmm");
        if (!bmm_out || !bmm_name ||
            !emit_aten(c, i, "bmm", "default", bmm_name, ops, 2, bmm_out, NULL, n->op_type) ||
            !declare(c, bmm_out, dtype_of(c, y), 3, o3))
            return false;
        lower_attrs as = {.n = 0};
        lower_attrs_ints(&as, "size", dy, (size_t)ry);
        return emit_aten(c, i, "view_copy", "default", name, &bmm_out, 1, y, &as, NULL);
    }
    *unmapped = true;
    return true;
}

/* Clip: both bounds constant is nn.Hardtanh / nn.ReLU6 (hardtanh.default),
 * one constant bound torch.clamp (clamp.default), a bound computed at run
 * time clamp.Tensor, which no config names ([ET-cfg] HardtanhConfig,
 * ClampConfig; [ET-test] test_hardtanh, test_clamp). */
static bool map_clip(ea_ctx *c, size_t i, const cg_node *n, const char *name)
{
    lower_attrs as = {.n = 0};
    bool has_lo, has_hi, runtime = false;
    double lo = 0, hi = 0;
    if (c->opset < 11) {
        has_lo = cg_node_attr(n, "min") != NULL;
        has_hi = cg_node_attr(n, "max") != NULL;
        lo = cg_node_attr_float(n, "min", 0);
        hi = cg_node_attr_float(n, "max", 0);
    } else {
        has_lo = n->input_count > 1 && *n->inputs[1];
        has_hi = n->input_count > 2 && *n->inputs[2];
        if (has_lo && !const_scalar(c, n->inputs[1], &lo))
            runtime = true;
        if (has_hi && !const_scalar(c, n->inputs[2], &hi))
            runtime = true;
    }
    const char *x = n->inputs[0];
    if (runtime) {
        const char *ins[3] = {x, has_lo ? n->inputs[1] : "", has_hi ? n->inputs[2] : ""};
        return emit_aten(c, i, "clamp", "Tensor", name, ins, 3, n->outputs[0], &as,
                         n->op_type);
    }
    if (has_lo && has_hi) {
        lower_attrs_float(&as, "min_val", (float)lo);
        lower_attrs_float(&as, "max_val", (float)hi);
        return emit_aten(c, i, "hardtanh", "default", name, &x, 1, n->outputs[0], &as,
                         n->op_type);
    }
    if (has_lo)
        lower_attrs_float(&as, "min", (float)lo);
    if (has_hi)
        lower_attrs_float(&as, "max", (float)hi);
    return emit_aten(c, i, "clamp", "default", name, &x, 1, n->outputs[0], &as, n->op_type);
}

/* ReduceMean -> mean.dim (torch.mean(x, dims, keepdim); [ET-cfg]
 * MeanDimConfig), the dims normalized and sorted. */
static bool map_reduce_mean(ea_ctx *c, size_t i, const cg_node *n, const char *name,
                            bool *unmapped)
{
    int rank = value_rank(c, n->inputs[0]);
    int64_t axes[CG_MAX_RANK];
    size_t count = 0;
    *unmapped = false;
    if (!node_axes(c, n, axes, &count)) {
        *unmapped = true; /* axes computed at run time: no static dims */
        return true;
    }
    if (rank < 0) {
        *unmapped = true;
        return true;
    }
    if (count == 0) { /* every axis */
        for (int d = 0; d < rank; d++)
            axes[d] = d;
        count = (size_t)rank;
    }
    for (size_t k = 0; k < count; k++)
        axes[k] = norm_axis(axes[k], rank);
    for (size_t k = 1; k < count; k++)
        for (size_t j = k; j > 0 && axes[j - 1] > axes[j]; j--) {
            int64_t t = axes[j];
            axes[j] = axes[j - 1];
            axes[j - 1] = t;
        }
    lower_attrs as = {.n = 0};
    lower_attrs_ints(&as, "dim", axes, count);
    lower_attrs_int(&as, "keepdim", cg_node_attr_int(n, "keepdims", 1));
    return emit_aten(c, i, "mean", "dim", name, n->inputs, 1, n->outputs[0], &as, n->op_type);
}

/* Pools: AveragePool -> avg_pool2d, MaxPool -> max_pool2d (kept whole by
 * MaxPool2dConfig.get_original_aten), GlobalAveragePool -> the
 * _adaptive_avg_pool2d edge op ([ET-edge]; no XNNPACK config names it),
 * GlobalMaxPool -> adaptive_max_pool2d. The ints the configs check are
 * attributes: kernel_size, stride, padding (begin pads; asymmetric pads
 * need a constant_pad_nd first, not modelled), ceil_mode, count_include_pad. */
static bool map_pool(ea_ctx *c, size_t i, const cg_node *n, const char *name)
{
    const char *x = n->inputs[0];
    lower_attrs as = {.n = 0};
    if (is_op(n, "GlobalAveragePool"))
        return emit_aten(c, i, "_adaptive_avg_pool2d", "default", name, &x, 1, n->outputs[0],
                         &as, n->op_type);
    if (is_op(n, "GlobalMaxPool"))
        return emit_aten(c, i, "adaptive_max_pool2d", "default", name, &x, 1, n->outputs[0],
                         &as, n->op_type);
    const cg_attr *k = cg_node_attr(n, "kernel_shape");
    const cg_attr *s = cg_node_attr(n, "strides");
    const cg_attr *p = cg_node_attr(n, "pads");
    size_t sp = k ? k->ints_count : 0;
    int64_t stride[CG_MAX_RANK], pad[CG_MAX_RANK];
    for (size_t d = 0; d < sp && d < CG_MAX_RANK; d++) {
        stride[d] = s && s->ints_count == sp ? s->ints[d] : 1;
        pad[d] = p && p->ints_count == 2 * sp ? p->ints[d] : 0;
    }
    if (k && sp <= CG_MAX_RANK) {
        lower_attrs_ints(&as, "kernel_size", k->ints, sp);
        lower_attrs_ints(&as, "stride", stride, sp);
        lower_attrs_ints(&as, "padding", pad, sp);
    }
    lower_attrs_int(&as, "ceil_mode", cg_node_attr_int(n, "ceil_mode", 0));
    if (is_op(n, "AveragePool")) {
        lower_attrs_int(&as, "count_include_pad", cg_node_attr_int(n, "count_include_pad", 0));
        return emit_aten(c, i, "avg_pool2d", "default", name, &x, 1, n->outputs[0], &as,
                         n->op_type);
    }
    /* a MaxPool whose Indices output is read is max_pool2d_with_indices */
    bool indices = n->output_count > 1 && *n->outputs[1];
    lower_attrs_str(&as, "overload", "default");
    return emit(c, i, EA_DOMAIN, indices ? "max_pool2d_with_indices" : "max_pool2d", name, &x,
                1, n->outputs, indices ? 2 : 1, &as, n->op_type);
}

/* Softmax / LogSoftmax -> _softmax / _log_softmax over one dim ([ET-cfg]
 * SoftmaxConfig: the dim must be the last). Before opset 13 the ONNX op
 * flattens from `axis` (default 1), which torch writes as a softmax over
 * the last dim of a 2-D view. */
static bool map_softmax(ea_ctx *c, size_t i, const cg_node *n, const char *name)
{
    const char *op = is_op(n, "Softmax") ? "_softmax" : "_log_softmax";
    const char *x = n->inputs[0];
    int rank = 0;
    int64_t dims[CG_MAX_RANK];
    bool shaped = known_shape(c, x, &rank, dims);
    int r = shaped ? rank : value_rank(c, x);
    int64_t axis = cg_node_attr_int(n, "axis", c->opset >= 13 ? -1 : 1);
    if (r >= 0)
        axis = norm_axis(axis, r);
    lower_attrs as = {.n = 0};
    if (c->opset < 13 && r >= 0 && axis != r - 1) {
        if (!shaped)
            return false;
        int64_t flat[2] = {dims_product(dims, 0, (int)axis), dims_product(dims, (int)axis, r)};
        const char *v = emit_view(c, i, name, "view_in", x, 2, flat);
        const char *sm = made_name(c, name, "softmax_out");
        const char *smn = made_name(c, name, "softmax");
        lower_attrs_int(&as, "dim", 1);
        if (!v || !sm || !smn ||
            !emit_aten(c, i, op, "default", smn, &v, 1, sm, &as, n->op_type) ||
            !declare(c, sm, dtype_of(c, x), 2, flat))
            return false;
        lower_attrs vs = {.n = 0};
        lower_attrs_ints(&vs, "size", dims, (size_t)rank);
        return emit_aten(c, i, "view_copy", "default", name, &sm, 1, n->outputs[0], &vs, NULL);
    }
    lower_attrs_int(&as, "dim", axis);
    return emit_aten(c, i, op, "default", name, &x, 1, n->outputs[0], &as, n->op_type);
}

/* Slice -> one slice_copy.Tensor per sliced axis ([ET-cfg] SliceCopyConfig:
 * step 1, static non-zero dims), chained; constant starts/ends/axes/steps
 * only (runtime bounds stay unmapped). */
static bool map_slice(ea_ctx *c, size_t i, const cg_node *n, const char *name, bool *unmapped)
{
    int rank = 0;
    int64_t dims[CG_MAX_RANK], starts[CG_MAX_RANK], ends[CG_MAX_RANK], axes[CG_MAX_RANK],
        steps[CG_MAX_RANK];
    size_t ns = 0, ne = 0, na = 0, nst = 0;
    *unmapped = true;
    if (!known_shape(c, n->inputs[0], &rank, dims))
        return true;
    if (c->opset < 10) {
        const cg_attr *s = cg_node_attr(n, "starts"), *e = cg_node_attr(n, "ends");
        const cg_attr *a = cg_node_attr(n, "axes");
        if (!s || !e || s->ints_count != e->ints_count || s->ints_count > CG_MAX_RANK)
            return true;
        ns = ne = s->ints_count;
        memcpy(starts, s->ints, ns * sizeof *starts);
        memcpy(ends, e->ints, ne * sizeof *ends);
        if (a && a->ints_count == ns) {
            memcpy(axes, a->ints, ns * sizeof *axes);
            na = ns;
        }
    } else {
        if (n->input_count < 3 || !const_ints(c, n->inputs[1], starts, &ns, CG_MAX_RANK) ||
            !const_ints(c, n->inputs[2], ends, &ne, CG_MAX_RANK) || ns != ne)
            return true;
        if (n->input_count > 3 && *n->inputs[3] &&
            !const_ints(c, n->inputs[3], axes, &na, CG_MAX_RANK))
            return true;
        if (n->input_count > 4 && *n->inputs[4] &&
            !const_ints(c, n->inputs[4], steps, &nst, CG_MAX_RANK))
            return true;
    }
    if ((na && na != ns) || (nst && nst != ns) || ns == 0)
        return true;
    *unmapped = false;
    const char *cur = n->inputs[0];
    int64_t shape[CG_MAX_RANK];
    memcpy(shape, dims, (size_t)rank * sizeof *shape);
    for (size_t k = 0; k < ns; k++) {
        int64_t ax = norm_axis(na ? axes[k] : (int64_t)k, rank);
        int64_t step = nst ? steps[k] : 1;
        if (ax < 0 || ax >= rank || step == 0)
            return false;
        int64_t len = shape[ax], st = starts[k], en = ends[k];
        st = st < 0 ? st + len : st;
        en = en < 0 ? en + len : en;
        st = st < 0 ? 0 : st > len ? len : st;
        en = en < -1 ? -1 : en > len ? len : en;
        int64_t out_len = step > 0 ? (en > st ? (en - st + step - 1) / step : 0)
                                   : (st > en ? (st - en + (-step) - 1) / (-step) : 0);
        shape[ax] = out_len;
        lower_attrs as = {.n = 0};
        lower_attrs_int(&as, "dim", ax);
        lower_attrs_int(&as, "start", st);
        lower_attrs_int(&as, "end", en);
        lower_attrs_int(&as, "step", step);
        bool last = k + 1 == ns;
        const char *out = last ? n->outputs[0] : made_name(c, name, "slice_out");
        const char *sname = k == 0 ? name : made_name(c, name, "slice");
        if (!out || !sname ||
            !emit_aten(c, i, "slice_copy", "Tensor", sname, &cur, 1, out, &as,
                       k == 0 ? n->op_type : NULL) ||
            (!last && !declare(c, out, dtype_of(c, cur), rank, shape)))
            return false;
        cur = out;
    }
    return true;
}

/* Pad (constant) -> constant_pad_nd with its pad list in ATen's order, the
 * last dim first ([ET-cfg] ConstantPadConfig: no negative padding); other
 * modes are reflection/replication pads, which no config names. */
static bool map_pad(ea_ctx *c, size_t i, const cg_node *n, const char *name, bool *unmapped)
{
    const char *mode = "constant";
    const cg_attr *ma = cg_node_attr(n, "mode");
    char mbuf[32] = "constant";
    if (ma && ma->s.data && ma->s.len < sizeof mbuf) {
        memcpy(mbuf, ma->s.data, ma->s.len);
        mbuf[ma->s.len] = '\0';
        mode = mbuf;
    }
    int64_t pads[2 * CG_MAX_RANK];
    size_t np = 0;
    const cg_attr *pa = cg_node_attr(n, "pads");
    *unmapped = true;
    if (pa && pa->ints_count <= 2 * CG_MAX_RANK) {
        np = pa->ints_count;
        memcpy(pads, pa->ints, np * sizeof *pads);
    } else if (n->input_count < 2 || !const_ints(c, n->inputs[1], pads, &np, 2 * CG_MAX_RANK)) {
        return true;
    }
    if (n->input_count > 3 && *n->inputs[3])
        return true; /* axes */
    *unmapped = false;
    size_t rank = np / 2;
    int64_t aten_pad[2 * CG_MAX_RANK];
    size_t used = 0;
    for (size_t d = rank; d-- > 0;) { /* last dim first: (begin, end) */
        aten_pad[used++] = pads[d];
        aten_pad[used++] = pads[d + rank];
    }
    const char *op = strcmp(mode, "reflect") == 0  ? "reflection_pad2d"
                     : strcmp(mode, "edge") == 0 ? "replication_pad2d"
                                                 : "constant_pad_nd";
    lower_attrs as = {.n = 0};
    /* at most CG_MAX_RANK ints per attribute: the ATen list is trimmed of
     * its leading (outer-dim) zero pairs, as torch writes it */
    while (used > CG_MAX_RANK && aten_pad[used - 1] == 0 && aten_pad[used - 2] == 0)
        used -= 2;
    if (used > CG_MAX_RANK)
        return false;
    lower_attrs_ints(&as, "pad", aten_pad, used);
    return emit_aten(c, i, op, "default", name, n->inputs, 1, n->outputs[0], &as, n->op_type);
}

/* Reshape, Flatten -> view_copy; Squeeze -> squeeze_copy.dims; Unsqueeze ->
 * unsqueeze_copy of one dim ([ET-cfg] UnsqueezeCopyConfig: trailing only;
 * the dim is written negative, counted from the output's end, so -1 is the
 * trailing dim), several dims a view_copy; Transpose -> permute_copy. */
static bool map_view(ea_ctx *c, size_t i, const cg_node *n, const char *name)
{
    const char *x = n->inputs[0], *y = n->outputs[0];
    int ry = 0, rx = value_rank(c, x);
    int64_t dy[CG_MAX_RANK];
    bool y_known = known_shape(c, y, &ry, dy);
    lower_attrs as = {.n = 0};
    if (is_op(n, "Transpose")) {
        const cg_attr *p = cg_node_attr(n, "perm");
        int64_t perm[CG_MAX_RANK];
        if (p && p->ints_count <= CG_MAX_RANK) {
            memcpy(perm, p->ints, p->ints_count * sizeof *perm);
            lower_attrs_ints(&as, "dims", perm, p->ints_count);
        }
        return emit_aten(c, i, "permute_copy", "default", name, &x, 1, y, &as, n->op_type);
    }
    int64_t axes[CG_MAX_RANK];
    size_t count = 0;
    if (is_op(n, "Squeeze")) {
        (void)node_axes(c, n, axes, &count);
        for (size_t k = 0; k < count && rx >= 0; k++)
            axes[k] = norm_axis(axes[k], rx);
        lower_attrs_ints(&as, "dim", axes, count);
        return emit_aten(c, i, "squeeze_copy", "dims", name, &x, 1, y, &as, n->op_type);
    }
    if (is_op(n, "Unsqueeze")) {
        (void)node_axes(c, n, axes, &count);
        if (count == 1 && ry > 0) {
            lower_attrs_int(&as, "dim", norm_axis(axes[0], ry) - ry);
            return emit_aten(c, i, "unsqueeze_copy", "default", name, &x, 1, y, &as,
                             n->op_type);
        }
    }
    /* Reshape, Flatten, a multi-dim Unsqueeze: view_copy to the static
     * output shape (torch.export writes the sizes as ints; without one the
     * size would be symbolic, which ViewCopyConfig refuses: no "size") */
    if (y_known)
        lower_attrs_ints(&as, "size", dy, (size_t)ry);
    return emit_aten(c, i, "view_copy", "default", name, &x, 1, y, &as, n->op_type);
}

/* HardSigmoid: aten.hardsigmoid is in core_aten_decompositions
 * (pytorch/pytorch@00b27fde5a5c torch/_decomp/__init__.py) and decomposes
 * to clamp(clamp(x + 3, min=0), max=6) / 6 ([PT-dec] hardsigmoid): add,
 * clamp, clamp, div. Another alpha/beta is the module x * alpha + beta
 * clamped to [0, 1]: mul, add, clamp. */
static bool map_hard_sigmoid(ea_ctx *c, size_t i, const cg_node *n, const char *name)
{
    float alpha = cg_node_attr_float(n, "alpha", 0.2f), beta = cg_node_attr_float(n, "beta", 0.5f);
    bool torch_form = alpha > 0.1666f && alpha < 0.1667f && beta == 0.5f;
    const char *x = n->inputs[0];
    int rank = 0;
    int64_t dims[CG_MAX_RANK];
    if (!known_shape(c, x, &rank, dims))
        return false;
    static const char *const torch_ops[] = {"add", "clamp", "clamp", "div"};
    static const char *const other_ops[] = {"mul", "add", "clamp"};
    const char *const *ops = torch_form ? torch_ops : other_ops;
    size_t count = torch_form ? 4 : 3;
    const char *cur = x;
    for (size_t k = 0; k < count; k++) {
        bool last = k + 1 == count;
        lower_attrs as = {.n = 0};
        bool clamp = strcmp(ops[k], "clamp") == 0;
        if (clamp && torch_form)
            lower_attrs_float(&as, k == 1 ? "min" : "max", k == 1 ? 0.0f : 6.0f);
        if (clamp && !torch_form) {
            lower_attrs_float(&as, "min", 0.0f);
            lower_attrs_float(&as, "max", 1.0f);
        }
        if (!clamp)
            lower_attrs_float(&as, "other", torch_form ? (k == 0 ? 3.0f : 6.0f) : (k == 0 ? alpha : beta));
        const char *out = last ? n->outputs[0] : made_name(c, name, ops[k]);
        const char *nn = k == 0 ? name : made_name(c, name, "op");
        if (!out || !nn ||
            !emit_aten(c, i, ops[k], clamp ? "default" : "Tensor", nn, &cur, 1, out, &as,
                       k == 0 ? n->op_type : NULL) ||
            (!last && !declare(c, out, dtype_of(c, x), rank, dims)))
            return false;
        cur = out;
    }
    return true;
}

/* Gather: a constant table read by indices is nn.Embedding (embedding);
 * a scalar constant index x[..., k, ...] (select_copy.int); any other
 * torch.index_select. No XNNPACK config names them. */
static bool map_gather(ea_ctx *c, size_t i, const cg_node *n, const char *name)
{
    const char *data = n->inputs[0], *idx = n->input_count > 1 ? n->inputs[1] : "";
    int rank = value_rank(c, data);
    lower_attrs as = {.n = 0};
    int64_t axis = cg_node_attr_int(n, "axis", 0);
    if (rank >= 0)
        axis = norm_axis(axis, rank);
    lower_attrs_int(&as, "dim", axis);
    const char *ins[2] = {data, idx};
    if (is_const(c, data) && axis == 0)
        return emit_aten(c, i, "embedding", "default", name, ins, 2, n->outputs[0], NULL,
                         n->op_type);
    if (value_rank(c, idx) == 0 && is_const(c, idx))
        return emit_aten(c, i, "select_copy", "int", name, &data, 1, n->outputs[0], &as,
                         n->op_type);
    return emit_aten(c, i, "index_select", "default", name, ins, 2, n->outputs[0], &as,
                     n->op_type);
}

/* --- one node ------------------------------------------------------------------------ */

/* The torch higher-order op an ONNX control-flow node stands for: If is
 * torch.cond, Loop torch.while_loop (a Python loop over a static range
 * would be unrolled by torch.export instead), Scan torch.scan. NULL for
 * any other node. */
static const char *control_flow_op(const cg_node *n)
{
    return is_op(n, "If") ? "cond" : is_op(n, "Loop") ? "while_loop" : is_op(n, "Scan") ? "scan"
                                                                                       : NULL;
}

/* Maps source node i. Unmapped ops keep their ONNX op type in domain "onnx". */
static bool map_node(ea_ctx *c, size_t i)
{
    const cg_node *n = &c->g->nodes[i];
    const char *name = node_name(c, n, i);
    if (!name)
        return false;
    bool unmapped = false, ok = true;
    bool has_io = n->input_count > 0 && *n->inputs[0] && n->output_count > 0 && *n->outputs[0];
    const char *flow = control_flow_op(n);
    if (flow) {
        /* [ET-flow]: the higher-order op, its bodies not mapped (the
         * partitioner never looks inside them) */
        lower_attrs as = {.n = 0};
        return emit(c, i, EA_HIGHER_ORDER, flow, name, n->inputs, n->input_count, n->outputs,
                    n->output_count, &as, n->op_type);
    }
    if (!has_io || !cg_domain_is_default(n->domain)) {
        unmapped = true;
    } else if (c->gelu[i].count) {
        /* [ET-cfg] GeluConfig (gelu.default, fp32): nn.GELU exports as
         * aten.gelu, a core ATen op; the pattern torch.onnx wrote for it
         * (plan_removals) is that one op, reading x and writing the
         * pattern's output. GeluConfig does not check `approximate` (and
         * operators/op_gelu.py serializes XNNGelu with no flag for it) */
        lower_attrs as = {.n = 0};
        lower_attrs_str(&as, "approximate", c->gelu[i].tanh ? "tanh" : "none");
        ok = emit_aten(c, i, "gelu", "default", name, &c->gelu[i].x, 1, c->gelu[i].y, &as,
                       n->op_type);
    } else if (is_op(n, "Conv") || is_op(n, "ConvTranspose")) {
        ok = map_conv(c, i, n, name);
    } else if (is_op(n, "Gemm")) {
        ok = map_gemm(c, i, n, name);
        unmapped = !ok;
        ok = true;
    } else if (is_op(n, "MatMul")) {
        ok = map_matmul(c, i, n, name, &unmapped);
    } else if (is_op(n, "BatchNormalization")) {
        /* [ET-cfg] BatchNormConfig, [ET-test] test_batch_norm: inference
         * batch norm is _native_batch_norm_legit_no_training (x, weight,
         * bias, running_mean, running_var); training mode the functional
         * _native_batch_norm_legit, which no config names */
        bool training = cg_node_attr_int(n, "training_mode", 0) != 0;
        const char *ins[5];
        for (size_t k = 0; k < 5; k++)
            ins[k] = k < n->input_count ? n->inputs[k] : "";
        ok = emit_aten(c, i, training ? "_native_batch_norm_legit" : "_native_batch_norm_legit_no_training",
                       training ? "no_stats" : "default", name, ins, 5, n->outputs[0], NULL,
                       n->op_type);
    } else if (is_op(n, "Clip")) {
        ok = map_clip(c, i, n, name);
    } else if (is_op(n, "Pow")) {
        /* [ET-cfg] PowConfig: pow.Tensor_Scalar with the exponent an int 2 */
        double e = 0;
        lower_attrs as = {.n = 0};
        if (n->input_count > 1 && const_scalar(c, n->inputs[1], &e)) {
            lower_attrs_float(&as, "exponent", (float)e);
            ok = emit_aten(c, i, "pow", "Tensor_Scalar", name, n->inputs, 1, n->outputs[0], &as,
                           n->op_type);
        } else {
            ok = emit_aten(c, i, "pow", "Tensor_Tensor", name, n->inputs, n->input_count,
                           n->outputs[0], &as, n->op_type);
        }
    } else if (is_op(n, "Max") || is_op(n, "Min")) {
        /* torch.maximum / minimum are binary ([ET-cfg] MaximumConfig) */
        if (n->input_count == 2)
            ok = emit_aten(c, i, is_op(n, "Max") ? "maximum" : "minimum", "default", name,
                           n->inputs, 2, n->outputs[0], NULL, n->op_type);
        else
            unmapped = true;
    } else if (is_op(n, "ReduceMean")) {
        ok = map_reduce_mean(c, i, n, name, &unmapped);
    } else if (is_op(n, "AveragePool") || is_op(n, "MaxPool") ||
               is_op(n, "GlobalAveragePool") || is_op(n, "GlobalMaxPool")) {
        ok = map_pool(c, i, n, name);
    } else if (is_op(n, "Softmax") || is_op(n, "LogSoftmax")) {
        ok = map_softmax(c, i, n, name);
    } else if (is_op(n, "Slice")) {
        ok = map_slice(c, i, n, name, &unmapped);
    } else if (is_op(n, "Pad")) {
        ok = map_pad(c, i, n, name, &unmapped);
    } else if (is_op(n, "Reshape") || is_op(n, "Flatten") || is_op(n, "Squeeze") ||
               is_op(n, "Unsqueeze") || is_op(n, "Transpose")) {
        ok = map_view(c, i, n, name);
    } else if (is_op(n, "HardSigmoid")) {
        unmapped = !map_hard_sigmoid(c, i, n, name);
    } else if (is_op(n, "Gather")) {
        ok = map_gather(c, i, n, name);
    } else if (is_op(n, "LayerNormalization")) {
        /* nn.LayerNorm: aten.native_layer_norm, a core ATen op (not in
         * core_aten_decompositions); no XNNPACK config names it */
        const char *ins[3];
        for (size_t k = 0; k < 3; k++)
            ins[k] = k < n->input_count ? n->inputs[k] : "";
        ok = emit_aten(c, i, "native_layer_norm", "default", name, ins, 3, n->outputs[0], NULL,
                       n->op_type);
    } else if (is_op(n, "Dropout")) {
        /* [PT-dec]: inference dropout is input.clone(); [ET-test] test_clone:
         * a clone the partitioner takes when it keeps the dim order */
        ok = emit_aten(c, i, "clone", "default", name, n->inputs, 1, n->outputs[0], NULL,
                       n->op_type);
    } else if (is_op(n, "Resize")) {
        /* [ET-cfg] UpsampleBilinear2dConfig keeps upsample_bilinear2d.vec
         * whole; nearest is upsample_nearest2d.vec, which no config names */
        const cg_attr *ma = cg_node_attr(n, "mode");
        bool linear = ma && ma->s.len == 6 && memcmp(ma->s.data, "linear", 6) == 0;
        ok = emit_aten(c, i, linear ? "upsample_bilinear2d" : "upsample_nearest2d", "vec", name,
                       n->inputs, 1, n->outputs[0], NULL, n->op_type);
    } else {
        unmapped = true;
        for (size_t k = 0; k < sizeof one_to_one / sizeof one_to_one[0]; k++)
            if (is_op(n, one_to_one[k].onnx)) {
                ok = emit_aten(c, i, one_to_one[k].aten, one_to_one[k].overload, name,
                               n->inputs, n->input_count, n->outputs[0], NULL, n->op_type);
                unmapped = false;
                break;
            }
    }
    if (!ok && c->m->oom)
        return false;
    if (!ok)
        unmapped = true; /* a form the mapping does not decompose (unknown shapes) */
    if (unmapped) {
        /* kept as the ONNX op in domain "onnx": no aten:* rule takes it */
        lower_attrs as = {.n = 0};
        return emit(c, i, "onnx", n->op_type ? n->op_type : "?", name, n->inputs, n->input_count,
                    n->outputs, n->output_count, &as, n->op_type);
    }
    return true;
}

/* --- what has no op ---------------------------------------------------------------------- */

static bool static_shape(ea_ctx *c, const char *name)
{
    int rank = 0;
    int64_t dims[CG_MAX_RANK];
    return known_shape(c, name, &rank, dims);
}

/* The int64 shape of the static tensor a Shape node reads (start/end
 * attributes applied), as an initializer named after its output. */
static cg_tensor_proto *shape_value(ea_ctx *c, const cg_node *n)
{
    int rank = 0;
    int64_t dims[CG_MAX_RANK];
    if (!n->output_count || !*n->outputs[0] || !known_shape(c, n->inputs[0], &rank, dims))
        return NULL;
    int64_t start = 0;
    int64_t len = cg_shape_slice(rank, cg_node_attr_int(n, "start", 0),
                                 cg_node_attr_int(n, "end", rank), &start);
    return lg_tensor_new(c->m, n->outputs[0], CG_DTYPE_INT64, &len, 1, dims + start,
                         (size_t)len * sizeof *dims);
}

/* Marks the nodes that leave no op in the exported program and gives each
 * removed value a placeholder initializer of its type (placement reads
 * only the type and the constness). */
static bool plan_removals(ea_ctx *c)
{
    const cg_graph *g = c->g;
    for (size_t i = 0; i < g->node_count; i++) {
        const cg_node *n = &g->nodes[i];
        if (c->skip[i])
            continue; /* inside a GELU pattern */
        lower_gelu gl;
        if (lower_match_gelu(g, i, &gl)) {
            /* the gelu stands in the place of the pattern's Erf / Tanh, the
             * others fold into it */
            size_t core = gl.nodes[gl.core];
            c->gelu[core] = gl;
            for (size_t k = 0; k < gl.count; k++) {
                size_t f = gl.nodes[k];
                if (f == core)
                    continue;
                c->skip[f] = true;
                c->into[f] = core;
                c->why[f] = "folded into the aten.gelu of nn.GELU (torch.onnx writes it as "
                            "this pattern)";
            }
            continue;
        }
        if (is_op(n, "Identity") && n->input_count && *n->inputs[0] && n->output_count) {
            c->skip[i] = true;
            c->why[i] = "no op: nn.Identity returns its input";
            if (!add_alias(c, n->outputs[0], n->inputs[0]))
                return false;
            continue;
        }
        bool all_const = n->input_count > 0;
        for (size_t k = 0; k < n->input_count; k++)
            all_const = all_const && (!*n->inputs[k] || is_const(c, n->inputs[k]));
        bool shape_op = is_op(n, "Shape") && n->input_count && static_shape(c, n->inputs[0]);
        if (!is_op(n, "Constant") && !shape_op && !(all_const && n->output_count))
            continue;
        c->skip[i] = true;
        c->why[i] = is_op(n, "Constant") ? "no op: a constant of the exported program"
                    : shape_op ? "no op: the size of a static tensor is a Python int under "
                                 "torch.export"
                               : "no op: computed only from constants, a parameter of the "
                                 "equivalent module";
        cg_tensor_proto *outs[8] = {NULL};
        bool evaluated = false;
        if (n->output_count <= 8 && !shape_op) {
            char why[CG_ERROR_MSG_MAX];
            cg_error err;
            cg_error_clear(&err);
            if (lg_eval_node(c->lg, &c->lg->nodes[i], outs, &evaluated, why, sizeof why, &err) !=
                CG_OK)
                return false;
        } else if (shape_op) {
            outs[0] = shape_value(c, n);
            evaluated = outs[0] != NULL;
        }
        for (size_t o = 0; o < n->output_count; o++) {
            const char *v = n->outputs[o];
            if (!*v)
                continue;
            if (cg_strmap_add(&c->folded, v, i) == CG_STRMAP_NONE)
                return false;
            cg_tensor_proto *tp = evaluated && o < 8 ? outs[o] : NULL;
            if (!tp) { /* a placeholder of its type: placement reads only that */
                const cg_value_type *t = cg_type_env_get(c->types, v);
                bool known = t && t->known && t->rank <= CG_MAX_RANK;
                tp = lg_tensor_new(c->m, v, known ? (int32_t)t->dtype : CG_DTYPE_FLOAT,
                                   known ? t->dims : NULL, known ? (size_t)t->rank : 0, NULL, 0);
            }
            if (!tp || !lg_add_init(c->lg, tp))
                return false;
        }
    }
    return true;
}

cg_status cg_lower_onnx_to_aten(lg_model *m, cg_error *err)
{
    ea_ctx c;
    memset(&c, 0, sizeof c);
    c.m = m;
    c.lg = m->main;
    c.g = m->source->graph;
    c.n = c.g->node_count;
    c.opset = cg_model_opset(m->source, ""); /* -1 when none */
    /* the sizes torch.export would specialize to */
    cg_status st = lg_type_source(m, &c.types, err);
    if (st != CG_OK)
        return st;
    size_t n = c.n;
    c.skip = calloc(n + 1, sizeof *c.skip);
    c.why = calloc(n + 1, sizeof *c.why);
    c.into = malloc((n + 1) * sizeof *c.into);
    c.op = malloc((n + 1) * sizeof *c.op);
    c.gelu = calloc(n + 1, sizeof *c.gelu);
    bool ok = c.skip && c.why && c.into && c.op && c.gelu;
    for (size_t i = 0; ok && i <= n; i++)
        c.into[i] = c.op[i] = SIZE_MAX;
    for (size_t i = 0; ok && i < c.g->input_count; i++)
        ok = !c.g->inputs[i].name || cg_strmap_add(&c.made, c.g->inputs[i].name, 0) !=
                                         CG_STRMAP_NONE;
    for (size_t i = 0; ok && i < c.g->initializer_count; i++)
        ok = !c.g->initializers[i].name ||
             cg_strmap_add(&c.made, c.g->initializers[i].name, 0) != CG_STRMAP_NONE;
    for (size_t i = 0; ok && i < n; i++)
        for (size_t o = 0; ok && o < c.g->nodes[i].output_count; o++)
            ok = !*c.g->nodes[i].outputs[o] ||
                 cg_strmap_add(&c.made, c.g->nodes[i].outputs[o], 0) != CG_STRMAP_NONE;
    ok = ok && plan_removals(&c);
    for (size_t i = 0; ok && i < n; i++) {
        c.op[i] = c.lg->node_count;
        ok = c.skip[i] || map_node(&c, i);
    }
    for (size_t i = 0; ok && i < n; i++) {
        const cg_node *cf = &c.g->nodes[i];
        const char *flow = control_flow_op(cf);
        if (c.skip[i] || !flow)
            continue;
        if (strcmp(flow, "while_loop") == 0)
            lg_note(m, "control flow: %s '%s' is torch.while_loop, which ExecuTorch does not "
                       "emit (exir/emit/_emitter.py _emit_control_flow: \"Unsupported control "
                       "flow operator: while_loop\", pytorch/executorch@cff6f4dd32e6): "
                       "to_executorch fails on the program, whatever is delegated",
                    cf->op_type, cf->name && *cf->name ? cf->name : "?");
        else
            lg_note(m, "control flow: %s '%s' is torch.%s; the XNNPACK partitioner tags "
                       "nodes of the top-level graph only (ConfigerationBasedPartitioner."
                       "get_matched_nodes_from_configs, pytorch/executorch@cff6f4dd32e6), so "
                       "it and every op of its %s run in the portable runtime (exir/emit/"
                       "_emitter.py _emit_%s); its bodies are not counted here",
                    cf->op_type, cf->name && *cf->name ? cf->name : "?", flow,
                    strcmp(flow, "cond") == 0 ? "branches" : "body", flow);
    }
    /* the source nodes give way to their ATen ops; one folded into
     * another's op (a GELU pattern's) is recorded as folded into it */
    for (size_t i = 0; ok && i < n; i++) {
        size_t into = c.skip[i] && c.into[i] < n ? c.op[c.into[i]] : SIZE_MAX;
        lg_remove(c.lg, i, c.skip[i] ? c.why[i] : "translated to ATen", into);
    }
    for (size_t i = 0; ok && i < c.lg->output_count; i++)
        c.lg->outputs[i] = resolve(&c, c.lg->outputs[i]);
    /* declared types: the graph inputs and every output of a source node
     * (values the mapping made were typed where it made them) */
    for (size_t i = 0; ok && i < c.g->input_count; i++) {
        const char *name = c.g->inputs[i].name;
        if (name && *name && !lg_constant(c.lg, name, false))
            ok = declare_source(&c, name);
    }
    for (size_t k = n; ok && k < c.lg->node_count; k++)
        for (size_t o = 0; ok && o < c.lg->nodes[k].output_count; o++) {
            const char *v = c.lg->nodes[k].outputs[o];
            if (v && *v && cg_strmap_get(&c.made, v) != 1)
                ok = declare_source(&c, v);
        }
    free(c.skip);
    free(c.why);
    free(c.into);
    free(c.op);
    free(c.gelu);
    lower_alias_free(&c.alias);
    cg_strmap_free(&c.folded);
    cg_strmap_free(&c.made);
    cg_type_env_free(c.types);
    if (!ok || m->oom)
        return cg_error_set(err, CG_NOMEM, "ONNX->ATen mapping: out of memory");
    return CG_OK;
}
