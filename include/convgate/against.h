/*
 * The other side of a comparison when it is not the compared model's own
 * target path: another model (a conversion of it, matched by
 * convgate/iomap.h) on the reference runtime or on a target path, or the
 * real LiteRT (convgate/runner.h) running a .tflite. For each sample fed to
 * the compared model, cg_against produces that side's outputs in the
 * compared model's names, order and layout, so the parity engine
 * (convgate/parity.h, outputs_from) and gate 3 (expected outputs) compare
 * them like any other.
 *
 *   compare SOURCE --against CONVERTED   model = SOURCE (the map's A side),
 *                                        other = CONVERTED
 *   compare MODEL.tflite --runner R      model = other = MODEL
 *   gate CONVERTED --source SOURCE       model = CONVERTED (the map's B
 *                                        side), other = SOURCE on the
 *                                        reference: gate 3's expected outputs
 */
#ifndef CONVGATE_AGAINST_H
#define CONVGATE_AGAINST_H

#include <stdbool.h>
#include <stddef.h>

#include "convgate/api.h"
#include "convgate/iomap.h"
#include "convgate/runner.h"
#include "convgate/samples.h"
#include "convgate/target.h"
#include "convgate/targetpath.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct cg_against_options {
    const cg_model *model;      /* fed by the samples; its outputs are compared */
    const cg_model *other;      /* what runs (may be model itself) */
    const cg_io_map *map;       /* model <-> other; NULL when other is model */
    bool model_is_a;            /* model is the map's A side (else its B side) */
    /* how `other` runs: with a runner, in the real LiteRT; else on the
     * target path of `targets`; else on the reference runtime */
    const cg_runner_options *runner;
    const char *other_path;     /* for messages */
    const cg_target *const *targets;
    size_t target_count;
    const cg_dim_binding *dims;
    size_t dim_count;
    const cg_random_inputs *random;
    cg_accumulate accumulate;        /* convgate/targetpath.h */
    size_t max_alloc_bytes;
} cg_against_options;

typedef struct cg_against cg_against;

/* The options and what they point to must outlive the result. */
CG_API CG_NODISCARD cg_status cg_against_init(const cg_against_options *opt, cg_against **out, cg_error *err);
/* Sample s (fed to model): run now (reference, target path) or queued
 * (runner; cg_against_finish runs the queue). Returns its index. */
CG_API CG_NODISCARD cg_status cg_against_add(cg_against *a, const cg_sample *s, size_t *index, cg_error *err);
CG_API CG_NODISCARD cg_status cg_against_finish(cg_against *a, cg_error *err);
/* Sample i's outputs in model's graph-output order, names and layout; each
 * index can be taken once (free with cg_runtime_free_outputs). */
CG_API CG_NODISCARD cg_status cg_against_outputs(cg_against *a, size_t i, cg_named_value **outputs, size_t *count,
                             cg_error *err);
/* Every sample of src (opened on model) through the other side, its
 * outputs written into dir in src's layout (cg_sample_source_read_outputs
 * reads them back). */
CG_API CG_NODISCARD cg_status cg_against_write(cg_against *a, cg_sample_source *src, const char *dir, cg_error *err);
/* Every sample of set through the other side, its outputs becoming the
 * sample's expected outputs (gate --source: gate 3 compares against them).
 * A sample that already has expected outputs is refused (CG_USAGE). */
CG_API CG_NODISCARD cg_status cg_against_expect(cg_against *a, cg_sample_set *set, cg_error *err);
/* The runner's report (NULL without a runner or before it ran). */
CG_API const cg_runner_report *cg_against_runner_report(const cg_against *a);
/* Some target path built computes in reduced precision. */
CG_API bool cg_against_reduced(const cg_against *a);
CG_API void cg_against_free(cg_against *a);

/* --- verdicts against the compared model's noise floor ------------------------------- */

#include "convgate/noise.h"

/* One output of the compared model judged against its noise floor
 * (convgate/noise.h): the other side's error against the model's float64
 * reference, as a multiple of the model's own float32 noise floor. */
typedef struct cg_against_verdict {
    const char *output;      /* the model's output (borrowed) */
    bool judged;             /* else `why` says why not */
    cg_judgement j;
    char why[160];
} cg_against_verdict;

/* Judges the outputs read from dir (src's layout, as cg_against_write left
 * them) against model's float64 reference and noise floors on the same
 * samples. Only outputs computed in float32 are judged (precision fp32);
 * a reduced-precision side has no float32 rerun to tell its cause, so its
 * outputs are left unjudged with the reason. verdicts: malloc'd, one per
 * model output. */
CG_API CG_NODISCARD cg_status cg_against_judge(const cg_model *model, cg_sample_source *src, const char *dir,
                           bool reduced, cg_against_verdict **verdicts, size_t *count,
                           cg_error *err);

/* "CONVERTED on the reference runtime", "CONVERTED on litert-gpu (target
 * path)", "litert-node (LiteRT.js, measured)": what produced the outputs. */
CG_API void cg_against_describe(const cg_against_options *opt, char *buf, size_t cap);

#ifdef __cplusplus
}
#endif
#endif
