/*
 * Convolutions: Conv, ConvTranspose, ConvInteger, QLinearConv, Col2Im.
 *
 * Conv lowers each (image, group) to one GEMM over an im2col matrix
 * (conv_impl.inc); a 1x1 stride-1 unpadded conv is a plain GEMM on the input,
 * and groups with one input channel (depthwise) use a direct row kernel.
 * ConvTranspose is the adjoint: GEMM with the transposed weights, then
 * col2im. float32 (and float16/bfloat16 via float32) runs on the
 * reference's convolution GEMM (packgemm.h), float64 on its float64 form at
 * the vector levels and on dgemm at the portable one; the integer convs
 * subtract zero points into int32 and use an exact int32 GEMM. Every shape,
 * group and attribute is validated before any buffer is read.
 *
 * Under CG_KPREC_FP16_ACC16 (a node of a partition emulating an fp16 GPU
 * computing in F16) and CG_KPREC_FP16_SUM11 (float64 mode: the F16 devices'
 * floor) Conv and ConvTranspose sum each output in fp16 as TFLite GPU's F16
 * kernels do (conv_sum16 and convt_sum16, which cite them).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/mapfile.h"
#include "run/fp64.h"
#include "run/initshare.h"
#include "run/ops/kernels.h"
#include "run/ops/nn_common.h"
#include "run/ops/packgemm.h"
#include "run/ops/qgemm.h"

/* A 1x1 window with unit strides and no padding reads x as the column matrix. */
static bool conv_is_pointwise(const cg_nn_window *w)
{
    for (int d = 0; d < w->nsp; d++)
        if (w->kernel[d] != 1 || w->stride[d] != 1 || w->pad0[d] != 0 || w->pad1[d] != 0 ||
            w->in[d] != w->out[d])
            return false;
    return true;
}

/* Kernel rows the direct depthwise path handles (its row table is on the
 * stack); taller kernels go through im2col. */
#define CONV_DW_MAX_K 16

static bool conv_use_depthwise(const cg_nn_window *w, int64_t cg)
{
    return cg == 1 && w->nsp <= 2 && (w->nsp == 1 || w->kernel[0] <= CONV_DW_MAX_K);
}

/* Exact int32 GEMM (wrapping), signature-compatible with cg_nn_sgemm.
 * alpha is always 1 here; beta 0 or 1. */
static bool gemm_i32(bool ta, bool tb, int64_t m, int64_t n, int64_t kk, int32_t alpha,
                     const int32_t *a, int64_t lda, const int32_t *b, int64_t ldb, int32_t beta,
                     int32_t *c, int64_t ldc)
{
    (void)alpha;
    for (int64_t i = 0; i < m; i++) {
        uint32_t *crow = (uint32_t *)(c + i * ldc);
        if (!beta)
            for (int64_t j = 0; j < n; j++)
                crow[j] = 0;
        for (int64_t q = 0; q < kk; q++) {
            uint32_t av = (uint32_t)(ta ? a[q * lda + i] : a[i * lda + q]);
            if (!av)
                continue;
            for (int64_t j = 0; j < n; j++)
                crow[j] += av * (uint32_t)(tb ? b[j * ldb + q] : b[q * ldb + j]);
        }
    }
    return true;
}

/* cg_simd_ops.dw_row_f64: the float64 body's depthwise interior at the
 * vector level (CONV_DW_ROW; the other bodies take no such parameter) */
typedef int64_t (*dw_row_f64_fn)(double *y, const double *const *rows, const double *w,
                                 int64_t kh_n, int64_t kw_n, int64_t off, int64_t dw, int64_t sw,
                                 int64_t n, double bias);

#define CT float
#define CONV_FN(x) x##_f32
#define CONV_GEMM cg_nn_sgemm
#define CONV_NO_FORWARD /* float32 Conv runs on packgemm.c and dw_plane */
#include "run/ops/conv_impl.inc"
#undef CONV_NO_FORWARD
#undef CT
#undef CONV_FN
#undef CONV_GEMM

#define CONV_DW_ROW
#define CT double
#define CONV_FN(x) x##_f64
#define CONV_GEMM cg_nn_dgemm
#include "run/ops/conv_impl.inc"
#undef CT
#undef CONV_FN
#undef CONV_GEMM
#undef CONV_DW_ROW

#define CT int32_t
#define CONV_FN(x) x##_i32
#define CONV_GEMM gemm_i32
#define CONV_NO_TRANSPOSE
#include "run/ops/conv_impl.inc"
#undef CONV_NO_TRANSPOSE
#undef CT
#undef CONV_FN
#undef CONV_GEMM

/* Validated geometry of one convolution node. */
typedef struct conv_geom {
    int64_t n, c, m, group;
    cg_nn_window w;   /* forward window; for ConvTranspose the adjoint one */
    int64_t col_elems; /* scratch elements the column matrix needs (0: none) */
} conv_geom;

static cg_status check_kernel_shape_attr(cg_kernel_ctx *k, const cg_tensor *wt, int nsp)
{
    size_t n = 0;
    const int64_t *ks = cg_attr_ints(k, "kernel_shape", &n);
    if (!ks)
        return CG_OK;
    if (n != (size_t)nsp)
        return cg_kernel_fail(k, CG_INVALID, "kernel_shape has %zu values for %d spatial dims", n,
                              nsp);
    for (int d = 0; d < nsp; d++)
        if (ks[d] != wt->dims[2 + d])
            return cg_kernel_fail(k, CG_INVALID, "kernel_shape[%d] = %lld but W has %lld", d,
                                  (long long)ks[d], (long long)wt->dims[2 + d]);
    return CG_OK;
}

/* Shapes common to Conv and ConvTranspose: ranks, group. */
static cg_status conv_common(cg_kernel_ctx *k, const cg_tensor *x, const cg_tensor *wt,
                             conv_geom *g)
{
    if (x->rank < 3)
        return cg_kernel_fail(k, CG_INVALID, "X has rank %d (needs N, C and a spatial dim)",
                              x->rank);
    if (wt->rank != x->rank)
        return cg_kernel_fail(k, CG_INVALID, "W has rank %d but X has rank %d", wt->rank, x->rank);
    g->group = cg_attr_int(k, "group", 1);
    if (g->group < 1)
        return cg_kernel_fail(k, CG_INVALID, "group is %lld", (long long)g->group);
    g->n = x->dims[0];
    g->c = x->dims[1];
    return check_kernel_shape_attr(k, wt, x->rank - 2);
}

static cg_status conv_geom_init(cg_kernel_ctx *k, const cg_tensor *x, const cg_tensor *wt,
                                conv_geom *g)
{
    cg_status st;
    if ((st = conv_common(k, x, wt, g)) != CG_OK)
        return st;
    int nsp = x->rank - 2;
    g->m = wt->dims[0];
    if (g->c % g->group != 0 || g->m % g->group != 0)
        return cg_kernel_fail(k, CG_INVALID, "channels (in %lld, out %lld) not divisible by group %lld",
                              (long long)g->c, (long long)g->m, (long long)g->group);
    if (wt->dims[1] != g->c / g->group)
        return cg_kernel_fail(k, CG_INVALID, "W has %lld input channels per group, X gives %lld",
                              (long long)wt->dims[1], (long long)(g->c / g->group));
    if ((st = cg_nn_window_init(k, nsp, x->dims + 2, wt->dims + 2, false, &g->w)) != CG_OK)
        return st;
    /* The taps index one group's input with its pads (conv_taps_init): each
     * padded extent fits (in and pads are at most 2^40 each), their product
     * with the group's channels must too. Pads from a file can make it
     * overflow where the input itself is small. */
    int64_t padded[CG_MAX_RANK];
    for (int d = 0; d < nsp; d++)
        padded[d] = g->w.in[d] + g->w.pad0[d] + g->w.pad1[d];
    padded[nsp] = g->c / g->group;
    int64_t padded_elems;
    if (!cg_shape_numel(nsp + 1, padded, &padded_elems))
        return cg_kernel_fail(k, CG_LIMIT, "the padded input of one group has too many elements "
                              "(the pads make its size overflow)");
    g->col_elems = 0;
    if (!conv_is_pointwise(&g->w) && !conv_use_depthwise(&g->w, g->c / g->group)) {
        int64_t kn = cg_nn_prod(nsp, g->w.kernel), on = cg_nn_prod(nsp, g->w.out);
        int64_t dims[3] = {g->c / g->group, kn, on};
        if (kn < 0 || on < 0 || !cg_shape_numel(3, dims, &g->col_elems))
            return cg_kernel_fail(k, CG_LIMIT, "im2col matrix size overflows");
    }
    return CG_OK;
}

static cg_status check_bias(cg_kernel_ctx *k, const cg_tensor *b, int64_t m)
{
    if (b && (b->rank != 1 || b->dims[0] != m))
        return cg_kernel_fail(k, CG_INVALID, "B must be 1-D of %lld values (has %lld)",
                              (long long)m, (long long)b->numel);
    return CG_OK;
}

/* Output dims: N, M, spatial of the output window side. */
static void conv_out_dims(const conv_geom *g, bool transpose, int64_t *dims)
{
    dims[0] = g->n;
    dims[1] = g->m;
    for (int d = 0; d < g->w.nsp; d++)
        dims[2 + d] = transpose ? g->w.in[d] : g->w.out[d];
}

/* ---- float32 Conv on the convolution GEMM (packgemm.h) ---------------------------- */

typedef struct conv_store_ctx {
    const cg_simd_ops *ops;
    float *y;          /* output planes of this image and group */
    const float *bias; /* per output channel of the group, or NULL */
    int32_t *yi;       /* the same for the integer convs */
    const int32_t *bias_i;
    int64_t plane;     /* positions per output channel */
    const cg_epilogue *epi; /* the fused activation (kernel.h), or NULL */
    const float *add;       /* its residual, at this image and group */
} conv_store_ctx;

/* The fused epilogues the vector tables apply in the store (simd.h,
 * cg_simd_pw_epi): Relu and Clip; NONE for the others, which run after it
 * (conv_epilogue). */
static bool conv_epi_vector(const cg_epilogue *e, cg_simd_pw_act *act)
{
    *act = CG_SIMD_PW_NONE;
    if (!e || e->kind == CG_EPI_NONE)
        return true;
    if (e->kind == CG_EPI_RELU)
        *act = CG_SIMD_PW_RELU;
    else if (e->kind == CG_EPI_CLIP)
        *act = CG_SIMD_PW_CLIP;
    return *act != CG_SIMD_PW_NONE;
}

/* y[0..n) = act(y + add[0..n)) for a fused epilogue (add NULL: no residual),
 * with the same arithmetic as the Add and activation kernels
 * (elementwise_*.c, the vector tables). */
static void conv_epilogue(const cg_simd_ops *ops, const cg_epilogue *e, float *restrict y,
                          const float *restrict add, int64_t n)
{
    cg_simd_pw_act act;
    if (conv_epi_vector(e, &act)) {
        ops->act_f32(y, add, n, act, e->a, e->b);
        return;
    }
    if (add)
        ops->act_f32(y, add, n, CG_SIMD_PW_NONE, 0.0f, 0.0f);
    switch (e->kind) {
    case CG_EPI_LEAKYRELU:
        for (int64_t i = 0; i < n; i++)
            y[i] = y[i] >= 0 ? y[i] : e->a * y[i];
        break;
    case CG_EPI_HARDSWISH: ops->hardswish_f32(y, y, n, 1.0f / 6.0f, 0.5f); break;
    case CG_EPI_SILU: ops->silu_f32(y, y, n); break;
    default: break;
    }
}

/* Tile [position][channel] -> planes y[channel][position], plus bias, and
 * the fused epilogue: in the store where the vector tables have it, else
 * over the rows just written (in cache). */
static void conv_store(void *ctx, const float *c, int64_t ld, int64_t p0, int64_t np,
                       int64_t m0, int64_t m1)
{
    const conv_store_ctx *s = ctx;
    cg_simd_pw_epi e = {s->bias ? s->bias + m0 : NULL, NULL, CG_SIMD_PW_NONE, 0.0f, 0.0f};
    bool in_store = conv_epi_vector(s->epi, &e.act);
    if (in_store && s->epi) {
        e.add = s->add ? s->add + m0 * s->plane + p0 : NULL;
        e.lo = s->epi->a;
        e.hi = s->epi->b;
    }
    s->ops->tile_store(s->y + m0 * s->plane + p0, s->plane, c, ld, np, m1 - m0, &e);
    for (int64_t m = m0; !in_store && m < m1; m++)
        conv_epilogue(s->ops, s->epi, s->y + m * s->plane + p0,
                      s->add ? s->add + m * s->plane + p0 : NULL, np);
}

/* Integer tile -> int32 planes, plus the int32 bias (wrapping). */
static void conv_store_i32(void *ctx, const int32_t *c, int64_t ld, int64_t p0, int64_t np,
                           int64_t m0, int64_t m1)
{
    const conv_store_ctx *s = ctx;
    for (int64_t m = m0; m < m1; m++) {
        const int32_t *cm = c + (m - m0);
        int32_t *restrict yr = s->yi + m * s->plane + p0;
        uint32_t bv = s->bias_i ? (uint32_t)s->bias_i[m] : 0u;
        for (int64_t i = 0; i < np; i++)
            yr[i] = (int32_t)((uint32_t)cm[i * ld] + bv);
    }
}

/* Where the convolution GEMMs read their taps (packgemm.h, qgemm.h): tap q
 * of position p at off[q] + pos[p] in the group's input, or in its
 * zero-padded copy (planes of `plane` elements) when the window pads. */
typedef struct conv_taps {
    bool padded;
    int64_t plane;
    int64_t *off, *pos;
} conv_taps;

/* Weights packed for the convolution GEMM, kept as the node's state while
 * W is a constant: valid for the same W data, shape, group and kernel. */
typedef struct conv_packed {
    const void *w_data;
    const void *zp_data; /* ConvInteger's weight zero point, or NULL */
    cg_dtype w_dtype;
    int rank;
    int64_t w_dims[CG_MAX_RANK];
    int64_t group;
    const cg_simd_gemm *gk; /* NULL: the 8-bit GEMM's packing (qgemm.h) */
    size_t per_group; /* floats, or bytes for the 8-bit GEMM */
    float *data;
    int8_t *qw;       /* the 8-bit GEMM: weights of every group, */
    int32_t *qsum;    /* their row sums (one per output channel), */
    int32_t *qzw;     /* and the zero points, W's signed domain */
    cg_shared *shared; /* data is this shared buffer's (run/initshare.h) */
    const cg_simd_dgemm *dk; /* float64 W: data64 is packed for dk */
    double *data64;
    /* the GEMM's tap tables (conv_taps) for the window they were made
     * for: a run with the same input shape reuses them */
    cg_nn_window taps_win;
    int64_t taps_kk, taps_on;
    conv_taps taps; /* off and pos malloc'd; off NULL: none kept */
} conv_packed;

static void conv_packed_free(void *p)
{
    conv_packed *cp = p;
    if (cp) {
        if (cp->shared)
            cg_shared_release(cp->shared);
        else
            free(cp->data);
        free(cp->qw);
        free(cp->qsum);
        free(cp->qzw);
        free(cp->data64);
        free(cp->taps.off);
        free(cp->taps.pos);
    }
    free(cp);
}

