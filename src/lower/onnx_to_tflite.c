/*
 * "onnx-to-tflite": the graph a LiteRT runtime partitions when the model
 * was converted from ONNX, i.e. the TFLite operators a converter emits for
 * an ONNX graph, so that the LiteRT targets (litert-gpu, tflite-xnnpack,
 * tflm: their "preprocess") judge the ops their delegates will really see
 * (the tflite:* rules of the profiles, docs/tflite.md "ONNX models on
 * LiteRT targets"). Each row of the mapping cites the converter rule it
 * follows: onnx2tf (PINTO0309/onnx2tf, onnx2tf/ops/<Op>.py) for how an ONNX
 * op becomes TensorFlow ops, TensorFlow's TFLite converter for how those
 * become TFLite builtins (tensorflow/compiler/mlir/lite: legalize_patterns.td
 * and the fusions tested in tests/optimize.mlir).
 *
 * The result, on the editable graph of lgraph.h, is a graph of the same
 * form as cg_tflite_op_model's: nodes in domain "tflite" named after the
 * ONNX node they come from, attributes `version` and the TFLite options
 * the rules read, 4-D values in NHWC (onnx2tf transposes every 4-D tensor),
 * constants as initializers (the source's, borrowed; axes and shapes a
 * converter makes are new), every value's type declared (lg_model
 * declare_types: the reference cannot run TFLite ops, so the graph is typed
 * from its declarations). Shapes are those of one reference run at the
 * lowering's dims (unbound symbols 1): a .tflite stores static shapes (a
 * dim the source leaves open is -1 only in shape_signature, which LiteRT
 * resizes to on request), and its delegates judge those, as assign on a
 * .tflite does (cg_tflite_op_model); a conversion at another shape is
 * asked for with --dim / --shape (onnx2tf -b / -ois).
 *
 * ONNX nodes that are no op after conversion are removed (lg_remove, with
 * why): Identity, Dropout and Constant, nodes computed only from constants
 * (folded), a BatchNormalization right after a Conv (folded into its
 * weights), and a Relu / Clip(0,6) / Clip(-1,1) fused into the Conv, Gemm,
 * Add or Mul before it (these two are recorded as folded into that op). An
 * ONNX op the mapping does not know keeps its ONNX op type in domain "onnx"
 * and so is refused by every tflite:* rule, naming it. Only the main graph
 * is mapped: a control-flow node (If, Loop, Scan) is such an unmapped op,
 * and the lowering's notes say so (a converter writes IF / WHILE with
 * subgraphs). LayerNormalization becomes the ten ops of Keras's layer
 * norm, PyTorch's exported GELU pattern (Div, Erf, Add, Mul, Mul) one GELU,
 * as onnx2tf writes them. Each TFLite op carries the `version` a converter
 * writes for its operand types and options (op_version: TensorFlow's
 * op_version.cc), which the profiles' version rules judge.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "convgate/tflite.h"
#include "core/strmap.h"
#include "ir/walk.h"
#include "lower/lower_internal.h"
#include "target/registry.h"

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
    {"Concat", "CONCATENATION"}, {"Transpose", "TRANSPOSE"},
    {"Gather", "GATHER"},   {"GatherND", "GATHER_ND"}, {"Split", "SPLIT"},
    {"Tile", "TILE"},       {"Cast", "CAST"},         {"Where", "SELECT_V2"},
    {"Equal", "EQUAL"},     {"Less", "LESS"},         {"LessOrEqual", "LESS_EQUAL"},
    {"Greater", "GREATER"}, {"GreaterOrEqual", "GREATER_EQUAL"}, {"Not", "LOGICAL_NOT"},
    {"And", "LOGICAL_AND"}, {"Or", "LOGICAL_OR"},     {"ArgMax", "ARG_MAX"},
    {"ArgMin", "ARG_MIN"},  {"DepthToSpace", "DEPTH_TO_SPACE"},
    {"SpaceToDepth", "SPACE_TO_DEPTH"}, {"ConvTranspose", "TRANSPOSE_CONV"},
    {"Unsqueeze", "EXPAND_DIMS"}, {"Expand", "BROADCAST_TO"},
    {"Shape", "SHAPE"},     {"ReduceMean", "MEAN"},   {"ReduceSum", "SUM"},
    {"ReduceMax", "REDUCE_MAX"}, {"ReduceMin", "REDUCE_MIN"}, {"ReduceProd", "REDUCE_PROD"},
    /* Erf alone: onnx2tf Erf.py writes tf.math.erf, which has no TFLite
     * builtin (the converter needs SELECT_TF_OPS, a Flex op no delegate
     * takes): kept as the ONNX op, refused by every rule. Inside the GELU
     * pattern it is folded into a GELU (plan_removals). */
    {"Erf", NULL},
};

typedef struct lm_ctx {
    lg_model *m;
    lg_graph *lg;          /* the main graph: source node i is its node i */
    const cg_graph *g;     /* the source main graph */
    cg_type_env *types;    /* the source's types at the lowering's dims (NCHW) */
    size_t n;              /* source node count */
    lower_alias alias;     /* removed node's output -> the value it passes through */
    cg_strmap made;        /* names of the constants the mapping made */
    cg_strmap folded;      /* values the converter folds to constants */
    bool *skip;            /* per source node: removed */
    const char **why;      /* per source node: why it was removed */
    size_t *into;          /* per source node: the source node it folded into, or SIZE_MAX */
    size_t *op;            /* per source node: its (main) TFLite node, or SIZE_MAX */
    const char **act;      /* per source node: fused activation from its consumer */
    const char **gelu;     /* per source node: the Div opening a GELU pattern -> the
                              pattern's output (NULL: none) */
} lm_ctx;

static bool is_op(const cg_node *n, const char *op) { return lower_is_onnx_op(n, op); }

static const char *resolve(lm_ctx *c, const char *name)
{
    return lower_alias_resolve(&c->alias, name);
}

static bool add_alias(lm_ctx *c, const char *from, const char *to)
{
    return lower_alias_add(&c->alias, from, to);
}

/* Source node `node` leaves no op, for `why`; folded into source node
 * `into` (SIZE_MAX: none), whose op then stands for it too. */
static bool note_removed(lm_ctx *c, size_t node, const char *why, size_t into)
{
    c->skip[node] = true;
    c->why[node] = why;
    c->into[node] = into;
    return true;
}

static const cg_value_type *vtype(lm_ctx *c, const char *name)
{
    return name && *name ? cg_type_env_get(c->types, name) : NULL;
}

/* A constant after conversion: one of the source, or a value the
 * converter folds (c->folded). */
static bool is_const(lm_ctx *c, const char *name)
{
    const cg_value_type *t = vtype(c, name);
    if (t && t->is_const)
        return true;
    name = resolve(c, name);
    return name && cg_strmap_has(&c->folded, name);
}

