/*
 * ONNX -> TFLite: the operators a converter emits for an ONNX graph, so
 * that LiteRT targets judge the ops their delegates will really see (the
 * tflite:* rules of the profiles, docs/tflite.md "ONNX models on LiteRT
 * targets"). Each row of the mapping cites the converter rule it follows:
 * onnx2tf (PINTO0309/onnx2tf, onnx2tf/ops/<Op>.py) for how an ONNX op
 * becomes TensorFlow ops, TensorFlow's TFLite converter for how those
 * become TFLite builtins (tensorflow/compiler/mlir/lite: legalize_patterns.td
 * and the fusions tested in tests/optimize.mlir).
 *
 * The result is a graph of the same form as cg_tflite_op_model's: nodes in
 * domain "tflite" named after the ONNX node they come from, attributes
 * `version` (1) and the TFLite options the rules read, 4-D values in NHWC
 * (onnx2tf transposes every 4-D tensor), constants as initializers (the
 * source's, borrowed; axes and shapes a converter makes are new), and every
 * value's type in value_info, so it is typed with cg_type_env_build_declared.
 * ONNX nodes that are no op after conversion are not in it: Identity,
 * Dropout and Constant, nodes computed only from constants (folded), a
 * BatchNormalization right after a Conv (folded into its weights), and a
 * Relu / Clip(0,6) / Clip(-1,1) fused into the Conv, Gemm, Add or Mul
 * before it. An ONNX op the mapping does not know keeps its ONNX op type
 * (domain "onnx") and so is refused by every tflite:* rule, naming it.
 *
 * Invariants: origin[i] is the source node of result node i; removed lists
 * each source node that has no result node, with why. The result borrows
 * the source's tensors and strings: the source must outlive it.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "convgate/assign.h"
#include "convgate/tflite.h"
#include "core/arena.h"
#include "core/strmap.h"
#include "ir/walk.h"

/* 1:1 ops: ONNX op -> TFLite builtin (onnx2tf's op file emits the TF op the
 * converter legalizes to that builtin). */
typedef struct lm_row {
    const char *onnx, *tflite;
} lm_row;

static const lm_row one_to_one[] = {
    {"Add", "ADD"},         {"Sub", "SUB"},           {"Mul", "MUL"},
    {"Div", "DIV"},         {"Pow", "POW"},           {"Max", "MAXIMUM"},
    {"Min", "MINIMUM"},     {"Abs", "ABS"},           {"Neg", "NEG"},
    {"Sqrt", "SQRT"},       {"Exp", "EXP"},           {"Log", "LOG"},
    {"Floor", "FLOOR"},     {"Ceil", "CEIL"},         {"Round", "ROUND"},
    {"Sin", "SIN"},         {"Cos", "COS"},           {"Tanh", "TANH"},
    {"Sigmoid", "LOGISTIC"}, {"Relu", "RELU"},        {"LeakyRelu", "LEAKY_RELU"},
    {"PRelu", "PRELU"},     {"Elu", "ELU"},           {"HardSwish", "HARD_SWISH"},
    {"Gelu", "GELU"},       {"Softmax", "SOFTMAX"},   {"LogSoftmax", "LOG_SOFTMAX"},
    {"Concat", "CONCATENATION"}, {"Transpose", "TRANSPOSE"}, {"Slice", "STRIDED_SLICE"},
    {"Gather", "GATHER"},   {"GatherND", "GATHER_ND"}, {"Split", "SPLIT"},
    {"Tile", "TILE"},       {"Cast", "CAST"},         {"Where", "SELECT_V2"},
    {"Equal", "EQUAL"},     {"Less", "LESS"},         {"LessOrEqual", "LESS_EQUAL"},
    {"Greater", "GREATER"}, {"GreaterOrEqual", "GREATER_EQUAL"}, {"Not", "LOGICAL_NOT"},
    {"And", "LOGICAL_AND"}, {"Or", "LOGICAL_OR"},     {"ArgMax", "ARG_MAX"},
    {"ArgMin", "ARG_MIN"},  {"DepthToSpace", "DEPTH_TO_SPACE"},
    {"SpaceToDepth", "SPACE_TO_DEPTH"}, {"ConvTranspose", "TRANSPOSE_CONV"},
    {"Squeeze", "SQUEEZE"}, {"Unsqueeze", "EXPAND_DIMS"}, {"Expand", "BROADCAST_TO"},
    {"Shape", "SHAPE"},     {"ReduceMean", "MEAN"},   {"ReduceSum", "SUM"},
    {"ReduceMax", "REDUCE_MAX"}, {"ReduceMin", "REDUCE_MIN"}, {"ReduceProd", "REDUCE_PROD"},
    {"Erf", NULL}, /* onnx2tf builds Erf from several ops: not mapped */
};

typedef struct lm_ctx {
    const cg_model *src;
    const cg_graph *g;
    const cg_type_env *types;
    cg_model *out;
    cg_graph *og;
    size_t node_cap, init_cap, vi_cap;
    size_t *origin;
    cg_litert_removed *removed;
    size_t removed_count;
    cg_strmap alias;       /* removed node's output -> index into alias_to */
    const char **alias_to;
    size_t alias_count;
    bool *skip;            /* per source node: removed */
    const char **act;      /* per source node: fused activation from its consumer */
    cg_error *err;
} lm_ctx;

