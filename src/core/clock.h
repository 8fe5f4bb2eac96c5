/*
 * Clocks for phase timings: wall (monotonic), the process's CPU time
 * (every thread) and the calling thread's. On a shared machine the CPU
 * figures are the ones that mean something; the wall figures count the
 * other processes' slices too. 0 when the clock is unavailable.
 */
#ifndef CG_CORE_CLOCK_H
#define CG_CORE_CLOCK_H

#include <time.h>

static inline double cg_clock_seconds(clockid_t clock)
{
    struct timespec ts;
    if (clock_gettime(clock, &ts) != 0)
        return 0.0;
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* A stopwatch over consecutive phases: cg_lap_add charges the wall and
 * process CPU seconds since the last lap to *wall_s and *cpu_s. */
typedef struct cg_lap {
    double wall, cpu;
} cg_lap;

static inline void cg_lap_start(cg_lap *l)
{
    l->wall = cg_clock_seconds(CLOCK_MONOTONIC);
    l->cpu = cg_clock_seconds(CLOCK_PROCESS_CPUTIME_ID);
}

static inline void cg_lap_add(cg_lap *l, double *wall_s, double *cpu_s)
{
    cg_lap now;
    cg_lap_start(&now);
    *wall_s += now.wall - l->wall;
    *cpu_s += now.cpu - l->cpu;
    *l = now;
}

#endif
