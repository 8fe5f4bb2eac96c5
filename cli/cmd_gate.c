/*
 * convgate gate: the three gates in order (converts, runs where intended,
 * matches), stopping at the first that fails, then a verdict block and
 * optionally a JSON report for CI (src/verify/gate.c does the work).
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "convgate/gate.h"
#include "convgate/model.h"
#include "target/registry.h"

#define GATE_MAX_TARGETS 16
#define GATE_MAX_DIMS 64
#define GATE_MAX_RANDOM 10000

static void gate_usage(FILE *f)
{
    fputs("Usage: convgate gate MODEL --target T[,T2...] [--golden DIR | --inputs DIR |\n"
          "                     --random N [--seed S]] [--require-full] [--dim SYM=VAL]...\n"
          "                     [--atol X --rtol Y] [--accumulate fp16|fp32]\n"
          "                     [--profiles DIR] [--json FILE|-]\n"
          "\n"
          "Runs the three gates in order and stops at the first that fails:\n"
          "  1 converts              the checker passes (convgate check)\n"
          "  2 runs where intended   placement on the targets (convgate assign): residency,\n"
          "                          partitions, boundaries, share of reference time on the\n"
          "                          targets; fails when a target without CPU fallback\n"
          "                          refuses a node, and under --require-full when anything\n"
          "                          falls back to the CPU (or forms a second partition)\n"
          "  3 matches               the target path's outputs against the reference runtime\n"
          "                          on every sample; on a failure, bisection names the first\n"
          "                          divergent tensor and triages it (convgate bisect)\n"
          "\n"
          "Samples:\n"
          "  --inputs DIR     input sets: DIR/test_data_set_N/input_K.pb, DIR/<set>/<input>.npy,\n"
          "                   DIR/<set>.npz, DIR/<input>_N.npy, or DIR/<input>.npy\n"
          "  --golden DIR     a golden set (convgate dump-ref): its hashes are checked and the\n"
          "                   target path is compared to its stored outputs\n"
          "  --random N       N sets of seeded random inputs (default: 3)\n"
          "  --seed S         seed for --random (default 0)\n"
          "  --dim SYM=VAL    symbolic input dim (repeatable; unbound symbols are 1)\n"
          "\n"
          "Tolerance: |target - ref| <= atol + rtol*|ref| elementwise; default atol 1e-5,\n"
          "rtol 1e-4, or atol 2.5e-3, rtol 1e-3 when a partition computes in fp16.\n"
          "  --accumulate fp32   fp16 targets accumulate reductions in fp32 (default: as the\n"
          "                      profile says)\n"
          "  --json FILE|-       also write the JSON report to FILE (- : stdout, text then\n"
          "                      goes to stderr)\n"
          "\n"
          "Exit status: 0 all gates pass, 1 a gate failed, 2 usage or input error.\n",
          f);
}

int cmd_gate(int argc, char **argv)
{
    static const struct option longopts[] = {{"target", required_argument, NULL, 't'},
                                              {"golden", required_argument, NULL, 'g'},
                                              {"inputs", required_argument, NULL, 'i'},
                                              {"random", required_argument, NULL, 'r'},
                                              {"seed", required_argument, NULL, 's'},
                                              {"dim", required_argument, NULL, 'd'},
                                              {"require-full", no_argument, NULL, 'F'},
                                              {"atol", required_argument, NULL, 'a'},
                                              {"rtol", required_argument, NULL, 'R'},
                                              {"accumulate", required_argument, NULL, 'A'},
                                              {"profiles", required_argument, NULL, 'p'},
                                              {"json", required_argument, NULL, 'j'},
                                              {"help", no_argument, NULL, 'h'},
                                              {NULL, 0, NULL, 0}};
    char *target_args[GATE_MAX_TARGETS];
    size_t target_arg_count = 0, dim_count = 0, target_count = 0;
    cg_dim_binding dims[GATE_MAX_DIMS];
    const cg_target *targets[GATE_MAX_TARGETS];
    const char *golden = NULL, *inputs = NULL, *profiles = NULL, *json_path = NULL;
    uint64_t random_n = 0, seed = 0;
    bool atol_set = false, rtol_set = false;
    cg_gate_options opt;
    cg_gate_report rep;
    cg_sample_set samples = {0};
    cg_target_registry *reg = NULL;
    cg_model *model = NULL;
    char desc[4200];
    int rc = CG_EXIT_ERROR, c;
    cg_error err;
    cg_error_clear(&err);
    memset(&opt, 0, sizeof opt);
    memset(&rep, 0, sizeof rep);

    optind = 1;
    while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
        switch (c) {
        case 't':
            if (target_arg_count == GATE_MAX_TARGETS) {
                cli_error("gate", "too many --target options");
                goto done;
            }
            target_args[target_arg_count++] = optarg;
            break;
        case 'g': golden = optarg; break;
        case 'i': inputs = optarg; break;
        case 'r':
            if (!cli_parse_count(optarg, GATE_MAX_RANDOM, &random_n) || random_n == 0) {
                cli_error("gate", "--random expects a count in [1, %d], got '%s'",
                          GATE_MAX_RANDOM, optarg);
                goto done;
            }
            break;
        case 's':
            if (!cli_parse_count(optarg, UINT64_MAX, &seed)) {
                cli_error("gate", "--seed expects a non-negative integer, got '%s'", optarg);
                goto done;
            }
            break;
        case 'd':
            if (!cli_parse_dim("gate", optarg, dims, &dim_count,
                               GATE_MAX_DIMS))
                goto done;
            break;
        case 'F': opt.require_full = true; break;
        case 'a':
            if (!cli_parse_double(optarg, &opt.tol.atol)) {
                cli_error("gate", "--atol expects a number >= 0, got '%s'", optarg);
                goto done;
            }
            atol_set = true;
            break;
        case 'R':
            if (!cli_parse_double(optarg, &opt.tol.rtol)) {
                cli_error("gate", "--rtol expects a number >= 0, got '%s'", optarg);
                goto done;
            }
            rtol_set = true;
            break;
        case 'A':
            if (strcmp(optarg, "fp32") == 0)
                opt.accumulate_fp32 = true;
            else if (strcmp(optarg, "fp16") != 0) {
                cli_error("gate", "--accumulate expects fp16 or fp32, got '%s'", optarg);
                goto done;
            }
            break;
        case 'p': profiles = optarg; break;
        case 'j': json_path = optarg; break;
        case 'h': gate_usage(stdout); rc = CG_EXIT_OK; goto done;
        default: gate_usage(stderr); goto done;
        }
    }
    if (optind + 1 != argc) {
        cli_error("gate", optind >= argc ? "no model given" : "one model at a time");
        gate_usage(stderr);
        goto done;
    }
    if (!target_arg_count) {
        cli_error("gate", "--target is required (`convgate targets` lists them)");
        goto done;
    }
    if ((golden != NULL) + (inputs != NULL) + (random_n != 0) > 1) {
        cli_error("gate", "give one of --golden, --inputs, --random");
        goto done;
    }
    if (atol_set != rtol_set) {
        cli_error("gate", "give --atol and --rtol together");
        goto done;
    }
    opt.tol_given = atol_set;
    if (opt.tol_given)
        opt.tol.justification = "from --atol/--rtol";

    if ((model = cli_load_model("gate", argv[optind], NULL)) == NULL)
        goto done;
    if (cg_target_registry_load(profiles, &reg, &err) != CG_OK) {
        cli_error("gate", "%s", err.msg);
        goto done;
    }
    if (!cli_resolve_targets("gate", reg, target_args, target_arg_count, targets, &target_count,
                             GATE_MAX_TARGETS))
        goto done;

    if (golden) {
        if (strcmp(argv[optind], "-") == 0) {
            cli_error("gate", "--golden needs the model file (its hash is checked), not stdin");
            goto done;
        }
        if (cg_samples_load_golden(model, argv[optind], golden, 0, &samples, &err) != CG_OK) {
            cli_error("gate", "golden set %s: %s", golden, err.msg);
            goto done;
        }
        snprintf(desc, sizeof desc, "%zu golden set%s from %s (outputs compared to the golden "
                 "outputs)", samples.count, samples.count == 1 ? "" : "s", golden);
    } else if (inputs) {
        if (cg_samples_load_dir(model, inputs, 0, &samples, &err) != CG_OK) {
            cli_error("gate", "%s", err.msg);
            goto done;
        }
        snprintf(desc, sizeof desc, "%zu set%s from %s", samples.count,
                 samples.count == 1 ? "" : "s", inputs);
    } else {
        if (!random_n)
            random_n = 3;
        if (cg_samples_random(model, (size_t)random_n, seed, dims, dim_count, 0, &samples,
                              &err) != CG_OK) {
            cli_error("gate", "%s", err.msg);
            goto done;
        }
        snprintf(desc, sizeof desc, "%zu random set%s, seed %" PRIu64, samples.count,
                 samples.count == 1 ? "" : "s", seed);
    }

    opt.targets = targets;
    opt.target_count = target_count;
    opt.dims = dims;
    opt.dim_count = dim_count;
    opt.samples = &samples;
    opt.samples_desc = desc;
    if (cg_gate_run(model, argv[optind], &opt, &rep, &err) != CG_OK) {
        cli_error("gate", "%s", err.msg);
        goto done;
    }
    bool json_stdout = json_path && strcmp(json_path, "-") == 0;
    FILE *text = json_stdout ? stderr : stdout;
    cg_gate_report_text(text, &rep);
    fprintf(text, "(samples: %s)\n", desc);
    if (json_path) {
        json_t *root = cg_gate_report_json(&rep);
        if (root)
            json_object_set_new(root, "samples_source", json_string(desc));
        int jrc = !root ? -1
                  : json_stdout
                      ? json_dumpf(root, stdout, JSON_INDENT(2) | JSON_REAL_PRECISION(9))
                      : json_dump_file(root, json_path, JSON_INDENT(2) | JSON_REAL_PRECISION(9));
        if (json_stdout)
            fputc('\n', stdout);
        json_decref(root);
        if (jrc != 0) {
            cli_error("gate", "could not write the JSON report to %s", json_path);
            goto done;
        }
    }
    rc = rep.pass ? CG_EXIT_OK : CG_EXIT_FAIL;
done:
    cg_gate_report_free(&rep);
    cg_sample_set_free(&samples);
    cg_target_registry_free(reg);
    cg_model_free(model);
    for (size_t k = 0; k < dim_count; k++)
        free((char *)dims[k].symbol);
    return rc;
}
