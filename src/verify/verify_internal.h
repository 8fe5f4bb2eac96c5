/*
 * What the verification stage's files share and nobody else needs: the
 * runtime options every verifying run starts from, and the judge's
 * options as gate 3 and verify (golden sets) describe the path they judge.
 */
#ifndef CG_VERIFY_INTERNAL_H
#define CG_VERIFY_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "convgate/compare.h"
#include "convgate/noise.h"
#include "convgate/parity.h"
#include "convgate/runtime.h"
#include "convgate/tensor.h"

/* Elements the comparisons read per block (cg_tensor_get_f64_block: one
 * dtype dispatch per block, not a call per element). */
#define CG_VERIFY_BLOCK 512

/* Element i of a walk in order over a and b (n elements each): on a
 * block's first element, reads both blocks as double into ab and bb;
 * returns where element i is in them. */
static inline int64_t cg_verify_pair_at(const cg_tensor *a, const cg_tensor *b, int64_t i,
                                        int64_t n, double *ab, double *bb)
{
    int64_t k = i % CG_VERIFY_BLOCK;
    if (k == 0) {
        int64_t len = n - i < CG_VERIFY_BLOCK ? n - i : CG_VERIFY_BLOCK;
        cg_tensor_get_f64_block(a, i, len, ab);
        cg_tensor_get_f64_block(b, i, len, bb);
    }
    return k;
}

/* The runtime options of a run that verifies (a reference, a target path,
 * a bisection side, a golden set's recording): the defaults, with output
 * shapes that contradict their declaration failing (strict_output_shapes),
 * at most max_alloc_bytes per allocation (0: the default) and `threads`
 * reference threads. The caller adds its observer, precision and the rest. */
void cg_verify_runtime_options(cg_runtime_options *ro, size_t max_alloc_bytes, int threads);

/* The judge's options for outputs produced by the path gate 3 and
 * `convgate verify` describe alike: targets in priority order, dim
 * bindings, random inputs, the accumulation the user forced, the folder of outputs made elsewhere (NULL: the
 * path runs), tolerances and the allocation cap. Every other field is zero;
 * the caller sets what only it has (golden, task, threads, ...). */
void cg_parity_options_for_path(cg_parity_options *po, const cg_target *const *targets,
                                size_t target_count, const cg_dim_binding *dims,
                                size_t dim_count, const cg_random_inputs *random,
                                cg_accumulate accumulate,
                                const char *outputs_from, const cg_tolerance_args *tol,
                                size_t max_alloc_bytes);

/* What a cg_noise_target_run_sample kept for its tally (every path's
 * outputs and decision values, the runs that stopped), moved out of the
 * target so that the next sample can run before this one is tallied: the
 * judge runs the target half ahead of the references (cg_judge_ahead).
 * run_sample and detach touch only the paths and what they keep; the
 * tally touches only the tallies and the stops, so one thread may run
 * samples while another tallies detached ones. NULL: no memory (what was
 * kept stays in the target). */
typedef struct cg_noise_target_sample cg_noise_target_sample;
cg_noise_target_sample *cg_noise_target_detach(cg_noise_target *t);
/* cg_noise_target_tally_sample for a detached sample; frees c. */
cg_status cg_noise_target_tally_detached(cg_noise_target *t, cg_noise_target_sample *c,
                                         const cg_named_value *ref64, size_t ref_count,
                                         const cg_noise_decision_values *ref_dec, size_t sample,
                                         cg_noise_runs *outs, cg_error *err);
void cg_noise_target_sample_free(cg_noise_target_sample *c);

/* One sample's float64 run, kept for its other references: the outputs
 * and the values the decision nodes read and produce (watch order). With
 * cg_noise_add_fp64 on every sample first, then cg_noise_release,
 * then cg_noise_add_rest on each, the float64 and float32 references are
 * never alive together; each sample's figures and outputs are those
 * cg_noise_add_sample gives (it is the two in one). */
typedef struct cg_noise_fp64 {
    cg_named_value *out;
    size_t count;
    cg_value **watched;
    size_t watch_count;
} cg_noise_fp64;
cg_status cg_noise_add_fp64(cg_noise *n, const cg_named_value *inputs, size_t input_count,
                            cg_noise_fp64 *f, cg_error *err);
/* One sample's float32 run made ahead of its float64 run (before the
 * float64 reference exists): its outputs, and the decision inputs' values
 * in the order the run made them, for cg_noise_add_rest to compare. */
typedef struct cg_noise_fp32 {
    cg_named_value *out;
    size_t count;
    size_t *seen;       /* per value kept: its index in the watch list */
    cg_value **values;
    size_t seen_count, seen_cap;
} cg_noise_fp32;
cg_status cg_noise_add_fp32(cg_noise *n, const cg_named_value *inputs, size_t input_count,
                            cg_noise_fp32 *f, cg_error *err);
void cg_noise_fp32_free(cg_noise_fp32 *f);
/* The rest of cg_noise_add_sample for f's sample (the same inputs); takes
 * f's values (f is emptied, on failure too), and f32's where the float32
 * run was made ahead (NULL: it runs now). */
cg_status cg_noise_add_rest(cg_noise *n, const cg_named_value *inputs, size_t input_count,
                            cg_noise_fp64 *f, cg_noise_fp32 *f32, cg_noise_runs *runs,
                            cg_noise_decision_values *decisions, cg_error *err);
void cg_noise_fp64_free(cg_noise_fp64 *f);
/* Frees the float64 and/or the float32 reference runtime (a plan, packed
 * weights); each is made again when a run or a probe needs it. */
void cg_noise_release(cg_noise *n, bool fp64, bool fp32);

/* Frees the target's paths (their runtimes) once every sample has run;
 * the tallies, stops and precision stay for the samples still to tally. */
void cg_noise_target_release_paths(cg_noise_target *t);
/* The threads of the paths built from now on (cg_target_path_options). */
void cg_noise_target_set_threads(cg_noise_target *t, int threads);

/* Frees p's runtime and keeps what a path lends as `like` (its types and
 * lowered placement): a path kept only as a template for others, which
 * cg_target_path_run then refuses. */
struct cg_target_path;
void cg_target_path_drop_runtime(struct cg_target_path *p);

/* How many samples' target halves this process has run ahead of their
 * references (cg_judge_ahead; every thread): for the tests. */
size_t cg_judge_samples_ahead(void);

/* How many gates of this process started gate 3's judge beside gate 2,
 * right after its lowering (src/verify/gate.c): for the tests. */
size_t cg_gate3_early_starts(void);
/* How many times the noise floors' references changed their threads
 * between runs (cg_noise_set_threads): for tests. */
size_t cg_noise_thread_switches(void);

#endif
