/*
 * The float32 matrix products (gemm.c) on every path against a double
 * product: MatMul by a constant B (packed once at init for the vector
 * levels' GEMM, packgemm.c, A's batches stacked), by a computed B (packed
 * per matrix; broadcast and batched), with few rows (OpenBLAS), and Gemm
 * with transA/transB, alpha, beta and every C broadcast, B constant or not.
 * Column counts leave the last panel partly empty and row counts the last
 * tile. Each case runs at every vector level the CPU has, with one and
 * three threads: the results must agree bit for bit, and each value must
 * be within the float32 rounding bound of a K-term sum,
 *
 *     |got - want| <= (K + 4) * 2^-24 * (|alpha| sum_q |a_iq b_qj| + |beta c_ij|),
 *
 * the bound any summation order meets (Higham, Accuracy and Stability of
 * Numerical Algorithms, 2nd ed., section 3.1). At a vector level, a
 * constant B's packing must be made at init and shared by a second
 * runtime of the same model; a constant B whose columns fill the kernel's
 * panels is read in place instead (no packing, no aligned copy of a
 * misaligned payload), to the same bits as the same B packed.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "convgate/model.h"
#include "convgate/runtime.h"
#include "run/cpu.h"
#include "run/initshare.h"
#include "testlib.h"

static double pseudo(uint64_t *s)
{
    *s = *s * 6364136223846793005ull + 1442695040888963407ull;
    return (double)(*s >> 11) * 0x1.0p-52 - 1.0;
}

static float *fill(int64_t n, uint64_t seed)
{
    float *v = malloc((size_t)n * sizeof *v);
    if (!v)
        test_fatal("out of memory");
    for (int64_t i = 0; i < n; i++)
        v[i] = (float)pseudo(&seed);
    return v;
}

static int64_t prod(int rank, const int64_t *d)
{
    int64_t n = 1;
    for (int i = 0; i < rank; i++)
        n *= d[i];
    return n;
}

typedef struct mm_case {
    const char *what;
    const char *op;        /* "MatMul" or "Gemm" */
    int ar, br, cr;        /* ranks; cr < 0: no C */
    int64_t ad[3], bd[3], cd[2];
    bool b_const;          /* B an initializer */
    bool ta, tb;           /* Gemm */
    float alpha, beta;     /* Gemm */
} mm_case;

/* The model of c; a, b, cv are its operands (b an initializer or an input).
 * braw: B's bytes as raw_data (read in place, as a model file's), else
 * NULL (float_data). */
static cg_model *build(const mm_case *c, const float *b, const void *braw, const float *cv)
{
    bool has_c = c->cr >= 0;
    cg_model *m = test_model_graph(13, 2, c->b_const ? "a" : "a,b", "y");
    m->graph->inputs[0].type = test_type(m, CG_DTYPE_FLOAT, c->ar, c->ad);
    if (c->b_const && braw)
        test_graph_init_raw(m, m->graph, "b", CG_DTYPE_FLOAT, c->br, c->bd, braw,
                            (size_t)prod(c->br, c->bd) * sizeof(float));
    else if (c->b_const)
        test_graph_init_f32(m, m->graph, "b", c->br, c->bd, b);
    else
        m->graph->inputs[1].type = test_type(m, CG_DTYPE_FLOAT, c->br, c->bd);
    if (has_c)
        test_graph_init_f32(m, m->graph, "c", c->cr, c->cd, cv);
    cg_node *n = test_node(m, m->graph, c->op, "mm", has_c ? "a,b,c" : "a,b", "y");
    if (strcmp(c->op, "Gemm") == 0) {
        test_node_add_attr(n, attr_int("transA", c->ta));
        test_node_add_attr(n, attr_int("transB", c->tb));
        test_node_add_attr(n, attr_float("alpha", c->alpha));
        test_node_add_attr(n, attr_float("beta", c->beta));
    }
    return m;
}

static cg_value *value_f32(int rank, const int64_t *dims, const float *v)
{
    int64_t n = prod(rank, dims);
    double *d = malloc((size_t)(n ? n : 1) * sizeof *d);
    if (!d)
        test_fatal("out of memory");
    for (int64_t i = 0; i < n; i++)
        d[i] = v[i];
    cg_value *val = test_value(CG_DTYPE_FLOAT, rank, dims, d);
    free(d);
    return val;
}

/* Runs m twice on one runtime (the second run uses the plan and the
 * packing); the output copied out (NULL on failure), *count its size. */
