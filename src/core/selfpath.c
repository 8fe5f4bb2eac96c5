/*
 * Where convgate's own files are installed: the data directory beside the
 * binary or shared library that holds this code (<prefix>/share/convgate
 * next to <prefix>/bin or <prefix>/lib), so that an installation found
 * under any prefix (cmake --install --prefix P) finds its profiles without
 * a path compiled in. The only code that asks the dynamic loader or /proc.
 */
#define _GNU_SOURCE /* dladdr */
#include <dlfcn.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/selfpath.h"

/* Writes dirname(path)/../share/convgate/<sub> to out when it is a directory. */
static bool data_dir_beside(const char *path, const char *sub, char *out, size_t out_len)
{
    char real[PATH_MAX];
    if (!path || !*path || !realpath(path, real))
        return false;
    char *slash = strrchr(real, '/');
    if (!slash)
        return false;
    *slash = '\0';
    int n = snprintf(out, out_len, "%s/../share/convgate/%s", real, sub);
    if (n < 0 || (size_t)n >= out_len)
        return false;
    struct stat sb;
    return stat(out, &sb) == 0 && S_ISDIR(sb.st_mode);
}

bool cg_installed_data_dir(const char *sub, char *out, size_t out_len)
{
    /* the shared library (or the executable it is linked into) holding us */
    Dl_info info;
    if (dladdr((void *)&cg_installed_data_dir, &info) && info.dli_fname &&
        strchr(info.dli_fname, '/') && data_dir_beside(info.dli_fname, sub, out, out_len))
        return true;
    /* a statically linked executable */
    char exe[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n <= 0)
        return false;
    exe[n] = '\0';
    return data_dir_beside(exe, sub, out, out_len);
}
