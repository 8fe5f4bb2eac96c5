/*
 * The renderings of a placement (`convgate assign`, docs/placement.md):
 * text ordered as the engineer reads it, the residency line first (how
 * much of the model each target takes), then the partitions, the boundary
 * ledger (what the mix costs in crossings and bytes), why each CPU node is
 * there (refused, with the exact rule and value, or dropped by a partition
 * rule), the bodies, and the verdict; and the same as JSON. Node counts are
 * not time: with a cost estimate (cg_placement.time, src/cost/profile.c)
 * the verdict weighs the nodes by their reference time; without one it says
 * it counts nodes only.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "convgate/assign.h"
#include "convgate/lower.h"
#include "convgate/profile.h"
#include "report/report.h"
#include "target/registry.h"
#include "core/text.h"

#define AR_LABEL 128

/* A node's op type; "?" for a node without one (unchecked models). */
static const char *ar_op(const cg_node *n) { return n->op_type ? n->op_type : "?"; }

static size_t ar_nodes_on_targets(const cg_assignment *a)
{
    return a->graph->node_count - cg_assign_count_owned(a, CG_OWNER_CPU);
}

/* --- shared pieces of both renderings -------------------------------------------- */

static const char *const ar_time_note =
    "node counts only, not time: no reference timing (--no-time, or the reference could "
    "not run the model)";
static const char *const ar_time_assumed_note =
    "time from one reference run with per-node timing; the time on target and the "
    "crossing costs are ASSUMED (default per-op-class speedups and boundary model, "
    "docs/cost-model.md); `convgate profile` measures executing targets";

/* "NCHW->NHWC" or "NHWC->NCHW" for a crossing that converts layout. */
static const char *ar_layout_dir(const cg_assignment *a, const cg_boundary *b)
{
    const cg_target *to = b->to_partition >= 0 ? a->targets[a->partitions[b->to_partition].target]
                                               : NULL;
    return cg_target_layout(to) == CG_LAYOUT_NHWC ? "NCHW->NHWC" : "NHWC->NCHW";
}

static const char *ar_dtype_dir(const cg_assignment *a, const cg_boundary *b)
{
    const cg_target *to = b->to_partition >= 0 ? a->targets[a->partitions[b->to_partition].target]
                                               : NULL;
    return to && to->precision == CG_PRECISION_FP16 ? "float32->float16" : "float16->float32";
}

static const char *ar_side(const cg_assignment *a, int part, char *buf, size_t len)
{
    if (part < 0)
        snprintf(buf, len, "CPU");
    else
        snprintf(buf, len, "#%d %s", part, a->targets[a->partitions[part].target]->name);
    return buf;
}

static void ar_shape(const cg_boundary *b, char *buf, size_t len)
{
    if (!b->known) {
        snprintf(buf, len, "?");
        return;
    }
    size_t o = (size_t)snprintf(buf, len, "[");
    for (int d = 0; d < b->rank && o < len; d++)
        o += (size_t)snprintf(buf + o, len - o, "%s%lld", d ? "," : "", (long long)b->dims[d]);
    if (o < len)
        snprintf(buf + o, len - o, "]");
}

/* Op histogram of a partition: distinct op types with counts, most first. */
typedef struct ar_hist {
    const char *op;
    size_t count, first;
} ar_hist;

static int ar_hist_cmp(const void *x, const void *y)
{
    const ar_hist *a = x, *b = y;
    if (a->count != b->count)
        return a->count > b->count ? -1 : 1;
    return a->first < b->first ? -1 : a->first > b->first;
}

/* Returns the number of entries (caller frees *out); 0 on OOM. */
static size_t ar_histogram(const cg_graph *g, const cg_partition *p, ar_hist **out)
{
    ar_hist *h = malloc((p->node_count ? p->node_count : 1) * sizeof *h);
    size_t n = 0;
    *out = h;
    if (!h)
        return 0;
    for (size_t k = 0; k < p->node_count; k++) {
        const char *op = ar_op(&g->nodes[p->nodes[k]]);
        size_t i = 0;
        while (i < n && strcmp(h[i].op, op) != 0)
            i++;
        if (i == n) {
            h[n].op = op;
            h[n].count = 0;
            h[n].first = k;
            n++;
        }
        h[i].count++;
    }
    qsort(h, n, sizeof *h, ar_hist_cmp);
    return n;
}

