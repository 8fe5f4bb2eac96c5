/*
 * convgate run: feed a model inputs from files (or seeded random data), run
 * it on the reference CPU runtime, summarize every output and optionally
 * write each one to an output directory as .npy (.npz for sequences).
 *
 * Output file names come from output names, which are untrusted: only
 * [A-Za-z0-9._-] survive, a leading dot is replaced, names are capped in
 * length and made unique (case-insensitively), and files are created with
 * O_NOFOLLOW inside DIR, so nothing is ever written outside it.
 */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "convgate/partition.h"
#include "convgate/target.h"
#include "convgate/targetpath.h"
#include "convgate/model.h"
#include "convgate/runtime.h"
#include "convgate/tensor_io.h"
#include "convgate/tensor.h"

#define RUN_MAX_NAME 120

static void run_usage(FILE *f)
{
    fprintf(f,
        "Usage: convgate run MODEL [OPTIONS]\n"
        "\n"
        "Runs MODEL on the reference CPU runtime and summarizes each output\n"
        "(dtype, shape, min/max/mean over finite values, NaN and Inf counts).\n"
        "\n"
        "Inputs:\n"
        "  -i, --input NAME=FILE   feed graph input NAME from FILE: a TensorProto .pb\n"
        "                          (also SequenceProto/OptionalProto for sequence and\n"
        "                          optional inputs), a .npy, or FILE.npz:KEY (KEY may be\n"
        "                          omitted when the .npz holds one array)\n"
        "  -i @FILE.npz            feed every array of FILE.npz to the input of the\n"
        "                          same name\n"
        "  --random                fill every input not fed with -i from its declared\n"
        "                          type and shape: floats uniform in [-1, 1), signed\n"
        "                          ints in [-10, 10], unsigned in [0, 10], bool 0/1\n"
        "  --seed N                seed for --random (default 0); the same seed gives\n"
        "                          the same inputs on every machine\n"
        "  --dim SYMBOL=VALUE      size of a symbolic dimension for --random\n"
        "\n"
        "Outputs:\n"
        "  -o, --output-dir DIR    write each output to DIR (created if missing) as\n"
        "                          NAME.npy, or NAME.npz (keys 0, 1, ...) for a sequence;\n"
        "                          NAME keeps only [A-Za-z0-9._-] of the output name\n"
        "  --json                  print {\"outputs\":[{name,dtype,shape,file,min,max,\n"
        "                          mean,nan,inf}],\"time_ms\":T} instead of text\n"
        "\n"
        "Target path:\n"
        "  --target T[,T2...]      run the model as these targets would, in priority\n"
        "                          order, the CPU taking the rest (see convgate targets):\n"
        "                          executing targets (xnnpack) run their partitions for\n"
        "                          real; fp16 profiles (litert-gpu) are emulated with\n"
        "                          fp16 storage and accumulation on the reference\n"
        "                          kernels; other profiles change placement only\n"
        "  --accumulate fp16|fp32  accumulation of emulated fp16 targets (default fp16)\n"
        "  --profiles DIR          capability profiles directory\n"
        "\n"
        "Timing:\n"
        "  --repeat N              after the first run (which plans memory), run N more\n"
        "                          times on the same inputs and report the median, min\n"
        "                          and max of those warm runs; time_ms is then the\n"
        "                          median, and --json adds timing:{first_ms, median_ms,\n"
        "                          min_ms, max_ms, runs}. Single-threaded unless\n"
        "                          OPENBLAS_NUM_THREADS says otherwise\n"
        "\n"
        "Limits:\n"
        "  --max-alloc BYTES       fail any single allocation above BYTES (suffixes\n"
        "                          K, M, G; default 4G); also caps input files\n"
        "\n"
        "Exit status: 0 success, 1 the model failed while running, 2 usage or input\n"
        "error (unknown or missing input, dtype or shape mismatch, unreadable file).\n");
}

/* --- argument helpers ------------------------------------------------------------ */

static bool parse_u64(const char *s, uint64_t *out)
{
    char *end;
    if (!s || !*s || *s == '-')
        return false;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno || *end)
        return false;
    *out = v;
    return true;
}

