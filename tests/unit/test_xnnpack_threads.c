/*
 * The xnnpack executing target runs on the runtime's threads.
 *
 *  - a runtime with threads N > 1 compiles its XNNPACK partition over a
 *    pthreadpool of N threads (the report says N, and the process has the
 *    pool's N - 1 workers besides the runtime's own N - 1), one with a
 *    single thread over none;
 *  - the outputs do not depend on the thread count: XNNPACK splits output
 *    tiles, never a sum, so 1, 2 and 3 threads give the same bits, and they
 *    match the reference to float32 summation noise;
 *  - releasing the runtime joins the pool's workers;
 *  - partitions alive together with one thread count share one pool (a
 *    pool per partition woke a worker of its own at every partition, and
 *    a model of many partitions ran slower at two threads than at one):
 *    two runtimes of 3 threads hold their own 2 workers each and XNNPACK's
 *    2 once.
 */
#include <dirent.h>
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

#define CIN 8
#define COUT 16
#define H 40
#define W 40

/* y = Relu(Conv(x, w, b, 3x3, pads 1)) then MaxPool 2x2 stride 2: large
 * enough that XNNPACK splits both over its pool */
static cg_model *conv_model(void)
{
    cg_model *m = test_model_graph(13, 8, "x", "y");
    int64_t xdims[4] = {1, CIN, H, W}, wdims[4] = {COUT, CIN, 3, 3}, bdims[1] = {COUT};
    m->graph->inputs[0].type = test_type(m, CG_DTYPE_FLOAT, 4, xdims);
    static float w[COUT * CIN * 9], b[COUT];
    uint32_t s = 12345u;
    for (size_t i = 0; i < COUT * CIN * 9; i++) {
        s = s * 1664525u + 1013904223u;
        w[i] = (float)((double)(s >> 8) / 16777216.0 - 0.5);
    }
    for (size_t i = 0; i < COUT; i++)
        b[i] = 0.01f * (float)i - 0.05f;
    test_graph_init_f32(m, m->graph, "w", 4, wdims, w);
    test_graph_init_f32(m, m->graph, "b", 1, bdims, b);
    static int64_t p1[4] = {1, 1, 1, 1}, k2[2] = {2, 2};
    cg_node *c = test_node(m, m->graph, "Conv", "conv", "x,w,b", "c");
    test_node_add_attr(c, attr_ints("pads", p1, 4));
    test_node(m, m->graph, "Relu", "relu", "c", "r");
    cg_node *mp = test_node(m, m->graph, "MaxPool", "pool", "r", "y");
    test_node_add_attr(mp, attr_ints("kernel_shape", k2, 2));
    test_node_add_attr(mp, attr_ints("strides", k2, 2));
    return m;
}

/* Threads of this process (/proc/self/task), -1 when unreadable. */
static int task_count(void)
{
    DIR *d = opendir("/proc/self/task");
    if (!d)
        return -1;
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)))
        n += e->d_name[0] != '.';
    closedir(d);
    return n;
}

typedef struct run_result {
    float *y;
    int64_t numel;
    size_t pool_threads;
    uint64_t xnn_runs;
    int tasks_during; /* threads of the process while the runtime lives */
} run_result;

