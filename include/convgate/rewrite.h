/*
 * Rewrites: named, verified graph transformations that make a model fit a
 * target, and `convert`, which ships the result as an artifact directory.
 *
 * The catalog (src/rewrite/rewrites.def, docs/rewrites.md) holds three
 * kinds of rewrites:
 *   cleanup        applied whatever the target (constant folding, Identity
 *                  and Dropout elimination, BatchNormalization folding,
 *                  shape arithmetic once dims are fixed, dead nodes, CSE);
 *   compatibility  applied where the target refuses a node the rewrite
 *                  replaces, and kept only when the target then takes more
 *                  of the model;
 *   precision      applied for fp16 targets where the samples show a sum or
 *                  a sum of squares leaving fp16's range.
 * Each declares its numerics: exact, within fp32 noise, or changes
 * numerics (applied only when the caller opts in by name).
 *
 * Every rewrite applied is verified before it is kept: the rewritten model
 * against the original on the reference runtime over the samples; an
 * output bit-identical on every sample is exact, otherwise it is judged
 * against the original's fp32 noise floor (convgate/noise.h). A rewrite
 * that fails is not applied and its step says why; an opted-in rewrite
 * that changes numerics is kept with its measured error stated.
 */
#ifndef CONVGATE_REWRITE_H
#define CONVGATE_REWRITE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "convgate/gate.h"
#include "convgate/model.h"
#include "convgate/noise.h"
#include "convgate/parity.h"
#include "convgate/profile.h"
#include "convgate/samples.h"
#include "convgate/target.h"

