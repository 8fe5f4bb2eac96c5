/*
 * Cost arithmetic: the latency and queueing models behind convgate's
 * partition decisions, in a form a person can check by hand.
 *
 * Latency (Amdahl with boundaries). A model runs in B ms on the baseline.
 * A part of it taking A ms there is moved to a path S times faster; the
 * rest (B - A ms) is unchanged, and each of K boundaries between the two
 * paths costs C ms. Nothing overlaps and boundaries are crossed one after
 * another, so the mixed latency is the plain sum
 *     A/S + (B - A) + K*C
 * and the end-to-end speedup B / mixed, which in Amdahl's form is
 *     1 / ((1 - f) + f/S + beta),  f = A/B, beta = K*C/B.
 *
 * Queueing. Requests arrive at rate lambda and are served at rate mu
 * (both per second). The fluid view treats both as steady flows: the
 * backlog moves linearly, Q(t) = max(0, Q0 + (lambda - mu) t). The M/M/1
 * view takes Poisson arrivals and exponential service times, one FIFO
 * server: for lambda < mu it has a steady state with utilisation
 * rho = lambda/mu, mean number in system lambda/(mu - lambda), mean
 * residence 1/(mu - lambda) and mean wait in queue rho/(mu - lambda);
 * for lambda >= mu it has none. A seeded simulation checks those formulas.
 *
 * Every function validates its inputs (finite, in range) and returns
 * CG_USAGE with a message naming the offending parameter and value.
 */
#ifndef CONVGATE_COST_H
#define CONVGATE_COST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "convgate/status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* --- latency ---------------------------------------------------------------------- */

#define CG_COST_MAX_BOUNDARIES INT64_C(1000000000)

typedef struct cg_latency_input {
    double baseline_ms;    /* B > 0: the whole model on the baseline path */
    double accelerated_ms; /* A in [0, B]: the part moved, timed on the baseline */
    double speedup;        /* S > 0: how much faster that part runs when moved */
    int64_t boundaries;    /* K in [0, CG_COST_MAX_BOUNDARIES] */
    double boundary_ms;    /* C >= 0: cost of one boundary crossing */
} cg_latency_input;

typedef struct cg_latency_result {
    double accelerated_time_ms; /* A / S */
    double remainder_ms;        /* B - A */
    double boundary_cost_ms;    /* K * C */
    double mixed_ms;            /* the sum of the three */
    double end_to_end_speedup;  /* B / mixed */
    /* the same in Amdahl's form, computed independently */
    double amdahl_f;       /* A / B */
    double amdahl_s;       /* S */
    double amdahl_beta;    /* K * C / B */
    double amdahl_speedup; /* 1 / ((1 - f) + f/S + beta) */
} cg_latency_result;

/* Validates `in` and fills `out`. Fails (CG_USAGE) on out-of-range or
 * non-finite inputs, and when the mixed latency is not a positive finite
 * number (e.g. A/S underflows to 0 for an enormous S). */
CG_API CG_NODISCARD cg_status cg_cost_latency(const cg_latency_input *in, cg_latency_result *out,
                                              cg_error *err);

/* --- queueing: fluid backlog ------------------------------------------------------ */

#define CG_QUEUE_MAX_STEPS 100000

/* Q(t) = max(0, q0 + (lambda - mu) t). Inputs are assumed valid
 * (see cg_queue_validate). */
CG_API double cg_queue_fluid_backlog(double q0, double lambda, double mu, double t);

/* Checks lambda >= 0, mu > 0, q0 >= 0, all finite. */
CG_API CG_NODISCARD cg_status cg_queue_validate(double lambda, double mu, double q0, cg_error *err);

/* The sample times of a backlog table over [0, t_end] in steps dt:
 * 0, dt, 2 dt, ... and t_end itself as the last point, even when t_end is
 * not a multiple of dt (a multiple within rounding counts as reached).
 * Fills *points with the number of sample times (>= 1). Fails when t_end < 0,
 * dt <= 0, either is not finite, or there would be more than
 * CG_QUEUE_MAX_STEPS steps. */
CG_API CG_NODISCARD cg_status cg_queue_grid(double t_end, double dt, size_t *points, cg_error *err);

/* Sample time i (0 <= i < points) of the grid cg_queue_grid described. */
CG_API double cg_queue_grid_time(double t_end, double dt, size_t points, size_t i);

/* --- queueing: M/M/1 ---------------------------------------------------------------- */

typedef struct cg_mm1 {
    bool stable;           /* lambda < mu: a steady state exists */
    double net_rate;       /* lambda - mu: how fast the fluid backlog moves */
    /* the steady-state figures; 0 when !stable */
    double rho;            /* utilisation lambda / mu */
    double mean_in_system; /* L = lambda / (mu - lambda) */
    double mean_residence; /* W = 1 / (mu - lambda), seconds */
    double mean_wait;      /* Wq = rho / (mu - lambda), seconds */
} cg_mm1;

/* Fills `out` for arrival rate lambda >= 0 and service rate mu > 0. An
 * unstable queue (lambda >= mu) is not an error: out->stable says so. */
CG_API CG_NODISCARD cg_status cg_queue_mm1(double lambda, double mu, cg_mm1 *out, cg_error *err);

#define CG_QUEUE_MAX_CUSTOMERS UINT64_C(100000000)

typedef struct cg_mm1_sim {
    uint64_t customers;
    double horizon;            /* seconds from 0 to the last departure */
    double mean_residence;     /* mean of departure - arrival */
    double mean_wait;          /* mean of service start - arrival */
    double time_avg_in_system; /* integral of N(t) over the horizon / horizon */
    double utilisation;        /* busy time / horizon */
} cg_mm1_sim;

/* Simulates `customers` customers through an M/M/1 FIFO queue that starts
 * empty at t = 0: exponential interarrival (rate lambda) and service
 * (rate mu) times from a splitmix64 stream seeded with `seed`, by inverse
 * transform. The same inputs give the same result on the same platform
 * (another libm's log may differ in the last bit). Needs 0 < lambda < mu and
 * 1 <= customers <= CG_QUEUE_MAX_CUSTOMERS. */
CG_API CG_NODISCARD cg_status cg_queue_simulate_mm1(double lambda, double mu, uint64_t customers,
                                                    uint64_t seed, cg_mm1_sim *out, cg_error *err);

/* --- printing ----------------------------------------------------------------------- */

/* Writes v in the shortest form that reads back as exactly v, the way
 * Python's repr does: fixed notation for 1e-4 <= |v| < 1e16 (with ".0" on
 * whole numbers, so it stays a real), exponent notation outside, "nan" /
 * "inf" / "-inf" for the non-finite. Returns what snprintf would. */
CG_API int cg_cost_format_real(double v, char *buf, size_t size);


#ifdef __cplusplus
}
#endif
#endif
