/*
 * convgate verify: check the reference runtime, a target path, or outputs
 * produced elsewhere (a device run) against a golden set written by
 * `convgate dump-ref` (src/verify/parity.c computes, src/report/parity.c
 * renders). A stale or tampered golden set, or one that does not cover
 * every output of the model, is an error (exit 2), never a pass.
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "convgate/model.h"
#include "convgate/parity.h"
#include "convgate/rewrite.h"
#include "core/path.h"
#include "report/report.h"

static void verify_usage(FILE *f)
{
    fputs("Usage: convgate verify MODEL --golden GOLDEN [--target T[,T2...]]\n"
          "                       [--atol X --rtol Y | --tol FILE] [--outputs-from DIR] [--json]\n"
          "       convgate verify DIR [--target T[,T2...]] [...]\n"
          "\n"
          "DIR, an artifact directory written by `convgate convert`: every file its\n"
          "manifest.json lists must be there, a regular file of the listed size and\n"
          "sha256, and model.onnx the result it names; then DIR/golden is checked\n"
          "against DIR/model.onnx as below, with the manifest's tolerance for the\n"
          "reference. A missing, altered or relinked file is an error (exit 2).\n"
          "\n"
          "Checks the golden set (format version, every file's sha256, the model's\n"
          "sha256, and that it covers every input and output of the model), runs the\n"
          "golden inputs on the reference runtime (or the target path with --target)\n"
          "and judges every output against the golden one: by default against the noise\n"
          "floor dump-ref recorded with it (the fp32 and fp16 storage floors of docs/\n"
          "noise-floor.md): matches (fp32 noise), matches at fp16 precision, precision\n"
          "breakdown or wrong result, with the ratio to the floor. A golden set without\n"
          "recorded floors (format 1), and outputs given a tolerance, are judged\n"
          "elementwise: |got - golden| <= atol + rtol * |golden|, NaN against a number\n"
          "fails.\n"
          "\n"
          "  --golden GOLDEN        a directory written by `convgate dump-ref`\n"
          "  --target T[,T2...]     run the target path instead of the reference\n"
          "                         (`convgate targets` lists them; repeatable); with\n"
          "                         --outputs-from, what made them (their precision, and\n"
          "                         for an fp16 target the emulation that tells precision\n"
          "                         from a wrong result)\n"
          "  --profiles DIR         capability profiles directory\n"
          "  --accumulate fp16|fp32 how fp16 targets accumulate reductions (default: as the\n"
          "                         target's profile says)\n"
          "  --outputs-from DIR     compare outputs produced elsewhere instead of running:\n"
          "                         DIR/SET/NAME.npy (or .pb, or output_K.pb), or DIR/SET.npz\n"
          "  --atol X, --rtol Y     a fixed tolerance instead of the noise floor (default\n"
          "                         for format-1 golden sets: 1e-5 and 1e-4; 2.5e-3 and 1e-3\n"
          "                         for a target path that computes in fp16)\n"
          "  --nan-equal            NaN matches NaN\n"
          "  --tol FILE             per-output tolerances with justifications (JSON:\n"
          "                         {\"default\": {...}, \"outputs\": {NAME: {atol, rtol,\n"
          "                         nan_equal, justification}}}); an output the model does\n"
          "                         not have is an error\n"
          "  --json                 the report as JSON (docs/json.md)\n"
          "Placement of the target path (its reference run):\n" CLI_HELP_INPUT_OPTIONS
          "\n" CLI_HELP_FILE_NAMES
          "\n"
          "Exit status: 0 every output matches; 1 some output does not; 2 usage or\n"
          "input error, including a golden set made for another model, a missing or\n"
          "altered golden file, a set missing an output, or an unknown format_version.\n",
          f);
    fputs("\n" CLI_LIMITS_HELP, f);
}

typedef struct verify_args {
    const char *model_path, *golden_dir;
    cg_verify_options opt;
    cli_inputs in;
    cli_targets targets;
} verify_args;

static int parse_args(int argc, char **argv, verify_args *a)
{
    static const struct option longopts[] = {
        CLI_OPTS_TARGETS, CLI_OPTS_INPUTS, CLI_OPTS_TOLERANCE, CLI_OPTS_TOLERANCE_FILE,
        {"golden", required_argument, NULL, 'g'},       CLI_OPTS_ACCUMULATE,
        {"outputs-from", required_argument, NULL, 'O'}, CLI_OPTS_END};
    cg_verify_options *o = &a->opt;
    int c;
    bool started = false;
    while ((c = cli_next_option("verify", argc, argv, "h", longopts, &started,
                                &a->in, &a->targets, &o->tol)) != -1) {
        switch (c) {
        case 'g': a->golden_dir = optarg; break;
        case 'O': o->outputs_from = optarg; break;
        case 'h': verify_usage(stdout); return -1;
        default: return CG_EXIT_ERROR;
        }
    }
    if (!(a->model_path = cli_model_arg("verify", argc, argv, verify_usage)))
        return CG_EXIT_ERROR;
    if (!a->golden_dir && cg_path_is_dir(a->model_path))
        return CG_EXIT_OK; /* an artifact directory (convgate convert) */
    if (!a->golden_dir) {
        cli_error("verify", "--golden GOLDEN is required");
        return CG_EXIT_ERROR;
    }
    if (o->tol.file && (o->tol.have_atol || o->tol.have_rtol)) {
        cli_error("verify", "give --tol FILE or --atol/--rtol, not both");
        return CG_EXIT_ERROR;
    }
    if (strcmp(a->model_path, "-") == 0) {
        cli_error("verify", "the model must be a file (its sha256 is checked)");
        return CG_EXIT_ERROR;
    }
    return CG_EXIT_OK;
}

