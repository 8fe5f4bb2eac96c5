/*
 * convgate profile: where a model's time goes on the reference runtime, and
 * what a placement on the given targets costs: per-node warm times, cold
 * times apart, per partition and per boundary crossing, coverage by node
 * count and by time, and the mixed-latency estimate beside the measured
 * mixed run for executing targets (src/cost/profile.c,
 * docs/cost-model.md). Profiled targets are costed from assumptions, which
 * the report prints as such.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "convgate/assign.h"
#include "convgate/model.h"
#include "convgate/profile.h"
#include "target/registry.h"

#define PROFILE_MAX_TARGETS 16
#define PROFILE_MAX_DIMS 64
#define PROFILE_DEFAULT_RUNS 10
/* How far estimate and measurement of an executing placement may differ
 * before the report flags it (the bound, docs/cost-model.md). */
#define PROFILE_AGREEMENT 0.20

static void profile_usage(FILE *f)
{
    cg_cost_assumptions d;
    cg_cost_assumptions_default(&d);
    fprintf(f,
            "Usage: convgate profile MODEL [--target T[,T2...]] [--runs N] [--dim S=V]...\n"
            "                        [--speedup CLASS=S]... [--boundary-us U]\n"
            "                        [--bandwidth-gbps G] [--seed N] [--top K]\n"
            "                        [--profiles DIR] [--json]\n"
            "\n"
            "Times the model on the reference runtime (per node, median of N warm runs;\n"
            "init and the first run reported apart as cold) on seeded random inputs. With\n"
            "--target, places it (as `convgate assign`) and reports coverage by node count\n"
            "and by time, each partition and boundary crossing, and the mixed latency\n"
            "estimate = time on target + unchanged CPU remainder + boundary cost.\n"
            "Executing targets (xnnpack) are measured: each partition compiled and run\n"
            "alone, each crossing timed as the copy/NCHW<->NHWC conversion the delegate\n"
            "does, and the real mixed run printed beside the estimate with their ratio.\n"
            "Profiled targets are costed from ASSUMPTIONS (per-op-class speedups, a fixed\n"
            "cost per crossing plus bytes over a bandwidth), printed as such.\n"
            "\n"
            "Options:\n"
            "  --target T[,T2...]    targets in priority order (repeatable)\n"
            "  --runs N              warm runs per median (default %d)\n"
            "  --dim SYMBOL=VALUE    size of a symbolic input dim (repeatable; else 1)\n"
            "  --seed N              seed of the random inputs (default 0)\n"
            "  --speedup CLASS=S     assumed speedup of an op class on profiled targets\n"
            "                        (repeatable; CLASS all sets every class). Defaults:",
            PROFILE_DEFAULT_RUNS);
    for (int c = 0; c < CG_OP_CLASS_COUNT; c++)
        fprintf(f, "%s %s=%g", c ? "," : "", cg_op_class_name((cg_op_class)c), d.speedup[c]);
    fprintf(f,
            "\n"
            "  --boundary-us U       assumed fixed cost per crossing (default %g us)\n"
            "  --bandwidth-gbps G    assumed crossing bandwidth (default %g GB/s)\n"
            "  --top K               text: list only the K costliest nodes (default all)\n"
            "  --profiles DIR        capability profiles directory\n"
            "  --json                the report as JSON\n"
            "  -h, --help            this help\n"
            "\n"
            "Exit status: 0 report printed; 2 usage or input error.\n",
            d.boundary_fixed_us, d.bandwidth_gbps);
}

/* Parses "SYM=VAL" into dims (replacing an earlier SYM). */
static bool parse_dim(const char *arg, cg_dim_binding *dims, size_t *count)
{
    const char *eq = strchr(arg, '=');
    char *end;
    if (!eq || eq == arg || !eq[1]) {
        cli_error("profile", "--dim expects SYMBOL=VALUE, got '%s'", arg);
        return false;
    }
    errno = 0;
    long long v = strtoll(eq + 1, &end, 10);
    if (errno || *end || v < 1 || v > INT32_MAX) {
        cli_error("profile", "--dim %s: the size must be an integer in [1, %d]", arg,
                  INT32_MAX);
        return false;
    }
    /* the symbol is the prefix of arg: argv outlives the run, cut it in place */
    ((char *)arg)[eq - arg] = '\0';
    for (size_t k = 0; k < *count; k++)
        if (strcmp(dims[k].symbol, arg) == 0) {
            dims[k].value = v;
            return true;
        }
    if (*count == PROFILE_MAX_DIMS) {
        cli_error("profile", "more than %d --dim values", PROFILE_MAX_DIMS);
        return false;
    }
    dims[*count].symbol = arg;
    dims[(*count)++].value = v;
    return true;
}

