/*
 * Renderings of the cost arithmetic (`convgate latency`, `convgate queue`):
 * each term of the sum with its value, and the same as JSON.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "report/report.h"
#include "core/text.h"

json_t *cg_report_latency_json(const cg_latency_input *in, const cg_latency_result *r)
{
    json_t *root = json_object(), *am = json_object();
    if (!root || !am) {
        json_decref(root);
        json_decref(am);
        return NULL;
    }
    cg_json_set(root, "baseline_ms", cg_json_number(in->baseline_ms));
    cg_json_set(root, "accelerated_ms", cg_json_number(in->accelerated_ms));
    cg_json_set(root, "speedup_factor", cg_json_number(in->speedup));
    cg_json_set(root, "boundaries", json_integer((json_int_t)in->boundaries));
    cg_json_set(root, "boundary_ms", cg_json_number(in->boundary_ms));
    cg_json_set(root, "accelerated_time_ms", cg_json_number(r->accelerated_time_ms));
    cg_json_set(root, "remainder_ms", cg_json_number(r->remainder_ms));
    cg_json_set(root, "boundary_cost_ms", cg_json_number(r->boundary_cost_ms));
    cg_json_set(root, "mixed_ms", cg_json_number(r->mixed_ms));
    cg_json_set(root, "end_to_end_speedup", cg_json_number(r->end_to_end_speedup));
    cg_json_set(am, "f", cg_json_number(r->amdahl_f));
    cg_json_set(am, "S", cg_json_number(r->amdahl_s));
    cg_json_set(am, "beta", cg_json_number(r->amdahl_beta));
    cg_json_set(am, "speedup", cg_json_number(r->amdahl_speedup));
    cg_json_set(root, "amdahl", am);
    return root;
}

/* A speedup with 3 decimals, as people compare them; exponent form for the
 * absurd ones that extreme inputs produce, so a line stays a line. */
static const char *speedup_text(double v, char *buf, size_t size)
{
    snprintf(buf, size, v < 1e6 ? "%.3f" : "%.3e", v);
    return buf;
}

void cg_report_latency_text(FILE *f, const cg_latency_input *in, const cg_latency_result *r)
{
    char sp[2][32];
    char expr[3][96], val[4][40];
    snprintf(expr[0], sizeof expr[0], "%.6g ms / %.6g", in->accelerated_ms, in->speedup);
    snprintf(expr[1], sizeof expr[1], "%.6g - %.6g", in->baseline_ms, in->accelerated_ms);
    snprintf(expr[2], sizeof expr[2], "%lld x %.6g ms", (long long)in->boundaries,
             in->boundary_ms);
    snprintf(val[0], sizeof val[0], "%.6g", r->accelerated_time_ms);
    snprintf(val[1], sizeof val[1], "%.6g", r->remainder_ms);
    snprintf(val[2], sizeof val[2], "%.6g", r->boundary_cost_ms);
    snprintf(val[3], sizeof val[3], "%.6g", r->mixed_ms);
    int ew = 0, vw = 0;
    for (int i = 0; i < 3; i++)
        if ((int)strlen(expr[i]) > ew)
            ew = (int)strlen(expr[i]);
    for (int i = 0; i < 4; i++)
        if ((int)strlen(val[i]) > vw)
            vw = (int)strlen(val[i]);
    static const char *const label[3] = {"accelerated", "remainder", "boundaries"};
    for (int i = 0; i < 3; i++)
        cg_text_printf(f, "%-12s %-*s = %*s ms\n", label[i], ew, expr[i], vw, val[i]);
    /* the sum's value sits in the same column as the terms above it */
    cg_text_printf(f, "%-*s%*s ms   (speedup %sx; the accelerated part alone: %.6gx)\n",
                   12 + 1 + ew + 3, "mixed latency", vw, val[3],
                   speedup_text(r->end_to_end_speedup, sp[0], sizeof sp[0]), in->speedup);
    double diff = fabs(r->amdahl_speedup - r->end_to_end_speedup) / r->end_to_end_speedup;
    cg_text_printf(f,
                   "Amdahl: f=%.6g S=%.6g beta=%.6g -> 1/((1-f)+f/S+beta) = %s   (B/mixed = %s; "
                   "relative difference %.2g)\n",
                   r->amdahl_f, r->amdahl_s, r->amdahl_beta,
                   speedup_text(r->amdahl_speedup, sp[1], sizeof sp[1]), sp[0], diff);
}


