/*
 * The per-node view of a report (report/report.h, docs/html-report.md): the
 * graph's nodes with their owner, partition, refusal, reference time and the
 * error measured at their outputs, the edges between them, the partitions,
 * the boundary ledger and the targets' cited sources. The HTML report and
 * the Model Explorer overlays are drawn from this one object, next to the
 * command's --json result, so neither recomputes what the library found.
 *
 * Errors per tensor come from a bisection (every watched tensor) and from
 * the compared graph outputs; a tensor both name keeps the bisection's
 * figure, which is the one measured on the sample that failed.
 *
 * With a lowering (the graph the targets partition is not the file's), the
 * view still draws the file's nodes, the graph the user opens: each takes
 * what was measured on the runtime node it stands for, found through the
 * lowering's origin record (cg_lowered_origins), and a node the runtime's
 * optimizations removed is owned by "removed", with the transformation and
 * the runtime node it was fused into, if any. Only the lowering's generic
 * record is read (origins, removed), so any lowering draws the same way.
 */
#include <stdlib.h>
#include <string.h>

#include "convgate/assign.h"
#include "convgate/lower.h"
#include "convgate/parity.h"
#include "report/report.h"

#define GV_LABEL 256

/* obj[key] = v; false when either failed (v's reference is taken). */
static bool gv_set(json_t *obj, const char *key, json_t *v)
{
    return cg_json_set(obj, key, v) == 0;
}

static bool gv_push(json_t *arr, json_t *v) { return v && json_array_append_new(arr, v) == 0; }

/* One measured tensor. */
typedef struct gv_error {
    const char *tensor;
    const cg_metrics *m;
    const char *source; /* "bisect" or "output" */
} gv_error;

/* Every measured tensor, sorted by name, one entry per name. */
typedef struct gv_errors {
    gv_error *items;
    size_t count;
} gv_errors;

static int gv_error_cmp(const void *a, const void *b)
{
    return strcmp(((const gv_error *)a)->tensor, ((const gv_error *)b)->tensor);
}

static bool gv_errors_build(const cg_graph_view *v, gv_errors *e)
{
    size_t judged = v->judged ? v->judged->output_count : 0;
    size_t n = v->output_count + judged + (v->bisect ? v->bisect->point_count : 0);
    e->count = 0;
    e->items = malloc((n ? n : 1) * sizeof *e->items);
    if (!e->items)
        return false;
    for (size_t i = 0; v->bisect && i < v->bisect->point_count; i++)
        if (v->bisect->points[i].compared)
            e->items[e->count++] = (gv_error){v->bisect->points[i].tensor,
                                              &v->bisect->points[i].metrics, "bisect"};
    for (size_t i = 0; i < v->output_count; i++)
        if (v->outputs[i].name && v->outputs[i].metrics)
            e->items[e->count++] = (gv_error){v->outputs[i].name, v->outputs[i].metrics, "output"};
    for (size_t i = 0; i < judged; i++)
        if (v->judged->outputs[i].name)
            e->items[e->count++] = (gv_error){v->judged->outputs[i].name,
                                              &v->judged->outputs[i].merged, "output"};
    /* one entry per name; a name both measured keeps the bisection's */
    qsort(e->items, e->count, sizeof *e->items, gv_error_cmp);
    size_t w = 0;
    for (size_t r = 0; r < e->count; r++) {
        if (w && strcmp(e->items[w - 1].tensor, e->items[r].tensor) == 0) {
            if (strcmp(e->items[r].source, "bisect") == 0)
                e->items[w - 1] = e->items[r];
            continue;
        }
        e->items[w++] = e->items[r];
    }
    e->count = w;
    return true;
}

static const gv_error *gv_errors_find(const gv_errors *e, const char *name)
{
    if (!name || !e->count)
        return NULL;
    gv_error key = {name, NULL, NULL};
    return bsearch(&key, e->items, e->count, sizeof *e->items, gv_error_cmp);
}

