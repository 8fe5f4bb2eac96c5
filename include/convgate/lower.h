/*
 * The graph each runtime partitions.
 *
 * A runtime does not partition the ONNX file as written: ONNX Runtime runs
 * its Level-1 graph optimizations first (Constant nodes become initializers,
 * Identity/Dropout and no-op nodes go, constants are folded, Conv+BN and
 * MatMul+Add are fused), a TFLite converter lowers each ONNX op to TFLite
 * builtins. A lowering is that step: a named transformation (a profile's
 * "preprocess" key, docs/profiles.md) from the source model to the model the
 * runtime's partitioner sees, keeping a map from every runtime-side node
 * back to the source node(s) it stands for and the list of source nodes
 * that no longer exist on the runtime's side, with the transformation that
 * removed each.
 *
 * Lowerings live in a table (src/target/lowerings.def, where profiles'
 * "preprocess" is checked); adding one is a row and a function in src/lower. "none" is the identity.
 *
 * A cg_lowered owns its model but borrows the source's tensor payloads: the
 * source model must outlive it.
 */
#ifndef CONVGATE_LOWER_H
#define CONVGATE_LOWER_H

#include <stdbool.h>
#include <stddef.h>

#include "convgate/api.h"
#include "convgate/model.h"
#include "convgate/status.h"
#include "convgate/target.h"

