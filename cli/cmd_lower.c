/*
 * convgate lower: the graph a runtime partitions (convgate/lower.h): what
 * its graph optimizations remove and add before placement, and the node
 * inventory of both graphs; -o writes that graph as a model.
 */
#include <getopt.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "convgate/lower.h"
#include "convgate/model.h"
#include "convgate/target.h"
#include "report/report.h"

static void lower_usage(FILE *f)
{
    fputs("Usage: convgate lower MODEL (--target T[,T2...] | --preprocess NAME)\n"
          "                      [--dim SYMBOL=VALUE]... [-o OUT.onnx] [--json] [--profiles DIR]\n"
          "\n"
          "The graph a runtime partitions: the profile's \"preprocess\" step (ONNX Runtime's\n"
          "Level-1 optimizations for the ORT execution providers, ...) applied to MODEL.\n"
          "Prints the node counts before and after, the nodes the runtime removes (by op and\n"
          "by transformation) and what the step does not model. Shapes come from one reference\n"
          "run (symbolic dims from --dim, else 1).\n"
          "\n"
          "Options:\n"
          "  --target T[,T2...]   the targets' declared preprocess (they must agree)\n"
          "  --preprocess NAME    a preprocess by name (`none`, `ort-basic`, ...)\n"
          "  --dim SYMBOL=VALUE   size of a symbolic input dim (repeatable)\n"
          "  -o, --output FILE    write the runtime's graph as an ONNX model\n"
          "  --json               the report as JSON (docs/json.md), with both graphs' op\n"
          "                       inventories\n"
          "  --profiles DIR       capability profiles directory\n"
          "\n"
          "Exit status: 0 done, 2 usage or input error.\n",
          f);
}

int cmd_lower(int argc, char **argv)
{
    static const struct option longopts[] = {CLI_OPTS_TARGETS,
                                             {"dim", required_argument, NULL, 0},
                                             {"preprocess", required_argument, NULL, 'P'},
                                             {"output", required_argument, NULL, 'o'},
                                             CLI_OPTS_END};
    const char *preprocess = NULL, *out = NULL;
    int rc = CG_EXIT_ERROR, c;
    cli_inputs in;
    cli_targets tg;
    cg_model *model = NULL;
    cg_lowered *low = NULL;
    cg_error err;
    cg_error_clear(&err);
    memset(&tg, 0, sizeof tg);
    cli_inputs_init(&in);

    bool started = false;
    while ((c = cli_next_option("lower", argc, argv, "o:h", longopts, &started, &in, &tg,
                                NULL)) != -1) {
        switch (c) {
        case 'P': preprocess = optarg; break;
        case 'o': out = optarg; break;
        case 'h': lower_usage(stdout); rc = CG_EXIT_OK; goto done;
        default: goto done;
        }
    }
    const char *path = cli_model_arg("lower", argc, argv, lower_usage);
    if (!path)
        goto done;
    if ((!preprocess) == (!tg.arg_count)) {
        cli_error("lower", "give either --target or --preprocess");
        goto done;
    }
    if (preprocess && !cg_lowering_known(preprocess)) {
        char known[256];
        size_t n = 0;
        known[0] = '\0';
        for (size_t i = 0; i < cg_lowering_count() && n < sizeof known; i++)
            n += (size_t)snprintf(known + n, sizeof known - n, "%s%s", i ? ", " : "",
                                  cg_lowering_name(i));
        cli_error("lower", "unknown preprocess '%s' (known: %s)", preprocess, known);
        goto done;
    }
    if (!(model = cli_model_for("lower", path, &in, &tg)))
        goto done;
    if (tg.count && cg_lowering_for_targets(tg.list, tg.count, &preprocess, &err) != CG_OK) {
        cli_error("lower", "%s", err.msg);
        goto done;
    }
    if (cg_lower(model, preprocess, in.dims, in.dim_count, &low, &err) != CG_OK) {
        cli_error("lower", "%s: %s", path, err.msg);
        goto done;
    }
    if (out && cg_model_save(low->model, out, NULL, &err) != CG_OK) {
        cli_error("lower", "%s", err.msg);
        goto done;
    }
    rc = CG_EXIT_OK;
    if (cli_json_on()) {
        json_t *root = cg_lowered_report_json(low);
        if (root)
            cg_json_set(root, "model", cg_json_text(path));
        rc = cli_json_emit(rc, root);
    } else {
        printf("%s\n", path);
        cg_lowered_report_text(stdout, low);
    }
    fflush(stdout);
done:
    cg_lowered_free(low);
    cli_targets_free(&tg);
    cg_model_free(model);
    cli_inputs_free(&in);
    return rc;
}
