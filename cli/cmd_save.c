/* convgate save: re-serialize a model, optionally moving weights to external data. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "convgate/model.h"
#include "report/report.h"

static void save_usage(FILE *f)
{
    fprintf(f,
            "Usage: convgate save MODEL -o OUT.onnx [--external-data NAME] [--min-bytes N] [--json]\n"
            "\n"
            "Loads MODEL and writes it back out. Every field is kept, including fields this\n"
            "version of convgate does not know. With --external-data, initializer payloads\n"
            "of at least N bytes (default 1024) move to the file NAME beside OUT (a plain\n"
            "file name: no directories), 64-byte aligned, as ONNX external data; that is\n"
            "how models over protobuf's 2 GiB limit are stored. A weight MODEL read from\n"
            "external data that stays below N is written inline. When no weight reaches N,\n"
            "nothing moves and NAME is not written; if a file NAME already stands beside\n"
            "OUT it would no longer belong to the model, so save refuses (exit 2) and\n"
            "writes nothing: remove it, lower --min-bytes or pick another name. --json\n"
            "prints the files this save wrote and their sizes as JSON (docs/json.md).\n"
            "\n"
            "Exit status: 0 written, 2 load or write error.\n");
}

/* What this save wrote: the model, and its weights file beside it when one
 * was (never a file that merely stands there). */
static json_t *save_json(const char *model, const char *out, const cg_save_written *w)
{
    cg_save_view v = {model, out, w->model_bytes, w->external_file, w->external_bytes};
    return cg_report_save_json(&v);
}

int cmd_save(int argc, char **argv)
{
    static const struct option longopts[] = {{"output", required_argument, NULL, 'o'},
                                             {"external-data", required_argument, NULL, 'e'},
                                             {"min-bytes", required_argument, NULL, 'm'},
                                             CLI_OPTS_END};
    const char *out = NULL;
    cg_save_options sopt = {NULL, 1024};
    int c;
    bool started = false;
    while ((c = cli_next_option("save", argc, argv, "o:e:m:h", longopts, &started, NULL, NULL,
                                NULL)) != -1) {
        switch (c) {
        case 'o': out = optarg; break;
        case 'e': sopt.external_file = optarg; break;
        case 'm': {
            char *end;
            unsigned long long v = strtoull(optarg, &end, 10);
            if (*end || optarg[0] == '-') {
                cli_error("save", "--min-bytes expects a byte count, got '%s'", optarg);
                return CG_EXIT_ERROR;
            }
            sopt.external_min_bytes = (size_t)v;
            break;
        }
        case 'h': save_usage(stdout); return CG_EXIT_OK;
        default: save_usage(stderr); return CG_EXIT_ERROR;
        }
    }
    const char *path = cli_model_arg("save", argc, argv, save_usage);
    if (!path)
        return CG_EXIT_ERROR;
    if (!out) {
        cli_error("save", "give -o OUT.onnx");
        save_usage(stderr);
        return CG_EXIT_ERROR;
    }
    cg_error err;
    cg_error_clear(&err);
    cg_model *model = cli_load_model_quiet(path, NULL, &err);
    if (!model) {
        cli_error("save", "%s", err.msg);
        return CG_EXIT_ERROR;
    }
    int rc = CG_EXIT_OK;
    cg_save_written written;
    if (cg_model_save_written(model, out, &sopt, &written, &err) != CG_OK) {
        cli_error("save", "%s", err.msg);
        rc = CG_EXIT_ERROR;
    } else if (cli_json_on()) {
        rc = cli_json_emit(rc, save_json(path, out, &written));
    }
    cg_model_free(model);
    return rc;
}
