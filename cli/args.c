/* Argument parsing shared by the subcommands (numbers, --dim, --target lists). */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "convgate/budget.h"
#include "convgate/golden.h"
#include "convgate/rewrite.h"
#include "core/threadpool.h"

bool cli_parse_double(const char *s, double *out)
{
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (errno || end == s || *end || !(v >= 0) || v > 1e300)
        return false;
    *out = v;
    return true;
}

bool cli_parse_count(const char *s, uint64_t max, uint64_t *out)
{
    char *end;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno || end == s || *end || s[0] == '-' || v > max)
        return false;
    *out = v;
    return true;
}

bool cli_parse_bytes(const char *s, size_t *out)
{
    char *end;
    if (!s || *s < '0' || *s > '9')
        return false;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    unsigned shift = 0;
    if (*end == 'k' || *end == 'K')
        shift = 10;
    else if (*end == 'm' || *end == 'M')
        shift = 20;
    else if (*end == 'g' || *end == 'G')
        shift = 30;
    if (shift)
        end++;
    if (errno || *end || v == 0 || v > (SIZE_MAX >> shift))
        return false;
    *out = (size_t)v << shift;
    return true;
}

/* Takes OPT VALUE or OPT=VALUE at argv[i]; *value then points into argv
 * and *used is how many arguments it spanned (0: not this option). */
static int take_option(int argc, char **argv, int i, const char *opt, const char **value)
{
    size_t n = strlen(opt);
    if (strncmp(argv[i], opt, n) != 0)
        return 0;
    if (argv[i][n] == '=') {
        *value = argv[i] + n + 1;
        return 1;
    }
    if (argv[i][n] != '\0')
        return 0;
    *value = i + 1 < argc ? argv[i + 1] : NULL;
    return 2;
}

bool cli_take_limits(const char *cmd, int *argc, char **argv)
{
    size_t max_memory = (size_t)cg_budget_default_bytes();
    double seconds = 0;
    int out = 0;
    for (int i = 0; i < *argc;) {
        const char *value = NULL;
        int used;
        if (strcmp(argv[i], "--") == 0) { /* the rest are operands */
            while (i < *argc)
                argv[out++] = argv[i++];
            break;
        }
        if ((used = take_option(*argc, argv, i, "--time-limit", &value)) != 0) {
            if (!value || !cli_parse_double(value, &seconds) || !(seconds > 0)) {
                cli_error(cmd, "--time-limit expects a positive number of seconds, got '%s'",
                          value ? value : "");
                return false;
            }
        } else if ((used = take_option(*argc, argv, i, "--max-memory", &value)) != 0) {
            if (!value || !cli_parse_bytes(value, &max_memory)) {
                cli_error(cmd, "--max-memory expects BYTES (suffixes K, M, G), got '%s'",
                          value ? value : "");
                return false;
            }
        } else {
            argv[out++] = argv[i++];
            continue;
        }
        i += used;
    }
    argv[out] = NULL;
    *argc = out;
    cg_budget_set(cg_budget_process(), max_memory, seconds);
    return true;
}

bool cli_parse_dim(const char *cmd, const char *arg, cg_dim_binding *dims, size_t *count,
                   size_t max)
{
    const char *eq = strchr(arg, '=');
    uint64_t v;
    if (!eq || eq == arg || !cli_parse_count(eq + 1, INT32_MAX, &v) || v < 1) {
        cli_error(cmd, "--dim expects SYMBOL=VALUE with VALUE in [1, %d], got '%s'", INT32_MAX,
                  arg);
        return false;
    }
    size_t len = (size_t)(eq - arg);
    for (size_t k = 0; k < *count; k++)
        if (strlen(dims[k].symbol) == len && strncmp(dims[k].symbol, arg, len) == 0) {
            dims[k].value = (int64_t)v;
            return true;
        }
    if (*count == max) {
        cli_error(cmd, "more than %zu --dim values", max);
        return false;
    }
    char *sym = malloc(len + 1);
    if (!sym) {
        cli_error(cmd, "out of memory");
        return false;
    }
    memcpy(sym, arg, len);
    sym[len] = '\0';
    dims[*count].symbol = sym;
    dims[*count].value = (int64_t)v;
    (*count)++;
    return true;
}

bool cli_resolve_targets(const char *cmd, const cg_target_registry *reg, char **args,
                         size_t arg_count, const cg_target **out, size_t *count, size_t max)
{
    cg_error err;
    cg_error_clear(&err);
    for (size_t i = 0; i < arg_count; i++)
        if (cg_target_registry_resolve(reg, args[i], out, count, max, &err) != CG_OK) {
            cli_error(cmd, "%s", err.msg);
            return false;
        }
    return true;
}

