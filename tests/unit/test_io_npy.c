/* Tensor-file tests: .npy/.npz written by NumPy (tests/data/io, made by
 * tools/make_io_fixtures.py) read back with the expected values, round trips
 * through our writers, and malformed files (truncated header, bad shape
 * text, huge shape, deflate bombs, corrupt CRC, ZIP64) that must fail with a
 * clean status and a message, never a crash or a large allocation. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "convgate/samples.h"
#include "convgate/tensor_io.h"
#include "convgate/tensor.h"
#include "testlib.h"

#define DATA CG_SOURCE_DIR "/tests/data/io/"

static const char *str_at(const cg_tensor *t, int64_t i)
{
    size_t len;
    return cg_tensor_string(t, i, &len);
}

static uint8_t *slurp(const char *path, size_t *size)
{
    FILE *f = fopen(path, "rb");
    uint8_t *buf = NULL;
    long n;
    *size = 0;
    if (!f)
        return NULL;
    if (fseek(f, 0, SEEK_END) == 0 && (n = ftell(f)) >= 0 && fseek(f, 0, SEEK_SET) == 0) {
        buf = malloc((size_t)n + 1);
        if (buf && fread(buf, 1, (size_t)n, f) == (size_t)n)
            *size = (size_t)n;
    }
    fclose(f);
    return buf;
}

static void spit(const char *path, const uint8_t *data, size_t size)
{
    FILE *f = fopen(path, "wb");
    if (f) {
        fwrite(data, 1, size, f);
        fclose(f);
    }
}

static bool shape_is(const cg_tensor *t, int rank, int64_t d0, int64_t d1)
{
    return t->rank == rank && (rank < 1 || t->dims[0] == d0) && (rank < 2 || t->dims[1] == d1);
}

/* --- NumPy-written files ---------------------------------------------------------- */

