/*
 * The reference CPU runtime: plan once, run many.
 *
 * cg_runtime_init resolves every node's schema and kernel and validates the
 * graph; cg_runtime_run binds named inputs, runs the schedule and returns the
 * graph outputs. Intermediate values are freed (or their arena slots reused)
 * once their last consumer has run. An observer callback sees every value as
 * it is produced (used by bisection and dumping) without the runtime keeping it.
 *
 * With an assignment (convgate/partition.h) in the options, every partition
 * owned by an executing target is compiled once at init and runs as one
 * step of the schedule; the other nodes run on the reference kernels.
 */
#ifndef CONVGATE_RUNTIME_H
#define CONVGATE_RUNTIME_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "convgate/model.h"
#include "convgate/status.h"
#include "convgate/tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct cg_runtime cg_runtime;
struct cg_budget;     /* convgate/budget.h */
struct cg_assignment; /* convgate/partition.h */
struct cg_type_env;   /* convgate/target.h */

/* How the reference kernels compute one main-graph node (see
 * cg_runtime_options.node_precision). The fp16 modes emulate a target that
 * computes in half precision: every float32 tensor the node reads is
 * rounded to fp16 first (values from outside the emulated nodes: graph
 * inputs, CPU nodes, initializers; the crossing of a partition boundary)
 * and every float32 tensor it writes is rounded to fp16 (fp16 storage).
 * Rounding is idempotent, so values passed between emulated nodes are not
 * copied again. */
typedef enum cg_node_precision {
    CG_NODE_PREC_FP32 = 0,       /* as written */
    CG_NODE_PREC_FP16 = 1,       /* fp16 storage, reductions/dots accumulate in fp32 */
    CG_NODE_PREC_FP16_ACC16 = 2, /* fp16 storage and fp16 accumulation */
    /* float64 mode only: fp16 storage, and every running sum and product of
     * the accumulating kernels rounded to fp16's 11-bit significand with an
     * unbounded exponent (cg_fp16_round_significand): the noise of fp16
     * accumulation without its overflow, the floor of a device that sums
     * in fp16 (docs/gate3.md) */
    CG_NODE_PREC_FP16_SUM11 = 3
} cg_node_precision;

/* Vector instruction set of the reference kernels (cg_runtime_options.simd).
 * Each vectorized kernel has a portable C path and AVX2 / AVX-512 paths
 * chosen at run time; the portable path is the reference for them, and the
 * vector paths differ from it only by float rounding (docs/BENCHMARKS.md
 * lists where summation order or math-function approximations differ). */
typedef enum cg_simd {
    CG_SIMD_AUTO = 0,     /* $CG_SIMD if set (portable, avx2, avx512), else the best the CPU has */
    CG_SIMD_PORTABLE = 1, /* plain C only */
    CG_SIMD_AVX2 = 2,     /* AVX2 + FMA + F16C */
    CG_SIMD_AVX512 = 3    /* AVX-512 F/BW/DQ/VL */
} cg_simd;

/* "auto", "portable", "avx2", "avx512". */
CG_API const char *cg_simd_name(cg_simd s);
/* Parses a cg_simd_name; false when unknown. */
CG_API bool cg_simd_parse(const char *name, cg_simd *out);

