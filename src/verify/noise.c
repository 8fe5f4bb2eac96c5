/*
 * Noise floors of a model and the verdicts judged against them
 * (convgate/noise.h; the rules and the measured multiples are in
 * docs/noise-floor.md).
 *
 * A cg_noise holds three runtimes of one model: the float64 reference, the
 * reference as written (float32), and, with opt.fp16, the float64 kernels
 * with every stored value rounded to fp16 (cg_runtime_options.float64 with
 * node_precision CG_NODE_PREC_FP16 on every node) and, with opt.fp16_sums,
 * the same with the running sums rounded to fp16's significand
 * (CG_NODE_PREC_FP16_SUM11: the floor of a device that sums in fp16; its
 * outputs only, no decision values). Each sample runs on all
 * of them, one after the other; the fp64 run keeps a copy of the values
 * decision nodes read and produce (observed by name), the other runs are
 * compared against those copies as they are produced, so nothing else of a
 * run outlives it.
 */
#include <inttypes.h>
#include <math.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "convgate/noise.h"
#include "verify_internal.h"

/* --- precisions and multiples --------------------------------------------------- */

const char *cg_precision_name(cg_precision p)
{
    return p == CG_PRECISION_FP16 ? "fp16" : "fp32";
}

double cg_precision_unit(cg_precision p)
{
    return p == CG_PRECISION_FP16 ? 0x1p-11 : 0x1p-24;
}

/* The measurements behind these numbers: docs/noise-floor.md. In short:
 * correct fp32 libraries came within 10.3x of the fp32 floor on the zoo's
 * usual outputs and within 51x on the worst (ONNX Runtime's approximated
 * logistic on Silero v6's 1e-3 speech probability), 32x on the backend
 * tests' weighted losses (whose reference accumulates in double); the
 * first results that truly differ sit at 163x (hand-rounded expected
 * values) and 485x (another window formula), wrong kernels at 1e5x-1e7x.
 * The fp16 emulation stayed within 2.8x of the fp16 storage floor. */
void cg_noise_multiples_default(cg_noise_multiples *k)
{
    k->k_fp32 = 100.0;
    k->k_fp16 = 8.0;
    k->fp16_max_rel = 0.05;
}

/* --- error statistics --------------------------------------------------------------- */

#define DIST_MIN_EXP (-64) /* bin 0 starts here (and holds everything below) */

static int dist_bin(double d)
{
    int e;
    double m = frexp(d, &e); /* d = m * 2^e, m in [0.5, 1) */
    /* log2(d) = e - 1 + log2(2m); quarter-octave index within the octave */
    double l = (double)(e - 1) + log2(2.0 * m);
    double b = floor((l - DIST_MIN_EXP) * 4.0);
    if (b < 0)
        return 0;
    if (b >= CG_NOISE_DIST_BINS)
        return CG_NOISE_DIST_BINS - 1;
    return (int)b;
}

static double dist_bin_high(int b)
{
    return exp2((double)(b + 1) / 4.0 + DIST_MIN_EXP);
}

void cg_noise_stats_init(cg_noise_stats *s)
{
    memset(s, 0, sizeof *s);
    cg_metrics_init(&s->m);
    s->ref_lo = INFINITY; /* no reference value seen */
    s->ref_hi = -INFINITY;
}

static bool real_dtype(cg_dtype dt)
{
    return cg_dtype_is_float(dt) || cg_dtype_is_int(dt) || dt == CG_DTYPE_BOOL;
}

cg_status cg_noise_stats_add(cg_noise_stats *s, const cg_tensor *ref, const cg_tensor *got,
                             cg_error *err)
{
    cg_tolerance exact = {0.0, 0.0, true, NULL};
    cg_metrics m;
    cg_status st = cg_compare_tensors(ref, got, &exact, &m, err);
    if (st != CG_OK)
        return st;
    if (m.shape_mismatch)
        return cg_error_set(err, CG_INVALID, "noise: shapes differ (%lld against %lld "
                            "elements)", (long long)ref->numel, (long long)got->numel);
    cg_noise_dist d;
    memset(&d, 0, sizeof d);
    double ref_max = 0.0, ref_lo = INFINITY, ref_hi = -INFINITY;
    double rb[CG_VERIFY_BLOCK], gb[CG_VERIFY_BLOCK];
    for (int64_t i = 0; i < ref->numel; i++) {
        int64_t k = cg_verify_pair_at(ref, got, i, ref->numel, rb, gb);
        double r = rb[k], g = gb[k];
        d.count++;
        if (isfinite(r)) {
            ref_max = fabs(r) > ref_max ? fabs(r) : ref_max;
            ref_lo = r < ref_lo ? r : ref_lo;
            ref_hi = r > ref_hi ? r : ref_hi;
        }
        if (!isfinite(r) || !isfinite(g)) {
            if (isnan(r) && isnan(g))
                d.zero++;
            else if (r == g)
                d.zero++;
            else
                d.nonfinite++;
            continue;
        }
        double a = fabs(g - r);
        if (a == 0)
            d.zero++;
        else
            d.bins[dist_bin(a)]++;
    }
    cg_noise_stats add = {m, d, ref_max, ref_lo, ref_hi};
    cg_noise_stats_merge(s, &add);
    return CG_OK;
}

void cg_noise_stats_merge(cg_noise_stats *a, const cg_noise_stats *b)
{
    if (a->dist.count == 0) {
        *a = *b;
        return;
    }
    cg_metrics_merge(&a->m, &b->m);
    a->ref_max = b->ref_max > a->ref_max ? b->ref_max : a->ref_max;
    a->ref_lo = b->ref_lo < a->ref_lo ? b->ref_lo : a->ref_lo;
    a->ref_hi = b->ref_hi > a->ref_hi ? b->ref_hi : a->ref_hi;
    a->dist.count += b->dist.count;
    a->dist.zero += b->dist.zero;
    a->dist.nonfinite += b->dist.nonfinite;
    for (int i = 0; i < CG_NOISE_DIST_BINS; i++)
        a->dist.bins[i] += b->dist.bins[i];
}

double cg_noise_quantile(const cg_noise_stats *s, double q)
{
    const cg_noise_dist *d = &s->dist;
    if (d->count == 0)
        return 0.0;
    q = q < 0 ? 0 : q > 1 ? 1 : q;
    uint64_t want = (uint64_t)ceil(q * (double)d->count);
    if (want == 0)
        want = 1;
    uint64_t seen = d->zero;
    if (seen >= want)
        return 0.0;
    for (int b = 0; b < CG_NOISE_DIST_BINS; b++) {
        seen += d->bins[b];
        if (seen >= want) {
            double hi = dist_bin_high(b); /* no bin edge above the largest value */
            return hi < s->m.max_abs ? hi : s->m.max_abs;
        }
    }
    return INFINITY;
}

double cg_noise_scale(const cg_noise_stats *s)
{
    return s->ref_max;
}

bool cg_noise_constant(const cg_noise_stats *s, double *value)
{
    if (s->dist.count == 0 || !(s->ref_lo <= s->ref_hi) || s->ref_lo != s->ref_hi)
        return false;
    if (s->ref_lo != 0 && s->dist.count < 2)
        return false;
    if (value)
        *value = s->ref_lo;
    return true;
}

double cg_noise_rel(const cg_noise_stats *s)
{
    double scale = cg_noise_scale(s);
    if (s->m.max_abs == 0)
        return 0.0;
    return scale > 0 ? s->m.max_abs / scale : INFINITY;
}

/* --- the three runs ---------------------------------------------------------------------- */

/* One watched value: read (or produced) by a decision node. */
typedef struct watched {
    cg_noise_value v;
    bool decision_input;  /* floors are measured */
    cg_value *ref;        /* this sample's fp64 value (NULL: not produced yet) */
    cg_value *constant;   /* an initializer's fp64 value (kept for every sample) */
    size_t graph_input;   /* index + 1 of the graph input it is (0: none) */
    bool seen32, seen16;  /* produced by the fp32 / fp16 run this sample */
} watched;

struct cg_noise {
    const cg_model *model;
    cg_noise_options opt;
    cg_runtime *rt64, *rt32, *rt16, *rt16s;
    cg_runtime_options ro64, ro32; /* to make rt64 and rt32 again (rt_ensure) */
    atomic_int threads_wanted; /* cg_noise_set_threads: applied before each run */
    int threads;          /* what the runtimes have */
    bool refs_observed;   /* rt64 and rt32 have the observer (decision values to watch) */
    uint8_t *prec16, *prec16s;
    cg_decision_map dmap;
    cg_noise_output *outputs;
    size_t output_count;
    watched *watch;       /* sorted by name */
    size_t watch_count;
    size_t samples;
    cg_error *run_err;    /* the error of the run the observer serves */
    cg_noise_fp32 *record32;      /* phase 5: where the observer keeps the fp32 values */
    int phase;            /* 0: fp64, 1: fp32, 2: fp16, 3: fp16 sums, 4: probe,
                           * 5: fp32 ahead of fp64 (cg_noise_add_fp32) */
    cg_nonfinite_watch nonfinite; /* the fp16 storage run's non-finite values */
    cg_nonfinite_watch *probe;    /* phase 4: the sites whose fp64 values are wanted */
    cg_run_stop fp16_stop;        /* the fp16 storage run stopped: no fp16 floors */
};

