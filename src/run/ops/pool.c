/*
 * Pooling: MaxPool (with Indices), AveragePool, LpPool, their Global forms,
 * MaxUnpool and MaxRoiPool.
 *
 * The window geometry (pads, auto_pad, strides, dilations, ceil_mode) comes
 * from cg_nn_window_init; bodies live in pool_impl.inc, instantiated for
 * float32 (float16, bfloat16 and 8-bit MaxPool go through float32 exactly)
 * and float64. 2-D max/average without indices take an explicit-loop path.
 */
#include <math.h>
#include <string.h>

#include "run/ops/kernels.h"
#include "run/ops/nn_common.h"
#include "run/ops/simd.h"

typedef enum pool_mode { POOL_MAX, POOL_AVG, POOL_LP } pool_mode;

/* outputs between two looks at the time limit: a multiple of the 8-wide
 * blocks, and rare enough that the clock read costs nothing measurable */
#define POOL_CHECK_EVERY 64

/* cg_simd_ops.pool_s2 (float32 only; NULL for the float64 bodies) */
typedef void (*pool_s2_fn)(float *out, const float *v, int64_t n, int64_t kw_n, int64_t dw,
                           bool max);
/* cg_simd_ops.pool_rows, likewise */
typedef void (*pool_rows_fn)(float *v, const float *x, int64_t pitch, int64_t nrows, int64_t n,
                             bool max);

/* the float32 bodies call the vector level's pool_s2 and pool_rows */
#define POOL_VECTOR 1
#define CT float
#define POOL_FN(x) x##_f32
#include "run/ops/pool_impl.inc"
#undef CT
#undef POOL_FN
#undef POOL_VECTOR

#define CT double
#define POOL_FN(x) x##_f64
#include "run/ops/pool_impl.inc"
#undef CT
#undef POOL_FN

/* LpPool's p: a float attribute in opset 1, an int from opset 2. */
static cg_status lp_order(cg_kernel_ctx *k, double *p)
{
    const cg_attr *a = cg_kernel_attr(k, "p");
    *p = 2.0;
    if (a && a->has_f)
        *p = a->f;
    else if (a && a->has_i)
        *p = (double)a->i;
    if (!(*p > 0.0) || !isfinite(*p))
        return cg_kernel_fail(k, CG_INVALID, "p is %g (must be positive)", *p);
    return CG_OK;
}

static bool pool_dtype_ok(cg_dtype dt, pool_mode mode)
{
    if (cg_nn_is_real(dt))
        return true;
    return mode == POOL_MAX && (dt == CG_DTYPE_INT8 || dt == CG_DTYPE_UINT8);
}

/* float32 2-D max/average pooling, planes split over the runtime's threads
 * (each share with its own row of the vertical pass). */
typedef struct pool2d_job {
    const float *x;
    float *y;
    int64_t planes, in_n, out_n, row_n;
    const cg_nn_window *w;
    pool_mode mode;
    bool include_pad;
    float *rows; /* row_n floats per thread */
    pool_s2_fn s2; /* NULL at the portable level (pool2d) */
    pool_rows_fn fold;
    const cg_kernel_ctx *k;
} pool2d_job;

static void pool2d_task(void *arg, int t, int n)
{
    const pool2d_job *j = arg;
    int64_t lo, hi;
    cg_kernel_share(j->planes, 1, t, n, &lo, &hi);
    if (lo < hi)
        pool2d_f32(j->x + lo * j->in_n, j->y + lo * j->out_n, hi - lo, j->w, j->mode,
                   j->include_pad, j->rows + (int64_t)t * j->row_n, j->s2, j->fold, j->k);
}