typedef struct cg_runtime_options {
    size_t max_alloc_bytes; /* one allocation above this fails with CG_LIMIT; 0 = default 4 GiB */
    /* Called for every value produced by a node of the main graph, in
     * execution order. Return non-OK to stop the run. */
    cg_status (*observe)(void *user, const cg_node *node, const char *name, const cg_value *value);
    void *observe_user;
    /* Placement to execute; NULL runs every node on the reference kernels.
     * Partitions of executing targets (target->kind CG_TARGET_EXECUTING) are
     * compiled at init with `types` (the environment the assignment was made
     * with); partitions of profiled targets run on the reference kernels.
     * A partition runs once all its inputs exist, as one step: the observer
     * sees the values leaving it (attributed to the node producing each),
     * not the values inside it. The assignment, its targets and `types`
     * must outlive the runtime. */
    const struct cg_assignment *assignment;
    const struct cg_type_env *types;
    /* Optional per-node timing of the main graph (convgate profile): NULL,
     * or graph->node_count entries indexed like graph->nodes; every run adds
     * the thread CPU seconds of each reference kernel it runs (a control-flow
     * node's bodies included). Nodes inside executing partitions are timed
     * per partition instead (cg_runtime_partition_info). The caller zeroes
     * it and keeps it alive as long as the runtime. */
    double *node_seconds;
    /* Per main-graph node (graph->nodes order), a cg_node_precision; NULL:
     * every node as written. Applies to nodes that run on the reference
     * kernels (not to executing partitions). Must outlive the runtime. */
    const uint8_t *node_precision;
    /* Float64 reference mode: every float32, float16 and bfloat16 value is
     * promoted to float64 where it enters the runtime (initializers at init,
     * inputs when bound, Cast targets and other element-type attributes,
     * Constant values), so every kernel computes in double and the outputs
     * come back as DOUBLE (inputs may be fed as their declared float type or
     * as DOUBLE). A kernel that would still produce a float32/16 value fails
     * the run naming the node. With node_precision, CG_NODE_PREC_FP16 rounds
     * every stored value to fp16 and computes in double (the fp16 storage
     * floor), CG_NODE_PREC_FP16_SUM11 rounds the running sums to fp16's
     * significand too (the F16 devices' floor); CG_NODE_PREC_FP16_ACC16 is
     * refused, and CG_NODE_PREC_FP16_SUM11 is refused without float64.
     * docs/float64.md. */
    bool float64;
    /* Memory and time limits of every run (convgate/budget.h); NULL: the
     * process budget. Must outlive the runtime. */
    struct cg_budget *budget;
    /* A graph output whose produced shape contradicts its declared one (the
     * rank, or a dimension given as a number): false records a warning
     * (cg_runtime_warnings), as ONNX Runtime logs one; true fails the run
     * (verification wants that). A produced element type or kind (tensor,
     * sequence) other than the declared one always fails the run: ONNX
     * Runtime refuses such a model when it loads it. */
    bool strict_output_shapes;
    /* Threads the reference kernels use, the caller's included: 0 or 1 runs
     * everything on the calling thread (the default); N > 1 gives the
     * runtime its own pool of N - 1 worker threads, created at init and
     * joined by cg_runtime_free, over which the large kernels split their
     * work (by output rows or channels: the split depends only on N). */
    int threads;
    /* A level above what the CPU supports is lowered to the best it has. */
    cg_simd simd;
    /* The graph outputs a run returns: 0, every one; N, the first N. The
     * others, declared outputs only so that they are seen (bisect exposes
     * a partition's inner values this way), reach the observer and are
     * then released as any inner value is, instead of every one of them
     * being held to the end of the run. */
    size_t returned_outputs;
} cg_runtime_options;

CG_API void cg_runtime_options_default(cg_runtime_options *opt);

CG_API CG_NODISCARD cg_status cg_runtime_init(const cg_model *model, const cg_runtime_options *opt,
                                              cg_runtime **out, cg_error *err);
CG_API void cg_runtime_free(cg_runtime *rt);
/* Changes the reference kernels' threads (cg_runtime_options.threads)
 * between runs: a caller whose other work has finished hands its cores to
 * the runtime's next run. Results do not change (kernels split by output
 * rows or channels). A delegate partition keeps the threads it was made
 * with. Not while a run is in progress. */
CG_API CG_NODISCARD cg_status cg_runtime_set_threads(cg_runtime *rt, int threads, cg_error *err);

