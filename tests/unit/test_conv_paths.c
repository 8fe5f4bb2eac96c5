/*
 * The convolution code paths against a naive double-precision convolution:
 * the convolution GEMM (packgemm.c: pointwise, padded stride 1, strided,
 * dilated, grouped, 1-D and 3-D windows, channel counts that do not fill a
 * panel, positions that do not fill a tile), the depthwise planes (strides
 * 1, 2 and 3, 3x3 and 5x5, a multiplier of 2, planes at most 8 wide), the position-tiled
 * pointwise kernel (planes of two tiles and more; cg_pg_pw_run), the
 * row-tiled path of few taps (conv.c, conv_rows: first convolutions at
 * stride 2, rows of vectors over taps at any offsets)
 * and ConvInteger (exact:
 * equal to the integer reference, uint8 and int8 x and W, scalar and
 * per-channel zero points; the 8-bit GEMM at the AVX-512 level when the
 * CPU has VNNI, the float GEMM elsewhere). Every case runs at each vector
 * level the CPU has (portable, AVX2, AVX-512) and with one and three threads, in
 * float32 and in float64 (the float64 mode's own convolution GEMM at the
 * vector levels, within 1e-13 of a long double reference); the
 * three-thread result must equal the one-thread result bit for bit (work is
 * split by output rows and channels only), and the shapes are big enough
 * that the threads really split the work. An elementwise op over a big
 * tensor checks the same for the elementwise driver, and activations fused
 * into a convolution must give the same bits as the unfused graph. Under
 * fp16 sums (the F16 delegates' accumulation and its float64 floor) the
 * same windows, MatMul and Gemm give the scalar chain's bits per output.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "convgate/model.h"
#include "convgate/runtime.h"
#include "convgate/tensor_io.h"
#include "run/cpu.h"
#include "run/initshare.h"
#include "testlib.h"

static double pseudo(uint64_t *s)
{
    *s = *s * 6364136223846793005ull + 1442695040888963407ull;
    return (double)(*s >> 11) * 0x1.0p-52 - 1.0;
}

static cg_tensor *make(cg_dtype dt, int rank, const int64_t *dims, uint64_t seed, bool small_ints)
{
    cg_tensor *t = test_tensor(dt, rank, dims, NULL);
    for (int64_t i = 0; i < t->numel; i++) {
        double v = pseudo(&seed);
        cg_tensor_set_f64(t, i, small_ints ? floor((v + 1.0) * 127.99) : v);
    }
    return t;
}

/* Runs a one-node model on inputs in[0..nin) (NULL: omitted) with these
 * runtime options, twice (the second run uses the memory plan and the
 * packed weights); returns output 0 (caller frees with
 * cg_runtime_free_outputs) or NULL. */
static cg_named_value *run_with(const char *op, cg_tensor **in, size_t nin, cg_attr *attrs,
                                size_t nattr, const cg_runtime_options *opt, size_t *nouts)
{
    test_case c;
    memset(&c, 0, sizeof c);
    c.op = op;
    c.opset = 17;
    c.nin = nin;
    c.nout = 1;
    for (size_t i = 0; i < nin; i++)
        c.in[i] = in[i]; /* borrowed: no test_case_free */
    for (size_t i = 0; i < nattr; i++)
        c.attrs[i] = attrs[i];
    c.nattr = nattr;
    cg_named_value *outs = NULL;
    cg_error err;
    cg_status st = test_case_run_with(&c, opt, 2, &outs, nouts, &err);
    EXPECT(st == CG_OK, "%s: %s", op, err.msg);
    return st == CG_OK ? outs : NULL;
}

static cg_named_value *run_one(const char *op, cg_tensor **in, size_t nin, cg_attr *attrs,
                               size_t nattr, int threads, cg_simd simd, size_t *nouts)
{
    cg_runtime_options opt;
    cg_runtime_options_default(&opt);
    opt.threads = threads;
    opt.simd = simd;
    return run_with(op, in, nin, attrs, nattr, &opt, nouts);
}

typedef struct conv_spec {
    const char *what;
    int nsp;
    int64_t n, c, m, group;
    int64_t in[3], k[3], s[3], d[3], p0[3], p1[3];
} conv_spec;

/* The spec's output dims (od), and its output, input and kernel element
 * counts per plane. */
static void conv_dims(const conv_spec *cs, int64_t *od, int64_t *on, int64_t *in_n, int64_t *kn)
{
    *on = *in_n = *kn = 1;
    for (int d = 0; d < cs->nsp; d++) {
        od[d] = (cs->in[d] + cs->p0[d] + cs->p1[d] - ((cs->k[d] - 1) * cs->d[d] + 1)) / cs->s[d] + 1;
        *on *= od[d];
        *in_n *= cs->in[d];
        *kn *= cs->k[d];
    }
}

/* Where output position p (of od) reads kernel tap q in its input plane;
 * false when that tap lies in the padding. */
static bool conv_tap(const conv_spec *cs, const int64_t *od, int64_t p, int64_t q, int64_t *xi)
{
    int64_t o[3] = {0}, kk[3] = {0}, r = p, rr = q, at = 0;
    for (int d = cs->nsp - 1; d >= 0; d--) {
        o[d] = r % od[d];
        r /= od[d];
        kk[d] = rr % cs->k[d];
        rr /= cs->k[d];
    }
    for (int d = 0; d < cs->nsp; d++) {
        int64_t i = o[d] * cs->s[d] - cs->p0[d] + kk[d] * cs->d[d];
        if (i < 0 || i >= cs->in[d])
            return false;
        at = at * cs->in[d] + i;
    }
    *xi = at;
    return true;
}

/* Naive conv, each sum in long double and then + bias: out dims are
 * written to od. */
static double *conv_ref(const conv_spec *cs, const cg_tensor *x, const cg_tensor *w,
                        const cg_tensor *b, int64_t *od, int64_t *count)
{
    int64_t on, in_n, kn;
    conv_dims(cs, od, &on, &in_n, &kn);
    int64_t cg = cs->c / cs->group, mg = cs->m / cs->group;
    double *y = calloc((size_t)(cs->n * cs->m * on), sizeof *y);
    for (int64_t n = 0; n < cs->n; n++)
        for (int64_t m = 0; m < cs->m; m++) {
            int64_t gi = m / mg;
            for (int64_t p = 0; p < on; p++) {
                long double acc = 0.0L;
                for (int64_t c = 0; c < cg; c++)
                    for (int64_t q = 0; q < kn; q++) {
                        int64_t xi;
                        if (!conv_tap(cs, od, p, q, &xi))
                            continue;
                        acc += (long double)cg_tensor_get_f64(x, (n * cs->c + gi * cg + c) *
                                                                     in_n + xi) *
                               (long double)cg_tensor_get_f64(w, (m * cg + c) * kn + q);
                    }
                y[(n * cs->m + m) * on + p] = (double)(acc + (b ? cg_tensor_get_f64(b, m) : 0.0));
            }
        }
    *count = cs->n * cs->m * on;
    return y;
}

/* ConvInteger variants (run_conv's qmode bits): int8 x, int8 W, one W zero
 * point per output channel. */
enum { Q_X_INT8 = 1, Q_W_INT8 = 2, Q_W_PER_CHANNEL = 4 };

/* An 8-bit tensor of seeded values, uint8 or int8 (the same draws minus 128). */
static cg_tensor *make_q8(bool is_signed, int rank, const int64_t *dims, uint64_t seed)
{
    cg_tensor *t = make(is_signed ? CG_DTYPE_INT8 : CG_DTYPE_UINT8, rank, dims, seed, false);
    for (int64_t i = 0; i < t->numel; i++) {
        int v = (int)floor((pseudo(&seed) + 1.0) * 127.99);
        if (is_signed)
            ((int8_t *)t->data)[i] = (int8_t)(v - 128);
        else
            ((uint8_t *)t->data)[i] = (uint8_t)v;
    }
    return t;
}

