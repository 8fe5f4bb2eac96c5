/*
 * The one JSON encoder of the reports (report/json.h): numbers, strings,
 * the document text and the envelope every --json shares.
 */
#include "report/json.h"

#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "convgate/cost.h"

/* Length of the valid UTF-8 sequence at s (1-4), or 0 when the byte at s
 * does not start one: overlong forms, surrogates and code points above
 * U+10FFFF are invalid, as RFC 3629 says. */
static size_t utf8_sequence(const unsigned char *s)
{
    unsigned c = s[0];
    size_t n;
    unsigned cp;
    if (c < 0x80)
        return 1;
    if (c >= 0xC2 && c <= 0xDF) {
        n = 2;
        cp = c & 0x1F;
    } else if (c >= 0xE0 && c <= 0xEF) {
        n = 3;
        cp = c & 0x0F;
    } else if (c >= 0xF0 && c <= 0xF4) {
        n = 4;
        cp = c & 0x07;
    } else {
        return 0;
    }
    for (size_t i = 1; i < n; i++) {
        if ((s[i] & 0xC0) != 0x80)
            return 0; /* also stops at the terminating NUL */
        cp = cp << 6 | (s[i] & 0x3F);
    }
    if ((n == 3 && cp < 0x800) || (n == 4 && (cp < 0x10000 || cp > 0x10FFFF)) ||
        (cp >= 0xD800 && cp <= 0xDFFF))
        return 0;
    return n;
}

/* s with every byte outside valid UTF-8 written as \xNN; malloc'd. */
static char *utf8_escaped(const char *s)
{
    size_t len = strlen(s);
    if (len > (SIZE_MAX - 1) / 4)
        return NULL;
    char *out = malloc(4 * len + 1), *o = out;
    if (!out)
        return NULL;
    for (const unsigned char *p = (const unsigned char *)s; *p;) {
        size_t n = utf8_sequence(p);
        if (n) {
            memcpy(o, p, n);
            o += n;
            p += n;
        } else {
            static const char hex[] = "0123456789ABCDEF";
            *o++ = '\\';
            *o++ = 'x';
            *o++ = hex[*p >> 4];
            *o++ = hex[*p & 15];
            p++;
        }
    }
    *o = '\0';
    return out;
}

static bool utf8_valid(const char *s)
{
    for (const unsigned char *p = (const unsigned char *)s; *p;) {
        size_t n = utf8_sequence(p);
        if (!n)
            return false;
        p += n;
    }
    return true;
}

json_t *cg_json_text(const char *s)
{
    if (!s)
        return json_null();
    if (utf8_valid(s))
        return json_string(s);
    char *escaped = utf8_escaped(s);
    json_t *j = escaped ? json_string(escaped) : NULL;
    free(escaped);
    return j;
}

int cg_json_set(json_t *obj, const char *key, json_t *v)
{
    if (!v)
        return -1;
    if (!key || utf8_valid(key))
        return json_object_set_new(obj, key ? key : "", v);
    char *escaped = utf8_escaped(key);
    int rc = escaped ? json_object_set_new(obj, escaped, v) : (json_decref(v), -1);
    free(escaped);
    return rc;
}

/* True for the characters a JSON number token can contain. */
static bool json_number_char(char ch)
{
    return (ch >= '0' && ch <= '9') || ch == '-' || ch == '+' || ch == '.' || ch == 'e' ||
           ch == 'E';
}

char *cg_json_shortest(const char *json)
{
    if (!json)
        return NULL;
    /* A rewritten real is at most REAL_MAX chars and every real token is at
     * least 3 ("0.0"), so this bound always suffices. */
    enum { REAL_MAX = 32 };
    size_t len = strlen(json);
    if (len > (SIZE_MAX - 1) / (REAL_MAX / 3 + 1))
        return NULL;
    char *out = malloc(len * (REAL_MAX / 3 + 1) + 1);
    if (!out)
        return NULL;
    size_t o = 0;
    bool in_string = false;
    for (size_t i = 0; i < len;) {
        char ch = json[i];
        if (in_string) {
            out[o++] = ch;
            i++;
            if (ch == '\\' && i < len)
                out[o++] = json[i++]; /* the escaped character, whatever it is */
            else if (ch == '"')
                in_string = false;
            continue;
        }
        if (ch == '"') {
            in_string = true;
            out[o++] = ch;
            i++;
            continue;
        }
        if (ch != '-' && !(ch >= '0' && ch <= '9')) {
            out[o++] = ch;
            i++;
            continue;
        }
        size_t end = i;
        bool is_real = false;
        while (end < len && json_number_char(json[end])) {
            if (json[end] == '.' || json[end] == 'e' || json[end] == 'E')
                is_real = true;
            end++;
        }
        char token[REAL_MAX * 4];
        size_t tlen = end - i;
        char formatted[REAL_MAX + 8];
        int n = -1;
        if (is_real && tlen < sizeof token) {
            memcpy(token, json + i, tlen);
            token[tlen] = '\0';
            n = cg_cost_format_real(strtod(token, NULL), formatted, sizeof formatted);
        }
        if (n > 0 && n <= REAL_MAX && (size_t)n <= tlen * (REAL_MAX / 3 + 1)) {
            memcpy(out + o, formatted, (size_t)n);
            o += (size_t)n;
        } else {
            /* an integer, or a token we do not rewrite: as it was */
            memcpy(out + o, json + i, tlen);
            o += tlen;
        }
        i = end;
    }
    out[o] = '\0';
    return out;
}

static char *json_text(const json_t *root, size_t layout)
{
    /* 17 digits always read back exactly; cg_json_shortest then drops the
     * noise digits */
    char *text = json_dumps(root, layout | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(17));
    char *shortest = cg_json_shortest(text);
    free(text);
    return shortest;
}

char *cg_json_dumps(const json_t *root) { return json_text(root, JSON_INDENT(2)); }

char *cg_json_dumps_compact(const json_t *root) { return json_text(root, JSON_COMPACT); }

int cg_json_write(FILE *f, const json_t *root)
{
    char *text = root ? cg_json_dumps(root) : NULL;
    int rc = text && fputs(text, f) >= 0 && fputc('\n', f) != EOF && fflush(f) == 0 ? 0 : -1;
    free(text);
    return rc;
}

const char *cg_json_status_name(int exit_code)
{
    return exit_code == 0 ? "ok" : exit_code == 1 ? "fail" : "error";
}

json_t *cg_json_envelope(const char *command, int exit_code, json_t *errors, json_t *warnings,
                         json_t *result)
{
    json_t *o = json_object();
    if (!o) {
        json_decref(errors);
        json_decref(warnings);
        json_decref(result);
        return NULL;
    }
    int rc = cg_json_set(o, "command", cg_json_text(command));
    rc |= cg_json_set(o, "version", json_string(CG_VERSION));
    rc |= cg_json_set(o, "status", json_string(cg_json_status_name(exit_code)));
    rc |= cg_json_set(o, "exit_code", json_integer(exit_code));
    rc |= cg_json_set(o, "errors", errors ? errors : json_array());
    rc |= cg_json_set(o, "warnings", warnings ? warnings : json_array());
    rc |= cg_json_set(o, "result", result ? result : json_null());
    if (rc) {
        json_decref(o);
        return NULL;
    }
    return o;
}
