/*
 * Lowerings (convgate/lower.h): the ORT-basic graph of the models
 * tools/make_lower_tests.py writes to tests/data/lower (each checked against
 * the optimized model onnxruntime-node 1.22 writes: the same node inventory),
 * the map back to the source nodes, the removed list with the
 * transformation that removed each node, and that the runtime's graph
 * computes what the source computes (fused weights included).
 */
#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "convgate/lower.h"
#include "convgate/runtime.h"
#include "convgate/target.h"
#include "convgate/samples.h"
#include "convgate/tensor_io.h"
#include "run/exec.h"
#include "testlib.h"

#define DATA CG_SOURCE_DIR "/tests/data/lower"

static cg_model *load(const char *name)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s.onnx", DATA, name);
    return test_load_model(path);
}

/* "Conv,Relu,Flatten" for the main graph's nodes, in order. */
static const char *ops_of(const cg_model *m, char *buf, size_t len)
{
    size_t used = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < m->graph->node_count && used + 1 < len; i++) {
        int w = snprintf(buf + used, len - used, "%s%s", i ? "," : "",
                         m->graph->nodes[i].op_type);
        used += w > 0 && (size_t)w < len - used ? (size_t)w : 0;
    }
    return buf;
}

/* The source node index of the node called name. */
static size_t source_index(const cg_model *m, const char *name)
{
    for (size_t i = 0; i < m->graph->node_count; i++)
        if (m->graph->nodes[i].name && strcmp(m->graph->nodes[i].name, name) == 0)
            return i;
    return SIZE_MAX;
}

/* Runs m on one seeded random float input called `input` of the given shape;
 * the first output's value (caller frees) or NULL. */
static cg_value *run_once(const cg_model *m, const char *input, int rank, const int64_t *dims)
{
    cg_error err;
    cg_error_clear(&err);
    cg_tensor t;
    memset(&t, 0, sizeof t);
    cg_rng rng;
    cg_rng_seed(&rng, 7);
    cg_value *in = NULL, *out = NULL;
    cg_named_value *outs = NULL;
    size_t n = 0;
    if (cg_tensor_alloc(&t, CG_DTYPE_FLOAT, rank, dims, 0, &err) != CG_OK ||
        cg_random_fill(&t, NULL, &rng, &err) != CG_OK ||
        cg_value_from_tensor(&t, &in, &err) != CG_OK) {
        EXPECT(0, "input: %s", err.msg);
        cg_tensor_release(&t);
        return NULL;
    }
    cg_named_value feed = {input, in};
    if (test_model_run(m, 0, &feed, 1, &outs, &n, &err) == CG_OK && n >= 1) {
        out = outs[0].value;
        outs[0].value = NULL;
    }
    EXPECT(out != NULL, "run: %s", err.msg);
    cg_runtime_free_outputs(outs, n);
    cg_value_free(in);
    return out;
}

/* The fixture `name` and its lowering `lowering` in *l, whose main graph's
 * ops must be `ops` ("Conv,Relu"); *l is NULL, with a failure recorded,
 * when lowering fails; NULL when the fixture does not load. */
static cg_model *lower_fixture_by(const char *name, const char *lowering, const char *ops,
                                  cg_lowered **l)
{
    cg_error err;
    cg_error_clear(&err);
    *l = NULL;
    cg_model *m = load(name);
    if (!m)
        return NULL;
    EXPECT(cg_lower(m, lowering, NULL, 0, l, &err) == CG_OK, "%s: %s", name, err.msg);
    if (*l) {
        char got[256];
        EXPECT(strcmp(ops_of((*l)->model, got, sizeof got), ops) == 0, "%s: ops %s, want %s",
               name, got, ops);
    }
    return m;
}

/* The same with the ORT-basic lowering. */
static cg_model *lower_fixture(const char *name, const char *ops, cg_lowered **l)
{
    return lower_fixture_by(name, "ort-basic", ops, l);
}

/* The lowered model computes the source's output (float32, tolerance 1e-4
 * relative to the largest magnitude: fused weights round differently). */
