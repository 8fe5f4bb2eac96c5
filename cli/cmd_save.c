/* convgate save: re-serialize a model, optionally moving weights to external data. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

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
            "how models over protobuf's 2 GiB limit are stored. --json prints the files\n"
            "written and their sizes as JSON (docs/json.md).\n"
            "\n"
            "Exit status: 0 written, 2 load or write error.\n");
}

/* The sizes of what was written: the model, and its weights file beside it. */
static json_t *save_json(const char *model, const char *out, const char *external)
{
    struct stat st;
    char ext_path[4096];
    cg_save_view v = {model, out, 0, NULL, 0};
    if (stat(out, &st) == 0)
        v.output_bytes = (uint64_t)st.st_size;
    if (external) {
        const char *slash = strrchr(out, '/');
        int dir_len = slash ? (int)(slash - out) + 1 : 0;
        if (snprintf(ext_path, sizeof ext_path, "%.*s%s", dir_len, out, external) <
                (int)sizeof ext_path && stat(ext_path, &st) == 0) {
            v.external_data = external; /* none written when no weight was large enough */
            v.external_bytes = (uint64_t)st.st_size;
        }
    }
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
    if (cg_model_save(model, out, &sopt, &err) != CG_OK) {
        cli_error("save", "%s", err.msg);
        rc = CG_EXIT_ERROR;
    } else if (cli_json_on()) {
        rc = cli_json_emit(rc, save_json(path, out, sopt.external_file));
    }
    cg_model_free(model);
    return rc;
}
