/* Output folders (core/path.h). */
#include "core/path.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* mkdir that accepts an existing folder (a link to one included: the user
 * named the path). */
static cg_status make_one(const char *dir, const char *whole, cg_error *err)
{
    struct stat sb;
    if (mkdir(dir, 0777) == 0)
        return CG_OK;
    int e = errno;
    if (stat(dir, &sb) == 0) {
        if (S_ISDIR(sb.st_mode))
            return CG_OK;
        return cg_error_set(err, CG_IO, "cannot create folder '%s': '%s' exists and is not a "
                            "folder", whole, dir);
    }
    return cg_error_set(err, CG_IO, "cannot create folder '%s': %s: %s", whole, dir,
                        strerror(e));
}

cg_status cg_path_make_dirs(const char *dir, cg_error *err)
{
    if (!dir || !*dir)
        return cg_error_set(err, CG_USAGE, "empty folder name");
    char *p = strdup(dir);
    if (!p)
        return cg_error_set(err, CG_NOMEM, "out of memory");
    cg_status st = CG_OK;
    size_t len = strlen(p);
    while (len > 1 && p[len - 1] == '/')
        p[--len] = '\0';
    /* each prefix that ends a component, then the whole */
    for (size_t i = 1; i < len && st == CG_OK; i++) {
        if (p[i] != '/' || p[i - 1] == '/')
            continue;
        p[i] = '\0';
        st = make_one(p, dir, err);
        p[i] = '/';
    }
    if (st == CG_OK)
        st = make_one(p, dir, err);
    free(p);
    return st;
}

cg_status cg_path_make_parents(const char *path, cg_error *err)
{
    const char *slash = path ? strrchr(path, '/') : NULL;
    if (!slash || slash == path)
        return CG_OK;
    char *dir = strndup(path, (size_t)(slash - path));
    if (!dir)
        return cg_error_set(err, CG_NOMEM, "out of memory");
    cg_status st = cg_path_make_dirs(dir, err);
    free(dir);
    return st;
}
