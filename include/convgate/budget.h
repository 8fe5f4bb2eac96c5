/*
 * Budgets: how much memory and how much time running models may take.
 *
 * A cg_budget holds a memory limit, the bytes reserved against it, and a
 * deadline. The runtime reserves every tensor payload it holds (node
 * outputs, sequence items, the memory-plan arena, converted and densified
 * initializers, kernel scratch) before allocating it and releases it when
 * the value dies or leaves the run; it checks the deadline before every
 * node and inside long loops (Loop and Scan iterations, the row loops of
 * big kernels). Over either limit a run fails with CG_LIMIT and a message
 * naming the node. Tensor-file loaders cap what one file may decode to what
 * the budget has left.
 *
 * The process budget is what a runtime uses unless its options name
 * another: no deadline, and a memory limit of CG_BUDGET_DEFAULT_PERCENT of
 * the machine's physical memory (or of RLIMIT_AS, when that is lower). The
 * convgate command sets it from --max-memory and --time-limit. Budgets are
 * safe to share between threads.
 */
#ifndef CONVGATE_BUDGET_H
#define CONVGATE_BUDGET_H

#include <stdbool.h>
#include <stdint.h>

#include "convgate/api.h"
#include "convgate/status.h"

#ifdef __cplusplus
extern "C" {
#endif

#define CG_BUDGET_DEFAULT_PERCENT 75

typedef struct cg_budget cg_budget;

/* A budget of max_bytes (0: unlimited) and seconds from now (0: none);
 * NULL when out of memory. */
CG_API cg_budget *cg_budget_new(uint64_t max_bytes, double seconds);
CG_API void cg_budget_free(cg_budget *b);
/* The process budget (never NULL). */
CG_API cg_budget *cg_budget_process(void);
/* Sets b's limits (0: unlimited / none); the deadline counts from now. */
CG_API void cg_budget_set(cg_budget *b, uint64_t max_bytes, double seconds);
/* CG_BUDGET_DEFAULT_PERCENT of physical memory (and of RLIMIT_AS). */
CG_API uint64_t cg_budget_default_bytes(void);

/* Reserves bytes, or fails with CG_LIMIT and a message saying what would
 * have been allocated (`what`), how much is in use and the limit. */
CG_API CG_NODISCARD cg_status cg_budget_reserve(cg_budget *b, uint64_t bytes, const char *what, cg_error *err);
CG_API void cg_budget_release(cg_budget *b, uint64_t bytes);
/* Whether bytes more would fit now (nothing is reserved). */
CG_API bool cg_budget_fits(const cg_budget *b, uint64_t bytes);
/* Bytes left (UINT64_MAX without a limit). */
CG_API uint64_t cg_budget_left(const cg_budget *b);
CG_API uint64_t cg_budget_limit(const cg_budget *b); /* 0: unlimited */
CG_API uint64_t cg_budget_in_use(const cg_budget *b);
CG_API uint64_t cg_budget_peak(const cg_budget *b);

/* True once the deadline has passed. */
CG_API bool cg_budget_expired(const cg_budget *b);
/* The time limit in seconds (0: none). */
CG_API double cg_budget_seconds(const cg_budget *b);

#ifdef __cplusplus
}
#endif
#endif
