/*
 * The portable entries of the vector tables (see simd.h) and the choice of
 * table. These are the reference the vector paths are tested against: they
 * compute exactly what the kernels did before, with libm, except the
 * entries that copy ONNX Runtime's MLAS (simd_mlas.h), which use fmaf.
 */
#include <float.h>
#include <math.h>
#include <stdbool.h>
#include <string.h>

#include "run/ops/simd.h"
#include "run/ops/simd_mlas.h"

/* SSE's maxps / minps of one lane: b when either is NaN (MLAS clamps x
 * with max(lo, x), so a NaN x passes). */
static inline float sse_max(float a, float b) { return a > b ? a : b; }
static inline float sse_min(float a, float b) { return a < b ? a : b; }


/* MLAS's logistic, as LogisticKernelFma3.S computes one lane. */
static inline float sigmoid1(float x)
{
    float v = sse_min(MLAS_LOGISTIC_HI, sse_max(MLAS_LOGISTIC_LO, x));
    float x2 = v * v;
    float p = fmaf(x2, MLAS_LOGISTIC_A9, MLAS_LOGISTIC_A7);
    p = fmaf(p, x2, MLAS_LOGISTIC_A5);
    p = fmaf(p, x2, MLAS_LOGISTIC_A3);
    p = fmaf(p, x2, MLAS_LOGISTIC_A1);
    float q = fmaf(x2, MLAS_LOGISTIC_B10, MLAS_LOGISTIC_B8);
    q = fmaf(q, x2, MLAS_LOGISTIC_B6);
    q = fmaf(q, x2, MLAS_LOGISTIC_B4);
    q = fmaf(q, x2, MLAS_LOGISTIC_B2);
    q = fmaf(q, x2, MLAS_LOGISTIC_B0);
    p = v * p;
    float r = p / q;
    r = r + 0.5f;
    return sse_max(0.0f, r);
}

void cg_simd_sigmoid_f32_c(float *y, const float *x, int64_t n)
{
    for (int64_t i = 0; i < n; i++)
        y[i] = sigmoid1(x[i]);
}

void cg_simd_silu_f32_c(float *y, const float *x, int64_t n)
{
    for (int64_t i = 0; i < n; i++)
        y[i] = x[i] * sigmoid1(x[i]);
}

/* The elementwise kernels' Clip order: the lower bound first; NaN passes. */
static inline float hardsigmoid1(float x, float alpha, float beta)
{
    float v = alpha * x + beta;
    return v < 0 ? 0.0f : (v > 1 ? 1.0f : v);
}

void cg_simd_hardsigmoid_f32_c(float *y, const float *x, int64_t n, float alpha, float beta)
{
    for (int64_t i = 0; i < n; i++)
        y[i] = hardsigmoid1(x[i], alpha, beta);
}

void cg_simd_hardswish_f32_c(float *y, const float *x, int64_t n, float alpha, float beta)
{
    for (int64_t i = 0; i < n; i++)
        y[i] = x[i] * hardsigmoid1(x[i], alpha, beta);
}

/* MLAS's tanh, as TanhKernelFma3.S computes one lane. */
static inline float tanh1(float x)
{
    float v = sse_min(MLAS_TANH_HI, sse_max(MLAS_TANH_LO, x));
    float x2 = v * v;
    float p = fmaf(x2, MLAS_TANH_A13, MLAS_TANH_A11);
    p = fmaf(p, x2, MLAS_TANH_A9);
    p = fmaf(p, x2, MLAS_TANH_A7);
    p = fmaf(p, x2, MLAS_TANH_A5);
    p = fmaf(p, x2, MLAS_TANH_A3);
    p = fmaf(p, x2, MLAS_TANH_A1);
    float q = fmaf(x2, MLAS_TANH_B6, MLAS_TANH_B4);
    q = fmaf(q, x2, MLAS_TANH_B2);
    q = fmaf(q, x2, MLAS_TANH_B0);
    p = v * p;
    return p / q;
}

void cg_simd_tanh_f32_c(float *y, const float *x, int64_t n)
{
    for (int64_t i = 0; i < n; i++)
        y[i] = tanh1(x[i]);
}

static inline uint32_t f32_bits(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
}

