/* Parity-metric tests: every metric of cg_compare_tensors and
 * cg_metrics_merge against values numpy computes independently on fixed
 * data (tools/metrics_ref.py; within 1e-9 relative), plus hand-written
 * checks of the NaN and infinity rules and of merging that run even where
 * numpy is missing. */
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "convgate/compare.h"
#include "convgate/tensor_io.h"
#include "convgate/tensor.h"
#include "testlib.h"

static cg_tensor vec_f32(float *data, int64_t n)
{
    cg_tensor t;
    memset(&t, 0, sizeof t);
    t.dtype = CG_DTYPE_FLOAT;
    t.rank = 1;
    t.dims[0] = n;
    t.numel = n;
    t.data = data;
    return t;
}

static bool close_to(double got, double want)
{
    if (isinf(want) || isinf(got))
        return got == want;
    if (isnan(want) || isnan(got))
        return isnan(want) && isnan(got); /* worst_ref/worst_got may be NaN */
    double diff = fabs(got - want);
    return diff <= 1e-9 * fabs(want) || diff <= 1e-12;
}

/* --- hand-written rules --------------------------------------------------------- */

static void test_nan_rules(void)
{
    float r[4] = {NAN, 1.0f, INFINITY, -INFINITY};
    float g[4] = {NAN, NAN, INFINITY, INFINITY};
    cg_tensor tr = vec_f32(r, 4), tg = vec_f32(g, 4);
    cg_tolerance tol = {1e-5, 1e-4, false, NULL};
    cg_metrics m;
    cg_error err;
    cg_error_clear(&err);
    EXPECT(cg_compare_tensors(&tr, &tg, &tol, &m, &err) == CG_OK, "%s", err.msg);
    /* NaN/NaN fails without nan_equal, 1/NaN fails, inf/inf ok, -inf/inf fails */
    EXPECT(m.mismatches == 3, "%llu", (unsigned long long)m.mismatches);
    EXPECT(!m.pass, "pass");
    EXPECT(m.nan_ref == 1 && m.nan_got == 2 && m.inf_ref == 2 && m.inf_got == 2, "counts");
    EXPECT(isinf(m.max_abs) && m.worst_index == 0, "worst %lld", (long long)m.worst_index);
    EXPECT(m.finite_count == 0 && m.cosine == 1.0 && m.mean_abs == 0.0, "empty finite stats");
    tol.nan_equal = true;
    EXPECT(cg_compare_tensors(&tr, &tg, &tol, &m, &err) == CG_OK, "%s", err.msg);
    EXPECT(m.mismatches == 2 && m.worst_index == 1, "nan_equal %llu",
           (unsigned long long)m.mismatches);
    /* a NaN never passes against a number, whatever the tolerance */
    tol.atol = INFINITY;
    tol.rtol = INFINITY;
    float r1[1] = {0.5f}, g1[1] = {NAN};
    cg_tensor a = vec_f32(r1, 1), b = vec_f32(g1, 1);
    EXPECT(cg_compare_tensors(&a, &b, &tol, &m, &err) == CG_OK && !m.pass, "NaN passed");
    EXPECT(cg_compare_tensors(&b, &a, &tol, &m, &err) == CG_OK && !m.pass, "NaN ref passed");
}

static void test_merge_equals_whole(void)
{
    float r[100], g[100];
    for (int i = 0; i < 100; i++) {
        r[i] = 1000.0f + (float)(i % 7) * 0.25f - (float)i * 0.01f;
        g[i] = r[i] + (float)((i * 13) % 5 - 2) * 1e-3f;
    }
    cg_tolerance tol = {1e-3, 0, false, NULL};
    cg_metrics whole, part, merged;
    cg_error err;
    cg_error_clear(&err);
    cg_tensor tr = vec_f32(r, 100), tg = vec_f32(g, 100);
    EXPECT(cg_compare_tensors(&tr, &tg, &tol, &whole, &err) == CG_OK, "%s", err.msg);
    cg_metrics_init(&merged);
    for (int s = 0; s < 4; s++) {
        cg_tensor pr = vec_f32(r + 25 * s, 25), pg = vec_f32(g + 25 * s, 25);
        EXPECT(cg_compare_tensors(&pr, &pg, &tol, &part, &err) == CG_OK, "%s", err.msg);
        part.worst_sample = s;
        cg_metrics_merge(&merged, &part);
    }
    EXPECT(merged.count == 100 && merged.mismatches == whole.mismatches, "counts");
    EXPECT(close_to(merged.pearson, whole.pearson), "%.17g vs %.17g", merged.pearson,
           whole.pearson);
    EXPECT(close_to(merged.cosine, whole.cosine) && close_to(merged.rmse, whole.rmse) &&
               close_to(merged.nmse, whole.nmse) && close_to(merged.mean_abs, whole.mean_abs),
           "moments");
    EXPECT(merged.max_abs == whole.max_abs && merged.max_ulp == whole.max_ulp, "maxima");
    EXPECT(merged.worst_sample * 25 + merged.worst_index == whole.worst_index, "worst %lld/%lld",
           (long long)merged.worst_sample, (long long)merged.worst_index);
    EXPECT(merged.bit_identical == false && merged.pass == whole.pass, "flags");
}

