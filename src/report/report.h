/*
 * The report layer: every text and JSON rendering of what the library
 * computes. The library computes, src/report renders, cli/ parses arguments
 * and calls both. JSON goes through report/json.h (one number and string
 * encoder); the forms are documented in docs/json.md. Text renderers that
 * are part of the public API are declared in their concept's header
 * (gate.h, assign.h, inspect.h); this header holds the ones the CLI shares
 * and every JSON renderer (public headers do not expose jansson).
 * Internal to libconvgate and the CLI.
 */
#ifndef CG_REPORT_REPORT_H
#define CG_REPORT_REPORT_H

#include <jansson.h>
#include <stdint.h>
#include <stdio.h>

#include "convgate/assign.h"
#include "convgate/check.h"
#include "convgate/compare.h"
#include "convgate/cost.h"
#include "convgate/gate.h"
#include "convgate/golden.h"
#include "convgate/inspect.h"
#include "convgate/lower.h"
#include "convgate/noise.h"
#include "convgate/profile.h"
#include "convgate/runtime.h"
#include "convgate/target.h"
#include "report/json.h"

/* --- the public reports as JSON (new references; NULL when out of memory) ---------- */

/* The placement report (report/assign.c; the text one is convgate/assign.h's). */
json_t *cg_assign_report_json(const cg_placement *p);
/* assign's what-if (report/whatif.c): the ops assumed supported (the
 * report's first line; nothing when n is 0), the ranking of refused ops
 * (cg_what_if_rank; nothing when there is none; `unit`: "nodes", "TFLite
 * ops"), and both as root's "what_if" and "assumed_supported" (false when
 * out of memory). */
void cg_what_if_assumed_text(FILE *f, const char *const *assumed, size_t n);
void cg_what_if_text(FILE *f, const cg_what_if_gain *g, size_t n, size_t skipped,
                     const char *unit);
bool cg_what_if_json(json_t *root, const cg_what_if_gain *g, size_t n,
                     const char *const *assumed, size_t assumed_count);
/* The gate report and its bisect part (report/gate.c, report/bisect.c); the
 * samples' description is its "samples_source". */
json_t *cg_gate_report_json(const cg_gate_report *r);
json_t *cg_bisect_report_json(const cg_bisect_result *b);
/* What convgate bisect --json, and the binding's bisect, say around the
 * result, all borrowed: the model, the candidate model (NULL: the target
 * path), the sample, the fixed tolerance (NULL: judged by the noise
 * floors) and where it came from, the targets (none: null). */
typedef struct cg_bisect_view {
    const char *model;
    const char *candidate;
    const char *sample;
    const cg_tolerance *tol;
    const char *tol_source;
    const cg_target *const *targets;
    size_t target_count;
} cg_bisect_view;
/* cg_bisect_report_json with the view's keys added. */
json_t *cg_report_bisect_json(const cg_bisect_result *b, const cg_bisect_view *v);

/* --- a lowering (convgate/lower.h; report/lower.c) ---------------------------------- */

/* The lowering as a person reads it: node counts before and after, the
 * removed nodes by op and transformation, added nodes, notes. */
void cg_lowered_report_text(FILE *f, const cg_lowered *l);
/* The same as JSON, with both graphs' node inventories (main graph and all
 * graphs, op histograms keyed "domain:Op" or "Op"). */
json_t *cg_lowered_report_json(const cg_lowered *l);

/* --- metrics: the one metrics object (report/metrics.c) ----------------------------- */

/* Flat index -> "[i,j,k]" for a tensor of the given shape ("[index]" when
 * the shape is unknown or the index out of range). */
void cg_report_position(int64_t index, int rank, const int64_t *dims, char *buf, size_t cap);

/* The metric lines of m (errors, NaN/Inf, histogram, worst element), each
 * starting with indent. `sample` names the sample the worst element came
 * from (NULL: omitted); rank/dims give its position. */
void cg_report_metrics_text(FILE *f, const char *indent, const cg_metrics *m, const char *sample,
                            int rank, const int64_t *dims);
