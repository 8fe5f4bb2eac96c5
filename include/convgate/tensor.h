/*
 * Tensors and values: the one in-memory form of data that every stage
 * (runtime, tensor files, targets, verification, the command line) passes
 * around.
 *
 * A cg_tensor is dense, row-major, of rank at most CG_MAX_RANK. Its `data`
 * holds numel elements of its dtype; for STRING, numel cg_string, each
 * carrying its length (ONNX strings are bytes and may hold NUL bytes: a
 * string is never cut at one) and owned by the tensor.
 * A cg_value is what flows along a graph edge: a tensor, a sequence of
 * tensor values, or an optional.
 *
 * Ownership: a tensor or value made by this family owns its payload (and
 * strings, and sequence items) and is released with cg_tensor_release /
 * cg_value_free. The runtime is the only place that holds values whose
 * payload it does not own (arena slots, zero-copy initializers); it never
 * hands those to cg_value_free with the payload still set.
 */
#ifndef CONVGATE_TENSOR_H
#define CONVGATE_TENSOR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "convgate/api.h"
#include "convgate/dtype.h"
#include "convgate/status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The largest rank of any tensor or value type convgate handles. */
#define CG_MAX_RANK 16

/* A STRING element: len bytes at data, then a NUL (for printing only: the
 * bytes may hold NULs too). data NULL (len 0) is the empty string. */
typedef struct cg_string {
    char *data;
    size_t len;
} cg_string;

typedef struct cg_tensor {
    cg_dtype dtype;
    int rank;
    int64_t dims[CG_MAX_RANK];
    int64_t numel;
    void *data;
} cg_tensor;

typedef enum cg_value_kind {
    CG_VALUE_TENSOR = 0,
    CG_VALUE_SEQUENCE,
    CG_VALUE_OPTIONAL /* has_value says whether it holds something */
} cg_value_kind;

typedef struct cg_value {
    cg_value_kind kind;
    cg_tensor tensor;          /* TENSOR, or OPTIONAL holding a tensor */
    struct cg_value **items;   /* SEQUENCE elements (each a TENSOR value) */
    size_t item_count;
    cg_dtype seq_dtype;        /* element dtype of a (possibly empty) sequence */
    bool has_value;            /* OPTIONAL */
    bool optional_is_sequence; /* OPTIONAL whose payload is a sequence */
} cg_value;

/* --- sizes ------------------------------------------------------------------ */

/* Bytes one element takes in cg_tensor.data (sizeof(cg_string) for STRING;
 * 0 for a dtype without a byte layout). */
CG_API size_t cg_tensor_elem_size(cg_dtype dtype);
/* Elements of a shape, overflow-checked: false on a negative dim, or when
 * the product of its non-zero dims overflows int64, even with a 0 among
 * them ([2^40, 2^40, 0] is refused, as ONNX Runtime refuses it). Every
 * tensor is sized by it, so any product of some of a tensor's dims fits. */
CG_API bool cg_shape_numel(int rank, const int64_t *dims, int64_t *out);
/* The dims Shape (opset 15: start, end) takes of a shape of rank `rank`:
 * a negative start or end counts from the end, both are clamped to
 * [0, rank]. Returns how many (0 when end <= start); *first is the first. */
CG_API int64_t cg_shape_slice(int64_t rank, int64_t start, int64_t end, int64_t *first);
/* Whether two shapes are the same: equal ranks and equal dims. */
CG_API bool cg_shape_equal(int rank_a, const int64_t *a, int rank_b, const int64_t *b);
/* Bytes of numel elements of dtype (sizeof(cg_string) each for STRING),
 * overflow-checked; false on overflow or a dtype without a byte layout. */
CG_API bool cg_tensor_byte_size(cg_dtype dtype, int64_t numel, size_t *out);
/* Bytes of t's payload (t's numel is already known to fit). */
CG_API size_t cg_tensor_bytes(const cg_tensor *t);

/* --- tensors ---------------------------------------------------------------- */

/* Allocates a zero-filled tensor (strings NULL, data never NULL) of the given
 * type and shape. Fails, before allocating, on a bad rank or shape, a dtype
 * without a byte layout, or more than max_bytes (0 = no limit). */
