/*
 * The other side of a comparison (convgate/against.h): another model or
 * the real LiteRT, fed each sample through the input map, its outputs
 * brought back into the compared model's names and layout.
 */
#include "convgate/against.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "convgate/parity.h"
#include "convgate/runtime.h"
#include "convgate/targetpath.h"

struct cg_against {
    cg_against_options opt;
    cg_runtime *rt;          /* other on the reference runtime */
    cg_sample_path sp;       /* other on its target path */
    bool path;
    cg_runner *runner;
    bool finished;
    /* outputs of immediate runs, by index, until taken */
    cg_named_value **pending;
    size_t *pending_count;
    size_t count, cap;
};

void cg_against_describe(const cg_against_options *o, char *buf, size_t cap)
{
    const char *who = o->other == o->model ? "the model" : o->other_path ? o->other_path
                                                                          : "the other model";
    if (o->runner) {
        snprintf(buf, cap, "%s in the real LiteRT: %s (%s, measured)", who,
                 cg_runner_kind_name(o->runner->kind),
                 o->runner->kind == CG_RUNNER_LITERT_WEBGPU ? "WebGPU delegate" : "XNNPACK, CPU");
        return;
    }
    if (!o->target_count) {
        snprintf(buf, cap, "%s on the reference runtime", who);
        return;
    }
    size_t n = (size_t)snprintf(buf, cap, "%s on the target path of ", who);
    for (size_t i = 0; i < o->target_count && n < cap; i++)
        n += (size_t)snprintf(buf + n, cap - n, "%s%s", i ? "," : "", o->targets[i]->name);
}

void cg_against_free(cg_against *a)
{
    if (!a)
        return;
    cg_runtime_free(a->rt);
    if (a->path)
        cg_sample_path_free(&a->sp);
    cg_runner_free(a->runner);
    for (size_t i = 0; i < a->count; i++)
        cg_runtime_free_outputs(a->pending[i], a->pending_count[i]);
    free(a->pending);
    free(a->pending_count);
    free(a);
}

cg_status cg_against_init(const cg_against_options *opt, cg_against **out, cg_error *err)
{
    *out = NULL;
    if (!opt || !opt->model || !opt->other || (opt->other != opt->model && !opt->map))
        return cg_error_set(err, CG_USAGE, "cg_against_init: a model, the other side and (for "
                            "another model) the map between them are needed");
    cg_against *a = calloc(1, sizeof *a);
    if (!a)
        return cg_error_set(err, CG_NOMEM, "out of memory");
    a->opt = *opt;
    cg_status st = CG_OK;
    if (opt->runner) {
        st = cg_runner_init(opt->runner, opt->other_path, opt->other, &a->runner, err);
    } else if (opt->target_count) {
        cg_sample_path_init(&a->sp, opt->other, opt->targets, opt->target_count, opt->dims,
                            opt->dim_count, opt->random, opt->accumulate,
                            opt->max_alloc_bytes);
        a->path = true;
    } else {
        cg_runtime_options ro;
        cg_runtime_options_default(&ro);
        if (opt->max_alloc_bytes)
            ro.max_alloc_bytes = opt->max_alloc_bytes;
        if ((st = cg_runtime_init(opt->other, &ro, &a->rt, err)) != CG_OK)
            cg_error_prefix(err, "%s: ", opt->other_path ? opt->other_path : "the other model");
    }
    if (st != CG_OK) {
        cg_against_free(a);
        return st;
    }
    *out = a;
    return CG_OK;
}

/* The map's A and B models. */
static void sides(const cg_against *a, const cg_model **ma, const cg_model **mb)
{
    *ma = a->opt.model_is_a ? a->opt.model : a->opt.other;
    *mb = a->opt.model_is_a ? a->opt.other : a->opt.model;
}

/* Other's outputs as the model's (taken: `outs` is freed). */
static cg_status to_model(cg_against *a, cg_named_value *outs, size_t n, cg_named_value **res,
                          size_t *res_n, cg_error *err)
{
    if (!a->opt.map) {
        *res = outs;
        *res_n = n;
        return CG_OK;
    }
    const cg_model *ma, *mb;
    sides(a, &ma, &mb);
    cg_status st = cg_io_map_outputs(a->opt.map, ma, mb, !a->opt.model_is_a, outs, n, res,
                                     res_n, err);
    cg_runtime_free_outputs(outs, n);
    return st;
}

static bool grow(cg_against *a)
{
    if (a->count < a->cap)
        return true;
    size_t cap = a->cap ? a->cap * 2 : 8;
    cg_named_value **p = realloc(a->pending, cap * sizeof *p);
    if (!p)
        return false;
    a->pending = p;
    size_t *c = realloc(a->pending_count, cap * sizeof *c);
    if (!c)
        return false;
    a->pending_count = c;
    a->cap = cap;
    return true;
}

