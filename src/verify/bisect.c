/*
 * Bisection of a candidate run against a reference run (convgate/bisect.h).
 *
 * The watch list holds every value the sides will report, in the reference
 * graph's node order (so list order is topological order): the values the
 * candidate reports too (compared), and the values decision nodes read
 * that it does not (their floors measure the decision margins). Each entry
 * is also a mailbox: a side reporting a value leaves a copy there; the last
 * of the sides the entry needs compares the copies with its own value,
 * records the statistics and frees them. A side that has left a copy waits
 * for the entry to be complete while another side still runs and no side
 * the entry needs has finished without it: the sides move in step
 * (memory), and one always runs, so nothing deadlocks.
 *
 * Sides: the reference (the float64 reference runtime, or with
 * by_tolerance the fp32 one), the candidate, and for the floors the fp32
 * reference and the fp16-storage run (float64 kernels, every stored value
 * rounded to fp16) when the candidate computes anything in fp16. Once the
 * runs end, the entries are judged in order: the first beyond the floor of
 * its own precision is the first divergent tensor.
 *
 * All threading (pthreads) lives in the "lockstep" section of this file.
 */
#include "convgate/bisect.h"

#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "convgate/partition.h"
#include "convgate/samples.h"
#include "convgate/tensor.h"
#include "core/strmap.h"
#include "ir/walk.h"
#include "verify_internal.h"

#define SIDE_REF 0   /* float64 reference (by_tolerance: fp32) */
#define SIDE_CAND 1
#define SIDE_F32 2   /* fp32 reference: the fp32 floor */
#define SIDE_F16 3   /* fp16 storage: the fp16 floor */
#define SIDE_MAX 4

/* statistics of an entry (noise) */
#define ST_ERR 0     /* candidate against fp64 */
#define ST_F32 1
#define ST_F16 2

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
    bool compare;         /* the candidate reports it */
    bool keep;            /* a decision reads or makes it: keep the fp64 value */
    cg_tensor *slot[SIDE_MAX];
    bool seen[SIDE_MAX];
    int reported;
    bool skipped, compared;
    bool complete;          /* every side needed has reported (its copies taken) */
    cg_metrics metrics;   /* candidate against the reference */
    cg_noise_stats *stats; /* noise: [ST_ERR], [ST_F32], [ST_F16] */
    bool f16_measured;
    cg_tensor *kept_ref, *kept_cand;
    cg_bisect_type type;  /* the reference value's type (name borrowed) */
} watch_entry;

typedef struct side_state side_state;

/* Target paths built once per (model, path options) of a bisection and
 * lent as `like` to each side path with the same: its passes and reruns of
 * one sample differ only in precision (force_fp32, accumulate) and in what
 * they observe, and each side path would otherwise lower, type and place
 * the same graph again (four recording runs of the model: a fifth of a
 * PP-OCRv4 det gate at 480x640). */
enum { PATH_TEMPLATES = 4 };
typedef struct path_templates {
    struct {
        const cg_model *model;
        const cg_target_path_options *opt;
        cg_target_path *path;
    } t[PATH_TEMPLATES];
    size_t count;
} path_templates;

/* The template for (model, opt), built on first need; *out NULL where
 * the table is full (the side builds its own). */
static cg_status template_get(path_templates *pt, const cg_model *model,
                              const cg_target_path_options *opt, const cg_target_path **out,
                              cg_error *err)
{
    *out = NULL;
    for (size_t i = 0; i < pt->count; i++)
        if (pt->t[i].model == model && pt->t[i].opt == opt) {
            *out = pt->t[i].path;
            return CG_OK;
        }
    if (pt->count == PATH_TEMPLATES)
        return CG_OK;
    cg_target_path_options po = *opt;
    po.observe = NULL;
    po.observe_inside = NULL;
    po.observe_user = NULL;
    po.force_fp32 = false;
    po.returned_outputs = 0;
    cg_target_path *path = NULL;
    cg_status st = cg_target_path_init(model, &po, &path, err);
    if (st != CG_OK)
        return st;
    cg_target_path_drop_runtime(path); /* never run: its memory is not held */
    pt->t[pt->count].model = model;
    pt->t[pt->count].opt = opt;
    pt->t[pt->count].path = path;
    pt->count++;
    *out = path;
    return CG_OK;
}

static void templates_free(path_templates *pt)
{
    for (size_t i = 0; i < pt->count; i++)
        cg_target_path_free(pt->t[i].path);
    memset(pt, 0, sizeof *pt);
}

typedef struct bisect_ctx {
    const cg_bisect_options *opt;
    path_templates *tmpl; /* the bisection's (outlives the ctx) */
    bool noise;           /* judged against floors (not by_tolerance) */
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
    /* a rerun with keep_values: both sides' values of its one entry */
    bool keep_values;
    cg_value *kept[2];
    cg_error fail;        /* first failure of the comparison machinery */
    side_state *sides[SIDE_MAX];
    int side_count;
    uint8_t *prec16;      /* the fp16-storage side's node precisions */
    bool sums16;          /* the candidate sums in fp16: that side sums on fp16's
                             significand too (the fp16-sums floor) */
} bisect_ctx;

/* How the candidate side runs in a pass. */
typedef enum cand_mode {
    CAND_AS_IS = 0,
    CAND_ACC32,           /* a path with fp32 accumulation */
    CAND_FP32,            /* a path in fp32 */
    CAND_FP64             /* a model on the reference runtime in float64 */
} cand_mode;

struct side_state {
    bisect_ctx *ctx;
    int which;
    const cg_bisect_side *side;
    cand_mode mode;
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
           v->tensor.dtype != CG_DTYPE_UNDEFINED && (v->tensor.data || v->tensor.numel == 0);
}

/* Whether side w takes part in entry e. */
static bool side_needed(const bisect_ctx *c, const watch_entry *e, int w)
{
    return w < c->side_count && c->sides[w] && (w != SIDE_CAND || e->compare);
}

static int sides_needed(const bisect_ctx *c, const watch_entry *e)
{
    int n = 0;
    for (int w = 0; w < c->side_count; w++)
        n += side_needed(c, e, w);
    return n;
}

/* --- comparing one complete entry -------------------------------------------- */

/* All the sides' values of e are in: compare them (outside the lock).
 * vals[w] are the values, NULL for sides not needed. */
/* One of a watched value's noise statistics (cg_noise_stats_add). */
typedef struct stats_job {
    cg_noise_stats *stats;
    const cg_tensor *ref, *got;
    cg_status st;
    cg_error err;
} stats_job;

static void *stats_job_run(void *arg)
{
    stats_job *j = arg;
    cg_error_clear(&j->err);
    j->st = cg_noise_stats_add(j->stats, j->ref, j->got, &j->err);
    return NULL;
}

/* Values from this many elements up have their statistics made on threads
 * of their own, the first on the calling thread: each is a pass over the
 * value in order (the same figures either way), and the side that brought
 * the value's last copy makes them before its next node, so three passes
 * in a row held up every side waiting on it (`bisect` of PP-OCRv4 det at
 * 480x640: 10.1-10.7 s -> 7.6-8.5 s, the same CPU time). Below it a thread
 * costs more than it saves. */
enum { STATS_THREADED_MIN = 1 << 16 };

