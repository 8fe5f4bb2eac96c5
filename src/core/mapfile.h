/*
 * Read-only file mappings, the one place convgate touches mmap.
 * A model holds a chain of them (the model file, then each external data
 * file); they are unmapped together by cg_mappings_free.
 */
#ifndef CG_CORE_MAPFILE_H
#define CG_CORE_MAPFILE_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "convgate/status.h"

typedef struct cg_mapping {
    struct cg_mapping *next;
    const uint8_t *addr; /* NULL for an empty file */
    size_t size;
    char *label;         /* path as given, for messages and de-duplication */
    dev_t dev;
    ino_t ino;
} cg_mapping;

/* Maps an open regular file (the caller keeps ownership of fd). */
cg_status cg_map_fd(int fd, const char *label, cg_mapping **out, cg_error *err);
/* Opens and maps a path given by the user (links allowed: the user chose it). */
cg_status cg_map_path(const char *path, cg_mapping **out, cg_error *err);
/* Like cg_map_path, but refuses (before mapping) a file over max_bytes with
 * CG_LIMIT and a message naming protobuf's limit. */
cg_status cg_map_path_limited(const char *path, size_t max_bytes, cg_mapping **out, cg_error *err);
void cg_mappings_free(cg_mapping *m);

#endif
