/*
 * Renderings of a parity report (convgate/parity.h): `convgate compare`'s
 * text and JSON, `convgate verify`'s, and the judged outputs gate 3 shows.
 * Each output reads through the one metrics object (report/metrics.c) for
 * its absolute figures, and through one judgement block: the verdict
 * against the noise floor with its ratio, or the tolerance that overrode it.
 */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "convgate/parity.h"
#include "core/text.h"
#include "report/report.h"

static const char *worst_sample(const cg_parity_report *r, const cg_parity_output *o)
{
    return o->merged.worst_sample >= 0 && (size_t)o->merged.worst_sample < r->sample_count
               ? r->sample_names[o->merged.worst_sample]
               : NULL;
}

/* --- one judged output ------------------------------------------------------------------ */

const char *cg_report_output_state(const cg_parity_output *o)
{
    if (o->by_noise)
        return cg_verdict_name(o->verdict.verdict);
    return o->pass ? "within tolerance" : "outside tolerance";
}

void cg_report_judged_text(FILE *f, const char *ind, const cg_parity_output *o)
{
    if (!o->by_noise) {
        cg_text_printf(f, "%sjudged by tolerance atol %g rtol %g%s (%s%s)\n", ind, o->tol.tol.atol,
                       o->tol.tol.rtol, o->tol.tol.nan_equal ? " nan_equal" : "", o->tol.source,
                       strcmp(o->tol.source, "default")
                           ? ": given, it overrides the noise-floor verdict"
                           : "");
        if (o->tol.tol.justification)
            cg_text_printf(f, "%sjustification: %s\n", ind, o->tol.tol.justification);
        return;
    }
    cg_text_printf(f, "%s%s: %s\n", ind, cg_verdict_name(o->verdict.verdict), o->verdict.reason);
    for (int c = 0; c < 2 && o->device_class[0] && o->device_class[1]; c++)
        cg_text_printf(f, "%s  %s: %s, %.3gx the %s floor\n", ind, o->device_class[c],
                       cg_verdict_name(o->class_verdict[c].verdict), o->class_verdict[c].ratio,
                       o->class_verdict[c].against == CG_PRECISION_FP32 ? "fp32"
                       : c == 0 && o->floor16_sums_measured             ? "fp16-sums"
                                                                        : "fp16 storage");
    if (o->detection)
        return;
    cg_text_printf(f, "%snoise floors (against float64): fp32 %.3g", ind, o->floor32.m.max_abs);
    if (o->floor16_measured)
        fprintf(f, ", fp16 storage %.3g", o->floor16.m.max_abs);
    if (o->floor16_sums_measured)
        fprintf(f, ", fp16 storage and sums %.3g", o->floor16_sums.m.max_abs);
    if (o->floor16_stop.stopped) {
        char why[640];
        cg_run_stop_describe(&o->floor16_stop, why, sizeof why);
        fprintf(f, ", fp16 storage: not measurable (the fp16 storage reference stopped on "
                   "sample %zu: %s)", o->floor16_stop.sample, why);
    }
    cg_text_printf(f, ", scale %.4g; error against %s %.3g%s\n", cg_noise_scale(&o->floor32),
                   o->against_golden ? "the golden outputs" : "float64", o->error.m.max_abs,
                   o->discontinuous ? " (downstream of a decision)" : "");
    if (o->flips_compared && o->flips.flips && o->flips.margin_known)
        cg_text_printf(f, "%sdecisions: %" PRIu64 " of %" PRIu64 " flipped, largest margin %.3g at "
                          "'%s'\n", ind, o->flips.flips, o->flips.decisions, o->flips.max_margin,
                       o->flips.node);
    else if (o->flips_compared && o->flips.flips)
        cg_text_printf(f, "%sdecisions: %" PRIu64 " of %" PRIu64 " flipped at '%s' (no margin rule "
                          "for the op)\n", ind, o->flips.flips, o->flips.decisions, o->flips.node);
}

