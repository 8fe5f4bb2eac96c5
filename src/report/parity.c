/*
 * Renderings of a parity report (convgate/parity.h): `convgate compare`'s
 * text and JSON, and `convgate verify`'s. Each output reads through the one
 * metrics object (report/metrics.c).
 */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>

#include "convgate/parity.h"
#include "report/report.h"

static const char *worst_sample(const cg_parity_report *r, const cg_parity_output *o)
{
    return o->merged.worst_sample >= 0 && (size_t)o->merged.worst_sample < r->sample_count
               ? r->sample_names[o->merged.worst_sample]
               : NULL;
}

static void task_text(FILE *f, const cg_parity_output *o)
{
    const cg_task_metrics *t = &o->task;
    if (t->task == CG_TASK_CLASSIFY) {
        if (!t->applicable || !t->rows)
            fprintf(f, "    task classify: not applicable (needs a float output whose last "
                       "axis has >= 2 classes)\n");
        else
            fprintf(f, "    task classify: top-1 agreement %" PRIu64 "/%" PRIu64 " (%.2f%%), "
                       "top-5 overlap %.2f%%\n", t->top1_agree, t->rows,
                    100.0 * cg_task_top1(t), 100.0 * cg_task_top5(t));
    } else if (t->task == CG_TASK_SEGMENT) {
        fprintf(f, "    task segment (> %g): mask IoU %.6f, foreground ref %" PRIu64
                   " target %" PRIu64 " (difference %+" PRId64 ")\n", t->threshold,
                cg_task_iou(t), t->fg_ref, t->fg_got, (int64_t)t->fg_got - (int64_t)t->fg_ref);
    }
}

void cg_report_parity_text(FILE *f, const cg_parity_report *r, const cg_parity_view *v)
{
    fprintf(f, "compare %s on %s%s\n", v->model, v->targets && *v->targets ? v->targets : "-",
            r->reduced ? " (reduced precision: fp16)" : "");
    fprintf(f, "target outputs: %s%s\n", v->outputs_from ? "read from " : "target path run here",
            v->outputs_from ? v->outputs_from : "");
    fprintf(f, "samples: %s\n", v->samples);
    for (size_t k = 0; k < r->output_count; k++) {
        const cg_parity_output *o = &r->outputs[k];
        fprintf(f, "\noutput %s: %s\n", o->name, o->merged.pass ? "PASS" : "FAIL");
        fprintf(f, "    tolerance atol %g rtol %g%s (%s)\n", o->tol.tol.atol, o->tol.tol.rtol,
                o->tol.tol.nan_equal ? " nan_equal" : "", o->tol.source);
        if (o->tol.tol.justification)
            fprintf(f, "    justification: %s\n", o->tol.tol.justification);
        cg_report_metrics_text(f, "    ", &o->merged, worst_sample(r, o), o->worst_rank,
                               o->worst_dims);
        if (o->failing_count) {
            size_t shown = 0;
            fprintf(f, "    failing samples: %zu of %zu:", o->failing_count, r->sample_count);
            for (size_t i = 0; i < r->sample_count && shown < 10; i++)
                if (!o->samples[i].pass)
                    fprintf(f, "%s %s (max_abs %.3g)", shown++ ? "," : "", r->sample_names[i],
                            o->samples[i].max_abs);
            fprintf(f, "%s\n", o->failing_count > 10 ? ", ..." : "");
        }
        if (o->fallback_suspect)
            fprintf(f, "    WARNING: bit-identical to the fp32 reference although the path "
                       "computes in reduced precision: it probably did not run on %s (silent "
                       "fallback?)\n", v->targets);
        task_text(f, o);
    }
    fprintf(f, "\nverdict: %s (%zu of %zu outputs outside tolerance over %zu samples)\n",
            r->pass ? "PASS" : "FAIL", r->failed_outputs, r->output_count, r->sample_count);
}