static void stats_jobs_run(stats_job *jobs, int n, int64_t numel)
{
    pthread_t th[3];
    bool started[3] = {false, false, false};
    for (int k = 1; k < n && numel >= STATS_THREADED_MIN; k++)
        started[k] = pthread_create(&th[k], NULL, stats_job_run, &jobs[k]) == 0;
    for (int k = 0; k < n; k++)
        if (!started[k])
            stats_job_run(&jobs[k]);
    for (int k = 1; k < n; k++)
        if (started[k])
            pthread_join(th[k], NULL);
}

static cg_status entry_compare(bisect_ctx *c, watch_entry *e, const cg_tensor *const *vals,
                               cg_error *err)
{
    const cg_tensor *ref = vals[SIDE_REF];
    cg_status st = CG_OK;
    if (c->keep_values && e->compare && vals[SIDE_CAND] && !c->kept[SIDE_REF]) {
        cg_tensor *ca = tensor_copy(ref), *cb = tensor_copy(vals[SIDE_CAND]);
        cg_status ks = ca && cb ? CG_OK : CG_NOMEM;
        if (ks == CG_OK && (ks = cg_value_from_tensor(ca, &c->kept[SIDE_REF], err)) == CG_OK) {
            free(ca);
            ca = NULL;
            if ((ks = cg_value_from_tensor(cb, &c->kept[SIDE_CAND], err)) == CG_OK) {
                free(cb);
                cb = NULL;
            }
        }
        tensor_drop(ca);
        tensor_drop(cb);
        if (ks != CG_OK)
            return cg_error_set(err, ks, "out of memory keeping '%s'", e->name);
    }
    if (!c->noise) {
        cg_metrics_init(&e->metrics);
        st = cg_compare_tensors(ref, vals[SIDE_CAND], &c->opt->tol, &e->metrics, err);
        e->compared = st == CG_OK;
        return st;
    }
    if (!e->stats && !(e->stats = calloc(3, sizeof *e->stats)))
        return cg_error_set(err, CG_NOMEM, "out of memory");
    for (int k = 0; k < 3; k++)
        cg_noise_stats_init(&e->stats[k]);
    /* the candidate's error and the two floors: three independent passes
     * over the value, side by side where it is big */
    stats_job jobs[3];
    int nj = 0;
    bool cand_shape = e->compare && vals[SIDE_CAND] && ref->numel != vals[SIDE_CAND]->numel;
    if (e->compare && vals[SIDE_CAND] && !cand_shape)
        jobs[nj++] = (stats_job){&e->stats[ST_ERR], ref, vals[SIDE_CAND], CG_OK, {0}};
    if (vals[SIDE_F32] && ref->numel == vals[SIDE_F32]->numel)
        jobs[nj++] = (stats_job){&e->stats[ST_F32], ref, vals[SIDE_F32], CG_OK, {0}};
    if (vals[SIDE_F16] && ref->numel == vals[SIDE_F16]->numel)
        jobs[nj++] = (stats_job){&e->stats[ST_F16], ref, vals[SIDE_F16], CG_OK, {0}};
    stats_jobs_run(jobs, nj, ref->numel);
    for (int k = 0; k < nj; k++)
        if (jobs[k].st != CG_OK) {
            *err = jobs[k].err;
            return jobs[k].st;
        }
    if (cand_shape) {
        /* another shape: a comparison that fails everywhere */
        cg_metrics_init(&e->stats[ST_ERR].m);
        e->stats[ST_ERR].m.shape_mismatch = true;
        e->stats[ST_ERR].m.max_abs = INFINITY;
        e->stats[ST_ERR].dist.count = 1;
        e->stats[ST_ERR].dist.nonfinite = 1;
    }
    if (e->compare && vals[SIDE_CAND]) {
        e->metrics = e->stats[ST_ERR].m;
        e->compared = true;
    }
    if (vals[SIDE_F16] && ref->numel == vals[SIDE_F16]->numel)
        e->f16_measured = true;
    if (e->keep) {
        if (!(e->kept_ref = tensor_copy(ref)) ||
            (e->compare && vals[SIDE_CAND] && !(e->kept_cand = tensor_copy(vals[SIDE_CAND]))))
            return cg_error_set(err, CG_NOMEM, "out of memory keeping '%s'", e->name);
    }
    return CG_OK;
}

/* --- lockstep (threads) ------------------------------------------------------------ */

/* Records a failure of the bisect machinery and stops every run. Lock held. */
static void ctx_abort(bisect_ctx *c)
{
    c->abort = true;
    pthread_cond_broadcast(&c->cond);
}

/* May side s wait on entry e? Only while another side still runs (so one
 * side always runs and nothing deadlocks), and not when a side e needs has
 * finished without reporting it (it never will). Lock held. */
static bool may_wait(const bisect_ctx *c, const side_state *s, const watch_entry *e)
{
    bool other_runs = false;
    for (int w = 0; w < c->side_count; w++) {
        const side_state *o = c->sides[w];
        if (!o || o == s)
            continue;
        if (!o->finished && !o->waiting)
            other_runs = true;
        if (side_needed(c, e, w) && !e->seen[w] && o->finished)
            return false;
    }
    return other_runs;
}

