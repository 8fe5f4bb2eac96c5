/*
 * Renderings of convgate convert: the artifact's manifest.json and
 * README.md, the terminal summary, and convgate verify DIR's report.
 *
 * The manifest and the README hold nothing that changes from run to run
 * (no time, no timing, no absolute path the options did not name), so
 * the same input and options give byte-identical files.
 */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "core/text.h"
#include "report/report.h"
#include "target/registry.h"

static const char *base_name(const char *path)
{
    const char *slash = path ? strrchr(path, '/') : NULL;
    return slash ? slash + 1 : path;
}

/* --- the manifest ----------------------------------------------------------------------- */

static json_t *target_json(const cg_target *t)
{
    json_t *o = json_object();
    cg_json_set(o, "name", cg_json_text(t->name));
    cg_json_set(o, "version", cg_json_text(t->version));
    cg_json_set(o, "kind", cg_json_text(t->kind == CG_TARGET_EXECUTING ? "executing" : "profiled"));
    cg_json_set(o, "precision", cg_json_text(cg_precision_name(t->precision)));
    cg_json_set(o, "fallback", cg_json_text(t->fallback == CG_FALLBACK_CPU ? "cpu" : "fail"));
    bool prof = cg_profile_is(t);
    cg_json_set(o, "runtime", prof ? cg_json_text(cg_profile_runtime(t)) : json_null());
    cg_json_set(o, "profile", prof ? cg_json_text(base_name(cg_profile_path(t))) : json_null());
    json_t *src = json_array();
    for (size_t i = 0; prof && i < cg_profile_source_count(t); i++) {
        const cg_profile_source *s = cg_profile_source_at(t, i);
        json_t *e = json_object();
        cg_json_set(e, "repo", cg_json_text(s->repo));
        cg_json_set(e, "path", cg_json_text(s->path));
        cg_json_set(e, "revision", cg_json_text(s->revision));
        cg_json_set(e, "note", s->note ? cg_json_text(s->note) : json_null());
        json_array_append_new(src, e);
    }
    cg_json_set(o, "sources", src);
    if (!prof)
        cg_json_set(o, "source", cg_json_text(t->source));
    return o;
}

static json_t *placement_detail_json(const cg_assignment *a)
{
    json_t *o = json_object(), *parts = json_array(), *bounds = json_array();
    char res[512];
    cg_assign_residency(a, res, sizeof res);
    cg_json_set(o, "residency", cg_json_text(res));
    for (size_t i = 0; i < a->partition_count; i++) {
        const cg_partition *p = &a->partitions[i];
        json_t *e = json_object(), *nodes = json_array();
        char buf[64];
        for (size_t k = 0; k < p->node_count; k++)
            json_array_append_new(nodes, cg_json_text(cg_assign_node_label(a->graph, p->nodes[k],
                                                                           buf, sizeof buf)));
        cg_json_set(e, "id", json_integer(p->id));
        cg_json_set(e, "target", cg_json_text(a->targets[p->target]->name));
        cg_json_set(e, "nodes", nodes);
        json_array_append_new(parts, e);
    }
    for (size_t i = 0; i < a->boundary_count; i++) {
        const cg_boundary *b = &a->boundaries[i];
        json_t *e = json_object();
        cg_json_set(e, "tensor", cg_json_text(b->tensor));
        cg_json_set(e, "from", b->from_partition < 0 ? cg_json_text("cpu")
                                                     : json_integer(b->from_partition));
        cg_json_set(e, "to", b->to_partition < 0 ? cg_json_text("cpu")
                                                 : json_integer(b->to_partition));
        cg_json_set(e, "bytes", b->known ? json_integer((json_int_t)b->bytes) : json_null());
        json_array_append_new(bounds, e);
    }
    json_t *refused = json_array();
    char buf[64];
    for (size_t i = 0; i < a->unsupported_count; i++) {
        const cg_unsupported *u = &a->unsupported[i];
        json_t *e = json_object();
        cg_json_set(e, "node", cg_json_text(cg_assign_node_label(a->graph, u->node, buf,
                                                                 sizeof buf)));
        cg_json_set(e, "op", cg_json_text(a->graph->nodes[u->node].op_type));
        cg_json_set(e, "reason", cg_json_text(cg_assign_bare_reason(a->graph, u->node, u->reason)));
        json_array_append_new(refused, e);
    }
    cg_json_set(o, "partitions", parts);
    cg_json_set(o, "boundaries", bounds);
    cg_json_set(o, "refused", refused);
    return o;
}

