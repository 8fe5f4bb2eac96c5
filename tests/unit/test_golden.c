/* Golden corpus tests (src/verify/golden.c): sha256 against known digests,
 * safe file stems, a written golden set read back exactly, and every way a
 * golden directory can be wrong (flipped byte, missing file, other model,
 * other format_version, unsafe or malformed manifest, planted link) failing
 * with the right status and a message naming the problem; input-set
 * directories (DIR/SET/NAME.npy and DIR/SET.npz) with strict checking. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "convgate/golden.h"
#include "convgate/model.h"
#include "convgate/tensor_io.h"
#include "convgate/tensor.h"
#include "testlib.h"

#define MODEL CG_SOURCE_DIR "/examples/tiny_cnn.onnx"
#define OTHER_MODEL CG_SOURCE_DIR "/tests/data/io/cli_model.onnx"

static char root[256];

static void path_of(char *out, size_t cap, const char *rel)
{
    snprintf(out, cap, "%s/%s", root, rel);
}

static void spit(const char *path, const void *data, size_t size)
{
    FILE *f = fopen(path, "wb");
    if (f) {
        fwrite(data, 1, size, f);
        fclose(f);
    }
}

static char *slurp(const char *path)
{
    FILE *f = fopen(path, "rb");
    char *buf = NULL;
    long n;
    if (!f)
        return NULL;
    if (fseek(f, 0, SEEK_END) == 0 && (n = ftell(f)) >= 0 && fseek(f, 0, SEEK_SET) == 0) {
        buf = calloc((size_t)n + 1, 1);
        if (buf && fread(buf, 1, (size_t)n, f) != (size_t)n) {
            free(buf);
            buf = NULL;
        }
    }
    fclose(f);
    return buf;
}

/* Replaces the first `from` in a file with `to`. */
static void edit(const char *path, const char *from, const char *to)
{
    char *s = slurp(path), *at = s ? strstr(s, from) : NULL;
    if (!at) {
        free(s);
        return;
    }
    size_t head = (size_t)(at - s), tail = strlen(at + strlen(from));
    char *out = malloc(head + strlen(to) + tail + 1);
    memcpy(out, s, head);
    memcpy(out + head, to, strlen(to));
    memcpy(out + head + strlen(to), at + strlen(from), tail + 1);
    spit(path, out, strlen(out));
    free(out);
    free(s);
}

static cg_value *float_value(int rank, const int64_t *dims, float base)
{
    cg_tensor t;
    cg_value *v = NULL;
    if (cg_tensor_alloc(&t, CG_DTYPE_FLOAT, rank, dims, 0, NULL) != CG_OK)
        return NULL;
    for (int64_t i = 0; i < t.numel; i++)
        ((float *)t.data)[i] = base + (float)i * 0.25f;
    if (cg_value_from_tensor(&t, &v, NULL) != CG_OK)
        cg_tensor_release(&t);
    return v;
}

/* --- hashing and names ------------------------------------------------------ */

