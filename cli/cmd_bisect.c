/*
 * convgate bisect: the first intermediate tensor, in topological order,
 * where the target path (or, with --against, a second model with the same
 * value names, such as a rewrite) diverges from the reference runtime,
 * with the node, its inputs, the metrics there, the last tensor that still
 * matched, and a triage (src/verify/bisect.c).
 */
#include <errno.h>
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
#include "target/registry.h"

#define BISECT_MAX_TARGETS 16
#define BISECT_MAX_DIMS 64

static void bisect_usage(FILE *f)
{
    fputs("Usage: convgate bisect MODEL (--target T[,T2...] | --against MODEL2)\n"
          "                       [--inputs DIR [--sample N] | --random [--seed S]]\n"
          "                       [--dim SYM=VAL]... [--atol X --rtol Y]\n"
          "                       [--accumulate fp16|fp32] [--no-triage] [--profiles DIR]\n"
          "                       [--json]\n"
          "\n"
          "Runs the reference runtime and the target path side by side on one input set\n"
          "and names the first intermediate tensor, in topological order, where the target\n"
          "path is beyond tolerance: the node, its op, its inputs' dtypes and shapes, the\n"
          "metrics there, and the last tensor that still matched. Only tensors both sides\n"
          "expose are compared (values inside a target's partition are not). Memory stays\n"
          "near two runs: no side keeps its intermediates.\n"
          "\n"
          "Triage: a target path that computes in fp16 is rerun in fp32 and the tensor\n"
          "compared again: a match means precision loss (fp16), a mismatch a wrong kernel\n"
          "or rewrite.\n"
          "\n"
          "Options:\n"
          "  --target T[,T2]  targets in priority order\n"
          "  --against MODEL2 compare MODEL against MODEL2 (same input and value names),\n"
          "                   both on the reference runtime (or on --target's path)\n"
          "  --inputs DIR     input sets (see convgate gate --help); --sample N picks one\n"
          "                   (default 0)\n"
          "  --random         seeded random inputs (the default); --seed S (default 0)\n"
          "  --dim SYM=VAL    symbolic input dim (repeatable; unbound symbols are 1)\n"
          "  --atol/--rtol    tolerance (default: compare's, for fp32 or fp16 compute)\n"
          "  --json           the result as JSON\n"
          "\n"
          "Exit status: 0 no tensor diverges, 1 a divergent tensor was found, 2 usage or\n"
          "input error.\n",
          f);
}

