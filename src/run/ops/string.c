/*
 * String kernels: StringNormalizer (opset 10) and TfIdfVectorizer (opset 9).
 *
 * Case mapping covers ASCII and the Latin-1 letters of UTF-8 (U+00C0..U+00FE
 * minus the multiplication and division signs); other bytes pass through
 * unchanged, so invalid or non-Latin UTF-8 is never corrupted. The locale
 * attribute is accepted and otherwise ignored.
 *
 * TfIdfVectorizer counts, per row, every n-gram (min_gram_length ..
 * max_gram_length items, taken with a stride of 1 .. max_skip_count + 1)
 * that occurs in the pool; unigrams are counted once, whatever the skip.
 */
#include <string.h>

#include "run/ops/kernels.h"
#include "run/ops/misc_common.h"

/* ---- StringNormalizer ------------------------------------------------------ */

/* Writes s (len bytes) case-mapped into out (same length: the Latin-1
 * mapping keeps each letter two bytes). mode: 0 none, 1 lower, 2 upper. */
static void str_case(const char *s, size_t len, int mode, char *out)
{
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)s[i];
        if (mode == 1 && c >= 'A' && c <= 'Z')
            c = (unsigned char)(c + 32);
        else if (mode == 2 && c >= 'a' && c <= 'z')
            c = (unsigned char)(c - 32);
        else if (c == 0xC3 && i + 1 < len) {
            /* U+00C0..U+00DE are 0xC3 0x80..0x9E; lowercase adds 0x20. */
            unsigned char d = (unsigned char)s[i + 1];
            if (mode == 1 && d >= 0x80 && d <= 0x9E && d != 0x97)
                d = (unsigned char)(d + 0x20);
            else if (mode == 2 && d >= 0xA0 && d <= 0xBE && d != 0xB7)
                d = (unsigned char)(d - 0x20);
            out[i] = (char)c;
            out[++i] = (char)d;
            continue;
        }
        out[i] = (char)c;
    }
}

cg_status cg_op_stringnormalizer(cg_kernel_ctx *k)
{
    const cg_tensor *X;
    cg_status st;
    if ((st = cg_kernel_require(k, 0, &X)))
        return st;
    if (X->dtype != CG_DTYPE_STRING)
        return cg_kernel_fail(k, CG_INVALID, "input must be a string tensor");
    if (!(X->rank == 1 || (X->rank == 2 && X->dims[0] == 1)))
        return cg_kernel_fail(k, CG_INVALID, "input must have shape [C] or [1, C]");
    const char *act = cg_attr_string(k, "case_change_action", "NONE");
    int mode = strcmp(act, "NONE") == 0 ? 0 : strcmp(act, "LOWER") == 0 ? 1
               : strcmp(act, "UPPER") == 0 ? 2 : -1;
    if (mode < 0)
        return cg_kernel_fail(k, CG_INVALID, "unknown case_change_action '%s'", act);
    bool sensitive = cg_attr_int(k, "is_case_sensitive", 0) != 0;
    const cg_attr *sw = cg_kernel_attr(k, "stopwords");
    size_t nsw = sw ? sw->strings_count : 0;
    int64_t C = X->dims[X->rank - 1];
    uint8_t *keep = cg_kernel_scratch(k, (size_t)(C ? C : 1));
    if (!keep)
        return cg_kernel_fail(k, CG_NOMEM, "out of scratch memory");
    /* Lowercased stopwords for the case-insensitive comparison. */
    char **swl = NULL;
    if (nsw && !sensitive) {
        swl = cg_kernel_scratch(k, nsw * sizeof(char *));
        if (!swl)
            return cg_kernel_fail(k, CG_NOMEM, "out of scratch memory");
        for (size_t j = 0; j < nsw; j++) {
            swl[j] = cg_kernel_scratch(k, sw->strings[j].len + 1);
            if (!swl[j])
                return cg_kernel_fail(k, CG_NOMEM, "out of scratch memory");
            str_case((const char *)sw->strings[j].data, sw->strings[j].len, 1, swl[j]);
            swl[j][sw->strings[j].len] = '\0';
        }
    }
    int64_t kept = 0;
    size_t maxlen = 0;
    for (int64_t i = 0; i < C; i++) {
        size_t len;
        const char *s = cg_tensor_string(X, i, &len);
        if (len > maxlen)
            maxlen = len;
        keep[i] = 1;
        char *low = NULL;
        if (!sensitive && nsw) {
            low = cg_kernel_scratch(k, len + 1);
            if (!low)
                return cg_kernel_fail(k, CG_NOMEM, "out of scratch memory");
            str_case(s, len, 1, low);
            low[len] = '\0';
        }
        for (size_t j = 0; j < nsw && keep[i]; j++) {
            if (sensitive) {
                if (sw->strings[j].len == len && memcmp(sw->strings[j].data, s, len) == 0)
                    keep[i] = 0;
            } else if (sw->strings[j].len == len && memcmp(swl[j], low, len) == 0) {
                keep[i] = 0;
            }
        }
        kept += keep[i];
    }
    /* Everything filtered out: the spec's single empty string. */
    int64_t od[2] = {1, kept ? kept : 1};
    cg_tensor *Y;
    if ((st = cg_kernel_output(k, 0, CG_DTYPE_STRING, X->rank, X->rank == 2 ? od : od + 1, &Y)))
        return st;
    if (!kept)
        return cg_tensor_set_string(Y, 0, "", 0);
    char *buf = cg_kernel_scratch(k, maxlen + 1);
    if (!buf)
        return cg_kernel_fail(k, CG_NOMEM, "out of scratch memory");
    int64_t o = 0;
    for (int64_t i = 0; i < C; i++) {
        if (!keep[i])
            continue;
        size_t len;
        const char *s = cg_tensor_string(X, i, &len);
        str_case(s, len, mode, buf);
        if ((st = cg_tensor_set_string(Y, o++, buf, len)))
            return cg_kernel_fail(k, st, "cannot store output string %lld", (long long)(o - 1));
    }
    return CG_OK;
}

