/*
 * The TFLite structural checker (cg_tflite_check): what the reader accepts
 * because FlatBuffers' Verifier does, but TFLite's InterpreterBuilder, its
 * kernels or plain data flow would refuse or get wrong. Rules, each with
 * its id in the report (docs/tflite.md lists them with their sources):
 *   schema-version    Model.version is 3 (TFLite refuses any other)
 *   subgraphs         there is a main subgraph
 *   buffer-sentinel   buffer 0 is empty, as the schema requires
 *   opcode            builtin codes known to the pinned schema, CUSTOM with a
 *                     custom_code, versions >= 1, the two code fields agree
 *   custom-op, flex-op  custom and Flex (SELECT_TF_OPS) ops need kernels
 *                     LiteRT's builtin resolver does not have (warnings)
 *   tensor-type       TensorType known
 *   shape             static dims >= 0; shape_signature of the same rank,
 *                     each dim -1 or equal to the static one
 *   buffer-size       a constant's bytes = elements x element size
 *   quantization      scale/zero_point counts, per-axis dimension and
 *                     size, finite positive scales
 *   options           the options table is the one TFLite reads for the
 *                     op, enum values in range, strides/filters positive
 *   dataflow          every input produced (graph input, constant,
 *                     variable or an earlier operator) before it is read;
 *                     no tensor written twice or overwriting a constant;
 *                     graph outputs produced
 *   control-flow      IF/WHILE/CALL_ONCE branch arity
 *   signature         signature tensors are the subgraph's inputs/outputs
 *   mutating-inputs   one flag per input, or none
 *   external-data     data in external files is not read (warning)
 * Like the ONNX checker it collects every problem, never stops at the
 * first, and fails only on CG_NOMEM.
 */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check/report.h"
#include "convgate/tflite.h"

#define WHERE_MAX 512
#define MESSAGE_MAX 1024

typedef struct tchecker {
    const cg_tflite_model *m;
    cg_check_report *report;
    size_t max_problems;
    bool oom;
    char where[WHERE_MAX];
    char node[24];       /* "#3" of the current operator, or "" */
    const char *op_type; /* its name, or NULL */
    char op_buf[32];
} tchecker;

