/*
 * Renderings of a run's outputs (`convgate run`): per output its dtype,
 * shape, min/max/mean over finite values, NaN and Inf counts and the file
 * it was written to; sequences item by item.
 */
#include <inttypes.h>
#include <stdio.h>

#include "convgate/tensor_io.h"
#include "report/report.h"
#include "core/text.h"

static json_t *tensor_json(const cg_tensor *t)
{
    cg_tensor_summary s;
    json_t *o = json_object(), *shape = json_array();
    cg_io_tensor_summary(t, &s);
    for (int d = 0; shape && d < t->rank; d++)
        json_array_append_new(shape, json_integer(t->dims[d]));
    cg_json_set(o, "dtype", cg_json_text(cg_dtype_name(t->dtype)));
    cg_json_set(o, "shape", shape);
    /* over finite values: "nan" when there are none (report/json.h) */
    cg_json_set(o, "min", cg_json_number(s.min));
    cg_json_set(o, "max", cg_json_number(s.max));
    cg_json_set(o, "mean", cg_json_number(s.mean));
    cg_json_set(o, "nan", json_integer(s.nan_count));
    cg_json_set(o, "inf", json_integer(s.inf_count));
    return o;
}

static void tensor_text(FILE *f, const cg_tensor *t)
{
    cg_tensor_summary s;
    cg_io_tensor_summary(t, &s);
    cg_text_printf(f, "%s [", cg_dtype_name(t->dtype));
    for (int d = 0; d < t->rank; d++)
        cg_text_printf(f, "%s%" PRId64, d ? "," : "", t->dims[d]);
    fprintf(f, "]");
    if (t->dtype == CG_DTYPE_STRING) {
        fprintf(f, "\n");
        return;
    }
    if (s.finite_count)
        fprintf(f, "  min %.6g  max %.6g  mean %.6g", s.min, s.max, s.mean);
    else
        fprintf(f, "  no finite values");
    fprintf(f, "  nan %" PRId64 "  inf %" PRId64 "\n", s.nan_count, s.inf_count);
}

static bool is_sequence(const cg_value *v)
{
    return v->kind == CG_VALUE_SEQUENCE ||
           (v->kind == CG_VALUE_OPTIONAL && v->optional_is_sequence && v->has_value);
}

void cg_report_run_outputs_text(FILE *f, const cg_named_value *outs, size_t n,
                                char *const *paths)
{
    for (size_t i = 0; i < n; i++) {
        const cg_value *v = outs[i].value;
        if (!v)
            continue;
        cg_text_printf(f, "output '%s': ", outs[i].name ? outs[i].name : "");
        if (v->kind == CG_VALUE_OPTIONAL && !v->has_value) {
            fprintf(f, "empty optional\n");
        } else if (is_sequence(v)) {
            fprintf(f, "sequence of %zu\n", v->item_count);
            for (size_t k = 0; k < v->item_count; k++) {
                fprintf(f, "  [%zu] ", k);
                tensor_text(f, &v->items[k]->tensor);
            }
        } else {
            tensor_text(f, &v->tensor);
        }
        if (paths && paths[i])
            cg_text_printf(f, "  -> %s\n", paths[i]);
    }
}

json_t *cg_report_run_outputs_json(const cg_named_value *outs, size_t n, char *const *paths)
{
    json_t *arr = json_array();
    for (size_t i = 0; arr && i < n; i++) {
        const cg_value *v = outs[i].value;
        json_t *o;
        if (!v)
            continue;
        if (v->kind == CG_VALUE_OPTIONAL && !v->has_value) {
            o = json_object();
            cg_json_set(o, "kind", json_string("optional"));
            cg_json_set(o, "has_value", json_false());
        } else if (is_sequence(v)) {
            json_t *items = json_array();
            o = json_object();
            cg_json_set(o, "kind", json_string("sequence"));
            for (size_t k = 0; items && k < v->item_count; k++)
                json_array_append_new(items, tensor_json(&v->items[k]->tensor));
            cg_json_set(o, "items", items);
        } else {
            o = tensor_json(&v->tensor);
        }
        if (!o)
            continue;
        /* the name first, as people read it */
        json_t *named = json_object();
        cg_json_set(named, "name", cg_json_text(outs[i].name ? outs[i].name : ""));
        json_object_update(named, o);
        json_decref(o);
        cg_json_set(named, "file", cg_json_text(paths ? paths[i] : NULL));
        json_array_append_new(arr, named);
    }
    return arr;
}

