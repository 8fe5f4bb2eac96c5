/*
 * The vector tables of src/run/ops/simd.h against double-precision math:
 * every level this CPU supports (portable, AVX2, AVX-512) must agree with
 * exp/sigmoid/tanh/erf/SiLU in double within a few float ulps (MLAS's
 * sigmoid/tanh/SiLU within their absolute error, and bit for bit with the
 * portable code; the softmax sum too) over the
 * whole float range (dense near 0, the function's knees and the overflow and
 * underflow edges), keep NaN and infinities, convert fp16 exactly like the
 * scalar cg_fp16_to_f32 / cg_f32_to_fp16 for all 65536 halves, and give
 * the same softmax sums and maxima. Lengths that are not a multiple of the
 * vector width exercise the tails; in-place calls (y == x) are tested too.
 * Every GEMM micro-kernel of a level reads a weight panel packed (row
 * pitch nr) and in place (nr columns of a wider row-major matrix, at a
 * misaligned address on the vector levels) to the same bits. The
 * convolution store's fused epilogue and the epilogue pass give the
 * portable entries' bits at every level, and pooling's stride-2 row and row
 * fold the scalar loops' bits.
 */
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "run/cpu.h"
#include "run/ops/simd.h"
#include "testlib.h"


/* Distance in float ulps between got and the double reference want. */
static double ulps(float got, double want)
{
    if (isnan(want))
        return isnan(got) ? 0.0 : INFINITY;
    if (isinf(want))
        return (double)got == want ? 0.0 : INFINITY;
    float w = (float)want;
    double ulp = (double)nextafterf(fabsf(w), INFINITY) - (double)fabsf(w);
    if (ulp == 0.0 || isinf(ulp))
        ulp = 0x1p-149;
    return fabs((double)got - want) / ulp;
}

static double ref_sigmoid(double x) { return 1.0 / (1.0 + exp(-x)); }
static double ref_silu(double x) { return x / (1.0 + exp(-x)); }

typedef struct fn_case {
    const char *name;
    void (*fn)(float *, const float *, int64_t);
    double (*ref)(double);
    double max_ulps;  /* relative bound */
    double abs_floor; /* differences below this absolute size are accepted */
    bool floor_times_x; /* ... times max(1, |x|) */
} fn_case;

/* A spread of inputs: dense in [-lo, lo], plus edges and specials. */
static size_t make_inputs(float *x, size_t cap)
{
    size_t n = 0;
    for (int i = -20000; i <= 20000 && n < cap; i++)
        x[n++] = (float)i * 1e-3f;            /* [-20, 20] step 0.001 */
    for (int i = -2000; i <= 2000 && n < cap; i++)
        x[n++] = (float)i * 0.05f;            /* [-100, 100] */
    for (int e = -40; e <= 38 && n + 2 < cap; e++) {
        x[n++] = ldexpf(1.3f, e);
        x[n++] = -ldexpf(1.7f, e);
    }
    const float edges[] = {88.72f, 88.7228f, 88.73f, 89.0f, -87.33f, -87.34f, -88.0f, -103.0f,
                           -104.0f, 0.0f, -0.0f, 0.625f, -0.625f, 0.9f, -0.9f, 3.93f, -3.93f,
                           9.1f, -9.1f, INFINITY, -INFINITY, NAN, 1e-30f, -1e-30f};
    for (size_t i = 0; i < sizeof edges / sizeof edges[0] && n < cap; i++)
        x[n++] = edges[i];
    return n;
}

