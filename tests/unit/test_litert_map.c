/*
 * The "onnx-to-tflite" lowering (src/lower/onnx_to_tflite.c): the TFLite
 * ops a converter emits for an ONNX graph, one small graph per family of
 * mapping rows, each expectation cited from the converter rule it follows
 * (onnx2tf onnx2tf/ops/<Op>.py; TensorFlow's converter:
 * tensorflow/compiler/mlir/lite/tests/optimize.mlir for fusions), with the
 * map back to the source nodes and the removed list; then ground truth:
 * the ONNX twin of the CNN fixture maps onto exactly the ops of its .tflite
 * (tests/data/tflite/models/cnn.tflite, the same network written as
 * TFLite and validated against LiteRT.js), and the LiteRT profiles declare
 * the lowering so that assign places that graph.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "convgate/assign.h"
#include "convgate/lower.h"
#include "convgate/tflite.h"
#include "ir/walk.h"
#include "testlib.h"

static const cg_target *gpu;

/* Zeros for initializers (the mapping reads shapes, not values). */
static const float zeros[1024];

static cg_tensor_proto *init(cg_model *m, cg_graph *g, const char *name, int rank,
                             const int64_t *dims)
{
    return test_graph_init_f32(m, g, name, rank, dims, zeros);
}

static cg_lowered *lower(const cg_model *m)
{
    cg_lowered *l = NULL;
    cg_error err;
    cg_error_clear(&err);
    EXPECT(cg_lower(m, "onnx-to-tflite", NULL, 0, &l, &err) == CG_OK, "%s", err.msg);
    if (l)
        EXPECT(l->declared_types, "onnx-to-tflite is typed from its declarations");
    return l;
}

/* "CONV_2D,MEAN" for the lowered graph's ops, in order. */
static const char *ops_of(const cg_model *m, char *buf, size_t len)
{
    size_t used = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < m->graph->node_count && used + 1 < len; i++) {
        const cg_node *n = &m->graph->nodes[i];
        int w = snprintf(buf + used, len - used, "%s%s%s%s", i ? "," : "",
                         strcmp(n->domain ? n->domain : "", CG_TFLITE_OPS_DOMAIN) ? n->domain
                                                                                   : "",
                         strcmp(n->domain ? n->domain : "", CG_TFLITE_OPS_DOMAIN) ? ":" : "",
                         n->op_type);
        used += w > 0 && (size_t)w < len - used ? (size_t)w : 0;
    }
    return buf;
}

static void expect_ops(const cg_lowered *l, const char *want, const char *what)
{
    char buf[1024];
    if (l)
        EXPECT(strcmp(ops_of(l->model, buf, sizeof buf), want) == 0, "%s: ops %s, want %s",
               what, buf, want);
}

static const cg_node *node_of(const cg_model *m, const char *op)
{
    for (size_t i = 0; i < m->graph->node_count; i++)
        if (strcmp(m->graph->nodes[i].op_type, op) == 0)
            return &m->graph->nodes[i];
    return NULL;
}

static size_t index_of(const cg_model *m, const char *op)
{
    for (size_t i = 0; i < m->graph->node_count; i++)
        if (strcmp(m->graph->nodes[i].op_type, op) == 0)
            return i;
    return SIZE_MAX;
}

static const char *attr_s(const cg_node *n, const char *name)
{
    static char buf[64];
    const cg_attr *a = n ? cg_node_attr(n, name) : NULL;
    if (!a || a->type != CG_ATTR_STRING)
        return "";
    snprintf(buf, sizeof buf, "%.*s", (int)a->s.len, (const char *)a->s.data);
    return buf;
}

/* Source node names the lowered node op stands for, "a,b". */
static const char *origins_of(const cg_lowered *l, const char *op, char *buf, size_t len)
{
    const size_t *o = NULL;
    size_t n = cg_lowered_origins(l, index_of(l->model, op), &o), used = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < n && used + 1 < len; i++) {
        int w = snprintf(buf + used, len - used, "%s%s", i ? "," : "",
                         l->source->graph->nodes[o[i]].name);
        used += w > 0 && (size_t)w < len - used ? (size_t)w : 0;
    }
    return buf;
}

/* The lowered graph placed on litert-gpu: nodes on the GPU. */
static size_t on_gpu(const cg_lowered *l, char *first_refusal, size_t len)
{
    cg_type_env *types = NULL;
    cg_placement *p = NULL;
    cg_error err;
    cg_error_clear(&err);
    size_t on = 0;
    first_refusal[0] = '\0';
    EXPECT(cg_lowered_types(l, NULL, 0, NULL, &types, &err) == CG_OK, "%s", err.msg);
    EXPECT(types && cg_placement_build(l->model, types, &gpu, 1, &p, &err) == CG_OK, "%s",
           err.msg);
    if (p) {
        on = cg_assign_count_owned(p->main, 0);
        if (p->main->unsupported_count)
            snprintf(first_refusal, len, "%s", p->main->unsupported[0].reason);
    }
    cg_placement_free(p);
    cg_type_env_free(types);
    return on;
}

/* Conv(pads = TF SAME) + BatchNormalization + Relu, GlobalAveragePool,
 * Flatten, Gemm, Softmax: the classifier tail every torchvision CNN has. */