int cg_report_judged_json(json_t *obj, const cg_parity_output *o)
{
    int rc = cg_json_set(obj, "within_tolerance", json_boolean(o->merged.pass));
    rc |= cg_json_set(obj, "pass", json_boolean(o->pass));
    rc |= cg_json_set(obj, "judged_by", cg_json_text(o->by_noise ? "noise floor" : "tolerance"));
    if (!o->by_noise) {
        rc |= cg_json_set(obj, "verdict", json_null());
        rc |= cg_json_set(obj, "noise", json_null());
        return rc ? -1 : 0;
    }
    json_t *n = json_object();
    rc |= cg_json_set(obj, "verdict", cg_report_judgement_json(&o->verdict));
    rc |= cg_json_set(n, "fp32_floor", cg_report_noise_stats_json(&o->floor32));
    rc |= cg_json_set(n, "fp16_floor", o->floor16_measured
                                             ? cg_report_noise_stats_json(&o->floor16)
                                             : json_null());
    rc |= cg_json_set(n, "fp16_sums_floor", o->floor16_sums_measured
                                                  ? cg_report_noise_stats_json(&o->floor16_sums)
                                                  : json_null());
    rc |= cg_json_set(n, "fp16_floor_stop", cg_report_run_stop_json(&o->floor16_stop));
    rc |= cg_json_set(n, "error", cg_report_noise_stats_json(&o->error));
    rc |= cg_json_set(n, "scale", cg_json_number(cg_noise_scale(&o->floor32)));
    rc |= cg_json_set(n, "discontinuous", json_boolean(o->discontinuous));
    rc |= cg_json_set(n, "flips", o->flips_compared ? cg_report_flips_json(&o->flips)
                                                    : json_null());
    rc |= cg_json_set(n, "detection", json_boolean(o->detection));
    rc |= cg_json_set(n, "error_against", cg_json_text(o->against_golden ? "golden outputs"
                                                                          : "float64 reference"));
    rc |= cg_json_set(obj, "noise", n);
    json_t *classes = o->device_class[0] && o->device_class[1] ? json_array() : json_null();
    for (int c = 0; c < 2 && json_is_array(classes); c++) {
        json_t *jc = json_object();
        rc |= !jc || json_array_append_new(classes, jc) != 0;
        rc |= cg_json_set(jc, "name", cg_json_text(o->device_class[c]));
        rc |= cg_json_set(jc, "accumulate", cg_json_text(cg_accumulate_name(
                                 c == 0 ? CG_ACCUMULATE_FP16 : CG_ACCUMULATE_FP32)));
        rc |= cg_json_set(jc, "verdict", cg_report_judgement_json(&o->class_verdict[c]));
    }
    rc |= cg_json_set(obj, "device_classes", classes);
    return rc ? -1 : 0;
}

json_t *cg_report_parity_output_json(const cg_parity_report *r, const cg_parity_output *o)
{
    json_t *j = cg_report_output_json(o->name, &o->merged, &o->tol.tol, o->tol.source,
                                      worst_sample(r, o), o->worst_rank, o->worst_dims);
    if (j && cg_report_judged_json(j, o) != 0) {
        json_decref(j);
        return NULL;
    }
    return j;
}

/* --- tasks --------------------------------------------------------------------------- */

/* The task metrics against the float64 reference: the target's changed
 * decisions beside a correct implementation's (fp32 reference, fp16
 * storage), and whether the target's are within the noise. */
