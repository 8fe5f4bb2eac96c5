/*
 * The kernels of CG_TFLITE_DOMAIN (convgate/tflite.h): TFLite's integer
 * operators, which a lowered .tflite keeps because ONNX has no operator
 * with their arithmetic. Each is a transcription of TFLite's reference
 * kernel and of the parameters its Prepare computes:
 *
 *  - fixed point: MultiplyByQuantizedMultiplier (double rounding, TFLite's
 *    default build), gemmlowp's SaturatingRoundingDoublingHighMul and
 *    RoundingDivideByPOT, QuantizeMultiplier (frexp, round half away),
 *    tensorflow/tflite-micro@90b983c2b3f1480642e040bbd2ddb37b998f3424:
 *    tensorflow/lite/kernels/internal/{common.cc,common.h,quantization_util.cc};
 *  - activation ranges: CalculateActivationRangeQuantized, ibid.
 *    tensorflow/lite/kernels/kernel_util.cc (roundf(f / scale) + zero point);
 *  - CONV_2D / DEPTHWISE_CONV_2D: reference_integer_ops::ConvPerChannel and
 *    DepthwiseConvPerChannel (int8; per-channel multipliers from
 *    double(input_scale) * double(filter_scale) / double(output_scale),
 *    PopulateConvolutionQuantizationParams) and reference_ops::Conv for
 *    uint8 (one multiplier from the float product input_scale *
 *    filter_scale, GetQuantizedConvolutionMultipler; filter offset),
 *    ibid. reference/integer_ops/{conv,depthwise_conv}.h, reference/conv.h;
 *    padding: ComputePaddingHeightWidth (kernels/padding.h);
 *  - FULLY_CONNECTED: reference_integer_ops::FullyConnected(PerChannel),
 *    multipliers as google-ai-edge/LiteRT@02f540346b504eaae813e4112aaf18052d4126f7:
 *    tflite/kernels/fully_connected.cc (per-tensor: the float product;
 *    per-channel: the double one);
 *  - ADD: left shift 20, inputs rescaled to twice the larger scale
 *    (google-ai-edge/LiteRT@15ed5faee0801e52f6b00eec8e42858baff7d573:
 *    tflite/kernels/add.cc, reference_integer_ops::AddFunc);
 *  - MUL: one multiplier from the float input1_scale * input2_scale /
 *    output_scale (LiteRT@34ec5badbbbfd4d2147d1362f299f58843f84dfc:
 *    tflite/kernels/mul.cc, reference_integer_ops::MulElementwise);
 *  - MEAN: reference_ops::QuantizedMeanOrSum with the multiplier of
 *    input_scale / output_scale folded with 1/n (LiteRT@03d440c575c0:
 *    tflite/kernels/reduce.cc, reference/reduce.h);
 *  - QUANTIZE: reference_ops::AffineQuantize / PerChannelQuantize
 *    (roundf(x / scale) + zero point, clamped) from float, Requantize
 *    between integer types (reference/{quantize,requantize}.h).
 * Shapes broadcast like numpy (BroadcastBinaryFunction6DSlow).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "run/kernel.h"

cg_status cg_op_tflite_conv_2d(cg_kernel_ctx *k);
cg_status cg_op_tflite_depthwise_conv_2d(cg_kernel_ctx *k);
cg_status cg_op_tflite_fully_connected(cg_kernel_ctx *k);
cg_status cg_op_tflite_add(cg_kernel_ctx *k);
cg_status cg_op_tflite_mul(cg_kernel_ctx *k);
cg_status cg_op_tflite_mean(cg_kernel_ctx *k);
cg_status cg_op_tflite_quantize(cg_kernel_ctx *k);

/* --- TFLite's fixed-point arithmetic --------------------------------------------------- */

/* gemmlowp::SaturatingRoundingDoublingHighMul */
static int32_t srdhm(int32_t a, int32_t b)
{
    if (a == b && a == INT32_MIN)
        return INT32_MAX;
    int64_t ab = (int64_t)a * (int64_t)b;
    int64_t nudge = ab >= 0 ? (INT64_C(1) << 30) : (1 - (INT64_C(1) << 30));
    return (int32_t)((ab + nudge) / (INT64_C(1) << 31));
}

/* gemmlowp::RoundingDivideByPOT (exponent in 0..31) */
static int32_t rdbpot(int32_t x, int exponent)
{
    int32_t mask = (int32_t)((INT64_C(1) << exponent) - 1);
    int32_t remainder = x & mask;
    int32_t threshold = (mask >> 1) + (x < 0 ? 1 : 0);
    /* an arithmetic shift, as on every platform TFLite runs on */
    int32_t q = x >= 0 ? x >> exponent : -(int32_t)((-(int64_t)x + mask) >> exponent);
    return q + (remainder > threshold ? 1 : 0);
}