static void same_output(const cg_lowered *l, const char *input, int rank, const int64_t *dims)
{
    cg_value *a = run_once(l->source, input, rank, dims);
    cg_value *b = run_once(l->model, input, rank, dims);
    if (a && b) {
        const cg_tensor *ta = &a->tensor, *tb = &b->tensor;
        EXPECT(ta->numel == tb->numel && ta->rank == tb->rank, "output shapes differ");
        double worst = 0, scale = 1;
        for (int64_t i = 0; ta->numel == tb->numel && i < ta->numel; i++) {
            double x = cg_tensor_get_f64(ta, i), y = cg_tensor_get_f64(tb, i);
            scale = fmax(scale, fabs(x));
            worst = fmax(worst, fabs(x - y));
        }
        EXPECT(worst <= 1e-4 * scale, "max |diff| %g (scale %g)", worst, scale);
    }
    cg_value_free(a);
    cg_value_free(b);
}

static void test_torch_like(void)
{
    cg_lowered *l;
    /* the inventory onnxruntime-node 1.22 writes at level 'basic' */
    cg_model *m = lower_fixture("torch_like", "Conv,Relu,Flatten,Reshape,Gemm", &l);
    if (l) {
        const cg_lower_removed *r;
        EXPECT((r = test_removed(l, "identity_w")) && !strcmp(r->by, "EliminateIdentity") && !r->into,
              "Identity on the weight");
        EXPECT((r = test_removed(l, "bn")) && !strcmp(r->by, "ConvBNFusion") && r->into &&
                  !strcmp(r->into, "conv"),
              "BatchNormalization fused into conv");
        EXPECT((r = test_removed(l, "dropout")) && !strcmp(r->by, "EliminateDropout"), "Dropout");
        EXPECT((r = test_removed(l, "shape_node")) &&
                  !strcmp(r->by, "Graph (Constant node to initializer)"),
              "Constant node");
        EXPECT((r = test_removed(l, "matmul")) && !strcmp(r->by, "MatMulAddFusion") &&
                  test_removed(l, "add"),
              "MatMul + Add");
        EXPECT(cg_lowered_removed_count(l, "") == 6 && l->added_count == 1, "removed %zu, added %zu",
              cg_lowered_removed_count(l, ""), l->added_count);
        char sum[256];
        cg_lowered_removed_summary(l, "", 8, sum, sizeof sum);
        EXPECT(strstr(sum, "Identity x1") && strstr(sum, "BatchNormalization x1"), "%s", sum);
        /* the fused Conv stands for the source conv and bn; the Gemm for matmul and add */
        const size_t *o;
        size_t n = cg_lowered_origins(l, 0, &o);
        EXPECT(n == 2 && o[0] == source_index(m, "conv") && o[1] == source_index(m, "bn"),
              "conv origins (%zu)", n);
        n = cg_lowered_origins(l, 4, &o);
        EXPECT(n == 2 && o[0] == source_index(m, "matmul") && o[1] == source_index(m, "add"),
              "gemm origins (%zu)", n);
        EXPECT(l->edited && l->cpu_missing_count == 0, "edited, every op has a CPU kernel");
        int64_t dims[4] = {1, 3, 6, 6};
        same_output(l, "x", 4, dims);
    }
    cg_lowered_free(l);
    cg_model_free(m);
}

static void test_fold(void)
{
    cg_lowered *l;
    cg_error err;
    cg_error_clear(&err);
    cg_model *m = lower_fixture("fold", "Reshape,Div", &l);
    if (!m)
        return;
    if (l) {
        const cg_lower_removed *r;
        EXPECT((r = test_removed(l, "shape")) && !strcmp(r->by, "ConstantFolding"), "Shape folded");
        EXPECT((r = test_removed(l, "concat")) && !strcmp(r->by, "ConstantFolding"), "Concat folded");
        EXPECT((r = test_removed(l, "add_zero")) && !strcmp(r->by, "NoopElimination"), "x + 0");
        EXPECT((r = test_removed(l, "cast_same")) && !strcmp(r->by, "CastElimination"), "Cast");
        EXPECT((r = test_removed(l, "mul")) && !strcmp(r->by, "DivMulFusion") && r->into &&
                  !strcmp(r->into, "div"),
              "1/x * y");
        int64_t dims[3] = {2, 3, 4};
        same_output(l, "x", 3, dims);
    }
    cg_lowered_free(l);
    /* "none" is the identity: the source itself, every node its own origin */
    EXPECT(cg_lower(m, "none", NULL, 0, &l, &err) == CG_OK && l->model == m &&
              l->removed_count == 0,
          "none");
    if (l) {
        const size_t *o;
        EXPECT(cg_lowered_origins(l, 3, &o) == 1 && o[0] == 3, "identity origins");
    }
    cg_lowered_free(l);
    l = NULL;
    cg_error_clear(&err);
    EXPECT(cg_lower(m, "magic", NULL, 0, &l, &err) == CG_USAGE && !l &&
              strstr(err.msg, "unknown lowering 'magic'") && strstr(err.msg, "ort-basic"),
          "%s", err.msg);
    cg_model_free(m);
}

