/* Cost calculator tests (src/cost/calc.c): the latency sum and its Amdahl
 * form on hand-checked examples and edges (A = 0, A = B, K = 0, S < 1),
 * input validation, the fluid backlog and its time grid, M/M/1 figures at
 * and past saturation, the seeded simulation against the formulas, and the
 * shortest round-trip number printing the JSON output relies on. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "convgate/cost.h"
#include "report/json.h"
#include "testlib.h"

/* |a - b| <= tol * max(1, |b|); false for NaN */
static bool near(double a, double b, double tol)
{
    double scale = fabs(b) > 1 ? fabs(b) : 1;
    return fabs(a - b) <= tol * scale;
}

static cg_status latency(double b, double a, double s, int64_t k, double c, cg_latency_result *r,
                         cg_error *err)
{
    cg_latency_input in = {b, a, s, k, c};
    cg_error_clear(err);
    memset(r, 0, sizeof *r);
    return cg_cost_latency(&in, r, err);
}

/* --- latency ---------------------------------------------------------------------- */

static void test_latency_examples(void)
{
    cg_latency_result r;
    cg_error err;
    EXPECT(latency(100, 80, 8, 2, 2.5, &r, &err) == CG_OK, "%s", err.msg);
    /* every term is exact in binary: compare exactly */
    EXPECT(r.accelerated_time_ms == 10, "%.17g", r.accelerated_time_ms);
    EXPECT(r.remainder_ms == 20, "%.17g", r.remainder_ms);
    EXPECT(r.boundary_cost_ms == 5, "%.17g", r.boundary_cost_ms);
    EXPECT(r.mixed_ms == 35, "%.17g", r.mixed_ms);
    EXPECT(r.end_to_end_speedup == 100.0 / 35.0, "%.17g", r.end_to_end_speedup);
    EXPECT(near(r.end_to_end_speedup, 2.857142857142857, 1e-15), "%.17g", r.end_to_end_speedup);
    EXPECT(near(r.amdahl_f, 0.8, 1e-15) && r.amdahl_s == 8 && near(r.amdahl_beta, 0.05, 1e-15),
           "f=%g S=%g beta=%g", r.amdahl_f, r.amdahl_s, r.amdahl_beta);
    EXPECT(near(r.amdahl_speedup, r.end_to_end_speedup, 1e-14), "amdahl %.17g direct %.17g",
           r.amdahl_speedup, r.end_to_end_speedup);

    EXPECT(latency(60, 45, 5, 1, 6, &r, &err) == CG_OK, "%s", err.msg);
    EXPECT(r.accelerated_time_ms == 9 && r.remainder_ms == 15 && r.boundary_cost_ms == 6,
           "%g %g %g", r.accelerated_time_ms, r.remainder_ms, r.boundary_cost_ms);
    EXPECT(r.mixed_ms == 30, "%.17g", r.mixed_ms);
    EXPECT(r.end_to_end_speedup == 2.0, "%.17g", r.end_to_end_speedup);
    EXPECT(near(r.amdahl_speedup, 2.0, 1e-14), "%.17g", r.amdahl_speedup);
    EXPECT(r.amdahl_f == 0.75 && near(r.amdahl_beta, 0.1, 1e-15), "f=%g beta=%g", r.amdahl_f,
           r.amdahl_beta);
}

