/*
 * Internal machinery of the elementwise kernel family (Add, Relu, Cast, ...).
 *
 * Every elementwise op is a "row" function applied by one driver:
 *   row(out, in[], stride[], n, params)
 * computes n output elements, contiguous in `out`, reading input k at
 * in[k][i * stride[k]] (strides in elements; 0 means a broadcast value).
 * cg_ew_run walks the output with an odometer over its (coalesced) outer
 * dimensions and calls the row once per innermost run, so the row loop is the
 * only hot loop and same-shape operands collapse to a single call.
 *
 * Rows are generated per (op, C type) from the type lists below; a kernel
 * picks one from a table indexed by cg_dtype. float16/bfloat16 are never seen
 * by rows: cg_ew_widen converts them to float32 scratch, rows compute in
 * float, and cg_ew_finish rounds the result once into the real output.
 *
 * Rows cannot fail through their return value (the inner loop stays plain);
 * a row that meets a bad value (integer division by zero) sets p->error and
 * the driver's caller turns it into a cg_kernel_fail.
 */
#ifndef CG_RUN_OPS_ELEMENTWISE_H
#define CG_RUN_OPS_ELEMENTWISE_H

#include <stdint.h>

#include "run/kernel.h"

#define CG_EW_MAX_INPUTS 3

/* Values a row can flag in cg_ew_params.error. */
enum {
    CG_EW_OK = 0,
    CG_EW_ERR_DIV_ZERO,  /* integer division or modulo by zero */
    CG_EW_ERR_OVERFLOW,  /* signed MIN / -1 */
    CG_EW_ERR_ZERO_NEG,  /* integer 0 raised to a negative power */
    CG_EW_ERR_NOMEM      /* string copy failed */
};

/* Attribute values and scratch state shared by a kernel and its rows. The
 * bound pairs carry one field per row "kind" (see the type lists) so integer
 * rows compare exactly, without a round trip through double. */
typedef struct cg_ew_params {
    float alpha_f32, beta_f32, gamma_f32;   /* op attributes (LeakyRelu alpha, */
    double alpha_f64, beta_f64, gamma_f64;  /* ...) per float kind */
    float lo_f32, hi_f32;                   /* Clip bounds per kind */
    double lo_f64, hi_f64;
    int64_t lo_s, hi_s;
    uint64_t lo_u, hi_u;
    bool flag_a, flag_b;        /* IsInf detect_negative / detect_positive */
    cg_dtype ta, tb, to;        /* compute dtypes of inputs/output (generic rows) */
    cg_tensor *out;             /* output tensor, for rows writing strings */
    const struct cg_simd_ops *simd; /* vector entries (run/ops/simd.h), set by the driver */
    cg_kernel_ctx *k;           /* set by the driver: float rows of big outputs run on
                                   the kernel's threads (rows that flag errors never do) */
    int error;                  /* CG_EW_ERR_*, set by rows */
} cg_ew_params;

typedef void (*cg_ew_row_fn)(void *out, const void *const *in, const int64_t *stride,
                             int64_t n, cg_ew_params *p);

/* --- type lists -------------------------------------------------------------
 * X(dtype suffix, C type, name suffix, wrap type, kind, A)
 *  - wrap type: integer arithmetic is done in this unsigned type (at least
 *    unsigned int wide) so overflow wraps instead of being undefined;
 *  - kind: which cg_ew_params bound field (lo_<kind>) the type compares with.
 * A is passed through for the generator (usually the op name). */
#define CG_EW_SINTS(X, A)                                                      \
    X(INT8, int8_t, i8, unsigned, s, A)                                        \
    X(INT16, int16_t, i16, unsigned, s, A)                                     \
    X(INT32, int32_t, i32, uint32_t, s, A)                                     \
    X(INT64, int64_t, i64, uint64_t, s, A)
#define CG_EW_UINTS(X, A)                                                      \
    X(UINT8, uint8_t, u8, unsigned, u, A)                                      \
    X(UINT16, uint16_t, u16, unsigned, u, A)                                   \
    X(UINT32, uint32_t, u32, uint32_t, u, A)                                   \
    X(UINT64, uint64_t, u64, uint64_t, u, A)
#define CG_EW_FLOATS(X, A)                                                     \
    X(FLOAT, float, f32, float, f32, A)                                        \
    X(DOUBLE, double, f64, double, f64, A)
#define CG_EW_INTS(X, A) CG_EW_SINTS(X, A) CG_EW_UINTS(X, A)
#define CG_EW_SIGNED(X, A) CG_EW_FLOATS(X, A) CG_EW_SINTS(X, A)
#define CG_EW_NUMS(X, A) CG_EW_FLOATS(X, A) CG_EW_INTS(X, A)