static void check_level(const cg_simd_ops *ops)
{
    const char *lvl = cg_simd_name(ops->level);
    size_t cap = 50000;
    float *x = malloc(cap * sizeof *x), *y = malloc(cap * sizeof *y);
    float *z = malloc(cap * sizeof *z);
    if (!x || !y || !z) {
        EXPECT(0, "out of memory");
        free(x);
        free(y);
        free(z);
        return;
    }
    size_t n = make_inputs(x, cap) - 3; /* an odd length: tails run */
    /* erf (MLAS's, within an ulp) is within 1 in absolute terms, so tiny
     * outputs only need an absolute bound; exp underflows to 0 below -87.33 (subnormals
     * flushed), which the floor admits. Sigmoid, tanh and SiLU are MLAS's
     * rational approximations (simd_mlas.h), accurate in absolute terms
     * only (MLAS's sigmoid is 1.2e-7 at -17.56 where the function is
     * 2.4e-8, and 0 at -18): their floors are MLAS's absolute error
     * (measured over [-20, 20] in steps of 1e-5: sigmoid 1.67e-7, tanh
     * 3.25e-7), times |x| for SiLU; above it they are within a few ulps. */
    const fn_case cases[] = {
        {"exp", ops->exp_f32, exp, 3.0, 1.2e-38, false},
        {"sigmoid", ops->sigmoid_f32, ref_sigmoid, 4.0, 1.7e-7, false},
        {"tanh", ops->tanh_f32, tanh, 4.0, 3.3e-7, false},
        {"erf", ops->erf_f32, erf, 4.0, 1e-45, false},
        {"silu", ops->silu_f32, ref_silu, 6.0, 1.7e-7, true},
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        const fn_case *fc = &cases[c];
        fc->fn(y, x, (int64_t)n);
        double worst = 0;
        size_t at = 0;
        for (size_t i = 0; i < n; i++) {
            double want = fc->ref((double)x[i]);
            double u = ulps(y[i], want);
            double floor = fc->abs_floor * (fc->floor_times_x ? fmax(1.0, fabs(x[i])) : 1.0);
            if (u > fc->max_ulps && fabs((double)y[i] - want) <= floor)
                u = 0;
            if (!(u <= worst)) {
                worst = u;
                at = i;
            }
        }
        printf("  %s %s: worst %.2f ulps\n", lvl, fc->name, worst);
        EXPECT(worst <= fc->max_ulps, "%s %s: %.2f ulps at x = %.9g (got %.9g, want %.9g)",
               lvl, fc->name, worst, (double)x[at], (double)y[at], fc->ref((double)x[at]));
        /* in place gives the same */
        memcpy(z, x, n * sizeof *z);
        fc->fn(z, z, (int64_t)n);
        EXPECT(memcmp(z, y, n * sizeof *z) == 0, "%s %s: in-place result differs", lvl,
               fc->name);
    }
    /* MLAS's approximations give the same bits at every level (the
     * infinities included), and keep a NaN */
    {
        const cg_simd_ops *pt = cg_simd_ops_get(CG_SIMD_PORTABLE);
        void (*mlas[4][2])(float *, const float *, int64_t) = {
            {ops->sigmoid_f32, pt->sigmoid_f32}, {ops->tanh_f32, pt->tanh_f32},
            {ops->silu_f32, pt->silu_f32}, {ops->erf_f32, pt->erf_f32}};
        static const char *const names[4] = {"sigmoid", "tanh", "silu", "erf"};
        for (int f = 0; f < 4; f++) {
            mlas[f][0](y, x, (int64_t)n);
            mlas[f][1](z, x, (int64_t)n);
            size_t bad = 0;
            for (size_t i = 0; i < n; i++)
                bad += memcmp(&y[i], &z[i], sizeof(float)) != 0;
            EXPECT(bad == 0, "%s: %zu of %zu %s values differ from the portable code", lvl, bad,
                   n, names[f]);
            float nan_in[3] = {NAN, -NAN, 0.5f}, nan_out[3];
            mlas[f][0](nan_out, nan_in, 3);
            EXPECT(isnan(nan_out[0]) && isnan(nan_out[1]), "%s: %s loses a NaN", lvl, names[f]);
        }
    }

    /* max against the portable entry; sumexp bit for bit (exps and sum),
     * and within 1e-6 of the sum in double */
    for (int64_t len = 0; len < 300; len += 7) {
        const float *row = x + 20000 - len / 2; /* around 0: sums of many terms */
        float m = ops->max_f32(row, len), mc = cg_simd_max_f32_c(row, len);
        EXPECT(m == mc, "%s max of %lld: %g vs %g", lvl, (long long)len, (double)m, (double)mc);
        float s = ops->sumexp_f32(y, row, -m, len);
        float sc = cg_simd_sumexp_f32_c(z, row, -m, len);
        float sn = ops->sumexp_f32(NULL, row, -m, len);
        double want = 0.0;
        for (int64_t i = 0; i < len; i++)
            want += exp((double)row[i] - (double)m);
        EXPECT(memcmp(&s, &sc, sizeof s) == 0 && memcmp(&s, &sn, sizeof s) == 0 &&
                   memcmp(y, z, (size_t)len * sizeof *y) == 0,
               "%s sumexp of %lld: %.9g, portable %.9g, without y %.9g", lvl, (long long)len,
               (double)s, (double)sc, (double)sn);
        EXPECT(fabs(s - want) <= 1e-6 * want, "%s sumexp of %lld: %.9g vs %.9g in double", lvl,
               (long long)len, (double)s, want);
    }
    float with_nan[40];
    for (int i = 0; i < 40; i++)
        with_nan[i] = (float)i;
    with_nan[17] = NAN;
    EXPECT(isnan(ops->max_f32(with_nan, 40)), "%s: max ignores a NaN", lvl);

    /* hardsigmoid/hardswish: the portable selects, up to the one rounding
     * the vector path saves with an FMA; NaN passes through */
    {
        ops->hardsigmoid_f32(y, x, (int64_t)n, 0.2f, 0.5f);
        cg_simd_hardsigmoid_f32_c(z, x, (int64_t)n, 0.2f, 0.5f);
        int bad = 0;
        for (size_t i = 0; i < n; i++)
            if (isnan(z[i]) ? !isnan(y[i]) : fabsf(y[i] - z[i]) > 1.2e-7f)
                bad++;
        EXPECT(bad == 0, "%s: %d hardsigmoid values differ", lvl, bad);
        ops->hardswish_f32(y, x, (int64_t)n, 1.0f / 6.0f, 0.5f);
        cg_simd_hardswish_f32_c(z, x, (int64_t)n, 1.0f / 6.0f, 0.5f);
        bad = 0;
        for (size_t i = 0; i < n; i++)
            if (isnan(z[i]) ? !isnan(y[i]) : fabsf(y[i] - z[i]) > 1.2e-7f * fmaxf(1.0f, fabsf(x[i])))
                bad++;
        EXPECT(bad == 0, "%s: %d hardswish values differ", lvl, bad);
    }

    /* quantize_u8 is exact: the same bytes as the portable loop, ties
     * (k + 0.5) * scale included */
    {
        float q[203];
        uint8_t qa[203], qb[203];
        float scale = 0.0371f;
        for (int i = 0; i < 203; i++)
            q[i] = i % 3 == 0 ? ((float)(i - 100) + 0.5f) * scale : x[(i * 97) % 40000] * 0.3f;
        ops->quantize_u8(qa, q, 203, scale, 113.0f);
        cg_simd_quantize_u8_c(qb, q, 203, scale, 113.0f);
        EXPECT(memcmp(qa, qb, sizeof qa) == 0, "%s: quantize_u8 differs from portable", lvl);
    }

    /* every half converts like the scalar code, both ways */
    uint16_t *h = malloc(65536 * sizeof *h), *h2 = malloc(65536 * sizeof *h2);
    float *f = malloc(65536 * sizeof *f);
    if (h && h2 && f) {
        for (int i = 0; i < 65536; i++)
            h[i] = (uint16_t)i;
        ops->fp16_to_f32(f, h, 65535);
        int bad = 0;
        for (int i = 0; i < 65535; i++)
            if (memcmp(&f[i], &(float){cg_fp16_to_f32(h[i])}, sizeof(float)) != 0)
                bad++;
        EXPECT(bad == 0, "%s: %d halves widen differently", lvl, bad);
        ops->f32_to_fp16(h2, x, (int64_t)n);
        bad = 0;
        for (size_t i = 0; i < n; i++)
            if (h2[i] != cg_f32_to_fp16(x[i]))
                bad++;
        EXPECT(bad == 0, "%s: %d floats narrow differently", lvl, bad);
        /* halfway cases round to even */
        float ties[32];
        for (int i = 0; i < 32; i++)
            ties[i] = cg_fp16_to_f32((uint16_t)(0x3c00 + i)) + 0x1p-11f;
        ops->f32_to_fp16(h2, ties, 32);
        bad = 0;
        for (int i = 0; i < 32; i++)
            if (h2[i] != cg_f32_to_fp16(ties[i]))
                bad++;
        EXPECT(bad == 0, "%s: %d ties round differently", lvl, bad);
    } else {
        EXPECT(0, "out of memory");
    }
    free(h);
    free(h2);
    free(f);
    free(x);
    free(y);
    free(z);
}

