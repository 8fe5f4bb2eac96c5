/*
 * A target judged against a model's noise floors (convgate/noise.h): its
 * target path and, when the path computes in fp16, the two reruns that
 * tell precision from a wrong kernel (fp32 accumulation; everything in
 * fp32), each tallied against the fp64 reference sample by sample. The
 * paths are rebuilt when a sample's dims differ from the previous one's
 * (XNNPACK compiles fixed shapes); every path's observer keeps the values
 * the decision analysis watches, for the flip counts.
 *
 * A path that sums in fp16 is judged against the fp16-sums floor. With
 * base.device_classes and a target naming two device classes, the path as
 * placed is the class that sums in fp16 and the fp32-accumulation rerun is
 * the class that sums in fp32: both judged on the same three runs.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "convgate/noise.h"
#include "convgate/targetpath.h"
#include "verify_internal.h"

/* What one run_sample leaves for its tally: every path's outputs and
 * decision values, and the runs that stopped on a non-finite value (paths 0
 * and 1), to be confirmed against the fp64 reference on the sample's
 * inputs (borrowed). */
struct cg_noise_target_sample {
    cg_noise_runs kept;
    cg_noise_decision_values kept_dec[3];
    const cg_named_value *inputs;
    size_t input_count;
    cg_nonfinite_watch pending[2];
    char pending_msg[2][256];
    bool pending_on[2];
};

struct cg_noise_target {
    cg_noise *noise;
    cg_target_path_options base;
    cg_target_path *path[3];        /* as placed, fp32 accumulation, fp32 */
    cg_noise_tally tally[3];
    cg_noise_capture cap;
    /* the last run_sample's, until tally_sample (or cg_noise_target_detach) */
    cg_noise_target_sample cur;
    cg_dim_binding *dims;           /* the dims the paths were built for */
    size_t dim_count;
    bool built;
    size_t builds;                  /* how many times the paths were built */
    /* which paths the last build made, kept past their release for the
     * verdicts (cg_noise_target_release_paths) */
    bool judged, ran_path[3];
    cg_precision precision;
    bool sums16;                    /* path[0] sums in fp16 somewhere */
    const char *class_name[2];      /* device classes judged (NULL: one) */
    cg_run_stop stop[2];            /* where each first stopped */
    bool stopped_last[2];           /* ... and on the last sample tallied */
};

static void paths_free(cg_noise_target *t)
{
    /* the reruns borrow path[0]'s types: freed before it */
    for (int p = 2; p >= 0; p--) {
        cg_target_path_free(t->path[p]);
        t->path[p] = NULL;
    }
    for (size_t i = 0; t->dims && i < t->dim_count; i++)
        free((char *)t->dims[i].symbol);
    free(t->dims);
    t->dims = NULL;
    t->dim_count = 0;
    t->built = false;
}

/* Frees what a run_sample kept. */
static void sample_clear(cg_noise_target_sample *c)
{
    cg_noise_runs_free(&c->kept);
    for (int p = 0; p < 3; p++)
        cg_noise_decision_values_free(&c->kept_dec[p]);
    memset(c, 0, sizeof *c);
}

static void kept_free(cg_noise_target *t)
{
    sample_clear(&t->cur);
}

void cg_noise_target_sample_free(cg_noise_target_sample *c)
{
    if (!c)
        return;
    sample_clear(c);
    free(c);
}

cg_noise_target_sample *cg_noise_target_detach(cg_noise_target *t)
{
    cg_noise_target_sample *c = malloc(sizeof *c);
    if (!c)
        return NULL;
    *c = t->cur;
    memset(&t->cur, 0, sizeof t->cur);
    return c;
}

void cg_noise_target_free(cg_noise_target *t)
{
    if (!t)
        return;
    kept_free(t);
    paths_free(t);
    for (int p = 0; p < 3; p++)
        cg_noise_tally_free(&t->tally[p]);
    free(t);
}

