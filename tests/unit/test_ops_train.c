/*
 * Unit tests for the training family: what the ONNX backend data does not
 * cover.
 *  - Error paths: an out-of-range loss target (not ignore_index), a bad
 *    Momentum mode, mismatched optimizer shapes, an op Gradient cannot
 *    differentiate, a value the Gradient sub-graph needs but cannot reach --
 *    each must fail with a message naming the node and the culprit.
 *  - NegativeLogLikelihoodLoss with a negative ignore_index and weights:
 *    "mean" divides by the sum of the weights actually selected.
 *  - Gradient through MatMul, broadcast Add/Sum/Div, Sub, Neg, Tanh,
 *    Sigmoid, Exp, Log, Relu and Identity agrees with central finite
 *    differences of the same graph run forward by the runtime's own kernels.
 *
 * Each case builds a small model in memory and runs it through the public
 * runtime API.
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

#define MAX_IO 8
#define MAX_NODES 16
#define TRAINING "ai.onnx.preview.training"

/* One node of a test graph. */
typedef struct tnode {
    const char *op;
    const char *domain;
    const char *name;
    const char *in[MAX_IO];
    size_t nin;
    const char *out[MAX_IO];
    size_t nout;
    cg_attr attrs[6];
    size_t nattr;
} tnode;

/* A test graph: nodes, fed inputs (name + double values) and outputs. */
typedef struct tgraph {
    tnode nodes[MAX_NODES];
    size_t nn;
    const char *in_names[MAX_IO];
    cg_dtype in_dtype[MAX_IO];
    int in_rank[MAX_IO];
    int64_t in_dims[MAX_IO][4];
    double *in_data[MAX_IO];
    size_t nin;
    const char *outs[MAX_IO];
    size_t nout;
} tgraph;

static void add_input(tgraph *g, const char *name, cg_dtype dt, int rank, const int64_t *dims,
                      double *data)
{
    size_t i = g->nin++;
    g->in_names[i] = name;
    g->in_dtype[i] = dt;
    g->in_rank[i] = rank;
    for (int d = 0; d < rank; d++)
        g->in_dims[i][d] = dims[d];
    g->in_data[i] = data;
}

static tnode *add_node(tgraph *g, const char *op, const char *domain, const char *name)
{
    tnode *n = &g->nodes[g->nn++];
    memset(n, 0, sizeof *n);
    n->op = op;
    n->domain = domain;
    n->name = name;
    return n;
}

/* Runs the graph; fills outs (caller frees with cg_runtime_free_outputs). */
static cg_status run_graph(const tgraph *t, cg_named_value **outs, size_t *nouts, cg_error *err)
{
    cg_model *m = test_model_new(13);
    test_model_import(m, TRAINING, 1);
    cg_graph *g = test_graph_new(m, "train_test", t->nn);
    m->graph = g;
    for (size_t i = 0; i < t->nn; i++) {
        const tnode *s = &t->nodes[i];
        cg_node *n = test_node(m, g, s->op, s->name, "", "");
        n->domain = s->domain;
        n->inputs = (const char **)s->in;
        n->input_count = s->nin;
        n->outputs = (const char **)s->out;
        n->output_count = s->nout;
        for (size_t a = 0; a < s->nattr; a++)
            test_node_add_attr(n, s->attrs[a]);
    }
    cg_named_value feeds[MAX_IO];
    for (size_t i = 0; i < t->nin; i++) {
        test_graph_input(g, t->in_names[i], test_type(m, t->in_dtype[i], -1, NULL));
        feeds[i].name = t->in_names[i];
        feeds[i].value = test_value(t->in_dtype[i], t->in_rank[i], t->in_dims[i], t->in_data[i]);
    }
    for (size_t i = 0; i < t->nout; i++) {
        cg_type *ty = test_type(m, CG_DTYPE_FLOAT, -1, NULL);
        ty->has_elem_type = false;
        test_graph_output(g, t->outs[i], ty);
    }
    cg_error_clear(err);
    cg_status st = test_model_run(m, 0, feeds, t->nin, outs, nouts, err);
    for (size_t i = 0; i < t->nin; i++)
        cg_value_free(feeds[i].value);
    cg_model_free(m);
    return st;
}

/* Expects a failure whose message names `node` and contains `needle`. */
static void expect_fail(const tgraph *t, const char *node, const char *needle, const char *what)
{
    cg_named_value *outs = NULL;
    size_t nouts = 0;
    cg_error err;
    cg_status st = run_graph(t, &outs, &nouts, &err);
    EXPECT(st != CG_OK, "%s: expected a failure", what);
    if (st == CG_OK) {
        cg_runtime_free_outputs(outs, nouts);
        return;
    }
    EXPECT(strstr(err.msg, node) != NULL, "%s: message does not name '%s': %s", what, node,
           err.msg);
    EXPECT(strstr(err.msg, needle) != NULL, "%s: message lacks '%s': %s", what, needle,
           err.msg);
}

