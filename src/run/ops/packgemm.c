/*
 * The convolution GEMM driver (see packgemm.h): kernel choice, weight
 * packing, K blocks, position groups, the split over threads, and the
 * portable micro-kernel.
 */
#include <string.h>

#include "run/ops/packgemm.h"

/* Positions one task covers: its C block (group x nr floats) stays in L1
 * while the K blocks pass. */
#define PG_GROUP_FLOATS 8192

/* Lanes a panel of nr channels wastes on m channels. */
static int64_t pg_waste(int64_t m, int nr)
{
    return (m + nr - 1) / nr * nr - m;
}

const cg_simd_gemm *cg_pg_choose(const cg_simd_ops *ops, int64_t m)
{
    /* the widest panel that divides m; else the one wasting fewest lanes */
    const cg_simd_gemm *best = &ops->gemm[0];
    for (int i = 1; i < ops->gemm_count; i++)
        if (pg_waste(m, ops->gemm[i].nr) < pg_waste(m, best->nr))
            best = &ops->gemm[i];
    return best;
}

size_t cg_pg_packed_floats(const cg_simd_gemm *g, int64_t m, int64_t k)
{
    int64_t panels = (m + g->nr - 1) / g->nr;
    return (size_t)panels * (size_t)g->nr * (size_t)k;
}

void cg_pg_pack(const cg_simd_gemm *g, const float *w, int64_t ldw, int64_t m, int64_t k,
                float *dst)
{
    int64_t panels = (m + g->nr - 1) / g->nr;
    for (int64_t pn = 0; pn < panels; pn++) {
        float *d = dst + pn * g->nr * k;
        int64_t m0 = pn * g->nr, rows = m - m0 < g->nr ? m - m0 : g->nr;
        for (int64_t q = 0; q < k; q++) {
            float *dq = d + q * g->nr;
            for (int64_t j = 0; j < rows; j++)
                dq[j] = w[(m0 + j) * ldw + q];
            for (int64_t j = rows; j < g->nr; j++)
                dq[j] = 0.0f;
        }
    }
}

typedef struct pg_job {
    const cg_pg_problem *p;
    int64_t panels, group, groups, kblock;
    float **cbuf;     /* per thread: group x nr */
    int32_t **ibuf;   /* per thread, exact integer mode: group x nr */
    int64_t **posbuf; /* per thread: the last tile's positions, padded to mr */
} pg_job;

/* Requests the cache lines of rows [q0, q1) of an in-place panel (nr floats
 * at w + q*ldw, any alignment). Each row lies on its own page for the
 * pitches of a weight matrix, where the hardware prefetchers do not
 * follow: without this every row of a panel's first pass waits for memory
 * (vit_b_16's MatMuls took 40% longer than over packed panels). */
static void pg_prefetch_rows(const float *w, int64_t ldw, int nr, int64_t q0, int64_t q1)
{
#if defined(__GNUC__)
    for (int64_t q = q0; q < q1; q++) {
        const char *row = (const char *)(w + q * ldw);
        for (int64_t b = 0; b < (int64_t)nr * (int64_t)sizeof(float); b += 64)
            __builtin_prefetch(row + b);
        __builtin_prefetch(row + (int64_t)nr * (int64_t)sizeof(float) - 1);
    }
#else
    (void)w, (void)ldw, (void)nr, (void)q0, (void)q1;
#endif
}

/* Where share s of n begins among `full` tasks of weight wf followed by
 * `rest` tasks of weight wr: the task at which the cumulative weight is
 * nearest s/n of the total. */
static int64_t tasks_share_start(int64_t full, int64_t wf, int64_t rest, int64_t wr, int s, int n)
{
    if (s >= n)
        return full + rest;
    double total = (double)full * (double)wf + (double)rest * (double)wr;
    double at = total * (double)s / (double)n, head = (double)full * (double)wf;
    int64_t task = at <= head ? (int64_t)(at / (double)wf + 0.5)
                              : full + (int64_t)((at - head) / (double)wr + 0.5);
    return task < full + rest ? task : full + rest;
}

/* Tasks run group by group, the panels inside; the shares split them by
 * positions (the last group may be short), not by count. */
