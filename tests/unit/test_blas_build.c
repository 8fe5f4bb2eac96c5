/*
 * The OpenBLAS the binaries load is its serial build where the build found
 * one (CMakeLists.txt): the pthread build starts a thread per core when the
 * library loads, which then spins for about 0.1 s, taking the second core of
 * a two-core machine from the runtime's set-up and first run. Checked from
 * inside a process linked like convgate: the library mapped is the one in
 * the serial build's directory (the RUNPATH led the loader there, not the
 * system's alternative), and after BLAS's set-up and a single-threaded
 * product the process still has one thread.
 */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "run/ops/nn_common.h"
#include "testlib.h"

/* The path of the mapped libopenblas, or "" when none is mapped. */
static void mapped_openblas(char *path, size_t cap)
{
    path[0] = '\0';
    FILE *f = fopen("/proc/self/maps", "r");
    if (!f)
        test_fatal("cannot read /proc/self/maps");
    char line[4096];
    while (fgets(line, sizeof line, f)) {
        const char *p = strchr(line, '/');
        if (p && strstr(p, "/libopenblas")) {
            snprintf(path, cap, "%s", p);
            path[strcspn(path, "\n")] = '\0';
            break;
        }
    }
    fclose(f);
}

static int thread_count(void)
{
    DIR *d = opendir("/proc/self/task");
    if (!d)
        test_fatal("cannot read /proc/self/task");
    int n = 0;
    for (struct dirent *e; (e = readdir(d));)
        if (e->d_name[0] != '.')
            n++;
    closedir(d);
    return n;
}

int main(void)
{
#ifndef CG_BLAS_SERIAL_DIR
    test_skip("OpenBLAS's serial build was not found at configure time "
              "(libopenblas0-serial); the build links the default one");
#else
    cg_nn_blas_init();
    char path[4096];
    mapped_openblas(path, sizeof path);
    EXPECT(strncmp(path, CG_BLAS_SERIAL_DIR "/", strlen(CG_BLAS_SERIAL_DIR) + 1) == 0,
           "libopenblas mapped from '%s', not from " CG_BLAS_SERIAL_DIR, path);
    int n = thread_count();
    EXPECT(n == 1, "%d threads after OpenBLAS's set-up; a single-threaded program has 1", n);
#endif
    return test_done("test_blas_build");
}
