/*
 * Parity: the reference runtime against a target path (or against outputs
 * made elsewhere, read from files) over samples, every output compared per
 * sample and merged over samples with the metrics of convgate/compare.h,
 * and judged. `convgate compare` is this plus a rendering; `convgate
 * verify` is the same against a golden set; gate 3 judges its samples the
 * same way (src/verify/judge.c is the one judge).
 *
 * The judgement. An output whose tolerance is the default (no --atol,
 * --rtol or --tol entry for it) is judged against the model's noise floor
 * of the precision the target computes in (convgate/noise.h,
 * docs/noise-floor.md): matches (fp32 noise), matches at fp16 precision,
 * precision breakdown, wrong result, with the ratio to the floor. The
 * floors come from the float64 reference run on the same samples, or from
 * a golden set's manifest. An explicit tolerance overrides that for its
 * outputs, and the report says so. Either way the absolute figures (the
 * metrics against the fp32 reference, or the golden outputs) are kept.
 *
 * One sample at a time: its reference and target outputs are compared and
 * freed before the next is loaded, so memory does not grow with the count.
 */
#ifndef CONVGATE_PARITY_H
#define CONVGATE_PARITY_H

#include <stdbool.h>
#include <stddef.h>

#include "convgate/compare.h"
#include "convgate/golden.h"
#include "convgate/noise.h"
#include "convgate/progress.h"
#include "convgate/samples.h"
#include "convgate/target.h"
#include "convgate/targetpath.h"

