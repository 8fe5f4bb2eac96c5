/*
 * NaN through the xnnpack executing target. This XNNPACK's binary,
 * convolution and pooling kernels are min/max-clamped even at -inf..inf,
 * and the clamp turns a NaN into +-inf. The target is nan_clamped
 * (target.h): the runtime keeps XNNPACK's outputs and puts NaN back only in
 * the lanes where XNNPACK has +-inf and the reference NaN.
 *
 *  - a NaN entering, one made from infinities (inf - inf, 0 * inf) and one
 *    made from finite values (0 / 0) come out NaN where the reference (and
 *    ONNX Runtime 1.22: the same chain and Conv + Add give NaN in the same
 *    lanes) has NaN, and equal elsewhere; XNNPACK ran every time;
 *  - a broken kernel (the real target with one output lane overwritten by
 *    +inf after its run) is not masked where the reference is finite, with
 *    or without NaN elsewhere in the run;
 *  - a NaN made inside a partition that a later node there makes finite
 *    again (0 / 0, then Relu) is not restored: the output differs from the
 *    reference, so a comparison FAILs instead of passing.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "convgate/model.h"
#include "convgate/partition.h"
#include "convgate/runtime.h"
#include "convgate/target.h"
#include "delegate/xnnpack/xnnpack.h"
#include "testlib.h"

#define N 4

/* one chain, one partition: s = a + b, p = s * b, q = p / a, r = (q - b) * b */
static cg_model *binary_model(void)
{
    cg_model *m = test_model_graph(13, 8, "a,b", "s,p,q,r");
    int64_t dims[1] = {N};
    for (size_t i = 0; i < 2; i++)
        m->graph->inputs[i].type = test_type(m, CG_DTYPE_FLOAT, 1, dims);
    test_node(m, m->graph, "Add", "add", "a,b", "s");
    test_node(m, m->graph, "Mul", "mul", "s,b", "p");
    test_node(m, m->graph, "Div", "div", "p,a", "q");
    test_node(m, m->graph, "Sub", "sub", "q,b", "d");
    test_node(m, m->graph, "Mul", "mul2", "d,b", "r");
    return m;
}

/* y = Conv(a as [1,1,2,2], 2x2 ones, pads 1) + 1 (as [1,1,3,3]), then
 * flattened: a NaN at one pixel reaches the four windows that cover it */
static cg_model *conv_model(void)
{
    cg_model *m = test_model_graph(13, 8, "a,b", "y");
    int64_t dims[1] = {N};
    for (size_t i = 0; i < 2; i++)
        m->graph->inputs[i].type = test_type(m, CG_DTYPE_FLOAT, 1, dims);
    static const float ones[4] = {1, 1, 1, 1};
    static const int64_t img[4] = {1, 1, 2, 2}, flat[1] = {9};
    int64_t wdims[4] = {1, 1, 2, 2}, one_dims[1] = {1}, img_dims[1] = {4}, flat_dims[1] = {1};
    test_graph_init_f32(m, m->graph, "w", 4, wdims, ones);
    test_graph_init_f32(m, m->graph, "one", 1, one_dims, ones);
    test_graph_init_raw(m, m->graph, "img", CG_DTYPE_INT64, 1, img_dims, img, sizeof img);
    test_graph_init_raw(m, m->graph, "flat", CG_DTYPE_INT64, 1, flat_dims, flat, sizeof flat);
    test_node(m, m->graph, "Reshape", "to_img", "a,img", "x");
    cg_node *c = test_node(m, m->graph, "Conv", "conv", "x,w", "c");
    static int64_t pads[4] = {1, 1, 1, 1}; /* attr_ints borrows */
    test_node_add_attr(c, attr_ints("pads", pads, 4));
    test_node(m, m->graph, "Add", "plus", "c,one", "z");
    test_node(m, m->graph, "Reshape", "to_flat", "z,flat", "y");
    return m;
}