static void ar_human_bytes(uint64_t b, char *buf, size_t len)
{
    if (b >= (uint64_t)1 << 30)
        snprintf(buf, len, "%.2f GiB", (double)b / (double)((uint64_t)1 << 30));
    else if (b >= (uint64_t)1 << 20)
        snprintf(buf, len, "%.2f MiB", (double)b / (double)((uint64_t)1 << 20));
    else if (b >= 1024)
        snprintf(buf, len, "%.1f KiB", (double)b / 1024.0);
    else
        snprintf(buf, len, "%llu B", (unsigned long long)b);
}

/* --- text --------------------------------------------------------------------------- */

/* "30/40 nodes on litert-gpu, 5/40 nodes on xnnpack, 5 on CPU" */
static void ar_residency_line(FILE *f, const cg_assignment *a)
{
    char line[1024];
    cg_assign_residency(a, line, sizeof line);
    cg_text_printf(f, "%s\n", line);
}

/* Writes the items of a list wrapped at ~100 columns, each line indented. */
static void ar_wrapped(FILE *f, const char *indent, const char *item, size_t *col, bool first)
{
    size_t w = strlen(item) + 2;
    if (first) {
        fputs(indent, f);
        *col = strlen(indent);
    } else if (*col + w > 100) {
        cg_text_printf(f, ",\n%s", indent);
        *col = strlen(indent);
    } else {
        fputs(", ", f);
        *col += 2;
    }
    cg_text_fputs(item, f);
    *col += w - 2;
}

static void ar_text_assignment(FILE *f, const cg_assignment *a)
{
    const cg_graph *g = a->graph;
    char label[AR_LABEL], s1[64], s2[64], shape[256], hb[32];

    fprintf(f, "Partitions (%zu):\n", a->partition_count);
    if (!a->partition_count)
        fprintf(f, "  none\n");
    for (size_t p = 0; p < a->partition_count; p++) {
        const cg_partition *pp = &a->partitions[p];
        ar_hist *h;
        size_t nh = ar_histogram(g, pp, &h);
        cg_text_printf(f, "  #%d %s: %zu node%s:", pp->id, a->targets[pp->target]->name,
                       pp->node_count, pp->node_count == 1 ? "" : "s");
        for (size_t i = 0; i < nh; i++)
            cg_text_printf(f, "%s %s x%zu", i ? "," : "", h[i].op, h[i].count);
        fputc('\n', f);
        free(h);
        size_t col = 0;
        for (size_t k = 0; k < pp->node_count; k++)
            ar_wrapped(f, "      ", cg_assign_node_label(g, pp->nodes[k], label, sizeof label),
                       &col, k == 0);
        fputc('\n', f);
    }

    uint64_t total = 0;
    size_t unknown = 0;
    for (size_t i = 0; i < a->boundary_count; i++) {
        total += a->boundaries[i].bytes;
        unknown += !a->boundaries[i].known;
    }
    ar_human_bytes(total, hb, sizeof hb);
    cg_text_printf(f, "Boundaries (%zu crossing%s, %s%s):\n", a->boundary_count,
                   a->boundary_count == 1 ? "" : "s", hb, unknown ? " known" : "");
    if (!a->boundary_count)
        fprintf(f, "  none\n");
    for (size_t i = 0; i < a->boundary_count; i++) {
        const cg_boundary *b = &a->boundaries[i];
        ar_shape(b, shape, sizeof shape);
        cg_text_printf(f, "  '%s'  %s -> %s  %s %s  ", b->tensor,
                       ar_side(a, b->from_partition, s1, sizeof s1),
                       ar_side(a, b->to_partition, s2, sizeof s2),
                       b->known ? cg_dtype_name(b->dtype) : "?", shape);
        if (b->known)
            fprintf(f, "%llu B", (unsigned long long)b->bytes);
        else
            fprintf(f, "? B");
        if (b->layout_conversion)
            cg_text_printf(f, "  layout %s", ar_layout_dir(a, b));
        if (b->dtype_conversion)
            cg_text_printf(f, "  dtype %s", ar_dtype_dir(a, b));
        fputc('\n', f);
    }

    fprintf(f, "Unsupported (%zu):\n", a->unsupported_count);
    if (!a->unsupported_count)
        fprintf(f, "  none\n");
    for (size_t i = 0; i < a->unsupported_count; i++) {
        const cg_unsupported *u = &a->unsupported[i];
        cg_text_printf(f, "  %s '%s': %s  [%s]\n", ar_op(&g->nodes[u->node]),
                       cg_assign_node_label(g, u->node, label, sizeof label),
                       u->reason, a->targets[u->target]->name);
    }
    fprintf(f, "Dropped by partition rules (%zu):\n", a->dropped_count);
    if (!a->dropped_count)
        fprintf(f, "  none\n");
    for (size_t i = 0; i < a->dropped_count; i++) {
        const cg_unsupported *u = &a->dropped[i];
        cg_text_printf(f, "  %s '%s': %s  [%s]\n", ar_op(&g->nodes[u->node]),
                       cg_assign_node_label(g, u->node, label, sizeof label),
                       u->reason, a->targets[u->target]->name);
    }
}