/* {tensor, source, pass, max_abs, max_rel, mean_abs, mismatches, count, cosine} */
static json_t *gv_error_json(const gv_error *er)
{
    json_t *o = json_object();
    if (!o)
        return NULL;
    const cg_metrics *m = er->m;
    if (!gv_set(o, "tensor", cg_json_text(er->tensor)) ||
        !gv_set(o, "source", json_string(er->source)) ||
        !gv_set(o, "pass", json_boolean(m->pass)) ||
        !gv_set(o, "max_abs", cg_json_number(m->max_abs)) ||
        !gv_set(o, "max_rel", cg_json_number(m->max_rel)) ||
        !gv_set(o, "mean_abs", cg_json_number(m->mean_abs)) ||
        !gv_set(o, "cosine", cg_json_number(m->cosine)) ||
        !gv_set(o, "mismatches", json_integer((json_int_t)m->mismatches)) ||
        !gv_set(o, "count", json_integer((json_int_t)m->count))) {
        json_decref(o);
        return NULL;
    }
    return o;
}

/* The worse of two measured outputs of one node: a failing one first, then
 * the larger max_abs (NaN and inf count as largest). */
static bool gv_worse(const gv_error *a, const gv_error *b)
{
    if (!b)
        return true;
    if (a->m->pass != b->m->pass)
        return !a->m->pass;
    double x = a->m->max_abs, y = b->m->max_abs;
    if (x != x)
        return y == y;
    return y == y && x > y;
}

/* Per node: the refusal (unsupported) or partition-rule drop, if any. */
typedef struct gv_refusal {
    const cg_unsupported *u;
    bool dropped;
} gv_refusal;

#define GV_NONE ((size_t)-1)

/* The graph drawn: the file's (the lowering's source when there is one). */
static const cg_graph *gv_file(const cg_graph_view *v)
{
    return v->lowered ? v->lowered->source->graph : v->model->graph;
}

/* The file's node n as the runtime sees it: the runtime node it stands for
 * (GV_NONE when none: removed, or no placement), its removal record (main
 * graph) if the runtime's optimizations removed it, and its reference time
 * (the time of each runtime node goes to its first origin). Without a
 * lowering every node stands for itself. */
typedef struct gv_source {
    size_t runtime;
    const cg_lower_removed *removed;
    double ms;
    bool timed;
} gv_source;

/* One gv_source per node of the file's graph (model nodes when not
 * lowered). A file node that several runtime nodes stand for (MatMul+Add
 * made into Reshape, Gemm, Reshape) takes the one of its own op, else the
 * first; NULL when out of memory. */
static gv_source *gv_sources_build(const cg_graph_view *v)
{
    const cg_lowered *l = v->lowered;
    size_t n = gv_file(v)->node_count;
    gv_source *src = calloc(n ? n : 1, sizeof *src);
    if (!src)
        return NULL;
    for (size_t i = 0; i < n; i++)
        src[i] = (gv_source){l ? GV_NONE : i, NULL, !l && v->node_ms ? v->node_ms[i] : 0,
                             !l && v->node_ms};
    if (!l)
        return src;
    const cg_graph *lg = l->model->graph, *g = gv_file(v);
    for (size_t i = 0; i < lg->node_count; i++) {
        const size_t *o = NULL;
        size_t k = cg_lowered_origins(l, i, &o);
        for (size_t j = 0; j < k; j++) {
            if (o[j] >= n)
                continue;
            gv_source *s = &src[o[j]];
            const char *op = lg->nodes[i].op_type, *sop = g->nodes[o[j]].op_type;
            bool same = op && sop && strcmp(op, sop) == 0;
            if (s->runtime == GV_NONE ||
                (same && strcmp(lg->nodes[s->runtime].op_type ? lg->nodes[s->runtime].op_type
                                                               : "",
                                sop) != 0))
                s->runtime = i;
            if (j == 0 && v->node_ms) {
                s->ms += v->node_ms[i];
                s->timed = true;
            }
        }
    }
    for (size_t r = 0; r < l->removed_count; r++)
        if (l->removed[r].graph && !l->removed[r].graph[0] && l->removed[r].node < n)
            src[l->removed[r].node].removed = &l->removed[r];
    return src;
}