static bool conv_packed_matches(const conv_packed *cp, const cg_tensor *wt, const cg_tensor *zp,
                                int64_t group, const cg_simd_gemm *gk)
{
    return cp && cp->w_data == wt->data && cp->zp_data == (zp ? zp->data : NULL) &&
           cp->w_dtype == wt->dtype && cp->rank == wt->rank && (gk ? !!cp->data : !!cp->qw) &&
           memcmp(cp->w_dims, wt->dims, (size_t)wt->rank * sizeof(int64_t)) == 0 &&
           cp->group == group && cp->gk == gk;
}

/* What a shared packing derives from besides W's address (its tag). */
typedef struct conv_pack_tag {
    int64_t dims[CG_MAX_RANK];
    int64_t group;
    const cg_simd_gemm *gk;
    int32_t dtype;
    int32_t rank;
} conv_pack_tag;

/* Records what cp was packed from (what conv_packed_matches compares). */
static void conv_packed_key(conv_packed *cp, const cg_tensor *wt, const cg_tensor *zp,
                            int64_t group)
{
    cp->w_data = wt->data;
    cp->zp_data = zp ? zp->data : NULL;
    cp->w_dtype = wt->dtype;
    cp->rank = wt->rank;
    memcpy(cp->w_dims, wt->dims, (size_t)wt->rank * sizeof(int64_t));
    cp->group = group;
}

/* W as float32 for packing: converted (float16, ...), or for the integer
 * convs W minus its zero point (scalar or per output channel). */
static const float *conv_weights_f32(cg_kernel_ctx *k, const cg_tensor *wt, const cg_tensor *zp,
                                     int64_t m)
{
    if (wt->dtype != CG_DTYPE_UINT8 && wt->dtype != CG_DTYPE_INT8)
        return cg_nn_as_f32(k, wt);
    float *d = cg_nn_scratch(k, wt->numel, sizeof(float));
    if (!d)
        return NULL;
    int64_t per = m > 0 ? wt->numel / m : 0;
    for (int64_t i = 0; i < wt->numel; i++) {
        int64_t ch = per ? i / per : 0;
        int64_t z = zp ? cg_tensor_get_i64(zp, zp->numel == 1 ? 0 : ch) : 0;
        d[i] = (float)(cg_tensor_get_i64(wt, i) - z);
    }
    return d;
}

/* cg_pg_pack's panels from W's float32 bytes in the model (m rows of k
 * floats, any alignment), row by row through `row` (k floats): W's aligned
 * copy is never made. */
static void conv_pack_bytes(const cg_simd_gemm *g, const uint8_t *w, int64_t m, int64_t k,
                            float *row, float *dst)
{
    int64_t panels = (m + g->nr - 1) / g->nr;
    for (int64_t pn = 0; pn < panels; pn++) {
        float *d = dst + pn * g->nr * k;
        for (int64_t j = 0; j < g->nr; j++) {
            int64_t r = pn * g->nr + j;
            if (r < m)
                memcpy(row, w + (size_t)(r * k) * sizeof(float), (size_t)k * sizeof(float));
            for (int64_t q = 0; q < k; q++)
                d[q * g->nr + j] = r < m ? row[q] : 0.0f;
        }
    }
}

/* The packed weights of every group: the node's state when W (and its zero
 * point, input 3 of ConvInteger) are constant (packed at init), else packed
 * into scratch for this run. src: W's float32 bytes in the model, at any
 * alignment, while its aligned copy is not made (cg_kernel_input_source, at
 * init), else NULL: then W's data is read, its copy filled first. */
static const float *conv_weights_packed(cg_kernel_ctx *k, const cg_tensor *wt,
                                        const cg_tensor *zp, const int *ins, const conv_geom *g,
                                        const cg_simd_gemm *gk, int64_t kk, const void *src)
{
    int64_t mg = g->m / g->group;
    conv_packed *cp = cg_kernel_state(k);
    if (conv_packed_matches(cp, wt, zp, g->group, gk))
        return cp->data;
    if (!src) { /* W is read (cg_kernel_state_covers) */
        cg_kernel_input_fill(k, (size_t)ins[0]);
        if (zp)
            cg_kernel_input_fill(k, (size_t)ins[1]);
    }
    size_t per = cg_pg_packed_floats(gk, mg, kk);
    if ((uint64_t)g->group > SIZE_MAX / sizeof(float) / (per ? per : 1))
        return NULL;
    const float *wf = src ? NULL : conv_weights_f32(k, wt, zp, g->m);
    if (!src && !wf)
        return NULL;
    bool keep = cg_kernel_input_is_const(k, (size_t)ins[0]) &&
                (!zp || cg_kernel_input_is_const(k, (size_t)ins[1]));
    size_t bytes = (size_t)g->group * per * sizeof(float);
    /* a constant float W is packed once for every runtime in the process
     * that reads the same W (a gate builds several over one model) */
    cg_shared *shared = NULL;
    if (keep && !zp) {
        conv_pack_tag tag;
        memset(&tag, 0, sizeof tag);
        tag.dtype = wt->dtype;
        tag.rank = wt->rank;
        memcpy(tag.dims, wt->dims, (size_t)wt->rank * sizeof(int64_t));
        tag.group = g->group;
        tag.gk = gk;
        shared = cg_shared_acquire(wt->data, &tag, sizeof tag, bytes ? bytes : 1);
    }
    float *data = NULL;
    if (shared) {
        data = (float *)cg_shared_data(shared);
        if (cg_shared_fill_begin(shared)) {
            float *row = src ? malloc((size_t)kk * sizeof(float) + 1) : NULL;
            const float *wf = src ? NULL : conv_weights_f32(k, wt, zp, g->m);
            bool ok = src ? row != NULL : wf != NULL;
            for (int64_t gi = 0; ok && gi < g->group; gi++) {
                if (src)
                    conv_pack_bytes(gk, (const uint8_t *)src + (size_t)(gi * mg * kk) *
                                                                  sizeof(float),
                                    mg, kk, row, data + (size_t)gi * per);
                else
                    cg_pg_pack(gk, wf + gi * mg * kk, kk, mg, kk, data + (size_t)gi * per);
            }
            free(row);
            cg_shared_fill_end(shared, ok);
            if (!ok) {
                cg_shared_release(shared);
                return NULL;
            }
            /* W is read through its packing from now on: its pages of the
             * model's mapping need not stay resident as well */
            cg_mapping_drop_pages(src ? src : wt->data, cg_tensor_bytes(wt));
        }
    } else {
        if (src) { /* no shared packing: read W through its copy */
            cg_kernel_input_fill(k, (size_t)ins[0]);
            src = NULL;
        }
        const float *wf = conv_weights_f32(k, wt, zp, g->m);
        if (!wf)
            return NULL;
        data = keep ? malloc(bytes) : cg_nn_scratch(k, (int64_t)((size_t)g->group * per),
                                                   sizeof(float));
        if (!data)
            return NULL;
        for (int64_t gi = 0; gi < g->group; gi++)
            cg_pg_pack(gk, wf + gi * mg * kk, kk, mg, kk, data + (size_t)gi * per);
        if (!keep)
            return data;
    }
    cp = calloc(1, sizeof *cp);
    if (!cp) {
        if (shared)
            cg_shared_release(shared);
        else
            free(data);
        return NULL;
    }
    conv_packed_key(cp, wt, zp, g->group);
    cp->gk = gk;
    cp->per_group = per;
    cp->data = data;
    cp->shared = shared;
    if (!cg_kernel_set_state(k, cp, conv_packed_free)) {
        /* no runtime to keep it: use it once */
        float *copy = cg_nn_scratch(k, (int64_t)((size_t)g->group * per), sizeof(float));
        if (copy)
            memcpy(copy, data, bytes);
        conv_packed_free(cp);
        return copy;
    }
    return data;
}

/* The 8-bit GEMM's weights (qgemm.h) of every group in cp's qw, qsum and
 * qzw: W's zero point zp is validated by the caller. */
static void conv_q8_fill(const cg_tensor *wt, const cg_tensor *zp, const conv_geom *g,
                         int64_t kk, conv_packed *cp)
{
    int64_t mg = g->m / g->group;
    bool ws = wt->dtype == CG_DTYPE_INT8;
    for (int64_t gi = 0; gi < g->group; gi++)
        cg_qg_pack((const uint8_t *)wt->data + gi * mg * kk, ws, kk, mg, kk,
                   cp->qw + (size_t)gi * cp->per_group, cp->qsum + gi * mg);
    for (int64_t m = 0; m < g->m; m++) {
        int64_t z = zp ? cg_tensor_get_i64(zp, zp->numel == 1 ? 0 : m) : 0;
        cp->qzw[m] = (int32_t)(ws ? z : z - 128);
    }
}

/* The packed weights of the 8-bit GEMM: the node's state when W and its
 * zero point are constant (packed at the first run), else packed into
 * scratch (*tmp) for this run. NULL when out of memory. */
static const conv_packed *conv_weights_q8(cg_kernel_ctx *k, const cg_tensor *wt,
                                          const cg_tensor *zp, const int *ins,
                                          const conv_geom *g, int64_t kk, conv_packed *tmp)
{
    conv_packed *cp = cg_kernel_state(k);
    if (conv_packed_matches(cp, wt, zp, g->group, NULL))
        return cp;
    size_t per = cg_qg_packed_bytes(g->m / g->group, kk);
    if ((uint64_t)g->group > SIZE_MAX / (per ? per : 1))
        return NULL;
    size_t bytes = (size_t)g->group * per, sums = (size_t)g->m * sizeof(int32_t);
    if (cg_kernel_input_is_const(k, (size_t)ins[0]) &&
        (!zp || cg_kernel_input_is_const(k, (size_t)ins[1]))) {
        cp = calloc(1, sizeof *cp);
        if (!cp || !(cp->qw = malloc(bytes ? bytes : 1)) || !(cp->qsum = malloc(sums)) ||
            !(cp->qzw = malloc(sums))) {
            conv_packed_free(cp);
            return NULL;
        }
        conv_packed_key(cp, wt, zp, g->group);
        cp->per_group = per;
        conv_q8_fill(wt, zp, g, kk, cp);
        if (cg_kernel_set_state(k, cp, conv_packed_free))
            return cp;
        conv_packed_free(cp); /* no runtime to keep it: pack into scratch */
    }
    memset(tmp, 0, sizeof *tmp);
    tmp->per_group = per;
    tmp->qw = cg_nn_scratch(k, (int64_t)(bytes ? bytes : 1), 1);
    tmp->qsum = cg_nn_scratch(k, g->m, sizeof(int32_t));
    tmp->qzw = cg_nn_scratch(k, g->m, sizeof(int32_t));
    if (!tmp->qw || !tmp->qsum || !tmp->qzw)
        return NULL;
    conv_q8_fill(wt, zp, g, kk, tmp);
    return tmp;
}

static bool conv_taps_init(cg_kernel_ctx *k, const cg_nn_window *win, int64_t kk, int64_t on,
                           conv_taps *t)
{
    int nsp = win->nsp;
    int64_t kn = cg_nn_prod(nsp, win->kernel);
    t->padded = false;
    for (int d = 0; d < nsp; d++)
        t->padded = t->padded || win->pad0[d] || win->pad1[d];
    /* pitches of the layout the taps are read from */
    int64_t dims[CG_MAX_RANK], pitch[CG_MAX_RANK];
    t->plane = 1;
    for (int d = 0; d < nsp; d++) {
        dims[d] = win->in[d] + (t->padded ? win->pad0[d] + win->pad1[d] : 0);
        t->plane *= dims[d];
    }
    pitch[nsp - 1] = 1;
    for (int d = nsp - 2; d >= 0; d--)
        pitch[d] = pitch[d + 1] * dims[d + 1];
    t->off = cg_nn_scratch(k, kk, sizeof(int64_t));
    t->pos = cg_nn_scratch(k, on, sizeof(int64_t));
    if (!t->off || !t->pos)
        return false;
    for (int64_t q = 0; q < kk; q++) {
        int64_t r = q % kn, o = q / kn * t->plane;
        for (int d = nsp - 1; d >= 0; d--) {
            o += (r % win->kernel[d]) * win->dil[d] * pitch[d];
            r /= win->kernel[d];
        }
        t->off[q] = o;
    }
    /* row by row of the last output dim: no division per position (the
     * tables are made every run; this loop was 2% of mobilenet_v2) */
    int64_t last = win->out[nsp - 1], step = win->stride[nsp - 1] * pitch[nsp - 1];
    for (int64_t p0 = 0; last > 0 && p0 < on; p0 += last) {
        int64_t r = p0 / last, base = 0;
        for (int d = nsp - 2; d >= 0; d--) {
            base += (r % win->out[d]) * win->stride[d] * pitch[d];
            r /= win->out[d];
        }
        for (int64_t i = 0; i < last; i++)
            t->pos[p0 + i] = base + i * step;
    }
    return true;
}

static bool window_same(const cg_nn_window *a, const cg_nn_window *b)
{
    if (a->nsp != b->nsp)
        return false;
    for (int d = 0; d < a->nsp; d++)
        if (a->in[d] != b->in[d] || a->out[d] != b->out[d] || a->kernel[d] != b->kernel[d] ||
            a->stride[d] != b->stride[d] || a->dil[d] != b->dil[d] || a->pad0[d] != b->pad0[d] ||
            a->pad1[d] != b->pad1[d])
            return false;
    return true;
}

/* Tables of at most this many entries are kept: beside a bigger conv's
 * GEMM their making is noise, and keeping them would grow the resident
 * memory (a 240x240 output's positions are 460 KB). */
#define CONV_TAPS_KEEP_MAX 8192

/* conv_taps_init, small tables kept in the node's state cp (NULL: none)
 * and reused while the window is the same: they were made at every run
 * (6% of Silero VAD's run, 1% of mobilenet_v3_small's). */
static bool conv_taps_get(cg_kernel_ctx *k, conv_packed *cp, const cg_nn_window *win,
                          int64_t kk, int64_t on, conv_taps *t)
{
    if (cp && cp->taps.off && cp->taps_kk == kk && cp->taps_on == on &&
        window_same(&cp->taps_win, win)) {
        *t = cp->taps;
        return true;
    }
    if (!conv_taps_init(k, win, kk, on, t))
        return false;
    if (!cp || kk + on > CONV_TAPS_KEEP_MAX)
        return true;
    int64_t *off = malloc((size_t)kk * sizeof *off + 1), *pos = malloc((size_t)on * sizeof *pos + 1);
    if (!off || !pos) { /* not kept: this run's tables serve */
        free(off);
        free(pos);
        return true;
    }
    memcpy(off, t->off, (size_t)kk * sizeof *off);
    memcpy(pos, t->pos, (size_t)on * sizeof *pos);
    free(cp->taps.off);
    free(cp->taps.pos);
    cp->taps = *t;
    cp->taps.off = off;
    cp->taps.pos = pos;
    cp->taps_win = *win;
    cp->taps_kk = kk;
    cp->taps_on = on;
    return true;
}

