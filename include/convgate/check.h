/*
 * The structural checker: onnx.checker's rules (ONNX 1.12, without
 * full_check's shape inference) plus the hardening rules of
 * docs/reliability items 17-22, 25 and 32, applied to a loaded cg_model.
 *
 * Unlike onnx.checker, which stops at the first failure, the checker walks
 * the whole model and collects every problem it finds, each with where it
 * is (graph path, node name or index, op type) and what is wrong with the
 * offending value. It never modifies the model and never fails on bad model
 * data: the only error it returns itself is CG_NOMEM.
 */
#ifndef CONVGATE_CHECK_H
#define CONVGATE_CHECK_H

#include <stdbool.h>
#include <stddef.h>

#include "convgate/model.h"
#include "convgate/status.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum cg_check_severity {
    CG_CHECK_ERROR = 0,  /* the model violates a rule: it fails the check */
    CG_CHECK_WARNING = 1 /* worth knowing, but onnx.checker would pass it */
} cg_check_severity;

typedef struct cg_check_problem {
    cg_check_severity severity;
    const char *rule;   /* stable short id ("topo-order", "attr-unknown", ...) */
    char *where;        /* path: "graph 'main' > node 'loop1' (Loop) > attribute 'body' > ..." */
    char *node;         /* innermost node's name, "#<index>" when unnamed; NULL if none */
    char *op_type;      /* innermost node's op type; NULL if none */
    char *message;      /* what is wrong, naming the offending value */
} cg_check_problem;

typedef struct cg_check_report {
    cg_check_problem *problems; /* in the order found (model, then graph order) */
    size_t count;
    size_t capacity;
    size_t error_count;   /* all errors found, including ones not stored */
    size_t warning_count; /* all warnings found, including ones not stored */
    size_t dropped;       /* problems past max_problems: counted, not stored */
} cg_check_report;

typedef struct cg_check_options {
    size_t max_problems; /* stored problems; the rest are only counted. Default 1000 */
} cg_check_options;

CG_API void cg_check_options_default(cg_check_options *opt);

/* Checks `model` and fills `report` (initialized here; free it with
 * cg_check_report_free even on failure). Returns CG_OK when the model has no
 * errors (warnings allowed), CG_INVALID when it has at least one (err then
 * holds the first), CG_NOMEM when memory ran out (the report holds what was
 * found so far), CG_USAGE for NULL arguments. opt may be NULL. */
CG_API CG_NODISCARD cg_status cg_check_model(const cg_model *model, const cg_check_options *opt,
                                             cg_check_report *report, cg_error *err);

CG_API void cg_check_report_free(cg_check_report *report);

/* The highest IR version the checker accepts: 10, the IR that ships with
 * ai.onnx opset 21 (ONNX 1.16), the newest opset the schema table holds. */
#define CG_CHECK_MAX_IR_VERSION 10

#ifdef __cplusplus
}
#endif
#endif
