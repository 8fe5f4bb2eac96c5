/*
 * External tensor data (TensorProto.data_location = EXTERNAL).
 *
 * The location is untrusted: it must be a relative path that stays inside
 * the model's directory. It is opened one component at a time with openat
 * and O_NOFOLLOW relative to a descriptor of the model's directory, so a
 * symlink anywhere on the path is refused and nothing can be swapped
 * between the check and the open (every check is made on the open
 * descriptor). The file must be a regular file with one link. offset and
 * length are decimal, non-negative and checked against the file size
 * without overflow, and length must equal element count x element size.
 * Each distinct file is mapped once and shared by its tensors.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/file.h"
#include "core/mapfile.h"
#include "load/load_internal.h"


static const char *tname(const cg_tensor_proto *t) { return t->name ? t->name : "(unnamed)"; }

static bool parse_u63(const char *s, int64_t *out)
{
    if (!s || !*s)
        return false;
    int64_t v = 0;
    for (const char *p = s; *p; p++) {
        if (*p < '0' || *p > '9')
            return false;
        int d = *p - '0';
        if (v > (INT64_MAX - d) / 10)
            return false;
        v = v * 10 + d;
    }
    *out = v;
    return true;
}

/* Rejects locations that could leave the model's directory. */
static cg_status check_location(rd_ctx *c, const cg_tensor_proto *t, const char *loc)
{
    if (!*loc)
        return cg_error_set(c->err, CG_SECURITY, "%s: tensor '%s': empty external data location",
                            c->label, tname(t));
    if (loc[0] == '/')
        return cg_error_set(c->err, CG_SECURITY,
                            "%s: tensor '%s': external data location '%s' is an absolute path",
                            c->label, tname(t), loc);
    if (((loc[0] >= 'A' && loc[0] <= 'Z') || (loc[0] >= 'a' && loc[0] <= 'z')) && loc[1] == ':')
        return cg_error_set(c->err, CG_SECURITY,
                            "%s: tensor '%s': external data location '%s' has a drive letter "
                            "(absolute path)",
                            c->label, tname(t), loc);
    if (strchr(loc, '\\'))
        return cg_error_set(c->err, CG_SECURITY,
                            "%s: tensor '%s': external data location '%s' contains a backslash",
                            c->label, tname(t), loc);
    const char *p = loc;
    while (*p) {
        const char *slash = strchr(p, '/');
        size_t n = slash ? (size_t)(slash - p) : strlen(p);
        if (n == 2 && p[0] == '.' && p[1] == '.')
            return cg_error_set(c->err, CG_SECURITY,
                                "%s: tensor '%s': external data location '%s' contains '..'",
                                c->label, tname(t), loc);
        p += n;
        if (*p == '/')
            p++;
    }
    return CG_OK;
}

/* Opens base_dir/loc without following any symlink (cg_file_open_beneath);
 * returns an fd or -1. */
static int open_beneath(rd_ctx *c, const cg_tensor_proto *t, const char *base_dir,
                        const char *loc)
{
    char label[512];
    snprintf(label, sizeof label, "%s: tensor '%s': external data location", c->label,
             tname(t));
    return cg_file_open_beneath(base_dir, loc, label, c->err);
}

static cg_status find_or_map(rd_ctx *c, cg_model *m, const cg_tensor_proto *t, const char *loc,
                             cg_mapping **out)
{
    for (cg_mapping *mp = m->mappings ? m->mappings->next : NULL; mp; mp = mp->next)
        if (strcmp(mp->label, loc) == 0) {
            *out = mp;
            return CG_OK;
        }
    int fd = open_beneath(c, t, m->base_dir, loc);
    if (fd < 0)
        return c->err ? c->err->status : CG_IO;
    struct stat st;
    cg_status s = CG_OK;
    if (fstat(fd, &st) != 0) {
        s = cg_error_set(c->err, CG_IO, "%s: external data '%s': cannot stat", c->label, loc);
    } else if (!S_ISREG(st.st_mode)) {
        s = cg_error_set(c->err, CG_SECURITY, "%s: external data '%s' is not a regular file",
                         c->label, loc);
    } else if (st.st_nlink > 1) {
        s = cg_error_set(c->err, CG_SECURITY,
                         "%s: external data '%s' has %lu hard links (refused: a hard link can "
                         "expose a file from outside the model directory)",
                         c->label, loc, (unsigned long)st.st_nlink);
    }
    cg_mapping *mp = NULL;
    if (s == CG_OK)
        s = cg_map_fd(fd, loc, &mp, c->err);
    close(fd);
    if (s != CG_OK)
        return s;
    /* keep the model file first in the chain */
    if (m->mappings) {
        mp->next = m->mappings->next;
        m->mappings->next = mp;
    } else {
        m->mappings = mp;
    }
    *out = mp;
    return CG_OK;
}

