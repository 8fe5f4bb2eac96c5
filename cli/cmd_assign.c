/*
 * convgate assign: where each node of a model would run on the given
 * targets (in priority order), the partitions and boundary crossings that
 * makes, why the rest stays on the CPU, and the placement verdict
 * (src/place, docs/placement.md). With several --dims settings it also
 * shows where placement changes with shape.
 */
#include <getopt.h>
#include <inttypes.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "convgate/assign.h"
#include "convgate/lower.h"
#include "convgate/model.h"
#include "convgate/profile.h"
#include "convgate/tflite.h"
#include "core/text.h"
#include "report/report.h"

#define ASSIGN_MAX_SETTINGS 16
#define ASSIGN_MAX_KEYS 16
#define ASSIGN_MAX_ASSUMED (CG_WHAT_IF_MAX_ASSUMED - 1)

static void assign_usage(FILE *f)
{
    fputs("Usage: convgate assign MODEL --target T[,T2...] [--dim SYMBOL=VALUE]...\n"
          "                       [--dims S=V[,S=V...]]... [--inputs DIR] [--seed S]\n"
          "                       [--accept-default-dims]\n"
          "                       [--range [NAME=]LO,HI]...\n"
          "                       [--profiles DIR] [--json] [--html FILE]\n"
          "                       [--model-explorer DIR] [--assume-supported OP[,OP...]]\n"
          "\n"
          "Which nodes each target would take, the partitions and boundary crossings that\n"
          "makes, why the other nodes stay on the CPU, and a placement verdict. Targets are\n"
          "asked in the order given; the CPU takes what none keeps. Shapes come from one\n"
          "reference run on random inputs (symbolic dims from --dim, else 1), or on the\n"
          "first sample of --inputs DIR. Where the model fails on those inputs nothing is\n"
          "placed: the residency is reported unknown, with the reason (exit 2).\n"
          "\n"
          "Options:\n"
          "  --target T[,T2...]   targets in priority order (repeatable; `convgate targets`\n"
          "                       lists them)\n"
          CLI_HELP_INPUT_OPTIONS
          "  --inputs DIR         place the model at the shapes of, and typed by a run on,\n"
          "                       the first sample of an input folder (gate --help)\n"
          "  --accept-default-dims  input dims the model gives no size for (a sequence\n"
          "                       length, an unnamed dim) take 1; without it assign refuses\n"
          "                       to guess and names the dim (a leading dim named as a\n"
          "                       batch takes 1 anyway). The sizes used are stated (Dims:)\n"
          "  --dims S=V[,S=V...]  one shape setting (repeatable): each is assigned on top of\n"
          "                       the --dim values; the report shows the first in full, then\n"
          "                       each setting's residency and the nodes that change owner\n"
          "  --profiles DIR       capability profiles directory (default: $CONVGATE_PROFILES,\n"
          "                       else the source tree's profiles/)\n"
          "  --assume-supported OP[,OP...]  what-if: place as if every target took the nodes\n"
          "                       of these op types (repeatable; \"Op\" in any domain, or\n"
          "                       \"domain:Op\", e.g. tflite:MEAN for a LiteRT target's\n"
          "                       graph). Without it, assign still ranks each refused op\n"
          "                       by what supporting it would gain (nodes moved,\n"
          "                       partitions, estimated ms saved)\n"
          "  --no-time            skip the one timed reference run behind the time-weighted\n"
          "                       verdict (the verdict then counts nodes only)\n"
          "  --json               the report as JSON (docs/json.md)\n"
          CLI_HELP_VIEWS
          "  -h, --help           this help\n"
          "\n"
          "Exit status: 0 report printed; 2 usage or input error, or a target without CPU\n"
          "fallback (fallback: fail) would refuse the model at initialization (the report is\n"
          "still printed, the error names the first node it refuses).\n",
          f);
    fputs("\n" CLI_LIMITS_HELP, f);
}

/* One --dims setting: the --dim values with the setting's on top. */
typedef struct assign_setting {
    cg_dim_binding dims[CLI_MAX_DIMS];
    size_t dim_count;
    char label[512];
    cg_type_env *types; /* NULL when the reference run failed */
    char types_error[CG_ERROR_MSG_MAX];
    cg_placement *placement;
    /* --shape keys ("input[1]") of the unnamed dims bound to their default */
    char keys[ASSIGN_MAX_KEYS][288];
    size_t key_count;
} assign_setting;

/* Types and placement of one setting, typed by a reference run on `fed`
 * (the --inputs sample) or on random inputs (a lowering that declares its
 * types still runs the source on them). Where the model fails on them
 * nothing is placed (s->types and s->placement stay NULL, s->types_error
 * says why): the residency is unknown, not "0/N nodes". */