static json_t *compare_json(const cg_verify_report *v)
{
    const cg_parity_report *p = &v->parity;
    json_t *o = json_object(), *outs = json_array();
    cg_json_set(o, "pass", json_boolean(v->pass));
    cg_json_set(o, "reduced_precision", json_boolean(p->reduced));
    cg_json_set(o, "sets", json_integer((json_int_t)p->sample_count));
    for (size_t k = 0; k < p->output_count; k++)
        json_array_append_new(outs, cg_report_parity_output_json(p, &p->outputs[k]));
    cg_json_set(o, "outputs", outs);
    return o;
}

/* Gate 3's tolerance: the first output's, when the outputs are judged by
 * one (a golden set without floors); null when judged against the floors. */
static json_t *gate_tolerance_json(const cg_gate_report *g)
{
    const cg_parity_report *p = &g->judged;
    if (!p->output_count || p->outputs[0].by_noise)
        return json_null();
    return cg_report_tolerance_json(&p->outputs[0].tol.tol, p->outputs[0].tol.source);
}

static json_t *gates_json(const cg_gate_report *g)
{
    json_t *o = json_object();
    cg_json_set(o, "pass", json_boolean(g->pass));
    cg_json_set(o, "converts", cg_json_text(cg_gate_state_name(g->converts)));
    cg_json_set(o, "converts_detail", cg_json_text(g->converts_detail));
    cg_json_set(o, "runs", cg_json_text(cg_gate_state_name(g->runs)));
    cg_json_set(o, "runs_detail", cg_json_text(g->runs_detail));
    cg_json_set(o, "matches", cg_json_text(cg_gate_state_name(g->matches)));
    cg_json_set(o, "matches_detail", cg_json_text(g->matches_detail));
    cg_json_set(o, "tolerance", gate_tolerance_json(g));
    cg_json_set(o, "reason", cg_json_text(g->reason));
    return o;
}

static json_t *estimate_json(const cg_convert_result *r)
{
    if (!r->estimated)
        return cg_json_text(r->estimate_note);
    const cg_cost_estimate *e = &r->estimate;
    json_t *o = json_object();
    cg_json_set(o, "basis", cg_json_text("op work (multiply-accumulates, else elements) at an "
                                         "ASSUMED 1e6 per ms and the default per-op-class "
                                         "speedups and crossing costs: deterministic, not a "
                                         "timing (convgate profile measures)"));
    cg_json_set(o, "time_coverage", cg_json_number(e->time_coverage));
    cg_json_set(o, "reference_ms", cg_json_number(e->reference_ms));
    cg_json_set(o, "accelerated_ms", cg_json_number(e->accelerated_ms));
    cg_json_set(o, "remainder_ms", cg_json_number(e->remainder_ms));
    cg_json_set(o, "boundary_ms", cg_json_number(e->boundary_ms));
    cg_json_set(o, "crossings", json_integer((json_int_t)e->crossings));
    cg_json_set(o, "mixed_ms", cg_json_number(e->mixed_ms));
    return o;
}

static json_t *sample_json(const cg_convert_result *r)
{
    const cg_rewrite_options *o = &r->opt->rewrite;
    json_t *s = json_object(), *dims = json_object();
    cg_json_set(s, "description", cg_json_text(r->opt->samples_desc));
    cg_json_set(s, "count", json_integer((json_int_t)o->samples->count));
    cg_json_set(s, "seed", json_integer(o->random ? (json_int_t)o->random->seed : 0));
    for (size_t i = 0; i < o->dim_count; i++)
        cg_json_set(dims, o->dims[i].symbol, json_integer(o->dims[i].value));
    cg_json_set(s, "dims", dims);
    return s;
}

