/*
 * The mutable graph (rewrite/rgraph.h): loading, the index over the live
 * nodes (ir/graph_index.h), edits, dead-code removal and emission through
 * the writer.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "convgate/runtime.h"
#include "core/arena.h"
#include "ir/walk.h"
#include "rewrite/rgraph.h"

static bool present(const char *s) { return s && s[0]; }

/* --- names --------------------------------------------------------------------------- */

static bool name_add(rw_graph *g, const char *s)
{
    if (!present(s))
        return true;
    if (cg_strmap_add(&g->names, s, 1) == CG_STRMAP_NONE) {
        g->oom = true;
        return false;
    }
    return true;
}

/* Every name of graph gr and its subgraphs. */
static bool names_of_graph(rw_graph *g, const cg_graph *gr, int depth)
{
    if (depth > 64)
        return true;
    bool ok = true;
    for (size_t i = 0; i < gr->input_count; i++)
        ok = ok && name_add(g, gr->inputs[i].name);
    for (size_t i = 0; i < gr->output_count; i++)
        ok = ok && name_add(g, gr->outputs[i].name);
    for (size_t i = 0; i < gr->value_info_count; i++)
        ok = ok && name_add(g, gr->value_infos[i].name);
    for (size_t i = 0; i < gr->initializer_count; i++)
        ok = ok && name_add(g, gr->initializers[i].name);
    for (size_t i = 0; i < gr->sparse_initializer_count; i++)
        if (gr->sparse_initializers[i].values)
            ok = ok && name_add(g, gr->sparse_initializers[i].values->name);
    for (size_t i = 0; i < gr->node_count && ok; i++) {
        const cg_node *n = &gr->nodes[i];
        ok = name_add(g, n->name);
        for (size_t k = 0; k < n->input_count; k++)
            ok = ok && name_add(g, n->inputs[k]);
        for (size_t k = 0; k < n->output_count; k++)
            ok = ok && name_add(g, n->outputs[k]);
        for (size_t a = 0; a < n->attr_count && ok; a++) {
            if (n->attrs[a].g)
                ok = names_of_graph(g, n->attrs[a].g, depth + 1);
            for (size_t k = 0; k < n->attrs[a].graphs_count && ok; k++)
                if (n->attrs[a].graphs[k])
                    ok = names_of_graph(g, n->attrs[a].graphs[k], depth + 1);
        }
    }
    return ok;
}

const char *rw_fresh(rw_graph *g, const char *hint)
{
    char buf[256];
    const char *base = present(hint) ? hint : "rw";
    snprintf(buf, sizeof buf, "%.200s", base);
    for (uint64_t k = 2; cg_strmap_has(&g->names, buf); k++)
        snprintf(buf, sizeof buf, "%.200s_%llu", base, (unsigned long long)k);
    char *s = cg_arena_strdup(g->arena, buf);
    if (!s || !name_add(g, s)) {
        g->oom = true;
        return NULL;
    }
    return s;
}

/* --- loading ----------------------------------------------------------------------- */

static bool index_build(rw_graph *g, cg_error *err);
static bool node_read(rw_graph *g, size_t i);
static bool init_read(rw_graph *g, size_t i);

static void *arena_copy(cg_arena *a, const void *p, size_t n)
{
    void *d = cg_arena_alloc(a, n ? n : 1);
    if (d && n)
        memcpy(d, p, n);
    return d;
}

static bool grow(void **arr, size_t *cap, size_t need, size_t size)
{
    if (need <= *cap)
        return true;
    size_t c = *cap ? *cap * 2 : 16;
    while (c < need)
        c *= 2;
    void *n = realloc(*arr, c * size);
    if (!n)
        return false;
    *arr = n;
    *cap = c;
    return true;
}

/* A node's writable copy: its input and output arrays in the arena. */
static bool own_io(rw_graph *g, cg_node *n)
{
    const char **in = arena_copy(g->arena, n->inputs, n->input_count * sizeof *in);
    const char **out = arena_copy(g->arena, n->outputs, n->output_count * sizeof *out);
    if (!in || !out)
        return false;
    n->inputs = in;
    n->outputs = out;
    return true;
}