static void test_conv_bn_relu_head(void)
{
    static const int64_t x[4] = {1, 3, 8, 8}, w[4] = {4, 3, 3, 3}, c4[1] = {4},
                         fw[2] = {10, 4}, fb[1] = {10}, y[2] = {1, 10};
    static int64_t pads[4] = {1, 1, 1, 1};
    cg_model *m = test_model_new(13);
    cg_graph *g = m->graph = test_graph_new(m, "head", 8);
    test_graph_input(g, "x", test_type(m, CG_DTYPE_FLOAT, 4, x));
    init(m, g, "w", 4, w);
    init(m, g, "b", 1, c4);
    init(m, g, "scale", 1, c4);
    init(m, g, "shift", 1, c4);
    init(m, g, "mean", 1, c4);
    init(m, g, "var", 1, c4);
    init(m, g, "fw", 2, fw);
    init(m, g, "fb", 1, fb);
    test_node_add_attr(test_node(m, g, "Conv", "conv", "x,w,b", "c"), attr_ints("pads", pads, 4));
    test_node(m, g, "BatchNormalization", "bn", "c,scale,shift,mean,var", "n");
    test_node(m, g, "Relu", "relu", "n", "r");
    test_node(m, g, "GlobalAveragePool", "gap", "r", "p");
    test_node(m, g, "Flatten", "flat", "p", "f");
    cg_node *gemm = test_node(m, g, "Gemm", "fc", "f,fw,fb", "z");
    test_node_add_attr(gemm, attr_int("transB", 1));
    test_node(m, g, "Softmax", "sm", "z", "y");
    test_graph_output(g, "y", test_type(m, CG_DTYPE_FLOAT, 2, y));
    cg_lowered *l = lower(m);
    char buf[256];
    if (l) {
        /* onnx2tf Conv.py: conv2d, SAME when the pads are TF's; the batch norm
         * and the Relu fold into it (optimize.mlir fuseMulIntoConv2d,
         * fuseAddIntoConv2d, fusedConv2dRelu); GlobalAveragePool.py: a mean
         * over H, W; Flatten.py: reshape; Gemm.py: matmul with constant
         * weights -> FULLY_CONNECTED; Softmax.py: softmax */
        expect_ops(l, "CONV_2D,MEAN,RESHAPE,FULLY_CONNECTED,SOFTMAX", "conv head");
        const cg_node *conv = node_of(l->model, "CONV_2D");
        EXPECT(strcmp(attr_s(conv, "padding"), "SAME") == 0, "padding %s", attr_s(conv, "padding"));
        EXPECT(strcmp(attr_s(conv, "fused_activation_function"), "RELU") == 0, "activation %s",
               attr_s(conv, "fused_activation_function"));
        EXPECT(strcmp(origins_of(l, "CONV_2D", buf, sizeof buf), "conv,bn,relu") == 0,
               "CONV_2D stands for %s", buf);
        const cg_lower_removed *r = test_removed(l, "bn");
        EXPECT(r && r->into && strcmp(r->into, "conv") == 0 && strstr(r->by, "folded"),
               "bn: removed %s into %s", r ? r->by : "(no)", r && r->into ? r->into : "-");
        EXPECT(test_removed(l, "relu") && !test_removed(l, "conv") && l->removed_count == 2,
               "removed: %zu", l->removed_count);
        EXPECT(l->added_count == 0, "added %zu", l->added_count);
        const cg_node *mean = node_of(l->model, "MEAN");
        EXPECT(mean && mean->input_count == 2, "MEAN takes its axes as an input");
        /* NHWC: the input as onnx2tf transposes it */
        const cg_type *in = l->model->graph->inputs[0].type;
        EXPECT(in && in->shape && in->shape->rank == 4 && in->shape->dims[1].value == 8 &&
                   in->shape->dims[3].value == 3,
               "input not NHWC");
        char why[512];
        EXPECT(on_gpu(l, why, sizeof why) == 5, "litert-gpu: %s", why);
    }
    cg_lowered_free(l);
    cg_model_free(m);
}

/* Depthwise Conv (group = channels) whose pads are not TF's SAME, then
 * Clip(0, 6): PAD + DEPTHWISE_CONV_2D (VALID) with RELU6 fused. */
