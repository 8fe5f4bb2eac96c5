/*
 * Matrix products: MatMul, Gemm, MatMulInteger, QLinearMatMul.
 *
 * MatMul follows numpy: 1-D operands are promoted (a leading/trailing 1 that
 * is dropped from the result) and the batch dims broadcast. float32 runs on
 * OpenBLAS sgemm (a 2-D B folds A's whole batch into one call), float16 and
 * bfloat16 through float32, float64 on dgemm; integers are exact: products
 * accumulate in uint64 (wrapping, as two's complement does) and are stored
 * with the C conversion to the output width.
 *
 * Under CG_KPREC_FP16_ACC16 (a node of a partition emulating an fp16
 * target) the float products skip BLAS: each inner product runs in order
 * with every product and partial sum rounded to fp16, as fp16 hardware
 * accumulates (the executor has already rounded the operands). Under
 * CG_KPREC_FP16_SUM11 (float64 mode) the double products do the same with
 * fp16's significand and an unbounded exponent.
 */
#include <math.h>
#include <string.h>

#include <stdlib.h>

#include "core/mapfile.h"
#include "run/initshare.h"
#include "run/ops/kernels.h"
#include "run/ops/nn_common.h"
#include "run/ops/packgemm.h"

/* The broadcast batch structure of a (possibly promoted) matrix product. */
typedef struct mm_plan {
    int64_t m, n, kk;
    int64_t batch;                   /* product of the broadcast batch dims */
    int nb;                          /* number of batch dims */
    int64_t bdims[CG_MAX_RANK];      /* broadcast batch dims */
    int64_t astr[CG_MAX_RANK];       /* A's stride per batch dim, in matrices */
    int64_t bstr[CG_MAX_RANK];
    int64_t a_batches, b_batches;    /* matrices A and B really hold */
    int out_rank;
    int64_t out_dims[CG_MAX_RANK];
} mm_plan;

static cg_status mm_plan_init(cg_kernel_ctx *k, const cg_tensor *a, const cg_tensor *b, mm_plan *p)
{
    if (a->rank < 1 || b->rank < 1)
        return cg_kernel_fail(k, CG_INVALID, "MatMul operands must have rank >= 1 (got %d and %d)",
                              a->rank, b->rank);
    int64_t am = a->rank == 1 ? 1 : a->dims[a->rank - 2];
    int64_t ak = a->dims[a->rank - 1];
    int64_t bk = b->rank == 1 ? b->dims[0] : b->dims[b->rank - 2];
    int64_t bn = b->rank == 1 ? 1 : b->dims[b->rank - 1];
    if (ak != bk)
        return cg_kernel_fail(k, CG_INVALID, "inner dimensions differ: A has K=%lld, B has K=%lld",
                              (long long)ak, (long long)bk);
    int ra = a->rank > 2 ? a->rank - 2 : 0, rb = b->rank > 2 ? b->rank - 2 : 0;
    int nb;
    if (!cg_broadcast_shapes(ra, a->dims, rb, b->dims, &nb, p->bdims))
        return cg_kernel_fail(k, CG_INVALID, "batch dimensions of A and B do not broadcast");
    p->m = am;
    p->n = bn;
    p->kk = ak;
    p->nb = nb;
    cg_broadcast_strides(ra, a->dims, nb, p->bdims, p->astr);
    cg_broadcast_strides(rb, b->dims, nb, p->bdims, p->bstr);
    p->batch = cg_nn_prod(nb, p->bdims);
    p->a_batches = cg_nn_prod(ra, a->dims);
    p->b_batches = cg_nn_prod(rb, b->dims);
    p->out_rank = 0;
    for (int i = 0; i < nb; i++)
        p->out_dims[p->out_rank++] = p->bdims[i];
    if (a->rank > 1)
        p->out_dims[p->out_rank++] = am;
    if (b->rank > 1)
        p->out_dims[p->out_rank++] = bn;
    if (p->batch < 0 || p->a_batches < 0 || p->b_batches < 0)
        return cg_kernel_fail(k, CG_INVALID, "batch size overflows");
    return CG_OK;
}

/* Matrix offsets (in matrices) of A and B for flat batch index bi. */
static void mm_offsets(const mm_plan *p, int64_t bi, int64_t *ao, int64_t *bo)
{
    int64_t a = 0, b = 0;
    for (int d = p->nb - 1; d >= 0; d--) {
        int64_t idx = bi % p->bdims[d];
        bi /= p->bdims[d];
        a += idx * p->astr[d];
        b += idx * p->bstr[d];
    }
    *ao = a;
    *bo = b;
}

/* The float32 product on the kernel's threads: each thread runs
 * single-threaded sgemm on its share of whole matrices (batches) or, with
 * fewer matrices than threads, of rows. The result must not depend on the
 * thread count, and OpenBLAS picks another summation order (its small-matrix
 * kernels) for small products: rows are split only while every share stays
 * far above that size (MM_SPLIT_MIN multiply-adds), else the matrices go to
 * the threads whole, or run on one. */
#define MM_SPLIT_MIN 8e6
/* Row shares start at multiples of 96: OpenBLAS computes a tail of rows
 * (fewer than its kernel's M unroll: 8, 16 or 24 rows, and blocks that are
 * multiples of it) with another kernel and another summation order, so a
 * share boundary off those multiples changes the bits (Haswell sgemm on an
 * AMD EPYC: shares of 464 rows differed from one thread in 10,742 of 134,400
 * values, shares of 96k rows in none). 96 is a multiple of every unroll. */
#define MM_ROW_GRAIN 96
typedef struct mm_job {
    cg_kernel_ctx *k;
    const mm_plan *p;
    const float *a, *b;
    float *y;
    bool tall;        /* B shared: A's batches stacked as one tall matrix */
    int64_t units;    /* matrices, or row blocks of 8 with split_rows */
    bool split_rows;
    bool too_big;     /* a dimension outside BLAS's int (read after the job) */
    bool expired;     /* the run's time limit passed (read after the job) */
} mm_job;

static void mm_task(void *arg, int t, int nt)
{
    mm_job *j = arg;
    const mm_plan *p = j->p;
    int64_t asz = p->m * p->kk, bsz = p->kk * p->n, ysz = p->m * p->n, lo, hi;
    if (j->tall || j->split_rows) {
        int64_t rows = j->tall ? p->m * p->batch : p->m;
        int64_t mats = j->tall ? 1 : p->batch;
        cg_kernel_share(rows, MM_ROW_GRAIN, t, nt, &lo, &hi);
        for (int64_t bi = 0; bi < mats && hi > lo; bi++) {
            int64_t ao = 0, bo = 0;
            if (cg_kernel_time_up(j->k)) {
                j->expired = true;
                return;
            }
            if (!j->tall)
                mm_offsets(p, bi, &ao, &bo);
            if (!cg_nn_sgemm(false, false, hi - lo, p->n, p->kk, 1.0f, j->a + ao * asz + lo * p->kk,
                             p->kk, j->b + bo * bsz, p->n, 0.0f, j->y + bi * ysz + lo * p->n,
                             p->n))
                j->too_big = true;
        }
        return;
    }
    cg_kernel_share(p->batch, 1, t, nt, &lo, &hi);
    for (int64_t bi = lo; bi < hi; bi++) {
        int64_t ao, bo;
        if (cg_kernel_time_up(j->k)) {
            j->expired = true;
            return;
        }
        mm_offsets(p, bi, &ao, &bo);
        if (!cg_nn_sgemm(false, false, p->m, p->n, p->kk, 1.0f, j->a + ao * asz, p->kk,
                         j->b + bo * bsz, p->n, 0.0f, j->y + bi * ysz, p->n))
            j->too_big = true;
    }
}

