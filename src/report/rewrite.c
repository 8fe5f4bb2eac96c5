/*
 * Renderings of the rewrite catalog and of a rewrite run (convgate
 * rewrite, and the rewrite part of convgate convert): text and JSON
 * (docs/json.md).
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "core/text.h"
#include "report/report.h"

/* --- the catalog ------------------------------------------------------------------------ */

void cg_report_rewrite_catalog_text(FILE *f)
{
    fprintf(f, "%-24s %-14s %-26s %s\n", "rewrite", "kind", "numerics", "what it does");
    for (size_t i = 0; i < cg_rewrite_count(); i++) {
        const cg_rewrite_info *r = cg_rewrite_at(i);
        fprintf(f, "%-24s %-14s %-26s %s\n", r->name, cg_rewrite_kind_name(r->kind),
                cg_rewrite_numerics_name(r->numerics), r->summary);
        fprintf(f, "%-24s %-14s %-26s   for: %s\n", "", "", "", r->addresses);
    }
}

static json_t *info_json(const cg_rewrite_info *r)
{
    json_t *o = json_object();
    cg_json_set(o, "name", cg_json_text(r->name));
    cg_json_set(o, "kind", cg_json_text(cg_rewrite_kind_name(r->kind)));
    cg_json_set(o, "numerics", cg_json_text(cg_rewrite_numerics_name(r->numerics)));
    cg_json_set(o, "summary", cg_json_text(r->summary));
    cg_json_set(o, "addresses", cg_json_text(r->addresses));
    return o;
}

json_t *cg_report_rewrite_catalog_json(void)
{
    json_t *arr = json_array();
    for (size_t i = 0; arr && i < cg_rewrite_count(); i++)
        json_array_append_new(arr, info_json(cg_rewrite_at(i)));
    json_t *root = json_object();
    cg_json_set(root, "rewrites", arr);
    return root;
}

/* --- a run ----------------------------------------------------------------------------- */

static void placement_line(FILE *f, const char *label, const cg_rewrite_placement *p)
{
    if (!p->placed) {
        cg_text_printf(f, "%s not placed: %s\n", label, p->note);
        return;
    }
    fprintf(f, "%s %s, %zu partition%s, %zu boundar%s", label, p->residency, p->partitions,
            p->partitions == 1 ? "" : "s", p->boundaries, p->boundaries == 1 ? "y" : "ies");
    if (p->mixed_ms >= 0)
        fprintf(f, ", mixed latency ~%.3g ms (%.1f%% of reference time on target)", p->mixed_ms,
                100.0 * p->time_coverage);
    fputc('\n', f);
}

/* The verification in a few words: "exact", "within fp32 noise (worst
 * 3.2x the floor)", "changes by up to 1e-3". */
static void numerics_words(const cg_rewrite_step *s, char *buf, size_t cap)
{
    if (!s->verified) {
        snprintf(buf, cap, "not verified");
        return;
    }
    if (s->exact) {
        snprintf(buf, cap, "exact (bit-identical on every sample)");
        return;
    }
    double worst = 0, err = 0;
    bool judged = true;
    for (size_t k = 0; k < s->check_count; k++) {
        const cg_rewrite_check *c = &s->checks[k];
        if (c->exact)
            continue;
        judged = judged && c->judged;
        if (c->judged && !(c->j.ratio <= worst))
            worst = c->j.ratio;
        if (!(c->max_abs <= err))
            err = c->max_abs;
    }
    if (judged)
        snprintf(buf, cap, "max |d| %.3g, %.3gx the fp32 noise floor", err, worst);
    else
        snprintf(buf, cap, "max |d| %.3g", err);
}

void cg_report_rewrite_text(FILE *f, const cg_rewrite_result *r, const cg_rewrite_view *v)
{
    fprintf(f, "convgate %s %s --target %s\n", v->command ? v->command : "rewrite",
            v->model ? v->model : "-", v->targets ? v->targets : "?");
    cg_text_printf(f, "samples: %s; %s\n", v->samples ? v->samples : "?",
                   r->noise_floor ? "each rewrite verified against the original's fp32 noise floor"
                                  : r->noise_note);
    placement_line(f, "before:", &r->before);
    for (size_t i = 0; i < r->step_count; i++) {
        const cg_rewrite_step *s = &r->steps[i];
        if (s->outcome == CG_STEP_NOT_APPLICABLE && !v->all_steps)
            continue;
        char words[256];
        numerics_words(s, words, sizeof words);
        cg_text_printf(f, "  %-14s %-24s %s\n", cg_rewrite_outcome_name(s->outcome),
                       s->info->name, s->detail[0] ? s->detail : "");
        if (s->verified)
            fprintf(f, "  %-14s %-24s verified: %s\n", "", "", words);
        if (s->target_err_before >= 0)
            fprintf(f, "  %-14s %-24s target path max |d| %.4g -> %.4g\n", "", "",
                    s->target_err_before, s->target_err_after);
        if (v->what_if && (s->outcome == CG_STEP_APPLIED || s->outcome == CG_STEP_NO_GAIN)) {
            fprintf(f, "  %-14s %-24s ", "", "");
            placement_line(f, "after it:", &s->after);
        }
    }
    placement_line(f, "after: ", &r->after);
    fprintf(f, "%zu rewrite%s applied; %zu -> %zu nodes\n", r->applied, r->applied == 1 ? "" : "s",
            r->source_nodes, r->model ? r->model->graph->node_count : r->source_nodes);
}

