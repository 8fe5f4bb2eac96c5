/*
 * convgate targets: list every target the registry knows (executing targets
 * compiled in, and the capability profiles of the profile directory) with
 * their kind, runtime version, fallback policy, precision and where their
 * rules come from. A profile that fails to validate fails the command with
 * the file and JSON path of the problem.
 */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "convgate/target.h"
#include "target/registry.h"

static void usage(FILE *f)
{
    fputs("usage: convgate targets [--json] [--profiles DIR]\n"
          "  --json           print the targets as JSON (with sources and what each\n"
          "                   profile does not model)\n"
          "  --profiles DIR   read capability profiles from DIR (default: $CONVGATE_PROFILES,\n"
          "                   else the source tree's profiles/)\n",
          f);
}

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
        json_array_append_new(a, json_string(s[i]));
    return a;
}

static json_t *target_json(const cg_target *t)
{
    json_t *o = json_object();
    if (!o)
        return NULL;
    json_object_set_new(o, "name", json_string(t->name));
    json_object_set_new(o, "kind", json_string(kind_name(t)));
    if (cg_profile_runtime(t))
        json_object_set_new(o, "runtime", json_string(cg_profile_runtime(t)));
    json_object_set_new(o, "version", json_string(t->version ? t->version : ""));
    if (t->description)
        json_object_set_new(o, "description", json_string(t->description));
    json_object_set_new(o, "fallback", json_string(fallback_name(t)));
    json_object_set_new(o, "precision",
                        json_string(t->precision == CG_PRECISION_FP32 ? "fp32" : "fp16"));
    json_object_set_new(o, "accumulate", json_string(t->precision == CG_PRECISION_FP32 ||
                                                             t->accumulate_fp32
                                                         ? "fp32"
                                                         : "fp16"));
    json_object_set_new(o, "source", json_string(t->source ? t->source : ""));
    if (cg_profile_path(t))
        json_object_set_new(o, "profile", json_string(cg_profile_path(t)));
    json_t *srcs = json_array();
    for (size_t i = 0; srcs && i < cg_profile_source_count(t); i++) {
        const cg_profile_source *s = cg_profile_source_at(t, i);
        json_t *so = json_object();
        json_object_set_new(so, "repo", json_string(s->repo));
        json_object_set_new(so, "path", json_string(s->path));
        json_object_set_new(so, "revision", json_string(s->revision));
        if (s->note)
            json_object_set_new(so, "note", json_string(s->note));
        json_array_append_new(srcs, so);
    }
    json_object_set_new(o, "sources", srcs);
    json_t *rules = json_object();
    json_object_set_new(rules, "min_nodes", json_integer(t->rules.min_nodes));
    json_object_set_new(rules, "max_partitions", json_integer(t->rules.max_partitions));
    json_object_set_new(rules, "no_single_ops",
                        strings_json(t->rules.no_single_ops, t->rules.no_single_op_count));
    json_object_set_new(rules, "stop_ops", strings_json(t->rules.stop_ops, t->rules.stop_op_count));
    json_object_set_new(o, "partition", rules);
    if (cg_profile_is(t))
        json_object_set_new(o, "op_count", json_integer((json_int_t)cg_profile_op_count(t)));
    json_object_set_new(o, "not_modelled", strings_json(t->not_modelled, t->not_modelled_count));
    return o;
}

int cmd_targets(int argc, char **argv)
{
    const char *dir = NULL;
    bool json = false;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--json")) {
            json = true;
        } else if (!strcmp(argv[i], "--profiles")) {
            if (++i == argc) {
                cli_error("targets", "--profiles needs a directory");
                return CG_EXIT_ERROR;
            }
            dir = argv[i];
        } else if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
            usage(stdout);
            return CG_EXIT_OK;
        } else {
            cli_error("targets", "unknown argument '%s'", argv[i]);
            usage(stderr);
            return CG_EXIT_ERROR;
        }
    }
    cg_error err;
    cg_error_clear(&err);
    cg_target_registry *reg = NULL;
    if (cg_target_registry_load(dir, &reg, &err) != CG_OK) {
        cli_error("targets", "%s", err.msg);
        return CG_EXIT_ERROR;
    }
    int rc = CG_EXIT_OK;
    size_t n = cg_target_registry_count(reg);
    if (json) {
        json_t *arr = json_array();
        for (size_t i = 0; arr && i < n; i++)
            json_array_append_new(arr, target_json(cg_target_registry_at(reg, i)));
        char *text = arr ? json_dumps(arr, JSON_INDENT(2) | JSON_PRESERVE_ORDER) : NULL;
        if (!text) {
            cli_error("targets", "out of memory writing JSON");
            rc = CG_EXIT_ERROR;
        } else {
            puts(text);
        }
        free(text);
        json_decref(arr);
    } else {
        printf("%-19s %-9s %-30s %-8s %-15s %s\n", "NAME", "KIND", "VERSION", "FALLBACK",
               "PRECISION", "SOURCE");
        for (size_t i = 0; i < n; i++) {
            const cg_target *t = cg_target_registry_at(reg, i);
            /* a profile: its file name and first cited repository; --json has all */
            const char *file = cg_profile_path(t);
            const cg_profile_source *s0 = cg_profile_source_at(t, 0);
            if (file && strrchr(file, '/'))
                file = strrchr(file, '/') + 1;
            printf("%-19s %-9s %-30s %-8s %-15s ", t->name, kind_name(t),
                   t->version ? t->version : "", fallback_name(t), precision_name(t));
            if (file && s0)
                printf("%s (%s, +%zu more)\n", file, s0->repo, cg_profile_source_count(t) - 1);
            else
                printf("%s\n", t->source ? t->source : "");
        }
    }
    cg_target_registry_free(reg);
    return rc;
}
