/*
 * Renderings of noise floors, flips and verdicts (convgate/noise.h) for
 * `convgate noise`: per output its floors, then each judged side's verdict
 * with the ratio to the floor of its precision. JSON through report/json.h
 * (inf and NaN as strings, never dropped).
 */
#include <math.h>
#include <string.h>

#include "report/report.h"
#include "core/text.h"

static void stats_text(FILE *f, const char *indent, const char *label, const cg_noise_stats *s)
{
    if (!s->dist.count) {
        cg_text_printf(f, "%s%-19s not measured\n", indent, label);
        return;
    }
    cg_text_printf(f, "%s%-19s max %-10.3g (%.3g of scale)  p50 %-9.3g p99 %-9.3g differ %llu/%llu",
                   indent, label, s->m.max_abs, cg_noise_rel(s), cg_noise_quantile(s, 0.5),
                   cg_noise_quantile(s, 0.99), (unsigned long long)s->m.mismatches,
                   (unsigned long long)s->dist.count);
    if (s->dist.nonfinite)
        fprintf(f, "  inf/NaN %llu", (unsigned long long)s->dist.nonfinite);
    fputc('\n', f);
}

json_t *cg_report_noise_stats_json(const cg_noise_stats *s)
{
    json_t *o = json_object();
    bool ok = o && cg_json_set(o, "count", json_integer((json_int_t)s->dist.count)) == 0 &&
              cg_json_set(o, "differing", json_integer((json_int_t)s->m.mismatches)) == 0 &&
              cg_json_set(o, "nonfinite", json_integer((json_int_t)s->dist.nonfinite)) == 0 &&
              cg_json_set(o, "max_abs", cg_json_number(s->m.max_abs)) == 0 &&
              cg_json_set(o, "mean_abs", cg_json_number(s->m.mean_abs)) == 0 &&
              cg_json_set(o, "rel", cg_json_number(cg_noise_rel(s))) == 0 &&
              cg_json_set(o, "p50", cg_json_number(cg_noise_quantile(s, 0.5))) == 0 &&
              cg_json_set(o, "p90", cg_json_number(cg_noise_quantile(s, 0.9))) == 0 &&
              cg_json_set(o, "p99", cg_json_number(cg_noise_quantile(s, 0.99))) == 0;
    if (!ok) {
        json_decref(o);
        return NULL;
    }
    return o;
}

json_t *cg_report_flips_json(const cg_flip_stats *f)
{
    json_t *o = json_object();
    bool ok = o && cg_json_set(o, "decisions", json_integer((json_int_t)f->decisions)) == 0 &&
              cg_json_set(o, "flips", json_integer((json_int_t)f->flips)) == 0 &&
              cg_json_set(o, "noise_fp32", json_integer((json_int_t)f->noise_fp32)) == 0 &&
              cg_json_set(o, "noise_fp16", json_integer((json_int_t)f->noise_fp16)) == 0 &&
              cg_json_set(o, "max_margin", cg_json_number(f->max_margin)) == 0 &&
              cg_json_set(o, "min_margin", cg_json_number(f->min_margin)) == 0 &&
              cg_json_set(o, "max_steps", json_integer((json_int_t)f->max_steps)) == 0 &&
              cg_json_set(o, "node", cg_json_text(f->node)) == 0 &&
              cg_json_set(o, "margin_known", json_boolean(f->margin_known)) == 0;
    if (!ok) {
        json_decref(o);
        return NULL;
    }
    return o;
}

json_t *cg_report_run_stop_json(const cg_run_stop *s)
{
    if (!s || !s->stopped)
        return json_null();
    const cg_nonfinite_site *x = &s->site;
    char line[640];
    cg_run_stop_describe(s, line, sizeof line);
    json_t *o = json_object();
    bool ok = o && cg_json_set(o, "node", cg_json_text(x->node)) == 0 &&
              cg_json_set(o, "op_type", cg_json_text(x->op)) == 0 &&
              cg_json_set(o, "tensor", cg_json_text(x->value)) == 0 &&
              cg_json_set(o, "index", json_integer((json_int_t)x->index)) == 0 &&
              cg_json_set(o, "value", cg_json_number(x->got)) == 0 &&
              cg_json_set(o, "fp64", x->ref_known ? cg_json_number(x->ref) : json_null()) == 0 &&
              cg_json_set(o, "overflow", json_boolean(!isnan(x->got) && x->ref_known &&
                                                      fabs(x->ref) > 65504.0)) == 0 &&
              cg_json_set(o, "nonfinite", json_integer((json_int_t)x->count)) == 0 &&
              cg_json_set(o, "elements", json_integer((json_int_t)x->numel)) == 0 &&
              cg_json_set(o, "stopped_by", cg_json_text(s->message)) == 0 &&
              cg_json_set(o, "sample", json_integer((json_int_t)s->sample)) == 0 &&
              cg_json_set(o, "samples", json_integer((json_int_t)s->samples)) == 0 &&
              cg_json_set(o, "reason", cg_json_text(line)) == 0;
    if (!ok) {
        json_decref(o);
        return NULL;
    }
    return o;
}

