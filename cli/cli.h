/*
 * The convgate command-line front end: a thin layer over libconvgate.
 * Each subcommand lives in cli/cmd_<name>.c and is listed in commands.def.
 * Exit codes: 0 success / clean, 1 the check found problems, 2 usage or
 * input error (the message says which).
 */
#ifndef CG_CLI_H
#define CG_CLI_H

#include <stdbool.h>
#include <stdio.h>

#define CG_EXIT_OK 0
#define CG_EXIT_FAIL 1
#define CG_EXIT_ERROR 2

typedef int (*cg_cli_fn)(int argc, char **argv);

/* X(name, function, one-line summary) */
#define X(name, fn, summary) int fn(int argc, char **argv);
#include "commands.def"
#undef X

/* Prints "convgate NAME: message" to stderr (cli_warn: "convgate NAME:
 * warning: message"); with --json the message also goes into the JSON
 * envelope's errors (warnings). cli/report.c. */
#if defined(__GNUC__) || defined(__clang__)
__attribute__((format(printf, 2, 3)))
#endif
void cli_error(const char *cmd, const char *fmt, ...);
#if defined(__GNUC__) || defined(__clang__)
__attribute__((format(printf, 2, 3)))
#endif
void cli_warn(const char *cmd, const char *fmt, ...);

/* --json (cli/report.c, docs/json.md). main() calls cli_json_begin before
 * the command (it turns JSON on when the arguments hold --json) and
 * cli_json_finish after it (an error envelope when the command failed
 * before emitting one). A command sends its result with cli_json_emit;
 * cli_json_to redirects the envelope to a file, opened at once (and its
 * folders made) so an unwritable path fails before any work. */
#include <getopt.h>
#include <jansson.h>
void cli_json_begin(const char *command, int argc, char **argv);
bool cli_json_on(void);
bool cli_json_to(const char *cmd, const char *path);
bool cli_json_to_stdout(void);
int cli_json_emit(int rc, json_t *result);
int cli_json_finish(int rc);

/* The envelope --json would print now for rc and result (result's
 * reference is not taken), with the errors and warnings so far. */
json_t *cli_json_envelope(int rc, json_t *result);

/* Progress on stderr (cli/progress.c, convgate/progress.h): drawn only
 * when stderr is a terminal and --quiet was not given; coloured unless
 * NO_COLOR is set. main() calls cli_progress_begin; a command passes
 * cli_progress() in the options of long work and calls cli_progress_clear
 * before it prints (cli_error and cli_warn clear it themselves). */
#include "convgate/progress.h"
void cli_progress_begin(const char *command, int argc, char **argv);
cg_progress cli_progress(void);
void cli_progress_clear(void);
bool cli_colour(void);
/* True when the arguments hold --quiet (before a "--"). */
bool cli_quiet_arg(int argc, char **argv);

/* --html FILE and --model-explorer DIR (cli/views.c, docs/html-report.md):
 * cli_views_option handles them (opt: the getopt value CLI_OPT_HTML or
 * CLI_OPT_MODEL_EXPLORER; 1 handled, -1 an error, printed, 0 not one of
 * them), opening the HTML file and making the folder at once so an
 * unwritable path fails before any work; cli_views_write writes both views
 * from the command's --json result (borrowed) and its graph view, and
 * returns rc, or CG_EXIT_ERROR when a view could not be written;
 * cli_views_finish closes what is open (an unwritten page gets the
 * command's errors; after a successful --help there is no page, and a file
 * already at FILE is left as it was). */
struct cg_graph_view;
#include "core/file.h"
typedef struct cli_views {
    const char *html;
    cg_atomic_file html_file; /* written beside FILE, renamed over it at the end */
    const char *me_dir;
} cli_views;
#define CLI_OPT_HTML 1001
#define CLI_OPT_MODEL_EXPLORER 1002
#define CLI_OPTS_VIEWS                                                                          \
    {"html", required_argument, NULL, CLI_OPT_HTML},                                            \
        {"model-explorer", required_argument, NULL, CLI_OPT_MODEL_EXPLORER}
