/*
 * The shared constant buffers (initshare.h): a chained hash table keyed by
 * the source address, under one mutex. Large buffers are fresh mappings
 * (cg_map_anon: untouched until filled, returned to the system when freed),
 * small ones aligned heap blocks.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "convgate/dtype.h"
#include "core/mapfile.h"
#include "convgate/runtime.h"
#include "run/exec.h"
#include "run/initshare.h"

#define SHARE_ALIGN 64u
#define SHARE_MAP_MIN (256u * 1024u) /* buffers from this size are mappings */
#define SHARE_BUCKETS 1024u

struct cg_shared {
    const void *src;
    size_t len;
    uint8_t tag[CG_SHARED_TAG_MAX];
    size_t tag_len;
    uint8_t *data;
    bool mapped;
    size_t refs; /* under table_lock */
    atomic_int filled;
    pthread_mutex_t fill_lock;
    cg_shared *next; /* bucket chain */
};

static pthread_mutex_t table_lock = PTHREAD_MUTEX_INITIALIZER;
static cg_shared *table[SHARE_BUCKETS];
static size_t live;

static size_t bucket_of(const void *src)
{
    uint64_t h = (uint64_t)(uintptr_t)src;
    h ^= h >> 33;
    h *= 0xff51afd7ed558ccdULL;
    h ^= h >> 33;
    return (size_t)(h % SHARE_BUCKETS);
}

static cg_shared *shared_new(const void *src, const void *tag, size_t tag_len, size_t len)
{
    cg_shared *c = calloc(1, sizeof *c);
    if (!c)
        return NULL;
    c->src = src;
    c->len = len;
    if (tag_len)
        memcpy(c->tag, tag, tag_len);
    c->tag_len = tag_len;
    c->mapped = len >= SHARE_MAP_MIN;
    if (c->mapped) {
        c->data = cg_map_anon(len);
    } else {
        size_t rounded = (len + SHARE_ALIGN - 1) / SHARE_ALIGN * SHARE_ALIGN;
        c->data = aligned_alloc(SHARE_ALIGN, rounded ? rounded : SHARE_ALIGN);
    }
    if (!c->data || pthread_mutex_init(&c->fill_lock, NULL) != 0) {
        if (c->mapped)
            cg_unmap_anon(c->data, len);
        else
            free(c->data);
        free(c);
        return NULL;
    }
    atomic_init(&c->filled, 0);
    c->refs = 1;
    return c;
}

static void shared_free(cg_shared *c)
{
    pthread_mutex_destroy(&c->fill_lock);
    if (c->mapped)
        cg_unmap_anon(c->data, c->len);
    else
        free(c->data);
    free(c);
}

cg_shared *cg_shared_acquire(const void *src, const void *tag, size_t tag_len, size_t bytes)
{
    if (!src || !bytes || tag_len > CG_SHARED_TAG_MAX || (tag_len && !tag))
        return NULL;
    size_t b = bucket_of(src);
    pthread_mutex_lock(&table_lock);
    for (cg_shared *c = table[b]; c; c = c->next)
        if (c->src == src && c->len == bytes && c->tag_len == tag_len &&
            (!tag_len || memcmp(c->tag, tag, tag_len) == 0)) {
            c->refs++;
            pthread_mutex_unlock(&table_lock);
            return c;
        }
    cg_shared *c = shared_new(src, tag, tag_len, bytes);
    if (c) {
        c->next = table[b];
        table[b] = c;
        live++;
    }
    pthread_mutex_unlock(&table_lock);
    return c;
}

const void *cg_shared_src(const cg_shared *c) { return c->src; }

bool cg_shared_is_filled(const cg_shared *c) { return atomic_load(&c->filled) != 0; }

uint8_t *cg_shared_data(const cg_shared *c)
{
    return c->data;
}

size_t cg_shared_len(const cg_shared *c)
{
    return c->len;
}

bool cg_shared_fill_begin(cg_shared *c)
{
    if (atomic_load_explicit(&c->filled, memory_order_acquire))
        return false;
    pthread_mutex_lock(&c->fill_lock);
    if (atomic_load_explicit(&c->filled, memory_order_relaxed)) {
        pthread_mutex_unlock(&c->fill_lock);
        return false;
    }
    return true; /* held until cg_shared_fill_end */
}

