/*
 * The fork-join pool (src/core/threadpool.c): every share t of [0, n) runs
 * exactly once per job with the pool's n, whichever thread claims it, over
 * many jobs back to back (workers late, asleep or spinning: jobs with and
 * without a pause between them, short and long shares), and a job started
 * from inside a job runs inline as fn(arg, 0, 1).
 */
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/threadpool.h"
#include "testlib.h"

#define MAX_N 8

typedef struct job {
    atomic_int calls[MAX_N];
    atomic_int bad_n;
    int n;
    int spin;           /* busy iterations per share */
    cg_threadpool *pool;
    atomic_int nested;  /* inline calls seen from inside the job */
} job;

static void nested_fn(void *arg, int t, int n)
{
    job *j = arg;
    if (t == 0 && n == 1)
        atomic_fetch_add(&j->nested, 1);
}

static void share_fn(void *arg, int t, int n)
{
    job *j = arg;
    if (n != j->n || t < 0 || t >= n) {
        atomic_fetch_add(&j->bad_n, 1);
        return;
    }
    atomic_fetch_add(&j->calls[t], 1);
    volatile int sink = 0;
    for (int i = 0; i < j->spin; i++)
        sink += i;
    (void)sink;
    if (j->pool && t == n - 1)
        cg_threadpool_run(j->pool, nested_fn, j);
}

static void pause_us(long us)
{
    struct timespec ts = {0, us * 1000};
    nanosleep(&ts, NULL);
}

static void check_pool(int threads)
{
    cg_threadpool *p = NULL;
    cg_error err;
    cg_error_clear(&err);
    EXPECT(cg_threadpool_new(threads, &p, &err) == CG_OK, "pool of %d: %s", threads, err.msg);
    if (!p)
        return;
    EXPECT(cg_threadpool_size(p) == threads, "size %d, want %d", cg_threadpool_size(p), threads);
    for (int r = 0; r < 3000; r++) {
        job j;
        memset(&j, 0, sizeof j);
        for (int t = 0; t < MAX_N; t++)
            atomic_init(&j.calls[t], 0);
        atomic_init(&j.bad_n, 0);
        atomic_init(&j.nested, 0);
        j.n = threads;
        j.spin = (r % 7) * 2000;
        j.pool = r % 5 == 0 ? p : NULL;
        cg_threadpool_run(p, share_fn, &j);
        for (int t = 0; t < threads; t++)
            EXPECT(atomic_load(&j.calls[t]) == 1, "pool of %d, job %d: share %d ran %d times",
                   threads, r, t, atomic_load(&j.calls[t]));
        EXPECT(atomic_load(&j.bad_n) == 0, "pool of %d, job %d: a call with the wrong n", threads,
               r);
        if (j.pool)
            EXPECT(atomic_load(&j.nested) == 1, "pool of %d, job %d: nested job ran %d times",
                   threads, r, atomic_load(&j.nested));
        if (r % 100 == 0)
            pause_us(300); /* let the workers fall asleep */
    }
    cg_threadpool_free(p);
}

int main(void)
{
    check_pool(1);
    check_pool(2);
    check_pool(3);
    check_pool(MAX_N);
    /* NULL pool: one call on the caller */
    job j;
    memset(&j, 0, sizeof j);
    j.n = 1;
    cg_threadpool_run(NULL, share_fn, &j);
    EXPECT(atomic_load(&j.calls[0]) == 1, "NULL pool: share 0 ran %d times",
           atomic_load(&j.calls[0]));
    return test_done("test_threadpool");
}