/* A float Conv (float32, or float64 when f64: the float64 mode's
 * convolution GEMM at the vector levels, BLAS dgemm at the portable one),
 * or with integer a ConvInteger of qmode. */
static void run_conv(const conv_spec *cs, bool integer, int qmode, bool f64)
{
    cg_dtype ft = f64 ? CG_DTYPE_DOUBLE : CG_DTYPE_FLOAT;
    int64_t xd[5] = {cs->n, cs->c}, wd[5] = {cs->m, cs->c / cs->group}, bd[1] = {cs->m};
    for (int d = 0; d < cs->nsp; d++) {
        xd[2 + d] = cs->in[d];
        wd[2 + d] = cs->k[d];
    }
    cg_tensor *x = integer ? make_q8(qmode & Q_X_INT8, cs->nsp + 2, xd, 11)
                           : make(ft, cs->nsp + 2, xd, 11, false);
    cg_tensor *w = integer ? make_q8(qmode & Q_W_INT8, cs->nsp + 2, wd, 12)
                           : make(ft, cs->nsp + 2, wd, 12, false);
    cg_tensor *b = integer ? NULL : make(ft, 1, bd, 13, false);
    cg_tensor *xz = NULL, *wz = NULL;
    int64_t pads[6], strides[3], dil[3], one[1] = {1};
    for (int d = 0; d < cs->nsp; d++) {
        pads[d] = cs->p0[d];
        pads[cs->nsp + d] = cs->p1[d];
        strides[d] = cs->s[d];
        dil[d] = cs->d[d];
    }
    cg_attr attrs[4] = {attr_ints("pads", pads, (size_t)(2 * cs->nsp)),
                        attr_ints("strides", strides, (size_t)cs->nsp),
                        attr_ints("dilations", dil, (size_t)cs->nsp),
                        attr_int("group", cs->group)};
    double *want;
    int64_t od[3], count;
    cg_tensor *in[4];
    size_t nin;
    if (integer) {
        /* zero points inside the range, the weights' one per channel or
         * not: x's 131 (uint8) or -3 (int8), W's 117 or -11 (+ channel) */
        int64_t per[1] = {cs->m};
        xz = make(x->dtype, 0, one, 0, false);
        wz = make(w->dtype, (qmode & Q_W_PER_CHANNEL) ? 1 : 0, per, 0, false);
        double xzv = (qmode & Q_X_INT8) ? -3.0 : 131.0, wzv = (qmode & Q_W_INT8) ? -11.0 : 117.0;
        cg_tensor_set_f64(xz, 0, xzv);
        for (int64_t i = 0; i < wz->numel; i++)
            cg_tensor_set_f64(wz, i, wzv + (double)(i % 29));
        /* the reference on x - zx and w - zw */
        cg_tensor *xs = make(CG_DTYPE_DOUBLE, cs->nsp + 2, xd, 0, false);
        cg_tensor *ws = make(CG_DTYPE_DOUBLE, cs->nsp + 2, wd, 0, false);
        int64_t wper = w->numel / cs->m;
        for (int64_t i = 0; i < x->numel; i++)
            ((double *)xs->data)[i] = cg_tensor_get_f64(x, i) - xzv;
        for (int64_t i = 0; i < w->numel; i++)
            ((double *)ws->data)[i] = cg_tensor_get_f64(w, i) -
                                      cg_tensor_get_f64(wz, wz->numel == 1 ? 0 : i / wper);
        want = conv_ref(cs, xs, ws, NULL, od, &count);
        test_tensor_free(xs);
        test_tensor_free(ws);
        in[0] = x, in[1] = w, in[2] = xz, in[3] = wz;
        nin = 4;
    } else {
        want = conv_ref(cs, x, w, b, od, &count);
        in[0] = x, in[1] = w, in[2] = b;
        nin = 3;
    }
    cg_simd best = cg_simd_detect();
    const cg_simd levels[3] = {CG_SIMD_PORTABLE, CG_SIMD_AVX2, CG_SIMD_AVX512};
    for (int li = 0; li < 3; li++) {
        if (levels[li] > best)
            continue;
        size_t n1 = 0, n3 = 0;
        cg_named_value *o1 = run_one(integer ? "ConvInteger" : "Conv", in, nin, attrs, 4, 1,
                                     levels[li], &n1);
        cg_named_value *o3 = run_one(integer ? "ConvInteger" : "Conv", in, nin, attrs, 4, 3,
                                     levels[li], &n3);
        if (o1 && o3) {
            const cg_tensor *t1 = &o1[0].value->tensor, *t3 = &o3[0].value->tensor;
            EXPECT(t1->numel == count, "%s: %lld outputs, want %lld", cs->what,
                   (long long)t1->numel, (long long)count);
            EXPECT(t1->numel == t3->numel && memcmp(t1->data, t3->data, cg_tensor_bytes(t1)) == 0,
                   "%s%s (%s): 3 threads differ from 1", cs->what, f64 ? " float64" : "",
                   cg_simd_name(levels[li]));
            double worst = 0;
            int64_t at = 0;
            for (int64_t i = 0; i < count && i < t1->numel; i++) {
                double got = cg_tensor_get_f64(t1, i);
                double err = integer ? fabs(got - want[i])
                                     : fabs(got - want[i]) / (1.0 + fabs(want[i]));
                if (!(err <= worst)) {
                    worst = err;
                    at = i;
                }
            }
            /* float64: a sum of at most a few thousand products of
             * magnitude below 1 in double is within 1e-13 of the exact one */
            EXPECT(worst <= (integer ? 0.0 : f64 ? 1e-13 : 2e-5),
                   "%s%s (%s): off by %g at %lld (got %g, want %g)", cs->what,
                   f64 ? " float64" : "", cg_simd_name(levels[li]), worst, (long long)at,
                   cg_tensor_get_f64(t1, at), want[at]);
        }
        if (o1)
            cg_runtime_free_outputs(o1, n1);
        if (o3)
            cg_runtime_free_outputs(o3, n3);
    }
    free(want);
    test_tensor_free(x);
    test_tensor_free(w);
    test_tensor_free(b);
    test_tensor_free(xz);
    test_tensor_free(wz);
}

static cg_status observe_nothing(void *user, const cg_node *node, const char *name,
                                 const cg_value *value)
{
    (void)user, (void)node, (void)name, (void)value;
    return CG_OK;
}

/* Conv then an activation (Relu, Clip, LeakyRelu, HardSwish, or Sigmoid and
 * Mul as x * sigmoid(x)), or a residual Add ("Add": Add(r, conv); "AddRelu":
 * Add(conv, r) then Relu), fused into the convolution,
 * against the same graph run with an observer (which turns fusion off): the
 * outputs must be the same bits, for the GEMM and the depthwise path. */
enum { FUSE_GEMM, FUSE_DEPTHWISE, FUSE_POINTWISE, FUSE_ROWS };