/* BYTES with an optional K/M/G (binary) suffix. */
static bool parse_bytes(const char *s, size_t *out)
{
    char *end;
    if (!s || !isdigit((unsigned char)*s))
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

typedef struct run_feed {
    const char *name; /* graph input name (points into the model or argv) */
    cg_value *value;
    char *source;     /* what it came from, for messages */
} run_feed;

typedef struct run_dim {
    const char *symbol;
    int64_t value;
} run_dim;

typedef struct run_args {
    const char *model_path;
    const char **inputs; /* raw -i arguments */
    size_t input_count;
    run_dim *dims;
    size_t dim_count;
    bool random, json;
    uint64_t seed;
    const char *out_dir;
    size_t max_alloc;
    uint64_t repeat; /* timed runs after the first (0: just one run) */
    const char *targets;  /* --target list, or NULL for the reference runtime */
    const char *profiles; /* --profiles DIR */
    bool accumulate_fp32;
} run_args;

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double elapsed_ms(const struct timespec *t0, const struct timespec *t1)
{
    return (double)(t1->tv_sec - t0->tv_sec) * 1e3 + (double)(t1->tv_nsec - t0->tv_nsec) / 1e6;
}

static const cg_value_info *find_input(const cg_graph *g, const char *name)
{
    for (size_t i = 0; i < g->input_count; i++)
        if (g->inputs[i].name && strcmp(g->inputs[i].name, name) == 0)
            return &g->inputs[i];
    return NULL;
}

static bool is_initializer(const cg_graph *g, const char *name)
{
    for (size_t i = 0; i < g->initializer_count; i++)
        if (g->initializers[i].name && strcmp(g->initializers[i].name, name) == 0)
            return true;
    return false;
}

/* Comma-separated list of the model's input names, for "unknown input" errors. */
static void input_names(const cg_graph *g, char *buf, size_t cap)
{
    size_t n = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < g->input_count && n + 1 < cap; i++) {
        if (is_initializer(g, g->inputs[i].name))
            continue;
        int w = snprintf(buf + n, cap - n, "%s%s", n ? ", " : "", g->inputs[i].name);
        if (w < 0)
            break;
        n += (size_t)w < cap - n ? (size_t)w : cap - n - 1;
    }
    if (!n)
        snprintf(buf, cap, "none");
}

/* Declared type as text: "float32[1,3,N]" (symbols by name, '?' if unknown). */
static void type_text(const cg_type *t, char *buf, size_t cap)
{
    if (!t || t->kind != CG_TYPE_TENSOR) {
        snprintf(buf, cap, "%s", !t ? "untyped" : t->kind == CG_TYPE_SEQUENCE ? "sequence"
                                                 : t->kind == CG_TYPE_OPTIONAL ? "optional"
                                                                               : "non-tensor");
        return;
    }
    size_t n = (size_t)snprintf(buf, cap, "%s",
                                t->has_elem_type ? cg_dtype_name((cg_dtype)t->elem_type) : "?");
    if (!t->shape || n >= cap)
        return;
    n += (size_t)snprintf(buf + n, cap - n, "[");
    for (size_t d = 0; d < t->shape->rank && n < cap; d++) {
        const cg_dim *dim = &t->shape->dims[d];
        if (dim->has_value)
            n += (size_t)snprintf(buf + n, cap - n, "%s%" PRId64, d ? "," : "", dim->value);
        else
            n += (size_t)snprintf(buf + n, cap - n, "%s%s", d ? "," : "",
                                  dim->param ? dim->param : "?");
    }
    if (n < cap)
        snprintf(buf + n, cap - n, "]");
}

/* Checks a fed tensor against the input's declared type; exit-2 message. */
static bool check_feed(const cg_value_info *vi, const run_feed *feed)
{
    const cg_type *t = vi->type;
    char want[256];
    if (!t)
        return true;
    type_text(t, want, sizeof want);
    if (t->kind == CG_TYPE_TENSOR) {
        if (feed->value->kind != CG_VALUE_TENSOR) {
            cli_error("run", "input '%s': %s holds a sequence or optional, the model expects %s",
                      vi->name, feed->source, want);
            return false;
        }
        const cg_tensor *x = &feed->value->tensor;
        if (t->has_elem_type && (int)x->dtype != t->elem_type) {
            cli_error("run", "input '%s': %s holds %s, the model expects %s (dtype mismatch)",
                      vi->name, feed->source, cg_dtype_name(x->dtype), want);
            return false;
        }
        if (t->shape) {
            bool ok = (size_t)x->rank == t->shape->rank;
            for (size_t d = 0; ok && d < t->shape->rank; d++)
                ok = !t->shape->dims[d].has_value || t->shape->dims[d].value == x->dims[d];
            if (!ok) {
                char got[256];
                size_t n = (size_t)snprintf(got, sizeof got, "[");
                for (int d = 0; d < x->rank && n < sizeof got; d++)
                    n += (size_t)snprintf(got + n, sizeof got - n, "%s%" PRId64, d ? "," : "",
                                          x->dims[d]);
                if (n < sizeof got)
                    snprintf(got + n, sizeof got - n, "]");
                cli_error("run", "input '%s': %s has shape %s, the model expects %s (shape "
                          "mismatch)", vi->name, feed->source, got, want);
                return false;
            }
        }
    } else if (t->kind == CG_TYPE_SEQUENCE && feed->value->kind != CG_VALUE_SEQUENCE) {
        cli_error("run", "input '%s': %s is not a sequence; the model expects a sequence "
                  "(give a SequenceProto .pb)", vi->name, feed->source);
        return false;
    } else if (t->kind == CG_TYPE_OPTIONAL && feed->value->kind != CG_VALUE_OPTIONAL) {
        cli_error("run", "input '%s': %s is not an optional; the model expects an optional "
                  "(give an OptionalProto .pb)", vi->name, feed->source);
        return false;
    }
    return true;
}

