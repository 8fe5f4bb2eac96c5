/* convgate queue: the capacity consequence of a slower path. A fluid backlog
 * table, the M/M/1 steady state when there is one, and optionally a seeded
 * simulation beside the formulas (src/cost/calc.c). */
#include <ctype.h>
#include <errno.h>
#include <getopt.h>
#include <jansson.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "convgate/cost.h"

static void queue_usage(FILE *f)
{
    fprintf(f,
            "Usage: convgate queue --lambda L --mu M [--backlog Q0] [--time T] [--step DT]\n"
            "                      [--simulate N [--seed S]] [--json]\n"
            "\n"
            "What happens to a request stream when the path serving it is slower than the\n"
            "stream (or close to it). Requests arrive at L per second and are served at M\n"
            "per second; Q0 are already waiting at t = 0.\n"
            "\n"
            "Fluid model: arrivals and service are steady flows, so the backlog moves in a\n"
            "straight line, Q(t) = max(0, Q0 + (L - M) t), printed from 0 to T in steps of\n"
            "DT. With L > M it grows by L - M per second forever; with L < M it empties at\n"
            "t = Q0 / (M - L) and stays empty: the fluid model has no queueing from\n"
            "randomness at all.\n"
            "\n"
            "M/M/1 model: arrivals are Poisson (independent, exponential gaps, mean 1/L),\n"
            "service times are exponential (mean 1/M), one server, first come first served,\n"
            "unlimited waiting room. For L < M the queue settles into a steady state:\n"
            "    utilisation            rho = L/M\n"
            "    mean number in system  L/(M - L)\n"
            "    mean residence time    1/(M - L)      (wait + service, seconds)\n"
            "    mean wait in queue     rho/(M - L)\n"
            "These blow up as L approaches M, even though the fluid model says the queue\n"
            "drains: randomness alone makes a nearly saturated path slow. For L >= M there\n"
            "is no steady state; the queue grows without bound (for L = M, like sqrt(t)).\n"
            "\n"
            "Options:\n"
            "  --lambda L      arrival rate, per second (>= 0)\n"
            "  --mu M          service rate, per second (> 0)\n"
            "  --backlog Q0    requests waiting at t = 0 (>= 0, default 0)\n"
            "  --time T        end of the backlog table, seconds (>= 0, default 1)\n"
            "  --step DT       step of the backlog table, seconds (> 0, default 0.5;\n"
            "                  at most %d steps)\n"
            "  --simulate N    also simulate N customers (1..%llu) through an M/M/1 queue\n"
            "                  that starts empty, and print its estimates beside the\n"
            "                  formulas (needs 0 < L < M); the simulation's start from an\n"
            "                  empty system biases short runs low\n"
            "  --seed S        the simulation's seed (unsigned 64-bit, default 1): same seed,\n"
            "                  same numbers\n"
            "  --json          machine-readable result, numbers at full precision\n"
            "  -h, --help      this help\n"
            "\n"
            "Example: convgate queue --backlog 4 --lambda 2 --mu 3   (Q(1) = 3, mean\n"
            "         residence 1 s)\n"
            "\n"
            "Exit status: 0 printed, 2 usage error or out-of-range input.\n",
            CG_QUEUE_MAX_STEPS, (unsigned long long)CG_QUEUE_MAX_CUSTOMERS);
}

/* Parses an unsigned decimal integer in [min, max]; prints the error and
 * returns false. strtoull alone would accept "-1" as 2^64 - 1. */
static bool parse_unsigned(const char *opt, const char *text, uint64_t min, uint64_t max,
                           uint64_t *out)
{
    char *end;
    errno = 0;
    unsigned long long v = isdigit((unsigned char)text[0]) ? strtoull(text, &end, 10) : 0;
    if (!isdigit((unsigned char)text[0]) || *end || errno == ERANGE || v < min ||
        v > max) {
        cli_error("queue", "--%s expects an integer in [%llu, %llu], got '%s'", opt,
                  (unsigned long long)min, (unsigned long long)max, text);
        return false;
    }
    *out = (uint64_t)v;
    return true;
}

