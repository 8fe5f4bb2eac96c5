/*
 * Parity (convgate/parity.h): the reference against a target path, or
 * against outputs read from files, over samples (`convgate compare`) or
 * over a golden set (`convgate verify`). Samples come from the samples
 * module and tolerances from cg_tolerances_resolve, so both commands read
 * the same folders and refuse the same tolerance typos.
 */
#include "convgate/parity.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "convgate/runtime.h"

/* --- a target path that follows the samples' shapes -------------------------------- */

void cg_sample_path_init(cg_sample_path *sp, const cg_model *model,
                         const cg_target *const *targets, size_t target_count,
                         const cg_dim_binding *dims, size_t dim_count,
                         const cg_random_inputs *random, bool accumulate_fp32,
                         size_t max_alloc_bytes)
{
    memset(sp, 0, sizeof *sp);
    sp->model = model;
    sp->options.targets = targets;
    sp->options.target_count = target_count;
    sp->options.dims = dims;
    sp->options.dim_count = dim_count;
    sp->options.random = random;
    sp->options.accumulate_fp32 = accumulate_fp32;
    sp->options.max_alloc_bytes = max_alloc_bytes;
}

static bool same_bindings(const cg_dim_binding *a, size_t na, const cg_dim_binding *b, size_t nb)
{
    if (na != nb)
        return false;
    for (size_t i = 0; i < na; i++)
        if (strcmp(a[i].symbol, b[i].symbol) != 0 || a[i].value != b[i].value)
            return false;
    return true;
}

cg_status cg_sample_path_get(cg_sample_path *sp, const cg_sample *s, cg_target_path **out,
                             cg_error *err)
{
    cg_dim_binding next[CG_PARITY_MAX_DIMS];
    size_t n = cg_sample_dims(sp->model, sp->options.dims, sp->options.dim_count, s, next,
                              CG_PARITY_MAX_DIMS);
    *out = NULL;
    if (!sp->path || !same_bindings(next, n, sp->bound, sp->bound_count)) {
        cg_target_path_options po = sp->options;
        cg_target_path_free(sp->path);
        sp->path = NULL;
        memcpy(sp->bound, next, n * sizeof *next);
        sp->bound_count = n;
        po.dims = sp->bound;
        po.dim_count = n;
        cg_status st = cg_target_path_init(sp->model, &po, &sp->path, err);
        if (st != CG_OK) {
            cg_error_prefix(err, "target path for sample %s: ", s->label);
            return st;
        }
        sp->reduced = sp->reduced || cg_target_path_reduced_precision(sp->path);
    }
    *out = sp->path;
    return CG_OK;
}

void cg_sample_path_free(cg_sample_path *sp)
{
    cg_target_path_free(sp->path);
    sp->path = NULL;
}

/* --- shared pieces ------------------------------------------------------------------- */

static const cg_value *find_output(const cg_named_value *outs, size_t n, const char *name)
{
    for (size_t i = 0; i < n; i++)
        if (outs[i].name && strcmp(outs[i].name, name) == 0)
            return outs[i].value;
    return NULL;
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

static const char **output_names(const cg_graph *g)
{
    const char **names = calloc(g->output_count + 1, sizeof *names);
    for (size_t k = 0; names && k < g->output_count; k++)
        names[k] = g->outputs[k].name ? g->outputs[k].name : "";
    return names;
}

/* --- the comparison ------------------------------------------------------------------ */

void cg_parity_report_free(cg_parity_report *r)
{
    if (!r)
        return;
    for (size_t k = 0; r->outputs && k < r->output_count; k++) {
        cg_tolerances_free(&r->outputs[k].tol, 1);
        free(r->outputs[k].samples);
    }
    free(r->outputs);
    cg_samples_stems_free(r->sample_names, r->sample_count);
    cg_target_path_free(r->path);
    memset(r, 0, sizeof *r);
}

/* Tolerances, once the path's precision is known. */
static cg_status parity_tolerances(const cg_model *model, const cg_parity_options *opt,
                                   cg_parity_report *r, cg_error *err)
{
    const char **names = output_names(model->graph);
    cg_output_tolerance *t = calloc(r->output_count + 1, sizeof *t);
    cg_status st = names && t ? cg_tolerances_resolve(names, r->output_count, &opt->tol,
                                                      r->reduced, t, err)
                              : cg_error_set(err, CG_NOMEM, "out of memory");
    for (size_t k = 0; st == CG_OK && k < r->output_count; k++)
        r->outputs[k].tol = t[k];
    free(t);
    free(names);
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
                                        m.bit_identical};
    o->failing_count += !m.pass;
    if (!m.shape_mismatch)
        cg_task_metrics_add(&o->task, &ref->tensor, &got->tensor);
}

