/*
 * Renderings of the gate report (convgate/gate.h): the text a person reads
 * in five seconds (each gate's lines, then the verdict block) and the JSON
 * CI reads (docs/json.md).
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "convgate/gate.h"
#include "core/text.h"
#include "report/report.h"

void cg_gate_report_text(FILE *f, const cg_gate_report *r)
{
    cg_text_printf(f, "convgate gate %s --target %s\n\n", r->model, r->targets);
    cg_text_printf(f, "GATE 1 converts: %s  %s\n", cg_gate_state_name(r->converts),
                   r->converts_detail);
    cg_text_printf(f, "GATE 2 runs where intended: %s", cg_gate_state_name(r->runs));
    if (r->runs != CG_GATE_NOT_RUN && r->residency_unknown) {
        cg_text_printf(f, "  residency unknown\n       %s", r->runs_detail);
    } else if (r->runs != CG_GATE_NOT_RUN) {
        cg_text_printf(f, "  %s, %zu partition%s, %zu boundar%s",
                       r->residency[0] ? r->residency : "?", r->partitions,
                       r->partitions == 1 ? "" : "s", r->boundaries,
                       r->boundaries == 1 ? "y" : "ies");
        if (r->time_coverage >= 0)
            fprintf(f, ", %.1f%% of reference time on target", 100.0 * r->time_coverage);
        if (r->preprocess[0] && strcmp(r->preprocess, "none") != 0)
            cg_text_printf(f, "\n       graph partitioned: preprocess '%s'; removed by %s: "
                           "%zu%s%s%s", r->preprocess, r->remover ? r->remover : "the runtime",
                           r->removed_by_runtime, r->removed_by_runtime ? " (" : "",
                           r->removed_detail, r->removed_by_runtime ? ")" : "");
        cg_text_printf(f, "\n       %s", r->runs_detail);
    }
    fputc('\n', f);
    cg_text_printf(f, "GATE 3 matches: %s", cg_gate_state_name(r->matches));
    if (r->matches != CG_GATE_NOT_RUN) {
        const cg_parity_report *j = &r->judged;
        cg_text_printf(f, "  %s%s\n", r->matches_detail,
                       r->reduced_precision ? " (fp16 compute emulated)" : "");
        if (j->by_noise)
            fprintf(f, "       judged against the model's noise floor (float64 reference, "
                       "docs/noise-floor.md)\n");
        if (j->note[0])
            cg_text_printf(f, "       note: %s\n", j->note);
        for (size_t o = 0; o < j->output_count; o++) {
            const cg_parity_output *po = &j->outputs[o];
            cg_text_printf(f, "       %s %s (%s%s)\n", po->pass ? "ok  " : "FAIL", po->name,
                           cg_report_output_state(po),
                           po->by_noise && po->verdict.vacuous ? ", vacuous" : "");
            cg_report_judged_text(f, "            ", po);
            cg_text_printf(f, "            against the fp32 reference%s: ",
                           po->detection ? " (in output order; the detections are matched below)"
                                         : "");
            cg_report_metrics_line(f, &po->merged);
            fputc('\n', f);
            cg_report_task_text(f, "            ", po);
        }
        if (j->detect.on) {
            const char **names = calloc(j->output_count + 1, sizeof *names);
            for (size_t k = 0; names && k < j->output_count; k++)
                names[k] = j->outputs[k].name;
            if (names)
                cg_report_detect_text(f, "       ", j, names);
            free(names);
        }
        if (r->bisected) {
            cg_text_printf(f, "       on sample %s%s%s:\n",
                           r->bisect_sample_label ? r->bisect_sample_label : "?",
                           r->bisect_class ? ", as " : "",
                           r->bisect_class ? r->bisect_class : "");
            cg_bisect_report_text(f, &r->bisect, "       ");
        } else if (r->bisect_error[0]) {
            cg_text_printf(f, "       bisect could not run: %s\n", r->bisect_error);
        }
    } else {
        fputc('\n', f);
    }
    fprintf(f, "\n========================================\n");
    cg_text_printf(f, "GATE 1 converts            %s\n", cg_gate_state_name(r->converts));
    cg_text_printf(f, "GATE 2 runs where intended %s\n", cg_gate_state_name(r->runs));
    cg_text_printf(f, "GATE 3 matches             %s\n", cg_gate_state_name(r->matches));
    cg_text_printf(f, "VERDICT: %s  %s\n", r->pass ? "PASS" : "FAIL", r->reason);
    if (r->dim_count)
        cg_text_printf(f, "DIMS: %s\n", r->dims_text);
    fprintf(f, "========================================\n");
    if (r->samples)
        cg_text_printf(f, "(samples: %s)\n", r->samples);
}

void cg_gate_timings_text(FILE *f, const cg_gate_timings *t)
{
    fprintf(f, "timings (s):             wall      cpu  peak RSS MiB   (reference and target: "
               "each its own wall and thread CPU; %s)\n",
            t->schedule == CG_GATE_SCHEDULE_PHASED ? "one after the other" : "they overlap");
    for (int p = 0; p < CG_GATE_PHASES; p++) {
        if (!(t->wall_s[p] > 0 || t->cpu_s[p] > 0))
            continue;
        fprintf(f, "  %-18s %9.3f %8.3f", cg_gate_phase_name((cg_gate_phase)p), t->wall_s[p],
                t->cpu_s[p]);
        if (t->peak_rss_mib[p] > 0)
            fprintf(f, " %13.1f", t->peak_rss_mib[p]);
        fputc('\n', f);
    }
    fprintf(f, "  %-18s %9.3f %8.3f\n", "total", t->total_wall_s, t->total_cpu_s);
    if (t->schedule != CG_GATE_SCHEDULE_AUTO)
        fprintf(f, "gate 3 schedule: %s (weights %.1f MiB; auto phases from %.0f MiB)\n",
                cg_gate_schedule_name(t->schedule), (double)t->weight_bytes / (1 << 20),
                (double)CG_GATE_PHASED_WEIGHT_BYTES / (1 << 20));
}

json_t *cg_report_dims_json(const cg_dim_use *u, size_t n)
{
    json_t *dims = json_array();
    for (size_t k = 0; dims && k < n; k++) {
        json_t *d = json_object();
        if (!d || json_array_append_new(dims, d) != 0) {
            json_decref(dims);
            return NULL;
        }
        cg_json_set(d, "input", cg_json_text(u[k].input));
        cg_json_set(d, "axis", json_integer((json_int_t)u[k].axis));
        cg_json_set(d, "symbol", u[k].symbol ? cg_json_text(u[k].symbol) : json_null());
        cg_json_set(d, "value", json_integer((json_int_t)u[k].value));
        cg_json_set(d, "source", cg_json_text(cg_dim_source_name(u[k].source)));
    }
    return dims;
}

static json_t *gate_json(cg_gate_state s, const char *detail)
{
    json_t *o = json_object();
    if (!o)
        return NULL;
    cg_json_set(o, "state", cg_json_text(s == CG_GATE_PASS   ? "pass"
                                                 : s == CG_GATE_FAIL ? "fail"
                                                                     : "not_run"));
    cg_json_set(o, "detail", cg_json_text(detail));
    return o;
}

json_t *cg_gate_report_json(const cg_gate_report *r)
{
    json_t *root = json_object(), *g1, *g2, *g3, *outs;
    if (!root)
        return NULL;
    cg_json_set(root, "model", cg_json_text(r->model));
    cg_json_set(root, "target", cg_json_text(r->targets));
    cg_json_set(root, "pass", json_boolean(r->pass));
    cg_json_set(root, "verdict", cg_json_text(r->pass ? "PASS" : "FAIL"));
    cg_json_set(root, "reason", cg_json_text(r->reason));
    json_t *dims = cg_report_dims_json(r->dims, r->dim_count);
    cg_json_set(root, "dims", dims ? dims : json_null());
    g1 = gate_json(r->converts, r->converts_detail);
    g2 = gate_json(r->runs, r->runs_detail);
    g3 = gate_json(r->matches, r->matches_detail);
    if (!g1 || !g2 || !g3) {
        json_decref(g1);
        json_decref(g2);
        json_decref(g3);
        json_decref(root);
        return NULL;
    }
    cg_json_set(g1, "errors", json_integer((json_int_t)r->check_errors));
    cg_json_set(g1, "warnings", json_integer((json_int_t)r->check_warnings));
    cg_json_set(root, "converts", g1);
    if (r->runs != CG_GATE_NOT_RUN) {
        cg_json_set(g2, "residency", cg_json_text(r->residency));
        /* what is counted: a .tflite's operators, as LiteRT's delegates log them */
        cg_json_set(g2, "unit", cg_json_text(r->tflite_ops ? "tflite_ops" : "nodes"));
        cg_json_set(g2, "nodes", json_integer((json_int_t)r->node_count));
        cg_json_set(g2, "preprocess", cg_json_text(r->preprocess));
        cg_json_set(g2, "removed_by_runtime", json_integer((json_int_t)r->removed_by_runtime));
        cg_json_set(g2, "removed_by", r->remover ? cg_json_text(r->remover) : json_null());
        if (r->lowered)
            cg_json_set(g2, "nodes_in_file",
                        json_integer((json_int_t)r->lowered->source->graph->node_count));
        /* null, not 0, where nothing could be placed */
        bool known = !r->residency_unknown;
        cg_json_set(g2, "nodes_on_target",
                    known ? json_integer((json_int_t)r->nodes_on_targets) : json_null());
        cg_json_set(g2, "partitions", known ? json_integer((json_int_t)r->partitions) : json_null());
        cg_json_set(g2, "boundaries", known ? json_integer((json_int_t)r->boundaries) : json_null());
        cg_json_set(g2, "time_coverage",
                            r->time_coverage >= 0 ? cg_json_number(r->time_coverage) : json_null());
        cg_json_set(g2, "placement_verdict", cg_json_text(r->verdict_text));
        /* the bar gate 2 applies, and the estimate it judges (ms) */
        cg_json_set(g2, "coverage_bar", r->coverage_bar >= 0 ? cg_json_number(r->coverage_bar)
                                                            : cg_json_text("majority"));
        cg_json_set(g2, "reference_ms",
                    r->reference_ms >= 0 ? cg_json_number(r->reference_ms) : json_null());
        cg_json_set(g2, "mixed_ms", r->mixed_ms >= 0 ? cg_json_number(r->mixed_ms) : json_null());
    }
    cg_json_set(root, "runs_where_intended", g2);
    if (r->matches != CG_GATE_NOT_RUN) {
        const cg_parity_report *j = &r->judged;
        cg_json_set(g3, "samples", json_integer((json_int_t)r->sample_count));
        cg_json_set(g3, "failed_samples", json_integer((json_int_t)r->failed_samples));
        cg_json_set(g3, "reduced_precision", json_boolean(r->reduced_precision));
        cg_json_set(g3, "precision", cg_json_text(cg_precision_name(j->precision)));
        cg_json_set(g3, "judged_by_noise_floor", json_boolean(j->by_noise));
        cg_json_set(g3, "note", j->note[0] ? cg_json_text(j->note) : json_null());
        outs = json_array();
        for (size_t o = 0; outs && o < j->output_count; o++) {
            json_t *m = cg_report_parity_output_json(j, &j->outputs[o]);
            if (m)
                json_array_append_new(outs, m);
        }
        cg_json_set(g3, "outputs", outs ? outs : json_null());
        cg_json_set(g3, "task", cg_report_task_json(j, r->task, r->threshold));
        if (r->bisected) {
            json_t *b = cg_bisect_report_json(&r->bisect);
            if (b)
                cg_json_set(b, "sample", cg_json_text(r->bisect_sample_label
                                                                 ? r->bisect_sample_label
                                                                 : ""));
            if (b)
                cg_json_set(b, "device_class", r->bisect_class ? cg_json_text(r->bisect_class)
                                                               : json_null());
            cg_json_set(g3, "bisect", b ? b : json_null());
        } else if (r->bisect_error[0]) {
            cg_json_set(g3, "bisect_error", cg_json_text(r->bisect_error));
        }
    }
    cg_json_set(root, "matches", g3);
    if (r->samples)
        cg_json_set(root, "samples_source", cg_json_text(r->samples));
    return root;
}
