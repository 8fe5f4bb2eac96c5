/*
 * The three gates, in order, stopping at the first that fails:
 *   1 converts   the structural checker passes (convgate/check.h);
 *   2 runs where intended   the placement on the targets (residency,
 *     partitions, boundaries, time-weighted coverage) is acceptable: no
 *     fail-policy target refuses a node, and under require_full nothing
 *     falls back to the CPU;
 *   3 matches    the target path's outputs match the reference runtime's
 *     on every sample within tolerance; on a failure, bisection names the
 *     first divergent tensor (convgate/bisect.h).
 *
 * Also here: input sample sets (a directory of input files, or seeded
 * random inputs), shared by `convgate gate` and `convgate bisect`.
 */
#ifndef CONVGATE_GATE_H
#define CONVGATE_GATE_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "convgate/bisect.h"
#include "convgate/check.h"
#include "convgate/compare.h"
#include "convgate/partition.h"
#include "convgate/runtime.h"
#include "convgate/target.h"

#ifdef __cplusplus
extern "C" {
#endif

/* --- samples ---------------------------------------------------------------- */

typedef struct cg_sample {
    char *label;             /* "image_0.npy", "test_data_set_1", "random #3" */
    cg_named_value *inputs;  /* names borrowed from the model; values owned */
    size_t input_count;
    /* golden outputs in graph-output order (NULL: compare against a fresh
     * reference run); names borrowed from the model, values owned */
    cg_named_value *expected;
    size_t expected_count;
} cg_sample;

typedef struct cg_sample_set {
    cg_sample *samples;
    size_t count;
} cg_sample_set;

/* Loads input sets from DIR, in the first layout that matches:
 *   DIR/test_data_set_N/input_K.pb   (ONNX test data: K-th graph input
 *                                     that is not an initializer)
 *   DIR/<set>/<input>.npy, DIR/<set>.npz (cg_golden_list_sets' layout)
 *   DIR/<input>_<N>.npy or .pb       (one set per N, e.g. image_0.npy)
 *   DIR/<input>.npy or .pb           (a single set)
 * Every set must feed every graph input that has no initializer. Files
 * for other names (reference outputs kept beside) are ignored. */
cg_status cg_samples_load_dir(const cg_model *model, const char *dir, size_t max_bytes,
                              cg_sample_set *out, cg_error *err);
/* count sets of seeded random inputs (cg_io_random_fill) from the declared
 * input types; symbolic dims from dims (unbound: 1). */
cg_status cg_samples_random(const cg_model *model, size_t count, uint64_t seed,
                            const cg_dim_binding *dims, size_t dim_count, size_t max_bytes,
                            cg_sample_set *out, cg_error *err);
/* The sets of a golden directory (convgate/golden.h): checked against the
 * model file (hash) and every file's hash, inputs and expected outputs
 * loaded. A stale or tampered golden set is an error, never a pass. */
cg_status cg_samples_load_golden(const cg_model *model, const char *model_path, const char *dir,
                                 size_t max_bytes, cg_sample_set *out, cg_error *err);
void cg_sample_set_free(cg_sample_set *s);
/* base's bindings, then every symbolic input dim bound from the sample's
 * tensors (a fixed-shape target path is built for those). Symbols are
 * borrowed from the model. Returns the count (at most cap). */
size_t cg_sample_dims(const cg_model *model, const cg_dim_binding *base, size_t base_count,
                      const cg_sample *s, cg_dim_binding *out, size_t cap);

/* --- gates ------------------------------------------------------------------ */

typedef enum cg_gate_state {
    CG_GATE_PASS = 0,
    CG_GATE_FAIL,
    CG_GATE_NOT_RUN  /* an earlier gate failed */
} cg_gate_state;

const char *cg_gate_state_name(cg_gate_state s); /* "PASS", "FAIL", "not run" */

typedef struct cg_gate_options {
    const cg_target *const *targets; /* priority order */
    size_t target_count;
    const cg_dim_binding *dims;
    size_t dim_count;
    bool require_full;
    bool accumulate_fp32;
    bool tol_given;          /* else cg_tolerance_default for the path's precision */
    cg_tolerance tol;
    size_t max_alloc_bytes;
    const cg_sample_set *samples; /* at least one sample */
    const char *samples_desc;     /* "2 sets from examples/tiny_cnn_inputs" (borrowed) */
} cg_gate_options;

typedef struct cg_gate_output {
    char *name;
    cg_metrics metrics;      /* merged over the samples */
} cg_gate_output;

typedef struct cg_gate_report {
    char *model;             /* the model's path (or "-") */
    char *targets;           /* "litert-gpu" or "a,b" */
    bool pass;
    char reason[512];        /* the verdict's one line */

    cg_gate_state converts;
    size_t check_errors, check_warnings;
    char converts_detail[512];

    cg_gate_state runs;
    size_t node_count, nodes_on_targets, partitions, boundaries;
    double time_coverage;    /* share of reference CPU time on targets, [0, 1]; <0 unknown */
    char residency[256];     /* "16/18 nodes on xnnpack" */
    char verdict_text[512];  /* cg_assign_verdict's sentence */
    char runs_detail[512];

    cg_gate_state matches;
    cg_tolerance tol;
    bool reduced_precision;
    size_t sample_count, failed_samples;
    cg_gate_output *outputs;
    size_t output_count;
    char matches_detail[512];
    bool bisected;
    size_t bisect_sample;    /* index of the sample bisected */
    char *bisect_sample_label;
    cg_bisect_result bisect;
    char bisect_error[CG_ERROR_MSG_MAX]; /* bisection could not run (gate 3 still fails) */
} cg_gate_report;

/* Runs the gates on `model` (loaded from model_path). CG_OK whenever the
 * report is filled, pass or fail; another status only for errors that keep
 * a gate from being judged (no memory, bad options, an unusable input).
 * Free the report with cg_gate_report_free in every case. */
cg_status cg_gate_run(const cg_model *model, const char *model_path, const cg_gate_options *opt,
                      cg_gate_report *out, cg_error *err);
void cg_gate_report_free(cg_gate_report *r);

/* The report a person reads: each gate's lines, then the verdict block. */
void cg_gate_report_text(FILE *f, const cg_gate_report *r);
json_t *cg_gate_report_json(const cg_gate_report *r);
/* The bisect part alone (shared with `convgate bisect`). */
void cg_bisect_report_text(FILE *f, const cg_bisect_result *b, const char *indent);
json_t *cg_bisect_report_json(const cg_bisect_result *b);

#ifdef __cplusplus
}
#endif
#endif