static cg_status lm_nomem(lm_ctx *c)
{
    return cg_error_set(c->err, CG_NOMEM, "ONNX->TFLite mapping: out of memory");
}

static bool is_op(const cg_node *n, const char *op)
{
    return n->op_type && cg_domain_is_default(n->domain) && strcmp(n->op_type, op) == 0;
}

static const char *resolve(lm_ctx *c, const char *name)
{
    for (int guard = 0; name && *name && guard < 10000; guard++) {
        size_t i = cg_strmap_get(&c->alias, name);
        if (i == CG_STRMAP_NONE)
            return name;
        name = c->alias_to[i];
    }
    return name;
}

static bool add_alias(lm_ctx *c, const char *from, const char *to)
{
    const char **grown = realloc(c->alias_to, (c->alias_count + 1) * sizeof *grown);
    if (!grown)
        return false;
    c->alias_to = grown;
    c->alias_to[c->alias_count] = to;
    if (cg_strmap_add(&c->alias, from, c->alias_count) == CG_STRMAP_NONE)
        return false;
    c->alias_count++;
    return true;
}

static bool note_removed(lm_ctx *c, size_t node, const char *why)
{
    cg_litert_removed *grown = realloc(c->removed, (c->removed_count + 1) * sizeof *grown);
    if (!grown)
        return false;
    c->removed = grown;
    c->removed[c->removed_count++] = (cg_litert_removed){node, why};
    c->skip[node] = true;
    return true;
}

static const cg_value_type *vtype(lm_ctx *c, const char *name)
{
    return name && *name ? cg_type_env_get(c->types, name) : NULL;
}

static bool is_const(lm_ctx *c, const char *name)
{
    const cg_value_type *t = vtype(c, name);
    return t && t->is_const;
}

/* Number of consumers of name in the source graph (and whether it is a graph output). */
static size_t consumers(const cg_graph *g, const char *name, size_t *only)
{
    size_t n = 0;
    for (size_t i = 0; i < g->node_count; i++)
        for (size_t k = 0; k < g->nodes[i].input_count; k++)
            if (g->nodes[i].inputs[k] && strcmp(g->nodes[i].inputs[k], name) == 0) {
                n++;
                *only = i;
            }
    for (size_t i = 0; i < g->output_count; i++)
        if (g->outputs[i].name && strcmp(g->outputs[i].name, name) == 0)
            n += 2; /* a graph output cannot be fused away */
    return n;
}

/* A float scalar of a constant: an initializer or a Constant node's value. */
static bool tensor_scalar(const cg_tensor_proto *t, double *out)
{
    if (t->data_type == CG_DTYPE_FLOAT) {
        float f;
        if (t->raw_data.data && t->raw_data.len == sizeof f)
            memcpy(&f, t->raw_data.data, sizeof f);
        else if (t->float_data.count == 1)
            memcpy(&f, t->float_data.data, sizeof f);
        else
            return false;
        *out = f;
        return true;
    }
    return false;
}

static bool const_scalar(lm_ctx *c, const char *name, double *out)
{
    if (!name || !*name)
        return false;
    for (size_t i = 0; i < c->g->initializer_count; i++)
        if (c->g->initializers[i].name && strcmp(c->g->initializers[i].name, name) == 0)
            return tensor_scalar(&c->g->initializers[i], out);
    for (size_t i = 0; i < c->g->node_count; i++) {
        const cg_node *n = &c->g->nodes[i];
        if (is_op(n, "Constant") && n->output_count && strcmp(n->outputs[0], name) == 0) {
            const cg_attr *v = cg_node_attr(n, "value");
            return v && v->t && tensor_scalar(v->t, out);
        }
    }
    return false;
}

/* The activation a Relu or Clip node stands for, or NULL. */
static const char *activation_of(lm_ctx *c, const cg_node *n)
{
    if (is_op(n, "Relu"))
        return "RELU";
    if (!is_op(n, "Clip"))
        return NULL;
    double lo = -INFINITY, hi = INFINITY;
    if (n->input_count > 1 && *n->inputs[1] && !const_scalar(c, n->inputs[1], &lo))
        return NULL;
    if (n->input_count > 2 && *n->inputs[2] && !const_scalar(c, n->inputs[2], &hi))
        return NULL;
    if (n->input_count <= 1) { /* opset < 11: attributes */
        lo = cg_node_attr_float(n, "min", -INFINITY);
        hi = cg_node_attr_float(n, "max", INFINITY);
    }
    if (lo == 0 && hi == 6)
        return "RELU6";
    if (lo == -1 && hi == 1)
        return "RELU_N1_TO_1";
    if (lo == 0 && hi == 1)
        return "RELU_0_TO_1";
    if (lo == 0 && isinf(hi) && hi > 0)
        return "RELU";
    return NULL;
}

/* --- building the result ------------------------------------------------------------ */

