/*
 * convgate assign: where each node of a model would run on the given
 * targets (in priority order), the partitions and boundary crossings that
 * makes, why the rest stays on the CPU, and the placement verdict
 * (src/place, docs/placement.md). With several --dims settings it also
 * shows where placement changes with shape.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "convgate/assign.h"
#include "convgate/model.h"
#include "convgate/profile.h"
#include "target/registry.h"

#define ASSIGN_MAX_TARGETS 16
#define ASSIGN_MAX_DIMS 64
#define ASSIGN_MAX_SETTINGS 16

static void assign_usage(FILE *f)
{
    fputs("Usage: convgate assign MODEL --target T[,T2...] [--dim SYMBOL=VALUE]...\n"
          "                       [--dims S=V[,S=V...]]... [--profiles DIR] [--json]\n"
          "\n"
          "Which nodes each target would take, the partitions and boundary crossings that\n"
          "makes, why the other nodes stay on the CPU, and a placement verdict. Targets are\n"
          "asked in the order given; the CPU takes what none keeps. Shapes come from one\n"
          "reference run on seeded random inputs (symbolic dims from --dim, else 1).\n"
          "\n"
          "Options:\n"
          "  --target T[,T2...]   targets in priority order (repeatable; `convgate targets`\n"
          "                       lists them)\n"
          "  --dim SYMBOL=VALUE   size of a symbolic input dim (repeatable)\n"
          "  --dims S=V[,S=V...]  one shape setting (repeatable): each is assigned on top of\n"
          "                       the --dim values; the report shows the first in full, then\n"
          "                       each setting's residency and the nodes that change owner\n"
          "  --profiles DIR       capability profiles directory (default: $CONVGATE_PROFILES,\n"
          "                       else the source tree's profiles/)\n"
          "  --no-time            skip the one timed reference run behind the time-weighted\n"
          "                       verdict (the verdict then counts nodes only)\n"
          "  --json               the report as JSON\n"
          "  -h, --help           this help\n"
          "\n"
          "Exit status: 0 report printed; 2 usage or input error, or a target without CPU\n"
          "fallback (fallback: fail) would refuse the model at initialization (the report is\n"
          "still printed, the error names the first node it refuses).\n",
          f);
}

typedef struct assign_setting {
    cg_dim_binding dims[ASSIGN_MAX_DIMS];
    size_t dim_count;
    char label[512];
    cg_type_env *types;       /* NULL when the reference run failed */
    char types_error[CG_ERROR_MSG_MAX];
    cg_placement *placement;
} assign_setting;

/* Adds "SYM=VAL" to the bindings, replacing an earlier value of SYM.
 * Prints the error and returns false on a malformed item. */
static bool parse_binding(const char *opt, const char *item, size_t len, cg_dim_binding *dims,
                          size_t *count, char **owned, size_t *owned_count)
{
    const char *eq = memchr(item, '=', len);
    if (!eq || eq == item || eq + 1 == item + len) {
        cli_error("assign", "--%s expects SYMBOL=VALUE, got '%.*s'", opt, (int)len, item);
        return false;
    }
    char value[32];
    size_t vlen = (size_t)(item + len - (eq + 1));
    if (vlen >= sizeof value) {
        cli_error("assign", "--%s %.*s: value too long", opt, (int)len, item);
        return false;
    }
    memcpy(value, eq + 1, vlen);
    value[vlen] = '\0';
    char *end;
    errno = 0;
    long long v = strtoll(value, &end, 10);
    if (errno || *end || v < 1 || v > INT32_MAX) {
        cli_error("assign", "--%s %.*s: the size must be an integer in [1, %d]", opt, (int)len,
                  item, INT32_MAX);
        return false;
    }
    size_t slen = (size_t)(eq - item);
    char *sym = malloc(slen + 1);
    if (!sym) {
        cli_error("assign", "out of memory");
        return false;
    }
    memcpy(sym, item, slen);
    sym[slen] = '\0';
    owned[(*owned_count)++] = sym;
    for (size_t k = 0; k < *count; k++)
        if (strcmp(dims[k].symbol, sym) == 0) {
            dims[k].value = v;
            return true;
        }
    if (*count == ASSIGN_MAX_DIMS) {
        cli_error("assign", "more than %d symbolic dims", ASSIGN_MAX_DIMS);
        return false;
    }
    dims[*count].symbol = sym;
    dims[*count].value = v;
    (*count)++;
    return true;
}

