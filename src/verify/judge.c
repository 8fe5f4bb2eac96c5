/*
 * The judge (convgate/parity.h): every output of a model on a target,
 * sample by sample, compared with the reference and judged, for compare,
 * verify and gate 3 alike.
 *
 * Per sample: the reference runs (with floors: float64, float32 and, for an
 * fp16 target, fp16 storage, cg_noise_add_sample; a golden sample brings
 * its expected outputs and recorded floors instead), then the target (its
 * path with the reruns that tell precision from a wrong kernel,
 * cg_noise_target; or outputs given from files). Each output is compared
 * with the fp32 reference (the absolute figures, and the tolerance of an
 * output that has an explicit one) and its error against the fp64
 * reference tallied. At the end each output gets its verdict.
 *
 * Detections (--task detect) are sets: the boxes are matched by IoU and
 * class before anything is compared, on every run (the fp32 reference
 * against fp64 too, since near-tied boxes swap there as well), so the
 * floors and errors of the boxes and scores are those of matched pairs, and
 * a box that one side has and the other has not is a flipped decision.
 */
#include <inttypes.h>
#ifdef __GLIBC__
#include <malloc.h>
#endif
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "convgate/parity.h"
#include "convgate/runtime.h"
#include "core/clock.h"
#include "core/threadpool.h"
#include "verify_internal.h"

#define DETECT_IOU_MIN 0.5

/* Missing and extra boxes of one run: counted, with the largest margin. */
typedef struct det_flips {
    uint64_t decisions, flips;
    double max_margin;
    bool unknown;           /* a flip without a margin (the other side kept nothing) */
} det_flips;

typedef struct judge_ahead judge_ahead;
typedef struct judge_phases judge_phases;

/* [0] boxes, [1] scores */
typedef struct det_tally {
    /* f16s: the fp16-sums floor (the class that sums in fp16) */
    cg_noise_stats err[2], f32[2], f16[2], f16s[2], acc32[2], in32[2];
    det_flips flips[3];     /* target, fp32 accumulation, in fp32 */
    bool reruns;
} det_tally;

struct cg_judge {
    const cg_model *model;
    const cg_parity_options *opt;
    cg_parity_report *r;
    size_t sample_cap;
    const char **names;         /* output names */
    bool *default_tol;          /* per output: no explicit tolerance */
    bool noise;                 /* floors are in play */
    bool golden_without_floors; /* a golden sample came without recorded floors */
    bool golden_without_sums;   /* ... with floors but no fp16-sums floor (dumped before
                                   the device classes) */
    /* the target judged as its two device classes (no --accumulate), when
     * there is one: the paths that run one class say which (class_note) */
    const cg_target *classes;
    bool fp16_targets;          /* some target computes in fp16 */
    cg_type_env *types;
    cg_noise *floors;
    cg_noise_target *target;    /* the target path and its reruns (noise) */
    cg_noise_target *emulation; /* outputs given in fp16: the same placement emulated */
    cg_noise_tally tally;       /* outputs given, or the reference's own */
    bool tally_on;
    cg_sample_path sp;          /* the target path without floors */
    bool sp_on;
    cg_runtime *rt;             /* the fp32 reference, when the floors do not run it */
    cg_target_path_options base;
    bool tols_ready;
    det_tally *det;
    double wall_s[3], cpu_s[3]; /* cg_judge_times */
    /* two threads: a sample's reference runs beside its target path runs */
    cg_threadpool *pool;
    /* or the target path runs every sample ahead on its own thread
     * (cg_judge_ahead) */
    judge_ahead *ahead;
    /* or each half runs every sample in turn, alone (cg_judge_phases) */
    judge_phases *phases;
};

static void ahead_end(cg_judge *j);
static void phases_end(cg_judge *j);

void cg_judge_times(const cg_judge *j, double wall_s[3], double cpu_s[3])
{
    for (int p = 0; p < 3; p++) {
        wall_s[p] = j ? j->wall_s[p] : 0.0;
        cpu_s[p] = j ? j->cpu_s[p] : 0.0;
    }
}

/* --- setup ----------------------------------------------------------------------------- */

void cg_judge_free(cg_judge *j)
{
    if (!j)
        return;
    ahead_end(j); /* its thread runs j->target */
    phases_end(j);
    cg_noise_target_free(j->target);
    cg_noise_target_free(j->emulation);
    cg_noise_tally_free(&j->tally);
    cg_noise_free(j->floors);
    cg_type_env_free(j->types);
    if (j->sp_on)
        cg_sample_path_free(&j->sp);
    cg_runtime_free(j->rt);
    cg_threadpool_free(j->pool);
    free(j->names);
    free(j->default_tol);
    free(j->det);
    free(j);
}

cg_status cg_judge_init(const cg_model *model, const cg_parity_options *opt, size_t sample_count,
                        cg_parity_report *out, cg_judge **jout, cg_error *err)
{
    const cg_graph *g = model && model->graph ? model->graph : NULL;
    cg_status st = CG_OK;
    *jout = NULL;
    memset(out, 0, sizeof *out);
    if (!g || !opt)
        return cg_error_set(err, CG_USAGE, "judge: a model and options are needed");
    if (!g->output_count)
        return cg_error_set(err, CG_USAGE, "the model has no graph outputs to compare");
    cg_judge *j = calloc(1, sizeof *j);
    if (!j)
        return cg_error_set(err, CG_NOMEM, "out of memory");
    j->model = model;
    j->opt = opt;
    j->r = out;
    j->sample_cap = sample_count;
    size_t n = g->output_count;
    out->output_count = n;
    out->outputs = calloc(n, sizeof *out->outputs);
    out->sample_names = calloc(sample_count + 1, sizeof *out->sample_names);
    j->names = calloc(n + 1, sizeof *j->names);
    j->default_tol = calloc(n + 1, sizeof *j->default_tol);
    if (!out->outputs || !out->sample_names || !j->names || !j->default_tol) {
        st = cg_error_set(err, CG_NOMEM, "out of memory");
        goto fail;
    }
    for (size_t k = 0; k < n; k++) {
        cg_parity_output *o = &out->outputs[k];
        o->name = j->names[k] = g->outputs[k].name ? g->outputs[k].name : "";
        cg_metrics_init(&o->merged);
        o->worst_rank = -1;
        cg_task metric = opt->task == CG_TASK_DETECT ? CG_TASK_NONE : opt->task;
        cg_task_metrics_init(&o->task, metric, opt->threshold);
        cg_task_metrics_init(&o->task_target64, metric, opt->threshold);
        cg_task_metrics_init(&o->task_fp32, metric, opt->threshold);
        cg_task_metrics_init(&o->task_fp16, metric, opt->threshold);
        cg_noise_stats_init(&o->floor32);
        cg_noise_stats_init(&o->floor16);
        cg_noise_stats_init(&o->error);
        cg_flip_stats_init(&o->flips);
        o->samples = calloc(sample_count + 1, sizeof *o->samples);
        if (opt->keep_sample_metrics)
            o->per_sample = calloc(sample_count + 1, sizeof *o->per_sample);
        if (!o->samples || (opt->keep_sample_metrics && !o->per_sample)) {
            st = cg_error_set(err, CG_NOMEM, "out of memory");
            goto fail;
        }
    }
    /* which outputs keep the default (and so are judged by the floors):
     * sources do not depend on the precision, the values are resolved once
     * the path is known */
    {
        cg_output_tolerance *t = calloc(n, sizeof *t);
        if (!t) {
            st = cg_error_set(err, CG_NOMEM, "out of memory");
            goto fail;
        }
        st = cg_tolerances_resolve(j->names, n, &opt->tol, false, t, err);
        for (size_t k = 0; st == CG_OK && k < n; k++) {
            j->default_tol[k] = strcmp(t[k].source, "default") == 0;
            j->noise = j->noise || j->default_tol[k];
        }
        cg_tolerances_free(t, n);
        free(t);
        if (st != CG_OK)
            goto fail;
    }
    for (size_t i = 0; i < opt->target_count; i++)
        j->fp16_targets = j->fp16_targets || opt->targets[i]->precision == CG_PRECISION_FP16;
    /* outputs made elsewhere in reduced precision (the real LiteRT's WebGPU
     * delegate at fp16) are judged as an fp16 target's */
    j->fp16_targets = j->fp16_targets || (opt->outputs_from && opt->outputs_reduced);
    out->precision = j->fp16_targets && (opt->outputs_from || !opt->target_count)
                         ? CG_PRECISION_FP16
                         : CG_PRECISION_FP32;
    if (opt->task == CG_TASK_DETECT && !(j->det = calloc(1, sizeof *j->det))) {
        st = cg_error_set(err, CG_NOMEM, "out of memory");
        goto fail;
    }
    memset(&j->base, 0, sizeof j->base);
    j->base.targets = opt->targets;
    j->base.target_count = opt->target_count;
    j->base.random = opt->random;
    j->base.max_alloc_bytes = opt->max_alloc_bytes;
    j->base.types = opt->types;
    j->base.lowered = opt->lowered;
    bool profile_fp32 = false, sums16 = opt->accumulate == CG_ACCUMULATE_FP16, classes = false;
    for (size_t i = 0; i < opt->target_count; i++) {
        const cg_target *t = opt->targets[i];
        profile_fp32 = profile_fp32 || t->accumulate_fp32;
        classes = classes || (t->device_class[0] && t->device_class[1]);
        sums16 = sums16 || (opt->accumulate == CG_ACCUMULATE_PROFILE && t->precision == CG_PRECISION_FP16 &&
                            (!t->accumulate_fp32 || t->device_class[0]));
    }
    /* a target with two device classes is judged as both unless
     * --accumulate picks one (docs/gate3.md "Two device classes") */
    j->base.device_classes = opt->accumulate == CG_ACCUMULATE_PROFILE && classes;
    for (size_t i = 0; j->base.device_classes && !j->classes && i < opt->target_count; i++)
        if (opt->targets[i]->device_class[0] && opt->targets[i]->device_class[1])
            j->classes = opt->targets[i];
    j->base.accumulate = opt->accumulate;
    if (opt->accumulate == CG_ACCUMULATE_PROFILE && profile_fp32 && !classes)
        j->base.accumulate = CG_ACCUMULATE_FP32;

    if (j->noise) {
        cg_noise_options no;
        memset(&no, 0, sizeof no);
        no.max_alloc_bytes = opt->max_alloc_bytes;
        no.fp16 = j->fp16_targets;
        /* a path that sums in fp16: its floor (outputs read back are
         * judged as the class that sums in fp32 unless --accumulate fp16) */
        no.fp16_sums = j->fp16_targets && sums16 && !(opt->outputs_from && opt->accumulate == CG_ACCUMULATE_PROFILE);
        no.recorded = opt->golden;
        no.threads = opt->threads;
        /* the decision analysis goes by the values' types when it can */
        cg_error terr;
        cg_error_clear(&terr);
        if (!opt->golden && !opt->types &&
            cg_type_env_build_with(model, opt->dims, opt->dim_count, opt->random, &j->types,
                                   &terr) != CG_OK)
            j->types = NULL;
        no.types = opt->types && !opt->golden ? opt->types : j->types;
        if ((st = cg_noise_init(model, &no, &j->floors, err)) != CG_OK)
            goto fail;
        if (opt->target_count && !opt->outputs_from &&
            (st = cg_noise_target_init(j->floors, &j->base, &j->target, err)) != CG_OK)
            goto fail;
        if (opt->target_count && opt->outputs_from && j->fp16_targets &&
            (st = cg_noise_target_init(j->floors, &j->base, &j->emulation, err)) != CG_OK)
            goto fail;
        if ((opt->outputs_from || !opt->target_count) &&
            (st = cg_noise_tally_init(j->floors, &j->tally, err)) != CG_OK)
            goto fail;
        j->tally_on = opt->outputs_from || !opt->target_count;
    }
    if (opt->target_count && !opt->outputs_from && !j->target) {
        cg_sample_path_init(&j->sp, model, opt->targets, opt->target_count, opt->dims,
                            opt->dim_count, opt->random, j->base.accumulate,
                            opt->max_alloc_bytes);
        j->sp.options.threads = opt->threads;
        j->sp.options.lowered = opt->lowered;
        j->sp_on = true;
    }
    /* the reference runs and the target path's are independent (the
     * tallies come after both): on two cores they run side by side, each
     * on its own runtime, with the results the one-after-the-other order
     * gives (docs/BENCHMARKS.md, "The gate's time and memory") */
    if (!opt->golden && (j->target || j->sp_on) && cg_threadpool_cpu_count() >= 2 &&
        (st = cg_threadpool_new(2, &j->pool, err)) != CG_OK)
        goto fail;
    /* the fp32 reference, when neither the floors nor a golden set give it,
     * and the reference's own outputs when there is no target */
    if ((!j->noise && !opt->golden) || (!opt->target_count && !opt->outputs_from)) {
        cg_runtime_options ro;
        cg_verify_runtime_options(&ro, opt->max_alloc_bytes, opt->threads);
        if ((st = cg_runtime_init(model, &ro, &j->rt, err)) != CG_OK) {
            cg_error_prefix(err, "reference runtime: ");
            goto fail;
        }
    }
    *jout = j;
    return CG_OK;
fail:
    cg_judge_free(j);
    return st;
}

