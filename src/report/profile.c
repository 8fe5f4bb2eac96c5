/*
 * Renderings of a profile (`convgate profile`, docs/cost-model.md): per-node
 * time, coverage by nodes and by time, partitions, crossings, the mixed
 * latency estimate beside the measured mixed run, and the assumptions
 * behind profiled targets' figures, as text and as JSON.
 */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "report/report.h"
#include "core/text.h"

/* How far estimate and measurement of an executing placement may differ
 * before the report flags it (the bound, docs/cost-model.md). */
#define PROFILE_AGREEMENT 0.20


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

static double target_time(const cg_profile_view *r, int t)
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

void cg_report_profile_text(FILE *f, const cg_profile_view *r)
{
    const cg_graph *g = r->model->graph;
    const cg_reference_profile *ref = r->ref;
    char lbl[160];
    double nodes_ms = ref->wall_ms - ref->overhead_ms;
    cg_text_printf(f, "Model: %s (%zu nodes)\n", r->model_path, g->node_count);
    fprintf(f, "Reference runtime (median of %zu warm runs, seeded random inputs; thread CPU "
           "time throughout):\n", ref->runs);
    fprintf(f, "  cold: init %.3f ms, first run %.3f ms (memory plan built)\n", ref->init_ms,
           ref->first_run_ms);
    fprintf(f, "  warm: %.3f ms per run = %.3f ms in nodes + %.3f ms runtime overhead\n",
           ref->wall_ms, nodes_ms > 0 ? nodes_ms : 0, ref->overhead_ms);

    node_time *order = malloc((g->node_count + 1) * sizeof *order);
    if (order) {
        for (size_t v = 0; v < g->node_count; v++)
            order[v] = (node_time){ref->node_ms[v], v};
        qsort(order, g->node_count, sizeof *order, cmp_node_time);
        size_t shown = r->top && r->top < g->node_count ? r->top : g->node_count;
        cg_text_printf(f, "Per node (warm median, costliest first%s):\n",
               shown < g->node_count ? "; --top" : "");
        cg_text_printf(f, "  %-28s %-20s %-11s %-9s %10s %6s\n", "node", "op", "class", "owner",
                       "ms", "share");
        for (size_t i = 0; i < shown; i++) {
            size_t v = order[i].node;
            double share = ref->wall_ms > 0 ? 100 * ref->node_ms[v] / ref->wall_ms : 0;
            cg_text_printf(f, "  %-28s %-20s %-11s %-9s %10.4f %5.1f%%\n",
                           node_name(g, v, lbl, sizeof lbl),
                           g->nodes[v].op_type ? g->nodes[v].op_type : "?",
                           cg_op_class_name(cg_op_class_of(g->nodes[v].op_type)), owner_of(r->a, v),
                           ref->node_ms[v], share);
        }
        if (shown < g->node_count)
            fprintf(f, "  ... %zu more\n", g->node_count - shown);
        free(order);
    }
    if (!r->a)
        return;

    const cg_assignment *a = r->a;
    const cg_cost_estimate *e = r->est;
    cg_text_printf(f, "Coverage (%zu partition%s):\n", a->partition_count,
           a->partition_count == 1 ? "" : "s");
    for (size_t t = 0; t < a->target_count; t++) {
        const cg_target *tg = a->targets[t];
        size_t on = cg_assign_count_owned(a, (int)t);
        double tt = target_time(r, (int)t);
        cg_text_printf(f, "  %s (%s %s): %zu/%zu nodes (%.1f%%); %.3f of %.3f ms reference time "
               "(%.1f%%)\n",
               tg->name, tg->kind == CG_TARGET_PROFILED ? "profiled" : "executing",
               tg->version ? tg->version : "?", on, g->node_count,
               g->node_count ? 100.0 * (double)on / (double)g->node_count : 0.0, tt,
               e->reference_ms, e->reference_ms > 0 ? 100 * tt / e->reference_ms : 0);
    }
    fprintf(f, "Partitions:\n");
    for (size_t pi = 0; pi < a->partition_count; pi++) {
        const cg_partition *p = &a->partitions[pi];
        const cg_partition_measure *pm = &r->tp->parts[pi];
        double pref = cg_cost_partition_reference_ms(a, ref->node_ms, pi);
        cg_text_printf(f, "  P%d on %s: %zu nodes, %.3f ms on the reference\n", p->id,
               a->targets[p->target]->name, p->node_count, pref);
        if (pm->executed)
            cg_text_printf(
                f,
                "      measured: alone %.3f ms = %.3f compute + %.3f boundary work in %zu "
                "crossing%s; in the mixed run %.3f ms (wall); compile %.3f ms (cold)\n",
                pm->run_ms, pm->compute_ms, pm->boundary_ms, pm->crossings,
                pm->crossings == 1 ? "" : "s", pm->in_mixed_ms, pm->compile_ms);
        else
            fprintf(f, "      ASSUMED: %.3f ms on target (reference time / class speedup); "
                   "not measured\n",
                   cg_cost_partition_assumed_ms(a, ref->node_ms, pi, r->assume));
    }
    if (r->tp->crossing_count) {
        fprintf(f, "Boundary crossings of executing partitions (measured: the delegate's "
               "copy/conversion):\n");
        for (size_t i = 0; i < r->tp->crossing_count; i++) {
            const cg_crossing_measure *c = &r->tp->crossings[i];
            char shape[200];
            shape_text(c, shape, sizeof shape);
            cg_text_printf(f, "  P%d %s '%s' %s %" PRIu64 " B %s: %.4f ms\n",
                   a->partitions[c->partition].id, c->entering ? "<-" : "->", c->tensor, shape,
                   c->bytes,
                   c->layout ? (c->entering ? "NCHW->NHWC" : "NHWC->NCHW")
                             : (c->entering ? "copy" : "written in place"),
                   c->ms);
        }
    }
    if (r->any_profiled) {
        fprintf(f, "Boundary crossings of profiled partitions (ASSUMED cost each: %g us + "
               "bytes / %g GB/s, unless the target states its own):\n",
               r->assume->boundary_fixed_us, r->assume->bandwidth_gbps);
        for (size_t i = 0; i < a->boundary_count; i++) {
            const cg_boundary *b = &a->boundaries[i];
            cg_text_printf(f, "  '%s' %s%d -> %s%d: %" PRIu64 " B%s: %.4f ms\n", b->tensor,
                   b->from_partition < 0 ? "cpu" : "P",
                   b->from_partition < 0 ? 0 : b->from_partition,
                   b->to_partition < 0 ? "cpu" : "P", b->to_partition < 0 ? 0 : b->to_partition,
                   b->bytes, b->known ? "" : " (shape unknown: fixed cost only)",
                   cg_cost_crossing_ms(r->assume, a, b));
        }
    }
    cg_text_printf(f, "Mixed latency estimate: %.3f on target + %.3f CPU remainder + %.3f boundary "
           "(%lld crossing%s) = %.3f ms; reference %.3f ms; speedup %.2fx\n",
           e->accelerated_ms, e->remainder_ms, e->boundary_ms, (long long)e->crossings,
           e->crossings == 1 ? "" : "s", e->mixed_ms, e->reference_ms,
           e->mixed_ms > 0 ? e->reference_ms / e->mixed_ms : 0);
    if (e->valid_latency)
        fprintf(f, "  Amdahl form: f = %.4f, S = %.3f, beta = %.4f -> %.2fx\n", e->latency.amdahl_f,
               e->latency.amdahl_s, e->latency.amdahl_beta, e->latency.amdahl_speedup);
    if (r->tp->all_executing) {
        double ratio = r->tp->mixed_wall_ms > 0 ? e->mixed_ms / r->tp->mixed_wall_ms : 0;
        fprintf(f, "Measured mixed run: %.3f ms warm (init with compiles %.3f ms, cold)\n",
               r->tp->mixed_wall_ms, r->tp->mixed_init_ms);
        cg_text_printf(f, "  estimate / measured = %.3f (%s the +-%.0f%% bound)\n", ratio,
               fabs(ratio - 1) <= PROFILE_AGREEMENT ? "within" : "OUTSIDE",
               100 * PROFILE_AGREEMENT);
    } else if (a->partition_count) {
        fprintf(f, "Measured mixed run: not comparable (profiled partitions run on the reference "
               "kernels here)\n");
    }
    if (r->any_profiled) {
        fprintf(f, "ASSUMPTIONS (not measurements) behind the profiled targets' figures:\n  "
               "speedup per op class:");
        for (int c = 0; c < CG_OP_CLASS_COUNT; c++)
            cg_text_printf(f, "%s %s %g", c ? "," : "", cg_op_class_name((cg_op_class)c),
                   r->assume->speedup[c]);
        fprintf(f, "\n  boundary: %g us per crossing + bytes / %g GB/s\n",
               r->assume->boundary_fixed_us, r->assume->bandwidth_gbps);
    }
    cg_text_printf(f, "Verdict: %s\n", r->verdict);
    for (size_t i = 0; i < r->note_count; i++)
        cg_text_printf(f, "Note: %s\n", r->notes[i]);
}

