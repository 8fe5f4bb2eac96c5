/*
 * The three gates (convgate/gate.h): converts, runs where intended,
 * matches. Each gate fills its part of the report; a failed gate leaves
 * the later ones NOT_RUN. Gate 2's placement and gate 3's samples use one
 * random-input policy (convgate/samples.h), so they feed the same tensors.
 * Gate 3 runs the reference runtime and the target path on every sample,
 * merges each output's metrics over the samples, and on a failure bisects
 * the first failing sample. The report is rendered in src/report/gate.c.
 */
#include "convgate/gate.h"
#include "convgate/lower.h"
#include "convgate/tflite.h"

#include <inttypes.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include "convgate/assign.h"
#include "convgate/parity.h"
#include "convgate/profile.h"
#include "convgate/samples.h"
#include "convgate/targetpath.h"
#include "convgate/tensor.h"
#include "core/clock.h"
#include "ir/walk.h"
#include "target/registry.h"
#include "verify_internal.h"

static char *str_dup(const char *s)
{
    size_t n = strlen(s);
    char *d = malloc(n + 1);
    if (d)
        memcpy(d, s, n + 1);
    return d;
}

/* --- gates ----------------------------------------------------------------------- */

const char *cg_gate_phase_name(cg_gate_phase p)
{
    static const char *const names[CG_GATE_PHASES] = {
        "gate 1 check",   "gate 2 lower",    "gate 2 types",     "gate 2 place",
        "gate 2 timed run", "gate 3 setup",  "gate 3 samples",   "  reference",
        "  target",       "  compare",       "gate 3 verdicts",  "gate 3 bisect"};
    return (int)p >= 0 && p < CG_GATE_PHASES ? names[p] : "?";
}

const char *cg_gate_schedule_name(cg_gate_schedule s)
{
    switch (s) {
    case CG_GATE_SCHEDULE_AUTO: return "auto";
    case CG_GATE_SCHEDULE_OVERLAP: return "overlap";
    case CG_GATE_SCHEDULE_PHASED: return "phased";
    }
    return "?";
}

/* The weights the model stores in its main graph: initializers and
 * Constant nodes' values. What each runtime holds its own view of (packed
 * filters, aligned copies), so what the runs alive together multiply. */
static uint64_t model_weight_bytes(const cg_model *m)
{
    const cg_graph *g = m->graph;
    uint64_t n = 0;
    if (!g)
        return 0;
    for (size_t i = 0; i < g->initializer_count; i++)
        n += cg_tensor_proto_bytes(&g->initializers[i]);
    for (size_t i = 0; i < g->node_count; i++) {
        const cg_node *nd = &g->nodes[i];
        if (!nd->op_type || strcmp(nd->op_type, "Constant") != 0)
            continue;
        for (size_t a = 0; a < nd->attr_count; a++)
            if (nd->attrs[a].t)
                n += cg_tensor_proto_bytes(nd->attrs[a].t);
    }
    return n;
}

/* AUTO resolved (cg_gate_schedule): phased from CG_GATE_PHASED_WEIGHT_BYTES
 * of weights up. */
static cg_gate_schedule gate3_schedule(const cg_model *model, const cg_gate_options *opt,
                                       uint64_t *weights)
{
    *weights = model_weight_bytes(model);
    if (opt->schedule != CG_GATE_SCHEDULE_AUTO)
        return opt->schedule;
    return *weights >= CG_GATE_PHASED_WEIGHT_BYTES ? CG_GATE_SCHEDULE_PHASED
                                                   : CG_GATE_SCHEDULE_OVERLAP;
}

/* Charges the time since the last lap to phase p, and notes the peak RSS. */
static void phase_lap(cg_gate_report *r, cg_lap *lap, cg_gate_phase p)
{
    struct rusage ru;
    cg_lap_add(lap, &r->timings.wall_s[p], &r->timings.cpu_s[p]);
    if (getrusage(RUSAGE_SELF, &ru) == 0)
        r->timings.peak_rss_mib[p] = (double)ru.ru_maxrss / 1024.0; /* KiB on Linux */
}

const char *cg_gate_state_name(cg_gate_state s)
{
    switch (s) {
    case CG_GATE_PASS: return "PASS";
    case CG_GATE_FAIL: return "FAIL";
    case CG_GATE_NOT_RUN: break;
    }
    return "not run";
}

/* Gate 1: the checker (of the .tflite itself for a lowered model). */
static cg_status gate_converts(const cg_model *model, cg_gate_report *r, cg_error *err)
{
    cg_check_report rep;
    cg_error cerr;
    cg_error_clear(&cerr);
    cg_status st = model->tflite ? cg_tflite_check(model->tflite->source, NULL, &rep, &cerr)
                                 : cg_check_model(model, NULL, &rep, &cerr);
    r->check_errors = rep.error_count;
    r->check_warnings = rep.warning_count;
    if (st == CG_NOMEM || st == CG_USAGE) {
        cg_check_report_free(&rep);
        return cg_error_set(err, st, "gate 1: %s", cerr.msg);
    }
    if (rep.error_count) {
        const cg_check_problem *p = NULL;
        for (size_t i = 0; i < rep.count && !p; i++)
            if (rep.problems[i].severity == CG_CHECK_ERROR)
                p = &rep.problems[i];
        r->converts = CG_GATE_FAIL;
        snprintf(r->converts_detail, sizeof r->converts_detail,
                 "%zu error%s; first: [%.60s] %.200s: %.200s", rep.error_count,
                 rep.error_count == 1 ? "" : "s", p ? p->rule : "?", p ? p->where : "?",
                 p ? p->message : cerr.msg);
    } else {
        r->converts = CG_GATE_PASS;
        snprintf(r->converts_detail, sizeof r->converts_detail, "0 errors, %zu warning%s",
                 rep.warning_count, rep.warning_count == 1 ? "" : "s");
    }
    cg_check_report_free(&rep);
    return CG_OK;
}

