/*
 * The memory plan made at set-up from predicted sizes (src/run/predict.c):
 * the predicted shapes against what the kernels produce on every ONNX
 * backend node test, and the plan's life in a runtime: made at init (or by
 * cg_runtime_prepare for symbolic dims), confirmed by a run without a
 * miss, dropped after a run with one, and never a change in any output.
 */
#include <dirent.h>
#include <stdlib.h>
#include <string.h>

#include "convgate/samples.h"
#include "convgate/tensor_io.h"
#include "run/exec.h"
#include "testlib.h"

#define NODE_DIR "/usr/share/libonnx-testdata/data/node"

static int by_name(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* One node test: its model, fed test_data_set_0's inputs; every graph
 * output whose shape was predicted is compared with the run's. Returns the
 * outputs compared (0 when the case does not load or run here). */
static size_t check_node_case(const char *name, size_t *mismatches)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/%s/model.onnx", NODE_DIR, name);
    cg_model *m = NULL;
    cg_error err;
    cg_error_clear(&err);
    if (cg_model_load(path, NULL, &m, &err) != CG_OK)
        return 0;
    const cg_graph *g = m->graph;
    cg_named_value feeds[16];
    size_t nfeed = 0, compared = 0;
    cg_runtime *rt = NULL;
    cg_named_value *outs = NULL;
    size_t nout = 0;
    cg_tensor *shapes = NULL;
    bool ok = g->input_count <= 16;
    for (size_t i = 0; ok && i < g->input_count; i++) {
        snprintf(path, sizeof path, "%s/%s/test_data_set_0/input_%zu.pb", NODE_DIR, name, i);
        cg_value *v = NULL;
        if (cg_io_pb_load(path, g->inputs[i].type, (size_t)1 << 28, &v, &err) != CG_OK) {
            ok = false;
            break;
        }
        feeds[nfeed].name = g->inputs[i].name;
        feeds[nfeed++].value = v;
    }
    if (!ok || cg_runtime_init(m, NULL, &rt, &err) != CG_OK)
        goto done;
    shapes = calloc(rt->main->slot_count + 1, sizeof *shapes);
    if (!shapes || !cg_predict_shapes(rt, feeds, nfeed, shapes))
        goto done;
    if (cg_runtime_run(rt, feeds, nfeed, &outs, &nout, &err) != CG_OK)
        goto done; /* the conformance suite's known failures */
    for (size_t i = 0; i < nout && i < g->output_count; i++) {
        cg_ref r = rt->main->output_refs[i];
        const cg_value *v = outs[i].value;
        if (r.slot < 0 || r.up != 0 || shapes[r.slot].dtype == CG_DTYPE_UNDEFINED || !v ||
            v->kind != CG_VALUE_TENSOR)
            continue;
        const cg_tensor *want = &v->tensor, *got = &shapes[r.slot];
        bool same = want->dtype == got->dtype && want->rank == got->rank;
        for (int d = 0; same && d < want->rank; d++)
            same = want->dims[d] == got->dims[d];
        compared++;
        if (!same) {
            (*mismatches)++;
            char a[128], b[128];
            cg_exec_format_shape(got->rank, got->dims, a, sizeof a);
            cg_exec_format_shape(want->rank, want->dims, b, sizeof b);
            fprintf(stderr, "%s: output %zu predicted %s %s, the kernel made %s %s\n", name, i,
                    cg_dtype_name(got->dtype), a, cg_dtype_name(want->dtype), b);
        }
    }
done:
    free(shapes);
    cg_runtime_free_outputs(outs, nout);
    cg_runtime_free(rt);
    for (size_t i = 0; i < nfeed; i++)
        cg_value_free(feeds[i].value);
    cg_model_free(m);
    return compared;
}

/* Every backend node test: a predicted shape that is not the kernel's is a
 * wrong rule (a plan it fed would miss, or place a value in too few bytes
 * were the kernels not checking). Most cases must be predicted at all. */
