/*
 * convgate convert: check, the verified rewrites the target needs, the
 * result compared with the source (reference first, then the target path),
 * the gates, and an artifact directory a reviewer can re-check with
 * `convgate verify DIR` (src/rewrite/convert.c computes and writes,
 * src/report/convert.c renders the manifest and the README).
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "convgate/model.h"
#include "convgate/rewrite.h"
#include "report/report.h"

#define CONVERT_MAX_ARGS 256

static void convert_usage(FILE *f)
{
    fputs("Usage: convgate convert MODEL --target T[,T2...] -o DIR [--inputs DIR | --random N]\n"
          "                        [--only NAME,...] [--opt-in NAME,...] [--dim SYM=VAL]...\n"
          "                        [--seed S] [--range ...] [--external-data-above BYTES]\n"
          "                        [--accumulate fp16|fp32] [--force] [--profiles DIR]\n"
          "                        [--json]\n"
          "\n"
          "Runs, in order: the checker on MODEL; the verified rewrites the target needs\n"
          "(convgate rewrite); the result against a golden set of MODEL's outputs on the\n"
          "samples, first on the reference runtime, then on the target path; the three\n"
          "gates on the result. Writes the artifact directory DIR:\n"
          "  model.onnx             the result (model.onnx.data beside it when large)\n"
          "  golden/                MODEL's inputs and outputs on the reference (dump-ref's\n"
          "                         format), made for model.onnx\n"
          "  deploy/                ONNX Runtime's reduced-build operator config and the\n"
          "                         TensorFlow Lite Micro op resolver the model needs\n"
          "  README.md              what was done and the numbers, and the recipe\n"
          "  manifest.json          every figure, the sha256 of every file, the convgate\n"
          "                         version and commit, the profile and its sources\n"
          "Deterministic: the same MODEL and options give byte-identical files (no time,\n"
          "no timing is recorded). `convgate verify DIR` re-checks it.\n"
          "\n"
          "  -o, --output DIR           the artifact directory (created; a non-empty one\n"
          "                             is refused unless --force)\n"
          "  --inputs DIR | --random N  the samples (default: 3 random)\n"
          "  --only, --opt-in           as for convgate rewrite\n"
          "  --accumulate fp16|fp32     how fp16 targets accumulate on the target path\n"
          "                             (default: as the profile says)\n"
          "  --external-data-above B    move initializers of >= 1 KiB to model.onnx.data\n"
          "                             when they total more than B bytes (default 1 GiB)\n"
          CLI_HELP_INPUT_OPTIONS
          "  --json                     the report and the manifest as JSON (docs/json.md)\n"
          "\n"
          "Exit status: 0 written and every gate passes; 1 written (or nothing, when MODEL\n"
          "fails the checker) but a gate fails; 2 usage or input error.\n",
          f);
    fputs("\n" CLI_LIMITS_HELP, f);
}

typedef struct convert_args {
    const char *model_path, *out;
    uint64_t external_above;
    bool force;
    cli_rewrite_args rw;
    cli_inputs in;
    cli_targets tg;
} convert_args;

static int parse_args(int argc, char **argv, convert_args *a)
{
    static const struct option longopts[] = {CLI_OPTS_TARGETS,
                                              CLI_OPTS_INPUTS,
                                              {"output", required_argument, NULL, 'o'},
                                              CLI_OPTS_REWRITE,
                                              CLI_OPTS_ACCUMULATE,
                                              {"force", no_argument, NULL, 'f'},
                                              {"external-data-above", required_argument, NULL, 'x'},
                                              CLI_OPTS_END};
    int c;
    bool started = false;
    a->external_above = (uint64_t)1 << 30;
    while ((c = cli_next_option("convert", argc, argv, "ho:", longopts, &started, &a->in, &a->tg,
                                NULL)) != -1) {
        switch (c) {
        case 'o': a->out = optarg; break;
        case 'f': a->force = true; break;
        case 'x':
            if (!cli_parse_count(optarg, UINT64_MAX, &a->external_above)) {
                cli_error("convert", "--external-data-above expects a byte count, got '%s'",
                          optarg);
                return CG_EXIT_ERROR;
            }
            break;
        case 'h': convert_usage(stdout); return -1;
        default:
            if (cli_rewrite_option("convert", c, optarg, &a->rw) <= 0)
                return CG_EXIT_ERROR;
        }
    }
    if (!(a->model_path = cli_model_arg("convert", argc, argv, convert_usage)) ||
        !cli_targets_required("convert", &a->tg))
        return CG_EXIT_ERROR;
    if (!a->out) {
        cli_error("convert", "-o DIR is required");
        return CG_EXIT_ERROR;
    }
    if (strcmp(a->model_path, "-") == 0) {
        cli_error("convert", "the model must be a file (its sha256 goes into the manifest)");
        return CG_EXIT_ERROR;
    }
    return cli_rewrite_check("convert", &a->rw) ? CG_EXIT_OK : CG_EXIT_ERROR;
}

/* README.md, then manifest.json (which lists the README's hash) */
static bool write_docs(cg_convert_result *r, cg_error *err)
{
    char *readme = NULL;
    size_t size = 0;
    FILE *f = open_memstream(&readme, &size);
    if (!f) {
        cg_error_set(err, CG_NOMEM, "out of memory");
        return false;
    }
    cg_report_convert_readme(f, r);
    bool ok = fclose(f) == 0 && cg_convert_add_file(r, "README.md", readme, size, err) == CG_OK;
    free(readme);
    if (!ok)
        return false;
    json_t *m = cg_report_convert_manifest(r);
    char *text = m ? cg_json_dumps(m) : NULL;
    json_decref(m);
    if (!text) {
        cg_error_set(err, CG_NOMEM, "out of memory");
        return false;
    }
    /* the manifest is not in its own file list: write it without recording */
    size_t len = strlen(text);
    char *withnl = realloc(text, len + 2);
    if (!withnl) {
        free(text);
        cg_error_set(err, CG_NOMEM, "out of memory");
        return false;
    }
    withnl[len] = '\n';
    withnl[len + 1] = '\0';
    ok = cg_convert_add_file(r, CG_ARTIFACT_MANIFEST, withnl, len + 1, err) == CG_OK;
    free(withnl);
    return ok;
}