#ifdef __cplusplus
extern "C" {
#endif

/* --- a target path that follows the samples' shapes -------------------------------- */

#define CG_PARITY_MAX_DIMS 64
/* --task classify/segment against the floors: a target may change at most
 * CG_TASK_FLIP_FACTOR x the decisions a correct run of its precision
 * changes, plus CG_TASK_FLIP_SLACK of all decisions (at least one). */
#define CG_TASK_FLIP_FACTOR 2
#define CG_TASK_FLIP_SLACK 0.01

/* A target path rebuilt whenever a sample binds the symbolic input dims to
 * other sizes (fixed-shape delegates compile for one shape). */
typedef struct cg_sample_path {
    const cg_model *model;
    cg_target_path_options options; /* dims: base bindings (borrowed) */
    cg_dim_binding bound[CG_PARITY_MAX_DIMS]; /* symbols owned */
    size_t bound_count;
    cg_target_path *path;
    bool reduced; /* some path built so far computes in reduced precision */
} cg_sample_path;

/* Starts without a path (built on the first run); the arrays are borrowed. */
CG_API void cg_sample_path_init(cg_sample_path *sp, const cg_model *model,
                                const cg_target *const *targets, size_t target_count,
                                const cg_dim_binding *dims, size_t dim_count,
                                const cg_random_inputs *random, cg_accumulate accumulate,
                                size_t max_alloc_bytes);
/* The path for sample s, (re)built when its dims differ from the last. */
CG_API CG_NODISCARD cg_status cg_sample_path_get(cg_sample_path *sp, const cg_sample *s,
                                                 cg_target_path **out, cg_error *err);
CG_API void cg_sample_path_free(cg_sample_path *sp);

/* --- the comparison ------------------------------------------------------------------ */

/* One output of one sample. */
typedef struct cg_parity_sample {
    bool pass;                  /* by the output's judgement */
    uint64_t mismatches;
    double max_abs, max_rel, cosine;
    bool bit_identical;
    double error;               /* noise: max |target - fp64 reference| on this sample */
} cg_parity_sample;

typedef struct cg_parity_output {
    const char *name;           /* borrowed from the model */
    cg_output_tolerance tol;
    /* against the fp32 reference (or the golden outputs): the absolute
     * figures, judged by tol when the output is not judged by noise;
     * worst_sample indexes the report's samples */
    cg_metrics merged;
    int worst_rank;             /* shape of the worst element's tensor (-1: none) */
    int64_t worst_dims[CG_MAX_RANK];
    cg_dtype dtype;
    cg_parity_sample *samples;  /* one per sample */
    cg_metrics *per_sample;     /* with keep_sample_metrics: full metrics per sample */
    size_t failing_count;
    cg_task_metrics task;
    /* --task classify/segment with the floors measured on fresh reference
     * runs: the same task metrics against the float64 reference, for the
     * target and for what a correct implementation shows (the fp32
     * reference; fp16 storage where measured), merged over samples: the
     * decisions (top-1 rows, pixels' classes or mask bits) this target
     * changes beside those a correct target of its precision changes.
     * task_flips_noise: every change the target makes is within the noise
     * of its precision (its reference gap <= task_limit, the multiple of
     * the output's floor its verdict used) */
    bool task_noise;
    cg_task_metrics task_target64, task_fp32, task_fp16;
    bool task_fp16_measured;
    bool task_flips_noise;
    double task_limit;
    /* The task's part of the verdict (an output judged against the floor,
     * docs/gate3.md "Tasks"): task_judged when it applies; task_pass when
     * every change is within the noise (task_flips_noise) and the target
     * changes at most task_allowed decisions, CG_TASK_FLIP_FACTOR x what
     * the correct run of its precision changes (task_correct_flips) plus
     * CG_TASK_FLIP_SLACK of the decisions (at least 1). */
    bool task_judged, task_pass;
    uint64_t task_correct_flips, task_allowed;
    /* reduced precision, a float output, and every sample bit-identical to
     * the fp32 reference: it probably did not run there */
    bool fallback_suspect;
    bool pass;                  /* the output's judgement */
    /* judged against the noise floor (tol.source "default" and floors
     * known): the verdict, the floors and the error against the fp64
     * reference (a golden set: against its outputs), merged over samples */
    bool by_noise;
    cg_judgement verdict;
    cg_noise_stats floor32, floor16, error;
    bool floor16_measured;
    /* the fp16 storage run stopped on a non-finite value: the fp16 floors
     * are not measurable, and where it stopped (cg_noise_fp16_stop) */
    cg_run_stop floor16_stop;
    /* the fp16-sums floor (a path that sums in fp16) and, with the report's
     * device classes, each class's verdict ([0] sums in fp16, [1] in fp32);
     * `verdict` is then the worse of the two */
    cg_noise_stats floor16_sums;
    bool floor16_sums_measured;
    cg_judgement class_verdict[2];
    const char *device_class[2];  /* their names (borrowed; NULL: one class) */
    bool discontinuous;         /* downstream of a decision */
    bool flips_compared;
    cg_flip_stats flips;
    bool detection;             /* judged with the detections (--task detect) */
    bool against_golden;        /* error measured against golden (fp32) outputs */
} cg_parity_output;

/* --task detect: the detection outputs matched by IoU and class (order
 * means nothing), merged over samples. A box one side has and the other
 * has not is a flipped decision; its margin is how far its score is from
 * the lowest score the other side kept (the cut), noise when within the
 * score floor of the precision. */
typedef struct cg_detect_report {
    bool on;
    cg_detect_outputs outputs;
    double iou_min;
    uint64_t ref_boxes, target_boxes, matched, missing, extra;
    double min_iou;             /* over matched pairs (1 with none) */
    double max_score_diff, max_box_diff; /* matched pairs, against the fp32 reference */
    cg_flip_stats flips;        /* missing and extra boxes (the target as placed) */
    cg_judgement verdict;       /* with two device classes, the worse class's */
    bool pass;
    /* a target judged as two device classes: each class judged by
     * detection, [0] the class that sums in fp16 (names borrowed; NULL: one) */
    const char *device_class[2];
    cg_judgement class_verdict[2];
} cg_detect_report;

typedef struct cg_parity_options {
    const cg_target *const *targets; /* priority order */
    size_t target_count;
    const cg_dim_binding *dims;
    size_t dim_count;
    const cg_random_inputs *random;  /* the target path's placement run */
    cg_accumulate accumulate;        /* convgate/targetpath.h */
    /* read the target's outputs from this folder (samples.h's layout)
     * instead of running the target path */
    const char *outputs_from;
    bool outputs_reduced;            /* ... and they were computed in reduced precision */
    cg_tolerance_args tol;           /* cg_tolerances_resolve */
    cg_task task;
    double threshold;                /* segment */
    const char *detect;              /* detect: "BOXES,SCORES[,LABELS]" (NULL: found by shape) */
    size_t max_alloc_bytes;
    /* keep the last sample's target path in the report (its placement is
     * what the per-node views draw) */
    bool keep_path;
    cg_progress progress;            /* "compare", samples */
    bool keep_sample_metrics;        /* fill cg_parity_output.per_sample */
    /* the samples carry expected outputs (a golden set): no reference runs,
     * the floors are the recorded ones */
    bool golden;
    int threads;                     /* the reference kernels' threads (runtime options) */
    /* the references' threads once the target path has run (its core is
     * free then: the rest of a sample, and every sample after the target's
     * last when it runs ahead); 0: `threads` throughout */
    int threads_after;
    /* the model's type environment at the first sample's dims and inputs,
     * those being sample 0 of `random` (borrowed; NULL: built here): the
     * floors' decision analysis and the first target path take it instead
     * of a recording run each (gate 3 hands gate 2's over) */
    const cg_type_env *types;
    /* the lowering the targets partition at those dims and inputs
     * (borrowed; NULL: the first target path lowers the graph itself):
     * gate 3 hands gate 2's over (cg_target_path_options.lowered) */
    const struct cg_lowered *lowered;
} cg_parity_options;

typedef struct cg_parity_report {
    bool pass;
    bool reduced;                    /* the target computes in reduced precision */
    cg_precision precision;          /* what the judged outputs were computed in */
    bool by_noise;                   /* some output is judged against the noise floor */
    char note[1536];                 /* how the outputs were judged, when not the usual way */
    size_t sample_count;
    char **sample_names;
    cg_parity_output *outputs;       /* graph-output order */
    size_t output_count;
    size_t failed_outputs;
    cg_target_path *path;            /* with keep_path: the last path run (owned) */
    cg_detect_report detect;
    /* the device classes each output was judged as (the target's, borrowed;
     * NULL: one), [0] sums in fp16, [1] in fp32 (cg_noise_target_class) */
    const char *device_class[2];
} cg_parity_report;

/* Runs every sample of src through the reference and the target (or reads
 * the target's outputs) and fills out. CG_OK whenever the report is filled,
 * pass or fail. Free with cg_parity_report_free in every case. */
CG_API CG_NODISCARD cg_status cg_parity_run(const cg_model *model, const cg_parity_options *opt,
                                            cg_sample_source *src, cg_parity_report *out,
                                            cg_error *err);
CG_API void cg_parity_report_free(cg_parity_report *r);

/* --- the judge, sample by sample (src/verify/judge.c) ---------------------------------- */

/* What cg_parity_run, cg_verify_golden and gate 3 share: the reference
 * runs, the target's runs (or outputs given), the comparison and the
 * judgement of every output, one sample at a time. Samples with expected
 * outputs (a golden set) are compared against those, and judged against
 * the floors recorded with them (cg_sample.expected_floors; a set without
 * them is judged by the fixed tolerance, and the report's note says so). */
typedef struct cg_judge cg_judge;

/* out is the report the judge fills (it must outlive the judge); room for
 * sample_count samples. */
CG_API CG_NODISCARD cg_status cg_judge_init(const cg_model *model, const cg_parity_options *opt,
                                            size_t sample_count, cg_parity_report *out,
                                            cg_judge **j, cg_error *err);
/* Sample s, number `index`: given (with opt.outputs_from) holds the
 * target's outputs in graph-output order, else the target path runs (or,
 * with no targets, the reference itself). */
CG_API CG_NODISCARD cg_status cg_judge_add(cg_judge *j, const cg_sample *s, size_t index,
                                           cg_value *const *given, cg_error *err);
/* Announces the samples cg_judge_add will get next, in this order (borrowed
 * until cg_judge_finish or cg_judge_free): where the target path runs with
 * floors on two cores and every sample has the same dims, its runs go
 * ahead on a thread of their own, sample after sample, while each
 * cg_judge_add runs that sample's references and tallies the samples whose
 * target runs are in, in order (cg_judge_finish tallies the rest). The
 * figures and verdicts are those of cg_judge_add alone; an error of a
 * sample may come from a later cg_judge_add or from cg_judge_finish, the
 * earliest sample's first. Otherwise nothing changes. Call it before the
 * first cg_judge_add. */
CG_API CG_NODISCARD cg_status cg_judge_ahead(cg_judge *j, const cg_sample *samples,
                                             size_t count, cg_error *err);
/* Announces the samples cg_judge_add will get next, in this order (borrowed
 * as with cg_judge_ahead), and judges them in phases: where the target
 * path runs with floors, the float32 reference runs every sample and goes
 * (while *hold, when given, still shares its packed weights; the hold is
 * freed then and *hold set to NULL), then the target path runs every
 * sample and its runtimes go, then the float64 reference runs every
 * sample and goes; each cg_judge_add then compares that sample, runs its
 * fp16 floors and tallies it. One of the three runtimes is alive at a
 * time, each phase on every core the references get (threads_after),
 * where cg_judge_ahead holds all three side by side: the peak memory is
 * the largest phase's. The figures and verdicts are those of cg_judge_add
 * alone; a failing sample stops the phases there and reports, when added,
 * the error lockstep would give. Otherwise (golden sets, outputs given, no
 * floors) nothing changes and the hold stays. Call it before the first
 * cg_judge_add, instead of cg_judge_ahead; cg_judge_take_path then gives
 * NULL. */
CG_API CG_NODISCARD cg_status cg_judge_phases(cg_judge *j, const cg_sample *samples,
                                              size_t count, cg_weights_hold **hold,
                                              cg_error *err);
/* Tallies every sample added so far, waiting for the target's runs ahead
 * (cg_judge_finish does it first): the samples' times (cg_judge_times) are
 * then complete. A no-op without cg_judge_ahead. */
CG_API CG_NODISCARD cg_status cg_judge_wait(cg_judge *j, cg_error *err);
/* The target path the last sample ran on, handed over (the caller frees
 * it; NULL when none ran here). */
CG_API cg_target_path *cg_judge_take_path(cg_judge *j);
/* The seconds the samples added so far took: [0] the reference runs
 * (floors included), [1] the target's runs and tallies, [2] the
 * comparisons. [0] and [1] run side by side on two cores: each one's own
 * wall time and its thread's CPU time (a runtime's own worker threads,
 * with threads > 1, not counted); [2] the process's CPU time. */
CG_API void cg_judge_times(const cg_judge *j, double wall_s[3], double cpu_s[3]);
/* Every output's judgement and the report's pass. */
CG_API CG_NODISCARD cg_status cg_judge_finish(cg_judge *j, cg_error *err);
CG_API void cg_judge_free(cg_judge *j);

/* --- against a golden set ------------------------------------------------------------ */

typedef struct cg_verify_options {
    /* what produces the outputs: the reference runtime (no targets, no
     * outputs_from), the target path, or files made elsewhere */
    const cg_target *const *targets;
    size_t target_count;
    const cg_dim_binding *dims;
    size_t dim_count;
    const cg_random_inputs *random;
    cg_accumulate accumulate;        /* convgate/targetpath.h */
    const char *outputs_from;        /* OUT/SET/NAME.npy or OUT/SET.npz; the targets
                                        then only say what precision they hold */
    cg_tolerance_args tol;           /* cg_tolerances_resolve */
    size_t max_alloc_bytes;
} cg_verify_options;

typedef struct cg_verify_report {
    bool pass;
    bool silent_fallback;            /* reduced, and every output bit-identical to fp32 */
    char model_sha256[CG_SHA256_HEX];
    char *golden_version, *golden_created;
    int64_t golden_format;
    size_t compared, failed;         /* (set, output) pairs, and of them failing */
    /* per output: tolerance or verdict, metrics against the golden outputs
     * merged over the sets and per set (per_sample); samples are the sets */
    cg_parity_report parity;
} cg_verify_report;

/* Checks the golden folder (manifest, every file's hash, the model's hash:
 * a stale or tampered set is an error, never a pass), then every set: each
 * must cover every input and output of the model (cg_golden_sample), and
 * every output is compared. CG_OK whenever the report is filled. */
CG_API CG_NODISCARD cg_status cg_verify_golden(const cg_model *model, const char *model_path,
                                               const char *golden, const cg_verify_options *opt,
                                               cg_verify_report *out, cg_error *err);
CG_API void cg_verify_report_free(cg_verify_report *r);

#ifdef __cplusplus
}
#endif
#endif
