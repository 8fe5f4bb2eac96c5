/*
 * The type environment: dtype, shape and constness of every value of a
 * model, for concrete input dims, as targets' `supports` needs them.
 *
 * Built by one run of the reference runtime on the random inputs of
 * convgate/samples.h (sample 0 of the caller's policy: what gate 3 and
 * `run --random` feed) whose symbolic dims come from the caller's bindings
 * (unbound: 1, noted). When the
 * model has symbolic dims a second run with every symbol one larger tells
 * which dims of which values depend on them (the "dynamic" dims a static-
 * shape runtime refuses). Constness is structural: initializers are
 * constant, and so is every output of a node whose inputs all are (Constant
 * included; random generators and nodes with subgraphs excluded), which is
 * what constant folding in the runtimes we model sees.
 *
 * Invariant: names are unique keys (the first definition wins: main graph
 * before subgraphs); the string map holds each entry's index.
 */
#include <inttypes.h>
#include <stdatomic.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "convgate/runtime.h"
#include "convgate/samples.h"
#include "convgate/tensor_io.h"
#include "convgate/tensor.h"
#include "core/strmap.h"
#include "ir/walk.h"
#include "target/registry.h"

typedef struct te_entry {
    cg_value_type t;
    uint32_t dynamic; /* bit d: dim d depends on a symbolic input dim */
} te_entry;

struct cg_type_env {
    te_entry *entries;
    size_t count, cap;
    cg_strmap index; /* name (owned by its entry) -> entry index */
    char **notes;
    size_t note_count;
    /* every declared dim the build sized was a number: no symbol, no
     * binding, no probe (cg_type_env_fixed_dims) */
    bool fixed_dims;
};

/* Type environments built by a reference run (cg_type_env_runs_made). */
static atomic_size_t runs_made;

size_t cg_type_env_runs_made(void)
{
    return atomic_load(&runs_made);
}

/* --- the table --------------------------------------------------------------------- */

static te_entry *env_lookup(const cg_type_env *env, const char *name)
{
    if (!env)
        return NULL;
    size_t i = cg_strmap_get(&env->index, name);
    return i == CG_STRMAP_NONE ? NULL : &env->entries[i];
}

/* The entry for name, created (unknown, not constant) when new. */
static cg_status env_add(cg_type_env *env, const char *name, te_entry **out, cg_error *err)
{
    te_entry *e = env_lookup(env, name);
    *out = e;
    if (e)
        return CG_OK;
    if (env->count == env->cap) {
        size_t cap = env->cap ? env->cap * 2 : 64;
        te_entry *grown = realloc(env->entries, cap * sizeof *grown);
        if (!grown)
            return cg_error_set(err, CG_NOMEM, "out of memory building the type environment");
        env->entries = grown;
        env->cap = cap;
    }
    e = &env->entries[env->count];
    memset(e, 0, sizeof *e);
    char *copy = strdup(name);
    if (!copy || cg_strmap_add(&env->index, copy, env->count) == CG_STRMAP_NONE) {
        free(copy);
        return cg_error_set(err, CG_NOMEM, "out of memory building the type environment");
    }
    e->t.name = copy;
    env->count++;
    *out = e;
    return CG_OK;
}

