/*
 * The contract between the executor and operator kernels.
 *
 * A kernel is a pure function of its inputs and the node's attributes:
 *   cg_status kernel(cg_kernel_ctx *k);
 * It validates what it reads (ranks, axes, indices, attribute values) and
 * reports bad values through cg_kernel_fail, which names the node and op.
 * It never aborts, never reads outside a tensor, and never allocates output
 * memory itself: it asks the executor with cg_kernel_output(), which applies
 * the allocation limit and places the buffer in the planned arena.
 *
 * One kernel serves every version of its op: k->since is the since_version
 * of the schema the model's opset resolves to, so version differences (an
 * attribute that became an input, new defaults) are handled by branching on it.
 *
 * Registration: one row per op in a family table src/run/ops/<family>.def,
 *   CG_KERNEL(domain, op_type, function)
 * with domain "" for ai.onnx. src/run/ops.def includes every family table.
 */
#ifndef CG_RUN_KERNEL_H
#define CG_RUN_KERNEL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "convgate/dtype.h"
#include "convgate/model.h"
#include "convgate/runtime.h"
#include "convgate/status.h"
#include "convgate/tensor.h"

typedef struct cg_runtime cg_runtime;
typedef struct cg_exec cg_exec;

/* How a kernel computes floating point. The executor sets it for nodes of a
 * partition that emulates a reduced-precision target (convgate/targetpath.h);
 * it rounds every float32 value such a node reads and writes to fp16 itself,
 * so only kernels that accumulate (reductions, dot products) look at it. */
typedef enum cg_kernel_precision {
    CG_KPREC_FP32 = 0,       /* as written: sums in float32 or wider */
    CG_KPREC_FP16_ACC16 = 1, /* fp16 compute: every partial sum and product
                                rounded to fp16 (overflows to inf at 65504) */
    CG_KPREC_FP16_SUM11 = 2  /* float64 mode: every partial sum and product
                                rounded to fp16's significand, exponent
                                unbounded (cg_fp16_round_significand) */
} cg_kernel_precision;

typedef struct cg_kernel_ctx {
    const cg_node *node;
    const cg_graph *graph; /* the graph (or subgraph) holding node */
    int64_t since;         /* resolved schema since_version */
    int64_t opset;         /* the model's import for node's domain */
    const cg_value *const *inputs; /* NULL entries for omitted optional inputs */
    size_t input_count;
    cg_value **outputs;             /* filled by cg_kernel_output / _value */
    size_t output_count;
    cg_exec *exec;                  /* executor state (allocation, subgraphs) */
    cg_error *err;
    cg_kernel_precision precision;  /* CG_KPREC_FP32 unless emulating fp16 */
} cg_kernel_ctx;

typedef cg_status (*cg_kernel_fn)(cg_kernel_ctx *k);

/* --- inputs ------------------------------------------------------------- */

/* Input i as a tensor, or NULL when omitted/absent (or not a tensor). */
const cg_tensor *cg_kernel_input(const cg_kernel_ctx *k, size_t i);
/* Like cg_kernel_input but fails (names the node) when the input is missing. */
cg_status cg_kernel_require(cg_kernel_ctx *k, size_t i, const cg_tensor **out);

/* --- outputs ------------------------------------------------------------ */

/* Allocates output i with the given type and shape (zero-filled; strings
 * NULL). Fails with CG_LIMIT when the byte size overflows or exceeds the
 * runtime's allocation limit, before allocating. Output i may be unused by
 * the graph (empty name): the call still succeeds and returns a tensor. */
cg_status cg_kernel_output(cg_kernel_ctx *k, size_t i, cg_dtype dtype, int rank,
                           const int64_t *dims, cg_tensor **out);
/* The same, for a kernel that writes every element itself: the buffer is
 * not zero-filled (a pass over every output of a conv net otherwise). */
cg_status cg_kernel_output_uninit(cg_kernel_ctx *k, size_t i, cg_dtype dtype, int rank,
                                  const int64_t *dims, cg_tensor **out);
/* Output i as a whole value (sequence / optional kernels). The kernel fills
 * it; items allocated with cg_value_new_tensor belong to it. */
cg_status cg_kernel_output_value(cg_kernel_ctx *k, size_t i, cg_value **out);
/* A new tensor value (for sequence items), owned by whoever holds it. */
cg_status cg_value_new_tensor(cg_kernel_ctx *k, cg_dtype dtype, int rank,
                              const int64_t *dims, cg_value **out);
/* Deep copy of a value (sequence items, optional payloads). */
cg_status cg_value_clone(cg_kernel_ctx *k, const cg_value *src, cg_value **out);