bool cli_parse_real(const char *cmd, const char *opt, const char *text, double *out)
{
    char *end;
    double v = strtod(text, &end);
    if (end == text || *end || !isfinite(v)) {
        cli_error(cmd, "--%s expects a finite number, got '%s'", opt, text);
        return false;
    }
    *out = v;
    return true;
}

/* --- targets ------------------------------------------------------------------ */

int cli_targets_option(const char *cmd, cli_targets *t, const char *opt, char *arg)
{
    if (strcmp(opt, "target") == 0) {
        if (t->arg_count == CLI_MAX_TARGETS) {
            cli_error(cmd, "too many --target options");
            return -1;
        }
        t->args[t->arg_count++] = arg;
        return 1;
    }
    if (strcmp(opt, "profiles") == 0) {
        t->profiles = arg;
        return 1;
    }
    if (strcmp(opt, "accumulate") == 0) {
        cg_error err;
        cg_error_clear(&err);
        if (cg_accumulate_parse(arg, &t->accumulate, &err) != CG_OK) {
            cli_error(cmd, "--%s", err.msg);
            return -1;
        }
        return 1;
    }
    return 0;
}

bool cli_targets_required(const char *cmd, const cli_targets *t)
{
    if (t->arg_count)
        return true;
    cli_error(cmd, "--target is required (`convgate targets` lists them)");
    return false;
}

bool cli_targets_resolve(const char *cmd, cli_targets *t)
{
    cg_error err;
    cg_error_clear(&err);
    if (cg_target_registry_load(t->profiles, &t->reg, &err) != CG_OK) {
        cli_error(cmd, "%s", err.msg);
        return false;
    }
    if (!cli_resolve_targets(cmd, t->reg, t->args, t->arg_count, t->list, &t->count,
                             CLI_MAX_TARGETS))
        return false;
    size_t used = 0;
    t->label[0] = '\0';
    for (size_t i = 0; i < t->count && used < sizeof t->label; i++) {
        int w = snprintf(t->label + used, sizeof t->label - used, "%s%s", i ? "," : "",
                         t->list[i]->name);
        used = w < 0 ? sizeof t->label : used + (size_t)w;
    }
    return true;
}

void cli_targets_free(cli_targets *t)
{
    cg_target_registry_free(t->reg);
    t->reg = NULL;
}

/* --- inputs ------------------------------------------------------------------ */

void cli_inputs_init(cli_inputs *in)
{
    memset(in, 0, sizeof *in);
    in->random.ranges = in->ranges;
}

bool cli_parse_dims(const char *cmd, const char *opt, const char *arg, cg_dim_binding *dims,
                    size_t *count, size_t max)
{
    for (const char *p = arg;;) {
        const char *comma = strchr(p, ',');
        size_t len = comma ? (size_t)(comma - p) : strlen(p);
        char *item = strndup(p, len);
        if (!item) {
            cli_error(cmd, "out of memory");
            return false;
        }
        const char *eq = strchr(item, '=');
        uint64_t v;
        bool ok = eq && eq != item && cli_parse_count(eq + 1, INT32_MAX, &v) && v >= 1;
        if (!ok) {
            cli_error(cmd, "--%s %s: expects SYMBOL=VALUE[,SYMBOL=VALUE...] with VALUE in [1, "
                      "%d]", opt, arg, INT32_MAX);
            free(item);
            return false;
        }
        ok = cli_parse_dim(cmd, item, dims, count, max);
        free(item);
        if (!ok)
            return false;
        if (!comma)
            return true;
        p = comma + 1;
    }
}

/* "[NAME=]LO,HI": the name is what precedes the last '=' (names may hold
 * ',' but not end in '='). */
static bool parse_range(const char *cmd, const char *arg, cg_input_range *r)
{
    const char *eq = strrchr(arg, '=');
    const char *nums = eq ? eq + 1 : arg;
    const char *comma = strchr(nums, ',');
    char lo[64];
    memset(r, 0, sizeof *r);
    if (!comma || (size_t)(comma - nums) >= sizeof lo || (eq && eq == arg))
        goto bad;
    memcpy(lo, nums, (size_t)(comma - nums));
    lo[comma - nums] = '\0';
    char *end;
    r->lo = strtod(lo, &end);
    if (end == lo || *end)
        goto bad;
    r->hi = strtod(comma + 1, &end);
    if (end == comma + 1 || *end || !isfinite(r->lo) || !isfinite(r->hi) || r->lo > r->hi)
        goto bad;
    if (eq && !(r->input = strndup(arg, (size_t)(eq - arg)))) {
        cli_error(cmd, "out of memory");
        return false;
    }
    return true;
bad:
    cli_error(cmd, "--range expects LO,HI or NAME=LO,HI with finite LO <= HI, got '%s'", arg);
    return false;
}

