/*
 * Noise floors and verdicts: a target's numbers judged against the noise a
 * correct implementation must show on this model and these inputs.
 *
 * Per graph output, against the float64 reference (the reference runtime
 * with cg_runtime_options.float64, every kernel in double):
 *   fp32 noise floor    |fp32 reference - fp64 reference|: what float32
 *                       rounding alone does to this output;
 *   fp16 storage floor  |fp16 storage - fp64 reference|, "fp16 storage"
 *                       being the fp64 kernels with every stored float value
 *                       rounded to fp16: what half-precision storage alone
 *                       does (no fp16 arithmetic).
 * A target's error is |target - fp64 reference|, judged against the floor
 * of its precision as a ratio ("2.3x the fp32 noise floor") with the
 * documented multiples of docs/noise-floor.md, which also has the
 * measurements they come from.
 *
 * Discontinuous ops (comparisons, ArgMax, TopK, NonMaxSuppression, Round,
 * quantizers, ...) turn a 1-ulp difference into a flipped decision. The
 * values downstream of them are found by graph analysis (cg_decision_map)
 * and judged by how many decisions flipped and by what margin
 * (cg_decision_flips), not by elementwise error.
 *
 * Every statistic keeps inf and NaN: a non-finite value where the
 * reference is finite makes the error +inf (cg_metrics' rule).
 */
#ifndef CONVGATE_NOISE_H
#define CONVGATE_NOISE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "convgate/compare.h"
#include "convgate/model.h"
#include "convgate/runtime.h"
#include "convgate/samples.h"
#include "convgate/status.h"
#include "convgate/target.h"
#include "convgate/targetpath.h"
#include "convgate/tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

/* --- precisions and multiples ---------------------------------------------- */

/* cg_precision (convgate/target.h): what a target stores floats in. */
CG_API const char *cg_precision_name(cg_precision p); /* "fp32", "fp16" */

/* Unit roundoff of a precision (2^-24, 2^-11): the smallest floor an output
 * of scale S is given is u * S, so an output that happens to be exact in
 * float32 does not make every other result "infinitely" worse. */
CG_API double cg_precision_unit(cg_precision p);

/* How far above its floor a target may be (docs/noise-floor.md has the
 * measurements behind the defaults). */
typedef struct cg_noise_multiples {
    double k_fp32;       /* matches (fp32 noise): error <= k_fp32 x fp32 floor */
    double k_fp16;       /* matches at fp16 precision: error <= k_fp16 x fp16 storage floor */
    /* ... and the error stays below this fraction of the output's scale:
     * where fp16 storage alone moves an output by more (the LayerNorm of
     * values ~300, logits below fp16's smallest number), being as good as
     * the fp16 floor is not good enough: a precision breakdown */
    double fp16_max_rel;
} cg_noise_multiples;

CG_API void cg_noise_multiples_default(cg_noise_multiples *k);

/* --- error statistics -------------------------------------------------------- */

/* Distribution of |got - ref|: 4 bins per octave from 2^-64 (bin 0 holds
 * everything below, the last bin everything from 2^64), exact zeros and
 * non-finite failures apart. Mergeable over samples. */
#define CG_NOISE_DIST_BINS 512
typedef struct cg_noise_dist {
    uint64_t count;        /* elements */
    uint64_t zero;         /* |d| == 0 */
    uint64_t nonfinite;    /* a non-finite pair that does not match (inf error) */
    uint64_t bins[CG_NOISE_DIST_BINS];
} cg_noise_dist;

/* One output's error against the fp64 reference, merged over samples:
 * compare.h's metrics (with atol = rtol = 0 and nan_equal, so mismatches
 * counts the elements that differ at all) and the distribution of |d|. */
typedef struct cg_noise_stats {
    cg_metrics m;
    cg_noise_dist dist;
    double ref_max;        /* largest |ref| over finite values: the output's scale */
    /* smallest and largest finite ref value (lo > hi: none seen); from a
     * recorded floor, -scale and scale (only a zero scale is then known to
     * be constant) */
    double ref_lo, ref_hi;
} cg_noise_stats;

CG_API void cg_noise_stats_init(cg_noise_stats *s);
/* Folds |got - ref| of one tensor pair (any real dtypes, read as double;
 * same shape) into s. */
CG_API CG_NODISCARD cg_status cg_noise_stats_add(cg_noise_stats *s, const cg_tensor *ref,
                                                 const cg_tensor *got, cg_error *err);