#define CLI_HELP_VIEWS                                                                          \
    "  --html FILE          also write a self-contained HTML report (verdict, the graph\n"     \
    "                       coloured by owner, per-node table, outputs; docs/html-report.md)\n" \
    "  --model-explorer DIR also write Model Explorer node data (owner, reference time,\n"     \
    "                       error per node) to DIR\n"
int cli_views_option(const char *cmd, cli_views *v, int opt, const char *arg);
bool cli_views_wanted(const cli_views *v);
int cli_views_write(const char *cmd, cli_views *v, int rc, json_t *result, const char *title,
                    const struct cg_graph_view *gv);
void cli_views_finish(const char *cmd, cli_views *v, int rc);

/* Loads a model from `path`, or from standard input when path is "-"
 * (then external data is refused: there is no directory to resolve it
 * against). opt may be NULL. NULL with err set on failure. */
#include "convgate/model.h"
cg_model *cli_load_model_quiet(const char *path, const cg_load_options *opt, cg_error *err);
/* The same, printing "convgate CMD: <error>" on failure. */
cg_model *cli_load_model(const char *cmd, const char *path, const cg_load_options *opt);

/* A model of either format: TFLite when the bytes carry the "TFL3" file
 * identifier (whatever the extension), ONNX otherwise. Exactly one member
 * is set after a successful load. */
#include "convgate/tflite.h"
typedef struct cli_model {
    cg_model *onnx;
    cg_tflite_model *tflite;
} cli_model;
/* Loads path (or standard input for "-"); opt applies to ONNX. False with
 * err set on failure. */
#include <stdbool.h>
bool cli_load_any_quiet(const char *path, const cg_load_options *opt, cli_model *out,
                        cg_error *err);
void cli_model_free(cli_model *m);

/* Shared argument parsing (cli/args.c). Numbers: a finite non-negative
 * double; a decimal count <= max. --dim "SYM=VAL" (VAL in [1, INT32_MAX];
 * a later value replaces an earlier one; the symbol is malloc'd). --target
 * lists "a,b" resolved in order, no duplicates. They print their own error
 * as "convgate CMD: ..." and return false. */
#include <stdbool.h>
#include <stdint.h>
#include "convgate/runtime.h"
#include "convgate/target.h"
#include "convgate/targetpath.h"
bool cli_parse_double(const char *s, double *out);
/* BYTES with an optional K/M/G (binary) suffix, > 0. */
bool cli_parse_bytes(const char *s, size_t *out);
/* Removes --time-limit SECONDS and --max-memory BYTES (either form, =VALUE
 * too) from argv, wherever they are, and sets the process budget
 * (convgate/budget.h) from them: every command that runs a model takes
 * them. Prints its own error and returns false on a bad value. */
bool cli_take_limits(const char *cmd, int *argc, char **argv);
#define CLI_LIMITS_HELP                                                                     \
    "Limits (every command that runs a model):\n"                                           \
    "  --time-limit SECONDS    stop with an error naming the node once running takes\n"     \
    "                          longer than SECONDS (default: no limit)\n"                   \
    "  --max-memory BYTES      most memory tensors may take at once (suffixes K, M, G;\n"    \
    "                          default: 75 percent of physical memory); checked\n"          \
    "                          before allocating\n"
bool cli_parse_count(const char *s, uint64_t max, uint64_t *out);
/* Any finite number (the caller validates its range); prints
 * "convgate CMD: --OPT expects a finite number, got 'TEXT'" on failure. */
bool cli_parse_real(const char *cmd, const char *opt, const char *text, double *out);
bool cli_parse_dim(const char *cmd, const char *arg, cg_dim_binding *dims, size_t *count,
                   size_t max);
/* --threads N: 1 <= N <= 256 (the reference kernels' threads, the
 * caller's included). --simd LEVEL: auto, portable, avx2 or avx512. */