static void task_noise_text(FILE *f, const char *ind, const cg_parity_output *o)
{
    const cg_task_metrics *t = &o->task_target64;
    if (!o->task_noise || !t->applicable)
        return;
    const char *what = t->task == CG_TASK_CLASSIFY ? "rows whose top-1 changed"
                       : t->multiclass              ? "pixels whose class changed"
                                                    : "mask pixels that flipped";
    cg_text_printf(f, "%s  against float64, %s: target %" PRIu64 "; a correct run: fp32 "
                      "reference %" PRIu64, ind, what, t->flips, o->task_fp32.flips);
    if (o->task_fp16_measured)
        fprintf(f, ", fp16 storage %" PRIu64, o->task_fp16.flips);
    if (t->task == CG_TASK_SEGMENT) {
        double (*iou)(const cg_task_metrics *) = t->multiclass ? cg_task_mean_iou : cg_task_iou;
        cg_text_printf(f, "; %s: target %.6f, fp32 reference %.6f",
                       t->multiclass ? "mean IoU" : "mask IoU", iou(t), iou(&o->task_fp32));
        if (o->task_fp16_measured)
            fprintf(f, ", fp16 storage %.6f", iou(&o->task_fp16));
    }
    if (t->flips)
        cg_text_printf(f, "; the target's largest reference gap %.3g is %s the noise (limit %.3g)",
                       t->max_margin, o->task_flips_noise ? "within" : "beyond", o->task_limit);
    fputc('\n', f);
    if (o->task_judged)
        cg_text_printf(f, "%s  task verdict: %s: %" PRIu64 " changed, at most %" PRIu64
                          " allowed (%dx the correct run's %" PRIu64 " + %g of %" PRIu64
                          ")%s\n",
                       ind, o->task_pass ? "PASS" : "FAIL", t->flips, o->task_allowed,
                       CG_TASK_FLIP_FACTOR, o->task_correct_flips, CG_TASK_FLIP_SLACK,
                       cg_task_decisions(t),
                       o->task_flips_noise ? "" : "; a change is beyond the noise");
}

void cg_report_task_text(FILE *f, const char *ind, const cg_parity_output *o)
{
    const cg_task_metrics *t = &o->task;
    if (t->task == CG_TASK_CLASSIFY) {
        if (!t->applicable || !t->rows)
            cg_text_printf(f, "%stask classify: not applicable (needs a float output whose last "
                              "axis has >= 2 classes)\n", ind);
        else {
            /* the newline outside cg_text_printf, which escapes its strings */
            cg_text_printf(f, "%stask classify: top-1 agreement %" PRIu64 "/%" PRIu64 " (%.2f%%), "
                              "top-5 overlap %.2f%%", ind, t->top1_agree, t->rows,
                           100.0 * cg_task_top1(t), 100.0 * cg_task_top5(t));
            if (!t->flips)
                fputc('\n', f);
        }
        if (t->applicable && t->rows && t->flips)
            cg_text_printf(f, "; top-1 differs on %" PRIu64 " row%s, largest reference gap %.3g\n",
                           t->flips, t->flips == 1 ? "" : "s", t->max_margin);
    } else if (t->task == CG_TASK_SEGMENT && t->multiclass) {
        cg_text_printf(f, "%stask segment (argmax over %" PRId64 " classes): pixel agreement "
                          "%.4f%%, mean IoU %.6f",
                       ind, t->classes, 100.0 * cg_task_pixel_agreement(t),
                       cg_task_mean_iou(t));
        if (t->flips)
            fprintf(f, "; class differs on %" PRIu64 " of %" PRIu64 " pixels, largest "
                       "reference gap %.3g", t->flips, t->pixels, t->max_margin);
        fputc('\n', f);
    } else if (t->task == CG_TASK_SEGMENT) {
        cg_text_printf(f, "%stask segment (> %g): mask IoU %.6f, foreground ref %" PRIu64
                          " target %" PRIu64 " (difference %+" PRId64 ")", ind, t->threshold,
                       cg_task_iou(t), t->fg_ref, t->fg_got,
                       (int64_t)t->fg_got - (int64_t)t->fg_ref);
        if (t->flips)
            fprintf(f, "; largest margin of a flipped pixel %.3g", t->max_margin);
        fputc('\n', f);
    } else {
        return;
    }
    task_noise_text(f, ind, o);
}

/* One task metric block against float64: its changed decisions and IoU. */
static json_t *task_side_json(const cg_task_metrics *t)
{
    json_t *j = json_object();
    cg_json_set(j, "flips", json_integer((json_int_t)t->flips));
    cg_json_set(j, "max_margin", cg_json_number(t->max_margin));
    if (t->task == CG_TASK_SEGMENT)
        cg_json_set(j, "iou", cg_json_number(t->multiclass ? cg_task_mean_iou(t)
                                                           : cg_task_iou(t)));
    return j;
}

