/*
 * Memory a runtime keeps from one run to the next, so that steady-state runs
 * do not go back to malloc for big blocks: glibc hands blocks above its mmap
 * threshold back to the kernel on free (or trims the heap top), and the next
 * run pays a page fault for every 4 KiB it touches again. On Silero VAD v5
 * that was three quarters of a run.
 *
 * - Scratch (cg_kernel_scratch): a stack of chunks. A step takes a mark
 *   before its kernel and resets to it after, so nested frames (control
 *   flow) pop in LIFO order; chunks stay allocated for the runtime's life.
 * - Value buffers outside the memory plan's arena (subgraph values, shapes
 *   that changed): freed buffers go to a small pool and are reused by later
 *   outputs that fit (at most twice the size asked for). Pool buffers are
 *   plain malloc blocks, so one handed to the caller as an output is freed
 *   by the caller like any other.
 */
#include <stdlib.h>
#include <string.h>

#include "run/exec.h"

#define SCRATCH_ALIGN 64u
#define SCRATCH_MIN_CHUNK ((size_t)1 << 20)
/* the pool keeps at most this many buffers and bytes */
#define POOL_MAX_COUNT 256
#define POOL_MAX_BYTES ((size_t)1 << 30)

/* --- scratch ------------------------------------------------------------------ */

cg_scratch_mark cg_scratch_mark_get(const cg_runtime *rt)
{
    cg_scratch_mark m = {rt->scratch.cur, rt->scratch.used};
    return m;
}

void cg_scratch_reset(cg_runtime *rt, cg_scratch_mark m)
{
    rt->scratch.cur = m.chunk;
    rt->scratch.used = m.used;
}

void *cg_scratch_alloc(cg_runtime *rt, size_t bytes)
{
    cg_scratch_stack *s = &rt->scratch;
    if (bytes > SIZE_MAX - 2 * SCRATCH_ALIGN)
        return NULL;
    size_t need = (bytes + SCRATCH_ALIGN - 1) / SCRATCH_ALIGN * SCRATCH_ALIGN;
    if (!need)
        need = SCRATCH_ALIGN;
    /* the current chunk, else the next ones (kept from earlier runs) */
    while (s->cur < s->count) {
        cg_scratch_chunk *c = &s->chunks[s->cur];
        if (c->cap - s->used >= need) {
            void *p = c->base + s->used;
            s->used += need;
            return p;
        }
        if (s->cur + 1 == s->count)
            break;
        s->cur++;
        s->used = 0;
    }
    /* a new chunk after the current one, big enough for this request */
    size_t cap = need > SCRATCH_MIN_CHUNK ? need : SCRATCH_MIN_CHUNK;
    if (s->count && s->chunks[s->count - 1].cap <= SIZE_MAX / 2 &&
        cap < 2 * s->chunks[s->count - 1].cap)
        cap = 2 * s->chunks[s->count - 1].cap;
    if (cap > need && cap - need > rt->opt.max_alloc_bytes)
        cap = need; /* do not double past the allocation limit */
    if (s->count == s->cap) {
        size_t ncap = s->cap ? 2 * s->cap : 8;
        cg_scratch_chunk *n = realloc(s->chunks, ncap * sizeof *n);
        if (!n)
            return NULL;
        s->chunks = n;
        s->cap = ncap;
    }
    uint8_t *base = aligned_alloc(SCRATCH_ALIGN, cap);
    if (!base)
        return NULL;
    /* chunks after cur are all too small for this request: the new one goes
     * at the end and becomes current (the others are reused after a reset) */
    s->chunks[s->count].base = base;
    s->chunks[s->count].cap = cap;
    s->cur = s->count++;
    s->used = need;
    return base;
}

/* --- value buffers ------------------------------------------------------------- */

void *cg_buffer_get(cg_runtime *rt, size_t bytes)
{
    cg_buffer_pool *p = &rt->buffers;
    size_t best = SIZE_MAX;
    for (size_t i = 0; i < p->count; i++) {
        size_t cap = p->items[i].cap;
        if (cap >= bytes && cap / 2 <= bytes + 4096 &&
            (best == SIZE_MAX || cap < p->items[best].cap))
            best = i;
    }
    if (best != SIZE_MAX) {
        void *ptr = p->items[best].ptr;
        p->bytes -= p->items[best].cap;
        p->items[best] = p->items[--p->count];
        return ptr;
    }
    return malloc(bytes ? bytes : 1);
}

void cg_buffer_put(cg_runtime *rt, void *ptr, size_t bytes)
{
    cg_buffer_pool *p = &rt->buffers;
    if (!ptr)
        return;
    if (p->count == POOL_MAX_COUNT || bytes > POOL_MAX_BYTES - p->bytes) {
        free(ptr);
        return;
    }
    if (p->count == p->cap) {
        size_t ncap = p->cap ? 2 * p->cap : 16;
        if (ncap > POOL_MAX_COUNT)
            ncap = POOL_MAX_COUNT;
        void *n = realloc(p->items, ncap * sizeof *p->items);
        if (!n) {
            free(ptr);
            return;
        }
        p->items = n;
        p->cap = ncap;
    }
    p->items[p->count].ptr = ptr;
    p->items[p->count].cap = bytes;
    p->count++;
    p->bytes += bytes;
}

void cg_buffers_free(cg_runtime *rt)
{
    for (size_t i = 0; i < rt->buffers.count; i++)
        free(rt->buffers.items[i].ptr);
    free(rt->buffers.items);
    memset(&rt->buffers, 0, sizeof rt->buffers);
    for (size_t i = 0; i < rt->scratch.count; i++)
        free(rt->scratch.chunks[i].base);
    free(rt->scratch.chunks);
    memset(&rt->scratch, 0, sizeof rt->scratch);
}