cg_status rw_load(rw_graph *g, const cg_model *src, cg_error *err)
{
    memset(g, 0, sizeof *g);
    g->stale = true;
    if (!src || !src->graph)
        return cg_error_set(err, CG_USAGE, "rewrite: a model with a graph is needed");
    const cg_graph *s = src->graph;
    g->src = src;
    g->opset = cg_model_opset(src, "");
    if (!(g->arena = cg_arena_new()))
        goto nomem;
    g->src_node_count = s->node_count;
    if (!grow((void **)&g->nodes, &g->node_cap, s->node_count + 1, sizeof *g->nodes))
        goto nomem;
    for (size_t i = 0; i < s->node_count; i++) {
        g->nodes[i].n = s->nodes[i];
        g->nodes[i].dead = false;
        if (!own_io(g, &g->nodes[i].n))
            goto nomem;
    }
    g->node_count = s->node_count;
    if (!grow((void **)&g->inits, &g->init_cap, s->initializer_count + 1, sizeof *g->inits))
        goto nomem;
    g->init_dead = calloc(g->init_cap, sizeof *g->init_dead);
    if (!g->init_dead)
        goto nomem;
    for (size_t i = 0; i < s->initializer_count; i++)
        g->inits[i] = s->initializers[i];
    g->init_count = g->src_init_count = s->initializer_count;
    g->inputs = arena_copy(g->arena, s->inputs, s->input_count * sizeof *g->inputs);
    g->outputs = arena_copy(g->arena, s->outputs, s->output_count * sizeof *g->outputs);
    if (!g->inputs || !g->outputs)
        goto nomem;
    g->input_count = s->input_count;
    g->output_count = s->output_count;
    if (!names_of_graph(g, s, 0))
        goto nomem;
    /* the source's own dead code, left alone unless asked (rw_prune) */
    g->pre_dead_node = calloc(g->node_count + 1, sizeof *g->pre_dead_node);
    g->pre_dead_init = calloc(g->init_count + 1, sizeof *g->pre_dead_init);
    if (!g->pre_dead_node || !g->pre_dead_init)
        goto nomem;
    if (index_build(g, NULL)) {
        for (size_t v = 0; v < g->ix.node_count; v++)
            g->pre_dead_node[g->view_to_node[v]] = !node_read(g, g->view_to_node[v]);
        for (size_t i = 0; i < g->init_count; i++)
            g->pre_dead_init[i] = !init_read(g, i);
    }
    return CG_OK;
nomem:
    rw_free(g);
    return cg_error_set(err, CG_NOMEM, "rewrite: out of memory loading the graph");
}

static void index_drop(rw_graph *g)
{
    if (g->ix_built)
        cg_graph_index_free(&g->ix);
    g->ix_built = false;
    free(g->view_nodes);
    free(g->view_to_node);
    free((void *)g->view.initializers);
    g->view_nodes = NULL;
    g->view_to_node = NULL;
    g->view.initializers = NULL;
    g->stale = true;
}

void rw_free(rw_graph *g)
{
    if (!g)
        return;
    index_drop(g);
    free(g->pre_dead_node);
    free(g->pre_dead_init);
    free(g->nodes);
    free(g->inits);
    free(g->init_dead);
    cg_strmap_free(&g->names);
    cg_arena_free(g->arena);
    memset(g, 0, sizeof *g);
}

/* --- the index ---------------------------------------------------------------------- */

static void touch(rw_graph *g)
{
    g->edits++;
    g->stale = true;
}