static void test_read_numpy_files(void)
{
    cg_tensor t;
    cg_error err;

    cg_error_clear(&err);
    EXPECT(cg_npy_load(DATA "f4_c.npy", 0, &t, &err) == CG_OK, "%s", err.msg);
    EXPECT(t.dtype == CG_DTYPE_FLOAT && shape_is(&t, 2, 2, 3), "f4_c type/shape");
    for (int i = 0; t.data && i < 6; i++)
        EXPECT(((float *)t.data)[i] == (float)i, "f4_c[%d]", i);
    cg_tensor_release(&t);

    /* Fortran order: element (r, c) is 0.5 * (3r + c) after reordering. */
    EXPECT(cg_npy_load(DATA "f8_fortran.npy", 0, &t, &err) == CG_OK, "%s", err.msg);
    EXPECT(t.dtype == CG_DTYPE_DOUBLE && shape_is(&t, 2, 2, 3), "f8_fortran type/shape");
    for (int i = 0; t.data && i < 6; i++)
        EXPECT(((double *)t.data)[i] == 0.5 * i, "f8_fortran[%d] = %g", i, ((double *)t.data)[i]);
    cg_tensor_release(&t);

    EXPECT(cg_npy_load(DATA "i4_be.npy", 0, &t, &err) == CG_OK, "%s", err.msg);
    EXPECT(t.dtype == CG_DTYPE_INT32 && shape_is(&t, 1, 6, 0), "i4_be type/shape");
    for (int i = 0; t.data && i < 6; i++)
        EXPECT(((int32_t *)t.data)[i] == i - 3, "big-endian i4[%d] = %d", i,
               ((int32_t *)t.data)[i]);
    cg_tensor_release(&t);

    EXPECT(cg_npy_load(DATA "b1.npy", 0, &t, &err) == CG_OK, "%s", err.msg);
    EXPECT(t.dtype == CG_DTYPE_BOOL && t.numel == 3 && ((uint8_t *)t.data)[0] == 1 &&
               ((uint8_t *)t.data)[1] == 0 && ((uint8_t *)t.data)[2] == 1, "bool values");
    cg_tensor_release(&t);

    EXPECT(cg_npy_load(DATA "f2.npy", 0, &t, &err) == CG_OK, "%s", err.msg);
    EXPECT(t.dtype == CG_DTYPE_FLOAT16 && t.numel == 4, "f2 type");
    if (t.data) {
        const uint16_t *h = t.data;
        EXPECT(cg_fp16_to_f32(h[0]) == 1.5f && cg_fp16_to_f32(h[1]) == -2.0f &&
                   isinf(cg_fp16_to_f32(h[2])) && isnan(cg_fp16_to_f32(h[3])),
               "fp16 values");
    }
    cg_tensor_release(&t);

    EXPECT(cg_npy_load(DATA "u8.npy", 0, &t, &err) == CG_OK, "%s", err.msg);
    EXPECT(t.dtype == CG_DTYPE_UINT64 && ((uint64_t *)t.data)[1] == UINT64_MAX, "uint64 max");
    cg_tensor_release(&t);

    EXPECT(cg_npy_load(DATA "i1_scalar.npy", 0, &t, &err) == CG_OK, "%s", err.msg);
    EXPECT(t.dtype == CG_DTYPE_INT8 && t.rank == 0 && t.numel == 1 &&
               ((int8_t *)t.data)[0] == -7, "int8 scalar");
    cg_tensor_release(&t);

    EXPECT(cg_npy_load(DATA "empty_f4.npy", 0, &t, &err) == CG_OK, "%s", err.msg);
    EXPECT(shape_is(&t, 2, 0, 3) && t.numel == 0, "empty shape");
    cg_tensor_release(&t);

    EXPECT(cg_npy_load(DATA "unicode.npy", 0, &t, &err) == CG_OK, "%s", err.msg);
    EXPECT(t.dtype == CG_DTYPE_STRING && t.numel == 3, "unicode type");
    if (t.data && t.numel == 3) {
        size_t l0, l1, l2;
        const char *s0 = cg_tensor_string(&t, 0, &l0), *s1 = cg_tensor_string(&t, 1, &l1),
                   *s2 = cg_tensor_string(&t, 2, &l2);
        EXPECT(!strcmp(s0, "a") && !strcmp(s1, "h\xc3\xa9llo") && !strcmp(s2, "") && l2 == 0,
               "unicode values '%s' '%s' '%s'", s0, s1, s2);
    }
    cg_tensor_release(&t);

    EXPECT(cg_npy_load(DATA "bytes.npy", 0, &t, &err) == CG_OK, "%s", err.msg);
    EXPECT(t.dtype == CG_DTYPE_STRING && t.numel == 2 && !strcmp(str_at(&t, 0), "ab") &&
               !strcmp(str_at(&t, 1), "xyz"), "bytes values");
    cg_tensor_release(&t);

    EXPECT(cg_npy_load(DATA "c8.npy", 0, &t, &err) == CG_OK, "%s", err.msg);
    EXPECT(t.dtype == CG_DTYPE_COMPLEX64 && t.numel == 2 && ((float *)t.data)[1] == 2.0f &&
               ((float *)t.data)[3] == -3.0f, "complex64 values");
    cg_tensor_release(&t);

    EXPECT(cg_npy_load(DATA "f4_v2.npy", 0, &t, &err) == CG_OK, "%s", err.msg);
    EXPECT(t.numel == 4 && ((float *)t.data)[3] == 3.0f, "format 2.0");
    cg_tensor_release(&t);
}

static void test_read_numpy_npz(void)
{
    cg_npz *z = NULL;
    cg_tensor t;
    cg_error err;
    cg_error_clear(&err);
    EXPECT(cg_npz_open(DATA "stored.npz", 0, &z, &err) == CG_OK, "%s", err.msg);
    if (z) {
        EXPECT(cg_npz_count(z) == 2, "stored.npz count %zu", cg_npz_count(z));
        EXPECT(cg_npz_load(z, "y", &t, &err) == CG_OK, "%s", err.msg);
        EXPECT(t.dtype == CG_DTYPE_INT64 && t.numel == 3 && ((int64_t *)t.data)[1] == -20,
               "stored y");
        cg_tensor_release(&t);
        cg_error_clear(&err);
        EXPECT(cg_npz_load(z, "nope", &t, &err) == CG_INVALID && strstr(err.msg, "'x'"),
               "missing key should list keys: %s", err.msg);
        cg_npz_free(z);
    }
    cg_error_clear(&err);
    z = NULL;
    EXPECT(cg_npz_open(DATA "deflated.npz", 0, &z, &err) == CG_OK, "%s", err.msg);
    if (z) {
        EXPECT(cg_npz_count(z) == 3, "deflated.npz count");
        EXPECT(cg_npz_load(z, "zeros", &t, &err) == CG_OK, "%s", err.msg);
        EXPECT(t.dtype == CG_DTYPE_DOUBLE && t.numel == 4096, "deflated zeros");
        cg_tensor_release(&t);
        EXPECT(cg_npz_load(z, "s", &t, &err) == CG_OK, "%s", err.msg);
        EXPECT(t.dtype == CG_DTYPE_STRING && t.numel == 3 &&
                   !strcmp(str_at(&t, 1), "h\xc3\xa9llo"), "deflated strings");
        cg_tensor_release(&t);
        cg_npz_free(z);
    }
    /* FILE.npz:KEY through the generic loader */
    cg_value *v = NULL;
    cg_error_clear(&err);
    EXPECT(cg_io_load_value(DATA "deflated.npz:x", NULL, 0, &v, &err) == CG_OK, "%s", err.msg);
    EXPECT(v && v->tensor.numel == 6 && ((float *)v->tensor.data)[5] == 5.0f, "npz:key value");
    cg_value_free(v);
    cg_error_clear(&err);
    v = NULL;
    EXPECT(cg_io_load_value(DATA "deflated.npz", NULL, 0, &v, &err) == CG_USAGE,
           "multi-array npz without a key must ask for one");
}

