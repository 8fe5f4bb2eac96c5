/*
 * The graph index (ir/graph_index.h): value ids, producers, consumers,
 * predecessor/successor lists and a topological order of one graph.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/assert.h"
#include "ir/graph_index.h"
#include "ir/walk.h"

/* Deeper than the loader's own limit (32), so this only guards recursion. */
#define IX_MAX_SUBGRAPH_DEPTH 64

/* A growable list of borrowed names. */
typedef struct ix_names {
    const char **v;
    size_t n, cap;
} ix_names;

/* Appends s; false when out of memory. */
static bool ix_names_push(ix_names *a, const char *s)
{
    if (a->n == a->cap) {
        size_t cap = a->cap ? a->cap * 2 : 8;
        if (cap > SIZE_MAX / sizeof *a->v)
            return false;
        const char **nv = realloc(a->v, cap * sizeof *nv);
        if (!nv)
            return false;
        a->v = nv;
        a->cap = cap;
    }
    a->v[a->n++] = s;
    return true;
}

static bool ix_present(const char *name) { return name && name[0]; }

/* --- outer-scope references of subgraphs --------------------------------------- */

/* Adds to `out` every name that g (or a subgraph nested in it) reads but
 * does not define itself: the values it takes from enclosing scopes. */
static cg_status ix_outer_refs(const cg_graph *g, int depth, ix_names *out, cg_error *err)
{
    if (depth > IX_MAX_SUBGRAPH_DEPTH)
        return cg_error_set(err, CG_LIMIT, "subgraph '%s' nested deeper than %d levels",
                            g->name ? g->name : "", IX_MAX_SUBGRAPH_DEPTH);
    size_t most = g->input_count + g->initializer_count + g->sparse_initializer_count;
    for (size_t i = 0; i < g->node_count; i++)
        most += g->nodes[i].output_count;
    cg_strmap defined = {0};
    ix_names inner = {0};
    cg_status st = CG_OK;
    if (!cg_strmap_reserve(&defined, most))
        goto nomem;
    /* reserved for every name below: the adds cannot fail */
    for (size_t i = 0; i < g->input_count; i++)
        if (g->inputs[i].name)
            cg_strmap_add(&defined, g->inputs[i].name, 0);
    for (size_t i = 0; i < g->initializer_count; i++)
        if (g->initializers[i].name)
            cg_strmap_add(&defined, g->initializers[i].name, 0);
    for (size_t i = 0; i < g->sparse_initializer_count; i++) {
        const cg_sparse_tensor_proto *sp = &g->sparse_initializers[i];
        if (sp->values && sp->values->name)
            cg_strmap_add(&defined, sp->values->name, 0);
    }
    for (size_t i = 0; i < g->node_count; i++)
        for (size_t k = 0; k < g->nodes[i].output_count; k++)
            if (ix_present(g->nodes[i].outputs[k]))
                cg_strmap_add(&defined, g->nodes[i].outputs[k], 0);
    for (size_t i = 0; i < g->node_count; i++) {
        const cg_node *n = &g->nodes[i];
        inner.n = 0;
        for (size_t k = 0; k < n->input_count; k++)
            if (ix_present(n->inputs[k]) && !ix_names_push(&inner, n->inputs[k]))
                goto nomem;
        for (size_t a = 0; a < n->attr_count; a++) {
            const cg_attr *at = &n->attrs[a];
            if (at->g && (st = ix_outer_refs(at->g, depth + 1, &inner, err)) != CG_OK)
                goto done;
            for (size_t k = 0; k < at->graphs_count; k++)
                if (at->graphs[k] &&
                    (st = ix_outer_refs(at->graphs[k], depth + 1, &inner, err)) != CG_OK)
                    goto done;
        }
        for (size_t k = 0; k < inner.n; k++)
            if (!cg_strmap_has(&defined, inner.v[k]) && !ix_names_push(out, inner.v[k]))
                goto nomem;
    }
    goto done;
nomem:
    st = cg_error_set(err, CG_NOMEM, "out of memory");
done:
    free(inner.v);
    cg_strmap_free(&defined);
    return st;
}

