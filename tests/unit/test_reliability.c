/*
 * Unit tests for the library pieces the reliability findings of issue #8
 * rest on: the escaping printer (untrusted names never reach a terminal
 * raw), budgets (reservations balance, limits refuse before allocating,
 * deadlines), strings that carry their length through .npy and .pb, atomic
 * writes and regular-file-only opens. tests/scripts/reliability.sh covers
 * the same findings end to end through the CLI.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "convgate/budget.h"
#include "convgate/tensor.h"
#include "convgate/tensor_io.h"
#include "core/file.h"
#include "core/text.h"
#include "testlib.h"

static void test_escape(void)
{
    char buf[256];
    cg_text_escape(buf, sizeof buf, "plain_name.0", 12);
    EXPECT(strcmp(buf, "plain_name.0") == 0, "'%s'", buf);
    const char esc[] = "a\x1b[2Jb\nVERDICT: PASS\r\t\x7f";
    cg_text_escape(buf, sizeof buf, esc, sizeof esc - 1);
    EXPECT(strcmp(buf, "a\\x1b[2Jb\\nVERDICT: PASS\\r\\t\\x7f") == 0, "'%s'", buf);
    /* valid UTF-8 stays; invalid bytes, C1 controls and bidi overrides do not */
    const char u[] = "h\xc3\xa9 \xff \xc2\x9b \xe2\x80\xae";
    cg_text_escape(buf, sizeof buf, u, sizeof u - 1);
    EXPECT(strcmp(buf, "h\xc3\xa9 \\xff \\u009b \\u202e") == 0, "'%s'", buf);
    /* a NUL inside a length-carrying string shows, and nothing is cut mid-escape */
    cg_text_escape(buf, 6, "ab\x01" "cd", 5);
    EXPECT(strcmp(buf, "ab") == 0, "cut mid-escape: '%s'", buf);
    EXPECT(cg_text_escape(NULL, 0, "a\0b", 3) == 6, "needed length");

    /* the printer escapes every %s and keeps widths and numbers */
    FILE *f = tmpfile();
    EXPECT(f != NULL, "tmpfile");
    if (!f)
        return;
    cg_text_printf(f, "[%-6s|%3d|%.2f|%s|%zu|%c|%.3s]", "x\ny", 7, 1.5, "\x1b]0;t\x07", (size_t)9,
                   '\x1b', "abc\x1bzzz");
    rewind(f);
    char got[256] = "";
    size_t n = fread(got, 1, sizeof got - 1, f);
    got[n] = '\0';
    fclose(f);
    EXPECT(strcmp(got, "[x\\ny  |  7|1.50|\\x1b]0;t\\x07|9|\\x1b|abc]") == 0, "'%s'", got);
}

static void test_budget(void)
{
    cg_error err;
    cg_error_clear(&err);
    cg_budget *b = cg_budget_new(1000, 0);
    EXPECT(b != NULL, "new");
    if (!b)
        return;
    EXPECT(cg_budget_reserve(b, 600, "a", &err) == CG_OK, "%s", err.msg);
    EXPECT(cg_budget_fits(b, 400) && !cg_budget_fits(b, 401), "fits");
    EXPECT(cg_budget_reserve(b, 401, "the second", &err) == CG_LIMIT, "over the limit");
    EXPECT(strstr(err.msg, "the second") && strstr(err.msg, "1000"), "message: %s", err.msg);
    EXPECT(cg_budget_in_use(b) == 600, "a refused reservation takes nothing");
    cg_budget_release(b, 600);
    EXPECT(cg_budget_in_use(b) == 0 && cg_budget_peak(b) == 600, "released, peak kept");
    cg_budget_release(b, 5); /* never below zero */
    EXPECT(cg_budget_in_use(b) == 0, "underflow");
    EXPECT(!cg_budget_expired(b) && cg_budget_seconds(b) == 0, "no deadline");
    cg_budget_set(b, 0, 0.05);
    EXPECT(cg_budget_left(b) == UINT64_MAX, "unlimited memory");
    struct timespec ts = {0, 80 * 1000 * 1000};
    nanosleep(&ts, NULL);
    EXPECT(cg_budget_expired(b) && cg_budget_seconds(b) == 0.05, "deadline passed");
    cg_budget_free(b);
    EXPECT(cg_budget_default_bytes() > 0, "default from physical memory");
}

static void test_strings(void)
{
    cg_error err;
    cg_error_clear(&err);
    int64_t dims[1] = {3};
    cg_tensor t, back;
    EXPECT(cg_tensor_alloc(&t, CG_DTYPE_STRING, 1, dims, 0, &err) == CG_OK, "%s", err.msg);
    if (cg_tensor_set_string(&t, 0, "a\0b", 3) != CG_OK ||
        cg_tensor_set_string(&t, 1, "", 0) != CG_OK ||
        cg_tensor_set_string(&t, 2, "h\xc3\xa9", 3) != CG_OK)
        test_fatal("cg_tensor_set_string");
    size_t len;
    EXPECT(memcmp(cg_tensor_string(&t, 0, &len), "a\0b", 3) == 0 && len == 3, "set/get");
    EXPECT(cg_string_compare("a\0b", 3, "a\0c", 3) < 0 && cg_string_compare("a", 1, "a\0", 2) < 0,
           "compare past a NUL");
    /* through .npy and back: the NUL survives (NumPy only drops trailing NULs) */
    uint8_t *bytes = NULL;
    size_t n = 0;
    EXPECT(cg_npy_serialize(&t, &bytes, &n, &err) == CG_OK, "%s", err.msg);
    EXPECT(cg_npy_parse(bytes, n, "mem", 0, &back, &err) == CG_OK, "%s", err.msg);
    free(bytes);
    for (int64_t i = 0; i < 3 && back.numel == 3; i++) {
        size_t la, lb;
        const char *a = cg_tensor_string(&t, i, &la), *b = cg_tensor_string(&back, i, &lb);
        EXPECT(cg_string_compare(a, la, b, lb) == 0, "element %lld changed", (long long)i);
    }
    cg_value *v = NULL;
    EXPECT(cg_value_from_tensor(&back, &v, &err) == CG_OK, "wrap");
    /* the heap bytes a budget counts: the array plus each non-empty string */
    EXPECT(cg_value_bytes(v) == 3 * sizeof(cg_string) + cg_string_heap_bytes(3) * 2,
           "value bytes %llu", (unsigned long long)cg_value_bytes(v));
    cg_value_free(v);
    cg_tensor_release(&t);
}

