/* Elementwise kernel tests for what the ONNX backend data does not cover:
 * error paths (integer division by zero, MIN / -1, bad strings, shapes that
 * do not broadcast) with the node named in the message; edge semantics
 * (shift >= width, Python-style Mod, NaN in Max/Min, Clip with min > max,
 * integer Pow, legacy opset-6 broadcast, Cast's string forms and single
 * rounding of double -> float16); and 0-d, empty and strided broadcasts.
 * Each case builds a one-node model in memory and runs it on the runtime. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "convgate/model.h"
#include "convgate/runtime.h"
#include "run/kernel.h"
#include "testlib.h"

/* One input of a test node: data is borrowed. */
typedef struct test_input {
    cg_dtype dtype;
    int rank;
    int64_t dims[4];
    const void *data;
} test_input;

typedef struct test_run {
    cg_status status;
    cg_error err;
    cg_named_value *outs;
    size_t out_count;
} test_run;

/* Runs op (opset `opset`) on the inputs as a one-node model (testlib.h). */
static void run_op(test_run *r, const char *op, int64_t opset, cg_attr *attrs, size_t nattr,
                   const test_input *in, size_t nin)
{
    test_case c;
    memset(&c, 0, sizeof c);
    memset(r, 0, sizeof *r);
    c.op = op;
    c.opset = opset;
    c.nin = nin;
    c.nout = 1;
    for (size_t i = 0; i < nin; i++) {
        c.in[i] = test_tensor(in[i].dtype, in[i].rank, in[i].dims, NULL);
        if (in[i].dtype == CG_DTYPE_STRING) {
            for (int64_t e = 0; e < c.in[i]->numel; e++) {
                const char *str = ((const char *const *)in[i].data)[e];
                if (cg_tensor_set_string(c.in[i], e, str, strlen(str)) != CG_OK)
                    test_fatal("out of memory");
            }
        } else if (cg_tensor_bytes(c.in[i])) {
            memcpy(c.in[i]->data, in[i].data, cg_tensor_bytes(c.in[i]));
        }
    }
    for (size_t a = 0; a < nattr; a++)
        c.attrs[a] = attrs[a];
    c.nattr = nattr;
    r->status = test_case_run(&c, &r->outs, &r->out_count, &r->err);
    test_case_free(&c);
}

static void run_done(test_run *r)
{
    if (r->outs)
        cg_runtime_free_outputs(r->outs, r->out_count);
    r->outs = NULL;
}

static const cg_tensor *out0(const test_run *r)
{
    if (r->status != CG_OK || r->out_count < 1 || r->outs[0].value->kind != CG_VALUE_TENSOR)
        return NULL;
    return &r->outs[0].value->tensor;
}

/* Expects success and the output's dtype and shape; returns the tensor. */
static const cg_tensor *expect_ok(test_run *r, const char *what, cg_dtype dtype, int rank,
                                  const int64_t *dims)
{
    const cg_tensor *t = out0(r);
    EXPECT(t != NULL, "%s: %s: %s", what, cg_status_name(r->status), r->err.msg);
    if (!t)
        return NULL;
    bool shape_ok = t->rank == rank && t->dtype == dtype;
    for (int i = 0; shape_ok && i < rank; i++)
        shape_ok = t->dims[i] == dims[i];
    EXPECT(shape_ok, "%s: dtype %s rank %d", what, cg_dtype_name(t->dtype), t->rank);
    return shape_ok ? t : NULL;
}

static void expect_fail(test_run *r, const char *what, cg_status status, const char *needle)
{
    EXPECT(r->status == status, "%s: got %s (%s)", what, cg_status_name(r->status), r->err.msg);
    EXPECT(strstr(r->err.msg, TEST_NODE_NAME) != NULL, "%s: message does not name the node: %s", what,
           r->err.msg);
    EXPECT(strstr(r->err.msg, needle) != NULL, "%s: message lacks '%s': %s", what, needle,
           r->err.msg);
}

/* Ops newer than the schema table (Gelu-20, Mish-18, Bitwise*-18) are
 * refused before their kernel runs; say so instead of failing. */
static bool schema_missing(const test_run *r, const char *op)
{
    if (r->status == CG_UNSUPPORTED && strstr(r->err.msg, "unknown op")) {
        printf("note: %s not in the schema table, kernel not exercised\n", op);
        return true;
    }
    return false;
}