static void test_depthwise_pad_relu6(void)
{
    static const int64_t x[4] = {1, 4, 8, 8}, w[4] = {4, 1, 3, 3}, y[4] = {1, 4, 4, 4};
    static int64_t pads[4] = {1, 1, 1, 1}, strides[2] = {2, 2};
    static const float lo = 0, hi = 6;
    cg_model *m = test_model_new(13);
    cg_graph *g = m->graph = test_graph_new(m, "dw", 4);
    test_graph_input(g, "x", test_type(m, CG_DTYPE_FLOAT, 4, x));
    init(m, g, "w", 4, w);
    test_graph_init_f32(m, g, "lo", 0, NULL, &lo);
    test_graph_init_f32(m, g, "hi", 0, NULL, &hi);
    cg_node *c = test_node(m, g, "Conv", "dw", "x,w", "c");
    test_node_add_attr(c, attr_ints("pads", pads, 4));
    test_node_add_attr(c, attr_ints("strides", strides, 2));
    test_node_add_attr(c, attr_int("group", 4));
    test_node(m, g, "Clip", "clip", "c,lo,hi", "y");
    test_graph_output(g, "y", test_type(m, CG_DTYPE_FLOAT, 4, y));
    cg_lowered *l = lower(m);
    if (l) {
        /* onnx2tf Conv.py: group == in channels -> depthwise_conv2d; pads that
         * are not TF's SAME (stride 2: SAME pads 0 before, 1 after) -> tf.pad
         * then VALID; Clip(0, 6) after it: optimize.mlir
         * fusedDepthwiseConv2dRelu6; no bias: prepare_tf.cc ConvertTFConvOp
         * gives it a zero one */
        expect_ops(l, "PAD,DEPTHWISE_CONV_2D", "depthwise");
        const cg_node *dw = node_of(l->model, "DEPTHWISE_CONV_2D");
        EXPECT(strcmp(attr_s(dw, "padding"), "VALID") == 0, "padding %s", attr_s(dw, "padding"));
        EXPECT(strcmp(attr_s(dw, "fused_activation_function"), "RELU6") == 0, "activation %s",
               attr_s(dw, "fused_activation_function"));
        EXPECT(dw && dw->input_count == 3, "a conv without bias gets a zero one");
        EXPECT(l->added_count == 1, "the PAD is added by the conversion: %zu", l->added_count);
        EXPECT(test_removed(l, "clip") && l->removed_count == 1, "removed %zu", l->removed_count);
        char why[512];
        EXPECT(on_gpu(l, why, sizeof why) == 2, "litert-gpu: %s", why);
    }
    cg_lowered_free(l);
    cg_model_free(m);
}

/* Identity, Constant and a node computed only from constants: no ops. */
static void test_no_ops(void)
{
    static const int64_t x[2] = {2, 3}, c[1] = {3};
    cg_model *m = test_model_new(13);
    cg_graph *g = m->graph = test_graph_new(m, "noop", 4);
    test_graph_input(g, "x", test_type(m, CG_DTYPE_FLOAT, 2, x));
    init(m, g, "a", 1, c);
    init(m, g, "b", 1, c);
    test_node(m, g, "Add", "fold", "a,b", "ab");
    test_node(m, g, "Identity", "id", "x", "xi");
    test_node(m, g, "Mul", "mul", "xi,ab", "y");
    test_node(m, g, "Identity", "out", "y", "z");
    test_graph_output(g, "z", test_type(m, CG_DTYPE_FLOAT, 2, x));
    cg_lowered *l = lower(m);
    if (l) {
        /* onnx2tf Identity.py: tf.identity, which the converter drops; the
         * converter folds constant subgraphs */
        expect_ops(l, "MUL", "no ops");
        const cg_lower_removed *f = test_removed(l, "fold"), *id = test_removed(l, "id");
        EXPECT(f && strstr(f->by, "constant-folded"), "fold: %s", f ? f->by : "(kept)");
        EXPECT(id && strstr(id->by, "tf.identity"), "id: %s", id ? id->by : "(kept)");
        EXPECT(test_removed(l, "out") && l->removed_count == 3, "removed %zu", l->removed_count);
        const cg_node *mul = node_of(l->model, "MUL");
        EXPECT(mul && strcmp(mul->inputs[0], "x") == 0, "MUL reads the graph input");
        EXPECT(strcmp(l->model->graph->outputs[0].name, "y") == 0, "output %s",
               l->model->graph->outputs[0].name);
    }
    cg_lowered_free(l);
    cg_model_free(m);
}

/* HardSigmoid, MatMul of two activations, Sigmoid, ReduceMean with axes as
 * an attribute, and an op without a mapping. */
static void test_elementwise_family(void)
{
    static const int64_t x[4] = {1, 2, 4, 4}, m2[3] = {2, 4, 4}, r[4] = {1, 2, 1, 1};
    static int64_t axes[2] = {2, 3};
    cg_model *m = test_model_new(13);
    cg_graph *g = m->graph = test_graph_new(m, "ew", 8);
    test_graph_input(g, "x", test_type(m, CG_DTYPE_FLOAT, 4, x));
    test_graph_input(g, "a", test_type(m, CG_DTYPE_FLOAT, 3, m2));
    test_graph_input(g, "b", test_type(m, CG_DTYPE_FLOAT, 3, m2));
    test_node(m, g, "HardSigmoid", "hs", "x", "h");
    cg_node *rm = test_node(m, g, "ReduceMean", "rm", "h", "y");
    test_node_add_attr(rm, attr_ints("axes", axes, 2));
    test_node(m, g, "MatMul", "mm", "a,b", "ab");
    test_node(m, g, "Sigmoid", "sig", "ab", "s");
    test_node(m, g, "Erf", "erf", "s", "e");
    test_graph_output(g, "y", test_type(m, CG_DTYPE_FLOAT, 4, r));
    test_graph_output(g, "e", test_type(m, CG_DTYPE_FLOAT, 3, m2));
    cg_lowered *l = lower(m);
    if (l) {
        /* onnx2tf HardSigmoid.py: max(0, min(1, alpha x + beta)); ReduceMean.py:
         * reduce_mean -> MEAN, axes [2, 3] of NCHW are [1, 2] of NHWC;
         * MatMul.py: matmul of two activations -> BATCH_MATMUL; Sigmoid.py:
         * sigmoid -> LOGISTIC; Erf: not mapped, refused by name */
        expect_ops(l, "MUL,ADD,MINIMUM,MAXIMUM,MEAN,BATCH_MATMUL,LOGISTIC,onnx:Erf",
                   "elementwise");
        EXPECT(l->removed_count == 0 && l->added_count == 0, "removed %zu, added %zu",
               l->removed_count, l->added_count);
        const cg_node *mean = node_of(l->model, "MEAN");
        const cg_tensor_proto *ax = NULL;
        for (size_t i = 0; mean && i < l->model->graph->initializer_count; i++)
            if (strcmp(l->model->graph->initializers[i].name, mean->inputs[1]) == 0)
                ax = &l->model->graph->initializers[i];
        int32_t v[2] = {0, 0};
        if (ax && ax->raw_data.len == sizeof v)
            memcpy(v, ax->raw_data.data, sizeof v);
        EXPECT(v[0] == 1 && v[1] == 2, "MEAN axes %d,%d, want 1,2 (NHWC)", v[0], v[1]);
        char why[512];
        /* Erf refused by name; of the two GPU partitions left (the five ops
         * after x, BATCH_MATMUL + LOGISTIC) the delegate takes the largest
         * (max_delegated_partitions 1) */
        size_t on = on_gpu(l, why, sizeof why);
        EXPECT(on == 5 && strstr(why, "onnx:Erf"), "litert-gpu: %zu on, refusal %s", on, why);
    }
    cg_lowered_free(l);
    cg_model_free(m);
}

