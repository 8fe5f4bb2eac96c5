/*
 * The reference runtime's own float32 convolution GEMM, vectorized over
 * output channels: for M output channels, K taps and P output positions,
 *
 *     C[m, p] = sum_k W[m, k] * X[off[k] + pos[p]]
 *
 * W (the weights, m x k row-major) is packed once into panels of NR
 * channels (k-major, zero channels past m), and X is never copied into an
 * im2col matrix: tap k of position p is read in place at off[k] + pos[p].
 * For a convolution over a zero-padded copy of its input, off[k] = c*Hp*Wp
 * + kh*dh*Wp + kw*dw and pos[p] = oh*sh*Wp + ow*sw, whatever the strides
 * and dilations; a pointwise convolution reads its input directly.
 *
 * The tile of MR positions x NR channels is the micro-kernel of the
 * instruction-set level (simd.h: portable C, AVX2, AVX-512), which can
 * offer several NR (the largest that divides m is used, so 144 channels run
 * as three panels of 48 lanes rather than three of 64). Each C element is
 * one float32 sum over k in increasing order within a K block of
 * CG_PG_KBLOCK taps, and the blocks are added in increasing order: the
 * result does not depend on how positions and channels are split over
 * threads.
 *
 * Finished tiles go to a store callback (positions p0..p0+np, channels
 * m0..m1, the tile row-major [position][channel] with pitch ld) that writes
 * the output planes and applies the fused epilogue while they are in cache.
 */
#ifndef CG_RUN_OPS_PACKGEMM_H
#define CG_RUN_OPS_PACKGEMM_H

#include <stddef.h>
#include <stdint.h>

#include "run/kernel.h"
#include "run/ops/simd.h"

#define CG_PG_KBLOCK 256

/* The micro-kernel a level uses for m channels. */
const cg_simd_gemm *cg_pg_choose(const cg_simd_ops *ops, int64_t m);
/* Floats a packing of m x k weights takes with kernel g. */
size_t cg_pg_packed_floats(const cg_simd_gemm *g, int64_t m, int64_t k);
/* Packs w (m x k, row pitch ldw) into dst for kernel g. */
void cg_pg_pack(const cg_simd_gemm *g, const float *w, int64_t ldw, int64_t m, int64_t k,
                float *dst);

typedef void (*cg_pg_store_fn)(void *ctx, const float *c, int64_t ld, int64_t p0, int64_t np,
                               int64_t m0, int64_t m1);
/* The exact-integer form (see cg_pg_problem.store_i32): the tile as int32. */
typedef void (*cg_pg_store_i32_fn)(void *ctx, const int32_t *c, int64_t ld, int64_t p0,
                                   int64_t np, int64_t m0, int64_t m1);

typedef struct cg_pg_problem {
    const cg_simd_gemm *g;
    const float *w;        /* packed for g, or in place (ldw) */
    int64_t m, k, p;
    const float *x;        /* tap k of position p at x[off[k] + pos[p]] */
    const int64_t *off;
    const int64_t *pos;
    cg_pg_store_fn store;
    void *store_ctx;
    /* Exact integer products (ConvInteger): W and X hold integers of
     * magnitude at most 255, so a block of CG_PG_KBLOCK taps sums exactly in
     * float32 (256 * 255^2 < 2^24); the blocks are then added in int32,
     * wrapping like the int32 accumulator of the spec. When set, it
     * replaces store. */
    cg_pg_store_i32_fn store_i32;
    /* 0: w is packed for g. Else w is W transposed, k x m row-major with
     * row pitch ldw >= m, m a multiple of g->nr, read in place: channel
     * panel pn is nr contiguous floats at w + q*ldw + pn*nr for tap q, what
     * its packing would hold (the same bits, no copy). */
    int64_t ldw;
} cg_pg_problem;

/* Runs the product on the kernel's threads, taking its scratch (the tiles)
 * from k; false when that cannot be allocated (the caller reports it). */
bool cg_pg_run(cg_kernel_ctx *k, const cg_pg_problem *p);

/* A pointwise convolution (simd.h, cg_simd_pw) over m channels, k input
 * channels and p positions: x is k planes of p floats, y and the residual
 * e.add m planes of p, w packed by cg_pg_pack for g (whose nr is a
 * multiple of pw->mr), e.bias m floats or NULL. finish (or NULL) then runs
 * on each finished block, in cache (the activations the tile does not
 * apply): channels m0..m1 and positions p0..p0+np, y pointing at (m0, p0). */
typedef void (*cg_pg_pw_finish_fn)(void *ctx, float *y, int64_t ldy, int64_t m0, int64_t m1,
                                   int64_t p0, int64_t np);
typedef struct cg_pg_pw_problem {
    const cg_simd_pw *pw;
    const cg_simd_gemm *g;
    const float *w;
    int64_t m, k, p;
    const float *x;
    float *y;
    cg_simd_pw_epi e;
    cg_pg_pw_finish_fn finish;
    void *finish_ctx;
} cg_pg_pw_problem;

/* Runs it on the kernel's threads (tiles of positions x channel panels),
 * taking its scratch from k; false when that cannot be allocated. */
bool cg_pg_pw_run(cg_kernel_ctx *k, const cg_pg_pw_problem *p);

/* The float64 form (the float64 mode's convolutions), on a level's
 * cg_simd_dgemm kernels: the same problem in double, every C element one
 * double sum over k in increasing order (a K block continues the sum of the
 * one before), whatever the split over threads. */
const cg_simd_dgemm *cg_pg_choose_f64(const cg_simd_ops *ops, int64_t m);
size_t cg_pg_packed_doubles(const cg_simd_dgemm *g, int64_t m, int64_t k);
void cg_pg_pack_f64(const cg_simd_dgemm *g, const double *w, int64_t ldw, int64_t m, int64_t k,
                    double *dst);
/* The same panels from float32 weights (little-endian, at any alignment:
 * an initializer's bytes in the model), each widened exactly to double:
 * the float64 mode packs a convolution's weights without promoting them
 * into a double copy first. */
void cg_pg_pack_f64_from_f32(const cg_simd_dgemm *g, const void *w, int64_t ldw, int64_t m,
                             int64_t k, double *dst);

typedef void (*cg_pg_store_f64_fn)(void *ctx, const double *c, int64_t ld, int64_t p0,
                                   int64_t np, int64_t m0, int64_t m1);
typedef struct cg_pg_problem_f64 {
    const cg_simd_dgemm *g;
    const double *w; /* packed for g */
    int64_t m, k, p;
    const double *x; /* tap k of position p at x[off[k] + pos[p]] */
    const int64_t *off;
    const int64_t *pos;
    cg_pg_store_f64_fn store;
    void *store_ctx;
} cg_pg_problem_f64;

bool cg_pg_run_f64(cg_kernel_ctx *k, const cg_pg_problem_f64 *p);

#endif
