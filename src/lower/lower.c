/*
 * The lowering table and cg_lower (include/convgate/lower.h): loads the
 * source into the editable graph, runs the named lowering, records what it
 * removed and writes the runtime's graph back as a model.
 */
#include <math.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "convgate/lower.h"
#include "convgate/target.h"
#include "core/arena.h"
#include "ir/walk.h"
#include "lower/lower_internal.h"
#include "target/registry.h"

typedef struct lowering_row {
    const char *name;
    cg_lowering_fn fn; /* NULL: the identity */
    const char *description;
    const char *remover; /* who removes the nodes it removes (cg_lowered.remover) */
} lowering_row;

static const lowering_row lowerings[] = {
    {"none", NULL, "the graph as written: the runtime partitions the ONNX graph itself",
     "nothing"},
#define CG_LOWERING(name, fn, description, remover) {name, fn, description, remover},
#include "target/lowerings.def"
#undef CG_LOWERING
};

#define LOWERING_COUNT (sizeof lowerings / sizeof lowerings[0])

size_t cg_lowering_count(void) { return LOWERING_COUNT; }

const char *cg_lowering_name(size_t i) { return i < LOWERING_COUNT ? lowerings[i].name : NULL; }

const char *cg_lowering_description(size_t i)
{
    return i < LOWERING_COUNT ? lowerings[i].description : NULL;
}

static const lowering_row *find_lowering(const char *name)
{
    for (size_t i = 0; i < LOWERING_COUNT; i++)
        if (name && strcmp(lowerings[i].name, name) == 0)
            return &lowerings[i];
    return NULL;
}

bool cg_lowering_known(const char *name) { return find_lowering(name) != NULL; }

void cg_lowered_free(cg_lowered *l)
{
    if (!l)
        return;
    free(l->removed);
    for (size_t i = 0; i < l->note_count; i++)
        free(l->notes[i]);
    free(l->notes);
    free(l->cpu_missing);
    free(l->owned_origins);
    cg_model_free(l->owned);
    cg_model_free(l->owned_ops);
    cg_type_env_free(l->owned_types);
    free(l);
}

size_t cg_lowered_origins(const cg_lowered *l, size_t i, const size_t **out)
{
    if (!l || !l->model->graph || i >= l->model->graph->node_count) {
        *out = NULL;
        return 0;
    }
    *out = l->origin + l->origin_start[i];
    return l->origin_start[i + 1] - l->origin_start[i];
}

/* --- the op histogram (lower_internal.h) --------------------------------------------- */

void lower_hist_add(lower_hist *h, const char *domain, const char *key)
{
    char k[sizeof h->v[0].key];
    if (!cg_domain_is_default(domain))
        snprintf(k, sizeof k, "%s:%s", domain, key ? key : "?");
    else
        snprintf(k, sizeof k, "%s", key ? key : "?");
    for (size_t i = 0; i < h->n; i++)
        if (strcmp(h->v[i].key, k) == 0) {
            h->v[i].n++;
            return;
        }
    if (h->n == h->cap) {
        size_t cap = h->cap ? h->cap * 2 : 32;
        lower_hist_entry *grown = realloc(h->v, cap * sizeof *grown);
        if (!grown) {
            h->oom = true;
            return;
        }
        h->v = grown;
        h->cap = cap;
    }
    memcpy(h->v[h->n].key, k, sizeof k);
    h->v[h->n++].n = 1;
}

static int hist_cmp(const void *a, const void *b)
{
    const lower_hist_entry *x = a, *y = b;
    if (x->n != y->n)
        return x->n < y->n ? 1 : -1;
    return strcmp(x->key, y->key);
}

void lower_hist_sort(lower_hist *h)
{
    if (h->n)
        qsort(h->v, h->n, sizeof *h->v, hist_cmp);
}

void lower_hist_text(const lower_hist *h, size_t max, char *buf, size_t len)
{
    size_t used = 0;
    if (len)
        buf[0] = '\0';
    for (size_t i = 0; i < h->n && used + 1 < len; i++) {
        if (i == max) {
            snprintf(buf + used, len - used, ", ...");
            break;
        }
        int w = snprintf(buf + used, len - used, "%s%s x%zu", i ? ", " : "", h->v[i].key,
                         h->v[i].n);
        if (w < 0)
            break;
        used += (size_t)w < len - used ? (size_t)w : len - used - 1;
    }
}

void lower_hist_free(lower_hist *h)
{
    free(h->v);
    memset(h, 0, sizeof *h);
}

