/*
 * Shared helpers of the neural-network kernel family: precision conversion
 * into scratch, BLAS wrappers with dimension checks, and the sliding-window
 * geometry every Conv/Pool kernel validates its attributes with.
 */
#include <cblas.h>
#include <limits.h>
#include <math.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "run/ops/kernels.h"
#include "run/ops/nn_common.h"
#include "run/ops/simd.h"

void cg_nn_blas_init(void)
{
    /* The build links OpenBLAS's serial build where it is installed
     * (CMakeLists.txt); with the pthreads build, BLAS would otherwise use a
     * thread per core per call. The runtime splits work over its own
     * threads (cg_runtime_options.threads), each calling BLAS
     * single-threaded. An explicit
     * OPENBLAS_NUM_THREADS from the user wins (and, above 1, oversubscribes
     * the cores when the runtime has threads too). The flag only avoids
     * repeating a cheap call. The first calls allocate OpenBLAS's buffers:
     * they are made here, at runtime set-up, not in a first run. */
    static atomic_int done = 0;
    if (atomic_load(&done))
        return;
    if (!getenv("OPENBLAS_NUM_THREADS"))
        openblas_set_num_threads(1);
    float a[4] = {1, 0, 0, 1}, c[4];
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, 2, 2, 2, 1.0f, a, 2, a, 2, 0.0f, c, 2);
    cblas_sgemv(CblasRowMajor, CblasNoTrans, 2, 2, 1.0f, a, 2, a, 1, 0.0f, c, 1);
    atomic_store(&done, 1);
}

bool cg_nn_want_output(const cg_kernel_ctx *k, size_t i)
{
    return i < k->output_count && i < k->node->output_count && k->node->outputs[i] &&
           k->node->outputs[i][0] != '\0';
}

bool cg_nn_is_real(cg_dtype dt)
{
    return dt == CG_DTYPE_FLOAT || dt == CG_DTYPE_DOUBLE || dt == CG_DTYPE_FLOAT16 ||
           dt == CG_DTYPE_BFLOAT16;
}

void *cg_nn_scratch(cg_kernel_ctx *k, int64_t n, size_t sz)
{
    if (n < 0 || (uint64_t)n > SIZE_MAX / sz)
        return NULL;
    size_t bytes = (size_t)n * sz;
    return cg_kernel_scratch(k, bytes ? bytes : sz);
}

const float *cg_nn_as_f32(cg_kernel_ctx *k, const cg_tensor *t)
{
    if (t->dtype == CG_DTYPE_FLOAT)
        return (const float *)t->data;
    float *dst = cg_nn_scratch(k, t->numel, sizeof(float));
    if (!dst)
        return NULL;
    if (t->dtype == CG_DTYPE_FLOAT16) {
        cg_simd_ops_get(cg_kernel_simd(k))->fp16_to_f32(dst, t->data, t->numel);
    } else {
        for (int64_t i = 0; i < t->numel; i++)
            dst[i] = (float)cg_tensor_get_f64(t, i);
    }
    return dst;
}

const double *cg_nn_as_f64(cg_kernel_ctx *k, const cg_tensor *t)
{
    if (t->dtype == CG_DTYPE_DOUBLE)
        return (const double *)t->data;
    double *dst = cg_nn_scratch(k, t->numel, sizeof(double));
    if (!dst)
        return NULL;
    for (int64_t i = 0; i < t->numel; i++)
        dst[i] = cg_tensor_get_f64(t, i);
    return dst;
}

void cg_nn_store_f32(const cg_kernel_ctx *k, cg_tensor *out, const float *src)
{
    if (out->dtype == CG_DTYPE_FLOAT) {
        if ((const void *)src != out->data)
            memcpy(out->data, src, (size_t)out->numel * sizeof(float));
        return;
    }
    if (out->dtype == CG_DTYPE_FLOAT16) {
        cg_simd_ops_get(cg_kernel_simd(k))->f32_to_fp16(out->data, src, out->numel);
        return;
    }
    for (int64_t i = 0; i < out->numel; i++)
        cg_tensor_set_f64(out, i, src[i]);
}