static void pg_task(void *arg, int t, int nt)
{
    const pg_job *j = arg;
    const cg_pg_problem *p = j->p;
    const cg_simd_gemm *g = p->g;
    int64_t lo, hi;
    float *c = j->cbuf[t];
    int64_t *tail = j->posbuf[t];
    int64_t last = p->p - (j->groups - 1) * j->group, full = j->panels * (j->groups - 1);
    lo = tasks_share_start(full, j->group, j->panels, last, t, nt);
    hi = tasks_share_start(full, j->group, j->panels, last, t + 1, nt);
    for (int64_t task = lo; task < hi; task++) {
        int64_t pn = task % j->panels, gi = task / j->panels;
        int64_t p0 = gi * j->group, np = p->p - p0 < j->group ? p->p - p0 : j->group;
        /* a panel packed (k-major, nr a row) or nr columns of W in place */
        int64_t ldw = p->ldw ? p->ldw : g->nr;
        const float *w = p->w + (p->ldw ? pn * g->nr : pn * g->nr * p->k);
        int32_t *ic = j->ibuf ? j->ibuf[t] : NULL;
        int64_t tile_n = (np + g->mr - 1) / g->mr * g->mr * g->nr;
        for (int64_t kb = 0; kb < p->k; kb += j->kblock) {
            int64_t kc = p->k - kb < j->kblock ? p->k - kb : j->kblock;
            /* in place: the next block's rows (or the next task's first
             * block) arrive while the tiles of this one run */
            const float *nw = w + (kb + kc) * ldw;
            int64_t nq = p->k - kb - kc < j->kblock ? p->k - kb - kc : j->kblock;
            if (p->ldw && nq == 0 && task + 1 < hi) {
                int64_t npn = (task + 1) % j->panels;
                nw = p->w + npn * g->nr;
                nq = p->k < j->kblock ? p->k : j->kblock;
            }
            int64_t tiles = (np + g->mr - 1) / g->mr;
            for (int64_t i = 0; i < np; i += g->mr) {
                if (p->ldw && nq > 0) {
                    int64_t ti = i / g->mr;
                    pg_prefetch_rows(nw, ldw, g->nr, nq * ti / tiles, nq * (ti + 1) / tiles);
                }
                const int64_t *pos = p->pos + p0 + i;
                if (np - i < g->mr) {
                    /* a short last tile repeats its last position */
                    for (int r = 0; r < g->mr; r++)
                        tail[r] = pos[r < np - i ? r : np - i - 1];
                    pos = tail;
                }
                g->ukr(kc, w + kb * ldw, ldw, p->x, p->off + kb, pos, c + i * g->nr,
                       kb > 0 && !ic);
            }
            if (ic) { /* each block's sums are exact integers below 2^24 */
                for (int64_t e = 0; e < tile_n; e++) {
                    uint32_t v = (uint32_t)(int32_t)c[e];
                    ic[e] = (int32_t)(kb ? (uint32_t)ic[e] + v : v);
                }
            }
        }
        int64_t m0 = pn * g->nr, m1 = m0 + g->nr < p->m ? m0 + g->nr : p->m;
        if (ic)
            p->store_i32(p->store_ctx, ic, g->nr, p0, np, m0, m1);
        else
            p->store(p->store_ctx, c, g->nr, p0, np, m0, m1);
    }
}

/* Positions one task covers (a C block of about group_elems elements, in
 * L1 while the K blocks pass), shrunk until every thread has tasks. With
 * several threads the groups are then made about equal (169 positions in
 * groups of 126 and 43 over 4 panels, split by task count, gave one thread
 * three times the other's work: squeezenet1_1's 13x13 convolutions gained
 * 1.3x from a second thread), and the shares split the tasks by positions
 * (pg_task). */
static int64_t pg_group(int threads, int mr, int nr, int64_t panels, int64_t positions,
                        int64_t group_elems)
{
    int64_t group = group_elems / nr / mr * mr;
    if (group < mr)
        group = mr;
    while (threads > 1 && group > mr && panels * ((positions + group - 1) / group) < 4 * threads)
        group -= mr;
    if (threads < 2)
        return group;
    int64_t groups = (positions + group - 1) / group;
    int64_t even = (positions + groups - 1) / groups;
    return (even + mr - 1) / mr * mr;
}

