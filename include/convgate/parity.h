/*
 * Parity: the reference runtime against a target path (or against outputs
 * made elsewhere, read from files) over samples, every output compared per
 * sample and merged over samples with the metrics of convgate/compare.h.
 * `convgate compare` is this plus a rendering; `convgate verify` is the
 * same against a golden set.
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
#include "convgate/progress.h"
#include "convgate/samples.h"
#include "convgate/target.h"
#include "convgate/targetpath.h"

#ifdef __cplusplus
extern "C" {
#endif

/* --- a target path that follows the samples' shapes -------------------------------- */

#define CG_PARITY_MAX_DIMS 64

/* A target path rebuilt whenever a sample binds the symbolic input dims to
 * other sizes (fixed-shape delegates compile for one shape). */
typedef struct cg_sample_path {
    const cg_model *model;
    cg_target_path_options options; /* dims: base bindings (borrowed) */
    cg_dim_binding bound[CG_PARITY_MAX_DIMS];
    size_t bound_count;
    cg_target_path *path;
    bool reduced; /* some path built so far computes in reduced precision */
} cg_sample_path;

/* Starts without a path (built on the first run); the arrays are borrowed. */
CG_API void cg_sample_path_init(cg_sample_path *sp, const cg_model *model,
                                const cg_target *const *targets, size_t target_count,
                                const cg_dim_binding *dims, size_t dim_count,
                                const cg_random_inputs *random, bool accumulate_fp32,
                                size_t max_alloc_bytes);
/* The path for sample s, (re)built when its dims differ from the last. */
CG_API CG_NODISCARD cg_status cg_sample_path_get(cg_sample_path *sp, const cg_sample *s,
                                                 cg_target_path **out, cg_error *err);
CG_API void cg_sample_path_free(cg_sample_path *sp);

/* --- the comparison ------------------------------------------------------------------ */

/* One output of one sample. */
typedef struct cg_parity_sample {
    bool pass;
    uint64_t mismatches;
    double max_abs, max_rel, cosine;
    bool bit_identical;
} cg_parity_sample;

typedef struct cg_parity_output {
    const char *name;           /* borrowed from the model */
    cg_output_tolerance tol;
    cg_metrics merged;          /* worst_sample indexes the report's samples */
    int worst_rank;             /* shape of the worst element's tensor (-1: none) */
    int64_t worst_dims[CG_MAX_RANK];
    cg_dtype dtype;
    cg_parity_sample *samples;  /* one per sample */
    size_t failing_count;
    cg_task_metrics task;
    /* reduced precision, a float output, and every sample bit-identical to
     * the fp32 reference: it probably did not run there */
    bool fallback_suspect;
} cg_parity_output;

typedef struct cg_parity_options {
    const cg_target *const *targets; /* priority order */
    size_t target_count;
    const cg_dim_binding *dims;
    size_t dim_count;
    const cg_random_inputs *random;  /* the target path's placement run */
    int accumulate;                  /* -1: as the profiles say; 0 fp16; 1 fp32 */
    /* read the target's outputs from this folder (samples.h's layout)
     * instead of running the target path */
    const char *outputs_from;
    cg_tolerance_args tol;           /* cg_tolerances_resolve */
    cg_task task;
    double threshold;                /* segment */
    size_t max_alloc_bytes;
    /* keep the last sample's target path in the report (its placement is
     * what the per-node views draw) */
    bool keep_path;
    cg_progress progress;            /* "compare", samples */
} cg_parity_options;

typedef struct cg_parity_report {
    bool pass;
    bool reduced;                    /* the target computes in reduced precision */
    size_t sample_count;
    char **sample_names;
    cg_parity_output *outputs;       /* graph-output order */
    size_t output_count;
    size_t failed_outputs;
    cg_target_path *path;            /* with keep_path: the last path run (owned) */
} cg_parity_report;

/* Runs every sample of src through the reference and the target (or reads
 * the target's outputs) and fills out. CG_OK whenever the report is filled,
 * pass or fail. Free with cg_parity_report_free in every case. */
CG_API CG_NODISCARD cg_status cg_parity_run(const cg_model *model, const cg_parity_options *opt,
                                            cg_sample_source *src, cg_parity_report *out,
                                            cg_error *err);
CG_API void cg_parity_report_free(cg_parity_report *r);

/* --- against a golden set ------------------------------------------------------------ */

typedef struct cg_verify_set {
    char *name;
    bool pass;
    cg_metrics *metrics;             /* one per output */
} cg_verify_set;

typedef struct cg_verify_options {
    /* what produces the outputs: the reference runtime (no targets, no
     * outputs_from), the target path, or files made elsewhere */
    const cg_target *const *targets;
    size_t target_count;
    const cg_dim_binding *dims;
    size_t dim_count;
    const cg_random_inputs *random;
    bool accumulate_fp32;
    const char *outputs_from;        /* OUT/SET/NAME.npy or OUT/SET.npz */
    cg_tolerance_args tol;           /* cg_tolerances_resolve */
    size_t max_alloc_bytes;
} cg_verify_options;

typedef struct cg_verify_report {
    bool pass;
    bool reduced;
    bool silent_fallback;            /* reduced, and every output bit-identical to fp32 */
    char model_sha256[CG_SHA256_HEX];
    char *golden_version, *golden_created;
    size_t compared, failed;
    cg_verify_set *sets;
    size_t set_count;
    const char **output_names;       /* borrowed from the model */
    cg_output_tolerance *tols;       /* one per output */
    cg_metrics *merged;              /* one per output, over the sets */
    size_t output_count;
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