/* "7 operations will run on litert-gpu, and the remaining 1 operations will run
 * on the CPU.": target t's residency worded as LiteRT's GPU delegate logs it
 * (model_builder.cc GetOpsToReplace), for a .tflite's operators. */
static void ar_delegate_line(const cg_assignment *a, size_t t, char *buf, size_t len)
{
    size_t n = a->graph->node_count, on = cg_assign_count_owned(a, (int)t);
    snprintf(buf, len,
             "%zu operations will run on %s, and the remaining %zu operations will run on the "
             "CPU.",
             on, a->targets[t]->name, n - on);
}

/* "Graph partitioned: ..." and the removed nodes, for a lowered model. */
static void ar_lowered_text(FILE *f, const cg_lowered *l)
{
    char buf[512];
    size_t removed = cg_lowered_removed_count(l, "");
    fprintf(f, "Graph partitioned: preprocess '%s': %zu nodes of the file -> %zu on the runtime's "
            "side\n", l->lowering, l->source->graph->node_count, l->model->graph->node_count);
    fprintf(f, "  removed by %s: %zu", l->remover, removed);
    if (removed)
        fprintf(f, " (%s)", cg_lowered_removed_summary(l, "", 6, buf, sizeof buf));
    fputc('\n', f);
    if (l->removed_count > removed)
        fprintf(f, "  removed in control-flow bodies: %zu\n", l->removed_count - removed);
    if (l->added_count)
        fprintf(f, "  added by them (fusions): %zu\n", l->added_count);
}

void cg_assign_report_text(FILE *f, const cg_placement *p)
{
    const cg_assignment *a = p->main;
    char text[1024];

    if (p->lowered && strcmp(p->lowered->lowering, "none") != 0)
        ar_lowered_text(f, p->lowered);
    if (p->tflite_ops) {
        cg_assign_residency_in(a, "TFLite ops", text, sizeof text);
        fprintf(f, "%s (main subgraph)\n", text);
        /* one delegate's log line; with several targets, each later delegate
         * sees only what the earlier ones left, so no single line says it */
        if (a->target_count == 1) {
            ar_delegate_line(a, 0, text, sizeof text);
            fprintf(f, "  as the delegate logs it: \"%s\"\n", text);
        }
    } else {
        ar_residency_line(f, a);
    }
    ar_text_assignment(f, a);
    if (p->body_count) {
        fprintf(f, "Control-flow bodies (%zu, assigned on their own):\n", p->body_count);
        for (size_t i = 0; i < p->body_count; i++) {
            const cg_assignment *b = p->bodies[i].assignment;
            cg_text_printf(f, "  %*s%s: ", 2 * (p->bodies[i].depth - 1), "", p->bodies[i].path);
            ar_residency_line(f, b);
            cg_text_printf(f, "  %*s  %zu partition%s, %zu crossing%s",
                           2 * (p->bodies[i].depth - 1), "", b->partition_count,
                           b->partition_count == 1 ? "" : "s", b->boundary_count,
                           b->boundary_count == 1 ? "" : "s");
            if (b->unsupported_count) {
                char label[AR_LABEL];
                const cg_unsupported *u = &b->unsupported[0];
                cg_text_printf(f, "; first refused: %s '%s': %s", ar_op(&b->graph->nodes[u->node]),
                               cg_assign_node_label(b->graph, u->node, label, sizeof label),
                               u->reason);
            }
            fputc('\n', f);
        }
    }
    bool lowered_notes = p->lowered && (p->lowered->note_count || p->lowered->cpu_missing_count);
    if ((p->types && cg_type_env_note_count(p->types)) || p->types_error || lowered_notes) {
        fprintf(f, "Notes:\n");
        for (size_t i = 0; p->lowered && i < p->lowered->note_count; i++)
            fprintf(f, "  preprocess: %s\n", p->lowered->notes[i]);
        for (size_t i = 0; p->lowered && i < p->lowered->cpu_missing_count; i++) {
            const cg_lower_op_count *m = &p->lowered->cpu_missing[i];
            fprintf(f, "  preprocess: the runtime's CPU fallback has no kernel for %s%s%s (%zu "
                    "node%s): on the CPU it runs the op's ONNX function body instead, or refuses "
                    "the model\n", m->domain, m->domain[0] ? ":" : "", m->op_type, m->count,
                    m->count == 1 ? "" : "s");
        }
        if (p->types_error)
            cg_text_printf(f, "  tensor types unknown (rules that need one refuse the node): %s\n",
                           p->types_error);
        for (size_t i = 0; p->types && i < cg_type_env_note_count(p->types); i++)
            cg_text_printf(f, "  %s\n", cg_type_env_note(p->types, i));
    }
    cg_assign_verdict(a, p->types, text, sizeof text);
    if (p->time) {
        char timed[1024];
        cg_cost_verdict_text(p->time, a, timed, sizeof timed);
        cg_text_printf(f, "Verdict: %s; %s\n", text, timed);
        cg_text_printf(f, "  (%s)\n", ar_time_assumed_note);
    } else {
        cg_text_printf(f, "Verdict: %s\n", text);
        cg_text_printf(f, "  (%s)\n", ar_time_note);
    }
    for (size_t t = 0; t < a->target_count; t++) {
        const cg_target *tg = a->targets[t];
        if (tg->kind != CG_TARGET_PROFILED)
            continue;
        cg_text_printf(f, "Prediction for %s, not a run: from profile %s %s (rules from %s)",
                       tg->name, tg->name, tg->version ? tg->version : "?",
                       tg->source ? tg->source : "?");
        if (cg_profile_param_count(tg)) {
            char params[256];
            cg_text_printf(f, "; parameters: %s, set with --target NAME@VALUE",
                           cg_profile_params_text(tg, params, sizeof params));
        }
        if (tg->not_modelled_count) {
            fprintf(f, "; not modelled:\n");
            for (size_t i = 0; i < tg->not_modelled_count; i++)
                cg_text_printf(f, "  - %s\n", tg->not_modelled[i]);
        } else {
            fputc('\n', f);
        }
    }
}

