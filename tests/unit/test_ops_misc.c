/*
 * Unit tests for the misc kernel family: what the ONNX backend data does
 * not cover. Error paths (bad thresholds, indices, lengths, equations) must
 * fail with a status whose message names the node; bidirectional and
 * reverse recurrent runs must agree with forward runs on reversed input;
 * Einsum must handle diagonals and broadcast ellipses and stay exact on
 * int64; nearest Resize must copy int64 exactly; DFT must invert; the
 * window generators must give ONNX's values at sizes 0, 1 and 2 (a
 * one-sample symmetric window is NaN, as ONNX's function body and ONNX
 * Runtime 1.22 give).
 *
 * Each case builds a one-node model in memory and runs it through the
 * public runtime API.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "convgate/model.h"
#include "convgate/runtime.h"
#include "convgate/tensor_io.h"
#include "run/cpu.h"
#include "run/exec.h"
#include "run/kernel.h"
#include "testlib.h"

static void test_nms_errors(void)
{
    int64_t bd[3] = {1, 1, 4}, sd[3] = {1, 1, 1}, one[1] = {1};
    double box[4] = {0, 0, 1, 1}, score[1] = {0.9}, mo[1] = {3}, iou[1] = {1.5};
    test_case n = {"NonMaxSuppression", 11, 4, 1, {NULL}, {{0}}, 0, NULL, 0};
    n.in[0] = test_tensor(CG_DTYPE_FLOAT, 3, bd, box);
    n.in[1] = test_tensor(CG_DTYPE_FLOAT, 3, sd, score);
    n.in[2] = test_tensor(CG_DTYPE_INT64, 1, one, mo);
    n.in[3] = test_tensor(CG_DTYPE_FLOAT, 1, one, iou);
    test_case_expect_fail(&n, "iou_threshold", "NMS iou 1.5");
    test_case_free(&n);
}

/* The naive greedy NMS of the spec, for one batch and class: every
 * candidate (score order, ties by index) is compared with every kept box. */
static int64_t nms_naive(const double *bx, const double *sc, int64_t nb, double thr,
                         double sth, int64_t max_out, int64_t *sel)
{
    int64_t *ord = malloc((size_t)nb * sizeof *ord), n = 0, nsel = 0;
    for (int64_t i = 0; i < nb; i++)
        if (sc[i] > sth)
            ord[n++] = i;
    for (int64_t i = 1; i < n; i++) /* insertion sort: stable on index */
        for (int64_t j = i; j > 0 && sc[ord[j]] > sc[ord[j - 1]]; j--) {
            int64_t t = ord[j];
            ord[j] = ord[j - 1];
            ord[j - 1] = t;
        }
    for (int64_t i = 0; i < n && nsel < max_out; i++) {
        const double *a = bx + ord[i] * 4;
        bool keep = true;
        for (int64_t j = 0; j < nsel && keep; j++) {
            const double *b = bx + sel[j] * 4;
            double ay0 = fmin(a[0], a[2]), ax0 = fmin(a[1], a[3]), ay1 = fmax(a[0], a[2]),
                   ax1 = fmax(a[1], a[3]);
            double by0 = fmin(b[0], b[2]), bx0 = fmin(b[1], b[3]), by1 = fmax(b[0], b[2]),
                   bx1 = fmax(b[1], b[3]);
            double ia = (ay1 - ay0) * (ax1 - ax0), ib = (by1 - by0) * (bx1 - bx0);
            if (ia <= 0 || ib <= 0)
                continue;
            double inter = fmax(fmin(ay1, by1) - fmax(ay0, by0), 0.0) *
                           fmax(fmin(ax1, bx1) - fmax(ax0, bx0), 0.0);
            if (inter > 0 && inter / (ia + ib - inter) > thr)
                keep = false;
        }
        if (keep)
            sel[nsel++] = ord[i];
    }
    free(ord);
    return nsel;
}

/* The indexed NMS keeps exactly what the naive one keeps: random boxes in
 * clusters (many overlaps), far-apart groups (torchvision's class offsets),
 * degenerate and flipped boxes, equal scores, NaN coordinates. */
