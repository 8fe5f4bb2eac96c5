/* Argument parsing shared by the subcommands (numbers, --dim, --target lists). */
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

bool cli_parse_double(const char *s, double *out)
{
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (errno || end == s || *end || !(v >= 0) || v > 1e300)
        return false;
    *out = v;
    return true;
}

bool cli_parse_count(const char *s, uint64_t max, uint64_t *out)
{
    char *end;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno || end == s || *end || s[0] == '-' || v > max)
        return false;
    *out = v;
    return true;
}

bool cli_parse_dim(const char *cmd, const char *arg, cg_dim_binding *dims, size_t *count,
                   size_t max)
{
    const char *eq = strchr(arg, '=');
    uint64_t v;
    if (!eq || eq == arg || !cli_parse_count(eq + 1, INT32_MAX, &v) || v < 1) {
        cli_error(cmd, "--dim expects SYMBOL=VALUE with VALUE in [1, %d], got '%s'", INT32_MAX,
                  arg);
        return false;
    }
    size_t len = (size_t)(eq - arg);
    for (size_t k = 0; k < *count; k++)
        if (strlen(dims[k].symbol) == len && strncmp(dims[k].symbol, arg, len) == 0) {
            dims[k].value = (int64_t)v;
            return true;
        }
    if (*count == max) {
        cli_error(cmd, "more than %zu --dim values", max);
        return false;
    }
    char *sym = malloc(len + 1);
    if (!sym) {
        cli_error(cmd, "out of memory");
        return false;
    }
    memcpy(sym, arg, len);
    sym[len] = '\0';
    dims[*count].symbol = sym;
    dims[*count].value = (int64_t)v;
    (*count)++;
    return true;
}

bool cli_resolve_targets(const char *cmd, const cg_target_registry *reg, char **args,
                         size_t arg_count, const cg_target **out, size_t *count, size_t max)
{
    cg_error err;
    for (size_t i = 0; i < arg_count; i++) {
        char *list = malloc(strlen(args[i]) + 1);
        if (!list) {
            cli_error(cmd, "out of memory");
            return false;
        }
        strcpy(list, args[i]);
        for (char *tok = list, *next; tok; tok = next) {
            next = strchr(tok, ',');
            if (next)
                *next++ = '\0';
            cg_error_clear(&err);
            const cg_target *t = *tok ? cg_target_registry_find(reg, tok, &err) : NULL;
            bool dup = false;
            for (size_t k = 0; t && k < *count; k++)
                dup = dup || out[k] == t;
            if (!t || dup || *count == max) {
                if (!*tok)
                    cli_error(cmd, "--target %s: empty target name", args[i]);
                else if (!t)
                    cli_error(cmd, "%s", err.msg[0] ? err.msg : "unknown target");
                else if (dup)
                    cli_error(cmd, "target '%s' given twice", tok);
                else
                    cli_error(cmd, "more than %zu targets", max);
                free(list);
                return false;
            }
            out[(*count)++] = t;
        }
        free(list);
    }
    return true;
}

bool cli_parse_real(const char *cmd, const char *opt, const char *text, double *out)
{
    char *end;
    double v = strtod(text, &end);
    if (end == text || *end || !isfinite(v)) {
        cli_error(cmd, "--%s expects a finite number, got '%s'", opt, text);
        return false;
    }
    *out = v;
    return true;
}
