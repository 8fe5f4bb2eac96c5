/*
 * The samples module (convgate/samples.h), tolerance files and the JSON
 * encoder, on tests/data/io/cli_model.onnx (inputs x, y: float32[N,3],
 * i: int64[2], b: bool[3]; outputs Sum, sum, ../evil, .hidden, a/b, i_out,
 * b_out): one file-name rule, one random-input policy that gate 2 and
 * gate 3 share, the input-folder layouts with their strictness, the
 * tolerance typo rule, and JSON numbers and strings.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "convgate/compare.h"
#include "convgate/model.h"
#include "convgate/profile.h"
#include "convgate/samples.h"
#include "convgate/target.h"
#include "report/json.h"
#include "testlib.h"

#define MODEL CG_SOURCE_DIR "/tests/data/io/cli_model.onnx"

static char root[64];

static const cg_value *input_of(const cg_sample *s, const char *name)
{
    for (size_t i = 0; i < s->input_count; i++)
        if (strcmp(s->inputs[i].name, name) == 0)
            return s->inputs[i].value;
    return NULL;
}

static bool same_value(const cg_value *a, const cg_value *b)
{
    return a && b && a->kind == CG_VALUE_TENSOR && b->kind == CG_VALUE_TENSOR &&
           a->tensor.dtype == b->tensor.dtype && a->tensor.numel == b->tensor.numel &&
           memcmp(a->tensor.data, b->tensor.data, cg_tensor_bytes(&a->tensor)) == 0;
}

static void save_npy(const char *dir, const char *file, cg_dtype dt, int rank,
                     const int64_t *dims, double v)
{
    char path[512];
    cg_tensor t;
    cg_error err;
    cg_error_clear(&err);
    snprintf(path, sizeof path, "%s/%s", dir, file);
    EXPECT(cg_tensor_alloc(&t, dt, rank, dims, 0, &err) == CG_OK, "%s", err.msg);
    for (int64_t i = 0; i < t.numel; i++)
        cg_tensor_set_f64(&t, i, v);
    EXPECT(cg_npy_save(path, &t, &err) == CG_OK, "%s: %s", path, err.msg);
    cg_tensor_release(&t);
}

/* A folder with one file per input of the model, names stemmed plus suffix. */
static void write_inputs(const char *dir, const char *suffix, double v)
{
    char file[64];
    int64_t xd[2] = {2, 3}, id[1] = {2}, bd[1] = {3};
    mkdir(dir, 0777);
    snprintf(file, sizeof file, "x%s.npy", suffix);
    save_npy(dir, file, CG_DTYPE_FLOAT, 2, xd, v);
    snprintf(file, sizeof file, "y%s.npy", suffix);
    save_npy(dir, file, CG_DTYPE_FLOAT, 2, xd, v);
    snprintf(file, sizeof file, "i%s.npy", suffix);
    save_npy(dir, file, CG_DTYPE_INT64, 1, id, 1);
    snprintf(file, sizeof file, "b%s.npy", suffix);
    save_npy(dir, file, CG_DTYPE_BOOL, 1, bd, 1);
}

static void test_stems(const cg_model *m)
{
    const char *names[8];
    char **stems = NULL;
    cg_error err;
    cg_error_clear(&err);
    size_t n = m->graph->output_count;
    for (size_t k = 0; k < n; k++)
        names[k] = m->graph->outputs[k].name;
    EXPECT(cg_samples_stems(names, n, &stems, &err) == CG_OK, "%s", err.msg);
    const char *want[] = {"Sum", "sum_2", "_._evil", "_hidden", "a_b", "i_out", "b_out"};
    for (size_t k = 0; stems && k < n && k < 7; k++)
        EXPECT(strcmp(stems[k], want[k]) == 0, "output %zu: %s, want %s", k, stems[k], want[k]);
    cg_samples_stems_free(stems, n);
    const char *colon[3] = {"input:0", "input/0", "input_0"};
    EXPECT(cg_samples_stems(colon, 3, &stems, &err) == CG_OK, "%s", err.msg);
    EXPECT(stems && strcmp(stems[0], "input_0") == 0 && strcmp(stems[1], "input_0_2") == 0 &&
               strcmp(stems[2], "input_0_3") == 0,
           "colliding names get _2, _3 in order");
    cg_samples_stems_free(stems, 3);
}

