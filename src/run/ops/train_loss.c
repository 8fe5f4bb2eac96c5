/*
 * Loss functions: NegativeLogLikelihoodLoss and SoftmaxCrossEntropyLoss.
 *
 * Both see the scores as [N, C, D] (D = product of d1..dk, 1 without them)
 * and the target as [N, D] class indices. Element (n, d) contributes
 *   loss = -w[t] * score[n, t, d]     with t = target[n, d]
 * where w is the optional weight input (all ones without it). Elements whose
 * target equals ignore_index contribute 0 and weigh 0. Reductions: "none"
 * keeps the target's shape, "sum" adds up, "mean" divides the sum by the sum
 * of the weights of the elements taken part (by N*D when there is neither a
 * weight input nor ignore_index) -- the ONNX reference, 0/0 = NaN included.
 * SoftmaxCrossEntropyLoss feeds log_softmax(scores, axis 1) to the same core
 * and can also return that log-probability tensor. Everything is computed
 * in double and rounded once to the input's type.
 */
#include <math.h>
#include <string.h>

#include "run/kernel.h"
#include "run/ops/kernels.h"

typedef enum loss_reduction { LOSS_NONE, LOSS_SUM, LOSS_MEAN } loss_reduction;

/* The validated operands of a loss node. */
typedef struct loss_args {
    const cg_tensor *scores;
    const cg_tensor *target;
    const cg_tensor *weight; /* NULL when omitted */
    int64_t n, c, d;         /* scores viewed as [n, c, d] */
    loss_reduction reduction;
    bool has_ignore;
    int64_t ignore_index;
} loss_args;

static bool is_loss_float(cg_dtype dt)
{
    return dt == CG_DTYPE_FLOAT || dt == CG_DTYPE_DOUBLE || dt == CG_DTYPE_FLOAT16 ||
           dt == CG_DTYPE_BFLOAT16;
}

/* Reads and checks inputs and attributes shared by both losses. */
static cg_status loss_prepare(cg_kernel_ctx *k, loss_args *a)
{
    memset(a, 0, sizeof *a);
    cg_status st = cg_kernel_require(k, 0, &a->scores);
    if (st != CG_OK)
        return st;
    st = cg_kernel_require(k, 1, &a->target);
    if (st != CG_OK)
        return st;
    a->weight = k->input_count > 2 ? cg_kernel_input(k, 2) : NULL;

    const cg_tensor *x = a->scores, *t = a->target;
    if (!is_loss_float(x->dtype))
        return cg_kernel_fail(k, CG_UNSUPPORTED, "scores of type %s are not supported "
                              "(float16, bfloat16, float or double)", cg_dtype_name(x->dtype));
    if (t->dtype != CG_DTYPE_INT32 && t->dtype != CG_DTYPE_INT64)
        return cg_kernel_fail(k, CG_INVALID, "target must be int32 or int64, got %s",
                              cg_dtype_name(t->dtype));
    if (x->rank < 2)
        return cg_kernel_fail(k, CG_INVALID, "scores must have rank >= 2 (N, C, ...), got "
                              "rank %d", x->rank);
    if (t->rank != x->rank - 1)
        return cg_kernel_fail(k, CG_INVALID, "target rank %d does not match scores rank %d "
                              "(expected %d)", t->rank, x->rank, x->rank - 1);
    if (t->dims[0] != x->dims[0])
        return cg_kernel_fail(k, CG_INVALID, "target dim 0 (%lld) differs from scores N "
                              "(%lld)", (long long)t->dims[0], (long long)x->dims[0]);
    for (int i = 2; i < x->rank; i++)
        if (t->dims[i - 1] != x->dims[i])
            return cg_kernel_fail(k, CG_INVALID, "target dim %d (%lld) differs from scores "
                                  "dim %d (%lld)", i - 1, (long long)t->dims[i - 1], i,
                                  (long long)x->dims[i]);
    a->n = x->dims[0];
    a->c = x->dims[1];
    if (!cg_shape_numel(x->rank - 2, x->dims + 2, &a->d))
        return cg_kernel_fail(k, CG_INVALID, "scores shape overflows");
    if (a->weight) {
        const cg_tensor *w = a->weight;
        if (w->dtype != x->dtype)
            return cg_kernel_fail(k, CG_INVALID, "weight type %s differs from scores type %s",
                                  cg_dtype_name(w->dtype), cg_dtype_name(x->dtype));
        if (w->rank != 1 || w->dims[0] != a->c)
            return cg_kernel_fail(k, CG_INVALID, "weight must have shape [C] = [%lld]",
                                  (long long)a->c);
    }

    const char *red = cg_attr_string(k, "reduction", "mean");
    if (strcmp(red, "none") == 0)
        a->reduction = LOSS_NONE;
    else if (strcmp(red, "sum") == 0)
        a->reduction = LOSS_SUM;
    else if (strcmp(red, "mean") == 0)
        a->reduction = LOSS_MEAN;
    else
        return cg_kernel_fail(k, CG_INVALID, "reduction '%s' is not none, sum or mean", red);
    a->has_ignore = cg_kernel_attr(k, "ignore_index") != NULL;
    a->ignore_index = cg_attr_int(k, "ignore_index", 0);
    return CG_OK;
}