/* q = a / b, r = Relu(q): 0 / 0 makes NaN inside, which Relu hides */
static cg_model *hidden_model(void)
{
    cg_model *m = test_model_graph(13, 8, "a,b", "r");
    int64_t dims[1] = {N};
    for (size_t i = 0; i < 2; i++)
        m->graph->inputs[i].type = test_type(m, CG_DTYPE_FLOAT, 1, dims);
    test_node(m, m->graph, "Div", "div", "a,b", "q");
    test_node(m, m->graph, "Relu", "relu", "q", "r");
    return m;
}

typedef struct xnn_setup {
    cg_target_registry *reg;
    const cg_target *xnn;
    cg_type_env *env;
    cg_assignment *a;
    cg_runtime *ref, *del;
} xnn_setup;

static void setup_free(xnn_setup *s)
{
    cg_runtime_free(s->del);
    cg_runtime_free(s->ref);
    cg_assignment_free(s->a);
    cg_type_env_free(s->env);
    cg_target_registry_free(s->reg);
    memset(s, 0, sizeof *s);
}

/* The xnnpack target, or NULL (and a skip) without it. */
static const cg_target *xnnpack(cg_target_registry **reg)
{
    cg_error err;
    cg_error_clear(&err);
    if (cg_target_registry_load(NULL, reg, &err) != CG_OK)
        test_fatal("loading targets: %s", err.msg);
    const cg_target *t = cg_target_registry_find(*reg, "xnnpack", &err);
    if (!t)
        test_skip("xnnpack target not available (%s)", err.msg);
    return t;
}

/* A reference runtime and one with m on target t (one partition). */
static bool setup(const cg_model *m, const cg_target *t, xnn_setup *s)
{
    cg_error err;
    cg_error_clear(&err);
    const cg_target *targets[1] = {t};
    cg_runtime_options opt;
    cg_runtime_options_default(&opt);
    EXPECT(cg_type_env_build(m, NULL, 0, &s->env, &err) == CG_OK, "types: %s", err.msg);
    EXPECT(s->env && cg_assign(m, s->env, targets, 1, &s->a, &err) == CG_OK, "assign: %s",
           err.msg);
    EXPECT(cg_runtime_init(m, &opt, &s->ref, &err) == CG_OK, "reference init: %s", err.msg);
    opt.assignment = s->a;
    opt.types = s->env;
    EXPECT(s->a && cg_runtime_init(m, &opt, &s->del, &err) == CG_OK, "delegated init: %s",
           err.msg);
    return s->a && s->del && s->ref && cg_runtime_partition_count(s->del) == 1;
}

static cg_runtime_partition_info info(const xnn_setup *s)
{
    cg_error err;
    cg_error_clear(&err);
    cg_runtime_partition_info pi;
    memset(&pi, 0, sizeof pi);
    EXPECT(cg_runtime_partition_info_get(s->del, 0, &pi, &err) == CG_OK, "info: %s", err.msg);
    return pi;
}

/* XNNPACK's own runs of the partition (the report its state starts with) */
static uint64_t xnn_runs(const xnn_setup *s)
{
    const cg_xnnpack_report *r = info(s).state;
    return r ? r->runs : 0;
}

/* Runs both runtimes on a, b: ro/xo get the outputs (free with
 * cg_runtime_free_outputs). */
static size_t run_both(const xnn_setup *s, const float *a, const float *b, const char *what,
                       cg_named_value **ro, cg_named_value **xo)
{
    int64_t dims[1] = {N};
    double av[N], bv[N];
    for (int i = 0; i < N; i++) {
        av[i] = a[i];
        bv[i] = b[i];
    }
    cg_named_value feeds[2] = {{"a", test_value(CG_DTYPE_FLOAT, 1, dims, av)},
                               {"b", test_value(CG_DTYPE_FLOAT, 1, dims, bv)}};
    size_t nro = 0, nxo = 0;
    cg_error err;
    cg_error_clear(&err);
    *ro = *xo = NULL;
    EXPECT(cg_runtime_run(s->ref, feeds, 2, ro, &nro, &err) == CG_OK, "%s: reference: %s",
           what, err.msg);
    EXPECT(cg_runtime_run(s->del, feeds, 2, xo, &nxo, &err) == CG_OK, "%s: delegated: %s",
           what, err.msg);
    EXPECT(nro == nxo, "%s: %zu and %zu outputs", what, nro, nxo);
    cg_value_free(feeds[0].value);
    cg_value_free(feeds[1].value);
    return nro < nxo ? nro : nxo;
}

