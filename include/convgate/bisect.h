/*
 * Bisection: the first intermediate tensor, in topological order, where a
 * candidate run leaves what a correct run of its precision would give.
 *
 * The judgement (the default): every tensor is measured against the
 * float64 reference and judged against the noise floor of its own
 * precision, from the same sample: the fp32 floor (|fp32 reference - fp64|)
 * for a tensor the candidate computes in fp32, the fp16 storage floor
 * (fp64 kernels, every stored value rounded to fp16) for one it computes
 * in fp16 or that depends on one that does (convgate/noise.h). So the
 * fp16 rounding of x*x is noise, and the ReduceMean whose sum overflows is
 * the first tensor beyond its floor. Decisions (comparisons, ArgMax, TopK,
 * quantizers, ...: noise.h) are judged by their flips: a flip within the
 * noise of the decision's input is listed, and what follows it is not
 * blamed for the difference it makes; a flip beyond it is the divergence.
 * With by_tolerance, tensors are compared with the fp32 reference under a
 * fixed tolerance instead.
 *
 * The runs go at once, one thread each: the float64 reference, the
 * candidate, and for the floors the fp32 reference and (for a candidate
 * that computes in fp16) the fp16-storage run. They meet in a small
 * mailbox keyed by value name: each side leaves a copy of a watched value,
 * the last to arrive compares them all and frees them. Nothing else of any
 * run is kept (but the fp64 values decisions read and make), so peak
 * memory is about the runs plus the values some side has produced and
 * another has not yet. Only values the candidate reports are compared: on
 * a target path the values inside a partition are never seen, only those
 * leaving it.
 *
 * A side is a model run on the reference runtime, or on a target path
 * (convgate/targetpath.h). The usual pairing is (model, reference) against
 * (same model, target path); two different models with the same value
 * names (an original and its rewrite, or its fp16 conversion) can be
 * bisected the same way: the candidate's inputs are cast to its declared
 * float types.
 *
 * When the first divergent tensor leaves a partition of several nodes, the
 * run is repeated with that partition's inner values made graph outputs
 * (same nodes, same placement), so the divergence is traced inside it; the
 * exposed values are then kept until the run ends.
 *
 * Triage: a tensor beyond its fp32 floor is a wrong result (a wrong kernel
 * or rewrite). One beyond its fp16 floor is rerun wider: a target path with
 * fp32 accumulation and in fp32, a model on the reference runtime in
 * float64; back within the floor means a precision breakdown (naming fp16
 * overflow, accumulation or storage), still beyond means a wrong result.
 */
#ifndef CONVGATE_BISECT_H
#define CONVGATE_BISECT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "convgate/compare.h"
#include "convgate/model.h"
#include "convgate/noise.h"
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
    /* 0, or the model's first N graph outputs are its own and the others
     * were added to expose values to the observer: its runs hold only the
     * first N to the end (cg_runtime_options.returned_outputs) */
    size_t returned_outputs;
} cg_bisect_side;

typedef struct cg_bisect_options {
    cg_bisect_side reference; /* its path must be NULL unless by_tolerance */
    cg_bisect_side candidate;
    /* compare with the fp32 reference under tol instead of judging against
     * the noise floors */
    bool by_tolerance;
    cg_tolerance tol;
    size_t max_alloc_bytes; /* reference runtime limit; 0: default */
    bool triage;            /* rerun the candidate wider on divergence */
    /* keep the first divergent tensor's values in the result
     * (first_reference: the fp32 reference's, as `run` gives it;
     * first_target), e.g. to look at them in Python */
    bool keep_values;
    cg_progress progress;   /* "bisect", nodes run by the reference side */
} cg_bisect_options;

typedef enum cg_bisect_triage {
    CG_TRIAGE_NONE = 0,       /* nothing diverged, or triage not asked for */
    CG_TRIAGE_PRECISION,      /* wider precision brings it back: precision breakdown */
    CG_TRIAGE_WRONG           /* still beyond in wider precision (or already fp32) */
} cg_bisect_triage;

/* "none", "precision breakdown", "wrong result (wrong kernel or rewrite)" */
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
    /* against the fp64 reference (by_tolerance: the fp32 reference) */
    cg_metrics metrics;
    /* against the floors: the precision the candidate holds it in, its
     * floors (max |d|, 0 when not measured) and where it stands */
    cg_precision precision;
    double floor32, floor16;
    bool floor16_measured;
    bool floor16_sums;   /* floor16 is the fp16-sums floor (a candidate summing in fp16) */
    cg_judgement judgement;
    bool by_flips;       /* a decision's output, judged by its flips */
    cg_flip_stats flips;
} cg_bisect_tensor;

/* One watched tensor: what the per-node views (HTML report, Model
 * Explorer overlays) show as the error at that tensor. */
typedef struct cg_bisect_point {
    char *tensor;
    size_t node_index;   /* producing node, reference graph order */
    bool compared;       /* both sides produced a comparable tensor */
    cg_metrics metrics;  /* valid when compared (against the float64 reference
                            when judged against the floors) */
} cg_bisect_point;

/* A decision that flipped within the noise of its input, before the
 * divergence (or anywhere, when nothing diverged). */
typedef struct cg_bisect_flip {
    char *tensor;
    char *node;
    char *op_type;
    cg_precision precision;
    cg_flip_stats flips;
} cg_bisect_flip;

typedef struct cg_bisect_result {
    size_t watched;       /* values both sides report */
    size_t compared;      /* of them, compared (both sides produced them) */
    size_t divergent;     /* of them, beyond their floor (or tolerance) */
    bool by_noise;        /* judged against the noise floors */
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
    /* by_noise: the first divergent tensor's verdict after the reruns, and
     * the line that says it ("precision breakdown: fp16 overflow in
     * ReduceMean 'mean_sq' ...") */
    cg_verdict verdict;
    char verdict_reason[512];
    bool acc32_ran;
    cg_metrics acc32_metrics;          /* with fp32 accumulation */
    cg_bisect_flip *flipped;           /* decisions flipped within the noise */
    size_t flipped_count;
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
