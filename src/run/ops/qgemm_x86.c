/*
 * The AVX-512 VNNI micro-kernels of the 8-bit convolution GEMM (see
 * qgemm.h), compiled with a per-function target attribute like
 * simd_x86.c and used only where run/cpu.c finds VNNI. One tile is
 * CG_QG_MR channels x 16*nv positions: 8 x nv accumulators, each k/4 step
 * one vpdpbusd per accumulator (the positions' bytes unsigned, the
 * channel's four weights broadcast, signed).
 */
#include <string.h>

#include "run/ops/qgemm.h"

#if (defined(__x86_64__) || defined(__i386__)) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>

#define QG_TARGET __attribute__((target("avx512f,avx512bw,avx512vnni")))

QG_TARGET static inline __attribute__((always_inline)) void
qg_tile(int nv, int64_t kq, const int8_t *w, const uint8_t *x, const int32_t *xsum,
        const int32_t *zw, const int32_t *cterm, int32_t *y, int64_t plane, int64_t np, int64_t nc)
{
    __m512i acc[CG_QG_MR][3];
    for (int r = 0; r < CG_QG_MR; r++)
        for (int v = 0; v < nv; v++)
            acc[r][v] = _mm512_setzero_si512();
    for (int64_t q = 0; q < kq; q++) {
        const uint8_t *xq = x + q * nv * 64;
        const int8_t *wq = w + q * CG_QG_MR * 4;
        __m512i xv[3];
        for (int v = 0; v < nv; v++)
            xv[v] = _mm512_loadu_si512((const void *)(xq + v * 64));
        for (int r = 0; r < CG_QG_MR; r++) {
            int32_t w4;
            memcpy(&w4, wq + r * 4, sizeof w4);
            __m512i wb = _mm512_set1_epi32(w4);
            for (int v = 0; v < nv; v++)
                acc[r][v] = _mm512_dpbusd_epi32(acc[r][v], xv[v], wb);
        }
    }
    __m512i sv[3];
    __mmask16 mask[3];
    for (int v = 0; v < nv; v++) {
        int64_t left = np - v * 16;
        mask[v] = left >= 16 ? (__mmask16)0xffff
                             : (left <= 0 ? (__mmask16)0 : (__mmask16)((1u << left) - 1u));
        sv[v] = _mm512_loadu_si512((const void *)(xsum + v * 16));
    }
    for (int r = 0; r < CG_QG_MR; r++) {
        if (r >= nc)
            break;
        __m512i z = _mm512_set1_epi32(zw[r]), c = _mm512_set1_epi32(cterm[r]);
        for (int v = 0; v < nv; v++) {
            __m512i o = _mm512_sub_epi32(_mm512_add_epi32(acc[r][v], c),
                                         _mm512_mullo_epi32(z, sv[v]));
            _mm512_mask_storeu_epi32((void *)(y + r * plane + v * 16), mask[v], o);
        }
    }
}

QG_TARGET static void qg_ukr_1(int64_t kq, const int8_t *w, const uint8_t *x,
                               const int32_t *xsum, const int32_t *zw, const int32_t *cterm,
                               int32_t *y, int64_t plane, int64_t np, int64_t nc)
{
    qg_tile(1, kq, w, x, xsum, zw, cterm, y, plane, np, nc);
}

QG_TARGET static void qg_ukr_2(int64_t kq, const int8_t *w, const uint8_t *x,
                               const int32_t *xsum, const int32_t *zw, const int32_t *cterm,
                               int32_t *y, int64_t plane, int64_t np, int64_t nc)
{
    qg_tile(2, kq, w, x, xsum, zw, cterm, y, plane, np, nc);
}

QG_TARGET static void qg_ukr_3(int64_t kq, const int8_t *w, const uint8_t *x,
                               const int32_t *xsum, const int32_t *zw, const int32_t *cterm,
                               int32_t *y, int64_t plane, int64_t np, int64_t nc)
{
    qg_tile(3, kq, w, x, xsum, zw, cterm, y, plane, np, nc);
}