/* Two's complement wrap of an int64 into int32 (TFLite's int32 arithmetic). */
static int32_t wrap32(int64_t v) { return (int32_t)(uint32_t)(uint64_t)v; }

/* MultiplyByQuantizedMultiplier(int32 x, multiplier, shift), double rounding. */
static int32_t mbqm(int32_t x, int32_t multiplier, int shift)
{
    int left = shift > 0 ? shift : 0, right = shift > 0 ? 0 : -shift;
    return rdbpot(srdhm(wrap32((int64_t)x * (INT64_C(1) << left)), multiplier), right);
}

/* MultiplyByQuantizedMultiplierSmallerThanOneExp (left_shift <= 0). */
static int32_t mbqm_lt1(int32_t x, int32_t multiplier, int left_shift)
{
    return rdbpot(srdhm(x, multiplier), -left_shift);
}

/* QuantizeMultiplier: m = q * 2^shift with q in [0.5, 1) as a Q31 integer. */
static void quantize_multiplier(double m, int32_t *q, int *shift)
{
    if (m == 0.0) {
        *q = 0;
        *shift = 0;
        return;
    }
    double f = frexp(m, shift);
    int64_t fixed = (int64_t)round(f * (double)(INT64_C(1) << 31));
    if (fixed == (INT64_C(1) << 31)) {
        fixed /= 2;
        ++*shift;
    }
    if (*shift < -31) {
        *shift = 0;
        fixed = 0;
    }
    *q = (int32_t)fixed;
}

/* quantize_multiplier for a real multiplier m, refusing one TFLite cannot
 * represent (MultiplyByQuantizedMultiplier takes shifts up to 30). */
static cg_status multiplier(cg_kernel_ctx *k, double m, int32_t *q, int *shift)
{
    if (!(m >= 0) || !isfinite(m))
        return cg_kernel_fail(k, CG_INVALID, "the requantization multiplier is %g", m);
    quantize_multiplier(m, q, shift);
    if (*shift > 30)
        return cg_kernel_fail(k, CG_INVALID, "the requantization multiplier %g is too large "
                              "(the scales are inconsistent)", m);
    return CG_OK;
}

/* --- parameters ------------------------------------------------------------------------ */

typedef struct tq { /* one tensor's quantization, from <p>_scale / <p>_zero_point */
    const float *scale;
    const int64_t *zero_point;
    size_t count;
} tq;

static bool int_range(cg_dtype dt, int32_t *lo, int32_t *hi);

/* <p>_scale and <p>_zero_point: want (0: any) values or one; zero points
 * inside the range of dt, the tensor's type (so the arithmetic stays in
 * int32 as TFLite's does). */
static cg_status tq_get(cg_kernel_ctx *k, const char *p, size_t want, cg_dtype dt, tq *q)
{
    int32_t lo, hi;
    if (!int_range(dt, &lo, &hi))
        return cg_kernel_fail(k, CG_INVALID, "%s is %s, not int8, uint8 or int16", p,
                              cg_dtype_name(dt));
    char sn[32], zn[32];
    size_t ns, nz;
    snprintf(sn, sizeof sn, "%s_scale", p);
    snprintf(zn, sizeof zn, "%s_zero_point", p);
    q->scale = cg_attr_floats(k, sn, &ns);
    q->zero_point = cg_attr_ints(k, zn, &nz);
    q->count = ns;
    if (ns == 0 || nz != ns || (want && ns != 1 && ns != want))
        return cg_kernel_fail(k, CG_INVALID, "%s has %zu values and %s %zu (expected 1%s)", sn,
                              ns, zn, nz, want > 1 ? " or one per output channel" : "");
    for (size_t i = 0; i < ns; i++)
        if (!(q->scale[i] > 0.0f) || !isfinite(q->scale[i]) || q->zero_point[i] < lo ||
            q->zero_point[i] > hi)
            return cg_kernel_fail(k, CG_INVALID, "%s[%zu] = %g, %s[%zu] = %lld", sn, i,
                                  (double)q->scale[i], zn, i, (long long)q->zero_point[i]);
    return CG_OK;
}

static bool int_range(cg_dtype dt, int32_t *lo, int32_t *hi)
{
    switch (dt) {
    case CG_DTYPE_INT8: *lo = -128, *hi = 127; return true;
    case CG_DTYPE_UINT8: *lo = 0, *hi = 255; return true;
    case CG_DTYPE_INT16: *lo = -32768, *hi = 32767; return true;
    default: return false;
    }
}

