/*
 * The convgate command-line front end: a thin layer over libconvgate.
 * Each subcommand lives in cli/cmd_<name>.c and is listed in commands.def.
 * Exit codes: 0 success / clean, 1 the check found problems, 2 usage or
 * input error (the message says which).
 */
#ifndef CG_CLI_H
#define CG_CLI_H

#include <stdio.h>

#define CG_EXIT_OK 0
#define CG_EXIT_FAIL 1
#define CG_EXIT_ERROR 2

typedef int (*cg_cli_fn)(int argc, char **argv);

/* X(name, function, one-line summary) */
#define X(name, fn, summary) int fn(int argc, char **argv);
#include "commands.def"
#undef X

/* Prints "convgate NAME: message" to stderr. */
#if defined(__GNUC__) || defined(__clang__)
__attribute__((format(printf, 2, 3)))
#endif
void cli_error(const char *cmd, const char *fmt, ...);

/* Loads a model from `path`, or from standard input when path is "-"
 * (then external data is refused: there is no directory to resolve it
 * against). opt may be NULL. NULL with err set on failure. */
#include "convgate/model.h"
cg_model *cli_load_model_quiet(const char *path, const cg_load_options *opt, cg_error *err);
/* The same, printing "convgate CMD: <error>" on failure. */
cg_model *cli_load_model(const char *cmd, const char *path, const cg_load_options *opt);

/* Shared argument parsing (cli/args.c). Numbers: a finite non-negative
 * double; a decimal count <= max. --dim "SYM=VAL" (VAL in [1, INT32_MAX];
 * a later value replaces an earlier one; the symbol is malloc'd). --target
 * lists "a,b" resolved in order, no duplicates. They print their own error
 * as "convgate CMD: ..." and return false. */
#include <stdbool.h>
#include <stdint.h>
#include "convgate/target.h"
bool cli_parse_double(const char *s, double *out);
bool cli_parse_count(const char *s, uint64_t max, uint64_t *out);
/* Any finite number (the caller validates its range); prints
 * "convgate CMD: --OPT expects a finite number, got 'TEXT'" on failure. */
bool cli_parse_real(const char *cmd, const char *opt, const char *text, double *out);
bool cli_parse_dim(const char *cmd, const char *arg, cg_dim_binding *dims, size_t *count,
                   size_t max);
bool cli_resolve_targets(const char *cmd, const cg_target_registry *reg, char **args,
                         size_t arg_count, const cg_target **out, size_t *count, size_t max);

/* Writes s as a JSON string literal (quotes and escapes) to f. */
void cli_json_string(FILE *f, const char *s);

#endif