cg_status cg_noise_target_init(cg_noise *n, const cg_target_path_options *base,
                               cg_noise_target **out, cg_error *err)
{
    *out = NULL;
    if (!n || !base || !base->targets || !base->target_count)
        return cg_error_set(err, CG_USAGE, "noise: a judged target needs the floors and a "
                            "target");
    cg_noise_target *t = calloc(1, sizeof *t);
    if (!t)
        return cg_error_set(err, CG_NOMEM, "out of memory judging a target");
    t->noise = n;
    t->base = *base;
    t->cap.noise = n;
    t->cap.err = err;
    for (int p = 0; p < 3; p++) {
        cg_status st = cg_noise_tally_init(n, &t->tally[p], err);
        if (st != CG_OK) {
            cg_noise_target_free(t);
            return st;
        }
    }
    *out = t;
    return CG_OK;
}

static bool same_dims(const cg_noise_target *t, const cg_dim_binding *d, size_t n)
{
    if (!t->built || n != t->dim_count)
        return false;
    for (size_t i = 0; i < n; i++)
        if (strcmp(d[i].symbol, t->dims[i].symbol) != 0 || d[i].value != t->dims[i].value)
            return false;
    return true;
}

/* The paths for one sample's dims (symbols borrowed from the model). */
static cg_status paths_build(cg_noise_target *t, const cg_dim_binding *dims, size_t dim_count,
                             const cg_named_value *inputs, size_t input_count, cg_error *err)
{
    paths_free(t);
    t->dims = calloc(dim_count + 1, sizeof *t->dims);
    if (!t->dims)
        return cg_error_set(err, CG_NOMEM, "out of memory judging a target");
    /* the symbols are copied: a sample's --shape keys die with it */
    for (size_t i = 0; i < dim_count; i++) {
        t->dims[i].value = dims[i].value;
        if (!(t->dims[i].symbol = strdup(dims[i].symbol)))
            return cg_error_set(err, CG_NOMEM, "out of memory judging a target");
        t->dim_count = i + 1;
    }
    cg_target_path_options po = t->base;
    po.dims = t->dims;
    po.dim_count = dim_count;
    po.force_fp32 = false;
    po.feeds = inputs; /* typed and placed on this sample's inputs, as gate 2 */
    po.feed_count = input_count;
    po.observe = cg_noise_capture_observe;
    po.observe_inside = cg_noise_capture_nonfinite;
    po.observe_user = &t->cap;
    /* the caller's types and lowering are those of the first sample's
     * dims and inputs */
    bool first = t->builds++ == 0;
    po.types = first ? t->base.types : NULL;
    po.lowered = first ? t->base.lowered : NULL;
    const cg_model *model = cg_noise_model(t->noise);
    cg_status st = cg_target_path_init(model, &po, &t->path[0], err);
    if (st != CG_OK)
        return st;
    t->precision = cg_target_path_reduced_precision(t->path[0]) ? CG_PRECISION_FP16
                                                                 : CG_PRECISION_FP32;
    t->sums16 = false;
    t->class_name[0] = t->class_name[1] = NULL;
    for (size_t i = 0; i < model->graph->node_count; i++)
        t->sums16 = t->sums16 ||
                    cg_target_path_node_precision(t->path[0], i) == CG_NODE_PREC_FP16_ACC16;
    for (size_t i = 0; t->sums16 && po.device_classes && po.accumulate != CG_ACCUMULATE_FP16 &&
                       i < po.target_count; i++)
        if (po.targets[i]->device_class[0] && po.targets[i]->device_class[1]) {
            t->class_name[0] = po.targets[i]->device_class[0];
            t->class_name[1] = po.targets[i]->device_class[1];
            break;
        }
    if (t->precision == CG_PRECISION_FP16) {
        /* the reruns differ in precision only: path[0]'s types and placement */
        cg_accumulate acc = po.accumulate;
        po.like = t->path[0];
        po.accumulate = CG_ACCUMULATE_FP32;
        if ((st = cg_target_path_init(model, &po, &t->path[1], err)) != CG_OK)
            return st;
        po.accumulate = acc;
        po.force_fp32 = true;
        if ((st = cg_target_path_init(model, &po, &t->path[2], err)) != CG_OK)
            return st;
    }
    t->built = t->judged = true;
    for (int p = 0; p < 3; p++)
        t->ran_path[p] = t->path[p] != NULL;
    return CG_OK;
}

