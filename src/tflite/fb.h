/*
 * A bounds-checked FlatBuffers reader for untrusted bytes.
 *
 * Debian 12 ships no C FlatBuffers library (libflatbuffers-dev is C++ and
 * flatc generates C++ only), so convgate reads the format itself, as it
 * reads protobuf (docs/tflite.md). The rules are those of FlatBuffers'
 * Verifier (google/flatbuffers include/flatbuffers/verifier.h), applied at
 * every access instead of in a separate pass:
 *  - a uoffset is non-zero (it may not point at itself), below 2^31 and
 *    lands inside the buffer; offsets are unsigned, so every reference
 *    points strictly forward and no chain of references can loop;
 *  - a table is 4-byte aligned and inside the buffer; its vtable (table
 *    minus the signed soffset) is 2-byte aligned, at least 4 bytes (its
 *    size and the table's size), of even size and inside the buffer;
 *  - a field lies inside its table's inline size, past the soffset, inside
 *    the buffer and aligned to its width;
 *  - a vector's length is 4-byte aligned and its elements fit in the
 *    bytes that remain; a string also has its NUL terminator;
 *  - tables nest at most max_depth deep and at most max_tables are
 *    entered (the Verifier's defaults: 64 and 1,000,000);
 *  - and, ours: everything the decoder allocates is charged to a budget
 *    proportional to the file size, so structures that share sub-tables
 *    (legal, but a way to make a small file decode to gigabytes) cannot
 *    expand past a small multiple of the bytes really there.
 * Every failure records one message naming the path being decoded
 * (fb_reader.where) and the offending offset or value.
 */
#ifndef CG_TFLITE_FB_H
#define CG_TFLITE_FB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "convgate/status.h"
#include "core/arena.h"

/* FlatBuffers addresses at most 2^31 - 1 bytes (FLATBUFFERS_MAX_BUFFER_SIZE). */
#define FB_MAX_BUFFER ((size_t)0x7fffffff)

typedef struct fb_reader {
    const uint8_t *base;
    size_t size;          /* bytes the offsets may address */
    const char *label;    /* file name for messages */
    cg_error *err;
    cg_arena *arena;
    size_t tables;        /* tables entered so far */
    size_t max_tables;
    unsigned max_depth;
    size_t budget;        /* bytes the decoder may still allocate */
    char where[384];      /* "subgraph 0 > tensor 3 > quantization" */
    size_t where_len;
} fb_reader;

typedef struct fb_table {
    size_t pos;           /* the table's soffset */
    size_t vt;            /* its vtable */
    uint16_t vt_size;     /* bytes in the vtable */
    uint16_t inline_size; /* bytes of the table's inline part */
    unsigned depth;       /* 1 for the root table */
} fb_table;

typedef struct fb_vec {
    size_t pos;           /* first element */
    uint32_t count;
} fb_vec;

/* Little-endian loads (callers have checked the range). */
uint16_t fb_le16(const uint8_t *p);
uint32_t fb_le32(const uint8_t *p);
uint64_t fb_le64(const uint8_t *p);

/* Records "<label>: <where>: <message>" and returns false. */
#if defined(__GNUC__) || defined(__clang__)
__attribute__((format(printf, 2, 3)))
#endif
bool fb_fail(fb_reader *r, const char *fmt, ...);

/* Appends " > <segment>" to r->where; returns the length to restore. */
#if defined(__GNUC__) || defined(__clang__)
__attribute__((format(printf, 2, 3)))
#endif
size_t fb_where_push(fb_reader *r, const char *fmt, ...);
void fb_where_pop(fb_reader *r, size_t saved);

/* The root table (uoffset at byte 0). */
bool fb_root(fb_reader *r, fb_table *root);
/* Verifies the table at pos, `depth` levels deep; `what` names its type. */
bool fb_table_at(fb_reader *r, size_t pos, unsigned depth, const char *what, fb_table *t);

/* Position of field `id` (width bytes), 0 when absent. */
bool fb_field(fb_reader *r, const fb_table *t, unsigned id, size_t width, size_t *pos);
/* Scalars with the schema's default when absent. */
bool fb_u8(fb_reader *r, const fb_table *t, unsigned id, uint8_t def, uint8_t *out);
bool fb_i8(fb_reader *r, const fb_table *t, unsigned id, int8_t def, int8_t *out);
bool fb_bool(fb_reader *r, const fb_table *t, unsigned id, bool def, bool *out);
bool fb_i32(fb_reader *r, const fb_table *t, unsigned id, int32_t def, int32_t *out);
bool fb_u32(fb_reader *r, const fb_table *t, unsigned id, uint32_t def, uint32_t *out);
bool fb_i64(fb_reader *r, const fb_table *t, unsigned id, int64_t def, int64_t *out);
bool fb_u64(fb_reader *r, const fb_table *t, unsigned id, uint64_t def, uint64_t *out);
bool fb_f32(fb_reader *r, const fb_table *t, unsigned id, float def, float *out);

/* Follows the uoffset stored at pos; `what` names the target for messages. */
bool fb_deref(fb_reader *r, size_t pos, const char *what, size_t *target);
/* The sub-table in field id; *present false when absent. */
bool fb_subtable(fb_reader *r, const fb_table *t, unsigned id, const char *what, fb_table *sub,
                 bool *present);
/* The vector in field id with elem_size-byte elements ({0, 0} when absent). */
bool fb_vector(fb_reader *r, const fb_table *t, unsigned id, size_t elem_size, const char *what,
               fb_vec *v, bool *present);
/* The string in field id, pointing into the buffer (NUL verified); NULL if absent. */
bool fb_string(fb_reader *r, const fb_table *t, unsigned id, const char *what, const char **s);
/* Element i of a vector of tables / strings. */
bool fb_vec_table(fb_reader *r, const fb_vec *v, uint32_t i, unsigned depth, const char *what,
                  fb_table *t);
bool fb_vec_string(fb_reader *r, const fb_vec *v, uint32_t i, const char *what, const char **s);

/* Zero-filled arena allocation charged to the budget; fails with a message. */
void *fb_alloc(fb_reader *r, size_t count, size_t size);
/* A vector decoded into a host-order array (NULL when count is 0). */
bool fb_read_i32s(fb_reader *r, const fb_table *t, unsigned id, const char *what,
                  const int32_t **out, size_t *count);
bool fb_read_f32s(fb_reader *r, const fb_table *t, unsigned id, const char *what,
                  const float **out, size_t *count);
bool fb_read_i64s(fb_reader *r, const fb_table *t, unsigned id, const char *what,
                  const int64_t **out, size_t *count);
/* A [ubyte] vector as bytes in the buffer (zero-copy); data NULL if absent. */
bool fb_read_bytes(fb_reader *r, const fb_table *t, unsigned id, const char *what,
                   const uint8_t **data, size_t *len);

#endif