void cg_report_run_text(FILE *f, const cg_run_view *v)
{
    cg_report_run_outputs_text(f, v->outputs, v->output_count, v->paths);
    if (v->targets)
        cg_text_printf(f, "target path: %s; %zu partition%s%s\n", v->residency, v->partitions,
                       v->partitions == 1 ? "" : "s", v->reduced_precision ? " (fp16 emulated)" : "");
    if (v->repeat)
        fprintf(f, "time: first run %.3f ms (%s); %zu %s runs: median %.3f ms, "
                   "min %.3f, max %.3f\n", v->first_ms,
                v->planned_at_setup ? "memory planned at set-up" : "plans memory", v->repeat,
                v->cold ? "cold-cache" : "warm", v->median_ms, v->warm_ms[0],
                v->warm_ms[v->repeat - 1]);
    else
        fprintf(f, "time %.3f ms\n", v->median_ms);
}

json_t *cg_report_run_json(const cg_run_view *v)
{
    json_t *root = json_object(), *target = NULL, *timing = NULL;
    cg_json_set(root, "outputs", cg_report_run_outputs_json(v->outputs, v->output_count,
                                                            v->paths));
    if (v->targets) {
        target = json_object();
        cg_json_set(target, "targets", cg_json_text(v->targets));
        cg_json_set(target, "residency", cg_json_text(v->residency));
        cg_json_set(target, "reduced_precision", json_boolean(v->reduced_precision));
    }
    cg_json_set(root, "target", target ? target : json_null());
    cg_json_set(root, "time_ms", cg_json_number(v->median_ms));
    if (v->repeat) {
        timing = json_object();
        cg_json_set(timing, "load_ms", cg_json_number(v->load_ms));
        cg_json_set(timing, "init_ms", cg_json_number(v->init_ms));
        cg_json_set(timing, "first_ms", cg_json_number(v->first_ms));
        cg_json_set(timing, "memory_plan",
                    cg_json_text(v->planned_at_setup ? "set-up" : "first run"));
        cg_json_set(timing, "median_ms", cg_json_number(v->median_ms));
        cg_json_set(timing, "min_ms", cg_json_number(v->warm_ms[0]));
        cg_json_set(timing, "max_ms", cg_json_number(v->warm_ms[v->repeat - 1]));
        cg_json_set(timing, "cpu_median_ms", cg_json_number(v->cpu_median_ms));
        cg_json_set(timing, "runs", json_integer((json_int_t)v->repeat));
        cg_json_set(timing, "threads", json_integer(v->threads > 1 ? v->threads : 1));
        cg_json_set(timing, "cold", json_boolean(v->cold));
    }
    cg_json_set(root, "timing", timing ? timing : json_null());
    return root;
}

void cg_run_view_set_path(cg_run_view *v, const cg_target_path *tp, const char *label,
                          char *residency, size_t cap)
{
    const cg_assignment *as = tp ? cg_target_path_assignment(tp) : NULL;
    if (cap)
        residency[0] = '\0';
    if (as)
        cg_assign_residency(as, residency, cap);
    v->targets = tp ? label : NULL;
    v->residency = residency;
    v->partitions = as ? as->partition_count : 0;
    v->reduced_precision = tp && cg_target_path_reduced_precision(tp);
}