static cg_status side_observe(void *user, const cg_node *node, const char *name,
                              const cg_value *value)
{
    side_state *s = user;
    bisect_ctx *c = s->ctx;
    size_t idx, ti;
    cg_status st = CG_OK;

    /* the reference's types of every value, for the divergent node's inputs:
     * the model's own (the fp32 side's, not the float64 run's) */
    int typed = c->side_count > SIDE_F32 ? SIDE_F32 : SIDE_REF;
    if (s->which == typed && value && value->kind == CG_VALUE_TENSOR &&
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
    if (!side_needed(c, e, s->which))
        return CG_OK;
    pthread_mutex_lock(&c->lock);
    if (c->abort) {
        s->stopped = true;
        pthread_mutex_unlock(&c->lock);
        return CG_RUNTIME;
    }
    if (e->seen[s->which]) { /* reported twice: the first counts */
        pthread_mutex_unlock(&c->lock);
        return CG_OK;
    }
    e->seen[s->which] = true;
    e->reported++;
    if (s->which == typed && comparable(value))
        type_from_tensor(&e->type, &value->tensor);
    if (!comparable(value) || e->skipped) {
        /* sequences, optionals, strings: not compared; free waiting copies */
        e->skipped = true;
        for (int w = 0; w < SIDE_MAX; w++) {
            tensor_drop(e->slot[w]);
            e->slot[w] = NULL;
        }
        pthread_cond_broadcast(&c->cond);
        pthread_mutex_unlock(&c->lock);
        return CG_OK;
    }
    if (e->reported == sides_needed(c, e)) {
        /* the last to arrive: compare outside the lock */
        const cg_tensor *vals[SIDE_MAX] = {NULL, NULL, NULL, NULL};
        cg_tensor *taken[SIDE_MAX];
        for (int w = 0; w < SIDE_MAX; w++) {
            taken[w] = e->slot[w];
            e->slot[w] = NULL;
            vals[w] = taken[w];
        }
        vals[s->which] = &value->tensor;
        /* the sides that wait on e go on now: the comparison holds their
         * copies, and runs beside their next nodes rather than before them */
        e->complete = true;
        pthread_cond_broadcast(&c->cond);
        pthread_mutex_unlock(&c->lock);
        cg_error cerr;
        cg_error_clear(&cerr);
        st = entry_compare(c, e, vals, &cerr);
        for (int w = 0; w < SIDE_MAX; w++)
            tensor_drop(taken[w]);
        if (st != CG_OK) { /* (nobody waits on the comparison itself) */
            pthread_mutex_lock(&c->lock);
            cg_error_set(&c->fail, st, "comparing '%s': %s", name, cerr.msg);
            ctx_abort(c);
            s->stopped = true;
            pthread_mutex_unlock(&c->lock);
        }
        return st;
    }
    e->slot[s->which] = tensor_copy(&value->tensor);
    if (!e->slot[s->which]) {
        cg_error_set(&c->fail, CG_NOMEM, "out of memory copying '%s' for comparison", name);
        ctx_abort(c);
        s->stopped = true;
        pthread_mutex_unlock(&c->lock);
        return CG_NOMEM;
    }
    /* wait for the others to report it, while another side still runs.
     * Starting to wait is news to the others (one of them may be the last
     * side running now) and is announced once; a wake-up that changes
     * nothing is not: waiting sides re-announcing on every wake-up woke
     * each other in turn for as long as the running side computed, on the
     * CPUs it needed (a third of PP-OCRv4 det's bisection went to it). */
    bool announced = false;
    while (!e->complete && !e->skipped && !c->abort && may_wait(c, s, e)) {
        s->waiting = true;
        if (!announced)
            pthread_cond_broadcast(&c->cond);
        announced = true;
        pthread_cond_wait(&c->cond, &c->lock);
    }
    s->waiting = false;
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
    cg_named_value *outs = NULL, *cast = NULL;
    size_t out_count = 0;
    bool *owned = NULL;
    cg_status st;
    /* a candidate model declaring other float types (an fp16 conversion)
     * is fed the inputs it declares; computed in float64, the source's own */
    if (s->mode == CAND_FP64)
        st = cg_samples_cast_inputs(s->ctx->opt->reference.model, inputs, n, &cast, &owned,
                                    &s->err);
    else
        st = cg_samples_cast_inputs(s->side->model, inputs, n, &cast, &owned, &s->err);
    if (st != CG_OK)
        return st;
    if (s->rt)
        st = cg_runtime_run(s->rt, cast, n, &outs, &out_count, &s->err);
    else
        st = cg_target_path_run(s->path, cast, n, &outs, &out_count, &s->err);
    if (st == CG_OK)
        cg_runtime_free_outputs(outs, out_count);
    cg_samples_cast_free(cast, owned, n);
    return st;
}

typedef struct side_job {
    side_state *side;
    const cg_named_value *inputs;
    size_t input_count;
} side_job;

/* Runs one side; marks it finished and stops the others on failure. */
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

/* Runs every side at once: the others on new threads, the reference on
 * this one. */
static cg_status lockstep_run(bisect_ctx *c, const cg_named_value *inputs, size_t n,
                              cg_error *err)
{
    pthread_t threads[SIDE_MAX];
    side_job jobs[SIDE_MAX];
    int started = 0;
    cg_status st = CG_OK;
    for (int w = 0; w < c->side_count; w++)
        jobs[w] = (side_job){c->sides[w], inputs, n};
    for (int w = 1; w < c->side_count; w++) {
        if (pthread_create(&threads[w], NULL, side_thread, &jobs[w]) != 0) {
            pthread_mutex_lock(&c->lock);
            ctx_abort(c);
            pthread_mutex_unlock(&c->lock);
            st = cg_error_set(err, CG_RUNTIME, "bisect: could not start a thread");
            break;
        }
        started = w;
    }
    if (st == CG_OK)
        side_thread(&jobs[SIDE_REF]);
    for (int w = 1; w <= started; w++)
        pthread_join(threads[w], NULL);
    return st;
}

/* --- setup ---------------------------------------------------------------------- */

static const char *side_name(int w)
{
    static const char *const names[SIDE_MAX] = {"reference", "candidate", "fp32 reference",
                                                 "fp16-storage reference"};
    return names[w];
}

static cg_status side_init(side_state *s, bisect_ctx *c, int which, const cg_bisect_side *side,
                           cand_mode mode, cg_error *err)
{
    memset(s, 0, sizeof *s);
    s->ctx = c;
    s->which = which;
    s->side = side;
    s->mode = mode;
    cg_error_clear(&s->err);
    cg_status st;
    if (!side->path) {
        cg_runtime_options ro;
        cg_verify_runtime_options(&ro, c->opt->max_alloc_bytes, 0);
        ro.observe = side_observe;
        ro.observe_user = s;
        ro.float64 = (which == SIDE_REF && c->noise) || which == SIDE_F16 || mode == CAND_FP64;
        ro.returned_outputs = side->returned_outputs;
        if (which == SIDE_F16)
            ro.node_precision = c->prec16;
        st = cg_runtime_init(side->model, &ro, &s->rt, err);
    } else {
        s->path_opt = *side->path;
        s->path_opt.observe = side_observe;
        s->path_opt.observe_user = s;
        s->path_opt.force_fp32 = mode == CAND_FP32;
        s->path_opt.returned_outputs = side->returned_outputs;
        if (mode == CAND_ACC32)
            s->path_opt.accumulate = CG_ACCUMULATE_FP32;
        const cg_target_path *like = NULL;
        st = c->tmpl ? template_get(c->tmpl, side->model, side->path, &like, err) : CG_OK;
        if (like) {
            s->path_opt.like = like;
            s->path_opt.types = NULL;
            s->path_opt.lowered = NULL;
        }
        if (st == CG_OK)
            st = cg_target_path_init(side->model, &s->path_opt, &s->path, err);
    }
    if (st != CG_OK)
        cg_error_prefix(err, "bisect: %s side: ", side_name(which));
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
 * nodes produce too, each visible on the candidate's path (compared); with
 * decisions, also the values decision nodes read and make (floors only
 * where the candidate does not report them). `only` (if not NULL)
 * restricts it to that one value. */
static cg_status build_watch(bisect_ctx *c, const char *only, const cg_decision_map *dmap,
                             cg_error *err)
{
    const cg_graph *rg = c->opt->reference.model->graph;
    const cg_graph *cgph = c->opt->candidate.model->graph;
    name_map cand = {0}, vis = {0}, keep = {0};
    cg_status st = CG_NOMEM;
    size_t n = 0, dummy;
    c->ref_graph = rg;
    if (!map_node_outputs(&cand, cgph) || !map_node_outputs(&c->ref_values, rg))
        goto fail;
    if (c->sides[SIDE_CAND]->path &&
        !map_visible(&vis, cg_target_path_assignment(c->sides[SIDE_CAND]->path)))
        goto fail;
    for (size_t v = 0; v < rg->node_count; v++)
        n += rg->nodes[v].output_count + rg->nodes[v].input_count;
    if (!cg_strmap_reserve(&keep, n))
        goto fail;
    for (size_t v = 0; dmap && !only && v < rg->node_count; v++) {
        if (!dmap->is_decision[v])
            continue;
        const cg_node *nd = &rg->nodes[v];
        for (size_t i = 0; i < nd->input_count; i++)
            if (nd->inputs[i] && nd->inputs[i][0])
                cg_strmap_add(&keep, nd->inputs[i], 0);
        for (size_t o = 0; o < nd->output_count; o++)
            if (nd->outputs[o] && nd->outputs[o][0])
                cg_strmap_add(&keep, nd->outputs[o], 0);
    }
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
            bool compare = map_get(&cand, name, &dummy) && (!vis.cap || map_get(&vis, name,
                                                                                  &dummy));
            bool kept = c->noise && map_get(&keep, name, &dummy);
            if (!compare && !kept)
                continue;
            watch_entry *e = &c->entries[c->entry_count];
            e->name = name;
            e->node = v;
            e->compare = compare;
            e->keep = kept;
            e->type.name = (char *)name;
            cg_strmap_add(&c->watch, name, c->entry_count++);
        }
    }
    st = CG_OK;
fail:
    cg_strmap_free(&cand);
    cg_strmap_free(&vis);
    cg_strmap_free(&keep);
    if (st != CG_OK)
        cg_error_set(err, st, "bisect: out of memory building the watch list");
    return st;
}

