/*
 * The float64 reference mode (cg_runtime_options.float64) and the
 * single-rounding fp16/bf16 conversions it relies on.
 *
 *  - cg_fp16_round / cg_bf16_round agree with the float32 conversions on
 *    every float tested, and round a double in one step where going through
 *    float would round twice;
 *  - promote.onnx: Cast to float16, Constant value_float and
 *    ConstantOfShape's default float all become double, so y = x + 0.1f in
 *    double exactly, and the output is DOUBLE; a DOUBLE input is accepted
 *    where the model declares float;
 *  - the RMSNorm of tests/data/fp16 in float64 matches the same formula
 *    computed here in double, and the float32 run differs from it by a
 *    float32-sized amount, not zero;
 *  - fp16 storage in float64 (node_precision FP16): every output value is
 *    an fp16 value held in a double, and fp16 accumulation is refused;
 *  - cg_fp16_round_significand equals cg_fp16_round in fp16's normal range
 *    and keeps rounding to 11 bits past 65504 (no inf);
 *  - the F16 devices' floor run (float64, node_precision FP16_SUM11) on the
 *    RMSNorm whose sum of squares passes 65504: finite where fp16
 *    accumulation gives inf, and further from float64 than fp16 storage
 *    alone (its sums are rounded); refused without float64;
 *  - the same for the other accumulating kernels (tests/data/fp16/
 *    sums_overflow.onnx): ReduceSum (a cancelling sum), ReduceL2 (a sum of
 *    squares past 65504), ReduceProd (a running product past it) and Conv
 *    (a 3x3 conv whose running sum passes it only in TFLite GPU's order,
 *    taps outer) and ConvTranspose (the same for its transposed kernel:
 *    taps ascending, outer) give inf with fp16 accumulation and the float64 value,
 *    fp16-rounded, in the floor mode; ReduceSumSquare and ReduceLogSumExp
 *    (whose sums cannot pass 65504 without their output doing so: squares
 *    are non-negative; the exps are taken after subtracting the max) give
 *    the same value in both modes.
 *  - weights of CG_LAZY64_MIN_NUMEL elements or more stay float in the
 *    float64 mode and are promoted by each step that reads them: through a
 *    folded Identity (a view), directly, one scope out in an If's branches,
 *    and as a graph output, every result is the float64 one; a Conv's W is
 *    widened by the Conv itself (packed, or into scratch for the depthwise
 *    kernel, from misaligned bytes too), with the float64 model's bits.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "convgate/model.h"
#include "convgate/runtime.h"
#include "convgate/tensor_io.h"
#include "convgate/tensor.h"
#include "run/cpu.h"
#include "run/exec.h"
#include "run/initshare.h"
#include "testlib.h"


static cg_runtime *runtime(const cg_model *m, bool f64, const uint8_t *prec, cg_error *err)
{
    cg_runtime_options o;
    cg_runtime_options_default(&o);
    o.float64 = f64;
    o.node_precision = prec;
    cg_runtime *rt = NULL;
    cg_error_clear(err);
    if (cg_runtime_init(m, &o, &rt, err) != CG_OK)
        return NULL;
    return rt;
}

/* --- rounding ---------------------------------------------------------------------- */

static void test_rounding(void)
{
    /* every float of a sweep: the double path equals the float path */
    uint32_t state = 12345;
    for (int i = 0; i < 200000; i++) {
        state = state * 1664525u + 1013904223u;
        float f;
        uint32_t bits = state;
        memcpy(&f, &bits, 4);
        if (isnan(f))
            continue;
        double want16 = cg_fp16_to_f32(cg_f32_to_fp16(f));
        double got16 = cg_fp16_round(f);
        EXPECT(want16 == got16 || (isnan(want16) && isnan(got16)), "fp16 of %a: %a vs %a",
              (double)f, got16, want16);
        /* the bit-level rounding against the general one, past fp16's range too */
        double big = (double)f * 0x1p40;
        if (isfinite(big) && big != 0)
            EXPECT(cg_fp16_round_significand(big) == cg_fp16_round(f) * 0x1p40 ||
                      !(fabs(f) >= 0x1p-14 && fabs(f) <= 65504.0),
                  "scaled significand rounding of %a", (double)f);
        if (fabs(f) >= 0x1p-14 && fabs(f) <= 65504.0)
            EXPECT(cg_fp16_round_significand(f) == got16, "fp16 significand of %a: %a vs %a",
                  (double)f, cg_fp16_round_significand(f), got16);
        double wantb = cg_bf16_to_f32(cg_f32_to_bf16(f));
        double gotb = cg_bf16_round(f);
        EXPECT(wantb == gotb, "bf16 of %a: %a vs %a", (double)f, gotb, wantb);
        EXPECT(cg_f64_to_fp16(f) == cg_f32_to_fp16(f), "bits of %a", (double)f);
    }
    /* just above the half-way point between 1 and 1 + 2^-10: as a float it
     * is exactly half-way (the 2^-40 is lost) and would go to even (1) */
    double x = 1.0 + 0x1p-11 + 0x1p-40;
    EXPECT(cg_fp16_round(x) == 1.0 + 0x1p-10, "one rounding: %a", cg_fp16_round(x));
    EXPECT(cg_fp16_to_f32(cg_f32_to_fp16((float)x)) == 1.0, "the float path rounds twice");
    EXPECT(cg_fp16_to_f32(cg_f64_to_fp16(x)) == 1.0 + 0x1p-10, "bits of one rounding");
    double b = 1.0 + 0x1p-8 + 0x1p-40; /* the same for bf16's 8 bits */
    EXPECT(cg_bf16_round(b) == 1.0 + 0x1p-7, "bf16 one rounding: %a", cg_bf16_round(b));
    /* range ends */
    EXPECT(cg_fp16_round(65519.99) == 65504.0, "just below the overflow point");
    EXPECT(isinf(cg_fp16_round(65520.0)) && cg_fp16_round(-65520.0) < 0, "overflow to inf");
    EXPECT(cg_fp16_round(0x1p-25) == 0.0 && signbit(cg_fp16_round(-0x1p-25)), "tie to zero");
    EXPECT(cg_fp16_round(0x1.8p-25) == 0x1p-24, "smallest subnormal");
    EXPECT(cg_fp16_round(3 * 0x1p-25) == 2 * 0x1p-24, "subnormal tie to even");
    EXPECT(isnan(cg_fp16_round(NAN)) && isinf(cg_fp16_round(INFINITY)), "non-finite kept");
    /* the tensor setter rounds once too */
    int64_t one = 1;
    cg_value *h = test_value(CG_DTYPE_FLOAT16, 1, &one, NULL);
    cg_tensor_set_f64(&h->tensor, 0, x);
    EXPECT(cg_tensor_get_f64(&h->tensor, 0) == 1.0 + 0x1p-10, "cg_tensor_set_f64 into fp16");
    cg_value_free(h);
}