/* Everything a report needs, computed and validated before anything prints. */
typedef struct queue_report {
    double lambda, mu, q0, t_end, dt;
    size_t points;
    cg_mm1 mm1;
    bool simulated;
    uint64_t seed;
    cg_mm1_sim sim;
} queue_report;

/* (estimate - formula) / formula: the simulation's relative error. */
static double rel_diff(double estimate, double formula)
{
    return (estimate - formula) / formula;
}

/* When the fluid backlog reaches 0 for good, or -1 when it never does. */
static double drain_time(const queue_report *q)
{
    double net = q->mm1.net_rate;
    if (net < 0)
        return q->q0 / -net;
    return net == 0 && q->q0 == 0 ? 0 : -1;
}

static int queue_json(const queue_report *q)
{
    int rc = CG_EXIT_ERROR;
    char *text = NULL, *shortest = NULL;
    json_t *root = json_object(), *fluid = json_array();
    if (!root || !fluid)
        goto done;
    json_object_set_new(root, "lambda", json_real(q->lambda));
    json_object_set_new(root, "mu", json_real(q->mu));
    json_object_set_new(root, "backlog0", json_real(q->q0));
    json_object_set_new(root, "time", json_real(q->t_end));
    json_object_set_new(root, "step", json_real(q->dt));
    json_object_set_new(root, "net_rate", json_real(q->mm1.net_rate));
    for (size_t i = 0; i < q->points; i++) {
        double t = cg_queue_grid_time(q->t_end, q->dt, q->points, i);
        json_t *row = json_object();
        if (!row || json_array_append_new(fluid, row) != 0)
            goto done;
        json_object_set_new(row, "t", json_real(t));
        json_object_set_new(row, "backlog",
                            json_real(cg_queue_fluid_backlog(q->q0, q->lambda, q->mu, t)));
    }
    json_object_set_new(root, "fluid", fluid);
    fluid = NULL; /* owned by root now */
    double drain = drain_time(q);
    json_object_set_new(root, "drain_time", drain >= 0 ? json_real(drain) : json_null());
    json_object_set_new(root, "stable", json_boolean(q->mm1.stable));
    if (q->mm1.stable) {
        json_t *m = json_object();
        json_object_set_new(m, "rho", json_real(q->mm1.rho));
        json_object_set_new(m, "mean_in_system", json_real(q->mm1.mean_in_system));
        json_object_set_new(m, "mean_residence", json_real(q->mm1.mean_residence));
        json_object_set_new(m, "mean_wait", json_real(q->mm1.mean_wait));
        json_object_set_new(root, "mm1", m);
        json_object_set_new(root, "growth_rate", json_null());
    } else {
        json_object_set_new(root, "mm1", json_null());
        json_object_set_new(root, "growth_rate", json_real(q->mm1.net_rate));
    }
    if (q->simulated) {
        const cg_mm1_sim *s = &q->sim;
        json_t *o = json_object(), *d = json_object();
        json_object_set_new(o, "customers", json_integer((json_int_t)s->customers));
        /* a JSON integer is signed 64-bit: the seed goes as a string to keep
         * all 64 bits */
        char seed[24];
        snprintf(seed, sizeof seed, "%llu", (unsigned long long)q->seed);
        json_object_set_new(o, "seed", json_string(seed));
        json_object_set_new(o, "horizon", json_real(s->horizon));
        json_object_set_new(o, "mean_residence", json_real(s->mean_residence));
        json_object_set_new(o, "mean_wait", json_real(s->mean_wait));
        json_object_set_new(o, "time_avg_in_system", json_real(s->time_avg_in_system));
        json_object_set_new(o, "utilisation", json_real(s->utilisation));
        json_object_set_new(
            d, "mean_residence",
            json_real(rel_diff(s->mean_residence, q->mm1.mean_residence)));
        json_object_set_new(d, "mean_wait",
                            json_real(rel_diff(s->mean_wait, q->mm1.mean_wait)));
        json_object_set_new(
            d, "time_avg_in_system",
            json_real(rel_diff(s->time_avg_in_system, q->mm1.mean_in_system)));
        json_object_set_new(d, "utilisation",
                            json_real(rel_diff(s->utilisation, q->mm1.rho)));
        json_object_set_new(o, "relative_difference", d);
        json_object_set_new(root, "simulation", o);
    } else {
        json_object_set_new(root, "simulation", json_null());
    }
    /* 17 digits always read back exactly; cg_cost_json_shortest then drops
     * the digits that are only noise (0.050000000000000003 -> 0.05) */
    text = json_dumps(root, JSON_INDENT(2) | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(17));
    shortest = text ? cg_cost_json_shortest(text) : NULL;
    if (shortest && puts(shortest) >= 0)
        rc = CG_EXIT_OK;
done:
    if (rc != CG_EXIT_OK)
        cli_error("queue", "could not write the JSON result");
    free(shortest);
    free(text);
    json_decref(fluid);
    json_decref(root);
    return rc;
}