/* --- round trips ---------------------------------------------------------------------- */

static void fill_tensor(cg_tensor *t, cg_dtype dt, int rank, const int64_t *dims)
{
    cg_error err;
    cg_rng rng;
    cg_error_clear(&err);
    cg_rng_seed(&rng, 42);
    EXPECT(cg_tensor_alloc(t, dt, rank, dims, 0, &err) == CG_OK, "%s", err.msg);
    if (dt == CG_DTYPE_COMPLEX64) {
        for (int64_t i = 0; i < 2 * t->numel; i++)
            ((float *)t->data)[i] = (float)i - 1.5f;
        return;
    }
    EXPECT(cg_random_fill(t, NULL, &rng, &err) == CG_OK, "fill %s: %s", cg_dtype_name(dt),
           err.msg);
}

/* String element i (never NULL). */
static bool same_tensor(const cg_tensor *a, const cg_tensor *b)
{
    if (a->dtype != b->dtype || a->rank != b->rank || a->numel != b->numel)
        return false;
    for (int d = 0; d < a->rank; d++)
        if (a->dims[d] != b->dims[d])
            return false;
    if (a->dtype == CG_DTYPE_STRING) {
        for (int64_t i = 0; i < a->numel; i++) {
            size_t al, bl;
            const char *x = cg_tensor_string(a, i, &al), *y = cg_tensor_string(b, i, &bl);
            if (cg_string_compare(x, al, y, bl) != 0)
                return false;
        }
        return true;
    }
    return memcmp(a->data, b->data, (size_t)a->numel * cg_dtype_size(a->dtype)) == 0;
}