/* Builds the view (live nodes, live initializers) and its index. */
static bool index_build(rw_graph *g, cg_error *err)
{
    if (!g->stale && g->ix_built)
        return true;
    index_drop(g);
    if (g->oom) {
        cg_error_set(err, CG_NOMEM, "rewrite: out of memory");
        return false;
    }
    size_t live = rw_live_count(g), inits = 0;
    g->view_nodes = malloc((live ? live : 1) * sizeof *g->view_nodes);
    g->view_to_node = malloc((live ? live : 1) * sizeof *g->view_to_node);
    cg_tensor_proto *vi = malloc((g->init_count ? g->init_count : 1) * sizeof *vi);
    if (!g->view_nodes || !g->view_to_node || !vi) {
        free(vi);
        g->oom = true;
        cg_error_set(err, CG_NOMEM, "rewrite: out of memory");
        return false;
    }
    for (size_t i = 0, k = 0; i < g->node_count; i++)
        if (!g->nodes[i].dead) {
            g->view_nodes[k] = g->nodes[i].n;
            g->view_to_node[k++] = i;
        }
    for (size_t i = 0; i < g->init_count; i++)
        if (!g->init_dead[i])
            vi[inits++] = g->inits[i];
    g->view = *g->src->graph;
    g->view.nodes = g->view_nodes;
    g->view.node_count = live;
    g->view.initializers = vi;
    g->view.initializer_count = inits;
    g->view.inputs = g->inputs;
    g->view.input_count = g->input_count;
    g->view.outputs = g->outputs;
    g->view.output_count = g->output_count;
    if (cg_graph_index_build(&g->view, NULL, &g->ix, err) != CG_OK)
        return false;
    g->ix_built = true;
    g->stale = false;
    return true;
}

static size_t value_id(rw_graph *g, const char *name)
{
    if (!present(name) || !index_build(g, NULL))
        return CG_IX_NONE;
    return cg_graph_index_value(&g->ix, name);
}

size_t rw_producer(rw_graph *g, const char *name)
{
    size_t id = value_id(g, name);
    if (id == CG_IX_NONE || g->ix.producer[id] == CG_IX_NONE)
        return RW_NONE;
    return g->view_to_node[g->ix.producer[id]];
}

size_t rw_consumers(rw_graph *g, const char *name, size_t *nodes, size_t cap)
{
    size_t id = value_id(g, name);
    if (id == CG_IX_NONE)
        return 0;
    size_t n = g->ix.cons_off[id + 1] - g->ix.cons_off[id];
    for (size_t k = 0; k < n && k < cap; k++)
        nodes[k] = g->view_to_node[g->ix.cons[g->ix.cons_off[id] + k]];
    return n;
}

size_t rw_input_uses(rw_graph *g, const char *name)
{
    size_t n = 0;
    if (!present(name))
        return 0;
    for (size_t i = 0; i < g->node_count; i++) {
        if (g->nodes[i].dead)
            continue;
        for (size_t k = 0; k < g->nodes[i].n.input_count; k++)
            if (g->nodes[i].n.inputs[k] && strcmp(g->nodes[i].n.inputs[k], name) == 0)
                n++;
    }
    return n;
}

bool rw_is_graph_output(rw_graph *g, const char *name)
{
    for (size_t i = 0; present(name) && i < g->output_count; i++)
        if (g->outputs[i].name && strcmp(g->outputs[i].name, name) == 0)
            return true;
    return false;
}

bool rw_is_graph_input(rw_graph *g, const char *name)
{
    for (size_t i = 0; present(name) && i < g->input_count; i++)
        if (g->inputs[i].name && strcmp(g->inputs[i].name, name) == 0)
            return true;
    return false;
}

bool rw_captured(rw_graph *g, const char *name)
{
    size_t cons[64];
    size_t n = rw_consumers(g, name, cons, 64);
    for (size_t k = 0; k < n; k++) {
        size_t c = k < 64 ? cons[k] : RW_NONE;
        if (c == RW_NONE)
            return true; /* too many to look at: assume the worst */
        const cg_node *nd = &g->nodes[c].n;
        bool explicit_use = false;
        for (size_t i = 0; i < nd->input_count && !explicit_use; i++)
            explicit_use = nd->inputs[i] && strcmp(nd->inputs[i], name) == 0;
        bool has_body = false;
        for (size_t a = 0; a < nd->attr_count; a++)
            has_body = has_body || nd->attrs[a].g || nd->attrs[a].graphs_count;
        if (has_body && !explicit_use)
            return true;
        if (has_body && cg_node_is_control_flow(nd)) {
            /* read explicitly and perhaps in a body too: the body's read
             * cannot be renamed, so treat it as captured */
            return true;
        }
    }
    return false;
}

