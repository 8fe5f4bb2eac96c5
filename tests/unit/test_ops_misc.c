/*
 * Unit tests for the misc kernel family: what the ONNX backend data does
 * not cover. Error paths (bad thresholds, indices, lengths, equations) must
 * fail with a status whose message names the node; bidirectional and
 * reverse recurrent runs must agree with forward runs on reversed input;
 * Einsum must handle diagonals and broadcast ellipses and stay exact on
 * int64; nearest Resize must copy int64 exactly; DFT must invert.
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
#include "run/kernel.h"
#include "testlib.h"

static int failures;
#define EXPECT(cond, ...)                                                                      \
    do {                                                                                       \
        if (!(cond)) {                                                                         \
            failures++;                                                                        \
            fprintf(stderr, "%s:%d: FAILED %s: ", __FILE__, __LINE__, #cond);                  \
            fprintf(stderr, __VA_ARGS__);                                                      \
            fputc('\n', stderr);                                                               \
        }                                                                                      \
    } while (0)

#define MAX_IO 8

/* A one-node model description. Inputs named in[i] (""=omitted). */
typedef struct onenode {
    const char *op;
    int64_t opset;
    const char *inputs[MAX_IO];
    size_t nin;
    size_t nout;
    cg_attr attrs[8];
    size_t nattr;
    cg_tensor *in_vals[MAX_IO]; /* values for the non-empty inputs */
} onenode;

static cg_tensor *make_tensor(cg_dtype dt, int rank, const int64_t *dims, const double *vals)
{
    cg_tensor *t = calloc(1, sizeof *t);
    cg_error err;
    cg_error_clear(&err);
    if (!t || cg_tensor_alloc(t, dt, rank, dims, 0, &err)) {
        fprintf(stderr, "tensor alloc failed: %s\n", err.msg);
        exit(2);
    }
    for (int64_t i = 0; vals && i < t->numel; i++)
        cg_tensor_set_f64(t, i, vals[i]);
    return t;
}

/* Runs the model; returns the status and fills outs (caller frees) and
 * the error message. */
static cg_status run_node(onenode *n, cg_named_value **outs, size_t *nouts, cg_error *err)
{
    static const char *out_names[MAX_IO] = {"y0", "y1", "y2", "y3", "y4", "y5", "y6", "y7"};
    cg_node node;
    memset(&node, 0, sizeof node);
    node.name = "misc_node";
    node.op_type = n->op;
    node.domain = "";
    node.inputs = n->inputs;
    node.input_count = n->nin;
    node.outputs = out_names;
    node.output_count = n->nout;
    node.attrs = n->attrs;
    node.attr_count = n->nattr;

    cg_type types[MAX_IO * 2];
    cg_value_info gin[MAX_IO], gout[MAX_IO];
    size_t ngin = 0;
    cg_named_value feeds[MAX_IO];
    memset(types, 0, sizeof types);
    for (size_t i = 0; i < n->nin; i++) {
        if (!n->inputs[i][0])
            continue;
        types[ngin].kind = CG_TYPE_TENSOR;
        types[ngin].elem_type = (int32_t)n->in_vals[i]->dtype;
        types[ngin].has_elem_type = true;
        memset(&gin[ngin], 0, sizeof gin[ngin]);
        gin[ngin].name = n->inputs[i];
        gin[ngin].type = &types[ngin];
        cg_tensor copy = *n->in_vals[i];
        cg_tensor fresh;
        cg_tensor_alloc(&fresh, copy.dtype, copy.rank, copy.dims, 0, err);
        if (copy.dtype == CG_DTYPE_STRING) {
            for (int64_t e = 0; e < copy.numel; e++) {
                const char *s = ((char **)copy.data)[e];
                cg_tensor_set_string(&fresh, e, s ? s : "", s ? strlen(s) : 0);
            }
        } else if (cg_tensor_bytes(&copy)) {
            memcpy(fresh.data, copy.data, cg_tensor_bytes(&copy));
        }
        feeds[ngin].name = n->inputs[i];
        cg_value_from_tensor(&fresh, &feeds[ngin].value, err);
        ngin++;
    }
    for (size_t i = 0; i < n->nout; i++) {
        memset(&gout[i], 0, sizeof gout[i]);
        gout[i].name = out_names[i];
        gout[i].type = &types[MAX_IO + i];
        types[MAX_IO + i].kind = CG_TYPE_TENSOR;
    }
    cg_graph g;
    memset(&g, 0, sizeof g);
    g.name = "misc_test";
    g.nodes = &node;
    g.node_count = 1;
    g.inputs = gin;
    g.input_count = ngin;
    g.outputs = gout;
    g.output_count = n->nout;
    cg_opset_id ops = {"", n->opset, true, {NULL, 0}};
    cg_model m;
    memset(&m, 0, sizeof m);
    m.ir_version = 8;
    m.has_ir_version = true;
    m.opsets = &ops;
    m.opset_count = 1;
    m.graph = &g;

    cg_runtime_options opt;
    cg_runtime_options_default(&opt);
    cg_runtime *rt = NULL;
    cg_error_clear(err);
    cg_status st = cg_runtime_init(&m, &opt, &rt, err);
    if (st == CG_OK)
        st = cg_runtime_run(rt, feeds, ngin, outs, nouts, err);
    cg_runtime_free(rt);
    for (size_t i = 0; i < ngin; i++)
        cg_value_free(feeds[i].value);
    return st;
}

