/*
 * The XNNPACK delegate builds a partition whose constants pass its segment
 * budget (16 MiB) as several runtimes, one per segment of its nodes, so
 * that XNNPACK's creation holds one segment's filter sources at a time
 * (xnnpack_target.c, "segments"). Checked on four 3x3 convolutions of
 * 512x512 (9.4 MB of filter each, reordered to OHWI through transient
 * buffers), one per segment:
 *  - the partition is built as four runtimes, and two values cross between
 *    them besides a partition output that a later segment reads too;
 *  - at most one segment's transient filters are alive at once;
 *  - both outputs match the reference runtime, on two runs;
 *  - a partition under the budget stays one runtime.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "convgate/partition.h"
#include "convgate/runtime.h"
#include "convgate/target.h"
#include "delegate/xnnpack/xnnpack.h"
#include "testlib.h"

#define C 512
#define S 4
#define WN ((size_t)C * C * 9)
#define CONVS 4

static float *weights[CONVS];

/* x -> conv0 -> relu = mid (an output, and read again by the add)
 *   -> conv1 -> conv2 -> + mid -> conv3 = y */
static cg_model *chain_model(void)
{
    cg_model *m = test_model_graph(13, 8, "x", "y,mid");
    int64_t wd[4] = {C, C, 3, 3}, xd[4] = {1, C, S, S};
    const char *names[CONVS] = {"w0", "w1", "w2", "w3"};
    for (int k = 0; k < CONVS; k++)
        test_graph_init_raw(m, m->graph, names[k], CG_DTYPE_FLOAT, 4, wd, weights[k],
                            WN * sizeof(float));
    static int64_t pads[4] = {1, 1, 1, 1}; /* the attribute points at them */
    cg_node *n[CONVS];
    n[0] = test_node(m, m->graph, "Conv", "conv0", "x,w0", "a0");
    test_node(m, m->graph, "Relu", "relu0", "a0", "mid");
    n[1] = test_node(m, m->graph, "Conv", "conv1", "mid,w1", "a1");
    n[2] = test_node(m, m->graph, "Conv", "conv2", "a1,w2", "a2");
    test_node(m, m->graph, "Add", "skip", "a2,mid", "s");
    n[3] = test_node(m, m->graph, "Conv", "conv3", "s,w3", "y");
    for (int k = 0; k < CONVS; k++)
        test_node_add_attr(n[k], attr_ints("pads", pads, 4));
    m->graph->inputs[0].type = test_type(m, CG_DTYPE_FLOAT, 4, xd);
    return m;
}

/* One Conv: under the budget. */
static cg_model *one_conv_model(void)
{
    cg_model *m = test_model_graph(13, 2, "x", "y");
    int64_t wd[4] = {C, C, 3, 3}, xd[4] = {1, C, S, S};
    test_graph_init_raw(m, m->graph, "w0", CG_DTYPE_FLOAT, 4, wd, weights[0],
                        WN * sizeof(float));
    m->graph->inputs[0].type = test_type(m, CG_DTYPE_FLOAT, 4, xd);
    test_node(m, m->graph, "Conv", "conv0", "x,w0", "y");
    return m;
}

static cg_value *input(void)
{
    cg_tensor t;
    cg_error err;
    cg_error_clear(&err);
    int64_t xd[4] = {1, C, S, S};
    if (cg_tensor_alloc(&t, CG_DTYPE_FLOAT, 4, xd, 0, &err) != CG_OK)
        return NULL;
    float *x = t.data;
    for (int64_t i = 0; i < t.numel; i++)
        x[i] = (float)((i * 7) % 11) / 10.0f;
    cg_value *v = NULL;
    if (cg_value_from_tensor(&t, &v, &err) != CG_OK)
        cg_tensor_release(&t);
    return v;
}