static void test_fusion(const char *act, int path, int threads)
{
    bool depthwise = path == FUSE_DEPTHWISE, pointwise = path == FUSE_POINTWISE;
    bool rows = path == FUSE_ROWS; /* 3 channels, 3x3 stride 2: conv_rows */
    int64_t kk = pointwise ? 1 : 3, cin = rows ? 3 : 16, st = rows ? 2 : 1;
    int64_t xd[4] = {1, cin, 23, 29}, wd[4] = {depthwise ? 16 : 40, depthwise ? 1 : cin, kk, kk};
    int64_t bd[1] = {wd[0]}, one[1] = {1}, pads[4] = {1, 1, 1, 1}, strides[2] = {st, st};
    if (pointwise)
        memset(pads, 0, sizeof pads);
    cg_tensor *x = make(CG_DTYPE_FLOAT, 4, xd, 5, false), *w = make(CG_DTYPE_FLOAT, 4, wd, 6, false);
    cg_tensor *b = make(CG_DTYPE_FLOAT, 1, bd, 7, false);
    cg_tensor *lo = make(CG_DTYPE_FLOAT, 0, one, 0, false), *hi = make(CG_DTYPE_FLOAT, 0, one, 0, false);
    ((float *)lo->data)[0] = -0.1f;
    ((float *)hi->data)[0] = 0.6f;
    bool silu = strcmp(act, "SiLU") == 0, clip = strcmp(act, "Clip") == 0;
    bool add = strncmp(act, "Add", 3) == 0, add_relu = strcmp(act, "AddRelu") == 0;
    int64_t yd[4] = {1, wd[0], (23 + 2 - 3) / st + 1, (29 + 2 - 3) / st + 1};
    cg_tensor *res = add ? make(CG_DTYPE_FLOAT, 4, yd, 8, false) : NULL;
    cg_model *m = test_model_new(17);
    cg_graph *g = m->graph = test_graph_new(m, "fusion", 3);
    cg_node *conv = test_node(m, g, "Conv", "conv", "x,w,b", "c");
    test_node_add_attr(conv, attr_ints("pads", pads, 4));
    test_node_add_attr(conv, attr_int("group", depthwise ? 16 : 1));
    test_node_add_attr(conv, attr_ints("strides", strides, 2));
    if (add) { /* Add, then maybe Relu */
        test_node(m, g, "Add", "act", add_relu ? "c,r" : "r,c", add_relu ? "a" : "y");
        if (add_relu)
            test_node(m, g, "Relu", "relu", "a", "y");
    } else if (silu) {
        test_node(m, g, "Sigmoid", "act", "c", "s");
        test_node(m, g, "Mul", "mul", "s,c", "y");
    } else {
        cg_node *a = test_node(m, g, act, "act", clip ? "c,lo,hi" : "c", "y");
        if (strcmp(act, "LeakyRelu") == 0)
            test_node_add_attr(a, attr_float("alpha", 0.07f));
    }
    const char *names[5] = {"x", "w", "b", clip ? "lo" : "r", "hi"};
    cg_tensor *vals[5] = {x, w, b, clip ? lo : res, hi};
    size_t nin = add ? 4 : 3;
    /* Clip's bounds are initializers (fusion needs constants), their
     * raw_data at odd byte offsets as exporters leave them: such copies are
     * made only at the first run, so the fusion pass reading the bounds at
     * init must make them first */
    static uint8_t raw[2][8];
    for (int i = 0; clip && i < 2; i++) {
        memcpy(raw[i] + 1, (i ? hi : lo)->data, sizeof(float));
        test_graph_init_raw(m, g, i ? "hi" : "lo", CG_DTYPE_FLOAT, 0, NULL, raw[i] + 1,
                            sizeof(float));
    }
    cg_named_value feeds[5];
    cg_error err;
    cg_error_clear(&err);
    for (size_t i = 0; i < nin; i++) {
        test_graph_input(g, names[i], test_type(m, CG_DTYPE_FLOAT, -1, NULL));
        feeds[i].name = names[i];
        if (cg_value_from_tensor(vals[i], &feeds[i].value, &err) != CG_OK)
            test_fatal("value: %s", err.msg);
    }
    test_graph_output(g, "y", NULL);
    cg_named_value *outs[2] = {NULL, NULL};
    size_t nouts[2] = {0, 0};
    for (int pass = 0; pass < 2; pass++) {
        cg_runtime_options opt;
        cg_runtime_options_default(&opt);
        opt.threads = threads;
        if (pass == 1)
            opt.observe = observe_nothing; /* no fusion in an observed main graph */
        cg_status st = test_model_run_with(m, &opt, 2, feeds, nin, &outs[pass], &nouts[pass],
                                           &err);
        EXPECT(st == CG_OK, "fusion %s: %s", act, err.msg);
    }
    if (outs[0] && outs[1]) {
        const cg_tensor *a = &outs[0][0].value->tensor, *c = &outs[1][0].value->tensor;
        EXPECT(a->numel == c->numel && memcmp(a->data, c->data, cg_tensor_bytes(a)) == 0,
               "fused Conv + %s (%s, %d threads) differs from the unfused graph", act,
               depthwise ? "depthwise" : pointwise ? "pointwise" : "GEMM", threads);
    }
    for (int pass = 0; pass < 2; pass++)
        cg_runtime_free_outputs(outs[pass], nouts[pass]);
    for (size_t i = 0; i < 5; i++) {
        if (i < nin) {
            cg_value_free(feeds[i].value); /* the values took the tensors' data */
            free(vals[i]);
        } else {
            test_tensor_free(vals[i]);
        }
    }
    if (!clip)
        test_tensor_free(lo); /* not among vals */
    cg_model_free(m);
}

/* MatMul shares (whole matrices, rows of big tall products, or one thread
 * where splitting would change OpenBLAS's kernels) give the same bits. */
static void test_matmul_threads(const int64_t *ad, int ar, const int64_t *bd, int br)
{
    cg_tensor *in[2] = {make(CG_DTYPE_FLOAT, ar, ad, 8, false), make(CG_DTYPE_FLOAT, br, bd, 9, false)};
    size_t n1 = 0, n3 = 0;
    cg_named_value *o1 = run_one("MatMul", in, 2, NULL, 0, 1, CG_SIMD_AUTO, &n1);
    cg_named_value *o3 = run_one("MatMul", in, 2, NULL, 0, 3, CG_SIMD_AUTO, &n3);
    if (o1 && o3) {
        const cg_tensor *t1 = &o1[0].value->tensor, *t3 = &o3[0].value->tensor;
        EXPECT(t1->numel == t3->numel && memcmp(t1->data, t3->data, cg_tensor_bytes(t1)) == 0,
               "MatMul [%lld x %lld]: 3 threads differ from 1", (long long)ad[ar - 2],
               (long long)bd[br - 1]);
    }
    if (o1)
        cg_runtime_free_outputs(o1, n1);
    if (o3)
        cg_runtime_free_outputs(o3, n3);
    test_tensor_free(in[0]);
    test_tensor_free(in[1]);
}

static void test_elementwise_threads(void)
{
    int64_t d[4] = {1, 40, 57, 61}, bd[4] = {1, 40, 1, 1};
    cg_tensor *in[2] = {make(CG_DTYPE_FLOAT, 4, d, 3, false),
                        make(CG_DTYPE_FLOAT, 4, bd, 4, false)};
    size_t n1 = 0, n3 = 0;
    cg_named_value *o1 = run_one("Add", in, 2, NULL, 0, 1, CG_SIMD_AUTO, &n1);
    cg_named_value *o3 = run_one("Add", in, 2, NULL, 0, 3, CG_SIMD_AUTO, &n3);
    if (o1 && o3) {
        const cg_tensor *t1 = &o1[0].value->tensor, *t3 = &o3[0].value->tensor;
        bool same = memcmp(t1->data, t3->data, cg_tensor_bytes(t1)) == 0;
        EXPECT(same, "Add: 3 threads differ from 1");
        int bad = 0;
        for (int64_t i = 0; i < t1->numel; i++) {
            float want = ((float *)in[0]->data)[i] + ((float *)in[1]->data)[i / (57 * 61)];
            bad += ((float *)t1->data)[i] != want;
        }
        EXPECT(bad == 0, "Add: %d wrong values", bad);
    }
    if (o1)
        cg_runtime_free_outputs(o1, n1);
    if (o3)
        cg_runtime_free_outputs(o3, n3);
    test_tensor_free(in[0]);
    test_tensor_free(in[1]);
}