static cg_status resolve_one(rd_ctx *c, cg_model *m, cg_tensor_proto *t)
{
    const char *loc = NULL, *off_s = NULL, *len_s = NULL;
    for (size_t i = 0; i < t->external_count; i++) {
        const cg_string_pair *kv = &t->external_data[i];
        const char *k = kv->key ? kv->key : "";
        const char **slot = NULL;
        if (strcmp(k, "location") == 0)
            slot = &loc;
        else if (strcmp(k, "offset") == 0)
            slot = &off_s;
        else if (strcmp(k, "length") == 0)
            slot = &len_s;
        else if (strcmp(k, "checksum") == 0)
            continue;
        else
            return cg_error_set(c->err, CG_SECURITY,
                                "%s: tensor '%s': unknown external_data key '%s'", c->label,
                                tname(t), k);
        if (*slot)
            return cg_error_set(c->err, CG_SECURITY,
                                "%s: tensor '%s': external_data key '%s' given twice", c->label,
                                tname(t), k);
        *slot = kv->value ? kv->value : "";
    }
    if (!loc)
        return cg_error_set(c->err, CG_INVALID,
                            "%s: tensor '%s': data_location is EXTERNAL but no 'location' key",
                            c->label, tname(t));
    if (!m->base_dir)
        return cg_error_set(c->err, CG_SECURITY,
                            "%s: tensor '%s' uses external data but the model was loaded from "
                            "bytes without a base directory",
                            c->label, tname(t));
    cg_status s = check_location(c, t, loc);
    if (s != CG_OK)
        return s;
    int64_t offset = 0, length = -1;
    if (off_s && !parse_u63(off_s, &offset))
        return cg_error_set(c->err, CG_SECURITY,
                            "%s: tensor '%s': external_data offset '%s' is not a non-negative "
                            "integer",
                            c->label, tname(t), off_s);
    if (len_s && !parse_u63(len_s, &length))
        return cg_error_set(c->err, CG_SECURITY,
                            "%s: tensor '%s': external_data length '%s' is not a non-negative "
                            "integer",
                            c->label, tname(t), len_s);
    if (t->has_data_type && t->data_type == CG_DTYPE_STRING)
        return cg_error_set(c->err, CG_INVALID,
                            "%s: tensor '%s': STRING tensors cannot use external data", c->label,
                            tname(t));
    size_t es = cg_dtype_valid(t->data_type) ? cg_dtype_size((cg_dtype)t->data_type) : 0;
    if (es == 0)
        return cg_error_set(c->err, CG_UNSUPPORTED,
                            "%s: tensor '%s': external data of data_type %d is not supported",
                            c->label, tname(t), (int)t->data_type);
    int64_t numel;
    s = cg_tensor_proto_numel(t, &numel, c->err);
    if (s != CG_OK)
        return s;
    if (numel > INT64_MAX / (int64_t)es)
        return cg_error_set(c->err, CG_INVALID, "%s: tensor '%s': byte size overflows", c->label,
                            tname(t));
    int64_t expected = numel * (int64_t)es;
    cg_mapping *mp = NULL;
    s = find_or_map(c, m, t, loc, &mp);
    if (s != CG_OK)
        return s;
    uint64_t fsize = mp->size;
    if ((uint64_t)offset > fsize)
        return cg_error_set(c->err, CG_SECURITY,
                            "%s: tensor '%s': external_data offset %lld is past the end of '%s' "
                            "(%llu bytes)",
                            c->label, tname(t), (long long)offset, loc,
                            (unsigned long long)fsize);
    if (length < 0)
        length = (int64_t)(fsize - (uint64_t)offset);
    if ((uint64_t)length > fsize - (uint64_t)offset)
        return cg_error_set(c->err, CG_SECURITY,
                            "%s: tensor '%s': external_data offset %lld + length %lld is past the "
                            "end of '%s' (%llu bytes)",
                            c->label, tname(t), (long long)offset, (long long)length, loc,
                            (unsigned long long)fsize);
    if (length != expected)
        return cg_error_set(c->err, CG_INVALID,
                            "%s: tensor '%s': external_data length %lld does not match %lld "
                            "elements x %zu bytes = %lld",
                            c->label, tname(t), (long long)length, (long long)numel, es,
                            (long long)expected);
    static const uint8_t empty[1];
    t->external_payload.data = mp->addr ? mp->addr + offset : empty;
    t->external_payload.len = (size_t)length;
    return CG_OK;
}

cg_status cg_resolve_external(rd_ctx *c, cg_model *m)
{
    for (size_t i = 0; i < c->tensor_count; i++) {
        cg_tensor_proto *t = c->tensors[i];
        if (!t->has_data_location || t->data_location != CG_LOC_EXTERNAL)
            continue;
        cg_status s = resolve_one(c, m, t);
        if (s != CG_OK)
            return s;
    }
    return CG_OK;
}
