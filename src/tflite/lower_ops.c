/*
 * The operator table of the TFLite lowering (docs/tflite.md, "Running"):
 * one row per builtin, each a function that emits the ONNX (or
 * CG_TFLITE_DOMAIN) nodes computing the operator with TFLite's semantics.
 *
 * Conventions (TFLite's, from tensorflow/lite/kernels and the reference
 * kernels in tensorflow/lite/kernels/internal/reference/):
 *  - images are NHWC, convolution filters OHWI, depthwise filters 1HW(C*M),
 *    transposed-convolution filters OHWI; the NCHW ONNX operators are run
 *    between Transposes (perm 0,3,1,2 in, 0,2,3,1 out) and constant filters
 *    are permuted once, here;
 *  - SAME padding puts the odd pixel after (ONNX SAME_UPPER), with
 *    out = ceil(in / stride); VALID out = floor((in - dilated filter) /
 *    stride) + 1; average pooling counts only the pixels inside;
 *  - a fused activation clamps the op's result (min(max(x, lo), hi)):
 *    a Relu/Clip/Tanh node after it;
 *  - binary ops broadcast like numpy (BroadcastBinaryFunction6DSlow);
 *  - integer (int8/uint8) arithmetic with TFLite's requantization runs in
 *    the CG_TFLITE_DOMAIN kernels; the data-movement ops take quantized
 *    tensors as they are; every other op on a quantized tensor is refused.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tflite/lower.h"

typedef struct lw_rule lw_rule;
typedef cg_status (*lw_op_fn)(lw_scope *s, const lw_rule *r);

enum {
    LW_FLOAT = 0,  /* quantized tensors refused */
    LW_MOVE = 1,   /* moves elements: quantized tensors pass as they are */
    LW_QOWN = 2    /* the function handles quantized tensors itself */
};

struct lw_rule {
    int32_t code;     /* cg_tflite_builtin */
    lw_op_fn fn;
    const char *onnx; /* the ONNX op of the simple rows */
    int quant;
};

static const int64_t TO_NCHW[4] = {0, 3, 1, 2};
static const int64_t TO_NHWC[4] = {0, 2, 3, 1};

/* --- small helpers ----------------------------------------------------------------- */

static bool arity(lw_scope *s, size_t min_in, size_t max_in, size_t min_out)
{
    if (s->op->input_count < min_in || s->op->input_count > max_in ||
        s->op->output_count < min_out) {
        lw_fail(s, CG_INVALID, "has %zu inputs and %zu outputs; the op takes %zu..%zu inputs "
                "and %zu outputs", s->op->input_count, s->op->output_count, min_in, max_in,
                min_out);
        return false;
    }
    for (size_t i = 0; i < min_in; i++)
        if (s->op->inputs[i] < 0) {
            lw_fail(s, CG_INVALID, "its input %zu is omitted (-1) but required", i);
            return false;
        }
    for (size_t i = 0; i < s->op->output_count; i++)
        if (s->op->outputs[i] < 0) {
            lw_fail(s, CG_INVALID, "its output %zu is -1 (outputs cannot be omitted)", i);
            return false;
        }
    return true;
}

/* The op's options when they are the table TFLite reads for it. */
static const cg_tflite_options *opts(const lw_scope *s, int type)
{
    const cg_tflite_options *o = &s->op->options;
    return o->type == type && o->decoded ? o : NULL;
}

static bool need_opts(lw_scope *s, int type, const cg_tflite_options **out)
{
    if ((*out = opts(s, type)) != NULL)
        return true;
    lw_fail(s, CG_INVALID, "has no %s (TFLite cannot run it without them)",
            cg_tflite_options_name(type) ? cg_tflite_options_name(type) : "options");
    return false;
}

static const char *act_name(int act)
{
    switch (act) {
    case CG_TFLITE_ACT_NONE: return "NONE";
    case CG_TFLITE_ACT_RELU: return "RELU";
    case CG_TFLITE_ACT_RELU_N1_TO_1: return "RELU_N1_TO_1";
    case CG_TFLITE_ACT_RELU6: return "RELU6";
    case CG_TFLITE_ACT_TANH: return "TANH";
    case CG_TFLITE_ACT_SIGN_BIT: return "SIGN_BIT";
    default: return NULL;
    }
}

static bool act_ok(lw_scope *s, int act, bool quantized)
{
    if (act == CG_TFLITE_ACT_NONE || act == CG_TFLITE_ACT_RELU ||
        act == CG_TFLITE_ACT_RELU6 || act == CG_TFLITE_ACT_RELU_N1_TO_1 ||
        (act == CG_TFLITE_ACT_TANH && !quantized))
        return true;
    lw_fail(s, CG_UNSUPPORTED, "fused activation %s%s is not lowered",
            act_name(act) ? act_name(act) : "(unknown)", quantized ? " on a quantized op" : "");
    return false;
}

/* y = act(x) (act != NONE) on values of float type dt. */
static void emit_act(lw_scope *s, int act, const char *x, const char *y, cg_dtype dt)
{
    if (act == CG_TFLITE_ACT_RELU) {
        lw_unary(s, "Relu", x, y, "relu");
    } else if (act == CG_TFLITE_ACT_TANH) {
        lw_unary(s, "Tanh", x, y, "tanh");
    } else {
        bool six = act == CG_TFLITE_ACT_RELU6;
        const char *lo = lw_init_scalar(s, "act_min", dt, six ? 0.0 : -1.0);
        const char *hi = lw_init_scalar(s, "act_max", dt, six ? 6.0 : 1.0);
        cg_node *n = lw_node(s, "Clip", NULL, 3, 1, six ? "relu6" : "relu_n1_to_1");
        if (n) {
            n->inputs[0] = x;
            n->inputs[1] = lo;
            n->inputs[2] = hi;
            n->outputs[0] = y;
        }
    }
}

/* The value a main node writes: y itself without activation, else a
 * temporary the activation reads. */
static const char *pre_act(lw_scope *s, int act, const char *y)
{
    return act == CG_TFLITE_ACT_NONE ? y : lw_tmp(s, "pre_activation");
}

static cg_dtype out_dtype(const lw_scope *s)
{
    const cg_tflite_tensor *t = lw_out_t(s, 0);
    return t ? lw_dtype(t) : CG_DTYPE_FLOAT;
}

/* x (NHWC) -> a new NCHW value. */
static const char *to_nchw(lw_scope *s, const char *x, const char *part)
{
    const char *y = lw_tmp(s, part);
    cg_node *n = lw_unary(s, "Transpose", x, y, part);
    lw_attr_ints(s, n, "perm", TO_NCHW, 4);
    return y;
}

/* The NCHW result of a main node, activated and transposed back into y. */
static void finish_nchw(lw_scope *s, const char *pre, int act, const char *y)
{
    const char *a = pre;
    if (act != CG_TFLITE_ACT_NONE) {
        a = lw_tmp(s, "activated");
        emit_act(s, act, pre, a, out_dtype(s));
    }
    cg_node *n = lw_unary(s, "Transpose", a, y, "to_nhwc");
    lw_attr_ints(s, n, "perm", TO_NHWC, 4);
}

/* Constant tensor t permuted, or a Transpose node when it is computed. */
static const char *permuted(lw_scope *s, size_t input, const char *what, const int *perm,
                            int rank)
{
    const cg_tflite_tensor *t = lw_in_t(s, input);
    if (!lw_ok(s))
        return NULL;
    if (t && cg_tflite_tensor_data(s->lw->tm, t).data)
        return lw_init_permuted(s, t, what, perm, rank);
    int64_t p[CG_MAX_RANK];
    for (int i = 0; i < rank; i++)
        p[i] = perm[i];
    const char *y = lw_tmp(s, what);
    cg_node *n = lw_unary(s, "Transpose", lw_in(s, input), y, what);
    lw_attr_ints(s, n, "perm", p, (size_t)rank);
    return y;
}

static bool strides_ok(lw_scope *s, int32_t a, int32_t b, const char *what)
{
    if (a >= 1 && b >= 1)
        return true;
    lw_fail(s, CG_INVALID, "%s %d x %d (must be >= 1)", what, (int)a, (int)b);
    return false;
}

/* --- quantization parameters ------------------------------------------------------ */

/* Checks t's affine quantization: finite positive scales, zero points in
 * its type's range, one per scale (per-tensor: one; per-axis: `channels`
 * along quantized_dimension `axis` when axis >= 0). */
static bool quant_ok(lw_scope *s, const cg_tflite_tensor *t, const char *what, int axis,
                     int64_t channels)
{
    char tl[300];
    const cg_tflite_quant *q = t ? t->quant : NULL;
    if (!lw_ok(s))
        return false;
    if (!q || q->scale_count == 0 || q->details_type != 0) {
        lw_fail(s, CG_INVALID, "its %s is not affine-quantized", what);
        return false;
    }
    if (q->zero_point_count && q->zero_point_count != q->scale_count) {
        lw_fail(s, CG_INVALID, "its %s (%s) has %zu scales and %zu zero points", what,
                lw_tensor_label(s, t, tl, sizeof tl), q->scale_count, q->zero_point_count);
        return false;
    }
    if (q->scale_count > 1) {
        if (axis < 0 || q->quantized_dimension != axis || q->scale_count != (size_t)channels) {
            lw_fail(s, CG_UNSUPPORTED, "its %s (%s) has %zu scales along dimension %d; the op "
                    "takes one scale%s", what, lw_tensor_label(s, t, tl, sizeof tl),
                    q->scale_count, (int)q->quantized_dimension,
                    axis >= 0 ? " or one per output channel" : "");
            return false;
        }
    }
    int64_t lo = t->type == CG_TFLITE_TYPE_UINT8 ? 0 : t->type == CG_TFLITE_TYPE_INT8 ? -128
               : t->type == CG_TFLITE_TYPE_INT16 ? -32768 : INT32_MIN;
    int64_t hi = t->type == CG_TFLITE_TYPE_UINT8 ? 255 : t->type == CG_TFLITE_TYPE_INT8 ? 127
               : t->type == CG_TFLITE_TYPE_INT16 ? 32767 : INT32_MAX;
    for (size_t i = 0; i < q->scale_count; i++) {
        if (!(q->scale[i] > 0) || !isfinite(q->scale[i])) {
            lw_fail(s, CG_INVALID, "its %s (%s) has scale %g", what,
                    lw_tensor_label(s, t, tl, sizeof tl), (double)q->scale[i]);
            return false;
        }
        int64_t z = q->zero_point_count ? q->zero_point[i] : 0;
        if (z < lo || z > hi) {
            lw_fail(s, CG_INVALID, "its %s (%s) has zero point %lld outside %lld..%lld", what,
                    lw_tensor_label(s, t, tl, sizeof tl), (long long)z, (long long)lo,
                    (long long)hi);
            return false;
        }
    }
    return true;
}

/* "<p>_scale" (floats) and "<p>_zero_point" (ints) of a checked tensor; p is
 * one of the prefixes below (attribute names are static strings). */