static cg_status pool_run(cg_kernel_ctx *k, pool_mode mode)
{
    const cg_tensor *x;
    cg_tensor *y, *ind = NULL;
    cg_status st;
    cg_nn_window w;
    int64_t dims[CG_MAX_RANK];
    double p = 2.0;
    if ((st = cg_kernel_require(k, 0, &x)) != CG_OK)
        return st;
    if (x->rank < 3)
        return cg_kernel_fail(k, CG_INVALID, "X has rank %d (needs N, C and a spatial dim)",
                              x->rank);
    if (!pool_dtype_ok(x->dtype, mode))
        return cg_kernel_fail(k, CG_UNSUPPORTED, "pooling of %s", cg_dtype_name(x->dtype));
    int nsp = x->rank - 2;
    size_t nk = 0;
    const int64_t *ks = cg_attr_ints(k, "kernel_shape", &nk);
    if (!ks || nk != (size_t)nsp)
        return cg_kernel_fail(k, CG_INVALID, "kernel_shape must have %d values (has %zu)", nsp,
                              nk);
    if ((st = cg_nn_window_init(k, nsp, x->dims + 2, ks, true, &w)) != CG_OK)
        return st;
    int64_t planes_n;
    if (!cg_shape_numel(2, x->dims, &planes_n))
        return cg_kernel_fail(k, CG_LIMIT, "N x C of X overflows");
    int64_t taps = cg_nn_window_taps(&w, planes_n);
    if (taps > CG_NN_MAX_POOL_TAPS)
        return cg_kernel_fail(k, CG_LIMIT, "pooling would visit over %lld window taps inside "
                              "the image: the kernel_shape is too large for this input",
                              (long long)CG_NN_MAX_POOL_TAPS);
    if (mode == POOL_LP && (st = lp_order(k, &p)) != CG_OK)
        return st;
    bool include_pad = mode == POOL_AVG && cg_attr_int(k, "count_include_pad", 0) != 0;
    int64_t order = cg_attr_int(k, "storage_order", 0);
    if (order != 0 && order != 1)
        return cg_kernel_fail(k, CG_INVALID, "storage_order is %lld", (long long)order);
    dims[0] = x->dims[0];
    dims[1] = x->dims[1];
    for (int d = 0; d < nsp; d++)
        dims[2 + d] = w.out[d];
    if ((st = cg_kernel_output(k, 0, x->dtype, x->rank, dims, &y)) != CG_OK)
        return st;
    bool want_idx = mode == POOL_MAX && cg_nn_want_output(k, 1);
    if (want_idx && (st = cg_kernel_output(k, 1, CG_DTYPE_INT64, x->rank, dims, &ind)) != CG_OK)
        return st;
    if (y->numel == 0)
        return CG_OK;
    int64_t planes = planes_n;
    int64_t *idx = ind ? ind->data : NULL;
    int64_t in_n = cg_nn_prod(nsp, w.in), out_n = cg_nn_prod(nsp, w.out);
    bool two_d = nsp == 2 && mode != POOL_LP && !idx;
    /* plane by plane, so a run over its time limit stops here */
    if (x->dtype == CG_DTYPE_DOUBLE) {
        double *vrow = cg_nn_scratch(k, w.in[nsp - 1], sizeof(double));
        if (!vrow)
            return cg_kernel_fail(k, CG_NOMEM, "out of scratch memory");
        const double *xd = x->data;
        double *yd = y->data;
        for (int64_t pl = 0; pl < planes; pl++) {
            if ((st = cg_kernel_check_time(k)) != CG_OK)
                return st;
            if (two_d)
                pool2d_f64(xd + pl * in_n, yd + pl * out_n, 1, &w, mode, include_pad, vrow, NULL,
                           NULL, k);
            else
                poolnd_f64(xd + pl * in_n, yd + pl * out_n, idx ? idx + pl * out_n : NULL, 1, pl,
                           &w, mode, include_pad, p, order == 1, k);
        }
        return cg_kernel_check_time(k); /* the last plane may have stopped early */
    }
    const float *xf = cg_nn_as_f32(k, x);
    float *yf = y->dtype == CG_DTYPE_FLOAT ? y->data : cg_nn_scratch(k, y->numel, sizeof(float));
    int threads = two_d ? cg_kernel_threads(k) : 1;
    /* a row per thread, 4 + CG_SIMD_POOL_SLACK more floats than the input
     * row (pool2d's and pool_s2's reads past it), rounded up to whole
     * 64-byte lines: threads writing their rows side by side in one cache
     * line made every write of one a miss for the other (the 27- and
     * 13-wide MaxPools of squeezenet1_1 ran slower at two threads than at
     * one) */
    int64_t pad_n = 4 + CG_SIMD_POOL_SLACK + 15;
    int64_t row_n = w.in[nsp - 1] <= INT64_MAX - pad_n ? (w.in[nsp - 1] + pad_n) / 16 * 16 : -1;
    float *vrow = row_n > 0 && row_n <= INT64_MAX / threads
                      ? cg_nn_scratch(k, row_n * threads, sizeof(float))
                      : NULL;
    if (!xf || !yf || !vrow)
        return cg_kernel_fail(k, CG_NOMEM, "out of scratch memory");
    /* the elements past a row are read, into lanes that are dropped */
    memset(vrow, 0, (size_t)(row_n * threads) * sizeof(float));
    if (two_d) {
        /* shares check the time limit per output row; the check below
         * reports it */
        const cg_simd_ops *ops = cg_simd_ops_get(cg_kernel_simd(k));
        pool2d_job job = {.x = xf, .y = yf, .planes = planes, .in_n = in_n, .out_n = out_n,
                          .row_n = row_n, .w = &w, .mode = mode, .include_pad = include_pad,
                          .rows = vrow, .s2 = ops->pool_s2, .fold = ops->pool_rows, .k = k};
        cg_kernel_parallel_work(k, (double)taps, pool2d_task, &job);
    }
    for (int64_t pl = 0; pl < planes && !two_d; pl++) {
        if ((st = cg_kernel_check_time(k)) != CG_OK)
            return st;
        poolnd_f32(xf + pl * in_n, yf + pl * out_n, idx ? idx + pl * out_n : NULL, 1, pl, &w, mode,
                   include_pad, p, order == 1, k);
    }
    if ((st = cg_kernel_check_time(k)) != CG_OK)
        return st; /* the last plane may have stopped early */
    cg_nn_store_f32(k, y, yf);
    return CG_OK;
}

