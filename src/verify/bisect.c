/*
 * Bisection of a candidate run against a reference run (convgate/bisect.h).
 *
 * The watch list holds every value both sides will report, in the
 * reference graph's node order (so list order is topological order). Each
 * entry is also a mailbox slot: the first side to report the value leaves
 * a copy there, the second compares its own value with the copy, records
 * the metrics and frees the copy. A side that has left a copy waits for it
 * to be taken unless the other side is already waiting or done, which
 * keeps one side from running far ahead (memory) and can never deadlock
 * (at most one side waits at a time). Once both runs end, the first entry
 * that failed the comparison is the first divergent tensor.
 *
 * All threading (pthreads) lives in the "lockstep" section of this file.
 */
#include "convgate/bisect.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "convgate/partition.h"
#include "convgate/tensor.h"
#include "core/strmap.h"
#include "ir/walk.h"

#define SIDE_REF 0
#define SIDE_CAND 1

/* --- name maps: value name -> index ------------------------------------------ */

typedef cg_strmap name_map;

static bool map_get(const name_map *m, const char *name, size_t *val)
{
    *val = cg_strmap_get(m, name);
    return *val != CG_STRMAP_NONE;
}

static size_t node_output_count(const cg_graph *g)
{
    size_t n = 0;
    for (size_t v = 0; v < g->node_count; v++)
        n += g->nodes[v].output_count;
    return n;
}

/* Every value a graph's nodes produce -> the producing node's index. */
static bool map_node_outputs(name_map *m, const cg_graph *g)
{
    if (!cg_strmap_reserve(m, node_output_count(g)))
        return false;
    for (size_t v = 0; v < g->node_count; v++)
        for (size_t o = 0; o < g->nodes[v].output_count; o++)
            if (g->nodes[v].outputs[o] && g->nodes[v].outputs[o][0])
                cg_strmap_add(m, g->nodes[v].outputs[o], v);
    return true;
}

/* Values a target path reports: outputs of CPU nodes and of partitions. */
static bool map_visible(name_map *m, const cg_assignment *a)
{
    const cg_graph *g = a->graph;
    if (!cg_strmap_reserve(m, node_output_count(g)))
        return false;
    for (size_t v = 0; v < g->node_count; v++)
        if (a->owner[v] == CG_OWNER_CPU)
            for (size_t o = 0; o < g->nodes[v].output_count; o++)
                if (g->nodes[v].outputs[o][0])
                    cg_strmap_add(m, g->nodes[v].outputs[o], v);
    for (size_t p = 0; p < a->partition_count; p++)
        for (size_t o = 0; o < a->partitions[p].output_count; o++)
            cg_strmap_add(m, a->partitions[p].outputs[o], 0);
    return true;
}

/* --- the watch list ------------------------------------------------------------- */

typedef struct watch_entry {
    const char *name;
    size_t node;          /* reference node index */
    cg_tensor *slot;      /* copy left by the first side, or NULL */
    int slot_side;
    bool seen[2];
    bool compared, skipped;
    cg_metrics metrics;
    cg_bisect_type type;  /* the reference value's type (name borrowed) */
} watch_entry;

typedef struct side_state side_state;

typedef struct bisect_ctx {
    const cg_bisect_options *opt;
    const cg_graph *ref_graph;
    watch_entry *entries;
    size_t entry_count;
    name_map watch;       /* name -> entry index */
    name_map ref_values;  /* every value the reference nodes produce -> node */
    cg_bisect_type *ref_types; /* per ref_values index slot: the reference types */
    size_t ref_type_count;
    name_map ref_type_index;   /* name -> ref_types index */
    pthread_mutex_t lock;
    pthread_cond_t cond;
    bool abort;
    const char *stage;    /* progress stage name of this pass */
    /* keep_values: both sides' values of the lowest-index failing entry so
     * far ([SIDE_REF], [SIDE_CAND]) */
    size_t kept_index;
    cg_value *kept[2];
    cg_error fail;        /* first failure of the comparison machinery */
    struct side_state *sides[2];
} bisect_ctx;