static void test_node_suite(void)
{
    DIR *d = opendir(NODE_DIR);
    if (!d) {
        test_skip("%s not installed (Debian package libonnx-testdata)", NODE_DIR);
        return;
    }
    char **names = NULL;
    size_t count = 0, cap = 0;
    for (struct dirent *e; (e = readdir(d));) {
        if (strncmp(e->d_name, "test_", 5) != 0)
            continue;
        if (count == cap) {
            cap = cap ? 2 * cap : 1024;
            char **n = realloc(names, cap * sizeof *n);
            if (!n)
                test_fatal("out of memory");
            names = n;
        }
        if (!(names[count++] = strdup(e->d_name)))
            test_fatal("out of memory");
    }
    closedir(d);
    qsort(names, count, sizeof *names, by_name);
    size_t compared = 0, mismatches = 0, cases = 0;
    for (size_t i = 0; i < count; i++) {
        size_t c = check_node_case(names[i], &mismatches);
        compared += c;
        cases += c > 0;
        free(names[i]);
    }
    free(names);
    printf("node tests: %zu outputs of %zu cases predicted and compared\n", compared, cases);
    EXPECT(mismatches == 0, "%zu predicted shapes differ from the kernels'", mismatches);
    /* the rules cover the common ops: far more than half of ~930 cases */
    EXPECT(cases > 500, "only %zu cases had a predicted output", cases);
}

/* --- a plan's life ------------------------------------------------------------- */

static cg_model *M;

/* x [n,3,8,8] -> Conv 3x3 (pad 1) -> Relu -> Conv 3x3 (pad 1) + residual
 * -> Relu -> Shape/Gather/Unsqueeze/Concat -> Reshape [n, -1] -> MatMul
 * [256, 5] -> y. With n < 0 the batch dim is symbolic. */
static cg_model *build_model(int64_t n)
{
    M = test_model_new(17);
    cg_graph *g = test_graph_new(M, "main", 16);
    int64_t xd[4] = {n, 3, 8, 8}, w1d[4] = {4, 3, 3, 3}, w2d[4] = {4, 4, 3, 3};
    int64_t md[2] = {256, 5}, one[1] = {1}, yd[2] = {n, 5};
    float w1[108], w2[144], mw[1280];
    for (int i = 0; i < 108; i++)
        w1[i] = (float)((i * 37) % 17 - 8) * 0.05f;
    for (int i = 0; i < 144; i++)
        w2[i] = (float)((i * 29) % 13 - 6) * 0.04f;
    for (int i = 0; i < 1280; i++)
        mw[i] = (float)((i * 11) % 23 - 11) * 0.01f;
    test_graph_input(g, "x", test_type(M, CG_DTYPE_FLOAT, 4, xd));
    test_graph_init_f32(M, g, "w1", 4, w1d, w1);
    test_graph_init_f32(M, g, "w2", 4, w2d, w2);
    test_graph_init_f32(M, g, "mw", 2, md, mw);
    static int64_t idx0 = 0, minus1 = -1; /* borrowed as raw_data */
    test_graph_init_raw(M, g, "i0", CG_DTYPE_INT64, 0, NULL, &idx0, sizeof idx0);
    test_graph_init_raw(M, g, "ax0", CG_DTYPE_INT64, 1, one, &idx0, sizeof idx0);
    test_graph_init_raw(M, g, "m1", CG_DTYPE_INT64, 1, one, &minus1, sizeof minus1);
    static int64_t pads[4] = {1, 1, 1, 1}; /* the attribute borrows it */
    cg_node *c1 = test_node(M, g, "Conv", "c1", "x,w1", "a");
    test_node_add_attr(c1, attr_ints("pads", pads, 4));
    test_node(M, g, "Relu", "r1", "a", "b");
    cg_node *c2 = test_node(M, g, "Conv", "c2", "b,w2", "c");
    test_node_add_attr(c2, attr_ints("pads", pads, 4));
    test_node(M, g, "Add", "add", "c,b", "d");
    test_node(M, g, "Relu", "r2", "d", "e");
    test_node(M, g, "Shape", "shape", "e", "s");
    test_node(M, g, "Gather", "batch", "s,i0", "s0");
    test_node(M, g, "Unsqueeze", "unsq", "s0,ax0", "s1");
    test_node(M, g, "Concat", "cat", "s1,m1", "newshape");
    test_node_add_attr(&g->nodes[g->node_count - 1], attr_int("axis", 0));
    test_node(M, g, "Reshape", "flat", "e,newshape", "f");
    test_node(M, g, "MatMul", "mm", "f,mw", "y");
    test_graph_output(g, "y", test_type(M, CG_DTYPE_FLOAT, 2, yd));
    M->graph = g;
    return M;
}