static float *run(const cg_model *m, const mm_case *c, const float *a, const float *b, int threads,
                  cg_simd simd, int64_t *count)
{
    cg_runtime_options o;
    cg_runtime_options_default(&o);
    o.threads = threads;
    o.simd = simd;
    cg_runtime *rt = NULL;
    cg_error err;
    cg_named_value feeds[2] = {{"a", value_f32(c->ar, c->ad, a)}, {"b", NULL}};
    size_t nfeed = 1;
    if (!c->b_const)
        feeds[nfeed++].value = value_f32(c->br, c->bd, b);
    float *y = NULL;
    cg_status st = cg_runtime_init(m, &o, &rt, &err);
    EXPECT(st == CG_OK, "%s: init: %s", c->what, err.msg);
    for (int r = 0; r < 2 && st == CG_OK; r++) {
        cg_named_value *outs = NULL;
        size_t n = 0;
        st = cg_runtime_run(rt, feeds, nfeed, &outs, &n, &err);
        EXPECT(st == CG_OK && n == 1, "%s: run: %s", c->what, err.msg);
        if (st == CG_OK && n == 1 && r == 1) {
            const cg_tensor *t = &outs[0].value->tensor;
            *count = t->numel;
            y = malloc((size_t)(t->numel ? t->numel : 1) * sizeof *y);
            if (y)
                memcpy(y, t->data, (size_t)t->numel * sizeof *y);
        }
        cg_runtime_free_outputs(outs, n);
    }
    cg_runtime_free(rt);
    for (size_t i = 0; i < nfeed; i++)
        cg_value_free(feeds[i].value);
    return y;
}

/* The product in double, and the rounding bound of each element. */
static void reference(const mm_case *c, const float *a, const float *b, const float *cv,
                      double *want, double *bound, int64_t *count)
{
    bool gemm = strcmp(c->op, "Gemm") == 0;
    int64_t m = gemm ? (c->ta ? c->ad[1] : c->ad[0]) : c->ad[c->ar - 2];
    int64_t kk = gemm ? (c->ta ? c->ad[0] : c->ad[1]) : c->ad[c->ar - 1];
    int64_t n = gemm ? (c->tb ? c->bd[0] : c->bd[1]) : c->bd[c->br - 1];
    int64_t abatch = c->ar > 2 ? prod(c->ar - 2, c->ad) : 1;
    int64_t bbatch = c->br > 2 ? prod(c->br - 2, c->bd) : 1;
    int64_t batch = abatch > bbatch ? abatch : bbatch;
    double alpha = gemm ? c->alpha : 1.0, beta = gemm ? c->beta : 0.0;
    for (int64_t bi = 0; bi < batch; bi++) {
        const float *ab = a + (abatch == 1 ? 0 : bi) * m * kk;
        const float *bb = b + (bbatch == 1 ? 0 : bi) * kk * n;
        for (int64_t i = 0; i < m; i++)
            for (int64_t j = 0; j < n; j++) {
                double s = 0, mag = 0;
                for (int64_t q = 0; q < kk; q++) {
                    double av = c->ta ? ab[q * m + i] : ab[i * kk + q];
                    double bv = c->tb ? bb[j * kk + q] : bb[q * n + j];
                    s += av * bv;
                    mag += fabs(av * bv);
                }
                double cij = 0;
                if (c->cr >= 0) {
                    int64_t cm = c->cr == 2 ? c->cd[0] : 1;
                    int64_t cn = c->cr == 2 ? c->cd[1] : c->cr == 1 ? c->cd[0] : 1;
                    cij = cv[(cm == 1 ? 0 : i) * cn + (cn == 1 ? 0 : j)];
                }
                int64_t e = (bi * m + i) * n + j;
                want[e] = alpha * s + beta * cij;
                bound[e] = (double)(kk + 4) * 0x1.0p-24 * (fabs(alpha) * mag + fabs(beta * cij)) +
                           1e-30;
            }
    }
    *count = batch * m * n;
}

