/* The verified FlatBuffers accessors (fb.h states the rules). */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "tflite/fb.h"

uint16_t fb_le16(const uint8_t *p)
{
    return (uint16_t)(p[0] | (p[1] << 8));
}

uint32_t fb_le32(const uint8_t *p)
{
    return (uint32_t)p[0] | ((uint32_t)p[1] << 8) | ((uint32_t)p[2] << 16) |
           ((uint32_t)p[3] << 24);
}

uint64_t fb_le64(const uint8_t *p)
{
    return (uint64_t)fb_le32(p) | ((uint64_t)fb_le32(p + 4) << 32);
}

bool fb_fail(fb_reader *r, const char *fmt, ...)
{
    char msg[600];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (r->where_len)
        cg_error_set(r->err, CG_PARSE, "%s: %s: %s", r->label, r->where, msg);
    else
        cg_error_set(r->err, CG_PARSE, "%s: %s", r->label, msg);
    return false;
}

size_t fb_where_push(fb_reader *r, const char *fmt, ...)
{
    size_t saved = r->where_len;
    size_t room = sizeof r->where - r->where_len;
    if (r->where_len > 0 && room > 3) {
        memcpy(r->where + r->where_len, " > ", 4);
        r->where_len += 3;
        room -= 3;
    }
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(r->where + r->where_len, room, fmt, ap);
    va_end(ap);
    if (n > 0)
        r->where_len += (size_t)n < room ? (size_t)n : room - 1;
    return saved;
}

void fb_where_pop(fb_reader *r, size_t saved)
{
    r->where_len = saved;
    r->where[saved] = '\0';
}

/* True when [pos, pos + len) lies inside the buffer (Verifier::Verify). */
static bool in_range(const fb_reader *r, size_t pos, size_t len)
{
    return len <= r->size && pos <= r->size - len;
}

bool fb_table_at(fb_reader *r, size_t pos, unsigned depth, const char *what, fb_table *t)
{
    if (depth > r->max_depth)
        return fb_fail(r, "%s at offset %zu is nested %u tables deep, over the limit of %u", what,
                       pos, depth, r->max_depth);
    if (++r->tables > r->max_tables)
        return fb_fail(r, "more than %zu tables (the FlatBuffers verifier's limit); the file "
                          "shares tables to look larger than it is, or is not a model",
                       r->max_tables);
    if (!in_range(r, pos, 4))
        return fb_fail(r, "%s at offset %zu is past the end of the %zu-byte buffer", what, pos,
                       r->size);
    if (pos % 4)
        return fb_fail(r, "%s at offset %zu is not 4-byte aligned", what, pos);
    int32_t soff = (int32_t)fb_le32(r->base + pos);
    int64_t vt = (int64_t)pos - (int64_t)soff;
    if (vt < 0 || !in_range(r, (size_t)vt, 4))
        return fb_fail(r, "%s at offset %zu: its vtable offset %d points to %lld, outside the "
                          "%zu-byte buffer",
                       what, pos, soff, (long long)vt, r->size);
    if (vt % 2)
        return fb_fail(r, "%s at offset %zu: its vtable at %lld is not 2-byte aligned", what, pos,
                       (long long)vt);
    uint16_t vt_size = fb_le16(r->base + vt);
    if (vt_size < 4 || vt_size % 2)
        return fb_fail(r, "%s at offset %zu: its vtable at %lld has size %u (a vtable holds at "
                          "least its own size and the table's, 4 bytes, in 2-byte steps)%s",
                       what, pos, (long long)vt, vt_size,
                       soff == 0 ? "; the soffset 0 makes the table its own vtable" : "");
    if (!in_range(r, (size_t)vt, vt_size))
        return fb_fail(r, "%s at offset %zu: its %u-byte vtable at %lld runs past the end of the "
                          "%zu-byte buffer",
                       what, pos, vt_size, (long long)vt, r->size);
    uint16_t inline_size = fb_le16(r->base + vt + 2);
    if (inline_size < 4 || !in_range(r, pos, inline_size))
        return fb_fail(r, "%s at offset %zu: inline size %u (from its vtable) is under 4 bytes or "
                          "runs past the end of the %zu-byte buffer",
                       what, pos, inline_size, r->size);
    t->pos = pos;
    t->vt = (size_t)vt;
    t->vt_size = vt_size;
    t->inline_size = inline_size;
    t->depth = depth;
    return true;
}