/* The same in one line (no newline): max_abs, max_rel, mean_abs, cosine,
 * mismatches, NaN and Inf counts, a shape or dtype mismatch. */
void cg_report_metrics_line(FILE *f, const cg_metrics *m);

/* Sets the metric fields of m on obj: pass, count, mismatches, max_abs,
 * mean_abs, max_rel, rmse, nmse, cosine, pearson, max_ulp, nan_ref,
 * nan_target, inf_ref, inf_target, bit_identical, shape_mismatch,
 * dtype_mismatch, hist ({"edges", "counts"}), worst ({index, position, ref,
 * target, sample} or null). 0, or -1 when out of memory. */
int cg_report_metrics_json(json_t *obj, const cg_metrics *m, const char *sample, int rank,
                           const int64_t *dims);
/* {atol, rtol, nan_equal, source, justification}; source may be NULL. */
json_t *cg_report_tolerance_json(const cg_tolerance *tol, const char *source);
/* One compared output: {name, tolerance, <the metric fields>}. */
json_t *cg_report_output_json(const char *name, const cg_metrics *m, const cg_tolerance *tol,
                              const char *tol_source, const char *sample, int rank,
                              const int64_t *dims);

/* --- noise floors and verdicts (report/noise.c) ------------------------------------------ */

/* One side judged against the floors: a target (path and reruns), or
 * outputs made elsewhere, tallied, computed in `precision`. */
typedef struct cg_noise_side {
    const char *name;
    cg_precision precision;
    const cg_noise_target *target;
    const cg_noise_tally *tally;
} cg_noise_side;

typedef struct cg_noise_view {
    const char *model;
    const cg_noise *noise;
    bool fp16;                    /* the fp16 storage floor was measured */
    const cg_noise_side *sides;
    size_t side_count;
    size_t samples;
} cg_noise_view;

/* Every output's floors and each side's verdict. True when every judged
 * output matches; a verdict that cannot be given sets err (first one) and
 * counts as not matching. The JSON: {model, samples, outputs: [{name,
 * compared, discontinuous, scale, fp32, fp16, judged: [{verdict, passes,
 * against, error, floor, ratio, scale, by_flips, vacuous, constant, reason, side, precision,
 * error_stats, flips}]}]}; NULL when out of memory. */
bool cg_report_noise_text(FILE *f, const cg_noise_view *v, cg_error *err);
json_t *cg_report_noise_json(const cg_noise_view *v, bool *pass, cg_error *err);
/* {verdict, passes, against, error, floor, ratio, scale, by_flips, vacuous, constant
 * (the value of a vacuous output, else null), reason} */
json_t *cg_report_judgement_json(const cg_judgement *j);
/* Where a run stopped on a non-finite value, or null (s NULL or not stopped). */
json_t *cg_report_run_stop_json(const cg_run_stop *s);
/* A floor's or an error's statistics: {count, differing, nonfinite,
 * max_abs, mean_abs, rel, p50, p90, p99}. */
json_t *cg_report_noise_stats_json(const cg_noise_stats *s);
/* {decisions, flips, noise_fp32, noise_fp16, max_margin, min_margin,
 * max_steps, node, margin_known} */
json_t *cg_report_flips_json(const cg_flip_stats *f);

/* --- placement settings (report/assign.c) ------------------------------------------------ */

/* One crossing of the boundary ledger: {tensor, from, to, from_target,
 * to_target, bytes, dtype, shape, layout_conversion, dtype_conversion}. */
json_t *cg_report_boundary_json(const cg_assignment *a, const cg_boundary *b);

/* One shape setting of `assign --dims`: its bindings and placement. */
typedef struct cg_assign_setting {
    const char *label;
    const cg_dim_binding *dims;
    size_t dim_count;
    const cg_type_env *types;      /* NULL when the reference run failed */
    const cg_placement *placement;
} cg_assign_setting;

/* The sizes the dynamic input dims took (convgate/samples.h), as gate and
 * assign state them: [{input, axis, symbol, value, source}]. */
json_t *cg_report_dims_json(const cg_dim_use *u, size_t n);

