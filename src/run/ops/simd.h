/*
 * Vectorized inner loops of the reference kernels, one table per
 * instruction set (cg_simd): portable C (simd.c) and AVX2 / AVX-512
 * (simd_x86.c, compiled with per-function target attributes and chosen at
 * run time, so one binary runs on any x86-64 CPU).
 *
 * The portable entries are the reference: they compute what the kernels
 * computed before there were vector paths (float32 sums in order, or
 * double where the kernel summed in double). The vector entries differ
 * from them only in float rounding:
 *   - dot products and row sums add in a different order (vector lanes,
 *     then the lanes), in the same precision as the portable entry;
 *   - fp16 conversions are exact in both (round to nearest even).
 * Except where ONNX Runtime's rounding is copied (simd_mlas.h): exp,
 * sigmoid, SiLU, tanh, erf and sumexp compute MLAS's approximations with
 * fused multiply-adds (fmaf in the portable code) in MLAS's order, and
 * sumexp adds in MLAS's 16 lanes, so every level gives the same bits as ORT 1.22
 * on an AVX-512F CPU (a quantizer downstream turns an ulp into a step).
 * Every entry accepts y == x (in place); other arrays must not overlap.
 * n is an element count >= 0.
 */
#ifndef CG_RUN_OPS_SIMD_H
#define CG_RUN_OPS_SIMD_H

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "convgate/runtime.h"

/* A packgemm.h micro-kernel: the mr x nr tile c (c[i*nr + j]: position i,
 * channel j) becomes (acc != 0: c plus) the sum over q < kc, in order, of
 * w[q*ldw + j] * x[off[q] + pos[i]]. ldw is nr for a packed panel, or the
 * row pitch of a row-major K x N matrix read in place (nr of its columns a
 * panel): the same sums either way. The vector kernels load w unaligned. */
typedef struct cg_simd_gemm {
    int mr, nr;
    void (*ukr)(int64_t kc, const float *w, int64_t ldw, const float *x, const int64_t *off,
                const int64_t *pos, float *c, int acc);
} cg_simd_gemm;

/* The same micro-kernel in float64 (the float64 mode's convolutions): each
 * c element one double sum over q in order, no float32 anywhere. */
typedef struct cg_simd_dgemm {
    int mr, nr;
    void (*ukr)(int64_t kc, const double *w, int64_t ldw, const double *x, const int64_t *off,
                const int64_t *pos, double *c, int acc);
} cg_simd_dgemm;

/* A pointwise convolution's epilogue, applied to the sums in registers in
 * the order of the GEMM store and the fused epilogue (conv.c): + bias (0.0f
 * without one), + the residual, then Relu or Clip. */
typedef enum cg_simd_pw_act { CG_SIMD_PW_NONE, CG_SIMD_PW_RELU, CG_SIMD_PW_CLIP } cg_simd_pw_act;
typedef struct cg_simd_pw_epi {
    const float *bias; /* per channel of the tile, or NULL */
    const float *add;  /* the residual, laid out like y, or NULL */
    cg_simd_pw_act act;
    float lo, hi;      /* Clip's bounds */
} cg_simd_pw_epi;

/* A pointwise (1x1, unit stride, unpadded) convolution tile, vectorized
 * over positions and written straight into the output planes: for channels
 * j < nc <= mr and positions i < np <= np_max,
 *     y[j*ldy + i] = epi(sum over q < k, in order, of w[q*ldw + j] * x[q*ldx + i])
 * where w points into weights packed for a packgemm micro-kernel (ldw its
 * nr, a multiple of mr) and the sum is one float32 chain from zero, the
 * micro-kernels' sum: both paths give the same bits. x is read for np
 * rounded up to a multiple of vw positions (the caller pads a short tile);
 * y and the residual for np. */
typedef struct cg_simd_pw {
    int mr, np_max, vw;
    void (*tile)(float *y, int64_t ldy, const float *w, int64_t ldw, const float *x,
                 int64_t ldx, int64_t k, int64_t nc, int64_t np, const cg_simd_pw_epi *e);
    /* The same tile with tap q's positions at x + off[q] (any offsets):
     * a convolution's output row over the taps of its input rows
     * (conv.c, conv_rows), the same sums and epilogue. */
    void (*tile_off)(float *y, int64_t ldy, const float *w, int64_t ldw, const float *x,
                     const int64_t *off, int64_t k, int64_t nc, int64_t np,
                     const cg_simd_pw_epi *e);
} cg_simd_pw;