struct side_state {
    bisect_ctx *ctx;
    int which;
    const cg_bisect_side *side;
    bool force_fp32;
    cg_runtime *rt;
    cg_target_path *path;
    cg_target_path_options path_opt;
    bool waiting, finished;
    bool stopped;         /* this side's observer stopped the run on purpose */
    cg_status status;
    cg_error err;
};

/* Copies a numeric tensor value (NULL on allocation failure). */
static cg_tensor *tensor_copy(const cg_tensor *t)
{
    cg_tensor *c = malloc(sizeof *c);
    size_t bytes = cg_tensor_bytes(t);
    if (!c)
        return NULL;
    *c = *t;
    c->data = malloc(bytes ? bytes : 1);
    if (!c->data) {
        free(c);
        return NULL;
    }
    if (bytes)
        memcpy(c->data, t->data, bytes);
    return c;
}

static void tensor_drop(cg_tensor *t)
{
    if (t)
        free(t->data);
    free(t);
}

static void type_from_tensor(cg_bisect_type *ty, const cg_tensor *t)
{
    ty->known = true;
    ty->dtype = t->dtype;
    ty->rank = t->rank < CG_MAX_RANK ? t->rank : CG_MAX_RANK;
    memcpy(ty->dims, t->dims, (size_t)ty->rank * sizeof ty->dims[0]);
}

static bool comparable(const cg_value *v)
{
    return v && v->kind == CG_VALUE_TENSOR && v->tensor.dtype != CG_DTYPE_STRING &&
           (v->tensor.data || v->tensor.numel == 0);
}

/* --- lockstep (threads) ------------------------------------------------------------ */

/* Records a failure of the bisect machinery and stops both runs. Lock held. */
static void ctx_abort(bisect_ctx *c)
{
    c->abort = true;
    pthread_cond_broadcast(&c->cond);
}

/* Both sides' values of a failing comparison, for keep_values: mine (of
 * side `which`) copied, theirs (the other side's copy) taken. kept[SIDE_REF]
 * and kept[SIDE_CAND] are set, or both NULL on failure. */
static cg_status keep_pair(const cg_value *mine, cg_tensor *theirs, int which, cg_value *kept[2],
                           cg_error *err)
{
    cg_value *a = NULL, *b = NULL;
    cg_status st = cg_value_copy(mine, &a, err);
    if (st == CG_OK)
        st = cg_value_from_tensor(theirs, &b, err);
    tensor_drop(theirs); /* its payload was taken, or is dropped with it */
    if (st != CG_OK) {
        cg_value_free(a);
        cg_value_free(b);
        return st;
    }
    kept[which] = a;
    kept[1 - which] = b;
    return CG_OK;
}

