/*
 * Recurrent kernels: RNN, GRU and LSTM (ai.onnx, every opset through 14).
 *
 * One driver serves the three ops. It validates shapes for both layouts
 * (layout 0: X [seq, batch, input]; layout 1: X [batch, seq, input]);
 * float32 runs in float32 (rnn_run_f32), other types read every floating
 * input into double scratch; either then runs each direction
 * and batch row over its own sequence length (sequence_lens), leaving the Y
 * rows past that length zero as the spec requires. Gate orders follow the
 * spec: GRU W = [z, r, h], LSTM W = [i, o, f, c], LSTM P = [i, o, f].
 * Activations are looked up by name (case-insensitively, as onnxruntime
 * does); activation_alpha/beta values are consumed in order only by the
 * functions that take them.
 */
#include <math.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "core/threadpool.h"
#include "run/ops/kernels.h"
#include "run/ops/misc_common.h"
#include "run/ops/nn_common.h"
#include "run/ops/packgemm.h"
#include "run/ops/simd.h"

typedef enum rnn_kind { RNN_PLAIN, RNN_GRU, RNN_LSTM } rnn_kind;

typedef enum rnn_act_kind {
    ACT_RELU,
    ACT_TANH,
    ACT_SIGMOID,
    ACT_AFFINE,
    ACT_LEAKYRELU,
    ACT_THRESHOLDEDRELU,
    ACT_SCALEDTANH,
    ACT_HARDSIGMOID,
    ACT_ELU,
    ACT_SOFTSIGN,
    ACT_SOFTPLUS
} rnn_act_kind;

typedef struct rnn_act {
    rnn_act_kind kind;
    double alpha, beta;
} rnn_act;

/* name, kind, takes alpha, takes beta, default alpha, default beta */
static const struct {
    const char *name;
    rnn_act_kind kind;
    bool has_alpha, has_beta;
    double alpha, beta;
} rnn_act_table[] = {
    {"relu", ACT_RELU, false, false, 0, 0},
    {"tanh", ACT_TANH, false, false, 0, 0},
    {"sigmoid", ACT_SIGMOID, false, false, 0, 0},
    {"affine", ACT_AFFINE, true, true, 1.0, 0.0},
    {"leakyrelu", ACT_LEAKYRELU, true, false, 0.01, 0},
    {"thresholdedrelu", ACT_THRESHOLDEDRELU, true, false, 1.0, 0},
    {"scaledtanh", ACT_SCALEDTANH, true, true, 1.0, 1.0},
    {"hardsigmoid", ACT_HARDSIGMOID, true, true, 0.2, 0.5},
    {"elu", ACT_ELU, true, false, 1.0, 0},
    {"softsign", ACT_SOFTSIGN, false, false, 0, 0},
    {"softplus", ACT_SOFTPLUS, false, false, 0, 0},
};

static double rnn_apply(const rnn_act *a, double x)
{
    switch (a->kind) {
    case ACT_RELU: return x > 0 ? x : 0;
    case ACT_TANH: return tanh(x);
    case ACT_SIGMOID: return 1.0 / (1.0 + exp(-x));
    case ACT_AFFINE: return a->alpha * x + a->beta;
    case ACT_LEAKYRELU: return x >= 0 ? x : a->alpha * x;
    case ACT_THRESHOLDEDRELU: return x > a->alpha ? x : 0;
    case ACT_SCALEDTANH: return a->alpha * tanh(a->beta * x);
    case ACT_HARDSIGMOID: {
        double v = a->alpha * x + a->beta;
        return v < 0 ? 0 : (v > 1 ? 1 : v);
    }
    case ACT_ELU: return x >= 0 ? x : a->alpha * (exp(x) - 1.0);
    case ACT_SOFTSIGN: return x / (1.0 + fabs(x));
    case ACT_SOFTPLUS: return x > 30 ? x : log1p(exp(x));
    }
    return x;
}

/* Case-insensitive equality of a counted name with a lowercase table key. */
static bool rnn_name_eq(const uint8_t *s, size_t len, const char *key)
{
    size_t kl = strlen(key);
    if (len != kl)
        return false;
    for (size_t i = 0; i < len; i++) {
        int c = s[i];
        if (c >= 'A' && c <= 'Z')
            c += 'a' - 'A';
        if (c != key[i])
            return false;
    }
    return true;
}

typedef struct rnn_cfg {
    rnn_kind kind;
    int G;         /* gates per direction: 1, 3, 4 */
    int64_t dirs, H, I, S, B;
    int layout;
    bool reverse_only;
    double clip; /* <= 0 means none */
    bool lbr, input_forget;
    rnn_act acts[2][3];
} rnn_cfg;

/* Fills cfg->acts from the activations / activation_alpha / activation_beta
 * attributes, or the op's defaults. */