/* The zero-padded copy of a group's input, its channels split over the
 * kernel's threads: on the calling thread alone it was a serial step before
 * every padded convolution's GEMM (resnet18 at two threads: the workers
 * waited through 16 of them). */
typedef struct pad_copy_job {
    const float *x;
    float *dst;
    int64_t c, in_n, plane;
    const cg_nn_window *w;
} pad_copy_job;

static void pad_copy_task(void *arg, int t, int nt)
{
    const pad_copy_job *j = arg;
    int64_t lo, hi;
    cg_kernel_share(j->c, 1, t, nt, &lo, &hi);
    if (lo < hi)
        cg_nn_pad_copy_f32(j->x + lo * j->in_n, hi - lo, j->w, j->dst + lo * j->plane);
}

/* Copies below this many floats stay on the calling thread (a few
 * microseconds: less than handing out the shares). */
#define CONV_PAD_PARALLEL_MIN 32768

static void conv_pad_copy(cg_kernel_ctx *k, const float *x, int64_t c, const cg_nn_window *w,
                          int64_t plane, float *dst)
{
    pad_copy_job j = {x, dst, c, cg_nn_prod(w->nsp, w->in), plane, w};
    if (c > 1 && c * plane >= CONV_PAD_PARALLEL_MIN && cg_kernel_threads(k) > 1)
        cg_kernel_parallel(k, pad_copy_task, &j);
    else
        pad_copy_task(&j, 0, 1);
}

/* y = conv(x, w) + b, every group one convolution GEMM reading the float32
 * input x in place (a zero-padded copy of it when the window pads). The
 * output is sc->y (float32, bias sc->bias) or, for the integer convs, sc->yi
 * (int32, exact, bias sc->bias_i); wzp is the integer convs' weight zero
 * point; ins[0], ins[1] are the node inputs W and wzp come from. */
static cg_status conv_gemm(cg_kernel_ctx *k, const float *x, const cg_tensor *wt,
                           const cg_tensor *wzp, const int *ins, const conv_geom *g,
                           conv_store_ctx *out)
{
    const cg_nn_window *win = &g->w;
    const cg_simd_ops *ops = cg_simd_ops_get(cg_kernel_simd(k));
    int nsp = win->nsp;
    int64_t cg = g->c / g->group, mg = g->m / g->group;
    int64_t kn = cg_nn_prod(nsp, win->kernel), on = cg_nn_prod(nsp, win->out);
    int64_t in_n = cg_nn_prod(nsp, win->in), kk = cg * kn;
    const cg_simd_gemm *gk = cg_pg_choose(ops, mg);
    const float *wpack = conv_weights_packed(k, wt, wzp, ins, g, gk, kk, NULL);
    if (!wpack)
        return cg_kernel_fail(k, CG_NOMEM, "out of scratch memory");
    /* the state is the packing's when it was kept (W constant) */
    conv_packed *cp = cg_kernel_state(k);
    if (cp && cp->data != wpack)
        cp = NULL;
    conv_taps taps;
    if (!conv_taps_get(k, cp, win, kk, on, &taps))
        return cg_kernel_fail(k, CG_NOMEM, "out of scratch memory");
    bool padded = taps.padded;
    int64_t plane = taps.plane;
    const int64_t *off = taps.off, *pos = taps.pos;
    size_t per_group = cg_pg_packed_floats(gk, mg, kk);
    float *xpad = padded ? cg_nn_scratch(k, cg * plane, sizeof(float)) : NULL;
    if (!wpack || (padded && !xpad))
        return cg_kernel_fail(k, CG_NOMEM, "out of scratch memory");
    bool exact = out->yi != NULL;
    conv_store_ctx sc = {ops, NULL, NULL, NULL, NULL, on, out->epi, NULL};
    for (int64_t n = 0; n < g->n; n++) {
        for (int64_t gi = 0; gi < g->group; gi++) {
            const float *xg = x + (n * g->c + gi * cg) * in_n;
            if (padded)
                conv_pad_copy(k, xg, cg, win, plane, xpad);
            if (exact) {
                sc.yi = out->yi + (n * g->m + gi * mg) * on;
                sc.bias_i = out->bias_i ? out->bias_i + gi * mg : NULL;
            } else {
                sc.y = out->y + (n * g->m + gi * mg) * on;
                sc.bias = out->bias ? out->bias + gi * mg : NULL;
                if (out->epi && out->epi->add)
                    sc.add = (const float *)out->epi->add->data + (n * g->m + gi * mg) * on;
            }
            cg_pg_problem p = {gk, wpack + (size_t)gi * per_group, mg, kk, on,
                               padded ? xpad : xg, off, pos, conv_store, &sc,
                               exact ? conv_store_i32 : NULL, 0};
            if (!cg_pg_run(k, &p))
                return cg_kernel_fail(k, CG_NOMEM, "out of scratch memory");
        }
    }
    return CG_OK;
}

/* The activations a pointwise tile does not apply in registers. */
static void conv_pw_finish(void *ctx, float *y, int64_t ldy, int64_t m0, int64_t m1, int64_t p0,
                           int64_t np)
{
    const conv_store_ctx *s = ctx;
    (void)p0;
    for (int64_t m = 0; m < m1 - m0; m++) /* the tile's rows (y at m0, p0), in cache */
        conv_epilogue(s->ops, s->epi, y + m * ldy, NULL, np);
}

/* Whether a float32 conv runs as conv_pointwise: a pointwise window over
 * planes of at least two full tiles. Smaller planes (7x7) waste the tiles'
 * lanes and stay on conv_gemm, which vectorizes over channels: measured on
 * mobilenet_v2's 7x7 layers, 0.40 -> 0.46 ms (960 -> 320 channels) and
 * 0.56 -> 0.63 ms (320 -> 1280) on conv_pointwise. */
static bool conv_pointwise_fits(cg_kernel_ctx *k, const conv_geom *g)
{
    const cg_simd_ops *ops = cg_simd_ops_get(cg_kernel_simd(k));
    const cg_simd_gemm *gk = cg_pg_choose(ops, g->m / g->group);
    return conv_is_pointwise(&g->w) && cg_nn_prod(g->w.nsp, g->w.out) >= 2 * ops->pw.np_max &&
           gk->nr % ops->pw.mr == 0; /* its tiles read the GEMM's panels */
}

/* A pointwise float32 conv (conv_pointwise_fits): every group one
 * cg_pg_pw_run over x in place, the output planes written by the tiles with
 * bias, residual and Relu/Clip in registers (the same bits as conv_gemm's
 * stores: the sums are the same chains, the epilogue the same operations). */
static cg_status conv_pointwise(cg_kernel_ctx *k, const float *x, const cg_tensor *wt,
                                const conv_geom *g, const conv_store_ctx *out)
{
    const cg_simd_ops *ops = cg_simd_ops_get(cg_kernel_simd(k));
    int64_t cg = g->c / g->group, mg = g->m / g->group;
    int64_t on = cg_nn_prod(g->w.nsp, g->w.out);
    static const int ins[2] = {1, -1};
    const cg_simd_gemm *gk = cg_pg_choose(ops, mg); /* conv_gemm's packing */
    const float *wpack = conv_weights_packed(k, wt, NULL, ins, g, gk, cg, NULL);
    if (!wpack)
        return cg_kernel_fail(k, CG_NOMEM, "out of scratch memory");
    size_t per_group = cg_pg_packed_floats(gk, mg, cg);
    const cg_epilogue *epi = out->epi;
    conv_store_ctx sc = {ops, NULL, NULL, NULL, NULL, on, epi, NULL};
    cg_pg_pw_problem p = {&ops->pw, gk, NULL, mg, cg, on, NULL, NULL,
                          {NULL, NULL, CG_SIMD_PW_NONE, 0.0f, 0.0f}, NULL, &sc};
    if (!conv_epi_vector(epi, &p.e.act)) {
        p.finish = conv_pw_finish;
    } else if (p.e.act == CG_SIMD_PW_CLIP) {
        p.e.lo = epi->a;
        p.e.hi = epi->b;
    }
    for (int64_t n = 0; n < g->n; n++) {
        for (int64_t gi = 0; gi < g->group; gi++) {
            int64_t yoff = (n * g->m + gi * mg) * on;
            p.w = wpack + (size_t)gi * per_group;
            p.x = x + (n * g->c + gi * cg) * on;
            p.y = out->y + yoff;
            p.e.bias = out->bias ? out->bias + gi * mg : NULL;
            p.e.add = epi && epi->add ? (const float *)epi->add->data + yoff : NULL;
            if (!cg_pg_pw_run(k, &p))
                return cg_kernel_fail(k, CG_NOMEM, "out of scratch memory");
        }
    }
    return CG_OK;
}

/* ---- float32 Conv of few taps, output row by output row (conv_rows) -------------- */

/* An image's first convolution (3 channels x 3 x 3 = 27 taps, stride 2) on
 * the convolution GEMM spends more on its tiles' gathers and transposes
 * than on its 27 multiply-adds per output: squeezenet1_1's took 0.48 ms
 * against ONNX Runtime's 0.24. conv_rows reads each output row's taps as
 * rows of a zero-padded copy of the input (stride 2: each padded row split
 * into its even then its odd columns, so the taps of consecutive outputs
 * are consecutive floats) and runs the pointwise tiles over them
 * (cg_simd_pw.tile_off): positions in vectors, the output planes written
 * directly with the fused epilogue. Each output is the same float32 chain
 * over the taps in order as on the GEMM, so the bits are the same. */

typedef struct conv_rows_job {
    const cg_simd_ops *ops;
    const float *x;       /* this image's input planes */
    float *xs;            /* the padded (and split) copy: c planes of hp x wp */
    const cg_nn_window *w;
    int64_t c, hp, wp;
    /* the row phase */
    const float *wpack;   /* packed for the GEMM kernel of nr channels */
    int64_t nr, m, kk;
    const int64_t *off;   /* tap q at xs + off[q] + (output row base) + ow */
    float *y;             /* this image's output planes */
    const float *bias;
    const float *add;     /* this image's residual, or NULL */
    cg_simd_pw_act act;
    float lo, hi;
    conv_store_ctx *finish; /* the epilogue the tiles do not apply, or NULL */
} conv_rows_job;

/* Padded rows [lo, hi) of all the planes at row stride 2: zeros, then the
 * input row's values split into even and odd columns (stride 1 takes the
 * GEMM's padded copy, conv_pad_copy). */
static void conv_rows_split_task(void *arg, int t, int nt)
{
    const conv_rows_job *j = arg;
    const cg_nn_window *w = j->w;
    int64_t lo, hi, in_h = w->in[0], in_w = w->in[1], pt = w->pad0[0], pl = w->pad0[1];
    int64_t half = (j->wp + 1) / 2; /* where the odd columns begin */
    cg_kernel_share(j->c * j->hp, 1, t, nt, &lo, &hi);
    for (int64_t r = lo; r < hi; r++) {
        int64_t ci = r / j->hp, pr = r % j->hp, ir = pr - pt;
        float *d = j->xs + r * j->wp;
        memset(d, 0, (size_t)j->wp * sizeof(float));
        if (ir < 0 || ir >= in_h)
            continue;
        const float *src = j->x + (ci * in_h + ir) * in_w;
        /* padded column col = u + pl: even ones at col / 2, odd ones at
         * half + col / 2; two strided loops, not a branch per element */
        for (int64_t col = pl + (pl & 1); col < pl + in_w; col += 2)
            d[col / 2] = src[col - pl];
        for (int64_t col = pl + 1 - (pl & 1); col < pl + in_w; col += 2)
            d[half + col / 2] = src[col - pl];
    }
}

/* Output rows [lo, hi) of every channel: per row, channel blocks of the
 * tile's mr, positions in tiles of np_max. */
static void conv_rows_task(void *arg, int t, int nt)
{
    const conv_rows_job *j = arg;
    const cg_simd_pw *pw = &j->ops->pw;
    const cg_nn_window *w = j->w;
    int64_t oh_n = w->out[0], ow_n = w->out[1], on = oh_n * ow_n, lo, hi;
    cg_kernel_share(oh_n, 1, t, nt, &lo, &hi);
    for (int64_t oh = lo; oh < hi; oh++) {
        const float *xrow = j->xs + oh * w->stride[0] * j->wp;
        for (int64_t m0 = 0; m0 < j->m; m0 += pw->mr) {
            int64_t m1 = m0 + pw->mr < j->m ? m0 + pw->mr : j->m;
            const float *wt = j->wpack + m0 / j->nr * j->nr * j->kk + m0 % j->nr;
            for (int64_t p0 = 0; p0 < ow_n; p0 += pw->np_max) {
                int64_t np = ow_n - p0 < pw->np_max ? ow_n - p0 : pw->np_max;
                int64_t at = m0 * on + oh * ow_n + p0;
                cg_simd_pw_epi e = {j->bias ? j->bias + m0 : NULL, j->add ? j->add + at : NULL,
                                    j->act, j->lo, j->hi};
                pw->tile_off(j->y + at, on, wt, j->nr, xrow + p0, j->off, j->kk, m1 - m0, np,
                             &e);
                if (j->finish)
                    conv_pw_finish(j->finish, j->y + at, on, m0, m1, p0, np);
            }
        }
    }
}

/* Whether a float32 conv runs as conv_rows: one group, 2-D, at most
 * CG_CONV_ROWS_MAX_TAPS taps, stride 1 along the row (any dilation) or 2
 * (dilation 1), and channel blocks inside the GEMM packing's panels. */
static bool conv_rows_fits(cg_kernel_ctx *k, const conv_geom *g)
{
    const cg_nn_window *w = &g->w;
    const cg_simd_ops *ops = cg_simd_ops_get(cg_kernel_simd(k));
    const cg_simd_gemm *gk = cg_pg_choose(ops, g->m);
    return g->group == 1 && w->nsp == 2 && w->kernel[0] * w->kernel[1] > 1 &&
           g->c * w->kernel[0] * w->kernel[1] <= CG_CONV_ROWS_MAX_TAPS &&
           (w->stride[1] == 1 || (w->stride[1] == 2 && w->dil[1] == 1)) &&
           gk->nr % ops->pw.mr == 0;
}

