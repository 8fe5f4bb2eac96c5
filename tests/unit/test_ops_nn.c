/*
 * Unit tests for the nn kernel family: what the ONNX backend data does not
 * cover. Bad shapes and attributes (weight rank, groups, kernel larger than
 * the padded input, Gemm inner dims, MaxUnpool indices, per-axis scales,
 * LayerNormalization axis) must fail with a message naming the node; the
 * vectorized row kernels (depthwise conv, 2-D pooling, whose 8/32-wide
 * blocks and overlapping tails only run on images wider than the backend
 * tests use) must match a naive reference; GroupNormalization must follow
 * the opset 18 (per-group) and opset 21 (per-channel) scale layouts.
 *
 * Each case builds a one-node model in memory and runs it through the
 * public runtime API.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "convgate/model.h"
#include "convgate/runtime.h"
#include "convgate/tensor_io.h"
#include "run/cpu.h"
#include "run/kernel.h"
#include "testlib.h"

/* Deterministic pseudo-random values in [-1, 1). */
static double pseudo(uint64_t *s)
{
    *s = *s * 6364136223846793005ull + 1442695040888963407ull;
    return (double)(*s >> 11) * 0x1.0p-52 - 1.0;
}

/* Expects the case to fail naming the node and needle; frees its inputs. */
static void expect_fail(test_case *c, const char *needle, const char *what)
{
    test_case_expect_fail(c, needle, what);
    test_case_free(c);
}

/* A tensor of pseudo-random values (seeded) unless vals is given. */
static cg_tensor *tensor(cg_dtype dt, int rank, const int64_t *dims, const double *vals,
                         uint64_t seed)
{
    cg_tensor *t = test_tensor(dt, rank, dims, vals);
    for (int64_t i = 0; !vals && i < t->numel; i++)
        cg_tensor_set_f64(t, i, pseudo(&seed));
    return t;
}


/* Runs and compares output 0 with want (n values, rtol 1e-4 + atol 1e-5). */
static void expect_values(test_case *c, const double *want, int64_t n, const char *what)
{
    cg_named_value *outs = NULL;
    size_t nouts = 0;
    cg_error err;
    cg_status st = test_case_run(c, &outs, &nouts, &err);
    EXPECT(st == CG_OK, "%s: run failed: %s", what, err.msg);
    if (st == CG_OK) {
        const cg_tensor *t = &outs[0].value->tensor;
        EXPECT(t->numel == n, "%s: %lld values, expected %lld", what, (long long)t->numel,
               (long long)n);
        int bad = 0;
        for (int64_t i = 0; i < n && i < t->numel && bad < 3; i++) {
            double got = cg_tensor_get_f64(t, i);
            if (!(fabs(got - want[i]) <= 1e-5 + 1e-4 * fabs(want[i]))) {
                bad++;
                EXPECT(0, "%s: value %lld is %g, expected %g", what, (long long)i, got, want[i]);
            }
        }
        cg_runtime_free_outputs(outs, nouts);
    }
    test_case_free(c);
}

static void test_conv_errors(void)
{
    int64_t xd[4] = {1, 4, 5, 5}, wd3[3] = {2, 4, 3}, wd[4] = {2, 4, 3, 3}, wd2[4] = {2, 3, 3, 3};
    test_case c = {"Conv", 13, 2, 1, {tensor(CG_DTYPE_FLOAT, 4, xd, NULL, 1),
                                    tensor(CG_DTYPE_FLOAT, 3, wd3, NULL, 2)}, {{0}}, 0, NULL, 0};
    expect_fail(&c, "rank", "Conv with 3-D weights on a 4-D input");

    test_case g = {"Conv", 13, 2, 1, {tensor(CG_DTYPE_FLOAT, 4, xd, NULL, 1),
                                    tensor(CG_DTYPE_FLOAT, 4, wd, NULL, 2)}, {{0}}, 1, NULL, 0};
    g.attrs[0] = attr_int("group", 3);
    expect_fail(&g, "group", "Conv with 4 channels in 3 groups");

    test_case ch = {"Conv", 13, 2, 1, {tensor(CG_DTYPE_FLOAT, 4, xd, NULL, 1),
                                     tensor(CG_DTYPE_FLOAT, 4, wd2, NULL, 2)}, {{0}}, 0, NULL, 0};
    expect_fail(&ch, "input channels", "Conv whose weights expect 3 channels");

    static int64_t big[2] = {7, 7};
    test_case p = {"MaxPool", 13, 1, 1, {tensor(CG_DTYPE_FLOAT, 4, xd, NULL, 1)}, {{0}}, 1, NULL, 0};
    p.attrs[0] = attr_ints("kernel_shape", big, 2);
    expect_fail(&p, "exceeds", "MaxPool kernel larger than the input");

    static int64_t zero_stride[2] = {0, 1}, k2[2] = {2, 2};
    test_case s = {"AveragePool", 13, 1, 1, {tensor(CG_DTYPE_FLOAT, 4, xd, NULL, 1)}, {{0}}, 2, NULL, 0};
    s.attrs[0] = attr_ints("kernel_shape", k2, 2);
    s.attrs[1] = attr_ints("strides", zero_stride, 2);
    expect_fail(&s, "strides", "AveragePool with a zero stride");
}