static cg_status side_observe(void *user, const cg_node *node, const char *name,
                              const cg_value *value)
{
    side_state *s = user;
    bisect_ctx *c = s->ctx;
    side_state *other = c->sides[1 - s->which];
    size_t idx, ti;
    cg_status st = CG_OK;

    /* the reference's types of every value, for the divergent node's inputs */
    if (s->which == SIDE_REF && value && value->kind == CG_VALUE_TENSOR &&
        map_get(&c->ref_type_index, name, &ti))
        type_from_tensor(&c->ref_types[ti], &value->tensor);
    if (s->which == SIDE_REF && node >= c->ref_graph->nodes &&
        node < c->ref_graph->nodes + c->ref_graph->node_count)
        cg_progress_report(&c->opt->progress, c->stage, "nodes",
                           (size_t)(node - c->ref_graph->nodes) + 1, c->ref_graph->node_count,
                           node->name);

    if (!map_get(&c->watch, name, &idx))
        return CG_OK;
    watch_entry *e = &c->entries[idx];
    pthread_mutex_lock(&c->lock);
    if (c->abort) {
        s->stopped = true;
        pthread_mutex_unlock(&c->lock);
        return CG_RUNTIME;
    }
    if (e->seen[s->which]) { /* reported twice: compare the first only */
        pthread_mutex_unlock(&c->lock);
        return CG_OK;
    }
    e->seen[s->which] = true;
    if (s->which == SIDE_REF && comparable(value))
        type_from_tensor(&e->type, &value->tensor);
    if (!comparable(value) || e->skipped) {
        /* sequences, optionals, strings: not compared; free a waiting copy */
        e->skipped = true;
        tensor_drop(e->slot);
        e->slot = NULL;
        pthread_cond_broadcast(&c->cond);
        pthread_mutex_unlock(&c->lock);
        return CG_OK;
    }
    if (e->slot) {
        /* the other side was first: compare outside the lock */
        cg_tensor *theirs = e->slot;
        bool want = c->opt->keep_values && idx < c->kept_index;
        cg_value *kept[2] = {NULL, NULL};
        e->slot = NULL;
        pthread_cond_broadcast(&c->cond);
        pthread_mutex_unlock(&c->lock);
        const cg_tensor *ref = s->which == SIDE_REF ? &value->tensor : theirs;
        const cg_tensor *got = s->which == SIDE_REF ? theirs : &value->tensor;
        cg_metrics m;
        cg_error cerr;
        cg_error_clear(&cerr);
        cg_metrics_init(&m);
        st = cg_compare_tensors(ref, got, &c->opt->tol, &m, &cerr);
        if (st == CG_OK && want && !m.pass)
            st = keep_pair(value, theirs, s->which, kept, &cerr);
        else
            tensor_drop(theirs);
        pthread_mutex_lock(&c->lock);
        if (st != CG_OK) {
            cg_error_set(&c->fail, st, "comparing '%s': %s", name, cerr.msg);
            ctx_abort(c);
            s->stopped = true;
        } else {
            e->metrics = m;
            e->compared = true;
            if (kept[0] && idx < c->kept_index) {
                for (int w = 0; w < 2; w++) {
                    cg_value *old = c->kept[w];
                    c->kept[w] = kept[w];
                    kept[w] = old;
                }
                c->kept_index = idx;
            }
        }
        pthread_mutex_unlock(&c->lock);
        cg_value_free(kept[0]);
        cg_value_free(kept[1]);
        return st;
    }
    e->slot = tensor_copy(&value->tensor);
    e->slot_side = s->which;
    if (!e->slot) {
        cg_error_set(&c->fail, CG_NOMEM, "out of memory copying '%s' for comparison", name);
        ctx_abort(c);
        s->stopped = true;
        pthread_mutex_unlock(&c->lock);
        return CG_NOMEM;
    }
    /* wait for the other side to take it, unless that side is itself waiting
     * (it is behind on something we have not produced yet) or done */
    while (e->slot && !c->abort && !other->waiting && !other->finished) {
        s->waiting = true;
        pthread_cond_wait(&c->cond, &c->lock);
        s->waiting = false;
    }
    pthread_cond_broadcast(&c->cond);
    if (c->abort) {
        s->stopped = true;
        st = CG_RUNTIME;
    }
    pthread_mutex_unlock(&c->lock);
    return st;
}

static cg_status side_run_once(side_state *s, const cg_named_value *inputs, size_t n)
{
    cg_named_value *outs = NULL;
    size_t out_count = 0;
    cg_status st;
    if (s->rt)
        st = cg_runtime_run(s->rt, inputs, n, &outs, &out_count, &s->err);
    else
        st = cg_target_path_run(s->path, inputs, n, &outs, &out_count, &s->err);
    if (st == CG_OK)
        cg_runtime_free_outputs(outs, out_count);
    return st;
}

typedef struct side_job {
    side_state *side;
    const cg_named_value *inputs;
    size_t input_count;
} side_job;

/* Runs one side; marks it finished and stops the other side on failure. */
static void *side_thread(void *arg)
{
    side_job *job = arg;
    side_state *s = job->side;
    bisect_ctx *c = s->ctx;
    s->status = side_run_once(s, job->inputs, job->input_count);
    pthread_mutex_lock(&c->lock);
    s->finished = true;
    if (s->status != CG_OK && !s->stopped)
        c->abort = true;
    pthread_cond_broadcast(&c->cond);
    pthread_mutex_unlock(&c->lock);
    return NULL;
}

/* Runs both sides at once: the candidate on a new thread, the reference on
 * this one. */
