/* Test-data decoding and judging: TensorProto / SequenceProto /
 * OptionalProto bytes built here by hand (packed, unpacked, raw, strings,
 * bad counts, truncations, huge dims) decoded by cg_io_pb_parse; the
 * NaN-aware tolerance comparison; and seeded random fill. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "convgate/samples.h"
#include "convgate/tensor_io.h"
#include "convgate/tensor.h"
#include "testlib.h"

/* --- a tiny protobuf writer ------------------------------------------------------ */

typedef struct buf {
    uint8_t data[4096];
    size_t len;
} buf;

static void put_varint(buf *b, uint64_t v)
{
    do {
        uint8_t c = v & 0x7F;
        v >>= 7;
        b->data[b->len++] = (uint8_t)(c | (v ? 0x80 : 0));
    } while (v);
}

static void put_key(buf *b, unsigned field, unsigned wire) { put_varint(b, field << 3 | wire); }

static void put_bytes(buf *b, unsigned field, const void *p, size_t n)
{
    put_key(b, field, 2);
    put_varint(b, n);
    memcpy(b->data + b->len, p, n);
    b->len += n;
}

static void put_fixed32(buf *b, unsigned field, float f)
{
    uint32_t u;
    memcpy(&u, &f, 4);
    put_key(b, field, 5);
    for (int i = 0; i < 4; i++)
        b->data[b->len++] = (uint8_t)(u >> (8 * i));
}

static void put_dims(buf *b, int n, const int64_t *dims)
{
    for (int i = 0; i < n; i++) {
        put_key(b, 1, 0);
        put_varint(b, (uint64_t)dims[i]);
    }
}

static cg_status parse(const buf *b, const cg_type *type, cg_value **v, cg_error *err)
{
    cg_error_clear(err);
    *v = NULL;
    return cg_io_pb_parse(b->data, b->len, type, "test.pb", 1 << 20, v, err);
}

/* --- TensorProto -------------------------------------------------------------------- */

static void test_tensor_encodings(void)
{
    cg_value *v;
    cg_error err;
    const int64_t d22[2] = {2, 2};

    /* packed float_data */
    buf b = {.len = 0};
    put_dims(&b, 2, d22);
    put_key(&b, 2, 0);
    put_varint(&b, CG_DTYPE_FLOAT);
    const float f4[4] = {1.0f, -2.5f, 0.0f, 1e30f};
    put_bytes(&b, 4, f4, sizeof f4);
    EXPECT(parse(&b, NULL, &v, &err) == CG_OK, "%s", err.msg);
    EXPECT(v && v->kind == CG_VALUE_TENSOR && v->tensor.rank == 2 && v->tensor.numel == 4 &&
               memcmp(v->tensor.data, f4, sizeof f4) == 0, "packed floats");
    cg_value_free(v);

    /* unpacked float_data spread over fields, and a name in between */
    b.len = 0;
    put_key(&b, 2, 0);
    put_varint(&b, CG_DTYPE_FLOAT);
    put_dims(&b, 1, (const int64_t[]){3});
    put_fixed32(&b, 4, 1.5f);
    put_bytes(&b, 8, "t", 1);
    put_fixed32(&b, 4, 2.5f);
    put_fixed32(&b, 4, 3.5f);
    EXPECT(parse(&b, NULL, &v, &err) == CG_OK, "%s", err.msg);
    EXPECT(v && ((float *)v->tensor.data)[2] == 3.5f, "unpacked floats");
    cg_value_free(v);

    /* int8 in int32_data: negative values are 10-byte sign-extended varints */
    b.len = 0;
    put_key(&b, 2, 0);
    put_varint(&b, CG_DTYPE_INT8);
    put_dims(&b, 1, (const int64_t[]){2});
    put_key(&b, 5, 0);
    put_varint(&b, (uint64_t)(int64_t)-128);
    put_key(&b, 5, 0);
    put_varint(&b, 127);
    EXPECT(parse(&b, NULL, &v, &err) == CG_OK, "%s", err.msg);
    EXPECT(v && ((int8_t *)v->tensor.data)[0] == -128 && ((int8_t *)v->tensor.data)[1] == 127,
           "int8 values");
    cg_value_free(v);

    /* raw_data int64 scalar */
    b.len = 0;
    put_key(&b, 2, 0);
    put_varint(&b, CG_DTYPE_INT64);
    int64_t big = INT64_MIN + 5;
    put_bytes(&b, 9, &big, 8);
    EXPECT(parse(&b, NULL, &v, &err) == CG_OK, "%s", err.msg);
    EXPECT(v && v->tensor.rank == 0 && ((int64_t *)v->tensor.data)[0] == big, "raw int64");
    cg_value_free(v);

    /* strings (may hold any bytes, stay NUL-terminated) */
    b.len = 0;
    put_key(&b, 2, 0);
    put_varint(&b, CG_DTYPE_STRING);
    put_dims(&b, 1, (const int64_t[]){2});
    put_bytes(&b, 6, "hello", 5);
    put_bytes(&b, 6, "", 0);
    EXPECT(parse(&b, NULL, &v, &err) == CG_OK, "%s", err.msg);
    size_t l0 = 0, l1 = 1;
    EXPECT(v && !strcmp(cg_tensor_string(&v->tensor, 0, &l0), "hello") && l0 == 5 &&
               !strcmp(cg_tensor_string(&v->tensor, 1, &l1), "") && l1 == 0, "strings");
    cg_value_free(v);

    /* uint64 via uint64_data, the top value */
    b.len = 0;
    put_key(&b, 2, 0);
    put_varint(&b, CG_DTYPE_UINT64);
    put_dims(&b, 1, (const int64_t[]){1});
    put_key(&b, 11, 0);
    put_varint(&b, UINT64_MAX);
    EXPECT(parse(&b, NULL, &v, &err) == CG_OK, "%s", err.msg);
    EXPECT(v && ((uint64_t *)v->tensor.data)[0] == UINT64_MAX, "uint64 max");
    cg_value_free(v);

    /* empty tensor with no data at all is fine */
    b.len = 0;
    put_key(&b, 2, 0);
    put_varint(&b, CG_DTYPE_FLOAT);
    put_dims(&b, 2, (const int64_t[]){0, 5});
    EXPECT(parse(&b, NULL, &v, &err) == CG_OK, "%s", err.msg);
    EXPECT(v && v->tensor.numel == 0 && v->tensor.dims[1] == 5, "empty tensor");
    cg_value_free(v);
}

