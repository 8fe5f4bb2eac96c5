/*
 * JSON numbers as every convgate document writes and reads them
 * (docs/json.md): finite reals as JSON numbers; NaN, +inf and -inf as the
 * strings "nan", "inf" and "-inf" (JSON has no such numbers, and a key is
 * never dropped for them). In core so that every stage writing JSON (the
 * golden manifests of verify, the documents of report) encodes them one way.
 *
 * Internal to libconvgate and the CLI.
 */
#ifndef CG_CORE_JSON_H
#define CG_CORE_JSON_H

#include <jansson.h>
#include <stdbool.h>

/* v as above; the text of a real is written shortest by report/json.h's
 * dumps. NULL only when out of memory. */
json_t *cg_json_number(double v);
/* Reads what cg_json_number writes (an integer too); false for anything
 * else (other strings, null, objects), *out untouched. */
bool cg_json_number_read(const json_t *v, double *out);

#endif
