/*
 * convgate bisect: the first intermediate tensor, in topological order,
 * where the target path (or, with --against, a second model with the same
 * value names, such as a rewrite) diverges from the reference runtime,
 * with the node, its inputs, the metrics there, the last tensor that still
 * matched, and a triage (src/verify/bisect.c).
 */
#include <getopt.h>
#include <inttypes.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "convgate/bisect.h"
#include "convgate/gate.h"
#include "convgate/model.h"
#include "report/report.h"


static void bisect_usage(FILE *f)
{
    fputs("Usage: convgate bisect MODEL (--target T[,T2...] | --against MODEL2)\n"
          "                       [--inputs DIR [--sample N] | --random] [--seed S]\n"
          "                       [--range [NAME=]LO,HI]... [--dim SYM=VAL]...\n"
          "                       [--atol X --rtol Y]\n"
          "                       [--accumulate fp16|fp32] [--no-triage] [--profiles DIR]\n"
          "                       [--json] [--html FILE] [--model-explorer DIR] [--quiet]\n"
          "\n"
          "Runs the float64 reference, the fp32 reference, the fp16-storage reference\n"
          "(for a candidate that computes in fp16) and the candidate side by side on one\n"
          "input set, and names the first intermediate tensor, in topological order,\n"
          "whose error against float64 exceeds the noise floor of its own precision (the\n"
          "fp32 floor, or the fp16 storage floor for a tensor the candidate holds in fp16\n"
          "or computes from one: docs/noise-floor.md): the node, its op, its inputs'\n"
          "dtypes and shapes, the error and the floors there, and the last tensor within\n"
          "its floor. Decisions (comparisons, ArgMax, TopK, quantizers...) are judged by\n"
          "their flips; one that flips within the noise of its input is listed with its\n"
          "margin and what follows it is not blamed for the difference. Only tensors the\n"
          "candidate exposes are compared (values inside a target's partition are not,\n"
          "until a divergence at a partition's output exposes them). Memory stays near\n"
          "the runs: no side keeps its intermediates.\n"
          "\n"
          "Triage: beyond the fp32 floor is a wrong result (a wrong kernel or rewrite);\n"
          "beyond the fp16 floor, the candidate is rerun wider (a target path with fp32\n"
          "accumulation and in fp32, a model such as an fp16 conversion in float64): back\n"
          "within the floor is a precision breakdown (fp16 overflow, accumulation,\n"
          "storage), still beyond is a wrong result.\n"
          "\n"
          "Options:\n"
          "  --target T[,T2]  targets in priority order\n"
          "  --against MODEL2 compare MODEL against MODEL2 (same input and value names:\n"
          "                   a rewrite, or an fp16 conversion, whose inputs are cast to\n"
          "                   the types it declares), both on the reference runtime (or\n"
          "                   MODEL2 on --target's path)\n"
          "  --inputs DIR     an input folder (see below); --sample N picks one (default 0)\n"
          "  --random         random inputs (the default; sample 0 of the policy below)\n"
          CLI_HELP_INPUT_OPTIONS
          "  --atol/--rtol    compare with the fp32 reference under this fixed tolerance\n"
          "                   instead of the noise floors\n"
          "  --json           the result as JSON (docs/json.md)\n"
          CLI_HELP_VIEWS
          "  --quiet          no progress line on stderr\n"
          "\n" CLI_HELP_INPUT_FOLDERS CLI_HELP_FILE_NAMES
          "\n"
          "Exit status: 0 no tensor diverges, 1 a divergent tensor was found, 2 usage or\n"
          "input error.\n",
          f);
    fputs("\n" CLI_LIMITS_HELP, f);
}