/* (estimate - formula) / formula: the simulation's relative error. */
static double rel_diff(double estimate, double formula)
{
    return (estimate - formula) / formula;
}

/* When the fluid backlog reaches 0 for good, or -1 when it never does. */
static double drain_time(const cg_queue_view *q)
{
    double net = q->mm1.net_rate;
    if (net < 0)
        return q->q0 / -net;
    return net == 0 && q->q0 == 0 ? 0 : -1;
}

json_t *cg_report_queue_json(const cg_queue_view *q)
{
    json_t *root = json_object(), *fluid = json_array();
    if (!root || !fluid)
        goto done;
    cg_json_set(root, "lambda", cg_json_number(q->lambda));
    cg_json_set(root, "mu", cg_json_number(q->mu));
    cg_json_set(root, "backlog0", cg_json_number(q->q0));
    cg_json_set(root, "time", cg_json_number(q->t_end));
    cg_json_set(root, "step", cg_json_number(q->dt));
    cg_json_set(root, "net_rate", cg_json_number(q->mm1.net_rate));
    for (size_t i = 0; i < q->points; i++) {
        double t = cg_queue_grid_time(q->t_end, q->dt, q->points, i);
        json_t *row = json_object();
        if (!row || json_array_append_new(fluid, row) != 0)
            goto done;
        cg_json_set(row, "t", cg_json_number(t));
        cg_json_set(row, "backlog",
                            cg_json_number(cg_queue_fluid_backlog(q->q0, q->lambda, q->mu, t)));
    }
    cg_json_set(root, "fluid", fluid);
    fluid = NULL; /* owned by root now */
    double drain = drain_time(q);
    cg_json_set(root, "drain_time", drain >= 0 ? cg_json_number(drain) : json_null());
    cg_json_set(root, "stable", json_boolean(q->mm1.stable));
    if (q->mm1.stable) {
        json_t *m = json_object();
        cg_json_set(m, "rho", cg_json_number(q->mm1.rho));
        cg_json_set(m, "mean_in_system", cg_json_number(q->mm1.mean_in_system));
        cg_json_set(m, "mean_residence", cg_json_number(q->mm1.mean_residence));
        cg_json_set(m, "mean_wait", cg_json_number(q->mm1.mean_wait));
        cg_json_set(root, "mm1", m);
        cg_json_set(root, "growth_rate", json_null());
    } else {
        cg_json_set(root, "mm1", json_null());
        cg_json_set(root, "growth_rate", cg_json_number(q->mm1.net_rate));
    }
    if (q->simulated) {
        const cg_mm1_sim *s = &q->sim;
        json_t *o = json_object(), *d = json_object();
        cg_json_set(o, "customers", json_integer((json_int_t)s->customers));
        /* a JSON integer is signed 64-bit: the seed goes as a string to keep
         * all 64 bits */
        char seed[24];
        snprintf(seed, sizeof seed, "%llu", (unsigned long long)q->seed);
        cg_json_set(o, "seed", cg_json_text(seed));
        cg_json_set(o, "horizon", cg_json_number(s->horizon));
        cg_json_set(o, "mean_residence", cg_json_number(s->mean_residence));
        cg_json_set(o, "mean_wait", cg_json_number(s->mean_wait));
        cg_json_set(o, "time_avg_in_system", cg_json_number(s->time_avg_in_system));
        cg_json_set(o, "utilisation", cg_json_number(s->utilisation));
        cg_json_set(
            d, "mean_residence",
            cg_json_number(rel_diff(s->mean_residence, q->mm1.mean_residence)));
        cg_json_set(d, "mean_wait",
                            cg_json_number(rel_diff(s->mean_wait, q->mm1.mean_wait)));
        cg_json_set(
            d, "time_avg_in_system",
            cg_json_number(rel_diff(s->time_avg_in_system, q->mm1.mean_in_system)));
        cg_json_set(d, "utilisation",
                            cg_json_number(rel_diff(s->utilisation, q->mm1.rho)));
        cg_json_set(o, "relative_difference", d);
        cg_json_set(root, "simulation", o);
    } else {
        cg_json_set(root, "simulation", json_null());
    }
    return root;
done:
    json_decref(fluid);
    json_decref(root);
    return NULL;
}