/* Runs m delegated to t with `threads` threads on x; the output into r. */
static void run_delegated(const cg_model *m, const cg_target *t, const cg_type_env *env,
                          int threads, const cg_named_value *feeds, run_result *r)
{
    cg_error err;
    cg_error_clear(&err);
    memset(r, 0, sizeof *r);
    const cg_target *targets[1] = {t};
    cg_assignment *a = NULL;
    cg_runtime *rt = NULL;
    cg_named_value *outs = NULL;
    size_t nout = 0;
    EXPECT(cg_assign(m, env, targets, 1, &a, &err) == CG_OK, "assign: %s", err.msg);
    if (!a)
        return;
    EXPECT(a->partition_count == 1 && a->partitions[0].node_count == 3,
           "the three nodes form one xnnpack partition (%zu partitions)", a->partition_count);
    cg_runtime_options opt;
    cg_runtime_options_default(&opt);
    opt.assignment = a;
    opt.types = env;
    opt.threads = threads;
    EXPECT(cg_runtime_init(m, &opt, &rt, &err) == CG_OK, "init (%d threads): %s", threads,
           err.msg);
    if (!rt) {
        cg_assignment_free(a);
        return;
    }
    r->tasks_during = task_count();
    for (int k = 0; k < 2; k++) {
        cg_runtime_free_outputs(outs, nout);
        outs = NULL;
        nout = 0;
        EXPECT(cg_runtime_run(rt, feeds, 1, &outs, &nout, &err) == CG_OK,
               "run (%d threads): %s", threads, err.msg);
    }
    cg_runtime_partition_info pi;
    memset(&pi, 0, sizeof pi);
    EXPECT(cg_runtime_partition_count(rt) == 1 &&
               cg_runtime_partition_info_get(rt, 0, &pi, &err) == CG_OK,
           "partition info: %s", err.msg);
    const cg_xnnpack_report *rep = pi.state;
    if (rep) {
        r->pool_threads = rep->threads;
        r->xnn_runs = rep->runs;
    }
    if (nout == 1 && outs[0].value->kind == CG_VALUE_TENSOR) {
        const cg_tensor *y = &outs[0].value->tensor;
        r->numel = y->numel;
        r->y = malloc((size_t)y->numel * sizeof *r->y);
        if (r->y)
            memcpy(r->y, y->data, (size_t)y->numel * sizeof *r->y);
    }
    cg_runtime_free_outputs(outs, nout);
    cg_runtime_free(rt);
    cg_assignment_free(a);
}

/* Two runtimes of 3 threads alive together: XNNPACK's pool is shared. */
static void shared_pool(const cg_model *m, const cg_target *t, const cg_type_env *env,
                        const cg_named_value *feeds, int base)
{
    cg_error err;
    cg_error_clear(&err);
    const cg_target *targets[1] = {t};
    cg_assignment *a = NULL;
    cg_runtime *rt[2] = {NULL, NULL};
    EXPECT(cg_assign(m, env, targets, 1, &a, &err) == CG_OK, "assign: %s", err.msg);
    if (!a)
        return;
    cg_runtime_options opt;
    cg_runtime_options_default(&opt);
    opt.assignment = a;
    opt.types = env;
    opt.threads = 3;
    for (int k = 0; k < 2; k++)
        EXPECT(cg_runtime_init(m, &opt, &rt[k], &err) == CG_OK, "init %d: %s", k, err.msg);
    int during = task_count();
    if (base > 0)
        EXPECT(during == base + 6, "two runtimes of 3 threads: %d threads in the process, %d "
               "before (2 workers each, and XNNPACK's 2 once)", during, base);
    for (int k = 0; k < 2 && rt[k]; k++) {
        cg_named_value *outs = NULL;
        size_t nout = 0;
        cg_runtime_partition_info pi;
        memset(&pi, 0, sizeof pi);
        EXPECT(cg_runtime_run(rt[k], feeds, 1, &outs, &nout, &err) == CG_OK, "run %d: %s", k,
               err.msg);
        EXPECT(cg_runtime_partition_info_get(rt[k], 0, &pi, &err) == CG_OK && pi.state &&
                   ((const cg_xnnpack_report *)pi.state)->threads == 3 &&
                   ((const cg_xnnpack_report *)pi.state)->runs == 1,
               "runtime %d: its partition ran on 3 threads (%s)", k, err.msg);
        cg_runtime_free_outputs(outs, nout);
    }
    cg_runtime_free(rt[0]);
    /* the other runtime still runs on the shared pool */
    if (rt[1]) {
        cg_named_value *outs = NULL;
        size_t nout = 0;
        EXPECT(cg_runtime_run(rt[1], feeds, 1, &outs, &nout, &err) == CG_OK,
               "run after the first runtime went: %s", err.msg);
        cg_runtime_free_outputs(outs, nout);
    }
    cg_runtime_free(rt[1]);
    cg_assignment_free(a);
    int after = task_count();
    if (base > 0)
        EXPECT(after == base, "%d threads left after both runtimes went, %d before", after,
               base);
}

