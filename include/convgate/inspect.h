/*
 * `convgate inspect`: what an engineer needs to see first about a model.
 * The JSON form is documented in docs/inspect-json.md.
 */
#ifndef CONVGATE_INSPECT_H
#define CONVGATE_INSPECT_H

#include <stdbool.h>
#include <stdio.h>

#include "convgate/model.h"
#include "convgate/tflite.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct cg_inspect_options {
    int top_tensors; /* how many of the largest initializers to list (default 10) */
} cg_inspect_options;

/* Writes the report as text (json = false) or JSON to f. */
CG_API CG_NODISCARD cg_status cg_inspect_write(const cg_model *model, const cg_inspect_options *opt,
                                               bool json, FILE *f, cg_error *err);
/* The same report for a .tflite model: the ONNX keys where the meaning is
 * the same, the TFLite structure under "tflite" (docs/inspect-json.md). */
CG_API CG_NODISCARD cg_status cg_inspect_write_tflite(const cg_tflite_model *model,
                                                      const cg_inspect_options *opt, bool json,
                                                      FILE *f, cg_error *err);

#ifdef __cplusplus
}
#endif
#endif