static void ctx_free(bisect_ctx *c)
{
    for (size_t i = 0; c->entries && i < c->entry_count; i++) {
        for (int w = 0; w < SIDE_MAX; w++)
            tensor_drop(c->entries[i].slot[w]);
        tensor_drop(c->entries[i].kept_ref);
        tensor_drop(c->entries[i].kept_cand);
        free(c->entries[i].stats);
    }
    free(c->entries);
    free(c->ref_types);
    free(c->prec16);
    cg_value_free(c->kept[0]);
    cg_value_free(c->kept[1]);
    cg_strmap_free(&c->watch);
    cg_strmap_free(&c->ref_values);
    cg_strmap_free(&c->ref_type_index);
    memset(c, 0, sizeof *c);
}

static bool is_half(int64_t dt)
{
    return dt == CG_DTYPE_FLOAT16 || dt == CG_DTYPE_BFLOAT16;
}

/* Whether the candidate computes or stores anything in fp16: a target path
 * in reduced precision, or a model with float16/bfloat16 values. */
static bool model_has_half(const cg_model *m)
{
    const cg_graph *g = m->graph;
    for (size_t i = 0; i < g->initializer_count; i++)
        if (g->initializers[i].data_type == CG_DTYPE_FLOAT16 ||
            g->initializers[i].data_type == CG_DTYPE_BFLOAT16)
            return true;
    for (size_t i = 0; i < g->input_count; i++)
        if (g->inputs[i].type && g->inputs[i].type->has_elem_type &&
            (g->inputs[i].type->elem_type == CG_DTYPE_FLOAT16 ||
             g->inputs[i].type->elem_type == CG_DTYPE_BFLOAT16))
            return true;
    for (size_t v = 0; v < g->node_count; v++)
        if (strcmp(g->nodes[v].op_type, "Cast") == 0 &&
            is_half(cg_node_attr_int(&g->nodes[v], "to", 0)))
            return true;
    return false;
}

/* One lockstep pass: init the sides, watch, run, collect errors. With
 * `with_floors` the fp32 and (half) fp16-storage sides run too. */
static cg_status bisect_pass(bisect_ctx *c, side_state sides[SIDE_MAX], cand_mode mode,
                             bool with_floors, bool half, const char *only,
                             const cg_decision_map *dmap, const cg_named_value *inputs, size_t n,
                             cg_error *err)
{
    cg_status st;
    c->side_count = with_floors && c->noise ? (half ? 4 : 3) : 2;
    if (!c->stage)
        c->stage = "bisect";
    for (int w = 0; w < SIDE_MAX; w++)
        c->sides[w] = w < c->side_count ? &sides[w] : NULL;
    cg_error_clear(&c->fail);
    c->abort = false;
    if (c->side_count > SIDE_F16) {
        const cg_graph *rg = c->opt->reference.model->graph;
        c->prec16 = malloc(rg->node_count + 1);
        if (!c->prec16)
            return cg_error_set(err, CG_NOMEM, "bisect: out of memory");
        /* a candidate that sums in fp16 is held to the fp16-sums floor */
        c->sums16 = mode == CAND_AS_IS && c->opt->candidate.path &&
                    cg_target_path_options_sum16(c->opt->candidate.path);
        memset(c->prec16, c->sums16 ? CG_NODE_PREC_FP16_SUM11 : CG_NODE_PREC_FP16,
               rg->node_count + 1);
    }
    if ((st = side_init(&sides[SIDE_REF], c, SIDE_REF, &c->opt->reference, CAND_AS_IS, err)) !=
            CG_OK ||
        (st = side_init(&sides[SIDE_CAND], c, SIDE_CAND, &c->opt->candidate, mode, err)) != CG_OK)
        return st;
    for (int w = SIDE_F32; w < c->side_count; w++)
        if ((st = side_init(&sides[w], c, w, &c->opt->reference, CAND_AS_IS, err)) != CG_OK)
            return st;
    if ((st = build_watch(c, only, dmap, err)) != CG_OK)
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
    for (int w = 0; w < c->side_count; w++) {
        side_state *s = &sides[w];
        if (s->status != CG_OK && !s->stopped)
            return cg_error_set(err, s->status, "bisect: %s run failed: %s", side_name(w),
                                s->err.msg);
    }
    return CG_OK;
}

static void sides_free(side_state sides[SIDE_MAX])
{
    for (int w = 0; w < SIDE_MAX; w++)
        side_free(&sides[w]);
}

/* --- the candidate's precision of each value ----------------------------------------- */

/* Value names of the candidate's graph that it holds in fp16 or that
 * depend on one it does: fp16 initializers and inputs, Casts to fp16, the
 * nodes a path runs in fp16, and everything downstream. */