static void attr_quant(lw_scope *s, cg_node *n, const char *p, const cg_tflite_tensor *t)
{
    static const struct {
        const char *prefix, *scale, *zero_point;
    } names[] = {{"x", "x_scale", "x_zero_point"}, {"w", "w_scale", "w_zero_point"},
                 {"y", "y_scale", "y_zero_point"}, {"a", "a_scale", "a_zero_point"},
                 {"b", "b_scale", "b_zero_point"}};
    const cg_tflite_quant *q = t->quant;
    size_t c = q->scale_count, k = 0;
    while (k + 1 < sizeof names / sizeof names[0] && strcmp(names[k].prefix, p) != 0)
        k++;
    int64_t *zp = calloc(c ? c : 1, sizeof *zp);
    if (!zp) {
        lw_fail(s, CG_NOMEM, "out of memory");
        return;
    }
    for (size_t i = 0; i < c; i++)
        zp[i] = q->zero_point_count ? q->zero_point[i] : 0;
    lw_attr_floats(s, n, names[k].scale, q->scale, c);
    lw_attr_ints(s, n, names[k].zero_point, zp, c);
    free(zp);
}

static bool any_quantized(const lw_scope *s)
{
    for (size_t i = 0; i < s->op->input_count; i++)
        if (lw_quantized(lw_in_t(s, i)))
            return true;
    for (size_t i = 0; i < s->op->output_count; i++)
        if (lw_quantized(lw_out_t(s, i)))
            return true;
    return false;
}

static cg_status refuse_quantized(lw_scope *s)
{
    return lw_fail(s, CG_UNSUPPORTED, "quantized %s (int8/uint8/int16 tensors with scales) is "
                   "not lowered: integer kernels exist for QUANTIZE, DEQUANTIZE, CONV_2D, "
                   "DEPTHWISE_CONV_2D, FULLY_CONNECTED, ADD, MUL and MEAN", s->op_name);
}

/* --- elementwise -------------------------------------------------------------------- */

static cg_status op_unary(lw_scope *s, const lw_rule *r)
{
    if (arity(s, 1, 1, 1))
        lw_unary(s, r->onnx, lw_in(s, 0), lw_out(s, 0), NULL);
    return lw_status(s);
}

static cg_status op_relu6(lw_scope *s, const lw_rule *r)
{
    (void)r;
    if (arity(s, 1, 1, 1))
        emit_act(s, CG_TFLITE_ACT_RELU6, lw_in(s, 0), lw_out(s, 0), out_dtype(s));
    return lw_status(s);
}

static cg_status op_relu_n1_to_1(lw_scope *s, const lw_rule *r)
{
    (void)r;
    if (arity(s, 1, 1, 1))
        emit_act(s, CG_TFLITE_ACT_RELU_N1_TO_1, lw_in(s, 0), lw_out(s, 0), out_dtype(s));
    return lw_status(s);
}

static int binary_act(const lw_scope *s)
{
    static const int types[] = {CG_TFLITE_OPT_AddOptions, CG_TFLITE_OPT_SubOptions,
                                CG_TFLITE_OPT_MulOptions, CG_TFLITE_OPT_DivOptions};
    for (size_t i = 0; i < sizeof types / sizeof types[0]; i++) {
        const cg_tflite_options *o = opts(s, types[i]);
        if (o)
            return o->u.activation.fused_activation_function;
    }
    return CG_TFLITE_ACT_NONE;
}

static cg_status q_binary(lw_scope *s);

/* ADD/SUB/MUL/DIV (fused activation), MAXIMUM, MINIMUM, POW, comparisons,
 * logical ops: numpy broadcasting in both. */
static cg_status op_binary(lw_scope *s, const lw_rule *r)
{
    if (!arity(s, 2, 2, 1))
        return lw_status(s);
    if (r->quant == LW_QOWN && any_quantized(s))
        return q_binary(s);
    int act = binary_act(s);
    if (!act_ok(s, act, false))
        return lw_status(s);
    const char *a = lw_in(s, 0), *b = lw_in(s, 1), *y = lw_out(s, 0);
    const char *pre = pre_act(s, act, y);
    lw_binary(s, r->onnx, a, b, pre, NULL);
    if (act != CG_TFLITE_ACT_NONE)
        emit_act(s, act, pre, y, out_dtype(s));
    return lw_status(s);
}

/* NOT_EQUAL: Not(Equal) (ONNX has no NotEqual). */
static cg_status op_not_equal(lw_scope *s, const lw_rule *r)
{
    (void)r;
    if (!arity(s, 2, 2, 1))
        return lw_status(s);
    const char *eq = lw_tmp(s, "equal");
    const char *in0 = lw_in(s, 0), *in1 = lw_in(s, 1);
    lw_binary(s, "Equal", in0, in1, eq, "equal");
    lw_unary(s, "Not", eq, lw_out(s, 0), NULL);
    return lw_status(s);
}

static cg_status op_square(lw_scope *s, const lw_rule *r)
{
    (void)r;
    if (!arity(s, 1, 1, 1))
        return lw_status(s);
    const char *x = lw_in(s, 0);
    lw_binary(s, "Mul", x, x, lw_out(s, 0), NULL);
    return lw_status(s);
}

/* RSQRT: 1 / sqrt(x) (tensorflow/lite/kernels/elementwise.cc). */
static cg_status op_rsqrt(lw_scope *s, const lw_rule *r)
{
    (void)r;
    if (!arity(s, 1, 1, 1))
        return lw_status(s);
    const char *t = lw_tmp(s, "sqrt");
    lw_unary(s, "Sqrt", lw_in(s, 0), t, "sqrt");
    lw_unary(s, "Reciprocal", t, lw_out(s, 0), NULL);
    return lw_status(s);
}

/* SQUARED_DIFFERENCE: d = a - b; d * d (reference squared_difference). */
static cg_status op_squared_difference(lw_scope *s, const lw_rule *r)
{
    (void)r;
    if (!arity(s, 2, 2, 1))
        return lw_status(s);
    const char *d = lw_tmp(s, "difference");
    const char *in0 = lw_in(s, 0), *in1 = lw_in(s, 1);
    lw_binary(s, "Sub", in0, in1, d, "difference");
    lw_binary(s, "Mul", d, d, lw_out(s, 0), NULL);
    return lw_status(s);
}

/* FLOOR_DIV on floats: floor(a / b). */
static cg_status op_floor_div(lw_scope *s, const lw_rule *r)
{
    (void)r;
    if (!arity(s, 2, 2, 1))
        return lw_status(s);
    if (!cg_dtype_is_float(out_dtype(s)))
        return lw_fail(s, CG_UNSUPPORTED, "FLOOR_DIV on integers (floor division) is not "
                       "lowered");
    const char *q = lw_tmp(s, "quotient");
    const char *in0 = lw_in(s, 0), *in1 = lw_in(s, 1);
    lw_binary(s, "Div", in0, in1, q, "quotient");
    lw_unary(s, "Floor", q, lw_out(s, 0), NULL);
    return lw_status(s);
}

static cg_status op_leaky_relu(lw_scope *s, const lw_rule *r)
{
    (void)r;
    if (!arity(s, 1, 1, 1))
        return lw_status(s);
    const cg_tflite_options *o = opts(s, CG_TFLITE_OPT_LeakyReluOptions);
    cg_node *n = lw_unary(s, "LeakyRelu", lw_in(s, 0), lw_out(s, 0), NULL);
    lw_attr_float(s, n, "alpha", o ? o->u.f : 0.0f);
    return lw_status(s);
}

/* ELU: x < 0 ? exp(x) - 1 : x (alpha 1). */
static cg_status op_elu(lw_scope *s, const lw_rule *r)
{
    (void)r;
    if (arity(s, 1, 1, 1))
        lw_attr_float(s, lw_unary(s, "Elu", lw_in(s, 0), lw_out(s, 0), NULL), "alpha", 1.0f);
    return lw_status(s);
}

static cg_status op_gelu(lw_scope *s, const lw_rule *r)
{
    (void)r;
    if (!arity(s, 1, 1, 1))
        return lw_status(s);
    const cg_tflite_options *o = opts(s, CG_TFLITE_OPT_GeluOptions);
    cg_node *n = lw_unary(s, "Gelu", lw_in(s, 0), lw_out(s, 0), NULL);
    if (o && o->u.b)
        lw_attr_string(s, n, "approximate", "tanh");
    return lw_status(s);
}

/* PRELU: alpha broadcasts to the input (ONNX PRelu's unidirectional rule). */
static cg_status op_prelu(lw_scope *s, const lw_rule *r)
{
    (void)r;
    if (!arity(s, 2, 2, 1))
        return lw_status(s);
    const char *in0 = lw_in(s, 0), *in1 = lw_in(s, 1), *out = lw_out(s, 0);
    lw_binary(s, "PRelu", in0, in1, out, NULL);
    return lw_status(s);
}

/* SOFTMAX over the last axis of exp(beta * (x - max)): a Mul by beta first
 * when beta is not 1. */
static cg_status op_softmax(lw_scope *s, const lw_rule *r)
{
    (void)r;
    if (!arity(s, 1, 1, 1))
        return lw_status(s);
    const cg_tflite_options *o = opts(s, CG_TFLITE_OPT_SoftmaxOptions);
    float beta = o ? o->u.f : 1.0f;
    const char *x = lw_in(s, 0);
    if (!isfinite(beta))
        return lw_fail(s, CG_INVALID, "SOFTMAX beta is %g", (double)beta);
    if (beta != 1.0f) {
        const char *b = lw_init_scalar(s, "beta", out_dtype(s), beta);
        const char *xb = lw_tmp(s, "scaled");
        lw_binary(s, "Mul", x, b, xb, "beta");
        x = xb;
    }
    lw_attr_int(s, lw_unary(s, "Softmax", x, lw_out(s, 0), NULL), "axis", -1);
    return lw_status(s);
}

static cg_status op_log_softmax(lw_scope *s, const lw_rule *r)
{
    (void)r;
    if (arity(s, 1, 1, 1))
        lw_attr_int(s, lw_unary(s, "LogSoftmax", lw_in(s, 0), lw_out(s, 0), NULL), "axis", -1);
    return lw_status(s);
}

static cg_status op_cast(lw_scope *s, const lw_rule *r)
{
    (void)r;
    if (!arity(s, 1, 1, 1))
        return lw_status(s);
    lw_attr_int(s, lw_unary(s, "Cast", lw_in(s, 0), lw_out(s, 0), NULL), "to",
                (int64_t)out_dtype(s));
    return lw_status(s);
}

static cg_status op_add_n(lw_scope *s, const lw_rule *r)
{
    (void)r;
    if (!arity(s, 1, SIZE_MAX, 1))
        return lw_status(s);
    cg_node *n = lw_node(s, "Sum", NULL, s->op->input_count, 1, NULL);
    for (size_t i = 0; n && i < s->op->input_count; i++)
        n->inputs[i] = lw_in(s, i);
    if (n)
        n->outputs[0] = lw_out(s, 0);
    return lw_status(s);
}