static void run_case(const mm_case *c)
{
    int64_t an = prod(c->ar, c->ad), bn = prod(c->br, c->bd);
    int64_t cn = c->cr >= 0 ? prod(c->cr, c->cd) : 0;
    float *a = fill(an, 101), *b = fill(bn, 202), *cv = cn ? fill(cn, 303) : NULL;
    cg_model *m = build(c, b, NULL, cv);
    int64_t cap = 1 << 20, want_n = 0;
    double *want = malloc((size_t)cap * sizeof *want), *bound = malloc((size_t)cap * sizeof *bound);
    if (!want || !bound)
        test_fatal("out of memory");
    reference(c, a, b, cv, want, bound, &want_n);
    cg_simd best = cg_simd_detect();
    const cg_simd levels[3] = {CG_SIMD_PORTABLE, CG_SIMD_AVX2, CG_SIMD_AVX512};
    for (int li = 0; li < 3; li++) {
        if (levels[li] > best)
            continue;
        int64_t n1 = -1, n3 = -1;
        float *y1 = run(m, c, a, b, 1, levels[li], &n1);
        float *y3 = run(m, c, a, b, 3, levels[li], &n3);
        const char *lv = cg_simd_name(levels[li]);
        if (y1 && y3) {
            EXPECT(n1 == want_n, "%s (%s): %lld values, want %lld", c->what, lv, (long long)n1,
                   (long long)want_n);
            EXPECT(n1 == n3 && memcmp(y1, y3, (size_t)n1 * sizeof *y1) == 0,
                   "%s (%s): 3 threads differ from 1", c->what, lv);
            double worst = 0;
            int64_t at = 0;
            for (int64_t i = 0; i < n1 && i < want_n; i++) {
                double r = fabs((double)y1[i] - want[i]) / bound[i];
                if (!(r <= worst)) {
                    worst = r;
                    at = i;
                }
            }
            EXPECT(worst <= 1.0, "%s (%s): %g times the rounding bound at %lld (got %.9g, want %.9g)",
                   c->what, lv, worst, (long long)at, n1 > at ? y1[at] : 0.0f, want[at]);
        }
        free(y1);
        free(y3);
    }
    cg_model_free(m);
    free(a);
    free(b);
    free(cv);
    free(want);
    free(bound);
}

/* A constant B's packing is made at init, at a vector level, and a second
 * runtime of the same model finds it instead of packing again. */
static void test_packed_at_init(void)
{
    if (cg_simd_detect() < CG_SIMD_AVX2) {
        printf("  (packing at init: no vector level on this CPU)\n");
        return;
    }
    const mm_case c = {"init", "MatMul", 2, 2, -1, {40, 64}, {64, 100}, {0}, true,
                       false, false, 1, 0};
    float *b = fill(64 * 100, 7);
    /* raw bytes, as a model file holds them (float_data is decoded per
     * runtime, so two runtimes would not read the same B) */
    cg_model *m = test_model_graph(13, 2, "a", "y");
    m->graph->inputs[0].type = test_type(m, CG_DTYPE_FLOAT, c.ar, c.ad);
    test_graph_init_raw(m, m->graph, "b", CG_DTYPE_FLOAT, c.br, c.bd, b,
                        64 * 100 * sizeof(float));
    test_node(m, m->graph, "MatMul", "mm", "a,b", "y");
    size_t before = cg_shared_live();
    cg_runtime_options o;
    cg_runtime_options_default(&o);
    o.threads = 1;
    cg_runtime *r1 = NULL, *r2 = NULL;
    cg_error err;
    EXPECT(cg_runtime_init(m, &o, &r1, &err) == CG_OK, "init: %s", err.msg);
    size_t after1 = cg_shared_live();
    EXPECT(after1 == before + 1, "B packed at init: %zu shared buffers, want %zu", after1,
           before + 1);
    EXPECT(cg_runtime_init(m, &o, &r2, &err) == CG_OK, "init: %s", err.msg);
    EXPECT(cg_shared_live() == after1, "a second runtime shares the packing: %zu buffers",
           cg_shared_live());
    cg_runtime_free(r1);
    cg_runtime_free(r2);
    EXPECT(cg_shared_live() == before, "freed with the last runtime: %zu buffers",
           cg_shared_live());
    cg_model_free(m);
    free(b);
}

/* A misaligned constant B (raw bytes at an odd offset, as exporters leave
 * them) is packed from the model's bytes at init: its aligned copy is never
 * made, and the product is the same bits as with an aligned B. MatMul's B,
 * or Gemm's with transB (stored N x K). */
