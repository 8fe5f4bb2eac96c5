/*
 * Reports of a lowering (convgate/lower.h): what the runtime's graph
 * optimizations removed and added, and the node inventory of both graphs,
 * which tests/scripts/ort_basic.sh compares with ONNX Runtime's own.
 */
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "convgate/lower.h"
#include "lower/lower_internal.h"
#include "report/report.h"

static void hist_graph(lower_hist *h, const cg_graph *g, bool deep, size_t *nodes)
{
    for (size_t i = 0; i < g->node_count; i++) {
        const cg_node *n = &g->nodes[i];
        lower_hist_add(h, n->domain, n->op_type);
        (*nodes)++;
        if (!deep)
            continue;
        for (size_t a = 0; a < n->attr_count; a++) {
            if (n->attrs[a].g)
                hist_graph(h, n->attrs[a].g, deep, nodes);
            for (size_t k = 0; k < n->attrs[a].graphs_count; k++)
                if (n->attrs[a].graphs[k])
                    hist_graph(h, n->attrs[a].graphs[k], deep, nodes);
        }
    }
}

/* "ConstantFolding x12, EliminateIdentity x47" over the removed nodes. */
static void by_summary(const cg_lowered *l, char *buf, size_t len)
{
    lower_hist h = {0};
    for (size_t i = 0; i < l->removed_count; i++)
        lower_hist_add(&h, NULL, l->removed[i].by);
    lower_hist_sort(&h);
    lower_hist_text(&h, SIZE_MAX, buf, len);
    lower_hist_free(&h);
}

static size_t node_total(const cg_graph *g)
{
    lower_hist h = {0};
    size_t n = 0;
    hist_graph(&h, g, true, &n);
    lower_hist_free(&h);
    return n;
}

void cg_lowered_report_text(FILE *f, const cg_lowered *l)
{
    char buf[1024];
    size_t before = l->source->graph->node_count, after = l->model->graph->node_count;
    fprintf(f, "Graph the runtime partitions: preprocess '%s'\n", l->lowering);
    fprintf(f, "  main graph: %zu nodes -> %zu\n", before, after);
    size_t all_before = node_total(l->source->graph), all_after = node_total(l->model->graph);
    if (all_before != before || all_after != after)
        fprintf(f, "  with control-flow bodies: %zu nodes -> %zu\n", all_before, all_after);
    size_t main_removed = cg_lowered_removed_count(l, "");
    fprintf(f, "  removed by %s: %zu", l->remover, main_removed);
    if (main_removed)
        fprintf(f, " (%s)", cg_lowered_removed_summary(l, "", 8, buf, sizeof buf));
    fputc('\n', f);
    if (l->removed_count > main_removed)
        fprintf(f, "  removed in control-flow bodies: %zu\n", l->removed_count - main_removed);
    if (l->removed_count) {
        by_summary(l, buf, sizeof buf);
        fprintf(f, "  by: %s\n", buf);
    }
    if (l->added_count)
        fprintf(f, "  added by them: %zu node(s) with no source node of their op (fusions)\n",
                l->added_count);
    for (size_t i = 0; i < l->cpu_missing_count; i++) {
        const cg_lower_op_count *m = &l->cpu_missing[i];
        fprintf(f, "  note: no CPU kernel for %s%s%s (%zu node%s): left to the CPU, the runtime "
                "replaces it by its ONNX function body or refuses the model\n",
                m->domain, m->domain[0] ? ":" : "", m->op_type, m->count, m->count == 1 ? "" : "s");
    }
    for (size_t i = 0; i < l->note_count; i++)
        fprintf(f, "  note: %s\n", l->notes[i]);
}

static json_t *hist_json(const cg_graph *g, bool deep, size_t *nodes)
{
    lower_hist h = {0};
    *nodes = 0;
    hist_graph(&h, g, deep, nodes);
    json_t *o = json_object();
    if (!o || h.oom) {
        lower_hist_free(&h);
        json_decref(o);
        return NULL;
    }
    lower_hist_sort(&h);
    for (size_t i = 0; i < h.n; i++)
        cg_json_set(o, h.v[i].key, json_integer((json_int_t)h.v[i].n));
    lower_hist_free(&h);
    return o;
}

static bool inventory_json(json_t *root, const char *key, const cg_graph *g)
{
    json_t *inv = json_object();
    size_t n_main, n_all;
    json_t *ops = hist_json(g, false, &n_main), *ops_all = hist_json(g, true, &n_all);
    if (!inv || !ops || !ops_all || cg_json_set(root, key, inv) != 0) {
        json_decref(inv);
        json_decref(ops);
        json_decref(ops_all);
        return false;
    }
    cg_json_set(inv, "nodes", json_integer((json_int_t)n_main));
    cg_json_set(inv, "ops", ops);
    cg_json_set(inv, "nodes_all_graphs", json_integer((json_int_t)n_all));
    cg_json_set(inv, "ops_all_graphs", ops_all);
    return true;
}

json_t *cg_lowered_report_json(const cg_lowered *l)
{
    json_t *root = json_object(), *removed = json_array(), *notes = json_array();
    if (!root || !removed || !notes || cg_json_set(root, "removed", removed) != 0 ||
        cg_json_set(root, "notes", notes) != 0) {
        json_decref(root);
        return NULL;
    }
    cg_json_set(root, "preprocess", cg_json_text(l->lowering));
    cg_json_set(root, "removed_by", cg_json_text(l->remover));
    if (!inventory_json(root, "source", l->source->graph) ||
        !inventory_json(root, "runtime", l->model->graph)) {
        json_decref(root);
        return NULL;
    }
    for (size_t i = 0; i < l->removed_count; i++) {
        const cg_lower_removed *r = &l->removed[i];
        json_t *o = json_object();
        if (!o || json_array_append_new(removed, o) != 0) {
            json_decref(root);
            return NULL;
        }
        cg_json_set(o, "graph", cg_json_text(r->graph));
        cg_json_set(o, "node", cg_json_text(r->name));
        cg_json_set(o, "op_type", cg_json_text(r->op_type));
        if (r->domain[0])
            cg_json_set(o, "domain", cg_json_text(r->domain));
        cg_json_set(o, "by", cg_json_text(r->by));
        cg_json_set(o, "into", r->into ? cg_json_text(r->into) : json_null());
    }
    cg_json_set(root, "removed_count", json_integer((json_int_t)l->removed_count));
    cg_json_set(root, "removed_main_graph",
                        json_integer((json_int_t)cg_lowered_removed_count(l, "")));
    cg_json_set(root, "added", json_integer((json_int_t)l->added_count));
    cg_json_set(root, "edited", json_boolean(l->edited));
    for (size_t i = 0; i < l->note_count; i++)
        json_array_append_new(notes, cg_json_text(l->notes[i]));
    json_t *missing = json_object();
    if (!missing || cg_json_set(root, "cpu_missing", missing) != 0) {
        json_decref(root);
        return NULL;
    }
    for (size_t i = 0; i < l->cpu_missing_count; i++) {
        char key[160];
        const cg_lower_op_count *m = &l->cpu_missing[i];
        snprintf(key, sizeof key, "%s%s%s", m->domain, m->domain[0] ? ":" : "", m->op_type);
        cg_json_set(missing, key, json_integer((json_int_t)m->count));
    }
    return root;
}