static void test_sha256(void)
{
    char hex[CG_SHA256_HEX], path[300];
    uint64_t bytes = 0;
    EXPECT(cg_sha256_hex("abc", 3, hex, NULL) == CG_OK, "sha256 of abc");
    EXPECT(strcmp(hex, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad") == 0,
           "abc: %s", hex);
    path_of(path, sizeof path, "empty");
    spit(path, "", 0);
    EXPECT(cg_sha256_file(path, hex, &bytes, NULL) == CG_OK && bytes == 0, "empty file");
    EXPECT(strcmp(hex, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855") == 0,
           "empty: %s", hex);
    /* a file larger than one read chunk hashes like the same bytes in memory */
    size_t n = (3u << 20) + 7;
    unsigned char *big = malloc(n);
    for (size_t i = 0; i < n; i++)
        big[i] = (unsigned char)(i * 31 + 7);
    char want[CG_SHA256_HEX];
    path_of(path, sizeof path, "big");
    spit(path, big, n);
    EXPECT(cg_sha256_hex(big, n, want, NULL) == CG_OK, "big in memory");
    EXPECT(cg_sha256_file(path, hex, &bytes, NULL) == CG_OK && bytes == n, "big file");
    EXPECT(strcmp(hex, want) == 0, "chunked hash %s != %s", hex, want);
    free(big);
    cg_error err;
    cg_error_clear(&err);
    path_of(path, sizeof path, "nope");
    EXPECT(cg_sha256_file(path, hex, NULL, &err) == CG_IO && strstr(err.msg, "nope"), "%s",
           err.msg);
}

static void test_stems(void)
{
    char out[200];
    const char *used[] = {"Sum", "a_b"};
    cg_samples_stem("a/b", NULL, 0, out, sizeof out);
    EXPECT(strcmp(out, "a_b") == 0, "%s", out);
    cg_samples_stem("../evil", NULL, 0, out, sizeof out);
    EXPECT(strcmp(out, "_._evil") == 0, "%s", out);
    cg_samples_stem(".hidden", NULL, 0, out, sizeof out);
    EXPECT(strcmp(out, "_hidden") == 0, "%s", out);
    cg_samples_stem("", NULL, 0, out, sizeof out);
    EXPECT(strcmp(out, "tensor") == 0, "%s", out);
    cg_samples_stem("sum", used, 2, out, sizeof out);
    EXPECT(strcmp(out, "sum_2") == 0, "case-insensitive collision: %s", out);
    cg_samples_stem("a:b", used, 2, out, sizeof out);
    EXPECT(strcmp(out, "a_b_2") == 0, "%s", out);
    cg_samples_stem("caf\xc3\xa9", NULL, 0, out, sizeof out);
    EXPECT(strcmp(out, "caf__") == 0, "non-ASCII: %s", out);
    char longname[400];
    memset(longname, 'x', sizeof longname - 1);
    longname[sizeof longname - 1] = '\0';
    cg_samples_stem(longname, NULL, 0, out, sizeof out);
    EXPECT(strlen(out) == CG_SAMPLES_MAX_STEM, "capped: %zu", strlen(out));
}

/* --- writing and reading back ----------------------------------------------------- */

/* Writes root/<dir> with two sets of a fake input/output pair for MODEL. */
static cg_status write_golden(const char *dir, const cg_model *model, bool force, cg_error *err)
{
    cg_golden_writer *w = NULL;
    int64_t in_dims[2] = {2, 3}, out_dims[1] = {4};
    cg_status st = cg_golden_writer_init(dir, MODEL, model, force, &w, err);
    for (int s = 0; st == CG_OK && s < 2; s++) {
        cg_named_value in = {"image", float_value(2, in_dims, (float)s)};
        cg_named_value out[2] = {{"logits", float_value(1, out_dims, 10.0f * (float)s)},
                                 {"Logits", float_value(1, out_dims, -1.0f)}};
        const char *used = NULL;
        st = cg_golden_writer_add(w, s ? "set/../x" : "first", &in, 1, out, 2, NULL, &used, err);
        if (st == CG_OK && s == 1)
            EXPECT(strcmp(used, "set_.._x") == 0, "set name made safe: %s", used);
        cg_value_free(in.value);
        cg_value_free(out[0].value);
        cg_value_free(out[1].value);
    }
    if (st == CG_OK)
        st = cg_golden_writer_finish(w, err);
    cg_golden_writer_free(w);
    return st;
}

static void test_round_trip(const cg_model *model)
{
    char dir[300], file[400];
    cg_error err;
    cg_golden *g = NULL;
    cg_error_clear(&err);
    path_of(dir, sizeof dir, "g");
    EXPECT(write_golden(dir, model, false, &err) == CG_OK, "write: %s", err.msg);
    EXPECT(cg_golden_open(dir, &g, &err) == CG_OK, "open: %s", err.msg);
    if (!g)
        return;
    char model_hex[CG_SHA256_HEX];
    uint64_t model_bytes = 0;
    EXPECT(cg_sha256_file(MODEL, model_hex, &model_bytes, NULL) == CG_OK, "cg_sha256_file");
    EXPECT(g->format_version == CG_GOLDEN_FORMAT_VERSION, "version");
    EXPECT(strcmp(g->model_sha256, model_hex) == 0 && g->model_bytes == model_bytes,
           "model hash");
    EXPECT(strcmp(g->model_file, "tiny_cnn.onnx") == 0, "%s", g->model_file);
    EXPECT(strlen(g->created) == 20 && g->created[19] == 'Z', "created %s", g->created);
    EXPECT(g->set_count == 2, "%zu sets", g->set_count);
    if (g->set_count == 2) {
        const cg_golden_set *s = &g->sets[1];
        EXPECT(strcmp(s->name, "set_.._x") == 0, "%s", s->name);
        EXPECT(s->input_count == 1 && s->output_count == 2, "counts");
        EXPECT(strcmp(s->outputs[1].file, "set_.._x/outputs/Logits_2.npy") == 0,
               "collision file: %s", s->outputs[1].file);
        EXPECT(s->inputs[0].dtype == CG_DTYPE_FLOAT && s->inputs[0].rank == 2 &&
                   s->inputs[0].dims[1] == 3, "input type");
        cg_value *v = NULL;
        EXPECT(cg_golden_load(g, &s->outputs[0], 0, &v, &err) == CG_OK, "load: %s", err.msg);
        if (v) {
            const float *f = v->tensor.data;
            EXPECT(v->tensor.numel == 4 && f[0] == 10.0f && f[3] == 10.75f, "values");
        }
        cg_value_free(v);
    }
    EXPECT(cg_golden_check_model(g, MODEL, &err) == CG_OK, "same model: %s", err.msg);
    cg_error_clear(&err);
    EXPECT(cg_golden_check_model(g, OTHER_MODEL, &err) == CG_SECURITY, "other model");
    EXPECT(strstr(err.msg, model_hex) && strstr(err.msg, "another model"), "%s", err.msg);

    /* swapped after open: cg_golden_load re-hashes what it parses */
    path_of(file, sizeof file, "g/first/outputs/logits.npy");
    char *orig = slurp(file);
    char other[400];
    path_of(other, sizeof other, "g/first/outputs/Logits_2.npy");
    char *swap = slurp(other);
    struct stat sb;
    stat(other, &sb);
    spit(file, swap, (size_t)sb.st_size);
    cg_value *v = NULL;
    cg_error_clear(&err);
    EXPECT(cg_golden_load(g, &g->sets[0].outputs[0], 0, &v, &err) == CG_SECURITY && !v,
           "swapped file loaded");
    EXPECT(strstr(err.msg, "first/outputs/logits.npy") && strstr(err.msg, "altered"), "%s",
           err.msg);
    stat(file, &sb);
    spit(file, orig, (size_t)sb.st_size);
    free(orig);
    free(swap);
    cg_golden_free(g);

    /* a non-empty directory is refused without force, rewritten with it */
    cg_error_clear(&err);
    EXPECT(write_golden(dir, model, false, &err) == CG_USAGE && strstr(err.msg, "--force"),
           "non-empty: %s", err.msg);
    cg_error_clear(&err);
    EXPECT(write_golden(dir, model, true, &err) == CG_OK, "force: %s", err.msg);
}

/* Floors that are not finite (an fp16 sum that overflowed, a scale of
 * inf) are written as cg_json_number writes them ("inf"; an fp16 floor not
 * measured is null) and read back as they were. */
static void test_floors_non_finite(const cg_model *model)
{
    char dir[300], file[400];
    cg_error err;
    cg_error_clear(&err);
    path_of(dir, sizeof dir, "inf");
    cg_golden_writer *w = NULL;
    int64_t in_dims[2] = {2, 3}, out_dims[1] = {4};
    cg_named_value in = {"image", float_value(2, in_dims, 0)};
    cg_named_value out[2] = {{"logits", float_value(1, out_dims, 1)},
                             {"Logits", float_value(1, out_dims, 2)}};
    const cg_output_floor floors[2] = {{true, INFINITY, INFINITY, NAN, INFINITY, 4},
                                       {true, 1.5, 1e-6, 1e-3, NAN, 4}};
    EXPECT(cg_golden_writer_init(dir, MODEL, model, false, &w, &err) == CG_OK &&
               cg_golden_writer_add(w, "s", &in, 1, out, 2, floors, NULL, &err) == CG_OK &&
               cg_golden_writer_finish(w, &err) == CG_OK,
           "write: %s", err.msg);
    cg_golden_writer_free(w);
    cg_value_free(in.value);
    cg_value_free(out[0].value);
    cg_value_free(out[1].value);
    snprintf(file, sizeof file, "%s/manifest.json", dir);
    char *text = slurp(file);
    EXPECT(text && strstr(text, "\"scale\": \"inf\"") && strstr(text, "\"fp16_floor\": null"),
           "inf as \"inf\", an unmeasured floor as null: %s", text ? text : "(none)");
    free(text);
    cg_golden *g = NULL;
    EXPECT(cg_golden_open(dir, &g, &err) == CG_OK, "open: %s", err.msg);
    if (g && g->set_count == 1 && g->sets[0].output_count == 2) {
        const cg_output_floor *a = &g->sets[0].outputs[0].floor;
        const cg_output_floor *b = &g->sets[0].outputs[1].floor;
        EXPECT(a->known && isinf(a->scale) && isinf(a->fp32) && isnan(a->fp16) &&
                   isinf(a->fp16_sums) && a->count == 4,
               "read back: %g %g %g %g", a->scale, a->fp32, a->fp16, a->fp16_sums);
        EXPECT(b->scale == 1.5 && b->fp32 == 1e-6 && b->fp16 == 1e-3 && isnan(b->fp16_sums),
               "finite floors: %g %g %g %g", b->scale, b->fp32, b->fp16, b->fp16_sums);
    }
    cg_golden_free(g);
}

/* Copies root/g to root/<name> by writing it again, then applies a change. */
static cg_status open_variant(const cg_model *model, const char *name, const char *rel,
                              const char *from, const char *to, cg_error *err)
{
    char dir[300], file[400];
    cg_golden *g = NULL;
    cg_error_clear(err);
    path_of(dir, sizeof dir, name);
    if (write_golden(dir, model, false, err) != CG_OK)
        return CG_OK; /* reported by the caller's expectation */
    snprintf(file, sizeof file, "%s/%s", dir, rel);
    if (from)
        edit(file, from, to);
    else
        unlink(file);
    cg_status st = cg_golden_open(dir, &g, err);
    cg_golden_free(g);
    return st;
}

static void test_broken_sets(const cg_model *model)
{
    cg_error err;
    EXPECT(open_variant(model, "v1", "manifest.json", "\"format_version\": 2",
                        "\"format_version\": 7", &err) == CG_UNSUPPORTED, "version 7");
    EXPECT(strstr(err.msg, "format_version 7"), "%s", err.msg);
    EXPECT(open_variant(model, "v2", "first/inputs/image.npy", NULL, NULL, &err) == CG_IO,
           "missing file");
    EXPECT(strstr(err.msg, "first/inputs/image.npy") && strstr(err.msg, "missing"), "%s",
           err.msg);
    /* one flipped byte in an output's data */
    char v3[300];
    path_of(v3, sizeof v3, "v3");
    cg_error_clear(&err);
    EXPECT(write_golden(v3, model, false, &err) == CG_OK, "%s", err.msg);
    char file[400];
    path_of(file, sizeof file, "v3/first/outputs/logits.npy");
    FILE *f = fopen(file, "r+b");
    if (f) {
        fseek(f, -1, SEEK_END);
        fputc(0x7f, f);
        fclose(f);
    }
    cg_golden *g = NULL;
    char dir[300];
    path_of(dir, sizeof dir, "v3");
    cg_error_clear(&err);
    EXPECT(cg_golden_open(dir, &g, &err) == CG_SECURITY, "flipped byte");
    EXPECT(strstr(err.msg, "first/outputs/logits.npy") && strstr(err.msg, "altered"), "%s",
           err.msg);
    cg_golden_free(g);
    EXPECT(open_variant(model, "v4", "manifest.json", "\"file\": \"first/",
                        "\"file\": \"../first/", &err) == CG_SECURITY, "escape");
    EXPECT(strstr(err.msg, "not a safe relative path"), "%s", err.msg);
    EXPECT(open_variant(model, "v5", "manifest.json", "\"file\": \"first/",
                        "\"file\": \"/first/", &err) == CG_SECURITY, "absolute");
    EXPECT(open_variant(model, "v6", "manifest.json", "\"sha256\": \"", "\"sha256\": \"X",
                        &err) == CG_INVALID, "bad hex");
    EXPECT(open_variant(model, "v7", "manifest.json", "\"dtype\": \"float32\"",
                        "\"dtype\": \"float99\"", &err) == CG_INVALID, "dtype");
    EXPECT(open_variant(model, "v8", "manifest.json", "{", "{\"sets\": [], ", &err) == CG_PARSE,
           "duplicate key");
    EXPECT(open_variant(model, "v9", "manifest.json", "\"shape\": [", "\"shape\": [-1, ",
                        &err) == CG_INVALID, "negative dim");
    EXPECT(open_variant(model, "v10", "manifest.json", NULL, NULL, &err) == CG_IO,
           "no manifest");
    EXPECT(strstr(err.msg, "manifest.json"), "%s", err.msg);
    /* the manifest's shape must match the file's */
    EXPECT(open_variant(model, "v11", "manifest.json", "\"shape\": [\n            4",
                        "\"shape\": [\n            5", &err) == CG_OK, "shape edit: %s", err.msg);
    path_of(dir, sizeof dir, "v11");
    g = NULL;
    if (cg_golden_open(dir, &g, &err) == CG_OK) {
        cg_value *v = NULL;
        cg_error_clear(&err);
        EXPECT(cg_golden_load(g, &g->sets[0].outputs[0], 0, &v, &err) == CG_INVALID && !v,
               "shape mismatch loaded: %s", err.msg);
        cg_value_free(v);
    }
    cg_golden_free(g);
}

static void test_writer_refusals(const cg_model *model)
{
    char dir[300], link[400], outside[300];
    cg_error err;
    cg_golden_writer *w = NULL;
    cg_error_clear(&err);
    /* a link planted where a set directory goes */
    path_of(dir, sizeof dir, "planted");
    path_of(outside, sizeof outside, "outside");
    mkdir(dir, 0777);
    mkdir(outside, 0777);
    snprintf(link, sizeof link, "%s/first", dir);
    EXPECT(symlink(outside, link) == 0, "symlink");
    EXPECT(cg_golden_writer_init(dir, MODEL, model, true, &w, &err) == CG_OK, "%s", err.msg);
    int64_t dims[1] = {2};
    cg_named_value v = {"x", float_value(1, dims, 1.0f)};
    EXPECT(cg_golden_writer_add(w, "first", &v, 1, &v, 1, NULL, NULL, &err) == CG_SECURITY,
           "wrote through a link");
    char escaped[400];
    snprintf(escaped, sizeof escaped, "%s/inputs", outside);
    struct stat sb;
    EXPECT(stat(escaped, &sb) != 0, "something written outside GOLDEN");
    /* sequences are refused with the output's name */
    cg_value seq;
    memset(&seq, 0, sizeof seq);
    seq.kind = CG_VALUE_SEQUENCE;
    cg_named_value sv = {"seq_out", &seq};
    cg_error_clear(&err);
    EXPECT(cg_golden_writer_add(w, "second", &v, 1, &sv, 1, NULL, NULL, &err) == CG_UNSUPPORTED &&
               strstr(err.msg, "seq_out"), "%s", err.msg);
    cg_error_clear(&err);
    cg_golden_writer_free(w);
    w = NULL;
    /* nothing added: no manifest */
    path_of(dir, sizeof dir, "empty_golden");
    EXPECT(cg_golden_writer_init(dir, MODEL, model, false, &w, &err) == CG_OK, "%s", err.msg);
    EXPECT(w && cg_golden_writer_finish(w, &err) == CG_USAGE, "finish without sets");
    cg_golden_writer_free(w);
    cg_value_free(v.value);
}

int main(void)
{
    cg_model *model = NULL;
    cg_error err;
    cg_error_clear(&err);
    snprintf(root, sizeof root, "/tmp/cg_test_golden_XXXXXX");
    if (!mkdtemp(root)) {
        perror("mkdtemp");
        return 1;
    }
    if (cg_model_load(MODEL, NULL, &model, &err) != CG_OK) {
        fprintf(stderr, "cannot load %s: %s\n", MODEL, err.msg);
        return 1;
    }
    test_sha256();
    test_stems();
    test_round_trip(model);
    test_floors_non_finite(model);
    test_broken_sets(model);
    test_writer_refusals(model);
    cg_model_free(model);
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", root);
    if (system(cmd) != 0)
        fprintf(stderr, "could not remove %s\n", root);
    return test_done("test_golden");
}
