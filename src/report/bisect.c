/*
 * Renderings of a bisection (convgate/bisect.h): the text block `convgate
 * bisect` and gate 3 print, and its JSON object. Metrics render through the
 * one metrics object (report/metrics.c).
 */
#include <inttypes.h>
#include <stdio.h>

#include "convgate/gate.h"
#include "core/text.h"
#include "report/report.h"

static void type_text(const cg_bisect_type *t, char *buf, size_t len)
{
    size_t n;
    if (!t->known) {
        snprintf(buf, len, "?");
        return;
    }
    n = (size_t)snprintf(buf, len, "%s[", cg_dtype_name(t->dtype));
    for (int d = 0; d < t->rank && n < len; d++)
        n += (size_t)snprintf(buf + n, len - n, "%s%" PRId64, d ? "," : "", t->dims[d]);
    if (n < len)
        snprintf(buf + n, len - n, "]");
}

/* "7.2x the fp16 storage floor" style summary of one judged tensor. */
static void judged_line(FILE *f, const cg_bisect_tensor *t)
{
    fprintf(f, "max |d| against float64 %.3g; floors: fp32 %.3g", t->metrics.max_abs,
            t->floor32);
    if (t->floor16_measured)
        fprintf(f, ", fp16 storage%s %.3g", t->floor16_sums ? " and sums" : "", t->floor16);
    cg_text_printf(f, "; held in %s", cg_precision_name(t->precision));
}

void cg_bisect_report_text(FILE *f, const cg_bisect_result *b, const char *ind)
{
    char buf[256];
    cg_text_printf(f, "%sbisect: %zu tensors watched, %zu compared, %zu beyond %s\n", ind,
                   b->watched, b->compared, b->divergent,
                   b->by_noise ? "the noise floor of their precision" : "tolerance");
    if (b->refined)
        cg_text_printf(f, "%s(the first pass diverged at a partition's output: rerun with its "
                          "%zu inner value%s exposed)\n",
                       ind, b->refined_values, b->refined_values == 1 ? "" : "s");
    for (size_t i = 0; i < b->flipped_count; i++) {
        const cg_bisect_flip *x = &b->flipped[i];
        cg_text_printf(f, "%sdecision '%s' (%s '%s') flipped %llu of %llu, largest margin %.3g: "
                          "within the %s noise of its input\n", ind, x->tensor, x->op_type, x->node,
                       (unsigned long long)x->flips.flips, (unsigned long long)x->flips.decisions,
                       x->flips.max_margin, cg_precision_name(x->precision));
    }
    if (!b->diverged) {
        cg_text_printf(f, "%sno intermediate tensor diverges\n", ind);
        return;
    }
    const cg_bisect_tensor *t = &b->first_divergent;
    type_text(&t->type, buf, sizeof buf);
    cg_text_printf(f, "%sfirst %s: '%s' %s, from node '%s' (%s, #%zu)%s%s\n", ind,
                   b->by_noise ? "tensor beyond its noise floor" : "divergent tensor", t->tensor,
                   buf, t->node, t->op_type, t->node_index, t->placed_on ? " on " : "",
                   t->placed_on ? t->placed_on : "");
    for (size_t i = 0; i < b->input_count; i++) {
        if (!b->inputs[i].name[0])
            continue;
        type_text(&b->inputs[i], buf, sizeof buf);
        cg_text_printf(f, "%s  input %zu: '%s' %s\n", ind, i, b->inputs[i].name, buf);
    }
    if (b->by_noise) {
        cg_text_printf(f, "%s  ", ind);
        judged_line(f, t);
        fputc('\n', f);
        if (t->by_flips && t->flips.margin_known)
            cg_text_printf(f, "%s  %llu of %llu decisions flipped, largest margin %.3g (beyond the "
                              "noise of its input)\n", ind, (unsigned long long)t->flips.flips,
                           (unsigned long long)t->flips.decisions, t->flips.max_margin);
        else if (t->by_flips)
            cg_text_printf(f, "%s  %llu of %llu decisions flipped (no margin rule for the op: "
                              "never taken for noise)\n", ind, (unsigned long long)t->flips.flips,
                           (unsigned long long)t->flips.decisions);
        else
            cg_text_printf(f, "%s  %s\n", ind, t->judgement.reason);
    }
    cg_text_printf(f, "%s  ", ind);
    cg_report_metrics_line(f, &t->metrics);
    fputc('\n', f);
    if (t->metrics.worst_index >= 0)
        cg_text_printf(f, "%s  worst element [%" PRId64 "]: reference %.6g, target %.6g\n", ind,
                       t->metrics.worst_index, t->metrics.worst_ref, t->metrics.worst_got);
    if (b->has_last_matching)
        cg_text_printf(f, "%slast matching tensor: '%s' from node '%s' (%s, #%zu), max_abs %.4g\n",
                       ind, b->last_matching.tensor, b->last_matching.node,
                       b->last_matching.op_type,
                       b->last_matching.node_index, b->last_matching.metrics.max_abs);
    else
        cg_text_printf(f, "%slast matching tensor: none (the first compared tensor diverges)\n",
                       ind);
    cg_text_printf(f, "%striage: %s%s%s%s\n", ind, cg_bisect_triage_name(b->triage),
                   b->triage_note[0] ? " (" : "", b->triage_note, b->triage_note[0] ? ")" : "");
    if (b->by_noise && b->verdict_reason[0])
        cg_text_printf(f, "%sverdict: %s\n", ind, b->verdict_reason);
}