json_t *cg_report_judgement_json(const cg_judgement *j)
{
    json_t *o = json_object();
    bool ok = o && cg_json_set(o, "verdict", cg_json_text(cg_verdict_name(j->verdict))) == 0 &&
              cg_json_set(o, "passes", json_boolean(cg_verdict_passes(j->verdict))) == 0 &&
              cg_json_set(o, "against", cg_json_text(cg_precision_name(j->against))) == 0 &&
              cg_json_set(o, "error", cg_json_number(j->error)) == 0 &&
              cg_json_set(o, "floor", cg_json_number(j->floor)) == 0 &&
              cg_json_set(o, "ratio", cg_json_number(j->ratio)) == 0 &&
              cg_json_set(o, "scale", cg_json_number(j->scale)) == 0 &&
              cg_json_set(o, "by_flips", json_boolean(j->by_flips)) == 0 &&
              cg_json_set(o, "vacuous", json_boolean(j->vacuous)) == 0 &&
              cg_json_set(o, "constant", j->vacuous ? cg_json_number(j->constant)
                                                    : json_null()) == 0 &&
              cg_json_set(o, "reason", cg_json_text(j->reason)) == 0 &&
              cg_json_set(o, "stopped", cg_report_run_stop_json(&j->stop)) == 0;
    if (!ok) {
        json_decref(o);
        return NULL;
    }
    return o;
}

/* The verdict of side s on output i; false (err set) when it cannot be given. */
static bool judge(const cg_noise_view *v, const cg_noise_side *s, size_t i, cg_judgement *out,
                  cg_error *err)
{
    const cg_noise_output *o = cg_noise_output_get(v->noise, i);
    cg_status st = s->target ? cg_noise_target_judge(s->target, i, NULL, out, err)
                             : cg_noise_judge_tally(o, i, s->precision, s->tally, NULL, NULL,
                                                    NULL, out, err);
    if (st != CG_OK)
        cg_error_prefix(err, "%s: ", s->name);
    return st == CG_OK;
}

static const cg_noise_tally *side_tally(const cg_noise_side *s)
{
    return s->target ? cg_noise_target_tally(s->target) : s->tally;
}

/* A target side judged as two device classes: each class's verdict
 * ([0] sums in fp16, [1] in fp32); false when there is one class. */
static bool judge_classes(const cg_noise_side *s, size_t i, cg_judgement c[2], cg_error *err,
                          bool *ok)
{
    *ok = true;
    if (!s->target || !cg_noise_target_class(s->target, 0))
        return false;
    for (int k = 0; k < 2 && *ok; k++)
        *ok = cg_noise_target_judge_class(s->target, i, k, NULL, &c[k], err) == CG_OK;
    return true;
}

static const char *class_floor_name(const cg_judgement *j, int cls)
{
    return j->against == CG_PRECISION_FP32 ? "fp32" : cls == 0 ? "fp16-sums" : "fp16 storage";
}

bool cg_report_noise_text(FILE *f, const cg_noise_view *v, cg_error *err)
{
    bool pass = true;
    cg_text_printf(f, "noise floors of %s on %zu sample%s (against the float64 reference)\n",
                   v->model, v->samples, v->samples == 1 ? "" : "s");
    for (size_t i = 0; i < cg_noise_output_count(v->noise); i++) {
        const cg_noise_output *o = cg_noise_output_get(v->noise, i);
        cg_text_printf(f, "output '%s'%s", o->v.name,
                       o->discontinuous ? " (downstream of a decision)" : "");
        if (!o->v.compared) {
            fprintf(f, ": not a numeric tensor, not measured\n");
            continue;
        }
        fprintf(f, ": scale %.4g (largest |value| of the fp64 reference)\n",
                cg_noise_scale(&o->v.fp32));
        stats_text(f, "  ", "fp32 noise floor", &o->v.fp32);
        if (v->fp16)
            stats_text(f, "  ", "fp16 storage floor", &o->v.fp16);
        if (o->v.fp16_sums.dist.count)
            stats_text(f, "  ", "fp16-sums floor", &o->v.fp16_sums);
        for (size_t k = 0; k < v->side_count; k++) {
            cg_judgement j, c[2];
            bool ok;
            if (!judge(v, &v->sides[k], i, &j, err)) {
                pass = false;
                continue;
            }
            pass = pass && cg_verdict_passes(j.verdict);
            cg_text_printf(f, "  %-19s %s: %s\n", v->sides[k].name, cg_verdict_name(j.verdict),
                           j.reason);
            if (!judge_classes(&v->sides[k], i, c, err, &ok))
                continue;
            for (int cls = 0; cls < 2 && ok; cls++)
                cg_text_printf(f, "    %s: %s, %.3gx the %s floor\n",
                               cg_noise_target_class(v->sides[k].target, cls),
                               cg_verdict_name(c[cls].verdict), c[cls].ratio,
                               class_floor_name(&c[cls], cls));
            pass = pass && ok;
        }
    }
    return pass;
}