static uint64_t lcg(uint64_t *s)
{
    *s = *s * 6364136223846793005ull + 1442695040888963407ull;
    return *s >> 11;
}

/* One micro-kernel, over each panel of a K x ld matrix (3 panels of nr
 * columns, then 5 more the kernel never reads): the panel packed (ldw = nr)
 * and read in place (ldw = ld, from `shift` bytes past an aligned buffer),
 * in one pass and in two K blocks (acc), must give the same bits, and the
 * sums must be the products (within float32 rounding of a K-term sum). */
static void check_gemm_ldw(const char *lv, const cg_simd_gemm *g, size_t shift)
{
    enum { K = 37, KA = 20 };
    int64_t nr = g->nr, mr = g->mr, ld = 3 * nr + 5;
    size_t wbytes = (size_t)(K * ld) * sizeof(float);
    uint8_t *raw = malloc(wbytes + 64);
    float *b = malloc(wbytes), *pk = malloc((size_t)(K * nr) * sizeof(float));
    float *x = malloc((size_t)(K * mr) * sizeof(float));
    float *c1 = malloc((size_t)(mr * nr) * sizeof(float)), *c2 = malloc((size_t)(mr * nr) * sizeof(float));
    int64_t *off = malloc(K * sizeof(int64_t)), *pos = malloc((size_t)mr * sizeof(int64_t));
    if (!raw || !b || !pk || !x || !c1 || !c2 || !off || !pos)
        test_fatal("out of memory");
    uint64_t seed = 5;
    for (int64_t i = 0; i < K * ld; i++)
        b[i] = (float)((double)(lcg(&seed) % 2001) / 1000.0 - 1.0);
    for (int64_t i = 0; i < K * mr; i++)
        x[i] = (float)((double)(lcg(&seed) % 2001) / 1000.0 - 1.0);
    memcpy(raw + shift, b, wbytes);
    const float *w = (const float *)(const void *)(raw + shift);
    for (int64_t q = 0; q < K; q++)
        off[q] = q * mr;
    for (int64_t i = 0; i < mr; i++)
        pos[i] = mr - 1 - i;
    for (int64_t pn = 0; pn < 3; pn++) {
        for (int64_t q = 0; q < K; q++)
            memcpy(pk + q * nr, b + q * ld + pn * nr, (size_t)nr * sizeof(float));
        for (int split = 0; split < 2; split++) {
            int64_t k1 = split ? KA : K;
            g->ukr(k1, pk, nr, x, off, pos, c1, 0);
            g->ukr(k1, w + pn * nr, ld, x, off, pos, c2, 0);
            if (split) {
                g->ukr(K - KA, pk + KA * nr, nr, x, off + KA, pos, c1, 1);
                g->ukr(K - KA, w + KA * ld + pn * nr, ld, x, off + KA, pos, c2, 1);
            }
            EXPECT(memcmp(c1, c2, (size_t)(mr * nr) * sizeof(float)) == 0,
                   "%s gemm %lldx%lld, panel %lld, shift %zu%s: in place differs from packed", lv,
                   (long long)mr, (long long)nr, (long long)pn, shift, split ? ", 2 blocks" : "");
            for (int64_t i = 0; i < mr; i++)
                for (int64_t jj = 0; jj < nr; jj++) {
                    double want = 0, mag = 0;
                    for (int64_t q = 0; q < K; q++) {
                        double t = (double)x[off[q] + pos[i]] * b[q * ld + pn * nr + jj];
                        want += t;
                        mag += fabs(t);
                    }
                    double got = c1[i * nr + jj];
                    EXPECT(fabs(got - want) <= (K + 1) * 0x1p-24 * mag + 1e-30,
                           "%s gemm %lldx%lld: (%lld, %lld) is %.9g, want %.9g", lv, (long long)mr,
                           (long long)nr, (long long)i, (long long)jj, got, want);
                }
        }
    }
    free(raw);
    free(b);
    free(pk);
    free(x);
    free(c1);
    free(c2);
    free(off);
    free(pos);
}