static bool init_i32(const cg_lowered *l, const char *name, int32_t *v, size_t n);

static int64_t version_of(const cg_model *m, const char *op)
{
    const cg_node *n = node_of(m, op);
    return n ? cg_node_attr_int(n, "version", -1) : -1;
}

/* LayerNormalization (opset 17) over the last axis: the ten ops of Keras's
 * layer norm, as onnx2tf LayerNormalization.py writes it
 * (tf.keras.layers.LayerNormalization: tf.nn.moments then
 * tf.nn.batch_normalization), every one on the GPU. */
static void test_layer_norm(void)
{
    static const int64_t x[3] = {1, 6, 16}, d[1] = {16};
    cg_model *m = test_model_new(17);
    cg_graph *g = m->graph = test_graph_new(m, "ln", 2);
    test_graph_input(g, "x", test_type(m, CG_DTYPE_FLOAT, 3, x));
    init(m, g, "gamma", 1, d);
    init(m, g, "beta", 1, d);
    test_node_add_attr(test_node(m, g, "LayerNormalization", "ln", "x,gamma,beta", "y"),
                       attr_float("epsilon", 1e-5f));
    test_graph_output(g, "y", test_type(m, CG_DTYPE_FLOAT, 3, x));
    cg_lowered *l = lower(m);
    if (l) {
        expect_ops(l, "MEAN,SQUARED_DIFFERENCE,MEAN,ADD,RSQRT,MUL,MUL,MUL,SUB,ADD",
                   "layer norm");
        EXPECT(l->removed_count == 0 && l->added_count == 0, "removed %zu, added %zu",
               l->removed_count, l->added_count);
        char buf[64];
        EXPECT(strcmp(origins_of(l, "RSQRT", buf, sizeof buf), "ln") == 0, "RSQRT stands for %s",
               buf);
        const cg_node *last = &l->model->graph->nodes[l->model->graph->node_count - 1];
        EXPECT(strcmp(last->outputs[0], "y") == 0 && strcmp(last->op_type, "ADD") == 0,
               "the last ADD writes y");
        int32_t ax[1] = {0};
        const cg_node *mean = node_of(l->model, "MEAN");
        EXPECT(mean && init_i32(l, mean->inputs[1], ax, 1) && ax[0] == 2, "MEAN axes %d", ax[0]);
        char why[512];
        EXPECT(on_gpu(l, why, sizeof why) == 10, "litert-gpu: %s", why);
    }
    cg_lowered_free(l);
    cg_model_free(m);
}

/* PyTorch's exported GELU, x * 0.5 * (1 + erf(x / sqrt(2))), is one GELU
 * (onnx2tf Div.py's pattern); an Erf outside it stays the ONNX op. */
static void test_gelu(void)
{
    static const int64_t x[2] = {2, 8};
    static const float sqrt2 = 1.4142135381698608f, one = 1.0f, half = 0.5f;
    cg_model *m = test_model_new(13);
    cg_graph *g = m->graph = test_graph_new(m, "gelu", 8);
    test_graph_input(g, "x", test_type(m, CG_DTYPE_FLOAT, 2, x));
    test_graph_init_f32(m, g, "sqrt2", 0, NULL, &sqrt2);
    test_graph_init_f32(m, g, "one", 0, NULL, &one);
    test_graph_init_f32(m, g, "half", 0, NULL, &half);
    test_node(m, g, "Div", "div", "x,sqrt2", "d");
    test_node(m, g, "Erf", "erf", "d", "e");
    test_node(m, g, "Add", "add", "e,one", "a");
    test_node(m, g, "Mul", "mul", "x,a", "p");
    test_node(m, g, "Mul", "mul_half", "p,half", "y");
    test_node(m, g, "Erf", "lone_erf", "y", "z");
    test_graph_output(g, "z", test_type(m, CG_DTYPE_FLOAT, 2, x));
    cg_lowered *l = lower(m);
    if (l) {
        expect_ops(l, "GELU,onnx:Erf", "gelu");
        const cg_node *ge = node_of(l->model, "GELU");
        EXPECT(ge && strcmp(ge->inputs[0], "x") == 0 && strcmp(ge->outputs[0], "y") == 0,
               "GELU(x) writes the pattern's output");
        const cg_lower_removed *e = test_removed(l, "erf");
        EXPECT(e && strstr(e->by, "GELU") && l->removed_count == 4, "removed %zu: %s",
               l->removed_count, e ? e->by : "(erf kept)");
        EXPECT(version_of(l->model, "GELU") == 1, "GELU version %lld",
               (long long)version_of(l->model, "GELU"));
        char why[512];
        EXPECT(on_gpu(l, why, sizeof why) == 1 && strstr(why, "onnx:Erf"), "litert-gpu: %s", why);
    }
    cg_lowered_free(l);
    cg_model_free(m);
}