/* Every dim of the value known: its shape is a constant to the converter. */
static bool static_shape(lm_ctx *c, const char *name)
{
    const cg_value_type *t = vtype(c, name);
    if (!t || !t->known)
        return false;
    for (int d = 0; d < t->rank; d++)
        if (t->dims[d] < 0)
            return false;
    return true;
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

/* The declared type of a value: t (source layout) with a 4-D shape in NHWC. */
static bool set_type(lm_ctx *c, const char *name, const cg_value_type *t)
{
    static const int perm[4] = {0, 2, 3, 1};
    lg_type lt;
    memset(&lt, 0, sizeof lt);
    if (t && t->known && t->rank <= CG_MAX_RANK) {
        lt.has_dtype = true;
        lt.dtype = (int32_t)t->dtype;
        lt.has_shape = true;
        lt.rank = t->rank;
        for (int d = 0; d < t->rank; d++) {
            int from = t->rank == 4 ? perm[d] : d;
            lt.dims[d] = t->dims[from];
            if (t->dims[from] >= 0)
                lt.dim_known |= 1u << d;
        }
    }
    return lg_type_set(c->lg, name, &lt);
}

/* A name for a constant or value the mapping makes: base/what, unique. */
static const char *made_name(lm_ctx *c, const char *base, const char *what)
{
    char buf[512];
    snprintf(buf, sizeof buf, "%s/%s", base, what);
    const char *name = lg_strdup(c->m, buf);
    for (unsigned k = 1; name && cg_strmap_has(&c->made, name) && k < 1000000; k++) {
        snprintf(buf, sizeof buf, "%s/%s_%u", base, what, k);
        name = lg_strdup(c->m, buf);
    }
    if (!name || cg_strmap_add(&c->made, name, 0) == CG_STRMAP_NONE)
        return NULL;
    return name;
}

/* A new constant of the mapping (axes, shapes, scalars). */
static const char *new_const(lm_ctx *c, const char *base, const char *what, int32_t dtype,
                             const int64_t *dims, size_t rank, const void *v, size_t bytes)
{
    const char *name = made_name(c, base, what);
    cg_tensor_proto *t = name ? lg_tensor_new(c->m, name, dtype, dims, rank, v, bytes) : NULL;
    return t && lg_add_init(c->lg, t) ? name : NULL;
}

/* A new int32 vector constant named after the node. */
static const char *new_const_i32(lm_ctx *c, const char *base, const char *what,
                                 const int32_t *v, size_t n)
{
    int64_t dims[1] = {(int64_t)n};
    return new_const(c, base, what, CG_DTYPE_INT32, dims, 1, v, n * sizeof *v);
}

/* --- op versions ----------------------------------------------------------------- */

/* An operand as op_version.cc's OpSignature sees it: its element type (an
 * ONNX dtype; float32 where the type is not known) and rank (-1 unknown). */
typedef struct lm_operand {
    int dtype;
    int rank;
    bool present;
} lm_operand;

static lm_operand operand(lm_ctx *c, const char *name)
{
    lm_operand o = {CG_DTYPE_FLOAT, -1, name && *name};
    const cg_value_type *t = o.present ? vtype(c, resolve(c, name)) : NULL;
    if (!t && o.present)
        t = vtype(c, name);
    if (t && t->known) {
        o.dtype = (int)t->dtype;
        o.rank = t->rank;
    }
    return o;
}

static int64_t attr_i(const lower_attrs *as, const char *name, int64_t dflt)
{
    for (size_t i = 0; as && i < as->n; i++)
        if (strcmp(as->a[i].name, name) == 0 && as->a[i].type == CG_ATTR_INT)
            return as->a[i].i;
    return dflt;
}

/* The version a converter writes for op with these operands and options:
 * TensorFlow's tensorflow/lite/tools/versioning/op_version.cc
 * (GetBuiltinOperatorVersion, tensorflow/tensorflow@0208740907), the rows
 * for the types an ONNX graph carries (float32/16/64, int8/16/32/64, uint8,
 * bool; hybrid and int4 weights are not emitted here). The converter runs
 * it over the written model (UpdateOpVersion), so the delegates'
 * CheckMaxSupportedOpVersion judge exactly this number. */
static int op_version(const char *op, const lm_operand *in, size_t n_in, const lm_operand *out,
                      const lower_attrs *as)
{
    int t0 = n_in ? in[0].dtype : CG_DTYPE_FLOAT, r0 = n_in ? in[0].rank : -1;
    int t1 = n_in > 1 ? in[1].dtype : CG_DTYPE_UNDEFINED;
    int ot = out ? out->dtype : t0;
    int max_rank = 0;
    for (size_t i = 0; i < n_in; i++)
        max_rank = in[i].rank > max_rank ? in[i].rank : max_rank;
    /* NeedBroadcastForBinaryInputs && GetInputMaxDims > 4; the ranks stand
     * for the dims (a same-rank broadcast above rank 4 is not seen) */
    bool broadcast5 = n_in > 1 && max_rank > 4 && in[0].rank != in[1].rank;
    bool i8 = t0 == CG_DTYPE_INT8, i16 = t0 == CG_DTYPE_INT16;
#define IS(name) (strcmp(op, name) == 0)
    /* CONV_2D 6 (grouped) is not written: onnx2tf Conv.py splits a grouped
     * conv into one conv per group and a concat */
    if (IS("CONV_2D"))
        return i16 && t1 == CG_DTYPE_INT16 ? 4 : i8 && t1 == CG_DTYPE_INT8 ? 3 : 1;
    if (IS("DEPTHWISE_CONV_2D"))
        return i16 ? 5 : i8 ? 3
               : attr_i(as, "dilation_w_factor", 1) != 1 || attr_i(as, "dilation_h_factor", 1) != 1 ? 2
                                                                                                  : 1;
    if (IS("FULLY_CONNECTED"))
        return i16 && t1 == CG_DTYPE_INT16 ? 7 : attr_i(as, "keep_num_dims", 0) ? 5
               : i8 && t1 == CG_DTYPE_INT8 ? 4 : 1;
    if (IS("GATHER"))
        return n_in > 1 && in[1].dtype == CG_DTYPE_INT16 ? 6 : i16 ? 4 : t0 == CG_DTYPE_BOOL ? 3
               : i8 ? 2 : 1;
    if (IS("MUL"))
        return t0 == CG_DTYPE_UINT32 ? 7 : t0 == CG_DTYPE_INT64 ? 5 : i16 ? 4 : i8 ? 2 : 1;
    if (IS("MAX_POOL_2D") || IS("AVERAGE_POOL_2D"))
        return i16 && ot == CG_DTYPE_INT16 ? 3 : i8 ? 2 : 1;
    if (IS("TRANSPOSE"))
        return r0 > 5 ? 6 : i16 ? 5 : r0 > 4 ? 4 : t0 == CG_DTYPE_BOOL ? 3 : i8 ? 2 : 1;
    /* the lowering keeps ONNX's operands (x, w, b); TFLite's are
     * (output_shape, w, x, bias): a bias is the 4th (version 3). No
     * activation is fused into it here (version 4). */
    if (IS("TRANSPOSE_CONV"))
        return n_in >= 3 && in[2].present ? 3 : t1 == CG_DTYPE_INT8 ? 2 : 1;
    if (IS("SPLIT"))
        return t1 == CG_DTYPE_INT16 ? 4 : t1 == CG_DTYPE_INT32 ? 3 : t1 == CG_DTYPE_INT8 ? 2 : 1;
    if (IS("SLICE"))
        return t0 == CG_DTYPE_UINT32 ? 6 : r0 > 4 ? 5 : i16 ? 4 : i8 ? 2 : 1;
    if (IS("ABS"))
        return t0 == CG_DTYPE_INT32 ? 5 : i16 ? 4 : i8 || t0 == CG_DTYPE_UINT8 ? 2 : 1;
    if (IS("RELU"))
        return i16 ? 3 : i8 || t0 == CG_DTYPE_UINT8 ? 2 : 1;
    if (IS("STRIDED_SLICE"))
        return t0 == CG_DTYPE_UINT32 ? 7 : r0 > 4 ? 4 : t0 == CG_DTYPE_BOOL ? 3 : i8 ? 2 : 1;
    if (IS("RESIZE_BILINEAR"))
        return i16 ? 4 : attr_i(as, "half_pixel_centers", 0) ? 3 : i8 ? 2 : 1;
    if (IS("RESIZE_NEAREST_NEIGHBOR"))
        return i16 ? 4
               : attr_i(as, "half_pixel_centers", 0) || attr_i(as, "align_corners", 0) ? 3
               : i8 ? 2
                    : 1;
    if (IS("MAXIMUM") || IS("MINIMUM"))
        return i16 && ot == CG_DTYPE_INT16 ? 4 : broadcast5 ? 3 : i8 ? 2 : 1;
    if (IS("PACK"))
        return i8 ? 2 : i16 ? 3 : t0 == CG_DTYPE_UINT32 ? 4 : 1;
    if (IS("TILE"))
        return i8 ? 3 : 1;
    if (IS("ADD"))
        return i16 ? 5 : t0 == CG_DTYPE_INT64 ? 4 : i8 ? 2 : 1;
    if (IS("SUB"))
        return t0 == CG_DTYPE_INT64 ? 4 : broadcast5 ? 3 : i8 ? 2 : 1;
    if (IS("GATHER_ND"))
        return t0 == CG_DTYPE_BOOL ? 5 : n_in > 1 && in[1].dtype == CG_DTYPE_INT16 ? 4 : i16 ? 3 : 1;
    if (IS("DIV"))
        return broadcast5 ? 2 : 1;
    if (IS("TANH") || IS("LOGISTIC"))
        return i16 && ot == CG_DTYPE_INT16 ? 3 : i8 ? 2 : 1;
    if (IS("EQUAL"))
        return i16 ? 4 : i8 ? 2 : 1;
    if (IS("NOT_EQUAL"))
        return i8 ? 2 : 1;
    if (IS("LEAKY_RELU"))
        return i16 ? 2 : 1;
    if (IS("BATCH_MATMUL"))
        return i16 ? 3 : i8 ? 2 : 1;
    if (IS("PAD") || IS("PADV2"))
        return r0 > 4 ? 4 : i16 ? 3 : i8 ? 2 : 1;
    if (IS("CONCATENATION"))
        return t0 == CG_DTYPE_UINT32 ? 4 : i16 ? 3 : i8 ? 2 : 1;
    if (IS("SOFTMAX") || IS("MEAN") || IS("MIRROR_PAD") || IS("REDUCE_MAX") ||
        IS("REDUCE_MIN") || IS("RELU6") || IS("RSQRT"))
        return i16 ? 3 : i8 ? 2 : 1;
    if (IS("ARG_MAX") || IS("ARG_MIN"))
        return t0 == CG_DTYPE_BOOL ? 3 : i8 ? 2 : 1;
    if (IS("LESS") || IS("GREATER_EQUAL"))
        return i16 ? 3 : i8 ? 2 : 1;
    if (IS("SELECT_V2"))
        return t0 == CG_DTYPE_UINT32 ? 2 : 1;
    if (IS("SPACE_TO_DEPTH") || IS("DEPTH_TO_SPACE") || IS("SUM") || IS("LOG_SOFTMAX") ||
        IS("GREATER") || IS("LESS_EQUAL") || IS("SQUARED_DIFFERENCE"))
        return i8 ? 2 : 1;
    if (IS("EXP") || IS("LOG") || IS("REDUCE_PROD"))
        return i8 || i16 ? 2 : 1;
    if (IS("BROADCAST_TO")) /* version 1 was rolled back: float is 2 */
        return i8 || i16 ? 3 : 2;
    if (IS("CAST")) {
        int a = t0, b = ot;
        return a == CG_DTYPE_BFLOAT16 || b == CG_DTYPE_BFLOAT16 ? 7
               : a == CG_DTYPE_DOUBLE || b == CG_DTYPE_DOUBLE || a == CG_DTYPE_FLOAT16 ||
                       b == CG_DTYPE_FLOAT16
                   ? 5
               : a == CG_DTYPE_UINT16 || b == CG_DTYPE_UINT16 ? 4
               : a == CG_DTYPE_INT8 || b == CG_DTYPE_INT8     ? 3
               : a == CG_DTYPE_UINT32 || b == CG_DTYPE_UINT32 ? 2
                                                              : 1;
    }
    if (IS("GELU"))
        return i8 || t0 == CG_DTYPE_UINT8 ? 2 : 1;
#undef IS
    return 1;
}

/* Appends a node of op `op` (domain "tflite", or "onnx" when unmapped) for
 * source node `origin`; `translates`: the source op it is the translation
 * of (NULL for an op the conversion adds, such as a PAD). A TFLite op's
 * "version" attribute is the one a converter writes for its operands
 * (op_version). */
static bool emit(lm_ctx *c, size_t origin, const char *domain, const char *op, const char *name,
                 const char *const *ins, size_t n_in, const char *const *outs, size_t n_out,
                 const lower_attrs *as, const char *translates)
{
    const char **resolved = malloc((n_in ? n_in : 1) * sizeof *resolved);
    if (!resolved)
        return false;
    for (size_t i = 0; i < n_in; i++)
        resolved[i] = ins[i] ? resolve(c, ins[i]) : "";
    lower_attrs versioned = {.n = 0};
    if (as)
        versioned = *as;
    if (strcmp(domain, CG_TFLITE_OPS_DOMAIN) == 0) {
        lm_operand io[8], o = operand(c, n_out ? outs[0] : NULL);
        size_t k_in = n_in < 8 ? n_in : 8;
        for (size_t i = 0; i < k_in; i++)
            io[i] = operand(c, resolved[i]);
        int v = op_version(op, io, k_in, &o, &versioned);
        for (size_t i = 0; i < versioned.n; i++)
            if (strcmp(versioned.a[i].name, "version") == 0)
                versioned.a[i].i = v;
    }
    size_t k = lg_add_node(c->lg, op, domain, name, resolved, n_in, outs, n_out,
                           versioned.n ? versioned.a : NULL, versioned.n);
    free(resolved);
    if (k == SIZE_MAX || !lg_add_origins(c->lg, k, origin))
        return false;
    c->lg->nodes[k].translates = translates;
    if (translates)
        c->op[origin] = k;
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
    static const int64_t pad_dims[2] = {4, 2};
    const char *nm = n->name && *n->name ? n->name : n->outputs[0];
    const char *out = made_name(c, nm, "padded"), *pname = made_name(c, nm, "pad");
    const char *pads = new_const(c, nm, "paddings", CG_DTYPE_INT32, pad_dims, 2, zero_pads,
                                 sizeof zero_pads);
    if (!out || !pname || !pads)
        return NULL;
    const char *ins[2] = {n->inputs[0], pads};
    lower_attrs as = {.n = 0};
    lower_attrs_int(&as, "version", 1);
    if (!emit(c, i, CG_TFLITE_OPS_DOMAIN, "PAD", pname, ins, 2, &out, 1, &as, NULL))
        return NULL;
    /* the padded value: the input's type with H and W grown by the pads */
    const cg_value_type *x = vtype(c, n->inputs[0]);
    cg_value_type t = x ? *x : (cg_value_type){0};
    const cg_attr *p = cg_node_attr(n, "pads");
    if (t.known && t.rank == 4 && p && p->ints_count == 4) {
        t.dims[2] += p->ints[0] + p->ints[2];
        t.dims[3] += p->ints[1] + p->ints[3];
    }
    return set_type(c, out, &t) ? out : NULL;
}

/* A float32 scalar constant named base/what. */
static const char *new_const_f32(lm_ctx *c, const char *base, const char *what, float v)
{
    return new_const(c, base, what, CG_DTYPE_FLOAT, NULL, 0, &v, sizeof v);
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
    for (int s = 0; s < 4; s++) {
        char step[8];
        snprintf(step, sizeof step, "%d", s);
        const char *cst = new_const_f32(c, name, what[s], k[s]);
        const char *nm = made_name(c, name, ops[s]);
        const char *out = s == 3 ? n->outputs[0] : made_name(c, name, step);
        if (!cst || !nm || !out)
            return false;
        const char *ins[2] = {prev, cst};
        lower_attrs as = {.n = 0};
        lower_attrs_int(&as, "version", 1);
        if (s < 2)
            lower_attrs_str(&as, "fused_activation_function", "NONE");
        if (!emit(c, i, CG_TFLITE_OPS_DOMAIN, ops[s], nm, ins, 2, &out, 1, &as, n->op_type))
            return false;
        if (s < 3 && !set_type(c, out, t))
            return false;
        prev = out;
    }
    return true;
}

/* One op of a decomposition of source node i: op(ins) -> out (made when
 * NULL, typed t), its options no fused activation / keep_dims. Returns the
 * output's name. */
static const char *emit_step(lm_ctx *c, size_t i, const cg_node *n, const char *name,
                             const char *op, const char *a, const char *b, const char *out,
                             const cg_value_type *t)
{
    const char *nm = made_name(c, name, op);
    if (!out)
        out = made_name(c, name, "t");
    if (!nm || !out)
        return NULL;
    const char *ins[2] = {a, b};
    lower_attrs as = {.n = 0};
    lower_attrs_int(&as, "version", 1);
    if (!strcmp(op, "ADD") || !strcmp(op, "SUB") || !strcmp(op, "MUL"))
        lower_attrs_str(&as, "fused_activation_function", "NONE");
    if (!strcmp(op, "MEAN"))
        lower_attrs_int(&as, "keep_dims", 1);
    if (!emit(c, i, CG_TFLITE_OPS_DOMAIN, op, nm, ins, b ? 2 : 1, &out, 1, &as, n->op_type))
        return NULL;
    return set_type(c, out, t) ? out : NULL;
}

/* LayerNormalization: onnx2tf LayerNormalization.py writes
 * tf.keras.layers.LayerNormalization, whose call (keras 2,
 * keras/layers/normalization/layer_normalization.py; not its fused path,
 * which needs epsilon >= 1.001e-5 where ONNX's default is 1e-5) is
 * tf.nn.moments then tf.nn.batch_normalization (tensorflow/python/ops/
 * nn_impl.py): mean = reduce_mean(x); variance =
 * reduce_mean(squared_difference(x, mean)); inv = rsqrt(variance + eps) *
 * scale; y = x * inv + (bias - mean * inv), or + (-mean * inv) without a
 * bias. TFLite ops: MEAN, SQUARED_DIFFERENCE, MEAN, ADD, RSQRT, MUL, MUL,
 * MUL, SUB (NEG), ADD. The optional Mean and InvStdDev outputs name the
 * first MEAN's and the RSQRT's. */
static bool emit_layer_norm(lm_ctx *c, size_t i, const cg_node *n, const char *name)
{
    static const int to_nhwc[4] = {0, 3, 1, 2};
    const cg_value_type *x = vtype(c, n->inputs[0]);
    if (!x || !x->known || x->rank < 1 || x->rank > CG_MAX_RANK || n->input_count < 2)
        return emit(c, i, "onnx", n->op_type, name, n->inputs, n->input_count, n->outputs,
                    n->output_count, NULL, n->op_type);
    int64_t axis = cg_node_attr_int(n, "axis", -1);
    if (axis < 0)
        axis += x->rank;
    if (axis < 0 || axis >= x->rank)
        axis = x->rank - 1;
    int32_t axes[CG_MAX_RANK];
    size_t na = 0;
    cg_value_type reduced = *x;
    for (int64_t a = axis; a < x->rank; a++) {
        axes[na++] = x->rank == 4 ? to_nhwc[a] : (int32_t)a;
        reduced.dims[a] = 1;
    }
    const char *ax = new_const_i32(c, name, "axes", axes, na);
    const char *eps = new_const_f32(c, name, "epsilon", cg_node_attr_float(n, "epsilon", 1e-5f));
    const char *mean_out = n->output_count > 1 && *n->outputs[1] ? n->outputs[1] : NULL;
    const char *inv_out = n->output_count > 2 && *n->outputs[2] ? n->outputs[2] : NULL;
    const char *bias = n->input_count > 2 && *n->inputs[2] ? n->inputs[2] : NULL;
    if (!ax || !eps)
        return false;
    const char *mean = emit_step(c, i, n, name, "MEAN", n->inputs[0], ax, mean_out, &reduced);
    const char *sd = mean ? emit_step(c, i, n, name, "SQUARED_DIFFERENCE", n->inputs[0], mean,
                                      NULL, x)
                          : NULL;
    const char *var = sd ? emit_step(c, i, n, name, "MEAN", sd, ax, NULL, &reduced) : NULL;
    const char *ve = var ? emit_step(c, i, n, name, "ADD", var, eps, NULL, &reduced) : NULL;
    const char *inv = ve ? emit_step(c, i, n, name, "RSQRT", ve, NULL, inv_out, &reduced) : NULL;
    const char *inv_s = inv ? emit_step(c, i, n, name, "MUL", inv, n->inputs[1], NULL, x) : NULL;
    const char *xs = inv_s ? emit_step(c, i, n, name, "MUL", n->inputs[0], inv_s, NULL, x) : NULL;
    const char *mi = xs ? emit_step(c, i, n, name, "MUL", mean, inv_s, NULL, x) : NULL;
    const char *off = !mi ? NULL
                      : bias ? emit_step(c, i, n, name, "SUB", bias, mi, NULL, x)
                             : emit_step(c, i, n, name, "NEG", mi, NULL, NULL, x);
    return off && emit_step(c, i, n, name, "ADD", xs, off, n->outputs[0], x);
}

static const char *node_name(const cg_node *n, size_t i, lm_ctx *c)
{
    if (n->name && *n->name)
        return n->name;
    char buf[32];
    snprintf(buf, sizeof buf, "#%zu", i);
    return lg_strdup(c->m, buf);
}

/* Element k of a constant int list: an initializer input or, before opset
 * 10, the attribute; false when not known. */
static bool slice_param(lm_ctx *c, const cg_node *n, size_t input, const char *attr, size_t k,
                        int64_t *out)
{
    if (n->input_count > input && *n->inputs[input]) {
        const cg_tensor_proto *t = lg_constant(c->lg, n->inputs[input], false);
        return t && lg_tensor_i64(t, (int64_t)k, out);
    }
    const cg_attr *a = attr ? cg_node_attr(n, attr) : NULL;
    if (!a || k >= a->ints_count)
        return false;
    *out = a->ints[k];
    return true;
}

/* Slice: onnx2tf Slice.py writes tf.strided_slice, the converter's
 * STRIDED_SLICE with constant begin, end and strides over every axis (NHWC
 * for 4-D data). */
static bool emit_strided_slice(lm_ctx *c, size_t i, const cg_node *n, const char *name,
                               lower_attrs *as)
{
    static const int to_nhwc[4] = {0, 3, 1, 2};
    const cg_value_type *x = vtype(c, n->inputs[0]);
    int rank = x && x->known ? x->rank : 0;
    int32_t begin[CG_MAX_RANK], end[CG_MAX_RANK], stride[CG_MAX_RANK];
    for (int d = 0; d < rank; d++) {
        int from = rank == 4 ? to_nhwc[d] : d;
        begin[d] = 0;
        end[d] = x->dims[from] > INT32_MAX ? INT32_MAX : (int32_t)x->dims[from];
        stride[d] = 1;
    }
    const cg_value_type *st = vtype(c, n->input_count > 1 ? n->inputs[1] : NULL);
    const cg_attr *sa = cg_node_attr(n, "starts");
    size_t count = st && st->known && st->rank == 1 && st->dims[0] >= 0 ? (size_t)st->dims[0]
                   : sa                                                  ? sa->ints_count
                                                                         : 0;
    for (size_t k = 0; k < count && k < CG_MAX_RANK; k++) {
        int64_t b, e, axis = (int64_t)k, step = 1;
        if (!slice_param(c, n, 1, "starts", k, &b) || !slice_param(c, n, 2, "ends", k, &e))
            continue;
        (void)slice_param(c, n, 3, "axes", k, &axis);
        (void)slice_param(c, n, 4, NULL, k, &step);
        if (axis < 0)
            axis += rank;
        if (axis < 0 || axis >= rank)
            continue;
        int d = rank == 4 ? (axis == 1 ? 3 : axis >= 2 ? (int)axis - 1 : 0) : (int)axis;
        begin[d] = (int32_t)(b < INT32_MIN ? INT32_MIN : b > INT32_MAX ? INT32_MAX : b);
        end[d] = (int32_t)(e < INT32_MIN ? INT32_MIN : e > INT32_MAX ? INT32_MAX : e);
        stride[d] = (int32_t)(step < INT32_MIN ? INT32_MIN : step > INT32_MAX ? INT32_MAX : step);
    }
    const char *ins[4] = {n->inputs[0], new_const_i32(c, name, "begin", begin, (size_t)rank),
                          new_const_i32(c, name, "end", end, (size_t)rank),
                          new_const_i32(c, name, "strides", stride, (size_t)rank)};
    if (!ins[1] || !ins[2] || !ins[3])
        return false;
    lower_attrs_int(as, "begin_mask", 0);
    lower_attrs_int(as, "end_mask", 0);
    lower_attrs_int(as, "ellipsis_mask", 0);
    lower_attrs_int(as, "new_axis_mask", 0);
    lower_attrs_int(as, "shrink_axis_mask", 0);
    return emit(c, i, CG_TFLITE_OPS_DOMAIN, "STRIDED_SLICE", name, ins, 4, n->outputs, 1, as,
                n->op_type);
}

/* The TFLite op(s) of source node i. */
static bool map_node(lm_ctx *c, size_t i)
{
    const cg_node *n = &c->g->nodes[i];
    const char *name = node_name(n, i, c);
    lower_attrs as = {.n = 0};
    lower_attrs_int(&as, "version", 1);
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
                    n->input_count, outs, n_out, &as, n->op_type);

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
        lower_attrs_str(&as, "padding", pad);
        lower_attrs_str(&as, "fused_activation_function", act);
        lower_attrs_int(&as, "stride_h", s && s->ints_count == 2 ? s->ints[0] : 1);
        lower_attrs_int(&as, "stride_w", s && s->ints_count == 2 ? s->ints[1] : 1);
        if (!conv) {
            lower_attrs_int(&as, "filter_height", kernel[0]);
            lower_attrs_int(&as, "filter_width", kernel[1]);
            return emit(c, i, CG_TFLITE_OPS_DOMAIN,
                        is_op(n, "MaxPool") ? "MAX_POOL_2D" : "AVERAGE_POOL_2D", name, ins, 1,
                        outs, 1, &as, n->op_type);
        }
        lower_attrs_int(&as, "dilation_h_factor", d && d->ints_count == 2 ? d->ints[0] : 1);
        lower_attrs_int(&as, "dilation_w_factor", d && d->ints_count == 2 ? d->ints[1] : 1);
        int64_t group = cg_node_attr_int(n, "group", 1);
        const char *op = "CONV_2D";
        if (group > 1 && x && x->known && x->rank == 4 && x->dims[1] == group && w && w->known) {
            op = "DEPTHWISE_CONV_2D";
            lower_attrs_int(&as, "depth_multiplier", w->dims[0] / group);
        }
        if ((n_in < 3 || !*n->inputs[2]) && w && w->known && w->rank == 4 && w->dims[0] > 0 &&
            w->dims[0] <= (1 << 20)) {
            /* no bias: the converter gives the conv a zero one (prepare_tf.cc
             * ConvertTFConvOp: "a splat zero tensor ... for the bias") */
            int64_t oc = w->dims[0];
            float *zero = calloc((size_t)oc, sizeof *zero);
            ins[2] = zero ? new_const(c, name, "bias", CG_DTYPE_FLOAT, &oc, 1, zero,
                                      (size_t)oc * sizeof *zero)
                          : NULL;
            free(zero);
            if (!ins[2])
                return false;
            n_in = 3;
        }
        return emit(c, i, CG_TFLITE_OPS_DOMAIN, op, name, ins, n_in, outs, 1, &as, n->op_type);
    }
    if (is_op(n, "GlobalAveragePool") || is_op(n, "GlobalMaxPool")) {
        /* onnx2tf GlobalAveragePool.py: GlobalAveragePooling2D(keepdims=True),
         * a mean over H and W -> MEAN with constant axes [1, 2] */
        static const int32_t hw[2] = {1, 2};
        const char *axes = new_const_i32(c, name, "axes", hw, 2);
        if (!axes)
            return false;
        ins[1] = axes;
        lower_attrs_int(&as, "keep_dims", 1);
        return emit(c, i, CG_TFLITE_OPS_DOMAIN,
                    is_op(n, "GlobalAveragePool") ? "MEAN" : "REDUCE_MAX", name, ins, 2, outs, 1,
                    &as, n->op_type);
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
        return emit(c, i, CG_TFLITE_OPS_DOMAIN, "RESHAPE", name, ins, 2, outs, 1, &as, n->op_type);
    }
    if (is_op(n, "Gemm") || is_op(n, "MatMul")) {
        /* onnx2tf Gemm.py / MatMul.py: tf.matmul; the converter makes a matmul
         * with a constant 2-D right side FULLY_CONNECTED, else BATCH_MATMUL */
        const cg_value_type *b = n->input_count > 1 ? vtype(c, n->inputs[1]) : NULL;
        const cg_value_type *a = vtype(c, n->inputs[0]);
        if (b && b->is_const && b->known && b->rank == 2) {
            lower_attrs_str(&as, "fused_activation_function", act);
            lower_attrs_str(&as, "weights_format", "DEFAULT");
            /* a matmul of a rank > 2 activation is a BatchMatMulV2 to TF; the
             * converter makes it a FULLY_CONNECTED with keep_num_dims = true
             * (tensorflow/compiler/mlir/lite/transforms/
             * optimize_batch_matmul.cc, ConvertBatchMatMulOp2FullyConnectedOp):
             * version 5 */
            if (a && a->known && a->rank > 2)
                lower_attrs_int(&as, "keep_num_dims", 1);
            return emit(c, i, CG_TFLITE_OPS_DOMAIN, "FULLY_CONNECTED", name, ins, n_in, outs, 1,
                        &as, n->op_type);
        }
        return emit(c, i, CG_TFLITE_OPS_DOMAIN, "BATCH_MATMUL", name, ins, 2, outs, 1, &as, n->op_type);
    }
    if (is_op(n, "Clip")) {
        const char *a = activation_of(c, n);
        if (a)
            return emit(c, i, CG_TFLITE_OPS_DOMAIN, a, name, ins, 1, outs, 1, &as, n->op_type);
        /* onnx2tf Clip.py: tf.clip_by_value -> MINIMUM then MAXIMUM */
        return emit(c, i, CG_TFLITE_OPS_DOMAIN, "MINIMUM", name, ins, n_in, outs, 1, &as, n->op_type);
    }
    if (is_op(n, "HardSigmoid"))
        return emit_hard_sigmoid(c, i, n, name);
    if (is_op(n, "LayerNormalization"))
        return emit_layer_norm(c, i, n, name);
    if (c->gelu[i]) {
        /* the Div that opens onnx2tf's GELU pattern (plan_removals): GELU of
         * its dividend, writing the pattern's last output */
        lower_attrs_int(&as, "approximate", 0);
        return emit(c, i, CG_TFLITE_OPS_DOMAIN, "GELU", name, ins, 1, &c->gelu[i], 1, &as,
                    n->op_type);
    }
    if (is_op(n, "BatchNormalization")) {
        /* not after a Conv: a MUL and an ADD with folded constants (the
         * converter's batch-norm decomposition); counted as MUL here */
        return emit(c, i, CG_TFLITE_OPS_DOMAIN, "MUL", name, ins, 2, outs, 1, &as, n->op_type);
    }
    const cg_tensor_proto *axes_input =
        n->input_count >= 2 && *n->inputs[1] ? lg_constant(c->lg, n->inputs[1], false) : NULL;
    int64_t axes_numel = 0;
    if ((is_op(n, "ReduceMean") || is_op(n, "ReduceSum") || is_op(n, "ReduceMax") ||
         is_op(n, "ReduceMin") || is_op(n, "ReduceProd")) &&
        (n->input_count < 2 || !*n->inputs[1] ||
         (axes_input && lg_tensor_numel(axes_input, &axes_numel) &&
          axes_numel <= CG_MAX_RANK))) {
        /* axes as an attribute (before opset 18 / 13 for ReduceSum) or a
         * constant int64 input (from then on): the TFLite op takes them as a
         * constant int32 input (onnx2tf reads them into the axis list of
         * tf.reduce_*), NHWC axes for 4-D data. An axes input that is not
         * a constant stays as given. */
        static const int32_t to_nhwc[4] = {0, 3, 1, 2};
        const cg_attr *ax = axes_input ? NULL : cg_node_attr(n, "axes");
        const cg_value_type *x = vtype(c, n->inputs[0]);
        int32_t axes[CG_MAX_RANK];
        size_t na = 0, count = axes_input ? (size_t)axes_numel : ax ? ax->ints_count : 0;
        for (size_t k = 0; k < count && na < CG_MAX_RANK; k++) {
            int64_t a = ax ? ax->ints[k] : 0;
            if (axes_input && !lg_tensor_i64(axes_input, (int64_t)k, &a))
                break;
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
        lower_attrs_int(&as, "keep_dims", cg_node_attr_int(n, "keepdims", 1));
    }
    if (is_op(n, "Softmax"))
        lower_attrs_float(&as, "beta", 1.0f);
    if (is_op(n, "Add") || is_op(n, "Mul") || is_op(n, "Sub") || is_op(n, "Div"))
        lower_attrs_str(&as, "fused_activation_function", act);
    if (is_op(n, "Slice"))
        return emit_strided_slice(c, i, n, name, &as);
    if (is_op(n, "Squeeze")) {
        /* onnx2tf Squeeze.py: tf.squeeze; the converter's optimize pass turns a
         * squeeze into a RESHAPE with a constant shape (tests/optimize.mlir
         * ConvertSqueezeToReshape) */
        const cg_value_type *y = vtype(c, n->outputs[0]);
        int32_t shape[CG_MAX_RANK];
        size_t r = y && y->known ? (size_t)y->rank : 0;
        for (size_t k = 0; k < r; k++)
            shape[k] = (int32_t)y->dims[k];
        if (!(ins[1] = new_const_i32(c, name, "shape", shape, r)))
            return false;
        return emit(c, i, CG_TFLITE_OPS_DOMAIN, "RESHAPE", name, ins, 2, outs, 1, &as,
                    n->op_type);
    }
    if (is_op(n, "Resize")) {
        const cg_attr *m = cg_node_attr(n, "mode");
        bool nearest = !m || (m->s.len == 7 && memcmp(m->s.data, "nearest", 7) == 0);
        /* onnx2tf Resize.py: half_pixel (ONNX's default since opset 11) and
         * pytorch_half_pixel resize with half_pixel_centers, align_corners
         * with align_corners (the op's version follows: op_version) */
        const cg_attr *ct = cg_node_attr(n, "coordinate_transformation_mode");
        char mode[32] = "";
        if (ct && ct->s.len < sizeof mode)
            snprintf(mode, sizeof mode, "%.*s", (int)ct->s.len, (const char *)ct->s.data);
        else if (!ct && cg_model_opset(c->m->source, "") >= 11)
            snprintf(mode, sizeof mode, "half_pixel");
        lower_attrs_int(&as, "half_pixel_centers",
               strcmp(mode, "half_pixel") == 0 || strcmp(mode, "pytorch_half_pixel") == 0);
        lower_attrs_int(&as, "align_corners", strcmp(mode, "align_corners") == 0);
        ins[1] = NULL;
        return emit(c, i, CG_TFLITE_OPS_DOMAIN,
                    nearest ? "RESIZE_NEAREST_NEIGHBOR" : "RESIZE_BILINEAR", name, ins, 1, outs,
                    1, &as, n->op_type);
    }
    if (is_op(n, "Pad")) {
        const cg_attr *m = cg_node_attr(n, "mode");
        bool reflect = m && m->s.len == 7 && memcmp(m->s.data, "reflect", 7) == 0;
        if (reflect)
            lower_attrs_str(&as, "mode", "REFLECT");
        return emit(c, i, CG_TFLITE_OPS_DOMAIN, reflect ? "MIRROR_PAD" : "PAD", name, ins,
                    n_in > 2 ? 2 : n_in, outs, 1, &as, n->op_type);
    }
    for (size_t r = 0; r < sizeof one_to_one / sizeof one_to_one[0]; r++)
        if (is_op(n, one_to_one[r].onnx) && one_to_one[r].tflite)
            return emit(c, i, CG_TFLITE_OPS_DOMAIN, one_to_one[r].tflite, name,
                        n->input_count > 4 ? n->inputs : ins,
                        n->input_count > 4 ? n->input_count : n_in, outs, n_out, &as, n->op_type);
    /* no mapping: keep the ONNX op, which no tflite:* rule accepts */
    return emit(c, i, "onnx", n->op_type ? n->op_type : "?", name, n->inputs, n->input_count,
                outs, n_out, &as, n->op_type);
}