/* --shape NAME=DxD...: one binding "NAME[axis]" per dim (a later --shape of
 * the same input replaces the earlier one's values). */
static bool parse_shape(const char *cmd, const char *arg, cli_inputs *in)
{
    const char *eq = strrchr(arg, '=');
    if (!eq || eq == arg || !eq[1]) {
        cli_error(cmd, "--shape expects NAME=DxD... (e.g. input=1x512), got '%s'", arg);
        return false;
    }
    char name[CG_SAMPLES_STEM_CAP];
    size_t len = (size_t)(eq - arg);
    if (len >= sizeof name) {
        cli_error(cmd, "--shape: input name too long in '%s'", arg);
        return false;
    }
    memcpy(name, arg, len);
    name[len] = '\0';
    const char *p = eq + 1;
    for (size_t axis = 0; *p; axis++) {
        char num[32], key[CG_SAMPLES_STEM_CAP + 32];
        const char *x = strchr(p, 'x');
        size_t n = x ? (size_t)(x - p) : strlen(p);
        uint64_t v;
        if (n == 0 || n >= sizeof num || axis >= CG_MAX_RANK) {
            cli_error(cmd, "--shape expects NAME=DxD... with at most %d dims, got '%s'",
                      CG_MAX_RANK, arg);
            return false;
        }
        memcpy(num, p, n);
        num[n] = '\0';
        if (!cli_parse_count(num, INT32_MAX, &v) || v < 1) {
            cli_error(cmd, "--shape %s: dim %zu is '%s', expected a size in [1, %d]", name, axis,
                      num, INT32_MAX);
            return false;
        }
        if (!cg_samples_shape_key(name, axis, key, sizeof key)) {
            cli_error(cmd, "--shape: input name too long in '%s'", arg);
            return false;
        }
        snprintf(num, sizeof num, "=%" PRIu64, v);
        char spec[sizeof key + sizeof num];
        snprintf(spec, sizeof spec, "%s%s", key, num);
        if (!cli_parse_dim(cmd, spec, in->dims, &in->dim_count, CLI_MAX_DIMS))
            return false;
        p += n;
        if (*p == 'x' && !*++p) {
            cli_error(cmd, "--shape expects NAME=DxD..., got '%s'", arg);
            return false;
        }
    }
    return true;
}

int cli_inputs_option(const char *cmd, cli_inputs *in, const char *opt, const char *arg)
{
    if (strcmp(opt, "dim") == 0)
        return cli_parse_dims(cmd, "dim", arg, in->dims, &in->dim_count, CLI_MAX_DIMS) ? 1 : -1;
    if (strcmp(opt, "shape") == 0)
        return parse_shape(cmd, arg, in) ? 1 : -1;
    if (strcmp(opt, "seed") == 0) {
        if (!cli_parse_count(arg, UINT64_MAX, &in->random.seed)) {
            cli_error(cmd, "--seed expects a non-negative integer, got '%s'", arg);
            return -1;
        }
        in->seed_given = true;
        return 1;
    }
    if (strcmp(opt, "range") == 0) {
        cg_input_range r;
        if (in->range_count == CLI_MAX_RANGES) {
            cli_error(cmd, "more than %d --range options", CLI_MAX_RANGES);
            return -1;
        }
        if (!parse_range(cmd, arg, &r))
            return -1;
        /* a later range for the same input replaces the earlier one */
        for (size_t i = 0; i < in->range_count; i++)
            if ((!r.input && !in->ranges[i].input) ||
                (r.input && in->ranges[i].input && strcmp(r.input, in->ranges[i].input) == 0)) {
                free((char *)r.input);
                in->ranges[i].lo = r.lo;
                in->ranges[i].hi = r.hi;
                return 1;
            }
        in->ranges[in->range_count++] = r;
        in->random.range_count = in->range_count;
        return 1;
    }
    return 0;
}

bool cli_inputs_check(const char *cmd, const cli_inputs *in, const cg_model *model)
{
    cg_error err;
    cg_error_clear(&err);
    if (cg_samples_check_options(model, in->dims, in->dim_count, in->ranges, in->range_count,
                                 &err) != CG_OK) {
        cli_error(cmd, "%s", err.msg);
        return false;
    }
    return true;
}

