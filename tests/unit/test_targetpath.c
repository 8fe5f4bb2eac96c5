/*
 * The target path and its fp16 emulation (convgate/targetpath.h).
 *
 * On the crafted cases of tools/make_fp16_cases.py (tests/data/fp16): the
 * reference is finite and sane; under litert-gpu with fp16 accumulation
 * (CG_ACCUMULATE_FP16: a GPU computing in f16) each diverges for its reason:
 * the RMSNorm rows whose sum of squares passes 65504 come out exactly zero
 * (the mean of squares is +inf, checked on the runtime with every node
 * emulated), the LayerNorm loses most of its digits, the global mean is
 * inf; with force_fp32 each is bit-identical to the reference, and with
 * fp32 accumulation (CG_ACCUMULATE_FP32, and litert-gpu's profile: measured on
 * the real delegate, tools/measure_litert_fp16.py) the global mean and the
 * RMSNorm match to fp16 storage precision. Also: the casts sit at
 * the partition boundary (a CPU value entering the partition is rounded
 * there, the CPU side keeps fp32), the observer sees only values leaving a
 * partition, MatMul/Gemm accumulate in fp16, a model fully on XNNPACK
 * matches the reference, the assignment/precision accessors, and a model
 * that fails on random inputs is typed and placed on the user's (feeds).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "convgate/model.h"
#include "convgate/runtime.h"
#include "convgate/target.h"
#include "convgate/targetpath.h"
#include "convgate/tensor_io.h"
#include "convgate/tensor.h"
#include "testlib.h"

#define DATA CG_SOURCE_DIR "/tests/data/fp16/"

static cg_target_registry *reg;
static const cg_target *gpu, *xnn;

static float r16(float x)
{
    return cg_fp16_to_f32(cg_f32_to_fp16(x));
}

/* Outputs of one run, either on the reference or on a target path. */
typedef struct run_result {
    cg_named_value *outs;
    size_t count;
} run_result;

static void result_free(run_result *r)
{
    cg_runtime_free_outputs(r->outs, r->count);
    r->outs = NULL;
    r->count = 0;
}

static const float *result_f32(const run_result *r, const char *name, int64_t *numel)
{
    for (size_t i = 0; i < r->count; i++)
        if (!strcmp(r->outs[i].name, name) && r->outs[i].value->kind == CG_VALUE_TENSOR &&
            r->outs[i].value->tensor.dtype == CG_DTYPE_FLOAT) {
            *numel = r->outs[i].value->tensor.numel;
            return r->outs[i].value->tensor.data;
        }
    *numel = 0;
    return NULL;
}

static bool run_reference(const cg_model *m, const uint8_t *node_prec, cg_value *x,
                          run_result *r)
{
    cg_error err;
    cg_error_clear(&err);
    cg_runtime_options ro;
    cg_runtime_options_default(&ro);
    ro.node_precision = node_prec;
    cg_runtime *rt = NULL;
    cg_named_value in = {"x", x};
    memset(r, 0, sizeof *r);
    bool ok = cg_runtime_init(m, &ro, &rt, &err) == CG_OK &&
              cg_runtime_run(rt, &in, 1, &r->outs, &r->count, &err) == CG_OK;
    EXPECT(ok, "reference run: %s", err.msg);
    cg_runtime_free(rt);
    return ok;
}

/* Names the observer was shown. */
typedef struct seen_names {
    char names[16][64];
    size_t count;
} seen_names;

static cg_status remember(void *user, const cg_node *node, const char *name,
                          const cg_value *value)
{
    (void)node;
    (void)value;
    seen_names *s = user;
    if (s->count < 16)
        snprintf(s->names[s->count++], sizeof s->names[0], "%s", name);
    return CG_OK;
}

static bool seen(const seen_names *s, const char *name)
{
    for (size_t i = 0; i < s->count; i++)
        if (!strcmp(s->names[i], name))
            return true;
    return false;
}

typedef struct path_flags {
    cg_accumulate accumulate;
    bool force_fp32;
    seen_names *observe;
} path_flags;