/* CalculateActivationRangeQuantized on the output's type and parameters. */
static cg_status act_range(cg_kernel_ctx *k, cg_dtype dt, float scale, int32_t zp,
                           int32_t *lo, int32_t *hi)
{
    if (!int_range(dt, lo, hi))
        return cg_kernel_fail(k, CG_INVALID, "output type %s is not int8/uint8/int16",
                              cg_dtype_name(dt));
    const char *act = cg_attr_string(k, "activation", "NONE");
    float fmin, fmax;
    if (strcmp(act, "NONE") == 0)
        return CG_OK;
    if (strcmp(act, "RELU") == 0)
        fmin = 0.0f, fmax = INFINITY;
    else if (strcmp(act, "RELU6") == 0)
        fmin = 0.0f, fmax = 6.0f;
    else if (strcmp(act, "RELU_N1_TO_1") == 0)
        fmin = -1.0f, fmax = 1.0f;
    else
        return cg_kernel_fail(k, CG_INVALID, "activation '%s' (NONE, RELU, RELU6 or "
                              "RELU_N1_TO_1)", act);
    float qmin = roundf(fmin / scale);
    if (qmin >= -2147483648.0f && qmin <= 2147483520.0f)
        *lo = zp + (int32_t)qmin > *lo ? zp + (int32_t)qmin : *lo;
    if (isfinite(fmax)) {
        float qmax = roundf(fmax / scale);
        if (qmax >= -2147483648.0f && qmax <= 2147483520.0f)
            *hi = zp + (int32_t)qmax < *hi ? zp + (int32_t)qmax : *hi;
    }
    return CG_OK;
}

static int32_t clamp32(int32_t v, int32_t lo, int32_t hi) { return v < lo ? lo : v > hi ? hi : v; }

/* An element of an int8/uint8/int16/int32 tensor. */
static int32_t geti(const cg_tensor *t, int64_t i)
{
    switch (t->dtype) {
    case CG_DTYPE_INT8: return ((const int8_t *)t->data)[i];
    case CG_DTYPE_UINT8: return ((const uint8_t *)t->data)[i];
    case CG_DTYPE_INT16: return ((const int16_t *)t->data)[i];
    default: return ((const int32_t *)t->data)[i];
    }
}

static void seti(cg_tensor *t, int64_t i, int32_t v)
{
    switch (t->dtype) {
    case CG_DTYPE_INT8: ((int8_t *)t->data)[i] = (int8_t)v; break;
    case CG_DTYPE_UINT8: ((uint8_t *)t->data)[i] = (uint8_t)v; break;
    default: ((int16_t *)t->data)[i] = (int16_t)v; break;
    }
}

static bool is_q8(cg_dtype dt) { return dt == CG_DTYPE_INT8 || dt == CG_DTYPE_UINT8; }

/* Per-channel multipliers of a convolution or fully-connected op: int8 with
 * per-channel scales uses double(in) * double(filter) / double(out); a
 * per-tensor filter (uint8, and int8 FULLY_CONNECTED) the float product
 * (in * filter) / double(out); int8 convolutions broadcast the one scale
 * through the double formula (PopulateConvolutionQuantizationParams). */
static cg_status channel_multipliers(cg_kernel_ctx *k, const tq *x, const tq *w, const tq *y,
                                     int64_t channels, bool double_path, int32_t **mult,
                                     int **shift)
{
    *mult = cg_kernel_scratch(k, (size_t)channels * sizeof **mult + 1);
    *shift = cg_kernel_scratch(k, (size_t)channels * sizeof **shift + 1);
    if (!*mult || !*shift)
        return cg_kernel_fail(k, CG_NOMEM, "out of memory");
    for (int64_t c = 0; c < channels; c++) {
        float ws = w->count > 1 ? w->scale[c] : w->scale[0];
        double m = double_path ? (double)x->scale[0] * (double)ws / (double)y->scale[0]
                               : (double)(x->scale[0] * ws) / (double)y->scale[0];
        cg_status st = multiplier(k, m, &(*mult)[c], &(*shift)[c]);
        if (st != CG_OK)
            return st;
    }
    return CG_OK;
}

static int64_t pad_before(int64_t in, int64_t k, int64_t stride, int64_t dil, bool same,
                          int64_t *out)
{
    int64_t eff = (k - 1) * dil + 1;
    *out = same ? (in + stride - 1) / stride : (in + stride - eff) / stride;
    int64_t total = (*out - 1) * stride + eff - in;
    return total > 0 ? total / 2 : 0;
}

