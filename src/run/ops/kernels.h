/*
 * Prototypes of every kernel, generated from the kernel tables (ops.def and
 * the family .def files it includes): each family file includes this, so
 * a kernel's definition is checked against the signature the registry
 * calls, and -Wmissing-prototypes holds for kernels without a hand-written
 * list. Add a kernel by adding its CG_KERNEL row, never a prototype here.
 */
#ifndef CG_RUN_OPS_KERNELS_H
#define CG_RUN_OPS_KERNELS_H

#include "run/kernel.h"

#define CG_KERNEL(domain, op, fn) cg_status fn(cg_kernel_ctx *k);
#include "run/ops.def"
#undef CG_KERNEL

/* ... and of the init-time prepare functions (ops/prepare.def). */
#define CG_PREPARE(domain, op, fn) cg_status fn(cg_kernel_ctx *k);
#include "run/ops/prepare.def"
#undef CG_PREPARE

#endif