cg_status cg_op_maxpool(cg_kernel_ctx *k) { return pool_run(k, POOL_MAX); }
cg_status cg_op_averagepool(cg_kernel_ctx *k) { return pool_run(k, POOL_AVG); }
cg_status cg_op_lppool(cg_kernel_ctx *k) { return pool_run(k, POOL_LP); }

/* ---- global pools ------------------------------------------------------------ */

static cg_status global_pool(cg_kernel_ctx *k, pool_mode mode)
{
    const cg_tensor *x;
    cg_tensor *y;
    cg_status st;
    int64_t dims[CG_MAX_RANK];
    double p = 2.0;
    if ((st = cg_kernel_require(k, 0, &x)) != CG_OK)
        return st;
    if (x->rank < 2)
        return cg_kernel_fail(k, CG_INVALID, "X has rank %d (needs N and C)", x->rank);
    if (!cg_nn_is_real(x->dtype))
        return cg_kernel_fail(k, CG_UNSUPPORTED, "global pooling of %s", cg_dtype_name(x->dtype));
    if (mode == POOL_LP && (st = lp_order(k, &p)) != CG_OK)
        return st;
    dims[0] = x->dims[0];
    dims[1] = x->dims[1];
    for (int d = 2; d < x->rank; d++)
        dims[d] = 1;
    if ((st = cg_kernel_output(k, 0, x->dtype, x->rank, dims, &y)) != CG_OK)
        return st;
    int64_t planes = y->numel, in_n = planes ? x->numel / planes : 0;
    if (planes == 0)
        return CG_OK;
    if (in_n == 0)
        return cg_kernel_fail(k, CG_INVALID, "global pooling over an empty spatial extent");
    if (x->dtype == CG_DTYPE_FLOAT) {
        const float *xf = x->data;
        float *yf = y->data;
        for (int64_t pl = 0; pl < planes; pl++) {
            const float *xp = xf + pl * in_n;
            if (mode == POOL_MAX) {
                float m = xp[0];
                for (int64_t i = 1; i < in_n; i++)
                    m = (xp[i] > m || xp[i] != xp[i]) ? xp[i] : m;
                yf[pl] = m;
            } else if (mode == POOL_AVG) {
                /* in float and in ONNX Runtime's order (MlasPoolGlobalKernel
                 * of ORT 1.22): four lanes, reduced (0 + 2) + (1 + 3) as
                 * MlasReduceAddFloat32x4 does, then the tail, then one
                 * division: a pooled value that feeds a quantizer must round
                 * as ORT's does (docs/gate3.md, quantized models) */
                float s4[4] = {0, 0, 0, 0};
                int64_t i = 0;
                for (; i + 4 <= in_n; i += 4)
                    for (int j = 0; j < 4; j++)
                        s4[j] += xp[i + j];
                float s = (s4[0] + s4[2]) + (s4[1] + s4[3]);
                for (; i < in_n; i++)
                    s += xp[i];
                yf[pl] = s / (float)in_n;
            } else {
                double s = 0;
                for (int64_t i = 0; i < in_n; i++)
                    s += pow(fabs((double)xp[i]), p);
                yf[pl] = (float)pow(s, 1.0 / p);
            }
        }
        return CG_OK;
    }
    const double *xd = cg_nn_as_f64(k, x);
    double *yd = cg_nn_scratch(k, planes, sizeof(double));
    if (!xd || !yd)
        return cg_kernel_fail(k, CG_NOMEM, "out of scratch memory");
    for (int64_t pl = 0; pl < planes; pl++) {
        const double *xp = xd + pl * in_n;
        double acc = mode == POOL_MAX ? xp[0] : 0.0;
        for (int64_t i = 0; i < in_n; i++) {
            if (mode == POOL_MAX)
                acc = (xp[i] > acc || xp[i] != xp[i]) ? xp[i] : acc;
            else if (mode == POOL_AVG)
                acc += xp[i];
            else
                acc += pow(fabs(xp[i]), p);
        }
        yd[pl] = mode == POOL_MAX ? acc : mode == POOL_AVG ? acc / (double)in_n : pow(acc, 1.0 / p);
    }
    cg_nn_store_f64(y, yd);
    return CG_OK;
}