static void test_random(const cg_model *m)
{
    cg_dim_binding n2 = {"N", 2};
    cg_random_inputs p = {3, NULL, 0};
    cg_sample_set a = {0}, b = {0};
    cg_error err;
    cg_error_clear(&err);
    EXPECT(cg_samples_random(m, 2, &p, &n2, 1, 0, &a, &err) == CG_OK, "%s", err.msg);
    EXPECT(cg_samples_random(m, 2, &p, &n2, 1, 0, &b, &err) == CG_OK, "%s", err.msg);
    if (a.count == 2 && b.count == 2) {
        EXPECT(strcmp(a.samples[1].label, "random-1") == 0, "%s", a.samples[1].label);
        EXPECT(same_value(input_of(&a.samples[1], "x"), input_of(&b.samples[1], "x")),
               "same seed, same values");
        EXPECT(!same_value(input_of(&a.samples[0], "x"), input_of(&a.samples[1], "x")),
               "samples differ");
        const cg_tensor *x = &input_of(&a.samples[0], "x")->tensor;
        const cg_tensor *i = &input_of(&a.samples[0], "i")->tensor;
        EXPECT(x->dims[0] == 2, "--dim N=2");
        for (int64_t k = 0; k < x->numel; k++)
            EXPECT(cg_tensor_get_f64(x, k) >= -1 && cg_tensor_get_f64(x, k) < 1, "float range");
        for (int64_t k = 0; k < i->numel; k++)
            EXPECT(cg_tensor_get_i64(i, k) == 0 || cg_tensor_get_i64(i, k) == 1,
                   "integers default to 0 or 1 (never a negative id): %lld",
                   (long long)cg_tensor_get_i64(i, k));
        /* an input's values do not depend on which others were fed */
        cg_sample s;
        cg_value *fed = NULL;
        EXPECT(cg_value_copy(input_of(&a.samples[0], "x"), &fed, &err) == CG_OK, "%s", err.msg);
        EXPECT(cg_sample_init(&s, m, "part", &err) == CG_OK &&
                   cg_sample_feed(&s, m, "x", fed, "test", &err) == CG_OK &&
                   cg_sample_fill_random(&s, m, &p, 0, NULL, 0, 0, &err) == CG_OK,
               "%s", err.msg);
        EXPECT(same_value(input_of(&s, "y"), input_of(&a.samples[0], "y")),
               "y is the same whether x is fed or not");
        cg_sample_clear(&s);
    }
    cg_sample_set_free(&a);
    cg_sample_set_free(&b);

    /* --range: per input, and for every input */
    cg_input_range r[2] = {{"i", 5, 7}, {NULL, -3, -2}};
    p.ranges = r;
    p.range_count = 2;
    EXPECT(cg_samples_random(m, 1, &p, &n2, 1, 0, &a, &err) == CG_OK, "%s", err.msg);
    if (a.count) {
        const cg_tensor *x = &input_of(&a.samples[0], "x")->tensor;
        const cg_tensor *i = &input_of(&a.samples[0], "i")->tensor;
        for (int64_t k = 0; k < x->numel; k++)
            EXPECT(cg_tensor_get_f64(x, k) >= -3 && cg_tensor_get_f64(x, k) < -2, "global range");
        for (int64_t k = 0; k < i->numel; k++)
            EXPECT(cg_tensor_get_i64(i, k) >= 5 && cg_tensor_get_i64(i, k) <= 7, "i's range");
    }
    cg_sample_set_free(&a);
    /* an integer range with no integer in it; a range for all spares the bool */
    r[0] = (cg_input_range){"i", 0.2, 0.8};
    cg_error_clear(&err);
    EXPECT(cg_samples_random(m, 1, &p, &n2, 1, 0, &a, &err) == CG_USAGE &&
               strstr(err.msg, "holds no integer"),
           "no integer in [0.2, 0.8]: %s", err.msg);
    cg_sample_set_free(&a);

    /* gate 2 (the type environment and profile feeds) and gate 3 (sample 0)
     * feed the same tensors */
    cg_type_env *env = NULL;
    cg_named_value *feeds = NULL;
    size_t nf = 0;
    p = (cg_random_inputs){17, NULL, 0};
    cg_error_clear(&err);
    EXPECT(cg_type_env_build_with(m, &n2, 1, &p, &env, &err) == CG_OK &&
               cg_profile_feeds_make(m, env, &p, &feeds, &nf, &err) == CG_OK &&
               cg_samples_random(m, 1, &p, &n2, 1, 0, &a, &err) == CG_OK,
           "%s", err.msg);
    for (size_t k = 0; a.count && k < nf; k++)
        EXPECT(same_value(feeds[k].value, input_of(&a.samples[0], feeds[k].name)),
               "input '%s': profile/placement and gate 3 differ", feeds[k].name);
    EXPECT(nf == 4, "%zu feeds", nf);
    cg_profile_feeds_free(feeds, nf);
    cg_type_env_free(env);
    cg_sample_set_free(&a);
}