static void test_nms_matches_naive(void)
{
    uint64_t seed = 7;
    for (int trial = 0; trial < 6; trial++) {
        int64_t nb = 300 + trial * 150;
        int64_t bd[3] = {1, 1, 4}, sd[3] = {1, 1, 1}, one[1] = {1};
        bd[1] = nb;
        sd[2] = nb;
        double *box = malloc((size_t)nb * 4 * sizeof *box), *score = malloc((size_t)nb * sizeof *score);
        for (int64_t i = 0; i < nb; i++) {
            double r[6];
            for (int q = 0; q < 6; q++) {
                seed = seed * 6364136223846793005ull + 1442695040888963407ull;
                r[q] = (double)(seed >> 11) * 0x1.0p-53;
            }
            double cx = (double)(i % 7) * 40.0 * (trial % 2 ? 100.0 : 1.0) + r[0] * 30.0;
            double cy = r[1] * 30.0, w = r[2] * 12.0, h = r[3] * 12.0;
            box[i * 4] = cy - h / 2, box[i * 4 + 1] = cx - w / 2;
            box[i * 4 + 2] = cy + h / 2, box[i * 4 + 3] = cx + w / 2;
            if (i % 17 == 0) { /* flipped corners */
                double t = box[i * 4];
                box[i * 4] = box[i * 4 + 2];
                box[i * 4 + 2] = t;
            }
            if (i % 53 == 0)
                box[i * 4 + 3] = box[i * 4 + 1]; /* zero width */
            if (i % 97 == 5)
                box[i * 4 + 2] = NAN;
            score[i] = floor(r[4] * 50.0) / 50.0; /* many ties */
        }
        double mo[1] = {trial == 3 ? 25 : (double)nb}, iou[1] = {0.1 + 0.15 * trial},
               sth[1] = {0.2};
        test_case n = {"NonMaxSuppression", 11, 5, 1, {NULL}, {{0}}, 0, NULL, 0};
        for (int64_t i = 0; i < nb * 4; i++)
            box[i] = (float)box[i];
        for (int64_t i = 0; i < nb; i++)
            score[i] = (float)score[i];
        n.in[0] = test_tensor(CG_DTYPE_FLOAT, 3, bd, box);
        n.in[1] = test_tensor(CG_DTYPE_FLOAT, 3, sd, score);
        n.in[2] = test_tensor(CG_DTYPE_INT64, 1, one, mo);
        n.in[3] = test_tensor(CG_DTYPE_FLOAT, 1, one, iou);
        n.in[4] = test_tensor(CG_DTYPE_FLOAT, 1, one, sth);
        int64_t *want = malloc((size_t)nb * sizeof *want);
        int64_t nwant = nms_naive(box, score, nb, (float)iou[0], (float)sth[0], (int64_t)mo[0], want);
        int64_t cnt = 0;
        double *got = test_case_values(&n, 0, &cnt, "NMS vs naive");
        EXPECT(got && cnt == nwant * 3, "trial %d: %lld selections, naive %lld", trial,
               (long long)(cnt / 3), (long long)nwant);
        for (int64_t j = 0; got && cnt == nwant * 3 && j < nwant; j++)
            EXPECT(got[j * 3 + 2] == (double)want[j], "trial %d: selection %lld is box %g, naive %lld",
                   trial, (long long)j, got[j * 3 + 2], (long long)want[j]);
        free(got);
        free(want);
        free(box);
        free(score);
        test_case_free(&n);
    }
}

static void test_roialign_errors(void)
{
    int64_t xd[4] = {1, 1, 4, 4}, rd[2] = {1, 4}, bd[1] = {1};
    double roi[4] = {0, 0, 2, 2}, bi[1] = {3};
    test_case n = {"RoiAlign", 16, 3, 1, {NULL}, {{0}}, 0, NULL, 0};
    n.in[0] = test_tensor(CG_DTYPE_FLOAT, 4, xd, NULL);
    n.in[1] = test_tensor(CG_DTYPE_FLOAT, 2, rd, roi);
    n.in[2] = test_tensor(CG_DTYPE_INT64, 1, bd, bi);
    test_case_expect_fail(&n, "batch_indices", "RoiAlign batch index 3 of 1");
    test_case_free(&n);
}