cg_status cg_against_add(cg_against *a, const cg_sample *s, size_t *index, cg_error *err)
{
    cg_named_value *ins = NULL, *outs = NULL;
    size_t nin = 0, nout = 0;
    cg_status st = CG_OK;
    const cg_named_value *feed = s->inputs;
    size_t nfeed = s->input_count;
    if (!grow(a))
        return cg_error_set(err, CG_NOMEM, "out of memory");
    if (a->opt.map) {
        const cg_model *ma, *mb;
        sides(a, &ma, &mb);
        if ((st = cg_io_map_inputs(a->opt.map, ma, mb, a->opt.model_is_a, s->inputs,
                                   s->input_count, &ins, &nin, err)) != CG_OK) {
            cg_error_prefix(err, "sample %s: ", s->label);
            return st;
        }
        feed = ins;
        nfeed = nin;
    }
    size_t i = a->count;
    a->pending[i] = NULL;
    a->pending_count[i] = 0;
    if (a->runner) {
        size_t k;
        st = cg_runner_add(a->runner, feed, nfeed, &k, err);
    } else if (a->path) {
        cg_sample os = *s; /* the sample as the other model takes it */
        cg_target_path *path = NULL;
        os.inputs = (cg_named_value *)feed;
        os.input_count = nfeed;
        if ((st = cg_sample_path_get(&a->sp, &os, &path, err)) == CG_OK)
            st = cg_target_path_run(path, feed, nfeed, &outs, &nout, err);
    } else {
        st = cg_runtime_run(a->rt, feed, nfeed, &outs, &nout, err);
    }
    if (st == CG_OK && !a->runner)
        st = to_model(a, outs, nout, &a->pending[i], &a->pending_count[i], err);
    else if (outs)
        cg_runtime_free_outputs(outs, nout);
    if (ins)
        cg_runtime_free_outputs(ins, nin);
    if (st != CG_OK) {
        cg_error_prefix(err, "sample %s on %s: ", s->label,
                        a->opt.other_path ? a->opt.other_path : "the other side");
        return st;
    }
    a->count++;
    *index = i;
    return CG_OK;
}

cg_status cg_against_finish(cg_against *a, cg_error *err)
{
    if (!a->runner || a->finished || !a->count)
        return CG_OK;
    cg_status st = cg_runner_run(a->runner, err);
    if (st == CG_OK)
        a->finished = true;
    return st;
}

cg_status cg_against_outputs(cg_against *a, size_t i, cg_named_value **outputs, size_t *count,
                             cg_error *err)
{
    *outputs = NULL;
    *count = 0;
    if (i >= a->count)
        return cg_error_set(err, CG_USAGE, "cg_against_outputs: no sample %zu", i);
    if (!a->runner) {
        if (!a->pending[i])
            return cg_error_set(err, CG_USAGE, "cg_against_outputs: sample %zu already taken", i);
        *outputs = a->pending[i];
        *count = a->pending_count[i];
        a->pending[i] = NULL;
        a->pending_count[i] = 0;
        return CG_OK;
    }
    if (!a->finished)
        return cg_error_set(err, CG_USAGE, "cg_against_outputs: the runner has not run");
    cg_named_value *outs;
    size_t n;
    cg_status st = cg_runner_outputs(a->runner, i, &outs, &n, err);
    return st == CG_OK ? to_model(a, outs, n, outputs, count, err) : st;
}

cg_status cg_against_write(cg_against *a, cg_sample_source *src, const char *dir, cg_error *err)
{
    size_t n = cg_sample_source_count(src);
    cg_status st = CG_OK;
    for (size_t i = 0; i < n && st == CG_OK; i++) {
        cg_sample s;
        size_t k = 0;
        if ((st = cg_sample_source_load(src, i, &s, err)) != CG_OK)
            break;
        st = cg_against_add(a, &s, &k, err);
        if (st == CG_OK && !a->runner) {
            cg_named_value *outs;
            size_t no;
            if ((st = cg_against_outputs(a, k, &outs, &no, err)) == CG_OK) {
                st = cg_sample_source_write_outputs(src, dir, i, outs, no, err);
                cg_runtime_free_outputs(outs, no);
            }
        }
        cg_sample_clear(&s);
    }
    if (st != CG_OK || !a->runner)
        return st;
    if ((st = cg_against_finish(a, err)) != CG_OK)
        return st;
    for (size_t i = 0; i < n && st == CG_OK; i++) {
        cg_named_value *outs;
        size_t no;
        if ((st = cg_against_outputs(a, i, &outs, &no, err)) != CG_OK) {
            cg_error_prefix(err, "sample %s: ", cg_sample_source_name(src, i));
            break;
        }
        st = cg_sample_source_write_outputs(src, dir, i, outs, no, err);
        cg_runtime_free_outputs(outs, no);
    }
    return st;
}