/* Tolerances, once the precision is known. */
static cg_status resolve_tolerances(cg_judge *j, cg_error *err)
{
    cg_parity_report *r = j->r;
    cg_output_tolerance *t = calloc(r->output_count + 1, sizeof *t);
    if (!t)
        return cg_error_set(err, CG_NOMEM, "out of memory");
    cg_status st = cg_tolerances_resolve(j->names, r->output_count, &j->opt->tol, r->reduced, t,
                                         err);
    for (size_t k = 0; st == CG_OK && k < r->output_count; k++)
        r->outputs[k].tol = t[k];
    free(t);
    j->tols_ready = st == CG_OK;
    return st;
}

/* --- one sample ---------------------------------------------------------------------- */

static const cg_value *find_output(const cg_named_value *outs, size_t n, const char *name)
{
    for (size_t i = 0; outs && i < n; i++)
        if (outs[i].name && strcmp(outs[i].name, name) == 0)
            return outs[i].value;
    return NULL;
}

static const cg_tensor *tensor_of(const cg_value *v)
{
    return v && v->kind == CG_VALUE_TENSOR ? &v->tensor : NULL;
}

/* Compares one output's reference and target values. */
static cg_status compare_values(const char *sample, const char *output, const cg_value *ref,
                                const cg_value *got, const cg_tolerance *tol, cg_metrics *m,
                                cg_error *err)
{
    if (!ref || !got)
        return cg_error_set(err, CG_RUNTIME, "sample %s: output '%s' missing from the %s",
                            sample, output, !ref ? "reference" : "target");
    if (ref->kind != CG_VALUE_TENSOR || got->kind != CG_VALUE_TENSOR)
        return cg_error_set(err, CG_UNSUPPORTED, "output '%s' is a sequence or optional: "
                            "tensor outputs only", output);
    cg_status st = cg_compare_tensors(&ref->tensor, &got->tensor, tol, m, err);
    if (st != CG_OK)
        cg_error_prefix(err, "sample %s, output '%s': ", sample, output);
    return st;
}

/* Folds one output of sample si in. */
static void parity_add(cg_parity_output *o, size_t si, const cg_metrics *m0, const cg_value *ref,
                       const cg_value *got)
{
    cg_metrics m = *m0;
    m.worst_sample = (int64_t)si;
    cg_metrics_merge(&o->merged, &m);
    o->dtype = ref->tensor.dtype;
    if (o->merged.worst_sample == (int64_t)si) {
        o->worst_rank = ref->tensor.rank;
        memcpy(o->worst_dims, ref->tensor.dims, sizeof o->worst_dims);
    }
    o->samples[si] = (cg_parity_sample){m.pass, m.mismatches, m.max_abs, m.max_rel, m.cosine,
                                        m.bit_identical, 0.0};
    if (o->per_sample)
        o->per_sample[si] = m;
    if (!m.shape_mismatch && got)
        cg_task_metrics_add(&o->task, &ref->tensor, &got->tensor);
}

/* max |got - ref| (inf for a non-finite mismatch); 0 when not comparable. */
static double max_error(const cg_value *ref, const cg_value *got)
{
    const cg_tensor *a = tensor_of(ref), *b = tensor_of(got);
    cg_tolerance exact = {0.0, 0.0, true, NULL};
    cg_metrics m;
    if (!a || !b || cg_compare_tensors(a, b, &exact, &m, NULL) != CG_OK || m.shape_mismatch)
        return 0.0;
    return m.max_abs;
}

/* --- detections ------------------------------------------------------------------------ */

/* A tensor of the pairs' values: count rows of `width` values from t
 * (rows idx[]), as DOUBLE. */
static cg_status gather_rows(const cg_tensor *t, const size_t *idx, size_t count, int width,
                             cg_tensor *out, cg_error *err)
{
    int64_t dims[1] = {(int64_t)(count * (size_t)width)};
    cg_status st = cg_tensor_alloc(out, CG_DTYPE_DOUBLE, 1, dims, 0, err);
    if (st != CG_OK)
        return st;
    double *d = out->data;
    for (size_t i = 0; i < count; i++)
        for (int w = 0; w < width; w++)
            d[i * (size_t)width + (size_t)w] =
                cg_tensor_get_f64(t, (int64_t)(idx[i] * (size_t)width + (size_t)w));
    return CG_OK;
}

/* The lowest score of a side (NaN when it has none). */
static double lowest_score(const cg_tensor *scores)
{
    double lo = NAN;
    for (int64_t i = 0; i < scores->numel; i++) {
        double v = cg_tensor_get_f64(scores, i);
        if (isnan(lo) || v < lo)
            lo = v;
    }
    return lo;
}

/* Matches run `got` to the fp64 reference: boxes and scores of the pairs
 * into err[2] (may be NULL), the unmatched boxes into fl (may be NULL). */
static cg_status detect_run(const cg_detect_outputs *d, const cg_named_value *ref64,
                            size_t nref, const cg_named_value *got, size_t ngot,
                            const char *const *names, cg_noise_stats *err2, det_flips *fl,
                            cg_detect_match *keep, cg_error *err)
{
    const cg_tensor *rb = tensor_of(find_output(ref64, nref, names[d->boxes]));
    const cg_tensor *rs = tensor_of(find_output(ref64, nref, names[d->scores]));
    const cg_tensor *rl = d->labels >= 0 ? tensor_of(find_output(ref64, nref, names[d->labels]))
                                         : NULL;
    const cg_tensor *gb = tensor_of(find_output(got, ngot, names[d->boxes]));
    const cg_tensor *gs = tensor_of(find_output(got, ngot, names[d->scores]));
    const cg_tensor *gl = d->labels >= 0 ? tensor_of(find_output(got, ngot, names[d->labels]))
                                         : NULL;
    if (!rb || !rs || !gb || !gs || (d->labels >= 0 && (!rl || !gl)))
        return cg_error_set(err, CG_RUNTIME, "detect: a detection output is missing");
    cg_detect_match m;
    cg_status st = cg_detect_match_run(rb, rs, rl, gb, gs, gl, DETECT_IOU_MIN, &m, err);
    if (st != CG_OK)
        return st;
    for (int w = 0; err2 && w < 2 && st == CG_OK && m.matched; w++) {
        const cg_tensor *a = w ? rs : rb, *b = w ? gs : gb;
        int width = w ? 1 : 4;
        cg_tensor ta, tb;
        memset(&ta, 0, sizeof ta);
        memset(&tb, 0, sizeof tb);
        if ((st = gather_rows(a, m.ref_index, m.matched, width, &ta, err)) == CG_OK &&
            (st = gather_rows(b, m.got_index, m.matched, width, &tb, err)) == CG_OK)
            st = cg_noise_stats_add(&err2[w], &ta, &tb, err);
        cg_tensor_release(&ta);
        cg_tensor_release(&tb);
    }
    if (fl && st == CG_OK) {
        double cut_got = lowest_score(gs), cut_ref = lowest_score(rs);
        fl->decisions += m.ref_count > m.got_count ? m.ref_count : m.got_count;
        for (size_t i = 0; i < m.missing_count + m.extra_count; i++) {
            bool missing = i < m.missing_count;
            double s = missing ? cg_tensor_get_f64(rs, (int64_t)m.missing[i])
                               : cg_tensor_get_f64(gs, (int64_t)m.extra[i - m.missing_count]);
            double cut = missing ? cut_got : cut_ref;
            fl->flips++;
            if (isnan(cut) || isnan(s)) {
                fl->unknown = true;
                continue;
            }
            double margin = fabs(s - cut);
            if (margin > fl->max_margin)
                fl->max_margin = margin;
        }
    }
    if (keep && st == CG_OK)
        *keep = m;
    else
        cg_detect_match_free(&m);
    return st;
}