#if defined(__GNUC__) || defined(__clang__)
__attribute__((format(printf, 4, 5)))
#endif
static void problem(tchecker *ck, cg_check_severity sev, const char *rule, const char *fmt, ...)
{
    char msg[MESSAGE_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (ck->oom) {
        if (sev == CG_CHECK_ERROR)
            ck->report->error_count++;
        else
            ck->report->warning_count++;
        return;
    }
    if (!cg_check_report_add(ck->report, ck->max_problems, sev, rule,
                             ck->where[0] ? ck->where : "model", ck->node[0] ? ck->node : NULL,
                             ck->op_type, msg))
        ck->oom = true;
}

#define ERR(ck, rule, ...) problem((ck), CG_CHECK_ERROR, (rule), __VA_ARGS__)
#define WARN(ck, rule, ...) problem((ck), CG_CHECK_WARNING, (rule), __VA_ARGS__)

static const char *str_or(const char *s, const char *absent)
{
    return s ? s : absent;
}

/* "subgraph 0 'main'" (+ " > tensor 3 'x'" / " > operator #2 (CONV_2D)"). */
static void where_subgraph(tchecker *ck, size_t s)
{
    snprintf(ck->where, sizeof ck->where, "subgraph %zu '%s'", s,
             str_or(ck->m->subgraphs[s].name, ""));
    ck->node[0] = '\0';
    ck->op_type = NULL;
}

static void where_tensor(tchecker *ck, size_t s, size_t t)
{
    where_subgraph(ck, s);
    size_t n = strlen(ck->where);
    snprintf(ck->where + n, sizeof ck->where - n, " > tensor %zu '%s'", t,
             str_or(ck->m->subgraphs[s].tensors[t].name, ""));
}

static void where_operator(tchecker *ck, size_t s, size_t i)
{
    where_subgraph(ck, s);
    const cg_tflite_operator *op = &ck->m->subgraphs[s].operators[i];
    ck->op_type = cg_tflite_op_name(cg_tflite_op_code(ck->m, op), ck->op_buf, sizeof ck->op_buf);
    snprintf(ck->node, sizeof ck->node, "#%zu", i);
    size_t n = strlen(ck->where);
    snprintf(ck->where + n, sizeof ck->where - n, " > operator #%zu (%s)", i, ck->op_type);
}

static void where_model(tchecker *ck, const char *what)
{
    snprintf(ck->where, sizeof ck->where, "%s", what);
    ck->node[0] = '\0';
    ck->op_type = NULL;
}

/* "[1, 4]" */
static const char *dims_text(const int32_t *d, size_t rank, char *buf, size_t n)
{
    size_t used = (size_t)snprintf(buf, n, "[");
    for (size_t i = 0; i < rank && used < n; i++)
        used += (size_t)snprintf(buf + used, n - used, "%s%d", i ? ", " : "", d[i]);
    if (used < n)
        snprintf(buf + used, n - used, "]");
    return buf;
}

/* ---- model-level rules -------------------------------------------------- */

static void check_opcodes(tchecker *ck)
{
    const cg_tflite_model *m = ck->m;
    for (size_t i = 0; i < m->opcode_count; i++) {
        const cg_tflite_opcode *oc = &m->opcodes[i];
        char what[48];
        snprintf(what, sizeof what, "operator_code %zu", i);
        where_model(ck, what);
        if (!cg_tflite_builtin_name(oc->builtin))
            ERR(ck, "opcode",
                "builtin code %d is not a BuiltinOperator of the pinned schema.fbs (0..%d)",
                (int)oc->builtin, CG_TFLITE_OP_COUNT - 1);
        if (oc->version < 1)
            ERR(ck, "opcode", "version %d: operator versions start at 1", (int)oc->version);
        if (oc->builtin == CG_TFLITE_OP_CUSTOM && (!oc->custom_code || !oc->custom_code[0]))
            ERR(ck, "opcode", "CUSTOM operator code without a custom_code: no kernel can be "
                              "looked up for it");
        /* schema_utils.cc: a writer puts min(code, 127) in the byte field
         * (127 = PLACEHOLDER_FOR_GREATER_OP_CODES). Readers take the max,
         * so a larger byte field silently wins. */
        int expect_dep = oc->builtin_code < 127 ? oc->builtin_code : 127;
        if (oc->builtin_code != 0 && oc->deprecated_builtin_code != expect_dep)
            WARN(ck, "opcode",
                 "deprecated_builtin_code %d and builtin_code %d disagree (expected %d); TFLite "
                 "runs %s",
                 oc->deprecated_builtin_code, (int)oc->builtin_code, expect_dep,
                 str_or(cg_tflite_builtin_name(oc->builtin), "an unknown code"));
    }
}

static void check_buffers(tchecker *ck)
{
    const cg_tflite_model *m = ck->m;
    if (m->buffer_count && m->buffers[0].data.len) {
        where_model(ck, "buffer 0");
        ERR(ck, "buffer-sentinel",
            "buffer 0 holds %zu bytes; the schema reserves it as the empty buffer that "
            "tensors without data point to, so its data is never read",
            m->buffers[0].data.len);
    }
    if (m->external_buffer_count) {
        where_model(ck, "model");
        WARN(ck, "external-data",
             "%zu tensors' data lie in external files (ExternalBuffer, %zu groups); convgate "
             "does not open them, so their sizes are not checked",
             m->external_buffer_count, m->external_group_count);
    }
}

/* ---- tensors ------------------------------------------------------------ */

static void check_quant(tchecker *ck, const cg_tflite_tensor *t)
{
    const cg_tflite_quant *q = t->quant;
    if (!q || q->details_type != 0)
        return;
    if (q->scale_count == 0 && q->zero_point_count == 0)
        return; /* min/max only, or empty: not quantized */
    /* InterpreterBuilder::ParseQuantization: "Must have same number". */
    if (q->scale_count != q->zero_point_count) {
        ERR(ck, "quantization", "%zu scales but %zu zero points: TFLite needs one of each",
            q->scale_count, q->zero_point_count);
        return;
    }
    for (size_t i = 0; i < q->scale_count; i++) {
        float s = q->scale[i];
        if (!isfinite(s) || s < 0.0f) {
            ERR(ck, "quantization", "scale[%zu] is %g: scales must be finite and positive", i,
                (double)s);
            break;
        }
        if (s == 0.0f) {
            WARN(ck, "quantization", "scale[%zu] is 0: every value dequantizes to 0", i);
            break;
        }
    }
    if (q->scale_count > 1) {
        int32_t d = q->quantized_dimension;
        if (d < 0 || (size_t)d >= t->rank)
            ERR(ck, "quantization", "per-axis quantization along dimension %d of a rank-%zu tensor",
                (int)d, t->rank);
        else if ((size_t)t->shape[d] != q->scale_count)
            ERR(ck, "quantization",
                "%zu per-axis scales for dimension %d, which has size %d", q->scale_count, (int)d,
                (int)t->shape[d]);
    }
    int32_t lo = 0, hi = -1;
    switch (t->type) {
    case CG_TFLITE_TYPE_INT8: lo = -128, hi = 127; break;
    case CG_TFLITE_TYPE_UINT8: lo = 0, hi = 255; break;
    case CG_TFLITE_TYPE_INT16: lo = -32768, hi = 32767; break;
    case CG_TFLITE_TYPE_INT4: lo = -8, hi = 7; break;
    default: break;
    }
    for (size_t i = 0; hi >= lo && i < q->zero_point_count; i++)
        if (q->zero_point[i] < lo || q->zero_point[i] > hi) {
            ERR(ck, "quantization", "zero_point[%zu] is %lld, outside %s's range [%d, %d]", i,
                (long long)q->zero_point[i], cg_tflite_type_name(t->type), (int)lo, (int)hi);
            break;
        }
}

static void check_tensor(tchecker *ck, const cg_tflite_tensor *t)
{
    const cg_tflite_model *m = ck->m;
    char a[160], b[160];
    if (!cg_tflite_type_name(t->type))
        ERR(ck, "tensor-type", "type %d is not a TensorType of the pinned schema.fbs (0..%d)",
            (int)t->type, CG_TFLITE_TYPE_COUNT - 1);
    bool static_ok = true;
    for (size_t i = 0; i < t->rank; i++)
        if (t->shape[i] < 0) {
            ERR(ck, "shape",
                "shape %s has dim %zu = %d: the static shape holds sizes; unknown dims "
                "are -1 in shape_signature",
                dims_text(t->shape, t->rank, a, sizeof a), i, (int)t->shape[i]);
            static_ok = false;
            break;
        }
    if (t->has_shape_signature) {
        if (t->signature_rank != t->rank) {
            ERR(ck, "shape", "shape_signature %s has rank %zu but shape %s has rank %zu",
                dims_text(t->shape_signature, t->signature_rank, a, sizeof a), t->signature_rank,
                dims_text(t->shape, t->rank, b, sizeof b), t->rank);
        } else {
            for (size_t i = 0; i < t->rank; i++)
                if (t->shape_signature[i] != -1 && t->shape_signature[i] != t->shape[i]) {
                    ERR(ck, "shape",
                        "shape_signature %s disagrees with shape %s at dim %zu (a signature dim "
                        "is -1 or the static size)",
                        dims_text(t->shape_signature, t->signature_rank, a, sizeof a),
                        dims_text(t->shape, t->rank, b, sizeof b), i);
                    break;
                }
        }
    }
    check_quant(ck, t);
    if (t->buffer == 0 || t->buffer >= m->buffer_count)
        return;
    const cg_tflite_buffer *buf = &m->buffers[t->buffer];
    if (buf->data.len == 0 || t->sparsity)
        return; /* no data (an activation), or compressed: sizes differ by design */
    unsigned bits = cg_tflite_type_bits(t->type);
    uint64_t n;
    if (!bits || !static_ok)
        return; /* strings, resources, variants: no fixed size */
    if (!cg_tflite_shape_elements(t->shape, t->rank, &n) || n > UINT64_MAX / bits) {
        ERR(ck, "buffer-size", "shape %s overflows an element count",
            dims_text(t->shape, t->rank, a, sizeof a));
        return;
    }
    uint64_t need = (n * bits + 7) / 8;
    if (need != buf->data.len)
        ERR(ck, "buffer-size",
            "buffer %u holds %zu bytes, but shape %s of %s needs %llu (%llu elements x %u bits)",
            t->buffer, buf->data.len, dims_text(t->shape, t->rank, a, sizeof a),
            cg_tflite_type_name(t->type), (unsigned long long)need, (unsigned long long)n, bits);
}

/* ---- operators ---------------------------------------------------------- */

/* The options table TFLite's parser reads for an op (flatbuffer_conversions.cc
 * reads op->builtin_options_as_<T>(); any other table is ignored and the
 * defaults are used). Ops not listed here are not judged. */
typedef struct op_options {
    int builtin;
    int options;
} op_options;

static const op_options expected_options[] = {
    {CG_TFLITE_OP_ADD, CG_TFLITE_OPT_AddOptions},
    {CG_TFLITE_OP_SUB, CG_TFLITE_OPT_SubOptions},
    {CG_TFLITE_OP_MUL, CG_TFLITE_OPT_MulOptions},
    {CG_TFLITE_OP_DIV, CG_TFLITE_OPT_DivOptions},
    {CG_TFLITE_OP_CONV_2D, CG_TFLITE_OPT_Conv2DOptions},
    {CG_TFLITE_OP_DEPTHWISE_CONV_2D, CG_TFLITE_OPT_DepthwiseConv2DOptions},
    {CG_TFLITE_OP_TRANSPOSE_CONV, CG_TFLITE_OPT_TransposeConvOptions},
    {CG_TFLITE_OP_CONV_3D, CG_TFLITE_OPT_Conv3DOptions},
    {CG_TFLITE_OP_AVERAGE_POOL_2D, CG_TFLITE_OPT_Pool2DOptions},
    {CG_TFLITE_OP_MAX_POOL_2D, CG_TFLITE_OPT_Pool2DOptions},
    {CG_TFLITE_OP_L2_POOL_2D, CG_TFLITE_OPT_Pool2DOptions},
    {CG_TFLITE_OP_FULLY_CONNECTED, CG_TFLITE_OPT_FullyConnectedOptions},
    {CG_TFLITE_OP_SOFTMAX, CG_TFLITE_OPT_SoftmaxOptions},
    {CG_TFLITE_OP_CONCATENATION, CG_TFLITE_OPT_ConcatenationOptions},
    {CG_TFLITE_OP_RESHAPE, CG_TFLITE_OPT_ReshapeOptions},
    {CG_TFLITE_OP_SQUEEZE, CG_TFLITE_OPT_SqueezeOptions},
    {CG_TFLITE_OP_STRIDED_SLICE, CG_TFLITE_OPT_StridedSliceOptions},
    {CG_TFLITE_OP_GATHER, CG_TFLITE_OPT_GatherOptions},
    {CG_TFLITE_OP_MEAN, CG_TFLITE_OPT_ReducerOptions},
    {CG_TFLITE_OP_SUM, CG_TFLITE_OPT_ReducerOptions},
    {CG_TFLITE_OP_REDUCE_MAX, CG_TFLITE_OPT_ReducerOptions},
    {CG_TFLITE_OP_REDUCE_MIN, CG_TFLITE_OPT_ReducerOptions},
    {CG_TFLITE_OP_REDUCE_PROD, CG_TFLITE_OPT_ReducerOptions},
    {CG_TFLITE_OP_RESIZE_BILINEAR, CG_TFLITE_OPT_ResizeBilinearOptions},
    {CG_TFLITE_OP_RESIZE_NEAREST_NEIGHBOR, CG_TFLITE_OPT_ResizeNearestNeighborOptions},
    {CG_TFLITE_OP_BATCH_MATMUL, CG_TFLITE_OPT_BatchMatMulOptions},
    {CG_TFLITE_OP_IF, CG_TFLITE_OPT_IfOptions},
    {CG_TFLITE_OP_WHILE, CG_TFLITE_OPT_WhileOptions},
    {CG_TFLITE_OP_CALL_ONCE, CG_TFLITE_OPT_CallOnceOptions},
    {CG_TFLITE_OP_PACK, CG_TFLITE_OPT_PackOptions},
    {CG_TFLITE_OP_UNPACK, CG_TFLITE_OPT_UnpackOptions},
    {CG_TFLITE_OP_LEAKY_RELU, CG_TFLITE_OPT_LeakyReluOptions},
    {CG_TFLITE_OP_SPLIT, CG_TFLITE_OPT_SplitOptions},
    {CG_TFLITE_OP_SPLIT_V, CG_TFLITE_OPT_SplitVOptions},
    {CG_TFLITE_OP_CAST, CG_TFLITE_OPT_CastOptions},
};

static int expected_options_of(int builtin)
{
    for (size_t i = 0; i < sizeof expected_options / sizeof expected_options[0]; i++)
        if (expected_options[i].builtin == builtin)
            return expected_options[i].options;
    return -1;
}

static void check_enums(tchecker *ck, int padding, int activation)
{
    if (padding != CG_TFLITE_PADDING_SAME && padding != CG_TFLITE_PADDING_VALID)
        ERR(ck, "options", "padding %d is not SAME (0) or VALID (1)", padding);
    if (activation < CG_TFLITE_ACT_NONE || activation > CG_TFLITE_ACT_SIGN_BIT)
        ERR(ck, "options", "fused_activation_function %d is not an ActivationFunctionType (0..5)",
            activation);
}

static void check_positive(tchecker *ck, const char *field, int32_t v)
{
    if (v <= 0)
        ERR(ck, "options", "%s is %d; it must be at least 1", field, (int)v);
}

static void check_options(tchecker *ck, const cg_tflite_operator *op, int builtin)
{
    const cg_tflite_options *o = &op->options;
    int want = expected_options_of(builtin);
    if (want > 0 && o->type != CG_TFLITE_OPT_NONE && o->type != want)
        WARN(ck, "options",
             "carries %s, but TFLite reads %s for this op: it ignores them and uses the "
             "defaults",
             cg_tflite_options_name(o->type), cg_tflite_options_name(want));
    if (want > 0 && o->type != want)
        return;
    switch (o->type) {
    case CG_TFLITE_OPT_Conv2DOptions:
        check_enums(ck, o->u.conv2d.padding, o->u.conv2d.fused_activation_function);
        check_positive(ck, "stride_w", o->u.conv2d.stride_w);
        check_positive(ck, "stride_h", o->u.conv2d.stride_h);
        check_positive(ck, "dilation_w_factor", o->u.conv2d.dilation_w_factor);
        check_positive(ck, "dilation_h_factor", o->u.conv2d.dilation_h_factor);
        break;
    case CG_TFLITE_OPT_DepthwiseConv2DOptions:
        check_enums(ck, o->u.depthwise.padding, o->u.depthwise.fused_activation_function);
        check_positive(ck, "stride_w", o->u.depthwise.stride_w);
        check_positive(ck, "stride_h", o->u.depthwise.stride_h);
        check_positive(ck, "dilation_w_factor", o->u.depthwise.dilation_w_factor);
        check_positive(ck, "dilation_h_factor", o->u.depthwise.dilation_h_factor);
        break;
    case CG_TFLITE_OPT_TransposeConvOptions:
        check_enums(ck, o->u.transpose_conv.padding,
                    o->u.transpose_conv.fused_activation_function);
        check_positive(ck, "stride_w", o->u.transpose_conv.stride_w);
        check_positive(ck, "stride_h", o->u.transpose_conv.stride_h);
        break;
    case CG_TFLITE_OPT_Pool2DOptions:
        check_enums(ck, o->u.pool2d.padding, o->u.pool2d.fused_activation_function);
        check_positive(ck, "stride_w", o->u.pool2d.stride_w);
        check_positive(ck, "stride_h", o->u.pool2d.stride_h);
        check_positive(ck, "filter_width", o->u.pool2d.filter_width);
        check_positive(ck, "filter_height", o->u.pool2d.filter_height);
        break;
    case CG_TFLITE_OPT_FullyConnectedOptions:
        check_enums(ck, 0, o->u.fully_connected.fused_activation_function);
        break;
    case CG_TFLITE_OPT_AddOptions:
    case CG_TFLITE_OPT_SubOptions:
    case CG_TFLITE_OPT_MulOptions:
    case CG_TFLITE_OPT_DivOptions:
        check_enums(ck, 0, o->u.activation.fused_activation_function);
        break;
    case CG_TFLITE_OPT_ConcatenationOptions:
        check_enums(ck, 0, o->u.concat.fused_activation_function);
        break;
    default:
        break;
    }
}

/* The branch subgraph `s` takes `ins` inputs and gives `outs` outputs. */
static void check_arity(tchecker *ck, const char *role, int32_t s, size_t ins, size_t outs)
{
    const cg_tflite_subgraph *g = &ck->m->subgraphs[s];
    if (g->input_count != ins || g->output_count != outs)
        ERR(ck, "control-flow",
            "%s subgraph %d '%s' takes %zu inputs and gives %zu outputs; the operator needs %zu "
            "and %zu",
            role, (int)s, str_or(g->name, ""), g->input_count, g->output_count, ins, outs);
}

static void check_control_flow(tchecker *ck, const cg_tflite_operator *op, int builtin)
{
    const cg_tflite_options *o = &op->options;
    if (builtin == CG_TFLITE_OP_IF && o->type == CG_TFLITE_OPT_IfOptions) {
        if (op->input_count < 1) {
            ERR(ck, "control-flow", "IF without its condition input");
            return;
        }
        check_arity(ck, "then", o->u.subgraphs.first, op->input_count - 1, op->output_count);
        check_arity(ck, "else", o->u.subgraphs.second, op->input_count - 1, op->output_count);
    } else if (builtin == CG_TFLITE_OP_WHILE && o->type == CG_TFLITE_OPT_WhileOptions) {
        check_arity(ck, "cond", o->u.subgraphs.first, op->input_count, 1);
        check_arity(ck, "body", o->u.subgraphs.second, op->input_count, op->input_count);
        if (op->output_count != op->input_count)
            ERR(ck, "control-flow", "WHILE has %zu inputs but %zu outputs; the loop carries "
                                    "each input to the output at its place",
                op->input_count, op->output_count);
    } else if (builtin == CG_TFLITE_OP_CALL_ONCE &&
               o->type == CG_TFLITE_OPT_CallOnceOptions) {
        check_arity(ck, "init", o->u.subgraphs.first, 0, 0);
    } else if ((builtin == CG_TFLITE_OP_IF || builtin == CG_TFLITE_OP_WHILE ||
                builtin == CG_TFLITE_OP_CALL_ONCE) &&
               o->type == CG_TFLITE_OPT_NONE) {
        ERR(ck, "control-flow", "no options: the subgraphs to run are not named");
    }
}

/* ---- data flow ---------------------------------------------------------- */

enum { UNSET = 0, FROM_INPUT, FROM_CONSTANT, FROM_VARIABLE, FROM_OP };

static bool has_data(const cg_tflite_model *m, const cg_tflite_tensor *t)
{
    return t->buffer != 0 && t->buffer < m->buffer_count && m->buffers[t->buffer].data.len > 0;
}

static void check_dataflow(tchecker *ck, size_t s)
{
    const cg_tflite_model *m = ck->m;
    const cg_tflite_subgraph *g = &m->subgraphs[s];
    size_t n = g->tensor_count;
    if (!n)
        return;
    uint8_t *source = calloc(n, 1);
    size_t *producer = calloc(n, sizeof *producer); /* first op writing it, +1 */
    if (!source || !producer) {
        free(source);
        free(producer);
        ck->oom = true;
        return;
    }
    for (size_t i = 0; i < n; i++) {
        if (has_data(m, &g->tensors[i]))
            source[i] = FROM_CONSTANT;
        else if (g->tensors[i].is_variable)
            source[i] = FROM_VARIABLE;
    }
    for (size_t i = 0; i < g->input_count; i++) {
        int32_t t = g->inputs[i];
        if (source[t] == FROM_CONSTANT) {
            where_tensor(ck, s, (size_t)t);
            WARN(ck, "dataflow", "subgraph input %zu has constant data; a fed value replaces it",
                 i);
        }
        source[t] = FROM_INPUT;
    }
    for (size_t i = 0; i < g->operator_count; i++)
        for (size_t k = 0; k < g->operators[i].output_count; k++) {
            int32_t t = g->operators[i].outputs[k];
            if (t >= 0 && !producer[t])
                producer[t] = i + 1;
        }
    /* Walk in execution order: reads need an earlier write. */
    uint8_t *written = calloc(n, 1);
    if (!written) {
        ck->oom = true;
        goto done;
    }
    for (size_t i = 0; i < g->operator_count && !ck->oom; i++) {
        const cg_tflite_operator *op = &g->operators[i];
        where_operator(ck, s, i);
        for (size_t k = 0; k < op->input_count; k++) {
            int32_t t = op->inputs[k];
            if (t < 0 || source[t] || written[t])
                continue;
            const char *name = str_or(g->tensors[t].name, "");
            if (producer[t])
                ERR(ck, "dataflow",
                    "input %zu, tensor %d '%s', is read before operator #%zu writes it (operators "
                    "run in the order they are stored)",
                    k, (int)t, name, producer[t] - 1);
            else
                ERR(ck, "dataflow",
                    "input %zu, tensor %d '%s', is never produced: not a subgraph input, not a "
                    "constant, not a variable, not an operator's output",
                    k, (int)t, name);
            written[t] = 1; /* report each tensor once */
        }
        for (size_t k = 0; k < op->output_count; k++) {
            int32_t t = op->outputs[k];
            if (t < 0)
                continue;
            const char *name = str_or(g->tensors[t].name, "");
            if (written[t] == 2)
                ERR(ck, "dataflow", "output %zu, tensor %d '%s', was already written by operator "
                                    "#%zu: tensors are written once",
                    k, (int)t, name, producer[t] - 1);
            else if (source[t] == FROM_CONSTANT)
                ERR(ck, "dataflow", "output %zu, tensor %d '%s', is a constant (buffer %u)", k,
                    (int)t, name, g->tensors[t].buffer);
            else if (source[t] == FROM_INPUT)
                ERR(ck, "dataflow", "output %zu, tensor %d '%s', is a subgraph input", k, (int)t,
                    name);
            written[t] = 2;
        }
    }
    for (size_t i = 0; i < g->output_count && !ck->oom; i++) {
        int32_t t = g->outputs[i];
        if (source[t] || written[t])
            continue;
        where_tensor(ck, s, (size_t)t);
        ERR(ck, "dataflow",
            "subgraph output %zu is never produced: no operator writes it and it is neither an "
            "input nor a constant",
            i);
    }
done:
    free(written);
    free(source);
    free(producer);
}

static void check_operators(tchecker *ck, size_t s)
{
    const cg_tflite_model *m = ck->m;
    const cg_tflite_subgraph *g = &m->subgraphs[s];
    for (size_t i = 0; i < g->operator_count && !ck->oom; i++) {
        const cg_tflite_operator *op = &g->operators[i];
        const cg_tflite_opcode *oc = cg_tflite_op_code(m, op);
        where_operator(ck, s, i);
        if (cg_tflite_op_is_flex(oc))
            WARN(ck, "flex-op",
                 "Flex op '%s' (SELECT_TF_OPS) runs only with TensorFlow's Flex delegate linked "
                 "in; LiteRT's builtin resolver and the GPU delegates do not have it",
                 oc->custom_code);
        else if (oc->builtin == CG_TFLITE_OP_CUSTOM && oc->custom_code && oc->custom_code[0])
            WARN(ck, "custom-op",
                 "custom op '%s' needs a kernel registered by the application", oc->custom_code);
        if (op->mutating_count && op->mutating_count != op->input_count)
            ERR(ck, "mutating-inputs",
                "%zu mutating_variable_inputs flags for %zu inputs (one per input, or none)",
                op->mutating_count, op->input_count);
        check_options(ck, op, oc->builtin);
        check_control_flow(ck, op, oc->builtin);
    }
}

static void check_signatures(tchecker *ck)
{
    const cg_tflite_model *m = ck->m;
    for (size_t i = 0; i < m->signature_count; i++) {
        const cg_tflite_signature *sg = &m->signatures[i];
        const cg_tflite_subgraph *g = &m->subgraphs[sg->subgraph_index];
        char what[160];
        snprintf(what, sizeof what, "signature_def %zu '%s'", i, str_or(sg->key, ""));
        where_model(ck, what);
        for (int io = 0; io < 2; io++) {
            const cg_tflite_tensor_map *maps = io ? sg->outputs : sg->inputs;
            size_t n = io ? sg->output_count : sg->input_count;
            const int32_t *list = io ? g->outputs : g->inputs;
            size_t list_n = io ? g->output_count : g->input_count;
            for (size_t k = 0; k < n; k++) {
                bool found = false;
                for (size_t j = 0; j < list_n && !found; j++)
                    found = (uint32_t)list[j] == maps[k].tensor_index;
                if (!found)
                    ERR(ck, "signature",
                        "%s '%s' is tensor %u, which is not an %s of subgraph %u",
                        io ? "output" : "input", str_or(maps[k].name, ""), maps[k].tensor_index,
                        io ? "output" : "input", sg->subgraph_index);
                for (size_t j = 0; j < k; j++)
                    if (maps[j].name && maps[k].name && strcmp(maps[j].name, maps[k].name) == 0) {
                        ERR(ck, "signature", "%s name '%s' appears twice",
                            io ? "output" : "input", maps[k].name);
                        break;
                    }
            }
        }
    }
}

cg_status cg_tflite_check(const cg_tflite_model *model, const cg_check_options *opt,
                          cg_check_report *report, cg_error *err)
{
    if (report == NULL)
        return cg_error_set(err, CG_USAGE, "cg_tflite_check: report is NULL");
    memset(report, 0, sizeof *report);
    if (model == NULL)
        return cg_error_set(err, CG_USAGE, "cg_tflite_check: model is NULL");
    cg_check_options defaults;
    cg_check_options_default(&defaults);
    if (!opt)
        opt = &defaults;
    tchecker ck;
    memset(&ck, 0, sizeof ck);
    ck.m = model;
    ck.report = report;
    ck.max_problems = opt->max_problems ? opt->max_problems : 1;

    where_model(&ck, "model");
    if (model->version != 3)
        ERR(&ck, "schema-version",
            "schema version %u: TFLite reads version 3 only (the layout of older versions "
            "differs)",
            model->version);
    if (model->subgraph_count == 0)
        ERR(&ck, "subgraphs", "the model has no subgraph: there is nothing to run");
    check_opcodes(&ck);
    check_buffers(&ck);
    for (size_t s = 0; s < model->subgraph_count && !ck.oom; s++) {
        const cg_tflite_subgraph *g = &model->subgraphs[s];
        for (size_t t = 0; t < g->tensor_count && !ck.oom; t++) {
            where_tensor(&ck, s, t);
            check_tensor(&ck, &g->tensors[t]);
        }
        check_operators(&ck, s);
        check_dataflow(&ck, s);
    }
    if (!ck.oom)
        check_signatures(&ck);
    return cg_check_report_status(report, ck.oom, err);
}