bool fb_deref(fb_reader *r, size_t pos, const char *what, size_t *target)
{
    *target = 0; /* defined on failure too: callers stop there, but compilers cannot tell */
    if (!in_range(r, pos, 4) || pos % 4)
        return fb_fail(r, "offset to %s at %zu is misaligned or outside the buffer", what, pos);
    uint32_t o = fb_le32(r->base + pos);
    if (o == 0)
        return fb_fail(r, "offset to %s at %zu is 0 (it would point at itself)", what, pos);
    if (o > FB_MAX_BUFFER)
        return fb_fail(r, "offset to %s at %zu is %u, over FlatBuffers' 2 GiB range", what, pos,
                       o);
    if (!in_range(r, pos + o, 1))
        return fb_fail(r, "offset to %s at %zu points to %zu, past the end of the %zu-byte "
                          "buffer",
                       what, pos, pos + o, r->size);
    *target = pos + o;
    return true;
}

bool fb_root(fb_reader *r, fb_table *root)
{
    size_t pos;
    if (!fb_deref(r, 0, "the root table", &pos))
        return false;
    return fb_table_at(r, pos, 1, "the root table", root);
}

bool fb_field(fb_reader *r, const fb_table *t, unsigned id, size_t width, size_t *pos)
{
    *pos = 0;
    size_t slot = 4 + 2 * (size_t)id;
    if (slot + 2 > t->vt_size)
        return true; /* an older writer: the field is absent */
    uint16_t vo = fb_le16(r->base + t->vt + slot);
    if (vo == 0)
        return true;
    if (vo < 4 || (size_t)vo + width > t->inline_size)
        return fb_fail(r, "field %u of the table at offset %zu sits at byte %u, outside the "
                          "table's %u inline bytes (after its 4-byte vtable offset)",
                       id, t->pos, vo, t->inline_size);
    size_t p = t->pos + vo;
    if (!in_range(r, p, width))
        return fb_fail(r, "field %u of the table at offset %zu runs past the end of the buffer",
                       id, t->pos);
    if (p % width)
        return fb_fail(r, "field %u of the table at offset %zu is at %zu, not %zu-byte aligned",
                       id, t->pos, p, width);
    *pos = p;
    return true;
}

/* A scalar field of width bytes (1, 2, 4 or 8), little-endian, or def. */
static bool scalar(fb_reader *r, const fb_table *t, unsigned id, size_t width, uint64_t def,
                   uint64_t *out)
{
    size_t pos;
    if (!fb_field(r, t, id, width, &pos))
        return false;
    if (!pos) {
        *out = def;
        return true;
    }
    const uint8_t *p = r->base + pos;
    switch (width) {
    case 1: *out = p[0]; break;
    case 2: *out = fb_le16(p); break;
    case 4: *out = fb_le32(p); break;
    default: *out = fb_le64(p); break;
    }
    return true;
}

bool fb_u8(fb_reader *r, const fb_table *t, unsigned id, uint8_t def, uint8_t *out)
{
    uint64_t v;
    if (!scalar(r, t, id, 1, def, &v))
        return false;
    *out = (uint8_t)v;
    return true;
}

bool fb_i8(fb_reader *r, const fb_table *t, unsigned id, int8_t def, int8_t *out)
{
    uint64_t v;
    if (!scalar(r, t, id, 1, (uint8_t)def, &v))
        return false;
    uint8_t b = (uint8_t)v;
    *out = b < 128 ? (int8_t)b : (int8_t)((int)b - 256);
    return true;
}

bool fb_bool(fb_reader *r, const fb_table *t, unsigned id, bool def, bool *out)
{
    uint64_t v;
    if (!scalar(r, t, id, 1, def ? 1 : 0, &v))
        return false;
    *out = v != 0;
    return true;
}