void cg_shared_fill_end(cg_shared *c, bool filled)
{
    if (filled)
        atomic_store_explicit(&c->filled, 1, memory_order_release);
    pthread_mutex_unlock(&c->fill_lock);
}

static bool held_source(const void *src);

/* Unlinks c from its bucket (under table_lock). */
static void shared_unlink(cg_shared *c)
{
    cg_shared **at = &table[bucket_of(c->src)];
    while (*at && *at != c)
        at = &(*at)->next;
    if (*at)
        *at = c->next;
    live--;
}

void cg_shared_release(cg_shared *c)
{
    if (!c)
        return;
    bool last = false;
    pthread_mutex_lock(&table_lock);
    /* the last holder gone: kept for the next runtime while a hold keeps
     * its source alive (so the source cannot be freed and its address
     * reused), else freed */
    if (--c->refs == 0 && !held_source(c->src)) {
        shared_unlink(c);
        last = true;
    }
    pthread_mutex_unlock(&table_lock);
    if (last)
        shared_free(c);
}

size_t cg_shared_live(void)
{
    pthread_mutex_lock(&table_lock);
    size_t n = live;
    pthread_mutex_unlock(&table_lock);
    return n;
}

size_t cg_shared_filled_bytes(void)
{
    size_t bytes = 0;
    pthread_mutex_lock(&table_lock);
    for (size_t b = 0; b < SHARE_BUCKETS; b++)
        for (cg_shared *c = table[b]; c; c = c->next)
            if (atomic_load(&c->filled))
                bytes += c->len;
    pthread_mutex_unlock(&table_lock);
    return bytes;
}

size_t cg_init_copy_holders(const void *src, size_t len)
{
    size_t refs = 0;
    pthread_mutex_lock(&table_lock);
    for (cg_shared *c = table[bucket_of(src)]; c; c = c->next)
        if (c->src == src && c->len == len && c->tag_len == 0)
            refs = c->refs;
    pthread_mutex_unlock(&table_lock);
    return refs;
}

cg_shared *cg_init_copy_acquire(const uint8_t *src, size_t len)
{
    return cg_shared_acquire(src, NULL, 0, len);
}

void cg_init_copy_fill(cg_shared *c)
{
    if (cg_shared_fill_begin(c)) {
        memcpy(c->data, c->src, c->len);
        cg_shared_fill_end(c, true);
        /* the misaligned source is read through the copy from now on: its
         * pages of the model's mapping need not stay resident as well */
        cg_mapping_drop_pages(c->src, c->len);
    }
}

void cg_init_proto_over(const cg_tensor_proto *tp, const cg_bytes *raw, const uint8_t *data,
                        cg_tensor_proto *out)
{
    *out = *tp;
    if (raw == &tp->external_payload)
        out->external_payload.data = data;
    else
        out->raw_data.data = data;
}

const cg_bytes *cg_init_payload_misaligned(const cg_tensor_proto *tp)
{
    if (!tp->has_data_type || !cg_dtype_valid(tp->data_type))
        return NULL;
    cg_dtype dt = (cg_dtype)tp->data_type;
    size_t size = cg_dtype_size(dt);
    if (dt == CG_DTYPE_STRING || dt == CG_DTYPE_BOOL || size == 0)
        return NULL;
    const cg_bytes *raw = tp->has_data_location && tp->data_location == CG_LOC_EXTERNAL
                              ? &tp->external_payload : &tp->raw_data;
    if (!raw->data || !raw->len || (uintptr_t)raw->data % size == 0)
        return NULL;
    return raw;
}

/* A hold (cg_runtime_hold_weights) keeps, for its lifetime, the copies of its
 * graph's misaligned payloads, and every shared buffer whose source lies in
 * the graph's payloads or in those copies once its last holder is gone:
 * those sources live as long as the hold, so a later runtime finds the
 * buffer (packed weights, say) instead of making it again. */
typedef struct byte_range {
    uintptr_t lo, hi; /* [lo, hi) */
} byte_range;

struct cg_weights_hold {
    cg_shared **copies;
    size_t count, cap;
    byte_range *ranges; /* the sources it keeps alive */
    size_t range_count, range_cap;
    cg_weights_hold *next; /* holds alive, under table_lock */
};

static cg_weights_hold *holds;