/* --- promotion ------------------------------------------------------------------- */

static void test_promote(void)
{
    cg_model *m = test_load_model("tests/data/noise/promote.onnx");
    if (!m)
        return;
    cg_error err;
    cg_runtime *rt = runtime(m, true, NULL, &err);
    EXPECT(rt, "init: %s", err.msg);
    int64_t dims[2] = {2, 3};
    cg_value *x = test_value(CG_DTYPE_FLOAT, 2, dims, NULL);
    /* values fp16 would round: 1/3 and friends */
    for (int i = 0; i < 6; i++)
        ((float *)x->tensor.data)[i] = (float)(i + 1) / 3.0f;
    cg_named_value in = {"x", x}, *out = NULL;
    size_t n = 0;
    cg_error_clear(&err);
    if (rt && cg_runtime_run(rt, &in, 1, &out, &n, &err) == CG_OK) {
        const cg_tensor *y = &out[0].value->tensor;
        EXPECT(y->dtype == CG_DTYPE_DOUBLE, "output dtype %s", cg_dtype_name(y->dtype));
        for (int i = 0; i < 6 && y->dtype == CG_DTYPE_DOUBLE; i++) {
            double want = (double)((float *)x->tensor.data)[i] + (double)0.1f;
            EXPECT(((double *)y->data)[i] == want, "y[%d] = %.17g, want %.17g (no fp16 "
                  "rounding, 0.1f exact)", i, ((double *)y->data)[i], want);
        }
        cg_runtime_free_outputs(out, n);
    } else {
        EXPECT(0, "run: %s", err.msg);
    }
    /* a DOUBLE input where the model declares float */
    cg_value *xd = test_value(CG_DTYPE_DOUBLE, 2, dims, NULL);
    for (int i = 0; i < 6; i++)
        ((double *)xd->tensor.data)[i] = (double)(i + 1) / 3.0;
    in.value = xd;
    cg_error_clear(&err);
    if (rt && cg_runtime_run(rt, &in, 1, &out, &n, &err) == CG_OK) {
        const double *y = out[0].value->tensor.data;
        EXPECT(y[0] == 1.0 / 3.0 + (double)0.1f, "double input kept exactly: %.17g", y[0]);
        cg_runtime_free_outputs(out, n);
    } else {
        EXPECT(0, "run with a double input: %s", err.msg);
    }
    cg_runtime_free(rt);
    /* the float32 runtime still refuses a DOUBLE input for a float input */
    rt = runtime(m, false, NULL, &err);
    cg_error_clear(&err);
    EXPECT(rt && cg_runtime_run(rt, &in, 1, &out, &n, &err) == CG_INVALID &&
              strstr(err.msg, "element type"), "fp32 mode refuses double: %s", err.msg);
    cg_runtime_free(rt);

    /* fp16 storage in float64: y holds fp16 values (in doubles) */
    uint8_t prec[16];
    memset(prec, CG_NODE_PREC_FP16, sizeof prec);
    rt = runtime(m, true, prec, &err);
    EXPECT(rt, "fp16 storage init: %s", err.msg);
    in.value = x;
    cg_error_clear(&err);
    if (rt && cg_runtime_run(rt, &in, 1, &out, &n, &err) == CG_OK) {
        const cg_tensor *y = &out[0].value->tensor;
        EXPECT(y->dtype == CG_DTYPE_DOUBLE, "fp16 storage output dtype %s",
              cg_dtype_name(y->dtype));
        bool all16 = true, exact = true;
        for (int i = 0; i < 6; i++) {
            double v = ((double *)y->data)[i];
            all16 = all16 && cg_fp16_round(v) == v;
            exact = exact && v == (double)((float *)x->tensor.data)[i] + (double)0.1f;
        }
        EXPECT(all16 && !exact, "every stored value is an fp16 value");
        cg_runtime_free_outputs(out, n);
    } else {
        EXPECT(0, "fp16 storage run: %s", err.msg);
    }
    cg_runtime_free(rt);
    /* fp16 accumulation is a float32 feature */
    memset(prec, CG_NODE_PREC_FP16_ACC16, sizeof prec);
    rt = runtime(m, true, prec, &err);
    EXPECT(!rt && err.status == CG_USAGE && strstr(err.msg, "float64"), "acc16 refused: %s",
          err.msg);
    cg_runtime_free(rt);
    cg_value_free(x);
    cg_value_free(xd);
    cg_model_free(m);
}

/* --- a real model against the formula in double ------------------------------------ */

/* tests/data/fp16/rmsnorm_overflow.onnx and its sample's x (NULL, after a
 * failed EXPECT, when either does not load). */
static cg_model *load_rmsnorm(cg_value **x)
{
    const char *dir = CG_SOURCE_DIR "/tests/data/fp16/";
    char path[512];
    snprintf(path, sizeof path, "%srmsnorm_overflow.onnx", dir);
    cg_model *m = test_load_model(path);
    if (!m)
        return NULL;
    snprintf(path, sizeof path, "%srmsnorm_overflow_inputs/sample_0/x.npy", dir);
    cg_tensor xt;
    cg_error err;
    cg_error_clear(&err);
    memset(&xt, 0, sizeof xt);
    *x = NULL;
    if (cg_npy_load(path, 0, &xt, &err) != CG_OK || cg_value_from_tensor(&xt, x, &err) != CG_OK) {
        EXPECT(0, "%s: %s", path, err.msg);
        cg_model_free(m);
        return NULL;
    }
    return m;
}