/* A misaligned constant W (raw bytes at an odd offset, as exporters leave
 * them) is packed from the model's bytes at init: its aligned copy is never
 * made (resnet50's 102 MB), and every path gives the bits of an aligned W:
 * the GEMM, the pointwise kernel, and a grouped conv with one input
 * channel per group and few outputs (the plane kernel, which reads W). */
static void test_misaligned_w_not_copied(void)
{
    if (cg_simd_detect() < CG_SIMD_AVX2) {
        printf("  (misaligned W: no vector level on this CPU)\n");
        return;
    }
    /* what, C, M, group, kernel, with a packing that covers W */
    const struct {
        const char *what;
        int64_t c, m, group, k;
        bool covered;
    } cases[] = {{"3x3 GEMM", 24, 40, 1, 3, true},
                 {"1x1 pointwise", 32, 48, 1, 1, true},
                 {"depthwise 3x3", 16, 16, 16, 3, false}};
    for (size_t ci = 0; ci < sizeof cases / sizeof cases[0]; ci++) {
        const int64_t H = 20, W = 22;
        int64_t wn = cases[ci].m * (cases[ci].c / cases[ci].group) * cases[ci].k * cases[ci].k;
        int64_t xd[4] = {1, cases[ci].c, H, W};
        int64_t wd[4] = {cases[ci].m, cases[ci].c / cases[ci].group, cases[ci].k, cases[ci].k};
        float *w = malloc((size_t)wn * sizeof *w);
        uint8_t *odd = malloc((size_t)wn * sizeof *w + 1);
        cg_tensor *xt = make(CG_DTYPE_FLOAT, 4, xd, 31 + ci, false);
        cg_value *x0 = NULL;
        cg_error err;
        cg_error_clear(&err);
        if (!w || !odd || !xt || cg_value_from_tensor(xt, &x0, &err) != CG_OK)
            test_fatal("out of memory");
        uint64_t seed = 41 + ci;
        for (int64_t i = 0; i < wn; i++)
            w[i] = (float)pseudo(&seed);
        memcpy(odd + 1, w, (size_t)wn * sizeof *w);
        float *y[2] = {NULL, NULL};
        int64_t yn[2] = {0, 0};
        size_t filled[2] = {0, 0};
        for (int v = 0; v < 2; v++) {
            cg_model *m = test_model_graph(13, 2, "x", "y");
            m->graph->inputs[0].type = test_type(m, CG_DTYPE_FLOAT, 4, xd);
            test_graph_init_raw(m, m->graph, "w", CG_DTYPE_FLOAT, 4, wd,
                                v ? (void *)(odd + 1) : (void *)w, (size_t)wn * sizeof *w);
            cg_node *n = test_node(m, m->graph, "Conv", "conv", "x,w", "y");
            static int64_t pads[4] = {1, 1, 1, 1}, none[4] = {0, 0, 0, 0};
            test_node_add_attr(n, attr_ints("pads", cases[ci].k == 3 ? pads : none, 4));
            test_node_add_attr(n, attr_int("group", cases[ci].group));
            cg_runtime_options o;
            cg_runtime_options_default(&o);
            cg_runtime *rt = NULL;
            cg_value *xv = NULL;
            cg_named_value *outs = NULL;
            size_t nouts = 0, before = cg_shared_filled_bytes();
            EXPECT(cg_value_copy(x0, &xv, &err) == CG_OK, "x: %s", err.msg);
            cg_named_value feed = {"x", xv};
            for (int r = 0; r < 2 && xv; r++) { /* the second run: the planned one */
                cg_runtime_free_outputs(outs, nouts);
                outs = NULL;
                nouts = 0;
                if (r == 0)
                    EXPECT(cg_runtime_init(m, &o, &rt, &err) == CG_OK, "%s: init: %s",
                           cases[ci].what, err.msg);
                EXPECT(rt && cg_runtime_run(rt, &feed, 1, &outs, &nouts, &err) == CG_OK,
                       "%s: run: %s", cases[ci].what, rt ? err.msg : "no runtime");
                if (!rt)
                    break;
            }
            /* while the runtime lives: its copies and packings */
            filled[v] = cg_shared_filled_bytes() - before;
            if (nouts == 1) {
                yn[v] = outs[0].value->tensor.numel;
                y[v] = malloc((size_t)yn[v] * sizeof(float));
                if (y[v])
                    memcpy(y[v], outs[0].value->tensor.data, (size_t)yn[v] * sizeof(float));
            }
            cg_runtime_free_outputs(outs, nouts);
            cg_runtime_free(rt);
            cg_value_free(xv);
            cg_model_free(m);
        }
        EXPECT(y[0] && y[1] && yn[0] == yn[1] &&
                   memcmp(y[0], y[1], (size_t)yn[0] * sizeof(float)) == 0,
               "%s: a misaligned W gives the bits of an aligned one", cases[ci].what);
        size_t copy = (size_t)wn * sizeof(float);
        if (cases[ci].covered)
            /* the packing alone, no copy of W beside it */
            EXPECT(filled[1] == filled[0] && filled[1] > 0,
                   "%s: misaligned W: %zu bytes filled, aligned W: %zu (a copy of W is %zu)",
                   cases[ci].what, filled[1], filled[0], copy);
        else
            /* the plane kernel reads W itself: through its copy */
            EXPECT(filled[1] == filled[0] + copy, "%s: misaligned W: %zu bytes filled, "
                   "aligned W: %zu (a copy of W is %zu)", cases[ci].what, filled[1], filled[0],
                   copy);
        free(y[0]);
        free(y[1]);
        free(w);
        free(odd);
        cg_value_free(x0);
        test_tensor_free(xt);
    }
}

/* The GEMM's tap tables are kept with W's packing and reused while the
 * input shape is the same: one runtime fed 9x9, 9x9, 7x12, 12x7 (as many
 * positions, another window) and 9x9 gives, at every run, the bits of a
 * fresh runtime on that shape. Padded (a padded copy's pitch), strided
 * and dilated windows. */
