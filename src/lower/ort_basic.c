/*
 * "ort-basic": the graph ONNX Runtime 1.22 partitions.
 *
 * Before any execution provider is asked for nodes, an InferenceSession
 * builds its Graph (Constant nodes become initializers, sparse initializers
 * become dense: onnxruntime/core/graph/graph.cc:1237-1290 at v1.22.0,
 * commit f217402897) and runs the Level-1 ("basic") transformers, the
 * EP-independent ones (onnxruntime/core/optimizer/graph_transformer_utils.cc:
 * rules at lines 130-150, transformers at 214-270), in steps until a step
 * changes nothing, at most 10 (graph_transformer_mgr.cc:25-45; the session
 * default of max_num_graph_transformation_steps). Only then does it
 * partition. This file replays those transformers, in ORT's order, with
 * ORT's conditions (each function cites its source file), on the editable
 * graph of lgraph.h:
 *
 *   RuleBasedTransformer (Level1): EliminateIdentity, EliminateSlice,
 *     UnsqueezeElimination, EliminateDropout, ExpandElimination,
 *     CastElimination, PreShapeNodeElimination, NoopElimination,
 *     DivMulFusion, FuseReluClip, GemmSumFusion, GemmTransposeFusion,
 *     NotWhereFusion, ConvAddFusion, ConvMulFusion, ConvBNFusion, PadFusion,
 *     MatmulBNFusion
 *   ConstantSharing, CommonSubexpressionElimination, ConstantFolding,
 *   MatMulAddFusion, ReshapeFusion
 *
 * Not replayed (each is reported in the lowering's notes when the model
 * holds what it acts on): LabelEncoderFusion (ai.onnx.ml LabelEncoder
 * chains), DoubleQDQPairsRemover, QDQPropagationTransformer,
 * WeightBiasQuantization, EnsureUniqueDQForNodeUnit (QDQ models),
 * GeluFusion (Level 1 only at opset >= 20), LayerNormFusion (Level 1 at
 * opset >= 17), TransposeOptimizer (moves and cancels Transpose nodes).
 * FreeDimensionOverrideTransformer does nothing without overrides, and
 * RocmBlasAltImpl applies to the ROCm EP only.
 *
 * Shapes: ORT's transformers see the shapes ONNX shape inference gives.
 * Here a value's dims come from the reference run (the type environment)
 * and count as known only where inference would know them: dims that move
 * with a symbolic input dim are unknown, and so is every shape downstream
 * of a data-dependent op (NonZero, a Reshape whose shape is computed at run
 * time, ...) until constant folding makes its shape input a constant.
 *
 * Constant folding evaluates a node with the reference kernels (one node,
 * its constant inputs as initializers); it folds only what ORT folds:
 * deterministic ops, no subgraphs, all inputs constant initializers, a CPU
 * EP kernel for the op, version and type (src/lower/ort_cpu_kernels.inc,
 * generated from cpu_execution_provider.cc), DequantizeLinear only inside a
 * foldable DQ->X->Q unit.
 */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "convgate/runtime.h"
#include "convgate/schema.h"
#include "core/arena.h"
#include "core/strmap.h"
#include "lower/lgraph.h"
#include "lower/lower_internal.h"
#include "run/exec.h"
#include "run/kernel.h"

#define OB_MAX_STEPS 10
#define OB_SHARE_MAX_ELEMS 8 /* ConstantSharing::TENSOR_ELEM_COUNT_THRESHOLD, constant_sharing.h */

/* --- the CPU EP's kernels ---------------------------------------------------------- */

typedef struct ob_kernel {
    const char *domain, *op;
    int start, end, type;
} ob_kernel;

static const ob_kernel ob_cpu_kernels[] = {
#define X(d, o, s, e, t) {d, o, s, e, t},
#include "lower/ort_cpu_kernels.inc"
#undef X
};

/* The input whose dtype a typed CPU registration is keyed on. */
static size_t kernel_type_input(const lg_node *n)
{
    if (strcmp(n->op_type, "Where") == 0)
        return 1;
    if (strcmp(n->op_type, "QuantizeLinear") == 0)
        return 2;
    return 0;
}

/* True when ONNX Runtime's CPU EP registers a kernel for n (op, version
 * range holding its since_version, the dtype of its typed input). */
static bool cpu_kernel_exists(lg_graph *g, const lg_node *n)
{
    int since = (int)n->since;
    size_t ti = kernel_type_input(n);
    int dtype = -1;
    if (ti < n->input_count && n->inputs[ti][0]) {
        const lg_type *t = lg_type_get(g, n->inputs[ti]);
        if (t && t->has_dtype)
            dtype = t->dtype;
    } else if (strcmp(n->op_type, "QuantizeLinear") == 0) {
        dtype = CG_DTYPE_UINT8; /* the output type without a zero point */
    }
    for (size_t i = 0; i < sizeof ob_cpu_kernels / sizeof ob_cpu_kernels[0]; i++) {
        const ob_kernel *k = &ob_cpu_kernels[i];
        if (strcmp(k->op, n->op_type) != 0 || strcmp(k->domain, n->domain) != 0)
            continue;
        if (since < k->start || (k->end && since > k->end))
            continue;
        if (k->type < 0 || dtype < 0 || k->type == dtype)
            return true;
    }
    return false;
}

bool cg_ort_cpu_has_kernel(const char *domain, const char *op, int since)
{
    for (size_t i = 0; i < sizeof ob_cpu_kernels / sizeof ob_cpu_kernels[0]; i++) {
        const ob_kernel *k = &ob_cpu_kernels[i];
        if (strcmp(k->op, op) == 0 && strcmp(k->domain, domain ? domain : "") == 0 &&
            since >= k->start && (!k->end || since <= k->end))
            return true;
    }
    return false;
}

/* --- what ONNX shape inference knows -------------------------------------------------- */

/* Ops whose output shape shape inference cannot give from input shapes
 * (sequences, optionals, string ops). */
static const char *const ob_data_dependent[] = {
    "SequenceAt", "ConcatFromSequence", "SplitToSequence",
    "SequenceConstruct", "SequenceEmpty", "SequenceInsert", "SequenceErase", "SequenceLength",
    "SequenceMap", "Optional", "OptionalGetElement", "OptionalHasElement", "TfIdfVectorizer",
    "StringSplit", "RegexFullMatch", "StringConcat", "ImageDecoder"};

/* Ops whose output dims depend on input values but whose output rank ONNX
 * inference still gives: data-dependent sizes (NonZero, ...) and ops whose
 * shape input is not a constant but keep their input's rank (TopK with a
 * computed k, Slice with computed starts, ...). Reshape, Squeeze, Unsqueeze
 * and ConstantOfShape are not here: with a computed shape input their
 * output has no shape at all. If, Loop and Scan outputs take their rank
 * from the bodies, whose shapes ORT infers (convgate keeps no body shapes:
 * the rank comes from the reference run). */
static const char *const ob_rank_known[] = {
    "If", "Loop", "Scan", "NonZero", "NonMaxSuppression", "Unique", "Compress", "TopK", "Slice", "Pad", "Tile",
    "Resize", "Upsample", "ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin", "ReduceProd",
    "ReduceL1", "ReduceL2", "ReduceLogSum", "ReduceLogSumExp", "ReduceSumSquare",
    "CenterCropPad", "Split", "OneHot", "Range", "Expand"};

/* Inputs that fix an op's output shape: inference knows the shape only when
 * they are constants. Bit i: input i. */
typedef struct ob_shape_inputs {
    const char *op;
    unsigned mask;
} ob_shape_inputs;

static const ob_shape_inputs ob_shape_input_table[] = {
    {"Reshape", 1u << 1},        {"Expand", 1u << 1},          {"Tile", 1u << 1},
    {"ConstantOfShape", 1u << 0}, {"Range", 7u},                {"Slice", 0x1eu},
    {"Resize", (1u << 2) | (1u << 3)}, {"Upsample", 1u << 1},  {"TopK", 1u << 1},
    {"Pad", (1u << 1) | (1u << 3)}, {"Squeeze", 1u << 1},      {"Unsqueeze", 1u << 1},
    {"Split", 1u << 1},          {"OneHot", 1u << 1},          {"ReduceSum", 1u << 1},
    {"ReduceMean", 1u << 1},     {"ReduceMax", 1u << 1},       {"ReduceMin", 1u << 1},
    {"ReduceProd", 1u << 1},     {"ReduceL1", 1u << 1},        {"ReduceL2", 1u << 1},
    {"ReduceLogSum", 1u << 1},   {"ReduceLogSumExp", 1u << 1}, {"ReduceSumSquare", 1u << 1},
    {"CenterCropPad", 1u << 1},  {"Col2Im", 6u},               {"DFT", 6u},
    {"STFT", 0xcu},              {"HannWindow", 1u},           {"HammingWindow", 1u},
    {"BlackmanWindow", 1u},      {"MelWeightMatrix", 0x1fu},   {"AffineGrid", 1u << 1},
    {"RandomNormalLike", 0},     {"Trilu", 0}};

static bool in_list(const char *s, const char *const *list, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (strcmp(s, list[i]) == 0)
            return true;
    return false;
}

static unsigned shape_input_mask(const char *op)
{
    for (size_t i = 0; i < sizeof ob_shape_input_table / sizeof ob_shape_input_table[0]; i++)
        if (strcmp(ob_shape_input_table[i].op, op) == 0)
            return ob_shape_input_table[i].mask;
    return 0;
}

/* What shape inference knows of a value it does not know fully. */
typedef struct ob_shape_state {
    const char *name;
    bool no_shape;       /* not even the rank */
    uint32_t known_mask; /* else: the dims it knows */
} ob_shape_state;

/* Per graph: the values shape inference knows less of than the reference
 * run. */
typedef struct ob_opaque {
    lg_graph *g;
    cg_strmap index; /* name -> index into v */
    ob_shape_state *v;
    size_t count, cap;
} ob_opaque;

typedef struct ob_ctx {
    lg_model *m;
    cg_error *err;
    ob_opaque **opaque; /* one per graph seen (stable pointers) */
    size_t opaque_count;
    bool failed;       /* a CG_NOMEM or internal error is in err */
} ob_ctx;

static ob_opaque *opaque_of(ob_ctx *c, lg_graph *g)
{
    for (size_t i = 0; i < c->opaque_count; i++)
        if (c->opaque[i]->g == g)
            return c->opaque[i];
    ob_opaque **grown = realloc(c->opaque, (c->opaque_count + 1) * sizeof *grown);
    ob_opaque *o = calloc(1, sizeof *o);
    if (!grown || !o) {
        if (grown)
            c->opaque = grown;
        free(o);
        c->m->oom = true;
        return NULL;
    }
    c->opaque = grown;
    o->g = g;
    c->opaque[c->opaque_count++] = o;
    return o;
}

static const ob_shape_state *state_find(const ob_opaque *o, const char *name)
{
    size_t i = cg_strmap_get(&o->index, name);
    return i == CG_STRMAP_NONE ? NULL : &o->v[i];
}

static bool state_put(ob_opaque *o, const char *name, bool no_shape, uint32_t mask)
{
    size_t i = cg_strmap_get(&o->index, name);
    if (i == CG_STRMAP_NONE) {
        if (o->count == o->cap) {
            size_t cap = o->cap ? o->cap * 2 : 64;
            ob_shape_state *v = realloc(o->v, cap * sizeof *v);
            if (!v)
                return false;
            o->v = v;
            o->cap = cap;
        }
        if (cg_strmap_add(&o->index, name, o->count) == CG_STRMAP_NONE)
            return false;
        i = o->count++;
    }
    o->v[i].name = name;
    o->v[i].no_shape = no_shape;
    o->v[i].known_mask = mask;
    return true;
}

/* The state of name as seen from g (a body reads outer values); NULL when
 * inference knows it as the reference run does. */
static const ob_shape_state *shape_state(ob_ctx *c, lg_graph *g, const char *name)
{
    for (; g; g = g->parent) {
        ob_opaque *o = opaque_of(c, g);
        if (!o)
            return NULL;
        const ob_shape_state *st = state_find(o, name);
        if (st)
            return st;
        const lg_index_entry *e = lg_lookup(g, name);
        if (e && (e->producer != SIZE_MAX || e->graph_input || e->init != SIZE_MAX))
            return NULL;
    }
    return NULL;
}

static int ob_dtype(lg_graph *g, const char *name)
{
    const lg_type *t = lg_type_get(g, name);
    return t && t->has_dtype ? t->dtype : -1;
}

/* The dtype of a schema type string "tensor(float)"; -1 for others. */
static int32_t tensor_type_dtype(const char *ts)
{
    char name[32];
    size_t len = strlen(ts);
    if (strncmp(ts, "tensor(", 7) != 0 || len < 9 || len - 8 >= sizeof name)
        return -1;
    memcpy(name, ts + 7, len - 8);
    name[len - 8] = '\0';
    if (strcmp(name, "float") == 0)
        return CG_DTYPE_FLOAT;
    if (strcmp(name, "double") == 0)
        return CG_DTYPE_DOUBLE;
    cg_dtype dt = cg_dtype_from_name(name);
    return dt == CG_DTYPE_UNDEFINED ? -1 : (int32_t)dt;
}

/* The dtype ONNX type inference gives output o of n from its schema: a
 * fixed tensor type, the type bound to its type parameter by an input, or
 * the one allowed type; -1 when it cannot tell. */
static int32_t infer_dtype(lg_graph *g, const lg_node *n, size_t o)
{
    int64_t to;
    if (n->domain[0] == '\0') {
        if (strcmp(n->op_type, "Cast") == 0)
            return lg_attr_int(n, "to", &to) ? (int32_t)to : -1;
        if (strcmp(n->op_type, "CastLike") == 0 && n->input_count > 1)
            return ob_dtype(g, n->inputs[1]);
        if (strcmp(n->op_type, "ConstantOfShape") == 0) {
            const cg_attr *v = lg_attr(n, "value");
            return v && v->t ? v->t->data_type : CG_DTYPE_FLOAT;
        }
        if (strstr(n->op_type, "Random") == n->op_type || strcmp(n->op_type, "EyeLike") == 0 ||
            strcmp(n->op_type, "Bernoulli") == 0 || strcmp(n->op_type, "Multinomial") == 0) {
            if (lg_attr_int(n, "dtype", &to))
                return (int32_t)to;
            if (strcmp(n->op_type, "Multinomial") == 0)
                return CG_DTYPE_INT32;
            if (strstr(n->op_type, "Like") || strcmp(n->op_type, "Bernoulli") == 0)
                return n->input_count ? ob_dtype(g, n->inputs[0]) : -1;
            return CG_DTYPE_FLOAT;
        }
    }
    if (n->domain[0] == '\0' && strcmp(n->op_type, "If") == 0 && n->bodies) {
        /* If: the type of the then_branch's output (ONNX If inference) */
        for (size_t a = 0; a < n->attr_count; a++) {
            lg_graph *b = n->bodies[a];
            if (b && n->attrs[a].name && strcmp(n->attrs[a].name, "then_branch") == 0 &&
                o < b->output_count)
                return ob_dtype(b, b->outputs[o]);
        }
        return -1;
    }
    int64_t opset = cg_model_opset(g->model->source, n->domain);
    const cg_schema *sc = cg_schema_find(n->domain, n->op_type, opset);
    if (!sc || sc->output_count == 0)
        return -1;
    const cg_schema_formal *f = &sc->outputs[o < sc->output_count ? o : sc->output_count - 1];
    const char *ts = f->type_str ? f->type_str : "";
    if (strncmp(ts, "tensor(", 7) == 0)
        return tensor_type_dtype(ts);
    for (size_t i = 0; i < sc->input_count; i++) {
        const cg_schema_formal *in = &sc->inputs[i];
        if (!in->type_str || strcmp(in->type_str, ts) != 0)
            continue;
        /* a variadic last formal covers the remaining inputs */
        size_t last = in->option == CG_FORMAL_VARIADIC ? n->input_count : i + 1;
        for (size_t k = i; k < last && k < n->input_count; k++)
            if (n->inputs[k][0]) {
                int dt = ob_dtype(g, n->inputs[k]);
                if (dt >= 0)
                    return dt;
            }
    }
    for (size_t k = 0; k < sc->constraint_count; k++) {
        const cg_type_constraint *tc = &sc->constraints[k];
        if (strcmp(tc->param, ts) == 0 && tc->allowed_count == 1)
            return tensor_type_dtype(tc->allowed[0]);
    }
    return -1;
}

/* Recomputes, for the node outputs of g, what shape inference would know:
 * the dtype where no type is recorded (bodies have none from the reference
 * run), and how much of each shape. ONNX shape inference as ORT 1.22 runs
 * it (ONNX 1.17, no data propagation) gives no shape at all to the outputs
 * of data-dependent ops, of ops whose shape input is computed at run time,
 * and of whatever reads them; a Reshape with a constant shape gives its
 * rank back (the dims it sets to positive values are known), and values
 * downstream of that know their rank but not their dims. */