static void test_round_trip(void)
{
    static const cg_dtype types[] = {
        CG_DTYPE_FLOAT, CG_DTYPE_DOUBLE, CG_DTYPE_FLOAT16, CG_DTYPE_INT8, CG_DTYPE_INT16,
        CG_DTYPE_INT32, CG_DTYPE_INT64, CG_DTYPE_UINT8, CG_DTYPE_UINT16, CG_DTYPE_UINT32,
        CG_DTYPE_UINT64, CG_DTYPE_BOOL, CG_DTYPE_STRING, CG_DTYPE_COMPLEX64};
    const int64_t dims[3] = {2, 3, 4};
    const cg_tensor *list[sizeof types / sizeof types[0]];
    const char *keys[sizeof types / sizeof types[0]];
    cg_tensor in[sizeof types / sizeof types[0]];
    size_t n = sizeof types / sizeof types[0];
    cg_error err;
    for (size_t i = 0; i < n; i++) {
        cg_tensor back;
        uint8_t *buf = NULL;
        size_t size = 0;
        cg_error_clear(&err);
        fill_tensor(&in[i], types[i], i % 4, dims);
        EXPECT(cg_npy_serialize(&in[i], &buf, &size, &err) == CG_OK, "%s", err.msg);
        if (types[i] != CG_DTYPE_STRING)
            EXPECT((size - (size_t)in[i].numel * cg_dtype_size(types[i])) % 64 == 0,
                   "header of %s is not 64-byte aligned", cg_dtype_name(types[i]));
        EXPECT(cg_npy_parse(buf, size, "round trip", 0, &back, &err) == CG_OK, "%s: %s",
               cg_dtype_name(types[i]), err.msg);
        EXPECT(same_tensor(&in[i], &back), "npy round trip of %s changed the tensor",
               cg_dtype_name(types[i]));
        cg_tensor_release(&back);
        free(buf);
        list[i] = &in[i];
        keys[i] = cg_dtype_name(types[i]);
    }
    for (int compress = 0; compress < 2; compress++) {
        const char *path = compress ? "io_rt_deflated.npz" : "io_rt_stored.npz";
        cg_npz *z = NULL;
        cg_error_clear(&err);
        EXPECT(cg_npz_save(path, n, keys, list, compress, &err) == CG_OK, "%s", err.msg);
        EXPECT(cg_npz_open(path, 0, &z, &err) == CG_OK, "%s", err.msg);
        for (size_t i = 0; z && i < n; i++) {
            cg_tensor back;
            EXPECT(!strcmp(cg_npz_key(z, i), keys[i]), "key %zu", i);
            EXPECT(cg_npz_load(z, keys[i], &back, &err) == CG_OK, "%s", err.msg);
            EXPECT(same_tensor(&in[i], &back), "npz (%s) round trip of %s",
                   compress ? "deflated" : "stored", keys[i]);
            cg_tensor_release(&back);
        }
        cg_npz_free(z);
        remove(path);
    }
    for (size_t i = 0; i < n; i++)
        cg_tensor_release(&in[i]);

    /* bfloat16 has no NumPy dtype: refused by name, not written wrongly. */
    cg_tensor bf;
    uint8_t *buf = NULL;
    size_t size;
    cg_error_clear(&err);
    fill_tensor(&bf, CG_DTYPE_BFLOAT16, 1, dims);
    EXPECT(cg_npy_serialize(&bf, &buf, &size, &err) == CG_UNSUPPORTED && strstr(err.msg, "bfloat16"),
           "bfloat16 must be refused: %s", err.msg);
    free(buf);
    cg_tensor_release(&bf);
}

/* --- malformed .npy -------------------------------------------------------------------- */

/* Builds a v1 .npy with the given header text and payload size. */
static size_t make_npy(uint8_t *buf, size_t cap, const char *header, size_t payload)
{
    size_t hl = strlen(header);
    memcpy(buf, "\x93NUMPY\x01\x00", 8);
    buf[8] = (uint8_t)hl;
    buf[9] = (uint8_t)(hl >> 8);
    memcpy(buf + 10, header, hl);
    if (10 + hl + payload > cap)
        return 0;
    memset(buf + 10 + hl, 0, payload);
    return 10 + hl + payload;
}

static void expect_npy_error(const char *header, size_t payload, cg_status want,
                             const char *why)
{
    static uint8_t buf[4096];
    cg_tensor t;
    cg_error err;
    cg_error_clear(&err);
    size_t n = make_npy(buf, sizeof buf, header, payload);
    cg_status st = cg_npy_parse(buf, n, "bad.npy", 1 << 20, &t, &err);
    EXPECT(st == want && (want == CG_OK || err.msg[0]), "%s: got %s (%s)", why, cg_status_name(st), err.msg);
    if (st == CG_OK)
        cg_tensor_release(&t);
}