static cg_status rnn_parse_acts(cg_kernel_ctx *k, rnn_cfg *c)
{
    static const rnn_act_kind defaults[3][3] = {
        {ACT_TANH, ACT_TANH, ACT_TANH},
        {ACT_SIGMOID, ACT_TANH, ACT_TANH},
        {ACT_SIGMOID, ACT_TANH, ACT_TANH},
    };
    int per_dir = c->kind == RNN_PLAIN ? 1 : (c->kind == RNN_GRU ? 2 : 3);
    const cg_attr *names = cg_kernel_attr(k, "activations");
    size_t nalpha = 0, nbeta = 0;
    const float *alphas = cg_attr_floats(k, "activation_alpha", &nalpha);
    const float *betas = cg_attr_floats(k, "activation_beta", &nbeta);
    size_t ai = 0, bi = 0;
    if (!names || names->strings_count == 0) {
        for (int d = 0; d < 2; d++)
            for (int f = 0; f < per_dir; f++)
                c->acts[d][f] = (rnn_act){defaults[c->kind][f], 0, 0};
        return CG_OK;
    }
    size_t n = names->strings_count;
    /* A single direction's list serves both directions of a bidirectional op. */
    if (n != (size_t)per_dir * (size_t)c->dirs && !(n == (size_t)per_dir && c->dirs == 2))
        return cg_kernel_fail(k, CG_INVALID,
                              "activations has %zu names; expected %d per direction (%lld "
                              "directions)",
                              n, per_dir, (long long)c->dirs);
    for (size_t i = 0; i < n; i++) {
        const cg_bytes *nm = &names->strings[i];
        size_t t;
        size_t count = sizeof rnn_act_table / sizeof rnn_act_table[0];
        for (t = 0; t < count; t++)
            if (rnn_name_eq(nm->data, nm->len, rnn_act_table[t].name))
                break;
        if (t == count)
            return cg_kernel_fail(k, CG_UNSUPPORTED, "unknown activation '%.*s'",
                                  (int)(nm->len > 64 ? 64 : nm->len), (const char *)nm->data);
        rnn_act a = {rnn_act_table[t].kind, rnn_act_table[t].alpha, rnn_act_table[t].beta};
        if (rnn_act_table[t].has_alpha && ai < nalpha)
            a.alpha = alphas[ai++];
        if (rnn_act_table[t].has_beta && bi < nbeta)
            a.beta = betas[bi++];
        c->acts[i / (size_t)per_dir][i % (size_t)per_dir] = a;
    }
    if (n == (size_t)per_dir && c->dirs == 2)
        for (int f = 0; f < per_dir; f++)
            c->acts[1][f] = c->acts[0][f];
    return CG_OK;
}

static bool rnn_dims_eq(const cg_tensor *t, int rank, const int64_t *dims)
{
    if (t->rank != rank)
        return false;
    for (int i = 0; i < rank; i++)
        if (t->dims[i] != dims[i])
            return false;
    return true;
}

static double rnn_clip(const rnn_cfg *c, double v)
{
    if (c->clip > 0) {
        if (v > c->clip)
            return c->clip;
        if (v < -c->clip)
            return -c->clip;
    }
    return v;
}

/* ---- float32 ------------------------------------------------------------------
 * The float32 path computes in float32 like the reference implementations:
 * the input projections of every time step are one sgemm per direction
 * (X [rows, I] times W^T, both biases added, except GRU's recurrent h-gate
 * bias under linear_before_reset, which the reset gate scales), each step
 * adds the recurrent product (rnn_rec_rows_run) and applies the gates, the default
 * sigmoid/tanh through the vector tables. Sums run in BLAS order rather
 * than the double path's i order. */

/* A recurrent product y[m] = R_blk h over a block of R's rows (m x kk,
 * row-major): on the vector level's one-position GEMM kernel (simd.h,
 * gemv) with the block packed for it (rnn_packs), each y[i] one float32
 * sum over kk in order; else (the portable level) OpenBLAS's sgemv. */
typedef struct rnn_rec {
    const cg_simd_gemm *g; /* NULL: sgemv over r */
    const float *r;
    const float *wp;       /* r packed for g */
    int64_t m, kk;
} rnn_rec;

/* wp: the block packed for the gemv kernel (rnn_packs), NULL when the
 * level has none. */
static void rnn_rec_init(const cg_simd_ops *ops, const float *r, const float *wp, int64_t m,
                         int64_t kk, rnn_rec *rr)
{
    rr->g = wp && m > 0 && kk > 0 ? &ops->gemv : NULL;
    rr->r = r;
    rr->wp = wp;
    rr->m = m;
    rr->kk = kk;
}

/* The recurrent blocks of every direction packed for the gemv kernel: the
 * node's state when R is constant, packed at its first run and kept, else
 * packed into scratch for this run. A model that runs one time step per
 * call (Silero VAD's LSTM: R is 512 x 128 for one step) spent a fifth of
 * its run packing R at every run. Per direction: `rec` rows from R's
 * first row, then `hrows` rows from row 2H (GRU's h gate). */
typedef struct rnn_packed {
    const void *r_data;
    int64_t dims[3];
    const cg_simd_gemm *g;
    int64_t rec, hrows;
    float *data;
} rnn_packed;

static void rnn_packed_free(void *p)
{
    rnn_packed *rp = p;
    if (rp)
        free(rp->data);
    free(rp);
}

static const float *rnn_packs(cg_kernel_ctx *k, const cg_simd_gemm *g, const cg_tensor *R,
                              int64_t dirs, int64_t H, int64_t rec, int64_t hrows, size_t *per)
{
    size_t a = cg_pg_packed_floats(g, rec, H), b = hrows ? cg_pg_packed_floats(g, hrows, H) : 0;
    *per = a + b;
    rnn_packed *rp = cg_kernel_state(k);
    if (rp && rp->r_data == R->data && rp->g == g && rp->rec == rec && rp->hrows == hrows &&
        memcmp(rp->dims, R->dims, sizeof rp->dims) == 0)
        return rp->data;
    if (*per > SIZE_MAX / sizeof(float) / (size_t)dirs)
        return NULL;
    size_t total = *per * (size_t)dirs;
    bool keep = cg_kernel_input_is_const(k, 2);
    float *data = keep ? malloc(total * sizeof(float) + 1)
                       : cg_nn_scratch(k, (int64_t)total, sizeof(float));
    if (!data)
        return NULL;
    const float *r = R->data;
    for (int64_t d = 0; d < dirs; d++) {
        const float *rd = r + d * R->dims[1] * H;
        float *dd = data + (size_t)d * *per;
        cg_pg_pack(g, rd, H, rec, H, dd);
        if (hrows)
            cg_pg_pack(g, rd + 2 * H * H, H, hrows, H, dd + a);
    }
    if (!keep)
        return data;
    rp = calloc(1, sizeof *rp);
    if (!rp) {
        free(data);
        return NULL;
    }
    rp->r_data = R->data;
    memcpy(rp->dims, R->dims, sizeof rp->dims);
    rp->g = g;
    rp->rec = rec;
    rp->hrows = hrows;
    rp->data = data;
    if (!cg_kernel_set_state(k, rp, rnn_packed_free)) {
        /* no runtime to keep it: use it once */
        float *copy = cg_nn_scratch(k, (int64_t)total, sizeof(float));
        if (copy)
            memcpy(copy, data, total * sizeof(float));
        rnn_packed_free(rp);
        return copy;
    }
    return data;
}

