/*
 * The AVX2 and AVX-512 vector tables (see simd.h): simd_x86.inc compiled
 * twice with per-function target attributes, so the rest of the library
 * keeps the baseline x86-64 flags and the choice is made at run time
 * (run/cpu.c). Compiled only on x86 with gcc or clang; elsewhere the
 * getters return NULL and the portable table is used.
 */
#include <float.h>
#include <math.h>

#include "run/ops/simd.h"
#include "run/ops/simd_mlas.h"

#if (defined(__x86_64__) || defined(__i386__)) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>

/* ---- AVX2 + FMA + F16C ----------------------------------------------------- */

#define SX(name) name##_avx2
#define SX_TARGET __attribute__((target("avx2,fma,f16c")))
#define SX_LEVEL CG_SIMD_AVX2
#define VW 8
typedef __m256 vf;
typedef __m256i vi;
typedef __m256 vm;
#define vload(p) _mm256_loadu_ps(p)
#define vstore(p, v) _mm256_storeu_ps(p, v)
#define vset1(x) _mm256_set1_ps(x)
#define vzero() _mm256_setzero_ps()
#define vadd(a, b) _mm256_add_ps(a, b)
#define vsub(a, b) _mm256_sub_ps(a, b)
#define vmul(a, b) _mm256_mul_ps(a, b)
#define vdiv(a, b) _mm256_div_ps(a, b)
#define vmin(a, b) _mm256_min_ps(a, b)
#define vmax(a, b) _mm256_max_ps(a, b)
#define vfmadd(a, b, c) _mm256_fmadd_ps(a, b, c)
#define vfnmadd(a, b, c) _mm256_fnmadd_ps(a, b, c)
#define vabs(x) _mm256_andnot_ps(_mm256_set1_ps(-0.0f), x)
#define vneg(x) _mm256_xor_ps(_mm256_set1_ps(-0.0f), x)
#define vcopysign(m, s) \
    _mm256_or_ps(vabs(m), _mm256_and_ps(_mm256_set1_ps(-0.0f), s))
#define vround(x) _mm256_round_ps(x, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC)
#define vcvt_i(x) _mm256_cvtps_epi32(x)
#define vstore_i(p, v) _mm256_storeu_si256((__m256i *)(void *)(p), v)
#define vset1_i(x) _mm256_set1_epi32(x)
#define vadd_i(a, b) _mm256_add_epi32(a, b)
#define vsub_i(a, b) _mm256_sub_epi32(a, b)
#define vslli(a, n) _mm256_slli_epi32(a, n)
#define vsrai(a, n) _mm256_srai_epi32(a, n)
#define vcast_f(a) _mm256_castsi256_ps(a)
#define vcmp_lt(a, b) _mm256_cmp_ps(a, b, _CMP_LT_OQ)
#define vcmp_gt(a, b) _mm256_cmp_ps(a, b, _CMP_GT_OQ)
#define vcmp_unord(a, b) _mm256_cmp_ps(a, b, _CMP_UNORD_Q)
#define vblend(m, f, t) _mm256_blendv_ps(f, t, m)
#define vmask_none() _mm256_setzero_ps()
#define vmask_or(a, b) _mm256_or_ps(a, b)
#define vmask_any(m) (_mm256_movemask_ps(m) != 0)
#define vload_ph(p) _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(const void *)(p)))
#define vstore_ph(p, v) \
    _mm_storeu_si128((__m128i *)(void *)(p), _mm256_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT))

/* The first n lanes (0 < n <= VW) for masked loads and stores. */
typedef __m256i vtail8;
#define vtail vtail8
#define vtail_n(n) \
    _mm256_cmpgt_epi32(_mm256_set1_epi32((int)(n)), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7))
#define vload_tail(p, m) _mm256_maskload_ps(p, m)
#define vstore_tail(p, v, m) _mm256_maskstore_ps(p, m, v)

/* The even lanes of a then b: a0 a2 a4 a6 b0 b2 b4 b6. */
SX_TARGET static inline vf veven_avx2(vf a, vf b)
{
    __m256 t = _mm256_shuffle_ps(a, b, _MM_SHUFFLE(2, 0, 2, 0));
    return _mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(t), _MM_SHUFFLE(3, 1, 2, 0)));
}
#define veven(a, b) veven_avx2(a, b)

SX_TARGET static inline float vmax_all_avx2(vf v)
{
    __m128 m = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    m = _mm_max_ps(m, _mm_movehl_ps(m, m));
    m = _mm_max_ss(m, _mm_shuffle_ps(m, m, 1));
    return _mm_cvtss_f32(m);
}
#define vmax_all(v) vmax_all_avx2(v)