static void test_einsum(void)
{
    /* label sizes disagree */
    int64_t a[2] = {2, 3}, b[2] = {2, 3};
    test_case n = {"Einsum", 12, 2, 1, {NULL}, {{0}}, 0, NULL, 0};
    n.attrs[n.nattr++] = attr_str("equation", "ij,jk->ik");
    n.in[0] = test_tensor(CG_DTYPE_FLOAT, 2, a, NULL);
    n.in[1] = test_tensor(CG_DTYPE_FLOAT, 2, b, NULL);
    test_case_expect_fail(&n, "label 'j'", "Einsum size mismatch");
    test_case_free(&n);

    /* diagonal: ii->i */
    int64_t sq[2] = {3, 3};
    double m[9] = {1, 2, 3, 4, 5, 6, 7, 8, 9};
    test_case d = {"Einsum", 12, 1, 1, {NULL}, {{0}}, 0, NULL, 0};
    d.attrs[d.nattr++] = attr_str("equation", "ii->i");
    d.in[0] = test_tensor(CG_DTYPE_FLOAT, 2, sq, m);
    int64_t cnt = 0;
    double *v = test_case_values(&d, 0, &cnt, "Einsum ii->i");
    EXPECT(v && cnt == 3 && v[0] == 1 && v[1] == 5 && v[2] == 9, "diagonal wrong");
    free(v);
    test_case_free(&d);

    /* broadcast ellipsis batch matmul: [2,1,2] x [3,2] -> [2,1,3], int64 exact */
    int64_t ad[3] = {2, 1, 2}, bdm[2] = {2, 3};
    double av[4] = {1, 2, 3, 4}, bv[6] = {1, 0, 1, 0, 1, 1};
    test_case e = {"Einsum", 12, 2, 1, {NULL}, {{0}}, 0, NULL, 0};
    e.attrs[e.nattr++] = attr_str("equation", "...ij,jk->...ik");
    e.in[0] = test_tensor(CG_DTYPE_INT64, 3, ad, av);
    e.in[1] = test_tensor(CG_DTYPE_INT64, 2, bdm, bv);
    /* a large value that double would round: 2^60 + 1 */
    ((int64_t *)e.in[0]->data)[0] = (INT64_C(1) << 60) + 1;
    cg_named_value *outs = NULL;
    size_t nouts = 0;
    cg_error err;
    cg_status st = test_case_run(&e, &outs, &nouts, &err);
    EXPECT(st == CG_OK, "Einsum ellipsis: %s", err.msg);
    if (st == CG_OK) {
        const cg_tensor *t = &outs[0].value->tensor;
        const int64_t *y = t->data;
        EXPECT(t->rank == 3 && t->dims[0] == 2 && t->dims[1] == 1 && t->dims[2] == 3, "shape");
        /* row 0: [2^60+1, 2] x [[1,0,1],[0,1,1]] = [2^60+1, 2, 2^60+3] */
        EXPECT(y[0] == (INT64_C(1) << 60) + 1 && y[1] == 2 && y[2] == (INT64_C(1) << 60) + 3,
               "int64 einsum not exact: %lld %lld %lld", (long long)y[0], (long long)y[1],
               (long long)y[2]);
        EXPECT(y[3] == 3 && y[4] == 4 && y[5] == 7, "batch 1 wrong");
        cg_runtime_free_outputs(outs, nouts);
    }
    test_case_free(&e);
}

/* GRU/LSTM/RNN: the reverse half of a bidirectional run on x equals a
 * forward run on x reversed in time, and the forward half equals a forward
 * run. Weights for the two directions are the same. */
static void test_recurrent_directions(const char *op, int gates)
{
    const int64_t S = 4, B = 2, I = 3, H = 2;
    int64_t xd[3] = {S, B, I}, wd1[3] = {1, gates * H, I}, rd1[3] = {1, gates * H, H};
    int64_t wd2[3] = {2, gates * H, I}, rd2[3] = {2, gates * H, H};
    double x[4 * 2 * 3], xr[4 * 2 * 3], w[2 * 4 * 2 * 3], r[2 * 4 * 2 * 2];
    for (int i = 0; i < S * B * I; i++)
        x[i] = sin(0.7 * i) * 0.8;
    for (int t = 0; t < S; t++)
        memcpy(xr + t * B * I, x + (S - 1 - t) * B * I, sizeof(double) * (size_t)(B * I));
    for (int i = 0; i < gates * H * I; i++)
        w[i] = w[i + gates * H * I] = cos(0.3 * i) * 0.5;
    for (int i = 0; i < gates * H * H; i++)
        r[i] = r[i + gates * H * H] = sin(0.9 * i + 0.2) * 0.5;

    test_case bi = {op, 14, 3, 2, {NULL}, {{0}}, 0, NULL, 0};
    bi.attrs[bi.nattr++] = attr_int("hidden_size", H);
    bi.attrs[bi.nattr++] = attr_str("direction", "bidirectional");
    bi.in[0] = test_tensor(CG_DTYPE_FLOAT, 3, xd, x);
    bi.in[1] = test_tensor(CG_DTYPE_FLOAT, 3, wd2, w);
    bi.in[2] = test_tensor(CG_DTYPE_FLOAT, 3, rd2, r);
    test_case fw = {op, 14, 3, 2, {NULL}, {{0}}, 0, NULL, 0};
    fw.attrs[fw.nattr++] = attr_int("hidden_size", H);
    fw.in[0] = test_tensor(CG_DTYPE_FLOAT, 3, xd, xr);
    fw.in[1] = test_tensor(CG_DTYPE_FLOAT, 3, wd1, w);
    fw.in[2] = test_tensor(CG_DTYPE_FLOAT, 3, rd1, r);
    test_case fw2 = fw;
    fw2.in[0] = test_tensor(CG_DTYPE_FLOAT, 3, xd, x);
    fw2.in[1] = test_tensor(CG_DTYPE_FLOAT, 3, wd1, w);
    fw2.in[2] = test_tensor(CG_DTYPE_FLOAT, 3, rd1, r);

    int64_t nb = 0, nf = 0, nf2 = 0;
    double *yb = test_case_values(&bi, 0, &nb, op), *yf = test_case_values(&fw, 0, &nf, op),
           *yf2 = test_case_values(&fw2, 0, &nf2, op);
    if (yb && yf && yf2) {
        EXPECT(nb == S * 2 * B * H && nf == S * B * H, "%s shapes", op);
        double worst = 0;
        for (int t = 0; t < S; t++)
            for (int i = 0; i < B * H; i++) {
                /* Y[t, 1] (reverse) == forward-on-reversed Y[S-1-t, 0] */
                double a = yb[(t * 2 + 1) * B * H + i], b = yf[(S - 1 - t) * B * H + i];
                double c = yb[(t * 2 + 0) * B * H + i], d = yf2[t * B * H + i];
                worst = fmax(worst, fmax(fabs(a - b), fabs(c - d)));
            }
        EXPECT(worst < 1e-6, "%s bidirectional halves disagree by %g", op, worst);
        EXPECT(yb[0] != 0.0, "%s output is all zero", op);
    }
    free(yb);
    free(yf);
    free(yf2);
    test_case_free(&bi);
    test_case_free(&fw2);
    test_case_free(&fw);

    /* sequence_lens beyond the sequence is rejected */
    int64_t sd[1] = {B};
    double sl[2] = {2, 9};
    test_case bad = {op, 14, 5, 2, {NULL}, {{0}}, 0, NULL, 0};
    bad.attrs[bad.nattr++] = attr_int("hidden_size", H);
    bad.in[0] = test_tensor(CG_DTYPE_FLOAT, 3, xd, x);
    bad.in[1] = test_tensor(CG_DTYPE_FLOAT, 3, wd1, w);
    bad.in[2] = test_tensor(CG_DTYPE_FLOAT, 3, rd1, r);
    bad.in[4] = test_tensor(CG_DTYPE_INT32, 1, sd, sl);
    test_case_expect_fail(&bad, "sequence_lens", op);
    test_case_free(&bad);
}

