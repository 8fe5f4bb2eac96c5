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
#include "report/report.h"

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
            "  --json          machine-readable result (docs/json.md), numbers at full\n"
            "                  precision\n"
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
    cg_queue_view q;
    memset(&q, 0, sizeof q);
    q.t_end = 1;
    q.dt = 0.5;
    q.seed = 1;
    uint64_t customers = 0;
    bool have_l = false, have_m = false, have_seed = false;
    int c;
    bool started = false;
    while ((c = cli_next_option("queue", argc, argv, "h", longopts, &started, NULL, NULL,
                                NULL)) != -1) {
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
        case 'j': break;
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
    if (cli_json_on())
        return cli_json_emit(CG_EXIT_OK, cg_report_queue_json(&q));
    cg_report_queue_text(stdout, &q);
    return CG_EXIT_OK;
}