/* The outputs of one run of rt (NULL on failure; *n of them). */
static cg_named_value *run(cg_runtime *rt, size_t *n)
{
    cg_error err;
    cg_error_clear(&err);
    cg_value *x = input();
    cg_named_value feed = {"x", x}, *outs = NULL;
    *n = 0;
    cg_status st = x ? cg_runtime_run(rt, &feed, 1, &outs, n, &err) : CG_NOMEM;
    EXPECT(st == CG_OK, "run: %s", err.msg);
    cg_value_free(x);
    return st == CG_OK ? outs : NULL;
}

/* max |a - b| / max |b| over the outputs named alike, a float32 and b a
 * float64 run's; -1 when an output is missing or differs in size. */
static double rel_err(const cg_named_value *a, const cg_named_value *b, size_t n)
{
    double worst = 0;
    for (size_t i = 0; i < n; i++) {
        const cg_tensor *ta = &a[i].value->tensor, *tb = &b[i].value->tensor;
        if (strcmp(a[i].name, b[i].name) != 0 || ta->numel != tb->numel || ta->numel == 0 ||
            ta->dtype != CG_DTYPE_FLOAT || tb->dtype != CG_DTYPE_DOUBLE)
            return -1;
        double d = 0, m = 0;
        const float *pa = ta->data;
        const double *pb = tb->data;
        for (int64_t k = 0; k < ta->numel; k++) {
            d = fmax(d, fabs((double)pa[k] - pb[k]));
            m = fmax(m, fabs(pb[k]));
        }
        worst = fmax(worst, m > 0 ? d / m : d);
    }
    return worst;
}

static bool same_bits(const cg_named_value *a, const cg_named_value *b, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (a[i].value->tensor.numel != b[i].value->tensor.numel ||
            memcmp(a[i].value->tensor.data, b[i].value->tensor.data,
                   cg_tensor_bytes(&b[i].value->tensor)) != 0)
            return false;
    return true;
}

/* The delegated runtime of m on xnnpack (one partition) and its report. */
static cg_runtime *delegated(const cg_model *m, const cg_target *xnn, cg_type_env **env,
                             cg_assignment **a, const cg_xnnpack_report **rep)
{
    cg_error err;
    cg_error_clear(&err);
    *rep = NULL;
    cg_runtime *rt = NULL;
    if (cg_type_env_build(m, NULL, 0, env, &err) != CG_OK ||
        cg_assign(m, *env, &xnn, 1, a, &err) != CG_OK) {
        EXPECT(false, "typing and assigning: %s", err.msg);
        return NULL;
    }
    EXPECT((*a)->partition_count == 1, "one partition: %zu", (*a)->partition_count);
    cg_runtime_options o;
    cg_runtime_options_default(&o);
    o.threads = 1;
    o.assignment = *a;
    o.types = *env;
    if (cg_runtime_init(m, &o, &rt, &err) != CG_OK) {
        EXPECT(false, "the xnnpack runtime: %s", err.msg);
        return NULL;
    }
    cg_runtime_partition_info info;
    if (cg_runtime_partition_count(rt) == 1 &&
        cg_runtime_partition_info_get(rt, 0, &info, &err) == CG_OK)
        *rep = info.state;
    EXPECT(*rep != NULL, "the partition's report: %s", err.msg);
    return rt;
}