bool fb_u32(fb_reader *r, const fb_table *t, unsigned id, uint32_t def, uint32_t *out)
{
    uint64_t v;
    if (!scalar(r, t, id, 4, def, &v))
        return false;
    *out = (uint32_t)v;
    return true;
}

bool fb_i32(fb_reader *r, const fb_table *t, unsigned id, int32_t def, int32_t *out)
{
    uint32_t u;
    if (!fb_u32(r, t, id, (uint32_t)def, &u))
        return false;
    memcpy(out, &u, sizeof u); /* two's complement, no implementation-defined cast */
    return true;
}

bool fb_u64(fb_reader *r, const fb_table *t, unsigned id, uint64_t def, uint64_t *out)
{
    return scalar(r, t, id, 8, def, out);
}

bool fb_i64(fb_reader *r, const fb_table *t, unsigned id, int64_t def, int64_t *out)
{
    uint64_t u;
    if (!scalar(r, t, id, 8, (uint64_t)def, &u))
        return false;
    memcpy(out, &u, sizeof u);
    return true;
}

bool fb_f32(fb_reader *r, const fb_table *t, unsigned id, float def, float *out)
{
    uint32_t bits;
    memcpy(&bits, &def, sizeof bits);
    if (!fb_u32(r, t, id, bits, &bits))
        return false;
    memcpy(out, &bits, sizeof bits);
    return true;
}

bool fb_subtable(fb_reader *r, const fb_table *t, unsigned id, const char *what, fb_table *sub,
                 bool *present)
{
    *present = false;
    size_t pos, target;
    if (!fb_field(r, t, id, 4, &pos))
        return false;
    if (!pos)
        return true;
    if (!fb_deref(r, pos, what, &target) || !fb_table_at(r, target, t->depth + 1, what, sub))
        return false;
    *present = true;
    return true;
}

/* The vector whose length sits at vpos. */
static bool vector_at(fb_reader *r, size_t vpos, size_t elem_size, const char *what, fb_vec *v)
{
    if (!in_range(r, vpos, 4) || vpos % 4)
        return fb_fail(r, "%s at offset %zu: its length is misaligned or outside the buffer",
                       what, vpos);
    uint32_t count = fb_le32(r->base + vpos);
    if ((uint64_t)count >= FB_MAX_BUFFER / elem_size)
        return fb_fail(r, "%s at offset %zu claims %u elements of %zu bytes, over FlatBuffers' "
                          "2 GiB limit",
                       what, vpos, count, elem_size);
    size_t bytes = (size_t)count * elem_size;
    if (!in_range(r, vpos + 4, bytes))
        return fb_fail(r, "%s at offset %zu claims %u elements (%zu bytes) but only %zu bytes "
                          "remain in the buffer",
                       what, vpos, count, bytes, r->size - vpos - 4);
    v->pos = vpos + 4;
    v->count = count;
    return true;
}

bool fb_vector(fb_reader *r, const fb_table *t, unsigned id, size_t elem_size, const char *what,
               fb_vec *v, bool *present)
{
    *present = false;
    v->pos = 0;
    v->count = 0;
    size_t pos, target;
    if (!fb_field(r, t, id, 4, &pos))
        return false;
    if (!pos)
        return true;
    if (!fb_deref(r, pos, what, &target) || !vector_at(r, target, elem_size, what, v))
        return false;
    *present = true;
    return true;
}

/* The string whose length sits at spos. */
static bool string_at(fb_reader *r, size_t spos, const char *what, const char **s)
{
    fb_vec v = {0, 0};
    if (!vector_at(r, spos, 1, what, &v))
        return false;
    if (!in_range(r, v.pos + v.count, 1) || r->base[v.pos + v.count] != 0)
        return fb_fail(r, "%s at offset %zu (%u bytes) has no NUL terminator", what, spos,
                       v.count);
    *s = (const char *)(r->base + v.pos);
    return true;
}