/* y[0..m) = rows row0..row0+m of the block times x; row0 a multiple of the
 * kernel's nr, and m reaching the block's end or a multiple of nr (off: kk
 * offsets 0, 1, ...; tile: g->nr floats of scratch). A row is the same sum
 * whichever range it is computed in. */
static void rnn_rec_rows_run(const rnn_rec *rr, int64_t row0, int64_t m, const int64_t *off,
                             const float *x, float *y, float *tile)
{
    if (!rr->g) {
        cg_nn_sgemv(m, rr->kk, rr->r + row0 * rr->kk, x, y);
        return;
    }
    const cg_simd_gemm *g = rr->g;
    const int64_t pos0 = 0;
    for (int64_t m0 = 0; m0 < m; m0 += g->nr) {
        g->ukr(rr->kk, rr->wp + (row0 + m0) * rr->kk, g->nr, x, off, &pos0, tile, 0);
        int64_t n = m - m0 < g->nr ? m - m0 : g->nr;
        memcpy(y + m0, tile, (size_t)n * sizeof(float));
    }
}

/* v[0..n) = act(clip(v)) in place. */
static void rnn_act_f32(const cg_simd_ops *ops, const rnn_cfg *c, const rnn_act *a, float *v,
                        int64_t n)
{
    if (c->clip > 0) {
        float lim = (float)c->clip;
        for (int64_t i = 0; i < n; i++)
            v[i] = v[i] > lim ? lim : (v[i] < -lim ? -lim : v[i]);
    }
    if (a->kind == ACT_SIGMOID)
        ops->sigmoid_f32(v, v, n);
    else if (a->kind == ACT_TANH)
        ops->tanh_f32(v, v, n);
    else
        for (int64_t i = 0; i < n; i++)
            v[i] = (float)rnn_apply(a, v[i]);
}

/* The rows of R packed for the gemv per direction: `rec` from R's first
 * row, then `hrows` from row 2H. GRU without linear_before_reset
 * multiplies r into h before its h-gate product: that part waits for r
 * (rr_h). Under linear_before_reset the h gate's rows are the last H of
 * `rec`, one product with z and r. */
static void rnn_rec_rows(rnn_kind kind, bool lbr, int64_t H, int64_t *rec, int64_t *hrows)
{
    int64_t G = kind == RNN_PLAIN ? 1 : (kind == RNN_GRU ? 3 : 4);
    *rec = kind == RNN_GRU && !lbr ? 2 * H : G * H;
    *hrows = kind == RNN_GRU && !lbr ? H : 0;
}

/* ---- one sequence, step by step ------------------------------------------------
 * A step adds the recurrent product of the previous h to the step's input
 * projections and applies the gates, unit by unit. With several threads a
 * step splits by hidden units into `chunks` ranges of whole gemv panels (H
 * a multiple of the kernel's nr, so gate q's rows of units j0..j1 are the
 * panels from row q*H + j0 of the one packing): each value is the same
 * float32 sum and the same gate arithmetic whichever range, and so whichever
 * thread, computed it. Ranges are claimed in order from one counter: claim
 * i is range i % chunks of phase i / chunks, and its claimant first waits
 * until every claim of the phases before has finished (`done`). Those were
 * claimed before it by threads now running them, so the wait always ends,
 * even when a worker never arrives (the caller then claims everything, in
 * order). A step is one phase; GRU without linear_before_reset takes two,
 * since r (*) h needs every unit's r before the h gate's product. h
 * alternates between two buffers, so a step reads whole the h the step
 * before wrote. */
typedef struct rnn_seq {
    const cg_simd_ops *ops;
    const rnn_cfg *c;
    const rnn_act *act;
    const rnn_rec *rr, *rr_h;
    const int64_t *off;
    const float *xw;      /* this direction's input projections, biases added */
    const float *rb;      /* recurrent bias (GRU's h gate under lbr), or NULL */
    const float *pd;      /* this direction's peepholes, or NULL */
    float *y;
    int64_t b, d, len;
    bool rev;
    float *h[2];          /* h of step s in h[s & 1] */
    float *cell, *hr, *cand, *tmp;
    float *tiles;         /* one tile of tile_n floats per share */
    int64_t tile_n;       /* the gemv kernel's nr (1 without one): ranges are whole tiles */
    int64_t chunks;
    int phases;
    atomic_llong claim, done;
} rnn_seq;

static int rnn_seq_phases(const rnn_cfg *c)
{
    return c->kind == RNN_GRU && !c->lbr ? 2 : 1;
}

