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
 * - Value buffers outside the arena and the heaps below (graph outputs,
 *   values a heap had no room for, a planned run's value whose size
 *   changed): freed buffers go to a small pool and are reused by later
 *   outputs that fit (at most twice the size asked for). Pool buffers are
 *   plain malloc blocks, so one handed to the caller as an output is freed
 *   by the caller like any other.
 *
 * - The value heap: the outputs of a run that records a memory plan (the
 *   first run when set-up could not predict one (predict.c), and any run
 *   whose input shapes changed) are placed in one
 *   reservation of address space (core/mapfile.h), huge-page advised, by
 *   best fit among the gaps its freed blocks left. The plan built after
 *   that run takes the reservation as its arena (cg_heap_adopt), so the
 *   pages the recording run touched are the pages the planned runs use:
 *   separate mallocs made the first run fault in every intermediate in
 *   4 KiB pages (mobilenet_v2: 2,400 faults, most of its first run), and a
 *   fresh arena made the second run fault all over again.
 *
 * - The kept heap: the same allocator for the values of subgraphs (If
 *   branches, Loop bodies), which have no memory plan. Its pages stay from
 *   one run to the next, so only the first run faults them in, and in huge
 *   pages (Silero VAD v5: 275 faults of its branches' values were nearly
 *   all of a 6.5 ms first run against 0.2 ms warm runs).
 *
 * Both are counted against the runtime's budget (convgate/budget.h) for as
 * long as the runtime keeps them, so every run's budget sees the memory the
 * runtime really holds: a scratch chunk from its allocation to
 * cg_buffers_free, the kept heap's committed pages while they are kept, a
 * pooled buffer while it waits in the pool (a value made
 * from it is reserved as any other value, once its kernel returns). When a
 * run needs more than the budget has left, the pool's idle buffers (and
 * the kept heap's pages, when no subgraph runs) are freed first
 * (cg_buffers_make_room); a run refused all the same leaves
 * the chunks and the pool as they were, for the next run.
 */
#include <stdlib.h>
#include <string.h>

#include "convgate/budget.h"
#include "core/mapfile.h"
#include "run/exec.h"

#define SCRATCH_ALIGN 64u
#define SCRATCH_MIN_CHUNK CG_HUGE_MIN
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

void cg_scratch_prefault(cg_runtime *rt, size_t bytes)
{
    if (bytes <= SCRATCH_MIN_CHUNK)
        return; /* a first chunk's size at most: not worth a chunk of its own */
    for (size_t i = 0; i < rt->scratch.count; i++)
        if (rt->scratch.chunks[i].cap >= bytes)
            return;
    cg_scratch_mark m = cg_scratch_mark_get(rt);
    void *p = cg_scratch_alloc(rt, bytes);
    if (p)
        cg_prefault_anon(p, bytes);
    cg_scratch_reset(rt, m);
}

/* --- value heap ---------------------------------------------------------------- */

/* In sanitizer builds the heap's free bytes are poisoned, and a block is
 * readable only up to the bytes asked for: a kernel that reads a freed
 * value or past its output's end fails there as it would on malloc'd
 * memory. */
#if defined(__SANITIZE_ADDRESS__)
#define HEAP_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define HEAP_ASAN 1
#endif
#endif
#ifdef HEAP_ASAN
#include <sanitizer/asan_interface.h>
#define HEAP_POISON(p, n) ASAN_POISON_MEMORY_REGION(p, n)
#define HEAP_UNPOISON(p, n) ASAN_UNPOISON_MEMORY_REGION(p, n)
#else
#define HEAP_POISON(p, n) ((void)(p), (void)(n))
#define HEAP_UNPOISON(p, n) ((void)(p), (void)(n))
#endif

#define HEAP_ALIGN 64u
/* address space of one reservation at most (the budget's limit when lower):
 * it costs nothing until used */
#define HEAP_MAX_RESERVE ((size_t)64 << 30)

static bool heap_reserve(cg_runtime *rt, cg_value_heap *h)
{
    if (h->base)
        return true;
    uint64_t limit = rt->budget ? cg_budget_limit(rt->budget) : 0;
    size_t bytes = limit && limit < HEAP_MAX_RESERVE ? (size_t)limit : HEAP_MAX_RESERVE;
    bytes = (bytes + CG_HUGE_MIN - 1) / CG_HUGE_MIN * CG_HUGE_MIN;
    h->base = cg_reserve_anon(bytes);
    if (!h->base)
        return false;
    h->reserved = bytes;
    h->committed = h->top = 0;
    h->free_count = h->live_count = 0;
    return true;
}