static void test_integer_errors(void)
{
    test_run r;
    const int32_t a[3] = {7, -7, 1}, zero[3] = {1, 2, 0};
    test_input in[2] = {{CG_DTYPE_INT32, 1, {3}, a}, {CG_DTYPE_INT32, 1, {3}, zero}};
    run_op(&r, "Div", 14, NULL, 0, in, 2);
    expect_fail(&r, "Div by zero", CG_RUNTIME, "division by zero");
    run_done(&r);

    const int64_t mn[1] = {INT64_MIN}, m1[1] = {-1};
    test_input ov[2] = {{CG_DTYPE_INT64, 1, {1}, mn}, {CG_DTYPE_INT64, 1, {1}, m1}};
    run_op(&r, "Div", 14, NULL, 0, ov, 2);
    expect_fail(&r, "INT64_MIN / -1", CG_RUNTIME, "overflow");
    run_done(&r);

    /* ...but MIN % -1 is defined (0), unlike C */
    run_op(&r, "Mod", 13, NULL, 0, ov, 2);
    const int64_t one[1] = {1};
    const cg_tensor *t = expect_ok(&r, "INT64_MIN % -1", CG_DTYPE_INT64, 1, one);
    if (t)
        EXPECT(((const int64_t *)t->data)[0] == 0, "MIN %% -1 = %lld",
               (long long)((const int64_t *)t->data)[0]);
    run_done(&r);

    run_op(&r, "Mod", 13, NULL, 0, in, 2);
    expect_fail(&r, "Mod by zero", CG_RUNTIME, "division by zero");
    run_done(&r);

    const int64_t zb[1] = {0};
    test_input zp[2] = {{CG_DTYPE_INT64, 1, {1}, zb}, {CG_DTYPE_INT64, 1, {1}, m1}};
    run_op(&r, "Pow", 15, NULL, 0, zp, 2);
    expect_fail(&r, "0 ^ -1", CG_RUNTIME, "negative power");
    run_done(&r);
}

static void test_mod_semantics(void)
{
    test_run r;
    const int32_t x[4] = {-7, 7, -7, 7}, y[4] = {3, -3, -3, 3};
    const int32_t py[4] = {2, -2, -1, 1}, c[4] = {-1, 1, -1, 1};
    const int64_t dims[1] = {4};
    test_input in[2] = {{CG_DTYPE_INT32, 1, {4}, x}, {CG_DTYPE_INT32, 1, {4}, y}};
    cg_attr fmod1 = attr_int("fmod", 1);

    run_op(&r, "Mod", 13, NULL, 0, in, 2);
    const cg_tensor *t = expect_ok(&r, "Mod fmod=0", CG_DTYPE_INT32, 1, dims);
    for (int i = 0; t && i < 4; i++)
        EXPECT(((const int32_t *)t->data)[i] == py[i], "python mod [%d] = %d", i,
               ((const int32_t *)t->data)[i]);
    run_done(&r);
    run_op(&r, "Mod", 13, &fmod1, 1, in, 2);
    t = expect_ok(&r, "Mod fmod=1", CG_DTYPE_INT32, 1, dims);
    for (int i = 0; t && i < 4; i++)
        EXPECT(((const int32_t *)t->data)[i] == c[i], "fmod [%d] = %d", i,
               ((const int32_t *)t->data)[i]);
    run_done(&r);
}