static void test_other_errors(void)
{
    int64_t ad[2] = {2, 3}, bd[2] = {4, 5};
    test_case gm = {"Gemm", 13, 2, 1, {tensor(CG_DTYPE_FLOAT, 2, ad, NULL, 1),
                                     tensor(CG_DTYPE_FLOAT, 2, bd, NULL, 2)}, {{0}}, 0, NULL, 0};
    expect_fail(&gm, "inner dimensions", "Gemm with K 3 vs 4");

    int64_t xd[4] = {1, 1, 2, 2};
    double idx[4] = {0, 3, 99, 5};
    static int64_t k2[2] = {2, 2}, s2[2] = {2, 2};
    test_case un = {"MaxUnpool", 11, 2, 1, {tensor(CG_DTYPE_FLOAT, 4, xd, NULL, 1),
                                          tensor(CG_DTYPE_INT64, 4, xd, idx, 0)}, {{0}}, 2, NULL, 0};
    un.attrs[0] = attr_ints("kernel_shape", k2, 2);
    un.attrs[1] = attr_ints("strides", s2, 2);
    expect_fail(&un, "outside", "MaxUnpool index 99 in a 16-element output");

    int64_t qd[2] = {3, 4}, sd[1] = {2};
    test_case q = {"QuantizeLinear", 13, 2, 1, {tensor(CG_DTYPE_FLOAT, 2, qd, NULL, 1),
                                              tensor(CG_DTYPE_FLOAT, 1, sd, NULL, 3)}, {{0}}, 1, NULL, 0};
    q.attrs[0] = attr_int("axis", 1);
    expect_fail(&q, "per-axis", "QuantizeLinear with 2 scales for 4 columns");

    int64_t ld[1] = {4};
    test_case ln = {"LayerNormalization", 17, 2, 1, {tensor(CG_DTYPE_FLOAT, 2, qd, NULL, 1),
                                                   tensor(CG_DTYPE_FLOAT, 1, ld, NULL, 2)}, {{0}}, 1, NULL, 0};
    ln.attrs[0] = attr_int("axis", 5);
    expect_fail(&ln, "axis 5", "LayerNormalization axis 5 on rank 2");
}

/* Naive depthwise conv (group = channels, multiplier 1), square kernel. */
static void ref_depthwise(const cg_tensor *x, const cg_tensor *w, int64_t k, int64_t s,
                          int64_t p, int64_t oh, int64_t ow, double *y)
{
    int64_t c = x->dims[1], h = x->dims[2], wd = x->dims[3];
    for (int64_t ch = 0; ch < c; ch++)
        for (int64_t i = 0; i < oh; i++)
            for (int64_t j = 0; j < ow; j++) {
                double acc = 0;
                for (int64_t a = 0; a < k; a++)
                    for (int64_t b = 0; b < k; b++) {
                        int64_t r = i * s - p + a, q = j * s - p + b;
                        if (r >= 0 && r < h && q >= 0 && q < wd)
                            acc += cg_tensor_get_f64(x, (ch * h + r) * wd + q) *
                                   cg_tensor_get_f64(w, (ch * k + a) * k + b);
                    }
                y[(ch * oh + i) * ow + j] = acc;
            }
}