/* {target, fp32_reference, fp16_storage, limit, within_noise} or null. */
static json_t *task_noise_json(const cg_parity_output *o)
{
    if (!o->task_noise || !o->task_target64.applicable)
        return json_null();
    json_t *j = json_object();
    cg_json_set(j, "target", task_side_json(&o->task_target64));
    cg_json_set(j, "fp32_reference", task_side_json(&o->task_fp32));
    cg_json_set(j, "fp16_storage",
                o->task_fp16_measured ? task_side_json(&o->task_fp16) : json_null());
    cg_json_set(j, "limit", cg_json_number(o->task_limit));
    cg_json_set(j, "within_noise", json_boolean(o->task_flips_noise));
    cg_json_set(j, "decisions", json_integer((json_int_t)cg_task_decisions(&o->task_target64)));
    cg_json_set(j, "judged", json_boolean(o->task_judged));
    cg_json_set(j, "correct_flips",
                o->task_judged ? json_integer((json_int_t)o->task_correct_flips) : json_null());
    cg_json_set(j, "allowed",
                o->task_judged ? json_integer((json_int_t)o->task_allowed) : json_null());
    cg_json_set(j, "pass", o->task_judged ? json_boolean(o->task_pass) : json_null());
    return j;
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
        cg_json_set(j, "multiclass", json_boolean(t->multiclass));
        cg_json_set(j, "iou", t->multiclass ? json_null() : cg_json_number(cg_task_iou(t)));
        cg_json_set(j, "foreground_ref", json_integer((json_int_t)t->fg_ref));
        cg_json_set(j, "foreground_target", json_integer((json_int_t)t->fg_got));
        cg_json_set(j, "foreground_diff",
                    json_integer((json_int_t)t->fg_got - (json_int_t)t->fg_ref));
        cg_json_set(j, "classes", json_integer((json_int_t)t->classes));
        cg_json_set(j, "pixels", json_integer((json_int_t)t->pixels));
        cg_json_set(j, "pixel_agreement", cg_json_number(cg_task_pixel_agreement(t)));
        cg_json_set(j, "mean_iou", cg_json_number(cg_task_mean_iou(t)));
    }
    cg_json_set(j, "flips", json_integer((json_int_t)t->flips));
    cg_json_set(j, "max_margin", cg_json_number(t->max_margin));
    cg_json_set(j, "against_fp64", task_noise_json(o));
    return j;
}

void cg_report_detect_text(FILE *f, const char *ind, const cg_parity_report *r,
                           const char *const *names)
{
    const cg_detect_report *d = &r->detect;
    if (!d->on)
        return;
    cg_text_printf(f, "%stask detect (boxes '%s', scores '%s'%s%s%s, matched by IoU >= %g%s): "
                      "%" PRIu64 " reference boxes, %" PRIu64 " target boxes, %" PRIu64 " matched "
                      "(lowest IoU %.4f), %" PRIu64 " missing, %" PRIu64 " extra; largest score "
                      "difference %.3g, box coordinate %.3g\n",
                   ind, names[d->outputs.boxes], names[d->outputs.scores],
                   d->outputs.labels >= 0 ? ", labels '" : "",
                   d->outputs.labels >= 0 ? names[d->outputs.labels] : "",
                   d->outputs.labels >= 0 ? "'" : "", d->iou_min,
                   d->outputs.labels >= 0 ? " and class" : "", d->ref_boxes, d->target_boxes,
                   d->matched, d->min_iou, d->missing, d->extra, d->max_score_diff,
                   d->max_box_diff);
    if (!r->by_noise)
        return;
    cg_text_printf(f, "%sdetections: %s: %s\n", ind, cg_verdict_name(d->verdict.verdict),
                   d->verdict.reason);
    for (int c = 0; c < 2 && d->device_class[0] && d->device_class[1]; c++)
        cg_text_printf(f, "%s  %s: %s: %s\n", ind, d->device_class[c],
                       cg_verdict_name(d->class_verdict[c].verdict), d->class_verdict[c].reason);
}