/* Adds a feed, rejecting unknown names and double feeds. */
static bool add_feed(const cg_graph *g, run_feed *feeds, size_t *count, const char *name,
                     cg_value *value, const char *source)
{
    char names[512];
    const cg_value_info *vi = find_input(g, name);
    if (!vi) {
        input_names(g, names, sizeof names);
        cli_error("run", "unknown input '%s' (from %s); the model's inputs are: %s", name,
                  source, names);
        cg_value_free(value);
        return false;
    }
    for (size_t i = 0; i < *count; i++)
        if (strcmp(feeds[i].name, name) == 0) {
            cli_error("run", "input '%s' is fed twice (%s and %s)", name, feeds[i].source,
                      source);
            cg_value_free(value);
            return false;
        }
    run_feed *f = &feeds[(*count)++];
    f->name = vi->name;
    f->value = value;
    f->source = strdup(source);
    if (!f->source) {
        cli_error("run", "out of memory");
        return false;
    }
    return check_feed(vi, f);
}

/* Loads every -i argument into feeds. */
static bool load_feeds(const run_args *a, const cg_graph *g, run_feed *feeds, size_t *count,
                       size_t feeds_cap)
{
    cg_error err;
    for (size_t i = 0; i < a->input_count; i++) {
        const char *arg = a->inputs[i];
        cg_error_clear(&err);
        if (arg[0] == '@') {
            cg_npz *npz = NULL;
            if (cg_npz_open(arg + 1, a->max_alloc, &npz, &err) != CG_OK) {
                cli_error("run", "%s", err.msg);
                return false;
            }
            bool ok = true;
            for (size_t k = 0; ok && k < cg_npz_count(npz); k++) {
                const char *key = cg_npz_key(npz, k);
                char source[1024];
                cg_tensor t;
                cg_value *v = NULL;
                snprintf(source, sizeof source, "%s:%s", arg + 1, key);
                if (*count >= feeds_cap) {
                    cli_error("run", "%s holds more arrays than the model has inputs", arg + 1);
                    ok = false;
                    break;
                }
                if (!find_input(g, key)) {
                    ok = add_feed(g, feeds, count, key, NULL, source);
                    break;
                }
                if (cg_npz_load(npz, key, &t, &err) != CG_OK ||
                    cg_value_from_tensor(&t, &v, &err) != CG_OK) {
                    cli_error("run", "%s", err.msg);
                    ok = false;
                    break;
                }
                ok = add_feed(g, feeds, count, key, v, source);
            }
            cg_npz_free(npz);
            if (!ok)
                return false;
            continue;
        }
        const char *eq = strchr(arg, '=');
        if (!eq || eq == arg || !eq[1]) {
            cli_error("run", "-i expects NAME=FILE or @FILE.npz, got '%s'", arg);
            return false;
        }
        char *name = strndup(arg, (size_t)(eq - arg));
        if (!name) {
            cli_error("run", "out of memory");
            return false;
        }
        const cg_value_info *vi = find_input(g, name);
        cg_value *v = NULL;
        if (vi && cg_io_load_value(eq + 1, vi->type, a->max_alloc, &v, &err) != CG_OK) {
            cli_error("run", "input '%s': %s", name, err.msg);
            free(name);
            return false;
        }
        if (*count >= feeds_cap) {
            cli_error("run", "more -i arguments than the model has inputs");
            cg_value_free(v);
            free(name);
            return false;
        }
        bool ok = add_feed(g, feeds, count, name, v, eq + 1);
        free(name);
        if (!ok)
            return false;
    }
    return true;
}

/* Binds the symbolic dims of fed tensors (batch = 2 from a fed [2,3] input),
 * so random inputs agree with fed ones; a fed size that contradicts --dim
 * or another input is an error. a->dims has room for every input dim. */
static bool bind_symbols(run_args *a, const cg_graph *g, const run_feed *feeds, size_t count)
{
    for (size_t i = 0; i < count; i++) {
        const cg_value_info *vi = find_input(g, feeds[i].name);
        const cg_type *t = vi ? vi->type : NULL;
        const cg_value *v = feeds[i].value;
        if (!t || t->kind != CG_TYPE_TENSOR || !t->shape || v->kind != CG_VALUE_TENSOR ||
            (size_t)v->tensor.rank != t->shape->rank)
            continue;
        for (size_t d = 0; d < t->shape->rank; d++) {
            const char *sym = t->shape->dims[d].param;
            if (t->shape->dims[d].has_value || !sym || !*sym)
                continue;
            size_t k = 0;
            while (k < a->dim_count && strcmp(a->dims[k].symbol, sym) != 0)
                k++;
            if (k < a->dim_count) {
                if (a->dims[k].value != v->tensor.dims[d]) {
                    cli_error("run", "input '%s' (%s) gives %s = %" PRId64 ", but %s = %" PRId64
                              " already (from --dim or an earlier input)", vi->name,
                              feeds[i].source, sym, v->tensor.dims[d], sym, a->dims[k].value);
                    return false;
                }
                continue;
            }
            char *copy = strdup(sym);
            if (!copy) {
                cli_error("run", "out of memory");
                return false;
            }
            a->dims[a->dim_count].symbol = copy;
            a->dims[a->dim_count++].value = v->tensor.dims[d];
        }
    }
    return true;
}