static void refresh_shapes(ob_ctx *c, lg_graph *g)
{
    ob_opaque *o = opaque_of(c, g);
    if (!o)
        return;
    cg_strmap_free(&o->index);
    o->count = 0;
    size_t *order = NULL, count = 0;
    if (!lg_topo_order(g, &order, &count)) {
        c->m->oom = true;
        return;
    }
    for (size_t k = 0; k < count; k++) {
        const lg_node *n = &g->nodes[order[k]];
        for (size_t a = 0; a < n->attr_count && n->bodies; a++)
            if (n->bodies[a])
                refresh_shapes(c, n->bodies[a]);
        for (size_t out = 0; out < n->output_count; out++) {
            const char *name = n->outputs[out];
            const lg_type *t = name[0] ? lg_type_get(g, name) : NULL;
            if (!name[0] || (t && t->has_dtype))
                continue;
            int32_t dt = infer_dtype(g, n, out);
            if (dt < 0)
                continue;
            lg_type nt;
            memset(&nt, 0, sizeof nt);
            if (t)
                nt = *t;
            nt.has_dtype = true;
            nt.dtype = dt;
            if (!lg_type_set(g, name, &nt))
                c->m->oom = true;
        }
        bool onnx = n->domain[0] == '\0';
        bool shape_like = onnx && (strcmp(n->op_type, "Shape") == 0 || strcmp(n->op_type, "Size") == 0);
        bool reshape = onnx && strcmp(n->op_type, "Reshape") == 0;
        bool no_shape = onnx && in_list(n->op_type, ob_data_dependent,
                                        sizeof ob_data_dependent / sizeof ob_data_dependent[0]);
        bool partial = false;
        unsigned mask = onnx ? shape_input_mask(n->op_type) : 0;
        bool keeps_rank = onnx && in_list(n->op_type, ob_rank_known,
                                          sizeof ob_rank_known / sizeof ob_rank_known[0]);
        if (keeps_rank && !mask)
            partial = true; /* data-dependent sizes */
        for (size_t i = 0; i < n->input_count && !no_shape; i++) {
            const char *in = n->inputs[i];
            if (!in[0])
                continue;
            const lg_type *t = lg_type_get(g, in);
            const ob_shape_state *st = shape_state(c, g, in);
            bool in_none = !t || !t->has_shape || (st && st->no_shape);
            bool in_partial = !in_none && st;
            if (i < 32 && (mask & (1u << i)) && !lg_constant(g, in, true)) {
                if (keeps_rank)
                    partial = true;
                else
                    no_shape = true;
            } else if (reshape && i == 0) {
                partial = in_none || in_partial; /* the constant shape gives the rank */
            } else if (in_none) {
                no_shape = true;
            } else if (in_partial && !shape_like) {
                partial = true;
            }
        }
        if (!no_shape && !partial)
            continue;
        uint32_t known = 0;
        if (!no_shape && reshape && n->input_count > 1) {
            const cg_tensor_proto *shp = lg_constant(g, n->inputs[1], true);
            int64_t numel, v;
            if (shp && lg_tensor_numel(shp, &numel))
                for (int64_t d = 0; d < numel && d < 32; d++)
                    if (lg_tensor_i64(shp, d, &v) && v > 0)
                        known |= 1u << d;
        }
        for (size_t out = 0; out < n->output_count; out++)
            if (n->outputs[out][0] && !state_put(o, n->outputs[out], no_shape, known))
                c->m->oom = true;
    }
    free(order);
}

/* The type of name as ORT's shape inference has it. False when there is no
 * type at all. */
static bool ob_type(ob_ctx *c, lg_graph *g, const char *name, lg_type *out)
{
    const lg_type *t = lg_type_get(g, name);
    if (!t) {
        memset(out, 0, sizeof *out);
        return false;
    }
    *out = *t;
    const ob_shape_state *st = out->has_shape ? shape_state(c, g, name) : NULL;
    if (st && st->no_shape) {
        out->has_shape = false;
        out->dim_known = 0;
    } else if (st) {
        out->dim_known &= st->known_mask;
    }
    return true;
}

static bool all_dims_known(const lg_type *t)
{
    if (!t->has_shape)
        return false;
    for (int d = 0; d < t->rank; d++)
        if (!(t->dim_known & (1u << d)))
            return false;
    return true;
}

/* TensorShapeProto dimension equality: both values, or both unknown. */
static bool dim_eq(const lg_type *a, int da, const lg_type *b, int db)
{
    bool ka = a->dim_known & (1u << da), kb = b->dim_known & (1u << db);
    if (ka != kb)
        return false;
    return ka ? a->dims[da] == b->dims[db] : false;
}

/* --- ORT's graph_utils (onnxruntime/core/graph/graph_utils.cc) ------------------------ */

/* Input edges: present inputs produced by a node of this graph. */
static size_t input_edge_count(lg_graph *g, const lg_node *n)
{
    size_t c = 0;
    for (size_t i = 0; i < n->input_count; i++)
        if (n->inputs[i][0] && lg_producer(g, n->inputs[i]))
            c++;
    return c;
}

static bool output_used(lg_graph *g, const lg_node *n, size_t o)
{
    return o < n->output_count && n->outputs[o][0] && lg_use_count(g, n->outputs[o]) > 0;
}

/* IsOnlyOneOutputUsed (graph_utils.cc:449-483): edges leave one output only,
 * and at most one graph output, the same one. *used: that output or
 * SIZE_MAX when nothing is used. */
static bool only_one_output_used(lg_graph *g, const lg_node *n, size_t *used)
{
    size_t first = SIZE_MAX;
    for (size_t o = 0; o < n->output_count; o++)
        if (output_used(g, n, o)) {
            if (first != SIZE_MAX)
                return false;
            first = o;
        }
    size_t gout = 0, gidx = SIZE_MAX;
    for (size_t o = 0; o < n->output_count; o++)
        if (n->outputs[o][0] && lg_is_graph_output(g, n->outputs[o])) {
            gout++;
            gidx = o;
        }
    if (gout > 1)
        return false;
    if (gout == 1) {
        if (first != SIZE_MAX && first != gidx)
            return false;
        first = gidx;
    }
    *used = first;
    return true;
}

/* A body of a consumer that reads old_name from this scope would see
 * new_name shadowed by a value of its own. */
static bool body_defines(lg_graph *b, const char *name)
{
    const lg_index_entry *e = lg_lookup(b, name);
    if (e && (e->producer != SIZE_MAX || e->graph_input || e->init != SIZE_MAX))
        return true;
    for (size_t n = 0; n < b->node_count; n++)
        for (size_t a = 0; a < b->nodes[n].attr_count; a++)
            if (!b->nodes[n].dead && b->nodes[n].bodies && b->nodes[n].bodies[a] &&
                body_defines(b->nodes[n].bodies[a], name))
                return true;
    return false;
}

/* CanUpdateImplicitInputNameInSubgraphs (graph_utils.cc:135-151). */
static bool can_rename_in_bodies(lg_graph *g, const lg_node *n, const char *new_name)
{
    for (size_t k = 0; k < g->node_count; k++) {
        const lg_node *cn = &g->nodes[k];
        if (cn->dead || !cn->bodies)
            continue;
        for (size_t a = 0; a < cn->attr_count; a++)
            if (cn->bodies[a])
                for (size_t o = 0; o < n->output_count; o++)
                    if (n->outputs[o][0] && body_defines(cn->bodies[a], new_name))
                        return false;
    }
    return true;
}

/* CanRemoveNode (graph_utils.cc:494-530). */
static bool can_remove_node(lg_graph *g, const lg_node *n)
{
    size_t used;
    if (!only_one_output_used(g, n, &used))
        return false;
    if (lg_produces_graph_output(g, n))
        return false;
    const char *new_name = NULL;
    if (input_edge_count(g, n) == 1) {
        for (size_t i = 0; i < n->input_count && !new_name; i++)
            if (n->inputs[i][0] && lg_producer(g, n->inputs[i]))
                new_name = n->inputs[i];
    } else if (n->input_count == 1) {
        new_name = n->inputs[0];
    }
    return new_name && can_rename_in_bodies(g, n, new_name);
}

/* The single consumer node of n's outputs (GetOutputEdgesCount() == 1). */
static lg_node *single_consumer(lg_graph *g, const lg_node *n, size_t *index)
{
    for (size_t o = 0; o < n->output_count; o++) {
        const lg_index_entry *e = n->outputs[o][0] ? lg_lookup(g, n->outputs[o]) : NULL;
        if (e && e->use_count) {
            if (index)
                *index = e->uses[0].node;
            return &g->nodes[e->uses[0].node];
        }
    }
    return NULL;
}

/* The step ORT's fusions take from a node to the next: n feeds exactly one
 * node input and no graph output (GetOutputEdgesCount() == 1, and not
 * NodeProducesGraphOutput), and that node is `op` at one of `versions`
 * (op NULL: any node). Returns it, with its index in *index when index is
 * not NULL; NULL otherwise. */
static lg_node *fusion_next(lg_graph *g, const lg_node *n, const char *op, const int *versions,
                            size_t version_count, size_t *index)
{
    if (lg_produces_graph_output(g, n) || lg_output_edge_count(g, n) != 1)
        return NULL;
    lg_node *next = single_consumer(g, n, index);
    if (next && op && !lg_is_op_version(next, op, versions, version_count))
        return NULL;
    return next;
}

/* Every node that reads n's first output is `op` (at one of `versions`;
 * NULL: at any), and no subgraph reads it implicitly; *readers (when not
 * NULL) counts those nodes. */
static bool readers_all(lg_graph *g, const lg_node *n, const char *op, const int *versions,
                        size_t version_count, size_t *readers)
{
    const lg_index_entry *e = lg_lookup(g, n->outputs[0]);
    if (!e || e->implicit_uses)
        return false;
    for (size_t u = 0; u < e->use_count; u++) {
        const lg_node *r = &g->nodes[e->uses[u].node];
        if (versions ? !lg_is_op_version(r, op, versions, version_count) : !lg_is_op(r, "", op))
            return false;
    }
    if (readers)
        *readers = e->use_count;
    return true;
}

static size_t node_index(lg_graph *g, const lg_node *n) { return (size_t)(n - g->nodes); }

/* FinalizeNodeFusion (graph_utils.cc:739-757) for first -> second: first
 * takes second's outputs; second goes. */
static void finalize_fusion(lg_graph *g, size_t first, size_t second, const char *by)
{
    lg_node *a = &g->nodes[first], *b = &g->nodes[second];
    a->outputs = b->outputs;
    a->output_count = b->output_count;
    lg_remove(g, second, by, first);
}


/* Element 0 of a constant as double; false when unreadable. */
static bool scalar_f64(const cg_tensor_proto *tp, double *v) { return lg_tensor_f64(tp, 0, v); }

static bool is_float_type(int32_t dt)
{
    return dt == CG_DTYPE_FLOAT || dt == CG_DTYPE_FLOAT16 || dt == CG_DTYPE_DOUBLE;
}

/* The element types NoopElimination, DivMulFusion and ConstantSharing read
 * as numbers (float, float16, double, int32, int64). */
static bool is_number_type(int32_t dt)
{
    return dt == CG_DTYPE_FLOAT || dt == CG_DTYPE_FLOAT16 || dt == CG_DTYPE_DOUBLE ||
           dt == CG_DTYPE_INT32 || dt == CG_DTYPE_INT64;
}

/* --- tensors as double arrays (fusions recompute weights) ------------------------------ */

typedef struct ob_array {
    int32_t dtype;
    size_t rank;
    int64_t dims[CG_MAX_RANK];
    int64_t numel;
    double *v;
} ob_array;

static bool array_load(const cg_tensor_proto *tp, ob_array *a)
{
    memset(a, 0, sizeof *a);
    cg_value *val = NULL;
    if (tp->rank > CG_MAX_RANK || cg_value_from_tensor_proto(tp, &val, NULL) != CG_OK)
        return false;
    bool ok = val->kind == CG_VALUE_TENSOR && val->tensor.dtype != CG_DTYPE_STRING;
    if (ok) {
        a->dtype = (int32_t)val->tensor.dtype;
        a->rank = tp->rank;
        if (tp->rank)
            memcpy(a->dims, tp->dims, tp->rank * sizeof *tp->dims);
        a->numel = val->tensor.numel;
        a->v = malloc((size_t)(a->numel ? a->numel : 1) * sizeof *a->v);
        ok = a->v != NULL;
        for (int64_t i = 0; ok && i < a->numel; i++)
            a->v[i] = cg_tensor_get_f64(&val->tensor, i);
    }
    cg_value_free(val);
    return ok;
}

/* A tensor proto of a's values in a's dtype (float types only). */
static cg_tensor_proto *array_store(lg_model *m, const ob_array *a, const char *name)
{
    size_t es = cg_dtype_size((cg_dtype)a->dtype);
    cg_tensor t;
    memset(&t, 0, sizeof t);
    t.dtype = (cg_dtype)a->dtype;
    t.rank = (int)a->rank;
    memcpy(t.dims, a->dims, a->rank * sizeof *a->dims);
    t.numel = a->numel;
    t.data = malloc((size_t)(a->numel ? a->numel : 1) * es);
    if (!t.data) {
        m->oom = true;
        return NULL;
    }
    for (int64_t i = 0; i < a->numel; i++)
        cg_tensor_set_f64(&t, i, a->v[i]);
    cg_tensor_proto *tp =
        lg_tensor_new(m, name, a->dtype, a->dims, a->rank, t.data, (size_t)a->numel * es);
    free(t.data);
    return tp;
}

static void array_free(ob_array *a) { free(a->v); }

/* --- rewrite rules (Level 1) -------------------------------------------------------- */

typedef enum ob_effect { EFF_NONE = 0, EFF_MODIFIED, EFF_REMOVED } ob_effect;

/* EliminateIdentity (identity_elimination.cc:39-103). */
static ob_effect rule_identity(ob_ctx *c, lg_graph *g, size_t ni)
{
    (void)c;
    lg_node *n = &g->nodes[ni];
    if (can_remove_node(g, n)) {
        lg_bypass(g, ni, "EliminateIdentity");
        return EFF_REMOVED;
    }
    /* relaxed: the Identity feeds only a graph output */
    if (lg_output_edge_count(g, n) != 0 || n->output_count != 1 ||
        !lg_is_graph_output(g, n->outputs[0]) || n->input_count < 1)
        return EFF_NONE;
    const lg_index_entry *src = lg_lookup(g, n->inputs[0]);
    if (!src || src->producer == SIZE_MAX)
        return EFF_NONE;
    if (src->graph_output || src->use_count + src->implicit_uses > 1)
        return EFF_NONE;
    size_t pi = src->producer, po = src->producer_out;
    lg_node *p = &g->nodes[pi];
    const char **outs = cg_arena_calloc(c->m->arena, p->output_count, sizeof *outs);
    if (!outs) {
        c->m->oom = true;
        return EFF_NONE;
    }
    memcpy(outs, p->outputs, p->output_count * sizeof *outs);
    outs[po] = n->outputs[0];
    p->outputs = outs;
    lg_remove(g, ni, "EliminateIdentity", SIZE_MAX);
    return EFF_REMOVED;
}

/* Reads a constant int tensor (int32 or int64) into v; count in *n. */
static bool const_ints(lg_graph *g, const char *name, int64_t **v, size_t *n)
{
    const cg_tensor_proto *tp = lg_constant(g, name, true);
    int64_t numel;
    if (!tp || (tp->data_type != CG_DTYPE_INT64 && tp->data_type != CG_DTYPE_INT32) ||
        !lg_tensor_numel(tp, &numel) || numel < 0)
        return false;
    *v = malloc((size_t)(numel ? numel : 1) * sizeof **v);
    if (!*v)
        return false;
    for (int64_t i = 0; i < numel; i++)
        if (!lg_tensor_i64(tp, i, &(*v)[i])) {
            free(*v);
            return false;
        }
    *n = (size_t)numel;
    return true;
}

/* EliminateSlice (slice_elimination.cc:18-126). */
static ob_effect rule_slice(ob_ctx *c, lg_graph *g, size_t ni)
{
    (void)c;
    lg_node *n = &g->nodes[ni];
    static const int versions[] = {1, 10, 11, 13};
    if (!lg_is_op_version(n, "Slice", versions, 4) || !can_remove_node(g, n))
        return EFF_NONE;
    int64_t *starts = NULL, *ends = NULL;
    size_t ns = 0, ne = 0;
    bool ok = false;
    if (n->since == 1) {
        const int64_t *s, *e, *ax;
        size_t cs, ce, ca;
        if (lg_attr_ints(n, "starts", &s, &cs) && lg_attr_ints(n, "ends", &e, &ce) && cs == ce &&
            !(lg_attr_ints(n, "axes", &ax, &ca) && ca != cs)) {
            starts = malloc((cs ? cs : 1) * sizeof *starts);
            ends = malloc((cs ? cs : 1) * sizeof *ends);
            if (starts && ends) {
                if (cs) {
                    memcpy(starts, s, cs * sizeof *s);
                    memcpy(ends, e, cs * sizeof *e);
                }
                ns = ne = cs;
                ok = true;
            }
        }
    } else if (n->input_count > 2 && const_ints(g, n->inputs[1], &starts, &ns)) {
        if (const_ints(g, n->inputs[2], &ends, &ne) && ns && ne && ns == ne) {
            ok = true;
            if (n->input_count > 3 && n->inputs[3][0]) {
                const cg_tensor_proto *axes = lg_constant(g, n->inputs[3], true);
                ok = axes && axes->rank == 1 && (size_t)axes->dims[0] == ns;
                if (ok && n->input_count > 4 && n->inputs[4][0]) {
                    int64_t *steps = NULL;
                    size_t nst = 0;
                    ok = const_ints(g, n->inputs[4], &steps, &nst) && nst == ns;
                    for (size_t i = 0; ok && i < nst; i++)
                        ok = steps[i] == 1;
                    free(steps);
                }
            }
        }
    }
    for (size_t i = 0; ok && i < ns; i++)
        ok = starts[i] == 0 && ends[i] >= INT64_MAX;
    free(starts);
    free(ends);
    if (!ok)
        return EFF_NONE;
    lg_bypass(g, ni, "EliminateSlice");
    return EFF_REMOVED;
}