/* Phase `phase` of step `step` over hidden units [j0, j1). */
static void rnn_seq_range(const rnn_seq *s, int64_t step, int phase, int64_t j0, int64_t j1,
                          float *tile)
{
    const rnn_cfg *c = s->c;
    const cg_simd_ops *ops = s->ops;
    const rnn_act *act = s->act;
    const int64_t H = c->H, n = j1 - j0;
    const bool whole = j0 == 0 && j1 == H;
    const int64_t t = s->rev ? s->len - 1 - step : step;
    const float *g = s->xw + (c->layout ? s->b * c->S + t : t * c->B + s->b) * c->G * H;
    const float *hp = s->h[step & 1];
    float *hn = s->h[(step + 1) & 1], *hr = s->hr, *cand = s->cand, *tmp = s->tmp;
    /* the recurrent rows of the gates this phase reads: all of them at once
     * for the whole range, else gate by gate */
    if (!(c->kind == RNN_GRU && phase == 1)) {
        if (whole) {
            rnn_rec_rows_run(s->rr, 0, s->rr->m, s->off, hp, hr, tile);
        } else {
            for (int64_t q = 0; q * H < s->rr->m; q++)
                rnn_rec_rows_run(s->rr, q * H + j0, n, s->off, hp, hr + q * H + j0, tile);
        }
    }
    if (c->kind == RNN_PLAIN) {
        for (int64_t j = j0; j < j1; j++)
            cand[j] = g[j] + hr[j];
        rnn_act_f32(ops, c, &act[0], cand + j0, n);
        memcpy(hn + j0, cand + j0, (size_t)n * sizeof(float));
    } else if (c->kind == RNN_GRU) {
        float *z = hr, *rg = hr + H;
        if (phase == 0) {
            for (int64_t j = j0; j < j1; j++) {
                z[j] += g[j];
                rg[j] += g[H + j];
            }
            if (whole) {
                rnn_act_f32(ops, c, &act[0], hr, 2 * H);
            } else {
                rnn_act_f32(ops, c, &act[0], z + j0, n);
                rnn_act_f32(ops, c, &act[0], rg + j0, n);
            }
            if (!c->lbr) {
                for (int64_t j = j0; j < j1; j++)
                    tmp[j] = rg[j] * hp[j];
                return; /* the h gate reads every unit's r (*) h: phase 1 */
            }
            /* under lbr the h gate's rows were in the product above */
            for (int64_t j = j0; j < j1; j++) {
                float rh = hr[2 * H + j] + (s->rb ? s->rb[2 * H + j] : 0.0f);
                cand[j] = g[2 * H + j] + rg[j] * rh;
            }
        } else {
            rnn_rec_rows_run(s->rr_h, j0, n, s->off, tmp, cand + j0, tile);
            for (int64_t j = j0; j < j1; j++)
                cand[j] += g[2 * H + j];
        }
        rnn_act_f32(ops, c, &act[1], cand + j0, n);
        for (int64_t j = j0; j < j1; j++)
            hn[j] = (1.0f - z[j]) * cand[j] + z[j] * hp[j];
    } else {
        /* gates i, o, f, c; peepholes on i and f read the old cell, on o
         * the new one */
        float *ig = hr, *og = hr + H, *fg = hr + 2 * H, *cg = hr + 3 * H, *cell = s->cell;
        for (int64_t q = 0; q < 4; q++)
            for (int64_t j = j0; j < j1; j++)
                hr[q * H + j] += g[q * H + j];
        if (s->pd)
            for (int64_t j = j0; j < j1; j++) {
                ig[j] += s->pd[j] * cell[j];
                fg[j] += s->pd[2 * H + j] * cell[j];
            }
        rnn_act_f32(ops, c, &act[0], ig + j0, n);
        if (c->input_forget)
            for (int64_t j = j0; j < j1; j++)
                fg[j] = 1.0f - ig[j];
        else
            rnn_act_f32(ops, c, &act[0], fg + j0, n);
        rnn_act_f32(ops, c, &act[1], cg + j0, n);
        for (int64_t j = j0; j < j1; j++)
            cell[j] = fg[j] * cell[j] + ig[j] * cg[j];
        if (s->pd)
            for (int64_t j = j0; j < j1; j++)
                og[j] += s->pd[H + j] * cell[j];
        rnn_act_f32(ops, c, &act[0], og + j0, n);
        memcpy(tmp + j0, cell + j0, (size_t)n * sizeof(float));
        rnn_act_f32(ops, c, &act[2], tmp + j0, n);
        for (int64_t j = j0; j < j1; j++)
            hn[j] = og[j] * tmp[j];
    }
    float *yt = s->y + (c->layout ? (s->b * c->S + t) * c->dirs + s->d
                                  : (t * c->dirs + s->d) * c->B + s->b) * H;
    memcpy(yt + j0, hn + j0, (size_t)n * sizeof(float));
}

static void rnn_seq_task(void *arg, int t, int n)
{
    (void)n;
    rnn_seq *s = arg;
    float *tile = s->tiles + (size_t)t * (size_t)s->tile_n;
    const long long per = s->chunks, total = s->len * s->phases * per;
    for (;;) {
        long long i = atomic_fetch_add_explicit(&s->claim, 1, memory_order_relaxed);
        if (i >= total)
            return;
        long long ph = i / per, need = ph * per;
        for (unsigned spins = 1; atomic_load_explicit(&s->done, memory_order_acquire) < need;
             spins++) {
            cg_cpu_relax();
            if ((spins & 1023) == 0)
                sched_yield(); /* the other claimant was descheduled */
        }
        int64_t j0, j1;
        cg_kernel_share(s->c->H, s->tile_n, (int)(i % per), (int)per, &j0, &j1);
        rnn_seq_range(s, ph / s->phases, (int)(ph % s->phases), j0, j1, tile);
        atomic_fetch_add_explicit(&s->done, 1, memory_order_release);
    }
}

/* Ranges a step splits into on `threads` threads: 1 unless H is whole
 * panels of the gemv kernel, at least two of them, and a step's product is
 * worth splitting (64K multiply-adds: a range then takes a microsecond or
 * more, against a few hundred nanoseconds to hand a phase over). */
static int64_t rnn_seq_chunks(const cg_simd_ops *ops, const rnn_cfg *c, int threads)
{
    if (threads < 2 || !ops->gemv.ukr)
        return 1;
    const int64_t nr = ops->gemv.nr, H = c->H;
    if (H % nr != 0 || H / nr < 2 || c->G * H * H < 65536)
        return 1;
    return H / nr < threads ? H / nr : threads;
}