static void test_depthwise_wide(void)
{
    /* widths 45 and 61 run the 32- and 8-wide blocks, the overlapping tail
     * and (stride 2) the strided 8-wide blocks, plus both borders */
    const int64_t cfg[][4] = {{45, 3, 1, 1}, {61, 3, 2, 1}, {40, 5, 1, 2}, {50, 5, 2, 2}};
    for (size_t t = 0; t < sizeof cfg / sizeof cfg[0]; t++) {
        int64_t wdt = cfg[t][0], k = cfg[t][1], s = cfg[t][2], p = cfg[t][3];
        int64_t xd[4] = {1, 3, 9, wdt}, wd[4] = {3, 1, k, k};
        static int64_t ks[2], st[2], pads[4];
        ks[0] = ks[1] = k;
        st[0] = st[1] = s;
        pads[0] = pads[1] = pads[2] = pads[3] = p;
        test_case c = {"Conv", 13, 2, 1, {tensor(CG_DTYPE_FLOAT, 4, xd, NULL, 10 + t),
                                        tensor(CG_DTYPE_FLOAT, 4, wd, NULL, 20 + t)}, {{0}}, 4, NULL, 0};
        c.attrs[0] = attr_int("group", 3);
        c.attrs[1] = attr_ints("kernel_shape", ks, 2);
        c.attrs[2] = attr_ints("strides", st, 2);
        c.attrs[3] = attr_ints("pads", pads, 4);
        int64_t oh = (9 + 2 * p - k) / s + 1, ow = (wdt + 2 * p - k) / s + 1;
        double *want = malloc(sizeof(double) * (size_t)(3 * oh * ow));
        ref_depthwise(c.in[0], c.in[1], k, s, p, oh, ow, want);
        char what[64];
        snprintf(what, sizeof what, "depthwise %lldx%lld s%lld on width %lld", (long long)k,
                 (long long)k, (long long)s, (long long)wdt);
        expect_values(&c, want, 3 * oh * ow, what);
        free(want);
    }
}

/* The float64 depthwise interior at the vector levels (simd.h, dw_row_f64,
 * whole vectors then the narrower level's): every level gives the portable
 * level's bits (the scalar loops), and those match a naive convolution.
 * Widths from under one AVX2 vector to several AVX-512 blocks, strides 1
 * to 3 (3: scalar at every level), pads 0-2, dilation 2, 3x3 and 5x5. */