static json_t *detect_json(const cg_parity_report *r, const char *const *names)
{
    const cg_detect_report *d = &r->detect;
    json_t *j = json_object();
    cg_json_set(j, "boxes", cg_json_text(names[d->outputs.boxes]));
    cg_json_set(j, "scores", cg_json_text(names[d->outputs.scores]));
    cg_json_set(j, "labels", d->outputs.labels >= 0 ? cg_json_text(names[d->outputs.labels])
                                                    : json_null());
    cg_json_set(j, "iou_min", cg_json_number(d->iou_min));
    cg_json_set(j, "ref_boxes", json_integer((json_int_t)d->ref_boxes));
    cg_json_set(j, "target_boxes", json_integer((json_int_t)d->target_boxes));
    cg_json_set(j, "matched", json_integer((json_int_t)d->matched));
    cg_json_set(j, "missing", json_integer((json_int_t)d->missing));
    cg_json_set(j, "extra", json_integer((json_int_t)d->extra));
    cg_json_set(j, "min_iou", cg_json_number(d->min_iou));
    cg_json_set(j, "max_score_diff", cg_json_number(d->max_score_diff));
    cg_json_set(j, "max_box_diff", cg_json_number(d->max_box_diff));
    cg_json_set(j, "flips", cg_report_flips_json(&d->flips));
    cg_json_set(j, "pass", json_boolean(r->by_noise ? d->pass : true));
    cg_json_set(j, "verdict", r->by_noise ? cg_report_judgement_json(&d->verdict) : json_null());
    json_t *classes = r->by_noise && d->device_class[0] && d->device_class[1] ? json_array()
                                                                              : json_null();
    for (int c = 0; c < 2 && json_is_array(classes); c++) {
        json_t *jc = json_object();
        if (!jc || json_array_append_new(classes, jc) != 0)
            break;
        cg_json_set(jc, "name", cg_json_text(d->device_class[c]));
        cg_json_set(jc, "accumulate", cg_json_text(c == 0 ? "fp16" : "fp32"));
        cg_json_set(jc, "verdict", cg_report_judgement_json(&d->class_verdict[c]));
    }
    cg_json_set(j, "device_classes", classes);
    return j;
}

json_t *cg_report_task_json(const cg_parity_report *r, cg_task task, double threshold)
{
    json_t *j = json_object(), *outs = json_array();
    const char **names = calloc(r->output_count + 1, sizeof *names);
    for (size_t k = 0; names && k < r->output_count; k++)
        names[k] = r->outputs[k].name;
    cg_json_set(j, "kind", json_string(cg_task_name(task)));
    if (task == CG_TASK_SEGMENT)
        cg_json_set(j, "threshold", cg_json_number(threshold));
    for (size_t k = 0; task != CG_TASK_NONE && task != CG_TASK_DETECT && k < r->output_count;
         k++)
        json_array_append_new(outs, task_json(&r->outputs[k]));
    cg_json_set(j, "outputs", outs);
    if (task == CG_TASK_DETECT)
        cg_json_set(j, "detect", r->detect.on && names ? detect_json(r, names) : json_null());
    free(names);
    return j;
}

/* --- compare ------------------------------------------------------------------------- */

