/*
 * One sample, assembled and run as `convgate run` and the bindings' run do:
 * its inputs from a folder's sample, NAME=FILE feeds over them and random
 * values for the rest (cg_sample_assemble), then the model on the one
 * runner the options choose (cg_sample_runner): the real LiteRT when a
 * runner is given, else the target path of the targets, typed and placed on
 * the sample's inputs, else the reference runtime.
 */
#ifndef CONVGATE_SAMPLERUN_H
#define CONVGATE_SAMPLERUN_H

#include <stdbool.h>
#include <stddef.h>

#include "convgate/api.h"
#include "convgate/model.h"
#include "convgate/runner.h"
#include "convgate/runtime.h"
#include "convgate/samples.h"
#include "convgate/status.h"
#include "convgate/target.h"
#include "convgate/targetpath.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Where a sample's inputs come from, in this order: the folder's sample
 * `which` (cg_sample_source_find: NULL or a name or an index), then each
 * NAME=FILE (cg_sample_feed_spec, replacing the folder's), then, when
 * `random`, random values for the inputs still missing (the policy of
 * convgate/samples.h, sample 0 of `rnd` at `dims`). */
typedef struct cg_sample_spec {
    const char *dir;                 /* NULL: start empty */
    const char *which;
    const char *const *feeds;
    size_t feed_count;
    bool random;
    const cg_random_inputs *rnd;     /* NULL: the policy's defaults */
    const cg_dim_binding *dims;
    size_t dim_count;
    size_t max_alloc_bytes;          /* each file and each random tensor (0: no cap) */
} cg_sample_spec;

/* *out (cleared first; cg_sample_clear frees it) holds what the spec
 * gives; inputs may still be missing (cg_sample_check_complete says which). */
CG_API CG_NODISCARD cg_status cg_sample_assemble(const cg_model *model, const cg_sample_spec *spec,
                                                 cg_sample *out, cg_error *err);

typedef enum cg_sample_runner_kind {
    CG_SAMPLE_RUNNER_REFERENCE = 0,  /* the reference runtime */
    CG_SAMPLE_RUNNER_TARGETS,        /* the target path */
    CG_SAMPLE_RUNNER_LITERT,         /* the real LiteRT (runner->kind) */
} cg_sample_runner_kind;

typedef struct cg_sample_runner_options {
    /* LiteRT when runner && runner->kind; model_path is the .tflite it loads */
    const cg_runner_options *runner;
    const char *model_path;
    /* else the target path of these (priority order) when target_count */
    const cg_target *const *targets;
    size_t target_count;
    const cg_dim_binding *dims;      /* --dim; the path's come from these and the sample's */
    size_t dim_count;
    const cg_random_inputs *random;  /* the path's placement run (NULL: defaults) */
    cg_accumulate accumulate;
    /* the reference runtime's and the path's */
    bool float64;                    /* reference runtime only */
    int threads;
    cg_simd simd;                    /* reference runtime only */
    size_t max_alloc_bytes;          /* 0: runtime default */
    cg_status (*observe)(void *user, const cg_node *node, const char *name,
                         const cg_value *value);
    void *observe_user;
} cg_sample_runner_options;

/* The runner the options choose. */
CG_API cg_sample_runner_kind cg_sample_runner_choose(const cg_sample_runner_options *opt);

typedef struct cg_sample_runner cg_sample_runner;

/* Builds what runs sample s (borrowed for init only: the target path is
 * typed and placed on its inputs). The options and what they point to must
 * outlive the runner. */
CG_API CG_NODISCARD cg_status cg_sample_runner_init(const cg_model *model,
                                                    const cg_sample_runner_options *opt,
                                                    const cg_sample *s, cg_sample_runner **out,
                                                    cg_error *err);
/* One run of s; the outputs are the caller's (cg_runtime_free_outputs).
 * LiteRT runs once per runner (a second run is CG_USAGE). */
CG_API CG_NODISCARD cg_status cg_sample_runner_run(cg_sample_runner *r, const cg_sample *s,
                                                   cg_named_value **outputs, size_t *count,
                                                   cg_error *err);
CG_API cg_sample_runner_kind cg_sample_runner_kind_of(const cg_sample_runner *r);
/* The target path (NULL unless CG_SAMPLE_RUNNER_TARGETS). */
CG_API const cg_target_path *cg_sample_runner_path(const cg_sample_runner *r);
/* The reference runtime's warnings (cg_runtime_warnings; NULL otherwise). */
CG_API const char *cg_sample_runner_warnings(const cg_sample_runner *r);
/* LiteRT's report after its run (NULL otherwise). */
CG_API const cg_runner_report *cg_sample_runner_report(const cg_sample_runner *r);
/* The reference runner's memory plan is made (cg_runtime_memory_planned):
 * before the first run, it was made at set-up. False for the others. */
CG_API bool cg_sample_runner_planned(const cg_sample_runner *r);
CG_API void cg_sample_runner_free(cg_sample_runner *r);

#ifdef __cplusplus
}
#endif
#endif