cg_status cg_op_globalmaxpool(cg_kernel_ctx *k) { return global_pool(k, POOL_MAX); }
cg_status cg_op_globalaveragepool(cg_kernel_ctx *k) { return global_pool(k, POOL_AVG); }
cg_status cg_op_globallppool(cg_kernel_ctx *k) { return global_pool(k, POOL_LP); }

/* ---- MaxUnpool ------------------------------------------------------------------ */

cg_status cg_op_maxunpool(cg_kernel_ctx *k)
{
    const cg_tensor *x, *ind, *oshape;
    cg_tensor *y;
    cg_status st;
    int64_t dims[CG_MAX_RANK], strides[CG_MAX_RANK], pads[2 * CG_MAX_RANK];
    if ((st = cg_kernel_require(k, 0, &x)) != CG_OK || (st = cg_kernel_require(k, 1, &ind)) != CG_OK)
        return st;
    oshape = cg_kernel_input(k, 2);
    if (x->rank < 3)
        return cg_kernel_fail(k, CG_INVALID, "X has rank %d", x->rank);
    if (ind->dtype != CG_DTYPE_INT64 || ind->numel != x->numel)
        return cg_kernel_fail(k, CG_INVALID, "I must be int64 with X's %lld elements",
                              (long long)x->numel);
    size_t esz = cg_dtype_size(x->dtype);
    if (esz == 0)
        return cg_kernel_fail(k, CG_UNSUPPORTED, "MaxUnpool of %s", cg_dtype_name(x->dtype));
    int nsp = x->rank - 2;
    size_t n = 0;
    const int64_t *ks = cg_attr_ints(k, "kernel_shape", &n);
    if (!ks || n != (size_t)nsp)
        return cg_kernel_fail(k, CG_INVALID, "kernel_shape must have %d values", nsp);
    const int64_t *sv = cg_attr_ints(k, "strides", &n);
    if (sv && n != (size_t)nsp)
        return cg_kernel_fail(k, CG_INVALID, "strides must have %d values", nsp);
    for (int d = 0; d < nsp; d++)
        strides[d] = sv ? sv[d] : 1;
    const int64_t *pv = cg_attr_ints(k, "pads", &n);
    if (pv && n != 2 * (size_t)nsp)
        return cg_kernel_fail(k, CG_INVALID, "pads must have %d values", 2 * nsp);
    for (int d = 0; d < 2 * nsp; d++)
        pads[d] = pv ? pv[d] : 0;
    /* Indices address the default output (the MaxPool input it came from);
     * an explicit output_shape only enlarges the planes they land in. */
    int64_t def[CG_MAX_RANK];
    def[0] = dims[0] = x->dims[0];
    def[1] = dims[1] = x->dims[1];
    for (int d = 0; d < nsp; d++) {
        int64_t in = x->dims[2 + d];
        if (ks[d] < 1 || ks[d] > CG_NN_MAX_EXTENT || strides[d] < 1 ||
            strides[d] > CG_NN_MAX_EXTENT || pads[d] < 0 || pads[d] > CG_NN_MAX_EXTENT ||
            pads[d + nsp] < 0 || pads[d + nsp] > CG_NN_MAX_EXTENT || in > CG_NN_MAX_EXTENT)
            return cg_kernel_fail(k, CG_INVALID, "bad kernel/stride/pad on spatial axis %d", d);
        def[2 + d] = dims[2 + d] =
            (in > 0 ? in - 1 : 0) * strides[d] + ks[d] - pads[d] - pads[d + nsp];
        if (def[2 + d] < 0)
            return cg_kernel_fail(k, CG_INVALID, "output dim %d is %lld", 2 + d,
                                  (long long)def[2 + d]);
    }
    if (oshape) {
        if (oshape->rank != 1 || oshape->numel != x->rank ||
            (oshape->dtype != CG_DTYPE_INT64 && oshape->dtype != CG_DTYPE_INT32))
            return cg_kernel_fail(k, CG_INVALID, "output_shape must be %d int64 values", x->rank);
        for (int d = 0; d < x->rank; d++) {
            dims[d] = cg_tensor_get_i64(oshape, d);
            if (d < 2 ? dims[d] != def[d] : dims[d] < def[d])
                return cg_kernel_fail(k, CG_INVALID,
                                      "output_shape[%d] = %lld is smaller than the pooled input's %lld (or changes N/C)",
                                      d, (long long)dims[d], (long long)def[d]);
        }
    }
    if ((st = cg_kernel_output(k, 0, x->dtype, x->rank, dims, &y)) != CG_OK)
        return st;
    int64_t def_plane = cg_nn_prod(nsp, def + 2), def_total = cg_nn_prod(x->rank, def);
    const int64_t *iv = ind->data;
    for (int64_t i = 0; i < x->numel; i++) {
        if (iv[i] < 0 || iv[i] >= def_total)
            return cg_kernel_fail(k, CG_RUNTIME, "index %lld at %lld is outside the output (%lld elements)",
                                  (long long)iv[i], (long long)i, (long long)def_total);
        int64_t plane = iv[i] / def_plane, rem = iv[i] % def_plane, at = 0, scale = 1;
        for (int d = x->rank - 1; d >= 2; d--) {
            at += (rem % def[d]) * scale;
            rem /= def[d];
            scale *= dims[d];
        }
        at += plane * scale;
        memcpy((char *)y->data + (size_t)at * esz, (const char *)x->data + (size_t)i * esz, esz);
    }
    return CG_OK;
}