static cg_status geometry(cg_kernel_ctx *k, int64_t st[2], int64_t dl[2], bool *same)
{
    size_t ns, nd;
    const int64_t *s = cg_attr_ints(k, "strides", &ns), *d = cg_attr_ints(k, "dilations", &nd);
    const char *pad = cg_attr_string(k, "padding", "SAME");
    for (int i = 0; i < 2; i++) {
        st[i] = ns == 2 ? s[i] : 1;
        dl[i] = nd == 2 ? d[i] : 1;
        if (st[i] < 1 || dl[i] < 1 || st[i] > (1 << 20) || dl[i] > (1 << 20))
            return cg_kernel_fail(k, CG_INVALID, "strides %lld and dilations %lld must be in "
                                  "1..2^20", (long long)st[i], (long long)dl[i]);
    }
    if (strcmp(pad, "SAME") != 0 && strcmp(pad, "VALID") != 0)
        return cg_kernel_fail(k, CG_INVALID, "padding '%s' (SAME or VALID)", pad);
    *same = pad[0] == 'S';
    return CG_OK;
}

/* --- CONV_2D, DEPTHWISE_CONV_2D ----------------------------------------------------------- */

static cg_status conv(cg_kernel_ctx *k, bool depthwise)
{
    const cg_tensor *x, *w, *b = cg_kernel_input(k, 2);
    cg_tensor *y;
    tq qx, qw, qy;
    int64_t st[2], dl[2];
    bool same = true;
    cg_status s;
    if ((s = cg_kernel_require(k, 0, &x)) != CG_OK || (s = cg_kernel_require(k, 1, &w)) != CG_OK)
        return s;
    if (!is_q8(x->dtype) || w->dtype != x->dtype || x->rank != 4 || w->rank != 4)
        return cg_kernel_fail(k, CG_INVALID, "input %s rank %d and filter %s rank %d: int8 or "
                              "uint8, both NHWC rank 4", cg_dtype_name(x->dtype), x->rank,
                              cg_dtype_name(w->dtype), w->rank);
    int64_t n = x->dims[0], ih = x->dims[1], iw = x->dims[2], ic = x->dims[3];
    int64_t oc = depthwise ? w->dims[3] : w->dims[0], kh = w->dims[1], kw = w->dims[2];
    int64_t mult = 1;
    if (depthwise) {
        if (w->dims[0] != 1 || ic < 1 || oc % ic != 0)
            return cg_kernel_fail(k, CG_INVALID, "depthwise filter [%lld, %lld, %lld, %lld] "
                                  "for %lld input channels", (long long)w->dims[0],
                                  (long long)kh, (long long)kw, (long long)oc, (long long)ic);
        mult = oc / ic;
    } else if (w->dims[3] != ic) {
        return cg_kernel_fail(k, CG_INVALID, "filter has %lld input channels, the input %lld",
                              (long long)w->dims[3], (long long)ic);
    }
    if (b && (b->dtype != CG_DTYPE_INT32 || b->numel != oc))
        return cg_kernel_fail(k, CG_INVALID, "bias must be int32 with %lld values",
                              (long long)oc);
    if ((s = geometry(k, st, dl, &same)) != CG_OK || (s = tq_get(k, "x", 1, x->dtype, &qx)) != CG_OK ||
        (s = tq_get(k, "w", (size_t)oc, w->dtype, &qw)) != CG_OK ||
        (s = tq_get(k, "y", 1, x->dtype, &qy)) != CG_OK)
        return s;
    if (qx.count != 1 || qy.count != 1)
        return cg_kernel_fail(k, CG_INVALID, "input and output take one scale each");
    int64_t oh, ow;
    int64_t ph = pad_before(ih, kh, st[0], dl[0], same, &oh);
    int64_t pw = pad_before(iw, kw, st[1], dl[1], same, &ow);
    if (oh < 0 || ow < 0)
        return cg_kernel_fail(k, CG_INVALID, "the filter (%lld x %lld) is larger than the "
                              "input (%lld x %lld)", (long long)kh, (long long)kw,
                              (long long)ih, (long long)iw);
    int64_t dims[4] = {n, oh, ow, oc};
    if ((s = cg_kernel_output(k, 0, x->dtype, 4, dims, &y)) != CG_OK)
        return s;
    int32_t lo = 0, hi = 0, *m;
    int *sh;
    bool u8 = x->dtype == CG_DTYPE_UINT8;
    if ((s = act_range(k, x->dtype, qy.scale[0], (int32_t)qy.zero_point[0], &lo, &hi)) != CG_OK ||
        (s = channel_multipliers(k, &qx, &qw, &qy, oc, !u8, &m, &sh)) != CG_OK)
        return s;
    const int32_t x_off = -(int32_t)qx.zero_point[0], y_off = (int32_t)qy.zero_point[0];
    const int32_t *bias = b ? (const int32_t *)b->data : NULL;
    /* Nothing to write: dims of an empty input (a fuzzed model's [1, 2^40,
     * 2^20, 0]) can be huge, and the loops below would walk them without
     * end. */
    if (y->numel == 0)
        return CG_OK;
    /* An empty filter (no input channel) sums nothing: its kh x kw, which
     * no tensor bounds then, is not walked. */
    const bool taps = w->numel > 0;
    /* the work, oh * ow * oc * kh * kw * ic, is not bounded by the output's
     * size: the run's time limit is checked every 2^20 multiply-adds (a
     * position's are W's elements, at least one each) */
    const int64_t pixel_work = 1 + w->numel + oc;
    int64_t work = 0;
    for (int64_t bn = 0; bn < n; bn++)
        for (int64_t oy = 0; oy < oh; oy++)
            for (int64_t ox = 0; ox < ow; ox++) {
                if ((work += pixel_work) >= (INT64_C(1) << 20)) {
                    work = 0;
                    if ((s = cg_kernel_check_time(k)) != CG_OK)
                        return s;
                }
                for (int64_t c = 0; c < oc; c++) {
                    int64_t acc = 0, in_c = depthwise ? c / mult : 0;
                    int32_t w_off = -(int32_t)(qw.count > 1 ? qw.zero_point[c] : qw.zero_point[0]);
                    for (int64_t fy = 0; taps && fy < kh; fy++) {
                        int64_t iy = oy * st[0] - ph + dl[0] * fy;
                        if (iy < 0 || iy >= ih)
                            continue;
                        for (int64_t fx = 0; fx < kw; fx++) {
                            int64_t ix = ox * st[1] - pw + dl[1] * fx;
                            if (ix < 0 || ix >= iw)
                                continue;
                            int64_t xi = ((bn * ih + iy) * iw + ix) * ic;
                            if (depthwise) {
                                int64_t wi = (fy * kw + fx) * oc + c;
                                acc += (int64_t)(geti(w, wi) + w_off) *
                                       (geti(x, xi + in_c) + x_off);
                            } else {
                                int64_t wi = ((c * kh + fy) * kw + fx) * ic;
                                for (int64_t i = 0; i < ic; i++)
                                    acc += (int64_t)(geti(w, wi + i) + w_off) *
                                           (geti(x, xi + i) + x_off);
                            }
                        }
                    }
                    int32_t a = wrap32(acc + (bias ? bias[c] : 0));
                    a = mbqm(a, m[c], sh[c]) + y_off;
                    seti(y, ((bn * oh + oy) * ow + ox) * oc + c, clamp32(a, lo, hi));
                }
            }
    return CG_OK;
}