/* UnsqueezeElimination (unsqueeze_elimination.cc:14-74): an Unsqueeze of a
 * constant initializer becomes an initializer of the new shape. */
static ob_effect rule_unsqueeze(ob_ctx *c, lg_graph *g, size_t ni)
{
    lg_node *n = &g->nodes[ni];
    if (n->input_count < 1 || !n->inputs[0][0])
        return EFF_NONE;
    const cg_tensor_proto *tp = lg_constant(g, n->inputs[0], true);
    if (!tp)
        return EFF_NONE;
    size_t used;
    /* CanReplaceNodeWithInitializer (graph_utils.cc:552-581): the name changes */
    if (!only_one_output_used(g, n, &used) || used == SIZE_MAX ||
        lg_produces_graph_output(g, n))
        return EFF_NONE;
    /* axes: the attribute (opset < 13) -- ORT reads only the attribute */
    const int64_t *axes;
    size_t na;
    if (!lg_attr_ints(n, "axes", &axes, &na))
        return EFF_NONE;
    size_t out_rank = na + tp->rank;
    if (out_rank > CG_MAX_RANK)
        return EFF_NONE;
    int64_t dims[CG_MAX_RANK];
    memset(dims, 0, sizeof dims);
    for (size_t i = 0; i < na; i++) {
        int64_t ax = axes[i] < 0 ? axes[i] + (int64_t)out_rank : axes[i];
        if (ax < 0 || (size_t)ax >= out_rank)
            return EFF_NONE;
        dims[ax] = 1;
    }
    size_t k = 0;
    for (size_t d = 0; d < out_rank; d++)
        if (dims[d] == 0) {
            if (k >= tp->rank)
                return EFF_NONE;
            dims[d] = tp->dims[k++];
        }
    char base[256];
    snprintf(base, sizeof base, "UnsqueezeElimination_%s", n->inputs[0]);
    cg_tensor_proto *nt = cg_arena_calloc(c->m->arena, 1, sizeof *nt);
    int64_t *nd = cg_arena_calloc(c->m->arena, out_rank ? out_rank : 1, sizeof *nd);
    const char *name = lg_fresh_name(g, base);
    if (!nt || !nd || !name) {
        c->m->oom = true;
        return EFF_NONE;
    }
    *nt = *tp;
    if (out_rank)
        memcpy(nd, dims, out_rank * sizeof *nd);
    nt->dims = nd;
    nt->rank = out_rank;
    nt->name = name;
    if (!lg_add_init(g, nt))
        return EFF_NONE;
    lg_rename_uses(g, n->outputs[used], name);
    lg_remove(g, ni, "UnsqueezeElimination", SIZE_MAX);
    return EFF_REMOVED;
}

/* EliminateDropout (dropout_elimination.cc:20-73). */
static ob_effect rule_dropout(ob_ctx *c, lg_graph *g, size_t ni)
{
    (void)c;
    lg_node *n = &g->nodes[ni];
    static const int versions[] = {1, 6, 7, 10, 12, 13};
    if (!lg_is_op_version(n, "Dropout", versions, 6) || !can_remove_node(g, n) ||
        output_used(g, n, 1))
        return EFF_NONE;
    lg_bypass(g, ni, "EliminateDropout");
    return EFF_REMOVED;
}

/* ExpandElimination (expand_elimination.cc:18-71): the target shape keeps
 * the input's shape. */
static ob_effect rule_expand(ob_ctx *c, lg_graph *g, size_t ni)
{
    lg_node *n = &g->nodes[ni];
    if (n->input_count < 2 || !can_remove_node(g, n))
        return EFF_NONE;
    lg_type in;
    if (!ob_type(c, g, n->inputs[0], &in) || !in.has_shape)
        return EFF_NONE;
    const cg_tensor_proto *tp = lg_constant(g, n->inputs[1], true);
    if (!tp || tp->rank != 1 || tp->dims[0] <= 0 || tp->data_type != CG_DTYPE_INT64)
        return EFF_NONE;
    int i = in.rank - 1, j = (int)tp->dims[0] - 1;
    if (i < j)
        return EFF_NONE;
    for (; i >= 0 && j >= 0; i--, j--) {
        int64_t target;
        if (!lg_tensor_i64(tp, j, &target))
            return EFF_NONE;
        if (in.dim_known & (1u << i)) {
            if (in.dims[i] != target && target > 1)
                return EFF_NONE;
        } else if (target > 1) {
            return EFF_NONE;
        }
    }
    lg_bypass(g, ni, "ExpandElimination");
    return EFF_REMOVED;
}

/* CastElimination (cast_elimination.cc:14-31): a Cast to its input's type. */
static ob_effect rule_cast(ob_ctx *c, lg_graph *g, size_t ni)
{
    (void)c;
    lg_node *n = &g->nodes[ni];
    int64_t to;
    if (!can_remove_node(g, n) || n->input_count < 1)
        return EFF_NONE;
    int dt = ob_dtype(g, n->inputs[0]);
    if (dt < 0 || !lg_attr_int(n, "to", &to) || to != dt)
        return EFF_NONE;
    lg_bypass(g, ni, "CastElimination");
    return EFF_REMOVED;
}

/* PreShapeNodeElimination (pre_shape_node_elimination.cc:14-58): a Cast
 * read only by Shape nodes. */
static ob_effect rule_pre_shape(ob_ctx *c, lg_graph *g, size_t ni)
{
    (void)c;
    lg_node *n = &g->nodes[ni];
    static const int shape_versions[] = {13, 15, 19};
    size_t readers;
    if (!can_remove_node(g, n) || n->output_count < 1 || n->input_count < 1 ||
        !readers_all(g, n, "Shape", shape_versions, 3, &readers) || readers == 0)
        return EFF_NONE;
    lg_rename_uses(g, n->outputs[0], n->inputs[0]);
    lg_remove(g, ni, "PreShapeNodeElimination", SIZE_MAX);
    return EFF_REMOVED;
}

/* NoopElimination (noop_elimination.cc:16-105): x+0, 0+x, x-0, x*1, 1*x, x/1. */
static ob_effect rule_noop(ob_ctx *c, lg_graph *g, size_t ni)
{
    lg_node *n = &g->nodes[ni];
    if (n->input_count < 2)
        return EFF_NONE;
    const cg_tensor_proto *i0 = lg_constant(g, n->inputs[0], true);
    const cg_tensor_proto *i1 = lg_constant(g, n->inputs[1], true);
    if ((i0 != NULL) == (i1 != NULL))
        return EFF_NONE;
    bool sub_div = strcmp(n->op_type, "Sub") == 0 || strcmp(n->op_type, "Div") == 0;
    if (sub_div && !i1)
        return EFF_NONE;
    const cg_tensor_proto *init = i0 ? i0 : i1;
    lg_type other;
    if (!ob_type(c, g, n->inputs[i0 ? 1 : 0], &other) || !other.has_shape ||
        (int)init->rank > other.rank)
        return EFF_NONE;
    int64_t size = 1;
    for (size_t d = 0; d < init->rank; d++)
        size *= init->dims[d];
    if (size > 1)
        return EFF_NONE;
    if (size == 1) {
        if (!is_number_type(init->data_type))
            return EFF_NONE;
        double v;
        if (!scalar_f64(init, &v))
            return EFF_NONE;
        float f = (float)v;
        bool add_sub = strcmp(n->op_type, "Add") == 0 || strcmp(n->op_type, "Sub") == 0;
        if (add_sub ? f != 0.0f : f != 1.0f)
            return EFF_NONE;
    }
    if (!can_remove_node(g, n))
        return EFF_NONE;
    lg_bypass(g, ni, "NoopElimination");
    return EFF_REMOVED;
}

/* DivMulFusion (div_mul_fusion.cc:18-99): 1/x * y -> y/x. */
static ob_effect rule_div_mul(ob_ctx *c, lg_graph *g, size_t ni)
{
    (void)c;
    lg_node *n = &g->nodes[ni];
    static const int versions[] = {7, 13, 14};
    if (!lg_is_op_version(n, "Div", versions, 3) || n->input_count < 2)
        return EFF_NONE;
    size_t mi;
    lg_node *mul = fusion_next(g, n, "Mul", versions, 3, &mi);
    if (!mul || mul->input_count < 2)
        return EFF_NONE;
    const cg_tensor_proto *a = lg_constant(g, n->inputs[0], true);
    int64_t numel;
    double v;
    if (!a || !lg_tensor_numel(a, &numel) || numel > 1)
        return EFF_NONE;
    if (!is_number_type(a->data_type) || !scalar_f64(a, &v) || v != 1.0)
        return EFF_NONE;
    const char *other = strcmp(mul->inputs[0], n->outputs[0]) == 0 ? mul->inputs[1]
                                                                     : mul->inputs[0];
    lg_set_input(g, ni, 0, other);
    finalize_fusion(g, ni, mi, "DivMulFusion");
    return EFF_MODIFIED;
}

/* FuseReluClip (relu_clip_fusion.cc:13-148): Relu -> Clip drops the Relu
 * (raising Clip's min to 0 when needed). */
static ob_effect rule_relu_clip(ob_ctx *c, lg_graph *g, size_t ni)
{
    lg_node *n = &g->nodes[ni];
    static const int relu_versions[] = {6, 13, 14};
    static const int clip_versions[] = {6, 11, 12, 13};
    if (!lg_is_op_version(n, "Relu", relu_versions, 3))
        return EFF_NONE;
    size_t ci;
    lg_node *clip = fusion_next(g, n, "Clip", clip_versions, 4, &ci);
    if (!clip || !can_remove_node(g, n))
        return EFF_NONE;
    bool attrs = clip->since == 6;
    bool replace_min = false;
    int32_t dtype = -1;
    if (attrs) {
        float mn = 0;
        replace_min = lg_attr_float(clip, "min", &mn) && mn < 0.f;
    } else {
        const char *min_in = clip->input_count > 1 ? clip->inputs[1] : "";
        const cg_tensor_proto *init = NULL;
        if (min_in[0]) {
            init = lg_constant(g, min_in, true);
            if (!init)
                return EFF_NONE; /* Apply() returns without a change */
        }
        if (!init) {
            dtype = ob_dtype(g, clip->inputs[0]);
            if (dtype < 0)
                return EFF_NONE;
            replace_min = true;
        } else {
            double v;
            dtype = init->data_type;
            if (!scalar_f64(init, &v))
                return EFF_NONE;
            replace_min = v < 0.0;
        }
    }
    lg_bypass(g, ni, "FuseReluClip");
    if (replace_min) {
        if (attrs) {
            cg_attr a;
            memset(&a, 0, sizeof a);
            a.name = "min";
            a.type = CG_ATTR_FLOAT;
            a.has_type = true;
            a.f = 0.f;
            a.has_f = true;
            if (!lg_set_attr(g, ci, &a))
                c->m->oom = true;
        } else {
            char base[256];
            snprintf(base, sizeof base, "FuseReluClip_%s_min_zero_constant", n->name);
            const char *name = lg_fresh_name(g, base);
            size_t es = cg_dtype_valid(dtype) ? cg_dtype_size((cg_dtype)dtype) : 0;
            uint8_t zero[16] = {0};
            cg_tensor_proto *tp = name && es && es <= sizeof zero
                                      ? lg_tensor_new(c->m, name, dtype, NULL, 0, zero, es)
                                      : NULL;
            if (tp && lg_add_init(g, tp))
                lg_set_input(g, ci, 1, name);
        }
    }
    return EFF_REMOVED;
}

/* The four attributes of a Gemm the fusions below write (every one set,
 * as ORT's fused node carries them all). */
static void gemm_attrs(cg_attr attrs[4], int64_t ta, int64_t tb, float alpha, float beta)
{
    static const char *const names[4] = {"transA", "transB", "alpha", "beta"};
    memset(attrs, 0, 4 * sizeof *attrs);
    for (int i = 0; i < 4; i++) {
        attrs[i].name = names[i];
        attrs[i].has_type = true;
        attrs[i].type = i < 2 ? CG_ATTR_INT : CG_ATTR_FLOAT;
        attrs[i].has_i = i < 2;
        attrs[i].has_f = i >= 2;
    }
    attrs[0].i = ta;
    attrs[1].i = tb;
    attrs[2].f = alpha;
    attrs[3].f = beta;
}

/* GemmSumFusion (gemm_sum_fusion.cc:15-160): Gemm(A,B) -> Sum(., C) becomes
 * Gemm(A,B,C). */
static ob_effect rule_gemm_sum(ob_ctx *c, lg_graph *g, size_t ni)
{
    lg_node *n = &g->nodes[ni];
    static const int gemm_versions[] = {11, 13};
    static const int sum_versions[] = {1, 6, 8, 13};
    if (!lg_is_op_version(n, "Gemm", gemm_versions, 2) || n->input_count != 2)
        return EFF_NONE;
    size_t si;
    lg_node *sum = fusion_next(g, n, "Sum", sum_versions, 4, &si);
    if (!sum || sum->input_count != 2)
        return EFF_NONE;
    const char *other = strcmp(sum->inputs[0], n->outputs[0]) == 0 ? sum->inputs[1]
                                                                     : sum->inputs[0];
    lg_type bias, out;
    if (!ob_type(c, g, other, &bias) || !bias.has_shape ||
        !ob_type(c, g, n->outputs[0], &out) || !out.has_shape || out.rank != 2)
        return EFF_NONE;
    bool one0 = (bias.dim_known & 1u) && bias.dims[0] == 1;
    bool one1 = (bias.dim_known & 2u) && bias.dims[1] == 1;
    bool valid = (bias.rank == 1 && dim_eq(&bias, 0, &out, 1)) ||
                 (bias.rank == 2 && one0 && dim_eq(&bias, 1, &out, 1)) ||
                 (bias.rank == 2 && dim_eq(&bias, 0, &out, 0) && (one1 || dim_eq(&bias, 1, &out, 1)));
    if (!valid)
        return EFF_NONE;
    int64_t ta = 0, tb = 0;
    float alpha = 1.f;
    lg_attr_int(n, "transA", &ta);
    lg_attr_int(n, "transB", &tb);
    lg_attr_float(n, "alpha", &alpha);
    cg_attr attrs[4];
    gemm_attrs(attrs, ta, tb, alpha, 1.f);
    const char *ins[3] = {n->inputs[0], n->inputs[1], other};
    char label[256];
    snprintf(label, sizeof label, "%s/GemmSumFusion/", n->name);
    size_t k = lg_add_node(g, "Gemm", n->domain, label, ins, 3, (const char *const *)sum->outputs,
                           1, attrs, 4);
    if (k == SIZE_MAX)
        return EFF_NONE;
    lg_remove(g, ni, "GemmSumFusion", k);
    lg_remove(g, si, "GemmSumFusion", k);
    return EFF_REMOVED;
}

/* Consumers of t, all Gemm? (FindChildrenByType vs GetOutputEdgesCount). */
static bool only_gemm_consumers(lg_graph *g, const lg_node *t)
{
    return readers_all(g, t, "Gemm", NULL, 0, NULL);
}

/* GemmTransposeFusion (gemm_transpose_fusion.cc:15-140): a Transpose on an
 * input of Gemm (or on its output, C absent) folds into transA/transB. */