/* Builds a random tensor for an unfed input from its declared type. */
static bool random_feed(const run_args *a, const cg_value_info *vi, cg_rng *rng,
                        cg_value **out)
{
    const cg_type *t = vi->type;
    char want[256];
    int64_t dims[CG_MAX_RANK];
    cg_error err;
    cg_tensor tensor;
    cg_error_clear(&err);
    type_text(t, want, sizeof want);
    if (!t || t->kind != CG_TYPE_TENSOR || !t->has_elem_type) {
        cli_error("run", "input '%s' (%s): --random fills tensors only; feed it with -i",
                  vi->name, want);
        return false;
    }
    if (!t->shape) {
        cli_error("run", "input '%s' (%s) has no declared shape; feed it with -i", vi->name,
                  want);
        return false;
    }
    if (t->shape->rank > CG_MAX_RANK) {
        cli_error("run", "input '%s' has rank %zu, above the maximum %d", vi->name,
                  t->shape->rank, CG_MAX_RANK);
        return false;
    }
    for (size_t d = 0; d < t->shape->rank; d++) {
        const cg_dim *dim = &t->shape->dims[d];
        if (dim->has_value) {
            if (dim->value < 0) {
                cli_error("run", "input '%s' dimension %zu is negative (%" PRId64 ")",
                          vi->name, d, dim->value);
                return false;
            }
            dims[d] = dim->value;
            continue;
        }
        if (!dim->param || !*dim->param) {
            cli_error("run", "input '%s' (%s): dimension %zu has neither a size nor a name; "
                      "feed it with -i", vi->name, want, d);
            return false;
        }
        size_t k = 0;
        while (k < a->dim_count && strcmp(a->dims[k].symbol, dim->param) != 0)
            k++;
        if (k == a->dim_count) {
            cli_error("run", "input '%s' (%s): symbolic dimension '%s' has no size; give "
                      "--dim %s=SIZE", vi->name, want, dim->param, dim->param);
            return false;
        }
        dims[d] = a->dims[k].value;
    }
    if (cg_tensor_alloc(&tensor, (cg_dtype)t->elem_type, (int)t->shape->rank, dims,
                           a->max_alloc, &err) != CG_OK ||
        cg_io_random_fill(&tensor, rng, &err) != CG_OK ||
        cg_value_from_tensor(&tensor, out, &err) != CG_OK) {
        cg_tensor_release(&tensor);
        cli_error("run", "input '%s': %s", vi->name, err.msg);
        return false;
    }
    return true;
}

/* --- outputs ---------------------------------------------------------------------- */

/* Safe, unique file stem for an output name; used[] holds earlier stems. */
static void file_stem(const char *name, char **used, size_t used_count, char *out, size_t cap)
{
    char base[RUN_MAX_NAME + 1];
    size_t n = 0;
    for (const char *p = name ? name : ""; *p && n < RUN_MAX_NAME; p++) {
        char c = *p;
        bool keep = isalnum((unsigned char)c) || c == '.' || c == '_' || c == '-';
        base[n++] = keep && (unsigned char)c < 0x80 ? c : '_';
    }
    base[n] = '\0';
    if (n == 0)
        snprintf(base, sizeof base, "output");
    if (base[0] == '.')
        base[0] = '_';
    snprintf(out, cap, "%s", base);
    for (unsigned k = 2;; k++) {
        bool taken = false;
        for (size_t i = 0; i < used_count && !taken; i++)
            taken = strcasecmp(used[i], out) == 0;
        if (!taken)
            return;
        snprintf(out, cap, "%s_%u", base, k);
    }
}

/* Writes bytes to dir/file without following a link planted there. */
static bool write_in_dir(const char *path, const uint8_t *data, size_t size)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW, 0644);
    if (fd < 0) {
        cli_error("run", "cannot create '%s': %s", path, strerror(errno));
        return false;
    }
    size_t done = 0;
    while (done < size) {
        ssize_t w = write(fd, data + done, size - done);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0) {
            cli_error("run", "write to '%s' failed: %s", path, strerror(errno));
            close(fd);
            return false;
        }
        done += (size_t)w;
    }
    if (close(fd) != 0) {
        cli_error("run", "write to '%s' failed: %s", path, strerror(errno));
        return false;
    }
    return true;
}

/* Writes one output; sequences go to an .npz with keys 0..n-1 via a temp
 * file in the same directory (cg_npz_save writes by path). */