/* The fp16 storage floors are measured on this sample. */
static bool fp16_on(const cg_noise *n)
{
    return n->rt16 && !n->fp16_stop.stopped;
}

static cg_status rt_ensure(cg_noise *n, cg_runtime **rt, const cg_runtime_options *ro,
                           const char *what, cg_error *err);

static int cmp_watch(const void *a, const void *b)
{
    return strcmp(((const watched *)a)->v.name, ((const watched *)b)->v.name);
}

static watched *watch_find(const cg_noise *n, const char *name)
{
    if (!name || !n->watch_count)
        return NULL;
    watched key;
    memset(&key, 0, sizeof key);
    key.v.name = (char *)name;
    return bsearch(&key, n->watch, n->watch_count, sizeof key, cmp_watch);
}

static bool numeric_tensor(const cg_value *v)
{
    return v && v->kind == CG_VALUE_TENSOR && real_dtype(v->tensor.dtype);
}

/* --- runs that stop on a non-finite value ---------------------------------------------- */

void cg_nonfinite_note(cg_nonfinite_watch *w, const cg_node *node, const char *name,
                       const cg_value *value)
{
    if (!w || !w->on || w->count >= CG_NONFINITE_SITES || !name ||
        !numeric_tensor(value) || !cg_dtype_is_float(value->tensor.dtype))
        return;
    const cg_tensor *t = &value->tensor;
    int64_t first = -1;
    uint64_t count = 0;
    /* every value of every node of a target path's runs comes here: read in
     * blocks (one dtype dispatch per block; a call per element was 5% of a
     * litert-gpu gate) */
    double blk[CG_VERIFY_BLOCK];
    for (int64_t at = 0; at < t->numel; at += CG_VERIFY_BLOCK) {
        int64_t len = t->numel - at < CG_VERIFY_BLOCK ? t->numel - at : CG_VERIFY_BLOCK;
        cg_tensor_get_f64_block(t, at, len, blk);
        for (int64_t i = 0; i < len; i++)
            if (!isfinite(blk[i])) {
                first = first < 0 ? at + i : first;
                count++;
            }
    }
    if (!count)
        return;
    for (size_t i = 0; i < w->count; i++)
        if (strcmp(w->sites[i].value, name) == 0)
            return;
    cg_nonfinite_site *s = &w->sites[w->count++];
    memset(s, 0, sizeof *s);
    snprintf(s->node, sizeof s->node, "%s", node && node->name ? node->name : "");
    snprintf(s->op, sizeof s->op, "%s", node && node->op_type ? node->op_type : "?");
    snprintf(s->value, sizeof s->value, "%s", name);
    s->index = first;
    s->count = count;
    s->numel = (uint64_t)t->numel;
    s->got = cg_tensor_get_f64(t, first);
    s->ref = NAN;
}

bool cg_nonfinite_first_new(const cg_nonfinite_watch *w, cg_nonfinite_site *out)
{
    for (size_t i = 0; w && i < w->count; i++) {
        const cg_nonfinite_site *s = &w->sites[i];
        if (!s->ref_known || isfinite(s->ref) || (isinf(s->ref) && s->ref != s->got)) {
            *out = *s;
            return true;
        }
    }
    return false;
}

void cg_run_stop_describe(const cg_run_stop *s, char *buf, size_t cap)
{
    const cg_nonfinite_site *x = &s->site;
    const char *what = isnan(x->got) ? "NaN" : x->got > 0 ? "inf" : "-inf";
    char ref[96];
    if (x->ref_known)
        snprintf(ref, sizeof ref, "where the fp64 reference is %.9g", x->ref);
    else
        snprintf(ref, sizeof ref, "(the fp64 reference was not run)");
    bool overflow = !isnan(x->got) && x->ref_known && fabs(x->ref) > 65504.0;
    char where[160];
    if (x->node[0])
        snprintf(where, sizeof where, "%.47s '%.100s'", x->op, x->node);
    else
        snprintf(where, sizeof where, "%.47s", x->op);
    snprintf(buf, cap, "%s in %s ('%.100s' is %s %s%s), and the run stopped: %.200s",
             overflow ? "fp16 overflow" : "non-finite value", where, x->value, what, ref,
             overflow ? "; fp16 holds at most 65504" : "", s->message);
}

/* Keeps a copy of a watched value the fp32 run made ahead of its fp64 run,
 * in the order the run made them (compared in that order later). */
static cg_status record32_add(cg_noise_fp32 *f, size_t watch, const cg_value *value,
                              cg_error *err)
{
    if (!f)
        return CG_OK;
    if (f->seen_count == f->seen_cap) {
        size_t nc = f->seen_cap ? f->seen_cap * 2 : 8;
        size_t *wi = realloc(f->seen, nc * sizeof *wi);
        if (!wi)
            return cg_error_set(err, CG_NOMEM, "out of memory keeping the float32 values");
        f->seen = wi;
        cg_value **vs = realloc(f->values, nc * sizeof *vs);
        if (!vs)
            return cg_error_set(err, CG_NOMEM, "out of memory keeping the float32 values");
        f->values = vs;
        f->seen_cap = nc;
    }
    f->values[f->seen_count] = NULL;
    cg_status st = cg_value_copy(value, &f->values[f->seen_count], err);
    if (st == CG_OK)
        f->seen[f->seen_count++] = watch;
    return st;
}

/* A decision input's value from the fp32 (phase 1) or fp16 run against
 * the fp64 run's, into that run's floor. */
static cg_status watch_compare(cg_noise *n, watched *w, int phase, const char *name,
                               const cg_value *value)
{
    /* not numeric, or another shape: a decision upstream kept another number
     * of elements in this run (a score threshold's survivors), so the value
     * has no elementwise floor (a flip read from it is then not noise) */
    if (!w->ref || !numeric_tensor(w->ref) || !numeric_tensor(value) ||
        w->ref->tensor.numel != value->tensor.numel) {
        w->v.compared = false;
        return CG_OK;
    }
    cg_noise_stats *s = phase == 1 ? &w->v.fp32 : &w->v.fp16;
    if (phase == 1)
        w->seen32 = true;
    else
        w->seen16 = true;
    cg_status st = cg_noise_stats_add(s, &w->ref->tensor, &value->tensor, n->run_err);
    if (st != CG_OK)
        cg_error_prefix(n->run_err, "value '%s': ", name);
    return st;
}

static cg_status observe(void *user, const cg_node *node, const char *name, const cg_value *value)
{
    cg_noise *n = user;
    if (n->phase == 4) {
        for (size_t i = 0; n->probe && name && i < n->probe->count; i++) {
            cg_nonfinite_site *s = &n->probe->sites[i];
            if (strcmp(s->value, name) != 0 || !numeric_tensor(value) ||
                s->index >= value->tensor.numel)
                continue;
            s->ref = cg_tensor_get_f64(&value->tensor, s->index);
            s->ref_known = true;
        }
        return CG_OK;
    }
    if (n->phase == 2)
        cg_nonfinite_note(&n->nonfinite, node, name, value);
    watched *w = watch_find(n, name);
    if (!w)
        return CG_OK;
    if (n->phase == 5)
        return w->decision_input ? record32_add(n->record32, (size_t)(w - n->watch), value,
                                                n->run_err)
                                 : CG_OK;
    if (n->phase == 0) {
        cg_value_free(w->ref);
        w->ref = NULL;
        return cg_value_copy(value, &w->ref, n->run_err);
    }
    if (!w->decision_input)
        return CG_OK;
    return watch_compare(n, w, n->phase, name, value);
}

/* A float tensor as DOUBLE (what the fp64 reference holds), in place. */
static cg_status promote_double(cg_value *v, cg_error *err)
{
    if (!v || v->kind != CG_VALUE_TENSOR || !cg_dtype_is_float(v->tensor.dtype) ||
        v->tensor.dtype == CG_DTYPE_DOUBLE)
        return CG_OK;
    cg_tensor t;
    cg_status st = cg_tensor_convert(&v->tensor, CG_DTYPE_DOUBLE, &t, err);
    if (st != CG_OK)
        return st;
    cg_tensor_release(&v->tensor);
    v->tensor = t;
    v->seq_dtype = CG_DTYPE_DOUBLE;
    return CG_OK;
}