/* Every output matches the reference element for element (NaN where it
 * has NaN, equal elsewhere); *nans counts the reference's NaN lanes. */
static void expect_same(const xnn_setup *s, const float *a, const float *b, const char *what,
                        size_t *nans)
{
    cg_named_value *ro, *xo;
    size_t n = run_both(s, a, b, what, &ro, &xo);
    for (size_t o = 0; o < n; o++) {
        const float *r = ro[o].value->tensor.data, *x = xo[o].value->tensor.data;
        for (int64_t i = 0; i < ro[o].value->tensor.numel; i++) {
            *nans += isnan(r[i]) != 0;
            EXPECT(isnan(r[i]) ? isnan(x[i]) : r[i] == x[i],
                   "%s: output '%s'[%lld]: xnnpack %g, reference %g", what, ro[o].name,
                   (long long)i, x[i], r[i]);
        }
    }
    cg_runtime_free_outputs(ro, n);
    cg_runtime_free_outputs(xo, n);
}

static void nan_kept(const cg_target *x)
{
    cg_model *m = binary_model();
    xnn_setup s = {0};
    if (setup(m, x, &s)) {
        const float one[N] = {1, 2, -3, 0.5f}, two[N] = {4, -1, 2, 8};
        size_t nans = 0;
        expect_same(&s, one, two, "finite", &nans);
        cg_runtime_partition_info pi = info(&s);
        EXPECT(xnn_runs(&s) == 1 && pi.nan_checks == 0,
               "a finite run: XNNPACK ran (%llu) and nothing was checked (%llu)",
               (unsigned long long)xnn_runs(&s), (unsigned long long)pi.nan_checks);

        const float nan_a[N] = {NAN, 1, 2, 3}, nan_b[N] = {1, 1, NAN, 1};
        expect_same(&s, nan_a, nan_b, "a NaN entering", &nans);
        const float inf_a[N] = {INFINITY, 0, -INFINITY, 1};
        const float inf_b[N] = {INFINITY, INFINITY, INFINITY, 1};
        expect_same(&s, inf_a, inf_b, "inf - inf, 0 * inf, inf / inf", &nans);
        const float zero_a[N] = {0, 1, 0, 2}, zero_b[N] = {0, 1, 0, 2};
        expect_same(&s, zero_a, zero_b, "0 / 0 from finite inputs", &nans);
        pi = info(&s);
        EXPECT(xnn_runs(&s) == 4, "XNNPACK ran every time: %llu runs",
               (unsigned long long)xnn_runs(&s));
        EXPECT(pi.nan_checks == 3 && pi.nan_restored > 0 && pi.nan_restored <= nans,
               "three runs checked (%llu), %llu lanes restored of %zu NaN lanes",
               (unsigned long long)pi.nan_checks, (unsigned long long)pi.nan_restored, nans);
    }
    setup_free(&s);
    cg_model_free(m);

    m = conv_model();
    if (setup(m, x, &s)) {
        const float nan_a[N] = {NAN, 1, 2, 3}, b[N] = {0, 0, 0, 0};
        size_t nans = 0;
        expect_same(&s, nan_a, b, "a NaN through Conv and Add", &nans);
        cg_runtime_partition_info pi = info(&s);
        EXPECT(nans == 4 && pi.nan_restored == 4 && xnn_runs(&s) == 1,
               "the four windows over the NaN pixel: %zu NaN lanes, %llu restored, %llu runs",
               nans, (unsigned long long)pi.nan_restored, (unsigned long long)xnn_runs(&s));
    }
    setup_free(&s);
    cg_model_free(m);
}

/* --- a broken kernel ------------------------------------------------------------- */

static cg_target_vtable broken_vt;
static cg_status (*real_run)(void *, const cg_value *const *, cg_value **, cg_error *);