/* One line of the M/M/1 table, with the simulation's estimate when there is one. */
static void mm1_row(const queue_report *q, const char *what, const char *formula, double value,
                    const char *unit, double estimate)
{
    char v[48];
    snprintf(v, sizeof v, "%.6g%s", value, unit);
    printf("  %-20s %-12s ", what, formula);
    if (!q->simulated) {
        printf("%s\n", v);
        return;
    }
    printf("%-12s ", v);
    snprintf(v, sizeof v, "%.6g%s", estimate, unit);
    printf("%-12s %+.2f%%\n", v, 100.0 * rel_diff(estimate, value));
}

static void queue_text(const queue_report *q)
{
    const cg_mm1 *m = &q->mm1;
    printf("fluid backlog Q(t) = max(0, Q0 + (L - M) t): Q0=%.6g, L=%.6g/s, M=%.6g/s, "
           "net rate %+.6g/s\n",
           q->q0, q->lambda, q->mu, m->net_rate);
    printf("  %-10s %s\n", "t (s)", "Q(t)");
    for (size_t i = 0; i < q->points; i++) {
        double t = cg_queue_grid_time(q->t_end, q->dt, q->points, i);
        printf("  %-10.6g %.6g\n", t, cg_queue_fluid_backlog(q->q0, q->lambda, q->mu, t));
    }
    double drain = drain_time(q);
    if (q->q0 > 0 && drain > 0)
        printf("  the backlog empties at t = %.6g s\n", drain);
    if (!m->stable) {
        if (m->net_rate > 0)
            printf("L > M: the queue grows without bound, at L - M = %.6g per second; there is "
                   "no steady state, so no M/M/1 figures\n",
                   m->net_rate);
        else
            printf("L = M: the fluid backlog holds at Q0, but with random arrivals the queue "
                   "grows without bound (like sqrt(t)); there is no steady state, so no M/M/1 "
                   "figures\n");
        return;
    }
    printf("M/M/1 steady state (Poisson arrivals, exponential service, one FIFO server):\n");
    if (q->simulated)
        printf("  %-20s %-12s %-12s %-12s %s\n", "", "formula", "value", "simulated",
               "rel. diff");
    else
        printf("  %-20s %-12s %s\n", "", "formula", "value");
    const cg_mm1_sim *s = &q->sim;
    mm1_row(q, "utilisation", "rho = L/M", m->rho, "", s->utilisation);
    mm1_row(q, "mean in system", "L/(M-L)", m->mean_in_system, "", s->time_avg_in_system);
    mm1_row(q, "mean residence", "1/(M-L)", m->mean_residence, " s", s->mean_residence);
    mm1_row(q, "mean wait in queue", "rho/(M-L)", m->mean_wait, " s", s->mean_wait);
    if (q->simulated)
        printf("simulated: %llu customers from an empty system, seed %llu, %.6g s of "
               "simulated time (in system: time average; utilisation: busy time / total)\n",
               (unsigned long long)s->customers, (unsigned long long)q->seed, s->horizon);
}