/* --- shared by the mapping lowerings (lower_internal.h) -------------------------------- */

bool lower_is_onnx_op(const cg_node *n, const char *op)
{
    return n->op_type && cg_domain_is_default(n->domain) && strcmp(n->op_type, op) == 0;
}

const char *lower_alias_resolve(const lower_alias *a, const char *name)
{
    /* bounded: an alias chain is at most one link per removed node */
    for (size_t guard = 0; name && *name && guard <= a->count; guard++) {
        size_t i = cg_strmap_get(&a->map, name);
        if (i == CG_STRMAP_NONE)
            return name;
        name = a->to[i];
    }
    return name;
}

bool lower_alias_add(lower_alias *a, const char *from, const char *to)
{
    const char **grown = realloc(a->to, (a->count + 1) * sizeof *grown);
    if (!grown)
        return false;
    a->to = grown;
    a->to[a->count] = to;
    if (cg_strmap_add(&a->map, from, a->count) == CG_STRMAP_NONE)
        return false;
    a->count++;
    return true;
}

void lower_alias_free(lower_alias *a)
{
    free(a->to);
    cg_strmap_free(&a->map);
    memset(a, 0, sizeof *a);
}

size_t lower_consumers(const cg_graph *g, const char *name, size_t *only)
{
    size_t n = 0;
    for (size_t i = 0; i < g->node_count; i++)
        for (size_t k = 0; k < g->nodes[i].input_count; k++)
            if (g->nodes[i].inputs[k] && strcmp(g->nodes[i].inputs[k], name) == 0) {
                n++;
                *only = i;
            }
    for (size_t i = 0; i < g->output_count; i++)
        if (g->outputs[i].name && strcmp(g->outputs[i].name, name) == 0)
            n += 2;
    return n;
}

static bool scalar_of(const cg_tensor_proto *t, double *out)
{
    int64_t numel = 0;
    return t && lg_tensor_numel(t, &numel) && numel == 1 && lg_tensor_f64(t, 0, out);
}

bool lower_graph_scalar(const cg_graph *g, const char *name, double *out)
{
    if (!name || !*name)
        return false;
    for (size_t i = 0; i < g->initializer_count; i++)
        if (g->initializers[i].name && strcmp(g->initializers[i].name, name) == 0)
            return scalar_of(&g->initializers[i], out);
    for (size_t i = 0; i < g->node_count; i++) {
        const cg_node *n = &g->nodes[i];
        if (!lower_is_onnx_op(n, "Constant") || !n->output_count ||
            strcmp(n->outputs[0], name) != 0)
            continue;
        const cg_attr *v = cg_node_attr(n, "value");
        if (v && v->t)
            return scalar_of(v->t, out);
        if (cg_node_attr(n, "value_float")) {
            *out = cg_node_attr_float(n, "value_float", 0);
            return true;
        }
        return false;
    }
    return false;
}

/* The single reader of node n's first output when it is op `op`, else SIZE_MAX. */
static size_t sole_reader(const cg_graph *g, const cg_node *n, const char *op)
{
    size_t only = 0;
    if (!n->output_count || !*n->outputs[0] || lower_consumers(g, n->outputs[0], &only) != 1)
        return SIZE_MAX;
    return lower_is_onnx_op(&g->nodes[only], op) ? only : SIZE_MAX;
}

static bool near(double got, double v)
{
    return fabs(got - v) <= 1e-6 * fabs(v); /* float32 rounding of v */
}

static bool same(const char *a, const char *b)
{
    return a && b && *a && strcmp(a, b) == 0;
}

/* Binary node n reads `value` and the constant v (either side). */
static bool reads_const(const cg_graph *g, const cg_node *n, const char *value, double v)
{
    double got;
    if (n->input_count != 2)
        return false;
    for (int k = 0; k < 2; k++)
        if (same(n->inputs[k], value) && lower_graph_scalar(g, n->inputs[1 - k], &got) &&
            near(got, v))
            return true;
    return false;
}

/* Binary node n reads a and b (either order). */
static bool reads_pair(const cg_node *n, const char *a, const char *b)
{
    return n->input_count == 2 && ((same(n->inputs[0], a) && same(n->inputs[1], b)) ||
                                   (same(n->inputs[0], b) && same(n->inputs[1], a)));
}

/* Walks the chain from nodes[count - 1]: the sole reader of its output,
 * of op `op`; appended. False when the chain breaks there. */
