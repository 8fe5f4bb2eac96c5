/*
 * Source against converted and the real-LiteRT runners, rendered: how the
 * two models' inputs and outputs were paired (and their layouts), what
 * produced the compared outputs, and what LiteRT measured (the WebGPU
 * delegate's residency as it logged it, not convgate's prediction).
 */
#include <string.h>

#include "core/text.h"
#include "report/json.h"
#include "report/report.h"

static void pairs_text(FILE *f, const cg_against_view *v, bool input)
{
    const cg_io_map *m = v->map;
    const cg_model *a = v->model_is_a ? v->model : v->other;
    const cg_model *b = v->model_is_a ? v->other : v->model;
    size_t n = input ? m->input_count : m->output_count;
    const cg_io_pair *p = input ? m->inputs : m->outputs;
    char line[1024];
    for (size_t i = 0; i < n; i++) {
        cg_io_pair_text(&p[i], a, b, input, line, sizeof line);
        fprintf(f, "  %-6s %s\n", input ? "input" : "output", line);
    }
}

void cg_report_runner_text(FILE *f, const cg_runner_report *r, const char *indent)
{
    if (!r)
        return;
    fprintf(f, "%smeasured by %s (%s%s%s%s%s), %.1f s for the batch\n", indent, r->runtime,
            r->accelerator, r->adapter[0] ? ", adapter " : "", r->adapter,
            r->has_residency ? ", precision " : "", r->has_residency ? r->precision : "",
            r->seconds);
    if (!r->has_residency)
        return;
    fprintf(f, "%sresidency (the WebGPU delegate's log): %ld op%s on the GPU, %ld on the CPU%s\n",
            indent, r->gpu_ops, r->gpu_ops == 1 ? "" : "s", r->cpu_ops,
            r->fully_accelerated ? " (fully accelerated)" : "");
    for (size_t i = 0; i < r->rejected_count; i++)
        fprintf(f, "%s  rejected %s: %s\n", indent, r->rejected[i].op, r->rejected[i].reason);
    if (r->delegate_error[0])
        fprintf(f, "%s  the delegate accepted ops, then failed to build them: %s\n", indent,
                r->delegate_error);
}

void cg_report_against_text(FILE *f, const char *label, const cg_against_view *v)
{
    fprintf(f, "%s: %s\n", label, v->producer);
    if (v->map) {
        pairs_text(f, v, true);
        pairs_text(f, v, false);
    }
    cg_report_runner_text(f, v->runner, "  ");
}

json_t *cg_report_runner_json(const cg_runner_report *r)
{
    if (!r)
        return json_null();
    json_t *j = json_object(), *rej = json_array();
    cg_json_set(j, "measured", json_true());
    cg_json_set(j, "runtime", cg_json_text(r->runtime));
    cg_json_set(j, "accelerator", cg_json_text(r->accelerator));
    cg_json_set(j, "adapter", r->adapter[0] ? cg_json_text(r->adapter) : json_null());
    cg_json_set(j, "seconds", cg_json_number(r->seconds));
    if (r->has_residency) {
        json_t *res = json_object();
        cg_json_set(j, "precision", cg_json_text(r->precision));
        cg_json_set(res, "gpu_ops", json_integer(r->gpu_ops));
        cg_json_set(res, "cpu_ops", json_integer(r->cpu_ops));
        cg_json_set(res, "fully_accelerated", json_boolean(r->fully_accelerated));
        cg_json_set(res, "from", cg_json_text(r->residency_from));
        for (size_t i = 0; i < r->rejected_count; i++) {
            json_t *e = json_object();
            cg_json_set(e, "op", cg_json_text(r->rejected[i].op));
            cg_json_set(e, "reason", cg_json_text(r->rejected[i].reason));
            json_array_append_new(rej, e);
        }
        cg_json_set(res, "rejected", rej);
        cg_json_set(res, "delegate_error",
                    r->delegate_error[0] ? cg_json_text(r->delegate_error) : json_null());
        cg_json_set(j, "residency", res);
    } else {
        json_decref(rej);
        cg_json_set(j, "residency", json_null());
    }
    return j;
}