cg_model *cli_model_for(const char *cmd, const char *path, const cli_inputs *in,
                        cli_targets *t)
{
    cg_model *model = cli_load_model(cmd, path, NULL);
    if (model && ((in && !cli_inputs_check(cmd, in, model)) ||
                  (t && t->arg_count && !cli_targets_resolve(cmd, t)))) {
        cg_model_free(model);
        model = NULL;
    }
    return model;
}

bool cli_onnx_graph_only(const char *cmd, const char *path, const cg_model *model)
{
    if (!model->tflite)
        return true;
    cli_error(cmd, "%s is a .tflite: %s edits ONNX graphs and writes ONNX (convgate runs a "
              ".tflite through its lowering onto the IR, which is not the file LiteRT loads); "
              "%s its ONNX source instead and check the new conversion with `convgate compare "
              "SOURCE --against CONVERTED.tflite`", path, cmd, cmd);
    return false;
}

void cli_inputs_free(cli_inputs *in)
{
    for (size_t i = 0; i < in->dim_count; i++)
        free((char *)in->dims[i].symbol);
    for (size_t i = 0; i < in->range_count; i++)
        free((char *)in->ranges[i].input);
    in->dim_count = in->range_count = 0;
}

/* --- the options most commands share ------------------------------------------ */

int cli_common_option(const char *cmd, const char *name, char *arg, cli_inputs *in,
                      cli_targets *t, cg_tolerance_args *tol)
{
    int r = 0;
    if (strcmp(name, "json") == 0 || strcmp(name, "quiet") == 0)
        return 1; /* main() saw it */
    if (in && (r = cli_inputs_option(cmd, in, name, arg)) != 0)
        return r;
    if (t && (r = cli_targets_option(cmd, t, name, arg)) != 0)
        return r;
    if (!tol)
        return 0;
    if (strcmp(name, "atol") == 0 || strcmp(name, "rtol") == 0) {
        bool atol = name[0] == 'a';
        if (!cli_parse_double(arg, atol ? &tol->atol : &tol->rtol)) {
            cli_error(cmd, "--%s expects a finite number >= 0, got '%s'", name, arg);
            return -1;
        }
        *(atol ? &tol->have_atol : &tol->have_rtol) = true;
        return 1;
    }
    if (strcmp(name, "tol") == 0) {
        tol->file = arg;
        return 1;
    }
    if (strcmp(name, "nan-equal") == 0) {
        tol->nan_equal = true;
        return 1;
    }
    return 0;
}

int cli_next_option(const char *cmd, int argc, char **argv, const char *shortopts,
                    const struct option *longopts, bool *started, cli_inputs *in,
                    cli_targets *t, cg_tolerance_args *tol)
{
    int c, idx;
    if (!*started) {
        optind = 1;
        opterr = 0;
        *started = true;
    }
    while ((c = getopt_long(argc, argv, shortopts, longopts, &idx)) == 0) {
        int r = cli_common_option(cmd, longopts[idx].name, optarg, in, t, tol);
        if (r < 0)
            return '?';
        if (r == 0) {
            cli_error(cmd, "--%s is not an option of %s", longopts[idx].name, cmd);
            return '?';
        }
    }
    if (c == '?' || c == ':')
        cli_error(cmd, "unknown or incomplete option '%s' (see convgate %s --help)",
                  argv[optind - 1], cmd);
    return c == ':' ? '?' : c;
}

const char *cli_model_arg(const char *cmd, int argc, char **argv, void (*usage)(FILE *))
{
    if (optind + 1 == argc)
        return argv[optind];
    cli_error(cmd, optind >= argc ? "no model given" : "one model at a time");
    usage(stderr);
    return NULL;
}

/* --- samples and name lists --------------------------------------------------------- */

bool cli_samples_load(const char *cmd, const cg_model *model, const char *model_path,
                      const char *golden, const char *inputs, uint64_t random_n,
                      uint64_t default_random, const cli_inputs *in, cg_sample_set *out,
                      char *desc, size_t cap)
{
    cg_error err;
    cg_status st;
    cg_error_clear(&err);
    if ((golden != NULL) + (inputs != NULL) + (random_n != 0) > 1) {
        cli_error(cmd, "give one of --golden, --inputs, --random");
        return false;
    }
    if (golden) {
        if (!model_path || strcmp(model_path, "-") == 0) {
            cli_error(cmd, "--golden needs the model file (its hash is checked), not stdin");
            return false;
        }
        st = cg_samples_load_golden(model, model_path, golden, 0, out, &err);
    } else if (inputs) {
        st = cg_samples_load_dir(model, inputs, 0, out, &err);
    } else {
        st = cg_samples_random(model, (size_t)(random_n ? random_n : default_random), &in->random,
                               in->dims, in->dim_count, 0, out, &err);
    }
    cg_sample_set_describe(out, golden ? golden : inputs, golden != NULL, &in->random, desc, cap);
    if (st != CG_OK) {
        if (golden)
            cli_error(cmd, "golden set %s: %s", golden, err.msg);
        else
            cli_error(cmd, "%s", err.msg);
        return false;
    }
    return true;
}