static cg_status conv_rows(cg_kernel_ctx *k, const float *x, const cg_tensor *wt,
                           const conv_geom *g, const conv_store_ctx *out)
{
    const cg_nn_window *w = &g->w;
    const cg_simd_ops *ops = cg_simd_ops_get(cg_kernel_simd(k));
    int64_t kh_n = w->kernel[0], kw_n = w->kernel[1], kk = g->c * kh_n * kw_n;
    int64_t hp = w->in[0] + w->pad0[0] + w->pad1[0], wp = w->in[1] + w->pad0[1] + w->pad1[1];
    int64_t on = w->out[0] * w->out[1], in_n = w->in[0] * w->in[1];
    static const int ins[2] = {1, -1};
    const cg_simd_gemm *gk = cg_pg_choose(ops, g->m); /* conv_gemm's packing */
    const float *wpack = conv_weights_packed(k, wt, NULL, ins, g, gk, kk, NULL);
    /* the copy, plus a row and a tile's vectors of slack: a short tile reads
     * whole vectors past its row's end (lanes that are not stored) */
    int64_t xs_n = g->c * hp * wp + wp + ops->pw.np_max;
    float *xs = cg_nn_scratch(k, xs_n, sizeof(float));
    int64_t *off = cg_nn_scratch(k, kk, sizeof(int64_t));
    if (!wpack || !xs || !off)
        return cg_kernel_fail(k, CG_NOMEM, "out of scratch memory");
    memset(xs + g->c * hp * wp, 0, (size_t)(wp + ops->pw.np_max) * sizeof(float));
    int64_t half = (wp + 1) / 2;
    for (int64_t q = 0; q < kk; q++) {
        int64_t ci = q / (kh_n * kw_n), kh = q / kw_n % kh_n, kw = q % kw_n;
        int64_t col = w->stride[1] == 2 ? ((kw & 1) ? half + kw / 2 : kw / 2) : kw * w->dil[1];
        off[q] = (ci * hp + kh * w->dil[0]) * wp + col;
    }
    const cg_epilogue *epi = out->epi;
    conv_store_ctx fin = {ops, NULL, NULL, NULL, NULL, on, epi, NULL};
    conv_rows_job j = {ops, NULL, xs, w, g->c, hp, wp, wpack, gk->nr, g->m, kk, off, NULL,
                       out->bias, NULL, CG_SIMD_PW_NONE, 0.0f, 0.0f, NULL};
    if (!conv_epi_vector(epi, &j.act)) {
        j.finish = &fin;
    } else if (j.act == CG_SIMD_PW_CLIP) {
        j.lo = epi->a;
        j.hi = epi->b;
    }
    for (int64_t n = 0; n < g->n; n++) {
        j.x = x + n * g->c * in_n;
        j.y = out->y + n * g->m * on;
        j.add = epi && epi->add ? (const float *)epi->add->data + n * g->m * on : NULL;
        if (w->stride[1] == 2)
            cg_kernel_parallel_work(k, (double)(g->c * hp * wp), conv_rows_split_task, &j);
        else
            conv_pad_copy(k, j.x, g->c, w, hp * wp, xs);
        cg_kernel_parallel_work(k, (double)g->m * (double)kk * (double)on, conv_rows_task, &j);
    }
    return CG_OK;
}

/* ---- float64 Conv on the float64 convolution GEMM (packgemm.h) -------------------- */

typedef struct conv_store_f64_ctx {
    double *y;          /* output planes of this image and group */
    const double *bias; /* per output channel of the group, or NULL */
    int64_t plane;
} conv_store_f64_ctx;

/* Tile [position][channel] -> planes y[channel][position], plus bias. */
static void conv_store_f64(void *ctx, const double *c, int64_t ld, int64_t p0, int64_t np,
                           int64_t m0, int64_t m1)
{
    const conv_store_f64_ctx *s = ctx;
    for (int64_t m = m0; m < m1; m++) {
        const double *cm = c + (m - m0);
        double *restrict yr = s->y + m * s->plane + p0;
        double bv = s->bias ? s->bias[m] : 0.0;
        for (int64_t i = 0; i < np; i++)
            yr[i] = cm[i * ld] + bv;
    }
}

/* conv_weights_packed for float64 W (no conversion, no sharing): the
 * node's state when W is a constant of a float64 model, else packed into
 * scratch for this call. In the float64 mode W is the promoted copy of a
 * float initializer, made in scratch for every step anyway (frame.c,
 * promoted_input): packing it again per call costs one more pass over it,
 * where keeping the packs held twice the model's weights in doubles for the
 * runtime's life (resnet50: 204 MB, faulted in at the first run) beside
 * every other runtime of a gate. */
static const double *conv_weights_packed_f64(cg_kernel_ctx *k, const cg_tensor *wt,
                                             const conv_geom *g, const cg_simd_dgemm *dk,
                                             int64_t kk)
{
    int64_t mg = g->m / g->group;
    conv_packed *cp = cg_kernel_state(k);
    if (cp && cp->dk == dk && cp->data64 && cp->w_data == wt->data &&
        cp->w_dtype == wt->dtype && cp->rank == wt->rank && cp->group == g->group &&
        memcmp(cp->w_dims, wt->dims, (size_t)wt->rank * sizeof(int64_t)) == 0)
        return cp->data64;
    size_t per = cg_pg_packed_doubles(dk, mg, kk);
    if ((uint64_t)g->group > SIZE_MAX / sizeof(double) / (per ? per : 1))
        return NULL;
    size_t bytes = (size_t)g->group * per * sizeof(double);
    bool keep = cg_kernel_input_is_const(k, 1) &&
                cg_kernel_float_dtype(k, CG_DTYPE_FLOAT) != CG_DTYPE_DOUBLE;
    double *data = keep ? malloc(bytes ? bytes : 1)
                        : cg_nn_scratch(k, (int64_t)((size_t)g->group * per), sizeof(double));
    if (!data)
        return NULL;
    if (wt->dtype == CG_DTYPE_FLOAT) { /* stored float32 (cg_kernel_input_stored64) */
        const void *src = cg_kernel_input_source(k, 1);
        const uint8_t *wb = src ? src : wt->data;
        for (int64_t gi = 0; gi < g->group; gi++)
            cg_pg_pack_f64_from_f32(dk, wb + (size_t)(gi * mg * kk) * sizeof(float), kk, mg, kk,
                                    data + (size_t)gi * per);
    } else {
        for (int64_t gi = 0; gi < g->group; gi++)
            cg_pg_pack_f64(dk, (const double *)wt->data + gi * mg * kk, kk, mg, kk,
                           data + (size_t)gi * per);
    }
    if (!keep)
        return data;
    cp = calloc(1, sizeof *cp);
    if (!cp) {
        free(data);
        return NULL;
    }
    conv_packed_key(cp, wt, NULL, g->group);
    cp->dk = dk;
    cp->per_group = per;
    cp->data64 = data;
    if (!cg_kernel_set_state(k, cp, conv_packed_free)) {
        /* no runtime to keep it: use it once */
        double *copy = cg_nn_scratch(k, (int64_t)((size_t)g->group * per), sizeof(double));
        if (copy)
            memcpy(copy, data, bytes);
        conv_packed_free(cp);
        return copy;
    }
    return data;
}

/* y = conv(x, w) + bias in float64, every group one float64 convolution
 * GEMM reading x in place (a zero-padded copy when the window pads): each
 * output is one double sum over the group's taps in order, then + bias. */
static cg_status conv_gemm_f64(cg_kernel_ctx *k, const double *x, const cg_tensor *wt,
                               const double *bias, const conv_geom *g, const cg_simd_dgemm *dk,
                               double *y)
{
    const cg_nn_window *win = &g->w;
    int nsp = win->nsp;
    int64_t cg = g->c / g->group, mg = g->m / g->group;
    int64_t on = cg_nn_prod(nsp, win->out), in_n = cg_nn_prod(nsp, win->in);
    int64_t kk = cg * cg_nn_prod(nsp, win->kernel);
    conv_taps taps;
    if (!conv_taps_init(k, win, kk, on, &taps))
        return cg_kernel_fail(k, CG_NOMEM, "out of scratch memory");
    const double *wpack = conv_weights_packed_f64(k, wt, g, dk, kk);
    size_t per_group = cg_pg_packed_doubles(dk, mg, kk);
    double *xpad = taps.padded ? cg_nn_scratch(k, cg * taps.plane, sizeof(double)) : NULL;
    if (!wpack || (taps.padded && !xpad))
        return cg_kernel_fail(k, CG_NOMEM, "out of scratch memory");
    conv_store_f64_ctx sc = {NULL, NULL, on};
    for (int64_t n = 0; n < g->n; n++) {
        for (int64_t gi = 0; gi < g->group; gi++) {
            const double *xg = x + (n * g->c + gi * cg) * in_n;
            if (taps.padded)
                cg_nn_pad_copy_f64(xg, cg, win, xpad);
            sc.y = y + (n * g->m + gi * mg) * on;
            sc.bias = bias ? bias + gi * mg : NULL;
            cg_pg_problem_f64 p = {dk,       wpack + (size_t)gi * per_group,
                                   mg,       kk,
                                   on,       taps.padded ? xpad : xg,
                                   taps.off, taps.pos,
                                   conv_store_f64, &sc};
            if (!cg_pg_run_f64(k, &p))
                return cg_kernel_fail(k, CG_NOMEM, "out of scratch memory");
        }
    }
    return CG_OK;
}

/* ---- float32 depthwise Conv ------------------------------------------------------- */

typedef struct dw_job {
    const float *x, *w, *bias;
    float *y;
    int64_t planes, mg, m, in_h, in_w, pad_h, pad_w, pitch, rows;
    int64_t kh, kw, oh, ow, sh, sw, dh, dw;
    const cg_simd_ops *ops;
    const cg_epilogue *epi;
    float **buf; /* per thread: one padded plane plus slack */
} dw_job;

static void dw_task(void *arg, int t, int nt)
{
    const dw_job *j = arg;
    int64_t lo, hi;
    float *xp = j->buf[t];
    cg_kernel_share(j->planes, 1, t, nt, &lo, &hi);
    for (int64_t c = lo; c < hi; c++) {
        /* the zero border and slack were cleared once; copy the interior */
        const float *xc = j->x + c * j->in_h * j->in_w;
        for (int64_t r = 0; r < j->in_h; r++)
            memcpy(xp + (r + j->pad_h) * j->pitch + j->pad_w, xc + r * j->in_w,
                   (size_t)j->in_w * sizeof(float));
        for (int64_t m = 0; m < j->mg; m++) {
            int64_t oc = c * j->mg + m, wc = oc % j->m; /* weights repeat per image */
            j->ops->dw_plane(j->y + oc * j->oh * j->ow, xp, j->pitch, j->w + wc * j->kh * j->kw,
                             j->kh, j->kw, j->oh, j->ow, j->sh, j->sw, j->dh, j->dw,
                             j->bias ? j->bias[wc] : 0.0f);
            if (j->epi)
                conv_epilogue(j->ops, j->epi, j->y + oc * j->oh * j->ow,
                              j->epi->add ? (const float *)j->epi->add->data + oc * j->oh * j->ow
                                          : NULL,
                              j->oh * j->ow);
        }
    }
}

/* Depthwise (one input channel per group, any multiplier), 1-D or 2-D:
 * each channel is copied into a zero-padded plane and convolved there by
 * the level's dw_plane, channels split over threads. */
static cg_status conv_depthwise_f32(cg_kernel_ctx *k, const float *x, const float *w,
                                    const float *bias, float *y, const conv_geom *g,
                                    const cg_epilogue *epi)
{
    const cg_nn_window *win = &g->w;
    bool two = win->nsp == 2;
    dw_job j;
    j.x = x;
    j.w = w;
    j.bias = bias;
    j.y = y;
    j.ops = cg_simd_ops_get(cg_kernel_simd(k));
    j.epi = epi;
    j.planes = g->n * g->group; /* plane c makes output channels c*mg.. */
    j.mg = g->m / g->group;
    j.m = g->m;
    j.in_h = two ? win->in[0] : 1;
    j.in_w = win->in[two ? 1 : 0];
    j.pad_h = two ? win->pad0[0] : 0;
    j.pad_w = win->pad0[two ? 1 : 0];
    j.pitch = j.in_w + j.pad_w + win->pad1[two ? 1 : 0];
    j.rows = j.in_h + j.pad_h + (two ? win->pad1[0] : 0);
    j.kh = two ? win->kernel[0] : 1;
    j.kw = win->kernel[two ? 1 : 0];
    j.oh = two ? win->out[0] : 1;
    j.ow = win->out[two ? 1 : 0];
    j.sh = two ? win->stride[0] : 1;
    j.sw = win->stride[two ? 1 : 0];
    j.dh = two ? win->dil[0] : 1;
    j.dw = win->dil[two ? 1 : 0];
    int threads = cg_kernel_threads(k);
    j.buf = cg_kernel_scratch(k, (size_t)threads * sizeof *j.buf);
    if (!j.buf)
        return cg_kernel_fail(k, CG_NOMEM, "out of scratch memory");
    size_t floats = (size_t)(j.rows * j.pitch) + 4 * CG_SIMD_DW_SLACK;
    for (int t = 0; t < threads; t++) {
        j.buf[t] = cg_kernel_scratch(k, floats * sizeof(float));
        if (!j.buf[t])
            return cg_kernel_fail(k, CG_NOMEM, "out of scratch memory");
        memset(j.buf[t], 0, floats * sizeof(float));
    }
    cg_kernel_parallel_work(k, (double)j.planes * (double)j.mg * (double)(j.oh * j.ow) *
                                   (double)(j.kh * j.kw), dw_task, &j);
    return CG_OK;
}

/* ---- fp16 sums (CG_KPREC_FP16_ACC16, CG_KPREC_FP16_SUM11) ---------------------- */

/* A GPU delegate computing in F16 keeps each output's running sum in fp16:
 * TFLite GPU's ConvGeneric (tensorflow/lite/delegates/gpu/common/tasks/
 * conv_generic.cc, GenerateConv) declares its accumulators ACCUM_FLT4,
 * which GetCommonOpenCLDefines (delegates/gpu/cl/cl_operation.cc) defines as
 * half4 at CalculationsPrecision::F16 and float4 at F32_F16; it adds each
 * product weight * src in that type, over the kernel's taps (ky, kx outer)
 * and, within a tap, the input channels, then converts the sum to FLT and
 * adds the bias. Here every product and partial sum is rounded by r16
 * (cg_fp16_round: fp16, overflowing to inf; cg_fp16_round_significand: the
 * F16 devices' floor, fp16's significand without its range), in that order,
 * and the bias is added to the rounded sum. */
typedef struct conv16_job {
    const cg_simd_ops *ops;
    /* x channels last ([n][position][channel]) and w, per group, blocks of
     * `lanes` output channels, each [tap][channel of the group][lane]
     * (lanes past the group's channels 0): float32 for sum16_f32's chains
     * (lanes CG_SIMD_SUM16F_LANES) where every value is one
     * cg_fp16_chain_exact takes, else float64 for sum16_f64's (lanes
     * CG_SIMD_SUM16_LANES); the same values either way */
    const float *xf, *wf;
    const double *xd, *wd;
    int lanes;
    const double *b;
    cg_tensor *y;
    const conv_geom *g;
    bool range;          /* cg_fp16_round (else cg_fp16_round_significand) */
    const int64_t *taps; /* per tap, its index along each spatial dim */
    int64_t kn, in_plane, out_plane, cg, mg, nb;
} conv16_job;

/* Where output o's tap reads its input position (false: in the padding). */
static bool conv16_tap_pos(const cg_nn_window *w, const int64_t *od, const int64_t *kd,
                           int64_t *pos)
{
    int64_t at = 0;
    for (int d = 0; d < w->nsp; d++) {
        int64_t i = od[d] * w->stride[d] - w->pad0[d] + kd[d] * w->dil[d];
        if (i < 0 || i >= w->in[d])
            return false;
        at = at * w->in[d] + i;
    }
    *pos = at;
    return true;
}

/* One tap's channels of np outputs, reading their input positions pos[p]
 * in the image xoff (element offset), from acc row r0; the weights at
 * element offset woff. */