cg_status cg_noise_target_run_sample(cg_noise_target *t, const cg_named_value *inputs,
                                     size_t input_count, const cg_dim_binding *dims,
                                     size_t dim_count, cg_error *err)
{
    cg_status st = CG_OK;
    kept_free(t);
    t->cap.err = err;
    if (!same_dims(t, dims, dim_count) &&
        (st = paths_build(t, dims, dim_count, inputs, input_count, err)) != CG_OK) {
        cg_error_prefix(err, "target path: ");
        return st;
    }
    cg_noise_target_sample *c = &t->cur;
    c->inputs = inputs;
    c->input_count = input_count;
    for (int p = 0; p < 3 && st == CG_OK; p++) {
        if (p < 2)
            c->pending_on[p] = false;
        if (!t->path[p])
            continue;
        memset(&t->cap.values, 0, sizeof t->cap.values);
        memset(&t->cap.nonfinite, 0, sizeof t->cap.nonfinite);
        /* an fp16 path (not its rerun in fp32) may stop on an inf or NaN
         * that fp16 made: noted, and judged once the fp64 reference says
         * it does not have it (tally_sample) */
        t->cap.nonfinite.on = p < 2 && t->precision == CG_PRECISION_FP16;
        st = cg_target_path_run(t->path[p], inputs, input_count, &c->kept.out[p],
                                &c->kept.count[p], err);
        c->kept_dec[p] = t->cap.values;
        memset(&t->cap.values, 0, sizeof t->cap.values);
        if (st != CG_OK && st != CG_NOMEM && t->cap.nonfinite.on && t->cap.nonfinite.count) {
            c->pending[p] = t->cap.nonfinite;
            c->pending_on[p] = true;
            snprintf(c->pending_msg[p], sizeof c->pending_msg[p], "%.255s", err->msg);
            cg_error_clear(err);
            st = CG_OK;
        }
        t->cap.nonfinite.on = false;
    }
    if (st != CG_OK)
        kept_free(t);
    return st;
}

/* Path p stopped on this sample with non-finite values noted: a breakdown
 * when the fp64 reference does not have the first of them (without the
 * fp64 reference, a golden set's, it is taken not to), else the run's
 * error stands. */
static cg_status confirm_stop(cg_noise_target *t, cg_noise_target_sample *c, int p,
                              size_t sample, cg_error *err)
{
    cg_nonfinite_site site;
    cg_error perr;
    cg_error_clear(&perr);
    cg_status st = cg_noise_probe(t->noise, c->inputs, c->input_count, &c->pending[p], &perr);
    if (st == CG_NOMEM || (st != CG_OK && st != CG_USAGE))
        return cg_error_set(err, st, "%s", perr.msg);
    if (!cg_nonfinite_first_new(&c->pending[p], &site))
        return cg_error_set(err, CG_RUNTIME, "%s", c->pending_msg[p]);
    cg_run_stop *s = &t->stop[p];
    if (!s->stopped) {
        s->stopped = true;
        s->site = site;
        memcpy(s->message, c->pending_msg[p], sizeof s->message);
        s->sample = sample;
    }
    s->samples++;
    t->stopped_last[p] = true;
    return CG_OK;
}

/* Tallies what one run_sample kept (c), and frees it. */
static cg_status tally_kept(cg_noise_target *t, cg_noise_target_sample *c,
                            const cg_named_value *ref64, size_t ref_count,
                            const cg_noise_decision_values *ref_dec, size_t sample,
                            cg_noise_runs *outs, cg_error *err)
{
    cg_status st = CG_OK;
    if (outs)
        memset(outs, 0, sizeof *outs);
    for (int p = 0; p < 2 && st == CG_OK; p++) {
        t->stopped_last[p] = false;
        if (c->pending_on[p] && (st = confirm_stop(t, c, p, sample, err)) == CG_OK)
            cg_noise_tally_add_stopped(t->noise, &t->tally[p], ref64, ref_count, sample);
        c->pending_on[p] = false;
    }
    for (int p = 0; p < 3 && st == CG_OK; p++)
        if (c->kept.out[p])
            st = cg_noise_tally_add(t->noise, &t->tally[p], ref64, ref_count, c->kept.out[p],
                                    c->kept.count[p], ref_dec, &c->kept_dec[p], NULL, sample,
                                    err);
    if (outs && st == CG_OK) {
        *outs = c->kept;
        memset(&c->kept, 0, sizeof c->kept);
    }
    sample_clear(c);
    return st;
}