/* Runs and copies output `which` to vals (at most cap); returns its numel
 * or -1 on failure. */
static int64_t run_output(const tgraph *t, size_t which, double *vals, int64_t cap,
                          const char *what)
{
    cg_named_value *outs = NULL;
    size_t nouts = 0;
    cg_error err;
    cg_status st = run_graph(t, &outs, &nouts, &err);
    EXPECT(st == CG_OK, "%s: run failed: %s", what, err.msg);
    if (st != CG_OK)
        return -1;
    int64_t n = -1;
    if (which < nouts) {
        const cg_tensor *r = &outs[which].value->tensor;
        n = r->numel;
        for (int64_t i = 0; i < n && i < cap; i++)
            vals[i] = cg_tensor_get_f64(r, i);
    }
    cg_runtime_free_outputs(outs, nouts);
    return n;
}

/* --- losses ----------------------------------------------------------------- */

static void nll_graph(tgraph *g, double *x, double *target, double *weight, int64_t ii,
                      const char *reduction)
{
    memset(g, 0, sizeof *g);
    int64_t xd[2] = {2, 3}, td[1] = {2}, wd[1] = {3};
    add_input(g, "x", CG_DTYPE_FLOAT, 2, xd, x);
    add_input(g, "t", CG_DTYPE_INT64, 1, td, target);
    tnode *n = add_node(g, "NegativeLogLikelihoodLoss", "", "nll_node");
    n->in[n->nin++] = "x";
    n->in[n->nin++] = "t";
    if (weight) {
        add_input(g, "w", CG_DTYPE_FLOAT, 1, wd, weight);
        n->in[n->nin++] = "w";
    }
    n->out[n->nout++] = "loss";
    n->attrs[n->nattr++] = attr_str("reduction", reduction);
    n->attrs[n->nattr++] = attr_int("ignore_index", ii);
    g->outs[g->nout++] = "loss";
}

static void test_losses(void)
{
    double x[6] = {-0.1, -0.2, -0.3, -0.4, -0.5, -0.6};
    double w[3] = {1, 2, 3};
    tgraph g;

    /* target 3 with C = 3 is out of range and not ignore_index (-1). */
    double bad[2] = {0, 3};
    nll_graph(&g, x, bad, NULL, -1, "none");
    expect_fail(&g, "nll_node", "target value 3", "NLL target 3 of 3 classes");

    /* -2 is negative but ignore_index is -1: still out of range. */
    double neg[2] = {-2, 0};
    nll_graph(&g, x, neg, w, -1, "sum");
    expect_fail(&g, "nll_node", "target value -2", "NLL target -2");

    /* Element 1 is ignored (target -1 == ignore_index); element 0 picks
     * class 2 with weight 3: mean = 3 * 0.3 / 3 = 0.3, sum = 0.9. */
    double ok[2] = {2, -1}, v[2];
    nll_graph(&g, x, ok, w, -1, "mean");
    int64_t n = run_output(&g, 0, v, 1, "NLL weighted mean, negative ignore_index");
    EXPECT(n == 1 && fabs(v[0] - 0.3) < 1e-6, "weighted mean: got %g, want 0.3", v[0]);
    nll_graph(&g, x, ok, w, -1, "sum");
    n = run_output(&g, 0, v, 1, "NLL weighted sum");
    EXPECT(n == 1 && fabs(v[0] - 0.9) < 1e-6, "weighted sum: got %g, want 0.9", v[0]);
    nll_graph(&g, x, ok, w, -1, "none");
    n = run_output(&g, 0, v, 2, "NLL none");
    EXPECT(n == 2 && fabs(v[0] - 0.9) < 1e-6 && v[1] == 0.0, "none: got %g %g, want 0.9 0",
           v[0], v[1]);

    /* A bad reduction is rejected by name. */
    nll_graph(&g, x, ok, w, -1, "average");
    expect_fail(&g, "nll_node", "average", "NLL reduction 'average'");
}

/* --- optimizers ---------------------------------------------------------- */