/* 2^n for integer n in [-126, 128]: two factors, each a normal float. */
SX_TARGET static inline vf vscale_avx2(vf p, vi n)
{
    vi h = vsrai(n, 1);
    vf a = vcast_f(vslli(vadd_i(h, vset1_i(127)), 23));
    vf b = vcast_f(vslli(vadd_i(vsub_i(n, h), vset1_i(127)), 23));
    return vmul(vmul(p, a), b);
}
#define vscale(p, n) vscale_avx2(p, n)

/* packgemm micro-kernels: 3 x 32, 6 x 16 and 12 x 8 (twelve accumulators
 * of the sixteen ymm registers) */
#define UK_NAME gemm_ukr_3x32_avx2
#define UK_MR 3
#define UK_NV 4
#include "run/ops/simd_gemm_x86.inc"
#undef UK_NAME
#undef UK_MR
#undef UK_NV
#define UK_NAME gemm_ukr_6x16_avx2
#define UK_MR 6
#define UK_NV 2
#include "run/ops/simd_gemm_x86.inc"
#undef UK_NAME
#undef UK_MR
#undef UK_NV
#define UK_NAME gemm_ukr_12x8_avx2
#define UK_MR 12
#define UK_NV 1
#include "run/ops/simd_gemm_x86.inc"
#undef UK_NAME
#undef UK_MR
#undef UK_NV
#define SX_GEMMS {{3, 32, gemm_ukr_3x32_avx2}, {6, 16, gemm_ukr_6x16_avx2}, {12, 8, gemm_ukr_12x8_avx2}}
/* the matrix-vector product (one position): 8 vectors, eight chains */
#define UK_NAME gemm_ukr_1x64_avx2
#define UK_MR 1
#define UK_NV 8
#include "run/ops/simd_gemm_x86.inc"
#undef UK_NAME
#undef UK_MR
#undef UK_NV
#define SX_GEMV {1, 64, gemm_ukr_1x64_avx2}
/* the float64 micro-kernels: the same tiles over 4 doubles a vector */
#define VWD 4
typedef __m256d vd;
#define vdload(p) _mm256_loadu_pd(p)
#define vdstore(p, v) _mm256_storeu_pd(p, v)
#define vdset1(x) _mm256_set1_pd(x)
#define vdzero() _mm256_setzero_pd()
#define vdfmadd(a, b, c) _mm256_fmadd_pd(a, b, c)
#define vdadd(a, b) _mm256_add_pd(a, b)
#define vdmul(a, b) _mm256_mul_pd(a, b)
/* The even lanes of a then b: a0 a2 b0 b2. */
#define vdeven(a, b) _mm256_permute4x64_pd(_mm256_unpacklo_pd(a, b), 0xD8)
#define UK_F64
#define UK_NAME dgemm_ukr_3x16_avx2
#define UK_MR 3
#define UK_NV 4
#include "run/ops/simd_gemm_x86.inc"
#undef UK_NAME
#undef UK_MR
#undef UK_NV
#define UK_NAME dgemm_ukr_6x8_avx2
#define UK_MR 6
#define UK_NV 2
#include "run/ops/simd_gemm_x86.inc"
#undef UK_NAME
#undef UK_MR
#undef UK_NV
#define UK_NAME dgemm_ukr_12x4_avx2
#define UK_MR 12
#define UK_NV 1
#include "run/ops/simd_gemm_x86.inc"
#undef UK_NAME
#undef UK_MR
#undef UK_NV
#undef UK_F64
#define SX_DGEMMS {{3, 16, dgemm_ukr_3x16_avx2}, {6, 8, dgemm_ukr_6x8_avx2}, {12, 4, dgemm_ukr_12x4_avx2}}
/* pointwise tiles: 4 channels x 3 vectors (twelve accumulators) */
#define SX_PW_MR 4
#define SX_PW_NV 3

#include "run/ops/simd_x86.inc"