CG_API void cg_noise_stats_merge(cg_noise_stats *a, const cg_noise_stats *b);
/* The q-quantile (q in [0, 1]) of |d|: an upper bound within one bin
 * (19%); 0 when the quantile falls on exact zeros, +inf on failures. */
CG_API double cg_noise_quantile(const cg_noise_stats *s, double q);
/* The output's scale: the largest magnitude of the reference's finite
 * values (not the RMS: a probability map that is mostly 0 has a tiny RMS
 * and a scale of about 1). */
CG_API double cg_noise_scale(const cg_noise_stats *s);
/* max |d| / scale (0 for an exact match, +inf for a zero scale with an error). */
CG_API double cg_noise_rel(const cg_noise_stats *s);
/* Whether the reference held one value on every element it was compared
 * on, over every sample merged into s, with *value that value: all zero,
 * or one value over at least two elements (a single nonzero scalar is not
 * taken as constant). Such an output judges nothing: any target that
 * returns the constant matches it, whatever it computed upstream. */
CG_API bool cg_noise_constant(const cg_noise_stats *s, double *value);

/* --- decisions (graph analysis) -------------------------------------------------- */

/* The discontinuous ops: their outputs change by whole steps for an
 * arbitrarily small change of the inputs (of float inputs: the analysis
 * does not count one that reads only integers). */
CG_API bool cg_decision_op(const cg_node *node);

/* For one graph: which nodes make decisions and which values depend on one. */
typedef struct cg_decision_map {
    const cg_graph *graph;
    bool *is_decision;     /* per node (graph->nodes order): a decision on floats */
    bool *downstream;      /* per node: some input (or captured outer value)
                              depends on a decision, or it is one */
    size_t decision_count;
    /* per named node output, sorted by name: its producer and whether it
     * is (downstream of) a decision (internal to src/verify/decision.c) */
    struct cg_decision_value *values;
    size_t value_count;
} cg_decision_map;

/* Marks every decision node and every node downstream of one. An op of the
 * table decides when an input is a float or of unknown type; a Cast when
 * it turns a known float into an integer or bool. Types come from `types`
 * (may be NULL), else the graph's declarations. A control-flow node whose
 * body decides makes its outputs depend on a decision. */
CG_API CG_NODISCARD cg_status cg_decision_map_build(const cg_graph *g, const cg_type_env *types,
                                                    cg_decision_map *out, cg_error *err);
CG_API void cg_decision_map_free(cg_decision_map *m);
/* Whether value `name` (a node output) is a decision or depends on one:
 * through its inputs, or a control-flow node whose body decides. */
CG_API bool cg_decision_depends(const cg_decision_map *m, const char *name);
/* The decision nodes value `name` depends on, whose flips can be counted
 * (0 when it is continuous, as TopK's values are; control-flow nodes are
 * not listed: their outputs are continuous, the decision is inside):
 * indices into graph->nodes, written into nodes[0..cap) in graph order;
 * returns the total count. */
CG_API size_t cg_decision_upstream(const cg_decision_map *m, const char *name, size_t *nodes,
                                   size_t cap);

/* Flipped decisions of one decision node, the fp64 reference's inputs and
 * output against a target's output. A flip's margin is how far the
 * reference was from the decision boundary, in the units of the decision's
 * (first) input: |a - b| for comparisons, the distance to the rounding
 * boundary for Round/Floor/Ceil/Cast and quantizers (times the scale),
 * the gap between the reference's and the target's choice for
 * ArgMax/ArgMin/TopK. A flip is noise when its margin is within k x the
 * floor of the decision's input: floor_fp32 and floor_fp16 (max |d| of that
 * input, 0 if unknown) give the two counts. */
typedef struct cg_flip_stats {
    uint64_t decisions;          /* decisions compared (output elements) */
    uint64_t flips;              /* that differ */
    uint64_t noise_fp32;         /* flips within k_fp32 x the input's fp32 floor */
    uint64_t noise_fp16;         /* flips within k_fp16 x the input's fp16 floor */
    double max_margin;           /* largest reference margin of a flip */
    double min_margin;           /* smallest (0 with no flips) */
    int64_t max_steps;           /* quantizers: largest |q_got - q_ref| */
    int64_t worst_index;         /* output element of the largest-margin flip (-1: none) */
    char node[128];              /* node of the largest-margin flip ("" none) */
    bool margin_known;           /* false: the op has no margin rule (NMS, IsNaN, ...) */
} cg_flip_stats;