static inline float bits_f32(uint32_t u)
{
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

/* MLAS's erf, as ErfKernelFma3.S computes one lane: both branches, the
 * small one zeroed above the split, the big one (of 0 below it: exactly
 * 1 - 1 * 2^0 = 0) ORed in, then the sign. A NaN stays NaN (MLAS's clamp
 * makes it +-1). */
static inline float erf1(float x)
{
    uint32_t sign = f32_bits(x) & 0x80000000u;
    float a = sse_min(bits_f32(f32_bits(x) & 0x7fffffffu), MLAS_ERF_UPPER);
    float sq = a * a;
    float r = fmaf(MLAS_ERF_S0, sq, MLAS_ERF_S1);
    r = fmaf(r, sq, MLAS_ERF_S2);
    r = fmaf(r, sq, MLAS_ERF_S3);
    r = fmaf(r, sq, MLAS_ERF_S4);
    r = fmaf(r, sq, MLAS_ERF_S5M1);
    r = fmaf(r, a, a);
    bool big = a > MLAS_ERF_SPLIT;
    float small = big ? 0.0f : r;
    float ab = big ? a : 0.0f;
    float rb = fmaf(MLAS_ERF_B0, ab, MLAS_ERF_B1);
    rb = fmaf(rb, ab, MLAS_ERF_B2);
    rb = fmaf(rb, ab, MLAS_ERF_B3);
    rb = fmaf(rb, ab, MLAS_ERF_B4);
    rb = fmaf(rb, ab, MLAS_ERF_B5);
    rb = fmaf(rb, ab, MLAS_ERF_B6M1);
    rb = fmaf(rb, ab, ab);
    rb = sse_max(-rb, MLAS_ERF_EXP_LO);
    float m = fmaf(MLAS_ERF_EXP_LOG2E, rb, MLAS_ERF_EXP_C);
    m = m - MLAS_ERF_EXP_C;
    float fx = fmaf(m, MLAS_ERF_EXP_LN2_HI, rb);
    fx = fmaf(m, MLAS_ERF_EXP_LN2_LO, fx);
    float e = fmaf(MLAS_ERF_EXP_P0, fx, MLAS_ERF_EXP_P1);
    e = fmaf(e, fx, MLAS_ERF_EXP_P2);
    e = fmaf(e, fx, MLAS_ERF_EXP_P3);
    e = fmaf(e, fx, MLAS_ERF_EXP_P4);
    e = fmaf(e, fx, MLAS_ERF_EXP_P5);
    e = fmaf(e, fx, MLAS_ERF_EXP_P6);
    /* m is a whole number in [-128, 0]: (m + 127) << 23, as vpslld makes it */
    e = e * bits_f32((uint32_t)((int32_t)m + 127) << 23);
    float y = 1.0f - e;
    return isnan(x) ? x : bits_f32(f32_bits(y) | f32_bits(small) | sign);
}

void cg_simd_erf_f32_c(float *y, const float *x, int64_t n)
{
    for (int64_t i = 0; i < n; i++)
        y[i] = erf1(x[i]);
}

/* MLAS's exp of one lane of the softmax sum (v = x + negmax): vscalefps'
 * p * 2^m is one rounding; two exact power-of-two factors give the same
 * (p * 2^h is normal for m >= -150, the clamp's floor). */
static inline float sumexp1(float v)
{
    v = sse_max(MLAS_EXP_LO, v);
    float m = fmaf(v, MLAS_EXP_LOG2E, MLAS_EXP_BIAS);
    m = m - MLAS_EXP_BIAS;
    v = fmaf(m, MLAS_EXP_LN2_HI, v);
    v = fmaf(m, MLAS_EXP_LN2_LO, v);
    float p = fmaf(MLAS_EXP_P0, v, MLAS_EXP_P1);
    p = fmaf(p, v, MLAS_EXP_P2);
    p = fmaf(p, v, MLAS_EXP_P3);
    p = fmaf(p, v, MLAS_EXP_P4);
    p = fmaf(p, v, MLAS_EXP_P56);
    p = fmaf(p, v, MLAS_EXP_P56);
    if (isnan(m))
        return p;
    int e = m > 254.0f ? 254 : (int)m, h = e >= 0 ? e / 2 : -((1 - e) / 2);
    return p * ldexpf(1.0f, h) * ldexpf(1.0f, e - h);
}

/* MLAS's Exp is the same exp of x itself; +inf stays +inf (MLAS: NaN). */
void cg_simd_exp_f32_c(float *y, const float *x, int64_t n)
{
    for (int64_t i = 0; i < n; i++)
        y[i] = x[i] > FLT_MAX ? x[i] : sumexp1(x[i]);
}

float cg_simd_sumexp_lanes(const float *l)
{
    float a[8];
    for (int i = 0; i < 8; i++)
        a[i] = l[i] + l[i + 8];
    float lo = (a[0] + a[1]) + (a[2] + a[3]);
    float hi = (a[4] + a[5]) + (a[6] + a[7]);
    return lo + hi;
}

float cg_simd_sumexp_f32_c(float *y, const float *x, float negmax, int64_t n)
{
    float lanes[MLAS_SUMEXP_LANES] = {0};
    for (int64_t i = 0; i < n; i++) {
        float e = sumexp1(x[i] + negmax);
        if (y)
            y[i] = e;
        lanes[i % MLAS_SUMEXP_LANES] += e;
    }
    return cg_simd_sumexp_lanes(lanes);
}

float cg_simd_max_f32_c(const float *x, int64_t n)
{
    float m = -INFINITY;
    for (int64_t i = 0; i < n; i++)
        if (x[i] > m || isnan(x[i]))
            m = x[i];
    return m;
}

void cg_simd_fp16_to_f32_c(float *y, const uint16_t *x, int64_t n)
{
    for (int64_t i = 0; i < n; i++)
        y[i] = cg_fp16_to_f32(x[i]);
}

void cg_simd_f32_to_fp16_c(uint16_t *y, const float *x, int64_t n)
{
    for (int64_t i = 0; i < n; i++)
        y[i] = cg_f32_to_fp16(x[i]);
}

void cg_simd_quantize_u8_c(uint8_t *y, const float *x, int64_t n, float scale, float zp)
{
    for (int64_t i = 0; i < n; i++) {
        float q = nearbyintf(x[i] / scale) + zp;
        y[i] = (uint8_t)(q < 0.0f ? 0.0f : (q > 255.0f ? 255.0f : q));
    }
}

void cg_simd_dw_plane_c(float *y, const float *xp, int64_t pitch, const float *w,
                        int64_t kh_n, int64_t kw_n, int64_t oh_n, int64_t ow_n, int64_t sh,
                        int64_t sw, int64_t dh, int64_t dw, float bias)
{
    for (int64_t oh = 0; oh < oh_n; oh++)
        for (int64_t ow = 0; ow < ow_n; ow++) {
            float acc = bias;
            for (int64_t kh = 0; kh < kh_n; kh++) {
                const float *row = xp + (oh * sh + kh * dh) * pitch + ow * sw;
                for (int64_t kw = 0; kw < kw_n; kw++)
                    acc += w[kh * kw_n + kw] * row[kw * dw];
            }
            y[oh * ow_n + ow] = acc;
        }
}

/* The epilogue of one sum: + residual, then Relu or Clip, as the scalar
 * kernels select (a NaN passes, -0 stays -0). */
static inline float pw_act(float v, const float *add, cg_simd_pw_act act, float lo, float hi)
{
    if (add)
        v = v + *add;
    if (act == CG_SIMD_PW_RELU) {
        v = v < 0 ? 0.0f : v;
    } else if (act == CG_SIMD_PW_CLIP) {
        v = v < lo ? lo : v;
        v = v > hi ? hi : v;
    }
    return v;
}

void cg_simd_tile_store_c(float *y, int64_t plane, const float *c, int64_t ld, int64_t np,
                          int64_t nc, const cg_simd_pw_epi *e)
{
    for (int64_t j = 0; j < nc; j++) {
        float bv = e->bias ? e->bias[j] : 0.0f;
        float *yr = y + j * plane;
        const float *ar = e->add ? e->add + j * plane : NULL;
        for (int64_t i = 0; i < np; i++)
            yr[i] = pw_act(c[i * ld + j] + bv, ar ? ar + i : NULL, e->act, e->lo, e->hi);
    }
}

void cg_simd_act_f32_c(float *y, const float *add, int64_t n, cg_simd_pw_act act, float lo,
                       float hi)
{
    for (int64_t i = 0; i < n; i++)
        y[i] = pw_act(y[i], add ? add + i : NULL, act, lo, hi);
}

/* The pointwise tile of the portable level: 4 channels x 8 positions. */
#define PW_C_MR 4
#define PW_C_NP 8

/* The tile's sums into t (x + off[q] when off, else x + q * ldx), then the
 * epilogue into y. */
static void pw_tile_sums(float *y, int64_t ldy, const float *w, int64_t ldw, const float *x,
                         int64_t ldx, const int64_t *off, int64_t k, int64_t nc, int64_t np,
                         const cg_simd_pw_epi *e)
{
    float t[PW_C_MR][PW_C_NP];
    for (int j = 0; j < PW_C_MR; j++)
        for (int i = 0; i < PW_C_NP; i++)
            t[j][i] = 0.0f;
    for (int64_t q = 0; q < k; q++) {
        const float *xq = off ? x + off[q] : x + q * ldx, *wq = w + q * ldw;
        for (int j = 0; j < PW_C_MR; j++)
            for (int64_t i = 0; i < np; i++)
                t[j][i] += xq[i] * wq[j];
    }
    for (int64_t j = 0; j < nc; j++) {
        float bv = e->bias ? e->bias[j] : 0.0f;
        float *yr = y + j * ldy;
        const float *ar = e->add ? e->add + j * ldy : NULL;
        for (int64_t i = 0; i < np; i++)
            yr[i] = pw_act(t[j][i] + bv, ar ? ar + i : NULL, e->act, e->lo, e->hi);
    }
}

void cg_simd_pw_tile_c(float *y, int64_t ldy, const float *w, int64_t ldw, const float *x,
                       int64_t ldx, int64_t k, int64_t nc, int64_t np, const cg_simd_pw_epi *e)
{
    pw_tile_sums(y, ldy, w, ldw, x, ldx, NULL, k, nc, np, e);
}

void cg_simd_pw_tile_off_c(float *y, int64_t ldy, const float *w, int64_t ldw, const float *x,
                           const int64_t *off, int64_t k, int64_t nc, int64_t np,
                           const cg_simd_pw_epi *e)
{
    pw_tile_sums(y, ldy, w, ldw, x, 0, off, k, nc, np, e);
}

void cg_simd_sum16_f64_c(double *acc, int np, const double *const *a, const double *b,
                         int64_t ldb, int64_t k, int nl, bool range)
{
    double (*r)(double) = range ? cg_fp16_round : cg_fp16_round_significand;
    for (int p = 0; p < np; p++) {
        double *s = acc + p * CG_SIMD_SUM16_LANES;
        for (int64_t i = 0; i < k; i++) {
            double av = a[p][i];
            const double *bi = b + i * ldb;
            for (int l = 0; l < nl; l++)
                s[l] = r(s[l] + r(av * bi[l]));
        }
    }
}

/* The float32 chains' roundings: cg_fp16_round's value, and the 11-bit
 * significand of a normal float (what the chains' operands keep them to:
 * cg_fp16_chain_exact). */
static float sum16_r16f(float x)
{
    return (float)cg_fp16_round(x);
}

static float sum16_r11f(float x)
{
    uint32_t u;
    memcpy(&u, &x, sizeof u);
    if ((u & 0x7f800000u) == 0 || (u & 0x7f800000u) == 0x7f800000u)
        return (float)cg_fp16_round_significand(x); /* zero, inf, NaN */
    u += 0xfffu + ((u >> 13) & 1u);
    u &= ~0x1fffu;
    memcpy(&x, &u, sizeof x);
    return x;
}

void cg_simd_sum16_f32_c(float *acc, int np, const float *const *a, const float *b,
                         int64_t ldb, int64_t k, int nl, bool range)
{
    float (*r)(float) = range ? sum16_r16f : sum16_r11f;
    for (int p = 0; p < np; p++) {
        float *s = acc + p * CG_SIMD_SUM16F_LANES;
        for (int64_t i = 0; i < k; i++) {
            float av = a[p][i];
            const float *bi = b + i * ldb;
            for (int l = 0; l < nl; l++)
                s[l] = r(s[l] + r(av * bi[l]));
        }
    }
}

void cg_simd_fp16_store_f32_c(float *d, int64_t n)
{
    for (int64_t i = 0; i < n; i++)
        d[i] = cg_fp16_to_f32(cg_f32_to_fp16(d[i]));
}

void cg_simd_fp16_store_f64_c(double *d, int64_t n)
{
    for (int64_t i = 0; i < n; i++)
        d[i] = cg_fp16_round(d[i]);
}

static const cg_simd_ops portable = {
    CG_SIMD_PORTABLE,
    cg_simd_exp_f32_c,
    cg_simd_sigmoid_f32_c,
    cg_simd_tanh_f32_c,
    cg_simd_erf_f32_c,
    cg_simd_silu_f32_c,
    cg_simd_hardsigmoid_f32_c,
    cg_simd_hardswish_f32_c,
    cg_simd_sumexp_f32_c,
    cg_simd_max_f32_c,
    cg_simd_fp16_to_f32_c,
    cg_simd_f32_to_fp16_c,
    cg_simd_quantize_u8_c,
    cg_simd_dw_plane_c,
    NULL,
    NULL,
    NULL,
    cg_simd_tile_store_c,
    cg_simd_act_f32_c,
    cg_simd_sum16_f64_c,
    cg_simd_sum16_f32_c,
    cg_simd_fp16_store_f32_c,
    cg_simd_fp16_store_f64_c,
    {{4, 8, cg_pg_ukr_c}},
    1,
    {PW_C_MR, PW_C_NP, 1, cg_simd_pw_tile_c, cg_simd_pw_tile_off_c},
    {0, 0, NULL},
    {{0, 0, NULL}},
    0,
};

const cg_simd_ops *cg_simd_ops_get(cg_simd level)
{
    const cg_simd_ops *t = NULL;
    if (level == CG_SIMD_AVX512)
        t = cg_simd_ops_avx512();
    if (!t && level >= CG_SIMD_AVX2)
        t = cg_simd_ops_avx2();
    return t ? t : &portable;
}