static void test_bitshift(void)
{
    test_run r;
    const uint8_t x8[3] = {1, 0xff, 3}, s8[3] = {8, 7, 200};
    const uint8_t want8[3] = {0, 0x80, 0};
    const int64_t dims[1] = {3};
    test_input in[2] = {{CG_DTYPE_UINT8, 1, {3}, x8}, {CG_DTYPE_UINT8, 1, {3}, s8}};
    cg_attr left = attr_str("direction", "LEFT"), right = attr_str("direction", "RIGHT");

    run_op(&r, "BitShift", 11, &left, 1, in, 2);
    const cg_tensor *t = expect_ok(&r, "BitShift uint8", CG_DTYPE_UINT8, 1, dims);
    for (int i = 0; t && i < 3; i++)
        EXPECT(((const uint8_t *)t->data)[i] == want8[i], "uint8 << [%d] = %u", i,
               ((const uint8_t *)t->data)[i]);
    run_done(&r);

    const uint64_t x64[3] = {UINT64_MAX, 1, 5}, s64[3] = {64, 63, 1000};
    const uint64_t want64[3] = {0, 0, 0};
    test_input in64[2] = {{CG_DTYPE_UINT64, 1, {3}, x64}, {CG_DTYPE_UINT64, 1, {3}, s64}};
    run_op(&r, "BitShift", 11, &right, 1, in64, 2);
    t = expect_ok(&r, "BitShift uint64", CG_DTYPE_UINT64, 1, dims);
    for (int i = 0; t && i < 3; i++)
        EXPECT(((const uint64_t *)t->data)[i] == want64[i], "uint64 >> [%d]", i);
    run_done(&r);

    const int32_t ba[2] = {0x0f0f, -1}, bb[2] = {0x00ff, 0x1234};
    test_input bw[2] = {{CG_DTYPE_INT32, 1, {2}, ba}, {CG_DTYPE_INT32, 1, {2}, bb}};
    const int64_t d2[1] = {2};
    run_op(&r, "BitwiseAnd", 18, NULL, 0, bw, 2);
    if (!schema_missing(&r, "BitwiseAnd")) {
        t = expect_ok(&r, "BitwiseAnd", CG_DTYPE_INT32, 1, d2);
        if (t)
            EXPECT(((const int32_t *)t->data)[0] == 0x000f &&
                       ((const int32_t *)t->data)[1] == 0x1234,
                   "BitwiseAnd");
    }
    run_done(&r);
    run_op(&r, "BitwiseNot", 18, NULL, 0, bw, 1);
    if (!schema_missing(&r, "BitwiseNot")) {
        t = expect_ok(&r, "BitwiseNot", CG_DTYPE_INT32, 1, d2);
        if (t)
            EXPECT(((const int32_t *)t->data)[0] == ~0x0f0f && ((const int32_t *)t->data)[1] == 0,
                   "BitwiseNot");
    }
    run_done(&r);

    cg_attr bad = attr_str("direction", "UP");
    run_op(&r, "BitShift", 11, &bad, 1, in, 2);
    expect_fail(&r, "bad direction", CG_INVALID, "UP");
    run_done(&r);
}

static void test_max_min_nan(void)
{
    test_run r;
    const float a[3] = {NAN, 1.0f, 2.0f}, b[3] = {1.0f, NAN, 3.0f};
    const int64_t dims[1] = {3};
    test_input in[2] = {{CG_DTYPE_FLOAT, 1, {3}, a}, {CG_DTYPE_FLOAT, 1, {3}, b}};
    run_op(&r, "Max", 13, NULL, 0, in, 2);
    const cg_tensor *t = expect_ok(&r, "Max", CG_DTYPE_FLOAT, 1, dims);
    if (t) {
        const float *y = (const float *)t->data;
        EXPECT(isnan(y[0]) && isnan(y[1]) && y[2] == 3.0f, "Max: %g %g %g", y[0], y[1], y[2]);
    }
    run_done(&r);
    run_op(&r, "Min", 13, NULL, 0, in, 2);
    t = expect_ok(&r, "Min", CG_DTYPE_FLOAT, 1, dims);
    if (t) {
        const float *y = (const float *)t->data;
        EXPECT(isnan(y[0]) && isnan(y[1]) && y[2] == 2.0f, "Min: %g %g %g", y[0], y[1], y[2]);
    }
    run_done(&r);
}

