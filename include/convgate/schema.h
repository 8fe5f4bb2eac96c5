/*
 * Operator schemas: the table generated from python3-onnx's onnx.defs
 * (tools/gen_schemas.py -> src/check/schema_table.inc, committed) plus the
 * hand-written opset 18-21 rows (src/check/schema_extra.inc). One row per
 * (domain, op_type, since_version).
 */
#ifndef CONVGATE_SCHEMA_H
#define CONVGATE_SCHEMA_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "convgate/model.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum cg_formal_option {
    CG_FORMAL_SINGLE = 0,
    CG_FORMAL_OPTIONAL = 1,
    CG_FORMAL_VARIADIC = 2
} cg_formal_option;

typedef struct cg_schema_formal {
    const char *name;
    const char *type_str; /* "T", "tensor(int64)", ... */
    cg_formal_option option;
    bool homogeneous;     /* variadic: all of one type */
    int min_arity;        /* variadic: minimum count */
} cg_schema_formal;

typedef struct cg_schema_attr {
    const char *name;
    cg_attr_type type;
    bool required;
    bool has_default;
    /* default value, by type: */
    int64_t default_i;
    float default_f;
    const char *default_s;
    const int64_t *default_ints;
    size_t default_ints_count;
    const float *default_floats;
    size_t default_floats_count;
} cg_schema_attr;

typedef struct cg_type_constraint {
    const char *param;            /* "T" */
    const char *const *allowed;   /* "tensor(float)", ... */
    size_t allowed_count;
} cg_type_constraint;

typedef struct cg_schema {
    const char *domain; /* "" for ai.onnx */
    const char *name;
    int since_version;
    bool deprecated;
    int min_input, max_input;   /* max may be INT32_MAX for variadic */
    int min_output, max_output;
    const cg_schema_formal *inputs;
    size_t input_count;
    const cg_schema_formal *outputs;
    size_t output_count;
    const cg_schema_attr *attrs;
    size_t attr_count;
    bool allows_unchecked_attributes;
    const cg_type_constraint *constraints;
    size_t constraint_count;
} cg_schema;

/* The schema in force for `op_type` in `domain` ("" or "ai.onnx" for the
 * default domain) at opset `opset_version`: the row with the highest
 * since_version <= opset_version. NULL when the op is unknown there. */
CG_API const cg_schema *cg_schema_find(const char *domain, const char *op_type,
                                       int64_t opset_version);

/* True when any version of the op exists in the domain. */
CG_API bool cg_schema_known_op(const char *domain, const char *op_type);

/* True for a domain the table covers (ai.onnx, ai.onnx.ml, ...). */
CG_API bool cg_schema_known_domain(const char *domain);

/* The highest opset version the table knows for a domain (e.g. 21). */
CG_API int cg_schema_max_opset(const char *domain);

CG_API const cg_schema_attr *cg_schema_find_attr(const cg_schema *s, const char *name);

/* Iteration over all rows (for `convgate ops` listings and tests). */
CG_API size_t cg_schema_count(void);
CG_API const cg_schema *cg_schema_at(size_t i);

#ifdef __cplusplus
}
#endif
#endif