static bool save_output(const char *dir, const char *stem, const cg_value *v, char *path,
                        size_t cap)
{
    cg_error err;
    cg_error_clear(&err);
    bool sequence = v->kind == CG_VALUE_SEQUENCE ||
                    (v->kind == CG_VALUE_OPTIONAL && v->optional_is_sequence);
    if (!sequence) {
        uint8_t *buf;
        size_t size;
        snprintf(path, cap, "%s/%s.npy", dir, stem);
        if (cg_npy_serialize(&v->tensor, &buf, &size, &err) != CG_OK) {
            cli_error("run", "cannot write '%s': %s", path, err.msg);
            return false;
        }
        bool ok = write_in_dir(path, buf, size);
        free(buf);
        return ok;
    }
    snprintf(path, cap, "%s/%s.npz", dir, stem);
    char **keys = calloc(v->item_count ? v->item_count : 1, sizeof *keys);
    const cg_tensor **tensors = calloc(v->item_count ? v->item_count : 1, sizeof *tensors);
    bool ok = keys && tensors;
    for (size_t i = 0; ok && i < v->item_count; i++) {
        keys[i] = malloc(24);
        ok = keys[i] != NULL;
        if (ok) {
            snprintf(keys[i], 24, "%zu", i);
            tensors[i] = &v->items[i]->tensor;
        }
    }
    if (ok) {
        /* Refuse a planted link, as for .npy. */
        struct stat sb;
        if (lstat(path, &sb) == 0 && S_ISLNK(sb.st_mode)) {
            cli_error("run", "refusing to write through the link '%s'", path);
            ok = false;
        } else if (cg_npz_save(path, v->item_count, (const char *const *)keys, tensors, false,
                               &err) != CG_OK) {
            cli_error("run", "%s", err.msg);
            ok = false;
        }
    } else {
        cli_error("run", "out of memory");
    }
    for (size_t i = 0; keys && i < v->item_count; i++)
        free(keys[i]);
    free(keys);
    free(tensors);
    return ok;
}

static json_t *json_number_or_null(double v)
{
    return isfinite(v) ? json_real(v) : json_null();
}

static json_t *tensor_json(const cg_tensor *t)
{
    cg_tensor_summary s;
    json_t *o = json_object(), *shape = json_array();
    cg_io_tensor_summary(t, &s);
    for (int d = 0; d < t->rank; d++)
        json_array_append_new(shape, json_integer(t->dims[d]));
    json_object_set_new(o, "dtype", json_string(cg_dtype_name(t->dtype)));
    json_object_set_new(o, "shape", shape);
    json_object_set_new(o, "min", json_number_or_null(s.min));
    json_object_set_new(o, "max", json_number_or_null(s.max));
    json_object_set_new(o, "mean", json_number_or_null(s.mean));
    json_object_set_new(o, "nan", json_integer(s.nan_count));
    json_object_set_new(o, "inf", json_integer(s.inf_count));
    return o;
}

static void print_tensor(const char *indent, const cg_tensor *t)
{
    cg_tensor_summary s;
    cg_io_tensor_summary(t, &s);
    printf("%s%s [", indent, cg_dtype_name(t->dtype));
    for (int d = 0; d < t->rank; d++)
        printf("%s%" PRId64, d ? "," : "", t->dims[d]);
    printf("]");
    if (t->dtype == CG_DTYPE_STRING) {
        printf("\n");
        return;
    }
    if (s.finite_count)
        printf("  min %.6g  max %.6g  mean %.6g", s.min, s.max, s.mean);
    else
        printf("  no finite values");
    printf("  nan %" PRId64 "  inf %" PRId64 "\n", s.nan_count, s.inf_count);
}

/* Text or JSON summary of one output. */
static void report_output(const char *name, const cg_value *v, const char *file, json_t *arr)
{
    bool sequence = v->kind == CG_VALUE_SEQUENCE ||
                    (v->kind == CG_VALUE_OPTIONAL && v->optional_is_sequence && v->has_value);
    bool empty = v->kind == CG_VALUE_OPTIONAL && !v->has_value;
    if (arr) {
        json_t *o = json_object();
        json_object_set_new(o, "name", json_string(name));
        if (empty) {
            json_object_set_new(o, "kind", json_string("optional"));
            json_object_set_new(o, "has_value", json_false());
        } else if (sequence) {
            json_t *items = json_array();
            json_object_set_new(o, "kind", json_string("sequence"));
            for (size_t i = 0; i < v->item_count; i++)
                json_array_append_new(items, tensor_json(&v->items[i]->tensor));
            json_object_set_new(o, "items", items);
        } else {
            json_t *fields = tensor_json(&v->tensor);
            json_object_update(o, fields);
            json_decref(fields);
        }
        json_object_set_new(o, "file", file ? json_string(file) : json_null());
        json_array_append_new(arr, o);
        return;
    }
    printf("output '%s': ", name);
    if (empty) {
        printf("empty optional\n");
    } else if (sequence) {
        printf("sequence of %zu\n", v->item_count);
        for (size_t i = 0; i < v->item_count; i++) {
            printf("  [%zu] ", i);
            print_tensor("", &v->items[i]->tensor);
        }
    } else {
        print_tensor("", &v->tensor);
    }
    if (file)
        printf("  -> %s\n", file);
}

/* --- target path ------------------------------------------------------------ */

static cg_status run_once(cg_runtime *rt, cg_target_path *tp, const cg_named_value *ins,
                          size_t n, cg_named_value **outs, size_t *count, cg_error *err)
{
    return tp ? cg_target_path_run(tp, ins, n, outs, count, err)
              : cg_runtime_run(rt, ins, n, outs, count, err);
}