static void rnn_seq_run(cg_kernel_ctx *k, rnn_seq *s)
{
    if (s->chunks < 2 || s->len < 1) {
        for (int64_t step = 0; step < s->len; step++)
            for (int ph = 0; ph < s->phases; ph++)
                rnn_seq_range(s, step, ph, 0, s->c->H, s->tiles);
        return;
    }
    atomic_store_explicit(&s->claim, 0, memory_order_relaxed);
    atomic_store_explicit(&s->done, 0, memory_order_relaxed);
    cg_kernel_parallel(k, rnn_seq_task, s);
}

static cg_status rnn_run_f32(cg_kernel_ctx *k, const rnn_cfg *c, const cg_tensor *X,
                             const cg_tensor *W, const cg_tensor *R, const cg_tensor *Bias,
                             const cg_tensor *SL, const cg_tensor *H0, const cg_tensor *C0,
                             const cg_tensor *P, float *y, float *yh, float *yc)
{
    const cg_simd_ops *ops = cg_simd_ops_get(cg_kernel_simd(k));
    const int64_t H = c->H, GH = c->G * H, rows = c->S * c->B;
    const float *x = X->data, *w = W->data, *r = R->data;
    const float *bias = Bias ? Bias->data : NULL, *p = P ? P->data : NULL;
    const float *h0 = H0 ? H0->data : NULL, *c0 = C0 ? C0->data : NULL;
    if (GH > INT32_MAX || c->I > INT32_MAX)
        return cg_kernel_fail(k, CG_UNSUPPORTED, "matrix dimensions exceed the BLAS int range");
    const int threads = cg_kernel_threads(k);
    const int64_t tile_n = ops->gemv.ukr ? ops->gemv.nr : 1;
    rnn_seq s = {
        .ops = ops,
        .c = c,
        .tile_n = tile_n,
        .chunks = rnn_seq_chunks(ops, c, threads),
        .phases = rnn_seq_phases(c),
    };
    float *xw = cg_nn_scratch(k, rows * GH, sizeof(float));
    s.hr = cg_nn_scratch(k, GH, sizeof(float));
    s.h[0] = cg_nn_scratch(k, H, sizeof(float));
    s.h[1] = cg_nn_scratch(k, H, sizeof(float));
    s.cell = cg_nn_scratch(k, H, sizeof(float));
    s.tmp = cg_nn_scratch(k, H, sizeof(float));
    s.cand = cg_nn_scratch(k, H, sizeof(float));
    int64_t *off = cg_nn_scratch(k, H, sizeof(int64_t));
    s.tiles = cg_nn_scratch(k, (int64_t)threads * tile_n, sizeof(float));
    if (!xw || !s.hr || !s.h[0] || !s.h[1] || !s.cell || !s.tmp || !s.cand || !off || !s.tiles)
        return cg_kernel_fail(k, CG_NOMEM, "out of scratch memory");
    for (int64_t q = 0; q < H; q++)
        off[q] = q;
    s.off = off;
    s.xw = xw;
    s.y = y;
    int64_t rec, hrows;
    rnn_rec_rows(c->kind, c->lbr, H, &rec, &hrows);
    size_t per = 0;
    const float *packs = NULL;
    if (ops->gemv.ukr && !(packs = rnn_packs(k, &ops->gemv, R, c->dirs, H, rec, hrows, &per)))
        return cg_kernel_fail(k, CG_NOMEM, "out of memory packing R");
    for (int64_t d = 0; d < c->dirs; d++) {
        const float *wd = w + d * GH * c->I, *rd = r + d * GH * H;
        const float *pk = packs ? packs + (size_t)d * per : NULL;
        rnn_rec rr, rr_h;
        rnn_rec_init(ops, rd, pk, rec, H, &rr);
        rnn_rec_init(ops, rd + 2 * H * H, pk ? pk + cg_pg_packed_floats(&ops->gemv, rec, H) : NULL,
                     hrows, H, &rr_h);
        const float *wb = bias ? bias + d * 2 * GH : NULL, *rb = wb ? wb + GH : NULL;
        s.rr = &rr;
        s.rr_h = &rr_h;
        s.rb = c->lbr ? rb : NULL;
        s.pd = p ? p + d * 3 * H : NULL;
        s.act = c->acts[d];
        s.d = d;
        s.rev = c->reverse_only || d == 1;
        /* rows of X in memory order: (t, b) for layout 0, (b, t) for 1 */
        if (!cg_nn_sgemm(false, true, rows, GH, c->I, 1.0f, x, c->I, wd, c->I, 0.0f, xw, GH))
            return cg_kernel_fail(k, CG_UNSUPPORTED, "matrix dimensions exceed the BLAS int range");
        for (int64_t row = 0; wb && row < rows; row++) {
            float *xr = xw + row * GH;
            for (int64_t g = 0; g < GH; g++)
                xr[g] += wb[g] + (c->lbr && g >= 2 * H ? 0.0f : rb[g]);
        }
        for (int64_t b = 0; b < c->B; b++) {
            int64_t len = c->S;
            if (SL) {
                len = cg_tensor_get_i64(SL, b);
                if (len < 0 || len > c->S)
                    return cg_kernel_fail(k, CG_INVALID,
                                          "sequence_lens[%lld] = %lld is outside [0, %lld]",
                                          (long long)b, (long long)len, (long long)c->S);
            }
            int64_t hoff = c->layout ? (b * c->dirs + d) * H : (d * c->B + b) * H;
            for (int64_t j = 0; j < H; j++) {
                s.h[0][j] = h0 ? h0[hoff + j] : 0.0f;
                s.cell[j] = c0 ? c0[hoff + j] : 0.0f;
            }
            s.b = b;
            s.len = len;
            rnn_seq_run(k, &s);
            memcpy(yh + hoff, s.h[len & 1], (size_t)H * sizeof(float));
            if (c->kind == RNN_LSTM)
                memcpy(yc + hoff, s.cell, (size_t)H * sizeof(float));
        }
    }
    return CG_OK;
}

