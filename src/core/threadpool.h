/*
 * A fork-join pool of worker threads, owned by whoever creates it (the
 * runtime creates one per cg_runtime; there is no process-wide pool).
 *
 * cg_threadpool_run(pool, fn, arg) calls fn(arg, t, n) once for every t in
 * [0, n), n = the pool's size, each on whichever thread claims t first (the
 * caller takes shares too, so a late worker never holds a job up; one
 * thread may run several shares, one after the other), and returns when
 * every call has returned. How a job is split
 * is the caller's business (t of n), so a split is the same on every run and
 * results do not depend on which thread ran what. A call made from inside a
 * job (nested parallelism) runs fn(arg, 0, 1) on its own thread.
 *
 * Workers spin briefly after a job (kernels come back to back) and then
 * sleep on a condition variable, so an idle runtime costs no CPU. While
 * the owner marks the pool hot (a runtime run is in progress: the next
 * kernel is microseconds away) they spin longer, yielding the CPU to any
 * other runnable thread as they do, before they sleep.
 * One job at a time: a pool is used by one runtime run at a time.
 */
#ifndef CG_CORE_THREADPOOL_H
#define CG_CORE_THREADPOOL_H

#include <stdbool.h>

#include "convgate/status.h"

/* The most threads a pool takes (cg_runtime_options.threads is checked). */
#define CG_THREADPOOL_MAX 256

typedef struct cg_threadpool cg_threadpool;

typedef void (*cg_threadpool_fn)(void *arg, int t, int n);

/* A pool of `threads` threads counting the caller (threads - 1 workers);
 * threads = 1 makes a pool that runs everything on the caller. */
cg_status cg_threadpool_new(int threads, cg_threadpool **out, cg_error *err);
void cg_threadpool_free(cg_threadpool *p);
/* Threads taking part in a job (1 for NULL). */
int cg_threadpool_size(const cg_threadpool *p);
/* Runs fn(arg, t, n) for t in [0, n) (see above); NULL pool: fn(arg, 0, 1). */
void cg_threadpool_run(cg_threadpool *p, cg_threadpool_fn fn, void *arg);

/* Marks the pool hot (a run in progress) or not (see above). */
void cg_threadpool_set_hot(cg_threadpool *p, bool hot);
/* The online processors (sysconf), at least 1: the default of --threads 0. */
int cg_threadpool_cpu_count(void);

/* The spin-wait hint (x86 PAUSE) for a loop waiting on another thread. */
static inline void cg_cpu_relax(void)
{
#if (defined(__x86_64__) || defined(__i386__)) && (defined(__GNUC__) || defined(__clang__))
    __builtin_ia32_pause();
#endif
}

#endif