static void test_latency_edges(void)
{
    cg_latency_result r;
    cg_error err;
    /* A = 0: nothing moves; the speedup S is irrelevant */
    EXPECT(latency(50, 0, 7, 0, 0, &r, &err) == CG_OK, "%s", err.msg);
    EXPECT(r.mixed_ms == 50 && r.end_to_end_speedup == 1 && r.amdahl_speedup == 1,
           "mixed %g speedup %g/%g", r.mixed_ms, r.end_to_end_speedup, r.amdahl_speedup);
    /* A = 0 with boundaries: pure loss */
    EXPECT(latency(50, 0, 7, 2, 5, &r, &err) == CG_OK, "%s", err.msg);
    EXPECT(r.mixed_ms == 60 && near(r.end_to_end_speedup, 50.0 / 60.0, 1e-15), "%g %g",
           r.mixed_ms, r.end_to_end_speedup);
    /* A = B, K = 0: the whole model moves, speedup is exactly S */
    EXPECT(latency(40, 40, 4, 0, 3, &r, &err) == CG_OK, "%s", err.msg);
    EXPECT(r.remainder_ms == 0 && r.boundary_cost_ms == 0 && r.mixed_ms == 10, "%g %g %g",
           r.remainder_ms, r.boundary_cost_ms, r.mixed_ms);
    EXPECT(r.end_to_end_speedup == 4 && r.amdahl_speedup == 4 && r.amdahl_f == 1, "%g %g",
           r.end_to_end_speedup, r.amdahl_speedup);
    /* K = 0 with a nonzero C: no crossings, no cost */
    EXPECT(latency(100, 80, 8, 0, 99, &r, &err) == CG_OK, "%s", err.msg);
    EXPECT(r.boundary_cost_ms == 0 && r.mixed_ms == 30, "%g", r.mixed_ms);
    /* boundaries can eat the whole gain: 100 -> 10 + 20 + 70 = 100, speedup 1 */
    EXPECT(latency(100, 80, 8, 7, 10, &r, &err) == CG_OK, "%s", err.msg);
    EXPECT(r.mixed_ms == 100 && r.end_to_end_speedup == 1, "%g", r.mixed_ms);
    /* S < 1 is a slowdown: 100 ms with 50 of it twice as slow is 150 ms */
    EXPECT(latency(100, 50, 0.5, 0, 0, &r, &err) == CG_OK, "%s", err.msg);
    EXPECT(r.mixed_ms == 150 && near(r.end_to_end_speedup, 2.0 / 3.0, 1e-15) &&
               near(r.amdahl_speedup, 2.0 / 3.0, 1e-15),
           "%g %g", r.mixed_ms, r.end_to_end_speedup);
}

static void test_latency_validation(void)
{
    static const struct {
        double b, a, s;
        int64_t k;
        double c;
        const char *needle;
    } bad[] = {
        {0, 0, 1, 0, 0, "baseline B"},
        {-1, 0, 1, 0, 0, "baseline B"},
        {NAN, 0, 1, 0, 0, "baseline B"},
        {INFINITY, 0, 1, 0, 0, "baseline B"},
        {10, -1, 1, 0, 0, "accelerated part A"},
        {10, NAN, 1, 0, 0, "accelerated part A"},
        {10, 11, 1, 0, 0, "cannot exceed"},
        {10, 5, 0, 0, 0, "speedup S"},
        {10, 5, -2, 0, 0, "speedup S"},
        {10, 5, INFINITY, 0, 0, "speedup S"},
        {10, 5, 2, -1, 0, "boundary count K"},
        {10, 5, 2, CG_COST_MAX_BOUNDARIES + 1, 0, "boundary count K"},
        {10, 5, 2, 1, -0.5, "boundary cost C"},
        {10, 5, 2, 1, NAN, "boundary cost C"},
        {10, 10, 1e-310, 0, 0, "mixed latency"}, /* A/S overflows */
        {10, 5, 2, CG_COST_MAX_BOUNDARIES, 1e300, "mixed latency"}, /* K*C overflows */
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        cg_latency_result r;
        cg_error err;
        cg_status st = latency(bad[i].b, bad[i].a, bad[i].s, bad[i].k, bad[i].c, &r, &err);
        EXPECT(st == CG_USAGE, "case %zu: status %d", i, (int)st);
        EXPECT(strstr(err.msg, bad[i].needle) != NULL, "case %zu: '%s' lacks '%s'", i, err.msg,
               bad[i].needle);
    }
    cg_error err;
    cg_error_clear(&err);
    EXPECT(cg_cost_latency(NULL, NULL, &err) == CG_USAGE, "NULL arguments");
}

/* --- queueing ----------------------------------------------------------------------- */