#if defined(__GNUC__) || defined(__clang__)
__attribute__((format(printf, 3, 4)))
#endif
static cg_status env_note(cg_type_env *env, cg_error *err, const char *fmt, ...)
{
    char buf[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    char **grown = realloc(env->notes, (env->note_count + 1) * sizeof *grown);
    if (!grown)
        return cg_error_set(err, CG_NOMEM, "out of memory building the type environment");
    env->notes = grown;
    if (!(env->notes[env->note_count] = strdup(buf)))
        return cg_error_set(err, CG_NOMEM, "out of memory building the type environment");
    env->note_count++;
    return CG_OK;
}

void cg_type_env_free(cg_type_env *env)
{
    if (!env)
        return;
    for (size_t i = 0; i < env->count; i++)
        free((char *)env->entries[i].t.name);
    for (size_t i = 0; i < env->note_count; i++)
        free(env->notes[i]);
    free(env->entries);
    cg_strmap_free(&env->index);
    free(env->notes);
    free(env);
}

const cg_value_type *cg_type_env_get(const cg_type_env *env, const char *name)
{
    te_entry *e = env_lookup(env, name);
    return e ? &e->t : NULL;
}

size_t cg_type_env_note_count(const cg_type_env *env) { return env ? env->note_count : 0; }

bool cg_type_env_fixed_dims(const cg_type_env *env) { return env && env->fixed_dims; }

const char *cg_type_env_note(const cg_type_env *env, size_t i)
{
    return env && i < env->note_count ? env->notes[i] : NULL;
}

uint32_t cg_type_env_dynamic_dims(const cg_type_env *env, const char *name)
{
    te_entry *e = env_lookup(env, name);
    return e ? e->dynamic : 0;
}

/* --- building ------------------------------------------------------------------------ */

/* Build state shared by the two runs. */
typedef struct te_build {
    cg_type_env *env;
    const cg_model *model;
    const cg_dim_binding *dims;
    size_t dim_count;
    bool *binding_used;
    bool probing; /* second run: compare dims instead of recording */
    bool probe_bound; /* bound symbols still count as dynamic (a runtime's view) */
    int64_t symbol_delta;
    cg_error *err;
    const cg_random_inputs *random; /* NULL: the policy's defaults, seed 0 */
    /* the tensors the recording run feeds instead of random ones (the
     * user's inputs; borrowed), or NULL */
    const cg_named_value *fed;
    size_t fed_count;
    const cg_type_env_watch *watch; /* of the recording run (or NULL) */
} te_build;

static bool dtype_ok(int32_t v) { return v > 0 && v < CG_DTYPE_COUNT && cg_dtype_valid(v); }

/* Size of a declared dim: its value, its bound symbol, or 1. *symbolic says
 * whether it was not a fixed number. Notes each defaulted dim once per run. */
static cg_status resolve_dim(te_build *b, const char *value_name, size_t d, const cg_dim *dim,
                             bool note, int64_t *out, bool *symbolic)
{
    *symbolic = false;
    if (dim->has_value && dim->value >= 0) {
        *out = dim->value;
        return CG_OK;
    }
    *symbolic = true;
    b->env->fixed_dims = false;
    /* --shape NAME=DxD... binds an axis of an input, named or not */
    char key[256];
    if (value_name && cg_samples_shape_key(value_name, d, key, sizeof key))
        for (size_t k = 0; k < b->dim_count; k++)
            if (strcmp(b->dims[k].symbol, key) == 0) {
                b->binding_used[k] = true;
                *symbolic = false;
                *out = b->dims[k].value;
                return CG_OK;
            }
    if (dim->param && *dim->param) {
        for (size_t k = 0; k < b->dim_count; k++)
            if (strcmp(b->dims[k].symbol, dim->param) == 0) {
                /* a bound symbol is fixed, as a deployment fixes it (ORT's
                 * make_dynamic_shape_fixed): it no longer counts as dynamic */
                b->binding_used[k] = true;
                *symbolic = b->probe_bound;
                *out = b->dims[k].value;
                return CG_OK;
            }
        *out = 1;
        if (!note)
            return CG_OK;
        for (size_t i = 0; i < b->env->note_count; i++)
            if (strstr(b->env->notes[i], "symbol '") == b->env->notes[i] &&
                strncmp(b->env->notes[i] + 8, dim->param, strlen(dim->param)) == 0 &&
                b->env->notes[i][8 + strlen(dim->param)] == '\'')
                return CG_OK; /* already noted */
        return env_note(b->env, b->err, "symbol '%s' not bound: used 1", dim->param);
    }
    *out = 1;
    return note ? env_note(b->env, b->err, "'%s' dim %zu has neither a size nor a name: used 1 "
                           "(--shape %s=... gives it)", value_name, d, value_name)
                : CG_OK;
}

/* Records an initializer's type from its proto. */
static cg_status add_initializer(te_build *b, const cg_tensor_proto *tp, bool is_const)
{
    if (!tp->name || !*tp->name)
        return CG_OK;
    te_entry *e;
    cg_status st = env_add(b->env, tp->name, &e, b->err);
    if (st != CG_OK)
        return st;
    e->t.is_const = is_const;
    if (dtype_ok(tp->data_type) && tp->rank <= CG_MAX_RANK) {
        bool ok = true;
        for (size_t d = 0; d < tp->rank; d++) {
            ok = ok && tp->dims[d] >= 0;
            e->t.dims[d] = tp->dims[d];
        }
        e->t.known = ok;
        e->t.dtype = (cg_dtype)tp->data_type;
        e->t.rank = (int)tp->rank;
    }
    return CG_OK;
}

/* Records a declared (value_info) type; symbolic dims count as dynamic. */
static cg_status add_declared(te_build *b, const cg_value_info *vi)
{
    if (!vi->name || !*vi->name || env_lookup(b->env, vi->name))
        return CG_OK;
    te_entry *e;
    cg_status st = env_add(b->env, vi->name, &e, b->err);
    if (st != CG_OK)
        return st;
    const cg_type *ty = vi->type;
    if (!ty || ty->kind != CG_TYPE_TENSOR || !ty->has_elem_type || !dtype_ok(ty->elem_type) ||
        !ty->shape || ty->shape->rank > CG_MAX_RANK)
        return CG_OK;
    for (size_t d = 0; d < ty->shape->rank; d++) {
        bool sym;
        if ((st = resolve_dim(b, vi->name, d, &ty->shape->dims[d], false, &e->t.dims[d], &sym)) !=
            CG_OK)
            return st;
        if (sym)
            e->dynamic |= 1u << d;
    }
    e->t.known = true;
    e->t.dtype = (cg_dtype)ty->elem_type;
    e->t.rank = (int)ty->shape->rank;
    return CG_OK;
}

/* Values of subgraphs (recursively): initializers constant, declared types
 * from inputs, outputs and value_info; everything else stays unseen. */
static cg_status add_subgraphs(te_build *b, const cg_graph *g, int depth)
{
    if (depth > 64)
        return CG_OK; /* the loader already bounds nesting; this only guards recursion */
    for (size_t n = 0; n < g->node_count; n++) {
        const cg_node *node = &g->nodes[n];
        for (size_t a = 0; a < node->attr_count; a++) {
            const cg_attr *at = &node->attrs[a];
            size_t count = at->g ? 1 : at->graphs_count;
            for (size_t k = 0; k < count; k++) {
                const cg_graph *sg = at->g ? at->g : at->graphs[k];
                if (!sg)
                    continue;
                cg_status st = CG_OK;
                for (size_t i = 0; st == CG_OK && i < sg->initializer_count; i++)
                    if (!env_lookup(b->env, sg->initializers[i].name))
                        st = add_initializer(b, &sg->initializers[i], true);
                for (size_t i = 0; st == CG_OK && i < sg->input_count; i++)
                    st = add_declared(b, &sg->inputs[i]);
                for (size_t i = 0; st == CG_OK && i < sg->output_count; i++)
                    st = add_declared(b, &sg->outputs[i]);
                for (size_t i = 0; st == CG_OK && i < sg->value_info_count; i++)
                    st = add_declared(b, &sg->value_infos[i]);
                if (st == CG_OK)
                    st = add_subgraphs(b, sg, depth + 1);
                if (st != CG_OK)
                    return st;
            }
        }
    }
    return CG_OK;
}

/* Ops whose outputs are never constant even from constant inputs. */
static bool never_const(const cg_node *n)
{
    static const char *const ops[] = {"RandomNormal", "RandomUniform", "RandomNormalLike",
                                      "RandomUniformLike", "Multinomial", "Bernoulli"};
    if (!cg_domain_is_default(n->domain))
        return false;
    for (size_t i = 0; i < sizeof ops / sizeof ops[0]; i++)
        if (strcmp(n->op_type, ops[i]) == 0)
            return true;
    for (size_t a = 0; a < n->attr_count; a++)
        if (n->attrs[a].g || n->attrs[a].graphs_count)
            return true;
    return false;
}

static bool is_constant_op(const cg_node *n)
{
    return n->op_type && strcmp(n->op_type, "Constant") == 0 &&
           cg_domain_is_default(n->domain);
}

/* Creates an entry for every main-graph node output, with its constness. */
static cg_status add_node_outputs(te_build *b, const cg_graph *g)
{
    for (size_t n = 0; n < g->node_count; n++) {
        const cg_node *node = &g->nodes[n];
        bool any = false, all_const = true;
        for (size_t i = 0; i < node->input_count; i++) {
            if (!node->inputs[i] || !*node->inputs[i])
                continue;
            any = true;
            te_entry *in = env_lookup(b->env, node->inputs[i]);
            all_const = all_const && in && in->t.is_const;
        }
        bool is_const = is_constant_op(node) || (any && all_const && node->op_type &&
                                                 !never_const(node));
        for (size_t o = 0; o < node->output_count; o++) {
            if (!node->outputs[o] || !*node->outputs[o])
                continue;
            te_entry *e;
            cg_status st = env_add(b->env, node->outputs[o], &e, b->err);
            if (st != CG_OK)
                return st;
            e->t.is_const = is_const;
        }
    }
    return CG_OK;
}

/* Records (first run) or compares (probe run) the type of a produced value. */
static void record_value(te_build *b, te_entry *e, const cg_value *v)
{
    bool tensor = v && (v->kind == CG_VALUE_TENSOR ||
                        (v->kind == CG_VALUE_OPTIONAL && v->has_value &&
                         !v->optional_is_sequence));
    if (!b->probing) {
        if (!tensor || v->tensor.rank > CG_MAX_RANK)
            return;
        e->t.known = true;
        e->t.dtype = v->tensor.dtype;
        e->t.rank = v->tensor.rank;
        for (int d = 0; d < v->tensor.rank; d++)
            e->t.dims[d] = v->tensor.dims[d];
        return;
    }
    if (!e->t.known || !tensor)
        return;
    if (v->tensor.rank != e->t.rank) {
        e->dynamic = e->t.rank >= 32 ? UINT32_MAX : (1u << e->t.rank) - 1;
        return;
    }
    for (int d = 0; d < e->t.rank; d++)
        if (v->tensor.dims[d] != e->t.dims[d])
            e->dynamic |= 1u << d;
}

static cg_status observe(void *user, const cg_node *node, const char *name, const cg_value *v)
{
    te_build *b = user;
    te_entry *e = name && *name ? env_lookup(b->env, name) : NULL;
    if (name && *name && !e && !b->probing) {
        cg_status st = env_add(b->env, name, &e, b->err);
        if (st != CG_OK)
            return st;
    }
    if (e)
        record_value(b, e, v);
    return b->watch && !b->probing ? b->watch->observe(b->watch->user, node, name, v) : CG_OK;
}

/* Makes random inputs for every graph input that is not an initializer.
 * *symbolic counts the dims that were not fixed numbers. */
static cg_status make_inputs(te_build *b, cg_named_value *feeds, size_t *feed_count,
                             size_t *symbolic)
{
    const cg_graph *g = b->model->graph;
    size_t fed = 0;
    *feed_count = 0;
    *symbolic = 0;
    for (size_t i = 0; i < g->input_count; i++) {
        const cg_value_info *vi = &g->inputs[i];
        if (!vi->name || cg_graph_initializer(g, vi->name))
            continue;
        const cg_type *ty = vi->type;
        if (!ty || ty->kind != CG_TYPE_TENSOR || !ty->has_elem_type || !dtype_ok(ty->elem_type))
            return cg_error_set(b->err, CG_UNSUPPORTED, "graph input '%s' is not a tensor of a "
                                "known dtype: the type environment needs tensor inputs", vi->name);
        if (!ty->shape)
            return cg_error_set(b->err, CG_UNSUPPORTED, "graph input '%s' declares no shape: "
                                "the type environment cannot size it", vi->name);
        if (ty->shape->rank > CG_MAX_RANK)
            return cg_error_set(b->err, CG_UNSUPPORTED, "graph input '%s' has rank %zu, above "
                                "%d", vi->name, ty->shape->rank, CG_MAX_RANK);
        int64_t dims[CG_MAX_RANK];
        for (size_t d = 0; d < ty->shape->rank; d++) {
            bool sym;
            cg_status st = resolve_dim(b, vi->name, d, &ty->shape->dims[d], !b->probing, &dims[d],
                                       &sym);
            if (st != CG_OK)
                return st;
            if (sym) {
                (*symbolic)++;
                dims[d] += b->symbol_delta;
            }
        }
        cg_tensor t;
        cg_rng rng;
        memset(&t, 0, sizeof t);
        cg_random_seed(b->random, 0, fed++, &rng);
        cg_status st = cg_tensor_alloc(&t, (cg_dtype)ty->elem_type, (int)ty->shape->rank, dims,
                                          0, b->err);
        if (st == CG_OK)
            st = cg_random_fill(&t, cg_random_range(b->random, vi->name), &rng, b->err);
        if (st == CG_OK)
            st = cg_value_from_tensor(&t, &feeds[*feed_count].value, b->err);
        if (st != CG_OK) {
            cg_tensor_release(&t);
            cg_error_prefix(b->err, "graph input '%s': ", vi->name);
            return st;
        }
        feeds[(*feed_count)++].name = vi->name;
    }
    return CG_OK;
}

/* One reference run with the current probing state. */
static cg_status run_once(te_build *b, size_t *symbolic)
{
    const cg_graph *g = b->model->graph;
    cg_named_value *feeds = calloc(g->input_count + 1, sizeof *feeds);
    cg_named_value *outs = NULL;
    size_t feed_count = 0, out_count = 0;
    cg_runtime *rt = NULL;
    cg_status st;
    if (!feeds)
        return cg_error_set(b->err, CG_NOMEM, "out of memory building the type environment");
    if ((st = make_inputs(b, feeds, &feed_count, symbolic)) != CG_OK)
        goto done;
    if (b->probing && *symbolic == 0)
        goto done;
    /* the recording run feeds the user's tensors when given (their shapes
     * bound the symbols, cg_sample_dims); the probe keeps random ones */
    const cg_named_value *run_feeds = b->fed && !b->probing ? b->fed : feeds;
    size_t run_count = b->fed && !b->probing ? b->fed_count : feed_count;
    cg_runtime_options opt;
    cg_runtime_options_default(&opt);
    opt.observe = observe;
    opt.observe_user = b;
    if ((st = cg_runtime_init(b->model, &opt, &rt, b->err)) != CG_OK)
        goto done;
    atomic_fetch_add(&runs_made, 1);
    if (b->watch && !b->probing && b->watch->start)
        b->watch->start(b->watch->user);
    st = cg_runtime_run(rt, run_feeds, run_count, &outs, &out_count, b->err);
    if (st == CG_OK)
        cg_runtime_free_outputs(outs, out_count);
done:
    cg_runtime_free(rt);
    for (size_t i = 0; i < feed_count; i++)
        cg_value_free(feeds[i].value);
    free(feeds);
    return st;
}

/* Records the graph inputs' types from their declarations, with symbols
 * resolved exactly as the run's inputs are; declared symbolic dims are
 * dynamic. */
static cg_status add_graph_inputs(te_build *b)
{
    const cg_graph *g = b->model->graph;
    for (size_t i = 0; i < g->input_count; i++) {
        const cg_value_info *vi = &g->inputs[i];
        if (!vi->name || !*vi->name)
            continue;
        te_entry *e = env_lookup(b->env, vi->name);
        if (e) {
            /* an initializer the caller may override: an input, not a constant */
            e->t.is_const = false;
            e->t.is_graph_input = true;
            continue;
        }
        cg_status st = add_declared(b, vi);
        if (st != CG_OK)
            return st;
        if ((e = env_lookup(b->env, vi->name)))
            e->t.is_graph_input = true;
    }
    return CG_OK;
}

static cg_status type_env_build(const cg_model *model, const cg_dim_binding *dims,
                                size_t dim_count, const struct cg_random_inputs *random,
                                const cg_named_value *fed, size_t fed_count, bool probe_bound,
                                const cg_type_env_watch *watch, cg_type_env **out,
                                cg_error *err)
{
    *out = NULL;
    if (!model || !model->graph)
        return cg_error_set(err, CG_USAGE, "type environment: the model has no graph");
    for (size_t k = 0; k < dim_count; k++) {
        if (!dims[k].symbol || !*dims[k].symbol || dims[k].value < 0)
            return cg_error_set(err, CG_USAGE, "type environment: binding %zu needs a symbol "
                                "and a size >= 0", k);
        for (size_t j = 0; j < k; j++)
            if (strcmp(dims[j].symbol, dims[k].symbol) == 0)
                return cg_error_set(err, CG_USAGE, "type environment: symbol '%s' is bound "
                                    "twice", dims[k].symbol);
    }
    te_build b = {NULL, model, dims, dim_count, NULL, false, probe_bound, 0, err, random,
                  fed, fed_count, watch};
    cg_status st;
    b.env = calloc(1, sizeof *b.env);
    b.binding_used = calloc(dim_count + 1, sizeof *b.binding_used);
    if (!b.env || !b.binding_used) {
        st = cg_error_set(err, CG_NOMEM, "out of memory building the type environment");
        goto fail;
    }
    b.env->fixed_dims = true; /* until resolve_dim meets a dim that is not a number */
    const cg_graph *g = model->graph;
    for (size_t i = 0; i < g->initializer_count; i++)
        if ((st = add_initializer(&b, &g->initializers[i], true)) != CG_OK)
            goto fail;
    /* graph inputs first so that constness propagation sees them as non-constant */
    if ((st = add_graph_inputs(&b)) != CG_OK || (st = add_node_outputs(&b, g)) != CG_OK)
        goto fail;
    size_t symbolic = 0;
    if ((st = run_once(&b, &symbolic)) != CG_OK) {
        cg_error_prefix(err, fed ? "type environment (a reference run on the given inputs): "
                                 : "type environment (a reference run on seeded random "
                                   "inputs): ");
        goto fail;
    }
    for (size_t k = 0; k < dim_count; k++)
        if (!b.binding_used[k] &&
            (st = env_note(b.env, err, "binding '%s' matches no symbolic dim of the inputs",
                           dims[k].symbol)) != CG_OK)
            goto fail;
    if (symbolic > 0) {
        /* probe: which values change when every symbol grows by one */
        cg_error probe_err;
        cg_error_clear(&probe_err);
        b.probing = true;
        b.symbol_delta = 1;
        b.err = &probe_err;
        size_t sym2 = 0;
        cg_status pst = run_once(&b, &sym2);
        b.err = err;
        if (pst == CG_NOMEM) {
            st = cg_error_set(err, CG_NOMEM, "%s", probe_err.msg);
            goto fail;
        }
        if (pst != CG_OK) {
            /* keep only the declared dynamic dims of inputs and value_info */
            for (size_t i = 0; i < b.env->count; i++)
                if (!b.env->entries[i].t.is_graph_input)
                    b.env->entries[i].dynamic = 0;
            if ((st = env_note(b.env, err, "dynamic-dim probe (symbols + 1) failed, so only "
                               "declared symbolic dims count as dynamic: %s",
                               probe_err.msg)) != CG_OK)
                goto fail;
        }
    }
    for (size_t i = 0; i < g->value_info_count; i++)
        if ((st = add_declared(&b, &g->value_infos[i])) != CG_OK)
            goto fail;
    if ((st = add_subgraphs(&b, g, 0)) != CG_OK)
        goto fail;
    free(b.binding_used);
    *out = b.env;
    return CG_OK;
fail:
    free(b.binding_used);
    cg_type_env_free(b.env);
    return st;
}

cg_status cg_type_env_build_declared(const cg_model *model, cg_type_env **out, cg_error *err)
{
    *out = NULL;
    if (!model || !model->graph)
        return cg_error_set(err, CG_USAGE, "type environment: the model has no graph");
    te_build b = {.model = model, .err = err};
    cg_status st = CG_OK;
    if (!(b.env = calloc(1, sizeof *b.env)))
        return cg_error_set(err, CG_NOMEM, "out of memory building the type environment");
    const cg_graph *g = model->graph;
    for (size_t i = 0; st == CG_OK && i < g->initializer_count; i++)
        st = add_initializer(&b, &g->initializers[i], true);
    if (st == CG_OK)
        st = add_graph_inputs(&b);
    for (size_t i = 0; st == CG_OK && i < g->output_count; i++)
        st = add_declared(&b, &g->outputs[i]);
    for (size_t i = 0; st == CG_OK && i < g->value_info_count; i++)
        st = add_declared(&b, &g->value_infos[i]);
    /* every node output gets an entry (unknown when undeclared), never constant */
    for (size_t n = 0; st == CG_OK && n < g->node_count; n++)
        for (size_t o = 0; st == CG_OK && o < g->nodes[n].output_count; o++) {
            te_entry *e;
            if (g->nodes[n].outputs[o] && *g->nodes[n].outputs[o])
                st = env_add(b.env, g->nodes[n].outputs[o], &e, err);
        }
    if (st == CG_OK)
        st = add_subgraphs(&b, g, 0);
    if (st != CG_OK) {
        cg_type_env_free(b.env);
        return st;
    }
    *out = b.env;
    return CG_OK;
}

cg_status cg_type_env_build_with(const cg_model *model, const cg_dim_binding *dims,
                                 size_t dim_count, const struct cg_random_inputs *random,
                                 cg_type_env **out, cg_error *err)
{
    return type_env_build(model, dims, dim_count, random, NULL, 0, false, NULL, out, err);
}

cg_status cg_type_env_build_fed(const cg_model *model, const cg_dim_binding *dims,
                                size_t dim_count, const struct cg_random_inputs *random,
                                const cg_named_value *feeds, size_t feed_count,
                                cg_type_env **out, cg_error *err)
{
    return type_env_build(model, dims, dim_count, random, feeds, feed_count, false, NULL, out, err);
}

cg_status cg_type_env_build_watched(const cg_model *model, const cg_dim_binding *dims,
                                    size_t dim_count, const struct cg_random_inputs *random,
                                    const cg_named_value *feeds, size_t feed_count,
                                    const cg_type_env_watch *w, cg_type_env **out,
                                    cg_error *err)
{
    return type_env_build(model, dims, dim_count, random, feeds, feed_count, false, w, out, err);
}

cg_status cg_type_env_build(const cg_model *model, const cg_dim_binding *dims, size_t dim_count,
                            cg_type_env **out, cg_error *err)
{
    return type_env_build(model, dims, dim_count, NULL, NULL, 0, false, NULL, out, err);
}

cg_status cg_type_env_build_symbolic(const cg_model *model, const cg_dim_binding *dims,
                                     size_t dim_count, const cg_named_value *feeds,
                                     size_t feed_count, cg_type_env **out, cg_error *err)
{
    return type_env_build(model, dims, dim_count, NULL, feeds, feed_count, true, NULL, out, err);
}