static bool place_setting(const char *path, const cg_lowered *lowered, const cli_inputs *in,
                          const cli_targets *tg, const cg_sample *fed, assign_setting *s)
{
    const cg_model *model = lowered->model;
    cg_error err;
    cg_error_clear(&err);
    if (cg_lowered_types_fed(lowered, s->dims, s->dim_count, &in->random,
                             fed ? fed->inputs : NULL, fed ? fed->input_count : 0, &s->types,
                             &err) != CG_OK) {
        if (err.status == CG_NOMEM) {
            cli_error("assign", "%s", err.msg);
            return false;
        }
        snprintf(s->types_error, sizeof s->types_error, "%s", err.msg);
        return true;
    }
    if (cg_placement_build(model, s->types, tg->list, tg->count, &s->placement, &err) != CG_OK) {
        cli_error("assign", "%s: %s", path, err.msg);
        return false;
    }
    return true;
}

/* --- what-if -------------------------------------------------------------------------- */

typedef struct assign_assumed {
    char *ops[ASSIGN_MAX_ASSUMED];
    size_t count;
} assign_assumed;

static bool assumed_add(assign_assumed *a, const char *arg)
{
    cg_error err;
    cg_error_clear(&err);
    if (cg_op_keys_parse(arg, a->ops, &a->count, ASSIGN_MAX_ASSUMED, &err) != CG_OK) {
        cli_error("assign", "--assume-supported %s", err.msg);
        return false;
    }
    return true;
}

static void assumed_free(assign_assumed *a)
{
    for (size_t i = 0; i < a->count; i++)
        free(a->ops[i]);
    a->count = 0;
}

/* Wrapped targets: tg->list's entries replaced by what-if targets taking
 * ops[0..n) (the originals stay owned by the registry). */
/* A .tflite is placed on its own operators, as LiteRT's delegates see them
 * (cg_tflite_op_model), typed from the file: the static shapes it stores,
 * its constant tensors (no reference run: the ops are TFLite's). */
static int assign_tflite(const char *path, const cli_targets *tg, cli_views *views,
                         const assign_assumed *assumed)
{
    int rc = CG_EXIT_ERROR;
    cg_target *wrapped[CLI_MAX_TARGETS];
    size_t wrapped_count = 0, skipped = 0;
    cg_what_if_gain gains[CG_WHAT_IF_MAX_RANKED];
    size_t gain_count = 0;
    const cg_target *const *list = tg->list;
    cg_tflite_model *tfl = NULL;
    cg_model *model = NULL;
    cg_type_env *types = NULL;
    cg_placement *placement = NULL;
    json_t *root = NULL;
    cg_error err;
    cg_error_clear(&err);
    if (assumed->count) {
        if (cg_targets_assume_supported(tg->list, tg->count, (const char *const *)assumed->ops,
                                        assumed->count, wrapped, &err) != CG_OK) {
            cli_error("assign", "%s", err.msg);
            goto done;
        }
        wrapped_count = tg->count;
        list = (const cg_target *const *)wrapped;
    }
    if (cg_tflite_load(path, NULL, &tfl, &err) != CG_OK ||
        cg_placement_build_tflite(tfl, list, tg->count, &model, &types, &placement, &err) !=
            CG_OK) {
        cli_error("assign", "%s", err.msg);
        goto done;
    }
    gain_count = cg_what_if_rank(placement, tg->list, tg->count,
                                 (const char *const *)assumed->ops, assumed->count, NULL, gains,
                                 CG_WHAT_IF_MAX_RANKED, &skipped);
    char why[1024];
    rc = CG_EXIT_OK;
    if (cg_assign_init_failure(placement->main, types, why, sizeof why)) {
        cli_error("assign", "%s", why);
        rc = CG_EXIT_ERROR;
    }
    if (cli_json_on() || cli_views_wanted(views)) {
        if ((root = cg_assign_report_json(placement))) {
            cg_json_set(root, "model", cg_json_text(path));
            if (!cg_what_if_json(root, gains, gain_count, (const char *const *)assumed->ops,
                                 assumed->count)) {
                json_decref(root);
                root = NULL;
            }
        }
    }
    if (cli_views_wanted(views)) {
        cg_graph_view gv = {model, placement->main, NULL, NULL, NULL, 0, list, tg->count,
                            NULL, NULL};
        char title[4300];
        snprintf(title, sizeof title, "convgate assign %s --target %s", path, tg->label);
        rc = cli_views_write("assign", views, rc, root, title, &gv);
    }
    if (cli_json_on()) {
        rc = cli_json_emit(rc, root);
        root = NULL;
    } else {
        cg_what_if_assumed_text(stdout, (const char *const *)assumed->ops, assumed->count);
        cg_assign_report_text(stdout, placement);
        cg_what_if_text(stdout, gains, gain_count, skipped, "TFLite ops");
    }
    fflush(stdout);
done:
    json_decref(root);
    cg_placement_free(placement);
    cg_targets_assumed_free(wrapped, wrapped_count);
    cg_type_env_free(types);
    cg_model_free(model);
    cg_tflite_free(tfl);
    return rc;
}