/* Finds the detection outputs on the first sample. */
static cg_status detect_setup(cg_judge *j, const cg_named_value *ref, size_t nref,
                              cg_error *err)
{
    cg_parity_report *r = j->r;
    const cg_tensor **ts = calloc(r->output_count + 1, sizeof *ts);
    if (!ts)
        return cg_error_set(err, CG_NOMEM, "out of memory");
    for (size_t k = 0; k < r->output_count; k++)
        ts[k] = tensor_of(find_output(ref, nref, j->names[k]));
    cg_status st = cg_detect_find(j->names, ts, r->output_count, j->opt->detect,
                                  &r->detect.outputs, err);
    free(ts);
    if (st != CG_OK)
        return st;
    r->detect.on = true;
    r->detect.iou_min = DETECT_IOU_MIN;
    r->detect.min_iou = 1.0;
    for (int w = 0; w < 2; w++) {
        cg_noise_stats_init(&j->det->err[w]);
        cg_noise_stats_init(&j->det->f32[w]);
        cg_noise_stats_init(&j->det->f16[w]);
        cg_noise_stats_init(&j->det->f16s[w]);
        cg_noise_stats_init(&j->det->acc32[w]);
        cg_noise_stats_init(&j->det->in32[w]);
    }
    const cg_detect_outputs *d = &r->detect.outputs;
    r->outputs[d->boxes].detection = r->outputs[d->scores].detection = true;
    if (d->labels >= 0)
        r->outputs[d->labels].detection = true;
    return CG_OK;
}

/* One sample's detections: the target against fp64 (and against fp32, for
 * the absolute figures), the floors, the reruns. */
static cg_status detect_add(cg_judge *j, const cg_named_value *ref64, size_t n64,
                            const cg_named_value *ref32, size_t n32, const cg_noise_runs *refs,
                            const cg_noise_runs *t, cg_error *err)
{
    const cg_named_value *ref16 = refs->out[CG_RUN_FP16], *ref16s = refs->out[CG_RUN_FP16_SUMS];
    size_t n16 = refs->count[CG_RUN_FP16], n16s = refs->count[CG_RUN_FP16_SUMS];
    cg_detect_report *dr = &j->r->detect;
    det_tally *dt = j->det;
    const cg_named_value *got = t->out[CG_RUN_TARGET];
    size_t ngot = t->count[CG_RUN_TARGET];
    cg_status st = CG_OK;
    if (!dr->on && (st = detect_setup(j, ref32, n32, err)) != CG_OK)
        return st;
    cg_detect_match m;
    /* the absolute figures: against the fp32 reference (or golden outputs) */
    if ((st = detect_run(&dr->outputs, ref32, n32, got, ngot, j->names, NULL, NULL, &m, err)) !=
        CG_OK)
        return st;
    const cg_tensor *rb = tensor_of(find_output(ref32, n32, j->names[dr->outputs.boxes]));
    const cg_tensor *rs = tensor_of(find_output(ref32, n32, j->names[dr->outputs.scores]));
    const cg_tensor *gb = tensor_of(find_output(got, ngot, j->names[dr->outputs.boxes]));
    const cg_tensor *gs = tensor_of(find_output(got, ngot, j->names[dr->outputs.scores]));
    dr->ref_boxes += m.ref_count;
    dr->target_boxes += m.got_count;
    dr->matched += m.matched;
    dr->missing += m.missing_count;
    dr->extra += m.extra_count;
    if (m.matched && m.min_iou < dr->min_iou)
        dr->min_iou = m.min_iou;
    for (size_t i = 0; i < m.matched; i++) {
        double ds = fabs(cg_tensor_get_f64(rs, (int64_t)m.ref_index[i]) -
                         cg_tensor_get_f64(gs, (int64_t)m.got_index[i]));
        if (!(ds <= dr->max_score_diff))
            dr->max_score_diff = ds;
        for (int c = 0; c < 4; c++) {
            double db = fabs(cg_tensor_get_f64(rb, (int64_t)(4 * m.ref_index[i]) + c) -
                             cg_tensor_get_f64(gb, (int64_t)(4 * m.got_index[i]) + c));
            if (!(db <= dr->max_box_diff))
                dr->max_box_diff = db;
        }
    }
    cg_detect_match_free(&m);
    if (!j->noise || !ref64)
        return CG_OK;
    if ((st = detect_run(&dr->outputs, ref64, n64, got, ngot, j->names, dt->err, &dt->flips[0],
                         NULL, err)) != CG_OK)
        return st;
    if (ref32 != ref64 &&
        (st = detect_run(&dr->outputs, ref64, n64, ref32, n32, j->names, dt->f32, NULL, NULL,
                         err)) != CG_OK)
        return st;
    if (ref16 && (st = detect_run(&dr->outputs, ref64, n64, ref16, n16, j->names, dt->f16, NULL,
                                  NULL, err)) != CG_OK)
        return st;
    if (ref16s && (st = detect_run(&dr->outputs, ref64, n64, ref16s, n16s, j->names, dt->f16s,
                                   NULL, NULL, err)) != CG_OK)
        return st;
    if (t->out[CG_RUN_ACC32] && t->out[CG_RUN_IN_FP32]) {
        dt->reruns = true;
        if ((st = detect_run(&dr->outputs, ref64, n64, t->out[CG_RUN_ACC32],
                             t->count[CG_RUN_ACC32], j->names, dt->acc32, &dt->flips[1], NULL,
                             err)) != CG_OK ||
            (st = detect_run(&dr->outputs, ref64, n64, t->out[CG_RUN_IN_FP32],
                             t->count[CG_RUN_IN_FP32], j->names, dt->in32, &dt->flips[2], NULL,
                             err)) != CG_OK)
            return st;
    }
    return CG_OK;
}

/* --- one sample ---------------------------------------------------------------------- */

/* --task classify/segment on fresh references: every output's task
 * metrics against the float64 reference, for the target and for the fp32
 * and fp16-storage references (what a correct implementation changes). */
static void task_noise_add(cg_judge *j, const cg_named_value *ref64, size_t n64,
                           const cg_named_value *ref32, size_t n32, const cg_named_value *ref16,
                           size_t n16, const cg_named_value *got, size_t ngot)
{
    for (size_t k = 0; k < j->r->output_count; k++) {
        cg_parity_output *o = &j->r->outputs[k];
        const cg_tensor *a = tensor_of(find_output(ref64, n64, o->name));
        const cg_tensor *b = tensor_of(find_output(got, ngot, o->name));
        const cg_tensor *c32 = tensor_of(find_output(ref32, n32, o->name));
        const cg_tensor *c16 = ref16 ? tensor_of(find_output(ref16, n16, o->name)) : NULL;
        if (!a || !b || !c32 || b->numel != a->numel || c32->numel != a->numel)
            continue;
        o->task_noise = true;
        cg_task_metrics_add(&o->task_target64, a, b);
        cg_task_metrics_add(&o->task_fp32, a, c32);
        if (c16 && c16->numel == a->numel) {
            cg_task_metrics_add(&o->task_fp16, a, c16);
            o->task_fp16_measured = true;
        }
    }
}

static cg_status run_reference(cg_judge *j, const cg_sample *s, cg_named_value **outs, size_t *n,
                               cg_error *err)
{
    cg_status st = cg_runtime_run(j->rt, s->inputs, s->input_count, outs, n, err);
    if (st != CG_OK)
        cg_error_prefix(err, "sample %s: reference run failed: ", s->label);
    return st;
}

/* The target path without floors on one sample. */
static cg_status sample_path_run(cg_judge *j, const cg_sample *s, cg_noise_runs *truns,
                                 cg_error *err)
{
    cg_target_path *path = NULL;
    cg_status st = cg_sample_path_get(&j->sp, s, &path, err);
    if (st == CG_OK &&
        (st = cg_target_path_run(path, s->inputs, s->input_count, &truns->out[CG_RUN_TARGET],
                                 &truns->count[CG_RUN_TARGET], err)) != CG_OK)
        cg_error_prefix(err, "sample %s: target path run failed: ", s->label);
    return st;
}

/* One sample's two independent halves: share 0 the reference runs (the
 * floors' or the plain fp32 reference), share 1 the target path's runs
 * (with target set), each with its own error, times and outputs. */
typedef struct sample_job {
    cg_judge *j;
    const cg_sample *s;
    cg_dim_binding dims[CG_PARITY_MAX_DIMS];
    size_t nd;
    bool target;                   /* share 1 runs the target path */
    cg_noise_runs *runs, *truns;
    cg_noise_decision_values *dec;
    cg_status st[2];
    cg_error err[2];
    double wall_s[2], cpu_s[2];    /* wall and the share's thread CPU */
} sample_job;

static void sample_share(void *arg, int t, int n)
{
    sample_job *b = arg;
    cg_judge *j = b->j;
    const cg_sample *s = b->s;
    cg_error *err = &b->err[t];
    cg_status st = CG_OK;
    double wall = cg_clock_seconds(CLOCK_MONOTONIC);
    double cpu = cg_clock_seconds(CLOCK_THREAD_CPUTIME_ID);
    (void)n;
    if (t == 0 && j->noise) {
        if ((st = cg_noise_add_sample(j->floors, s->inputs, s->input_count, b->runs, b->dec,
                                      err)) != CG_OK)
            cg_error_prefix(err, "sample %s: ", s->label);
    } else if (t == 0) {
        st = run_reference(j, s, &b->runs->out[CG_RUN_FP32], &b->runs->count[CG_RUN_FP32], err);
    } else if (b->target && j->target) {
        if ((st = cg_noise_target_run_sample(j->target, s->inputs, s->input_count, b->dims,
                                             b->nd, err)) != CG_OK)
            cg_error_prefix(err, "sample %s: target path: ", s->label);
    } else if (b->target) {
        st = sample_path_run(j, s, b->truns, err);
    }
    /* the target half done, its core is free for the rest of the references */
    if (t == 1 && j->noise && j->opt->threads_after > 0)
        cg_noise_set_threads(j->floors, j->opt->threads_after);
    b->st[t] = st;
    b->wall_s[t] = cg_clock_seconds(CLOCK_MONOTONIC) - wall;
    b->cpu_s[t] = cg_clock_seconds(CLOCK_THREAD_CPUTIME_ID) - cpu;
}

/* One sample whose references and target have run (or whose reference is
 * a golden set's): what the tally needs. */
typedef struct sample_done {
    const cg_sample *s;
    size_t si;
    cg_value *const *given;
    cg_status st;                  /* of the runs (their message in the caller's err) */
    bool target_ran;               /* the target path ran on s above */
    const cg_dim_binding *dims;
    size_t nd;
    cg_noise_runs *runs;           /* the references' outputs (freed by the caller) */
    cg_noise_runs *truns;          /* the target's, when it ran above (taken over) */
    cg_noise_decision_values *dec;
    cg_noise_target_sample *ahead; /* the target's run, made ahead (cg_judge_ahead) */
} sample_done;

