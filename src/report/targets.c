/*
 * Renderings of the target list (`convgate targets`): one line per target
 * (kind, runtime version, fallback policy, precision, where its rules come
 * from) and the full JSON with sources and what each profile leaves out.
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "report/report.h"
#include "target/registry.h"
#include "core/text.h"

static const char *kind_name(const cg_target *t)
{
    return t->kind == CG_TARGET_EXECUTING ? "executing" : "profiled";
}

static const char *fallback_name(const cg_target *t)
{
    return t->fallback == CG_FALLBACK_CPU ? "cpu" : "fail";
}

static const char *precision_name(const cg_target *t)
{
    if (t->precision == CG_PRECISION_FP32)
        return "fp32";
    return t->accumulate_fp32 ? "fp16 (acc fp32)" : "fp16";
}

static json_t *strings_json(const char *const *s, size_t n)
{
    json_t *a = json_array();
    for (size_t i = 0; a && i < n; i++)
        json_array_append_new(a, cg_json_text(s[i]));
    return a;
}

json_t *cg_report_target_json(const cg_target *t)
{
    json_t *o = json_object();
    if (!o)
        return NULL;
    cg_json_set(o, "name", cg_json_text(t->name));
    cg_json_set(o, "kind", cg_json_text(kind_name(t)));
    if (cg_profile_runtime(t))
        cg_json_set(o, "runtime", cg_json_text(cg_profile_runtime(t)));
    cg_json_set(o, "version", cg_json_text(t->version ? t->version : ""));
    if (t->description)
        cg_json_set(o, "description", cg_json_text(t->description));
    cg_json_set(o, "fallback", cg_json_text(fallback_name(t)));
    cg_json_set(o, "precision",
                        cg_json_text(t->precision == CG_PRECISION_FP32 ? "fp32" : "fp16"));
    cg_json_set(o, "accumulate", cg_json_text(t->precision == CG_PRECISION_FP32 ||
                                                             t->accumulate_fp32
                                                         ? "fp32"
                                                         : "fp16"));
    cg_json_set(o, "layout", cg_json_text(t->layout == CG_LAYOUT_NHWC ? "nhwc" : "nchw"));
    if (t->crossing_stated) {
        json_t *c = json_object();
        cg_json_set(c, "fixed_us", cg_json_number(t->crossing_fixed_us));
        cg_json_set(c, "bandwidth_gbps", cg_json_number(t->crossing_gbps));
        cg_json_set(o, "crossing", c);
    }
    cg_json_set(o, "source", cg_json_text(t->source ? t->source : ""));
    if (cg_profile_path(t))
        cg_json_set(o, "profile", cg_json_text(cg_profile_path(t)));
    json_t *srcs = json_array();
    for (size_t i = 0; srcs && i < cg_profile_source_count(t); i++) {
        const cg_profile_source *s = cg_profile_source_at(t, i);
        json_t *so = json_object();
        cg_json_set(so, "repo", cg_json_text(s->repo));
        cg_json_set(so, "path", cg_json_text(s->path));
        cg_json_set(so, "revision", cg_json_text(s->revision));
        if (s->note)
            cg_json_set(so, "note", cg_json_text(s->note));
        json_array_append_new(srcs, so);
    }
    cg_json_set(o, "sources", srcs);
    json_t *rules = json_object();
    cg_json_set(rules, "min_nodes", json_integer(t->rules.min_nodes));
    cg_json_set(rules, "max_partitions", json_integer(t->rules.max_partitions));
    cg_json_set(rules, "no_single_ops",
                        strings_json(t->rules.no_single_ops, t->rules.no_single_op_count));
    cg_json_set(rules, "stop_ops", strings_json(t->rules.stop_ops, t->rules.stop_op_count));
    cg_json_set(o, "partition", rules);
    if (cg_profile_is(t))
        cg_json_set(o, "op_count", json_integer((json_int_t)cg_profile_op_count(t)));
    cg_json_set(o, "not_modelled", strings_json(t->not_modelled, t->not_modelled_count));
    cg_json_set(o, "preprocess", cg_json_text(t->lowering ? t->lowering : "none"));
    if (cg_profile_param_count(t)) {
        json_t *params = json_object();
        for (size_t k = 0; params && k < cg_profile_param_count(t); k++) {
            cg_profile_param_info in;
            if (!cg_profile_param(t, k, &in))
                continue;
            json_t *po = json_object();
            cg_json_set(po, "default", json_integer((json_int_t)in.dflt));
            cg_json_set(po, "min", json_integer((json_int_t)in.min));
            cg_json_set(po, "max", json_integer((json_int_t)in.max));
            if (in.note)
                cg_json_set(po, "note", cg_json_text(in.note));
            cg_json_set(params, in.name, po);
        }
        cg_json_set(o, "parameters", params);
    }
    return o;
}

void cg_report_targets_text(FILE *f, const cg_target_registry *reg)
{
    size_t n = cg_target_registry_count(reg);
    cg_text_printf(f, "%-19s %-9s %-30s %-8s %-15s %s\n", "NAME", "KIND", "VERSION", "FALLBACK",
                   "PRECISION", "SOURCE");
    for (size_t i = 0; i < n; i++) {
        const cg_target *t = cg_target_registry_at(reg, i);
        /* a profile: its file name and first cited repository; --json has all */
        const char *file = cg_profile_path(t);
        const cg_profile_source *s0 = cg_profile_source_at(t, 0);
        if (file && strrchr(file, '/'))
            file = strrchr(file, '/') + 1;
        cg_text_printf(f, "%-19s %-9s %-30s %-8s %-15s ", t->name, kind_name(t),
                       t->version ? t->version : "", fallback_name(t), precision_name(t));
        if (file && s0)
            cg_text_printf(f, "%s (%s, +%zu more)\n", file, s0->repo,
                           cg_profile_source_count(t) - 1);
        else
            cg_text_printf(f, "%s\n", t->source ? t->source : "");
        if (t->lowering)
            cg_text_printf(f, "%-19s graph partitioned: preprocess '%s'\n", "", t->lowering);
        for (size_t k = 0; k < cg_profile_param_count(t); k++) {
            cg_profile_param_info in;
            if (cg_profile_param(t, k, &in))
                cg_text_printf(f, "%-19s parameter %s=%" PRId64 " (default; %" PRId64 "..%" PRId64
                               "): --target %s@VALUE\n", "", in.name, in.dflt, in.min, in.max,
                               t->name);
        }
    }
}

json_t *cg_report_targets_json(const cg_target_registry *reg)
{
    json_t *arr = json_array();
    for (size_t i = 0; arr && i < cg_target_registry_count(reg); i++)
        json_array_append_new(arr, cg_report_target_json(cg_target_registry_at(reg, i)));
    return arr;
}