void cg_nn_store_f64(cg_tensor *out, const double *src)
{
    if (out->dtype == CG_DTYPE_DOUBLE) {
        if ((const void *)src != out->data)
            memcpy(out->data, src, (size_t)out->numel * sizeof(double));
        return;
    }
    for (int64_t i = 0; i < out->numel; i++)
        cg_tensor_set_f64(out, i, src[i]);
}

static bool fits_int(int64_t v) { return v >= 0 && v <= INT_MAX; }

bool cg_nn_sgemm(bool ta, bool tb, int64_t m, int64_t n, int64_t kk, float alpha,
                 const float *a, int64_t lda, const float *b, int64_t ldb, float beta, float *c,
                 int64_t ldc)
{
    if (!fits_int(m) || !fits_int(n) || !fits_int(kk) || !fits_int(lda) || !fits_int(ldb) ||
        !fits_int(ldc))
        return false;
    if (m == 0 || n == 0)
        return true;
    if (kk == 0) { /* BLAS leaves C untouched only for beta==1; be explicit */
        for (int64_t i = 0; i < m; i++)
            for (int64_t j = 0; j < n; j++)
                c[i * ldc + j] = beta == 0.0f ? 0.0f : beta * c[i * ldc + j];
        return true;
    }
    cg_nn_blas_init();
    if (m == 1) {
        /* one row: sgemv reads B in place, where sgemm would pack it first
         * (a batch-1 classifier head spent most of its time packing) */
        cblas_sgemv(CblasRowMajor, tb ? CblasNoTrans : CblasTrans, tb ? (int)n : (int)kk,
                    tb ? (int)kk : (int)n, alpha, b, (int)ldb, a, ta ? (int)lda : 1, beta, c, 1);
        return true;
    }
    cblas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans,
                (int)m, (int)n, (int)kk, alpha, a, (int)lda, b, (int)ldb, beta, c, (int)ldc);
    return true;
}

void cg_nn_sgemv(int64_t m, int64_t n, const float *a, const float *x, float *y)
{
    if (m <= 0)
        return;
    if (n <= 0) {
        memset(y, 0, (size_t)m * sizeof(float));
        return;
    }
    cg_nn_blas_init();
    cblas_sgemv(CblasRowMajor, CblasNoTrans, (int)m, (int)n, 1.0f, a, (int)n, x, 1, 0.0f, y, 1);
}

bool cg_nn_dgemm(bool ta, bool tb, int64_t m, int64_t n, int64_t kk, double alpha,
                 const double *a, int64_t lda, const double *b, int64_t ldb, double beta,
                 double *c, int64_t ldc)
{
    if (!fits_int(m) || !fits_int(n) || !fits_int(kk) || !fits_int(lda) || !fits_int(ldb) ||
        !fits_int(ldc))
        return false;
    if (m == 0 || n == 0)
        return true;
    if (kk == 0) {
        for (int64_t i = 0; i < m; i++)
            for (int64_t j = 0; j < n; j++)
                c[i * ldc + j] = beta == 0.0 ? 0.0 : beta * c[i * ldc + j];
        return true;
    }
    cg_nn_blas_init();
    cblas_dgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans,
                (int)m, (int)n, (int)kk, alpha, a, (int)lda, b, (int)ldb, beta, c, (int)ldc);
    return true;
}

int64_t cg_nn_prod(int n, const int64_t *d)
{
    int64_t p;
    return cg_shape_numel(n, d, &p) ? p : -1;
}

/* Reads an ints attribute that must have exactly want entries (or be
 * absent: then every entry is dflt). */
static cg_status window_ints(cg_kernel_ctx *k, const char *name, size_t want, int64_t dflt,
                             int64_t lo, int64_t *dst)
{
    size_t n = 0;
    const int64_t *v = cg_attr_ints(k, name, &n);
    if (!v || n == 0) {
        for (size_t i = 0; i < want; i++)
            dst[i] = dflt;
        return CG_OK;
    }
    if (n != want)
        return cg_kernel_fail(k, CG_INVALID, "attribute '%s' has %zu values, expected %zu", name,
                              n, want);
    for (size_t i = 0; i < n; i++) {
        if (v[i] < lo || v[i] > CG_NN_MAX_EXTENT)
            return cg_kernel_fail(k, CG_INVALID, "attribute '%s'[%zu] = %lld is out of range",
                                  name, i, (long long)v[i]);
        dst[i] = v[i];
    }
    return CG_OK;
}