static json_t *task_json(const cg_parity_output *o)
{
    const cg_task_metrics *t = &o->task;
    json_t *j = json_object();
    cg_json_set(j, "output", cg_json_text(o->name));
    if (t->task == CG_TASK_CLASSIFY) {
        bool ok = t->applicable && t->rows;
        cg_json_set(j, "applicable", json_boolean(ok));
        cg_json_set(j, "rows", json_integer((json_int_t)t->rows));
        cg_json_set(j, "top1_agreement", ok ? cg_json_number(cg_task_top1(t)) : json_null());
        cg_json_set(j, "top5_overlap", ok ? cg_json_number(cg_task_top5(t)) : json_null());
    } else {
        cg_json_set(j, "iou", cg_json_number(cg_task_iou(t)));
        cg_json_set(j, "foreground_ref", json_integer((json_int_t)t->fg_ref));
        cg_json_set(j, "foreground_target", json_integer((json_int_t)t->fg_got));
        cg_json_set(j, "foreground_diff",
                    json_integer((json_int_t)t->fg_got - (json_int_t)t->fg_ref));
    }
    return j;
}

json_t *cg_report_parity_json(const cg_parity_report *r, const cg_parity_view *v)
{
    json_t *root = json_object(), *outs = json_array(), *task = json_object();
    json_t *tasks = json_array(), *targets = json_array();
    for (size_t i = 0; v->target_list && i < v->target_count; i++)
        json_array_append_new(targets, cg_json_text(v->target_list[i]->name));
    cg_json_set(root, "model", cg_json_text(v->model));
    cg_json_set(root, "target", cg_json_text(v->targets));
    cg_json_set(root, "targets", targets);
    cg_json_set(root, "reduced_precision", json_boolean(r->reduced));
    cg_json_set(root, "outputs_from", cg_json_text(v->outputs_from));
    cg_json_set(root, "pass", json_boolean(r->pass));
    cg_json_set(root, "samples", json_integer((json_int_t)r->sample_count));
    cg_json_set(root, "seed", v->random ? json_integer((json_int_t)v->seed) : json_null());
    cg_json_set(task, "kind", json_string(cg_task_name(v->task)));
    if (v->task == CG_TASK_SEGMENT)
        cg_json_set(task, "threshold", cg_json_number(v->threshold));
    for (size_t k = 0; k < r->output_count; k++) {
        const cg_parity_output *o = &r->outputs[k];
        json_t *j = cg_report_output_json(o->name, &o->merged, &o->tol.tol, o->tol.source,
                                          worst_sample(r, o), o->worst_rank, o->worst_dims);
        json_t *per = json_array();
        for (size_t i = 0; per && i < r->sample_count; i++) {
            const cg_parity_sample *p = &o->samples[i];
            json_t *js = json_object();
            cg_json_set(js, "set", cg_json_text(r->sample_names[i]));
            cg_json_set(js, "pass", json_boolean(p->pass));
            cg_json_set(js, "mismatches", json_integer((json_int_t)p->mismatches));
            cg_json_set(js, "max_abs", cg_json_number(p->max_abs));
            cg_json_set(js, "max_rel", cg_json_number(p->max_rel));
            cg_json_set(js, "cosine", cg_json_number(p->cosine));
            cg_json_set(js, "bit_identical", json_boolean(p->bit_identical));
            json_array_append_new(per, js);
        }
        if (!j)
            continue;
        cg_json_set(j, "silent_fallback_suspect", json_boolean(o->fallback_suspect));
        cg_json_set(j, "per_sample", per);
        json_array_append_new(outs, j);
        if (v->task != CG_TASK_NONE)
            json_array_append_new(tasks, task_json(o));
    }
    cg_json_set(task, "outputs", tasks);
    cg_json_set(root, "outputs", outs);
    cg_json_set(root, "task", task);
    return root;
}

/* --- verify ---------------------------------------------------------------------------- */