static void test_broadcast_shapes(void)
{
    test_run r;
    /* [2,3,1] + [1,4] -> [2,3,4]: the inner dim of a is broadcast, b strided */
    float a[6], b[4];
    for (int i = 0; i < 6; i++)
        a[i] = (float)(i * 10);
    for (int i = 0; i < 4; i++)
        b[i] = (float)i;
    test_input in[2] = {{CG_DTYPE_FLOAT, 3, {2, 3, 1}, a}, {CG_DTYPE_FLOAT, 2, {1, 4}, b}};
    const int64_t dims[3] = {2, 3, 4};
    run_op(&r, "Add", 14, NULL, 0, in, 2);
    const cg_tensor *t = expect_ok(&r, "Add broadcast", CG_DTYPE_FLOAT, 3, dims);
    for (int i = 0; t && i < 24; i++)
        EXPECT(((const float *)t->data)[i] == (float)((i / 4) * 10 + i % 4), "[%d] = %g", i,
               ((const float *)t->data)[i]);
    run_done(&r);

    /* 0-d with 0-d stays 0-d */
    const float s1 = 2.0f, s2 = 5.0f;
    test_input sc[2] = {{CG_DTYPE_FLOAT, 0, {0}, &s1}, {CG_DTYPE_FLOAT, 0, {0}, &s2}};
    run_op(&r, "Mul", 14, NULL, 0, sc, 2);
    t = expect_ok(&r, "0-d Mul", CG_DTYPE_FLOAT, 0, NULL);
    if (t)
        EXPECT(((const float *)t->data)[0] == 10.0f, "0-d Mul = %g", ((const float *)t->data)[0]);
    run_done(&r);

    /* empty [0,3] + [3] -> [0,3] */
    const float row[3] = {1, 2, 3};
    test_input em[2] = {{CG_DTYPE_FLOAT, 2, {0, 3}, NULL}, {CG_DTYPE_FLOAT, 1, {3}, row}};
    const int64_t edims[2] = {0, 3};
    run_op(&r, "Sub", 14, NULL, 0, em, 2);
    t = expect_ok(&r, "empty Sub", CG_DTYPE_FLOAT, 2, edims);
    if (t)
        EXPECT(t->numel == 0, "empty numel %lld", (long long)t->numel);
    run_done(&r);

    /* 0-d Relu */
    const float neg = -3.0f;
    test_input rl[1] = {{CG_DTYPE_FLOAT, 0, {0}, &neg}};
    run_op(&r, "Relu", 14, NULL, 0, rl, 1);
    t = expect_ok(&r, "0-d Relu", CG_DTYPE_FLOAT, 0, NULL);
    if (t)
        EXPECT(((const float *)t->data)[0] == 0.0f, "Relu(-3) = %g", ((const float *)t->data)[0]);
    run_done(&r);

    /* [2,3] + [4] does not broadcast */
    const float six[6] = {0}, four[4] = {0};
    test_input bad[2] = {{CG_DTYPE_FLOAT, 2, {2, 3}, six}, {CG_DTYPE_FLOAT, 1, {4}, four}};
    run_op(&r, "Add", 14, NULL, 0, bad, 2);
    expect_fail(&r, "bad broadcast", CG_INVALID, "[2,3]");
    run_done(&r);

    /* mixed input types are rejected */
    const int32_t i3[3] = {1, 2, 3};
    test_input mix[2] = {{CG_DTYPE_FLOAT, 1, {3}, row}, {CG_DTYPE_INT32, 1, {3}, i3}};
    run_op(&r, "Add", 14, NULL, 0, mix, 2);
    expect_fail(&r, "mixed types", CG_INVALID, "int32");
    run_done(&r);
}

static void test_variadic(void)
{
    test_run r;
    const double a[2] = {1, 2}, b[1] = {10}, c[4] = {100, 200, 300, 400};
    test_input in[3] = {{CG_DTYPE_DOUBLE, 2, {2, 1}, a},
                        {CG_DTYPE_DOUBLE, 0, {0}, b},
                        {CG_DTYPE_DOUBLE, 2, {1, 4}, c}};
    const int64_t dims[2] = {2, 4};
    run_op(&r, "Sum", 13, NULL, 0, in, 3);
    const cg_tensor *t = expect_ok(&r, "Sum", CG_DTYPE_DOUBLE, 2, dims);
    for (int i = 0; t && i < 8; i++)
        EXPECT(((const double *)t->data)[i] == a[i / 4] + 10 + c[i % 4], "Sum [%d] = %g", i,
               ((const double *)t->data)[i]);
    run_done(&r);
    run_op(&r, "Mean", 13, NULL, 0, in, 3);
    t = expect_ok(&r, "Mean", CG_DTYPE_DOUBLE, 2, dims);
    for (int i = 0; t && i < 8; i++)
        EXPECT(fabs(((const double *)t->data)[i] - (a[i / 4] + 10 + c[i % 4]) / 3) < 1e-12,
               "Mean [%d] = %g", i, ((const double *)t->data)[i]);
    run_done(&r);
}