#ifdef __cplusplus
extern "C" {
#endif


/* A source node that does not exist on the runtime's side. */
typedef struct cg_lower_removed {
    const char *graph;   /* "" the main graph; "loop1/body" for a control-flow body */
    size_t node;         /* index in that source graph */
    const char *name;    /* its name, or "#index" */
    const char *op_type;
    const char *domain;  /* "" for ai.onnx */
    const char *by;      /* the transformation: "EliminateIdentity", "ConstantFolding", ... */
    const char *into;    /* runtime node it was fused into, or NULL (removed or folded) */
} cg_lower_removed;

/* An op and how many runtime-side nodes have it. */
typedef struct cg_lower_op_count {
    const char *domain; /* "" for ai.onnx */
    const char *op_type;
    size_t count;
} cg_lower_op_count;

typedef struct cg_lowered {
    const char *lowering;      /* "none", "ort-basic", ... (static string) */
    /* who removed the nodes in `removed`, as reports name it ("ONNX
     * Runtime's basic graph optimizations", "the ONNX-to-TFLite converter";
     * static string): the runtime before partitioning, or the conversion
     * that made the file the runtime loads */
    const char *remover;
    const cg_model *source;
    const cg_model *model;     /* the graph the runtime partitions (== source for "none") */
    /* Per main-graph node of model: the source main-graph nodes it stands
     * for, origin[origin_start[i] .. origin_start[i + 1]). A node created by
     * the lowering from several source nodes lists them all. */
    const size_t *origin;
    const size_t *origin_start; /* model node count + 1 entries */
    cg_lower_removed *removed;  /* in source order, main graph first */
    size_t removed_count;
    /* Runtime nodes with no source node of the same op among their origins
     * (a Gemm made from MatMul+Add, the Reshapes around it). */
    size_t added_count;
    char **notes;               /* what the lowering could not do, and why */
    size_t note_count;
    /* Runtime-side ops (all graphs) the runtime's own CPU fallback has no
     * kernel for: when such a node is left to the CPU, ONNX Runtime's CPU EP
     * replaces it by its ONNX function body (HardSwish -> HardSigmoid, Mul)
     * or refuses the model. Empty for lowerings without that notion. */
    cg_lower_op_count *cpu_missing;
    size_t cpu_missing_count;
    /* A transformation edited some graph (the Constant-to-initializer step
     * of graph construction does not count). ONNX Runtime saves an
     * optimized model's control-flow bodies as read when no transformer
     * changed anything (its main graph then needs no proto sync:
     * graph.cc:4078-4089; any change re-resolves the model, which marks the
     * nodes holding subgraphs, and so the main graph, for sync). */
    bool edited;
    /* The lowered graph's ops are not ONNX (onnx-to-tflite: TFLite
     * builtins), so the reference cannot run it: it declares every value's
     * type instead, and is typed with cg_type_env_build_declared
     * (cg_lowered_types picks). */
    bool declared_types;
    /* The source's type environment the lowering was made by: its
     * reference run at `dims` on the feeds cg_lower_fed was given, as
     * cg_type_env_build_symbolic makes it. NULL for "none" and when that
     * run failed. Where every dim of the model is a number
     * (cg_type_env_fixed_dims) it is the environment cg_type_env_build_fed
     * gives the source on the same feeds, so a caller that fed those (the
     * gate: sample 0) types the source by it instead of a second run. */
    const cg_type_env *source_types;
    /* private */
    cg_model *owned;
    cg_type_env *owned_types;
    size_t *owned_origins;
    cg_model *owned_ops;        /* a .tflite's operators the model borrows from */
} cg_lowered;

/* The known lowerings, in table order ("none" first). */
CG_API size_t cg_lowering_count(void);
CG_API const char *cg_lowering_name(size_t i);
CG_API const char *cg_lowering_description(size_t i);
/* True when name is a known lowering. */
CG_API bool cg_lowering_known(const char *name);

/* Applies the lowering called name to src. Shapes come from one reference
 * run whose symbolic input dims take `dims` (unbound: 1); dims that move
 * with a symbolic input dim stay unknown to the runtime, bound or not. When
 * that run fails, only declared shapes are known and a note says so. */
CG_API CG_NODISCARD cg_status cg_lower(const cg_model *src, const char *name,
                                       const cg_dim_binding *dims, size_t dim_count,
                                       cg_lowered **out, cg_error *err);
/* The same, that run fed the user's inputs (`feeds`, borrowed; NULL: as
 * cg_lower): shapes of a model that only runs on real data are known. */
CG_API CG_NODISCARD cg_status cg_lower_fed(const cg_model *src, const char *name,
                                           const cg_dim_binding *dims, size_t dim_count,
                                           const cg_named_value *feeds, size_t feed_count,
                                           cg_lowered **out, cg_error *err);
CG_API void cg_lowered_free(cg_lowered *l);
/* How many lowerings other than "none" cg_lower_fed has started in this
 * process (every thread): each is a reference run of the source and a
 * copy of its graph, so the gate makes one and hands it on
 * (cg_target_path_options.lowered); the tests count them. */
CG_API size_t cg_lowerings_made(void);

/* The lowering every target of the list declares ("none" when none
 * declares one); CG_USAGE naming both when two targets disagree. */
CG_API CG_NODISCARD cg_status cg_lowering_for_targets(const cg_target *const *targets,
                                                      size_t count, const char **out,
                                                      cg_error *err);
/* The graph the targets partition: cg_lower with the lowering
 * cg_lowering_for_targets picks (what assign, profile, gate 2 and the
 * bindings place). */
CG_API CG_NODISCARD cg_status cg_lower_for_targets(const cg_model *src,
                                                   const cg_target *const *targets,
                                                   size_t count, const cg_dim_binding *dims,
                                                   size_t dim_count, cg_lowered **out,
                                                   cg_error *err);
/* The same with cg_lower_fed. */
CG_API CG_NODISCARD cg_status cg_lower_for_targets_fed(const cg_model *src,
                                                       const cg_target *const *targets,
                                                       size_t count, const cg_dim_binding *dims,
                                                       size_t dim_count,
                                                       const cg_named_value *feeds,
                                                       size_t feed_count, cg_lowered **out,
                                                       cg_error *err);

/* The type environment of the lowered graph, as placement reads it: a
 * reference run at `dims` with `random` inputs (cg_type_env_build_with), or
 * for a lowering with declared_types its declarations. */
struct cg_random_inputs;
CG_API CG_NODISCARD cg_status cg_lowered_types(const cg_lowered *l, const cg_dim_binding *dims,
                                               size_t dim_count,
                                               const struct cg_random_inputs *random,
                                               cg_type_env **out, cg_error *err);
/* The same on the user's inputs (`feeds`, borrowed: cg_type_env_build_fed;
 * NULL: `random`). For a lowering with declared_types the source is run on
 * them too, so that a model failing on them fails here (placement unknown:
 * gate 2, assign) although the types come from the declarations. */
CG_API CG_NODISCARD cg_status cg_lowered_types_fed(const cg_lowered *l,
                                                   const cg_dim_binding *dims, size_t dim_count,
                                                   const struct cg_random_inputs *random,
                                                   const cg_named_value *feeds,
                                                   size_t feed_count, cg_type_env **out,
                                                   cg_error *err);

/* Times of the runtime's main-graph nodes from the source's (per source
 * main-graph node, e.g. a timed reference run of the source): each source
 * node's time is shared evenly by the runtime nodes standing for it; the
 * time of a node that left no op (folded constants, no-ops) is not counted.
 * out has one entry per runtime node. For a lowering whose graph the
 * reference does not run (declared_types). */
CG_API void cg_lowered_node_times(const cg_lowered *l, const double *source_ms, double *out);

/* Origins of runtime main-graph node i. */
CG_API size_t cg_lowered_origins(const cg_lowered *l, size_t i, const size_t **out);

/* Op histogram of a graph: "Identity x47, Conv x20" for the removed nodes
 * of the main graph (graph == "") or of every graph (graph == NULL),
 * largest first, at most `max` ops then ", ...". Writes into buf. */
CG_API const char *cg_lowered_removed_summary(const cg_lowered *l, const char *graph,
                                              size_t max, char *buf, size_t len);
/* Removed source nodes of the main graph (graph == "") or of all graphs. */
CG_API size_t cg_lowered_removed_count(const cg_lowered *l, const char *graph);

/* Its reports (text and JSON) are src/report/report.h's cg_lowered_report_*. */

#ifdef __cplusplus
}
#endif
#endif