bool cg_pg_run(cg_kernel_ctx *k, const cg_pg_problem *p)
{
    if (p->m == 0 || p->p == 0)
        return true;
    const cg_simd_gemm *g = p->g;
    int threads = cg_kernel_threads(k);
    pg_job j;
    j.p = p;
    j.panels = (p->m + g->nr - 1) / g->nr;
    j.kblock = CG_PG_KBLOCK;
    j.group = pg_group(threads, g->mr, g->nr, j.panels, p->p, PG_GROUP_FLOATS);
    j.groups = (p->p + j.group - 1) / j.group;
    j.cbuf = cg_kernel_scratch(k, (size_t)threads * sizeof *j.cbuf);
    j.posbuf = cg_kernel_scratch(k, (size_t)threads * sizeof *j.posbuf);
    j.ibuf = p->store_i32 ? cg_kernel_scratch(k, (size_t)threads * sizeof *j.ibuf) : NULL;
    if (!j.cbuf || !j.posbuf || (p->store_i32 && !j.ibuf))
        return false;
    for (int t = 0; t < threads; t++) {
        j.cbuf[t] = cg_kernel_scratch(k, (size_t)(j.group * g->nr) * sizeof(float));
        j.posbuf[t] = cg_kernel_scratch(k, (size_t)g->mr * sizeof(int64_t));
        if (!j.cbuf[t] || !j.posbuf[t])
            return false;
        if (j.ibuf && !(j.ibuf[t] = cg_kernel_scratch(k, (size_t)(j.group * g->nr) *
                                                             sizeof(int32_t))))
            return false;
    }
    cg_kernel_parallel_work(k, (double)p->m * (double)p->k * (double)p->p, pg_task, &j);
    return true;
}

/* ---- float64 ---------------------------------------------------------------------- */

const cg_simd_dgemm *cg_pg_choose_f64(const cg_simd_ops *ops, int64_t m)
{
    if (ops->dgemm_count == 0)
        return NULL;
    const cg_simd_dgemm *best = &ops->dgemm[0];
    for (int i = 1; i < ops->dgemm_count; i++)
        if (pg_waste(m, ops->dgemm[i].nr) < pg_waste(m, best->nr))
            best = &ops->dgemm[i];
    return best;
}

size_t cg_pg_packed_doubles(const cg_simd_dgemm *g, int64_t m, int64_t k)
{
    int64_t panels = (m + g->nr - 1) / g->nr;
    return (size_t)panels * (size_t)g->nr * (size_t)k;
}

/* cg_pg_pack_f64's panels from doubles, or from float32 bytes at any
 * alignment (f32), each widened exactly. */
static void pack_f64(const cg_simd_dgemm *g, const void *w, bool f32, int64_t ldw, int64_t m,
                     int64_t k, double *dst)
{
    const uint8_t *wb = w;
    int64_t panels = (m + g->nr - 1) / g->nr;
    for (int64_t pn = 0; pn < panels; pn++) {
        double *d = dst + pn * g->nr * k;
        int64_t m0 = pn * g->nr, rows = m - m0 < g->nr ? m - m0 : g->nr;
        for (int64_t q = 0; q < k; q++) {
            double *dq = d + q * g->nr;
            for (int64_t j = 0; j < rows; j++) {
                size_t at = (size_t)((m0 + j) * ldw + q);
                if (f32) {
                    float v;
                    memcpy(&v, wb + at * sizeof v, sizeof v);
                    dq[j] = (double)v;
                } else {
                    dq[j] = ((const double *)w)[at];
                }
            }
            for (int64_t j = rows; j < g->nr; j++)
                dq[j] = 0.0;
        }
    }
}

void cg_pg_pack_f64(const cg_simd_dgemm *g, const double *w, int64_t ldw, int64_t m, int64_t k,
                    double *dst)
{
    pack_f64(g, w, false, ldw, m, k, dst);
}

void cg_pg_pack_f64_from_f32(const cg_simd_dgemm *g, const void *w, int64_t ldw, int64_t m,
                             int64_t k, double *dst)
{
    pack_f64(g, w, true, ldw, m, k, dst);
}

