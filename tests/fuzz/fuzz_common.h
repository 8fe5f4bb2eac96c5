/*
 * Shared by the libFuzzer targets: inputs that a loader reads from a path
 * are written to one scratch file per process (in $TMPDIR, /tmp by
 * default), replaced for every input.
 */
#ifndef CG_FUZZ_COMMON_H
#define CG_FUZZ_COMMON_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* dir/NAME, NAME under a per-process folder; NULL when it cannot be made. */
static inline const char *fuzz_scratch_path(const char *name)
{
    static char dir[512];
    static char path[1024];
    if (!dir[0]) {
        const char *tmp = getenv("TMPDIR");
        snprintf(dir, sizeof dir, "%s/convgate-fuzz.%ld", tmp && *tmp ? tmp : "/tmp",
                 (long)getpid());
        if (mkdir(dir, 0700) != 0) {
            struct stat st;
            if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode))
                return NULL;
        }
    }
    snprintf(path, sizeof path, "%s/%s", dir, name);
    return path;
}

/* Writes data to path (whole file); 0 on success. */
static inline int fuzz_write(const char *path, const uint8_t *data, size_t size)
{
    FILE *f = fopen(path, "wb");
    if (!f)
        return -1;
    size_t n = size ? fwrite(data, 1, size, f) : 0;
    int rc = fclose(f);
    return n == size && rc == 0 ? 0 : -1;
}

#endif