static cg_type *nhwc_type(lm_ctx *c, const cg_value_type *t, bool nhwc)
{
    cg_arena *ar = c->out->arena;
    cg_type *ty = cg_arena_calloc(ar, 1, sizeof *ty);
    if (!ty)
        return NULL;
    ty->kind = CG_TYPE_TENSOR;
    if (!t || !t->known)
        return ty;
    ty->elem_type = (int32_t)t->dtype;
    ty->has_elem_type = true;
    cg_shape *sh = cg_arena_calloc(ar, 1, sizeof *sh);
    if (!sh || (t->rank && !(sh->dims = cg_arena_calloc(ar, (size_t)t->rank, sizeof *sh->dims))))
        return NULL;
    sh->rank = (size_t)t->rank;
    static const int perm[4] = {0, 2, 3, 1};
    for (int d = 0; d < t->rank; d++) {
        int from = nhwc && t->rank == 4 ? perm[d] : d;
        sh->dims[d].value = t->dims[from];
        sh->dims[d].has_value = t->dims[from] >= 0;
    }
    ty->shape = sh;
    return ty;
}

static bool add_value_info(lm_ctx *c, const char *name, cg_type *ty)
{
    if (!ty)
        return false;
    if (c->og->value_info_count == c->vi_cap) {
        size_t cap = c->vi_cap ? 2 * c->vi_cap : 64;
        cg_value_info *v = cg_arena_calloc(c->out->arena, cap, sizeof *v);
        if (!v)
            return false;
        if (c->vi_cap)
            memcpy(v, c->og->value_infos, c->vi_cap * sizeof *v);
        c->og->value_infos = v;
        c->vi_cap = cap;
    }
    c->og->value_infos[c->og->value_info_count++] = (cg_value_info){name, ty, NULL, {NULL, 0}};
    return true;
}

static bool add_init(lm_ctx *c, const cg_tensor_proto *t)
{
    if (c->og->initializer_count == c->init_cap) {
        size_t cap = c->init_cap ? 2 * c->init_cap : 64;
        cg_tensor_proto *v = cg_arena_calloc(c->out->arena, cap, sizeof *v);
        if (!v)
            return false;
        if (c->init_cap)
            memcpy(v, c->og->initializers, c->init_cap * sizeof *v);
        c->og->initializers = v;
        c->init_cap = cap;
    }
    c->og->initializers[c->og->initializer_count++] = *t;
    return true;
}

/* A new int32 constant (axes, shapes) named after the node. */
static const char *new_const_i32(lm_ctx *c, const char *base, const char *what,
                                 const int32_t *v, size_t n)
{
    cg_arena *ar = c->out->arena;
    size_t len = strlen(base) + strlen(what) + 4;
    char *name = cg_arena_alloc(ar, len);
    int64_t *dims = cg_arena_calloc(ar, 1, sizeof *dims);
    uint8_t *data = cg_arena_calloc(ar, n ? n : 1, sizeof *v);
    if (!name || !dims || !data)
        return NULL;
    snprintf(name, len, "%s/%s", base, what);
    if (n)
        memcpy(data, v, n * sizeof *v);
    dims[0] = (int64_t)n;
    cg_tensor_proto t;
    memset(&t, 0, sizeof t);
    t.name = name;
    t.dims = dims;
    t.rank = 1;
    t.data_type = CG_DTYPE_INT32;
    t.has_data_type = true;
    t.raw_data = (cg_bytes){data, n * sizeof *v};
    return add_init(c, &t) ? name : NULL;
}

typedef struct lm_attrs {
    cg_attr a[12];
    size_t n;
} lm_attrs;

static void la_int(lm_attrs *as, const char *name, int64_t v)
{
    if (as->n < sizeof as->a / sizeof as->a[0])
        as->a[as->n++] = (cg_attr){.name = name, .type = CG_ATTR_INT, .has_type = true, .i = v,
                                   .has_i = true};
}

static void la_float(lm_attrs *as, const char *name, float v)
{
    if (as->n < sizeof as->a / sizeof as->a[0])
        as->a[as->n++] = (cg_attr){.name = name, .type = CG_ATTR_FLOAT, .has_type = true, .f = v,
                                   .has_f = true};
}

static void la_str(lm_attrs *as, const char *name, const char *v)
{
    if (as->n < sizeof as->a / sizeof as->a[0])
        as->a[as->n++] = (cg_attr){.name = name, .type = CG_ATTR_STRING, .has_type = true,
                                   .s = {(const uint8_t *)v, strlen(v)}};
}

/* Appends a node of op `op` (domain "tflite", or "onnx" when unmapped). */
static bool emit(lm_ctx *c, size_t origin, const char *domain, const char *op, const char *name,
                 const char *const *ins, size_t n_in, const char *const *outs, size_t n_out,
                 const lm_attrs *as)
{
    cg_arena *ar = c->out->arena;
    if (c->og->node_count == c->node_cap)
        return false; /* sized for 4 nodes per source node: never reached */
    cg_node *nd = &c->og->nodes[c->og->node_count];
    nd->op_type = op;
    nd->domain = domain;
    nd->name = name;
    nd->inputs = cg_arena_calloc(ar, n_in ? n_in : 1, sizeof *nd->inputs);
    nd->outputs = cg_arena_calloc(ar, n_out ? n_out : 1, sizeof *nd->outputs);
    nd->attrs = cg_arena_calloc(ar, as && as->n ? as->n : 1, sizeof *nd->attrs);
    if (!nd->inputs || !nd->outputs || !nd->attrs)
        return false;
    for (size_t i = 0; i < n_in; i++)
        nd->inputs[i] = ins[i] ? resolve(c, ins[i]) : "";
    for (size_t i = 0; i < n_out; i++)
        nd->outputs[i] = outs[i];
    nd->input_count = n_in;
    nd->output_count = n_out;
    if (as && as->n)
        memcpy(nd->attrs, as->a, as->n * sizeof *nd->attrs);
    nd->attr_count = as ? as->n : 0;
    c->origin[c->og->node_count++] = origin;
    return true;
}

