/* libFuzzer target: arbitrary bytes as a .tflite model -> the lowering onto
 * the IR (cg_tflite_lower) -> the reference runtime's plan -> one run on
 * random inputs (allocations capped at 4 MiB: with more, legitimate work
 * outran libFuzzer's 10 s wall-clock timeout under ASan on the loaded
 * machine, a pooling of a 62 MiB input, a uint8 convolution writing 5.9 MB,
 * slow units rather than findings) and a 1 s time limit per input (a uint8
 * CONV_2D whose work is not bounded by its output, 2.4 s alone under ASan
 * and over 6 s on the loaded machine, stops with CG_LIMIT instead; kernels
 * of unbounded work check the limit). Models with a WHILE are
 * lowered and planned but not run: a loop whose condition never turns false
 * is the model's semantics (TFLite loops forever too), not a finding. Any
 * crash, leak, overflow, UB report or other hang is a finding. */
#include <stdint.h>
#include <string.h>

#include "convgate/budget.h"
#include "convgate/model.h"
#include "convgate/runtime.h"
#include "convgate/samples.h"
#include "convgate/tflite.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const size_t limit = (size_t)4 << 20;
    static cg_budget *budget;
    if (!budget)
        budget = cg_budget_new((uint64_t)64 << 20, 0);
    if (!budget)
        return 0;
    cg_error err;
    cg_error_clear(&err);
    if (!cg_tflite_detect(data, size))
        return 0;
    cg_model *m = NULL;
    if (cg_model_load_any_bytes(data, size, "fuzz.tflite", NULL, &m, &err) != CG_OK)
        return 0;
    bool loops = false;
    for (size_t i = 0; i < m->graph->node_count; i++)
        loops = loops || strcmp(m->graph->nodes[i].op_type, "Loop") == 0;
    /* a fresh deadline per input; memory left over would be a leak */
    cg_budget_set(budget, (uint64_t)64 << 20, 1.0);
    cg_runtime_options ro;
    cg_runtime_options_default(&ro);
    ro.max_alloc_bytes = limit;
    ro.budget = budget;
    cg_runtime *rt = NULL;
    cg_sample_set set = {0};
    if (cg_runtime_init(m, &ro, &rt, &err) == CG_OK && !loops &&
        cg_samples_random(m, 1, NULL, NULL, 0, limit, &set, &err) == CG_OK) {
        cg_named_value *outs = NULL;
        size_t n = 0;
        if (cg_runtime_run(rt, set.samples[0].inputs, set.samples[0].input_count, &outs, &n,
                           &err) == CG_OK)
            cg_runtime_free_outputs(outs, n);
    }
    cg_sample_set_free(&set);
    cg_runtime_free(rt);
    cg_model_free(m);
    return 0;
}