const cg_tensor_proto *rw_constant(rw_graph *g, const char *name)
{
    if (!present(name))
        return NULL;
    for (size_t i = 0; i < g->init_count; i++)
        if (!g->init_dead[i] && g->inits[i].name && strcmp(g->inits[i].name, name) == 0)
            return rw_is_graph_input(g, name) ? NULL : &g->inits[i];
    size_t p = rw_producer(g, name);
    if (p == RW_NONE || !rw_is(&g->nodes[p], "Constant"))
        return NULL;
    const cg_attr *a = cg_node_attr(&g->nodes[p].n, "value");
    return a && a->t && g->nodes[p].n.attr_count == 1 ? a->t : NULL;
}

cg_status rw_constant_value(rw_graph *g, const char *name, cg_value **out, cg_error *err)
{
    *out = NULL;
    const cg_tensor_proto *tp = rw_constant(g, name);
    return tp ? cg_value_from_tensor_proto(tp, out, err) : CG_OK;
}

bool rw_constant_scalar(rw_graph *g, const char *name, double *out)
{
    cg_value *v = NULL;
    if (rw_constant_value(g, name, &v, NULL) != CG_OK || !v)
        return false;
    bool ok = v->kind == CG_VALUE_TENSOR && v->tensor.numel == 1 &&
              v->tensor.dtype != CG_DTYPE_STRING;
    if (ok)
        *out = cg_tensor_get_f64(&v->tensor, 0);
    cg_value_free(v);
    return ok;
}

bool rw_is(const rw_node *n, const char *op)
{
    return !n->dead && cg_domain_is_default(n->n.domain) && n->n.op_type &&
           strcmp(n->n.op_type, op) == 0;
}

size_t rw_used_outputs(rw_graph *g, size_t node)
{
    size_t used = 0, tmp[1];
    const cg_node *n = &g->nodes[node].n;
    for (size_t k = 0; k < n->output_count; k++)
        if (present(n->outputs[k]) &&
            (rw_is_graph_output(g, n->outputs[k]) || rw_consumers(g, n->outputs[k], tmp, 1)))
            used++;
    return used;
}

size_t rw_live_count(const rw_graph *g)
{
    size_t n = 0;
    for (size_t i = 0; i < g->node_count; i++)
        n += !g->nodes[i].dead;
    return n;
}

/* --- edits ------------------------------------------------------------------------ */

size_t rw_add_node(rw_graph *g, const char *op, const char *name_hint, const char *const *ins,
                   size_t nin, const char **outs, size_t nout)
{
    if (g->oom || !grow((void **)&g->nodes, &g->node_cap, g->node_count + 1, sizeof *g->nodes)) {
        g->oom = true;
        return RW_NONE;
    }
    const char *name = rw_fresh(g, name_hint ? name_hint : op);
    cg_node *n = &g->nodes[g->node_count].n;
    memset(&g->nodes[g->node_count], 0, sizeof g->nodes[g->node_count]);
    n->op_type = cg_arena_strdup(g->arena, op);
    n->domain = NULL;
    n->name = name;
    n->inputs = cg_arena_alloc(g->arena, (nin ? nin : 1) * sizeof *n->inputs);
    n->outputs = cg_arena_alloc(g->arena, (nout ? nout : 1) * sizeof *n->outputs);
    if (!name || !n->op_type || !n->inputs || !n->outputs) {
        g->oom = true;
        return RW_NONE;
    }
    for (size_t i = 0; i < nin; i++)
        n->inputs[i] = ins[i] ? ins[i] : "";
    n->input_count = nin;
    for (size_t i = 0; i < nout; i++) {
        const char *o = outs && outs[i] ? outs[i] : rw_fresh(g, name);
        if (!o) {
            g->oom = true;
            return RW_NONE;
        }
        n->outputs[i] = o;
        if (outs)
            outs[i] = o;
    }
    n->output_count = nout;
    touch(g);
    return g->node_count++;
}

const char *rw_out(rw_graph *g, size_t node, size_t i)
{
    if (node == RW_NONE || node >= g->node_count || i >= g->nodes[node].n.output_count)
        return NULL;
    return g->nodes[node].n.outputs[i];
}