/* The real XNNPACK run, then output 0's lane 1 set to +inf. */
static cg_status broken_run(void *state, const cg_value *const *inputs, cg_value **outputs,
                            cg_error *err)
{
    cg_status st = real_run(state, inputs, outputs, err);
    if (st == CG_OK && outputs[0] && outputs[0]->tensor.numel > 1)
        ((float *)outputs[0]->tensor.data)[1] = INFINITY;
    return st;
}

static void broken_not_masked(const cg_target *x)
{
    broken_vt = *x->vt;
    real_run = x->vt->run;
    broken_vt.run = broken_run;
    cg_target broken = *x;
    broken.vt = &broken_vt;
    cg_model *m = binary_model();
    xnn_setup s = {0};
    if (setup(m, &broken, &s)) {
        const float one[N] = {1, 2, -3, 0.5f}, two[N] = {4, -1, 2, 8};
        const float nan_a[N] = {NAN, 1, 2, 3}, nan_b[N] = {1, 1, NAN, 1};
        const float *cases[2][2] = {{one, two}, {nan_a, nan_b}};
        for (int c = 0; c < 2; c++) {
            const char *what = c ? "inf injected, NaN elsewhere" : "inf injected";
            cg_named_value *ro, *xo;
            size_t n = run_both(&s, cases[c][0], cases[c][1], what, &ro, &xo);
            if (n) {
                const float *r = ro[0].value->tensor.data, *xv = xo[0].value->tensor.data;
                EXPECT(isfinite(r[1]) && xv[1] == INFINITY,
                       "%s: '%s'[1] is still inf (%g) where the reference is finite (%g)",
                       what, ro[0].name, xv[1], r[1]);
                EXPECT(!c || (isnan(r[0]) && isnan(xv[0])), "%s: '%s'[0] restored to NaN: %g",
                       what, ro[0].name, xv[0]);
            }
            cg_runtime_free_outputs(ro, n);
            cg_runtime_free_outputs(xo, n);
        }
        cg_runtime_partition_info pi = info(&s);
        EXPECT(pi.nan_checks == 2 && xnn_runs(&s) == 2,
               "both runs checked against the reference (%llu) and ran on XNNPACK (%llu)",
               (unsigned long long)pi.nan_checks, (unsigned long long)xnn_runs(&s));
    }
    setup_free(&s);
    cg_model_free(m);
}

/* --- a NaN hidden inside the partition ------------------------------------------ */

static void hidden_nan_differs(const cg_target *x)
{
    cg_model *m = hidden_model();
    xnn_setup s = {0};
    if (setup(m, x, &s)) {
        const float a[N] = {0, 1, 0, 2}, b[N] = {0, 1, 0, 2};
        cg_named_value *ro, *xo;
        size_t n = run_both(&s, a, b, "0 / 0, then Relu", &ro, &xo);
        if (n) {
            const float *r = ro[0].value->tensor.data, *xv = xo[0].value->tensor.data;
            /* the limit stated in xnnpack_target.c: were it restored, this
             * test should say so */
            EXPECT(isnan(r[0]) && !isnan(xv[0]) && isfinite(xv[0]),
                   "the reference keeps the NaN (%g), XNNPACK's Relu hides it (%g)", r[0],
                   xv[0]);
            EXPECT(r[1] == 1 && xv[1] == 1, "the finite lane: %g and %g", r[1], xv[1]);
        }
        cg_runtime_free_outputs(ro, n);
        cg_runtime_free_outputs(xo, n);
        EXPECT(info(&s).nan_checks == 0, "no infinite lane, nothing checked");
    }
    setup_free(&s);
    cg_model_free(m);
}

int main(void)
{
    cg_target_registry *reg = NULL;
    const cg_target *x = xnnpack(&reg);
    if (x) {
        EXPECT(x->nan_clamped, "the xnnpack target says its kernels clamp NaN");
        nan_kept(x);
        broken_not_masked(x);
        hidden_nan_differs(x);
    }
    cg_target_registry_free(reg);
    return test_done("test_xnnpack_nan");
}