static void test_optimizers(void)
{
    double r[1] = {0.1}, t[1] = {1}, x[2] = {1, 2}, gr[2] = {0.5, -0.5}, v[3] = {0, 0, 0};
    /* v has room for 3: the shape-mismatch case below declares V as [3] */
    int64_t d2[1] = {2};
    tgraph g;
    memset(&g, 0, sizeof g);
    add_input(&g, "R", CG_DTYPE_FLOAT, 0, NULL, r);
    add_input(&g, "T", CG_DTYPE_INT64, 0, NULL, t);
    add_input(&g, "X", CG_DTYPE_FLOAT, 1, d2, x);
    add_input(&g, "G", CG_DTYPE_FLOAT, 1, d2, gr);
    add_input(&g, "V", CG_DTYPE_FLOAT, 1, d2, v);
    tnode *n = add_node(&g, "Momentum", TRAINING, "momentum_node");
    const char *ins[5] = {"R", "T", "X", "G", "V"};
    for (int i = 0; i < 5; i++)
        n->in[n->nin++] = ins[i];
    n->out[n->nout++] = "X_new";
    n->out[n->nout++] = "V_new";
    n->attrs[n->nattr++] = attr_float("alpha", 0.9f);
    n->attrs[n->nattr++] = attr_float("beta", 0.5f);
    n->attrs[n->nattr++] = attr_float("norm_coefficient", 0.0f);
    n->attrs[n->nattr++] = attr_str("mode", "heavy-ball");
    g.outs[g.nout++] = "X_new";
    g.outs[g.nout++] = "V_new";
    expect_fail(&g, "momentum_node", "heavy-ball", "Momentum bad mode");

    /* Nesterov at T = 1: v' = 0.9*0 + 0.5*g; x' = x - 0.1 * (g + 0.9 * v'). */
    n->attrs[3] = attr_str("mode", "nesterov");
    double out[2];
    int64_t cnt = run_output(&g, 0, out, 2, "Nesterov momentum");
    for (int i = 0; cnt == 2 && i < 2; i++) {
        double want = x[i] - 0.1 * (gr[i] + 0.9 * 0.5 * gr[i]);
        EXPECT(fabs(out[i] - want) < 1e-6, "nesterov x[%d]: got %g, want %g", i, out[i], want);
    }

    /* V of a different shape than X. */
    g.in_dims[4][0] = 3;
    expect_fail(&g, "momentum_node", "shape", "Momentum state shape mismatch");
}

/* --- Gradient ------------------------------------------------------------- */

/* The forward graph (opset 13) used by the finite-difference check:
 *   S = MatMul(A, B) + bias      (bias [2] broadcast over rows)
 *   T = Tanh(S), G = Sigmoid(S)
 *   Q = Div(Mul(T, G), Sub(Exp(G), Neg(bias)))
 *   y = Sum(Identity(Relu(Q)), bias, Log(G))
 * and a Gradient node for y with xs = [A, B, bias]. */
static void grad_graph(tgraph *g, double *a, double *b, double *bias, cg_bytes *store)
{
    memset(g, 0, sizeof *g);
    int64_t ad[2] = {2, 3}, bd[2] = {3, 2}, cd[1] = {2};
    add_input(g, "A", CG_DTYPE_DOUBLE, 2, ad, a);
    add_input(g, "B", CG_DTYPE_DOUBLE, 2, bd, b);
    add_input(g, "bias", CG_DTYPE_DOUBLE, 1, cd, bias);
    static const struct {
        const char *op, *in0, *in1, *out;
    } fwd[] = {
        {"MatMul", "A", "B", "M"},  {"Add", "M", "bias", "S"},  {"Tanh", "S", NULL, "T"},
        {"Sigmoid", "S", NULL, "G"}, {"Mul", "T", "G", "P"},     {"Exp", "G", NULL, "EG"},
        {"Neg", "bias", NULL, "NB"}, {"Sub", "EG", "NB", "Den"}, {"Div", "P", "Den", "Q"},
        {"Relu", "Q", NULL, "RQ"},  {"Identity", "RQ", NULL, "IQ"}, {"Log", "G", NULL, "LG"},
    };
    for (size_t i = 0; i < sizeof fwd / sizeof fwd[0]; i++) {
        tnode *n = add_node(g, fwd[i].op, "", fwd[i].out);
        n->in[n->nin++] = fwd[i].in0;
        if (fwd[i].in1)
            n->in[n->nin++] = fwd[i].in1;
        n->out[n->nout++] = fwd[i].out;
    }
    tnode *sum = add_node(g, "Sum", "", "sum_node");
    sum->in[sum->nin++] = "IQ";
    sum->in[sum->nin++] = "bias";
    sum->in[sum->nin++] = "LG";
    sum->out[sum->nout++] = "y";
    static const char *const xs[3] = {"A", "B", "bias"};
    tnode *gr = add_node(g, "Gradient", TRAINING, "grad_node");
    for (int i = 0; i < 3; i++) {
        gr->in[gr->nin++] = xs[i];
        gr->out[gr->nout++] = i == 0 ? "dA" : i == 1 ? "dB" : "dbias";
    }
    gr->attrs[gr->nattr++] = attr_strs("xs", store, xs, 3);
    gr->attrs[gr->nattr++] = attr_str("y", "y");
    g->outs[g->nout++] = "y";
    g->outs[g->nout++] = "dA";
    g->outs[g->nout++] = "dB";
    g->outs[g->nout++] = "dbias";
}