/* SELECT_V2 broadcasts like numpy (ONNX Where); SELECT only when the
 * condition has the operands' rank (its rank-1 row selection differs). */
static cg_status op_select(lw_scope *s, const lw_rule *r)
{
    if (!arity(s, 3, 3, 1))
        return lw_status(s);
    if (r->code == CG_TFLITE_OP_SELECT && lw_in_t(s, 0)->rank != lw_in_t(s, 1)->rank)
        return lw_fail(s, CG_UNSUPPORTED, "SELECT with a condition of rank %zu over operands "
                       "of rank %zu (row selection) is not lowered", lw_in_t(s, 0)->rank,
                       lw_in_t(s, 1)->rank);
    cg_node *n = lw_node(s, "Where", NULL, 3, 1, NULL);
    for (size_t i = 0; n && i < 3; i++)
        n->inputs[i] = lw_in(s, i);
    if (n)
        n->outputs[0] = lw_out(s, 0);
    return lw_status(s);
}

/* --- convolutions and matrix products ------------------------------------------------ */

static cg_status q_conv(lw_scope *s, bool depthwise);
static cg_status q_fully_connected(lw_scope *s);

static bool padding_ok(lw_scope *s, int8_t padding)
{
    if (padding == CG_TFLITE_PADDING_SAME || padding == CG_TFLITE_PADDING_VALID)
        return true;
    lw_fail(s, CG_INVALID, "padding %d is neither SAME nor VALID", (int)padding);
    return false;
}

/* The three convolutions. Each reads its own options table; the inputs are
 * (x, filter, bias), TRANSPOSE_CONV's (output shape, filter, x, bias). */
typedef enum { CONV_PLAIN, CONV_DEPTHWISE, CONV_TRANSPOSE } conv_kind;

/* A convolution's options, whichever table they come from (TRANSPOSE_CONV
 * has no dilations: 1 x 1, and its node carries none). */
typedef struct {
    int32_t stride_h, stride_w, dilation_h, dilation_w;
    int8_t padding;
    int act;
} conv_geom;

/* Reads the operator's options into g and checks them: strides and
 * dilations >= 1, SAME or VALID, an activation the float (or, quantized,
 * the integer) kernels apply; else s has failed. */
static bool conv_geom_read(lw_scope *s, conv_kind kind, bool quantized, conv_geom *g)
{
    static const int types[] = {CG_TFLITE_OPT_Conv2DOptions,
                                CG_TFLITE_OPT_DepthwiseConv2DOptions,
                                CG_TFLITE_OPT_TransposeConvOptions};
    const cg_tflite_options *o;
    if (!need_opts(s, types[kind], &o))
        return false;
    if (kind == CONV_PLAIN) {
        const cg_tflite_conv2d_options *c = &o->u.conv2d;
        *g = (conv_geom){c->stride_h, c->stride_w, c->dilation_h_factor, c->dilation_w_factor,
                         c->padding, c->fused_activation_function};
    } else if (kind == CONV_DEPTHWISE) {
        const cg_tflite_depthwise_options *c = &o->u.depthwise;
        *g = (conv_geom){c->stride_h, c->stride_w, c->dilation_h_factor, c->dilation_w_factor,
                         c->padding, c->fused_activation_function};
    } else {
        const cg_tflite_transpose_conv_options *c = &o->u.transpose_conv;
        *g = (conv_geom){c->stride_h, c->stride_w, 1, 1, c->padding,
                         c->fused_activation_function};
    }
    return strides_ok(s, g->stride_h, g->stride_w, "strides") &&
           (kind == CONV_TRANSPOSE || strides_ok(s, g->dilation_h, g->dilation_w, "dilations")) &&
           padding_ok(s, g->padding) && act_ok(s, g->act, quantized);
}

/* The convolutions' prologue: arity, the integer path for quantized
 * tensors (CONV_2D and DEPTHWISE_CONV_2D; TRANSPOSE_CONV refuses them),
 * the options read and checked, the filter's shape recorded. False when
 * the operator is done here (lowered or failed): its result is then
 * lw_status(s). */
static bool conv_begin(lw_scope *s, conv_kind kind, conv_geom *g)
{
    size_t first = kind == CONV_TRANSPOSE; /* the output shape comes first */
    if (!arity(s, 2 + first, 3 + first, 1))
        return false;
    if (any_quantized(s)) {
        if (kind == CONV_TRANSPOSE)
            refuse_quantized(s);
        else
            q_conv(s, kind == CONV_DEPTHWISE);
        return false;
    }
    return conv_geom_read(s, kind, false, g) && lw_static_shape(s, lw_in_t(s, 1), "filter", 4);
}

/* The convolution node (x, w, b) -> y: op_type in domain (NULL: ONNX's). */
static cg_node *conv_node(lw_scope *s, const char *op_type, const char *domain, const char *x,
                          const char *w, const char *b, const char *y)
{
    cg_node *n = lw_node(s, op_type, domain, 3, 1, NULL);
    if (n) {
        n->inputs[0] = x;
        n->inputs[1] = w;
        n->inputs[2] = b;
        n->outputs[0] = y;
    }
    return n;
}

/* The convolutions' epilogue: x to NCHW, the filter permuted (OHWI to OIHW;
 * depthwise 1HW(C*M) to (C*M)1HW; transposed OHWI to IOHW), the Conv or
 * ConvTranspose node with g's strides and either g's dilations, auto_pad
 * and `group` (omitted at 1 except for depthwise, which always states its
 * channel count) or the explicit `pads` and `opad` (output_padding, NULL
 * for none), activated and transposed back into the output. */
static void conv_finish(lw_scope *s, conv_kind kind, const conv_geom *g, int64_t group,
                        const int64_t pads[4], const int64_t opad[2])
{
    static const int oihw[4] = {0, 3, 1, 2}, channels_first[4] = {3, 0, 1, 2};
    bool transposed = kind == CONV_TRANSPOSE;
    const char *xc = to_nchw(s, lw_in(s, transposed ? 2 : 0), "to_nchw");
    const char *wc = permuted(s, 1, transposed ? "filter_iohw" : "filter_oihw",
                              kind == CONV_PLAIN ? oihw : channels_first, 4);
    const char *b = lw_in(s, transposed ? 3 : 2), *y = lw_out(s, 0);
    const char *pre = lw_tmp(s, transposed ? "conv_transpose" : "conv");
    cg_node *n = conv_node(s, transposed ? "ConvTranspose" : "Conv", NULL, xc, wc, b, pre);
    int64_t st[2] = {g->stride_h, g->stride_w}, dl[2] = {g->dilation_h, g->dilation_w};
    lw_attr_ints(s, n, "strides", st, 2);
    if (transposed) {
        lw_attr_ints(s, n, "pads", pads, 4);
        if (opad)
            lw_attr_ints(s, n, "output_padding", opad, 2);
    } else {
        lw_attr_ints(s, n, "dilations", dl, 2);
        lw_attr_string(s, n, "auto_pad",
                       g->padding == CG_TFLITE_PADDING_VALID ? "VALID" : "SAME_UPPER");
        if (group > 1 || kind == CONV_DEPTHWISE)
            lw_attr_int(s, n, "group", group);
    }
    finish_nchw(s, pre, g->act, y);
}

/* CONV_2D: filter OHWI; groups = input channels / filter input channels. */
static cg_status op_conv2d(lw_scope *s, const lw_rule *r)
{
    (void)r;
    conv_geom g;
    if (!conv_begin(s, CONV_PLAIN, &g))
        return lw_status(s);
    const cg_tflite_tensor *x = lw_in_t(s, 0), *w = lw_in_t(s, 1);
    int64_t group = 1;
    if (x->rank == 4 && x->shape[3] > 0 && w->shape[3] > 0 && x->shape[3] != w->shape[3]) {
        if (x->shape[3] % w->shape[3] != 0)
            return lw_fail(s, CG_INVALID, "input has %d channels, the filter %d per group",
                           (int)x->shape[3], (int)w->shape[3]);
        group = x->shape[3] / w->shape[3];
    }
    conv_finish(s, CONV_PLAIN, &g, group, NULL, NULL);
    return lw_status(s);
}

/* DEPTHWISE_CONV_2D: filter [1, H, W, C*M], output channel c*M + m reads
 * input channel c: ONNX Conv with group C and filter [C*M, 1, H, W]. */
static cg_status op_depthwise(lw_scope *s, const lw_rule *r)
{
    (void)r;
    conv_geom g;
    if (!conv_begin(s, CONV_DEPTHWISE, &g))
        return lw_status(s);
    const cg_tflite_tensor *x = lw_in_t(s, 0), *w = lw_in_t(s, 1);
    if (!lw_static_shape(s, x, "input", 4))
        return lw_status(s);
    if (w->shape[0] != 1 || x->shape[3] < 1 || w->shape[3] % x->shape[3] != 0)
        return lw_fail(s, CG_INVALID, "filter [%d, %d, %d, %d] for %d input channels",
                       (int)w->shape[0], (int)w->shape[1], (int)w->shape[2], (int)w->shape[3],
                       (int)x->shape[3]);
    conv_finish(s, CONV_DEPTHWISE, &g, x->shape[3], NULL, NULL);
    return lw_status(s);
}

/* TRANSPOSE_CONV (inputs: output shape, filter OHWI, input, bias): the full
 * transposed convolution cropped from row pad_before on, where pad_before
 * is half the padding a convolution with the same geometry would add
 * (tensorflow/lite/kernels/transpose_conv.cc, ComputePaddingHeightWidth
 * with the output as the image; reference TransposeConv). ONNX
 * ConvTranspose with explicit pads; an output larger than the full result
 * gets output_padding. */
static cg_status op_transpose_conv(lw_scope *s, const lw_rule *r)
{
    (void)r;
    conv_geom g;
    int64_t *oshape = NULL;
    size_t on = 0;
    if (!conv_begin(s, CONV_TRANSPOSE, &g))
        return lw_status(s);
    const cg_tflite_tensor *w = lw_in_t(s, 1), *x = lw_in_t(s, 2);
    if (!lw_static_shape(s, x, "input", 4) ||
        !lw_const_ints(s, lw_in_t(s, 0), "output shape", &oshape, &on))
        return lw_status(s);
    if (on != 4) {
        free(oshape);
        return lw_fail(s, CG_INVALID, "output shape has %zu values, not 4", on);
    }
    int64_t pads[4], opad[2];
    bool need_opad = false;
    const int32_t stride[2] = {g.stride_h, g.stride_w};
    for (int d = 0; d < 2; d++) {
        int64_t out = oshape[1 + d], in = x->shape[1 + d], k = w->shape[1 + d], st = stride[d];
        if (out < 1 || out > INT32_MAX) {
            free(oshape);
            return lw_fail(s, CG_INVALID, "output shape dim %d is %lld", 1 + d, (long long)out);
        }
        int64_t computed = g.padding == CG_TFLITE_PADDING_SAME ? (out + st - 1) / st
                                                               : (out + st - k) / st;
        int64_t total = (computed - 1) * st + k - out;
        int64_t before = total > 0 ? total / 2 : 0;
        int64_t full = (in - 1) * st + k;
        int64_t after = full - out - before;
        opad[d] = 0;
        if (after < 0) {
            opad[d] = -after;
            after = 0;
            need_opad = true;
            if (opad[d] >= st) {
                free(oshape);
                return lw_fail(s, CG_UNSUPPORTED, "output dim %d (%lld) is %lld past the full "
                               "transposed convolution (%lld)", 1 + d, (long long)out,
                               (long long)opad[d], (long long)full);
            }
        }
        pads[d] = before;
        pads[2 + d] = after;
    }
    free(oshape);
    conv_finish(s, CONV_TRANSPOSE, &g, 1, pads, need_opad ? opad : NULL);
    return lw_status(s);
}