static const cg_artifact_file *find_file(const cg_convert_result *r, const char *path)
{
    for (size_t i = 0; i < r->file_count; i++)
        if (strcmp(r->files[i].path, path) == 0)
            return &r->files[i];
    return NULL;
}

json_t *cg_report_convert_manifest(const cg_convert_result *r)
{
    json_t *root = json_object(), *cmd = json_array(), *targets = json_array();
    const cg_rewrite_options *o = &r->opt->rewrite;
    cg_json_set(root, "format", cg_json_text("convgate-artifact"));
    cg_json_set(root, "format_version", json_integer(CG_ARTIFACT_FORMAT_VERSION));
    json_t *cv = json_object();
    cg_json_set(cv, "version", cg_json_text(CG_VERSION));
    cg_json_set(cv, "commit", cg_json_text(cg_build_commit()));
    cg_json_set(root, "convgate", cv);
    for (size_t i = 0; i < r->opt->argc; i++)
        json_array_append_new(cmd, cg_json_text(r->opt->argv[i]));
    cg_json_set(root, "command", cmd);
    json_t *src = json_object();
    cg_json_set(src, "file", cg_json_text(r->source_name));
    cg_json_set(src, "sha256", cg_json_text(r->source_sha256));
    cg_json_set(src, "bytes", json_integer((json_int_t)r->source_bytes));
    cg_json_set(src, "nodes", json_integer((json_int_t)r->rewrite.source_nodes));
    cg_json_set(src, "checks", cg_json_text(r->source_check_detail));
    cg_json_set(root, "source", src);
    const cg_artifact_file *mf = find_file(r, "model.onnx");
    json_t *res = json_object();
    cg_json_set(res, "file", cg_json_text("model.onnx"));
    cg_json_set(res, "sha256", cg_json_text(mf ? mf->sha256 : ""));
    cg_json_set(res, "bytes", json_integer(mf ? (json_int_t)mf->bytes : 0));
    cg_json_set(res, "external_data", r->external_data ? cg_json_text("model.onnx.data")
                                                       : json_null());
    cg_json_set(res, "nodes", json_integer(r->rewrite.model
                                               ? (json_int_t)r->rewrite.model->graph->node_count
                                               : 0));
    cg_json_set(root, "result", res);
    for (size_t i = 0; i < o->target_count; i++)
        json_array_append_new(targets, target_json(o->targets[i]));
    cg_json_set(root, "targets", targets);
    cg_json_set(root, "samples", sample_json(r));
    json_t *steps = json_array();
    for (size_t i = 0; i < r->rewrite.step_count; i++)
        if (r->rewrite.steps[i].outcome != CG_STEP_NOT_APPLICABLE)
            json_array_append_new(steps, cg_report_rewrite_step_json(&r->rewrite.steps[i], false));
    cg_json_set(root, "rewrites", steps);
    json_t *pl = json_object();
    cg_json_set(pl, "before", cg_json_text(r->rewrite.before.residency));
    cg_json_set(pl, "after", r->assignment ? placement_detail_json(r->assignment)
                                           : cg_json_text(r->estimate_note));
    cg_json_set(root, "placement", pl);
    cg_json_set(root, "estimate", estimate_json(r));
    json_t *tol = json_object();
    cg_json_set(tol, "atol", cg_json_number(r->tol.atol));
    cg_json_set(tol, "rtol", cg_json_number(r->tol.rtol));
    cg_json_set(tol, "justification", cg_json_text(r->tol_justification));
    cg_json_set(root, "tolerance", tol);
    json_t *cmp = json_object();
    cg_json_set(cmp, "fp32", compare_json(&r->fp32));
    cg_json_set(cmp, "target", r->target_note[0] ? cg_json_text(r->target_note)
                                                  : compare_json(&r->target));
    cg_json_set(root, "compare", cmp);
    cg_json_set(root, "gates", gates_json(&r->gate));
    const cg_artifact_file *gm = find_file(r, "golden/manifest.json");
    json_t *gold = json_object();
    cg_json_set(gold, "dir", cg_json_text("golden"));
    cg_json_set(gold, "manifest_sha256", cg_json_text(gm ? gm->sha256 : ""));
    cg_json_set(gold, "sets", json_integer((json_int_t)r->fp32.parity.sample_count));
    cg_json_set(gold, "created", cg_json_text(r->created));
    cg_json_set(gold, "made_by", cg_json_text("the source model on the reference runtime"));
    cg_json_set(root, "golden", gold);
    json_t *dep = json_object();
    cg_json_set(dep, "ort_required_operators", cg_json_text("deploy/ort_required_operators.config"));
    cg_json_set(dep, "tflm_op_resolver", cg_json_text("deploy/tflm_op_resolver.cc"));
    cg_json_set(dep, "tflm_ops_without_builtin", json_integer((json_int_t)r->tflm_missing));
    cg_json_set(root, "deploy", dep);
    json_t *files = json_array();
    for (size_t i = 0; i < r->file_count; i++) {
        json_t *f = json_object();
        cg_json_set(f, "path", cg_json_text(r->files[i].path));
        cg_json_set(f, "sha256", cg_json_text(r->files[i].sha256));
        cg_json_set(f, "bytes", json_integer((json_int_t)r->files[i].bytes));
        json_array_append_new(files, f);
    }
    cg_json_set(root, "files", files);
    return root;
}