/* Reference time per node, measured between observer calls. */
typedef struct node_timer {
    const cg_graph *g;
    double *seconds;
    struct timespec last;
} node_timer;

static double ts_diff(const struct timespec *a, const struct timespec *b)
{
    return (double)(b->tv_sec - a->tv_sec) + (double)(b->tv_nsec - a->tv_nsec) * 1e-9;
}

static cg_status timer_observe(void *user, const cg_node *node, const char *name,
                               const cg_value *value)
{
    node_timer *t = user;
    struct timespec now;
    (void)name;
    (void)value;
    clock_gettime(CLOCK_MONOTONIC, &now);
    if (node >= t->g->nodes && node < t->g->nodes + t->g->node_count)
        t->seconds[node - t->g->nodes] += ts_diff(&t->last, &now);
    t->last = now;
    return CG_OK;
}

static void timer_start(void *user)
{
    node_timer *t = user;
    clock_gettime(CLOCK_MONOTONIC, &t->last);
}

/* The reference run's time per node of `model` on sample s, in ms
 * (malloc'd; NULL when the run fails: coverage is then unknown). */
static double *timed_run(const cg_model *model, const cg_sample *s, size_t max_alloc)
{
    node_timer t = {model->graph, NULL, {0, 0}};
    cg_runtime_options ro;
    cg_runtime *rt = NULL;
    cg_named_value *outs = NULL;
    size_t out_count = 0;
    double *ms = NULL;
    t.seconds = calloc(model->graph->node_count ? model->graph->node_count : 1, sizeof(double));
    if (!t.seconds)
        return NULL;
    cg_verify_runtime_options(&ro, max_alloc, 0);
    ro.observe = timer_observe;
    ro.observe_user = &t;
    if (cg_runtime_init(model, &ro, &rt, NULL) == CG_OK) {
        timer_start(&t);
        if (cg_runtime_run(rt, s->inputs, s->input_count, &outs, &out_count, NULL) == CG_OK) {
            cg_runtime_free_outputs(outs, out_count);
            for (size_t v = 0; v < model->graph->node_count; v++)
                t.seconds[v] *= 1e3;
            ms = t.seconds;
            t.seconds = NULL;
        }
    }
    cg_runtime_free(rt);
    free(t.seconds);
    return ms;
}

/* A lowered .tflite's node times summed per operator of its main subgraph
 * (cg_tflite_node_origin), indexed like cg_tflite_op_model's nodes.
 * Frees node_ms; NULL on no memory. */
static double *tflite_op_ms(const cg_model *lowered, double *node_ms, size_t op_count)
{
    double *op = calloc(op_count ? op_count : 1, sizeof *op);
    for (size_t v = 0; op && v < lowered->graph->node_count; v++) {
        const cg_tflite_origin *o = cg_tflite_node_origin(lowered, &lowered->graph->nodes[v]);
        if (o && o->subgraph == 0 && o->op >= 0 && (size_t)o->op < op_count)
            op[o->op] += node_ms[v];
    }
    free(node_ms);
    return op;
}

/* A lowered graph's node times from its source's (cg_lowered_node_times),
 * indexed like l->model's nodes. Frees src_ms; NULL when it is NULL or on
 * no memory. */
static double *lowered_op_ms(const cg_lowered *l, double *src_ms)
{
    double *ms = src_ms ? calloc(l->model->graph->node_count + 1, sizeof *ms) : NULL;
    if (ms)
        cg_lowered_node_times(l, src_ms, ms);
    free(src_ms);
    return ms;
}

bool cg_gate_runs_judge(const cg_cost_estimate *e, double min_coverage, const char *targets,
                        char *why, size_t cap)
{
    char bar[64];
    if (min_coverage == 0) {
        /* the user asks for no bar: only what fails to initialize fails */
        snprintf(why, cap, "no bar (--min-coverage 0): neither the share of time on %s nor "
                 "the latency is judged", targets);
        return true;
    }
    if (min_coverage >= 0)
        snprintf(bar, sizeof bar, "--min-coverage %.1f%%", 100 * min_coverage);
    else
        snprintf(bar, sizeof bar, "the majority, over 50%%,");
    if (!e) {
        snprintf(why, cap, "the share of reference time on %s is unknown (the timed reference "
                 "run failed): running where intended cannot be judged", targets);
        return false;
    }
    double cover = e->time_coverage;
    bool enough = min_coverage >= 0 ? cover >= min_coverage : cover > 0.5;
    if (!enough) {
        snprintf(why, cap, "%s take%s %.1f%% of the reference time (%zu/%zu nodes), below %s "
                 "that running where intended needs (--min-coverage F sets another bar)",
                 targets, strchr(targets, ',') ? "" : "s", 100 * cover, e->nodes_on_target,
                 e->nodes_total, bar);
        return false;
    }
    if (!(e->mixed_ms < e->reference_ms)) {
        snprintf(why, cap, "the mixed latency estimate %.3g ms (%.3g on %s + %.3g CPU remainder "
                 "+ %.3g in %lld boundary cop%s) does not beat the CPU alone (%.3g ms)%s",
                 e->mixed_ms, e->accelerated_ms, targets, e->remainder_ms, e->boundary_ms,
                 (long long)e->crossings, e->crossings == 1 ? "y" : "ies", e->reference_ms,
                 e->assumed ? " [assumed speedups and boundary costs]" : "");
        return false;
    }
    /* no measured figure in a pass: the sentence goes into artifacts that
     * must be byte-identical on rerun (convert); the JSON has the figures */
    snprintf(why, cap, "%s take%s the %s of the reference time and the mixed latency "
             "estimate beats the CPU alone", targets, strchr(targets, ',') ? "" : "s",
             min_coverage >= 0 ? "share --min-coverage asks" : "majority");
    return true;
}

