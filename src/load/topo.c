/*
 * Topological order at load time. ONNX requires a graph's nodes in
 * topological order, but ONNX Runtime does not: it sorts the graph itself
 * (Graph::Resolve) and runs models whose nodes are listed out of order, and
 * such models ship (an fp16 ISNet, for one). The loader sorts each graph
 * that is acyclic but out of order, stably (a node keeps its place unless a
 * producer comes after it), and marks it `reordered`, which the checker
 * reports as a warning. A graph with a real cycle is left as written: the
 * checker's topo-order error names the first node whose input is not yet
 * defined.
 *
 * Dependencies are the node inputs, and the free names read by the node's
 * subgraphs, that another node of the same graph produces.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/strmap.h"
#include "load/load_internal.h"

/* Calls fn for every name a subgraph (and its subgraphs) reads; names it
 * defines itself are included too, harmlessly: a name defined in the body
 * is not produced by a node of the enclosing graph unless it shadows one,
 * which ONNX forbids. */
static void body_reads(const cg_graph *b, void (*fn)(void *, const char *), void *user,
                       int depth)
{
    if (depth > 64)
        return;
    for (size_t n = 0; n < b->node_count; n++) {
        const cg_node *nd = &b->nodes[n];
        for (size_t i = 0; i < nd->input_count; i++)
            if (nd->inputs[i] && nd->inputs[i][0])
                fn(user, nd->inputs[i]);
        for (size_t a = 0; a < nd->attr_count; a++) {
            if (nd->attrs[a].g)
                body_reads(nd->attrs[a].g, fn, user, depth + 1);
            for (size_t k = 0; k < nd->attrs[a].graphs_count; k++)
                if (nd->attrs[a].graphs[k])
                    body_reads(nd->attrs[a].graphs[k], fn, user, depth + 1);
        }
    }
    for (size_t o = 0; o < b->output_count; o++)
        if (b->outputs[o].name && b->outputs[o].name[0])
            fn(user, b->outputs[o].name);
}

typedef struct topo_edges {
    const cg_strmap *map; /* output name -> its first producer */
    size_t node;          /* the consumer */
    size_t *indeg;
    size_t **succ;        /* per producer: consumers (with repeats) */
    size_t *succ_count, *succ_cap;
    bool oom;
} topo_edges;

static void add_edge(topo_edges *e, size_t from)
{
    if (from == CG_STRMAP_NONE || from == e->node || e->oom)
        return;
    if (e->succ_count[from] == e->succ_cap[from]) {
        size_t cap = e->succ_cap[from] ? e->succ_cap[from] * 2 : 4;
        size_t *grown = realloc(e->succ[from], cap * sizeof *grown);
        if (!grown) {
            e->oom = true;
            return;
        }
        e->succ[from] = grown;
        e->succ_cap[from] = cap;
    }
    e->succ[from][e->succ_count[from]++] = e->node;
    e->indeg[e->node]++;
}

static void edge_from_name(void *user, const char *name)
{
    topo_edges *e = user;
    add_edge(e, cg_strmap_get(e->map, name));
}