static json_t *pairs_json(const cg_against_view *v, bool input)
{
    const cg_io_map *m = v->map;
    const cg_model *a = v->model_is_a ? v->model : v->other;
    const cg_model *b = v->model_is_a ? v->other : v->model;
    size_t n = input ? m->input_count : m->output_count;
    const cg_io_pair *p = input ? m->inputs : m->outputs;
    json_t *arr = json_array();
    for (size_t i = 0; i < n; i++) {
        const cg_value_info *va = input ? &a->graph->inputs[p[i].a] : &a->graph->outputs[p[i].a];
        const cg_value_info *vb = input ? &b->graph->inputs[p[i].b] : &b->graph->outputs[p[i].b];
        json_t *e = json_object(), *perm = json_array();
        cg_json_set(e, "source", cg_json_text(va->name));
        cg_json_set(e, "converted", cg_json_text(vb->name));
        cg_json_set(e, "by", cg_json_text(p[i].by));
        cg_json_set(e, "layout", cg_json_text(p[i].layout));
        for (int d = 0; p[i].permuted && d < p[i].rank; d++)
            json_array_append_new(perm, json_integer(p[i].perm[d]));
        cg_json_set(e, "perm", p[i].permuted ? perm : (json_decref(perm), json_null()));
        json_array_append_new(arr, e);
    }
    return arr;
}

json_t *cg_report_against_json(const cg_against_view *v)
{
    json_t *j = json_object();
    cg_json_set(j, "produced_by", cg_json_text(v->producer));
    cg_json_set(j, "model", cg_json_text(v->other_path));
    cg_json_set(j, "inputs", v->map ? pairs_json(v, true) : json_null());
    cg_json_set(j, "outputs", v->map ? pairs_json(v, false) : json_null());
    cg_json_set(j, "runner", cg_report_runner_json(v->runner));
    return j;
}

void cg_report_against_verdicts_text(FILE *f, const cg_against_verdict *v, size_t count,
                                     bool quantized)
{
    if (!count)
        return;
    fprintf(f, "\nagainst the model's noise floor (its float64 reference on the same samples; "
               "docs/noise-floor.md):\n");
    for (size_t i = 0; i < count; i++) {
        if (v[i].judged)
            fprintf(f, "  %s: %s: %s\n", v[i].output, cg_verdict_name(v[i].j.verdict),
                    v[i].j.reason);
        else
            fprintf(f, "  %s: not judged: %s\n", v[i].output, v[i].why);
    }
    if (quantized)
        fprintf(f, "  (the other side computes in integers: its difference beyond float32 noise "
                   "is its quantization, which the tolerance above judges)\n");
}

json_t *cg_report_against_verdicts_json(const cg_against_verdict *v, size_t count)
{
    json_t *arr = json_array();
    for (size_t i = 0; arr && i < count; i++) {
        json_t *e = json_object();
        cg_json_set(e, "output", cg_json_text(v[i].output));
        cg_json_set(e, "judged", json_boolean(v[i].judged));
        cg_json_set(e, "verdict", v[i].judged ? cg_report_judgement_json(&v[i].j) : json_null());
        cg_json_set(e, "why", v[i].judged ? json_null() : cg_json_text(v[i].why));
        json_array_append_new(arr, e);
    }
    return arr;
}

/* --- gate 3's other sides ------------------------------------------------------------ */

bool cg_gate_conversion_differs(const cg_gate_report *r, const cg_gate_sides *s)
{
    return s->source && r->matches == CG_GATE_FAIL && r->bisected && !r->bisect.diverged;
}

void cg_report_gate_sides_text(FILE *f, const cg_gate_report *r, const cg_gate_sides *s)
{
    if (s->source)
        cg_report_against_text(f, "gate 3 reference", s->source);
    if (cg_gate_conversion_differs(r, s))
        cg_text_printf(f, "  the target path follows %s's own reference run: the difference "
                       "lies between %s and %s (the conversion), not in the target\n",
                       s->model_path, s->source->other_path, s->model_path);
    if (s->runner)
        cg_text_printf(f, "gate 3 target side: %s\n", s->measured);
    cg_report_runner_text(f, s->runner, "  ");
}

void cg_report_gate_sides_json(json_t *root, const cg_gate_report *r, const cg_gate_sides *s)
{
    if (!root)
        return;
    if (s->source) {
        json_t *sj = cg_report_against_json(s->source);
        cg_json_set(sj, "conversion_differs", json_boolean(cg_gate_conversion_differs(r, s)));
        cg_json_set(root, "source", sj);
    }
    if (s->runner)
        cg_json_set(root, "runner", cg_report_runner_json(s->runner));
}