static void test_fluid(void)
{
    EXPECT(cg_queue_fluid_backlog(4, 4, 3, 1) == 5, "Q0=4 L=4 M=3: Q(1)=5");
    EXPECT(cg_queue_fluid_backlog(4, 2, 3, 1) == 3, "Q0=4 L=2 M=3: Q(1)=3");
    EXPECT(cg_queue_fluid_backlog(4, 2, 3, 0) == 4, "Q(0)=Q0");
    EXPECT(cg_queue_fluid_backlog(4, 2, 3, 10) == 0, "drained, never negative");
    EXPECT(cg_queue_fluid_backlog(4, 3, 3, 1000) == 4, "L=M holds Q0");
    EXPECT(cg_queue_fluid_backlog(0, 5, 3, 2.5) == 5, "L>M from empty grows by (L-M)t");

    cg_error err;
    cg_error_clear(&err);
    EXPECT(cg_queue_validate(0, 1, 0, &err) == CG_OK, "%s", err.msg);
    EXPECT(cg_queue_validate(-1, 1, 0, &err) == CG_USAGE && strstr(err.msg, "lambda"), "%s",
           err.msg);
    cg_error_clear(&err);
    EXPECT(cg_queue_validate(1, 0, 0, &err) == CG_USAGE && strstr(err.msg, "mu"), "%s", err.msg);
    cg_error_clear(&err);
    EXPECT(cg_queue_validate(1, 2, -1, &err) == CG_USAGE && strstr(err.msg, "Q0"), "%s",
           err.msg);
    cg_error_clear(&err);
    EXPECT(cg_queue_validate(1, NAN, 0, &err) == CG_USAGE, "NaN mu");
}

static void test_grid(void)
{
    cg_error err;
    size_t n = 0;
    cg_error_clear(&err);
    /* the defaults: 0, 0.5, 1 */
    EXPECT(cg_queue_grid(1, 0.5, &n, &err) == CG_OK && n == 3, "n=%zu %s", n, err.msg);
    EXPECT(cg_queue_grid_time(1, 0.5, n, 0) == 0 && cg_queue_grid_time(1, 0.5, n, 1) == 0.5 &&
               cg_queue_grid_time(1, 0.5, n, 2) == 1,
           "grid times");
    /* 0.3 / 0.1 is 2.9999999999999996 in binary: still 3 steps, last at 0.3 */
    EXPECT(cg_queue_grid(0.3, 0.1, &n, &err) == CG_OK && n == 4, "n=%zu", n);
    EXPECT(cg_queue_grid_time(0.3, 0.1, n, 3) == 0.3, "last point is T");
    /* 2.1 / 0.3 is 7.000000000000001: 7 steps, not an 8th of 1e-15 s */
    EXPECT(cg_queue_grid(2.1, 0.3, &n, &err) == CG_OK && n == 8, "n=%zu", n);
    /* T not a multiple of DT: 0, 0.3, 0.6, 0.9, then T = 1 */
    EXPECT(cg_queue_grid(1, 0.3, &n, &err) == CG_OK && n == 5, "n=%zu", n);
    EXPECT(cg_queue_grid_time(1, 0.3, n, 3) == 0.8999999999999999 ||
               cg_queue_grid_time(1, 0.3, n, 3) == 0.9,
           "%.17g", cg_queue_grid_time(1, 0.3, n, 3));
    EXPECT(cg_queue_grid_time(1, 0.3, n, 4) == 1, "last point is T");
    /* T = 0: one point; DT larger than T: 0 and T */
    EXPECT(cg_queue_grid(0, 0.5, &n, &err) == CG_OK && n == 1, "n=%zu", n);
    EXPECT(cg_queue_grid(0.2, 5, &n, &err) == CG_OK && n == 2, "n=%zu", n);
    EXPECT(cg_queue_grid_time(0.2, 5, n, 1) == 0.2, "last point is T");
    /* the step limit, exactly at and past it */
    EXPECT(cg_queue_grid(CG_QUEUE_MAX_STEPS, 1, &n, &err) == CG_OK &&
               n == (size_t)CG_QUEUE_MAX_STEPS + 1,
           "n=%zu %s", n, err.msg);
    EXPECT(cg_queue_grid(CG_QUEUE_MAX_STEPS + 1, 1, &n, &err) == CG_USAGE &&
               strstr(err.msg, "steps"),
           "%s", err.msg);
    cg_error_clear(&err);
    EXPECT(cg_queue_grid(1, 1e-320, &n, &err) == CG_USAGE, "T/DT overflows");
    cg_error_clear(&err);
    EXPECT(cg_queue_grid(1, 0, &n, &err) == CG_USAGE && strstr(err.msg, "DT"), "%s", err.msg);
    cg_error_clear(&err);
    EXPECT(cg_queue_grid(-1, 0.5, &n, &err) == CG_USAGE && strstr(err.msg, "T"), "%s", err.msg);
    cg_error_clear(&err);
    EXPECT(cg_queue_grid(INFINITY, 0.5, &n, &err) == CG_USAGE, "infinite T");
}