static void test_options(const cg_model *m)
{
    cg_dim_binding bad = {"M", 2};
    cg_input_range r = {"q", 0, 1};
    cg_error err;
    cg_error_clear(&err);
    EXPECT(cg_samples_check_options(m, &bad, 1, NULL, 0, &err) == CG_USAGE &&
               strstr(err.msg, "--dim M") && strstr(err.msg, "symbolic dims are: N"),
           "%s", err.msg);
    cg_error_clear(&err);
    EXPECT(cg_samples_check_options(m, NULL, 0, &r, 1, &err) == CG_USAGE &&
               strstr(err.msg, "inputs are: x, y, i, b"),
           "%s", err.msg);
    cg_dim_binding good = {"N", 4};
    r.input = "i";
    EXPECT(cg_samples_check_options(m, &good, 1, &r, 1, &err) == CG_OK, "known names");
}

static void test_folders(const cg_model *m)
{
    char dir[256], sub[300], path[400];
    cg_sample_source *src = NULL;
    cg_sample s;
    cg_error err;
    cg_error_clear(&err);
    memset(&s, 0, sizeof s);

    /* flat: one sample named after the folder */
    snprintf(dir, sizeof dir, "%s/flat", root);
    write_inputs(dir, "", 2);
    EXPECT(cg_sample_source_open_dir(m, dir, 0, &src, &err) == CG_OK, "%s", err.msg);
    if (src) {
        EXPECT(cg_sample_source_layout(src) == CG_SAMPLES_FLAT &&
                   cg_sample_source_count(src) == 1 &&
                   strcmp(cg_sample_source_name(src, 0), "flat") == 0,
               "flat");
        EXPECT(cg_sample_source_load(src, 0, &s, &err) == CG_OK && s.input_count == 4, "%s",
               err.msg);
    }
    /* outputs written by the rule read back by the same rule, pairs exact */
    cg_named_value outs[7];
    cg_value *vals[7];
    char **paths = NULL;
    int64_t d23[2] = {2, 3};
    for (size_t k = 0; k < 7; k++) {
        outs[k].name = m->graph->outputs[k].name;
        outs[k].value = NULL;
        if (cg_value_alloc_tensor(k == 5 ? CG_DTYPE_INT64 : k == 6 ? CG_DTYPE_BOOL : CG_DTYPE_FLOAT,
                                  k >= 5 ? 1 : 2, k >= 5 ? (int64_t[]){k == 5 ? 2 : 3} : d23,
                                  &outs[k].value, &err) != CG_OK)
            test_fatal("cg_value_alloc_tensor: %s", err.msg);
        for (int64_t e = 0; outs[k].value && k < 5 && e < outs[k].value->tensor.numel; e++)
            cg_tensor_set_f64(&outs[k].value->tensor, e, (double)k);
    }
    snprintf(sub, sizeof sub, "%s/out/deep", root);
    EXPECT(cg_samples_write_outputs(m, sub, outs, 7, &paths, &err) == CG_OK, "%s", err.msg);
    EXPECT(paths && strstr(paths[1], "/sum_2.npy"), "sum -> sum_2.npy");
    cg_samples_stems_free(paths, 7);
    if (src) {
        EXPECT(cg_sample_source_read_outputs(src, sub, 0, vals, &err) == CG_OK, "%s", err.msg);
        for (size_t k = 0; k < 5 && vals[0]; k++)
            EXPECT(same_value(vals[k], outs[k].value), "output %zu pairs with its file", k);
        for (size_t k = 0; k < 7 && vals[0]; k++)
            cg_value_free(vals[k]);
    }
    for (size_t k = 0; k < 7; k++)
        cg_value_free(outs[k].value);
    cg_sample_clear(&s);
    cg_sample_source_free(src);
    src = NULL;

    /* numbered: NAME_N, sorted by N */
    snprintf(dir, sizeof dir, "%s/numbered", root);
    write_inputs(dir, "_10", 1);
    write_inputs(dir, "_2", 1);
    EXPECT(cg_sample_source_open_dir(m, dir, 0, &src, &err) == CG_OK, "%s", err.msg);
    EXPECT(src && cg_sample_source_layout(src) == CG_SAMPLES_NUMBERED &&
               cg_sample_source_count(src) == 2 &&
               strcmp(cg_sample_source_name(src, 0), "2") == 0,
           "numbered, in numeric order");
    cg_sample_source_free(src);
    src = NULL;

    /* sets: a stray tensor file is an error naming it, an output's is not */
    snprintf(dir, sizeof dir, "%s/sets", root);
    mkdir(dir, 0777);
    snprintf(sub, sizeof sub, "%s/a", dir);
    write_inputs(sub, "", 1);
    int64_t d1[1] = {1};
    save_npy(sub, "sum_2.npy", CG_DTYPE_FLOAT, 1, d1, 0);
    EXPECT(cg_sample_source_open_dir(m, dir, 0, &src, &err) == CG_OK, "%s", err.msg);
    if (src) {
        EXPECT(cg_sample_source_load(src, 0, &s, &err) == CG_OK, "an output's file: %s",
               err.msg);
        cg_sample_clear(&s);
        save_npy(sub, "xx.npy", CG_DTYPE_FLOAT, 1, d1, 0);
        cg_error_clear(&err);
        EXPECT(cg_sample_source_load(src, 0, &s, &err) == CG_USAGE && strstr(err.msg, "xx.npy"),
               "stray file: %s", err.msg);
        cg_sample_clear(&s);
        snprintf(path, sizeof path, "%s/xx.npy", sub);
        unlink(path);
        /* a dtype that does not fit is refused */
        save_npy(sub, "i.npy", CG_DTYPE_FLOAT, 1, (int64_t[]){2}, 0);
        cg_error_clear(&err);
        EXPECT(cg_sample_source_load(src, 0, &s, &err) == CG_USAGE &&
                   strstr(err.msg, "dtype mismatch"),
               "%s", err.msg);
        cg_sample_clear(&s);
    }
    cg_sample_source_free(src);
    src = NULL;

    /* sets as .npz: members keyed by the raw names; a member of no input or
     * output is an error; a set both a folder and an .npz is ambiguous */
    cg_tensor tx, ti, tb, tz;
    int64_t d2[1] = {2}, d3[1] = {3};
    if (cg_tensor_alloc(&tx, CG_DTYPE_FLOAT, 2, d23, 0, &err) != CG_OK)
        test_fatal("cg_tensor_alloc: %s", err.msg);
    if (cg_tensor_alloc(&ti, CG_DTYPE_INT64, 1, d2, 0, &err) != CG_OK)
        test_fatal("cg_tensor_alloc: %s", err.msg);
    if (cg_tensor_alloc(&tb, CG_DTYPE_BOOL, 1, d3, 0, &err) != CG_OK)
        test_fatal("cg_tensor_alloc: %s", err.msg);
    if (cg_tensor_alloc(&tz, CG_DTYPE_FLOAT, 1, d2, 0, &err) != CG_OK)
        test_fatal("cg_tensor_alloc: %s", err.msg);
    const char *keys[5] = {"x", "y", "i", "b", "../evil"};
    const cg_tensor *ts[5] = {&tx, &tx, &ti, &tb, &tz};
    snprintf(dir, sizeof dir, "%s/npz", root);
    mkdir(dir, 0777);
    snprintf(path, sizeof path, "%s/z.npz", dir);
    EXPECT(cg_npz_save(path, 5, keys, ts, false, &err) == CG_OK, "%s", err.msg);
    EXPECT(cg_sample_source_open_dir(m, dir, 0, &src, &err) == CG_OK, "%s", err.msg);
    if (src) {
        EXPECT(cg_sample_source_load(src, 0, &s, &err) == CG_OK && s.input_count == 4 &&
                   strcmp(s.label, "z") == 0,
               "npz set with an output member: %s", err.msg);
        cg_sample_clear(&s);
    }
    cg_sample_source_free(src);
    src = NULL;
    keys[4] = "q";
    EXPECT(cg_npz_save(path, 5, keys, ts, false, &err) == CG_OK, "%s", err.msg);
    EXPECT(cg_sample_source_open_dir(m, dir, 0, &src, &err) == CG_OK, "%s", err.msg);
    cg_error_clear(&err);
    EXPECT(src && cg_sample_source_load(src, 0, &s, &err) == CG_USAGE &&
               strstr(err.msg, "member 'q'"),
           "stray member: %s", err.msg);
    cg_sample_clear(&s);
    cg_sample_source_free(src);
    src = NULL;
    snprintf(sub, sizeof sub, "%s/z", dir);
    write_inputs(sub, "", 1);
    cg_error_clear(&err);
    EXPECT(cg_sample_source_open_dir(m, dir, 0, &src, &err) == CG_USAGE &&
               strstr(err.msg, "both a folder and an .npz"),
           "%s", err.msg);
    cg_sample_source_free(src);
    cg_tensor_release(&tx);
    cg_tensor_release(&ti);
    cg_tensor_release(&tb);
    cg_tensor_release(&tz);
}