static cg_status lockstep_run(bisect_ctx *c, const cg_named_value *inputs, size_t n,
                              cg_error *err)
{
    pthread_t thread;
    side_job jobs[2] = {{c->sides[SIDE_REF], inputs, n}, {c->sides[SIDE_CAND], inputs, n}};
    if (pthread_create(&thread, NULL, side_thread, &jobs[SIDE_CAND]) != 0)
        return cg_error_set(err, CG_RUNTIME, "bisect: could not start the candidate thread");
    side_thread(&jobs[SIDE_REF]);
    pthread_join(thread, NULL);
    return CG_OK;
}

/* --- setup ---------------------------------------------------------------------- */

static cg_status side_init(side_state *s, bisect_ctx *c, int which, const cg_bisect_side *side,
                           bool force_fp32, cg_error *err)
{
    memset(s, 0, sizeof *s);
    s->ctx = c;
    s->which = which;
    s->side = side;
    s->force_fp32 = force_fp32;
    cg_error_clear(&s->err);
    const char *what = which == SIDE_REF ? "reference" : "candidate";
    cg_status st;
    if (!side->path) {
        cg_runtime_options ro;
        cg_runtime_options_default(&ro);
        ro.max_alloc_bytes = c->opt->max_alloc_bytes;
        ro.observe = side_observe;
        ro.observe_user = s;
        st = cg_runtime_init(side->model, &ro, &s->rt, err);
    } else {
        s->path_opt = *side->path;
        s->path_opt.observe = side_observe;
        s->path_opt.observe_user = s;
        s->path_opt.force_fp32 = force_fp32;
        st = cg_target_path_init(side->model, &s->path_opt, &s->path, err);
    }
    if (st != CG_OK)
        cg_error_prefix(err, "bisect: %s side: ", what);
    return st;
}

static void side_free(side_state *s)
{
    cg_runtime_free(s->rt);
    cg_target_path_free(s->path);
    s->rt = NULL;
    s->path = NULL;
}

/* The watch list: values the reference nodes produce that the candidate's
 * nodes produce too, each visible on every path side; `only` (if not NULL)
 * restricts it to that one value. */
static cg_status build_watch(bisect_ctx *c, const char *only, cg_error *err)
{
    const cg_graph *rg = c->opt->reference.model->graph;
    const cg_graph *cgph = c->opt->candidate.model->graph;
    name_map cand = {0}, vis[2] = {{0}, {0}};
    cg_status st = CG_NOMEM;
    size_t n = 0, dummy;
    c->ref_graph = rg;
    if (!map_node_outputs(&cand, cgph) || !map_node_outputs(&c->ref_values, rg))
        goto fail;
    for (int w = 0; w < 2; w++)
        if (c->sides[w]->path &&
            !map_visible(&vis[w], cg_target_path_assignment(c->sides[w]->path)))
            goto fail;
    for (size_t v = 0; v < rg->node_count; v++)
        n += rg->nodes[v].output_count;
    c->entries = calloc(n ? n : 1, sizeof *c->entries);
    c->ref_types = calloc(n ? n : 1, sizeof *c->ref_types);
    if (!c->entries || !c->ref_types || !cg_strmap_reserve(&c->watch, n) ||
        !cg_strmap_reserve(&c->ref_type_index, n))
        goto fail;
    for (size_t v = 0; v < rg->node_count; v++) {
        const cg_node *nd = &rg->nodes[v];
        for (size_t o = 0; o < nd->output_count; o++) {
            const char *name = nd->outputs[o];
            size_t owner;
            if (!name || !name[0] || map_get(&c->ref_type_index, name, &dummy))
                continue;
            c->ref_types[c->ref_type_count].name = (char *)name;
            cg_strmap_add(&c->ref_type_index, name, c->ref_type_count++);
            if (!map_get(&c->ref_values, name, &owner) || owner != v)
                continue;
            if (only && strcmp(only, name) != 0)
                continue;
            if (!map_get(&cand, name, &dummy))
                continue;
            if ((vis[0].cap && !map_get(&vis[0], name, &dummy)) ||
                (vis[1].cap && !map_get(&vis[1], name, &dummy)))
                continue;
            watch_entry *e = &c->entries[c->entry_count];
            e->name = name;
            e->node = v;
            e->type.name = (char *)name;
            cg_strmap_add(&c->watch, name, c->entry_count++);
        }
    }
    st = CG_OK;
fail:
    cg_strmap_free(&cand);
    cg_strmap_free(&vis[0]);
    cg_strmap_free(&vis[1]);
    if (st != CG_OK)
        cg_error_set(err, st, "bisect: out of memory building the watch list");
    return st;
}

