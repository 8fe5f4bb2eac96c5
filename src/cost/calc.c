/*
 * The cost calculator: latency with boundaries (Amdahl's law extended by
 * a per-boundary cost), the fluid backlog, M/M/1 steady-state figures and
 * a seeded M/M/1 simulation that checks them (see convgate/cost.h for
 * the models). Everything here is a pure function of its arguments; the
 * only state is the simulation's PRNG, which lives on the stack.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "convgate/cost.h"
#include "convgate/tensor_io.h"

/* True when v is a finite number >= lo (NaN fails every comparison). */
static bool finite_at_least(double v, double lo)
{
    return isfinite(v) && v >= lo;
}

/* --- latency ---------------------------------------------------------------------- */

cg_status cg_cost_latency(const cg_latency_input *in, cg_latency_result *out, cg_error *err)
{
    if (!in || !out)
        return cg_error_set(err, CG_USAGE, "cg_cost_latency: NULL argument");
    const double b = in->baseline_ms, a = in->accelerated_ms, s = in->speedup;
    const double c = in->boundary_ms;
    if (!(isfinite(b) && b > 0))
        return cg_error_set(err, CG_USAGE, "baseline B must be a finite number > 0 ms, got %g", b);
    if (!finite_at_least(a, 0))
        return cg_error_set(err, CG_USAGE,
                            "accelerated part A must be a finite number >= 0 ms, got %g", a);
    if (a > b)
        return cg_error_set(err, CG_USAGE,
                            "accelerated part A (%g ms) cannot exceed the baseline B (%g ms): "
                            "it is the part of B that moves",
                            a, b);
    if (!(isfinite(s) && s > 0))
        return cg_error_set(err, CG_USAGE, "speedup S must be a finite number > 0, got %g", s);
    if (in->boundaries < 0 || in->boundaries > CG_COST_MAX_BOUNDARIES)
        return cg_error_set(err, CG_USAGE, "boundary count K must be in [0, %lld], got %lld",
                            (long long)CG_COST_MAX_BOUNDARIES, (long long)in->boundaries);
    if (!finite_at_least(c, 0))
        return cg_error_set(err, CG_USAGE,
                            "boundary cost C must be a finite number >= 0 ms, got %g", c);

    cg_latency_result r;
    r.accelerated_time_ms = a / s;
    r.remainder_ms = b - a;
    r.boundary_cost_ms = (double)in->boundaries * c;
    r.mixed_ms = r.accelerated_time_ms + r.remainder_ms + r.boundary_cost_ms;
    r.end_to_end_speedup = b / r.mixed_ms;
    /* Amdahl's form from its own inputs rather than from mixed_ms, so the
     * two results are an actual cross-check of each other. */
    r.amdahl_f = a / b;
    r.amdahl_s = s;
    r.amdahl_beta = r.boundary_cost_ms / b;
    r.amdahl_speedup = 1.0 / ((1.0 - r.amdahl_f) + r.amdahl_f / s + r.amdahl_beta);
    /* Extreme but individually valid inputs (S = 1e-300, or A = B with
     * S = 1e300) can overflow or underflow the arithmetic above. */
    if (!(isfinite(r.mixed_ms) && r.mixed_ms > 0))
        return cg_error_set(err, CG_USAGE,
                            "mixed latency A/S + (B-A) + K*C = %g + %g + %g is not a finite "
                            "number > 0 ms: the inputs are out of a usable range",
                            r.accelerated_time_ms, r.remainder_ms, r.boundary_cost_ms);
    if (!(isfinite(r.end_to_end_speedup) && isfinite(r.amdahl_speedup) &&
          r.amdahl_speedup > 0))
        return cg_error_set(err, CG_USAGE,
                            "speedup B/mixed = %g / %g is out of the representable range", b,
                            r.mixed_ms);
    *out = r;
    return CG_OK;
}

/* --- queueing: fluid backlog ------------------------------------------------------ */

double cg_queue_fluid_backlog(double q0, double lambda, double mu, double t)
{
    double q = q0 + (lambda - mu) * t;
    return q > 0 ? q : 0;
}

cg_status cg_queue_validate(double lambda, double mu, double q0, cg_error *err)
{
    if (!finite_at_least(lambda, 0))
        return cg_error_set(err, CG_USAGE,
                            "arrival rate lambda must be a finite number >= 0 per second, got %g",
                            lambda);
    if (!(isfinite(mu) && mu > 0))
        return cg_error_set(err, CG_USAGE,
                            "service rate mu must be a finite number > 0 per second, got %g", mu);
    if (!finite_at_least(q0, 0))
        return cg_error_set(err, CG_USAGE,
                            "initial backlog Q0 must be a finite number >= 0, got %g", q0);
    return CG_OK;
}

/* A multiple of dt that lands on t_end within this relative rounding
 * counts as reaching it: T=0.3, dt=0.1 gives 3 steps, not 4. */
#define GRID_REL_TOLERANCE 1e-12