cg_status cg_noise_target_tally_sample(cg_noise_target *t, const cg_named_value *ref64,
                                       size_t ref_count, const cg_noise_decision_values *ref_dec,
                                       size_t sample, cg_noise_runs *outs, cg_error *err)
{
    return tally_kept(t, &t->cur, ref64, ref_count, ref_dec, sample, outs, err);
}

cg_status cg_noise_target_tally_detached(cg_noise_target *t, cg_noise_target_sample *c,
                                         const cg_named_value *ref64, size_t ref_count,
                                         const cg_noise_decision_values *ref_dec, size_t sample,
                                         cg_noise_runs *outs, cg_error *err)
{
    cg_status st = tally_kept(t, c, ref64, ref_count, ref_dec, sample, outs, err);
    free(c);
    return st;
}

cg_status cg_noise_target_add_sample(cg_noise_target *t, const cg_named_value *inputs,
                                     size_t input_count, const cg_dim_binding *dims,
                                     size_t dim_count, const cg_named_value *ref64,
                                     size_t ref_count, const cg_noise_decision_values *ref_dec,
                                     size_t sample, cg_noise_runs *runs, cg_error *err)
{
    if (runs)
        memset(runs, 0, sizeof *runs);
    cg_status st = cg_noise_target_run_sample(t, inputs, input_count, dims, dim_count, err);
    return st != CG_OK ? st
                       : cg_noise_target_tally_sample(t, ref64, ref_count, ref_dec, sample, runs,
                                                      err);
}

cg_target_path *cg_noise_target_take_path(cg_noise_target *t)
{
    cg_target_path *p = t->path[0];
    if (p) {
        t->path[0] = NULL;
        paths_free(t); /* the reruns go with it: a later sample rebuilds all */
    }
    return p;
}

void cg_noise_target_release_paths(cg_noise_target *t)
{
    if (t)
        paths_free(t); /* a later sample would build them again */
}

void cg_noise_target_set_threads(cg_noise_target *t, int threads)
{
    if (t && threads >= 0)
        t->base.threads = threads; /* the paths built from now on */
}

cg_precision cg_noise_target_precision(const cg_noise_target *t)
{
    return t->precision;
}

const cg_noise_tally *cg_noise_target_tally(const cg_noise_target *t)
{
    return &t->tally[0];
}

const char *cg_noise_target_class(const cg_noise_target *t, int cls)
{
    return t && cls >= 0 && cls < 2 ? t->class_name[cls] : NULL;
}

bool cg_noise_target_sums16(const cg_noise_target *t)
{
    return t && t->sums16;
}

bool cg_noise_target_stopped_last(const cg_noise_target *t, int p)
{
    return t && p >= 0 && p < 2 && t->stopped_last[p];
}

const cg_run_stop *cg_noise_target_stop(const cg_noise_target *t, int p)
{
    return t && p >= 0 && p < 2 && t->stop[p].stopped ? &t->stop[p] : NULL;
}

/* The verdict of a class whose run (path p) stopped on a non-finite value
 * on some sample: a precision breakdown when a wider run explains it (the
 * fp32-accumulation rerun within the fp16 storage floor: fp16
 * accumulation; the run in fp32 within the fp32 floor: fp16 storage),
 * else a wrong result. o: the floors the class is judged against, storage
 * the output's own (the fp32-accumulation rerun's). */
