/*
 * Golden corpus: writing a golden directory (tensors as .npy plus a manifest
 * of their sha256, dtypes and shapes and the model's sha256), reading one
 * back with every file checked, and loading its sets as samples (inputs
 * plus expected outputs) for `verify` and `gate --golden`. File stems are
 * the samples module's (convgate/samples.h).
 *
 * Invariant of a golden directory written here: manifest.json exists only
 * once every file it lists has been written, and lists each file's sha256;
 * every path in it is relative and made of [A-Za-z0-9._-] components that
 * never start with a dot, so a manifest (trusted or not) can only name
 * files inside the directory.
 */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <jansson.h>
#include <math.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "convgate/golden.h"
#include "verify/golden_internal.h"
#include "convgate/noise.h"
#include "convgate/samples.h"
#include "convgate/tensor_io.h"
#include "core/file.h"
#include "core/json.h"
#include "core/path.h"
#include "io/io_internal.h"
#include "convgate/tensor.h"

#define GOLDEN_MANIFEST "manifest.json"
#define GOLDEN_MANIFEST_MAX ((size_t)64 << 20) /* a manifest is text about files */
#define GOLDEN_PATH_MAX 4096
#define GOLDEN_HASH_CHUNK ((size_t)1 << 20)

/* --- hashing ---------------------------------------------------------------- */

static void to_hex(const unsigned char *md, unsigned len, char hex[CG_SHA256_HEX])
{
    static const char digits[] = "0123456789abcdef";
    for (unsigned i = 0; i < len && i < 32; i++) {
        hex[2 * i] = digits[md[i] >> 4];
        hex[2 * i + 1] = digits[md[i] & 15];
    }
    hex[64] = '\0';
}

cg_status cg_sha256_hex(const void *data, size_t size, char hex[CG_SHA256_HEX], cg_error *err)
{
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned len = 0;
    if (!EVP_Digest(data, size, md, &len, EVP_sha256(), NULL) || len != 32)
        return cg_error_set(err, CG_RUNTIME, "sha256: OpenSSL EVP_Digest failed");
    to_hex(md, len, hex);
    return CG_OK;
}

cg_status cg_sha256_fd(int fd, const char *path, char hex[CG_SHA256_HEX], uint64_t *bytes,
                       cg_error *err)
{
    cg_status st = CG_OK;
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned len = 0;
    uint64_t total = 0;
    unsigned char *buf = NULL;
    EVP_MD_CTX *ctx = NULL;
    buf = malloc(GOLDEN_HASH_CHUNK);
    ctx = EVP_MD_CTX_new();
    if (!buf || !ctx) {
        st = cg_error_set(err, CG_NOMEM, "sha256 of '%s': out of memory", path);
        goto done;
    }
    if (!EVP_DigestInit_ex(ctx, EVP_sha256(), NULL)) {
        st = cg_error_set(err, CG_RUNTIME, "sha256 of '%s': OpenSSL init failed", path);
        goto done;
    }
    for (;;) {
        ssize_t n = read(fd, buf, GOLDEN_HASH_CHUNK);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            st = cg_error_set(err, CG_IO, "reading '%s': %s", path, strerror(errno));
            goto done;
        }
        if (n == 0)
            break;
        if (!EVP_DigestUpdate(ctx, buf, (size_t)n)) {
            st = cg_error_set(err, CG_RUNTIME, "sha256 of '%s': OpenSSL update failed", path);
            goto done;
        }
        total += (uint64_t)n;
    }
    if (!EVP_DigestFinal_ex(ctx, md, &len) || len != 32) {
        st = cg_error_set(err, CG_RUNTIME, "sha256 of '%s': OpenSSL final failed", path);
        goto done;
    }
    to_hex(md, len, hex);
    if (bytes)
        *bytes = total;
done:
    EVP_MD_CTX_free(ctx);
    free(buf);
    close(fd);
    return st;
}

cg_status cg_sha256_file(const char *path, char hex[CG_SHA256_HEX], uint64_t *bytes,
                         cg_error *err)
{
    int fd = cg_file_open_read(path, NULL, err);
    if (fd < 0)
        return err ? err->status : CG_IO;
    return cg_sha256_fd(fd, path, hex, bytes, err);
}

/* --- names and paths ---------------------------------------------------------- */

static bool safe_char(char c)
{
    return ((unsigned char)c < 0x80 && isalnum((unsigned char)c)) || c == '.' || c == '_' ||
           c == '-';
}

/* True for a relative path of safe components, none starting with a dot. */
static bool safe_relpath(const char *path)
{
    bool start = true;
    if (!path || !*path)
        return false;
    for (const char *p = path; *p; p++) {
        if (*p == '/') {
            if (start)
                return false; /* leading or doubled slash */
            start = true;
            continue;
        }
        if (!safe_char(*p) || (start && *p == '.'))
            return false;
        start = false;
    }
    return !start;
}

static bool join(char *out, size_t cap, const char *a, const char *b)
{
    int n = snprintf(out, cap, "%s/%s", a, b);
    return n > 0 && (size_t)n < cap;
}

/* Creates dir (or accepts an existing real directory, never a link). */
static cg_status make_dir(const char *path, cg_error *err)
{
    struct stat sb;
    if (mkdir(path, 0777) == 0)
        return CG_OK;
    if (errno != EEXIST)
        return cg_error_set(err, CG_IO, "cannot create directory '%s': %s", path,
                            strerror(errno));
    if (lstat(path, &sb) != 0 || !S_ISDIR(sb.st_mode))
        return cg_error_set(err, CG_SECURITY, "'%s' exists and is not a directory (or is a link)",
                            path);
    return CG_OK;
}

