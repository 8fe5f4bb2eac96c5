/*
 * The three gates, in order, stopping at the first that fails:
 *   1 converts   the structural checker passes (convgate/check.h);
 *   2 runs where intended   the placement on the targets (residency,
 *     partitions, boundaries, time-weighted coverage) is acceptable: no
 *     fail-policy target refuses a node; the targets take the majority of
 *     the reference time (or the user's bar) and the mixed latency
 *     estimate beats the CPU alone; under require_full instead, nothing
 *     falls back to the CPU and one partition holds it all;
 *   3 matches    the target path's outputs, judged on every sample as
 *     compare judges them (convgate/parity.h): against the model's noise
 *     floor of the target's precision by default, by a fixed tolerance
 *     where one is given; on a failure, bisection names the first tensor
 *     beyond the floor of its own precision (convgate/bisect.h).
 *
 * Samples (input folders, random inputs, golden sets) come from
 * convgate/samples.h and convgate/golden.h; gate 2's reference run and gate
 * 3 use the same random-input policy, so they feed the same tensors.
 */
#ifndef CONVGATE_GATE_H
#define CONVGATE_GATE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "convgate/bisect.h"
#include "convgate/check.h"
#include "convgate/compare.h"
#include "convgate/parity.h"
#include "convgate/partition.h"
#include "convgate/progress.h"
#include "convgate/runtime.h"
#include "convgate/samples.h"
#include "convgate/target.h"