static cg_status watch_add(cg_noise *n, const char *name, bool input, size_t *cap)
{
    for (size_t i = 0; i < n->watch_count; i++)
        if (strcmp(n->watch[i].v.name, name) == 0) {
            n->watch[i].decision_input = n->watch[i].decision_input || input;
            return CG_OK;
        }
    if (n->watch_count == *cap) {
        size_t nc = *cap ? *cap * 2 : 16;
        watched *g = realloc(n->watch, nc * sizeof *g);
        if (!g)
            return CG_NOMEM;
        n->watch = g;
        *cap = nc;
    }
    watched *w = &n->watch[n->watch_count];
    memset(w, 0, sizeof *w);
    w->v.name = strdup(name);
    if (!w->v.name)
        return CG_NOMEM;
    w->v.compared = true;
    w->decision_input = input;
    cg_noise_stats_init(&w->v.fp32);
    cg_noise_stats_init(&w->v.fp16);
    n->watch_count++;
    return CG_OK;
}

cg_status cg_noise_init(const cg_model *model, const cg_noise_options *opt, cg_noise **out,
                        cg_error *err)
{
    *out = NULL;
    if (!model || !model->graph)
        return cg_error_set(err, CG_USAGE, "noise: the model has no graph");
    const cg_graph *g = model->graph;
    cg_noise *n = calloc(1, sizeof *n);
    if (!n)
        return cg_error_set(err, CG_NOMEM, "out of memory measuring noise floors");
    n->model = model;
    if (opt)
        n->opt = *opt;
    cg_status st = cg_decision_map_build(g, n->opt.types, &n->dmap, err);
    if (st != CG_OK)
        goto fail;

    /* the values decision nodes read (floors) and produce (flips) */
    size_t cap = 0;
    for (size_t i = 0; i < g->node_count; i++) {
        if (!n->dmap.is_decision[i])
            continue;
        const cg_node *nd = &g->nodes[i];
        for (size_t k = 0; k < nd->input_count + nd->output_count; k++) {
            bool input = k < nd->input_count;
            const char *name = input ? nd->inputs[k] : nd->outputs[k - nd->input_count];
            if (!name || !name[0])
                continue;
            if (watch_add(n, name, input, &cap) != CG_OK) {
                st = cg_error_set(err, CG_NOMEM, "out of memory measuring noise floors");
                goto fail;
            }
        }
    }
    if (n->watch_count)
        qsort(n->watch, n->watch_count, sizeof *n->watch, cmp_watch);
    /* values no node produces: initializers (converted once, in double as
     * the fp64 reference reads them) and graph inputs (taken per sample) */
    for (size_t i = 0; i < g->initializer_count; i++) {
        watched *w = watch_find(n, g->initializers[i].name);
        if (!w || w->constant)
            continue;
        if ((st = cg_value_from_tensor_proto(&g->initializers[i], &w->constant, err)) != CG_OK ||
            (st = promote_double(w->constant, err)) != CG_OK) {
            cg_error_prefix(err, "initializer '%s': ", w->v.name);
            goto fail;
        }
    }
    for (size_t i = 0; i < g->input_count; i++) {
        watched *w = watch_find(n, g->inputs[i].name);
        if (w && !w->constant)
            w->graph_input = i + 1;
    }

    n->outputs = calloc(g->output_count + 1, sizeof *n->outputs);
    if (!n->outputs) {
        st = cg_error_set(err, CG_NOMEM, "out of memory measuring noise floors");
        goto fail;
    }
    n->output_count = g->output_count;
    for (size_t i = 0; i < g->output_count; i++) {
        cg_noise_output *o = &n->outputs[i];
        o->v.name = strdup(g->outputs[i].name ? g->outputs[i].name : "");
        o->v.compared = true;
        cg_noise_stats_init(&o->v.fp32);
        cg_noise_stats_init(&o->v.fp16);
        cg_noise_stats_init(&o->v.fp16_sums);
        size_t cnt = cg_decision_upstream(&n->dmap, o->v.name ? o->v.name : "", NULL, 0);
        o->decisions = calloc(cnt + 1, sizeof *o->decisions);
        if (!o->v.name || !o->decisions) {
            st = cg_error_set(err, CG_NOMEM, "out of memory measuring noise floors");
            goto fail;
        }
        o->decision_count = cg_decision_upstream(&n->dmap, o->v.name, o->decisions, cnt);
        o->discontinuous = cg_decision_depends(&n->dmap, o->v.name);
    }

    if (n->opt.recorded) {
        *out = n;
        return CG_OK;
    }
    cg_runtime_options ro;
    cg_runtime_options_default(&ro);
    if (n->opt.max_alloc_bytes)
        ro.max_alloc_bytes = n->opt.max_alloc_bytes;
    ro.threads = n->opt.threads;
    n->threads = n->opt.threads > 1 ? n->opt.threads : 1;
    atomic_init(&n->threads_wanted, n->threads);
    /* the fp32 and fp64 references are observed for the decision values
     * only: with none to watch they run unobserved, as every other
     * reference does, so their constant nodes (an Identity of a weight)
     * fold at init instead of copying on every run, and the fp32 one fuses
     * activations into its convolutions; both compute the same values
     * (fold.c, fuse.c). A probe then builds an observed fp64 runtime. */
    n->refs_observed = n->watch_count > 0;
    ro.observe = n->refs_observed ? observe : NULL;
    ro.observe_user = n->refs_observed ? n : NULL;
    n->ro32 = ro;
    if ((st = cg_runtime_init(model, &ro, &n->rt32, err)) != CG_OK)
        goto fail;
    ro.float64 = true;
    n->ro64 = ro;
    if ((st = cg_runtime_init(model, &ro, &n->rt64, err)) != CG_OK) {
        cg_error_prefix(err, "float64 reference: ");
        goto fail;
    }
    ro.observe = observe;
    ro.observe_user = n;
    if (n->opt.fp16) {
        n->prec16 = malloc(g->node_count + 1);
        if (!n->prec16) {
            st = cg_error_set(err, CG_NOMEM, "out of memory measuring noise floors");
            goto fail;
        }
        memset(n->prec16, CG_NODE_PREC_FP16, g->node_count + 1);
        ro.node_precision = n->prec16;
        if ((st = cg_runtime_init(model, &ro, &n->rt16, err)) != CG_OK) {
            cg_error_prefix(err, "fp16 storage run: ");
            goto fail;
        }
    }
    if (n->opt.fp16 && n->opt.fp16_sums) {
        n->prec16s = malloc(g->node_count + 1);
        if (!n->prec16s) {
            st = cg_error_set(err, CG_NOMEM, "out of memory measuring noise floors");
            goto fail;
        }
        memset(n->prec16s, CG_NODE_PREC_FP16_SUM11, g->node_count + 1);
        ro.node_precision = n->prec16s;
        ro.observe = NULL; /* outputs only */
        ro.observe_user = NULL;
        if ((st = cg_runtime_init(model, &ro, &n->rt16s, err)) != CG_OK) {
            cg_error_prefix(err, "fp16 storage and fp16-significand sums run: ");
            goto fail;
        }
    }
    *out = n;
    return CG_OK;
fail:
    cg_noise_free(n);
    return st;
}

void cg_noise_decision_values_free(cg_noise_decision_values *d)
{
    if (!d)
        return;
    for (size_t i = 0; i < d->count; i++) {
        free(d->names[i]);
        cg_value_free(d->values[i]);
    }
    free(d->names);
    free(d->values);
    memset(d, 0, sizeof *d);
}

const cg_value *cg_noise_decision_value(const cg_noise_decision_values *d, const char *name)
{
    for (size_t i = 0; d && i < d->count; i++)
        if (strcmp(d->names[i], name) == 0)
            return d->values[i];
    return NULL;
}

/* The fp64 value of a watched initializer or graph input, which no node
 * produces: the initializer converted at init, or this sample's input, in
 * double as the fp64 reference reads them. */
static cg_status source_value(const cg_noise *n, watched *w, const cg_named_value *inputs,
                              size_t input_count, cg_error *err)
{
    if (w->constant)
        return cg_value_copy(w->constant, &w->ref, err);
    const char *name = n->model->graph->inputs[w->graph_input - 1].name;
    for (size_t k = 0; k < input_count; k++)
        if (inputs[k].name && inputs[k].value && strcmp(inputs[k].name, name) == 0) {
            cg_status st = cg_value_copy(inputs[k].value, &w->ref, err);
            return st == CG_OK ? promote_double(w->ref, err) : st;
        }
    return CG_OK; /* an input with a default initializer, not fed */
}

/* Floors of a source read by a decision: the fp32 reference reads it
 * exactly (zero), fp16 storage reads it rounded to fp16. */
