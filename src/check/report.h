/*
 * Recording problems in a cg_check_report, shared by the ONNX checker
 * (checker.c) and the TFLite checker (src/tflite/check.c) so both count,
 * cap and fail the same way.
 */
#ifndef CG_CHECK_REPORT_H
#define CG_CHECK_REPORT_H

#include <stdbool.h>

#include "convgate/check.h"

/* Counts the problem and, below max_problems, stores a copy of its strings
 * (node and op_type may be NULL); past the cap it is only counted, as
 * `dropped`. False when memory ran out (the problem is then not stored). */
bool cg_check_report_add(cg_check_report *r, size_t max_problems, cg_check_severity sev,
                         const char *rule, const char *where, const char *node,
                         const char *op_type, const char *message);

/* The status a finished check returns: CG_NOMEM when memory ran out,
 * CG_INVALID with the first error in err when there are errors, else CG_OK. */
cg_status cg_check_report_status(const cg_check_report *r, bool oom, cg_error *err);

#endif