static bool next_in_chain(const cg_graph *g, lower_gelu *m, const char *op)
{
    size_t k = sole_reader(g, &g->nodes[m->nodes[m->count - 1]], op);
    if (k == SIZE_MAX || m->count >= sizeof m->nodes / sizeof m->nodes[0])
        return false;
    m->nodes[m->count++] = k;
    return true;
}

static const char *out0(const cg_graph *g, const lower_gelu *m, size_t at)
{
    return g->nodes[m->nodes[at]].outputs[0];
}

bool lower_match_gelu(const cg_graph *g, size_t first, lower_gelu *out)
{
    const double sqrt2 = 1.4142135623730951, sqrt_2_pi = 0.7978845608028654;
    const cg_node *n0 = &g->nodes[first];
    lower_gelu m = {.nodes = {first}, .count = 1};
    if (n0->input_count != 2 || !n0->output_count || !*n0->outputs[0])
        return false;
    m.x = n0->inputs[0];
    if (lower_is_onnx_op(n0, "Div")) {
        double d;
        if (!lower_graph_scalar(g, n0->inputs[1], &d) || !near(d, sqrt2) ||
            !next_in_chain(g, &m, "Erf") || !next_in_chain(g, &m, "Add") ||
            !reads_const(g, &g->nodes[m.nodes[2]], out0(g, &m, 1), 1.0) ||
            !next_in_chain(g, &m, "Mul") ||
            !reads_pair(&g->nodes[m.nodes[3]], m.x, out0(g, &m, 2)) ||
            !next_in_chain(g, &m, "Mul") ||
            !reads_const(g, &g->nodes[m.nodes[4]], out0(g, &m, 3), 0.5))
            return false;
        m.core = 1;
    } else if (lower_is_onnx_op(n0, "Mul") && same(n0->inputs[0], n0->inputs[1])) {
        if (!next_in_chain(g, &m, "Mul") ||
            !reads_pair(&g->nodes[m.nodes[1]], m.x, out0(g, &m, 0)) ||
            !next_in_chain(g, &m, "Mul") ||
            !reads_const(g, &g->nodes[m.nodes[2]], out0(g, &m, 1), 0.044715) ||
            !next_in_chain(g, &m, "Add") ||
            !reads_pair(&g->nodes[m.nodes[3]], m.x, out0(g, &m, 2)) ||
            !next_in_chain(g, &m, "Mul") ||
            !reads_const(g, &g->nodes[m.nodes[4]], out0(g, &m, 3), sqrt_2_pi) ||
            !next_in_chain(g, &m, "Tanh") || !next_in_chain(g, &m, "Add") ||
            !reads_const(g, &g->nodes[m.nodes[6]], out0(g, &m, 5), 1.0) ||
            !next_in_chain(g, &m, "Mul") ||
            !reads_pair(&g->nodes[m.nodes[7]], m.x, out0(g, &m, 6)) ||
            !next_in_chain(g, &m, "Mul") ||
            !reads_const(g, &g->nodes[m.nodes[8]], out0(g, &m, 7), 0.5))
            return false;
        m.tanh = true;
        m.core = 5;
    } else {
        return false;
    }
    m.y = out0(g, &m, m.count - 1);
    if (!m.y || !*m.y)
        return false;
    *out = m;
    return true;
}

/* --- what was removed ----------------------------------------------------------------- */

static bool in_scope(const cg_lower_removed *r, const char *graph)
{
    return !graph || strcmp(r->graph, graph) == 0;
}

size_t cg_lowered_removed_count(const cg_lowered *l, const char *graph)
{
    size_t n = 0;
    for (size_t i = 0; i < l->removed_count; i++)
        n += in_scope(&l->removed[i], graph);
    return n;
}

const char *cg_lowered_removed_summary(const cg_lowered *l, const char *graph, size_t max,
                                       char *buf, size_t len)
{
    lower_hist h = {0};
    for (size_t i = 0; i < l->removed_count; i++)
        if (in_scope(&l->removed[i], graph))
            lower_hist_add(&h, l->removed[i].domain, l->removed[i].op_type);
    lower_hist_sort(&h);
    lower_hist_text(&h, max, buf, len);
    lower_hist_free(&h);
    return buf;
}