static bool parse_real(const char *opt, const char *text, double *out)
{
    char *end;
    double v = strtod(text, &end);
    if (end == text || *end || !isfinite(v)) {
        cli_error("profile", "--%s expects a finite number, got '%s'", opt, text);
        return false;
    }
    *out = v;
    return true;
}

static bool parse_size(const char *opt, const char *text, size_t lo, size_t hi, size_t *out)
{
    char *end;
    errno = 0;
    unsigned long long v = strtoull(text, &end, 10);
    if (errno || end == text || *end || text[0] == '-' || v < lo || v > hi) {
        cli_error("profile", "--%s expects an integer in [%zu, %zu], got '%s'", opt, lo, hi,
                  text);
        return false;
    }
    *out = (size_t)v;
    return true;
}

static bool parse_speedup(const char *arg, cg_cost_assumptions *as)
{
    const char *eq = strchr(arg, '=');
    char cls[32];
    double s;
    if (!eq || eq == arg || (size_t)(eq - arg) >= sizeof cls) {
        cli_error("profile", "--speedup expects CLASS=S, got '%s'", arg);
        return false;
    }
    memcpy(cls, arg, (size_t)(eq - arg));
    cls[eq - arg] = '\0';
    if (!parse_real("speedup", eq + 1, &s))
        return false;
    if (s <= 0) {
        cli_error("profile", "--speedup %s: the speedup must be > 0", arg);
        return false;
    }
    cg_op_class c;
    if (strcmp(cls, "all") == 0) {
        for (int k = 0; k < CG_OP_CLASS_COUNT; k++)
            as->speedup[k] = s;
        return true;
    }
    if (!cg_op_class_from_name(cls, &c)) {
        cli_error("profile", "--speedup %s: unknown op class '%s' (classes: conv, matmul, "
                  "pool, norm, elementwise, reduce, data, other, all)", arg, cls);
        return false;
    }
    as->speedup[c] = s;
    return true;
}

/* Everything the report is rendered from. */
typedef struct profile_report {
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
} profile_report;

static const char *node_name(const cg_graph *g, size_t v, char *buf, size_t len)
{
    if (g->nodes[v].name && g->nodes[v].name[0])
        return g->nodes[v].name;
    snprintf(buf, len, "#%zu", v);
    return buf;
}

static const char *owner_of(const cg_assignment *a, size_t v)
{
    if (!a || a->owner[v] == CG_OWNER_CPU)
        return "cpu";
    return a->targets[a->owner[v]]->name;
}

static double target_time(const profile_report *r, int t)
{
    double s = 0;
    for (size_t v = 0; v < r->model->graph->node_count; v++)
        if (r->a->owner[v] == t)
            s += r->ref->node_ms[v];
    return s;
}

static void shape_text(const cg_crossing_measure *c, char *buf, size_t len)
{
    size_t used = 0;
    int k = snprintf(buf, len, "[");
    for (int d = 0; d < c->rank && k > 0 && (used += (size_t)k) < len; d++)
        k = snprintf(buf + used, len - used, d ? ",%" PRId64 : "%" PRId64, c->dims[d]);
    if (k > 0 && (used += (size_t)k) < len)
        snprintf(buf + used, len - used, "]");
}

typedef struct node_time {
    double ms;
    size_t node;
} node_time;

/* costliest first, model order among equals */
static int cmp_node_time(const void *x, const void *y)
{
    const node_time *a = x, *b = y;
    if (a->ms != b->ms)
        return a->ms < b->ms ? 1 : -1;
    return (a->node > b->node) - (a->node < b->node);
}

