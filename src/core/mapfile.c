/* POSIX mmap wrappers (see mapfile.h). */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/mapfile.h"

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
    }
    *out = m;
    return CG_OK;
}

cg_status cg_map_path(const char *path, cg_mapping **out, cg_error *err)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return cg_error_set(err, CG_IO, "%s: cannot open: %s", path, strerror(errno));
    cg_status st = cg_map_fd(fd, path, out, err);
    close(fd);
    return st;
}

cg_status cg_map_path_limited(const char *path, size_t max_bytes, cg_mapping **out, cg_error *err)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return cg_error_set(err, CG_IO, "%s: cannot open: %s", path, strerror(errno));
    struct stat st;
    cg_status s;
    if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && (uint64_t)st.st_size > max_bytes)
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
        if (m->addr)
            munmap((void *)m->addr, m->size);
        free(m->label);
        free(m);
        m = next;
    }
}