/* A stopwatch like cg_lap on the calling thread's CPU clock: the tally runs
 * beside the target half when that runs ahead, whose CPU is not its own. */
static void thread_lap_start(cg_lap *l)
{
    l->wall = cg_clock_seconds(CLOCK_MONOTONIC);
    l->cpu = cg_clock_seconds(CLOCK_THREAD_CPUTIME_ID);
}

static void thread_lap_add(cg_lap *l, double *wall_s, double *cpu_s)
{
    cg_lap now;
    thread_lap_start(&now);
    *wall_s += now.wall - l->wall;
    *cpu_s += now.cpu - l->cpu;
    *l = now;
}

/* The second half of cg_judge_add: the target's tally (or its run, for a
 * golden sample), the comparison of every output and the task figures. */
static cg_status sample_tally(cg_judge *j, sample_done *d, cg_error *err)
{
    const cg_parity_options *opt = j->opt;
    cg_parity_report *r = j->r;
    const cg_graph *g = j->model->graph;
    const cg_sample *s = d->s;
    size_t si = d->si;
    cg_value *const *given = d->given;
    cg_noise_runs *runs = d->runs, truns = *d->truns;
    cg_noise_decision_values *dec = d->dec;
    cg_named_value *given_named = NULL;
    cg_status st = d->st;
    cg_lap lap;
    thread_lap_start(&lap);
    memset(d->truns, 0, sizeof *d->truns);
    const cg_named_value *ref64, *ref32, *ref16 = NULL;
    size_t n64, n32, n16 = 0;
    if (s->expected) {
        ref32 = ref64 = s->expected;
        n32 = n64 = s->expected_count;
    } else {
        ref64 = runs->out[CG_RUN_FP64];
        n64 = runs->count[CG_RUN_FP64];
        ref32 = runs->out[CG_RUN_FP32];
        n32 = runs->count[CG_RUN_FP32];
        ref16 = runs->out[CG_RUN_FP16];
        n16 = runs->count[CG_RUN_FP16];
    }

    /* the target: run above, or its outputs given, or the reference itself */
    if (st != CG_OK) {
    } else if (given) {
        if (!(given_named = calloc(g->output_count + 1, sizeof *given_named)))
            st = cg_error_set(err, CG_NOMEM, "out of memory");
        for (size_t k = 0; st == CG_OK && k < g->output_count; k++) {
            given_named[k].name = j->names[k];
            given_named[k].value = given[k];
        }
        if (st == CG_OK && j->emulation &&
            (st = cg_noise_target_add_sample(j->emulation, s->inputs, s->input_count, d->dims,
                                             d->nd, ref64, n64, s->expected ? NULL : dec, si,
                                             NULL, err)) != CG_OK)
            cg_error_prefix(err, "sample %s: the fp16 emulation: ", s->label);
    } else if (j->target && !d->target_ran) {
        /* a golden sample: nothing ran above */
        if ((st = cg_noise_target_run_sample(j->target, s->inputs, s->input_count, d->dims,
                                             d->nd, err)) != CG_OK)
            cg_error_prefix(err, "sample %s: target path: ", s->label);
    } else if (j->sp_on && !d->target_ran) {
        st = sample_path_run(j, s, &truns, err);
    } else if (!j->target && !j->sp_on) {
        st = run_reference(j, s, &truns.out[CG_RUN_TARGET], &truns.count[CG_RUN_TARGET], err);
    }
    if (st == CG_OK && j->target) {
        const cg_noise_decision_values *rd = s->expected ? NULL : dec;
        cg_noise_target_sample *ahead = d->ahead;
        d->ahead = NULL;
        if ((st = ahead ? cg_noise_target_tally_detached(j->target, ahead, ref64, n64, rd, si,
                                                         &truns, err)
                        : cg_noise_target_tally_sample(j->target, ref64, n64, rd, si, &truns,
                                                       err)) != CG_OK)
            cg_error_prefix(err, "sample %s: target path: ", s->label);
        else
            r->reduced = r->reduced || cg_noise_target_precision(j->target) == CG_PRECISION_FP16;
    }
    if (j->sp_on)
        r->reduced = r->reduced || j->sp.reduced;
    if (given) {
        truns.out[CG_RUN_TARGET] = given_named;
        truns.count[CG_RUN_TARGET] = g->output_count;
        r->reduced = r->reduced || j->fp16_targets;
    }
    thread_lap_add(&lap, &j->wall_s[1], &j->cpu_s[1]);
    const cg_named_value *got = truns.out[CG_RUN_TARGET];
    size_t ngot = truns.count[CG_RUN_TARGET];
    /* runs of the target that stopped on a non-finite value give no
     * outputs: each is +inf off (cg_metrics_stopped), and the verdicts say
     * where it stopped (cg_noise_target_judge_class) */
    bool stopped[2] = {false, false};
    for (int p = 0; p < 2 && st == CG_OK && j->target; p++)
        stopped[p] = cg_noise_target_stopped_last(j->target, p);
    if (st == CG_OK && j->tally_on && ref64)
        st = cg_noise_tally_add(j->floors, &j->tally, ref64, n64, got, ngot, NULL, NULL, NULL, si,
                                err);
    if (st == CG_OK && !j->tols_ready)
        st = resolve_tolerances(j, err);

    /* every output */
    for (size_t k = 0; st == CG_OK && k < r->output_count; k++) {
        cg_parity_output *o = &r->outputs[k];
        const cg_value *a = find_output(ref32, n32, o->name);
        const cg_value *b = find_output(got, ngot, o->name);
        /* an explicit tolerance judges one class: with two, the one that
         * sums in fp32 (the rerun with fp32 accumulation; class_note) */
        bool acc32 = !j->default_tol[k] && j->target && cg_noise_target_class(j->target, 1) &&
                     (truns.out[CG_RUN_ACC32] || stopped[CG_RUN_ACC32]);
        if (acc32)
            b = find_output(truns.out[CG_RUN_ACC32], truns.count[CG_RUN_ACC32], o->name);
        cg_metrics m;
        if (!b && a && a->kind == CG_VALUE_TENSOR && stopped[acc32 ? CG_RUN_ACC32 : CG_RUN_TARGET]) {
            cg_metrics_stopped(&a->tensor, &m);
            parity_add(o, si, &m, a, NULL);
            o->samples[si].error = INFINITY;
            continue;
        }
        cg_tolerance tol = o->tol.tol;
        /* judged by the floor, a NaN the reference has too is no mismatch
         * (the float64 reference has it as well): the figures say the same */
        if (j->noise && j->default_tol[k])
            tol.nan_equal = true;
        if ((st = compare_values(s->label, o->name, a, b, &tol, &m, err)) != CG_OK)
            break;
        parity_add(o, si, &m, a, b);
        if (ref64)
            o->samples[si].error = max_error(find_output(ref64, n64, o->name), b);
    }
    if (st == CG_OK && opt->task == CG_TASK_DETECT && !stopped[0] && !stopped[1])
        st = detect_add(j, ref64, n64, ref32, n32, runs, &truns, err);
    if (st == CG_OK && j->noise && !s->expected && ref64 && got &&
        (opt->task == CG_TASK_CLASSIFY || opt->task == CG_TASK_SEGMENT))
        task_noise_add(j, ref64, n64, ref32, n32, ref16, n16, got, ngot);
    if (given) {
        truns.out[CG_RUN_TARGET] = NULL; /* the values are the caller's */
        truns.count[CG_RUN_TARGET] = 0;
    }
    free(given_named);
    cg_noise_runs_free(&truns);
    thread_lap_add(&lap, &j->wall_s[2], &j->cpu_s[2]);
    return st;
}


/* --- the target half ahead ------------------------------------------------------------- */

/* The target half runs on a thread of its own, sample after sample, while
 * the caller's thread runs the references: its first sample (the
 * target's compilation and first-touch costs, for XNNPACK several times a
 * warm run) overlaps the references of the next ones instead of holding
 * them up. Each sample is tallied once both halves are in, in sample
 * order, exactly as cg_judge_add tallies it; only the runs move. What
 * waits for its tally is bounded: the target thread runs at most
 * AHEAD_TARGETS samples past the last tallied one, and the references
 * waiting for their target's hold at most AHEAD_REF_BYTES of outputs and
 * decision values beyond one sample's (past that, each cg_judge_add waits
 * for the target as before). */
#define AHEAD_TARGETS 2
#define AHEAD_REF_BYTES ((size_t)64 << 20)

static atomic_size_t samples_ahead;

size_t cg_judge_samples_ahead(void)
{
    return atomic_load(&samples_ahead);
}

typedef struct ahead_slot {
    /* the target half (the target thread's until `ran` covers it) */
    cg_noise_target_sample *res;
    cg_status tst;
    cg_error terr;
    double twall, tcpu;
    /* the reference half (the caller's) */
    bool ref_done;
    cg_status rst;
    cg_error rerr;
    cg_noise_runs runs;
    cg_noise_decision_values dec;
    size_t bytes;
} ahead_slot;

struct judge_ahead {
    pthread_t thread;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    const cg_sample *samples; /* the caller's, in the order cg_judge_add gets them */
    size_t count;
    cg_dim_binding dims[CG_PARITY_MAX_DIMS]; /* every sample's */
    size_t nd;
    ahead_slot *slot;
    bool thread_on;
    size_t added; /* samples whose references ran (the caller's) */
    /* under mu: samples the target thread has run (their slots filled),
     * samples tallied, and a request to stop */
    size_t ran, tallied;
    bool stop;
    cg_status first_err; /* the first tally's error: nothing is tallied after it */
};

static size_t values_bytes(const cg_named_value *v, size_t n)
{
    size_t b = 0;
    for (size_t i = 0; v && i < n; i++)
        if (v[i].value && v[i].value->kind == CG_VALUE_TENSOR)
            b += (size_t)v[i].value->tensor.numel * cg_dtype_size(v[i].value->tensor.dtype);
    return b;
}

static size_t refs_bytes(const cg_noise_runs *r, const cg_noise_decision_values *d)
{
    size_t b = 0;
    for (int p = 0; p < CG_NOISE_RUNS; p++)
        b += values_bytes(r->out[p], r->count[p]);
    for (size_t i = 0; i < d->count; i++)
        if (d->values[i] && d->values[i]->kind == CG_VALUE_TENSOR)
            b += (size_t)d->values[i]->tensor.numel * cg_dtype_size(d->values[i]->tensor.dtype);
    return b;
}