#ifdef __cplusplus
extern "C" {
#endif

/* --- the catalog ------------------------------------------------------------------ */

typedef enum cg_rewrite_kind {
    CG_REWRITE_CLEANUP = 0,
    CG_REWRITE_COMPAT,
    CG_REWRITE_PRECISION
} cg_rewrite_kind;

typedef enum cg_rewrite_numerics {
    CG_NUMERICS_EXACT = 0,   /* the same values, bit for bit */
    CG_NUMERICS_FP32_NOISE,  /* other rounding: within the fp32 noise floor */
    CG_NUMERICS_CHANGES      /* an approximation: only when opted in */
} cg_rewrite_numerics;

typedef struct cg_rewrite_info {
    const char *name;        /* "gathernd-to-gather" */
    cg_rewrite_kind kind;
    cg_rewrite_numerics numerics;
    const char *summary;     /* one line */
    const char *addresses;   /* the target rule it answers, one line */
} cg_rewrite_info;

CG_API size_t cg_rewrite_count(void);
CG_API const cg_rewrite_info *cg_rewrite_at(size_t i);
/* NULL when no rewrite has that name. */
CG_API const cg_rewrite_info *cg_rewrite_find(const char *name);
CG_API const char *cg_rewrite_kind_name(cg_rewrite_kind k);         /* "cleanup", ... */
CG_API const char *cg_rewrite_numerics_name(cg_rewrite_numerics n); /* "exact", ... */

/* --- running ---------------------------------------------------------------------- */

typedef struct cg_rewrite_options {
    const cg_target *const *targets; /* priority order; at least one */
    size_t target_count;
    const cg_dim_binding *dims;      /* --dim: also what shape folding fixes */
    size_t dim_count;
    const cg_random_inputs *random;  /* the type environment's inputs */
    const cg_sample_set *samples;    /* what verification runs (at least one) */
    /* the samples are the user's inputs (--inputs): placement is typed by a
     * run on sample 0, as assign --inputs is; else on `random`, as assign */
    bool samples_fed;
    /* only these rewrites, applied wherever their precondition holds
     * (needed by the target or not); NULL: the whole catalog, as needed */
    const char *const *only;
    size_t only_count;
    /* rewrites that change numerics the caller accepts, by name */
    const char *const *opt_in;
    size_t opt_in_count;
    bool what_if;                    /* also estimate the mixed latency after each step */
    cg_accumulate accumulate;        /* on the target path (--accumulate) */
    size_t max_alloc_bytes;
} cg_rewrite_options;

typedef enum cg_rewrite_outcome {
    CG_STEP_APPLIED = 0,     /* kept */
    CG_STEP_REFUSED,         /* verification failed: not applied */
    CG_STEP_NO_GAIN,         /* verified, but the target takes no more of the model */
    CG_STEP_NOT_NEEDED,      /* matches, but the target does not need it */
    CG_STEP_NOT_OPTED_IN,    /* changes numerics and was not opted in */
    CG_STEP_NOT_APPLICABLE,  /* its precondition holds nowhere */
    CG_STEP_FAILED           /* could not be built or run (the reason says why) */
} cg_rewrite_outcome;

CG_API const char *cg_rewrite_outcome_name(cg_rewrite_outcome o); /* "applied", ... */

/* Where the model runs on the targets at one point of the loop: placed as
 * assign places it, on the graph the targets partition (their profile's
 * preprocess, convgate/lower.h), so `nodes` counts the runtime's nodes. */
typedef struct cg_rewrite_placement {
    bool placed;             /* false: the lowering, type environment or assignment failed (note) */
    size_t nodes, on_target, cpu, partitions, boundaries;
    size_t removed_by_runtime; /* source main-graph nodes the preprocess removed */
    bool init_failure;       /* a fail-policy target refuses a node */
    char residency[256];
    char verdict[512];
    double mixed_ms;         /* with what_if: the quick estimate (convgate/profile.h); <0 unknown */
    double time_coverage;    /* likewise, [0, 1]; <0 unknown */
    char note[256];
} cg_rewrite_placement;

/* One output of one step's verification. */
typedef struct cg_rewrite_check {
    const char *output;      /* borrowed from the source model */
    bool exact;              /* bit-identical to the original on every sample */
    bool judged;             /* a noise verdict was given */
    cg_judgement j;          /* against the original's fp32 noise floor */
    double max_abs;          /* max |rewritten - original fp32| */
} cg_rewrite_check;

typedef struct cg_rewrite_step {
    const cg_rewrite_info *info;
    cg_rewrite_outcome outcome;
    size_t sites;            /* places rewritten */
    size_t nodes_before, nodes_after;
    char detail[512];        /* what it did, or why not */
    bool verified;           /* checks below were computed */
    bool exact;              /* every output exact */
    cg_rewrite_check *checks;
    size_t check_count;
    /* fp16 targets, precision rewrites: the target path against the
     * reference before and after (max |d| over outputs and samples; <0 not run) */
    double target_err_before, target_err_after;
    cg_rewrite_placement after;
} cg_rewrite_step;

typedef struct cg_rewrite_result {
    cg_model *model;         /* the rewritten model (owned; a copy when nothing applied) */
    size_t applied;
    cg_rewrite_step *steps;  /* catalog order */
    size_t step_count;
    cg_rewrite_placement before, after;
    size_t source_nodes;     /* the original model's main-graph nodes */
    size_t sample_count;
    bool noise_floor;        /* verification had the fp32 noise floor (else exact only) */
    char noise_note[512];    /* why not */
} cg_rewrite_result;

/* Runs the catalog (or opt->only) over model. CG_OK whenever the result is
 * filled, rewrites applied or not; free it with cg_rewrite_result_free in
 * every case. */
CG_API CG_NODISCARD cg_status cg_rewrite_run(const cg_model *model, const cg_rewrite_options *opt,
                                             cg_rewrite_result *out, cg_error *err);
CG_API void cg_rewrite_result_free(cg_rewrite_result *r);

/* Checks the names of --only / --opt-in against the catalog (CG_USAGE
 * naming the unknown one and listing the catalog). */
CG_API CG_NODISCARD cg_status cg_rewrite_check_names(const char *const *names, size_t count,
                                                     const char *what, cg_error *err);

/* --- deployment lists -------------------------------------------------------------- */

/* The ONNX Runtime reduced-build operator config ("required operators",
 * tools/python/create_reduced_build_config.py's format: one line per
 * domain "domain;opset;Op1,Op2", ops sorted, control-flow bodies included)
 * for the model, saved as model_name. malloc'd text. */
CG_API CG_NODISCARD cg_status cg_deploy_ort_config(const cg_model *model, const char *model_name,
                                                   char **out, cg_error *err);
/* The TensorFlow Lite Micro op resolver the model needs, as C++: a
 * function registering each builtin with MicroMutableOpResolver<N>'s
 * AddXxx(); ops with no TFLM builtin are listed in a comment. *missing
 * (may be NULL) gets how many ops have none. malloc'd text. */
CG_API CG_NODISCARD cg_status cg_deploy_tflm_resolver(const cg_model *model, char **out,
                                                      size_t *missing, cg_error *err);

/* --- convert: the artifact directory ------------------------------------------------- */

#define CG_ARTIFACT_FORMAT_VERSION 1
#define CG_ARTIFACT_MANIFEST "manifest.json"

/* The commit convgate was built from ("unknown" outside a git checkout;
 * "-dirty" appended when the tree had changes). */
CG_API const char *cg_build_commit(void);

/* One file of the artifact, as the manifest lists it. */
typedef struct cg_artifact_file {
    char *path;              /* relative to the directory */
    char sha256[CG_SHA256_HEX];
    uint64_t bytes;
} cg_artifact_file;

typedef struct cg_convert_options {
    cg_rewrite_options rewrite;   /* targets, samples, dims, only, opt_in */
    const char *samples_desc;     /* "2 sets from DIR", "3 random sets, seed 0" */
    const char *const *argv;      /* the command line, recorded as given */
    size_t argc;
    /* initializers of at least this many bytes go to model.onnx.data when the
     * model's initializers total more than external_above bytes (0: never) */
    uint64_t external_above;
    bool force;                   /* write into a non-empty directory */
} cg_convert_options;

typedef struct cg_convert_result {
    char *dir;
    char *source_path, *source_name;
    char source_sha256[CG_SHA256_HEX];
    uint64_t source_bytes;
    bool source_checks;           /* the source passes the checker */
    char source_check_detail[512];
    cg_rewrite_result rewrite;
    char *result_path;            /* DIR/model.onnx */
    cg_artifact_file *files;      /* every file written, in order (the manifest last) */
    size_t file_count;
    bool external_data;           /* model.onnx.data holds the large initializers */
    /* the reference comparison's tolerance: the default, widened only to
     * cover what an opted-in numerics-changing rewrite measurably changed */
    cg_tolerance_args tol;
    char tol_justification[256];
    cg_verify_report fp32;        /* the result on the reference vs the golden set */
    cg_verify_report target;      /* the target path vs the golden set */
    char target_note[512];        /* why the target path did not run ("" when it did) */
    cg_gate_report gate;          /* the three gates on the result, golden sets as samples */
    /* the result's placement and its deterministic estimate (op work at an
     * assumed rate, not a timing: the manifest reads the same every run) */
    struct cg_lowered *lowered;   /* the graph the targets partition (convgate/lower.h) */
    cg_type_env *types;           /* of lowered->model */
    cg_assignment *assignment;    /* places lowered->model */
    bool estimated;
    cg_cost_estimate estimate;
    char estimate_note[256];
    size_t tflm_missing;          /* ops with no TFLite Micro builtin */
    char created[32];             /* what the golden set records as its time */
    const cg_convert_options *opt;
} cg_convert_result;

/* Runs check, the rewrites, the result's comparison (reference first, then
 * the target path) against a golden set of the source's outputs, and the
 * gates; writes DIR/model.onnx (and model.onnx.data), DIR/golden/ and
 * DIR/deploy/. The caller then renders README.md and manifest.json and
 * adds them with cg_convert_add_file (src/report/convert.c renders them).
 * CG_OK whenever the result is filled; free it with cg_convert_result_free. */
CG_API CG_NODISCARD cg_status cg_convert_run(const cg_model *source, const char *source_path,
                                             const char *dir, const cg_convert_options *opt,
                                             cg_convert_result *out, cg_error *err);
/* Writes DIR/path (a new file, never through a link planted there) and
 * records its hash in r->files. */
CG_API CG_NODISCARD cg_status cg_convert_add_file(cg_convert_result *r, const char *path,
                                                  const void *data, size_t size, cg_error *err);
CG_API void cg_convert_result_free(cg_convert_result *r);

/* --- verify DIR --------------------------------------------------------------------- */

typedef struct cg_artifact_report {
    char *dir;
    int64_t format_version;
    char *convgate_version, *commit;
    char *source_sha256, *result_sha256;
    size_t files_checked;
    cg_verify_options verify;     /* what ran: the caller's, with the manifest's tolerance */
    cg_model *model;              /* DIR/model.onnx (the golden report borrows its names) */
    cg_verify_report golden;      /* model.onnx on the reference vs the golden set */
} cg_artifact_report;

/* Checks an artifact directory: the manifest's format, every listed
 * file's sha256 and size, that model.onnx is the result the manifest
 * names, then the golden set against model.onnx on the reference runtime
 * (or opt's targets) with the manifest's tolerance. A missing, altered or
 * unlisted model file is CG_SECURITY naming it, never a pass; the golden
 * comparison's outcome is in out->golden.pass. */
CG_API CG_NODISCARD cg_status cg_artifact_verify(const char *dir, const cg_verify_options *opt,
                                                 cg_artifact_report *out, cg_error *err);
CG_API void cg_artifact_report_free(cg_artifact_report *r);

#ifdef __cplusplus
}
#endif
#endif
