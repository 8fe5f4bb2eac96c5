/* Escaping untrusted text for printing (see text.h). */
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <stddef.h>
#include <stdio.h>

#include "core/text.h"

/* Length of the valid UTF-8 sequence at p (at most n bytes) and its code
 * point, or 0 when it is not one (overlong, surrogate, past U+10FFFF). */
static size_t utf8_seq(const unsigned char *p, size_t n, uint32_t *cp)
{
    size_t need;
    uint32_t c;
    if (p[0] < 0x80) {
        *cp = p[0];
        return 1;
    } else if ((p[0] & 0xE0) == 0xC0) {
        need = 2;
        c = p[0] & 0x1F;
    } else if ((p[0] & 0xF0) == 0xE0) {
        need = 3;
        c = p[0] & 0x0F;
    } else if ((p[0] & 0xF8) == 0xF0) {
        need = 4;
        c = p[0] & 0x07;
    } else {
        return 0;
    }
    if (n < need)
        return 0;
    for (size_t i = 1; i < need; i++) {
        if ((p[i] & 0xC0) != 0x80)
            return 0;
        c = c << 6 | (p[i] & 0x3F);
    }
    static const uint32_t min_of[5] = {0, 0, 0x80, 0x800, 0x10000};
    if (c < min_of[need] || c > 0x10FFFF || (c >= 0xD800 && c <= 0xDFFF))
        return 0;
    *cp = c;
    return need;
}

static bool is_bidi_control(uint32_t c)
{
    return c == 0x200E || c == 0x200F || (c >= 0x202A && c <= 0x202E) ||
           (c >= 0x2066 && c <= 0x2069);
}

size_t cg_text_escape(char *dst, size_t cap, const char *s, size_t len)
{
    const unsigned char *p = (const unsigned char *)s;
    size_t need = 0, at = 0;
    bool full = cap == 0;
    for (size_t i = 0; i < len;) {
        char piece[12];
        size_t plen;
        uint32_t cp = 0;
        size_t n = utf8_seq(p + i, len - i, &cp);
        if (n == 0) {
            plen = (size_t)snprintf(piece, sizeof piece, "\\x%02x", p[i]);
            n = 1;
        } else if (cp == '\n' || cp == '\r' || cp == '\t') {
            piece[0] = '\\';
            piece[1] = cp == '\n' ? 'n' : cp == '\r' ? 'r' : 't';
            plen = 2;
        } else if (cp < 0x20 || cp == 0x7F) {
            plen = (size_t)snprintf(piece, sizeof piece, "\\x%02x", (unsigned)cp);
        } else if ((cp >= 0x80 && cp <= 0x9F) || is_bidi_control(cp)) {
            plen = (size_t)snprintf(piece, sizeof piece, "\\u%04x", (unsigned)cp);
        } else {
            memcpy(piece, p + i, n);
            plen = n;
        }
        i += n;
        need += plen;
        if (!full && at + plen < cap) {
            memcpy(dst + at, piece, plen);
            at += plen;
        } else {
            full = true; /* never write half a character */
        }
    }
    if (cap > 0)
        dst[at] = '\0';
    return need;
}

void cg_text_fputs(const char *s, FILE *f)
{
    if (!s)
        s = "(null)";
    size_t len = strlen(s);
    char small[256];
    size_t need = cg_text_escape(small, sizeof small, s, len);
    if (need < sizeof small) {
        fputs(small, f);
        return;
    }
    char *big = malloc(need + 1);
    if (!big) { /* escape piecewise rather than print raw */
        for (size_t i = 0; i < len; i += 32) {
            cg_text_escape(small, sizeof small, s + i, len - i < 32 ? len - i : 32);
            fputs(small, f);
        }
        return;
    }
    cg_text_escape(big, need + 1, s, len);
    fputs(big, f);
    free(big);
}

/* Prints one %s conversion: precision cuts the raw string, width pads the
 * escaped one. spec holds the conversion with * already replaced. */
static int put_string(FILE *f, const char *flags, int width, bool has_width, int prec,
                      bool has_prec, const char *s)
{
    if (!s)
        s = "(null)";
    size_t len = has_prec && prec >= 0 ? strnlen(s, (size_t)prec) : strlen(s);
    char small[256], *buf = small;
    size_t need = cg_text_escape(small, sizeof small, s, len);
    if (need >= sizeof small) {
        buf = malloc(need + 1);
        if (!buf) {
            buf = small; /* already escaped, just cut */
        } else {
            cg_text_escape(buf, need + 1, s, len);
        }
    }
    int n;
    if (has_width)
        n = fprintf(f, strchr(flags, '-') ? "%-*s" : "%*s", width, buf);
    else
        n = fputs(buf, f) < 0 ? -1 : (int)strlen(buf);
    if (buf != small)
        free(buf);
    return n;
}