static const char *base_name(const char *path)
{
    const char *slash = strrchr(path, '/');
    return slash ? slash + 1 : path;
}

/* --- writer -------------------------------------------------------------------- */

struct cg_golden_writer {
    char *dir;
    char *model_file;
    char model_sha256[CG_SHA256_HEX];
    uint64_t model_bytes;
    json_t *opsets;
    json_t *sets;
    char **set_names;
    size_t set_count, set_cap;
    char created[32];  /* "" : the time of cg_golden_writer_finish */
};

void cg_golden_writer_free(cg_golden_writer *w)
{
    if (!w)
        return;
    for (size_t i = 0; i < w->set_count; i++)
        free(w->set_names[i]);
    free(w->set_names);
    json_decref(w->opsets);
    json_decref(w->sets);
    free(w->model_file);
    free(w->dir);
    free(w);
}

/* True when dir holds any entry besides . and .. */
static cg_status dir_nonempty(const char *dir, bool *nonempty, cg_error *err)
{
    DIR *d = opendir(dir);
    struct dirent *e;
    *nonempty = false;
    if (!d)
        return cg_error_set(err, CG_IO, "cannot read directory '%s': %s", dir, strerror(errno));
    while ((e = readdir(d)) != NULL)
        if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0) {
            *nonempty = true;
            break;
        }
    closedir(d);
    return CG_OK;
}

cg_status cg_golden_writer_init(const char *dir, const char *model_path, const cg_model *model,
                                bool force, cg_golden_writer **out, cg_error *err)
{
    cg_status st;
    cg_golden_writer *w = NULL;
    struct stat sb;
    bool nonempty = false;
    char path[GOLDEN_PATH_MAX];
    *out = NULL;
    if (!dir || !*dir || !model_path || !model)
        return cg_error_set(err, CG_USAGE, "golden writer: directory, model path and model needed");
    if (stat(dir, &sb) == 0) {
        if (!S_ISDIR(sb.st_mode))
            return cg_error_set(err, CG_USAGE, "'%s' exists and is not a directory", dir);
        if ((st = dir_nonempty(dir, &nonempty, err)) != CG_OK)
            return st;
        if (nonempty && !force)
            return cg_error_set(err, CG_USAGE,
                                "'%s' is not empty; refusing to overwrite it (use --force)", dir);
    } else if ((st = cg_path_make_dirs(dir, err)) != CG_OK) {
        return st;
    }
    /* An old manifest must not outlive the files it describes being rewritten. */
    if (nonempty) {
        if (!join(path, sizeof path, dir, GOLDEN_MANIFEST))
            return cg_error_set(err, CG_LIMIT, "path '%s' is too long", dir);
        if (unlink(path) != 0 && errno != ENOENT)
            return cg_error_set(err, CG_IO, "cannot remove the old '%s': %s", path,
                                strerror(errno));
    }
    w = calloc(1, sizeof *w);
    if (!w)
        return cg_error_set(err, CG_NOMEM, "golden writer: out of memory");
    w->dir = strdup(dir);
    w->model_file = strdup(base_name(model_path));
    w->opsets = json_array();
    w->sets = json_array();
    if (!w->dir || !w->model_file || !w->opsets || !w->sets) {
        st = cg_error_set(err, CG_NOMEM, "golden writer: out of memory");
        goto fail;
    }
    if ((st = cg_sha256_file(model_path, w->model_sha256, &w->model_bytes, err)) != CG_OK)
        goto fail;
    for (size_t i = 0; i < model->opset_count; i++) {
        const cg_opset_id *o = &model->opsets[i];
        json_t *e = json_pack("{s:s, s:I}", "domain", o->domain ? o->domain : "", "version",
                              (json_int_t)o->version);
        if (!e || json_array_append_new(w->opsets, e) != 0) {
            st = cg_error_set(err, CG_NOMEM, "golden writer: out of memory");
            goto fail;
        }
    }
    *out = w;
    return CG_OK;
fail:
    cg_golden_writer_free(w);
    return st;
}

/* A floor as the manifest holds it (non-finite values as cg_json_number
 * writes them); an fp16 floor not measured is null. */
static json_t *floor_json(const cg_output_floor *f)
{
    return json_pack("{s:o, s:o, s:o, s:o, s:I}", "scale", cg_json_number(f->scale),
                     "fp32_floor", cg_json_number(f->fp32), "fp16_floor",
                     isnan(f->fp16) ? json_null() : cg_json_number(f->fp16), "fp16_sums_floor",
                     isnan(f->fp16_sums) ? json_null() : cg_json_number(f->fp16_sums),
                     "elements", (json_int_t)f->count);
}

/* Reads a floor as the manifest holds it (cg_json_number's form; an fp16
 * floor not measured is null: NaN). */
static bool floor_read(json_t *v, double *out)
{
    if (json_is_null(v)) {
        *out = NAN;
        return true;
    }
    return cg_json_number_read(v, out);
}

/* Writes the tensors of one side ("inputs"/"outputs") of a set into
 * setdir/side and appends their manifest entries to arr. */