bool cli_parse_threads(const char *cmd, const char *text, int *out)
{
    uint64_t v;
    if (!text || !cli_parse_count(text, 256, &v) || v < 1) {
        cli_error(cmd, "--threads expects a thread count from 1 to 256, got '%s'",
                  text ? text : "");
        return false;
    }
    *out = (int)v;
    return true;
}

int cli_threads_after_default(void)
{
    return cg_threadpool_cpu_count();
}

bool cli_parse_simd(const char *cmd, const char *text, cg_simd *out)
{
    if (!text || !cg_simd_parse(text, out)) {
        cli_error(cmd, "--simd expects auto, portable, avx2 or avx512, got '%s'",
                  text ? text : "");
        return false;
    }
    return true;
}

bool cli_parse_names(const char *cmd, const char *opt, const char *arg, char **list,
                     size_t *count, size_t max)
{
    for (const char *p = arg;;) {
        const char *comma = strchr(p, ',');
        size_t len = comma ? (size_t)(comma - p) : strlen(p);
        if (len == 0) {
            cli_error(cmd, "--%s %s: an empty name", opt, arg);
            return false;
        }
        if (*count == max) {
            cli_error(cmd, "--%s: more than %zu names", opt, max);
            return false;
        }
        if (!(list[*count] = strndup(p, len))) {
            cli_error(cmd, "out of memory");
            return false;
        }
        (*count)++;
        if (!comma)
            return true;
        p = comma + 1;
    }
}

void cli_names_free(char **list, size_t count)
{
    for (size_t i = 0; i < count; i++)
        free(list[i]);
}

/* --- the rewriting commands' options ----------------------------------------------- */

int cli_rewrite_option(const char *cmd, int c, const char *arg, cli_rewrite_args *r)
{
    switch (c) {
    case 'i': r->inputs = arg; return 1;
    case 'O':
        return cli_parse_names(cmd, "only", arg, r->only, &r->only_count, CLI_MAX_NAMES) ? 1 : -1;
    case 'P':
        return cli_parse_names(cmd, "opt-in", arg, r->opt_in, &r->opt_in_count, CLI_MAX_NAMES)
                   ? 1
                   : -1;
    case 'r':
        if (!cli_parse_count(arg, CLI_MAX_REWRITE_RANDOM, &r->random_n) || !r->random_n) {
            cli_error(cmd, "--random expects a count in [1, %d], got '%s'",
                      CLI_MAX_REWRITE_RANDOM, arg);
            return -1;
        }
        return 1;
    default: return 0;
    }
}

bool cli_rewrite_check(const char *cmd, const cli_rewrite_args *r)
{
    cg_error err;
    cg_error_clear(&err);
    if (cg_rewrite_check_names((const char *const *)r->only, r->only_count, "--only", &err) !=
            CG_OK ||
        cg_rewrite_check_names((const char *const *)r->opt_in, r->opt_in_count, "--opt-in",
                               &err) != CG_OK) {
        cli_error(cmd, "%s", err.msg);
        return false;
    }
    return true;
}

void cli_rewrite_args_free(cli_rewrite_args *r)
{
    cli_names_free(r->only, r->only_count);
    cli_names_free(r->opt_in, r->opt_in_count);
    r->only_count = r->opt_in_count = 0;
}

bool cli_parse_task(const char *cmd, const char *arg, cg_task *task, const char **detect)
{
    *detect = NULL;
    if (strcmp(arg, "classify") == 0)
        *task = CG_TASK_CLASSIFY;
    else if (strcmp(arg, "segment") == 0)
        *task = CG_TASK_SEGMENT;
    else if (strcmp(arg, "detect") == 0)
        *task = CG_TASK_DETECT;
    else if (strncmp(arg, "detect:", 7) == 0 && arg[7]) {
        *task = CG_TASK_DETECT;
        *detect = arg + 7;
    } else {
        cli_error(cmd, "--task expects classify, segment or detect[:BOXES,SCORES[,LABELS]], "
                  "got '%s'", arg);
        return false;
    }
    return true;
}
