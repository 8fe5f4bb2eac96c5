/*
 * NumPy .npy files (format versions 1.0, 2.0 and 3.0).
 *
 * Layout: "\x93NUMPY", major, minor, a little-endian header length (2 bytes
 * in 1.0, 4 in 2.0/3.0), then a Python dict literal
 *   {'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }
 * padded with spaces and a newline, then the raw elements. The reader parses
 * that literal with a small dedicated scanner (never eval-like), demands the
 * three keys exactly once, checks every dimension and the element count for
 * overflow, and requires the payload to be exactly numel * itemsize bytes
 * before allocating anything.
 */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "io/io_internal.h"

static const uint8_t npy_magic[6] = {0x93, 'N', 'U', 'M', 'P', 'Y'};

/* --- header scanning -------------------------------------------------------- */

typedef struct npy_scan {
    const char *p, *end;
} npy_scan;

static void scan_ws(npy_scan *s)
{
    while (s->p < s->end && (*s->p == ' ' || *s->p == '\t' || *s->p == '\n' || *s->p == '\r'))
        s->p++;
}

/* Consumes c after optional whitespace; false if the next char differs. */
static bool scan_char(npy_scan *s, char c)
{
    scan_ws(s);
    if (s->p < s->end && *s->p == c) {
        s->p++;
        return true;
    }
    return false;
}

/* A quoted Python string without escapes ('...' or "..."), copied to buf. */
static bool scan_string(npy_scan *s, char *buf, size_t cap)
{
    scan_ws(s);
    if (s->p >= s->end || (*s->p != '\'' && *s->p != '"'))
        return false;
    char q = *s->p++;
    size_t n = 0;
    while (s->p < s->end && *s->p != q) {
        if (*s->p == '\\' || n + 1 >= cap)
            return false;
        buf[n++] = *s->p++;
    }
    if (s->p >= s->end)
        return false;
    s->p++;
    buf[n] = '\0';
    return true;
}

static bool scan_word(npy_scan *s, const char *w)
{
    size_t n = strlen(w);
    scan_ws(s);
    if ((size_t)(s->end - s->p) >= n && memcmp(s->p, w, n) == 0) {
        s->p += n;
        return true;
    }
    return false;
}

/* A non-negative decimal integer below 2^62 (optionally suffixed 'L'). */
static bool scan_dim(npy_scan *s, int64_t *out)
{
    int64_t v = 0;
    scan_ws(s);
    if (s->p >= s->end || !isdigit((unsigned char)*s->p))
        return false;
    while (s->p < s->end && isdigit((unsigned char)*s->p)) {
        if (v > ((int64_t)1 << 62) / 10)
            return false;
        v = v * 10 + (*s->p++ - '0');
    }
    if (s->p < s->end && *s->p == 'L')
        s->p++;
    *out = v;
    return true;
}

/* "(d0, d1, ...)" with an optional trailing comma; "()" is a scalar. */
static bool scan_shape(npy_scan *s, int *rank, int64_t *dims)
{
    int r = 0;
    if (!scan_char(s, '('))
        return false;
    for (;;) {
        if (scan_char(s, ')'))
            break;
        if (r >= CG_MAX_RANK)
            return false;
        if (!scan_dim(s, &dims[r]))
            return false;
        r++;
        if (scan_char(s, ','))
            continue;
        if (!scan_char(s, ')'))
            return false;
        break;
    }
    *rank = r;
    return true;
}

/* --- dtype descriptors -------------------------------------------------------- */

typedef enum npy_kind { NPY_NUM, NPY_UNICODE, NPY_BYTES } npy_kind;

typedef struct npy_type {
    cg_dtype dtype;
    npy_kind kind;
    size_t itemsize; /* bytes per element in the file */
    bool swap;       /* file byte order differs from the host's */
    bool little;     /* file byte order is little-endian */
} npy_type;

static bool host_is_little(void)
{
    const uint16_t one = 1;
    return *(const uint8_t *)&one == 1;
}