static json_t *type_json(const cg_bisect_type *t)
{
    json_t *o = json_object(), *shape = json_array();
    if (!o || !shape) {
        json_decref(o);
        json_decref(shape);
        return NULL;
    }
    cg_json_set(o, "name", cg_json_text(t->name ? t->name : ""));
    cg_json_set(o, "dtype", t->known ? cg_json_text(cg_dtype_name(t->dtype)) : json_null());
    for (int d = 0; t->known && d < t->rank; d++)
        json_array_append_new(shape, json_integer((json_int_t)t->dims[d]));
    cg_json_set(o, "shape", t->known ? shape : json_null());
    if (!t->known)
        json_decref(shape);
    return o;
}

static json_t *tensor_json(const cg_bisect_tensor *t)
{
    json_t *o = json_object();
    if (!o)
        return NULL;
    cg_json_set(o, "tensor", cg_json_text(t->tensor));
    cg_json_set(o, "node", cg_json_text(t->node));
    cg_json_set(o, "op_type", cg_json_text(t->op_type));
    cg_json_set(o, "node_index", json_integer((json_int_t)t->node_index));
    cg_json_set(o, "placed_on", t->placed_on ? cg_json_text(t->placed_on) : json_null());
    json_t *ty = type_json(&t->type);
    if (ty) {
        json_object_set(o, "dtype", json_object_get(ty, "dtype"));
        json_object_set(o, "shape", json_object_get(ty, "shape"));
        json_decref(ty);
    }
    if (cg_report_metrics_json(o, &t->metrics, NULL, -1, NULL) != 0) {
        json_decref(o);
        return NULL;
    }
    return o;
}

/* A judged tensor: the tensor object with its precision, floors and
 * judgement (noise). */
static json_t *judged_json(const cg_bisect_tensor *t, bool noise)
{
    json_t *o = tensor_json(t);
    if (!o || !noise)
        return o;
    cg_json_set(o, "precision", cg_json_text(cg_precision_name(t->precision)));
    cg_json_set(o, "fp32_floor", cg_json_number(t->floor32));
    cg_json_set(o, "fp16_floor", t->floor16_measured ? cg_json_number(t->floor16) : json_null());
    cg_json_set(o, "fp16_floor_of_sums", json_boolean(t->floor16_sums));
    cg_json_set(o, "judgement", cg_report_judgement_json(&t->judgement));
    cg_json_set(o, "by_flips", json_boolean(t->by_flips));
    cg_json_set(o, "flips", t->by_flips ? cg_report_flips_json(&t->flips) : json_null());
    return o;
}