/* --- the README ------------------------------------------------------------------------ */

static void metrics_cell(FILE *f, const cg_verify_report *v, const char *note)
{
    if (note && note[0]) {
        cg_text_printf(f, "FAIL (%s)", note);
        return;
    }
    const cg_parity_report *p = &v->parity;
    double worst = 0;
    for (size_t k = 0; k < p->output_count; k++)
        if (!(p->outputs[k].merged.max_abs <= worst))
            worst = p->outputs[k].merged.max_abs;
    fprintf(f, "%s (max abs %.3g over %zu output%s, %zu set%s)", v->pass ? "PASS" : "FAIL", worst,
            p->output_count, p->output_count == 1 ? "" : "s", p->sample_count,
            p->sample_count == 1 ? "" : "s");
}

void cg_report_convert_readme(FILE *f, const cg_convert_result *r)
{
    const cg_rewrite_options *o = &r->opt->rewrite;
    const cg_model *m = r->rewrite.model;
    char label[512] = "";
    size_t used = 0;
    for (size_t i = 0; i < o->target_count && used < sizeof label; i++) {
        int w = snprintf(label + used, sizeof label - used, "%s%s", i ? ", " : "",
                         o->targets[i]->name);
        used = w < 0 ? sizeof label : used + (size_t)w;
    }
    fprintf(f, "# %s for %s\n\n", r->source_name, label);
    fprintf(f, "Converted by convgate %s (commit %s). `manifest.json` holds every figure below "
               "and the sha256 of every file here; `convgate verify .` checks them.\n\n",
            CG_VERSION, cg_build_commit());
    fprintf(f, "## What was done\n\n");
    fprintf(f, "| | source | result |\n|---|---|---|\n");
    fprintf(f, "| file | `%s` | `model.onnx`%s |\n", r->source_name,
            r->external_data ? " (+ `model.onnx.data`)" : "");
    const cg_artifact_file *mf = find_file(r, "model.onnx");
    fprintf(f, "| sha256 | `%s` | `%s` |\n", r->source_sha256, mf ? mf->sha256 : "?");
    fprintf(f, "| nodes | %zu | %zu |\n", r->rewrite.source_nodes,
            m ? m->graph->node_count : (size_t)0);
    cg_text_printf(f, "| placement | %s | %s |\n\n",
                   r->rewrite.before.placed ? r->rewrite.before.residency : r->rewrite.before.note,
                   r->rewrite.after.placed ? r->rewrite.after.residency : r->rewrite.after.note);
    fprintf(f, "Rewrites, each verified on the reference runtime against the source (samples: "
               "%s) before it was kept:\n\n", r->opt->samples_desc ? r->opt->samples_desc : "?");
    size_t shown = 0;
    for (size_t i = 0; i < r->rewrite.step_count; i++) {
        const cg_rewrite_step *s = &r->rewrite.steps[i];
        if (s->outcome == CG_STEP_NOT_APPLICABLE)
            continue;
        shown++;
        cg_text_printf(f, "- **%s** (%s, %s): %s", s->info->name,
                       cg_rewrite_kind_name(s->info->kind), cg_rewrite_outcome_name(s->outcome),
                       s->detail);
        if (s->verified && s->outcome == CG_STEP_APPLIED)
            fprintf(f, "%s", s->exact ? "; outputs bit-identical" : "; within the noise floor");
        if (s->target_err_before >= 0)
            fprintf(f, "; target path max |d| %.4g -> %.4g", s->target_err_before,
                    s->target_err_after);
        fputs("\n", f);
    }
    if (!shown)
        fprintf(f, "- none matched the model\n");
    fprintf(f, "\n## The numbers\n\n");
    cg_text_printf(f, "- Reference runtime, result vs the source's golden outputs "
                      "(atol %g, rtol %g: %s): ",
                   r->tol.atol, r->tol.rtol, r->tol_justification);
    metrics_cell(f, &r->fp32, NULL);
    fprintf(f, "\n- Target path (%s%s) vs the same outputs: ", label,
            r->target.parity.reduced ? ", reduced precision emulated" : "");
    metrics_cell(f, &r->target, r->target_note);
    cg_text_printf(f, "\n- Gates: 1 converts %s, 2 runs where intended %s, 3 matches %s. %s\n",
                   cg_gate_state_name(r->gate.converts), cg_gate_state_name(r->gate.runs),
                   cg_gate_state_name(r->gate.matches), r->gate.reason);
    if (r->estimated)
        fprintf(f, "- Estimate (op work at an assumed rate, not a timing): %.1f%% of the work on "
                   "the target, mixed latency %.3g ms against %.3g ms all on the CPU; "
                   "`convgate profile model.onnx --target %s` measures.\n",
                100.0 * r->estimate.time_coverage, r->estimate.mixed_ms, r->estimate.reference_ms,
                o->target_count ? o->targets[0]->name : "T");
    fprintf(f, "\n## Recipe\n\n");
    cg_text_printf(f, "1. Export: the source `%s` was given to convgate as is (producer %s %s, "
                      "ai.onnx opset %lld); keep the exporter's script and versions beside this "
                      "directory.\n",
                   r->source_name, m && m->producer_name ? m->producer_name : "?",
                   m && m->producer_version ? m->producer_version : "",
                   m ? (long long)cg_model_opset(m, "") : -1LL);
    fprintf(f, "2. Convert:");
    for (size_t i = 0; i < r->opt->argc; i++)
        fprintf(f, " %s", r->opt->argv[i]);
    fprintf(f, "\n3. Reference: `golden/` holds the source's outputs on the reference runtime "
               "for each sample (made like `convgate dump-ref %s --random N -o golden`); its "
               "manifest names model.onnx, the model it checks.\n", r->source_name);
    fprintf(f, "4. Verify: `convgate verify .` (hashes, then model.onnx against the golden set); "
               "`convgate verify . --target %s` for the target path; on a device, write the "
               "outputs per set and `convgate verify model.onnx --golden golden --outputs-from "
               "DIR`.\n", o->target_count ? o->targets[0]->name : "T");
    fprintf(f, "\n## Deployment lists\n\n");
    fprintf(f, "- `deploy/ort_required_operators.config`: ONNX Runtime's reduced build "
               "(`--include_ops_by_config`).\n");
    fprintf(f, "- `deploy/tflm_op_resolver.cc`: the TensorFlow Lite Micro registrations "
               "(MicroMutableOpResolver)%s.\n",
            r->tflm_missing ? "; some ops have no TFLM builtin (listed at its top)" : "");
    fprintf(f, "\n## Files\n\n");
    for (size_t i = 0; i < r->file_count; i++)
        if (strncmp(r->files[i].path, "golden/", 7) != 0 || strcmp(r->files[i].path,
                                                                      "golden/manifest.json") == 0)
            fprintf(f, "- `%s` (%" PRIu64 " bytes)\n", r->files[i].path, r->files[i].bytes);
    fprintf(f, "- `golden/`: %zu set%s of inputs and outputs (.npy), hashed in its manifest\n",
            r->fp32.parity.sample_count, r->fp32.parity.sample_count == 1 ? "" : "s");
}