#ifdef __cplusplus
extern "C" {
#endif

/* --- gates ------------------------------------------------------------------ */

typedef enum cg_gate_state {
    CG_GATE_PASS = 0,
    CG_GATE_FAIL,
    CG_GATE_NOT_RUN  /* an earlier gate failed */
} cg_gate_state;

CG_API const char *cg_gate_state_name(cg_gate_state s); /* "PASS", "FAIL", "not run" */

/* How gate 3 schedules its runs on every sample. OVERLAP: the target path
 * runs ahead of the references, on its own thread, while the float64,
 * float32 and fp16-floor references run (cg_judge_ahead): fastest on two
 * cores, but the four runtimes and their weights are alive together.
 * PHASED: the float32 reference runs every sample (sharing gate 2's
 * packed weights), then the target path, then the float64 reference, one
 * runtime alive at a time (cg_judge_phases): the peak memory is about one
 * reference run's. AUTO: PHASED where the model's
 * stored weights reach CG_GATE_PHASED_WEIGHT_BYTES, OVERLAP below
 * (docs/gate3.md gives the measurements). The report is the same either
 * way. */
typedef enum cg_gate_schedule {
    CG_GATE_SCHEDULE_AUTO = 0,
    CG_GATE_SCHEDULE_OVERLAP,
    CG_GATE_SCHEDULE_PHASED
} cg_gate_schedule;

#define CG_GATE_PHASED_WEIGHT_BYTES ((uint64_t)32 << 20)

CG_API const char *cg_gate_schedule_name(cg_gate_schedule s); /* "auto" ... */

typedef struct cg_gate_options {
    const cg_target *const *targets; /* priority order */
    size_t target_count;
    const cg_dim_binding *dims;
    size_t dim_count;
    bool require_full;
    /* gate 2's bar (without require_full): the targets take more than half
     * the reference time, or at least min_coverage of it when
     * have_min_coverage (--min-coverage F, F in [0, 1]); and the mixed
     * latency estimate beats the CPU alone (cg_gate_runs_judge); 0 waives
     * both */
    bool have_min_coverage;
    double min_coverage;
    /* input dims the model gives no size for, that neither dims nor the
     * samples' files bind, take 1 instead of refusing the gate (CG_USAGE
     * naming the dim: cg_samples_refuse_guessed_dims) */
    bool accept_default_dims;
    cg_accumulate accumulate;        /* --accumulate (convgate/targetpath.h) */
    /* --atol/--rtol/--tol: outputs given a tolerance are judged by it
     * instead of the noise floor (cg_tolerances_resolve) */
    cg_tolerance_args tol;
    cg_task task;            /* gate 3's task metrics; detect judges the detections as sets */
    double threshold;
    const char *detect;      /* "BOXES,SCORES[,LABELS]" or NULL */
    size_t max_alloc_bytes;
    int threads;                  /* the reference kernels' threads (runtime options) */
    int threads_after;            /* cg_parity_options.threads_after */
    /* the random inputs of gate 2's reference runs (convgate/samples.h;
     * NULL: the policy's defaults, seed 0); random samples for gate 3 come
     * from the same policy */
    const cg_random_inputs *random;
    const cg_sample_set *samples; /* at least one sample */
    const char *samples_desc;     /* "2 sets from examples/tiny_cnn_inputs" (borrowed) */
    /* keep the bisected tensor's values (cg_bisect_options.keep_values) */
    bool keep_values;
    cg_progress progress;         /* "gate 3" samples, then bisection's nodes */
    /* gate 3's target outputs made elsewhere (the real LiteRT, --runner),
     * read from DIR/SET/STEM.npy per sample (convgate/samples.h) instead of
     * running the target path; bisection then does not run (it needs the
     * target path's intermediate values) */
    const char *outputs_from;
    bool outputs_reduced;         /* ... computed in reduced precision */
    cg_gate_schedule schedule;    /* --schedule (default AUTO) */
} cg_gate_options;

/* Where a gate's time goes (convgate gate --timings): wall seconds and
 * the process's CPU seconds (every thread) per phase. Gate 3's samples
 * are broken down into the reference runs (the float64, float32 and fp16
 * floor runs), the target path's runs (and their tallies) and the
 * comparisons; the reference and the target run side by side on two
 * cores, so those two lines give each one's own wall time and its
 * thread's CPU time, and overlap. Not in the JSON report, which is the
 * same on every rerun. */
typedef enum cg_gate_phase {
    CG_GATE_PHASE_CHECK = 0,   /* gate 1 */
    CG_GATE_PHASE_LOWER,       /* gate 2: the graph the targets partition */
    CG_GATE_PHASE_TYPES,       /* gate 2: tensor types (a reference run) */
    CG_GATE_PHASE_PLACE,       /* gate 2: placement */
    CG_GATE_PHASE_TIMED,       /* gate 2: the timed reference run */
    CG_GATE_PHASE_SETUP,       /* gate 3: floors and paths set up */
    CG_GATE_PHASE_SAMPLES,     /* gate 3: every sample, the next three together */
    CG_GATE_PHASE_REFERENCE,   /*   the reference runs */
    CG_GATE_PHASE_TARGET,      /*   the target path's runs */
    CG_GATE_PHASE_COMPARE,     /*   comparisons */
    CG_GATE_PHASE_VERDICTS,    /* gate 3: every output's verdict */
    CG_GATE_PHASE_BISECT,      /* gate 3: bisection of a failure */
    CG_GATE_PHASES
} cg_gate_phase;

CG_API const char *cg_gate_phase_name(cg_gate_phase p); /* "gate 2 types" */

typedef struct cg_gate_timings {
    double wall_s[CG_GATE_PHASES];
    double cpu_s[CG_GATE_PHASES];
    double peak_rss_mib[CG_GATE_PHASES]; /* the process's peak RSS at the phase's end */
    double total_wall_s, total_cpu_s;
    /* gate 3's schedule as it ran (OVERLAP or PHASED; AUTO: gate 3 ran no
     * samples), and the stored weight bytes AUTO chose it by */
    cg_gate_schedule schedule;
    uint64_t weight_bytes;
} cg_gate_timings;

typedef struct cg_gate_report {
    char *model;             /* the model's path (or "-") */
    char *targets;           /* "litert-gpu" or "a,b" */
    char *samples;           /* opt.samples_desc, copied (NULL when none was given) */
    bool pass;
    /* the size every dynamic input dim took and where it came from
     * (convgate/samples.h; borrows the model's names), and as text */
    cg_dim_use *dims;
    size_t dim_count;
    char dims_text[512];
    char reason[1024];       /* the verdict's one line */

    cg_gate_state converts;
    size_t check_errors, check_warnings;
    char converts_detail[512];

    cg_gate_state runs;
    size_t node_count, nodes_on_targets, partitions, boundaries;
    double time_coverage;    /* share of reference CPU time on targets, [0, 1]; <0 unknown */
    /* the estimate gate 2 judges (convgate/profile.h), on the timed
     * reference run of sample 0: the CPU alone (reference_ms) and the mixed
     * run (targets + CPU remainder + boundary copies); <0 unknown */
    double reference_ms, mixed_ms;
    double coverage_bar;     /* the bar applied; <0: the majority (> 50%) */
    char residency[512];     /* "16/18 nodes on xnnpack, 2 on CPU" ("TFLite ops" for a
                                .tflite), or "unknown" */
    /* nothing was placed: the model itself fails on the sample gate 2 runs
     * (runs_detail says why); the counts above mean nothing then */
    bool residency_unknown;
    char verdict_text[512];  /* cg_assign_verdict's sentence */
    /* The graph the targets partition (convgate/lower.h): its preprocess
     * ("none": the file's graph), the nodes its lowering removed (main
     * graph), who removed them (cg_lowered.remover: ONNX Runtime's graph
     * optimizations, the ONNX-to-TFLite converter; static string, NULL
     * without a lowering) and "Identity x47, ..." */
    char preprocess[32];
    size_t removed_by_runtime;
    const char *remover;
    char removed_detail[256];
    char runs_detail[768];

    cg_gate_state matches;
    bool reduced_precision;
    size_t sample_count, failed_samples;
    cg_parity_report judged;  /* every output's figures and verdict over the samples */
    cg_task task;             /* as asked (the task block of the report) */
    double threshold;
    char matches_detail[768];
    char matches_short[160];  /* "output 'y' precision breakdown" */
    bool bisected;
    size_t bisect_sample;    /* index of the sample bisected */
    char *bisect_sample_label;
    /* the device class bisected (judged.device_class[0/1]; NULL: one class):
     * the one that sums in fp32 when it fails, else the one that sums in fp16 */
    const char *bisect_class;
    cg_bisect_result bisect;
    char bisect_error[CG_ERROR_MSG_MAX]; /* bisection could not run (gate 3 still fails) */

    /* What the per-node views (HTML report, Model Explorer overlays) draw:
     * gate 2's placement (NULL when gate 2 did not place the graph; it
     * borrows the model and the options' targets, which must outlive the
     * report), the reference run's time per node in ms (NULL when that
     * run failed), both indexed by the nodes of `lowered->model`, the graph
     * the targets partition (convgate/lower.h; NULL when gate 2 did not get
     * that far). Owned by the report. */
    struct cg_type_env *types;
    cg_assignment *assignment;
    double *node_ms;
    struct cg_lowered *lowered;
    /* For a .tflite: its operators (cg_tflite_op_model), which gate 2
     * places and counts as assign does ("TFLite ops") and which
     * `assignment`, `types` and `node_ms` (each operator's lowered nodes'
     * time) then index instead of `lowered->model`. Owned. */
    cg_model *tflite_ops;
    cg_gate_timings timings;
} cg_gate_report;

struct cg_cost_estimate;
/* Gate 2's bar on a placement's time estimate (NULL: unknown, which
 * fails): the targets take more than half the reference time, or at least
 * min_coverage of it (min_coverage >= 0), and the mixed latency estimate
 * (targets + CPU remainder + boundary copies) beats the CPU alone;
 * min_coverage 0 waives both (the user accepts any placement). `why` gets
 * the sentence either way; it names the bar that failed. */
CG_API bool cg_gate_runs_judge(const struct cg_cost_estimate *e, double min_coverage,
                               const char *targets, char *why, size_t cap);

/* Runs the gates on `model` (loaded from model_path). CG_OK whenever the
 * report is filled, pass or fail; another status only for errors that keep
 * a gate from being judged (no memory, bad options, an unusable input).
 * Free the report with cg_gate_report_free in every case. */
CG_API CG_NODISCARD cg_status cg_gate_run(const cg_model *model, const char *model_path,
                                          const cg_gate_options *opt, cg_gate_report *out,
                                          cg_error *err);
CG_API void cg_gate_report_free(cg_gate_report *r);

/* The report a person reads: each gate's lines, the verdict block, then the samples
 * ("(samples: 3 random sets, seed 0)") when the options described them. */
CG_API void cg_gate_report_text(FILE *f, const cg_gate_report *r);
/* The phase timings, one line each (--timings). */
CG_API void cg_gate_timings_text(FILE *f, const cg_gate_timings *t);
/* The bisect part alone (shared with `convgate bisect`). */
CG_API void cg_bisect_report_text(FILE *f, const cg_bisect_result *b, const char *indent);
/* The JSON renderings are internal (src/report/report.h): public headers
 * do not expose jansson. */

#ifdef __cplusplus
}
#endif
#endif
