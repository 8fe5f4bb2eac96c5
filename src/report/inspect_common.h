/*
 * What the ONNX and TFLite inspect reports share (src/report/inspect.c,
 * src/report/inspect_tflite.c): both build one JSON tree
 * (docs/inspect-json.md) and render text from it, with these helpers.
 */
#ifndef CG_REPORT_INSPECT_COMMON_H
#define CG_REPORT_INSPECT_COMMON_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "convgate/status.h"

#define CG_INSPECT_SCHEMA_VERSION 1

/* "12.5 KiB" */
void cg_inspect_human_bytes(uint64_t b, char *buf, size_t n);
/* "[1, 3, ?, batch]" from a JSON shape (ints, strings, nulls), or
 * "(unknown rank)". */
void cg_inspect_shape_text(json_t *shape, char *buf, size_t n);
/* "TITLE (n)" then one line per {name, dtype, shape, dynamic}. */
void cg_inspect_print_values(FILE *f, const char *title, json_t *arr);
/* Dumps r as JSON or renders it as text, then releases it. */
cg_status cg_inspect_emit(json_t *r, bool json, FILE *f, void (*render)(json_t *r, FILE *f),
                          cg_error *err);

#endif