static void test_clip_pow_round(void)
{
    test_run r;
    const int8_t x[4] = {-128, -5, 5, 127}, lo = 10, hi = 3;
    const int64_t dims[1] = {4};
    test_input in[3] = {{CG_DTYPE_INT8, 1, {4}, x}, {CG_DTYPE_INT8, 0, {0}, &lo},
                        {CG_DTYPE_INT8, 0, {0}, &hi}};
    run_op(&r, "Clip", 13, NULL, 0, in, 3);
    const cg_tensor *t = expect_ok(&r, "Clip min>max", CG_DTYPE_INT8, 1, dims);
    for (int i = 0; t && i < 4; i++)
        EXPECT(((const int8_t *)t->data)[i] == 3, "Clip [%d] = %d", i, ((const int8_t *)t->data)[i]);
    run_done(&r);

    const int8_t pair[2] = {1, 2};
    test_input badb[2] = {{CG_DTYPE_INT8, 1, {4}, x}, {CG_DTYPE_INT8, 1, {2}, pair}};
    run_op(&r, "Clip", 13, NULL, 0, badb, 2);
    expect_fail(&r, "Clip vector min", CG_INVALID, "scalar");
    run_done(&r);

    const int64_t base[4] = {2, -2, 2, -1}, ex[4] = {62, 3, -1, -3};
    const int64_t want[4] = {(int64_t)1 << 62, -8, 0, -1};
    test_input pw[2] = {{CG_DTYPE_INT64, 1, {4}, base}, {CG_DTYPE_INT64, 1, {4}, ex}};
    run_op(&r, "Pow", 15, NULL, 0, pw, 2);
    t = expect_ok(&r, "int Pow", CG_DTYPE_INT64, 1, dims);
    for (int i = 0; t && i < 4; i++)
        EXPECT(((const int64_t *)t->data)[i] == want[i], "Pow [%d] = %lld", i,
               (long long)((const int64_t *)t->data)[i]);
    run_done(&r);

    const float h[4] = {0.5f, 1.5f, 2.5f, -2.5f}, hw[4] = {0.0f, 2.0f, 2.0f, -2.0f};
    test_input rd[1] = {{CG_DTYPE_FLOAT, 1, {4}, h}};
    run_op(&r, "Round", 11, NULL, 0, rd, 1);
    t = expect_ok(&r, "Round", CG_DTYPE_FLOAT, 1, dims);
    for (int i = 0; t && i < 4; i++)
        EXPECT(((const float *)t->data)[i] == hw[i], "Round [%d] = %g", i,
               ((const float *)t->data)[i]);
    run_done(&r);
}

/* Float32 Pow by a scalar 2 runs as x * x: the same bits as pow() in
 * double rounded to float, on values whose squares are exact, inexact,
 * subnormal, overflowing, signed zeros, infinities and NaN; as a scalar
 * and as a one-element tensor. Another exponent still goes through pow(). */
static void test_pow_square(void)
{
    enum { N = 16 };
    float x[N] = {0.0f, -0.0f, 1.0f, -3.0f, 0.1f, -1.7e-3f, 1e-30f, -1e-23f, 3.4e38f, -2e19f,
                  1.84e19f, (float)INFINITY, -(float)INFINITY, NAN, 1.0000001f, 12345.678f};
    const int64_t dims[1] = {N};
    const float two = 2.0f, twos[1] = {2.0f}, other = 2.5f;
    const struct {
        const char *what;
        test_input e;
        float ex;
    } cases[3] = {{"Pow x^2 (scalar)", {CG_DTYPE_FLOAT, 0, {0}, &two}, 2.0f},
                  {"Pow x^2 ([1])", {CG_DTYPE_FLOAT, 1, {1}, twos}, 2.0f},
                  {"Pow x^2.5", {CG_DTYPE_FLOAT, 0, {0}, &other}, 2.5f}};
    for (int c = 0; c < 3; c++) {
        test_run r;
        test_input in[2] = {{CG_DTYPE_FLOAT, 1, {N}, x}, cases[c].e};
        run_op(&r, "Pow", 15, NULL, 0, in, 2);
        const cg_tensor *t = expect_ok(&r, cases[c].what, CG_DTYPE_FLOAT, 1, dims);
        for (int i = 0; t && i < N; i++) {
            float got = ((const float *)t->data)[i];
            float want = (float)pow((double)x[i], (double)cases[c].ex);
            EXPECT(memcmp(&got, &want, sizeof got) == 0 || (isnan(got) && isnan(want)),
                   "%s [%d]: %a^%g = %a, pow gives %a", cases[c].what, i, (double)x[i],
                   (double)cases[c].ex, (double)got, (double)want);
        }
        run_done(&r);
    }
}