cg_status cg_op_tflite_conv_2d(cg_kernel_ctx *k) { return conv(k, false); }

cg_status cg_op_tflite_depthwise_conv_2d(cg_kernel_ctx *k) { return conv(k, true); }

/* --- FULLY_CONNECTED --------------------------------------------------------------------- */

cg_status cg_op_tflite_fully_connected(cg_kernel_ctx *k)
{
    const cg_tensor *x, *w, *b = cg_kernel_input(k, 2);
    cg_tensor *y;
    tq qx, qw, qy;
    cg_status s;
    if ((s = cg_kernel_require(k, 0, &x)) != CG_OK || (s = cg_kernel_require(k, 1, &w)) != CG_OK)
        return s;
    if (!is_q8(x->dtype) || w->dtype != x->dtype || w->rank != 2 || x->rank < 1)
        return cg_kernel_fail(k, CG_INVALID, "input %s and filter %s of rank %d: int8 or uint8, "
                              "filter [units, depth]", cg_dtype_name(x->dtype),
                              cg_dtype_name(w->dtype), w->rank);
    int64_t units = w->dims[0], depth = w->dims[1];
    if (depth < 1 || x->numel % depth != 0)
        return cg_kernel_fail(k, CG_INVALID, "input of %lld elements is not a multiple of the "
                              "filter depth %lld", (long long)x->numel, (long long)depth);
    if (b && (b->dtype != CG_DTYPE_INT32 || b->numel != units))
        return cg_kernel_fail(k, CG_INVALID, "bias must be int32 with %lld values",
                              (long long)units);
    int64_t batches = x->numel / depth, dims[CG_MAX_RANK];
    int rank = 2;
    if (cg_attr_int(k, "keep_num_dims", 0)) {
        if (x->dims[x->rank - 1] != depth)
            return cg_kernel_fail(k, CG_INVALID, "keep_num_dims needs the input's last dim "
                                  "(%lld) to be the filter depth %lld",
                                  (long long)x->dims[x->rank - 1], (long long)depth);
        rank = x->rank;
        memcpy(dims, x->dims, (size_t)rank * sizeof *dims);
        dims[rank - 1] = units;
    } else {
        dims[0] = batches;
        dims[1] = units;
    }
    if ((s = tq_get(k, "x", 1, x->dtype, &qx)) != CG_OK ||
        (s = tq_get(k, "w", (size_t)units, w->dtype, &qw)) != CG_OK ||
        (s = tq_get(k, "y", 1, x->dtype, &qy)) != CG_OK)
        return s;
    if ((s = cg_kernel_output(k, 0, x->dtype, rank, dims, &y)) != CG_OK)
        return s;
    int32_t lo = 0, hi = 0, *m;
    int *sh;
    if ((s = act_range(k, x->dtype, qy.scale[0], (int32_t)qy.zero_point[0], &lo, &hi)) != CG_OK ||
        (s = channel_multipliers(k, &qx, &qw, &qy, units, qw.count > 1, &m, &sh)) != CG_OK)
        return s;
    const int32_t x_off = -(int32_t)qx.zero_point[0], y_off = (int32_t)qy.zero_point[0];
    const int32_t *bias = b ? (const int32_t *)b->data : NULL;
    for (int64_t bi = 0; bi < batches; bi++) {
        if ((s = cg_kernel_check_time(k)) != CG_OK)
            return s;
        for (int64_t u = 0; u < units; u++) {
            int32_t w_off = -(int32_t)(qw.count > 1 ? qw.zero_point[u] : qw.zero_point[0]);
            int64_t acc = 0;
            for (int64_t d = 0; d < depth; d++)
                acc += (int64_t)(geti(w, u * depth + d) + w_off) *
                       (geti(x, bi * depth + d) + x_off);
            int32_t a = wrap32(acc + (bias ? bias[u] : 0));
            a = mbqm(a, m[u], sh[u]) + y_off;
            seti(y, bi * units + u, clamp32(a, lo, hi));
        }
    }
    return CG_OK;
}