typedef struct cg_simd_ops {
    cg_simd level;
    /* MLAS's exp (a few ulps; subnormal results kept), logistic, tanh and
     * erf (accurate to about 1e-7 absolute) */
    void (*exp_f32)(float *y, const float *x, int64_t n);
    void (*sigmoid_f32)(float *y, const float *x, int64_t n);
    void (*tanh_f32)(float *y, const float *x, int64_t n);
    void (*erf_f32)(float *y, const float *x, int64_t n);
    /* y = x * sigmoid(x) (SiLU / Swish) */
    void (*silu_f32)(float *y, const float *x, int64_t n);
    /* y = clamp(alpha * x + beta, 0, 1) (NaN passes), and x times that */
    void (*hardsigmoid_f32)(float *y, const float *x, int64_t n, float alpha, float beta);
    void (*hardswish_f32)(float *y, const float *x, int64_t n, float alpha, float beta);
    /* MLAS's softmax sum: y = exp(x + negmax) (y may be NULL), returns the
     * float sum of those, lane j of 16 adding elements j, j + 16, ... in
     * order, then a_i = l_i + l_(i+8) and ((a0 + a1) + (a2 + a3)) +
     * ((a4 + a5) + (a6 + a7)) */
    float (*sumexp_f32)(float *y, const float *x, float negmax, int64_t n);
    /* max over x (NaN if any element is NaN); -inf for n = 0 */
    float (*max_f32)(const float *x, int64_t n);
    void (*fp16_to_f32)(float *y, const uint16_t *x, int64_t n);
    void (*f32_to_fp16)(uint16_t *y, const float *x, int64_t n);
    /* y = saturate_u8(round_half_even(x / scale) + zp), for |x / scale|
     * <= 255 (DynamicQuantizeLinear's range; zp an integer in [0, 255]) */
    void (*quantize_u8)(uint8_t *y, const float *x, int64_t n, float scale, float zp);
    /* Depthwise 2-D convolution of one channel over a zero-padded plane xp
     * (row pitch `pitch`, readable 4 * CG_SIMD_DW_SLACK floats past its last
     * row): y[oh][ow] = bias + sum over kh, kw (in order) of
     * w[kh*kw_n + kw] * xp[(oh*sh + kh*dh) * pitch + ow*sw + kw*dw]. */
    void (*dw_plane)(float *y, const float *xp, int64_t pitch, const float *w, int64_t kh_n,
                     int64_t kw_n, int64_t oh_n, int64_t ow_n, int64_t sh, int64_t sw,
                     int64_t dh, int64_t dw, float bias);
    /* Stride-2 pooling of one row: out[t] for t < n over the taps
     * v[2t + kw * dw], kw < kw_n, in tap order: max as e > acc ? e : acc,
     * or the sum. Reads v up to CG_SIMD_POOL_SLACK floats past the last
     * output's last tap (into lanes that are not stored). NULL at the
     * portable level. */
    void (*pool_s2)(float *out, const float *v, int64_t n, int64_t kw_n, int64_t dw, bool max);
    /* Pooling's rows folded into one: v[i] for i < n is x[i], then for
     * each row r = 1 .. nrows - 1 in order, e = x[r * pitch + i] and
     * v[i] = v[i] < e ? e : v[i] (max) or v[i] + e. nrows >= 1. NULL at the
     * portable level. */
    void (*pool_rows)(float *v, const float *x, int64_t pitch, int64_t nrows, int64_t n,
                      bool max);
    /* The float64 depthwise convolution's interior, n outputs of one row:
     * y[t] = bias + w[kh * kw_n + kw] * rows[kh][off + t * sw + kw * dw]
     * summed over kh (rows[kh] NULL: skipped) then kw, in that order, each
     * product rounded before it is added (no fused multiply-add): the bits
     * of conv_impl.inc's scalar loops. sw 1 or 2 (else nothing is done;
     * at 2 it reads one element past the last output's last tap); whole
     * vectors only: returns how many outputs it wrote. NULL at the
     * portable level. */
    int64_t (*dw_row_f64)(double *y, const double *const *rows, const double *w, int64_t kh_n,
                          int64_t kw_n, int64_t off, int64_t dw, int64_t sw, int64_t n,
                          double bias);
    /* The convolution GEMM's store: tile c holds np positions of nc
     * channels (c[i*ld + j]); y[j*plane + i] = act((c[i*ld + j] + bias[j])
     * + add[j*plane + i]) for i < np, j < nc, with e's bias (0.0f when
     * NULL), residual (laid out like y; none when NULL) and Relu or Clip,
     * in the operand order of the pointwise tiles (a transpose, in 8 x 8
     * blocks on the vector levels). */
    void (*tile_store)(float *y, int64_t plane, const float *c, int64_t ld, int64_t np,
                       int64_t nc, const cg_simd_pw_epi *e);
    /* y[i] = act(y[i] + add[i]) for i < n (add NULL: y[i]), act Relu or
     * Clip [lo, hi] (CG_SIMD_PW_NONE: the sum only), the scalar selects'
     * results for NaNs and signed zeros: a fused epilogue's pass over
     * planes a kernel wrote. */
    void (*act_f32)(float *y, const float *add, int64_t n, cg_simd_pw_act act, float lo,
                    float hi);
    /* The fp16-sums emulation's chains (conv.c conv_sum16, gemm.c's fp16
     * accumulations): for rows p < np (1 to CG_SIMD_SUM16_ROWS) and lanes
     * l < nl (1 to CG_SIMD_SUM16_LANES), for i = 0 .. k - 1 in order,
     *   acc[p * CG_SIMD_SUM16_LANES + l] =
     *       r(acc[p * CG_SIMD_SUM16_LANES + l] + r(a[p][i] * b[i * ldb + l]))
     * with r cg_fp16_round (range true: fp16, overflowing to inf) or
     * cg_fp16_round_significand (range false): those functions' values
     * lane by lane, so each lane is the scalar chain's bits. Reads b's
     * lanes below nl only; lanes nl and up of acc are left unspecified. */
    void (*sum16_f64)(double *acc, int np, const double *const *a, const double *b, int64_t ldb,
                      int64_t k, int nl, bool range);
    /* sum16_f64's chains on float32 operands, CG_SIMD_SUM16F_LANES lanes
     * (acc's row pitch), for operands of which cg_fp16_chain_exact says
     * yes and k below 2^40: every product and sum then rounds in float32
     * first, which changes no value (a product of two such values is exact
     * in float32; a float32 sum rounded again to 11 bits is the sum rounded
     * once, 24 >= 2 * 11 + 1 bits: Figueroa's double-rounding bound,
     * checked for every pair of finite fp16 values by test_fp16_chain), so
     * each lane is sum16_f64's value, as a float. NULL where the level has
     * none (the callers take sum16_f64). */
    void (*sum16_f32)(float *acc, int np, const float *const *a, const float *b, int64_t ldb,
                      int64_t k, int nl, bool range);
    /* fp16 storage in place: d[i] = cg_fp16_to_f32(cg_f32_to_fp16(d[i]))
     * and d[i] = cg_fp16_round(d[i]), those functions' bits, a NaN's
     * included (the fp16 emulation rounds every value it stores). */
    void (*fp16_store_f32)(float *d, int64_t n);
    void (*fp16_store_f64)(double *d, int64_t n);
    /* packgemm.h micro-kernels, widest nr first */
    cg_simd_gemm gemm[3];
    int gemm_count;
    cg_simd_pw pw;
    /* a packgemm micro-kernel of one position (mr 1), for matrix-vector
     * products over weights packed for it; ukr NULL where there is none
     * (the portable level: OpenBLAS's sgemv) */
    cg_simd_gemm gemv;
    /* float64 packgemm micro-kernels, widest nr first; none at the portable
     * level (the float64 convolutions use BLAS dgemm there) */
    cg_simd_dgemm dgemm[3];
    int dgemm_count;
} cg_simd_ops;

