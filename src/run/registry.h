/*
 * The kernel registry: every row of src/run/ops.def in one table, looked up
 * by (domain, op_type). The domain "ai.onnx" is the same as "".
 * The table is sorted once per lookup index (cg_registry_index) so lookups
 * are binary searches; there is no global mutable state.
 */
#ifndef CG_RUN_REGISTRY_H
#define CG_RUN_REGISTRY_H

#include <stddef.h>

#include "convgate/status.h"
#include "run/kernel.h"

typedef struct cg_kernel_entry {
    const char *domain; /* "" for ai.onnx */
    const char *op_type;
    cg_kernel_fn fn;
} cg_kernel_entry;

/* Rows in ops.def order (unsorted; may be iterated for listings). */
size_t cg_registry_count(void);
const cg_kernel_entry *cg_registry_at(size_t i);

/* A sorted view of the table, built by cg_registry_index_init. */
typedef struct cg_registry_index {
    const cg_kernel_entry **rows;
    size_t count;
} cg_registry_index;

/* Sorts the rows. Fails with CG_INVALID (naming the op) when two rows
 * register the same (domain, op_type); the index is still usable then (the
 * first row wins) so a duplicate does not stop everyone's testing. */
cg_status cg_registry_index_init(cg_registry_index *idx, cg_error *err);
void cg_registry_index_free(cg_registry_index *idx);
/* The kernel for (domain, op_type), or NULL. domain NULL/"ai.onnx" == "". */
cg_kernel_fn cg_registry_find(const cg_registry_index *idx, const char *domain,
                              const char *op_type);

#endif