static void test_misc(void)
{
    cg_error err;
    cg_metrics m;
    cg_tolerance t;
    cg_tolerance_default(&t, false);
    EXPECT(t.atol == 1e-5 && t.rtol == 1e-4, "fp32 defaults");
    cg_tolerance_default(&t, true);
    EXPECT(t.atol == 2.5e-3 && t.rtol == 1e-3, "fp16 defaults");
    EXPECT(cg_hist_bin_low(0) == 0 && cg_hist_bin_low(1) == 1e-10 &&
               cg_hist_bin_low(CG_HIST_BINS - 1) == 1.0, "bin edges");
    /* strings compare exactly, over their whole length: "a\0b" != "a\0c" */
    cg_string strs[2] = {{"a\0b", 3}, {"a\0c", 3}};
    cg_tensor s, s2;
    memset(&s, 0, sizeof s);
    s.dtype = CG_DTYPE_STRING;
    s.rank = 1;
    s.dims[0] = 1;
    s.numel = 1;
    s.data = &strs[0];
    s2 = s;
    s2.data = &strs[1];
    cg_error_clear(&err);
    EXPECT(cg_compare_tensors(&s, &s, NULL, &m, &err) == CG_OK && m.pass, "same strings: %s",
           err.msg);
    EXPECT(cg_compare_tensors(&s, &s2, NULL, &m, &err) == CG_OK && !m.pass &&
               m.mismatches == 1, "strings differing after a NUL passed");
    float v[2] = {1, 2};
    cg_tensor a = vec_f32(v, 2), b = vec_f32(v, 2);
    b.rank = 2;
    b.dims[0] = 1;
    b.dims[1] = 2;
    cg_error_clear(&err);
    EXPECT(cg_compare_tensors(&a, &b, NULL, &m, &err) == CG_OK && m.shape_mismatch && !m.pass,
           "shape mismatch");
    EXPECT(cg_compare_tensors(&a, &a, NULL, &m, &err) == CG_OK && m.bit_identical && m.pass,
           "identical");
}

/* --- against numpy ------------------------------------------------------------------- */

static double json_num(const json_t *v)
{
    if (json_is_string(v)) {
        const char *s = json_string_value(v);
        return strcmp(s, "nan") == 0 ? NAN : strcmp(s, "inf") == 0 ? INFINITY : -INFINITY;
    }
    return json_number_value(v);
}

