/* convgate: dispatch to the subcommand named by argv[1]. */
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "convgate/model.h"
#include "core/mapfile.h"
#include "core/text.h"

typedef struct cli_command {
    const char *name;
    cg_cli_fn fn;
    const char *summary;
} cli_command;

static const cli_command commands[] = {
#define X(name, fn, summary) {#name, fn, summary},
#include "commands.def"
#undef X
};

/* All of standard input, up to protobuf's 2 GiB limit; NULL with err set. */
static unsigned char *read_stdin(size_t *out_len, cg_error *err)
{
    const size_t limit = (size_t)2147483647u;
    size_t cap = 1 << 16, len = 0;
    unsigned char *buf = malloc(cap);
    while (buf) {
        size_t n = fread(buf + len, 1, cap - len, stdin);
        len += n;
        if (n == 0)
            break;
        if (len == cap) {
            if (cap > limit) {
                free(buf);
                cg_error_set(err, CG_LIMIT, "standard input: over protobuf's 2 GiB limit");
                return NULL;
            }
            unsigned char *nb = realloc(buf, cap * 2);
            if (!nb)
                free(buf);
            buf = nb;
            cap *= 2;
        }
    }
    if (!buf) {
        cg_error_set(err, CG_NOMEM, "standard input: out of memory");
        return NULL;
    }
    if (ferror(stdin)) {
        free(buf);
        cg_error_set(err, CG_IO, "standard input: read error");
        return NULL;
    }
    *out_len = len;
    return buf;
}

static cg_model *load_onnx_bytes(const unsigned char *buf, size_t len, const cg_load_options *opt,
                                  cg_error *err)
{
    cg_model *model = NULL;
    cg_load_options lo;
    if (opt)
        lo = *opt;
    else
        cg_load_options_default(&lo);
    lo.base_dir = NULL; /* bytes have no directory: external data is refused */
    if (cg_model_load_bytes(buf, len, &lo, &model, err) != CG_OK) {
        cg_error_prefix(err, "standard input: ");
        return NULL;
    }
    return model;
}

cg_model *cli_load_model_quiet(const char *path, const cg_load_options *opt, cg_error *err)
{
    cg_model *model = NULL;
    if (strcmp(path, "-") != 0) {
        if (cg_model_load_any(path, opt, &model, err) != CG_OK)
            return NULL;
        return model;
    }
    size_t len;
    unsigned char *buf = read_stdin(&len, err);
    if (!buf)
        return NULL;
    if (cg_tflite_detect(buf, len)) {
        if (cg_model_load_any_bytes(buf, len, "standard input", opt, &model, err) != CG_OK)
            model = NULL;
    } else {
        model = load_onnx_bytes(buf, len, opt, err);
    }
    free(buf);
    return model;
}

bool cli_load_any_quiet(const char *path, const cg_load_options *opt, cli_model *out,
                        cg_error *err)
{
    memset(out, 0, sizeof *out);
    if (strcmp(path, "-") != 0) {
        if (!cg_tflite_detect_path(path))
            return (out->onnx = cli_load_model_quiet(path, opt, err)) != NULL;
        return cg_tflite_load(path, NULL, &out->tflite, err) == CG_OK;
    }
    size_t len;
    unsigned char *buf = read_stdin(&len, err);
    if (!buf)
        return false;
    bool ok;
    if (cg_tflite_detect(buf, len))
        ok = cg_tflite_load_bytes(buf, len, "standard input", NULL, &out->tflite, err) == CG_OK;
    else
        ok = (out->onnx = load_onnx_bytes(buf, len, opt, err)) != NULL;
    free(buf);
    return ok;
}

void cli_model_free(cli_model *m)
{
    cg_model_free(m->onnx);
    cg_tflite_free(m->tflite);
    memset(m, 0, sizeof *m);
}

cg_model *cli_load_model(const char *cmd, const char *path, const cg_load_options *opt)
{
    cg_error err;
    cg_error_clear(&err);
    cg_model *model = cli_load_model_quiet(path, opt, &err);
    if (!model)
        cli_error(cmd, "%s", err.msg);
    return model;
}