/* TF's SAME padding of one spatial dim (before, after). */
static void same_pads(int64_t in, int64_t k, int64_t s, int64_t d, int64_t *b, int64_t *a)
{
    int64_t out = (in + s - 1) / s, eff = (k - 1) * d + 1;
    int64_t total = (out - 1) * s + eff - in;
    if (total < 0)
        total = 0;
    *b = total / 2;
    *a = total - *b;
}

/* Padding of a Conv/pool: "SAME", "VALID", or NULL when a PAD op is needed
 * (onnx2tf Conv.py / MaxPool.py: explicit pads that are not TF's SAME become
 * tf.pad then a VALID op). */
static const char *padding_of(lm_ctx *c, const cg_node *n, const int64_t *kernel)
{
    const cg_attr *ap = cg_node_attr(n, "auto_pad");
    if (ap && ap->s.len) {
        if (ap->s.len == 5 && memcmp(ap->s.data, "VALID", 5) == 0)
            return "VALID";
        return "SAME";
    }
    const cg_attr *p = cg_node_attr(n, "pads");
    bool zero = true;
    for (size_t i = 0; p && i < p->ints_count; i++)
        zero = zero && p->ints[i] == 0;
    if (zero)
        return "VALID";
    const cg_value_type *x = vtype(c, n->inputs[0]);
    if (!x || !x->known || x->rank != 4 || p->ints_count != 4)
        return NULL;
    const cg_attr *s = cg_node_attr(n, "strides"), *d = cg_node_attr(n, "dilations");
    for (int k = 0; k < 2; k++) {
        int64_t b, a, st = s && s->ints_count == 2 ? s->ints[k] : 1;
        int64_t dl = d && d->ints_count == 2 ? d->ints[k] : 1;
        /* strides, dilations and kernels the checker would refuse: no SAME */
        if (st < 1 || st > (1 << 20) || dl < 1 || dl > (1 << 20) || kernel[k] < 1 ||
            kernel[k] > (1 << 20) || x->dims[2 + k] < 0 || x->dims[2 + k] > ((int64_t)1 << 40))
            return NULL;
        same_pads(x->dims[2 + k], kernel[k], st, dl, &b, &a);
        if (p->ints[k] != b || p->ints[2 + k] != a)
            return NULL;
    }
    return "SAME";
}

/* A PAD in front of node n (its padding is not TF's SAME): returns the padded
 * value's name. */
static const char *emit_pad(lm_ctx *c, size_t i, const cg_node *n)
{
    static const int32_t zero_pads[8] = {0};
    cg_arena *ar = c->out->arena;
    const char *nm = n->name && *n->name ? n->name : n->outputs[0];
    size_t len = strlen(nm) + 8;
    char *out = cg_arena_alloc(ar, len), *pname = cg_arena_alloc(ar, len);
    if (!out || !pname)
        return NULL;
    snprintf(out, len, "%s/padded", nm);
    snprintf(pname, len, "%s/pad", nm);
    const char *pads = new_const_i32(c, nm, "paddings", zero_pads, 8);
    if (!pads)
        return NULL;
    c->og->initializers[c->og->initializer_count - 1].rank = 2;
    int64_t *dims = cg_arena_calloc(ar, 2, sizeof *dims);
    if (!dims)
        return NULL;
    dims[0] = 4;
    dims[1] = 2;
    c->og->initializers[c->og->initializer_count - 1].dims = dims;
    const char *ins[2] = {n->inputs[0], pads};
    lm_attrs as = {.n = 0};
    la_int(&as, "version", 1);
    if (!emit(c, i, CG_TFLITE_OPS_DOMAIN, "PAD", pname, ins, 2, (const char *const *)&out, 1,
              &as))
        return NULL;
    /* the padded value: the input's type with H and W grown by the pads */
    const cg_value_type *x = vtype(c, n->inputs[0]);
    cg_value_type t = x ? *x : (cg_value_type){0};
    const cg_attr *p = cg_node_attr(n, "pads");
    if (t.known && t.rank == 4 && p && p->ints_count == 4) {
        t.dims[2] += p->ints[0] + p->ints[2];
        t.dims[3] += p->ints[1] + p->ints[3];
    }
    return add_value_info(c, out, nhwc_type(c, &t, true)) ? out : NULL;
}

/* A float32 scalar constant named base/what. */
static const char *new_const_f32(lm_ctx *c, const char *base, const char *what, float v)
{
    cg_arena *ar = c->out->arena;
    size_t len = strlen(base) + strlen(what) + 4;
    char *name = cg_arena_alloc(ar, len);
    uint8_t *data = cg_arena_alloc(ar, sizeof v);
    if (!name || !data)
        return NULL;
    snprintf(name, len, "%s/%s", base, what);
    memcpy(data, &v, sizeof v);
    cg_tensor_proto t;
    memset(&t, 0, sizeof t);
    t.name = name;
    t.data_type = CG_DTYPE_FLOAT;
    t.has_data_type = true;
    t.raw_data = (cg_bytes){data, sizeof v};
    return add_init(c, &t) ? name : NULL;
}

