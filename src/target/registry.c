/*
 * The target registry: every target convgate knows. cg_target_registry_load
 * (src/delegate/builtin.c, above this stage) fills it with the executing
 * targets compiled into the library, then one profiled target per *.json
 * file of the profile directory, in file-name order; an embedder can start
 * from an empty registry and add its own targets.
 *
 * The profile directory is the caller's argument, else $CONVGATE_PROFILES,
 * else the installed one (<prefix>/share/convgate/profiles beside the
 * binary or library, core/selfpath.c), else the source tree's profiles/
 * (CG_PROFILE_DIR, set by CMake, for the build tree). A profile
 * that fails to parse fails the whole load: a silently missing target would
 * change what `assign` reports. Names are unique across the registry.
 *
 * Directory listing is the only platform code here (POSIX opendir).
 */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/selfpath.h"
#include "target/registry.h"

#ifndef CG_PROFILE_DIR
#define CG_PROFILE_DIR "profiles"
#endif

struct cg_target_registry {
    cg_target **targets;
    size_t count, cap;
    char *profile_dir; /* the directory the profiles were read from */
    /* targets bound to parameter values ("nnapi@27"), made on first lookup;
     * they borrow their profile's rules, so they are freed first */
    cg_target **bound;
    size_t bound_count;
};

static void target_destroy(cg_target *t)
{
    if (t && t->vt && t->vt->destroy)
        t->vt->destroy(t);
}

void cg_target_registry_free(cg_target_registry *reg)
{
    if (!reg)
        return;
    for (size_t i = 0; i < reg->bound_count; i++)
        reg->bound[i]->vt->destroy(reg->bound[i]);
    free(reg->bound);
    for (size_t i = 0; i < reg->count; i++)
        target_destroy(reg->targets[i]);
    free(reg->targets);
    free(reg->profile_dir);
    free(reg);
}

const char *cg_target_registry_profile_dir(const cg_target_registry *reg)
{
    return reg ? reg->profile_dir : NULL;
}

size_t cg_target_registry_count(const cg_target_registry *reg) { return reg ? reg->count : 0; }

const cg_target *cg_target_registry_at(const cg_target_registry *reg, size_t i)
{
    return reg && i < reg->count ? reg->targets[i] : NULL;
}

const cg_target *cg_target_registry_find(const cg_target_registry *reg, const char *name,
                                         cg_error *err)
{
    if (!reg || !name)
        return NULL;
    for (size_t i = 0; i < reg->count; i++)
        if (strcmp(reg->targets[i]->name, name) == 0)
            return reg->targets[i];
    const char *at = strchr(name, '@');
    if (at) {
        /* "profile@params": made once and kept with the registry (the cache
         * is the only state a lookup changes, hence the cast) */
        cg_target_registry *mreg = (cg_target_registry *)reg;
        for (size_t i = 0; i < reg->bound_count; i++)
            if (strcmp(reg->bound[i]->name, name) == 0)
                return reg->bound[i];
        size_t blen = (size_t)(at - name);
        for (size_t i = 0; i < reg->count; i++) {
            const cg_target *base = reg->targets[i];
            if (strlen(base->name) != blen || strncmp(base->name, name, blen) != 0)
                continue;
            cg_target *t = NULL;
            if (cg_profile_bind(base, at + 1, &t, err) != CG_OK)
                return NULL;
            cg_target **grown = realloc(mreg->bound, (reg->bound_count + 1) * sizeof *grown);
            if (!grown) {
                t->vt->destroy(t);
                cg_error_set(err, CG_NOMEM, "out of memory");
                return NULL;
            }
            mreg->bound = grown;
            mreg->bound[mreg->bound_count++] = t;
            return t;
        }
    }
    char known[768];
    size_t n = 0;
    known[0] = '\0';
    for (size_t i = 0; i < reg->count && n < sizeof known; i++)
        n += (size_t)snprintf(known + n, sizeof known - n, "%s%s", i ? ", " : "",
                              reg->targets[i]->name);
    cg_error_set(err, CG_USAGE, "no target named '%s' (known: %s)", name,
                 reg->count ? known : "none");
    return NULL;
}

cg_status cg_target_registry_resolve(const cg_target_registry *reg, const char *list,
                                     const cg_target **out, size_t *count, size_t max,
                                     cg_error *err)
{
    const char *tok = list ? list : "";
    for (;;) {
        const char *end = strchr(tok, ',');
        size_t len = end ? (size_t)(end - tok) : strlen(tok);
        char name[256];
        if (!len)
            return cg_error_set(err, CG_USAGE, "--target %s: empty target name", list ? list : "");
        if (len >= sizeof name)
            return cg_error_set(err, CG_USAGE, "--target %s: target name too long", list);
        memcpy(name, tok, len);
        name[len] = '\0';
        const cg_target *t = cg_target_registry_find(reg, name, err);
        if (!t)
            return CG_USAGE;
        for (size_t k = 0; k < *count; k++)
            if (out[k] == t)
                return cg_error_set(err, CG_USAGE, "target '%s' given twice", name);
        if (*count == max)
            return cg_error_set(err, CG_USAGE, "more than %zu targets", max);
        out[(*count)++] = t;
        if (!end)
            return CG_OK;
        tok = end + 1;
    }
}

cg_status cg_target_registry_new(cg_target_registry **out, cg_error *err)
{
    *out = calloc(1, sizeof **out);
    return *out ? CG_OK : cg_error_set(err, CG_NOMEM, "out of memory creating a target registry");
}