static void test_taps_follow_shape(void)
{
    const struct {
        const char *what;
        int64_t k, stride, dil, pad;
    } cases[] = {{"3x3 pad 1", 3, 1, 1, 1}, {"3x3 stride 2", 3, 2, 1, 1},
                 {"3x3 dilated 2, no pad", 3, 1, 2, 0}};
    const int64_t shapes[5][2] = {{9, 9}, {9, 9}, {7, 12}, {12, 7}, {9, 9}};
    const int64_t C = 6, M = 10;
    for (size_t ci = 0; ci < sizeof cases / sizeof cases[0]; ci++) {
        int64_t k = cases[ci].k, wn = M * C * k * k;
        int64_t wd[4] = {M, C, k, k}, xsym[4] = {1, C, -1, -1};
        float *w = malloc((size_t)wn * sizeof *w);
        if (!w)
            test_fatal("out of memory");
        uint64_t seed = 77 + ci;
        for (int64_t i = 0; i < wn; i++)
            w[i] = (float)pseudo(&seed);
        cg_model *m = test_model_graph(13, 2, "x", "y");
        m->graph->inputs[0].type = test_type(m, CG_DTYPE_FLOAT, 4, xsym);
        test_graph_init_f32(m, m->graph, "w", 4, wd, w);
        cg_node *n = test_node(m, m->graph, "Conv", "conv", "x,w", "y");
        int64_t pads[4] = {cases[ci].pad, cases[ci].pad, cases[ci].pad, cases[ci].pad};
        int64_t strides[2] = {cases[ci].stride, cases[ci].stride};
        int64_t dils[2] = {cases[ci].dil, cases[ci].dil};
        test_node_add_attr(n, attr_ints("pads", pads, 4));
        test_node_add_attr(n, attr_ints("strides", strides, 2));
        test_node_add_attr(n, attr_ints("dilations", dils, 2));
        cg_runtime *kept = NULL;
        cg_error err;
        cg_error_clear(&err);
        EXPECT(cg_runtime_init(m, NULL, &kept, &err) == CG_OK, "%s: init: %s", cases[ci].what,
               err.msg);
        for (int r = 0; kept && r < 5; r++) {
            int64_t xd[4] = {1, C, shapes[r][0], shapes[r][1]};
            cg_tensor *xt = make(CG_DTYPE_FLOAT, 4, xd, 500 + (uint64_t)r, false);
            cg_value *xv = NULL;
            if (!xt || cg_value_from_tensor(xt, &xv, &err) != CG_OK)
                test_fatal("out of memory");
            cg_named_value feed = {"x", xv};
            cg_named_value *o1 = NULL, *o2 = NULL;
            size_t n1 = 0, n2 = 0;
            cg_runtime *fresh = NULL;
            bool ok = cg_runtime_run(kept, &feed, 1, &o1, &n1, &err) == CG_OK &&
                      cg_runtime_init(m, NULL, &fresh, &err) == CG_OK &&
                      cg_runtime_run(fresh, &feed, 1, &o2, &n2, &err) == CG_OK;
            EXPECT(ok, "%s run %d: %s", cases[ci].what, r, err.msg);
            if (ok) {
                const cg_tensor *a = &o1[0].value->tensor, *b = &o2[0].value->tensor;
                EXPECT(a->numel == b->numel && a->numel > 0 &&
                           memcmp(a->data, b->data, (size_t)a->numel * sizeof(float)) == 0,
                       "%s run %d (%lldx%lld): the kept runtime's bits differ from a fresh "
                       "one's", cases[ci].what, r, (long long)shapes[r][0],
                       (long long)shapes[r][1]);
            }
            cg_runtime_free_outputs(o1, n1);
            cg_runtime_free_outputs(o2, n2);
            cg_runtime_free(fresh);
            cg_value_free(xv);
            test_tensor_free(xt);
        }
        cg_runtime_free(kept);
        cg_model_free(m);
        free(w);
    }
}

/* Pads from a file may be huge where the input is small: a 3-D Conv of a
 * 2x2x2 input padded by 2^40 - 2 on each side of each axis, at strides
 * as big (every pad, stride and extent in range), has 8 outputs and a
 * padded plane of about 2^123 elements. Each run is
 * an error naming the pads (CG_LIMIT), never an overflowing index (a
 * fuzzer found conv_taps_init multiplying the padded extents unchecked). */
static void test_padded_plane_overflow(void)
{
    const int64_t P = ((int64_t)1 << 40) - 2;
    int64_t wd[5] = {2, 1, 3, 3, 3}, xd[5] = {1, 1, 2, 2, 2};
    float w[54];
    for (int i = 0; i < 54; i++)
        w[i] = (float)(i % 7) * 0.25f;
    for (int f64 = 0; f64 < 2; f64++) {
        cg_model *m = test_model_graph(13, 2, "x", "y");
        m->graph->inputs[0].type = test_type(m, CG_DTYPE_FLOAT, 5, xd);
        test_graph_init_f32(m, m->graph, "w", 5, wd, w);
        cg_node *n = test_node(m, m->graph, "Conv", "conv", "x,w", "y");
        int64_t pads[6] = {P, P, P, P, P, P}, strides[3] = {P, P, P};
        test_node_add_attr(n, attr_ints("pads", pads, 6));
        /* strides as big: two outputs per axis, so the output and the
         * im2col sizes are small and only the padded plane overflows */
        test_node_add_attr(n, attr_ints("strides", strides, 3));
        cg_runtime_options o;
        cg_runtime_options_default(&o);
        o.float64 = f64 != 0;
        cg_runtime *rt = NULL;
        cg_error err;
        cg_error_clear(&err);
        cg_status st = cg_runtime_init(m, &o, &rt, &err);
        if (st == CG_OK) {
            cg_tensor *xt = make(CG_DTYPE_FLOAT, 5, xd, 9, false);
            cg_value *xv = NULL;
            if (!xt || cg_value_from_tensor(xt, &xv, &err) != CG_OK)
                test_fatal("out of memory");
            cg_named_value feed = {"x", xv};
            cg_named_value *outs = NULL;
            size_t nouts = 0;
            st = cg_runtime_run(rt, &feed, 1, &outs, &nouts, &err);
            cg_runtime_free_outputs(outs, nouts);
            cg_value_free(xv);
            test_tensor_free(xt);
        }
        EXPECT(st == CG_LIMIT && strstr(err.msg, "pads make its size overflow"),
               "%s: huge pads are refused: status %d, %s", f64 ? "float64" : "float32", (int)st,
               err.msg);
        cg_runtime_free(rt);
        cg_model_free(m);
    }
}

/* --- fp16 sums (conv.c conv_sum16, gemm.c mm_sum16 on sum16_f64) ----------------- */

/* Seeded values that fp16 stores exactly (multiples of 2^-10 in [-1, 1]),
 * so the node's fp16 storage leaves them as they are. */
static cg_tensor *make16(int rank, const int64_t *dims, uint64_t seed)
{
    cg_tensor *t = test_tensor(CG_DTYPE_FLOAT, rank, dims, NULL);
    for (int64_t i = 0; i < t->numel; i++)
        cg_tensor_set_f64(t, i, floor(pseudo(&seed) * 1024.0) / 1024.0);
    return t;
}

/* A one-node run under one fp16 precision: sum11 the float64 mode's F16
 * floor (CG_NODE_PREC_FP16_SUM11), else fp16 accumulation in float32
 * (CG_NODE_PREC_FP16_ACC16). */
static cg_named_value *run_prec(const char *op, cg_tensor **in, size_t nin, cg_attr *attrs,
                                size_t nattr, bool sum11, int threads, cg_simd simd,
                                size_t *nouts)
{
    uint8_t prec[1] = {sum11 ? CG_NODE_PREC_FP16_SUM11 : CG_NODE_PREC_FP16_ACC16};
    cg_runtime_options opt;
    cg_runtime_options_default(&opt);
    opt.threads = threads;
    opt.simd = simd;
    opt.float64 = sum11;
    opt.node_precision = prec;
    return run_with(op, in, nin, attrs, nattr, &opt, nouts);
}

/* The delegate's chain for one output: r(acc + r(product)) from 0 over the
 * products in order, r cg_fp16_round (fp16 accumulation) or
 * cg_fp16_round_significand (the floor); the value fp16 storage keeps. */
static double r_sum(bool sum11, double v)
{
    return sum11 ? cg_fp16_round_significand(v) : cg_fp16_round(v);
}

