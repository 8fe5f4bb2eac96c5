/*
 * Numerical comparison of a target path's tensors against the reference.
 *
 * One cg_metrics per compared tensor (or per output accumulated over many
 * samples with cg_metrics_merge). Pass/fail is elementwise:
 *   |got - ref| <= atol + rtol * |ref|
 * NaN against a number fails; NaN against NaN passes only with nan_equal;
 * +inf matches +inf (and -inf -inf) only. The metrics never let a NaN pass
 * as equal to a number.
 */
#ifndef CONVGATE_COMPARE_H
#define CONVGATE_COMPARE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "convgate/status.h"
#include "convgate/tensor.h"

#ifdef __cplusplus
extern "C" {
#endif


typedef struct cg_tolerance {
    double atol;
    double rtol;
    bool nan_equal;
    const char *justification; /* free text printed with the report, may be NULL */
} cg_tolerance;

#define CG_HIST_BINS 12 /* |diff| decades: <1e-10, [1e-10,1e-9), ..., >=1 */

typedef struct cg_metrics {
    uint64_t count;          /* elements compared */
    uint64_t mismatches;     /* elements outside tolerance (NaN rules included) */
    double max_abs, mean_abs, max_rel, rmse, nmse, cosine, pearson;
    uint64_t max_ulp;        /* float32 ULP distance (float16 tensors: fp16 ULPs) */
    uint64_t nan_ref, nan_got, inf_ref, inf_got;
    int64_t worst_index;     /* flat index of the largest |diff| (-1: none) */
    double worst_ref, worst_got;
    uint64_t hist[CG_HIST_BINS];
    bool shape_mismatch, dtype_mismatch;
    bool bit_identical;      /* every element has the same bits */
    bool pass;
    /* running sums for merging (internal, but kept in the struct so
     * metrics can be merged over samples) */
    double sum_abs, sum_sq_diff, sum_sq_ref, sum_ref, sum_got, sum_ref2, sum_got2, sum_refgot;
    /* added for stable merging (src/verify/compare.c): pairs where both
     * values are finite, their means and centered (co)moments, merged with
     * Chan et al.'s parallel update so Pearson does not cancel */
    uint64_t finite_count;
    double mean_ref, mean_got, m2_ref, m2_got, co_refgot;
    /* sample the worst element came from: 0 from cg_compare_tensors; the
     * caller sets it on b before cg_metrics_merge */
    int64_t worst_sample;
} cg_metrics;

/* Compares got against ref (any numeric dtype; both read as double). */
CG_API CG_NODISCARD cg_status cg_compare_tensors(const cg_tensor *ref, const cg_tensor *got,
                                                 const cg_tolerance *tol, cg_metrics *out,
                                                 cg_error *err);
/* Folds b into a (same output over another sample). */
CG_API void cg_metrics_merge(cg_metrics *a, const cg_metrics *b);
CG_API void cg_metrics_init(cg_metrics *m);

/* Built-in tolerances: ORT OpTester's float values (atol 1e-5, rtol 1e-4),
 * or its fp16 values (atol 2.5e-3, rtol 1e-3) for a reduced-precision path
 * (reference: shared/reference/reliability.md section 3); the justification
 * says which. */
CG_API void cg_tolerance_default(cg_tolerance *tol, bool reduced_precision);

/* --- tolerance files (src/verify/tolerance.c) ------------------------------------- */

/* The tolerance in force for one output and where it came from. */
typedef struct cg_output_tolerance {
    cg_tolerance tol;   /* tol.justification points at `justification` or static text */
    const char *source; /* "default", "--atol/--rtol", "--tol default", "--tol" */
    char *justification;
} cg_output_tolerance;

/* What the command line says about tolerances. */
typedef struct cg_tolerance_args {
    bool have_atol, have_rtol; /* --atol / --rtol, either alone */
    double atol, rtol;
    bool nan_equal;            /* --nan-equal */
    const char *file;          /* --tol FILE (not with --atol/--rtol) */
} cg_tolerance_args;

/* Per-output tolerances, one rule for every command: each output starts
 * from cg_tolerance_default for the path's precision (source "default"),
 * with --atol/--rtol replacing what they give (source "--atol/--rtol") and
 * --nan-equal; then the tolerance file's "default" is laid over it, then
 * its "outputs"."NAME" entry. The file (JSON):
 *   {"default": {"atol": X, "rtol": Y, "nan_equal": B, "justification": "..."},
 *    "outputs": {"NAME": {...}}}
 * every field optional. A key other than these, a duplicate key, a value
 * of the wrong type (atol and rtol: finite numbers >= 0) and an output name
 * the model does not have (a typo must never fall back to the default) are
 * CG_USAGE naming the file and the key. out has room for count entries;
 * free with cg_tolerances_free. */
CG_API CG_NODISCARD cg_status cg_tolerances_resolve(const char *const *outputs, size_t count,
                                                    const cg_tolerance_args *args,
                                                    bool reduced_precision,
                                                    cg_output_tolerance *out, cg_error *err);
CG_API void cg_tolerances_free(cg_output_tolerance *t, size_t count);

/* --- task metrics (src/verify/task.c) ----------------------------------------------- */

typedef enum cg_task {
    CG_TASK_NONE = 0,
    CG_TASK_CLASSIFY,
    CG_TASK_SEGMENT,
    CG_TASK_DETECT
} cg_task;

CG_API const char *cg_task_name(cg_task task); /* "none", "classify", "segment", "detect" */

/* What a task cares about, accumulated over samples (one output).
 * classify: class axis = last axis; top-1 agreement and top-5 overlap
 * (|top5 ref & top5 target| / 5) per row, NaN ranking first as numpy's
 * argmax does. segment: a map with a class axis (rank >= 3 and dims[1] >=
 * 2: NCHW logits or scores) is a multi-class mask, the argmax over axis 1
 * per pixel: pixel agreement and the mean IoU over the classes either side
 * uses; any other map is a binary mask, value > threshold: intersection,
 * union and foreground counts. Where the choice differs (a top-1 or a
 * pixel's class), `flips` counts it and max_margin keeps the largest gap,
 * in the reference, between the reference's choice and the target's (how
 * far from a tie the flipped decision was); for binary masks the margin is
 * |ref - threshold|. Detection is judged over several outputs together
 * (cg_detect_*). */
typedef struct cg_task_metrics {
    cg_task task;
    double threshold;
    bool applicable; /* classify: float outputs with >= 2 classes */
    uint64_t rows, top1_agree;
    double top5_overlap; /* summed over rows */
    uint64_t inter, uni, fg_ref, fg_got;
    uint64_t mask_pixels; /* segment without a class axis: mask pixels compared */
    /* segment with a class axis */
    bool multiclass;
    int64_t classes;
    uint64_t pixels, pixels_agree;
    uint64_t *class_inter, *class_union; /* per class (owned) */
    /* decisions that differ */
    uint64_t flips;
    double max_margin;
} cg_task_metrics;

CG_API void cg_task_metrics_init(cg_task_metrics *m, cg_task task, double threshold);
CG_API void cg_task_metrics_free(cg_task_metrics *m);
/* Folds one sample's ref and got (same shape) in. */
CG_API void cg_task_metrics_add(cg_task_metrics *m, const cg_tensor *ref, const cg_tensor *got);
CG_API double cg_task_top1(const cg_task_metrics *m); /* share of rows; NaN when not applicable */
CG_API double cg_task_top5(const cg_task_metrics *m);
CG_API double cg_task_iou(const cg_task_metrics *m);  /* 1 when both masks are empty */
/* Multi-class masks: the share of pixels whose class agrees, and the mean
 * over the classes present on either side of their IoU (NaN: not a
 * multi-class mask). */
CG_API double cg_task_pixel_agreement(const cg_task_metrics *m);
CG_API double cg_task_mean_iou(const cg_task_metrics *m);
/* The decisions compared: rows (classify), pixels (a multi-class mask),
 * mask pixels (a binary mask); what `flips` counts among. */
CG_API uint64_t cg_task_decisions(const cg_task_metrics *m);

/* --- detection (src/verify/task.c) --------------------------------------------------- */

/* Which graph outputs hold the detections: boxes (float, last axis 4,
 * corners x1, y1, x2, y2), scores (float, one per box) and optionally
 * labels (one class per box): output indices, -1 for none. */
typedef struct cg_detect_outputs {
    int boxes, scores, labels;
} cg_detect_outputs;

/* Finds them among the model's outputs, from the reference's tensors of one
 * sample: by `spec` "BOXES,SCORES[,LABELS]" (output names) when given,
 * else by shape (a float [..., N, 4] output, a float output of N values,
 * an integer one of N values), names containing "box", "score", "label" or
 * "class" breaking ties. CG_USAGE naming the outputs when none fit or the
 * choice is ambiguous. */
CG_API CG_NODISCARD cg_status cg_detect_find(const char *const *names, const cg_tensor *const *ref,
                                             size_t count, const char *spec, cg_detect_outputs *out,
                                             cg_error *err);

/* A reference's detections matched to another's: in order of the
 * reference's scores, each reference box takes the unmatched box of the
 * same label with the largest IoU, when that IoU is at least iou_min. */
typedef struct cg_detect_match {
    size_t ref_count, got_count;
    size_t matched;
    size_t *ref_index, *got_index;  /* the matched pairs */
    size_t missing_count, extra_count;
    size_t *missing;                /* reference boxes left unmatched */
    size_t *extra;                  /* the other side's boxes left unmatched */
    double min_iou;                 /* over the matched pairs (1 with none) */
} cg_detect_match;

/* labels may be NULL on both sides (class-agnostic). CG_INVALID naming the
 * tensor when boxes, scores and labels disagree on the box count. */
CG_API CG_NODISCARD cg_status cg_detect_match_run(const cg_tensor *ref_boxes,
                                                  const cg_tensor *ref_scores,
                                                  const cg_tensor *ref_labels,
                                                  const cg_tensor *got_boxes,
                                                  const cg_tensor *got_scores,
                                                  const cg_tensor *got_labels, double iou_min,
                                                  cg_detect_match *out, cg_error *err);
CG_API void cg_detect_match_free(cg_detect_match *m);

/* Lower edge of histogram bin b (0 for bin 0): 1e-10, 1e-9, ..., 1. */
CG_API double cg_hist_bin_low(int bin);

#ifdef __cplusplus
}
#endif
#endif