/* --- JSON --------------------------------------------------------------------------- */

/* Adds v to obj under key, stealing the reference; false when either failed. */
static bool ar_set(json_t *obj, const char *key, json_t *v)
{
    return cg_json_set(obj, key, v) == 0;
}

static bool ar_push(json_t *arr, json_t *v) { return v && json_array_append_new(arr, v) == 0; }

static const char *ar_target_name(const cg_assignment *a, int part)
{
    return part < 0 ? "cpu" : a->targets[a->partitions[part].target]->name;
}

json_t *cg_report_boundary_json(const cg_assignment *a, const cg_boundary *b)
{
    json_t *jb = json_object(), *shape = NULL;
    if (!jb)
        return NULL;
    if (!ar_set(jb, "tensor", cg_json_text(b->tensor)) ||
        !ar_set(jb, "from", json_integer(b->from_partition)) ||
        !ar_set(jb, "to", json_integer(b->to_partition)) ||
        !ar_set(jb, "from_target", cg_json_text(ar_target_name(a, b->from_partition))) ||
        !ar_set(jb, "to_target", cg_json_text(ar_target_name(a, b->to_partition))) ||
        !ar_set(jb, "bytes", b->known ? json_integer((json_int_t)b->bytes) : json_null()) ||
        !ar_set(jb, "dtype", b->known ? cg_json_text(cg_dtype_name(b->dtype)) : json_null()) ||
        !ar_set(jb, "shape", shape = b->known ? json_array() : json_null()) ||
        !ar_set(jb, "layout_conversion", json_boolean(b->layout_conversion)) ||
        !ar_set(jb, "dtype_conversion", json_boolean(b->dtype_conversion)))
        goto fail;
    for (int d = 0; b->known && d < b->rank; d++)
        if (!ar_push(shape, json_integer((json_int_t)b->dims[d])))
            goto fail;
    return jb;
fail:
    json_decref(jb);
    return NULL;
}