static cg_status write_side(const char *root, const char *set, const char *side,
                            const cg_named_value *vals, size_t count,
                            const cg_output_floor *floors, json_t *arr, cg_error *err)
{
    cg_status st = CG_OK;
    char dirpath[GOLDEN_PATH_MAX], path[GOLDEN_PATH_MAX], rel[GOLDEN_PATH_MAX];
    char stem[CG_SAMPLES_STEM_CAP], hex[CG_SHA256_HEX];
    char **used = calloc(count ? count : 1, sizeof *used);
    if (!used)
        return cg_error_set(err, CG_NOMEM, "golden set '%s': out of memory", set);
    if (snprintf(dirpath, sizeof dirpath, "%s/%s/%s", root, set, side) >= (int)sizeof dirpath) {
        st = cg_error_set(err, CG_LIMIT, "golden path '%s' is too long", root);
        goto done;
    }
    if ((st = make_dir(dirpath, err)) != CG_OK)
        goto done;
    for (size_t i = 0; i < count; i++) {
        const char *name = vals[i].name ? vals[i].name : "";
        const cg_value *v = vals[i].value;
        uint8_t *buf = NULL;
        size_t size = 0;
        if (!v || v->kind != CG_VALUE_TENSOR) {
            st = cg_error_set(err, CG_UNSUPPORTED,
                              "golden set '%s': %s '%s' is %s; golden sets hold tensors only",
                              set, side, name,
                              !v ? "missing" : v->kind == CG_VALUE_SEQUENCE ? "a sequence"
                                                                            : "an optional");
            goto done;
        }
        cg_samples_stem(name, (const char *const *)used, i, stem, sizeof stem);
        if (!(used[i] = strdup(stem))) {
            st = cg_error_set(err, CG_NOMEM, "golden set '%s': out of memory", set);
            goto done;
        }
        snprintf(rel, sizeof rel, "%s/%s/%s.npy", set, side, stem);
        if (!join(path, sizeof path, root, rel)) {
            st = cg_error_set(err, CG_LIMIT, "golden path '%s' is too long", root);
            goto done;
        }
        if ((st = cg_npy_serialize(&v->tensor, &buf, &size, err)) != CG_OK) {
            cg_error_prefix(err, "golden set '%s', %s '%s': ", set, side, name);
            goto done;
        }
        st = cg_sha256_hex(buf, size, hex, err);
        if (st == CG_OK)
            st = cg_atomic_write(path, buf, size, err);
        free(buf);
        if (st != CG_OK)
            goto done;
        json_t *shape = json_array();
        for (int d = 0; shape && d < v->tensor.rank; d++)
            json_array_append_new(shape, json_integer(v->tensor.dims[d]));
        json_t *e = shape ? json_pack("{s:s, s:s, s:s, s:o, s:s}", "name", name, "file", rel,
                                      "dtype", cg_dtype_name(v->tensor.dtype), "shape", shape,
                                      "sha256", hex)
                          : NULL;
        if (e && floors && floors[i].known &&
            json_object_set_new(e, "noise", floor_json(&floors[i])) != 0) {
            json_decref(e);
            e = NULL;
        }
        if (!e || json_array_append_new(arr, e) != 0) {
            st = cg_error_set(err, CG_NOMEM, "golden set '%s': out of memory", set);
            goto done;
        }
    }
done:
    for (size_t i = 0; i < count; i++)
        free(used[i]);
    free(used);
    return st;
}

cg_status cg_golden_writer_add(cg_golden_writer *w, const char *set_name,
                               const cg_named_value *inputs, size_t input_count,
                               const cg_named_value *outputs, size_t output_count,
                               const cg_output_floor *floors, const char **used_name,
                               cg_error *err)
{
    cg_status st;
    char stem[CG_SAMPLES_STEM_CAP], path[GOLDEN_PATH_MAX];
    json_t *ins = NULL, *outs = NULL, *set = NULL;
    if (w->set_count == w->set_cap) {
        size_t cap = w->set_cap ? 2 * w->set_cap : 8;
        char **grown = realloc(w->set_names, cap * sizeof *grown);
        if (!grown)
            return cg_error_set(err, CG_NOMEM, "golden writer: out of memory");
        w->set_names = grown;
        w->set_cap = cap;
    }
    cg_samples_stem(set_name, (const char *const *)w->set_names, w->set_count, stem, sizeof stem);
    if (!join(path, sizeof path, w->dir, stem))
        return cg_error_set(err, CG_LIMIT, "golden path '%s' is too long", w->dir);
    if ((st = make_dir(path, err)) != CG_OK)
        return st;
    ins = json_array();
    outs = json_array();
    if (!ins || !outs) {
        st = cg_error_set(err, CG_NOMEM, "golden writer: out of memory");
        goto fail;
    }
    if ((st = write_side(w->dir, stem, "inputs", inputs, input_count, NULL, ins, err)) !=
            CG_OK ||
        (st = write_side(w->dir, stem, "outputs", outputs, output_count, floors, outs, err)) !=
            CG_OK)
        goto fail;
    set = json_pack("{s:s, s:o, s:o}", "name", stem, "inputs", ins, "outputs", outs);
    ins = outs = NULL; /* owned by set (or freed by json_pack on failure) */
    char *name = strdup(stem);
    if (!set || !name || json_array_append_new(w->sets, set) != 0) {
        set = NULL;
        free(name);
        st = cg_error_set(err, CG_NOMEM, "golden writer: out of memory");
        goto fail;
    }
    w->set_names[w->set_count++] = name;
    if (used_name)
        *used_name = name;
    return CG_OK;
fail:
    json_decref(ins);
    json_decref(outs);
    return st;
}

