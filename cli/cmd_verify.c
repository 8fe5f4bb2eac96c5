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
#include "report/report.h"

static void verify_usage(FILE *f)
{
    fputs("Usage: convgate verify MODEL --golden GOLDEN [--target T[,T2...]]\n"
          "                       [--atol X --rtol Y | --tol FILE] [--outputs-from DIR] [--json]\n"
          "\n"
          "Checks the golden set (format version, every file's sha256, the model's\n"
          "sha256, and that it covers every input and output of the model), runs the\n"
          "golden inputs on the reference runtime (or the target path with --target)\n"
          "and compares every output with the golden one:\n"
          "|got - golden| <= atol + rtol * |golden| elementwise, NaN against a number fails.\n"
          "\n"
          "  --golden GOLDEN        a directory written by `convgate dump-ref`\n"
          "  --target T[,T2...]     run the target path instead of the reference\n"
          "                         (`convgate targets` lists them; repeatable)\n"
          "  --profiles DIR         capability profiles directory\n"
          "  --accumulate fp16|fp32 how fp16 targets accumulate reductions (default fp16)\n"
          "  --outputs-from DIR     compare outputs produced elsewhere instead of running:\n"
          "                         DIR/SET/NAME.npy (or .pb, or output_K.pb), or DIR/SET.npz\n"
          "  --atol X, --rtol Y     tolerance (default 1e-5 and 1e-4; 2.5e-3 and 1e-3 for a\n"
          "                         target path that computes in fp16)\n"
          "  --nan-equal            NaN matches NaN\n"
          "  --tol FILE             per-output tolerances with justifications (JSON:\n"
          "                         {\"default\": {...}, \"outputs\": {NAME: {atol, rtol,\n"
          "                         nan_equal, justification}}}); an output the model does\n"
          "                         not have is an error\n"
          "  --json                 the report as JSON (docs/json.md)\n"
          "Placement of the target path (its reference run):\n" CLI_HELP_INPUT_OPTIONS
          "\n" CLI_HELP_FILE_NAMES
          "\n"
          "Exit status: 0 every output within tolerance; 1 some output is not; 2 usage or\n"
          "input error, including a golden set made for another model, a missing or\n"
          "altered golden file, a set missing an output, or an unknown format_version.\n",
          f);
}

typedef struct verify_args {
    const char *model_path, *golden_dir;
    cg_verify_options opt;
    cli_inputs in;
    cli_targets targets;
} verify_args;

static int parse_args(int argc, char **argv, verify_args *a)
{
    static const struct option longopts[] = {{"golden", required_argument, NULL, 'g'},
                                              {"target", required_argument, NULL, 0},
                                              {"profiles", required_argument, NULL, 0},
                                              {"dim", required_argument, NULL, 0},
                                              {"seed", required_argument, NULL, 0},
                                              {"range", required_argument, NULL, 0},
                                              {"accumulate", required_argument, NULL, 'A'},
                                              {"outputs-from", required_argument, NULL, 'O'},
                                              {"atol", required_argument, NULL, 'a'},
                                              {"rtol", required_argument, NULL, 'r'},
                                              {"nan-equal", no_argument, NULL, 'n'},
                                              {"tol", required_argument, NULL, 'T'},
                                              {"json", no_argument, NULL, 'j'},
                                              {"help", no_argument, NULL, 'h'},
                                              {NULL, 0, NULL, 0}};
    cg_verify_options *o = &a->opt;
    int c, idx;
    optind = 1;
    opterr = 0;
    while ((c = getopt_long(argc, argv, "h", longopts, &idx)) != -1) {
        int r;
        switch (c) {
        case 0:
            r = cli_inputs_option("verify", &a->in, longopts[idx].name, optarg);
            if (!r)
                r = cli_targets_option("verify", &a->targets, longopts[idx].name, optarg);
            if (r < 0)
                return CG_EXIT_ERROR;
            break;
        case 'g': a->golden_dir = optarg; break;
        case 'O': o->outputs_from = optarg; break;
        case 'T': o->tol.file = optarg; break;
        case 'n': o->tol.nan_equal = true; break;
        case 'j': break;
        case 'A':
            if (strcmp(optarg, "fp32") != 0 && strcmp(optarg, "fp16") != 0) {
                cli_error("verify", "--accumulate takes fp16 or fp32");
                return CG_EXIT_ERROR;
            }
            o->accumulate_fp32 = strcmp(optarg, "fp32") == 0;
            break;
        case 'a':
        case 'r':
            if (!cli_parse_double(optarg, c == 'a' ? &o->tol.atol : &o->tol.rtol)) {
                cli_error("verify", "--%s needs a finite number >= 0", c == 'a' ? "atol" : "rtol");
                return CG_EXIT_ERROR;
            }
            *(c == 'a' ? &o->tol.have_atol : &o->tol.have_rtol) = true;
            break;
        case 'h': verify_usage(stdout); return -1;
        default:
            cli_error("verify", "unknown or incomplete option '%s' (see convgate verify --help)",
                      argv[optind - 1]);
            return CG_EXIT_ERROR;
        }
    }
    if (optind + 1 != argc) {
        cli_error("verify", optind >= argc ? "no model given" : "one model at a time");
        verify_usage(stderr);
        return CG_EXIT_ERROR;
    }
    a->model_path = argv[optind];
    if (!a->golden_dir) {
        cli_error("verify", "--golden GOLDEN is required");
        return CG_EXIT_ERROR;
    }
    if (o->tol.file && (o->tol.have_atol || o->tol.have_rtol)) {
        cli_error("verify", "give --tol FILE or --atol/--rtol, not both");
        return CG_EXIT_ERROR;
    }
    if (o->outputs_from && a->targets.arg_count) {
        cli_error("verify", "--outputs-from compares outputs produced elsewhere; it takes no "
                  "--target");
        return CG_EXIT_ERROR;
    }
    if (strcmp(a->model_path, "-") == 0) {
        cli_error("verify", "the model must be a file (its sha256 is checked)");
        return CG_EXIT_ERROR;
    }
    return CG_EXIT_OK;
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
    if (!(model = cli_load_model("verify", a.model_path, NULL)) ||
        !cli_inputs_check("verify", &a.in, model) ||
        (a.targets.arg_count && !cli_targets_resolve("verify", &a.targets)))
        goto done;
    a.opt.targets = a.targets.list;
    a.opt.target_count = a.targets.count;
    a.opt.dims = a.in.dims;
    a.opt.dim_count = a.in.dim_count;
    a.opt.random = &a.in.random;
    if (a.opt.outputs_from)
        snprintf(producer, sizeof producer, "outputs from %s", a.opt.outputs_from);
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