/* sum16_f64's most rows and lanes per call. */
#define CG_SIMD_SUM16_ROWS 4
#define CG_SIMD_SUM16_LANES 8
/* sum16_f32's most lanes per call (its rows: CG_SIMD_SUM16_ROWS). */
#define CG_SIMD_SUM16F_LANES 32

/* The accumulators of one call of either chain: CG_SIMD_SUM16_ROWS rows of
 * CG_SIMD_SUM16_LANES doubles or of CG_SIMD_SUM16F_LANES floats. */
typedef union cg_simd_sum16_acc {
    double d[CG_SIMD_SUM16_ROWS * CG_SIMD_SUM16_LANES];
    float f[CG_SIMD_SUM16_ROWS * CG_SIMD_SUM16F_LANES];
} cg_simd_sum16_acc;

/* Whether the float32 chains (sum16_f32) take x exactly: range (fp16
 * sums): x is an fp16 value, zero or finite; else (fp16's significand,
 * exponent unbounded): zero or an 11-bit significand with |x| in
 * [2^-40, 2^41), so that no product or sum of a chain below 2^40 terms
 * leaves float32's normal range. */
static inline bool cg_fp16_chain_exact(float x, bool range)
{
    uint32_t u;
    memcpy(&u, &x, sizeof u);
    uint32_t e = (u >> 23) & 0xffu, mant = u & 0x7fffffu;
    if ((u & 0x7fffffffu) == 0)
        return true;
    if (!range)
        return e >= 127 - 40 && e <= 127 + 40 && (mant & 0x1fffu) == 0;
    /* fp16's normals keep 10 fraction bits; its subnormals (2^-24 to
     * 2^-15) are multiples of 2^-24: 126 - e fraction bits dropped */
    return e >= 127 - 24 && e <= 127 + 15 && (mant & ((1u << (e >= 113 ? 13 : 126 - e)) - 1u)) == 0;
}