static void report_text(const profile_report *r)
{
    const cg_graph *g = r->model->graph;
    const cg_reference_profile *ref = r->ref;
    char lbl[160];
    double nodes_ms = ref->wall_ms - ref->overhead_ms;
    printf("Model: %s (%zu nodes)\n", r->model_path, g->node_count);
    printf("Reference runtime (median of %zu warm runs, seeded random inputs; thread CPU "
           "time throughout):\n", ref->runs);
    printf("  cold: init %.3f ms, first run %.3f ms (memory plan built)\n", ref->init_ms,
           ref->first_run_ms);
    printf("  warm: %.3f ms per run = %.3f ms in nodes + %.3f ms runtime overhead\n",
           ref->wall_ms, nodes_ms > 0 ? nodes_ms : 0, ref->overhead_ms);

    node_time *order = malloc((g->node_count + 1) * sizeof *order);
    if (order) {
        for (size_t v = 0; v < g->node_count; v++)
            order[v] = (node_time){ref->node_ms[v], v};
        qsort(order, g->node_count, sizeof *order, cmp_node_time);
        size_t shown = r->top && r->top < g->node_count ? r->top : g->node_count;
        printf("Per node (warm median, costliest first%s):\n",
               shown < g->node_count ? "; --top" : "");
        printf("  %-28s %-20s %-11s %-9s %10s %6s\n", "node", "op", "class", "owner", "ms",
               "share");
        for (size_t i = 0; i < shown; i++) {
            size_t v = order[i].node;
            double share = ref->wall_ms > 0 ? 100 * ref->node_ms[v] / ref->wall_ms : 0;
            printf("  %-28s %-20s %-11s %-9s %10.4f %5.1f%%\n", node_name(g, v, lbl, sizeof lbl),
                   g->nodes[v].op_type ? g->nodes[v].op_type : "?",
                   cg_op_class_name(cg_op_class_of(g->nodes[v].op_type)), owner_of(r->a, v),
                   ref->node_ms[v], share);
        }
        if (shown < g->node_count)
            printf("  ... %zu more\n", g->node_count - shown);
        free(order);
    }
    if (!r->a)
        return;

    const cg_assignment *a = r->a;
    const cg_cost_estimate *e = r->est;
    printf("Coverage (%zu partition%s):\n", a->partition_count,
           a->partition_count == 1 ? "" : "s");
    for (size_t t = 0; t < a->target_count; t++) {
        const cg_target *tg = a->targets[t];
        size_t on = cg_assign_count_owned(a, (int)t);
        double tt = target_time(r, (int)t);
        printf("  %s (%s %s): %zu/%zu nodes (%.1f%%); %.3f of %.3f ms reference time "
               "(%.1f%%)\n",
               tg->name, tg->kind == CG_TARGET_PROFILED ? "profiled" : "executing",
               tg->version ? tg->version : "?", on, g->node_count,
               g->node_count ? 100.0 * (double)on / (double)g->node_count : 0.0, tt,
               e->reference_ms, e->reference_ms > 0 ? 100 * tt / e->reference_ms : 0);
    }
    printf("Partitions:\n");
    for (size_t pi = 0; pi < a->partition_count; pi++) {
        const cg_partition *p = &a->partitions[pi];
        const cg_partition_measure *pm = &r->tp->parts[pi];
        double pref = cg_cost_partition_reference_ms(a, ref->node_ms, pi);
        printf("  P%d on %s: %zu nodes, %.3f ms on the reference\n", p->id,
               a->targets[p->target]->name, p->node_count, pref);
        if (pm->executed)
            printf("      measured: alone %.3f ms = %.3f compute + %.3f boundary work in %zu "
                   "crossing%s; in the mixed run %.3f ms (wall); compile %.3f ms (cold)\n",
                   pm->run_ms, pm->compute_ms, pm->boundary_ms, pm->crossings,
                   pm->crossings == 1 ? "" : "s", pm->in_mixed_ms, pm->compile_ms);
        else
            printf("      ASSUMED: %.3f ms on target (reference time / class speedup); "
                   "not measured\n",
                   cg_cost_partition_assumed_ms(a, ref->node_ms, pi, r->assume));
    }
    if (r->tp->crossing_count) {
        printf("Boundary crossings of executing partitions (measured: the delegate's "
               "copy/conversion):\n");
        for (size_t i = 0; i < r->tp->crossing_count; i++) {
            const cg_crossing_measure *c = &r->tp->crossings[i];
            char shape[200];
            shape_text(c, shape, sizeof shape);
            printf("  P%d %s '%s' %s %" PRIu64 " B %s: %.4f ms\n",
                   a->partitions[c->partition].id, c->entering ? "<-" : "->", c->tensor, shape,
                   c->bytes,
                   c->layout ? (c->entering ? "NCHW->NHWC" : "NHWC->NCHW")
                             : (c->entering ? "copy" : "written in place"),
                   c->ms);
        }
    }
    if (r->any_profiled) {
        printf("Boundary crossings of profiled partitions (ASSUMED cost each: %g us + "
               "bytes / %g GB/s):\n", r->assume->boundary_fixed_us, r->assume->bandwidth_gbps);
        for (size_t i = 0; i < a->boundary_count; i++) {
            const cg_boundary *b = &a->boundaries[i];
            printf("  '%s' %s%d -> %s%d: %" PRIu64 " B%s: %.4f ms\n", b->tensor,
                   b->from_partition < 0 ? "cpu" : "P",
                   b->from_partition < 0 ? 0 : b->from_partition,
                   b->to_partition < 0 ? "cpu" : "P", b->to_partition < 0 ? 0 : b->to_partition,
                   b->bytes, b->known ? "" : " (shape unknown: fixed cost only)",
                   cg_cost_assumed_crossing_ms(r->assume, b->known ? b->bytes : 0));
        }
    }
    printf("Mixed latency estimate: %.3f on target + %.3f CPU remainder + %.3f boundary "
           "(%lld crossing%s) = %.3f ms; reference %.3f ms; speedup %.2fx\n",
           e->accelerated_ms, e->remainder_ms, e->boundary_ms, (long long)e->crossings,
           e->crossings == 1 ? "" : "s", e->mixed_ms, e->reference_ms,
           e->mixed_ms > 0 ? e->reference_ms / e->mixed_ms : 0);
    if (e->valid_latency)
        printf("  Amdahl form: f = %.4f, S = %.3f, beta = %.4f -> %.2fx\n", e->latency.amdahl_f,
               e->latency.amdahl_s, e->latency.amdahl_beta, e->latency.amdahl_speedup);
    if (r->tp->all_executing) {
        double ratio = r->tp->mixed_wall_ms > 0 ? e->mixed_ms / r->tp->mixed_wall_ms : 0;
        printf("Measured mixed run: %.3f ms warm (init with compiles %.3f ms, cold)\n",
               r->tp->mixed_wall_ms, r->tp->mixed_init_ms);
        printf("  estimate / measured = %.3f (%s the +-%.0f%% bound)\n", ratio,
               fabs(ratio - 1) <= PROFILE_AGREEMENT ? "within" : "OUTSIDE",
               100 * PROFILE_AGREEMENT);
    } else if (a->partition_count) {
        printf("Measured mixed run: not comparable (profiled partitions run on the reference "
               "kernels here)\n");
    }
    if (r->any_profiled) {
        printf("ASSUMPTIONS (not measurements) behind the profiled targets' figures:\n  "
               "speedup per op class:");
        for (int c = 0; c < CG_OP_CLASS_COUNT; c++)
            printf("%s %s %g", c ? "," : "", cg_op_class_name((cg_op_class)c),
                   r->assume->speedup[c]);
        printf("\n  boundary: %g us per crossing + bytes / %g GB/s\n",
               r->assume->boundary_fixed_us, r->assume->bandwidth_gbps);
    }
    printf("Verdict: %s\n", r->verdict);
    for (size_t i = 0; i < r->note_count; i++)
        printf("Note: %s\n", r->notes[i]);
}

