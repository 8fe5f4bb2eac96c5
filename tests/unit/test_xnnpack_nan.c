/*
 * NaN through the xnnpack executing target: this XNNPACK's binary kernels
 * are min/max-clamped even at -inf..inf, and the clamp turns a NaN into
 * -inf. The target must give NaN where the reference (and a modern
 * XNNPACK, whose binary ops are unclamped) gives NaN: a NaN entering, one
 * made inside from infinities (inf - inf, 0 * inf) and one made inside
 * from finite values (0 / 0). Finite runs stay on XNNPACK.
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
}

/* false (and a skip) without the xnnpack target */
static bool setup(const cg_model *m, xnn_setup *s)
{
    memset(s, 0, sizeof *s);
    cg_error err;
    cg_error_clear(&err);
    if (cg_target_registry_load(NULL, &s->reg, &err) != CG_OK)
        test_fatal("loading targets: %s", err.msg);
    s->xnn = cg_target_registry_find(s->reg, "xnnpack", &err);
    if (!s->xnn) {
        test_skip("xnnpack target not available (%s)", err.msg);
        return false;
    }
    const cg_target *targets[1] = {s->xnn};
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
    return s->a && s->del && s->ref;
}

static const cg_xnnpack_report *report(const xnn_setup *s)
{
    cg_error err;
    cg_error_clear(&err);
    cg_runtime_partition_info info;
    if (cg_runtime_partition_count(s->del) != 1 ||
        cg_runtime_partition_info_get(s->del, 0, &info, &err) != CG_OK)
        return NULL;
    return info.state;
}

/* Runs both runtimes on a, b; every output must match the reference
 * element for element (NaN where it has NaN, equal elsewhere). */
static void expect_same(const xnn_setup *s, const float *a, const float *b, const char *what)
{
    int64_t dims[1] = {N};
    double av[N], bv[N];
    for (int i = 0; i < N; i++) {
        av[i] = a[i];
        bv[i] = b[i];
    }
    cg_named_value feeds[2] = {{"a", test_value(CG_DTYPE_FLOAT, 1, dims, av)},
                               {"b", test_value(CG_DTYPE_FLOAT, 1, dims, bv)}};
    cg_named_value *ro = NULL, *xo = NULL;
    size_t nro = 0, nxo = 0;
    cg_error err;
    cg_error_clear(&err);
    EXPECT(cg_runtime_run(s->ref, feeds, 2, &ro, &nro, &err) == CG_OK, "%s: reference: %s",
           what, err.msg);
    EXPECT(cg_runtime_run(s->del, feeds, 2, &xo, &nxo, &err) == CG_OK, "%s: delegated: %s",
           what, err.msg);
    EXPECT(nro == 4 && nxo == 4, "%s: %zu and %zu outputs", what, nro, nxo);
    for (size_t o = 0; o < nro && o < nxo; o++) {
        const float *r = ro[o].value->tensor.data, *x = xo[o].value->tensor.data;
        for (int i = 0; i < N; i++)
            EXPECT(isnan(r[i]) ? isnan(x[i]) : r[i] == x[i],
                   "%s: output '%s'[%d]: xnnpack %g, reference %g", what, ro[o].name, i, x[i],
                   r[i]);
    }
    cg_runtime_free_outputs(ro, nro);
    cg_runtime_free_outputs(xo, nxo);
    cg_value_free(feeds[0].value);
    cg_value_free(feeds[1].value);
}

int main(void)
{
    cg_model *m = binary_model();
    xnn_setup s;
    if (setup(m, &s)) {
        const cg_xnnpack_report *r = report(&s);
        EXPECT(r && r->lowered_count == 5, "one partition of all 5 nodes: %zu",
               r ? r->lowered_count : 0);
        if (r) {
            const float one[N] = {1, 2, -3, 0.5f}, two[N] = {4, -1, 2, 8};
            expect_same(&s, one, two, "finite");
            EXPECT(r->runs == 1 && r->reference_runs == 0,
                   "a finite run stays on XNNPACK: %llu runs, %llu on the reference",
                   (unsigned long long)r->runs, (unsigned long long)r->reference_runs);

            const float nan_a[N] = {NAN, 1, 2, 3}, nan_b[N] = {1, 1, NAN, 1};
            expect_same(&s, nan_a, nan_b, "a NaN entering");
            const float inf_a[N] = {INFINITY, 0, -INFINITY, 1};
            const float inf_b[N] = {INFINITY, INFINITY, INFINITY, 1};
            expect_same(&s, inf_a, inf_b, "inf - inf, 0 * inf, inf / inf");
            const float zero_a[N] = {0, 1, 0, 2}, zero_b[N] = {0, 1, 0, 2};
            expect_same(&s, zero_a, zero_b, "0 / 0 from finite inputs");
            EXPECT(r->runs == 1 && r->reference_runs == 3,
                   "the three non-finite runs ran on the reference: %llu runs, %llu on the "
                   "reference",
                   (unsigned long long)r->runs, (unsigned long long)r->reference_runs);
        }
    }
    setup_free(&s);
    cg_model_free(m);
    return test_done("test_xnnpack_nan");
}