typedef struct pg_job_f64 {
    const cg_pg_problem_f64 *p;
    int64_t panels, group, groups;
    double **cbuf;    /* per thread: group x nr */
    int64_t **posbuf; /* per thread: the last tile's positions, padded to mr */
} pg_job_f64;

/* pg_task in float64: the K blocks continue each tile's sums (acc), so
 * every element is one chain over k in order. */
static void pg_task_f64(void *arg, int t, int nt)
{
    const pg_job_f64 *j = arg;
    const cg_pg_problem_f64 *p = j->p;
    const cg_simd_dgemm *g = p->g;
    int64_t lo, hi;
    double *c = j->cbuf[t];
    int64_t *tail = j->posbuf[t];
    /* split by positions, as pg_task */
    int64_t last = p->p - (j->groups - 1) * j->group, full = j->panels * (j->groups - 1);
    lo = tasks_share_start(full, j->group, j->panels, last, t, nt);
    hi = tasks_share_start(full, j->group, j->panels, last, t + 1, nt);
    for (int64_t task = lo; task < hi; task++) {
        int64_t pn = task % j->panels, gi = task / j->panels;
        int64_t p0 = gi * j->group, np = p->p - p0 < j->group ? p->p - p0 : j->group;
        const double *w = p->w + pn * g->nr * p->k;
        for (int64_t kb = 0; kb < p->k; kb += CG_PG_KBLOCK) {
            int64_t kc = p->k - kb < CG_PG_KBLOCK ? p->k - kb : CG_PG_KBLOCK;
            for (int64_t i = 0; i < np; i += g->mr) {
                const int64_t *pos = p->pos + p0 + i;
                if (np - i < g->mr) {
                    for (int r = 0; r < g->mr; r++)
                        tail[r] = pos[r < np - i ? r : np - i - 1];
                    pos = tail;
                }
                g->ukr(kc, w + kb * g->nr, g->nr, p->x, p->off + kb, pos, c + i * g->nr,
                       kb > 0);
            }
        }
        int64_t m0 = pn * g->nr, m1 = m0 + g->nr < p->m ? m0 + g->nr : p->m;
        p->store(p->store_ctx, c, g->nr, p0, np, m0, m1);
    }
}

bool cg_pg_run_f64(cg_kernel_ctx *k, const cg_pg_problem_f64 *p)
{
    if (p->m == 0 || p->p == 0)
        return true;
    const cg_simd_dgemm *g = p->g;
    int threads = cg_kernel_threads(k);
    pg_job_f64 j;
    j.p = p;
    j.panels = (p->m + g->nr - 1) / g->nr;
    /* the float32 C block's bytes */
    j.group = pg_group(threads, g->mr, g->nr, j.panels, p->p, PG_GROUP_FLOATS / 2);
    j.groups = (p->p + j.group - 1) / j.group;
    j.cbuf = cg_kernel_scratch(k, (size_t)threads * sizeof *j.cbuf);
    j.posbuf = cg_kernel_scratch(k, (size_t)threads * sizeof *j.posbuf);
    if (!j.cbuf || !j.posbuf)
        return false;
    for (int t = 0; t < threads; t++) {
        j.cbuf[t] = cg_kernel_scratch(k, (size_t)(j.group * g->nr) * sizeof(double));
        j.posbuf[t] = cg_kernel_scratch(k, (size_t)g->mr * sizeof(int64_t));
        if (!j.cbuf[t] || !j.posbuf[t])
            return false;
    }
    cg_kernel_parallel_work(k, (double)p->m * (double)p->k * (double)p->p, pg_task_f64, &j);
    return true;
}

typedef struct pw_job {
    const cg_pg_pw_problem *p;
    int64_t panels, tiles;
    float **xbuf; /* per thread: a short tile's x, k rows of np_max floats */
} pw_job;

/* Tasks run position tile by position tile, the channel panels inside: a
 * thread's consecutive tasks read the same k x np block of x. A tile whose
 * positions end inside a vector reads x from a copy padded to whole
 * vectors (the last plane's vector would run past x). The shares split
 * the tasks by their positions, not their count: the last tile may be
 * short (196 positions are tiles of 48, 48, 48, 48 and 4), and a split by
 * count gave one thread 1.6 times the other's work. */
