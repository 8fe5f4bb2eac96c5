/*
 * Profiling and the cost model: what a placement costs in time.
 *
 * Measurements (src/cost/profile.c), all in thread CPU time (a shared
 * machine's other processes do not count): warm per-node times of the reference
 * runtime (median over N runs, the first run and init reported apart as
 * cold), and for executing targets each partition compiled and run on its
 * own with the inputs a reference run produced, each boundary crossing timed
 * as the work the delegate does there (a copy, or a copy with NCHW<->NHWC
 * transposition), and the real mixed run of the runtime with the
 * assignment.
 *
 * The estimate (cg_cost_estimate_build) adds three parts, through
 * cg_cost_latency (convgate/cost.h): the accelerated time (executing
 * targets: the partition's measured time less its boundary work; profiled
 * targets: each node's reference time divided by the ASSUMED speedup of its
 * op class), the unchanged remainder (reference time of the CPU nodes plus
 * the runtime's per-run work outside any node), and the boundary cost
 * (executing: measured; profiled: an ASSUMED fixed cost per crossing plus
 * bytes over an assumed bandwidth). Assumptions are never measurements:
 * every report built from them says so (docs/cost-model.md).
 */
#ifndef CONVGATE_PROFILE_H
#define CONVGATE_PROFILE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "convgate/assign.h"
#include "convgate/cost.h"
#include "convgate/partition.h"
#include "convgate/progress.h"
#include "convgate/runtime.h"