/* ---- TfIdfVectorizer -------------------------------------------------------- */

typedef struct tfidf {
    const cg_tensor *X;
    bool strings;
    const int64_t *pool_i;
    const cg_bytes *pool_s;
    int64_t pool_n;
} tfidf;

/* True when input item xi equals pool item pj. */
static bool tfidf_eq(const tfidf *t, int64_t xi, int64_t pj)
{
    if (!t->strings)
        return cg_tensor_get_i64(t->X, xi) == t->pool_i[pj];
    size_t len;
    const char *s = cg_tensor_string(t->X, xi, &len);
    return t->pool_s[pj].len == len && memcmp(t->pool_s[pj].data, s, len) == 0;
}

cg_status cg_op_tfidfvectorizer(cg_kernel_ctx *k)
{
    const cg_tensor *X;
    cg_status st;
    if ((st = cg_kernel_require(k, 0, &X)))
        return st;
    tfidf t = {X, X->dtype == CG_DTYPE_STRING, NULL, NULL, 0};
    if (!t.strings && X->dtype != CG_DTYPE_INT32 && X->dtype != CG_DTYPE_INT64)
        return cg_kernel_fail(k, CG_INVALID, "input must be string, int32 or int64");
    if (X->rank != 1 && X->rank != 2)
        return cg_kernel_fail(k, CG_INVALID, "input must have rank 1 or 2");
    int64_t minn = cg_attr_int(k, "min_gram_length", 0), maxn = cg_attr_int(k, "max_gram_length", 0);
    int64_t maxskip = cg_attr_int(k, "max_skip_count", 0);
    if (minn < 1 || maxn < minn || maxskip < 0 || maxskip > (INT64_C(1) << 32))
        return cg_kernel_fail(k, CG_INVALID,
                              "need 1 <= min_gram_length <= max_gram_length and max_skip_count >= 0");
    const char *ms = cg_attr_string(k, "mode", "");
    int mode = strcmp(ms, "TF") == 0 ? 0 : strcmp(ms, "IDF") == 0 ? 1 : strcmp(ms, "TFIDF") == 0 ? 2 : -1;
    if (mode < 0)
        return cg_kernel_fail(k, CG_INVALID, "unknown mode '%s'", ms);
    size_t ncounts = 0, nidx = 0, nw = 0;
    const int64_t *counts = cg_attr_ints(k, "ngram_counts", &ncounts);
    const int64_t *indexes = cg_attr_ints(k, "ngram_indexes", &nidx);
    const float *weights = cg_attr_floats(k, "weights", &nw);
    const cg_attr *ps = cg_kernel_attr(k, "pool_strings");
    size_t npi = 0;
    t.pool_i = cg_attr_ints(k, "pool_int64s", &npi);
    if (t.strings) {
        if (!ps)
            return cg_kernel_fail(k, CG_INVALID, "string input needs pool_strings");
        t.pool_s = ps->strings;
        t.pool_n = (int64_t)ps->strings_count;
    } else {
        if (!t.pool_i && npi == 0 && !cg_kernel_attr(k, "pool_int64s"))
            return cg_kernel_fail(k, CG_INVALID, "integer input needs pool_int64s");
        t.pool_n = (int64_t)npi;
    }
    if (weights && nw != nidx)
        return cg_kernel_fail(k, CG_INVALID, "weights has %zu values for %zu ngram_indexes", nw, nidx);
    int64_t width = 0;
    for (size_t i = 0; i < nidx; i++) {
        if (indexes[i] < 0 || indexes[i] > (INT64_C(1) << 40))
            return cg_kernel_fail(k, CG_INVALID, "ngram_indexes[%zu] = %lld is out of range", i,
                                  (long long)indexes[i]);
        if (indexes[i] + 1 > width)
            width = indexes[i] + 1;
    }
    /* Group g holds (g+1)-grams in pool items [counts[g], counts[g+1]). */
    int64_t gram_total = 0;
    for (size_t g = 0; g < ncounts; g++) {
        int64_t start = counts[g], end = g + 1 < ncounts ? counts[g + 1] : t.pool_n;
        if (start < 0 || end < start || end > t.pool_n || (end - start) % (int64_t)(g + 1) != 0)
            return cg_kernel_fail(k, CG_INVALID, "ngram_counts[%zu] = %lld does not split the pool "
                                                 "into %zu-grams", g, (long long)start, g + 1);
        gram_total += (end - start) / (int64_t)(g + 1);
    }
    if (gram_total != (int64_t)nidx)
        return cg_kernel_fail(k, CG_INVALID, "the pool has %lld n-grams but ngram_indexes has %zu",
                              (long long)gram_total, nidx);
    int64_t rows = X->rank == 2 ? X->dims[0] : 1, C = X->dims[X->rank - 1];
    int64_t od[2] = {rows, width};
    cg_tensor *Y;
    if ((st = cg_kernel_output(k, 0, cg_kernel_float_dtype(k, CG_DTYPE_FLOAT), X->rank,
                               X->rank == 2 ? od : od + 1, &Y)))
        return st;
    /* Counted and weighted in double, stored once: a count times a float
     * weight is exact in double, so float32 outputs round exactly as a float
     * product would, and the float64 mode keeps the exact value. */
    double *y = cg_kernel_scratch(k, (size_t)Y->numel * sizeof(double) + 1);
    if (!y)
        return cg_kernel_fail(k, CG_NOMEM, "out of memory");
    memset(y, 0, (size_t)Y->numel * sizeof(double));
    for (int64_t r = 0; r < rows; r++) {
        int64_t row = r * C;
        double *yr = y + r * width;
        int64_t gram_base = 0;
        for (size_t g = 0; g < ncounts; g++) {
            int64_t n = (int64_t)g + 1;
            int64_t start = counts[g], end = g + 1 < ncounts ? counts[g + 1] : t.pool_n;
            int64_t ngr = (end - start) / n;
            if (n >= minn && n <= maxn) {
                int64_t maxstride = n == 1 ? 1 : maxskip + 1;
                for (int64_t stride = 1; stride <= maxstride; stride++)
                    for (int64_t s = 0; s + (n - 1) * stride < C; s++)
                        for (int64_t q = 0; q < ngr; q++) {
                            int64_t m = 0;
                            while (m < n && tfidf_eq(&t, row + s + m * stride, start + q * n + m))
                                m++;
                            if (m == n)
                                yr[indexes[gram_base + q]] += 1.0;
                        }
            }
            gram_base += ngr;
        }
        /* Weighting: TF keeps counts; IDF gives the weight once present. */
        for (size_t i = 0; i < nidx; i++) {
            int64_t o = indexes[i];
            double w = weights ? weights[i] : 1.0;
            if (mode == 1)
                yr[o] = yr[o] > 0 ? w : 0.0;
            else if (mode == 2)
                yr[o] = yr[o] * w;
        }
    }
    for (int64_t i = 0; i < Y->numel; i++)
        cg_tensor_set_f64(Y, i, y[i]);
    return CG_OK;
}