static void test_malformed_npy(void)
{
    size_t size;
    uint8_t *good = slurp(DATA "f4_c.npy", &size);
    cg_tensor t;
    cg_error err;
    EXPECT(good != NULL, "fixture missing");
    if (!good)
        return;
    /* Every truncation of a valid file fails cleanly. */
    int accepted = 0;
    for (size_t cut = 0; cut < size; cut++) {
        cg_error_clear(&err);
        if (cg_npy_parse(good, cut, "cut.npy", 0, &t, &err) == CG_OK) {
            accepted++;
            cg_tensor_release(&t);
        } else if (!err.msg[0]) {
            accepted++;
        }
    }
    EXPECT(accepted == 0, "%d truncations accepted or failed without a message", accepted);
    /* Header length pointing past the end of the file. */
    good[8] = 0xff;
    good[9] = 0x7f;
    cg_error_clear(&err);
    EXPECT(cg_npy_parse(good, size, "hlen.npy", 0, &t, &err) == CG_PARSE &&
               strstr(err.msg, "truncated"), "overlong header length: %s", err.msg);
    free(good);

    expect_npy_error("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }", 23,
                     CG_PARSE, "payload one byte short");
    expect_npy_error("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }", 25,
                     CG_PARSE, "payload one byte long");
    expect_npy_error("{'descr': '<f4', 'fortran_order': False, 'shape': (2, -3), }", 0,
                     CG_PARSE, "negative dim");
    expect_npy_error("{'descr': '<f4', 'fortran_order': False, 'shape': (2, x), }", 0, CG_PARSE,
                     "non-numeric dim");
    expect_npy_error("{'descr': '<f4', 'fortran_order': False, 'shape': [2, 3], }", 0, CG_PARSE,
                     "list instead of tuple");
    expect_npy_error("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3, }", 0, CG_PARSE,
                     "unclosed tuple");
    expect_npy_error("{'descr': '<f4', 'fortran_order': False, 'shape': "
                     "(99999999999999999999999,), }", 0, CG_PARSE, "dim above 2^62");
    expect_npy_error("{'descr': '<f4', 'fortran_order': False, 'shape': "
                     "(4611686018427387904, 4611686018427387904), }", 0, CG_PARSE,
                     "numel overflow");
    expect_npy_error("{'descr': '<f4', 'fortran_order': False, 'shape': (1000000000,), }", 0,
                     CG_PARSE, "huge shape with no payload");
    expect_npy_error("{'descr': '<f4', 'fortran_order': False, "
                     "'shape': (1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1), }", 4, CG_PARSE,
                     "rank above the maximum");
    expect_npy_error("{'descr': '|O', 'fortran_order': False, 'shape': (1,), }", 8,
                     CG_UNSUPPORTED, "pickled objects");
    expect_npy_error("{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (1,), }", 4,
                     CG_UNSUPPORTED, "structured dtype");
    expect_npy_error("{'descr': '<f3', 'fortran_order': False, 'shape': (1,), }", 3,
                     CG_UNSUPPORTED, "odd float width");
    expect_npy_error("{'descr': '<f4', 'shape': (1,), }", 4, CG_PARSE, "missing fortran_order");
    expect_npy_error("{'descr': '<f4', 'descr': '<f4', 'fortran_order': False, 'shape': (1,), }",
                     4, CG_PARSE, "repeated key");
    expect_npy_error("{'descr': '<f4', 'fortran_order': Maybe, 'shape': (1,), }", 4, CG_PARSE,
                     "bad bool");
    expect_npy_error("{'descr': '<U2', 'fortran_order': False, 'shape': (1,), }", 8, CG_OK,
                     "empty unicode string is fine");
    /* Unicode above U+10FFFF */
    static uint8_t buf[256];
    size_t n = make_npy(buf, sizeof buf, "{'descr': '<U1', 'fortran_order': False, 'shape': (1,), }",
                        4);
    buf[n - 2] = 0x11;
    cg_error_clear(&err);
    EXPECT(cg_npy_parse(buf, n, "u.npy", 0, &t, &err) == CG_PARSE, "bad code point accepted");
    /* A legal but too large tensor is refused by the byte limit, before allocation. */
    n = make_npy(buf, sizeof buf, "{'descr': '<f8', 'fortran_order': False, 'shape': (16,), }",
                 128);
    cg_error_clear(&err);
    EXPECT(cg_npy_parse(buf, n, "big.npy", 64, &t, &err) == CG_LIMIT, "max_bytes ignored: %s",
           err.msg);
}

/* --- malformed .npz ---------------------------------------------------------------------- */

