/*
 * The fork-join pool (see threadpool.h); the runtime's only thread code.
 *
 * A job is published by storing fn/arg, resetting `next` and then bumping
 * `gen`. Its n shares are claimed from `next`, by the caller and by every
 * worker that sees the new generation, until none is left: each share runs
 * exactly once, and a share whose worker is late (asleep, or descheduled on
 * a loaded machine) is run by whoever comes first, so the caller never waits
 * for a thread that has not started; it waits only for shares already
 * running. A claim made after the next job's reset belongs to that job (fn
 * and arg are read after the claim, and are written only while no share is
 * claimed). Each finished share decrements `pending`. Waiting is a short
 * spin (the next kernel usually follows within microseconds) and then a
 * condition variable. The sleep protocol never loses a wake-up: a sleeper
 * counts itself in `sleepers` and re-reads `gen` under the lock before it
 * waits, while the publisher bumps `gen` before it reads `sleepers` and
 * broadcasts under the lock (sequentially consistent atomics order the two).
 * Completion uses the same protocol in the other direction.
 */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "core/threadpool.h"

/* How long a waiter spins before it sleeps: long enough to catch a kernel
 * that follows at once, short because a spinning thread takes a CPU from
 * the caller on a loaded machine (100 us cost mobilenet_v3_small at two
 * threads 30% more CPU time than 5 us at load 13 on 2 CPUs), and a late
 * worker no longer holds a job up (its share is claimed by the caller). */
#define SPIN_NS 5000
/* ... and while the pool is hot (a run in progress): a sleeping worker
 * takes tens of microseconds to wake here, longer than many kernels of a
 * small convolutional net, so the caller ran both shares of most of them
 * and a second thread bought little (squeezenet1_1 5.96 ms at one thread,
 * 7.30 ms at two). Past SPIN_NS the spinner yields the CPU at every check,
 * so on a loaded machine other work runs in its place. */
#define SPIN_HOT_NS 2000000

struct cg_threadpool;

typedef struct worker {
    struct cg_threadpool *pool;
    pthread_t thread;
} worker;

struct cg_threadpool {
    int n;                   /* threads taking part, the caller included */
    int started;             /* workers running */
    worker *workers;
    pthread_mutex_t lock;
    pthread_cond_t wake;     /* a new job or stop */
    pthread_cond_t done;     /* the last worker finished */
    atomic_uint gen;
    atomic_int next;         /* the next share of the current job to claim */
    atomic_int pending;      /* shares of the current job not finished */
    atomic_int sleepers;     /* workers waiting on `wake` */
    atomic_int caller_sleeps;/* the caller waits on `done` */
    atomic_bool stop;
    atomic_bool busy;        /* a job is in flight (nested calls run inline) */
    atomic_bool hot;         /* a run in progress: spin longer (SPIN_HOT_NS) */
    cg_threadpool_fn fn;
    void *arg;
};

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Claims and runs shares of the current job until none is left. */
static void run_shares(cg_threadpool *p)
{
    for (;;) {
        int t = atomic_fetch_add(&p->next, 1);
        if (t >= p->n)
            return;
        p->fn(p->arg, t, p->n);
        if (atomic_fetch_sub(&p->pending, 1) == 1 && atomic_load(&p->caller_sleeps)) {
            pthread_mutex_lock(&p->lock);
            pthread_cond_signal(&p->done);
            pthread_mutex_unlock(&p->lock);
        }
    }
}

/* Spins until `gen` differs from seen or SPIN_NS pass; true when it did. */
static bool spin_for_job(cg_threadpool *p, unsigned seen)
{
    uint64_t start = 0;
    for (unsigned i = 1;; i++) {
        if (atomic_load(&p->gen) != seen || atomic_load(&p->stop))
            return true;
        cg_cpu_relax();
        if ((i & 63) == 0) {
            uint64_t t = now_ns();
            if (!start) {
                start = t;
            } else if (t - start > SPIN_NS) {
                if (!atomic_load(&p->hot) || t - start > SPIN_HOT_NS)
                    return false;
                sched_yield();
            }
        }
    }
}

static void *worker_main(void *arg)
{
    worker *w = arg;
    cg_threadpool *p = w->pool;
    unsigned seen = 0;
    for (;;) {
        if (!spin_for_job(p, seen)) {
            pthread_mutex_lock(&p->lock);
            atomic_fetch_add(&p->sleepers, 1);
            while (atomic_load(&p->gen) == seen && !atomic_load(&p->stop))
                pthread_cond_wait(&p->wake, &p->lock);
            atomic_fetch_sub(&p->sleepers, 1);
            pthread_mutex_unlock(&p->lock);
        }
        if (atomic_load(&p->stop))
            return NULL;
        seen = atomic_load(&p->gen);
        run_shares(p);
    }
}