/* A recurrent model y, yh = OP(x, W, R) with W as an initializer and R an
 * initializer (r_const) or a graph input fed on every run. */
static cg_model *recurrent_model(const char *op, int gates, int64_t S, int64_t H, int64_t I,
                                 const float *w, const float *r, bool r_const, int64_t lbr)
{
    int64_t xd[3] = {S, 1, I}, wd[3] = {1, gates * H, I}, rd[3] = {1, gates * H, H};
    cg_model *m = test_model_new(14);
    cg_graph *g = test_graph_new(m, "main", 4);
    test_graph_input(g, "x", test_type(m, CG_DTYPE_FLOAT, 3, xd));
    test_graph_init_f32(m, g, "w", 3, wd, w);
    if (r_const)
        test_graph_init_f32(m, g, "r", 3, rd, r);
    else
        test_graph_input(g, "r", test_type(m, CG_DTYPE_FLOAT, 3, rd));
    cg_node *n = test_node(m, g, op, "rec", "x,w,r", "y,yh");
    test_node_add_attr(n, attr_int("hidden_size", H));
    if (lbr >= 0)
        test_node_add_attr(n, attr_int("linear_before_reset", lbr));
    test_graph_output(g, "y", NULL);
    test_graph_output(g, "yh", NULL);
    m->graph = g;
    return m;
}

/* Runs rt on x (and r when fed); y's floats into out. */
static bool recurrent_run(cg_runtime *rt, cg_value *x, cg_value *r, float *out, int64_t n)
{
    cg_named_value ins[2] = {{"x", x}, {"r", r}};
    cg_named_value *outs = NULL;
    size_t nout = 0;
    cg_error err;
    cg_error_clear(&err);
    cg_status st = cg_runtime_run(rt, ins, r ? 2 : 1, &outs, &nout, &err);
    EXPECT(st == CG_OK, "recurrent run: %s", err.msg);
    if (st != CG_OK)
        return false;
    bool ok = outs[0].value->tensor.numel == n;
    if (ok)
        memcpy(out, outs[0].value->tensor.data, (size_t)n * sizeof(float));
    cg_runtime_free_outputs(outs, nout);
    return ok;
}

/* The recurrent weights R packed for the gemv kernel: packed when the
 * runtime is built and kept from run to run when R is an initializer (one
 * time step per run, as Silero VAD's LSTM, otherwise repacks R at every
 * run), packed afresh when R is fed. Over
 * runs, a constant R gives the bits a fed R of the same values gives, and
 * a fed R that changes gives the bits of a runtime built on the new R: a
 * packing kept for one R is never used for another. LSTM, GRU with and
 * without linear_before_reset (its h-gate block is packed apart), RNN. */