int cg_text_vprintf(FILE *f, const char *fmt, va_list ap)
{
    va_list args;
    va_copy(args, ap);
    int total = 0;
    const char *p = fmt;
    while (*p) {
        if (*p != '%') {
            const char *q = strchr(p, '%');
            size_t n = q ? (size_t)(q - p) : strlen(p);
            fwrite(p, 1, n, f);
            total += (int)n;
            p += n;
            continue;
        }
        if (p[1] == '%') {
            fputc('%', f);
            total++;
            p += 2;
            continue;
        }
        /* %[flags][width][.precision][length]conversion */
        char flags[8] = "", spec[48];
        size_t nf = 0;
        int width = 0, prec = -1;
        bool has_width = false, has_prec = false;
        p++;
        while (*p && strchr("-+ #0'", *p)) {
            if (nf + 1 < sizeof flags)
                flags[nf++] = *p;
            p++;
        }
        flags[nf] = '\0';
        if (*p == '*') {
            width = va_arg(args, int);
            has_width = true;
            p++;
        } else {
            while (*p >= '0' && *p <= '9') {
                width = width * 10 + (*p++ - '0');
                has_width = true;
            }
        }
        if (*p == '.') {
            p++;
            has_prec = true;
            prec = 0;
            if (*p == '*') {
                prec = va_arg(args, int);
                p++;
            } else {
                while (*p >= '0' && *p <= '9')
                    prec = prec * 10 + (*p++ - '0');
            }
        }
        char len[3] = "";
        if (*p == 'h' || *p == 'l') {
            len[0] = *p++;
            if (*p == len[0])
                len[1] = *p++;
        } else if (*p && strchr("jztL", *p)) {
            len[0] = *p++;
        }
        char conv = *p ? *p++ : '\0';
        /* the spec for one argument, widths and precisions made explicit */
        int sl = snprintf(spec, sizeof spec, "%%%s", flags);
        if (has_width)
            sl += snprintf(spec + sl, sizeof spec - (size_t)sl, "%d", width);
        if (has_prec)
            sl += snprintf(spec + sl, sizeof spec - (size_t)sl, ".%d", prec);
        snprintf(spec + sl, sizeof spec - (size_t)sl, "%s%c", len, conv);
        int n = 0;
        switch (conv) {
        case 's':
            n = put_string(f, flags, width, has_width, prec, has_prec, va_arg(args, const char *));
            break;
        case 'c': {
            char c[2] = {(char)va_arg(args, int), '\0'};
            n = put_string(f, flags, width, has_width, -1, false, c);
            break;
        }
        case 'd':
        case 'i':
            if (!strcmp(len, "l"))
                n = fprintf(f, spec, va_arg(args, long));
            else if (!strcmp(len, "ll"))
                n = fprintf(f, spec, va_arg(args, long long));
            else if (!strcmp(len, "j"))
                n = fprintf(f, spec, va_arg(args, intmax_t));
            else if (!strcmp(len, "z") || !strcmp(len, "t"))
                n = fprintf(f, spec, va_arg(args, ptrdiff_t));
            else
                n = fprintf(f, spec, va_arg(args, int));
            break;
        case 'u':
        case 'o':
        case 'x':
        case 'X':
            if (!strcmp(len, "l"))
                n = fprintf(f, spec, va_arg(args, unsigned long));
            else if (!strcmp(len, "ll"))
                n = fprintf(f, spec, va_arg(args, unsigned long long));
            else if (!strcmp(len, "j"))
                n = fprintf(f, spec, va_arg(args, uintmax_t));
            else if (!strcmp(len, "z") || !strcmp(len, "t"))
                n = fprintf(f, spec, va_arg(args, size_t));
            else
                n = fprintf(f, spec, va_arg(args, unsigned));
            break;
        case 'f':
        case 'F':
        case 'e':
        case 'E':
        case 'g':
        case 'G':
        case 'a':
        case 'A':
            if (!strcmp(len, "L"))
                n = fprintf(f, spec, va_arg(args, long double));
            else
                n = fprintf(f, spec, va_arg(args, double));
            break;
        case 'p':
            n = fprintf(f, spec, va_arg(args, void *));
            break;
        default: /* %n and unknown conversions are never used: print the spec */
            n = fprintf(f, "%s", spec);
            break;
        }
        if (n < 0) {
            va_end(args);
            return -1;
        }
        total += n;
    }
    va_end(args);
    return total;
}

int cg_text_printf(FILE *f, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = cg_text_vprintf(f, fmt, ap);
    va_end(ap);
    return n;
}