static cg_status half_values(const cg_model *m, const cg_target_path *path, name_map *out,
                             cg_error *err)
{
    const cg_graph *g = m->graph;
    size_t n = g->initializer_count + g->input_count;
    for (size_t v = 0; v < g->node_count; v++)
        n += g->nodes[v].output_count;
    if (!cg_strmap_reserve(out, n))
        return cg_error_set(err, CG_NOMEM, "bisect: out of memory");
    size_t dummy;
    for (size_t i = 0; i < g->initializer_count; i++)
        if (g->initializers[i].name && is_half(g->initializers[i].data_type))
            cg_strmap_add(out, g->initializers[i].name, 1);
    for (size_t i = 0; i < g->input_count; i++)
        if (g->inputs[i].name && g->inputs[i].type && g->inputs[i].type->has_elem_type &&
            is_half(g->inputs[i].type->elem_type))
            cg_strmap_add(out, g->inputs[i].name, 1);
    for (size_t v = 0; v < g->node_count; v++) {
        const cg_node *nd = &g->nodes[v];
        bool half = path && cg_target_path_node_precision(path, v) != CG_NODE_PREC_FP32;
        for (size_t i = 0; !half && i < nd->input_count; i++)
            half = nd->inputs[i] && nd->inputs[i][0] && map_get(out, nd->inputs[i], &dummy);
        if (!half && strcmp(nd->op_type, "Cast") == 0)
            half = is_half(cg_node_attr_int(nd, "to", 0));
        if (!half)
            continue;
        for (size_t o = 0; o < nd->output_count; o++)
            if (nd->outputs[o] && nd->outputs[o][0])
                cg_strmap_add(out, nd->outputs[o], 1);
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
    if (e->stats) {
        t->floor32 = e->stats[ST_F32].dist.count ? e->stats[ST_F32].m.max_abs : 0.0;
        t->floor16 = e->f16_measured ? e->stats[ST_F16].m.max_abs : 0.0;
        t->floor16_sums = e->f16_measured && c->sums16;
        t->floor16_measured = e->f16_measured;
    }
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
    case CG_TRIAGE_PRECISION: return "precision breakdown";
    case CG_TRIAGE_WRONG: return "wrong result (wrong kernel or rewrite)";
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
        if (!e->compare) /* a decision's input the candidate does not report */
            continue;
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
    for (size_t i = 0; i < r->flipped_count; i++) {
        free(r->flipped[i].tensor);
        free(r->flipped[i].node);
        free(r->flipped[i].op_type);
    }
    free(r->flipped);
    for (size_t i = 0; i < r->point_count; i++)
        free(r->points[i].tensor);
    free(r->points);
    cg_value_free(r->first_reference);
    cg_value_free(r->first_target);
    memset(r, 0, sizeof *r);
}

/* --- judging the entries ---------------------------------------------------------------- */

/* The floors of entry e as a noise value (name borrowed). */
static void entry_floor(bool sums16, const watch_entry *e, cg_noise_value *v)
{
    memset(v, 0, sizeof *v);
    v->name = (char *)e->name;
    v->compared = true;
    v->fp32 = e->stats[ST_F32];
    v->fp16_is_sums = sums16 && e->f16_measured;
    if (e->f16_measured)
        v->fp16 = e->stats[ST_F16];
    else
        cg_noise_stats_init(&v->fp16);
}

/* A tensor a decision reads: its kept fp64 value, or an initializer's /
 * a graph input's value (converted into *own, freed by the caller). */
static const cg_tensor *decision_input(bisect_ctx *c, const char *name,
                                       const cg_named_value *inputs, size_t n, cg_value **own)
{
    size_t i;
    if (!name || !name[0])
        return NULL;
    if (map_get(&c->watch, name, &i) && c->entries[i].kept_ref)
        return c->entries[i].kept_ref;
    const cg_graph *g = c->ref_graph;
    for (size_t k = 0; k < g->initializer_count; k++)
        if (g->initializers[k].name && strcmp(g->initializers[k].name, name) == 0) {
            if (cg_value_from_tensor_proto(&g->initializers[k], own, NULL) != CG_OK)
                return NULL;
            return (*own)->kind == CG_VALUE_TENSOR ? &(*own)->tensor : NULL;
        }
    for (size_t k = 0; k < n; k++)
        if (inputs[k].name && strcmp(inputs[k].name, name) == 0 && inputs[k].value &&
            inputs[k].value->kind == CG_VALUE_TENSOR)
            return &inputs[k].value->tensor;
    return NULL;
}

/* max |d| of a decision input's floor (0 when not measured: a source) */
static double input_floor(bisect_ctx *c, const char *name, int which)
{
    size_t i;
    if (!name || !map_get(&c->watch, name, &i) || !c->entries[i].stats)
        return 0.0;
    const watch_entry *e = &c->entries[i];
    if (which == ST_F16 && !e->f16_measured)
        return 0.0;
    return e->stats[which].dist.count ? e->stats[which].m.max_abs : 0.0;
}

/* Flips of decision entry e (a decision node's output the candidate
 * reports): false when they cannot be counted. */
static bool entry_flips(bisect_ctx *c, const watch_entry *e, const cg_named_value *inputs,
                        size_t n, cg_flip_stats *f)
{
    const cg_node *nd = &c->ref_graph->nodes[e->node];
    const cg_tensor *ins[16] = {NULL}, *outs[16] = {NULL};
    cg_value *own[16] = {NULL};
    size_t ni = nd->input_count < 16 ? nd->input_count : 16;
    size_t no = nd->output_count < 16 ? nd->output_count : 16, which = SIZE_MAX;
    double f32 = 0, f16 = 0;
    if (!e->kept_ref || !e->kept_cand)
        return false;
    for (size_t i = 0; i < ni; i++) {
        ins[i] = decision_input(c, nd->inputs[i], inputs, n, &own[i]);
        f32 += input_floor(c, nd->inputs[i], ST_F32);
        f16 += input_floor(c, nd->inputs[i], ST_F16);
    }
    for (size_t o = 0; o < no; o++) {
        size_t k;
        if (nd->outputs[o] && map_get(&c->watch, nd->outputs[o], &k))
            outs[o] = c->entries[k].kept_ref;
        if (nd->outputs[o] && strcmp(nd->outputs[o], e->name) == 0)
            which = o;
    }
    bool ok = which != SIZE_MAX &&
              cg_decision_flips(nd, ins, ni, outs, no, which, e->kept_cand, f32, f16, NULL, f,
                                NULL) == CG_OK;
    for (size_t i = 0; i < ni; i++)
        cg_value_free(own[i]);
    return ok;
}

static bool flips_noise(const cg_flip_stats *f, cg_precision p)
{
    if (f->flips == 0)
        return true;
    if (!f->margin_known)
        return false;
    return (p == CG_PRECISION_FP16 ? f->noise_fp16 : f->noise_fp32) == f->flips;
}

/* Appends a decision that flipped within the noise. */
static bool note_flip(bisect_ctx *c, const watch_entry *e, cg_precision p,
                      const cg_flip_stats *f, cg_bisect_result *r)
{
    cg_bisect_flip *g = realloc(r->flipped, (r->flipped_count + 1) * sizeof *g);
    if (!g)
        return false;
    r->flipped = g;
    cg_bisect_flip *x = &g[r->flipped_count];
    char buf[32];
    memset(x, 0, sizeof *x);
    x->tensor = dup_str(e->name);
    x->node = dup_str(cg_graph_node_name(c->ref_graph, e->node, buf, sizeof buf));
    x->op_type = dup_str(c->ref_graph->nodes[e->node].op_type);
    x->precision = p;
    x->flips = *f;
    r->flipped_count++;
    return x->tensor && x->node && x->op_type;
}

/* Judges the compared entries in order: the first beyond the floor of its
 * own precision (or its tolerance). *first and *last get entry indices
 * (SIZE_MAX: none); j/flips the first's judgement. */
static cg_status judge_entries(bisect_ctx *c, const cg_decision_map *dmap, const name_map *half,
                               const cg_named_value *inputs, size_t n, cg_bisect_result *r,
                               size_t *first, size_t *last, cg_judgement *j, bool *by_flips,
                               cg_flip_stats *jflips, cg_error *err)
{
    const cg_graph *rg = c->ref_graph;
    bool *explained = calloc(rg->node_count + 1, sizeof *explained); /* flipped within noise */
    size_t *up = calloc(rg->node_count + 1, sizeof *up);
    if (!explained || !up) {
        free(explained);
        free(up);
        return cg_error_set(err, CG_NOMEM, "bisect: out of memory");
    }
    *first = *last = SIZE_MAX;
    *by_flips = false;
    for (size_t i = 0; i < c->entry_count; i++) {
        watch_entry *e = &c->entries[i];
        if (!e->compare || !e->compared)
            continue;
        r->compared++;
        bool beyond;
        if (!c->noise) {
            beyond = !e->metrics.pass;
        } else {
            size_t dummy;
            cg_precision p = half && map_get(half, e->name, &dummy) ? CG_PRECISION_FP16
                                                                     : CG_PRECISION_FP32;
            cg_flip_stats f;
            cg_judgement jj;
            cg_noise_value fl;
            entry_floor(c->sums16, e, &fl);
            bool is_dec = dmap && dmap->is_decision[e->node];
            if (is_dec && entry_flips(c, e, inputs, n, &f) && f.flips > 0) {
                beyond = !flips_noise(&f, p);
                if (!beyond) {
                    explained[e->node] = true;
                    if (!note_flip(c, e, p, &f, r)) {
                        free(explained);
                        free(up);
                        return cg_error_set(err, CG_NOMEM, "bisect: out of memory");
                    }
                } else if (*first == SIZE_MAX) {
                    cg_noise_within(&fl, p, &e->metrics, NULL, &jj);
                    *j = jj;
                    *by_flips = true;
                    *jflips = f;
                }
            } else {
                beyond = !cg_noise_within(&fl, p, &e->metrics, NULL, &jj);
                if (beyond && dmap && cg_decision_depends(dmap, e->name)) {
                    /* what follows a decision that flipped within the noise
                     * carries that flip: not this tensor's fault */
                    size_t cnt = cg_decision_upstream(dmap, e->name, up, rg->node_count);
                    for (size_t k = 0; k < cnt && k < rg->node_count && beyond; k++)
                        beyond = !explained[up[k]];
                }
                if (beyond && *first == SIZE_MAX)
                    *j = jj;
            }
        }
        /* against the floors, a tensor passes when it is within them (its
         * metrics were taken at tolerance 0) */
        if (c->noise)
            e->metrics.pass = !beyond;
        if (beyond) {
            r->divergent++;
            if (*first == SIZE_MAX)
                *first = i;
        } else if (*first == SIZE_MAX) {
            *last = i;
        }
    }
    free(explained);
    free(up);
    return CG_OK;
}

/* --- reruns ------------------------------------------------------------------------------- */

/* Reruns the candidate (mode) against the reference watching only `name`:
 * its metrics (and flips, for a decision) there. */
static cg_status rerun(const cg_bisect_options *opt, path_templates *tmpl, bool noise,
                       cand_mode mode, const char *name, const char *stage,
                       const cg_named_value *inputs, size_t n, cg_metrics *m, bool *ran,
                       cg_value **kept, cg_error *err)
{
    bisect_ctx c;
    side_state sides[SIDE_MAX];
    memset(&c, 0, sizeof c);
    memset(sides, 0, sizeof sides);
    c.opt = opt;
    c.tmpl = tmpl;
    c.noise = noise;
    c.stage = stage;
    c.keep_values = kept != NULL;
    *ran = false;
    cg_status st = bisect_pass(&c, sides, mode, false, false, name, NULL, inputs, n, err);
    if (st == CG_OK && c.entry_count == 1 && c.entries[0].compared) {
        if (m)
            *m = c.entries[0].metrics;
        *ran = true;
        if (kept) {
            kept[0] = c.kept[SIDE_REF];
            kept[1] = c.kept[SIDE_CAND];
            c.kept[SIDE_REF] = c.kept[SIDE_CAND] = NULL;
        }
    }
    sides_free(sides);
    ctx_free(&c);
    return st;
}

/* A shallow copy of a candidate model whose initializers that the
 * reference model has too (same name, same shape, a float type) are the
 * reference's: an fp16 conversion computed in float64 with its source's
 * weights, so the rerun undoes all of the conversion's rounding and keeps
 * only what it changed in the graph. Shares everything else. */
typedef struct source_weights {
    cg_model model;
    cg_graph graph;
    cg_tensor_proto *inits;
} source_weights;

static bool float_proto(int32_t dt)
{
    return dt == CG_DTYPE_FLOAT || dt == CG_DTYPE_FLOAT16 || dt == CG_DTYPE_BFLOAT16 ||
           dt == CG_DTYPE_DOUBLE;
}

static bool source_weights_init(source_weights *sw, const cg_model *cand, const cg_model *ref)
{
    const cg_graph *g = cand->graph, *rg = ref->graph;
    memset(sw, 0, sizeof *sw);
    sw->inits = calloc(g->initializer_count + 1, sizeof *sw->inits);
    if (!sw->inits)
        return false;
    for (size_t i = 0; i < g->initializer_count; i++) {
        const cg_tensor_proto *c = &g->initializers[i];
        sw->inits[i] = *c;
        for (size_t k = 0; c->name && float_proto(c->data_type) && k < rg->initializer_count;
             k++) {
            const cg_tensor_proto *r = &rg->initializers[k];
            if (!r->name || strcmp(r->name, c->name) != 0 || !float_proto(r->data_type) ||
                r->rank != c->rank ||
                (c->rank && memcmp(r->dims, c->dims, c->rank * sizeof *c->dims) != 0))
                continue;
            sw->inits[i] = *r;
            break;
        }
    }
    sw->graph = *g;
    sw->graph.initializers = sw->inits;
    sw->model = *cand;
    sw->model.graph = &sw->graph;
    return true;
}

/* The cause of an fp16 divergence in words, for the verdict line. */
static void cause_text(const cg_bisect_tensor *t, char *buf, size_t cap)
{
    const cg_metrics *m = &t->metrics;
    if (m->inf_got > m->inf_ref || m->nan_got > m->nan_ref)
        snprintf(buf, cap, "fp16 overflow in %.40s '%.80s' (%s where the fp64 reference is %.6g)",
                 t->op_type, t->node, m->nan_got > m->nan_ref ? "NaN" : "inf", m->worst_ref);
    else
        snprintf(buf, cap, "fp16 precision lost in %.40s '%.80s'", t->op_type, t->node);
}

/* The verdict of the first divergent tensor (noise): wrong at fp32; for
 * fp16, the reruns decide. */
static cg_status noise_triage(const cg_bisect_options *opt, path_templates *tmpl,
                              const watch_entry *e, const cg_judgement *within,
                              const cg_named_value *inputs, size_t n, cg_bisect_result *r,
                              cg_error *err)
{
    cg_bisect_tensor *t = &r->first_divergent;
    cg_status st;
    char cause[300];
    r->verdict = within->verdict;
    if (t->precision == CG_PRECISION_FP32) {
        r->triage = within->verdict == CG_VERDICT_PRECISION ? CG_TRIAGE_PRECISION
                                                            : CG_TRIAGE_WRONG;
        snprintf(r->verdict_reason, sizeof r->verdict_reason, "%s: %s in %.40s '%.80s': %.200s",
                 cg_verdict_name(r->verdict), t->by_flips ? "a decision flips" : "beyond the "
                 "fp32 noise floor", t->op_type, t->node, within->reason);
        snprintf(r->triage_note, sizeof r->triage_note, "%s", opt->candidate.path
                     ? "the target path computes this tensor in fp32: no precision to lose"
                     : "the candidate computes this tensor in fp32: the graphs compute "
                       "different things");
        return CG_OK;
    }
    if (!opt->triage) {
        snprintf(r->verdict_reason, sizeof r->verdict_reason, "beyond the fp16 noise floor in "
                 "%.40s '%.80s': %.200s (no triage)", t->op_type, t->node, within->reason);
        return CG_OK;
    }
    /* wider: a path with fp32 accumulation and in fp32; a model in float64 */
    cg_metrics acc32, wide;
    bool ran_acc = false, ran_wide = false;
    if (opt->candidate.path &&
        (st = rerun(opt, tmpl, true, CAND_ACC32, t->tensor, "bisect: rerun with fp32 accumulation",
                    inputs, n, &acc32, &ran_acc, NULL, err)) != CG_OK)
        return st;
    if (opt->candidate.path) {
        st = rerun(opt, tmpl, true, CAND_FP32, t->tensor, "bisect: rerun in fp32", inputs, n, &wide,
                   &ran_wide, NULL, err);
    } else {
        /* a model (an fp16 conversion): computed in float64, with the
         * source's inputs and weights where the names meet */
        source_weights sw;
        cg_bisect_options wo = *opt;
        if (!source_weights_init(&sw, opt->candidate.model, opt->reference.model))
            return cg_error_set(err, CG_NOMEM, "bisect: out of memory");
        wo.candidate.model = &sw.model;
        st = rerun(&wo, tmpl, true, CAND_FP64, t->tensor, "bisect: rerun in float64", inputs, n,
                   &wide, &ran_wide, NULL, err);
        free(sw.inits);
    }
    if (st != CG_OK)
        return st;
    r->acc32_ran = ran_acc;
    if (ran_acc)
        r->acc32_metrics = acc32;
    r->triage_ran = ran_wide;
    if (ran_wide)
        r->triage_metrics = wide;
    cause_text(t, cause, sizeof cause);
    if (!ran_wide) {
        snprintf(r->triage_note, sizeof r->triage_note, "the wider rerun did not report '%s'; "
                 "no triage", t->tensor);
        snprintf(r->verdict_reason, sizeof r->verdict_reason, "%.300s: %.200s", cause,
                 within->reason);
        return CG_OK;
    }
    cg_noise_output o;
    cg_judge_input in;
    cg_judgement v;
    memset(&o, 0, sizeof o);
    entry_floor(opt->candidate.path && cg_target_path_options_sum16(opt->candidate.path), e,
                &o.v);
    memset(&in, 0, sizeof in);
    in.precision = CG_PRECISION_FP16;
    in.floor = &o;
    in.error = &t->metrics;
    in.acc32 = ran_acc ? &acc32 : NULL;
    in.fp32 = &wide;
    if (t->by_flips) {
        /* a decision beyond its noise: judged by the reruns' elementwise
         * distance to the reference there (a flip that goes away is 0) */
        in.error = &t->metrics;
    }
    if ((st = cg_noise_judge(&in, NULL, &v, err)) != CG_OK)
        return st;
    r->verdict = v.verdict == CG_VERDICT_MATCH_FP32 || v.verdict == CG_VERDICT_MATCH_FP16
                     ? CG_VERDICT_PRECISION
                     : v.verdict;
    r->triage = r->verdict == CG_VERDICT_PRECISION ? CG_TRIAGE_PRECISION : CG_TRIAGE_WRONG;
    if (ran_acc) {
        char note[sizeof r->triage_note];
        snprintf(note, sizeof note, "reruns: with fp32 accumulation max |d| %.3g, %s max |d| "
                 "%.3g at '%s'", acc32.max_abs, opt->candidate.path ? "in fp32" : "in float64",
                 wide.max_abs, t->tensor);
        memcpy(r->triage_note, note, sizeof note);
    } else {
        snprintf(r->triage_note, sizeof r->triage_note, "rerun %s: max |d| %.3g at '%s'",
                 opt->candidate.path ? "in fp32" : "in float64", wide.max_abs, t->tensor);
    }
    /* the rerun's conclusion: the judge's reason past the part that says
     * how far beyond the floor the tensor is (the cause says that) */
    const char *tail = v.reason;
    size_t wl = strlen(within->reason);
    if (strncmp(v.reason, within->reason, wl) == 0 && strncmp(v.reason + wl, "; ", 2) == 0)
        tail = v.reason + wl + 2;
    if (r->verdict == CG_VERDICT_PRECISION)
        snprintf(r->verdict_reason, sizeof r->verdict_reason, "%s: %.200s; %.200s",
                 cg_verdict_name(r->verdict), cause, tail);
    else
        snprintf(r->verdict_reason, sizeof r->verdict_reason, "%s: %.40s '%.80s' is beyond its "
                 "fp16 floor and stays beyond it in wider precision: %.200s",
                 cg_verdict_name(r->verdict), t->op_type, t->node, v.reason);
    return CG_OK;
}

/* The fp32 rerun of the candidate path under the tolerance (by_tolerance). */
static cg_status tolerance_triage(const cg_bisect_options *opt, path_templates *tmpl,
                                  const char *name,
                                  const cg_named_value *inputs, size_t n, cg_bisect_result *r,
                                  cg_error *err)
{
    cg_metrics m;
    bool ran = false;
    cg_status st = rerun(opt, tmpl, false, CAND_FP32, name, "bisect: fp32 rerun", inputs, n, &m, &ran,
                         NULL, err);
    if (st != CG_OK)
        return st;
    if (!ran) {
        snprintf(r->triage_note, sizeof r->triage_note,
                 "the fp32 rerun did not report '%s'; no triage", name);
        return CG_OK;
    }
    r->triage_ran = true;
    r->triage_metrics = m;
    r->triage = m.pass ? CG_TRIAGE_PRECISION : CG_TRIAGE_WRONG;
    snprintf(r->triage_note, sizeof r->triage_note,
             "rerun with the target path in fp32: '%s' %s (max_abs %.3g)", name,
             m.pass ? "matches" : "still diverges", m.max_abs);
    return CG_OK;
}

/* --- exposing a partition -------------------------------------------------------------- */

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

/* The multi-node partition the entry's value leaves (NULL: none). */
static const cg_partition *partition_of(const cg_target_path *path, const cg_graph *rg,
                                        const watch_entry *e)
{
    const cg_assignment *a = path ? cg_target_path_assignment(path) : NULL;
    if (!a || a->graph != rg)
        return NULL;
    int pid = a->partition_of[e->node];
    for (size_t i = 0; i < a->partition_count; i++)
        if (a->partitions[i].id == pid && a->partitions[i].node_count >= 2)
            return &a->partitions[i];
    return NULL;
}

/* --- the run ------------------------------------------------------------------------------ */

cg_status cg_bisect_run(const cg_bisect_options *opt, const cg_named_value *inputs,
                        size_t input_count, cg_bisect_result *out, cg_error *err)
{
    bisect_ctx c;
    side_state sides[SIDE_MAX];
    cg_status st;
    size_t first = SIZE_MAX, last = SIZE_MAX;
    exposed_model exposed;
    cg_bisect_options ropt;
    cg_decision_map dmap;
    name_map half = {0};
    bool have_dmap = false, is_half_cand = false, by_flips = false;
    cg_judgement j;
    cg_flip_stats jflips;
    path_templates tmpl;
    cg_target_path_options ref_po, cand_po; /* the exposed model's (ropt) */
    memset(&tmpl, 0, sizeof tmpl);
    memset(&exposed, 0, sizeof exposed);
    memset(&c, 0, sizeof c);
    memset(sides, 0, sizeof sides);
    memset(&dmap, 0, sizeof dmap);
    memset(&j, 0, sizeof j);
    if (!out)
        return cg_error_set(err, CG_USAGE, "cg_bisect_run: NULL result");
    memset(out, 0, sizeof *out);
    if (!opt || !opt->reference.model || !opt->candidate.model ||
        !opt->reference.model->graph || !opt->candidate.model->graph ||
        (input_count && !inputs))
        return cg_error_set(err, CG_USAGE, "cg_bisect_run: missing model or inputs");
    if (!opt->by_tolerance && opt->reference.path)
        return cg_error_set(err, CG_USAGE, "cg_bisect_run: against the noise floors the "
                            "reference is the float64 reference runtime (no path)");
    const cg_bisect_options *use = opt;
    c.opt = opt;
    c.tmpl = &tmpl;
    c.noise = !opt->by_tolerance;
    out->by_noise = c.noise;
    /* decisions, judged by flips (the graph analysis, on declared types) */
    if (c.noise) {
        if ((st = cg_decision_map_build(opt->reference.model->graph, NULL, &dmap, err)) != CG_OK)
            goto done;
        have_dmap = true;
        is_half_cand = model_has_half(opt->candidate.model);
    }
    /* does the candidate hold anything in fp16? a path tells once built */
    if (c.noise && opt->candidate.path && !is_half_cand) {
        const cg_target_path *probe = NULL;
        if ((st = template_get(&tmpl, opt->candidate.model, opt->candidate.path, &probe,
                               err)) != CG_OK) {
            cg_error_prefix(err, "bisect: candidate side: ");
            goto done;
        }
        is_half_cand = probe && cg_target_path_reduced_precision(probe);
    }
    if ((st = bisect_pass(&c, sides, CAND_AS_IS, true, is_half_cand, NULL,
                          have_dmap ? &dmap : NULL, inputs, input_count, err)) != CG_OK)
        goto done;
    if (c.noise && (st = half_values(opt->candidate.model, sides[SIDE_CAND].path, &half,
                                     err)) != CG_OK)
        goto done;
    if ((st = judge_entries(&c, have_dmap ? &dmap : NULL, c.noise ? &half : NULL, inputs,
                            input_count, out, &first, &last, &j, &by_flips, &jflips, err)) !=
        CG_OK)
        goto done;
    /* diverged at the output of a multi-node partition: look inside it */
    const cg_partition *p = NULL;
    if (first != SIZE_MAX && opt->candidate.path &&
        opt->candidate.model == opt->reference.model)
        p = partition_of(sides[SIDE_CAND].path, c.ref_graph, &c.entries[first]);
    if (p) {
        if (!exposed_init(&exposed, opt->reference.model, p)) {
            st = cg_error_set(err, CG_NOMEM, "bisect: out of memory exposing a partition");
            goto done;
        }
        if (exposed.extra) {
            ropt = *opt;
            ropt.reference.model = &exposed.model;
            ropt.candidate.model = &exposed.model;
            /* what a path borrows (a lowering, types) was made for the
             * model as given, not for this one */
            if (opt->reference.path) {
                ref_po = *opt->reference.path;
                ref_po.types = NULL;
                ref_po.lowered = NULL;
                ropt.reference.path = &ref_po;
            }
            if (opt->candidate.path) {
                cand_po = *opt->candidate.path;
                cand_po.types = NULL;
                cand_po.lowered = NULL;
                ropt.candidate.path = &cand_po;
            }
            /* the exposed values are seen, not held to the end of each run
             * (PP-OCRv4 det at 480x640: 3.4 GB with every one held) */
            ropt.reference.returned_outputs = opt->reference.model->graph->output_count;
            ropt.candidate.returned_outputs = opt->reference.model->graph->output_count;
            use = &ropt;
            sides_free(sides);
            ctx_free(&c);
            c.opt = use;
            c.tmpl = &tmpl;
            c.noise = !opt->by_tolerance;
            out->refined = true;
            c.stage = "bisect: inside the partition";
            out->refined_values = exposed.extra;
            for (size_t i = 0; i < out->flipped_count; i++) {
                free(out->flipped[i].tensor);
                free(out->flipped[i].node);
                free(out->flipped[i].op_type);
            }
            free(out->flipped);
            out->flipped = NULL;
            out->flipped_count = out->compared = out->divergent = 0;
            if ((st = bisect_pass(&c, sides, CAND_AS_IS, true, is_half_cand, NULL,
                                  have_dmap ? &dmap : NULL, inputs, input_count, err)) !=
                    CG_OK ||
                (st = judge_entries(&c, have_dmap ? &dmap : NULL, c.noise ? &half : NULL,
                                    inputs, input_count, out, &first, &last, &j, &by_flips,
                                    &jflips, err)) != CG_OK)
                goto done;
        }
    }
    out->watched = 0;
    for (size_t i = 0; i < c.entry_count; i++)
        out->watched += c.entries[i].compare;
    st = CG_NOMEM;
    if (last != SIZE_MAX) {
        out->has_last_matching = true;
        if (!fill_tensor(&c, &c.entries[last], &sides[SIDE_CAND], &out->last_matching))
            goto nomem;
        size_t dummy;
        out->last_matching.precision = c.noise && map_get(&half, c.entries[last].name, &dummy)
                                           ? CG_PRECISION_FP16
                                           : CG_PRECISION_FP32;
    }
    if (first != SIZE_MAX) {
        out->diverged = true;
        cg_bisect_tensor *t = &out->first_divergent;
        if (!fill_tensor(&c, &c.entries[first], &sides[SIDE_CAND], t) ||
            !fill_inputs(&c, c.entries[first].node, inputs, input_count, out))
            goto nomem;
        size_t dummy;
        t->precision = c.noise && map_get(&half, c.entries[first].name, &dummy)
                           ? CG_PRECISION_FP16
                           : CG_PRECISION_FP32;
        t->judgement = j;
        t->by_flips = by_flips;
        if (by_flips)
            t->flips = jflips;
    }
    if (!fill_points(&c, out))
        goto nomem;
    st = CG_OK;
    bool reduced = sides[SIDE_CAND].path && cg_target_path_reduced_precision(sides[SIDE_CAND].path);
    sides_free(sides);
    if (out->diverged && c.noise) {
        st = noise_triage(use, &tmpl, &c.entries[first], &j, inputs, input_count, out, err);
    } else if (out->diverged && opt->triage) {
        if (reduced) {
            st = tolerance_triage(use, &tmpl, out->first_divergent.tensor, inputs, input_count, out,
                                  err);
        } else {
            out->triage = CG_TRIAGE_WRONG;
            snprintf(out->triage_note, sizeof out->triage_note, "%s",
                     opt->candidate.path
                         ? "the target path already computes in fp32: no precision to lose"
                         : "the candidate runs on the reference kernels in fp32: the graphs "
                           "compute different things");
        }
    }
    if (st == CG_OK && out->diverged && opt->keep_values) {
        /* both sides' values of the first divergent tensor, from one more
         * run watching it alone (the passes keep nothing); the reference's
         * is the fp32 reference's, as `run` gives it */
        cg_value *kept[2] = {NULL, NULL};
        bool ran = false;
        st = rerun(use, &tmpl, false, CAND_AS_IS, out->first_divergent.tensor,
                   "bisect: keeping the values", inputs, input_count, NULL, &ran, kept, err);
        out->first_reference = kept[0];
        out->first_target = kept[1];
    }
    goto done;
nomem:
    cg_error_set(err, CG_NOMEM, "bisect: out of memory writing the result");
done:
    sides_free(sides);
    ctx_free(&c);
    templates_free(&tmpl); /* before the exposed model they borrow */
    exposed_free(&exposed);
    cg_strmap_free(&half);
    if (have_dmap)
        cg_decision_map_free(&dmap);
    return st;
}