/* The assignment-level fields shared by the main graph and the bodies. */
static bool ar_json_assignment(json_t *o, const cg_assignment *a, bool full)
{
    const cg_graph *g = a->graph;
    char label[AR_LABEL];
    size_t n = g->node_count;
    json_t *per = NULL;
    if (!ar_set(o, "nodes_total", json_integer((json_int_t)n)) ||
        !ar_set(o, "nodes_on_target", json_integer((json_int_t)ar_nodes_on_targets(a))) ||
        !ar_set(o, "nodes_on_cpu",
                json_integer((json_int_t)cg_assign_count_owned(a, CG_OWNER_CPU))) ||
        !ar_set(o, "nodes_per_target", per = json_object()))
        return false;
    for (size_t t = 0; t < a->target_count; t++)
        if (!ar_set(per, a->targets[t]->name,
                    json_integer((json_int_t)cg_assign_count_owned(a, (int)t))))
            return false;

    json_t *parts = NULL;
    if (!ar_set(o, "partitions", parts = json_array()))
        return false;
    for (size_t p = 0; p < a->partition_count; p++) {
        const cg_partition *pp = &a->partitions[p];
        json_t *jp = json_object(), *nodes = NULL, *ops = NULL, *ins = NULL, *outs = NULL;
        if (!ar_push(parts, jp) || !ar_set(jp, "id", json_integer(pp->id)) ||
            !ar_set(jp, "target", cg_json_text(a->targets[pp->target]->name)) ||
            !ar_set(jp, "node_count", json_integer((json_int_t)pp->node_count)) ||
            !ar_set(jp, "ops", ops = json_object()) ||
            !ar_set(jp, "nodes", nodes = json_array()) ||
            !ar_set(jp, "inputs", ins = json_array()) ||
            !ar_set(jp, "outputs", outs = json_array()))
            return false;
        ar_hist *h;
        size_t nh = ar_histogram(g, pp, &h);
        for (size_t i = 0; i < nh; i++)
            if (!ar_set(ops, h[i].op, json_integer((json_int_t)h[i].count))) {
                free(h);
                return false;
            }
        free(h);
        if (full)
            for (size_t k = 0; k < pp->node_count; k++)
                if (!ar_push(nodes,
                             cg_json_text(cg_assign_node_label(g, pp->nodes[k], label,
                                                              sizeof label))))
                    return false;
        for (size_t k = 0; k < pp->input_count; k++)
            if (!ar_push(ins, cg_json_text(pp->inputs[k])))
                return false;
        for (size_t k = 0; k < pp->output_count; k++)
            if (!ar_push(outs, cg_json_text(pp->outputs[k])))
                return false;
    }

    json_t *bs = NULL;
    uint64_t total = 0;
    if (!ar_set(o, "boundaries", bs = json_array()))
        return false;
    for (size_t i = 0; i < a->boundary_count; i++) {
        total += a->boundaries[i].bytes;
        if (!ar_push(bs, cg_report_boundary_json(a, &a->boundaries[i])))
            return false;
    }
    if (!ar_set(o, "boundary_bytes", json_integer((json_int_t)total)))
        return false;

    for (int list = 0; list < 2; list++) {
        const cg_unsupported *u = list ? a->dropped : a->unsupported;
        size_t count = list ? a->dropped_count : a->unsupported_count;
        json_t *arr = NULL;
        if (!ar_set(o, list ? "dropped" : "unsupported", arr = json_array()))
            return false;
        for (size_t i = 0; i < count; i++) {
            json_t *ju = json_object();
            if (!ar_push(arr, ju) ||
                !ar_set(ju, "node",
                        cg_json_text(cg_assign_node_label(g, u[i].node, label, sizeof label))) ||
                !ar_set(ju, "op_type", cg_json_text(ar_op(&g->nodes[u[i].node]))) ||
                !ar_set(ju, "target", cg_json_text(a->targets[u[i].target]->name)) ||
                !ar_set(ju, list ? "rule" : "reason",
                        cg_json_text(u[i].reason)))
                return false;
        }
    }
    return true;
}

/* "parameters": {"android_api": 29, ...} of a profiled target with parameters. */
static bool ar_json_params(json_t *jt, const cg_target *t)
{
    if (!cg_profile_param_count(t))
        return true;
    json_t *o = json_object();
    if (!ar_set(jt, "parameters", o))
        return false;
    for (size_t i = 0; i < cg_profile_param_count(t); i++) {
        cg_profile_param_info in;
        if (cg_profile_param(t, i, &in) && !ar_set(o, in.name, json_integer((json_int_t)in.value)))
            return false;
    }
    return true;
}

static const char *ar_fallback_name(cg_fallback_policy f)
{
    return f == CG_FALLBACK_FAIL ? "fail" : "cpu";
}

