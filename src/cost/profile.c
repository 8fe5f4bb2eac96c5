/*
 * The cost model and the measurements behind `convgate profile` and the
 * time-weighted verdict of `convgate assign` (convgate/profile.h,
 * docs/cost-model.md).
 *
 * Two halves. The estimate is pure arithmetic over a timing table (per-node
 * reference times, per-partition measurements where there are some, the
 * assumptions elsewhere) so it can be tested on synthetic tables. The
 * measurements run the reference runtime with per-node timing, compile and
 * run each executing partition on its own with inputs captured from a
 * reference run, time each boundary crossing as the copy/transposition the
 * delegate does, and time the real mixed run. Every time is a median of
 * warm runs; init, compile and the first run are reported apart as cold.
 */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "convgate/lower.h"
#include "convgate/profile.h"
#include "convgate/samples.h"
#include "convgate/target.h"
#include "convgate/tensor_io.h"
#include "core/clock.h"
#include "ir/walk.h"

/* --- op classes -------------------------------------------------------------------- */

typedef struct op_class_row {
    const char *op_type;
    cg_op_class cls;
} op_class_row;

/* Ops not listed are "other" (speedup 1 by default: no claim made). */
static const op_class_row op_class_table[] = {
    {"Conv", CG_OP_CLASS_CONV}, {"ConvTranspose", CG_OP_CLASS_CONV},
    {"ConvInteger", CG_OP_CLASS_CONV}, {"QLinearConv", CG_OP_CLASS_CONV},
    {"MatMul", CG_OP_CLASS_MATMUL}, {"Gemm", CG_OP_CLASS_MATMUL},
    {"MatMulInteger", CG_OP_CLASS_MATMUL}, {"QLinearMatMul", CG_OP_CLASS_MATMUL},
    {"Einsum", CG_OP_CLASS_MATMUL},
    {"MaxPool", CG_OP_CLASS_POOL}, {"AveragePool", CG_OP_CLASS_POOL},
    {"GlobalAveragePool", CG_OP_CLASS_POOL}, {"GlobalMaxPool", CG_OP_CLASS_POOL},
    {"LpPool", CG_OP_CLASS_POOL}, {"GlobalLpPool", CG_OP_CLASS_POOL},
    {"BatchNormalization", CG_OP_CLASS_NORM}, {"LayerNormalization", CG_OP_CLASS_NORM},
    {"InstanceNormalization", CG_OP_CLASS_NORM}, {"GroupNormalization", CG_OP_CLASS_NORM},
    {"LRN", CG_OP_CLASS_NORM}, {"Softmax", CG_OP_CLASS_NORM},
    {"LogSoftmax", CG_OP_CLASS_NORM}, {"MeanVarianceNormalization", CG_OP_CLASS_NORM},
    {"Add", CG_OP_CLASS_ELEMENTWISE}, {"Sub", CG_OP_CLASS_ELEMENTWISE},
    {"Mul", CG_OP_CLASS_ELEMENTWISE}, {"Div", CG_OP_CLASS_ELEMENTWISE},
    {"Pow", CG_OP_CLASS_ELEMENTWISE}, {"Max", CG_OP_CLASS_ELEMENTWISE},
    {"Min", CG_OP_CLASS_ELEMENTWISE}, {"Sum", CG_OP_CLASS_ELEMENTWISE},
    {"Mean", CG_OP_CLASS_ELEMENTWISE}, {"Relu", CG_OP_CLASS_ELEMENTWISE},
    {"LeakyRelu", CG_OP_CLASS_ELEMENTWISE}, {"PRelu", CG_OP_CLASS_ELEMENTWISE},
    {"Elu", CG_OP_CLASS_ELEMENTWISE}, {"Selu", CG_OP_CLASS_ELEMENTWISE},
    {"Sigmoid", CG_OP_CLASS_ELEMENTWISE}, {"HardSigmoid", CG_OP_CLASS_ELEMENTWISE},
    {"HardSwish", CG_OP_CLASS_ELEMENTWISE}, {"Tanh", CG_OP_CLASS_ELEMENTWISE},
    {"Clip", CG_OP_CLASS_ELEMENTWISE}, {"Abs", CG_OP_CLASS_ELEMENTWISE},
    {"Neg", CG_OP_CLASS_ELEMENTWISE}, {"Sqrt", CG_OP_CLASS_ELEMENTWISE},
    {"Exp", CG_OP_CLASS_ELEMENTWISE}, {"Log", CG_OP_CLASS_ELEMENTWISE},
    {"Erf", CG_OP_CLASS_ELEMENTWISE}, {"Gelu", CG_OP_CLASS_ELEMENTWISE},
    {"Floor", CG_OP_CLASS_ELEMENTWISE}, {"Ceil", CG_OP_CLASS_ELEMENTWISE},
    {"Round", CG_OP_CLASS_ELEMENTWISE}, {"Reciprocal", CG_OP_CLASS_ELEMENTWISE},
    {"Softplus", CG_OP_CLASS_ELEMENTWISE}, {"Mish", CG_OP_CLASS_ELEMENTWISE},
    {"ReduceMean", CG_OP_CLASS_REDUCE}, {"ReduceSum", CG_OP_CLASS_REDUCE},
    {"ReduceMax", CG_OP_CLASS_REDUCE}, {"ReduceMin", CG_OP_CLASS_REDUCE},
    {"ReduceProd", CG_OP_CLASS_REDUCE}, {"ReduceL1", CG_OP_CLASS_REDUCE},
    {"ReduceL2", CG_OP_CLASS_REDUCE}, {"ReduceSumSquare", CG_OP_CLASS_REDUCE},
    {"ReduceLogSum", CG_OP_CLASS_REDUCE}, {"ReduceLogSumExp", CG_OP_CLASS_REDUCE},
    {"ArgMax", CG_OP_CLASS_REDUCE}, {"ArgMin", CG_OP_CLASS_REDUCE},
    {"Reshape", CG_OP_CLASS_DATA}, {"Flatten", CG_OP_CLASS_DATA},
    {"Squeeze", CG_OP_CLASS_DATA}, {"Unsqueeze", CG_OP_CLASS_DATA},
    {"Transpose", CG_OP_CLASS_DATA}, {"Concat", CG_OP_CLASS_DATA},
    {"Split", CG_OP_CLASS_DATA}, {"Slice", CG_OP_CLASS_DATA},
    {"Gather", CG_OP_CLASS_DATA}, {"Pad", CG_OP_CLASS_DATA},
    {"Identity", CG_OP_CLASS_DATA}, {"Expand", CG_OP_CLASS_DATA},
    {"Tile", CG_OP_CLASS_DATA}, {"DepthToSpace", CG_OP_CLASS_DATA},
    {"SpaceToDepth", CG_OP_CLASS_DATA}, {"Resize", CG_OP_CLASS_DATA},
    {"Shape", CG_OP_CLASS_DATA}, {"Cast", CG_OP_CLASS_DATA},
    /* TFLite builtins, as a .tflite's operators are placed (cg_tflite_op_model) */
    {"CONV_2D", CG_OP_CLASS_CONV}, {"DEPTHWISE_CONV_2D", CG_OP_CLASS_CONV},
    {"TRANSPOSE_CONV", CG_OP_CLASS_CONV}, {"CONV_3D", CG_OP_CLASS_CONV},
    {"FULLY_CONNECTED", CG_OP_CLASS_MATMUL}, {"BATCH_MATMUL", CG_OP_CLASS_MATMUL},
    {"AVERAGE_POOL_2D", CG_OP_CLASS_POOL}, {"MAX_POOL_2D", CG_OP_CLASS_POOL},
    {"L2_POOL_2D", CG_OP_CLASS_POOL},
    {"SOFTMAX", CG_OP_CLASS_NORM}, {"LOG_SOFTMAX", CG_OP_CLASS_NORM},
    {"L2_NORMALIZATION", CG_OP_CLASS_NORM},
    {"LOCAL_RESPONSE_NORMALIZATION", CG_OP_CLASS_NORM},
    {"ADD", CG_OP_CLASS_ELEMENTWISE}, {"SUB", CG_OP_CLASS_ELEMENTWISE},
    {"MUL", CG_OP_CLASS_ELEMENTWISE}, {"DIV", CG_OP_CLASS_ELEMENTWISE},
    {"POW", CG_OP_CLASS_ELEMENTWISE}, {"MAXIMUM", CG_OP_CLASS_ELEMENTWISE},
    {"MINIMUM", CG_OP_CLASS_ELEMENTWISE}, {"RELU", CG_OP_CLASS_ELEMENTWISE},
    {"RELU6", CG_OP_CLASS_ELEMENTWISE}, {"RELU_N1_TO_1", CG_OP_CLASS_ELEMENTWISE},
    {"LEAKY_RELU", CG_OP_CLASS_ELEMENTWISE}, {"PRELU", CG_OP_CLASS_ELEMENTWISE},
    {"ELU", CG_OP_CLASS_ELEMENTWISE}, {"LOGISTIC", CG_OP_CLASS_ELEMENTWISE},
    {"TANH", CG_OP_CLASS_ELEMENTWISE}, {"HARD_SWISH", CG_OP_CLASS_ELEMENTWISE},
    {"GELU", CG_OP_CLASS_ELEMENTWISE}, {"ABS", CG_OP_CLASS_ELEMENTWISE},
    {"NEG", CG_OP_CLASS_ELEMENTWISE}, {"SQRT", CG_OP_CLASS_ELEMENTWISE},
    {"RSQRT", CG_OP_CLASS_ELEMENTWISE}, {"EXP", CG_OP_CLASS_ELEMENTWISE},
    {"LOG", CG_OP_CLASS_ELEMENTWISE}, {"SQUARE", CG_OP_CLASS_ELEMENTWISE},
    {"SQUARED_DIFFERENCE", CG_OP_CLASS_ELEMENTWISE}, {"FLOOR", CG_OP_CLASS_ELEMENTWISE},
    {"MEAN", CG_OP_CLASS_REDUCE}, {"SUM", CG_OP_CLASS_REDUCE},
    {"REDUCE_MAX", CG_OP_CLASS_REDUCE}, {"REDUCE_MIN", CG_OP_CLASS_REDUCE},
    {"REDUCE_PROD", CG_OP_CLASS_REDUCE}, {"ARG_MAX", CG_OP_CLASS_REDUCE},
    {"ARG_MIN", CG_OP_CLASS_REDUCE},
    {"RESHAPE", CG_OP_CLASS_DATA}, {"SQUEEZE", CG_OP_CLASS_DATA},
    {"EXPAND_DIMS", CG_OP_CLASS_DATA}, {"TRANSPOSE", CG_OP_CLASS_DATA},
    {"CONCATENATION", CG_OP_CLASS_DATA}, {"SPLIT", CG_OP_CLASS_DATA},
    {"SLICE", CG_OP_CLASS_DATA}, {"STRIDED_SLICE", CG_OP_CLASS_DATA},
    {"GATHER", CG_OP_CLASS_DATA}, {"GATHER_ND", CG_OP_CLASS_DATA},
    {"PAD", CG_OP_CLASS_DATA}, {"PADV2", CG_OP_CLASS_DATA},
    {"MIRROR_PAD", CG_OP_CLASS_DATA}, {"TILE", CG_OP_CLASS_DATA},
    {"DEPTH_TO_SPACE", CG_OP_CLASS_DATA}, {"SPACE_TO_DEPTH", CG_OP_CLASS_DATA},
    {"RESIZE_BILINEAR", CG_OP_CLASS_DATA}, {"RESIZE_NEAREST_NEIGHBOR", CG_OP_CLASS_DATA},
    {"CAST", CG_OP_CLASS_DATA}, {"QUANTIZE", CG_OP_CLASS_DATA},
    {"DEQUANTIZE", CG_OP_CLASS_DATA},
    /* edge ATen ops, as an ONNX graph is placed for ExecuTorch (onnx-to-aten) */
    {"convolution", CG_OP_CLASS_CONV},
    {"linear", CG_OP_CLASS_MATMUL}, {"addmm", CG_OP_CLASS_MATMUL},
    {"mm", CG_OP_CLASS_MATMUL}, {"bmm", CG_OP_CLASS_MATMUL},
    {"avg_pool2d", CG_OP_CLASS_POOL}, {"max_pool2d", CG_OP_CLASS_POOL},
    {"max_pool2d_with_indices", CG_OP_CLASS_POOL}, {"_adaptive_avg_pool2d", CG_OP_CLASS_POOL},
    {"_native_batch_norm_legit_no_training", CG_OP_CLASS_NORM},
    {"native_layer_norm", CG_OP_CLASS_NORM}, {"_softmax", CG_OP_CLASS_NORM},
    {"_log_softmax", CG_OP_CLASS_NORM},
    {"add", CG_OP_CLASS_ELEMENTWISE}, {"sub", CG_OP_CLASS_ELEMENTWISE},
    {"mul", CG_OP_CLASS_ELEMENTWISE}, {"div", CG_OP_CLASS_ELEMENTWISE},
    {"pow", CG_OP_CLASS_ELEMENTWISE}, {"maximum", CG_OP_CLASS_ELEMENTWISE},
    {"minimum", CG_OP_CLASS_ELEMENTWISE}, {"relu", CG_OP_CLASS_ELEMENTWISE},
    {"hardtanh", CG_OP_CLASS_ELEMENTWISE}, {"clamp", CG_OP_CLASS_ELEMENTWISE},
    {"leaky_relu", CG_OP_CLASS_ELEMENTWISE}, {"prelu", CG_OP_CLASS_ELEMENTWISE},
    {"elu", CG_OP_CLASS_ELEMENTWISE}, {"sigmoid", CG_OP_CLASS_ELEMENTWISE},
    {"tanh", CG_OP_CLASS_ELEMENTWISE}, {"hardswish", CG_OP_CLASS_ELEMENTWISE},
    {"gelu", CG_OP_CLASS_ELEMENTWISE}, {"abs", CG_OP_CLASS_ELEMENTWISE},
    {"neg", CG_OP_CLASS_ELEMENTWISE}, {"sqrt", CG_OP_CLASS_ELEMENTWISE},
    {"exp", CG_OP_CLASS_ELEMENTWISE}, {"log", CG_OP_CLASS_ELEMENTWISE},
    {"erf", CG_OP_CLASS_ELEMENTWISE}, {"floor", CG_OP_CLASS_ELEMENTWISE},
    {"ceil", CG_OP_CLASS_ELEMENTWISE}, {"round", CG_OP_CLASS_ELEMENTWISE},
    {"reciprocal", CG_OP_CLASS_ELEMENTWISE},
    {"mean", CG_OP_CLASS_REDUCE},
    {"view_copy", CG_OP_CLASS_DATA}, {"permute_copy", CG_OP_CLASS_DATA},
    {"squeeze_copy", CG_OP_CLASS_DATA}, {"unsqueeze_copy", CG_OP_CLASS_DATA},
    {"slice_copy", CG_OP_CLASS_DATA}, {"select_copy", CG_OP_CLASS_DATA},
    {"expand_copy", CG_OP_CLASS_DATA}, {"cat", CG_OP_CLASS_DATA},
    {"constant_pad_nd", CG_OP_CLASS_DATA}, {"clone", CG_OP_CLASS_DATA},
    {"upsample_bilinear2d", CG_OP_CLASS_DATA}, {"upsample_nearest2d", CG_OP_CLASS_DATA},
    {"_to_copy", CG_OP_CLASS_DATA}, {"index_select", CG_OP_CLASS_DATA},
    {"embedding", CG_OP_CLASS_DATA}, {"repeat", CG_OP_CLASS_DATA},
};