static void *ahead_main(void *arg)
{
    cg_judge *j = arg;
    judge_ahead *a = j->ahead;
    for (size_t i = 0; i < a->count; i++) {
        pthread_mutex_lock(&a->mu);
        while (!a->stop && i >= a->tallied + AHEAD_TARGETS)
            pthread_cond_wait(&a->cv, &a->mu);
        bool stop = a->stop;
        pthread_mutex_unlock(&a->mu);
        if (stop)
            break;
        ahead_slot *sl = &a->slot[i];
        const cg_sample *s = &a->samples[i];
        double wall = cg_clock_seconds(CLOCK_MONOTONIC);
        double cpu = cg_clock_seconds(CLOCK_THREAD_CPUTIME_ID);
        cg_error_clear(&sl->terr);
        sl->tst = cg_noise_target_run_sample(j->target, s->inputs, s->input_count, a->dims, a->nd,
                                             &sl->terr);
        if (sl->tst != CG_OK)
            cg_error_prefix(&sl->terr, "sample %s: target path: ", s->label);
        else if (!(sl->res = cg_noise_target_detach(j->target)))
            sl->tst = cg_error_set(&sl->terr, CG_NOMEM, "out of memory");
        sl->twall = cg_clock_seconds(CLOCK_MONOTONIC) - wall;
        sl->tcpu = cg_clock_seconds(CLOCK_THREAD_CPUTIME_ID) - cpu;
        atomic_fetch_add(&samples_ahead, 1);
        pthread_mutex_lock(&a->mu);
        a->ran = i + 1;
        pthread_cond_broadcast(&a->cv);
        pthread_mutex_unlock(&a->mu);
        if (sl->tst != CG_OK)
            break; /* as the lockstep order stops at a failing sample */
    }
    /* this thread's core is free for the references still to run */
    if (j->opt->threads_after > 0)
        cg_noise_set_threads(j->floors, j->opt->threads_after);
    return NULL;
}

/* Waits for the target half of sample i; false when the thread stopped
 * before running it. */
static bool ahead_wait(judge_ahead *a, size_t i)
{
    pthread_mutex_lock(&a->mu);
    while (a->ran <= i && !a->stop) {
        /* the thread ends early only after a failing sample */
        if (a->ran > 0 && a->slot[a->ran - 1].tst != CG_OK)
            break;
        pthread_cond_wait(&a->cv, &a->mu);
    }
    bool ok = a->ran > i;
    pthread_mutex_unlock(&a->mu);
    return ok;
}

/* Tallies the next sample (a->tallied) once its target half is in. */
static cg_status ahead_tally_next(cg_judge *j, cg_error *err)
{
    judge_ahead *a = j->ahead;
    size_t i = a->tallied;
    ahead_slot *sl = &a->slot[i];
    bool ran = ahead_wait(a, i);
    cg_status st = sl->rst;
    /* the reference's error first, as when they ran in that order */
    if (st != CG_OK)
        cg_error_set(err, st, "%s", sl->rerr.msg);
    else if (!ran)
        st = cg_error_set(err, CG_RUNTIME, "sample %s: the target path did not run",
                          a->samples[i].label);
    else if ((st = sl->tst) != CG_OK)
        cg_error_set(err, st, "%s", sl->terr.msg);
    if (ran) {
        j->wall_s[1] += sl->twall;
        j->cpu_s[1] += sl->tcpu;
    }
    cg_noise_runs truns;
    memset(&truns, 0, sizeof truns);
    sample_done d = {&a->samples[i], i, NULL, st, true, a->dims, a->nd, &sl->runs, &truns,
                     &sl->dec, sl->res};
    sl->res = NULL;
    if (st == CG_OK) {
        st = sample_tally(j, &d, err);
    } else {
        cg_noise_target_sample_free(d.ahead);
        cg_noise_runs_free(&truns);
    }
    cg_noise_runs_free(&sl->runs);
    cg_noise_decision_values_free(&sl->dec);
    sl->bytes = 0;
    pthread_mutex_lock(&a->mu);
    a->tallied = i + 1;
    if (st != CG_OK)
        a->stop = true; /* nothing after a failing sample counts */
    pthread_cond_broadcast(&a->cv);
    pthread_mutex_unlock(&a->mu);
    if (st != CG_OK)
        a->first_err = st;
    return st;
}

/* cg_judge_add with the target half ahead: the references of sample si
 * here, then every sample whose target half is in is tallied. */
static cg_status ahead_add(cg_judge *j, const cg_sample *s, size_t si, cg_error *err)
{
    judge_ahead *a = j->ahead;
    if (si >= a->count || s != &a->samples[si] || si != a->added)
        return cg_error_set(err, CG_USAGE, "judge: sample %zu out of the order cg_judge_ahead "
                            "announced", si);
    if (a->first_err != CG_OK)
        return cg_error_set(err, CG_USAGE, "judge: a sample after a failed one");
    ahead_slot *sl = &a->slot[si];
    double wall = cg_clock_seconds(CLOCK_MONOTONIC);
    double cpu = cg_clock_seconds(CLOCK_THREAD_CPUTIME_ID);
    cg_error_clear(&sl->rerr);
    if ((sl->rst = cg_noise_add_sample(j->floors, s->inputs, s->input_count, &sl->runs, &sl->dec,
                                       &sl->rerr)) != CG_OK)
        cg_error_prefix(&sl->rerr, "sample %s: ", s->label);
    j->wall_s[0] += cg_clock_seconds(CLOCK_MONOTONIC) - wall;
    j->cpu_s[0] += cg_clock_seconds(CLOCK_THREAD_CPUTIME_ID) - cpu;
    sl->bytes = refs_bytes(&sl->runs, &sl->dec);
    sl->ref_done = true;
    a->added = si + 1;
    /* tally what is ready; wait while the waiting references hold too much
     * (or this one failed: the earlier samples' errors come first) */
    cg_status st = CG_OK;
    while (st == CG_OK && a->tallied <= si) {
        size_t held = 0;
        for (size_t k = a->tallied; k <= si; k++)
            held += a->slot[k].bytes;
        pthread_mutex_lock(&a->mu);
        bool ready = a->ran > a->tallied || a->stop;
        pthread_mutex_unlock(&a->mu);
        bool must = sl->rst != CG_OK || held > AHEAD_REF_BYTES;
        if (!ready && !must)
            break;
        st = ahead_tally_next(j, err);
    }
    return st;
}

/* Tallies every sample added and not tallied yet. */
static cg_status ahead_flush(cg_judge *j, cg_error *err)
{
    judge_ahead *a = j->ahead;
    cg_status st = a->first_err;
    if (st != CG_OK)
        return cg_error_set(err, st, "judge: a sample failed");
    while (st == CG_OK && a->tallied < a->added)
        st = ahead_tally_next(j, err);
    return st;
}

/* Stops and joins the target thread and frees what waits for a tally. */
static void ahead_end(cg_judge *j)
{
    judge_ahead *a = j->ahead;
    if (!a)
        return;
    if (a->thread_on) {
        pthread_mutex_lock(&a->mu);
        a->stop = true;
        pthread_cond_broadcast(&a->cv);
        pthread_mutex_unlock(&a->mu);
        pthread_join(a->thread, NULL);
    }
    for (size_t i = 0; i < a->count; i++) {
        cg_noise_target_sample_free(a->slot[i].res);
        cg_noise_runs_free(&a->slot[i].runs);
        cg_noise_decision_values_free(&a->slot[i].dec);
    }
    pthread_cond_destroy(&a->cv);
    pthread_mutex_destroy(&a->mu);
    free(a->slot);
    free(a);
    j->ahead = NULL;
}

cg_status cg_judge_wait(cg_judge *j, cg_error *err)
{
    if (!j || !j->ahead)
        return CG_OK;
    cg_status st = ahead_flush(j, err);
    ahead_end(j);
    return st;
}

cg_status cg_judge_ahead(cg_judge *j, const cg_sample *samples, size_t count, cg_error *err)
{
    if (!j || j->ahead || j->phases || !j->target || !j->pool || j->opt->golden ||
        j->opt->outputs_from ||
        !samples || count < 2 || count > j->sample_cap || j->r->sample_count)
        return CG_OK;
    judge_ahead *a = calloc(1, sizeof *a);
    if (!a)
        return cg_error_set(err, CG_NOMEM, "out of memory");
    a->samples = samples;
    a->count = count;
    a->nd = cg_sample_dims(j->model, j->opt->dims, j->opt->dim_count, &samples[0], a->dims,
                           CG_PARITY_MAX_DIMS);
    /* one set of dims: the target thread's paths are built once, before the
     * first tally, so the tallies read a placement that no longer moves */
    for (size_t i = 0; i < count; i++) {
        cg_dim_binding d[CG_PARITY_MAX_DIMS];
        size_t nd = cg_sample_dims(j->model, j->opt->dims, j->opt->dim_count, &samples[i], d,
                                   CG_PARITY_MAX_DIMS);
        bool same = !samples[i].expected && nd == a->nd;
        for (size_t k = 0; same && k < nd; k++)
            same = strcmp(d[k].symbol, a->dims[k].symbol) == 0 && d[k].value == a->dims[k].value;
        if (!same) {
            free(a);
            return CG_OK;
        }
    }
    if (!(a->slot = calloc(count, sizeof *a->slot))) {
        free(a);
        return cg_error_set(err, CG_NOMEM, "out of memory");
    }
    pthread_mutex_init(&a->mu, NULL);
    pthread_cond_init(&a->cv, NULL);
    j->ahead = a;
    if (pthread_create(&a->thread, NULL, ahead_main, j) != 0) {
        ahead_end(j); /* no thread: the samples run side by side as before */
        return CG_OK;
    }
    a->thread_on = true;
    return CG_OK;
}

/* --- in phases ------------------------------------------------------------------------- */

/* Every sample's float32 reference run first (while the caller's hold
 * still shares gate 2's packed weights with it), then every sample's
 * target runs, then every sample's float64 reference run, then per
 * cg_judge_add the comparisons, the fp16 floor runs and the tally: one
 * runtime at a time is alive where the other orders hold them side by
 * side. What waits between the phases is each sample's outputs and the
 * values the floors compare. A failure stops its phase and limits the
 * later ones to the samples up to it; the failing sample reports, when
 * added, the error lockstep would give (the float64 reference's, then the
 * float32 one's, then the fp16 runs', then the target's). */
enum { PH_FP64, PH_FP32, PH_TARGET, PH_RUNS };