/* Room for one more span in *arr. */
static bool span_room(cg_heap_span **arr, size_t count, size_t *cap)
{
    if (count < *cap)
        return true;
    size_t ncap = *cap ? 2 * *cap : 32;
    cg_heap_span *n = realloc(*arr, ncap * sizeof *n);
    if (!n)
        return false;
    *arr = n;
    *cap = ncap;
    return true;
}

static bool span_push(cg_heap_span **arr, size_t *count, size_t *cap, size_t at, cg_heap_span sp)
{
    if (!span_room(arr, *count, cap))
        return false;
    memmove(*arr + at + 1, *arr + at, (*count - at) * sizeof **arr);
    (*arr)[at] = sp;
    (*count)++;
    return true;
}

static void pool_trim(cg_runtime *rt);

/* Commits [committed, want) of h; the kept heap reserves it in the budget
 * first (after the pool's idle buffers, if it must: not through
 * cg_buffers_make_room, which may unmap the kept heap itself). */
static bool heap_commit(cg_runtime *rt, cg_value_heap *h, size_t want)
{
    size_t grow = want - h->committed;
    bool budgeted = h == &rt->kept && rt->budget;
    if (budgeted && !cg_budget_fits(rt->budget, grow))
        pool_trim(rt);
    if (budgeted && cg_budget_reserve(rt->budget, grow, "subgraph values", NULL) != CG_OK)
        return false;
    if (!cg_commit_anon(h->base + h->committed, grow)) {
        if (budgeted)
            cg_budget_release(rt->budget, grow);
        return false;
    }
    if (budgeted)
        h->held += grow;
    HEAP_POISON(h->base + h->committed, grow);
    h->committed = want;
    return true;
}

static void *heap_alloc(cg_runtime *rt, cg_value_heap *h, size_t bytes)
{
    if (!bytes || bytes > SIZE_MAX - HEAP_ALIGN || !heap_reserve(rt, h))
        return NULL;
    size_t len = (bytes + HEAP_ALIGN - 1) / HEAP_ALIGN * HEAP_ALIGN;
    /* room for the block in the live list first: a failure then leaves
     * the heap as it was */
    if (!span_room(&h->live, h->live_count, &h->live_cap))
        return NULL;
    size_t best = SIZE_MAX;
    for (size_t i = 0; i < h->free_count; i++)
        if (h->free_spans[i].len >= len &&
            (best == SIZE_MAX || h->free_spans[i].len < h->free_spans[best].len))
            best = i;
    size_t off;
    if (best != SIZE_MAX) {
        cg_heap_span *sp = &h->free_spans[best];
        off = sp->off;
        sp->off += len;
        sp->len -= len;
        if (!sp->len) {
            memmove(sp, sp + 1, (h->free_count - best - 1) * sizeof *sp);
            h->free_count--;
        }
    } else {
        if (len > h->reserved - h->top)
            return NULL;
        size_t end = h->top + len;
        if (end > h->committed) {
            size_t want = (end + CG_HUGE_MIN - 1) / CG_HUGE_MIN * CG_HUGE_MIN;
            if (want > h->reserved)
                want = h->reserved;
            if (!heap_commit(rt, h, want))
                return NULL;
        }
        off = h->top;
        h->top = end;
    }
    h->live[h->live_count++] = (cg_heap_span){off, len};
    HEAP_UNPOISON(h->base + off, bytes);
    return h->base + off;
}

void cg_heaps_prefault(cg_runtime *rt, bool kept)
{
    cg_value_heap *hs[2] = {&rt->heap, kept ? &rt->kept : NULL};
    for (size_t i = 0; i < 2; i++) {
        cg_value_heap *h = hs[i];
        if (!h || !heap_reserve(rt, h))
            continue;
        size_t want = h->reserved < CG_HUGE_MIN ? h->reserved : CG_HUGE_MIN;
        if (h->committed < want && !heap_commit(rt, h, want))
            continue; /* the first run commits what it can */
        cg_prefault_anon(h->base, want);
    }
}

void *cg_heap_alloc(cg_runtime *rt, size_t bytes)
{
    return heap_alloc(rt, &rt->heap, bytes);
}

void *cg_heap_alloc_kept(cg_runtime *rt, size_t bytes)
{
    return heap_alloc(rt, &rt->kept, bytes);
}