/* The micro-kernels of a level, and its one-position kernel. The portable
 * kernel reads w as floats, so only aligned; the vector ones load it
 * unaligned, at any byte address (a weight payload in a model file). */
static void check_gemms(const cg_simd_ops *ops)
{
    const char *lv = cg_simd_name(ops->level);
    size_t shifts = ops->level == CG_SIMD_PORTABLE ? 1 : 4;
    for (size_t sh = 0; sh < shifts; sh++) {
        for (int i = 0; i < ops->gemm_count; i++)
            check_gemm_ldw(lv, &ops->gemm[i], sh * (sizeof(float) + 1));
        if (ops->gemv.ukr)
            check_gemm_ldw(lv, &ops->gemv, sh * (sizeof(float) + 1));
    }
}

/* The convolution store's epilogue (tile_store) and the epilogue pass
 * (act_f32) of a level: the same bits as the portable entries, NaN, signed
 * zeros, infinities and Clip's bounds included, for every activation, with
 * and without bias and residual, on tiles whose sides are not multiples of
 * the 8 x 8 transpose blocks and rows of a wider plane. */
static void check_epilogues(const cg_simd_ops *ops)
{
    enum { NP = 29, NC = 21, LD = 24, PLANE = 37 };
    const char *lv = cg_simd_name(ops->level);
    static const float specials[] = {NAN, -0.0f, 0.0f, INFINITY, -INFINITY, -1.0f, 6.0f,
                                     6.5f, -1e-30f, 1e30f};
    float c[NP * LD], bias[NC], add[NC * PLANE], y1[NC * PLANE], y2[NC * PLANE];
    uint64_t seed = 11;
    for (int i = 0; i < NP * LD; i++)
        c[i] = (float)((double)(lcg(&seed) % 4001) / 500.0 - 4.0);
    for (int i = 0; i < NC * PLANE; i++)
        add[i] = (float)((double)(lcg(&seed) % 4001) / 500.0 - 4.0);
    for (int i = 0; i < NC; i++)
        bias[i] = (float)((double)(lcg(&seed) % 2001) / 1000.0 - 1.0);
    for (size_t i = 0; i < sizeof specials / sizeof specials[0]; i++) {
        c[i * 7 % (NP * LD)] = specials[i];
        add[i * 13 % (NC * PLANE)] = specials[i];
    }
    bias[3] = -0.0f;
    bias[9] = NAN;
    static const cg_simd_pw_act acts[] = {CG_SIMD_PW_NONE, CG_SIMD_PW_RELU, CG_SIMD_PW_CLIP};
    for (size_t a = 0; a < 3; a++)
        for (int with = 0; with < 4; with++) {
            cg_simd_pw_epi e = {with & 1 ? bias : NULL, with & 2 ? add : NULL, acts[a],
                                -0.0f, 6.0f};
            for (int64_t np = 1; np <= NP; np += 7)
                for (int64_t nc = 1; nc <= NC; nc += 5) {
                    memset(y1, 0x5a, sizeof y1);
                    memset(y2, 0x5a, sizeof y2);
                    ops->tile_store(y1, PLANE, c, LD, np, nc, &e);
                    cg_simd_tile_store_c(y2, PLANE, c, LD, np, nc, &e);
                    EXPECT(memcmp(y1, y2, sizeof y1) == 0,
                           "%s tile_store act %d, bias %d, add %d, %lld x %lld: differs from "
                           "the portable store", lv, (int)acts[a], with & 1, with >> 1,
                           (long long)np, (long long)nc);
                }
            for (int64_t n = 0; n <= 3 * 16 + 5; n += 3) {
                memcpy(y1, c, sizeof c < sizeof y1 ? sizeof c : sizeof y1);
                memcpy(y2, y1, sizeof y1);
                ops->act_f32(y1, with & 2 ? add : NULL, n, acts[a], -0.0f, 6.0f);
                cg_simd_act_f32_c(y2, with & 2 ? add : NULL, n, acts[a], -0.0f, 6.0f);
                EXPECT(memcmp(y1, y2, sizeof y1) == 0,
                       "%s act_f32 act %d, add %d, n %lld: differs from the portable pass", lv,
                       (int)acts[a], with >> 1, (long long)n);
            }
        }
    /* what the portable entries compute: act((c + bias) + add) */
    cg_simd_pw_epi e = {bias, add, CG_SIMD_PW_CLIP, -1.0f, 1.0f};
    cg_simd_tile_store_c(y1, PLANE, c, LD, NP, NC, &e);
    for (int64_t j = 0; j < NC; j++)
        for (int64_t i = 0; i < NP; i++) {
            float v = (c[i * LD + j] + bias[j]) + add[j * PLANE + i];
            float want = v < -1.0f ? -1.0f : v > 1.0f ? 1.0f : v;
            float got = y1[j * PLANE + i];
            EXPECT(memcmp(&got, &want, sizeof got) == 0 || (isnan(got) && isnan(want)),
                   "portable tile_store (%lld, %lld): %g, want %g", (long long)i, (long long)j,
                   (double)got, (double)want);
        }
}