struct judge_phases {
    const cg_sample *samples;
    size_t count;
    size_t added;
    cg_noise_target_sample **res; /* per sample: the target's runs */
    cg_noise_fp64 *f64;           /* per sample: the float64 run */
    cg_noise_fp32 *f32;           /* per sample: the float32 run */
    size_t limit;                 /* the first failing sample (count: none) */
    /* per run kind, its failure: the sample (count: none), status, error */
    size_t failed[PH_RUNS];
    cg_status st[PH_RUNS];
    cg_error err[PH_RUNS];
};

static void phases_end(cg_judge *j)
{
    judge_phases *ph = j->phases;
    if (!ph)
        return;
    for (size_t i = 0; i < ph->count; i++) {
        if (ph->res)
            cg_noise_target_sample_free(ph->res[i]);
        if (ph->f64)
            cg_noise_fp64_free(&ph->f64[i]);
        if (ph->f32)
            cg_noise_fp32_free(&ph->f32[i]);
    }
    free(ph->res);
    free(ph->f64);
    free(ph->f32);
    free(ph);
    j->phases = NULL;
}

/* Run kind k failed on sample i (message in e): the later phases stop
 * there too. */
static void phases_fail(judge_phases *ph, int k, size_t i, cg_status st, const cg_error *e)
{
    ph->failed[k] = i;
    ph->st[k] = st;
    ph->err[k] = *e;
    if (i < ph->limit)
        ph->limit = i;
}

/* One reference (PH_FP32 or PH_FP64) on every sample up to the first
 * failure so far, its runs kept for phases_add. */
static void phases_reference(cg_judge *j, int k)
{
    judge_phases *ph = j->phases;
    const char *stage = k == PH_FP32 ? "float32 reference" : "float64 reference";
    for (size_t i = 0; i < ph->count && i <= ph->limit; i++) {
        const cg_sample *s = &ph->samples[i];
        cg_progress_report(&j->opt->progress, stage, "samples", i, ph->count, s->label);
        cg_error e;
        cg_error_clear(&e);
        cg_status st =
            k == PH_FP32
                ? cg_noise_add_fp32(j->floors, s->inputs, s->input_count, &ph->f32[i], &e)
                : cg_noise_add_fp64(j->floors, s->inputs, s->input_count, &ph->f64[i], &e);
        if (st != CG_OK) {
            cg_error_prefix(&e, "sample %s: ", s->label);
            phases_fail(ph, k, i, st, &e);
            break;
        }
    }
    cg_progress_report(&j->opt->progress, stage, "samples", ph->count, ph->count, NULL);
}

static void trim_heap(void)
{
#ifdef __GLIBC__
    malloc_trim(0); /* the freed runtime's pages back, before the next phase */
#endif
}

cg_status cg_judge_phases(cg_judge *j, const cg_sample *samples, size_t count,
                          cg_weights_hold **hold, cg_error *err)
{
    if (!j || j->phases || j->ahead || !j->target || !j->floors || j->opt->golden ||
        j->opt->outputs_from || !samples || !count || count > j->sample_cap ||
        j->r->sample_count)
        return CG_OK;
    for (size_t i = 0; i < count; i++)
        if (samples[i].expected)
            return CG_OK;
    judge_phases *ph = calloc(1, sizeof *ph);
    if (!ph || !(ph->res = calloc(count, sizeof *ph->res)) ||
        !(ph->f64 = calloc(count, sizeof *ph->f64)) ||
        !(ph->f32 = calloc(count, sizeof *ph->f32))) {
        if (ph) {
            free(ph->res);
            free(ph->f64);
        }
        free(ph);
        return cg_error_set(err, CG_NOMEM, "out of memory");
    }
    ph->samples = samples;
    ph->count = count;
    ph->limit = count;
    for (int k = 0; k < PH_RUNS; k++)
        ph->failed[k] = count;
    j->phases = ph;
    /* alone, each phase has every core the references get */
    int all = j->opt->threads_after > 0 ? j->opt->threads_after : j->opt->threads;
    cg_noise_target_set_threads(j->target, all);
    cg_noise_set_threads(j->floors, all);
    cg_noise_release(j->floors, true, false);
    trim_heap();
    const cg_progress *pr = &j->opt->progress;
    cg_lap lap;
    thread_lap_start(&lap);
    /* the float32 reference, made while the hold shares its packed weights */
    phases_reference(j, PH_FP32);
    cg_noise_release(j->floors, false, true);
    if (hold) {
        cg_runtime_hold_free(*hold);
        *hold = NULL;
    }
    trim_heap();
    thread_lap_add(&lap, &j->wall_s[0], &j->cpu_s[0]);
    /* the target path, up to the first failure */
    for (size_t i = 0; i < count && i <= ph->limit; i++) {
        const cg_sample *s = &samples[i];
        cg_progress_report(pr, "target path", "samples", i, count, s->label);
        cg_dim_binding dims[CG_PARITY_MAX_DIMS];
        size_t nd = cg_sample_dims(j->model, j->opt->dims, j->opt->dim_count, s, dims,
                                   CG_PARITY_MAX_DIMS);
        cg_error e;
        cg_error_clear(&e);
        cg_status st = cg_noise_target_run_sample(j->target, s->inputs, s->input_count, dims,
                                                  nd, &e);
        if (st != CG_OK)
            cg_error_prefix(&e, "sample %s: target path: ", s->label);
        else if (!(ph->res[i] = cg_noise_target_detach(j->target)))
            st = cg_error_set(&e, CG_NOMEM, "out of memory");
        if (st != CG_OK) {
            phases_fail(ph, PH_TARGET, i, st, &e);
            break;
        }
    }
    cg_progress_report(pr, "target path", "samples", count, count, NULL);
    cg_noise_target_release_paths(j->target);
    trim_heap();
    thread_lap_add(&lap, &j->wall_s[1], &j->cpu_s[1]);
    /* the float64 reference, up to the first failure (its error comes first) */
    phases_reference(j, PH_FP64);
    cg_noise_release(j->floors, true, false);
    trim_heap();
    thread_lap_add(&lap, &j->wall_s[0], &j->cpu_s[0]);
    return CG_OK;
}

/* cg_judge_add in phases: sample si's comparisons, fp16 runs and tally. */
static cg_status phases_add(cg_judge *j, const cg_sample *s, size_t si, cg_error *err)
{
    judge_phases *ph = j->phases;
    if (si >= ph->count || s != &ph->samples[si] || si != ph->added)
        return cg_error_set(err, CG_USAGE, "judge: sample %zu out of the order "
                            "cg_judge_phases announced", si);
    ph->added = si + 1;
    if (si > ph->limit)
        return cg_error_set(err, CG_USAGE, "judge: a sample after a failed one");
    for (int k = PH_FP64; k <= PH_FP32; k++)
        if (ph->failed[k] == si)
            return cg_error_set(err, ph->st[k], "%s", ph->err[k].msg);
    cg_noise_runs runs, truns;
    cg_noise_decision_values dec;
    memset(&truns, 0, sizeof truns);
    cg_lap lap;
    thread_lap_start(&lap);
    cg_status st = cg_noise_add_rest(j->floors, s->inputs, s->input_count, &ph->f64[si],
                                     &ph->f32[si], &runs, &dec, err);
    if (st != CG_OK)
        cg_error_prefix(err, "sample %s: ", s->label);
    thread_lap_add(&lap, &j->wall_s[0], &j->cpu_s[0]);
    if (st == CG_OK && ph->failed[PH_TARGET] == si)
        st = cg_error_set(err, ph->st[PH_TARGET], "%s", ph->err[PH_TARGET].msg);
    if (st == CG_OK) {
        cg_dim_binding dims[CG_PARITY_MAX_DIMS];
        size_t nd = cg_sample_dims(j->model, j->opt->dims, j->opt->dim_count, s, dims,
                                   CG_PARITY_MAX_DIMS);
        sample_done d = {s, si, NULL, CG_OK, true, dims, nd, &runs, &truns, &dec, ph->res[si]};
        ph->res[si] = NULL;
        st = sample_tally(j, &d, err);
    }
    cg_noise_runs_free(&runs);
    cg_noise_decision_values_free(&dec);
    return st;
}

cg_status cg_judge_add(cg_judge *j, const cg_sample *s, size_t si, cg_value *const *given,
                       cg_error *err)
{
    const cg_parity_options *opt = j->opt;
    cg_parity_report *r = j->r;
    cg_noise_runs runs, truns;
    cg_noise_decision_values dec;
    cg_status st = CG_OK;
    memset(&runs, 0, sizeof runs);
    memset(&truns, 0, sizeof truns);
    memset(&dec, 0, sizeof dec);
    if (si >= j->sample_cap)
        return cg_error_set(err, CG_USAGE, "judge: sample %zu beyond the %zu announced", si,
                            j->sample_cap);
    if (!(r->sample_names[si] = strdup(s->label)))
        return cg_error_set(err, CG_NOMEM, "out of memory");
    if (si + 1 > r->sample_count)
        r->sample_count = si + 1;
    cg_lap lap;
    cg_lap_start(&lap);

    if (j->ahead && !given && !s->expected)
        return ahead_add(j, s, si, err);
    if (j->phases && !given && !s->expected)
        return phases_add(j, s, si, err);

    /* the references, and the target path beside them where it runs here */
    sample_job job;
    memset(&job, 0, sizeof job);
    job.j = j;
    job.s = s;
    job.runs = &runs;
    job.dec = &dec;
    job.truns = &truns;
    job.nd = cg_sample_dims(j->model, opt->dims, opt->dim_count, s, job.dims,
                            CG_PARITY_MAX_DIMS);
    job.target = !s->expected && !given && (j->target || j->sp_on);
    cg_error_clear(&job.err[0]);
    cg_error_clear(&job.err[1]);
    if (s->expected) {
        if (j->noise && !s->expected_floors)
            j->golden_without_floors = true;
        for (size_t k = 0; j->noise && s->expected_floors && k < r->output_count; k++)
            j->golden_without_sums = j->golden_without_sums ||
                                     (isnan(s->expected_floors[k].fp16_sums) &&
                                      !isnan(s->expected_floors[k].fp16));
        for (size_t k = 0; j->noise && s->expected_floors && k < r->output_count && st == CG_OK;
             k++)
            st = cg_noise_add_recorded(j->floors, k, &s->expected_floors[k], err);
        cg_lap_add(&lap, &j->wall_s[0], &j->cpu_s[0]);
    } else {
        /* one core each while both halves run (the target half hands its
         * core over when it is done); all of them without a target half */
        if (j->noise && opt->threads_after > 0)
            cg_noise_set_threads(j->floors, job.target && j->pool ? opt->threads
                                                                  : opt->threads_after);
        cg_threadpool_run(job.target ? j->pool : NULL, sample_share, &job);
        if (!job.target || !j->pool)
            sample_share(&job, 1, 2); /* NULL pool: share 0 only */
        /* the reference's error first, as when they ran in that order */
        st = job.st[0] != CG_OK ? job.st[0] : job.st[1];
        if (st != CG_OK)
            cg_error_set(err, st, "%s", job.st[0] != CG_OK ? job.err[0].msg : job.err[1].msg);
        for (int p = 0; p < 2; p++) {
            j->wall_s[p] += job.wall_s[p];
            j->cpu_s[p] += job.cpu_s[p];
        }
    }
    sample_done d = {s, si, given, st, job.target, job.dims, job.nd, &runs, &truns, &dec, NULL};
    st = sample_tally(j, &d, err);
    cg_noise_runs_free(&runs);
    cg_noise_decision_values_free(&dec);
    return st;
}