/* --- the terminal summary -------------------------------------------------------------------- */

void cg_report_convert_text(FILE *f, const cg_convert_result *r, const cg_rewrite_view *v)
{
    if (!r->source_checks) {
        cg_text_printf(f, "convgate convert %s: the source fails the checker (%s); "
                          "nothing written\n",
                       v->model, r->source_check_detail);
        return;
    }
    cg_report_rewrite_text(f, &r->rewrite, v);
    fprintf(f, "reference vs the source's outputs: ");
    metrics_cell(f, &r->fp32, NULL);
    fprintf(f, "\ntarget path vs the source's outputs: ");
    metrics_cell(f, &r->target, r->target_note);
    cg_text_printf(f, "\ngates: 1 %s, 2 %s, 3 %s: %s\n", cg_gate_state_name(r->gate.converts),
                   cg_gate_state_name(r->gate.runs), cg_gate_state_name(r->gate.matches),
                   r->gate.reason);
    fprintf(f, "wrote %s: %zu files (manifest.json, README.md, model.onnx, golden/, deploy/)\n",
            r->dir, r->file_count);
}

json_t *cg_report_convert_json(const cg_convert_result *r, const cg_rewrite_view *v)
{
    json_t *root = json_object();
    cg_json_set(root, "dir", cg_json_text(r->dir));
    cg_json_set(root, "source_checks", json_boolean(r->source_checks));
    cg_json_set(root, "source_check_detail", cg_json_text(r->source_check_detail));
    cg_json_set(root, "rewrite", cg_report_rewrite_json(&r->rewrite, v));
    cg_json_set(root, "manifest", r->source_checks ? cg_report_convert_manifest(r) : json_null());
    return root;
}