static void test_if_const(void)
{
    cg_lowered *l;
    cg_model *m = lower_fixture("if_const", "Add,Relu", &l);
    if (l) {
        const cg_lower_removed *r = test_removed(l, "if");
        EXPECT(r && !strcmp(r->by, "ConstantFolding"), "If inlined");
        int64_t dims[1] = {2};
        same_output(l, "x", 1, dims);
    }
    cg_lowered_free(l);
    cg_model_free(m);
}

/* OpenVINO's ONNX frontend creates no op for a Constant node, an Identity of
 * a weight, a Dropout in inference or a one-input Sum; an Identity of a
 * computed value stays (v16::Identity), and so does a Dropout in training
 * mode, which the profile refuses (src/lower/openvino_fe.c). */
static void test_openvino_fe(void)
{
    cg_lowered *l;
    cg_model *m = lower_fixture_by("openvino_fe", "openvino-onnx-fe", "MatMul,Identity,Mul,Relu",
                                   &l);
    if (l) {
        const cg_lower_removed *r;
        EXPECT(l->removed_count == 4, "%zu removed", l->removed_count);
        EXPECT((r = test_removed(l, "scale_node")) && strstr(r->by, "v0::Constant"), "Constant");
        EXPECT((r = test_removed(l, "identity_w")) && strstr(r->by, "Identity of a constant"),
               "Identity of a weight");
        EXPECT((r = test_removed(l, "drop")) && strstr(r->by, "Dropout in inference"), "Dropout");
        EXPECT((r = test_removed(l, "sum1")) && strstr(r->by, "single-input variadic"), "Sum");
        EXPECT(!test_removed(l, "identity_a"), "an Identity of a computed value stays");
        EXPECT(!strcmp(l->remover, "OpenVINO's ONNX frontend"), "remover %s", l->remover);
        int64_t dims[2] = {1, 4};
        same_output(l, "x", 2, dims);
    }
    cg_lowered_free(l);
    cg_model_free(m);
    m = lower_fixture_by("openvino_train", "openvino-onnx-fe", "Dropout,Relu", &l);
    EXPECT(!l || l->removed_count == 0, "a Dropout in training mode stays");
    cg_lowered_free(l);
    cg_model_free(m);
}

/* Targets that partition different graphs cannot be placed together. */
static void test_targets(void)
{
    cg_error err;
    cg_error_clear(&err);
    cg_target_registry *reg = NULL;
    EXPECT(cg_target_registry_load(CG_SOURCE_DIR "/profiles", &reg, &err) == CG_OK, "%s", err.msg);
    if (!reg)
        return;
    const cg_target *nnapi = cg_target_registry_find(reg, "nnapi", &err);
    const cg_target *ml = cg_target_registry_find(reg, "coreml-mlprogram", &err);
    const cg_target *gpu = cg_target_registry_find(reg, "litert-gpu", &err);
    const char *lw = NULL;
    if (nnapi && ml && gpu) {
        const cg_target *ort[2] = {nnapi, ml}, *mixed[2] = {nnapi, gpu};
        EXPECT(cg_lowering_for_targets(ort, 2, &lw, &err) == CG_OK && !strcmp(lw, "ort-basic"),
              "ORT EPs share ort-basic");
        cg_error_clear(&err);
        EXPECT(cg_lowering_for_targets(mixed, 2, &lw, &err) == CG_USAGE &&
                  strstr(err.msg, "partition different graphs"),
              "mixing runtimes: %s", err.msg);
    }
    cg_target_registry_free(reg);
}

/* Steps the runtime folded at init: in the main plan (folded[i] for node i)
 * and, counted, in the bodies' plans. */
static size_t runtime_folded(const cg_plan *p, bool *folded)
{
    size_t in_bodies = 0;
    for (size_t s = 0; s < p->step_count; s++) {
        const cg_step *st = &p->steps[s];
        if (folded && st->folded && st->index < p->graph->node_count)
            folded[st->index] = true;
        else if (!folded && st->folded)
            in_bodies++;
        for (size_t k = 0; k < st->sub_count; k++)
            in_bodies += runtime_folded(st->subs[k].plan, NULL);
    }
    return in_bodies;
}