cg_target_path *cg_judge_take_path(cg_judge *j)
{
    cg_target_path *p = NULL;
    ahead_end(j);
    if (j->target) {
        p = cg_noise_target_take_path(j->target);
    } else if (j->sp_on) {
        p = j->sp.path;
        j->sp.path = NULL;
    }
    return p;
}

/* --- the verdicts -------------------------------------------------------------------- */

static int verdict_rank(cg_verdict v)
{
    return v == CG_VERDICT_MATCH_FP32 ? 0 : v == CG_VERDICT_MATCH_FP16 ? 1
                                          : v == CG_VERDICT_PRECISION ? 2 : 3;
}

/* Outputs made elsewhere in fp16 beyond the floor, which cannot be rerun:
 * the same placement emulated (a correct fp16 computation) tells whether
 * fp16 explains it. */
static cg_status judge_given_fp16(cg_judge *j, size_t k, cg_judgement *v, cg_error *err)
{
    cg_judgement e;
    char why[sizeof v->reason];
    memcpy(why, v->reason, sizeof why);
    /* the outputs were judged as one device class (class_note): so is
     * their emulation */
    int cls = cg_noise_target_class(j->emulation, 1) ? 1 : -1;
    cg_status st = cg_noise_target_judge_class(j->emulation, k, cls, NULL, &e, err);
    if (st != CG_OK)
        return st;
    if (e.verdict == CG_VERDICT_PRECISION) {
        v->verdict = CG_VERDICT_PRECISION;
        snprintf(v->reason, sizeof v->reason, "%.200s; the fp16 emulation of this placement "
                 "breaks down too: %.250s", why, e.reason);
    } else {
        v->verdict = CG_VERDICT_WRONG;
        snprintf(v->reason, sizeof v->reason, "%.200s; the fp16 emulation of this placement "
                 "%s (%.200s): not explained by fp16", why,
                 cg_verdict_passes(e.verdict) ? "matches" : "differs too", e.reason);
    }
    return CG_OK;
}

static cg_status judge_output(cg_judge *j, size_t k, cg_error *err)
{
    cg_parity_report *r = j->r;
    cg_parity_output *o = &r->outputs[k];
    const cg_noise_output *fl = cg_noise_output_get(j->floors, k);
    const cg_noise_tally *t = j->target ? cg_noise_target_tally(j->target) : &j->tally;
    cg_status st = CG_OK;
    o->floor32 = fl->v.fp32;
    o->floor16 = fl->v.fp16;
    o->floor16_measured = fl->v.fp16.dist.count > 0;
    if (cg_noise_fp16_stop(j->floors))
        o->floor16_stop = *cg_noise_fp16_stop(j->floors);
    o->error = t->errors[k];
    o->discontinuous = fl->discontinuous;
    o->flips_compared = t->flips_compared[k];
    o->flips = t->flips[k];
    if (j->target) {
        for (int c = 0; c < 2; c++) {
            r->device_class[c] = o->device_class[c] = cg_noise_target_class(j->target, c);
            if (r->device_class[c] &&
                (st = cg_noise_target_judge_class(j->target, k, c, NULL, &o->class_verdict[c],
                                                  err)) != CG_OK)
                return st;
        }
        if (fl->v.fp16_sums.dist.count > 0) {
            o->floor16_sums = fl->v.fp16_sums;
            o->floor16_sums_measured = true;
        }
        return cg_noise_target_judge(j->target, k, NULL, &o->verdict, err);
    }
    /* outputs given (files, compare --against): one device's, judged as
     * one class: F16 devices (fp16 sums) against the fp16-sums floor with
     * --accumulate fp16, else against the fp16 storage floor (class_note) */
    cg_noise_output sums = *fl;
    if (j->opt->accumulate == CG_ACCUMULATE_FP16 && fl->v.fp16_sums.dist.count > 0) {
        cg_noise_output_sums(fl, &sums);
        o->floor16_sums = fl->v.fp16_sums;
        o->floor16_sums_measured = true;
    }
    if (cg_noise_within(&sums.v, r->precision, &t->errors[k].m, NULL, &o->verdict))
        return CG_OK;
    if (r->precision == CG_PRECISION_FP16) {
        if (j->emulation)
            return judge_given_fp16(j, k, &o->verdict, err);
        st = cg_error_set(err, CG_USAGE, "output '%s': fp16 outputs beyond the fp16 floor, "
                          "and no fp16 target to emulate them with: give --target", o->name);
    }
    return st;
}

/* The flips of run r (0 the target, 1 with fp32 accumulation, 2 in fp32):
 * its missing and extra boxes, noise when their score margin is within
 * the score floor's limit of the precision. */
static void detect_flip_stats(const det_flips *d, double lim32, double lim16, cg_flip_stats *fs)
{
    cg_flip_stats_init(fs);
    fs->decisions = d->decisions;
    fs->flips = d->flips;
    fs->max_margin = fs->min_margin = d->max_margin;
    fs->margin_known = !d->unknown;
    fs->noise_fp32 = !d->unknown && d->max_margin <= lim32 ? d->flips : 0;
    fs->noise_fp16 = !d->unknown && d->max_margin <= lim16 ? d->flips : 0;
    snprintf(fs->node, sizeof fs->node, "%s", "detections (missing or extra boxes)");
}

/* One run's detections judged: run 0 the target as placed, 1 its rerun
 * with fp32 accumulation (the device class that sums in fp32). Its matched
 * boxes and scores against their floors, f16 the fp16 floor of how the run
 * sums (`sums`: the fp16-sums floor, else fp16 storage), and its missing
 * and extra boxes as flips; the reruns tell precision from a wrong kernel.
 * *flips gets the run's. */
static cg_status detect_judge_run(const cg_judge *j, int run, const cg_noise_stats f16[2],
                                  bool sums, cg_precision prec, cg_flip_stats *flips,
                                  cg_judgement *out, cg_error *err)
{
    const cg_detect_report *dr = &j->r->detect;
    const det_tally *dt = j->det;
    const cg_noise_stats *e = run == 1 ? dt->acc32 : dt->err;
    cg_noise_multiples k;
    cg_noise_multiples_default(&k);
    /* the score floor decides which unmatched boxes are at the cut */
    cg_noise_value score_floor;
    memset(&score_floor, 0, sizeof score_floor);
    score_floor.fp32 = dt->f32[1];
    score_floor.fp16 = f16[1];
    double lim32 = cg_noise_limit(&score_floor, CG_PRECISION_FP32, &k);
    double lim16 = cg_noise_limit(&score_floor, CG_PRECISION_FP16, &k);
    cg_flip_stats fs[3];
    for (int r = 0; r < 3; r++)
        detect_flip_stats(&dt->flips[r], lim32, lim16, &fs[r]);
    const cg_flip_stats *f = &fs[run];
    *flips = *f;
    bool flips_noise = f->flips == 0 ||
                       (f->margin_known &&
                        (prec == CG_PRECISION_FP16 ? f->noise_fp16 : f->noise_fp32) == f->flips);
    bool have_pairs = e[0].dist.count > 0 && dt->f32[0].dist.count > 0;
    cg_judgement worst;
    memset(&worst, 0, sizeof worst);
    worst.verdict = CG_VERDICT_MATCH_FP32;
    snprintf(worst.reason, sizeof worst.reason, "no detections to compare");
    for (int w = 0; w < 2 && have_pairs; w++) {
        cg_noise_output o;
        memset(&o, 0, sizeof o);
        o.v.name = (char *)j->names[w ? dr->outputs.scores : dr->outputs.boxes];
        o.v.compared = true;
        o.v.fp32 = dt->f32[w];
        o.v.fp16 = f16[w];
        o.v.fp16_is_sums = sums;
        cg_judge_input in;
        memset(&in, 0, sizeof in);
        in.precision = prec;
        in.floor = &o;
        in.error = &e[w].m;
        in.acc32 = dt->reruns ? &dt->acc32[w].m : NULL;
        in.fp32 = dt->reruns ? &dt->in32[w].m : NULL;
        if (!flips_noise) {
            in.flips = f;
            in.flips_acc32 = dt->reruns ? &fs[1] : NULL;
            in.flips_fp32 = dt->reruns ? &fs[2] : NULL;
        }
        cg_judgement v;
        cg_status st = cg_noise_judge(&in, &k, &v, err);
        if (st != CG_OK) {
            cg_error_prefix(err, "detections: ");
            return st;
        }
        char what[sizeof v.reason];
        snprintf(what, sizeof what, "%s: %.400s", w ? "scores" : "boxes", v.reason);
        memcpy(v.reason, what, sizeof v.reason);
        if (w == 0 || verdict_rank(v.verdict) > verdict_rank(worst.verdict))
            worst = v;
    }
    if (!have_pairs && !flips_noise) {
        worst.verdict = prec == CG_PRECISION_FP16 && dt->reruns &&
                                (fs[1].flips == 0 || fs[2].flips == 0)
                            ? CG_VERDICT_PRECISION
                            : CG_VERDICT_WRONG;
        worst.by_flips = true;
        snprintf(worst.reason, sizeof worst.reason, "%llu of %llu detections missing or extra",
                 (unsigned long long)f->flips, (unsigned long long)f->decisions);
    }
    if (f->flips && flips_noise) {
        size_t len = strlen(worst.reason);
        snprintf(worst.reason + len, sizeof worst.reason - len, "; %llu box%s missing or extra "
                 "at the cut, largest score margin %.3g, within the %s noise",
                 (unsigned long long)f->flips, f->flips == 1 ? "" : "es", f->max_margin,
                 prec == CG_PRECISION_FP16 ? "fp16" : "fp32");
    }
    *out = worst;
    return CG_OK;
}