static cg_status judge_stopped(const cg_noise_target *t, size_t output, int p,
                               const cg_noise_output *o, const cg_noise_output *storage,
                               const cg_noise_multiples *k, cg_judgement *out, cg_error *err)
{
    cg_judgement wider;
    cg_status st = CG_OK;
    const char *cause = NULL;
    char stop[480];
    cg_noise_within(&o->v, t->precision, &t->tally[p].errors[output].m, k, out);
    cg_run_stop_describe(&t->stop[p], stop, sizeof stop);
    if (p == 0 && t->ran_path[1] && !t->stop[1].stopped &&
        (st = cg_noise_judge_tally(storage, output, t->precision, &t->tally[1], NULL,
                                   t->ran_path[2] ? &t->tally[2] : NULL, k, &wider, err)) == CG_OK &&
        cg_verdict_passes(wider.verdict))
        cause = "with fp32 accumulation";
    if (st == CG_OK && !cause && t->ran_path[2] &&
        (st = cg_noise_judge_tally(storage, output, CG_PRECISION_FP32, &t->tally[2], NULL, NULL,
                                   k, &wider, err)) == CG_OK &&
        cg_verdict_passes(wider.verdict))
        cause = "in fp32";
    if (st != CG_OK)
        return st;
    out->verdict = cause ? CG_VERDICT_PRECISION : CG_VERDICT_WRONG;
    out->by_flips = false;
    out->stop = t->stop[p];
    char how[100];
    if (wider.by_flips)
        snprintf(how, sizeof how, "%.40s, judged by its decisions", cg_verdict_name(wider.verdict));
    else
        snprintf(how, sizeof how, "%.40s, %.3gx the %s floor", cg_verdict_name(wider.verdict),
                 wider.ratio, wider.against == CG_PRECISION_FP32 ? "fp32" : "fp16");
    if (!t->ran_path[2])
        snprintf(out->reason, sizeof out->reason, "%.400s; not rerun in fp32", stop);
    else if (cause)
        snprintf(out->reason, sizeof out->reason, "%.370s; %s: %.90s: fp16 %s", stop, cause, how,
                 p == 0 && cause[0] == 'w' ? "accumulation" : "storage");
    else
        snprintf(out->reason, sizeof out->reason, "%.370s; in fp32: %.90s too", stop, how);
    return CG_OK;
}

cg_status cg_noise_target_judge_class(const cg_noise_target *t, size_t output, int cls,
                                      const cg_noise_multiples *k, cg_judgement *out,
                                      cg_error *err)
{
    const cg_noise_output *o = cg_noise_output_get(t->noise, output);
    if (!o || !t->judged)
        return cg_error_set(err, CG_USAGE, "noise: output %zu not judged (no sample run)",
                            output);
    if (cls >= 0 && (cls > 1 || !t->class_name[cls] || !t->ran_path[1]))
        return cg_error_set(err, CG_USAGE, "noise: device class %d is not judged", cls);
    /* the class that sums in fp32 is the fp32-accumulation rerun */
    const cg_noise_tally *run = cls == 1 ? &t->tally[1] : &t->tally[0];
    const cg_noise_output *storage = o;
    cg_noise_output sums;
    if (t->sums16 && cls != 1) {
        cg_noise_output_sums(o, &sums);
        o = &sums;
    }
    if (t->stop[cls == 1 ? 1 : 0].stopped)
        return judge_stopped(t, output, cls == 1 ? 1 : 0, o, storage, k, out, err);
    return cg_noise_judge_tally(o, output, t->precision, run,
                                t->ran_path[1] ? &t->tally[1] : NULL,
                                t->ran_path[2] ? &t->tally[2] : NULL, k, out, err);
}

cg_status cg_noise_target_judge(const cg_noise_target *t, size_t output,
                                const cg_noise_multiples *k, cg_judgement *out, cg_error *err)
{
    if (!t->class_name[0])
        return cg_noise_target_judge_class(t, output, -1, k, out, err);
    /* both classes: the worse verdict, named by its class */
    cg_judgement c[2];
    cg_status st = CG_OK;
    for (int i = 0; i < 2 && st == CG_OK; i++)
        st = cg_noise_target_judge_class(t, output, i, k, &c[i], err);
    if (st != CG_OK)
        return st;
    int w = c[1].verdict > c[0].verdict ? 1 : 0;
    *out = c[w];
    snprintf(out->reason, sizeof out->reason, "%.120s: %.380s", t->class_name[w], c[w].reason);
    return CG_OK;
}