static void test_rmsnorm(void)
{
    cg_value *x = NULL;
    cg_model *m = load_rmsnorm(&x);
    if (!m)
        return;
    cg_error err;
    cg_error_clear(&err);
    /* the initializers: eps and g (float) */
    const cg_graph *g = m->graph;
    cg_value *eps = NULL, *gain = NULL;
    for (size_t i = 0; i < g->initializer_count; i++) {
        cg_value **dst = strcmp(g->initializers[i].name, "eps") == 0 ? &eps : &gain;
        EXPECT(cg_value_from_tensor_proto(&g->initializers[i], dst, &err) == CG_OK, "%s",
              err.msg);
    }
    cg_named_value in = {"x", x}, *o64 = NULL, *o32 = NULL;
    size_t n64 = 0, n32 = 0;
    cg_runtime *r64 = runtime(m, true, NULL, &err), *r32 = runtime(m, false, NULL, &err);
    EXPECT(r64 && r32, "init: %s", err.msg);
    if (r64 && r32 && eps && gain && cg_runtime_run(r64, &in, 1, &o64, &n64, &err) == CG_OK &&
        cg_runtime_run(r32, &in, 1, &o32, &n32, &err) == CG_OK) {
        const cg_tensor *y64 = &o64[0].value->tensor, *y32 = &o32[0].value->tensor;
        EXPECT(y64->dtype == CG_DTYPE_DOUBLE && y32->dtype == CG_DTYPE_FLOAT, "dtypes");
        const float *xv = x->tensor.data;
        double max_formula = 0, max_fp32 = 0;
        int64_t d = x->tensor.dims[2], rows = x->tensor.numel / d;
        for (int64_t r = 0; r < rows; r++) {
            double ss = 0;
            for (int64_t i = 0; i < d; i++)
                ss += (double)xv[r * d + i] * (double)xv[r * d + i];
            double rms = sqrt(ss / (double)d + cg_tensor_get_f64(&eps->tensor, 0));
            for (int64_t i = 0; i < d; i++) {
                double want = (double)xv[r * d + i] / rms * cg_tensor_get_f64(&gain->tensor, i);
                double got = ((const double *)y64->data)[r * d + i];
                double e = fabs(got - want) / (fabs(want) + 1e-300);
                max_formula = e > max_formula ? e : max_formula;
                double e32 = fabs(((const float *)y32->data)[r * d + i] - got);
                max_fp32 = e32 > max_fp32 ? e32 : max_fp32;
            }
        }
        EXPECT(max_formula < 1e-14, "float64 run vs the formula in double: rel %.3g",
              max_formula);
        EXPECT(max_fp32 > 1e-9 && max_fp32 < 1e-5, "float32 run is float32 away: %.3g",
              max_fp32);
    } else {
        EXPECT(0, "runs: %s", err.msg);
    }
    cg_runtime_free_outputs(o64, n64);
    cg_runtime_free_outputs(o32, n32);
    cg_runtime_free(r64);
    cg_runtime_free(r32);
    cg_value_free(x);
    cg_value_free(eps);
    cg_value_free(gain);
    cg_model_free(m);
}

/* The floor of a device summing in fp16: its rounding, not its range. */
static void test_sum11(void)
{
    EXPECT(cg_fp16_round_significand(70000.3) == 70016.0, "70000.3 -> %.17g",
          cg_fp16_round_significand(70000.3));
    EXPECT(cg_fp16_round(70000.3) == INFINITY, "fp16 overflows");
    /* ties to even, and a carry that steps the exponent */
    EXPECT(cg_fp16_round_significand(2047.5) == 2048.0 &&
              cg_fp16_round_significand(2046.5) == 2046.0 &&
              cg_fp16_round_significand(-2047.75) == -2048.0 &&
              cg_fp16_round_significand(4095.0 * 0x1p100) == 0x1p112,
          "ties to even, carries: %.17g %.17g", cg_fp16_round_significand(2047.5),
          cg_fp16_round_significand(2046.5));
    EXPECT(cg_fp16_round_significand(1e-9) == ldexp(nearbyint(ldexp(1e-9, 40)), -40),
          "no subnormal spacing: %a", cg_fp16_round_significand(1e-9));
    cg_value *x = NULL;
    cg_model *m = load_rmsnorm(&x);
    if (!m)
        return;
    cg_error err;
    cg_error_clear(&err);
    size_t nn = m->graph->node_count;
    uint8_t *p16 = malloc(nn), *p11 = malloc(nn), *pacc = malloc(nn);
    EXPECT(p16 && p11 && pacc, "alloc");
    if (!p16 || !p11 || !pacc)
        return;
    memset(p16, CG_NODE_PREC_FP16, nn);
    memset(p11, CG_NODE_PREC_FP16_SUM11, nn);
    memset(pacc, CG_NODE_PREC_FP16_ACC16, nn);
    cg_runtime *r64 = runtime(m, true, NULL, &err), *r16 = runtime(m, true, p16, &err);
    cg_runtime *r11 = runtime(m, true, p11, &err), *racc = runtime(m, false, pacc, &err);
    EXPECT(r64 && r16 && r11 && racc, "init: %s", err.msg);
    cg_runtime *bad = runtime(m, false, p11, &err);
    EXPECT(!bad && err.status == CG_USAGE && strstr(err.msg, "float64"),
          "significand sums refused in float32: %s", err.msg);
    cg_runtime_free(bad);
    cg_named_value in = {"x", x}, *o[4] = {NULL};
    size_t n[4] = {0};
    cg_runtime *rts[4] = {r64, r16, r11, racc};
    bool ran = true;
    for (int i = 0; i < 4 && ran; i++)
        ran = rts[i] && cg_runtime_run(rts[i], &in, 1, &o[i], &n[i], &err) == CG_OK;
    EXPECT(ran, "runs: %s", err.msg);
    if (ran) {
        const cg_tensor *y64 = &o[0][0].value->tensor;
        double e16 = 0, e11 = 0;
        bool finite11 = true, inf_acc = false;
        for (int64_t i = 0; i < y64->numel; i++) {
            double ref = ((const double *)y64->data)[i];
            double v16 = ((const double *)o[1][0].value->tensor.data)[i];
            double v11 = ((const double *)o[2][0].value->tensor.data)[i];
            float va = ((const float *)o[3][0].value->tensor.data)[i];
            e16 = fmax(e16, fabs(v16 - ref));
            e11 = fmax(e11, fabs(v11 - ref));
            finite11 = finite11 && isfinite(v11) && cg_fp16_round(v11) == v11;
            inf_acc = inf_acc || !isfinite(va) || fabs(va - ref) > 0.5;
        }
        EXPECT(finite11, "significand sums store fp16 values, never inf");
        EXPECT(inf_acc, "fp16 accumulation breaks down on this RMSNorm");
        EXPECT(e11 > e16 && e11 < 0.05, "significand sums' error %.3g above storage's %.3g, "
              "fp16-sized", e11, e16);
    }
    for (int i = 0; i < 4; i++)
        cg_runtime_free_outputs(o[i], n[i]);
    for (int i = 0; i < 4; i++)
        cg_runtime_free(rts[i]);
    free(p16);
    free(p11);
    free(pacc);
    cg_value_free(x);
    cg_model_free(m);
}