/* Runtimes over one model share its constant buffers while they are alive
 * at the same time: the aligned copies of weights stored at odd offsets
 * (exporters put raw_data anywhere) and weights packed for the kernels. A
 * hold on the model keeps those buffers between runtimes built one after
 * another (a gate builds up to seven), so each is made once. Results do not
 * depend on it. The model must outlive the hold. NULL when the model has
 * nothing to hold or memory is short (runtimes then make their own). */
typedef struct cg_weights_hold cg_weights_hold;
CG_API cg_weights_hold *cg_runtime_hold_weights(const cg_model *model);
CG_API void cg_runtime_hold_free(cg_weights_hold *hold);

/* One named input or output. */
typedef struct cg_named_value {
    const char *name;
    cg_value *value;
} cg_named_value;

/* Runs the main graph. `inputs` must cover every graph input that is not
 * also an initializer (those default to the initializer). On success
 * *outputs is a malloc'd array of *output_count values in graph-output order;
 * release with cg_runtime_free_outputs. */
CG_API CG_NODISCARD cg_status cg_runtime_run(cg_runtime *rt, const cg_named_value *inputs,
                                             size_t input_count, cg_named_value **outputs,
                                             size_t *output_count, cg_error *err);
CG_API void cg_runtime_free_outputs(cg_named_value *outputs, size_t count);
/* Plans the memory of runs fed inputs of these shapes now rather than in
 * the first such run: the size of every intermediate value followed from
 * the input shapes, one arena placed, and its pages touched, which on a
 * host that backs fresh memory lazily is most of what a first run pays over
 * a warm one. Inputs not given take their declared shapes; the values are
 * only looked at (their shapes, and the contents of small integer ones).
 * cg_runtime_init does the same for the declared shapes when every input
 * has a fixed shape. Where a size cannot be followed (an op without a rule,
 * a data-dependent shape), and in the float64 mode, with fp16 emulation or
 * with an assignment, nothing happens and the first run plans as before; a
 * prediction a run finds wrong is dropped after that run. Results
 * never depend on it. Fails (CG_USAGE) only on a NULL runtime, or NULL
 * inputs with a count. */
CG_API CG_NODISCARD cg_status cg_runtime_prepare(cg_runtime *rt, const cg_named_value *inputs,
                                                 size_t input_count, cg_error *err);
/* Whether the runtime holds a memory plan now (made at set-up, by
 * cg_runtime_prepare, or by a run): a run fed the shapes it was made for
 * touches no fresh memory for its intermediate values. */
CG_API bool cg_runtime_memory_planned(const cg_runtime *rt);
/* Warnings of the last run, one per line (NULL when none): outputs whose
 * shape contradicts the declared one. Valid until the next run. */
CG_API const char *cg_runtime_warnings(const cg_runtime *rt);

/* Partitions this runtime executes on a target (0 without an assignment). */
CG_API size_t cg_runtime_partition_count(const cg_runtime *rt);

typedef struct cg_runtime_partition_info {
    int id;                 /* the assignment's partition id */
    const char *target;     /* target name */
    size_t node_count;
    const void *state;      /* the target's compiled state (xnnpack: starts with a
                               cg_xnnpack_report, src/delegate/xnnpack/xnnpack.h) */
    uint64_t runs;
    double seconds;         /* wall time inside the target's run, boundary work included */
    /* a nan_clamped target (target.h): runs whose infinite output lanes were
     * checked against the reference, and the lanes set back to NaN */
    uint64_t nan_checks, nan_restored;
} cg_runtime_partition_info;

/* CG_USAGE when i is out of range. */
CG_API CG_NODISCARD cg_status cg_runtime_partition_info_get(const cg_runtime *rt, size_t i,
                                                            cg_runtime_partition_info *out,
                                                            cg_error *err);

/* Converts a TensorProto (inline or resolved external) to a runtime value. */
CG_API CG_NODISCARD cg_status cg_value_from_tensor_proto(const cg_tensor_proto *tp, cg_value **out,
                                                         cg_error *err);

#ifdef __cplusplus
}
#endif
#endif