static cg_status mm_f32(cg_kernel_ctx *k, const mm_plan *p, const float *a, const float *b,
                        float *y)
{
    mm_job j = {k, p, a, b, y, p->b_batches == 1 && p->a_batches == p->batch, 0, false, false,
                false};
    int threads = cg_kernel_threads(k);
    double per_mat = (double)p->m * (double)p->n * (double)p->kk;
    double work = (double)p->batch * per_mat;
    bool rows_ok = per_mat / threads >= MM_SPLIT_MIN || (j.tall && work / threads >= MM_SPLIT_MIN);
    j.split_rows = !j.tall && p->batch < threads && rows_ok;
    if ((j.tall || j.split_rows) && !rows_ok)
        work = 0; /* one thread: splitting would change OpenBLAS's kernels */
    if (!j.tall && !j.split_rows && p->batch < threads)
        work = 0;
    cg_kernel_parallel_work(k, work, mm_task, &j);
    if (j.expired) /* a matrix at a time, so a run over its time limit stops here */
        return cg_kernel_check_time(k);
    if (j.too_big)
        return cg_kernel_fail(k, CG_UNSUPPORTED, "matrix dimensions exceed the BLAS int range");
    return CG_OK;
}

/* ---- float32 products on the reference's own GEMM (packgemm.h) -----------
 *
 * At a vector level, float32 MatMul and Gemm run on the convolution GEMM's
 * micro-kernels rather than OpenBLAS: B (K x N) is packed into panels of
 * the kernel's nr columns of Y, and the rows of A are the positions, read
 * in place (A(i,q) at a[i*ars + q*acs], so a transposed A costs nothing).
 * A constant B is packed once, at init (prepare.def), shared by every
 * runtime of the process over the same weights, or, where its N fills the
 * kernel's panels, read in place for a runtime's first runs and packed at
 * its third (MM_IN_PLACE_RUNS); a computed B is packed per
 * matrix into scratch, which costs K*N copies against rows*K*N
 * multiply-adds, so it is done only when there are at least 2*mr rows.
 * OpenBLAS keeps the portable level (its kernels beat plain C), the
 * products of few rows, and the float64 mode.
 *
 * Why not OpenBLAS everywhere: which of its kernels runs is the
 * environment's choice (OPENBLAS_CORETYPE). With Haswell there, as on the
 * machine of docs/BENCHMARKS.md, an AVX-512 CPU runs its AVX2 kernels: vit_b_16
 * took 368 ms against 233 ms with its SkylakeX kernels, and 230 ms here.
 * Every Y element is one float32 sum over K in packgemm's fixed order, so
 * the result does not depend on the thread count. */

typedef struct mm_packed {
    const void *b_data;
    cg_dtype b_dtype;
    int64_t kk, n;
    bool tb; /* B is stored N x K (Gemm's transB) */
    const cg_simd_gemm *g;
    const float *data;
    int64_t ldw;       /* 0: data is B packed; else B itself, read in place */
    int runs;          /* runs served in place (MM_IN_PLACE_RUNS) */
    cg_shared *shared; /* data belongs to this shared buffer */
    bool owned;        /* data is malloc'd */
} mm_packed;

static void mm_packed_free(void *v)
{
    mm_packed *mp = v;
    if (mp) {
        if (mp->shared)
            cg_shared_release(mp->shared);
        else if (mp->owned)
            free((void *)mp->data);
    }
    free(mp);
}

/* Whether g reads a constant B in place rather than packed (packgemm.h,
 * ldw): float32 stored K x N with N a multiple of g->nr, so each panel's
 * row is nr contiguous floats of B's row. Nothing is copied at init, the
 * model's mapping holds the weights (a misaligned payload is read there:
 * the vector kernels load unaligned), and the sums are the packed path's. */
static bool mm_in_place(const cg_tensor *b, bool tb, int64_t n, const cg_simd_gemm *g)
{
    return b->dtype == CG_DTYPE_FLOAT && !tb && n > 0 && n % g->nr == 0;
}

/* What a shared packing derives from besides B's address. */
typedef struct mm_pack_tag {
    char what[8]; /* "matmul": never equal to conv.c's tags */
    int64_t kk, n;
    const cg_simd_gemm *g;
    int32_t dtype;
    int32_t tb;
} mm_pack_tag;

/* A float32 B at any alignment into panels of g->nr columns of Y, k-major,
 * zero past n: B is kk x n row-major, or n x kk with tb (read with memcpy:
 * the model's bytes of a misaligned payload, cg_kernel_input_source). */
static void mm_pack_b_bytes(const cg_simd_gemm *g, const uint8_t *b, bool tb, int64_t kk,
                            int64_t n, float *dst)
{
    int64_t panels = (n + g->nr - 1) / g->nr;
    for (int64_t pn = 0; pn < panels; pn++) {
        int64_t n0 = pn * g->nr, cols = n - n0 < g->nr ? n - n0 : g->nr;
        float *d = dst + pn * g->nr * kk;
        for (int64_t q = 0; q < kk; q++) {
            float *dq = d + q * g->nr;
            if (tb)
                for (int64_t j = 0; j < cols; j++)
                    memcpy(dq + j, b + (size_t)((n0 + j) * kk + q) * sizeof(float),
                           sizeof(float));
            else
                memcpy(dq, b + (size_t)(q * n + n0) * sizeof(float), (size_t)cols * sizeof(float));
            memset(dq + cols, 0, (size_t)(g->nr - cols) * sizeof(float));
        }
    }
}

/* B into panels of g->nr columns of Y, k-major, zero past n: B is kk x n
 * row-major, or n x kk with tb. */
static void mm_pack_b(const cg_simd_gemm *g, const float *b, bool tb, int64_t kk, int64_t n,
                      float *dst)
{
    if (tb) {
        cg_pg_pack(g, b, kk, n, kk, dst);
        return;
    }
    mm_pack_b_bytes(g, (const uint8_t *)b, false, kk, n, dst);
}

/* The packgemm kernel for a float32 product of rows x kk by kk x n, or
 * NULL for OpenBLAS (see above). */
static const cg_simd_gemm *mm_pg_kernel(cg_kernel_ctx *k, int64_t rows, int64_t n, bool b_const)
{
    if (cg_kernel_simd(k) == CG_SIMD_PORTABLE)
        return NULL;
    const cg_simd_ops *ops = cg_simd_ops_get(cg_kernel_simd(k));
    if (ops->level == CG_SIMD_PORTABLE || ops->gemm_count < 1)
        return NULL;
    const cg_simd_gemm *g = cg_pg_choose(ops, n);
    return b_const || rows >= 2 * g->mr ? g : NULL;
}

/* The node's state when it is B for g (packed or in place), else NULL. */
static mm_packed *mm_state(const cg_kernel_ctx *k, const cg_tensor *b, bool tb, int64_t kk,
                           int64_t n, const cg_simd_gemm *g)
{
    mm_packed *mp = cg_kernel_state(k);
    return mp && mp->b_data == b->data && mp->b_dtype == b->dtype && mp->kk == kk &&
                   mp->n == n && mp->tb == tb && mp->g == g
               ? mp
               : NULL;
}

/* A new state for B read by g. */
static mm_packed *mm_state_new(const cg_tensor *b, bool tb, int64_t kk, int64_t n,
                               const cg_simd_gemm *g)
{
    mm_packed *mp = calloc(1, sizeof *mp);
    if (mp) {
        mp->b_data = b->data;
        mp->b_dtype = b->dtype;
        mp->kk = kk;
        mp->n = n;
        mp->tb = tb;
        mp->g = g;
    }
    return mp;
}

/* Runs a runtime serves from B in place before it packs B. Reading the
 * weights where the model's file mapping holds them costs nothing at init
 * (vit_b_16: 346 MB not copied), but that mapping is in 4 KiB pages, where
 * the packing is in huge pages (core/mapfile.h): its MatMuls ran 10-25%
 * slower in place. A runtime that runs once or twice (a gate's reference, a
 * bisect) never pays for the packing; one that keeps running packs at its
 * third run and runs at the packed speed from then on. Both forms give the
 * same bits (packgemm.h), so no result depends on when the switch falls. */