/* FULLY_CONNECTED: x flattened to [numel / K, K] (K = filter dim 1) unless
 * keep_num_dims, times filter^T [K, O], plus bias, activation. */
static cg_status op_fully_connected(lw_scope *s, const lw_rule *r)
{
    (void)r;
    if (!arity(s, 2, 3, 1))
        return lw_status(s);
    const cg_tflite_tensor *x = lw_in_t(s, 0), *w = lw_in_t(s, 1);
    if (lw_quantized(x) || lw_quantized(lw_out_t(s, 0)))
        return q_fully_connected(s);
    if (lw_quantized(w) || !cg_dtype_is_float(lw_dtype(w)))
        return lw_fail(s, CG_UNSUPPORTED, "hybrid FULLY_CONNECTED (float input, %s weights) is "
                       "not lowered", cg_tflite_type_name(w->type));
    const cg_tflite_options *o = opts(s, CG_TFLITE_OPT_FullyConnectedOptions);
    int act = o ? o->u.fully_connected.fused_activation_function : CG_TFLITE_ACT_NONE;
    bool keep = o && o->u.fully_connected.keep_num_dims;
    if (o && o->u.fully_connected.weights_format != 0)
        return lw_fail(s, CG_UNSUPPORTED, "FULLY_CONNECTED with shuffled weights (format %d) "
                       "is not lowered", (int)o->u.fully_connected.weights_format);
    if (!act_ok(s, act, false) || !lw_static_shape(s, w, "filter", 2))
        return lw_status(s);
    const char *xv = lw_in(s, 0);
    if (!keep && x->rank != 2) {
        int64_t shape[2] = {-1, w->shape[1]};
        const char *sh = lw_init_i64(s, "flat_shape", shape, 2);
        const char *xf = lw_tmp(s, "flat");
        lw_binary(s, "Reshape", xv, sh, xf, "flatten");
        xv = xf;
    }
    static const int perm[2] = {1, 0};
    const char *wt = permuted(s, 1, "filter_t", perm, 2);
    const char *b = lw_in(s, 2), *y = lw_out(s, 0);
    const char *pre = pre_act(s, act, y);
    const char *mm = b && b[0] ? lw_tmp(s, "matmul") : pre;
    lw_binary(s, "MatMul", xv, wt, mm, NULL);
    if (b && b[0]) {
        lw_binary(s, "Add", mm, b, pre, "bias");
    }
    if (act != CG_TFLITE_ACT_NONE)
        emit_act(s, act, pre, y, out_dtype(s));
    return lw_status(s);
}

/* BATCH_MATMUL: adj_x/adj_y transpose the last two dims; batch dims
 * broadcast like numpy (ONNX MatMul). */
static cg_status op_batch_matmul(lw_scope *s, const lw_rule *r)
{
    (void)r;
    if (!arity(s, 2, 2, 1))
        return lw_status(s);
    const cg_tflite_options *o = opts(s, CG_TFLITE_OPT_BatchMatMulOptions);
    const char *v[2] = {lw_in(s, 0), lw_in(s, 1)};
    bool adj[2] = {o && o->u.batch_matmul.adj_x, o && o->u.batch_matmul.adj_y};
    for (int i = 0; i < 2; i++) {
        if (!adj[i])
            continue;
        const cg_tflite_tensor *t = lw_in_t(s, (size_t)i);
        if (t->rank < 2 || t->rank > CG_MAX_RANK)
            return lw_fail(s, CG_UNSUPPORTED, "adj_%c on an operand of rank %zu (the file must "
                           "record a rank >= 2)", i ? 'y' : 'x', t->rank);
        int perm[CG_MAX_RANK];
        for (size_t d = 0; d < t->rank; d++)
            perm[d] = (int)d;
        perm[t->rank - 2] = (int)t->rank - 1;
        perm[t->rank - 1] = (int)t->rank - 2;
        v[i] = permuted(s, (size_t)i, i ? "y_adjoint" : "x_adjoint", perm, (int)t->rank);
    }
    lw_binary(s, "MatMul", v[0], v[1], lw_out(s, 0), NULL);
    return lw_status(s);
}

/* MAX_POOL_2D / AVERAGE_POOL_2D (the average over the pixels inside). */
static cg_status op_pool(lw_scope *s, const lw_rule *r)
{
    const cg_tflite_options *o;
    if (!arity(s, 1, 1, 1))
        return lw_status(s);
    if (!need_opts(s, CG_TFLITE_OPT_Pool2DOptions, &o))
        return lw_status(s);
    const cg_tflite_pool2d_options *p = &o->u.pool2d;
    bool q = any_quantized(s);
    if (q && (r->code != CG_TFLITE_OP_MAX_POOL_2D ||
              p->fused_activation_function != CG_TFLITE_ACT_NONE))
        return refuse_quantized(s);
    if (!strides_ok(s, p->stride_h, p->stride_w, "strides") ||
        !strides_ok(s, p->filter_height, p->filter_width, "filter") || !padding_ok(s, p->padding) ||
        !act_ok(s, p->fused_activation_function, false))
        return lw_status(s);
    const char *xc = to_nchw(s, lw_in(s, 0), "to_nchw");
    const char *y = lw_out(s, 0), *pre = lw_tmp(s, "pool");
    cg_node *n = lw_unary(s, r->onnx, xc, pre, NULL);
    int64_t k[2] = {p->filter_height, p->filter_width}, st[2] = {p->stride_h, p->stride_w};
    lw_attr_ints(s, n, "kernel_shape", k, 2);
    lw_attr_ints(s, n, "strides", st, 2);
    lw_attr_string(s, n, "auto_pad", p->padding == CG_TFLITE_PADDING_VALID ? "VALID"
                                                                            : "SAME_UPPER");
    if (r->code == CG_TFLITE_OP_AVERAGE_POOL_2D)
        lw_attr_int(s, n, "count_include_pad", 0);
    finish_nchw(s, pre, p->fused_activation_function, y);
    return lw_status(s);
}

/* --- reductions ---------------------------------------------------------------------- */

static cg_status q_mean(lw_scope *s);

/* MEAN/SUM/REDUCE_MAX/REDUCE_MIN/REDUCE_PROD over the axes tensor (TFLite
 * drops repeated axes and reduces nothing for an empty list). */
static cg_status op_reduce(lw_scope *s, const lw_rule *r)
{
    if (!arity(s, 2, 2, 1))
        return lw_status(s);
    if (any_quantized(s)) {
        if (r->code == CG_TFLITE_OP_MEAN)
            return q_mean(s);
        return refuse_quantized(s);
    }
    const cg_tflite_options *o = opts(s, CG_TFLITE_OPT_ReducerOptions);
    const cg_tflite_tensor *x = lw_in_t(s, 0), *at = lw_in_t(s, 1);
    const char *axes;
    if (cg_tflite_tensor_data(s->lw->tm, at).data) {
        int64_t *v;
        size_t n, k = 0;
        if (!lw_const_ints(s, at, "axes", &v, &n))
            return lw_status(s);
        for (size_t i = 0; i < n; i++) {
            int64_t a = v[i] < 0 && x->rank ? v[i] + (int64_t)x->rank : v[i];
            bool seen = false;
            for (size_t j = 0; j < k; j++)
                seen = seen || v[j] == a;
            if (!seen)
                v[k++] = a;
        }
        axes = lw_init_i64(s, "axes", v, k);
        free(v);
    } else {
        axes = lw_tmp(s, "axes");
        lw_attr_int(s, lw_unary(s, "Cast", lw_in(s, 1), axes, "axes"), "to", CG_DTYPE_INT64);
    }
    const char *in0 = lw_in(s, 0), *out = lw_out(s, 0);
    cg_node *n = lw_binary(s, r->onnx, in0, axes, out, NULL);
    lw_attr_int(s, n, "keepdims", o && o->u.b ? 1 : 0);
    lw_attr_int(s, n, "noop_with_empty_axes", 1);
    return lw_status(s);
}

/* ARG_MAX / ARG_MIN over one axis (the first of equal values), to the
 * output's integer type. */
static cg_status op_arg(lw_scope *s, const lw_rule *r)
{
    int64_t *v;
    size_t n;
    if (!arity(s, 2, 2, 1) || !lw_const_ints(s, lw_in_t(s, 1), "axis", &v, &n))
        return lw_status(s);
    if (n != 1) {
        free(v);
        return lw_fail(s, CG_INVALID, "axis holds %zu values, not 1", n);
    }
    cg_dtype dt = out_dtype(s);
    const char *y = lw_out(s, 0), *a = dt == CG_DTYPE_INT64 ? y : lw_tmp(s, "index");
    cg_node *node = lw_unary(s, r->onnx, lw_in(s, 0), a, NULL);
    lw_attr_int(s, node, "axis", v[0]);
    lw_attr_int(s, node, "keepdims", 0);
    free(v);
    if (dt != CG_DTYPE_INT64)
        lw_attr_int(s, lw_unary(s, "Cast", a, y, "to_output_type"), "to", dt);
    return lw_status(s);
}

/* --- shapes and data movement -------------------------------------------------------- */

/* An int32/int64 shape-like input as an int64 value: a constant converted
 * here, or a Cast. */
static const char *as_i64(lw_scope *s, size_t input, const char *hint)
{
    const cg_tflite_tensor *t = lw_in_t(s, input);
    if (!lw_ok(s))
        return NULL;
    if (t && cg_tflite_tensor_data(s->lw->tm, t).data) {
        int64_t *v;
        size_t n;
        if (!lw_const_ints(s, t, hint, &v, &n))
            return NULL;
        int64_t dims[CG_MAX_RANK];
        for (size_t d = 0; d < t->rank && d < CG_MAX_RANK; d++)
            dims[d] = t->shape[d];
        const char *name = lw_init(s, hint, CG_DTYPE_INT64, (int)t->rank, dims, v);
        free(v);
        return name;
    }
    if (t && t->type == CG_TFLITE_TYPE_INT64)
        return lw_in(s, input);
    const char *y = lw_tmp(s, hint);
    lw_attr_int(s, lw_unary(s, "Cast", lw_in(s, input), y, hint), "to", CG_DTYPE_INT64);
    return y;
}

