/*
 * Source against converted: how the inputs and outputs of one model (the
 * source, A) correspond to those of another (the converted model, B), so
 * both can run on the same inputs and their outputs be compared
 * (`convgate compare SOURCE --against CONVERTED`, `convgate gate
 * CONVERTED --source SOURCE`).
 *
 * Pairs are made by name (a lowered .tflite answers to its tensor names and
 * to the names its signature gives them, cg_tflite_signature_name), else by
 * position, and `--map`
 * rules override both. Each pair carries the layout change between the two
 * tensors: a permutation with B = transpose(A, perm), found from the
 * declared shapes (identity, channels-first to channels-last, or the
 * reverse; a symbolic dim matches anything) or given by a rule. A shape
 * that fits several permutations (a [1, 4, 4, 4] image) is refused unless
 * the two models are of one format (then identity is meant) or a rule says
 * which. Element types may differ between numeric types: values convert as
 * ONNX Cast does (int64 ids fed to an int32 input).
 */
#ifndef CONVGATE_IOMAP_H
#define CONVGATE_IOMAP_H

#include <stdbool.h>
#include <stddef.h>

#include "convgate/api.h"
#include "convgate/model.h"
#include "convgate/runtime.h"
#include "convgate/status.h"
#include "convgate/tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

/* A --map rule: "A=B", "A=B:nhwc", "A=B:nchw", "A=B:0,2,3,1", "A=B:none".
 * a and b name an input or output of each model (either may be empty to
 * keep the matched partner and set only the layout). */
typedef struct cg_io_rule {
    char *a, *b;
    bool has_layout;        /* a layout was given */
    int layout;             /* CG_IO_NHWC (channels-first -> last), CG_IO_NCHW, CG_IO_PERM,
                               CG_IO_SAME */
    int perm[CG_MAX_RANK];  /* CG_IO_PERM */
    int rank;
} cg_io_rule;

enum { CG_IO_SAME = 0, CG_IO_NHWC = 1, CG_IO_NCHW = 2, CG_IO_PERM = 3 };

/* Parses a rule; CG_USAGE naming the problem. Free with cg_io_rule_free. */
CG_API CG_NODISCARD cg_status cg_io_rule_parse(const char *text, cg_io_rule *out, cg_error *err);
CG_API void cg_io_rule_free(cg_io_rule *r);

typedef struct cg_io_pair {
    size_t a, b;            /* graph input/output index in A and in B */
    const char *by;         /* "name", "signature name", "position", "--map" */
    bool permuted;          /* B = transpose(A, perm) */
    int rank;
    int perm[CG_MAX_RANK];
    const char *layout;     /* "same", "NCHW -> NHWC", "NHWC -> NCHW", "permuted" */
} cg_io_pair;

typedef struct cg_io_map {
    cg_io_pair *inputs;     /* one per fed input of A */
    size_t input_count;
    cg_io_pair *outputs;    /* one per output of A */
    size_t output_count;
} cg_io_map;

/* Matches every fed input and every output of a with one of b. CG_USAGE
 * naming the tensor and what to give (--map) when a pair or its layout
 * cannot be decided. */
CG_API CG_NODISCARD cg_status cg_io_map_build(const cg_model *a, const cg_model *b, const cg_io_rule *rules,
                          size_t rule_count, cg_io_map *out, cg_error *err);
CG_API void cg_io_map_free(cg_io_map *m);


/* A tensor from one side in the other's layout and element type: to_b
 * applies the pair's permutation (A -> B), else its inverse (B -> A).
 * `dtype` is the element type wanted. */
CG_API CG_NODISCARD cg_status cg_io_convert(const cg_io_pair *p, bool to_b, const cg_tensor *src, cg_dtype dtype,
                        cg_tensor *out, cg_error *err);

/* Feeds: B's inputs from A's (to_b) or A's from B's, each converted;
 * outputs (malloc'd array, names borrowed from the target model) free with
 * cg_runtime_free_outputs. */
CG_API CG_NODISCARD cg_status cg_io_map_inputs(const cg_io_map *m, const cg_model *a, const cg_model *b, bool to_b,
                           const cg_named_value *in, size_t in_count, cg_named_value **out,
                           size_t *out_count, cg_error *err);
/* Outputs of one side in the other's graph-output order, layouts and
 * types (to_b: A's outputs become B's). */
CG_API CG_NODISCARD cg_status cg_io_map_outputs(const cg_io_map *m, const cg_model *a, const cg_model *b, bool to_b,
                            const cg_named_value *in, size_t in_count, cg_named_value **out,
                            size_t *out_count, cg_error *err);

/* One line per pair for reports: "x [1,3,16,16] -> x:0 [1,16,16,3] (by
 * position, NCHW -> NHWC)". */
CG_API void cg_io_pair_text(const cg_io_pair *p, const cg_model *a, const cg_model *b, bool input,
                     char *buf, size_t cap);

#ifdef __cplusplus
}
#endif
#endif
