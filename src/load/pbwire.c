/* Protobuf wire format: bounds-checked reading, streaming writing. */
#include <stdlib.h>
#include <string.h>

#include "load/pbwire.h"

bool pb_read_varint(pb_reader *r, uint64_t *out)
{
    uint64_t v = 0;
    for (unsigned shift = 0; shift < 64; shift += 7) {
        if (r->p >= r->end)
            return false;
        uint8_t b = *r->p++;
        if (shift == 63 && (b & 0x7e))
            return false; /* more than 64 bits */
        v |= (uint64_t)(b & 0x7f) << shift;
        if (!(b & 0x80)) {
            *out = v;
            return true;
        }
    }
    return false;
}

pb_result pb_next(pb_reader *r, pb_field *f, const char **why)
{
    if (r->p >= r->end)
        return PB_DONE;
    f->start = r->p;
    uint64_t tag;
    if (!pb_read_varint(r, &tag)) {
        *why = "truncated or overlong field tag";
        return PB_ERROR;
    }
    f->number = (uint32_t)(tag >> 3);
    f->wire = (uint32_t)(tag & 7);
    if (tag >> 3 > 536870911u || f->number == 0) {
        *why = "invalid field number 0 or above 2^29-1";
        return PB_ERROR;
    }
    f->data = NULL;
    f->len = 0;
    f->u = 0;
    switch (f->wire) {
    case PB_VARINT:
        if (!pb_read_varint(r, &f->u)) {
            *why = "truncated or overlong (over 10 bytes) varint";
            return PB_ERROR;
        }
        break;
    case PB_FIXED64:
        if (r->end - r->p < 8) {
            *why = "truncated fixed64";
            return PB_ERROR;
        }
        for (int i = 7; i >= 0; i--)
            f->u = (f->u << 8) | r->p[i];
        r->p += 8;
        break;
    case PB_FIXED32:
        if (r->end - r->p < 4) {
            *why = "truncated fixed32";
            return PB_ERROR;
        }
        for (int i = 3; i >= 0; i--)
            f->u = (f->u << 8) | r->p[i];
        r->p += 4;
        break;
    case PB_LEN: {
        uint64_t len;
        if (!pb_read_varint(r, &len)) {
            *why = "truncated length";
            return PB_ERROR;
        }
        if (len > (uint64_t)(r->end - r->p)) {
            *why = "length-delimited field runs past the end of its message (truncated file?)";
            return PB_ERROR;
        }
        f->data = r->p;
        f->len = (size_t)len;
        r->p += len;
        break;
    }
    default:
        *why = "unsupported wire type (groups or invalid)";
        return PB_ERROR;
    }
    f->stop = r->p;
    return PB_FIELD;
}

size_t pb_packed_varint_count(const uint8_t *data, size_t len)
{
    size_t n = 0;
    for (size_t i = 0; i < len; i++)
        n += !(data[i] & 0x80);
    return n;
}

void pb_put_raw(pb_writer *w, const void *data, size_t len)
{
    if (w->failed || len == 0)
        return;
    if (w->file) {
        if (fwrite(data, 1, len, w->file) != len)
            w->failed = true;
    } else if (w->buf || w->cap == SIZE_MAX) {
        /* cap == SIZE_MAX marks "buffer mode, not yet allocated" */
        size_t need = (size_t)w->size + len;
        size_t cap = w->cap == SIZE_MAX ? 0 : w->cap;
        if (need < len) {
            w->failed = true;
            return;
        }
        if (need > cap) {
            size_t ncap = cap ? cap : 4096;
            while (ncap < need)
                ncap = ncap > SIZE_MAX / 2 ? need : ncap * 2;
            uint8_t *nb = realloc(w->buf, ncap);
            if (!nb) {
                w->failed = true;
                return;
            }
            w->buf = nb;
            w->cap = ncap;
        }
        memcpy(w->buf + w->size, data, len);
    }
    w->size += len;
}

size_t pb_varint_size(uint64_t v)
{
    size_t n = 1;
    while (v >= 0x80) {
        v >>= 7;
        n++;
    }
    return n;
}

void pb_put_varint(pb_writer *w, uint64_t v)
{
    uint8_t b[10];
    size_t n = 0;
    while (v >= 0x80) {
        b[n++] = (uint8_t)(v | 0x80);
        v >>= 7;
    }
    b[n++] = (uint8_t)v;
    pb_put_raw(w, b, n);
}

void pb_put_tag(pb_writer *w, uint32_t number, uint32_t wire)
{
    pb_put_varint(w, ((uint64_t)number << 3) | wire);
}

void pb_put_fixed32(pb_writer *w, uint32_t v)
{
    uint8_t b[4] = {(uint8_t)v, (uint8_t)(v >> 8), (uint8_t)(v >> 16), (uint8_t)(v >> 24)};
    pb_put_raw(w, b, 4);
}

void pb_put_fixed64(pb_writer *w, uint64_t v)
{
    uint8_t b[8];
    for (int i = 0; i < 8; i++)
        b[i] = (uint8_t)(v >> (8 * i));
    pb_put_raw(w, b, 8);
}

void pb_put_bytes(pb_writer *w, uint32_t number, const void *data, size_t len)
{
    pb_put_tag(w, number, PB_LEN);
    pb_put_varint(w, len);
    pb_put_raw(w, data, len);
}