/* Expects a failure whose message names the node and contains `needle`. */
static void expect_fail(onenode *n, const char *needle, const char *what)
{
    cg_named_value *outs = NULL;
    size_t nouts = 0;
    cg_error err;
    cg_status st = run_node(n, &outs, &nouts, &err);
    EXPECT(st != CG_OK, "%s: expected a failure", what);
    if (st == CG_OK) {
        cg_runtime_free_outputs(outs, nouts);
        return;
    }
    EXPECT(strstr(err.msg, "misc_node") != NULL, "%s: message does not name the node: %s", what, err.msg);
    EXPECT(strstr(err.msg, needle) != NULL, "%s: message lacks '%s': %s", what, needle, err.msg);
}

/* Runs and returns output 0's values as doubles (malloc'd), or NULL. */
static double *run_values(onenode *n, int64_t *numel, const char *what)
{
    cg_named_value *outs = NULL;
    size_t nouts = 0;
    cg_error err;
    cg_status st = run_node(n, &outs, &nouts, &err);
    EXPECT(st == CG_OK, "%s: run failed: %s", what, err.msg);
    if (st != CG_OK)
        return NULL;
    const cg_tensor *t = &outs[0].value->tensor;
    double *v = malloc(sizeof(double) * (size_t)(t->numel ? t->numel : 1));
    for (int64_t i = 0; i < t->numel; i++)
        v[i] = cg_tensor_get_f64(t, i);
    *numel = t->numel;
    cg_runtime_free_outputs(outs, nouts);
    return v;
}

static void free_inputs(onenode *n)
{
    for (size_t i = 0; i < n->nin; i++)
        if (n->in_vals[i]) {
            cg_tensor_release(n->in_vals[i]);
            free(n->in_vals[i]);
        }
}

static void test_nms_errors(void)
{
    int64_t bd[3] = {1, 1, 4}, sd[3] = {1, 1, 1}, one[1] = {1};
    double box[4] = {0, 0, 1, 1}, score[1] = {0.9}, mo[1] = {3}, iou[1] = {1.5};
    onenode n = {"NonMaxSuppression", 11, {"b", "s", "m", "i"}, 4, 1, {{0}}, 0, {NULL}};
    n.in_vals[0] = make_tensor(CG_DTYPE_FLOAT, 3, bd, box);
    n.in_vals[1] = make_tensor(CG_DTYPE_FLOAT, 3, sd, score);
    n.in_vals[2] = make_tensor(CG_DTYPE_INT64, 1, one, mo);
    n.in_vals[3] = make_tensor(CG_DTYPE_FLOAT, 1, one, iou);
    expect_fail(&n, "iou_threshold", "NMS iou 1.5");
    free_inputs(&n);
}