json_t *cg_assign_report_json(const cg_placement *p)
{
    const cg_assignment *a = p->main;
    char text[2048], fail[768];
    json_t *root = json_object();
    if (!root)
        return NULL;
    /* every container is attached as soon as it is made (ar_set frees it
     * when attaching fails), so freeing root frees everything */
    json_t *targets = NULL, *bodies = NULL, *verdict = NULL, *notes = NULL;
    bool ok = ar_set(root, "target",
                     a->target_count ? cg_json_text(a->targets[0]->name) : json_null()) &&
              ar_set(root, "targets", targets = json_array());
    for (size_t t = 0; ok && t < a->target_count; t++) {
        const cg_target *tg = a->targets[t];
        json_t *jt = json_object(), *nm = NULL;
        ok = ar_push(targets, jt) && ar_set(jt, "name", cg_json_text(tg->name)) &&
             ar_set(jt, "version", tg->version ? cg_json_text(tg->version) : json_null()) &&
             ar_set(jt, "kind", cg_json_text(tg->kind == CG_TARGET_PROFILED ? "profiled"
                                                                           : "executing")) &&
             ar_set(jt, "prediction", json_boolean(tg->kind == CG_TARGET_PROFILED)) &&
             ar_set(jt, "source", tg->source ? cg_json_text(tg->source) : json_null()) &&
             ar_set(jt, "fallback", cg_json_text(ar_fallback_name(tg->fallback))) &&
             ar_set(jt, "precision",
                    cg_json_text(tg->precision == CG_PRECISION_FP16 ? "fp16" : "fp32")) &&
             ar_set(jt, "nodes", json_integer((json_int_t)cg_assign_count_owned(a, (int)t))) &&
             ar_json_params(jt, tg) &&
             ar_set(jt, "not_modelled", nm = json_array());
        for (size_t i = 0; ok && i < tg->not_modelled_count; i++)
            ok = ar_push(nm, cg_json_text(tg->not_modelled[i]));
    }
    ok = ok && ar_set(root, "unit", cg_json_text(p->tflite_ops ? "tflite_ops" : "nodes"));
    if (ok && p->tflite_ops) {
        json_t *log = NULL;
        ok = ar_set(root, "delegate_log", log = json_array());
        if (ok && a->target_count == 1) {
            ar_delegate_line(a, 0, text, sizeof text);
            ok = ar_push(log, cg_json_text(text));
        }
    }
    ok = ok && ar_json_assignment(root, a, true) && ar_set(root, "bodies", bodies = json_array());
    for (size_t i = 0; ok && i < p->body_count; i++) {
        json_t *jb = json_object();
        ok = ar_push(bodies, jb) && ar_set(jb, "path", cg_json_text(p->bodies[i].path)) &&
             ar_set(jb, "depth", json_integer(p->bodies[i].depth)) &&
             ar_json_assignment(jb, p->bodies[i].assignment, true);
    }
    if (ok && p->lowered) {
        json_t *lw = cg_lowered_report_json(p->lowered);
        ok = ar_set(root, "preprocess", lw) &&
             ar_set(root, "nodes_in_file", json_integer((json_int_t)p->lowered->source->graph->node_count)) &&
             ar_set(root, "removed_by_runtime",
                    json_integer((json_int_t)cg_lowered_removed_count(p->lowered, ""))) &&
             ar_set(root, "removed_by", cg_json_text(p->lowered->remover));
    }
    ok = ok && ar_set(root, "notes", notes = json_array()) &&
         ar_set(root, "types_error",
                p->types_error ? cg_json_text(p->types_error) : json_null());
    for (size_t i = 0; ok && p->types && i < cg_type_env_note_count(p->types); i++)
        ok = ar_push(notes, cg_json_text(cg_type_env_note(p->types, i)));
    cg_verdict_kind kind = cg_assign_verdict(a, p->types, text, sizeof text);
    bool failed = cg_assign_init_failure(a, p->types, fail, sizeof fail);
    const cg_cost_estimate *e = p->time;
    if (e) {
        char timed[1024];
        size_t len = strlen(text);
        cg_cost_verdict_text(e, a, timed, sizeof timed);
        snprintf(text + len, sizeof text - len, "; %s", timed);
    }
    ok = ok && ar_set(root, "verdict", verdict = json_object()) &&
         ar_set(verdict, "kind", cg_json_text(cg_verdict_kind_name(kind))) &&
         ar_set(verdict, "text", cg_json_text(text)) &&
         ar_set(verdict, "init_failure", failed ? cg_json_text(fail) : json_null()) &&
         ar_set(verdict, "time_cost", cg_json_text(e ? ar_time_assumed_note : ar_time_note)) &&
         ar_set(verdict, "time_coverage", e ? cg_json_number(e->time_coverage) : json_null()) &&
         ar_set(verdict, "reference_ms", e ? cg_json_number(e->reference_ms) : json_null()) &&
         /* kept null for readers of the node-count report; the figures follow */
         ar_set(verdict, "estimate", json_null()) &&
         ar_set(verdict, "estimate_ms", e ? cg_json_number(e->mixed_ms) : json_null()) &&
         ar_set(verdict, "accelerated_ms", e ? cg_json_number(e->accelerated_ms) : json_null()) &&
         ar_set(verdict, "remainder_ms", e ? cg_json_number(e->remainder_ms) : json_null()) &&
         ar_set(verdict, "boundary_ms", e ? cg_json_number(e->boundary_ms) : json_null()) &&
         ar_set(verdict, "estimate_assumed", e ? json_boolean(e->assumed) : json_null()) &&
         ar_set(verdict, "fallback_dominates",
                e ? json_boolean(e->fallback_dominates) : json_null()) &&
         ar_set(verdict, "boundary_exceeds_gain",
                e ? json_boolean(e->boundary_exceeds_gain) : json_null());
    if (ok && e && e->top_cpu_node != SIZE_MAX) {
        json_t *top = json_object();
        const cg_node *n = &a->graph->nodes[e->top_cpu_node];
        char label[AR_LABEL];
        ok = ar_set(verdict, "top_cpu_node", top) &&
             ar_set(top, "node", cg_json_text(cg_assign_node_label(a->graph, e->top_cpu_node,
                                                                  label, sizeof label))) &&
             ar_set(top, "op_type", cg_json_text(ar_op(n))) &&
             ar_set(top, "ms", cg_json_number(e->top_cpu_ms)) &&
             ar_set(top, "share", cg_json_number(e->reference_ms > 0
                                                ? e->top_cpu_ms / e->reference_ms : 0));
    }
    if (!ok) {
        json_decref(root);
        return NULL;
    }
    return root;
}