/* The owner's name of runtime node i ("cpu" or a target), or NULL. */
static const char *gv_owner(const cg_assignment *a, size_t i)
{
    if (!a || i == GV_NONE)
        return NULL;
    return a->owner[i] == CG_OWNER_CPU ? "cpu" : a->targets[a->owner[i]]->name;
}

static json_t *gv_nodes_json(const cg_graph_view *v, const gv_errors *errs,
                             const gv_source *src)
{
    const cg_graph *g = gv_file(v);
    /* the placement indexes the graph the targets partition */
    const cg_graph *pg = v->lowered ? v->lowered->model->graph : g;
    const cg_assignment *a = v->assignment;
    json_t *nodes = json_array();
    gv_refusal *why = calloc(pg->node_count ? pg->node_count : 1, sizeof *why);
    char label[GV_LABEL], text[2 * GV_LABEL + 96];
    if (!nodes || !why)
        goto fail;
    for (size_t i = 0; a && i < a->unsupported_count; i++)
        if (a->unsupported[i].node < pg->node_count)
            why[a->unsupported[i].node] = (gv_refusal){&a->unsupported[i], false};
    for (size_t i = 0; a && i < a->dropped_count; i++)
        if (a->dropped[i].node < pg->node_count && !why[a->dropped[i].node].u)
            why[a->dropped[i].node] = (gv_refusal){&a->dropped[i], true};
    for (size_t n = 0; n < g->node_count; n++) {
        const cg_node *nd = &g->nodes[n];
        const gv_source *s = &src[n];
        size_t rt = s->runtime;
        json_t *o = json_object(), *ins = NULL, *outs = NULL;
        const char *owner = s->removed && a ? "removed" : gv_owner(a, rt);
        const gv_error *worst = NULL;
        if (!gv_push(nodes, o) || !gv_set(o, "name", cg_json_text(cg_assign_node_label(
                                                          g, n, label, sizeof label))) ||
            !gv_set(o, "named", json_boolean(nd->name && nd->name[0])) ||
            !gv_set(o, "op", cg_json_text(nd->op_type ? nd->op_type : "?")) ||
            !gv_set(o, "domain", cg_json_text(nd->domain ? nd->domain : "")) ||
            !gv_set(o, "owner", owner ? cg_json_text(owner) : json_null()) ||
            !gv_set(o, "partition",
                    json_integer(a && rt != GV_NONE ? a->partition_of[rt] : -1)) ||
            !gv_set(o, "ms", s->timed ? cg_json_number(s->ms) : json_null()) ||
            !gv_set(o, "inputs", ins = json_array()) || !gv_set(o, "outputs", outs = json_array()))
            goto fail;
        for (size_t i = 0; i < nd->input_count; i++)
            if (!gv_push(ins, cg_json_text(nd->inputs[i] ? nd->inputs[i] : "")))
                goto fail;
        for (size_t i = 0; i < nd->output_count; i++) {
            const gv_error *e = gv_errors_find(errs, nd->outputs[i]);
            if (!gv_push(outs, cg_json_text(nd->outputs[i] ? nd->outputs[i] : "")))
                goto fail;
            if (e && gv_worse(e, worst))
                worst = e;
        }
        if (!gv_set(o, "error", worst ? gv_error_json(worst) : json_null()))
            goto fail;
        const gv_refusal *r = rt != GV_NONE ? &why[rt] : NULL;
        if (s->removed) {
            const cg_lower_removed *rm = s->removed;
            if (rm->into)
                snprintf(text, sizeof text, "fused into '%s' by %s", rm->into, rm->by);
            else
                snprintf(text, sizeof text, "removed by %s", rm->by);
            if (!gv_set(o, "reason", cg_json_text(text)) ||
                !gv_set(o, "rule", json_string("removed")) ||
                !gv_set(o, "refused_by", json_null()))
                goto fail;
        } else if (r && r->u) {
            if (!gv_set(o, "reason", cg_json_text(cg_assign_bare_reason(pg, rt, r->u->reason))) ||
                !gv_set(o, "rule", json_string(r->dropped ? "partition rule" : "refused")) ||
                !gv_set(o, "refused_by", cg_json_text(a->targets[r->u->target]->name)))
                goto fail;
        } else if (!gv_set(o, "reason", json_null()) || !gv_set(o, "rule", json_null()) ||
                   !gv_set(o, "refused_by", json_null())) {
            goto fail;
        }
        /* with a lowering: the transformation that removed it, and the
         * runtime node it runs as (a fused node's owner is "removed"; runs_on
         * says where the node it was fused into runs) */
        if (v->lowered &&
            (!gv_set(o, "removed_by", s->removed ? cg_json_text(s->removed->by) : json_null()) ||
             !gv_set(o, "runtime_node",
                     rt != GV_NONE ? cg_json_text(cg_assign_node_label(pg, rt, label, sizeof label))
                                   : json_null()) ||
             !gv_set(o, "runs_on", gv_owner(a, rt) ? cg_json_text(gv_owner(a, rt)) : json_null())))
            goto fail;
    }
    free(why);
    return nodes;
fail:
    free(why);
    json_decref(nodes);
    return NULL;
}