/* --- ADD, MUL ------------------------------------------------------------------------------ */

typedef struct bcast {
    int rank;
    int64_t dims[CG_MAX_RANK], sa[CG_MAX_RANK], sb[CG_MAX_RANK], idx[CG_MAX_RANK];
    int64_t ia, ib;
} bcast;

static void bcast_next(bcast *c)
{
    for (int d = c->rank - 1; d >= 0; d--) {
        c->ia += c->sa[d];
        c->ib += c->sb[d];
        if (++c->idx[d] < c->dims[d])
            return;
        c->ia -= c->sa[d] * c->dims[d];
        c->ib -= c->sb[d] * c->dims[d];
        c->idx[d] = 0;
    }
}

static cg_status binary(cg_kernel_ctx *k, bool mul)
{
    const cg_tensor *a, *b;
    cg_tensor *y;
    tq qa, qb, qy;
    bcast c;
    cg_status s;
    if ((s = cg_kernel_require(k, 0, &a)) != CG_OK || (s = cg_kernel_require(k, 1, &b)) != CG_OK)
        return s;
    if (!is_q8(a->dtype) || b->dtype != a->dtype)
        return cg_kernel_fail(k, CG_INVALID, "operands %s and %s: int8 or uint8, one type",
                              cg_dtype_name(a->dtype), cg_dtype_name(b->dtype));
    memset(&c, 0, sizeof c);
    if (!cg_broadcast_shapes(a->rank, a->dims, b->rank, b->dims, &c.rank, c.dims))
        return cg_kernel_fail(k, CG_INVALID, "operand shapes do not broadcast");
    if ((s = tq_get(k, "a", 1, a->dtype, &qa)) != CG_OK ||
        (s = tq_get(k, "b", 1, b->dtype, &qb)) != CG_OK ||
        (s = tq_get(k, "y", 1, a->dtype, &qy)) != CG_OK)
        return s;
    if (qa.count != 1 || qb.count != 1 || qy.count != 1)
        return cg_kernel_fail(k, CG_INVALID, "operands and output take one scale each");
    int32_t lo = 0, hi = 0;
    if ((s = act_range(k, a->dtype, qy.scale[0], (int32_t)qy.zero_point[0], &lo, &hi)) != CG_OK ||
        (s = cg_kernel_output(k, 0, a->dtype, c.rank, c.dims, &y)) != CG_OK)
        return s;
    cg_broadcast_strides(a->rank, a->dims, c.rank, c.dims, c.sa);
    cg_broadcast_strides(b->rank, b->dims, c.rank, c.dims, c.sb);
    const int32_t a_off = -(int32_t)qa.zero_point[0], b_off = -(int32_t)qb.zero_point[0];
    const int32_t y_off = (int32_t)qy.zero_point[0];
    if (mul) {
        int32_t m;
        int sh;
        if ((s = multiplier(k, (double)(qa.scale[0] * qb.scale[0] / qy.scale[0]), &m, &sh)) !=
            CG_OK)
            return s;
        for (int64_t i = 0; i < y->numel; i++, bcast_next(&c)) {
            int32_t v = y_off + mbqm((geti(a, c.ia) + a_off) * (geti(b, c.ib) + b_off), m, sh);
            seti(y, i, clamp32(v, lo, hi));
        }
        return CG_OK;
    }
    const int left = 20;
    double twice_max = 2.0 * (double)(qa.scale[0] > qb.scale[0] ? qa.scale[0] : qb.scale[0]);
    double ra = (double)qa.scale[0] / twice_max, rb = (double)qb.scale[0] / twice_max;
    double ry = twice_max / ((double)(1 << left) * (double)qy.scale[0]);
    int32_t ma, mb, my;
    int sa, sb, sy;
    if (!(ry < 1.0))
        return cg_kernel_fail(k, CG_INVALID, "output scale %g is too small for input scales "
                              "%g and %g (TFLite requires the rescaled output multiplier < 1)",
                              (double)qy.scale[0], (double)qa.scale[0], (double)qb.scale[0]);
    if ((s = multiplier(k, ra, &ma, &sa)) != CG_OK || (s = multiplier(k, rb, &mb, &sb)) != CG_OK ||
        (s = multiplier(k, ry, &my, &sy)) != CG_OK)
        return s;
    for (int64_t i = 0; i < y->numel; i++, bcast_next(&c)) {
        int32_t va = (geti(a, c.ia) + a_off) * (1 << left);
        int32_t vb = (geti(b, c.ib) + b_off) * (1 << left);
        int32_t sum = mbqm_lt1(va, ma, sa) + mbqm_lt1(vb, mb, sb);
        int32_t v = mbqm_lt1(sum, my, sy) + y_off;
        seti(y, i, clamp32(v, lo, hi));
    }
    return CG_OK;
}