static void test_depthwise_f64_levels(void)
{
    const int64_t cfg[][5] = {/* width, k, stride, pad, dilation */
                              {7, 3, 1, 1, 1},  {12, 3, 1, 0, 1}, {45, 3, 1, 1, 1},
                              {70, 5, 1, 2, 1}, {61, 3, 2, 0, 1}, {61, 3, 2, 1, 1},
                              {29, 5, 2, 2, 1}, {16, 3, 2, 1, 1}, {40, 3, 1, 2, 2},
                              {50, 3, 2, 2, 2}, {33, 3, 3, 1, 1}};
    const cg_simd levels[3] = {CG_SIMD_PORTABLE, CG_SIMD_AVX2, CG_SIMD_AVX512};
    const cg_simd best = cg_simd_resolve(CG_SIMD_AUTO);
    int compared = 0;
    for (size_t t = 0; t < sizeof cfg / sizeof cfg[0]; t++) {
        int64_t wdt = cfg[t][0], k = cfg[t][1], s = cfg[t][2], p = cfg[t][3], dl = cfg[t][4];
        int64_t xd[4] = {1, 3, 6, wdt}, wd[4] = {3, 1, k, k}, bd[1] = {3};
        static int64_t ks[2], st[2], pads[4], dils[2];
        ks[0] = ks[1] = k;
        st[0] = st[1] = s;
        dils[0] = dils[1] = dl;
        pads[0] = pads[1] = pads[2] = pads[3] = p;
        test_case c = {"Conv", 13, 3, 1,
                       {tensor(CG_DTYPE_DOUBLE, 4, xd, NULL, 40 + t),
                        tensor(CG_DTYPE_DOUBLE, 4, wd, NULL, 50 + t),
                        tensor(CG_DTYPE_DOUBLE, 1, bd, NULL, 60 + t)},
                       {{0}}, 5, NULL, 0};
        c.attrs[0] = attr_int("group", 3);
        c.attrs[1] = attr_ints("kernel_shape", ks, 2);
        c.attrs[2] = attr_ints("strides", st, 2);
        c.attrs[3] = attr_ints("pads", pads, 4);
        c.attrs[4] = attr_ints("dilations", dils, 2);
        int64_t ext = (k - 1) * dl + 1;
        int64_t oh = (6 + 2 * p - ext) / s + 1, ow = (wdt + 2 * p - ext) / s + 1, n = 3 * oh * ow;
        char what[80];
        snprintf(what, sizeof what, "float64 depthwise %lldx%lld s%lld p%lld d%lld on width %lld",
                 (long long)k, (long long)k, (long long)s, (long long)p, (long long)dl,
                 (long long)wdt);
        double *ref = NULL;
        for (int li = 0; li < 3 && levels[li] <= best; li++) {
            cg_runtime_options opt;
            cg_runtime_options_default(&opt);
            opt.simd = levels[li];
            cg_named_value *outs = NULL;
            size_t nouts = 0;
            cg_error err;
            cg_status rs = test_case_run_with(&c, &opt, 2, &outs, &nouts, &err);
            EXPECT(rs == CG_OK, "%s at %s: %s", what, cg_simd_name(levels[li]), err.msg);
            if (rs != CG_OK)
                continue;
            const cg_tensor *y = &outs[0].value->tensor;
            EXPECT(y->dtype == CG_DTYPE_DOUBLE && y->numel == n, "%s: %lld values, expected %lld",
                   what, (long long)y->numel, (long long)n);
            if (y->dtype == CG_DTYPE_DOUBLE && y->numel == n) {
                if (!ref) {
                    ref = malloc(sizeof(double) * (size_t)n);
                    if (!ref)
                        test_fatal("out of memory");
                    memcpy(ref, y->data, sizeof(double) * (size_t)n);
                    /* the portable level against a naive convolution */
                    const double *xv = c.in[0]->data, *wv = c.in[1]->data, *bv = c.in[2]->data;
                    double worst = 0;
                    for (int64_t ch = 0; ch < 3; ch++)
                        for (int64_t i = 0; i < oh; i++)
                            for (int64_t j = 0; j < ow; j++) {
                                double acc = bv[ch];
                                for (int64_t a = 0; a < k; a++)
                                    for (int64_t b = 0; b < k; b++) {
                                        int64_t r = i * s - p + a * dl, q = j * s - p + b * dl;
                                        if (r >= 0 && r < 6 && q >= 0 && q < wdt)
                                            acc += wv[(ch * k + a) * k + b] *
                                                   xv[(ch * 6 + r) * wdt + q];
                                    }
                                worst = fmax(worst, fabs(acc - ref[(ch * oh + i) * ow + j]));
                            }
                    EXPECT(worst < 1e-12, "%s: %g from a naive convolution", what, worst);
                } else {
                    EXPECT(memcmp(ref, y->data, sizeof(double) * (size_t)n) == 0,
                           "%s: %s gives other bits than the portable level", what,
                           cg_simd_name(levels[li]));
                    compared++;
                }
            }
            cg_runtime_free_outputs(outs, nouts);
        }
        free(ref);
        test_case_free(&c);
    }
    EXPECT(best < CG_SIMD_AVX2 || compared >= 11, "only %d float64 depthwise cases compared",
           compared);
}

/* Naive 2-D pooling with ONNX semantics (pads begin = end = p). */
static void ref_pool(const cg_tensor *x, bool max, bool include_pad, int64_t k, int64_t s,
                     int64_t p, int64_t oh, int64_t ow, double *y)
{
    int64_t c = x->dims[1], h = x->dims[2], wd = x->dims[3];
    for (int64_t ch = 0; ch < c; ch++)
        for (int64_t i = 0; i < oh; i++)
            for (int64_t j = 0; j < ow; j++) {
                double acc = max ? -INFINITY : 0;
                int64_t n = 0, npad = 0;
                for (int64_t a = 0; a < k; a++)
                    for (int64_t b = 0; b < k; b++) {
                        int64_t r = i * s - p + a, q = j * s - p + b;
                        if (r >= -p && r < h + p && q >= -p && q < wd + p)
                            npad++;
                        if (r < 0 || r >= h || q < 0 || q >= wd)
                            continue;
                        double v = cg_tensor_get_f64(x, (ch * h + r) * wd + q);
                        acc = max ? (v > acc ? v : acc) : acc + v;
                        n++;
                    }
                y[(ch * oh + i) * ow + j] = max ? acc : acc / (double)(include_pad ? npad : n);
            }
}