/* The floor mode's sums on each accumulating kernel: finite (fp16's
 * significand, no range) where fp16 accumulation passes 65504. */
static void test_sums_overflow(void)
{
    static const char *const ins[] = {"s", "sq", "l2", "lse", "p", "cx", "tx"};
    enum { NIN = 7 };
    const char *dir = CG_SOURCE_DIR "/tests/data/fp16/";
    char path[512];
    snprintf(path, sizeof path, "%ssums_overflow.onnx", dir);
    cg_model *m = test_load_model(path);
    if (!m)
        return;
    cg_named_value in[NIN];
    bool loaded = true;
    for (int i = 0; i < NIN; i++) {
        snprintf(path, sizeof path, "%ssums_overflow_inputs/sample_0/%s.npy", dir, ins[i]);
        in[i].name = ins[i];
        loaded = (in[i].value = test_load_npy(path)) != NULL && loaded;
    }
    size_t nn = m->graph->node_count;
    uint8_t *p11 = malloc(nn), *pacc = malloc(nn);
    cg_error err;
    cg_error_clear(&err);
    cg_runtime *r64 = NULL, *r11 = NULL, *racc = NULL;
    if (loaded && p11 && pacc) {
        memset(p11, CG_NODE_PREC_FP16_SUM11, nn);
        memset(pacc, CG_NODE_PREC_FP16_ACC16, nn);
        r64 = runtime(m, true, NULL, &err);
        r11 = runtime(m, true, p11, &err);
        racc = runtime(m, false, pacc, &err);
    }
    EXPECT(loaded && r64 && r11 && racc, "set-up: %s", err.msg);
    cg_named_value *o[3] = {NULL};
    size_t n[3] = {0};
    cg_runtime *rts[3] = {r64, r11, racc};
    bool ran = r64 && r11 && racc;
    for (int i = 0; i < 3 && ran; i++)
        ran = cg_runtime_run(rts[i], in, NIN, &o[i], &n[i], &err) == CG_OK && n[i] == 7;
    EXPECT(ran, "runs: %s", err.msg);
    /* per output: does fp16 accumulation overflow where the floor mode
     * keeps the float64 value (else the two modes agree) */
    static const struct {
        const char *name;
        bool overflows;
    } want[] = {{"s_y", true},  {"sq_y", false}, {"l2_y", true},   {"lse_y", false},
                {"p_y", true},  {"conv_y", true}, {"convt_y", true}};
    for (size_t k = 0; ran && k < 7; k++) {
        const cg_tensor *t64 = &o[0][k].value->tensor, *t11 = &o[1][k].value->tensor;
        const cg_tensor *tac = &o[2][k].value->tensor;
        EXPECT(strcmp(o[0][k].name, want[k].name) == 0, "output %zu is %s", k, o[0][k].name);
        /* element 0 is the crafted one (conv_y's and convt_y's second channel is
         * a control) */
        double ref = ((const double *)t64->data)[0], v11 = ((const double *)t11->data)[0];
        double vac = ((const float *)tac->data)[0];
        /* in range, the floor's sums drift by fp16 rounding (sq_y: 0.3%) */
        EXPECT(isfinite(v11) && fabs(v11 - ref) <= fabs(ref) * (want[k].overflows ? 0x1p-10 : 0.01),
              "%s: the floor mode keeps %.9g (float64 %.9g)", want[k].name, v11, ref);
        if (want[k].overflows)
            EXPECT(isinf(vac), "%s: fp16 accumulation overflows (got %.9g)", want[k].name, vac);
        else
            EXPECT(vac == v11, "%s: both modes round alike in range (%.9g vs %.9g)",
                  want[k].name, vac, v11);
        if (strcmp(want[k].name, "conv_y") == 0 || strcmp(want[k].name, "convt_y") == 0)
            EXPECT(((const float *)tac->data)[1] == ((const double *)t11->data)[1] &&
                      ((const double *)t11->data)[1] == ((const double *)t64->data)[1],
                  "%s's control channel agrees: %.9g %.9g %.9g", want[k].name,
                  ((const float *)tac->data)[1], ((const double *)t11->data)[1],
                  ((const double *)t64->data)[1]);
    }
    for (int i = 0; i < 3; i++) {
        cg_runtime_free_outputs(o[i], n[i]);
        cg_runtime_free(rts[i]);
    }
    for (int i = 0; i < NIN; i++)
        cg_value_free(in[i].value);
    free(p11);
    free(pacc);
    cg_model_free(m);
}

/* --- weights left float (cg_plan.init_lazy64) ------------------------------------- */

#define LZ_K 64
#define LZ_N 128 /* W: 8192 elements, above CG_LAZY64_MIN_NUMEL: left float */

static float lz_w[LZ_K * LZ_N];

/* y_alias = x @ Identity(W) (a folded view), y_direct = x @ W, r = If(c,
 * then: x @ W read one scope out, else: Identity(W) one scope out), w2 =
 * Identity(W) + W, and V (of W's values) an initializer that is itself a
 * graph output. */