static ob_effect rule_gemm_transpose(ob_ctx *c, lg_graph *g, size_t ni)
{
    (void)c;
    lg_node *n = &g->nodes[ni];
    static const int gemm_all[] = {1, 6, 7, 9, 11, 13};
    static const int gemm_new[] = {11, 13};
    static const int tr_versions[] = {1, 13};
    if (!lg_is_op_version(n, "Gemm", gemm_all, 6) || lg_output_edge_count(g, n) > 1 ||
        n->input_count < 2)
        return EFF_NONE;
    bool cond = false;
    for (size_t i = 0; i < n->input_count && !cond; i++) {
        lg_node *p = n->inputs[i][0] ? lg_producer(g, n->inputs[i]) : NULL;
        cond = p && lg_is_op_version(p, "Transpose", tr_versions, 2) &&
               !lg_produces_graph_output(g, p) && only_gemm_consumers(g, p);
    }
    size_t oi = SIZE_MAX;
    lg_node *out = NULL;
    if (!cond) {
        if (!lg_is_op_version(n, "Gemm", gemm_new, 2) || lg_produces_graph_output(g, n) ||
            n->input_count > 2)
            return EFF_NONE;
        out = single_consumer(g, n, &oi);
        if (!out || !lg_is_op_version(out, "Transpose", tr_versions, 2) ||
            input_edge_count(g, out) != 1)
            return EFF_NONE;
    }
    /* Apply */
    int64_t ta = 0, tb = 0;
    float alpha = 1.f, beta = 1.f;
    lg_attr_int(n, "transA", &ta);
    lg_attr_int(n, "transB", &tb);
    lg_attr_float(n, "alpha", &alpha);
    lg_attr_float(n, "beta", &beta);
    const char *ins[3] = {n->inputs[0], n->inputs[1], n->input_count > 2 ? n->inputs[2] : ""};
    size_t in_count = n->input_count > 3 ? 3 : n->input_count;
    size_t remove[4];
    size_t rc = 0;
    for (size_t i = 0; i < 2; i++) {
        lg_node *p = lg_producer(g, n->inputs[i]);
        if (!p || !lg_is_op(p, "", "Transpose") || !only_gemm_consumers(g, p))
            continue;
        if (i == 0)
            ta = !ta;
        else
            tb = !tb;
        ins[i] = p->inputs[0];
        if (lg_output_edge_count(g, p) <= 1)
            remove[rc++] = node_index(g, p);
    }
    const char *const *outs = (const char *const *)n->outputs;
    size_t out_count = n->output_count;
    out = single_consumer(g, n, &oi);
    if (out && n->input_count <= 2 && lg_is_op(out, "", "Transpose")) {
        const char *t = ins[0];
        ins[0] = ins[1];
        ins[1] = t;
        int64_t new_tb = !ta;
        ta = !tb;
        tb = new_tb;
        outs = (const char *const *)out->outputs;
        out_count = out->output_count;
    } else {
        oi = SIZE_MAX;
    }
    cg_attr attrs[4];
    gemm_attrs(attrs, ta, tb, alpha, beta);
    char label[256];
    snprintf(label, sizeof label, "%s/GemmTransposeFusion/", n->name);
    size_t k = lg_add_node(g, "Gemm", n->domain, label, ins, in_count, outs, out_count, attrs, 4);
    if (k == SIZE_MAX)
        return EFF_NONE;
    for (size_t i = 0; i < rc; i++)
        lg_remove(g, remove[i], "GemmTransposeFusion", k);
    lg_remove(g, ni, "GemmTransposeFusion", k);
    if (oi != SIZE_MAX)
        lg_remove(g, oi, "GemmTransposeFusion", k);
    return EFF_REMOVED;
}

/* NotWhereFusion (not_where_fusion.cc:38-135): Not -> Where swaps Where's
 * branches. */
static ob_effect rule_not_where(ob_ctx *c, lg_graph *g, size_t ni)
{
    (void)c;
    lg_node *n = &g->nodes[ni];
    static const int where_versions[] = {9};
    static const int not_versions[] = {1};
    if (!lg_is_op_version(n, "Where", where_versions, 1) || n->input_count < 3)
        return EFF_NONE;
    lg_node *nt = lg_producer(g, n->inputs[0]);
    if (!nt || !lg_is_op_version(nt, "Not", not_versions, 1))
        return EFF_NONE;
    const lg_index_entry *e = lg_lookup(g, nt->outputs[0]);
    if (!e)
        return EFF_NONE;
    if (e->use_count + e->implicit_uses > 1)
        for (size_t u = 0; u < e->use_count; u++)
            if (!lg_is_op_version(&g->nodes[e->uses[u].node], "Where", where_versions, 1))
                return EFF_NONE;
    if (!can_remove_node(g, nt))
        return EFF_NONE;
    size_t nti = node_index(g, nt);
    const char *cond = nt->inputs[0];
    size_t uses = e->use_count;
    size_t *wheres = malloc((uses ? uses : 1) * sizeof *wheres);
    if (!wheres)
        return EFF_NONE;
    for (size_t u = 0; u < uses; u++)
        wheres[u] = e->uses[u].node;
    for (size_t u = 0; u < uses; u++) {
        lg_node *w = &g->nodes[wheres[u]];
        const char *a = w->inputs[1], *b = w->inputs[2];
        lg_set_input(g, wheres[u], 0, cond);
        lg_set_input(g, wheres[u], 1, b);
        lg_set_input(g, wheres[u], 2, a);
    }
    free(wheres);
    lg_remove(g, nti, "NotWhereFusion", ni);
    return EFF_MODIFIED;
}

/* Conv's optional bias B is there (ORT: InputDefs().size() == 3). */
static bool conv_has_bias(const lg_node *conv)
{
    return conv->input_count == 3 && conv->inputs[2][0];
}

/* Common checks of ConvAddFusion / ConvMulFusion / ConvBNFusion
 * (conv_add_fusion.cc:105-133, conv_mul_fusion.cc:114-141,
 * conv_bn_fusion.cc:145-185): Conv (1, 11) with one consumer of the given
 * op, fed by nothing else, constant weights. */
static lg_node *conv_next(lg_graph *g, lg_node *conv, const char *op, const int *versions,
                          size_t vc, size_t *next_index)
{
    static const int conv_versions[] = {1, 11};
    if (!lg_is_op_version(conv, "Conv", conv_versions, 2) || conv->input_count < 2)
        return NULL;
    lg_node *next = fusion_next(g, conv, op, versions, vc, next_index);
    if (!next || input_edge_count(g, next) != 1)
        return NULL;
    if (!lg_constant(g, conv->inputs[1], true) ||
        (conv_has_bias(conv) && !lg_constant(g, conv->inputs[2], true)))
        return NULL;
    return next;
}

/* Adds tp as a new initializer named after base and puts it on input slot
 * `slot` of node ni. */
static bool attach_init(lg_graph *g, size_t ni, size_t slot, cg_tensor_proto *tp)
{
    if (!tp || !lg_add_init(g, tp))
        return false;
    lg_set_input(g, ni, slot, tp->name);
    return true;
}

/* Whether t holds one value per output channel of the Conv weight w, laid
 * out as ConvAddFusion and ConvMulFusion accept it: [M, 1, 1...] (rank of
 * w less one) or [1, M, 1...] (rank of w). */
static bool per_output_channel(const cg_tensor_proto *w, const cg_tensor_proto *t)
{
    size_t axis;
    if (t->rank == w->rank)
        axis = 1;
    else if (t->rank + 1 == w->rank)
        axis = 0;
    else
        return false;
    if (t->dims[axis] != w->dims[0])
        return false;
    for (size_t i = 0; i < t->rank; i++)
        if (i != axis && t->dims[i] != 1)
            return false;
    return true;
}

/* The Add or Mul (op; opsets 7, 13, 14) that Conv ni feeds alone, when its
 * second input is a constant of the float type of the Conv's weight and
 * the weight is at least 3-D, as ConvAddFusion and ConvMulFusion start
 * (conv_add_fusion.cc:15-40, conv_mul_fusion.cc:15-40). NULL otherwise. */
static lg_node *conv_then_const(lg_graph *g, size_t ni, const char *op, size_t *next,
                                const cg_tensor_proto **w, const cg_tensor_proto **k)
{
    static const int versions[] = {7, 13, 14};
    lg_node *conv = &g->nodes[ni];
    lg_node *n = conv_next(g, conv, op, versions, 3, next);
    if (!n || n->input_count < 2 || !(*k = lg_constant(g, n->inputs[1], true)))
        return NULL;
    *w = lg_constant(g, conv->inputs[1], true);
    if (!is_float_type((*w)->data_type) || (*w)->data_type != (*k)->data_type ||
        (*w)->rank <= 2)
        return NULL;
    return n;
}

/* ConvAddFusion (conv_add_fusion.cc:15-103). */
static ob_effect rule_conv_add(ob_ctx *c, lg_graph *g, size_t ni)
{
    size_t ai;
    const cg_tensor_proto *w, *b;
    if (!conv_then_const(g, ni, "Add", &ai, &w, &b) || !per_output_channel(w, b))
        return EFF_NONE;
    lg_node *conv = &g->nodes[ni];
    ob_array add_b, conv_b;
    if (!array_load(b, &add_b))
        return EFF_NONE;
    char base[256];
    if (conv_has_bias(conv)) {
        const cg_tensor_proto *cb = lg_constant(g, conv->inputs[2], true);
        if (cb->data_type != b->data_type || cb->rank != 1 || cb->dims[0] != w->dims[0] ||
            !array_load(cb, &conv_b)) {
            array_free(&add_b);
            return EFF_NONE;
        }
        if (conv_b.numel != add_b.numel) {
            array_free(&add_b);
            array_free(&conv_b);
            return EFF_NONE;
        }
        for (int64_t i = 0; i < conv_b.numel; i++)
            conv_b.v[i] += add_b.v[i];
        snprintf(base, sizeof base, "ConvAddFusion_B_%s", conv->inputs[2]);
        bool ok = attach_init(g, ni, 2, array_store(c->m, &conv_b, lg_fresh_name(g, base)));
        array_free(&conv_b);
        array_free(&add_b);
        if (!ok)
            return EFF_NONE;
    } else {
        add_b.rank = 1;
        add_b.dims[0] = w->dims[0];
        snprintf(base, sizeof base, "ConvAddFusion_Add_B_%s", b->name ? b->name : "");
        bool ok = attach_init(g, ni, 2, array_store(c->m, &add_b, lg_fresh_name(g, base)));
        array_free(&add_b);
        if (!ok)
            return EFF_NONE;
    }
    finalize_fusion(g, ni, ai, "ConvAddFusion");
    return EFF_MODIFIED;
}

/* ConvMulFusion (conv_mul_fusion.cc:15-112). */
static ob_effect rule_conv_mul(ob_ctx *c, lg_graph *g, size_t ni)
{
    size_t mi;
    const cg_tensor_proto *w, *s;
    if (!conv_then_const(g, ni, "Mul", &mi, &w, &s) || (s->rank != 0 && !per_output_channel(w, s)))
        return EFF_NONE;
    lg_node *conv = &g->nodes[ni];
    const cg_tensor_proto *cb = conv_has_bias(conv) ? lg_constant(g, conv->inputs[2], true) : NULL;
    if (cb && (cb->data_type != s->data_type || cb->rank != 1 || cb->dims[0] != w->dims[0]))
        return EFF_NONE;
    ob_array wa, sa, ba;
    memset(&ba, 0, sizeof ba);
    if (!array_load(w, &wa))
        return EFF_NONE;
    if (!array_load(s, &sa) || (cb && !array_load(cb, &ba))) {
        array_free(&wa);
        array_free(&sa);
        return EFF_NONE;
    }
    /* scale_by_axis(W, s, 1): W[k, ...] *= s[k] (a scalar scales everything) */
    int64_t per = w->dims[0] ? wa.numel / w->dims[0] : 0;
    for (int64_t i = 0; i < wa.numel; i++)
        wa.v[i] *= sa.numel == 1 ? sa.v[0] : sa.v[per ? i / per : 0];
    for (int64_t i = 0; cb && i < ba.numel; i++)
        ba.v[i] *= sa.numel == 1 ? sa.v[0] : sa.v[i];
    char base[256];
    snprintf(base, sizeof base, "ConvMulFusion_W_%s", w->name ? w->name : "");
    bool ok = attach_init(g, ni, 1, array_store(c->m, &wa, lg_fresh_name(g, base)));
    if (ok && cb) {
        snprintf(base, sizeof base, "ConvMulFusion_Mul_B_%s", s->name ? s->name : "");
        ok = attach_init(g, ni, 2, array_store(c->m, &ba, lg_fresh_name(g, base)));
    }
    array_free(&wa);
    array_free(&sa);
    array_free(&ba);
    if (!ok)
        return EFF_NONE;
    finalize_fusion(g, ni, mi, "ConvMulFusion");
    return EFF_MODIFIED;
}

/* A BatchNormalization the fusions fold: scale, B, mean and var constant,
 * and Y its only output (the training-mode outputs absent). */
static bool bn_foldable(lg_graph *g, const lg_node *bn)
{
    if (bn->input_count < 5)
        return false;
    for (int i = 1; i <= 4; i++)
        if (!lg_constant(g, bn->inputs[i], true))
            return false;
    for (size_t o = 1; o < bn->output_count; o++)
        if (bn->outputs[o][0])
            return false;
    return true;
}

/* BatchNormalization's scale/B/mean/var as arrays folded into
 * alpha = scale / sqrt(var + eps) (scale) and the bias terms. */
static bool bn_arrays(lg_graph *g, const lg_node *bn, ob_array a[4])
{
    for (int i = 0; i < 4; i++)
        memset(&a[i], 0, sizeof a[i]);
    for (int i = 0; i < 4; i++) {
        const cg_tensor_proto *tp = lg_constant(g, bn->inputs[1 + i], true);
        if (!tp || !array_load(tp, &a[i])) {
            for (int k = 0; k < 4; k++)
                array_free(&a[k]);
            return false;
        }
    }
    return true;
}

/* ConvBNFusion (conv_bn_fusion.cc:14-143). */
static ob_effect rule_conv_bn(ob_ctx *c, lg_graph *g, size_t ni)
{
    static const int bn_versions[] = {7, 9, 14, 15};
    size_t bi;
    lg_node *conv = &g->nodes[ni];
    lg_node *bn = conv_next(g, conv, "BatchNormalization", bn_versions, 4, &bi);
    if (!bn || !bn_foldable(g, bn))
        return EFF_NONE;
    /* Apply */
    const cg_attr *eps_attr = lg_attr(bn, "epsilon");
    float eps = 1e-5f;
    if (eps_attr) {
        if (eps_attr->has_type && eps_attr->type != CG_ATTR_FLOAT)
            return EFF_NONE;
        eps = eps_attr->f;
    }
    const cg_tensor_proto *t[4];
    for (int i = 0; i < 4; i++)
        t[i] = lg_constant(g, bn->inputs[1 + i], true);
    const cg_tensor_proto *w = lg_constant(g, conv->inputs[1], true);
    for (int i = 0; i < 4; i++)
        if (!is_float_type(t[i]->data_type) || t[i]->rank != 1 ||
            t[i]->dims[0] != t[0]->dims[0] || t[i]->data_type != t[0]->data_type)
            return EFF_NONE;
    if (!is_float_type(w->data_type) || w->data_type != t[0]->data_type || w->rank <= 2 ||
        w->dims[0] != t[0]->dims[0])
        return EFF_NONE;
    const cg_tensor_proto *cb = conv_has_bias(conv) ? lg_constant(g, conv->inputs[2], true) : NULL;
    if (cb && (!is_float_type(cb->data_type) || cb->rank != 1 || cb->dims[0] != t[1]->dims[0] ||
               cb->data_type != t[1]->data_type))
        return EFF_NONE;
    ob_array a[4], wa, ba;
    memset(&ba, 0, sizeof ba);
    if (!bn_arrays(g, bn, a))
        return EFF_NONE;
    if (!array_load(w, &wa) || (cb && !array_load(cb, &ba))) {
        for (int k = 0; k < 4; k++)
            array_free(&a[k]);
        array_free(&wa);
        return EFF_NONE;
    }
    int64_t ch = a[0].numel;
    for (int64_t k = 0; k < ch; k++)
        a[0].v[k] /= sqrt(a[3].v[k] + eps); /* scale / sqrt(var + eps) */
    int64_t per = ch ? wa.numel / ch : 0;
    for (int64_t i = 0; i < wa.numel; i++)
        wa.v[i] *= a[0].v[per ? i / per : 0];
    ob_array *bias;
    if (cb) {
        for (int64_t k = 0; k < ch && k < ba.numel; k++)
            ba.v[k] = (ba.v[k] - a[2].v[k]) * a[0].v[k] + a[1].v[k];
        bias = &ba;
    } else {
        for (int64_t k = 0; k < ch; k++)
            a[1].v[k] -= a[2].v[k] * a[0].v[k];
        bias = &a[1];
    }
    char base[256];
    snprintf(base, sizeof base, "ConvBnFusion_W_%s", w->name ? w->name : "");
    bool ok = attach_init(g, ni, 1, array_store(c->m, &wa, lg_fresh_name(g, base)));
    snprintf(base, sizeof base, "ConvBnFusion_BN_B_%s", t[1]->name ? t[1]->name : "");
    ok = ok && attach_init(g, ni, 2, array_store(c->m, bias, lg_fresh_name(g, base)));
    for (int k = 0; k < 4; k++)
        array_free(&a[k]);
    array_free(&wa);
    array_free(&ba);
    if (!ok)
        return EFF_NONE;
    bn = &g->nodes[bi];
    bn->output_count = 1;
    finalize_fusion(g, ni, bi, "ConvBNFusion");
    return EFF_MODIFIED;
}

/* VerifyNotCastChild (pad_fusion.cc:10-48). */
static bool pad_child_ok(const lg_node *child)
{
    static const int conv_v[] = {1, 11};
    static const int avg_v[] = {7, 10, 11, 19};
    static const int max_v[] = {1, 8, 10, 11, 12};
    if (!lg_is_op_version(child, "Conv", conv_v, 2) &&
        !lg_is_op_version(child, "AveragePool", avg_v, 4) &&
        !lg_is_op_version(child, "MaxPool", max_v, 5))
        return false;
    if (child->output_count > 1)
        return false;
    const char *ap;
    if (lg_attr_string(child, "auto_pad", &ap) && strcmp(ap, "NOTSET") != 0)
        return false;
    if (strcmp(child->op_type, "AveragePool") == 0) {
        const int64_t *pads;
        size_t np;
        bool has_pad = false;
        if (lg_attr_ints(child, "pads", &pads, &np))
            for (size_t i = 0; i < np; i++)
                has_pad |= pads[i] != 0;
        int64_t cip;
        if (has_pad && lg_attr_int(child, "count_include_pad", &cip) && cip == 0)
            return false;
    }
    return true;
}

/* PadFusion (pad_fusion.cc:50-188): a zero constant Pad on the spatial dims
 * moves into the pads of the Conv/pool after it (through an optional Cast). */