#define MM_IN_PLACE_RUNS 2

/* A constant B packed for g as the node's state (filled once, shared by
 * every runtime of the process over the same B), or NULL when memory runs
 * out. src: B's float32 bytes, at any alignment, else NULL: then
 * B's data is read, and the caller has filled it (cg_kernel_input_fill). */
static const float *mm_pack_state(cg_kernel_ctx *k, const cg_tensor *b, const void *src, bool tb,
                                  int64_t kk, int64_t n, const cg_simd_gemm *g)
{
    mm_packed *mp;
    size_t floats = cg_pg_packed_floats(g, n, kk);
    if (floats > SIZE_MAX / sizeof(float))
        return NULL;
    size_t bytes = floats * sizeof(float);
    mm_pack_tag tag;
    memset(&tag, 0, sizeof tag);
    memcpy(tag.what, "matmul", 7);
    tag.kk = kk;
    tag.n = n;
    tag.g = g;
    tag.dtype = b->dtype;
    tag.tb = tb;
    cg_shared *shared = cg_shared_acquire(b->data, &tag, sizeof tag, bytes ? bytes : 1);
    float *data;
    if (shared) {
        data = (float *)cg_shared_data(shared);
        if (cg_shared_fill_begin(shared)) {
            const float *bf = src ? NULL : cg_nn_as_f32(k, b);
            if (src)
                mm_pack_b_bytes(g, src, tb, kk, n, data);
            else if (bf)
                mm_pack_b(g, bf, tb, kk, n, data);
            cg_shared_fill_end(shared, src || bf);
            if (!src && !bf) {
                cg_shared_release(shared);
                return NULL;
            }
            /* B is read through its packing from now on: its pages of the
             * model's mapping need not stay resident as well */
            cg_mapping_drop_pages(src ? src : b->data, cg_tensor_bytes(b));
        }
    } else {
        const float *bf = src ? NULL : cg_nn_as_f32(k, b);
        if ((!src && !bf) || !(data = malloc(bytes ? bytes : 1)))
            return NULL;
        if (src)
            mm_pack_b_bytes(g, src, tb, kk, n, data);
        else
            mm_pack_b(g, bf, tb, kk, n, data);
    }
    mp = mm_state_new(b, tb, kk, n, g);
    if (!mp) {
        if (shared)
            cg_shared_release(shared);
        else
            free(data);
        return NULL;
    }
    mp->data = data;
    mp->shared = shared;
    mp->owned = !shared;
    if (!cg_kernel_set_state(k, mp, mm_packed_free)) {
        /* no runtime to keep it (a one-off kernel call): use it once */
        float *copy = cg_nn_scratch(k, (int64_t)floats, sizeof(float));
        if (copy)
            memcpy(copy, data, bytes);
        mm_packed_free(mp);
        return copy;
    }
    return data;
}

/* B for g as the node's state: read in place where g can (mm_in_place;
 * *ldw = n) for its first MM_IN_PLACE_RUNS runs, else packed (*ldw = 0);
 * NULL when memory runs out. src as for mm_pack_state: B's bytes in the
 * model while its aligned copy is not made, which are then read in place
 * (the vector kernels load unaligned) and no copy is ever made. */
static const float *mm_packed_b(cg_kernel_ctx *k, const cg_tensor *b, const void *src, bool tb,
                                int64_t kk, int64_t n, const cg_simd_gemm *g, int64_t *ldw)
{
    mm_packed *have = mm_state(k, b, tb, kk, n, g);
    *ldw = 0;
    if (have && have->ldw && ++have->runs > MM_IN_PLACE_RUNS) {
        /* from B where it is read now; replaces (frees) have */
        const float *w = mm_pack_state(k, b, have->data, tb, kk, n, g);
        if (w)
            return w;
        have->runs = 0; /* no memory for the packing: on in place */
    }
    if (have) {
        *ldw = have->ldw;
        return have->data;
    }
    if (!mm_in_place(b, tb, n, g))
        return mm_pack_state(k, b, src, tb, kk, n, g);
    const float *w = src ? (const float *)src : cg_nn_as_f32(k, b);
    mm_packed *mp = w ? mm_state_new(b, tb, kk, n, g) : NULL;
    if (!mp)
        return NULL;
    mp->data = w;
    mp->ldw = n;
    *ldw = n;
    if (!cg_kernel_set_state(k, mp, mm_packed_free))
        free(mp); /* a one-off kernel call: B is there to read all the same */
    return w;
}

/* Where a finished tile goes: Y (pitch n) = alpha * AB + beta * C(i,j),
 * C(i,j) at c[i*crs + j*ccs] (Gemm), or plain AB when c is NULL. */
typedef struct mm_pg_store_ctx {
    float *y;
    int64_t n;
    float alpha, beta;
    const float *c;
    int64_t crs, ccs;
} mm_pg_store_ctx;

static void mm_pg_store(void *ctx, const float *t, int64_t ld, int64_t p0, int64_t np,
                        int64_t m0, int64_t m1)
{
    const mm_pg_store_ctx *s = ctx;
    for (int64_t i = 0; i < np; i++) {
        float *yr = s->y + (p0 + i) * s->n + m0;
        const float *tr = t + i * ld;
        if (!s->c && s->alpha == 1.0f) {
            memcpy(yr, tr, (size_t)(m1 - m0) * sizeof(float));
            continue;
        }
        const float *cr = s->c ? s->c + (p0 + i) * s->crs + m0 * s->ccs : NULL;
        for (int64_t j = 0; j < m1 - m0; j++)
            yr[j] = s->alpha * tr[j] + (cr ? s->beta * cr[j * s->ccs] : 0.0f);
    }
}

/* rows x n of Y from A(i,q) = a[i*ars + q*acs] and B packed for g (ldw
 * 0), or B itself with row pitch ldw (mm_in_place). */
static cg_status mm_pg_product(cg_kernel_ctx *k, const cg_simd_gemm *g, const float *wpack,
                               int64_t ldw, const float *a, int64_t ars, int64_t acs,
                               int64_t rows, int64_t kk, int64_t n, mm_pg_store_ctx *sc)
{
    int64_t *off = cg_nn_scratch(k, kk, sizeof(int64_t));
    int64_t *pos = cg_nn_scratch(k, rows, sizeof(int64_t));
    if (!off || !pos)
        return cg_kernel_fail(k, CG_NOMEM, "out of scratch memory");
    for (int64_t q = 0; q < kk; q++)
        off[q] = q * acs;
    for (int64_t r = 0; r < rows; r++)
        pos[r] = r * ars;
    cg_pg_problem pr = {g, wpack, n, kk, rows, a, off, pos, mm_pg_store, sc, NULL, ldw};
    if (!cg_pg_run(k, &pr))
        return cg_kernel_fail(k, CG_NOMEM, "out of scratch memory");
    return cg_kernel_check_time(k);
}

/* Whether MatMul's B is one constant matrix for all of A's (stacked) rows. */
static bool mm_b_is_const(cg_kernel_ctx *k, const mm_plan *p)
{
    return cg_kernel_input_is_const(k, 1) && p->b_batches == 1 && p->a_batches == p->batch;
}

/* MatMul's float32 product on packgemm: a constant 2-D B (A's batches
 * stacked as one tall matrix), else each batch's B packed into scratch. */
