/*
 * Internals of the XNNPACK delegate, shared by its two files:
 * xnnpack_lower.c (one table of per-op lowering functions that both decide
 * support and define XNNPACK subgraph nodes) and xnnpack_target.c (the
 * cg_target: supports/compile/run/release over that table).
 *
 * The invariant the split protects: supports(node) runs exactly the checks
 * that compile runs for that node (the lowering function with dry_run set
 * stops right before its first xnn_define_* call), so predicted residency
 * equals actual residency.
 *
 * Layout: inside a partition every rank-4 tensor is NHWC; the ONNX (NCHW)
 * order is restored only at the partition's boundary. Static weights are
 * repacked once at compile (OIHW -> OHWI), in place of a copy when the two
 * orders coincide (1x1 kernels, one input channel per group).
 */
#ifndef CG_DELEGATE_XNNPACK_INTERNAL_H
#define CG_DELEGATE_XNNPACK_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <xnnpack.h>

#include "convgate/target.h"
#include "convgate/tensor.h"

#define XNNG_REASON_MAX 512

/* A value defined in the XNNPACK subgraph being built. dims are in ONNX
 * order; nhwc says the XNNPACK value holds them permuted (rank 4). */
typedef struct xnng_value {
    const char *name;
    uint32_t id;
    int rank;
    int64_t dims[CG_MAX_RANK];
} xnng_value;

/* A constant read at compile. Only the build reads it: every static value
 * XNNPACK keeps past the runtime's creation is a copy in the build's
 * buffers, and a packing node's filter and bias are read at creation only
 * (xnng_transient), so the constants are freed once the runtime exists.
 * A misaligned initializer (cg_init_payload_misaligned) is read through an
 * aligned transient copy of its bytes, made when a lowering first reads
 * its data (static_data in xnnpack_lower.c): a support check reads shapes only, and a
 * convolution that reorders its filter reads the model's bytes directly. */
typedef struct xnng_const {
    const char *name;
    cg_value *value;
    bool borrowed; /* data is not the value's own (the model's or a transient copy) */
    bool alias;    /* same value as an earlier entry (Identity): not owned */
    const uint8_t *src; /* misaligned bytes still to be copied to data, or NULL */
} xnng_const;

/* Bytes XNNPACK keeps pointers to (repacked weights, composite constants). */
typedef struct xnng_buffers {
    void **items;
    size_t count, cap;
} xnng_buffers;

/* Bytes only a packing node reads (a convolution's or fully connected
 * node's filter and bias): XNNPACK packs them into its own buffers when the
 * runtime is created and reads them no more (src/subgraph/convolution-2d.c
 * and its kin pass them to the operator's create function only; their
 * setup reads the input and output blobs), so they are freed then. From
 * XNNG_TRANSIENT_MAP bytes on a block is mapped on its own and unmapped
 * when freed: its pages go back at once, and a read after the runtime's
 * creation would fault, not read stale bytes. */
typedef struct xnng_block {
    void *p;
    size_t mapped; /* the mapping's size; 0 for a heap block */
} xnng_block;

typedef struct xnng_transient {
    xnng_block *items;
    size_t count, cap;
    size_t total; /* bytes handed out */
} xnng_transient;

typedef struct xnng_build {
    const cg_model *model;
    const cg_graph *graph;
    const cg_type_env *types;
    bool dry_run;
    char reason[XNNG_REASON_MAX]; /* why the last node was refused */
    cg_error *err;                /* hard failures (memory, XNNPACK errors) */
    /* build only: the segment's subgraph (xnnpack_target.c) and the values
     * it gives out, the external ids ext_first.. in the order of ext_out */
    xnn_subgraph_t subgraph;
    const cg_partition_desc *desc;
    const char *const *ext_out;
    size_t ext_out_count;
    uint32_t ext_out_first;
    xnng_value *values;
    size_t value_count, value_cap;
    /* both: constants read so far (freed by xnng_build_clear unless moved) */
    xnng_const *consts;
    size_t const_count, const_cap;
    xnng_buffers buffers;
    xnng_transient transient; /* freed once the runtime exists (a build) or by xnng_build_clear */
    /* build only: what the lowering did (cg_xnnpack_report) */
    size_t xnn_nodes, weights_repacked, weights_in_place;
    /* transient bytes freed in all, and the most one segment held */
    size_t transient_freed, transient_peak;
} xnng_build;

/* One row of the lowering table. */
typedef cg_status (*xnng_lower_fn)(xnng_build *b, const cg_node *n, bool dry_run);

typedef struct xnng_op {
    const char *op_type;
    xnng_lower_fn lower;
} xnng_op;

/* The table (xnnpack_lower.c); NULL when op_type has no lowering. */
const xnng_op *xnng_find_op(const char *domain, const char *op_type);
/* Why an op without a row is refused (names XNNPACK's missing node type
 * where we know it). */
const char *xnng_missing_op_note(const char *op_type);

/* Frees what the build still owns. */
void xnng_build_clear(xnng_build *b);
/* After a segment's xnn_create_runtime_v2: drops the model's pages of the
 * weights it read in place and frees its constants, transient buffers and
 * value table (the next segment defines its own ids); keeps the buffers. */
void xnng_segment_end(xnng_build *b);
/* Frees the transient buffers (after xnn_create_runtime_v2, or on failure). */
void xnng_transient_free(xnng_transient *t);

/* XNNPACK's status names. */
const char *xnng_status_name(enum xnn_status s);

#endif