/* The versions a converter writes (op_version.cc) follow the operands and
 * options: a bilinear Resize with half_pixel centers (ONNX's default) is
 * RESIZE_BILINEAR 3, a MatMul of a rank-3 activation by a constant a
 * FULLY_CONNECTED 5 (keep_num_dims), a ConvTranspose with a bias a
 * TRANSPOSE_CONV 3, a rank-5 broadcasting Sub a SUB 3, a Gather of int8
 * data a GATHER 2, which litert-gpu's GATHER rule (GatherOperationParser:
 * at most 1) refuses by its version, int8 being one of its dtypes. */
static void test_versions(void)
{
    static const int64_t x[4] = {1, 2, 4, 4}, r[4] = {1, 2, 8, 8}, a[3] = {1, 3, 8},
                         w[2] = {8, 5}, f[3] = {1, 3, 5}, tw[4] = {2, 2, 2, 2}, tb[1] = {2},
                         t[4] = {1, 2, 8, 8}, s5[5] = {1, 2, 3, 4, 5}, s1[1] = {5},
                         e[2] = {4, 8}, two[1] = {2}, ge[2] = {2, 8};
    static const int32_t picks[2] = {0, 2};
    static const float scales[4] = {1, 1, 2, 2};
    static int64_t strides[2] = {2, 2};
    cg_model *m = test_model_new(13);
    cg_graph *g = m->graph = test_graph_new(m, "versions", 8);
    test_graph_input(g, "x", test_type(m, CG_DTYPE_FLOAT, 4, x));
    test_graph_input(g, "a", test_type(m, CG_DTYPE_FLOAT, 3, a));
    test_graph_input(g, "v", test_type(m, CG_DTYPE_FLOAT, 5, s5));
    test_graph_input(g, "table", test_type(m, CG_DTYPE_INT8, 2, e));
    /* int32 indices: an initializer retyped, its values as raw data */
    cg_tensor_proto *idx = test_graph_init_f32(m, g, "idx", 1, two, (const float[2]){0, 0});
    idx->data_type = CG_DTYPE_INT32;
    idx->float_data.count = 0;
    idx->raw_data = (cg_bytes){(const uint8_t *)picks, sizeof picks};
    static const int64_t four[1] = {4};
    test_graph_init_f32(m, g, "scales", 1, four, scales);
    init(m, g, "w", 2, w);
    init(m, g, "tw", 4, tw);
    init(m, g, "tb", 1, tb);
    init(m, g, "u", 1, s1);
    test_node_add_attr(test_node(m, g, "Resize", "resize", "x,,scales", "r"),
                       attr_str("mode", "linear"));
    test_node(m, g, "MatMul", "mm", "a,w", "f");
    test_node_add_attr(test_node(m, g, "ConvTranspose", "deconv", "x,tw,tb", "t"),
                       attr_ints("strides", strides, 2));
    test_node(m, g, "Sub", "sub5", "v,u", "s");
    test_node(m, g, "Gather", "gather8", "table,idx", "picked");
    test_graph_output(g, "r", test_type(m, CG_DTYPE_FLOAT, 4, r));
    test_graph_output(g, "f", test_type(m, CG_DTYPE_FLOAT, 3, f));
    test_graph_output(g, "t", test_type(m, CG_DTYPE_FLOAT, 4, t));
    test_graph_output(g, "s", test_type(m, CG_DTYPE_FLOAT, 5, s5));
    test_graph_output(g, "picked", test_type(m, CG_DTYPE_INT8, 2, ge));
    cg_lowered *l = lower(m);
    if (l) {
        expect_ops(l, "RESIZE_BILINEAR,FULLY_CONNECTED,TRANSPOSE_CONV,SUB,GATHER", "versions");
        EXPECT(version_of(l->model, "RESIZE_BILINEAR") == 3 &&
                   version_of(l->model, "FULLY_CONNECTED") == 5 &&
                   version_of(l->model, "TRANSPOSE_CONV") == 3 &&
                   version_of(l->model, "SUB") == 3 && version_of(l->model, "GATHER") == 2,
               "versions: RESIZE_BILINEAR %lld, FULLY_CONNECTED %lld, TRANSPOSE_CONV %lld, SUB %lld, "
               "GATHER %lld",
               (long long)version_of(l->model, "RESIZE_BILINEAR"),
               (long long)version_of(l->model, "FULLY_CONNECTED"),
               (long long)version_of(l->model, "TRANSPOSE_CONV"),
               (long long)version_of(l->model, "SUB"), (long long)version_of(l->model, "GATHER"));
        cg_type_env *types = NULL;
        cg_placement *p = NULL;
        cg_error err;
        cg_error_clear(&err);
        EXPECT(cg_lowered_types(l, NULL, 0, NULL, &types, &err) == CG_OK &&
                   cg_placement_build(l->model, types, &gpu, 1, &p, &err) == CG_OK,
               "%s", err.msg);
        bool by_version = false;
        for (size_t i = 0; p && i < p->main->unsupported_count; i++) {
            const cg_unsupported *u = &p->main->unsupported[i];
            const cg_node *un = &l->model->graph->nodes[u->node];
            by_version = by_version || (strcmp(un->op_type, "GATHER") == 0 &&
                                        strstr(u->reason, "version=2 above the maximum 1"));
        }
        EXPECT(by_version, "litert-gpu refuses GATHER 2 by its version");
        cg_placement_free(p);
        cg_type_env_free(types);
    }
    cg_lowered_free(l);
    cg_model_free(m);
}