static void test_roialign_errors(void)
{
    int64_t xd[4] = {1, 1, 4, 4}, rd[2] = {1, 4}, bd[1] = {1};
    double roi[4] = {0, 0, 2, 2}, bi[1] = {3};
    onenode n = {"RoiAlign", 16, {"x", "r", "b"}, 3, 1, {{0}}, 0, {NULL}};
    n.in_vals[0] = make_tensor(CG_DTYPE_FLOAT, 4, xd, NULL);
    n.in_vals[1] = make_tensor(CG_DTYPE_FLOAT, 2, rd, roi);
    n.in_vals[2] = make_tensor(CG_DTYPE_INT64, 1, bd, bi);
    expect_fail(&n, "batch_indices", "RoiAlign batch index 3 of 1");
    free_inputs(&n);
}

static void test_einsum(void)
{
    /* label sizes disagree */
    int64_t a[2] = {2, 3}, b[2] = {2, 3};
    onenode n = {"Einsum", 12, {"a", "b"}, 2, 1, {{0}}, 0, {NULL}};
    n.attrs[n.nattr++] = attr_str("equation", "ij,jk->ik");
    n.in_vals[0] = make_tensor(CG_DTYPE_FLOAT, 2, a, NULL);
    n.in_vals[1] = make_tensor(CG_DTYPE_FLOAT, 2, b, NULL);
    expect_fail(&n, "label 'j'", "Einsum size mismatch");
    free_inputs(&n);

    /* diagonal: ii->i */
    int64_t sq[2] = {3, 3};
    double m[9] = {1, 2, 3, 4, 5, 6, 7, 8, 9};
    onenode d = {"Einsum", 12, {"a"}, 1, 1, {{0}}, 0, {NULL}};
    d.attrs[d.nattr++] = attr_str("equation", "ii->i");
    d.in_vals[0] = make_tensor(CG_DTYPE_FLOAT, 2, sq, m);
    int64_t cnt = 0;
    double *v = run_values(&d, &cnt, "Einsum ii->i");
    EXPECT(v && cnt == 3 && v[0] == 1 && v[1] == 5 && v[2] == 9, "diagonal wrong");
    free(v);
    free_inputs(&d);

    /* broadcast ellipsis batch matmul: [2,1,2] x [3,2] -> [2,1,3], int64 exact */
    int64_t ad[3] = {2, 1, 2}, bdm[2] = {2, 3};
    double av[4] = {1, 2, 3, 4}, bv[6] = {1, 0, 1, 0, 1, 1};
    onenode e = {"Einsum", 12, {"a", "b"}, 2, 1, {{0}}, 0, {NULL}};
    e.attrs[e.nattr++] = attr_str("equation", "...ij,jk->...ik");
    e.in_vals[0] = make_tensor(CG_DTYPE_INT64, 3, ad, av);
    e.in_vals[1] = make_tensor(CG_DTYPE_INT64, 2, bdm, bv);
    /* a large value that double would round: 2^60 + 1 */
    ((int64_t *)e.in_vals[0]->data)[0] = (INT64_C(1) << 60) + 1;
    cg_named_value *outs = NULL;
    size_t nouts = 0;
    cg_error err;
    cg_status st = run_node(&e, &outs, &nouts, &err);
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
    free_inputs(&e);
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

    onenode bi = {op, 14, {"x", "w", "r"}, 3, 2, {{0}}, 0, {NULL}};
    bi.attrs[bi.nattr++] = attr_int("hidden_size", H);
    bi.attrs[bi.nattr++] = attr_str("direction", "bidirectional");
    bi.in_vals[0] = make_tensor(CG_DTYPE_FLOAT, 3, xd, x);
    bi.in_vals[1] = make_tensor(CG_DTYPE_FLOAT, 3, wd2, w);
    bi.in_vals[2] = make_tensor(CG_DTYPE_FLOAT, 3, rd2, r);
    onenode fw = {op, 14, {"x", "w", "r"}, 3, 2, {{0}}, 0, {NULL}};
    fw.attrs[fw.nattr++] = attr_int("hidden_size", H);
    fw.in_vals[0] = make_tensor(CG_DTYPE_FLOAT, 3, xd, xr);
    fw.in_vals[1] = make_tensor(CG_DTYPE_FLOAT, 3, wd1, w);
    fw.in_vals[2] = make_tensor(CG_DTYPE_FLOAT, 3, rd1, r);
    onenode fw2 = fw;
    fw2.in_vals[0] = make_tensor(CG_DTYPE_FLOAT, 3, xd, x);
    fw2.in_vals[1] = make_tensor(CG_DTYPE_FLOAT, 3, wd1, w);
    fw2.in_vals[2] = make_tensor(CG_DTYPE_FLOAT, 3, rd1, r);

    int64_t nb = 0, nf = 0, nf2 = 0;
    double *yb = run_values(&bi, &nb, op), *yf = run_values(&fw, &nf, op),
           *yf2 = run_values(&fw2, &nf2, op);
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
    free_inputs(&bi);
    free_inputs(&fw2);
    free_inputs(&fw);

    /* sequence_lens beyond the sequence is rejected */
    int64_t sd[1] = {B};
    double sl[2] = {2, 9};
    onenode bad = {op, 14, {"x", "w", "r", "", "sl"}, 5, 2, {{0}}, 0, {NULL}};
    bad.attrs[bad.nattr++] = attr_int("hidden_size", H);
    bad.in_vals[0] = make_tensor(CG_DTYPE_FLOAT, 3, xd, x);
    bad.in_vals[1] = make_tensor(CG_DTYPE_FLOAT, 3, wd1, w);
    bad.in_vals[2] = make_tensor(CG_DTYPE_FLOAT, 3, rd1, r);
    bad.in_vals[4] = make_tensor(CG_DTYPE_INT32, 1, sd, sl);
    expect_fail(&bad, "sequence_lens", op);
    free_inputs(&bad);
}