static const char *const op_class_names[CG_OP_CLASS_COUNT] = {
    "conv", "matmul", "pool", "norm", "elementwise", "reduce", "data", "other"};

const char *cg_op_class_name(cg_op_class c)
{
    return (unsigned)c < CG_OP_CLASS_COUNT ? op_class_names[c] : "?";
}

cg_op_class cg_op_class_of(const char *op_type)
{
    if (!op_type)
        return CG_OP_CLASS_OTHER;
    for (size_t i = 0; i < sizeof op_class_table / sizeof op_class_table[0]; i++)
        if (strcmp(op_class_table[i].op_type, op_type) == 0)
            return op_class_table[i].cls;
    return CG_OP_CLASS_OTHER;
}

bool cg_op_class_from_name(const char *name, cg_op_class *out)
{
    for (int c = 0; c < CG_OP_CLASS_COUNT; c++)
        if (name && strcmp(name, op_class_names[c]) == 0) {
            *out = (cg_op_class)c;
            return true;
        }
    return false;
}

void cg_cost_assumptions_default(cg_cost_assumptions *as)
{
    static const double speedup[CG_OP_CLASS_COUNT] = {4, 4, 2, 2, 2, 2, 1, 1};
    memcpy(as->speedup, speedup, sizeof speedup);
    as->boundary_fixed_us = 20;
    as->bandwidth_gbps = 10;
}