/* The identity: the runtime partitions the source graph. */
static cg_status lower_none(cg_lowered *l, cg_error *err)
{
    size_t n = l->source->graph ? l->source->graph->node_count : 0;
    size_t *v = malloc((2 * n + 1) * sizeof *v);
    if (!v)
        return cg_error_set(err, CG_NOMEM, "out of memory");
    for (size_t i = 0; i < n; i++)
        v[i] = i;
    for (size_t i = 0; i <= n; i++)
        v[n + i] = i;
    l->owned_origins = v;
    l->origin = v;
    l->origin_start = v + n;
    l->model = l->source;
    return CG_OK;
}

cg_status cg_lower(const cg_model *src, const char *name, const cg_dim_binding *dims,
                   size_t dim_count, cg_lowered **out, cg_error *err)
{
    return cg_lower_fed(src, name, dims, dim_count, NULL, 0, out, err);
}

/* Lowerings that ran a lowering function (cg_lowerings_made). */
static atomic_size_t lowerings_made;

size_t cg_lowerings_made(void)
{
    return atomic_load(&lowerings_made);
}

cg_status cg_lower_fed(const cg_model *src, const char *name, const cg_dim_binding *dims,
                       size_t dim_count, const cg_named_value *feeds, size_t feed_count,
                       cg_lowered **out, cg_error *err)
{
    *out = NULL;
    const lowering_row *row = find_lowering(name ? name : "none");
    if (!row) {
        char known[256] = "";
        for (size_t i = 0; i < LOWERING_COUNT; i++) {
            strncat(known, i ? ", " : "", sizeof known - strlen(known) - 1);
            strncat(known, lowerings[i].name, sizeof known - strlen(known) - 1);
        }
        return cg_error_set(err, CG_USAGE, "unknown lowering '%s' (known: %s)", name, known);
    }
    if (!src || !src->graph)
        return cg_error_set(err, CG_USAGE, "cg_lower: the model has no graph");
    cg_lowered *l = calloc(1, sizeof *l);
    if (!l)
        return cg_error_set(err, CG_NOMEM, "out of memory");
    l->lowering = row->name;
    l->remover = row->remover;
    l->source = src;
    cg_status st;
    if (!row->fn) {
        st = lower_none(l, err);
    } else {
        atomic_fetch_add(&lowerings_made, 1);
        cg_model *mm = calloc(1, sizeof *mm);
        lg_model m;
        memset(&m, 0, sizeof m);
        if (!mm || !(mm->arena = cg_arena_new())) {
            free(mm);
            cg_lowered_free(l);
            return cg_error_set(err, CG_NOMEM, "out of memory");
        }
        l->owned = mm;
        m.source = src;
        m.arena = mm->arena;
        m.out = l;
        m.dims = dims;
        m.dim_count = dim_count;
        m.feeds = feeds;
        m.feed_count = feed_count;
        cg_type_env *types = NULL;
        cg_error terr;
        cg_error_clear(&terr);
        st = cg_type_env_build_symbolic(src, dims, dim_count, feeds, feed_count, &types, &terr);
        if (st == CG_NOMEM) {
            cg_lowered_free(l);
            return cg_error_set(err, CG_NOMEM, "%s", terr.msg);
        }
        if (st != CG_OK) {
            lg_note(&m, "shapes: only declared shapes are known, the reference run failed (%s)",
                    terr.msg);
            types = NULL;
        }
        st = lg_load(&m, types, err);
        /* kept: the source's types on these feeds (cg_lowered.source_types) */
        l->source_types = l->owned_types = types;
        if (st == CG_OK)
            st = row->fn(&m, err);
        if (st == CG_OK && !lg_record_removals(&m))
            st = cg_error_set(err, CG_NOMEM, "out of memory");
        if (st == CG_OK)
            st = lg_emit(&m, mm, err);
        l->declared_types = m.declare_types;
        lg_free(&m);
        l->model = mm;
    }
    if (st != CG_OK) {
        cg_error_prefix(err, "lowering '%s': ", row->name);
        cg_lowered_free(l);
        return st;
    }
    *out = l;
    return CG_OK;
}

cg_status cg_lowered_types(const cg_lowered *l, const cg_dim_binding *dims, size_t dim_count,
                           const struct cg_random_inputs *random, cg_type_env **out,
                           cg_error *err)
{
    if (l->declared_types)
        return cg_type_env_build_declared(l->model, out, err);
    return cg_type_env_build_with(l->model, dims, dim_count, random, out, err);
}

