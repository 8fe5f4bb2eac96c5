/*
 * `convgate check MODEL [--json] [--quiet]`: loads a model and runs the
 * structural checker (include/convgate/check.h) on it, printing every
 * problem found. Exit 0 when the model has no errors (warnings allowed),
 * 1 when it has errors, 2 when it could not be loaded or on bad usage.
 */
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "convgate/check.h"
#include "convgate/model.h"
#include "report/report.h"

static void check_usage(FILE *f)
{
    fprintf(f,
            "Usage: convgate check MODEL [--json] [--quiet]\n"
            "\n"
            "Validates MODEL's structure. For ONNX: what onnx.checker\n"
            "(ONNX 1.12, without full_check) verifies, for ai.onnx opsets 1-21 and IR\n"
            "versions up to %d, plus convgate's hardening rules: graph outputs\n"
            "produced, tensor payload sizes and element-count overflow, sparse index\n"
            "order, subgraphs only on control-flow ops, Loop/Scan/If body arity,\n"
            "local-function cycles and training_info graphs. Every problem is listed\n"
            "with its location (graph, node name or #index, op type) and the\n"
            "offending value; the check does not stop at the first one.\n"
            "\n"
            "A .tflite MODEL (recognised by its \"TFL3\" identifier) is verified while it\n"
            "loads (every offset, vtable, vector, string, union and index; docs/tflite.md)\n"
            "and then checked: schema version, operator codes, tensor types and shapes\n"
            "against shape_signature, constant buffer sizes against shape x type,\n"
            "quantization parameters, options against their op, tensors read before they\n"
            "are produced, outputs never produced, IF/WHILE arity, signature defs;\n"
            "custom and Flex (SELECT_TF_OPS) ops are flagged.\n"
            "\n"
            "Options:\n"
            "  --json     the report as JSON (docs/json.md)\n"
            "  --quiet    print nothing; only the exit status tells\n"
            "  -h, --help show this help\n"
            "\n"
            "Exit status: 0 no errors (warnings allowed), 1 the model has errors,\n"
            "2 the model could not be loaded, or bad usage.\n",
            CG_CHECK_MAX_IR_VERSION);
}

int cmd_check(int argc, char **argv)
{
    static const struct option longopts[] = {{"json", no_argument, NULL, 'j'},
                                             {"quiet", no_argument, NULL, 'q'},
                                             {"help", no_argument, NULL, 'h'},
                                             {NULL, 0, NULL, 0}};
    bool quiet = false;
    int c;
    optind = 1;
    opterr = 0;
    while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
        switch (c) {
        case 'j': break;
        case 'q': quiet = true; break;
        case 'h': check_usage(stdout); return CG_EXIT_OK;
        default:
            cli_error("check", "unknown option '%s'", argv[optind - 1]);
            check_usage(stderr);
            return CG_EXIT_ERROR;
        }
    }
    if (optind != argc - 1) {
        cli_error("check", optind >= argc ? "no MODEL given" : "exactly one MODEL expected");
        check_usage(stderr);
        return CG_EXIT_ERROR;
    }
    const char *path = argv[optind];

    cg_load_options lo;
    cg_load_options_default(&lo);
    cli_model model;
    cg_error err;
    cg_error_clear(&err);
    if (!cli_load_any_quiet(path, &lo, &model, &err)) {
        if (!quiet || cli_json_on())
            cli_error("check", "cannot load '%s': %s", path, err.msg);
        return CG_EXIT_ERROR;
    }

    cg_check_report report;
    cg_error_clear(&err);
    cg_status st = model.tflite ? cg_tflite_check(model.tflite, NULL, &report, &err)
                                : cg_check_model(model.onnx, NULL, &report, &err);
    int rc = CG_EXIT_OK;
    if (st == CG_NOMEM || st == CG_USAGE) {
        if (!quiet)
            cli_error("check", "'%s': %s", path, err.msg);
        rc = CG_EXIT_ERROR;
    } else {
        rc = st == CG_OK ? CG_EXIT_OK : CG_EXIT_FAIL;
        if (cli_json_on())
            rc = cli_json_emit(rc, cg_report_check_json(path, &report));
        else if (!quiet)
            cg_report_check_text(stdout, path, &report);
    }
    cg_check_report_free(&report);
    cli_model_free(&model);
    return rc;
}