static void expect_bad(const buf *b, cg_status want, const char *why)
{
    cg_value *v;
    cg_error err;
    cg_status st = parse(b, NULL, &v, &err);
    EXPECT(st == want && err.msg[0], "%s: got %s (%s)", why, cg_status_name(st), err.msg);
    if (st == CG_OK)
        cg_value_free(v);
}

static void test_tensor_errors(void)
{
    const float f2[2] = {1, 2};
    buf b = {.len = 0};
    put_key(&b, 2, 0);
    put_varint(&b, CG_DTYPE_FLOAT);
    put_dims(&b, 1, (const int64_t[]){3});
    put_bytes(&b, 4, f2, sizeof f2);
    expect_bad(&b, CG_INVALID, "2 floats for 3 elements");

    b.len = 0;
    put_key(&b, 2, 0);
    put_varint(&b, CG_DTYPE_FLOAT);
    put_dims(&b, 1, (const int64_t[]){1});
    put_bytes(&b, 4, f2, sizeof f2);
    expect_bad(&b, CG_INVALID, "2 floats for 1 element");

    b.len = 0;
    put_key(&b, 2, 0);
    put_varint(&b, CG_DTYPE_FLOAT);
    put_dims(&b, 1, (const int64_t[]){2});
    put_bytes(&b, 9, f2, 7);
    expect_bad(&b, CG_INVALID, "raw_data of 7 bytes for 2 floats");

    b.len = 0;
    put_key(&b, 2, 0);
    put_varint(&b, CG_DTYPE_FLOAT);
    put_dims(&b, 2, (const int64_t[]){(int64_t)1 << 40, (int64_t)1 << 40});
    expect_bad(&b, CG_LIMIT, "2^80 elements (must fail before allocating)");

    b.len = 0;
    put_key(&b, 2, 0);
    put_varint(&b, CG_DTYPE_FLOAT);
    put_dims(&b, 1, (const int64_t[]){-1});
    expect_bad(&b, CG_INVALID, "negative dim");

    b.len = 0;
    put_key(&b, 2, 0);
    put_varint(&b, 99);
    expect_bad(&b, CG_UNSUPPORTED, "unknown data type");

    b.len = 0;
    put_key(&b, 2, 0);
    put_varint(&b, CG_DTYPE_FLOAT);
    put_key(&b, 14, 0);
    put_varint(&b, 1);
    expect_bad(&b, CG_UNSUPPORTED, "external data");

    b.len = 0;
    put_key(&b, 2, 0);
    put_varint(&b, CG_DTYPE_FLOAT);
    for (int i = 0; i < 17; i++)
        put_dims(&b, 1, (const int64_t[]){1});
    expect_bad(&b, CG_LIMIT, "rank 17");

    b.len = 0;
    put_key(&b, 2, 3); /* group start: not in onnx.proto */
    expect_bad(&b, CG_PARSE, "group wire type");

    /* Every proper prefix of a valid tensor (data last) fails cleanly. */
    const float f3[3] = {1, 2, 3};
    b.len = 0;
    put_key(&b, 2, 0);
    put_varint(&b, CG_DTYPE_FLOAT);
    put_dims(&b, 1, (const int64_t[]){3});
    put_bytes(&b, 4, f3, sizeof f3);
    int accepted = 0;
    size_t full = b.len;
    for (size_t cut = 0; cut < full; cut++) {
        cg_value *v;
        cg_error err;
        buf p = b;
        p.len = cut;
        if (parse(&p, NULL, &v, &err) == CG_OK) {
            accepted++;
            cg_value_free(v);
        }
    }
    EXPECT(accepted == 0, "%d truncated tensors accepted", accepted);
}

