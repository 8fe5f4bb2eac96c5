/*
 * convgate convert (convgate/rewrite.h): check, the rewrites the target
 * needs, the result compared against a golden set of the source's outputs
 * (reference first, then the target path), the gates, and the artifact
 * directory: model.onnx, golden/, deploy/. The caller renders README.md
 * and manifest.json (src/report/convert.c) and adds them last.
 *
 * Deterministic: nothing written depends on the time or the machine's
 * load. The golden set records a fixed creation time ($SOURCE_DATE_EPOCH
 * when set, else the epoch), the estimate is op work at an assumed rate,
 * and no timing is recorded.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "convgate/assign.h"
#include "convgate/check.h"
#include "convgate/golden.h"
#include "convgate/lower.h"
#include "convgate/rewrite.h"
#include "core/file.h"
#include "core/path.h"
#include "ir/walk.h"
#include "rewrite/rewrite_internal.h"

#define ARTIFACT_PATH_MAX 4096

static char *str_dup(const char *s)
{
    return s ? strdup(s) : NULL;
}

static bool join(char *out, size_t cap, const char *dir, const char *name)
{
    int n = snprintf(out, cap, "%s/%s", dir, name);
    return n > 0 && (size_t)n < cap;
}

static const char *base_name(const char *path)
{
    const char *slash = strrchr(path, '/');
    return slash ? slash + 1 : path;
}

/* The files a convert writes, removed first under --force so that no
 * stale one (a model.onnx.data from an earlier run) stays beside them. */
static const char *const artifact_files[] = {
    CG_ARTIFACT_MANIFEST, "README.md", "model.onnx", "model.onnx.data",
    "deploy/ort_required_operators.config", "deploy/tflm_op_resolver.cc"};

static cg_status prepare_dir(const char *dir, bool force, cg_error *err)
{
    cg_status st = cg_path_make_dirs(dir, err);
    if (st != CG_OK)
        return st;
    char **names = NULL;
    size_t n = 0;
    if ((st = cg_path_list(dir, NULL, &names, &n, err)) != CG_OK)
        return st;
    cg_path_names_free(names, n);
    if (n && !force)
        return cg_error_set(err, CG_USAGE, "convert: '%s' is not empty (give --force to write "
                            "into it)", dir);
    char path[ARTIFACT_PATH_MAX];
    for (size_t i = 0; i < sizeof artifact_files / sizeof *artifact_files; i++)
        if (join(path, sizeof path, dir, artifact_files[i]))
            unlink(path);
    return CG_OK;
}

/* Appends path to r->files; its hash is filled by the caller. */
static cg_artifact_file *record_file(cg_convert_result *r, const char *path, cg_error *err)
{
    cg_artifact_file *grown = realloc(r->files, (r->file_count + 1) * sizeof *grown);
    if (!grown) {
        cg_error_set(err, CG_NOMEM, "convert: out of memory");
        return NULL;
    }
    r->files = grown;
    cg_artifact_file *f = &r->files[r->file_count];
    memset(f, 0, sizeof *f);
    if (!(f->path = strdup(path))) {
        cg_error_set(err, CG_NOMEM, "convert: out of memory");
        return NULL;
    }
    r->file_count++;
    return f;
}

cg_status cg_convert_add_file(cg_convert_result *r, const char *path, const void *data,
                              size_t size, cg_error *err)
{
    char full[ARTIFACT_PATH_MAX];
    cg_status st;
    cg_artifact_file *f;
    if (!join(full, sizeof full, r->dir, path))
        return cg_error_set(err, CG_LIMIT, "convert: path '%s/%s' is too long", r->dir, path);
    if ((st = cg_path_make_parents(full, err)) != CG_OK ||
        (st = cg_atomic_write(full, data, size, err)) != CG_OK)
        return st;
    if (!(f = record_file(r, path, err)))
        return CG_NOMEM;
    f->bytes = size;
    return cg_sha256_hex(data, size, f->sha256, err);
}

/* Records a file already written (by the model writer or the golden
 * writer) with its hash. */
static cg_status add_written(cg_convert_result *r, const char *path, cg_error *err)
{
    char full[ARTIFACT_PATH_MAX];
    cg_artifact_file *f;
    if (!join(full, sizeof full, r->dir, path))
        return cg_error_set(err, CG_LIMIT, "convert: path '%s/%s' is too long", r->dir, path);
    if (!(f = record_file(r, path, err)))
        return CG_NOMEM;
    return cg_sha256_file(full, f->sha256, &f->bytes, err);
}