static void test_legacy_broadcast(void)
{
    test_run r;
    /* opset 6: B [2] aligned with A's dim 0 via axis=0 (numpy would align it
     * with the last dim and fail) */
    const float a[6] = {0, 0, 0, 0, 0, 0}, b[2] = {1, 2};
    test_input in[2] = {{CG_DTYPE_FLOAT, 2, {2, 3}, a}, {CG_DTYPE_FLOAT, 1, {2}, b}};
    cg_attr attrs[2] = {attr_int("broadcast", 1), attr_int("axis", 0)};
    const int64_t dims[2] = {2, 3};
    run_op(&r, "Add", 6, attrs, 2, in, 2);
    const cg_tensor *t = expect_ok(&r, "legacy Add", CG_DTYPE_FLOAT, 2, dims);
    for (int i = 0; t && i < 6; i++)
        EXPECT(((const float *)t->data)[i] == b[i / 3], "legacy [%d] = %g", i,
               ((const float *)t->data)[i]);
    run_done(&r);

    /* opset 6 PRelu: a [C] slope is per channel (axis 1) */
    const float x[4] = {-1, -1, -1, -1}, slope[2] = {0.5f, 0.25f};
    test_input pr[2] = {{CG_DTYPE_FLOAT, 3, {1, 2, 2}, x}, {CG_DTYPE_FLOAT, 1, {2}, slope}};
    const int64_t pdims[3] = {1, 2, 2};
    run_op(&r, "PRelu", 6, NULL, 0, pr, 2);
    t = expect_ok(&r, "legacy PRelu", CG_DTYPE_FLOAT, 3, pdims);
    for (int i = 0; t && i < 4; i++)
        EXPECT(((const float *)t->data)[i] == -slope[i / 2], "PRelu [%d] = %g", i,
               ((const float *)t->data)[i]);
    run_done(&r);

    /* opset 16 PRelu: slope must broadcast to X one way */
    const float big[4] = {1, 2, 3, 4};
    test_input pb[2] = {{CG_DTYPE_FLOAT, 1, {1}, slope}, {CG_DTYPE_FLOAT, 1, {4}, big}};
    run_op(&r, "PRelu", 16, NULL, 0, pb, 2);
    expect_fail(&r, "PRelu slope too big", CG_INVALID, "slope");
    run_done(&r);
}

static void test_where_strings(void)
{
    test_run r;
    const uint8_t cond[2] = {1, 0};
    const char *xs[2] = {"a", "b"};
    const char *ys[1] = {"z"};
    test_input in[3] = {{CG_DTYPE_BOOL, 2, {2, 1}, cond},
                        {CG_DTYPE_STRING, 1, {2}, xs},
                        {CG_DTYPE_STRING, 0, {0}, ys}};
    const int64_t dims[2] = {2, 2};
    const char *want[4] = {"a", "b", "z", "z"};
    run_op(&r, "Where", 16, NULL, 0, in, 3);
    const cg_tensor *t = expect_ok(&r, "Where strings", CG_DTYPE_STRING, 2, dims);
    for (int i = 0; t && i < 4; i++) {
        size_t len;
        const char *s = cg_tensor_string(t, i, &len);
        EXPECT(strcmp(s, want[i]) == 0, "Where [%d] = %s", i, s);
    }
    run_done(&r);

    const char *ea[2] = {"x", "y"}, *eb[2] = {"x", "z"};
    test_input eq[2] = {{CG_DTYPE_STRING, 1, {2}, ea}, {CG_DTYPE_STRING, 1, {2}, eb}};
    const int64_t d2[1] = {2};
    run_op(&r, "Equal", 19, NULL, 0, eq, 2);
    t = expect_ok(&r, "Equal strings", CG_DTYPE_BOOL, 1, d2);
    if (t)
        EXPECT(((const uint8_t *)t->data)[0] == 1 && ((const uint8_t *)t->data)[1] == 0,
               "Equal strings");
    run_done(&r);
}