static cg_value *input_x(int64_t n)
{
    int64_t dims[4] = {n, 3, 8, 8};
    cg_value *v = NULL;
    if (cg_value_alloc_tensor(CG_DTYPE_FLOAT, 4, dims, &v, NULL) != CG_OK)
        test_fatal("out of memory");
    float *x = v->tensor.data;
    for (int64_t i = 0; i < v->tensor.numel; i++)
        x[i] = (float)((i * 7) % 19 - 9) * 0.1f;
    return v;
}

/* Runs rt on x; y's bytes in *y (malloc'd) and its count. */
static bool run_y(cg_runtime *rt, cg_value *x, float **y, int64_t *n)
{
    cg_named_value in = {"x", x}, *outs = NULL;
    size_t nout = 0;
    cg_error err;
    cg_error_clear(&err);
    *y = NULL;
    if (cg_runtime_run(rt, &in, 1, &outs, &nout, &err) != CG_OK || nout != 1) {
        EXPECT(false, "run: %s", err.msg);
        cg_runtime_free_outputs(outs, nout);
        return false;
    }
    const cg_tensor *t = &outs[0].value->tensor;
    *n = t->numel;
    *y = malloc((size_t)t->numel * sizeof **y + 1);
    if (*y)
        memcpy(*y, t->data, (size_t)t->numel * sizeof **y);
    cg_runtime_free_outputs(outs, nout);
    return *y != NULL;
}

static bool same_y(const float *a, int64_t na, const float *b, int64_t nb)
{
    return a && b && na == nb && memcmp(a, b, (size_t)na * sizeof *a) == 0;
}

static void test_plan_life(void)
{
    cg_model *m = build_model(2);
    cg_value *x = input_x(2);
    cg_runtime *rec = NULL, *rt = NULL;
    cg_error err;
    cg_error_clear(&err);
    float *want = NULL, *y = NULL;
    int64_t nwant = 0, ny = 0;
    /* the recording way: the predicted plan dropped before the first run */
    EXPECT(cg_runtime_init(m, NULL, &rec, &err) == CG_OK, "init: %s", err.msg);
    if (!rec)
        goto out;
    EXPECT(rec->mem.valid && rec->mem.predicted && rec->mem.arena_bytes > 0,
           "no plan at init for static input shapes");
    cg_mem_plan_clear(&rec->mem);
    if (!run_y(rec, x, &want, &nwant))
        goto out;
    EXPECT(rec->mem.valid && !rec->mem.predicted, "the recording run made no plan");

    /* predicted at init: the first run uses it, and confirms it */
    EXPECT(cg_runtime_init(m, NULL, &rt, &err) == CG_OK, "init: %s", err.msg);
    if (!rt)
        goto out;
    EXPECT(rt->mem.arena_bytes == rec->mem.arena_bytes,
           "predicted arena %zu bytes, recorded %zu", rt->mem.arena_bytes,
           rec->mem.arena_bytes);
    for (size_t s = 0; s < rt->main->slot_count; s++)
        EXPECT((rt->mem.slot_offset[s] == SIZE_MAX) == (rec->mem.slot_offset[s] == SIZE_MAX) &&
                   rt->mem.slot_bytes[s] == rec->mem.slot_bytes[s],
               "%s: predicted %zu bytes, recorded %zu", rt->main->slot_names[s],
               rt->mem.slot_bytes[s], rec->mem.slot_bytes[s]);
    if (run_y(rt, x, &y, &ny))
        EXPECT(same_y(want, nwant, y, ny), "the predicted plan's first run differs");
    EXPECT(rt->mem.valid && !rt->mem.predicted && rt->mem.misses == 0,
           "the first run did not confirm the plan (%zu misses)", rt->mem.misses);
    free(y);
    cg_runtime_free(rt);
    rt = NULL;

    /* a wrong prediction (one value given too few bytes): that value goes
     * outside the arena, the output is the same, the plan is dropped and
     * the next run records a right one */
    EXPECT(cg_runtime_init(m, NULL, &rt, &err) == CG_OK, "init: %s", err.msg);
    if (!rt)
        goto out;
    int32_t victim = -1;
    for (size_t s = 0; s < rt->main->slot_count && victim < 0; s++)
        if (rt->mem.slot_offset[s] != SIZE_MAX && rt->mem.slot_bytes[s] > 4)
            victim = (int32_t)s;
    EXPECT(victim >= 0, "no placed value");
    if (victim >= 0)
        rt->mem.slot_bytes[victim] = 4;
    if (run_y(rt, x, &y, &ny))
        EXPECT(same_y(want, nwant, y, ny), "a run on a wrong prediction differs");
    free(y);
    EXPECT(!rt->mem.valid, "a plan that missed was kept");
    if (run_y(rt, x, &y, &ny))
        EXPECT(same_y(want, nwant, y, ny), "the recording run after a miss differs");
    free(y);
    EXPECT(rt->mem.valid && !rt->mem.predicted, "no recorded plan after the miss");
    if (run_y(rt, x, &y, &ny))
        EXPECT(same_y(want, nwant, y, ny), "the run on the recorded plan differs");
    free(y);
out:
    free(want);
    cg_runtime_free(rt);
    cg_runtime_free(rec);
    cg_value_free(x);
    cg_model_free(m);
}