static void conv16_sum(const conv16_job *j, cg_simd_sum16_acc *acc, int r0, int np, int64_t xoff,
                       const int64_t *pos, int64_t woff, int nl)
{
    enum { R = CG_SIMD_SUM16_ROWS };
    if (j->xf) {
        const float *a[R];
        for (int p = 0; p < np; p++)
            a[p] = j->xf + xoff + pos[p] * j->g->c;
        j->ops->sum16_f32(acc->f + r0 * j->lanes, np, a, j->wf + woff, j->lanes, j->cg, nl,
                          j->range);
    } else {
        const double *a[R];
        for (int p = 0; p < np; p++)
            a[p] = j->xd + xoff + pos[p] * j->g->c;
        j->ops->sum16_f64(acc->d + r0 * j->lanes, np, a, j->wd + woff, j->lanes, j->cg, nl,
                          j->range);
    }
}

/* One share per (image, group, block of output channels): the outputs
 * CG_SIMD_SUM16_ROWS at a time, each tap's channels as one chain call
 * over the block's lanes, for the positions whose window has that tap
 * inside the image (the zero border adds products of 0, so it is skipped,
 * as the delegate's loops do), all of them in one call where they all do.
 * Each output's chain is the taps in order, within a tap its channels in
 * order: the scalar chain's values. */
static void conv16_task(void *arg, int t, int nt)
{
    enum { R = CG_SIMD_SUM16_ROWS };
    const conv16_job *j = arg;
    const cg_nn_window *w = &j->g->w;
    const int L = j->lanes;
    int64_t lo, hi, groups = j->g->group;
    cg_kernel_share(j->g->n * groups * j->nb, 1, t, nt, &lo, &hi);
    for (int64_t unit = lo; unit < hi; unit++) {
        int64_t n = unit / (groups * j->nb), grp = unit / j->nb % groups, blk = unit % j->nb;
        int64_t oc0 = grp * j->mg + blk * L;
        int nl = (int)(j->mg - blk * L < L ? j->mg - blk * L : L);
        int64_t xoff = n * j->in_plane * j->g->c + grp * j->cg;
        int64_t wb = (grp * j->nb + blk) * j->kn * j->cg * L;
        for (int64_t o0 = 0; o0 < j->out_plane; o0 += R) {
            int np = (int)(j->out_plane - o0 < R ? j->out_plane - o0 : R);
            int64_t od[R][CG_MAX_RANK];
            cg_simd_sum16_acc acc;
            memset(&acc, 0, sizeof acc);
            for (int p = 0; p < np; p++) {
                int64_t rest = o0 + p;
                for (int d = w->nsp - 1; d >= 0; d--) {
                    od[p][d] = rest % w->out[d];
                    rest /= w->out[d];
                }
            }
            for (int64_t tap = 0; tap < j->kn; tap++) {
                const int64_t *kd = j->taps + tap * w->nsp;
                int64_t woff = wb + tap * j->cg * L, pos[R];
                bool all = true, in[R];
                for (int p = 0; p < np; p++) {
                    pos[p] = 0;
                    in[p] = conv16_tap_pos(w, od[p], kd, &pos[p]);
                    all = all && in[p];
                }
                if (all) {
                    conv16_sum(j, &acc, 0, np, xoff, pos, woff, nl);
                    continue;
                }
                for (int p = 0; p < np; p++)
                    if (in[p])
                        conv16_sum(j, &acc, p, 1, xoff, &pos[p], woff, nl);
            }
            for (int p = 0; p < np; p++)
                for (int l = 0; l < nl; l++) {
                    int64_t oc = oc0 + l;
                    double v = (j->xf ? (double)acc.f[p * L + l] : acc.d[p * L + l]) +
                               (j->b ? j->b[oc] : 0.0);
                    cg_tensor_set_f64(j->y, (n * j->g->m + oc) * j->out_plane + o0 + p,
                                      j->range ? cg_fp16_round(v) : cg_fp16_round_significand(v));
                }
        }
    }
}

/* x channels last and w in blocks of j->lanes (conv16_job): into xf and wf
 * where those are given, false as soon as a value is not one the float32
 * chains take exactly; else into xd and wd. */
static bool conv16_copy(const conv16_job *j, const cg_tensor *x, const cg_tensor *wt, float *xf,
                        float *wf, double *xd, double *wd, int64_t wn)
{
    for (int64_t n = 0; n < j->g->n; n++)
        for (int64_t c = 0; c < j->g->c; c++)
            for (int64_t p = 0; p < j->in_plane; p++) {
                double v = cg_tensor_get_f64(x, (n * j->g->c + c) * j->in_plane + p);
                int64_t at = (n * j->in_plane + p) * j->g->c + c;
                if (!xf)
                    xd[at] = v;
                else if (!cg_fp16_chain_f32(v, j->range, &xf[at]))
                    return false;
            }
    if (wf)
        memset(wf, 0, (size_t)wn * sizeof *wf);
    else
        memset(wd, 0, (size_t)wn * sizeof *wd);
    for (int64_t m = 0; m < j->g->m; m++) {
        int64_t grp = m / j->mg, blk = m % j->mg / j->lanes, lane = m % j->mg % j->lanes;
        int64_t wb = (grp * j->nb + blk) * j->kn * j->cg * j->lanes;
        for (int64_t c = 0; c < j->cg; c++)
            for (int64_t tap = 0; tap < j->kn; tap++) {
                double v = cg_tensor_get_f64(wt, (m * j->cg + c) * j->kn + tap);
                int64_t at = wb + (tap * j->cg + c) * j->lanes + lane;
                if (!wf)
                    wd[at] = v;
                else if (!cg_fp16_chain_f32(v, j->range, &wf[at]))
                    return false;
            }
    }
    return true;
}

/* The weight blocks' element count at j->lanes lanes (false: overflow). */
static bool conv16_blocks(conv16_job *j, int lanes, int64_t *wn)
{
    j->lanes = lanes;
    j->nb = (j->mg + lanes - 1) / lanes;
    return !__builtin_mul_overflow(j->g->group * j->nb * lanes, j->kn * j->cg, wn);
}

/* Gathered chains: the float32 chains with the output positions in the
 * lanes, for the windows whose output channels are too few for
 * conv16_task's lanes (a depthwise group has one: 31 of 32 lanes empty, a
 * call per tap) or that it does not run (ConvTranspose, whose chains were
 * scalar). Output position l of channel oc sums, in order over the rows
 * i = tap * cg + ci (taps outer, the group's input channels inner, as the
 * delegate's loops and the scalar chains go), r(w[oc][i] * x at the
 * position the tap reads for l), a tap that reads no input (the padding;
 * for ConvTranspose, a tap that does not meet l) reading 0: r(0 * w) is a
 * zero, and adding a zero leaves a running sum as it is (a running sum is
 * never -0: it starts at +0, and fp16 values sum to -0 only from -0 + -0),
 * so the values are those of the chains that skip it. A chunk of
 * positions' rows is gathered per thread ([row][position], the chains'
 * B), which up to CG_SIMD_SUM16_ROWS output channels of the group share
 * (A: their weights over the rows); the bias is added to the rounded sum
 * and rounded. */
typedef struct g16_job {
    const cg_simd_ops *ops;
    const float *x;      /* [n][c][x_plane] */
    const float *w;      /* [m][kn * cg], row i = tap * cg + ci */
    const double *b;
    cg_tensor *y;        /* [n][m][y_plane] */
    const int64_t *idx;  /* [kn][y_plane]: the x position a tap reads, -1: none */
    float *cols;         /* per thread, [kn * cg][chunk] */
    int64_t n, c, m, group, kn, cg, mg, x_plane, y_plane, chunk;
    bool range;
} g16_job;

static void g16_task(void *arg, int t, int nt)
{
    enum { R = CG_SIMD_SUM16_ROWS, L = CG_SIMD_SUM16F_LANES };
    const g16_job *d = arg;
    int64_t rows_n = d->kn * d->cg, lo, hi;
    float *cols = d->cols + (int64_t)t * rows_n * d->chunk;
    cg_kernel_share(d->n * d->group, 1, t, nt, &lo, &hi);
    for (int64_t unit = lo; unit < hi; unit++) {
        int64_t n = unit / d->group, grp = unit % d->group;
        const float *xg = d->x + (n * d->c + grp * d->cg) * d->x_plane;
        for (int64_t pos0 = 0; pos0 < d->y_plane; pos0 += d->chunk) {
            int64_t cl = d->y_plane - pos0 < d->chunk ? d->y_plane - pos0 : d->chunk;
            for (int64_t tap = 0; tap < d->kn; tap++) {
                const int64_t *ix = d->idx + tap * d->y_plane + pos0;
                for (int64_t ci = 0; ci < d->cg; ci++) {
                    float *row = cols + (tap * d->cg + ci) * d->chunk;
                    const float *xc = xg + ci * d->x_plane;
                    for (int64_t l = 0; l < cl; l++)
                        row[l] = ix[l] >= 0 ? xc[ix[l]] : 0.0f;
                }
            }
            for (int64_t m0 = 0; m0 < d->mg; m0 += R) {
                int np = (int)(d->mg - m0 < R ? d->mg - m0 : R);
                const float *rows[R];
                for (int p = 0; p < np; p++)
                    rows[p] = d->w + (grp * d->mg + m0 + p) * rows_n;
                for (int64_t l0 = 0; l0 < cl; l0 += L) {
                    int nl = (int)(cl - l0 < L ? cl - l0 : L);
                    float acc[R * L] = {0};
                    d->ops->sum16_f32(acc, np, rows, cols + l0, d->chunk, rows_n, nl, d->range);
                    for (int p = 0; p < np; p++) {
                        int64_t oc = grp * d->mg + m0 + p;
                        for (int l = 0; l < nl; l++) {
                            double v = (double)acc[p * L + l] + (d->b ? d->b[oc] : 0.0);
                            cg_tensor_set_f64(d->y, (n * d->m + oc) * d->y_plane + pos0 + l0 + l,
                                              d->range ? cg_fp16_round(v)
                                                       : cg_fp16_round_significand(v));
                        }
                    }
                }
            }
        }
    }
}

/* Runs d (x, w, b, y, idx and the sizes set) on per-thread rows of at
 * most about 1 MiB each: false where that scratch is not there. */
static bool g16_run(cg_kernel_ctx *k, g16_job *d)
{
    enum { L = CG_SIMD_SUM16F_LANES };
    int64_t rows_n = d->kn * d->cg, cols_n;
    int threads = cg_kernel_threads(k);
    d->chunk = ((int64_t)1 << 18) / (rows_n > 0 ? rows_n : 1) / L * L;
    d->chunk = d->chunk < L ? L : d->chunk > 512 ? 512 : d->chunk;
    if (__builtin_mul_overflow(rows_n, d->chunk, &cols_n) ||
        __builtin_mul_overflow(cols_n, (int64_t)(threads > 0 ? threads : 1), &cols_n) ||
        !(d->cols = cg_nn_scratch(k, cols_n, sizeof *d->cols)))
        return false;
    cg_kernel_parallel_work(k, (double)d->y->numel * (double)rows_n, g16_task, d);
    return true;
}

/* n values of t as float32 into out: false as soon as one is not a value
 * the float32 chains take exactly. */
static bool g16_copy(const cg_tensor *t, int64_t n, bool range, float *out)
{
    for (int64_t i = 0; i < n; i++)
        if (!cg_fp16_chain_f32(cg_tensor_get_f64(t, i), range, &out[i]))
            return false;
    return true;
}

static bool convt16_tap_pos(const cg_nn_window *w, const int64_t *od, const int64_t *kd,
                            int64_t *pos);

/* idx[tap][o] for the plane of extent ext (w->out for a Conv, w->in for
 * a ConvTranspose's adjoint window): the input position tap reads at
 * output position o, or -1 (the padding; a tap that does not meet o). */
static void g16_index(int64_t *idx, const cg_nn_window *w, const int64_t *taps, int64_t kn,
                      int64_t plane, bool transposed)
{
    const int64_t *ext = transposed ? w->in : w->out;
    for (int64_t o = 0; o < plane; o++) {
        int64_t od[CG_MAX_RANK], rest = o;
        for (int d = w->nsp - 1; d >= 0; d--) {
            od[d] = rest % ext[d];
            rest /= ext[d];
        }
        for (int64_t tap = 0; tap < kn; tap++) {
            const int64_t *kd = taps + tap * w->nsp;
            int64_t pos = 0;
            bool in = transposed ? convt16_tap_pos(w, od, kd, &pos) : conv16_tap_pos(w, od, kd, &pos);
            idx[tap * plane + o] = in ? pos : -1;
        }
    }
}

/* The depthwise case of conv_sum16 (j: its job, taps and geometry set):
 * false where an operand is not one the float32 chains take exactly, or
 * the scratch is not there (conv_sum16's own path then runs). */
static bool conv16_depthwise(cg_kernel_ctx *k, const conv16_job *j, const cg_tensor *x,
                             const cg_tensor *wt)
{
    int64_t idx_n, wn = j->g->m * j->kn;
    if (__builtin_mul_overflow(j->kn, j->out_plane, &idx_n))
        return false;
    float *xf = cg_nn_scratch(k, x->numel, sizeof *xf);
    float *wf = xf ? cg_nn_scratch(k, wn, sizeof *wf) : NULL;
    int64_t *idx = wf ? cg_nn_scratch(k, idx_n, sizeof *idx) : NULL;
    if (!idx || !g16_copy(x, x->numel, j->range, xf) || !g16_copy(wt, wn, j->range, wf))
        return false;
    g16_index(idx, &j->g->w, j->taps, j->kn, j->out_plane, false);
    g16_job d = {j->ops, xf, wf, j->b, j->y, idx, NULL, j->g->n, j->g->c, j->g->m,
                 j->g->group, j->kn, 1, j->mg, j->in_plane, j->out_plane, 0, j->range};
    return g16_run(k, &d);
}