cg_status cg_parity_run(const cg_model *model, const cg_parity_options *opt,
                        cg_sample_source *src, cg_parity_report *out, cg_error *err)
{
    const cg_graph *g = model && model->graph ? model->graph : NULL;
    cg_runtime *rt = NULL;
    cg_sample_path sp;
    cg_value **files = NULL;
    cg_status st = CG_OK;
    bool tols_ready = false;
    memset(out, 0, sizeof *out);
    memset(&sp, 0, sizeof sp);
    if (!g || !opt || !src)
        return cg_error_set(err, CG_USAGE, "cg_parity_run: a model, options and samples needed");
    if (!g->output_count)
        return cg_error_set(err, CG_USAGE, "the model has no graph outputs to compare");
    size_t n = cg_sample_source_count(src);
    out->output_count = g->output_count;
    out->outputs = calloc(g->output_count, sizeof *out->outputs);
    out->sample_names = calloc(n + 1, sizeof *out->sample_names);
    files = calloc(g->output_count, sizeof *files);
    if (!out->outputs || !out->sample_names || !files) {
        st = cg_error_set(err, CG_NOMEM, "out of memory");
        goto done;
    }
    for (size_t k = 0; k < g->output_count; k++) {
        cg_parity_output *o = &out->outputs[k];
        o->name = g->outputs[k].name ? g->outputs[k].name : "";
        cg_metrics_init(&o->merged);
        o->worst_rank = -1;
        cg_task_metrics_init(&o->task, opt->task, opt->threshold);
        if (!(o->samples = calloc(n + 1, sizeof *o->samples))) {
            st = cg_error_set(err, CG_NOMEM, "out of memory");
            goto done;
        }
    }
    if (opt->outputs_from) {
        /* no path to ask: a target that computes in fp16 makes the outputs
         * reduced precision */
        for (size_t i = 0; i < opt->target_count; i++)
            out->reduced = out->reduced || opt->targets[i]->precision == CG_PRECISION_FP16;
    } else {
        bool profile_fp32 = false;
        for (size_t i = 0; i < opt->target_count; i++)
            profile_fp32 = profile_fp32 || opt->targets[i]->accumulate_fp32;
        cg_sample_path_init(&sp, model, opt->targets, opt->target_count, opt->dims,
                            opt->dim_count, opt->random,
                            opt->accumulate < 0 ? profile_fp32 : opt->accumulate == 1,
                            opt->max_alloc_bytes);
    }
    cg_runtime_options ro;
    cg_runtime_options_default(&ro);
    if (opt->max_alloc_bytes)
        ro.max_alloc_bytes = opt->max_alloc_bytes;
    if ((st = cg_runtime_init(model, &ro, &rt, err)) != CG_OK) {
        cg_error_prefix(err, "reference runtime: ");
        goto done;
    }
    for (size_t si = 0; si < n && st == CG_OK; si++) {
        cg_sample s;
        cg_named_value *ref = NULL, *got = NULL;
        size_t nref = 0, ngot = 0;
        cg_target_path *path = NULL;
        if ((st = cg_sample_source_load(src, si, &s, err)) != CG_OK)
            break;
        cg_progress_report(&opt->progress, "compare", "samples", si, n, s.label);
        if (!(out->sample_names[si] = strdup(s.label)))
            st = cg_error_set(err, CG_NOMEM, "out of memory");
        out->sample_count = si + 1;
        if (st == CG_OK && !opt->outputs_from)
            st = cg_sample_path_get(&sp, &s, &path, err);
        if (st == CG_OK && !tols_ready) {
            out->reduced = out->reduced || sp.reduced;
            st = parity_tolerances(model, opt, out, err);
            tols_ready = st == CG_OK;
        }
        if (st == CG_OK &&
            (st = cg_runtime_run(rt, s.inputs, s.input_count, &ref, &nref, err)) != CG_OK)
            cg_error_prefix(err, "sample %s: reference run failed: ", s.label);
        if (st == CG_OK && opt->outputs_from) {
            if ((st = cg_sample_source_read_outputs(src, opt->outputs_from, si, files, err)) !=
                CG_OK)
                cg_error_prefix(err, "--outputs-from %s: ", opt->outputs_from);
        } else if (st == CG_OK &&
                   (st = cg_target_path_run(path, s.inputs, s.input_count, &got, &ngot, err)) !=
                       CG_OK) {
            cg_error_prefix(err, "sample %s: target path run failed: ", s.label);
        }
        for (size_t k = 0; st == CG_OK && k < g->output_count; k++) {
            cg_parity_output *o = &out->outputs[k];
            const cg_value *a = find_output(ref, nref, o->name);
            const cg_value *b = opt->outputs_from ? files[k] : find_output(got, ngot, o->name);
            cg_metrics m;
            if ((st = compare_values(s.label, o->name, a, b, &o->tol.tol, &m, err)) == CG_OK)
                parity_add(o, si, &m, a, b);
        }
        for (size_t k = 0; k < g->output_count; k++) {
            cg_value_free(files[k]);
            files[k] = NULL;
        }
        if (got)
            cg_runtime_free_outputs(got, ngot);
        if (ref)
            cg_runtime_free_outputs(ref, nref);
        cg_sample_clear(&s);
    }
    if (st != CG_OK)
        goto done;
    out->pass = true;
    for (size_t k = 0; k < out->output_count; k++) {
        cg_parity_output *o = &out->outputs[k];
        o->fallback_suspect = out->reduced && o->merged.count > 0 && o->merged.bit_identical &&
                              (o->dtype == CG_DTYPE_FLOAT || o->dtype == CG_DTYPE_DOUBLE);
        out->pass = out->pass && o->merged.pass;
        out->failed_outputs += !o->merged.pass;
    }
done:
    free(files);
    if (st == CG_OK && opt->keep_path) {
        out->path = sp.path;
        sp.path = NULL;
    }
    cg_sample_path_free(&sp);
    cg_runtime_free(rt);
    return st;
}