/* A symbolic batch dim: nothing at init; cg_runtime_prepare with a fed
 * value makes the plan for its shape; a run with another batch records
 * its own plan (the prepared one was for other shapes). */
static void test_prepare_symbolic(void)
{
    cg_model *m = build_model(-1);
    cg_value *x2 = input_x(2), *x3 = input_x(3);
    cg_runtime *rt = NULL, *ref = NULL;
    cg_error err;
    cg_error_clear(&err);
    float *want = NULL, *y = NULL;
    int64_t nwant = 0, ny = 0;
    EXPECT(cg_runtime_init(m, NULL, &ref, &err) == CG_OK, "init: %s", err.msg);
    EXPECT(cg_runtime_init(m, NULL, &rt, &err) == CG_OK, "init: %s", err.msg);
    if (!rt || !ref)
        goto out;
    EXPECT(!rt->mem.valid, "a plan at init with a symbolic input dim");
    cg_named_value in = {"x", x2};
    EXPECT(cg_runtime_prepare(rt, &in, 1, &err) == CG_OK, "prepare: %s", err.msg);
    EXPECT(rt->mem.valid && rt->mem.predicted, "prepare made no plan");
    EXPECT(cg_runtime_prepare(NULL, &in, 1, &err) == CG_USAGE, "prepare(NULL) accepted");
    if (!run_y(ref, x2, &want, &nwant))
        goto out;
    if (run_y(rt, x2, &y, &ny))
        EXPECT(same_y(want, nwant, y, ny), "the prepared plan's run differs");
    free(y);
    EXPECT(rt->mem.valid && !rt->mem.predicted && rt->mem.misses == 0,
           "the prepared plan was not confirmed");
    free(want);
    want = NULL;
    if (!run_y(ref, x3, &want, &nwant))
        goto out;
    if (run_y(rt, x3, &y, &ny))
        EXPECT(same_y(want, nwant, y, ny), "a run with another batch differs");
    free(y);
    EXPECT(rt->mem.valid && rt->mem.signature[2] == 3, "no plan recorded for batch 3");
out:
    free(want);
    cg_runtime_free(rt);
    cg_runtime_free(ref);
    cg_value_free(x2);
    cg_value_free(x3);
    cg_model_free(m);
}

/* Every model of the zoo ($CG_ZOO, when set) on random inputs of its
 * declared shapes (symbolic dims 1): where set-up predicts a plan, the
 * first run confirms it (no value without its place). Not a skip when
 * unset: the node suite above is this test's substance. */