CG_API void cg_flip_stats_init(cg_flip_stats *f);
/* ref_in / ref_outs: the node's inputs and outputs in the fp64 reference
 * (NULL entries for omitted ones); got_out: output `output` of the node in
 * the target. Shapes may differ (NonMaxSuppression selects a different
 * number of boxes): the elements past the shorter one are flips too. */
CG_API CG_NODISCARD cg_status cg_decision_flips(const cg_node *node, const cg_tensor *const *ref_in,
                                                size_t in_count, const cg_tensor *const *ref_outs,
                                                size_t out_count, size_t output,
                                                const cg_tensor *got_out, double floor_fp32,
                                                double floor_fp16, const cg_noise_multiples *k,
                                                cg_flip_stats *out, cg_error *err);
CG_API void cg_flip_stats_merge(cg_flip_stats *a, const cg_flip_stats *b);

/* --- runs that stop on a non-finite value ----------------------------------------- */

/* A value that holds inf or NaN: where a run produced it. */
typedef struct cg_nonfinite_site {
    char node[128];          /* the node that produced it ("" none) */
    char op[48];
    char value[128];         /* the value's name */
    int64_t index;           /* its first non-finite element */
    uint64_t count, numel;   /* its non-finite elements, of numel */
    double got;              /* the run's value there: +-inf or NaN */
    double ref;              /* the fp64 reference there (ref_known) */
    bool ref_known;          /* false: the fp64 reference was not run (a golden set) or
                                does not have the value */
} cg_nonfinite_site;

/* The values of one run that hold a non-finite element, in the order the
 * run produced them (the first CG_NONFINITE_SITES). An observer fills it
 * (cg_nonfinite_note) when `on`. */
#define CG_NONFINITE_SITES 8
typedef struct cg_nonfinite_watch {
    bool on;
    size_t count;
    cg_nonfinite_site sites[CG_NONFINITE_SITES];
} cg_nonfinite_watch;
CG_API void cg_nonfinite_note(cg_nonfinite_watch *w, const cg_node *node, const char *name,
                              const cg_value *value);

/* A run in reduced precision that stopped (a kernel refused its input)
 * after producing a non-finite value that the fp64 reference does not
 * have there: a precision breakdown, not an error (docs/gate3.md "Runs
 * that stop on inf or NaN"). */
typedef struct cg_run_stop {
    bool stopped;
    cg_nonfinite_site site;  /* the first such value */
    char message[256];       /* the run's error: the node that refused it */
    size_t sample;           /* the first sample it stopped on (index) */
    size_t samples;          /* how many samples it stopped on */
} cg_run_stop;
/* One line: "fp16 overflow in Cast 'acc_cast' ('acc_f' [0] is inf where the
 * fp64 reference is 459000; fp16 holds at most 65504), and the run stopped:
 * node 'y_quant' (DynamicQuantizeLinear): input holds ..." */
CG_API void cg_run_stop_describe(const cg_run_stop *s, char *buf, size_t cap);
/* The first site of w whose value the fp64 reference holds finite there
 * (or whose reference is unknown); false when every site's non-finite
 * element is non-finite in the fp64 reference too. */
CG_API bool cg_nonfinite_first_new(const cg_nonfinite_watch *w, cg_nonfinite_site *out);

/* --- floors of a model ------------------------------------------------------------ */

typedef struct cg_noise_value {
    char *name;
    bool compared;         /* numeric and produced on every run */
    cg_noise_stats fp32;   /* fp32 reference against fp64 */
    cg_noise_stats fp16;   /* fp16 storage against fp64 (empty without opt.fp16) */
    /* fp16 storage with every running sum and product of the accumulating
     * kernels rounded to fp16's 11-bit significand, exponent unbounded,
     * against fp64: the floor of a device that sums in fp16 (its rounding
     * noise without its overflow; empty without opt.fp16_sums; outputs only) */
    cg_noise_stats fp16_sums;
    bool fp16_is_sums;     /* fp16 holds the fp16-sums floor (cg_noise_output_sums) */
} cg_noise_value;

typedef struct cg_noise_output {
    cg_noise_value v;
    bool discontinuous;    /* (downstream of) a decision */
    size_t *decisions;     /* the decision nodes it depends on (graph->nodes indices) */
    size_t decision_count;
} cg_noise_output;