bool cli_parse_threads(const char *cmd, const char *text, int *out);
/* gate's and compare's references without --threads: one thread while the
 * target half runs beside them, then every online CPU once it is done
 * (cg_parity_options.threads_after). */
int cli_threads_after_default(void);
bool cli_parse_simd(const char *cmd, const char *text, cg_simd *out);
bool cli_resolve_targets(const char *cmd, const cg_target_registry *reg, char **args,
                         size_t arg_count, const cg_target **out, size_t *count, size_t max);

/* --task classify|segment|detect[:BOXES,SCORES[,LABELS]] (detect's output
 * names go to *detect, pointing into arg, else NULL). */
#include "convgate/compare.h"
bool cli_parse_task(const char *cmd, const char *arg, cg_task *task, const char **detect);

/* --target T[,T2...] (repeatable) and --profiles DIR, as every command
 * takes them. cli_targets_option: 1 when opt was one of them, -1 on an
 * error (printed), 0 otherwise. cli_targets_resolve loads the registry and
 * resolves the names in order (label: "a,b"). */
#define CLI_MAX_TARGETS 16
typedef struct cli_targets {
    char *args[CLI_MAX_TARGETS];
    size_t arg_count;
    const char *profiles;
    cg_target_registry *reg;
    const cg_target *list[CLI_MAX_TARGETS];
    size_t count;
    char label[1024];
    cg_accumulate accumulate; /* --accumulate (zeroed: as the profiles say) */
} cli_targets;
int cli_targets_option(const char *cmd, cli_targets *t, const char *opt, char *arg);
bool cli_targets_resolve(const char *cmd, cli_targets *t);
/* "--target is required" unless one was given. */
bool cli_targets_required(const char *cmd, const cli_targets *t);
void cli_targets_free(cli_targets *t);

/* --dim SYM=VAL[,SYM=VAL...], --shape NAME=DxD..., --seed S and --range
 * [NAME=]LO,HI: the options of every command that feeds a model
 * (convgate/samples.h; a --shape becomes one binding "NAME[axis]" per dim).
 * cli_inputs_option as cli_targets_option; cli_inputs_check refuses a
 * --dim or --range name the model does not have. */
#include "convgate/samples.h"
#define CLI_MAX_DIMS 64
#define CLI_MAX_RANGES 64
typedef struct cli_inputs {
    cg_dim_binding dims[CLI_MAX_DIMS];
    size_t dim_count;
    cg_input_range ranges[CLI_MAX_RANGES];
    size_t range_count;
    cg_random_inputs random; /* seed, and ranges pointing into this struct */
    bool seed_given;
} cli_inputs;
void cli_inputs_init(cli_inputs *in);
int cli_inputs_option(const char *cmd, cli_inputs *in, const char *opt, const char *arg);
/* Parses a --dim list into dims (a later value replaces an earlier one). */
bool cli_parse_dims(const char *cmd, const char *opt, const char *arg, cg_dim_binding *dims,
                    size_t *count, size_t max);
bool cli_inputs_check(const char *cmd, const cli_inputs *in, const cg_model *model);
/* Loads MODEL, refuses --dim/--range names it does not have (in may be
 * NULL) and resolves the --target names when some were given (t may be
 * NULL). NULL on failure, printed. */
cg_model *cli_model_for(const char *cmd, const char *path, const cli_inputs *in,
                        cli_targets *t);
/* False, printed, for a model lowered from a .tflite: for commands that
 * edit the graph and write ONNX (rewrite, convert), which a .tflite's
 * lowering is not for (it runs and is judged; it is not what ships). */
bool cli_onnx_graph_only(const char *cmd, const char *path, const cg_model *model);
void cli_inputs_free(cli_inputs *in);

/* The options most commands share, for their getopt_long tables (flag 0:
 * cli_common_option handles them). */
#define CLI_OPTS_TARGETS                                                                        \
    {"target", required_argument, NULL, 0}, {"profiles", required_argument, NULL, 0}