static bool run_path(const cg_model *m, const cg_target *t, path_flags f, cg_value *x,
                     run_result *r, cg_target_path **keep)
{
    cg_error err;
    cg_error_clear(&err);
    cg_target_path_options po;
    memset(&po, 0, sizeof po);
    po.targets = &t;
    po.target_count = 1;
    po.accumulate = f.accumulate;
    po.force_fp32 = f.force_fp32;
    if (f.observe) {
        po.observe = remember;
        po.observe_user = f.observe;
    }
    cg_target_path *p = NULL;
    cg_named_value in = {"x", x};
    memset(r, 0, sizeof *r);
    bool ok = cg_target_path_init(m, &po, &p, &err) == CG_OK &&
              cg_target_path_run(p, &in, 1, &r->outs, &r->count, &err) == CG_OK;
    EXPECT(ok, "target path on %s: %s", t->name, err.msg);
    if (keep && ok)
        *keep = p;
    else
        cg_target_path_free(p);
    return ok;
}

/* max |a-b| / max(max |ref|, tiny), NaN/inf in b counting as infinite error. */
static double rel_error(const float *ref, const float *b, int64_t n)
{
    double scale = 1e-30, worst = 0.0;
    for (int64_t i = 0; i < n; i++)
        scale = fmax(scale, fabs((double)ref[i]));
    for (int64_t i = 0; i < n; i++) {
        double d = fabs((double)ref[i] - (double)b[i]);
        if (!isfinite(b[i]) || isnan(d))
            return INFINITY;
        worst = fmax(worst, d);
    }
    return worst / scale;
}

static bool all_finite(const float *v, int64_t n)
{
    for (int64_t i = 0; i < n; i++)
        if (!isfinite(v[i]))
            return false;
    return true;
}

/* --- (a) RMSNorm: sum of squares overflows ------------------------------------- */

static void test_rmsnorm(const char *model_path, const char *inputs_dir)
{
    cg_model *m = test_load_model(model_path);
    char path[512];
    snprintf(path, sizeof path, "%s/sample_0/x.npy", inputs_dir);
    cg_value *x = test_load_npy(path);
    if (!m || !x)
        goto done;
    run_result ref, tp, f32, acc;
    if (!run_reference(m, NULL, x, &ref))
        goto done;
    int64_t n, n2;
    const float *yr = result_f32(&ref, "y", &n);
    EXPECT(yr && n == 4 * 64 && all_finite(yr, n), "reference y");
    /* rows 2-3 are the large ones: fine in fp32 */
    double big = 0;
    for (int64_t i = 128; yr && i < n; i++)
        big = fmax(big, fabs(yr[i]));
    EXPECT(big > 0.5, "reference rows 2-3 are normalized values, max %g", big);

    seen_names obs = {.count = 0};
    path_flags acc16 = {CG_ACCUMULATE_FP16, false, &obs};
    if (run_path(m, gpu, acc16, x, &tp, NULL)) {
        const float *yt = result_f32(&tp, "y", &n2);
        EXPECT(yt && n2 == n, "target y");
        size_t zero = 0;
        for (int64_t i = 128; yt && i < n2; i++)
            zero += yt[i] == 0.0f;
        EXPECT(zero == 128, "litert-gpu: rows 2-3 must be exactly zero, %zu of 128 are", zero);
        printf("rmsnorm: litert-gpu rows 2-3: %zu of 128 exactly zero (reference max %g)\n",
               zero, big);
        EXPECT(yt && rel_error(yr, yt, 128) < 2e-3, "litert-gpu: rows 0-1 stay close, err %g",
              yt ? rel_error(yr, yt, 128) : -1.0);
        /* the partition's inside is not observable; its output is */
        EXPECT(obs.count == 1 && seen(&obs, "y") && !seen(&obs, "mean_sq"),
              "observer saw %zu values (first '%s')", obs.count,
              obs.count ? obs.names[0] : "");
        result_free(&tp);
    }

    path_flags force = {CG_ACCUMULATE_PROFILE, true, NULL};
    if (run_path(m, gpu, force, x, &f32, NULL)) {
        const float *yf = result_f32(&f32, "y", &n2);
        EXPECT(yf && n2 == n && memcmp(yf, yr, (size_t)n * sizeof *yf) == 0,
              "force_fp32 must equal the reference bit for bit");
        result_free(&f32);
    }
    path_flags wide = {CG_ACCUMULATE_FP32, false, NULL};
    if (run_path(m, gpu, wide, x, &acc, NULL)) {
        const float *ya = result_f32(&acc, "y", &n2);
        EXPECT(ya && rel_error(yr, ya, n) < 2e-3, "accumulate fp32: err %g",
              ya ? rel_error(yr, ya, n) : -1.0);
        result_free(&acc);
    }
    /* litert-gpu's profile accumulates in fp32, as the real delegate does */
    path_flags profile = {CG_ACCUMULATE_PROFILE, false, NULL};
    if (run_path(m, gpu, profile, x, &acc, NULL)) {
        const float *ya = result_f32(&acc, "y", &n2);
        EXPECT(ya && rel_error(yr, ya, n) < 2e-3, "litert-gpu as profiled: err %g",
              ya ? rel_error(yr, ya, n) : -1.0);
        result_free(&acc);
    }

    /* Without an assignment the runtime's observer sees inside: every node. */
    uint8_t prec[6];
    EXPECT(m->graph->node_count == 6, "rmsnorm has %zu nodes", m->graph->node_count);
    memset(prec, CG_NODE_PREC_FP16_ACC16, sizeof prec);
    if (m->graph->node_count == 6) {
        cg_error err;
        cg_error_clear(&err);
        cg_runtime_options ro;
        cg_runtime_options_default(&ro);
        ro.node_precision = prec;
        seen_names all = {.count = 0};
        ro.observe = remember;
        ro.observe_user = &all;
        cg_runtime *rt = NULL;
        cg_named_value in = {"x", x};
        run_result r = {NULL, 0};
        bool ok = cg_runtime_init(m, &ro, &rt, &err) == CG_OK &&
                  cg_runtime_run(rt, &in, 1, &r.outs, &r.count, &err) == CG_OK;
        EXPECT(ok, "emulated runtime: %s", err.msg);
        EXPECT(all.count == 6 && seen(&all, "mean_sq"), "runtime observer sees every node");
        result_free(&r);
        cg_runtime_free(rt);
    }
    result_free(&ref);
done:
    cg_value_free(x);
    cg_model_free(m);
}