typedef struct cg_noise_options {
    size_t max_alloc_bytes; /* per runtime; 0: default */
    bool fp16;              /* also measure the fp16 storage floor (a third run) */
    bool fp16_sums;         /* with fp16: also the fp16-sums floor (a fourth run) */
    const cg_type_env *types; /* for the decision analysis (may be NULL) */
    bool recorded;          /* no runs: floors from cg_noise_add_recorded */
    int threads;            /* the references' kernel threads (cg_runtime_options) */
} cg_noise_options;

typedef struct cg_noise cg_noise;

/* Builds the fp64 and fp32 references (and the fp16-storage run) of model,
 * which must outlive n. With opt.recorded no runtime is built: the floors
 * are the ones a golden set recorded (cg_noise_add_recorded). */
CG_API CG_NODISCARD cg_status cg_noise_init(const cg_model *model, const cg_noise_options *opt,
                                            cg_noise **out, cg_error *err);

/* The outputs of several runs of one sample, each in graph-output order
 * (out[r] NULL: run r did not happen). For the references (cg_noise_add_
 * sample): CG_RUN_FP64, CG_RUN_FP32, CG_RUN_FP16 (fp16 storage). For a
 * target (cg_noise_target_add_sample): CG_RUN_TARGET (as placed),
 * CG_RUN_ACC32 (fp32 accumulation), CG_RUN_IN_FP32 (in fp32). */
enum { CG_RUN_FP64 = 0, CG_RUN_FP32 = 1, CG_RUN_FP16 = 2, CG_RUN_FP16_SUMS = 3 };
enum { CG_RUN_TARGET = 0, CG_RUN_ACC32 = 1, CG_RUN_IN_FP32 = 2 };
#define CG_NOISE_RUNS 4
typedef struct cg_noise_runs {
    cg_named_value *out[CG_NOISE_RUNS];
    size_t count[CG_NOISE_RUNS];
} cg_noise_runs;
CG_API void cg_noise_runs_free(cg_noise_runs *r);

/* Runs one input set on every reference and merges its floors (outputs and
 * the float inputs of decision nodes). With runs non-NULL it gets the
 * references' outputs (fp64, fp32 and, with opt.fp16, fp16 storage) to
 * judge a target on the same sample; with decisions non-NULL, *decisions
 * gets the fp64 values the decision nodes read and produced
 * (cg_noise_decision_values_free). */
typedef struct cg_noise_decision_values {
    size_t count;
    char **names;          /* value names */
    cg_value **values;     /* the fp64 reference's values */
} cg_noise_decision_values;
CG_API CG_NODISCARD cg_status cg_noise_add_sample(cg_noise *n, const cg_named_value *inputs,
                                                  size_t input_count, cg_noise_runs *runs,
                                                  cg_noise_decision_values *decisions,
                                                  cg_error *err);
/* A recorded mode's floors of one sample (a golden set's, convgate/golden.h):
 * output i's fp32 and fp16 storage floors and scale (an unknown fp16 floor
 * leaves that floor unmeasured). */
CG_API CG_NODISCARD cg_status cg_noise_add_recorded(cg_noise *n, size_t output,
                                                    const cg_output_floor *f, cg_error *err);
CG_API void cg_noise_decision_values_free(cg_noise_decision_values *d);
CG_API const cg_value *cg_noise_decision_value(const cg_noise_decision_values *d, const char *name);

/* When the fp16 storage run (the fp16 floors' reference) stopped on a
 * non-finite value the fp64 reference does not have: where, and the fp16
 * storage and fp16-sums floors are not measured (empty) from then on;
 * NULL while they are measurable. */
CG_API const cg_run_stop *cg_noise_fp16_stop(const cg_noise *n);
/* Runs the fp64 reference on one input set and fills in each site's
 * reference value (ref, ref_known). CG_USAGE with recorded floors. */
CG_API CG_NODISCARD cg_status cg_noise_probe(cg_noise *n, const cg_named_value *inputs,
                                             size_t input_count, cg_nonfinite_watch *w,
                                             cg_error *err);

/* The references' threads from their next run on (cg_runtime_set_threads;
 * results do not change): a caller whose other half has finished hands its
 * core over. Safe to call from any thread, also while a sample runs: it
 * takes effect at the next reference run. */
CG_API void cg_noise_set_threads(cg_noise *n, int threads);