static void ctx_free(bisect_ctx *c)
{
    for (size_t i = 0; i < c->entry_count; i++)
        tensor_drop(c->entries[i].slot);
    cg_value_free(c->kept[0]);
    cg_value_free(c->kept[1]);
    c->kept[0] = c->kept[1] = NULL;
    free(c->entries);
    free(c->ref_types);
    cg_strmap_free(&c->watch);
    cg_strmap_free(&c->ref_values);
    cg_strmap_free(&c->ref_type_index);
}

/* One lockstep pass: init both sides, watch, run, collect errors. */
static cg_status bisect_pass(bisect_ctx *c, side_state sides[2], bool cand_fp32, const char *only,
                             const cg_named_value *inputs, size_t n, cg_error *err)
{
    cg_status st;
    c->sides[0] = &sides[0];
    c->sides[1] = &sides[1];
    cg_error_clear(&c->fail);
    c->abort = false;
    c->kept_index = SIZE_MAX;
    if (!c->stage)
        c->stage = "bisect";
    if ((st = side_init(&sides[SIDE_REF], c, SIDE_REF, &c->opt->reference, false, err)) != CG_OK ||
        (st = side_init(&sides[SIDE_CAND], c, SIDE_CAND, &c->opt->candidate, cand_fp32, err)) !=
            CG_OK)
        return st;
    if ((st = build_watch(c, only, err)) != CG_OK)
        return st;
    if (pthread_mutex_init(&c->lock, NULL) != 0)
        return cg_error_set(err, CG_RUNTIME, "bisect: could not create a mutex");
    if (pthread_cond_init(&c->cond, NULL) != 0) {
        pthread_mutex_destroy(&c->lock);
        return cg_error_set(err, CG_RUNTIME, "bisect: could not create a condition variable");
    }
    st = lockstep_run(c, inputs, n, err);
    pthread_cond_destroy(&c->cond);
    pthread_mutex_destroy(&c->lock);
    if (st != CG_OK)
        return st;
    if (c->fail.status != CG_OK)
        return cg_error_set(err, c->fail.status, "bisect: %s", c->fail.msg);
    for (int w = 0; w < 2; w++) {
        side_state *s = &sides[w];
        if (s->status != CG_OK && !s->stopped)
            return cg_error_set(err, s->status, "bisect: %s run failed: %s",
                                w == SIDE_REF ? "reference" : "candidate", s->err.msg);
    }
    return CG_OK;
}

/* --- results -------------------------------------------------------------------- */

static char *dup_str(const char *s)
{
    size_t n = strlen(s ? s : "");
    char *d = malloc(n + 1);
    if (d)
        memcpy(d, s ? s : "", n + 1);
    return d;
}

static bool fill_tensor(bisect_ctx *c, const watch_entry *e, side_state *cand,
                        cg_bisect_tensor *t)
{
    char buf[32];
    const cg_node *nd = &c->ref_graph->nodes[e->node];
    t->tensor = dup_str(e->name);
    t->node = dup_str(cg_graph_node_name(c->ref_graph, e->node, buf, sizeof buf));
    t->op_type = dup_str(nd->op_type);
    t->node_index = e->node;
    t->type = e->type;
    t->type.name = dup_str(e->name);
    t->metrics = e->metrics;
    if (cand->path) {
        const cg_assignment *a = cg_target_path_assignment(cand->path);
        size_t v;
        name_map m = {0};
        const char *placed = "CPU";
        if (!map_node_outputs(&m, a->graph))
            return false;
        if (map_get(&m, e->name, &v) && a->owner[v] != CG_OWNER_CPU)
            placed = a->targets[a->owner[v]]->name;
        cg_strmap_free(&m);
        t->placed_on = dup_str(placed);
        if (!t->placed_on)
            return false;
    }
    return t->tensor && t->node && t->op_type && t->type.name;
}

/* Types of the divergent node's inputs: fed inputs, initializers, or values
 * the reference run produced. */