/* Each output's floors on one set: fp32 and fp16 storage against fp64. */
static cg_status set_floors(const cg_noise_runs *runs, const cg_named_value *outs32, size_t n,
                            cg_output_floor *fl, cg_error *err)
{
    for (size_t k = 0; k < n; k++) {
        const cg_value *r = k < runs->count[CG_RUN_FP64] ? runs->out[CG_RUN_FP64][k].value : NULL;
        const cg_value *a = outs32[k].value;
        const cg_value *b = k < runs->count[CG_RUN_FP16] ? runs->out[CG_RUN_FP16][k].value : NULL;
        const cg_value *c = k < runs->count[CG_RUN_FP16_SUMS]
                                ? runs->out[CG_RUN_FP16_SUMS][k].value
                                : NULL;
        memset(&fl[k], 0, sizeof fl[k]);
        if (!r || !a || r->kind != CG_VALUE_TENSOR || a->kind != CG_VALUE_TENSOR ||
            r->tensor.dtype == CG_DTYPE_STRING)
            continue; /* not numeric: no floor, judged by the tolerance */
        cg_noise_stats s32, s16, s16s;
        cg_noise_stats_init(&s32);
        cg_noise_stats_init(&s16);
        cg_noise_stats_init(&s16s);
        cg_status st = cg_noise_stats_add(&s32, &r->tensor, &a->tensor, err);
        if (st == CG_OK && b && b->kind == CG_VALUE_TENSOR)
            st = cg_noise_stats_add(&s16, &r->tensor, &b->tensor, err);
        if (st == CG_OK && c && c->kind == CG_VALUE_TENSOR)
            st = cg_noise_stats_add(&s16s, &r->tensor, &c->tensor, err);
        if (st != CG_OK) {
            cg_error_prefix(err, "output '%s': ", outs32[k].name ? outs32[k].name : "");
            return st;
        }
        fl[k].known = true;
        fl[k].scale = cg_noise_scale(&s32);
        fl[k].fp32 = s32.m.max_abs;
        fl[k].fp16 = s16.dist.count ? s16.m.max_abs : NAN;
        fl[k].fp16_sums = s16s.dist.count ? s16s.m.max_abs : NAN;
        fl[k].count = s32.dist.count;
    }
    return CG_OK;
}

cg_status cg_golden_writer_run(cg_golden_writer *w, cg_runtime *rt, cg_noise *noise,
                               const cg_sample *s, const char **used_name, size_t *output_count,
                               bool *ran, cg_error *err)
{
    cg_named_value *outs = NULL;
    cg_output_floor *fl = NULL;
    cg_noise_runs runs;
    size_t n = 0;
    cg_status st;
    memset(&runs, 0, sizeof runs);
    if (noise) {
        st = cg_noise_add_sample(noise, s->inputs, s->input_count, &runs, NULL, err);
        /* the golden outputs are the fp32 reference's; the floors are
         * measured against the float64 reference on this set */
        outs = runs.out[CG_RUN_FP32];
        n = runs.count[CG_RUN_FP32];
        runs.out[CG_RUN_FP32] = NULL;
        runs.count[CG_RUN_FP32] = 0;
    } else {
        st = cg_runtime_run(rt, s->inputs, s->input_count, &outs, &n, err);
    }
    if (ran)
        *ran = st == CG_OK;
    if (st != CG_OK) {
        cg_error_prefix(err, "set '%s': ", s->label);
    } else if (noise) {
        if (!(fl = calloc(n + 1, sizeof *fl)))
            st = cg_error_set(err, CG_NOMEM, "out of memory");
        else if ((st = set_floors(&runs, outs, n, fl, err)) != CG_OK)
            cg_error_prefix(err, "set '%s': ", s->label);
    }
    if (st == CG_OK)
        st = cg_golden_writer_add(w, s->label, s->inputs, s->input_count, outs, n, fl,
                                  used_name, err);
    if (output_count)
        *output_count = n;
    cg_runtime_free_outputs(outs, n);
    cg_noise_runs_free(&runs);
    free(fl);
    return st;
}

void cg_golden_writer_set_created(cg_golden_writer *w, const char *created)
{
    snprintf(w->created, sizeof w->created, "%s", created ? created : "");
}

cg_status cg_golden_writer_finish(cg_golden_writer *w, cg_error *err)
{
    cg_status st;
    char created[32], path[GOLDEN_PATH_MAX];
    time_t now = time(NULL);
    struct tm tm;
    if (w->set_count == 0)
        return cg_error_set(err, CG_USAGE, "golden set '%s': no sets to write", w->dir);
    if (w->created[0])
        snprintf(created, sizeof created, "%s", w->created);
    else if (!gmtime_r(&now, &tm) ||
             !strftime(created, sizeof created, "%Y-%m-%dT%H:%M:%SZ", &tm))
        snprintf(created, sizeof created, "unknown");
    json_t *root = json_pack("{s:i, s:s, s:s, s:{s:s, s:s, s:I}, s:O, s:O}", "format_version",
                             CG_GOLDEN_FORMAT_VERSION, "convgate_version", CG_VERSION, "created",
                             created, "model", "file", w->model_file, "sha256", w->model_sha256,
                             "bytes", (json_int_t)w->model_bytes, "opset_import", w->opsets,
                             "sets", w->sets);
    char *text = root ? json_dumps(root, JSON_INDENT(2) | JSON_PRESERVE_ORDER) : NULL;
    json_decref(root);
    if (!text)
        return cg_error_set(err, CG_NOMEM, "golden writer: out of memory");
    if (!join(path, sizeof path, w->dir, GOLDEN_MANIFEST)) {
        free(text);
        return cg_error_set(err, CG_LIMIT, "golden path '%s' is too long", w->dir);
    }
    st = cg_atomic_write(path, text, strlen(text), err);
    free(text);
    return st;
}

/* --- reader ----------------------------------------------------------------------- */

static void free_tensors(cg_golden_tensor *t, size_t n)
{
    for (size_t i = 0; t && i < n; i++) {
        free(t[i].name);
        free(t[i].file);
    }
    free(t);
}

