/* The string map (core/strmap.h): open addressing, FNV-1a, load <= 1/2. */
#include <stdlib.h>
#include <string.h>

#include "core/assert.h"
#include "core/strmap.h"

static uint64_t strmap_hash(const char *s)
{
    uint64_t h = 1469598103934665603ull;
    for (const unsigned char *p = (const unsigned char *)s; *p; p++)
        h = (h ^ *p) * 1099511628211ull;
    return h;
}

/* The slot holding key, or the empty slot where it would go. */
static size_t strmap_slot(const cg_strmap *m, const char *key)
{
    size_t mask = m->cap - 1;
    size_t i = (size_t)strmap_hash(key) & mask;
    while (m->keys[i] && strcmp(m->keys[i], key) != 0)
        i = (i + 1) & mask;
    return i;
}

/* Rehashes into cap slots (a power of two that holds every key). */
static bool strmap_resize(cg_strmap *m, size_t cap)
{
    const char **keys = calloc(cap, sizeof *keys);
    size_t *vals = calloc(cap, sizeof *vals);
    if (!keys || !vals) {
        free(keys);
        free(vals);
        return false;
    }
    cg_strmap grown = {keys, vals, cap, m->count};
    for (size_t i = 0; i < m->cap; i++) {
        if (!m->keys[i])
            continue;
        size_t j = strmap_slot(&grown, m->keys[i]);
        keys[j] = m->keys[i];
        vals[j] = m->vals[i];
    }
    free(m->keys);
    free(m->vals);
    *m = grown;
    return true;
}

bool cg_strmap_reserve(cg_strmap *m, size_t n)
{
    size_t cap = m->cap ? m->cap : 16;
    while (cap / 2 < n) {
        if (cap > SIZE_MAX / 2 / sizeof(size_t))
            return false;
        cap *= 2;
    }
    return cap == m->cap || strmap_resize(m, cap);
}

void cg_strmap_free(cg_strmap *m)
{
    free(m->keys);
    free(m->vals);
    memset(m, 0, sizeof *m);
}

size_t cg_strmap_get(const cg_strmap *m, const char *key)
{
    if (!m->cap || !key)
        return CG_STRMAP_NONE;
    size_t i = strmap_slot(m, key);
    return m->keys[i] ? m->vals[i] : CG_STRMAP_NONE;
}

/* The slot for key, growing first when a new key would pass the load. */
static bool strmap_place(cg_strmap *m, const char *key, size_t *slot)
{
    if (m->cap) {
        *slot = strmap_slot(m, key);
        if (m->keys[*slot])
            return true;
    }
    if (!cg_strmap_reserve(m, m->count + 1))
        return false;
    *slot = strmap_slot(m, key);
    return true;
}

size_t cg_strmap_add(cg_strmap *m, const char *key, size_t val)
{
    CG_ASSERT(key && val != CG_STRMAP_NONE);
    size_t i;
    if (!strmap_place(m, key, &i))
        return CG_STRMAP_NONE;
    if (!m->keys[i]) {
        m->keys[i] = key;
        m->vals[i] = val;
        m->count++;
    }
    return m->vals[i];
}

bool cg_strmap_set(cg_strmap *m, const char *key, size_t val)
{
    CG_ASSERT(key && val != CG_STRMAP_NONE);
    size_t i;
    if (!strmap_place(m, key, &i))
        return false;
    if (!m->keys[i]) {
        m->keys[i] = key;
        m->count++;
    }
    m->vals[i] = val;
    return true;
}