static cg_status source_floors(cg_noise *n, watched *w, cg_error *err)
{
    if (!numeric_tensor(w->ref) || !cg_dtype_is_float(w->ref->tensor.dtype))
        return CG_OK;
    cg_status st = cg_noise_stats_add(&w->v.fp32, &w->ref->tensor, &w->ref->tensor, err);
    if (st != CG_OK || !fp16_on(n))
        return st;
    cg_value *r = NULL;
    if ((st = cg_value_copy(w->ref, &r, err)) != CG_OK)
        return st;
    double *d = r->tensor.data;
    for (int64_t i = 0; i < r->tensor.numel; i++)
        d[i] = cg_fp16_round(d[i]);
    st = cg_noise_stats_add(&w->v.fp16, &w->ref->tensor, &r->tensor, err);
    cg_value_free(r);
    return st;
}

void cg_noise_set_threads(cg_noise *n, int threads)
{
    if (n && threads >= 0)
        atomic_store(&n->threads_wanted, threads > 1 ? threads : 1);
}

static atomic_size_t thread_switches;

size_t cg_noise_thread_switches(void)
{
    return atomic_load(&thread_switches);
}

/* Gives the references the threads last asked for (cg_noise_set_threads),
 * before a run; a pool that cannot be made leaves the runtimes as they
 * were (the run is not worse for it). */
static void threads_sync(cg_noise *n)
{
    int want = atomic_load(&n->threads_wanted);
    if (want == n->threads)
        return;
    cg_runtime *rts[4] = {n->rt64, n->rt32, n->rt16, n->rt16s};
    for (int i = 0; i < 4; i++) {
        cg_error e;
        cg_error_clear(&e);
        if (rts[i] && cg_runtime_set_threads(rts[i], want, &e) != CG_OK)
            return; /* tried again before the next run */
    }
    n->threads = want;
    atomic_fetch_add(&thread_switches, 1);
}

cg_status cg_noise_probe(cg_noise *n, const cg_named_value *inputs, size_t input_count,
                         cg_nonfinite_watch *w, cg_error *err)
{
    if (!n || n->opt.recorded)
        return cg_error_set(err, CG_USAGE, "noise: recorded floors run nothing");
    cg_named_value *o = NULL;
    size_t c = 0;
    int phase = n->phase;
    threads_sync(n);
    cg_status st = n->refs_observed ? rt_ensure(n, &n->rt64, &n->ro64, "", err) : CG_OK;
    cg_runtime *rt = n->refs_observed ? n->rt64 : NULL;
    if (!rt && st == CG_OK) {
        /* the fp64 reference runs unobserved: one that shows the sites */
        cg_runtime_options ro;
        cg_runtime_options_default(&ro);
        if (n->opt.max_alloc_bytes)
            ro.max_alloc_bytes = n->opt.max_alloc_bytes;
        ro.float64 = true;
        ro.observe = observe;
        ro.observe_user = n;
        ro.threads = atomic_load(&n->threads_wanted);
        st = cg_runtime_init(n->model, &ro, &rt, err);
    }
    n->phase = 4;
    n->probe = w;
    if (st == CG_OK && rt)
        st = cg_runtime_run(rt, inputs, input_count, &o, &c, err);
    n->probe = NULL;
    n->phase = phase;
    cg_runtime_free_outputs(o, c);
    if (rt != n->rt64)
        cg_runtime_free(rt);
    if (st != CG_OK)
        cg_error_prefix(err, "float64 reference: ");
    return st;
}

/* The fp16 storage run failed with st: true (err cleared) when it stopped
 * on a non-finite value the fp64 reference does not have, and from then on
 * the fp16 floors are not measured (those of earlier samples are dropped:
 * a floor of some samples is no floor). */
static bool fp16_stopped(cg_noise *n, const cg_named_value *inputs, size_t input_count,
                         cg_status st, cg_error *err)
{
    cg_nonfinite_site site;
    cg_error perr;
    cg_error_clear(&perr);
    if (st == CG_NOMEM || n->nonfinite.count == 0 ||
        cg_noise_probe(n, inputs, input_count, &n->nonfinite, &perr) != CG_OK ||
        !cg_nonfinite_first_new(&n->nonfinite, &site))
        return false;
    cg_run_stop *s = &n->fp16_stop;
    s->stopped = true;
    s->site = site;
    snprintf(s->message, sizeof s->message, "%.255s", err->msg);
    s->sample = n->samples;
    s->samples = 1;
    for (size_t i = 0; i < n->output_count; i++) {
        cg_noise_stats_init(&n->outputs[i].v.fp16);
        cg_noise_stats_init(&n->outputs[i].v.fp16_sums);
    }
    for (size_t i = 0; i < n->watch_count; i++)
        cg_noise_stats_init(&n->watch[i].v.fp16);
    cg_error_clear(err);
    return true;
}

bool cg_noise_references_observed(const cg_noise *n)
{
    return n && n->refs_observed;
}

const cg_run_stop *cg_noise_fp16_stop(const cg_noise *n)
{
    return n && n->fp16_stop.stopped ? &n->fp16_stop : NULL;
}

static void watch_clear_sample(cg_noise *n)
{
    for (size_t i = 0; i < n->watch_count; i++) {
        cg_value_free(n->watch[i].ref);
        n->watch[i].ref = NULL;
        n->watch[i].seen32 = n->watch[i].seen16 = false;
    }
}

/* Compares output i of one run against the fp64 reference: into its fp32
 * (which 0), fp16 storage (1) or fp16-sums (2) floor. */
static cg_status compare_output(cg_noise_output *o, const cg_value *ref, const cg_value *got,
                                int which, size_t sample, cg_error *err)
{
    if (!numeric_tensor(ref) || !numeric_tensor(got)) {
        o->v.compared = false;
        return CG_OK;
    }
    cg_noise_stats one;
    cg_noise_stats_init(&one);
    cg_status st = cg_noise_stats_add(&one, &ref->tensor, &got->tensor, err);
    if (st != CG_OK) {
        cg_error_prefix(err, "output '%s': ", o->v.name);
        return st;
    }
    one.m.worst_sample = (int64_t)sample;
    cg_noise_stats_merge(which == 2 ? &o->v.fp16_sums : which == 1 ? &o->v.fp16 : &o->v.fp32,
                         &one);
    return CG_OK;
}

void cg_noise_runs_free(cg_noise_runs *r)
{
    if (!r)
        return;
    for (int i = 0; i < CG_NOISE_RUNS; i++)
        cg_runtime_free_outputs(r->out[i], r->count[i]);
    memset(r, 0, sizeof *r);
}

/* The runtime *rt of options ro (n's own copy), made again when first
 * needed after cg_noise_release. */
static cg_status rt_ensure(cg_noise *n, cg_runtime **rt, const cg_runtime_options *ro,
                           const char *what, cg_error *err)
{
    if (*rt)
        return CG_OK;
    cg_runtime_options o = *ro;
    o.threads = n->threads;
    cg_status st = cg_runtime_init(n->model, &o, rt, err);
    if (st != CG_OK)
        cg_error_prefix(err, "%s", what);
    return st;
}

/* The float64 run of one sample: its outputs, and the values watched kept
 * in n->watch[].ref. */
static cg_status run_fp64(cg_noise *n, const cg_named_value *inputs, size_t input_count,
                          cg_named_value **o64, size_t *c64, cg_error *err)
{
    n->run_err = err;
    watch_clear_sample(n);
    n->phase = 0;
    threads_sync(n);
    cg_status st = rt_ensure(n, &n->rt64, &n->ro64, "float64 reference: ", err);
    if (st == CG_OK && (st = cg_runtime_run(n->rt64, inputs, input_count, o64, c64, err)) !=
                           CG_OK)
        cg_error_prefix(err, "float64 reference: ");
    n->run_err = NULL;
    return st;
}

/* The rest of one sample after its float64 run (o64, taken; the watched
 * values in n->watch[].ref): the fp32 and fp16 runs, every comparison with
 * the float64 values, and what the caller asked for. */