#ifdef __cplusplus
extern "C" {
#endif

/* --- op classes and assumptions ------------------------------------------------------ */

typedef enum cg_op_class {
    CG_OP_CLASS_CONV = 0,     /* Conv, ConvTranspose, ... */
    CG_OP_CLASS_MATMUL,       /* MatMul, Gemm, ... */
    CG_OP_CLASS_POOL,         /* pooling */
    CG_OP_CLASS_NORM,         /* BatchNormalization, LayerNormalization, Softmax, ... */
    CG_OP_CLASS_ELEMENTWISE,  /* Add, Mul, Relu, Sigmoid, Clip, ... */
    CG_OP_CLASS_REDUCE,       /* Reduce*, ArgMax, ... */
    CG_OP_CLASS_DATA,         /* Reshape, Transpose, Concat, Slice, ...: data movement */
    CG_OP_CLASS_OTHER,
    CG_OP_CLASS_COUNT
} cg_op_class;

CG_API const char *cg_op_class_name(cg_op_class c); /* "conv", "matmul", ... */
CG_API cg_op_class cg_op_class_of(const char *op_type);
/* false when name is not a class name */
CG_API bool cg_op_class_from_name(const char *name, cg_op_class *out);

/* How profiled targets are costed: assumptions, printed as such. */
typedef struct cg_cost_assumptions {
    double speedup[CG_OP_CLASS_COUNT]; /* > 0: how much faster the target runs that class */
    double boundary_fixed_us;          /* >= 0: fixed cost of one crossing */
    double bandwidth_gbps;             /* > 0: GB/s (1e9 bytes) a crossing copies at */
} cg_cost_assumptions;

/* The stated defaults (docs/cost-model.md): conv 4, matmul 4, pool 2,
 * norm 2, elementwise 2, reduce 2, data 1, other 1; 20 us per crossing;
 * 10 GB/s. */
CG_API void cg_cost_assumptions_default(cg_cost_assumptions *as);
/* CG_USAGE naming the field when a value is out of range or not finite. */
CG_API CG_NODISCARD cg_status cg_cost_assumptions_check(const cg_cost_assumptions *as,
                                                        cg_error *err);

/* Assumed cost of one crossing of `bytes` bytes, milliseconds. */
CG_API double cg_cost_assumed_crossing_ms(const cg_cost_assumptions *as, uint64_t bytes);
/* The cost of crossing b of a, milliseconds: at the rates the target it
 * enters (or, entering the CPU, leaves) states (cg_target.crossing_*),
 * else at the assumptions. Bytes count only when the shape is known. */
CG_API double cg_cost_crossing_ms(const cg_cost_assumptions *as, const cg_assignment *a,
                                  const cg_boundary *b);

/* --- the estimate --------------------------------------------------------------------- */

/* What the estimate is built from. */
typedef struct cg_cost_inputs {
    const cg_assignment *assignment; /* main graph */
    const double *node_ms;  /* per node of assignment->graph: warm reference time, >= 0 */
    double overhead_ms;     /* >= 0: per-run runtime work outside any node */
    /* Per partition (indexed like assignment->partitions), or NULL: the
     * measured time of the partition on its target without its boundary
     * work, with NaN for partitions not measured (then the assumptions
     * apply), and the measured boundary work and crossing count. */
    const double *partition_ms;
    const double *partition_boundary_ms;
    const size_t *partition_crossings;
    const cg_cost_assumptions *assume; /* NULL: the defaults */
} cg_cost_inputs;

typedef struct cg_cost_estimate {
    size_t nodes_total, nodes_on_target;
    double reference_ms;   /* B: sum of node_ms + overhead_ms */
    double inside_ms;      /* A: reference time of the nodes inside partitions */
    double time_coverage;  /* A / B (0 when B is 0) */
    double accelerated_ms; /* the partitions' time on their targets */
    double remainder_ms;   /* B - A */
    double boundary_ms;    /* all crossings */
    int64_t crossings;
    double mixed_ms;       /* accelerated + remainder + boundary */
    double gain_ms;        /* A - accelerated: what moving saves before crossings */
    bool assumed;          /* some part comes from assumptions */
    bool measured;         /* some part comes from partition measurements */
    /* the costliest CPU node (SIZE_MAX when every node is on a target) */
    size_t top_cpu_node;
    double top_cpu_ms;
    /* flags of the verdict */
    bool fallback_dominates;    /* some node placed, and the top CPU node takes >= 10% of B
                                   and more than the accelerated time */
    bool boundary_exceeds_gain; /* boundary_ms > gain_ms (with at least one partition) */
    bool valid_latency;         /* `latency` was computed (B > 0) */
    cg_latency_result latency;  /* the same sum through cg_cost_latency (S = A / accelerated) */
} cg_cost_estimate;

/* Reference time of the nodes of partition index pi. */
CG_API double cg_cost_partition_reference_ms(const cg_assignment *a, const double *node_ms,
                                             size_t pi);
/* Assumed time of partition pi on its target: each node's reference time
 * over its class speedup. */
CG_API double cg_cost_partition_assumed_ms(const cg_assignment *a, const double *node_ms, size_t pi,
                                           const cg_cost_assumptions *as);

/* Validates the inputs (non-negative finite times) and fills out. Ledger
 * crossings (assignment->boundaries) touching a measured partition are
 * costed by its measurement; the others by the boundary model. */
CG_API CG_NODISCARD cg_status cg_cost_estimate_build(const cg_cost_inputs *in,
                                                     cg_cost_estimate *out, cg_error *err);

/* One sentence for the verdict: time coverage, the estimate, the costliest
 * CPU node and the warnings; "(assumed ...)" when assumptions were used. */
CG_API void cg_cost_verdict_text(const cg_cost_estimate *e, const cg_assignment *a, char *text,
                                 size_t text_len);

/* --- measurements -------------------------------------------------------------------- */

struct cg_type_env;

/* Random tensors for every graph input that is not an initializer, of the
 * dtype and shape the type environment recorded, from sample 0 of the
 * random-input policy (convgate/samples.h; NULL: its defaults, seed 0).
 * Free with cg_profile_feeds_free. */
struct cg_random_inputs;
CG_API CG_NODISCARD cg_status cg_profile_feeds_make(const cg_model *model,
                                                    const struct cg_type_env *types,
                                                    const struct cg_random_inputs *random,
                                                    cg_named_value **feeds, size_t *count,
                                                    cg_error *err);
CG_API void cg_profile_feeds_free(cg_named_value *feeds, size_t count);

#define CG_PROFILE_MAX_RUNS 100000

typedef struct cg_reference_profile {
    size_t node_count;
    double *node_ms;      /* median warm time per node (0 for nodes never run) */
    double wall_ms;       /* median time of a warm run */
    double overhead_ms;   /* median over runs of (run - its nodes) */
    double init_ms;       /* cold: cg_runtime_init */
    double first_run_ms;  /* cold: the warm-up run (memory plan built), 0 without warm-up */
    size_t runs;
} cg_reference_profile;

/* Runs the reference runtime warmup (0 or 1) + runs times with per-node
 * timing. runs in [1, CG_PROFILE_MAX_RUNS]. progress (may be NULL) hears
 * of each run ("profile", runs). */
CG_API CG_NODISCARD cg_status cg_profile_reference(const cg_model *model,
                                                   const cg_named_value *feeds, size_t feed_count,
                                                   size_t runs, bool warmup,
                                                   const cg_progress *progress,
                                                   cg_reference_profile *out, cg_error *err);
CG_API void cg_reference_profile_clear(cg_reference_profile *p);

/* One crossing of an executing partition, timed as the work its delegate
 * does there: entering, a copy (rank 4: NCHW->NHWC transposition) into
 * staging; leaving, NHWC->NCHW for rank 4, nothing otherwise (written in
 * place by the target). */
typedef struct cg_crossing_measure {
    size_t partition;   /* index into assignment->partitions */
    const char *tensor; /* borrowed from the assignment */
    bool entering;
    int rank;
    int64_t dims[CG_MAX_RANK];
    uint64_t bytes;
    bool layout;        /* NCHW <-> NHWC */
    double ms;          /* median */
} cg_crossing_measure;

typedef struct cg_partition_measure {
    bool executed;        /* an executing target's partition, measured */
    double compile_ms;    /* cold */
    double run_ms;        /* median isolated run, boundary work included */
    double in_mixed_ms;   /* median time inside the mixed run */
    double boundary_ms;   /* sum of its crossings */
    size_t crossings;
    double compute_ms;    /* max(0, run_ms - boundary_ms) */
} cg_partition_measure;

typedef struct cg_target_profile {
    cg_partition_measure *parts; /* per assignment partition */
    size_t part_count;
    cg_crossing_measure *crossings;
    size_t crossing_count;
    bool all_executing;   /* every partition measured: the mixed run is comparable */
    double mixed_init_ms; /* cold: runtime init with the assignment (compiles included) */
    double mixed_wall_ms; /* median warm mixed run */
    size_t runs;
} cg_target_profile;

/* Measures the executing partitions of `a` (compiled with `types`) and the
 * mixed run, and (into ref, when not NULL) the reference runtime: `runs`
 * rounds, each timing the reference, every partition alone and the mixed
 * run back to back, so the estimate's parts and the measurement see the
 * same machine load. Partitions of profiled targets are left unmeasured. */
CG_API CG_NODISCARD cg_status cg_profile_target(const cg_model *model,
                                                const struct cg_type_env *types,
                                                const cg_assignment *a, const cg_named_value *feeds,
                                                size_t feed_count, size_t runs,
                                                const cg_progress *progress,
                                                cg_reference_profile *ref, cg_target_profile *out,
                                                cg_error *err);
CG_API void cg_target_profile_clear(cg_target_profile *p);
/* The estimate of a measured placement: executing partitions at their
 * measured time and boundary work, profiled ones from `assume`.
 * *any_profiled (may be NULL) says whether some partition was assumed. */
CG_API CG_NODISCARD cg_status cg_profile_estimate(const cg_assignment *a,
                                                  const cg_reference_profile *ref,
                                                  const cg_target_profile *tp,
                                                  const cg_cost_assumptions *assume,
                                                  cg_cost_estimate *out, bool *any_profiled,
                                                  cg_error *err);

/* The time-weighted estimate behind a placement verdict: one reference run
 * with per-node timing on random inputs of the shapes types recorded
 * (sample 0 of `random`), time on target and crossings from the default
 * assumptions. ref_out (may be NULL) gets that run's profile, per-node
 * times included (clear it with cg_reference_profile_clear). */
CG_API CG_NODISCARD cg_status cg_profile_quick_estimate(const cg_model *model,
                                                        const struct cg_type_env *types,
                                                        const struct cg_random_inputs *random,
                                                        const cg_assignment *a,
                                                        cg_cost_estimate *out,
                                                        cg_reference_profile *ref_out,
                                                        cg_error *err);

/* The same on the user's inputs (`fed`, borrowed; NULL: random as above). */
CG_API CG_NODISCARD cg_status cg_profile_quick_estimate_fed(const cg_model *model,
                                                            const struct cg_type_env *types,
                                                            const struct cg_random_inputs *random,
                                                            const cg_named_value *fed,
                                                            size_t fed_count,
                                                            const cg_assignment *a,
                                                            cg_cost_estimate *out,
                                                            cg_reference_profile *ref_out,
                                                            cg_error *err);

/* cg_profile_quick_estimate for a lowered graph the reference does not run
 * (convgate/lower.h, declared_types: TFLite ops): the source is timed at
 * `dims` and each source node's time goes to the runtime nodes standing for
 * it (cg_lowered_node_times); `a` places l->model, and ref_out's per-node
 * times index its nodes. */
struct cg_lowered;
CG_API CG_NODISCARD cg_status cg_profile_quick_estimate_lowered(
    const struct cg_lowered *l, const cg_dim_binding *dims, size_t dim_count,
    const struct cg_random_inputs *random, const cg_assignment *a, cg_cost_estimate *out,
    cg_reference_profile *ref_out, cg_error *err);
/* The same on the user's inputs (`fed`, borrowed, fed to the source;
 * NULL: random as above). */
CG_API CG_NODISCARD cg_status cg_profile_quick_estimate_lowered_fed(
    const struct cg_lowered *l, const cg_dim_binding *dims, size_t dim_count,
    const struct cg_random_inputs *random, const cg_named_value *fed, size_t fed_count,
    const cg_assignment *a, cg_cost_estimate *out, cg_reference_profile *ref_out,
    cg_error *err);

/* The estimate behind a placement of l->model (assign, the binding's
 * assign): cg_profile_quick_estimate_fed on the placed graph typed by
 * `types`, or, when l declares its types (a graph the reference does not
 * run: TFLite ops), cg_profile_quick_estimate_lowered_fed, which times its
 * source at dims. */
CG_API CG_NODISCARD cg_status cg_profile_quick_estimate_placed(
    const struct cg_lowered *l, const struct cg_type_env *types, const cg_dim_binding *dims,
    size_t dim_count, const struct cg_random_inputs *random, const cg_named_value *fed,
    size_t fed_count, const cg_assignment *a, cg_cost_estimate *out,
    cg_reference_profile *ref_out, cg_error *err);

/* --- work: a deterministic stand-in for time (src/cost/work.c) ----------------------------- */

/* Node `node` of g's work: its multiply-accumulates (Conv, ConvTranspose,
 * MatMul, Gemm), else the elements it reads or writes, whichever is more;
 * 0 when the types do not know its shapes. */
CG_API double cg_cost_node_work(const cg_graph *g, size_t node, const struct cg_type_env *types);
/* The estimate of an assignment with each node's time its work at an
 * ASSUMED rate (units_per_ms), no measurement: the same on every run. */
#define CG_WORK_UNITS_PER_MS 1e6 /* 1 G multiply-accumulates or elements per second */
CG_API CG_NODISCARD cg_status cg_profile_work_estimate(const cg_assignment *a,
                                                       const struct cg_type_env *types,
                                                       double units_per_ms, cg_cost_estimate *out,
                                                       cg_error *err);

/* --- what-if (src/cost/whatif.c) ----------------------------------------------------- */

#define CG_WHAT_IF_MAX_ASSUMED 32
#define CG_WHAT_IF_MAX_TARGETS 16
#define CG_WHAT_IF_MAX_RANKED 24

/* One op type the targets refuse and what supporting it alone would gain. */
typedef struct cg_what_if_gain {
    char op[256];             /* "Op", or "domain:Op" outside the default domain */
    size_t refused;           /* main-graph nodes of it refused */
    size_t cpu_before, cpu_after;
    size_t partitions_before, partitions_after;
    bool timed;               /* the mixed estimates below are set */
    double mixed_before, mixed_after; /* ms, cg_cost_estimate's mixed_ms */
} cg_what_if_gain;

/* For each op type refused in p's main graph: p placed again on what-if
 * targets (base[0..n), the targets p was placed on without the assumption,
 * taking assumed[] and that op), compared with p. `ref` (may be NULL: no
 * times) holds per-node times of p->model's nodes (cg_profile_quick_estimate's
 * ref_out). Ranked by estimated ms saved, then CPU nodes moved, partitions
 * removed, op name. Returns the count written (at most cap); *skipped counts
 * op types left out (over cap, or a placement that failed). n at most
 * CG_WHAT_IF_MAX_TARGETS, assumed_count below CG_WHAT_IF_MAX_ASSUMED (else 0). */
CG_API size_t cg_what_if_rank(const cg_placement *p, const cg_target *const *base, size_t n,
                              const char *const *assumed, size_t assumed_count,
                              const cg_reference_profile *ref, cg_what_if_gain *out, size_t cap,
                              size_t *skipped);

/* Median of v[0..n) (sorts v); 0 when n is 0. */
CG_API double cg_profile_median(double *v, size_t n);

#ifdef __cplusplus
}
#endif
#endif