/* Four taps of 16 positions that are consecutive in x (a stride-1 row):
 * byte rows a, b, c, e interleaved into 16 groups of four. */
QG_TARGET static inline void qg_interleave16(const uint8_t *a, const uint8_t *b,
                                             const uint8_t *c, const uint8_t *e, uint8_t *d)
{
    __m128i va = _mm_loadu_si128((const __m128i *)(const void *)a);
    __m128i vb = _mm_loadu_si128((const __m128i *)(const void *)b);
    __m128i vc = _mm_loadu_si128((const __m128i *)(const void *)c);
    __m128i ve = _mm_loadu_si128((const __m128i *)(const void *)e);
    __m128i ab0 = _mm_unpacklo_epi8(va, vb), ab1 = _mm_unpackhi_epi8(va, vb);
    __m128i ce0 = _mm_unpacklo_epi8(vc, ve), ce1 = _mm_unpackhi_epi8(vc, ve);
    _mm_storeu_si128((__m128i *)(void *)d, _mm_unpacklo_epi16(ab0, ce0));
    _mm_storeu_si128((__m128i *)(void *)(d + 16), _mm_unpackhi_epi16(ab0, ce0));
    _mm_storeu_si128((__m128i *)(void *)(d + 32), _mm_unpacklo_epi16(ab1, ce1));
    _mm_storeu_si128((__m128i *)(void *)(d + 48), _mm_unpackhi_epi16(ab1, ce1));
}

QG_TARGET static void qg_pack(const uint8_t *x, const int64_t *off, const int64_t *pos,
                              int64_t k, int64_t np, int64_t tp, uint8_t *dst, int32_t *sum)
{
    int64_t kq = (k + 3) / 4;
    for (int64_t q4 = 0; q4 < kq; q4++) {
        uint8_t *d = dst + q4 * tp * 4;
        int64_t q = q4 * 4, i = 0;
        if (q + 4 <= k) {
            const uint8_t *x0 = x + off[q], *x1 = x + off[q + 1];
            const uint8_t *x2 = x + off[q + 2], *x3 = x + off[q + 3];
            for (; i + 16 <= np; i += 16) {
                int64_t o = pos[i];
                if (pos[i + 15] - o == 15) {
                    qg_interleave16(x0 + o, x1 + o, x2 + o, x3 + o, d + i * 4);
                    continue;
                }
                for (int64_t e = i; e < i + 16; e++) {
                    int64_t oe = pos[e];
                    d[e * 4] = x0[oe];
                    d[e * 4 + 1] = x1[oe];
                    d[e * 4 + 2] = x2[oe];
                    d[e * 4 + 3] = x3[oe];
                }
            }
        }
        for (; i < np; i++)
            for (int64_t r = 0; r < 4; r++)
                d[i * 4 + r] = q + r < k ? x[off[q + r] + pos[i]] : 0;
        memset(d + np * 4, 0, (size_t)((tp - np) * 4));
    }
    /* the sums: every byte times one, on the same instruction */
    const __m512i ones = _mm512_set1_epi8(1);
    for (int64_t v = 0; v < tp / 16; v++) {
        __m512i s = _mm512_setzero_si512();
        for (int64_t q4 = 0; q4 < kq; q4++)
            s = _mm512_dpbusd_epi32(s, _mm512_loadu_si512((const void *)(dst + (q4 * tp + v * 16) * 4)),
                                    ones);
        _mm512_storeu_si512((void *)(sum + v * 16), s);
    }
}

const cg_qg_level *cg_qg_vnni(void)
{
    static const cg_qg_level level = {{qg_ukr_1, qg_ukr_2, qg_ukr_3}, qg_pack};
    return &level;
}

#else

const cg_qg_level *cg_qg_vnni(void) { return NULL; }

#endif
