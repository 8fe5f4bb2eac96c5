/*
 * The 8-bit convolution GEMM driver (see qgemm.h): weight packing, the
 * position tiles and their column sums, and the split over threads.
 */
#include <string.h>

#include "run/cpu.h"
#include "run/ops/qgemm.h"

const cg_qg_level *cg_qg_get(cg_simd level)
{
    return level == CG_SIMD_AVX512 && cg_simd_has_vnni() ? cg_qg_vnni() : NULL;
}

size_t cg_qg_packed_bytes(int64_t m, int64_t k)
{
    int64_t panels = (m + CG_QG_MR - 1) / CG_QG_MR, kq = (k + 3) / 4;
    return (size_t)panels * (size_t)kq * CG_QG_MR * 4;
}

void cg_qg_pack(const void *w, bool w_signed, int64_t ldw, int64_t m, int64_t k, int8_t *dst,
                int32_t *wsum)
{
    int64_t kq = (k + 3) / 4;
    memset(dst, 0, cg_qg_packed_bytes(m, k));
    for (int64_t j = 0; j < m; j++) {
        int8_t *d = dst + (j / CG_QG_MR) * kq * CG_QG_MR * 4 + (j % CG_QG_MR) * 4;
        int32_t s = 0;
        for (int64_t q = 0; q < k; q++) {
            int32_t v = w_signed ? ((const int8_t *)w)[j * ldw + q]
                                 : (int32_t)((const uint8_t *)w)[j * ldw + q] - 128;
            d[(q / 4) * CG_QG_MR * 4 + q % 4] = (int8_t)v;
            s += v;
        }
        wsum[j] = s;
    }
}

typedef struct qg_job {
    const cg_qg_problem *p;
    cg_qg_ukr_fn ukr;
    int64_t tp, tiles, panels, kq;
    const int32_t *cterm; /* per channel: bias - zx * wsum + K * zx * zw */
    uint8_t **tile;       /* per thread: kq x tp x 4 bytes */
    int32_t **tsum;       /* per thread: tp column sums */
} qg_job;

static void qg_task(void *arg, int t, int nt)
{
    const qg_job *j = arg;
    const cg_qg_problem *p = j->p;
    int64_t lo, hi, packed = -1;
    uint8_t *tile = j->tile[t];
    int32_t *tsum = j->tsum[t];
    cg_kernel_share(j->tiles * j->panels, 1, t, nt, &lo, &hi);
    for (int64_t task = lo; task < hi; task++) {
        int64_t ti = task / j->panels, pn = task % j->panels;
        int64_t p0 = ti * j->tp, np = p->p - p0 < j->tp ? p->p - p0 : j->tp;
        if (ti != packed) {
            p->lv->pack(p->x, p->off, p->pos + p0, p->k, np, j->tp, tile, tsum);
            packed = ti;
        }
        int64_t m0 = pn * CG_QG_MR, nc = p->m - m0 < CG_QG_MR ? p->m - m0 : CG_QG_MR;
        j->ukr(j->kq, p->w + pn * j->kq * CG_QG_MR * 4, tile, tsum, p->zw + m0, j->cterm + m0,
               p->y + m0 * p->p + p0, p->p, np, nc);
    }
}

/* Tile width in vectors of 16 positions: the least padding, a wider tile
 * (fewer passes over the weights) when it pads only a little more. */
static int qg_choose_nv(int64_t p)
{
    static const double penalty[4] = {0, 1.15, 1.05, 1.0};
    int best = 3;
    double best_cost = 0;
    for (int nv = 3; nv >= 1; nv--) {
        int64_t tp = 16 * nv;
        double cost = (double)((p + tp - 1) / tp * tp) * penalty[nv];
        if (nv == 3 || cost < best_cost) {
            best = nv;
            best_cost = cost;
        }
    }
    return best;
}

bool cg_qg_run(cg_kernel_ctx *k, const cg_qg_problem *p)
{
    if (p->m == 0 || p->p == 0)
        return true;
    int threads = cg_kernel_threads(k);
    int nv = qg_choose_nv(p->p);
    qg_job j;
    j.p = p;
    j.ukr = p->lv->ukr[nv - 1];
    j.tp = 16 * nv;
    j.tiles = (p->p + j.tp - 1) / j.tp;
    j.panels = (p->m + CG_QG_MR - 1) / CG_QG_MR;
    j.kq = (p->k + 3) / 4;
    int32_t *cterm = cg_kernel_scratch(k, (size_t)p->m * sizeof *cterm);
    j.tile = cg_kernel_scratch(k, (size_t)threads * sizeof *j.tile);
    j.tsum = cg_kernel_scratch(k, (size_t)threads * sizeof *j.tsum);
    if (!cterm || !j.tile || !j.tsum)
        return false;
    for (int t = 0; t < threads; t++) {
        j.tile[t] = cg_kernel_scratch(k, (size_t)(j.kq * j.tp * 4));
        j.tsum[t] = cg_kernel_scratch(k, (size_t)j.tp * sizeof(int32_t));
        if (!j.tile[t] || !j.tsum[t])
            return false;
    }
    /* wrapping: the exact value modulo 2^32 */
    uint32_t zx = (uint32_t)p->zx, kz = (uint32_t)p->k * zx;
    for (int64_t m = 0; m < p->m; m++)
        cterm[m] = (int32_t)((p->bias ? (uint32_t)p->bias[m] : 0u) - zx * (uint32_t)p->wsum[m] +
                             kz * (uint32_t)p->zw[m]);
    j.cterm = cterm;
    cg_kernel_parallel_work(k, (double)p->m * (double)p->k * (double)p->p / 4.0, qg_task, &j);
    return true;
}