/* Pooling's vector entries (NULL at the portable level) against the
 * scalar selects of pool_impl.inc, bit for bit, NaN and signed zeros
 * included: pool_s2 over every output count (whole vectors and the masked
 * last one, nothing stored past n, reading only the slack it declares) and
 * pool_rows over row counts and lengths with a tail. */
static void check_pool(const cg_simd_ops *ops)
{
    if (!ops->pool_s2 || !ops->pool_rows)
        return;
    enum { NMAX = 45, VN = 2 * NMAX + 2 * 2 + CG_SIMD_POOL_SLACK };
    const char *lv = cg_simd_name(ops->level);
    float v[VN], out[NMAX + 8], want[NMAX];
    uint64_t seed = 17;
    for (int i = 0; i < VN; i++)
        v[i] = (float)((double)(lcg(&seed) % 41) / 8.0 - 2.5); /* ties and zeros */
    v[5] = NAN;
    v[8] = -0.0f;
    v[9] = 0.0f;
    v[30] = -INFINITY;
    for (int max = 0; max < 2; max++)
        for (int64_t kw_n = 1; kw_n <= 3; kw_n++)
            for (int64_t dw = 1; dw <= 2; dw++)
                for (int64_t n = 1; n <= NMAX; n++) {
                    /* the last tap read is 2(n-1) + (kw_n-1)dw; the slack after it */
                    if (2 * (n - 1) + (kw_n - 1) * dw + CG_SIMD_POOL_SLACK >= VN)
                        continue;
                    for (int64_t t = 0; t < n; t++) {
                        float acc = v[2 * t];
                        for (int64_t kw = 1; kw < kw_n; kw++) {
                            float e = v[2 * t + kw * dw];
                            acc = max ? (acc < e ? e : acc) : acc + e;
                        }
                        want[t] = acc;
                    }
                    for (int i = 0; i < NMAX + 8; i++)
                        out[i] = 12345.0f;
                    ops->pool_s2(out, v, n, kw_n, dw, max);
                    EXPECT(memcmp(out, want, (size_t)n * sizeof(float)) == 0,
                           "%s pool_s2 %s kw %lld dw %lld n %lld: differs from the scalar loop",
                           lv, max ? "max" : "sum", (long long)kw_n, (long long)dw, (long long)n);
                    EXPECT(out[n] == 12345.0f, "%s pool_s2 n %lld: stored past n", lv,
                           (long long)n);
                }
    enum { W = 37, PITCH = 41, ROWS = 4 };
    float x[ROWS * PITCH], got[W + 8], ref[W];
    for (int i = 0; i < ROWS * PITCH; i++)
        x[i] = v[i % VN];
    for (int max = 0; max < 2; max++)
        for (int64_t nrows = 1; nrows <= ROWS; nrows++)
            for (int64_t n = 1; n <= W; n += 3) {
                for (int64_t i = 0; i < n; i++) {
                    float acc = x[i];
                    for (int64_t r = 1; r < nrows; r++) {
                        float e = x[r * PITCH + i];
                        acc = max ? (acc < e ? e : acc) : acc + e;
                    }
                    ref[i] = acc;
                }
                for (int i = 0; i < W + 8; i++)
                    got[i] = 12345.0f;
                ops->pool_rows(got, x, PITCH, nrows, n, max);
                EXPECT(memcmp(got, ref, (size_t)n * sizeof(float)) == 0 && got[n] == 12345.0f,
                       "%s pool_rows %s rows %lld n %lld: differs from the scalar fold", lv,
                       max ? "max" : "sum", (long long)nrows, (long long)n);
            }
}

/* The fp16-sums chains (sum16_f64) of a level: the portable entry's bits
 * lane by lane (the scalar cg_fp16_round / cg_fp16_round_significand
 * chain), in both roundings, for every row and lane count, on values that
 * reach each of the roundings' cases: ties of the 11-bit significand,
 * fp16's subnormals and their ties, 65504 and what rounds past it, zeros
 * of both signs, double subnormals, infinities, NaN, and products that
 * overflow a double (a NaN matches a NaN: which operand's NaN an add or
 * multiply passes on, and its sign, is not something C fixes: the
 * compiler may commute the scalar operands). b is read with a row pitch
 * of exactly nl from a
 * block of exactly its size, so a lane read past nl is out of bounds
 * (ASan build). */