/* assign's report where nothing could be placed: the model itself fails on
 * `inputs` ("sample '0'", "random inputs") at shape setting `setting` in
 * the reference runtime, for reason `why`: the residency is unknown. */
void cg_report_assign_unknown_text(FILE *f, const char *inputs, const char *setting,
                                   const char *why);
json_t *cg_report_assign_unknown_json(const char *inputs, const char *setting, const char *why);

/* Each setting's residency and the nodes that change owner with shape. */
void cg_report_settings_text(FILE *f, const cg_assign_setting *s, size_t count);
/* The same as root's "shape_settings" and "owner_changes". */
bool cg_report_settings_json(json_t *root, const cg_assign_setting *s, size_t count);

/* --- the per-node view (report/graph.c, docs/html-report.md) ------------------------------- */

#include "convgate/bisect.h"

typedef struct cg_graph_view_output {
    const char *name;
    const cg_metrics *metrics;
} cg_graph_view_output;

/* What the HTML report and the Model Explorer overlays draw, all borrowed. */
typedef struct cg_graph_view {
    const cg_model *model;            /* the file's model: the nodes drawn */
    const cg_assignment *assignment;  /* NULL: not placed */
    const double *node_ms;            /* reference time per node, or NULL */
    const cg_bisect_result *bisect;   /* the error at every watched tensor, or NULL */
    /* compared graph outputs (merged over the samples) */
    const struct cg_graph_view_output *outputs;
    size_t output_count;
    const cg_target *const *targets;  /* whose sources and not-modelled lists to show */
    size_t target_count;
    /* The graph the targets partition, when a lowering made one (NULL: the
     * model itself): assignment and node_ms then index its nodes, and the
     * view maps them back to the file's (lowered->source) through the
     * lowering's origin record. */
    const cg_lowered *lowered;
    /* compared graph outputs as a judge reported them (compare, gate 3):
     * each output's metrics merged over the samples; NULL: none */
    const struct cg_parity_report *judged;
} cg_graph_view;

/* {graph, placed, timed, owner_colours: {owner: "#rrggbb"}, lowering,
 * nodes_partitioned, removed_by_runtime, inputs, outputs,
 * nodes: [{name, named, op, domain, owner, partition, ms, inputs, outputs,
 * error, reason, rule, refused_by, (lowered:) removed_by, runtime_node,
 * runs_on}],
 * partitions: [{id, target, nodes}], boundaries, tensors: [error], targets}
 * where an error is {tensor, source, pass, max_abs, max_rel, mean_abs,
 * cosine, mismatches, count}. NULL when out of memory. */
json_t *cg_report_graph_json(const cg_graph_view *v);

/* The HTML report (report/html.c): one self-contained page drawn from the
 * command's --json envelope and its graph view (may be NULL); title is the
 * page's title. CG_OK, or CG_NOMEM / CG_IO. */
cg_status cg_report_html_write(FILE *f, const char *title, const json_t *envelope,
                               const json_t *graph, cg_error *err);

/* Model Explorer node data (report/model_explorer.c, docs/html-report.md):
 * from a graph view, the files DIR/convgate_owner.json (the owner of each
 * node), DIR/convgate_reference_ms.json (reference time per node) and
 * DIR/convgate_max_abs_error.json (the error measured at each node's
 * outputs), each written only when the view has that data. DIR is made if
 * missing. *written (may be NULL) gets the number of files. */
cg_status cg_report_model_explorer_write(const char *dir, const json_t *graph, size_t *written,
                                         cg_error *err);

/* --- run (report/run.c) ---------------------------------------------------------------- */

/* Each output's dtype, shape, summary and file (paths[i] may be NULL). */
void cg_report_run_outputs_text(FILE *f, const cg_named_value *outs, size_t n,
                                char *const *paths);
json_t *cg_report_run_outputs_json(const cg_named_value *outs, size_t n, char *const *paths);

/* A whole run: its outputs, the target path it ran (targets NULL: the
 * reference) and its timing (repeat warm runs, sorted, after the first). */