#define CLI_OPTS_ACCUMULATE {"accumulate", required_argument, NULL, 0}
#define CLI_OPTS_INPUTS                                                                         \
    {"dim", required_argument, NULL, 0}, {"seed", required_argument, NULL, 0},                  \
        {"range", required_argument, NULL, 0}, {"shape", required_argument, NULL, 0}
#define CLI_OPTS_TOLERANCE                                                                      \
    {"atol", required_argument, NULL, 0}, {"rtol", required_argument, NULL, 0}
#define CLI_OPTS_TOLERANCE_FILE                                                                 \
    {"tol", required_argument, NULL, 0}, {"nan-equal", no_argument, NULL, 0}
#define CLI_OPTS_END                                                                            \
    {"json", no_argument, NULL, 0}, {"quiet", no_argument, NULL, 0},                            \
        {"help", no_argument, NULL, 'h'}, {NULL, 0, NULL, 0}
/* Handles option `name` of those (in, t, tol may be NULL when the command
 * has none): 1 handled, -1 an error (printed), 0 not one of them. */
#include "convgate/compare.h"
int cli_common_option(const char *cmd, const char *name, char *arg, cli_inputs *in,
                      cli_targets *t, cg_tolerance_args *tol);

/* getopt_long over longopts that handles the common options itself (into
 * in, t, tol; each may be NULL): returns the next other option's value, -1
 * after the last, '?' after an error it printed (an unknown or incomplete
 * option included). Starts over when *started is false. */
int cli_next_option(const char *cmd, int argc, char **argv, const char *shortopts,
                    const struct option *longopts, bool *started, cli_inputs *in,
                    cli_targets *t, cg_tolerance_args *tol);
/* The one MODEL argument after the options, or NULL (the reason and the
 * usage printed). */
const char *cli_model_arg(const char *cmd, int argc, char **argv, void (*usage)(FILE *));

/* The samples of a command that takes --golden DIR, --inputs DIR or
 * --random N (at most one; none: default_random random sets), loaded
 * into out, with a description ("2 sets from DIR") in desc. Prints the
 * error and returns false on failure. golden needs the model's file. */
bool cli_samples_load(const char *cmd, const cg_model *model, const char *model_path,
                      const char *golden, const char *inputs, uint64_t random_n,
                      uint64_t default_random, const cli_inputs *in, cg_sample_set *out,
                      char *desc, size_t cap);
/* "a,b,c" split into malloc'd names appended to list (at most max in all). */
bool cli_parse_names(const char *cmd, const char *opt, const char *arg, char **list,
                     size_t *count, size_t max);
void cli_names_free(char **list, size_t count);

/* The options of the commands that rewrite (rewrite, convert): --only,
 * --opt-in, --inputs DIR, --random N, as CLI_OPTS_REWRITE's codes.
 * cli_rewrite_option: 1 handled, -1 an error (printed), 0 not one of them. */
#define CLI_MAX_NAMES 64
#define CLI_MAX_REWRITE_RANDOM 1000
typedef struct cli_rewrite_args {
    const char *inputs;
    uint64_t random_n;
    char *only[CLI_MAX_NAMES], *opt_in[CLI_MAX_NAMES];
    size_t only_count, opt_in_count;
} cli_rewrite_args;
#define CLI_OPTS_REWRITE                                                                        \
    {"only", required_argument, NULL, 'O'}, {"opt-in", required_argument, NULL, 'P'},           \
        {"inputs", required_argument, NULL, 'i'}, {"random", required_argument, NULL, 'r'}
int cli_rewrite_option(const char *cmd, int c, const char *arg, cli_rewrite_args *r);
/* Refuses an --only or --opt-in name the catalog does not have. */
bool cli_rewrite_check(const char *cmd, const cli_rewrite_args *r);
void cli_rewrite_args_free(cli_rewrite_args *r);