cg_status cg_op_tflite_add(cg_kernel_ctx *k) { return binary(k, false); }

cg_status cg_op_tflite_mul(cg_kernel_ctx *k) { return binary(k, true); }

/* --- MEAN ---------------------------------------------------------------------------------- */

cg_status cg_op_tflite_mean(cg_kernel_ctx *k)
{
    const cg_tensor *x, *axes;
    cg_tensor *y;
    tq qx, qy;
    cg_status s;
    if ((s = cg_kernel_require(k, 0, &x)) != CG_OK || (s = cg_kernel_require(k, 1, &axes)) != CG_OK)
        return s;
    if (!is_q8(x->dtype) || axes->dtype != CG_DTYPE_INT32)
        return cg_kernel_fail(k, CG_INVALID, "input %s and axes %s: int8/uint8, int32",
                              cg_dtype_name(x->dtype), cg_dtype_name(axes->dtype));
    bool reduced[CG_MAX_RANK] = {false};
    for (int64_t i = 0; i < axes->numel; i++) {
        int64_t a = ((const int32_t *)axes->data)[i];
        if (a < 0)
            a += x->rank;
        if (a < 0 || a >= x->rank)
            return cg_kernel_fail(k, CG_INVALID, "axis %d is out of range for rank %d",
                                  ((const int32_t *)axes->data)[i], x->rank);
        reduced[a] = true;
    }
    bool keep = cg_attr_int(k, "keep_dims", 0) != 0;
    int64_t dims[CG_MAX_RANK], ostride[CG_MAX_RANK], count = 1;
    int rank = 0;
    for (int d = 0; d < x->rank; d++) {
        if (reduced[d])
            count *= x->dims[d];
        if (!reduced[d] || keep)
            dims[rank++] = reduced[d] ? 1 : x->dims[d];
    }
    if ((s = tq_get(k, "x", 1, x->dtype, &qx)) != CG_OK ||
        (s = tq_get(k, "y", 1, x->dtype, &qy)) != CG_OK ||
        (s = cg_kernel_output(k, 0, x->dtype, rank, dims, &y)) != CG_OK)
        return s;
    /* the output stride of each input dim (0 along reduced dims) */
    int64_t st = 1;
    for (int d = x->rank - 1, o = rank - 1; d >= 0; d--) {
        if (reduced[d] && !keep) {
            ostride[d] = 0;
            continue;
        }
        ostride[d] = reduced[d] ? 0 : st;
        st *= dims[o];
        o--;
    }
    if (count == 0 || x->numel == 0)
        return CG_OK;
    int32_t *sums = cg_kernel_scratch(k, (size_t)y->numel * sizeof *sums + 1);
    if (!sums)
        return cg_kernel_fail(k, CG_NOMEM, "out of memory");
    memset(sums, 0, (size_t)y->numel * sizeof *sums);
    int64_t idx[CG_MAX_RANK] = {0}, o = 0;
    for (int64_t i = 0; i < x->numel; i++) {
        sums[o] = wrap32((int64_t)sums[o] + geti(x, i));
        for (int d = x->rank - 1; d >= 0; d--) {
            o += ostride[d];
            if (++idx[d] < x->dims[d])
                break;
            o -= ostride[d] * x->dims[d];
            idx[d] = 0;
        }
    }
    int32_t m;
    int sh;
    if ((s = multiplier(k, (double)qx.scale[0] / (double)qy.scale[0], &m, &sh)) != CG_OK)
        return s;
    int shift = 63;
    while (shift > 0 && !(((uint64_t)count >> shift) & 1))
        shift--;
    if (shift > 32)
        shift = 32;
    if (shift > 31 + sh)
        shift = 31 + sh;
    m = (int32_t)((int64_t)((uint64_t)(uint32_t)m << shift) / count);
    sh -= shift;
    int32_t lo = 0, hi = 0;
    int_range(x->dtype, &lo, &hi);
    const int32_t x_zp = (int32_t)qx.zero_point[0], y_zp = (int32_t)qy.zero_point[0];
    for (int64_t j = 0; j < y->numel; j++) {
        int32_t shifted = wrap32((int64_t)sums[j] - (int64_t)x_zp * count);
        seti(y, j, clamp32(mbqm(shifted, m, sh) + y_zp, lo, hi));
    }
    return CG_OK;
}