/* commands.def names are C identifiers: '_' in a name is typed as '-'
 * ("dump_ref" is `convgate dump-ref`). */
static bool command_is(const char *name, const char *typed)
{
    for (; *name && *typed; name++, typed++)
        if (*typed != (*name == '_' ? '-' : *name))
            return false;
    return *name == *typed;
}

static void print_name(FILE *f, const char *name)
{
    int n = 0;
    for (; *name; name++, n++)
        fputc(*name == '_' ? '-' : *name, f);
    cg_text_printf(f, "%*s", n < 13 ? 13 - n : 0, "");
}

static void usage(FILE *f)
{
    cg_text_printf(f,
                   "convgate %s: gate a converted model before it ships.\n"
                   "\n"
                   "Usage: convgate COMMAND [OPTIONS] MODEL\n"
                   "\n"
                   "Commands:\n",
                   CG_VERSION);
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++) {
        fputs("  ", f);
        print_name(f, commands[i].name);
        cg_text_printf(f, " %s\n", commands[i].summary);
    }
    fprintf(f, "\n'convgate COMMAND --help' describes a command's options.\n"
               "Exit status: 0 success, 1 the model failed the check, 2 usage or input error.\n");
}

/* Writes a NUL-terminated string with write(2) (async-signal-safe). */
static void put_raw(const char *s)
{
    size_t n = 0;
    while (s[n])
        n++;
    while (n > 0) {
        ssize_t w = write(STDERR_FILENO, s, n);
        if (w <= 0)
            return;
        s += w;
        n -= (size_t)w;
    }
}

/* A model or weights file mapped by convgate and truncated by someone else
 * while in use (core/mapfile.h): say which file, and exit with status 2
 * rather than die on the signal. Any other SIGBUS keeps its default. */
static void on_sigbus(int sig, siginfo_t *info, void *ctx)
{
    (void)ctx;
    const char *label;
    size_t size;
    if (info && cg_mapping_lookup(info->si_addr, &label, &size)) {
        put_raw("convgate: error: '");
        put_raw(label);
        put_raw("' shrank while convgate was reading it (a file must not change while it is "
                "in use); stopped, no result\n");
        _exit(CG_EXIT_ERROR);
    }
    signal(sig, SIG_DFL);
    raise(sig);
}

static void install_signal_handlers(void)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = on_sigbus;
    sa.sa_flags = SA_SIGINFO;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGBUS, &sa, NULL);
    /* Over a file size limit (ulimit -f) a write fails with EFBIG and is
     * reported like a full disk, instead of the signal killing us midway. */
    signal(SIGXFSZ, SIG_IGN);
}

int main(int argc, char **argv)
{
    install_signal_handlers();
    if (argc < 2) {
        usage(stderr);
        return CG_EXIT_ERROR;
    }
    if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0 ||
        strcmp(argv[1], "help") == 0) {
        usage(stdout);
        return CG_EXIT_OK;
    }
    if (strcmp(argv[1], "--version") == 0) {
        cg_text_printf(stdout, "convgate %s\n", CG_VERSION);
        return CG_EXIT_OK;
    }
    /* The commands that run a model take --time-limit and --max-memory. */
    static const char *const run_models[] = {"run",     "compare", "gate",        "bisect",
                                             "verify",  "dump_ref", "profile",    "assign",
                                             "rewrite", "convert", "conformance", "noise"};
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        if (command_is(commands[i].name, argv[1])) {
            int sub_argc = argc - 1;
            for (size_t r = 0; r < sizeof run_models / sizeof run_models[0]; r++)
                if (strcmp(commands[i].name, run_models[r]) == 0 &&
                    !cli_take_limits(argv[1], &sub_argc, argv + 1))
                    return CG_EXIT_ERROR;
            cli_json_begin(argv[1], sub_argc, argv + 1);
            cli_progress_begin(argv[1], sub_argc, argv + 1);
            int rc = commands[i].fn(sub_argc, argv + 1);
            cli_progress_clear();
            return cli_json_finish(rc);
        }
    cg_text_printf(stderr, "convgate: unknown command '%s'\n\n", argv[1]);
    usage(stderr);
    return CG_EXIT_ERROR;
}