/* Sum of y's elements for the current inputs. */
static double sum_y(const tgraph *g)
{
    double y[4] = {0};
    int64_t n = run_output(g, 0, y, 4, "forward for finite differences");
    double s = 0.0;
    for (int64_t i = 0; i < n; i++)
        s += y[i];
    return s;
}

static void test_gradient_fd(void)
{
    double a[6] = {0.3, -0.2, 0.5, 0.1, 0.4, -0.6};
    double b[6] = {0.2, 0.7, -0.3, 0.1, 0.6, -0.4};
    double bias[2] = {0.5, 1.5};
    double *vars[3] = {a, b, bias};
    int64_t sizes[3] = {6, 6, 2};
    cg_bytes store[3];
    tgraph g;
    grad_graph(&g, a, b, bias, store);
    for (size_t v = 0; v < 3; v++) {
        double grad[6] = {0};
        int64_t n = run_output(&g, 1 + v, grad, 6, "Gradient");
        EXPECT(n == sizes[v], "gradient %zu has %lld elements, want %lld", v, (long long)n,
               (long long)sizes[v]);
        for (int64_t e = 0; n == sizes[v] && e < n; e++) {
            const double h = 1e-5;
            double keep = vars[v][e];
            vars[v][e] = keep + h;
            double up = sum_y(&g);
            vars[v][e] = keep - h;
            double down = sum_y(&g);
            vars[v][e] = keep;
            double fd = (up - down) / (2 * h);
            EXPECT(fabs(fd - grad[e]) < 1e-6 + 1e-5 * fabs(fd),
                   "d y / d input %zu [%lld]: Gradient %.9g, finite difference %.9g", v,
                   (long long)e, grad[e], fd);
        }
    }
}

static void test_gradient_errors(void)
{
    double a[2] = {1, 2}, c[2] = {3, 4};
    int64_t d[1] = {2};
    cg_bytes store[2];
    static const char *const xa[1] = {"A"}, *const zc[1] = {"C"};
    tgraph g;

    /* Softmax lies between xs and y: not differentiable here. */
    memset(&g, 0, sizeof g);
    add_input(&g, "A", CG_DTYPE_FLOAT, 1, d, a);
    tnode *n = add_node(&g, "Softmax", "", "softmax_node");
    n->in[n->nin++] = "A";
    n->out[n->nout++] = "y";
    n = add_node(&g, "Gradient", TRAINING, "grad_node");
    n->in[n->nin++] = "A";
    n->out[n->nout++] = "dA";
    n->attrs[n->nattr++] = attr_strs("xs", store, xa, 1);
    n->attrs[n->nattr++] = attr_str("y", "y");
    g.outs[g.nout++] = "y";
    g.outs[g.nout++] = "dA";
    expect_fail(&g, "grad_node", "Softmax", "Gradient through Softmax");

    /* y = A + C where C is a graph input the Gradient node is not given. */
    memset(&g, 0, sizeof g);
    add_input(&g, "A", CG_DTYPE_FLOAT, 1, d, a);
    add_input(&g, "C", CG_DTYPE_FLOAT, 1, d, c);
    n = add_node(&g, "Mul", "", "mul_node");
    n->in[n->nin++] = "A";
    n->in[n->nin++] = "C";
    n->out[n->nout++] = "y";
    tnode *gr = add_node(&g, "Gradient", TRAINING, "grad_node");
    gr->in[gr->nin++] = "A";
    gr->out[gr->nout++] = "dA";
    gr->attrs[gr->nattr++] = attr_strs("xs", store, xa, 1);
    gr->attrs[gr->nattr++] = attr_str("y", "y");
    g.outs[g.nout++] = "y";
    g.outs[g.nout++] = "dA";
    expect_fail(&g, "grad_node", "'C'", "Gradient missing zs value");

    /* With zs = [C] it works: d(A*C)/dA = C. */
    gr->in[gr->nin++] = "C";
    gr->attrs[gr->nattr++] = attr_strs("zs", store + 1, zc, 1);
    double v[2] = {0};
    int64_t cnt = run_output(&g, 1, v, 2, "Gradient with zs");
    EXPECT(cnt == 2 && v[0] == 3 && v[1] == 4, "d(A*C)/dA: got %g %g, want 3 4", v[0], v[1]);
}

int main(void)
{
    test_losses();
    test_optimizers();
    test_gradient_fd();
    test_gradient_errors();
    return test_done("test_ops_train");
}