int cmd_convert(int argc, char **argv)
{
    convert_args a;
    cg_model *model = NULL;
    cg_sample_set samples = {0};
    cg_convert_result res;
    cg_error err;
    char desc[4200];
    const char *recorded[CONVERT_MAX_ARGS];
    size_t nrec = 0;
    int rc;
    memset(&a, 0, sizeof a);
    memset(&res, 0, sizeof res);
    cli_inputs_init(&a.in);
    cg_error_clear(&err);
    /* the command line as typed (getopt reorders argv) */
    recorded[nrec++] = "convgate";
    for (int i = 0; i < argc && nrec < CONVERT_MAX_ARGS; i++)
        recorded[nrec++] = argv[i];
    char **typed = malloc((size_t)(nrec + 1) * sizeof *typed);
    if (!typed) {
        cli_error("convert", "out of memory");
        return CG_EXIT_ERROR;
    }
    for (size_t i = 0; i < nrec; i++)
        typed[i] = strdup(recorded[i]);
    if ((rc = parse_args(argc, argv, &a)) != CG_EXIT_OK) {
        rc = rc < 0 ? CG_EXIT_OK : rc;
        goto done;
    }
    rc = CG_EXIT_ERROR;
    if (!(model = cli_model_for("convert", a.model_path, &a.in, &a.tg)) ||
        !cli_onnx_graph_only("convert", a.model_path, model) ||
        !cli_samples_load("convert", model, a.model_path, NULL, a.rw.inputs, a.rw.random_n, 3, &a.in,
                          &samples, desc, sizeof desc))
        goto done;
    cg_convert_options o;
    memset(&o, 0, sizeof o);
    o.rewrite.targets = a.tg.list;
    o.rewrite.target_count = a.tg.count;
    o.rewrite.dims = a.in.dims;
    o.rewrite.dim_count = a.in.dim_count;
    o.rewrite.random = &a.in.random;
    o.rewrite.samples = &samples;
    o.rewrite.samples_fed = a.rw.inputs != NULL;
    o.rewrite.only = (const char *const *)a.rw.only;
    o.rewrite.only_count = a.rw.only_count;
    o.rewrite.opt_in = (const char *const *)a.rw.opt_in;
    o.rewrite.opt_in_count = a.rw.opt_in_count;
    o.rewrite.accumulate = a.tg.accumulate;
    o.samples_desc = desc;
    o.argv = (const char *const *)typed;
    o.argc = nrec;
    o.external_above = a.external_above;
    o.force = a.force;
    for (size_t i = 0; i < nrec; i++)
        if (!typed[i]) {
            cli_error("convert", "out of memory");
            goto done;
        }
    if (cg_convert_run(model, a.model_path, a.out, &o, &res, &err) != CG_OK ||
        (res.source_checks && !write_docs(&res, &err))) {
        cli_error("convert", "%s", err.msg);
        goto done;
    }
    rc = res.source_checks && res.gate.pass ? CG_EXIT_OK : CG_EXIT_FAIL;
    cg_rewrite_view v = {"convert", a.model_path, a.tg.label, a.out, desc, false, false};
    if (cli_json_on())
        rc = cli_json_emit(rc, cg_report_convert_json(&res, &v));
    else
        cg_report_convert_text(stdout, &res, &v);
done:
    cg_convert_result_free(&res);
    cg_sample_set_free(&samples);
    cg_model_free(model);
    cli_targets_free(&a.tg);
    cli_inputs_free(&a.in);
    cli_rewrite_args_free(&a.rw);
    for (size_t i = 0; i < nrec; i++)
        free(typed[i]);
    free(typed);
    return rc;
}
