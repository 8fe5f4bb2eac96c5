/*
 * The portable entries of the vector tables (see simd.h) and the choice of
 * table. These are the reference the vector paths are tested against: they
 * compute exactly what the kernels did before, with libm.
 */
#include <math.h>

#include "run/ops/simd.h"

void cg_simd_exp_f32_c(float *y, const float *x, int64_t n)
{
    for (int64_t i = 0; i < n; i++)
        y[i] = expf(x[i]);
}

/* The stable form: exp of a non-positive number only. */
static inline float sigmoid1(float x)
{
    float e = expf(-fabsf(x));
    float r = 1.0f / (1.0f + e);
    return x >= 0 ? r : e * r;
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

void cg_simd_tanh_f32_c(float *y, const float *x, int64_t n)
{
    for (int64_t i = 0; i < n; i++)
        y[i] = tanhf(x[i]);
}

void cg_simd_erf_f32_c(float *y, const float *x, int64_t n)
{
    for (int64_t i = 0; i < n; i++)
        y[i] = erff(x[i]);
}

double cg_simd_exp_shift_sum_f32_c(float *y, const float *x, float m, int64_t n)
{
    double s = 0.0;
    for (int64_t i = 0; i < n; i++) {
        y[i] = expf(x[i] - m);
        s += y[i];
    }
    return s;
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

void cg_simd_tile_store_c(float *y, int64_t plane, const float *c, int64_t ld, int64_t np,
                          int64_t nc, const float *bias)
{
    for (int64_t j = 0; j < nc; j++) {
        float bv = bias ? bias[j] : 0.0f;
        float *yr = y + j * plane;
        for (int64_t i = 0; i < np; i++)
            yr[i] = c[i * ld + j] + bv;
    }
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
    cg_simd_exp_shift_sum_f32_c,
    cg_simd_max_f32_c,
    cg_simd_fp16_to_f32_c,
    cg_simd_f32_to_fp16_c,
    cg_simd_quantize_u8_c,
    cg_simd_dw_plane_c,
    cg_simd_tile_store_c,
    {{4, 8, cg_pg_ukr_c}},
    1,
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