/* RESHAPE: the shape input when it is an int32 vector, else the options'
 * new_shape (tensorflow/lite/kernels/reshape.cc); 0 is a zero-sized dim. */
static cg_status op_reshape(lw_scope *s, const lw_rule *r)
{
    (void)r;
    if (!arity(s, 1, 2, 1))
        return lw_status(s);
    const cg_tflite_tensor *st = lw_in_t(s, 1);
    const char *shape;
    if (st && st->rank == 1 && st->type == CG_TFLITE_TYPE_INT32) {
        shape = as_i64(s, 1, "shape");
    } else {
        const cg_tflite_options *o = opts(s, CG_TFLITE_OPT_ReshapeOptions);
        if (!o || !o->u.ints.present)
            return lw_fail(s, CG_INVALID, "RESHAPE without a shape input (an int32 vector) or "
                           "new_shape options");
        int64_t v[CG_MAX_RANK];
        if (o->u.ints.count > CG_MAX_RANK)
            return lw_fail(s, CG_UNSUPPORTED, "new_shape has %zu dims", o->u.ints.count);
        for (size_t i = 0; i < o->u.ints.count; i++)
            v[i] = o->u.ints.values[i];
        shape = lw_init_i64(s, "shape", v, o->u.ints.count);
    }
    const char *in0 = lw_in(s, 0), *out = lw_out(s, 0);
    cg_node *n = lw_binary(s, "Reshape", in0, shape, out, NULL);
    lw_attr_int(s, n, "allowzero", 1);
    return lw_status(s);
}

static cg_status op_transpose(lw_scope *s, const lw_rule *r)
{
    (void)r;
    int64_t *perm;
    size_t n;
    if (!arity(s, 2, 2, 1) || !lw_const_ints(s, lw_in_t(s, 1), "permutation", &perm, &n))
        return lw_status(s);
    lw_attr_ints(s, lw_unary(s, "Transpose", lw_in(s, 0), lw_out(s, 0), NULL), "perm", perm, n);
    free(perm);
    return lw_status(s);
}

static bool same_quant(const cg_tflite_tensor *a, const cg_tflite_tensor *b)
{
    if (!lw_quantized(a) || !lw_quantized(b))
        return lw_quantized(a) == lw_quantized(b);
    const cg_tflite_quant *p = a->quant, *q = b->quant;
    if (p->scale_count != 1 || q->scale_count != 1 || p->scale[0] != q->scale[0])
        return false;
    int64_t zp = p->zero_point_count ? p->zero_point[0] : 0;
    int64_t zq = q->zero_point_count ? q->zero_point[0] : 0;
    return zp == zq;
}

static cg_status op_concat(lw_scope *s, const lw_rule *r)
{
    (void)r;
    if (!arity(s, 1, SIZE_MAX, 1))
        return lw_status(s);
    const cg_tflite_options *o = opts(s, CG_TFLITE_OPT_ConcatenationOptions);
    int act = o ? o->u.concat.fused_activation_function : CG_TFLITE_ACT_NONE;
    if (any_quantized(s)) {
        for (size_t i = 0; i < s->op->input_count; i++)
            if (!same_quant(lw_in_t(s, i), lw_out_t(s, 0)))
                return lw_fail(s, CG_UNSUPPORTED, "quantized CONCATENATION whose input %zu is "
                               "quantized unlike the output (requantizing) is not lowered", i);
        if (act != CG_TFLITE_ACT_NONE)
            return refuse_quantized(s);
    }
    if (!act_ok(s, act, false))
        return lw_status(s);
    const char *y = lw_out(s, 0), *pre = pre_act(s, act, y);
    cg_node *n = lw_node(s, "Concat", NULL, s->op->input_count, 1, NULL);
    for (size_t i = 0; n && i < s->op->input_count; i++)
        n->inputs[i] = lw_in(s, i);
    if (n)
        n->outputs[0] = pre;
    lw_attr_int(s, n, "axis", o ? o->u.concat.axis : 0);
    if (act != CG_TFLITE_ACT_NONE)
        emit_act(s, act, pre, y, out_dtype(s));
    return lw_status(s);
}

/* PAD / PADV2 (constant paddings [rank, 2]): zeros, the zero point of a
 * quantized tensor, or PADV2's value; MIRROR_PAD in REFLECT mode. */
static cg_status op_pad(lw_scope *s, const lw_rule *r)
{
    int64_t *p;
    size_t n;
    if (!arity(s, 2, r->code == CG_TFLITE_OP_PADV2 ? 3 : 2, 1) ||
        !lw_const_ints(s, lw_in_t(s, 1), "paddings", &p, &n))
        return lw_status(s);
    if (n % 2 || n / 2 > CG_MAX_RANK) {
        free(p);
        return lw_fail(s, CG_INVALID, "paddings hold %zu values, not [rank, 2]", n);
    }
    int64_t pads[2 * CG_MAX_RANK];
    size_t rank = n / 2;
    for (size_t d = 0; d < rank; d++) {
        pads[d] = p[2 * d];
        pads[rank + d] = p[2 * d + 1];
        if (p[2 * d] < 0 || p[2 * d + 1] < 0) {
            free(p);
            return lw_fail(s, CG_INVALID, "negative padding on dim %zu", d);
        }
    }
    free(p);
    const char *value = "";
    const cg_tflite_tensor *x = lw_in_t(s, 0);
    if (r->code == CG_TFLITE_OP_PADV2 && s->op->input_count > 2 && s->op->inputs[2] >= 0)
        value = lw_in(s, 2);
    else if (lw_quantized(x) && r->code != CG_TFLITE_OP_MIRROR_PAD)
        value = lw_init_scalar(s, "zero_point", lw_dtype(x),
                               x->quant->zero_point_count ? (double)x->quant->zero_point[0] : 0);
    if (r->code == CG_TFLITE_OP_MIRROR_PAD) {
        const cg_tflite_options *o = opts(s, CG_TFLITE_OPT_MirrorPadOptions);
        if (o && o->u.i != 0)
            return lw_fail(s, CG_UNSUPPORTED, "MIRROR_PAD in SYMMETRIC mode is not lowered "
                           "(ONNX Pad has no such mode)");
    }
    const char *pv = lw_init_i64(s, "pads", pads, 2 * rank);
    cg_node *node = lw_node(s, "Pad", NULL, 3, 1, NULL);
    if (node) {
        node->inputs[0] = lw_in(s, 0);
        node->inputs[1] = pv;
        node->inputs[2] = value;
        node->outputs[0] = lw_out(s, 0);
    }
    if (r->code == CG_TFLITE_OP_MIRROR_PAD)
        lw_attr_string(s, node, "mode", "reflect");
    return lw_status(s);
}

static void slice_node(lw_scope *s, const char *x, const char *y, const int64_t *starts,
                       const int64_t *ends, const int64_t *steps, size_t n, const char *part)
{
    int64_t axes[CG_MAX_RANK];
    for (size_t i = 0; i < n; i++)
        axes[i] = (int64_t)i;
    const char *sv = lw_init_i64(s, "starts", starts, n);
    const char *ev = lw_init_i64(s, "ends", ends, n);
    const char *av = lw_init_i64(s, "axes", axes, n);
    const char *tv = steps ? lw_init_i64(s, "steps", steps, n) : "";
    cg_node *node = lw_node(s, "Slice", NULL, 5, 1, part);
    if (node) {
        node->inputs[0] = x;
        node->inputs[1] = sv;
        node->inputs[2] = ev;
        node->inputs[3] = av;
        node->inputs[4] = tv;
        node->outputs[0] = y;
    }
}

/* SLICE(begin, size): size -1 runs to the end. */
static cg_status op_slice(lw_scope *s, const lw_rule *r)
{
    (void)r;
    int64_t *b = NULL, *z = NULL;
    size_t nb, nz;
    if (!arity(s, 3, 3, 1) || !lw_const_ints(s, lw_in_t(s, 1), "begin", &b, &nb) ||
        !lw_const_ints(s, lw_in_t(s, 2), "size", &z, &nz)) {
        free(b);
        return lw_status(s);
    }
    if (nb != nz || nb > CG_MAX_RANK) {
        free(b);
        free(z);
        return lw_fail(s, CG_INVALID, "begin has %zu values, size %zu", nb, nz);
    }
    int64_t ends[CG_MAX_RANK];
    for (size_t i = 0; i < nb; i++) {
        if (b[i] < 0 || z[i] < -1) {
            lw_fail(s, CG_INVALID, "begin %lld / size %lld on dim %zu", (long long)b[i],
                    (long long)z[i], i);
            break;
        }
        ends[i] = z[i] == -1 ? INT64_MAX : b[i] + z[i];
    }
    slice_node(s, lw_in(s, 0), lw_out(s, 0), b, ends, NULL, nb, NULL);
    free(b);
    free(z);
    return lw_status(s);
}

/* STRIDED_SLICE with constant begin/end/strides (strided_slice_logic.h):
 * begin_mask starts at the first element in the stride's direction,
 * end_mask runs to the last, shrink_axis_mask takes element `begin` and
 * drops the dim, `offset` makes end relative to begin. ellipsis_mask and
 * new_axis_mask are refused. */
static cg_status op_strided_slice(lw_scope *s, const lw_rule *r)
{
    (void)r;
    const cg_tflite_options *o;
    int64_t *b = NULL, *e = NULL, *st = NULL;
    size_t nb, ne, ns;
    if (!arity(s, 4, 4, 1) || !need_opts(s, CG_TFLITE_OPT_StridedSliceOptions, &o))
        return lw_status(s);
    const cg_tflite_strided_slice_options *p = &o->u.strided_slice;
    if (p->ellipsis_mask || p->new_axis_mask)
        return lw_fail(s, CG_UNSUPPORTED, "STRIDED_SLICE with ellipsis_mask %d / new_axis_mask "
                       "%d is not lowered", (int)p->ellipsis_mask, (int)p->new_axis_mask);
    if (!lw_const_ints(s, lw_in_t(s, 1), "begin", &b, &nb) ||
        !lw_const_ints(s, lw_in_t(s, 2), "end", &e, &ne) ||
        !lw_const_ints(s, lw_in_t(s, 3), "strides", &st, &ns))
        goto done;
    if (nb != ne || nb != ns || nb > CG_MAX_RANK || nb > 31) {
        lw_fail(s, CG_INVALID, "begin, end and strides hold %zu, %zu and %zu values", nb, ne,
                ns);
        goto done;
    }
    int64_t starts[CG_MAX_RANK], ends[CG_MAX_RANK], steps[CG_MAX_RANK], squeeze[CG_MAX_RANK];
    size_t nsq = 0;
    for (size_t i = 0; i < nb; i++) {
        if (st[i] == 0) {
            lw_fail(s, CG_INVALID, "stride 0 on dim %zu", i);
            goto done;
        }
        bool fwd = st[i] > 0;
        int64_t end = p->offset ? b[i] + e[i] : e[i];
        starts[i] = (p->begin_mask >> i) & 1 ? (fwd ? 0 : INT64_MAX) : b[i];
        ends[i] = (p->end_mask >> i) & 1 ? (fwd ? INT64_MAX : INT64_MIN) : end;
        steps[i] = st[i];
        if ((p->shrink_axis_mask >> i) & 1) {
            if (!fwd && ((p->begin_mask >> i) & 1)) {
                lw_fail(s, CG_UNSUPPORTED, "shrink_axis with begin_mask and a negative stride "
                        "on dim %zu is not lowered", i);
                goto done;
            }
            ends[i] = starts[i] == -1 ? INT64_MAX : starts[i] + 1;
            steps[i] = 1;
            squeeze[nsq++] = (int64_t)i;
        }
    }
    const char *y = lw_out(s, 0);
    const char *sl = nsq ? lw_tmp(s, "sliced") : y;
    slice_node(s, lw_in(s, 0), sl, starts, ends, steps, nb, NULL);
    if (nsq) {
        const char *ax = lw_init_i64(s, "shrink_axes", squeeze, nsq);
        lw_binary(s, "Squeeze", sl, ax, y, "shrink");
    }
done:
    free(b);
    free(e);
    free(st);
    return lw_status(s);
}