static cg_model *lazy_model(void)
{
    cg_model *m = test_model_graph(13, 8, "x,c", "y_alias,y_direct,r,w2,V");
    int64_t wd[2] = {LZ_K, LZ_N};
    for (int i = 0; i < LZ_K * LZ_N; i++)
        lz_w[i] = (float)((i * 37) % 97) / 31.0f - 1.3f;
    test_graph_init_f32(m, m->graph, "W", 2, wd, lz_w);
    test_graph_init_f32(m, m->graph, "V", 2, wd, lz_w);
    test_node(m, m->graph, "Identity", "view", "W", "Wi");
    test_node(m, m->graph, "MatMul", "mm_alias", "x,Wi", "y_alias");
    test_node(m, m->graph, "MatMul", "mm_direct", "x,W", "y_direct");
    test_node(m, m->graph, "Add", "twice", "Wi,W", "w2");
    cg_node *n = test_node(m, m->graph, "If", "if", "c", "r");
    cg_graph *then_g = test_graph_new(m, "then", 2), *else_g = test_graph_new(m, "else", 2);
    test_node(m, then_g, "MatMul", "mm_then", "x,W", "r_then");
    test_graph_output(then_g, "r_then", NULL);
    test_node(m, else_g, "Identity", "id_else", "W", "r_else");
    test_graph_output(else_g, "r_else", NULL);
    test_node_add_attr(n, attr_graph("then_branch", then_g));
    test_node_add_attr(n, attr_graph("else_branch", else_g));
    return m;
}

static const cg_tensor *lz_out(const cg_named_value *o, size_t n, const char *name)
{
    for (size_t i = 0; i < n; i++)
        if (strcmp(o[i].name, name) == 0)
            return &o[i].value->tensor;
    return NULL;
}

static void test_lazy_weights(void)
{
    cg_model *m = lazy_model();
    cg_error err;
    cg_runtime *rt = runtime(m, true, NULL, &err);
    EXPECT(rt, "init: %s", err.msg);
    int64_t xd[2] = {2, LZ_K};
    double xv[2 * LZ_K];
    for (int i = 0; i < 2 * LZ_K; i++)
        xv[i] = (double)(float)((double)((i * 13) % 29) / 7.0 - 2.0); /* as x holds it */
    cg_value *x = test_value(CG_DTYPE_FLOAT, 2, xd, xv);
    bool yes = true, no = false;
    cg_value *c = test_value(CG_DTYPE_BOOL, 0, NULL, NULL);
    /* x @ W in double, the sum in k order */
    static double want[2 * LZ_N];
    for (int r = 0; r < 2; r++)
        for (int j = 0; j < LZ_N; j++) {
            double acc = 0.0;
            for (int k = 0; k < LZ_K; k++)
                acc += xv[r * LZ_K + k] * (double)lz_w[k * LZ_N + j];
            want[r * LZ_N + j] = acc;
        }
    for (int run = 0; rt && run < 2; run++) {
        memcpy(c->tensor.data, run == 0 ? &yes : &no, sizeof yes);
        cg_named_value in[2] = {{"x", x}, {"c", c}}, *out = NULL;
        size_t n = 0;
        cg_error_clear(&err);
        if (cg_runtime_run(rt, in, 2, &out, &n, &err) != CG_OK) {
            EXPECT(0, "run %d: %s", run, err.msg);
            break;
        }
        const cg_tensor *ya = lz_out(out, n, "y_alias"), *yd = lz_out(out, n, "y_direct");
        const cg_tensor *r = lz_out(out, n, "r"), *w = lz_out(out, n, "V");
        const cg_tensor *w2 = lz_out(out, n, "w2");
        bool dbl = ya && yd && r && w && w2 && ya->dtype == CG_DTYPE_DOUBLE &&
                   yd->dtype == CG_DTYPE_DOUBLE && r->dtype == CG_DTYPE_DOUBLE &&
                   w->dtype == CG_DTYPE_DOUBLE && w2->dtype == CG_DTYPE_DOUBLE;
        EXPECT(dbl, "run %d: every output is float64", run);
        if (dbl) {
            double worst = 0.0;
            bool same = ya->numel == 2 * LZ_N && yd->numel == 2 * LZ_N;
            for (int i = 0; same && i < 2 * LZ_N; i++) {
                double a = ((double *)ya->data)[i], d = ((double *)yd->data)[i];
                same = a == d;
                double e = fabs(d - want[i]) / (fabs(want[i]) + 1.0);
                worst = e > worst ? e : worst;
            }
            EXPECT(same, "run %d: x @ Identity(W) equals x @ W", run);
            /* double sums in another order differ by ~1e-16; float weights
             * or float sums by ~1e-7 */
            EXPECT(worst < 1e-13, "run %d: x @ W in double, worst relative error %.3g", run,
                   worst);
            bool w_ok = w->numel == LZ_K * LZ_N && w2->numel == LZ_K * LZ_N;
            for (int i = 0; w_ok && i < LZ_K * LZ_N; i++)
                w_ok = ((double *)w->data)[i] == (double)lz_w[i] &&
                       ((double *)w2->data)[i] == 2.0 * (double)lz_w[i];
            EXPECT(w_ok, "run %d: V as a graph output and Identity(W) + W, in float64", run);
            bool r_ok = run == 0 ? r->numel == 2 * LZ_N : r->numel == LZ_K * LZ_N;
            for (int64_t i = 0; r_ok && i < r->numel; i++)
                r_ok = ((double *)r->data)[i] ==
                       (run == 0 ? ((double *)yd->data)[i] : (double)lz_w[i]);
            EXPECT(r_ok, "run %d: the If's %s branch reads W one scope out", run,
                   run == 0 ? "then" : "else");
        }
        cg_runtime_free_outputs(out, n);
    }
    cg_runtime_free(rt);
    /* float32: the view of W gives the same products as W */
    rt = runtime(m, false, NULL, &err);
    EXPECT(rt, "fp32 init: %s", err.msg);
    cg_named_value in[2] = {{"x", x}, {"c", c}}, *out = NULL;
    size_t n = 0;
    if (rt && cg_runtime_run(rt, in, 2, &out, &n, &err) == CG_OK) {
        const cg_tensor *ya = lz_out(out, n, "y_alias"), *yd = lz_out(out, n, "y_direct");
        EXPECT(ya && yd && ya->dtype == CG_DTYPE_FLOAT &&
                   memcmp(ya->data, yd->data, cg_tensor_bytes(yd)) == 0,
               "fp32: x @ Identity(W) equals x @ W");
        cg_runtime_free_outputs(out, n);
    } else if (rt) {
        EXPECT(0, "fp32 run: %s", err.msg);
    }
    cg_runtime_free(rt);
    cg_value_free(x);
    cg_value_free(c);
    cg_model_free(m);
}