/* The reason for (a): with every node emulated on the runtime directly, the
 * mean of squares of rows 2-3 is +inf under fp16 accumulation and finite
 * with an fp32 accumulator (or none). Observer that copies mean_sq. */
typedef struct mean_grab {
    float v[4];
    bool got;
} mean_grab;

static cg_status grab_mean(void *user, const cg_node *node, const char *name,
                           const cg_value *value)
{
    (void)node;
    mean_grab *g = user;
    if (!strcmp(name, "mean_sq") && value->kind == CG_VALUE_TENSOR &&
        value->tensor.dtype == CG_DTYPE_FLOAT && value->tensor.numel == 4) {
        memcpy(g->v, value->tensor.data, sizeof g->v);
        g->got = true;
    }
    return CG_OK;
}

static void test_rmsnorm_reason(void)
{
    cg_model *m = test_load_model(DATA "rmsnorm_overflow.onnx");
    cg_value *x = test_load_npy(DATA "rmsnorm_overflow_inputs/sample_0/x.npy");
    if (!m || !x || m->graph->node_count != 6)
        goto done;
    for (int mode = 0; mode < 3; mode++) {
        uint8_t prec[6];
        memset(prec, mode == 0 ? CG_NODE_PREC_FP32
                     : mode == 1 ? CG_NODE_PREC_FP16 : CG_NODE_PREC_FP16_ACC16, sizeof prec);
        cg_error err;
        cg_error_clear(&err);
        cg_runtime_options ro;
        cg_runtime_options_default(&ro);
        ro.node_precision = prec;
        mean_grab g = {{0}, false};
        ro.observe = grab_mean;
        ro.observe_user = &g;
        cg_runtime *rt = NULL;
        cg_named_value in = {"x", x};
        run_result r = {NULL, 0};
        bool ok = cg_runtime_init(m, &ro, &rt, &err) == CG_OK &&
                  cg_runtime_run(rt, &in, 1, &r.outs, &r.count, &err) == CG_OK;
        EXPECT(ok && g.got, "mode %d: %s", mode, err.msg);
        if (ok && g.got) {
            EXPECT(isfinite(g.v[0]) && isfinite(g.v[1]) && g.v[0] < 2 && g.v[1] < 2,
                  "mode %d: small rows' mean of squares %g %g", mode, g.v[0], g.v[1]);
            if (mode == 2)
                EXPECT(isinf(g.v[2]) && g.v[2] > 0 && isinf(g.v[3]) && g.v[3] > 0,
                      "fp16 accumulation: mean of squares of rows 2-3 must be +inf, got %g %g",
                      g.v[2], g.v[3]);
            else
                EXPECT(g.v[2] > 4000 && g.v[2] < 16000 && g.v[3] > 4000 && g.v[3] < 16000,
                      "mode %d: mean of squares of rows 2-3 finite, got %g %g", mode, g.v[2],
                      g.v[3]);
        }
        result_free(&r);
        cg_runtime_free(rt);
    }
done:
    cg_value_free(x);
    cg_model_free(m);
}