json_t *cg_report_noise_json(const cg_noise_view *v, bool *pass, cg_error *err)
{
    json_t *root = json_object(), *outs = json_array();
    *pass = true;
    if (!root || !outs || cg_json_set(root, "model", cg_json_text(v->model)) != 0 ||
        cg_json_set(root, "samples", json_integer((json_int_t)v->samples)) != 0 ||
        cg_json_set(root, "outputs", outs) != 0) {
        json_decref(root);
        return NULL;
    }
    for (size_t i = 0; i < cg_noise_output_count(v->noise); i++) {
        const cg_noise_output *o = cg_noise_output_get(v->noise, i);
        json_t *jo = json_object(), *jj = json_array();
        if (!jo || !jj || json_array_append_new(outs, jo) != 0 ||
            cg_json_set(jo, "name", cg_json_text(o->v.name)) != 0 ||
            cg_json_set(jo, "compared", json_boolean(o->v.compared)) != 0 ||
            cg_json_set(jo, "discontinuous", json_boolean(o->discontinuous)) != 0 ||
            cg_json_set(jo, "judged", jj) != 0) {
            json_decref(root);
            return NULL;
        }
        if (!o->v.compared || !o->v.fp32.dist.count)
            continue;
        if (cg_json_set(jo, "scale", cg_json_number(cg_noise_scale(&o->v.fp32))) != 0 ||
            cg_json_set(jo, "fp32", cg_report_noise_stats_json(&o->v.fp32)) != 0 ||
            (v->fp16 && cg_json_set(jo, "fp16", cg_report_noise_stats_json(&o->v.fp16)) != 0) ||
            cg_json_set(jo, "fp16_sums", o->v.fp16_sums.dist.count
                                             ? cg_report_noise_stats_json(&o->v.fp16_sums)
                                             : json_null()) != 0) {
            json_decref(root);
            return NULL;
        }
        for (size_t k = 0; k < v->side_count; k++) {
            const cg_noise_side *s = &v->sides[k];
            cg_judgement j, c[2];
            bool ok;
            if (!judge(v, s, i, &j, err)) {
                *pass = false;
                continue;
            }
            json_t *classes = json_null();
            if (judge_classes(s, i, c, err, &ok)) {
                classes = json_array();
                for (int cls = 0; cls < 2 && ok && classes; cls++) {
                    json_t *jc = json_object();
                    if (!jc || json_array_append_new(classes, jc) != 0 ||
                        cg_json_set(jc, "name",
                                    cg_json_text(cg_noise_target_class(s->target, cls))) != 0 ||
                        cg_json_set(jc, "accumulate", cg_json_text(cg_accumulate_name(
                                        cls ? CG_ACCUMULATE_FP32 : CG_ACCUMULATE_FP16))) != 0 ||
                        cg_json_set(jc, "verdict", cg_report_judgement_json(&c[cls])) != 0) {
                        json_decref(classes);
                        classes = NULL;
                    }
                }
                *pass = *pass && ok;
            }
            *pass = *pass && cg_verdict_passes(j.verdict);
            const cg_noise_tally *t = side_tally(s);
            cg_precision prec = s->target ? cg_noise_target_precision(s->target) : s->precision;
            json_t *jv = cg_report_judgement_json(&j);
            if (!jv || json_array_append_new(jj, jv) != 0 ||
                cg_json_set(jv, "side", cg_json_text(s->name)) != 0 ||
                cg_json_set(jv, "device_classes", classes) != 0 ||
                cg_json_set(jv, "precision", cg_json_text(cg_precision_name(prec))) != 0 ||
                cg_json_set(jv, "error_stats", cg_report_noise_stats_json(&t->errors[i])) != 0 ||
                (o->discontinuous && t->flips_compared[i] &&
                 cg_json_set(jv, "flips", cg_report_flips_json(&t->flips[i])) != 0)) {
                json_decref(root);
                return NULL;
            }
        }
    }
    return root;
}