/* HardSigmoid: onnx2tf HardSigmoid.py writes tf.maximum(0, tf.minimum(1,
 * alpha * x + beta)): MUL, ADD, MINIMUM, MAXIMUM, each with a constant. */
static bool emit_hard_sigmoid(lm_ctx *c, size_t i, const cg_node *n, const char *name)
{
    static const char *const ops[4] = {"MUL", "ADD", "MINIMUM", "MAXIMUM"};
    static const char *const what[4] = {"alpha", "beta", "one", "zero"};
    float k[4] = {cg_node_attr_float(n, "alpha", 0.2f), cg_node_attr_float(n, "beta", 0.5f),
                  1.0f, 0.0f};
    const cg_value_type *t = vtype(c, n->outputs[0]);
    const char *prev = n->inputs[0];
    cg_arena *ar = c->out->arena;
    for (int s = 0; s < 4; s++) {
        const char *cst = new_const_f32(c, name, what[s], k[s]);
        size_t len = strlen(name) + 16;
        char *nm = cg_arena_alloc(ar, len), *out = cg_arena_alloc(ar, len);
        if (!cst || !nm || !out)
            return false;
        snprintf(nm, len, "%s/%s", name, ops[s]);
        snprintf(out, len, "%s/%d", name, s);
        const char *o = s == 3 ? n->outputs[0] : out;
        const char *ins[2] = {prev, cst};
        lm_attrs as = {.n = 0};
        la_int(&as, "version", 1);
        if (s < 2)
            la_str(&as, "fused_activation_function", "NONE");
        if (!emit(c, i, CG_TFLITE_OPS_DOMAIN, ops[s], nm, ins, 2, &o, 1, &as))
            return false;
        if (s < 3 && !add_value_info(c, out, nhwc_type(c, t, true)))
            return false;
        prev = out;
    }
    return true;
}

static const char *node_name(const cg_node *n, size_t i, lm_ctx *c)
{
    if (n->name && *n->name)
        return n->name;
    char buf[32];
    snprintf(buf, sizeof buf, "#%zu", i);
    return cg_arena_strdup(c->out->arena, buf);
}

