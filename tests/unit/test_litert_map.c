/* ONNX -> TFLite mapping (cg_litert_lower): the ops a converter emits for
 * the zoo's models, judged by litert-gpu's tflite:* rules. Needs the model
 * zoo ($CG_ZOO; without it that part is skipped, a model it lacks is noted) and
 * the ONNX twin of the CNN fixture, whose ops must be those of its .tflite.
 * Prints, per model, the ONNX node count, the TFLite op count, the ops
 * removed by conversion and the litert-gpu residency. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "convgate/assign.h"
#include "convgate/tflite.h"
#include "testlib.h"

typedef struct zoo_case {
    const char *file;
    long expect_gpu_all; /* 1: every TFLite op on the GPU in one partition */
} zoo_case;

static const zoo_case cases[] = {
    {"efficientnet_b0.onnx", 1}, {"mobilenet_v2.onnx", 1}, {"mobilenet_v3_small.onnx", 1},
    {"resnet18.onnx", 1},        {"resnet50.onnx", 1},     {"squeezenet1_1.onnx", 1},
};

static size_t count_op(const cg_model *m, const char *op)
{
    size_t n = 0;
    for (size_t i = 0; i < m->graph->node_count; i++)
        n += strcmp(m->graph->nodes[i].op_type, op) == 0;
    return n;
}

static size_t count_src(const cg_model *m, const char *op)
{
    size_t n = 0;
    for (size_t i = 0; i < m->graph->node_count; i++)
        n += m->graph->nodes[i].op_type && strcmp(m->graph->nodes[i].op_type, op) == 0;
    return n;
}

static void run_case(const char *dir, const zoo_case *zc, const cg_target *gpu)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", dir, zc->file);
    if (access(path, R_OK) != 0) {
        printf("%-26s not in the zoo\n", zc->file);
        return;
    }
    cg_model *src = NULL;
    cg_type_env *types = NULL, *ltypes = NULL;
    cg_litert_lowered *l = NULL;
    cg_placement *p = NULL;
    cg_error err;
    cg_error_clear(&err);
    EXPECT(cg_model_load(path, NULL, &src, &err) == CG_OK, "%s", err.msg);
    EXPECT(src && cg_type_env_build(src, NULL, 0, &types, &err) == CG_OK, "%s", err.msg);
    EXPECT(types && cg_litert_lower(src, types, &l, &err) == CG_OK, "%s", err.msg);
    EXPECT(l && cg_type_env_build_declared(l->model, &ltypes, &err) == CG_OK, "%s", err.msg);
    EXPECT(ltypes && cg_placement_build(l->model, ltypes, &gpu, 1, &p, &err) == CG_OK, "%s",
           err.msg);
    if (p) {
        const cg_assignment *a = p->main;
        size_t ops = a->graph->node_count, on = cg_assign_count_owned(a, 0);
        printf("%-26s %4zu ONNX nodes -> %4zu TFLite ops (%zu removed), litert-gpu %zu/%zu in %zu "
               "partition(s)",
               zc->file, src->graph->node_count, ops, l->removed_count, on, ops,
               a->partition_count);
        if (a->unsupported_count)
            printf("; first refused: %s", a->unsupported[0].reason);
        printf("\n");
        EXPECT(ops + l->removed_count >= src->graph->node_count, "%s: node accounting",
               zc->file);
        EXPECT(count_op(l->model, "MEAN") == count_src(src, "GlobalAveragePool"),
               "%s: GlobalAveragePool -> MEAN", zc->file);
        EXPECT(count_op(l->model, "Identity") == 0 && count_op(l->model, "Constant") == 0,
               "%s: Identity/Constant are no ops", zc->file);
        EXPECT(count_op(l->model, "FULLY_CONNECTED") == count_src(src, "Gemm"),
               "%s: Gemm -> FULLY_CONNECTED", zc->file);
        if (zc->expect_gpu_all)
            EXPECT(on == ops && a->partition_count == 1, "%s: %zu/%zu on litert-gpu (%s)",
                   zc->file, on, ops, a->unsupported_count ? a->unsupported[0].reason : "");
    }
    cg_placement_free(p);
    cg_type_env_free(ltypes);
    cg_litert_lowered_free(l);
    cg_type_env_free(types);
    cg_model_free(src);
}