/* Compares got (output 0) with want bit for bit, as doubles. */
static void expect_bits(const cg_named_value *o, const double *want, int64_t count,
                        const char *what, bool sum11, cg_simd level, int threads)
{
    const cg_tensor *t = &o[0].value->tensor;
    EXPECT(t->numel == count, "%s: %lld outputs, want %lld", what, (long long)t->numel,
           (long long)count);
    for (int64_t i = 0; i < count && i < t->numel; i++) {
        double got = cg_tensor_get_f64(t, i);
        if (memcmp(&got, &want[i], sizeof got) != 0) {
            EXPECT(false, "%s, %s (%s, %d threads): output %lld is %a, the scalar chain %a",
                   what, sum11 ? "fp16-sums floor" : "fp16 accumulation",
                   cg_simd_name(level), threads, (long long)i, got, want[i]);
            return;
        }
    }
}

/* The spec's pads, strides, dilations and group as a node's four
 * attributes (pads, strides and dil: the caller's arrays they point at). */
static void window_attrs(const conv_spec *cs, int64_t *pads, int64_t *strides, int64_t *dil,
                         cg_attr *attrs)
{
    for (int d = 0; d < cs->nsp; d++) {
        pads[d] = cs->p0[d];
        pads[cs->nsp + d] = cs->p1[d];
        strides[d] = cs->s[d];
        dil[d] = cs->d[d];
    }
    attrs[0] = attr_ints("pads", pads, (size_t)(2 * cs->nsp));
    attrs[1] = attr_ints("strides", strides, (size_t)cs->nsp);
    attrs[2] = attr_ints("dilations", dil, (size_t)cs->nsp);
    attrs[3] = attr_int("group", cs->group);
}

/* op under one fp16 precision at every vector level this CPU has, one and
 * three threads: its output 0 bit for bit against want. */
static void expect_sum16_levels(const char *op, cg_tensor **in, size_t nin, cg_attr *attrs,
                                size_t nattr, const double *want, int64_t count,
                                const char *what, bool sum11)
{
    cg_simd best = cg_simd_detect();
    const cg_simd levels[3] = {CG_SIMD_PORTABLE, CG_SIMD_AVX2, CG_SIMD_AVX512};
    for (int li = 0; want && li < 3; li++)
        for (int threads = 1; threads <= 3 && levels[li] <= best; threads += 2) {
            size_t no = 0;
            cg_named_value *o = run_prec(op, in, nin, attrs, nattr, sum11, threads, levels[li], &no);
            if (o)
                expect_bits(o, want, count, what, sum11, levels[li], threads);
            cg_runtime_free_outputs(o, no);
        }
}

/* conv_sum16 on a window against the chain per output: taps in order
 * (those in the padding skipped), within a tap the group's channels in
 * order, then the bias added and rounded; at every vector level, one and
 * three threads. with_inf: one input value past fp16's range, which its
 * storage makes inf, so that the kernel takes the float64 chains (the
 * float32 ones take finite fp16 values only) and the chains through it
 * turn inf or NaN. */
static void run_conv_sum16(const conv_spec *cs, bool sum11, bool with_inf)
{
    int64_t xd[5] = {cs->n, cs->c}, wd[5] = {cs->m, cs->c / cs->group}, bd[1] = {cs->m};
    int nsp = cs->nsp;
    for (int d = 0; d < nsp; d++) {
        xd[2 + d] = cs->in[d];
        wd[2 + d] = cs->k[d];
    }
    cg_tensor *x = make16(nsp + 2, xd, 21), *w = make16(nsp + 2, wd, 22), *b = make16(1, bd, 23);
    if (with_inf)
        cg_tensor_set_f64(x, x->numel / 2, 1e6);
    int64_t pads[6], strides[3], dil[3];
    cg_attr attrs[4];
    window_attrs(cs, pads, strides, dil, attrs);
    int64_t od[3], on, in_n, kn, cg = cs->c / cs->group, mg = cs->m / cs->group;
    conv_dims(cs, od, &on, &in_n, &kn);
    int64_t count = cs->n * cs->m * on;
    double *want = malloc((size_t)count * sizeof *want);
    for (int64_t n = 0; want && n < cs->n; n++)
        for (int64_t m = 0; m < cs->m; m++)
            for (int64_t p = 0; p < on; p++) {
                double acc = 0.0;
                for (int64_t q = 0; q < kn; q++) {
                    int64_t xi;
                    if (!conv_tap(cs, od, p, q, &xi))
                        continue; /* the padding adds no product */
                    for (int64_t c = 0; c < cg; c++) {
                        double xv = cg_fp16_round(
                            cg_tensor_get_f64(x, (n * cs->c + m / mg * cg + c) * in_n + xi));
                        double wv = cg_tensor_get_f64(w, (m * cg + c) * kn + q);
                        acc = r_sum(sum11, acc + r_sum(sum11, wv * xv));
                    }
                }
                want[(n * cs->m + m) * on + p] =
                    cg_fp16_round(r_sum(sum11, acc + cg_tensor_get_f64(b, m)));
            }
    cg_tensor *in[3] = {x, w, b};
    expect_sum16_levels("Conv", in, 3, attrs, 4, want, count, cs->what, sum11);
    free(want);
    test_tensor_free(x);
    test_tensor_free(w);
    test_tensor_free(b);
}

/* ConvTranspose (conv.c convt_sum16) under fp16 sums against the chain per
 * output, written here from ONNX's definition: output position o of
 * channel oc sums, over the kernel taps in ascending index that meet it
 * (o = i * stride - pad0 + tap * dilation for an input position i), each
 * tap's input channels of the group in order, r(acc + r(x * w)); then the
 * bias, rounded; at every vector level, one and three threads. cs: the
 * input (in) and kernel, stride, dilation and pads of the transposed
 * window, the output extent following ONNX (no output_padding). with_inf:
 * one input value stored as inf (the float64 chains). */
static void run_convt_sum16(const conv_spec *cs, bool sum11, bool with_inf)
{
    int nsp = cs->nsp;
    int64_t cg = cs->c / cs->group, mg = cs->m / cs->group;
    int64_t xd[5] = {cs->n, cs->c}, wd[5] = {cs->c, mg}, bd[1] = {cs->m};
    int64_t yd[3], yn = 1, in_n = 1, kn = 1;
    for (int d = 0; d < nsp; d++) {
        xd[2 + d] = cs->in[d];
        wd[2 + d] = cs->k[d];
        yd[d] = cs->s[d] * (cs->in[d] - 1) + (cs->k[d] - 1) * cs->d[d] + 1 - cs->p0[d] - cs->p1[d];
        yn *= yd[d];
        in_n *= cs->in[d];
        kn *= cs->k[d];
    }
    cg_tensor *x = make16(nsp + 2, xd, 41), *w = make16(nsp + 2, wd, 42), *b = make16(1, bd, 43);
    if (with_inf)
        cg_tensor_set_f64(x, x->numel / 3, -1e6);
    int64_t pads[6], strides[3], dil[3];
    cg_attr attrs[4];
    window_attrs(cs, pads, strides, dil, attrs);
    int64_t count = cs->n * cs->m * yn;
    double *want = malloc((size_t)count * sizeof *want);
    for (int64_t n = 0; want && n < cs->n; n++)
        for (int64_t oc = 0; oc < cs->m; oc++)
            for (int64_t o = 0; o < yn; o++) {
                int64_t od[3] = {0}, r = o;
                for (int d = nsp - 1; d >= 0; d--) {
                    od[d] = r % yd[d];
                    r /= yd[d];
                }
                double acc = 0.0;
                for (int64_t q = 0; q < kn; q++) {
                    int64_t kq[3] = {0}, rq = q, xi = 0;
                    bool meets = true;
                    for (int d = nsp - 1; d >= 0; d--) {
                        kq[d] = rq % cs->k[d];
                        rq /= cs->k[d];
                    }
                    for (int d = 0; d < nsp && meets; d++) {
                        int64_t num = od[d] + cs->p0[d] - kq[d] * cs->d[d];
                        meets = num >= 0 && num % cs->s[d] == 0 && num / cs->s[d] < cs->in[d];
                        xi = xi * cs->in[d] + (meets ? num / cs->s[d] : 0);
                    }
                    if (!meets)
                        continue;
                    for (int64_t ci = 0; ci < cg; ci++) {
                        int64_t ic = oc / mg * cg + ci;
                        double xv = cg_fp16_round(cg_tensor_get_f64(x, (n * cs->c + ic) * in_n + xi));
                        double wv = cg_tensor_get_f64(w, (ic * mg + oc % mg) * kn + q);
                        acc = r_sum(sum11, acc + r_sum(sum11, xv * wv));
                    }
                }
                want[(n * cs->m + oc) * yn + o] =
                    cg_fp16_round(r_sum(sum11, acc + cg_tensor_get_f64(b, oc)));
            }
    cg_tensor *in[3] = {x, w, b};
    expect_sum16_levels("ConvTranspose", in, 3, attrs, 4, want, count, cs->what, sum11);
    free(want);
    test_tensor_free(x);
    test_tensor_free(w);
    test_tensor_free(b);
}

