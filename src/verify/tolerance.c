/*
 * Tolerance files (convgate/compare.h): the per-output tolerances `compare`
 * and `verify` apply, read and resolved in one place so that a typo is
 * refused the same way everywhere.
 */
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "convgate/compare.h"
#include "core/file.h"
#include "io/io_internal.h"

#define TOL_FILE_MAX ((size_t)16 << 20) /* a tolerance file is a few lines of JSON */

void cg_tolerances_free(cg_output_tolerance *t, size_t count)
{
    for (size_t i = 0; t && i < count; i++) {
        free(t[i].justification);
        t[i].justification = NULL;
    }
}

/* Sets *dst to a copy of s (the justification an entry owns). */
static cg_status own_text(char **dst, const char *s, cg_error *err)
{
    char *copy = s ? strdup(s) : NULL;
    if (s && !copy)
        return cg_error_set(err, CG_NOMEM, "out of memory reading tolerances");
    free(*dst);
    *dst = copy;
    return CG_OK;
}

/* Lays one {"atol","rtol","nan_equal","justification"} object over *t. */
static cg_status overlay(const char *file, const char *what, json_t *o, cg_output_tolerance *t,
                         cg_error *err)
{
    const char *key;
    json_t *v;
    if (!json_is_object(o))
        return cg_error_set(err, CG_USAGE, "--tol %s: %s must be an object", file, what);
    json_object_foreach(o, key, v) {
        if (strcmp(key, "atol") == 0 || strcmp(key, "rtol") == 0) {
            if (!json_is_number(v) || !(json_number_value(v) >= 0) ||
                !isfinite(json_number_value(v)))
                return cg_error_set(err, CG_USAGE, "--tol %s: %s.%s must be a finite number "
                                    ">= 0", file, what, key);
            *(key[0] == 'a' ? &t->tol.atol : &t->tol.rtol) = json_number_value(v);
        } else if (strcmp(key, "nan_equal") == 0) {
            if (!json_is_boolean(v))
                return cg_error_set(err, CG_USAGE, "--tol %s: %s.nan_equal must be true or "
                                    "false", file, what);
            t->tol.nan_equal = json_is_true(v);
        } else if (strcmp(key, "justification") == 0) {
            if (!json_is_string(v))
                return cg_error_set(err, CG_USAGE, "--tol %s: %s.justification must be a "
                                    "string", file, what);
            cg_status st = own_text(&t->justification, json_string_value(v), err);
            if (st != CG_OK)
                return st;
            t->tol.justification = t->justification;
        } else {
            return cg_error_set(err, CG_USAGE, "--tol %s: %s: unknown key '%s' (atol, rtol, "
                                "nan_equal, justification)", file, what, key);
        }
    }
    return CG_OK;
}

/* The model's outputs as "a, b, c" for the unknown-output message. */
static void output_list(const char *const *outputs, size_t count, char *buf, size_t cap)
{
    size_t used = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < count && used + 8 < cap; i++) {
        int w = snprintf(buf + used, cap - used, "%s'%s'", i ? ", " : "", outputs[i]);
        if (w < 0 || (size_t)w >= cap - used) {
            snprintf(buf + cap - 4, 4, "...");
            return;
        }
        used += (size_t)w;
    }
}

cg_status cg_tolerances_resolve(const char *const *outputs, size_t count,
                                const cg_tolerance_args *args, bool reduced_precision,
                                cg_output_tolerance *out, cg_error *err)
{
    cg_status st = CG_OK;
    char *text = NULL;
    size_t size = 0;
    json_t *doc = NULL;
    json_error_t jerr;
    cg_tolerance base;
    const char *tol_file = args ? args->file : NULL;
    const char *source = "default";
    cg_tolerance_default(&base, reduced_precision);
    if (args && (args->have_atol || args->have_rtol)) {
        if (tol_file)
            return cg_error_set(err, CG_USAGE, "give --tol FILE or --atol/--rtol, not both");
        base.atol = args->have_atol ? args->atol : base.atol;
        base.rtol = args->have_rtol ? args->rtol : base.rtol;
        base.justification = NULL;
        source = "--atol/--rtol";
    }
    base.nan_equal = args && args->nan_equal;
    for (size_t i = 0; i < count; i++) {
        out[i].tol = base;
        out[i].source = source;
        out[i].justification = NULL;
    }
    if (!tol_file)
        return CG_OK;
    /* a regular file only: a FIFO given as --tol must not block */
    if ((st = cg_file_read_all(tol_file, TOL_FILE_MAX, &text, &size, err)) != CG_OK) {
        cg_error_prefix(err, "--tol: ");
        goto done;
    }
    if (!(doc = json_loadb(text, size, JSON_REJECT_DUPLICATES, &jerr))) {
        st = cg_error_set(err, CG_USAGE, "--tol %s: line %d: %s", tol_file, jerr.line,
                          jerr.text);
        goto done;
    }
    if (!json_is_object(doc)) {
        st = cg_error_set(err, CG_USAGE, "--tol %s: not a JSON object", tol_file);
        goto done;
    }
    const char *key;
    json_t *v;
    json_object_foreach(doc, key, v)
        if (strcmp(key, "outputs") != 0 && strcmp(key, "default") != 0) {
            st = cg_error_set(err, CG_USAGE, "--tol %s: unknown key '%s' (outputs, default)",
                              tol_file, key);
            goto done;
        }
    json_t *deflt = json_object_get(doc, "default");
    for (size_t i = 0; deflt && i < count; i++) {
        if ((st = overlay(tol_file, "default", deflt, &out[i], err)) != CG_OK)
            goto done;
        out[i].source = "--tol default";
    }
    json_t *per = json_object_get(doc, "outputs");
    if (per && !json_is_object(per)) {
        st = cg_error_set(err, CG_USAGE, "--tol %s: \"outputs\" must be an object", tol_file);
        goto done;
    }
    json_object_foreach(per, key, v) {
        size_t i = 0;
        while (i < count && strcmp(outputs[i], key) != 0)
            i++;
        if (i == count) {
            char list[512];
            output_list(outputs, count, list, sizeof list);
            st = cg_error_set(err, CG_USAGE, "--tol %s: the model has no output '%s' (its "
                              "outputs: %s)", tol_file, key, list);
            goto done;
        }
        char what[300];
        snprintf(what, sizeof what, "outputs.%s", key);
        if ((st = overlay(tol_file, what, v, &out[i], err)) != CG_OK)
            goto done;
        out[i].source = "--tol";
    }
done:
    json_decref(doc);
    free(text);
    if (st != CG_OK)
        cg_tolerances_free(out, count);
    return st;
}