int cmd_queue(int argc, char **argv)
{
    static const struct option longopts[] = {{"lambda", required_argument, NULL, 'L'},
                                              {"mu", required_argument, NULL, 'M'},
                                              {"backlog", required_argument, NULL, 'Q'},
                                              {"time", required_argument, NULL, 'T'},
                                              {"step", required_argument, NULL, 'D'},
                                              {"simulate", required_argument, NULL, 'N'},
                                              {"seed", required_argument, NULL, 'S'},
                                              {"json", no_argument, NULL, 'j'},
                                              {"help", no_argument, NULL, 'h'},
                                              {NULL, 0, NULL, 0}};
    queue_report q;
    memset(&q, 0, sizeof q);
    q.t_end = 1;
    q.dt = 0.5;
    q.seed = 1;
    uint64_t customers = 0;
    bool json = false, have_l = false, have_m = false, have_seed = false;
    int c;
    optind = 1;
    while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
        switch (c) {
        case 'L':
            if (!cli_parse_real("queue", "lambda", optarg, &q.lambda))
                return CG_EXIT_ERROR;
            have_l = true;
            break;
        case 'M':
            if (!cli_parse_real("queue", "mu", optarg, &q.mu))
                return CG_EXIT_ERROR;
            have_m = true;
            break;
        case 'Q':
            if (!cli_parse_real("queue", "backlog", optarg, &q.q0))
                return CG_EXIT_ERROR;
            break;
        case 'T':
            if (!cli_parse_real("queue", "time", optarg, &q.t_end))
                return CG_EXIT_ERROR;
            break;
        case 'D':
            if (!cli_parse_real("queue", "step", optarg, &q.dt))
                return CG_EXIT_ERROR;
            break;
        case 'N':
            if (!parse_unsigned("simulate", optarg, 1, CG_QUEUE_MAX_CUSTOMERS, &customers))
                return CG_EXIT_ERROR;
            q.simulated = true;
            break;
        case 'S':
            if (!parse_unsigned("seed", optarg, 0, UINT64_MAX, &q.seed))
                return CG_EXIT_ERROR;
            have_seed = true;
            break;
        case 'j': json = true; break;
        case 'h': queue_usage(stdout); return CG_EXIT_OK;
        default: queue_usage(stderr); return CG_EXIT_ERROR;
        }
    }
    if (optind != argc) {
        cli_error("queue", "unexpected argument '%s' (see convgate queue --help)", argv[optind]);
        return CG_EXIT_ERROR;
    }
    if (!have_l || !have_m) {
        cli_error("queue", "missing %s (see convgate queue --help)",
                  !have_l ? "--lambda L" : "--mu M");
        return CG_EXIT_ERROR;
    }
    if (have_seed && !q.simulated) {
        cli_error("queue", "--seed only applies with --simulate N");
        return CG_EXIT_ERROR;
    }
    cg_error err;
    cg_error_clear(&err);
    if (cg_queue_validate(q.lambda, q.mu, q.q0, &err) != CG_OK ||
        cg_queue_grid(q.t_end, q.dt, &q.points, &err) != CG_OK ||
        cg_queue_mm1(q.lambda, q.mu, &q.mm1, &err) != CG_OK ||
        (q.simulated &&
         cg_queue_simulate_mm1(q.lambda, q.mu, customers, q.seed, &q.sim, &err) != CG_OK)) {
        cli_error("queue", "%s", err.msg);
        return CG_EXIT_ERROR;
    }
    if (json)
        return queue_json(&q);
    queue_text(&q);
    return CG_EXIT_OK;
}
