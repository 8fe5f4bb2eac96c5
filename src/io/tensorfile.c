/*
 * Tensor files in general (whole-file reads and atomic writes are in
 * src/core/file.c): the allocation convention of tensors and values
 * handed out by src/io (malloc'd struct, malloc'd payload, malloc'd strings
 * and items), loading a
 * value by file extension (.pb / .npy / .npz[:KEY]) and the seeded generator
 * (the random-input policy itself is convgate/samples.h).
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "convgate/budget.h"
#include "core/rng.h"
#include "io/io_internal.h"

size_t cg_io_limit(size_t max_bytes)
{
    /* what one file may decode to: the caller's cap, and never more than the
     * process's memory budget has left (convgate/budget.h) */
    size_t limit = max_bytes ? max_bytes : CG_IO_DEFAULT_MAX_BYTES;
    uint64_t left = cg_budget_left(cg_budget_process());
    return left < limit ? (left ? (size_t)left : 1) : limit; /* never 0: 0 means "none" */
}


/* --- loading by extension ------------------------------------------------- */

static bool ends_with(const char *s, size_t len, const char *suffix)
{
    size_t n = strlen(suffix);
    if (len < n)
        return false;
    for (size_t i = 0; i < n; i++) {
        char c = s[len - n + i];
        if (c >= 'A' && c <= 'Z')
            c = (char)(c - 'A' + 'a');
        if (c != suffix[i])
            return false;
    }
    return true;
}

static cg_status load_npz_spec(const char *spec, size_t max_bytes, cg_value **out,
                               cg_error *err)
{
    cg_status st;
    cg_npz *npz = NULL;
    cg_tensor t;
    char *path = strdup(spec);
    const char *key = NULL;
    memset(&t, 0, sizeof t);
    if (!path)
        return cg_error_set(err, CG_NOMEM, "out of memory");
    /* FILE.npz:KEY -- the key follows the last ':' after ".npz". */
    size_t len = strlen(path);
    char *colon = NULL;
    for (size_t i = 4; i < len; i++)
        if (path[i] == ':' && ends_with(path, i, ".npz")) {
            colon = path + i;
            break;
        }
    if (colon) {
        *colon = '\0';
        key = colon + 1;
    }
    st = cg_npz_open(path, max_bytes, &npz, err);
    if (st != CG_OK)
        goto done;
    if (!key) {
        if (cg_npz_count(npz) != 1) {
            st = cg_error_set(err, CG_USAGE,
                              "'%s' holds %zu arrays: name one as %s:KEY", path,
                              cg_npz_count(npz), path);
            goto done;
        }
        key = cg_npz_key(npz, 0);
    }
    st = cg_npz_load(npz, key, &t, err);
    if (st == CG_OK)
        st = cg_value_from_tensor(&t, out, err);
done:
    cg_tensor_release(&t);
    cg_npz_free(npz);
    free(path);
    return st;
}

cg_status cg_io_load_value(const char *spec, const cg_type *type, size_t max_bytes,
                           cg_value **out, cg_error *err)
{
    size_t len = strlen(spec);
    *out = NULL;
    if (ends_with(spec, len, ".pb"))
        return cg_io_pb_load(spec, type, max_bytes, out, err);
    if (ends_with(spec, len, ".npy")) {
        cg_tensor t;
        cg_status st = cg_npy_load(spec, max_bytes, &t, err);
        if (st != CG_OK)
            return st;
        st = cg_value_from_tensor(&t, out, err);
        cg_tensor_release(&t);
        return st;
    }
    if (strstr(spec, ".npz") || strstr(spec, ".NPZ"))
        return load_npz_spec(spec, max_bytes, out, err);
    return cg_error_set(err, CG_USAGE,
                        "'%s': unknown tensor file type (expected .pb, .npy or .npz[:KEY])", spec);
}

/* --- the random generator --------------------------------------------------- */

void cg_rng_seed(cg_rng *rng, uint64_t seed) { rng->state = seed; }

uint64_t cg_rng_next(cg_rng *rng)
{
    return cg_splitmix64(&rng->state);
}