static void test_tolerances(void)
{
    const char *outs[2] = {"logits", "boxes"};
    cg_output_tolerance t[2];
    cg_tolerance_args args = {0};
    char path[300];
    cg_error err;
    cg_error_clear(&err);
    /* --atol alone keeps the default rtol */
    args.have_atol = true;
    args.atol = 0.5;
    EXPECT(cg_tolerances_resolve(outs, 2, &args, false, t, &err) == CG_OK, "%s", err.msg);
    EXPECT(t[1].tol.atol == 0.5 && t[1].tol.rtol == 1e-4 &&
               strcmp(t[1].source, "--atol/--rtol") == 0,
           "atol alone");
    cg_tolerances_free(t, 2);
    /* a file: default over the base, then per output, justifications kept */
    snprintf(path, sizeof path, "%s/tol.json", root);
    FILE *f = fopen(path, "w");
    fputs("{\"default\": {\"rtol\": 0.01, \"justification\": \"d\"},"
          " \"outputs\": {\"boxes\": {\"atol\": 2, \"nan_equal\": true}}}", f);
    fclose(f);
    memset(&args, 0, sizeof args);
    args.file = path;
    EXPECT(cg_tolerances_resolve(outs, 2, &args, true, t, &err) == CG_OK, "%s", err.msg);
    EXPECT(t[0].tol.atol == 2.5e-3 && t[0].tol.rtol == 0.01 &&
               strcmp(t[0].tol.justification, "d") == 0 &&
               strcmp(t[0].source, "--tol default") == 0,
           "default over the reduced-precision base");
    EXPECT(t[1].tol.atol == 2 && t[1].tol.rtol == 0.01 && t[1].tol.nan_equal &&
               strcmp(t[1].tol.justification, "d") == 0 && strcmp(t[1].source, "--tol") == 0,
           "per output over the default");
    cg_tolerances_free(t, 2);
    /* the typo rule: an output the model does not have is refused */
    f = fopen(path, "w");
    fputs("{\"outputs\": {\"logit\": {\"atol\": 1}}}", f);
    fclose(f);
    cg_error_clear(&err);
    EXPECT(cg_tolerances_resolve(outs, 2, &args, false, t, &err) == CG_USAGE &&
               strstr(err.msg, "no output 'logit'") && strstr(err.msg, "'logits', 'boxes'"),
           "%s", err.msg);
    f = fopen(path, "w");
    fputs("{\"outputs\": {\"logits\": {\"atol\": 1}, \"logits\": {\"atol\": 2}}}", f);
    fclose(f);
    cg_error_clear(&err);
    EXPECT(cg_tolerances_resolve(outs, 2, &args, false, t, &err) == CG_USAGE, "duplicate key");
    f = fopen(path, "w");
    fputs("{\"outputs\": {\"logits\": {\"atool\": 1}}}", f);
    fclose(f);
    cg_error_clear(&err);
    EXPECT(cg_tolerances_resolve(outs, 2, &args, false, t, &err) == CG_USAGE &&
               strstr(err.msg, "atool"),
           "%s", err.msg);
    args.have_atol = true;
    cg_error_clear(&err);
    EXPECT(cg_tolerances_resolve(outs, 2, &args, false, t, &err) == CG_USAGE, "--tol and --atol");
}