static cg_status op_gather(lw_scope *s, const lw_rule *r)
{
    (void)r;
    if (!arity(s, 2, 2, 1))
        return lw_status(s);
    const cg_tflite_options *o = opts(s, CG_TFLITE_OPT_GatherOptions);
    if (o && o->u.gather.batch_dims != 0)
        return lw_fail(s, CG_UNSUPPORTED, "GATHER with batch_dims %d is not lowered",
                       (int)o->u.gather.batch_dims);
    const char *in0 = lw_in(s, 0), *in1 = lw_in(s, 1), *out = lw_out(s, 0);
    cg_node *n = lw_binary(s, "Gather", in0, in1, out, NULL);
    lw_attr_int(s, n, "axis", o ? o->u.gather.axis : 0);
    return lw_status(s);
}

static cg_status op_gather_nd(lw_scope *s, const lw_rule *r)
{
    (void)r;
    if (!arity(s, 2, 2, 1))
        return lw_status(s);
    const char *idx = as_i64(s, 1, "indices");
    const char *in0 = lw_in(s, 0), *out = lw_out(s, 0);
    lw_binary(s, "GatherND", in0, idx, out, NULL);
    return lw_status(s);
}

/* EXPAND_DIMS: a negative axis counts from the output's rank (ONNX Unsqueeze). */
static cg_status op_expand_dims(lw_scope *s, const lw_rule *r)
{
    (void)r;
    int64_t *a;
    size_t n;
    if (!arity(s, 2, 2, 1) || !lw_const_ints(s, lw_in_t(s, 1), "axis", &a, &n))
        return lw_status(s);
    if (n != 1) {
        free(a);
        return lw_fail(s, CG_INVALID, "axis holds %zu values, not 1", n);
    }
    const char *ax = lw_init_i64(s, "axes", a, 1);
    free(a);
    const char *in0 = lw_in(s, 0), *out = lw_out(s, 0);
    lw_binary(s, "Unsqueeze", in0, ax, out, NULL);
    return lw_status(s);
}

/* SQUEEZE: squeeze_dims, or every dim of size 1 when there are none. */
static cg_status op_squeeze(lw_scope *s, const lw_rule *r)
{
    (void)r;
    if (!arity(s, 1, 1, 1))
        return lw_status(s);
    const cg_tflite_options *o = opts(s, CG_TFLITE_OPT_SqueezeOptions);
    const char *ax = "";
    if (o && o->u.ints.count) {
        int64_t v[CG_MAX_RANK];
        if (o->u.ints.count > CG_MAX_RANK)
            return lw_fail(s, CG_INVALID, "squeeze_dims has %zu values", o->u.ints.count);
        for (size_t i = 0; i < o->u.ints.count; i++)
            v[i] = o->u.ints.values[i];
        ax = lw_init_i64(s, "axes", v, o->u.ints.count);
    }
    const char *in0 = lw_in(s, 0), *out = lw_out(s, 0);
    lw_binary(s, "Squeeze", in0, ax, out, NULL);
    return lw_status(s);
}

/* RESIZE_BILINEAR / RESIZE_NEAREST_NEIGHBOR of NHWC to size [h, w]: ONNX
 * Resize over axes 1, 2 with the coordinate rule of the flags
 * (reference resize_bilinear.h / resize_nearest_neighbor.h):
 *   bilinear: align_corners -> align_corners, half_pixel_centers ->
 *     half_pixel ((x + 0.5) * in/out - 0.5, clamped), else asymmetric;
 *   nearest: align_corners -> align_corners rounding half up,
 *     half_pixel_centers -> tf_half_pixel_for_nn flooring, else
 *     asymmetric flooring. */
static cg_status op_resize(lw_scope *s, const lw_rule *r)
{
    if (!arity(s, 2, 2, 1))
        return lw_status(s);
    int type = r->code == CG_TFLITE_OP_RESIZE_BILINEAR ? CG_TFLITE_OPT_ResizeBilinearOptions
                                                       : CG_TFLITE_OPT_ResizeNearestNeighborOptions;
    const cg_tflite_options *o = opts(s, type);
    bool align = o && o->u.resize.align_corners, half = o && o->u.resize.half_pixel_centers;
    if (align && half)
        return lw_fail(s, CG_UNSUPPORTED, "align_corners and half_pixel_centers together are "
                       "not lowered");
    const char *sizes = as_i64(s, 1, "sizes");
    cg_node *n = lw_node(s, "Resize", NULL, 4, 1, NULL);
    if (n) {
        n->inputs[0] = lw_in(s, 0);
        n->inputs[3] = sizes;
        n->outputs[0] = lw_out(s, 0);
    }
    static const int64_t axes[2] = {1, 2};
    lw_attr_ints(s, n, "axes", axes, 2);
    bool nearest = r->code == CG_TFLITE_OP_RESIZE_NEAREST_NEIGHBOR;
    lw_attr_string(s, n, "mode", nearest ? "nearest" : "linear");
    lw_attr_string(s, n, "coordinate_transformation_mode",
                   align  ? "align_corners"
                   : half ? (nearest ? "tf_half_pixel_for_nn" : "half_pixel")
                          : "asymmetric");
    if (nearest)
        lw_attr_string(s, n, "nearest_mode", align ? "round_prefer_ceil" : "floor");
    return lw_status(s);
}

/* TILE (multiples) and BROADCAST_TO (shape): the ONNX op of the row on the
 * data and the second operand as int64. */
static cg_status op_shape_operand(lw_scope *s, const lw_rule *r)
{
    if (!arity(s, 2, 2, 1))
        return lw_status(s);
    const char *operand = as_i64(s, 1, r->code == CG_TFLITE_OP_TILE ? "multiples" : "shape");
    const char *in0 = lw_in(s, 0), *out = lw_out(s, 0);
    lw_binary(s, r->onnx, in0, operand, out, NULL);
    return lw_status(s);
}

static cg_status op_shape(lw_scope *s, const lw_rule *r)
{
    (void)r;
    if (!arity(s, 1, 1, 1))
        return lw_status(s);
    cg_dtype dt = out_dtype(s);
    const char *y = lw_out(s, 0), *v = dt == CG_DTYPE_INT64 ? y : lw_tmp(s, "shape");
    lw_unary(s, "Shape", lw_in(s, 0), v, NULL);
    if (dt != CG_DTYPE_INT64)
        lw_attr_int(s, lw_unary(s, "Cast", v, y, "to_output_type"), "to", dt);
    return lw_status(s);
}

/* PACK: each input unsqueezed at axis, then concatenated there. */
static cg_status op_pack(lw_scope *s, const lw_rule *r)
{
    (void)r;
    if (!arity(s, 1, SIZE_MAX, 1))
        return lw_status(s);
    const cg_tflite_options *o = opts(s, CG_TFLITE_OPT_PackOptions);
    int64_t axis = o ? o->u.axis_count.axis : 0;
    const char *ax = lw_init_i64(s, "axes", &axis, 1);
    size_t n = s->op->input_count;
    const char **parts = calloc(n, sizeof *parts);
    if (!parts)
        return lw_fail(s, CG_NOMEM, "out of memory");
    for (size_t i = 0; i < n && lw_ok(s); i++) {
        parts[i] = lw_tmp(s, "unsqueezed");
        lw_binary(s, "Unsqueeze", lw_in(s, i), ax, parts[i], "unsqueeze");
    }
    cg_node *c = lw_node(s, "Concat", NULL, n, 1, NULL);
    for (size_t i = 0; c && i < n; i++)
        c->inputs[i] = parts[i];
    if (c)
        c->outputs[0] = lw_out(s, 0);
    lw_attr_int(s, c, "axis", axis);
    free(parts);
    return lw_status(s);
}

/* UNPACK: split into `num` pieces along axis, each squeezed there. */
static cg_status op_unpack(lw_scope *s, const lw_rule *r)
{
    (void)r;
    if (!arity(s, 1, 1, 1))
        return lw_status(s);
    const cg_tflite_options *o = opts(s, CG_TFLITE_OPT_UnpackOptions);
    int64_t axis = o ? o->u.axis_count.axis : 0;
    size_t n = s->op->output_count;
    const char *ax = lw_init_i64(s, "axes", &axis, 1);
    cg_node *sp = lw_node(s, "Split", NULL, 1, n, NULL);
    if (!sp)
        return lw_status(s);
    sp->inputs[0] = lw_in(s, 0);
    const char **parts = calloc(n, sizeof *parts);
    if (!parts)
        return lw_fail(s, CG_NOMEM, "out of memory");
    for (size_t i = 0; i < n; i++)
        parts[i] = sp->outputs[i] = lw_tmp(s, "piece");
    lw_attr_int(s, sp, "axis", axis);
    lw_attr_int(s, sp, "num_outputs", (int64_t)n);
    for (size_t i = 0; i < n && lw_ok(s); i++) {
        lw_binary(s, "Squeeze", parts[i], ax, lw_out(s, i), "squeeze");
    }
    free(parts);
    return lw_status(s);
}

/* SPLIT (inputs: axis, value) into equal parts. */
static cg_status op_split(lw_scope *s, const lw_rule *r)
{
    (void)r;
    int64_t *a;
    size_t na;
    if (!arity(s, 2, 2, 1) || !lw_const_ints(s, lw_in_t(s, 0), "axis", &a, &na))
        return lw_status(s);
    int64_t axis = na == 1 ? a[0] : 0;
    free(a);
    if (na != 1)
        return lw_fail(s, CG_INVALID, "axis holds %zu values, not 1", na);
    size_t n = s->op->output_count;
    cg_node *sp = lw_node(s, "Split", NULL, 1, n, NULL);
    if (sp)
        sp->inputs[0] = lw_in(s, 1);
    for (size_t i = 0; sp && i < n; i++)
        sp->outputs[i] = lw_out(s, i);
    lw_attr_int(s, sp, "axis", axis);
    lw_attr_int(s, sp, "num_outputs", (int64_t)n);
    return lw_status(s);
}