static ob_effect rule_pad(ob_ctx *c, lg_graph *g, size_t ni)
{
    lg_node *n = &g->nodes[ni];
    static const int versions[] = {1, 2, 11, 13, 18, 19};
    static const int cast_versions[] = {1, 6, 9, 13};
    if (!lg_is_op_version(n, "Pad", versions, 6) || n->input_count > 3)
        return EFF_NONE;
    const char *mode;
    if (lg_attr_string(n, "mode", &mode) && strcmp(mode, "constant") != 0)
        return EFF_NONE;
    if (n->since >= 11) {
        if (n->input_count < 2 || !lg_constant(g, n->inputs[1], true) ||
            (n->input_count > 2 && n->inputs[2][0] && !lg_constant(g, n->inputs[2], true)))
            return EFF_NONE;
        if (n->input_count > 2 && n->inputs[2][0]) {
            double v;
            const cg_tensor_proto *cv = lg_constant(g, n->inputs[2], true);
            if (!scalar_f64(cv, &v) || v != 0.0)
                return EFF_NONE;
        }
    } else {
        float v;
        if (lg_attr_float(n, "value", &v) && v != 0.0f)
            return EFF_NONE;
    }
    size_t ci;
    lg_node *child = fusion_next(g, n, NULL, NULL, 0, &ci);
    if (!child)
        return EFF_NONE;
    size_t target = ci;
    if (lg_is_op_version(child, "Cast", cast_versions, 4)) {
        lg_node *gc = fusion_next(g, child, NULL, NULL, 0, &target);
        if (!gc || !pad_child_ok(gc))
            return EFF_NONE;
    } else if (!pad_child_ok(child)) {
        return EFF_NONE;
    }
    /* Apply */
    int64_t *pads = NULL;
    size_t np = 0;
    if (n->since >= 11) {
        if (!const_ints(g, n->inputs[1], &pads, &np))
            return EFF_NONE;
    } else {
        const int64_t *pv;
        if (!lg_attr_ints(n, "pads", &pv, &np) || !(pads = malloc((np ? np : 1) * sizeof *pads)))
            return EFF_NONE;
        if (np)
            memcpy(pads, pv, np * sizeof *pads);
    }
    bool ok = np >= 4 && np % 2 == 0 && pads[0] == 0 && pads[1] == 0 && pads[np / 2] == 0 &&
              pads[np / 2 + 1] == 0;
    for (size_t i = 0; ok && i < np; i++)
        ok = pads[i] >= 0;
    if (!ok) {
        free(pads);
        return EFF_NONE;
    }
    lg_node *tn = &g->nodes[target];
    const int64_t *cur;
    size_t ncur = 0;
    size_t spatial = np / 2 - 2;
    int64_t *newp = cg_arena_calloc(c->m->arena, spatial ? 2 * spatial : 1, sizeof *newp);
    if (!newp) {
        free(pads);
        c->m->oom = true;
        return EFF_NONE;
    }
    if (lg_attr_ints(tn, "pads", &cur, &ncur) && ncur == 2 * spatial && ncur)
        memcpy(newp, cur, ncur * sizeof *cur);
    for (size_t k = 0; k < spatial; k++) {
        newp[k] += pads[2 + k];
        newp[k + spatial] += pads[np / 2 + 2 + k];
    }
    free(pads);
    cg_attr a;
    memset(&a, 0, sizeof a);
    a.name = "pads";
    a.type = CG_ATTR_INTS;
    a.has_type = true;
    a.ints = newp;
    a.ints_count = 2 * spatial;
    bool set = lg_set_attr(g, target, &a);
    if (set && strcmp(tn->op_type, "AveragePool") == 0) {
        memset(&a, 0, sizeof a);
        a.name = "count_include_pad";
        a.type = CG_ATTR_INT;
        a.has_type = true;
        a.i = 1;
        a.has_i = true;
        set = lg_set_attr(g, target, &a);
    }
    if (!set) {
        c->m->oom = true;
        return EFF_NONE;
    }
    lg_set_input(g, ci, 0, n->inputs[0]);
    lg_remove(g, ni, "PadFusion", target);
    return EFF_REMOVED;
}

/* MatmulBNFusion (matmul_bn_fusion.cc:17-244): MatMul -> [Reshape|Transpose]* ->
 * BatchNormalization becomes Gemm -> [...] with the BN folded in. */
static ob_effect rule_matmul_bn(ob_ctx *c, lg_graph *g, size_t ni)
{
    lg_node *n = &g->nodes[ni];
    static const int mm_versions[] = {1, 9, 13};
    static const int reshape_v[] = {1, 5, 13, 14, 19};
    static const int tr_v[] = {1, 13};
    static const int bn_v[] = {1, 6, 7, 9, 14, 15};
    if (!lg_is_op_version(n, "MatMul", mm_versions, 3) || n->input_count < 2)
        return EFF_NONE;
    size_t cur = SIZE_MAX;
    lg_node *child = fusion_next(g, n, NULL, NULL, 0, &cur);
    size_t first_child = cur;
    while (child && (lg_is_op_version(child, "Reshape", reshape_v, 5) ||
                     lg_is_op_version(child, "Transpose", tr_v, 2)) &&
           lg_output_edge_count(g, child) == 1)
        child = single_consumer(g, child, &cur);
    if (!child || !lg_is_op_version(child, "BatchNormalization", bn_v, 6) ||
        !bn_foldable(g, child))
        return EFF_NONE;
    size_t bi = cur;
    lg_node *bn = child;
    if (!lg_constant(g, n->inputs[1], true))
        return EFF_NONE;
    lg_type a;
    if (!ob_type(c, g, n->inputs[0], &a) || !a.has_shape || a.rank != 2)
        return EFF_NONE;
    /* Apply */
    const cg_attr *eps_attr = lg_attr(bn, "epsilon");
    if (!eps_attr || (eps_attr->has_type && eps_attr->type != CG_ATTR_FLOAT))
        return EFF_NONE;
    float eps = eps_attr->f;
    const cg_tensor_proto *t[4];
    for (int i = 0; i < 4; i++)
        t[i] = lg_constant(g, bn->inputs[1 + i], true);
    const cg_tensor_proto *b = lg_constant(g, n->inputs[1], true);
    if (!is_float_type(b->data_type) || b->rank != 2)
        return EFF_NONE;
    for (int i = 0; i < 4; i++)
        if (!is_float_type(t[i]->data_type) || t[i]->rank != 1 || t[i]->dims[0] != b->dims[1])
            return EFF_NONE;
    ob_array arr[4], ba;
    if (!bn_arrays(g, bn, arr))
        return EFF_NONE;
    if (!array_load(b, &ba)) {
        for (int k = 0; k < 4; k++)
            array_free(&arr[k]);
        return EFF_NONE;
    }
    int64_t cols = b->dims[1];
    for (int64_t k = 0; k < cols; k++)
        arr[0].v[k] /= sqrt(arr[3].v[k] + eps);
    for (int64_t i = 0; i < ba.numel; i++)
        ba.v[i] *= arr[0].v[cols ? i % cols : 0];
    for (int64_t k = 0; k < cols; k++)
        arr[1].v[k] -= arr[2].v[k] * arr[0].v[k];
    char base[256];
    snprintf(base, sizeof base, "MatMulBnFusion_GemmB_%s", b->name ? b->name : "");
    cg_tensor_proto *nb = array_store(c->m, &ba, lg_fresh_name(g, base));
    cg_tensor_proto *nbias = array_store(c->m, &arr[1], lg_fresh_name(g, "MatMulBnFusion_GemmBias"));
    for (int k = 0; k < 4; k++)
        array_free(&arr[k]);
    array_free(&ba);
    if (!nb || !nbias || !lg_add_init(g, nb) || !lg_add_init(g, nbias))
        return EFF_NONE;
    const char *ins[3] = {n->inputs[0], nb->name, nbias->name};
    size_t k = lg_add_node(g, "Gemm", "", lg_fresh_name(g, "MatMulBnFusion_Gemm"), ins, 3,
                           (const char *const *)n->outputs, n->output_count, NULL, 0);
    if (k == SIZE_MAX)
        return EFF_NONE;
    lg_remove(g, ni, "MatmulBNFusion", k);
    /* the BN's parent (the Gemm, or the last Reshape/Transpose) takes its output */
    bn = &g->nodes[bi];
    size_t parent = first_child == bi ? k : node_index(g, lg_producer(g, bn->inputs[0]));
    bn->output_count = 1;
    finalize_fusion(g, parent, bi, "MatmulBNFusion");
    return EFF_REMOVED;
}

typedef ob_effect (*ob_rule_fn)(ob_ctx *c, lg_graph *g, size_t ni);

typedef struct ob_rule {
    const char *op;
    ob_rule_fn fn;
} ob_rule;

/* GenerateRewriteRules(Level1) (graph_transformer_utils.cc:130-150), in
 * registration order; a node's rules run in this order until one removes it. */
static const ob_rule ob_rules[] = {
    {"Identity", rule_identity},   {"Slice", rule_slice},
    {"Unsqueeze", rule_unsqueeze}, {"Dropout", rule_dropout},
    {"Expand", rule_expand},       {"Cast", rule_cast},
    {"Cast", rule_pre_shape},      {"Add", rule_noop},
    {"Sub", rule_noop},            {"Mul", rule_noop},
    {"Div", rule_noop},            {"Div", rule_div_mul},
    {"Relu", rule_relu_clip},      {"Gemm", rule_gemm_sum},
    {"Gemm", rule_gemm_transpose}, {"Where", rule_not_where},
    {"Conv", rule_conv_add},       {"Conv", rule_conv_mul},
    {"Conv", rule_conv_bn},        {"Pad", rule_pad},
    {"MatMul", rule_matmul_bn}};

/* --- transformers --------------------------------------------------------------------- */

typedef bool (*ob_transform_fn)(ob_ctx *c, lg_graph *g);

/* Applies fn to every body of node n (GraphTransformer::Recurse). */
static bool recurse(ob_ctx *c, lg_graph *g, size_t ni, ob_transform_fn fn)
{
    bool changed = false;
    for (size_t a = 0; a < g->nodes[ni].attr_count; a++) {
        lg_node *n = &g->nodes[ni];
        if (n->bodies && n->bodies[a])
            changed |= fn(c, n->bodies[a]);
    }
    return changed;
}

/* RuleBasedGraphTransformer::ApplyImpl (rule_based_graph_transformer.cc:44-90). */
static bool tf_rules(ob_ctx *c, lg_graph *g)
{
    size_t *order = NULL, count = 0;
    bool changed = false;
    refresh_shapes(c, g);
    if (!lg_topo_order(g, &order, &count)) {
        c->m->oom = true;
        return false;
    }
    for (size_t k = 0; k < count && !c->m->oom; k++) {
        size_t ni = order[k];
        ob_effect eff = EFF_NONE;
        for (size_t r = 0; r < sizeof ob_rules / sizeof ob_rules[0]; r++) {
            lg_node *n = &g->nodes[ni];
            if (n->dead || n->domain[0] || strcmp(n->op_type, ob_rules[r].op) != 0)
                continue;
            ob_effect e = ob_rules[r].fn(c, g, ni);
            if (e != EFF_NONE) {
                changed = true;
                refresh_shapes(c, g);
            }
            if (e > eff)
                eff = e;
            if (e == EFF_REMOVED)
                break;
        }
        if (eff != EFF_REMOVED && !g->nodes[ni].dead)
            changed |= recurse(c, g, ni, tf_rules);
    }
    free(order);
    return changed;
}

/* ConstantSharing (constant_sharing.cc:152-251): small constant
 * initializers of equal dtype, shape and bytes share one. Main graph only. */
typedef struct share_key {
    const cg_tensor_proto *tp;
    int32_t dtype;
    size_t rank;
    int64_t numel;
    uint8_t bytes[8 * 8];
    size_t len;
} share_key;

static bool tensor_bytes(const cg_tensor_proto *tp, uint8_t *out, size_t cap, size_t *len)
{
    cg_value *v = NULL;
    if (cg_value_from_tensor_proto(tp, &v, NULL) != CG_OK)
        return false;
    size_t n = 0;
    bool ok = v->kind == CG_VALUE_TENSOR &&
              cg_tensor_byte_size(v->tensor.dtype, v->tensor.numel, &n) && n <= cap;
    if (ok) {
        memcpy(out, v->tensor.data, n);
        *len = n;
    }
    cg_value_free(v);
    return ok;
}

static bool tf_constant_sharing(ob_ctx *c, lg_graph *g)
{
    bool changed = false;
    share_key *keys = calloc(g->init_count ? g->init_count : 1, sizeof *keys);
    size_t key_count = 0;
    if (!keys) {
        c->m->oom = true;
        return false;
    }
    size_t n_inits = g->init_count;
    for (size_t i = 0; i < n_inits; i++) {
        lg_init *in = &g->inits[i];
        if (in->dead)
            continue;
        const cg_tensor_proto *tp = lg_constant(g, in->name, true);
        const lg_index_entry *e = lg_lookup(g, in->name);
        if (!tp || tp != in->tensor || !e || e->graph_output)
            continue;
        int64_t numel = 1;
        bool ok = tp->rank <= CG_MAX_RANK;
        for (size_t d = 0; ok && d < tp->rank; d++) {
            numel *= tp->dims[d];
            ok = numel <= OB_SHARE_MAX_ELEMS;
        }
        if (!ok || numel <= 0 || numel > OB_SHARE_MAX_ELEMS)
            continue;
        if (!is_number_type(tp->data_type))
            continue;
        if (e->implicit_uses || e->use_count == 0)
            continue;
        share_key k;
        memset(&k, 0, sizeof k);
        k.tp = tp;
        k.dtype = tp->data_type;
        k.rank = tp->rank;
        k.numel = numel;
        if (!tensor_bytes(tp, k.bytes, sizeof k.bytes, &k.len))
            continue;
        size_t match = SIZE_MAX;
        for (size_t j = 0; j < key_count && match == SIZE_MAX; j++)
            if (keys[j].dtype == k.dtype && keys[j].rank == k.rank && keys[j].numel == k.numel &&
                keys[j].len == k.len && memcmp(keys[j].bytes, k.bytes, k.len) == 0 &&
                (tp->rank == 0 ||
                 memcmp(keys[j].tp->dims, tp->dims, tp->rank * sizeof *tp->dims) == 0))
                match = j;
        if (match == SIZE_MAX) {
            keys[key_count++] = k;
            continue;
        }
        const char *shared = keys[match].tp->name;
        const char *old = in->name;
        /* every explicit consumer reads the shared initializer */
        lg_rename_uses(g, old, shared);
        changed = true;
    }
    free(keys);
    return changed;
}

/* --- common subexpression elimination -------------------------------------------------- */

/* Attribute equality of CommonSubexpressionElimination
 * (common_subexpression_elimination.cc: AreEqual, AreScalarTensorAttributeEqual). */
static bool scalar_tensor_attr_eq(const cg_tensor_proto *a, const cg_tensor_proto *b)
{
    if (!a || !b || !a->has_data_type || !b->has_data_type || a->data_type != b->data_type)
        return false;
    if (a->data_type != CG_DTYPE_FLOAT && a->data_type != CG_DTYPE_FLOAT16 &&
        a->data_type != CG_DTYPE_INT64)
        return false;
    if (a->rank != 1 || b->rank != 1 || a->dims[0] != 1 || b->dims[0] != 1 || !a->raw_data.data ||
        !b->raw_data.data)
        return false;
    size_t es = cg_dtype_size((cg_dtype)a->data_type);
    if (a->raw_data.len < es || b->raw_data.len < es)
        return false;
    if (a->data_type == CG_DTYPE_FLOAT) {
        float x, y;
        memcpy(&x, a->raw_data.data, 4);
        memcpy(&y, b->raw_data.data, 4);
        return x == y;
    }
    return memcmp(a->raw_data.data, b->raw_data.data, es) == 0;
}

static bool attr_eq(const cg_attr *a, const cg_attr *b)
{
    if (a == b)
        return true;
    if (a->type != b->type || strcmp(a->name ? a->name : "", b->name ? b->name : "") != 0)
        return false;
    switch (a->type) {
    case CG_ATTR_FLOAT: return a->f == b->f;
    case CG_ATTR_INT: return a->i == b->i;
    case CG_ATTR_STRING:
        return a->s.len == b->s.len && (a->s.len == 0 || memcmp(a->s.data, b->s.data, a->s.len) == 0);
    case CG_ATTR_FLOATS:
        if (a->floats_count != b->floats_count)
            return false;
        for (size_t i = 0; i < a->floats_count; i++)
            if (a->floats[i] != b->floats[i])
                return false;
        return true;
    case CG_ATTR_INTS:
        return a->ints_count == b->ints_count &&
               (a->ints_count == 0 || memcmp(a->ints, b->ints, a->ints_count * sizeof *a->ints) == 0);
    case CG_ATTR_STRINGS:
        if (a->strings_count != b->strings_count)
            return false;
        for (size_t i = 0; i < a->strings_count; i++)
            if (a->strings[i].len != b->strings[i].len ||
                (a->strings[i].len &&
                 memcmp(a->strings[i].data, b->strings[i].data, a->strings[i].len) != 0))
                return false;
        return true;
    case CG_ATTR_TENSOR: return scalar_tensor_attr_eq(a->t, b->t);
    default: return false;
    }
}