/* Parses a comma-separated binding list into dims. */
static bool parse_bindings(const char *opt, const char *arg, cg_dim_binding *dims, size_t *count,
                           char **owned, size_t *owned_count)
{
    const char *p = arg;
    for (;;) {
        const char *comma = strchr(p, ',');
        size_t len = comma ? (size_t)(comma - p) : strlen(p);
        if (*owned_count == ASSIGN_MAX_DIMS * (ASSIGN_MAX_SETTINGS + 1)) {
            cli_error("assign", "too many --dim/--dims values");
            return false;
        }
        if (!parse_binding(opt, p, len, dims, count, owned, owned_count))
            return false;
        if (!comma)
            return true;
        p = comma + 1;
    }
}

static void setting_label(assign_setting *s)
{
    size_t n = 0;
    s->label[0] = '\0';
    for (size_t k = 0; k < s->dim_count && n < sizeof s->label; k++)
        n += (size_t)snprintf(s->label + n, sizeof s->label - n, "%s%s=%" PRId64, k ? "," : "",
                              s->dims[k].symbol, s->dims[k].value);
    if (!s->dim_count)
        snprintf(s->label, sizeof s->label, "(defaults)");
}

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

static bool owner_changes(const assign_setting *s, size_t count, size_t v)
{
    for (size_t i = 1; i < count; i++)
        if (s[i].placement->main->owner[v] != s[0].placement->main->owner[v])
            return true;
    return false;
}

static void settings_text(const assign_setting *s, size_t count)
{
    const cg_graph *g = s[0].placement->main->graph;
    char label[128];
    printf("Shape settings (%zu; the report above is for the first):\n", count);
    for (size_t i = 0; i < count; i++) {
        const cg_assignment *a = s[i].placement->main;
        printf("  %s: ", s[i].label);
        for (size_t t = 0; t < a->target_count; t++)
            printf("%zu/%zu nodes on %s, ", cg_assign_count_owned(a, (int)t), g->node_count,
                   a->targets[t]->name);
        printf("%zu on CPU; %zu partition%s, %zu crossing%s\n",
               cg_assign_count_owned(a, CG_OWNER_CPU), a->partition_count,
               a->partition_count == 1 ? "" : "s", a->boundary_count,
               a->boundary_count == 1 ? "" : "s");
    }
    size_t changed = 0;
    for (size_t v = 0; v < g->node_count; v++)
        changed += owner_changes(s, count, v);
    printf("Nodes that change owner with shape (%zu):\n", changed);
    if (!changed)
        printf("  none: placement does not depend on these shapes\n");
    for (size_t v = 0; v < g->node_count; v++) {
        if (!owner_changes(s, count, v))
            continue;
        printf("  %s '%s':", g->nodes[v].op_type ? g->nodes[v].op_type : "?",
               cg_assign_node_label(g, v, label, sizeof label));
        for (size_t i = 0; i < count; i++) {
            const cg_assignment *a = s[i].placement->main;
            const char *why = a->owner[v] == CG_OWNER_CPU ? cpu_reason(a, v) : NULL;
            printf("%s %s: %s%s%s%s", i ? ";" : "", s[i].label, owner_name(a, v),
                   why ? " (" : "", why ? why : "", why ? ")" : "");
        }
        putchar('\n');
    }
}