static cg_status rnn_run(cg_kernel_ctx *k, rnn_kind kind)
{
    const cg_tensor *X, *W, *R;
    cg_status st;
    if ((st = cg_kernel_require(k, 0, &X)) || (st = cg_kernel_require(k, 1, &W)) ||
        (st = cg_kernel_require(k, 2, &R)))
        return st;
    const cg_tensor *Bias = cg_kernel_input(k, 3), *SL = cg_kernel_input(k, 4),
                    *H0 = cg_kernel_input(k, 5);
    const cg_tensor *C0 = kind == RNN_LSTM ? cg_kernel_input(k, 6) : NULL;
    const cg_tensor *P = kind == RNN_LSTM ? cg_kernel_input(k, 7) : NULL;

    rnn_cfg c;
    memset(&c, 0, sizeof c);
    c.kind = kind;
    c.G = kind == RNN_PLAIN ? 1 : (kind == RNN_GRU ? 3 : 4);
    if (!mc_is_float(X->dtype))
        return cg_kernel_fail(k, CG_UNSUPPORTED, "X has type %s; expected a float type",
                              cg_dtype_name(X->dtype));
    if (W->dtype != X->dtype || R->dtype != X->dtype)
        return cg_kernel_fail(k, CG_INVALID, "W and R must have the type of X (%s)",
                              cg_dtype_name(X->dtype));
    if (X->rank != 3 || W->rank != 3 || R->rank != 3)
        return cg_kernel_fail(k, CG_INVALID, "X, W and R must have rank 3 (got %d, %d, %d)",
                              X->rank, W->rank, R->rank);
    int64_t layout = k->since >= 14 ? cg_attr_int(k, "layout", 0) : 0;
    if (layout != 0 && layout != 1)
        return cg_kernel_fail(k, CG_INVALID, "layout %lld must be 0 or 1", (long long)layout);
    c.layout = (int)layout;
    c.S = layout ? X->dims[1] : X->dims[0];
    c.B = layout ? X->dims[0] : X->dims[1];
    c.I = X->dims[2];

    const char *dir = cg_attr_string(k, "direction", "forward");
    if (strcmp(dir, "forward") == 0)
        c.dirs = 1;
    else if (strcmp(dir, "reverse") == 0) {
        c.dirs = 1;
        c.reverse_only = true;
    } else if (strcmp(dir, "bidirectional") == 0)
        c.dirs = 2;
    else
        return cg_kernel_fail(k, CG_INVALID, "unknown direction '%s'", dir);

    c.H = cg_kernel_attr(k, "hidden_size") ? cg_attr_int(k, "hidden_size", 0) : R->dims[2];
    if (c.H <= 0 || c.H > (INT64_C(1) << 32))
        return cg_kernel_fail(k, CG_INVALID, "hidden_size %lld is out of range", (long long)c.H);
    int64_t GH = c.G * c.H;
    int64_t wd[3] = {c.dirs, GH, c.I}, rd[3] = {c.dirs, GH, c.H};
    if (!rnn_dims_eq(W, 3, wd))
        return cg_kernel_fail(k, CG_INVALID,
                              "W has shape [%lld,%lld,%lld]; expected [%lld,%lld,%lld]",
                              (long long)W->dims[0], (long long)W->dims[1],
                              (long long)W->dims[2], (long long)wd[0], (long long)wd[1],
                              (long long)wd[2]);
    if (!rnn_dims_eq(R, 3, rd))
        return cg_kernel_fail(k, CG_INVALID,
                              "R has shape [%lld,%lld,%lld]; expected [%lld,%lld,%lld]",
                              (long long)R->dims[0], (long long)R->dims[1],
                              (long long)R->dims[2], (long long)rd[0], (long long)rd[1],
                              (long long)rd[2]);
    int64_t bd[2] = {c.dirs, 2 * GH};
    if (Bias && (Bias->dtype != X->dtype || !rnn_dims_eq(Bias, 2, bd)))
        return cg_kernel_fail(k, CG_INVALID, "B must have type %s and shape [%lld,%lld]",
                              cg_dtype_name(X->dtype), (long long)bd[0], (long long)bd[1]);
    int64_t hd[3] = {layout ? c.B : c.dirs, layout ? c.dirs : c.B, c.H};
    if (H0 && (H0->dtype != X->dtype || !rnn_dims_eq(H0, 3, hd)))
        return cg_kernel_fail(k, CG_INVALID, "initial_h must have type %s and shape [%lld,%lld,%lld]",
                              cg_dtype_name(X->dtype), (long long)hd[0], (long long)hd[1],
                              (long long)hd[2]);
    if (C0 && (C0->dtype != X->dtype || !rnn_dims_eq(C0, 3, hd)))
        return cg_kernel_fail(k, CG_INVALID, "initial_c must have type %s and shape [%lld,%lld,%lld]",
                              cg_dtype_name(X->dtype), (long long)hd[0], (long long)hd[1],
                              (long long)hd[2]);
    int64_t pd[2] = {c.dirs, 3 * c.H};
    if (P && (P->dtype != X->dtype || !rnn_dims_eq(P, 2, pd)))
        return cg_kernel_fail(k, CG_INVALID, "P must have type %s and shape [%lld,%lld]",
                              cg_dtype_name(X->dtype), (long long)pd[0], (long long)pd[1]);
    if (SL && (SL->rank != 1 || SL->dims[0] != c.B || !cg_dtype_is_int(SL->dtype)))
        return cg_kernel_fail(k, CG_INVALID, "sequence_lens must be an integer tensor of shape [%lld]",
                              (long long)c.B);

    const cg_attr *clip_attr = cg_kernel_attr(k, "clip");
    if (clip_attr) {
        c.clip = cg_attr_float(k, "clip", 0.0f);
        if (!(c.clip > 0))
            return cg_kernel_fail(k, CG_INVALID, "clip %g must be positive", c.clip);
    }
    c.lbr = kind == RNN_GRU && cg_attr_int(k, "linear_before_reset", 0) != 0;
    c.input_forget = kind == RNN_LSTM && cg_attr_int(k, "input_forget", 0) != 0;
    if ((st = rnn_parse_acts(k, &c)))
        return st;

    /* Outputs: Y, Y_h (and Y_c for LSTM). */
    int64_t ydims[4], yhdims[3] = {hd[0], hd[1], hd[2]};
    if (layout) {
        ydims[0] = c.B, ydims[1] = c.S, ydims[2] = c.dirs, ydims[3] = c.H;
    } else {
        ydims[0] = c.S, ydims[1] = c.dirs, ydims[2] = c.B, ydims[3] = c.H;
    }
    int64_t ny, nh;
    if ((st = mc_numel(k, 4, ydims, &ny)) || (st = mc_numel(k, 3, yhdims, &nh)))
        return st;
    int64_t nsteps;
    if ((st = mc_numel(k, 3, X->dims, &nsteps)))
        return st;

    if (X->dtype == CG_DTYPE_FLOAT) {
        /* outputs first: Y rows past a sequence's length stay zero */
        cg_tensor *out[3] = {NULL, NULL, NULL};
        float *scratch_out[3] = {NULL, NULL, NULL};
        for (size_t o = 0; o < 3; o++) {
            bool want = o < k->output_count && (o < 2 || kind == RNN_LSTM);
            if (want && (st = cg_kernel_output(k, o, X->dtype, o ? 3 : 4, o ? yhdims : ydims,
                                               &out[o])))
                return st;
            scratch_out[o] = out[o] ? out[o]->data : cg_nn_scratch(k, o ? nh : ny, sizeof(float));
            if (!scratch_out[o])
                return cg_kernel_fail(k, CG_NOMEM, "out of scratch memory");
        }
        return rnn_run_f32(k, &c, X, W, R, Bias, SL, H0, C0, P, scratch_out[0], scratch_out[1],
                           scratch_out[2]);
    }
    double *x = mc_to_f64(k, X), *w = mc_to_f64(k, W), *r = mc_to_f64(k, R);
    double *bias = Bias ? mc_to_f64(k, Bias) : NULL;
    double *h0 = H0 ? mc_to_f64(k, H0) : NULL, *c0 = C0 ? mc_to_f64(k, C0) : NULL;
    double *p = P ? mc_to_f64(k, P) : NULL;
    double *y = mc_scratch_f64(k, ny), *yh = mc_scratch_f64(k, nh), *yc = mc_scratch_f64(k, nh);
    double *h = mc_scratch_f64(k, c.H), *cell = mc_scratch_f64(k, c.H);
    double *xw = mc_scratch_f64(k, GH), *hr = mc_scratch_f64(k, GH), *tmp = mc_scratch_f64(k, c.H);
    if (!x || !w || !r || (Bias && !bias) || (H0 && !h0) || (C0 && !c0) || (P && !p) || !y ||
        !yh || !yc || !h || !cell || !xw || !hr || !tmp)
        return CG_NOMEM;

    for (int64_t b = 0; b < c.B; b++) {
        int64_t len = c.S;
        if (SL) {
            len = cg_tensor_get_i64(SL, b);
            if (len < 0 || len > c.S)
                return cg_kernel_fail(k, CG_INVALID,
                                      "sequence_lens[%lld] = %lld is outside [0, %lld]",
                                      (long long)b, (long long)len, (long long)c.S);
        }
        for (int64_t d = 0; d < c.dirs; d++) {
            bool rev = c.reverse_only || d == 1;
            const double *wd_ = w + d * GH * c.I, *rd_ = r + d * GH * c.H;
            const double *wb = bias ? bias + d * 2 * GH : NULL, *rb = wb ? wb + GH : NULL;
            const double *pd_ = p ? p + d * 3 * c.H : NULL;
            const rnn_act *act = c.acts[d];
            int64_t hoff = layout ? (b * c.dirs + d) * c.H : (d * c.B + b) * c.H;
            for (int64_t j = 0; j < c.H; j++) {
                h[j] = h0 ? h0[hoff + j] : 0.0;
                cell[j] = c0 ? c0[hoff + j] : 0.0;
            }
            for (int64_t s = 0; s < len; s++) {
                int64_t t = rev ? len - 1 - s : s;
                const double *xt = x + (layout ? (b * c.S + t) : (t * c.B + b)) * c.I;
                for (int64_t g = 0; g < GH; g++) {
                    double a = wb ? wb[g] : 0.0, e = rb ? rb[g] : 0.0;
                    const double *wr = wd_ + g * c.I, *rr = rd_ + g * c.H;
                    for (int64_t i = 0; i < c.I; i++)
                        a += xt[i] * wr[i];
                    /* GRU without linear_before_reset mixes r into h first,
                     * so its h-gate recurrent term is computed below. */
                    if (!(kind == RNN_GRU && !c.lbr && g >= 2 * c.H))
                        for (int64_t i = 0; i < c.H; i++)
                            e += h[i] * rr[i];
                    xw[g] = a;
                    hr[g] = e;
                }
                const int64_t Hn = c.H;
                if (kind == RNN_PLAIN) {
                    for (int64_t j = 0; j < Hn; j++)
                        h[j] = rnn_apply(&act[0], rnn_clip(&c, xw[j] + hr[j]));
                } else if (kind == RNN_GRU) {
                    /* tmp <- r (.) h for the default (reset-before) form */
                    double *z = xw; /* reuse: xw[0..H) becomes z after use */
                    for (int64_t j = 0; j < Hn; j++) {
                        double rg = rnn_apply(&act[0], rnn_clip(&c, xw[Hn + j] + hr[Hn + j]));
                        tmp[j] = rg;
                    }
                    double *cand = cell; /* GRU has no cell state; reuse the buffer */
                    for (int64_t j = 0; j < Hn; j++) {
                        double v;
                        if (c.lbr) {
                            v = xw[2 * Hn + j] + tmp[j] * hr[2 * Hn + j];
                        } else {
                            const double *rr = rd_ + (2 * Hn + j) * Hn;
                            v = xw[2 * Hn + j] + (rb ? rb[2 * Hn + j] : 0.0);
                            for (int64_t i = 0; i < Hn; i++)
                                v += tmp[i] * h[i] * rr[i];
                        }
                        cand[j] = rnn_apply(&act[1], rnn_clip(&c, v));
                    }
                    for (int64_t j = 0; j < Hn; j++) {
                        double zg = rnn_apply(&act[0], rnn_clip(&c, z[j] + hr[j]));
                        h[j] = (1.0 - zg) * cand[j] + zg * h[j];
                    }
                } else {
                    for (int64_t j = 0; j < Hn; j++) {
                        double cp = cell[j];
                        double ig = xw[j] + hr[j] + (pd_ ? pd_[j] * cp : 0.0);
                        ig = rnn_apply(&act[0], rnn_clip(&c, ig));
                        double fg;
                        if (c.input_forget)
                            fg = 1.0 - ig;
                        else
                            fg = rnn_apply(&act[0], rnn_clip(&c, xw[2 * Hn + j] + hr[2 * Hn + j] +
                                                                    (pd_ ? pd_[2 * Hn + j] * cp : 0.0)));
                        double cg = rnn_apply(&act[1], rnn_clip(&c, xw[3 * Hn + j] + hr[3 * Hn + j]));
                        double cn = fg * cp + ig * cg;
                        double og = rnn_apply(&act[0], rnn_clip(&c, xw[Hn + j] + hr[Hn + j] +
                                                                      (pd_ ? pd_[Hn + j] * cn : 0.0)));
                        cell[j] = cn;
                        h[j] = og * rnn_apply(&act[2], cn);
                    }
                }
                double *yt = y + (layout ? ((b * c.S + t) * c.dirs + d) : ((t * c.dirs + d) * c.B + b)) * c.H;
                memcpy(yt, h, (size_t)c.H * sizeof(double));
            }
            memcpy(yh + hoff, h, (size_t)c.H * sizeof(double));
            if (kind == RNN_LSTM)
                memcpy(yc + hoff, cell, (size_t)c.H * sizeof(double));
        }
    }

    size_t nout = k->output_count < 3 ? k->output_count : 3;
    if (kind != RNN_LSTM && nout > 2)
        nout = 2;
    for (size_t o = 0; o < nout; o++) {
        cg_tensor *out;
        if (o == 0) {
            if ((st = cg_kernel_output(k, 0, X->dtype, 4, ydims, &out)))
                return st;
            mc_from_f64(out, y);
        } else {
            if ((st = cg_kernel_output(k, o, X->dtype, 3, yhdims, &out)))
                return st;
            mc_from_f64(out, o == 1 ? yh : yc);
        }
    }
    return CG_OK;
}