/* Whether a sample's tensors came from files (the user's), not the
 * random-input policy. */
static bool sample_from_files(const cg_sample *s)
{
    for (size_t i = 0; s->sources && i < s->input_count; i++)
        if (s->sources[i] && strcmp(s->sources[i], "random") != 0)
            return true;
    return false;
}

/* Gate 3's judge options for the gate's model (types and lowering apart). */
static void gate3_options(const cg_gate_options *opt, cg_parity_options *po)
{
    cg_parity_options_for_path(po, opt->targets, opt->target_count, opt->dims, opt->dim_count,
                               opt->random, opt->accumulate,
                               opt->outputs_from, &opt->tol, opt->max_alloc_bytes);
    po->task = opt->task;
    po->threshold = opt->threshold;
    po->detect = opt->detect;
    po->threads = opt->threads;
    po->threads_after = opt->threads_after;
    po->golden = opt->samples->samples[0].expected != NULL;
    po->outputs_reduced = opt->outputs_reduced;
    po->progress = opt->progress;
}

/* Gate 3's judge, made right after gate 2's lowering where it needs
 * nothing gate 2 makes later: its target path, running ahead of the
 * references (cg_judge_ahead), compiles and runs the first samples on the
 * second core while gate 2 types, places and times the lowered graph. A
 * gate 2 that fails frees it unused (after the sample in progress). */
typedef struct gate3_early {
    cg_parity_options po;
    cg_judge *j;
} gate3_early;

static atomic_size_t early_starts;

size_t cg_gate3_early_starts(void)
{
    return atomic_load(&early_starts);
}

/* Starts e's judge when gate 3 would judge with the target ahead and the
 * lowering's types (a fixed-dim model lowered for these targets on random
 * sample 0, gate_matches' case that needs no typing run of its own);
 * otherwise, or on any error, leaves e->j NULL and gate 3 starts as usual. */
static void gate3_start(const cg_model *src, const cg_gate_options *opt,
                        const cg_lowered *lowered, cg_gate_report *r, gate3_early *e)
{
    const cg_sample *s0 = &opt->samples->samples[0];
    cg_error terr;
    cg_error_clear(&terr);
    e->j = NULL;
    if (r->timings.schedule == CG_GATE_SCHEDULE_PHASED || src->tflite || opt->outputs_from ||
        opt->samples->count < 2 || s0->expected || sample_from_files(s0) || !lowered || lowered->source != src || lowered->model == src ||
        !cg_type_env_fixed_dims(lowered->source_types))
        return;
    gate3_options(opt, &e->po);
    e->po.lowered = lowered;
    e->po.types = lowered->source_types;
    if (cg_judge_init(src, &e->po, opt->samples->count, &r->judged, &e->j, &terr) != CG_OK ||
        cg_judge_ahead(e->j, opt->samples->samples, opt->samples->count, &terr) != CG_OK) {
        cg_judge_free(e->j);
        e->j = NULL;
        cg_parity_report_free(&r->judged);
        return;
    }
    atomic_fetch_add(&early_starts, 1);
}