typedef struct cg_run_view {
    const cg_named_value *outputs;
    size_t output_count;
    char *const *paths;      /* each output's file, or NULL */
    const char *targets;     /* "a,b", NULL for the reference runtime */
    const char *residency;
    size_t partitions;
    bool reduced_precision;
    double first_ms, median_ms;
    const double *warm_ms;   /* repeat values, ascending */
    size_t repeat;
    double load_ms, init_ms; /* model load; runtime (or target path) set-up */
    double cpu_median_ms;    /* process CPU time per warm run, median */
    int threads;             /* the reference kernels' threads */
    bool cold;               /* the caches were evicted before each warm run (--cold) */
    bool planned_at_setup;   /* the memory plan existed before the first run */
} cg_run_view;

void cg_report_run_text(FILE *f, const cg_run_view *v);
json_t *cg_report_run_json(const cg_run_view *v);

#include "convgate/targetpath.h"

/* The target fields of v from the path a run took: tp NULL is the
 * reference runtime (no targets); else `label`, the assignment's residency
 * written into residency[cap], its partitions and precision. */
void cg_run_view_set_path(cg_run_view *v, const cg_target_path *tp, const char *label,
                          char *residency, size_t cap);

/* --- parity (report/parity.c) ------------------------------------------------------------ */

#include "convgate/parity.h"

/* What the report says around the numbers. */
typedef struct cg_parity_view {
    const char *model;
    const char *targets;        /* "a,b" */
    const cg_target *const *target_list;
    size_t target_count;
    const char *outputs_from;   /* NULL: the target path ran here */
    const char *samples;        /* "3 from DIR", "4 random (seed 0)" */
    bool random;
    uint64_t seed;
    cg_task task;
    double threshold;
    const char *producer;       /* what made the target outputs when it was neither the
                                   target path nor files (cg_against_describe), or NULL */
} cg_parity_view;

/* One judged output: "within tolerance" or the verdict's name. */
const char *cg_report_output_state(const cg_parity_output *o);
/* Its judgement, lines starting with indent: the verdict with its reason
 * and the floors, or the tolerance (and that it overrides the floor). */
void cg_report_judged_text(FILE *f, const char *indent, const cg_parity_output *o);
/* Sets on obj (an output object of cg_report_output_json): within_tolerance,
 * pass (the output's judgement), judged_by ("noise floor" or "tolerance"),
 * verdict (cg_report_judgement_json or null) and noise ({fp32_floor,
 * fp16_floor, error, scale, discontinuous, flips, detection} or null). */
int cg_report_judged_json(json_t *obj, const cg_parity_output *o);
/* cg_report_output_json of an output of r, with its judgement. */
json_t *cg_report_parity_output_json(const cg_parity_report *r, const cg_parity_output *o);
/* The task block: {kind, threshold?, outputs: [...], detect?}. */
json_t *cg_report_task_json(const cg_parity_report *r, cg_task task, double threshold);
/* --task classify/segment's lines for one output: against the fp32
 * reference, and against float64 beside what a correct run changes. */
void cg_report_task_text(FILE *f, const char *indent, const cg_parity_output *o);
/* --task detect's line: matched, missing, extra, and the detections' verdict. */
void cg_report_detect_text(FILE *f, const char *indent, const cg_parity_report *r,
                           const char *const *names);

void cg_report_parity_text(FILE *f, const cg_parity_report *r, const cg_parity_view *v);
json_t *cg_report_parity_json(const cg_parity_report *r, const cg_parity_view *v);
/* producer: "reference", "xnnpack" or "outputs from DIR". */
void cg_report_verify_text(FILE *f, const cg_verify_report *r, const char *golden,
                           const char *producer);
json_t *cg_report_verify_json(const cg_verify_report *r, const char *model, const char *golden,
                              const char *producer);

/* --- profile (report/profile.c) ------------------------------------------------------------ */