/* --- verify DIR ------------------------------------------------------------------------------ */

void cg_report_artifact_text(FILE *f, const cg_artifact_report *a, const char *producer)
{
    cg_text_printf(f, "artifact %s: %zu files match manifest.json (made by convgate %s, "
                      "commit %s; source sha256 %s)\n",
                   a->dir, a->files_checked, a->convgate_version, a->commit, a->source_sha256);
    char golden[4200];
    snprintf(golden, sizeof golden, "%s/golden", a->dir);
    cg_report_verify_text(f, &a->golden, golden, producer);
}

json_t *cg_report_artifact_json(const cg_artifact_report *a, const char *producer)
{
    char golden[4200], model[4200];
    snprintf(golden, sizeof golden, "%s/golden", a->dir);
    snprintf(model, sizeof model, "%s/model.onnx", a->dir);
    json_t *root = json_object(), *art = json_object();
    cg_json_set(art, "dir", cg_json_text(a->dir));
    cg_json_set(art, "format_version", json_integer(a->format_version));
    cg_json_set(art, "convgate_version", cg_json_text(a->convgate_version));
    cg_json_set(art, "commit", cg_json_text(a->commit));
    cg_json_set(art, "source_sha256", cg_json_text(a->source_sha256));
    cg_json_set(art, "result_sha256", cg_json_text(a->result_sha256));
    cg_json_set(art, "files_checked", json_integer((json_int_t)a->files_checked));
    cg_json_set(root, "artifact", art);
    cg_json_set(root, "verify", cg_report_verify_json(&a->golden, model, golden, producer));
    return root;
}