/* onnx2tf Div.py's GELU pattern (PINTO0309/onnx2tf#465), as PyTorch
 * exports nn.GELU(): Div(x, 1.4142135) -> Erf -> Add(1) -> Mul(x, .) ->
 * Mul(., 0.5). onnx2tf writes tf.nn.gelu for the Div (the converter's
 * GELU) and tf.identity for the other four. Marks them; false only when out
 * of memory. */
static bool plan_gelu(lm_ctx *c, size_t i)
{
    lower_gelu m;
    if (!lower_match_gelu(c->g, i, &m) || m.tanh)
        return true; /* onnx2tf's pattern is the erf form's */
    for (size_t k = 1; k < m.count; k++)
        if (!note_removed(c, m.nodes[k], "folded into the GELU the converter makes of this "
                                         "pattern (onnx2tf Div.py: tf.identity)", i))
            return false;
    c->gelu[i] = m.y;
    return true;
}

/* Marks what a converter removes or fuses: no ops, folded constants, BN
 * after Conv, activations after Conv/Gemm/Add/Mul, the GELU pattern. */
static bool plan_removals(lm_ctx *c)
{
    const cg_graph *g = c->g;
    for (size_t i = 0; i < g->node_count; i++) {
        const cg_node *n = &g->nodes[i];
        if (c->skip[i])
            continue; /* already folded into an op before it */
        if (!plan_gelu(c, i))
            return false;
        if (c->gelu[i])
            continue;
        bool all_const = n->input_count > 0;
        for (size_t k = 0; k < n->input_count; k++)
            all_const = all_const && (!*n->inputs[k] || is_const(c, n->inputs[k]));
        if ((is_op(n, "Identity") || is_op(n, "Dropout")) && n->input_count && n->output_count) {
            /* onnx2tf Identity.py / Dropout.py: tf.identity, which the converter removes */
            if (!note_removed(c, i, "no op after conversion (tf.identity)", SIZE_MAX) ||
                (n->output_count && !add_alias(c, n->outputs[0], n->inputs[0])))
                return false;
            continue;
        }
        /* the shape of a tensor whose shape is static is a constant: TF's
         * ShapeOp folder (tensorflow/compiler/mlir/tensorflow/ir/tf_ops_n_z.cc,
         * ShapeOp::fold) replaces tf.shape (onnx2tf Shape.py) before the
         * converter legalizes anything */
        bool static_shape_op = is_op(n, "Shape") && n->input_count &&
                               static_shape(c, n->inputs[0]);
        if (is_op(n, "Constant") || static_shape_op || (all_const && n->output_count)) {
            /* a constant, or computed only from constants: the converter folds it */
            if (!note_removed(c, i,
                              is_op(n, "Constant") ? "a constant tensor, not an op"
                              : static_shape_op    ? "constant-folded by the converter (the "
                                                     "shape of a static tensor)"
                                                   : "constant-folded by the converter",
                              SIZE_MAX))
                return false;
            for (size_t o = 0; o < n->output_count; o++)
                if (*n->outputs[o] && cg_strmap_add(&c->folded, n->outputs[o], i) ==
                                          CG_STRMAP_NONE)
                    return false;
            /* the folded value: a constant tensor of its type (its values are
             * the converter's; placement reads only the type) */
            for (size_t o = 0; o < n->output_count; o++) {
                const cg_value_type *t = vtype(c, n->outputs[o]);
                bool known = t && t->known && t->rank <= CG_MAX_RANK;
                cg_tensor_proto *tp =
                    *n->outputs[o]
                        ? lg_tensor_new(c->m, n->outputs[o],
                                        known ? (int32_t)t->dtype : CG_DTYPE_FLOAT,
                                        known ? t->dims : NULL, known ? (size_t)t->rank : 0,
                                        NULL, 0)
                        : NULL;
                if (*n->outputs[o] && (!tp || !lg_add_init(c->lg, tp)))
                    return false;
            }
            continue;
        }
        size_t only = 0;
        if (!n->output_count || !*n->outputs[0] || lower_consumers(g, n->outputs[0], &only) != 1)
            continue;
        const cg_node *next = &g->nodes[only];
        if (!next->output_count || !*next->outputs[0])
            continue;
        if (is_op(n, "Conv") && is_op(next, "BatchNormalization")) {
            /* the converter folds the batch norm's scale and shift into the
             * conv's weights and bias (tests/optimize.mlir: fuseMulIntoConv2d,
             * fuseAddIntoConv2d) */
            if (!note_removed(c, only, "folded into the Conv before it", i) ||
                !add_alias(c, next->outputs[0], n->outputs[0]))
                return false;
            /* an activation after the batch norm fuses into the conv too */
            size_t after = 0;
            if (lower_consumers(g, next->outputs[0], &after) == 1 && g->nodes[after].output_count &&
                activation_of(c, &g->nodes[after])) {
                c->act[i] = activation_of(c, &g->nodes[after]);
                if (!note_removed(c, after, "fused into the op before it", i) ||
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
            if (!note_removed(c, only, "fused into the op before it", i) ||
                !add_alias(c, next->outputs[0], n->outputs[0]))
                return false;
        }
    }
    return true;
}

/* A model lowered from a .tflite: its runtime partitions the file's own
 * operators (cg_tflite_op_model, as assign on a .tflite judges them), each
 * standing for the IR nodes the file's lowering made of it
 * (cg_tflite_node_origin). */
static cg_status lower_tflite_file(lg_model *m, cg_error *err)
{
    const cg_model *src = m->source;
    lg_graph *g = m->main;
    cg_model *ops = NULL;
    cg_status st = cg_tflite_op_model(src->tflite->source, &ops, err);
    if (st != CG_OK)
        return st;
    m->out->owned_ops = ops; /* the lowered graph borrows its names, attributes, tensors */
    m->out->remover = "the .tflite's own operators (each stands for the IR nodes lowered from it)";
    m->declare_types = true;
    const cg_graph *og = ops->graph;
    size_t n = g->node_count;
    size_t *at = calloc(og->node_count + 1, sizeof *at);
    if (!at)
        return cg_error_set(err, CG_NOMEM, "out of memory lowering the model");
    /* the file's constants replace the IR's */
    for (size_t i = 0; i < g->init_count; i++)
        g->inits[i].dead = true;
    for (size_t i = 0; i < og->initializer_count; i++)
        (void)lg_add_init(g, &og->initializers[i]);
    lg_type t;
    for (size_t i = 0; i < og->value_info_count; i++)
        if (og->value_infos[i].name && lg_type_from_info(&og->value_infos[i], &t))
            (void)lg_type_set(g, og->value_infos[i].name, &t);
    for (size_t i = 0; i < og->input_count; i++)
        if (og->inputs[i].name && lg_type_from_info(&og->inputs[i], &t))
            (void)lg_type_set(g, og->inputs[i].name, &t);
    for (size_t i = 0; i < og->output_count; i++)
        if (og->outputs[i].name && lg_type_from_info(&og->outputs[i], &t))
            (void)lg_type_set(g, og->outputs[i].name, &t);
    for (size_t k = 0; k < og->node_count && !m->oom; k++) {
        const cg_node *op = &og->nodes[k];
        at[k] = lg_add_node(g, op->op_type, op->domain, op->name, op->inputs, op->input_count,
                            op->outputs, op->output_count, op->attrs, op->attr_count);
        if (at[k] != SIZE_MAX)
            g->nodes[at[k]].keeps_origins = true;
    }
    for (size_t s = 0; s < n && !m->oom; s++) {
        const cg_tflite_origin *o = cg_tflite_node_origin(src, &src->graph->nodes[s]);
        size_t into = o && o->subgraph == 0 && o->op >= 0 && (size_t)o->op < og->node_count
                          ? at[o->op]
                          : SIZE_MAX;
        lg_remove(g, s, "lowered onto the IR from this operator of the .tflite", into);
    }
    free(at);
    if (m->oom)
        return cg_error_set(err, CG_NOMEM, "out of memory lowering the model");
    return CG_OK;
}

cg_status cg_lower_onnx_to_tflite(lg_model *m, cg_error *err)
{
    if (m->source->tflite)
        return lower_tflite_file(m, err);
    lm_ctx c;
    memset(&c, 0, sizeof c);
    c.m = m;
    c.lg = m->main;
    c.g = m->source->graph;
    c.n = c.g->node_count;
    /* the shapes a conversion at the lowering's dims stores */
    cg_status st = lg_type_source(m, &c.types, err);
    if (st != CG_OK)
        return st;
    size_t n = c.n;
    c.skip = calloc(n + 1, sizeof *c.skip);
    c.why = calloc(n + 1, sizeof *c.why);
    c.into = calloc(n + 1, sizeof *c.into);
    c.op = calloc(n + 1, sizeof *c.op);
    c.act = calloc(n + 1, sizeof *c.act);
    c.gelu = calloc(n + 1, sizeof *c.gelu);
    bool ok = c.skip && c.why && c.into && c.op && c.act && c.gelu && plan_removals(&c);
    for (size_t i = 0; ok && i < n; i++)
        c.op[i] = SIZE_MAX;
    for (size_t i = 0; ok && i < n; i++)
        ok = c.skip[i] || map_node(&c, i);
    /* control flow, said plainly: a converter writes If as IF and Loop as
     * WHILE, their bodies as subgraphs (onnx2tf If.py: tf.cond, Loop.py:
     * tf.while_loop); this lowering maps the main graph only */
    for (size_t i = 0; ok && i < n; i++) {
        const cg_node *cf = &c.g->nodes[i];
        if (!c.skip[i] && (is_op(cf, "If") || is_op(cf, "Loop") || is_op(cf, "Scan")))
            lg_note(m, "control flow: %s '%s' is kept as the ONNX op, which no tflite:* rule "
                       "accepts, so it and its bodies run on the CPU. A converter writes %s "
                       "with the bodies as subgraphs; this lowering maps the main graph only",
                    cf->op_type, cf->name && *cf->name ? cf->name : "?",
                    is_op(cf, "If") ? "an IF" : "a WHILE");
    }
    /* the source nodes give way to their TFLite ops: a mapped one is kept
     * (its op translates it), a removed one is recorded with why, folded
     * into the op of the node it joined */
    for (size_t i = 0; ok && i < n; i++) {
        size_t into = c.skip[i] && c.into[i] < n ? c.op[c.into[i]] : SIZE_MAX;
        lg_remove(c.lg, i, c.skip[i] ? c.why[i] : "translated to TFLite", into);
    }
    /* graph outputs read through removed nodes */
    for (size_t i = 0; ok && i < c.lg->output_count; i++)
        c.lg->outputs[i] = resolve(&c, c.lg->outputs[i]);
    /* declared types: every value the source has, in NHWC (values the
     * mapping made were typed where it made them) */
    for (size_t i = 0; ok && i < c.g->input_count; i++) {
        const char *name = c.g->inputs[i].name;
        if (name && *name && vtype(&c, name) && !lg_constant(c.lg, name, false))
            ok = set_type(&c, name, vtype(&c, name));
    }
    for (size_t k = n; ok && k < c.lg->node_count; k++)
        for (size_t o = 0; ok && o < c.lg->nodes[k].output_count; o++) {
            const char *v = c.lg->nodes[k].outputs[o];
            if (v && *v && vtype(&c, v))
                ok = set_type(&c, v, vtype(&c, v));
        }
    free(c.skip);
    free(c.why);
    free(c.into);
    free(c.op);
    free(c.act);
    free(c.gelu);
    lower_alias_free(&c.alias);
    cg_strmap_free(&c.made);
    cg_strmap_free(&c.folded);
    cg_type_env_free(c.types);
    if (!ok || m->oom)
        return cg_error_set(err, CG_NOMEM, "ONNX->TFLite mapping: out of memory");
    return CG_OK;
}