static json_t *placement_json(const cg_rewrite_placement *p)
{
    json_t *o = json_object();
    cg_json_set(o, "placed", json_boolean(p->placed));
    cg_json_set(o, "nodes", json_integer((json_int_t)p->nodes));
    cg_json_set(o, "removed_by_runtime", json_integer((json_int_t)p->removed_by_runtime));
    cg_json_set(o, "on_target", json_integer((json_int_t)p->on_target));
    cg_json_set(o, "cpu", json_integer((json_int_t)p->cpu));
    cg_json_set(o, "partitions", json_integer((json_int_t)p->partitions));
    cg_json_set(o, "boundaries", json_integer((json_int_t)p->boundaries));
    cg_json_set(o, "init_failure", json_boolean(p->init_failure));
    cg_json_set(o, "residency", cg_json_text(p->residency));
    cg_json_set(o, "verdict", cg_json_text(p->verdict));
    cg_json_set(o, "mixed_ms", p->mixed_ms >= 0 ? cg_json_number(p->mixed_ms) : json_null());
    cg_json_set(o, "time_coverage",
                p->time_coverage >= 0 ? cg_json_number(p->time_coverage) : json_null());
    cg_json_set(o, "note", p->note[0] ? cg_json_text(p->note) : json_null());
    return o;
}

json_t *cg_report_rewrite_step_json(const cg_rewrite_step *s, bool with_placement)
{
    json_t *o = info_json(s->info);
    cg_json_set(o, "outcome", cg_json_text(cg_rewrite_outcome_name(s->outcome)));
    cg_json_set(o, "sites", json_integer((json_int_t)s->sites));
    cg_json_set(o, "nodes_before", json_integer((json_int_t)s->nodes_before));
    cg_json_set(o, "nodes_after", json_integer((json_int_t)s->nodes_after));
    cg_json_set(o, "detail", cg_json_text(s->detail));
    cg_json_set(o, "verified", json_boolean(s->verified));
    cg_json_set(o, "exact", s->verified ? json_boolean(s->exact) : json_null());
    json_t *checks = json_array();
    for (size_t k = 0; s->verified && k < s->check_count; k++) {
        const cg_rewrite_check *c = &s->checks[k];
        json_t *co = json_object();
        cg_json_set(co, "output", cg_json_text(c->output));
        cg_json_set(co, "exact", json_boolean(c->exact));
        cg_json_set(co, "max_abs", cg_json_number(c->max_abs));
        cg_json_set(co, "judgement", c->judged ? cg_report_judgement_json(&c->j) : json_null());
        json_array_append_new(checks, co);
    }
    cg_json_set(o, "checks", checks);
    cg_json_set(o, "target_error_before",
                s->target_err_before >= 0 ? cg_json_number(s->target_err_before) : json_null());
    cg_json_set(o, "target_error_after",
                s->target_err_after >= 0 ? cg_json_number(s->target_err_after) : json_null());
    if (with_placement)
        cg_json_set(o, "after", placement_json(&s->after));
    return o;
}

json_t *cg_report_rewrite_json(const cg_rewrite_result *r, const cg_rewrite_view *v)
{
    json_t *root = json_object();
    cg_json_set(root, "model", cg_json_text(v->model));
    cg_json_set(root, "targets", cg_json_text(v->targets));
    cg_json_set(root, "output", v->output ? cg_json_text(v->output) : json_null());
    cg_json_set(root, "what_if", json_boolean(v->what_if));
    cg_json_set(root, "samples", cg_json_text(v->samples));
    cg_json_set(root, "sample_count", json_integer((json_int_t)r->sample_count));
    cg_json_set(root, "noise_floor", json_boolean(r->noise_floor));
    cg_json_set(root, "noise_note", r->noise_note[0] ? cg_json_text(r->noise_note) : json_null());
    cg_json_set(root, "before", placement_json(&r->before));
    json_t *steps = json_array();
    for (size_t i = 0; i < r->step_count; i++)
        json_array_append_new(steps, cg_report_rewrite_step_json(&r->steps[i], true));
    cg_json_set(root, "steps", steps);
    cg_json_set(root, "applied", json_integer((json_int_t)r->applied));
    cg_json_set(root, "after", placement_json(&r->after));
    cg_json_set(root, "nodes_before", json_integer((json_int_t)r->source_nodes));
    cg_json_set(root, "nodes_after",
                json_integer((json_int_t)(r->model ? r->model->graph->node_count : 0)));
    return root;
}
