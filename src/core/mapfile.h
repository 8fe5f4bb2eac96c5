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
/* Bulk memory (initializer copies and packed weights, the memory plan's
 * arena, big value buffers, scratch chunks) asks the kernel for
 * transparent huge pages: its first touch then takes one fault per 2 MiB,
 * not one per 4 KiB. On this machine's VM (kernel 6.18, THP "madvise",
 * 2026-12-02 23:30) a 4 KiB fault of fresh memory cost 17-33 us of CPU:
 * copying 100 MB into fresh memory took 340-840 ms of CPU in 4 KiB pages
 * against 14-35 ms in huge pages (alternating runs, a standalone test);
 * vit_b_16's set-up and first run (346 MB of copies) went from 75k faults
 * to 10k (main at c7db9a8).
 * An earlier measurement here (2026-12-02 00:50, load 15-20) found huge
 * pages 4x dearer (the 2 MiB faults zeroing and compacting), so the cost
 * depends on the host's state; the figures in docs/BENCHMARKS.md say which
 * held in a run. cg_alloc_bulk advises only the whole 2 MiB pages inside
 * its block, so a block never becomes resident beyond the bytes it
 * touches. */
#define CG_HUGE_MIN ((size_t)2 << 20)

/* bytes of fresh zeroed memory, huge-page advised (all of it: the
 * mapping's bytes are all written, as an initializer copy's are); NULL
 * when it cannot be had. Freed by cg_unmap_anon. */
void *cg_map_anon(size_t bytes);
void cg_unmap_anon(void *p, size_t bytes);
/* A heap block of bytes (freed by free()) aligned to align (a power of
 * two, a multiple of sizeof(void *)); from CG_HUGE_MIN bytes on, aligned
 * to 2 MiB and huge-page advised. NULL when it cannot be had. */
void *cg_alloc_bulk(size_t align, size_t bytes);
/* Address space for memory that grows while it is used (the runtime's
 * value heap, run/buffers.c): bytes (a multiple of CG_HUGE_MIN) of
 * inaccessible, uncommitted address space, 2 MiB aligned and huge-page
 * advised, which costs neither memory nor commit charge until
 * cg_commit_anon makes a prefix of it usable. NULL when it cannot be had.
 * Freed by cg_unmap_anon(p, bytes). */
void *cg_reserve_anon(size_t bytes);
/* Makes [p, p + bytes) of a reservation readable and writable (zero pages
 * until touched); false when refused (out of commit charge). */
bool cg_commit_anon(void *p, size_t bytes);
/* Faults in [p, p + bytes) of committed memory now, as a write would
 * (in huge pages where the range is advised so), without writing it: for
 * set-up to take faults a first run would otherwise pay. Advice: nothing
 * happens where the kernel lacks MADV_POPULATE_WRITE (before Linux 5.14). */
void cg_prefault_anon(void *p, size_t bytes);
/* Hands [p, p + bytes) of a reservation back to the kernel and makes it
 * inaccessible again: its pages stop counting towards the resident size. */
void cg_decommit_anon(void *p, size_t bytes);
/* Whether the kernel was asked to back [p, p + 1) with huge pages (its
 * mapping carries the advice): for tests. false where it cannot tell. */
bool cg_huge_advised(const void *p);

#endif