static void test_json(void)
{
    json_t *o = json_object();
    EXPECT(cg_json_set(o, "a", cg_json_number(INFINITY)) == 0 &&
               cg_json_set(o, "b", cg_json_number(-INFINITY)) == 0 &&
               cg_json_set(o, "c", cg_json_number(NAN)) == 0 &&
               cg_json_set(o, "d", cg_json_number(0.05)) == 0,
           "non-finite numbers are set, never dropped");
    EXPECT(cg_json_set(o, "o\xff", cg_json_text("n\xc3\xa9 \xe9t\xc3")) == 0, "non-UTF-8");
    EXPECT(cg_json_set(o, "e", NULL) == -1, "a NULL value is an error");
    char *text = cg_json_dumps(o);
    EXPECT(text && strstr(text, "\"a\": \"inf\"") && strstr(text, "\"b\": \"-inf\"") &&
               strstr(text, "\"c\": \"nan\"") && strstr(text, "\"d\": 0.05"),
           "%s", text ? text : "(null)");
    EXPECT(text && strstr(text, "\"o\\\\xFF\": \"n\xc3\xa9 \\\\xE9t\\\\xC3\""),
           "bytes outside UTF-8 as \\xNN: %s", text ? text : "(null)");
    free(text);
    json_decref(o);
    json_t *env = cg_json_envelope("gate", 1, NULL, NULL, json_object());
    text = env ? cg_json_dumps(env) : NULL;
    EXPECT(text && strstr(text, "\"command\": \"gate\"") && strstr(text, "\"status\": \"fail\"") &&
               strstr(text, "\"exit_code\": 1") && strstr(text, "\"errors\": []") &&
               strstr(text, "\"result\": {}"),
           "%s", text ? text : "(null)");
    free(text);
    json_decref(env);
}