cg_status cg_cost_assumptions_check(const cg_cost_assumptions *as, cg_error *err)
{
    for (int c = 0; c < CG_OP_CLASS_COUNT; c++)
        if (!isfinite(as->speedup[c]) || as->speedup[c] <= 0)
            return cg_error_set(err, CG_USAGE, "speedup of op class '%s' must be a finite "
                                "number > 0, got %g", op_class_names[c], as->speedup[c]);
    if (!isfinite(as->boundary_fixed_us) || as->boundary_fixed_us < 0)
        return cg_error_set(err, CG_USAGE, "boundary cost must be a finite number >= 0 us, "
                            "got %g", as->boundary_fixed_us);
    if (!isfinite(as->bandwidth_gbps) || as->bandwidth_gbps <= 0)
        return cg_error_set(err, CG_USAGE, "bandwidth must be a finite number > 0 GB/s, got %g",
                            as->bandwidth_gbps);
    return CG_OK;
}

double cg_cost_assumed_crossing_ms(const cg_cost_assumptions *as, uint64_t bytes)
{
    /* bytes / (GB/s * 1e9) seconds, in ms */
    return as->boundary_fixed_us * 1e-3 + (double)bytes / (as->bandwidth_gbps * 1e6);
}

double cg_cost_crossing_ms(const cg_cost_assumptions *as, const cg_assignment *a,
                           const cg_boundary *b)
{
    int side = b->to_partition >= 0 ? b->to_partition : b->from_partition;
    const cg_target *t = side >= 0 && (size_t)side < a->partition_count
                             ? a->targets[a->partitions[side].target]
                             : NULL;
    uint64_t bytes = b->known ? b->bytes : 0;
    if (!t || !t->crossing_stated)
        return cg_cost_assumed_crossing_ms(as, bytes);
    return t->crossing_fixed_us * 1e-3 + (double)bytes / (t->crossing_gbps * 1e6);
}

/* --- the estimate -------------------------------------------------------------------- */

double cg_cost_partition_reference_ms(const cg_assignment *a, const double *node_ms, size_t pi)
{
    const cg_partition *p = &a->partitions[pi];
    double sum = 0;
    for (size_t i = 0; i < p->node_count; i++)
        sum += node_ms[p->nodes[i]];
    return sum;
}

double cg_cost_partition_assumed_ms(const cg_assignment *a, const double *node_ms, size_t pi,
                                    const cg_cost_assumptions *as)
{
    const cg_partition *p = &a->partitions[pi];
    double sum = 0;
    for (size_t i = 0; i < p->node_count; i++) {
        size_t v = p->nodes[i];
        sum += node_ms[v] / as->speedup[cg_op_class_of(a->graph->nodes[v].op_type)];
    }
    return sum;
}

/* Index of the partition with id `id` (-1 for the CPU or an unknown id). */
static long part_index(const cg_assignment *a, int id)
{
    if (id < 0)
        return -1;
    if ((size_t)id < a->partition_count && a->partitions[id].id == id)
        return id; /* the partitioner numbers them 0.. in order */
    for (size_t i = 0; i < a->partition_count; i++)
        if (a->partitions[i].id == id)
            return (long)i;
    return -1;
}

static bool time_ok(double v) { return isfinite(v) && v >= 0; }

