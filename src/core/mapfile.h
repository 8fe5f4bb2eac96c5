/*
 * Read-only file mappings, the one place convgate touches mmap.
 * A model holds a chain of them (the model file, then each external data
 * file); they are unmapped together by cg_mappings_free.
 *
 * A mapped file that another process truncates while it is mapped makes
 * the next read of a page past the new end raise SIGBUS: MAP_PRIVATE does
 * not prevent it (private pages not yet written still read the file's page
 * cache), and copying every payload would give up zero-copy loading for
 * weights of any size. So a mapping stays zero-copy, every live mapping is
 * listed, and cg_mapping_lookup (async-signal-safe) lets the application's
 * SIGBUS handler say which file changed under it (the convgate command
 * reports it and exits with status 2 instead of dying on the signal).
 */
#ifndef CG_CORE_MAPFILE_H
#define CG_CORE_MAPFILE_H

#include <stdbool.h>
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
    struct cg_mapping *live_next; /* the list of live mappings (mapfile.c) */
} cg_mapping;

/* Maps an open regular file (the caller keeps ownership of fd). */
cg_status cg_map_fd(int fd, const char *label, cg_mapping **out, cg_error *err);
/* Opens and maps a path given by the user (links allowed: the user chose it;
 * anything but a regular file is refused without blocking). */
cg_status cg_map_path(const char *path, cg_mapping **out, cg_error *err);
/* Like cg_map_path, but refuses (before mapping) a file over max_bytes with
 * CG_LIMIT and a message naming protobuf's limit. */
cg_status cg_map_path_limited(const char *path, size_t max_bytes, cg_mapping **out, cg_error *err);
void cg_mappings_free(cg_mapping *m);

/* Async-signal-safe: whether addr lies inside a live mapping, and if so
 * its label and mapped size. For SIGBUS handlers (see above). */
bool cg_mapping_lookup(const void *addr, const char **label, size_t *size);

/* Hands back to the kernel the whole pages of [addr, addr + len) when the
 * range lies in a live mapping (nothing otherwise): bytes that were copied
 * elsewhere and are not read again. A later read of them faults the pages
 * in again from the file, so this only lowers the resident size. */
void cg_mapping_drop_pages(const void *addr, size_t len);
/* bytes of fresh zeroed memory for bulk data (initializer copies), in the
 * kernel's default page size: huge pages asked with MADV_HUGEPAGE made the
 * first touch 4x dearer here (346 MB copied: 0.94-1.14 s of CPU time
 * against 0.25 s, the 2 MiB faults zeroing and compacting). NULL when it
 * cannot be had. */
void *cg_map_anon(size_t bytes);
void cg_unmap_anon(void *p, size_t bytes);

#endif