static cg_status conv_sum16(cg_kernel_ctx *k, const cg_tensor *x, const cg_tensor *wt,
                            const cg_tensor *b, const conv_geom *g, cg_tensor *y)
{
    conv16_job j;
    memset(&j, 0, sizeof j);
    j.ops = cg_simd_ops_get(cg_kernel_simd(k));
    j.kn = cg_nn_prod(g->w.nsp, g->w.kernel);
    j.in_plane = cg_nn_prod(g->w.nsp, g->w.in);
    j.out_plane = cg_nn_prod(g->w.nsp, g->w.out);
    j.cg = g->c / g->group;
    j.mg = g->m / g->group;
    j.g = g;
    j.y = y;
    j.range = k->precision != CG_KPREC_FP16_SUM11;
    int64_t *taps = cg_nn_scratch(k, j.kn * g->w.nsp, sizeof *taps);
    j.b = b ? cg_nn_as_f64(k, b) : NULL;
    if (!taps || (b && !j.b))
        return cg_kernel_fail(k, CG_NOMEM, "out of scratch memory");
    for (int64_t tap = 0; tap < j.kn; tap++)
        for (int64_t d = g->w.nsp - 1, rest = tap; d >= 0; d--) {
            taps[tap * g->w.nsp + d] = rest % g->w.kernel[d];
            rest /= g->w.kernel[d];
        }
    j.taps = taps;
    /* channels innermost, so each tap's chain reads both operands in
     * order (the values are the same; only the layout changes); float32
     * where the operands allow (the fp16 emulation's stored values always
     * do): the same values at 16 lanes a vector */
    if (j.ops->sum16_f32 && j.cg == 1 && j.kn < ((int64_t)1 << 40) &&
        conv16_depthwise(k, &j, x, wt))
        return cg_kernel_check_time(k);
    int64_t wn;
    /* a chain runs over every tap's channels: kn * cg terms (the weight's
     * element count bounds the product) */
    if (j.ops->sum16_f32 && j.kn * j.cg < ((int64_t)1 << 40) &&
        conv16_blocks(&j, CG_SIMD_SUM16F_LANES, &wn)) {
        float *xc = cg_nn_scratch(k, x->numel, sizeof *xc);
        float *wc = xc ? cg_nn_scratch(k, wn, sizeof *wc) : NULL;
        if (wc && conv16_copy(&j, x, wt, xc, wc, NULL, NULL, wn)) {
            j.xf = xc;
            j.wf = wc;
        }
    }
    if (!j.xf) {
        double *xc = conv16_blocks(&j, CG_SIMD_SUM16_LANES, &wn)
                         ? cg_nn_scratch(k, x->numel, sizeof *xc)
                         : NULL;
        double *wc = xc ? cg_nn_scratch(k, wn, sizeof *wc) : NULL;
        if (!wc)
            return cg_kernel_fail(k, CG_NOMEM, "out of scratch memory");
        conv16_copy(&j, x, wt, NULL, NULL, xc, wc, wn);
        j.xd = xc;
        j.wd = wc;
    }
    cg_kernel_parallel_work(k, (double)y->numel * (double)j.kn * (double)j.cg, conv16_task, &j);
    return cg_kernel_check_time(k);
}

/* ConvTranspose with fp16 sums. TFLite GPU's transposed convolution
 * (ConvolutionTransposed, tensorflow/lite/delegates/gpu/common/tasks/
 * convolution_transposed.cc, GenerateConvolutionTransposedCode, at
 * c7c147de9e55c76cbf012f86248227a0b6cce0c0) declares its accumulators
 * ACCUM_FLT4 (half4 at F16, as for conv_sum16) and, for each output, walks
 * the input rows that reach it and within a row the input columns, from
 * the one that meets the kernel's first tap on (kernel_y = dst_y + pad -
 * src_y * stride grows as src_y steps down: taps in ascending order, rows
 * outer), and within a tap the source's channel slices; at F16 its CONV
 * macro adds each product to the accumulator on its own (R += S.x * f0;
 * R += S.y * f1; ...), and after the loops the sum is converted to FLT and
 * the bias added. Here the same: per output, taps in ascending kernel index
 * (those that meet an input position), input channels of the group inner,
 * every product and partial sum rounded by r16, the bias added to the
 * rounded sum. */
typedef struct convt16_job {
    const double *x;     /* [n][channel][position] as given */
    const double *w;     /* [input channel][output channel of its group][tap] */
    const double *b;
    cg_tensor *y;
    const conv_geom *g;  /* the adjoint window: w.in is y's extent, w.out x's */
    double (*r16)(double);
    const int64_t *taps;
    int64_t kn, x_plane, y_plane, cg, mg;
} convt16_job;

/* Which input position a ConvTranspose tap kd reaches output position od
 * from (the adjoint window: w->in is the output's extent, w->out the
 * input's): false where it meets none. */
static bool convt16_tap_pos(const cg_nn_window *w, const int64_t *od, const int64_t *kd,
                            int64_t *pos)
{
    int64_t at = 0;
    for (int d = 0; d < w->nsp; d++) {
        /* y position od = i * stride - pad0 + kd * dil */
        int64_t num = od[d] + w->pad0[d] - kd[d] * w->dil[d];
        int64_t i = num / w->stride[d];
        if (num < 0 || num % w->stride[d] != 0 || i >= w->out[d])
            return false;
        at = at * w->out[d] + i;
    }
    *pos = at;
    return true;
}

static void convt16_task(void *arg, int t, int nt)
{
    const convt16_job *j = arg;
    const cg_nn_window *w = &j->g->w;
    int64_t lo, hi;
    cg_kernel_share(j->g->n * j->g->m, 1, t, nt, &lo, &hi);
    for (int64_t plane = lo; plane < hi; plane++) {
        int64_t n = plane / j->g->m, oc = plane % j->g->m, grp = oc / j->mg, ocg = oc % j->mg;
        double bias = j->b ? j->b[oc] : 0.0;
        for (int64_t o = 0; o < j->y_plane; o++) {
            int64_t od[CG_MAX_RANK], rest = o;
            for (int d = w->nsp - 1; d >= 0; d--) {
                od[d] = rest % w->in[d];
                rest /= w->in[d];
            }
            double acc = 0.0;
            for (int64_t tap = 0; tap < j->kn; tap++) {
                int64_t pos = 0;
                if (!convt16_tap_pos(w, od, j->taps + tap * w->nsp, &pos))
                    continue;
                for (int64_t ci = 0; ci < j->cg; ci++) {
                    int64_t ic = grp * j->cg + ci;
                    double xv = j->x[(n * j->g->c + ic) * j->x_plane + pos];
                    double wv = j->w[(ic * j->mg + ocg) * j->kn + tap];
                    acc = j->r16(acc + j->r16(xv * wv));
                }
            }
            cg_tensor_set_f64(j->y, plane * j->y_plane + o, j->r16(acc + bias));
        }
    }
}

/* convt_sum16 on gathered chains (g16_job): each output position's rows
 * are the taps that meet it, in ascending kernel index, by the group's
 * input channels; false where an operand is not one the float32 chains
 * take exactly or the scratch is not there (the scalar chains then run). */
static bool convt16_gathered(cg_kernel_ctx *k, const convt16_job *j, const cg_tensor *x,
                             const cg_tensor *wt, bool range)
{
    const conv_geom *g = j->g;
    int64_t idx_n, rows_n = j->kn * j->cg, wn;
    if (__builtin_mul_overflow(j->kn, j->y_plane, &idx_n) ||
        __builtin_mul_overflow(g->m, rows_n, &wn))
        return false;
    float *xf = cg_nn_scratch(k, x->numel, sizeof *xf);
    float *wf = xf ? cg_nn_scratch(k, wn, sizeof *wf) : NULL;
    int64_t *idx = wf ? cg_nn_scratch(k, idx_n, sizeof *idx) : NULL;
    if (!idx || !g16_copy(x, x->numel, range, xf))
        return false;
    /* ONNX's [input channel][output channel of its group][tap] to
     * [output channel][tap][input channel of its group] */
    for (int64_t oc = 0; oc < g->m; oc++) {
        int64_t grp = oc / j->mg, ocg = oc % j->mg;
        for (int64_t tap = 0; tap < j->kn; tap++)
            for (int64_t ci = 0; ci < j->cg; ci++) {
                double v = cg_tensor_get_f64(wt, ((grp * j->cg + ci) * j->mg + ocg) * j->kn + tap);
                if (!cg_fp16_chain_f32(v, range, &wf[oc * rows_n + tap * j->cg + ci]))
                    return false;
            }
    }
    g16_index(idx, &g->w, j->taps, j->kn, j->y_plane, true);
    g16_job d = {cg_simd_ops_get(cg_kernel_simd(k)), xf, wf, j->b, j->y, idx, NULL, g->n, g->c,
                 g->m, g->group, j->kn, j->cg, j->mg, j->x_plane, j->y_plane, 0, range};
    return g16_run(k, &d);
}

static cg_status convt_sum16(cg_kernel_ctx *k, const cg_tensor *x, const cg_tensor *wt,
                             const cg_tensor *b, const conv_geom *g, cg_tensor *y)
{
    convt16_job j;
    j.kn = cg_nn_prod(g->w.nsp, g->w.kernel);
    j.x_plane = cg_nn_prod(g->w.nsp, g->w.out);
    j.y_plane = cg_nn_prod(g->w.nsp, g->w.in);
    j.cg = g->c / g->group;
    j.mg = g->m / g->group;
    int64_t *taps = cg_nn_scratch(k, j.kn * g->w.nsp, sizeof *taps);
    j.b = b ? cg_nn_as_f64(k, b) : NULL;
    if (!taps || (b && !j.b))
        return cg_kernel_fail(k, CG_NOMEM, "out of scratch memory");
    for (int64_t tap = 0; tap < j.kn; tap++)
        for (int64_t d = g->w.nsp - 1, rest = tap; d >= 0; d--) {
            taps[tap * g->w.nsp + d] = rest % g->w.kernel[d];
            rest /= g->w.kernel[d];
        }
    j.taps = taps;
    j.y = y;
    j.g = g;
    j.r16 = k->precision == CG_KPREC_FP16_SUM11 ? cg_fp16_round_significand : cg_fp16_round;
    if (cg_simd_ops_get(cg_kernel_simd(k))->sum16_f32 && j.kn * j.cg < ((int64_t)1 << 40) &&
        convt16_gathered(k, &j, x, wt, k->precision != CG_KPREC_FP16_SUM11))
        return cg_kernel_check_time(k);
    j.x = cg_nn_as_f64(k, x);
    j.w = cg_nn_as_f64(k, wt);
    if (!j.x || !j.w)
        return cg_kernel_fail(k, CG_NOMEM, "out of scratch memory");
    cg_kernel_parallel_work(k, (double)y->numel * (double)j.kn * (double)j.cg, convt16_task, &j);
    return cg_kernel_check_time(k);
}

/* The float64 GEMM kernels a float64 conv runs on, or NULL where it keeps
 * its other paths: where the level has none, for a transpose, and for the
 * depthwise convs that keep their row kernel (as in float32). */
static const cg_simd_dgemm *conv_dgemm(cg_kernel_ctx *k, const conv_geom *g, bool transpose)
{
    return transpose || (conv_use_depthwise(&g->w, g->c / g->group) && g->m / g->group < 8)
               ? NULL
               : cg_pg_choose_f64(cg_simd_ops_get(cg_kernel_simd(k)), g->m / g->group);
}

/* Runs a float conv (transpose or not) in float32 or float64 and stores y. */
static cg_status conv_float(cg_kernel_ctx *k, const cg_tensor *x, const cg_tensor *wt,
                            const cg_tensor *b, const conv_geom *g, bool transpose,
                            const cg_epilogue *epi, cg_tensor *y)
{
    bool ok;
    if (x->dtype == CG_DTYPE_DOUBLE) {
        const double *bd = b ? cg_nn_as_f64(k, b) : NULL;
        const cg_simd_dgemm *dk = conv_dgemm(k, g, transpose);
        if (dk) {
            if (b && !bd)
                return cg_kernel_fail(k, CG_NOMEM, "out of scratch memory");
            return conv_gemm_f64(k, x->data, wt, bd, g, dk, y->data);
        }
        double *col = g->col_elems ? cg_nn_scratch(k, g->col_elems, sizeof(double)) : NULL;
        if ((b && !bd) || (g->col_elems && !col))
            return cg_kernel_fail(k, CG_NOMEM, "out of scratch memory");
        ok = transpose ? convt_run_f64(x->data, wt->data, bd, y->data, g->n, g->c, g->m, g->group,
                                       &g->w, col)
                       : conv_run_f64(x->data, wt->data, bd, y->data, g->n, g->c, g->m, g->group,
                                      &g->w, col,
                                      cg_simd_ops_get(cg_kernel_simd(k))->dw_row_f64);
    } else {
        /* one input channel per group: the plane kernel when each makes a
         * few outputs (depthwise); a GEMM over the group's outputs when it
         * makes many (a filter bank such as an STFT written as a Conv) */
        bool gemm = !transpose && !(conv_use_depthwise(&g->w, g->c / g->group) &&
                                    g->m / g->group < 8);
        const float *xf = cg_nn_as_f32(k, x), *wf = gemm ? NULL : cg_nn_as_f32(k, wt);
        const float *bf = b ? cg_nn_as_f32(k, b) : NULL;
        float *yf = y->dtype == CG_DTYPE_FLOAT ? y->data : cg_nn_scratch(k, y->numel, sizeof(float));
        if (!xf || (!gemm && !wf) || (b && !bf) || !yf)
            return cg_kernel_fail(k, CG_NOMEM, "out of scratch memory");
        if (yf != y->data)
            memset(yf, 0, (size_t)y->numel * sizeof(float));
        if (transpose) {
            float *col = cg_nn_scratch(k, g->col_elems, sizeof(float));
            if (!col)
                return cg_kernel_fail(k, CG_NOMEM, "out of scratch memory");
            ok = convt_run_f32(xf, wf, bf, yf, g->n, g->c, g->m, g->group, &g->w, col);
        } else if (!gemm) {
            cg_status cs = conv_depthwise_f32(k, xf, wf, bf, yf, g, epi);
            if (cs != CG_OK)
                return cs;
            ok = true;
        } else {
            conv_store_ctx sc = {NULL, yf, bf, NULL, NULL, 0, epi, NULL};
            static const int ins[2] = {1, -1};
            cg_status cs = conv_pointwise_fits(k, g) ? conv_pointwise(k, xf, wt, g, &sc)
                           : conv_rows_fits(k, g)    ? conv_rows(k, xf, wt, g, &sc)
                                                     : conv_gemm(k, xf, wt, NULL, ins, g, &sc);
            if (cs != CG_OK)
                return cs;
            ok = true;
        }
        if (ok)
            cg_nn_store_f32(k, y, yf);
    }
    if (!ok)
        return cg_kernel_fail(k, CG_UNSUPPORTED, "convolution too large for the BLAS int range");
    return CG_OK;
}

