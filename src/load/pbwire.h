/*
 * A bounds-checked protobuf wire-format reader and writer.
 *
 * Reader invariant: r->p <= r->end always; every length read is checked
 * against the bytes left before it is used, so a reader over a span can
 * never touch memory outside that span. The writer either counts bytes
 * (measure mode, out == NULL) or appends to a FILE / growable buffer.
 */
#ifndef CG_LOAD_PBWIRE_H
#define CG_LOAD_PBWIRE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

enum { PB_VARINT = 0, PB_FIXED64 = 1, PB_LEN = 2, PB_SGROUP = 3, PB_EGROUP = 4, PB_FIXED32 = 5 };

typedef struct pb_reader {
    const uint8_t *p;
    const uint8_t *end;
} pb_reader;

typedef struct pb_field {
    uint32_t number;
    uint32_t wire;
    uint64_t u;           /* VARINT / FIXED32 / FIXED64 value */
    const uint8_t *data;  /* LEN payload */
    size_t len;
    const uint8_t *start; /* first byte of the tag */
    const uint8_t *stop;  /* one past the field's last byte */
} pb_field;

typedef enum pb_result { PB_DONE = 0, PB_FIELD = 1, PB_ERROR = -1 } pb_result;

bool pb_read_varint(pb_reader *r, uint64_t *out);
/* Reads the next field. PB_ERROR with *why set on malformed input. */
pb_result pb_next(pb_reader *r, pb_field *f, const char **why);
/* Number of elements in a packed varint payload (bytes with bit 7 clear). */
size_t pb_packed_varint_count(const uint8_t *data, size_t len);

/* --- writer ------------------------------------------------------------- */

typedef struct pb_writer {
    FILE *file;      /* emit to a stream, or */
    uint8_t *buf;    /* emit to a growable buffer, or neither: measure */
    size_t cap;
    uint64_t size;   /* bytes emitted (or measured) so far */
    bool failed;     /* an allocation or write failed */
} pb_writer;

void pb_put_raw(pb_writer *w, const void *data, size_t len);
void pb_put_varint(pb_writer *w, uint64_t v);
void pb_put_tag(pb_writer *w, uint32_t number, uint32_t wire);
void pb_put_fixed32(pb_writer *w, uint32_t v);
void pb_put_fixed64(pb_writer *w, uint64_t v);
void pb_put_bytes(pb_writer *w, uint32_t number, const void *data, size_t len);
size_t pb_varint_size(uint64_t v);

#endif