static bool fill_inputs(bisect_ctx *c, size_t node, const cg_named_value *inputs, size_t n,
                        cg_bisect_result *r)
{
    const cg_node *nd = &c->ref_graph->nodes[node];
    const cg_graph *g = c->ref_graph;
    r->inputs = calloc(nd->input_count ? nd->input_count : 1, sizeof *r->inputs);
    if (!r->inputs)
        return false;
    for (size_t i = 0; i < nd->input_count; i++) {
        const char *name = nd->inputs[i];
        cg_bisect_type *ty = &r->inputs[r->input_count++];
        size_t ti;
        if (!(ty->name = dup_str(name)))
            return false;
        if (!name || !name[0])
            continue;
        if (map_get(&c->ref_type_index, name, &ti) && c->ref_types[ti].known) {
            char *own = ty->name;
            *ty = c->ref_types[ti];
            ty->name = own;
            continue;
        }
        for (size_t k = 0; k < n; k++)
            if (inputs[k].name && strcmp(inputs[k].name, name) == 0 && inputs[k].value &&
                inputs[k].value->kind == CG_VALUE_TENSOR)
                type_from_tensor(ty, &inputs[k].value->tensor);
        for (size_t k = 0; !ty->known && k < g->initializer_count; k++) {
            const cg_tensor_proto *tp = &g->initializers[k];
            if (!tp->name || strcmp(tp->name, name) != 0 || tp->rank > CG_MAX_RANK)
                continue;
            ty->known = true;
            ty->dtype = (cg_dtype)tp->data_type;
            ty->rank = (int)tp->rank;
            memcpy(ty->dims, tp->dims, tp->rank * sizeof tp->dims[0]);
        }
    }
    return true;
}

const char *cg_bisect_triage_name(cg_bisect_triage t)
{
    switch (t) {
    case CG_TRIAGE_PRECISION: return "precision loss (fp16)";
    case CG_TRIAGE_WRONG: return "wrong kernel or rewrite";
    case CG_TRIAGE_NONE: break;
    }
    return "none";
}

static void tensor_free(cg_bisect_tensor *t)
{
    free(t->tensor);
    free(t->node);
    free(t->op_type);
    free(t->placed_on);
    free(t->type.name);
    memset(t, 0, sizeof *t);
}

/* Every watch entry of the final pass as a result point. */
static bool fill_points(const bisect_ctx *c, cg_bisect_result *r)
{
    r->points = calloc(c->entry_count ? c->entry_count : 1, sizeof *r->points);
    if (!r->points)
        return false;
    for (size_t i = 0; i < c->entry_count; i++) {
        const watch_entry *e = &c->entries[i];
        cg_bisect_point *p = &r->points[r->point_count];
        if (!(p->tensor = dup_str(e->name)))
            return false;
        r->point_count++;
        p->node_index = e->node;
        p->compared = e->compared;
        if (e->compared)
            p->metrics = e->metrics;
        else
            cg_metrics_init(&p->metrics);
    }
    return true;
}

void cg_bisect_result_free(cg_bisect_result *r)
{
    if (!r)
        return;
    tensor_free(&r->first_divergent);
    tensor_free(&r->last_matching);
    for (size_t i = 0; i < r->input_count; i++)
        free(r->inputs[i].name);
    free(r->inputs);
    for (size_t i = 0; i < r->point_count; i++)
        free(r->points[i].tensor);
    free(r->points);
    cg_value_free(r->first_reference);
    cg_value_free(r->first_target);
    memset(r, 0, sizeof *r);
}