bool fb_string(fb_reader *r, const fb_table *t, unsigned id, const char *what, const char **s)
{
    *s = NULL;
    size_t pos, target;
    if (!fb_field(r, t, id, 4, &pos))
        return false;
    if (!pos)
        return true;
    return fb_deref(r, pos, what, &target) && string_at(r, target, what, s);
}

bool fb_vec_table(fb_reader *r, const fb_vec *v, uint32_t i, unsigned depth, const char *what,
                  fb_table *t)
{
    size_t target;
    return fb_deref(r, v->pos + 4 * (size_t)i, what, &target) &&
           fb_table_at(r, target, depth, what, t);
}

bool fb_vec_string(fb_reader *r, const fb_vec *v, uint32_t i, const char *what, const char **s)
{
    size_t target;
    return fb_deref(r, v->pos + 4 * (size_t)i, what, &target) && string_at(r, target, what, s);
}

void *fb_alloc(fb_reader *r, size_t count, size_t size)
{
    if (count == 0)
        return NULL;
    if (size && count > SIZE_MAX / size) {
        fb_fail(r, "%zu elements of %zu bytes overflow", count, size);
        return NULL;
    }
    size_t bytes = count * size;
    if (bytes > r->budget) {
        fb_fail(r, "decoding would allocate %zu more bytes with %zu left of its budget (16 "
                   "bytes per byte of the %zu-byte FlatBuffer, plus 1 MiB): its tables are "
                   "shared to expand far past the file's size",
                bytes, r->budget, r->size);
        return NULL;
    }
    r->budget -= bytes;
    void *p = cg_arena_calloc(r->arena, count, size);
    if (!p) {
        cg_error_set(r->err, CG_NOMEM, "%s: out of memory", r->label);
        return NULL;
    }
    return p;
}

/* True on a big-endian host, where FlatBuffers' little-endian numbers need
 * their bytes reversed. */
static bool host_big_endian(void)
{
    const uint16_t one = 1;
    uint8_t first;
    memcpy(&first, &one, 1);
    return first == 0;
}

/* A vector of width-byte numbers copied into a host-order array. */
static bool read_numbers(fb_reader *r, const fb_table *t, unsigned id, const char *what,
                         size_t width, void **out, size_t *count)
{
    *out = NULL;
    *count = 0;
    fb_vec v;
    bool present;
    if (!fb_vector(r, t, id, width, what, &v, &present))
        return false;
    if (!v.count)
        return true;
    uint8_t *a = fb_alloc(r, v.count, width);
    if (!a)
        return false;
    memcpy(a, r->base + v.pos, (size_t)v.count * width);
    if (host_big_endian())
        for (size_t i = 0; i < v.count; i++)
            for (size_t lo = i * width, hi = lo + width - 1; lo < hi; lo++, hi--) {
                uint8_t b = a[lo];
                a[lo] = a[hi];
                a[hi] = b;
            }
    *out = a;
    *count = v.count;
    return true;
}

bool fb_read_i32s(fb_reader *r, const fb_table *t, unsigned id, const char *what,
                  const int32_t **out, size_t *count)
{
    void *a;
    bool ok = read_numbers(r, t, id, what, sizeof **out, &a, count);
    *out = a;
    return ok;
}

bool fb_read_f32s(fb_reader *r, const fb_table *t, unsigned id, const char *what,
                  const float **out, size_t *count)
{
    void *a;
    bool ok = read_numbers(r, t, id, what, sizeof **out, &a, count);
    *out = a;
    return ok;
}

bool fb_read_i64s(fb_reader *r, const fb_table *t, unsigned id, const char *what,
                  const int64_t **out, size_t *count)
{
    void *a;
    bool ok = read_numbers(r, t, id, what, sizeof **out, &a, count);
    *out = a;
    return ok;
}

bool fb_read_bytes(fb_reader *r, const fb_table *t, unsigned id, const char *what,
                   const uint8_t **data, size_t *len)
{
    *data = NULL;
    *len = 0;
    fb_vec v;
    bool present;
    if (!fb_vector(r, t, id, 1, what, &v, &present))
        return false;
    if (present) {
        *data = r->base + v.pos;
        *len = v.count;
    }
    return true;
}
