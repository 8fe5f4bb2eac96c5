/*
 * What-if ranking: for each op type the targets refuse, the placement made
 * again with that op supported too (cg_target_assume_supported), compared
 * with the real one: CPU nodes, partitions, and the mixed-latency estimate
 * from the same per-node reference times (no second run).
 */
#include <stdlib.h>
#include <string.h>

#include "convgate/assign.h"
#include "convgate/profile.h"

static double gain_ms(const cg_what_if_gain *g)
{
    return g->timed ? g->mixed_before - g->mixed_after : 0.0;
}

static int gain_cmp(const void *pa, const void *pb)
{
    const cg_what_if_gain *a = pa, *b = pb;
    double da = gain_ms(a), db = gain_ms(b);
    if (da != db)
        return da > db ? -1 : 1;
    /* signed: supporting an op can add partitions (0 -> 1) or, through a
     * partition rule, leave more nodes on the CPU */
    double ma = (double)a->cpu_before - (double)a->cpu_after;
    double mb = (double)b->cpu_before - (double)b->cpu_after;
    if (ma != mb)
        return ma > mb ? -1 : 1;
    double ra = (double)a->partitions_before - (double)a->partitions_after;
    double rb = (double)b->partitions_before - (double)b->partitions_after;
    if (ra != rb)
        return ra > rb ? -1 : 1;
    return strcmp(a->op, b->op);
}

static bool mixed_ms(const cg_assignment *a, const cg_reference_profile *ref, double *out)
{
    if (!ref || !ref->node_ms || ref->node_count != a->graph->node_count)
        return false;
    cg_cost_inputs ci = {.assignment = a, .node_ms = ref->node_ms,
                         .overhead_ms = ref->overhead_ms};
    cg_cost_estimate e;
    cg_error err;
    cg_error_clear(&err);
    if (cg_cost_estimate_build(&ci, &e, &err) != CG_OK)
        return false;
    *out = e.mixed_ms;
    return true;
}

/* The key a refused node is ranked under: "Op" in the default domain, else
 * "domain:Op" (tflite:MEAN, onnx:If). */
static void op_key(const cg_node *node, char *key, size_t cap)
{
    const char *dom = node->domain ? node->domain : "";
    if (dom[0] && strcmp(dom, "ai.onnx") != 0)
        snprintf(key, cap, "%s:%s", dom, node->op_type);
    else
        snprintf(key, cap, "%s", node->op_type);
}

size_t cg_what_if_rank(const cg_placement *p, const cg_target *const *base, size_t n,
                       const char *const *assumed, size_t assumed_count,
                       const cg_reference_profile *ref, cg_what_if_gain *out, size_t cap,
                       size_t *skipped)
{
    const cg_assignment *a = p->main;
    size_t count = 0;
    *skipped = 0;
    if (n > CG_WHAT_IF_MAX_TARGETS || assumed_count >= CG_WHAT_IF_MAX_ASSUMED)
        return 0;
    for (size_t u = 0; u < a->unsupported_count; u++) {
        char key[sizeof out->op];
        op_key(&a->graph->nodes[a->unsupported[u].node], key, sizeof key);
        size_t k = 0;
        while (k < count && strcmp(out[k].op, key) != 0)
            k++;
        if (k == count) {
            if (count == cap) {
                (*skipped)++;
                continue;
            }
            memset(&out[count], 0, sizeof out[count]);
            snprintf(out[count].op, sizeof out[count].op, "%s", key);
            count++;
        }
        out[k].refused++;
    }
    double before = 0;
    bool timed = mixed_ms(a, ref, &before);
    size_t cpu_before = cg_assign_count_owned(a, CG_OWNER_CPU);
    size_t kept = 0;
    for (size_t k = 0; k < count; k++) {
        const char *ops[CG_WHAT_IF_MAX_ASSUMED];
        size_t op_count = 0;
        for (size_t i = 0; i < assumed_count; i++)
            ops[op_count++] = assumed[i];
        ops[op_count++] = out[k].op;
        cg_target *w[CG_WHAT_IF_MAX_TARGETS];
        cg_placement *q = NULL;
        cg_error err;
        cg_error_clear(&err);
        if (cg_targets_assume_supported(base, n, ops, op_count, w, &err) != CG_OK) {
            (*skipped)++;
            continue;
        }
        if (cg_placement_build(p->model, p->types, (const cg_target *const *)w, n, &q, &err) !=
            CG_OK) {
            cg_targets_assumed_free(w, n);
            (*skipped)++;
            continue;
        }
        cg_what_if_gain g = out[k];
        g.cpu_before = cpu_before;
        g.cpu_after = cg_assign_count_owned(q->main, CG_OWNER_CPU);
        g.partitions_before = a->partition_count;
        g.partitions_after = q->main->partition_count;
        g.mixed_before = before;
        g.timed = timed && mixed_ms(q->main, ref, &g.mixed_after);
        cg_placement_free(q);
        cg_targets_assumed_free(w, n);
        out[kept++] = g;
    }
    qsort(out, kept, sizeof *out, gain_cmp);
    return kept;
}