static bool held_source(const void *src)
{
    uintptr_t a = (uintptr_t)src;
    for (const cg_weights_hold *h = holds; h; h = h->next)
        for (size_t i = 0; i < h->range_count; i++)
            if (a >= h->ranges[i].lo && a < h->ranges[i].hi)
                return true;
    return false;
}

static bool hold_range(cg_weights_hold *h, const void *p, size_t len)
{
    if (h->range_count == h->range_cap) {
        size_t cap = h->range_cap ? h->range_cap * 2 : 64;
        byte_range *r = realloc(h->ranges, cap * sizeof *r);
        if (!r)
            return false;
        h->ranges = r;
        h->range_cap = cap;
    }
    h->ranges[h->range_count].lo = (uintptr_t)p;
    h->ranges[h->range_count].hi = (uintptr_t)p + len;
    h->range_count++;
    return true;
}

/* Depth as the loader bounds nesting; deeper graphs are simply not held. */
#define HOLD_MAX_DEPTH 64

static bool hold_add(cg_weights_hold *h, const cg_tensor_proto *tp)
{
    const cg_bytes *any = tp->has_data_location && tp->data_location == CG_LOC_EXTERNAL
                              ? &tp->external_payload : &tp->raw_data;
    if (any->data && any->len && !hold_range(h, any->data, any->len))
        return false;
    const cg_bytes *raw = cg_init_payload_misaligned(tp);
    if (!raw)
        return true;
    if (h->count == h->cap) {
        size_t cap = h->cap ? h->cap * 2 : 64;
        cg_shared **c = realloc(h->copies, cap * sizeof *c);
        if (!c)
            return false;
        h->copies = c;
        h->cap = cap;
    }
    cg_shared *c = cg_init_copy_acquire(raw->data, raw->len);
    if (!c)
        return false;
    h->copies[h->count++] = c;
    return hold_range(h, cg_shared_data(c), cg_shared_len(c));
}

static bool hold_graph(cg_weights_hold *h, const cg_graph *g, int depth)
{
    if (!g || depth > HOLD_MAX_DEPTH)
        return true;
    for (size_t i = 0; i < g->initializer_count; i++)
        if (!hold_add(h, &g->initializers[i]))
            return false;
    for (size_t n = 0; n < g->node_count; n++)
        for (size_t a = 0; a < g->nodes[n].attr_count; a++) {
            const cg_attr *at = &g->nodes[n].attrs[a];
            if (!hold_graph(h, at->g, depth + 1))
                return false;
            for (size_t k = 0; k < at->graphs_count; k++)
                if (!hold_graph(h, at->graphs[k], depth + 1))
                    return false;
        }
    return true;
}

cg_weights_hold *cg_runtime_hold_weights(const cg_model *model)
{
    const cg_graph *g = model ? model->graph : NULL;
    if (!g)
        return NULL;
    cg_weights_hold *h = calloc(1, sizeof *h);
    if (!h)
        return NULL;
    if (!hold_graph(h, g, 0) || !h->range_count) {
        cg_runtime_hold_free(h);
        return NULL;
    }
    pthread_mutex_lock(&table_lock);
    h->next = holds;
    holds = h;
    pthread_mutex_unlock(&table_lock);
    return h;
}

void cg_runtime_hold_free(cg_weights_hold *h)
{
    if (!h)
        return;
    pthread_mutex_lock(&table_lock);
    for (cg_weights_hold **at = &holds; *at; at = &(*at)->next)
        if (*at == h) {
            *at = h->next;
            break;
        }
    pthread_mutex_unlock(&table_lock);
    for (size_t i = 0; i < h->count; i++)
        cg_shared_release(h->copies[i]);
    /* what it kept beyond its last holder, unless another hold keeps it */
    cg_shared *gone = NULL;
    pthread_mutex_lock(&table_lock);
    for (size_t b = 0; b < SHARE_BUCKETS; b++)
        for (cg_shared **at = &table[b]; *at;) {
            cg_shared *c = *at;
            if (c->refs == 0 && !held_source(c->src)) {
                *at = c->next;
                live--;
                c->next = gone;
                gone = c;
            } else {
                at = &c->next;
            }
        }
    pthread_mutex_unlock(&table_lock);
    while (gone) {
        cg_shared *c = gone;
        gone = c->next;
        shared_free(c);
    }
    free(h->ranges);
    free(h->copies);
    free(h);
}