static void test_pool_wide(void)
{
    const int64_t cfg[][5] = {/* width, k, s, p, mode: 0 max, 1 avg, 2 avg incl. pad */
                              {43, 3, 1, 1, 0}, {43, 3, 1, 1, 1}, {43, 3, 1, 1, 2},
                              {57, 3, 2, 1, 0}, {57, 2, 2, 0, 1}, {30, 5, 1, 2, 2}};
    for (size_t t = 0; t < sizeof cfg / sizeof cfg[0]; t++) {
        int64_t wdt = cfg[t][0], k = cfg[t][1], s = cfg[t][2], p = cfg[t][3], mode = cfg[t][4];
        int64_t xd[4] = {1, 2, 7, wdt};
        static int64_t ks[2], st[2], pads[4];
        ks[0] = ks[1] = k;
        st[0] = st[1] = s;
        pads[0] = pads[1] = pads[2] = pads[3] = p;
        test_case c = {mode == 0 ? "MaxPool" : "AveragePool", 13, 1, 1,
                     {tensor(CG_DTYPE_FLOAT, 4, xd, NULL, 30 + t)}, {{0}}, 4, NULL, 0};
        c.attrs[0] = attr_ints("kernel_shape", ks, 2);
        c.attrs[1] = attr_ints("strides", st, 2);
        c.attrs[2] = attr_ints("pads", pads, 4);
        c.attrs[3] = attr_int("count_include_pad", mode == 2);
        int64_t oh = (7 + 2 * p - k) / s + 1, ow = (wdt + 2 * p - k) / s + 1;
        double *want = malloc(sizeof(double) * (size_t)(2 * oh * ow));
        ref_pool(c.in[0], mode == 0, mode == 2, k, s, p, oh, ow, want);
        char what[64];
        snprintf(what, sizeof what, "%s k%lld s%lld p%lld on width %lld", c.op, (long long)k,
                 (long long)s, (long long)p, (long long)wdt);
        expect_values(&c, want, 2 * oh * ow, what);
        free(want);
    }
}

/* A window far larger than the input (kernel and stride 2^36 under
 * SAME_UPPER: one output whose window holds the 5x5 image amid 2^35 pixels
 * of padding a side, as a hostile .tflite's AVERAGE_POOL_2D options give)
 * costs the taps inside the image, not the window's size: the 2-D path,
 * the N-D path (1-D, and MaxPool with Indices) and the padded divisor. */
static void test_pool_huge_window(void)
{
    static int64_t big[2] = {(int64_t)1 << 36, (int64_t)1 << 36};
    const int64_t xd2[4] = {1, 1, 5, 5}, xd1[3] = {1, 1, 5};
    double sum = 0, mx = -INFINITY, sum1 = 0;
    uint64_t seed = 77;
    double vals[25], scaled[25];
    for (int i = 0; i < 25; i++) {
        vals[i] = pseudo(&seed);
        scaled[i] = ldexp(vals[i], 72);
        sum += vals[i];
        mx = vals[i] > mx ? vals[i] : mx;
        sum1 += i < 5 ? vals[i] : 0;
    }
    for (int mode = 0; mode < 5; mode++) {
        /* 0 avg 2-D, 1 max 2-D, 2 avg 1-D, 3 max 2-D with Indices, 4 avg 2-D incl. pad */
        bool one_d = mode == 2;
        test_case c = {mode == 1 || mode == 3 ? "MaxPool" : "AveragePool", 13, 1,
                       mode == 3 ? 2 : 1,
                       {tensor(CG_DTYPE_FLOAT, one_d ? 3 : 4, one_d ? xd1 : xd2,
                               mode == 4 ? scaled : vals, 0)},
                       {{0}}, 4, NULL, 0};
        c.attrs[0] = attr_ints("kernel_shape", big, one_d ? 1 : 2);
        c.attrs[1] = attr_ints("strides", big, one_d ? 1 : 2);
        c.attrs[2] = attr_str("auto_pad", "SAME_UPPER");
        c.attrs[3] = attr_int("count_include_pad", mode == 4);
        /* with the padding counted the divisor is 2^72 (2^36 taps a side): the
         * inputs scaled by 2^72 average to the plain values' sum */
        double want = mode == 0 ? sum / 25 : mode == 2 ? sum1 / 5 : mode == 4 ? sum : mx;
        char what[64];
        snprintf(what, sizeof what, "%s over a 2^36 window (case %d)", c.op, mode);
        expect_values(&c, &want, 1, what);
    }
}