int cmd_assign(int argc, char **argv)
{
    static const struct option longopts[] = {CLI_OPTS_TARGETS,
                                              CLI_OPTS_INPUTS,
                                              {"dims", required_argument, NULL, 'D'},
                                              {"inputs", required_argument, NULL, 'i'},
                                              {"accept-default-dims", no_argument, NULL, 'A'},
                                              {"no-time", no_argument, NULL, 'T'},
                                              {"assume-supported", required_argument, NULL,
                                               'S'},
                                              CLI_OPTS_VIEWS,
                                              CLI_OPTS_END};
    const char *dims_args[ASSIGN_MAX_SETTINGS];
    size_t dims_arg_count = 0, setting_count = 0;
    const char *inputs = NULL;
    cg_sample_set samples = {0};
    const cg_sample *fed = NULL;
    bool accept_defaults = false;
    cg_dim_use uses[CLI_MAX_DIMS], uses0[CLI_MAX_DIMS];
    size_t use_count = 0;
    char dims_text[1024] = "";
    bool timed = true;
    int rc = CG_EXIT_ERROR, c;
    cli_inputs in;
    cli_targets tg;
    cg_cost_estimate estimate;
    cg_reference_profile ref;
    cli_views views = {0};
    cg_model *model = NULL;
    cg_lowered *lowered = NULL;
    assign_setting *settings = NULL;
    assign_assumed assumed = {0};
    cg_target *wrapped[CLI_MAX_TARGETS];
    size_t wrapped_count = 0, skipped = 0;
    const cg_target *base[CLI_MAX_TARGETS];
    cg_what_if_gain gains[CG_WHAT_IF_MAX_RANKED];
    size_t gain_count = 0;
    cg_error err;
    cg_error_clear(&err);
    memset(&tg, 0, sizeof tg);
    memset(&ref, 0, sizeof ref);
    cli_inputs_init(&in);

    bool started = false;
    while ((c = cli_next_option("assign", argc, argv, "h", longopts, &started,
                                &in, &tg, NULL)) != -1) {
        switch (c) {
        case 'D':
            if (dims_arg_count == ASSIGN_MAX_SETTINGS) {
                cli_error("assign", "more than %d --dims settings", ASSIGN_MAX_SETTINGS);
                goto done;
            }
            dims_args[dims_arg_count++] = optarg;
            break;
        case 'T': timed = false; break;
        case 'S':
            if (!assumed_add(&assumed, optarg))
                goto done;
            break;
        case 'i': inputs = optarg; break;
        case 'A': accept_defaults = true; break;
        case CLI_OPT_HTML:
        case CLI_OPT_MODEL_EXPLORER:
            if (cli_views_option("assign", &views, c, optarg) < 0)
                goto done;
            break;
        case 'h': assign_usage(stdout); rc = CG_EXIT_OK; goto done;
        default: goto done;
        }
    }
    const char *path = cli_model_arg("assign", argc, argv, assign_usage);
    if (!path)
        goto done;
    if (!cli_targets_required("assign", &tg))
        goto done;
    if (cg_tflite_detect_path(path)) {
        if (in.dim_count || dims_arg_count || inputs) {
            cli_error("assign", "%s: a .tflite is placed with the static shapes it stores; "
                      "--dim, --dims and --inputs do not apply", path);
            goto done;
        }
        if (cli_targets_resolve("assign", &tg))
            rc = assign_tflite(path, &tg, &views, &assumed);
        goto done;
    }
    /* the shape settings: --dim values, each --dims on top of them */
    setting_count = dims_arg_count ? dims_arg_count : 1;
    if (!(settings = calloc(setting_count, sizeof *settings))) {
        cli_error("assign", "out of memory");
        goto done;
    }
    if (inputs && dims_arg_count) {
        cli_error("assign", "--inputs fixes the shapes; --dims settings are shapes of random "
                  "inputs: give one");
        goto done;
    }
    if (!(model = cli_model_for("assign", path, &in, &tg)))
        goto done;
    /* the what-if targets take the registry's place in tg.list (base keeps
     * the real ones for the ranking) */
    memcpy(base, tg.list, tg.count * sizeof *base);
    if (assumed.count) {
        if (cg_targets_assume_supported(base, tg.count, (const char *const *)assumed.ops,
                                        assumed.count, wrapped, &err) != CG_OK) {
            cli_error("assign", "%s", err.msg);
            goto done;
        }
        wrapped_count = tg.count;
        memcpy(tg.list, wrapped, tg.count * sizeof *tg.list);
    }
    if (inputs) {
        /* placed on the first sample of the folder, as gate 2 places it */
        char desc[4200];
        if (!cli_samples_load("assign", model, path, NULL, inputs, 0, 1, &in, &samples, desc,
                              sizeof desc))
            goto done;
        fed = &samples.samples[0];
    }
    for (size_t i = 0; i < setting_count; i++) {
        assign_setting *s = &settings[i];
        cg_dim_binding extra[CLI_MAX_DIMS];
        size_t extra_count = 0;
        if (fed) {
            s->dim_count = cg_sample_dims(model, in.dims, in.dim_count, fed, s->dims,
                                          CLI_MAX_DIMS);
        } else {
            memcpy(s->dims, in.dims, in.dim_count * sizeof *in.dims);
            s->dim_count = in.dim_count;
        }
        if (dims_arg_count &&
            !cli_parse_dims("assign", "dims", dims_args[i], extra, &extra_count, CLI_MAX_DIMS))
            goto done;
        /* the setting's values replace the --dim ones */
        cg_status st = cg_samples_dims_overlay(model, s->dims, &s->dim_count, CLI_MAX_DIMS,
                                               extra, extra_count, &err);
        for (size_t k = 0; k < extra_count; k++)
            free((char *)extra[k].symbol);
        if (st != CG_OK) {
            cli_error("assign", "%s", err.msg);
            goto done;
        }
        cg_samples_dims_label(s->dims, s->dim_count, s->label, sizeof s->label);
        /* the sizes of the dynamic dims: stated, and never guessed unless
         * the user accepts it (as gate: convgate/samples.h) */
        size_t n = fed ? cg_samples_dim_uses(model, in.dims, in.dim_count, fed, uses,
                                             CLI_MAX_DIMS)
                       : cg_samples_dim_uses(model, s->dims, s->dim_count, NULL, uses,
                                             CLI_MAX_DIMS);
        n = n < CLI_MAX_DIMS ? n : CLI_MAX_DIMS;
        if (!accept_defaults && cg_samples_refuse_guessed_dims(uses, n, &err) != CG_OK) {
            cli_error("assign", "%s: %s", path, err.msg);
            goto done;
        }
        /* a default the report states is a size bound, as gate binds it
         * (fixed, as a deployment fixes it: not left dynamic) */
        s->key_count = cg_samples_bind_defaults(uses, n, s->dims, &s->dim_count, CLI_MAX_DIMS,
                                                s->keys[0], sizeof s->keys[0], ASSIGN_MAX_KEYS);
        if (i == 0) {
            use_count = n;
            memcpy(uses0, uses, n * sizeof *uses);
            cg_samples_dim_uses_text(uses, n, dims_text, sizeof dims_text);
        }
        if (i == 0) {
            /* the graph the targets partition (a profile's "preprocess"),
             * shaped by a run on the --inputs sample when given */
            if (cg_lower_for_targets_fed(model, tg.list, tg.count, s->dims, s->dim_count,
                                         fed ? fed->inputs : NULL, fed ? fed->input_count : 0,
                                         &lowered, &err) != CG_OK) {
                cli_error("assign", "%s: %s", path, err.msg);
                goto done;
            }
        }
        if (!place_setting(path, lowered, &in, &tg, fed, s))
            goto done;
        if (!s->placement) {
            /* the model fails on these inputs: nothing to place */
            char inputs_text[4300];
            snprintf(inputs_text, sizeof inputs_text, "%s%s%s", fed ? "sample '" : "",
                     fed ? fed->label : "random inputs", fed ? "'" : "");
            cli_error("assign", "%s: residency unknown: the model fails on %s (dims: %s)%s",
                      path, inputs_text, s->label,
                      fed ? "" : "; give inputs it runs on with --inputs DIR");
            if (cli_json_on()) {
                json_t *root = cg_report_assign_unknown_json(inputs_text, s->label,
                                                             s->types_error);
                if (root)
                    cg_json_set(root, "model", cg_json_text(path));
                cli_json_emit(CG_EXIT_ERROR, root);
            } else {
                cg_report_assign_unknown_text(stdout, inputs_text, s->label, s->types_error);
            }
            goto done;
        }
        s->placement->lowered = lowered;
    }
    if (timed && settings[0].types) {
        cg_status st = cg_profile_quick_estimate_placed(
            lowered, settings[0].types, settings[0].dims, settings[0].dim_count, &in.random,
            fed ? fed->inputs : NULL, fed ? fed->input_count : 0, settings[0].placement->main,
            &estimate, &ref, &err);
        if (st == CG_OK)
            settings[0].placement->time = &estimate;
        else
            cli_warn("assign", "%s: no time-weighted verdict (the verdict counts nodes): %s",
                     path, err.msg);
    }
    if (settings[0].types)
        gain_count = cg_what_if_rank(settings[0].placement, base, tg.count,
                                     (const char *const *)assumed.ops, assumed.count,
                                     timed ? &ref : NULL, gains, CG_WHAT_IF_MAX_RANKED,
                                     &skipped);
    cg_assign_setting shape_views[ASSIGN_MAX_SETTINGS];
    for (size_t i = 0; i < setting_count; i++)
        shape_views[i] = (cg_assign_setting){settings[i].label, settings[i].dims,
                                       settings[i].dim_count, settings[i].types,
                                       settings[i].placement};
    /* a target without CPU fallback that refuses a node fails at init: the
     * report still prints, the exit status says so */
    char why[1024];
    rc = CG_EXIT_OK;
    for (size_t i = 0; i < setting_count && rc == CG_EXIT_OK; i++)
        if (cg_assign_init_failure(settings[i].placement->main, settings[i].types, why,
                                   sizeof why)) {
            if (setting_count > 1)
                cli_error("assign", "%s (%s)", why, settings[i].label);
            else
                cli_error("assign", "%s", why);
            rc = CG_EXIT_ERROR;
        }
    json_t *root = NULL;
    if (cli_json_on() || cli_views_wanted(&views)) {
        root = cg_assign_report_json(settings[0].placement);
        if (root) {
            cg_json_set(root, "model", cg_json_text(path));
            cg_json_set(root, "setting", cg_json_text(settings[0].label));
            cg_json_set(root, "dims", cg_report_dims_json(uses0, use_count));
            if (!cg_what_if_json(root, gains, gain_count, (const char *const *)assumed.ops,
                                 assumed.count)) {
                json_decref(root);
                root = NULL;
            }
            if (setting_count > 1 && !cg_report_settings_json(root, shape_views, setting_count)) {
                json_decref(root);
                root = NULL;
            }
        }
    }
    if (cli_views_wanted(&views)) {
        /* the file's nodes, placed and timed through the lowering's origins */
        cg_graph_view gv = {model, settings[0].placement->main, ref.node_ms, NULL, NULL,
                            0, tg.list, tg.count, lowered, NULL};
        char title[4300];
        snprintf(title, sizeof title, "convgate assign %s --target %s", path, tg.label);
        rc = cli_views_write("assign", &views, rc, root, title, &gv);
    }
    if (cli_json_on()) {
        rc = cli_json_emit(rc, root);
    } else {
        json_decref(root);
        cg_what_if_assumed_text(stdout, (const char *const *)assumed.ops, assumed.count);
        cg_assign_report_text(stdout, settings[0].placement);
        if (use_count)
            cg_text_printf(stdout, "Dims: %s\n", dims_text);
        cg_what_if_text(stdout, gains, gain_count, skipped,
                   lowered && strcmp(lowered->lowering, "onnx-to-tflite") == 0 ? "TFLite ops"
                   : lowered && strcmp(lowered->lowering, "onnx-to-aten") == 0 ? "ATen ops"
                                                                              : "nodes");
        if (setting_count > 1)
            cg_report_settings_text(stdout, shape_views, setting_count);
    }
    fflush(stdout);
done:
    cli_views_finish("assign", &views, rc);
    cg_reference_profile_clear(&ref);
    for (size_t i = 0; settings && i < setting_count; i++) {
        cg_placement_free(settings[i].placement);
        cg_type_env_free(settings[i].types);
    }
    free(settings);
    cg_sample_set_free(&samples);
    /* the registry's targets back in tg.list before it is freed */
    if (wrapped_count)
        memcpy(tg.list, base, tg.count * sizeof *tg.list);
    cg_targets_assumed_free(wrapped, wrapped_count);
    assumed_free(&assumed);
    cli_targets_free(&tg);
    cg_lowered_free(lowered);
    cg_model_free(model);
    cli_inputs_free(&in);
    return rc;
}