void cg_convert_result_free(cg_convert_result *r)
{
    if (!r)
        return;
    free(r->dir);
    free(r->source_path);
    free(r->source_name);
    free(r->result_path);
    for (size_t i = 0; i < r->file_count; i++)
        free(r->files[i].path);
    free(r->files);
    cg_rewrite_result_free(&r->rewrite);
    cg_verify_report_free(&r->fp32);
    cg_verify_report_free(&r->target);
    cg_gate_report_free(&r->gate);
    cg_assignment_free(r->assignment);
    cg_type_env_free(r->types);
    cg_lowered_free(r->lowered);
    memset(r, 0, sizeof *r);
}

/* $SOURCE_DATE_EPOCH (reproducible-builds.org) as UTC ISO 8601, else the epoch. */
static void fixed_time(char *buf, size_t cap)
{
    const char *s = getenv("SOURCE_DATE_EPOCH");
    char *end = NULL;
    long long v = s && *s ? strtoll(s, &end, 10) : 0;
    time_t t = end && !*end && v >= 0 ? (time_t)v : 0;
    struct tm tm;
    if (!gmtime_r(&t, &tm) || !strftime(buf, cap, "%Y-%m-%dT%H:%M:%SZ", &tm))
        snprintf(buf, cap, "1970-01-01T00:00:00Z");
}

static uint64_t initializer_bytes(const cg_model *m)
{
    uint64_t n = 0;
    for (size_t i = 0; i < m->graph->initializer_count; i++)
        n += cg_tensor_proto_bytes(&m->graph->initializers[i]);
    return n;
}

/* The source's reference outputs on every sample, frozen as DIR/golden
 * (made for the result: its model hash is model.onnx's), with each output's
 * noise floors (format 2, as dump-ref writes them): the source runs on the
 * float64, fp32 and fp16-storage references, so `verify DIR` and `gate
 * --golden` judge the result against the source's own noise. A source the
 * float64 reference cannot run (CG_UNSUPPORTED) gets a set without floors,
 * judged by the fixed tolerance (verify's note says so). */
static cg_status write_golden(const cg_model *source, cg_convert_result *r, const char *golden,
                              cg_error *err)
{
    cg_sample_source *src = NULL;
    cg_golden_dump_report rep;
    cg_golden_dump_options o;
    memset(&o, 0, sizeof o);
    memset(&rep, 0, sizeof rep);
    o.model_path = r->result_path;
    o.run_model = source;
    o.force = true;
    o.floors = true; /* the source's noise floors, where it has a float64 reference */
    o.floors_optional = true;
    o.max_alloc_bytes = r->opt->rewrite.max_alloc_bytes;
    o.created = r->created;
    cg_status st = cg_sample_source_open_set(source, r->opt->rewrite.samples, &src, err);
    if (st == CG_OK &&
        (st = cg_golden_dump(r->rewrite.model, src, golden, &o, &rep, err)) != CG_OK &&
        rep.model_failed)
        cg_error_prefix(err, "the source model: ");
    cg_golden_dump_report_free(&rep);
    cg_sample_source_free(src);
    return st;
}

/* Every file of the golden set, manifest first, into r->files. */
static cg_status list_golden(cg_convert_result *r, const char *golden, cg_error *err)
{
    cg_golden *g = NULL;
    char rel[ARTIFACT_PATH_MAX];
    cg_status st = cg_golden_open(golden, &g, err);
    if (st == CG_OK)
        st = add_written(r, "golden/manifest.json", err);
    for (size_t i = 0; g && st == CG_OK && i < g->set_count; i++) {
        const cg_golden_set *s = &g->sets[i];
        for (size_t k = 0; st == CG_OK && k < s->input_count + s->output_count; k++) {
            const cg_golden_tensor *t = k < s->input_count ? &s->inputs[k]
                                                           : &s->outputs[k - s->input_count];
            if (!join(rel, sizeof rel, "golden", t->file))
                st = cg_error_set(err, CG_LIMIT, "convert: golden path too long");
            else
                st = add_written(r, rel, err);
        }
    }
    cg_golden_free(g);
    return st;
}

/* The reference comparison's tolerance (see cg_convert_result.tol). */
static void resolve_tolerance(cg_convert_result *r)
{
    cg_tolerance d;
    cg_tolerance_default(&d, false);
    r->tol.have_atol = r->tol.have_rtol = true;
    r->tol.atol = d.atol;
    r->tol.rtol = d.rtol;
    snprintf(r->tol_justification, sizeof r->tol_justification, "%s", d.justification);
    for (size_t i = 0; i < r->rewrite.step_count; i++) {
        const cg_rewrite_step *s = &r->rewrite.steps[i];
        if (s->outcome != CG_STEP_APPLIED || s->info->numerics != CG_NUMERICS_CHANGES)
            continue;
        double worst = 0;
        for (size_t k = 0; k < s->check_count; k++)
            worst = s->checks[k].max_abs > worst ? s->checks[k].max_abs : worst;
        if (2 * worst > r->tol.atol) {
            r->tol.atol = 2 * worst;
            snprintf(r->tol_justification, sizeof r->tol_justification,
                     "atol widened to twice the %.3g the opted-in rewrite '%s' measurably changes",
                     worst, s->info->name);
        }
    }
}

