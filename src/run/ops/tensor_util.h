/*
 * Helpers shared by the tensor-shape and reduction kernel families
 * (tensor_*.c, reduce*.c): dtype-agnostic element copies (strings included),
 * strided and index-mapped gathers, reading small integer lists from tensors,
 * checked index wrapping and a stable index sort. Nothing here is part of
 * the kernel contract; other families should not depend on it.
 */
#ifndef CG_RUN_OPS_TENSOR_UTIL_H
#define CG_RUN_OPS_TENSOR_UTIL_H

#include "run/kernel.h"

/* Rank of the internal views (Tile and DepthToSpace split dims in two). */
#define CG_TENS_MAX_VIEW_RANK (2 * CG_MAX_RANK)

/* Row-major strides (elements) of a shape. For a shape with no elements a
 * product of the other dims can overflow; those strides (never used to
 * address anything) are then 0. */
void cg_tens_strides(int rank, const int64_t *dims, int64_t *strides);
/* Product of t's dims [from, to): bounded by numel, so no overflow for a
 * tensor with elements; 0 for one without (its huge other dims would
 * overflow, and there is nothing to address). */
int64_t cg_tens_dims_prod(const cg_tensor *t, int from, int to);

/* Copies n elements src[soff..] to dst[doff..] (same dtype); strings are
 * duplicated. Fails only on allocation failure. */
cg_status cg_tens_copy(cg_kernel_ctx *k, cg_tensor *dst, int64_t doff, const cg_tensor *src,
                       int64_t soff, int64_t n);

/* Fills dst (contiguous, numel = prod(dims)) from src where output index
 * (i_0..i_{r-1}) reads src element base + sum(i_d * sstrides[d]). Strides may
 * be zero (broadcast) or negative (reversal); the caller guarantees every
 * address is inside src. rank <= CG_TENS_MAX_VIEW_RANK. */
cg_status cg_tens_strided_copy(cg_kernel_ctx *k, cg_tensor *dst, const cg_tensor *src,
                               int rank, const int64_t *dims, const int64_t *sstrides,
                               int64_t base);

/* Fills dst (shape dst->dims) from src where output coordinate o along dim d
 * reads source coordinate maps[d][o], or the fill element when it is -1
 * (fill: one element of dst's dtype; NULL means zero / empty string). */
cg_status cg_tens_map_copy(cg_kernel_ctx *k, cg_tensor *dst, const cg_tensor *src,
                           int64_t *const *maps, const cg_tensor *fill);

/* Reads an integer tensor (any int dtype) of at most max elements into out.
 * `what` names it in errors. */
cg_status cg_tens_read_ints(cg_kernel_ctx *k, const cg_tensor *t, const char *what,
                            int64_t *out, size_t max, size_t *n);
/* Reads a one-element integer tensor (scalar or [1]). */
cg_status cg_tens_read_scalar_int(cg_kernel_ctx *k, const cg_tensor *t, const char *what,
                                  int64_t *out);

/* Wraps index v (allowed in [-dim, dim)) into [0, dim), or fails naming
 * `what`, the value and the position. */
cg_status cg_tens_wrap_index(cg_kernel_ctx *k, const char *what, int64_t v, int64_t dim,
                             int64_t pos, int64_t *out);

/* Normalizes a list of axes against rank and rejects duplicates. */
cg_status cg_tens_normalize_axes(cg_kernel_ctx *k, const int64_t *axes, size_t n, int rank,
                                 int64_t *out);

/* Three-way compare of a[i] and b[j] (same dtype): NaN sorts after every
 * number and equal to NaN; strings compare bytewise. */
int cg_tens_cmp_elem(const cg_tensor *a, int64_t i, const cg_tensor *b, int64_t j);

/* Stable merge sort of idx[0..n) by cmp(ctx, a, b) < 0 meaning a first.
 * tmp holds n scratch entries. */
typedef int (*cg_tens_cmp_fn)(const void *ctx, int64_t a, int64_t b);
void cg_tens_sort(int64_t *idx, int64_t n, int64_t *tmp, cg_tens_cmp_fn cmp, const void *ctx);

/* Allocates output i as an exact copy of src's data with a new shape
 * (Reshape, Squeeze, Flatten, Identity...); *out (may be NULL) gets it. */
cg_status cg_tens_output_copy(cg_kernel_ctx *k, size_t i, const cg_tensor *src, int rank,
                              const int64_t *dims, cg_tensor **out);

#endif