/* --- row templates ----------------------------------------------------------
 * EXPR sees the current elements as x (and y), and p. The contiguous and
 * scalar-operand cases get their own loops so the compiler can vectorize
 * them; the last case handles any stride. Rows never write where they read
 * (outputs are fresh buffers), so the fast loops use restrict pointers, and
 * they run in fixed blocks of CG_EW_BLOCK: a loop of known trip count is
 * vectorized even by gcc -O2's very-cheap cost model. */
#define CG_EW_BLOCK 8

/* A contiguous loop in blocks; LX / LY load x and y at index k. */
#define CG_EW_BLOCK_LOOP(TA, TB, TO, EXPR, LX, LY)                             \
    int64_t i = 0;                                                             \
    for (; i + CG_EW_BLOCK <= n; i += CG_EW_BLOCK)                             \
        for (int j = 0; j < CG_EW_BLOCK; j++) {                                \
            const int64_t k = i + j;                                           \
            const TA x = LX;                                                   \
            const TB y = LY;                                                   \
            o[k] = (TO)(EXPR);                                                 \
        }                                                                      \
    for (; i < n; i++) {                                                       \
        const int64_t k = i;                                                   \
        const TA x = LX;                                                       \
        const TB y = LY;                                                       \
        o[k] = (TO)(EXPR);                                                     \
    }

/* gcc honours restrict on parameters (also once inlined), not on locals:
 * hence the small helpers. */
#define CG_EW_ROW1(name, TI, TO, EXPR)                                         \
    static inline void name##_c(TO *restrict o, const TI *restrict a,          \
                                int64_t n, cg_ew_params *p)                    \
    {                                                                          \
        (void)p;                                                               \
        int64_t i = 0;                                                         \
        for (; i + CG_EW_BLOCK <= n; i += CG_EW_BLOCK)                         \
            for (int j = 0; j < CG_EW_BLOCK; j++) {                            \
                const TI x = a[i + j];                                         \
                o[i + j] = (TO)(EXPR);                                         \
            }                                                                  \
        for (; i < n; i++) {                                                   \
            const TI x = a[i];                                                 \
            o[i] = (TO)(EXPR);                                                 \
        }                                                                      \
    }                                                                          \
    static void name(void *o_, const void *const *in_, const int64_t *st,      \
                     int64_t n, cg_ew_params *p)                               \
    {                                                                          \
        TO *o = (TO *)o_;                                                      \
        const TI *a = (const TI *)in_[0];                                      \
        const int64_t sa = st[0];                                              \
        if (sa == 1) {                                                         \
            name##_c(o, a, n, p);                                              \
            return;                                                            \
        }                                                                      \
        for (int64_t i = 0; i < n; i++) {                                      \
            const TI x = a[i * sa];                                            \
            o[i] = (TO)(EXPR);                                                 \
        }                                                                      \
    }

#define CG_EW_ROW2(name, TA, TB, TO, EXPR)                                     \
    static inline void name##_vv(TO *restrict o, const TA *restrict a,         \
                                 const TB *restrict b, int64_t n,              \
                                 cg_ew_params *p)                              \
    {                                                                          \
        (void)p;                                                               \
        CG_EW_BLOCK_LOOP(TA, TB, TO, EXPR, a[k], b[k])                         \
    }                                                                          \
    static inline void name##_vs(TO *restrict o, const TA *restrict a,         \
                                 const TB y0, int64_t n, cg_ew_params *p)      \
    {                                                                          \
        (void)p;                                                               \
        CG_EW_BLOCK_LOOP(TA, TB, TO, EXPR, a[k], y0)                           \
    }                                                                          \
    static inline void name##_sv(TO *restrict o, const TA x0,                  \
                                 const TB *restrict b, int64_t n,              \
                                 cg_ew_params *p)                              \
    {                                                                          \
        (void)p;                                                               \
        CG_EW_BLOCK_LOOP(TA, TB, TO, EXPR, x0, b[k])                           \
    }                                                                          \
    static void name(void *o_, const void *const *in_, const int64_t *st,      \
                     int64_t n, cg_ew_params *p)                               \
    {                                                                          \
        TO *o = (TO *)o_;                                                      \
        const TA *a = (const TA *)in_[0];                                      \
        const TB *b = (const TB *)in_[1];                                      \
        const int64_t sa = st[0], sb = st[1];                                  \
        if (sa == 1 && sb == 1) {                                              \
            name##_vv(o, a, b, n, p);                                          \
        } else if (sa == 1 && sb == 0) {                                       \
            name##_vs(o, a, b[0], n, p);                                       \
        } else if (sa == 0 && sb == 1) {                                       \
            name##_sv(o, a[0], b, n, p);                                       \
        } else {                                                               \
            for (int64_t i = 0; i < n; i++) {                                  \
                const TA x = a[i * sa];                                        \
                const TB y = b[i * sb];                                        \
                o[i] = (TO)(EXPR);                                             \
            }                                                                  \
        }                                                                      \
    }