static cg_status mm_f32_pg(cg_kernel_ctx *k, const mm_plan *p, const cg_simd_gemm *g,
                           const cg_tensor *b, const float *a, const float *bf, float *y)
{
    mm_pg_store_ctx sc = {y, p->n, 1.0f, 0.0f, NULL, 0, 0};
    if (mm_b_is_const(k, p)) {
        int64_t ldw;
        const float *wpack = mm_packed_b(k, b, NULL, false, p->kk, p->n, g, &ldw);
        if (!wpack)
            return cg_kernel_fail(k, CG_NOMEM, "out of memory packing B");
        return mm_pg_product(k, g, wpack, ldw, a, p->kk, 1, p->m * p->batch, p->kk, p->n, &sc);
    }
    int64_t asz = p->m * p->kk, bsz = p->kk * p->n, ysz = p->m * p->n;
    float *wpack = cg_nn_scratch(k, (int64_t)cg_pg_packed_floats(g, p->n, p->kk), sizeof(float));
    if (!wpack)
        return cg_kernel_fail(k, CG_NOMEM, "out of scratch memory");
    int64_t last_bo = -1;
    for (int64_t bi = 0; bi < p->batch; bi++) {
        int64_t ao, bo;
        mm_offsets(p, bi, &ao, &bo);
        if (bo != last_bo) /* a B broadcast over A's batches is packed once */
            mm_pack_b(g, bf + bo * bsz, false, p->kk, p->n, wpack);
        last_bo = bo;
        sc.y = y + bi * ysz;
        cg_status st =
            mm_pg_product(k, g, wpack, 0, a + ao * asz, p->kk, 1, p->m, p->kk, p->n, &sc);
        if (st != CG_OK)
            return st;
    }
    return CG_OK;
}

/* Whether MatMul's float32 product takes packgemm, and with which kernel. */
static const cg_simd_gemm *mm_pg_for(cg_kernel_ctx *k, const mm_plan *p)
{
    bool b_const = mm_b_is_const(k, p);
    return mm_pg_kernel(k, b_const ? p->m * p->batch : p->m, p->n, b_const);
}

/* Prepares a constant B at init (in place or packed, mm_packed_b): from the
 * model's bytes when its aligned copy is not made (then, no other reader
 * needing it, it never is: fold.c), Gemm's transposed B included. */
static cg_status mm_prepare_b(cg_kernel_ctx *k, const cg_tensor *b, bool tb, int64_t kk,
                              int64_t n, const cg_simd_gemm *g)
{
    const void *src = b->dtype == CG_DTYPE_FLOAT ? cg_kernel_input_source(k, 1) : NULL;
    if (!src)
        cg_kernel_input_fill(k, 1);
    int64_t ldw;
    if (!mm_packed_b(k, b, src, tb, kk, n, g, &ldw))
        return CG_NOMEM;
    cg_kernel_state_covers(k, 1);
    return CG_OK;
}

cg_status cg_op_matmul_prepare(cg_kernel_ctx *k)
{
    const cg_tensor *b = cg_kernel_input(k, 1);
    if (!b || b->rank < 2 || !cg_kernel_input_is_const(k, 1) || !cg_nn_is_real(b->dtype) ||
        b->dtype == CG_DTYPE_DOUBLE || cg_nn_prod(b->rank - 2, b->dims) != 1)
        return CG_UNSUPPORTED;
    int64_t kk = b->dims[b->rank - 2], n = b->dims[b->rank - 1];
    const cg_simd_gemm *g = mm_pg_kernel(k, 0, n, true);
    if (!g)
        return CG_UNSUPPORTED;
    return mm_prepare_b(k, b, false, kk, n, g);
}

cg_status cg_op_gemm_prepare(cg_kernel_ctx *k)
{
    const cg_tensor *b = cg_kernel_input(k, 1);
    if (!b || b->rank != 2 || !cg_kernel_input_is_const(k, 1) || !cg_nn_is_real(b->dtype) ||
        b->dtype == CG_DTYPE_DOUBLE)
        return CG_UNSUPPORTED;
    bool tb = cg_attr_int(k, "transB", 0) != 0;
    int64_t kk = tb ? b->dims[1] : b->dims[0], n = tb ? b->dims[0] : b->dims[1];
    const cg_simd_gemm *g = mm_pg_kernel(k, 0, n, true);
    if (!g)
        return CG_UNSUPPORTED;
    return mm_prepare_b(k, b, tb, kk, n, g);
}

static cg_status mm_f64(cg_kernel_ctx *k, const mm_plan *p, const double *a, const double *b,
                        double *y)
{
    int64_t asz = p->m * p->kk, bsz = p->kk * p->n, ysz = p->m * p->n;
    if (p->b_batches == 1 && p->a_batches == p->batch) {
        /* as mm_f32: one tall GEMM instead of a B repack per batch */
        if (!cg_nn_dgemm(false, false, p->m * p->batch, p->n, p->kk, 1.0, a, p->kk, b, p->n,
                         0.0, y, p->n))
            return cg_kernel_fail(k, CG_UNSUPPORTED, "matrix dimensions exceed the BLAS int range");
        return CG_OK;
    }
    for (int64_t bi = 0; bi < p->batch; bi++) {
        int64_t ao, bo;
        cg_status st = cg_kernel_check_time(k);
        if (st != CG_OK)
            return st;
        mm_offsets(p, bi, &ao, &bo);
        if (!cg_nn_dgemm(false, false, p->m, p->n, p->kk, 1.0, a + ao * asz, p->kk, b + bo * bsz,
                         p->n, 0.0, y + bi * ysz, p->n))
            return cg_kernel_fail(k, CG_UNSUPPORTED, "matrix dimensions exceed the BLAS int range");
    }
    return CG_OK;
}

static float h16(double x)
{
    return (float)cg_fp16_round(x);
}

/* The fp16-sums product: y[i*n + j] = the chain over q in order of
 * r(acc + r(A(i,q) B(q,j))) from acc = 0, r being cg_fp16_round (range:
 * an fp16 accumulator, as a GPU delegate computing in F16 keeps; the
 * float32 mode's CG_KPREC_FP16_ACC16) or cg_fp16_round_significand (the
 * float64 mode's CG_KPREC_FP16_SUM11: fp16's significand, exponent
 * unbounded). A(i,q) is a[i*ars + q*acs], B(q,j) is b[q*brs + j*bcs]
 * (strides express transposes), float32 or float64 as a_f32 / b_f32 say.
 * Both are copied, A by rows and B as [q][j], to float32 for sum16_f32's
 * chains where every value is one they take exactly (the fp16 emulation's
 * stored values always are), else to float64 for sum16_f64's (float64
 * operands in that layout are read in place): CG_SIMD_SUM16_ROWS rows of A
 * by the chains' lanes of B a call, the row blocks split over the
 * threads. */
typedef struct mm16_job {
    const cg_simd_ops *ops;
    const float *af, *bf;  /* [m][kk], [kk][n]: float32 chains, or NULL */
    const double *a, *b;   /* the same for float64 chains */
    double *y;             /* [m][n]: y, or yf */
    float *yf;
    int64_t m, n, kk;
    bool range;
} mm16_job;

/* Rows i0 .. i0 + np - 1 of y, lanes of B at a time. */
static void mm16_rows(const mm16_job *j, int64_t i0, int np)
{
    enum { R = CG_SIMD_SUM16_ROWS };
    const int L = j->af ? CG_SIMD_SUM16F_LANES : CG_SIMD_SUM16_LANES;
    for (int64_t j0 = 0; j0 < j->n; j0 += L) {
        int nl = (int)(j->n - j0 < L ? j->n - j0 : L);
        cg_simd_sum16_acc acc;
        memset(&acc, 0, sizeof acc);
        if (j->af) {
            const float *rows[R];
            for (int p = 0; p < np; p++)
                rows[p] = j->af + (i0 + p) * j->kk;
            j->ops->sum16_f32(acc.f, np, rows, j->bf + j0, j->n, j->kk, nl, j->range);
        } else {
            const double *rows[R];
            for (int p = 0; p < np; p++)
                rows[p] = j->a + (i0 + p) * j->kk;
            j->ops->sum16_f64(acc.d, np, rows, j->b + j0, j->n, j->kk, nl, j->range);
        }
        for (int p = 0; p < np; p++)
            for (int l = 0; l < nl; l++) {
                int64_t at = (i0 + p) * j->n + j0 + l;
                double v = j->af ? (double)acc.f[p * L + l] : acc.d[p * L + l];
                if (j->yf)
                    j->yf[at] = (float)v; /* exact: an fp16 value or inf */
                else
                    j->y[at] = v;
            }
    }
}