int cmd_bisect(int argc, char **argv)
{
    static const struct option longopts[] = {CLI_OPTS_TARGETS,
                                              CLI_OPTS_INPUTS,
                                              CLI_OPTS_TOLERANCE,
                                              {"against", required_argument, NULL, 'c'},
                                              {"inputs", required_argument, NULL, 'i'},
                                              {"sample", required_argument, NULL, 'n'},
                                              {"random", no_argument, NULL, 'r'},
                                              CLI_OPTS_ACCUMULATE,
                                              {"no-triage", no_argument, NULL, 'T'},
                                              CLI_OPTS_VIEWS,
                                              CLI_OPTS_END};
    const char *inputs = NULL, *against = NULL;
    uint64_t sample = 0;
    bool triage = true, random = false;
    cg_tolerance_args targs = {0};
    cli_inputs in;
    cli_targets tg;
    cg_sample_set samples = {0};
    cg_model *model = NULL, *cand = NULL;
    cg_target_path_options po;
    cg_bisect_options bo;
    cg_bisect_result res;
    cli_views views = {0};
    cg_target_path *path = NULL;
    int rc = CG_EXIT_ERROR, c;
    cg_error err;
    cg_error_clear(&err);
    memset(&po, 0, sizeof po);
    memset(&bo, 0, sizeof bo);
    memset(&res, 0, sizeof res);
    memset(&tg, 0, sizeof tg);
    cli_inputs_init(&in);

    bool started = false;
    while ((c = cli_next_option("bisect", argc, argv, "h", longopts, &started,
                                &in, &tg, &targs)) != -1) {
        switch (c) {
        case 'c': against = optarg; break;
        case 'i': inputs = optarg; break;
        case 'n':
            if (!cli_parse_count(optarg, SIZE_MAX, &sample)) {
                cli_error("bisect", "--sample expects an index, got '%s'", optarg);
                goto done;
            }
            break;
        case 'r': random = true; break;
        case 'T': triage = false; break;
        case CLI_OPT_HTML:
        case CLI_OPT_MODEL_EXPLORER:
            if (cli_views_option("bisect", &views, c, optarg) < 0)
                goto done;
            break;
        case 'h': bisect_usage(stdout); rc = CG_EXIT_OK; goto done;
        default: goto done;
        }
    }
    const char *model_path = cli_model_arg("bisect", argc, argv, bisect_usage);
    if (!model_path)
        goto done;
    if (!tg.arg_count && !against) {
        cli_error("bisect", "give --target T (or --against MODEL2)");
        goto done;
    }
    if (inputs && random) {
        cli_error("bisect", "give --inputs or --random, not both");
        goto done;
    }
    if (targs.have_atol != targs.have_rtol) {
        cli_error("bisect", "give --atol and --rtol together");
        goto done;
    }
    if (!(model = cli_model_for("bisect", model_path, &in, &tg)))
        goto done;
    if (against && (cand = cli_load_model("bisect", against, NULL)) == NULL)
        goto done;
    if (inputs) {
        if (cg_samples_load_dir(model, inputs, 0, &samples, &err) != CG_OK) {
            cli_error("bisect", "%s", err.msg);
            goto done;
        }
        if (sample >= samples.count) {
            cli_error("bisect", "--sample %" PRIu64 ": %s holds %zu set%s", sample, inputs,
                      samples.count, samples.count == 1 ? "" : "s");
            goto done;
        }
    } else if (cg_samples_random(model, 1, &in.random, in.dims, in.dim_count, 0, &samples,
                                 &err) != CG_OK) {
        cli_error("bisect", "%s", err.msg);
        goto done;
    } else {
        sample = 0;
    }

    cg_dim_binding bound[CLI_MAX_DIMS];
    po.targets = tg.list;
    po.target_count = tg.count;
    po.dims = bound;
    po.dim_count = cg_sample_dims(model, in.dims, in.dim_count, &samples.samples[sample], bound,
                                  CLI_MAX_DIMS);
    po.accumulate = tg.accumulate;
    /* an fp16 target with two device classes (its profile's): the class
     * that sums in fp16 first, then, when it finds nothing, the one that
     * sums in fp32; --accumulate picks one */
    const char *classes[2] = {NULL, NULL};
    for (size_t i = 0; !cand && tg.accumulate == CG_ACCUMULATE_PROFILE && i < tg.count; i++)
        if (tg.list[i]->device_class[0] && tg.list[i]->device_class[1]) {
            classes[0] = tg.list[i]->device_class[0];
            classes[1] = tg.list[i]->device_class[1];
            break;
        }
    po.device_classes = classes[0] != NULL;
    const char *as_class = classes[0];
    po.random = &in.random;
    if (!cand) { /* the candidate runs these inputs: it is typed and placed on them */
        po.feeds = samples.samples[sample].inputs;
        po.feed_count = samples.samples[sample].input_count;
    }
    bo.reference.model = model;
    bo.candidate.model = cand ? cand : model;
    bo.candidate.path = tg.count ? &po : NULL;
    bo.triage = triage;
    bo.progress = cli_progress();
    /* the path's placement is what the views draw: build it once */
    if (tg.count && cli_views_wanted(&views) &&
        cg_target_path_init(bo.candidate.model, &po, &path, &err) != CG_OK) {
        cli_error("bisect", "%s", err.msg);
        goto done;
    }
    if (targs.have_atol) {
        bo.by_tolerance = true;
        bo.tol.atol = targs.atol;
        bo.tol.rtol = targs.rtol;
        bo.tol.nan_equal = targs.nan_equal;
        bo.tol.justification = "from --atol/--rtol: overrides the noise floors";
    }
    const cg_sample *s = &samples.samples[sample];
    cg_status bst = cg_bisect_run(&bo, s->inputs, s->input_count, &res, &err);
    if (bst == CG_OK && classes[0] && !res.diverged) {
        cg_bisect_result_free(&res);
        po.device_classes = false;
        po.accumulate = CG_ACCUMULATE_FP32;
        as_class = classes[1];
        bst = cg_bisect_run(&bo, s->inputs, s->input_count, &res, &err);
    }
    cli_progress_clear();
    if (bst != CG_OK) {
        cli_error("bisect", "%s", err.msg);
        goto done;
    }
    rc = res.diverged ? CG_EXIT_FAIL : CG_EXIT_OK;
    if (cli_json_on() || cli_views_wanted(&views)) {
        cg_bisect_view bv = {model_path, against, s->label, bo.by_tolerance ? &bo.tol : NULL,
                             "--atol/--rtol", tg.list, tg.count};
        json_t *root = cg_report_bisect_json(&res, &bv);
        if (root)
            cg_json_set(root, "device_class", as_class ? cg_json_text(as_class) : json_null());
        if (cli_views_wanted(&views)) {
            /* with --against, the reference model's graph, unplaced */
            cg_graph_view gv = {model, path && !cand ? cg_target_path_assignment(path) : NULL,
                                NULL, &res, NULL, 0, tg.list, tg.count, NULL, NULL};
            char title[4300];
            snprintf(title, sizeof title, "convgate bisect %s %s %s", model_path,
                     against ? "--against" : "--target", against ? against : tg.label);
            rc = cli_views_write("bisect", &views, rc, root, title, &gv);
        }
        if (cli_json_on())
            rc = cli_json_emit(rc, root);
        else
            json_decref(root);
    }
    if (!cli_json_on()) {
        if (bo.by_tolerance)
            printf("convgate bisect %s against %s on %s (atol %g, rtol %g: given, they override "
                   "the noise floors)\n", model_path, against ? against : "the target path",
                   s->label, bo.tol.atol, bo.tol.rtol);
        else
            printf("convgate bisect %s against %s%s%s on %s (each tensor against the noise floor "
                   "of its own precision, from the float64 reference)\n", model_path,
                   against ? against : "the target path", as_class ? " as " : "",
                   as_class ? as_class : "", s->label);
        if (classes[0] && !res.diverged)
            printf("both device classes bisected: %s, then %s\n", classes[0], classes[1]);
        cg_bisect_report_text(stdout, &res, "");
    }
done:
    cli_views_finish("bisect", &views, rc);
    cg_target_path_free(path);
    cg_bisect_result_free(&res);
    cg_sample_set_free(&samples);
    cli_targets_free(&tg);
    cg_model_free(cand);
    cg_model_free(model);
    cli_inputs_free(&in);
    return rc;
}