static cg_status run_rest(cg_noise *n, const cg_named_value *inputs, size_t input_count,
                          cg_named_value *o64, size_t c64, cg_noise_fp32 *f32,
                          cg_noise_runs *runs, cg_noise_decision_values *decisions,
                          cg_error *err)
{
    cg_named_value *o32 = NULL, *o16 = NULL, *o16s = NULL;
    size_t c32 = 0, c16 = 0, c16s = 0;
    cg_status st = CG_OK;
    n->run_err = err;
    n->phase = 1;
    threads_sync(n);
    if (f32) {
        /* run ahead (cg_noise_add_fp32): its outputs, and its watched
         * values compared now in the order its run made them */
        o32 = f32->out;
        c32 = f32->count;
        f32->out = NULL;
        f32->count = 0;
        for (size_t k = 0; k < f32->seen_count && st == CG_OK; k++) {
            watched *w = &n->watch[f32->seen[k]];
            st = watch_compare(n, w, 1, w->v.name, f32->values[k]);
        }
        cg_noise_fp32_free(f32);
        if (st != CG_OK) {
            cg_error_prefix(err, "float32 reference: ");
            goto done;
        }
    } else {
        if ((st = rt_ensure(n, &n->rt32, &n->ro32, "float32 reference: ", err)) != CG_OK)
            goto done;
        if ((st = cg_runtime_run(n->rt32, inputs, input_count, &o32, &c32, err)) != CG_OK) {
            cg_error_prefix(err, "float32 reference: ");
            goto done;
        }
    }
    if (n->rt16 && !n->fp16_stop.stopped) {
        n->phase = 2;
        memset(&n->nonfinite, 0, sizeof n->nonfinite);
        n->nonfinite.on = true;
        threads_sync(n);
        st = cg_runtime_run(n->rt16, inputs, input_count, &o16, &c16, err);
        n->nonfinite.on = false;
        if (st != CG_OK && !fp16_stopped(n, inputs, input_count, st, err)) {
            cg_error_prefix(err, "fp16 storage run: ");
            goto done;
        }
        st = CG_OK;
    }
    if (n->rt16s && !n->fp16_stop.stopped) {
        n->phase = 3;
        threads_sync(n);
        if ((st = cg_runtime_run(n->rt16s, inputs, input_count, &o16s, &c16s, err)) != CG_OK) {
            cg_error_prefix(err, "fp16 storage and fp16-significand sums run: ");
            goto done;
        }
    }
    for (size_t i = 0; i < n->output_count && i < c64; i++) {
        if ((st = compare_output(&n->outputs[i], o64[i].value, i < c32 ? o32[i].value : NULL,
                                 0, n->samples, err)) != CG_OK)
            goto done;
        if (o16 && (st = compare_output(&n->outputs[i], o64[i].value,
                                            i < c16 ? o16[i].value : NULL, 1, n->samples,
                                            err)) != CG_OK)
            goto done;
        if (o16s && (st = compare_output(&n->outputs[i], o64[i].value,
                                             i < c16s ? o16s[i].value : NULL, 2, n->samples,
                                             err)) != CG_OK)
            goto done;
    }
    for (size_t i = 0; i < n->watch_count && st == CG_OK; i++) {
        watched *w = &n->watch[i];
        bool source = !w->ref && (w->constant || w->graph_input);
        if (source && (st = source_value(n, w, inputs, input_count, err)) != CG_OK)
            break;
        if (source && w->decision_input && w->ref)
            st = source_floors(n, w, err);
        /* a decision input neither produced by both runs nor a source (a
         * value inside a subgraph) has no floor here */
        else if (w->decision_input && (!w->seen32 || (fp16_on(n) && !w->seen16)))
            w->v.compared = false;
    }
    if (st != CG_OK)
        goto done;
    if (decisions && n->watch_count) {
        decisions->names = calloc(n->watch_count, sizeof *decisions->names);
        decisions->values = calloc(n->watch_count, sizeof *decisions->values);
        if (!decisions->names || !decisions->values) {
            free(decisions->names);
            free(decisions->values);
            memset(decisions, 0, sizeof *decisions);
            st = cg_error_set(err, CG_NOMEM, "out of memory keeping the decision values");
            goto done;
        }
        for (size_t i = 0; i < n->watch_count; i++) {
            watched *w = &n->watch[i];
            if (!w->ref)
                continue;
            char *nm = strdup(n->watch[i].v.name);
            if (!nm) {
                cg_noise_decision_values_free(decisions);
                st = cg_error_set(err, CG_NOMEM, "out of memory keeping the decision values");
                goto done;
            }
            decisions->names[decisions->count] = nm;
            decisions->values[decisions->count++] = n->watch[i].ref;
            n->watch[i].ref = NULL;
        }
    }
    n->samples++;
    if (runs) {
        runs->out[CG_RUN_FP64] = o64;
        runs->count[CG_RUN_FP64] = c64;
        runs->out[CG_RUN_FP32] = o32;
        runs->count[CG_RUN_FP32] = c32;
        runs->out[CG_RUN_FP16] = o16;
        runs->count[CG_RUN_FP16] = c16;
        runs->out[CG_RUN_FP16_SUMS] = o16s;
        runs->count[CG_RUN_FP16_SUMS] = c16s;
        o64 = o32 = o16 = o16s = NULL;
        c64 = c32 = c16 = c16s = 0;
    }
done:
    n->run_err = NULL;
    watch_clear_sample(n);
    cg_runtime_free_outputs(o64, c64);
    cg_runtime_free_outputs(o32, c32);
    cg_runtime_free_outputs(o16, c16);
    cg_runtime_free_outputs(o16s, c16s);
    return st;
}

cg_status cg_noise_add_sample(cg_noise *n, const cg_named_value *inputs, size_t input_count,
                              cg_noise_runs *runs, cg_noise_decision_values *decisions,
                              cg_error *err)
{
    cg_named_value *o64 = NULL;
    size_t c64 = 0;
    if (runs)
        memset(runs, 0, sizeof *runs);
    if (decisions)
        memset(decisions, 0, sizeof *decisions);
    if (n->opt.recorded)
        return cg_error_set(err, CG_USAGE, "noise: recorded floors run nothing");
    cg_status st = run_fp64(n, inputs, input_count, &o64, &c64, err);
    if (st != CG_OK) {
        cg_runtime_free_outputs(o64, c64);
        watch_clear_sample(n);
        return st;
    }
    return run_rest(n, inputs, input_count, o64, c64, NULL, runs, decisions, err);
}

void cg_noise_fp64_free(cg_noise_fp64 *f)
{
    if (!f)
        return;
    cg_runtime_free_outputs(f->out, f->count);
    for (size_t i = 0; i < f->watch_count; i++)
        cg_value_free(f->watched[i]);
    free(f->watched);
    memset(f, 0, sizeof *f);
}

cg_status cg_noise_add_fp64(cg_noise *n, const cg_named_value *inputs, size_t input_count,
                            cg_noise_fp64 *f, cg_error *err)
{
    memset(f, 0, sizeof *f);
    if (n->opt.recorded)
        return cg_error_set(err, CG_USAGE, "noise: recorded floors run nothing");
    f->watched = calloc(n->watch_count + 1, sizeof *f->watched);
    if (!f->watched)
        return cg_error_set(err, CG_NOMEM, "out of memory keeping the float64 values");
    cg_status st = run_fp64(n, inputs, input_count, &f->out, &f->count, err);
    /* the watched values move out, for this sample's cg_noise_add_rest */
    for (size_t i = 0; i < n->watch_count; i++) {
        f->watched[i] = n->watch[i].ref;
        n->watch[i].ref = NULL;
    }
    f->watch_count = n->watch_count;
    if (st != CG_OK)
        cg_noise_fp64_free(f);
    return st;
}

void cg_noise_fp32_free(cg_noise_fp32 *f)
{
    if (!f)
        return;
    cg_runtime_free_outputs(f->out, f->count);
    for (size_t i = 0; i < f->seen_count; i++)
        cg_value_free(f->values[i]);
    free(f->values);
    free(f->seen);
    memset(f, 0, sizeof *f);
}

cg_status cg_noise_add_fp32(cg_noise *n, const cg_named_value *inputs, size_t input_count,
                            cg_noise_fp32 *f, cg_error *err)
{
    memset(f, 0, sizeof *f);
    if (n->opt.recorded)
        return cg_error_set(err, CG_USAGE, "noise: recorded floors run nothing");
    n->run_err = err;
    n->record32 = f;
    n->phase = 5;
    threads_sync(n);
    cg_status st = rt_ensure(n, &n->rt32, &n->ro32, "float32 reference: ", err);
    if (st == CG_OK && (st = cg_runtime_run(n->rt32, inputs, input_count, &f->out, &f->count,
                                            err)) != CG_OK)
        cg_error_prefix(err, "float32 reference: ");
    n->record32 = NULL;
    n->run_err = NULL;
    if (st != CG_OK)
        cg_noise_fp32_free(f);
    return st;
}

cg_status cg_noise_add_rest(cg_noise *n, const cg_named_value *inputs, size_t input_count,
                            cg_noise_fp64 *f, cg_noise_fp32 *f32, cg_noise_runs *runs,
                            cg_noise_decision_values *decisions, cg_error *err)
{
    if (runs)
        memset(runs, 0, sizeof *runs);
    if (decisions)
        memset(decisions, 0, sizeof *decisions);
    if (f->watch_count != n->watch_count) {
        cg_noise_fp64_free(f);
        cg_noise_fp32_free(f32);
        return cg_error_set(err, CG_USAGE, "noise: float64 values of another model");
    }
    /* the float64 values back where the fp32 run's observer compares */
    watch_clear_sample(n);
    for (size_t i = 0; i < n->watch_count; i++) {
        n->watch[i].ref = f->watched[i];
        f->watched[i] = NULL;
    }
    cg_named_value *o64 = f->out;
    size_t c64 = f->count;
    f->out = NULL;
    f->count = 0;
    cg_noise_fp64_free(f);
    return run_rest(n, inputs, input_count, o64, c64, f32, runs, decisions, err);
}