json_t *cg_bisect_report_json(const cg_bisect_result *b)
{
    json_t *o = json_object();
    if (!o)
        return NULL;
    cg_json_set(o, "watched", json_integer((json_int_t)b->watched));
    cg_json_set(o, "compared", json_integer((json_int_t)b->compared));
    cg_json_set(o, "divergent", json_integer((json_int_t)b->divergent));
    cg_json_set(o, "refined_in_partition", json_boolean(b->refined));
    cg_json_set(o, "judged_by", cg_json_text(b->by_noise ? "noise floor" : "tolerance"));
    json_t *fl = json_array();
    for (size_t i = 0; fl && i < b->flipped_count; i++) {
        json_t *x = json_object();
        cg_json_set(x, "tensor", cg_json_text(b->flipped[i].tensor));
        cg_json_set(x, "node", cg_json_text(b->flipped[i].node));
        cg_json_set(x, "op_type", cg_json_text(b->flipped[i].op_type));
        cg_json_set(x, "precision", cg_json_text(cg_precision_name(b->flipped[i].precision)));
        cg_json_set(x, "flips", cg_report_flips_json(&b->flipped[i].flips));
        json_array_append_new(fl, x);
    }
    cg_json_set(o, "flipped_within_noise", fl ? fl : json_null());
    if (b->diverged) {
        json_t *fd = judged_json(&b->first_divergent, b->by_noise), *ins = json_array();
        for (size_t i = 0; ins && i < b->input_count; i++)
            json_array_append_new(ins, type_json(&b->inputs[i]));
        if (fd)
            cg_json_set(fd, "inputs", ins ? ins : json_null());
        cg_json_set(o, "first_divergent", fd ? fd : json_null());
    } else {
        cg_json_set(o, "first_divergent", json_null());
    }
    cg_json_set(o, "last_matching",
                b->has_last_matching ? judged_json(&b->last_matching, false) : json_null());
    cg_json_set(o, "triage", b->diverged && b->triage != CG_TRIAGE_NONE
                                         ? cg_json_text(cg_bisect_triage_name(b->triage))
                                         : json_null());
    cg_json_set(o, "triage_note", cg_json_text(b->triage_note));
    if (b->triage_ran) {
        json_t *tm = json_object();
        if (tm) {
            cg_report_metrics_json(tm, &b->triage_metrics, NULL, -1, NULL);
            cg_json_set(o, "triage_fp32", tm);
        }
    }
    if (b->acc32_ran) {
        json_t *tm = json_object();
        if (tm) {
            cg_report_metrics_json(tm, &b->acc32_metrics, NULL, -1, NULL);
            cg_json_set(o, "triage_acc32", tm);
        }
    }
    cg_json_set(o, "verdict", b->by_noise && b->diverged ? cg_json_text(cg_verdict_name(b->verdict))
                                                         : json_null());
    cg_json_set(o, "verdict_reason", b->by_noise && b->diverged
                                         ? cg_json_text(b->verdict_reason)
                                         : json_null());
    return o;
}

json_t *cg_report_bisect_json(const cg_bisect_result *b, const cg_bisect_view *v)
{
    json_t *o = cg_bisect_report_json(b);
    if (!o)
        return NULL;
    json_t *tl = v->target_count ? json_array() : NULL;
    for (size_t t = 0; tl && t < v->target_count; t++)
        json_array_append_new(tl, cg_json_text(v->targets[t]->name));
    cg_json_set(o, "model", cg_json_text(v->model));
    cg_json_set(o, "candidate", cg_json_text(v->candidate));
    cg_json_set(o, "sample", cg_json_text(v->sample));
    cg_json_set(o, "tolerance", v->tol ? cg_report_tolerance_json(v->tol, v->tol_source)
                                       : json_null());
    cg_json_set(o, "targets", tl ? tl : json_null());
    return o;
}