/* The float64 mode's convolutions pack their weights per call, into
 * scratch, and keep no packs: holding them kept twice the model's weights
 * in doubles for the runtime's life (resnet50: 204 MB). A big float32 W
 * reaches the Conv as stored (cg_step.stored64): its GEMM packs it widened
 * to double, its depthwise row kernel reads it widened into scratch, read
 * from the model's bytes where they are misaligned; no double copy is
 * promoted first. A float64 model's constant W keeps its packs. Each gives
 * the float64 model's bits: the same sums over the same doubles. Cases: a
 * 3x3 Conv (GEMM) and a depthwise one (row kernel), W aligned and at an odd
 * offset. */
#define PK_C 32
#define PK_M 64
#define PK_DW 512 /* depthwise channels: 512 x 9 weights, above CG_LAZY64_MIN_NUMEL */
#define PK_MAX (PK_M * PK_C * 9)
static float pk_w[PK_MAX];
static uint8_t pk_odd[1 + PK_MAX * sizeof(float)];

static cg_model *pack_model(bool dbl, bool dw, bool odd)
{
    cg_model *m = test_model_graph(13, 2, "x", "y");
    int64_t wd[4] = {dw ? PK_DW : PK_M, dw ? 1 : PK_C, 3, 3};
    size_t count = dw ? PK_DW * 9 : PK_MAX;
    if (dbl) {
        static double w64[PK_MAX];
        for (size_t i = 0; i < count; i++)
            w64[i] = (double)pk_w[i];
        test_graph_init_raw(m, m->graph, "W", CG_DTYPE_DOUBLE, 4, wd, w64, count * sizeof(double));
    } else if (odd) {
        memcpy(pk_odd + 1, pk_w, count * sizeof(float));
        test_graph_init_raw(m, m->graph, "W", CG_DTYPE_FLOAT, 4, wd, pk_odd + 1,
                            count * sizeof(float));
    } else {
        test_graph_init_f32(m, m->graph, "W", 4, wd, pk_w);
    }
    cg_node *n = test_node(m, m->graph, "Conv", "conv", "x,W", "y");
    static int64_t pads[4] = {1, 1, 1, 1};
    test_node_add_attr(n, attr_ints("pads", pads, 4));
    if (dw)
        test_node_add_attr(n, attr_int("group", PK_DW));
    return m;
}

static void test_conv_packs_per_call_case(bool dw, bool odd)
{
    const char *what = dw ? (odd ? "depthwise, W misaligned" : "depthwise")
                          : (odd ? "3x3, W misaligned" : "3x3");
    int64_t c = dw ? PK_DW : PK_C;
    int64_t xd[4] = {1, c, 12, 12};
    static double xv[PK_DW * 12 * 12];
    for (int64_t i = 0; i < c * 144; i++)
        xv[i] = (double)(float)((double)((i * 29) % 83) / 19.0 - 2.0);
    cg_value *x32 = test_value(CG_DTYPE_FLOAT, 4, xd, xv);
    cg_value *x64 = test_value(CG_DTYPE_DOUBLE, 4, xd, xv);
    double *got[2] = {NULL, NULL};
    int64_t numel = 0;
    for (int dbl = 0; dbl < 2; dbl++) {
        cg_model *m = pack_model(dbl, dw, odd);
        cg_error err;
        /* float: the float64 mode; double: a float64 model, normal mode */
        cg_runtime *rt = runtime(m, !dbl, NULL, &err);
        EXPECT(rt, "%s, %s init: %s", what, dbl ? "float64 model" : "float64 mode", err.msg);
        for (int run = 0; rt && run < 2; run++) {
            cg_named_value in[1] = {{"x", dbl ? x64 : x32}}, *out = NULL;
            size_t n = 0;
            cg_error_clear(&err);
            if (cg_runtime_run(rt, in, 1, &out, &n, &err) != CG_OK) {
                EXPECT(0, "%s, %s run %d: %s", what, dbl ? "float64 model" : "float64 mode",
                       run, err.msg);
                break;
            }
            const cg_tensor *y = &out[0].value->tensor;
            EXPECT(y->dtype == CG_DTYPE_DOUBLE, "%s: the output is float64", what);
            if (run == 1 && y->dtype == CG_DTYPE_DOUBLE) {
                numel = y->numel;
                got[dbl] = malloc((size_t)y->numel * sizeof(double));
                if (!got[dbl])
                    test_fatal("out of memory");
                memcpy(got[dbl], y->data, (size_t)y->numel * sizeof(double));
            }
            cg_runtime_free_outputs(out, n);
        }
        const cg_step *conv = NULL;
        for (size_t i = 0; rt && i < rt->main->step_count; i++)
            if (strcmp(rt->main->steps[i].node->op_type, "Conv") == 0)
                conv = &rt->main->steps[i];
        EXPECT(conv, "%s: the Conv step is in the plan", what);
        if (conv && !dbl) {
            EXPECT(conv->state == NULL,
                   "%s: the float64 mode's Conv keeps a state (its packed doubles) after two "
                   "runs", what);
            EXPECT(conv->stored64 == 2u,
                   "%s: the float64 mode's Conv is not handed its float32 W as stored", what);
        }
        if (conv && dbl && !dw)
            EXPECT(conv->state != NULL, "%s: a float64 model's constant W is not packed once",
                   what);
        cg_runtime_free(rt);
        cg_model_free(m);
    }
    EXPECT(got[0] && got[1] && memcmp(got[0], got[1], (size_t)numel * sizeof(double)) == 0,
           "%s: the float64 mode's Conv differs from the float64 model's", what);
    free(got[0]);
    free(got[1]);
    cg_value_free(x32);
    cg_value_free(x64);
}