static void check_sum16(const cg_simd_ops *ops)
{
    enum { K = 37, R = CG_SIMD_SUM16_ROWS, L = CG_SIMD_SUM16_LANES };
    const char *lv = cg_simd_name(ops->level);
    static const double specials[] = {1.0 + 0x1p-11, 1.0 + 3 * 0x1p-11, 65504.0, 65519.99,
                                      65520.0, 0x1p-24, 3 * 0x1p-25, 0x1p-25, 0x1p-14,
                                      0x1.ffcp-15, 1e-310, -0.0, 0.0, INFINITY, -INFINITY,
                                      NAN, 1e300, -1e300, -0x1p-1074, 2049.0, 2051.0};
    enum { NS = sizeof specials / sizeof specials[0] };
    double a[R][K];
    const double *ap[R];
    uint64_t seed = 23;
    for (int p = 0; p < R; p++) {
        for (int i = 0; i < K; i++)
            a[p][i] = (double)((int64_t)(lcg(&seed) % 20001) - 10000) / 997.0;
        ap[p] = a[p];
    }
    for (int pass = 0; pass < 4; pass++) {
        /* pass 0: ordinary values; 1: specials among them; 2: large ones
         * that overflow fp16 and then stay inf or turn NaN; 3: tiny ones,
         * whose products and sums stay among fp16's subnormals */
        if (pass == 1)
            for (int i = 0; i < NS; i++)
                a[i % R][(i * 5) % K] = specials[i];
        if (pass == 3)
            for (int p = 0; p < R; p++)
                for (int i = 0; i < K; i++)
                    a[p][i] = (double)((int64_t)(lcg(&seed) % 2001) - 1000) * 0x1p-20;
        for (int nl = 1; nl <= L; nl++) {
            double *b = malloc((size_t)K * (size_t)nl * sizeof *b);
            if (!b) {
                EXPECT(false, "out of memory");
                return;
            }
            for (int i = 0; i < K * nl; i++) {
                b[i] = (double)((int64_t)(lcg(&seed) % 20001) - 10000) / 313.0;
                if (pass == 2)
                    b[i] *= 900.0;
                if (pass == 3)
                    b[i] *= 0x1p-12;
            }
            if (pass == 1)
                for (int i = 0; i < NS; i++)
                    b[(i * 7) % (K * nl)] = specials[(i + nl) % NS];
            for (int range = 0; range < 2; range++)
                for (int np = 1; np <= R; np++) {
                    double got[R * L], want[R * L];
                    for (int i = 0; i < R * L; i++)
                        got[i] = want[i] = i % 3 == 0 ? -0.0 : (double)(i % 5) * 0.125;
                    ops->sum16_f64(got, np, ap, b, nl, K, nl, range != 0);
                    cg_simd_sum16_f64_c(want, np, ap, b, nl, K, nl, range != 0);
                    for (int p = 0; p < np; p++)
                        for (int l = 0; l < nl; l++)
                            EXPECT(memcmp(&got[p * L + l], &want[p * L + l], sizeof(double)) == 0 ||
                                       (isnan(got[p * L + l]) && isnan(want[p * L + l])),
                                   "%s sum16_f64 pass %d, %s, %d rows, %d lanes: row %d lane %d "
                                   "%a, portable %a", lv, pass, range ? "fp16" : "significand",
                                   np, nl, p, l, got[p * L + l], want[p * L + l]);
                }
            free(b);
        }
    }
    /* what the portable chain computes, on one known case: fp16 sums of
     * 2048 + 1 + 1 stay 2048 (2049 is a tie to even), 65504 + 16 is inf */
    double one[2] = {1.0, 1.0}, big[2] = {65504.0, 16.0}, wb[2] = {1.0, 1.0}, acc[L];
    const double *pa[1] = {one};
    acc[0] = 2048.0;
    cg_simd_sum16_f64_c(acc, 1, pa, wb, 1, 2, 1, true);
    EXPECT(acc[0] == 2048.0, "portable sum16: 2048 + 1 + 1 in fp16 is %g", acc[0]);
    pa[0] = big;
    acc[0] = 0.0;
    cg_simd_sum16_f64_c(acc, 1, pa, wb, 1, 2, 1, true);
    EXPECT(isinf(acc[0]), "portable sum16: 65504 + 16 in fp16 is %g", acc[0]);
    acc[0] = 0.0;
    cg_simd_sum16_f64_c(acc, 1, pa, wb, 1, 2, 1, false);
    EXPECT(acc[0] == 65536.0, "portable sum16 significand: 65504 + 16 is %g", acc[0]);
}

/* An fp16 value for the float32 chains (range) or an 11-bit significand
 * within their bounds (cg_fp16_chain_exact), from a pseudo-random draw:
 * mostly ordinary magnitudes around scale, and every few draws one of
 * the cases the roundings treat apart. */
static float chain_operand(uint64_t *seed, bool range, float scale)
{
    static const float specials16[] = {65504.0f, -65504.0f, 0x1p-24f, -0x1p-24f, 0x1p-14f,
                                       0x1.ff8p-15f, 0x1p15f, 2048.0f, 2049.0f, -0.0f, 0.0f,
                                       1.0f + 0x1p-10f, 0x1p-20f, 3 * 0x1p-24f};
    static const float specials11[] = {0x1p40f, -0x1.ffcp40f, 0x1p-40f, -0x1p-40f, 1e9f,
                                       -0.0f, 0.0f, 1.0f + 0x1p-10f, 2049.0f};
    uint64_t r = lcg(seed);
    if (r % 11 == 0) {
        r = lcg(seed);
        float v = range ? specials16[r % (sizeof specials16 / sizeof specials16[0])]
                        : specials11[r % (sizeof specials11 / sizeof specials11[0])];
        return cg_fp16_chain_exact(v, range) ? v : 1.0f;
    }
    float v = (float)((double)((int64_t)(lcg(seed) % 20001) - 10000) / 997.0) * scale;
    v = range ? (float)cg_fp16_round(v) : (float)cg_fp16_round_significand(v);
    return cg_fp16_chain_exact(v, range) ? v : 0.0f;
}

