/*
 * convgate rewrite: the verified rewrites a target needs (src/rewrite
 * computes, src/report/rewrite.c renders): cleanups, the compatibility
 * rewrites for the nodes the target refuses, the precision rewrites an
 * fp16 target needs; each verified against the original before it is kept.
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "convgate/model.h"
#include "convgate/rewrite.h"
#include "report/report.h"


static void rewrite_usage(FILE *f)
{
    fputs("Usage: convgate rewrite MODEL --target T[,T2...] (-o OUT.onnx | --what-if)\n"
          "                        [--only NAME,...] [--opt-in NAME,...] [--inputs DIR |\n"
          "                        --random N] [--dim SYM=VAL]... [--seed S] [--range ...]\n"
          "                        [--accumulate fp16|fp32] [--all] [--profiles DIR] [--json]\n"
          "       convgate rewrite --list [--json]\n"
          "\n"
          "Applies what the target needs, from a catalog of named rewrites (--list;\n"
          "docs/rewrites.md): the cleanups (constant folding, Identity/Dropout, BatchNorm\n"
          "folding, shape folding once --dim fixes the dims, dead nodes, CSE), the\n"
          "compatibility rewrites for nodes the target refuses (kept only when the target\n"
          "then takes more of the model), and for fp16 targets the precision rewrites\n"
          "where the samples show a sum or sum of squares leaving fp16's range.\n"
          "\n"
          "Every rewrite is verified before it is kept: the rewritten model against the\n"
          "original on the reference runtime over the samples, bit-identical or within\n"
          "the original's fp32 noise floor (convgate noise). A rewrite that fails is not\n"
          "applied and the report says why.\n"
          "\n"
          "  -o, --output OUT     write the rewritten model\n"
          "  --what-if            write nothing: list each rewrite that applies and the\n"
          "                       residency, partitions and mixed-latency estimate after it\n"
          "  --only NAME,...      only these rewrites, wherever their precondition holds\n"
          "                       (needed by the target or not)\n"
          "  --opt-in NAME,...    accept these rewrites that change numerics (gelu-tanh,\n"
          "                       gelu-sigmoid); their measured error is reported\n"
          "  --list               the catalog\n"
          "  --all                also list the rewrites that match nowhere\n"
          "  --accumulate fp16|fp32  how fp16 targets accumulate on the target path that\n"
          "                       judges the precision rewrites (default: as the profile\n"
          "                       says; litert-gpu: fp32, measured)\n"
          "  --inputs DIR         verify on an input folder (see below)\n"
          "  --random N           verify on N random samples (default 3)\n"
          CLI_HELP_INPUT_OPTIONS
          "  --json               the report as JSON (docs/json.md)\n"
          "\n" CLI_HELP_INPUT_FOLDERS
          "\n"
          "Exit status: 0 done; 1 some rewrite the model matched was refused or failed;\n"
          "2 usage or input error.\n",
          f);
    fputs("\n" CLI_LIMITS_HELP, f);
}

typedef struct rewrite_args {
    const char *model_path, *out;
    bool what_if, list, all;
    cli_rewrite_args rw;
    cli_inputs in;
    cli_targets tg;
} rewrite_args;

static int parse_args(int argc, char **argv, rewrite_args *a)
{
    static const struct option longopts[] = {CLI_OPTS_TARGETS,
                                              CLI_OPTS_INPUTS,
                                              {"output", required_argument, NULL, 'o'},
                                              {"what-if", no_argument, NULL, 'w'},
                                              {"list", no_argument, NULL, 'l'},
                                              {"all", no_argument, NULL, 'a'},
                                              CLI_OPTS_REWRITE,
                                              CLI_OPTS_ACCUMULATE,
                                              CLI_OPTS_END};
    int c;
    bool started = false;
    while ((c = cli_next_option("rewrite", argc, argv, "ho:", longopts, &started, &a->in, &a->tg,
                                NULL)) != -1) {
        switch (c) {
        case 'o': a->out = optarg; break;
        case 'w': a->what_if = true; break;
        case 'l': a->list = true; break;
        case 'a': a->all = true; break;
        case 'h': rewrite_usage(stdout); return -1;
        default:
            if (cli_rewrite_option("rewrite", c, optarg, &a->rw) <= 0)
                return CG_EXIT_ERROR;
        }
    }
    if (a->list)
        return optind == argc ? CG_EXIT_OK : (cli_error("rewrite", "--list takes no model"),
                                               CG_EXIT_ERROR);
    if (!(a->model_path = cli_model_arg("rewrite", argc, argv, rewrite_usage)) ||
        !cli_targets_required("rewrite", &a->tg))
        return CG_EXIT_ERROR;
    if (!a->out == !a->what_if) {
        cli_error("rewrite", "give -o OUT to write the result, or --what-if to write nothing");
        return CG_EXIT_ERROR;
    }
    return cli_rewrite_check("rewrite", &a->rw) ? CG_EXIT_OK : CG_EXIT_ERROR;
}

int cmd_rewrite(int argc, char **argv)
{
    rewrite_args a;
    cg_model *model = NULL;
    cg_sample_set samples = {0};
    cg_rewrite_result res;
    cg_error err;
    char desc[4200];
    int rc;
    memset(&a, 0, sizeof a);
    memset(&res, 0, sizeof res);
    cli_inputs_init(&a.in);
    cg_error_clear(&err);
    if ((rc = parse_args(argc, argv, &a)) != CG_EXIT_OK) {
        rc = rc < 0 ? CG_EXIT_OK : rc;
        goto done;
    }
    if (a.list) {
        if (cli_json_on())
            rc = cli_json_emit(CG_EXIT_OK, cg_report_rewrite_catalog_json());
        else
            cg_report_rewrite_catalog_text(stdout);
        goto done;
    }
    rc = CG_EXIT_ERROR;
    if (!(model = cli_model_for("rewrite", a.model_path, &a.in, &a.tg)) ||
        !cli_onnx_graph_only("rewrite", a.model_path, model) ||
        !cli_samples_load("rewrite", model, a.model_path, NULL, a.rw.inputs, a.rw.random_n, 3, &a.in,
                          &samples, desc, sizeof desc))
        goto done;
    cg_rewrite_options o;
    memset(&o, 0, sizeof o);
    o.targets = a.tg.list;
    o.target_count = a.tg.count;
    o.dims = a.in.dims;
    o.dim_count = a.in.dim_count;
    o.random = &a.in.random;
    o.samples = &samples;
    o.samples_fed = a.rw.inputs != NULL;
    o.only = (const char *const *)a.rw.only;
    o.only_count = a.rw.only_count;
    o.opt_in = (const char *const *)a.rw.opt_in;
    o.opt_in_count = a.rw.opt_in_count;
    o.accumulate = a.tg.accumulate;
    o.what_if = a.what_if;
    if (cg_rewrite_run(model, &o, &res, &err) != CG_OK) {
        cli_error("rewrite", "%s", err.msg);
        goto done;
    }
    if (a.out && cg_model_save(res.model, a.out, NULL, &err) != CG_OK) {
        cli_error("rewrite", "%s", err.msg);
        goto done;
    }
    rc = CG_EXIT_OK;
    for (size_t i = 0; i < res.step_count; i++)
        if (res.steps[i].outcome == CG_STEP_REFUSED || res.steps[i].outcome == CG_STEP_FAILED)
            rc = CG_EXIT_FAIL;
    cg_rewrite_view v = {"rewrite", a.model_path, a.tg.label, a.out, desc, a.what_if, a.all};
    if (cli_json_on()) {
        rc = cli_json_emit(rc, cg_report_rewrite_json(&res, &v));
    } else {
        cg_report_rewrite_text(stdout, &res, &v);
        if (a.out)
            printf("wrote %s\n", a.out);
    }
done:
    cg_rewrite_result_free(&res);
    cg_sample_set_free(&samples);
    cg_model_free(model);
    cli_targets_free(&a.tg);
    cli_inputs_free(&a.in);
    cli_rewrite_args_free(&a.rw);
    return rc;
}