CG_API size_t cg_noise_sample_count(const cg_noise *n);
CG_API size_t cg_noise_output_count(const cg_noise *n);
CG_API const cg_noise_output *cg_noise_output_get(const cg_noise *n, size_t i);
/* Floors of a value read by a decision node (NULL when not watched). */
CG_API const cg_noise_value *cg_noise_value_find(const cg_noise *n, const char *name);
CG_API const cg_decision_map *cg_noise_decisions(const cg_noise *n);
CG_API const cg_model *cg_noise_model(const cg_noise *n);
/* Whether the fp32 and fp64 references run observed: only when some
 * decision value is watched. Unobserved, they fold constant nodes at init
 * and fuse activations (fp32) as every other reference runtime does; the
 * values are the same. */
CG_API bool cg_noise_references_observed(const cg_noise *n);
CG_API void cg_noise_free(cg_noise *n);
/* o as a device class that sums in fp16 sees it: *out is o with its fp16
 * floor the fp16-sums floor (when measured; fp16_is_sums says so, and the
 * verdicts name it), borrowing o's pointers. */
CG_API void cg_noise_output_sums(const cg_noise_output *o, cg_noise_output *out);

/* --- a target against the floors ---------------------------------------------------- */

/* An observer (cg_runtime_options.observe, cg_target_path_options.observe)
 * that keeps a copy of every value the decision analysis of `noise` watches:
 * a target's side of the flip counts. user is a cg_noise_capture; the first
 * error is kept in `status`/`err`. */
typedef struct cg_noise_capture {
    const cg_noise *noise;
    cg_noise_decision_values values;
    cg_error *err;
    cg_nonfinite_watch nonfinite; /* with nonfinite.on: the run's non-finite values */
} cg_noise_capture;
CG_API CG_NODISCARD cg_status cg_noise_capture_observe(void *user, const cg_node *node,
                                                       const char *name, const cg_value *value);
/* An observe_inside (cg_target_path_options) that notes the non-finite
 * values of a run into the capture's `nonfinite` when it is on. */
CG_API CG_NODISCARD cg_status cg_noise_capture_nonfinite(void *user, const cg_node *node,
                                                         const char *name,
                                                         const cg_value *value);

/* A target's errors against the fp64 reference, merged over samples: per
 * graph output the elementwise statistics and, for discontinuous outputs,
 * the flips of the decisions upstream. */
typedef struct cg_noise_tally {
    size_t output_count;
    cg_noise_stats *errors;
    cg_flip_stats *flips;
    bool *flips_compared;   /* some decision upstream was seen on both sides */
} cg_noise_tally;

CG_API CG_NODISCARD cg_status cg_noise_tally_init(const cg_noise *n, cg_noise_tally *t,
                                                  cg_error *err);
/* One sample: ref64 from cg_noise_add_sample, got the target's outputs in
 * graph-output order; ref_dec / got_dec the decision values of both sides
 * (either NULL: flips are not counted). */
CG_API CG_NODISCARD cg_status cg_noise_tally_add(const cg_noise *n, cg_noise_tally *t,
                                                 const cg_named_value *ref64, size_t ref_count,
                                                 const cg_named_value *got, size_t got_count,
                                                 const cg_noise_decision_values *ref_dec,
                                                 const cg_noise_decision_values *got_dec,
                                                 const cg_noise_multiples *k, size_t sample,
                                                 cg_error *err);
/* One sample on which the target's run stopped (no outputs): every output's
 * error is +inf over the fp64 reference's elements. */
CG_API void cg_noise_tally_add_stopped(const cg_noise *n, cg_noise_tally *t,
                                       const cg_named_value *ref64, size_t ref_count,
                                       size_t sample);
/* The metrics of an output a stopped run did not give, against ref: every
 * element a mismatch, max_abs +inf. */
CG_API void cg_metrics_stopped(const cg_tensor *ref, cg_metrics *m);
CG_API void cg_noise_tally_free(cg_noise_tally *t);

/* --- verdicts ---------------------------------------------------------------------- */

typedef enum cg_verdict {
    CG_VERDICT_MATCH_FP32 = 0, /* matches (within fp32 noise) */
    CG_VERDICT_MATCH_FP16,     /* matches at fp16 precision */
    CG_VERDICT_PRECISION,      /* precision breakdown: inf/NaN, or error far above the
                                  floor that goes away in wider precision */
    CG_VERDICT_WRONG           /* wrong result: far above the floor in fp32 too */
} cg_verdict;