static void test_group_norm(void)
{
    /* 1 x 4 channels x 2 values, 2 groups; opset 18 scales per group,
     * opset 21 per channel */
    int64_t xd[3] = {1, 4, 2}, gd[1] = {2}, cd[1] = {4};
    double x[8] = {1, 3, 5, 7, -2, 2, 0, 4};
    double g18[2] = {2, -1}, b18[2] = {0, 1};
    double g21[4] = {1, 2, 3, 4}, b21[4] = {0, 0, 1, 1};
    /* group 0: {1,3,5,7} mean 4 var 5; group 1: {-2,2,0,4} mean 1 var 5 */
    double want18[8], want21[8];
    for (int i = 0; i < 8; i++) {
        int grp = i / 4, ch = i / 2;
        double n = (x[i] - (grp ? 1.0 : 4.0)) / sqrt(5.0 + 1e-5);
        want18[i] = n * g18[grp] + b18[grp];
        want21[i] = n * g21[ch] + b21[ch];
    }
    test_case a = {"GroupNormalization", 18, 3, 1, {tensor(CG_DTYPE_FLOAT, 3, xd, x, 0),
                                                  tensor(CG_DTYPE_FLOAT, 1, gd, g18, 0),
                                                  tensor(CG_DTYPE_FLOAT, 1, gd, b18, 0)}, {{0}}, 1, NULL, 0};
    a.attrs[0] = attr_int("num_groups", 2);
    expect_values(&a, want18, 8, "GroupNormalization-18 per-group scale");
    test_case b = {"GroupNormalization", 21, 3, 1, {tensor(CG_DTYPE_FLOAT, 3, xd, x, 0),
                                                  tensor(CG_DTYPE_FLOAT, 1, cd, g21, 0),
                                                  tensor(CG_DTYPE_FLOAT, 1, cd, b21, 0)}, {{0}}, 1, NULL, 0};
    b.attrs[0] = attr_int("num_groups", 2);
    expect_values(&b, want21, 8, "GroupNormalization-21 per-channel scale");
    test_case bad = {"GroupNormalization", 21, 3, 1, {tensor(CG_DTYPE_FLOAT, 3, xd, x, 0),
                                                    tensor(CG_DTYPE_FLOAT, 1, gd, g18, 0),
                                                    tensor(CG_DTYPE_FLOAT, 1, gd, b18, 0)}, {{0}}, 1, NULL, 0};
    bad.attrs[0] = attr_int("num_groups", 2);
    expect_fail(&bad, "scale", "GroupNormalization-21 with per-group scales");
}

/* 2-D pooling with stride 2 (the SSE2 path, four outputs at a time, at the
 * vector levels; planes split over threads): every vector level and thread
 * count gives the portable level's single-threaded bits, over kernel sizes,
 * dilations, pads, ceil_mode and widths that leave 0-3 outputs to the scalar
 * loop, with NaN, infinities and signed zeros among MaxPool's inputs. */
static float *pool_levels_run(const test_case *c, cg_simd level, int threads, int64_t *n,
                              const char *what)
{
    cg_runtime_options opt;
    cg_runtime_options_default(&opt);
    opt.simd = level;
    opt.threads = threads;
    cg_named_value *outs = NULL;
    size_t nouts = 0;
    cg_error err;
    cg_status st = test_case_run_with(c, &opt, 2, &outs, &nouts, &err);
    EXPECT(st == CG_OK, "%s at %s, %d thread(s): %s", what, cg_simd_name(level), threads,
           err.msg);
    if (st != CG_OK)
        return NULL;
    const cg_tensor *t = &outs[0].value->tensor;
    float *y = malloc((size_t)t->numel * sizeof *y + 1);
    if (!y)
        test_fatal("out of memory");
    memcpy(y, t->data, (size_t)t->numel * sizeof *y);
    *n = t->numel;
    cg_runtime_free_outputs(outs, nouts);
    return y;
}