cg_status cg_against_expect(cg_against *a, cg_sample_set *set, cg_error *err)
{
    cg_status st = CG_OK;
    for (size_t i = 0; i < set->count; i++)
        if (set->samples[i].expected)
            return cg_error_set(err, CG_USAGE, "sample %s already has expected outputs",
                                set->samples[i].label);
    /* as cg_against_write: a runner runs its queue once, after the last */
    for (size_t i = 0; st == CG_OK && i < set->count; i++) {
        cg_sample *s = &set->samples[i];
        size_t k;
        if ((st = cg_against_add(a, s, &k, err)) == CG_OK && !a->runner)
            st = cg_against_outputs(a, k, &s->expected, &s->expected_count, err);
    }
    if (st != CG_OK || !a->runner)
        return st;
    if ((st = cg_against_finish(a, err)) != CG_OK)
        return st;
    for (size_t i = 0; st == CG_OK && i < set->count; i++) {
        cg_sample *s = &set->samples[i];
        st = cg_against_outputs(a, i, &s->expected, &s->expected_count, err);
    }
    return st;
}

const cg_runner_report *cg_against_runner_report(const cg_against *a)
{
    return a->runner && a->finished ? cg_runner_get_report(a->runner) : NULL;
}

bool cg_against_reduced(const cg_against *a) { return a->path && a->sp.reduced; }

/* --- verdicts ------------------------------------------------------------------------ */

cg_status cg_against_judge(const cg_model *model, cg_sample_source *src, const char *dir,
                           bool reduced, cg_against_verdict **verdicts, size_t *count,
                           cg_error *err)
{
    const cg_graph *g = model->graph;
    cg_noise *noise = NULL;
    cg_noise_tally tally;
    cg_noise_options no;
    cg_noise_multiples k;
    size_t n = cg_sample_source_count(src);
    cg_against_verdict *v = calloc(g->output_count + 1, sizeof *v);
    cg_value **files = calloc(g->output_count + 1, sizeof *files);
    cg_named_value *got = calloc(g->output_count + 1, sizeof *got);
    cg_status st = v && files && got ? CG_OK : cg_error_set(err, CG_NOMEM, "out of memory");
    memset(&tally, 0, sizeof tally);
    memset(&no, 0, sizeof no);
    cg_noise_multiples_default(&k);
    *verdicts = NULL;
    *count = 0;
    for (size_t o = 0; st == CG_OK && o < g->output_count; o++)
        v[o].output = g->outputs[o].name ? g->outputs[o].name : "";
    if (st == CG_OK && reduced) {
        for (size_t o = 0; o < g->output_count; o++)
            snprintf(v[o].why, sizeof v[o].why, "the other side computes in reduced "
                     "precision and has no float32 rerun to tell precision from error");
        goto out;
    }
    if (st == CG_OK && (st = cg_noise_init(model, &no, &noise, err)) == CG_OK)
        st = cg_noise_tally_init(noise, &tally, err);
    for (size_t i = 0; st == CG_OK && i < n; i++) {
        cg_sample s;
        cg_noise_runs runs;
        memset(&runs, 0, sizeof runs);
        if ((st = cg_sample_source_load(src, i, &s, err)) != CG_OK)
            break;
        if ((st = cg_noise_add_sample(noise, s.inputs, s.input_count, &runs, NULL, err)) ==
                CG_OK &&
            (st = cg_sample_source_read_outputs(src, dir, i, files, err)) == CG_OK) {
            for (size_t o = 0; o < g->output_count; o++) {
                got[o].name = g->outputs[o].name;
                got[o].value = files[o];
            }
            st = cg_noise_tally_add(noise, &tally, runs.out[CG_RUN_FP64],
                                    runs.count[CG_RUN_FP64], got, g->output_count, NULL, NULL,
                                    &k, i, err);
        }
        for (size_t o = 0; o < g->output_count; o++) {
            cg_value_free(files[o]);
            files[o] = NULL;
        }
        cg_noise_runs_free(&runs);
        cg_sample_clear(&s);
    }
    for (size_t o = 0; st == CG_OK && o < g->output_count; o++) {
        const cg_noise_output *no_o = cg_noise_output_get(noise, o);
        cg_error je;
        cg_error_clear(&je);
        if (!no_o || !no_o->v.compared) {
            snprintf(v[o].why, sizeof v[o].why, "not a numeric output produced on every run");
            continue;
        }
        if (cg_noise_judge_tally(no_o, o, CG_PRECISION_FP32, &tally, NULL, NULL, &k, &v[o].j,
                                 &je) == CG_OK)
            v[o].judged = true;
        else
            snprintf(v[o].why, sizeof v[o].why, "%.150s", je.msg);
    }
out:
    cg_noise_tally_free(&tally);
    cg_noise_free(noise);
    free(files);
    free(got);
    if (st != CG_OK) {
        free(v);
        return st;
    }
    *verdicts = v;
    *count = g->output_count;
    return CG_OK;
}