/* NodeAttributes is a map: compare as sets keyed by name. */
static bool attrs_eq(const lg_node *a, const lg_node *b)
{
    if (a->attr_count != b->attr_count)
        return false;
    for (size_t i = 0; i < a->attr_count; i++) {
        const cg_attr *x = &a->attrs[i];
        const cg_attr *y = lg_attr(b, x->name ? x->name : "");
        if (!y || !attr_eq(x, y))
            return false;
    }
    return true;
}

/* IsNodeSupported (common_subexpression_elimination.cc). */
static bool cse_supported(const lg_node *n)
{
    static const char *const nondet[] = {"RandomUniform", "RandomNormal", "RandomUniformLike",
                                         "RandomNormalLike", "Multinomial", "Dropout"};
    if (n->bodies)
        for (size_t a = 0; a < n->attr_count; a++)
            if (n->bodies[a])
                return false;
    for (size_t a = 0; a < n->attr_count; a++)
        if (n->attrs[a].type == CG_ATTR_GRAPH || n->attrs[a].type == CG_ATTR_GRAPHS)
            return false;
    if (n->domain[0] == '\0')
        return !in_list(n->op_type, nondet, 6) && strcmp(n->op_type, "DequantizeLinear") != 0;
    if (strcmp(n->domain, "com.microsoft") == 0)
        return strcmp(n->op_type, "QuantizeLinear") == 0;
    return false;
}

/* The value a name stands for after CSE: the representative's name. */
typedef struct cse_map {
    cg_strmap index; /* a merged node's output -> index into to */
    const char **to;
    size_t n, cap;
} cse_map;

static const char *cse_resolve(const cse_map *m, const char *name)
{
    size_t i = cg_strmap_get(&m->index, name);
    return i == CG_STRMAP_NONE ? name : m->to[i];
}

static bool cse_put(cse_map *m, const char *from, const char *to)
{
    if (m->n == m->cap) {
        size_t cap = m->cap ? m->cap * 2 : 64;
        const char **t = realloc(m->to, cap * sizeof *t);
        if (!t)
            return false;
        m->to = t;
        m->cap = cap;
    }
    if (!cg_strmap_set(&m->index, from, m->n))
        return false;
    m->to[m->n++] = to;
    return true;
}

/* Two nodes compute the same values: same op, domain, attributes and
 * (equivalent) inputs, trailing omitted inputs ignored. */
static bool cse_same(const cse_map *m, const lg_node *a, const lg_node *b)
{
    if (strcmp(a->op_type, b->op_type) != 0 || strcmp(a->domain, b->domain) != 0 ||
        a->output_count != b->output_count)
        return false;
    size_t na = a->input_count, nb = b->input_count;
    while (na && !a->inputs[na - 1][0])
        na--;
    while (nb && !b->inputs[nb - 1][0])
        nb--;
    if (na != nb)
        return false;
    for (size_t i = 0; i < na; i++)
        if (strcmp(cse_resolve(m, a->inputs[i]), cse_resolve(m, b->inputs[i])) != 0)
            return false;
    return attrs_eq(a, b);
}

static uint64_t cse_hash(const cse_map *m, const lg_node *n)
{
    uint64_t h = 1469598103934665603ull;
    const char *parts[2] = {n->op_type, n->domain};
    for (int p = 0; p < 2; p++)
        for (const char *s = parts[p]; *s; s++)
            h = (h ^ (unsigned char)*s) * 1099511628211ull;
    size_t na = n->input_count;
    while (na && !n->inputs[na - 1][0])
        na--;
    for (size_t i = 0; i < na; i++) {
        for (const char *s = cse_resolve(m, n->inputs[i]); *s; s++)
            h = (h ^ (unsigned char)*s) * 1099511628211ull;
        h = (h ^ 0xff) * 1099511628211ull;
    }
    return h;
}

/* CommonSubexpressionElimination::ApplyImpl (common_subexpression_elimination.cc). */
static bool tf_cse(ob_ctx *c, lg_graph *g)
{
    bool changed = false;
    size_t *order = NULL, count = 0;
    if (!lg_topo_order(g, &order, &count)) {
        c->m->oom = true;
        return false;
    }
    cse_map map = {0};
    size_t *reps = malloc((count ? count : 1) * sizeof *reps);
    uint64_t *hashes = malloc((count ? count : 1) * sizeof *hashes);
    size_t rep_count = 0;
    if (!reps || !hashes) {
        free(order);
        free(reps);
        free(hashes);
        c->m->oom = true;
        return false;
    }
    for (size_t k = 0; k < count && !c->m->oom; k++) {
        size_t ni = order[k];
        changed |= recurse(c, g, ni, tf_cse);
        lg_node *n = &g->nodes[ni];
        if (!cse_supported(n))
            continue;
        uint64_t h = cse_hash(&map, n);
        size_t match = SIZE_MAX;
        for (size_t r = 0; r < rep_count && match == SIZE_MAX; r++)
            if (hashes[r] == h && cse_same(&map, &g->nodes[reps[r]], n))
                match = reps[r];
        if (match == SIZE_MAX) {
            reps[rep_count] = ni;
            hashes[rep_count++] = h;
            continue;
        }
        const lg_node *rep = &g->nodes[match];
        for (size_t o = 0; o < n->output_count; o++)
            if (n->outputs[o][0] && rep->outputs[o][0] &&
                !cse_put(&map, n->outputs[o], rep->outputs[o]))
                c->m->oom = true;
    }
    /* replace: every output of a non-representative that is not a graph output */
    for (size_t k = 0; k < count && !c->m->oom; k++) {
        size_t ni = order[k];
        lg_node *n = &g->nodes[ni];
        if (n->dead)
            continue;
        bool replaced = false;
        for (size_t o = 0; o < n->output_count; o++) {
            const char *out = n->outputs[o];
            if (!out[0])
                continue;
            const char *to = cse_resolve(&map, out);
            if (to == out || strcmp(to, out) == 0 || lg_is_graph_output(g, out))
                continue;
            lg_rename_uses(g, out, to);
            replaced = true;
        }
        if (replaced) {
            changed = true;
            if (lg_output_edge_count(g, n) == 0 && !lg_produces_graph_output(g, n)) {
                /* the representative stands for it */
                size_t rep = SIZE_MAX;
                for (size_t o = 0; o < n->output_count && rep == SIZE_MAX; o++) {
                    lg_node *p = n->outputs[o][0] ? lg_producer(g, cse_resolve(&map, n->outputs[o]))
                                                  : NULL;
                    if (p && p != n)
                        rep = node_index(g, p);
                }
                lg_remove(g, ni, "CommonSubexpressionElimination", rep);
            }
        }
    }
    cg_strmap_free(&map.index);
    free(map.to);
    free(reps);
    free(hashes);
    free(order);
    return changed;
}

/* --- constant folding ---------------------------------------------------------------- */

static const char *const ob_nondeterministic[] = {"RandomUniform", "RandomNormal",
                                                  "RandomUniformLike", "RandomNormalLike",
                                                  "Multinomial", "Dropout"};

/* IsOperationDeterministic (optimizer/utils.cc:274-302). */
static bool deterministic(const lg_node *n)
{
    if (n->domain[0] == '\0')
        return !in_list(n->op_type, ob_nondeterministic, 6);
    if (strcmp(n->domain, "com.microsoft") == 0)
        return strcmp(n->op_type, "QuantizeLinear") == 0 ||
               strcmp(n->op_type, "DequantizeLinear") == 0;
    return false;
}

static bool has_bodies(const lg_node *n)
{
    for (size_t a = 0; n->bodies && a < n->attr_count; a++)
        if (n->bodies[a])
            return true;
    for (size_t a = 0; a < n->attr_count; a++)
        if (n->attrs[a].type == CG_ATTR_GRAPH || n->attrs[a].type == CG_ATTR_GRAPHS)
            return true;
    return false;
}

/* AllNodeInputsAreConstant (graph_utils.cc:634-664). */
static bool inputs_constant(lg_graph *g, const lg_node *n)
{
    if (input_edge_count(g, n) > 0)
        return false;
    for (size_t i = 0; i < n->input_count; i++)
        if (n->inputs[i][0] && !lg_constant(g, n->inputs[i], true))
            return false;
    return true;
}

static bool can_fold(lg_graph *g, const lg_node *n, bool skip_inputs)
{
    return deterministic(n) && !has_bodies(n) && (skip_inputs || inputs_constant(g, n));
}

/* Runs node n alone on the reference kernels with its constant inputs
 * (lg_eval_node); a node they cannot evaluate is noted and left. */
static cg_status fold_eval(ob_ctx *c, lg_graph *g, const lg_node *n, cg_tensor_proto **outs,
                           bool *ok)
{
    char why[CG_ERROR_MSG_MAX];
    cg_status st = lg_eval_node(g, n, outs, ok, why, sizeof why, c->err);
    if (st == CG_OK && !*ok)
        lg_note(c->m, "ConstantFolding: %s '%s' not folded: the reference kernels could not "
                "evaluate it (%s)", n->op_type, n->name, why);
    return st;
}

/* RemoveNodesWithOneOutputBottomUp (graph_utils.cc:849-900). */
static void remove_bottom_up_by(lg_graph *g, size_t start, const char *by)
{
    size_t cap = g->node_count + 1, head = 0, tail = 0;
    size_t *queue = malloc(cap * 4 * sizeof *queue);
    bool *removed = calloc(g->node_count ? g->node_count : 1, sizeof *removed);
    if (!queue || !removed) {
        free(queue);
        free(removed);
        g->model->oom = true;
        return;
    }
    queue[tail++] = start;
    while (head < tail) {
        size_t cur = queue[head++];
        if (removed[cur])
            continue;
        lg_node *n = &g->nodes[cur];
        if (n->dead || lg_output_edge_count(g, n) > 1 || lg_produces_graph_output(g, n))
            continue;
        for (size_t i = 0; i < n->input_count; i++) {
            const char *in = n->inputs[i];
            if (!in[0] || lg_initializer(g, in, true) || lg_is_graph_input(g, in))
                continue;
            lg_node *p = lg_producer(g, in);
            if (p && tail < cap * 4)
                queue[tail++] = node_index(g, p);
        }
        if (cur == start || lg_output_edge_count(g, n) == 0) {
            lg_remove(g, cur, by, SIZE_MAX);
            removed[cur] = true;
        }
    }
    free(queue);
    free(removed);
}

/* Inlines the branch of an If with a constant condition (ConstantFoldIfNode,
 * constant_folding.cc:107-150; Graph::InlineIfSubgraph, graph.cc:4972). */
static bool fold_if(ob_ctx *c, lg_graph *g, size_t ni)
{
    lg_node *n = &g->nodes[ni];
    if (n->input_count < 1)
        return false;
    const cg_tensor_proto *cond = lg_constant(g, n->inputs[0], true);
    double v;
    if (!cond || !scalar_f64(cond, &v))
        return false;
    const char *want = v != 0.0 ? "then_branch" : "else_branch";
    lg_graph *b = NULL;
    for (size_t a = 0; a < n->attr_count; a++)
        if (n->bodies && n->bodies[a] && n->attrs[a].name && strcmp(n->attrs[a].name, want) == 0)
            b = n->bodies[a];
    if (!b || b->output_count != n->output_count)
        return false;
    /* every branch output must be made inside the branch */
    for (size_t o = 0; o < b->output_count; o++) {
        const lg_index_entry *e = lg_lookup(b, b->outputs[o]);
        if (!e || (e->producer == SIZE_MAX && e->init == SIZE_MAX)) {
            lg_note(c->m, "ConstantFolding: If '%s' not inlined: its %s returns an outer value",
                    n->name, want);
            return false;
        }
    }
    /* names local to the branch get fresh names in g; outputs become the If's */
    cse_map ren = {0};
    bool ok = true;
    for (size_t o = 0; o < b->output_count && ok; o++)
        ok = cse_put(&ren, b->outputs[o], n->outputs[o]);
    for (size_t i = 0; i < b->init_count && ok; i++) {
        if (b->inits[i].dead)
            continue;
        const char *to = cse_resolve(&ren, b->inits[i].name);
        if (to == b->inits[i].name) {
            char base[256];
            snprintf(base, sizeof base, "_if_%s_%s", want, b->inits[i].name);
            to = lg_fresh_name(g, base);
            ok = to && cse_put(&ren, b->inits[i].name, to);
        }
        cg_tensor_proto *tp = cg_arena_calloc(c->m->arena, 1, sizeof *tp);
        ok = ok && tp;
        if (ok) {
            *tp = *b->inits[i].tensor;
            tp->name = to;
            ok = lg_add_init(g, tp);
        }
    }
    for (size_t k = 0; k < b->node_count && ok; k++) {
        const lg_node *bn = &b->nodes[k];
        if (bn->dead)
            continue;
        for (size_t o = 0; o < bn->output_count && ok; o++) {
            if (!bn->outputs[o][0] || cse_resolve(&ren, bn->outputs[o]) != bn->outputs[o])
                continue;
            char base[256];
            snprintf(base, sizeof base, "_if_%s_%s", want, bn->outputs[o]);
            const char *to = lg_fresh_name(g, base);
            ok = to && cse_put(&ren, bn->outputs[o], to);
        }
    }
    size_t *order = NULL, count = 0;
    ok = ok && lg_topo_order(b, &order, &count);
    for (size_t k = 0; k < count && ok; k++) {
        const lg_node *bn = &b->nodes[order[k]];
        const char **ins = malloc((bn->input_count ? bn->input_count : 1) * sizeof *ins);
        const char **outs = malloc((bn->output_count ? bn->output_count : 1) * sizeof *outs);
        ok = ins && outs;
        for (size_t i = 0; ok && i < bn->input_count; i++)
            ins[i] = bn->inputs[i][0] ? cse_resolve(&ren, bn->inputs[i]) : "";
        for (size_t o = 0; ok && o < bn->output_count; o++)
            outs[o] = bn->outputs[o][0] ? cse_resolve(&ren, bn->outputs[o]) : "";
        size_t nk = ok ? lg_add_node(g, bn->op_type, bn->domain, bn->name, ins, bn->input_count,
                                     outs, bn->output_count, bn->attrs, bn->attr_count)
                       : SIZE_MAX;
        free(ins);
        free(outs);
        ok = nk != SIZE_MAX;
        if (ok) {
            /* the inlined node stands for the If; nested bodies come along
             * (their free names are left as they are: ORT renames them too,
             * but node counts do not depend on it) */
            lg_node *dst = &g->nodes[nk];
            dst->bodies = bn->bodies;
            dst->origins = g->nodes[ni].origins;
            dst->origin_count = g->nodes[ni].origin_count;
            for (size_t a = 0; a < dst->attr_count && dst->bodies; a++)
                if (dst->bodies[a])
                    dst->bodies[a]->parent = g;
            for (size_t o = 0; o < bn->output_count; o++) {
                const lg_type *t = bn->outputs[o][0] ? lg_type_get(b, bn->outputs[o]) : NULL;
                if (t && !lg_type_set(g, dst->outputs[o], t))
                    ok = false;
            }
        }
    }
    free(order);
    cg_strmap_free(&ren.index);
    free(ren.to);
    if (!ok) {
        c->m->oom = true;
        return false;
    }
    lg_remove(g, ni, "ConstantFolding", SIZE_MAX);
    return true;
}

/* ConstantFoldShapeNode (constant_folding.cc:42-104). */
static bool fold_shape(ob_ctx *c, lg_graph *g, size_t ni, cg_tensor_proto **out)
{
    lg_node *n = &g->nodes[ni];
    lg_type t;
    if (n->input_count < 1 || !ob_type(c, g, n->inputs[0], &t) || !all_dims_known(&t))
        return false;
    int64_t start = 0, end = INT64_MAX, rank = t.rank;
    lg_attr_int(n, "start", &start);
    lg_attr_int(n, "end", &end);
    int64_t len = cg_shape_slice(rank, start, end, &start);
    int64_t dims[1] = {len};
    *out = lg_tensor_new(c->m, n->outputs[0], CG_DTYPE_INT64, dims, 1, t.dims + start,
                         (size_t)len * sizeof(int64_t));
    return *out != NULL;
}

/* The DequantizeLinear exception (constant_folding.cc:196-225): fold a DQ
 * only when the whole DQ -> X -> Q unit can be folded. */
static bool dq_unit_foldable(lg_graph *g, const lg_node *dq)
{
    const lg_node *x = fusion_next(g, dq, NULL, NULL, 0, NULL);
    if (!x || x->input_count != 1 || x->output_count != 1)
        return false;
    const lg_node *q = fusion_next(g, x, NULL, NULL, 0, NULL);
    return q && strcmp(q->op_type, "QuantizeLinear") == 0 && can_fold(g, x, true) &&
           can_fold(g, q, true);
}