static bool parse_descr(const char *d, npy_type *t)
{
    char order = d[0];
    if (order != '<' && order != '>' && order != '|' && order != '=')
        return false;
    char kind = d[1];
    if (!kind)
        return false;
    const char *num = d + 2;
    size_t size = 0;
    if (!*num)
        return false;
    for (const char *p = num; *p; p++) {
        if (!isdigit((unsigned char)*p) || size > 100000000)
            return false;
        size = size * 10 + (size_t)(*p - '0');
    }
    bool file_little = order == '<' || ((order == '|' || order == '=') && host_is_little());
    t->swap = file_little != host_is_little();
    t->little = file_little;
    t->kind = NPY_NUM;
    t->itemsize = size;
    switch (kind) {
    case 'b': t->dtype = size == 1 ? CG_DTYPE_BOOL : CG_DTYPE_UNDEFINED; break;
    case 'i':
        t->dtype = size == 1 ? CG_DTYPE_INT8 : size == 2 ? CG_DTYPE_INT16
                 : size == 4 ? CG_DTYPE_INT32 : size == 8 ? CG_DTYPE_INT64 : CG_DTYPE_UNDEFINED;
        break;
    case 'u':
        t->dtype = size == 1 ? CG_DTYPE_UINT8 : size == 2 ? CG_DTYPE_UINT16
                 : size == 4 ? CG_DTYPE_UINT32 : size == 8 ? CG_DTYPE_UINT64 : CG_DTYPE_UNDEFINED;
        break;
    case 'f':
        t->dtype = size == 2 ? CG_DTYPE_FLOAT16 : size == 4 ? CG_DTYPE_FLOAT
                 : size == 8 ? CG_DTYPE_DOUBLE : CG_DTYPE_UNDEFINED;
        break;
    case 'c':
        t->dtype = size == 8 ? CG_DTYPE_COMPLEX64 : size == 16 ? CG_DTYPE_COMPLEX128
                 : CG_DTYPE_UNDEFINED;
        break;
    case 'U':
        /* U<n>: n UCS-4 code units per element. */
        if (size > SIZE_MAX / 4)
            return false;
        t->dtype = CG_DTYPE_STRING;
        t->kind = NPY_UNICODE;
        t->itemsize = size * 4;
        break;
    case 'S':
        t->dtype = CG_DTYPE_STRING;
        t->kind = NPY_BYTES;
        break;
    default: t->dtype = CG_DTYPE_UNDEFINED; break;
    }
    return t->dtype != CG_DTYPE_UNDEFINED;
}

/* --- element conversion --------------------------------------------------------- */

/* Appends code point cp as UTF-8; false for surrogates or cp > 0x10FFFF. */
static bool utf8_put(char *out, size_t *n, uint32_t cp)
{
    if (cp < 0x80) {
        out[(*n)++] = (char)cp;
    } else if (cp < 0x800) {
        out[(*n)++] = (char)(0xC0 | cp >> 6);
        out[(*n)++] = (char)(0x80 | (cp & 0x3F));
    } else if (cp < 0x10000) {
        if (cp >= 0xD800 && cp <= 0xDFFF)
            return false;
        out[(*n)++] = (char)(0xE0 | cp >> 12);
        out[(*n)++] = (char)(0x80 | ((cp >> 6) & 0x3F));
        out[(*n)++] = (char)(0x80 | (cp & 0x3F));
    } else if (cp <= 0x10FFFF) {
        out[(*n)++] = (char)(0xF0 | cp >> 18);
        out[(*n)++] = (char)(0x80 | ((cp >> 12) & 0x3F));
        out[(*n)++] = (char)(0x80 | ((cp >> 6) & 0x3F));
        out[(*n)++] = (char)(0x80 | (cp & 0x3F));
    } else {
        return false;
    }
    return true;
}

/* One fixed-width element as malloc'd UTF-8 bytes in *out (NULL when
 * empty): NumPy drops trailing NULs, any other NUL is part of the string.
 * 0 ok, 1 invalid Unicode, 2 out of memory. */
