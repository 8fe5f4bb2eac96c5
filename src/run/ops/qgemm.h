/*
 * The reference runtime's exact 8-bit convolution GEMM (ConvInteger and
 * QLinearConv on CPUs with AVX-512 VNNI). For M output channels, K taps and
 * P output positions it computes, modulo 2^32 (the spec's int32
 * accumulator, wrapping),
 *
 *     C[m, p] = sum_k (X[off[k] + pos[p]] - zx) * (W[m, k] - zw[m])
 *
 * with the taps read in place as in packgemm.h. X is unsigned (uint8 as
 * is; int8 callers add 128 to X and zx), W is signed (int8 as is; uint8
 * minus 128, and zw with it), so that
 *
 *     C = sum_k x*w  -  zw[m] * sum_k x  -  zx * sum_k w[m]  +  K * zx * zw[m]
 *
 * where the first sum is vpdpbusd's (u8 x s8 products in groups of four,
 * added to int32 without saturation) and the others are exact integers.
 * Every step is exact or wraps modulo 2^32, so C equals the exact sum
 * modulo 2^32: the result of the float path (packgemm.h, store_i32) bit for
 * bit, on any split over threads.
 *
 * W is packed once into panels of CG_QG_MR channels ([k/4][channel][4
 * bytes], zero past m and k); X per tile of 16*nv positions ([k/4][position]
 * [4 bytes]) with the tile's column sums. The micro-kernel computes one
 * CG_QG_MR x 16nv tile and stores it into the output planes with the
 * corrections above and an int32 bias.
 */
#ifndef CG_RUN_OPS_QGEMM_H
#define CG_RUN_OPS_QGEMM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "run/kernel.h"

#define CG_QG_MR 8

/* One tile: y[r*plane + i] = sum_q dot4(w[q][r], x[q][i]) + cterm[r] -
 * zw[r] * xsum[i] (wrapping) for r < nc, i < np; w holds kq groups of
 * CG_QG_MR x 4 bytes, x kq groups of 16*nv x 4 bytes. */
typedef void (*cg_qg_ukr_fn)(int64_t kq, const int8_t *w, const uint8_t *x, const int32_t *xsum,
                             const int32_t *zw, const int32_t *cterm, int32_t *y, int64_t plane,
                             int64_t np, int64_t nc);

/* Packs positions pos[0..np) of a tile of tp (a multiple of 16) into dst
 * (kq x tp x 4 bytes: tap q of position i at dst[((q/4)*tp + i)*4 + q%4],
 * zero past np and k) and sum[i] = the sum of position i's bytes. */
typedef void (*cg_qg_pack_fn)(const uint8_t *x, const int64_t *off, const int64_t *pos,
                              int64_t k, int64_t np, int64_t tp, uint8_t *dst, int32_t *sum);

/* A vector level's 8-bit GEMM: micro-kernels for nv = 1, 2, 3 (index
 * nv - 1) and the tile packer. */
typedef struct cg_qg_level {
    cg_qg_ukr_fn ukr[3];
    cg_qg_pack_fn pack;
} cg_qg_level;

/* The level's 8-bit GEMM, or NULL: only the AVX-512 level of a CPU with
 * VNNI has one (qgemm_x86.c); elsewhere the float GEMM computes the same. */
const cg_qg_level *cg_qg_get(cg_simd level);
const cg_qg_level *cg_qg_vnni(void);

/* Bytes a packing of m x k weights takes. */
size_t cg_qg_packed_bytes(int64_t m, int64_t k);
/* Packs W (m x k, row pitch ldw; int8 when w_signed, else uint8 shifted by
 * -128) into dst, and wsum[j] = the sum over k of row j as packed. */
void cg_qg_pack(const void *w, bool w_signed, int64_t ldw, int64_t m, int64_t k, int8_t *dst,
                int32_t *wsum);

typedef struct cg_qg_problem {
    const cg_qg_level *lv;    /* cg_qg_get */
    const int8_t *w;          /* packed by cg_qg_pack */
    const int32_t *wsum;      /* its row sums */
    const int32_t *zw;        /* per channel, in W's signed domain */
    const int32_t *bias;      /* per channel, or NULL */
    int64_t m, k, p;
    const uint8_t *x;         /* tap k of position p at x[off[k] + pos[p]] */
    const int64_t *off;
    const int64_t *pos;
    int32_t zx;               /* X's zero point, unsigned domain */
    int32_t *y;               /* m planes of p */
} cg_qg_problem;

/* Runs the product on the kernel's threads; false when its scratch cannot
 * be allocated (the caller reports it). */
bool cg_qg_run(cg_kernel_ctx *k, const cg_qg_problem *p);

#endif
