/*
 * The JSON encoder every report uses (docs/json.md), so a value reads the
 * same in every command's --json:
 *
 *   numbers   finite reals at the fewest digits that read back exactly;
 *             NaN, +inf and -inf as the strings "nan", "inf", "-inf" (JSON
 *             has no such numbers; a key is never dropped for them)
 *   strings   UTF-8 as is; a byte that is not part of valid UTF-8 becomes
 *             the four characters \xNN (Python's "backslashreplace"), so a
 *             model's non-UTF-8 name still prints, deterministically
 *   envelope  every --json document is {command, version, status,
 *             exit_code, errors, warnings, result}
 *
 * Internal to libconvgate and the CLI.
 */
#ifndef CG_REPORT_JSON_H
#define CG_REPORT_JSON_H

#include <jansson.h>
#include <stdio.h>

#include "core/json.h" /* cg_json_number: numbers, as above */

/* A string (see above); NULL s gives JSON null. */
json_t *cg_json_text(const char *s);
/* obj[key] = v (v's reference is taken, also on failure); the key is
 * escaped as cg_json_text does. -1 when v is NULL or out of memory. */
int cg_json_set(json_t *obj, const char *key, json_t *v);

/* The text of a document: two-space indent, keys in insertion order,
 * reals shortest. malloc'd; NULL when out of memory. */
char *cg_json_dumps(const json_t *root);
/* The same without whitespace (documents embedded in a page). */
char *cg_json_dumps_compact(const json_t *root);
/* Writes cg_json_dumps(root) and a newline. 0, or -1 on failure. */
int cg_json_write(FILE *f, const json_t *root);

/* Rewrites every real number token of JSON text at the fewest digits that
 * read back exactly (jansson prints a fixed precision: 0.05 at 17 digits is
 * 0.050000000000000003). Integers and strings are copied as they are.
 * malloc'd; NULL when out of memory or json is NULL. */
char *cg_json_shortest(const char *json);

/* "ok" (exit 0), "fail" (1: the check found problems) or "error" (2). */
const char *cg_json_status_name(int exit_code);
/* The envelope: {command, version, status, exit_code, errors, warnings,
 * result}. errors and warnings are arrays of {"message"} (NULL: empty);
 * result may be NULL (JSON null). Takes the references it is given. */
json_t *cg_json_envelope(const char *command, int exit_code, json_t *errors, json_t *warnings,
                         json_t *result);

#endif