/* "N/M nodes on T, ..., K on CPU; P partitions" */
static void residency_line(const cg_assignment *as, char *buf, size_t n)
{
    size_t used = 0, on_cpu = 0;
    const cg_graph *g = as->graph;
    size_t total = g ? g->node_count : 0;
    buf[0] = '\0';
    for (size_t t = 0; t < as->target_count && used < n; t++) {
        size_t on = 0;
        for (size_t i = 0; i < total; i++)
            on += as->owner[i] == (int)t;
        used += (size_t)snprintf(buf + used, n - used, "%s%zu/%zu nodes on %s", t ? ", " : "",
                                 on, total, as->targets[t]->name);
    }
    for (size_t i = 0; i < total; i++)
        on_cpu += as->owner[i] == CG_OWNER_CPU;
    if (used < n)
        snprintf(buf + used, n - used, ", %zu on CPU; %zu partition%s", on_cpu,
                 as->partition_count, as->partition_count == 1 ? "" : "s");
}

static bool open_target_path(const run_args *a, const cg_model *model, cg_target_registry **reg,
                             cg_target_path **tp)
{
    cg_error err;
    cg_error_clear(&err);
    if (cg_target_registry_load(a->profiles, reg, &err) != CG_OK) {
        cli_error("run", "%s", err.msg);
        return false;
    }
    const cg_target *list[16];
    size_t count = 0;
    char *arg = (char *)a->targets; /* cli_resolve_targets copies before splitting */
    if (!cli_resolve_targets("run", *reg, &arg, 1, list, &count, sizeof list / sizeof list[0]))
        return false;
    cg_dim_binding *dims = calloc(a->dim_count + 1, sizeof *dims);
    if (!dims) {
        cli_error("run", "out of memory");
        return false;
    }
    for (size_t i = 0; i < a->dim_count; i++) {
        dims[i].symbol = a->dims[i].symbol;
        dims[i].value = a->dims[i].value;
    }
    cg_target_path_options o;
    memset(&o, 0, sizeof o);
    o.targets = list;
    o.target_count = count;
    o.dims = dims;
    o.dim_count = a->dim_count;
    o.accumulate_fp32 = a->accumulate_fp32;
    o.max_alloc_bytes = a->max_alloc;
    cg_status st = cg_target_path_init(model, &o, tp, &err);
    free(dims);
    if (st != CG_OK) {
        cli_error("run", "target path: %s", err.msg);
        return false;
    }
    return true;
}

/* --- command ----------------------------------------------------------------------- */

static int parse_args(int argc, char **argv, run_args *a)
{
    for (int i = 1; i < argc; i++) {
        const char *arg = argv[i];
        const char *val = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(arg, "-h") || !strcmp(arg, "--help")) {
            run_usage(stdout);
            return -1; /* help shown: exit 0 without running */
        } else if (!strcmp(arg, "-i") || !strcmp(arg, "--input")) {
            if (!val) {
                cli_error("run", "%s needs NAME=FILE", arg);
                return CG_EXIT_ERROR;
            }
            a->inputs[a->input_count++] = val;
            i++;
        } else if (!strcmp(arg, "--random")) {
            a->random = true;
        } else if (!strcmp(arg, "--json")) {
            a->json = true;
        } else if (!strcmp(arg, "--seed")) {
            if (!parse_u64(val, &a->seed)) {
                cli_error("run", "--seed needs a non-negative integer");
                return CG_EXIT_ERROR;
            }
            i++;
        } else if (!strcmp(arg, "--dim")) {
            const char *eq = val ? strchr(val, '=') : NULL;
            uint64_t n;
            if (!eq || eq == val || !parse_u64(eq + 1, &n) || n > (uint64_t)INT64_MAX) {
                cli_error("run", "--dim needs SYMBOL=VALUE with VALUE >= 0");
                return CG_EXIT_ERROR;
            }
            /* The symbol is compared up to '=' only: keep it NUL-terminated. */
            char *sym = strndup(val, (size_t)(eq - val));
            if (!sym) {
                cli_error("run", "out of memory");
                return CG_EXIT_ERROR;
            }
            a->dims[a->dim_count].symbol = sym;
            a->dims[a->dim_count++].value = (int64_t)n;
            i++;
        } else if (!strcmp(arg, "-o") || !strcmp(arg, "--output-dir")) {
            if (!val) {
                cli_error("run", "%s needs a directory", arg);
                return CG_EXIT_ERROR;
            }
            a->out_dir = val;
            i++;
        } else if (!strcmp(arg, "--target") || !strcmp(arg, "--profiles")) {
            if (!val || !*val) {
                cli_error("run", "%s needs a value", arg);
                return CG_EXIT_ERROR;
            }
            if (!strcmp(arg, "--target"))
                a->targets = val;
            else
                a->profiles = val;
            i++;
        } else if (!strcmp(arg, "--accumulate")) {
            if (!val || (strcmp(val, "fp16") && strcmp(val, "fp32"))) {
                cli_error("run", "--accumulate needs fp16 or fp32");
                return CG_EXIT_ERROR;
            }
            a->accumulate_fp32 = !strcmp(val, "fp32");
            i++;
        } else if (!strcmp(arg, "--repeat")) {
            if (!parse_u64(val, &a->repeat) || a->repeat > 1000000) {
                cli_error("run", "--repeat needs a run count from 0 to 1000000");
                return CG_EXIT_ERROR;
            }
            i++;
        } else if (!strcmp(arg, "--max-alloc")) {
            if (!parse_bytes(val, &a->max_alloc)) {
                cli_error("run", "--max-alloc needs a positive byte count (suffix K, M or G)");
                return CG_EXIT_ERROR;
            }
            i++;
        } else if (arg[0] == '-' && arg[1]) {
            cli_error("run", "unknown option '%s' (see convgate run --help)", arg);
            return CG_EXIT_ERROR;
        } else if (a->model_path) {
            cli_error("run", "more than one model given ('%s' and '%s')", a->model_path, arg);
            return CG_EXIT_ERROR;
        } else {
            a->model_path = arg;
        }
    }
    if (!a->model_path) {
        run_usage(stderr);
        return CG_EXIT_ERROR;
    }
    return CG_EXIT_OK;
}