void cg_report_parity_text(FILE *f, const cg_parity_report *r, const cg_parity_view *v)
{
    cg_text_printf(f, "compare %s on %s%s\n", v->model,
                   v->targets && *v->targets ? v->targets : "-",
                   r->reduced ? " (reduced precision: fp16)" : "");
    if (v->producer)
        cg_text_printf(f, "target outputs: %s\n", v->producer);
    else
        cg_text_printf(f, "target outputs: %s%s\n",
                       v->outputs_from ? "read from " : "target path run here",
                       v->outputs_from ? v->outputs_from : "");
    cg_text_printf(f, "samples: %s\n", v->samples);
    if (r->by_noise)
        fprintf(f, "judged against the model's noise floor (float64 reference; "
                   "docs/noise-floor.md)\n");
    if (r->note[0])
        cg_text_printf(f, "note: %s\n", r->note);
    for (size_t k = 0; k < r->output_count; k++) {
        const cg_parity_output *o = &r->outputs[k];
        cg_text_printf(f, "\noutput %s: %s (%s%s)\n", o->name, o->pass ? "PASS" : "FAIL",
                       cg_report_output_state(o),
                       o->by_noise && o->verdict.vacuous ? ", vacuous" : "");
        cg_report_judged_text(f, "    ", o);
        if (o->by_noise)
            cg_text_printf(f, "    against the fp32 reference%s (mismatches at atol %g rtol %g, "
                              "not the verdict):\n", o->detection ? ", in output order" : "",
                           o->tol.tol.atol, o->tol.tol.rtol);
        cg_report_metrics_text(f, "    ", &o->merged, worst_sample(r, o), o->worst_rank,
                               o->worst_dims);
        if (o->failing_count) {
            size_t shown = 0;
            fprintf(f, "    failing samples: %zu of %zu:", o->failing_count, r->sample_count);
            for (size_t i = 0; i < r->sample_count && shown < 10; i++)
                if (!o->samples[i].pass)
                    cg_text_printf(f, "%s %s (max_abs %.3g)", shown++ ? "," : "",
                                   r->sample_names[i], o->samples[i].max_abs);
            cg_text_printf(f, "%s\n", o->failing_count > 10 ? ", ..." : "");
        }
        if (o->fallback_suspect)
            cg_text_printf(f, "    WARNING: bit-identical to the fp32 reference although the path "
                              "computes in reduced precision: it probably did not run on %s "
                              "(silent fallback?)\n", v->targets);
        cg_report_task_text(f, "    ", o);
    }
    if (r->detect.on) {
        const char **names = calloc(r->output_count + 1, sizeof *names);
        for (size_t k = 0; names && k < r->output_count; k++)
            names[k] = r->outputs[k].name;
        if (names) {
            fputc('\n', f);
            cg_report_detect_text(f, "", r, names);
        }
        free(names);
    }
    cg_text_printf(f, "\nverdict: %s (%zu of %zu outputs fail over %zu samples)\n",
                   r->pass ? "PASS" : "FAIL", r->failed_outputs, r->output_count, r->sample_count);
}

json_t *cg_report_parity_json(const cg_parity_report *r, const cg_parity_view *v)
{
    json_t *root = json_object(), *outs = json_array(), *targets = json_array();
    for (size_t i = 0; v->target_list && i < v->target_count; i++)
        json_array_append_new(targets, cg_json_text(v->target_list[i]->name));
    cg_json_set(root, "model", cg_json_text(v->model));
    cg_json_set(root, "target", cg_json_text(v->targets));
    cg_json_set(root, "targets", targets);
    cg_json_set(root, "reduced_precision", json_boolean(r->reduced));
    cg_json_set(root, "precision", cg_json_text(cg_precision_name(r->precision)));
    cg_json_set(root, "outputs_from", cg_json_text(v->outputs_from));
    if (v->producer)
        cg_json_set(root, "produced_by", cg_json_text(v->producer));
    cg_json_set(root, "pass", json_boolean(r->pass));
    cg_json_set(root, "judged_by_noise_floor", json_boolean(r->by_noise));
    cg_json_set(root, "note", r->note[0] ? cg_json_text(r->note) : json_null());
    cg_json_set(root, "samples", json_integer((json_int_t)r->sample_count));
    cg_json_set(root, "seed", v->random ? json_integer((json_int_t)v->seed) : json_null());
    for (size_t k = 0; k < r->output_count; k++) {
        const cg_parity_output *o = &r->outputs[k];
        json_t *j = cg_report_parity_output_json(r, o);
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
            cg_json_set(js, "error", o->by_noise ? cg_json_number(p->error) : json_null());
            json_array_append_new(per, js);
        }
        if (!j) {
            json_decref(per);
            continue;
        }
        cg_json_set(j, "silent_fallback_suspect", json_boolean(o->fallback_suspect));
        cg_json_set(j, "per_sample", per);
        json_array_append_new(outs, j);
    }
    cg_json_set(root, "outputs", outs);
    cg_json_set(root, "task", cg_report_task_json(r, v->task, v->threshold));
    return root;
}

/* --- verify ---------------------------------------------------------------------------- */

static void verify_line(FILE *f, const cg_parity_output *o, size_t set)
{
    const cg_metrics *m = &o->per_sample[set];
    cg_text_printf(f, "  %-20s %s  ", o->name, o->samples[set].pass ? "PASS" : "FAIL");
    cg_report_metrics_line(f, m);
    if (m->worst_index >= 0 && !o->samples[set].pass)
        fprintf(f, "; worst [%" PRId64 "] golden %.6g got %.6g", m->worst_index, m->worst_ref,
                m->worst_got);
    fputc('\n', f);
}

