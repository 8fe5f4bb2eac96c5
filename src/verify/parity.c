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
#include "verify_internal.h"

/* --- a target path that follows the samples' shapes -------------------------------- */

void cg_sample_path_init(cg_sample_path *sp, const cg_model *model,
                         const cg_target *const *targets, size_t target_count,
                         const cg_dim_binding *dims, size_t dim_count,
                         const cg_random_inputs *random, cg_accumulate accumulate,
                         size_t max_alloc_bytes)
{
    memset(sp, 0, sizeof *sp);
    sp->model = model;
    sp->options.targets = targets;
    sp->options.target_count = target_count;
    sp->options.dims = dims;
    sp->options.dim_count = dim_count;
    sp->options.random = random;
    sp->options.accumulate = accumulate;
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
        cg_sample_path_free(sp);
        /* the symbols are copied: a sample's --shape keys die with it */
        for (size_t i = 0; i < n; i++) {
            sp->bound[i].value = next[i].value;
            if (!(sp->bound[i].symbol = strdup(next[i].symbol)))
                return cg_error_set(err, CG_NOMEM, "out of memory");
            sp->bound_count = i + 1;
        }
        po.dims = sp->bound;
        po.dim_count = n;
        /* typed and placed on this sample's inputs, as gate 2 places the
         * model on sample 0's */
        po.feeds = s->inputs;
        po.feed_count = s->input_count;
        cg_status st = cg_target_path_init(sp->model, &po, &sp->path, err);
        sp->options.lowered = NULL; /* the first sample's: other dims lower again */
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
    for (size_t i = 0; i < sp->bound_count; i++)
        free((char *)sp->bound[i].symbol);
    sp->bound_count = 0;
}

/* --- the comparison ------------------------------------------------------------------ */

void cg_parity_options_for_path(cg_parity_options *po, const cg_target *const *targets,
                                size_t target_count, const cg_dim_binding *dims,
                                size_t dim_count, const cg_random_inputs *random,
                                cg_accumulate accumulate,
                                const char *outputs_from, const cg_tolerance_args *tol,
                                size_t max_alloc_bytes)
{
    memset(po, 0, sizeof *po);
    po->targets = targets;
    po->target_count = target_count;
    po->dims = dims;
    po->dim_count = dim_count;
    po->random = random;
    po->accumulate = accumulate;
    po->outputs_from = outputs_from;
    po->tol = *tol;
    po->max_alloc_bytes = max_alloc_bytes;
}

void cg_parity_report_free(cg_parity_report *r)
{
    if (!r)
        return;
    for (size_t k = 0; r->outputs && k < r->output_count; k++) {
        cg_tolerances_free(&r->outputs[k].tol, 1);
        cg_task_metrics_free(&r->outputs[k].task);
        cg_task_metrics_free(&r->outputs[k].task_target64);
        cg_task_metrics_free(&r->outputs[k].task_fp32);
        cg_task_metrics_free(&r->outputs[k].task_fp16);
        free(r->outputs[k].samples);
        free(r->outputs[k].per_sample);
    }
    free(r->outputs);
    cg_samples_stems_free(r->sample_names, r->sample_count);
    cg_target_path_free(r->path);
    memset(r, 0, sizeof *r);
}

cg_status cg_parity_run(const cg_model *model, const cg_parity_options *opt,
                        cg_sample_source *src, cg_parity_report *out, cg_error *err)
{
    cg_judge *j = NULL;
    cg_value **files = NULL;
    cg_status st;
    memset(out, 0, sizeof *out);
    if (!model || !model->graph || !opt || !src)
        return cg_error_set(err, CG_USAGE, "cg_parity_run: a model, options and samples needed");
    size_t n = cg_sample_source_count(src), nout = model->graph->output_count;
    if ((st = cg_judge_init(model, opt, n, out, &j, err)) != CG_OK)
        return st;
    if (opt->outputs_from && !(files = calloc(nout + 1, sizeof *files)))
        st = cg_error_set(err, CG_NOMEM, "out of memory");
    for (size_t si = 0; si < n && st == CG_OK; si++) {
        cg_sample s;
        if ((st = cg_sample_source_load(src, si, &s, err)) != CG_OK)
            break;
        cg_progress_report(&opt->progress, "compare", "samples", si, n, s.label);
        if (opt->outputs_from &&
            (st = cg_sample_source_read_outputs(src, opt->outputs_from, si, files, err)) != CG_OK)
            cg_error_prefix(err, "--outputs-from %s: ", opt->outputs_from);
        if (st == CG_OK)
            st = cg_judge_add(j, &s, si, files, err);
        for (size_t k = 0; files && k < nout; k++) {
            cg_value_free(files[k]);
            files[k] = NULL;
        }
        cg_sample_clear(&s);
    }
    if (st == CG_OK)
        st = cg_judge_finish(j, err);
    free(files);
    if (st == CG_OK && opt->keep_path)
        out->path = cg_judge_take_path(j);
    cg_judge_free(j);
    return st;
}