/* ConstantFolding::ApplyImpl (constant_folding.cc:152-353). */
static bool tf_constant_folding(ob_ctx *c, lg_graph *g)
{
    bool changed = false;
    size_t *order = NULL, count = 0;
    refresh_shapes(c, g);
    if (!lg_topo_order(g, &order, &count)) {
        c->m->oom = true;
        return false;
    }
    for (size_t k = 0; k < count && !c->m->oom && !c->failed; k++) {
        size_t ni = order[k];
        if (g->nodes[ni].dead)
            continue;
        changed |= recurse(c, g, ni, tf_constant_folding);
        lg_node *n = &g->nodes[ni];
        if (n->domain[0] == '\0' && strcmp(n->op_type, "If") == 0) {
            if (fold_if(c, g, ni)) {
                changed = true;
                refresh_shapes(c, g);
            }
            continue;
        }
        cg_tensor_proto *single = NULL;
        cg_tensor_proto **outs = &single;
        bool folded = false;
        if (n->domain[0] == '\0' && strcmp(n->op_type, "Shape") == 0) {
            folded = fold_shape(c, g, ni, &single);
        } else {
            if (!can_fold(g, n, false))
                continue;
            if (strcmp(n->op_type, "DequantizeLinear") == 0 && !dq_unit_foldable(g, n))
                continue;
            if (!cpu_kernel_exists(g, n))
                continue;
            outs = calloc(n->output_count ? n->output_count : 1, sizeof *outs);
            if (!outs) {
                c->m->oom = true;
                break;
            }
            if (fold_eval(c, g, n, outs, &folded) != CG_OK) {
                c->failed = true;
                free(outs);
                break;
            }
        }
        n = &g->nodes[ni];
        if (folded) {
            for (size_t o = 0; o < n->output_count; o++)
                if (outs[o] && !lg_add_init(g, outs[o]))
                    folded = false;
        }
        if (outs != &single)
            free(outs);
        if (!folded)
            continue;
        /* inputs' single-output chains that only fed this node go too */
        for (size_t i = 0; i < n->input_count; i++) {
            lg_node *p = n->inputs[i][0] ? lg_producer(g, n->inputs[i]) : NULL;
            if (p && !p->dead)
                remove_bottom_up_by(g, node_index(g, p), "ConstantFolding");
        }
        lg_remove(g, ni, "ConstantFolding", SIZE_MAX);
        changed = true;
        refresh_shapes(c, g);
    }
    free(order);
    return changed;
}

/* --- MatMulAddFusion ------------------------------------------------------------------ */

/* AttentionPatternCache::IsAttentionPattern (matmul_add_fusion.cc:17-60). */
static bool attention_pattern(lg_graph *g, const lg_node *matmul, const lg_node *add)
{
    (void)add;
    lg_node *ln = lg_producer(g, matmul->inputs[0]);
    if (!ln || strcmp(ln->op_type, "LayerNormalization") != 0)
        return false;
    const lg_index_entry *e = lg_lookup(g, ln->outputs[0]);
    if (!e)
        return false;
    size_t adds = 0, mms = 0, shapes = 0, edges = lg_output_edge_count(g, ln);
    const lg_node *ln_add = NULL;
    for (size_t u = 0; u < e->use_count; u++) {
        const lg_node *cn = &g->nodes[e->uses[u].node];
        if (strcmp(cn->op_type, "Add") == 0) {
            ln_add = cn;
            adds++;
        } else if (strcmp(cn->op_type, "MatMul") == 0) {
            mms++;
        } else if (strcmp(cn->op_type, "Shape") == 0) {
            shapes++;
        }
    }
    if (adds == 1 && mms == 3 && edges >= 4 && shapes == edges - 4) {
        size_t idx = strcmp(ln_add->inputs[0], ln->outputs[0]) == 0 ? 1 : 0;
        const lg_node *attn_add = lg_producer(g, ln_add->inputs[idx]);
        return attn_add && strcmp(attn_add->op_type, "Add") == 0;
    }
    return false;
}

/* MatMulAddFusion::ApplyImpl (matmul_add_fusion.cc:64-252): MatMul -> Add
 * becomes Gemm, with Reshapes around it when A is not 2-D. */
static bool tf_matmul_add(ob_ctx *c, lg_graph *g)
{
    bool changed = false;
    size_t *order = NULL, count = 0;
    refresh_shapes(c, g);
    if (!lg_topo_order(g, &order, &count)) {
        c->m->oom = true;
        return false;
    }
    static const int mm_versions[] = {1, 9, 13};
    static const int add_versions[] = {7, 13, 14};
    for (size_t k = 0; k < count && !c->m->oom; k++) {
        size_t ni = order[k];
        if (g->nodes[ni].dead)
            continue;
        changed |= recurse(c, g, ni, tf_matmul_add);
        lg_node *mm = &g->nodes[ni];
        if (!lg_is_op_version(mm, "MatMul", mm_versions, 3) || mm->input_count < 2)
            continue;
        size_t ai;
        lg_node *add = fusion_next(g, mm, "Add", add_versions, 3, &ai);
        if (!add || add->input_count < 2)
            continue;
        int tm = ob_dtype(g, mm->inputs[0]), ta = ob_dtype(g, add->inputs[0]);
        if (tm < 0 || tm != ta ||
            (tm != CG_DTYPE_FLOAT && tm != CG_DTYPE_FLOAT16 && tm != CG_DTYPE_BFLOAT16))
            continue;
        lg_type sa, sb;
        if (!ob_type(c, g, mm->inputs[0], &sa) || !sa.has_shape ||
            !ob_type(c, g, mm->inputs[1], &sb) || !sb.has_shape || sb.rank != 2)
            continue;
        bool need_reshape = sa.rank != 2;
        int64_t m_ = 0, k_ = 0, n_ = 0;
        if (need_reshape) {
            if (attention_pattern(g, mm, add))
                continue;
            if (!all_dims_known(&sa) || !(sb.dim_known & 1u) || !(sb.dim_known & 2u))
                continue;
            m_ = 1;
            for (int d = 0; d + 1 < sa.rank; d++)
                m_ *= sa.dims[d];
            k_ = sb.dims[0];
            n_ = sb.dims[1];
        }
        size_t bias_idx = strcmp(mm->outputs[0], add->inputs[0]) == 0 ? 1 : 0;
        const char *bias = add->inputs[bias_idx];
        lg_type bs;
        if (!ob_type(c, g, bias, &bs) || !bs.has_shape)
            continue;
        bool one0 = (bs.dim_known & 1u) && bs.dims[0] == 1;
        bool one1 = (bs.dim_known & 2u) && bs.dims[1] == 1;
        bool valid = (bs.rank == 1 && dim_eq(&bs, 0, &sb, 1)) ||
                     (!need_reshape && bs.rank == 2 && one0 && dim_eq(&bs, 1, &sb, 1)) ||
                     (!need_reshape && bs.rank == 2 && dim_eq(&bs, 0, &sa, 0) &&
                      (one1 || dim_eq(&bs, 1, &sb, 1)));
        if (!valid)
            continue;
        const char *gemm_in[3] = {mm->inputs[0], mm->inputs[1], bias};
        const char *gemm_out = add->outputs[0];
        const char *add_out = add->outputs[0];
        size_t r_in = SIZE_MAX, r_out = SIZE_MAX;
        char label[256];
        if (need_reshape) {
            int64_t in_shape[2] = {m_, k_};
            int64_t out_shape[CG_MAX_RANK];
            memcpy(out_shape, sa.dims, (size_t)sa.rank * sizeof *out_shape);
            out_shape[sa.rank - 1] = n_;
            int64_t d1[1] = {2}, dn[1] = {sa.rank};
            const char *s_in = lg_fresh_name(g, "gemm_input_shape");
            const char *s_out = lg_fresh_name(g, "gemm_output_shape");
            cg_tensor_proto *t_in = s_in ? lg_tensor_new(c->m, s_in, CG_DTYPE_INT64, d1, 1,
                                                         in_shape, sizeof in_shape)
                                         : NULL;
            cg_tensor_proto *t_out =
                s_out ? lg_tensor_new(c->m, s_out, CG_DTYPE_INT64, dn, 1, out_shape,
                                      (size_t)sa.rank * sizeof *out_shape)
                      : NULL;
            const char *a_in = lg_fresh_name(g, "gemm_input_reshape_arg");
            const char *a_out = lg_fresh_name(g, "gemm_output_reshape_arg");
            if (!t_in || !t_out || !a_in || !a_out || !lg_add_init(g, t_in) ||
                !lg_add_init(g, t_out))
                break;
            const char *ri[2] = {mm->inputs[0], s_in};
            snprintf(label, sizeof label, "gemm_input_reshape");
            r_in = lg_add_node(g, "Reshape", "", lg_fresh_name(g, label), ri, 2, &a_in, 1, NULL,
                               0);
            const char *ro[2] = {a_out, s_out};
            snprintf(label, sizeof label, "gemm_output_reshape");
            r_out = lg_add_node(g, "Reshape", "", lg_fresh_name(g, label), ro, 2, &add_out, 1,
                                NULL, 0);
            if (r_in == SIZE_MAX || r_out == SIZE_MAX)
                break;
            lg_type t;
            memset(&t, 0, sizeof t);
            t.has_dtype = true;
            t.dtype = tm;
            t.has_shape = true;
            t.rank = 2;
            t.dims[0] = m_;
            t.dims[1] = k_;
            t.dim_known = 3u;
            lg_type_set(g, a_in, &t);
            t.dims[1] = n_;
            lg_type_set(g, a_out, &t);
            gemm_in[0] = a_in;
            gemm_out = a_out;
        }
        mm = &g->nodes[ni];
        snprintf(label, sizeof label, "%s/MatMulAddFusion", mm->name);
        size_t gk = lg_add_node(g, "Gemm", "", label, gemm_in, 3, &gemm_out, 1, NULL, 0);
        if (gk == SIZE_MAX)
            break;
        if (r_in != SIZE_MAX) {
            lg_add_origins(g, r_in, ni);
            lg_add_origins(g, r_out, ni);
            lg_add_origins(g, r_in, ai);
            lg_add_origins(g, r_out, ai);
        }
        lg_remove(g, ni, "MatMulAddFusion", gk);
        lg_remove(g, ai, "MatMulAddFusion", gk);
        changed = true;
        refresh_shapes(c, g);
    }
    free(order);
    return changed;
}

/* --- ReshapeFusion ------------------------------------------------------------------- */

typedef struct ob_edge_spec {
    size_t src, dst;       /* producer output slot, consumer input slot */
    const char *op;
    const int *versions;
    size_t version_count;
} ob_edge_spec;

/* graph_utils::FindPath on input edges (graph_utils.cc:779-829): from node,
 * follow input slot `dst` to a producer of op/version whose output `src`
 * it is, spec by spec. out[i] gets the node index of step i. */
static bool find_input_path(lg_graph *g, size_t node, const ob_edge_spec *spec, size_t n,
                            size_t *out)
{
    size_t cur = node;
    for (size_t k = 0; k < n; k++) {
        const lg_node *cn = &g->nodes[cur];
        if (spec[k].dst >= cn->input_count || !cn->inputs[spec[k].dst][0])
            return false;
        const lg_index_entry *e = lg_lookup(g, cn->inputs[spec[k].dst]);
        if (!e || e->producer == SIZE_MAX || e->producer_out != spec[k].src)
            return false;
        const lg_node *p = &g->nodes[e->producer];
        if (!lg_is_op_version(p, spec[k].op, spec[k].versions, spec[k].version_count))
            return false;
        out[k] = e->producer;
        cur = e->producer;
    }
    return true;
}

/* IsScalar (optimizer/utils.cc:375-384). */
static bool is_scalar(ob_ctx *c, lg_graph *g, const char *name)
{
    lg_type t;
    if (!ob_type(c, g, name, &t) || !t.has_shape)
        return false;
    return t.rank == 0 || (t.rank == 1 && (t.dim_known & 1u) && t.dims[0] == 1);
}

/* IsInitializerWithExpectedValue for int64 (optimizer/utils.cc:101-131). */
static bool init_is_int(ob_ctx *c, lg_graph *g, const char *name, int64_t want)
{
    if (!is_scalar(c, g, name))
        return false;
    const cg_tensor_proto *tp = lg_initializer(g, name, false);
    int64_t v;
    if (!tp || (tp->data_type != CG_DTYPE_INT64 && tp->data_type != CG_DTYPE_INT32) ||
        !lg_tensor_i64(tp, 0, &v))
        return false;
    return v == want;
}

/* AppendTensorFromInitializer (optimizer/utils.cc:164-191), constant required. */
static bool append_init(lg_graph *g, const char *name, int64_t **v, size_t *n, size_t *cap)
{
    const cg_tensor_proto *tp = lg_constant(g, name, true);
    if (!tp || !lg_initializer(g, name, false))
        return false;
    int64_t numel;
    if ((tp->data_type != CG_DTYPE_INT64 && tp->data_type != CG_DTYPE_INT32) ||
        !lg_tensor_numel(tp, &numel) || numel < 0)
        return false;
    for (int64_t i = 0; i < numel; i++) {
        if (*n == *cap) {
            size_t nc = *cap ? *cap * 2 : 16;
            int64_t *grown = realloc(*v, nc * sizeof *grown);
            if (!grown)
                return false;
            *v = grown;
            *cap = nc;
        }
        if (!lg_tensor_i64(tp, i, &(*v)[*n]))
            return false;
        (*n)++;
    }
    return true;
}

/* Unsqueeze axes == [0] (GetAxesFromUnsqueezeNode, reshape_fusion.cc:9-18). */
static bool unsqueeze_axes_zero(lg_graph *g, const lg_node *u)
{
    if (u->since == 1 || u->since == 11) {
        const int64_t *ax;
        size_t na;
        return lg_attr_ints(u, "axes", &ax, &na) && na == 1 && ax[0] == 0;
    }
    if (u->since == 13 && u->input_count > 1) {
        int64_t *ax = NULL;
        size_t na = 0, cap = 0;
        bool ok = append_init(g, u->inputs[1], &ax, &na, &cap) && na == 1 && ax[0] == 0;
        free(ax);
        return ok;
    }
    return false;
}

/* Is_One_Element_Input (reshape_fusion.cc:245-265). */
static bool one_element_input(ob_ctx *c, lg_graph *g, const lg_node *n, size_t i)
{
    lg_type t;
    if (i >= n->input_count || !ob_type(c, g, n->inputs[i], &t) || !all_dims_known(&t))
        return false;
    int64_t size = 1;
    for (int d = 0; d < t.rank; d++)
        size *= t.dims[d];
    return size == 1;
}

/* Match_Shape (reshape_fusion.cc:103-124), without the DistilBert linear
 * subgraph (Match_Linear_Subgraph_1, which needs no shape to match). */
static bool match_shape(ob_ctx *c, lg_graph *g, const lg_node *shape, const char *root)
{
    if (strcmp(shape->inputs[0], root) == 0)
        return true;
    lg_type a, b;
    bool ha = ob_type(c, g, shape->inputs[0], &a) && a.has_shape;
    bool hb = ob_type(c, g, root, &b) && b.has_shape;
    if (ha && hb) {
        if (a.rank != b.rank || a.rank < 1)
            return false;
        for (int d = 0; d < a.rank; d++)
            if (!(a.dim_known & (1u << d)) || !(b.dim_known & (1u << d)) || a.dims[d] != b.dims[d])
                return false;
        return true;
    }
    return false;
}

static const int v_unsq[] = {1, 11, 13}, v_gather[] = {1, 11, 13}, v_shape1[] = {1, 13, 15},
                 v_squeeze[] = {1, 11, 13}, v_slice[] = {1, 11, 13}, v_shape2[] = {1, 13},
                 v_div[] = {7, 13, 14};

/* Match_One_Element_Output_Subgraph_1 (reshape_fusion.cc:131-170):
 * [root] -> Shape -> Gather -> Unsqueeze -> Concat input `index`. */
static bool match_one_element_1(ob_ctx *c, lg_graph *g, const char *root, size_t concat,
                                size_t index, size_t shape_len, bool one_only)
{
    ob_edge_spec path[3] = {{0, index, "Unsqueeze", v_unsq, 3},
                            {0, 0, "Gather", v_gather, 3},
                            {0, 0, "Shape", v_shape1, 3}};
    size_t nodes[3];
    if (!find_input_path(g, concat, path, 3, nodes))
        return false;
    const lg_node *unsq = &g->nodes[nodes[0]], *gather = &g->nodes[nodes[1]],
                  *shape = &g->nodes[nodes[2]];
    if (shape->since == 15) {
        int64_t start = 0, end;
        lg_attr_int(shape, "start", &start);
        if (start != 0 || lg_attr_int(shape, "end", &end))
            return false;
    }
    if (!unsqueeze_axes_zero(g, unsq))
        return false;
    if (one_only && one_element_input(c, g, gather, 1))
        return true;
    if (gather->input_count < 2 || !init_is_int(c, g, gather->inputs[1], (int64_t)shape_len))
        return false;
    return match_shape(c, g, shape, root);
}

/* Match_One_Element_Output_Subgraph_2 (reshape_fusion.cc:176-218):
 * [root] -> Shape -> Slice (one element) -> Squeeze -> input `index` of n. */