cg_status cg_nn_window_init(cg_kernel_ctx *k, int nsp, const int64_t *in, const int64_t *kernel,
                            bool pool, cg_nn_window *w)
{
    cg_status st;
    int64_t pads[2 * CG_MAX_RANK];
    memset(w, 0, sizeof(*w));
    if (nsp < 1 || nsp > CG_MAX_RANK - 2)
        return cg_kernel_fail(k, CG_INVALID, "%d spatial dimensions are not supported", nsp);
    w->nsp = nsp;
    if ((st = window_ints(k, "strides", (size_t)nsp, 1, 1, w->stride)) != CG_OK ||
        (st = window_ints(k, "dilations", (size_t)nsp, 1, 1, w->dil)) != CG_OK ||
        (st = window_ints(k, "pads", 2 * (size_t)nsp, 0, 0, pads)) != CG_OK)
        return st;
    const char *auto_pad = cg_attr_string(k, "auto_pad", "NOTSET");
    bool ceil_mode = pool && cg_attr_int(k, "ceil_mode", 0) != 0;
    bool same_upper = strcmp(auto_pad, "SAME_UPPER") == 0;
    bool same_lower = strcmp(auto_pad, "SAME_LOWER") == 0;
    bool valid = strcmp(auto_pad, "VALID") == 0;
    if (!same_upper && !same_lower && !valid && strcmp(auto_pad, "NOTSET") != 0)
        return cg_kernel_fail(k, CG_INVALID, "unknown auto_pad '%s'", auto_pad);
    for (int i = 0; i < nsp; i++) {
        if (kernel[i] < 1 || kernel[i] > CG_NN_MAX_EXTENT)
            return cg_kernel_fail(k, CG_INVALID, "kernel dimension %d is %lld", i,
                                  (long long)kernel[i]);
        if (in[i] < 0 || in[i] > CG_NN_MAX_EXTENT)
            return cg_kernel_fail(k, CG_INVALID, "input spatial dimension %d is %lld", i,
                                  (long long)in[i]);
        w->in[i] = in[i];
        w->kernel[i] = kernel[i];
        int64_t eff = (kernel[i] - 1) * w->dil[i] + 1, s = w->stride[i];
        if (eff > CG_NN_MAX_EXTENT)
            return cg_kernel_fail(k, CG_INVALID, "dilated kernel extent too large on axis %d", i);
        if (same_upper || same_lower) {
            int64_t out = (in[i] + s - 1) / s;
            int64_t total = (out - 1) * s + eff - in[i];
            if (total < 0)
                total = 0;
            w->out[i] = out;
            w->pad0[i] = same_upper ? total / 2 : total - total / 2;
            w->pad1[i] = total - w->pad0[i];
            continue;
        }
        if (!valid) {
            w->pad0[i] = pads[i];
            w->pad1[i] = pads[i + nsp];
        }
        int64_t span = in[i] + w->pad0[i] + w->pad1[i] - eff;
        if (span < 0)
            return cg_kernel_fail(k, CG_INVALID,
                                  "kernel extent %lld exceeds padded input %lld on axis %d",
                                  (long long)eff, (long long)(in[i] + w->pad0[i] + w->pad1[i]),
                                  i);
        int64_t out = (ceil_mode ? (span + s - 1) / s : span / s) + 1;
        /* A window that would start entirely in the end padding is dropped
         * (the PyTorch/ONNX Runtime rule for ceil_mode). */
        if (ceil_mode && (out - 1) * s >= in[i] + w->pad0[i])
            out--;
        w->out[i] = out;
    }
    return CG_OK;
}