static void test_files(void)
{
    cg_error err;
    char dir[] = "/tmp/cg_rel_XXXXXX";
    EXPECT(mkdtemp(dir) != NULL, "mkdtemp");
    char path[256], fifo[256], link[256];
    snprintf(path, sizeof path, "%s/out.bin", dir);
    snprintf(fifo, sizeof fifo, "%s/fifo", dir);
    snprintf(link, sizeof link, "%s/link", dir);
    cg_error_clear(&err);
    EXPECT(cg_atomic_write(path, "first", 5, &err) == CG_OK, "%s", err.msg);
    /* a failed write (the temporary abandoned) leaves the old file */
    cg_atomic_file af;
    EXPECT(cg_atomic_begin(&af, path, &err) == CG_OK, "%s", err.msg);
    fputs("second, never committed", af.f);
    cg_atomic_abort(&af);
    char *buf = NULL;
    size_t len = 0;
    EXPECT(cg_file_read_all(path, 100, &buf, &len, &err) == CG_OK && len == 5 &&
               memcmp(buf, "first", 5) == 0, "old content kept");
    free(buf);
    /* a FIFO is refused at once, never waited on */
    EXPECT(mkfifo(fifo, 0600) == 0, "mkfifo");
    cg_error_clear(&err);
    EXPECT(cg_file_open_read(fifo, NULL, &err) < 0 && strstr(err.msg, "FIFO"), "%s", err.msg);
    /* beneath a folder, a link is refused; so is writing over one */
    EXPECT(symlink(path, link) == 0, "symlink");
    cg_error_clear(&err);
    EXPECT(cg_file_open_beneath(dir, "link", NULL, &err) < 0 && err.status == CG_SECURITY,
           "%s", err.msg);
    cg_error_clear(&err);
    EXPECT(cg_atomic_write(link, "x", 1, &err) == CG_SECURITY, "wrote through a link");
    unlink(link);
    unlink(fifo);
    unlink(path);
    rmdir(dir);
}

/* Setting an element of a dtype neither setter handles itself: set_i64
 * handed it to set_f64, which handed it back, forever (a fused RELU6 on a
 * complex64 CONV_2D output in a fuzzed .tflite hung the lowering). */
static void test_set_element_dtypes(void)
{
    cg_tensor t;
    cg_error e;
    const int64_t two[1] = {2};
    EXPECT(cg_tensor_alloc(&t, CG_DTYPE_COMPLEX64, 1, two, 0, &e) == CG_OK, "%s", e.msg);
    cg_tensor_set_i64(&t, 1, 6);
    cg_tensor_set_f64(&t, 0, -1.5);
    const float *c = t.data;
    EXPECT(c[0] == -1.5f && c[1] == 0.0f && c[2] == 6.0f && c[3] == 0.0f,
           "complex64 elements: %g%+gi %g%+gi", c[0], c[1], c[2], c[3]);
    cg_tensor_release(&t);
    EXPECT(cg_tensor_alloc(&t, CG_DTYPE_COMPLEX128, 1, two, 0, &e) == CG_OK, "%s", e.msg);
    cg_tensor_set_i64(&t, 0, -3);
    EXPECT(((const double *)t.data)[0] == -3.0 && ((const double *)t.data)[1] == 0.0,
           "complex128 element");
    cg_tensor_release(&t);
    EXPECT(cg_tensor_alloc(&t, CG_DTYPE_FLOAT8E4M3FN, 1, two, 0, &e) == CG_OK, "%s", e.msg);
    ((uint8_t *)t.data)[0] = 0x5a;
    cg_tensor_set_i64(&t, 0, 7); /* returns, leaves the byte */
    cg_tensor_set_f64(&t, 1, 7.0);
    EXPECT(((const uint8_t *)t.data)[0] == 0x5a, "float8 element left as it was");
    cg_tensor_release(&t);
    EXPECT(cg_tensor_alloc(&t, CG_DTYPE_INT16, 1, two, 0, &e) == CG_OK, "%s", e.msg);
    cg_tensor_set_f64(&t, 0, -2.75);
    cg_tensor_set_i64(&t, 1, 300);
    EXPECT(((const int16_t *)t.data)[0] == -2 && ((const int16_t *)t.data)[1] == 300,
           "int16 elements");
    cg_tensor_release(&t);
}

int main(void)
{
    test_set_element_dtypes();
    test_escape();
    test_budget();
    test_strings();
    test_files();
    return test_done("test_reliability");
}