/* --- sequences and optionals ------------------------------------------------------------ */

static void float_tensor(buf *b, float x)
{
    b->len = 0;
    put_key(b, 2, 0);
    put_varint(b, CG_DTYPE_FLOAT);
    put_dims(b, 1, (const int64_t[]){1});
    put_fixed32(b, 4, x);
}

static void test_sequence_optional(void)
{
    cg_value *v;
    cg_error err;
    buf t1, t2, seq = {.len = 0}, opt = {.len = 0};
    cg_type seq_type, elem_type, opt_type;
    memset(&seq_type, 0, sizeof seq_type);
    memset(&elem_type, 0, sizeof elem_type);
    memset(&opt_type, 0, sizeof opt_type);
    elem_type.kind = CG_TYPE_TENSOR;
    elem_type.elem_type = CG_DTYPE_FLOAT;
    elem_type.has_elem_type = true;
    seq_type.kind = CG_TYPE_SEQUENCE;
    seq_type.elem = &elem_type;
    opt_type.kind = CG_TYPE_OPTIONAL;
    opt_type.elem = &seq_type;

    float_tensor(&t1, 1.0f);
    float_tensor(&t2, 2.0f);
    put_bytes(&seq, 1, "s", 1);
    put_key(&seq, 2, 0);
    put_varint(&seq, 1);
    put_bytes(&seq, 3, t1.data, t1.len);
    put_bytes(&seq, 3, t2.data, t2.len);
    EXPECT(parse(&seq, &seq_type, &v, &err) == CG_OK, "%s", err.msg);
    EXPECT(v && v->kind == CG_VALUE_SEQUENCE && v->item_count == 2 &&
               ((float *)v->items[1]->tensor.data)[0] == 2.0f && v->seq_dtype == CG_DTYPE_FLOAT,
           "sequence of two");
    cg_value_free(v);

    /* optional holding that sequence */
    put_key(&opt, 2, 0);
    put_varint(&opt, 3);
    put_bytes(&opt, 5, seq.data, seq.len);
    EXPECT(parse(&opt, &opt_type, &v, &err) == CG_OK, "%s", err.msg);
    EXPECT(v && v->kind == CG_VALUE_OPTIONAL && v->has_value && v->optional_is_sequence &&
               v->item_count == 2, "optional sequence");
    cg_value_free(v);

    /* empty optional */
    opt.len = 0;
    put_bytes(&opt, 1, "o", 1);
    put_key(&opt, 2, 0);
    put_varint(&opt, 0);
    EXPECT(parse(&opt, &opt_type, &v, &err) == CG_OK, "%s", err.msg);
    EXPECT(v && v->kind == CG_VALUE_OPTIONAL && !v->has_value, "empty optional");
    cg_value_free(v);

    /* a bad item names its index */
    buf bad = {.len = 0};
    put_key(&bad, 2, 0);
    put_varint(&bad, CG_DTYPE_FLOAT);
    put_dims(&bad, 1, (const int64_t[]){4});
    seq.len = 0;
    put_bytes(&seq, 3, t1.data, t1.len);
    put_bytes(&seq, 3, bad.data, bad.len);
    EXPECT(parse(&seq, &seq_type, &v, &err) == CG_INVALID && strstr(err.msg, "item 1"),
           "bad item: %s", err.msg);
}

