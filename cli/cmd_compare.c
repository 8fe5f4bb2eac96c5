/*
 * convgate compare: run the reference runtime and a target path on the same
 * input sets and compare every output, per sample and merged over samples,
 * with the metrics of convgate/compare.h. Outputs made elsewhere (a device
 * run dumped to files) can stand in for the target path (--outputs-from).
 *
 * One sample at a time: its reference and target outputs are compared and
 * freed before the next sample is loaded, so memory does not grow with N.
 * File names built from input/output names keep only [A-Za-z0-9._-] (a
 * leading dot becomes '_'), so a name never reaches outside DIR.
 */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli.h"
#include "convgate/compare.h"
#include "convgate/model.h"
#include "convgate/runtime.h"
#include "convgate/target.h"
#include "convgate/targetpath.h"
#include "convgate/tensor_io.h"
#include "convgate/tensor.h"
#include "verify/compare_report.h"

#define CMP_MAX_TARGETS 16
#define CMP_MAX_SETS 100000
#define CMP_STEM 120
#define CMP_TOPK 5

static void compare_usage(FILE *f)
{
    fputs(
        "Usage: convgate compare MODEL --target T[,T2...] [OPTIONS]\n"
        "\n"
        "Runs MODEL on the reference CPU runtime and on the target path (the model\n"
        "placed on T, T2... and run here: executing targets for real, fp16 profiles\n"
        "emulated) on the same inputs, and compares every output per sample and\n"
        "over all samples: max/mean abs error, max relative error (numpy's: over\n"
        "elements whose ref is not 0), RMSE, NMSE, cosine, Pearson, max ULP distance,\n"
        "NaN/Inf counts on both sides, a |diff| histogram by decade and the worst\n"
        "element. An element passes when |target - ref| <= atol + rtol*|ref|; NaN\n"
        "against a number always fails, NaN against NaN only with --nan-equal.\n"
        "\n"
        "Inputs (one of):\n"
        "  --inputs DIR          one sample per entry of DIR: a folder DIR/SET holding\n"
        "                        NAME.npy or NAME.pb per input (or input_K.pb, as in\n"
        "                        ONNX test data), or a file DIR/SET.npz keyed by name\n"
        "  --random N            N samples of seeded random data (default N = 4):\n"
        "                        floats uniform in [-1, 1), ints in [-10, 10]\n"
        "  --seed S              seed for --random (default 0)\n"
        "  --range NAME=LO:HI    random values of input NAME uniform in [LO, HI)\n"
        "                        (integers: [LO, HI]); repeatable\n"
        "  --dim SYMBOL=VALUE    size of a symbolic dimension (repeatable)\n"
        "\n"
        "Target outputs:\n"
        "  --outputs-from DIR    do not run the target path: read the target's outputs\n"
        "                        from DIR/SET/NAME.npy, DIR/SET/output_K.pb or\n"
        "                        DIR/SET.npz (SET as the input sets are named; random\n"
        "                        samples are named random-0, random-1, ...)\n"
        "  --accumulate fp16|fp32  accumulation of fp16 targets' reductions (default:\n"
        "                        the target profile's)\n"
        "\n"
        "Tolerances:\n"
        "  --atol X --rtol Y     for every output (either may be given alone)\n"
        "  --tol FILE            JSON {\"outputs\": {\"NAME\": {\"atol\": X, \"rtol\": Y,\n"
        "                        \"nan_equal\": B, \"justification\": \"...\"}},\n"
        "                        \"default\": {...}}; each justification is printed\n"
        "  --nan-equal           NaN in both ref and target counts as equal\n"
        "  defaults: atol 1e-5 rtol 1e-4 (ORT OpTester, float); when the path computes\n"
        "  in reduced precision atol 2.5e-3 rtol 1e-3 (ORT OpTester, fp16; see\n"
        "  shared/reference/reliability.md section 3)\n"
        "\n"
        "Task checks (reported; pass/fail stays elementwise):\n"
        "  --task classify       per output, class axis = last axis: top-1 agreement\n"
        "                        and top-5 overlap (|top5 ref & top5 target| / 5)\n"
        "  --task segment        mask = value > --threshold T (default 0.5): mask IoU\n"
        "                        and foreground-count difference\n"
        "\n"
        "  --profiles DIR        capability profiles (default: $CONVGATE_PROFILES, else\n"
        "                        the source tree's profiles/)\n"
        "  --json                print a JSON report {target, pass, samples, outputs:\n"
        "                        [{name, pass, max_abs, max_rel, cosine, nan_ref,\n"
        "                        nan_target, ...}], task, warnings}\n"
        "\n"
        "A reduced-precision path whose float output is bit-identical to the fp32\n"
        "reference gets a warning: it probably did not run there (silent fallback).\n"
        "\n"
        "Exit status: 0 every output within tolerance, 1 some output outside it,\n"
        "2 usage or input error (or a run failed).\n",
        f);
}

/* --- small helpers ------------------------------------------------------------- */

typedef struct cmp_range {
    const char *name;
    double lo, hi;
} cmp_range;

typedef enum cmp_task { CMP_TASK_NONE = 0, CMP_TASK_CLASSIFY, CMP_TASK_SEGMENT } cmp_task;

typedef struct cmp_set {
    char *name;
    char *path; /* folder or .npz; NULL for random samples */
    bool is_npz;
} cmp_set;

/* Per graph output: merged metrics, tolerance, task counters. */
typedef struct cmp_output {
    const char *name;
    cg_tolerance tol;
    const char *tol_source;
    char *justification; /* owned */
    cg_metrics merged;
    int worst_rank;
    int64_t worst_dims[CG_MAX_RANK];
    cg_dtype dtype;
    json_t *samples; /* per-sample summaries */
    char *failing;   /* text list of failing samples (owned) */
    size_t failing_count;
    /* classify */
    uint64_t rows, top1_agree;
    double top5_overlap;
    bool classify_ok;
    /* segment */
    uint64_t inter, uni, fg_ref, fg_got;
    bool segment_ok;
} cmp_output;

static bool parse_double(const char *s, double *out)
{
    char *end;
    if (!s || !*s)
        return false;
    errno = 0;
    *out = strtod(s, &end);
    return !errno && !*end && isfinite(*out);
}

static bool parse_u64(const char *s, uint64_t *out)
{
    char *end;
    if (!s || !isdigit((unsigned char)*s))
        return false;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno || *end)
        return false;
    *out = v;
    return true;
}