/* --- quantization ------------------------------------------------------------------ */

/* QUANTIZE: float -> int8/uint8/int16 rounding half away from zero
 * (reference AffineQuantize / PerChannelQuantize), or int -> int
 * requantization (reference Requantize): CG_TFLITE_DOMAIN QUANTIZE. */
static cg_status op_quantize(lw_scope *s, const lw_rule *r)
{
    (void)r;
    if (!arity(s, 1, 1, 1))
        return lw_status(s);
    const cg_tflite_tensor *x = lw_in_t(s, 0), *y = lw_out_t(s, 0);
    if (!lw_quantized(y))
        return lw_fail(s, CG_INVALID, "QUANTIZE output is not an int8/uint8/int16 tensor with "
                       "scales");
    bool requant = lw_quantized(x);
    if (!requant && !cg_dtype_is_float(lw_dtype(x)))
        return lw_fail(s, CG_UNSUPPORTED, "QUANTIZE from %s is not lowered",
                       cg_tflite_type_name(x->type));
    int64_t ch = y->quant->quantized_dimension >= 0 &&
                         (size_t)y->quant->quantized_dimension < y->rank
                     ? y->shape[y->quant->quantized_dimension] : 0;
    if (!quant_ok(s, y, "output", requant ? -1 : y->quant->quantized_dimension, ch) ||
        (requant && !quant_ok(s, x, "input", -1, 0)))
        return lw_status(s);
    cg_node *n = lw_node(s, "QUANTIZE", CG_TFLITE_DOMAIN, 1, 1, NULL);
    if (n) {
        n->inputs[0] = lw_in(s, 0);
        n->outputs[0] = lw_out(s, 0);
    }
    attr_quant(s, n, "y", y);
    if (y->quant->scale_count > 1)
        lw_attr_int(s, n, "axis", y->quant->quantized_dimension);
    if (requant)
        attr_quant(s, n, "x", x);
    lw_attr_int(s, n, "to", (int64_t)lw_dtype(y));
    return lw_status(s);
}

/* DEQUANTIZE: (q - zero_point) * scale (reference Dequantize; computed in
 * double and rounded once, which equals the float product); float16 -> float
 * is a Cast. */
static cg_status op_dequantize(lw_scope *s, const lw_rule *r)
{
    (void)r;
    if (!arity(s, 1, 1, 1))
        return lw_status(s);
    const cg_tflite_tensor *x = lw_in_t(s, 0);
    if (x->type == CG_TFLITE_TYPE_FLOAT16) {
        lw_attr_int(s, lw_unary(s, "Cast", lw_in(s, 0), lw_out(s, 0), NULL), "to",
                    (int64_t)out_dtype(s));
        return lw_status(s);
    }
    if (!lw_quantized(x))
        return lw_fail(s, CG_UNSUPPORTED, "DEQUANTIZE of a %s tensor without scales is not "
                       "lowered", cg_tflite_type_name(x->type));
    const cg_tflite_quant *q = x->quant;
    int axis = q->scale_count > 1 ? q->quantized_dimension : -1;
    int64_t ch = axis >= 0 && (size_t)axis < x->rank ? x->shape[axis] : 0;
    if (!quant_ok(s, x, "input", axis, ch))
        return lw_status(s);
    size_t c = q->scale_count;
    int64_t dim = (int64_t)c;
    int64_t *zp = calloc(c, sizeof *zp);
    if (!zp)
        return lw_fail(s, CG_NOMEM, "out of memory");
    cg_tensor zt;
    cg_error e;
    const char *scale = lw_init(s, "scale", CG_DTYPE_FLOAT, c > 1 ? 1 : 0, &dim, q->scale);
    if (cg_tensor_alloc(&zt, lw_dtype(x), c > 1 ? 1 : 0, &dim, 0, &e) != CG_OK) {
        free(zp);
        return lw_fail(s, CG_NOMEM, "%s", e.msg);
    }
    for (size_t i = 0; i < c; i++)
        cg_tensor_set_i64(&zt, (int64_t)i, q->zero_point_count ? q->zero_point[i] : 0);
    const char *zpv = lw_init(s, "zero_point", lw_dtype(x), c > 1 ? 1 : 0, &dim, zt.data);
    cg_tensor_release(&zt);
    free(zp);
    cg_node *n = lw_node(s, "DequantizeLinear", NULL, 3, 1, NULL);
    if (n) {
        n->inputs[0] = lw_in(s, 0);
        n->inputs[1] = scale;
        n->inputs[2] = zpv;
        n->outputs[0] = lw_out(s, 0);
    }
    if (axis >= 0)
        lw_attr_int(s, n, "axis", axis);
    return lw_status(s);
}

/* Integer CONV_2D / DEPTHWISE_CONV_2D (CG_TFLITE_DOMAIN; geometry as
 * TFLite's, NHWC, filter as stored): int8 input with per-channel or
 * per-tensor int8 filter, or uint8 input with a per-tensor uint8 filter;
 * int32 bias; the output the input's type. */
static cg_status q_conv(lw_scope *s, bool depthwise)
{
    conv_geom g;
    if (!conv_geom_read(s, depthwise ? CONV_DEPTHWISE : CONV_PLAIN, true, &g))
        return lw_status(s);
    const cg_tflite_tensor *x = lw_in_t(s, 0), *w = lw_in_t(s, 1), *b = lw_in_t(s, 2),
                           *y = lw_out_t(s, 0);
    if (!lw_static_shape(s, w, "filter", 4))
        return lw_status(s);
    bool u8 = x->type == CG_TFLITE_TYPE_UINT8;
    if ((x->type != CG_TFLITE_TYPE_INT8 && !u8) || y->type != x->type ||
        w->type != (u8 ? CG_TFLITE_TYPE_UINT8 : CG_TFLITE_TYPE_INT8) ||
        (b && b->type != CG_TFLITE_TYPE_INT32))
        return lw_fail(s, CG_UNSUPPORTED, "quantized %s with %s input, %s filter, %s bias and "
                       "%s output is not lowered (int8/int8/int32/int8 and uint8/uint8/int32/"
                       "uint8 are)", s->op_name, cg_tflite_type_name(x->type),
                       cg_tflite_type_name(w->type), b ? cg_tflite_type_name(b->type) : "no",
                       cg_tflite_type_name(y->type));
    int waxis = depthwise ? 3 : 0;
    if (!quant_ok(s, x, "input", -1, 0) || !quant_ok(s, y, "output", -1, 0) ||
        !quant_ok(s, w, "filter", u8 ? -1 : waxis, w->shape[waxis]))
        return lw_status(s);
    const char *xn = lw_in(s, 0), *wn = lw_in(s, 1), *bn = lw_in(s, 2), *yn = lw_out(s, 0);
    cg_node *n = conv_node(s, s->op_name, CG_TFLITE_DOMAIN, xn, wn, bn, yn);
    int64_t st[2] = {g.stride_h, g.stride_w}, dl[2] = {g.dilation_h, g.dilation_w};
    lw_attr_ints(s, n, "strides", st, 2);
    lw_attr_ints(s, n, "dilations", dl, 2);
    lw_attr_string(s, n, "padding", g.padding == CG_TFLITE_PADDING_VALID ? "VALID" : "SAME");
    lw_attr_string(s, n, "activation", act_name(g.act));
    attr_quant(s, n, "x", x);
    attr_quant(s, n, "w", w);
    attr_quant(s, n, "y", y);
    return lw_status(s);
}

static cg_status q_fully_connected(lw_scope *s)
{
    const cg_tflite_options *o = opts(s, CG_TFLITE_OPT_FullyConnectedOptions);
    int act = o ? o->u.fully_connected.fused_activation_function : CG_TFLITE_ACT_NONE;
    const cg_tflite_tensor *x = lw_in_t(s, 0), *w = lw_in_t(s, 1), *b = lw_in_t(s, 2),
                           *y = lw_out_t(s, 0);
    if (o && o->u.fully_connected.weights_format != 0)
        return lw_fail(s, CG_UNSUPPORTED, "FULLY_CONNECTED with shuffled weights is not "
                       "lowered");
    if (!act_ok(s, act, true) || !lw_static_shape(s, w, "filter", 2))
        return lw_status(s);
    bool u8 = x->type == CG_TFLITE_TYPE_UINT8;
    if ((x->type != CG_TFLITE_TYPE_INT8 && !u8) || y->type != x->type ||
        w->type != (u8 ? CG_TFLITE_TYPE_UINT8 : CG_TFLITE_TYPE_INT8) ||
        (b && b->type != CG_TFLITE_TYPE_INT32))
        return lw_fail(s, CG_UNSUPPORTED, "quantized FULLY_CONNECTED with %s input, %s filter "
                       "and %s output is not lowered (int8 and uint8 throughout are)",
                       cg_tflite_type_name(x->type), cg_tflite_type_name(w->type),
                       cg_tflite_type_name(y->type));
    if (!quant_ok(s, x, "input", -1, 0) || !quant_ok(s, y, "output", -1, 0) ||
        !quant_ok(s, w, "filter", u8 ? -1 : 0, w->shape[0]))
        return lw_status(s);
    cg_node *n = lw_node(s, "FULLY_CONNECTED", CG_TFLITE_DOMAIN, 3, 1, NULL);
    if (n) {
        n->inputs[0] = lw_in(s, 0);
        n->inputs[1] = lw_in(s, 1);
        n->inputs[2] = lw_in(s, 2);
        n->outputs[0] = lw_out(s, 0);
    }
    lw_attr_int(s, n, "keep_num_dims", o && o->u.fully_connected.keep_num_dims);
    lw_attr_string(s, n, "activation", act_name(act));
    attr_quant(s, n, "x", x);
    attr_quant(s, n, "w", w);
    attr_quant(s, n, "y", y);
    return lw_status(s);
}