static bool settings_json(json_t *root, const assign_setting *s, size_t count)
{
    const cg_graph *g = s[0].placement->main->graph;
    char label[128];
    json_t *arr = json_array(), *changes = NULL;
    if (!arr || json_object_set_new(root, "shape_settings", arr) != 0)
        return false;
    for (size_t i = 0; i < count; i++) {
        const cg_assignment *a = s[i].placement->main;
        json_t *o = json_object(), *dims = json_object(), *per = json_object();
        if (!o || json_array_append_new(arr, o) != 0 || !dims ||
            json_object_set_new(o, "dims", dims) != 0 || !per ||
            json_object_set_new(o, "nodes_per_target", per) != 0)
            return false;
        for (size_t k = 0; k < s[i].dim_count; k++)
            json_object_set_new(dims, s[i].dims[k].symbol,
                                json_integer((json_int_t)s[i].dims[k].value));
        for (size_t t = 0; t < a->target_count; t++)
            json_object_set_new(per, a->targets[t]->name,
                                json_integer((json_int_t)cg_assign_count_owned(a, (int)t)));
        char text[1024];
        cg_verdict_kind kind = cg_assign_verdict(a, s[i].types, text, sizeof text);
        json_object_set_new(o, "label", json_string(s[i].label));
        json_object_set_new(o, "nodes_on_cpu",
                            json_integer((json_int_t)cg_assign_count_owned(a, CG_OWNER_CPU)));
        json_object_set_new(o, "partitions", json_integer((json_int_t)a->partition_count));
        json_object_set_new(o, "boundaries", json_integer((json_int_t)a->boundary_count));
        json_object_set_new(o, "verdict", json_string(cg_verdict_kind_name(kind)));
    }
    changes = json_array();
    if (!changes || json_object_set_new(root, "owner_changes", changes) != 0)
        return false;
    for (size_t v = 0; v < g->node_count; v++) {
        if (!owner_changes(s, count, v))
            continue;
        json_t *o = json_object(), *owners = json_array();
        if (!o || json_array_append_new(changes, o) != 0 || !owners ||
            json_object_set_new(o, "owners", owners) != 0)
            return false;
        json_object_set_new(o, "node",
                            json_string(cg_assign_node_label(g, v, label, sizeof label)));
        json_object_set_new(o, "op_type",
                            json_string(g->nodes[v].op_type ? g->nodes[v].op_type : "?"));
        for (size_t i = 0; i < count; i++) {
            const cg_assignment *a = s[i].placement->main;
            const char *why = a->owner[v] == CG_OWNER_CPU ? cpu_reason(a, v) : NULL;
            json_t *w = json_object();
            if (!w || json_array_append_new(owners, w) != 0)
                return false;
            json_object_set_new(w, "setting", json_string(s[i].label));
            json_object_set_new(w, "owner", json_string(a->owner[v] == CG_OWNER_CPU
                                                            ? "cpu"
                                                            : a->targets[a->owner[v]]->name));
            json_object_set_new(w, "reason", why ? json_string(why) : json_null());
        }
    }
    return true;
}

/* The time-weighted estimate of a setting's main-graph placement: one
 * reference run with per-node timing on the setting's input shapes, time on
 * target and crossings from the default assumptions (src/cost/profile.c).
 * On failure warns and returns false: the verdict then counts nodes. */
static bool time_verdict(const cg_model *model, const assign_setting *s, const char *path,
                         cg_cost_estimate *out)
{
    cg_named_value *feeds = NULL;
    size_t feed_count = 0;
    cg_reference_profile ref;
    cg_error err;
    cg_error_clear(&err);
    memset(&ref, 0, sizeof ref);
    bool ok = cg_profile_feeds_make(model, s->types, 0, &feeds, &feed_count, &err) == CG_OK &&
              cg_profile_reference(model, feeds, feed_count, 1, false, &ref, &err) == CG_OK;
    if (ok) {
        cg_cost_inputs in = {s->placement->main, ref.node_ms, ref.overhead_ms, NULL, NULL, NULL,
                             NULL};
        ok = cg_cost_estimate_build(&in, out, &err) == CG_OK;
    }
    if (!ok)
        cli_error("assign", "warning: %s: no time-weighted verdict (the verdict counts nodes): "
                  "%s", path, err.msg);
    cg_reference_profile_clear(&ref);
    cg_profile_feeds_free(feeds, feed_count);
    return ok;
}