/* If: kept as the ONNX op, and the lowering's notes say what a converter
 * writes instead. */
static void test_control_flow_note(void)
{
    static const int64_t x[1] = {4};
    cg_model *m = test_model_new(13);
    cg_graph *g = m->graph = test_graph_new(m, "cf", 4);
    test_graph_input(g, "c", test_type(m, CG_DTYPE_BOOL, 0, NULL));
    test_graph_input(g, "x", test_type(m, CG_DTYPE_FLOAT, 1, x));
    cg_graph *then_g = test_graph_new(m, "then", 1), *else_g = test_graph_new(m, "else", 1);
    test_node(m, then_g, "Neg", "neg", "x", "yt");
    test_graph_output(then_g, "yt", test_type(m, CG_DTYPE_FLOAT, 1, x));
    test_node(m, else_g, "Abs", "abs", "x", "ye");
    test_graph_output(else_g, "ye", test_type(m, CG_DTYPE_FLOAT, 1, x));
    cg_node *n = test_node(m, g, "If", "branch", "c", "y");
    test_node_add_attr(n, attr_graph("then_branch", then_g));
    test_node_add_attr(n, attr_graph("else_branch", else_g));
    test_graph_output(g, "y", test_type(m, CG_DTYPE_FLOAT, 1, x));
    cg_lowered *l = lower(m);
    if (l) {
        expect_ops(l, "onnx:If", "control flow");
        bool said = false;
        for (size_t i = 0; i < l->note_count; i++)
            said = said || (strstr(l->notes[i], "If 'branch'") && strstr(l->notes[i], "an IF") &&
                            strstr(l->notes[i], "subgraphs"));
        EXPECT(said, "the notes say what If becomes (%zu notes)", l->note_count);
        /* only the main graph is lowered: the If is an unmapped op, refused
         * whole, and its bodies are not placed, so no ONNX node ever meets a
         * TFLite-keyed profile */
        cg_type_env *types = NULL;
        cg_placement *p = NULL;
        cg_error err;
        cg_error_clear(&err);
        EXPECT(cg_lowered_types(l, NULL, 0, NULL, &types, &err) == CG_OK &&
                   cg_placement_build(l->model, types, &gpu, 1, &p, &err) == CG_OK,
               "%s", err.msg);
        if (p)
            EXPECT(p->body_count == 0 && cg_assign_count_owned(p->main, 0) == 0 &&
                       p->main->unsupported_count == 1 &&
                       strstr(p->main->unsupported[0].reason,
                              "op onnx:If not in litert-gpu's supported-op list"),
                   "%zu bodies placed, If: %s", p->body_count,
                   p->main->unsupported_count ? p->main->unsupported[0].reason : "on the GPU");
        cg_placement_free(p);
        cg_type_env_free(types);
    }
    cg_lowered_free(l);
    cg_model_free(m);
}

static bool init_i32(const cg_lowered *l, const char *name, int32_t *v, size_t n)
{
    for (size_t i = 0; i < l->model->graph->initializer_count; i++) {
        const cg_tensor_proto *t = &l->model->graph->initializers[i];
        if (strcmp(t->name, name) == 0 && t->raw_data.len == n * sizeof *v) {
            memcpy(v, t->raw_data.data, n * sizeof *v);
            return true;
        }
    }
    return false;
}

