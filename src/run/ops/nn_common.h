/*
 * Helpers shared by the neural-network kernel family (conv*.c, gemm.c,
 * pool.c, norm.c, quant.c, nn_common.c).
 *
 * The family computes in two precisions: float32 (the fast path, OpenBLAS
 * sgemm) and double (everything else: float64 exactly, float16/bfloat16 and
 * small integers widened, computed in double and rounded once on store).
 * Sliding-window ops (Conv, ConvTranspose, pools) share one geometry record,
 * cg_nn_window, filled and bounds-checked from the node's attributes before
 * any data is touched.
 */
#ifndef CG_RUN_OPS_NN_COMMON_H
#define CG_RUN_OPS_NN_COMMON_H

#include <stdbool.h>
#include <stdint.h>

#include "run/kernel.h"

/* Largest kernel/dilation/stride/pad we accept: keeps every window
 * expression ((k-1)*d+1, o*s+k*d, in+pads) far from int64 overflow. */
#define CG_NN_MAX_EXTENT ((int64_t)1 << 40)

/* Makes OpenBLAS single-threaded once per process (the runtime's contract is
 * one thread unless OPENBLAS_NUM_THREADS says otherwise). */
void cg_nn_blas_init(void);

/* True when output i exists on the node and has a name (is consumed). */
bool cg_nn_want_output(const cg_kernel_ctx *k, size_t i);

/* float16/float/double/bfloat16. */
bool cg_nn_is_real(cg_dtype dt);

/* The tensor's elements as float32 / double: the tensor's own buffer when it
 * already has that dtype, else a converted copy in scratch. NULL on
 * allocation failure (the kernel reports it). */
const float *cg_nn_as_f32(cg_kernel_ctx *k, const cg_tensor *t);
const double *cg_nn_as_f64(cg_kernel_ctx *k, const cg_tensor *t);
/* Writes src (numel of out) into out, converting to out's dtype. */
void cg_nn_store_f32(const cg_kernel_ctx *k, cg_tensor *out, const float *src);
void cg_nn_store_f64(cg_tensor *out, const double *src);

/* Scratch of n elements of size sz, overflow-checked; NULL on failure. */
void *cg_nn_scratch(cg_kernel_ctx *k, int64_t n, size_t sz);

/* sgemm/dgemm, row-major, C = alpha*op(A)*op(B) + beta*C. Fails (false)
 * when a dimension does not fit OpenBLAS's int. */
bool cg_nn_sgemm(bool ta, bool tb, int64_t m, int64_t n, int64_t kk, float alpha,
                 const float *a, int64_t lda, const float *b, int64_t ldb, float beta, float *c,
                 int64_t ldc);
bool cg_nn_dgemm(bool ta, bool tb, int64_t m, int64_t n, int64_t kk, double alpha,
                 const double *a, int64_t lda, const double *b, int64_t ldb, double beta,
                 double *c, int64_t ldc);

/* y[m] = a[m, n] . x[n] (a row-major, m x n; dimensions that fit BLAS int). */
void cg_nn_sgemv(int64_t m, int64_t n, const float *a, const float *x, float *y);

/* Sliding-window geometry over nsp spatial dims. pad0/pad1: begin/end. */
typedef struct cg_nn_window {
    int nsp;
    int64_t in[CG_MAX_RANK];
    int64_t out[CG_MAX_RANK];
    int64_t kernel[CG_MAX_RANK];
    int64_t stride[CG_MAX_RANK];
    int64_t dil[CG_MAX_RANK];
    int64_t pad0[CG_MAX_RANK];
    int64_t pad1[CG_MAX_RANK];
} cg_nn_window;

/* Fills w for a forward window op (Conv, pools) from attributes strides,
 * dilations, pads, auto_pad (and ceil_mode when pool is true), for input
 * spatial dims in[nsp] and kernel[nsp]. Every value is validated; the output
 * extent must be at least 1. */
cg_status cg_nn_window_init(cg_kernel_ctx *k, int nsp, const int64_t *in, const int64_t *kernel,
                            bool pool, cg_nn_window *w);

/* The taps t in [0, k) of a window starting at `start` with dilation dil
 * that land in [lo, hi): [*t0, *t1), computed in O(1) so that a window's
 * cost is its taps inside the image, not its kernel size. */
static inline void cg_nn_tap_range(int64_t start, int64_t k, int64_t dil, int64_t lo, int64_t hi,
                                   int64_t *t0, int64_t *t1)
{
    int64_t a = start >= lo ? 0 : (lo - start + dil - 1) / dil;
    int64_t b = hi - start <= 0 ? 0 : (hi - start - 1) / dil + 1;
    if (b > k)
        b = k;
    if (a > b)
        a = b;
    *t0 = a;
    *t1 = b;
}

/* Taps inside the image that pooling over w visits in all: planes x the
 * product over axes of the in-image taps summed over that axis's outputs,
 * saturating at INT64_MAX. A kernel is an attribute, not data, so nothing
 * else bounds it: pooling refuses more than CG_NN_MAX_POOL_TAPS (about
 * 17e9 taps, tens of seconds) up front instead of running for hours. */
#define CG_NN_MAX_POOL_TAPS ((int64_t)1 << 34)
int64_t cg_nn_window_taps(const cg_nn_window *w, int64_t planes);

/* The most taps (input channels x kernel) of a one-group 2-D float32
 * convolution that runs row by row on the pointwise tiles (conv.c,
 * conv_rows), which copies its input zero-padded whether or not it pads;
 * set-up's scratch estimate (predict.c) follows the same rule. */
#define CG_CONV_ROWS_MAX_TAPS 64

/* Copies c channels of x (spatial dims w->in) into dst with w's zero
 * padding around each (dims in + pad0 + pad1), channel after channel. */
void cg_nn_pad_copy_f32(const float *x, int64_t c, const cg_nn_window *w, float *dst);
void cg_nn_pad_copy_f64(const double *x, int64_t c, const cg_nn_window *w, double *dst);
/* The same for bytes, the padding `fill` (a quantized zero point). */
void cg_nn_pad_copy_u8(const uint8_t *x, int64_t c, const cg_nn_window *w, uint8_t fill,
                       uint8_t *dst);

/* Product of n dims (already validated to fit); -1 on overflow. */
int64_t cg_nn_prod(int n, const int64_t *d);

/* Round half to even as ONNX QuantizeLinear / QLinear* require. */
double cg_nn_round_even(double v);
/* Clamp v to the range of integer dtype dt (int8/uint8/int16/uint16/int32). */
int64_t cg_nn_saturate(cg_dtype dt, double v);

#endif