/* cg_tensor_convert: the one element-type conversion (input casts, the
 * fp64 reference's promotion, a layout's dtype): floats through double
 * with float16's rounding, integers through int64, strings refused. */
static void test_convert(void)
{
    cg_tensor d, h, back, i64, i8, s;
    cg_error err;
    cg_error_clear(&err);
    int64_t dims[2] = {2, 2};
    EXPECT(cg_tensor_alloc(&d, CG_DTYPE_DOUBLE, 2, dims, 0, &err) == CG_OK, "alloc double");
    double v[4] = {1.5, -2.25, 1.0 + 1.0 / 4096, 65504.0};
    for (int k = 0; k < 4; k++)
        cg_tensor_set_f64(&d, k, v[k]);
    EXPECT(cg_tensor_convert(&d, CG_DTYPE_FLOAT16, &h, &err) == CG_OK, "to float16: %s",
           err.msg);
    EXPECT(h.dtype == CG_DTYPE_FLOAT16 && h.rank == 2 && h.dims[1] == 2 && h.numel == 4,
           "float16 keeps the shape");
    EXPECT(cg_tensor_convert(&h, CG_DTYPE_FLOAT, &back, &err) == CG_OK, "to float: %s", err.msg);
    EXPECT(cg_tensor_get_f64(&back, 0) == 1.5 && cg_tensor_get_f64(&back, 1) == -2.25,
           "exact values survive");
    EXPECT(cg_tensor_get_f64(&back, 2) == 1.0, "1 + 2^-12 rounds to even in float16, got %.9g",
           cg_tensor_get_f64(&back, 2));
    EXPECT(cg_tensor_get_f64(&back, 3) == 65504.0, "float16's largest finite value");
    int64_t one = 4;
    EXPECT(cg_tensor_alloc(&i64, CG_DTYPE_INT64, 1, &one, 0, &err) == CG_OK, "alloc int64");
    cg_tensor_set_i64(&i64, 0, INT64_MAX);
    cg_tensor_set_i64(&i64, 1, -3);
    cg_tensor_set_i64(&i64, 2, 300);
    cg_tensor_set_i64(&i64, 3, 0);
    EXPECT(cg_tensor_convert(&i64, CG_DTYPE_INT8, &i8, &err) == CG_OK, "to int8: %s", err.msg);
    EXPECT(cg_tensor_get_i64(&i8, 1) == -3 && cg_tensor_get_i64(&i8, 2) == 44 &&
               cg_tensor_get_i64(&i8, 0) == -1,
           "integers wrap as Cast does, through int64 (not through double): %lld %lld %lld",
           (long long)cg_tensor_get_i64(&i8, 0), (long long)cg_tensor_get_i64(&i8, 1),
           (long long)cg_tensor_get_i64(&i8, 2));
    EXPECT(cg_tensor_alloc(&s, CG_DTYPE_STRING, 1, &one, 0, &err) == CG_OK, "alloc string");
    cg_tensor none;
    cg_error_clear(&err);
    EXPECT(cg_tensor_convert(&s, CG_DTYPE_FLOAT, &none, &err) == CG_UNSUPPORTED &&
               none.data == NULL && strstr(err.msg, "string"),
           "a string tensor is refused: %s", err.msg);
    cg_tensor_release(&d);
    cg_tensor_release(&h);
    cg_tensor_release(&back);
    cg_tensor_release(&i64);
    cg_tensor_release(&i8);
    cg_tensor_release(&s);
}