/* --- (b) LayerNorm: variance loses precision ---------------------------------- */

static void test_layernorm(void)
{
    cg_model *m = test_load_model(DATA "layernorm_precision.onnx");
    cg_value *x = test_load_npy(DATA "layernorm_precision_inputs/sample_0/x.npy");
    run_result ref, tp, f32;
    int64_t n, n2;
    if (!m || !x || !run_reference(m, NULL, x, &ref))
        goto done;
    const float *yr = result_f32(&ref, "y", &n);
    EXPECT(yr && n == 8 * 64 && all_finite(yr, n), "reference y");
    path_flags acc16 = {CG_ACCUMULATE_FP16, false, NULL}, force = {CG_ACCUMULATE_PROFILE, true, NULL};
    if (run_path(m, gpu, acc16, x, &tp, NULL)) {
        const float *yt = result_f32(&tp, "y", &n2);
        double e = yt ? rel_error(yr, yt, n) : -1.0;
        /* normalized values are O(1): an error of a good fraction of the range */
        EXPECT(yt && e > 0.1, "litert-gpu LayerNorm should lose precision, rel err %g", e);
        printf("layernorm: litert-gpu max error %.3g of the output range\n", e);
        result_free(&tp);
    }
    if (run_path(m, gpu, force, x, &f32, NULL)) {
        const float *yf = result_f32(&f32, "y", &n2);
        EXPECT(yf && n2 == n && memcmp(yf, yr, (size_t)n * sizeof *yf) == 0,
              "force_fp32 must equal the reference bit for bit");
        result_free(&f32);
    }
    result_free(&ref);
done:
    cg_value_free(x);
    cg_model_free(m);
}

/* --- (c) a large global mean ---------------------------------------------------- */

static void test_global_mean(void)
{
    cg_model *m = test_load_model(DATA "global_mean.onnx");
    cg_value *x = test_load_npy(DATA "global_mean_inputs/sample_0/x.npy");
    run_result ref, tp, acc, f32;
    int64_t n, n2;
    if (!m || !x || !run_reference(m, NULL, x, &ref))
        goto done;
    const float *yr = result_f32(&ref, "y", &n);
    EXPECT(yr && n == 1 && yr[0] > 45 && yr[0] < 55, "reference y = mean/2 ~ 50, got %g",
          yr ? yr[0] : -1.0);
    path_flags acc16 = {CG_ACCUMULATE_FP16, false, NULL}, wide = {CG_ACCUMULATE_FP32, false, NULL},
               force = {CG_ACCUMULATE_PROFILE, true, NULL}, profile = {CG_ACCUMULATE_PROFILE, false, NULL};
    if (run_path(m, gpu, acc16, x, &tp, NULL)) {
        const float *yt = result_f32(&tp, "y", &n2);
        EXPECT(yt && isinf(yt[0]) && yt[0] > 0, "fp16 accumulation of 3072 values ~100 must "
              "overflow to +inf, got %g", yt ? yt[0] : -1.0);
        printf("global mean: reference %.6g, litert-gpu %g\n", yr[0], yt ? yt[0] : NAN);
        result_free(&tp);
    }
    if (run_path(m, gpu, wide, x, &acc, NULL)) {
        const float *ya = result_f32(&acc, "y", &n2);
        printf("global mean: litert-gpu with fp32 accumulation %.6g\n", ya ? ya[0] : NAN);
        EXPECT(ya && fabs(ya[0] - yr[0]) <= 1e-3 * fabs(yr[0]),
              "accumulate fp32 matches to fp16 storage precision: %g vs %g", ya ? ya[0] : -1.0,
              yr[0]);
        result_free(&acc);
    }
    if (run_path(m, gpu, profile, x, &acc, NULL)) {
        const float *ya = result_f32(&acc, "y", &n2);
        EXPECT(ya && fabs(ya[0] - yr[0]) <= 1e-3 * fabs(yr[0]),
              "litert-gpu as profiled (fp32 accumulation): %g vs %g", ya ? ya[0] : -1.0, yr[0]);
        result_free(&acc);
    }
    if (run_path(m, gpu, force, x, &f32, NULL)) {
        const float *yf = result_f32(&f32, "y", &n2);
        EXPECT(yf && yf[0] == yr[0], "force_fp32 equals the reference");
        result_free(&f32);
    }
    result_free(&ref);
done:
    cg_value_free(x);
    cg_model_free(m);
}