static void test_recurrent_packing_kept(const char *op, int gates, int64_t lbr)
{
    enum { S = 2, H = 40, I = 24 };
    static float w[4 * H * I], r1[4 * H * H], r2[4 * H * H], xs[S * I];
    for (int i = 0; i < gates * H * I; i++)
        w[i] = (float)(cos(0.37 * i) * 0.3);
    for (int i = 0; i < gates * H * H; i++) {
        r1[i] = (float)(sin(0.91 * i + 0.2) * 0.2);
        r2[i] = (float)(cos(0.53 * i + 0.7) * 0.25);
    }
    for (int i = 0; i < S * I; i++)
        xs[i] = (float)(sin(0.7 * i) * 0.8);
    int64_t xd[3] = {S, 1, I}, rd[3] = {1, gates * H, H};
    cg_model *mc = recurrent_model(op, gates, S, H, I, w, r1, true, lbr);
    cg_model *mf = recurrent_model(op, gates, S, H, I, w, NULL, false, lbr);
    cg_model *m2 = recurrent_model(op, gates, S, H, I, w, r2, true, lbr);
    cg_runtime *rc = NULL, *rf = NULL, *r2rt = NULL;
    cg_error err;
    cg_error_clear(&err);
    bool ok = cg_runtime_init(mc, NULL, &rc, &err) == CG_OK &&
              cg_runtime_init(mf, NULL, &rf, &err) == CG_OK &&
              cg_runtime_init(m2, NULL, &r2rt, &err) == CG_OK;
    EXPECT(ok, "%s init: %s", op, err.msg);
    /* packed when the runtime is built, so the first run costs a warm one */
    EXPECT(!ok || rc->main->steps[0].state, "%s (lbr %lld): a constant R not packed at init", op,
           (long long)lbr);
    EXPECT(!ok || !rf->main->steps[0].state, "%s: a fed R packed at init", op);
    cg_value *x = NULL, *rv1 = NULL, *rv2 = NULL;
    ok = ok && cg_value_alloc_tensor(CG_DTYPE_FLOAT, 3, xd, &x, NULL) == CG_OK &&
         cg_value_alloc_tensor(CG_DTYPE_FLOAT, 3, rd, &rv1, NULL) == CG_OK &&
         cg_value_alloc_tensor(CG_DTYPE_FLOAT, 3, rd, &rv2, NULL) == CG_OK;
    if (ok) {
        memcpy(x->tensor.data, xs, sizeof xs);
        memcpy(rv1->tensor.data, r1, (size_t)(gates * H * H) * sizeof(float));
        memcpy(rv2->tensor.data, r2, (size_t)(gates * H * H) * sizeof(float));
    }
    static float yc[S * H], yf[S * H], y2[S * H];
    for (int run = 0; ok && run < 3; run++) {
        ok = recurrent_run(rc, x, NULL, yc, S * H) && recurrent_run(rf, x, rv1, yf, S * H);
        EXPECT(ok && memcmp(yc, yf, sizeof yc) == 0,
               "%s (lbr %lld) run %d: a constant R's kept packing gives other bits than a fed R",
               op, (long long)lbr, run);
        bool nonzero = false;
        for (int i = 0; i < S * H; i++)
            nonzero = nonzero || yc[i] != 0.0f;
        EXPECT(nonzero, "%s run %d: y is all zero", op, run);
    }
    const cg_step *st = ok ? &rc->main->steps[0] : NULL;
    EXPECT(!ok || st->state, "%s: no packing kept for a constant R", op);
    EXPECT(!ok || !rf->main->steps[0].state, "%s: a packing kept for a fed R", op);
    /* the fed runtime, R changed: the bits of a runtime built on r2 */
    ok = ok && recurrent_run(rf, x, rv2, yf, S * H) && recurrent_run(r2rt, x, NULL, y2, S * H);
    EXPECT(ok && memcmp(yf, y2, sizeof yf) == 0,
           "%s (lbr %lld): a fed R that changed gives other bits than a runtime built on it", op,
           (long long)lbr);
    EXPECT(!ok || memcmp(y2, yc, sizeof y2) != 0, "%s: r1 and r2 give the same y", op);
    cg_value_free(x);
    cg_value_free(rv1);
    cg_value_free(rv2);
    cg_runtime_free(rc);
    cg_runtime_free(rf);
    cg_runtime_free(r2rt);
    cg_model_free(mc);
    cg_model_free(mf);
    cg_model_free(m2);
}

/* The float32 recurrence split over threads (a step's hidden units in
 * ranges of whole gemv panels, rnn.c's rnn_seq): with 2 and 3 threads every
 * output has the bits of one thread at each vector level, and those agree
 * with the portable level's (OpenBLAS's sgemv) to float32 rounding.
 * Bidirectional, two batch rows of different sequence_lens, initial
 * states, peepholes and a clip, H = 256: two or more panels of 64 (AVX2)
 * and 128 (AVX-512) floats, so each step really splits. */