/* At init (ops/prepare.def): packs a constant float32 R for the gemv
 * kernel, as the first run would (rnn_packs keeps it as the node's state).
 * Silero VAD's LSTM sits in an If branch; packing its R (and faulting in
 * the packed block) was a fifth of the model's first run. Declines, and
 * leaves the work to the run, where R is computed, not float32, or not the
 * shape the attributes call for (the run then says what is wrong). */
static cg_status rnn_prepare(cg_kernel_ctx *k, rnn_kind kind)
{
    const cg_tensor *R = cg_kernel_input(k, 2);
    if (!R || !cg_kernel_input_is_const(k, 2))
        return CG_UNSUPPORTED;
    cg_kernel_input_fill(k, 2); /* rnn_packs reads its data */
    R = cg_kernel_input(k, 2);
    if (!R || R->dtype != CG_DTYPE_FLOAT || R->rank != 3 || !R->data)
        return CG_UNSUPPORTED;
    const cg_simd_ops *ops = cg_simd_ops_get(cg_kernel_simd(k));
    if (!ops->gemv.ukr)
        return CG_UNSUPPORTED;
    const char *dir = cg_attr_string(k, "direction", "forward");
    int64_t dirs = strcmp(dir, "bidirectional") == 0 ? 2 : 1;
    int64_t G = kind == RNN_PLAIN ? 1 : (kind == RNN_GRU ? 3 : 4);
    int64_t H = cg_kernel_attr(k, "hidden_size") ? cg_attr_int(k, "hidden_size", 0) : R->dims[2];
    if (H <= 0 || H > (INT64_C(1) << 32) || R->dims[0] != dirs || R->dims[1] != G * H ||
        R->dims[2] != H)
        return CG_UNSUPPORTED;
    bool lbr = kind == RNN_GRU && cg_attr_int(k, "linear_before_reset", 0) != 0;
    int64_t rec, hrows;
    rnn_rec_rows(kind, lbr, H, &rec, &hrows);
    size_t per = 0;
    return rnn_packs(k, &ops->gemv, R, dirs, H, rec, hrows, &per) && cg_kernel_state(k)
               ? CG_OK : CG_UNSUPPORTED;
}

cg_status cg_op_rnn_prepare(cg_kernel_ctx *k) { return rnn_prepare(k, RNN_PLAIN); }
cg_status cg_op_gru_prepare(cg_kernel_ctx *k) { return rnn_prepare(k, RNN_GRU); }
cg_status cg_op_lstm_prepare(cg_kernel_ctx *k) { return rnn_prepare(k, RNN_LSTM); }

cg_status cg_op_rnn(cg_kernel_ctx *k) { return rnn_run(k, RNN_PLAIN); }
cg_status cg_op_gru(cg_kernel_ctx *k) { return rnn_run(k, RNN_GRU); }
cg_status cg_op_lstm(cg_kernel_ctx *k) { return rnn_run(k, RNN_LSTM); }
