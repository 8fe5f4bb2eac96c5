/* POSIX mmap wrappers (see mapfile.h). */
/* MAP_ANONYMOUS is not in POSIX 2008: ask glibc for it
 * here, the one file that maps memory. */
#define _DEFAULT_SOURCE 1
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/file.h"
#include "core/mapfile.h"

/* Live mappings: pushed and unlinked under the lock; a signal handler walks
 * the list without it (it only reads pointers that are published with
 * release stores before the nodes they point to can be seen). */
static _Atomic(cg_mapping *) live_head;
static pthread_mutex_t live_lock = PTHREAD_MUTEX_INITIALIZER;

static void live_add(cg_mapping *m)
{
    pthread_mutex_lock(&live_lock);
    m->live_next = atomic_load_explicit(&live_head, memory_order_relaxed);
    atomic_store_explicit(&live_head, m, memory_order_release);
    pthread_mutex_unlock(&live_lock);
}

static void live_remove(cg_mapping *m)
{
    pthread_mutex_lock(&live_lock);
    cg_mapping *p = atomic_load_explicit(&live_head, memory_order_relaxed);
    if (p == m) {
        atomic_store_explicit(&live_head, m->live_next, memory_order_release);
    } else {
        while (p && p->live_next != m)
            p = p->live_next;
        if (p)
            p->live_next = m->live_next;
    }
    pthread_mutex_unlock(&live_lock);
}

bool cg_mapping_lookup(const void *addr, const char **label, size_t *size)
{
    uintptr_t a = (uintptr_t)addr;
    for (cg_mapping *m = atomic_load_explicit(&live_head, memory_order_acquire); m;
         m = m->live_next) {
        uintptr_t lo = (uintptr_t)m->addr;
        if (m->addr && a >= lo && a - lo < m->size) {
            *label = m->label;
            *size = m->size;
            return true;
        }
    }
    return false;
}

void cg_mapping_drop_pages(const void *addr, size_t len)
{
    const char *label;
    size_t size;
    long page = sysconf(_SC_PAGESIZE);
    uintptr_t a = (uintptr_t)addr;
    /* only a file mapping: MADV_DONTNEED on anonymous or heap memory would
     * zero it, where a read-only private file mapping reads the file again */
    if (!addr || !len || page <= 0 || a > UINTPTR_MAX - len ||
        !cg_mapping_lookup(addr, &label, &size) ||
        !cg_mapping_lookup((const uint8_t *)addr + len - 1, &label, &size))
        return;
    uintptr_t p = (uintptr_t)page;
    uintptr_t lo = (a + p - 1) / p * p, hi = (a + len) / p * p;
    if (hi > lo)
        (void)madvise((void *)lo, hi - lo, MADV_DONTNEED); /* advice: failure changes nothing */
}

/* Advises huge pages for the whole 2 MiB pages of [p, p + bytes). */
static void advise_huge(void *p, size_t bytes)
{
#ifdef MADV_HUGEPAGE
    uintptr_t a = (uintptr_t)p, huge = (uintptr_t)CG_HUGE_MIN;
    if (!p || bytes < CG_HUGE_MIN || a > UINTPTR_MAX - bytes)
        return;
    uintptr_t lo = (a + huge - 1) / huge * huge, hi = (a + bytes) / huge * huge;
    if (hi > lo)
        (void)madvise((void *)lo, hi - lo, MADV_HUGEPAGE); /* advice: fine if refused */
#else
    (void)p;
    (void)bytes;
#endif
}

void *cg_map_anon(size_t bytes)
{
    if (!bytes)
        return NULL;
    void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED)
        return NULL;
#ifdef MADV_HUGEPAGE
    /* the whole mapping, not only its whole 2 MiB pages: neighbouring
     * mappings with the same advice merge into one, and a 2 MiB page that
     * spans two of them is huge too (vit_b_16's 2.4 MB weights have no
     * aligned 2 MiB page of their own) */
    (void)madvise(p, bytes, MADV_HUGEPAGE); /* advice: fine if refused */
#endif
    return p;
}

void cg_unmap_anon(void *p, size_t bytes)
{
    if (p && bytes)
        munmap(p, bytes);
}

void *cg_reserve_anon(size_t bytes)
{
    size_t huge = CG_HUGE_MIN;
    if (!bytes || bytes % huge || bytes > SIZE_MAX - huge)
        return NULL;
    /* one huge page more, so that a 2 MiB aligned start fits; the rest is
     * unmapped again */
    uint8_t *m = mmap(NULL, bytes + huge, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
                      -1, 0);
    if (m == MAP_FAILED)
        return NULL;
    uintptr_t a = (uintptr_t)m;
    uint8_t *p = m + ((huge - a % huge) % huge);
    if (p > m)
        munmap(m, (size_t)(p - m));
    if (p + bytes < m + bytes + huge)
        munmap(p + bytes, (size_t)(m + bytes + huge - (p + bytes)));
#ifdef MADV_HUGEPAGE
    (void)madvise(p, bytes, MADV_HUGEPAGE); /* advice: fine if refused */
#endif
    return p;
}