/* --- building -------------------------------------------------------------------- */

void cg_graph_index_free(cg_graph_index *ix)
{
    free(ix->value_name);
    free(ix->producer);
    free(ix->initializer);
    free(ix->value_flags);
    free(ix->in_off);
    free(ix->in_val);
    free(ix->out_off);
    free(ix->out_val);
    free(ix->pred_off);
    free(ix->pred);
    free(ix->succ_off);
    free(ix->succ);
    free(ix->cons_off);
    free(ix->cons);
    free(ix->order);
    free(ix->pos);
    cg_strmap_free(&ix->ids);
    memset(ix, 0, sizeof *ix);
}

/* Counts -> offsets in place (off has n + 1 entries). */
static void ix_prefix(size_t *off, size_t n)
{
    size_t sum = 0;
    for (size_t i = 0; i <= n; i++) {
        size_t c = off[i];
        off[i] = sum;
        sum += c;
    }
}

/* Records value `name` (produced by node `producer`, or CG_IX_NONE) with
 * `flag`; *id gets its index. Two producers of one name break SSA. The
 * map and arrays were sized for every name, so nothing grows here. */
static cg_status ix_add_value(cg_graph_index *ix, const char *name, size_t producer,
                              unsigned flag, size_t *id, cg_error *err)
{
    size_t i = cg_strmap_add(&ix->ids, name, ix->value_count);
    if (NEVER(i == CG_STRMAP_NONE))
        return cg_error_set(err, CG_NOMEM, "out of memory indexing graph '%s'",
                            ix->graph->name ? ix->graph->name : "");
    *id = i;
    if (i == ix->value_count) {
        ix->value_name[i] = name;
        ix->producer[i] = CG_IX_NONE;
        ix->initializer[i] = CG_IX_NONE;
        ix->value_count++;
    }
    ix->value_flags[i] |= (uint8_t)flag;
    if (producer == CG_IX_NONE)
        return CG_OK;
    if (ix->producer[i] != CG_IX_NONE) {
        char a[128], b[128];
        return cg_error_set(err, CG_INVALID,
                            "graph '%s': value '%s' is produced by node '%s' and again by node "
                            "'%s'",
                            ix->graph->name ? ix->graph->name : "", name,
                            cg_graph_node_name(ix->graph, ix->producer[i], a, sizeof a),
                            cg_graph_node_name(ix->graph, producer, b, sizeof b));
    }
    ix->producer[i] = producer;
    return CG_OK;
}

/* Per node: the distinct values read (in_*), then the distinct producers
 * (pred_*). reads/read_off list every name each node reads. */
static cg_status ix_reads(cg_graph_index *ix, const ix_names *reads, const size_t *read_off,
                          size_t *stamp, cg_error *err)
{
    const cg_graph *g = ix->graph;
    size_t n = ix->node_count, nv = ix->value_count;
    ix->in_off = calloc(n + 1, sizeof *ix->in_off);
    ix->in_val = malloc((reads->n ? reads->n : 1) * sizeof *ix->in_val);
    ix->pred_off = calloc(n + 1, sizeof *ix->pred_off);
    ix->pred = malloc((reads->n ? reads->n : 1) * sizeof *ix->pred);
    if (!ix->in_off || !ix->in_val || !ix->pred_off || !ix->pred)
        return cg_error_set(err, CG_NOMEM, "out of memory indexing graph '%s'",
                            g->name ? g->name : "");
    for (size_t i = 0; i < nv; i++)
        stamp[i] = CG_IX_NONE;
    size_t nin = 0;
    for (size_t i = 0; i < n; i++) {
        ix->in_off[i] = nin;
        for (size_t r = read_off[i]; r < read_off[i + 1]; r++) {
            size_t id = cg_strmap_get(&ix->ids, reads->v[r]);
            CG_ASSERT(id < nv);
            if (stamp[id] != i) {
                stamp[id] = i;
                ix->in_val[nin++] = id;
            }
        }
    }
    ix->in_off[n] = nin;
    for (size_t i = 0; i < (nv > n ? nv : n); i++)
        stamp[i] = CG_IX_NONE;
    size_t npred = 0;
    for (size_t i = 0; i < n; i++) {
        ix->pred_off[i] = npred;
        for (size_t r = ix->in_off[i]; r < ix->in_off[i + 1]; r++) {
            size_t p = ix->producer[ix->in_val[r]];
            if (p == i) {
                char a[128];
                return cg_error_set(err, CG_INVALID,
                                    "graph '%s': node '%s' reads its own output '%s'",
                                    g->name ? g->name : "", cg_graph_node_name(g, i, a, sizeof a),
                                    ix->value_name[ix->in_val[r]]);
            }
            if (p != CG_IX_NONE && stamp[p] != i) {
                stamp[p] = i;
                ix->pred[npred++] = p;
            }
        }
    }
    ix->pred_off[n] = npred;
    return CG_OK;
}