static uint32_t rd32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static void wr32(uint8_t *p, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

/* Offset of the central directory entry of the archive (single member). */
static size_t central_of(const uint8_t *z, size_t size)
{
    return rd32(z + size - 22 + 16);
}

static cg_status open_and_load(const char *path, size_t max_bytes, const char *key,
                               cg_error *err)
{
    cg_npz *z = NULL;
    cg_tensor t;
    cg_error_clear(err);
    cg_status st = cg_npz_open(path, max_bytes, &z, err);
    if (st == CG_OK) {
        st = cg_npz_load(z, key, &t, err);
        if (st == CG_OK)
            cg_tensor_release(&t);
        cg_npz_free(z);
    }
    return st;
}

static void test_malformed_npz(void)
{
    /* A deflated archive of one highly compressible member. */
    cg_tensor zeros;
    const int64_t dims[1] = {1 << 16};
    const cg_tensor *list[1] = {&zeros};
    const char *keys[1] = {"z"};
    cg_error err;
    cg_error_clear(&err);
    EXPECT(cg_tensor_alloc(&zeros, CG_DTYPE_DOUBLE, 1, dims, 0, &err) == CG_OK, "%s", err.msg);
    EXPECT(cg_npz_save("io_bomb.npz", 1, keys, list, true, &err) == CG_OK, "%s", err.msg);
    cg_tensor_release(&zeros);
    size_t size;
    uint8_t *orig = slurp("io_bomb.npz", &size);
    EXPECT(orig && size < 4096, "deflate did not compress the zeros");
    if (!orig)
        return;
    uint8_t *z = malloc(size);
    size_t cd = central_of(orig, size);
    uint32_t usize = rd32(orig + cd + 24);

    EXPECT(open_and_load("io_bomb.npz", 0, "z", &err) == CG_OK, "%s", err.msg);

    /* Declared size smaller than the real inflated size: inflation must stop
     * at the declared size instead of writing past the buffer. */
    memcpy(z, orig, size);
    wr32(z + cd + 24, usize / 2);
    spit("io_bomb_small.npz", z, size);
    EXPECT(open_and_load("io_bomb_small.npz", 0, "z", &err) == CG_PARSE &&
               strstr(err.msg, "past its declared size"), "under-declared: %s", err.msg);

    /* Declared size larger than the real one: must end short and fail. */
    wr32(z + cd + 24, usize + 100);
    spit("io_bomb_large.npz", z, size);
    EXPECT(open_and_load("io_bomb_large.npz", 0, "z", &err) == CG_PARSE, "over-declared: %s",
           err.msg);

    /* A declared size above max_bytes is refused before allocating. */
    EXPECT(open_and_load("io_bomb.npz", 4096, "z", &err) == CG_LIMIT, "limit: %s", err.msg);

    /* CRC mismatch */
    memcpy(z, orig, size);
    z[cd + 16] ^= 0xff;
    spit("io_crc.npz", z, size);
    EXPECT(open_and_load("io_crc.npz", 0, "z", &err) == CG_PARSE && strstr(err.msg, "CRC"),
           "crc: %s", err.msg);

    /* ZIP64 markers are refused by name. */
    memcpy(z, orig, size);
    wr32(z + cd + 20, 0xFFFFFFFFu);
    spit("io_zip64.npz", z, size);
    EXPECT(open_and_load("io_zip64.npz", 0, "z", &err) == CG_UNSUPPORTED &&
               strstr(err.msg, "ZIP64"), "zip64: %s", err.msg);

    /* Local header offset pointing into the central directory. */
    memcpy(z, orig, size);
    wr32(z + cd + 42, (uint32_t)cd);
    spit("io_offset.npz", z, size);
    EXPECT(open_and_load("io_offset.npz", 0, "z", &err) == CG_PARSE, "offset: %s", err.msg);

    /* Compressed size running past the data area. */
    memcpy(z, orig, size);
    wr32(z + cd + 20, (uint32_t)size);
    spit("io_csize.npz", z, size);
    EXPECT(open_and_load("io_csize.npz", 0, "z", &err) == CG_PARSE, "csize: %s", err.msg);

    /* Every truncation fails cleanly (the EOCD or the data goes missing). */
    int accepted = 0;
    for (size_t cut = 0; cut < size; cut += 7) {
        spit("io_cut.npz", orig, cut);
        if (open_and_load("io_cut.npz", 0, "z", &err) == CG_OK || !err.msg[0])
            accepted++;
    }
    EXPECT(accepted == 0, "%d truncated archives accepted", accepted);

    /* Corrupt deflate stream */
    memcpy(z, orig, size);
    for (size_t i = 40; i < 60 && i < cd; i++)
        z[i] = 0xff;
    spit("io_corrupt.npz", z, size);
    EXPECT(open_and_load("io_corrupt.npz", 0, "z", &err) == CG_PARSE, "corrupt: %s", err.msg);

    const char *tmp[] = {"io_bomb.npz", "io_bomb_small.npz", "io_bomb_large.npz", "io_crc.npz",
                         "io_zip64.npz", "io_offset.npz", "io_csize.npz", "io_cut.npz",
                         "io_corrupt.npz"};
    for (size_t i = 0; i < sizeof tmp / sizeof tmp[0]; i++)
        remove(tmp[i]);
    free(z);
    free(orig);
}

int main(void)
{
    test_read_numpy_files();
    test_read_numpy_npz();
    test_round_trip();
    test_malformed_npy();
    test_malformed_npz();
    return test_done("test_io_npy");
}