/* The loss itself. `logp` holds the [n, c, d] scores in double, or is NULL
 * to read them from a->scores. Writes output 0. */
static cg_status loss_compute(cg_kernel_ctx *k, const loss_args *a, const double *logp)
{
    int64_t count = a->n * a->d; /* <= numel(scores) unless c == 0 */
    if (a->c == 0 && count > 0)
        return cg_kernel_fail(k, CG_INVALID, "scores have C = 0 classes: no target index is "
                              "valid");
    cg_tensor *out = NULL;
    cg_status st;
    if (a->reduction == LOSS_NONE)
        st = cg_kernel_output(k, 0, a->scores->dtype, a->target->rank, a->target->dims, &out);
    else
        st = cg_kernel_output(k, 0, a->scores->dtype, 0, NULL, &out);
    if (st != CG_OK)
        return st;

    double sum = 0.0, weight_sum = 0.0;
    for (int64_t n = 0; n < a->n; n++) {
        for (int64_t d = 0; d < a->d; d++) {
            int64_t e = n * a->d + d;
            int64_t t = cg_tensor_get_i64(a->target, e);
            double loss = 0.0, w = 0.0;
            if (!(a->has_ignore && t == a->ignore_index)) {
                if (t < 0 || t >= a->c)
                    return cg_kernel_fail(k, CG_INVALID, "target value %lld at element %lld "
                                          "is outside [0, %lld) and is not ignore_index",
                                          (long long)t, (long long)e, (long long)a->c);
                int64_t xi = (n * a->c + t) * a->d + d;
                double score = logp ? logp[xi] : cg_tensor_get_f64(a->scores, xi);
                w = a->weight ? cg_tensor_get_f64(a->weight, t) : 1.0;
                loss = -w * score;
            }
            if (a->reduction == LOSS_NONE)
                cg_tensor_set_f64(out, e, loss);
            sum += loss;
            weight_sum += w;
        }
    }
    if (a->reduction == LOSS_SUM) {
        cg_tensor_set_f64(out, 0, sum);
    } else if (a->reduction == LOSS_MEAN) {
        /* Without weights or ignore_index every element weighs 1, so
         * weight_sum == count and both forms agree. */
        double denom = (a->weight || a->has_ignore) ? weight_sum : (double)count;
        cg_tensor_set_f64(out, 0, sum / denom);
    }
    return CG_OK;
}

cg_status cg_op_negative_log_likelihood_loss(cg_kernel_ctx *k)
{
    loss_args a;
    cg_status st = loss_prepare(k, &a);
    if (st != CG_OK)
        return st;
    return loss_compute(k, &a, NULL);
}

cg_status cg_op_softmax_cross_entropy_loss(cg_kernel_ctx *k)
{
    loss_args a;
    cg_status st = loss_prepare(k, &a);
    if (st != CG_OK)
        return st;
    const cg_tensor *x = a.scores;
    size_t bytes = (size_t)x->numel * sizeof(double);
    if (x->numel > 0 && bytes / sizeof(double) != (size_t)x->numel)
        return cg_kernel_fail(k, CG_LIMIT, "scores too large (%lld elements)",
                              (long long)x->numel);
    double *logp = cg_kernel_scratch(k, bytes ? bytes : 1);
    if (!logp)
        return cg_kernel_fail(k, CG_NOMEM, "out of memory for log-probabilities (%zu bytes)",
                              bytes);
    /* log_softmax over the class axis, one (n, d) column at a time. */
    for (int64_t n = 0; n < a.n; n++) {
        for (int64_t d = 0; d < a.d; d++) {
            int64_t base = n * a.c * a.d + d;
            double m = -INFINITY;
            for (int64_t c = 0; c < a.c; c++) {
                double v = cg_tensor_get_f64(x, base + c * a.d);
                logp[base + c * a.d] = v;
                if (v > m || isnan(v))
                    m = v;
            }
            if (isinf(m) && m < 0)
                m = 0.0; /* all -inf: keep the shift finite; the result follows exp/log */
            double s = 0.0;
            for (int64_t c = 0; c < a.c; c++)
                s += exp(logp[base + c * a.d] - m);
            double ls = log(s);
            for (int64_t c = 0; c < a.c; c++)
                logp[base + c * a.d] = logp[base + c * a.d] - m - ls;
        }
    }
    st = loss_compute(k, &a, logp);
    if (st != CG_OK)
        return st;
    if (k->output_count > 1) {
        cg_tensor *lp = NULL;
        st = cg_kernel_output(k, 1, x->dtype, x->rank, x->dims, &lp);
        if (st != CG_OK)
            return st;
        for (int64_t i = 0; i < x->numel; i++)
            cg_tensor_set_f64(lp, i, logp[i]);
    }
    return CG_OK;
}