/* Gate 2: placement. */
static cg_status gate_runs(const cg_model *model, const cg_gate_options *opt, cg_gate_report *r,
                           gate3_early *early, cg_error *err)
{
    const cg_model *src = model; /* the file's graph (a .tflite's lowering) */
    cg_type_env *types = NULL;
    cg_assignment *a = NULL;
    cg_lowered *lowered = NULL;
    cg_error terr;
    cg_status st;
    char label[128], msg[1024];
    cg_lap lap;
    cg_lap_start(&lap);
    cg_error_clear(&terr);
    r->runs = CG_GATE_FAIL;
    r->time_coverage = -1;
    r->reference_ms = r->mixed_ms = -1;
    r->coverage_bar = opt->have_min_coverage ? opt->min_coverage : -1;
    /* placed at sample 0's shapes: its fed tensors size the symbolic and
     * unnamed dims, as gate 3's target paths will be */
    cg_dim_binding binds[CG_PARITY_MAX_DIMS];
    size_t nb = opt->samples && opt->samples->count
                    ? cg_sample_dims(model, opt->dims, opt->dim_count, &opt->samples->samples[0],
                                     binds, CG_PARITY_MAX_DIMS)
                    : 0;
    if (!opt->samples || !opt->samples->count) {
        nb = opt->dim_count < CG_PARITY_MAX_DIMS ? opt->dim_count : CG_PARITY_MAX_DIMS;
        memcpy(binds, opt->dims, nb * sizeof *binds);
    }
    /* placement is judged on the graph the targets partition, its shapes
     * from a run on sample 0 */
    const cg_sample *first = opt->samples && opt->samples->count ? &opt->samples->samples[0]
                                                                 : NULL;
    if ((st = cg_lower_for_targets_fed(model, opt->targets, opt->target_count, binds, nb,
                                       first ? first->inputs : NULL,
                                       first ? first->input_count : 0, &lowered, err)) !=
        CG_OK) {
        cg_error_prefix(err, "gate 2: ");
        return st;
    }
    phase_lap(r, &lap, CG_GATE_PHASE_LOWER);
    gate3_start(src, opt, lowered, r, early);
    phase_lap(r, &lap, CG_GATE_PHASE_SETUP);
    model = lowered->model;
    const cg_graph *g = model->graph;
    r->node_count = g->node_count;
    snprintf(r->preprocess, sizeof r->preprocess, "%s", lowered->lowering);
    r->removed_by_runtime = cg_lowered_removed_count(lowered, "");
    r->remover = lowered->remover;
    cg_lowered_removed_summary(lowered, "", 6, r->removed_detail, sizeof r->removed_detail);
    /* typed by a run on sample 0, the tensors gate 3 feeds first: the
     * user's inputs when given (a detector that fails on random values
     * runs on real images); a lowering that declares its types still runs
     * the source on them */
    const cg_sample *s0 = &opt->samples->samples[0];
    /* the graph the reference runs is the one placed: its nodes are timed
     * on the run that types them (the timer's, kept for after placement) */
    node_timer timer = {g, NULL, {0, 0}};
    bool timed_here = !src->tflite && !lowered->declared_types;
    cg_progress_report(&opt->progress, "gate 2", "steps", 0, 3,
                       timed_here ? "tensor types and node times (a reference run)"
                                  : "tensor types (a reference run)");
    if (timed_here) {
        timer.seconds = calloc(g->node_count ? g->node_count : 1, sizeof(double));
        cg_type_env_watch w = {timer_start, timer_observe, &timer};
        st = timer.seconds ? cg_type_env_build_watched(model, binds, nb, opt->random, s0->inputs,
                                                       s0->input_count, &w, &types, &terr)
                           : cg_error_set(&terr, CG_NOMEM, "out of memory");
        if (st != CG_OK) {
            free(timer.seconds);
            timer.seconds = NULL;
        }
    } else {
        st = cg_lowered_types_fed(lowered, binds, nb, opt->random, s0->inputs, s0->input_count,
                                  &types, &terr);
    }
    phase_lap(r, &lap, CG_GATE_PHASE_TYPES);
    if (st == CG_NOMEM) {
        cg_error_set(err, st, "gate 2: %s", terr.msg);
        goto done;
    }
    if (st != CG_OK) {
        /* no types, no placement: the residency is unknown, not "0/N" */
        char unsized[200];
        bool files = sample_from_files(s0);
        size_t n = cg_samples_unsized_inputs(model, binds, nb, unsized, sizeof unsized);
        snprintf(r->residency, sizeof r->residency, "unknown");
        r->residency_unknown = true;
        snprintf(r->runs_detail, sizeof r->runs_detail,
                 "residency unknown: the model itself fails on %s sample '%.40s' in the "
                 "reference runtime, so nothing can be placed: %.250s%s%.100s%s%s",
                 files ? "the given" : "the random", s0->label ? s0->label : "?", terr.msg,
                 n ? " (inputs whose unnamed dims took 1: " : "", n ? unsized : "",
                 n ? "; give their sizes with --shape NAME=DxD...)" : "",
                 files ? "" : "; give inputs it runs on with --inputs DIR");
        st = CG_OK;
        goto done;
    }
    cg_progress_report(&opt->progress, "gate 2", "steps", 1, 3, "placement");
    /* a .tflite is placed on its own operators, as assign places it and as
     * LiteRT's delegates count them (cg_tflite_op_model, typed from the
     * file); its lowering onto the IR is what the reference runs */
    if (src->tflite) {
        cg_type_env *op_types = NULL;
        if ((st = cg_tflite_op_model(src->tflite->source, &r->tflite_ops, err)) != CG_OK ||
            (st = cg_type_env_build_declared(r->tflite_ops, &op_types, err)) != CG_OK) {
            cg_error_prefix(err, "gate 2: ");
            goto done;
        }
        cg_type_env_free(types);
        types = op_types;
        g = r->tflite_ops->graph;
        r->node_count = g->node_count;
    }
    const cg_model *placed = src->tflite ? r->tflite_ops : model;
    if ((st = cg_assign(placed, types, opt->targets, opt->target_count, &a, err)) != CG_OK) {
        cg_error_prefix(err, "gate 2: ");
        goto done;
    }
    size_t cpu = cg_assign_count_owned(a, CG_OWNER_CPU);
    r->nodes_on_targets = g->node_count - cpu;
    r->partitions = a->partition_count;
    r->boundaries = a->boundary_count;
    cg_assign_residency_in(a, src->tflite ? "TFLite ops" : "nodes", r->residency,
                           sizeof r->residency);
    cg_assign_verdict(a, types, r->verdict_text, sizeof r->verdict_text);
    cg_progress_report(&opt->progress, "gate 2", "steps", 2, 3,
                       timer.seconds ? "latency estimate" : "timed reference run");
    phase_lap(r, &lap, CG_GATE_PHASE_PLACE);
    if (src->tflite) {
        double *ms = timed_run(src, s0, opt->max_alloc_bytes);
        r->node_ms = ms ? tflite_op_ms(src, ms, g->node_count) : NULL;
    } else if (lowered->declared_types) {
        /* a graph the reference does not run (TFLite ops) is timed by its source */
        r->node_ms = lowered_op_ms(lowered, timed_run(lowered->source, s0, opt->max_alloc_bytes));
    } else if (timer.seconds) {
        for (size_t v = 0; v < g->node_count; v++)
            timer.seconds[v] *= 1e3;
        r->node_ms = timer.seconds;
        timer.seconds = NULL;
    } else {
        r->node_ms = timed_run(model, s0, opt->max_alloc_bytes);
    }
    phase_lap(r, &lap, CG_GATE_PHASE_TIMED);
    /* the estimate the bar judges: measured node times, assumed speedups */
    cg_cost_estimate est;
    bool have_est = false;
    if (r->node_ms) {
        cg_cost_inputs ci = {a, r->node_ms, 0, NULL, NULL, NULL, NULL};
        have_est = cg_cost_estimate_build(&ci, &est, &terr) == CG_OK;
        r->time_coverage = have_est ? est.time_coverage : -1;
        r->reference_ms = have_est ? est.reference_ms : -1;
        r->mixed_ms = have_est ? est.mixed_ms : -1;
    }
    if (cg_assign_init_failure(a, types, msg, sizeof msg)) {
        snprintf(r->runs_detail, sizeof r->runs_detail, "%.500s", msg);
        goto done;
    }
    if (opt->require_full && cpu) {
        size_t v = 0;
        while (v < g->node_count && a->owner[v] != CG_OWNER_CPU)
            v++;
        const char *why = NULL;
        for (size_t i = 0; i < a->unsupported_count && !why; i++)
            if (a->unsupported[i].node == v)
                why = cg_assign_bare_reason(g, v, a->unsupported[i].reason);
        for (size_t i = 0; i < a->dropped_count && !why; i++)
            if (a->dropped[i].node == v)
                why = cg_assign_bare_reason(g, v, a->dropped[i].reason);
        snprintf(r->runs_detail, sizeof r->runs_detail,
                 "--require-full: %zu node%s fall back to the CPU; first: %.40s '%.60s': %.300s", cpu,
                 cpu == 1 ? "" : "s", g->nodes[v].op_type ? g->nodes[v].op_type : "?",
                 cg_assign_node_label(g, v, label, sizeof label), why ? why : "(no reason)");
        goto done;
    }
    if (opt->require_full && a->partition_count > 1) {
        snprintf(r->runs_detail, sizeof r->runs_detail,
                 "--require-full: %zu partitions where one was required", a->partition_count);
        goto done;
    }
    char bar[512];
    if (!opt->require_full &&
        !cg_gate_runs_judge(have_est ? &est : NULL, r->coverage_bar, r->targets, bar,
                            sizeof bar)) {
        snprintf(r->runs_detail, sizeof r->runs_detail, "%.500s", bar);
        goto done;
    }
    r->runs = CG_GATE_PASS;
    if (opt->require_full)
        snprintf(r->runs_detail, sizeof r->runs_detail, "%.500s", r->verdict_text);
    else
        snprintf(r->runs_detail, sizeof r->runs_detail, "%.250s; %.500s", r->verdict_text, bar);
done:
    free(timer.seconds); /* gate 2 stopped before its estimate */
    /* kept for the per-node views (they index the lowered graph); freed
     * with the report */
    r->assignment = a;
    r->types = types;
    r->lowered = lowered;
    return st;
}