int cmd_assign(int argc, char **argv)
{
    static const struct option longopts[] = {{"target", required_argument, NULL, 't'},
                                              {"dim", required_argument, NULL, 'd'},
                                              {"dims", required_argument, NULL, 'D'},
                                              {"profiles", required_argument, NULL, 'p'},
                                              {"json", no_argument, NULL, 'j'},
                                              {"no-time", no_argument, NULL, 'T'},
                                              {"help", no_argument, NULL, 'h'},
                                              {NULL, 0, NULL, 0}};
    const char *target_args[ASSIGN_MAX_TARGETS];
    const char *dims_args[ASSIGN_MAX_SETTINGS];
    size_t target_arg_count = 0, dims_arg_count = 0, owned_count = 0, setting_count = 0;
    cg_dim_binding base[ASSIGN_MAX_DIMS];
    size_t base_count = 0;
    char *owned[ASSIGN_MAX_DIMS * (ASSIGN_MAX_SETTINGS + 1)];
    const char *profiles = NULL;
    bool json = false, timed = true;
    int rc = CG_EXIT_ERROR, c;
    cg_cost_estimate estimate;
    cg_model *model = NULL;
    cg_target_registry *reg = NULL;
    const cg_target *targets[ASSIGN_MAX_TARGETS];
    size_t target_count = 0;
    assign_setting *settings = NULL;
    char *target_list = NULL;
    cg_error err;
    cg_error_clear(&err);

    optind = 1;
    while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
        switch (c) {
        case 't':
            if (target_arg_count == ASSIGN_MAX_TARGETS) {
                cli_error("assign", "too many --target options");
                goto done;
            }
            target_args[target_arg_count++] = optarg;
            break;
        case 'd':
            if (!parse_bindings("dim", optarg, base, &base_count, owned, &owned_count))
                goto done;
            break;
        case 'D':
            if (dims_arg_count == ASSIGN_MAX_SETTINGS) {
                cli_error("assign", "more than %d --dims settings", ASSIGN_MAX_SETTINGS);
                goto done;
            }
            dims_args[dims_arg_count++] = optarg;
            break;
        case 'p': profiles = optarg; break;
        case 'j': json = true; break;
        case 'T': timed = false; break;
        case 'h': assign_usage(stdout); rc = CG_EXIT_OK; goto done;
        default: assign_usage(stderr); goto done;
        }
    }
    if (optind + 1 != argc) {
        cli_error("assign", optind >= argc ? "no model given" : "one model at a time");
        assign_usage(stderr);
        goto done;
    }
    if (!target_arg_count) {
        cli_error("assign", "--target is required (`convgate targets` lists them)");
        goto done;
    }

    /* the shape settings: --dim values, each --dims on top of them */
    setting_count = dims_arg_count ? dims_arg_count : 1;
    settings = calloc(setting_count, sizeof *settings);
    if (!settings) {
        cli_error("assign", "out of memory");
        goto done;
    }
    for (size_t i = 0; i < setting_count; i++) {
        assign_setting *s = &settings[i];
        memcpy(s->dims, base, base_count * sizeof *base);
        s->dim_count = base_count;
        if (dims_arg_count &&
            !parse_bindings("dims", dims_args[i], s->dims, &s->dim_count, owned, &owned_count))
            goto done;
        setting_label(s);
    }

    if ((model = cli_load_model("assign", argv[optind], NULL)) == NULL)
        goto done;
    if (cg_target_registry_load(profiles, &reg, &err) != CG_OK) {
        cli_error("assign", "%s", err.msg);
        goto done;
    }
    for (size_t i = 0; i < target_arg_count; i++) {
        free(target_list);
        target_list = malloc(strlen(target_args[i]) + 1);
        if (!target_list) {
            cli_error("assign", "out of memory");
            goto done;
        }
        strcpy(target_list, target_args[i]);
        for (char *tok = target_list, *next; tok; tok = next) {
            next = strchr(tok, ',');
            if (next)
                *next++ = '\0';
            if (!*tok) {
                cli_error("assign", "--target %s: empty target name", target_args[i]);
                goto done;
            }
            const cg_target *t = cg_target_registry_find(reg, tok, &err);
            if (!t) {
                cli_error("assign", "%s", err.msg[0] ? err.msg : "unknown target");
                goto done;
            }
            for (size_t k = 0; k < target_count; k++)
                if (targets[k] == t) {
                    cli_error("assign", "target '%s' given twice", tok);
                    goto done;
                }
            if (target_count == ASSIGN_MAX_TARGETS) {
                cli_error("assign", "more than %d targets", ASSIGN_MAX_TARGETS);
                goto done;
            }
            targets[target_count++] = t;
        }
    }

    for (size_t i = 0; i < setting_count; i++) {
        assign_setting *s = &settings[i];
        if (cg_type_env_build(model, s->dims, s->dim_count, &s->types, &err) != CG_OK) {
            if (err.status == CG_NOMEM) {
                cli_error("assign", "%s", err.msg);
                goto done;
            }
            /* placement is still worth reporting: rules that need a type then
             * refuse the node and say the type is unknown */
            snprintf(s->types_error, sizeof s->types_error, "%s", err.msg);
            cli_error("assign",
                      "warning: %s: no tensor types for %s, assigning without them (rules "
                      "that need a type refuse the node): %s",
                      argv[optind], s->label, err.msg);
            cg_error_clear(&err);
        }
        if (cg_placement_build(model, s->types, targets, target_count, &s->placement, &err) !=
            CG_OK) {
            cli_error("assign", "%s: %s", argv[optind], err.msg);
            goto done;
        }
        if (!s->types)
            s->placement->types_error = s->types_error;
    }

    if (timed && settings[0].types &&
        time_verdict(model, &settings[0], argv[optind], &estimate))
        settings[0].placement->time = &estimate;

    if (json) {
        json_t *root = cg_assign_report_json(settings[0].placement);
        bool ok = root != NULL;
        if (ok) {
            json_object_set_new(root, "model", json_string(argv[optind]));
            json_object_set_new(root, "setting", json_string(settings[0].label));
            if (setting_count > 1)
                ok = settings_json(root, settings, setting_count);
        }
        char *text = ok ? json_dumps(root, JSON_INDENT(2) | JSON_PRESERVE_ORDER) : NULL;
        json_decref(root);
        if (!text || puts(text) < 0) {
            free(text);
            cli_error("assign", "could not write the JSON report");
            goto done;
        }
        free(text);
    } else {
        cg_assign_report_text(stdout, settings[0].placement);
        if (setting_count > 1)
            settings_text(settings, setting_count);
    }
    fflush(stdout);

    char why[1024];
    rc = CG_EXIT_OK;
    for (size_t i = 0; i < setting_count; i++)
        if (cg_assign_init_failure(settings[i].placement->main, settings[i].types, why,
                                   sizeof why)) {
            if (setting_count > 1)
                cli_error("assign", "%s (%s)", why, settings[i].label);
            else
                cli_error("assign", "%s", why);
            rc = CG_EXIT_ERROR;
            break;
        }
done:
    if (settings)
        for (size_t i = 0; i < setting_count; i++) {
            cg_placement_free(settings[i].placement);
            cg_type_env_free(settings[i].types);
        }
    free(settings);
    free(target_list);
    for (size_t i = 0; i < owned_count; i++)
        free(owned[i]);
    cg_target_registry_free(reg);
    cg_model_free(model);
    return rc;
}