void cg_noise_release(cg_noise *n, bool fp64, bool fp32)
{
    if (!n)
        return;
    if (fp64) {
        cg_runtime_free(n->rt64);
        n->rt64 = NULL;
    }
    if (fp32) {
        cg_runtime_free(n->rt32);
        n->rt32 = NULL;
    }
}

/* One recorded maximum as statistics: max |d| over `count` elements (the
 * distribution is not recorded: every element is put in the maximum's bin,
 * so quantiles read as the maximum). */
static void recorded_stats(cg_noise_stats *s, double max, double scale, uint64_t count)
{
    cg_noise_stats one;
    cg_noise_stats_init(&one);
    one.ref_max = scale;
    one.ref_lo = -scale;
    one.ref_hi = scale;
    one.m.count = one.dist.count = count ? count : 1;
    one.m.max_abs = max;
    if (isinf(max))
        one.dist.nonfinite = one.dist.count;
    else if (max == 0)
        one.dist.zero = one.dist.count;
    else
        one.dist.bins[dist_bin(max)] = one.dist.count;
    cg_noise_stats_merge(s, &one);
}

cg_status cg_noise_add_recorded(cg_noise *n, size_t output, const cg_output_floor *f,
                                cg_error *err)
{
    if (!n || output >= n->output_count || !f)
        return cg_error_set(err, CG_USAGE, "noise: output %zu has no recorded floor", output);
    cg_noise_output *o = &n->outputs[output];
    if (!f->known || !(f->fp32 >= 0) || !(f->scale >= 0)) {
        o->v.compared = false;
        return CG_OK;
    }
    recorded_stats(&o->v.fp32, f->fp32, f->scale, f->count);
    if (f->fp16 >= 0)
        recorded_stats(&o->v.fp16, f->fp16, f->scale, f->count);
    if (f->fp16_sums >= 0)
        recorded_stats(&o->v.fp16_sums, f->fp16_sums, f->scale, f->count);
    if (output == 0)
        n->samples++;
    return CG_OK;
}

size_t cg_noise_sample_count(const cg_noise *n)
{
    return n ? n->samples : 0;
}

size_t cg_noise_output_count(const cg_noise *n)
{
    return n ? n->output_count : 0;
}

const cg_noise_output *cg_noise_output_get(const cg_noise *n, size_t i)
{
    return n && i < n->output_count ? &n->outputs[i] : NULL;
}

const cg_noise_value *cg_noise_value_find(const cg_noise *n, const char *name)
{
    const watched *w = watch_find(n, name);
    return w && w->decision_input ? &w->v : NULL;
}

const cg_decision_map *cg_noise_decisions(const cg_noise *n)
{
    return n ? &n->dmap : NULL;
}

const cg_model *cg_noise_model(const cg_noise *n)
{
    return n ? n->model : NULL;
}

void cg_noise_free(cg_noise *n)
{
    if (!n)
        return;
    cg_runtime_free(n->rt64);
    cg_runtime_free(n->rt32);
    cg_runtime_free(n->rt16);
    cg_runtime_free(n->rt16s);
    free(n->prec16);
    free(n->prec16s);
    for (size_t i = 0; i < n->output_count; i++) {
        free(n->outputs[i].v.name);
        free(n->outputs[i].decisions);
    }
    free(n->outputs);
    for (size_t i = 0; i < n->watch_count; i++) {
        free(n->watch[i].v.name);
        cg_value_free(n->watch[i].ref);
        cg_value_free(n->watch[i].constant);
    }
    free(n->watch);
    cg_decision_map_free(&n->dmap);
    free(n);
}

/* --- a target against the floors ----------------------------------------------------------- */

cg_status cg_noise_capture_nonfinite(void *user, const cg_node *node, const char *name,
                                     const cg_value *value)
{
    cg_noise_capture *c = user;
    cg_nonfinite_note(&c->nonfinite, node, name, value);
    return CG_OK;
}

cg_status cg_noise_capture_observe(void *user, const cg_node *node, const char *name,
                                   const cg_value *value)
{
    cg_noise_capture *c = user;
    (void)node;
    if (!watch_find(c->noise, name) || cg_noise_decision_value(&c->values, name))
        return CG_OK;
    cg_noise_decision_values *d = &c->values;
    size_t cap = c->noise->watch_count;
    if (!d->names) {
        d->names = calloc(cap + 1, sizeof *d->names);
        d->values = calloc(cap + 1, sizeof *d->values);
        if (!d->names || !d->values)
            return cg_error_set(c->err, CG_NOMEM, "out of memory keeping decision values");
    }
    if (d->count >= cap)
        return CG_OK;
    cg_value *copy = NULL;
    char *nm = strdup(name);
    cg_status st = nm ? cg_value_copy(value, &copy, c->err)
                      : cg_error_set(c->err, CG_NOMEM, "out of memory keeping decision values");
    if (st != CG_OK) {
        free(nm);
        return st;
    }
    d->names[d->count] = nm;
    d->values[d->count++] = copy;
    return CG_OK;
}

cg_status cg_noise_tally_init(const cg_noise *n, cg_noise_tally *t, cg_error *err)
{
    memset(t, 0, sizeof *t);
    size_t c = n->output_count;
    t->errors = calloc(c + 1, sizeof *t->errors);
    t->flips = calloc(c + 1, sizeof *t->flips);
    t->flips_compared = calloc(c + 1, sizeof *t->flips_compared);
    if (!t->errors || !t->flips || !t->flips_compared) {
        cg_noise_tally_free(t);
        return cg_error_set(err, CG_NOMEM, "out of memory tallying a target's errors");
    }
    t->output_count = c;
    for (size_t i = 0; i < c; i++) {
        cg_noise_stats_init(&t->errors[i]);
        cg_flip_stats_init(&t->flips[i]);
    }
    return CG_OK;
}

void cg_noise_tally_free(cg_noise_tally *t)
{
    if (!t)
        return;
    free(t->errors);
    free(t->flips);
    free(t->flips_compared);
    memset(t, 0, sizeof *t);
}

void cg_metrics_stopped(const cg_tensor *ref, cg_metrics *m)
{
    cg_metrics_init(m);
    uint64_t count = ref ? (uint64_t)ref->numel : 0;
    m->count = count;
    m->mismatches = count;
    m->max_abs = INFINITY;
    m->max_rel = INFINITY;
    m->worst_index = count ? 0 : -1;
    m->worst_ref = ref && count ? cg_tensor_get_f64(ref, 0) : NAN;
    m->worst_got = NAN;
    m->hist[CG_HIST_BINS - 1] = count;
    m->bit_identical = false;
    m->pass = false;
    m->cosine = m->pearson = 0.0;
    m->worst_sample = 0;
}

void cg_noise_tally_add_stopped(const cg_noise *n, cg_noise_tally *t,
                                const cg_named_value *ref64, size_t ref_count, size_t sample)
{
    for (size_t i = 0; i < t->output_count && i < n->output_count; i++) {
        const cg_value *r = NULL;
        for (size_t k = 0; k < ref_count && !r; k++)
            if (ref64[k].name && strcmp(ref64[k].name, n->outputs[i].v.name) == 0)
                r = ref64[k].value;
        cg_noise_stats one;
        cg_noise_stats_init(&one);
        cg_metrics_stopped(numeric_tensor(r) ? &r->tensor : NULL, &one.m);
        one.m.worst_sample = (int64_t)sample;
        one.dist.count = one.dist.nonfinite = one.m.count ? one.m.count : 1;
        for (int64_t e = 0; numeric_tensor(r) && e < r->tensor.numel; e++) {
            double v = cg_tensor_get_f64(&r->tensor, e);
            if (isfinite(v)) {
                one.ref_max = fabs(v) > one.ref_max ? fabs(v) : one.ref_max;
                one.ref_lo = v < one.ref_lo ? v : one.ref_lo;
                one.ref_hi = v > one.ref_hi ? v : one.ref_hi;
            }
        }
        cg_noise_stats_merge(&t->errors[i], &one);
    }
}

static const cg_tensor *dec_tensor(const cg_noise_decision_values *d, const char *name)
{
    const cg_value *v = name && name[0] ? cg_noise_decision_value(d, name) : NULL;
    return numeric_tensor(v) ? &v->tensor : NULL;
}

/* The floor of a decision's inputs at one precision: the sum over its
 * float inputs of their max |d| (a comparison's a - b carries both). */
