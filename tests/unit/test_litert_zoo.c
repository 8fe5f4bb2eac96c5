/*
 * The litert-gpu residency of the zoo's ONNX models, pinned: each model is
 * placed as `convgate assign MODEL --target litert-gpu` places it (the
 * profile's preprocess "onnx-to-tflite": the TFLite ops a converter emits,
 * typed from their declarations), at the dims a conversion at a fixed
 * shape would use, and the ops on the GPU, the ops placed, the source
 * nodes removed by the conversion and the partitions must be the table's
 * (docs/tflite.md "ONNX models on LiteRT targets" shows the same table with
 * the reason for every op left on the CPU). Needs the model zoo ($CG_ZOO);
 * without it the test is skipped, a model it lacks is noted, and so is an
 * export bench/zoo.superseded lists (the pins are of bench/zoo.sha256's).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "convgate/assign.h"
#include "convgate/lower.h"
#include "testlib.h"

#define MAX_BINDS 4

typedef struct zoo_case {
    const char *file;
    cg_dim_binding dims[MAX_BINDS]; /* symbols (or --shape keys) a conversion fixes */
    size_t on, total, removed, partitions;
    const char *first_refusal; /* a substring of the first refusal, or NULL for none */
} zoo_case;

static const zoo_case cases[] = {
    {"efficientnet_b0.onnx", {{NULL, 0}}, 244, 244, 18, 1, NULL},
    {"mobilenet_v2.onnx", {{NULL, 0}}, 70, 70, 105, 1, NULL},
    {"mobilenet_v3_small.onnx", {{NULL, 0}}, 140, 140, 19, 1, NULL},
    {"resnet18.onnx", {{NULL, 0}}, 37, 37, 33, 1, NULL},
    {"resnet50.onnx", {{NULL, 0}}, 78, 78, 96, 1, NULL},
    {"squeezenet1_1.onnx", {{NULL, 0}}, 39, 39, 44, 1, NULL},
    {"ch_PP-OCRv4_det_infer.onnx",
     {{"p2o.DynamicDimension.0", 1}, {"p2o.DynamicDimension.1", 320},
      {"p2o.DynamicDimension.2", 320}, {NULL, 0}},
     328, 328, 379, 1, NULL},
    /* the attention's [B, T, 3, heads, dim] reshapes: rank 5 (gpu_compatibility.cc) */
    {"ch_PP-OCRv4_rec_infer.onnx",
     {{"p2o.DynamicDimension.0", 1}, {"p2o.DynamicDimension.1", 320}, {NULL, 0}},
     268, 378, 398, 1, "rank 5"},
    {"ch_ppocr_mobile_v2.0_cls_infer.onnx",
     {{"p2o.DynamicDimension.0", 1}, {"p2o.DynamicDimension.1", 48},
      {"p2o.DynamicDimension.2", 192}, {NULL, 0}},
     178, 178, 324, 1, NULL},
    /* LayerNormalization as Keras's ten ops, the GELU pattern as GELU; the
     * class token's Gather has int64 indices (the delegate takes int32), which
     * leaves the head's FULLY_CONNECTED a second partition, dropped */
    {"vit_b_16.onnx", {{NULL, 0}}, 591, 593, 406, 1, "int64 of input 1"},
    /* the sample-rate test (EQUAL) and the If around it */
    {"silero_vad_v5.onnx",
     {{"input[0]", 1}, {"input[1]", 512}, {"state[1]", 1}, {NULL, 0}}, 0, 2, 3, 0, "EQUAL"},
    {"silero_vad_legacy.onnx", {{"batch", 1}, {"sequence", 512}, {NULL, 0}}, 0, 2, 0, 0,
     "EQUAL"},
};

static void run_case(const char *dir, const zoo_case *zc, const cg_target *gpu)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", dir, zc->file);
    if (access(path, R_OK) != 0) {
        printf("%-34s not in the zoo\n", zc->file);
        return;
    }
    if (test_zoo_superseded(path, zc->file))
        return;
    size_t nd = 0;
    while (nd < MAX_BINDS && zc->dims[nd].symbol)
        nd++;
    cg_model *src = NULL;
    cg_lowered *l = NULL;
    cg_type_env *types = NULL;
    cg_placement *p = NULL;
    cg_error err;
    cg_error_clear(&err);
    EXPECT(cg_model_load(path, NULL, &src, &err) == CG_OK, "%s", err.msg);
    EXPECT(src && cg_lower_for_targets(src, &gpu, 1, zc->dims, nd, &l, &err) == CG_OK, "%s",
           err.msg);
    EXPECT(l && cg_lowered_types(l, zc->dims, nd, NULL, &types, &err) == CG_OK, "%s", err.msg);
    EXPECT(types && cg_placement_build(l->model, types, &gpu, 1, &p, &err) == CG_OK, "%s",
           err.msg);
    if (p) {
        const cg_assignment *a = p->main;
        size_t total = a->graph->node_count, on = cg_assign_count_owned(a, 0);
        size_t removed = cg_lowered_removed_count(l, "");
        const char *first = a->unsupported_count ? a->unsupported[0].reason : "";
        printf("%-34s %4zu ONNX nodes -> %4zu TFLite ops (%zu removed), litert-gpu %zu/%zu in "
               "%zu partition(s)%s%s\n",
               zc->file, src->graph->node_count, total, removed, on, total, a->partition_count,
               *first ? "; first refused: " : "", first);
        EXPECT(on == zc->on && total == zc->total && removed == zc->removed &&
                   a->partition_count == zc->partitions,
               "%s: %zu/%zu on litert-gpu, %zu removed, %zu partitions; pinned %zu/%zu, %zu, %zu",
               zc->file, on, total, removed, a->partition_count, zc->on, zc->total, zc->removed,
               zc->partitions);
        if (zc->first_refusal)
            EXPECT(strstr(first, zc->first_refusal), "%s: first refusal '%s', want '%s'",
                   zc->file, first, zc->first_refusal);
        else
            EXPECT(!*first, "%s: refused: %s", zc->file, first);
    }
    cg_placement_free(p);
    cg_type_env_free(types);
    cg_lowered_free(l);
    cg_model_free(src);
}

int main(void)
{
    const char *dir = getenv("CG_ZOO");
    if (!dir || !*dir || access(dir, R_OK) != 0)
        test_skip("no model zoo (set CG_ZOO)");
    cg_target_registry *reg = NULL;
    cg_error err;
    cg_error_clear(&err);
    EXPECT(cg_target_registry_load(CG_SOURCE_DIR "/profiles", &reg, &err) == CG_OK, "%s", err.msg);
    const cg_target *gpu = reg ? cg_target_registry_find(reg, "litert-gpu", &err) : NULL;
    EXPECT(gpu, "%s", err.msg);
    for (size_t i = 0; gpu && dir && *dir && i < sizeof cases / sizeof cases[0]; i++)
        run_case(dir, &cases[i], gpu);
    cg_target_registry_free(reg);
    return test_done("litert_zoo");
}