/* convgate verify DIR: the artifact's files, then its golden set. */
static int verify_artifact(verify_args *a)
{
    cg_artifact_report rep;
    cg_error err;
    char producer[1200];
    cg_error_clear(&err);
    if (a->targets.arg_count && !cli_targets_resolve("verify", &a->targets))
        return CG_EXIT_ERROR;
    a->opt.accumulate = a->targets.accumulate;
    a->opt.targets = a->targets.list;
    a->opt.target_count = a->targets.count;
    a->opt.dims = a->in.dims;
    a->opt.dim_count = a->in.dim_count;
    a->opt.random = &a->in.random;
    if (a->opt.outputs_from)
        snprintf(producer, sizeof producer, "outputs from %s", a->opt.outputs_from);
    else
        snprintf(producer, sizeof producer, "%s", a->targets.count ? a->targets.label
                                                                   : "reference");
    cg_status st = cg_artifact_verify(a->model_path, &a->opt, &rep, &err);
    int rc;
    if (st != CG_OK) {
        cli_error("verify", "%s", err.msg);
        rc = st == CG_RUNTIME ? CG_EXIT_FAIL : CG_EXIT_ERROR;
    } else {
        rc = rep.golden.pass ? CG_EXIT_OK : CG_EXIT_FAIL;
        if (cli_json_on())
            rc = cli_json_emit(rc, cg_report_artifact_json(&rep, producer));
        else
            cg_report_artifact_text(stdout, &rep, producer);
    }
    cg_artifact_report_free(&rep);
    return rc;
}

int cmd_verify(int argc, char **argv)
{
    verify_args a;
    cg_model *model = NULL;
    cg_verify_report rep;
    cg_error err;
    int rc;
    char producer[1200];
    memset(&a, 0, sizeof a);
    memset(&rep, 0, sizeof rep);
    cli_inputs_init(&a.in);
    cg_error_clear(&err);
    if ((rc = parse_args(argc, argv, &a)) != CG_EXIT_OK) {
        rc = rc < 0 ? CG_EXIT_OK : rc;
        goto done;
    }
    rc = CG_EXIT_ERROR;
    if (!a.golden_dir) {
        rc = verify_artifact(&a);
        goto done;
    }
    if (!(model = cli_model_for("verify", a.model_path, &a.in, &a.targets)))
        goto done;
    a.opt.accumulate = a.targets.accumulate;
    a.opt.targets = a.targets.list;
    a.opt.target_count = a.targets.count;
    a.opt.dims = a.in.dims;
    a.opt.dim_count = a.in.dim_count;
    a.opt.random = &a.in.random;
    if (a.opt.outputs_from)
        snprintf(producer, sizeof producer, "outputs from %s%s%s", a.opt.outputs_from,
                 a.targets.count ? " made by " : "", a.targets.count ? a.targets.label : "");
    else
        snprintf(producer, sizeof producer, "%s", a.targets.count ? a.targets.label : "reference");
    cg_status st = cg_verify_golden(model, a.model_path, a.golden_dir, &a.opt, &rep, &err);
    if (st != CG_OK) {
        cli_error("verify", "%s", err.msg);
        rc = st == CG_RUNTIME ? CG_EXIT_FAIL : CG_EXIT_ERROR;
        goto done;
    }
    rc = rep.pass ? CG_EXIT_OK : CG_EXIT_FAIL;
    if (!cli_json_on()) {
        cg_report_verify_text(stdout, &rep, a.golden_dir, producer);
        goto done;
    }
    if (rep.silent_fallback)
        cli_warn("verify", "the target path computes in reduced precision but every output is "
                 "bit-identical to fp32: it probably did not run there");
    rc = cli_json_emit(rc, cg_report_verify_json(&rep, a.model_path, a.golden_dir, producer));
done:
    cg_verify_report_free(&rep);
    cg_model_free(model);
    cli_targets_free(&a.targets);
    cli_inputs_free(&a.in);
    return rc;
}
