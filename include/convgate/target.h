/*
 * Targets: where a node can run, and (for executing targets) running it.
 *
 * Every target, executing or profiled, is one cg_target: a name, a version,
 * where its rules come from, its fallback policy, compute precision, tensor
 * layout and boundary cost, its partition rules, and a vtable. A target
 * describes itself: nothing in convgate infers a property from its name.
 * `supports` answers for one node with the exact rule that failed and the
 * offending value. For an executing target
 * (the XNNPACK delegate) `supports` is exactly what its `compile` accepts,
 * so predicted residency equals actual residency. A profiled target
 * (capability profile of a runtime we cannot run here) has no compile/run:
 * every report built from it says it is a prediction, from which profile.
 *
 * Types of values: placement depends on dtypes, shapes and constness, so
 * `supports` sees a cg_type_env built for concrete input dims (see
 * cg_type_env_build): one reference run with inputs of the requested shape
 * records the dtype and shape of every value the main graph produces.
 */
#ifndef CONVGATE_TARGET_H
#define CONVGATE_TARGET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "convgate/model.h"
#include "convgate/runtime.h"
#include "convgate/status.h"
#include "convgate/tensor.h"

#ifdef __cplusplus
extern "C" {
#endif


/* --- value types ---------------------------------------------------------- */

typedef struct cg_value_type {
    const char *name;
    bool known;    /* dtype and shape are known */
    cg_dtype dtype;
    int rank;
    int64_t dims[CG_MAX_RANK];
    bool is_const; /* an initializer, or produced only from constants (Constant,
                      and ops whose inputs are all constant) */
    bool is_graph_input;
} cg_value_type;

typedef struct cg_type_env cg_type_env;

/* Runs the reference runtime once on seeded random inputs whose symbolic
 * dims come from `dims` (unbound symbols default to 1; each default is
 * listed in the env's notes) and records the type of every value of the
 * main graph. Values inside subgraphs take their declared value_info when
 * present, else stay unknown. The inputs are sample 0 of the random-input
 * policy `random` (convgate/samples.h; NULL: its defaults, seed 0), the
 * same tensors gate 3 and `run --random` feed. */
struct cg_random_inputs;
CG_API CG_NODISCARD cg_status cg_type_env_build(const cg_model *model, const cg_dim_binding *dims,
                                                size_t dim_count, cg_type_env **out, cg_error *err);
CG_API CG_NODISCARD cg_status cg_type_env_build_with(const cg_model *model,
                                                     const cg_dim_binding *dims, size_t dim_count,
                                                     const struct cg_random_inputs *random,
                                                     cg_type_env **out, cg_error *err);
/* The same, the recording run fed `feeds` (the user's inputs, e.g. a
 * sample's: borrowed) instead of random tensors; `dims` must bind the
 * symbols as the feeds' shapes do (cg_sample_dims). Where the model fails
 * on them, the error says so: placement is then unknown, not empty. */
CG_API CG_NODISCARD cg_status cg_type_env_build_fed(const cg_model *model,
                                                    const cg_dim_binding *dims, size_t dim_count,
                                                    const struct cg_random_inputs *random,
                                                    const cg_named_value *feeds,
                                                    size_t feed_count, cg_type_env **out,
                                                    cg_error *err);
/* The types a graph declares, without running it: initializers (constant),
 * graph inputs, value_info, each dim as declared (a symbolic one counts as
 * dynamic, sized 1). Constness is not propagated through nodes: only
 * initializers are constant, as in a runtime that folds nothing at load
 * time (TFLite's interpreter: a tensor is constant when it has data). For
 * graphs the reference cannot run, such as a .tflite's operators
 * (cg_tflite_op_model). Values nothing declares stay unknown. */
CG_API CG_NODISCARD cg_status cg_type_env_build_declared(const cg_model *model,
                                                         cg_type_env **out, cg_error *err);
CG_API void cg_type_env_free(cg_type_env *env);
/* NULL when the name was never seen. */
CG_API const cg_value_type *cg_type_env_get(const cg_type_env *env, const char *name);
/* Notes such as "symbol 'batch' not bound: used 1". */
CG_API size_t cg_type_env_note_count(const cg_type_env *env);
CG_API const char *cg_type_env_note(const cg_type_env *env, size_t i);

/* --- targets ------------------------------------------------------------- */

typedef enum cg_target_kind { CG_TARGET_EXECUTING = 0, CG_TARGET_PROFILED = 1 } cg_target_kind;

typedef enum cg_fallback_policy {
    CG_FALLBACK_CPU = 0, /* unsupported nodes run on the CPU */
    CG_FALLBACK_FAIL = 1 /* an unsupported node is an initialization error */
} cg_fallback_policy;

typedef enum cg_precision { CG_PRECISION_FP32 = 0, CG_PRECISION_FP16 = 1 } cg_precision;

/* How rank-4 float tensors are laid out inside a target's partitions. The
 * CPU (the reference runtime) is NCHW, as ONNX is; a boundary between two
 * sides of different layouts transposes every rank-4 float tensor. */
typedef enum cg_layout { CG_LAYOUT_NCHW = 0, CG_LAYOUT_NHWC = 1 } cg_layout;

typedef struct cg_partition_rules {
    int min_nodes;          /* partitions with fewer supported nodes are dropped (0/1 = none) */
    int max_partitions;     /* keep only the N largest; 0 = unlimited */
    /* op types that must not form a partition on their own (e.g. NNAPI's
     * single Identity/Reshape partitions) */
    const char *const *no_single_ops;
    size_t no_single_op_count;
    /* op types after which the target stops taking nodes: the op and every
     * node that depends on it stay on the CPU */
    const char *const *stop_ops;
    size_t stop_op_count;
} cg_partition_rules;

/* What `supports` sees. */
typedef struct cg_support_query {
    const cg_model *model;
    const cg_graph *graph;   /* graph holding node (main graph or a body) */
    const cg_node *node;
    int64_t opset;           /* the model's import for the node's domain */
    const cg_type_env *types;
} cg_support_query;

typedef struct cg_target cg_target;

/* A partition handed to an executing target (see partition.h for how they
 * are formed). Node indices refer to graph->nodes, in topological order. */
typedef struct cg_partition_desc {
    const cg_model *model;
    const cg_graph *graph;
    const size_t *nodes;
    size_t node_count;
    const char *const *inputs;  /* values entering from the CPU side (constants excluded) */
    size_t input_count;
    const char *const *outputs; /* values leaving to the CPU side or graph outputs */
    size_t output_count;
    const cg_type_env *types;
    /* Threads the target may run the partition on, the caller's included:
     * the runtime's cg_runtime_options.threads (0 and 1: the calling thread
     * alone). */
    int threads;
} cg_partition_desc;

typedef struct cg_target_vtable {
    /* Writes the failed rule and offending value to reason on false. */
    bool (*supports)(const cg_target *t, const cg_support_query *q, char *reason,
                     size_t reason_len);
    /* Executing targets only (NULL for profiled ones). */
    cg_status (*compile)(const cg_target *t, const cg_partition_desc *p, void **state,
                         cg_error *err);
    /* inputs/outputs in the order of p->inputs / p->outputs. Outputs are
     * allocated by the target (cg_value owned by the caller afterwards).
     * Every output must be set on CG_OK. */
    cg_status (*run)(void *state, const cg_value *const *inputs, cg_value **outputs,
                     cg_error *err);
    void (*release)(void *state);
    /* Frees what the target owns (profile data). */
    void (*destroy)(cg_target *t);
} cg_target_vtable;

struct cg_target {
    const char *name;        /* "xnnpack", "litert-gpu", ... */
    const char *version;     /* of the runtime modelled / linked */
    const char *description;
    const char *source;      /* where its rules come from (repo@rev:path, or "compile()") */
    cg_target_kind kind;
    cg_fallback_policy fallback;
    cg_precision precision;
    bool accumulate_fp32;    /* fp16 compute that accumulates reductions in fp32 */
    /* An fp16 target whose devices differ in how they sum (a profile's
     * precision.device_classes): [0] names the class that sums in fp16,
     * [1] the class that sums in fp32; gate 3, compare, verify and bisect
     * judge both unless --accumulate picks one. NULL: one class, as
     * accumulate_fp32 says. */
    const char *device_class[2];
    cg_layout layout;        /* inside its partitions (CG_LAYOUT_NCHW: as ONNX) */
    /* Executing targets: its kernels may turn a NaN into +-inf (a min/max
     * clamp at -inf..inf, as Debian's 2022 XNNPACK has on every binary,
     * convolution and pooling kernel). When a run gives an infinite float32
     * output lane, the runtime runs the partition's nodes on the reference
     * too and puts NaN back in the lanes where the target has +-inf and the
     * reference NaN; every other lane keeps the target's value. */
    bool nan_clamped;
    /* The cost of one boundary crossing into or out of this target, when the
     * target states it: a fixed part plus the bytes over a bandwidth. When
     * not stated, the cost model's assumptions apply (docs/cost-model.md). */
    bool crossing_stated;
    double crossing_fixed_us; /* >= 0 */
    double crossing_gbps;     /* > 0: GB/s (1e9 bytes) */
    cg_partition_rules rules;
    /* The graph this target partitions: the name of a lowering (convgate/lower.h,
     * a profile's "preprocess"); NULL is "none", the ONNX graph as written. */
    const char *lowering;
    /* What the profile says it does not model (printed with every report). */
    const char *const *not_modelled;
    size_t not_modelled_count;
    const cg_target_vtable *vt;
    void *impl;
};

/* A target's layout, NCHW for NULL (the CPU side of a boundary). */
static inline cg_layout cg_target_layout(const cg_target *t)
{
    return t ? t->layout : CG_LAYOUT_NCHW;
}

/* True when t runs partitions itself (kind EXECUTING with compile, run and
 * release in its vtable). */
static inline bool cg_target_executes(const cg_target *t)
{
    return t && t->kind == CG_TARGET_EXECUTING && t->vt && t->vt->compile && t->vt->run &&
           t->vt->release;
}

/* The registry: the executing targets compiled into the library (from a
 * table, src/delegate/builtin.def), then every profile found in the
 * profile directory: the caller's, else $CONVGATE_PROFILES, else the
 * installed <prefix>/share/convgate/profiles beside the binary or library,
 * else the source tree's profiles/ (a build-tree binary). Names are unique
 * across it. */
typedef struct cg_target_registry cg_target_registry;

CG_API CG_NODISCARD cg_status cg_target_registry_load(const char *profile_dir,
                                                      cg_target_registry **out, cg_error *err);
/* An empty registry, for an embedder that chooses every target itself. */
CG_API CG_NODISCARD cg_status cg_target_registry_new(cg_target_registry **out, cg_error *err);
/* Adds t, which the registry owns from then on (t->vt->destroy(t) when the
 * registry is freed, or at once when the add fails): how an embedder adds
 * its own executing target without editing convgate. t needs a non-empty
 * name no other target has and a vtable with `supports`; an executing
 * target also needs compile, run and release. */
CG_API CG_NODISCARD cg_status cg_target_registry_add(cg_target_registry *reg, cg_target *t,
                                                     cg_error *err);
/* Adds every *.json profile of profile_dir (NULL or "": the default above),
 * in file-name order; one invalid profile fails the whole call. */
CG_API CG_NODISCARD cg_status cg_target_registry_add_profiles(cg_target_registry *reg,
                                                              const char *profile_dir,
                                                              cg_error *err);
CG_API void cg_target_registry_free(cg_target_registry *reg);
CG_API size_t cg_target_registry_count(const cg_target_registry *reg);
/* The directory the profiles were read from (absolute when installed). */
CG_API const char *cg_target_registry_profile_dir(const cg_target_registry *reg);
CG_API const cg_target *cg_target_registry_at(const cg_target_registry *reg, size_t i);
/* NULL with err set (listing the known names) when no target has that name. */
CG_API const cg_target *cg_target_registry_find(const cg_target_registry *reg, const char *name,
                                                cg_error *err);
/* Appends the targets of list "a,b" (priority order) to out[*count...]:
 * CG_USAGE naming an empty or unknown name, a target given twice (also in
 * an earlier list) or more than max targets. */
CG_API CG_NODISCARD cg_status cg_target_registry_resolve(const cg_target_registry *reg,
                                                         const char *list,
                                                         const cg_target **out, size_t *count,
                                                         size_t max, cg_error *err);

#ifdef __cplusplus
}
#endif
#endif
