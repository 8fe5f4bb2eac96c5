/*
 * A bump allocator that owns a model's structural data. Blocks are chained;
 * nothing is freed until cg_arena_free. Allocations are 16-byte aligned.
 * Requests are overflow-checked; a failed allocation returns NULL.
 */
#ifndef CG_CORE_ARENA_H
#define CG_CORE_ARENA_H

#include <stddef.h>

#include "convgate/api.h"

/* Also declared, with cg_arena_alloc and cg_arena_strdup, by the public
 * convgate/model.h for code that builds models; core stays below load. */
typedef struct cg_arena cg_arena;

cg_arena *cg_arena_new(void);
void cg_arena_free(cg_arena *arena);
/* Zero-filled allocation of count * size bytes; NULL on overflow or OOM. */
void *cg_arena_calloc(cg_arena *arena, size_t count, size_t size);
/* Copies len bytes and appends a NUL. */
char *cg_arena_strndup(cg_arena *arena, const char *s, size_t len);
/* size bytes, 16-byte aligned; NULL on overflow or OOM. */
CG_API void *cg_arena_alloc(cg_arena *arena, size_t size);
/* A NUL-terminated copy of s. */
CG_API char *cg_arena_strdup(cg_arena *arena, const char *s);
/* Total bytes handed out, for memory accounting. */
size_t cg_arena_used(const cg_arena *arena);

#endif
