/*
 * What the lowerings (src/lower) share beyond include/convgate/lower.h: the
 * signature of a lowering and the table of them (lowerings.def).
 */
#ifndef CG_LOWER_INTERNAL_H
#define CG_LOWER_INTERNAL_H

#include <stdbool.h>

#include "lower/lgraph.h"

/* Rewrites m's graph (loaded by lg_load) into the graph the runtime
 * partitions. Removals go through lg_remove; notes through lg_note. */
typedef cg_status (*cg_lowering_fn)(lg_model *m, cg_error *err);

#define CG_LOWERING(name, fn, description) cg_status fn(lg_model *m, cg_error *err);
#include "lower/lowerings.def"
#undef CG_LOWERING

/* True when ONNX Runtime 1.22's CPU execution provider registers a kernel
 * for (domain, op) at since_version `since` (src/lower/ort_cpu_kernels.inc). */
bool cg_ort_cpu_has_kernel(const char *domain, const char *op, int since);

#endif