void cg_golden_free(cg_golden *g)
{
    if (!g)
        return;
    for (size_t i = 0; i < g->set_count; i++) {
        free(g->sets[i].name);
        free_tensors(g->sets[i].inputs, g->sets[i].input_count);
        free_tensors(g->sets[i].outputs, g->sets[i].output_count);
    }
    free(g->sets);
    free(g->dir);
    free(g->convgate_version);
    free(g->created);
    free(g->model_file);
    free(g);
}

static bool valid_hex(const char *s)
{
    if (!s || strlen(s) != 64)
        return false;
    for (const char *p = s; *p; p++)
        if (!((*p >= '0' && *p <= '9') || (*p >= 'a' && *p <= 'f')))
            return false;
    return true;
}

/* A required string member, copied; CG_INVALID naming `where` and the key. */
static cg_status get_string(json_t *obj, const char *key, const char *where, char **out,
                            cg_error *err)
{
    json_t *v = json_object_get(obj, key);
    if (!json_is_string(v))
        return cg_error_set(err, CG_INVALID, "%s: '%s' is missing or not a string", where, key);
    if (!(*out = strdup(json_string_value(v))))
        return cg_error_set(err, CG_NOMEM, "%s: out of memory", where);
    return CG_OK;
}

/* Parses one side's tensor list of a set. */
static cg_status parse_tensors(json_t *arr, const char *where, cg_golden_tensor **out,
                               size_t *count, cg_error *err)
{
    cg_status st;
    size_t n = json_array_size(arr);
    char here[512];
    *out = NULL;
    *count = 0;
    if (!json_is_array(arr))
        return cg_error_set(err, CG_INVALID, "%s is missing or not an array", where);
    cg_golden_tensor *t = calloc(n ? n : 1, sizeof *t);
    if (!t)
        return cg_error_set(err, CG_NOMEM, "%s: out of memory", where);
    for (size_t i = 0; i < n; i++) {
        json_t *e = json_array_get(arr, i), *shape, *dt;
        snprintf(here, sizeof here, "%s[%zu]", where, i);
        if (!json_is_object(e)) {
            st = cg_error_set(err, CG_INVALID, "%s is not an object", here);
            goto fail;
        }
        char *hex = NULL;
        if ((st = get_string(e, "name", here, &t[i].name, err)) != CG_OK ||
            (st = get_string(e, "file", here, &t[i].file, err)) != CG_OK ||
            (st = get_string(e, "sha256", here, &hex, err)) != CG_OK) {
            free(hex);
            goto fail;
        }
        bool hex_ok = valid_hex(hex);
        if (hex_ok)
            memcpy(t[i].sha256, hex, CG_SHA256_HEX);
        free(hex);
        if (!hex_ok) {
            st = cg_error_set(err, CG_INVALID, "%s ('%s'): sha256 is not 64 lowercase hex digits",
                              here, t[i].name);
            goto fail;
        }
        if (!safe_relpath(t[i].file)) {
            st = cg_error_set(err, CG_SECURITY,
                              "%s ('%s'): file '%s' is not a safe relative path inside the "
                              "golden directory", here, t[i].name, t[i].file);
            goto fail;
        }
        dt = json_object_get(e, "dtype");
        t[i].dtype = json_is_string(dt) ? cg_dtype_from_name(json_string_value(dt))
                                        : CG_DTYPE_UNDEFINED;
        if (t[i].dtype == CG_DTYPE_UNDEFINED) {
            st = cg_error_set(err, CG_INVALID, "%s ('%s'): missing or unknown dtype", here,
                              t[i].name);
            goto fail;
        }
        shape = json_object_get(e, "shape");
        if (!json_is_array(shape) || json_array_size(shape) > CG_MAX_RANK) {
            st = cg_error_set(err, CG_INVALID, "%s ('%s'): shape is missing, not an array or "
                              "of rank above %d", here, t[i].name, CG_MAX_RANK);
            goto fail;
        }
        t[i].rank = (int)json_array_size(shape);
        for (int d = 0; d < t[i].rank; d++) {
            json_t *dim = json_array_get(shape, (size_t)d);
            if (!json_is_integer(dim) || json_integer_value(dim) < 0) {
                st = cg_error_set(err, CG_INVALID, "%s ('%s'): shape[%d] is not a size", here,
                                  t[i].name, d);
                goto fail;
            }
            t[i].dims[d] = (int64_t)json_integer_value(dim);
        }
        json_t *noise = json_object_get(e, "noise");
        if (noise) {
            cg_output_floor *f = &t[i].floor;
            json_t *el = json_object_get(noise, "elements");
            if (!json_is_object(noise) ||
                !floor_read(json_object_get(noise, "scale"), &f->scale) ||
                !floor_read(json_object_get(noise, "fp32_floor"), &f->fp32) ||
                !floor_read(json_object_get(noise, "fp16_floor"), &f->fp16) ||
                !json_is_integer(el) || json_integer_value(el) < 0 || !(f->scale >= 0) ||
                !(f->fp32 >= 0) || (!isnan(f->fp16) && !(f->fp16 >= 0))) {
                st = cg_error_set(err, CG_INVALID, "%s ('%s'): noise is not {scale, fp32_floor, "
                                  "fp16_floor, elements} of sizes >= 0", here, t[i].name);
                goto fail;
            }
            /* sets dumped before the fp16-sums floor lack it: not recorded */
            json_t *sums = json_object_get(noise, "fp16_sums_floor");
            if (!sums) {
                f->fp16_sums = NAN;
            } else if (!floor_read(sums, &f->fp16_sums) ||
                       (!isnan(f->fp16_sums) && !(f->fp16_sums >= 0))) {
                st = cg_error_set(err, CG_INVALID, "%s ('%s'): noise.fp16_sums_floor is not a "
                                  "size >= 0 or null", here, t[i].name);
                goto fail;
            }
            f->count = (uint64_t)json_integer_value(el);
            f->known = true;
        }
        for (size_t k = 0; k < i; k++)
            if (strcmp(t[k].name, t[i].name) == 0) {
                st = cg_error_set(err, CG_INVALID, "%s: '%s' is listed twice", where,
                                  t[i].name);
                goto fail;
            }
        *count = i + 1;
    }
    *out = t;
    *count = n;
    return CG_OK;
fail:
    free_tensors(t, n);
    *count = 0;
    return st;
}