/* Everything a profile report is rendered from. */
typedef struct cg_profile_view {
    const char *model_path;
    const cg_model *model;
    const cg_cost_assumptions *assume;
    const cg_reference_profile *ref;
    const cg_assignment *a;          /* NULL without --target */
    const cg_target_profile *tp;     /* NULL without --target */
    const cg_cost_estimate *est;
    bool any_profiled;
    const char *verdict;
    size_t top;
    const char *const *notes;
    size_t note_count;
} cg_profile_view;

void cg_report_profile_text(FILE *f, const cg_profile_view *r);
json_t *cg_report_profile_json(const cg_profile_view *r);

/* --- check (report/check.c) --------------------------------------------------------- */

void cg_report_check_text(FILE *f, const char *path, const cg_check_report *r);
json_t *cg_report_check_json(const char *path, const cg_check_report *r);

/* --- the cost arithmetic (report/calc.c) ------------------------------------------- */

void cg_report_latency_text(FILE *f, const cg_latency_input *in, const cg_latency_result *r);
json_t *cg_report_latency_json(const cg_latency_input *in, const cg_latency_result *r);

/* What `convgate queue` computed. */
typedef struct cg_queue_view {
    double lambda, mu, q0, t_end, dt;
    size_t points;
    cg_mm1 mm1;
    bool simulated;
    uint64_t seed;
    cg_mm1_sim sim;
} cg_queue_view;
void cg_report_queue_text(FILE *f, const cg_queue_view *q);
json_t *cg_report_queue_json(const cg_queue_view *q);

/* --- conformance (report/conformance.c) ------------------------------------------- */

#include "convgate/conformance.h"

typedef struct cg_conf_view {
    const cg_conf_test *tests;
    size_t count;
    size_t passed, failed, skipped;
    const char *manifest;      /* --expect FILE, or NULL */
    char *const *deviations;
    size_t deviation_count;
} cg_conf_view;

void cg_report_conf_test_text(FILE *f, const cg_conf_test *t, bool with_time);
void cg_report_conf_text(FILE *f, const cg_conf_view *v);
json_t *cg_report_conf_json(const cg_conf_view *v);

/* --- rewrites and convert (report/rewrite.c, report/convert.c) ------------------------- */

#include "convgate/rewrite.h"

/* What the rewrite report says around the result. */
typedef struct cg_rewrite_view {
    const char *command;       /* "rewrite", "convert" */
    const char *model;
    const char *targets;       /* "a,b" */
    const char *output;        /* -o OUT, NULL for --what-if */
    const char *samples;       /* "3 random sets, seed 0" */
    bool what_if;              /* each step's placement after it */
    bool all_steps;            /* also the rewrites that match nowhere */
} cg_rewrite_view;

void cg_report_rewrite_catalog_text(FILE *f);
json_t *cg_report_rewrite_catalog_json(void);
void cg_report_rewrite_text(FILE *f, const cg_rewrite_result *r, const cg_rewrite_view *v);
json_t *cg_report_rewrite_json(const cg_rewrite_result *r, const cg_rewrite_view *v);
/* One step: {name, kind, numerics, summary, addresses, outcome, sites, nodes_before,
 * nodes_after, detail, verified, exact, checks, target_error_before/after[, after]} */
json_t *cg_report_rewrite_step_json(const cg_rewrite_step *s, bool with_placement);

/* convgate convert: the artifact's manifest.json (format in docs/convert.md)
 * and README.md, and the terminal summary; verify DIR's report. */
json_t *cg_report_convert_manifest(const cg_convert_result *r);
void cg_report_convert_readme(FILE *f, const cg_convert_result *r);
void cg_report_convert_text(FILE *f, const cg_convert_result *r, const cg_rewrite_view *v);
json_t *cg_report_convert_json(const cg_convert_result *r, const cg_rewrite_view *v);
void cg_report_artifact_text(FILE *f, const cg_artifact_report *a, const char *producer);
json_t *cg_report_artifact_json(const cg_artifact_report *a, const char *producer);

/* --- targets (report/targets.c) ----------------------------------------------------- */

struct cg_target_registry;
void cg_report_targets_text(FILE *f, const struct cg_target_registry *reg);
json_t *cg_report_targets_json(const struct cg_target_registry *reg);
/* One target: name, kind, version, fallback, precision, source, the cited
 * sources and what the profile does not model. */
