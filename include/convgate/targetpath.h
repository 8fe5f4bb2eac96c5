/*
 * The target path: the model as a set of targets would run it, executed
 * on this machine. Executing targets (XNNPACK) run their partitions for
 * real; profiled targets whose profile says fp16 run their partitions on
 * the reference kernels with fp16 storage and the accumulation their
 * profile states (or the caller forces), casting exactly at the partition
 * boundaries; profiled
 * fp32 targets run their partitions on the reference kernels (placement
 * only changes where, not what). The CPU remainder runs on the reference.
 */
#ifndef CONVGATE_TARGETPATH_H
#define CONVGATE_TARGETPATH_H

#include <stdbool.h>
#include <stddef.h>

#include "convgate/model.h"
#include "convgate/partition.h"
#include "convgate/runtime.h"
#include "convgate/target.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct cg_target_path cg_target_path;

/* How fp16 targets accumulate reductions and dot products on the target
 * path (--accumulate, the binding's "accumulate"): as each target's profile
 * says, or forced to one width for every fp16 target. A target with device
 * classes (cg_target.device_class) is judged as both classes unless the
 * width is forced. */
typedef enum cg_accumulate {
    CG_ACCUMULATE_PROFILE = 0, /* as the profiles say */
    CG_ACCUMULATE_FP16,        /* in fp16 even where the profile says fp32 (a GPU in f16) */
    CG_ACCUMULATE_FP32,
} cg_accumulate;

/* "fp16" or "fp32" (what --accumulate takes) into *out; anything else is
 * CG_USAGE naming what was given, *out unchanged. */
CG_API CG_NODISCARD cg_status cg_accumulate_parse(const char *text, cg_accumulate *out,
                                                  cg_error *err);
/* "profile", "fp16", "fp32"; NULL outside the enum. */
CG_API const char *cg_accumulate_name(cg_accumulate a);

typedef struct cg_target_path_options {
    const cg_target *const *targets; /* priority order */
    size_t target_count;
    const cg_dim_binding *dims;      /* for the type environment */
    size_t dim_count;
    /* the random inputs of the type environment's run (convgate/samples.h;
     * NULL: the policy's defaults, seed 0) */
    const struct cg_random_inputs *random;
    /* the user's inputs (a sample's, borrowed for init only): the type
     * environment, the lowering and the placement run on them as gate 2's
     * do (cg_type_env_build_fed); NULL: `random` */
    const cg_named_value *feeds;
    size_t feed_count;
    cg_accumulate accumulate;        /* how fp16 targets accumulate */
    /* targets with device classes (cg_target.device_class) run as the class
     * that sums in fp16, unless accumulate is CG_ACCUMULATE_FP32 (a judge
     * reruns the path with it for the class that sums in fp32) */
    bool device_classes;
    bool force_fp32;                 /* run fp16 targets' partitions in fp32 (bisect triage) */
    size_t max_alloc_bytes;          /* 0: runtime default */
    int threads;                     /* cg_runtime_options.threads of the path's runtime */
    /* as cg_runtime_options.observe: every value the main graph produces
     * that is visible on this path (partition outputs, CPU node outputs) */
    cg_status (*observe)(void *user, const cg_node *node, const char *name,
                         const cg_value *value);
    void *observe_user;
    /* with observe_user too: every value the main graph produces, those
     * inside a partition that runs on the reference kernels (an emulated
     * target) included, before observe sees the visible ones; for
     * diagnostics only (the real target never shows them) */
    cg_status (*observe_inside)(void *user, const cg_node *node, const char *name,
                                const cg_value *value);
    /* Work another build already did, for the same model, dims and feeds
     * (both borrowed: they must outlive the path; NULL: done here):
     * `types`, the type environment (cg_type_env_build_fed's on them), so
     * no recording run; `like`, a path whose type environment and lowered
     * placement (the proxies' ownership) this one takes over instead of
     * lowering, typing and placing the graph again: the reruns of one
     * sample differ in precision only. */
    const cg_type_env *types;
    const struct cg_target_path *like;
    /* The lowering the targets partition (cg_lower_for_targets_fed), made
     * by another build for the same model, targets, dims and feeds (gate
     * 2's; borrowed, init only; NULL: lowered here when a target has a
     * lowering): init places by it instead of lowering the graph again. */
    const struct cg_lowered *lowered;
    /* cg_runtime_options.returned_outputs of the path's runtime */
    size_t returned_outputs;
} cg_target_path_options;

/* Whether a path built with opt sums in fp16 on some target's nodes. */
CG_API bool cg_target_path_options_sum16(const cg_target_path_options *opt);

CG_API CG_NODISCARD cg_status cg_target_path_init(const cg_model *model,
                                                  const cg_target_path_options *opt,
                                                  cg_target_path **out, cg_error *err);
CG_API CG_NODISCARD cg_status cg_target_path_run(cg_target_path *p, const cg_named_value *inputs,
                                                 size_t input_count, cg_named_value **outputs,
                                                 size_t *output_count, cg_error *err);
/* The placement the path runs (owned by the path). */
CG_API const cg_assignment *cg_target_path_assignment(const cg_target_path *p);
/* True when some partition computes in reduced precision on this path. */
CG_API bool cg_target_path_reduced_precision(const cg_target_path *p);
/* The type environment the assignment was made with (owned by the path). */
CG_API const cg_type_env *cg_target_path_types(const cg_target_path *p);
/* How main-graph node `node` computes on this path (CG_NODE_PREC_FP32 for
 * CPU nodes, executing targets, fp32 profiles and under force_fp32). */
CG_API cg_node_precision cg_target_path_node_precision(const cg_target_path *p, size_t node);
/* The runtime behind the path (partition timings: cg_runtime_partition_info_get). */
CG_API const cg_runtime *cg_target_path_runtime(const cg_target_path *p);
CG_API void cg_target_path_free(cg_target_path *p);

#ifdef __cplusplus
}
#endif
#endif