static void test_cast(void)
{
    test_run r;
    const float v[8] = {0.1f, 1e-5f, 1e16f, 123456789.0f, -0.0f, NAN, -INFINITY, 1e-4f};
    const char *want[8] = {"0.1", "1e-05", "1e+16", "123456790.0", "-0.0", "nan", "-inf", "1e-04"};
    test_input in[1] = {{CG_DTYPE_FLOAT, 1, {8}, v}};
    cg_attr to_str = attr_int("to", CG_DTYPE_STRING);
    const int64_t d8[1] = {8};
    run_op(&r, "Cast", 13, &to_str, 1, in, 1);
    const cg_tensor *t = expect_ok(&r, "Cast to string", CG_DTYPE_STRING, 1, d8);
    for (int i = 0; t && i < 8; i++) {
        size_t len;
        const char *s = cg_tensor_string(t, i, &len);
        EXPECT(strcmp(s, want[i]) == 0, "float %g -> '%s', want '%s'", v[i], s, want[i]);
    }
    run_done(&r);

    const char *strs[5] = {"INF", "-inf", "NaN", " 1.5 ", "+INF"};
    test_input sin[1] = {{CG_DTYPE_STRING, 1, {5}, strs}};
    cg_attr to_f = attr_int("to", CG_DTYPE_FLOAT);
    const int64_t d5[1] = {5};
    run_op(&r, "Cast", 13, &to_f, 1, sin, 1);
    t = expect_ok(&r, "Cast from string", CG_DTYPE_FLOAT, 1, d5);
    if (t) {
        const float *y = (const float *)t->data;
        EXPECT(isinf(y[0]) && y[0] > 0 && isinf(y[1]) && y[1] < 0 && isnan(y[2]) &&
                   y[3] == 1.5f && isinf(y[4]) && y[4] > 0,
               "parsed %g %g %g %g %g", y[0], y[1], y[2], y[3], y[4]);
    }
    run_done(&r);

    const char *bad[2] = {"1", "one"};
    test_input bin[1] = {{CG_DTYPE_STRING, 1, {2}, bad}};
    run_op(&r, "Cast", 13, &to_f, 1, bin, 1);
    expect_fail(&r, "bad string", CG_RUNTIME, "\"one\"");
    run_done(&r);

    const char *big[1] = {"12345678901234567"};
    test_input iin[1] = {{CG_DTYPE_STRING, 1, {1}, big}};
    cg_attr to_i64 = attr_int("to", CG_DTYPE_INT64);
    const int64_t d1[1] = {1};
    run_op(&r, "Cast", 13, &to_i64, 1, iin, 1);
    t = expect_ok(&r, "Cast string to int64", CG_DTYPE_INT64, 1, d1);
    if (t)
        EXPECT(((const int64_t *)t->data)[0] == 12345678901234567LL, "exact int64 parse");
    run_done(&r);

    /* float -> int8: truncation, NaN -> 0, wrap of out-of-range (numpy) */
    const float fv[4] = {-1.9f, 300.0f, NAN, 2.9f};
    const int8_t iw[4] = {-1, 44, 0, 2};
    test_input fin[1] = {{CG_DTYPE_FLOAT, 1, {4}, fv}};
    cg_attr to_i8 = attr_int("to", CG_DTYPE_INT8);
    const int64_t d4[1] = {4};
    run_op(&r, "Cast", 13, &to_i8, 1, fin, 1);
    t = expect_ok(&r, "Cast float to int8", CG_DTYPE_INT8, 1, d4);
    for (int i = 0; t && i < 4; i++)
        EXPECT(((const int8_t *)t->data)[i] == iw[i], "int8 [%d] = %d", i,
               ((const int8_t *)t->data)[i]);
    run_done(&r);

    /* double -> float16 rounds once: 1 + 2^-11 + 2^-40 becomes the float
     * 1 + 2^-11 (a float16 tie); the double is above it, so round up */
    const double dv[1] = {1.0 + ldexp(1.0, -11) + ldexp(1.0, -40)};
    test_input din[1] = {{CG_DTYPE_DOUBLE, 1, {1}, dv}};
    cg_attr to_h = attr_int("to", CG_DTYPE_FLOAT16);
    run_op(&r, "Cast", 13, &to_h, 1, din, 1);
    t = expect_ok(&r, "Cast double to fp16", CG_DTYPE_FLOAT16, 1, d1);
    if (t)
        EXPECT(((const uint16_t *)t->data)[0] == 0x3C01, "fp16 bits 0x%04x",
               ((const uint16_t *)t->data)[0]);
    run_done(&r);

    cg_attr to_bad = attr_int("to", 99);
    run_op(&r, "Cast", 13, &to_bad, 1, fin, 1);
    expect_fail(&r, "bad 'to'", CG_INVALID, "99");
    run_done(&r);
}