/* Safe file stem of a value name (see the file comment). */
static void name_stem(const char *name, char *out, size_t cap)
{
    size_t n = 0;
    for (const char *p = name ? name : ""; *p && n + 1 < cap && n < CMP_STEM; p++) {
        unsigned char c = (unsigned char)*p;
        bool keep = c < 0x80 && (isalnum(c) || c == '.' || c == '_' || c == '-');
        out[n++] = keep ? (char)c : '_';
    }
    out[n] = '\0';
    if (n && out[0] == '.')
        out[0] = '_';
    if (!n && cap > 1)
        snprintf(out, cap, "_");
}

static bool is_file(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

static bool is_dir(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

static char *join(const char *a, const char *b, const char *suffix)
{
    size_t n = strlen(a) + strlen(b) + strlen(suffix) + 2;
    char *s = malloc(n);
    if (s)
        snprintf(s, n, "%s/%s%s", a, b, suffix);
    return s;
}

static bool is_initializer(const cg_graph *g, const char *name)
{
    for (size_t i = 0; i < g->initializer_count; i++)
        if (g->initializers[i].name && strcmp(g->initializers[i].name, name) == 0)
            return true;
    return false;
}

static int cmp_set_name(const void *a, const void *b)
{
    return strcmp(((const cmp_set *)a)->name, ((const cmp_set *)b)->name);
}

static void free_sets(cmp_set *sets, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        free(sets[i].name);
        free(sets[i].path);
    }
    free(sets);
}

/* The sample sets of --inputs DIR: sub-folders and .npz files, sorted. */
static bool list_sets(const char *dir, cmp_set **out, size_t *count)
{
    DIR *d = opendir(dir);
    cmp_set *sets = NULL;
    size_t n = 0, cap = 0;
    struct dirent *e;
    if (!d) {
        cli_error("compare", "--inputs %s: %s", dir, strerror(errno));
        return false;
    }
    while ((e = readdir(d)) != NULL) {
        const char *nm = e->d_name;
        size_t len = strlen(nm);
        if (nm[0] == '.')
            continue;
        char *path = join(dir, nm, "");
        if (!path)
            goto nomem;
        bool npz = len > 4 && strcmp(nm + len - 4, ".npz") == 0 && is_file(path);
        if (!npz && !is_dir(path)) {
            free(path);
            continue;
        }
        if (n == CMP_MAX_SETS) {
            free(path);
            cli_error("compare", "--inputs %s: more than %d sample sets", dir, CMP_MAX_SETS);
            goto fail;
        }
        if (n == cap) {
            size_t nc = cap ? cap * 2 : 16;
            cmp_set *grown = realloc(sets, nc * sizeof *grown);
            if (!grown) {
                free(path);
                goto nomem;
            }
            sets = grown;
            cap = nc;
        }
        sets[n].path = path;
        sets[n].is_npz = npz;
        sets[n].name = npz ? strndup(nm, len - 4) : strdup(nm);
        if (!sets[n].name) {
            free(path);
            goto nomem;
        }
        n++;
    }
    closedir(d);
    d = NULL;
    if (!n) {
        cli_error("compare", "--inputs %s holds no sample sets (folders or .npz files)", dir);
        goto fail;
    }
    qsort(sets, n, sizeof *sets, cmp_set_name);
    *out = sets;
    *count = n;
    return true;
nomem:
    cli_error("compare", "out of memory");
fail:
    if (d)
        closedir(d);
    free_sets(sets, n);
    return false;
}

/* Loads value NAME (graph value index k, kind "input"/"output") of a set
 * from a folder or an .npz. */
static bool load_named(const cmp_set *set, const char *name, size_t k, const char *kind,
                       const cg_type *type, size_t max_alloc, cg_value **out)
{
    cg_error err;
    cg_error_clear(&err);
    char stem[CMP_STEM + 2], alt[64];
    name_stem(name, stem, sizeof stem);
    if (set->is_npz) {
        cg_npz *npz = NULL;
        cg_tensor t;
        memset(&t, 0, sizeof t);
        if (cg_npz_open(set->path, max_alloc, &npz, &err) != CG_OK ||
            cg_npz_load(npz, name, &t, &err) != CG_OK ||
            cg_value_from_tensor(&t, out, &err) != CG_OK) {
            cg_tensor_release(&t);
            cg_npz_free(npz);
            cli_error("compare", "%s '%s' of sample %s: %s", kind, name, set->name, err.msg);
            return false;
        }
        cg_npz_free(npz);
        return true;
    }
    snprintf(alt, sizeof alt, "%s_%zu", kind, k);
    const char *names[4] = {stem, stem, alt, NULL};
    const char *suffixes[4] = {".npy", ".pb", ".pb", NULL};
    for (int i = 0; names[i]; i++) {
        char *path = join(set->path, names[i], suffixes[i]);
        if (!path) {
            cli_error("compare", "out of memory");
            return false;
        }
        if (is_file(path)) {
            cg_status st = cg_io_load_value(path, type, max_alloc, out, &err);
            if (st != CG_OK)
                cli_error("compare", "%s '%s': %s", kind, name, err.msg);
            free(path);
            return st == CG_OK;
        }
        free(path);
    }
    cli_error("compare", "sample %s: no file for %s '%s' (looked for %s/%s.npy, %s.pb, %s.pb)",
              set->name, kind, name, set->path, stem, stem, alt);
    return false;
}

/* One random input: declared shape with --dim bindings, values in --range. */
static bool random_input(const cg_value_info *vi, const cg_dim_binding *dims, size_t dim_count,
                         const cmp_range *ranges, size_t range_count, cg_rng *rng,
                         size_t max_alloc, cg_value **out)
{
    const cg_type *t = vi->type;
    int64_t shape[CG_MAX_RANK];
    cg_tensor tensor;
    cg_error err;
    cg_error_clear(&err);
    memset(&tensor, 0, sizeof tensor);
    if (!t || t->kind != CG_TYPE_TENSOR || !t->has_elem_type || !t->shape) {
        cli_error("compare", "input '%s' has no declared tensor type and shape; give --inputs",
                  vi->name);
        return false;
    }
    if (t->shape->rank > CG_MAX_RANK) {
        cli_error("compare", "input '%s' has rank %zu, above %d", vi->name, t->shape->rank,
                  CG_MAX_RANK);
        return false;
    }
    for (size_t d = 0; d < t->shape->rank; d++) {
        const cg_dim *dim = &t->shape->dims[d];
        if (dim->has_value && dim->value >= 0) {
            shape[d] = dim->value;
            continue;
        }
        size_t k = 0;
        while (dim->param && k < dim_count && strcmp(dims[k].symbol, dim->param) != 0)
            k++;
        if (!dim->param || k == dim_count) {
            cli_error("compare", "input '%s': dimension %zu (%s) has no size; give --dim %s=N",
                      vi->name, d, dim->param ? dim->param : "unnamed",
                      dim->param ? dim->param : "SYMBOL");
            return false;
        }
        shape[d] = dims[k].value;
    }
    const cmp_range *range = NULL;
    for (size_t i = 0; i < range_count; i++)
        if (strcmp(ranges[i].name, vi->name) == 0)
            range = &ranges[i];
    cg_dtype dt = (cg_dtype)t->elem_type;
    if (cg_tensor_alloc(&tensor, dt, (int)t->shape->rank, shape, max_alloc, &err) != CG_OK ||
        cg_io_random_fill(&tensor, rng, &err) != CG_OK)
        goto fail;
    if (range) {
        bool integral = cg_dtype_is_int(dt) || dt == CG_DTYPE_BOOL;
        double span = range->hi - range->lo;
        for (int64_t i = 0; i < tensor.numel; i++) {
            /* 53 random bits: uniform in [0, 1) */
            double u = (double)(cg_rng_next(rng) >> 11) * (1.0 / 9007199254740992.0);
            double v = integral ? floor(range->lo + u * (floor(span) + 1)) : range->lo + u * span;
            cg_tensor_set_f64(&tensor, i, v);
        }
    }
    if (cg_value_from_tensor(&tensor, out, &err) != CG_OK)
        goto fail;
    return true;
fail:
    cg_tensor_release(&tensor);
    cli_error("compare", "input '%s': %s", vi->name, err.msg);
    return false;
}

/* --- tolerances ---------------------------------------------------------------- */

/* Reads one {"atol","rtol","nan_equal","justification"} object over *tol. */
static bool tol_from_json(const char *file, const char *what, json_t *o, cg_tolerance *tol,
                          char **justification)
{
    const char *key;
    json_t *v;
    if (!json_is_object(o)) {
        cli_error("compare", "%s: %s must be an object", file, what);
        return false;
    }
    json_object_foreach(o, key, v) {
        if ((strcmp(key, "atol") == 0 || strcmp(key, "rtol") == 0) &&
            (!json_is_number(v) || json_number_value(v) < 0 ||
             !isfinite(json_number_value(v)))) {
            cli_error("compare", "%s: %s.%s must be a non-negative number", file, what, key);
            return false;
        }
        if (strcmp(key, "atol") == 0)
            tol->atol = json_number_value(v);
        else if (strcmp(key, "rtol") == 0)
            tol->rtol = json_number_value(v);
        else if (strcmp(key, "nan_equal") == 0 && json_is_boolean(v))
            tol->nan_equal = json_is_true(v);
        else if (strcmp(key, "justification") == 0 && json_is_string(v)) {
            free(*justification);
            if ((*justification = strdup(json_string_value(v))) == NULL) {
                cli_error("compare", "out of memory");
                return false;
            }
        } else {
            cli_error("compare", "%s: %s: unknown or mistyped key '%s' (atol, rtol, nan_equal, "
                      "justification)", file, what, key);
            return false;
        }
    }
    return true;
}

/* Applies --tol FILE to the outputs (an unknown output name is an error: a
 * typo must not silently fall back to the default). */
static bool apply_tol_file(const char *file, cmp_output *outs, size_t count)
{
    json_error_t jerr;
    json_t *doc = json_load_file(file, 0, &jerr);
    bool ok = false;
    char *default_just = NULL;
    cg_tolerance deflt;
    if (!doc) {
        cli_error("compare", "--tol %s: %s (line %d)", file, jerr.text, jerr.line);
        return false;
    }
    const char *key;
    json_t *v;
    json_object_foreach(doc, key, v) {
        if (strcmp(key, "outputs") != 0 && strcmp(key, "default") != 0) {
            cli_error("compare", "--tol %s: unknown key '%s' (outputs, default)", file, key);
            goto done;
        }
    }
    json_t *d = json_object_get(doc, "default");
    if (d) {
        deflt = outs[0].tol;
        if (!tol_from_json(file, "default", d, &deflt, &default_just))
            goto done;
        for (size_t i = 0; i < count; i++) {
            bool nan_equal = outs[i].tol.nan_equal;
            outs[i].tol = deflt;
            outs[i].tol.nan_equal = deflt.nan_equal || nan_equal;
            outs[i].tol_source = "--tol default";
            free(outs[i].justification);
            outs[i].justification = default_just ? strdup(default_just) : NULL;
        }
    }
    json_t *per = json_object_get(doc, "outputs");
    if (per && !json_is_object(per)) {
        cli_error("compare", "--tol %s: \"outputs\" must be an object", file);
        goto done;
    }
    json_object_foreach(per, key, v) {
        size_t i = 0;
        while (i < count && strcmp(outs[i].name, key) != 0)
            i++;
        if (i == count) {
            cli_error("compare", "--tol %s: the model has no output '%s'", file, key);
            goto done;
        }
        char what[300];
        snprintf(what, sizeof what, "outputs.%s", key);
        if (!tol_from_json(file, what, v, &outs[i].tol, &outs[i].justification))
            goto done;
        outs[i].tol_source = "--tol";
    }
    ok = true;
done:
    free(default_just);
    json_decref(doc);
    return ok;
}

/* --- task checks ----------------------------------------------------------------- */

/* a ranks above b: NaN above everything (numpy's argmax picks NaN first) */
static bool ranks_above(double a, double b)
{
    if (isnan(a))
        return !isnan(b);
    return !isnan(b) && a > b;
}

/* Indices of the k largest of row[0..c), largest first, first index on ties. */
static void top_k(const cg_tensor *t, int64_t base, int64_t c, int k, int64_t *idx)
{
    for (int j = 0; j < k; j++) {
        int64_t best = -1;
        for (int64_t i = 0; i < c; i++) {
            bool taken = false;
            for (int q = 0; q < j; q++)
                taken = taken || idx[q] == i;
            if (taken)
                continue;
            if (best < 0 || ranks_above(cg_tensor_get_f64(t, base + i),
                                        cg_tensor_get_f64(t, base + best)))
                best = i;
        }
        idx[j] = best;
    }
}

static void task_sample(cmp_task task, double threshold, cmp_output *o, const cg_tensor *ref,
                        const cg_tensor *got)
{
    if (task == CMP_TASK_CLASSIFY) {
        int64_t c = ref->rank >= 1 ? ref->dims[ref->rank - 1] : 0;
        if (c < 2 || !cg_dtype_is_float(ref->dtype)) {
            o->classify_ok = false;
            return;
        }
        int k = c < CMP_TOPK ? (int)c : CMP_TOPK;
        for (int64_t base = 0; base + c <= ref->numel; base += c) {
            int64_t ir[CMP_TOPK], ig[CMP_TOPK];
            top_k(ref, base, c, k, ir);
            top_k(got, base, c, k, ig);
            int common = 0;
            for (int a = 0; a < k; a++)
                for (int b = 0; b < k; b++)
                    common += ir[a] == ig[b];
            o->rows++;
            o->top1_agree += ir[0] == ig[0];
            o->top5_overlap += (double)common / k;
        }
    } else if (task == CMP_TASK_SEGMENT) {
        for (int64_t i = 0; i < ref->numel; i++) {
            bool a = cg_tensor_get_f64(ref, i) > threshold, b = cg_tensor_get_f64(got, i) > threshold;
            o->inter += a && b;
            o->uni += a || b;
            o->fg_ref += a;
            o->fg_got += b;
        }
    }
}

/* --- the command ----------------------------------------------------------------- */

typedef struct cmp_args {
    const char *model_path, *inputs_dir, *outputs_from, *tol_file, *profiles;
    const char *target_args[CMP_MAX_TARGETS];
    size_t target_arg_count;
    cg_dim_binding dims[64];
    size_t dim_count;
    cmp_range ranges[64];
    size_t range_count;
    uint64_t random_n, seed;
    bool have_random, have_atol, have_rtol, nan_equal, json;
    double atol, rtol, threshold;
    cmp_task task;
    int accumulate; /* -1 profile's, 0 fp16, 1 fp32 */
} cmp_args;

static bool parse_binding(const char *opt, const char *arg, char **name, const char **rest,
                          char sep)
{
    const char *eq = strchr(arg, sep);
    if (!eq || eq == arg || !eq[1]) {
        cli_error("compare", "%s expects NAME%cVALUE, got '%s'", opt, sep, arg);
        return false;
    }
    *name = strndup(arg, (size_t)(eq - arg));
    *rest = eq + 1;
    if (!*name) {
        cli_error("compare", "out of memory");
        return false;
    }
    return true;
}

static int parse_args(int argc, char **argv, cmp_args *a, char **owned, size_t *owned_count)
{
    static const struct option longopts[] = {
        {"target", required_argument, NULL, 't'},   {"inputs", required_argument, NULL, 'i'},
        {"random", required_argument, NULL, 'r'},   {"seed", required_argument, NULL, 's'},
        {"range", required_argument, NULL, 'R'},    {"dim", required_argument, NULL, 'd'},
        {"atol", required_argument, NULL, 'a'},     {"rtol", required_argument, NULL, 'e'},
        {"tol", required_argument, NULL, 'T'},      {"nan-equal", no_argument, NULL, 'n'},
        {"task", required_argument, NULL, 'k'},     {"threshold", required_argument, NULL, 'h'},
        {"outputs-from", required_argument, NULL, 'o'}, {"json", no_argument, NULL, 'j'},
        {"accumulate", required_argument, NULL, 'A'}, {"help", no_argument, NULL, 'H'},
        {"profiles", required_argument, NULL, 'P'},
        {NULL, 0, NULL, 0}};
    int c;
    bool have_threshold = false;
    a->threshold = 0.5;
    a->accumulate = -1;
    opterr = 0;
    optind = 1;
    while ((c = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
        char *name;
        const char *rest;
        switch (c) {
        case 't':
            if (a->target_arg_count == CMP_MAX_TARGETS) {
                cli_error("compare", "too many --target options");
                return CG_EXIT_ERROR;
            }
            a->target_args[a->target_arg_count++] = optarg;
            break;
        case 'i': a->inputs_dir = optarg; break;
        case 'o': a->outputs_from = optarg; break;
        case 'P': a->profiles = optarg; break;
        case 'T': a->tol_file = optarg; break;
        case 'n': a->nan_equal = true; break;
        case 'j': a->json = true; break;
        case 'r':
            if (!parse_u64(optarg, &a->random_n) || a->random_n == 0 ||
                a->random_n > CMP_MAX_SETS) {
                cli_error("compare", "--random expects a count in 1..%d, got '%s'",
                          CMP_MAX_SETS, optarg);
                return CG_EXIT_ERROR;
            }
            a->have_random = true;
            break;
        case 's':
            if (!parse_u64(optarg, &a->seed)) {
                cli_error("compare", "--seed expects a non-negative integer, got '%s'", optarg);
                return CG_EXIT_ERROR;
            }
            break;
        case 'a':
        case 'e': {
            double v;
            if (!parse_double(optarg, &v) || v < 0) {
                cli_error("compare", "--%s expects a non-negative number, got '%s'",
                          c == 'a' ? "atol" : "rtol", optarg);
                return CG_EXIT_ERROR;
            }
            if (c == 'a') {
                a->atol = v;
                a->have_atol = true;
            } else {
                a->rtol = v;
                a->have_rtol = true;
            }
            break;
        }
        case 'h':
            if (!parse_double(optarg, &a->threshold)) {
                cli_error("compare", "--threshold expects a number, got '%s'", optarg);
                return CG_EXIT_ERROR;
            }
            have_threshold = true;
            break;
        case 'k':
            if (strcmp(optarg, "classify") == 0)
                a->task = CMP_TASK_CLASSIFY;
            else if (strcmp(optarg, "segment") == 0)
                a->task = CMP_TASK_SEGMENT;
            else {
                cli_error("compare", "--task expects classify or segment, got '%s'", optarg);
                return CG_EXIT_ERROR;
            }
            break;
        case 'A':
            if (strcmp(optarg, "fp16") != 0 && strcmp(optarg, "fp32") != 0) {
                cli_error("compare", "--accumulate expects fp16 or fp32, got '%s'", optarg);
                return CG_EXIT_ERROR;
            }
            a->accumulate = strcmp(optarg, "fp32") == 0;
            break;
        case 'd':
        case 'R':
            if (!parse_binding(c == 'd' ? "--dim" : "--range", optarg, &name, &rest,
                               c == 'd' ? '=' : '='))
                return CG_EXIT_ERROR;
            if (*owned_count == 128) {
                free(name);
                cli_error("compare", "too many --dim and --range options");
                return CG_EXIT_ERROR;
            }
            owned[(*owned_count)++] = name;
            if (c == 'd') {
                uint64_t v;
                if (a->dim_count == 64 || !parse_u64(rest, &v) || v > INT64_MAX) {
                    cli_error("compare", "--dim %s: expects SYMBOL=SIZE (at most 64)", optarg);
                    return CG_EXIT_ERROR;
                }
                a->dims[a->dim_count].symbol = name;
                a->dims[a->dim_count++].value = (int64_t)v;
            } else {
                const char *colon = strchr(rest, ':');
                char lo[64];
                cmp_range *r = &a->ranges[a->range_count];
                if (a->range_count == 64 || !colon || (size_t)(colon - rest) >= sizeof lo) {
                    cli_error("compare", "--range %s: expects NAME=LO:HI (at most 64)", optarg);
                    return CG_EXIT_ERROR;
                }
                memcpy(lo, rest, (size_t)(colon - rest));
                lo[colon - rest] = '\0';
                if (!parse_double(lo, &r->lo) || !parse_double(colon + 1, &r->hi) ||
                    !(r->hi > r->lo)) {
                    cli_error("compare", "--range %s: LO and HI must be numbers with LO < HI",
                              optarg);
                    return CG_EXIT_ERROR;
                }
                r->name = name;
                a->range_count++;
            }
            break;
        case 'H':
            compare_usage(stdout);
            return CG_EXIT_OK;
        default:
            cli_error("compare", "unknown or incomplete option '%s' (see convgate compare "
                      "--help)", argv[optind - 1]);
            return CG_EXIT_ERROR;
        }
    }
    if (optind + 1 != argc) {
        compare_usage(stderr);
        return CG_EXIT_ERROR;
    }
    a->model_path = argv[optind];
    if (!a->target_arg_count) {
        cli_error("compare", "--target is required (`convgate targets` lists them)");
        return CG_EXIT_ERROR;
    }
    if (a->inputs_dir && a->have_random) {
        cli_error("compare", "give --inputs DIR or --random N, not both");
        return CG_EXIT_ERROR;
    }
    if (a->tol_file && (a->have_atol || a->have_rtol)) {
        cli_error("compare", "give --atol/--rtol or --tol FILE, not both");
        return CG_EXIT_ERROR;
    }
    if (have_threshold && a->task != CMP_TASK_SEGMENT) {
        cli_error("compare", "--threshold applies to --task segment");
        return CG_EXIT_ERROR;
    }
    if (a->range_count && a->inputs_dir) {
        cli_error("compare", "--range applies to random inputs, not --inputs");
        return CG_EXIT_ERROR;
    }
    if (!a->inputs_dir && !a->have_random)
        a->random_n = 4;
    return -1;
}

/* Everything one run of the command holds (freed in one place). */
typedef struct cmp_state {
    cg_model *model;
    cg_target_registry *reg;
    const cg_target *targets[CMP_MAX_TARGETS];
    size_t target_count;
    char target_list[1024];
    cg_target_path *path;
    cg_runtime *rt;
    cmp_set *sets;
    size_t set_count;
    cmp_output *outs;
    size_t out_count;
    json_t *warnings;
    bool reduced;
} cmp_state;

static bool resolve_targets(cmp_args *a, cmp_state *s)
{
    cg_error err;
    cg_error_clear(&err);
    if (cg_target_registry_load(a->profiles, &s->reg, &err) != CG_OK) {
        cli_error("compare", "%s", err.msg);
        return false;
    }
    for (size_t i = 0; i < a->target_arg_count; i++) {
        char buf[256];
        const char *p = a->target_args[i];
        while (*p) {
            size_t len = strcspn(p, ",");
            if (len == 0 || len >= sizeof buf) {
                cli_error("compare", "--target %s: empty or overlong target name",
                          a->target_args[i]);
                return false;
            }
            memcpy(buf, p, len);
            buf[len] = '\0';
            p += len + (p[len] == ',');
            const cg_target *t = cg_target_registry_find(s->reg, buf, &err);
            if (!t) {
                cli_error("compare", "%s", err.msg[0] ? err.msg : "unknown target");
                return false;
            }
            for (size_t k = 0; k < s->target_count; k++)
                if (s->targets[k] == t) {
                    cli_error("compare", "target '%s' given twice", buf);
                    return false;
                }
            if (s->target_count == CMP_MAX_TARGETS) {
                cli_error("compare", "more than %d targets", CMP_MAX_TARGETS);
                return false;
            }
            s->targets[s->target_count++] = t;
            size_t used = strlen(s->target_list);
            snprintf(s->target_list + used, sizeof s->target_list - used, "%s%s",
                     used ? "," : "", t->name);
        }
    }
    return true;
}

static bool build_sets(const cmp_args *a, cmp_state *s)
{
    if (a->inputs_dir)
        return list_sets(a->inputs_dir, &s->sets, &s->set_count);
    s->sets = calloc((size_t)a->random_n, sizeof *s->sets);
    if (!s->sets) {
        cli_error("compare", "out of memory");
        return false;
    }
    for (uint64_t i = 0; i < a->random_n; i++) {
        char name[32];
        snprintf(name, sizeof name, "random-%" PRIu64, i);
        if ((s->sets[i].name = strdup(name)) == NULL) {
            s->set_count = (size_t)i;
            cli_error("compare", "out of memory");
            return false;
        }
    }
    s->set_count = (size_t)a->random_n;
    return true;
}

/* Inputs of one sample, in graph-input order (initializers skipped). */
static bool sample_inputs(const cmp_args *a, const cmp_state *s, const cmp_set *set,
                          cg_rng *rng, cg_named_value *feeds, size_t *feed_count)
{
    const cg_graph *g = s->model->graph;
    size_t k = 0;
    *feed_count = 0;
    for (size_t i = 0; i < g->input_count; i++) {
        const cg_value_info *vi = &g->inputs[i];
        if (is_initializer(g, vi->name))
            continue;
        cg_value *v = NULL;
        bool ok = set->path ? load_named(set, vi->name, k, "input", vi->type, 0, &v)
                            : random_input(vi, a->dims, a->dim_count, a->ranges,
                                           a->range_count, rng, 0, &v);
        if (!ok)
            return false;
        feeds[*feed_count].name = vi->name;
        feeds[(*feed_count)++].value = v;
        k++;
    }
    return true;
}

static const cg_value *find_output(const cg_named_value *outs, size_t n, const char *name)
{
    for (size_t i = 0; i < n; i++)
        if (outs[i].name && strcmp(outs[i].name, name) == 0)
            return outs[i].value;
    return NULL;
}

/* Compares one output of one sample and folds it into the totals. */
static bool compare_output(const cmp_set *set, size_t sample, cmp_output *o, const cg_value *ref,
                           const cg_value *got, cmp_task task, double threshold)
{
    cg_error err;
    cg_metrics m;
    cg_error_clear(&err);
    if (!ref || !got) {
        cli_error("compare", "sample %s: output '%s' missing from the %s run", set->name,
                  o->name, !ref ? "reference" : "target");
        return false;
    }
    if (ref->kind != CG_VALUE_TENSOR || got->kind != CG_VALUE_TENSOR) {
        cli_error("compare", "output '%s' is a sequence or optional: compare handles tensor "
                  "outputs only", o->name);
        return false;
    }
    if (cg_compare_tensors(&ref->tensor, &got->tensor, &o->tol, &m, &err) != CG_OK) {
        cli_error("compare", "output '%s': %s", o->name, err.msg);
        return false;
    }
    m.worst_sample = (int64_t)sample;
    cg_metrics_merge(&o->merged, &m);
    o->dtype = ref->tensor.dtype;
    if (o->merged.worst_sample == (int64_t)sample) {
        o->worst_rank = ref->tensor.rank;
        memcpy(o->worst_dims, ref->tensor.dims, sizeof o->worst_dims);
    }
    json_t *js = json_object();
    json_object_set_new(js, "set", json_string(set->name));
    json_object_set_new(js, "pass", json_boolean(m.pass));
    json_object_set_new(js, "mismatches", json_integer((json_int_t)m.mismatches));
    json_object_set_new(js, "max_abs", cg_report_json_number(m.max_abs));
    json_object_set_new(js, "max_rel", cg_report_json_number(m.max_rel));
    json_object_set_new(js, "cosine", cg_report_json_number(m.cosine));
    json_object_set_new(js, "bit_identical", json_boolean(m.bit_identical));
    json_array_append_new(o->samples, js);
    if (!m.pass) {
        char item[200];
        snprintf(item, sizeof item, "%s%s (max_abs %.3g)", o->failing_count ? ", " : "",
                 set->name, m.max_abs);
        if (o->failing_count < 10) {
            size_t old = o->failing ? strlen(o->failing) : 0;
            char *grown = realloc(o->failing, old + strlen(item) + 1);
            if (grown) {
                memcpy(grown + old, item, strlen(item) + 1);
                o->failing = grown;
            }
        }
        o->failing_count++;
    }
    if (!m.shape_mismatch)
        task_sample(task, threshold, o, &ref->tensor, &got->tensor);
    return true;
}

static bool run_samples(const cmp_args *a, cmp_state *s)
{
    const cg_graph *g = s->model->graph;
    cg_named_value *feeds = calloc(g->input_count ? g->input_count : 1, sizeof *feeds);
    cg_named_value *got_files = calloc(g->output_count ? g->output_count : 1, sizeof *got_files);
    cg_rng rng;
    bool ok = feeds && got_files;
    if (!ok)
        cli_error("compare", "out of memory");
    cg_rng_seed(&rng, a->seed);
    for (size_t si = 0; ok && si < s->set_count; si++) {
        const cmp_set *set = &s->sets[si];
        size_t feed_count = 0, ref_count = 0, got_count = 0;
        cg_named_value *ref_out = NULL, *got_out = NULL;
        cg_error err;
        cg_error_clear(&err);
        ok = sample_inputs(a, s, set, &rng, feeds, &feed_count);
        if (ok && cg_runtime_run(s->rt, feeds, feed_count, &ref_out, &ref_count, &err) != CG_OK) {
            cli_error("compare", "sample %s: reference run failed: %s", set->name, err.msg);
            ok = false;
        }
        if (ok && a->outputs_from) {
            char *dir = join(a->outputs_from, set->name, "");
            char *npz = join(a->outputs_from, set->name, ".npz");
            cmp_set src = {set->name, NULL, false};
            if (!dir || !npz) {
                cli_error("compare", "out of memory");
                ok = false;
            } else if (is_dir(dir)) {
                src.path = dir;
            } else if (is_file(npz)) {
                src.path = npz;
                src.is_npz = true;
            } else {
                cli_error("compare", "--outputs-from: no %s or %s for sample %s", dir, npz,
                          set->name);
                ok = false;
            }
            for (size_t k = 0; ok && k < g->output_count; k++) {
                got_files[k].name = g->outputs[k].name;
                ok = load_named(&src, g->outputs[k].name, k, "output", g->outputs[k].type, 0,
                                &got_files[k].value);
                got_count = k + 1;
            }
            free(dir);
            free(npz);
        } else if (ok && cg_target_path_run(s->path, feeds, feed_count, &got_out, &got_count,
                                            &err) != CG_OK) {
            cli_error("compare", "sample %s: target path run failed: %s", set->name, err.msg);
            ok = false;
        }
        for (size_t k = 0; ok && k < s->out_count; k++) {
            const cg_named_value *gsrc = a->outputs_from ? got_files : got_out;
            ok = compare_output(set, si, &s->outs[k], find_output(ref_out, ref_count,
                                s->outs[k].name), find_output(gsrc, got_count, s->outs[k].name),
                                a->task, a->threshold);
        }
        for (size_t i = 0; i < feed_count; i++)
            cg_value_free(feeds[i].value);
        if (a->outputs_from) {
            for (size_t k = 0; k < got_count; k++) {
                cg_value_free(got_files[k].value);
                got_files[k].value = NULL;
            }
        } else if (got_out) {
            cg_runtime_free_outputs(got_out, got_count);
        }
        if (ref_out)
            cg_runtime_free_outputs(ref_out, ref_count);
    }
    free(feeds);
    free(got_files);
    return ok;
}

/* Silent-fallback suspicion: reduced precision, float output, every sample
 * bit-identical to the fp32 reference. */
static bool fallback_suspect(const cmp_state *s, const cmp_output *o)
{
    return s->reduced && o->merged.count > 0 && o->merged.bit_identical &&
           (o->dtype == CG_DTYPE_FLOAT || o->dtype == CG_DTYPE_DOUBLE);
}

static void print_text(const cmp_args *a, const cmp_state *s, bool pass)
{
    size_t failed = 0;
    printf("compare %s on %s%s\n", a->model_path, s->target_list,
           s->reduced ? " (reduced precision: fp16)" : "");
    printf("target outputs: %s%s\n", a->outputs_from ? "read from " : "target path run here",
           a->outputs_from ? a->outputs_from : "");
    if (a->inputs_dir)
        printf("samples: %zu from %s\n", s->set_count, a->inputs_dir);
    else
        printf("samples: %zu random (seed %" PRIu64 ")\n", s->set_count, a->seed);
    for (size_t k = 0; k < s->out_count; k++) {
        const cmp_output *o = &s->outs[k];
        const char *sample = o->merged.worst_sample >= 0 &&
                                     (size_t)o->merged.worst_sample < s->set_count
                                 ? s->sets[o->merged.worst_sample].name
                                 : NULL;
        failed += !o->merged.pass;
        printf("\noutput %s: %s\n", o->name, o->merged.pass ? "PASS" : "FAIL");
        printf("    tolerance atol %g rtol %g%s (%s)\n", o->tol.atol, o->tol.rtol,
               o->tol.nan_equal ? " nan_equal" : "", o->tol_source);
        if (o->justification)
            printf("    justification: %s\n", o->justification);
        cg_report_metrics_text(stdout, "    ", &o->merged, sample, o->worst_rank, o->worst_dims);
        if (o->failing_count)
            printf("    failing samples: %zu of %zu: %s%s\n", o->failing_count, s->set_count,
                   o->failing ? o->failing : "", o->failing_count > 10 ? ", ..." : "");
        if (fallback_suspect(s, o))
            printf("    WARNING: bit-identical to the fp32 reference although the path computes "
                   "in reduced precision: it probably did not run on %s (silent fallback?)\n",
                   s->target_list);
        if (a->task == CMP_TASK_CLASSIFY) {
            if (!o->classify_ok || !o->rows)
                printf("    task classify: not applicable (needs a float output whose last "
                       "axis has >= 2 classes)\n");
            else
                printf("    task classify: top-1 agreement %" PRIu64 "/%" PRIu64
                       " (%.2f%%), top-5 overlap %.2f%%\n", o->top1_agree, o->rows,
                       100.0 * (double)o->top1_agree / (double)o->rows,
                       100.0 * o->top5_overlap / (double)o->rows);
        } else if (a->task == CMP_TASK_SEGMENT) {
            printf("    task segment (> %g): mask IoU %.6f, foreground ref %" PRIu64
                   " target %" PRIu64 " (difference %+" PRId64 ")\n", a->threshold,
                   o->uni ? (double)o->inter / (double)o->uni : 1.0, o->fg_ref, o->fg_got,
                   (int64_t)o->fg_got - (int64_t)o->fg_ref);
        }
    }
    printf("\nverdict: %s (%zu of %zu outputs outside tolerance over %zu samples)\n",
           pass ? "PASS" : "FAIL", failed, s->out_count, s->set_count);
}

static int print_json(const cmp_args *a, const cmp_state *s, bool pass)
{
    json_t *root = json_object(), *outs = json_array(), *task = json_object(), *tasks = json_array();
    json_t *targets = json_array();
    for (size_t i = 0; i < s->target_count; i++)
        json_array_append_new(targets, json_string(s->targets[i]->name));
    json_object_set_new(root, "model", json_string(a->model_path));
    json_object_set_new(root, "target", json_string(s->target_list));
    json_object_set_new(root, "targets", targets);
    json_object_set_new(root, "reduced_precision", json_boolean(s->reduced));
    json_object_set_new(root, "outputs_from", a->outputs_from ? json_string(a->outputs_from)
                                                              : json_null());
    json_object_set_new(root, "pass", json_boolean(pass));
    json_object_set_new(root, "samples", json_integer((json_int_t)s->set_count));
    json_object_set_new(root, "seed", a->inputs_dir ? json_null()
                                                    : json_integer((json_int_t)a->seed));
    json_object_set_new(task, "kind", json_string(a->task == CMP_TASK_CLASSIFY ? "classify"
                                                  : a->task == CMP_TASK_SEGMENT ? "segment"
                                                                                : "none"));
    if (a->task == CMP_TASK_SEGMENT)
        json_object_set_new(task, "threshold", json_real(a->threshold));
    for (size_t k = 0; k < s->out_count; k++) {
        const cmp_output *o = &s->outs[k];
        json_t *j = json_object(), *tol = json_object();
        const char *sample = o->merged.worst_sample >= 0 &&
                                     (size_t)o->merged.worst_sample < s->set_count
                                 ? s->sets[o->merged.worst_sample].name
                                 : NULL;
        json_object_set_new(j, "name", json_string(o->name));
        json_object_set_new(j, "pass", json_boolean(o->merged.pass));
        json_object_set_new(tol, "atol", json_real(o->tol.atol));
        json_object_set_new(tol, "rtol", json_real(o->tol.rtol));
        json_object_set_new(tol, "nan_equal", json_boolean(o->tol.nan_equal));
        json_object_set_new(tol, "source", json_string(o->tol_source));
        json_object_set_new(tol, "justification", o->justification
                                                      ? json_string(o->justification)
                                                      : json_null());
        json_object_set_new(j, "tolerance", tol);
        cg_report_metrics_json(j, &o->merged, sample, o->worst_rank, o->worst_dims);
        json_object_set_new(j, "silent_fallback_suspect", json_boolean(fallback_suspect(s, o)));
        json_object_set_new(j, "per_sample", json_incref(o->samples));
        json_array_append_new(outs, j);
        if (a->task != CMP_TASK_NONE) {
            json_t *t = json_object();
            json_object_set_new(t, "output", json_string(o->name));
            if (a->task == CMP_TASK_CLASSIFY) {
                bool ok = o->classify_ok && o->rows;
                json_object_set_new(t, "applicable", json_boolean(ok));
                json_object_set_new(t, "rows", json_integer((json_int_t)o->rows));
                json_object_set_new(t, "top1_agreement",
                                    ok ? json_real((double)o->top1_agree / (double)o->rows)
                                       : json_null());
                json_object_set_new(t, "top5_overlap",
                                    ok ? json_real(o->top5_overlap / (double)o->rows)
                                       : json_null());
            } else {
                json_object_set_new(t, "iou", json_real(o->uni ? (double)o->inter /
                                                                     (double)o->uni : 1.0));
                json_object_set_new(t, "foreground_ref", json_integer((json_int_t)o->fg_ref));
                json_object_set_new(t, "foreground_target", json_integer((json_int_t)o->fg_got));
                json_object_set_new(t, "foreground_diff",
                                    json_integer((json_int_t)o->fg_got - (json_int_t)o->fg_ref));
            }
            json_array_append_new(tasks, t);
        }
    }
    json_object_set_new(task, "outputs", tasks);
    json_object_set_new(root, "outputs", outs);
    json_object_set_new(root, "task", task);
    json_object_set_new(root, "warnings", json_incref(s->warnings));
    int rc = json_dumpf(root, stdout, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
    fputc('\n', stdout);
    json_decref(root);
    return rc;
}

int cmd_compare(int argc, char **argv)
{
    cmp_args a;
    cmp_state s;
    char *owned[128];
    size_t owned_count = 0;
    int rc = CG_EXIT_ERROR;
    cg_error err;
    memset(&a, 0, sizeof a);
    memset(&s, 0, sizeof s);
    cg_error_clear(&err);
    int parsed = parse_args(argc, argv, &a, owned, &owned_count);
    if (parsed >= 0) {
        rc = parsed;
        goto done;
    }
    if ((s.model = cli_load_model("compare", a.model_path, NULL)) == NULL ||
        !resolve_targets(&a, &s) || !build_sets(&a, &s))
        goto done;
    if (!a.outputs_from) {
        cg_target_path_options po;
        memset(&po, 0, sizeof po);
        po.targets = s.targets;
        po.target_count = s.target_count;
        po.dims = a.dims;
        po.dim_count = a.dim_count;
        bool profile_fp32 = false;
        for (size_t i = 0; i < s.target_count; i++)
            profile_fp32 = profile_fp32 || s.targets[i]->accumulate_fp32;
        po.accumulate_fp32 = a.accumulate < 0 ? profile_fp32 : a.accumulate == 1;
        if (cg_target_path_init(s.model, &po, &s.path, &err) != CG_OK) {
            cli_error("compare", "target path: %s", err.msg);
            goto done;
        }
        s.reduced = cg_target_path_reduced_precision(s.path);
    } else {
        /* no path to ask: a target that computes in fp16 makes the outputs
         * reduced precision */
        for (size_t i = 0; i < s.target_count; i++)
            s.reduced = s.reduced || s.targets[i]->precision == CG_PRECISION_FP16;
    }
    cg_runtime_options ro;
    cg_runtime_options_default(&ro);
    if (cg_runtime_init(s.model, &ro, &s.rt, &err) != CG_OK) {
        cli_error("compare", "reference runtime: %s", err.msg);
        goto done;
    }
    const cg_graph *g = s.model->graph;
    if (!g->output_count) {
        cli_error("compare", "%s has no graph outputs to compare", a.model_path);
        goto done;
    }
    s.outs = calloc(g->output_count, sizeof *s.outs);
    s.warnings = json_array();
    if (!s.outs || !s.warnings) {
        cli_error("compare", "out of memory");
        goto done;
    }
    s.out_count = g->output_count;
    for (size_t k = 0; k < s.out_count; k++) {
        cmp_output *o = &s.outs[k];
        o->name = g->outputs[k].name ? g->outputs[k].name : "";
        cg_metrics_init(&o->merged);
        o->worst_rank = -1;
        o->classify_ok = true;
        cg_tolerance_default(&o->tol, s.reduced);
        o->tol.nan_equal = a.nan_equal;
        o->tol_source = "default";
        o->justification = strdup(s.reduced ? "default for reduced-precision paths: ORT "
                                              "OpTester's fp16 tolerance (atol 2.5e-3, rtol "
                                              "1e-3; reliability.md section 3)"
                                            : "default for fp32 paths: ORT OpTester's float "
                                              "tolerance (atol 1e-5, rtol 1e-4)");
        if (a.have_atol || a.have_rtol) {
            o->tol.atol = a.have_atol ? a.atol : o->tol.atol;
            o->tol.rtol = a.have_rtol ? a.rtol : o->tol.rtol;
            o->tol_source = "--atol/--rtol";
            free(o->justification);
            o->justification = NULL;
        }
        o->samples = json_array();
        if (!o->samples) {
            cli_error("compare", "out of memory");
            goto done;
        }
    }
    if (a.tol_file && !apply_tol_file(a.tol_file, s.outs, s.out_count))
        goto done;
    if (!run_samples(&a, &s))
        goto done;
    bool pass = true;
    for (size_t k = 0; k < s.out_count; k++) {
        pass = pass && s.outs[k].merged.pass;
        if (fallback_suspect(&s, &s.outs[k])) {
            char w[512];
            snprintf(w, sizeof w, "output '%s' is bit-identical to the fp32 reference although "
                     "the path computes in reduced precision: it probably did not run on %s "
                     "(silent fallback?)", s.outs[k].name, s.target_list);
            json_array_append_new(s.warnings, json_string(w));
            if (a.json)
                fprintf(stderr, "convgate compare: warning: %s\n", w);
        }
    }
    if (a.json ? print_json(&a, &s, pass) != 0 : (print_text(&a, &s, pass), false)) {
        cli_error("compare", "could not write the report");
        goto done;
    }
    rc = pass ? CG_EXIT_OK : CG_EXIT_FAIL;
done:
    for (size_t k = 0; k < s.out_count; k++) {
        free(s.outs[k].justification);
        free(s.outs[k].failing);
        json_decref(s.outs[k].samples);
    }
    free(s.outs);
    json_decref(s.warnings);
    if (s.rt)
        cg_runtime_free(s.rt);
    if (s.path)
        cg_target_path_free(s.path);
    free_sets(s.sets, s.set_count);
    cg_target_registry_free(s.reg);
    if (s.model)
        cg_model_free(s.model);
    for (size_t i = 0; i < owned_count; i++)
        free(owned[i]);
    return rc;
}