static void test_recurrent_threads(const char *op, int gates, int64_t lbr)
{
    enum { S = 5, B = 2, I = 16, H = 256, D = 2 };
    const bool lstm = gates == 4;
    int64_t xd[3] = {S, B, I}, wd[3] = {D, gates * H, I}, rd[3] = {D, gates * H, H};
    int64_t bd[2] = {D, 2 * gates * H}, sd[1] = {B}, hd[3] = {D, B, H}, pd[2] = {D, 3 * H};
    double *x = malloc(sizeof(double) * S * B * I), *w = malloc(sizeof(double) * D * 4 * H * I);
    double *r = malloc(sizeof(double) * D * 4 * H * H), *bias = malloc(sizeof(double) * D * 8 * H);
    double *h0 = malloc(sizeof(double) * D * B * H), *c0 = malloc(sizeof(double) * D * B * H);
    double *p = malloc(sizeof(double) * D * 3 * H), sl[B] = {S, 3};
    if (!x || !w || !r || !bias || !h0 || !c0 || !p)
        test_fatal("out of memory");
    for (int i = 0; i < S * B * I; i++)
        x[i] = sin(0.7 * i) * 0.8;
    for (int i = 0; i < D * gates * H * I; i++)
        w[i] = cos(0.37 * i) * 0.2;
    for (int i = 0; i < D * gates * H * H; i++)
        r[i] = sin(0.91 * i + 0.2) * 0.06;
    for (int i = 0; i < D * 2 * gates * H; i++)
        bias[i] = cos(0.13 * i) * 0.1;
    for (int i = 0; i < D * B * H; i++) {
        h0[i] = sin(0.29 * i) * 0.5;
        c0[i] = cos(0.41 * i) * 0.5;
    }
    for (int i = 0; i < D * 3 * H; i++)
        p[i] = sin(0.17 * i) * 0.3;
    test_case c = {op, 14, lstm ? 8 : 6, lstm ? 3 : 2, {NULL}, {{0}}, 0, NULL, 0};
    c.attrs[c.nattr++] = attr_int("hidden_size", H);
    c.attrs[c.nattr++] = attr_str("direction", "bidirectional");
    if (lbr >= 0)
        c.attrs[c.nattr++] = attr_int("linear_before_reset", lbr);
    if (lstm)
        c.attrs[c.nattr++] = attr_float("clip", 3.0f);
    c.in[0] = test_tensor(CG_DTYPE_FLOAT, 3, xd, x);
    c.in[1] = test_tensor(CG_DTYPE_FLOAT, 3, wd, w);
    c.in[2] = test_tensor(CG_DTYPE_FLOAT, 3, rd, r);
    c.in[3] = test_tensor(CG_DTYPE_FLOAT, 2, bd, bias);
    c.in[4] = test_tensor(CG_DTYPE_INT32, 1, sd, sl);
    c.in[5] = test_tensor(CG_DTYPE_FLOAT, 3, hd, h0);
    if (lstm) {
        c.in[6] = test_tensor(CG_DTYPE_FLOAT, 3, hd, c0);
        c.in[7] = test_tensor(CG_DTYPE_FLOAT, 2, pd, p);
    }
    const cg_simd levels[3] = {CG_SIMD_PORTABLE, CG_SIMD_AVX2, CG_SIMD_AVX512};
    const cg_simd best = cg_simd_resolve(CG_SIMD_AUTO);
    float *ref[3] = {NULL, NULL, NULL}; /* the portable level's outputs */
    int64_t refn[3] = {0, 0, 0};
    int compared = 0;
    for (int li = 0; li < 3 && levels[li] <= best; li++) {
        float *one[3] = {NULL, NULL, NULL};
        for (int th = 1; th <= 3; th++) {
            if (levels[li] == CG_SIMD_PORTABLE && th > 1)
                break;
            cg_runtime_options opt;
            cg_runtime_options_default(&opt);
            opt.simd = levels[li];
            opt.threads = th;
            cg_named_value *outs = NULL;
            size_t nouts = 0;
            cg_error err;
            cg_status st = test_case_run_with(&c, &opt, 2, &outs, &nouts, &err);
            EXPECT(st == CG_OK && nouts == c.nout, "%s (lbr %lld) at %s, %d thread(s): %s", op,
                   (long long)lbr, cg_simd_name(levels[li]), th, err.msg);
            if (st != CG_OK)
                continue;
            for (size_t o = 0; o < nouts; o++) {
                const cg_tensor *t = &outs[o].value->tensor;
                const float *v = t->data;
                if (th == 1) {
                    one[o] = malloc((size_t)t->numel * sizeof(float) + 1);
                    if (!one[o])
                        test_fatal("out of memory");
                    memcpy(one[o], v, (size_t)t->numel * sizeof(float));
                    if (levels[li] == CG_SIMD_PORTABLE) {
                        ref[o] = one[o];
                        refn[o] = t->numel;
                        one[o] = NULL;
                        continue;
                    }
                    double worst = 0, big = 0;
                    for (int64_t i = 0; ref[o] && i < t->numel && i < refn[o]; i++) {
                        worst = fmax(worst, fabs((double)v[i] - ref[o][i]));
                        big = fmax(big, fabs((double)ref[o][i]));
                    }
                    EXPECT(ref[o] && refn[o] == t->numel && worst <= 1e-5 && big > 0.05,
                           "%s (lbr %lld) output %zu at %s: %g from the portable level's "
                           "(largest %g)", op, (long long)lbr, o, cg_simd_name(levels[li]),
                           worst, big);
                } else {
                    EXPECT(one[o] && memcmp(one[o], v, (size_t)t->numel * sizeof(float)) == 0,
                           "%s (lbr %lld) output %zu at %s: %d threads give other bits than one",
                           op, (long long)lbr, o, cg_simd_name(levels[li]), th);
                    compared++;
                }
            }
            cg_runtime_free_outputs(outs, nouts);
        }
        for (int o = 0; o < 3; o++)
            free(one[o]);
    }
    /* the machines CI runs on have AVX2 at least: the split was compared */
    EXPECT(best < CG_SIMD_AVX2 || compared >= 2 * (int)c.nout,
           "%s: only %d threaded outputs compared", op, compared);
    for (int o = 0; o < 3; o++)
        free(ref[o]);
    test_case_free(&c);
    free(x);
    free(w);
    free(r);
    free(bias);
    free(h0);
    free(c0);
    free(p);
}