/* Makes room for attribute `name` in node n: its slot (existing or new). */
static cg_attr *attr_slot(rw_graph *g, size_t n, const char *name)
{
    if (n == RW_NONE || n >= g->node_count)
        return NULL;
    cg_node *nd = &g->nodes[n].n;
    cg_attr *arr = cg_arena_alloc(g->arena, (nd->attr_count + 1) * sizeof *arr);
    char *nm = cg_arena_strdup(g->arena, name);
    if (!arr || !nm) {
        g->oom = true;
        return NULL;
    }
    size_t k = 0, found = SIZE_MAX;
    for (size_t i = 0; i < nd->attr_count; i++) {
        arr[k] = nd->attrs[i];
        if (found == SIZE_MAX && nd->attrs[i].name && strcmp(nd->attrs[i].name, name) == 0)
            found = k;
        k++;
    }
    if (found == SIZE_MAX)
        found = k++;
    memset(&arr[found], 0, sizeof arr[found]);
    arr[found].name = nm;
    arr[found].has_type = true;
    nd->attrs = arr;
    nd->attr_count = k;
    touch(g);
    return &arr[found];
}

bool rw_set_attr_int(rw_graph *g, size_t n, const char *name, int64_t v)
{
    cg_attr *a = attr_slot(g, n, name);
    if (!a)
        return false;
    a->type = CG_ATTR_INT;
    a->i = v;
    a->has_i = true;
    return true;
}

bool rw_set_attr_float(rw_graph *g, size_t n, const char *name, float v)
{
    cg_attr *a = attr_slot(g, n, name);
    if (!a)
        return false;
    a->type = CG_ATTR_FLOAT;
    a->f = v;
    a->has_f = true;
    return true;
}

bool rw_set_attr_ints(rw_graph *g, size_t n, const char *name, const int64_t *v, size_t count)
{
    cg_attr *a = attr_slot(g, n, name);
    int64_t *copy = a ? arena_copy(g->arena, v, count * sizeof *v) : NULL;
    if (!a || !copy) {
        g->oom = true;
        return false;
    }
    a->type = CG_ATTR_INTS;
    a->ints = copy;
    a->ints_count = count;
    return true;
}

bool rw_set_attr_string(rw_graph *g, size_t n, const char *name, const char *s)
{
    cg_attr *a = attr_slot(g, n, name);
    char *copy = a ? cg_arena_strdup(g->arena, s) : NULL;
    if (!a || !copy) {
        g->oom = true;
        return false;
    }
    a->type = CG_ATTR_STRING;
    a->s.data = (const uint8_t *)copy;
    a->s.len = strlen(copy);
    return true;
}

bool rw_copy_attrs(rw_graph *g, size_t n, const cg_node *from)
{
    if (n == RW_NONE || n >= g->node_count)
        return false;
    cg_attr *arr = arena_copy(g->arena, from->attrs, from->attr_count * sizeof *arr);
    if (!arr) {
        g->oom = true;
        return false;
    }
    g->nodes[n].n.attrs = arr;
    g->nodes[n].n.attr_count = from->attr_count;
    touch(g);
    return true;
}

void rw_kill(rw_graph *g, size_t n)
{
    if (n != RW_NONE && n < g->node_count && !g->nodes[n].dead) {
        g->nodes[n].dead = true;
        touch(g);
    }
}

void rw_set_input(rw_graph *g, size_t n, size_t slot, const char *name)
{
    if (n != RW_NONE && n < g->node_count && slot < g->nodes[n].n.input_count) {
        g->nodes[n].n.inputs[slot] = name;
        touch(g);
    }
}

static bool is_initializer(const rw_graph *g, const char *name)
{
    for (size_t i = 0; i < g->init_count; i++)
        if (!g->init_dead[i] && g->inits[i].name && strcmp(g->inits[i].name, name) == 0)
            return true;
    return false;
}

/* Every live explicit read of `from` reads `to` instead. */
static void rename_reads(rw_graph *g, const char *from, const char *to)
{
    for (size_t i = 0; i < g->node_count; i++) {
        cg_node *n = &g->nodes[i].n;
        if (g->nodes[i].dead)
            continue;
        for (size_t k = 0; k < n->input_count; k++)
            if (n->inputs[k] && strcmp(n->inputs[k], from) == 0)
                n->inputs[k] = to;
    }
    touch(g);
}