cg_status cg_op_conv(cg_kernel_ctx *k)
{
    const cg_tensor *x, *wt, *b;
    cg_tensor *y;
    cg_status st;
    conv_geom g;
    int64_t dims[CG_MAX_RANK];
    if ((st = cg_kernel_require(k, 0, &x)) != CG_OK || (st = cg_kernel_require(k, 1, &wt)) != CG_OK)
        return st;
    b = cg_kernel_input(k, 2);
    /* the float64 mode may hand over a big constant W as stored (float32) */
    bool w32 = x->dtype == CG_DTYPE_DOUBLE && cg_kernel_input_stored64(k, 1);
    if (!cg_nn_is_real(x->dtype) || (wt->dtype != x->dtype && !w32) ||
        (b && b->dtype != x->dtype))
        return cg_kernel_fail(k, CG_UNSUPPORTED, "Conv of %s with %s weights",
                              cg_dtype_name(x->dtype), cg_dtype_name(wt->dtype));
    if ((st = conv_geom_init(k, x, wt, &g)) != CG_OK || (st = check_bias(k, b, g.m)) != CG_OK)
        return st;
    conv_out_dims(&g, false, dims);
    /* float32 applies a fused activation (after a residual of exactly the
     * output's shape) in its stores, on both its paths */
    /* a node emulating fp16 sums is never fused (fuse.c plans no
     * epilogue where node precisions are set) */
    bool sum16 = (k->precision == CG_KPREC_FP16_ACC16 && x->dtype != CG_DTYPE_DOUBLE) ||
                 (k->precision == CG_KPREC_FP16_SUM11 && x->dtype == CG_DTYPE_DOUBLE);
    const cg_epilogue *epi = x->dtype == CG_DTYPE_FLOAT && !sum16 ? cg_kernel_epilogue(k) : NULL;
    if (epi && epi->add &&
        (epi->add->dtype != CG_DTYPE_FLOAT || epi->add->rank != x->rank ||
         memcmp(epi->add->dims, dims, (size_t)x->rank * sizeof *dims) != 0))
        epi = NULL; /* a broadcast or another type: the Add runs on its own */
    if (epi)
        cg_kernel_epilogue_take(k);
    /* every path writes each element (a GEMM store or a plane kernel) */
    if ((st = cg_kernel_output_uninit(k, 0, x->dtype, x->rank, dims, &y)) != CG_OK)
        return st;
    if (y->numel == 0)
        return CG_OK;
    /* W's packing (conv_prepare) stands for its data on the float32 GEMM
     * paths only (conv_weights_packed fills it when the packing does not
     * match); every other path reads W: its aligned copy first */
    if (sum16 || x->dtype != CG_DTYPE_FLOAT ||
        (conv_use_depthwise(&g.w, g.c / g.group) && g.m / g.group < 8))
        cg_kernel_input_fill(k, 1);
    /* a stored float32 W: the float64 GEMM packs it widened; the other
     * paths read it widened into scratch */
    cg_tensor w64;
    if (w32 && (sum16 || !conv_dgemm(k, &g, false))) {
        double *d = cg_nn_scratch(k, wt->numel, sizeof(double));
        if (!d)
            return cg_kernel_fail(k, CG_NOMEM, "out of scratch memory");
        const void *src = cg_kernel_input_source(k, 1);
        cg_fp64_convert_bytes(CG_DTYPE_FLOAT, src ? src : wt->data, wt->numel, d);
        w64 = *wt;
        w64.dtype = CG_DTYPE_DOUBLE;
        w64.data = d;
        wt = &w64;
    }
    if (sum16)
        return conv_sum16(k, x, wt, b, &g, y);
    return conv_float(k, x, wt, b, &g, false, epi, y);
}

/* ---- weights packed at init (prepare.def) ------------------------------------- */

/* Packs constant weights W (input w_in; zero point input zp_in, or -1) the
 * way conv_gemm (and conv_pointwise) will ask for them, as the node's state. */
static cg_status conv_prepare(cg_kernel_ctx *k, int w_in, int zp_in)
{
    const cg_tensor *wt = cg_kernel_input(k, (size_t)w_in);
    /* a float32 W packs from the model's bytes while its aligned copy is
     * not made (then, no other reader needing it, it never is: fold.c);
     * else the packing reads their data */
    const void *src = zp_in < 0 && wt && wt->dtype == CG_DTYPE_FLOAT
                          ? cg_kernel_input_source(k, (size_t)w_in)
                          : NULL;
    if (!src)
        cg_kernel_input_fill(k, (size_t)w_in);
    if (zp_in >= 0)
        cg_kernel_input_fill(k, (size_t)zp_in);
    const cg_tensor *zp = zp_in >= 0 ? cg_kernel_input(k, (size_t)zp_in) : NULL;
    if (!wt || wt->rank < 3 || !cg_kernel_input_is_const(k, (size_t)w_in) ||
        (zp_in >= 0 && cg_kernel_input(k, (size_t)zp_in) == NULL && zp_in < (int)k->input_count &&
         k->node->inputs[zp_in] && k->node->inputs[zp_in][0]))
        return CG_UNSUPPORTED; /* W or its zero point is computed: done per run */
    bool integer = zp_in >= 0;
    if (integer ? (wt->dtype != CG_DTYPE_UINT8 && wt->dtype != CG_DTYPE_INT8)
                : wt->dtype != CG_DTYPE_FLOAT && wt->dtype != CG_DTYPE_FLOAT16 &&
                      wt->dtype != CG_DTYPE_BFLOAT16)
        return CG_UNSUPPORTED;
    conv_geom g;
    memset(&g, 0, sizeof g);
    g.group = cg_attr_int(k, "group", 1);
    g.m = wt->dims[0];
    if (g.group < 1 || g.m < 1 || g.m % g.group != 0)
        return CG_UNSUPPORTED;
    int64_t kk = 1;
    for (int d = 1; d < wt->rank; d++)
        kk *= wt->dims[d];
    /* a depthwise node that keeps the plane kernel packs nothing */
    if (wt->dims[1] == 1 && g.m / g.group < 8 && wt->rank <= 4)
        return CG_UNSUPPORTED;
    int ins[2] = {w_in, zp_in};
    if (integer && cg_qg_get(cg_kernel_simd(k))) {
        conv_packed tmp;
        return conv_weights_q8(k, wt, zp, ins, &g, kk, &tmp) ? CG_OK : CG_NOMEM;
    }
    const cg_simd_gemm *gk = cg_pg_choose(cg_simd_ops_get(cg_kernel_simd(k)), g.m / g.group);
    if (!conv_weights_packed(k, wt, zp, ins, &g, gk, kk, src))
        return CG_NOMEM;
    if (src) /* cg_op_conv reads W only off its float32 GEMM paths, filling it first */
        cg_kernel_state_covers(k, (size_t)w_in);
    return CG_OK;
}

cg_status cg_op_conv_prepare(cg_kernel_ctx *k) { return conv_prepare(k, 1, -1); }
cg_status cg_op_convinteger_prepare(cg_kernel_ctx *k) { return conv_prepare(k, 1, 3); }
cg_status cg_op_qlinearconv_prepare(cg_kernel_ctx *k) { return conv_prepare(k, 3, 5); }

/* ---- ConvTranspose ---------------------------------------------------------- */

static cg_status ints_attr(cg_kernel_ctx *k, const char *name, int nsp, int64_t dflt, int64_t lo,
                           int64_t *dst, bool *given)
{
    size_t n = 0;
    const int64_t *v = cg_attr_ints(k, name, &n);
    if (given)
        *given = v && n > 0;
    if (!v || n == 0) {
        for (int d = 0; d < 2 * nsp; d++)
            dst[d] = dflt;
        return CG_OK;
    }
    size_t off = 0;
    /* pads carry 2*nsp values; output_shape may carry the full N,C,... shape */
    size_t want = strcmp(name, "pads") == 0 ? 2 * (size_t)nsp : (size_t)nsp;
    if (strcmp(name, "output_shape") == 0 && n == (size_t)nsp + 2)
        off = 2;
    else if (n != want)
        return cg_kernel_fail(k, CG_INVALID, "attribute '%s' has %zu values, expected %zu", name,
                              n, want);
    for (size_t i = off; i < n; i++) {
        if (v[i] < lo || v[i] > CG_NN_MAX_EXTENT)
            return cg_kernel_fail(k, CG_INVALID, "attribute '%s'[%zu] = %lld is out of range", name,
                                  i, (long long)v[i]);
        dst[i - off] = v[i];
    }
    return CG_OK;
}

static cg_status convt_geom_init(cg_kernel_ctx *k, const cg_tensor *x, const cg_tensor *wt,
                                 conv_geom *g)
{
    cg_status st;
    int64_t strides[2 * CG_MAX_RANK], dil[2 * CG_MAX_RANK], pads[2 * CG_MAX_RANK];
    int64_t outpad[2 * CG_MAX_RANK], oshape[2 * CG_MAX_RANK];
    bool have_oshape = false;
    if ((st = conv_common(k, x, wt, g)) != CG_OK)
        return st;
    int nsp = x->rank - 2;
    if (wt->dims[0] != g->c)
        return cg_kernel_fail(k, CG_INVALID, "W has %lld input channels, X has %lld",
                              (long long)wt->dims[0], (long long)g->c);
    if (g->c % g->group != 0)
        return cg_kernel_fail(k, CG_INVALID, "input channels %lld not divisible by group %lld",
                              (long long)g->c, (long long)g->group);
    if (wt->dims[1] > INT64_MAX / g->group)
        return cg_kernel_fail(k, CG_INVALID, "output channel count overflows");
    g->m = wt->dims[1] * g->group;
    if ((st = ints_attr(k, "strides", nsp, 1, 1, strides, NULL)) != CG_OK ||
        (st = ints_attr(k, "dilations", nsp, 1, 1, dil, NULL)) != CG_OK ||
        (st = ints_attr(k, "pads", nsp, 0, 0, pads, NULL)) != CG_OK ||
        (st = ints_attr(k, "output_padding", nsp, 0, 0, outpad, NULL)) != CG_OK ||
        (st = ints_attr(k, "output_shape", nsp, 0, 0, oshape, &have_oshape)) != CG_OK)
        return st;
    const char *auto_pad = cg_attr_string(k, "auto_pad", "NOTSET");
    bool same_upper = strcmp(auto_pad, "SAME_UPPER") == 0;
    bool same_lower = strcmp(auto_pad, "SAME_LOWER") == 0;
    bool valid = strcmp(auto_pad, "VALID") == 0;
    if (!same_upper && !same_lower && !valid && strcmp(auto_pad, "NOTSET") != 0)
        return cg_kernel_fail(k, CG_INVALID, "unknown auto_pad '%s'", auto_pad);
    cg_nn_window *w = &g->w;
    memset(w, 0, sizeof(*w));
    w->nsp = nsp;
    for (int d = 0; d < nsp; d++) {
        int64_t in = x->dims[2 + d], kd = wt->dims[2 + d], s = strides[d];
        if (in < 0 || in > CG_NN_MAX_EXTENT || kd < 1 || kd > CG_NN_MAX_EXTENT)
            return cg_kernel_fail(k, CG_INVALID, "bad input/kernel extent on spatial axis %d", d);
        int64_t eff = (kd - 1) * dil[d] + 1;
        if (eff > CG_NN_MAX_EXTENT)
            return cg_kernel_fail(k, CG_INVALID, "dilated kernel extent too large on axis %d", d);
        /* The spec's formula as written, also for an empty input axis:
         * ONNX Runtime gives s*(0-1) + eff there, not eff. */
        int64_t full = s * (in - 1) + outpad[d] + eff, out, head;
        if (have_oshape || same_upper || same_lower) {
            out = have_oshape ? oshape[d] : in * s;
            int64_t total = full - out;
            /* SAME_UPPER puts the odd pad at the end; otherwise at the start. */
            head = same_upper || (!same_lower && total < 0) ? total / 2 : total - total / 2;
        } else {
            head = valid ? 0 : pads[d];
            out = full - head - (valid ? 0 : pads[nsp + d]);
        }
        if (out < 1) /* ONNX Runtime refuses these too ("dim_size > 0") */
            return cg_kernel_fail(k, CG_INVALID, "output extent %lld on spatial axis %d (input "
                                  "extent %lld): an output axis must have at least one element",
                                  (long long)out, d, (long long)in);
        w->in[d] = out; /* the adjoint window gathers from y ... */
        w->out[d] = in; /* ... at x's positions */
        w->kernel[d] = kd;
        w->stride[d] = s;
        w->dil[d] = dil[d];
        w->pad0[d] = head;
    }
    int64_t kn = cg_nn_prod(nsp, w->kernel), xn = cg_nn_prod(nsp, w->out);
    int64_t dims[3] = {wt->dims[1], kn, xn};
    if (kn < 0 || xn < 0 || !cg_shape_numel(3, dims, &g->col_elems))
        return cg_kernel_fail(k, CG_LIMIT, "column matrix size overflows");
    return CG_OK;
}

cg_status cg_op_convtranspose(cg_kernel_ctx *k)
{
    const cg_tensor *x, *wt, *b;
    cg_tensor *y;
    cg_status st;
    conv_geom g;
    int64_t dims[CG_MAX_RANK];
    if ((st = cg_kernel_require(k, 0, &x)) != CG_OK || (st = cg_kernel_require(k, 1, &wt)) != CG_OK)
        return st;
    b = cg_kernel_input(k, 2);
    if (!cg_nn_is_real(x->dtype) || wt->dtype != x->dtype || (b && b->dtype != x->dtype))
        return cg_kernel_fail(k, CG_UNSUPPORTED, "ConvTranspose of %s with %s weights",
                              cg_dtype_name(x->dtype), cg_dtype_name(wt->dtype));
    if ((st = convt_geom_init(k, x, wt, &g)) != CG_OK || (st = check_bias(k, b, g.m)) != CG_OK)
        return st;
    conv_out_dims(&g, true, dims);
    if ((st = cg_kernel_output(k, 0, x->dtype, x->rank, dims, &y)) != CG_OK)
        return st;
    if (y->numel == 0)
        return CG_OK;
    if (x->numel == 0) {
        /* nothing to scatter (and the column matrix has no columns to
         * divide by): every output element is its channel's bias */
        int64_t per = y->numel / (y->dims[0] * y->dims[1]);
        for (int64_t i = 0; b && i < y->numel; i++)
            cg_tensor_set_f64(y, i, cg_tensor_get_f64(b, (i / per) % y->dims[1]));
        return CG_OK;
    }
    if (g.col_elems == 0)
        g.col_elems = 1;
    if ((k->precision == CG_KPREC_FP16_ACC16 && x->dtype != CG_DTYPE_DOUBLE) ||
        (k->precision == CG_KPREC_FP16_SUM11 && x->dtype == CG_DTYPE_DOUBLE))
        return convt_sum16(k, x, wt, b, &g, y);
    return conv_float(k, x, wt, b, &g, true, NULL, y);
}

/* ---- integer convolutions ------------------------------------------------------ */

static bool is_q8(cg_dtype dt) { return dt == CG_DTYPE_INT8 || dt == CG_DTYPE_UINT8; }

/* x - zp as int32 (zp a scalar tensor of x's type, or absent = 0). */
static cg_status q_shift_input(cg_kernel_ctx *k, const cg_tensor *x, const cg_tensor *zp,
                               const char *what, int32_t **out)
{
    if (zp && (zp->dtype != x->dtype || zp->numel != 1))
        return cg_kernel_fail(k, CG_UNSUPPORTED, "%s zero point must be one %s value", what,
                              cg_dtype_name(x->dtype));
    int32_t z = zp ? (int32_t)cg_tensor_get_i64(zp, 0) : 0;
    int32_t *d = cg_nn_scratch(k, x->numel, sizeof(int32_t));
    if (!d)
        return cg_kernel_fail(k, CG_NOMEM, "out of scratch memory");
    for (int64_t i = 0; i < x->numel; i++)
        d[i] = (int32_t)cg_tensor_get_i64(x, i) - z;
    *out = d;
    return CG_OK;
}