/* --- QUANTIZE ------------------------------------------------------------------------------ */

cg_status cg_op_tflite_quantize(cg_kernel_ctx *k)
{
    const cg_tensor *x;
    cg_tensor *y;
    tq qy, qx;
    cg_status s;
    if ((s = cg_kernel_require(k, 0, &x)) != CG_OK)
        return s;
    cg_dtype to = (cg_dtype)cg_attr_int(k, "to", 0);
    int32_t lo = 0, hi = 0;
    if (!int_range(to, &lo, &hi))
        return cg_kernel_fail(k, CG_INVALID, "'to' is %d, not int8, uint8 or int16", (int)to);
    if ((s = tq_get(k, "y", 0, to, &qy)) != CG_OK)
        return s;
    int64_t axis = cg_attr_int(k, "axis", 0), inner = 1, len = 1;
    if (qy.count > 1) {
        if (axis < 0 || axis >= x->rank || x->dims[axis] != (int64_t)qy.count)
            return cg_kernel_fail(k, CG_INVALID, "%zu output scales along axis %lld of a rank "
                                  "%d input", qy.count, (long long)axis, x->rank);
        len = x->dims[axis];
        for (int d = (int)axis + 1; d < x->rank; d++)
            inner *= x->dims[d];
    }
    if ((s = cg_kernel_output(k, 0, to, x->rank, x->dims, &y)) != CG_OK)
        return s;
    if (x->dtype == CG_DTYPE_FLOAT || x->dtype == CG_DTYPE_DOUBLE) {
        for (int64_t i = 0; i < x->numel; i++) {
            size_t c = qy.count > 1 ? (size_t)((i / inner) % len) : 0;
            double r; /* TfLiteRound(val / scale): in float, in double for float64 */
            if (x->dtype == CG_DTYPE_FLOAT)
                r = roundf(((const float *)x->data)[i] / qy.scale[c]);
            else
                r = round(((const double *)x->data)[i] / (double)qy.scale[c]);
            double v = r + (double)qy.zero_point[c];
            seti(y, i, v != v ? (int32_t)qy.zero_point[c] : v < lo ? lo : v > hi ? hi : (int32_t)v);
        }
        return CG_OK;
    }
    if (x->dtype != CG_DTYPE_INT8 && x->dtype != CG_DTYPE_UINT8 && x->dtype != CG_DTYPE_INT16)
        return cg_kernel_fail(k, CG_INVALID, "input type %s (float, or int8/uint8/int16 to "
                              "requantize)", cg_dtype_name(x->dtype));
    if ((s = tq_get(k, "x", 1, x->dtype, &qx)) != CG_OK)
        return s;
    if (qx.count != 1 || qy.count != 1)
        return cg_kernel_fail(k, CG_INVALID, "requantization takes one scale on each side");
    int32_t m;
    int sh;
    if ((s = multiplier(k, (double)qx.scale[0] / (double)qy.scale[0], &m, &sh)) != CG_OK)
        return s;
    for (int64_t i = 0; i < x->numel; i++) {
        int32_t v = mbqm(geti(x, i) - (int32_t)qx.zero_point[0], m, sh) + (int32_t)qy.zero_point[0];
        seti(y, i, clamp32(v, lo, hi));
    }
    return CG_OK;
}