int cg_threadpool_cpu_count(void)
{
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    if (n < 1)
        return 1;
    return n > CG_THREADPOOL_MAX ? CG_THREADPOOL_MAX : (int)n;
}

cg_status cg_threadpool_new(int threads, cg_threadpool **out, cg_error *err)
{
    *out = NULL;
    if (threads < 1 || threads > CG_THREADPOOL_MAX)
        return cg_error_set(err, CG_USAGE, "thread count %d is outside 1..%d", threads,
                            CG_THREADPOOL_MAX);
    cg_threadpool *p = calloc(1, sizeof *p);
    if (!p)
        return cg_error_set(err, CG_NOMEM, "out of memory creating a thread pool");
    p->n = threads;
    atomic_init(&p->gen, 0);
    atomic_init(&p->next, threads); /* no job: nothing to claim */
    atomic_init(&p->pending, 0);
    atomic_init(&p->sleepers, 0);
    atomic_init(&p->caller_sleeps, 0);
    atomic_init(&p->stop, false);
    atomic_init(&p->busy, false);
    atomic_init(&p->hot, false);
    if (pthread_mutex_init(&p->lock, NULL) != 0) {
        free(p);
        return cg_error_set(err, CG_NOMEM, "cannot create a mutex for the thread pool");
    }
    if (pthread_cond_init(&p->wake, NULL) != 0) {
        pthread_mutex_destroy(&p->lock);
        free(p);
        return cg_error_set(err, CG_NOMEM, "cannot create a condition for the thread pool");
    }
    if (pthread_cond_init(&p->done, NULL) != 0) {
        pthread_cond_destroy(&p->wake);
        pthread_mutex_destroy(&p->lock);
        free(p);
        return cg_error_set(err, CG_NOMEM, "cannot create a condition for the thread pool");
    }
    if (threads > 1) {
        p->workers = calloc((size_t)threads, sizeof *p->workers);
        if (!p->workers) {
            cg_threadpool_free(p);
            return cg_error_set(err, CG_NOMEM, "out of memory creating a thread pool");
        }
        for (int t = 1; t < threads; t++) {
            worker *w = &p->workers[t];
            w->pool = p;
            int rc = pthread_create(&w->thread, NULL, worker_main, w);
            if (rc != 0) {
                cg_threadpool_free(p);
                return cg_error_set(err, CG_NOMEM, "cannot start thread %d of %d: %s", t,
                                    threads, strerror(rc));
            }
            p->started = t;
        }
    }
    *out = p;
    return CG_OK;
}

void cg_threadpool_free(cg_threadpool *p)
{
    if (!p)
        return;
    pthread_mutex_lock(&p->lock);
    atomic_store(&p->stop, true);
    pthread_cond_broadcast(&p->wake);
    pthread_mutex_unlock(&p->lock);
    for (int t = 1; t <= p->started; t++)
        pthread_join(p->workers[t].thread, NULL);
    pthread_cond_destroy(&p->done);
    pthread_cond_destroy(&p->wake);
    pthread_mutex_destroy(&p->lock);
    free(p->workers);
    free(p);
}

void cg_threadpool_set_hot(cg_threadpool *p, bool hot)
{
    if (p)
        atomic_store(&p->hot, hot);
}

int cg_threadpool_size(const cg_threadpool *p)
{
    return p ? p->n : 1;
}

void cg_threadpool_run(cg_threadpool *p, cg_threadpool_fn fn, void *arg)
{
    if (!p || p->n == 1 || atomic_exchange(&p->busy, true)) {
        fn(arg, 0, 1);
        return;
    }
    p->fn = fn;
    p->arg = arg;
    atomic_store(&p->pending, p->n);
    atomic_store(&p->next, 0);
    atomic_fetch_add(&p->gen, 1);
    if (atomic_load(&p->sleepers) > 0) {
        pthread_mutex_lock(&p->lock);
        pthread_cond_broadcast(&p->wake);
        pthread_mutex_unlock(&p->lock);
    }
    run_shares(p);
    /* wait for the shares the workers claimed: spin, then sleep */
    uint64_t start = 0;
    for (unsigned i = 1; atomic_load(&p->pending) > 0; i++) {
        cg_cpu_relax();
        if ((i & 63) != 0)
            continue;
        uint64_t t = now_ns();
        if (!start) {
            start = t;
            continue;
        }
        if (t - start <= SPIN_NS)
            continue;
        if (atomic_load(&p->hot) && t - start <= SPIN_HOT_NS) {
            sched_yield();
            continue;
        }
        pthread_mutex_lock(&p->lock);
        atomic_store(&p->caller_sleeps, 1);
        while (atomic_load(&p->pending) > 0)
            pthread_cond_wait(&p->done, &p->lock);
        atomic_store(&p->caller_sleeps, 0);
        pthread_mutex_unlock(&p->lock);
        break;
    }
    atomic_store(&p->busy, false);
}