/* The float32 chains (sum16_f32) of a level: on operands
 * cg_fp16_chain_exact takes, every lane is the float64 chain's value
 * (the portable sum16_f64), for every row and lane count up to
 * CG_SIMD_SUM16F_LANES (both vectors of a pass, and a second pass on
 * AVX2), in both roundings, at scales whose sums stay ordinary, overflow
 * fp16 (range: inf, and inf - inf is NaN) and stay among fp16's
 * subnormals. b is read with a row pitch of exactly nl from a block of
 * exactly its size (ASan: no lane past nl is read). */
static void check_sum16_f32(const cg_simd_ops *ops)
{
    enum { K = 41, R = CG_SIMD_SUM16_ROWS, LF = CG_SIMD_SUM16F_LANES, L = CG_SIMD_SUM16_LANES };
    const char *lv = cg_simd_name(ops->level);
    static const float scales[] = {1.0f, 300.0f, 0x1p-12f};
    uint64_t seed = 41;
    EXPECT(ops->sum16_f32 != NULL, "%s: no sum16_f32", lv);
    if (!ops->sum16_f32)
        return;
    for (int sc = 0; sc < 3; sc++)
        for (int range = 0; range < 2; range++)
            for (int nl = 1; nl <= LF; nl++) {
                float a[R][K], *b = malloc((size_t)K * (size_t)nl * sizeof *b);
                double ad[R][K], *bd = malloc((size_t)K * (size_t)nl * sizeof *bd);
                const float *ap[R];
                const double *adp[R];
                if (!b || !bd) {
                    EXPECT(false, "out of memory");
                    free(b);
                    free(bd);
                    return;
                }
                for (int p = 0; p < R; p++) {
                    for (int i = 0; i < K; i++)
                        ad[p][i] = a[p][i] = chain_operand(&seed, range, scales[sc]);
                    ap[p] = a[p];
                    adp[p] = ad[p];
                }
                for (int i = 0; i < K * nl; i++)
                    bd[i] = b[i] = chain_operand(&seed, range, scales[sc]);
                for (int np = 1; np <= R; np++) {
                    float got[R * LF];
                    for (int i = 0; i < R * LF; i++)
                        got[i] = i % 3 == 0 ? -0.0f : (float)(i % 5) * 0.125f;
                    ops->sum16_f32(got, np, ap, b, nl, K, nl, range != 0);
                    /* the float64 chain, a block of L lanes at a time, from
                     * the same starting sums */
                    for (int l0 = 0; l0 < nl; l0 += L) {
                        double want[R * L];
                        int n = nl - l0 < L ? nl - l0 : L;
                        for (int p = 0; p < np; p++)
                            for (int l = 0; l < L; l++) {
                                int at = p * LF + l0 + l;
                                want[p * L + l] = at % 3 == 0 ? -0.0 : (double)(at % 5) * 0.125;
                            }
                        cg_simd_sum16_f64_c(want, np, adp, bd + l0, nl, K, n, range != 0);
                        for (int p = 0; p < np; p++)
                            for (int l = 0; l < n; l++) {
                                float g = got[p * LF + l0 + l];
                                double w = want[p * L + l];
                                EXPECT((double)g == w ? !signbit(g) == !signbit(w)
                                                      : isnan(g) && isnan(w),
                                       "%s sum16_f32 scale %g, %s, %d rows, %d lanes: row %d "
                                       "lane %d %a, float64 chain %a", lv, (double)scales[sc],
                                       range ? "fp16" : "significand", np, nl, p, l0 + l,
                                       (double)g, w);
                            }
                    }
                }
                free(b);
                free(bd);
            }
}

/* The float32 chains' premise, on its own: for every pair of fp16 values
 * (range) the float32 sum and product rounded to fp16 are the exact ones
 * rounded once, and the same for fp16's significand alone; every float's
 * F16C-free rounding as in simd.c, and cg_fp16_chain_exact says yes to
 * exactly the fp16 values. Every 61st first operand against all 63488
 * finite second ones here; CG_TEST_EXHAUSTIVE=1 takes every pair (4e9,
 * about a minute). */
static void check_fp16_chain_premise(void)
{
    static float h[65536];
    int n = 0, step = getenv("CG_TEST_EXHAUSTIVE") ? 1 : 61;
    long bad = 0;
    for (int i = 0; i < 65536; i++) {
        float f = cg_fp16_to_f32((uint16_t)i);
        bool finite = isfinite(f);
        if (cg_fp16_chain_exact(f, true) != finite && bad++ < 3)
            EXPECT(false, "cg_fp16_chain_exact(%a) is %d for an fp16 value", (double)f,
                   !finite);
        if (finite)
            h[n++] = f;
    }
    for (int i = 0; i < n; i += step)
        for (int j = 0; j < n; j++) {
            float a = h[i], b = h[j];
            double s = (double)a + (double)b, p = (double)a * (double)b; /* both exact */
            float sf = a + b, pf = a * b;
            bool ok = (float)cg_fp16_round(sf) == (float)cg_fp16_round(s) &&
                      (float)cg_fp16_round(pf) == (float)cg_fp16_round(p) &&
                      (s == 0.0 || (float)cg_fp16_round_significand(sf) ==
                                       (float)cg_fp16_round_significand(s)) &&
                      (p == 0.0 || (float)cg_fp16_round_significand(pf) ==
                                       (float)cg_fp16_round_significand(p));
            if (!ok && bad++ < 3)
                EXPECT(false, "fp16 values %a and %a: a float32 sum or product rounds to "
                       "another fp16 value", (double)a, (double)b);
        }
    /* floats that are not fp16 values: a bit below every fp16 value's
     * precision, or past its range */
    static const float not16[] = {1.0f + 0x1p-11f, 0x1p-25f, 65505.0f, 65536.0f, 0x1.8p-24f,
                                  0x1p-14f + 0x1p-25f, 1e-30f, INFINITY, NAN};
    for (size_t i = 0; i < sizeof not16 / sizeof not16[0]; i++)
        EXPECT(!cg_fp16_chain_exact(not16[i], true), "cg_fp16_chain_exact(%a, fp16) says yes",
               (double)not16[i]);
    static const float not11[] = {1.0f + 0x1p-11f, 0x1p41f, 0x1p-41f, INFINITY, NAN};
    for (size_t i = 0; i < sizeof not11 / sizeof not11[0]; i++)
        EXPECT(!cg_fp16_chain_exact(not11[i], false),
               "cg_fp16_chain_exact(%a, significand) says yes", (double)not11[i]);
    EXPECT(cg_fp16_chain_exact(0x1.ffcp40f, false) && cg_fp16_chain_exact(-0x1p-40f, false) &&
               cg_fp16_chain_exact(0x1p-24f, true) && cg_fp16_chain_exact(-65504.0f, true),
           "cg_fp16_chain_exact refuses a value at its bounds");
}