/* Slice, Squeeze, and the Shape of a static tensor feeding a Reshape. */
static void test_shape_family(void)
{
    static const int64_t x[3] = {1, 4, 6}, q[2] = {2, 6};
    static int64_t starts[1] = {1}, ends[1] = {3}, axes[1] = {1}, sq[1] = {0};
    cg_model *m = test_model_new(9);
    cg_graph *g = m->graph = test_graph_new(m, "shape", 8);
    test_graph_input(g, "x", test_type(m, CG_DTYPE_FLOAT, 3, x));
    cg_node *sl = test_node(m, g, "Slice", "slice", "x", "s");
    test_node_add_attr(sl, attr_ints("starts", starts, 1));
    test_node_add_attr(sl, attr_ints("ends", ends, 1));
    test_node_add_attr(sl, attr_ints("axes", axes, 1));
    test_node_add_attr(test_node(m, g, "Squeeze", "squeeze", "s", "q"), attr_ints("axes", sq, 1));
    test_node(m, g, "Shape", "shape", "q", "sh");
    test_node(m, g, "Reshape", "reshape", "q,sh", "y");
    test_graph_output(g, "y", test_type(m, CG_DTYPE_FLOAT, 2, q));
    cg_lowered *l = lower(m);
    if (l) {
        /* onnx2tf Slice.py: tf.strided_slice -> STRIDED_SLICE(input, begin,
         * end, strides); Squeeze.py: tf.squeeze, which the converter makes a
         * RESHAPE (optimize.mlir ConvertSqueezeToReshape); the shape of a
         * static tensor folds (TF ShapeOp::fold); Reshape.py: RESHAPE */
        expect_ops(l, "STRIDED_SLICE,RESHAPE,RESHAPE", "shape family");
        const cg_node *ss = node_of(l->model, "STRIDED_SLICE");
        int32_t b[3] = {9, 9, 9}, e[3] = {9, 9, 9};
        EXPECT(ss && ss->input_count == 4 && init_i32(l, ss->inputs[1], b, 3) &&
                   init_i32(l, ss->inputs[2], e, 3),
               "STRIDED_SLICE takes constant begin, end, strides");
        EXPECT(b[0] == 0 && b[1] == 1 && b[2] == 0 && e[0] == 1 && e[1] == 3 && e[2] == 6,
               "begin %d,%d,%d end %d,%d,%d", b[0], b[1], b[2], e[0], e[1], e[2]);
        const cg_lower_removed *r = test_removed(l, "shape");
        EXPECT(r && strstr(r->by, "static") && l->removed_count == 1, "shape: %s",
               r ? r->by : "(kept)");
        char why[512];
        EXPECT(on_gpu(l, why, sizeof why) == 3, "litert-gpu: %s", why);
    }
    cg_lowered_free(l);
    cg_model_free(m);
}

static size_t count_op(const cg_model *m, const char *op)
{
    size_t n = 0;
    for (size_t i = 0; i < m->graph->node_count; i++)
        n += strcmp(m->graph->nodes[i].op_type, op) == 0;
    return n;
}

/* Ground truth: the ONNX twin of the CNN fixture maps onto the same TFLite
 * ops its .tflite has, and all of them go to litert-gpu. */
static void test_twin(void)
{
    const char *data = CG_SOURCE_DIR "/tests/data/tflite";
    char path[512];
    cg_model *src = NULL, *tv = NULL;
    cg_tflite_model *tfl = NULL;
    cg_error err;
    cg_error_clear(&err);
    snprintf(path, sizeof path, "%s/twins/cnn.onnx", data);
    EXPECT(cg_model_load(path, NULL, &src, &err) == CG_OK, "%s", err.msg);
    cg_lowered *l = src ? lower(src) : NULL;
    snprintf(path, sizeof path, "%s/models/cnn.tflite", data);
    EXPECT(cg_tflite_load(path, NULL, &tfl, &err) == CG_OK, "%s", err.msg);
    EXPECT(tfl && cg_tflite_op_model(tfl, &tv, &err) == CG_OK, "%s", err.msg);
    if (l && tv) {
        char a[512], b[512];
        ops_of(l->model, a, sizeof a);
        ops_of(tv, b, sizeof b);
        EXPECT(l->model->graph->node_count == tv->graph->node_count,
               "twin: mapped %s, the .tflite has %s", a, b);
        static const char *const ops[] = {"CONV_2D", "DEPTHWISE_CONV_2D", "MEAN",
                                          "FULLY_CONNECTED", "SOFTMAX", "PAD", "RELU"};
        for (size_t i = 0; i < sizeof ops / sizeof ops[0]; i++)
            EXPECT(count_op(l->model, ops[i]) == count_op(tv, ops[i]),
                   "twin: %zu %s mapped, the .tflite has %zu", count_op(l->model, ops[i]), ops[i],
                   count_op(tv, ops[i]));
        char why[512];
        EXPECT(on_gpu(l, why, sizeof why) == l->model->graph->node_count,
               "twin: not all on litert-gpu: %s", why);
    }
    cg_model_free(tv);
    cg_tflite_free(tfl);
    cg_lowered_free(l);
    cg_model_free(src);
}

/* A model loaded from a .tflite: the runtime partitions the file's own
 * operators, each standing for the IR nodes it was lowered to, none removed
 * (gate 2 on a .tflite then counts what assign on it counts). */
static void test_tflite_file(void)
{
    cg_model *src = NULL, *tv = NULL;
    cg_tflite_model *tfl = NULL;
    cg_error err;
    cg_error_clear(&err);
    const char *path = CG_SOURCE_DIR "/tests/data/tflite/models/cnn.tflite";
    EXPECT(cg_model_load_any(path, NULL, &src, &err) == CG_OK, "%s", err.msg);
    cg_lowered *l = src ? lower(src) : NULL;
    EXPECT(cg_tflite_load(path, NULL, &tfl, &err) == CG_OK, "%s", err.msg);
    EXPECT(tfl && cg_tflite_op_model(tfl, &tv, &err) == CG_OK, "%s", err.msg);
    if (l && tv) {
        char a[512], b[512];
        EXPECT(strcmp(ops_of(l->model, a, sizeof a), ops_of(tv, b, sizeof b)) == 0,
               "lowered %s, the file has %s", a, b);
        EXPECT(l->removed_count == 0 && l->added_count == 0, "removed %zu, added %zu",
               l->removed_count, l->added_count);
        size_t covered = 0;
        for (size_t i = 0; i < l->model->graph->node_count; i++) {
            const size_t *o = NULL;
            covered += cg_lowered_origins(l, i, &o);
        }
        EXPECT(covered == src->graph->node_count, "origins cover %zu of %zu IR nodes", covered,
               src->graph->node_count);
        char why[512];
        EXPECT(on_gpu(l, why, sizeof why) == 6, "litert-gpu: %s", why);
    }
    cg_model_free(tv);
    cg_tflite_free(tfl);
    cg_lowered_free(l);
    cg_model_free(src);
}