/* v as the float32 *out, and whether the float32 chains take it exactly. */
static inline bool cg_fp16_chain_f32(double v, bool range, float *out)
{
    *out = (float)v;
    return (double)*out == v && cg_fp16_chain_exact(*out, range);
}

/* Floats pool_s2 reads past the last output's last tap (two vectors). */
#define CG_SIMD_POOL_SLACK 32

/* Floats a dw_plane input must stay readable past its last row, times 4. */
#define CG_SIMD_DW_SLACK 16

/* The table for a resolved level (never AUTO); portable for unknown ones. */
const cg_simd_ops *cg_simd_ops_get(cg_simd level);

/* simd_x86.c: the vector tables, NULL when not compiled in (not x86 or
 * not gcc/clang). */
const cg_simd_ops *cg_simd_ops_avx2(void);
const cg_simd_ops *cg_simd_ops_avx512(void);

/* The portable entries, for vector tables to fall back on. */
void cg_simd_exp_f32_c(float *y, const float *x, int64_t n);
void cg_simd_sigmoid_f32_c(float *y, const float *x, int64_t n);
void cg_simd_tanh_f32_c(float *y, const float *x, int64_t n);
void cg_simd_erf_f32_c(float *y, const float *x, int64_t n);
void cg_simd_silu_f32_c(float *y, const float *x, int64_t n);
void cg_simd_hardsigmoid_f32_c(float *y, const float *x, int64_t n, float alpha, float beta);
void cg_simd_hardswish_f32_c(float *y, const float *x, int64_t n, float alpha, float beta);
float cg_simd_sumexp_f32_c(float *y, const float *x, float negmax, int64_t n);
/* The lane sum that ends sumexp (l: MLAS_SUMEXP_LANES partial sums). */
float cg_simd_sumexp_lanes(const float *l);
float cg_simd_max_f32_c(const float *x, int64_t n);
void cg_simd_fp16_to_f32_c(float *y, const uint16_t *x, int64_t n);
void cg_simd_f32_to_fp16_c(uint16_t *y, const float *x, int64_t n);
void cg_simd_quantize_u8_c(uint8_t *y, const float *x, int64_t n, float scale, float zp);
void cg_simd_dw_plane_c(float *y, const float *xp, int64_t pitch, const float *w,
                        int64_t kh_n, int64_t kw_n, int64_t oh_n, int64_t ow_n, int64_t sh,
                        int64_t sw, int64_t dh, int64_t dw, float bias);
void cg_simd_tile_store_c(float *y, int64_t plane, const float *c, int64_t ld, int64_t np,
                          int64_t nc, const cg_simd_pw_epi *e);
void cg_simd_act_f32_c(float *y, const float *add, int64_t n, cg_simd_pw_act act, float lo,
                       float hi);
void cg_simd_sum16_f64_c(double *acc, int np, const double *const *a, const double *b,
                         int64_t ldb, int64_t k, int nl, bool range);
void cg_simd_sum16_f32_c(float *acc, int np, const float *const *a, const float *b,
                         int64_t ldb, int64_t k, int nl, bool range);
void cg_simd_fp16_store_f32_c(float *d, int64_t n);
void cg_simd_fp16_store_f64_c(double *d, int64_t n);
void cg_simd_pw_tile_c(float *y, int64_t ldy, const float *w, int64_t ldw, const float *x,
                       int64_t ldx, int64_t k, int64_t nc, int64_t np, const cg_simd_pw_epi *e);
void cg_simd_pw_tile_off_c(float *y, int64_t ldy, const float *w, int64_t ldw, const float *x,
                           const int64_t *off, int64_t k, int64_t nc, int64_t np,
                           const cg_simd_pw_epi *e);
void cg_pg_ukr_c(int64_t kc, const float *w, int64_t ldw, const float *x, const int64_t *off,
                 const int64_t *pos, float *c, int acc);

#endif
