/*
 * convgate dump-ref: run a model on the reference CPU runtime over samples
 * (an input folder, or random ones: convgate/samples.h) and freeze inputs
 * and outputs as a golden set (convgate/golden.h) that `convgate verify`
 * and `convgate gate --golden` check targets against later.
 */
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "convgate/golden.h"
#include "convgate/model.h"
#include "convgate/samples.h"
#include "report/report.h"

#define DUMP_MAX_RANDOM 100000

static void dump_usage(FILE *f)
{
    fputs("Usage: convgate dump-ref MODEL (--inputs DIR | --random N) -o GOLDEN\n"
          "                         [--seed S] [--range [NAME=]LO,HI]... [--dim S=V]...\n"
          "                         [--force] [--json]\n"
          "\n"
          "Runs MODEL on the reference CPU runtime and writes a versioned golden set:\n"
          "GOLDEN/manifest.json (format_version, convgate version, the model's sha256,\n"
          "each file's sha256, dtype and shape) and GOLDEN/SET/{inputs,outputs}/*.npy.\n"
          "Each set also runs on the float64 reference and with fp16 storage, and the\n"
          "manifest records every output's noise floors on it (the largest |fp32 -\n"
          "fp64| and |fp16 storage - fp64|, and its scale): what `verify` and `gate\n"
          "--golden` judge a target's error by (docs/noise-floor.md).\n"
          "\n"
          "  --inputs DIR         an input folder (see below); a set must feed every\n"
          "                       graph input, and a tensor file in a set folder that is\n"
          "                       no input or output of the model is an error\n"
          "  --random N           N samples of random inputs instead (sets random-0, ...)\n"
          CLI_HELP_INPUT_OPTIONS
          "  -o, --output GOLDEN  the golden directory (created, with its parents; a\n"
          "                       non-empty one is refused unless --force)\n"
          "  --force              write into a non-empty GOLDEN (its old manifest is\n"
          "                       removed first)\n"
          "  --no-floors          do not measure the floors (verify then judges by a\n"
          "                       fixed tolerance)\n"
          "  --json               the result as JSON (docs/json.md)\n"
          "\n" CLI_HELP_INPUT_FOLDERS CLI_HELP_FILE_NAMES
          "Exit status: 0 written; 1 the model failed while running; 2 usage or input error.\n",
          f);
    fputs("\n" CLI_LIMITS_HELP, f);
}

/* The line of each set as it is written (text mode). */
static void print_set(void *user, const char *name, size_t inputs, size_t outputs)
{
    (void)user;
    cg_report_dump_set_text(stdout, name, inputs, outputs);
}

int cmd_dump_ref(int argc, char **argv)
{
    static const struct option longopts[] = {CLI_OPTS_INPUTS,
                                              {"inputs", required_argument, NULL, 'i'},
                                              {"random", required_argument, NULL, 'r'},
                                              {"output", required_argument, NULL, 'o'},
                                              {"force", no_argument, NULL, 'f'},
                                              {"no-floors", no_argument, NULL, 'N'},
                                              CLI_OPTS_END};
    const char *inputs_dir = NULL, *golden_dir = NULL;
    uint64_t random_count = 0;
    int rc = CG_EXIT_ERROR, c;
    cli_inputs in;
    cg_model *model = NULL;
    cg_sample_source *src = NULL;
    cg_golden_dump_options opt;
    cg_golden_dump_report rep;
    cg_error err;
    cg_error_clear(&err);
    cli_inputs_init(&in);
    memset(&opt, 0, sizeof opt);
    memset(&rep, 0, sizeof rep);
    opt.floors = true;

    bool started = false;
    while ((c = cli_next_option("dump-ref", argc, argv, "ho:", longopts, &started,
                                &in, NULL, NULL)) != -1) {
        switch (c) {
        case 'i': inputs_dir = optarg; break;
        case 'o': golden_dir = optarg; break;
        case 'f': opt.force = true; break;
        case 'N': opt.floors = false; break;
        case 'r':
            if (!cli_parse_count(optarg, DUMP_MAX_RANDOM, &random_count) || !random_count) {
                cli_error("dump-ref", "--random needs a set count from 1 to %d", DUMP_MAX_RANDOM);
                goto done;
            }
            break;
        case 'h': dump_usage(stdout); rc = CG_EXIT_OK; goto done;
        default: goto done;
        }
    }
    const char *model_path = cli_model_arg("dump-ref", argc, argv, dump_usage);
    if (!model_path)
        goto done;
    if (!golden_dir) {
        cli_error("dump-ref", "-o GOLDEN is required");
        goto done;
    }
    if (!inputs_dir == !random_count) {
        cli_error("dump-ref", "give exactly one of --inputs DIR and --random N");
        goto done;
    }
    if (strcmp(model_path, "-") == 0) {
        cli_error("dump-ref", "the model must be a file (its sha256 goes into the manifest)");
        goto done;
    }
    if (!(model = cli_model_for("dump-ref", model_path, &in, NULL)))
        goto done;
    cg_status st = inputs_dir ? cg_sample_source_open_dir(model, inputs_dir, 0, &src, &err)
                              : cg_sample_source_open_random(model, (size_t)random_count,
                                                             &in.random, in.dims, in.dim_count,
                                                             0, &src, &err);
    if (st != CG_OK) {
        cli_error("dump-ref", "%s", err.msg);
        goto done;
    }
    opt.model_path = model_path;
    opt.on_set = cli_json_on() ? NULL : print_set;
    if (cg_golden_dump(model, src, golden_dir, &opt, &rep, &err) != CG_OK) {
        cli_error("dump-ref", "%s", err.msg);
        /* the model failing to run is exit 1; a bad input or the writer, 2 */
        rc = rep.model_failed ? CG_EXIT_FAIL : CG_EXIT_ERROR;
        goto done;
    }
    rc = CG_EXIT_OK;
    if (cli_json_on())
        rc = cli_json_emit(rc, cg_report_dump_json(model_path, golden_dir, &rep));
    else
        cg_report_dump_text(stdout, golden_dir, &rep);
done:
    cg_golden_dump_report_free(&rep);
    cg_sample_source_free(src);
    cg_model_free(model);
    cli_inputs_free(&in);
    return rc;
}