int main(void)
{
    cg_error err;
    cg_error_clear(&err);
    cg_target_registry *reg = NULL;
    if (cg_target_registry_load(NULL, &reg, &err) != CG_OK) {
        EXPECT(false, "loading targets: %s", err.msg);
        return test_done("test_xnnpack_segments");
    }
    const cg_target *xnn = cg_target_registry_find(reg, "xnnpack", &err);
    if (!xnn) {
        test_skip("xnnpack target not built (%s)", err.msg);
        cg_target_registry_free(reg);
        return test_done("test_xnnpack_segments");
    }
    for (int k = 0; k < CONVS; k++) {
        weights[k] = malloc(WN * sizeof(float));
        if (!weights[k])
            test_fatal("out of memory for the filters");
        for (size_t i = 0; i < WN; i++)
            weights[k][i] = ((float)((i * 13 + (size_t)k * 5) % 17) / 16.0f - 0.5f) / 64.0f;
    }
    const size_t filter_bytes = WN * sizeof(float);

    cg_model *m = chain_model();
    cg_type_env *env = NULL;
    cg_assignment *a = NULL;
    const cg_xnnpack_report *rep = NULL;
    cg_runtime *del = delegated(m, xnn, &env, &a, &rep), *ref = NULL;
    if (rep) {
        EXPECT(rep->lowered_count == 6, "every node lowered: %zu", rep->lowered_count);
        EXPECT(rep->segments == CONVS, "one segment per 9.4 MB filter: %zu segments",
               rep->segments);
        EXPECT(rep->crossing_values == 2, "a1 and s cross segments (mid is an output): %zu",
               rep->crossing_values);
        EXPECT(rep->transient_bytes_freed >= CONVS * filter_bytes,
               "every filter's transient freed: %zu bytes", rep->transient_bytes_freed);
        EXPECT(rep->transient_bytes_peak >= filter_bytes &&
                   rep->transient_bytes_peak < 2 * filter_bytes,
               "one segment's filter alive at a time: %zu bytes at most (one is %zu)",
               rep->transient_bytes_peak, filter_bytes);
    }
    /* the reference in float32 and in float64: XNNPACK's error against
     * float64 is fp32 noise when it is within a few times the float32
     * reference's own (its sums run in another order); a wrong crossing
     * (a stale or misread buffer) is off by the values themselves */
    cg_runtime *ref64 = NULL;
    cg_runtime_options o;
    cg_runtime_options_default(&o);
    o.threads = 1;
    if (cg_runtime_init(m, &o, &ref, &err) != CG_OK)
        EXPECT(false, "the reference runtime: %s", err.msg);
    o.float64 = true;
    if (cg_runtime_init(m, &o, &ref64, &err) != CG_OK)
        EXPECT(false, "the float64 reference runtime: %s", err.msg);
    size_t nd = 0, nd2 = 0, nr = 0, n64 = 0;
    cg_named_value *got = del ? run(del, &nd) : NULL;
    cg_named_value *again = del ? run(del, &nd2) : NULL;
    cg_named_value *want = ref ? run(ref, &nr) : NULL;
    cg_named_value *truth = ref64 ? run(ref64, &n64) : NULL;
    if (got && want && again && truth) {
        EXPECT(nd == 2 && nr == 2 && nd2 == 2 && n64 == 2, "two outputs each: %zu, %zu, %zu",
               nd, nr, n64);
        double e_ref = rel_err(want, truth, 2), e_xnn = rel_err(got, truth, 2);
        EXPECT(e_ref >= 0 && e_xnn >= 0 && e_xnn <= 4 * fmax(e_ref, 1e-7),
               "y and mid: XNNPACK's error against float64 %g, within 4x the float32 "
               "reference's %g", e_xnn, e_ref);
        EXPECT(same_bits(got, again, nd), "a second run gives the same bits");
    }
    cg_runtime_free_outputs(truth, n64);
    cg_runtime_free(ref64);
    cg_runtime_free_outputs(got, nd);
    cg_runtime_free_outputs(again, nd2);
    cg_runtime_free_outputs(want, nr);
    cg_runtime_free(del);
    cg_runtime_free(ref);
    cg_assignment_free(a);
    cg_type_env_free(env);
    cg_model_free(m);

    /* under the budget: one runtime, nothing crossing */
    m = one_conv_model();
    env = NULL;
    a = NULL;
    del = delegated(m, xnn, &env, &a, &rep);
    if (rep)
        EXPECT(rep->segments == 1 && rep->crossing_values == 0,
               "one 9.4 MB filter: one segment (%zu), nothing crossing (%zu)", rep->segments,
               rep->crossing_values);
    cg_runtime_free(del);
    cg_assignment_free(a);
    cg_type_env_free(env);
    cg_model_free(m);

    for (int k = 0; k < CONVS; k++)
        free(weights[k]);
    cg_target_registry_free(reg);
    return test_done("test_xnnpack_segments");
}