static json_t *report_json(const profile_report *r)
{
    const cg_graph *g = r->model->graph;
    const cg_reference_profile *ref = r->ref;
    char lbl[160];
    json_t *root = json_object(), *jr = json_object(), *nodes = json_array();
    if (!root)
        return NULL;
    json_object_set_new(root, "model", json_string(r->model_path));
    json_object_set_new(root, "runs", json_integer((json_int_t)ref->runs));
    json_object_set_new(root, "reference", jr);
    json_object_set_new(jr, "init_ms", json_real(ref->init_ms));
    json_object_set_new(jr, "first_run_ms", json_real(ref->first_run_ms));
    json_object_set_new(jr, "wall_ms", json_real(ref->wall_ms));
    json_object_set_new(jr, "overhead_ms", json_real(ref->overhead_ms));
    json_object_set_new(root, "nodes", nodes);
    for (size_t v = 0; v < g->node_count; v++) {
        json_t *n = json_object();
        json_array_append_new(nodes, n);
        json_object_set_new(n, "index", json_integer((json_int_t)v));
        json_object_set_new(n, "name", json_string(node_name(g, v, lbl, sizeof lbl)));
        json_object_set_new(n, "op_type",
                            json_string(g->nodes[v].op_type ? g->nodes[v].op_type : "?"));
        json_object_set_new(n, "class",
                            json_string(cg_op_class_name(cg_op_class_of(g->nodes[v].op_type))));
        json_object_set_new(n, "owner", json_string(owner_of(r->a, v)));
        json_object_set_new(n, "ms", json_real(ref->node_ms[v]));
    }
    if (!r->a)
        return root;
    const cg_assignment *a = r->a;
    const cg_cost_estimate *e = r->est;
    json_t *targets = json_array(), *cov = json_object(), *parts = json_array(),
           *cross = json_array(), *est = json_object(), *verdict = json_object();
    json_object_set_new(root, "targets", targets);
    for (size_t t = 0; t < a->target_count; t++) {
        const cg_target *tg = a->targets[t];
        json_t *jt = json_object();
        size_t on = cg_assign_count_owned(a, (int)t);
        double tt = target_time(r, (int)t);
        json_array_append_new(targets, jt);
        json_object_set_new(jt, "name", json_string(tg->name));
        json_object_set_new(jt, "kind", json_string(tg->kind == CG_TARGET_PROFILED
                                                        ? "profiled" : "executing"));
        json_object_set_new(jt, "version", tg->version ? json_string(tg->version) : json_null());
        json_object_set_new(jt, "nodes", json_integer((json_int_t)on));
        json_object_set_new(jt, "node_coverage",
                            json_real(g->node_count ? (double)on / (double)g->node_count : 0));
        json_object_set_new(jt, "time_ms", json_real(tt));
        json_object_set_new(jt, "time_coverage",
                            json_real(e->reference_ms > 0 ? tt / e->reference_ms : 0));
    }
    json_object_set_new(root, "coverage", cov);
    json_object_set_new(cov, "nodes_total", json_integer((json_int_t)e->nodes_total));
    json_object_set_new(cov, "nodes_on_target", json_integer((json_int_t)e->nodes_on_target));
    json_object_set_new(cov, "node_share",
                        json_real(e->nodes_total ? (double)e->nodes_on_target /
                                                       (double)e->nodes_total : 0));
    json_object_set_new(cov, "time_share", json_real(e->time_coverage));
    json_object_set_new(root, "partitions", parts);
    for (size_t pi = 0; pi < a->partition_count; pi++) {
        const cg_partition_measure *pm = &r->tp->parts[pi];
        json_t *jp = json_object();
        json_array_append_new(parts, jp);
        json_object_set_new(jp, "id", json_integer(a->partitions[pi].id));
        json_object_set_new(jp, "target",
                            json_string(a->targets[a->partitions[pi].target]->name));
        json_object_set_new(jp, "nodes", json_integer((json_int_t)a->partitions[pi].node_count));
        json_object_set_new(jp, "reference_ms",
                            json_real(cg_cost_partition_reference_ms(a, ref->node_ms, pi)));
        json_object_set_new(jp, "measured", json_boolean(pm->executed));
        if (pm->executed) {
            json_object_set_new(jp, "compile_ms", json_real(pm->compile_ms));
            json_object_set_new(jp, "run_ms", json_real(pm->run_ms));
            json_object_set_new(jp, "compute_ms", json_real(pm->compute_ms));
            json_object_set_new(jp, "boundary_ms", json_real(pm->boundary_ms));
            json_object_set_new(jp, "crossings", json_integer((json_int_t)pm->crossings));
            json_object_set_new(jp, "in_mixed_ms", json_real(pm->in_mixed_ms));
        } else {
            json_object_set_new(jp, "assumed_ms", json_real(cg_cost_partition_assumed_ms(
                                                      a, ref->node_ms, pi, r->assume)));
        }
    }
    json_object_set_new(root, "crossings", cross);
    for (size_t i = 0; i < r->tp->crossing_count; i++) {
        const cg_crossing_measure *c = &r->tp->crossings[i];
        json_t *jc = json_object(), *shape = json_array();
        json_array_append_new(cross, jc);
        json_object_set_new(jc, "partition", json_integer(a->partitions[c->partition].id));
        json_object_set_new(jc, "tensor", json_string(c->tensor));
        json_object_set_new(jc, "direction", json_string(c->entering ? "in" : "out"));
        json_object_set_new(jc, "shape", shape);
        for (int d = 0; d < c->rank; d++)
            json_array_append_new(shape, json_integer((json_int_t)c->dims[d]));
        json_object_set_new(jc, "bytes", json_integer((json_int_t)c->bytes));
        json_object_set_new(jc, "layout_conversion", json_boolean(c->layout));
        json_object_set_new(jc, "ms", json_real(c->ms));
    }
    json_object_set_new(root, "estimate", est);
    json_object_set_new(est, "reference_ms", json_real(e->reference_ms));
    json_object_set_new(est, "inside_ms", json_real(e->inside_ms));
    json_object_set_new(est, "accelerated_ms", json_real(e->accelerated_ms));
    json_object_set_new(est, "remainder_ms", json_real(e->remainder_ms));
    json_object_set_new(est, "boundary_ms", json_real(e->boundary_ms));
    json_object_set_new(est, "crossings", json_integer((json_int_t)e->crossings));
    json_object_set_new(est, "mixed_ms", json_real(e->mixed_ms));
    json_object_set_new(est, "speedup",
                        json_real(e->mixed_ms > 0 ? e->reference_ms / e->mixed_ms : 0));
    json_object_set_new(est, "assumed", json_boolean(e->assumed));
    if (e->valid_latency) {
        json_t *am = json_object();
        json_object_set_new(est, "amdahl", am);
        json_object_set_new(am, "f", json_real(e->latency.amdahl_f));
        json_object_set_new(am, "s", json_real(e->latency.amdahl_s));
        json_object_set_new(am, "beta", json_real(e->latency.amdahl_beta));
        json_object_set_new(am, "speedup", json_real(e->latency.amdahl_speedup));
    }
    if (r->tp->all_executing) {
        json_t *m = json_object();
        double ratio = r->tp->mixed_wall_ms > 0 ? e->mixed_ms / r->tp->mixed_wall_ms : 0;
        json_object_set_new(root, "measured", m);
        json_object_set_new(m, "mixed_ms", json_real(r->tp->mixed_wall_ms));
        json_object_set_new(m, "init_ms", json_real(r->tp->mixed_init_ms));
        json_object_set_new(root, "estimate_over_measured", json_real(ratio));
        json_object_set_new(root, "agreement_bound", json_real(PROFILE_AGREEMENT));
        json_object_set_new(root, "within_bound",
                            json_boolean(fabs(ratio - 1) <= PROFILE_AGREEMENT));
    } else {
        json_object_set_new(root, "measured", json_null());
    }
    if (r->any_profiled) {
        json_t *as = json_object(), *sp = json_object();
        json_object_set_new(root, "assumptions", as);
        json_object_set_new(as, "speedup", sp);
        for (int c = 0; c < CG_OP_CLASS_COUNT; c++)
            json_object_set_new(sp, cg_op_class_name((cg_op_class)c),
                                json_real(r->assume->speedup[c]));
        json_object_set_new(as, "boundary_us", json_real(r->assume->boundary_fixed_us));
        json_object_set_new(as, "bandwidth_gbps", json_real(r->assume->bandwidth_gbps));
    } else {
        json_object_set_new(root, "assumptions", json_null());
    }
    json_object_set_new(root, "verdict", verdict);
    json_object_set_new(verdict, "text", json_string(r->verdict));
    json_object_set_new(verdict, "time_coverage", json_real(e->time_coverage));
    json_object_set_new(verdict, "estimate_ms", json_real(e->mixed_ms));
    json_object_set_new(verdict, "fallback_dominates", json_boolean(e->fallback_dominates));
    json_object_set_new(verdict, "boundary_exceeds_gain",
                        json_boolean(e->boundary_exceeds_gain));
    return root;
}