static bool heap_owns(const cg_value_heap *h, const void *ptr)
{
    return h->base && (const uint8_t *)ptr >= h->base &&
           (size_t)((const uint8_t *)ptr - h->base) < h->reserved;
}

void cg_heap_free(cg_runtime *rt, void *ptr)
{
    cg_value_heap *h = heap_owns(&rt->heap, ptr)   ? &rt->heap
                       : heap_owns(&rt->kept, ptr) ? &rt->kept
                                                   : NULL;
    if (!h)
        return;
    size_t off = (size_t)((uint8_t *)ptr - h->base), i = h->live_count;
    while (i > 0 && h->live[i - 1].off != off)
        i--;
    if (!i)
        return; /* not a block of this heap: a bug the tests would show as a leak */
    cg_heap_span sp = h->live[i - 1];
    h->live[i - 1] = h->live[--h->live_count];
    HEAP_POISON(h->base + sp.off, sp.len);
    /* into the gaps by offset, merged with its neighbours */
    size_t at = 0;
    while (at < h->free_count && h->free_spans[at].off < sp.off)
        at++;
    if (at > 0 && h->free_spans[at - 1].off + h->free_spans[at - 1].len == sp.off) {
        at--;
        sp.off = h->free_spans[at].off;
        sp.len += h->free_spans[at].len;
        memmove(h->free_spans + at, h->free_spans + at + 1,
                (h->free_count - at - 1) * sizeof *h->free_spans);
        h->free_count--;
    }
    if (at < h->free_count && sp.off + sp.len == h->free_spans[at].off) {
        sp.len += h->free_spans[at].len;
        memmove(h->free_spans + at, h->free_spans + at + 1,
                (h->free_count - at - 1) * sizeof *h->free_spans);
        h->free_count--;
    }
    if (sp.off + sp.len == h->top)
        h->top = sp.off;
    else /* out of memory for the list: the gap is lost until the heap empties */
        (void)span_push(&h->free_spans, &h->free_count, &h->free_cap, at, sp);
    if (!h->live_count) {
        h->free_count = 0;
        h->top = 0;
    }
}

uint8_t *cg_heap_adopt(cg_runtime *rt, size_t bytes, size_t *map_bytes)
{
    cg_value_heap *h = &rt->heap;
    if (!h->base || h->live_count || bytes > h->reserved)
        return NULL;
    size_t want = (bytes + CG_HUGE_MIN - 1) / CG_HUGE_MIN * CG_HUGE_MIN;
    if (want > h->reserved)
        want = h->reserved;
    HEAP_UNPOISON(h->base, h->committed); /* an arena's bytes are all readable */
    if (want > h->committed) {
        if (!cg_commit_anon(h->base + h->committed, want - h->committed))
            return NULL;
    } else if (want < h->committed) {
        cg_decommit_anon(h->base + want, h->committed - want); /* pages the plan never uses */
    }
    uint8_t *arena = h->base;
    *map_bytes = h->reserved;
    h->base = NULL;
    h->reserved = h->committed = h->top = 0;
    h->free_count = 0;
    return arena;
}

/* Unmaps h's reservation (nothing may be out), giving its bytes back to
 * the budget. */
static void heap_unmap(cg_runtime *rt, cg_value_heap *h)
{
    HEAP_UNPOISON(h->base, h->committed);
    if (h->base)
        cg_unmap_anon(h->base, h->reserved);
    if (h->held && rt->budget)
        cg_budget_release(rt->budget, h->held);
    h->held = 0;
    h->base = NULL;
    h->reserved = h->committed = h->top = 0;
    h->free_count = h->live_count = 0;
}

void cg_heap_release(cg_runtime *rt)
{
    heap_unmap(rt, &rt->heap);
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
    /* the kept heap's pages go when no subgraph value is in them (the next
     * subgraph commits them again) */
    bool idle_kept = rt->kept.held && !rt->kept.live_count;
    if (!rt->buffers.count && !idle_kept)
        return false;
    pool_trim(rt);
    if (idle_kept)
        heap_unmap(rt, &rt->kept);
    return cg_budget_fits(b, bytes);
}

void cg_buffers_free(cg_runtime *rt)
{
    cg_value_heap *heaps[2] = {&rt->heap, &rt->kept};
    for (int i = 0; i < 2; i++) {
        heap_unmap(rt, heaps[i]);
        free(heaps[i]->free_spans);
        free(heaps[i]->live);
        memset(heaps[i], 0, sizeof *heaps[i]);
    }
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