/* Help text shared by the commands that feed a model. */
#define CLI_HELP_INPUT_OPTIONS                                                                  \
    "  --dim SYM=VAL[,...]  size of a symbolic input dim (repeatable); a name no input\n"       \
    "                       declares is an error. Unbound symbols take the size a fed\n"       \
    "                       tensor gives them, else 1\n"                                       \
    "  --shape NAME=DxD...  every dim of input NAME (repeatable), named or not: for\n"        \
    "                       inputs whose dims have no name (Silero VAD's [?, ?]), which\n"    \
    "                       --dim cannot bind and which otherwise take 1\n"                  \
    "  --seed S             seed of the random inputs (default 0)\n"                           \
    "  --range LO,HI        random values of every numeric input in [LO, HI)\n"                \
    "                       (integers: the integers in [LO, HI]); --range NAME=LO,HI\n"        \
    "                       for one input (repeatable). Defaults: floats uniform in\n"         \
    "                       [-1, 1); integers 0 or 1 (valid ids, masks and indices);\n"        \
    "                       bool false or true\n"
#define CLI_HELP_FILE_NAMES                                                                     \
    "File names: a tensor NAME is the file NAME.npy (or .pb) with every character\n"           \
    "outside [A-Za-z0-9._-] written '_' (input:0 -> input_0.npy, a/b -> a_b.npy), a\n"         \
    "leading '.' written '_'; names that meet on one file get _2, _3... in graph order.\n"
#define CLI_HELP_INPUT_FOLDERS                                                                  \
    "Input folders (--inputs DIR), the first layout that fits: DIR/SET/NAME.npy or\n"          \
    "DIR/SET/input_K.pb (ONNX test data) or DIR/SET.npz, one sample per SET; DIR/NAME_N.npy,\n" \
    "one sample per N; DIR/NAME.npy, one sample.\n"

/* --against/--source MODEL, --map RULE (repeatable), --runner NAME and
 * --precision P (cli/against.c): source against converted, and the real
 * LiteRT as the runner (convgate/iomap.h, convgate/runner.h). */
#include "convgate/iomap.h"
#include "convgate/runner.h"
#define CLI_MAX_RULES 64
typedef struct cli_against {
    const char *other_path;       /* --against (compare) or --source (gate) */
    cg_io_rule rules[CLI_MAX_RULES];
    size_t rule_count;
    cg_runner_options runner;     /* kind CG_RUNNER_NONE without --runner */
    cg_model *other;              /* loaded by cli_against_load */
    cg_io_map map;
    bool have_map;
} cli_against;
void cli_against_init(cli_against *a);
/* 1 handled, -1 an error (printed), 0 not one of these options. */
int cli_against_option(const char *cmd, cli_against *a, const char *opt, const char *arg);
/* Refuses --map without the other model and --precision without the WebGPU runner. */
bool cli_against_check(const char *cmd, const cli_against *a, const char *other_option);
/* Loads the other model (when given) and matches it with model, which is
 * the map's A side when model_is_a. False (printed) on failure. */
bool cli_against_load(const char *cmd, cli_against *a, const cg_model *model, bool model_is_a);
void cli_against_free(cli_against *a);
/* option values for the switch of the commands that take them */
#define CLI_OPT_AGAINST 0x1001
#define CLI_OPT_MAP 0x1002
#define CLI_OPT_RUNNER 0x1003
#define CLI_OPT_PRECISION 0x1004
#define CLI_OPTS_RUNNER                                                                         \
    {"runner", required_argument, NULL, CLI_OPT_RUNNER},                                        \
        {"precision", required_argument, NULL, CLI_OPT_PRECISION}
#define CLI_HELP_RUNNER                                                                         \
    "  --runner litert-node|litert-webgpu  run the .tflite in the real LiteRT instead\n"         \
    "                       (LiteRT.js from tools/litert/: XNNPACK on the CPU in Node, or\n"    \
    "                       the WebGPU delegate in headless Chromium, which also logs\n"       \
    "                       which ops ran on the GPU); reported as measured. Needs node,\n"    \
    "                       LiteRT.js (scripts/setup.sh) and, for WebGPU, chromium;\n"          \
    "                       inputs keep the shapes recorded in the .tflite\n"                  \
    "  --precision fp32|fp16  the WebGPU delegate's precision (default fp32)\n"

#endif