/* The TFLite op(s) of source node i. */
static bool map_node(lm_ctx *c, size_t i)
{
    const cg_node *n = &c->g->nodes[i];
    const char *name = node_name(n, i, c);
    lm_attrs as = {.n = 0};
    la_int(&as, "version", 1);
    const char *act = c->act[i] ? c->act[i] : "NONE";
    const char *ins[4] = {NULL, NULL, NULL, NULL};
    size_t n_in = n->input_count < 4 ? n->input_count : 4;
    for (size_t k = 0; k < n_in; k++)
        ins[k] = n->inputs[k];
    const char *const *outs = n->outputs;
    size_t n_out = n->output_count;
    if (!name)
        return false;
    if (!n->input_count || !n->output_count) /* no data in or out: keep it as it is */
        return emit(c, i, "onnx", n->op_type ? n->op_type : "?", name, n->inputs,
                    n->input_count, outs, n_out, &as);

    if (is_op(n, "Conv") || is_op(n, "AveragePool") || is_op(n, "MaxPool")) {
        /* onnx2tf Conv.py: group == 1 -> conv2d, group == in channels ->
         * depthwise_conv2d (the converter: CONV_2D / DEPTHWISE_CONV_2D) */
        const cg_value_type *x = vtype(c, n->inputs[0]);
        const cg_value_type *w = n->input_count > 1 ? vtype(c, n->inputs[1]) : NULL;
        bool conv = is_op(n, "Conv");
        int64_t kernel[2] = {1, 1};
        const cg_attr *ks = cg_node_attr(n, "kernel_shape");
        if (ks && ks->ints_count == 2) {
            kernel[0] = ks->ints[0];
            kernel[1] = ks->ints[1];
        } else if (conv && w && w->known && w->rank == 4) {
            kernel[0] = w->dims[2];
            kernel[1] = w->dims[3];
        }
        const char *pad = padding_of(c, n, kernel);
        if (!pad) {
            if (!(ins[0] = emit_pad(c, i, n)))
                return false;
            pad = "VALID";
        }
        const cg_attr *s = cg_node_attr(n, "strides"), *d = cg_node_attr(n, "dilations");
        la_str(&as, "padding", pad);
        la_str(&as, "fused_activation_function", act);
        la_int(&as, "stride_h", s && s->ints_count == 2 ? s->ints[0] : 1);
        la_int(&as, "stride_w", s && s->ints_count == 2 ? s->ints[1] : 1);
        if (!conv) {
            la_int(&as, "filter_height", kernel[0]);
            la_int(&as, "filter_width", kernel[1]);
            return emit(c, i, CG_TFLITE_OPS_DOMAIN,
                        is_op(n, "MaxPool") ? "MAX_POOL_2D" : "AVERAGE_POOL_2D", name, ins, 1,
                        outs, 1, &as);
        }
        la_int(&as, "dilation_h_factor", d && d->ints_count == 2 ? d->ints[0] : 1);
        la_int(&as, "dilation_w_factor", d && d->ints_count == 2 ? d->ints[1] : 1);
        int64_t group = cg_node_attr_int(n, "group", 1);
        const char *op = "CONV_2D";
        if (group > 1 && x && x->known && x->rank == 4 && x->dims[1] == group && w && w->known) {
            op = "DEPTHWISE_CONV_2D";
            la_int(&as, "depth_multiplier", w->dims[0] / group);
        }
        return emit(c, i, CG_TFLITE_OPS_DOMAIN, op, name, ins, n_in, outs, 1, &as);
    }
    if (is_op(n, "GlobalAveragePool") || is_op(n, "GlobalMaxPool")) {
        /* onnx2tf GlobalAveragePool.py: GlobalAveragePooling2D(keepdims=True),
         * a mean over H and W -> MEAN with constant axes [1, 2] */
        static const int32_t hw[2] = {1, 2};
        const char *axes = new_const_i32(c, name, "axes", hw, 2);
        if (!axes)
            return false;
        ins[1] = axes;
        la_int(&as, "keep_dims", 1);
        return emit(c, i, CG_TFLITE_OPS_DOMAIN,
                    is_op(n, "GlobalAveragePool") ? "MEAN" : "REDUCE_MAX", name, ins, 2, outs, 1,
                    &as);
    }
    if (is_op(n, "Flatten") || is_op(n, "Reshape")) {
        /* onnx2tf Flatten.py / Reshape.py: tf.reshape with a static shape -> RESHAPE */
        const cg_value_type *y = vtype(c, n->outputs[0]);
        int32_t shape[CG_MAX_RANK];
        size_t r = y && y->known ? (size_t)y->rank : 0;
        for (size_t k = 0; k < r; k++)
            shape[k] = (int32_t)y->dims[k];
        const char *sh = new_const_i32(c, name, "shape", shape, r);
        if (!sh)
            return false;
        ins[1] = sh;
        return emit(c, i, CG_TFLITE_OPS_DOMAIN, "RESHAPE", name, ins, 2, outs, 1, &as);
    }
    if (is_op(n, "Gemm") || is_op(n, "MatMul")) {
        /* onnx2tf Gemm.py / MatMul.py: tf.matmul; the converter makes a matmul
         * with a constant 2-D right side FULLY_CONNECTED, else BATCH_MATMUL */
        const cg_value_type *b = n->input_count > 1 ? vtype(c, n->inputs[1]) : NULL;
        if (b && b->is_const && b->known && b->rank == 2) {
            la_str(&as, "fused_activation_function", act);
            la_str(&as, "weights_format", "DEFAULT");
            return emit(c, i, CG_TFLITE_OPS_DOMAIN, "FULLY_CONNECTED", name, ins, n_in, outs, 1,
                        &as);
        }
        return emit(c, i, CG_TFLITE_OPS_DOMAIN, "BATCH_MATMUL", name, ins, 2, outs, 1, &as);
    }
    if (is_op(n, "Clip")) {
        const char *a = activation_of(c, n);
        if (a)
            return emit(c, i, CG_TFLITE_OPS_DOMAIN, a, name, ins, 1, outs, 1, &as);
        /* onnx2tf Clip.py: tf.clip_by_value -> MINIMUM then MAXIMUM */
        return emit(c, i, CG_TFLITE_OPS_DOMAIN, "MINIMUM", name, ins, n_in, outs, 1, &as);
    }
    if (is_op(n, "HardSigmoid"))
        return emit_hard_sigmoid(c, i, n, name);
    if (is_op(n, "BatchNormalization")) {
        /* not after a Conv: a MUL and an ADD with folded constants (the
         * converter's batch-norm decomposition); counted as MUL here */
        return emit(c, i, CG_TFLITE_OPS_DOMAIN, "MUL", name, ins, 2, outs, 1, &as);
    }
    if ((is_op(n, "ReduceMean") || is_op(n, "ReduceSum") || is_op(n, "ReduceMax") ||
         is_op(n, "ReduceMin") || is_op(n, "ReduceProd")) &&
        (n->input_count < 2 || !*n->inputs[1])) {
        /* axes as an attribute (before opset 18 / 13 for ReduceSum): the TFLite
         * op takes them as a constant int32 input, NHWC axes for 4-D data */
        static const int32_t to_nhwc[4] = {0, 3, 1, 2};
        const cg_attr *ax = cg_node_attr(n, "axes");
        const cg_value_type *x = vtype(c, n->inputs[0]);
        int32_t axes[CG_MAX_RANK];
        size_t na = 0;
        for (size_t k = 0; ax && k < ax->ints_count && na < CG_MAX_RANK; k++) {
            int64_t a = ax->ints[k];
            if (x && x->known && a < 0)
                a += x->rank;
            axes[na++] = (int32_t)(x && x->known && x->rank == 4 && a >= 0 && a < 4 ? to_nhwc[a]
                                                                                   : a);
        }
        const char *axes_name = new_const_i32(c, name, "axes", axes, na);
        if (!axes_name)
            return false;
        ins[1] = axes_name;
        n_in = 2;
        la_int(&as, "keep_dims", cg_node_attr_int(n, "keepdims", 1));
    }
    if (is_op(n, "Softmax"))
        la_float(&as, "beta", 1.0f);
    if (is_op(n, "Add") || is_op(n, "Mul") || is_op(n, "Sub") || is_op(n, "Div"))
        la_str(&as, "fused_activation_function", act);
    if (is_op(n, "Slice")) {
        la_int(&as, "ellipsis_mask", 0);
        la_int(&as, "new_axis_mask", 0);
        la_int(&as, "shrink_axis_mask", 0);
    }
    if (is_op(n, "Resize")) {
        const cg_attr *m = cg_node_attr(n, "mode");
        bool nearest = !m || (m->s.len == 7 && memcmp(m->s.data, "nearest", 7) == 0);
        ins[1] = NULL;
        return emit(c, i, CG_TFLITE_OPS_DOMAIN,
                    nearest ? "RESIZE_NEAREST_NEIGHBOR" : "RESIZE_BILINEAR", name, ins, 1, outs,
                    1, &as);
    }
    if (is_op(n, "Pad")) {
        const cg_attr *m = cg_node_attr(n, "mode");
        bool reflect = m && m->s.len == 7 && memcmp(m->s.data, "reflect", 7) == 0;
        if (reflect)
            la_str(&as, "mode", "REFLECT");
        return emit(c, i, CG_TFLITE_OPS_DOMAIN, reflect ? "MIRROR_PAD" : "PAD", name, ins,
                    n_in > 2 ? 2 : n_in, outs, 1, &as);
    }
    for (size_t r = 0; r < sizeof one_to_one / sizeof one_to_one[0]; r++)
        if (is_op(n, one_to_one[r].onnx) && one_to_one[r].tflite)
            return emit(c, i, CG_TFLITE_OPS_DOMAIN, one_to_one[r].tflite, name,
                        n_in == n->input_count ? ins : n->inputs,
                        n_in == n->input_count ? n_in : n->input_count, outs, n_out, &as);
    /* no mapping: keep the ONNX op, which no tflite:* rule accepts */
    return emit(c, i, "onnx", n->op_type ? n->op_type : "?", name, n->inputs, n->input_count,
                outs, n_out, &as);
}