static void mm16_task(void *arg, int t, int nt)
{
    enum { R = CG_SIMD_SUM16_ROWS };
    const mm16_job *j = arg;
    int64_t lo, hi;
    cg_kernel_share((j->m + R - 1) / R, 1, t, nt, &lo, &hi);
    for (int64_t blk = lo; blk < hi; blk++) {
        int64_t i0 = blk * R;
        int np = (int)(j->m - i0 < R ? j->m - i0 : R);
        mm16_rows(j, i0, np);
    }
}

static double mm16_get(const void *v, bool f32, int64_t at)
{
    return f32 ? (double)((const float *)v)[at] : ((const double *)v)[at];
}

/* dst[i * cols + c] = the value at i * rs + c * cs of src (float32 or
 * float64 as f32 says) as float32, for the float32 chains: false as soon
 * as one is not a value they take exactly (cg_fp16_chain_exact). */
static bool mm16_copy_f32(float *dst, int64_t rows, int64_t cols, const void *src, bool f32,
                          int64_t rs, int64_t cs, bool range)
{
    for (int64_t i = 0; i < rows; i++)
        for (int64_t c = 0; c < cols; c++)
            if (!cg_fp16_chain_f32(mm16_get(src, f32, i * rs + c * cs), range,
                                   &dst[i * cols + c]))
                return false;
    return true;
}

/* The same as float64 (always exact). */
static void mm16_copy_f64(double *dst, int64_t rows, int64_t cols, const void *src, bool f32,
                          int64_t rs, int64_t cs)
{
    for (int64_t i = 0; i < rows; i++)
        for (int64_t c = 0; c < cols; c++)
            dst[i * cols + c] = mm16_get(src, f32, i * rs + c * cs);
}

/* Scratch of a step's fp16-sums products (mm_sum16), made on first need
 * at the size of the step's first product and kept for its other batches
 * (all of one size): the operands' float32 copies (f) and float64 ones
 * (d), m*kk + kk*n elements each. */
typedef struct mm16_work {
    float *f;
    double *d;
} mm16_work;

/* m*kk + kk*n as an element count (false: overflow). */
static bool mm16_count(int64_t m, int64_t n, int64_t kk, int64_t *count)
{
    int64_t ak, bk;
    return !__builtin_mul_overflow(m, kk, &ak) && !__builtin_mul_overflow(kk, n, &bk) &&
           !__builtin_add_overflow(ak, bk, count);
}

/* The product into y (float64) or yf (float32: exact, as every fp16
 * value and inf is a float), the other NULL; see mm16_job. */
static cg_status mm_sum16(cg_kernel_ctx *k, int64_t m, int64_t n, int64_t kk, const void *a,
                          bool a_f32, int64_t ars, int64_t acs, const void *b, bool b_f32,
                          int64_t brs, int64_t bcs, double *y, float *yf, bool range,
                          mm16_work *w)
{
    mm16_job j = {cg_simd_ops_get(cg_kernel_simd(k)), NULL, NULL, NULL, NULL, y, yf, m, n, kk,
                  range};
    int64_t count;
    bool try_f32 = j.ops->sum16_f32 && kk < ((int64_t)1 << 40);
    if (m == 0 || n == 0)
        return CG_OK;
    if (kk == 0) {
        for (int64_t i = 0; i < m * n; i++) {
            if (yf)
                yf[i] = 0.0f;
            else
                y[i] = 0.0;
        }
        return CG_OK;
    }
    if (!mm16_count(m, n, kk, &count))
        return cg_kernel_fail(k, CG_LIMIT, "the fp16-sums product's operands overflow");
    /* the float32 chains where the operands allow: the same values at 16
     * lanes a vector */
    if (try_f32 && !w->f)
        w->f = cg_nn_scratch(k, count, sizeof *w->f);
    if (try_f32 && w->f && mm16_copy_f32(w->f, m, kk, a, a_f32, ars, acs, range) &&
        mm16_copy_f32(w->f + m * kk, kk, n, b, b_f32, brs, bcs, range)) {
        j.af = w->f;
        j.bf = w->f + m * kk;
    } else {
        bool a_in_place = !a_f32 && acs == 1 && ars == kk;
        bool b_in_place = !b_f32 && bcs == 1 && brs == n;
        if (!w->d && (!a_in_place || !b_in_place) &&
            !(w->d = cg_nn_scratch(k, count, sizeof *w->d)))
            return cg_kernel_fail(k, CG_NOMEM, "out of scratch memory");
        if (a_in_place) {
            j.a = a;
        } else {
            mm16_copy_f64(w->d, m, kk, a, a_f32, ars, acs);
            j.a = w->d;
        }
        if (b_in_place) {
            j.b = b;
        } else {
            mm16_copy_f64(w->d + m * kk, kk, n, b, b_f32, brs, bcs);
            j.b = w->d + m * kk;
        }
    }
    cg_kernel_parallel_work(k, (double)m * (double)n * (double)kk, mm16_task, &j);
    return cg_kernel_check_time(k);
}

/* The fp16-sums MatMul, batch by batch into y (float32 operands) or yd
 * (float64), the other NULL: one tall product where every batch shares
 * B (the chains are per output, so the values are the same), as mm_f32
 * does, rather than B copied again for every batch (ViT's [197, 1, 768]
 * by [768, 2304] projections: 197 batches of one row). */
static cg_status mm_batches16(cg_kernel_ctx *k, const mm_plan *p, const void *a, const void *b,
                              float *y, double *yd, bool range)
{
    int64_t asz = p->m * p->kk, bsz = p->kk * p->n, ysz = p->m * p->n;
    bool f32 = y != NULL;
    size_t esz = f32 ? sizeof(float) : sizeof(double);
    mm16_work w = {NULL, NULL};
    cg_status st = CG_OK;
    if (p->b_batches == 1 && p->a_batches == p->batch)
        return mm_sum16(k, p->m * p->batch, p->n, p->kk, a, f32, p->kk, 1, b, f32, p->n, 1, yd,
                        y, range, &w);
    for (int64_t bi = 0; bi < p->batch && st == CG_OK; bi++) {
        int64_t ao, bo;
        mm_offsets(p, bi, &ao, &bo);
        st = mm_sum16(k, p->m, p->n, p->kk, (const char *)a + (size_t)(ao * asz) * esz, f32,
                      p->kk, 1, (const char *)b + (size_t)(bo * bsz) * esz, f32, p->n, 1,
                      yd ? yd + bi * ysz : NULL, y ? y + bi * ysz : NULL, range, &w);
    }
    return st;
}

/* Integer matrices read as int64 bit patterns (uint64 keeps its bits). */
static const int64_t *as_i64(cg_kernel_ctx *k, const cg_tensor *t)
{
    if (t->dtype == CG_DTYPE_INT64 || t->dtype == CG_DTYPE_UINT64)
        return (const int64_t *)t->data;
    int64_t *d = cg_nn_scratch(k, t->numel, sizeof(int64_t));
    if (!d)
        return NULL;
    for (int64_t i = 0; i < t->numel; i++)
        d[i] = cg_tensor_get_i64(t, i);
    return d;
}

