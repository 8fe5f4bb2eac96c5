/*
 * Work: a deterministic stand-in for node time (convgate/profile.h), for
 * estimates that must read the same on every run, such as the manifest of
 * `convgate convert`. A node's work is its multiply-accumulates for the
 * convolution and matrix ops, and otherwise the elements it reads or
 * writes, whichever is larger; it becomes milliseconds at an assumed rate.
 * It ranks nodes the way timings do for compute-bound models and says
 * nothing about a particular machine: `convgate profile` measures.
 */
#include <stdlib.h>
#include <string.h>

#include "convgate/profile.h"
#include "convgate/target.h"
#include "ir/walk.h"

static double elements(const cg_type_env *types, const char *name)
{
    const cg_value_type *t = name && name[0] ? cg_type_env_get(types, name) : NULL;
    if (!t || !t->known)
        return 0;
    double n = 1;
    for (int d = 0; d < t->rank; d++)
        n *= (double)t->dims[d];
    return n;
}

static const cg_value_type *known(const cg_type_env *types, const cg_node *n, size_t i)
{
    const cg_value_type *t = i < n->input_count && n->inputs[i] && n->inputs[i][0]
                                 ? cg_type_env_get(types, n->inputs[i])
                                 : NULL;
    return t && t->known ? t : NULL;
}

double cg_cost_node_work(const cg_graph *g, size_t node, const cg_type_env *types)
{
    const cg_node *n = &g->nodes[node];
    const char *op = n->op_type ? n->op_type : "";
    double out = 0;
    for (size_t k = 0; k < n->output_count; k++)
        out += elements(types, n->outputs[k]);
    double in0 = n->input_count ? elements(types, n->inputs[0]) : 0;
    const cg_value_type *w = known(types, n, 1), *x = known(types, n, 0);
    if (cg_domain_is_default(n->domain)) {
        if (strcmp(op, "Conv") == 0 && w && w->rank >= 2) {
            double per = 1;
            for (int d = 1; d < w->rank; d++)
                per *= (double)w->dims[d];
            return out * per;
        }
        if (strcmp(op, "ConvTranspose") == 0 && w && w->rank >= 2) {
            double per = 1;
            for (int d = 1; d < w->rank; d++)
                per *= (double)w->dims[d];
            return in0 * per;
        }
        if ((strcmp(op, "MatMul") == 0 || strcmp(op, "Gemm") == 0) && x && x->rank >= 1) {
            int64_t k = x->dims[x->rank - 1];
            if (strcmp(op, "Gemm") == 0 && x->rank == 2 && cg_node_attr_int(n, "transA", 0))
                k = x->dims[0];
            return out * (double)k;
        }
    }
    return out > in0 ? out : in0;
}

cg_status cg_profile_work_estimate(const cg_assignment *a, const cg_type_env *types,
                                   double units_per_ms, cg_cost_estimate *out, cg_error *err)
{
    if (!a || !a->graph || !(units_per_ms > 0))
        return cg_error_set(err, CG_USAGE, "work estimate: an assignment and a rate > 0 needed");
    size_t n = a->graph->node_count;
    double *ms = calloc(n ? n : 1, sizeof *ms);
    if (!ms)
        return cg_error_set(err, CG_NOMEM, "work estimate: out of memory");
    for (size_t i = 0; i < n; i++)
        ms[i] = cg_cost_node_work(a->graph, i, types) / units_per_ms;
    cg_cost_inputs in = {a, ms, 0.0, NULL, NULL, NULL, NULL};
    cg_status st = cg_cost_estimate_build(&in, out, err);
    free(ms);
    return st;
}