int main(void)
{
    cg_error err;
    cg_error_clear(&err);
    cg_target_registry *reg = NULL;
    if (cg_target_registry_load(NULL, &reg, &err) != CG_OK)
        test_fatal("loading targets: %s", err.msg);
    const cg_target *t = cg_target_registry_find(reg, "xnnpack", &err);
    if (!t) {
        test_skip("xnnpack target not available (%s)", err.msg);
        cg_target_registry_free(reg);
        return test_done("test_xnnpack_threads");
    }
    cg_model *m = conv_model();
    cg_type_env *env = NULL;
    EXPECT(cg_type_env_build(m, NULL, 0, &env, &err) == CG_OK, "types: %s", err.msg);

    int64_t xdims[4] = {1, CIN, H, W};
    double *xv = malloc(sizeof *xv * CIN * H * W);
    if (!xv)
        test_fatal("out of memory");
    for (size_t i = 0; i < (size_t)CIN * H * W; i++)
        xv[i] = sin(0.37 * (double)i) * 2.0;
    cg_named_value feeds[1] = {{"x", test_value(CG_DTYPE_FLOAT, 4, xdims, xv)}};
    free(xv);

    /* the reference */
    cg_runtime_options ro;
    cg_runtime_options_default(&ro);
    cg_named_value *ref = NULL;
    size_t nref = 0;
    EXPECT(test_model_run_with(m, &ro, 1, feeds, 1, &ref, &nref, &err) == CG_OK,
           "reference: %s", err.msg);

    int base = task_count();
    run_result one, two, three;
    run_delegated(m, t, env, 1, feeds, &one);
    run_delegated(m, t, env, 2, feeds, &two);
    run_delegated(m, t, env, 3, feeds, &three);
    int after = task_count();
    shared_pool(m, t, env, feeds, base);

    EXPECT(one.pool_threads == 1 && two.pool_threads == 2 && three.pool_threads == 3,
           "XNNPACK's threads: %zu, %zu, %zu for runtimes of 1, 2, 3 threads",
           one.pool_threads, two.pool_threads, three.pool_threads);
    EXPECT(one.xnn_runs == 2 && two.xnn_runs == 2 && three.xnn_runs == 2,
           "XNNPACK ran the partition: %llu, %llu, %llu runs",
           (unsigned long long)one.xnn_runs, (unsigned long long)two.xnn_runs,
           (unsigned long long)three.xnn_runs);
    if (base > 0) {
        /* the runtime's pool has N - 1 workers, XNNPACK's pool N - 1 more */
        EXPECT(one.tasks_during == base, "1 thread: %d threads in the process, %d before",
               one.tasks_during, base);
        EXPECT(three.tasks_during == base + 4, "3 threads: %d threads in the process, "
               "%d before (the runtime's 2 workers and the pool's 2)", three.tasks_during, base);
        EXPECT(after == base, "%d threads left after the runtimes were freed, %d before",
               after, base);
    }
    EXPECT(one.y && two.y && three.y && one.numel == (int64_t)COUT * (H / 2) * (W / 2) &&
               two.numel == one.numel && three.numel == one.numel,
           "outputs of %lld elements", (long long)one.numel);
    if (one.y && two.y && three.y && two.numel == one.numel && three.numel == one.numel) {
        size_t differ = 0;
        for (int64_t i = 0; i < one.numel; i++)
            differ += memcmp(&one.y[i], &two.y[i], sizeof(float)) != 0 ||
                      memcmp(&one.y[i], &three.y[i], sizeof(float)) != 0;
        EXPECT(differ == 0, "%zu of %lld lanes differ between 1, 2 and 3 threads", differ,
               (long long)one.numel);
        if (nref == 1 && ref[0].value->tensor.numel == one.numel) {
            const float *r = ref[0].value->tensor.data;
            double worst = 0.0;
            for (int64_t i = 0; i < one.numel; i++) {
                double d = fabs((double)r[i] - (double)three.y[i]) / (1.0 + fabs((double)r[i]));
                worst = d > worst ? d : worst;
            }
            /* 72-term float32 sums in another order: a few ulps of |y| <= ~20 */
            EXPECT(worst < 1e-5, "3 threads against the reference: relative %g", worst);
        } else {
            EXPECT(false, "the reference gave %zu outputs", nref);
        }
    }
    free(one.y);
    free(two.y);
    free(three.y);
    cg_runtime_free_outputs(ref, nref);
    cg_value_free(feeds[0].value);
    cg_type_env_free(env);
    cg_model_free(m);
    cg_target_registry_free(reg);
    return test_done("test_xnnpack_threads");
}