/* Checks that one listed file exists and has its recorded hash. It is
 * opened beneath the golden folder without following any link (a set
 * folder or file swapped for a link could point anywhere). */
static cg_status check_file(const cg_golden *g, const cg_golden_tensor *t, cg_error *err)
{
    char hex[CG_SHA256_HEX];
    cg_error local;
    cg_error_clear(&local);
    int fd = cg_file_open_beneath(g->dir, t->file, NULL, &local);
    if (fd < 0) {
        if (local.status == CG_IO && errno == ENOENT)
            return cg_error_set(err, CG_IO, "golden set '%s': file '%s' (tensor '%s') is listed "
                                "in manifest.json but missing", g->dir, t->file, t->name);
        return cg_error_set(err, local.status == CG_IO ? CG_SECURITY : local.status,
                            "golden set '%s': tensor '%s': %s", g->dir, t->name, local.msg);
    }
    if (cg_sha256_fd(fd, t->file, hex, NULL, &local) != CG_OK)
        return cg_error_set(err, local.status, "golden set '%s': %s", g->dir, local.msg);
    if (strcmp(hex, t->sha256) != 0)
        return cg_error_set(err, CG_SECURITY, "golden set '%s': file '%s' (tensor '%s') was "
                            "altered: its sha256 is %s, manifest.json says %s", g->dir, t->file,
                            t->name, hex, t->sha256);
    return CG_OK;
}

cg_status cg_golden_open(const char *dir, cg_golden **out, cg_error *err)
{
    cg_status st;
    char path[GOLDEN_PATH_MAX], where[256];
    char *buf = NULL;
    size_t size = 0;
    json_t *root = NULL, *v, *model, *sets;
    json_error_t jerr;
    cg_error local;
    cg_golden *g = NULL;
    *out = NULL;
    if (!dir || !join(path, sizeof path, dir, GOLDEN_MANIFEST))
        return cg_error_set(err, CG_USAGE, "golden directory path missing or too long");
    cg_error_clear(&local);
    /* beneath the folder, never through a link: a manifest swapped for a
     * link could vouch for files anywhere */
    if (cg_file_read_beneath(dir, GOLDEN_MANIFEST, GOLDEN_MANIFEST_MAX, &buf, &size, &local) !=
        CG_OK)
        return cg_error_set(err, local.status,
                            "golden set '%s': no readable manifest.json (%s)", dir, local.msg);
    root = json_loadb(buf, size, JSON_REJECT_DUPLICATES, &jerr);
    free(buf);
    if (!root)
        return cg_error_set(err, CG_PARSE, "golden set '%s': manifest.json line %d: %s", dir,
                            jerr.line, jerr.text);
    g = calloc(1, sizeof *g);
    if (!g || !(g->dir = strdup(dir))) {
        st = cg_error_set(err, CG_NOMEM, "golden set '%s': out of memory", dir);
        goto fail;
    }
    snprintf(where, sizeof where, "golden set '%s': manifest.json", dir);
    if (!json_is_object(root)) {
        st = cg_error_set(err, CG_INVALID, "%s is not a JSON object", where);
        goto fail;
    }
    v = json_object_get(root, "format_version");
    if (!json_is_integer(v)) {
        st = cg_error_set(err, CG_INVALID, "%s has no integer format_version", where);
        goto fail;
    }
    g->format_version = (int64_t)json_integer_value(v);
    if (g->format_version < 1 || g->format_version > CG_GOLDEN_FORMAT_VERSION) {
        st = cg_error_set(err, CG_UNSUPPORTED, "%s has format_version %" PRId64 "; convgate %s "
                          "reads format_version 1 to %d", where, g->format_version, CG_VERSION,
                          CG_GOLDEN_FORMAT_VERSION);
        goto fail;
    }
    if ((st = get_string(root, "convgate_version", where, &g->convgate_version, err)) != CG_OK ||
        (st = get_string(root, "created", where, &g->created, err)) != CG_OK)
        goto fail;
    model = json_object_get(root, "model");
    if (!json_is_object(model)) {
        st = cg_error_set(err, CG_INVALID, "%s has no model object", where);
        goto fail;
    }
    char *hex = NULL;
    st = get_string(model, "sha256", where, &hex, err);
    if (st == CG_OK && !valid_hex(hex))
        st = cg_error_set(err, CG_INVALID, "%s: model sha256 is not 64 lowercase hex digits",
                          where);
    if (st == CG_OK)
        memcpy(g->model_sha256, hex, CG_SHA256_HEX);
    free(hex);
    if (st != CG_OK || (st = get_string(model, "file", where, &g->model_file, err)) != CG_OK)
        goto fail;
    v = json_object_get(model, "bytes");
    if (!json_is_integer(v) || json_integer_value(v) < 0) {
        st = cg_error_set(err, CG_INVALID, "%s: model bytes is missing or negative", where);
        goto fail;
    }
    g->model_bytes = (uint64_t)json_integer_value(v);
    sets = json_object_get(root, "sets");
    if (!json_is_array(sets) || json_array_size(sets) == 0) {
        st = cg_error_set(err, CG_INVALID, "%s lists no sets", where);
        goto fail;
    }
    g->sets = calloc(json_array_size(sets), sizeof *g->sets);
    if (!g->sets) {
        st = cg_error_set(err, CG_NOMEM, "%s: out of memory", where);
        goto fail;
    }
    for (size_t i = 0; i < json_array_size(sets); i++) {
        json_t *s = json_array_get(sets, i);
        cg_golden_set *gs = &g->sets[i];
        char here[512];
        g->set_count = i + 1;
        snprintf(here, sizeof here, "%s: sets[%zu]", where, i);
        if (!json_is_object(s)) {
            st = cg_error_set(err, CG_INVALID, "%s is not an object", here);
            goto fail;
        }
        if ((st = get_string(s, "name", here, &gs->name, err)) != CG_OK)
            goto fail;
        for (size_t k = 0; k < i; k++)
            if (strcmp(g->sets[k].name, gs->name) == 0) {
                st = cg_error_set(err, CG_INVALID, "%s: set '%s' is listed twice", where,
                                  gs->name);
                goto fail;
            }
        snprintf(here, sizeof here, "%s: set '%s' inputs", where, gs->name);
        if ((st = parse_tensors(json_object_get(s, "inputs"), here, &gs->inputs,
                                &gs->input_count, err)) != CG_OK)
            goto fail;
        snprintf(here, sizeof here, "%s: set '%s' outputs", where, gs->name);
        if ((st = parse_tensors(json_object_get(s, "outputs"), here, &gs->outputs,
                                &gs->output_count, err)) != CG_OK)
            goto fail;
        if (gs->output_count == 0) {
            st = cg_error_set(err, CG_INVALID, "%s: set '%s' has no outputs to compare", where,
                              gs->name);
            goto fail;
        }
    }
    /* Every file, before anything runs: a tampered corpus never half-passes. */
    for (size_t i = 0; i < g->set_count; i++) {
        const cg_golden_set *gs = &g->sets[i];
        for (size_t k = 0; k < gs->input_count; k++)
            if ((st = check_file(g, &gs->inputs[k], err)) != CG_OK)
                goto fail;
        for (size_t k = 0; k < gs->output_count; k++)
            if ((st = check_file(g, &gs->outputs[k], err)) != CG_OK)
                goto fail;
    }
    json_decref(root);
    *out = g;
    return CG_OK;
fail:
    json_decref(root);
    cg_golden_free(g);
    return st;
}