/* One line of the M/M/1 table, with the simulation's estimate when there is one. */
static void mm1_row(FILE *f, const cg_queue_view *q, const char *what, const char *formula, double value,
                    const char *unit, double estimate)
{
    char v[48];
    snprintf(v, sizeof v, "%.6g%s", value, unit);
    cg_text_printf(f, "  %-20s %-12s ", what, formula);
    if (!q->simulated) {
        cg_text_printf(f, "%s\n", v);
        return;
    }
    cg_text_printf(f, "%-12s ", v);
    snprintf(v, sizeof v, "%.6g%s", estimate, unit);
    cg_text_printf(f, "%-12s %+.2f%%\n", v, 100.0 * rel_diff(estimate, value));
}

void cg_report_queue_text(FILE *f, const cg_queue_view *q)
{
    const cg_mm1 *m = &q->mm1;
    fprintf(f, "fluid backlog Q(t) = max(0, Q0 + (L - M) t): Q0=%.6g, L=%.6g/s, M=%.6g/s, "
           "net rate %+.6g/s\n",
           q->q0, q->lambda, q->mu, m->net_rate);
    cg_text_printf(f, "  %-10s %s\n", "t (s)", "Q(t)");
    for (size_t i = 0; i < q->points; i++) {
        double t = cg_queue_grid_time(q->t_end, q->dt, q->points, i);
        fprintf(f, "  %-10.6g %.6g\n", t, cg_queue_fluid_backlog(q->q0, q->lambda, q->mu, t));
    }
    double drain = drain_time(q);
    if (q->q0 > 0 && drain > 0)
        fprintf(f, "  the backlog empties at t = %.6g s\n", drain);
    if (!m->stable) {
        if (m->net_rate > 0)
            fprintf(f, "L > M: the queue grows without bound, at L - M = %.6g per second; there is "
                   "no steady state, so no M/M/1 figures\n",
                   m->net_rate);
        else
            fprintf(f, "L = M: the fluid backlog holds at Q0, but with random arrivals the queue "
                   "grows without bound (like sqrt(t)); there is no steady state, so no M/M/1 "
                   "figures\n");
        return;
    }
    fprintf(f, "M/M/1 steady state (Poisson arrivals, exponential service, one FIFO server):\n");
    if (q->simulated)
        cg_text_printf(f, "  %-20s %-12s %-12s %-12s %s\n", "", "formula", "value", "simulated",
               "rel. diff");
    else
        cg_text_printf(f, "  %-20s %-12s %s\n", "", "formula", "value");
    const cg_mm1_sim *s = &q->sim;
    mm1_row(f, q, "utilisation", "rho = L/M", m->rho, "", s->utilisation);
    mm1_row(f, q, "mean in system", "L/(M-L)", m->mean_in_system, "", s->time_avg_in_system);
    mm1_row(f, q, "mean residence", "1/(M-L)", m->mean_residence, " s", s->mean_residence);
    mm1_row(f, q, "mean wait in queue", "rho/(M-L)", m->mean_wait, " s", s->mean_wait);
    if (q->simulated)
        fprintf(f, "simulated: %llu customers from an empty system, seed %llu, %.6g s of "
               "simulated time (in system: time average; utilisation: busy time / total)\n",
               (unsigned long long)s->customers, (unsigned long long)q->seed, s->horizon);
}