/* The chain per output of A [2, 7, 37] (stored in fp16) times B [37, 19]
 * at B + bi * b_stride for batch bi: over k in order, then stored. */
static void matmul_chain(const cg_tensor *a, const cg_tensor *b, int64_t b_stride, bool sum11,
                         double *want)
{
    for (int64_t bi = 0; bi < 2; bi++)
        for (int64_t i = 0; i < 7; i++)
            for (int64_t j = 0; j < 19; j++) {
                double acc = 0.0;
                for (int64_t q = 0; q < 37; q++) {
                    double av = cg_fp16_round(cg_tensor_get_f64(a, (bi * 7 + i) * 37 + q));
                    double bv = cg_tensor_get_f64(b, bi * b_stride + q * 19 + j);
                    acc = r_sum(sum11, acc + r_sum(sum11, av * bv));
                }
                want[(bi * 7 + i) * 19 + j] = cg_fp16_round(acc);
            }
}

/* MatMul (broadcast batches) and Gemm (transposes, alpha, beta and C)
 * under fp16 sums against the chain per output: over k in order, then
 * Gemm's r(r(alpha ab) + r(beta c)). Row and column counts off the
 * kernel's 4 x 8 and 4 x 32 blocks. with_inf as run_conv_sum16's, in A
 * of both. */
static void run_matmul_sum16(bool sum11, bool with_inf)
{
    const int64_t ad[3] = {2, 7, 37}, bd[2] = {37, 19}, bbd[3] = {2, 37, 19};
    cg_tensor *a = make16(3, ad, 31), *b = make16(2, bd, 32), *bb = make16(3, bbd, 36);
    if (with_inf)
        cg_tensor_set_f64(a, 40, -3e5);
    int64_t count = 2 * 7 * 19;
    /* want: B shared by the batches; bwant: a B per batch */
    double want[2 * 7 * 19], bwant[2 * 7 * 19];
    matmul_chain(a, b, 0, sum11, want);
    matmul_chain(a, bb, 37 * 19, sum11, bwant);
    /* Gemm: A stored [k][m] (transA), B stored [n][k] (transB), C [m][n] */
    const int64_t gad[2] = {23, 6}, gbd[2] = {13, 23}, gcd[2] = {6, 13};
    cg_tensor *ga = make16(2, gad, 33), *gb = make16(2, gbd, 34), *gc = make16(2, gcd, 35);
    if (with_inf)
        cg_tensor_set_f64(ga, 50, 1e5);
    double gwant[6 * 13];
    for (int64_t i = 0; i < 6; i++)
        for (int64_t j = 0; j < 13; j++) {
            double acc = 0.0;
            for (int64_t q = 0; q < 23; q++)
                acc = r_sum(sum11, acc + r_sum(sum11, cg_fp16_round(cg_tensor_get_f64(
                                                          ga, q * 6 + i)) *
                                                          cg_tensor_get_f64(gb, j * 23 + q)));
            double v = r_sum(sum11, 0.5 * acc);
            gwant[i * 13 + j] =
                cg_fp16_round(r_sum(sum11, v + r_sum(sum11, 2.0 * cg_tensor_get_f64(gc, i * 13 + j))));
        }
    cg_attr gattrs[4] = {attr_int("transA", 1), attr_int("transB", 1), attr_float("alpha", 0.5f),
                         attr_float("beta", 2.0f)};
    cg_tensor *min[2] = {a, b}, *bbin[2] = {a, bb}, *gin[3] = {ga, gb, gc};
    cg_simd best = cg_simd_detect();
    const cg_simd levels[3] = {CG_SIMD_PORTABLE, CG_SIMD_AVX2, CG_SIMD_AVX512};
    for (int li = 0; li < 3; li++)
        for (int threads = 1; threads <= 3 && levels[li] <= best; threads += 2) {
            size_t no = 0;
            cg_named_value *o = run_prec("MatMul", min, 2, NULL, 0, sum11, threads, levels[li], &no);
            if (o)
                expect_bits(o, want, count, "MatMul [2, 7, 37] x [37, 19]", sum11, levels[li],
                            threads);
            cg_runtime_free_outputs(o, no);
            o = run_prec("MatMul", bbin, 2, NULL, 0, sum11, threads, levels[li], &no);
            if (o)
                expect_bits(o, bwant, count, "MatMul [2, 7, 37] x [2, 37, 19]", sum11,
                            levels[li], threads);
            cg_runtime_free_outputs(o, no);
            o = run_prec("Gemm", gin, 3, gattrs, 4, sum11, threads, levels[li], &no);
            if (o)
                expect_bits(o, gwant, 6 * 13, "Gemm transA transB alpha beta", sum11, levels[li],
                            threads);
            cg_runtime_free_outputs(o, no);
        }
    test_tensor_free(a);
    test_tensor_free(b);
    test_tensor_free(bb);
    test_tensor_free(ga);
    test_tensor_free(gb);
    test_tensor_free(gc);
}