static void test_resize(void)
{
    /* nearest on int64 copies exactly */
    int64_t xd[2] = {1, 2}, sd[1] = {2};
    double sizes[2] = {1, 4};
    onenode n = {"Resize", 13, {"x", "", "", "s"}, 4, 1, {{0}}, 0, {NULL}};
    n.in_vals[0] = make_tensor(CG_DTYPE_INT64, 2, xd, NULL);
    ((int64_t *)n.in_vals[0]->data)[0] = INT64_MAX - 1;
    ((int64_t *)n.in_vals[0]->data)[1] = -7;
    n.in_vals[3] = make_tensor(CG_DTYPE_INT64, 1, sd, sizes);
    cg_named_value *outs = NULL;
    size_t nouts = 0;
    cg_error err;
    cg_status st = run_node(&n, &outs, &nouts, &err);
    EXPECT(st == CG_OK, "Resize int64: %s", err.msg);
    if (st == CG_OK) {
        const int64_t *y = outs[0].value->tensor.data;
        EXPECT(outs[0].value->tensor.numel == 4 && y[0] == INT64_MAX - 1 && y[1] == INT64_MAX - 1 &&
                   y[2] == -7 && y[3] == -7,
               "int64 nearest resize not exact");
        cg_runtime_free_outputs(outs, nouts);
    }
    free_inputs(&n);

    /* neither scales nor sizes */
    onenode e = {"Resize", 13, {"x"}, 1, 1, {{0}}, 0, {NULL}};
    e.in_vals[0] = make_tensor(CG_DTYPE_FLOAT, 2, xd, NULL);
    expect_fail(&e, "scales", "Resize without scales/sizes");
    free_inputs(&e);

    /* an unknown mode */
    double sc[2] = {1, 2};
    onenode m = {"Resize", 13, {"x", "", "s"}, 3, 1, {{0}}, 0, {NULL}};
    m.attrs[m.nattr++] = attr_str("mode", "quadratic");
    m.in_vals[0] = make_tensor(CG_DTYPE_FLOAT, 2, xd, NULL);
    m.in_vals[2] = make_tensor(CG_DTYPE_FLOAT, 1, sd, sc);
    expect_fail(&m, "quadratic", "Resize bad mode");
    free_inputs(&m);
}