/* w - zp[m] as int32, zp scalar or one per output channel. */
static cg_status q_shift_weights(cg_kernel_ctx *k, const cg_tensor *w, const cg_tensor *zp,
                                 int64_t m, int32_t **out)
{
    if (zp && (zp->dtype != w->dtype || (zp->numel != 1 && zp->numel != m)))
        return cg_kernel_fail(k, CG_INVALID, "weight zero point must be 1 or %lld %s values",
                              (long long)m, cg_dtype_name(w->dtype));
    int64_t per = m > 0 ? w->numel / m : 0;
    int32_t *d = cg_nn_scratch(k, w->numel, sizeof(int32_t));
    if (!d)
        return cg_kernel_fail(k, CG_NOMEM, "out of scratch memory");
    for (int64_t i = 0; i < w->numel; i++) {
        int64_t ch = per ? i / per : 0;
        int32_t z = zp ? (int32_t)cg_tensor_get_i64(zp, zp->numel == 1 ? 0 : ch) : 0;
        d[i] = (int32_t)cg_tensor_get_i64(w, i) - z;
    }
    *out = d;
    return CG_OK;
}

/* The int32 accumulators of an 8-bit conv on the 8-bit GEMM (qgemm.h):
 * equal, bit for bit, to the float GEMM's (packgemm.h, store_i32). The
 * window pads with x's zero point, whose taps add nothing. */
static cg_status conv_q8(cg_kernel_ctx *k, const cg_tensor *x, const cg_tensor *xzp,
                         const cg_tensor *wt, const cg_tensor *wzp, const int32_t *bias,
                         const int *ins, const conv_geom *g, const cg_qg_level *lv,
                         int32_t *acc)
{
    const cg_nn_window *win = &g->w;
    int nsp = win->nsp;
    int64_t cg = g->c / g->group, mg = g->m / g->group;
    int64_t on = cg_nn_prod(nsp, win->out), in_n = cg_nn_prod(nsp, win->in);
    int64_t kk = cg * cg_nn_prod(nsp, win->kernel);
    conv_taps taps;
    conv_packed tmp;
    const conv_packed *cp = NULL;
    if (!conv_taps_init(k, win, kk, on, &taps) ||
        !(cp = conv_weights_q8(k, wt, wzp, ins, g, kk, &tmp)))
        return cg_kernel_fail(k, CG_NOMEM, "out of scratch memory");
    int32_t zx = xzp ? (int32_t)cg_tensor_get_i64(xzp, 0) : 0;
    const uint8_t *xu = x->data;
    if (x->dtype == CG_DTYPE_INT8) { /* to the unsigned domain */
        uint8_t *c = cg_nn_scratch(k, x->numel, 1);
        if (!c)
            return cg_kernel_fail(k, CG_NOMEM, "out of scratch memory");
        const int8_t *xs = x->data;
        for (int64_t i = 0; i < x->numel; i++)
            c[i] = (uint8_t)((int32_t)xs[i] + 128);
        xu = c;
        zx += 128;
    }
    uint8_t *xpad = taps.padded ? cg_nn_scratch(k, cg * taps.plane, 1) : NULL;
    if (taps.padded && !xpad)
        return cg_kernel_fail(k, CG_NOMEM, "out of scratch memory");
    for (int64_t n = 0; n < g->n; n++) {
        for (int64_t gi = 0; gi < g->group; gi++) {
            const uint8_t *xg = xu + (n * g->c + gi * cg) * in_n;
            if (taps.padded)
                cg_nn_pad_copy_u8(xg, cg, win, (uint8_t)zx, xpad);
            cg_qg_problem p = {lv, cp->qw + (size_t)gi * cp->per_group, cp->qsum + gi * mg,
                               cp->qzw + gi * mg, bias ? bias + gi * mg : NULL, mg, kk, on,
                               taps.padded ? xpad : xg, taps.off, taps.pos, zx,
                               acc + (n * g->m + gi * mg) * on};
            if (!cg_qg_run(k, &p))
                return cg_kernel_fail(k, CG_NOMEM, "out of scratch memory");
        }
    }
    return CG_OK;
}

/* Shared by ConvInteger and QLinearConv: int32 accumulators of the conv.
 * 8-bit operands minus their zero points are integers of magnitude at most
 * 255, which the convolution GEMM sums exactly (packgemm.h, store_i32). */
static cg_status q_conv_acc(cg_kernel_ctx *k, const cg_tensor *x, const cg_tensor *xzp,
                            const cg_tensor *wt, const cg_tensor *wzp, const int32_t *bias,
                            const int *ins, const conv_geom *g, int32_t *acc)
{
    cg_status st;
    if (wzp && (wzp->dtype != wt->dtype || (wzp->numel != 1 && wzp->numel != g->m)))
        return cg_kernel_fail(k, CG_INVALID, "weight zero point must be 1 or %lld %s values",
                              (long long)g->m, cg_dtype_name(wt->dtype));
    if (xzp && (xzp->dtype != x->dtype || xzp->numel != 1))
        return cg_kernel_fail(k, CG_UNSUPPORTED, "x zero point must be one %s value",
                              cg_dtype_name(x->dtype));
    if (!conv_use_depthwise(&g->w, g->c / g->group) || g->m / g->group >= 8) {
        const cg_qg_level *lv = cg_qg_get(cg_kernel_simd(k));
        if (lv)
            return conv_q8(k, x, xzp, wt, wzp, bias, ins, g, lv, acc);
        float *xf = cg_nn_scratch(k, x->numel, sizeof(float));
        if (!xf)
            return cg_kernel_fail(k, CG_NOMEM, "out of scratch memory");
        int32_t z = xzp ? (int32_t)cg_tensor_get_i64(xzp, 0) : 0;
        if (x->dtype == CG_DTYPE_UINT8) {
            const uint8_t *xs = x->data;
            for (int64_t i = 0; i < x->numel; i++)
                xf[i] = (float)((int32_t)xs[i] - z);
        } else {
            const int8_t *xs = x->data;
            for (int64_t i = 0; i < x->numel; i++)
                xf[i] = (float)((int32_t)xs[i] - z);
        }
        conv_store_ctx sc = {NULL, NULL, NULL, acc, bias, 0, NULL, NULL};
        return conv_gemm(k, xf, wt, wzp, ins, g, &sc);
    }
    int32_t *xs = NULL, *ws = NULL;
    if ((st = q_shift_input(k, x, xzp, "x", &xs)) != CG_OK ||
        (st = q_shift_weights(k, wt, wzp, g->m, &ws)) != CG_OK)
        return st;
    int32_t *col = g->col_elems ? cg_nn_scratch(k, g->col_elems, sizeof(int32_t)) : NULL;
    if (g->col_elems && !col)
        return cg_kernel_fail(k, CG_NOMEM, "out of scratch memory");
    conv_run_i32(xs, ws, bias, acc, g->n, g->c, g->m, g->group, &g->w, col);
    return CG_OK;
}

cg_status cg_op_convinteger(cg_kernel_ctx *k)
{
    const cg_tensor *x, *wt;
    cg_tensor *y;
    cg_status st;
    conv_geom g;
    int64_t dims[CG_MAX_RANK];
    if ((st = cg_kernel_require(k, 0, &x)) != CG_OK || (st = cg_kernel_require(k, 1, &wt)) != CG_OK)
        return st;
    if (!is_q8(x->dtype) || !is_q8(wt->dtype))
        return cg_kernel_fail(k, CG_UNSUPPORTED, "ConvInteger of %s with %s weights",
                              cg_dtype_name(x->dtype), cg_dtype_name(wt->dtype));
    if ((st = conv_geom_init(k, x, wt, &g)) != CG_OK)
        return st;
    conv_out_dims(&g, false, dims);
    if ((st = cg_kernel_output_uninit(k, 0, CG_DTYPE_INT32, x->rank, dims, &y)) != CG_OK)
        return st;
    if (y->numel == 0)
        return CG_OK;
    static const int ins[2] = {1, 3};
    return q_conv_acc(k, x, cg_kernel_input(k, 2), wt, cg_kernel_input(k, 3), NULL, ins, &g,
                      y->data);
}

cg_status cg_op_qlinearconv(cg_kernel_ctx *k)
{
    const cg_tensor *x, *xs, *xzp, *wt, *ws, *wzp, *ys, *yzp, *b;
    cg_tensor *y;
    cg_status st;
    conv_geom g;
    int64_t dims[CG_MAX_RANK];
    if ((st = cg_kernel_require(k, 0, &x)) != CG_OK || (st = cg_kernel_require(k, 1, &xs)) != CG_OK ||
        (st = cg_kernel_require(k, 2, &xzp)) != CG_OK || (st = cg_kernel_require(k, 3, &wt)) != CG_OK ||
        (st = cg_kernel_require(k, 4, &ws)) != CG_OK || (st = cg_kernel_require(k, 5, &wzp)) != CG_OK ||
        (st = cg_kernel_require(k, 6, &ys)) != CG_OK || (st = cg_kernel_require(k, 7, &yzp)) != CG_OK)
        return st;
    b = cg_kernel_input(k, 8);
    if (!is_q8(x->dtype) || !is_q8(wt->dtype) || !is_q8(yzp->dtype))
        return cg_kernel_fail(k, CG_UNSUPPORTED, "QLinearConv of %s with %s weights to %s",
                              cg_dtype_name(x->dtype), cg_dtype_name(wt->dtype),
                              cg_dtype_name(yzp->dtype));
    if ((st = conv_geom_init(k, x, wt, &g)) != CG_OK || (st = check_bias(k, b, g.m)) != CG_OK)
        return st;
    if (b && b->dtype != CG_DTYPE_INT32)
        return cg_kernel_fail(k, CG_INVALID, "B must be int32 (is %s)", cg_dtype_name(b->dtype));
    if (!cg_nn_is_real(xs->dtype) || !cg_nn_is_real(ws->dtype) || !cg_nn_is_real(ys->dtype) ||
        xs->numel != 1 || ys->numel != 1 || yzp->numel != 1 ||
        (ws->numel != 1 && ws->numel != g.m))
        return cg_kernel_fail(k, CG_INVALID,
                              "scales must be float scalars (w_scale: 1 or %lld values) and y_zero_point one value",
                              (long long)g.m);
    double xsc = cg_tensor_get_f64(xs, 0), ysc = cg_tensor_get_f64(ys, 0);
    if (!(ysc != 0.0) || !isfinite(ysc))
        return cg_kernel_fail(k, CG_RUNTIME, "y_scale is %g", ysc);
    conv_out_dims(&g, false, dims);
    if ((st = cg_kernel_output(k, 0, yzp->dtype, x->rank, dims, &y)) != CG_OK)
        return st;
    if (y->numel == 0)
        return CG_OK;
    int32_t *acc = cg_nn_scratch(k, y->numel, sizeof(int32_t));
    if (!acc)
        return cg_kernel_fail(k, CG_NOMEM, "out of scratch memory");
    static const int ins[2] = {3, 5};
    if ((st = q_conv_acc(k, x, xzp, wt, wzp, b ? b->data : NULL, ins, &g, acc)) != CG_OK)
        return st;
    int64_t plane = y->numel / (g.n * g.m), z = cg_tensor_get_i64(yzp, 0);
    for (int64_t i = 0; i < y->numel; i++) {
        int64_t m = (i / plane) % g.m;
        float mult = (float)(xsc * cg_tensor_get_f64(ws, ws->numel == 1 ? 0 : m)) / (float)ysc;
        double v = cg_nn_round_even((double)acc[i] * (double)mult) + (double)z;
        cg_tensor_set_i64(y, i, cg_nn_saturate(y->dtype, v));
    }
    return CG_OK;
}

/* ---- Col2Im (opset 18) ------------------------------------------------------------ */

static cg_status read_shape_input(cg_kernel_ctx *k, const cg_tensor *t, const char *what,
                                  int64_t *dst, int *n)
{
    if (t->rank != 1 || t->numel < 1 || t->numel > CG_MAX_RANK - 2 ||
        (t->dtype != CG_DTYPE_INT64 && t->dtype != CG_DTYPE_INT32))
        return cg_kernel_fail(k, CG_INVALID, "%s must be a 1-D int64 tensor of 1..%d values", what,
                              CG_MAX_RANK - 2);
    for (int64_t i = 0; i < t->numel; i++)
        dst[i] = cg_tensor_get_i64(t, i);
    *n = (int)t->numel;
    return CG_OK;
}

cg_status cg_op_col2im(cg_kernel_ctx *k)
{
    const cg_tensor *x, *ishape, *bshape;
    cg_tensor *y;
    cg_status st;
    cg_nn_window w;
    int64_t img[CG_MAX_RANK], blk[CG_MAX_RANK], dims[CG_MAX_RANK];
    int ni = 0, nb = 0;
    if ((st = cg_kernel_require(k, 0, &x)) != CG_OK ||
        (st = cg_kernel_require(k, 1, &ishape)) != CG_OK ||
        (st = cg_kernel_require(k, 2, &bshape)) != CG_OK)
        return st;
    if ((st = read_shape_input(k, ishape, "image_shape", img, &ni)) != CG_OK ||
        (st = read_shape_input(k, bshape, "block_shape", blk, &nb)) != CG_OK)
        return st;
    if (ni != nb)
        return cg_kernel_fail(k, CG_INVALID, "image_shape has %d dims, block_shape %d", ni, nb);
    if (x->rank != 3)
        return cg_kernel_fail(k, CG_INVALID, "input must be 3-D (N, C*prod(block), L), is rank %d",
                              x->rank);
    if (!cg_nn_is_real(x->dtype))
        return cg_kernel_fail(k, CG_UNSUPPORTED, "Col2Im of %s", cg_dtype_name(x->dtype));
    if ((st = cg_nn_window_init(k, ni, img, blk, false, &w)) != CG_OK)
        return st;
    int64_t kn = cg_nn_prod(ni, blk), ln = cg_nn_prod(ni, w.out);
    if (kn < 1 || x->dims[1] % kn != 0)
        return cg_kernel_fail(k, CG_INVALID, "dim 1 (%lld) is not a multiple of the block size %lld",
                              (long long)x->dims[1], (long long)kn);
    if (ln != x->dims[2])
        return cg_kernel_fail(k, CG_INVALID, "L is %lld but the blocks give %lld",
                              (long long)x->dims[2], (long long)ln);
    int64_t c = x->dims[1] / kn;
    dims[0] = x->dims[0];
    dims[1] = c;
    for (int d = 0; d < ni; d++)
        dims[2 + d] = img[d];
    if ((st = cg_kernel_output(k, 0, x->dtype, ni + 2, dims, &y)) != CG_OK)
        return st;
    if (y->numel == 0 || x->numel == 0)
        return CG_OK;
    int64_t imn = cg_nn_prod(ni, img);
    if (x->dtype == CG_DTYPE_DOUBLE) {
        for (int64_t n = 0; n < dims[0]; n++)
            col2im_f64((const double *)x->data + n * x->dims[1] * ln, c, &w,
                       (double *)y->data + n * c * imn);
        return CG_OK;
    }
    const float *xf = cg_nn_as_f32(k, x);
    float *yf = y->dtype == CG_DTYPE_FLOAT ? y->data : cg_nn_scratch(k, y->numel, sizeof(float));
    if (!xf || !yf)
        return cg_kernel_fail(k, CG_NOMEM, "out of scratch memory");
    if (yf != y->data)
        memset(yf, 0, (size_t)y->numel * sizeof(float));
    for (int64_t n = 0; n < dims[0]; n++)
        col2im_f32(xf + n * x->dims[1] * ln, c, &w, yf + n * c * imn);
    cg_nn_store_f32(k, y, yf);
    return CG_OK;
}