/* --- comparison --------------------------------------------------------------------------- */

static cg_value *vec(cg_dtype dt, int n, const double *vals)
{
    cg_tensor t;
    cg_value *v = NULL;
    cg_error err;
    int64_t dims[1] = {n};
    if (cg_tensor_alloc(&t, dt, 1, dims, 0, &err) != CG_OK)
        test_fatal("cg_tensor_alloc: %s", err.msg);
    for (int i = 0; i < n; i++)
        cg_tensor_set_f64(&t, i, vals[i]);
    if (cg_value_from_tensor(&t, &v, &err) != CG_OK)
        test_fatal("cg_value_from_tensor: %s", err.msg);
    return v;
}

static bool match(const cg_value *a, const cg_value *b, char *why)
{
    return cg_io_values_match(a, b, 1e-3, 1e-7, why, 256);
}

static void test_compare(void)
{
    char why[256];
    const double want[4] = {1000.0, NAN, INFINITY, -0.0};
    cg_value *w = vec(CG_DTYPE_DOUBLE, 4, want);

    const double same[4] = {1000.0 + 1.0 + 0.5e-7, NAN, INFINITY, 0.0};
    cg_value *g = vec(CG_DTYPE_DOUBLE, 4, same);
    EXPECT(match(g, w, why), "within atol + rtol*|b| and NaN==NaN: %s", why);
    cg_value_free(g);

    const double over[4] = {1000.0 + 1.0 + 2e-7, NAN, INFINITY, 0.0};
    g = vec(CG_DTYPE_DOUBLE, 4, over);
    EXPECT(!match(g, w, why) && strstr(why, "1 of 4"), "just over the tolerance: %s", why);
    cg_value_free(g);

    const double nan_for_number[4] = {NAN, NAN, INFINITY, 0.0};
    g = vec(CG_DTYPE_DOUBLE, 4, nan_for_number);
    EXPECT(!match(g, w, why), "NaN must not match a number");
    cg_value_free(g);

    const double number_for_nan[4] = {1000.0, 0.0, INFINITY, 0.0};
    g = vec(CG_DTYPE_DOUBLE, 4, number_for_nan);
    EXPECT(!match(g, w, why), "a number must not match NaN");
    cg_value_free(g);

    const double neg_inf[4] = {1000.0, NAN, -INFINITY, 0.0};
    g = vec(CG_DTYPE_DOUBLE, 4, neg_inf);
    EXPECT(!match(g, w, why), "-inf must not match inf");
    cg_value_free(g);

    g = vec(CG_DTYPE_FLOAT, 4, want);
    EXPECT(!match(g, w, why) && strstr(why, "dtype"), "dtype mismatch: %s", why);
    cg_value_free(g);

    g = vec(CG_DTYPE_DOUBLE, 3, want);
    EXPECT(!match(g, w, why) && strstr(why, "shape"), "shape mismatch: %s", why);
    cg_value_free(g);

    const double bools[2] = {1, 0}, bools2[2] = {1, 1};
    cg_value *b1 = vec(CG_DTYPE_BOOL, 2, bools), *b2 = vec(CG_DTYPE_BOOL, 2, bools2);
    EXPECT(!match(b1, b2, why), "bool difference");
    EXPECT(match(b1, b1, why), "bool equal");
    cg_value_free(b1);
    cg_value_free(b2);
    cg_value_free(w);

    /* strings, sequences */
    cg_tensor s;
    cg_error err;
    cg_value *sa = NULL, *sb = NULL;
    int64_t one[1] = {1};
    if (cg_tensor_alloc(&s, CG_DTYPE_STRING, 1, one, 0, &err) != CG_OK)
        test_fatal("cg_tensor_alloc: %s", err.msg);
    if (cg_tensor_set_string(&s, 0, "abc", 3) != CG_OK)
        test_fatal("cg_tensor_set_string");
    if (cg_value_from_tensor(&s, &sa, &err) != CG_OK)
        test_fatal("cg_value_from_tensor: %s", err.msg);
    if (cg_tensor_alloc(&s, CG_DTYPE_STRING, 1, one, 0, &err) != CG_OK)
        test_fatal("cg_tensor_alloc: %s", err.msg);
    if (cg_tensor_set_string(&s, 0, "abd", 3) != CG_OK)
        test_fatal("cg_tensor_set_string");
    if (cg_value_from_tensor(&s, &sb, &err) != CG_OK)
        test_fatal("cg_value_from_tensor: %s", err.msg);
    EXPECT(!match(sa, sb, why) && strstr(why, "abd"), "string mismatch: %s", why);
    EXPECT(match(sa, sa, why), "same string");

    cg_value *q1 = calloc(1, sizeof *q1), *q2 = calloc(1, sizeof *q2);
    q1->kind = q2->kind = CG_VALUE_SEQUENCE;
    q1->items = calloc(1, sizeof *q1->items);
    q1->items[0] = sa;
    q1->item_count = 1;
    q2->items = calloc(1, sizeof *q2->items);
    q2->items[0] = sb;
    q2->item_count = 1;
    EXPECT(!match(q1, q2, why) && strstr(why, "sequence item 0"), "sequence item: %s", why);
    q2->item_count = 0;
    EXPECT(!match(q1, q2, why) && strstr(why, "1 items, expected 0"), "sequence length: %s",
           why);
    q2->item_count = 1;
    EXPECT(!match(q1, sa, why) && strstr(why, "a sequence, expected a tensor"), "kind: %s", why);
    cg_value_free(q1);
    cg_value_free(q2);
}