/* y[m,n] (+)= sum a*b with wrapping uint64 arithmetic. */
static void mm_int_one(int64_t m, int64_t n, int64_t kk, const int64_t *a, const int64_t *b,
                       uint64_t *y)
{
    for (int64_t i = 0; i < m; i++)
        for (int64_t q = 0; q < kk; q++) {
            uint64_t av = (uint64_t)a[i * kk + q];
            const int64_t *brow = b + q * n;
            uint64_t *yrow = y + i * n;
            for (int64_t j = 0; j < n; j++)
                yrow[j] += av * (uint64_t)brow[j];
        }
}

static bool is_mm_int(cg_dtype dt)
{
    return dt == CG_DTYPE_INT32 || dt == CG_DTYPE_INT64 || dt == CG_DTYPE_UINT32 ||
           dt == CG_DTYPE_UINT64;
}

cg_status cg_op_matmul(cg_kernel_ctx *k)
{
    const cg_tensor *a, *b;
    cg_tensor *y;
    cg_status st;
    mm_plan p;
    if ((st = cg_kernel_require(k, 0, &a)) != CG_OK || (st = cg_kernel_require(k, 1, &b)) != CG_OK)
        return st;
    if (a->dtype != b->dtype)
        return cg_kernel_fail(k, CG_INVALID, "A is %s but B is %s", cg_dtype_name(a->dtype),
                              cg_dtype_name(b->dtype));
    if (!cg_nn_is_real(a->dtype) && !is_mm_int(a->dtype))
        return cg_kernel_fail(k, CG_UNSUPPORTED, "MatMul of %s", cg_dtype_name(a->dtype));
    if ((st = mm_plan_init(k, a, b, &p)) != CG_OK)
        return st;
    if ((st = cg_kernel_output_uninit(k, 0, a->dtype, p.out_rank, p.out_dims, &y)) != CG_OK)
        return st;
    if (y->numel == 0)
        return CG_OK;
    if (a->dtype == CG_DTYPE_DOUBLE && k->precision == CG_KPREC_FP16_SUM11)
        return mm_batches16(k, &p, a->data, b->data, NULL, y->data, false);
    if (a->dtype == CG_DTYPE_DOUBLE)
        return mm_f64(k, &p, a->data, b->data, y->data);
    if (cg_nn_is_real(a->dtype)) {
        const cg_simd_gemm *g = k->precision == CG_KPREC_FP16_ACC16 ? NULL : mm_pg_for(k, &p);
        if (!(g && mm_b_is_const(k, &p) && mm_state(k, b, false, p.kk, p.n, g)))
            cg_kernel_input_fill(k, 1); /* B's bytes are read (cg_kernel_state_covers) */
        const float *af = cg_nn_as_f32(k, a), *bf = cg_nn_as_f32(k, b);
        float *yf = y->dtype == CG_DTYPE_FLOAT ? y->data : cg_nn_scratch(k, y->numel, sizeof(float));
        if (!af || !bf || !yf)
            return cg_kernel_fail(k, CG_NOMEM, "out of scratch memory");
        if (k->precision == CG_KPREC_FP16_ACC16)
            st = mm_batches16(k, &p, af, bf, yf, NULL, true);
        else if (g)
            st = mm_f32_pg(k, &p, g, b, af, bf, yf);
        else
            st = mm_f32(k, &p, af, bf, yf);
        if (st != CG_OK)
            return st;
        cg_nn_store_f32(k, y, yf);
        return CG_OK;
    }
    const int64_t *ai = as_i64(k, a), *bi64 = as_i64(k, b);
    uint64_t *acc = cg_nn_scratch(k, y->numel, sizeof(uint64_t));
    if (!ai || !bi64 || !acc)
        return cg_kernel_fail(k, CG_NOMEM, "out of scratch memory");
    memset(acc, 0, (size_t)y->numel * sizeof(uint64_t));
    for (int64_t bi = 0; bi < p.batch; bi++) {
        int64_t ao, bo;
        mm_offsets(&p, bi, &ao, &bo);
        mm_int_one(p.m, p.n, p.kk, ai + ao * p.m * p.kk, bi64 + bo * p.kk * p.n,
                   acc + bi * p.m * p.n);
    }
    for (int64_t i = 0; i < y->numel; i++)
        cg_tensor_set_i64(y, i, (int64_t)acc[i]);
    return CG_OK;
}

/* ---- Gemm ---------------------------------------------------------------- */

/* Validates C's unidirectional broadcast to (m, n); gives its row/col strides. */
static cg_status gemm_c_strides(cg_kernel_ctx *k, const cg_tensor *c, int64_t m, int64_t n,
                                int64_t *rs, int64_t *cs)
{
    int64_t cm = 1, cn = 1;
    if (c->rank > 2)
        return cg_kernel_fail(k, CG_INVALID, "C has rank %d (at most 2)", c->rank);
    if (c->rank == 2) {
        cm = c->dims[0];
        cn = c->dims[1];
    } else if (c->rank == 1) {
        cn = c->dims[0];
    }
    if ((cm != 1 && cm != m) || (cn != 1 && cn != n))
        return cg_kernel_fail(k, CG_INVALID, "C of shape (%lld, %lld) does not broadcast to (%lld, %lld)",
                              (long long)cm, (long long)cn, (long long)m, (long long)n);
    *rs = cm == 1 ? 0 : cn;
    *cs = cn == 1 ? 0 : 1;
    return CG_OK;
}