cg_status cg_lowered_types_fed(const cg_lowered *l, const cg_dim_binding *dims,
                               size_t dim_count, const struct cg_random_inputs *random,
                               const cg_named_value *feeds, size_t feed_count,
                               cg_type_env **out, cg_error *err)
{
    if (!l->declared_types)
        return cg_type_env_build_fed(l->model, dims, dim_count, random, feeds, feed_count, out,
                                     err);
    /* the types are declared, but the model must run on these inputs */
    cg_type_env *source = NULL;
    cg_status st = cg_type_env_build_fed(l->source, dims, dim_count, random, feeds, feed_count,
                                         &source, err);
    cg_type_env_free(source);
    return st != CG_OK ? st : cg_type_env_build_declared(l->model, out, err);
}

void cg_lowered_node_times(const cg_lowered *l, const double *source_ms, double *out)
{
    size_t n = l->model->graph->node_count, ns = l->source->graph->node_count;
    size_t *shares = calloc(ns + 1, sizeof *shares);
    for (size_t i = 0; i < n; i++)
        out[i] = 0;
    if (!shares)
        return;
    for (size_t k = 0; k < l->origin_start[n]; k++)
        if (l->origin[k] < ns)
            shares[l->origin[k]]++;
    for (size_t i = 0; i < n; i++)
        for (size_t k = l->origin_start[i]; k < l->origin_start[i + 1]; k++)
            if (l->origin[k] < ns)
                out[i] += source_ms[l->origin[k]] / (double)shares[l->origin[k]];
    free(shares);
}

cg_status cg_lowering_for_targets(const cg_target *const *targets, size_t count,
                                  const char **out, cg_error *err)
{
    const char *chosen = NULL;
    const cg_target *by = NULL;
    for (size_t i = 0; i < count; i++) {
        const char *lw = targets[i]->lowering ? targets[i]->lowering : "none";
        if (!chosen) {
            chosen = lw;
            by = targets[i];
        } else if (strcmp(chosen, lw) != 0) {
            return cg_error_set(err, CG_USAGE,
                                "targets '%s' and '%s' partition different graphs (preprocess "
                                "'%s' vs '%s'): place them in separate runs",
                                by->name, targets[i]->name, chosen, lw);
        }
    }
    *out = chosen ? chosen : "none";
    return CG_OK;
}

cg_status cg_lower_for_targets(const cg_model *src, const cg_target *const *targets,
                               size_t count, const cg_dim_binding *dims, size_t dim_count,
                               cg_lowered **out, cg_error *err)
{
    return cg_lower_for_targets_fed(src, targets, count, dims, dim_count, NULL, 0, out, err);
}

cg_status cg_lower_for_targets_fed(const cg_model *src, const cg_target *const *targets,
                                   size_t count, const cg_dim_binding *dims, size_t dim_count,
                                   const cg_named_value *feeds, size_t feed_count,
                                   cg_lowered **out, cg_error *err)
{
    const char *lowering;
    cg_status st = cg_lowering_for_targets(targets, count, &lowering, err);
    return st != CG_OK ? st
                       : cg_lower_fed(src, lowering, dims, dim_count, feeds, feed_count, out,
                                      err);
}

/* --- the attributes of a made node (lower_internal.h) ----------------------------------- */

void lower_attrs_str(lower_attrs *as, const char *name, const char *v)
{
    if (as->n < LOWER_ATTRS_MAX)
        as->a[as->n++] = (cg_attr){.name = name, .type = CG_ATTR_STRING, .has_type = true,
                                   .s = {(const uint8_t *)v, strlen(v)}};
}

void lower_attrs_int(lower_attrs *as, const char *name, int64_t v)
{
    if (as->n < LOWER_ATTRS_MAX)
        as->a[as->n++] = (cg_attr){.name = name, .type = CG_ATTR_INT, .has_type = true, .i = v,
                                   .has_i = true};
}

void lower_attrs_float(lower_attrs *as, const char *name, float v)
{
    if (as->n < LOWER_ATTRS_MAX)
        as->a[as->n++] = (cg_attr){.name = name, .type = CG_ATTR_FLOAT, .has_type = true, .f = v,
                                   .has_f = true};
}

void lower_attrs_ints(lower_attrs *as, const char *name, const int64_t *v, size_t count)
{
    if (as->n >= LOWER_ATTRS_MAX || count > CG_MAX_RANK)
        return;
    memcpy(as->ints[as->n], v, count * sizeof *v);
    as->a[as->n] = (cg_attr){.name = name, .type = CG_ATTR_INTS, .has_type = true,
                             .ints = as->ints[as->n], .ints_count = count};
    as->n++;
}