static void test_misaligned_b_not_copied(bool tb)
{
    if (cg_simd_detect() < CG_SIMD_AVX2) {
        printf("  (misaligned B: no vector level on this CPU)\n");
        return;
    }
    enum { K = 96, N = 196, M = 30 }; /* N fills no kernel's panels: B is packed */
    float *b = fill(K * N, 21), *a = fill(M * K, 22);
    static uint8_t odd[1 + K * N * sizeof(float)];
    memcpy(odd + 1, b, K * N * sizeof(float));
    const int64_t ad[2] = {M, K}, bd[2] = {tb ? N : K, tb ? K : N};
    float *y[2] = {NULL, NULL};
    size_t filled[2] = {0, 0};
    for (int v = 0; v < 2; v++) {
        cg_model *m = test_model_graph(13, 2, "a", "y");
        m->graph->inputs[0].type = test_type(m, CG_DTYPE_FLOAT, 2, ad);
        test_graph_init_raw(m, m->graph, "b", CG_DTYPE_FLOAT, 2, bd, v ? (void *)(odd + 1) : b,
                            K * N * sizeof(float));
        cg_node *node = test_node(m, m->graph, tb ? "Gemm" : "MatMul", "mm", "a,b", "y");
        if (tb)
            test_node_add_attr(node, attr_int("transB", 1));
        const mm_case c = {"misaligned", tb ? "Gemm" : "MatMul", 2, 2, -1, {M, K},
                           {bd[0], bd[1]}, {0}, true, false, tb, 1, 0};
        size_t before = cg_shared_filled_bytes();
        int64_t n = 0;
        y[v] = run(m, &c, a, NULL, 1, CG_SIMD_AUTO, &n);
        /* run() freed its runtime; the filled bytes it left are gone, so
         * look while one lives */
        cg_runtime_options o;
        cg_runtime_options_default(&o);
        o.threads = 1;
        cg_runtime *rt = NULL;
        cg_error err;
        cg_value *av = value_f32(2, ad, a);
        cg_named_value feed = {"a", av}, *outs = NULL;
        size_t nouts = 0;
        if (cg_runtime_init(m, &o, &rt, &err) == CG_OK &&
            cg_runtime_run(rt, &feed, 1, &outs, &nouts, &err) == CG_OK)
            filled[v] = cg_shared_filled_bytes() - before;
        cg_runtime_free_outputs(outs, nouts);
        cg_runtime_free(rt);
        cg_value_free(av);
        cg_model_free(m);
    }
    EXPECT(y[0] && y[1] && memcmp(y[0], y[1], sizeof(float) * M * N) == 0,
           "%s: a misaligned B gives the same bits as an aligned one", tb ? "Gemm" : "MatMul");
    /* the packing alone (panels of B's columns), no copy of B beside it */
    EXPECT(filled[1] == filled[0] && filled[1] > 0,
           "%s: misaligned B: %zu bytes filled, aligned B: %zu (a copy of B is %zu)",
           tb ? "Gemm" : "MatMul", filled[1], filled[0], (size_t)(K * N * sizeof(float)));
    free(y[0]);
    free(y[1]);
    free(a);
    free(b);
}

/* A constant B whose N is a multiple of the kernel's nr is read where it
 * lies: neither init nor the first two runs fill a shared buffer (no
 * packing, and a misaligned payload gets no aligned copy either); the third
 * run packs it. Every run's product is the same bits as with the same B
 * computed (an input, packed per run for the same kernel: at least 2 * mr
 * rows), at every vector level and thread count; rows not a multiple of any
 * mr, K past one block, A's batches stacked, and Gemm with alpha, beta and
 * C. */