bool rw_replace(rw_graph *g, const char *old_name, const char *new_name)
{
    if (!present(old_name) || !present(new_name) || g->oom)
        return false;
    if (strcmp(old_name, new_name) == 0)
        return true;
    if (rw_captured(g, old_name))
        return false;
    if (!rw_is_graph_output(g, old_name)) {
        rename_reads(g, old_name, new_name);
        return true;
    }
    size_t p = rw_producer(g, new_name);
    if (p != RW_NONE && !rw_is_graph_output(g, new_name) && !rw_is_graph_input(g, new_name) &&
        !is_initializer(g, new_name) && !rw_captured(g, new_name)) {
        cg_node *n = &g->nodes[p].n;
        for (size_t k = 0; k < n->output_count; k++)
            if (n->outputs[k] && strcmp(n->outputs[k], new_name) == 0)
                n->outputs[k] = old_name;
        rename_reads(g, new_name, old_name);
        return true;
    }
    const char *outs[1] = {old_name};
    return rw_add_node(g, "Identity", "Identity", &new_name, 1, outs, 1) != RW_NONE;
}

static const char *add_tensor(rw_graph *g, const char *hint, const char *exact,
                              const cg_tensor *t)
{
    size_t bytes;
    if (g->oom || t->dtype == CG_DTYPE_STRING || !cg_tensor_byte_size(t->dtype, t->numel, &bytes))
        return NULL;
    if (!grow((void **)&g->inits, &g->init_cap, g->init_count + 1, sizeof *g->inits)) {
        g->oom = true;
        return NULL;
    }
    bool *dead = realloc(g->init_dead, g->init_cap * sizeof *dead);
    if (!dead) {
        g->oom = true;
        return NULL;
    }
    g->init_dead = dead;
    const char *name = exact ? cg_arena_strdup(g->arena, exact) : rw_fresh(g, hint);
    cg_tensor_proto *tp = &g->inits[g->init_count];
    memset(tp, 0, sizeof *tp);
    tp->dims = arena_copy(g->arena, t->dims, (size_t)t->rank * sizeof *tp->dims);
    tp->raw_data.data = arena_copy(g->arena, t->data, bytes);
    if (!name || !tp->dims || !tp->raw_data.data) {
        g->oom = true;
        return NULL;
    }
    tp->raw_data.len = bytes;
    tp->rank = (size_t)t->rank;
    tp->data_type = (int32_t)t->dtype;
    tp->has_data_type = true;
    tp->name = name;
    g->init_dead[g->init_count++] = false;
    touch(g);
    return name;
}

const char *rw_add_tensor(rw_graph *g, const char *hint, const cg_tensor *t)
{
    return add_tensor(g, hint, NULL, t);
}

const char *rw_add_tensor_named(rw_graph *g, const char *name, const cg_tensor *t)
{
    if (!name_add(g, name))
        return NULL;
    return add_tensor(g, NULL, name, t);
}

static const char *add_typed(rw_graph *g, const char *hint, cg_dtype dt, int rank,
                             const int64_t *dims, const void *v)
{
    cg_tensor t;
    if (cg_tensor_alloc(&t, dt, rank, dims, 0, NULL) != CG_OK) {
        g->oom = true;
        return NULL;
    }
    memcpy(t.data, v, cg_tensor_bytes(&t));
    const char *name = rw_add_tensor(g, hint, &t);
    cg_tensor_release(&t);
    return name;
}

const char *rw_add_f32(rw_graph *g, const char *hint, int rank, const int64_t *dims,
                       const float *v)
{
    return add_typed(g, hint, CG_DTYPE_FLOAT, rank, dims, v);
}

const char *rw_add_i64(rw_graph *g, const char *hint, int rank, const int64_t *dims,
                       const int64_t *v)
{
    return add_typed(g, hint, CG_DTYPE_INT64, rank, dims, v);
}

const char *rw_add_scalar(rw_graph *g, const char *hint, cg_dtype dt, double v)
{
    cg_tensor t;
    if (cg_tensor_alloc(&t, dt, 0, NULL, 0, NULL) != CG_OK) {
        g->oom = true;
        return NULL;
    }
    cg_tensor_set_f64(&t, 0, v);
    const char *name = rw_add_tensor(g, hint, &t);
    cg_tensor_release(&t);
    return name;
}

bool rw_reduce_axes_as_input(const rw_graph *g, const char *op)
{
    return strcmp(op, "ReduceSum") == 0 ? g->opset >= 13 : g->opset >= 18;
}