/* Successors and per-value consumers, by counting. */
static cg_status ix_inverse(cg_graph_index *ix, cg_error *err)
{
    size_t n = ix->node_count, nv = ix->value_count;
    size_t npred = ix->pred_off[n], nin = ix->in_off[n];
    ix->succ_off = calloc(n + 1, sizeof *ix->succ_off);
    ix->succ = malloc((npred ? npred : 1) * sizeof *ix->succ);
    ix->cons_off = calloc(nv + 1, sizeof *ix->cons_off);
    ix->cons = malloc((nin ? nin : 1) * sizeof *ix->cons);
    if (!ix->succ_off || !ix->succ || !ix->cons_off || !ix->cons)
        return cg_error_set(err, CG_NOMEM, "out of memory indexing graph '%s'",
                            ix->graph->name ? ix->graph->name : "");
    for (size_t r = 0; r < npred; r++)
        ix->succ_off[ix->pred[r]]++;
    for (size_t r = 0; r < nin; r++)
        ix->cons_off[ix->in_val[r]]++;
    ix_prefix(ix->succ_off, n);
    ix_prefix(ix->cons_off, nv);
    for (size_t i = 0; i < n; i++) {
        for (size_t r = ix->pred_off[i]; r < ix->pred_off[i + 1]; r++)
            ix->succ[ix->succ_off[ix->pred[r]]++] = i;
        for (size_t r = ix->in_off[i]; r < ix->in_off[i + 1]; r++)
            ix->cons[ix->cons_off[ix->in_val[r]]++] = i;
    }
    /* the fill advanced each offset to the next list's start: shift back */
    for (size_t i = n; i > 0; i--)
        ix->succ_off[i] = ix->succ_off[i - 1];
    ix->succ_off[0] = 0;
    for (size_t i = nv; i > 0; i--)
        ix->cons_off[i] = ix->cons_off[i - 1];
    ix->cons_off[0] = 0;
    return CG_OK;
}

/* Topological order: file order when it already is one (ONNX requires
 * it), else Kahn's algorithm; a cycle is an error naming a node on it. */