#undef SX_GEMMS
#undef SX_GEMV
#undef SX_DGEMMS
#undef VWD
#undef vd
#undef vdload
#undef vdstore
#undef vdset1
#undef vdzero
#undef vdfmadd
#undef vdadd
#undef vdmul
#undef vdeven
#undef SX_PW_MR
#undef SX_PW_NV
#undef vtail
#undef vtail_n
#undef vload_tail
#undef vstore_tail
#undef SX
#undef SX_TARGET
#undef SX_LEVEL
#undef VW
#undef vload
#undef vstore
#undef vset1
#undef vzero
#undef vadd
#undef vsub
#undef vmul
#undef vdiv
#undef vmin
#undef vmax
#undef vfmadd
#undef vfnmadd
#undef vabs
#undef vneg
#undef vcopysign
#undef vround
#undef vcvt_i
#undef vstore_i
#undef vset1_i
#undef vadd_i
#undef vsub_i
#undef vslli
#undef vsrai
#undef vcast_f
#undef vcmp_lt
#undef vcmp_gt
#undef vcmp_unord
#undef vblend
#undef vmask_none
#undef vmask_or
#undef vmask_any
#undef vload_ph
#undef vstore_ph
#undef veven
#undef vmax_all
#undef vscale
#undef SX_MAP

/* ---- AVX-512 F/BW/DQ/VL ---------------------------------------------------- */

#define SX(name) name##_avx512
#define SX_TARGET __attribute__((target("avx512f,avx512bw,avx512dq,avx512vl,fma,f16c")))
#define SX_LEVEL CG_SIMD_AVX512
#define VW 16
typedef __m512 vf16;
typedef __m512i vi16;
typedef __mmask16 vm16;
#define vf vf16
#define vi vi16
#define vm vm16
#define vload(p) _mm512_loadu_ps(p)
#define vstore(p, v) _mm512_storeu_ps(p, v)
#define vset1(x) _mm512_set1_ps(x)
#define vzero() _mm512_setzero_ps()
#define vadd(a, b) _mm512_add_ps(a, b)
#define vsub(a, b) _mm512_sub_ps(a, b)
#define vmul(a, b) _mm512_mul_ps(a, b)
#define vdiv(a, b) _mm512_div_ps(a, b)
#define vmin(a, b) _mm512_min_ps(a, b)
#define vmax(a, b) _mm512_max_ps(a, b)
#define vfmadd(a, b, c) _mm512_fmadd_ps(a, b, c)
#define vfnmadd(a, b, c) _mm512_fnmadd_ps(a, b, c)
#define vabs(x) _mm512_abs_ps(x)
#define vneg(x) \
    _mm512_castsi512_ps(_mm512_xor_si512(_mm512_castps_si512(x), _mm512_set1_epi32(INT32_MIN)))
#define vcopysign(m, s)                                                                    \
    _mm512_castsi512_ps(_mm512_or_si512(                                                   \
        _mm512_castps_si512(_mm512_abs_ps(m)),                                             \
        _mm512_and_si512(_mm512_castps_si512(s), _mm512_set1_epi32(INT32_MIN))))
#define vround(x) _mm512_roundscale_ps(x, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC)
#define vcvt_i(x) _mm512_cvtps_epi32(x)
#define vstore_i(p, v) _mm512_storeu_si512((void *)(p), v)
#define vset1_i(x) _mm512_set1_epi32(x)
#define vadd_i(a, b) _mm512_add_epi32(a, b)
#define vsub_i(a, b) _mm512_sub_epi32(a, b)
#define vslli(a, n) _mm512_slli_epi32(a, n)
#define vsrai(a, n) _mm512_srai_epi32(a, n)
#define vcast_f(a) _mm512_castsi512_ps(a)
#define vcmp_lt(a, b) _mm512_cmp_ps_mask(a, b, _CMP_LT_OQ)
#define vcmp_gt(a, b) _mm512_cmp_ps_mask(a, b, _CMP_GT_OQ)
#define vcmp_unord(a, b) _mm512_cmp_ps_mask(a, b, _CMP_UNORD_Q)
#define vblend(m, f, t) _mm512_mask_blend_ps(m, f, t)
#define vmask_none() ((__mmask16)0)
#define vmask_or(a, b) ((__mmask16)((a) | (b)))
#define vmask_any(m) ((m) != 0)
#define vload_ph(p) _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)(const void *)(p)))
#define vstore_ph(p, v) \
    _mm256_storeu_si256((__m256i *)(void *)(p), _mm512_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT))
#define veven(a, b)                                                                        \
    _mm512_permutex2var_ps(a, _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22,  \
                                                24, 26, 28, 30), b)
#define vmax_all(v) _mm512_reduce_max_ps(v)
typedef __mmask16 vtail16;
#define vtail vtail16
#define vtail_n(n) ((__mmask16)((1u << (n)) - 1u))
#define vload_tail(p, m) _mm512_maskz_loadu_ps(m, p)
#define vstore_tail(p, v, m) _mm512_mask_storeu_ps(p, m, v)