/* The LiteRT profiles declare the lowering: assign, gate 2 and the
 * bindings place the converter's ops for them. */
static void test_profiles_declare(const cg_target_registry *reg)
{
    static const char *const names[] = {"litert-gpu", "tflite-xnnpack", "tflm"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        cg_error err;
        cg_error_clear(&err);
        const cg_target *t = cg_target_registry_find(reg, names[i], &err);
        const char *lw = NULL;
        EXPECT(t && cg_lowering_for_targets(&t, 1, &lw, &err) == CG_OK && lw &&
                   strcmp(lw, "onnx-to-tflite") == 0,
               "%s: preprocess %s", names[i], lw ? lw : err.msg);
    }
    /* and so their rules are keyed by the TFLite ops they judge (tflite:OP,
     * and a .tflite's custom ops): an ONNX-keyed rule would never meet a
     * node, since every ONNX graph reaches these targets lowered */
    static const char *const files[] = {"litert-gpu", "tflite-xnnpack", "tflite-micro"};
    for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
        char path[512];
        snprintf(path, sizeof path, CG_SOURCE_DIR "/profiles/%s.json", files[i]);
        json_error_t je;
        json_t *root = json_load_file(path, 0, &je);
        json_t *ops = root ? json_object_get(root, "ops") : NULL;
        EXPECT(ops && json_object_size(ops) > 0, "%s: no ops (%s)", path, je.text);
        const char *key;
        json_t *v;
        json_object_foreach(ops, key, v) {
            (void)v;
            EXPECT(strncmp(key, "tflite:", 7) == 0 || strncmp(key, "tflite.custom:", 14) == 0,
                   "%s: op key '%s' is not a TFLite op", files[i], key);
        }
        json_decref(root);
    }
}

/* ReduceSum at opset 13 takes its axes as an int64 input (ReduceMean and
 * the others from opset 18): a converter reads the constant into the axis
 * list (onnx2tf ReduceSum.py: tf.reduce_sum(axis=...)), so the TFLite SUM
 * gets a constant int32 axes tensor, NHWC for 4-D data, and keep_dims from
 * keepdims; litert-gpu's SUM takes only int32 axes. */
static void test_reduce_axes_input(void)
{
    static const int64_t x[4] = {1, 4, 8, 8}, one[1] = {1}, y[4] = {1, 1, 8, 8};
    static const int64_t axis1 = 1;
    cg_model *m = test_model_new(13);
    cg_graph *g = m->graph = test_graph_new(m, "rsum", 4);
    test_graph_input(g, "x", test_type(m, CG_DTYPE_FLOAT, 4, x));
    test_graph_init_raw(m, g, "axes", CG_DTYPE_INT64, 1, one, &axis1, sizeof axis1);
    test_node(m, g, "Relu", "relu", "x", "r");
    test_node(m, g, "ReduceSum", "sum", "r,axes", "y");
    test_graph_output(g, "y", test_type(m, CG_DTYPE_FLOAT, 4, y));
    cg_lowered *l = lower(m);
    if (l) {
        expect_ops(l, "RELU,SUM", "reduce with axes input");
        const cg_node *sum = node_of(l->model, "SUM");
        const cg_tensor_proto *ax = NULL;
        for (size_t i = 0; sum && sum->input_count == 2 && i < l->model->graph->initializer_count;
             i++)
            if (strcmp(l->model->graph->initializers[i].name, sum->inputs[1]) == 0)
                ax = &l->model->graph->initializers[i];
        int32_t a0 = -1;
        if (ax && ax->raw_data.len == sizeof a0)
            memcpy(&a0, ax->raw_data.data, sizeof a0);
        EXPECT(ax && ax->data_type == CG_DTYPE_INT32 && a0 == 3,
               "SUM axes: constant int32 [3] (channels, NHWC), got %d", a0);
        EXPECT(sum && cg_node_attr_int(sum, "keep_dims", 0) == 1, "keep_dims from keepdims");
        char why[512];
        EXPECT(on_gpu(l, why, sizeof why) == 2, "litert-gpu: %s", why);
    }
    cg_lowered_free(l);
    cg_model_free(m);
}

int main(void)
{
    cg_target_registry *reg = NULL;
    cg_error err;
    cg_error_clear(&err);
    EXPECT(cg_target_registry_load(CG_SOURCE_DIR "/profiles", &reg, &err) == CG_OK, "%s", err.msg);
    gpu = reg ? cg_target_registry_find(reg, "litert-gpu", &err) : NULL;
    EXPECT(gpu, "%s", err.msg);
    if (gpu) {
        test_profiles_declare(reg);
        test_conv_bn_relu_head();
        test_depthwise_pad_relu6();
        test_no_ops();
        test_elementwise_family();
        test_shape_family();
        test_layer_norm();
        test_gelu();
        test_versions();
        test_reduce_axes_input();
        test_control_flow_note();
        test_twin();
        test_tflite_file();
    }
    cg_target_registry_free(reg);
    return test_done("litert_map");
}