const char *rw_add_reduce(rw_graph *g, const char *op, const char *x, const int64_t *axes,
                          int naxes, int64_t keepdims, const char *hint)
{
    bool as_input = rw_reduce_axes_as_input(g, op);
    int64_t d[1] = {naxes};
    const char *ins[2] = {x, as_input ? rw_add_i64(g, "axes", 1, d, axes) : NULL};
    if (as_input && !ins[1])
        return NULL;
    size_t n = rw_add_node(g, op, hint, ins, as_input ? 2 : 1, NULL, 1);
    if (n == RW_NONE || !rw_set_attr_int(g, n, "keepdims", keepdims) ||
        (!as_input && !rw_set_attr_ints(g, n, "axes", axes, (size_t)naxes)))
        return NULL;
    return rw_out(g, n, 0);
}

/* Some output of live node i is read or a graph output (index built). */
static bool node_read(rw_graph *g, size_t i)
{
    const cg_node *n = &g->nodes[i].n;
    for (size_t k = 0; k < n->output_count; k++) {
        size_t id = present(n->outputs[k]) ? cg_graph_index_value(&g->ix, n->outputs[k])
                                           : CG_IX_NONE;
        if (id != CG_IX_NONE && ((g->ix.value_flags[id] & CG_IX_OUTPUT) ||
                                 g->ix.cons_off[id + 1] > g->ix.cons_off[id]))
            return true;
    }
    return false;
}

/* Initializer i is read, a graph input or a graph output (index built). */
static bool init_read(rw_graph *g, size_t i)
{
    if (!g->inits[i].name)
        return true;
    size_t id = cg_graph_index_value(&g->ix, g->inits[i].name);
    return id == CG_IX_NONE || (g->ix.value_flags[id] & (CG_IX_INPUT | CG_IX_OUTPUT)) ||
           g->ix.cons_off[id + 1] > g->ix.cons_off[id];
}

size_t rw_prune(rw_graph *g, bool all)
{
    size_t removed = 0;
    for (bool again = true; again && !g->oom;) {
        again = false;
        if (!index_build(g, NULL))
            return removed;
        for (size_t v = 0; v < g->ix.node_count; v++) {
            size_t i = g->view_to_node[v];
            if (!all && i < g->src_node_count && g->pre_dead_node[i])
                continue;
            if (!node_read(g, i)) {
                g->nodes[i].dead = true;
                removed++;
                again = true;
            }
        }
        if (again)
            touch(g);
    }
    if (!index_build(g, NULL))
        return removed;
    bool any = false;
    for (size_t i = 0; i < g->init_count; i++) {
        if (g->init_dead[i] || (!all && i < g->src_init_count && g->pre_dead_init[i]))
            continue;
        if (!init_read(g, i)) {
            g->init_dead[i] = true;
            any = true;
        }
    }
    if (any)
        touch(g);
    return removed;
}

/* --- attribute reads ------------------------------------------------------------------- */

const cg_attr *rw_attr(const rw_graph *g, size_t n, const char *name)
{
    return n < g->node_count ? cg_node_attr(&g->nodes[n].n, name) : NULL;
}

int64_t rw_attr_int(const rw_graph *g, size_t n, const char *name, int64_t dflt)
{
    return n < g->node_count ? cg_node_attr_int(&g->nodes[n].n, name, dflt) : dflt;
}

float rw_attr_float(const rw_graph *g, size_t n, const char *name, float dflt)
{
    return n < g->node_count ? cg_node_attr_float(&g->nodes[n].n, name, dflt) : dflt;
}

const char *rw_attr_string(const rw_graph *g, size_t n, const char *name, const char *dflt,
                           char *buf, size_t cap)
{
    const cg_attr *a = rw_attr(g, n, name);
    if (!a || !a->s.data || (a->has_type && a->type != CG_ATTR_STRING))
        return dflt;
    size_t len = a->s.len < cap - 1 ? a->s.len : cap - 1;
    memcpy(buf, a->s.data, len);
    buf[len] = '\0';
    return buf;
}

const int64_t *rw_attr_ints(const rw_graph *g, size_t n, const char *name, size_t *count)
{
    *count = 0;
    return n < g->node_count ? cg_node_attr_ints(&g->nodes[n].n, name, count) : NULL;
}