static int decode_string(const uint8_t *src, const npy_type *nt, char **out, size_t *len)
{
    *out = NULL;
    *len = 0;
    size_t units = nt->kind == NPY_UNICODE ? nt->itemsize / 4 : nt->itemsize;
    while (units > 0) {
        const uint8_t *u = src + (units - 1) * (nt->kind == NPY_UNICODE ? 4 : 1);
        bool zero = nt->kind == NPY_UNICODE ? (u[0] | u[1] | u[2] | u[3]) == 0 : u[0] == 0;
        if (!zero)
            break;
        units--;
    }
    if (units == 0)
        return 0;
    /* At most 4 UTF-8 bytes per code point; units <= itemsize, no overflow. */
    char *s = malloc(nt->kind == NPY_UNICODE ? units * 4 + 1 : units + 1);
    size_t n = 0;
    if (!s)
        return 2;
    for (size_t i = 0; i < units; i++) {
        if (nt->kind == NPY_BYTES) {
            s[n++] = (char)src[i];
            continue;
        }
        const uint8_t *u = src + 4 * i;
        uint32_t cp = nt->little ? cg_io_le32(u)
                                 : (uint32_t)u[3] | (uint32_t)u[2] << 8 | (uint32_t)u[1] << 16 |
                                       (uint32_t)u[0] << 24;
        if (!utf8_put(s, &n, cp)) {
            free(s);
            return 1;
        }
    }
    s[n] = '\0';
    *out = s;
    *len = n;
    return 0;
}

static void swap_bytes(uint8_t *p, size_t width)
{
    for (size_t i = 0; i < width / 2; i++) {
        uint8_t tmp = p[i];
        p[i] = p[width - 1 - i];
        p[width - 1 - i] = tmp;
    }
}

/* Index in a C-ordered array of the element at Fortran-order position f. */
static int64_t fortran_to_c(int64_t f, int rank, const int64_t *dims)
{
    int64_t c = 0, stride = 1;
    int64_t idx[CG_MAX_RANK];
    for (int d = 0; d < rank; d++) {
        idx[d] = f % dims[d];
        f /= dims[d];
    }
    for (int d = rank - 1; d >= 0; d--) {
        c += idx[d] * stride;
        stride *= dims[d];
    }
    return c;
}

/* --- reading ------------------------------------------------------------------------ */

