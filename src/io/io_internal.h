/*
 * Helpers shared by the tensor-file readers and writers in src/io/:
 * little-endian field access and the allocation convention of values handed out by this module (see tensor_io.h).
 */
#ifndef CG_IO_INTERNAL_H
#define CG_IO_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "convgate/tensor_io.h"
#include "convgate/tensor.h"

/* max_bytes with 0 replaced by the default. */
size_t cg_io_limit(size_t max_bytes);

#include "core/file.h"

static inline uint16_t cg_io_le16(const uint8_t *p) { return (uint16_t)(p[0] | p[1] << 8); }
static inline uint32_t cg_io_le32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}
static inline void cg_io_put16(uint8_t *p, uint16_t v)
{
    p[0] = (uint8_t)v;
    p[1] = (uint8_t)(v >> 8);
}
static inline void cg_io_put32(uint8_t *p, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}


#endif