CG_API CG_NODISCARD cg_status cg_tensor_alloc(cg_tensor *t, cg_dtype dtype, int rank,
                                              const int64_t *dims, size_t max_bytes, cg_error *err);
/* Frees t's payload (and strings) and zeroes the struct; NULL is fine. */
CG_API void cg_tensor_release(cg_tensor *t);
/* Sets string element i of a STRING tensor to a copy of len bytes (which may
 * contain NUL bytes; a NUL is appended). */
CG_API CG_NODISCARD cg_status cg_tensor_set_string(cg_tensor *t, int64_t i, const char *s,
                                                   size_t len);
/* String element i of a STRING tensor: its bytes (never NULL) and length. */
CG_API const char *cg_tensor_string(const cg_tensor *t, int64_t i, size_t *len);
/* Heap bytes a string element of len bytes costs (its block, the NUL and
 * the allocator's overhead): what memory limits count for it. */
static inline size_t cg_string_heap_bytes(size_t len)
{
    return len > SIZE_MAX - 48 ? SIZE_MAX : len + 1 + 32;
}
/* Orders two byte strings like memcmp, a proper prefix first (<0, 0, >0). */
CG_API int cg_string_compare(const char *a, size_t alen, const char *b, size_t blen);

/* Element i of a numeric tensor as double / int64 (any numeric dtype). */
CG_API double cg_tensor_get_f64(const cg_tensor *t, int64_t i);
/* Elements [at, at + n) of a numeric tensor as double into out: the values
 * cg_tensor_get_f64 gives, one dtype dispatch for the block. */
CG_API void cg_tensor_get_f64_block(const cg_tensor *t, int64_t at, int64_t n, double *out);
CG_API int64_t cg_tensor_get_i64(const cg_tensor *t, int64_t i);
/* Writes element i from double / int64 with ONNX Cast's rules (no
 * saturation; NaN to an integer gives 0; out-of-range clamps to int64);
 * a complex element gets the value as its real part and 0 as its
 * imaginary part; string, float8 and 4-bit elements are left as they are. */
CG_API void cg_tensor_set_f64(cg_tensor *t, int64_t i, double v);
CG_API void cg_tensor_set_i64(cg_tensor *t, int64_t i, int64_t v);

/* A new tensor holding src with its dims permuted: out dim k is src dim
 * perm[k] (numpy's transpose(perm)). perm must be a permutation of
 * 0..rank-1; STRING tensors are refused. */
CG_API CG_NODISCARD cg_status cg_tensor_permute(const cg_tensor *src, const int *perm, cg_tensor *out,
                            cg_error *err);

/* A new tensor of element type `to` holding src's values, src's shape:
 * between integer types (bool included) through int64, otherwise through
 * double, with cg_tensor_set_f64's rules (float to float16 rounds to
 * nearest even). STRING on either side is refused (CG_UNSUPPORTED). */
CG_API CG_NODISCARD cg_status cg_tensor_convert(const cg_tensor *src, cg_dtype to,
                                                cg_tensor *out, cg_error *err);

/* --- values ----------------------------------------------------------------- */

/* A new TENSOR value with a zero-filled payload, no allocation limit. */
CG_API CG_NODISCARD cg_status cg_value_alloc_tensor(cg_dtype dtype, int rank, const int64_t *dims,
                                                    cg_value **out, cg_error *err);
/* Wraps *t in a new TENSOR value, taking its payload (t is zeroed). */
CG_API CG_NODISCARD cg_status cg_value_from_tensor(cg_tensor *t, cg_value **out, cg_error *err);
/* Deep copy (tensor payload, strings, sequence items). */
CG_API CG_NODISCARD cg_status cg_value_copy(const cg_value *src, cg_value **out, cg_error *err);
/* Heap bytes the value's payloads take: tensor data, string elements
 * (cg_string_heap_bytes each) and sequence items (saturating). What memory
 * budgets count for a value. */
CG_API uint64_t cg_value_bytes(const cg_value *v);
/* Frees only the value's contents (not the struct). */
CG_API void cg_value_clear(cg_value *v);
/* Frees the value and everything it owns; NULL is fine. */
CG_API void cg_value_free(cg_value *v);

#ifdef __cplusplus
}
#endif
#endif