void cg_report_verify_text(FILE *f, const cg_verify_report *r, const char *golden,
                           const char *producer)
{
    const cg_parity_report *p = &r->parity;
    for (size_t i = 0; i < p->sample_count; i++) {
        cg_text_printf(f, "set '%s'\n", p->sample_names[i]);
        for (size_t k = 0; k < p->output_count; k++)
            verify_line(f, &p->outputs[k], i);
    }
    if (p->note[0])
        cg_text_printf(f, "note: %s\n", p->note);
    for (size_t k = 0; k < p->output_count; k++) {
        const cg_parity_output *o = &p->outputs[k];
        cg_text_printf(f, "output '%s': %s (%s)\n", o->name, o->pass ? "PASS" : "FAIL",
                       cg_report_output_state(o));
        cg_report_judged_text(f, "  ", o);
    }
    if (r->silent_fallback)
        cg_text_printf(f, "warning: %s computes in reduced precision but every output is "
                          "bit-identical to fp32: it probably did not run there\n", producer);
    cg_text_printf(f, "golden %s: %zu set%s, model sha256 %.12s..., made by convgate %s at %s\n",
                   golden, p->sample_count, p->sample_count == 1 ? "" : "s", r->model_sha256,
                   r->golden_version, r->golden_created);
    cg_text_printf(f, "verdict: %s on %s (%zu/%zu outputs %s)\n", r->pass ? "PASS" : "FAIL",
                   producer, r->compared - r->failed, r->compared,
                   p->by_noise ? "within the noise floor" : "within tolerance");
}

json_t *cg_report_verify_json(const cg_verify_report *r, const char *model, const char *golden,
                              const char *producer)
{
    const cg_parity_report *p = &r->parity;
    json_t *root = json_object(), *sets = json_array(), *merged = json_array();
    for (size_t i = 0; i < p->sample_count; i++) {
        json_t *js = json_object(), *outs = json_array();
        bool pass = true;
        for (size_t k = 0; k < p->output_count; k++) {
            const cg_parity_output *o = &p->outputs[k];
            json_t *jo = cg_report_output_json(o->name, &o->per_sample[i], &o->tol.tol,
                                               o->tol.source, NULL, -1, NULL);
            if (jo) {
                cg_json_set(jo, "within_tolerance", json_boolean(o->per_sample[i].pass));
                cg_json_set(jo, "pass", json_boolean(o->samples[i].pass));
                json_array_append_new(outs, jo);
            }
            pass = pass && o->samples[i].pass;
        }
        cg_json_set(js, "name", cg_json_text(p->sample_names[i]));
        cg_json_set(js, "pass", json_boolean(pass));
        cg_json_set(js, "outputs", outs);
        json_array_append_new(sets, js);
    }
    for (size_t k = 0; k < p->output_count; k++)
        json_array_append_new(merged, cg_report_parity_output_json(p, &p->outputs[k]));
    cg_json_set(root, "model", cg_json_text(model));
    cg_json_set(root, "model_sha256", json_string(r->model_sha256));
    cg_json_set(root, "golden", cg_json_text(golden));
    cg_json_set(root, "golden_convgate_version", cg_json_text(r->golden_version));
    cg_json_set(root, "golden_created", cg_json_text(r->golden_created));
    cg_json_set(root, "golden_format_version", json_integer((json_int_t)r->golden_format));
    cg_json_set(root, "target", cg_json_text(producer));
    cg_json_set(root, "reduced_precision", json_boolean(p->reduced));
    cg_json_set(root, "precision", cg_json_text(cg_precision_name(p->precision)));
    cg_json_set(root, "judged_by_noise_floor", json_boolean(p->by_noise));
    cg_json_set(root, "note", p->note[0] ? cg_json_text(p->note) : json_null());
    cg_json_set(root, "silent_fallback_suspect", json_boolean(r->silent_fallback));
    cg_json_set(root, "pass", json_boolean(r->pass));
    cg_json_set(root, "sets", sets);
    cg_json_set(root, "outputs", merged);
    return root;
}