SX_TARGET static inline vf vscale_avx512(vf p, vi n)
{
    vi h = vsrai(n, 1);
    vf a = vcast_f(vslli(vadd_i(h, vset1_i(127)), 23));
    vf b = vcast_f(vslli(vadd_i(vsub_i(n, h), vset1_i(127)), 23));
    return vmul(vmul(p, a), b);
}
#define vscale(p, n) vscale_avx512(p, n)

/* packgemm micro-kernels: 7 x 64, 9 x 48 and 14 x 32 (27 or 28 of the 32
 * zmm registers hold accumulators) */
#define UK_NAME gemm_ukr_6x64_avx512
#define UK_MR 6
#define UK_NV 4
#include "run/ops/simd_gemm_x86.inc"
#undef UK_NAME
#undef UK_MR
#undef UK_NV
#define UK_NAME gemm_ukr_9x48_avx512
#define UK_MR 9
#define UK_NV 3
#include "run/ops/simd_gemm_x86.inc"
#undef UK_NAME
#undef UK_MR
#undef UK_NV
#define UK_NAME gemm_ukr_14x32_avx512
#define UK_MR 14
#define UK_NV 2
#include "run/ops/simd_gemm_x86.inc"
#undef UK_NAME
#undef UK_MR
#undef UK_NV
#define SX_GEMMS {{6, 64, gemm_ukr_6x64_avx512}, {9, 48, gemm_ukr_9x48_avx512}, {14, 32, gemm_ukr_14x32_avx512}}
/* the matrix-vector product (one position): 8 vectors, eight chains */
#define UK_NAME gemm_ukr_1x128_avx512
#define UK_MR 1
#define UK_NV 8
#include "run/ops/simd_gemm_x86.inc"
#undef UK_NAME
#undef UK_MR
#undef UK_NV
#define SX_GEMV {1, 128, gemm_ukr_1x128_avx512}
/* the float64 micro-kernels: the same tiles over 8 doubles a vector */
#define VWD 8
typedef __m512d vd8;
#define vd vd8
#define vdload(p) _mm512_loadu_pd(p)
#define vdstore(p, v) _mm512_storeu_pd(p, v)
#define vdset1(x) _mm512_set1_pd(x)
#define vdzero() _mm512_setzero_pd()
#define vdfmadd(a, b, c) _mm512_fmadd_pd(a, b, c)
#define vdadd(a, b) _mm512_add_pd(a, b)
#define vdmul(a, b) _mm512_mul_pd(a, b)
#define vdeven(a, b) \
    _mm512_permutex2var_pd(a, _mm512_setr_epi64(0, 2, 4, 6, 8, 10, 12, 14), b)
#define UK_F64
#define UK_NAME dgemm_ukr_6x32_avx512
#define UK_MR 6
#define UK_NV 4
#include "run/ops/simd_gemm_x86.inc"
#undef UK_NAME
#undef UK_MR
#undef UK_NV
#define UK_NAME dgemm_ukr_9x24_avx512
#define UK_MR 9
#define UK_NV 3
#include "run/ops/simd_gemm_x86.inc"
#undef UK_NAME
#undef UK_MR
#undef UK_NV
#define UK_NAME dgemm_ukr_14x16_avx512
#define UK_MR 14
#define UK_NV 2
#include "run/ops/simd_gemm_x86.inc"
#undef UK_NAME
#undef UK_MR
#undef UK_NV
#undef UK_F64
#define SX_DGEMMS {{6, 32, dgemm_ukr_6x32_avx512}, {9, 24, dgemm_ukr_9x24_avx512}, {14, 16, dgemm_ukr_14x16_avx512}}
/* pointwise tiles: 8 channels x 3 vectors (24 accumulators) */
#define SX_PW_MR 8
#define SX_PW_NV 3
/* depthwise planes at most 8 wide (7x7) on AVX2's 8 lanes rather than
 * 16 of which 9 are wasted (the sums are lane by lane: the same bits) */
#define SX_DW_NARROW dw_plane_avx2
#define SX_DW_NARROW_W 8
#define SX_DW_NARROW_F64 dw_row_f64_avx2

#include "run/ops/simd_x86.inc"
#undef SX_DW_NARROW
#undef SX_DW_NARROW_W
#undef SX_DW_NARROW_F64

const cg_simd_ops *cg_simd_ops_avx2(void) { return &table_avx2; }
const cg_simd_ops *cg_simd_ops_avx512(void) { return &table_avx512; }

#else

const cg_simd_ops *cg_simd_ops_avx2(void) { return NULL; }
const cg_simd_ops *cg_simd_ops_avx512(void) { return NULL; }

#endif
