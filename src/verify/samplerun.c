/*
 * One sample, assembled and run (convgate/samplerun.h): what `convgate run`
 * and the bindings' run share, so the choice of runner and the order the
 * inputs are taken in are written once.
 */
#include "convgate/samplerun.h"

#include <stdlib.h>
#include <string.h>

#include "convgate/against.h"
#include "convgate/parity.h"

cg_status cg_sample_assemble(const cg_model *model, const cg_sample_spec *spec, cg_sample *out,
                             cg_error *err)
{
    memset(out, 0, sizeof *out);
    cg_status st;
    if (spec->dir) {
        cg_sample_source *src = NULL;
        size_t pick = 0;
        if ((st = cg_sample_source_open_dir(model, spec->dir, spec->max_alloc_bytes, &src,
                                            err)) == CG_OK &&
            (st = cg_sample_source_find(src, spec->which, &pick, err)) == CG_OK)
            st = cg_sample_source_load(src, pick, out, err);
        cg_sample_source_free(src);
    } else {
        st = cg_sample_init(out, model, "inputs", err);
    }
    for (size_t i = 0; st == CG_OK && i < spec->feed_count; i++)
        st = cg_sample_feed_spec(out, model, spec->feeds[i], spec->max_alloc_bytes, err);
    if (st == CG_OK && spec->random)
        st = cg_sample_fill_random(out, model, spec->rnd, 0, spec->dims, spec->dim_count,
                                   spec->max_alloc_bytes, err);
    if (st != CG_OK)
        cg_sample_clear(out);
    return st;
}

struct cg_sample_runner {
    const cg_sample_runner_options *opt;
    const cg_model *model;
    cg_sample_runner_kind kind;
    cg_runtime *rt;
    cg_target_path *path;
    cg_against *against;
    bool ran;                    /* LiteRT ran its one batch */
};

cg_sample_runner_kind cg_sample_runner_choose(const cg_sample_runner_options *opt)
{
    if (opt->runner && opt->runner->kind != CG_RUNNER_NONE)
        return CG_SAMPLE_RUNNER_LITERT;
    return opt->target_count ? CG_SAMPLE_RUNNER_TARGETS : CG_SAMPLE_RUNNER_REFERENCE;
}

cg_status cg_sample_runner_init(const cg_model *model, const cg_sample_runner_options *opt,
                                const cg_sample *s, cg_sample_runner **out, cg_error *err)
{
    *out = NULL;
    cg_sample_runner *r = calloc(1, sizeof *r);
    if (!r)
        return cg_error_set(err, CG_NOMEM, "out of memory");
    r->opt = opt;
    r->model = model;
    r->kind = cg_sample_runner_choose(opt);
    cg_status st = CG_OK;
    switch (r->kind) {
    case CG_SAMPLE_RUNNER_LITERT: {
        /* LiteRT runs a batch: built here, run on the first cg_sample_runner_run */
        cg_against_options o;
        memset(&o, 0, sizeof o);
        o.model = o.other = model;
        o.runner = opt->runner;
        o.other_path = opt->model_path;
        st = cg_against_init(&o, &r->against, err);
        break;
    }
    case CG_SAMPLE_RUNNER_TARGETS: {
        cg_target_path_options o;
        cg_dim_binding dims[CG_PARITY_MAX_DIMS];
        memset(&o, 0, sizeof o);
        o.targets = opt->targets;
        o.target_count = opt->target_count;
        o.dims = dims;
        o.dim_count = cg_sample_dims(model, opt->dims, opt->dim_count, s, dims,
                                     CG_PARITY_MAX_DIMS);
        o.random = opt->random;
        o.accumulate = opt->accumulate;
        o.feeds = s->inputs; /* typed and placed on the inputs it runs */
        o.feed_count = s->input_count;
        o.max_alloc_bytes = opt->max_alloc_bytes;
        o.threads = opt->threads;
        o.observe = opt->observe;
        o.observe_user = opt->observe_user;
        st = cg_target_path_init(model, &o, &r->path, err);
        break;
    }
    case CG_SAMPLE_RUNNER_REFERENCE: {
        cg_runtime_options ro;
        cg_runtime_options_default(&ro);
        if (opt->max_alloc_bytes)
            ro.max_alloc_bytes = opt->max_alloc_bytes;
        ro.float64 = opt->float64;
        ro.threads = opt->threads;
        ro.simd = opt->simd;
        ro.observe = opt->observe;
        ro.observe_user = opt->observe_user;
        st = cg_runtime_init(model, &ro, &r->rt, err);
        /* the memory plan for the sample's shapes, made at set-up */
        if (st == CG_OK && s)
            st = cg_runtime_prepare(r->rt, s->inputs, s->input_count, err);
        break;
    }
    }
    if (st != CG_OK) {
        cg_sample_runner_free(r);
        return st;
    }
    *out = r;
    return CG_OK;
}

cg_status cg_sample_runner_run(cg_sample_runner *r, const cg_sample *s, cg_named_value **outputs,
                               size_t *count, cg_error *err)
{
    *outputs = NULL;
    *count = 0;
    if (r->path)
        return cg_target_path_run(r->path, s->inputs, s->input_count, outputs, count, err);
    if (r->rt)
        return cg_runtime_run(r->rt, s->inputs, s->input_count, outputs, count, err);
    if (r->ran)
        return cg_error_set(err, CG_USAGE, "the LiteRT runner runs its sample once");
    r->ran = true;
    size_t k = 0;
    cg_status st = cg_against_add(r->against, s, &k, err);
    if (st == CG_OK && (st = cg_against_finish(r->against, err)) == CG_OK)
        st = cg_against_outputs(r->against, k, outputs, count, err);
    return st;
}

bool cg_sample_runner_planned(const cg_sample_runner *r)
{
    return r && r->rt && cg_runtime_memory_planned(r->rt);
}

cg_sample_runner_kind cg_sample_runner_kind_of(const cg_sample_runner *r)
{
    return r->kind;
}

const cg_target_path *cg_sample_runner_path(const cg_sample_runner *r)
{
    return r ? r->path : NULL;
}

const char *cg_sample_runner_warnings(const cg_sample_runner *r)
{
    return r && r->rt ? cg_runtime_warnings(r->rt) : NULL;
}

const cg_runner_report *cg_sample_runner_report(const cg_sample_runner *r)
{
    return r && r->against ? cg_against_runner_report(r->against) : NULL;
}

void cg_sample_runner_free(cg_sample_runner *r)
{
    if (!r)
        return;
    cg_target_path_free(r->path);
    cg_runtime_free(r->rt);
    cg_against_free(r->against);
    free(r);
}