/* The result's placement, as assign places it (on the graph the targets
 * partition: rw_place), and its work estimate. The work of a graph the
 * reference does not run (TFLite ops) is its source's, shared out over the
 * runtime nodes standing for each source node (cg_lowered_node_times), as
 * the timed estimate shares the source's times. */
static void place_result(cg_convert_result *r)
{
    const cg_rewrite_options *o = &r->opt->rewrite;
    const cg_model *model = r->rewrite.model;
    rw_placed pl;
    cg_type_env *source_types = NULL;
    double *src_ms = NULL, *ms = NULL;
    cg_error e;
    cg_error_clear(&e);
    if (rw_place(model, o, &pl, &e) != CG_OK) {
        snprintf(r->estimate_note, sizeof r->estimate_note, "no estimate: %.200s", e.msg);
        return;
    }
    if (!pl.a) {
        snprintf(r->estimate_note, sizeof r->estimate_note, "no estimate: %.200s", pl.why);
        rw_placed_free(&pl);
        return;
    }
    r->lowered = pl.lowered;
    r->types = pl.types;
    r->assignment = pl.a;
    if (!pl.lowered->declared_types) {
        if (cg_profile_work_estimate(r->assignment, r->types, CG_WORK_UNITS_PER_MS, &r->estimate,
                                     &e) != CG_OK) {
            snprintf(r->estimate_note, sizeof r->estimate_note, "no estimate: %.200s", e.msg);
            return;
        }
        r->estimated = true;
        return;
    }
    const cg_sample *fed = rw_fed_sample(o);
    size_t ns = model->graph->node_count, n = r->lowered->model->graph->node_count;
    cg_status st = cg_type_env_build_fed(model, o->dims, o->dim_count, o->random,
                                         fed ? fed->inputs : NULL, fed ? fed->input_count : 0,
                                         &source_types, &e);
    if (st == CG_OK && (!(src_ms = calloc(ns + 1, sizeof *src_ms)) ||
                        !(ms = calloc(n + 1, sizeof *ms))))
        st = cg_error_set(&e, CG_NOMEM, "out of memory");
    if (st == CG_OK) {
        for (size_t i = 0; i < ns; i++)
            src_ms[i] = cg_cost_node_work(model->graph, i, source_types) / CG_WORK_UNITS_PER_MS;
        cg_lowered_node_times(r->lowered, src_ms, ms);
        cg_cost_inputs in = {r->assignment, ms, 0.0, NULL, NULL, NULL, NULL};
        st = cg_cost_estimate_build(&in, &r->estimate, &e);
    }
    if (st == CG_OK)
        r->estimated = true;
    else
        snprintf(r->estimate_note, sizeof r->estimate_note, "no estimate: %.200s", e.msg);
    free(src_ms);
    free(ms);
    cg_type_env_free(source_types);
}