static void verify_line(FILE *f, const char *name, const cg_metrics *m)
{
    fprintf(f, "  %-20s %s  ", name, m->pass ? "PASS" : "FAIL");
    cg_report_metrics_line(f, m);
    if (m->worst_index >= 0 && !m->pass)
        fprintf(f, "; worst [%" PRId64 "] golden %.6g got %.6g", m->worst_index, m->worst_ref,
                m->worst_got);
    fputc('\n', f);
}

void cg_report_verify_text(FILE *f, const cg_verify_report *r, const char *golden,
                           const char *producer)
{
    for (size_t i = 0; i < r->set_count; i++) {
        fprintf(f, "set '%s'\n", r->sets[i].name);
        for (size_t k = 0; k < r->output_count; k++)
            verify_line(f, r->output_names[k], &r->sets[i].metrics[k]);
    }
    for (size_t k = 0; k < r->output_count; k++)
        if (r->tols[k].tol.justification)
            fprintf(f, "tolerance for '%s': atol %g rtol %g (%s): %s\n", r->output_names[k],
                    r->tols[k].tol.atol, r->tols[k].tol.rtol, r->tols[k].source,
                    r->tols[k].tol.justification);
    if (r->silent_fallback)
        fprintf(f, "warning: %s computes in reduced precision but every output is "
                   "bit-identical to fp32: it probably did not run there\n", producer);
    fprintf(f, "golden %s: %zu set%s, model sha256 %.12s..., made by convgate %s at %s\n",
            golden, r->set_count, r->set_count == 1 ? "" : "s", r->model_sha256,
            r->golden_version, r->golden_created);
    fprintf(f, "verdict: %s on %s (%zu/%zu outputs within tolerance)\n", r->pass ? "PASS" : "FAIL",
            producer, r->compared - r->failed, r->compared);
}

json_t *cg_report_verify_json(const cg_verify_report *r, const char *model, const char *golden,
                              const char *producer)
{
    json_t *root = json_object(), *sets = json_array(), *merged = json_array();
    for (size_t i = 0; i < r->set_count; i++) {
        json_t *js = json_object(), *outs = json_array();
        for (size_t k = 0; k < r->output_count; k++)
            json_array_append_new(outs, cg_report_output_json(r->output_names[k],
                                                              &r->sets[i].metrics[k],
                                                              &r->tols[k].tol, r->tols[k].source,
                                                              NULL, -1, NULL));
        cg_json_set(js, "name", cg_json_text(r->sets[i].name));
        cg_json_set(js, "pass", json_boolean(r->sets[i].pass));
        cg_json_set(js, "outputs", outs);
        json_array_append_new(sets, js);
    }
    for (size_t k = 0; k < r->output_count; k++) {
        const cg_metrics *m = &r->merged[k];
        const char *sample = m->worst_sample >= 0 && (size_t)m->worst_sample < r->set_count
                                 ? r->sets[m->worst_sample].name
                                 : NULL;
        json_array_append_new(merged, cg_report_output_json(r->output_names[k], m,
                                                            &r->tols[k].tol, r->tols[k].source,
                                                            sample, -1, NULL));
    }
    cg_json_set(root, "model", cg_json_text(model));
    cg_json_set(root, "model_sha256", json_string(r->model_sha256));
    cg_json_set(root, "golden", cg_json_text(golden));
    cg_json_set(root, "golden_convgate_version", cg_json_text(r->golden_version));
    cg_json_set(root, "golden_created", cg_json_text(r->golden_created));
    cg_json_set(root, "target", cg_json_text(producer));
    cg_json_set(root, "reduced_precision", json_boolean(r->reduced));
    cg_json_set(root, "silent_fallback_suspect", json_boolean(r->silent_fallback));
    cg_json_set(root, "pass", json_boolean(r->pass));
    cg_json_set(root, "sets", sets);
    cg_json_set(root, "outputs", merged);
    return root;
}
