/*
 * What the XNNPACK delegate tells its callers beyond the cg_target vtable.
 *
 * The state that the xnnpack target's compile() returns starts with a
 * cg_xnnpack_report, so a caller holding that state (the runtime, the
 * residency test) can read which nodes were actually lowered and how much
 * boundary work the partition does, without linking anything of the
 * delegate: this header is plain declarations, usable in builds without
 * XNNPACK (where no xnnpack target exists to produce such a state).
 */
#ifndef CG_DELEGATE_XNNPACK_H
#define CG_DELEGATE_XNNPACK_H

#include <stddef.h>
#include <stdint.h>

#include "convgate/target.h"

/* The XNNPACK executing target (a row of src/delegate/builtin.def). NULL
 * when XNNPACK cannot initialize on this machine. */
cg_target *cg_xnnpack_target_new(void);

typedef struct cg_xnnpack_report {
    /* graph node indices lowered into XNNPACK nodes, in partition order */
    const size_t *lowered;
    size_t lowered_count;
    /* XNNPACK nodes defined (composite lowerings define several per node) */
    size_t xnn_node_count;
    /* rank-4 tensors converted at the boundary per run (NCHW->NHWC entering,
     * NHWC->NCHW leaving) */
    size_t layout_inputs, layout_outputs;
    /* weights repacked at compile vs. handed to XNNPACK in place */
    size_t weights_repacked, weights_in_place;
    /* bytes of repacked filters and biases freed once XNNPACK had packed
     * them into its own buffers (at each segment's runtime creation), and
     * the most of them alive at once (one segment's) */
    size_t transient_bytes_freed, transient_bytes_peak;
    /* XNNPACK runtimes the partition is built as (segments of its nodes run
     * one after the other, each created with only its own constants' sources
     * alive), and the values crossing from one to a later one */
    size_t segments, crossing_values;
    /* threads XNNPACK runs the partition on, the caller's included (its
     * pthreadpool's size; 1: no pool, the calling thread) */
    size_t threads;
    /* runs and conversions done so far */
    uint64_t runs;
    uint64_t layout_conversions;
} cg_xnnpack_report;

#endif
