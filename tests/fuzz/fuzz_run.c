/* libFuzzer target: models the checker accepts, run on the reference
 * runtime under a small memory budget (64 MiB, 8 MiB per allocation) and a
 * time limit (2 s per input), with seeded random inputs of the declared
 * types (symbolic dimensions 1). Loading and checking are fuzz_model's; a
 * crash, leak, UB report, or a run past libFuzzer's -timeout is a finding. */
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "convgate/budget.h"
#include "convgate/check.h"
#include "convgate/model.h"
#include "convgate/runtime.h"
#include "convgate/samples.h"
#include "convgate/tensor_io.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* A random tensor for a declared tensor input, or NULL to skip the model. */
static cg_value *random_input(const cg_value_info *vi, cg_rng *rng)
{
    const cg_type *t = vi->type;
    if (!t || t->kind != CG_TYPE_TENSOR || !t->has_elem_type || !cg_dtype_valid(t->elem_type) ||
        !t->shape || t->shape->rank > 8)
        return NULL;
    int64_t dims[8];
    for (size_t d = 0; d < t->shape->rank; d++) {
        const cg_dim *dim = &t->shape->dims[d];
        dims[d] = dim->has_value ? dim->value : 1;
        if (dims[d] < 0 || dims[d] > 4096)
            return NULL;
    }
    cg_error err;
    cg_error_clear(&err);
    cg_tensor x;
    if (cg_tensor_alloc(&x, (cg_dtype)t->elem_type, (int)t->shape->rank, dims, (size_t)1 << 20,
                        &err) != CG_OK)
        return NULL;
    cg_value *v = NULL;
    if (cg_random_fill(&x, NULL, rng, &err) != CG_OK ||
        cg_value_from_tensor(&x, &v, &err) != CG_OK) {
        cg_tensor_release(&x);
        return NULL;
    }
    return v;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static cg_budget *budget;
    if (!budget)
        budget = cg_budget_new((uint64_t)64 << 20, 0);
    if (!budget)
        return 0;
    cg_error err;
    cg_error_clear(&err);
    cg_model *m = NULL;
    if (cg_model_load_bytes(data, size, NULL, &m, &err) != CG_OK)
        return 0;
    cg_check_report report;
    bool clean = cg_check_model(m, NULL, &report, &err) == CG_OK && report.error_count == 0;
    cg_check_report_free(&report);
    const cg_graph *g = m->graph;
    if (!clean || !g || g->input_count > 16) {
        cg_model_free(m);
        return 0;
    }
    cg_named_value ins[16];
    size_t n = 0;
    cg_rng rng;
    cg_rng_seed(&rng, size);
    bool ok = true;
    for (size_t i = 0; i < g->input_count && ok; i++) {
        bool init = false;
        for (size_t k = 0; k < g->initializer_count && !init; k++)
            init = g->initializers[k].name && g->inputs[i].name &&
                   !strcmp(g->initializers[k].name, g->inputs[i].name);
        if (init)
            continue;
        ins[n].name = g->inputs[i].name;
        ins[n].value = random_input(&g->inputs[i], &rng);
        ok = ins[n].value != NULL;
        n += ok;
    }
    if (ok) {
        /* a fresh deadline per input; memory left over would be a leak */
        cg_budget_set(budget, (uint64_t)64 << 20, 2.0);
        cg_runtime_options opt;
        cg_runtime_options_default(&opt);
        opt.budget = budget;
        opt.max_alloc_bytes = (size_t)8 << 20;
        cg_runtime *rt = NULL;
        if (cg_runtime_init(m, &opt, &rt, &err) == CG_OK) {
            cg_named_value *outs = NULL;
            size_t count = 0;
            if (cg_runtime_run(rt, ins, n, &outs, &count, &err) == CG_OK)
                cg_runtime_free_outputs(outs, count);
        }
        cg_runtime_free(rt);
        if (cg_budget_in_use(budget) != 0)
            abort(); /* the runtime released less than it reserved */
    }
    for (size_t i = 0; i < n; i++)
        cg_value_free(ins[i].value);
    cg_model_free(m);
    return 0;
}
