/*
 * The editable graph of the lowerings (lgraph.h): loading a cg_graph into
 * it, the producer/consumer index, the edits transformations make, and
 * writing the result back as a cg_graph.
 */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "convgate/runtime.h"
#include "convgate/schema.h"
#include "core/arena.h"
#include "ir/walk.h"
#include "lower/lgraph.h"
#include "run/kernel.h"
#include "run/exec.h"
#include "target/registry.h"

typedef struct lg_typed {
    const char *name;
    lg_type t;
} lg_typed;

/* --- small helpers --------------------------------------------------------------- */

static bool str_eq(const char *a, const char *b) { return strcmp(a ? a : "", b ? b : "") == 0; }

static const char *canon_domain(const char *d)
{
    return cg_domain_is_default(d) ? "" : d;
}

char *lg_strdup(lg_model *m, const char *s)
{
    char *c = cg_arena_strdup(m->arena, s ? s : "");
    if (!c)
        m->oom = true;
    return c;
}

static void *lg_alloc(lg_model *m, size_t count, size_t size)
{
    if (count == 0)
        count = 1;
    void *p = cg_arena_calloc(m->arena, count, size);
    if (!p)
        m->oom = true;
    return p;
}

void lg_note(lg_model *m, const char *fmt, ...)
{
    cg_lowered *l = m->out;
    char buf[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    for (size_t i = 0; i < l->note_count; i++)
        if (strcmp(l->notes[i], buf) == 0)
            return;
    char **grown = realloc(l->notes, (l->note_count + 1) * sizeof *grown);
    char *copy = strdup(buf);
    if (!grown || !copy) {
        free(copy);
        if (grown)
            l->notes = grown;
        m->oom = true;
        return;
    }
    l->notes = grown;
    l->notes[l->note_count++] = copy;
}

/* --- types ------------------------------------------------------------------------ */

static lg_typed *type_lookup(lg_graph *g, const char *name)
{
    size_t i = cg_strmap_get(&g->type_index, name);
    return i == CG_STRMAP_NONE ? NULL : &g->types[i];
}

const lg_type *lg_type_get(lg_graph *g, const char *name)
{
    /* a body reads an outer value with the outer graph's type */
    for (; g; g = g->parent) {
        lg_typed *t = type_lookup(g, name);
        if (t)
            return &t->t;
    }
    return NULL;
}

bool lg_type_set(lg_graph *g, const char *name, const lg_type *t)
{
    lg_typed *e = type_lookup(g, name);
    if (e) {
        e->t = *t;
        return true;
    }
    if (g->type_count == g->type_cap) {
        size_t cap = g->type_cap ? g->type_cap * 2 : 64;
        lg_typed *grown = realloc(g->types, cap * sizeof *grown);
        if (!grown)
            return false;
        g->types = grown;
        g->type_cap = cap;
    }
    char *copy = lg_strdup(g->model, name);
    if (!copy || cg_strmap_add(&g->type_index, copy, g->type_count) == CG_STRMAP_NONE)
        return false;
    g->types[g->type_count].name = copy;
    g->types[g->type_count++].t = *t;
    return true;
}

void lg_type_from_tensor(const cg_tensor_proto *tp, lg_type *t)
{
    memset(t, 0, sizeof *t);
    t->has_dtype = tp->has_data_type;
    t->dtype = tp->data_type;
    if (tp->rank <= CG_MAX_RANK) {
        t->has_shape = true;
        t->rank = (int)tp->rank;
        for (size_t d = 0; d < tp->rank; d++) {
            t->dims[d] = tp->dims[d];
            t->dim_known |= 1u << d;
        }
    }
}

/* The declared type of a value_info, when it is a tensor. */
static bool type_from_info(const cg_value_info *vi, lg_type *t)
{
    memset(t, 0, sizeof *t);
    if (!vi->type || vi->type->kind != CG_TYPE_TENSOR)
        return false;
    t->has_dtype = vi->type->has_elem_type;
    t->dtype = vi->type->elem_type;
    const cg_shape *s = vi->type->shape;
    if (s && s->rank <= CG_MAX_RANK) {
        t->has_shape = true;
        t->rank = (int)s->rank;
        for (size_t d = 0; d < s->rank; d++)
            if (s->dims[d].has_value) {
                t->dims[d] = s->dims[d].value;
                t->dim_known |= 1u << d;
            }
    }
    return true;
}

bool lg_type_from_info(const cg_value_info *vi, lg_type *t) { return type_from_info(vi, t); }

/* --- index ------------------------------------------------------------------------- */

void lg_touch(lg_graph *g)
{
    g->stale = true;
    g->modified = true;
}

static lg_index_entry *idx_find(lg_graph *g, const char *name)
{
    size_t i = cg_strmap_get(&g->entry_index, name);
    return i == CG_STRMAP_NONE ? NULL : &g->entries[i];
}

static lg_index_entry *idx_add(lg_graph *g, const char *name)
{
    lg_index_entry *e = idx_find(g, name);
    if (e)
        return e;
    if (g->entry_count == g->entry_cap) {
        size_t cap = g->entry_cap ? g->entry_cap * 2 : 64;
        lg_index_entry *grown = realloc(g->entries, cap * sizeof *grown);
        if (!grown)
            return NULL;
        g->entries = grown;
        g->entry_cap = cap;
    }
    if (cg_strmap_add(&g->entry_index, name, g->entry_count) == CG_STRMAP_NONE)
        return NULL;
    e = &g->entries[g->entry_count++];
    memset(e, 0, sizeof *e);
    e->name = name;
    e->producer = SIZE_MAX;
    e->init = SIZE_MAX;
    return e;
}

static void idx_clear(lg_graph *g)
{
    for (size_t i = 0; i < g->entry_count; i++)
        free(g->entries[i].uses);
    g->entry_count = 0;
    cg_strmap_free(&g->entry_index);
}

static bool idx_use(lg_index_entry *e, size_t node, size_t input)
{
    lg_use *grown = realloc(e->uses, (e->use_count + 1) * sizeof *grown);
    if (!grown)
        return false;
    e->uses = grown;
    e->uses[e->use_count].node = node;
    e->uses[e->use_count].input = input;
    e->use_count++;
    return true;
}

/* Names a body (and its bodies) reads without defining them. */
typedef struct name_set {
    const char **v;
    size_t n, cap;
} name_set;

static bool set_has(const name_set *s, const char *x)
{
    for (size_t i = 0; i < s->n; i++)
        if (strcmp(s->v[i], x) == 0)
            return true;
    return false;
}

static bool set_add(name_set *s, const char *x)
{
    if (set_has(s, x))
        return true;
    if (s->n == s->cap) {
        size_t cap = s->cap ? s->cap * 2 : 16;
        const char **grown = realloc(s->v, cap * sizeof *grown);
        if (!grown)
            return false;
        s->v = grown;
        s->cap = cap;
    }
    s->v[s->n++] = x;
    return true;
}

/* Adds to `free` every name body reads that it does not define itself. */
static bool body_free_names(const lg_graph *b, name_set *free_names)
{
    name_set defined = {0};
    bool ok = true;
    for (size_t i = 0; i < b->input_count && ok; i++)
        ok = set_add(&defined, b->inputs[i].name ? b->inputs[i].name : "");
    for (size_t i = 0; i < b->init_count && ok; i++)
        if (!b->inits[i].dead)
            ok = set_add(&defined, b->inits[i].name);
    for (size_t n = 0; n < b->node_count && ok; n++) {
        const lg_node *nd = &b->nodes[n];
        if (nd->dead)
            continue;
        for (size_t o = 0; o < nd->output_count && ok; o++)
            if (nd->outputs[o][0])
                ok = set_add(&defined, nd->outputs[o]);
    }
    for (size_t n = 0; n < b->node_count && ok; n++) {
        const lg_node *nd = &b->nodes[n];
        if (nd->dead)
            continue;
        for (size_t i = 0; i < nd->input_count && ok; i++)
            if (nd->inputs[i][0] && !set_has(&defined, nd->inputs[i]))
                ok = set_add(free_names, nd->inputs[i]);
        for (size_t a = 0; a < nd->attr_count && ok; a++)
            if (nd->bodies && nd->bodies[a]) {
                name_set inner = {0};
                ok = body_free_names(nd->bodies[a], &inner);
                for (size_t k = 0; k < inner.n && ok; k++)
                    if (!set_has(&defined, inner.v[k]))
                        ok = set_add(free_names, inner.v[k]);
                free(inner.v);
            }
    }
    for (size_t o = 0; o < b->output_count && ok; o++)
        if (!set_has(&defined, b->outputs[o]))
            ok = set_add(free_names, b->outputs[o]);
    free(defined.v);
    return ok;
}

static bool idx_build(lg_graph *g)
{
    idx_clear(g);
    for (size_t i = 0; i < g->input_count; i++) {
        lg_index_entry *e = idx_add(g, g->inputs[i].name ? g->inputs[i].name : "");
        if (!e)
            return false;
        e->graph_input = true;
    }
    for (size_t i = 0; i < g->init_count; i++) {
        if (g->inits[i].dead)
            continue;
        lg_index_entry *e = idx_add(g, g->inits[i].name);
        if (!e)
            return false;
        e->init = i; /* the last one wins, as in ONNX Runtime */
    }
    for (size_t n = 0; n < g->node_count; n++) {
        lg_node *nd = &g->nodes[n];
        if (nd->dead)
            continue;
        for (size_t o = 0; o < nd->output_count; o++) {
            if (!nd->outputs[o][0])
                continue;
            lg_index_entry *e = idx_add(g, nd->outputs[o]);
            if (!e)
                return false;
            e->producer = n;
            e->producer_out = o;
        }
    }
    for (size_t n = 0; n < g->node_count; n++) {
        lg_node *nd = &g->nodes[n];
        if (nd->dead)
            continue;
        for (size_t i = 0; i < nd->input_count; i++) {
            if (!nd->inputs[i][0])
                continue;
            lg_index_entry *e = idx_add(g, nd->inputs[i]);
            if (!e || !idx_use(e, n, i))
                return false;
        }
        for (size_t a = 0; a < nd->attr_count; a++) {
            if (!nd->bodies || !nd->bodies[a])
                continue;
            name_set fn = {0};
            bool ok = body_free_names(nd->bodies[a], &fn);
            for (size_t k = 0; k < fn.n && ok; k++) {
                lg_index_entry *e = idx_add(g, fn.v[k]);
                if (!e)
                    ok = false;
                else
                    e->implicit_uses++;
            }
            free(fn.v);
            if (!ok)
                return false;
        }
    }
    for (size_t o = 0; o < g->output_count; o++) {
        lg_index_entry *e = idx_add(g, g->outputs[o]);
        if (!e)
            return false;
        e->graph_output = true;
    }
    g->stale = false;
    return true;
}

const lg_index_entry *lg_lookup(lg_graph *g, const char *name)
{
    if (g->stale && !idx_build(g)) {
        g->model->oom = true;
        return NULL;
    }
    return idx_find(g, name);
}

size_t lg_use_count(lg_graph *g, const char *name)
{
    const lg_index_entry *e = lg_lookup(g, name);
    return e ? e->use_count + e->implicit_uses : 0;
}

bool lg_is_graph_output(lg_graph *g, const char *name)
{
    const lg_index_entry *e = lg_lookup(g, name);
    return e && e->graph_output;
}

bool lg_is_graph_input(lg_graph *g, const char *name)
{
    const lg_index_entry *e = lg_lookup(g, name);
    return e && e->graph_input;
}

lg_node *lg_producer(lg_graph *g, const char *name)
{
    const lg_index_entry *e = lg_lookup(g, name);
    return e && e->producer != SIZE_MAX ? &g->nodes[e->producer] : NULL;
}

const cg_tensor_proto *lg_initializer(lg_graph *g, const char *name, bool check_outer)
{
    for (; g; g = check_outer ? g->parent : NULL) {
        const lg_index_entry *e = lg_lookup(g, name);
        if (e && e->init != SIZE_MAX)
            return g->inits[e->init].tensor;
        /* defined here otherwise: not an outer value */
        if (e && (e->producer != SIZE_MAX || e->graph_input))
            return NULL;
    }
    return NULL;
}

const cg_tensor_proto *lg_constant(lg_graph *g, const char *name, bool check_outer)
{
    const cg_model *src = g->model->source;
    bool can_override = !src->has_ir_version || src->ir_version >= 4;
    for (; g; g = check_outer ? g->parent : NULL) {
        const lg_index_entry *e = lg_lookup(g, name);
        if (e && e->init != SIZE_MAX)
            return (can_override && e->graph_input) ? NULL : g->inits[e->init].tensor;
        if (e && (e->producer != SIZE_MAX || e->graph_input))
            return NULL;
    }
    return NULL;
}

bool lg_produces_graph_output(lg_graph *g, const lg_node *n)
{
    for (size_t o = 0; o < n->output_count; o++)
        if (n->outputs[o][0] && lg_is_graph_output(g, n->outputs[o]))
            return true;
    return false;
}

size_t lg_output_edge_count(lg_graph *g, const lg_node *n)
{
    size_t c = 0;
    for (size_t o = 0; o < n->output_count; o++)
        if (n->outputs[o][0])
            c += lg_use_count(g, n->outputs[o]);
    return c;
}

bool lg_topo_order(lg_graph *g, size_t **order, size_t *count)
{
    *order = NULL;
    *count = 0;
    if (!lg_lookup(g, "") && g->model->oom)
        return false;
    size_t n = g->node_count;
    size_t *indeg = calloc(n ? n : 1, sizeof *indeg);
    size_t *out = malloc((n ? n : 1) * sizeof *out);
    bool *done = calloc(n ? n : 1, sizeof *done);
    if (!indeg || !out || !done) {
        free(indeg);
        free(out);
        free(done);
        return false;
    }
    /* in-degree: producers in this graph of each input (and of body free names) */
    for (size_t i = 0; i < n; i++) {
        lg_node *nd = &g->nodes[i];
        if (nd->dead)
            continue;
        for (size_t k = 0; k < nd->input_count; k++) {
            if (!nd->inputs[k][0])
                continue;
            const lg_index_entry *e = idx_find(g, nd->inputs[k]);
            if (e && e->producer != SIZE_MAX && e->producer != i)
                indeg[i]++;
        }
    }
    /* Kahn's algorithm, smallest index first among ready nodes: repeated scans
     * keep it simple; graphs here are at most a few thousand nodes. */
    size_t placed = 0, live = 0;
    for (size_t i = 0; i < n; i++)
        live += !g->nodes[i].dead;
    bool progress = true;
    while (placed < live && progress) {
        progress = false;
        for (size_t i = 0; i < n; i++) {
            lg_node *nd = &g->nodes[i];
            if (nd->dead || done[i] || indeg[i])
                continue;
            done[i] = true;
            out[placed++] = i;
            progress = true;
            for (size_t o = 0; o < nd->output_count; o++) {
                if (!nd->outputs[o][0])
                    continue;
                const lg_index_entry *e = idx_find(g, nd->outputs[o]);
                for (size_t u = 0; e && u < e->use_count; u++)
                    if (e->uses[u].node != i && indeg[e->uses[u].node])
                        indeg[e->uses[u].node]--;
            }
            break; /* restart from the smallest index */
        }
    }
    /* a cycle (should not happen): append the rest in file order */
    for (size_t i = 0; i < n && placed < live; i++)
        if (!g->nodes[i].dead && !done[i])
            out[placed++] = i;
    free(indeg);
    free(done);
    *order = out;
    *count = placed;
    return true;
}

cg_status lg_type_source(lg_model *m, cg_type_env **out, cg_error *err)
{
    m->declare_types = true;
    cg_error terr;
    cg_error_clear(&terr);
    cg_status st = cg_type_env_build_fed(m->source, m->dims, m->dim_count, NULL, m->feeds,
                                         m->feed_count, out, &terr);
    if (st == CG_NOMEM)
        return cg_error_set(err, CG_NOMEM, "%s", terr.msg);
    if (st != CG_OK) {
        lg_note(m, "shapes: only declared shapes are known, the reference run failed (%s)",
                terr.msg);
        st = cg_type_env_build_declared(m->source, out, err);
    }
    return st;
}

cg_status lg_walk(lg_graph *g, lg_visit_fn visit, void *user, cg_error *err)
{
    size_t *order = NULL, count = 0;
    if (!lg_topo_order(g, &order, &count))
        return cg_error_set(err, CG_NOMEM, "out of memory");
    cg_status st = CG_OK;
    for (size_t k = 0; k < count && st == CG_OK; k++) {
        size_t ni = order[k];
        for (size_t a = 0; g->nodes[ni].bodies && a < g->nodes[ni].attr_count && st == CG_OK;
             a++)
            if (g->nodes[ni].bodies[a])
                st = lg_walk(g->nodes[ni].bodies[a], visit, user, err);
        if (st == CG_OK && !g->nodes[ni].dead)
            st = visit(g, ni, user, err);
    }
    free(order);
    return st;
}

/* --- attributes -------------------------------------------------------------------- */

const cg_attr *lg_attr(const lg_node *n, const char *name)
{
    for (size_t i = 0; i < n->attr_count; i++)
        if (n->attrs[i].name && strcmp(n->attrs[i].name, name) == 0)
            return &n->attrs[i];
    return NULL;
}

bool lg_attr_int(const lg_node *n, const char *name, int64_t *out)
{
    const cg_attr *a = lg_attr(n, name);
    if (!a || !a->has_i || (a->has_type && a->type != CG_ATTR_INT))
        return false;
    *out = a->i;
    return true;
}

bool lg_attr_float(const lg_node *n, const char *name, float *out)
{
    const cg_attr *a = lg_attr(n, name);
    if (!a || !a->has_f || (a->has_type && a->type != CG_ATTR_FLOAT))
        return false;
    *out = a->f;
    return true;
}

bool lg_attr_string(const lg_node *n, const char *name, const char **out)
{
    const cg_attr *a = lg_attr(n, name);
    if (!a || !a->s.data || (a->has_type && a->type != CG_ATTR_STRING))
        return false;
    *out = (const char *)a->s.data; /* the loader NUL-terminates byte strings */
    return true;
}

bool lg_attr_ints(const lg_node *n, const char *name, const int64_t **v, size_t *count)
{
    const cg_attr *a = lg_attr(n, name);
    if (!a || (a->has_type && a->type != CG_ATTR_INTS))
        return false;
    *v = a->ints;
    *count = a->ints_count;
    return true;
}

bool lg_is_op(const lg_node *n, const char *domain, const char *op)
{
    return !n->dead && str_eq(n->op_type, op) && str_eq(canon_domain(n->domain), domain);
}

bool lg_is_op_version(const lg_node *n, const char *op, const int *versions, size_t count)
{
    if (!lg_is_op(n, "", op))
        return false;
    for (size_t i = 0; i < count; i++)
        if (n->since == versions[i])
            return true;
    return false;
}

/* --- edits -------------------------------------------------------------------------- */

/* Whether any value of the model's graphs already uses name (types or index). */
static bool name_taken(lg_graph *g, const char *name)
{
    lg_graph *root = g;
    while (root->parent)
        root = root->parent;
    (void)root;
    for (lg_graph *s = g; s; s = s->parent)
        if (lg_lookup(s, name) || type_lookup(s, name))
            return true;
    return false;
}

const char *lg_fresh_name(lg_graph *g, const char *base)
{
    char buf[512];
    for (;;) {
        snprintf(buf, sizeof buf, "%s_%" PRIu64, base, g->name_counter++);
        if (!name_taken(g, buf))
            return lg_strdup(g->model, buf);
    }
}

static const char **copy_names(lg_model *m, const char *const *names, size_t count)
{
    const char **v = lg_alloc(m, count, sizeof *v);
    for (size_t i = 0; v && i < count; i++)
        v[i] = lg_strdup(m, names[i]);
    return v;
}

static bool grow_nodes(lg_graph *g)
{
    if (g->node_count < g->node_cap)
        return true;
    size_t cap = g->node_cap ? g->node_cap * 2 : 16;
    lg_node *grown = realloc(g->nodes, cap * sizeof *grown);
    if (!grown)
        return false;
    g->nodes = grown;
    g->node_cap = cap;
    return true;
}

size_t lg_add_node(lg_graph *g, const char *op_type, const char *domain, const char *name,
                   const char *const *inputs, size_t input_count, const char *const *outputs,
                   size_t output_count, const cg_attr *attrs, size_t attr_count)
{
    lg_model *m = g->model;
    if (!grow_nodes(g)) {
        m->oom = true;
        return SIZE_MAX;
    }
    lg_node *n = &g->nodes[g->node_count];
    memset(n, 0, sizeof *n);
    n->op_type = lg_strdup(m, op_type);
    n->domain = lg_strdup(m, canon_domain(domain));
    n->name = lg_strdup(m, name ? name : "");
    n->inputs = copy_names(m, inputs, input_count);
    n->input_count = input_count;
    n->outputs = copy_names(m, outputs, output_count);
    n->output_count = output_count;
    n->attrs = lg_alloc(m, attr_count, sizeof *n->attrs);
    if (n->attrs && attr_count)
        memcpy(n->attrs, attrs, attr_count * sizeof *attrs);
    n->attr_count = attr_count;
    int64_t opset = cg_model_opset(m->source, n->domain);
    const cg_schema *s = cg_schema_find(n->domain, n->op_type, opset);
    n->since = s ? s->since_version : 0;
    if (m->oom)
        return SIZE_MAX;
    lg_touch(g);
    return g->node_count++;
}

bool lg_add_origins(lg_graph *g, size_t n, size_t from)
{
    lg_node *dst = &g->nodes[n];
    const lg_node *src = &g->nodes[from];
    size_t total = dst->origin_count + src->origin_count;
    size_t *v = lg_alloc(g->model, total, sizeof *v);
    if (!v)
        return false;
    size_t k = 0;
    for (size_t i = 0; i < dst->origin_count; i++)
        v[k++] = dst->origins[i];
    for (size_t i = 0; i < src->origin_count; i++) {
        bool seen = false;
        for (size_t j = 0; j < k; j++)
            seen |= v[j] == src->origins[i];
        if (!seen)
            v[k++] = src->origins[i];
    }
    dst->origins = v;
    dst->origin_count = k;
    return true;
}

bool lg_add_init(lg_graph *g, const cg_tensor_proto *tensor)
{
    if (g->init_count == g->init_cap) {
        size_t cap = g->init_cap ? g->init_cap * 2 : 16;
        lg_init *grown = realloc(g->inits, cap * sizeof *grown);
        if (!grown) {
            g->model->oom = true;
            return false;
        }
        g->inits = grown;
        g->init_cap = cap;
    }
    g->inits[g->init_count].name = tensor->name;
    g->inits[g->init_count].tensor = tensor;
    g->inits[g->init_count].dead = false;
    g->init_count++;
    lg_type t;
    lg_type_from_tensor(tensor, &t);
    if (!lg_type_set(g, tensor->name, &t)) {
        g->model->oom = true;
        return false;
    }
    lg_touch(g);
    return true;
}

void lg_set_input(lg_graph *g, size_t n, size_t i, const char *name)
{
    lg_node *nd = &g->nodes[n];
    if (i >= nd->input_count) {
        const char **v = lg_alloc(g->model, i + 1, sizeof *v);
        if (!v)
            return;
        for (size_t k = 0; k < i + 1; k++)
            v[k] = k < nd->input_count ? nd->inputs[k] : "";
        nd->inputs = v;
        nd->input_count = i + 1;
    }
    nd->inputs[i] = lg_strdup(g->model, name);
    lg_touch(g);
}

static void rename_in_body(lg_graph *b, const char *old_name, const char *new_name)
{
    /* a body that defines old_name itself shadows the outer value */
    const lg_index_entry *e = lg_lookup(b, old_name);
    if (e && (e->producer != SIZE_MAX || e->graph_input || e->init != SIZE_MAX))
        return;
    for (size_t n = 0; n < b->node_count; n++) {
        lg_node *nd = &b->nodes[n];
        if (nd->dead)
            continue;
        for (size_t i = 0; i < nd->input_count; i++)
            if (strcmp(nd->inputs[i], old_name) == 0)
                nd->inputs[i] = new_name;
        for (size_t a = 0; a < nd->attr_count; a++)
            if (nd->bodies && nd->bodies[a])
                rename_in_body(nd->bodies[a], old_name, new_name);
    }
    for (size_t o = 0; o < b->output_count; o++)
        if (strcmp(b->outputs[o], old_name) == 0)
            b->outputs[o] = new_name;
    lg_touch(b);
}

void lg_rename_uses(lg_graph *g, const char *old_name, const char *new_name)
{
    const char *copy = lg_strdup(g->model, new_name);
    if (!copy)
        return;
    for (size_t n = 0; n < g->node_count; n++) {
        lg_node *nd = &g->nodes[n];
        if (nd->dead)
            continue;
        for (size_t i = 0; i < nd->input_count; i++)
            if (strcmp(nd->inputs[i], old_name) == 0)
                nd->inputs[i] = copy;
        for (size_t a = 0; a < nd->attr_count; a++)
            if (nd->bodies && nd->bodies[a])
                rename_in_body(nd->bodies[a], old_name, copy);
    }
    lg_touch(g);
}

static bool record_removed(lg_graph *g, size_t origin, const char *by, const char *into)
{
    cg_lowered *l = g->model->out;
    const cg_graph *src = g->source;
    cg_lower_removed *grown = realloc(l->removed, (l->removed_count + 1) * sizeof *grown);
    if (!grown)
        return false;
    l->removed = grown;
    const cg_node *sn = &src->nodes[origin];
    char label[32];
    cg_lower_removed *r = &l->removed[l->removed_count];
    r->graph = g->path;
    r->node = origin;
    if (sn->name && sn->name[0])
        r->name = sn->name;
    else {
        snprintf(label, sizeof label, "#%zu", origin);
        r->name = lg_strdup(g->model, label);
    }
    r->op_type = sn->op_type ? sn->op_type : "?";
    r->domain = canon_domain(sn->domain);
    r->by = by ? by : "?";
    r->into = into;
    l->removed_count++;
    return true;
}

void lg_remove(lg_graph *g, size_t n, const char *by, size_t into)
{
    lg_node *nd = &g->nodes[n];
    nd->dead = true;
    nd->removed_by = by;
    nd->removed_into = NULL;
    if (into != SIZE_MAX) {
        lg_node *dst = &g->nodes[into];
        nd->removed_into = dst->name && dst->name[0] ? dst->name : dst->outputs[0];
        if (!lg_add_origins(g, into, n))
            g->model->oom = true;
    }
    lg_touch(g);
}

/* The op type a node stands for in the source's op set. */
static const char *lg_source_op(const lg_node *n)
{
    return n->translates ? n->translates : n->op_type;
}

/* A source node is removed when no live node of its op type stands for it.
 * Nodes are loaded in source order, so node s is where source node s
 * started: its fate names the transformation. */
static bool record_graph_removals(lg_graph *g)
{
    const cg_graph *src = g->source;
    for (size_t s = 0; s < src->node_count; s++) {
        const cg_node *sn = &src->nodes[s];
        bool kept = false;
        for (size_t k = 0; k < g->node_count && !kept; k++) {
            const lg_node *o = &g->nodes[k];
            if (o->dead || !(o->keeps_origins || str_eq(lg_source_op(o), sn->op_type)))
                continue;
            for (size_t j = 0; j < o->origin_count && !kept; j++)
                kept = o->origins[j] == s;
        }
        if (kept)
            continue;
        const lg_node *first = &g->nodes[s];
        if (!record_removed(g, s, first->removed_by, first->removed_into))
            return false;
    }
    for (size_t n = 0; n < g->node_count; n++) {
        const lg_node *nd = &g->nodes[n];
        if (nd->dead)
            continue;
        for (size_t a = 0; a < nd->attr_count; a++)
            if (nd->bodies && nd->bodies[a] && !record_graph_removals(nd->bodies[a]))
                return false;
    }
    return true;
}

bool lg_record_removals(lg_model *m)
{
    if (!record_graph_removals(m->main))
        m->oom = true;
    return !m->oom;
}

bool lg_set_attr(lg_graph *g, size_t n, const cg_attr *a)
{
    lg_node *nd = &g->nodes[n];
    for (size_t i = 0; i < nd->attr_count; i++)
        if (nd->attrs[i].name && strcmp(nd->attrs[i].name, a->name) == 0) {
            cg_attr *v = lg_alloc(g->model, nd->attr_count, sizeof *v);
            if (!v)
                return false;
            memcpy(v, nd->attrs, nd->attr_count * sizeof *v);
            v[i] = *a;
            nd->attrs = v;
            return true;
        }
    cg_attr *v = lg_alloc(g->model, nd->attr_count + 1, sizeof *v);
    lg_graph **b = lg_alloc(g->model, nd->attr_count + 1, sizeof *b);
    if (!v || !b)
        return false;
    if (nd->attr_count)
        memcpy(v, nd->attrs, nd->attr_count * sizeof *v);
    if (nd->bodies)
        memcpy(b, nd->bodies, nd->attr_count * sizeof *b);
    v[nd->attr_count] = *a;
    nd->attrs = v;
    nd->bodies = b;
    nd->attr_count++;
    return true;
}

void lg_bypass(lg_graph *g, size_t n, const char *by)
{
    lg_node *nd = &g->nodes[n];
    /* the single input that is present: the one from a producer, else the first */
    const char *input = NULL;
    for (size_t i = 0; i < nd->input_count && !input; i++)
        if (nd->inputs[i][0] && lg_producer(g, nd->inputs[i]))
            input = nd->inputs[i];
    if (!input)
        input = nd->input_count ? nd->inputs[0] : "";
    for (size_t o = 0; o < nd->output_count; o++)
        if (nd->outputs[o][0] && lg_use_count(g, nd->outputs[o]))
            lg_rename_uses(g, nd->outputs[o], input);
    lg_remove(g, n, by, SIZE_MAX);
}

/* --- tensors ------------------------------------------------------------------------- */

bool lg_tensor_numel(const cg_tensor_proto *tp, int64_t *out)
{
    return cg_tensor_proto_numel(tp, out, NULL) == CG_OK;
}

/* Element i of a tensor converted through the runtime's value conversion
 * (raw, typed and external data alike). */
static bool tensor_elem(const cg_tensor_proto *tp, int64_t i, double *f, int64_t *v)
{
    cg_value *val = NULL;
    if (cg_value_from_tensor_proto(tp, &val, NULL) != CG_OK || !val)
        return false;
    bool ok = val->kind == CG_VALUE_TENSOR && i >= 0 && i < val->tensor.numel &&
              val->tensor.dtype != CG_DTYPE_STRING;
    if (ok) {
        if (f)
            *f = cg_tensor_get_f64(&val->tensor, i);
        if (v)
            *v = cg_tensor_get_i64(&val->tensor, i);
    }
    cg_value_free(val);
    return ok;
}

bool lg_tensor_f64(const cg_tensor_proto *tp, int64_t i, double *out)
{
    return tensor_elem(tp, i, out, NULL);
}

bool lg_tensor_i64(const cg_tensor_proto *tp, int64_t i, int64_t *out)
{
    return tensor_elem(tp, i, NULL, out);
}

cg_tensor_proto *lg_tensor_new(lg_model *m, const char *name, int32_t dtype, const int64_t *dims,
                               size_t rank, const void *raw, size_t raw_len)
{
    cg_tensor_proto *t = lg_alloc(m, 1, sizeof *t);
    if (!t)
        return NULL;
    t->name = lg_strdup(m, name);
    t->data_type = dtype;
    t->has_data_type = true;
    t->rank = rank;
    t->dims = lg_alloc(m, rank, sizeof *t->dims);
    if (t->dims && rank)
        memcpy(t->dims, dims, rank * sizeof *dims);
    uint8_t *bytes = lg_alloc(m, raw_len, 1);
    if (bytes && raw_len)
        memcpy(bytes, raw, raw_len);
    t->raw_data.data = bytes;
    t->raw_data.len = raw_len;
    return m->oom ? NULL : t;
}

/* --- loading -------------------------------------------------------------------------- */

static cg_status load_graph(lg_model *m, lg_graph *g, const cg_graph *src, lg_graph *parent,
                            const char *path, const cg_type_env *types, int depth);

static cg_status load_node(lg_model *m, lg_graph *g, const cg_node *sn, size_t index, int depth)
{
    if (!grow_nodes(g))
        return cg_error_set(m->err, CG_NOMEM, "out of memory lowering the model");
    lg_node *n = &g->nodes[g->node_count];
    memset(n, 0, sizeof *n);
    n->name = sn->name ? sn->name : "";
    n->op_type = sn->op_type ? sn->op_type : "";
    n->domain = canon_domain(sn->domain);
    n->doc_string = sn->doc_string;
    n->inputs = lg_alloc(m, sn->input_count, sizeof *n->inputs);
    n->outputs = lg_alloc(m, sn->output_count, sizeof *n->outputs);
    n->origins = lg_alloc(m, 1, sizeof *n->origins);
    if (m->oom)
        return cg_error_set(m->err, CG_NOMEM, "out of memory lowering the model");
    for (size_t i = 0; i < sn->input_count; i++)
        n->inputs[i] = sn->inputs[i] ? sn->inputs[i] : "";
    for (size_t i = 0; i < sn->output_count; i++)
        n->outputs[i] = sn->outputs[i] ? sn->outputs[i] : "";
    n->input_count = sn->input_count;
    n->output_count = sn->output_count;
    n->attrs = sn->attrs;
    n->attr_count = sn->attr_count;
    n->origins[0] = index;
    n->origin_count = 1;
    int64_t opset = cg_model_opset(m->source, n->domain);
    const cg_schema *s = cg_schema_find(n->domain, n->op_type, opset);
    n->since = s ? s->since_version : 0;
    g->node_count++;
    /* bodies: GRAPH attributes (GRAPHS attributes are left as they are) */
    for (size_t a = 0; a < sn->attr_count; a++) {
        const cg_attr *at = &sn->attrs[a];
        if (!at->g)
            continue;
        n = &g->nodes[g->node_count - 1];
        if (!n->bodies && !(n->bodies = lg_alloc(m, sn->attr_count, sizeof *n->bodies)))
            return cg_error_set(m->err, CG_NOMEM, "out of memory lowering the model");
        lg_graph *b = lg_alloc(m, 1, sizeof *b);
        char path[512];
        const char *label = sn->name && sn->name[0] ? sn->name : n->op_type;
        snprintf(path, sizeof path, "%s%s%s/%s", g->path, g->path[0] ? "/" : "", label,
                 at->name ? at->name : "?");
        if (!b)
            return cg_error_set(m->err, CG_NOMEM, "out of memory lowering the model");
        g->nodes[g->node_count - 1].bodies[a] = b;
        cg_status st = load_graph(m, b, at->g, g, lg_strdup(m, path), NULL, depth + 1);
        if (st != CG_OK)
            return st;
    }
    return CG_OK;
}

static cg_status load_graph(lg_model *m, lg_graph *g, const cg_graph *src, lg_graph *parent,
                            const char *path, const cg_type_env *types, int depth)
{
    if (depth > 64)
        return cg_error_set(m->err, CG_LIMIT, "subgraphs nested deeper than 64");
    g->model = m;
    g->parent = parent;
    g->source = src;
    g->path = path ? path : "";
    g->stale = true;
    g->inputs = src->inputs;
    g->input_count = src->input_count;
    g->output_infos = src->outputs;
    g->output_count = src->output_count;
    g->outputs = lg_alloc(m, src->output_count, sizeof *g->outputs);
    if (m->oom)
        return cg_error_set(m->err, CG_NOMEM, "out of memory lowering the model");
    for (size_t i = 0; i < src->output_count; i++)
        g->outputs[i] = src->outputs[i].name ? src->outputs[i].name : "";
    for (size_t i = 0; i < src->initializer_count; i++) {
        const cg_tensor_proto *tp = &src->initializers[i];
        if (!tp->name || !lg_add_init(g, tp))
            if (m->oom)
                return cg_error_set(m->err, CG_NOMEM, "out of memory lowering the model");
    }
    /* sparse initializers are dense to every runtime we model: densify */
    for (size_t i = 0; i < src->sparse_initializer_count; i++) {
        const cg_sparse_tensor_proto *sp = &src->sparse_initializers[i];
        cg_value *v = NULL;
        /* held to the runtime's default allocation limit: the dense form can
         * be far larger than the file */
        cg_status st = cg_value_from_sparse_proto(sp, CG_DEFAULT_MAX_ALLOC, &v, m->err);
        if (st != CG_OK)
            return st;
        size_t bytes = 0;
        bool ok = v->kind == CG_VALUE_TENSOR &&
                  cg_tensor_byte_size(v->tensor.dtype, v->tensor.numel, &bytes) &&
                  v->tensor.dtype != CG_DTYPE_STRING;
        cg_tensor_proto *tp =
            ok ? lg_tensor_new(m, sp->values ? sp->values->name : "", (int32_t)v->tensor.dtype,
                               v->tensor.dims, (size_t)v->tensor.rank, v->tensor.data, bytes)
               : NULL;
        cg_value_free(v);
        if (!tp || !lg_add_init(g, tp))
            return cg_error_set(m->err, m->oom ? CG_NOMEM : CG_UNSUPPORTED,
                                "sparse initializer %zu: cannot densify", i);
    }
    lg_type t;
    for (size_t i = 0; i < src->input_count; i++)
        if (src->inputs[i].name && type_from_info(&src->inputs[i], &t) &&
            !lg_type_set(g, src->inputs[i].name, &t))
            return cg_error_set(m->err, CG_NOMEM, "out of memory lowering the model");
    for (size_t i = 0; i < src->value_info_count; i++)
        if (src->value_infos[i].name && type_from_info(&src->value_infos[i], &t) &&
            !lg_type_set(g, src->value_infos[i].name, &t))
            return cg_error_set(m->err, CG_NOMEM, "out of memory lowering the model");
    for (size_t i = 0; i < src->output_count; i++)
        if (src->outputs[i].name && type_from_info(&src->outputs[i], &t) &&
            !lg_type_set(g, src->outputs[i].name, &t))
            return cg_error_set(m->err, CG_NOMEM, "out of memory lowering the model");
    /* the initializers' own types win over a declared input type (IR < 4
     * lists every initializer as an input) */
    for (size_t i = 0; i < g->init_count; i++) {
        lg_type_from_tensor(g->inits[i].tensor, &t);
        if (!lg_type_set(g, g->inits[i].name, &t))
            return cg_error_set(m->err, CG_NOMEM, "out of memory lowering the model");
    }
    for (size_t n = 0; n < src->node_count; n++) {
        cg_status st = load_node(m, g, &src->nodes[n], n, depth);
        if (st != CG_OK)
            return st;
    }
    /* types the reference run saw (main graph only): dims a symbolic input
     * dim moves are not concrete to a runtime's shape inference */
    if (types) {
        for (size_t n = 0; n < g->node_count; n++) {
            const lg_node *nd = &g->nodes[n];
            for (size_t o = 0; o < nd->output_count; o++) {
                const char *name = nd->outputs[o];
                const cg_value_type *vt = name[0] ? cg_type_env_get(types, name) : NULL;
                if (!vt || !vt->known || vt->rank > CG_MAX_RANK)
                    continue;
                uint32_t dyn = cg_type_env_dynamic_dims(types, name);
                memset(&t, 0, sizeof t);
                t.has_dtype = true;
                t.dtype = (int32_t)vt->dtype;
                t.has_shape = true;
                t.rank = vt->rank;
                for (int d = 0; d < vt->rank; d++) {
                    t.dims[d] = vt->dims[d];
                    if (!(dyn & (1u << d)))
                        t.dim_known |= 1u << d;
                }
                if (!lg_type_set(g, name, &t))
                    return cg_error_set(m->err, CG_NOMEM, "out of memory lowering the model");
            }
        }
        for (size_t i = 0; i < src->input_count; i++) {
            const char *name = src->inputs[i].name;
            const lg_type *dt = name ? lg_type_get(g, name) : NULL;
            if (!dt || lg_constant(g, name, false))
                continue;
            t = *dt;
            uint32_t dyn = cg_type_env_dynamic_dims(types, name);
            t.dim_known &= ~dyn;
            if (!lg_type_set(g, name, &t))
                return cg_error_set(m->err, CG_NOMEM, "out of memory lowering the model");
        }
    }
    return CG_OK;
}

/* Clears the modified marks of g and its bodies. */
void lg_clear_modified(lg_graph *g)
{
    g->modified = false;
    for (size_t n = 0; n < g->node_count; n++)
        for (size_t a = 0; a < g->nodes[n].attr_count && g->nodes[n].bodies; a++)
            if (g->nodes[n].bodies[a])
                lg_clear_modified(g->nodes[n].bodies[a]);
}

bool lg_any_modified(const lg_graph *g)
{
    if (g->modified)
        return true;
    for (size_t n = 0; n < g->node_count; n++)
        for (size_t a = 0; a < g->nodes[n].attr_count && g->nodes[n].bodies; a++)
            if (g->nodes[n].bodies[a] && lg_any_modified(g->nodes[n].bodies[a]))
                return true;
    return false;
}

cg_status lg_load(lg_model *m, const cg_type_env *types, cg_error *err)
{
    m->err = err;
    if (!m->source->graph)
        return cg_error_set(err, CG_INVALID, "the model has no graph");
    m->main = lg_alloc(m, 1, sizeof *m->main);
    if (!m->main)
        return cg_error_set(err, CG_NOMEM, "out of memory lowering the model");
    cg_status st = load_graph(m, m->main, m->source->graph, NULL, "", types, 0);
    if (st == CG_OK)
        lg_clear_modified(m->main);
    return st;
}

static void free_graph(lg_graph *g)
{
    if (!g)
        return;
    for (size_t n = 0; n < g->node_count; n++)
        for (size_t a = 0; a < g->nodes[n].attr_count; a++)
            if (g->nodes[n].bodies)
                free_graph(g->nodes[n].bodies[a]);
    idx_clear(g);
    free(g->entries);
    free(g->nodes);
    free(g->inits);
    free(g->types);
    cg_strmap_free(&g->type_index);
}

void lg_free(lg_model *m)
{
    if (m)
        free_graph(m->main);
}

/* --- emitting ------------------------------------------------------------------------- */

static cg_status emit_graph(lg_model *m, lg_graph *g, cg_graph *out, bool is_main);

/* The cg_type of a value, from its static type, for value_info. */
static cg_status emit_node(lg_model *m, lg_graph *g, const lg_node *n, cg_node *out)
{
    memset(out, 0, sizeof *out);
    out->name = n->name;
    out->op_type = n->op_type;
    out->domain = n->domain[0] ? n->domain : NULL;
    out->doc_string = n->doc_string;
    out->inputs = (const char **)n->inputs;
    out->input_count = n->input_count;
    out->outputs = (const char **)n->outputs;
    out->output_count = n->output_count;
    out->attr_count = n->attr_count;
    out->attrs = lg_alloc(m, n->attr_count, sizeof *out->attrs);
    if (!out->attrs)
        return cg_error_set(m->err, CG_NOMEM, "out of memory lowering the model");
    if (n->attr_count)
        memcpy(out->attrs, n->attrs, n->attr_count * sizeof *n->attrs);
    for (size_t a = 0; a < n->attr_count; a++) {
        if (!n->bodies || !n->bodies[a])
            continue;
        cg_graph *b = lg_alloc(m, 1, sizeof *b);
        if (!b)
            return cg_error_set(m->err, CG_NOMEM, "out of memory lowering the model");
        cg_status st = emit_graph(m, n->bodies[a], b, false);
        if (st != CG_OK)
            return st;
        out->attrs[a].g = b;
    }
    (void)g;
    return CG_OK;
}

/* A value's static type as a declaration (value_info): unknown dims have
 * neither a size nor a name, so a declared type environment counts them
 * as dynamic. NULL when out of memory. */
static cg_type *declared_type(lg_model *m, const lg_type *t)
{
    cg_type *ty = lg_alloc(m, 1, sizeof *ty);
    if (!ty)
        return NULL;
    ty->kind = CG_TYPE_TENSOR;
    ty->elem_type = t->dtype;
    ty->has_elem_type = t->has_dtype;
    if (!t->has_shape)
        return ty;
    cg_shape *sh = lg_alloc(m, 1, sizeof *sh);
    cg_dim *dims = lg_alloc(m, (size_t)t->rank, sizeof *dims);
    if (!sh || (t->rank && !dims))
        return NULL;
    for (int d = 0; d < t->rank; d++) {
        dims[d].has_value = (t->dim_known >> d) & 1u;
        dims[d].value = dims[d].has_value ? t->dims[d] : 0;
    }
    sh->dims = dims;
    sh->rank = (size_t)t->rank;
    ty->shape = sh;
    return ty;
}

/* With m->declare_types: every input, output and node output of the main
 * graph declared with its lg_type. */
static cg_status declare_graph_types(lg_model *m, lg_graph *g, cg_graph *out)
{
    for (size_t i = 0; i < out->input_count; i++) {
        const lg_type *t = out->inputs[i].name ? lg_type_get(g, out->inputs[i].name) : NULL;
        if (t && !(out->inputs[i].type = declared_type(m, t)))
            return cg_error_set(m->err, CG_NOMEM, "out of memory lowering the model");
    }
    for (size_t i = 0; i < out->output_count; i++) {
        const lg_type *t = lg_type_get(g, out->outputs[i].name);
        if (t && !(out->outputs[i].type = declared_type(m, t)))
            return cg_error_set(m->err, CG_NOMEM, "out of memory lowering the model");
    }
    size_t count = 0;
    for (size_t n = 0; n < out->node_count; n++)
        count += out->nodes[n].output_count;
    cg_value_info *infos = lg_alloc(m, count, sizeof *infos);
    if (count && !infos)
        return cg_error_set(m->err, CG_NOMEM, "out of memory lowering the model");
    size_t vi = 0;
    for (size_t n = 0; n < out->node_count; n++)
        for (size_t o = 0; o < out->nodes[n].output_count; o++) {
            const char *name = out->nodes[n].outputs[o];
            const lg_type *t = name && name[0] ? lg_type_get(g, name) : NULL;
            if (!t)
                continue;
            infos[vi].name = name;
            if (!(infos[vi++].type = declared_type(m, t)))
                return cg_error_set(m->err, CG_NOMEM, "out of memory lowering the model");
        }
    out->value_infos = infos;
    out->value_info_count = vi;
    return CG_OK;
}

static cg_status emit_graph(lg_model *m, lg_graph *g, cg_graph *out, bool is_main)
{
    const cg_graph *src = g->source;
    *out = *src;
    size_t *order = NULL, count = 0;
    if (!lg_topo_order(g, &order, &count))
        return cg_error_set(m->err, CG_NOMEM, "out of memory lowering the model");
    out->nodes = lg_alloc(m, count, sizeof *out->nodes);
    if (!out->nodes) {
        free(order);
        return cg_error_set(m->err, CG_NOMEM, "out of memory lowering the model");
    }
    out->node_count = count;
    for (size_t i = 0; i < count; i++) {
        cg_status st = emit_node(m, g, &g->nodes[order[i]], &out->nodes[i]);
        if (st != CG_OK) {
            free(order);
            return st;
        }
    }
    if (is_main) {
        /* the origin map of the main graph, in emitted order */
        cg_lowered *l = m->out;
        size_t total = 0;
        for (size_t i = 0; i < count; i++)
            total += g->nodes[order[i]].origin_count;
        size_t *start = lg_alloc(m, count + 1, sizeof *start);
        size_t *orig = lg_alloc(m, total, sizeof *orig);
        if (!start || !orig) {
            free(order);
            return cg_error_set(m->err, CG_NOMEM, "out of memory lowering the model");
        }
        size_t k = 0;
        for (size_t i = 0; i < count; i++) {
            const lg_node *n = &g->nodes[order[i]];
            start[i] = k;
            bool same_op = false;
            for (size_t j = 0; j < n->origin_count; j++) {
                orig[k++] = n->origins[j];
                const cg_node *sn = &src->nodes[n->origins[j]];
                same_op |= n->keeps_origins || str_eq(sn->op_type, lg_source_op(n));
            }
            l->added_count += !same_op;
        }
        start[count] = k;
        l->origin = orig;
        l->origin_start = start;
    }
    free(order);
    /* initializers still read by a live node, a body or a graph output */
    size_t used = 0;
    for (size_t i = 0; i < g->init_count; i++) {
        lg_init *in = &g->inits[i];
        if (in->dead)
            continue;
        const lg_index_entry *e = lg_lookup(g, in->name);
        bool live = e && e->init == i &&
                    (e->use_count || e->implicit_uses || e->graph_output || e->graph_input);
        in->dead = !live;
        used += live;
    }
    out->initializers = lg_alloc(m, used, sizeof *out->initializers);
    if (!out->initializers)
        return cg_error_set(m->err, CG_NOMEM, "out of memory lowering the model");
    out->initializer_count = 0;
    for (size_t i = 0; i < g->init_count; i++)
        if (!g->inits[i].dead) {
            out->initializers[out->initializer_count] = *g->inits[i].tensor;
            out->initializers[out->initializer_count].name = g->inits[i].name;
            out->initializer_count++;
        }
    out->sparse_initializers = NULL;
    out->sparse_initializer_count = 0;
    /* IR < 4: every initializer is also a graph input */
    const cg_model *sm = m->source;
    bool inits_are_inputs = sm->has_ir_version && sm->ir_version < 4;
    size_t in_count = 0;
    cg_value_info *ins = lg_alloc(m, src->input_count + out->initializer_count, sizeof *ins);
    if (!ins)
        return cg_error_set(m->err, CG_NOMEM, "out of memory lowering the model");
    for (size_t i = 0; i < src->input_count; i++) {
        const char *name = src->inputs[i].name ? src->inputs[i].name : "";
        const lg_index_entry *e = lg_lookup(g, name);
        /* an input that was an initializer ORT dropped as unused goes too */
        bool was_init = false;
        for (size_t k = 0; k < g->init_count; k++)
            was_init |= g->inits[k].dead && strcmp(g->inits[k].name, name) == 0;
        bool still_init = e && e->init != SIZE_MAX;
        if (was_init && !still_init && !(e && (e->use_count || e->implicit_uses)))
            continue;
        ins[in_count++] = src->inputs[i];
    }
    if (inits_are_inputs)
        for (size_t i = 0; i < out->initializer_count; i++) {
            const char *name = out->initializers[i].name;
            bool listed = false;
            for (size_t k = 0; k < in_count; k++)
                listed |= strcmp(ins[k].name ? ins[k].name : "", name) == 0;
            if (listed)
                continue;
            cg_type *ty = lg_alloc(m, 1, sizeof *ty);
            cg_shape *sh = lg_alloc(m, 1, sizeof *sh);
            const cg_tensor_proto *tp = &out->initializers[i];
            cg_dim *dims = lg_alloc(m, tp->rank, sizeof *dims);
            if (!ty || !sh || !dims)
                return cg_error_set(m->err, CG_NOMEM, "out of memory lowering the model");
            for (size_t d = 0; d < tp->rank; d++) {
                dims[d].value = tp->dims[d];
                dims[d].has_value = true;
            }
            sh->dims = dims;
            sh->rank = tp->rank;
            ty->kind = CG_TYPE_TENSOR;
            ty->elem_type = tp->data_type;
            ty->has_elem_type = true;
            ty->shape = sh;
            ins[in_count].name = name;
            ins[in_count].type = ty;
            in_count++;
        }
    out->inputs = ins;
    out->input_count = in_count;
    /* outputs keep their declared types; names may have been redirected */
    cg_value_info *outs = lg_alloc(m, g->output_count, sizeof *outs);
    if (!outs)
        return cg_error_set(m->err, CG_NOMEM, "out of memory lowering the model");
    for (size_t i = 0; i < g->output_count; i++) {
        outs[i] = g->output_infos[i];
        outs[i].name = g->outputs[i];
    }
    out->outputs = outs;
    /* value_info of values that no longer exist would mislead: keep the
     * entries whose names are still defined */
    size_t vi = 0;
    cg_value_info *infos = lg_alloc(m, src->value_info_count, sizeof *infos);
    if (!infos)
        return cg_error_set(m->err, CG_NOMEM, "out of memory lowering the model");
    for (size_t i = 0; i < src->value_info_count; i++) {
        const char *name = src->value_infos[i].name;
        const lg_index_entry *e = name ? lg_lookup(g, name) : NULL;
        if (e && (e->producer != SIZE_MAX || e->init != SIZE_MAX))
            infos[vi++] = src->value_infos[i];
    }
    out->value_infos = infos;
    out->value_info_count = vi;
    if (is_main && m->declare_types && !m->oom)
        return declare_graph_types(m, g, out);
    return m->oom ? cg_error_set(m->err, CG_NOMEM, "out of memory lowering the model") : CG_OK;
}

cg_status lg_emit(lg_model *m, cg_model *out, cg_error *err)
{
    m->err = err;
    const cg_model *src = m->source;
    out->ir_version = src->ir_version;
    out->has_ir_version = src->has_ir_version;
    out->opsets = src->opsets;
    out->opset_count = src->opset_count;
    out->producer_name = src->producer_name;
    out->producer_version = src->producer_version;
    out->domain = src->domain;
    out->model_version = src->model_version;
    out->has_model_version = src->has_model_version;
    out->doc_string = src->doc_string;
    out->metadata = src->metadata;
    out->metadata_count = src->metadata_count;
    out->functions = src->functions;
    out->function_count = src->function_count;
    out->graph = lg_alloc(m, 1, sizeof *out->graph);
    if (!out->graph)
        return cg_error_set(err, CG_NOMEM, "out of memory lowering the model");
    return emit_graph(m, m->main, out->graph, true);
}

/* --- evaluating a node ----------------------------------------------------------------- */

/* A TensorProto holding a runtime tensor value (raw data, or string_data). */
cg_tensor_proto *lg_tensor_from_value(lg_model *m, const cg_value *v, const char *name)
{
    if (v->kind != CG_VALUE_TENSOR || v->tensor.rank > CG_MAX_RANK)
        return NULL;
    const cg_tensor *t = &v->tensor;
    if (t->dtype == CG_DTYPE_STRING) {
        cg_tensor_proto *tp = lg_tensor_new(m, name, CG_DTYPE_STRING, t->dims, (size_t)t->rank,
                                            NULL, 0);
        if (!tp)
            return NULL;
        tp->raw_data.data = NULL;
        tp->raw_data.len = 0;
        cg_bytes *s = cg_arena_calloc(m->arena, (size_t)(t->numel ? t->numel : 1), sizeof *s);
        if (!s) {
            m->oom = true;
            return NULL;
        }
        for (int64_t i = 0; i < t->numel; i++) {
            const char *str = ((char *const *)t->data)[i];
            s[i].data = (const uint8_t *)lg_strdup(m, str ? str : "");
            s[i].len = str ? strlen(str) : 0;
        }
        tp->string_data = s;
        tp->string_count = (size_t)t->numel;
        return tp;
    }
    size_t bytes;
    if (!cg_tensor_byte_size(t->dtype, t->numel, &bytes))
        return NULL;
    return lg_tensor_new(m, name, (int32_t)t->dtype, t->dims, (size_t)t->rank, t->data, bytes);
}

cg_status lg_eval_node(lg_graph *g, const lg_node *n, cg_tensor_proto **outs, bool *ok,
                       char *why, size_t why_len, cg_error *err)
{
    *ok = false;
    if (why_len)
        why[0] = '\0';
    lg_model *m = g->model;
    const cg_model *src = m->source;
    cg_model mm;
    cg_graph gg;
    cg_node node;
    memset(&mm, 0, sizeof mm);
    memset(&gg, 0, sizeof gg);
    memset(&node, 0, sizeof node);
    mm.ir_version = src->has_ir_version && src->ir_version >= 4 ? src->ir_version : 8;
    mm.has_ir_version = true;
    mm.opsets = src->opsets;
    mm.opset_count = src->opset_count;
    mm.graph = &gg;
    node.name = n->name;
    node.op_type = n->op_type;
    node.domain = n->domain[0] ? n->domain : NULL;
    node.inputs = n->inputs;
    node.input_count = n->input_count;
    node.outputs = n->outputs;
    node.output_count = n->output_count;
    node.attrs = n->attrs;
    node.attr_count = n->attr_count;
    gg.nodes = &node;
    gg.node_count = 1;
    gg.name = "fold";
    cg_tensor_proto *inits = calloc(n->input_count ? n->input_count : 1, sizeof *inits);
    cg_value_info *outputs = calloc(n->output_count ? n->output_count : 1, sizeof *outputs);
    if (!inits || !outputs) {
        free(inits);
        free(outputs);
        return cg_error_set(err, CG_NOMEM, "out of memory evaluating %s '%s'", n->op_type,
                            n->name);
    }
    for (size_t i = 0; i < n->input_count; i++) {
        if (!n->inputs[i][0])
            continue;
        bool dup = false;
        for (size_t k = 0; k < gg.initializer_count; k++)
            dup |= strcmp(inits[k].name, n->inputs[i]) == 0;
        if (dup)
            continue;
        inits[gg.initializer_count] = *lg_constant(g, n->inputs[i], true);
        inits[gg.initializer_count].name = n->inputs[i];
        gg.initializer_count++;
    }
    gg.initializers = inits;
    size_t out_count = 0;
    for (size_t o = 0; o < n->output_count; o++)
        if (n->outputs[o][0])
            outputs[out_count++].name = n->outputs[o];
    gg.outputs = outputs;
    gg.output_count = out_count;
    cg_runtime *rt = NULL;
    cg_named_value *res = NULL;
    size_t res_count = 0;
    cg_error e;
    cg_error_clear(&e);
    cg_runtime_options opt;
    cg_runtime_options_default(&opt);
    cg_status st = cg_runtime_init(&mm, &opt, &rt, &e);
    if (st == CG_OK)
        st = cg_runtime_run(rt, NULL, 0, &res, &res_count, &e);
    if (st == CG_NOMEM) {
        cg_runtime_free(rt);
        free(inits);
        free(outputs);
        return cg_error_set(err, CG_NOMEM, "out of memory evaluating %s '%s'", n->op_type,
                            n->name);
    }
    if (st != CG_OK) {
        snprintf(why, why_len, "%s", e.msg);
    } else {
        bool all = true;
        size_t r = 0;
        for (size_t o = 0; o < n->output_count && all; o++) {
            outs[o] = NULL;
            if (!n->outputs[o][0])
                continue;
            outs[o] =
                r < res_count ? lg_tensor_from_value(m, res[r].value, n->outputs[o]) : NULL;
            r++;
            all = outs[o] != NULL;
        }
        *ok = all;
        if (!all)
            snprintf(why, why_len, "an output is not a tensor of at most %d dims", CG_MAX_RANK);
    }
    cg_runtime_free_outputs(res, res_count);
    cg_runtime_free(rt);
    free(inits);
    free(outputs);
    return m->oom ? cg_error_set(err, CG_NOMEM, "out of memory evaluating %s '%s'", n->op_type,
                                 n->name)
                  : CG_OK;
}
