/* Output folders (core/path.h). */
#include "core/path.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

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

bool cg_path_is_file(const char *path)
{
    struct stat sb;
    return stat(path, &sb) == 0 && S_ISREG(sb.st_mode);
}

bool cg_path_is_dir(const char *path)
{
    struct stat sb;
    return stat(path, &sb) == 0 && S_ISDIR(sb.st_mode);
}

static int cmp_names(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

void cg_path_names_free(char **names, size_t count)
{
    for (size_t i = 0; names && i < count; i++)
        free(names[i]);
    free(names);
}

cg_status cg_path_list(const char *dir, bool (*keep)(const char *path), char ***names,
                       size_t *count, cg_error *err)
{
    DIR *d = opendir(dir);
    struct dirent *de;
    char **v = NULL;
    size_t n = 0, cap = 0;
    *names = NULL;
    *count = 0;
    if (!d)
        return cg_error_set(err, CG_IO, "cannot read the folder '%s': %s", dir,
                            strerror(errno));
    while ((de = readdir(d)) != NULL) {
        if (de->d_name[0] == '.')
            continue;
        if (keep) {
            size_t len = strlen(dir) + strlen(de->d_name) + 2;
            char *full = malloc(len);
            if (!full)
                goto nomem;
            snprintf(full, len, "%s/%s", dir, de->d_name);
            bool ok = keep(full);
            free(full);
            if (!ok)
                continue;
        }
        if (n == cap) {
            size_t nc = cap ? cap * 2 : 32;
            char **grown = realloc(v, nc * sizeof *grown);
            if (!grown)
                goto nomem;
            v = grown;
            cap = nc;
        }
        if (!(v[n] = strdup(de->d_name)))
            goto nomem;
        n++;
    }
    closedir(d);
    if (n)
        qsort(v, n, sizeof *v, cmp_names);
    *names = v;
    *count = n;
    return CG_OK;
nomem:
    closedir(d);
    cg_path_names_free(v, n);
    return cg_error_set(err, CG_NOMEM, "out of memory listing '%s'", dir);
}

cg_status cg_path_make_temp_dir(const char *prefix, char **out, cg_error *err)
{
    const char *tmp = getenv("TMPDIR");
    if (!tmp || !*tmp)
        tmp = "/tmp";
    size_t n = strlen(tmp) + strlen(prefix) + 16;
    char *p = malloc(n);
    *out = NULL;
    if (!p)
        return cg_error_set(err, CG_NOMEM, "out of memory");
    snprintf(p, n, "%s/%s-XXXXXX", tmp, prefix);
    if (!mkdtemp(p)) {
        cg_status st = cg_error_set(err, CG_IO, "cannot make a folder in %s: %s", tmp,
                                    strerror(errno));
        free(p);
        return st;
    }
    *out = p;
    return CG_OK;
}

void cg_path_remove_tree(const char *path)
{
    struct stat st;
    if (!path || lstat(path, &st) != 0)
        return;
    if (!S_ISDIR(st.st_mode)) {
        unlink(path);
        return;
    }
    DIR *d = opendir(path);
    struct dirent *e;
    while (d && (e = readdir(d)) != NULL) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
            continue;
        size_t n = strlen(path) + strlen(e->d_name) + 2;
        char *child = malloc(n);
        if (!child)
            continue;
        snprintf(child, n, "%s/%s", path, e->d_name);
        cg_path_remove_tree(child);
        free(child);
    }
    if (d)
        closedir(d);
    rmdir(path);
}