cg_status cg_cost_estimate_build(const cg_cost_inputs *in, cg_cost_estimate *out, cg_error *err)
{
    cg_cost_assumptions defaults;
    const cg_cost_assumptions *as = in->assume;
    const cg_assignment *a = in->assignment;
    memset(out, 0, sizeof *out);
    out->top_cpu_node = SIZE_MAX;
    if (!as) {
        cg_cost_assumptions_default(&defaults);
        as = &defaults;
    }
    if (!a || !in->node_ms)
        return cg_error_set(err, CG_USAGE, "cost estimate: no assignment or timing table");
    cg_status st = cg_cost_assumptions_check(as, err);
    if (st != CG_OK)
        return st;
    if (!time_ok(in->overhead_ms))
        return cg_error_set(err, CG_USAGE, "cost estimate: runtime overhead %g ms is not a "
                            "time", in->overhead_ms);
    const cg_graph *g = a->graph;
    double total = 0, inside = 0;
    for (size_t v = 0; v < g->node_count; v++) {
        double t = in->node_ms[v];
        if (!time_ok(t))
            return cg_error_set(err, CG_USAGE, "cost estimate: node %zu (%s '%s') has time %g "
                                "ms", v, g->nodes[v].op_type ? g->nodes[v].op_type : "?",
                                g->nodes[v].name ? g->nodes[v].name : "", t);
        total += t;
        if (a->owner[v] != CG_OWNER_CPU) {
            inside += t;
            out->nodes_on_target++;
        } else if (out->top_cpu_node == SIZE_MAX || t > out->top_cpu_ms) {
            out->top_cpu_node = v;
            out->top_cpu_ms = t;
        }
    }
    out->nodes_total = g->node_count;
    out->reference_ms = total + in->overhead_ms;
    out->inside_ms = inside;
    /* The runtime's own overhead (dispatch, allocation, liveness) is paid per
     * step. A measured (executing) partition runs as one step, its delegate's
     * own overhead already inside its measured time; an assumed partition keeps
     * a step per node (nothing is known of the device runtime's overhead). */
    size_t steps_after = g->node_count - out->nodes_on_target;
    for (size_t pi = 0; pi < a->partition_count; pi++)
        steps_after += (in->partition_ms && !isnan(in->partition_ms[pi]))
                           ? 1
                           : a->partitions[pi].node_count;
    double overhead_after =
        g->node_count ? in->overhead_ms * (double)steps_after / (double)g->node_count
                      : in->overhead_ms;
    /* the moved work: the nodes' own time plus the dispatch overhead they no
     * longer pay; the remainder is everything else */
    double moved = inside + (in->overhead_ms - overhead_after);
    out->remainder_ms = out->reference_ms - moved;
    out->time_coverage = out->reference_ms > 0 ? inside / out->reference_ms : 0;

    double acc = 0, bnd = 0;
    int64_t k = 0;
    for (size_t pi = 0; pi < a->partition_count; pi++) {
        bool measured = in->partition_ms && !isnan(in->partition_ms[pi]);
        if (measured) {
            double pm = in->partition_ms[pi];
            double pb = in->partition_boundary_ms ? in->partition_boundary_ms[pi] : 0;
            if (!time_ok(pm) || !time_ok(pb))
                return cg_error_set(err, CG_USAGE, "cost estimate: partition %d has time %g "
                                    "ms, boundary %g ms", a->partitions[pi].id, pm, pb);
            acc += pm;
            bnd += pb;
            k += in->partition_crossings ? (int64_t)in->partition_crossings[pi] : 0;
            out->measured = true;
        } else {
            acc += cg_cost_partition_assumed_ms(a, in->node_ms, pi, as);
            out->assumed = true;
        }
    }
    /* ledger crossings not covered by a measured partition: the boundary model */
    for (size_t i = 0; i < a->boundary_count; i++) {
        const cg_boundary *b = &a->boundaries[i];
        long from = part_index(a, b->from_partition), to = part_index(a, b->to_partition);
        bool covered = in->partition_ms &&
                       ((from >= 0 && !isnan(in->partition_ms[from])) ||
                        (to >= 0 && !isnan(in->partition_ms[to])));
        if (covered)
            continue;
        bnd += cg_cost_crossing_ms(as, a, b);
        k++;
        out->assumed = true;
    }
    out->accelerated_ms = acc;
    out->boundary_ms = bnd;
    out->crossings = k;
    out->gain_ms = moved - acc;
    out->mixed_ms = acc + out->remainder_ms + bnd;

    if (out->reference_ms > 0 && k <= CG_COST_MAX_BOUNDARIES) {
        /* the same sum through the calculator: S is the effective speedup of
         * the moved part, C the mean crossing cost */
        cg_latency_input li = {out->reference_ms, moved, 1.0, k, k ? bnd / (double)k : 0};
        if (moved > 0)
            li.speedup = acc > 0 ? moved / acc : HUGE_VAL;
        cg_error lerr;
        cg_error_clear(&lerr);
        if (isfinite(li.speedup) && cg_cost_latency(&li, &out->latency, &lerr) == CG_OK) {
            out->valid_latency = true;
            out->mixed_ms = out->latency.mixed_ms;
        }
    }
    /* with nothing placed every CPU op "dominates": say so only for a mix */
    out->fallback_dominates = out->nodes_on_target > 0 && out->top_cpu_node != SIZE_MAX &&
                              out->top_cpu_ms >= 0.1 * out->reference_ms &&
                              out->top_cpu_ms > acc && out->top_cpu_ms > 0;
    out->boundary_exceeds_gain = a->partition_count > 0 && bnd > out->gain_ms;
    return CG_OK;
}

/* Appends to text at *used (snprintf semantics, never past len). */
static void put(char *text, size_t len, size_t *used, const char *fmt, ...)
#if defined(__GNUC__) || defined(__clang__)
    __attribute__((format(printf, 4, 5)))
#endif
    ;

static void put(char *text, size_t len, size_t *used, const char *fmt, ...)
{
    if (*used >= len)
        return;
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(text + *used, len - *used, fmt, ap);
    va_end(ap);
    if (n > 0)
        *used = *used + (size_t)n < len ? *used + (size_t)n : len;
}

void cg_cost_verdict_text(const cg_cost_estimate *e, const cg_assignment *a, char *text,
                          size_t text_len)
{
    size_t used = 0;
    if (!text_len)
        return;
    text[0] = '\0';
    double b = e->reference_ms;
    put(text, text_len, &used, "est. %.0f%% of reference time inside partitions (%.3g of %.3g ms)",
        100 * e->time_coverage, e->inside_ms, b);
    if (a->partition_count)
        put(text, text_len, &used, "; mixed est. %.3g ms = %.3g on target + %.3g CPU + %.3g "
            "in %lld crossing%s (%.2fx)", e->mixed_ms, e->accelerated_ms, e->remainder_ms,
            e->boundary_ms, (long long)e->crossings, e->crossings == 1 ? "" : "s",
            e->mixed_ms > 0 ? b / e->mixed_ms : 0.0);
    if (e->top_cpu_node != SIZE_MAX && b > 0) {
        const cg_node *n = &a->graph->nodes[e->top_cpu_node];
        bool refused = false;
        for (size_t i = 0; i < a->unsupported_count; i++)
            refused |= a->unsupported[i].node == e->top_cpu_node;
        put(text, text_len, &used, "; %s op ('%s', %s) takes %.0f%% of time",
            refused ? "one unsupported" : "the costliest CPU",
            n->name && n->name[0] ? n->name : "?", n->op_type ? n->op_type : "?",
            100 * e->top_cpu_ms / b);
    }
    if (e->fallback_dominates)
        put(text, text_len, &used, "; WARNING: a CPU fallback op dominates");
    if (e->boundary_exceeds_gain)
        put(text, text_len, &used, "; WARNING: boundary cost (%.3g ms) exceeds the accelerated "
            "gain (%.3g ms)", e->boundary_ms, e->gain_ms);
    if (e->assumed)
        put(text, text_len, &used, " [%s: assumed speedups and boundary costs]",
            e->measured ? "partly" : "estimate");
}

/* --- measurements: helpers ---------------------------------------------------------- */

/* Every time here is thread CPU time: on a shared machine wall time counts
 * other processes' slices, unevenly between the parts an estimate adds and
 * the run it is compared with. The runtime and the XNNPACK delegate (no
 * thread pool) run a model on the calling thread. */
static double now_s(void)
{
    return cg_clock_seconds(CLOCK_THREAD_CPUTIME_ID);
}

static int cmp_double(const void *x, const void *y)
{
    double a = *(const double *)x, b = *(const double *)y;
    return (a > b) - (a < b);
}