cg_status cg_npy_parse(const void *data, size_t size, const char *what, size_t max_bytes,
                       cg_tensor *out, cg_error *err)
{
    const uint8_t *b = data;
    cg_status st = CG_OK;
    cg_tensor t;
    memset(&t, 0, sizeof t);
    memset(out, 0, sizeof *out);
    if (size < 10 || memcmp(b, npy_magic, 6) != 0)
        return cg_error_set(err, CG_PARSE, "%s: not a .npy file (bad magic)", what);
    uint8_t major = b[6];
    size_t hstart, hlen;
    if (major == 1) {
        hstart = 10;
        hlen = cg_io_le16(b + 8);
    } else if (major == 2 || major == 3) {
        if (size < 12)
            return cg_error_set(err, CG_PARSE, "%s: truncated .npy header", what);
        hstart = 12;
        hlen = cg_io_le32(b + 8);
    } else {
        return cg_error_set(err, CG_UNSUPPORTED, "%s: .npy format version %u.%u not supported",
                            what, major, b[7]);
    }
    if (hlen > size - hstart)
        return cg_error_set(err, CG_PARSE,
                            "%s: truncated .npy header (declares %zu bytes, %zu present)", what,
                            hlen, size - hstart);

    npy_scan s = {(const char *)b + hstart, (const char *)b + hstart + hlen};
    char key[32], descr[64];
    bool have_descr = false, have_order = false, have_shape = false, fortran = false;
    int rank = 0;
    int64_t dims[CG_MAX_RANK];
    if (!scan_char(&s, '{'))
        return cg_error_set(err, CG_PARSE, "%s: .npy header is not a dict", what);
    while (!scan_char(&s, '}')) {
        if (!scan_string(&s, key, sizeof key) || !scan_char(&s, ':'))
            return cg_error_set(err, CG_PARSE, "%s: malformed .npy header dict", what);
        if (strcmp(key, "descr") == 0 && !have_descr) {
            if (!scan_string(&s, descr, sizeof descr))
                return cg_error_set(err, CG_UNSUPPORTED,
                                    "%s: structured or unreadable .npy 'descr'", what);
            have_descr = true;
        } else if (strcmp(key, "fortran_order") == 0 && !have_order) {
            if (scan_word(&s, "True"))
                fortran = true;
            else if (!scan_word(&s, "False"))
                return cg_error_set(err, CG_PARSE, "%s: bad .npy 'fortran_order'", what);
            have_order = true;
        } else if (strcmp(key, "shape") == 0 && !have_shape) {
            if (!scan_shape(&s, &rank, dims))
                return cg_error_set(err, CG_PARSE,
                                    "%s: bad .npy 'shape' (expects a tuple of at most %d "
                                    "non-negative integers)", what, CG_MAX_RANK);
            have_shape = true;
        } else {
            return cg_error_set(err, CG_PARSE, "%s: unexpected or repeated .npy header key '%s'",
                                what, key);
        }
        if (!scan_char(&s, ',')) {
            if (!scan_char(&s, '}'))
                return cg_error_set(err, CG_PARSE, "%s: malformed .npy header dict", what);
            break;
        }
    }
    if (!have_descr || !have_order || !have_shape)
        return cg_error_set(err, CG_PARSE, "%s: .npy header lacks '%s'", what,
                            !have_descr ? "descr" : !have_order ? "fortran_order" : "shape");
    scan_ws(&s);
    if (s.p != s.end)
        return cg_error_set(err, CG_PARSE, "%s: trailing bytes in .npy header", what);

    npy_type nt;
    if (!parse_descr(descr, &nt))
        return cg_error_set(err, CG_UNSUPPORTED, "%s: .npy dtype '%s' is not supported", what,
                            descr);
    if (nt.kind == NPY_NUM && nt.itemsize != cg_dtype_size(nt.dtype))
        return cg_error_set(err, CG_UNSUPPORTED, "%s: .npy dtype '%s' is not supported", what,
                            descr);
    int64_t numel;
    if (!cg_shape_numel(rank, dims, &numel) ||
        (nt.itemsize && (uint64_t)numel > SIZE_MAX / nt.itemsize))
        return cg_error_set(err, CG_PARSE, "%s: .npy shape overflows", what);
    size_t payload = (size_t)numel * nt.itemsize;
    size_t have = size - hstart - hlen;
    if (payload != have)
        return cg_error_set(err, CG_PARSE,
                            "%s: .npy shape and dtype '%s' need %zu data bytes, file has %zu",
                            what, descr, payload, have);

    st = cg_tensor_alloc(&t, nt.dtype, rank, dims, cg_io_limit(max_bytes), err);
    if (st != CG_OK) {
        cg_error_prefix(err, "%s: ", what);
        return st;
    }
    const uint8_t *src = b + hstart + hlen;
    size_t es = cg_tensor_elem_size(nt.dtype);
    /* Strings are allocated one by one: the limit covers them all, with a
     * heap block's overhead each, not just the element array (a small
     * compressed file of many short strings must not take gigabytes). */
    size_t total = cg_tensor_bytes(&t), limit = cg_io_limit(max_bytes);
    for (int64_t i = 0; i < numel; i++) {
        int64_t dst = fortran ? fortran_to_c(i, rank, dims) : i;
        const uint8_t *e = src + (size_t)i * nt.itemsize;
        if (nt.dtype == CG_DTYPE_STRING) {
            size_t len = 0;
            char *str = NULL;
            int bad = decode_string(e, &nt, &str, &len);
            if (bad) {
                st = bad == 1 ? cg_error_set(err, CG_PARSE, "%s: element %lld is not valid "
                                             "Unicode", what, (long long)i)
                              : cg_error_set(err, CG_NOMEM, "%s: out of memory", what);
                goto fail;
            }
            cg_string *slot = &((cg_string *)t.data)[dst];
            slot->data = str;
            slot->len = len;
            total += str ? cg_string_heap_bytes(len) : 0;
            if (total > limit) {
                st = cg_error_set(err, CG_LIMIT, "%s: the strings take over the limit of %zu "
                                  "bytes (element %lld)", what, limit, (long long)i);
                goto fail;
            }
            continue;
        }
        uint8_t *d = (uint8_t *)t.data + (size_t)dst * es;
        memcpy(d, e, es);
        if (nt.swap) {
            /* complex: each of the two parts is swapped on its own */
            size_t part = nt.dtype == CG_DTYPE_COMPLEX64 || nt.dtype == CG_DTYPE_COMPLEX128
                              ? es / 2 : es;
            for (size_t o = 0; o < es; o += part)
                swap_bytes(d + o, part);
        }
        if (nt.dtype == CG_DTYPE_BOOL)
            *d = *d != 0;
    }
    *out = t;
    return CG_OK;
fail:
    cg_tensor_release(&t);
    return st;
}

