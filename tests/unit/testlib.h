/*
 * Helpers shared by the unit tests that build nodes in memory: attribute
 * constructors. Every returned cg_attr borrows its strings and arrays from
 * the caller, which keeps them alive while the attribute is in use.
 */
#ifndef CG_TESTLIB_H
#define CG_TESTLIB_H

#include <stdint.h>
#include <string.h>

#include "convgate/model.h"

static inline cg_attr test_attr(const char *name, cg_attr_type type)
{
    cg_attr a;
    memset(&a, 0, sizeof a);
    a.name = name;
    a.type = type;
    a.has_type = true;
    return a;
}

static inline cg_attr attr_int(const char *name, int64_t v)
{
    cg_attr a = test_attr(name, CG_ATTR_INT);
    a.i = v;
    a.has_i = true;
    return a;
}

static inline cg_attr attr_float(const char *name, float v)
{
    cg_attr a = test_attr(name, CG_ATTR_FLOAT);
    a.f = v;
    a.has_f = true;
    return a;
}

static inline cg_attr attr_str(const char *name, const char *s)
{
    cg_attr a = test_attr(name, CG_ATTR_STRING);
    a.s.data = (const uint8_t *)s;
    a.s.len = strlen(s);
    return a;
}

static inline cg_attr attr_ints(const char *name, int64_t *v, size_t n)
{
    cg_attr a = test_attr(name, CG_ATTR_INTS);
    a.ints = v;
    a.ints_count = n;
    return a;
}

/* STRINGS over `count` C strings; `store` (caller's) holds the byte views. */
static inline cg_attr attr_strs(const char *name, cg_bytes *store, const char *const *s,
                                size_t count)
{
    cg_attr a = test_attr(name, CG_ATTR_STRINGS);
    for (size_t i = 0; i < count; i++) {
        store[i].data = (const uint8_t *)s[i];
        store[i].len = strlen(s[i]);
    }
    a.strings = store;
    a.strings_count = count;
    return a;
}

#endif
