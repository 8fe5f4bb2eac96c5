/*
 * Placement: which nodes each target takes, the partitions that makes, and
 * every tensor that crosses between a partition and the CPU.
 *
 * Partitions are formed the way real runtimes form them: targets are asked
 * in priority order (the first target that supports a node and keeps it
 * after the partition rules gets it; the CPU takes the rest, as ONNX
 * Runtime's provider order works); within a target, nodes are grouped in
 * topological order into maximal connected groups of supported nodes,
 * never creating a cycle between partitions; then the target's rules drop
 * small groups, keep only the N largest, and stop at stop ops. Subgraphs of
 * If/Loop/Scan are assigned on their own; the control-flow node stays on
 * the CPU.
 *
 * Invariants of a cg_assignment: every main-graph node has exactly one
 * owner (a target index or CG_OWNER_CPU); partition node lists are in
 * topological order; the partition graph (partitions and CPU nodes) is
 * acyclic; boundaries list each (tensor, from, to) crossing once.
 */
#ifndef CONVGATE_PARTITION_H
#define CONVGATE_PARTITION_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "convgate/target.h"

#ifdef __cplusplus
extern "C" {
#endif

#define CG_OWNER_CPU (-1)

typedef struct cg_partition {
    int id;
    int target;          /* index into the assignment's targets */
    size_t *nodes;       /* indices into graph->nodes, topological order */
    size_t node_count;
    char **inputs;       /* non-constant values entering the partition */
    size_t input_count;
    char **outputs;      /* values leaving it (to CPU, another partition, or graph outputs) */
    size_t output_count;
} cg_partition;

typedef struct cg_boundary {
    char *tensor;
    int from_partition;  /* -1: CPU */
    int to_partition;    /* -1: CPU (or a graph output) */
    cg_dtype dtype;
    int rank;
    int64_t dims[CG_MAX_RANK];
    bool known;          /* dtype/shape known */
    uint64_t bytes;
    bool layout_conversion; /* NCHW <-> NHWC at this crossing (NHWC targets, rank 4) */
    bool dtype_conversion;  /* fp32 <-> fp16 at this crossing (fp16 targets) */
} cg_boundary;

typedef struct cg_unsupported {
    size_t node;         /* index into graph->nodes */
    int target;          /* which target refused (the first in priority order) */
    char *reason;        /* the rule and offending value */
} cg_unsupported;

typedef struct cg_assignment {
    const cg_model *model;
    const cg_graph *graph;
    const cg_target *const *targets;
    size_t target_count;
    int *owner;          /* per node: target index or CG_OWNER_CPU */
    int *partition_of;   /* per node: partition id or -1 */
    cg_partition *partitions;
    size_t partition_count;
    cg_boundary *boundaries;
    size_t boundary_count;
    cg_unsupported *unsupported;
    size_t unsupported_count;
    /* nodes supported by a target but left on the CPU by a partition rule */
    cg_unsupported *dropped;
    size_t dropped_count;
} cg_assignment;

CG_API CG_NODISCARD cg_status cg_assign(const cg_model *model, const cg_type_env *types,
                                        const cg_target *const *targets, size_t target_count,
                                        cg_assignment **out, cg_error *err);
CG_API void cg_assignment_free(cg_assignment *a);

/* Checks a against the invariants above, from its graph: each node has one
 * owner, matching the partition lists; each partition is non-empty, lists
 * its nodes once in topological order, and partitions are numbered in the
 * topological order of their first nodes; the partition graph is acyclic;
 * partition inputs/outputs and boundaries are exactly the graph's
 * crossings of non-constant values, each listed once. `types`: what the
 * assignment was made with (it decides constness), may be NULL. CG_INVALID
 * naming the first broken invariant. cg_assign checks its own result with
 * this in debug builds (CG_DEBUG). */
CG_API CG_NODISCARD cg_status cg_assignment_validate(const cg_assignment *a,
                                                     const cg_type_env *types, cg_error *err);

#ifdef __cplusplus
}
#endif
#endif