/* Generators for the type lists: OP##_E(T, W, K) is the op's expression. */
#define CG_EW_GEN1(DT, T, SFX, W, K, OP) CG_EW_ROW1(ew_##OP##_##SFX, T, T, OP##_E(T, W, K))
#define CG_EW_GEN1_BOOL(DT, T, SFX, W, K, OP)                                  \
    CG_EW_ROW1(ew_##OP##_##SFX, T, uint8_t, OP##_E(T, W, K))
#define CG_EW_GEN2(DT, T, SFX, W, K, OP) CG_EW_ROW2(ew_##OP##_##SFX, T, T, T, OP##_E(T, W, K))
#define CG_EW_GEN2_BOOL(DT, T, SFX, W, K, OP)                                  \
    CG_EW_ROW2(ew_##OP##_##SFX, T, T, uint8_t, OP##_E(T, W, K))
/* Table entry: [CG_DTYPE_FLOAT] = ew_add_f32, */
#define CG_EW_REG(DT, T, SFX, W, K, OP) [CG_DTYPE_##DT] = ew_##OP##_##SFX,

/* Sets alpha/beta/gamma for both float kinds. */
void cg_ew_set_attrs(cg_ew_params *p, double alpha, double beta, double gamma);

/* --- driver and helpers (elementwise_core.c) -------------------------------- */


/* The dtype rows compute in: FLOAT for float16/bfloat16, else dt. */
cg_dtype cg_ew_compute_dtype(cg_dtype dt);

/* Applies fn to every element of out, which must already have the
 * multidirectional broadcast shape of the nin inputs. */
void cg_ew_run(int nin, const cg_tensor *const *in, cg_tensor *out, cg_ew_row_fn fn,
               cg_ew_params *p);

/* Writes "[2,3,4]" into buf. */
void cg_ew_shape_str(const cg_tensor *t, char *buf, size_t size);

/* Allocates output 0 with the broadcast shape of the inputs; fails naming
 * both shapes when they are incompatible. */
cg_status cg_ew_output(cg_kernel_ctx *k, int nin, const cg_tensor *const *in,
                       cg_dtype dtype, cg_tensor **out);

/* If *t is float16/bfloat16, replaces *t with a float32 copy held in
 * `storage` (data in scratch); otherwise leaves it alone. */
cg_status cg_ew_widen(cg_kernel_ctx *k, const cg_tensor **t, cg_tensor *storage);

/* The tensor rows should write: `out` itself, or for a float16/bfloat16
 * output a float32 scratch tensor held in `storage`. */
cg_status cg_ew_work(cg_kernel_ctx *k, cg_tensor *out, cg_tensor *storage, cg_tensor **work);

/* Rounds a float32 work tensor into out when they differ, then turns
 * p->error into a failure naming the op. */
cg_status cg_ew_finish(cg_kernel_ctx *k, const cg_tensor *work, cg_tensor *out,
                       const cg_ew_params *p);

/* Before opset 7, binary ops broadcast only with broadcast=1, aligning B to
 * A at `axis` (default: trailing). Rewrites *b as a view of B with A's rank
 * (in `storage`) so the numpy broadcast rules give the legacy result. */
cg_status cg_ew_legacy_broadcast(cg_kernel_ctx *k, const cg_tensor *a, const cg_tensor **b,
                                 cg_tensor *storage);

/* The common path of broadcasting ops: requires inputs 0..nin-1 (all of
 * dtype `key` family when same_type), widens half floats when `widen`,
 * allocates output 0 of out_dtype (or the inputs' dtype when out_dtype is
 * UNDEFINED), looks up table[compute dtype of input 0] and runs it. */
cg_status cg_ew_apply(cg_kernel_ctx *k, int nin, bool same_type, bool widen,
                      cg_dtype out_dtype, const cg_ew_row_fn *table, cg_ew_params *p);

/* Like cg_ew_apply once the inputs are in hand (and legacy-broadcast):
 * allocates output 0 of out_dtype, widens half floats when `widen`, sets
 * p->ta/tb/to/out and runs fn. */
cg_status cg_ew_apply_fn(cg_kernel_ctx *k, int nin, const cg_tensor *const *in, bool widen,
                         cg_dtype out_dtype, cg_ew_row_fn fn, cg_ew_params *p);

/* Unary ops: output same shape/type as input 0 (or out_dtype when not
 * UNDEFINED), float16/bfloat16 widened. */
cg_status cg_ew_apply_unary(cg_kernel_ctx *k, cg_dtype out_dtype, const cg_ew_row_fn *table,
                            cg_ew_params *p);

#endif