static void test_conv_packs_per_call(void)
{
    for (int i = 0; i < PK_MAX; i++)
        pk_w[i] = (float)((i * 53) % 101) / 47.0f - 1.1f;
    /* the depthwise row kernel runs on every level */
    test_conv_packs_per_call_case(true, false);
    test_conv_packs_per_call_case(true, true);
    if (cg_simd_detect() == CG_SIMD_PORTABLE) {
        test_skip("float64 convolution packs: no vector level here (BLAS dgemm, no packing)");
        return;
    }
    test_conv_packs_per_call_case(false, false);
    test_conv_packs_per_call_case(false, true);
}

/* Runs rt (runtime r of a test) twice on x, which holds xv (float values),
 * and checks its outputs y16 and y32 of x * W (W holding wv) bit for bit:
 * on fp16 storage where prec says so (x and W rounded to fp16, the product
 * rounded to fp16 as stored), as written otherwise; in double for a
 * float64 runtime, in float for a float32 one. */
static void check_mul_runs(cg_runtime *rt, int r, cg_value *x, const double *xv,
                           const float *wv, int n, const uint8_t *prec, bool f64)
{
    cg_named_value in = {"x", x};
    cg_error err;
    for (int run = 0; rt && run < 2; run++) {
        cg_named_value *o = NULL;
        size_t no = 0;
        cg_error_clear(&err);
        if (cg_runtime_run(rt, &in, 1, &o, &no, &err) != CG_OK || no != 2) {
            EXPECT(false, "runtime %d run %d: %s", r, run, err.msg);
            cg_runtime_free_outputs(o, no);
            continue;
        }
        for (int k = 0; k < 2; k++) {
            bool emulated = prec && prec[k] == CG_NODE_PREC_FP16;
            const cg_tensor *y = &o[k].value->tensor;
            int bad = 0;
            for (int i = 0; i < n; i++) {
                double xf = (double)(float)xv[i]; /* as x holds it */
                double got = f64 ? ((const double *)y->data)[i]
                                 : (double)((const float *)y->data)[i];
                double want;
                if (f64)
                    want = emulated ? cg_fp16_round(cg_fp16_round(xf) *
                                                    cg_fp16_round((double)wv[i]))
                                    : xf * (double)wv[i];
                else
                    want = emulated ? (double)(float)cg_fp16_round(
                                          (double)((float)cg_fp16_round(xf) *
                                                   (float)cg_fp16_round((double)wv[i])))
                                    : (double)((float)xf * wv[i]);
                if (got != want && bad++ < 3)
                    EXPECT(false, "runtime %d run %d %s[%d] = %.17g, want %.17g", r, run,
                           o[k].name, i, got, want);
            }
        }
        cg_runtime_free_outputs(o, no);
    }
}

/* An emulated step reads a small initializer's rounded copy (below the
 * shared table's size: the runtime's own) and the plan keeps the
 * initializer as written (checked on the runtime's tables): a step run as
 * written that reads the same initializer gets its unrounded values, every
 * run, and another float64 runtime over the same model is untouched.
 * y16 = x * W on fp16 storage, y32 = x * W as written. */
static void test_rounded_copy(void)
{
    cg_model *m = test_model_graph(13, 4, "x", "y16,y32");
    static const float wv[4] = {0.1f, 0.2f, 1.0f / 3.0f, 0.7f};
    int64_t d[1] = {4};
    test_graph_init_f32(m, m->graph, "W", 1, d, wv);
    test_node(m, m->graph, "Mul", "emu", "x,W", "y16");
    test_node(m, m->graph, "Mul", "asis", "x,W", "y32");
    double xv[4] = {1.5, -2.25, 3.0, 0.001};
    cg_value *x = test_value(CG_DTYPE_FLOAT, 1, d, xv);
    static const uint8_t mixed[2] = {CG_NODE_PREC_FP16, CG_NODE_PREC_FP32};
    static const uint8_t all16[2] = {CG_NODE_PREC_FP16, CG_NODE_PREC_FP16};
    const uint8_t *precs[3] = {mixed, all16, NULL};
    cg_error err;
    cg_runtime *rts[3];
    for (int r = 0; r < 3; r++) {
        rts[r] = runtime(m, true, precs[r], &err);
        EXPECT(rts[r], "init %d: %s", r, err.msg);
    }
    /* both emulating runtimes: a rounded copy of their own beside the
     * plan's W, which holds W's values as written */
    for (int r = 0; r < 2; r++) {
        if (!rts[r])
            continue;
        int32_t w = cg_plan_slot(rts[r]->main, "W");
        const cg_value *pw = w >= 0 ? rts[r]->main->init_values[w] : NULL;
        const cg_value *rw = w >= 0 && rts[r]->prec_init ? rts[r]->prec_init[w] : NULL;
        bool as_written = pw && pw->tensor.dtype == CG_DTYPE_DOUBLE;
        for (int i = 0; as_written && i < 4; i++)
            as_written = ((const double *)pw->tensor.data)[i] == (double)wv[i];
        EXPECT(rw && rw != pw && !rts[r]->prec_shared[w] && as_written &&
                   ((const double *)rw->tensor.data)[0] == cg_fp16_round((double)wv[0]),
               "runtime %d: W rounded into a copy of its own, the plan's W as written", r);
    }
    for (int r = 0; r < 3; r++)
        check_mul_runs(rts[r], r, x, xv, wv, 4, precs[r], true);
    for (int r = 0; r < 3; r++)
        cg_runtime_free(rts[r]);
    cg_value_free(x);
    cg_model_free(m);
}

/* Runtimes that round the same initializer to fp16 hold one rounded copy
 * between them (run/initshare.h), per element type: the fp16 floors
 * (float64) and the target path's runs (float32). W is big enough to stay
 * float in the float64 mode (CG_LAZY64_MIN_NUMEL): the floors make its
 * rounded double from the stored floats, and a step run as written still
 * promotes the unrounded ones. Each runtime computes y16 = x * W on fp16
 * storage and y32 = x * W as written (emulated too where all16), runs
 * after the runtime that filled the shared copy is freed (ASan: a freed
 * buffer read), and every shared buffer is gone with the last runtime. */