/* Integer ADD / MUL of one int8/uint8 type, per-tensor quantization. */
static cg_status q_binary(lw_scope *s)
{
    int act = binary_act(s);
    const cg_tflite_tensor *a = lw_in_t(s, 0), *b = lw_in_t(s, 1), *y = lw_out_t(s, 0);
    int32_t code = cg_tflite_op_code(s->lw->tm, s->op)->builtin;
    if (code != CG_TFLITE_OP_ADD && code != CG_TFLITE_OP_MUL)
        return refuse_quantized(s);
    if ((y->type != CG_TFLITE_TYPE_INT8 && y->type != CG_TFLITE_TYPE_UINT8) ||
        a->type != y->type || b->type != y->type)
        return lw_fail(s, CG_UNSUPPORTED, "quantized %s of %s and %s into %s is not lowered "
                       "(int8 or uint8 throughout is)", s->op_name, cg_tflite_type_name(a->type),
                       cg_tflite_type_name(b->type), cg_tflite_type_name(y->type));
    if (!act_ok(s, act, true) || !quant_ok(s, a, "first input", -1, 0) ||
        !quant_ok(s, b, "second input", -1, 0) || !quant_ok(s, y, "output", -1, 0))
        return lw_status(s);
    cg_node *n = lw_node(s, s->op_name, CG_TFLITE_DOMAIN, 2, 1, NULL);
    if (n) {
        n->inputs[0] = lw_in(s, 0);
        n->inputs[1] = lw_in(s, 1);
        n->outputs[0] = lw_out(s, 0);
    }
    lw_attr_string(s, n, "activation", act_name(act));
    attr_quant(s, n, "a", a);
    attr_quant(s, n, "b", b);
    attr_quant(s, n, "y", y);
    return lw_status(s);
}

static cg_status q_mean(lw_scope *s)
{
    const cg_tflite_options *o = opts(s, CG_TFLITE_OPT_ReducerOptions);
    const cg_tflite_tensor *x = lw_in_t(s, 0), *y = lw_out_t(s, 0), *ax = lw_in_t(s, 1);
    if ((x->type != CG_TFLITE_TYPE_INT8 && x->type != CG_TFLITE_TYPE_UINT8) ||
        y->type != x->type || ax->type != CG_TFLITE_TYPE_INT32)
        return lw_fail(s, CG_UNSUPPORTED, "quantized MEAN of %s into %s is not lowered (int8 "
                       "or uint8 throughout, int32 axes, is)", cg_tflite_type_name(x->type),
                       cg_tflite_type_name(y->type));
    if (!quant_ok(s, x, "input", -1, 0) || !quant_ok(s, y, "output", -1, 0))
        return lw_status(s);
    cg_node *n = lw_node(s, "MEAN", CG_TFLITE_DOMAIN, 2, 1, NULL);
    if (n) {
        n->inputs[0] = lw_in(s, 0);
        n->inputs[1] = lw_in(s, 1);
        n->outputs[0] = lw_out(s, 0);
    }
    lw_attr_int(s, n, "keep_dims", o && o->u.b);
    attr_quant(s, n, "x", x);
    attr_quant(s, n, "y", y);
    return lw_status(s);
}

/* --- control flow ---------------------------------------------------------------------- */

static cg_status op_if(lw_scope *s, const lw_rule *r)
{
    (void)r;
    return lw_lower_if(s);
}

static cg_status op_while(lw_scope *s, const lw_rule *r)
{
    (void)r;
    return lw_lower_while(s);
}

/* --- the table ------------------------------------------------------------------------ */

#define ROW(code, fn, onnx, q) {CG_TFLITE_OP_##code, fn, onnx, q}
static const lw_rule rules[] = {
    /* elementwise, one input */
    ROW(ABS, op_unary, "Abs", LW_FLOAT),
    ROW(CEIL, op_unary, "Ceil", LW_FLOAT),
    ROW(COS, op_unary, "Cos", LW_FLOAT),
    ROW(EXP, op_unary, "Exp", LW_FLOAT),
    ROW(FLOOR, op_unary, "Floor", LW_FLOAT),
    ROW(HARD_SWISH, op_unary, "HardSwish", LW_FLOAT),
    ROW(LOG, op_unary, "Log", LW_FLOAT),
    ROW(LOGISTIC, op_unary, "Sigmoid", LW_FLOAT),
    ROW(LOGICAL_NOT, op_unary, "Not", LW_FLOAT),
    ROW(NEG, op_unary, "Neg", LW_FLOAT),
    ROW(RELU, op_unary, "Relu", LW_FLOAT),
    ROW(ROUND, op_unary, "Round", LW_FLOAT), /* half to even, like TFLite's ROUND */
    ROW(SIGN, op_unary, "Sign", LW_FLOAT),
    ROW(SIN, op_unary, "Sin", LW_FLOAT),
    ROW(SQRT, op_unary, "Sqrt", LW_FLOAT),
    ROW(TANH, op_unary, "Tanh", LW_FLOAT),
    ROW(RELU6, op_relu6, NULL, LW_FLOAT),
    ROW(RELU_N1_TO_1, op_relu_n1_to_1, NULL, LW_FLOAT),
    ROW(RSQRT, op_rsqrt, NULL, LW_FLOAT),
    ROW(SQUARE, op_square, NULL, LW_FLOAT),
    ROW(ELU, op_elu, NULL, LW_FLOAT),
    ROW(GELU, op_gelu, NULL, LW_FLOAT),
    ROW(LEAKY_RELU, op_leaky_relu, NULL, LW_FLOAT),
    ROW(PRELU, op_prelu, NULL, LW_FLOAT),
    ROW(SOFTMAX, op_softmax, NULL, LW_FLOAT),
    ROW(LOG_SOFTMAX, op_log_softmax, NULL, LW_FLOAT),
    ROW(CAST, op_cast, NULL, LW_FLOAT),
    /* elementwise, two inputs */
    ROW(ADD, op_binary, "Add", LW_QOWN),
    ROW(MUL, op_binary, "Mul", LW_QOWN),
    ROW(SUB, op_binary, "Sub", LW_FLOAT),
    ROW(DIV, op_binary, "Div", LW_FLOAT),
    ROW(MAXIMUM, op_binary, "Max", LW_FLOAT),
    ROW(MINIMUM, op_binary, "Min", LW_FLOAT),
    ROW(POW, op_binary, "Pow", LW_FLOAT),
    ROW(LESS, op_binary, "Less", LW_FLOAT),
    ROW(LESS_EQUAL, op_binary, "LessOrEqual", LW_FLOAT),
    ROW(GREATER, op_binary, "Greater", LW_FLOAT),
    ROW(GREATER_EQUAL, op_binary, "GreaterOrEqual", LW_FLOAT),
    ROW(EQUAL, op_binary, "Equal", LW_FLOAT),
    ROW(NOT_EQUAL, op_not_equal, NULL, LW_FLOAT),
    ROW(LOGICAL_AND, op_binary, "And", LW_FLOAT),
    ROW(LOGICAL_OR, op_binary, "Or", LW_FLOAT),
    ROW(SQUARED_DIFFERENCE, op_squared_difference, NULL, LW_FLOAT),
    ROW(FLOOR_DIV, op_floor_div, NULL, LW_FLOAT),
    ROW(ADD_N, op_add_n, NULL, LW_FLOAT),
    ROW(SELECT, op_select, NULL, LW_FLOAT),
    ROW(SELECT_V2, op_select, NULL, LW_FLOAT),
    /* convolutions, matrix products, pools */
    ROW(CONV_2D, op_conv2d, NULL, LW_QOWN),
    ROW(DEPTHWISE_CONV_2D, op_depthwise, NULL, LW_QOWN),
    ROW(TRANSPOSE_CONV, op_transpose_conv, NULL, LW_QOWN),
    ROW(FULLY_CONNECTED, op_fully_connected, NULL, LW_QOWN),
    ROW(BATCH_MATMUL, op_batch_matmul, NULL, LW_FLOAT),
    ROW(MAX_POOL_2D, op_pool, "MaxPool", LW_QOWN),
    ROW(AVERAGE_POOL_2D, op_pool, "AveragePool", LW_QOWN),
    /* reductions */
    ROW(MEAN, op_reduce, "ReduceMean", LW_QOWN),
    ROW(SUM, op_reduce, "ReduceSum", LW_QOWN),
    ROW(REDUCE_MAX, op_reduce, "ReduceMax", LW_QOWN),
    ROW(REDUCE_MIN, op_reduce, "ReduceMin", LW_QOWN),
    ROW(REDUCE_PROD, op_reduce, "ReduceProd", LW_QOWN),
    ROW(ARG_MAX, op_arg, "ArgMax", LW_MOVE),
    ROW(ARG_MIN, op_arg, "ArgMin", LW_MOVE),
    /* shapes and data movement */
    ROW(RESHAPE, op_reshape, NULL, LW_MOVE),
    ROW(TRANSPOSE, op_transpose, NULL, LW_MOVE),
    ROW(CONCATENATION, op_concat, NULL, LW_QOWN),
    ROW(PAD, op_pad, NULL, LW_MOVE),
    ROW(PADV2, op_pad, NULL, LW_MOVE),
    ROW(MIRROR_PAD, op_pad, NULL, LW_MOVE),
    ROW(SLICE, op_slice, NULL, LW_MOVE),
    ROW(STRIDED_SLICE, op_strided_slice, NULL, LW_MOVE),
    ROW(GATHER, op_gather, NULL, LW_MOVE),
    ROW(GATHER_ND, op_gather_nd, NULL, LW_MOVE),
    ROW(EXPAND_DIMS, op_expand_dims, NULL, LW_MOVE),
    ROW(SQUEEZE, op_squeeze, NULL, LW_MOVE),
    ROW(TILE, op_shape_operand, "Tile", LW_MOVE),
    ROW(BROADCAST_TO, op_shape_operand, "Expand", LW_MOVE),
    ROW(SHAPE, op_shape, NULL, LW_MOVE),
    ROW(PACK, op_pack, NULL, LW_MOVE),
    ROW(UNPACK, op_unpack, NULL, LW_MOVE),
    ROW(SPLIT, op_split, NULL, LW_MOVE),
    ROW(RESIZE_BILINEAR, op_resize, NULL, LW_FLOAT),
    ROW(RESIZE_NEAREST_NEIGHBOR, op_resize, NULL, LW_FLOAT),
    /* quantization */
    ROW(QUANTIZE, op_quantize, NULL, LW_QOWN),
    ROW(DEQUANTIZE, op_dequantize, NULL, LW_QOWN),
    /* control flow */
    ROW(IF, op_if, NULL, LW_MOVE),
    ROW(WHILE, op_while, NULL, LW_MOVE),
};
#undef ROW

cg_status lw_lower_op(lw_scope *s)
{
    const cg_tflite_opcode *oc = cg_tflite_op_code(s->lw->tm, s->op);
    if (oc->builtin == CG_TFLITE_OP_CUSTOM)
        return lw_fail(s, CG_UNSUPPORTED, "custom op '%s' has no kernel in convgate%s",
                       oc->custom_code ? oc->custom_code : "",
                       cg_tflite_op_is_flex(oc) ? " (a Flex op: TensorFlow kernels, "
                                                  "SELECT_TF_OPS)" : "");
    for (size_t i = 0; i < sizeof rules / sizeof rules[0]; i++) {
        const lw_rule *r = &rules[i];
        if (r->code != oc->builtin)
            continue;
        if (r->quant == LW_FLOAT && any_quantized(s))
            return refuse_quantized(s);
        return r->fn(s, r);
    }
    return lw_fail(s, CG_UNSUPPORTED, "%s is not lowered onto the reference runtime "
                   "(docs/tflite.md lists the ops that are)", s->op_name);
}