/* --- emission ----------------------------------------------------------------------- */

cg_status rw_materialize(rw_graph *g, cg_model **out, cg_error *err)
{
    *out = NULL;
    if (g->oom)
        return cg_error_set(err, CG_NOMEM, "rewrite: out of memory");
    rw_prune(g, false); /* what the edits left unread goes */
    if (!index_build(g, err)) {
        cg_error_prefix(err, "rewrite left a broken graph: ");
        return err && err->status ? err->status : CG_INVALID;
    }
    const cg_graph *s = g->src->graph;
    cg_graph *ng = cg_arena_alloc(g->arena, sizeof *ng);
    if (!ng)
        return cg_error_set(err, CG_NOMEM, "rewrite: out of memory");
    *ng = *s;
    size_t nn = g->ix.node_count;
    cg_node *nodes = cg_arena_alloc(g->arena, (nn ? nn : 1) * sizeof *nodes);
    cg_value_info *vis = cg_arena_alloc(g->arena, (s->value_info_count + 1) * sizeof *vis);
    cg_tensor_annotation *qa =
        cg_arena_alloc(g->arena, (s->quant_annotation_count + 1) * sizeof *qa);
    if (!nodes || !vis || !qa)
        return cg_error_set(err, CG_NOMEM, "rewrite: out of memory");
    for (size_t k = 0; k < nn; k++)
        nodes[k] = g->view_nodes[g->ix.order[k]];
    /* every value a node reads is defined: a rewrite's edit left none dangling */
    for (size_t v = 0; v < g->ix.value_count; v++)
        if ((g->ix.value_flags[v] & CG_IX_OUTER) && g->ix.producer[v] == CG_IX_NONE)
            for (size_t c = g->ix.cons_off[v]; c < g->ix.cons_off[v + 1]; c++) {
                const cg_node *n = &g->view_nodes[g->ix.cons[c]];
                bool direct = false;
                for (size_t k = 0; k < n->input_count && !direct; k++)
                    direct = n->inputs[k] && strcmp(n->inputs[k], g->ix.value_name[v]) == 0;
                if (direct)
                    return cg_error_set(err, CG_INVALID, "rewrite left node '%s' (%s) reading "
                                        "'%s', which nothing defines",
                                        n->name ? n->name : "?", n->op_type ? n->op_type : "?",
                                        g->ix.value_name[v]);
            }
    size_t nvi = 0;
    for (size_t i = 0; i < s->value_info_count; i++) {
        size_t id = cg_graph_index_value(&g->ix, s->value_infos[i].name);
        if (id != CG_IX_NONE && g->ix.producer[id] != CG_IX_NONE)
            vis[nvi++] = s->value_infos[i];
    }
    size_t nqa = 0;
    for (size_t i = 0; i < s->quant_annotation_count; i++) {
        size_t id = cg_graph_index_value(&g->ix, s->quant_annotations[i].tensor_name);
        if (id != CG_IX_NONE && !(g->ix.value_flags[id] & CG_IX_OUTER))
            qa[nqa++] = s->quant_annotations[i];
    }
    ng->nodes = nodes;
    ng->node_count = nn;
    ng->initializers = (cg_tensor_proto *)g->view.initializers;
    ng->initializer_count = g->view.initializer_count;
    ng->inputs = g->inputs;
    ng->input_count = g->input_count;
    ng->outputs = g->outputs;
    ng->output_count = g->output_count;
    ng->value_infos = vis;
    ng->value_info_count = nvi;
    ng->quant_annotations = qa;
    ng->quant_annotation_count = nqa;
    cg_model m = *g->src;
    m.graph = ng;
    m.arena = g->arena;
    m.mappings = NULL;
    m.path = NULL;
    m.base_dir = NULL;
    uint8_t *bytes = NULL;
    size_t size = 0;
    cg_status st = cg_model_serialize(&m, &bytes, &size, err);
    if (st != CG_OK)
        return st;
    cg_load_options lo;
    cg_load_options_default(&lo);
    lo.load_external_data = false; /* everything was written inline */
    st = cg_model_load_bytes(bytes, size, &lo, out, err);
    free(bytes);
    if (st != CG_OK)
        cg_error_prefix(err, "reading the rewritten model back: ");
    return st;
}