/* Appends to a passing gate 3's detail which outputs were vacuous (their
 * fp64 reference constant: matching them judges nothing), naming them. */
static void vacuous_detail(const cg_parity_report *j, char *detail, size_t cap)
{
    size_t n = 0;
    for (size_t k = 0; k < j->output_count; k++)
        n += j->outputs[k].by_noise && j->outputs[k].verdict.vacuous;
    if (n == 0)
        return;
    size_t len = strlen(detail);
    if (n == j->output_count)
        len += (size_t)snprintf(detail + len, len < cap ? cap - len : 0, "; vacuous: every "
                                "output's fp64 reference is constant, so gate 3 judged nothing (");
    else
        len += (size_t)snprintf(detail + len, len < cap ? cap - len : 0, "; %zu vacuous (the "
                                "fp64 reference is constant, so they judge nothing: ", n);
    const char *sep = "";
    for (size_t k = 0; k < j->output_count && len < cap; k++) {
        if (!j->outputs[k].by_noise || !j->outputs[k].verdict.vacuous)
            continue;
        len += (size_t)snprintf(detail + len, cap - len, "%s'%.60s'", sep, j->outputs[k].name);
        sep = ", ";
    }
    if (len < cap)
        snprintf(detail + len, cap - len, ")");
}

/* The sample gate 3 bisects: where the first failing output is worst. */
static size_t bisect_sample(const cg_parity_report *j, size_t *output)
{
    for (size_t k = 0; k < j->output_count; k++) {
        const cg_parity_output *o = &j->outputs[k];
        if (o->pass)
            continue;
        *output = k;
        int64_t w = o->by_noise ? o->error.m.worst_sample : o->merged.worst_sample;
        if (w >= 0 && (size_t)w < j->sample_count)
            return (size_t)w;
        for (size_t i = 0; i < j->sample_count; i++)
            if (!o->samples[i].pass)
                return i;
        return 0;
    }
    *output = 0;
    return 0;
}

/* Gate 3: every output judged on every sample, then bisection of the
 * sample where the first failing output is worst. */
/* What gate 2 made that a target path on sample 0 borrows instead of
 * lowering and typing the graph again (cg_target_path_options.lowered and
 * .types), each NULL where nothing fits; both live in r. */
static void gate2_lent(const cg_gate_report *r, const cg_model *model, const cg_sample *s0,
                       const cg_lowered **lowered, const cg_type_env **types)
{
    bool golden = s0->expected != NULL; /* gate3_options' po.golden */
    /* gate 2 lowered this model for these targets at sample 0's dims and
     * inputs: no second lowering (its typing run) */
    *lowered = r->lowered && r->lowered->source == model ? r->lowered : NULL;
    *types = NULL;
    /* gate 2 typed this very graph on sample 0 (random, so also what the
     * floors' decision analysis types by): no second and third recording
     * run. A lowering types another graph; a file's sample is not what the
     * random policy gives the decision analysis. */
    if (r->types && r->lowered && r->lowered->model == model && !r->tflite_ops &&
        !sample_from_files(s0))
        *types = r->types;
    /* gate 2 typed a lowering, and the lowering typed this model on sample
     * 0: where every dim is a number that environment is the one typing it
     * here would make (cg_type_env_fixed_dims), so no second run */
    if (!*types && !r->tflite_ops && !sample_from_files(s0) && !golden && r->lowered &&
        r->lowered->source == model && cg_type_env_fixed_dims(r->lowered->source_types))
        *types = r->lowered->source_types;
}