static void test_resize(void)
{
    /* nearest on int64 copies exactly */
    int64_t xd[2] = {1, 2}, sd[1] = {2};
    double sizes[2] = {1, 4};
    test_case n = {"Resize", 13, 4, 1, {NULL}, {{0}}, 0, NULL, 0};
    n.in[0] = test_tensor(CG_DTYPE_INT64, 2, xd, NULL);
    ((int64_t *)n.in[0]->data)[0] = INT64_MAX - 1;
    ((int64_t *)n.in[0]->data)[1] = -7;
    n.in[3] = test_tensor(CG_DTYPE_INT64, 1, sd, sizes);
    cg_named_value *outs = NULL;
    size_t nouts = 0;
    cg_error err;
    cg_status st = test_case_run(&n, &outs, &nouts, &err);
    EXPECT(st == CG_OK, "Resize int64: %s", err.msg);
    if (st == CG_OK) {
        const int64_t *y = outs[0].value->tensor.data;
        EXPECT(outs[0].value->tensor.numel == 4 && y[0] == INT64_MAX - 1 && y[1] == INT64_MAX - 1 &&
                   y[2] == -7 && y[3] == -7,
               "int64 nearest resize not exact");
        cg_runtime_free_outputs(outs, nouts);
    }
    test_case_free(&n);

    /* neither scales nor sizes */
    test_case e = {"Resize", 13, 1, 1, {NULL}, {{0}}, 0, NULL, 0};
    e.in[0] = test_tensor(CG_DTYPE_FLOAT, 2, xd, NULL);
    test_case_expect_fail(&e, "scales", "Resize without scales/sizes");
    test_case_free(&e);

    /* an unknown mode */
    double sc[2] = {1, 2};
    test_case m = {"Resize", 13, 3, 1, {NULL}, {{0}}, 0, NULL, 0};
    m.attrs[m.nattr++] = attr_str("mode", "quadratic");
    m.in[0] = test_tensor(CG_DTYPE_FLOAT, 2, xd, NULL);
    m.in[2] = test_tensor(CG_DTYPE_FLOAT, 1, sd, sc);
    test_case_expect_fail(&m, "quadratic", "Resize bad mode");
    test_case_free(&m);
}

static void test_dft_roundtrip(void)
{
    int64_t xd[3] = {1, 7, 1};
    double x[7] = {1, -2, 3.5, 0.25, 9, -1, 4};
    test_case f = {"DFT", 17, 1, 1, {NULL}, {{0}}, 0, NULL, 0};
    f.in[0] = test_tensor(CG_DTYPE_DOUBLE, 3, xd, x);
    int64_t n1 = 0;
    double *spec = test_case_values(&f, 0, &n1, "DFT forward");
    test_case_free(&f);
    if (!spec)
        return;
    EXPECT(n1 == 14, "DFT output size %lld", (long long)n1);
    EXPECT(fabs(spec[0] - 14.75) < 1e-12 && fabs(spec[1]) < 1e-12, "DC term %g %g", spec[0], spec[1]);
    int64_t cd[3] = {1, 7, 2};
    test_case inv = {"DFT", 17, 1, 1, {NULL}, {{0}}, 0, NULL, 0};
    inv.attrs[inv.nattr++] = attr_int("inverse", 1);
    inv.in[0] = test_tensor(CG_DTYPE_DOUBLE, 3, cd, spec);
    int64_t n2 = 0;
    double *back = test_case_values(&inv, 0, &n2, "DFT inverse");
    if (back) {
        double worst = 0;
        for (int i = 0; i < 7; i++)
            worst = fmax(worst, fmax(fabs(back[2 * i] - x[i]), fabs(back[2 * i + 1])));
        EXPECT(worst < 1e-12, "DFT round trip error %g", worst);
    }
    free(spec);
    free(back);
    test_case_free(&inv);

    /* axis on the complex component axis is rejected */
    test_case bad = {"DFT", 17, 1, 1, {NULL}, {{0}}, 0, NULL, 0};
    bad.attrs[bad.nattr++] = attr_int("axis", 2);
    bad.in[0] = test_tensor(CG_DTYPE_FLOAT, 3, xd, x);
    test_case_expect_fail(&bad, "axis", "DFT axis on last dim");
    test_case_free(&bad);
}