#define SH_N 8192
static void test_rounded_shared(void)
{
    cg_model *m = test_model_graph(13, 4, "x", "y16,y32");
    static float wv[SH_N];
    static double xv[SH_N];
    for (int i = 0; i < SH_N; i++) {
        wv[i] = (float)((i * 37) % 211) / 97.0f - 1.05f;
        xv[i] = (double)(float)((double)((i * 13) % 173) / 31.0 - 2.7);
    }
    int64_t d[1] = {SH_N};
    test_graph_init_f32(m, m->graph, "W", 1, d, wv);
    test_node(m, m->graph, "Mul", "emu", "x,W", "y16");
    test_node(m, m->graph, "Mul", "asis", "x,W", "y32");
    cg_value *x = test_value(CG_DTYPE_FLOAT, 1, d, xv);
    static const uint8_t mixed[2] = {CG_NODE_PREC_FP16, CG_NODE_PREC_FP32};
    static const uint8_t all16[2] = {CG_NODE_PREC_FP16, CG_NODE_PREC_FP16};
    /* float64 all16, float64 mixed, float32 mixed, float64 all16, float32 mixed */
    const uint8_t *precs[5] = {all16, mixed, mixed, all16, mixed};
    const bool f64[5] = {true, true, false, true, false};
    size_t live0 = cg_shared_live();
    cg_error err;
    cg_runtime *rts[5];
    const void *rounded[5] = {NULL};
    for (int r = 0; r < 5; r++) {
        rts[r] = runtime(m, f64[r], precs[r], &err);
        EXPECT(rts[r], "init %d: %s", r, err.msg);
        int32_t w = rts[r] ? cg_plan_slot(rts[r]->main, "W") : -1;
        const cg_value *pv = w >= 0 && rts[r]->prec_init ? rts[r]->prec_init[w] : NULL;
        EXPECT(pv && rts[r]->prec_shared[w] && pv != rts[r]->main->init_values[w] &&
                   pv->tensor.dtype == (f64[r] ? CG_DTYPE_DOUBLE : CG_DTYPE_FLOAT),
               "runtime %d: W's rounded form is not a shared %s tensor of its own", r,
               f64[r] ? "double" : "float");
        if (pv)
            rounded[r] = pv->tensor.data;
        if (w >= 0 && f64[r])
            EXPECT(rts[r]->main->init_values[w]->tensor.dtype == CG_DTYPE_FLOAT,
                   "runtime %d: the float64 mode promoted big W at init", r);
    }
    EXPECT(rounded[0] && rounded[0] == rounded[1] && rounded[0] == rounded[3],
           "the float64 runtimes do not share W's rounded doubles");
    EXPECT(rounded[2] && rounded[2] == rounded[4] && rounded[2] != rounded[0],
           "the float32 runtimes do not share W's rounded floats (apart from the doubles)");
    cg_runtime_free(rts[0]); /* it filled the doubles */
    rts[0] = NULL;
    cg_runtime_free(rts[2]); /* ... and the floats */
    rts[2] = NULL;
    for (int r = 1; r < 5; r++)
        check_mul_runs(rts[r], r, x, xv, wv, SH_N, precs[r], f64[r]);
    for (int r = 0; r < 5; r++)
        cg_runtime_free(rts[r]);
    EXPECT(cg_shared_live() == live0, "%zu shared buffers outlive their runtimes",
           cg_shared_live() - live0);
    cg_value_free(x);
    cg_model_free(m);
}

/* A double initializer at an odd offset, in a float64 runtime that
 * emulates fp16: its aligned copy is left for the first run when the
 * copies pass 32 MiB (exec.c), and the rounding at set-up read that copy
 * unfilled. y = x * W on fp16 storage, W 4.4 M doubles (35 MB) one byte
 * past a double's alignment: y equals the rounded product. */
#define MIS_N 4400000
static void test_rounded_misaligned(void)
{
    cg_model *m = test_model_graph(13, 2, "x", "y");
    uint8_t *raw = malloc(MIS_N * sizeof(double) + 1);
    double *xv = malloc(MIS_N * sizeof(double));
    if (!raw || !xv)
        test_fatal("out of memory");
    for (int i = 0; i < MIS_N; i++) {
        double w = (double)((i * 37) % 211) / 97.0 - 1.05;
        memcpy(raw + 1 + (size_t)i * sizeof w, &w, sizeof w);
        xv[i] = (double)((i * 13) % 173) / 31.0 - 2.7;
    }
    int64_t d[1] = {MIS_N};
    test_graph_init_raw(m, m->graph, "W", CG_DTYPE_DOUBLE, 1, d, raw + 1,
                        MIS_N * sizeof(double));
    test_node(m, m->graph, "Mul", "emu", "x,W", "y");
    cg_value *x = test_value(CG_DTYPE_DOUBLE, 1, d, xv);
    static const uint8_t all16[1] = {CG_NODE_PREC_FP16};
    cg_error err;
    cg_runtime *rt = runtime(m, true, all16, &err);
    EXPECT(rt, "init: %s", err.msg);
    cg_named_value in = {"x", x}, *o = NULL;
    size_t n = 0;
    if (rt && cg_runtime_run(rt, &in, 1, &o, &n, &err) == CG_OK && n == 1) {
        const double *y = o[0].value->tensor.data;
        int bad = 0;
        for (int i = 0; i < MIS_N; i++) {
            double w;
            memcpy(&w, raw + 1 + (size_t)i * sizeof w, sizeof w);
            double want = cg_fp16_round(cg_fp16_round(xv[i]) * cg_fp16_round(w));
            if (y[i] != want && bad++ < 3)
                EXPECT(false, "y[%d] = %.17g, want %.17g", i, y[i], want);
        }
    } else {
        EXPECT(false, "run: %s", err.msg);
    }
    cg_runtime_free_outputs(o, n);
    cg_runtime_free(rt);
    cg_value_free(x);
    cg_model_free(m);
    free(raw);
    free(xv);
}

int main(void)
{
    test_rounding();
    test_conv_packs_per_call();
    test_promote();
    test_rmsnorm();
    test_sum11();
    test_sums_overflow();
    test_lazy_weights();
    test_rounded_copy();
    test_rounded_shared();
    test_rounded_misaligned();
    return test_done("test_fp64");
}