/* Marks what a converter removes or fuses: no ops, folded constants, BN
 * after Conv, activations after Conv/Gemm/Add/Mul. */
static bool plan_removals(lm_ctx *c)
{
    const cg_graph *g = c->g;
    for (size_t i = 0; i < g->node_count; i++) {
        const cg_node *n = &g->nodes[i];
        bool all_const = n->input_count > 0;
        for (size_t k = 0; k < n->input_count; k++)
            all_const = all_const && (!*n->inputs[k] || is_const(c, n->inputs[k]));
        if ((is_op(n, "Identity") || is_op(n, "Dropout")) && n->input_count && n->output_count) {
            /* onnx2tf Identity.py / Dropout.py: tf.identity, which the converter removes */
            if (!note_removed(c, i, "no op after conversion (tf.identity)") ||
                (n->output_count && !add_alias(c, n->outputs[0], n->inputs[0])))
                return false;
            continue;
        }
        if (is_op(n, "Constant") || (all_const && n->output_count)) {
            /* a constant, or computed only from constants: the converter folds it */
            if (!note_removed(c, i, is_op(n, "Constant") ? "a constant tensor, not an op"
                                                         : "constant-folded by the converter"))
                return false;
            for (size_t o = 0; o < n->output_count; o++) {
                const cg_value_type *t = vtype(c, n->outputs[o]);
                cg_tensor_proto tp;
                memset(&tp, 0, sizeof tp);
                tp.name = n->outputs[o];
                tp.data_type = t && t->known ? (int32_t)t->dtype : CG_DTYPE_FLOAT;
                tp.has_data_type = true;
                if (t && t->known && t->rank) {
                    int64_t *dims = cg_arena_calloc(c->out->arena, (size_t)t->rank, sizeof *dims);
                    if (!dims)
                        return false;
                    memcpy(dims, t->dims, (size_t)t->rank * sizeof *dims);
                    tp.dims = dims;
                    tp.rank = (size_t)t->rank;
                }
                if (!add_init(c, &tp))
                    return false;
            }
            continue;
        }
        size_t only = 0;
        if (!n->output_count || !*n->outputs[0] || consumers(g, n->outputs[0], &only) != 1)
            continue;
        const cg_node *next = &g->nodes[only];
        if (!next->output_count || !*next->outputs[0])
            continue;
        if (is_op(n, "Conv") && is_op(next, "BatchNormalization")) {
            /* the converter folds the batch norm's scale and shift into the
             * conv's weights and bias (tests/optimize.mlir: fuseMulIntoConv2d,
             * fuseAddIntoConv2d) */
            if (!note_removed(c, only, "folded into the Conv before it") ||
                !add_alias(c, next->outputs[0], n->outputs[0]))
                return false;
            /* an activation after the batch norm fuses into the conv too */
            size_t after = 0;
            if (consumers(g, next->outputs[0], &after) == 1 && g->nodes[after].output_count &&
                activation_of(c, &g->nodes[after])) {
                c->act[i] = activation_of(c, &g->nodes[after]);
                if (!note_removed(c, after, "fused into the op before it") ||
                    !add_alias(c, g->nodes[after].outputs[0], n->outputs[0]))
                    return false;
            }
            continue;
        }
        const char *a = activation_of(c, next);
        if (a && (is_op(n, "Conv") || is_op(n, "Gemm") || is_op(n, "Add") || is_op(n, "Mul")) &&
            !c->skip[only]) {
            /* tests/optimize.mlir fusedConv2dRelu, fusedDepthwiseConv2dRelu6: a
             * following RELU/RELU6/RELU_N1_TO_1 becomes the op's fused activation */
            c->act[i] = a;
            if (!note_removed(c, only, "fused into the op before it") ||
                !add_alias(c, next->outputs[0], n->outputs[0]))
                return false;
        }
    }
    return true;
}