static void pw_task(void *arg, int t, int nt)
{
    const pw_job *j = arg;
    const cg_pg_pw_problem *p = j->p;
    const cg_simd_pw *pw = p->pw;
    int64_t mr = pw->mr, nr = p->g->nr, copied = -1;
    int64_t last_np = p->p - (j->tiles - 1) * pw->np_max;
    int64_t full = j->panels * (j->tiles - 1);
    int64_t lo = tasks_share_start(full, pw->np_max, j->panels, last_np, t, nt);
    int64_t hi = tasks_share_start(full, pw->np_max, j->panels, last_np, t + 1, nt);
    for (int64_t task = lo; task < hi; task++) {
        int64_t pn = task % j->panels, ti = task / j->panels;
        int64_t p0 = ti * pw->np_max, np = p->p - p0 < pw->np_max ? p->p - p0 : pw->np_max;
        int64_t m0 = pn * mr, m1 = m0 + mr < p->m ? m0 + mr : p->m;
        const float *x = p->x + p0;
        int64_t ldx = p->p;
        if (np % pw->vw) {
            int64_t padded = (np + pw->vw - 1) / pw->vw * pw->vw;
            float *xb = j->xbuf[t];
            if (copied != ti) {
                for (int64_t q = 0; q < p->k; q++) {
                    memcpy(xb + q * padded, x + q * ldx, (size_t)np * sizeof(float));
                    memset(xb + q * padded + np, 0, (size_t)(padded - np) * sizeof(float));
                }
                copied = ti;
            }
            x = xb;
            ldx = padded;
        }
        cg_simd_pw_epi e = p->e;
        e.bias = e.bias ? e.bias + m0 : NULL;
        e.add = e.add ? e.add + m0 * p->p + p0 : NULL;
        float *y = p->y + m0 * p->p + p0;
        const float *w = p->w + m0 / nr * nr * p->k + m0 % nr; /* inside a panel */
        pw->tile(y, p->p, w, nr, x, ldx, p->k, m1 - m0, np, &e);
        if (p->finish)
            p->finish(p->finish_ctx, y, p->p, m0, m1, p0, np);
    }
}

bool cg_pg_pw_run(cg_kernel_ctx *k, const cg_pg_pw_problem *p)
{
    if (p->m == 0 || p->p == 0)
        return true;
    int threads = cg_kernel_threads(k);
    pw_job j = {p, (p->m + p->pw->mr - 1) / p->pw->mr,
                (p->p + p->pw->np_max - 1) / p->pw->np_max, NULL};
    if (p->p % p->pw->vw) {
        j.xbuf = cg_kernel_scratch(k, (size_t)threads * sizeof *j.xbuf);
        if (!j.xbuf)
            return false;
        for (int t = 0; t < threads; t++)
            if (!(j.xbuf[t] = cg_kernel_scratch(k, (size_t)p->k * (size_t)p->pw->np_max *
                                                       sizeof(float))))
                return false;
    }
    cg_kernel_parallel_work(k, (double)p->m * (double)p->k * (double)p->p, pw_task, &j);
    return true;
}

/* The portable micro-kernel: 4 positions x 8 channels, every sum in k
 * order. */
void cg_pg_ukr_c(int64_t kc, const float *w, int64_t ldw, const float *x, const int64_t *off,
                 const int64_t *pos, float *c, int acc)
{
    enum { MR = 4, NR = 8 };
    float t[MR][NR];
    for (int i = 0; i < MR; i++)
        for (int jj = 0; jj < NR; jj++)
            t[i][jj] = acc ? c[i * NR + jj] : 0.0f;
    for (int64_t q = 0; q < kc; q++) {
        const float *xq = x + off[q];
        const float *wq = w + q * ldw;
        for (int i = 0; i < MR; i++) {
            float xv = xq[pos[i]];
            for (int jj = 0; jj < NR; jj++)
                t[i][jj] += xv * wq[jj];
        }
    }
    for (int i = 0; i < MR; i++)
        for (int jj = 0; jj < NR; jj++)
            c[i * NR + jj] = t[i][jj];
}