/* ---- MaxRoiPool ------------------------------------------------------------------ */

cg_status cg_op_maxroipool(cg_kernel_ctx *k)
{
    const cg_tensor *x, *rois;
    cg_tensor *y;
    cg_status st;
    if ((st = cg_kernel_require(k, 0, &x)) != CG_OK || (st = cg_kernel_require(k, 1, &rois)) != CG_OK)
        return st;
    if (x->rank != 4 || !cg_nn_is_real(x->dtype))
        return cg_kernel_fail(k, CG_INVALID, "X must be a 4-D float tensor (rank %d, %s)", x->rank,
                              cg_dtype_name(x->dtype));
    if (rois->rank != 2 || rois->dims[1] != 5 || !cg_nn_is_real(rois->dtype))
        return cg_kernel_fail(k, CG_INVALID, "rois must be (num_rois, 5) floats");
    size_t n = 0;
    const int64_t *ps = cg_attr_ints(k, "pooled_shape", &n);
    if (!ps || n != 2 || ps[0] < 1 || ps[1] < 1 || ps[0] > CG_NN_MAX_EXTENT ||
        ps[1] > CG_NN_MAX_EXTENT)
        return cg_kernel_fail(k, CG_INVALID, "pooled_shape must be two positive values");
    double scale = cg_attr_float(k, "spatial_scale", 1.0f);
    int64_t nr = rois->dims[0], c = x->dims[1], h = x->dims[2], wd = x->dims[3];
    int64_t dims[4] = {nr, c, ps[0], ps[1]};
    if ((st = cg_kernel_output(k, 0, x->dtype, 4, dims, &y)) != CG_OK)
        return st;
    if (y->numel == 0)
        return CG_OK;
    const double *xd = cg_nn_as_f64(k, x), *rd = cg_nn_as_f64(k, rois);
    double *yd = cg_nn_scratch(k, y->numel, sizeof(double));
    if (!xd || !rd || !yd)
        return cg_kernel_fail(k, CG_NOMEM, "out of scratch memory");
    for (int64_t r = 0; r < nr; r++) {
        const double *roi = rd + r * 5;
        if (!(roi[0] >= 0) || roi[0] >= (double)x->dims[0])
            return cg_kernel_fail(k, CG_RUNTIME, "roi %lld has batch index %g", (long long)r, roi[0]);
        for (int j = 1; j < 5; j++)
            if (!isfinite(roi[j]) || fabs(roi[j] * scale) > 1e15)
                return cg_kernel_fail(k, CG_RUNTIME, "roi %lld has coordinate %g", (long long)r,
                                      roi[j]);
        int64_t b = (int64_t)roi[0];
        int64_t x1 = (int64_t)round(roi[1] * scale), y1 = (int64_t)round(roi[2] * scale);
        int64_t x2 = (int64_t)round(roi[3] * scale), y2 = (int64_t)round(roi[4] * scale);
        int64_t rh = y2 - y1 + 1 > 1 ? y2 - y1 + 1 : 1, rw = x2 - x1 + 1 > 1 ? x2 - x1 + 1 : 1;
        double bh = (double)rh / (double)ps[0], bw = (double)rw / (double)ps[1];
        for (int64_t ch = 0; ch < c; ch++) {
            const double *plane = xd + (b * c + ch) * h * wd;
            for (int64_t ph = 0; ph < ps[0]; ph++)
                for (int64_t pw = 0; pw < ps[1]; pw++) {
                    int64_t hs = (int64_t)floor((double)ph * bh) + y1;
                    int64_t he = (int64_t)ceil((double)(ph + 1) * bh) + y1;
                    int64_t ws = (int64_t)floor((double)pw * bw) + x1;
                    int64_t we = (int64_t)ceil((double)(pw + 1) * bw) + x1;
                    hs = hs < 0 ? 0 : hs > h ? h : hs;
                    he = he < 0 ? 0 : he > h ? h : he;
                    ws = ws < 0 ? 0 : ws > wd ? wd : ws;
                    we = we < 0 ? 0 : we > wd ? wd : we;
                    double m = 0;
                    bool any = false;
                    for (int64_t i = hs; i < he; i++)
                        for (int64_t j = ws; j < we; j++)
                            if (!any || plane[i * wd + j] > m) {
                                m = plane[i * wd + j];
                                any = true;
                            }
                    yd[((r * c + ch) * ps[0] + ph) * ps[1] + pw] = m;
                }
        }
    }
    cg_nn_store_f64(y, yd);
    return CG_OK;
}
