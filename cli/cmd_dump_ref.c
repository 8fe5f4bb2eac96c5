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
#include "convgate/noise.h"
#include "convgate/runtime.h"
#include "convgate/samples.h"
#include "report/json.h"
#include "core/text.h"

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
    bool force = false, floors = true;
    int rc = CG_EXIT_ERROR, c;
    cli_inputs in;
    cg_model *model = NULL;
    cg_runtime *rt = NULL;
    cg_noise *noise = NULL;
    cg_golden_writer *w = NULL;
    cg_sample_source *src = NULL;
    cg_sample s;
    size_t out_count = 0;
    json_t *sets = json_array();
    cg_error err;
    cg_error_clear(&err);
    cli_inputs_init(&in);
    memset(&s, 0, sizeof s);

    bool started = false;
    while ((c = cli_next_option("dump-ref", argc, argv, "ho:", longopts, &started,
                                &in, NULL, NULL)) != -1) {
        switch (c) {
        case 'i': inputs_dir = optarg; break;
        case 'o': golden_dir = optarg; break;
        case 'f': force = true; break;
        case 'N': floors = false; break;
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
    cg_runtime_options ro;
    cg_runtime_options_default(&ro);
    ro.strict_output_shapes = true; /* verification: a contradicted declaration fails */
    cg_status st = inputs_dir ? cg_sample_source_open_dir(model, inputs_dir, 0, &src, &err)
                              : cg_sample_source_open_random(model, (size_t)random_count,
                                                             &in.random, in.dims, in.dim_count,
                                                             0, &src, &err);
    cg_noise_options no;
    memset(&no, 0, sizeof no);
    no.fp16 = true;
    if (st == CG_OK && floors && (st = cg_noise_init(model, &no, &noise, &err)) != CG_OK) {
        cli_error("dump-ref", "%s", err.msg);
        rc = st == CG_UNSUPPORTED || st == CG_RUNTIME ? CG_EXIT_FAIL : CG_EXIT_ERROR;
        goto done;
    }
    if (st == CG_OK && !floors && (st = cg_runtime_init(model, &ro, &rt, &err)) != CG_OK) {
        cli_error("dump-ref", "%s", err.msg);
        rc = st == CG_UNSUPPORTED || st == CG_RUNTIME ? CG_EXIT_FAIL : CG_EXIT_ERROR;
        goto done;
    }
    if (st != CG_OK ||
        cg_golden_writer_init(golden_dir, model_path, model, force, &w, &err) != CG_OK) {
        cli_error("dump-ref", "%s", err.msg);
        goto done;
    }
    for (size_t i = 0; i < cg_sample_source_count(src); i++) {
        const char *written = NULL;
        if (cg_sample_source_load(src, i, &s, &err) != CG_OK) {
            cli_error("dump-ref", "%s", err.msg);
            goto done;
        }
        bool ran;
        if (cg_golden_writer_run(w, rt, noise, &s, &written, &out_count, &ran, &err) != CG_OK) {
            cli_error("dump-ref", "%s", err.msg);
            /* the model failing on the set is exit 1; a bad input or the writer, 2 */
            rc = !ran && err.status != CG_USAGE ? CG_EXIT_FAIL : CG_EXIT_ERROR;
            goto done;
        }
        if (!cli_json_on())
            cg_text_printf(stdout, "set '%s': %zu input%s, %zu output%s\n", written, s.input_count,
                           s.input_count == 1 ? "" : "s", out_count, out_count == 1 ? "" : "s");
        json_t *js = json_object();
        cg_json_set(js, "name", cg_json_text(written));
        cg_json_set(js, "inputs", json_integer((json_int_t)s.input_count));
        cg_json_set(js, "outputs", json_integer((json_int_t)out_count));
        json_array_append_new(sets, js);
        cg_sample_clear(&s);
    }
    if (cg_golden_writer_finish(w, &err) != CG_OK) {
        cli_error("dump-ref", "%s", err.msg);
        goto done;
    }
    rc = CG_EXIT_OK;
    if (cli_json_on()) {
        json_t *root = json_object();
        cg_json_set(root, "model", cg_json_text(model_path));
        cg_json_set(root, "golden", cg_json_text(golden_dir));
        cg_json_set(root, "sets", json_incref(sets));
        rc = cli_json_emit(rc, root);
    } else {
        cg_text_printf(stdout, "wrote %zu set%s to %s/manifest.json\n", cg_sample_source_count(src),
                       cg_sample_source_count(src) == 1 ? "" : "s", golden_dir);
    }
done:
    json_decref(sets);
    cg_sample_clear(&s);
    cg_sample_source_free(src);
    cg_golden_writer_free(w);
    cg_runtime_free(rt);
    cg_noise_free(noise);
    cg_model_free(model);
    cli_inputs_free(&in);
    return rc;
}