cg_status cg_golden_check_model(const cg_golden *g, const char *model_path, cg_error *err)
{
    char hex[CG_SHA256_HEX];
    cg_status st = cg_sha256_file(model_path, hex, NULL, err);
    if (st != CG_OK)
        return st;
    if (strcmp(hex, g->model_sha256) != 0)
        return cg_error_set(err, CG_SECURITY,
                            "golden set '%s' was made for another model: it records model '%s' "
                            "with sha256 %s, but '%s' has sha256 %s", g->dir, g->model_file,
                            g->model_sha256, model_path, hex);
    return CG_OK;
}

cg_status cg_golden_load(const cg_golden *g, const cg_golden_tensor *t, size_t max_bytes,
                         cg_value **out, cg_error *err)
{
    cg_status st;
    char path[GOLDEN_PATH_MAX], hex[CG_SHA256_HEX];
    uint8_t *buf = NULL;
    size_t size = 0, limit = cg_io_limit(max_bytes);
    cg_tensor tensor;
    memset(&tensor, 0, sizeof tensor);
    *out = NULL;
    if (!safe_relpath(t->file) || !join(path, sizeof path, g->dir, t->file))
        return cg_error_set(err, CG_SECURITY, "golden set '%s': unsafe file '%s'", g->dir,
                            t->file);
    /* room for the .npy header on top of the payload limit; opened beneath
     * the folder without following links, like the manifest */
    char *bytes = NULL;
    if ((st = cg_file_read_beneath(g->dir, t->file,
                                   limit > SIZE_MAX - 65536 ? SIZE_MAX : limit + 65536, &bytes,
                                   &size, err)) != CG_OK) {
        cg_error_prefix(err, "golden set '%s': ", g->dir);
        return st;
    }
    buf = (uint8_t *)bytes;
    if ((st = cg_sha256_hex(buf, size, hex, err)) != CG_OK)
        goto done;
    if (strcmp(hex, t->sha256) != 0) {
        st = cg_error_set(err, CG_SECURITY, "golden set '%s': file '%s' (tensor '%s') was "
                          "altered: its sha256 is %s, manifest.json says %s", g->dir, t->file,
                          t->name, hex, t->sha256);
        goto done;
    }
    if ((st = cg_npy_parse(buf, size, path, max_bytes, &tensor, err)) != CG_OK)
        goto done;
    bool same = tensor.dtype == t->dtype && tensor.rank == t->rank;
    for (int d = 0; same && d < t->rank; d++)
        same = tensor.dims[d] == t->dims[d];
    if (!same) {
        st = cg_error_set(err, CG_INVALID, "golden set '%s': '%s' holds %s of rank %d, "
                          "manifest.json says %s of rank %d (or another shape)", g->dir, t->file,
                          cg_dtype_name(tensor.dtype), tensor.rank, cg_dtype_name(t->dtype),
                          t->rank);
        goto done;
    }
    st = cg_value_from_tensor(&tensor, out, err);
done:
    cg_tensor_release(&tensor);
    free(buf);
    return st;
}

/* --- golden sets as samples ---------------------------------------------------------- */