/* --- nothing placed ----------------------------------------------------------------- */

void cg_report_assign_unknown_text(FILE *f, const char *inputs, const char *setting,
                                   const char *why)
{
    cg_text_printf(f, "Residency: unknown (nothing placed: the model itself fails on %s (dims: "
                   "%s) in the reference runtime, so no tensor has a type to judge)\n", inputs,
                   setting);
    cg_text_printf(f, "  %s\n", why);
    cg_text_printf(f, "Verdict: unknown: give inputs the model runs on (--inputs DIR, "
                   "--range, --dim/--shape)\n");
}

json_t *cg_report_assign_unknown_json(const char *inputs, const char *setting, const char *why)
{
    json_t *root = json_object(), *verdict = NULL;
    bool ok = root && ar_set(root, "setting", cg_json_text(setting)) &&
              ar_set(root, "residency", cg_json_text("unknown")) &&
              ar_set(root, "nodes_on_target", json_null()) &&
              ar_set(root, "partitions", json_null()) &&
              ar_set(root, "types_error", cg_json_text(why)) &&
              ar_set(root, "verdict", verdict = json_object()) &&
              ar_set(verdict, "kind", cg_json_text("unknown")) &&
              ar_set(verdict, "inputs", cg_json_text(inputs)) &&
              ar_set(verdict, "text", cg_json_text(why));
    if (!ok) {
        json_decref(root);
        return NULL;
    }
    return root;
}

/* --- shape settings (`assign --dims`) ------------------------------------------------ */

/* "xnnpack" or "CPU" for a node's owner in an assignment. */
static const char *owner_name(const cg_assignment *a, size_t v)
{
    return a->owner[v] == CG_OWNER_CPU ? "CPU" : a->targets[a->owner[v]]->name;
}

/* Why a CPU node is there in an assignment, or NULL. */
static const char *cpu_reason(const cg_assignment *a, size_t v)
{
    for (size_t i = 0; i < a->unsupported_count; i++)
        if (a->unsupported[i].node == v)
            return a->unsupported[i].reason;
    for (size_t i = 0; i < a->dropped_count; i++)
        if (a->dropped[i].node == v)
            return a->dropped[i].reason;
    return NULL;
}

static bool owner_changes(const cg_assign_setting *s, size_t count, size_t v)
{
    for (size_t i = 1; i < count; i++)
        if (s[i].placement->main->owner[v] != s[0].placement->main->owner[v])
            return true;
    return false;
}