static void test_pool_stride2_levels(void)
{
    cg_simd best = cg_simd_resolve(CG_SIMD_AUTO);
    const cg_simd levels[2] = {CG_SIMD_AVX2, CG_SIMD_AVX512};
    int cases = 0;
    for (int mode = 0; mode < 3; mode++)             /* max, avg, avg counting pads */
        for (int64_t k = 1; k <= 5; k++)
            for (int64_t dil = 1; dil <= (mode == 0 ? 2 : 1); dil++)
                for (int64_t pad = 0; pad <= 2 && pad <= (k - 1) * dil; pad++)
                    for (int ceil = 0; ceil <= 1; ceil++)
                        for (int wi = 0; wi < 5; wi++) {
                            /* the last case is big enough to split over threads */
                            const int64_t widths[5] = {9, 16, 23, 30, 121};
                            int64_t wd = widths[wi], big = wi == 4;
                            int64_t xd[4] = {2, big ? 4 : 3, big ? 101 : 11, wd};
                            if ((wd + 2 * pad - (k - 1) * dil - 1) < 0)
                                continue;
                            static int64_t ks[2], st[2], pads[4], dils[2];
                            ks[0] = ks[1] = k;
                            st[0] = st[1] = 2;
                            dils[0] = dils[1] = dil;
                            pads[0] = pads[1] = pads[2] = pads[3] = pad;
                            test_case c = {mode == 0 ? "MaxPool" : "AveragePool", 13, 1, 1,
                                           {tensor(CG_DTYPE_FLOAT, 4, xd, NULL, 77 + (uint64_t)cases)},
                                           {{0}}, 0, NULL, 0};
                            cg_tensor *x = c.in[0];
                            float *xv = x->data;
                            for (int64_t i = 0; mode == 0 && i < x->numel; i += 13)
                                xv[i] = i % 5 == 0 ? NAN : i % 5 == 1 ? -0.0f
                                                 : i % 5 == 2 ? 0.0f : i % 5 == 3 ? INFINITY : -INFINITY;
                            c.attrs[c.nattr++] = attr_ints("kernel_shape", ks, 2);
                            c.attrs[c.nattr++] = attr_ints("strides", st, 2);
                            c.attrs[c.nattr++] = attr_ints("pads", pads, 4);
                            c.attrs[c.nattr++] = attr_int("ceil_mode", ceil);
                            if (mode == 0)
                                c.attrs[c.nattr++] = attr_ints("dilations", dils, 2);
                            else
                                c.attrs[c.nattr++] = attr_int("count_include_pad", mode == 2);
                            char what[96];
                            snprintf(what, sizeof what, "%s k%lld d%lld p%lld ceil%d width %lld",
                                     c.op, (long long)k, (long long)dil, (long long)pad, ceil,
                                     (long long)wd);
                            int64_t n0 = 0;
                            float *y0 = pool_levels_run(&c, CG_SIMD_PORTABLE, 1, &n0, what);
                            for (int li = 0; li < 2 && y0; li++)
                                for (int th = 1; th <= 3 && levels[li] <= best; th += 2) {
                                    int64_t n1 = 0;
                                    float *y1 = pool_levels_run(&c, levels[li], th, &n1, what);
                                    EXPECT(y1 && n1 == n0 &&
                                               memcmp(y0, y1, (size_t)n0 * sizeof *y0) == 0,
                                           "%s: %s with %d thread(s) differs from the "
                                           "portable level's bits", what,
                                           cg_simd_name(levels[li]), th);
                                    free(y1);
                                }
                            free(y0);
                            test_case_free(&c);
                            cases++;
                        }
    EXPECT(cases > 200, "only %d stride-2 pooling cases ran", cases);
}

int main(void)
{
    test_conv_errors();
    test_other_errors();
    test_depthwise_wide();
    test_depthwise_f64_levels();
    test_pool_wide();
    test_pool_huge_window();
    test_pool_stride2_levels();
    test_group_norm();
    return test_done("test_ops_nn");
}