/* --- boundary casts -------------------------------------------------------------- */

static void test_boundary(void)
{
    cg_model *m = test_load_model(DATA "boundary.onnx");
    cg_value *x = NULL;
    cg_tensor t;
    cg_error err;
    cg_error_clear(&err);
    int64_t dims[2] = {1, 64};
    memset(&t, 0, sizeof t);
    if (!m || cg_tensor_alloc(&t, CG_DTYPE_FLOAT, 2, dims, 1 << 20, &err) != CG_OK ||
        cg_value_from_tensor(&t, &x, &err) != CG_OK) {
        EXPECT(0, "boundary setup: %s", err.msg);
        goto done;
    }
    float *xd = x->tensor.data;
    for (int i = 0; i < 64; i++)
        xd[i] = 0.01f + 0.0371f * (float)i - 1.1f; /* not fp16-exact */
    run_result ref, tp;
    int64_t n;
    if (!run_reference(m, NULL, x, &ref))
        goto done;
    seen_names obs = {.count = 0};
    path_flags dflt = {CG_ACCUMULATE_PROFILE, false, &obs};
    cg_target_path *p = NULL;
    if (run_path(m, gpu, dflt, x, &tp, &p)) {
        const float *ar = result_f32(&ref, "a", &n), *at = result_f32(&tp, "a", &n);
        const float *yt = result_f32(&tp, "y", &n);
        /* a is the CPU's: fp32, untouched by the partition that rounds its copy */
        EXPECT(ar && at && memcmp(ar, at, 64 * sizeof *at) == 0, "CPU output a stays fp32");
        size_t inexact = 0, bad = 0;
        for (int i = 0; ar && yt && i < 64; i++) {
            inexact += r16(ar[i]) != ar[i];
            /* a and x are rounded on entry; a*1 and the sum are stored as fp16 */
            bad += yt[i] != r16(r16(r16(ar[i]) * 1.0f) + r16(xd[i]));
        }
        EXPECT(inexact > 32, "the test needs a not fp16-exact (%zu inexact)", inexact);
        EXPECT(bad == 0, "%zu of 64 elements of y are not the fp16 computation", bad);
        EXPECT(obs.count == 2 && seen(&obs, "a") && seen(&obs, "y") && !seen(&obs, "a1"),
              "observer: CPU value and partition output only (%zu seen)", obs.count);
        /* accessors */
        const cg_assignment *a = cg_target_path_assignment(p);
        EXPECT(a && a->graph == m->graph && a->partition_count == 1 && a->owner[0] == -1 &&
              a->owner[1] == 0 && a->owner[2] == 0, "assignment: erf on CPU, the rest on gpu");
        EXPECT(cg_target_path_reduced_precision(p), "litert-gpu computes in reduced precision");
        EXPECT(cg_target_path_node_precision(p, 0) == CG_NODE_PREC_FP32 &&
              cg_target_path_node_precision(p, 1) == CG_NODE_PREC_FP16 &&
              cg_target_path_node_precision(p, 99) == CG_NODE_PREC_FP32,
              "per-node precision");
        EXPECT(cg_target_path_types(p) && cg_type_env_get(cg_target_path_types(p), "a1"),
              "type environment");
        EXPECT(cg_target_path_runtime(p) != NULL, "runtime accessor");
        result_free(&tp);
        cg_target_path_free(p);
    }
    /* with accumulate fp32 / force_fp32 the precision flags follow */
    cg_target_path_options po;
    memset(&po, 0, sizeof po);
    po.targets = &gpu;
    po.target_count = 1;
    po.accumulate = CG_ACCUMULATE_FP32;
    p = NULL;
    EXPECT(cg_target_path_init(m, &po, &p, &err) == CG_OK &&
              cg_target_path_node_precision(p, 1) == CG_NODE_PREC_FP16 &&
              cg_target_path_reduced_precision(p),
          "accumulate fp32 -> fp16 storage only: %s", err.msg);
    cg_target_path_free(p);
    po.accumulate = CG_ACCUMULATE_FP16;
    p = NULL;
    EXPECT(cg_target_path_init(m, &po, &p, &err) == CG_OK &&
              cg_target_path_node_precision(p, 1) == CG_NODE_PREC_FP16_ACC16,
          "accumulate fp16 -> fp16 accumulation over the profile's fp32: %s", err.msg);
    cg_target_path_free(p);
    po.accumulate = CG_ACCUMULATE_FP32;
    po.force_fp32 = true;
    p = NULL;
    EXPECT(cg_target_path_init(m, &po, &p, &err) == CG_OK &&
              cg_target_path_node_precision(p, 1) == CG_NODE_PREC_FP32 &&
              !cg_target_path_reduced_precision(p),
          "force_fp32 -> nothing reduced: %s", err.msg);
    cg_target_path_free(p);
    /* bad options are usage errors, not crashes */
    po.targets = NULL;
    po.target_count = 1;
    p = NULL;
    EXPECT(cg_target_path_init(m, &po, &p, &err) == CG_USAGE && !p, "NULL target array");
    EXPECT(cg_target_path_assignment(NULL) == NULL && !cg_target_path_reduced_precision(NULL),
          "NULL path accessors");
    result_free(&ref);
done:
    cg_value_free(x);
    cg_model_free(m);
}