int64_t cg_nn_window_taps(const cg_nn_window *w, int64_t planes)
{
    int64_t n = planes < 0 ? 0 : planes;
    for (int d = 0; d < w->nsp && n > 0; d++) {
        int64_t axis = 0; /* <= out * in: no overflow, both are <= 2^41 */
        for (int64_t o = 0; o < w->out[d]; o++) {
            int64_t t0, t1;
            cg_nn_tap_range(o * w->stride[d] - w->pad0[d], w->kernel[d], w->dil[d], 0, w->in[d],
                            &t0, &t1);
            axis += t1 - t0;
            if (axis > CG_NN_MAX_POOL_TAPS)
                return INT64_MAX;
        }
        if (axis == 0)
            return 0;
        if (n > INT64_MAX / axis)
            return INT64_MAX;
        n *= axis;
    }
    return n;
}

double cg_nn_round_even(double v)
{
    /* nearbyint rounds half to even in the default rounding mode. */
    return nearbyint(v);
}

int64_t cg_nn_saturate(cg_dtype dt, double v)
{
    double lo, hi;
    switch (dt) {
    case CG_DTYPE_INT8: lo = -128; hi = 127; break;
    case CG_DTYPE_UINT8: lo = 0; hi = 255; break;
    case CG_DTYPE_INT16: lo = -32768; hi = 32767; break;
    case CG_DTYPE_UINT16: lo = 0; hi = 65535; break;
    case CG_DTYPE_INT32: lo = -2147483648.0; hi = 2147483647.0; break;
    default: lo = 0; hi = 0; break;
    }
    if (isnan(v))
        return 0;
    if (v < lo)
        v = lo;
    if (v > hi)
        v = hi;
    return (int64_t)v;
}

/* The padded copy for elements of `size` bytes, the border bytes `fill`. */
static void pad_copy(const void *x, size_t size, int64_t c, const cg_nn_window *w, int fill,
                     void *dst)
{
    int nsp = w->nsp, last = nsp - 1;
    int64_t pdim[CG_MAX_RANK], rows = 1, in_n = cg_nn_prod(nsp, w->in);
    for (int d = 0; d < nsp; d++)
        pdim[d] = w->in[d] + w->pad0[d] + w->pad1[d];
    for (int d = 0; d < last; d++)
        rows *= pdim[d];
    int64_t width = pdim[last], iw = w->in[last], p0 = w->pad0[last];
    for (int64_t ch = 0; ch < c; ch++) {
        const char *xc = (const char *)x + (size_t)(ch * in_n) * size;
        for (int64_t r = 0; r < rows; r++) {
            char *drow = (char *)dst + (size_t)((ch * rows + r) * width) * size;
            /* the source row, unless r lies in the padding of an outer dim */
            int64_t rest = r, src = 0, scale = 1;
            bool inside = true;
            for (int d = last - 1; d >= 0; d--) {
                int64_t i = rest % pdim[d] - w->pad0[d];
                rest /= pdim[d];
                if (i < 0 || i >= w->in[d]) {
                    inside = false;
                    break;
                }
                scale *= d + 1 < last ? w->in[d + 1] : 1;
                src += i * scale;
            }
            if (!inside) {
                memset(drow, fill, (size_t)width * size);
                continue;
            }
            memset(drow, fill, (size_t)p0 * size);
            memcpy(drow + (size_t)p0 * size, xc + (size_t)(src * iw) * size, (size_t)iw * size);
            memset(drow + (size_t)(p0 + iw) * size, fill, (size_t)(width - p0 - iw) * size);
        }
    }
}

void cg_nn_pad_copy_f32(const float *x, int64_t c, const cg_nn_window *w, float *dst)
{
    pad_copy(x, sizeof(float), c, w, 0, dst); /* all-zero bytes are 0.0f */
}

void cg_nn_pad_copy_f64(const double *x, int64_t c, const cg_nn_window *w, double *dst)
{
    pad_copy(x, sizeof(double), c, w, 0, dst); /* all-zero bytes are 0.0 */
}

void cg_nn_pad_copy_u8(const uint8_t *x, int64_t c, const cg_nn_window *w, uint8_t fill,
                       uint8_t *dst)
{
    pad_copy(x, 1, c, w, fill, dst);
}