int cmd_bisect(int argc, char **argv)
{
    static const struct option longopts[] = {{"target", required_argument, NULL, 't'},
                                              {"against", required_argument, NULL, 'c'},
                                              {"inputs", required_argument, NULL, 'i'},
                                              {"sample", required_argument, NULL, 'n'},
                                              {"random", no_argument, NULL, 'r'},
                                              {"seed", required_argument, NULL, 's'},
                                              {"dim", required_argument, NULL, 'd'},
                                              {"atol", required_argument, NULL, 'a'},
                                              {"rtol", required_argument, NULL, 'R'},
                                              {"accumulate", required_argument, NULL, 'A'},
                                              {"no-triage", no_argument, NULL, 'T'},
                                              {"profiles", required_argument, NULL, 'p'},
                                              {"json", no_argument, NULL, 'j'},
                                              {"help", no_argument, NULL, 'h'},
                                              {NULL, 0, NULL, 0}};
    char *target_args[BISECT_MAX_TARGETS];
    size_t target_arg_count = 0, dim_count = 0, target_count = 0;
    cg_dim_binding dims[BISECT_MAX_DIMS];
    const cg_target *targets[BISECT_MAX_TARGETS];
    const char *inputs = NULL, *profiles = NULL, *against = NULL;
    uint64_t seed = 0, sample = 0;
    bool json = false, triage = true, atol_set = false, rtol_set = false, random = false;
    bool accumulate_fp32 = false;
    cg_tolerance tol;
    cg_sample_set samples = {0};
    cg_target_registry *reg = NULL;
    cg_model *model = NULL, *cand = NULL;
    cg_target_path_options po;
    cg_bisect_options bo;
    cg_bisect_result res;
    int rc = CG_EXIT_ERROR, c;
    cg_error err;
    cg_error_clear(&err);
    memset(&tol, 0, sizeof tol);
    memset(&po, 0, sizeof po);
    memset(&bo, 0, sizeof bo);
    memset(&res, 0, sizeof res);

    optind = 1;
    while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
        switch (c) {
        case 't':
            if (target_arg_count == BISECT_MAX_TARGETS) {
                cli_error("bisect", "too many --target options");
                goto done;
            }
            target_args[target_arg_count++] = optarg;
            break;
        case 'c': against = optarg; break;
        case 'i': inputs = optarg; break;
        case 'n':
            if (!cli_parse_count(optarg, SIZE_MAX, &sample)) {
                cli_error("bisect", "--sample expects an index, got '%s'", optarg);
                goto done;
            }
            break;
        case 'r': random = true; break;
        case 's':
            if (!cli_parse_count(optarg, UINT64_MAX, &seed)) {
                cli_error("bisect", "--seed expects a non-negative integer, got '%s'", optarg);
                goto done;
            }
            break;
        case 'd':
            if (!cli_parse_dim("bisect", optarg, dims, &dim_count,
                               BISECT_MAX_DIMS))
                goto done;
            break;
        case 'a':
            if (!cli_parse_double(optarg, &tol.atol)) {
                cli_error("bisect", "--atol expects a number >= 0, got '%s'", optarg);
                goto done;
            }
            atol_set = true;
            break;
        case 'R':
            if (!cli_parse_double(optarg, &tol.rtol)) {
                cli_error("bisect", "--rtol expects a number >= 0, got '%s'", optarg);
                goto done;
            }
            rtol_set = true;
            break;
        case 'A':
            if (strcmp(optarg, "fp32") == 0)
                accumulate_fp32 = true;
            else if (strcmp(optarg, "fp16") != 0) {
                cli_error("bisect", "--accumulate expects fp16 or fp32, got '%s'", optarg);
                goto done;
            }
            break;
        case 'T': triage = false; break;
        case 'p': profiles = optarg; break;
        case 'j': json = true; break;
        case 'h': bisect_usage(stdout); rc = CG_EXIT_OK; goto done;
        default: bisect_usage(stderr); goto done;
        }
    }
    if (optind + 1 != argc) {
        cli_error("bisect", optind >= argc ? "no model given" : "one model at a time");
        bisect_usage(stderr);
        goto done;
    }
    if (!target_arg_count && !against) {
        cli_error("bisect", "give --target T (or --against MODEL2)");
        goto done;
    }
    if (inputs && random) {
        cli_error("bisect", "give --inputs or --random, not both");
        goto done;
    }
    if (atol_set != rtol_set) {
        cli_error("bisect", "give --atol and --rtol together");
        goto done;
    }
    if ((model = cli_load_model("bisect", argv[optind], NULL)) == NULL)
        goto done;
    if (against && (cand = cli_load_model("bisect", against, NULL)) == NULL)
        goto done;
    if (target_arg_count) {
        if (cg_target_registry_load(profiles, &reg, &err) != CG_OK) {
            cli_error("bisect", "%s", err.msg);
            goto done;
        }
        if (!cli_resolve_targets("bisect", reg, target_args, target_arg_count, targets, &target_count,
                                 BISECT_MAX_TARGETS))
            goto done;
    }
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
    } else if (cg_samples_random(model, 1, seed, dims, dim_count, 0, &samples, &err) != CG_OK) {
        cli_error("bisect", "%s", err.msg);
        goto done;
    } else {
        sample = 0;
    }

    cg_dim_binding bound[BISECT_MAX_DIMS];
    po.targets = targets;
    po.target_count = target_count;
    po.dims = bound;
    po.dim_count = cg_sample_dims(model, dims, dim_count, &samples.samples[sample], bound,
                                  BISECT_MAX_DIMS);
    po.accumulate_fp32 = accumulate_fp32;
    bo.reference.model = model;
    bo.candidate.model = cand ? cand : model;
    bo.candidate.path = target_count ? &po : NULL;
    bo.triage = triage;
    if (atol_set) {
        bo.tol = tol;
        bo.tol.justification = "from --atol/--rtol";
    } else {
        /* the path's precision decides the default; build it once to ask */
        bool reduced = false;
        if (target_count) {
            cg_target_path *p = NULL;
            if (cg_target_path_init(bo.candidate.model, &po, &p, &err) != CG_OK) {
                cli_error("bisect", "%s", err.msg);
                goto done;
            }
            reduced = cg_target_path_reduced_precision(p);
            cg_target_path_free(p);
        }
        cg_tolerance_default(&bo.tol, reduced);
    }
    const cg_sample *s = &samples.samples[sample];
    if (cg_bisect_run(&bo, s->inputs, s->input_count, &res, &err) != CG_OK) {
        cli_error("bisect", "%s", err.msg);
        goto done;
    }
    if (json) {
        json_t *root = cg_bisect_report_json(&res);
        if (!root) {
            cli_error("bisect", "out of memory");
            goto done;
        }
        json_object_set_new(root, "model", json_string(argv[optind]));
        json_object_set_new(root, "candidate", against ? json_string(against) : json_null());
        json_object_set_new(root, "sample", json_string(s->label));
        json_object_set_new(root, "atol", json_real(bo.tol.atol));
        json_object_set_new(root, "rtol", json_real(bo.tol.rtol));
        if (target_count) {
            json_t *tl = json_array();
            for (size_t t = 0; tl && t < target_count; t++)
                json_array_append_new(tl, json_string(targets[t]->name));
            json_object_set_new(root, "targets", tl ? tl : json_null());
        }
        json_dumpf(root, stdout, JSON_INDENT(2) | JSON_REAL_PRECISION(9));
        fputc('\n', stdout);
        json_decref(root);
    } else {
        printf("convgate bisect %s against %s on %s (atol %g, rtol %g)\n", argv[optind],
               against ? against : "the target path", s->label, bo.tol.atol, bo.tol.rtol);
        cg_bisect_report_text(stdout, &res, "");
    }
    rc = res.diverged ? CG_EXIT_FAIL : CG_EXIT_OK;
done:
    cg_bisect_result_free(&res);
    cg_sample_set_free(&samples);
    cg_target_registry_free(reg);
    cg_model_free(cand);
    cg_model_free(model);
    for (size_t k = 0; k < dim_count; k++)
        free((char *)dims[k].symbol);
    return rc;
}