static void test_det(void)
{
    int64_t d[3] = {2, 3, 3};
    double m[18] = {2, 0, 1, 1, 3, 2, 1, 1, 2, /* det = 6 */
                    1, 2, 3, 2, 4, 6, 0, 1, 1 /* singular */};
    test_case n = {"Det", 11, 1, 1, {NULL}, {{0}}, 0, NULL, 0};
    n.in[0] = test_tensor(CG_DTYPE_DOUBLE, 3, d, m);
    int64_t cnt = 0;
    double *v = test_case_values(&n, 0, &cnt, "Det");
    EXPECT(v && cnt == 2 && fabs(v[0] - 6.0) < 1e-12 && v[1] == 0.0, "det values %g %g",
           v ? v[0] : NAN, v ? v[1] : NAN);
    free(v);
    test_case_free(&n);
}

/* Hann/Hamming/Blackman at sizes 0, 1 and 2, periodic and symmetric:
 * the values ONNX Runtime 1.22 gives (float32), within float rounding. */
static void test_windows(void)
{
    static const struct {
        const char *op;
        double a0, a1, a2;
    } w[3] = {{"HannWindow", 0.5, 0.5, 0.0},
              {"HammingWindow", 25.0 / 46.0, 21.0 / 46.0, 0.0},
              {"BlackmanWindow", 0.42, 0.5, 0.08}};
    for (int k = 0; k < 3; k++) {
        double edge = w[k].a0 - w[k].a1 + w[k].a2, mid = w[k].a0 + w[k].a1 + w[k].a2;
        for (int periodic = 0; periodic <= 1; periodic++) {
            for (int64_t size = 0; size <= 2; size++) {
                /* size 1: periodic N = 1 gives the edge value, symmetric N = 0
                 * NaN; size 2: periodic edge then the middle, symmetric N = 1
                 * the edge twice */
                double want[2] = {size == 1 && !periodic ? NAN : edge, periodic ? mid : edge};
                double sz = (double)size;
                test_case n = {w[k].op, 17, 1, 1, {NULL}, {{0}}, 0, NULL, 0};
                n.attrs[n.nattr++] = attr_int("periodic", periodic);
                n.in[0] = test_tensor(CG_DTYPE_INT64, 0, NULL, &sz);
                int64_t cnt = -1;
                double *v = test_case_values(&n, 0, &cnt, w[k].op);
                EXPECT(v && cnt == size, "%s periodic=%d size %lld: %lld values", w[k].op,
                       periodic, (long long)size, (long long)cnt);
                for (int64_t i = 0; v && i < cnt && i < 2; i++) {
                    bool ok = isnan(want[i]) ? isnan(v[i]) : fabs(v[i] - want[i]) < 1e-6;
                    EXPECT(ok, "%s periodic=%d size %lld: y[%lld] = %g, ONNX gives %g", w[k].op,
                           periodic, (long long)size, (long long)i, v[i], want[i]);
                }
                free(v);
                test_case_free(&n);
            }
        }
    }
}

int main(void)
{
    test_nms_errors();
    test_nms_matches_naive();
    test_roialign_errors();
    test_einsum();
    test_recurrent_directions("RNN", 1);
    test_recurrent_directions("GRU", 3);
    test_recurrent_directions("LSTM", 4);
    test_recurrent_packing_kept("LSTM", 4, -1);
    test_recurrent_packing_kept("GRU", 3, 0);
    test_recurrent_packing_kept("GRU", 3, 1);
    test_recurrent_threads("RNN", 1, -1);
    test_recurrent_threads("GRU", 3, 0);
    test_recurrent_threads("GRU", 3, 1);
    test_recurrent_threads("LSTM", 4, -1);
    test_recurrent_packing_kept("RNN", 1, -1);
    test_resize();
    test_dft_roundtrip();
    test_det();
    test_windows();
    return test_done("test_ops_misc");
}
