/* convgate inspect: the model's contract at a glance (src/report/inspect.c). */
#include <getopt.h>
#include <stdlib.h>

#include "cli.h"
#include "convgate/inspect.h"
#include "convgate/model.h"
#include "report/report.h"

static void inspect_usage(FILE *f)
{
    fprintf(f,
            "Usage: convgate inspect MODEL [--json] [--top N]\n"
            "       (MODEL - reads the model from standard input)\n"
            "\n"
            "Shows what to check first about an ONNX model: IR version, producer, opset\n"
            "imports, the input/output contract (names, dtypes, shapes; symbolic dims by\n"
            "name and flagged as dynamic), initializer count and bytes, the op inventory\n"
            "with each op's resolved since_version, custom-domain and control-flow ops,\n"
            "and the largest tensors. Weights are memory-mapped, never copied.\n"
            "\n"
            "A .tflite MODEL (recognised by its \"TFL3\" identifier) shows its subgraphs,\n"
            "the contract (dims that shape_signature marks -1 flagged as dynamic),\n"
            "signature defs, constant buffers (those stored past the FlatBuffer too),\n"
            "quantization, operator codes with their versions, custom and Flex\n"
            "(SELECT_TF_OPS) ops, control flow and metadata; --json adds every tensor.\n"
            "\n"
            "Options:\n"
            "  --json      machine-readable report: docs/json.md's envelope, its result\n"
            "              as docs/inspect-json.md says\n"
            "  --top N     list the N largest initializers (default 10)\n"
            "  -h, --help  this help\n"
            "\n"
            "Exit status: 0 printed, 2 the model could not be loaded.\n");
}

int cmd_inspect(int argc, char **argv)
{
    static const struct option longopts[] = {{"json", no_argument, NULL, 'j'},
                                             {"top", required_argument, NULL, 't'},
                                             {"help", no_argument, NULL, 'h'},
                                             {NULL, 0, NULL, 0}};
    bool json = false;
    cg_inspect_options opt = {10};
    int c;
    bool started = false;
    while ((c = cli_next_option("inspect", argc, argv, "jt:h", longopts, &started, NULL, NULL,
                                NULL)) != -1) {
        switch (c) {
        case 'j': json = true; break;
        case 't': {
            char *end;
            long v = strtol(optarg, &end, 10);
            if (*end || v < 0 || v > 1000000) {
                cli_error("inspect", "--top expects a count, got '%s'", optarg);
                return CG_EXIT_ERROR;
            }
            opt.top_tensors = (int)v;
            break;
        }
        case 'h': inspect_usage(stdout); return CG_EXIT_OK;
        default: inspect_usage(stderr); return CG_EXIT_ERROR;
        }
    }
    const char *path = cli_model_arg("inspect", argc, argv, inspect_usage);
    if (!path)
        return CG_EXIT_ERROR;
    cg_error err;
    cg_error_clear(&err);
    cli_model model;
    if (!cli_load_any_quiet(path, NULL, &model, &err)) {
        cli_error("inspect", "%s", err.msg);
        return CG_EXIT_ERROR;
    }
    int rc = CG_EXIT_OK;
    if (json) {
        json_t *r = model.tflite ? cg_report_inspect_tflite_json(model.tflite, &opt, &err)
                                 : cg_report_inspect_json(model.onnx, &opt, &err);
        if (r)
            rc = cli_json_emit(rc, r);
        else
            cli_error("inspect", "%s", err.msg[0] ? err.msg : "out of memory");
        rc = r ? rc : CG_EXIT_ERROR;
    } else if ((model.tflite ? cg_inspect_write_tflite(model.tflite, &opt, false, stdout, &err)
                             : cg_inspect_write(model.onnx, &opt, false, stdout, &err)) != CG_OK) {
        cli_error("inspect", "%s", err.msg);
        rc = CG_EXIT_ERROR;
    }
    cli_model_free(&model);
    return rc;
}