/* A shape setting (assign --dims) on top of the --dim bindings, its label,
 * and how a loaded set is described (one rule for the CLI and the binding). */
static void test_settings(const cg_model *m)
{
    cg_dim_binding dims[2];
    size_t n = 0;
    char label[64], desc[128];
    cg_error err;
    cg_error_clear(&err);
    char sym[] = "N";
    cg_dim_binding four = {sym, 4}, seven = {sym, 7};
    EXPECT(cg_samples_dims_overlay(m, dims, &n, 2, &four, 1, &err) == CG_OK && n == 1 &&
               dims[0].value == 4,
           "N=4 appended: %s", err.msg);
    EXPECT(dims[0].symbol != sym && strcmp(dims[0].symbol, "N") == 0,
           "the binding names the model's own copy of the symbol");
    EXPECT(cg_samples_dims_overlay(m, dims, &n, 2, &seven, 1, &err) == CG_OK && n == 1 &&
               dims[0].value == 7,
           "a later value replaces the earlier one");
    cg_samples_dims_label(dims, n, label, sizeof label);
    EXPECT(strcmp(label, "N=7") == 0, "label '%s'", label);
    cg_samples_dims_label(dims, 0, label, sizeof label);
    EXPECT(strcmp(label, "(defaults)") == 0, "label '%s'", label);
    char key0[] = "x[0]", key1[] = "x[1]", unknown[] = "M";
    cg_dim_binding shape_keys[2] = {{key0, 2}, {key1, 3}}, bad = {unknown, 2};
    cg_error_clear(&err);
    EXPECT(cg_samples_dims_overlay(m, dims, &n, 2, shape_keys, 2, &err) == CG_USAGE &&
               strstr(err.msg, "x[0]") && n == 1 && dims[0].value == 7,
           "a --shape key (the whole shape, valid for --shape) is no named dim of a setting: "
           "%s", err.msg);
    cg_error_clear(&err);
    EXPECT(cg_samples_dims_overlay(m, dims, &n, 2, &bad, 1, &err) == CG_USAGE && n == 1,
           "an unknown symbol is refused: %s", err.msg);
    n = 0;
    cg_error_clear(&err);
    EXPECT(cg_samples_dims_overlay(m, dims, &n, 0, &four, 1, &err) == CG_LIMIT && n == 0,
           "no room: refused, nothing written past cap");

    cg_sample one[1], two[2];
    cg_sample_set set1 = {one, 1}, set2 = {two, 2};
    cg_random_inputs r = {0};
    r.seed = 5;
    cg_sample_set_describe(&set2, NULL, false, &r, desc, sizeof desc);
    EXPECT(strcmp(desc, "2 random sets, seed 5") == 0, "'%s'", desc);
    cg_sample_set_describe(&set1, "in", false, NULL, desc, sizeof desc);
    EXPECT(strcmp(desc, "1 set from in") == 0, "'%s'", desc);
    cg_sample_set_describe(&set2, "g", true, NULL, desc, sizeof desc);
    EXPECT(strcmp(desc, "2 golden sets from g (outputs compared to the golden outputs)") == 0,
           "'%s'", desc);
}

int main(void)
{
    cg_model *m = NULL;
    cg_error err;
    cg_error_clear(&err);
    snprintf(root, sizeof root, "/tmp/cg_test_samples_XXXXXX");
    if (!mkdtemp(root) || cg_model_load(MODEL, NULL, &m, &err) != CG_OK) {
        fprintf(stderr, "setup: %s\n", err.msg);
        return 1;
    }
    test_stems(m);
    test_random(m);
    test_options(m);
    test_folders(m);
    test_tolerances();
    test_json();
    test_convert();
    test_settings(m);
    cg_model_free(m);
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", root);
    if (system(cmd) != 0)
        fprintf(stderr, "could not remove %s\n", root);
    return test_done("test_samples");
}