/* The element type a kernel gives a float tensor it makes from nothing
 * (Constant's value_float, a quantizer's scale): dt, or DOUBLE in the
 * float64 reference mode (cg_runtime_options.float64) when dt is a float
 * type. Kernels whose outputs follow their inputs' types need not ask. */
cg_dtype cg_kernel_float_dtype(const cg_kernel_ctx *k, cg_dtype dt);

/* Scratch memory valid until the kernel returns (freed by the executor);
 * NULL over the allocation limit, the memory budget, or out of memory. */
void *cg_kernel_scratch(cg_kernel_ctx *k, size_t bytes);

/* --- budget ---------------------------------------------------------------- */

/* Counts bytes the kernel allocates or holds until it returns against the
 * run's memory budget: CG_LIMIT (naming the node) when they do not fit.
 * cg_kernel_output, cg_value_new_tensor, cg_value_clone and scratch do it
 * themselves; call it for memory held another way (values a loop gathers). */
cg_status cg_kernel_take_budget(cg_kernel_ctx *k, uint64_t bytes);
/* CG_OK, or CG_LIMIT naming the node once the run's time limit has passed
 * (convgate/budget.h). Kernels whose work is not bounded by their output
 * size call it in their outer loops (Loop/Scan iterations, rows). */
cg_status cg_kernel_check_time(cg_kernel_ctx *k);
/* Whether that time limit has passed, recording nothing: safe on the
 * runtime's worker threads (a job notes it; the kernel then calls
 * cg_kernel_check_time). */
bool cg_kernel_time_up(const cg_kernel_ctx *k);

/* --- attributes ---------------------------------------------------------- */

const cg_attr *cg_kernel_attr(const cg_kernel_ctx *k, const char *name);
int64_t cg_attr_int(const cg_kernel_ctx *k, const char *name, int64_t dflt);
float cg_attr_float(const cg_kernel_ctx *k, const char *name, float dflt);
/* NUL-terminated copy valid for the run; dflt when absent. */
const char *cg_attr_string(const cg_kernel_ctx *k, const char *name, const char *dflt);
/* Pointer to the attribute's ints; *n = 0 and NULL when absent. */
const int64_t *cg_attr_ints(const cg_kernel_ctx *k, const char *name, size_t *n);
const float *cg_attr_floats(const cg_kernel_ctx *k, const char *name, size_t *n);
/* TENSOR attribute converted to a runtime tensor in scratch memory. */
cg_status cg_attr_tensor(cg_kernel_ctx *k, const char *name, cg_tensor **out);

/* --- errors -------------------------------------------------------------- */

/* Records "node 'name' (Op): <message>" with the given status; returns it. */
#if defined(__GNUC__) || defined(__clang__)
__attribute__((format(printf, 3, 4)))
#endif
cg_status cg_kernel_fail(cg_kernel_ctx *k, cg_status status, const char *fmt, ...);

/* --- threads and vector instructions (src/run/kernel_ext.c) --------------- */

/* Threads a kernel may split its work over (cg_runtime_options.threads). */
int cg_kernel_threads(const cg_kernel_ctx *k);
/* Calls fn(arg, t, n) for every t in [0, n), n = cg_kernel_threads(k), on
 * the runtime's threads, and returns when all have returned. fn must only
 * write what share t owns; it cannot fail (collect errors in arg). */
void cg_kernel_parallel(cg_kernel_ctx *k, void (*fn)(void *arg, int t, int n), void *arg);
/* The same when the job is worth waking threads for: `work` (about the
 * multiply-adds or elements it touches) of at least CG_PARALLEL_MIN_WORK;
 * below that, fn(arg, 0, 1) on the calling thread. */
#define CG_PARALLEL_MIN_WORK 200000.0
void cg_kernel_parallel_work(cg_kernel_ctx *k, double work,
                             void (*fn)(void *arg, int t, int n), void *arg);
/* The half-open share [*lo, *hi) of t of n over [0, count), in steps of
 * `align` items (the last share takes the remainder). */
void cg_kernel_share(int64_t count, int64_t align, int t, int n, int64_t *lo, int64_t *hi);
/* The vector instruction set this runtime's kernels use (never AUTO). */
cg_simd cg_kernel_simd(const cg_kernel_ctx *k);

