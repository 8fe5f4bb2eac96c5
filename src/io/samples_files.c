/*
 * File names and output files (convgate/samples.h): the one rule from a
 * tensor name to a file stem, shared by every writer and reader, and the
 * writing of a run's outputs. Files are created without following a link
 * planted at their path, inside the folder given.
 */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "convgate/samples.h"
#include "core/file.h"
#include "core/path.h"

#define SAMPLES_PATH_MAX 4096

/* --- file names ----------------------------------------------------------------- */

static bool stem_char(unsigned char c)
{
    return (c < 0x80 && isalnum(c)) || c == '.' || c == '_' || c == '-';
}

void cg_samples_stem(const char *name, const char *const *used, size_t used_count, char *out,
                     size_t cap)
{
    char base[CG_SAMPLES_MAX_STEM + 1];
    size_t n = 0;
    if (cap == 0)
        return;
    for (const unsigned char *p = (const unsigned char *)(name ? name : "");
         *p && n < CG_SAMPLES_MAX_STEM; p++)
        base[n++] = stem_char(*p) ? (char)*p : '_';
    base[n] = '\0';
    if (n == 0)
        snprintf(base, sizeof base, "tensor");
    if (base[0] == '.')
        base[0] = '_';
    snprintf(out, cap, "%s", base);
    for (unsigned k = 2;; k++) {
        bool taken = false;
        for (size_t i = 0; i < used_count && !taken; i++)
            taken = used[i] && strcasecmp(used[i], out) == 0;
        if (!taken)
            return;
        snprintf(out, cap, "%s_%u", base, k);
    }
}

cg_status cg_samples_stems(const char *const *names, size_t count, char ***stems, cg_error *err)
{
    char **s = calloc(count ? count : 1, sizeof *s);
    char buf[CG_SAMPLES_STEM_CAP];
    *stems = NULL;
    if (!s)
        return cg_error_set(err, CG_NOMEM, "out of memory naming files");
    for (size_t i = 0; i < count; i++) {
        cg_samples_stem(names[i], (const char *const *)s, i, buf, sizeof buf);
        if (!(s[i] = strdup(buf))) {
            cg_samples_stems_free(s, i);
            return cg_error_set(err, CG_NOMEM, "out of memory naming files");
        }
    }
    *stems = s;
    return CG_OK;
}

void cg_samples_stems_free(char **stems, size_t count)
{
    for (size_t i = 0; stems && i < count; i++)
        free(stems[i]);
    free(stems);
}

/* --- output files ----------------------------------------------------------------------------- */

/* One output: a tensor as .npy, a sequence as .npz with keys 0..n-1. */
static cg_status write_output(const char *dir, const char *stem, const cg_value *v, char *path,
                              size_t cap, cg_error *err)
{
    bool sequence = v->kind == CG_VALUE_SEQUENCE ||
                    (v->kind == CG_VALUE_OPTIONAL && v->optional_is_sequence);
    cg_status st;
    if (!sequence) {
        uint8_t *buf = NULL;
        size_t size = 0;
        if (snprintf(path, cap, "%s/%s.npy", dir, stem) >= (int)cap)
            return cg_error_set(err, CG_LIMIT, "path too long: %s/%s", dir, stem);
        if ((st = cg_npy_serialize(&v->tensor, &buf, &size, err)) != CG_OK) {
            cg_error_prefix(err, "cannot write '%s': ", path);
            return st;
        }
        st = cg_atomic_write(path, buf, size, err);
        free(buf);
        return st;
    }
    if (snprintf(path, cap, "%s/%s.npz", dir, stem) >= (int)cap)
        return cg_error_set(err, CG_LIMIT, "path too long: %s/%s", dir, stem);
    size_t n = v->item_count;
    char **keys = calloc(n ? n : 1, sizeof *keys);
    const cg_tensor **tensors = calloc(n ? n : 1, sizeof *tensors);
    st = keys && tensors ? CG_OK : cg_error_set(err, CG_NOMEM, "out of memory");
    for (size_t i = 0; st == CG_OK && i < n; i++) {
        if (!(keys[i] = malloc(24))) {
            st = cg_error_set(err, CG_NOMEM, "out of memory");
            break;
        }
        snprintf(keys[i], 24, "%zu", i);
        tensors[i] = &v->items[i]->tensor;
    }
    struct stat sb;
    if (st == CG_OK && lstat(path, &sb) == 0 && S_ISLNK(sb.st_mode))
        st = cg_error_set(err, CG_SECURITY, "refusing to write through the link '%s'", path);
    if (st == CG_OK)
        st = cg_npz_save(path, n, (const char *const *)keys, tensors, false, err);
    for (size_t i = 0; keys && i < n; i++)
        free(keys[i]);
    free(keys);
    free(tensors);
    return st;
}

cg_status cg_samples_write_outputs(const cg_model *model, const char *dir,
                                   const cg_named_value *outputs, size_t count, char ***paths,
                                   cg_error *err)
{
    return cg_samples_write_outputs_suffixed(model, dir, NULL, outputs, count, paths, err);
}

cg_status cg_samples_write_outputs_suffixed(const cg_model *model, const char *dir,
                                            const char *suffix, const cg_named_value *outputs,
                                            size_t count, char ***paths, cg_error *err)
{
    const cg_graph *g = model->graph;
    const char **names = calloc(count + 1, sizeof *names);
    char **stems = NULL, **written = calloc(count + 1, sizeof *written);
    char path[SAMPLES_PATH_MAX];
    cg_status st;
    if (paths)
        *paths = NULL;
    if (!names || !written) {
        free(names);
        free(written);
        return cg_error_set(err, CG_NOMEM, "out of memory");
    }
    /* stems over the model's outputs (the list a reader stems), falling
     * back to the values' own names past them */
    for (size_t i = 0; i < count; i++)
        names[i] = i < g->output_count && g->outputs[i].name ? g->outputs[i].name
                                                             : outputs[i].name;
    if ((st = cg_path_make_dirs(dir, err)) != CG_OK ||
        (st = cg_samples_stems(names, count, &stems, err)) != CG_OK)
        goto done;
    for (size_t i = 0; i < count && st == CG_OK; i++) {
        const cg_value *v = outputs[i].value;
        if (!v || (v->kind == CG_VALUE_OPTIONAL && !v->has_value))
            continue;
        char stem[CG_SAMPLES_STEM_CAP + 64];
        if (snprintf(stem, sizeof stem, "%s%s", stems[i], suffix ? suffix : "") >=
            (int)sizeof stem) {
            st = cg_error_set(err, CG_LIMIT, "file name too long: %s%s", stems[i], suffix);
            break;
        }
        if ((st = write_output(dir, stem, v, path, sizeof path, err)) == CG_OK &&
            !(written[i] = strdup(path)))
            st = cg_error_set(err, CG_NOMEM, "out of memory");
    }
done:
    cg_samples_stems_free(stems, stems ? count : 0);
    free(names);
    if (st == CG_OK && paths)
        *paths = written;
    else
        cg_samples_stems_free(written, count);
    return st;
}