cg_status cg_litert_lower(const cg_model *src, const cg_type_env *types, cg_litert_lowered **out,
                          cg_error *err)
{
    *out = NULL;
    if (!src || !src->graph)
        return cg_error_set(err, CG_USAGE, "ONNX->TFLite mapping: the model has no graph");
    lm_ctx c;
    memset(&c, 0, sizeof c);
    c.src = src;
    c.g = src->graph;
    c.types = types;
    c.err = err;
    cg_litert_lowered *l = calloc(1, sizeof *l);
    cg_model *m = calloc(1, sizeof *m);
    size_t n = c.g->node_count;
    cg_status st = CG_OK;
    if (!l || !m || !(m->arena = cg_arena_new())) {
        free(l);
        free(m);
        return lm_nomem(&c);
    }
    c.out = l->model = m;
    c.og = m->graph = cg_arena_calloc(m->arena, 1, sizeof *m->graph);
    c.node_cap = 4 * n + 1; /* HardSigmoid: 4 ops */
    c.og ? (void)(c.og->nodes = cg_arena_calloc(m->arena, c.node_cap, sizeof *c.og->nodes))
         : (void)0;
    c.origin = calloc(c.node_cap, sizeof *c.origin);
    c.skip = calloc(n + 1, sizeof *c.skip);
    c.act = calloc(n + 1, sizeof *c.act);
    m->opsets = cg_arena_calloc(m->arena, 1, sizeof *m->opsets);
    if (!c.og || !c.og->nodes || !c.origin || !c.skip || !c.act || !m->opsets) {
        st = lm_nomem(&c);
        goto fail;
    }
    m->opsets[0] = (cg_opset_id){CG_TFLITE_OPS_DOMAIN, 1, true, {NULL, 0}};
    m->opset_count = 1;
    m->producer_name = "convgate onnx->tflite mapping";
    c.og->name = c.g->name;
    cg_value_info *ins = cg_arena_calloc(m->arena, c.g->input_count + 1, sizeof *ins);
    if (!ins) {
        st = lm_nomem(&c);
        goto fail;
    }
    for (size_t i = 0; i < c.g->input_count; i++) {
        ins[i] = c.g->inputs[i];
        ins[i].type = nhwc_type(&c, vtype(&c, ins[i].name), true);
    }
    c.og->inputs = ins;
    c.og->input_count = c.g->input_count;
    for (size_t i = 0; i < c.g->initializer_count; i++)
        if (!add_init(&c, &c.g->initializers[i])) {
            st = lm_nomem(&c);
            goto fail;
        }
    if (!plan_removals(&c)) {
        st = lm_nomem(&c);
        goto fail;
    }
    for (size_t i = 0; i < n; i++)
        if (!c.skip[i] && !map_node(&c, i)) {
            st = lm_nomem(&c);
            goto fail;
        }
    /* graph outputs read through removed nodes; types of every value */
    cg_value_info *outs = cg_arena_calloc(m->arena, c.g->output_count + 1, sizeof *outs);
    if (!outs) {
        st = lm_nomem(&c);
        goto fail;
    }
    for (size_t i = 0; i < c.g->output_count; i++) {
        outs[i] = c.g->outputs[i];
        outs[i].name = resolve(&c, c.g->outputs[i].name);
        outs[i].type = nhwc_type(&c, vtype(&c, outs[i].name), true);
    }
    c.og->outputs = outs;
    c.og->output_count = c.g->output_count;
    for (size_t i = 0; i < c.og->input_count; i++)
        if (!add_value_info(&c, c.og->inputs[i].name,
                            nhwc_type(&c, vtype(&c, c.og->inputs[i].name), true))) {
            st = lm_nomem(&c);
            goto fail;
        }
    for (size_t i = 0; i < c.og->node_count; i++)
        for (size_t o = 0; o < c.og->nodes[i].output_count; o++) {
            const char *v = c.og->nodes[i].outputs[o];
            if (v && *v && !cg_type_env_get(c.types, v))
                continue; /* made by the mapping (typed where it was made) */
            if (v && *v && !add_value_info(&c, v, nhwc_type(&c, vtype(&c, v), true))) {
                st = lm_nomem(&c);
                goto fail;
            }
        }
    l->origin = c.origin;
    l->removed = c.removed;
    l->removed_count = c.removed_count;
    free(c.skip);
    free(c.act);
    free(c.alias_to);
    cg_strmap_free(&c.alias);
    *out = l;
    return CG_OK;
fail:
    free(c.origin);
    free(c.removed);
    free(c.skip);
    free(c.act);
    free(c.alias_to);
    cg_strmap_free(&c.alias);
    cg_model_free(m);
    free(l);
    return st;
}

void cg_litert_lowered_free(cg_litert_lowered *l)
{
    if (!l)
        return;
    cg_model_free(l->model);
    free(l->origin);
    free(l->removed);
    free(l);
}