cg_status cg_op_gemm(cg_kernel_ctx *k)
{
    const cg_tensor *a, *b, *c;
    cg_tensor *y;
    cg_status st;
    if ((st = cg_kernel_require(k, 0, &a)) != CG_OK || (st = cg_kernel_require(k, 1, &b)) != CG_OK)
        return st;
    c = cg_kernel_input(k, 2);
    bool ta = cg_attr_int(k, "transA", 0) != 0, tb = cg_attr_int(k, "transB", 0) != 0;
    double alpha = cg_attr_float(k, "alpha", 1.0f), beta = cg_attr_float(k, "beta", 1.0f);
    if (a->rank != 2 || b->rank != 2)
        return cg_kernel_fail(k, CG_INVALID, "Gemm needs 2-D A and B (got rank %d and %d)",
                              a->rank, b->rank);
    if (a->dtype != b->dtype || (c && c->dtype != a->dtype))
        return cg_kernel_fail(k, CG_INVALID, "operand types differ");
    if (!cg_nn_is_real(a->dtype) && !is_mm_int(a->dtype))
        return cg_kernel_fail(k, CG_UNSUPPORTED, "Gemm of %s", cg_dtype_name(a->dtype));
    int64_t m = ta ? a->dims[1] : a->dims[0], kk = ta ? a->dims[0] : a->dims[1];
    int64_t kb = tb ? b->dims[1] : b->dims[0], n = tb ? b->dims[0] : b->dims[1];
    if (kk != kb)
        return cg_kernel_fail(k, CG_INVALID, "inner dimensions differ: %lld vs %lld",
                              (long long)kk, (long long)kb);
    int64_t rs = 0, cs = 0;
    if (c && (st = gemm_c_strides(k, c, m, n, &rs, &cs)) != CG_OK)
        return st;
    int64_t dims[2] = {m, n};
    if ((st = cg_kernel_output(k, 0, a->dtype, 2, dims, &y)) != CG_OK)
        return st;
    if (y->numel == 0)
        return CG_OK;
    bool use_c = c && beta != 0.0;
    if (a->dtype == CG_DTYPE_DOUBLE) {
        double *yd = y->data;
        const double *cd = use_c ? cg_nn_as_f64(k, c) : NULL;
        if (use_c && !cd)
            return cg_kernel_fail(k, CG_NOMEM, "out of scratch memory");
        for (int64_t i = 0; use_c && i < m; i++)
            for (int64_t j = 0; j < n; j++)
                yd[i * n + j] = cd[i * rs + j * cs];
        if (k->precision == CG_KPREC_FP16_SUM11) {
            /* as the fp16 path below, each step on fp16's significand */
            double *ab = cg_nn_scratch(k, m * n, sizeof *ab);
            mm16_work w = {NULL, NULL};
            if (!ab)
                return cg_kernel_fail(k, CG_NOMEM, "out of scratch memory");
            int64_t lda = a->dims[1], ldb = b->dims[1];
            if ((st = mm_sum16(k, m, n, kk, a->data, false, ta ? 1 : lda, ta ? lda : 1, b->data,
                               false, tb ? 1 : ldb, tb ? ldb : 1, ab, NULL, false, &w)) != CG_OK)
                return st;
            for (int64_t i = 0; i < m * n; i++) {
                double v = cg_fp16_round_significand(alpha * ab[i]);
                yd[i] = use_c ? cg_fp16_round_significand(
                                    v + cg_fp16_round_significand(beta * yd[i]))
                              : v;
            }
            return CG_OK;
        }
        if (!cg_nn_dgemm(ta, tb, m, n, kk, alpha, a->data, a->dims[1], b->data, b->dims[1],
                         use_c ? beta : 0.0, yd, n))
            return cg_kernel_fail(k, CG_UNSUPPORTED, "matrix dimensions exceed the BLAS int range");
        return CG_OK;
    }
    if (cg_nn_is_real(a->dtype)) {
        bool b_const = cg_kernel_input_is_const(k, 1);
        const cg_simd_gemm *g = k->precision == CG_KPREC_FP16_ACC16 ? NULL
                                                                    : mm_pg_kernel(k, m, n, b_const);
        if (!(g && b_const && mm_state(k, b, tb, kk, n, g)))
            cg_kernel_input_fill(k, 1); /* B's bytes are read (cg_kernel_state_covers) */
        const float *af = cg_nn_as_f32(k, a), *bf = cg_nn_as_f32(k, b);
        const float *cf = use_c ? cg_nn_as_f32(k, c) : NULL;
        float *yf = y->dtype == CG_DTYPE_FLOAT ? y->data : cg_nn_scratch(k, y->numel, sizeof(float));
        if (!af || !bf || !yf || (use_c && !cf))
            return cg_kernel_fail(k, CG_NOMEM, "out of scratch memory");
        if (g) {
            const float *wpack;
            int64_t ldw = 0;
            if (b_const) {
                wpack = mm_packed_b(k, b, NULL, tb, kk, n, g, &ldw);
            } else {
                float *w = cg_nn_scratch(k, (int64_t)cg_pg_packed_floats(g, n, kk), sizeof(float));
                if (w)
                    mm_pack_b(g, bf, tb, kk, n, w);
                wpack = w;
            }
            if (!wpack)
                return cg_kernel_fail(k, CG_NOMEM, "out of memory packing B");
            int64_t lda = a->dims[1];
            mm_pg_store_ctx sc = {yf, n, (float)alpha, (float)beta, use_c ? cf : NULL, rs, cs};
            if ((st = mm_pg_product(k, g, wpack, ldw, af, ta ? 1 : lda, ta ? lda : 1, m, kk, n,
                                    &sc)) != CG_OK)
                return st;
            cg_nn_store_f32(k, y, yf);
            return CG_OK;
        }
        for (int64_t i = 0; use_c && i < m; i++) {
            if (cs == 1 && rs == n) {
                memcpy(yf, cf, (size_t)(m * n) * sizeof(float));
                break;
            }
            for (int64_t j = 0; j < n; j++)
                yf[i * n + j] = cf[i * rs + j * cs];
        }
        if (k->precision == CG_KPREC_FP16_ACC16) {
            /* y = alpha*AB + beta*C, each step in fp16; yf holds C (or nothing) */
            float *ab = cg_nn_scratch(k, m * n, sizeof(float));
            mm16_work w = {NULL, NULL};
            if (!ab)
                return cg_kernel_fail(k, CG_NOMEM, "out of scratch memory");
            int64_t lda = a->dims[1], ldb = b->dims[1];
            if ((st = mm_sum16(k, m, n, kk, af, true, ta ? 1 : lda, ta ? lda : 1, bf, true,
                               tb ? 1 : ldb, tb ? ldb : 1, NULL, ab, true, &w)) != CG_OK)
                return st;
            for (int64_t i = 0; i < m * n; i++) {
                float v = h16(alpha * ab[i]);
                yf[i] = use_c ? h16((double)v + h16(beta * yf[i])) : v;
            }
            cg_nn_store_f32(k, y, yf);
            return CG_OK;
        }
        if (!cg_nn_sgemm(ta, tb, m, n, kk, (float)alpha, af, a->dims[1], bf, b->dims[1],
                         use_c ? (float)beta : 0.0f, yf, n))
            return cg_kernel_fail(k, CG_UNSUPPORTED, "matrix dimensions exceed the BLAS int range");
        cg_nn_store_f32(k, y, yf);
        return CG_OK;
    }
    /* Integers: exact when alpha and beta are whole numbers, else via double. */
    const int64_t *ai = as_i64(k, a), *bi = as_i64(k, b), *ci = use_c ? as_i64(k, c) : NULL;
    uint64_t *acc = cg_nn_scratch(k, m * n, sizeof(uint64_t));
    if (!ai || !bi || !acc || (use_c && !ci))
        return cg_kernel_fail(k, CG_NOMEM, "out of scratch memory");
    bool whole = alpha == floor(alpha) && beta == floor(beta) && fabs(alpha) < 9e15 &&
                 fabs(beta) < 9e15;
    for (int64_t i = 0; i < m; i++)
        for (int64_t j = 0; j < n; j++) {
            uint64_t s = 0;
            double sd = 0;
            for (int64_t q = 0; q < kk; q++) {
                int64_t av = ta ? ai[q * a->dims[1] + i] : ai[i * a->dims[1] + q];
                int64_t bv = tb ? bi[j * b->dims[1] + q] : bi[q * b->dims[1] + j];
                s += (uint64_t)av * (uint64_t)bv;
                sd += (double)av * (double)bv;
            }
            int64_t cv = use_c ? ci[i * rs + j * cs] : 0;
            if (whole) {
                s = s * (uint64_t)(int64_t)alpha + (uint64_t)cv * (uint64_t)(int64_t)beta;
                cg_tensor_set_i64(y, i * n + j, (int64_t)s);
            } else {
                cg_tensor_set_f64(y, i * n + j, alpha * sd + beta * (double)cv);
            }
        }
    return CG_OK;
}

/* ---- quantized products ---------------------------------------------------- */

static bool is_q8(cg_dtype dt) { return dt == CG_DTYPE_INT8 || dt == CG_DTYPE_UINT8; }

/* Per-row (A) or per-column (B) zero points: a scalar or a vector of len. */
static cg_status q_zero_points(cg_kernel_ctx *k, const cg_tensor *zp, const cg_tensor *x,
                               int64_t len, const char *what, int32_t *dst)
{
    if (zp && zp->dtype != x->dtype)
        return cg_kernel_fail(k, CG_INVALID, "%s zero point is %s but the input is %s", what,
                              cg_dtype_name(zp->dtype), cg_dtype_name(x->dtype));
    if (zp && zp->numel != 1 && zp->numel != len)
        return cg_kernel_fail(k, CG_UNSUPPORTED,
                              "%s zero point has %lld values (supported: 1 or %lld)", what,
                              (long long)zp->numel, (long long)len);
    for (int64_t i = 0; i < len; i++)
        dst[i] = zp ? (int32_t)cg_tensor_get_i64(zp, zp->numel == 1 ? 0 : i) : 0;
    return CG_OK;
}

/* acc[batch, m, n] = sum (a - azp[m]) * (b - bzp[n]) in int32 (the ONNX
 * accumulator type; 8-bit products cannot overflow int32 below K=2^16, and
 * beyond that wrapping matches what int32 hardware gives). */
