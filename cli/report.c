/*
 * What a command prints when asked for --json: one envelope
 * (report/json.h, docs/json.md) holding the command's result, or, when the
 * command failed before it had one, the errors it reported. main() turns
 * JSON on when the arguments hold --json; every message cli_error and
 * cli_warn print is also kept for the envelope.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "core/file.h"
#include "core/path.h"
#include "report/json.h"
#include "core/text.h"

static struct {
    const char *command;
    bool on;          /* --json was given */
    bool emitted;     /* the envelope went out */
    FILE *dest;       /* NULL: stdout */
    cg_atomic_file file; /* --json PATH: written beside PATH, renamed over it at the end */
    char *dest_path;
    json_t *errors, *warnings;
} cli_json;

static void keep_message(json_t **list, const char *fmt, va_list ap)
{
    char msg[CG_ERROR_MSG_MAX + 256];
    vsnprintf(msg, sizeof msg, fmt, ap);
    if (!*list)
        *list = json_array();
    json_t *o = json_object();
    if (*list && o && cg_json_set(o, "message", cg_json_text(msg)) == 0)
        json_array_append_new(*list, o);
    else
        json_decref(o);
}

/* Prints "convgate CMD: [warning: ]message" and keeps it for the envelope. */
static void say(const char *cmd, const char *kind, json_t **list, const char *fmt, va_list ap)
{
    va_list copy;
    va_copy(copy, ap);
    cli_progress_clear();
    cg_text_printf(stderr, "convgate %s: %s", cmd, kind);
    cg_text_vprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    keep_message(list, fmt, copy);
    va_end(copy);
}

void cli_error(const char *cmd, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    say(cmd, "", &cli_json.errors, fmt, ap);
    va_end(ap);
}

void cli_warn(const char *cmd, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    say(cmd, "warning: ", &cli_json.warnings, fmt, ap);
    va_end(ap);
}

void cli_json_begin(const char *command, int argc, char **argv)
{
    cli_json.command = command;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--") == 0)
            break;
        if (strcmp(argv[i], "--json") == 0 || strncmp(argv[i], "--json=", 7) == 0)
            cli_json.on = true;
    }
}

bool cli_json_on(void) { return cli_json.on; }

bool cli_json_to(const char *cmd, const char *path)
{
    cg_error err;
    cg_error_clear(&err);
    cli_json.on = true;
    if (!path || strcmp(path, "-") == 0)
        return true;
    /* opened (and its folders made) now, so an unwritable PATH stops the
     * command before it runs rather than after */
    if (cg_path_make_parents(path, &err) != CG_OK) {
        cli_error(cmd, "--json %s: %s", path, err.msg);
        return false;
    }
    /* atomically: a failed run or write never leaves a truncated report */
    if (cli_json.dest)
        cg_atomic_abort(&cli_json.file);
    cli_json.dest = NULL;
    if (cg_atomic_begin(&cli_json.file, path, &err) != CG_OK) {
        cli_error(cmd, "--json %s: cannot write the report there: %s", path, err.msg);
        return false;
    }
    cli_json.dest = cli_json.file.f;
    free(cli_json.dest_path);
    cli_json.dest_path = strdup(path);
    return true;
}

bool cli_json_to_stdout(void) { return cli_json.on && !cli_json.dest; }

json_t *cli_json_envelope(int rc, json_t *result)
{
    return cg_json_envelope(cli_json.command, rc, json_incref(cli_json.errors),
                            json_incref(cli_json.warnings), json_incref(result));
}

int cli_json_emit(int rc, json_t *result)
{
    FILE *f = cli_json.dest ? cli_json.dest : stdout;
    cli_json.emitted = true;
    json_t *env = cg_json_envelope(cli_json.command, rc, json_incref(cli_json.errors),
                                   json_incref(cli_json.warnings), result);
    int wrc = cg_json_write(f, env);
    json_decref(env);
    if (wrc != 0) {
        cg_text_printf(stderr, "convgate %s: could not write the JSON report%s%s\n",
                       cli_json.command, cli_json.dest_path ? " to " : "",
                       cli_json.dest_path ? cli_json.dest_path : "");
        return CG_EXIT_ERROR;
    }
    return rc;
}

int cli_json_finish(int rc)
{
    if (cli_json.on && !cli_json.emitted && rc != CG_EXIT_OK)
        rc = cli_json_emit(rc, NULL);
    if (cli_json.dest) {
        cg_error err;
        cg_error_clear(&err);
        if (cli_json.emitted && cg_atomic_commit(&cli_json.file, &err) != CG_OK) {
            cg_text_printf(stderr, "convgate %s: could not write the JSON report: %s\n",
                           cli_json.command, err.msg);
            if (rc == CG_EXIT_OK)
                rc = CG_EXIT_ERROR;
        } else if (!cli_json.emitted) {
            cg_atomic_abort(&cli_json.file);
        }
    }
    cli_json.dest = NULL;
    free(cli_json.dest_path);
    json_decref(cli_json.errors);
    json_decref(cli_json.warnings);
    memset(&cli_json, 0, sizeof cli_json);
    return rc;
}