/* --- against a golden set ------------------------------------------------------------ */

void cg_verify_report_free(cg_verify_report *r)
{
    if (!r)
        return;
    free(r->golden_version);
    free(r->golden_created);
    cg_parity_report_free(&r->parity);
    memset(r, 0, sizeof *r);
}

cg_status cg_verify_golden(const cg_model *model, const char *model_path, const char *golden,
                           const cg_verify_options *opt, cg_verify_report *out, cg_error *err)
{
    const cg_graph *g = model && model->graph ? model->graph : NULL;
    cg_golden *gd = NULL;
    cg_judge *j = NULL;
    cg_value **files = NULL;
    cg_status st;
    bool identical = true;
    memset(out, 0, sizeof *out);
    if (!g || !opt || !golden || !model_path)
        return cg_error_set(err, CG_USAGE, "cg_verify_golden: model, path and golden needed");
    /* 1. the golden set itself: manifest, every file, the model's hash */
    if ((st = cg_golden_open(golden, &gd, err)) != CG_OK ||
        (st = cg_golden_check_model(gd, model_path, err)) != CG_OK)
        goto done;
    memcpy(out->model_sha256, gd->model_sha256, sizeof out->model_sha256);
    out->golden_version = strdup(gd->convgate_version ? gd->convgate_version : "");
    out->golden_created = strdup(gd->created ? gd->created : "");
    out->golden_format = gd->format_version;
    files = calloc(g->output_count + 1, sizeof *files);
    if (!out->golden_version || !out->golden_created || !files) {
        st = cg_error_set(err, CG_NOMEM, "out of memory");
        goto done;
    }
    /* 2. the judge: the outputs come from the reference, the target path
     * or files, and are compared with the golden ones */
    cg_parity_options po;
    cg_parity_options_for_path(&po, opt->targets, opt->target_count, opt->dims, opt->dim_count,
                               opt->random, opt->accumulate,
                               opt->outputs_from, &opt->tol, opt->max_alloc_bytes);
    po.keep_sample_metrics = true;
    po.golden = true;
    if ((st = cg_judge_init(model, &po, gd->set_count, &out->parity, &j, err)) != CG_OK)
        goto done;
    /* 3. every set */
    for (size_t i = 0; i < gd->set_count && st == CG_OK; i++) {
        cg_sample s;
        if ((st = cg_golden_sample(gd, i, model, opt->max_alloc_bytes, &s, err)) != CG_OK)
            break;
        if (opt->outputs_from &&
            (st = cg_samples_read_set_outputs(model, opt->outputs_from, s.label,
                                              opt->max_alloc_bytes, files, err)) != CG_OK)
            cg_error_prefix(err, "--outputs-from %s: ", opt->outputs_from);
        if (st == CG_OK)
            st = cg_judge_add(j, &s, i, opt->outputs_from ? files : NULL, err);
        for (size_t k = 0; k < g->output_count; k++) {
            cg_value_free(files[k]);
            files[k] = NULL;
        }
        cg_sample_clear(&s);
    }
    if (st == CG_OK)
        st = cg_judge_finish(j, err);
    if (st != CG_OK)
        goto done;
    for (size_t k = 0; k < out->parity.output_count; k++) {
        const cg_parity_output *o = &out->parity.outputs[k];
        for (size_t i = 0; i < out->parity.sample_count; i++) {
            out->compared++;
            out->failed += !o->samples[i].pass;
            identical = identical && o->samples[i].bit_identical;
        }
    }
    out->pass = out->parity.pass;
    /* a reduced-precision path whose every output equals fp32 bit for bit
     * most likely never ran there */
    out->silent_fallback = out->parity.reduced && !opt->outputs_from && out->compared &&
                           identical;
done:
    free(files);
    cg_judge_free(j);
    cg_golden_free(gd);
    return st;
}