cg_status cg_queue_grid(double t_end, double dt, size_t *points, cg_error *err)
{
    if (!points)
        return cg_error_set(err, CG_USAGE, "cg_queue_grid: NULL argument");
    if (!finite_at_least(t_end, 0))
        return cg_error_set(err, CG_USAGE, "time T must be a finite number >= 0 s, got %g", t_end);
    if (!(isfinite(dt) && dt > 0))
        return cg_error_set(err, CG_USAGE, "step DT must be a finite number > 0 s, got %g", dt);
    if (t_end == 0) {
        *points = 1;
        return CG_OK;
    }
    double k = t_end / dt;
    /* compare before ceil/convert: k may be huge or infinite */
    if (!(k <= CG_QUEUE_MAX_STEPS))
        return cg_error_set(err, CG_USAGE,
                            "time T=%g s in steps of DT=%g s is %g steps, more than the %d "
                            "allowed: use a larger step",
                            t_end, dt, k, CG_QUEUE_MAX_STEPS);
    double steps = ceil(k * (1.0 - GRID_REL_TOLERANCE));
    if (steps < 1)
        steps = 1;
    *points = (size_t)steps + 1;
    return CG_OK;
}

double cg_queue_grid_time(double t_end, double dt, size_t points, size_t i)
{
    /* i * dt rather than a running sum, so rounding does not accumulate;
     * the last point is t_end exactly. */
    return i + 1 >= points ? t_end : (double)i * dt;
}

/* --- queueing: M/M/1 ---------------------------------------------------------------- */

cg_status cg_queue_mm1(double lambda, double mu, cg_mm1 *out, cg_error *err)
{
    if (!out)
        return cg_error_set(err, CG_USAGE, "cg_queue_mm1: NULL argument");
    cg_status st = cg_queue_validate(lambda, mu, 0, err);
    if (st != CG_OK)
        return st;
    cg_mm1 m = {0};
    m.net_rate = lambda - mu;
    m.stable = lambda < mu;
    if (m.stable) {
        double gap = mu - lambda;
        m.rho = lambda / mu;
        m.mean_in_system = lambda / gap;
        m.mean_residence = 1.0 / gap;
        m.mean_wait = m.rho / gap;
    }
    *out = m;
    return CG_OK;
}

/* An Exp(rate) sample: -ln(U)/rate with U uniform on (0, 1]. U is never 0,
 * so the log is finite; the top 53 bits keep U exact in a double. */
static double exponential(cg_rng *rng, double rate)
{
    double u = (double)((cg_rng_next(rng) >> 11) + 1) * 0x1.0p-53;
    return -log(u) / rate;
}

cg_status cg_queue_simulate_mm1(double lambda, double mu, uint64_t customers, uint64_t seed,
                                cg_mm1_sim *out, cg_error *err)
{
    if (!out)
        return cg_error_set(err, CG_USAGE, "cg_queue_simulate_mm1: NULL argument");
    cg_status st = cg_queue_validate(lambda, mu, 0, err);
    if (st != CG_OK)
        return st;
    if (!(lambda > 0 && lambda < mu))
        return cg_error_set(err, CG_USAGE,
                            "simulation needs 0 < lambda < mu (got lambda=%g, mu=%g): without "
                            "arrivals there is nothing to measure, and with lambda >= mu there "
                            "is no steady state to estimate",
                            lambda, mu);
    if (customers < 1 || customers > CG_QUEUE_MAX_CUSTOMERS)
        return cg_error_set(err, CG_USAGE, "customer count N must be in [1, %llu], got %llu",
                            (unsigned long long)CG_QUEUE_MAX_CUSTOMERS,
                            (unsigned long long)customers);

    /* One FIFO server: customer i starts when both it has arrived and
     * customer i-1 has left (Lindley's recursion), which is exactly the
     * order in which an event-list simulation would process the arrival
     * and departure events, without needing the list. */
    cg_rng rng; /* splitmix64 (convgate/tensor_io.h) */
    cg_rng_seed(&rng, seed);
    double arrival = 0, departure = 0;
    double sum_residence = 0, sum_wait = 0, busy = 0;
    for (uint64_t i = 0; i < customers; i++) {
        arrival += exponential(&rng, lambda);
        double start = arrival > departure ? arrival : departure;
        double service = exponential(&rng, mu);
        departure = start + service;
        sum_residence += departure - arrival;
        sum_wait += start - arrival;
        busy += service;
    }
    cg_mm1_sim r;
    r.customers = customers;
    r.horizon = departure;
    r.mean_residence = sum_residence / (double)customers;
    r.mean_wait = sum_wait / (double)customers;
    /* Over [0, last departure] every customer is in the system for exactly
     * its residence, so the area under N(t) is the sum of residences. */
    r.time_avg_in_system = sum_residence / departure;
    r.utilisation = busy / departure;
    *out = r;
    return CG_OK;
}

/* --- printing ----------------------------------------------------------------------- */

int cg_cost_format_real(double v, char *buf, size_t size)
{
    if (isnan(v))
        return snprintf(buf, size, "nan");
    if (isinf(v))
        return snprintf(buf, size, v < 0 ? "-inf" : "inf");
    /* the fewest significant digits that round-trip; 17 always does */
    char sci[40];
    int digits = 17;
    for (int p = 1; p <= 17; p++) {
        snprintf(sci, sizeof sci, "%.*e", p - 1, v);
        if (strtod(sci, NULL) == v) {
            digits = p;
            break;
        }
    }
    /* the decimal exponent after rounding to those digits (9.99 -> 1e+01) */
    const char *e = strchr(sci, 'e');
    int exp10 = e ? atoi(e + 1) : 0;
    if (exp10 < -4 || exp10 >= 16)
        return snprintf(buf, size, "%s", sci);
    int decimals = digits - 1 - exp10;
    int n = snprintf(buf, size, "%.*f", decimals > 0 ? decimals : 0, v);
    if (decimals <= 0 && n >= 0) {
        /* a whole number: keep it a real */
        if ((size_t)n + 2 < size)
            memcpy(buf + n, ".0", 3);
        n += 2;
    }
    return n;
}