static cg_status ix_order(cg_graph_index *ix, cg_error *err)
{
    const cg_graph *g = ix->graph;
    size_t n = ix->node_count;
    ix->order = malloc((n ? n : 1) * sizeof *ix->order);
    ix->pos = malloc((n ? n : 1) * sizeof *ix->pos);
    if (!ix->order || !ix->pos)
        return cg_error_set(err, CG_NOMEM, "out of memory indexing graph '%s'",
                            g->name ? g->name : "");
    bool sorted = true;
    for (size_t i = 0; i < n && sorted; i++)
        for (size_t r = ix->pred_off[i]; r < ix->pred_off[i + 1]; r++)
            if (ix->pred[r] > i) {
                sorted = false;
                break;
            }
    if (sorted) {
        for (size_t i = 0; i < n; i++)
            ix->order[i] = i;
    } else {
        size_t *indeg = calloc(n ? n : 1, sizeof *indeg);
        size_t *queue = ix->order;
        if (!indeg)
            return cg_error_set(err, CG_NOMEM, "out of memory indexing graph '%s'",
                                g->name ? g->name : "");
        size_t head = 0, tail = 0;
        for (size_t i = 0; i < n; i++) {
            indeg[i] = ix->pred_off[i + 1] - ix->pred_off[i];
            if (!indeg[i])
                queue[tail++] = i;
        }
        while (head < tail) {
            size_t v = queue[head++];
            for (size_t r = ix->succ_off[v]; r < ix->succ_off[v + 1]; r++)
                if (--indeg[ix->succ[r]] == 0)
                    queue[tail++] = ix->succ[r];
        }
        if (tail < n) {
            size_t stuck = 0;
            while (indeg[stuck] == 0)
                stuck++;
            free(indeg);
            char a[128];
            return cg_error_set(err, CG_INVALID, "graph '%s' has a cycle through node '%s'",
                                g->name ? g->name : "", cg_graph_node_name(g, stuck, a, sizeof a));
        }
        free(indeg);
    }
    for (size_t i = 0; i < n; i++)
        ix->pos[ix->order[i]] = i;
    return CG_OK;
}