/* --- against a golden set ------------------------------------------------------------ */

void cg_verify_report_free(cg_verify_report *r)
{
    if (!r)
        return;
    for (size_t i = 0; r->sets && i < r->set_count; i++) {
        free(r->sets[i].name);
        free(r->sets[i].metrics);
    }
    free(r->sets);
    free(r->golden_version);
    free(r->golden_created);
    free(r->output_names);
    cg_tolerances_free(r->tols, r->output_count);
    free(r->tols);
    free(r->merged);
    memset(r, 0, sizeof *r);
}

cg_status cg_verify_golden(const cg_model *model, const char *model_path, const char *golden,
                           const cg_verify_options *opt, cg_verify_report *out, cg_error *err)
{
    const cg_graph *g = model && model->graph ? model->graph : NULL;
    cg_golden *gd = NULL;
    cg_runtime *rt = NULL;
    cg_sample_path sp;
    cg_value **files = NULL;
    cg_status st;
    bool identical = true, tols_ready = false;
    memset(out, 0, sizeof *out);
    memset(&sp, 0, sizeof sp);
    if (!g || !opt || !golden || !model_path)
        return cg_error_set(err, CG_USAGE, "cg_verify_golden: model, path and golden needed");
    /* 1. the golden set itself: manifest, every file, the model's hash */
    if ((st = cg_golden_open(golden, &gd, err)) != CG_OK ||
        (st = cg_golden_check_model(gd, model_path, err)) != CG_OK)
        goto done;
    memcpy(out->model_sha256, gd->model_sha256, sizeof out->model_sha256);
    out->golden_version = strdup(gd->convgate_version ? gd->convgate_version : "");
    out->golden_created = strdup(gd->created ? gd->created : "");
    out->output_count = g->output_count;
    out->output_names = output_names(g);
    out->tols = calloc(g->output_count + 1, sizeof *out->tols);
    out->merged = calloc(g->output_count + 1, sizeof *out->merged);
    out->sets = calloc(gd->set_count + 1, sizeof *out->sets);
    files = calloc(g->output_count + 1, sizeof *files);
    if (!out->golden_version || !out->golden_created || !out->output_names || !out->tols ||
        !out->merged || !out->sets || !files) {
        st = cg_error_set(err, CG_NOMEM, "out of memory");
        goto done;
    }
    for (size_t k = 0; k < g->output_count; k++)
        cg_metrics_init(&out->merged[k]);
    /* 2. what produces the outputs */
    if (!opt->outputs_from && opt->target_count) {
        cg_sample_path_init(&sp, model, opt->targets, opt->target_count, opt->dims,
                            opt->dim_count, opt->random, opt->accumulate_fp32,
                            opt->max_alloc_bytes);
    } else if (!opt->outputs_from) {
        cg_runtime_options ro;
        cg_runtime_options_default(&ro);
        if (opt->max_alloc_bytes)
            ro.max_alloc_bytes = opt->max_alloc_bytes;
        if ((st = cg_runtime_init(model, &ro, &rt, err)) != CG_OK)
            goto done;
    }
    /* 3. every set */
    for (size_t i = 0; i < gd->set_count && st == CG_OK; i++) {
        cg_sample s;
        cg_named_value *got = NULL;
        size_t ngot = 0;
        cg_target_path *path = NULL;
        cg_verify_set *vs = &out->sets[i];
        if ((st = cg_golden_sample(gd, i, model, opt->max_alloc_bytes, &s, err)) != CG_OK)
            break;
        vs->name = strdup(s.label);
        vs->metrics = calloc(g->output_count + 1, sizeof *vs->metrics);
        vs->pass = true;
        out->set_count = i + 1;
        if (!vs->name || !vs->metrics)
            st = cg_error_set(err, CG_NOMEM, "out of memory");
        if (st == CG_OK && opt->target_count && !opt->outputs_from)
            st = cg_sample_path_get(&sp, &s, &path, err);
        if (st == CG_OK && !tols_ready) {
            out->reduced = sp.reduced;
            st = cg_tolerances_resolve(out->output_names, out->output_count, &opt->tol,
                                       out->reduced, out->tols, err);
            tols_ready = st == CG_OK;
        }
        if (st == CG_OK && opt->outputs_from) {
            if ((st = cg_samples_read_set_outputs(model, opt->outputs_from, s.label,
                                                  opt->max_alloc_bytes, files, err)) != CG_OK)
                cg_error_prefix(err, "--outputs-from %s: ", opt->outputs_from);
        } else if (st == CG_OK) {
            st = path ? cg_target_path_run(path, s.inputs, s.input_count, &got, &ngot, err)
                      : cg_runtime_run(rt, s.inputs, s.input_count, &got, &ngot, err);
            if (st != CG_OK)
                cg_error_prefix(err, "set '%s': ", s.label);
        }
        for (size_t k = 0; st == CG_OK && k < g->output_count; k++) {
            const char *name = out->output_names[k];
            const cg_value *b = opt->outputs_from ? files[k] : find_output(got, ngot, name);
            cg_metrics *m = &vs->metrics[k];
            if ((st = compare_values(s.label, name, s.expected[k].value, b, &out->tols[k].tol, m,
                                     err)) != CG_OK)
                break;
            out->compared++;
            identical = identical && m->bit_identical;
            if (!m->pass) {
                out->failed++;
                vs->pass = false;
            }
            cg_metrics mm = *m;
            mm.worst_sample = (int64_t)i;
            cg_metrics_merge(&out->merged[k], &mm);
        }
        for (size_t k = 0; k < g->output_count; k++) {
            cg_value_free(files[k]);
            files[k] = NULL;
        }
        if (got)
            cg_runtime_free_outputs(got, ngot);
        cg_sample_clear(&s);
    }
    if (st != CG_OK)
        goto done;
    out->pass = out->failed == 0;
    /* a reduced-precision path whose every output equals fp32 bit for bit
     * most likely never ran there */
    out->silent_fallback = out->reduced && out->compared && identical;
done:
    free(files);
    cg_sample_path_free(&sp);
    cg_runtime_free(rt);
    cg_golden_free(gd);
    return st;
}