int cmd_profile(int argc, char **argv)
{
    static const struct option longopts[] = {{"target", required_argument, NULL, 't'},
                                              {"runs", required_argument, NULL, 'r'},
                                              {"dim", required_argument, NULL, 'd'},
                                              {"seed", required_argument, NULL, 's'},
                                              {"speedup", required_argument, NULL, 'S'},
                                              {"boundary-us", required_argument, NULL, 'B'},
                                              {"bandwidth-gbps", required_argument, NULL, 'W'},
                                              {"top", required_argument, NULL, 'k'},
                                              {"profiles", required_argument, NULL, 'p'},
                                              {"json", no_argument, NULL, 'j'},
                                              {"help", no_argument, NULL, 'h'},
                                              {NULL, 0, NULL, 0}};
    const char *target_args[PROFILE_MAX_TARGETS];
    size_t target_arg_count = 0, dim_count = 0, runs = PROFILE_DEFAULT_RUNS, top = 0;
    size_t seed = 0, feed_count = 0, target_count = 0;
    cg_dim_binding dims[PROFILE_MAX_DIMS];
    const char *profiles = NULL;
    bool json = false;
    int rc = CG_EXIT_ERROR, c;
    cg_cost_assumptions assume;
    cg_model *model = NULL;
    cg_target_registry *reg = NULL;
    cg_type_env *types = NULL;
    cg_assignment *a = NULL;
    cg_named_value *feeds = NULL;
    cg_reference_profile ref;
    cg_target_profile tp;
    cg_cost_estimate est;
    const cg_target *targets[PROFILE_MAX_TARGETS];
    char *list = NULL;
    char verdict[2 * 1024 + 8] = "";
    cg_error err;
    cg_error_clear(&err);
    memset(&ref, 0, sizeof ref);
    memset(&tp, 0, sizeof tp);
    memset(&est, 0, sizeof est);
    cg_cost_assumptions_default(&assume);

    optind = 1;
    while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
        switch (c) {
        case 't':
            if (target_arg_count == PROFILE_MAX_TARGETS) {
                cli_error("profile", "too many --target options");
                goto done;
            }
            target_args[target_arg_count++] = optarg;
            break;
        case 'r':
            if (!parse_size("runs", optarg, 1, CG_PROFILE_MAX_RUNS, &runs))
                goto done;
            break;
        case 'd':
            if (!parse_dim(optarg, dims, &dim_count))
                goto done;
            break;
        case 's':
            if (!parse_size("seed", optarg, 0, SIZE_MAX, &seed))
                goto done;
            break;
        case 'S':
            if (!parse_speedup(optarg, &assume))
                goto done;
            break;
        case 'B':
            if (!parse_real("boundary-us", optarg, &assume.boundary_fixed_us))
                goto done;
            break;
        case 'W':
            if (!parse_real("bandwidth-gbps", optarg, &assume.bandwidth_gbps))
                goto done;
            break;
        case 'k':
            if (!parse_size("top", optarg, 1, SIZE_MAX, &top))
                goto done;
            break;
        case 'p': profiles = optarg; break;
        case 'j': json = true; break;
        case 'h': profile_usage(stdout); rc = CG_EXIT_OK; goto done;
        default: profile_usage(stderr); goto done;
        }
    }
    if (optind + 1 != argc) {
        cli_error("profile", optind >= argc ? "no model given" : "one model at a time");
        profile_usage(stderr);
        goto done;
    }
    if (cg_cost_assumptions_check(&assume, &err) != CG_OK) {
        cli_error("profile", "%s", err.msg);
        goto done;
    }
    if ((model = cli_load_model("profile", argv[optind], NULL)) == NULL)
        goto done;
    if (target_arg_count) {
        if (cg_target_registry_load(profiles, &reg, &err) != CG_OK) {
            cli_error("profile", "%s", err.msg);
            goto done;
        }
        for (size_t i = 0; i < target_arg_count; i++) {
            free(list);
            if (!(list = malloc(strlen(target_args[i]) + 1))) {
                cli_error("profile", "out of memory");
                goto done;
            }
            strcpy(list, target_args[i]);
            for (char *tok = list, *next; tok; tok = next) {
                if ((next = strchr(tok, ',')) != NULL)
                    *next++ = '\0';
                const cg_target *t = *tok ? cg_target_registry_find(reg, tok, &err) : NULL;
                if (!t) {
                    cli_error("profile", "--target %s: %s", target_args[i],
                              err.msg[0] ? err.msg : "empty target name");
                    goto done;
                }
                for (size_t k = 0; k < target_count; k++)
                    if (targets[k] == t) {
                        cli_error("profile", "target '%s' given twice", tok);
                        goto done;
                    }
                if (target_count == PROFILE_MAX_TARGETS) {
                    cli_error("profile", "more than %d targets", PROFILE_MAX_TARGETS);
                    goto done;
                }
                targets[target_count++] = t;
            }
        }
    }
    /* the type environment gives the input shapes (and the placement its types) */
    if (cg_type_env_build(model, dims, dim_count, &types, &err) != CG_OK ||
        cg_profile_feeds_make(model, types, (uint64_t)seed, &feeds, &feed_count, &err) !=
            CG_OK ||
        (!target_count &&
         cg_profile_reference(model, feeds, feed_count, runs, true, &ref, &err) != CG_OK)) {
        cli_error("profile", "%s: %s", argv[optind], err.msg);
        goto done;
    }
    profile_report r = {argv[optind], model, &assume, &ref, NULL, NULL, &est, false, verdict,
                        top, NULL, 0};
    if (target_count) {
        if (cg_assign(model, types, targets, target_count, &a, &err) != CG_OK ||
            cg_profile_target(model, types, a, feeds, feed_count, runs, &ref, &tp, &err) !=
                CG_OK) {
            cli_error("profile", "%s: %s", argv[optind], err.msg);
            goto done;
        }
        double *pms = malloc((a->partition_count + 1) * sizeof *pms);
        double *pbs = malloc((a->partition_count + 1) * sizeof *pbs);
        size_t *pks = malloc((a->partition_count + 1) * sizeof *pks);
        cg_status st = CG_NOMEM;
        if (pms && pbs && pks) {
            for (size_t pi = 0; pi < a->partition_count; pi++) {
                pms[pi] = tp.parts[pi].executed ? tp.parts[pi].compute_ms : NAN;
                pbs[pi] = tp.parts[pi].boundary_ms;
                pks[pi] = tp.parts[pi].crossings;
                r.any_profiled |= !tp.parts[pi].executed;
            }
            cg_cost_inputs in = {a, ref.node_ms, ref.overhead_ms, pms, pbs, pks, &assume};
            st = cg_cost_estimate_build(&in, &est, &err);
        } else {
            cg_error_set(&err, st, "out of memory");
        }
        free(pms);
        free(pbs);
        free(pks);
        if (st != CG_OK) {
            cli_error("profile", "%s: %s", argv[optind], err.msg);
            goto done;
        }
        r.a = a;
        r.tp = &tp;
        char base[1024], timed[1024];
        cg_assign_verdict(a, types, base, sizeof base);
        cg_cost_verdict_text(&est, a, timed, sizeof timed);
        snprintf(verdict, sizeof verdict, "%s; %s", base, timed);
    }
    r.note_count = cg_type_env_note_count(types);
    const char *notes[16];
    for (size_t i = 0; i < r.note_count && i < 16; i++)
        notes[i] = cg_type_env_note(types, i);
    if (r.note_count > 16)
        r.note_count = 16;
    r.notes = notes;

    if (json) {
        json_t *root = report_json(&r);
        char *text = root ? json_dumps(root, JSON_INDENT(2) | JSON_PRESERVE_ORDER |
                                                 JSON_REAL_PRECISION(6))
                          : NULL;
        json_decref(root);
        if (!text || puts(text) < 0) {
            free(text);
            cli_error("profile", "could not write the JSON report");
            goto done;
        }
        free(text);
    } else {
        report_text(&r);
    }
    fflush(stdout);
    rc = CG_EXIT_OK;
done:
    free(list);
    cg_target_profile_clear(&tp);
    cg_reference_profile_clear(&ref);
    cg_profile_feeds_free(feeds, feed_count);
    cg_assignment_free(a);
    cg_type_env_free(types);
    cg_target_registry_free(reg);
    cg_model_free(model);
    return rc;
}