static void test_zoo_plans(void)
{
    const char *zoo = getenv("CG_ZOO");
    DIR *d = zoo ? opendir(zoo) : NULL;
    if (!d) {
        printf("zoo: CG_ZOO not set, or not a folder: not checked\n");
        return;
    }
    size_t predicted = 0, models = 0;
    for (struct dirent *e; (e = readdir(d));) {
        size_t len = strlen(e->d_name);
        if (len < 6 || strcmp(e->d_name + len - 5, ".onnx") != 0)
            continue;
        char path[4096];
        snprintf(path, sizeof path, "%s/%s", zoo, e->d_name);
        cg_model *m = NULL;
        cg_runtime *rt = NULL;
        cg_sample s;
        cg_named_value *outs = NULL;
        size_t nout = 0;
        cg_error err;
        cg_error_clear(&err);
        memset(&s, 0, sizeof s);
        if (cg_model_load(path, NULL, &m, &err) != CG_OK ||
            cg_sample_init(&s, m, "random", &err) != CG_OK ||
            cg_sample_fill_random(&s, m, NULL, 0, NULL, 0, (size_t)1 << 30, &err) != CG_OK ||
            cg_runtime_init(m, NULL, &rt, &err) != CG_OK ||
            cg_runtime_prepare(rt, s.inputs, s.input_count, &err) != CG_OK) {
            EXPECT(false, "%s: %s", e->d_name, err.msg);
            goto next;
        }
        models++;
        if (!rt->mem.predicted) {
            printf("zoo: %s: no predicted plan\n", e->d_name);
            goto next;
        }
        predicted++;
        if (cg_runtime_run(rt, s.inputs, s.input_count, &outs, &nout, &err) != CG_OK) {
            printf("zoo: %s: does not run on random inputs: %s\n", e->d_name, err.msg);
            goto next;
        }
        EXPECT(rt->mem.valid && !rt->mem.predicted && rt->mem.misses == 0,
               "%s: the predicted plan missed %zu values", e->d_name, rt->mem.misses);
    next:
        cg_runtime_free_outputs(outs, nout);
        cg_runtime_free(rt);
        cg_sample_clear(&s);
        cg_model_free(m);
    }
    closedir(d);
    printf("zoo: %zu of %zu models predicted\n", predicted, models);
}

/* A padded convolution over a big input: set-up foresees its padded copy
 * (predict.c, scratch_need) and makes and touches a scratch chunk that big,
 * so the first run's scratch is all in chunks made at set-up. */
static void test_scratch_prefault(void)
{
    enum { C = 16, H = 256, W = 256, M_OUT = 8 };
    cg_model *m = test_model_new(17);
    cg_graph *g = m->graph = test_graph_new(m, "big_conv", 4);
    int64_t xd[4] = {1, C, H, W}, wd[4] = {M_OUT, C, 3, 3};
    static float w[M_OUT * C * 9];
    for (size_t i = 0; i < sizeof w / sizeof w[0]; i++)
        w[i] = (float)((int)(i * 13 % 11) - 5) * 0.02f;
    test_graph_input(g, "x", test_type(m, CG_DTYPE_FLOAT, 4, xd));
    test_graph_init_f32(m, g, "w", 4, wd, w);
    static int64_t pads[4] = {1, 1, 1, 1};
    cg_node *cv = test_node(m, g, "Conv", "conv", "x,w", "c");
    test_node_add_attr(cv, attr_ints("pads", pads, 4));
    test_node(m, g, "Relu", "relu", "c", "y");
    test_graph_output(g, "y", test_type(m, CG_DTYPE_FLOAT, -1, NULL));
    cg_runtime *rt = NULL;
    cg_value *x = NULL;
    cg_error err;
    cg_error_clear(&err);
    EXPECT(cg_runtime_init(m, NULL, &rt, &err) == CG_OK, "init: %s", err.msg);
    if (!rt)
        goto out;
    size_t copy = (size_t)C * (H + 2) * (W + 2) * sizeof(float), biggest = 0;
    for (size_t i = 0; i < rt->scratch.count; i++)
        biggest = rt->scratch.chunks[i].cap > biggest ? rt->scratch.chunks[i].cap : biggest;
    EXPECT(rt->mem.predicted && biggest >= copy,
           "set-up made no scratch chunk for the padded copy (%zu bytes; biggest %zu)", copy,
           biggest);
    size_t chunks = rt->scratch.count;
    if (cg_value_alloc_tensor(CG_DTYPE_FLOAT, 4, xd, &x, NULL) != CG_OK)
        test_fatal("out of memory");
    float *xf = x->tensor.data;
    for (int64_t i = 0; i < x->tensor.numel; i++)
        xf[i] = (float)((i * 7) % 19 - 9) * 0.1f;
    cg_named_value in = {"x", x}, *outs = NULL;
    size_t nout = 0;
    EXPECT(cg_runtime_run(rt, &in, 1, &outs, &nout, &err) == CG_OK, "run: %s", err.msg);
    cg_runtime_free_outputs(outs, nout);
    EXPECT(rt->scratch.count == chunks, "the first run made %zu scratch chunks of its own",
           rt->scratch.count - chunks);
out:
    cg_value_free(x);
    cg_runtime_free(rt);
    cg_model_free(m);
}

int main(void)
{
    test_plan_life();
    test_prepare_symbolic();
    test_scratch_prefault();
    test_node_suite();
    test_zoo_plans();
    return test_done("test_predict");
}