/* "convgate-init" removes the nodes the runtime folds when it is built
 * (src/run/fold.c), but for those whose values a node that runs reads and
 * an executing target could not (src/lower/convgate_init.c). */
static void init_fold_matches(const char *path)
{
    cg_error err;
    cg_error_clear(&err);
    cg_model *m = test_load_model(path);
    if (!m)
        return;
    cg_lowered *l = NULL;
    cg_runtime *rt = NULL;
    size_t n = m->graph->node_count;
    bool *folded = calloc(n + 1, sizeof *folded);
    EXPECT(folded != NULL, "out of memory");
    if (!folded || cg_lower(m, "convgate-init", NULL, 0, &l, &err) != CG_OK ||
        cg_runtime_init(m, NULL, &rt, &err) != CG_OK) {
        EXPECT(0, "%s: %s", path, err.msg);
        goto done;
    }
    size_t body_folds = runtime_folded(rt->main, folded), main_removed = 0, body_removed = 0;
    bool *removed = calloc(n + 1, sizeof *removed);
    for (size_t r = 0; removed && r < l->removed_count; r++) {
        const cg_lower_removed *x = &l->removed[r];
        EXPECT(strcmp(x->by, "constant folding at init") == 0, "%s: '%s' removed by %s", path,
               x->name, x->by);
        if (x->graph[0])
            body_removed++;
        else if (x->node < n) {
            removed[x->node] = true;
            main_removed++;
        }
    }
    size_t runtime_main = 0, kept = 0;
    const cg_graph *g = m->graph;
    for (size_t i = 0; removed && i < n; i++) {
        runtime_main += folded[i];
        const cg_node *nd = &g->nodes[i];
        EXPECT(folded[i] || !removed[i], "%s: node %zu '%s' (%s): the lowering removes it, the "
               "runtime runs it", path, i, nd->name ? nd->name : "", nd->op_type);
        if (!folded[i] || removed[i])
            continue;
        /* kept although folded: not a form a target reads, and a node that
         * runs reads it */
        bool read = false;
        for (size_t j = 0; j < n && !read; j++)
            for (size_t k = 0; !folded[j] && k < g->nodes[j].input_count; k++)
                for (size_t o = 0; o < nd->output_count; o++)
                    read |= g->nodes[j].inputs[k] && nd->outputs[o] && nd->outputs[o][0] &&
                            !strcmp(g->nodes[j].inputs[k], nd->outputs[o]);
        for (size_t o = 0; o < g->output_count && !read; o++)
            for (size_t k = 0; k < nd->output_count; k++)
                read |= nd->outputs[k] && !strcmp(g->outputs[o].name, nd->outputs[k]);
        EXPECT(read && strcmp(nd->op_type, "Constant") != 0, "%s: node %zu '%s' (%s): folded "
               "by the runtime, kept by the lowering for no reader", path, i,
               nd->name ? nd->name : "", nd->op_type);
        kept++;
    }
    EXPECT(body_removed <= body_folds, "%s: bodies: the runtime folds %zu nodes, the lowering "
           "removes %zu", path, body_folds, body_removed);
    printf("  convgate-init %s: %zu main-graph nodes removed, %zu kept (the runtime folds %zu), "
           "%zu of %zu in bodies\n", strrchr(path, '/') ? strrchr(path, '/') + 1 : path,
           main_removed, kept, runtime_main, body_removed, body_folds);
    free(removed);
done:
    cg_runtime_free(rt);
    cg_lowered_free(l);
    free(folded);
    cg_model_free(m);
}

/* Every .onnx of dir (sorted by readdir order; none when dir is absent). */
static void init_fold_dir(const char *dir)
{
    DIR *d = opendir(dir);
    if (!d)
        return;
    struct dirent *e;
    while ((e = readdir(d))) {
        size_t len = strlen(e->d_name);
        if (len < 6 || strcmp(e->d_name + len - 5, ".onnx") != 0)
            continue;
        char path[1024];
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        init_fold_matches(path);
    }
    closedir(d);
}

static void test_init_fold(void)
{
    init_fold_dir(DATA);
    init_fold_dir(CG_SOURCE_DIR "/examples");
    const char *zoo = getenv("CG_ZOO");
    if (zoo && zoo[0])
        init_fold_dir(zoo);
}

int main(void)
{
    test_torch_like();
    test_fold();
    test_if_const();
    test_targets();
    test_init_fold();
    test_openvino_fe();
    return test_done("test_lower");
}