static int gv_name_cmp(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* Graph inputs and outputs by name; an input that is also an initializer
 * (IR < 4 lists every weight as an input) is a weight, not an input. */
static json_t *gv_values_json(const cg_graph *g, bool inputs)
{
    json_t *arr = json_array();
    const char **inits = malloc((g->initializer_count ? g->initializer_count : 1) *
                                sizeof *inits);
    size_t ninit = 0, n = inputs ? g->input_count : g->output_count;
    if (!arr || !inits)
        goto fail;
    for (size_t k = 0; inputs && k < g->initializer_count; k++)
        if (g->initializers[k].name)
            inits[ninit++] = g->initializers[k].name;
    qsort(inits, ninit, sizeof *inits, gv_name_cmp);
    for (size_t i = 0; i < n; i++) {
        const cg_value_info *vi = inputs ? &g->inputs[i] : &g->outputs[i];
        const char *name = vi->name ? vi->name : "";
        if (ninit && bsearch(&name, inits, ninit, sizeof *inits, gv_name_cmp))
            continue;
        if (!gv_push(arr, cg_json_text(name)))
            goto fail;
    }
    free(inits);
    return arr;
fail:
    free(inits);
    json_decref(arr);
    return NULL;
}

/* The partitions over the view's nodes: a file node is in the partition of
 * the runtime node it stands for (a node fused into a partition's node is
 * drawn inside it). */
static json_t *gv_partitions_json(const cg_assignment *a, const gv_source *src, size_t n)
{
    json_t *arr = json_array();
    for (size_t p = 0; arr && a && p < a->partition_count; p++) {
        const cg_partition *pp = &a->partitions[p];
        json_t *o = json_object(), *nodes = NULL;
        bool ok = gv_push(arr, o) && gv_set(o, "id", json_integer(pp->id)) &&
                  gv_set(o, "target", cg_json_text(a->targets[pp->target]->name)) &&
                  gv_set(o, "nodes", nodes = json_array());
        for (size_t k = 0; ok && k < n; k++)
            if (src[k].runtime != GV_NONE && a->partition_of[src[k].runtime] == pp->id)
                ok = gv_push(nodes, json_integer((json_int_t)k));
        if (!ok) {
            json_decref(arr);
            return NULL;
        }
    }
    return arr;
}

/* The colour of each owner, shared by the HTML report and the Model
 * Explorer overlay: targets in priority order, the CPU grey. */
static const char *const gv_palette[] = {"#1e88e5", "#43a047", "#8e24aa", "#f4511e",
                                         "#00897b", "#3949ab", "#c0ca33", "#6d4c41"};
#define GV_CPU_COLOUR "#9aa4ae"

static json_t *gv_colours_json(const cg_graph_view *v)
{
    json_t *o = json_object();
    size_t np = sizeof gv_palette / sizeof gv_palette[0];
    const cg_assignment *a = v->assignment;
    if (!o || !gv_set(o, "cpu", json_string(GV_CPU_COLOUR)))
        goto fail;
    /* the assignment's targets first (their order is the priority order),
     * then any other target the view lists; the next colour is the palette's
     * entry after those given so far ("cpu" holds none) */
    size_t na = a ? a->target_count : 0;
    for (size_t t = 0; t < na + v->target_count; t++) {
        const char *name = t < na ? a->targets[t]->name : v->targets[t - na]->name;
        if (!json_object_get(o, name) &&
            !gv_set(o, name, json_string(gv_palette[(json_object_size(o) - 1) % np])))
            goto fail;
    }
    return o;
fail:
    json_decref(o);
    return NULL;
}

json_t *cg_report_graph_json(const cg_graph_view *v)
{
    const cg_graph *g = gv_file(v);
    gv_errors errs = {NULL, 0};
    gv_source *src = NULL;
    json_t *root = json_object(), *bounds = NULL, *targets = NULL, *tensors = NULL;
    if (!root || !gv_errors_build(v, &errs) || !(src = gv_sources_build(v)))
        goto fail;
    const cg_assignment *a = v->assignment;
    const cg_lowered *l = v->lowered;
    if (!gv_set(root, "graph", cg_json_text(g->name ? g->name : "")) ||
        !gv_set(root, "placed", json_boolean(a != NULL)) ||
        !gv_set(root, "timed", json_boolean(v->node_ms != NULL)) ||
        !gv_set(root, "owner_colours", gv_colours_json(v)) ||
        !gv_set(root, "lowering", l ? cg_json_text(l->lowering) : json_null()) ||
        !gv_set(root, "remover", l ? cg_json_text(l->remover) : json_null()) ||
        !gv_set(root, "nodes_partitioned",
                json_integer((json_int_t)(l ? l->model : v->model)->graph->node_count)) ||
        !gv_set(root, "removed_by_runtime",
                json_integer(l ? (json_int_t)cg_lowered_removed_count(l, "") : 0)) ||
        !gv_set(root, "inputs", gv_values_json(g, true)) ||
        !gv_set(root, "outputs", gv_values_json(g, false)) ||
        !gv_set(root, "nodes", gv_nodes_json(v, &errs, src)) ||
        !gv_set(root, "partitions", gv_partitions_json(a, src, g->node_count)) ||
        !gv_set(root, "boundaries", bounds = json_array()) ||
        !gv_set(root, "tensors", tensors = json_array()) ||
        !gv_set(root, "targets", targets = json_array()))
        goto fail;
    for (size_t i = 0; a && i < a->boundary_count; i++)
        if (!gv_push(bounds, cg_report_boundary_json(a, &a->boundaries[i])))
            goto fail;
    for (size_t i = 0; i < errs.count; i++)
        if (!gv_push(tensors, gv_error_json(&errs.items[i])))
            goto fail;
    for (size_t t = 0; t < v->target_count; t++)
        if (!gv_push(targets, cg_report_target_json(v->targets[t])))
            goto fail;
    free(errs.items);
    free(src);
    return root;
fail:
    free(errs.items);
    free(src);
    json_decref(root);
    return NULL;
}