static cg_status gate_matches(const cg_model *model, const cg_gate_options *opt,
                              cg_gate_report *r, gate3_early *early, cg_weights_hold **hold,
                              cg_error *err)
{
    cg_parity_options po;
    cg_judge *j = NULL;
    cg_status st;
    cg_lap lap;
    cg_lap_start(&lap);
    r->matches = CG_GATE_FAIL;
    r->task = opt->task;
    r->threshold = opt->threshold;
    /* started beside gate 2 (gate3_start): its judge, as made below */
    const cg_sample *s0 = &opt->samples->samples[0];
    cg_type_env *own_types = NULL;
    if ((j = early->j)) {
        early->j = NULL;
        goto judge_ready;
    }
    gate3_options(opt, &po);
    gate2_lent(r, model, s0, &po.lowered, &po.types);
    /* else the model typed once here for both */
    if (!po.types && !r->tflite_ops && !sample_from_files(s0) && !po.golden) {
        cg_dim_binding binds[CG_PARITY_MAX_DIMS];
        size_t nb = cg_sample_dims(model, opt->dims, opt->dim_count, s0, binds,
                                   CG_PARITY_MAX_DIMS);
        cg_error terr;
        cg_error_clear(&terr);
        if (cg_type_env_build_fed(model, binds, nb, opt->random, s0->inputs, s0->input_count,
                                  &own_types, &terr) == CG_OK)
            po.types = own_types; /* else each builds its own, as before */
    }
    if (po.golden && opt->task == CG_TASK_DETECT) {
        cg_type_env_free(own_types);
        return cg_error_set(err, CG_USAGE, "gate 3: --task detect matches detections against "
                            "fresh reference runs, not a golden set: use --inputs");
    }
    if ((st = cg_judge_init(model, &po, opt->samples->count, &r->judged, &j, err)) != CG_OK) {
        cg_type_env_free(own_types);
        cg_error_prefix(err, "gate 3: ");
        return st;
    }
judge_ready:
    phase_lap(r, &lap, CG_GATE_PHASE_SETUP);
    /* the target's outputs made elsewhere (the real LiteRT), read per sample */
    size_t nout = model->graph->output_count;
    cg_value **files = opt->outputs_from ? calloc(nout + 1, sizeof *files) : NULL;
    if (opt->outputs_from && !files)
        st = cg_error_set(err, CG_NOMEM, "out of memory");
    /* phased: one runtime at a time, the float32 reference first, sharing
     * gate 2's packed weights through the hold, which goes after it;
     * overlapped: the target's runs ahead of the references where they
     * can, its first sample (compilation, first touches) beside the next
     * references */
    if (st == CG_OK && !files && r->timings.schedule == CG_GATE_SCHEDULE_PHASED)
        st = cg_judge_phases(j, opt->samples->samples, opt->samples->count, hold, err);
    else if (st == CG_OK && !files)
        st = cg_judge_ahead(j, opt->samples->samples, opt->samples->count, err);
    for (size_t i = 0; i < opt->samples->count && st == CG_OK; i++) {
        const cg_sample *s = &opt->samples->samples[i];
        cg_progress_report(&opt->progress, "gate 3", "samples", i, opt->samples->count,
                           s->label);
        if (files && (st = cg_samples_read_set_outputs(model, opt->outputs_from, s->label,
                                                       opt->max_alloc_bytes, files, err)) !=
                         CG_OK)
            cg_error_prefix(err, "the target's outputs of %s: ", s->label);
        if (st == CG_OK)
            st = cg_judge_add(j, s, i, files, err);
        for (size_t k = 0; files && k < nout; k++) {
            cg_value_free(files[k]);
            files[k] = NULL;
        }
    }
    free(files);
    if (st == CG_OK)
        st = cg_judge_wait(j, err); /* the target's runs ahead, tallied */
    {
        double w[3], c[3];
        cg_judge_times(j, w, c);
        for (int p = 0; p < 3; p++) {
            r->timings.wall_s[CG_GATE_PHASE_REFERENCE + p] += w[p];
            r->timings.cpu_s[CG_GATE_PHASE_REFERENCE + p] += c[p];
        }
    }
    phase_lap(r, &lap, CG_GATE_PHASE_SAMPLES);
    if (st == CG_OK)
        st = cg_judge_finish(j, err);
    cg_judge_free(j);
    cg_type_env_free(own_types); /* after the judge and its paths, which borrow it */
    phase_lap(r, &lap, CG_GATE_PHASE_VERDICTS);
    if (st != CG_OK) {
        cg_error_prefix(err, "gate 3: ");
        return st;
    }
    const cg_parity_report *jr = &r->judged;
    r->reduced_precision = jr->reduced;
    r->sample_count = jr->sample_count;
    for (size_t i = 0; i < jr->sample_count; i++) {
        bool ok = true;
        for (size_t k = 0; k < jr->output_count; k++)
            ok = ok && jr->outputs[k].samples[i].pass;
        r->failed_samples += !ok;
    }
    if (jr->pass) {
        r->matches = CG_GATE_PASS;
        cg_verdict worst = CG_VERDICT_MATCH_FP32;
        for (size_t k = 0; k < jr->output_count; k++)
            if (jr->outputs[k].by_noise && jr->outputs[k].verdict.verdict > worst)
                worst = jr->outputs[k].verdict.verdict;
        snprintf(r->matches_detail, sizeof r->matches_detail,
                 "%zu output%s: %s on %zu sample%s", jr->output_count,
                 jr->output_count == 1 ? "" : "s",
                 jr->by_noise ? cg_verdict_name(worst) : "within tolerance", r->sample_count,
                 r->sample_count == 1 ? "" : "s");
        vacuous_detail(jr, r->matches_detail, sizeof r->matches_detail);
        return CG_OK;
    }
    size_t bad = 0, si = bisect_sample(jr, &bad);
    const cg_parity_output *o = &jr->outputs[bad];
    snprintf(r->matches_short, sizeof r->matches_short, "output '%.100s' %s", o->name,
             o->by_noise ? cg_verdict_name(o->verdict.verdict) : "outside tolerance");
    if (o->by_noise)
        snprintf(r->matches_detail, sizeof r->matches_detail, "output '%.100s': %s: %.511s",
                 o->name, cg_verdict_name(o->verdict.verdict), o->verdict.reason);
    else
        snprintf(r->matches_detail, sizeof r->matches_detail,
                 "output '%.100s' outside tolerance (%s) on %zu of %zu samples (max_abs %.4g)",
                 o->name, o->tol.source, o->failing_count, r->sample_count, o->merged.max_abs);
    if (opt->outputs_from) {
        snprintf(r->bisect_error, sizeof r->bisect_error, "the outputs were made outside "
                 "convgate (%s); bisection runs the target path, whose intermediate values "
                 "those runs do not expose", opt->outputs_from);
        return CG_OK;
    }
    /* a run that stopped on a non-finite value has no later tensors to
     * compare: its verdict names the first value fp16 made non-finite */
    const cg_judgement *vj = &o->verdict;
    if (o->by_noise && jr->device_class[0] && jr->device_class[1])
        vj = &o->class_verdict[cg_verdict_passes(o->class_verdict[1].verdict) ? 0 : 1];
    if (o->by_noise && vj->stop.stopped) {
        snprintf(r->bisect_error, sizeof r->bisect_error, "the target path "
                 "stopped on sample %zu before giving its outputs; the first value fp16 made "
                 "non-finite is named in the verdict (%.47s '%.100s', value '%.100s')",
                 vj->stop.sample, vj->stop.site.op, vj->stop.site.node, vj->stop.site.value);
        return CG_OK;
    }
    /* bisect that sample: against the floors, or by the output's tolerance */
    {
        const cg_sample *s = &opt->samples->samples[si];
        cg_bisect_options bo;
        cg_dim_binding binds[CG_PARITY_MAX_DIMS];
        cg_target_path_options tpo;
        memset(&tpo, 0, sizeof tpo);
        tpo.targets = opt->targets;
        tpo.target_count = opt->target_count;
        tpo.random = opt->random;
        tpo.accumulate = opt->accumulate;
        /* two device classes: bisect the failing one, the class that sums
         * in fp32 first (its failure is not about the sums) */
        if (o->by_noise && jr->device_class[0] && jr->device_class[1]) {
            int c = cg_verdict_passes(o->class_verdict[1].verdict) ? 0 : 1;
            r->bisect_class = jr->device_class[c];
            tpo.accumulate = c == 1 ? CG_ACCUMULATE_FP32 : CG_ACCUMULATE_FP16;
        }
        tpo.max_alloc_bytes = opt->max_alloc_bytes;
        tpo.threads = opt->threads;
        tpo.dims = binds;
        tpo.dim_count = cg_sample_dims(model, opt->dims, opt->dim_count, s, binds,
                                       CG_PARITY_MAX_DIMS);
        tpo.feeds = s->inputs;
        tpo.feed_count = s->input_count;
        /* sample 0: the bisection's paths borrow gate 2's lowering and
         * types, as gate 3's first path did */
        if (si == 0)
            gate2_lent(r, model, s, &tpo.lowered, &tpo.types);
        cg_error berr;
        memset(&bo, 0, sizeof bo);
        cg_error_clear(&berr);
        bo.reference.model = model;
        bo.candidate.model = model;
        bo.candidate.path = &tpo;
        bo.by_tolerance = !o->by_noise;
        bo.tol = o->tol.tol;
        bo.max_alloc_bytes = opt->max_alloc_bytes;
        bo.triage = true;
        bo.keep_values = opt->keep_values;
        bo.progress = opt->progress;
        r->bisect_sample = si;
        r->bisect_sample_label = str_dup(s->label);
        if (cg_bisect_run(&bo, s->inputs, s->input_count, &r->bisect, &berr) == CG_OK)
            r->bisected = true;
        else
            snprintf(r->bisect_error, sizeof r->bisect_error, "%s", berr.msg);
        phase_lap(r, &lap, CG_GATE_PHASE_BISECT);
    }
    return CG_OK;
}