/* The tensor of `name` among a golden set's, or NULL. */
static const cg_golden_tensor *golden_find(const cg_golden_tensor *ts, size_t count,
                                           const char *name)
{
    for (size_t i = 0; i < count; i++)
        if (strcmp(ts[i].name, name) == 0)
            return &ts[i];
    return NULL;
}

cg_status cg_golden_sample(const cg_golden *g, size_t set, const cg_model *model,
                           size_t max_bytes, cg_sample *out, cg_error *err)
{
    const cg_graph *gr = model && model->graph ? model->graph : NULL;
    cg_status st;
    if (!gr || set >= g->set_count)
        return cg_error_set(err, CG_USAGE, "golden sample: no model graph or no set %zu", set);
    const cg_golden_set *gs = &g->sets[set];
    if ((st = cg_sample_init(out, model, gs->name, err)) != CG_OK)
        return st;
    /* one rule for verify and gate --golden: the set covers every input to
     * feed and every output of the model, and holds nothing else */
    for (size_t i = 0; i < gs->input_count + gs->output_count; i++) {
        bool input = i < gs->input_count;
        const cg_golden_tensor *t = input ? &gs->inputs[i] : &gs->outputs[i - gs->input_count];
        bool known = false;
        for (size_t k = 0; input && k < gr->input_count && !known; k++)
            known = gr->inputs[k].name && strcmp(gr->inputs[k].name, t->name) == 0;
        for (size_t k = 0; !input && k < gr->output_count && !known; k++)
            known = gr->outputs[k].name && strcmp(gr->outputs[k].name, t->name) == 0;
        if (!known) {
            st = cg_error_set(err, CG_INVALID, "golden set '%s' holds %s '%s', which the model "
                              "does not have", gs->name, input ? "input" : "output", t->name);
            goto fail;
        }
    }
    const cg_value_info *need[256];
    size_t n = cg_samples_fed_inputs(gr, need, 256);
    if (n > 256) {
        st = cg_error_set(err, CG_LIMIT, "the model has %zu inputs, above 256", n);
        goto fail;
    }
    for (size_t k = 0; k < n; k++) {
        const cg_golden_tensor *t = golden_find(gs->inputs, gs->input_count, need[k]->name);
        cg_value *v = NULL;
        if (!t) {
            st = cg_error_set(err, CG_INVALID, "golden set '%s' has no input '%s' of the model",
                              gs->name, need[k]->name);
            goto fail;
        }
        if ((st = cg_golden_load(g, t, max_bytes, &v, err)) != CG_OK ||
            (st = cg_sample_feed(out, model, need[k]->name, v, t->file, err)) != CG_OK)
            goto fail;
    }
    out->expected = calloc(gr->output_count ? gr->output_count : 1, sizeof *out->expected);
    if (!out->expected) {
        st = cg_error_set(err, CG_NOMEM, "out of memory loading golden set '%s'", gs->name);
        goto fail;
    }
    for (size_t k = 0; k < gr->output_count; k++) {
        const char *name = gr->outputs[k].name ? gr->outputs[k].name : "";
        const cg_golden_tensor *t = golden_find(gs->outputs, gs->output_count, name);
        if (!t) {
            st = cg_error_set(err, CG_INVALID, "golden set '%s' has no output '%s' of the model "
                              "(a golden set covers every model output)", gs->name, name);
            goto fail;
        }
        out->expected[k].name = name;
        if ((st = cg_golden_load(g, t, max_bytes, &out->expected[k].value, err)) != CG_OK)
            goto fail;
        out->expected_count++;
    }
    /* the floors, when every output has them */
    bool floors = gr->output_count > 0;
    for (size_t k = 0; k < gr->output_count && floors; k++) {
        const cg_golden_tensor *t = golden_find(gs->outputs, gs->output_count,
                                                gr->outputs[k].name ? gr->outputs[k].name : "");
        floors = t && t->floor.known;
    }
    if (floors) {
        out->expected_floors = calloc(gr->output_count, sizeof *out->expected_floors);
        if (!out->expected_floors) {
            st = cg_error_set(err, CG_NOMEM, "out of memory loading golden set '%s'", gs->name);
            goto fail;
        }
        for (size_t k = 0; k < gr->output_count; k++)
            out->expected_floors[k] =
                golden_find(gs->outputs, gs->output_count,
                            gr->outputs[k].name ? gr->outputs[k].name : "")->floor;
    }
    return CG_OK;
fail:
    cg_sample_clear(out);
    return st;
}

cg_status cg_samples_load_golden(const cg_model *model, const char *model_path, const char *dir,
                                 size_t max_bytes, cg_sample_set *out, cg_error *err)
{
    cg_golden *g = NULL;
    cg_status st;
    memset(out, 0, sizeof *out);
    if (!model || !model->graph || !dir || !model_path)
        return cg_error_set(err, CG_USAGE, "cg_samples_load_golden: missing model or directory");
    if ((st = cg_golden_open(dir, &g, err)) != CG_OK ||
        (st = cg_golden_check_model(g, model_path, err)) != CG_OK)
        goto done;
    if (!g->set_count) {
        st = cg_error_set(err, CG_INVALID, "golden set %s holds no input sets", dir);
        goto done;
    }
    out->samples = calloc(g->set_count, sizeof *out->samples);
    if (!out->samples) {
        st = cg_error_set(err, CG_NOMEM, "out of memory loading %s", dir);
        goto done;
    }
    for (size_t i = 0; i < g->set_count && st == CG_OK; i++)
        if ((st = cg_golden_sample(g, i, model, max_bytes, &out->samples[i], err)) == CG_OK)
            out->count++;
done:
    cg_golden_free(g);
    if (st != CG_OK)
        cg_sample_set_free(out);
    return st;
}