/* --- MatMul / Gemm accumulation ----------------------------------------------------- */

static void test_dot(void)
{
    cg_model *m = test_load_model(DATA "dot_accumulate.onnx");
    cg_value *x = NULL;
    cg_tensor t;
    cg_error err;
    cg_error_clear(&err);
    int64_t dims[2] = {1, 160};
    memset(&t, 0, sizeof t);
    if (!m || m->graph->node_count != 2 ||
        cg_tensor_alloc(&t, CG_DTYPE_FLOAT, 2, dims, 1 << 20, &err) != CG_OK ||
        cg_value_from_tensor(&t, &x, &err) != CG_OK) {
        EXPECT(0, "dot setup: %s", err.msg);
        goto done;
    }
    for (int i = 0; i < 160; i++)
        ((float *)x->tensor.data)[i] = 32.0f;
    for (int mode = 0; mode < 3; mode++) {
        uint8_t prec[2];
        memset(prec, mode == 0 ? CG_NODE_PREC_FP32
                     : mode == 1 ? CG_NODE_PREC_FP16 : CG_NODE_PREC_FP16_ACC16, sizeof prec);
        run_result r;
        int64_t n1, n2;
        if (!run_reference(m, prec, x, &r))
            continue;
        const float *mm = result_f32(&r, "y_matmul", &n1), *gm = result_f32(&r, "y_gemm", &n2);
        EXPECT(mm && gm && n1 == 2 && n2 == 2, "dot outputs");
        if (mm && gm) {
            /* column 1: 160 * 16 = 2560 exactly in any precision */
            EXPECT(mm[1] == 2560.0f && gm[1] == 2562.0f, "mode %d: column 1 %g %g", mode, mm[1],
                  gm[1]);
            if (mode == 2)
                EXPECT(isinf(mm[0]) && isinf(gm[0]), "fp16 accumulation passes 65504: %g %g",
                      mm[0], gm[0]);
            else
                EXPECT(mm[0] == 0.0f && gm[0] == 1.0f, "mode %d: column 0 cancels: %g %g", mode,
                      mm[0], gm[0]);
        }
        result_free(&r);
    }
done:
    cg_value_free(x);
    cg_model_free(m);
}

/* --- a model fully on XNNPACK ---------------------------------------------------------- */