int main(void)
{
    /* what, nsp, n, c, m, group, in, kernel, stride, dilation, pad0, pad1 */
    const conv_spec specs[] = {
        {"3x3 pad 1", 2, 1, 16, 64, 1, {28, 30}, {3, 3}, {1, 1}, {1, 1}, {1, 1}, {1, 1}},
        {"pointwise 144->40", 2, 1, 144, 40, 1, {14, 14}, {1, 1}, {1, 1}, {1, 1}, {0, 0}, {0, 0}},
        {"7x7 stride 2", 2, 1, 3, 24, 1, {45, 38}, {7, 7}, {2, 2}, {1, 1}, {3, 3}, {2, 3}},
        {"3x3 stride 2 5 outs", 2, 2, 8, 5, 1, {33, 33}, {3, 3}, {2, 2}, {1, 1}, {1, 1}, {1, 1}},
        {"dilated, uneven pads", 2, 1, 6, 48, 1, {20, 23}, {3, 3}, {1, 1}, {2, 3}, {2, 0}, {1, 3}},
        {"grouped", 2, 1, 32, 96, 4, {15, 17}, {3, 3}, {1, 1}, {1, 1}, {1, 1}, {1, 1}},
        {"filter bank (1 in, 64 out)", 1, 1, 1, 64, 1, {600}, {64}, {16}, {1}, {0}, {0}},
        {"1-D", 1, 2, 12, 33, 1, {301}, {5}, {1}, {1}, {2}, {2}},
        {"3-D", 3, 1, 4, 16, 1, {9, 10, 11}, {3, 3, 3}, {1, 2, 1}, {1, 1, 1}, {1, 1, 1}, {1, 0, 1}},
        {"depthwise 3x3", 2, 1, 24, 24, 24, {37, 29}, {3, 3}, {1, 1}, {1, 1}, {1, 1}, {1, 1}},
        {"depthwise 5x5 stride 2", 2, 1, 24, 24, 24, {41, 40}, {5, 5}, {2, 2}, {1, 1}, {2, 2}, {2, 2}},
        {"depthwise stride 3, x2", 2, 1, 16, 32, 16, {31, 35}, {3, 3}, {3, 3}, {1, 1}, {1, 1}, {1, 1}},
        {"depthwise dilated 1-D", 1, 1, 20, 20, 20, {513}, {5}, {1}, {2}, {4}, {4}},
        /* planes at most 8 wide: AVX-512 runs them on AVX2's 8 lanes */
        {"depthwise 5x5 7x7 plane", 2, 1, 24, 24, 24, {7, 7}, {5, 5}, {1, 1}, {1, 1}, {2, 2}, {2, 2}},
        {"depthwise 3x3 stride 2 to 7x8", 2, 1, 16, 16, 16, {13, 15}, {3, 3}, {2, 2}, {1, 1}, {1, 1}, {1, 1}},
        /* the position-tiled pointwise kernel: planes of two tiles and
         * more, ending inside a vector; channels off its panel */
        {"pointwise 24 to 36", 2, 2, 24, 36, 1, {13, 11}, {1, 1}, {1, 1}, {1, 1}, {0, 0}, {0, 0}},
        {"pointwise grouped", 2, 1, 32, 48, 2, {10, 20}, {1, 1}, {1, 1}, {1, 1}, {0, 0}, {0, 0}},
        {"pointwise 1-D tiles", 1, 1, 20, 8, 1, {500}, {1}, {1}, {1}, {0}, {0}},
        /* few taps (conv_rows): an image's first convolution at stride 2
         * over odd and even widths, uneven pads, channels off a panel; a
         * 5x5 with row stride 2 only; a dilated 3x3 at stride 1 */
        {"first conv 3x3 stride 2", 2, 2, 3, 24, 1, {45, 38}, {3, 3}, {2, 2}, {1, 1}, {1, 0}, {0, 1}},
        {"5x5 stride 1x2, 2 in", 2, 1, 2, 20, 1, {30, 41}, {5, 5}, {1, 2}, {1, 1}, {2, 2}, {2, 1}},
        {"3x3 dilated, 7 in", 2, 1, 7, 16, 1, {19, 26}, {3, 3}, {2, 1}, {1, 2}, {1, 2}, {1, 2}},
        /* 576 taps: three K blocks of the GEMM continue each sum */
        {"3x3 576 taps", 2, 1, 64, 40, 1, {12, 13}, {3, 3}, {1, 1}, {1, 1}, {1, 1}, {1, 1}},
    };
    /* every window in float32 and float64 */
    for (size_t i = 0; i < sizeof specs / sizeof specs[0]; i++) {
        run_conv(&specs[i], false, 0, false);
        run_conv(&specs[i], false, 0, true);
    }
    /* ConvInteger: the float GEMM (portable, AVX2) and the 8-bit GEMM
     * (AVX-512 with VNNI) on every window shape, channel counts off the
     * panel (5, 33, 40), positions off the tile, taps off a group of four */
    for (size_t i = 0; i < 9; i++)
        run_conv(&specs[i], true, (int)(i % 8), false);
    run_conv(&specs[0], true, Q_X_INT8 | Q_W_INT8 | Q_W_PER_CHANNEL, false);
    run_conv(&specs[5], true, Q_W_INT8 | Q_W_PER_CHANNEL, false);
    /* fp16 sums on the windows (a multiplier of 2 and group counts off
     * the 8 lanes among them) and on MatMul and Gemm */
    for (size_t i = 0; i < sizeof specs / sizeof specs[0]; i++) {
        run_conv_sum16(&specs[i], false, false);
        run_conv_sum16(&specs[i], true, false);
    }
    /* the float64 chains (an inf among the stored inputs) on a few */
    const size_t inf_specs[] = {0, 5, 9, 17};
    for (size_t i = 0; i < sizeof inf_specs / sizeof inf_specs[0]; i++) {
        run_conv_sum16(&specs[inf_specs[i]], false, true);
        run_conv_sum16(&specs[inf_specs[i]], true, true);
    }
    /* ConvTranspose: what, nsp, n, c (in), m (out), group, in, kernel,
     * stride, dilation, pad0, pad1 */
    const conv_spec tspecs[] = {
        {"convT 2x2 stride 2 (a DB head's)", 2, 1, 24, 24, 1, {15, 20}, {2, 2}, {2, 2}, {1, 1}, {0, 0}, {0, 0}},
        {"convT 3x3 stride 2 pad 1", 2, 2, 6, 5, 1, {9, 11}, {3, 3}, {2, 2}, {1, 1}, {1, 1}, {1, 1}},
        {"convT 4x4 stride 2, to 1 channel", 2, 1, 16, 1, 1, {12, 13}, {4, 4}, {2, 2}, {1, 1}, {1, 1}, {1, 1}},
        {"convT grouped, dilated", 2, 1, 8, 12, 4, {10, 9}, {3, 3}, {1, 2}, {2, 1}, {1, 0}, {0, 2}},
        {"convT depthwise 1-D stride 3", 1, 1, 10, 10, 10, {200}, {5}, {3}, {1}, {1}, {2}},
        {"convT 3-D", 3, 1, 3, 4, 1, {5, 6, 4}, {2, 3, 2}, {2, 1, 2}, {1, 1, 1}, {0, 1, 0}, {0, 1, 1}},
    };
    for (size_t i = 0; i < sizeof tspecs / sizeof tspecs[0]; i++) {
        run_convt_sum16(&tspecs[i], false, false);
        run_convt_sum16(&tspecs[i], true, false);
    }
    run_convt_sum16(&tspecs[1], false, true);
    run_convt_sum16(&tspecs[1], true, true);
    run_matmul_sum16(false, false);
    run_matmul_sum16(true, false);
    run_matmul_sum16(false, true);
    run_matmul_sum16(true, true);
    test_elementwise_threads();
    test_misaligned_w_not_copied();
    test_taps_follow_shape();
    test_padded_plane_overflow();
    const int64_t tall_a[3] = {2, 700, 256}, tall_b[2] = {256, 96}; /* rows split */
    const int64_t bat_a[3] = {5, 40, 64}, bat_b[3] = {5, 64, 30};   /* batches split */
    const int64_t small_a[2] = {37, 20}, small_b[2] = {20, 11};     /* one thread */
    test_matmul_threads(tall_a, 3, tall_b, 2);
    test_matmul_threads(bat_a, 3, bat_b, 3);
    test_matmul_threads(small_a, 2, small_b, 2);
    static const char *acts[] = {"Relu", "Clip", "LeakyRelu", "HardSwish", "SiLU", "Add",
                                 "AddRelu"};
    for (size_t i = 0; i < sizeof acts / sizeof acts[0]; i++) {
        test_fusion(acts[i], FUSE_GEMM, 1);
        test_fusion(acts[i], FUSE_DEPTHWISE, 1);
        test_fusion(acts[i], FUSE_GEMM, 3);
        test_fusion(acts[i], FUSE_POINTWISE, 1);
        test_fusion(acts[i], FUSE_POINTWISE, 3);
        test_fusion(acts[i], FUSE_ROWS, 1);
        test_fusion(acts[i], FUSE_ROWS, 3);
    }
    return test_done("test_conv_paths");
}