static void test_b_in_place(void)
{
    if (cg_simd_detect() < CG_SIMD_AVX2) {
        printf("  (B in place: no vector level on this CPU)\n");
        return;
    }
    /* N = 192: panels of 64 (AVX-512) or 32 (AVX2), none partly empty */
    const mm_case cases[] = {
        {"in place, batches stacked", "MatMul", 3, 2, -1, {2, 37, 600}, {600, 192}, {0}, true,
         false, false, 1, 0},
        {"in place, 13 rows", "MatMul", 2, 2, -1, {13, 70}, {70, 192}, {0}, true, false, false,
         1, 0},
        {"in place, Gemm", "Gemm", 2, 2, 1, {29, 300}, {300, 192}, {192}, true, false, false,
         0.5f, 2.0f},
    };
    const cg_simd levels[2] = {CG_SIMD_AVX2, CG_SIMD_AVX512};
    for (size_t ci = 0; ci < sizeof cases / sizeof cases[0]; ci++) {
        const mm_case *c = &cases[ci];
        mm_case computed = *c;
        computed.b_const = false;
        int64_t an = prod(c->ar, c->ad), bn = prod(c->br, c->bd);
        int64_t cn = c->cr >= 0 ? prod(c->cr, c->cd) : 0;
        float *a = fill(an, 41), *b = fill(bn, 42), *cv = cn ? fill(cn, 43) : NULL;
        uint8_t *odd = malloc((size_t)bn * sizeof(float) + 3);
        if (!odd)
            test_fatal("out of memory");
        memcpy(odd + 3, b, (size_t)bn * sizeof(float));
        cg_model *mc = build(&computed, b, NULL, cv);
        cg_model *mb[2] = {build(c, b, b, cv), build(c, b, odd + 3, cv)};
        for (int li = 0; li < 2; li++) {
            if (levels[li] > cg_simd_detect())
                continue;
            const char *lv = cg_simd_name(levels[li]);
            for (int threads = 1; threads <= 3; threads += 2) {
                int64_t nw = -1;
                float *want = run(mc, &computed, a, b, threads, levels[li], &nw);
                for (int v = 0; v < 2; v++) {
                    const char *how = v ? "misaligned" : "aligned";
                    size_t filled = cg_shared_filled_bytes();
                    cg_runtime_options o;
                    cg_runtime_options_default(&o);
                    o.threads = threads;
                    o.simd = levels[li];
                    cg_runtime *rt = NULL;
                    cg_error err;
                    cg_value *av = value_f32(c->ar, c->ad, a);
                    cg_named_value feed = {"a", av};
                    EXPECT(cg_runtime_init(mb[v], &o, &rt, &err) == CG_OK, "%s: %s", c->what,
                           err.msg);
                    /* runs 1 and 2 read B in place, run 3 packs it, 4 reads
                     * the packing (gemm.c, MM_IN_PLACE_RUNS) */
                    for (int r = 1; r <= 4 && rt; r++) {
                        cg_named_value *outs = NULL;
                        size_t nouts = 0;
                        bool ok = cg_runtime_run(rt, &feed, 1, &outs, &nouts, &err) == CG_OK &&
                                  nouts == 1;
                        EXPECT(ok, "%s: %s", c->what, err.msg);
                        size_t now = cg_shared_filled_bytes();
                        EXPECT(r < 3 ? now == filled : now > filled,
                               "%s (%s, %s B), run %d: %zu bytes filled (B packed or copied)",
                               c->what, lv, how, r, now - filled);
                        const cg_tensor *t = ok ? &outs[0].value->tensor : NULL;
                        EXPECT(t && want && t->numel == nw &&
                                   memcmp(t->data, want, (size_t)nw * sizeof(float)) == 0,
                               "%s (%s, %d threads, %s B), run %d: differs from B packed",
                               c->what, lv, threads, how, r);
                        cg_runtime_free_outputs(outs, nouts);
                    }
                    cg_runtime_free(rt);
                    cg_value_free(av);
                }
                free(want);
            }
        }
        cg_model_free(mc);
        cg_model_free(mb[0]);
        cg_model_free(mb[1]);
        free(odd);
        free(a);
        free(b);
        free(cv);
    }
}

int main(void)
{
    const mm_case cases[] = {
        /* what, op, ar, br, cr, ad, bd, cd, b_const, ta, tb, alpha, beta */
        {"constant B, batches stacked", "MatMul", 3, 2, -1, {2, 45, 70}, {70, 100}, {0}, true,
         false, false, 1, 0},
        {"constant B, K past one block", "MatMul", 2, 2, -1, {61, 600}, {600, 37}, {0}, true,
         false, false, 1, 0},
        {"constant B, one row", "MatMul", 2, 2, -1, {1, 96}, {96, 130}, {0}, true, false, false,
         1, 0},
        {"constant B in place, one row", "MatMul", 2, 2, -1, {1, 96}, {96, 192}, {0}, true,
         false, false, 1, 0},
        {"computed B", "MatMul", 2, 2, -1, {50, 33}, {33, 70}, {0}, false, false, false, 1, 0},
        {"computed B, batched", "MatMul", 3, 3, -1, {3, 40, 64}, {3, 64, 30}, {0}, false, false,
         false, 1, 0},
        {"computed B broadcast", "MatMul", 3, 2, -1, {4, 29, 17}, {17, 49}, {0}, false, false,
         false, 1, 0},
        {"computed B, few rows", "MatMul", 2, 2, -1, {5, 64}, {64, 48}, {0}, false, false, false,
         1, 0},
        {"Gemm transB, C row", "Gemm", 2, 2, 1, {37, 80}, {90, 80}, {90}, true, false, true,
         1, 1},
        {"Gemm transA, C column, alpha beta", "Gemm", 2, 2, 2, {80, 37}, {80, 90}, {37, 1},
         true, true, false, 0.5f, 2.0f},
        {"Gemm both transposed, full C", "Gemm", 2, 2, 2, {64, 33}, {50, 64}, {33, 50}, false,
         true, true, -1.5f, 0.25f},
        {"Gemm computed B, no C", "Gemm", 2, 2, -1, {70, 45}, {45, 66}, {0}, false, false, false,
         1, 0},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        run_case(&cases[i]);
    test_packed_at_init();
    test_misaligned_b_not_copied(false);
    test_misaligned_b_not_copied(true);
    test_b_in_place();
    return test_done("test_matmul_paths");
}