/* fp16 storage in place (fp16_store_f32 / _f64) of a level: the portable
 * entry's bits, NaN payloads and signs included, on every length up to a
 * few vectors (tails), for ordinary values and for ties, fp16's
 * subnormals and their ties, 65504 and what rounds past it, float32 and
 * double subnormals, zeros, infinities and NaNs with payloads. */
static void check_fp16_store(const cg_simd_ops *ops)
{
    enum { N = 53 };
    const char *lv = cg_simd_name(ops->level);
    static const double specials[] = {1.0 + 0x1p-11, 1.0 + 3 * 0x1p-11, 65504.0, 65519.99,
                                      65520.0, -65520.0, 0x1p-24, 3 * 0x1p-25, 0x1p-25,
                                      0x1p-14, 0x1.ffcp-15, 1e-40, 1e-310, -0.0, 0.0,
                                      INFINITY, -INFINITY, 1e300, 2049.0, 2051.0, -7.0};
    enum { NS = sizeof specials / sizeof specials[0] };
    float f1[N], f2[N];
    double d1[N], d2[N];
    uint64_t seed = 29;
    for (int pass = 0; pass < 3; pass++)
        for (int n = 0; n <= N; n++) {
            for (int i = 0; i < N; i++) {
                double v = (double)((int64_t)(lcg(&seed) % 200001) - 100000) / 1237.0;
                if (pass == 1)
                    v = specials[(i + n) % NS];
                if (pass == 2)
                    v *= 0x1p-20; /* fp16's subnormals */
                d1[i] = v;
                f1[i] = (float)v;
            }
            if (pass == 1 && n > 3) { /* NaNs with payloads and both signs */
                uint32_t nb = 0xffa00001u;
                uint64_t db = 0x7ff4000000000123ull;
                memcpy(&f1[n / 2], &nb, sizeof nb);
                memcpy(&d1[n / 3], &db, sizeof db);
                f1[n - 1] = NAN;
            }
            memcpy(f2, f1, sizeof f1);
            memcpy(d2, d1, sizeof d1);
            ops->fp16_store_f32(f1, n);
            cg_simd_fp16_store_f32_c(f2, n);
            ops->fp16_store_f64(d1, n);
            cg_simd_fp16_store_f64_c(d2, n);
            EXPECT(memcmp(f1, f2, sizeof f1) == 0, "%s fp16_store_f32 pass %d n %d: differs from "
                   "the portable rounding", lv, pass, n);
            EXPECT(memcmp(d1, d2, sizeof d1) == 0, "%s fp16_store_f64 pass %d n %d: differs from "
                   "the portable rounding", lv, pass, n);
        }
}

int main(void)
{
    cg_simd best = cg_simd_detect();
    const cg_simd levels[] = {CG_SIMD_PORTABLE, CG_SIMD_AVX2, CG_SIMD_AVX512};
    for (size_t i = 0; i < sizeof levels / sizeof levels[0]; i++) {
        if (levels[i] > best) {
            test_skip("%s: not supported by this CPU", cg_simd_name(levels[i]));
            continue;
        }
        const cg_simd_ops *ops = cg_simd_ops_get(levels[i]);
        EXPECT(ops->level == levels[i], "asked for %s, got %s", cg_simd_name(levels[i]),
               cg_simd_name(ops->level));
        check_level(ops);
        check_gemms(ops);
        check_epilogues(ops);
        check_pool(ops);
        check_sum16(ops);
        check_sum16_f32(ops);
        check_fp16_store(ops);
        printf("%s: checked\n", cg_simd_name(levels[i]));
    }
    check_fp16_chain_premise();
    cg_simd forced;
    EXPECT(cg_simd_parse("portable", &forced) && forced == CG_SIMD_PORTABLE, "parse");
    EXPECT(!cg_simd_parse("sse9", &forced), "parse accepts junk");
    EXPECT(cg_simd_resolve(CG_SIMD_PORTABLE) == CG_SIMD_PORTABLE, "resolve portable");
    EXPECT(cg_simd_resolve(CG_SIMD_AVX512) <= best, "resolve above the CPU");
    return test_done("test_simd");
}