/* --- fused activations (src/run/fuse.c, kernel_ext.c) ----------------------
 * At init the executor may fuse the activation that alone reads a node's
 * output 0 into that node (Conv then Relu, Clip, LeakyRelu, HardSwish, or
 * x * Sigmoid(x)), and a residual Add before it (Conv, Add of another
 * value, then maybe an activation). The kernel sees it as an epilogue:
 * y = act(y + add) with add a tensor the kernel must find of output 0's
 * dtype and shape (else it declines); if it calls
 * cg_kernel_epilogue_take before allocating output 0, it must apply the
 * activation to every element of output 0 itself (the result lands where
 * the activation's output would have, and the activation's step is
 * skipped); if it does not, nothing changes. The kernel applies it with
 * the same arithmetic the activation's own kernel uses, so fusing never
 * changes a value. */
typedef enum cg_epilogue_kind {
    CG_EPI_NONE = 0,
    CG_EPI_RELU,      /* x < 0 ? 0 : x */
    CG_EPI_CLIP,      /* x < a ? a : x, then > b ? b : */
    CG_EPI_LEAKYRELU, /* x >= 0 ? x : a * x */
    CG_EPI_HARDSWISH, /* the vector tables' hardswish (1/6, 1/2) */
    CG_EPI_SILU       /* x * sigmoid(x), the vector tables' silu */
} cg_epilogue_kind;

typedef struct cg_epilogue {
    const cg_tensor *add;    /* added first, elementwise, or NULL */
    cg_epilogue_kind kind;   /* then this activation (NONE: none) */
    float a, b;
} cg_epilogue;

/* The node's fused activation, or NULL. */
const cg_epilogue *cg_kernel_epilogue(const cg_kernel_ctx *k);
/* The kernel will apply it (call before allocating output 0). */
void cg_kernel_epilogue_take(cg_kernel_ctx *k);

/* --- per-node state (src/run/kernel_ext.c) --------------------------------
 * A kernel may keep work that depends only on constant inputs (weights
 * packed for its micro-kernel, converted from float16) from one run to the
 * next: the state lives with the node's step until the runtime is freed.
 * The kernel must check that a state it finds still describes its inputs
 * (keep the input's data pointer and shape in it). */

/* The node's state, NULL until set. */
void *cg_kernel_state(const cg_kernel_ctx *k);
/* Replaces the node's state (the old one is freed with its free_fn);
 * false, and nothing kept, when the kernel runs outside a runtime. */
bool cg_kernel_set_state(cg_kernel_ctx *k, void *state, void (*free_fn)(void *));
/* True when input i is an initializer (or a constant the runtime folded)
 * that no feed can replace: its data is the same on every run. */
bool cg_kernel_input_is_const(const cg_kernel_ctx *k, size_t i);
/* A constant input whose payload is misaligned in the model is read
 * through an aligned copy that is filled lazily. At init (prepare.def) a
 * kernel may read the model's bytes instead: cg_kernel_input_source gives
 * them (same length as the tensor's data, any alignment: read them with
 * memcpy) while the copy is not filled, else NULL; cg_kernel_input_fill
 * fills the copy (a prepare function that reads an input's data calls it
 * first; a no-op when there is no copy). cg_kernel_state_covers says the
 * state stands for input i: while the state matches, the kernel never
 * reads i's data, and when no other reader needs it the copy is never
 * made (the kernel must call cg_kernel_input_fill(k, i) before it reads i
 * at a run whose state does not match). */
const void *cg_kernel_input_source(const cg_kernel_ctx *k, size_t i);
/* Whether input i reaches the kernel as stored (float32) in the float64
 * mode rather than promoted to double: a big initializer of a node whose
 * kernel widens it itself (fold.c marks which). Its bytes: the source
 * above when it gives them, else the tensor's data. */
bool cg_kernel_input_stored64(const cg_kernel_ctx *k, size_t i);
void cg_kernel_input_fill(cg_kernel_ctx *k, size_t i);
void cg_kernel_state_covers(cg_kernel_ctx *k, size_t i);

/* --- shared helpers (src/run/tensor.c) ------------------------------------ */

/* Multidirectional (numpy) broadcast of two shapes; false if incompatible. */
bool cg_broadcast_shapes(int ra, const int64_t *a, int rb, const int64_t *b, int *rout,
                         int64_t *out);
/* Strides (in elements) of `in` (rank rin) viewed as broadcast to `out`
 * (rank rout): 0 along broadcast dims. */
void cg_broadcast_strides(int rin, const int64_t *in, int rout, const int64_t *out,
                          int64_t *strides);
/* Normalizes axis in [-rank, rank) to [0, rank); false when out of range. */
bool cg_normalize_axis(int64_t axis, int rank, int64_t *out);

#endif
