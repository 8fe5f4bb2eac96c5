/*
 * Placement reports: the partitioner run over a model and every control-flow
 * body in it, the placement verdict, and the text and JSON renderings behind
 * `convgate assign` (docs/placement.md says how to read them; the
 * renderings live in src/report/assign.c).
 *
 * A cg_placement owns the main graph's assignment and one assignment per
 * subgraph of each If/Loop/Scan node (recursively); it borrows the model,
 * the type environment and the target array, which must outlive it.
 */
#ifndef CONVGATE_ASSIGN_H
#define CONVGATE_ASSIGN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "convgate/partition.h"

#ifdef __cplusplus
extern "C" {
#endif

/* cg_assign for any graph of the model: the main graph or a control-flow
 * body (values a body reads from enclosing scopes count as coming from the
 * CPU side, like its own inputs). `types` may be NULL: every tensor type is
 * then unknown and only initializers count as constant. */
CG_API CG_NODISCARD cg_status cg_assign_graph(const cg_model *model, const cg_graph *graph,
                                              const cg_type_env *types,
                                              const cg_target *const *targets, size_t target_count,
                                              cg_assignment **out, cg_error *err);

/* One subgraph of a control-flow node, assigned on its own. */
typedef struct cg_body_assignment {
    char *path;             /* "loop1/body", "if1/then_branch/if2/else_branch" */
    int depth;              /* 1: subgraph of a main-graph node */
    const cg_graph *graph;
    cg_assignment *assignment;
} cg_body_assignment;

typedef struct cg_placement {
    const cg_model *model;
    const cg_type_env *types;
    cg_assignment *main;
    cg_body_assignment *bodies; /* depth-first, in node order */
    size_t body_count;
    /* Why there are no types (types == NULL), shown with the notes; set by
     * the caller, borrowed. */
    const char *types_error;
    /* The time-weighted estimate of the main graph's placement
     * (convgate/profile.h), or NULL: the verdict then counts nodes only.
     * Set by the caller, borrowed. */
    const struct cg_cost_estimate *time;
    /* The graph is a .tflite's operators (cg_tflite_op_model): reports count
     * TFLite ops and state each target's residency as LiteRT's delegates log
     * it. Set by the caller. */
    bool tflite_ops;
    /* The lowering that made `model` from the file the user gave (the graph
     * the targets partition: convgate/lower.h), or NULL when the model is
     * the file's graph. The report shows what the runtime's graph
     * optimizations removed apart from what runs on the CPU. Set by the
     * caller, borrowed. */
    const struct cg_lowered *lowered;
} cg_placement;

CG_API CG_NODISCARD cg_status cg_placement_build(const cg_model *model, const cg_type_env *types,
                                                 const cg_target *const *targets,
                                                 size_t target_count, cg_placement **out,
                                                 cg_error *err);
CG_API void cg_placement_free(cg_placement *p);

/* A .tflite placed on its own operators, as LiteRT's delegates see them:
 * *ops (cg_tflite_op_model) typed from the file (the static shapes it
 * stores, its constant tensors: no reference run, the ops are TFLite's)
 * and placed (tflite_ops set). On failure every out is NULL. */
struct cg_tflite_model;
CG_API CG_NODISCARD cg_status cg_placement_build_tflite(const struct cg_tflite_model *tfl,
                                                        const cg_target *const *targets,
                                                        size_t target_count, cg_model **ops,
                                                        cg_type_env **types, cg_placement **out,
                                                        cg_error *err);

/* --- what-if (assign --assume-supported) -------------------------------------------- */

/* True when `key` names node's op: "Op" in any domain, "domain:Op" in that
 * domain only ("tflite:MEAN"; "ai.onnx:" is the default domain). */
CG_API bool cg_op_key_matches(const char *key, const cg_node *node);
/* A target that answers as `base` (borrowed, must outlive it) except that it
 * supports every node matching one of ops (cg_op_key_matches; copied). It
 * only places: an executing base becomes a profiled what-if. Free with
 * cg_target_assumed_free. CG_USAGE for an empty op name. */
CG_API CG_NODISCARD cg_status cg_target_assume_supported(const cg_target *base,
                                                         const char *const *ops, size_t op_count,
                                                         cg_target **out, cg_error *err);
CG_API void cg_target_assumed_free(cg_target *t);
/* The same for each of base[0..n): out[0..n) (nothing left allocated on an
 * error). */
CG_API CG_NODISCARD cg_status cg_targets_assume_supported(const cg_target *const *base, size_t n,
                                                          const char *const *ops,
                                                          size_t op_count, cg_target **out,
                                                          cg_error *err);
CG_API void cg_targets_assumed_free(cg_target **t, size_t n);
/* Appends the op keys of "A,B,domain:C" to keys[*count...] (strdup'd: the
 * caller frees them): CG_USAGE naming an empty key or more than cap in all. */
CG_API CG_NODISCARD cg_status cg_op_keys_parse(const char *arg, char **keys, size_t *count,
                                               size_t cap, cg_error *err);

typedef enum cg_verdict_kind {
    CG_VERDICT_FULL = 0,     /* every node on a target, one partition */
    CG_VERDICT_PARTIAL,      /* some nodes on a target, the rest on the CPU (or
                                several partitions) */
    CG_VERDICT_NONE,         /* nothing placed on any target */
    CG_VERDICT_INIT_FAILURE  /* a target without CPU fallback would refuse the model */
} cg_verdict_kind;

CG_API const char *cg_verdict_kind_name(cg_verdict_kind kind); /* "full", "partial", ... */

/* The placement verdict of an assignment: its kind and one sentence. */
CG_API cg_verdict_kind cg_assign_verdict(const cg_assignment *a, const cg_type_env *types,
                                         char *text, size_t text_len);

/* True when a target whose fallback policy is `fail` would refuse the model:
 * some main-graph node stays on the CPU. msg then reads "tflm: node 'x'
 * (Op) is not supported and TFLite Micro has no fallback: <reason>" for the
 * first such node in topological order. */
CG_API bool cg_assign_init_failure(const cg_assignment *a, const cg_type_env *types, char *msg,
                                   size_t msg_len);

/* A refusal reason without a leading "Op 'name': " that repeats the node
 * (profile reasons start that way; reports name the node themselves).
 * Points into reason. */
CG_API const char *cg_assign_bare_reason(const cg_graph *g, size_t node, const char *reason);

/* "name" or, for a node without one, "#index". Returns buf. */
CG_API const char *cg_assign_node_label(const cg_graph *g, size_t node, char *buf, size_t len);

/* The residency line every report prints: "30/40 nodes on litert-gpu,
 * 5/40 nodes on xnnpack, 5 on CPU". */
CG_API void cg_assign_residency(const cg_assignment *a, char *buf, size_t cap);
/* The same line counting `unit` ("nodes", "TFLite ops"). */
CG_API void cg_assign_residency_in(const cg_assignment *a, const char *unit, char *buf,
                                   size_t cap);
/* Number of nodes of the assignment owned by target index `target`
 * (CG_OWNER_CPU counts the CPU's). */
CG_API size_t cg_assign_count_owned(const cg_assignment *a, int target);

/* The report, in the order the engineer reads it: residency, partitions,
 * boundary ledger, unsupported nodes, dropped nodes, control-flow bodies,
 * verdict, and for profiled targets where the prediction comes from. */
CG_API void cg_assign_report_text(FILE *f, const cg_placement *p);
/* The JSON rendering is internal (src/report/report.h): public headers do
 * not expose jansson. */

#ifdef __cplusplus
}
#endif
#endif