/* Checks every key numpy computed against m; `what` names the case. */
static void check_expect(const char *what, const json_t *expect, const cg_metrics *m)
{
    const char *key;
    json_t *v;
    int checked = 0;
    json_object_foreach((json_t *)expect, key, v) {
        checked++;
#define NUM(field)                                                                             \
    if (strcmp(key, #field) == 0) {                                                            \
        EXPECT(close_to((double)m->field, json_num(v)), "%s %s: C %.17g numpy %.17g", what,   \
               key, (double)m->field, json_num(v));                                            \
        continue;                                                                              \
    }
#define FLAG(field)                                                                            \
    if (strcmp(key, #field) == 0) {                                                            \
        EXPECT(m->field == json_is_true(v), "%s %s: C %d numpy %d", what, key, (int)m->field,  \
               (int)json_is_true(v));                                                          \
        continue;                                                                              \
    }
        NUM(count) NUM(mismatches) NUM(finite_count) NUM(max_abs) NUM(mean_abs) NUM(max_rel)
        NUM(rmse) NUM(nmse) NUM(cosine) NUM(pearson) NUM(max_ulp) NUM(nan_ref) NUM(nan_got)
        NUM(inf_ref) NUM(inf_got) NUM(worst_index) NUM(worst_ref) NUM(worst_got)
        NUM(worst_sample)
        FLAG(pass) FLAG(bit_identical) FLAG(shape_mismatch) FLAG(dtype_mismatch)
#undef NUM
#undef FLAG
        if (strcmp(key, "hist") == 0) {
            EXPECT(json_array_size(v) == CG_HIST_BINS, "%s hist size", what);
            for (size_t b = 0; b < json_array_size(v) && b < CG_HIST_BINS; b++)
                EXPECT(m->hist[b] == (uint64_t)json_integer_value(json_array_get(v, b)),
                       "%s hist[%zu]: C %llu numpy %lld", what, b,
                       (unsigned long long)m->hist[b],
                       (long long)json_integer_value(json_array_get(v, b)));
            continue;
        }
        EXPECT(0, "%s: numpy key '%s' not checked", what, key);
    }
    EXPECT(checked >= 4, "%s: only %d keys", what, checked);
}

typedef struct np_case {
    const char *name;
    cg_tensor ref, got;
    cg_tolerance tol;
} np_case;

static int test_against_numpy(void)
{
    char dir[] = "/tmp/cg_test_compare_XXXXXX";
    char cmd[512];
    np_case cases[64];
    size_t case_count = 0;
    int ran = 0;
    if (!mkdtemp(dir)) {
        EXPECT(0, "mkdtemp failed");
        return 0;
    }
    snprintf(cmd, sizeof cmd, "/usr/bin/python3 %s/tools/metrics_ref.py %s 2>/dev/null",
             CG_SOURCE_DIR, dir);
    FILE *p = popen(cmd, "r");
    json_error_t jerr;
    json_t *doc = p ? json_loadf(p, 0, &jerr) : NULL;
    if (p && !doc)
        fprintf(stderr, "metrics_ref.py output: %s (line %d)\n", jerr.text, jerr.line);
    int rc = p ? pclose(p) : -1;
    if (!doc || rc != 0) {
        test_skip("numpy reference unavailable (rc %d): the numpy checks", rc);
        json_decref(doc);
        return 0;
    }
    json_t *arr = json_object_get(doc, "cases"), *c;
    size_t i;
    json_array_foreach(arr, i, c) {
        cg_error err;
        cg_error_clear(&err);
        if (case_count == sizeof cases / sizeof cases[0])
            break;
        np_case *k = &cases[case_count];
        k->name = json_string_value(json_object_get(c, "name"));
        k->tol.atol = json_number_value(json_object_get(c, "atol"));
        k->tol.rtol = json_number_value(json_object_get(c, "rtol"));
        k->tol.nan_equal = json_is_true(json_object_get(c, "nan_equal"));
        k->tol.justification = NULL;
        if (cg_npy_load(json_string_value(json_object_get(c, "ref")), 0, &k->ref, &err) !=
                CG_OK ||
            cg_npy_load(json_string_value(json_object_get(c, "got")), 0, &k->got, &err) !=
                CG_OK) {
            EXPECT(0, "%s: %s", k->name, err.msg);
            continue;
        }
        case_count++;
        cg_metrics m;
        EXPECT(cg_compare_tensors(&k->ref, &k->got, &k->tol, &m, &err) == CG_OK, "%s: %s",
               k->name, err.msg);
        check_expect(k->name, json_object_get(c, "expect"), &m);
        ran++;
    }
    json_array_foreach(json_object_get(doc, "merges"), i, c) {
        cg_metrics merged, part;
        json_t *parts = json_object_get(c, "parts"), *pn;
        size_t s;
        const cg_tolerance *tol = NULL;
        const char *name = json_string_value(json_object_get(c, "name"));
        cg_metrics_init(&merged);
        json_array_foreach(parts, s, pn) {
            const np_case *k = NULL;
            for (size_t j = 0; j < case_count; j++)
                if (strcmp(cases[j].name, json_string_value(pn)) == 0)
                    k = &cases[j];
            EXPECT(k != NULL, "%s: part %s missing", name, json_string_value(pn));
            if (!k)
                break;
            if (!tol)
                tol = &k->tol; /* numpy compares every part with the first's tolerance */
            cg_error err;
            cg_error_clear(&err);
            EXPECT(cg_compare_tensors(&k->ref, &k->got, tol, &part, &err) == CG_OK, "%s",
                   err.msg);
            part.worst_sample = (int64_t)s;
            cg_metrics_merge(&merged, &part);
        }
        check_expect(name, json_object_get(c, "expect"), &merged);
        ran++;
    }
    for (size_t j = 0; j < case_count; j++) {
        cg_tensor_release(&cases[j].ref);
        cg_tensor_release(&cases[j].got);
    }
    json_decref(doc);
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    if (system(cmd) != 0)
        fprintf(stderr, "could not remove %s\n", dir);
    EXPECT(ran >= 15, "only %d numpy cases ran", ran);
    return ran;
}

/* cg_tensor_get_f64_block gives cg_tensor_get_f64's values for every
 * dtype path (float, double, the per-element rest), over block edges and
 * partial tails; and cg_compare_tensors, which reads blocks of 512, finds
 * a mismatch, the worst element and the non-finite ones on both sides of
 * a block edge and in the tail. */
#define BLK_N 1300
static void test_block_reads(void)
{
    static float f[BLK_N], g[BLK_N];
    static double d[BLK_N], out[BLK_N];
    static uint16_t h[BLK_N];
    static int32_t i32[BLK_N];
    for (int i = 0; i < BLK_N; i++) {
        f[i] = (float)((i * 37) % 101) / 7.0f - 5.0f;
        d[i] = (double)f[i] / 3.0;
        h[i] = (uint16_t)(0x3c00 + (i * 7) % 900);
        i32[i] = i * 13 - 4000;
    }
    cg_tensor ts[4];
    memset(ts, 0, sizeof ts);
    const cg_dtype dts[4] = {CG_DTYPE_FLOAT, CG_DTYPE_DOUBLE, CG_DTYPE_FLOAT16, CG_DTYPE_INT32};
    void *datas[4] = {f, d, h, i32};
    for (int k = 0; k < 4; k++) {
        ts[k].dtype = dts[k];
        ts[k].rank = 1;
        ts[k].dims[0] = BLK_N;
        ts[k].numel = BLK_N;
        ts[k].data = datas[k];
        const int64_t spans[4][2] = {{0, BLK_N}, {511, 2}, {1024, BLK_N - 1024}, {700, 0}};
        for (int sp = 0; sp < 4; sp++) {
            int64_t at = spans[sp][0], n = spans[sp][1];
            cg_tensor_get_f64_block(&ts[k], at, n, out);
            int bad = 0;
            for (int64_t i = 0; i < n; i++)
                bad += out[i] != cg_tensor_get_f64(&ts[k], at + i);
            EXPECT(bad == 0, "%s block [%lld, +%lld): %d values differ from get_f64",
                   cg_dtype_name(dts[k]), (long long)at, (long long)n, bad);
        }
    }
    memcpy(g, f, sizeof g);
    g[511] = NAN;           /* last of the first block */
    g[512] += 0.25f;        /* first of the second */
    g[1100] += 2.0f;        /* the worst, in the tail block */
    cg_tensor a = vec_f32(f, BLK_N), b = vec_f32(g, BLK_N);
    cg_tolerance tol = {1e-3, 0.0, true, NULL};
    cg_metrics m;
    cg_error err;
    cg_error_clear(&err);
    EXPECT(cg_compare_tensors(&a, &b, &tol, &m, &err) == CG_OK, "%s", err.msg);
    EXPECT(m.count == BLK_N && m.mismatches == 3 && m.nan_got == 1 && m.nan_ref == 0 &&
               m.worst_index == 511 && isinf(m.max_abs) && m.finite_count == BLK_N - 1,
           "block edges: count %llu mismatches %llu nan %llu worst %lld max %g",
           (unsigned long long)m.count, (unsigned long long)m.mismatches,
           (unsigned long long)m.nan_got, (long long)m.worst_index, m.max_abs);
    g[511] = f[511];
    EXPECT(cg_compare_tensors(&a, &b, &tol, &m, &err) == CG_OK, "%s", err.msg);
    EXPECT(m.mismatches == 2 && m.worst_index == 1100 && close_to(m.max_abs, 2.0),
           "tail: mismatches %llu worst %lld max %g", (unsigned long long)m.mismatches,
           (long long)m.worst_index, m.max_abs);
}

int main(void)
{
    test_nan_rules();
    test_merge_equals_whole();
    test_misc();
    test_block_reads();
    int ran = test_against_numpy();
    if (ran)
        printf("test_compare: %d cases checked against numpy\n", ran);
    return test_done("test_compare");
}