cg_status cg_convert_run(const cg_model *source, const char *source_path, const char *dir,
                         const cg_convert_options *opt, cg_convert_result *out, cg_error *err)
{
    cg_status st;
    char path[ARTIFACT_PATH_MAX], golden[ARTIFACT_PATH_MAX];
    cg_sample_set gsamples = {0};
    memset(out, 0, sizeof *out);
    out->opt = opt;
    if (!source || !source_path || !dir || !opt)
        return cg_error_set(err, CG_USAGE, "convert: a model, its path, a directory and "
                            "options are needed");
    out->dir = str_dup(dir);
    out->source_path = str_dup(source_path);
    out->source_name = str_dup(base_name(source_path));
    if (!out->dir || !out->source_path || !out->source_name || !join(path, sizeof path, dir,
                                                                     "model.onnx") ||
        !join(golden, sizeof golden, dir, "golden") || !(out->result_path = str_dup(path)))
        return cg_error_set(err, CG_NOMEM, "convert: out of memory or a path too long");
    fixed_time(out->created, sizeof out->created);
    if ((st = cg_sha256_file(source_path, out->source_sha256, &out->source_bytes, err)) != CG_OK)
        return st;
    /* 1. the source converts */
    cg_check_report rep;
    cg_error ce;
    cg_error_clear(&ce);
    st = cg_check_model(source, NULL, &rep, &ce);
    out->source_checks = st == CG_OK && rep.error_count == 0;
    if (st == CG_NOMEM) {
        cg_check_report_free(&rep);
        return cg_error_set(err, st, "%s", ce.msg);
    }
    snprintf(out->source_check_detail, sizeof out->source_check_detail,
             "%zu error%s, %zu warning%s%s%.400s", rep.error_count, rep.error_count == 1 ? "" : "s",
             rep.warning_count, rep.warning_count == 1 ? "" : "s", rep.error_count ? ": " : "",
             rep.error_count ? ce.msg : "");
    cg_check_report_free(&rep);
    if (!out->source_checks)
        return CG_OK; /* nothing is written for a model that does not convert */
    /* 2. the rewrites */
    if ((st = cg_rewrite_run(source, &opt->rewrite, &out->rewrite, err)) != CG_OK)
        return st;
    /* 3. the artifact: model.onnx (large weights beside it), golden/ */
    if ((st = prepare_dir(dir, opt->force, err)) != CG_OK)
        return st;
    if (opt->external_above && initializer_bytes(out->rewrite.model) > opt->external_above) {
        /* model.onnx.data exists only when some weight reached 1024 bytes */
        cg_save_options so = {"model.onnx.data", 1024};
        cg_save_written written;
        if ((st = cg_model_save_written(out->rewrite.model, path, &so, &written, err)) != CG_OK ||
            (st = add_written(out, "model.onnx", err)) != CG_OK)
            return st;
        out->external_data = written.external_file != NULL;
        if (out->external_data && (st = add_written(out, "model.onnx.data", err)) != CG_OK)
            return st;
    } else {
        uint8_t *bytes = NULL;
        size_t size = 0;
        if ((st = cg_model_serialize(out->rewrite.model, &bytes, &size, err)) == CG_OK)
            st = cg_convert_add_file(out, "model.onnx", bytes, size, err);
        free(bytes);
        if (st != CG_OK)
            return st;
    }
    if ((st = write_golden(source, out, golden, err)) != CG_OK ||
        (st = list_golden(out, golden, err)) != CG_OK)
        return st;
    /* 4. the result against the source's outputs: reference, then the target path */
    resolve_tolerance(out);
    cg_verify_options vo;
    memset(&vo, 0, sizeof vo);
    vo.dims = opt->rewrite.dims;
    vo.dim_count = opt->rewrite.dim_count;
    vo.random = opt->rewrite.random;
    vo.max_alloc_bytes = opt->rewrite.max_alloc_bytes;
    vo.tol = out->tol;
    if ((st = cg_verify_golden(out->rewrite.model, path, golden, &vo, &out->fp32, err)) != CG_OK)
        return st;
    memset(&vo.tol, 0, sizeof vo.tol);
    vo.targets = opt->rewrite.targets;
    vo.target_count = opt->rewrite.target_count;
    vo.accumulate = opt->rewrite.accumulate;
    cg_error te;
    cg_error_clear(&te);
    if ((st = cg_verify_golden(out->rewrite.model, path, golden, &vo, &out->target, &te)) !=
        CG_OK) {
        /* the target path not running is a finding for the manifest, not an error */
        if (st == CG_NOMEM)
            return cg_error_set(err, st, "%s", te.msg);
        cg_verify_report_free(&out->target);
        snprintf(out->target_note, sizeof out->target_note, "the target path did not run: "
                 "%.400s", te.msg);
    }
    /* 5. the gates, the golden sets as samples */
    if ((st = cg_samples_load_golden(out->rewrite.model, path, golden, 0, &gsamples, err)) != CG_OK)
        return st;
    cg_gate_options go;
    memset(&go, 0, sizeof go);
    go.targets = opt->rewrite.targets;
    go.target_count = opt->rewrite.target_count;
    go.dims = opt->rewrite.dims;
    go.dim_count = opt->rewrite.dim_count;
    go.random = opt->rewrite.random;
    go.accumulate = opt->rewrite.accumulate;
    go.samples = &gsamples;
    go.samples_desc = "the golden sets";
    st = cg_gate_run(out->rewrite.model, path, &go, &out->gate, err);
    cg_sample_set_free(&gsamples);
    if (st != CG_OK)
        return st;
    /* 6. placement, estimate, deployment lists */
    place_result(out);
    char *text = NULL;
    if ((st = cg_deploy_ort_config(out->rewrite.model, "model.onnx", &text, err)) == CG_OK)
        st = cg_convert_add_file(out, "deploy/ort_required_operators.config", text, strlen(text),
                                 err);
    free(text);
    text = NULL;
    if (st == CG_OK &&
        (st = cg_deploy_tflm_resolver(out->rewrite.model, &text, &out->tflm_missing, err)) ==
            CG_OK)
        st = cg_convert_add_file(out, "deploy/tflm_op_resolver.cc", text, strlen(text), err);
    free(text);
    return st;
}