void cg_prefault_anon(void *p, size_t bytes)
{
#ifdef MADV_POPULATE_WRITE
    if (p && bytes)
        (void)madvise(p, bytes, MADV_POPULATE_WRITE); /* advice: an older kernel refuses it */
#else
    (void)p;
    (void)bytes;
#endif
}

bool cg_commit_anon(void *p, size_t bytes)
{
    return !bytes || mprotect(p, bytes, PROT_READ | PROT_WRITE) == 0;
}

void cg_decommit_anon(void *p, size_t bytes)
{
    if (!p || !bytes)
        return;
    (void)madvise(p, bytes, MADV_DONTNEED); /* the pages go; the range stays reserved */
    (void)mprotect(p, bytes, PROT_NONE);
}

void *cg_alloc_bulk(size_t align, size_t bytes)
{
    void *p = NULL;
    if (!bytes)
        bytes = 1;
    if (bytes >= CG_HUGE_MIN && align < CG_HUGE_MIN)
        align = CG_HUGE_MIN;
    if (posix_memalign(&p, align, bytes) != 0)
        return NULL;
    advise_huge(p, bytes);
    return p;
}

bool cg_huge_advised(const void *p)
{
    FILE *f = fopen("/proc/self/smaps", "r");
    if (!f)
        return false;
    uintptr_t a = (uintptr_t)p;
    bool inside = false, advised = false;
    char line[512];
    while (fgets(line, sizeof line, f)) {
        unsigned long long lo, hi;
        if (sscanf(line, "%llx-%llx ", &lo, &hi) == 2) { /* a mapping's first line */
            inside = a >= lo && a < hi;
        } else if (inside && strncmp(line, "VmFlags:", 8) == 0) {
            advised = strstr(line, " hg") != NULL;
            break;
        }
    }
    fclose(f);
    return advised;
}

cg_status cg_map_fd(int fd, const char *label, cg_mapping **out, cg_error *err)
{
    *out = NULL;
    struct stat st;
    if (fstat(fd, &st) != 0)
        return cg_error_set(err, CG_IO, "%s: cannot stat: %s", label, strerror(errno));
    if (!S_ISREG(st.st_mode))
        return cg_error_set(err, CG_IO, "%s: not a regular file", label);
    if ((uint64_t)st.st_size > SIZE_MAX)
        return cg_error_set(err, CG_LIMIT, "%s: too large to map", label);
    cg_mapping *m = calloc(1, sizeof *m);
    size_t label_len = strlen(label);
    char *copy = malloc(label_len + 1);
    if (!m || !copy) {
        free(m);
        free(copy);
        return cg_error_set(err, CG_NOMEM, "%s: out of memory", label);
    }
    memcpy(copy, label, label_len + 1);
    m->label = copy;
    m->size = (size_t)st.st_size;
    m->dev = st.st_dev;
    m->ino = st.st_ino;
    if (m->size > 0) {
        void *p = mmap(NULL, m->size, PROT_READ, MAP_PRIVATE, fd, 0);
        if (p == MAP_FAILED) {
            int e = errno;
            free(m->label);
            free(m);
            return cg_error_set(err, CG_IO, "%s: cannot map: %s", label, strerror(e));
        }
        m->addr = p;
        live_add(m);
    }
    *out = m;
    return CG_OK;
}

cg_status cg_map_path(const char *path, cg_mapping **out, cg_error *err)
{
    *out = NULL;
    int fd = cg_file_open_read(path, NULL, err);
    if (fd < 0)
        return err ? err->status : CG_IO;
    cg_status st = cg_map_fd(fd, path, out, err);
    close(fd);
    return st;
}

cg_status cg_map_path_limited(const char *path, size_t max_bytes, cg_mapping **out, cg_error *err)
{
    *out = NULL;
    int fd = cg_file_open_read(path, NULL, err);
    if (fd < 0)
        return err ? err->status : CG_IO;
    struct stat st;
    cg_status s;
    if (fstat(fd, &st) == 0 && (uint64_t)st.st_size > max_bytes)
        s = cg_error_set(err, CG_LIMIT,
                         "%s: %llu bytes is over protobuf's 2 GiB limit for one message; store "
                         "the weights as external data",
                         path, (unsigned long long)st.st_size);
    else
        s = cg_map_fd(fd, path, out, err);
    close(fd);
    return s;
}

void cg_mappings_free(cg_mapping *m)
{
    while (m) {
        cg_mapping *next = m->next;
        if (m->addr) {
            live_remove(m);
            munmap((void *)m->addr, m->size);
        }
        free(m->label);
        free(m);
        m = next;
    }
}