double cg_profile_median(double *v, size_t n)
{
    if (!n)
        return 0;
    qsort(v, n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

void cg_profile_feeds_free(cg_named_value *feeds, size_t count)
{
    for (size_t i = 0; feeds && i < count; i++)
        cg_value_free(feeds[i].value);
    free(feeds);
}

cg_status cg_profile_feeds_make(const cg_model *model, const cg_type_env *types,
                                const cg_random_inputs *random, cg_named_value **feeds,
                                size_t *count, cg_error *err)
{
    const cg_graph *g = model->graph;
    cg_named_value *f = calloc(g->input_count + 1, sizeof *f);
    size_t n = 0;
    cg_status st = CG_OK;
    if (!f)
        return cg_error_set(err, CG_NOMEM, "out of memory making inputs");
    for (size_t i = 0; i < g->input_count; i++) {
        const char *name = g->inputs[i].name;
        if (!name || cg_graph_initializer(g, name))
            continue;
        const cg_value_type *vt = types ? cg_type_env_get(types, name) : NULL;
        if (!vt || !vt->known) {
            st = cg_error_set(err, CG_UNSUPPORTED, "input '%s': no recorded tensor type to "
                              "make a random input from", name);
            goto fail;
        }
        if (vt->rank < 0 || vt->rank > CG_MAX_RANK) {
            st = cg_error_set(err, CG_UNSUPPORTED, "input '%s': rank %d", name, vt->rank);
            goto fail;
        }
        f[n].name = name;
        st = cg_value_alloc_tensor(vt->dtype, vt->rank, vt->dims, &f[n].value, err);
        if (st != CG_OK)
            goto fail;
        n++;
        cg_rng rng;
        cg_random_seed(random, 0, n - 1, &rng);
        st = cg_random_fill(&f[n - 1].value->tensor, cg_random_range(random, name), &rng, err);
        if (st != CG_OK) {
            cg_error_prefix(err, "input '%s': ", name);
            goto fail;
        }
    }
    *feeds = f;
    *count = n;
    return CG_OK;
fail:
    cg_profile_feeds_free(f, n);
    return st;
}

/* --- measurements: the reference runtime ---------------------------------------------- */

void cg_reference_profile_clear(cg_reference_profile *p)
{
    free(p->node_ms);
    memset(p, 0, sizeof *p);
}

/* One timed run; *ms its wall time. Outputs are dropped. */
static cg_status timed_run(cg_runtime *rt, const cg_named_value *feeds, size_t feed_count,
                           double *ms, cg_error *err)
{
    cg_named_value *outs = NULL;
    size_t out_count = 0;
    double t0 = now_s();
    cg_status st = cg_runtime_run(rt, feeds, feed_count, &outs, &out_count, err);
    *ms = (now_s() - t0) * 1e3;
    if (st == CG_OK)
        cg_runtime_free_outputs(outs, out_count);
    return st;
}

/* Largest runs x nodes timing table kept (8 bytes each): 1 GiB. */
#define PROFILE_MAX_SAMPLES ((size_t)1 << 27)

/* The reference runtime being timed: one round at a time, so rounds can be
 * interleaved with the mixed run's (same machine load for both). */
typedef struct ref_timer {
    cg_runtime *rt;
    size_t n, runs;
    double *acc;     /* per node, this run (the runtime adds to it) */
    double *samples; /* [node * runs + round] ms */
    double *walls;   /* [round] ms */
    double *outside; /* [round] ms: the run less its nodes */
} ref_timer;

static void ref_timer_free(ref_timer *t)
{
    cg_runtime_free(t->rt);
    free(t->acc);
    free(t->samples);
    free(t->walls);
    free(t->outside);
    memset(t, 0, sizeof *t);
}

/* Init (timed as cold) and the optional warm-up run. */
static cg_status ref_timer_init(ref_timer *t, const cg_model *model, const cg_named_value *feeds,
                                size_t feed_count, size_t runs, bool warmup,
                                cg_reference_profile *out, cg_error *err)
{
    size_t n = model->graph->node_count;
    memset(t, 0, sizeof *t);
    memset(out, 0, sizeof *out);
    if (runs < 1 || runs > CG_PROFILE_MAX_RUNS)
        return cg_error_set(err, CG_USAGE, "runs must be in [1, %d], got %zu",
                            CG_PROFILE_MAX_RUNS, runs);
    if (n && runs > PROFILE_MAX_SAMPLES / n)
        return cg_error_set(err, CG_LIMIT, "%zu runs x %zu nodes: timing table too large", runs,
                            n);
    t->n = n;
    t->runs = runs;
    t->acc = calloc(n + 1, sizeof *t->acc);
    t->samples = malloc((n * runs + 1) * sizeof *t->samples);
    t->walls = malloc(runs * sizeof *t->walls);
    t->outside = malloc(runs * sizeof *t->outside);
    out->node_ms = calloc(n + 1, sizeof *out->node_ms);
    if (!t->acc || !t->samples || !t->walls || !t->outside || !out->node_ms)
        return cg_error_set(err, CG_NOMEM, "out of memory for the timing table");
    cg_runtime_options opt;
    cg_runtime_options_default(&opt);
    opt.node_seconds = t->acc;
    double t0 = now_s();
    cg_status st = cg_runtime_init(model, &opt, &t->rt, err);
    out->init_ms = (now_s() - t0) * 1e3;
    if (st == CG_OK && warmup)
        st = timed_run(t->rt, feeds, feed_count, &out->first_run_ms, err);
    return st;
}

static cg_status ref_timer_round(ref_timer *t, size_t r, const cg_named_value *feeds,
                                 size_t feed_count, cg_error *err)
{
    memset(t->acc, 0, t->n * sizeof *t->acc);
    cg_status st = timed_run(t->rt, feeds, feed_count, &t->walls[r], err);
    double sum = 0;
    for (size_t v = 0; st == CG_OK && v < t->n; v++) {
        t->samples[v * t->runs + r] = t->acc[v] * 1e3;
        sum += t->acc[v] * 1e3;
    }
    t->outside[r] = t->walls[r] > sum ? t->walls[r] - sum : 0;
    return st;
}

static void ref_timer_finish(ref_timer *t, cg_reference_profile *out)
{
    for (size_t v = 0; v < t->n; v++)
        out->node_ms[v] = cg_profile_median(t->samples + v * t->runs, t->runs);
    out->wall_ms = cg_profile_median(t->walls, t->runs);
    /* per run, then the median: a median of the sum is not the sum of medians */
    out->overhead_ms = cg_profile_median(t->outside, t->runs);
    out->node_count = t->n;
    out->runs = t->runs;
}

cg_status cg_profile_reference(const cg_model *model, const cg_named_value *feeds,
                               size_t feed_count, size_t runs, bool warmup,
                               const cg_progress *progress, cg_reference_profile *out,
                               cg_error *err)
{
    ref_timer t;
    cg_status st = ref_timer_init(&t, model, feeds, feed_count, runs, warmup, out, err);
    for (size_t r = 0; st == CG_OK && r < runs; r++) {
        cg_progress_report(progress, "profile: reference", "runs", r, runs, NULL);
        st = ref_timer_round(&t, r, feeds, feed_count, err);
    }
    if (st == CG_OK)
        ref_timer_finish(&t, out);
    else
        cg_reference_profile_clear(out);
    ref_timer_free(&t);
    return st;
}

/* --- measurements: executing targets -------------------------------------------------- */

void cg_target_profile_clear(cg_target_profile *p)
{
    free(p->parts);
    free(p->crossings);
    memset(p, 0, sizeof *p);
}

/* Values captured from a reference run: the inputs of the executing
 * partitions (by name). */
typedef struct capture {
    const char **names;
    cg_value **values;
    size_t count;
} capture;

static long capture_find(const capture *c, const char *name)
{
    for (size_t i = 0; i < c->count; i++)
        if (strcmp(c->names[i], name) == 0)
            return (long)i;
    return -1;
}

static cg_status capture_observe(void *user, const cg_node *node, const char *name,
                                 const cg_value *value)
{
    (void)node;
    capture *c = user;
    long i = capture_find(c, name);
    if (i < 0 || c->values[i])
        return CG_OK;
    cg_error err;
    cg_error_clear(&err);
    return cg_value_copy(value, &c->values[i], &err);
}

static bool target_executes(const cg_target *t)
{
    return t->kind == CG_TARGET_EXECUTING && t->vt && t->vt->compile && t->vt->run;
}

/* Times what a delegate does with one float tensor at a boundary: a copy,
 * or (layout) the NCHW<->NHWC transposition, into a fresh buffer. Median
 * over runs after one warm-up. Elements of other sizes are copied. */
static cg_status time_crossing(cg_crossing_measure *c, size_t runs, cg_error *err)
{
    cg_status st = CG_OK;
    size_t bytes = (size_t)c->bytes;
    unsigned char *src = malloc(bytes + 1), *dst = malloc(bytes + 1);
    double *t = malloc((runs + 1) * sizeof *t);
    if (!src || !dst || !t) {
        st = cg_error_set(err, CG_NOMEM, "out of memory timing crossing '%s' (%zu bytes)",
                          c->tensor, bytes);
        goto done;
    }
    for (size_t i = 0; i < bytes; i++)
        src[i] = (unsigned char)(i * 131u);
    bool transpose = c->layout && c->rank == 4 && c->dims[1] > 0 &&
                     bytes == (size_t)(c->dims[0] * c->dims[1] * c->dims[2] * c->dims[3]) * 4;
    size_t N = transpose ? (size_t)c->dims[0] : 0, C = transpose ? (size_t)c->dims[1] : 0;
    size_t HW = transpose ? (size_t)(c->dims[2] * c->dims[3]) : 0;
    for (size_t r = 0; r <= runs; r++) {
        double t0 = now_s();
        if (!transpose) {
            memcpy(dst, src, bytes);
        } else if (c->entering) { /* NCHW -> NHWC, the delegate's loop order */
            const float *s = (const float *)(void *)src;
            float *d = (float *)(void *)dst;
            for (size_t nn = 0; nn < N; nn++)
                for (size_t ch = 0; ch < C; ch++)
                    for (size_t q = 0; q < HW; q++)
                        d[nn * HW * C + q * C + ch] = s[(nn * C + ch) * HW + q];
        } else { /* NHWC -> NCHW */
            const float *s = (const float *)(void *)src;
            float *d = (float *)(void *)dst;
            for (size_t nn = 0; nn < N; nn++)
                for (size_t ch = 0; ch < C; ch++)
                    for (size_t q = 0; q < HW; q++)
                        d[(nn * C + ch) * HW + q] = s[nn * HW * C + q * C + ch];
        }
        double dt = (now_s() - t0) * 1e3;
        if (r)
            t[r - 1] = dt;
        /* keep the copy observable so it is not optimized away */
        src[0] ^= dst[bytes ? bytes - 1 : 0];
    }
    c->ms = cg_profile_median(t, runs);
done:
    free(src);
    free(dst);
    free(t);
    return st;
}

static bool ledger_layout(const cg_assignment *a, const char *tensor, int part_id, bool entering)
{
    for (size_t i = 0; i < a->boundary_count; i++) {
        const cg_boundary *b = &a->boundaries[i];
        if (strcmp(b->tensor, tensor) == 0 &&
            (entering ? b->to_partition : b->from_partition) == part_id)
            return b->layout_conversion;
    }
    return false;
}

/* Fills one crossing from a tensor shape. */
static cg_status crossing_set(cg_crossing_measure *c, const cg_assignment *a, size_t pi,
                              const char *tensor, bool entering, cg_dtype dtype, int rank,
                              const int64_t *dims, cg_error *err)
{
    c->partition = pi;
    c->tensor = tensor;
    c->entering = entering;
    c->rank = rank;
    int64_t numel = 1;
    for (int d = 0; d < rank; d++) {
        c->dims[d] = dims[d];
        if (dims[d] < 0 || (dims[d] && numel > INT64_MAX / dims[d]))
            return cg_error_set(err, CG_LIMIT, "crossing '%s': shape overflows", tensor);
        numel *= dims[d];
    }
    size_t bytes;
    if (!cg_tensor_byte_size(dtype, numel, &bytes))
        return cg_error_set(err, CG_LIMIT, "crossing '%s': byte size overflows", tensor);
    c->bytes = bytes;
    /* the ledger leaves out graph inputs and outputs, which the delegate
     * converts all the same: every rank-4 float tensor crosses in NHWC */
    c->layout = ledger_layout(a, tensor, a->partitions[pi].id, entering) ||
                (rank == 4 && dtype == CG_DTYPE_FLOAT);
    return CG_OK;
}

/* One executing partition compiled on its own for timing. */
typedef struct part_timer {
    const cg_partition *part;
    const cg_target *target;
    void *state;
    const cg_value **ins;
    cg_value **outs;
    double *times; /* [round] ms, boundary work included */
} part_timer;

static void part_timer_free(part_timer *pt)
{
    for (size_t o = 0; pt->outs && o < pt->part->output_count; o++)
        cg_value_free(pt->outs[o]);
    if (pt->state)
        pt->target->vt->release(pt->state);
    free(pt->ins);
    free(pt->outs);
    free(pt->times);
}

/* One run of the partition alone; *ms its time. Outputs are dropped. */
static cg_status part_timer_run(part_timer *pt, double *ms, cg_error *err)
{
    double t0 = now_s();
    cg_status st = pt->target->vt->run(pt->state, pt->ins, pt->outs, err);
    *ms = (now_s() - t0) * 1e3;
    if (st != CG_OK)
        cg_error_prefix(err, "running partition %d (%s) alone: ", pt->part->id,
                        pt->target->name);
    for (size_t o = 0; o < pt->part->output_count; o++) {
        cg_value_free(pt->outs[o]);
        pt->outs[o] = NULL;
    }
    return st;
}

/* Resolves partition pi's inputs (captured values or feeds), times its
 * entering crossings, compiles it (cold), runs it once (warm-up) and times
 * its leaving crossings from the shapes that run produced. */
static cg_status part_timer_init(part_timer *pt, const cg_model *model,
                                 const cg_type_env *types, const cg_assignment *a, size_t pi,
                                 const capture *cap, const cg_named_value *feeds,
                                 size_t feed_count, size_t runs, cg_target_profile *out,
                                 cg_error *err)
{
    const cg_partition *part = &a->partitions[pi];
    cg_partition_measure *pm = &out->parts[pi];
    memset(pt, 0, sizeof *pt);
    pt->part = part;
    pt->target = a->targets[part->target];
    pt->ins = calloc(part->input_count + 1, sizeof *pt->ins);
    pt->outs = calloc(part->output_count + 1, sizeof *pt->outs);
    pt->times = malloc((runs + 1) * sizeof *pt->times);
    if (!pt->ins || !pt->outs || !pt->times)
        return cg_error_set(err, CG_NOMEM, "out of memory measuring partition %d", part->id);
    cg_status st;
    for (size_t i = 0; i < part->input_count; i++) {
        const char *name = part->inputs[i];
        long c = capture_find(cap, name);
        pt->ins[i] = c >= 0 ? cap->values[c] : NULL;
        for (size_t f = 0; !pt->ins[i] && f < feed_count; f++)
            if (strcmp(feeds[f].name, name) == 0)
                pt->ins[i] = feeds[f].value;
        if (!pt->ins[i] || pt->ins[i]->kind != CG_VALUE_TENSOR)
            return cg_error_set(err, CG_UNSUPPORTED, "partition %d: input '%s' was not "
                                "produced as a tensor by the reference run", part->id, name);
        cg_crossing_measure *cm = &out->crossings[out->crossing_count];
        const cg_tensor *it = &pt->ins[i]->tensor;
        if ((st = crossing_set(cm, a, pi, name, true, it->dtype, it->rank, it->dims, err)) !=
                CG_OK ||
            (st = time_crossing(cm, runs, err)) != CG_OK)
            return st;
        out->crossing_count++;
        pm->boundary_ms += cm->ms;
        pm->crossings++;
    }
    cg_partition_desc d = {model, a->graph, part->nodes, part->node_count,
                           (const char *const *)part->inputs, part->input_count,
                           (const char *const *)part->outputs, part->output_count, types,
                           1};
    double t0 = now_s();
    st = pt->target->vt->compile(pt->target, &d, &pt->state, err);
    pm->compile_ms = (now_s() - t0) * 1e3;
    if (st != CG_OK) {
        pt->state = NULL;
        cg_error_prefix(err, "compiling partition %d (%s): ", part->id, pt->target->name);
        return st;
    }
    st = pt->target->vt->run(pt->state, pt->ins, pt->outs, err);
    if (st != CG_OK) {
        cg_error_prefix(err, "running partition %d (%s) alone: ", part->id, pt->target->name);
        return st;
    }
    for (size_t o = 0; o < part->output_count; o++) {
        if (!pt->outs[o] || pt->outs[o]->kind != CG_VALUE_TENSOR)
            continue;
        cg_crossing_measure *cm = &out->crossings[out->crossing_count];
        const cg_tensor *ot = &pt->outs[o]->tensor;
        if ((st = crossing_set(cm, a, pi, part->outputs[o], false, ot->dtype, ot->rank,
                               ot->dims, err)) != CG_OK ||
            (cm->layout && (st = time_crossing(cm, runs, err)) != CG_OK))
            return st;
        out->crossing_count++;
        pm->boundary_ms += cm->ms;
        pm->crossings++;
    }
    for (size_t o = 0; o < part->output_count; o++) {
        cg_value_free(pt->outs[o]);
        pt->outs[o] = NULL;
    }
    return CG_OK;
}

cg_status cg_profile_target(const cg_model *model, const cg_type_env *types,
                            const cg_assignment *a, const cg_named_value *feeds,
                            size_t feed_count, size_t runs, const cg_progress *progress,
                            cg_reference_profile *ref, cg_target_profile *out, cg_error *err)
{
    capture cap = {0};
    size_t max_cross = 0, np = 0;
    cg_runtime *rt = NULL, *mixed = NULL;
    part_timer *pts = NULL;
    ref_timer reft;
    cg_reference_profile ref_local;
    double *walls = NULL, *prev = NULL, *per = NULL;
    cg_status st = CG_OK;
    memset(out, 0, sizeof *out);
    memset(&reft, 0, sizeof reft);
    if (!ref)
        ref = &ref_local;
    memset(ref, 0, sizeof *ref);
    if (runs < 1 || runs > CG_PROFILE_MAX_RUNS)
        return cg_error_set(err, CG_USAGE, "runs must be in [1, %d], got %zu",
                            CG_PROFILE_MAX_RUNS, runs);
    out->parts = calloc(a->partition_count + 1, sizeof *out->parts);
    pts = calloc(a->partition_count + 1, sizeof *pts);
    walls = malloc((runs + 1) * sizeof *walls);
    out->all_executing = a->partition_count > 0;
    for (size_t pi = 0; pi < a->partition_count; pi++) {
        const cg_partition *p = &a->partitions[pi];
        if (!target_executes(a->targets[p->target])) {
            out->all_executing = false;
            continue;
        }
        max_cross += p->input_count + p->output_count;
        cap.count += p->input_count;
    }
    out->part_count = a->partition_count;
    out->crossings = calloc(max_cross + 1, sizeof *out->crossings);
    cap.names = calloc(cap.count + 1, sizeof *cap.names);
    cap.values = calloc(cap.count + 1, sizeof *cap.values);
    if (!out->parts || !pts || !walls || !out->crossings || !cap.names || !cap.values) {
        st = cg_error_set(err, CG_NOMEM, "out of memory profiling the targets");
        goto fail;
    }
    cap.count = 0;
    for (size_t pi = 0; pi < a->partition_count; pi++) {
        const cg_partition *p = &a->partitions[pi];
        if (!target_executes(a->targets[p->target]))
            continue;
        for (size_t i = 0; i < p->input_count; i++)
            if (capture_find(&cap, p->inputs[i]) < 0)
                cap.names[cap.count++] = p->inputs[i];
    }
    if (cap.count) { /* one reference run yields every partition input */
        cg_runtime_options opt;
        cg_runtime_options_default(&opt);
        opt.observe = capture_observe;
        opt.observe_user = &cap;
        cg_named_value *outs = NULL;
        size_t out_count = 0;
        if ((st = cg_runtime_init(model, &opt, &rt, err)) != CG_OK ||
            (st = cg_runtime_run(rt, feeds, feed_count, &outs, &out_count, err)) != CG_OK)
            goto fail;
        cg_runtime_free_outputs(outs, out_count);
    }
    for (size_t pi = 0; pi < a->partition_count; pi++)
        if (target_executes(a->targets[a->partitions[pi].target]) &&
            (st = part_timer_init(&pts[pi], model, types, a, pi, &cap, feeds, feed_count, runs,
                                  out, err)) != CG_OK)
            goto fail;

    /* the mixed runtime: init (compiles included) and one warm-up run */
    cg_runtime_options opt;
    cg_runtime_options_default(&opt);
    opt.assignment = a;
    opt.types = types;
    double t0 = now_s(), ms;
    st = cg_runtime_init(model, &opt, &mixed, err);
    out->mixed_init_ms = (now_s() - t0) * 1e3;
    if (st != CG_OK || (st = timed_run(mixed, feeds, feed_count, &ms, err)) != CG_OK)
        goto fail;
    np = cg_runtime_partition_count(mixed);
    prev = calloc(np + 1, sizeof *prev);
    per = malloc((np * runs + 1) * sizeof *per);
    if (!prev || !per) {
        st = cg_error_set(err, CG_NOMEM, "out of memory timing the mixed run");
        goto fail;
    }
    for (size_t i = 0; i < np; i++) {
        cg_runtime_partition_info info;
        if ((st = cg_runtime_partition_info_get(mixed, i, &info, err)) != CG_OK)
            goto fail;
        prev[i] = info.seconds;
    }
    if ((st = ref_timer_init(&reft, model, feeds, feed_count, runs, true, ref, err)) != CG_OK)
        goto fail;

    /* rounds: the reference, each partition alone and the mixed run back to
     * back, so a change of machine load hits the estimate's parts and the
     * measurement alike */
    for (size_t r = 0; r < runs; r++) {
        cg_progress_report(progress, "profile: reference, partitions, mixed", "rounds", r, runs,
                           NULL);
        /* each part runs twice and keeps the second: the first after a switch
         * between runtimes pays for the other's footprint (caches, the
         * allocator's free lists), which neither pays when run alone */
        for (int rep = 0; rep < 2; rep++)
            if ((st = ref_timer_round(&reft, r, feeds, feed_count, err)) != CG_OK)
                goto fail;
        for (size_t pi = 0; pi < a->partition_count; pi++)
            for (int rep = 0; pts[pi].state && rep < 2; rep++)
                if ((st = part_timer_run(&pts[pi], &pts[pi].times[r], err)) != CG_OK)
                    goto fail;
        for (int rep = 0; rep < 2; rep++) {
            if ((st = timed_run(mixed, feeds, feed_count, &walls[r], err)) != CG_OK)
                goto fail;
            for (size_t i = 0; i < np; i++) {
                cg_runtime_partition_info info;
                if ((st = cg_runtime_partition_info_get(mixed, i, &info, err)) != CG_OK)
                    goto fail;
                per[i * runs + r] = (info.seconds - prev[i]) * 1e3;
                prev[i] = info.seconds;
            }
        }
    }
    ref_timer_finish(&reft, ref);
    out->mixed_wall_ms = cg_profile_median(walls, runs);
    for (size_t i = 0; i < np; i++) {
        cg_runtime_partition_info info;
        if ((st = cg_runtime_partition_info_get(mixed, i, &info, err)) != CG_OK)
            goto fail;
        long pi = part_index(a, info.id);
        if (pi >= 0)
            out->parts[pi].in_mixed_ms = cg_profile_median(per + i * runs, runs);
    }
    for (size_t pi = 0; pi < a->partition_count; pi++) {
        cg_partition_measure *pm = &out->parts[pi];
        if (!pts[pi].state)
            continue;
        pm->run_ms = cg_profile_median(pts[pi].times, runs);
        pm->compute_ms = pm->run_ms > pm->boundary_ms ? pm->run_ms - pm->boundary_ms : 0;
        pm->executed = true;
    }
    out->runs = runs;
    goto done;
fail:
    cg_target_profile_clear(out);
    cg_reference_profile_clear(ref);
done:
    if (ref == &ref_local)
        cg_reference_profile_clear(&ref_local);
    ref_timer_free(&reft);
    for (size_t pi = 0; pts && pi < a->partition_count; pi++)
        if (pts[pi].part)
            part_timer_free(&pts[pi]);
    free(pts);
    cg_runtime_free(rt);
    cg_runtime_free(mixed);
    free(walls);
    free(prev);
    free(per);
    for (size_t i = 0; cap.values && i < cap.count; i++)
        cg_value_free(cap.values[i]);
    free(cap.names);
    free(cap.values);
    return st;
}

cg_status cg_profile_estimate(const cg_assignment *a, const cg_reference_profile *ref,
                              const cg_target_profile *tp, const cg_cost_assumptions *assume,
                              cg_cost_estimate *out, bool *any_profiled, cg_error *err)
{
    size_t n = a->partition_count + 1;
    double *ms = malloc(n * sizeof *ms), *boundary = malloc(n * sizeof *boundary);
    size_t *crossings = malloc(n * sizeof *crossings);
    bool assumed = false;
    cg_status st;
    if (ms && boundary && crossings) {
        for (size_t pi = 0; pi < a->partition_count; pi++) {
            ms[pi] = tp->parts[pi].executed ? tp->parts[pi].compute_ms : NAN;
            boundary[pi] = tp->parts[pi].boundary_ms;
            crossings[pi] = tp->parts[pi].crossings;
            assumed = assumed || !tp->parts[pi].executed;
        }
        cg_cost_inputs in = {a, ref->node_ms, ref->overhead_ms, ms, boundary, crossings, assume};
        st = cg_cost_estimate_build(&in, out, err);
    } else {
        st = cg_error_set(err, CG_NOMEM, "out of memory");
    }
    free(ms);
    free(boundary);
    free(crossings);
    if (any_profiled)
        *any_profiled = assumed;
    return st;
}

cg_status cg_profile_quick_estimate_lowered(const cg_lowered *l, const cg_dim_binding *dims,
                                            size_t dim_count, const cg_random_inputs *random,
                                            const cg_assignment *a, cg_cost_estimate *out,
                                            cg_reference_profile *ref_out, cg_error *err)
{
    return cg_profile_quick_estimate_lowered_fed(l, dims, dim_count, random, NULL, 0, a, out,
                                                 ref_out, err);
}

cg_status cg_profile_quick_estimate_lowered_fed(const cg_lowered *l, const cg_dim_binding *dims,
                                                size_t dim_count, const cg_random_inputs *random,
                                                const cg_named_value *fed, size_t fed_count,
                                                const cg_assignment *a, cg_cost_estimate *out,
                                                cg_reference_profile *ref_out, cg_error *err)
{
    cg_named_value *feeds = NULL;
    size_t feed_count = 0, n = l->model->graph->node_count;
    cg_type_env *types = NULL;
    cg_reference_profile ref;
    memset(&ref, 0, sizeof ref);
    double *ms = calloc(n + 1, sizeof *ms);
    cg_status st = ms ? CG_OK : cg_error_set(err, CG_NOMEM, "out of memory timing the model");
    if (st == CG_OK && !fed)
        st = cg_type_env_build_with(l->source, dims, dim_count, random, &types, err);
    if (st == CG_OK && !fed)
        st = cg_profile_feeds_make(l->source, types, random, &feeds, &feed_count, err);
    if (st == CG_OK)
        st = cg_profile_reference(l->source, fed ? fed : feeds, fed ? fed_count : feed_count, 1,
                                  false, NULL, &ref, err);
    if (st == CG_OK) {
        /* the source's times, on the nodes of the graph the targets partition */
        cg_lowered_node_times(l, ref.node_ms, ms);
        free(ref.node_ms);
        ref.node_ms = ms;
        ref.node_count = n;
        ms = NULL;
        cg_cost_inputs in = {a, ref.node_ms, ref.overhead_ms, NULL, NULL, NULL, NULL};
        st = cg_cost_estimate_build(&in, out, err);
    }
    if (st == CG_OK && ref_out) {
        *ref_out = ref;
        memset(&ref, 0, sizeof ref);
    }
    free(ms);
    cg_reference_profile_clear(&ref);
    cg_profile_feeds_free(feeds, feed_count);
    cg_type_env_free(types);
    return st;
}

cg_status cg_profile_quick_estimate_placed(const cg_lowered *l, const cg_type_env *types,
                                           const cg_dim_binding *dims, size_t dim_count,
                                           const cg_random_inputs *random,
                                           const cg_named_value *fed, size_t fed_count,
                                           const cg_assignment *a, cg_cost_estimate *out,
                                           cg_reference_profile *ref_out, cg_error *err)
{
    if (l->declared_types)
        return cg_profile_quick_estimate_lowered_fed(l, dims, dim_count, random, fed, fed_count,
                                                     a, out, ref_out, err);
    return cg_profile_quick_estimate_fed(l->model, types, random, fed, fed_count, a, out,
                                         ref_out, err);
}

cg_status cg_profile_quick_estimate(const cg_model *model, const cg_type_env *types,
                                    const cg_random_inputs *random, const cg_assignment *a,
                                    cg_cost_estimate *out, cg_reference_profile *ref_out,
                                    cg_error *err)
{
    return cg_profile_quick_estimate_fed(model, types, random, NULL, 0, a, out, ref_out, err);
}

cg_status cg_profile_quick_estimate_fed(const cg_model *model, const cg_type_env *types,
                                        const cg_random_inputs *random,
                                        const cg_named_value *fed, size_t fed_count,
                                        const cg_assignment *a, cg_cost_estimate *out,
                                        cg_reference_profile *ref_out, cg_error *err)
{
    cg_named_value *feeds = NULL;
    size_t feed_count = 0;
    cg_reference_profile ref;
    memset(&ref, 0, sizeof ref);
    cg_status st = fed ? CG_OK
                       : cg_profile_feeds_make(model, types, random, &feeds, &feed_count, err);
    if (st == CG_OK)
        st = cg_profile_reference(model, fed ? fed : feeds, fed ? fed_count : feed_count, 1,
                                  false, NULL, &ref, err);
    if (st == CG_OK) {
        cg_cost_inputs in = {a, ref.node_ms, ref.overhead_ms, NULL, NULL, NULL, NULL};
        st = cg_cost_estimate_build(&in, out, err);
    }
    if (st == CG_OK && ref_out) {
        *ref_out = ref;
        memset(&ref, 0, sizeof ref);
    }
    cg_reference_profile_clear(&ref);
    cg_profile_feeds_free(feeds, feed_count);
    return st;
}