static cg_status q_matmul_acc(cg_kernel_ctx *k, const mm_plan *p, const cg_tensor *a,
                              const cg_tensor *b, const int32_t *azp, const int32_t *bzp,
                              int32_t *acc)
{
    int32_t *av = cg_nn_scratch(k, a->numel, sizeof(int32_t));
    int32_t *bv = cg_nn_scratch(k, b->numel, sizeof(int32_t));
    if (!av || !bv)
        return cg_kernel_fail(k, CG_NOMEM, "out of scratch memory");
    for (int64_t i = 0; i < a->numel; i++)
        av[i] = (int32_t)cg_tensor_get_i64(a, i) - azp[(i / p->kk) % p->m];
    for (int64_t i = 0; i < b->numel; i++)
        bv[i] = (int32_t)cg_tensor_get_i64(b, i) - bzp[i % p->n];
    for (int64_t bi = 0; bi < p->batch; bi++) {
        int64_t ao, bo;
        mm_offsets(p, bi, &ao, &bo);
        const int32_t *am = av + ao * p->m * p->kk, *bm = bv + bo * p->kk * p->n;
        int32_t *ym = acc + bi * p->m * p->n;
        for (int64_t i = 0; i < p->m; i++) {
            uint32_t *yrow = (uint32_t *)(ym + i * p->n);
            for (int64_t j = 0; j < p->n; j++)
                yrow[j] = 0;
            for (int64_t q = 0; q < p->kk; q++) {
                uint32_t x = (uint32_t)am[i * p->kk + q];
                const int32_t *brow = bm + q * p->n;
                for (int64_t j = 0; j < p->n; j++)
                    yrow[j] += x * (uint32_t)brow[j];
            }
        }
    }
    return CG_OK;
}

cg_status cg_op_matmulinteger(cg_kernel_ctx *k)
{
    const cg_tensor *a, *b;
    cg_tensor *y;
    cg_status st;
    mm_plan p;
    if ((st = cg_kernel_require(k, 0, &a)) != CG_OK || (st = cg_kernel_require(k, 1, &b)) != CG_OK)
        return st;
    if (!is_q8(a->dtype) || !is_q8(b->dtype))
        return cg_kernel_fail(k, CG_UNSUPPORTED, "MatMulInteger of %s x %s",
                              cg_dtype_name(a->dtype), cg_dtype_name(b->dtype));
    if ((st = mm_plan_init(k, a, b, &p)) != CG_OK)
        return st;
    int32_t *azp = cg_nn_scratch(k, p.m, sizeof(int32_t));
    int32_t *bzp = cg_nn_scratch(k, p.n, sizeof(int32_t));
    if (!azp || !bzp)
        return cg_kernel_fail(k, CG_NOMEM, "out of scratch memory");
    if ((st = q_zero_points(k, cg_kernel_input(k, 2), a, p.m, "A", azp)) != CG_OK ||
        (st = q_zero_points(k, cg_kernel_input(k, 3), b, p.n, "B", bzp)) != CG_OK)
        return st;
    if ((st = cg_kernel_output(k, 0, CG_DTYPE_INT32, p.out_rank, p.out_dims, &y)) != CG_OK)
        return st;
    if (y->numel == 0)
        return CG_OK;
    return q_matmul_acc(k, &p, a, b, azp, bzp, y->data);
}

/* Scale tensor read as a scalar or a vector of len (per row / column). */
static cg_status q_scales(cg_kernel_ctx *k, const cg_tensor *s, int64_t len, const char *what,
                          double *dst)
{
    if (!cg_nn_is_real(s->dtype))
        return cg_kernel_fail(k, CG_INVALID, "%s scale is %s", what, cg_dtype_name(s->dtype));
    if (s->numel != 1 && s->numel != len)
        return cg_kernel_fail(k, CG_UNSUPPORTED, "%s scale has %lld values (supported: 1 or %lld)",
                              what, (long long)s->numel, (long long)len);
    for (int64_t i = 0; i < len; i++)
        dst[i] = cg_tensor_get_f64(s, s->numel == 1 ? 0 : i);
    return CG_OK;
}

cg_status cg_op_qlinearmatmul(cg_kernel_ctx *k)
{
    const cg_tensor *a, *as, *azt, *b, *bs, *bzt, *ys, *yzt;
    cg_tensor *y;
    cg_status st;
    mm_plan p;
    if ((st = cg_kernel_require(k, 0, &a)) != CG_OK || (st = cg_kernel_require(k, 1, &as)) != CG_OK ||
        (st = cg_kernel_require(k, 2, &azt)) != CG_OK || (st = cg_kernel_require(k, 3, &b)) != CG_OK ||
        (st = cg_kernel_require(k, 4, &bs)) != CG_OK || (st = cg_kernel_require(k, 5, &bzt)) != CG_OK ||
        (st = cg_kernel_require(k, 6, &ys)) != CG_OK || (st = cg_kernel_require(k, 7, &yzt)) != CG_OK)
        return st;
    if (!is_q8(a->dtype) || !is_q8(b->dtype) || !is_q8(yzt->dtype))
        return cg_kernel_fail(k, CG_UNSUPPORTED, "QLinearMatMul of %s x %s -> %s",
                              cg_dtype_name(a->dtype), cg_dtype_name(b->dtype),
                              cg_dtype_name(yzt->dtype));
    if (ys->numel != 1 || yzt->numel != 1)
        return cg_kernel_fail(k, CG_UNSUPPORTED, "y_scale and y_zero_point must be scalars");
    if ((st = mm_plan_init(k, a, b, &p)) != CG_OK)
        return st;
    int32_t *azp = cg_nn_scratch(k, p.m, sizeof(int32_t));
    int32_t *bzp = cg_nn_scratch(k, p.n, sizeof(int32_t));
    double *asc = cg_nn_scratch(k, p.m, sizeof(double));
    double *bsc = cg_nn_scratch(k, p.n, sizeof(double));
    if (!azp || !bzp || !asc || !bsc)
        return cg_kernel_fail(k, CG_NOMEM, "out of scratch memory");
    if ((st = q_zero_points(k, azt, a, p.m, "a", azp)) != CG_OK ||
        (st = q_zero_points(k, bzt, b, p.n, "b", bzp)) != CG_OK ||
        (st = q_scales(k, as, p.m, "a", asc)) != CG_OK ||
        (st = q_scales(k, bs, p.n, "b", bsc)) != CG_OK)
        return st;
    double yscale = cg_tensor_get_f64(ys, 0);
    int64_t yzp = cg_tensor_get_i64(yzt, 0);
    if (!(yscale != 0.0) || !isfinite(yscale))
        return cg_kernel_fail(k, CG_RUNTIME, "y_scale is %g", yscale);
    if ((st = cg_kernel_output(k, 0, yzt->dtype, p.out_rank, p.out_dims, &y)) != CG_OK)
        return st;
    if (y->numel == 0)
        return CG_OK;
    int32_t *acc = cg_nn_scratch(k, y->numel, sizeof(int32_t));
    if (!acc)
        return cg_kernel_fail(k, CG_NOMEM, "out of scratch memory");
    if ((st = q_matmul_acc(k, &p, a, b, azp, bzp, acc)) != CG_OK)
        return st;
    for (int64_t i = 0; i < y->numel; i++) {
        int64_t col = i % p.n, row = (i / p.n) % p.m;
        /* The multiplier is formed in float32, as the scales are. */
        float mult = (float)(asc[row] * bsc[col]) / (float)yscale;
        double v = cg_nn_round_even((double)acc[i] * (double)mult) + (double)yzp;
        cg_tensor_set_i64(y, i, cg_nn_saturate(y->dtype, v));
    }
    return CG_OK;
}
