/* convgate save: re-serialize a model, optionally moving weights to external data. */
#include <getopt.h>
#include <stdlib.h>

#include "cli.h"
#include "convgate/model.h"

static void save_usage(FILE *f)
{
    fprintf(f,
            "Usage: convgate save MODEL -o OUT.onnx [--external-data NAME] [--min-bytes N]\n"
            "\n"
            "Loads MODEL and writes it back out. Every field is kept, including fields this\n"
            "version of convgate does not know. With --external-data, initializer payloads\n"
            "of at least N bytes (default 1024) move to the file NAME beside OUT (a plain\n"
            "file name: no directories), 64-byte aligned, as ONNX external data; that is\n"
            "how models over protobuf's 2 GiB limit are stored.\n"
            "\n"
            "Exit status: 0 written, 2 load or write error.\n");
}

int cmd_save(int argc, char **argv)
{
    static const struct option longopts[] = {{"output", required_argument, NULL, 'o'},
                                             {"external-data", required_argument, NULL, 'e'},
                                             {"min-bytes", required_argument, NULL, 'm'},
                                             {"help", no_argument, NULL, 'h'},
                                             {NULL, 0, NULL, 0}};
    const char *out = NULL;
    cg_save_options sopt = {NULL, 1024};
    int c;
    optind = 1;
    while ((c = getopt_long(argc, argv, "o:e:m:h", longopts, NULL)) != -1) {
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
    if (optind != argc - 1 || !out) {
        save_usage(stderr);
        return CG_EXIT_ERROR;
    }
    cg_error err;
    cg_error_clear(&err);
    cg_model *model = cli_load_model_quiet(argv[optind], NULL, &err);
    if (!model) {
        cli_error("save", "%s", err.msg);
        return CG_EXIT_ERROR;
    }
    int rc = CG_EXIT_OK;
    if (cg_model_save(model, out, &sopt, &err) != CG_OK) {
        cli_error("save", "%s", err.msg);
        rc = CG_EXIT_ERROR;
    }
    cg_model_free(model);
    return rc;
}
