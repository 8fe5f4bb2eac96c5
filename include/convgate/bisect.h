/*
 * Bisection: the first intermediate tensor, in topological order, where a
 * candidate run diverges from a reference run beyond tolerance.
 *
 * Both runs go at once, one per thread, and meet in a small mailbox keyed
 * by value name: whichever side produces a value first leaves a copy, the
 * other compares against it and frees it. Nothing else of either run is
 * kept, so peak memory is about two runs plus the values one side has
 * produced and the other has not yet (small when both follow the graph's
 * order). Only values both sides report are compared: on a target path the
 * values inside a partition are never seen, only those leaving it.
 *
 * A side is a model run on the reference runtime, or on a target path
 * (convgate/targetpath.h). The usual pairing is (model, reference) against
 * (same model, target path); two different models with the same value
 * names (an original and its rewrite) can be bisected the same way.
 *
 * When the first divergent tensor leaves a partition of several nodes, the
 * run is repeated with that partition's inner values made graph outputs
 * (same nodes, same placement), so the divergence is traced inside it; the
 * exposed values are then kept until the run ends.
 *
 * Triage: when the candidate is a target path that computes in reduced
 * precision, the path is run again with force_fp32 and the divergent
 * tensor is compared once more: matching then means precision loss,
 * still diverging means a wrong kernel or rewrite.
 */
#ifndef CONVGATE_BISECT_H
#define CONVGATE_BISECT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "convgate/compare.h"
#include "convgate/model.h"
#include "convgate/progress.h"
#include "convgate/runtime.h"
#include "convgate/targetpath.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct cg_bisect_side {
    const cg_model *model;
    /* NULL: the reference runtime. Otherwise the target path to run; its
     * observe/observe_user and force_fp32 fields are set by bisect. */
    const cg_target_path_options *path;
} cg_bisect_side;

typedef struct cg_bisect_options {
    cg_bisect_side reference;
    cg_bisect_side candidate;
    cg_tolerance tol;
    size_t max_alloc_bytes; /* reference runtime limit; 0: default */
    bool triage;            /* rerun an fp16 candidate path in fp32 on divergence */
    /* keep both sides' values of the first divergent tensor in the result
     * (first_reference, first_target), e.g. to look at them in Python */
    bool keep_values;
    cg_progress progress;   /* "bisect", nodes run by the reference side */
} cg_bisect_options;

typedef enum cg_bisect_triage {
    CG_TRIAGE_NONE = 0,       /* nothing diverged, or triage not asked for */
    CG_TRIAGE_PRECISION,      /* fp32 rerun matches: precision loss (fp16) */
    CG_TRIAGE_WRONG           /* fp32 (or an fp32-only candidate) also diverges */
} cg_bisect_triage;

/* "none", "precision loss (fp16)", "wrong kernel or rewrite" */
CG_API const char *cg_bisect_triage_name(cg_bisect_triage t);

/* Type of one value (a node input, or a compared tensor). */
typedef struct cg_bisect_type {
    char *name;
    bool known;
    cg_dtype dtype;
    int rank;
    int64_t dims[CG_MAX_RANK];
} cg_bisect_type;

/* One compared tensor and the node (of the reference model) producing it. */
typedef struct cg_bisect_tensor {
    char *tensor;
    char *node;          /* node name, "#index" when unnamed */
    char *op_type;
    size_t node_index;   /* in the reference graph's (topological) node order */
    char *placed_on;     /* candidate path: owning target name or "CPU"; NULL otherwise */
    cg_bisect_type type; /* the reference value's type */
    cg_metrics metrics;
} cg_bisect_tensor;

/* One watched tensor: what the per-node views (HTML report, Model
 * Explorer overlays) show as the error at that tensor. */
typedef struct cg_bisect_point {
    char *tensor;
    size_t node_index;   /* producing node, reference graph order */
    bool compared;       /* both sides produced a comparable tensor */
    cg_metrics metrics;  /* valid when compared */
} cg_bisect_point;

typedef struct cg_bisect_result {
    size_t watched;       /* values both sides report */
    size_t compared;      /* of them, compared (both sides produced them) */
    size_t divergent;     /* of them, beyond tolerance */
    bool diverged;
    cg_bisect_tensor first_divergent;  /* valid when diverged */
    cg_bisect_type *inputs;            /* the first divergent node's inputs */
    size_t input_count;
    bool has_last_matching;
    cg_bisect_tensor last_matching;    /* the last match before first_divergent
                                          (or the last match at all) */
    /* the first pass diverged at a partition's output: the partition's
     * inner values were exposed as outputs and compared in a second pass */
    bool refined;
    size_t refined_values;
    cg_bisect_triage triage;
    bool triage_ran;                   /* the fp32 rerun happened */
    cg_metrics triage_metrics;         /* the divergent tensor in the fp32 rerun */
    char triage_note[256];
    /* every watched tensor of the final pass, in topological order */
    cg_bisect_point *points;
    size_t point_count;
    /* with keep_values and a divergence: the first divergent tensor as the
     * reference and the candidate produced it (owned) */
    cg_value *first_reference;
    cg_value *first_target;
} cg_bisect_result;

/* Runs both sides on `inputs` and fills *out (free with
 * cg_bisect_result_free, also after a failure). A side that fails to run is
 * an error naming the side. */
CG_API CG_NODISCARD cg_status cg_bisect_run(const cg_bisect_options *opt,
                                            const cg_named_value *inputs, size_t input_count,
                                            cg_bisect_result *out, cg_error *err);
CG_API void cg_bisect_result_free(cg_bisect_result *r);

#ifdef __cplusplus
}
#endif
#endif