/* "matches (fp32 noise)", "matches at fp16 precision", "precision
 * breakdown", "wrong result" */
CG_API const char *cg_verdict_name(cg_verdict v);
/* True for the two matching verdicts. */
CG_API bool cg_verdict_passes(cg_verdict v);

/* What one output of a target is judged on. Errors are the target's
 * metrics against the fp64 reference, merged over the samples. */
typedef struct cg_judge_input {
    cg_precision precision;           /* what the target stores floats in */
    const cg_noise_output *floor;     /* the output's floors */
    const cg_metrics *error;          /* the target */
    /* reduced-precision targets, for the cause of an error above the floor:
     * the same target with accumulation widened to fp32, and computing
     * entirely in fp32 (NULL: not run). An fp16 target beyond its floor
     * needs at least `fp32` to be told apart from a wrong kernel. */
    const cg_metrics *acc32;
    const cg_metrics *fp32;
    /* discontinuous outputs: the flips of the decisions upstream (merged),
     * for the target and its reruns (NULL: not compared) */
    const cg_flip_stats *flips, *flips_acc32, *flips_fp32;
} cg_judge_input;

typedef struct cg_judgement {
    cg_verdict verdict;
    cg_precision against;   /* whose floor `ratio` is a multiple of */
    double error;           /* max |target - fp64| (+inf: non-finite) */
    double floor;           /* the effective floor: max(measured, unit x scale) */
    double ratio;           /* error / floor (0 when both are 0) */
    double scale;           /* largest |fp64 reference| of the output */
    bool by_flips;          /* judged by decision flips, not elementwise */
    /* the fp64 reference is one value (`constant`) on every element of
     * every sample (cg_noise_constant): the verdict stands, but it judges
     * nothing, and the reason leads with "vacuous: ..." */
    bool vacuous;
    double constant;
    char reason[512];       /* one line: "2.3x the fp32 noise floor (max |d| 6.9e-05)" */
    /* the judged run stopped on a non-finite value (cg_noise_target): it
     * gave no outputs, the error is +inf, and the reason leads with where */
    cg_run_stop stop;
} cg_judgement;

/* Whether an error is within the floor of its precision, before any
 * rerun: true with the matching verdict in *out; false with *out's error,
 * floor, ratio and reason describing how far beyond it is (the verdict
 * then needs the reruns: cg_noise_judge). Bisection asks this of every
 * tensor. */
CG_API bool cg_noise_within(const cg_noise_value *floor, cg_precision precision,
                            const cg_metrics *error, const cg_noise_multiples *k,
                            cg_judgement *out);

/* The largest difference that is noise on this value for a target of
 * `precision` (k NULL: the defaults): k_fp32 x its fp32 floor, and for
 * fp16 at least k_fp16 x its fp16 storage floor, each floor at least one
 * unit of its precision at the value's scale. A decision whose margin is
 * within it may flip on a correct target. */
CG_API double cg_noise_limit(const cg_noise_value *floor, cg_precision precision,
                             const cg_noise_multiples *k);

/* The verdict for one output. CG_USAGE when an fp16 target above its
 * floor comes without the fp32 rerun that tells the cause. */
CG_API CG_NODISCARD cg_status cg_noise_judge(const cg_judge_input *in, const cg_noise_multiples *k,
                                             cg_judgement *out, cg_error *err);
/* cg_noise_judge on output i of tallies: the target's, and (NULL: not run)
 * its reruns with fp32 accumulation and in fp32; flips when the output is
 * discontinuous and they were compared. */
CG_API CG_NODISCARD cg_status cg_noise_judge_tally(const cg_noise_output *o, size_t i,
                                                   cg_precision precision, const cg_noise_tally *t,
                                                   const cg_noise_tally *acc32,
                                                   const cg_noise_tally *fp32,
                                                   const cg_noise_multiples *k, cg_judgement *out,
                                                   cg_error *err);

/* --- a target on the same samples ------------------------------------------------- */

/* A target judged on the same samples (src/verify/noise_target.c): its
 * target path and, when the path computes in fp16, the reruns with fp32
 * accumulation and in fp32 that tell precision from a wrong kernel; the
 * paths are (re)built for each sample's dims, their observers keep the
 * decision values. targets must outlive t. */