static void test_mm1(void)
{
    cg_mm1 m;
    cg_error err;
    cg_error_clear(&err);
    EXPECT(cg_queue_mm1(2, 3, &m, &err) == CG_OK, "%s", err.msg);
    EXPECT(m.stable && m.net_rate == -1, "stable, net -1");
    EXPECT(near(m.rho, 2.0 / 3.0, 1e-15) && m.mean_in_system == 2 && m.mean_residence == 1 &&
               near(m.mean_wait, 2.0 / 3.0, 1e-15),
           "rho %g L %g W %g Wq %g", m.rho, m.mean_in_system, m.mean_residence, m.mean_wait);
    /* Little's law holds in the formulas: L = lambda W, Lq = lambda Wq */
    EXPECT(near(m.mean_in_system, 2 * m.mean_residence, 1e-15), "L = lambda W");
    EXPECT(near(m.mean_residence, m.mean_wait + 1.0 / 3.0, 1e-15), "W = Wq + 1/mu");
    /* no arrivals: residence is the bare service time */
    EXPECT(cg_queue_mm1(0, 4, &m, &err) == CG_OK && m.stable && m.rho == 0 &&
               m.mean_residence == 0.25 && m.mean_wait == 0,
           "lambda = 0");
    /* L = M and L > M: not an error, but no steady state */
    EXPECT(cg_queue_mm1(3, 3, &m, &err) == CG_OK && !m.stable && m.net_rate == 0 &&
               m.mean_residence == 0,
           "L = M");
    EXPECT(cg_queue_mm1(4, 3, &m, &err) == CG_OK && !m.stable && m.net_rate == 1, "L > M");
    EXPECT(cg_queue_mm1(-1, 3, &m, &err) == CG_USAGE, "negative lambda");
}