void cg_report_settings_text(FILE *f, const cg_assign_setting *s, size_t count)
{
    const cg_graph *g = s[0].placement->main->graph;
    char label[128];
    fprintf(f, "Shape settings (%zu; the report above is for the first):\n", count);
    for (size_t i = 0; i < count; i++) {
        const cg_assignment *a = s[i].placement->main;
        char line[1024];
        cg_assign_residency(a, line, sizeof line);
        cg_text_printf(f, "  %s: %s; %zu partition%s, %zu crossing%s\n", s[i].label, line,
                       a->partition_count, a->partition_count == 1 ? "" : "s", a->boundary_count,
                       a->boundary_count == 1 ? "" : "s");
    }
    size_t changed = 0;
    for (size_t v = 0; v < g->node_count; v++)
        changed += owner_changes(s, count, v);
    fprintf(f, "Nodes that change owner with shape (%zu):\n", changed);
    if (!changed)
        fprintf(f, "  none: placement does not depend on these shapes\n");
    for (size_t v = 0; v < g->node_count; v++) {
        if (!owner_changes(s, count, v))
            continue;
        cg_text_printf(f, "  %s '%s':", g->nodes[v].op_type ? g->nodes[v].op_type : "?",
               cg_assign_node_label(g, v, label, sizeof label));
        for (size_t i = 0; i < count; i++) {
            const cg_assignment *a = s[i].placement->main;
            const char *why = a->owner[v] == CG_OWNER_CPU ? cpu_reason(a, v) : NULL;
            cg_text_printf(f, "%s %s: %s%s%s%s", i ? ";" : "", s[i].label, owner_name(a, v),
                   why ? " (" : "", why ? why : "", why ? ")" : "");
        }
        fputc('\n', f);
    }
}

bool cg_report_settings_json(json_t *root, const cg_assign_setting *s, size_t count)
{
    const cg_graph *g = s[0].placement->main->graph;
    char label[128];
    json_t *arr = json_array(), *changes = NULL;
    if (!arr || cg_json_set(root, "shape_settings", arr) != 0)
        return false;
    for (size_t i = 0; i < count; i++) {
        const cg_assignment *a = s[i].placement->main;
        json_t *o = json_object(), *dims = json_object(), *per = json_object();
        if (!o || json_array_append_new(arr, o) != 0 || !dims ||
            cg_json_set(o, "dims", dims) != 0 || !per ||
            cg_json_set(o, "nodes_per_target", per) != 0)
            return false;
        for (size_t k = 0; k < s[i].dim_count; k++)
            cg_json_set(dims, s[i].dims[k].symbol,
                                json_integer((json_int_t)s[i].dims[k].value));
        for (size_t t = 0; t < a->target_count; t++)
            cg_json_set(per, a->targets[t]->name,
                                json_integer((json_int_t)cg_assign_count_owned(a, (int)t)));
        char text[1024];
        cg_verdict_kind kind = cg_assign_verdict(a, s[i].types, text, sizeof text);
        cg_json_set(o, "label", cg_json_text(s[i].label));
        cg_json_set(o, "nodes_on_cpu",
                            json_integer((json_int_t)cg_assign_count_owned(a, CG_OWNER_CPU)));
        cg_json_set(o, "partitions", json_integer((json_int_t)a->partition_count));
        cg_json_set(o, "boundaries", json_integer((json_int_t)a->boundary_count));
        cg_json_set(o, "verdict", cg_json_text(cg_verdict_kind_name(kind)));
    }
    changes = json_array();
    if (!changes || cg_json_set(root, "owner_changes", changes) != 0)
        return false;
    for (size_t v = 0; v < g->node_count; v++) {
        if (!owner_changes(s, count, v))
            continue;
        json_t *o = json_object(), *owners = json_array();
        if (!o || json_array_append_new(changes, o) != 0 || !owners ||
            cg_json_set(o, "owners", owners) != 0)
            return false;
        cg_json_set(o, "node",
                            cg_json_text(cg_assign_node_label(g, v, label, sizeof label)));
        cg_json_set(o, "op_type",
                            cg_json_text(g->nodes[v].op_type ? g->nodes[v].op_type : "?"));
        for (size_t i = 0; i < count; i++) {
            const cg_assignment *a = s[i].placement->main;
            const char *why = a->owner[v] == CG_OWNER_CPU ? cpu_reason(a, v) : NULL;
            json_t *w = json_object();
            if (!w || json_array_append_new(owners, w) != 0)
                return false;
            cg_json_set(w, "setting", cg_json_text(s[i].label));
            cg_json_set(w, "owner", cg_json_text(a->owner[v] == CG_OWNER_CPU
                                                            ? "cpu"
                                                            : a->targets[a->owner[v]]->name));
            cg_json_set(w, "reason", why ? cg_json_text(why) : json_null());
        }
    }
    return true;
}

