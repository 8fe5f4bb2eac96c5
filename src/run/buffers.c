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
 *
 * Both are counted against the runtime's budget (convgate/budget.h) for as
 * long as the runtime keeps them, so every run's budget sees the memory the
 * runtime really holds: a scratch chunk from its allocation to
 * cg_buffers_free, a pooled buffer while it waits in the pool (a value made
 * from it is reserved as any other value, once its kernel returns). When a
 * run needs more than the budget has left, the pool's idle buffers are
 * freed first (cg_buffers_make_room); a run refused all the same leaves
 * the chunks and the pool as they were, for the next run.
 */
#include <stdlib.h>
#include <string.h>

#include "convgate/budget.h"
#include "core/mapfile.h"
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
    /* the chunk is the budget's until the runtime is freed; the doubling is
     * given up before the request is */
    cg_budget *b = rt->budget;
    if (b && cap > need && !cg_buffers_make_room(rt, cap))
        cap = need;
    if (b && (!cg_buffers_make_room(rt, cap) ||
              cg_budget_reserve(b, cap, "kernel scratch", NULL) != CG_OK))
        return NULL;
    uint8_t *base = cg_alloc_bulk(SCRATCH_ALIGN, cap);
    if (!base) {
        if (b)
            cg_budget_release(b, cap);
        return NULL;
    }
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
        if (rt->budget) /* the value made from it is reserved after its kernel */
            cg_budget_release(rt->budget, p->items[best].cap);
        p->bytes -= p->items[best].cap;
        p->items[best] = p->items[--p->count];
        return ptr;
    }
    return cg_alloc_bulk(sizeof(void *), bytes);
}

void cg_buffer_put(cg_runtime *rt, void *ptr, size_t bytes)
{
    cg_buffer_pool *p = &rt->buffers;
    if (!ptr)
        return;
    if (p->count == POOL_MAX_COUNT || bytes > POOL_MAX_BYTES - p->bytes ||
        (rt->budget && cg_budget_reserve(rt->budget, bytes, "pooled buffer", NULL) != CG_OK)) {
        free(ptr);
        return;
    }
    if (p->count == p->cap) {
        size_t ncap = p->cap ? 2 * p->cap : 16;
        if (ncap > POOL_MAX_COUNT)
            ncap = POOL_MAX_COUNT;
        void *n = realloc(p->items, ncap * sizeof *p->items);
        if (!n) {
            if (rt->budget)
                cg_budget_release(rt->budget, bytes);
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

/* Frees the pool's idle buffers, giving their bytes back to the budget. */
static void pool_trim(cg_runtime *rt)
{
    cg_buffer_pool *p = &rt->buffers;
    for (size_t i = 0; i < p->count; i++) {
        free(p->items[i].ptr);
        if (rt->budget)
            cg_budget_release(rt->budget, p->items[i].cap);
    }
    p->count = 0;
    p->bytes = 0;
}

bool cg_buffers_make_room(cg_runtime *rt, uint64_t bytes)
{
    cg_budget *b = rt->budget;
    if (!b || cg_budget_fits(b, bytes))
        return true;
    if (!rt->buffers.count)
        return false;
    pool_trim(rt);
    return cg_budget_fits(b, bytes);
}

void cg_buffers_free(cg_runtime *rt)
{
    pool_trim(rt);
    free(rt->buffers.items);
    memset(&rt->buffers, 0, sizeof rt->buffers);
    for (size_t i = 0; i < rt->scratch.count; i++) {
        free(rt->scratch.chunks[i].base);
        if (rt->budget)
            cg_budget_release(rt->budget, rt->scratch.chunks[i].cap);
    }
    free(rt->scratch.chunks);
    memset(&rt->scratch, 0, sizeof rt->scratch);
}