cg_status cg_graph_index_build(const cg_graph *g, const cg_graph_index *outer,
                               cg_graph_index *ix, cg_error *err)
{
    memset(ix, 0, sizeof *ix);
    ix->graph = g;
    ix->outer = outer;
    ix->node_count = g->node_count;
    size_t n = g->node_count;
    cg_status st = CG_OK;
    ix_names reads = {0}; /* every name each node reads, node after node */
    size_t *read_off = NULL, *stamp = NULL;
    size_t last = 0;      /* the id IX_ADD last stored */

    if (n > SIZE_MAX / 4 - 1)
        return cg_error_set(err, CG_LIMIT, "graph '%s': too many nodes", g->name ? g->name : "");
    read_off = calloc(n + 1, sizeof *read_off);
    if (!read_off)
        goto nomem;
    size_t most = g->input_count + g->initializer_count + g->sparse_initializer_count;
    for (size_t i = 0; i < n; i++) {
        const cg_node *nd = &g->nodes[i];
        size_t before = reads.n;
        for (size_t k = 0; k < nd->input_count; k++)
            if (ix_present(nd->inputs[k]) && !ix_names_push(&reads, nd->inputs[k]))
                goto nomem;
        for (size_t t = 0; t < nd->attr_count; t++) {
            const cg_attr *at = &nd->attrs[t];
            if (at->g && (st = ix_outer_refs(at->g, 1, &reads, err)) != CG_OK)
                goto fail;
            for (size_t k = 0; k < at->graphs_count; k++)
                if (at->graphs[k] && (st = ix_outer_refs(at->graphs[k], 1, &reads, err)) != CG_OK)
                    goto fail;
        }
        read_off[i] = reads.n - before;
        most += nd->output_count;
    }
    ix_prefix(read_off, n);
    most += reads.n;
    if (!cg_strmap_reserve(&ix->ids, most))
        goto nomem;
    ix->value_name = malloc((most ? most : 1) * sizeof *ix->value_name);
    ix->producer = malloc((most ? most : 1) * sizeof *ix->producer);
    ix->initializer = malloc((most ? most : 1) * sizeof *ix->initializer);
    ix->value_flags = calloc(most ? most : 1, 1);
    if (!ix->value_name || !ix->producer || !ix->initializer || !ix->value_flags)
        goto nomem;

    /* values: graph inputs and initializers first, then node outputs */
#define IX_ADD(nm, prod, flag)                                                          \
    do {                                                                                \
        if ((st = ix_add_value(ix, (nm), (prod), (flag), &last, err)) != CG_OK)         \
            goto fail;                                                                  \
    } while (0)
    for (size_t i = 0; i < g->input_count; i++)
        if (ix_present(g->inputs[i].name))
            IX_ADD(g->inputs[i].name, CG_IX_NONE, CG_IX_INPUT);
    for (size_t i = 0; i < g->initializer_count; i++)
        if (ix_present(g->initializers[i].name)) {
            IX_ADD(g->initializers[i].name, CG_IX_NONE, CG_IX_INIT);
            if (ix->initializer[last] == CG_IX_NONE)
                ix->initializer[last] = i;
        }
    for (size_t i = 0; i < g->sparse_initializer_count; i++) {
        const cg_sparse_tensor_proto *sp = &g->sparse_initializers[i];
        if (sp->values && ix_present(sp->values->name))
            IX_ADD(sp->values->name, CG_IX_NONE, CG_IX_INIT);
    }
    size_t nouts = 0;
    for (size_t i = 0; i < n; i++)
        nouts += g->nodes[i].output_count;
    ix->out_off = calloc(n + 1, sizeof *ix->out_off);
    ix->out_val = malloc((nouts ? nouts : 1) * sizeof *ix->out_val);
    if (!ix->out_off || !ix->out_val)
        goto nomem;
    nouts = 0;
    for (size_t i = 0; i < n; i++) {
        const cg_node *nd = &g->nodes[i];
        ix->out_off[i] = nouts;
        for (size_t k = 0; k < nd->output_count; k++)
            if (ix_present(nd->outputs[k])) {
                IX_ADD(nd->outputs[k], i, 0);
                ix->out_val[nouts++] = last;
            }
    }
    ix->out_off[n] = nouts;
    size_t defined = ix->value_count;
    for (size_t i = 0; i < reads.n; i++) {
        IX_ADD(reads.v[i], CG_IX_NONE, 0);
        if (last >= defined)
            ix->value_flags[last] |= CG_IX_OUTER;
    }
#undef IX_ADD
    for (size_t i = 0; i < g->output_count; i++) {
        size_t id = cg_graph_index_value(ix, g->outputs[i].name);
        if (id != CG_IX_NONE)
            ix->value_flags[id] |= CG_IX_OUTPUT;
    }

    size_t nv = ix->value_count;
    stamp = malloc((nv > n ? nv : n) * sizeof *stamp + sizeof *stamp);
    if (!stamp)
        goto nomem;
    if ((st = ix_reads(ix, &reads, read_off, stamp, err)) != CG_OK ||
        (st = ix_inverse(ix, err)) != CG_OK || (st = ix_order(ix, err)) != CG_OK)
        goto fail;
    goto done;
nomem:
    st = cg_error_set(err, CG_NOMEM, "out of memory building the dependency graph of '%s'",
                      g->name ? g->name : "");
fail:
    cg_graph_index_free(ix);
done:
    free(stamp);
    free(read_off);
    free(reads.v);
    return st;
}

/* --- queries ----------------------------------------------------------------------- */

size_t cg_graph_index_value(const cg_graph_index *ix, const char *name)
{
    if (!ix_present(name))
        return CG_IX_NONE;
    size_t id = cg_strmap_get(&ix->ids, name);
    return id == CG_STRMAP_NONE ? CG_IX_NONE : id;
}

const cg_tensor_proto *cg_graph_index_initializer(const cg_graph_index *ix, const char *name)
{
    size_t id = cg_graph_index_value(ix, name);
    if (id == CG_IX_NONE || ix->initializer[id] == CG_IX_NONE)
        return NULL;
    return &ix->graph->initializers[ix->initializer[id]];
}

const cg_graph_index *cg_graph_index_resolve(const cg_graph_index *ix, const char *name,
                                             size_t *id, int *up)
{
    int depth = 0;
    for (; ix; ix = ix->outer, depth++) {
        size_t v = cg_graph_index_value(ix, name);
        if (v != CG_IX_NONE && !(ix->value_flags[v] & CG_IX_OUTER)) {
            *id = v;
            *up = depth;
            return ix;
        }
    }
    return NULL;
}