static void test_simulation(void)
{
    cg_mm1_sim s, again;
    cg_error err;
    cg_error_clear(&err);
    EXPECT(cg_queue_simulate_mm1(2, 3, 200000, 12345, &s, &err) == CG_OK, "%s", err.msg);
    EXPECT(s.customers == 200000, "%llu", (unsigned long long)s.customers);
    double rel = fabs(s.mean_residence - 1.0);
    EXPECT(rel <= 0.05, "mean residence %.6g vs 1/(M-L) = 1: off by %.2f%%", s.mean_residence,
           100 * rel);
    /* the other estimates, with tolerances of the same order */
    EXPECT(fabs(s.utilisation - 2.0 / 3.0) / (2.0 / 3.0) <= 0.02, "utilisation %.6g",
           s.utilisation);
    EXPECT(fabs(s.time_avg_in_system - 2.0) / 2.0 <= 0.05, "in system %.6g",
           s.time_avg_in_system);
    EXPECT(fabs(s.mean_wait - 2.0 / 3.0) / (2.0 / 3.0) <= 0.08, "wait %.6g", s.mean_wait);
    /* 200000 arrivals at 2/s take about 100000 s */
    EXPECT(s.horizon > 95000 && s.horizon < 105000, "horizon %.6g", s.horizon);
    /* deterministic: same seed, same bits; another seed, other numbers */
    EXPECT(cg_queue_simulate_mm1(2, 3, 200000, 12345, &again, &err) == CG_OK, "%s", err.msg);
    EXPECT(memcmp(&s, &again, sizeof s) == 0, "same seed must reproduce exactly");
    EXPECT(cg_queue_simulate_mm1(2, 3, 200000, 54321, &again, &err) == CG_OK, "%s", err.msg);
    EXPECT(again.mean_residence != s.mean_residence, "different seed, same result");
    EXPECT(fabs(again.mean_residence - 1.0) <= 0.05, "seed 54321: %.6g", again.mean_residence);
    /* one customer arriving to an empty system never waits */
    EXPECT(cg_queue_simulate_mm1(1, 2, 1, 7, &s, &err) == CG_OK && s.mean_wait == 0 &&
               s.mean_residence > 0,
           "single customer");

    static const struct {
        double lambda, mu;
        uint64_t n;
    } bad[] = {
        {3, 3, 100}, {4, 3, 100}, {0, 3, 100}, {1, 3, 0}, {1, 3, CG_QUEUE_MAX_CUSTOMERS + 1},
        {1, 0, 100},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        cg_error_clear(&err);
        EXPECT(cg_queue_simulate_mm1(bad[i].lambda, bad[i].mu, bad[i].n, 1, &s, &err) ==
                       CG_USAGE &&
                   err.msg[0],
               "case %zu accepted", i);
    }
}

/* --- printing ----------------------------------------------------------------------- */

static void test_format(void)
{
    static const struct {
        double v;
        const char *text;
    } cases[] = {
        {0.05, "0.05"},
        {0.8, "0.8"},
        {2.0, "2.0"},
        {35, "35.0"},
        {-1, "-1.0"},
        {0, "0.0"},
        {100.0 / 35.0, "2.857142857142857"},
        {2.0 / 3.0, "0.6666666666666666"},
        {1e-5, "1e-05"},
        {0.0001, "0.0001"},
        {1e16, "1e+16"},
        {1234567890123456.0, "1234567890123456.0"},
        {0.1 + 0.2, "0.30000000000000004"},
        {5e-324, "5e-324"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char buf[48];
        int n = cg_cost_format_real(cases[i].v, buf, sizeof buf);
        EXPECT(n == (int)strlen(buf) && strcmp(buf, cases[i].text) == 0, "%.17g -> '%s', want '%s'",
               cases[i].v, buf, cases[i].text);
        EXPECT(strtod(buf, NULL) == cases[i].v, "'%s' does not read back", buf);
    }
    /* round trip on awkward values */
    double v = 1.0;
    for (int i = 0; i < 200; i++) {
        char buf[48];
        v = v * 1.37 + 1.0 / (i + 3);
        cg_cost_format_real(v, buf, sizeof buf);
        EXPECT(strtod(buf, NULL) == v, "%.17g printed as '%s'", v, buf);
    }

    const char *in = "{\n  \"a\": 0.050000000000000003,\n  \"b\": [2.0, -0.80000000000000004, "
                     "1e+20],\n  \"n\": 200000,\n  \"s\": \"0.10000000000000001 \\\"1.50\\\"\"\n}";
    const char *want = "{\n  \"a\": 0.05,\n  \"b\": [2.0, -0.8, 1e+20],\n  \"n\": 200000,\n  "
                       "\"s\": \"0.10000000000000001 \\\"1.50\\\"\"\n}";
    char *out = cg_json_shortest(in);
    EXPECT(out && strcmp(out, want) == 0, "got\n%s\nwant\n%s", out ? out : "(null)", want);
    free(out);
    EXPECT(cg_json_shortest(NULL) == NULL, "NULL in, NULL out");
}

int main(void)
{
    test_latency_examples();
    test_latency_edges();
    test_latency_validation();
    test_fluid();
    test_grid();
    test_mm1();
    test_simulation();
    test_format();
    return test_done("test_calc");
}