static void test_xnnpack_full(void)
{
    if (!xnn) {
        test_skip("xnnpack target not built: the XNNPACK parity check");
        EXPECT(!getenv("CG_REQUIRE_XNNPACK"), "CG_REQUIRE_XNNPACK is set but no xnnpack target");
        return;
    }
    cg_model *m = test_load_model(CG_SOURCE_DIR "/examples/tiny_cnn.onnx");
    cg_value *img = test_load_npy(CG_SOURCE_DIR "/examples/tiny_cnn_inputs/image_0.npy");
    cg_error err;
    cg_error_clear(&err);
    if (!m || !img || m->graph->input_count < 1)
        goto done;
    const char *in_name = m->graph->inputs[0].name;
    cg_named_value in = {in_name, img};
    cg_runtime *rt = NULL;
    cg_named_value *ro_out = NULL, *tp_out = NULL;
    size_t nr = 0, nt = 0;
    cg_target_path *p = NULL;
    cg_target_path_options po;
    memset(&po, 0, sizeof po);
    po.targets = &xnn;
    po.target_count = 1;
    bool ok = cg_runtime_init(m, NULL, &rt, &err) == CG_OK &&
              cg_runtime_run(rt, &in, 1, &ro_out, &nr, &err) == CG_OK &&
              cg_target_path_init(m, &po, &p, &err) == CG_OK &&
              cg_target_path_run(p, &in, 1, &tp_out, &nt, &err) == CG_OK;
    EXPECT(ok, "tiny_cnn on xnnpack: %s", err.msg);
    if (ok) {
        const cg_assignment *a = cg_target_path_assignment(p);
        size_t on = 0;
        for (size_t i = 0; i < a->graph->node_count; i++)
            on += a->owner[i] == 0;
        EXPECT(on == a->graph->node_count && a->partition_count == 1,
              "every node on xnnpack (%zu of %zu)", on, a->graph->node_count);
        EXPECT(!cg_target_path_reduced_precision(p), "xnnpack is fp32");
        EXPECT(cg_runtime_partition_count(cg_target_path_runtime(p)) == 1,
              "the partition ran on the delegate");
        EXPECT(nr == nt && nr >= 1, "output counts %zu vs %zu", nr, nt);
        /* a delegated node cannot be emulated as well: a usage error */
        uint8_t *prec = calloc(a->graph->node_count, 1);
        cg_runtime_options bad;
        cg_runtime_options_default(&bad);
        bad.assignment = a;
        bad.types = cg_target_path_types(p);
        bad.node_precision = prec;
        cg_runtime *rt2 = NULL;
        if (prec)
            prec[0] = CG_NODE_PREC_FP16_ACC16;
        EXPECT(prec && cg_runtime_init(m, &bad, &rt2, &err) == CG_USAGE && !rt2 &&
                  strstr(err.msg, "xnnpack"),
              "emulating a delegated node: %s", err.msg);
        cg_runtime_free(rt2);
        free(prec);
        for (size_t o = 0; o < nr && o < nt; o++) {
            const cg_tensor *a1 = &ro_out[o].value->tensor, *b1 = &tp_out[o].value->tensor;
            EXPECT(a1->numel == b1->numel && a1->dtype == CG_DTYPE_FLOAT, "output %zu shape", o);
            double scale = 1.0, worst = 0.0;
            for (int64_t i = 0; i < a1->numel; i++)
                scale = fmax(scale, fabs(((const float *)a1->data)[i]));
            for (int64_t i = 0; i < a1->numel && a1->numel == b1->numel; i++) {
                double d = fabs((double)((const float *)a1->data)[i] -
                                (double)((const float *)b1->data)[i]);
                worst = isnan(d) ? INFINITY : fmax(worst, d);
            }
            EXPECT(worst <= 1e-4 * scale, "output %zu: max diff %g (scale %g)", o, worst, scale);
        }
    }
    cg_runtime_free_outputs(ro_out, nr);
    cg_runtime_free_outputs(tp_out, nt);
    cg_target_path_free(p);
    cg_runtime_free(rt);
done:
    cg_value_free(img);
    cg_model_free(m);
}

/* --- typed and placed on the user's inputs ------------------------------------------ */

/* tests/data/gate2/topk_k.onnx: TopK's k is floor(max(x)) - 2, negative on
 * random inputs in [-1, 1) (the model fails there, as a detector does on
 * noise) and 4 on topk_k_inputs/good. litert-gpu places the TFLite ops of
 * its lowering, which is typed by a run of the source: on random inputs
 * the path cannot be built; fed the user's inputs it is, and it runs them
 * with the lowered graph's placement (2 of 7 nodes, as gate 2 places it). */