/* What every target must say about itself before anyone relies on it. */
static cg_status target_check(const cg_target *t, cg_error *err)
{
    const char *name = t->name ? t->name : "(null)";
    if (!t->name || !t->name[0])
        return cg_error_set(err, CG_USAGE, "a target needs a name");
    if (!t->vt || !t->vt->supports)
        return cg_error_set(err, CG_USAGE, "target '%s' has no supports() in its vtable", name);
    if (t->kind != CG_TARGET_EXECUTING && t->kind != CG_TARGET_PROFILED)
        return cg_error_set(err, CG_USAGE, "target '%s': kind %d is not executing or profiled",
                            name, (int)t->kind);
    if (t->kind == CG_TARGET_EXECUTING && !cg_target_executes(t))
        return cg_error_set(err, CG_USAGE, "executing target '%s' needs compile, run and "
                            "release in its vtable", name);
    if (t->layout != CG_LAYOUT_NCHW && t->layout != CG_LAYOUT_NHWC)
        return cg_error_set(err, CG_USAGE, "target '%s': layout %d is not NCHW or NHWC", name,
                            (int)t->layout);
    if (t->crossing_stated && !(t->crossing_fixed_us >= 0 && t->crossing_gbps > 0 &&
                                t->crossing_fixed_us < 1e300 && t->crossing_gbps < 1e300))
        return cg_error_set(err, CG_USAGE, "target '%s': crossing cost %g us + bytes / %g GB/s "
                            "needs a finite cost >= 0 and a finite bandwidth > 0", name,
                            t->crossing_fixed_us, t->crossing_gbps);
    return CG_OK;
}

cg_status cg_target_registry_add(cg_target_registry *reg, cg_target *t, cg_error *err)
{
    if (!reg || !t) {
        target_destroy(t);
        return cg_error_set(err, CG_USAGE, "cg_target_registry_add: registry and target are "
                            "required");
    }
    cg_status st = target_check(t, err);
    if (st != CG_OK) {
        target_destroy(t);
        return st;
    }
    for (size_t i = 0; i < reg->count; i++)
        if (strcmp(reg->targets[i]->name, t->name) == 0) {
            st = cg_error_set(err, CG_INVALID, "two targets are named '%s' (%s and %s)", t->name,
                              reg->targets[i]->source ? reg->targets[i]->source : "?",
                              t->source ? t->source : "?");
            target_destroy(t);
            return st;
        }
    if (reg->count == reg->cap) {
        size_t cap = reg->cap ? reg->cap * 2 : 16;
        cg_target **grown = realloc(reg->targets, cap * sizeof *grown);
        if (!grown) {
            target_destroy(t);
            return cg_error_set(err, CG_NOMEM, "out of memory loading targets");
        }
        reg->targets = grown;
        reg->cap = cap;
    }
    reg->targets[reg->count++] = t;
    return CG_OK;
}

static int name_cmp(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

static bool ends_with_json(const char *s)
{
    size_t n = strlen(s);
    return n > 5 && strcmp(s + n - 5, ".json") == 0;
}

/* Loads every *.json of dir, in name order. */
static cg_status load_profiles(cg_target_registry *reg, const char *dir, cg_error *err)
{
    char **names = NULL;
    size_t count = 0, cap = 0;
    char *path = NULL;
    cg_status st = CG_OK;
    DIR *d = opendir(dir);
    if (!d)
        return cg_error_set(err, CG_IO, "cannot open the profile directory '%s' (give another "
                            "with --profiles or $CONVGATE_PROFILES)", dir);
    struct dirent *ent;
    while ((ent = readdir(d)) != NULL) {
        if (ent->d_name[0] == '.' || !ends_with_json(ent->d_name))
            continue;
        if (count == cap) {
            size_t ncap = cap ? cap * 2 : 16;
            char **grown = realloc(names, ncap * sizeof *grown);
            if (!grown) {
                st = cg_error_set(err, CG_NOMEM, "out of memory listing '%s'", dir);
                goto done;
            }
            names = grown;
            cap = ncap;
        }
        if (!(names[count] = strdup(ent->d_name))) {
            st = cg_error_set(err, CG_NOMEM, "out of memory listing '%s'", dir);
            goto done;
        }
        count++;
    }
    qsort(names, count, sizeof *names, name_cmp);
    for (size_t i = 0; i < count; i++) {
        size_t len = strlen(dir) + strlen(names[i]) + 2;
        free(path);
        if (!(path = malloc(len))) {
            st = cg_error_set(err, CG_NOMEM, "out of memory listing '%s'", dir);
            goto done;
        }
        snprintf(path, len, "%s/%s", dir, names[i]);
        cg_target *t = NULL;
        if ((st = cg_profile_load(path, &t, err)) != CG_OK ||
            (st = cg_target_registry_add(reg, t, err)) != CG_OK)
            goto done;
    }
done:
    free(path);
    for (size_t i = 0; i < count; i++)
        free(names[i]);
    free(names);
    closedir(d);
    return st;
}

cg_status cg_target_registry_add_profiles(cg_target_registry *reg, const char *profile_dir,
                                          cg_error *err)
{
    if (!reg)
        return cg_error_set(err, CG_USAGE, "cg_target_registry_add_profiles: no registry");
    char installed[4096];
    const char *dir = profile_dir;
    if (!dir || !*dir)
        dir = getenv("CONVGATE_PROFILES");
    if ((!dir || !*dir) && cg_installed_data_dir("profiles", installed, sizeof installed))
        dir = installed;
    if (!dir || !*dir)
        dir = CG_PROFILE_DIR;
    char *copy = strdup(dir);
    if (!copy)
        return cg_error_set(err, CG_NOMEM, "out of memory loading targets");
    free(reg->profile_dir);
    reg->profile_dir = copy;
    return load_profiles(reg, dir, err);
}