/* Ground truth: the ONNX twin of the CNN fixture maps onto the same TFLite
 * ops its .tflite has (tests/data/tflite/models/cnn.tflite, the same model
 * written as TFLite). */
static void test_twin(const cg_target *gpu)
{
    const char *data = CG_SOURCE_DIR "/tests/data/tflite";
    char path[512];
    cg_model *src = NULL, *tv = NULL;
    cg_tflite_model *tfl = NULL;
    cg_type_env *types = NULL, *ltypes = NULL;
    cg_litert_lowered *l = NULL;
    cg_placement *p = NULL;
    cg_error err;
    cg_error_clear(&err);
    snprintf(path, sizeof path, "%s/twins/cnn.onnx", data);
    EXPECT(cg_model_load(path, NULL, &src, &err) == CG_OK, "%s", err.msg);
    EXPECT(src && cg_type_env_build(src, NULL, 0, &types, &err) == CG_OK, "%s", err.msg);
    EXPECT(types && cg_litert_lower(src, types, &l, &err) == CG_OK, "%s", err.msg);
    snprintf(path, sizeof path, "%s/models/cnn.tflite", data);
    EXPECT(cg_tflite_load(path, NULL, &tfl, &err) == CG_OK, "%s", err.msg);
    EXPECT(tfl && cg_tflite_op_model(tfl, &tv, &err) == CG_OK, "%s", err.msg);
    if (l && tv) {
        static const char *const ops[] = {"CONV_2D", "DEPTHWISE_CONV_2D", "MEAN",
                                          "FULLY_CONNECTED", "SOFTMAX", "PAD", "RELU"};
        EXPECT(l->model->graph->node_count == tv->graph->node_count,
               "twin: %zu mapped ops, the .tflite has %zu", l->model->graph->node_count,
               tv->graph->node_count);
        for (size_t i = 0; i < sizeof ops / sizeof ops[0]; i++)
            EXPECT(count_op(l->model, ops[i]) == count_op(tv, ops[i]),
                   "twin: %zu %s mapped, the .tflite has %zu", count_op(l->model, ops[i]), ops[i],
                   count_op(tv, ops[i]));
        EXPECT(cg_type_env_build_declared(l->model, &ltypes, &err) == CG_OK, "%s", err.msg);
        EXPECT(ltypes && cg_placement_build(l->model, ltypes, &gpu, 1, &p, &err) == CG_OK, "%s",
               err.msg);
        EXPECT(p && cg_assign_count_owned(p->main, 0) == l->model->graph->node_count,
               "twin: not all on litert-gpu");
    }
    cg_placement_free(p);
    cg_type_env_free(ltypes);
    cg_model_free(tv);
    cg_tflite_free(tfl);
    cg_litert_lowered_free(l);
    cg_type_env_free(types);
    cg_model_free(src);
}

int main(void)
{
    const char *dir = getenv("CG_ZOO");
    cg_target_registry *reg = NULL;
    cg_error err;
    cg_error_clear(&err);
    EXPECT(cg_target_registry_load(CG_SOURCE_DIR "/profiles", &reg, &err) == CG_OK, "%s", err.msg);
    const cg_target *gpu = reg ? cg_target_registry_find(reg, "litert-gpu", &err) : NULL;
    EXPECT(gpu, "%s", err.msg);
    if (gpu)
        test_twin(gpu);
    if (!dir || !*dir || access(dir, R_OK) != 0)
        test_skip("no model zoo (set CG_ZOO)");
    for (size_t i = 0; gpu && dir && *dir && i < sizeof cases / sizeof cases[0]; i++)
        run_case(dir, &cases[i], gpu);
    cg_target_registry_free(reg);
    return test_done("litert_map");
}