/* The detections' verdict (boxes, scores), which the detection outputs
 * take. A target judged as two device classes is judged by detection per
 * class, as the elementwise verdicts are (cg_noise_target_judge_class):
 * the path as placed (fp16 sums) against the fp16-sums floor of the
 * matched pairs, the rerun with fp32 accumulation against the fp16
 * storage floor; the verdict is the worse, led by its class's name. */
static cg_status judge_detect(cg_judge *j, cg_error *err)
{
    cg_detect_report *dr = &j->r->detect;
    const det_tally *dt = j->det;
    cg_precision prec = j->target ? cg_noise_target_precision(j->target) : j->r->precision;
    bool have_sums = dt->f16s[0].dist.count > 0 && dt->f16s[1].dist.count > 0;
    const char *cls[2] = {cg_noise_target_class(j->target, 0),
                          cg_noise_target_class(j->target, 1)};
    cg_status st = CG_OK;
    memset(&dr->verdict, 0, sizeof dr->verdict);
    memset(dr->class_verdict, 0, sizeof dr->class_verdict);
    dr->device_class[0] = dr->device_class[1] = NULL;
    if (cls[0] && cls[1] && dt->reruns) {
        cg_flip_stats fs[2];
        for (int c = 0; c < 2 && st == CG_OK; c++)
            st = detect_judge_run(j, c, c == 0 && have_sums ? dt->f16s : dt->f16,
                                  c == 0 && have_sums, prec, &fs[c], &dr->class_verdict[c], err);
        if (st != CG_OK)
            return st;
        int w = verdict_rank(dr->class_verdict[1].verdict) >
                        verdict_rank(dr->class_verdict[0].verdict)
                    ? 1
                    : 0;
        dr->device_class[0] = cls[0];
        dr->device_class[1] = cls[1];
        dr->flips = fs[0];
        dr->verdict = dr->class_verdict[w];
        snprintf(dr->verdict.reason, sizeof dr->verdict.reason, "%.120s: %.380s", cls[w],
                 dr->class_verdict[w].reason);
    } else {
        /* one path: against the fp16-sums floor when it sums in fp16 (as
         * placed, or outputs given with --accumulate fp16) */
        bool sums = have_sums && (j->target ? cg_noise_target_sums16(j->target)
                                            : j->opt->accumulate == CG_ACCUMULATE_FP16);
        if ((st = detect_judge_run(j, 0, sums ? dt->f16s : dt->f16, sums, prec, &dr->flips,
                                   &dr->verdict, err)) != CG_OK)
            return st;
    }
    dr->pass = cg_verdict_passes(dr->verdict.verdict);
    return CG_OK;
}

/* --task classify/segment as part of an output's verdict (docs/gate3.md
 * "Tasks"): against float64, the target must change no decision by more
 * than the noise (task_flips_noise) and change at most
 * CG_TASK_FLIP_FACTOR x what the correct run of its precision changes
 * (fp16 storage for an fp16 target, else the fp32 reference) plus
 * CG_TASK_FLIP_SLACK of the decisions. A failing task fails the output;
 * an output that passed elementwise becomes a wrong result: its values
 * are each within the noise but they move decisions the way no correct
 * run of that precision does. */
static void judge_task(cg_parity_report *r, cg_parity_output *o)
{
    const cg_task_metrics *t = &o->task_target64;
    bool fp16 = r->precision == CG_PRECISION_FP16 && o->task_fp16_measured;
    const cg_task_metrics *c = fp16 ? &o->task_fp16 : &o->task_fp32;
    if (!t->applicable || !c->applicable)
        return;
    uint64_t n = cg_task_decisions(t);
    uint64_t slack = (uint64_t)ceil(CG_TASK_FLIP_SLACK * (double)n);
    o->task_judged = true;
    o->task_correct_flips = c->flips;
    o->task_allowed = CG_TASK_FLIP_FACTOR * c->flips + (slack ? slack : 1);
    o->task_pass = o->task_flips_noise && t->flips <= o->task_allowed;
    if (o->task_pass)
        return;
    const char *what = t->task == CG_TASK_CLASSIFY ? "rows change top-1"
                       : t->multiclass              ? "pixels change class"
                                                    : "mask pixels flip";
    size_t len = strlen(o->verdict.reason);
    snprintf(o->verdict.reason + len, sizeof o->verdict.reason - len,
             "; task %s: %" PRIu64 " of %" PRIu64 " %s against float64, a correct %s run %" PRIu64
             " (allowed %" PRIu64 ")%s",
             t->task == CG_TASK_CLASSIFY ? "classify" : "segment", t->flips, n, what,
             fp16 ? "fp16" : "fp32", c->flips, o->task_allowed,
             o->task_flips_noise ? "" : ", and a change beyond the noise");
    if (cg_verdict_passes(o->verdict.verdict)) {
        o->verdict.verdict = CG_VERDICT_WRONG;
        o->verdict.by_flips = true;
    }
    o->pass = false;
    for (size_t i = 0; i < r->sample_count; i++)
        o->samples[i].pass = false;
}

/* Appends a sentence to the report's note. */
static void note_add(cg_parity_report *r, const char *text)
{
    size_t len = strlen(r->note);
    snprintf(r->note + len, sizeof r->note - len, "%s%s", len ? "; " : "", text);
}

/* The paths that judge one device class of a two-class target say which,
 * and why (docs/gate3.md "Two device classes"). */
static void class_note(cg_judge *j)
{
    cg_parity_report *r = j->r;
    const cg_target *t = j->classes;
    char text[512];
    if (!t)
        return;
    bool explicit_tol = false;
    for (size_t k = 0; k < r->output_count; k++)
        explicit_tol = explicit_tol || !j->default_tol[k];
    if (j->opt->outputs_from && j->noise) {
        snprintf(text, sizeof text, "outputs read back (one device's, not rerun) are judged as "
                 "%s against the fp16 storage floor, as %s's measured accumulation; "
                 "--accumulate fp16 judges them as %s", t->device_class[1], t->name,
                 t->device_class[0]);
        note_add(r, text);
    }
    if (explicit_tol) {
        snprintf(text, sizeof text, "outputs under an explicit tolerance (--atol/--rtol/--tol) "
                 "are judged as %s only: a fixed tolerance has no floor per class; "
                 "--accumulate fp16 judges them as %s", t->device_class[1], t->device_class[0]);
        note_add(r, text);
    }
    if (j->noise && j->golden_without_sums && !j->golden_without_floors) {
        snprintf(text, sizeof text, "the golden set records no fp16-sums floor (dumped before "
                 "the device classes): %s are judged against the fp16 storage floor, stricter "
                 "than their own; dump-ref writes a set with it", t->device_class[0]);
        note_add(r, text);
    }
}

cg_status cg_judge_finish(cg_judge *j, cg_error *err)
{
    cg_parity_report *r = j->r;
    cg_status st = cg_judge_wait(j, err);
    if (st != CG_OK)
        return st;
    if (j->target)
        r->precision = cg_noise_target_precision(j->target);
    else if (j->sp_on && j->sp.reduced)
        r->precision = CG_PRECISION_FP16;
    if (j->noise && j->golden_without_floors)
        note_add(r, "the golden set records no noise floors (format 1, dump-ref --no-floors, "
                 "or convert's): outputs are judged by the fixed tolerance; dump-ref writes a "
                 "set with them");
    class_note(j);
    r->pass = true;
    r->failed_outputs = 0;
    for (size_t k = 0; k < r->output_count; k++) {
        cg_parity_output *o = &r->outputs[k];
        const cg_noise_output *fl = j->floors ? cg_noise_output_get(j->floors, k) : NULL;
        o->by_noise = j->noise && j->default_tol[k] && !j->golden_without_floors && fl &&
                      fl->v.compared && fl->v.fp32.dist.count > 0 && o->merged.count > 0;
        o->against_golden = j->opt->golden;
        if (o->by_noise) {
            r->by_noise = true;
            if ((st = judge_output(j, k, err)) != CG_OK) {
                cg_error_prefix(err, "output '%s': ", o->name);
                return st;
            }
            o->pass = cg_verdict_passes(o->verdict.verdict);
            /* a path that sums in fp16 is within the fp16-sums floor */
            cg_noise_output sums = *fl;
            if (o->floor16_sums_measured)
                cg_noise_output_sums(fl, &sums);
            for (size_t i = 0; i < r->sample_count; i++) {
                cg_metrics e;
                cg_judgement v;
                cg_metrics_init(&e);
                e.max_abs = o->samples[i].error;
                o->samples[i].pass = cg_noise_within(&sums.v, r->precision, &e, NULL, &v) ||
                                     (o->pass && o->verdict.by_flips);
            }
        } else {
            o->pass = o->merged.pass;
        }
        if (o->task_noise && fl) {
            o->task_limit = cg_noise_limit(&fl->v, r->precision, NULL);
            o->task_flips_noise = o->task_target64.flips == 0 ||
                                  o->task_target64.max_margin <= o->task_limit;
            if (o->by_noise)
                judge_task(r, o);
        }
    }
    if (r->detect.on && j->noise) {
        if ((st = judge_detect(j, err)) != CG_OK)
            return st;
        for (size_t k = 0; k < r->output_count; k++) {
            cg_parity_output *o = &r->outputs[k];
            if (!o->detection || !j->default_tol[k])
                continue;
            /* the detections' verdict replaces the elementwise one, whose
             * order-by-order comparison means nothing for a set */
            o->by_noise = true;
            o->verdict = r->detect.verdict;
            o->pass = r->detect.pass;
            /* and so do its device classes' */
            for (int c = 0; c < 2; c++) {
                o->device_class[c] = r->detect.device_class[c];
                o->class_verdict[c] = r->detect.class_verdict[c];
            }
            for (size_t i = 0; i < r->sample_count; i++)
                o->samples[i].pass = o->pass;
        }
    }
    for (size_t k = 0; k < r->output_count; k++) {
        cg_parity_output *o = &r->outputs[k];
        o->failing_count = 0;
        for (size_t i = 0; i < r->sample_count; i++)
            o->failing_count += !o->samples[i].pass;
        o->fallback_suspect = r->reduced && o->merged.count > 0 && o->merged.bit_identical &&
                              (o->dtype == CG_DTYPE_FLOAT || o->dtype == CG_DTYPE_DOUBLE);
        r->pass = r->pass && o->pass;
        r->failed_outputs += !o->pass;
    }
    return CG_OK;
}
