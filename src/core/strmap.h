/*
 * The string map: borrowed NUL-terminated keys to size_t values, the one
 * hash map of convgate (value names to ids, slots, entries; name sets).
 *
 * Open addressing with linear probing and FNV-1a. Invariants: cap is 0 or
 * a power of two; count <= cap / 2 (the map doubles before a put would
 * pass that), so a probe always ends at an empty slot; keys[i] == NULL
 * marks an empty slot. Keys are not copied: each must stay valid and
 * unchanged while the map holds it. A zeroed cg_strmap is an empty map.
 * Nothing is ever removed (no caller needs it, and it keeps probing simple).
 */
#ifndef CG_CORE_STRMAP_H
#define CG_CORE_STRMAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct cg_strmap {
    const char **keys;
    size_t *vals;
    size_t cap;
    size_t count;
} cg_strmap;

/* What cg_strmap_get returns for an absent key; never a stored value. */
#define CG_STRMAP_NONE SIZE_MAX

/* Makes room for n keys in all, so that n puts never grow the map. False
 * when out of memory or when n is too large to index. */
bool cg_strmap_reserve(cg_strmap *m, size_t n);
void cg_strmap_free(cg_strmap *m);

/* The value of key, or CG_STRMAP_NONE (also for a NULL key). */
size_t cg_strmap_get(const cg_strmap *m, const char *key);

static inline bool cg_strmap_has(const cg_strmap *m, const char *key)
{
    return cg_strmap_get(m, key) != CG_STRMAP_NONE;
}

/* Inserts key -> val unless key is present (the first put wins). Returns
 * the value key maps to afterwards, or CG_STRMAP_NONE when out of memory.
 * val must not be CG_STRMAP_NONE. */
size_t cg_strmap_add(cg_strmap *m, const char *key, size_t val);

/* Inserts key -> val, replacing any value key had; a key already present
 * keeps its stored string, so key may be a temporary buffer then. False
 * when out of memory. val must not be CG_STRMAP_NONE. */
bool cg_strmap_set(cg_strmap *m, const char *key, size_t val);

#endif
