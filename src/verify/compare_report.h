/*
 * Text and JSON renderings of cg_metrics (convgate/compare.h), shared by the
 * commands that compare tensors (compare, verify, gate, bisect), so a metric
 * reads the same everywhere. Internal to libconvgate and the CLI.
 */
#ifndef CG_VERIFY_COMPARE_REPORT_H
#define CG_VERIFY_COMPARE_REPORT_H

#include <jansson.h>
#include <stdint.h>
#include <stdio.h>

#include "convgate/compare.h"

/* A number for JSON: finite values as numbers, NaN and infinities as the
 * strings "nan", "inf", "-inf" (JSON has no such numbers). */
json_t *cg_report_json_number(double v);

/* Flat index -> "[i,j,k]" for a tensor of the given shape ("[index]" when
 * the shape is unknown or the index out of range). */
void cg_report_position(int64_t index, int rank, const int64_t *dims, char *buf, size_t cap);

/* Writes the metric lines of m (errors, NaN/Inf, histogram, worst element)
 * to f, each line starting with indent. `sample` names the sample the worst
 * element came from (NULL: omitted); rank/dims give its position. */
void cg_report_metrics_text(FILE *f, const char *indent, const cg_metrics *m, const char *sample,
                            int rank, const int64_t *dims);

/* Sets the metric fields of m on obj: count, mismatches, max_abs, mean_abs,
 * max_rel, rmse, nmse, cosine, pearson, max_ulp, nan_ref, nan_target,
 * inf_ref, inf_target, bit_identical, shape_mismatch, dtype_mismatch,
 * hist ({"edges": lower edges, "counts"}), worst ({index, position, ref,
 * target, sample}). Returns 0, or -1 when out of memory. */
int cg_report_metrics_json(json_t *obj, const cg_metrics *m, const char *sample, int rank,
                           const int64_t *dims);

#endif