json_t *cg_report_profile_json(const cg_profile_view *r)
{
    const cg_graph *g = r->model->graph;
    const cg_reference_profile *ref = r->ref;
    char lbl[160];
    json_t *root = json_object(), *jr = json_object(), *nodes = json_array();
    if (!root)
        return NULL;
    cg_json_set(root, "model", cg_json_text(r->model_path));
    cg_json_set(root, "runs", json_integer((json_int_t)ref->runs));
    cg_json_set(root, "reference", jr);
    cg_json_set(jr, "init_ms", cg_json_number(ref->init_ms));
    cg_json_set(jr, "first_run_ms", cg_json_number(ref->first_run_ms));
    cg_json_set(jr, "wall_ms", cg_json_number(ref->wall_ms));
    cg_json_set(jr, "overhead_ms", cg_json_number(ref->overhead_ms));
    cg_json_set(root, "nodes", nodes);
    for (size_t v = 0; v < g->node_count; v++) {
        json_t *n = json_object();
        json_array_append_new(nodes, n);
        cg_json_set(n, "index", json_integer((json_int_t)v));
        cg_json_set(n, "name", cg_json_text(node_name(g, v, lbl, sizeof lbl)));
        cg_json_set(n, "op_type",
                            cg_json_text(g->nodes[v].op_type ? g->nodes[v].op_type : "?"));
        cg_json_set(n, "class",
                            cg_json_text(cg_op_class_name(cg_op_class_of(g->nodes[v].op_type))));
        cg_json_set(n, "owner", cg_json_text(owner_of(r->a, v)));
        cg_json_set(n, "ms", cg_json_number(ref->node_ms[v]));
    }
    if (!r->a)
        return root;
    const cg_assignment *a = r->a;
    const cg_cost_estimate *e = r->est;
    json_t *targets = json_array(), *cov = json_object(), *parts = json_array(),
           *cross = json_array(), *est = json_object(), *verdict = json_object();
    cg_json_set(root, "targets", targets);
    for (size_t t = 0; t < a->target_count; t++) {
        const cg_target *tg = a->targets[t];
        json_t *jt = json_object();
        size_t on = cg_assign_count_owned(a, (int)t);
        double tt = target_time(r, (int)t);
        json_array_append_new(targets, jt);
        cg_json_set(jt, "name", cg_json_text(tg->name));
        cg_json_set(jt, "kind", cg_json_text(tg->kind == CG_TARGET_PROFILED
                                                        ? "profiled" : "executing"));
        cg_json_set(jt, "version", tg->version ? cg_json_text(tg->version) : json_null());
        cg_json_set(jt, "nodes", json_integer((json_int_t)on));
        cg_json_set(jt, "node_coverage",
                            cg_json_number(g->node_count ? (double)on / (double)g->node_count : 0));
        cg_json_set(jt, "time_ms", cg_json_number(tt));
        cg_json_set(jt, "time_coverage",
                            cg_json_number(e->reference_ms > 0 ? tt / e->reference_ms : 0));
    }
    cg_json_set(root, "coverage", cov);
    cg_json_set(cov, "nodes_total", json_integer((json_int_t)e->nodes_total));
    cg_json_set(cov, "nodes_on_target", json_integer((json_int_t)e->nodes_on_target));
    cg_json_set(cov, "node_share",
                        cg_json_number(e->nodes_total ? (double)e->nodes_on_target /
                                                       (double)e->nodes_total : 0));
    cg_json_set(cov, "time_share", cg_json_number(e->time_coverage));
    cg_json_set(root, "partitions", parts);
    for (size_t pi = 0; pi < a->partition_count; pi++) {
        const cg_partition_measure *pm = &r->tp->parts[pi];
        json_t *jp = json_object();
        json_array_append_new(parts, jp);
        cg_json_set(jp, "id", json_integer(a->partitions[pi].id));
        cg_json_set(jp, "target",
                            cg_json_text(a->targets[a->partitions[pi].target]->name));
        cg_json_set(jp, "nodes", json_integer((json_int_t)a->partitions[pi].node_count));
        cg_json_set(jp, "reference_ms",
                            cg_json_number(cg_cost_partition_reference_ms(a, ref->node_ms, pi)));
        cg_json_set(jp, "measured", json_boolean(pm->executed));
        if (pm->executed) {
            cg_json_set(jp, "compile_ms", cg_json_number(pm->compile_ms));
            cg_json_set(jp, "run_ms", cg_json_number(pm->run_ms));
            cg_json_set(jp, "compute_ms", cg_json_number(pm->compute_ms));
            cg_json_set(jp, "boundary_ms", cg_json_number(pm->boundary_ms));
            cg_json_set(jp, "crossings", json_integer((json_int_t)pm->crossings));
            cg_json_set(jp, "in_mixed_ms", cg_json_number(pm->in_mixed_ms));
        } else {
            cg_json_set(jp, "assumed_ms", cg_json_number(cg_cost_partition_assumed_ms(
                                                      a, ref->node_ms, pi, r->assume)));
        }
    }
    cg_json_set(root, "crossings", cross);
    for (size_t i = 0; i < r->tp->crossing_count; i++) {
        const cg_crossing_measure *c = &r->tp->crossings[i];
        json_t *jc = json_object(), *shape = json_array();
        json_array_append_new(cross, jc);
        cg_json_set(jc, "partition", json_integer(a->partitions[c->partition].id));
        cg_json_set(jc, "tensor", cg_json_text(c->tensor));
        cg_json_set(jc, "direction", cg_json_text(c->entering ? "in" : "out"));
        cg_json_set(jc, "shape", shape);
        for (int d = 0; d < c->rank; d++)
            json_array_append_new(shape, json_integer((json_int_t)c->dims[d]));
        cg_json_set(jc, "bytes", json_integer((json_int_t)c->bytes));
        cg_json_set(jc, "layout_conversion", json_boolean(c->layout));
        cg_json_set(jc, "ms", cg_json_number(c->ms));
    }
    cg_json_set(root, "estimate", est);
    cg_json_set(est, "reference_ms", cg_json_number(e->reference_ms));
    cg_json_set(est, "inside_ms", cg_json_number(e->inside_ms));
    cg_json_set(est, "accelerated_ms", cg_json_number(e->accelerated_ms));
    cg_json_set(est, "remainder_ms", cg_json_number(e->remainder_ms));
    cg_json_set(est, "boundary_ms", cg_json_number(e->boundary_ms));
    cg_json_set(est, "crossings", json_integer((json_int_t)e->crossings));
    cg_json_set(est, "mixed_ms", cg_json_number(e->mixed_ms));
    cg_json_set(est, "speedup",
                        cg_json_number(e->mixed_ms > 0 ? e->reference_ms / e->mixed_ms : 0));
    cg_json_set(est, "assumed", json_boolean(e->assumed));
    if (e->valid_latency) {
        json_t *am = json_object();
        cg_json_set(est, "amdahl", am);
        cg_json_set(am, "f", cg_json_number(e->latency.amdahl_f));
        cg_json_set(am, "s", cg_json_number(e->latency.amdahl_s));
        cg_json_set(am, "beta", cg_json_number(e->latency.amdahl_beta));
        cg_json_set(am, "speedup", cg_json_number(e->latency.amdahl_speedup));
    }
    if (r->tp->all_executing) {
        json_t *m = json_object();
        double ratio = r->tp->mixed_wall_ms > 0 ? e->mixed_ms / r->tp->mixed_wall_ms : 0;
        cg_json_set(root, "measured", m);
        cg_json_set(m, "mixed_ms", cg_json_number(r->tp->mixed_wall_ms));
        cg_json_set(m, "init_ms", cg_json_number(r->tp->mixed_init_ms));
        cg_json_set(root, "estimate_over_measured", cg_json_number(ratio));
        cg_json_set(root, "agreement_bound", cg_json_number(PROFILE_AGREEMENT));
        cg_json_set(root, "within_bound",
                            json_boolean(fabs(ratio - 1) <= PROFILE_AGREEMENT));
    } else {
        cg_json_set(root, "measured", json_null());
    }
    if (r->any_profiled) {
        json_t *as = json_object(), *sp = json_object();
        cg_json_set(root, "assumptions", as);
        cg_json_set(as, "speedup", sp);
        for (int c = 0; c < CG_OP_CLASS_COUNT; c++)
            cg_json_set(sp, cg_op_class_name((cg_op_class)c),
                                cg_json_number(r->assume->speedup[c]));
        cg_json_set(as, "boundary_us", cg_json_number(r->assume->boundary_fixed_us));
        cg_json_set(as, "bandwidth_gbps", cg_json_number(r->assume->bandwidth_gbps));
    } else {
        cg_json_set(root, "assumptions", json_null());
    }
    cg_json_set(root, "verdict", verdict);
    cg_json_set(verdict, "text", cg_json_text(r->verdict));
    cg_json_set(verdict, "time_coverage", cg_json_number(e->time_coverage));
    cg_json_set(verdict, "estimate_ms", cg_json_number(e->mixed_ms));
    cg_json_set(verdict, "fallback_dominates", json_boolean(e->fallback_dominates));
    cg_json_set(verdict, "boundary_exceeds_gain",
                        json_boolean(e->boundary_exceeds_gain));
    return root;
}