static void test_fed(void)
{
    cg_model *m = test_load_model(CG_SOURCE_DIR "/tests/data/gate2/topk_k.onnx");
    cg_value *x = test_load_npy(CG_SOURCE_DIR "/tests/data/gate2/topk_k_inputs/good/x.npy");
    cg_error err;
    cg_error_clear(&err);
    if (!m || !x)
        goto done;
    cg_named_value in = {"x", x};
    cg_target_path_options po;
    memset(&po, 0, sizeof po);
    po.targets = &gpu;
    po.target_count = 1;
    cg_target_path *p = NULL;
    EXPECT(cg_target_path_init(m, &po, &p, &err) != CG_OK && !p && strstr(err.msg, "k = -2"),
          "random inputs: the model fails on them, and the error says so: %s", err.msg);
    cg_target_path_free(p);
    p = NULL;
    cg_error_clear(&err);
    po.feeds = &in;
    po.feed_count = 1;
    EXPECT(cg_target_path_init(m, &po, &p, &err) == CG_OK && p, "fed: %s", err.msg);
    if (p) {
        const cg_assignment *a = cg_target_path_assignment(p);
        size_t on = 0;
        for (size_t i = 0; a && i < a->graph->node_count; i++)
            on += a->owner[i] == 0;
        EXPECT(a && a->graph->node_count == 7 && on == 2, "fed: %zu of 7 nodes on litert-gpu",
               on);
        cg_named_value *outs = NULL;
        size_t n = 0;
        EXPECT(cg_target_path_run(p, &in, 1, &outs, &n, &err) == CG_OK && n == 2,
               "fed: runs: %s", err.msg);
        cg_runtime_free_outputs(outs, n);
    }
    cg_target_path_free(p);
done:
    cg_value_free(x);
    cg_model_free(m);
}

/* --accumulate's words, as every command and the binding read them: the
 * two widths round-trip through their names, anything else is refused
 * with what was given and leaves the value alone. */
static void test_accumulate_words(void)
{
    cg_error err;
    cg_accumulate a = CG_ACCUMULATE_PROFILE;
    cg_error_clear(&err);
    EXPECT(cg_accumulate_parse("fp16", &a, &err) == CG_OK && a == CG_ACCUMULATE_FP16,
           "fp16: %s", err.msg);
    EXPECT(strcmp(cg_accumulate_name(a), "fp16") == 0, "name of fp16");
    EXPECT(cg_accumulate_parse("fp32", &a, &err) == CG_OK && a == CG_ACCUMULATE_FP32,
           "fp32: %s", err.msg);
    EXPECT(strcmp(cg_accumulate_name(a), "fp32") == 0, "name of fp32");
    EXPECT(strcmp(cg_accumulate_name(CG_ACCUMULATE_PROFILE), "profile") == 0, "name of profile");
    EXPECT(cg_accumulate_parse("FP16", &a, &err) == CG_USAGE && a == CG_ACCUMULATE_FP32 &&
               strstr(err.msg, "'FP16'") && strstr(err.msg, "fp16 or fp32"),
           "FP16 refused, naming it: %s", err.msg);
    cg_error_clear(&err);
    EXPECT(cg_accumulate_parse("profile", &a, &err) == CG_USAGE && a == CG_ACCUMULATE_FP32,
           "'profile' is the default, not a width: %s", err.msg);
    cg_error_clear(&err);
    EXPECT(cg_accumulate_parse(NULL, &a, &err) == CG_USAGE, "NULL refused");
}

int main(void)
{
    cg_error err;
    cg_error_clear(&err);
    if (cg_target_registry_load(CG_SOURCE_DIR "/profiles", &reg, &err) != CG_OK) {
        fprintf(stderr, "registry: %s\n", err.msg);
        return 1;
    }
    gpu = cg_target_registry_find(reg, "litert-gpu", &err);
    if (!gpu) {
        fprintf(stderr, "litert-gpu: %s\n", err.msg);
        cg_target_registry_free(reg);
        return 1;
    }
    EXPECT(gpu->kind == CG_TARGET_PROFILED && gpu->precision == CG_PRECISION_FP16 &&
              gpu->accumulate_fp32,
          "litert-gpu is a profiled fp16 target accumulating in fp32 (measured on the real "
          "delegate: tools/measure_litert_fp16.py)");
    cg_error_clear(&err);
    xnn = cg_target_registry_find(reg, "xnnpack", &err);

    test_rmsnorm(DATA "rmsnorm_overflow.onnx", DATA "rmsnorm_overflow_inputs");
    test_rmsnorm(CG_SOURCE_DIR "/examples/rmsnorm_fp16.onnx",
                 CG_SOURCE_DIR "/examples/rmsnorm_fp16_inputs");
    test_rmsnorm_reason();
    test_layernorm();
    test_global_mean();
    test_boundary();
    test_dot();
    test_xnnpack_full();
    test_fed();
    test_accumulate_words();

    cg_target_registry_free(reg);
    return test_done("test_targetpath");
}