/* Sorts g's nodes when they are out of order and acyclic. */
static cg_status sort_graph(cg_arena *arena, cg_graph *g, int depth, cg_error *err)
{
    if (depth > 64)
        return CG_OK;
    size_t n = g->node_count;
    for (size_t i = 0; i < n; i++)
        for (size_t a = 0; a < g->nodes[i].attr_count; a++) {
            cg_attr *at = &g->nodes[i].attrs[a];
            cg_status st = at->g ? sort_graph(arena, at->g, depth + 1, err) : CG_OK;
            for (size_t k = 0; st == CG_OK && k < at->graphs_count; k++)
                if (at->graphs[k])
                    st = sort_graph(arena, at->graphs[k], depth + 1, err);
            if (st != CG_OK)
                return st;
        }
    if (n < 2)
        return CG_OK;
    size_t outs = 0;
    for (size_t i = 0; i < n; i++)
        outs += g->nodes[i].output_count;
    cg_strmap map = {0};
    bool map_ok = cg_strmap_reserve(&map, outs);
    topo_edges e;
    memset(&e, 0, sizeof e);
    e.map = &map;
    e.indeg = calloc(n, sizeof *e.indeg);
    e.succ = calloc(n, sizeof *e.succ);
    e.succ_count = calloc(n, sizeof *e.succ_count);
    e.succ_cap = calloc(n, sizeof *e.succ_cap);
    size_t *order = malloc(n * sizeof *order);
    size_t *heap = malloc(n * sizeof *heap);
    cg_status st = CG_OK;
    if (!map_ok || !e.indeg || !e.succ || !e.succ_count || !e.succ_cap ||
        !order || !heap) {
        st = cg_error_set(err, CG_NOMEM, "out of memory ordering the graph's nodes");
        goto done;
    }
    for (size_t i = 0; i < n; i++)
        for (size_t o = 0; o < g->nodes[i].output_count; o++)
            if (g->nodes[i].outputs[o] && g->nodes[i].outputs[o][0])
                cg_strmap_add(&map, g->nodes[i].outputs[o], i); /* reserved: cannot fail */
    bool in_order = true;
    for (size_t i = 0; i < n && !e.oom; i++) {
        const cg_node *nd = &g->nodes[i];
        e.node = i;
        for (size_t k = 0; k < nd->input_count; k++)
            if (nd->inputs[k] && nd->inputs[k][0])
                add_edge(&e, cg_strmap_get(&map, nd->inputs[k]));
        for (size_t a = 0; a < nd->attr_count; a++) {
            if (nd->attrs[a].g)
                body_reads(nd->attrs[a].g, edge_from_name, &e, 0);
            for (size_t k = 0; k < nd->attrs[a].graphs_count; k++)
                if (nd->attrs[a].graphs[k])
                    body_reads(nd->attrs[a].graphs[k], edge_from_name, &e, 0);
        }
    }
    if (e.oom) {
        st = cg_error_set(err, CG_NOMEM, "out of memory ordering the graph's nodes");
        goto done;
    }
    for (size_t i = 0; i < n && in_order; i++)
        for (size_t k = 0; k < e.succ_count[i] && in_order; k++)
            in_order = e.succ[i][k] > i;
    if (in_order)
        goto done;
    /* Kahn's algorithm, smallest original index first (a binary min-heap) */
    size_t hn = 0, placed = 0;
    for (size_t i = 0; i < n; i++)
        if (!e.indeg[i]) {
            size_t c = hn++;
            heap[c] = i;
            while (c && heap[(c - 1) / 2] > heap[c]) {
                size_t t = heap[c];
                heap[c] = heap[(c - 1) / 2];
                heap[(c - 1) / 2] = t;
                c = (c - 1) / 2;
            }
        }
    while (hn) {
        size_t v = heap[0];
        heap[0] = heap[--hn];
        for (size_t c = 0;;) {
            size_t l = 2 * c + 1, r = l + 1, m = c;
            if (l < hn && heap[l] < heap[m])
                m = l;
            if (r < hn && heap[r] < heap[m])
                m = r;
            if (m == c)
                break;
            size_t t = heap[c];
            heap[c] = heap[m];
            heap[m] = t;
            c = m;
        }
        order[placed++] = v;
        for (size_t k = 0; k < e.succ_count[v]; k++) {
            size_t w = e.succ[v][k];
            if (--e.indeg[w] == 0) {
                size_t c = hn++;
                heap[c] = w;
                while (c && heap[(c - 1) / 2] > heap[c]) {
                    size_t t = heap[c];
                    heap[c] = heap[(c - 1) / 2];
                    heap[(c - 1) / 2] = t;
                    c = (c - 1) / 2;
                }
            }
        }
    }
    if (placed < n)
        goto done; /* a cycle: leave it for the checker to report */
    cg_node *sorted = cg_arena_alloc(arena, n * sizeof *sorted);
    if (!sorted) {
        st = cg_error_set(err, CG_NOMEM, "out of memory ordering the graph's nodes");
        goto done;
    }
    size_t moved = 0;
    for (size_t i = 0; i < n; i++) {
        sorted[i] = g->nodes[order[i]];
        moved += order[i] != i;
    }
    g->nodes = sorted;
    g->reordered_nodes = moved;
done:
    for (size_t i = 0; e.succ && i < n; i++)
        free(e.succ[i]);
    free(e.succ);
    free(e.succ_count);
    free(e.succ_cap);
    free(e.indeg);
    cg_strmap_free(&map);
    free(order);
    free(heap);
    return st;
}

cg_status cg_sort_topological(cg_model *m, cg_error *err)
{
    return m->graph ? sort_graph(m->arena, m->graph, 0, err) : CG_OK;
}