/* --- random fill ----------------------------------------------------------------------------- */

static void test_random(void)
{
    cg_tensor a, b, i8;
    cg_error err;
    cg_rng r1, r2;
    int64_t dims[1] = {4096};
    cg_error_clear(&err);
    if (cg_tensor_alloc(&a, CG_DTYPE_FLOAT16, 1, dims, 0, &err) != CG_OK)
        test_fatal("cg_tensor_alloc: %s", err.msg);
    if (cg_tensor_alloc(&b, CG_DTYPE_FLOAT16, 1, dims, 0, &err) != CG_OK)
        test_fatal("cg_tensor_alloc: %s", err.msg);
    if (cg_tensor_alloc(&i8, CG_DTYPE_UINT8, 1, dims, 0, &err) != CG_OK)
        test_fatal("cg_tensor_alloc: %s", err.msg);
    cg_rng_seed(&r1, 5);
    cg_rng_seed(&r2, 5);
    EXPECT(cg_random_fill(&a, NULL, &r1, &err) == CG_OK && cg_random_fill(&b, NULL, &r2, &err) == CG_OK,
           "%s", err.msg);
    EXPECT(memcmp(a.data, b.data, 4096 * 2) == 0, "same seed must give the same tensor");
    int out_of_range = 0;
    double lo = 1, hi = -1;
    for (int64_t i = 0; i < a.numel; i++) {
        double x = cg_tensor_get_f64(&a, i);
        out_of_range += !(x >= -1.0 && x < 1.0);
        lo = x < lo ? x : lo;
        hi = x > hi ? x : hi;
    }
    EXPECT(out_of_range == 0 && lo < -0.9 && hi > 0.9, "fp16 range [%g, %g], %d outside", lo, hi,
           out_of_range);
    EXPECT(cg_random_fill(&i8, NULL, &r1, &err) == CG_OK, "%s", err.msg);
    int bad = 0;
    for (int64_t i = 0; i < i8.numel; i++)
        bad += ((uint8_t *)i8.data)[i] > 10;
    EXPECT(bad == 0, "%d uint8 values above 10", bad);
    cg_tensor_release(&a);
    cg_tensor_release(&b);
    cg_tensor_release(&i8);
}

int main(void)
{
    test_tensor_encodings();
    test_tensor_errors();
    test_sequence_optional();
    test_compare();
    test_random();
    return test_done("test_io_pb");
}