typedef struct cg_noise_target cg_noise_target;
/* base: the targets and how to place and run them (targets, random,
 * accumulate, max_alloc_bytes; dims come per sample, observe is the
 * decision capture); borrowed, with its arrays, for t's life. */
CG_API CG_NODISCARD cg_status cg_noise_target_init(cg_noise *n,
                                                   const cg_target_path_options *base,
                                                   cg_noise_target **out, cg_error *err);
/* One sample: its inputs and dims (cg_sample_dims), and what
 * cg_noise_add_sample gave for it (ref64: its fp64 outputs). With outs
 * non-NULL it gets every path's outputs (CG_RUN_TARGET, and for an fp16
 * path CG_RUN_ACC32 and CG_RUN_IN_FP32; cg_noise_runs_free). */
CG_API CG_NODISCARD cg_status cg_noise_target_add_sample(cg_noise_target *t,
                                                         const cg_named_value *inputs,
                                                         size_t input_count,
                                                         const cg_dim_binding *dims,
                                                         size_t dim_count,
                                                         const cg_named_value *ref64,
                                                         size_t ref_count,
                                                         const cg_noise_decision_values *ref_dec,
                                                         size_t sample, cg_noise_runs *outs,
                                                         cg_error *err);
/* The same in two steps, so the paths can run beside the reference runs
 * (they read nothing of them): run_sample runs every path on the sample
 * (building them for its dims) and keeps their outputs and decision
 * values; tally_sample tallies those against what cg_noise_add_sample gave
 * and hands the outputs to outs (may be NULL), or frees them. A run_sample
 * not followed by a tally_sample is undone by the next run_sample or by
 * cg_noise_target_free. */
CG_API CG_NODISCARD cg_status cg_noise_target_run_sample(cg_noise_target *t,
                                                         const cg_named_value *inputs,
                                                         size_t input_count,
                                                         const cg_dim_binding *dims,
                                                         size_t dim_count, cg_error *err);
CG_API CG_NODISCARD cg_status cg_noise_target_tally_sample(cg_noise_target *t,
                                                           const cg_named_value *ref64,
                                                           size_t ref_count,
                                                           const cg_noise_decision_values *ref_dec,
                                                           size_t sample, cg_noise_runs *outs,
                                                           cg_error *err);
/* The path as placed, handed over (the caller frees it; NULL before the
 * first sample); the next sample builds it again. */
CG_API cg_target_path *cg_noise_target_take_path(cg_noise_target *t);
/* What the path stores floats in (known once a sample ran). */
CG_API cg_precision cg_noise_target_precision(const cg_noise_target *t);
CG_API const cg_noise_tally *cg_noise_target_tally(const cg_noise_target *t);
/* The verdict of output `output`: against the fp16-sums floor when the
 * path sums in fp16; with two device classes (base.device_classes), the
 * worse of the two, its reason led by its class's name. */
CG_API CG_NODISCARD cg_status cg_noise_target_judge(const cg_noise_target *t, size_t output,
                                                    const cg_noise_multiples *k, cg_judgement *out,
                                                    cg_error *err);
/* The device classes judged (known once a sample ran): cls 0 the class
 * that sums in fp16 (the path as placed), 1 the class that sums in fp32
 * (its fp32-accumulation rerun); NULL when the path is judged as one. */
CG_API const char *cg_noise_target_class(const cg_noise_target *t, int cls);
/* Whether the path as placed sums in fp16 somewhere (known once a sample
 * ran): judged as one class, it is judged against the fp16-sums floor. */
CG_API bool cg_noise_target_sums16(const cg_noise_target *t);
/* One class's verdict (cls -1: the path as placed, as a single class). */
CG_API CG_NODISCARD cg_status cg_noise_target_judge_class(const cg_noise_target *t,
                                                          size_t output, int cls,
                                                          const cg_noise_multiples *k,
                                                          cg_judgement *out, cg_error *err);
/* Whether path p (CG_RUN_TARGET, CG_RUN_ACC32) stopped on a non-finite value
 * on the last sample tallied (it gave no outputs), and where it first did
 * on any sample (NULL: never). */
CG_API bool cg_noise_target_stopped_last(const cg_noise_target *t, int p);
CG_API const cg_run_stop *cg_noise_target_stop(const cg_noise_target *t, int p);
CG_API void cg_noise_target_free(cg_noise_target *t);

#ifdef __cplusplus
}
#endif
#endif