/* The fp32 rerun of the candidate path, comparing only `name`. */
static cg_status triage_rerun(const cg_bisect_options *opt, const char *name,
                              const cg_named_value *inputs, size_t n, cg_bisect_result *r,
                              cg_error *err)
{
    bisect_ctx c;
    side_state sides[2];
    cg_bisect_options topt = *opt;
    topt.keep_values = false; /* the values kept are the first pass's */
    memset(&c, 0, sizeof c);
    memset(sides, 0, sizeof sides);
    c.opt = &topt;
    c.stage = "bisect: fp32 rerun";
    cg_status st = bisect_pass(&c, sides, true, name, inputs, n, err);
    if (st == CG_OK) {
        if (c.entry_count == 1 && c.entries[0].compared) {
            r->triage_ran = true;
            r->triage_metrics = c.entries[0].metrics;
            r->triage = c.entries[0].metrics.pass ? CG_TRIAGE_PRECISION : CG_TRIAGE_WRONG;
            snprintf(r->triage_note, sizeof r->triage_note,
                     "rerun with the target path in fp32: '%s' %s (max_abs %.3g)", name,
                     c.entries[0].metrics.pass ? "matches" : "still diverges",
                     c.entries[0].metrics.max_abs);
        } else {
            snprintf(r->triage_note, sizeof r->triage_note,
                     "the fp32 rerun did not report '%s'; no triage", name);
        }
    }
    side_free(&sides[0]);
    side_free(&sides[1]);
    ctx_free(&c);
    return st;
}

/* A shallow copy of a model whose graph also outputs every value a set of
 * nodes produces, so that a partition's inner values leave it and the
 * target path reports them. Shares everything else with the original. */
typedef struct exposed_model {
    cg_model model;
    cg_graph graph;
    cg_value_info *outputs;
    size_t extra;          /* values added */
    bool used;
} exposed_model;

static void exposed_free(exposed_model *e)
{
    free(e->outputs);
    memset(e, 0, sizeof *e);
}

static bool is_graph_output(const cg_graph *g, const char *name)
{
    for (size_t i = 0; i < g->output_count; i++)
        if (g->outputs[i].name && strcmp(g->outputs[i].name, name) == 0)
            return true;
    return false;
}

static bool exposed_init(exposed_model *e, const cg_model *m, const cg_partition *p)
{
    const cg_graph *g = m->graph;
    size_t n = g->output_count;
    for (size_t i = 0; i < p->node_count; i++)
        n += g->nodes[p->nodes[i]].output_count;
    e->outputs = calloc(n ? n : 1, sizeof *e->outputs);
    if (!e->outputs)
        return false;
    memcpy(e->outputs, g->outputs, g->output_count * sizeof *g->outputs);
    n = g->output_count;
    for (size_t i = 0; i < p->node_count; i++) {
        const cg_node *nd = &g->nodes[p->nodes[i]];
        for (size_t o = 0; o < nd->output_count; o++) {
            const char *name = nd->outputs[o];
            bool seen = false;
            if (!name || !name[0])
                continue;
            for (size_t k = 0; k < n && !seen; k++)
                seen = strcmp(e->outputs[k].name, name) == 0;
            if (seen || is_graph_output(g, name))
                continue;
            e->outputs[n++].name = name; /* type NULL: not declared */
            e->extra++;
        }
    }
    e->graph = *g;
    e->graph.outputs = e->outputs;
    e->graph.output_count = n;
    e->model = *m;
    e->model.graph = &e->graph;
    e->used = true;
    return true;
}

/* When the first divergent tensor leaves a multi-node partition, the
 * divergence may have started inside it. Run again with every value of
 * that partition made a graph output (the partition keeps its nodes; its
 * inner values now also leave it and are reported), so the watch list
 * reaches inside. *c then describes the refined pass. */
static cg_status refine_in_partition(bisect_ctx *c, side_state sides[2], exposed_model *e,
                                     cg_bisect_options *ropt, const cg_named_value *inputs,
                                     size_t n, cg_bisect_result *r, cg_error *err)
{
    const cg_assignment *a = cg_target_path_assignment(sides[SIDE_CAND].path);
    size_t first = SIZE_MAX;
    for (size_t i = 0; i < c->entry_count && first == SIZE_MAX; i++)
        if (c->entries[i].compared && !c->entries[i].metrics.pass)
            first = i;
    if (first == SIZE_MAX || !a || a->graph != c->ref_graph)
        return CG_OK;
    int pid = a->partition_of[c->entries[first].node];
    const cg_partition *p = NULL;
    for (size_t i = 0; i < a->partition_count; i++)
        if (a->partitions[i].id == pid)
            p = &a->partitions[i];
    if (!p || p->node_count < 2)
        return CG_OK;
    if (!exposed_init(e, c->opt->reference.model, p))
        return cg_error_set(err, CG_NOMEM, "bisect: out of memory exposing a partition");
    if (!e->extra)
        return CG_OK;
    *ropt = *c->opt;
    ropt->reference.model = &e->model;
    ropt->candidate.model = &e->model;
    side_free(&sides[0]);
    side_free(&sides[1]);
    ctx_free(c);
    memset(c, 0, sizeof *c);
    c->opt = ropt;
    c->stage = "bisect: inside the partition";
    r->refined = true;
    r->refined_values = e->extra;
    return bisect_pass(c, sides, false, NULL, inputs, n, err);
}