static void test_dft_roundtrip(void)
{
    int64_t xd[3] = {1, 7, 1};
    double x[7] = {1, -2, 3.5, 0.25, 9, -1, 4};
    onenode f = {"DFT", 17, {"x"}, 1, 1, {{0}}, 0, {NULL}};
    f.in_vals[0] = make_tensor(CG_DTYPE_DOUBLE, 3, xd, x);
    int64_t n1 = 0;
    double *spec = run_values(&f, &n1, "DFT forward");
    free_inputs(&f);
    if (!spec)
        return;
    EXPECT(n1 == 14, "DFT output size %lld", (long long)n1);
    EXPECT(fabs(spec[0] - 14.75) < 1e-12 && fabs(spec[1]) < 1e-12, "DC term %g %g", spec[0], spec[1]);
    int64_t cd[3] = {1, 7, 2};
    onenode inv = {"DFT", 17, {"x"}, 1, 1, {{0}}, 0, {NULL}};
    inv.attrs[inv.nattr++] = attr_int("inverse", 1);
    inv.in_vals[0] = make_tensor(CG_DTYPE_DOUBLE, 3, cd, spec);
    int64_t n2 = 0;
    double *back = run_values(&inv, &n2, "DFT inverse");
    if (back) {
        double worst = 0;
        for (int i = 0; i < 7; i++)
            worst = fmax(worst, fmax(fabs(back[2 * i] - x[i]), fabs(back[2 * i + 1])));
        EXPECT(worst < 1e-12, "DFT round trip error %g", worst);
    }
    free(spec);
    free(back);
    free_inputs(&inv);

    /* axis on the complex component axis is rejected */
    onenode bad = {"DFT", 17, {"x"}, 1, 1, {{0}}, 0, {NULL}};
    bad.attrs[bad.nattr++] = attr_int("axis", 2);
    bad.in_vals[0] = make_tensor(CG_DTYPE_FLOAT, 3, xd, x);
    expect_fail(&bad, "axis", "DFT axis on last dim");
    free_inputs(&bad);
}

static void test_det(void)
{
    int64_t d[3] = {2, 3, 3};
    double m[18] = {2, 0, 1, 1, 3, 2, 1, 1, 2, /* det = 6 */
                    1, 2, 3, 2, 4, 6, 0, 1, 1 /* singular */};
    onenode n = {"Det", 11, {"x"}, 1, 1, {{0}}, 0, {NULL}};
    n.in_vals[0] = make_tensor(CG_DTYPE_DOUBLE, 3, d, m);
    int64_t cnt = 0;
    double *v = run_values(&n, &cnt, "Det");
    EXPECT(v && cnt == 2 && fabs(v[0] - 6.0) < 1e-12 && v[1] == 0.0, "det values %g %g",
           v ? v[0] : NAN, v ? v[1] : NAN);
    free(v);
    free_inputs(&n);
}

int main(void)
{
    test_nms_errors();
    test_roialign_errors();
    test_einsum();
    test_recurrent_directions("RNN", 1);
    test_recurrent_directions("GRU", 3);
    test_recurrent_directions("LSTM", 4);
    test_resize();
    test_dft_roundtrip();
    test_det();
    if (failures) {
        fprintf(stderr, "test_ops_misc: %d failure(s)\n", failures);
        return 1;
    }
    printf("test_ops_misc: ok\n");
    return 0;
}