cg_status cg_npy_load(const char *path, size_t max_bytes, cg_tensor *out, cg_error *err)
{
    uint8_t *buf = NULL;
    size_t size = 0;
    size_t limit = cg_io_limit(max_bytes);
    /* Payload is capped by max_bytes; allow the largest legal header on top
     * (strings may use up to 4 bytes per element in the file and 8 here). */
    size_t cap = limit > SIZE_MAX - ((size_t)1 << 32) ? SIZE_MAX : limit + ((size_t)1 << 32);
    memset(out, 0, sizeof *out);
    char *bytes = NULL;
    cg_status st = cg_file_read_all(path, cap, &bytes, &size, err);
    if (st != CG_OK)
        return st;
    buf = (uint8_t *)bytes;
    st = cg_npy_parse(buf, size, path, max_bytes, out, err);
    free(buf);
    return st;
}

/* --- writing ---------------------------------------------------------------------------- */

/* Decodes UTF-8 into code points; returns the count, or SIZE_MAX if invalid.
 * With cps == NULL only counts. */
/* Code points of the len bytes at s (NUL bytes included: U+0000), or
 * SIZE_MAX when they are not valid UTF-8. */
static size_t utf8_decode(const char *s, size_t len, uint32_t *cps)
{
    size_t n = 0;
    const unsigned char *p = (const unsigned char *)s, *end = p + len;
    while (p < end) {
        uint32_t cp;
        int extra;
        if (*p < 0x80) {
            cp = *p;
            extra = 0;
        } else if ((*p & 0xE0) == 0xC0) {
            cp = *p & 0x1F;
            extra = 1;
        } else if ((*p & 0xF0) == 0xE0) {
            cp = *p & 0x0F;
            extra = 2;
        } else if ((*p & 0xF8) == 0xF0) {
            cp = *p & 0x07;
            extra = 3;
        } else {
            return SIZE_MAX;
        }
        p++;
        if (end - p < extra)
            return SIZE_MAX;
        for (int i = 0; i < extra; i++, p++) {
            if ((*p & 0xC0) != 0x80)
                return SIZE_MAX;
            cp = cp << 6 | (*p & 0x3F);
        }
        if (cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
            return SIZE_MAX;
        if (cps)
            cps[n] = cp;
        n++;
    }
    return n;
}

cg_status cg_npy_serialize(const cg_tensor *t, uint8_t **out, size_t *out_size, cg_error *err)
{
    cg_status st = CG_OK;
    uint8_t *buf = NULL;
    uint32_t *cps = NULL;
    const char *descr = cg_dtype_npy_descr(t->dtype);
    char descr_buf[32];
    size_t itemsize = cg_dtype_size(t->dtype);
    *out = NULL;
    *out_size = 0;
    if (t->dtype == CG_DTYPE_STRING) {
        size_t width = 0;
        for (int64_t i = 0; i < t->numel; i++) {
            size_t len;
            const char *s = cg_tensor_string(t, i, &len);
            size_t n = utf8_decode(s, len, NULL);
            if (n == SIZE_MAX)
                return cg_error_set(err, CG_UNSUPPORTED,
                                    "string element %lld is not valid UTF-8; .npy '<U' needs "
                                    "Unicode", (long long)i);
            if (n > width)
                width = n;
        }
        if (width == 0)
            width = 1; /* NumPy's own choice for all-empty string arrays */
        if (width > (SIZE_MAX / 4))
            return cg_error_set(err, CG_LIMIT, "string too long");
        snprintf(descr_buf, sizeof descr_buf, "<U%zu", width);
        descr = descr_buf;
        itemsize = width * 4;
        cps = malloc(width * sizeof *cps);
        if (!cps)
            return cg_error_set(err, CG_NOMEM, "out of memory");
    }
    if (!descr || !itemsize)
        return cg_error_set(err, CG_UNSUPPORTED, "element type %s has no NumPy equivalent",
                            cg_dtype_name(t->dtype));

    char header[64 + 24 * CG_MAX_RANK + 64];
    int hn = snprintf(header, sizeof header, "{'descr': '%s', 'fortran_order': False, 'shape': (",
                      descr);
    for (int d = 0; d < t->rank; d++)
        hn += snprintf(header + hn, sizeof header - (size_t)hn, "%s%lld", d ? ", " : "",
                       (long long)t->dims[d]);
    hn += snprintf(header + hn, sizeof header - (size_t)hn, "%s), }", t->rank == 1 ? "," : "");
    /* Pad with spaces so the data starts on a 64-byte boundary; end with '\n'. */
    size_t pre = 10, total = pre + (size_t)hn + 1;
    size_t padded = (total + 63) / 64 * 64;
    size_t hlen = padded - pre;
    if ((uint64_t)t->numel > SIZE_MAX / itemsize ||
        (size_t)t->numel * itemsize > SIZE_MAX - padded) {
        st = cg_error_set(err, CG_LIMIT, "tensor too large to serialize");
        goto done;
    }
    size_t payload = (size_t)t->numel * itemsize;
    buf = malloc(padded + payload ? padded + payload : 1);
    if (!buf) {
        st = cg_error_set(err, CG_NOMEM, "out of memory for %zu bytes", padded + payload);
        goto done;
    }
    memcpy(buf, npy_magic, 6);
    buf[6] = 1;
    buf[7] = 0;
    cg_io_put16(buf + 8, (uint16_t)hlen);
    memcpy(buf + pre, header, (size_t)hn);
    memset(buf + pre + hn, ' ', hlen - (size_t)hn - 1);
    buf[padded - 1] = '\n';
    uint8_t *dst = buf + padded;
    if (t->dtype == CG_DTYPE_STRING) {
        memset(dst, 0, payload);
        for (int64_t i = 0; i < t->numel; i++) {
            size_t len;
            const char *s = cg_tensor_string(t, i, &len);
            size_t n = utf8_decode(s, len, cps);
            for (size_t c = 0; c < n; c++)
                cg_io_put32(dst + (size_t)i * itemsize + 4 * c, cps[c]);
        }
    } else if (host_is_little()) {
        if (payload)
            memcpy(dst, t->data, payload);
    } else {
        size_t part = t->dtype == CG_DTYPE_COMPLEX64 || t->dtype == CG_DTYPE_COMPLEX128
                          ? itemsize / 2 : itemsize;
        memcpy(dst, t->data, payload);
        for (size_t o = 0; o < payload; o += part)
            swap_bytes(dst + o, part);
    }
    *out = buf;
    *out_size = padded + payload;
    buf = NULL;
done:
    free(buf);
    free(cps);
    return st;
}

cg_status cg_npy_save(const char *path, const cg_tensor *t, cg_error *err)
{
    uint8_t *buf;
    size_t size;
    cg_status st = cg_npy_serialize(t, &buf, &size, err);
    if (st != CG_OK) {
        cg_error_prefix(err, "writing '%s': ", path);
        return st;
    }
    st = cg_atomic_write(path, buf, size, err);
    free(buf);
    return st;
}