int cmd_run(int argc, char **argv)
{
    int rc = CG_EXIT_ERROR;
    run_args a;
    cg_error err;
    cg_model *model = NULL;
    cg_runtime *rt = NULL;
    run_feed *feeds = NULL;
    double *warm = NULL;
    cg_target_registry *reg = NULL;
    cg_target_path *tp = NULL;
    size_t feed_count = 0;
    cg_named_value *ins = NULL, *outs = NULL;
    size_t out_count = 0;
    char **used = NULL;
    json_t *root = NULL, *arr = NULL;
    memset(&a, 0, sizeof a);
    cg_error_clear(&err);
    a.inputs = calloc((size_t)argc, sizeof *a.inputs);
    a.dims = calloc((size_t)argc, sizeof *a.dims);
    if (!a.inputs || !a.dims) {
        cli_error("run", "out of memory");
        goto done;
    }
    rc = parse_args(argc, argv, &a);
    if (rc != CG_EXIT_OK) {
        if (rc < 0)
            rc = CG_EXIT_OK;
        goto done;
    }
    rc = CG_EXIT_ERROR;

    cg_load_options lo;
    cg_load_options_default(&lo);
    if (cg_model_load(a.model_path, &lo, &model, &err) != CG_OK) {
        cli_error("run", "%s", err.msg);
        goto done;
    }
    const cg_graph *g = model->graph;
    if (!g) {
        cli_error("run", "'%s' has no graph", a.model_path);
        goto done;
    }
    feeds = calloc(g->input_count + 1, sizeof *feeds);
    if (!feeds) {
        cli_error("run", "out of memory");
        goto done;
    }
    if (!load_feeds(&a, g, feeds, &feed_count, g->input_count))
        goto done;
    /* Room for one binding per input dimension on top of the --dim ones. */
    size_t dim_room = (size_t)argc;
    for (size_t i = 0; i < g->input_count; i++)
        if (g->inputs[i].type && g->inputs[i].type->shape)
            dim_room += g->inputs[i].type->shape->rank;
    run_dim *grown = realloc(a.dims, dim_room * sizeof *grown);
    if (!grown) {
        cli_error("run", "out of memory");
        goto done;
    }
    a.dims = grown;
    if (!bind_symbols(&a, g, feeds, feed_count))
        goto done;

    /* Every non-initializer input must be fed, or randomized in graph order
     * (so a seed always gives the same tensors). */
    cg_rng rng;
    cg_rng_seed(&rng, a.seed);
    for (size_t i = 0; i < g->input_count; i++) {
        const cg_value_info *vi = &g->inputs[i];
        bool fed = false;
        for (size_t k = 0; k < feed_count && !fed; k++)
            fed = strcmp(feeds[k].name, vi->name) == 0;
        if (fed || is_initializer(g, vi->name))
            continue;
        if (!a.random) {
            char want[256];
            type_text(vi->type, want, sizeof want);
            cli_error("run", "missing input '%s' (%s): feed it with -i %s=FILE or use --random",
                      vi->name, want, vi->name);
            goto done;
        }
        cg_value *v = NULL;
        if (!random_feed(&a, vi, &rng, &v))
            goto done;
        feeds[feed_count].name = vi->name;
        feeds[feed_count].value = v;
        feeds[feed_count].source = strdup("random");
        feed_count++;
        if (!feeds[feed_count - 1].source) {
            cli_error("run", "out of memory");
            goto done;
        }
    }

    if (a.targets) {
        if (!open_target_path(&a, model, &reg, &tp))
            goto done;
    } else {
        cg_runtime_options ro;
        cg_runtime_options_default(&ro);
        if (a.max_alloc)
            ro.max_alloc_bytes = a.max_alloc;
        if (cg_runtime_init(model, &ro, &rt, &err) != CG_OK) {
            cli_error("run", "%s", err.msg);
            rc = err.status == CG_UNSUPPORTED || err.status == CG_RUNTIME ? CG_EXIT_FAIL
                                                                          : CG_EXIT_ERROR;
            goto done;
        }
    }
    ins = calloc(feed_count + 1, sizeof *ins);
    if (!ins) {
        cli_error("run", "out of memory");
        goto done;
    }
    for (size_t i = 0; i < feed_count; i++) {
        ins[i].name = feeds[i].name;
        ins[i].value = feeds[i].value;
    }
    /* The first run builds the memory plan; with --repeat, the warm runs
     * after it are timed separately and summarized by their median. */
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    cg_status st = run_once(rt, tp, ins, feed_count, &outs, &out_count, &err);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double first_ms = elapsed_ms(&t0, &t1), ms = first_ms;
    if (st == CG_OK && a.repeat) {
        warm = malloc(a.repeat * sizeof *warm);
        if (!warm) {
            cli_error("run", "out of memory");
            goto done;
        }
        for (uint64_t r = 0; r < a.repeat && st == CG_OK; r++) {
            cg_runtime_free_outputs(outs, out_count);
            outs = NULL;
            out_count = 0;
            clock_gettime(CLOCK_MONOTONIC, &t0);
            st = run_once(rt, tp, ins, feed_count, &outs, &out_count, &err);
            clock_gettime(CLOCK_MONOTONIC, &t1);
            warm[r] = elapsed_ms(&t0, &t1);
        }
        qsort(warm, a.repeat, sizeof *warm, cmp_double);
        ms = a.repeat % 2 ? warm[a.repeat / 2]
                          : (warm[a.repeat / 2 - 1] + warm[a.repeat / 2]) / 2;
    }
    if (st != CG_OK) {
        cli_error("run", "%s", err.msg);
        rc = st == CG_USAGE ? CG_EXIT_ERROR : CG_EXIT_FAIL;
        goto done;
    }

    if (a.out_dir) {
        struct stat sb;
        if (mkdir(a.out_dir, 0777) != 0 && errno != EEXIST) {
            cli_error("run", "cannot create directory '%s': %s", a.out_dir, strerror(errno));
            goto done;
        }
        if (stat(a.out_dir, &sb) != 0 || !S_ISDIR(sb.st_mode)) {
            cli_error("run", "'%s' is not a directory", a.out_dir);
            goto done;
        }
        used = calloc(out_count + 1, sizeof *used);
        if (!used) {
            cli_error("run", "out of memory");
            goto done;
        }
    }
    if (a.json) {
        root = json_object();
        arr = json_array();
        json_object_set_new(root, "outputs", arr);
    }
    rc = CG_EXIT_OK;
    for (size_t i = 0; i < out_count; i++) {
        char path[4096];
        const char *file = NULL;
        const cg_value *v = outs[i].value;
        if (!v)
            continue;
        bool empty = v->kind == CG_VALUE_OPTIONAL && !v->has_value;
        if (a.out_dir && !empty) {
            char stem[RUN_MAX_NAME + 16];
            file_stem(outs[i].name, used, i, stem, sizeof stem);
            used[i] = strdup(stem);
            if (!used[i] || !save_output(a.out_dir, stem, v, path, sizeof path)) {
                rc = CG_EXIT_ERROR;
                continue;
            }
            file = path;
        } else if (a.out_dir) {
            used[i] = strdup("");
        }
        report_output(outs[i].name ? outs[i].name : "", v, file, arr);
    }
    if (tp) {
        const cg_assignment *as = cg_target_path_assignment(tp);
        char line[1024];
        residency_line(as, line, sizeof line);
        if (root)
            json_object_set_new(root, "target",
                                json_pack("{s:s, s:s, s:b}", "targets", a.targets, "residency",
                                          line, "reduced_precision",
                                          cg_target_path_reduced_precision(tp)));
        else
            printf("target path: %s%s\n", line,
                   cg_target_path_reduced_precision(tp) ? " (fp16 emulated)" : "");
    }
    if (root) {
        json_object_set_new(root, "time_ms", json_real(ms));
        if (a.repeat)
            json_object_set_new(root, "timing",
                                json_pack("{s:f, s:f, s:f, s:f, s:I}", "first_ms", first_ms,
                                          "median_ms", ms, "min_ms", warm[0], "max_ms",
                                          warm[a.repeat - 1], "runs", (json_int_t)a.repeat));
        char *text = json_dumps(root, JSON_INDENT(2) | JSON_REAL_PRECISION(9));
        if (text) {
            printf("%s\n", text);
            free(text);
        }
    } else if (a.repeat) {
        printf("time: first run %.3f ms (plans memory); %llu warm runs: median %.3f ms, "
               "min %.3f, max %.3f\n",
               first_ms, (unsigned long long)a.repeat, ms, warm[0], warm[a.repeat - 1]);
    } else {
        printf("time %.3f ms\n", ms);
    }
done:
    free(warm);
    cg_target_path_free(tp);
    cg_target_registry_free(reg);
    if (used)
        for (size_t i = 0; i < out_count; i++)
            free(used[i]);
    free(used);
    json_decref(root);
    if (outs)
        cg_runtime_free_outputs(outs, out_count);
    free(ins);
    for (size_t i = 0; feeds && i < feed_count; i++) {
        cg_value_free(feeds[i].value);
        free(feeds[i].source);
    }
    free(feeds);
    cg_runtime_free(rt);
    cg_model_free(model);
    for (size_t i = 0; a.dims && i < a.dim_count; i++)
        free((char *)a.dims[i].symbol);
    free(a.dims);
    free(a.inputs);
    return rc;
}
