/*
 * Entry points for language bindings (python/convgate): one call per
 * command, its options as a JSON object, tensors in as plain memory, and
 * out the command's --json envelope (docs/json.md: the same renderers the
 * CLI uses) plus the tensors a command produced. Built for a foreign
 * function interface: only pointers, integers and strings cross it.
 *
 *   command   "inspect", "check", "assign", "run", "compare", "gate", "bisect",
 *             "dump-ref"
 *   options   JSON object, keys named as the CLI's options (docs/python.md):
 *             target ("a,b" or ["a", "b"]), profiles, dim ({"N": 1}), seed,
 *             range ({"*": [lo, hi], "NAME": [lo, hi]}), random, inputs (a
 *             folder), golden, atol, rtol, accumulate ("fp16"/"fp32"),
 *             require_full, no_time, watch (["tensor", ...]), triage, output,
 *             force, floors (dump-ref); an
 *             option the command does not take is an error
 *   inputs    tensors of one or more samples, grouped by their sample label
 *             (samples in order of first appearance); none: the command's
 *             random inputs or its inputs folder
 *   result    the envelope (never NULL but out of memory) and tensors named
 *             "outputs/NAME" (run), "watch/NAME" (run with watch),
 *             "first_divergent/reference", "first_divergent/target" and
 *             "sample/NAME" (the bisected sample's inputs: gate, bisect)
 */
#ifndef CONVGATE_BIND_H
#define CONVGATE_BIND_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "convgate/api.h"
#include "convgate/model.h"

#ifdef __cplusplus
extern "C" {
#endif

/* A borrowed dense tensor, C order. */
typedef struct cg_bind_tensor {
    const char *sample;  /* the sample it belongs to; NULL: "0" */
    const char *name;    /* the graph input it feeds */
    int32_t dtype;       /* cg_dtype, ONNX's TensorProto codes */
    int32_t rank;
    const int64_t *dims;
    const void *data;
    size_t bytes;        /* numel * element size, checked */
} cg_bind_tensor;

typedef struct cg_bind_result cg_bind_result;

/* Runs `command` on model (loaded from path, which the report names; may
 * be NULL for "-"). Errors are in the envelope (status "error", exit code
 * 2), as the CLI reports them. NULL only when out of memory. */
CG_API cg_bind_result *cg_bind_call(const char *command, const cg_model *model,
                                    const char *path, const char *options,
                                    const cg_bind_tensor *inputs, size_t input_count);
/* The envelope's text (JSON). */
CG_API const char *cg_bind_result_json(const cg_bind_result *r);
/* 0, 1 or 2, as the CLI's exit status. */
CG_API int cg_bind_result_exit_code(const cg_bind_result *r);
CG_API size_t cg_bind_result_tensor_count(const cg_bind_result *r);
/* Tensor i: name, dtype, rank, dims (room for CG_MAX_RANK), data, bytes.
 * false when i is out of range. The data lives as long as r. */
CG_API bool cg_bind_result_tensor(const cg_bind_result *r, size_t i, const char **name,
                                  int32_t *dtype, int32_t *rank, int64_t *dims,
                                  const void **data, size_t *bytes);
CG_API void cg_bind_result_free(cg_bind_result *r);

#ifdef __cplusplus
}
#endif
#endif