static bool match_one_element_2(lg_graph *g, const char *root, size_t n, size_t index)
{
    ob_edge_spec path[3] = {{0, index, "Squeeze", v_squeeze, 3},
                            {0, 0, "Slice", v_slice, 3},
                            {0, 0, "Shape", v_shape2, 2}};
    size_t nodes[3];
    if (!find_input_path(g, n, path, 3, nodes))
        return false;
    const lg_node *slice = &g->nodes[nodes[1]], *shape = &g->nodes[nodes[2]];
    if (strcmp(shape->inputs[0], root) != 0)
        return false;
    int64_t *starts = NULL, *ends = NULL;
    size_t ns = 0, ne = 0, cs = 0, ce = 0;
    if (input_edge_count(g, slice) >= 3) {
        append_init(g, slice->inputs[1], &starts, &ns, &cs);
        append_init(g, slice->inputs[2], &ends, &ne, &ce);
    } else {
        const int64_t *v;
        size_t cnt;
        if (lg_attr_ints(slice, "starts", &v, &cnt) && cnt == 1 &&
            (starts = malloc(sizeof *starts))) {
            starts[0] = v[0];
            ns = 1;
        }
        if (lg_attr_ints(slice, "ends", &v, &cnt) && cnt == 1 && (ends = malloc(sizeof *ends))) {
            ends[0] = v[0];
            ne = 1;
        }
    }
    bool ok = ns == 1 && ne == 1;
    if (ok) {
        int64_t s0 = starts[0], e0 = ends[0];
        ok = (e0 >= INT32_MAX && s0 == -1) || llabs(e0 - s0) == 1;
    }
    free(starts);
    free(ends);
    return ok;
}

/* Is_One_Element_Output_Subgraph (reshape_fusion.cc:267-330). */
static bool one_element_subgraph(ob_ctx *c, lg_graph *g, const char *root, size_t concat,
                                 size_t index, size_t shape_len)
{
    if (one_element_input(c, g, &g->nodes[concat], index) ||
        match_one_element_1(c, g, root, concat, index, shape_len, true))
        return true;
    ob_edge_spec div_path[2] = {{0, index, "Unsqueeze", v_unsq, 3}, {0, 0, "Div", v_div, 3}};
    ob_edge_spec mul_path[2] = {{0, index, "Unsqueeze", v_unsq, 3}, {0, 0, "Mul", v_div, 3}};
    size_t nodes[2], steps = 0;
    if (find_input_path(g, concat, div_path, 2, nodes) ||
        find_input_path(g, concat, mul_path, 2, nodes))
        steps = 2;
    else if (find_input_path(g, concat, div_path, 1, nodes))
        steps = 1;
    else
        return false;
    const lg_node *unsq = &g->nodes[nodes[0]];
    if (!unsqueeze_axes_zero(g, unsq))
        return false;
    if (steps == 1)
        return one_element_input(c, g, unsq, 0) || match_one_element_2(g, root, nodes[0], 0);
    const lg_node *bin = &g->nodes[nodes[1]];
    for (size_t i = 0; i < bin->input_count; i++)
        if (!one_element_input(c, g, bin, i) && !match_one_element_2(g, root, nodes[1], i))
            return false;
    return true;
}

/* ReshapeFusion::Fuse_Subgraph (reshape_fusion.cc:364-455). */
static bool reshape_fuse_subgraph(ob_ctx *c, lg_graph *g, size_t ri)
{
    lg_node *reshape = &g->nodes[ri];
    if (reshape->input_count < 2)
        return false;
    const char *root = reshape->inputs[0];
    lg_node *concat = lg_producer(g, reshape->inputs[1]);
    static const int v_concat[] = {1, 4, 11, 13};
    if (!concat || !lg_is_op_version(concat, "Concat", v_concat, 4))
        return false;
    size_t ci = node_index(g, concat);
    if (lg_produces_graph_output(g, concat) || lg_output_edge_count(g, concat) != 1)
        return false;
    int64_t *shape = NULL;
    size_t n = 0, cap = 0;
    bool ok = true;
    for (size_t i = 0; i < concat->input_count && ok; i++) {
        if (append_init(g, concat->inputs[i], &shape, &n, &cap))
            continue;
        int64_t v;
        if (match_one_element_1(c, g, root, ci, i, n, false))
            v = 0;
        else if (one_element_subgraph(c, g, root, ci, i, n))
            v = -1;
        else {
            ok = false;
            break;
        }
        if (n == cap) {
            size_t nc = cap ? cap * 2 : 16;
            int64_t *grown = realloc(shape, nc * sizeof *grown);
            if (!grown) {
                ok = false;
                c->m->oom = true;
                break;
            }
            shape = grown;
            cap = nc;
        }
        shape[n++] = v;
    }
    size_t minus = 0;
    for (size_t i = 0; ok && i < n; i++)
        minus += shape[i] == -1;
    size_t used;
    ok = ok && minus <= 1 && only_one_output_used(g, concat, &used) && used != SIZE_MAX;
    cg_tensor_proto *tp = NULL;
    if (ok) {
        int64_t dims[1] = {(int64_t)n};
        tp = lg_tensor_new(c->m, concat->outputs[0], CG_DTYPE_INT64, dims, 1, shape,
                           n * sizeof *shape);
        ok = tp != NULL;
    }
    free(shape);
    if (!ok)
        return false;
    /* the producers of the Concat's inputs go while they feed nothing else */
    for (size_t i = 0; i < concat->input_count; i++) {
        lg_node *p = concat->inputs[i][0] ? lg_producer(g, concat->inputs[i]) : NULL;
        if (p && !p->dead)
            remove_bottom_up_by(g, node_index(g, p), "ReshapeFusion");
    }
    lg_remove(g, ci, "ReshapeFusion", SIZE_MAX);
    return lg_add_init(g, tp);
}

/* ReshapeFusion::FuseContiguousReshapes (reshape_fusion.cc:457-500). */
static bool reshape_fuse_contiguous(ob_ctx *c, lg_graph *g, size_t ri)
{
    size_t chain[64];
    size_t len = 1;
    chain[0] = ri;
    lg_type shape;
    memset(&shape, 0, sizeof shape);
    while (len < 64) {
        lg_node *cur = &g->nodes[chain[len - 1]];
        size_t ni;
        lg_node *next = fusion_next(g, cur, NULL, NULL, 0, &ni);
        if (!next || (strcmp(next->op_type, "Reshape") != 0 && strcmp(next->op_type, "Squeeze") != 0 &&
                      strcmp(next->op_type, "Unsqueeze") != 0))
            break;
        lg_type t;
        if (!ob_type(c, g, next->outputs[0], &t) || !all_dims_known(&t))
            break;
        shape = t;
        chain[len++] = ni;
    }
    if (len < 2)
        return false;
    lg_node *first = &g->nodes[chain[0]];
    char base[256];
    snprintf(base, sizeof base, "%s_new_shape", first->name);
    const char *sname = lg_fresh_name(g, base);
    int64_t dims[1] = {shape.rank};
    cg_tensor_proto *tp = sname ? lg_tensor_new(c->m, sname, CG_DTYPE_INT64, dims, 1, shape.dims,
                                                (size_t)shape.rank * sizeof(int64_t))
                                : NULL;
    if (!tp || !lg_add_init(g, tp))
        return false;
    snprintf(base, sizeof base, "%s_new_reshape", first->name);
    const char *ins[2] = {first->inputs[0], sname};
    const lg_node *last = &g->nodes[chain[len - 1]];
    size_t k = lg_add_node(g, "Reshape", "", lg_fresh_name(g, base), ins, 2,
                           (const char *const *)last->outputs, 1, NULL, 0);
    if (k == SIZE_MAX)
        return false;
    for (size_t i = 0; i < len; i++)
        lg_remove(g, chain[i], "ReshapeFusion", k);
    return true;
}

/* ReshapeFusion::ApplyImpl (reshape_fusion.cc:21-55). */
static bool tf_reshape_fusion(ob_ctx *c, lg_graph *g)
{
    bool changed = false;
    size_t *order = NULL, count = 0;
    static const int v_reshape[] = {5, 13, 14};
    refresh_shapes(c, g);
    if (!lg_topo_order(g, &order, &count)) {
        c->m->oom = true;
        return false;
    }
    for (size_t k = 0; k < count && !c->m->oom; k++) {
        size_t ni = order[k];
        if (g->nodes[ni].dead)
            continue;
        changed |= recurse(c, g, ni, tf_reshape_fusion);
        lg_node *r = &g->nodes[ni];
        if (!lg_is_op_version(r, "Reshape", v_reshape, 3))
            continue;
        int64_t allowzero;
        if (lg_attr_int(r, "allowzero", &allowzero) && allowzero != 0)
            continue;
        if (reshape_fuse_subgraph(c, g, ni) || reshape_fuse_contiguous(c, g, ni)) {
            changed = true;
            refresh_shapes(c, g);
        }
    }
    free(order);
    return changed;
}

/* --- graph construction ---------------------------------------------------------------- */

/* ConstantNodeProtoToTensorProto (framework/tensorprotoutils.cc): the
 * tensor a Constant node holds, named after its output. */
static cg_tensor_proto *constant_tensor(ob_ctx *c, const lg_node *n)
{
    lg_model *m = c->m;
    if (n->attr_count != 1 || n->output_count != 1)
        return NULL;
    const cg_attr *a = &n->attrs[0];
    const char *name = n->outputs[0];
    const char *an = a->name ? a->name : "";
    if (strcmp(an, "value") == 0 && a->t) {
        cg_tensor_proto *tp = cg_arena_calloc(m->arena, 1, sizeof *tp);
        if (!tp)
            return NULL;
        *tp = *a->t;
        tp->name = name;
        return tp;
    }
    if (strcmp(an, "sparse_value") == 0 && a->sparse_tensor) {
        cg_value *v = NULL;
        if (cg_value_from_sparse_proto(a->sparse_tensor, CG_DEFAULT_MAX_ALLOC, &v, NULL) != CG_OK)
            return NULL;
        cg_tensor_proto *tp = lg_tensor_from_value(m, v, name);
        cg_value_free(v);
        return tp;
    }
    if (strcmp(an, "value_float") == 0)
        return lg_tensor_new(m, name, CG_DTYPE_FLOAT, NULL, 0, &a->f, sizeof a->f);
    if (strcmp(an, "value_int") == 0)
        return lg_tensor_new(m, name, CG_DTYPE_INT64, NULL, 0, &a->i, sizeof a->i);
    if (strcmp(an, "value_floats") == 0) {
        int64_t d = (int64_t)a->floats_count;
        return lg_tensor_new(m, name, CG_DTYPE_FLOAT, &d, 1, a->floats,
                             a->floats_count * sizeof *a->floats);
    }
    if (strcmp(an, "value_ints") == 0) {
        int64_t d = (int64_t)a->ints_count;
        return lg_tensor_new(m, name, CG_DTYPE_INT64, &d, 1, a->ints,
                             a->ints_count * sizeof *a->ints);
    }
    if (strcmp(an, "value_string") == 0 || strcmp(an, "value_strings") == 0) {
        bool one = strcmp(an, "value_string") == 0;
        int64_t d = one ? 1 : (int64_t)a->strings_count;
        cg_tensor_proto *tp = lg_tensor_new(m, name, CG_DTYPE_STRING, &d, one ? 0 : 1, NULL, 0);
        if (!tp)
            return NULL;
        tp->raw_data.data = NULL;
        if (one) {
            cg_bytes *s = cg_arena_calloc(m->arena, 1, sizeof *s);
            if (!s)
                return NULL;
            *s = a->s;
            tp->string_data = s;
            tp->string_count = 1;
        } else {
            tp->string_data = a->strings;
            tp->string_count = a->strings_count;
        }
        return tp;
    }
    return NULL;
}

/* Graph::Graph (graph.cc:1237-1290): every Constant node of g and its
 * bodies becomes an initializer. */
static void constants_to_initializers(ob_ctx *c, lg_graph *g)
{
    for (size_t ni = 0; ni < g->node_count && !c->m->oom; ni++) {
        lg_node *n = &g->nodes[ni];
        if (n->dead)
            continue;
        for (size_t a = 0; a < n->attr_count; a++)
            if (n->bodies && n->bodies[a])
                constants_to_initializers(c, n->bodies[a]);
        if (!lg_is_op(n, "", "Constant"))
            continue;
        cg_tensor_proto *tp = constant_tensor(c, n);
        if (!tp) {
            lg_note(c->m, "Constant '%s' kept as a node: its value could not be read", n->name);
            continue;
        }
        if (lg_add_init(g, tp))
            lg_remove(g, ni, "Graph (Constant node to initializer)", SIZE_MAX);
    }
}

/* --- notes on what is not replayed ------------------------------------------------------ */

static void count_ops(lg_graph *g, const char *domain, const char *op, size_t *count)
{
    for (size_t ni = 0; ni < g->node_count; ni++) {
        const lg_node *n = &g->nodes[ni];
        if (n->dead)
            continue;
        if (lg_is_op(n, domain, op))
            (*count)++;
        for (size_t a = 0; a < n->attr_count; a++)
            if (n->bodies && n->bodies[a])
                count_ops(n->bodies[a], domain, op, count);
    }
}

static void note_unmodelled(ob_ctx *c)
{
    lg_model *m = c->m;
    size_t n;
    int64_t opset = cg_model_opset(m->source, "");
    n = 0;
    count_ops(m->main, "", "Transpose", &n);
    if (n)
        lg_note(m, "not modelled: ORT's TransposeOptimizer (Level 1) may move or cancel some "
                   "of the %zu Transpose node(s) kept here", n);
    size_t q = 0, dq = 0;
    count_ops(m->main, "", "QuantizeLinear", &q);
    count_ops(m->main, "", "DequantizeLinear", &dq);
    if (q || dq)
        lg_note(m, "not modelled: ORT's QDQ transformers (DoubleQDQPairsRemover, "
                   "QDQPropagation, WeightBiasQuantization, EnsureUniqueDQForNodeUnit) on "
                   "%zu QuantizeLinear / %zu DequantizeLinear node(s)", q, dq);
    n = 0;
    count_ops(m->main, "", "Erf", &n);
    if (n && opset >= 20)
        lg_note(m, "not modelled: ORT's GeluFusion (Level 1 at opset >= 20) on %zu Erf "
                   "node(s)", n);
    n = 0;
    count_ops(m->main, "", "ReduceMean", &n);
    if (n && opset >= 17)
        lg_note(m, "not modelled: ORT's LayerNormFusion (Level 1 at opset >= 17) on %zu "
                   "ReduceMean node(s)", n);
    n = 0;
    count_ops(m->main, "ai.onnx.ml", "LabelEncoder", &n);
    if (n > 1)
        lg_note(m, "not modelled: ORT's LabelEncoderFusion on %zu LabelEncoder nodes", n);
}

/* Records the live ops (all graphs) ORT's CPU EP has no kernel for. */
static void record_cpu_missing(ob_ctx *c, lg_graph *g)
{
    cg_lowered *l = c->m->out;
    for (size_t ni = 0; ni < g->node_count && !c->m->oom; ni++) {
        const lg_node *n = &g->nodes[ni];
        if (n->dead)
            continue;
        for (size_t a = 0; a < n->attr_count && n->bodies; a++)
            if (n->bodies[a])
                record_cpu_missing(c, n->bodies[a]);
        if (cg_ort_cpu_has_kernel(n->domain, n->op_type, (int)n->since))
            continue;
        size_t k = 0;
        while (k < l->cpu_missing_count && !(strcmp(l->cpu_missing[k].op_type, n->op_type) == 0 &&
                                             strcmp(l->cpu_missing[k].domain, n->domain) == 0))
            k++;
        if (k == l->cpu_missing_count) {
            cg_lower_op_count *grown = realloc(l->cpu_missing, (k + 1) * sizeof *grown);
            if (!grown) {
                c->m->oom = true;
                return;
            }
            l->cpu_missing = grown;
            l->cpu_missing[k].domain = n->domain;
            l->cpu_missing[k].op_type = n->op_type;
            l->cpu_missing[k].count = 0;
            l->cpu_missing_count++;
        }
        l->cpu_missing[k].count++;
    }
}

/* --- the lowering -------------------------------------------------------------------------- */

typedef struct ob_step {
    const char *name;
    ob_transform_fn fn;
} ob_step;

/* The Level-1 transformers in registration order (graph_transformer_utils.cc:
 * 214-270); the ones not replayed are left out (see the file comment). */
static const ob_step ob_steps[] = {
    {"Level1_RuleBasedTransformer", tf_rules},
    {"ConstantSharing", tf_constant_sharing},
    {"CommonSubexpressionElimination", tf_cse},
    {"ConstantFolding", tf_constant_folding},
    {"MatMulAddFusion", tf_matmul_add},
    {"ReshapeFusion", tf_reshape_fusion},
};

cg_status cg_lower_ort_basic(lg_model *m, cg_error *err)
{
    ob_ctx c;
    memset(&c, 0, sizeof c);
    c.m = m;
    c.err = err;
    constants_to_initializers(&c, m->main);
    /* the Graph constructor edits the proto it read: that is no "change"
     * to the saved model (see cg_lowered.edited) */
    lg_clear_modified(m->main);
    for (int step = 0; step < OB_MAX_STEPS && !m->oom && !c.failed; step++) {
        bool changed = false;
        for (size_t t = 0; t < sizeof ob_steps / sizeof ob_steps[0] && !m->oom && !c.failed; t++)
            changed |= ob_steps[t].fn(&c, m->main);
        if (!changed)
            break;
    }
    m->out->edited = lg_any_modified(m->main);
    if (!m->oom && !c.failed) {
        note_unmodelled(&c);
        record_cpu_missing(&c, m->main);
    }
    for (size_t i = 0; i < c.opaque_count; i++) {
        free(c.opaque[i]->v);
        cg_strmap_free(&c.opaque[i]->index);
        free(c.opaque[i]);
    }
    free(c.opaque);
    if (c.failed)
        return err && err->status != CG_OK ? err->status : CG_NOMEM;
    if (m->oom)
        return cg_error_set(err, CG_NOMEM, "out of memory lowering the model");
    return CG_OK;
}