static void test_half_and_activations(void)
{
    test_run r;
    /* float16 Add computes in float and rounds once */
    const uint16_t a[2] = {cg_f32_to_fp16(1.0f), cg_f32_to_fp16(65504.0f)};
    const uint16_t b[2] = {cg_f32_to_fp16(0.5f), cg_f32_to_fp16(65504.0f)};
    test_input in[2] = {{CG_DTYPE_FLOAT16, 1, {2}, a}, {CG_DTYPE_FLOAT16, 1, {2}, b}};
    const int64_t d2[1] = {2};
    run_op(&r, "Add", 14, NULL, 0, in, 2);
    const cg_tensor *t = expect_ok(&r, "fp16 Add", CG_DTYPE_FLOAT16, 1, d2);
    if (t) {
        const uint16_t *y = (const uint16_t *)t->data;
        EXPECT(cg_fp16_to_f32(y[0]) == 1.5f && isinf(cg_fp16_to_f32(y[1])), "fp16 %g %g",
               cg_fp16_to_f32(y[0]), cg_fp16_to_f32(y[1]));
    }
    run_done(&r);

    /* Sigmoid and Softplus stay finite and exact at the extremes */
    const float x[3] = {-1000.0f, 0.0f, 1000.0f};
    test_input sx[1] = {{CG_DTYPE_FLOAT, 1, {3}, x}};
    const int64_t d3[1] = {3};
    run_op(&r, "Sigmoid", 13, NULL, 0, sx, 1);
    t = expect_ok(&r, "Sigmoid", CG_DTYPE_FLOAT, 1, d3);
    if (t) {
        const float *y = (const float *)t->data;
        EXPECT(y[0] == 0.0f && y[1] == 0.5f && y[2] == 1.0f, "Sigmoid %g %g %g", y[0], y[1],
               y[2]);
    }
    run_done(&r);
    run_op(&r, "Softplus", 1, NULL, 0, sx, 1);
    t = expect_ok(&r, "Softplus", CG_DTYPE_FLOAT, 1, d3);
    if (t) {
        const float *y = (const float *)t->data;
        EXPECT(y[0] == 0.0f && fabsf(y[1] - 0.693147f) < 1e-5f && y[2] == 1000.0f,
               "Softplus %g %g %g", y[0], y[1], y[2]);
    }
    run_done(&r);

    const float g[2] = {1.0f, -1.0f};
    test_input gx[1] = {{CG_DTYPE_FLOAT, 1, {2}, g}};
    cg_attr tanh_attr = attr_str("approximate", "tanh");
    run_op(&r, "Gelu", 20, &tanh_attr, 1, gx, 1);
    if (!schema_missing(&r, "Gelu")) {
        t = expect_ok(&r, "Gelu tanh", CG_DTYPE_FLOAT, 1, d2);
        if (t) {
            const float *y = (const float *)t->data;
            EXPECT(fabsf(y[0] - 0.841192f) < 1e-5f && fabsf(y[1] + 0.158808f) < 1e-5f,
                   "Gelu %g %g", y[0], y[1]);
        }
    }
    run_done(&r);

    run_op(&r, "Mish", 18, NULL, 0, gx, 1);
    if (!schema_missing(&r, "Mish")) {
        t = expect_ok(&r, "Mish", CG_DTYPE_FLOAT, 1, d2);
        if (t) {
            const float *y = (const float *)t->data;
            EXPECT(fabsf(y[0] - 0.865098f) < 1e-5f && fabsf(y[1] + 0.303401f) < 1e-5f,
                   "Mish %g %g", y[0], y[1]);
        }
    }
    run_done(&r);

    const float inf[3] = {INFINITY, -INFINITY, 1.0f};
    test_input ix[1] = {{CG_DTYPE_FLOAT, 1, {3}, inf}};
    cg_attr no_neg = attr_int("detect_negative", 0);
    run_op(&r, "IsInf", 10, &no_neg, 1, ix, 1);
    t = expect_ok(&r, "IsInf", CG_DTYPE_BOOL, 1, d3);
    if (t) {
        const uint8_t *y = (const uint8_t *)t->data;
        EXPECT(y[0] == 1 && y[1] == 0 && y[2] == 0, "IsInf %d %d %d", y[0], y[1], y[2]);
    }
    run_done(&r);

    cg_attr alpha = attr_float("alpha", 0.0f);
    run_op(&r, "Celu", 12, &alpha, 1, gx, 1);
    expect_fail(&r, "Celu alpha 0", CG_INVALID, "alpha");
    run_done(&r);
}

int main(void)
{
    test_integer_errors();
    test_mod_semantics();
    test_bitshift();
    test_max_min_nan();
    test_broadcast_shapes();
    test_variadic();
    test_clip_pow_round();
    test_pow_square();
    test_legacy_broadcast();
    test_where_strings();
    test_cast();
    test_half_and_activations();
    return test_done("test_ops_elementwise");
}