void cg_gate_report_free(cg_gate_report *r)
{
    if (!r)
        return;
    free(r->model);
    free(r->targets);
    free(r->samples);
    free(r->dims);
    cg_parity_report_free(&r->judged);
    free(r->bisect_sample_label);
    cg_bisect_result_free(&r->bisect);
    cg_assignment_free(r->assignment);
    cg_type_env_free(r->types);
    cg_lowered_free(r->lowered);
    cg_model_free(r->tflite_ops);
    free(r->node_ms);
    memset(r, 0, sizeof *r);
}

static cg_status gate_run(const cg_model *model, const char *model_path,
                          const cg_gate_options *opt, cg_weights_hold **hold,
                          cg_gate_report *out, cg_error *err)
{
    cg_status st;
    size_t len = 1;
    out->converts = out->runs = out->matches = CG_GATE_NOT_RUN;
    out->time_coverage = -1;
    out->reference_ms = out->mixed_ms = -1;
    if (!model || !model->graph || !opt || !opt->target_count || !opt->targets ||
        !opt->samples || !opt->samples->count)
        return cg_error_set(err, CG_USAGE,
                            "cg_gate_run: a model, at least one target and one sample are needed");
    if (opt->have_min_coverage && !(opt->min_coverage >= 0 && opt->min_coverage <= 1))
        return cg_error_set(err, CG_USAGE, "cg_gate_run: min_coverage %g is not in [0, 1]",
                            opt->min_coverage);
    if ((int)opt->schedule < CG_GATE_SCHEDULE_AUTO || opt->schedule > CG_GATE_SCHEDULE_PHASED)
        return cg_error_set(err, CG_USAGE, "cg_gate_run: unknown schedule %d",
                            (int)opt->schedule);
    out->timings.schedule = gate3_schedule(model, opt, &out->timings.weight_bytes);
    /* the sizes of the dynamic dims, stated in the verdict; a guess only
     * when the user accepts it */
    const cg_sample *s0 = &opt->samples->samples[0];
    const cg_sample *fed = sample_from_files(s0) ? s0 : NULL;
    size_t nd = cg_samples_dim_uses(model, opt->dims, opt->dim_count, fed, NULL, 0);
    if (nd && !(out->dims = calloc(nd, sizeof *out->dims)))
        return cg_error_set(err, CG_NOMEM, "gate: out of memory");
    out->dim_count = cg_samples_dim_uses(model, opt->dims, opt->dim_count, fed, out->dims, nd);
    cg_samples_dim_uses_text(out->dims, out->dim_count, out->dims_text, sizeof out->dims_text);
    if (!opt->accept_default_dims &&
        (st = cg_samples_refuse_guessed_dims(out->dims, out->dim_count, err)) != CG_OK)
        return st;
    for (size_t t = 0; t < opt->target_count; t++)
        len += strlen(opt->targets[t]->name) + 1;
    out->model = str_dup(model_path ? model_path : "-");
    out->targets = malloc(len);
    out->samples = opt->samples_desc ? str_dup(opt->samples_desc) : NULL;
    if (!out->model || !out->targets || (opt->samples_desc && !out->samples))
        return cg_error_set(err, CG_NOMEM, "gate: out of memory");
    out->targets[0] = '\0';
    for (size_t t = 0; t < opt->target_count; t++) {
        if (t)
            strcat(out->targets, ",");
        strcat(out->targets, opt->targets[t]->name);
    }

    cg_lap lap;
    cg_lap_start(&lap);
    st = gate_converts(model, out, err);
    phase_lap(out, &lap, CG_GATE_PHASE_CHECK);
    if (st != CG_OK)
        return st;
    if (out->converts != CG_GATE_PASS) {
        snprintf(out->reason, sizeof out->reason, "gate 1 (converts): %.480s",
                 out->converts_detail);
        return CG_OK;
    }
    gate3_early early;
    memset(&early, 0, sizeof early);
    st = gate_runs(model, opt, out, &early, err);
    if (early.j && (st != CG_OK || out->runs != CG_GATE_PASS)) {
        /* gate 3 does not run: its early start undone */
        cg_judge_free(early.j);
        cg_parity_report_free(&out->judged);
    }
    if (st != CG_OK)
        return st;
    if (out->runs != CG_GATE_PASS) {
        snprintf(out->reason, sizeof out->reason, "gate 2 (runs where intended): %.590s",
                 out->runs_detail);
        return CG_OK;
    }
    if ((st = gate_matches(model, opt, out, &early, hold, err)) != CG_OK)
        return st;
    if (out->matches != CG_GATE_PASS) {
        const cg_bisect_tensor *t = &out->bisect.first_divergent;
        if (out->bisected && out->bisect.diverged)
            snprintf(out->reason, sizeof out->reason,
                     "gate 3 (matches): %.180s; first tensor beyond %s: '%.50s' from %.30s "
                     "'%.50s': %.200s", out->matches_short,
                     out->bisect.by_noise ? "its noise floor" : "tolerance", t->tensor,
                     t->op_type, t->node,
                     out->bisect.by_noise ? out->bisect.verdict_reason
                                          : cg_bisect_triage_name(out->bisect.triage));
        else
            snprintf(out->reason, sizeof out->reason, "gate 3 (matches): %.480s",
                     out->matches_detail);
        return CG_OK;
    }
    out->pass = true;
    snprintf(out->reason, sizeof out->reason,
             "converts, %.200s (%zu partition%s), %.250s", out->residency, out->partitions,
             out->partitions == 1 ? "" : "s", out->matches_detail);
    return CG_OK;
}

cg_status cg_gate_run(const cg_model *model, const char *model_path, const cg_gate_options *opt,
                      cg_gate_report *out, cg_error *err)
{
    if (!out)
        return cg_error_set(err, CG_USAGE, "cg_gate_run: NULL report");
    memset(out, 0, sizeof *out);
    cg_lap lap;
    cg_lap_start(&lap);
    /* the gate builds up to seven runtimes over this model (typing runs,
     * the timed run, the references, the target path, bisection), most one
     * after another: held here, the aligned copies of its misaligned
     * weights are made once, not once per runtime */
    cg_weights_hold *hold = cg_runtime_hold_weights(model);
    cg_status st = gate_run(model, model_path, opt, &hold, out, err);
    cg_runtime_hold_free(hold);
    cg_lap_add(&lap, &out->timings.total_wall_s, &out->timings.total_cpu_s);
    return st;
}