cg_status cg_bisect_run(const cg_bisect_options *opt, const cg_named_value *inputs,
                        size_t input_count, cg_bisect_result *out, cg_error *err)
{
    bisect_ctx c;
    side_state sides[2];
    cg_status st;
    size_t first = SIZE_MAX, last = SIZE_MAX;
    bool reduced = false;
    exposed_model exposed;
    cg_bisect_options ref_opt;
    memset(&exposed, 0, sizeof exposed);
    memset(&c, 0, sizeof c);
    memset(sides, 0, sizeof sides);
    if (!out)
        return cg_error_set(err, CG_USAGE, "cg_bisect_run: NULL result");
    memset(out, 0, sizeof *out);
    if (!opt || !opt->reference.model || !opt->candidate.model ||
        !opt->reference.model->graph || !opt->candidate.model->graph ||
        (input_count && !inputs))
        return cg_error_set(err, CG_USAGE, "cg_bisect_run: missing model or inputs");
    c.opt = opt;
    if ((st = bisect_pass(&c, sides, false, NULL, inputs, input_count, err)) != CG_OK)
        goto done;
    if (opt->candidate.path && opt->candidate.model == opt->reference.model &&
        (st = refine_in_partition(&c, sides, &exposed, &ref_opt, inputs, input_count, out,
                                  err)) != CG_OK)
        goto done;
    out->watched = c.entry_count;
    for (size_t i = 0; i < c.entry_count; i++) {
        const watch_entry *e = &c.entries[i];
        if (!e->compared)
            continue;
        out->compared++;
        if (!e->metrics.pass) {
            out->divergent++;
            if (first == SIZE_MAX)
                first = i;
        } else if (first == SIZE_MAX) {
            last = i;
        }
    }
    st = CG_NOMEM;
    if (last != SIZE_MAX) {
        out->has_last_matching = true;
        if (!fill_tensor(&c, &c.entries[last], &sides[SIDE_CAND], &out->last_matching))
            goto nomem;
    }
    if (first != SIZE_MAX) {
        out->diverged = true;
        if (!fill_tensor(&c, &c.entries[first], &sides[SIDE_CAND], &out->first_divergent) ||
            !fill_inputs(&c, c.entries[first].node, inputs, input_count, out))
            goto nomem;
        if (c.kept_index == first) {
            out->first_reference = c.kept[SIDE_REF];
            out->first_target = c.kept[SIDE_CAND];
            c.kept[SIDE_REF] = c.kept[SIDE_CAND] = NULL;
        }
    }
    if (!fill_points(&c, out))
        goto nomem;
    st = CG_OK;
    reduced = sides[SIDE_CAND].path && cg_target_path_reduced_precision(sides[SIDE_CAND].path);
    side_free(&sides[0]);
    side_free(&sides[1]);
    if (out->diverged && opt->triage) {
        if (reduced) {
            st = triage_rerun(c.opt, out->first_divergent.tensor, inputs, input_count, out, err);
        } else {
            out->triage = CG_TRIAGE_WRONG;
            snprintf(out->triage_note, sizeof out->triage_note, "%s",
                     opt->candidate.path
                         ? "the target path already computes in fp32: no precision to lose"
                         : "the candidate runs on the reference kernels in fp32: the graphs "
                           "compute different things");
        }
    }
    goto done;
nomem:
    cg_error_set(err, CG_NOMEM, "bisect: out of memory writing the result");
done:
    side_free(&sides[0]);
    side_free(&sides[1]);
    ctx_free(&c);
    exposed_free(&exposed);
    return st;
}