static double decision_floor(const cg_noise *n, const cg_node *nd, bool fp16)
{
    double f = 0.0;
    for (size_t i = 0; i < nd->input_count; i++) {
        const cg_noise_value *v = nd->inputs[i] && nd->inputs[i][0]
                                      ? cg_noise_value_find(n, nd->inputs[i])
                                      : NULL;
        const cg_noise_stats *s = v && v->compared ? (fp16 ? &v->fp16 : &v->fp32) : NULL;
        if (s && s->dist.count)
            f += s->m.max_abs;
    }
    return f;
}

/* Flips of the decisions upstream of output o on one sample. */
static cg_status tally_flips(const cg_noise *n, const cg_noise_output *o,
                             const cg_noise_decision_values *ref_dec,
                             const cg_noise_decision_values *got_dec,
                             const cg_noise_multiples *k, cg_flip_stats *acc, bool *compared,
                             cg_error *err)
{
    const cg_graph *g = n->model->graph;
    for (size_t d = 0; d < o->decision_count; d++) {
        const cg_node *nd = &g->nodes[o->decisions[d]];
        const cg_tensor *ins[16] = {NULL}, *outs[16] = {NULL};
        size_t ni = nd->input_count < 16 ? nd->input_count : 16;
        size_t no = nd->output_count < 16 ? nd->output_count : 16;
        for (size_t i = 0; i < ni; i++)
            ins[i] = dec_tensor(ref_dec, nd->inputs[i]);
        for (size_t i = 0; i < no; i++)
            outs[i] = dec_tensor(ref_dec, nd->outputs[i]);
        for (size_t i = 0; i < no; i++) {
            const cg_tensor *got = dec_tensor(got_dec, nd->outputs[i]);
            if (!outs[i] || !got)
                continue;
            cg_flip_stats f;
            cg_error local;
            cg_error_clear(&local);
            cg_status st = cg_decision_flips(nd, ins, ni, outs, no, i, got, decision_floor(n, nd,
                                             false), decision_floor(n, nd, true), k, &f, &local);
            if (st == CG_USAGE) /* not a decision output (TopK's values) */
                continue;
            if (st != CG_OK)
                return cg_error_set(err, st, "%s", local.msg);
            cg_flip_stats_merge(acc, &f);
            *compared = true;
        }
    }
    return CG_OK;
}

cg_status cg_noise_tally_add(const cg_noise *n, cg_noise_tally *t, const cg_named_value *ref64,
                             size_t ref_count, const cg_named_value *got, size_t got_count,
                             const cg_noise_decision_values *ref_dec,
                             const cg_noise_decision_values *got_dec,
                             const cg_noise_multiples *k, size_t sample, cg_error *err)
{
    cg_noise_multiples dk;
    if (!k) {
        cg_noise_multiples_default(&dk);
        k = &dk;
    }
    for (size_t i = 0; i < t->output_count && i < ref_count && i < got_count; i++) {
        const cg_noise_output *o = &n->outputs[i];
        if (!numeric_tensor(ref64[i].value) || !numeric_tensor(got[i].value))
            continue;
        cg_noise_stats one;
        cg_noise_stats_init(&one);
        cg_status st = cg_noise_stats_add(&one, &ref64[i].value->tensor, &got[i].value->tensor,
                                          err);
        if (st != CG_OK) {
            cg_error_prefix(err, "output '%s': ", o->v.name);
            return st;
        }
        one.m.worst_sample = (int64_t)sample;
        cg_noise_stats_merge(&t->errors[i], &one);
        if (o->discontinuous && ref_dec && got_dec &&
            (st = tally_flips(n, o, ref_dec, got_dec, k, &t->flips[i], &t->flips_compared[i],
                              err)) != CG_OK)
            return st;
    }
    return CG_OK;
}

/* --- verdicts ------------------------------------------------------------------------------ */

const char *cg_verdict_name(cg_verdict v)
{
    switch (v) {
    case CG_VERDICT_MATCH_FP32: return "matches (fp32 noise)";
    case CG_VERDICT_MATCH_FP16: return "matches at fp16 precision";
    case CG_VERDICT_PRECISION: return "precision breakdown";
    case CG_VERDICT_WRONG: return "wrong result";
    }
    return "?";
}

bool cg_verdict_passes(cg_verdict v)
{
    return v == CG_VERDICT_MATCH_FP32 || v == CG_VERDICT_MATCH_FP16;
}

/* max(measured floor, u x scale); the measured floor may be +inf. */
static double effective_floor(const cg_noise_stats *s, cg_precision p, double scale)
{
    double u = cg_precision_unit(p) * scale;
    double f = s->dist.count ? s->m.max_abs : 0.0;
    return f > u ? f : u;
}

double cg_noise_limit(const cg_noise_value *fl, cg_precision precision,
                      const cg_noise_multiples *k)
{
    cg_noise_multiples dk;
    if (!k) {
        cg_noise_multiples_default(&dk);
        k = &dk;
    }
    double scale = cg_noise_scale(&fl->fp32);
    double lim = k->k_fp32 * effective_floor(&fl->fp32, CG_PRECISION_FP32, scale);
    if (precision == CG_PRECISION_FP16) {
        double l16 = k->k_fp16 * effective_floor(&fl->fp16, CG_PRECISION_FP16, scale);
        lim = l16 > lim ? l16 : lim;
    }
    return lim;
}

static double ratio_of(double e, double f)
{
    if (e == 0)
        return 0.0;
    if (isnan(e))
        return NAN;
    return f > 0 ? e / f : INFINITY;
}

/* Flips all explained by the noise of the given precision. */
static bool flips_are_noise(const cg_flip_stats *f, cg_precision p)
{
    if (!f || f->flips == 0)
        return true;
    if (!f->margin_known)
        return false;
    return (p == CG_PRECISION_FP16 ? f->noise_fp16 : f->noise_fp32) == f->flips;
}

static cg_status judge_flips(const cg_judge_input *in, cg_judgement *out, cg_error *err)
{
    const cg_flip_stats *f = in->flips;
    char where[200];
    snprintf(where, sizeof where, "%llu of %llu decisions flipped, largest margin %.3g at '%.100s'",
             (unsigned long long)f->flips, (unsigned long long)f->decisions, f->max_margin,
             f->node);
    if (!f->margin_known)
        snprintf(where, sizeof where, "%llu of %llu decisions flipped at '%.100s' (no margin rule "
                 "for the op)", (unsigned long long)f->flips, (unsigned long long)f->decisions,
                 f->node[0] ? f->node : "a decision");
    out->by_flips = true;
    if (flips_are_noise(f, CG_PRECISION_FP32)) {
        out->verdict = CG_VERDICT_MATCH_FP32;
        snprintf(out->reason, sizeof out->reason, "%s, every one within the fp32 noise of its "
                 "input", where);
        return CG_OK;
    }
    if (in->precision == CG_PRECISION_FP16 && flips_are_noise(f, CG_PRECISION_FP16)) {
        out->verdict = CG_VERDICT_MATCH_FP16;
        snprintf(out->reason, sizeof out->reason, "%s, every one within the fp16 storage noise "
                 "of its input", where);
        return CG_OK;
    }
    if (in->precision == CG_PRECISION_FP32) {
        out->verdict = CG_VERDICT_WRONG;
        snprintf(out->reason, sizeof out->reason, "%s: beyond the fp32 noise of its input", where);
        return CG_OK;
    }
    if (!in->flips_fp32 && !in->flips_acc32)
        return cg_error_set(err, CG_USAGE, "noise: output '%s': fp16 decisions beyond the noise "
                            "need an fp32 rerun to be judged", in->floor->v.name);
    if ((in->flips_acc32 && flips_are_noise(in->flips_acc32, CG_PRECISION_FP16)) ||
        (in->flips_fp32 && flips_are_noise(in->flips_fp32, CG_PRECISION_FP32))) {
        out->verdict = CG_VERDICT_PRECISION;
        snprintf(out->reason, sizeof out->reason, "%s; in %s they are within the noise", where,
                 in->flips_acc32 && flips_are_noise(in->flips_acc32, CG_PRECISION_FP16)
                     ? "fp32 accumulation" : "fp32");
        return CG_OK;
    }
    out->verdict = CG_VERDICT_WRONG;
    snprintf(out->reason, sizeof out->reason, "%s, in fp32 too", where);
    return CG_OK;
}

/* What fl->fp16 is: the storage floor, or the fp16-sums floor of a device
 * class that sums in fp16 (cg_noise_output_sums). */
static const char *f16_floor_name(const cg_noise_value *fl)
{
    return fl->fp16_is_sums ? "fp16-sums floor" : "fp16 storage floor";
}

