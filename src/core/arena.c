/* Chained-block bump allocator (see arena.h). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/arena.h"

#define ARENA_BLOCK 65536u
#define ARENA_ALIGN 16u

typedef struct arena_block {
    struct arena_block *next;
    size_t size, used;
    _Alignas(16) unsigned char data[];
} arena_block;

struct cg_arena {
    arena_block *head;
    size_t total;
};

cg_arena *cg_arena_new(void) { return calloc(1, sizeof(cg_arena)); }

void cg_arena_free(cg_arena *arena)
{
    if (!arena)
        return;
    arena_block *b = arena->head;
    while (b) {
        arena_block *next = b->next;
        free(b);
        b = next;
    }
    free(arena);
}

void *cg_arena_alloc(cg_arena *arena, size_t size)
{
    if (!arena || size > SIZE_MAX - ARENA_ALIGN - sizeof(arena_block))
        return NULL;
    size_t rounded = (size + ARENA_ALIGN - 1) & ~(size_t)(ARENA_ALIGN - 1);
    arena_block *b = arena->head;
    if (!b || b->size - b->used < rounded) {
        size_t cap = rounded > ARENA_BLOCK / 4 ? rounded : ARENA_BLOCK;
        arena_block *nb = malloc(sizeof(arena_block) + cap);
        if (!nb)
            return NULL;
        nb->size = cap;
        nb->used = 0;
        if (b && cap != ARENA_BLOCK) {
            /* big one-off: keep the current block as head for small requests */
            nb->next = b->next;
            b->next = nb;
        } else {
            nb->next = b;
            arena->head = nb;
        }
        b = nb;
    }
    void *p = b->data + b->used;
    b->used += rounded;
    arena->total += rounded;
    memset(p, 0, size);
    return p;
}

void *cg_arena_calloc(cg_arena *arena, size_t count, size_t size)
{
    if (size && count > SIZE_MAX / size)
        return NULL;
    return cg_arena_alloc(arena, count * size);
}

char *cg_arena_strndup(cg_arena *arena, const char *s, size_t len)
{
    if (len == SIZE_MAX)
        return NULL;
    char *p = cg_arena_alloc(arena, len + 1);
    if (p) {
        if (len)
            memcpy(p, s, len);
        p[len] = '\0';
    }
    return p;
}

char *cg_arena_strdup(cg_arena *arena, const char *s)
{
    return s ? cg_arena_strndup(arena, s, strlen(s)) : NULL;
}

size_t cg_arena_used(const cg_arena *arena) { return arena ? arena->total : 0; }