json_t *cg_report_target_json(const cg_target *t);

/* --- inspect (report/inspect.c) ----------------------------------------------------- */

json_t *cg_report_inspect_json(const cg_model *model, const cg_inspect_options *opt,
                               cg_error *err);
/* The same for a .tflite model (report/inspect_tflite.c). */
json_t *cg_report_inspect_tflite_json(const cg_tflite_model *model,
                                      const cg_inspect_options *opt, cg_error *err);

/* --- source against converted, runners (report/against.c) ------------------------------ */

#include "convgate/iomap.h"
#include "convgate/runner.h"

/* What the other side of a comparison was and how it was fed: the map
 * between the compared model and the other (NULL when the other is the
 * model itself), what produced the outputs, what the runner measured. */
typedef struct cg_against_view {
    const cg_model *model, *other;
    const char *other_path;
    const cg_io_map *map;
    bool model_is_a;               /* the compared model is the map's A side */
    const char *producer;          /* cg_against_describe */
    const cg_runner_report *runner;
} cg_against_view;

/* label: "against" (compare), "gate 3 reference" (gate --source) */
void cg_report_against_text(FILE *f, const char *label, const cg_against_view *v);
json_t *cg_report_against_json(const cg_against_view *v);
/* Verdicts of the other side against the compared model's noise floor. */
#include "convgate/against.h"
/* quantized: the other side computes in integers (its differences beyond
 * float32 noise are its quantization; a tolerance judges those). */
void cg_report_against_verdicts_text(FILE *f, const cg_against_verdict *v, size_t count,
                                     bool quantized);
json_t *cg_report_against_verdicts_json(const cg_against_verdict *v, size_t count);
/* The runner's measurements alone (run, gate). */
void cg_report_runner_text(FILE *f, const cg_runner_report *r, const char *indent);
json_t *cg_report_runner_json(const cg_runner_report *r);

/* Gate 3's other sides, when its reference was another model (--source)
 * or its target side the real LiteRT (--runner). */
typedef struct cg_gate_sides {
    const char *model_path;
    const cg_against_view *source;   /* --source, else NULL */
    const cg_runner_report *runner;  /* --runner, else NULL */
    const char *measured;            /* the runner side's cg_against_describe */
} cg_gate_sides;
/* With --source, gate 3 failed where the target path follows the model's
 * own reference (bisection found no divergence): the difference lies
 * between the source and the model, in the conversion, not in the target. */
bool cg_gate_conversion_differs(const cg_gate_report *r, const cg_gate_sides *s);
/* The lines after cg_gate_report_text: the source side and the
 * conversion's verdict, the runner side and its measurements. */
void cg_report_gate_sides_text(FILE *f, const cg_gate_report *r, const cg_gate_sides *s);
/* The same on gate's JSON root: source (with conversion_differs) and runner. */
void cg_report_gate_sides_json(json_t *root, const cg_gate_report *r, const cg_gate_sides *s);

/* --- dump-ref (report/dump.c) ------------------------------------------------------------ */

/* {model, golden, sets: [{name, inputs, outputs}]} */
json_t *cg_report_dump_json(const char *model_path, const char *golden,
                            const cg_golden_dump_report *r);
/* One line a set ("set 'a': 1 input, 2 outputs") and the total. */
void cg_report_dump_set_text(FILE *f, const char *name, size_t inputs, size_t outputs);
void cg_report_dump_text(FILE *f, const char *golden, const cg_golden_dump_report *r);

/* --- save (report/save.c) ---------------------------------------------------------------- */

/* What `save` wrote: the model file and, with external data, its weights file. */
typedef struct cg_save_view {
    const char *model;         /* the model read */
    const char *output;        /* the model written */
    uint64_t output_bytes;
    const char *external_data; /* the weights file written beside it, or NULL */
    uint64_t external_bytes;
} cg_save_view;

json_t *cg_report_save_json(const cg_save_view *v);

#endif