void cg_noise_output_sums(const cg_noise_output *o, cg_noise_output *out)
{
    *out = *o;
    if (o->v.fp16_sums.dist.count > 0) {
        out->v.fp16 = o->v.fp16_sums;
        out->v.fp16_is_sums = true;
    }
}

bool cg_noise_within(const cg_noise_value *fl, cg_precision precision, const cg_metrics *error,
                     const cg_noise_multiples *k, cg_judgement *out)
{
    cg_noise_multiples dk;
    memset(out, 0, sizeof *out);
    if (!k) {
        cg_noise_multiples_default(&dk);
        k = &dk;
    }
    bool fp16 = precision == CG_PRECISION_FP16;
    double scale = cg_noise_scale(&fl->fp32);
    double f32 = effective_floor(&fl->fp32, CG_PRECISION_FP32, scale);
    double f16 = effective_floor(&fl->fp16, CG_PRECISION_FP16, scale);
    double e = error->max_abs;
    out->scale = scale;
    out->error = e;
    out->against = precision;
    out->floor = fp16 ? f16 : f32;
    out->ratio = ratio_of(e, out->floor);

    const char *nonfinite = isinf(e) ? "inf/NaN where the fp64 reference is finite; " : "";
    double r32 = ratio_of(e, f32);
    if (r32 <= k->k_fp32 && !isinf(f32)) {
        out->verdict = CG_VERDICT_MATCH_FP32;
        out->against = CG_PRECISION_FP32;
        out->floor = f32;
        out->ratio = r32;
        snprintf(out->reason, sizeof out->reason, "%.3gx the fp32 noise floor (max |d| %.3g, "
                 "floor %.3g)", r32, e, f32);
        return true;
    }
    if (!fp16) {
        if (isinf(f32)) { /* the fp32 reference itself overflows */
            out->verdict = CG_VERDICT_PRECISION;
            snprintf(out->reason, sizeof out->reason, "%soverflows in float32: the fp32 "
                     "reference does too", nonfinite);
            return false;
        }
        out->verdict = CG_VERDICT_WRONG;
        snprintf(out->reason, sizeof out->reason, "%s%.3gx the fp32 noise floor (max |d| %.3g, "
                 "floor %.3g, limit %gx)", nonfinite, r32, e, f32, k->k_fp32);
        return false;
    }
    /* at fp16 precision: near the fp16 storage floor, and a small part of
     * the output (where fp16 storage alone is not, matching it is not enough) */
    double rel_max = k->fp16_max_rel * scale;
    double r16 = ratio_of(e, f16);
    if (r16 <= k->k_fp16 && e <= rel_max) {
        out->verdict = CG_VERDICT_MATCH_FP16;
        snprintf(out->reason, sizeof out->reason, "%.3gx the %s (max |d| %.3g, floor %.3g)", r16,
                 f16_floor_name(fl), e, f16);
        return true;
    }
    out->verdict = CG_VERDICT_PRECISION; /* until the reruns say otherwise */
    if (isinf(e))
        snprintf(out->reason, sizeof out->reason, "%s%s %.3g", nonfinite, f16_floor_name(fl),
                 f16);
    else if (e > rel_max)
        snprintf(out->reason, sizeof out->reason, "max |d| %.3g is %.3g of the output's scale "
                 "%.3g (limit %g; %s alone: %.3g)", e, scale > 0 ? e / scale : INFINITY,
                 scale, k->fp16_max_rel, fl->fp16_is_sums ? "fp16 storage and sums" : "fp16 storage",
                 isfinite(f16) && scale > 0 ? f16 / scale : INFINITY);
    else
        snprintf(out->reason, sizeof out->reason, "%.3gx the %s (max |d| %.3g, floor %.3g)", r16,
                 f16_floor_name(fl), e, f16);
    return false;
}

static cg_status judge(const cg_judge_input *in, const cg_noise_multiples *k, cg_judgement *out,
                       cg_error *err);

cg_status cg_noise_judge(const cg_judge_input *in, const cg_noise_multiples *k,
                         cg_judgement *out, cg_error *err)
{
    cg_status st = judge(in, k, out, err);
    double c;
    if (st != CG_OK || !cg_noise_constant(&in->floor->v.fp32, &c))
        return st;
    /* a constant reference: say that the verdict judges nothing */
    const cg_noise_stats *s = &in->floor->v.fp32;
    char why[sizeof out->reason];
    memcpy(why, out->reason, sizeof why);
    out->vacuous = true;
    out->constant = c;
    snprintf(out->reason, sizeof out->reason, "vacuous: the fp64 reference is %.9g on every "
             "one of its %llu elements over the samples, so this comparison judges nothing; "
             "%.300s", c, (unsigned long long)s->dist.count, why);
    return st;
}

static cg_status judge(const cg_judge_input *in, const cg_noise_multiples *k, cg_judgement *out,
                       cg_error *err)
{
    cg_noise_multiples dk;
    memset(out, 0, sizeof *out);
    if (!k) {
        cg_noise_multiples_default(&dk);
        k = &dk;
    }
    if (!in || !in->floor || !in->error)
        return cg_error_set(err, CG_USAGE, "noise: judge needs the floors and the error");
    const cg_noise_value *fl = &in->floor->v;
    if (!fl->compared || fl->fp32.dist.count == 0)
        return cg_error_set(err, CG_USAGE, "noise: output '%s' has no measured floor",
                            fl->name);
    if (in->flips && in->flips->flips > 0) {
        cg_noise_within(fl, in->precision, in->error, k, out);
        return judge_flips(in, out, err);
    }
    if (cg_noise_within(fl, in->precision, in->error, k, out) ||
        in->precision != CG_PRECISION_FP16)
        return CG_OK;
    double scale = out->scale;
    double f32 = effective_floor(&fl->fp32, CG_PRECISION_FP32, scale);
    double f16 = effective_floor(&fl->fp16, CG_PRECISION_FP16, scale);
    double rel_max = k->fp16_max_rel * scale;
    const char *nonfinite = "";
    char why[sizeof out->reason];
    memcpy(why, out->reason, sizeof why);
    if (!in->fp32 && !in->acc32)
        return cg_error_set(err, CG_USAGE, "noise: output '%s': an fp16 result beyond its floor "
                            "needs an fp32 rerun to tell precision from a wrong kernel",
                            fl->name);
    bool storage_breaks = !(f16 <= rel_max);
    double ea = in->acc32 ? in->acc32->max_abs : INFINITY;
    double ra = ratio_of(ea, f16);
    double rf = in->fp32 ? ratio_of(in->fp32->max_abs, f32) : INFINITY;
    if (in->acc32 && ra <= k->k_fp16 && ea <= rel_max) {
        out->verdict = CG_VERDICT_PRECISION;
        snprintf(out->reason, sizeof out->reason, "%s%.380s; with fp32 accumulation %.3gx the "
                 "fp16 floor: fp16 accumulation", nonfinite, why, ra);
        return CG_OK;
    }
    if (in->fp32 && rf <= k->k_fp32) {
        out->verdict = CG_VERDICT_PRECISION;
        snprintf(out->reason, sizeof out->reason, "%s%.380s; in fp32 %.3gx the fp32 floor: fp16 %s",
                 nonfinite, why, rf, storage_breaks ? "storage" : "arithmetic");
        return CG_OK;
    }
    if (!in->fp32)
        return cg_error_set(err, CG_USAGE, "noise: output '%s': still beyond the floor with fp32 "
                            "accumulation; an fp32 rerun tells precision from a wrong kernel",
                            fl->name);
    out->verdict = CG_VERDICT_WRONG;
    snprintf(out->reason, sizeof out->reason, "%s%.380s; in fp32 still %.3gx the fp32 floor",
             nonfinite, why, rf);
    return CG_OK;
}

cg_status cg_noise_judge_tally(const cg_noise_output *o, size_t i, cg_precision precision,
                               const cg_noise_tally *t, const cg_noise_tally *acc32,
                               const cg_noise_tally *fp32, const cg_noise_multiples *k,
                               cg_judgement *out, cg_error *err)
{
    if (!t || i >= t->output_count || (acc32 && i >= acc32->output_count) ||
        (fp32 && i >= fp32->output_count))
        return cg_error_set(err, CG_USAGE, "noise: output %zu is not in the tally", i);
    cg_judge_input in;
    memset(&in, 0, sizeof in);
    in.precision = precision;
    in.floor = o;
    in.error = &t->errors[i].m;
    in.acc32 = acc32 ? &acc32->errors[i].m : NULL;
    in.fp32 = fp32 ? &fp32->errors[i].m : NULL;
    if (o->discontinuous && t->flips_compared[i]) {
        in.flips = &t->flips[i];
        in.flips_acc32 = acc32 ? &acc32->flips[i] : NULL;
        in.flips_fp32 = fp32 ? &fp32->flips[i] : NULL;
    }
    return cg_noise_judge(&in, k, out, err);
}
