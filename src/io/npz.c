/*
 * NumPy .npz archives: ZIP files whose members are .npy files.
 *
 * Reading trusts nothing: the end-of-central-directory record is searched
 * for within the last 64 KiB + 22 bytes, every central-directory entry and
 * local header is checked against the file's size and against the central
 * directory's own extent, and a member is only ever inflated into a buffer
 * of exactly its declared size (itself capped by max_bytes): inflating past
 * it, ending short of it, or failing the CRC-32 is an error, so a deflate
 * bomb costs at most the declared size. ZIP64, encryption, spanned archives
 * and methods other than stored/deflate are rejected by name. Member names
 * are only keys: nothing is ever extracted to the file system.
 *
 * Writing produces a plain (non-ZIP64) archive with stored or deflated
 * members and a fixed timestamp, so the same tensors give the same bytes.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <zlib.h>

#include "io/io_internal.h"

#define ZIP_LOCAL_SIG 0x04034b50u
#define ZIP_CENTRAL_SIG 0x02014b50u
#define ZIP_EOCD_SIG 0x06054b50u
#define ZIP64_LOCATOR_SIG 0x07064b50u
#define ZIP_LOCAL_SIZE 30
#define ZIP_CENTRAL_SIZE 46
#define ZIP_EOCD_SIZE 22

typedef struct npz_member {
    char *key;           /* name without ".npy" */
    uint16_t method;     /* 0 stored, 8 deflate */
    uint32_t crc;
    uint32_t csize, usize;
    uint32_t local_offset;
} npz_member;

struct cg_npz {
    FILE *file;
    char *path;
    uint64_t file_size;
    uint64_t cd_offset; /* member data must end before the central directory */
    size_t max_bytes;
    npz_member *members;
    size_t count;
};

/* Reads len bytes at offset; false on a short read. */
static bool read_at(FILE *f, uint64_t offset, void *buf, size_t len)
{
    if (offset > (uint64_t)INT64_MAX || fseeko(f, (off_t)offset, SEEK_SET) != 0)
        return false;
    return len == 0 || fread(buf, 1, len, f) == len;
}

void cg_npz_free(cg_npz *npz)
{
    if (!npz)
        return;
    for (size_t i = 0; i < npz->count; i++)
        free(npz->members[i].key);
    free(npz->members);
    if (npz->file)
        fclose(npz->file);
    free(npz->path);
    free(npz);
}

size_t cg_npz_count(const cg_npz *npz) { return npz->count; }

const char *cg_npz_key(const cg_npz *npz, size_t i)
{
    return i < npz->count ? npz->members[i].key : NULL;
}

/* Parses the central directory held in cd[0..cd_size). */
static cg_status parse_central(cg_npz *z, const uint8_t *cd, size_t cd_size, size_t entries,
                               cg_error *err)
{
    size_t pos = 0;
    z->members = calloc(entries ? entries : 1, sizeof *z->members);
    if (!z->members)
        return cg_error_set(err, CG_NOMEM, "out of memory");
    for (size_t i = 0; i < entries; i++) {
        if (cd_size - pos < ZIP_CENTRAL_SIZE || cg_io_le32(cd + pos) != ZIP_CENTRAL_SIG)
            return cg_error_set(err, CG_PARSE, "'%s': central directory entry %zu is truncated "
                                "or has a bad signature", z->path, i);
        const uint8_t *e = cd + pos;
        uint16_t flags = cg_io_le16(e + 8), method = cg_io_le16(e + 10);
        uint32_t crc = cg_io_le32(e + 16), csize = cg_io_le32(e + 20), usize = cg_io_le32(e + 24);
        size_t name_len = cg_io_le16(e + 28), extra_len = cg_io_le16(e + 30),
               comment_len = cg_io_le16(e + 32);
        uint16_t disk = cg_io_le16(e + 34);
        uint32_t local = cg_io_le32(e + 42);
        size_t var = name_len + extra_len + comment_len;
        if (cd_size - pos - ZIP_CENTRAL_SIZE < var)
            return cg_error_set(err, CG_PARSE, "'%s': central directory entry %zu overruns the "
                                "directory", z->path, i);
        if (csize == 0xFFFFFFFFu || usize == 0xFFFFFFFFu || local == 0xFFFFFFFFu ||
            disk == 0xFFFF)
            return cg_error_set(err, CG_UNSUPPORTED, "'%s': ZIP64 archives are not supported "
                                "(entry %zu)", z->path, i);
        if (flags & 0x1)
            return cg_error_set(err, CG_UNSUPPORTED, "'%s': entry %zu is encrypted", z->path, i);
        if (method != 0 && method != 8)
            return cg_error_set(err, CG_UNSUPPORTED, "'%s': entry %zu uses compression method "
                                "%u (only stored and deflate are supported)", z->path, i, method);
        if (disk != 0)
            return cg_error_set(err, CG_UNSUPPORTED, "'%s': multi-disk archives are not "
                                "supported", z->path);
        if (name_len == 0 || memchr(e + ZIP_CENTRAL_SIZE, '\0', name_len))
            return cg_error_set(err, CG_PARSE, "'%s': entry %zu has an empty or NUL-bearing "
                                "name", z->path, i);
        if ((uint64_t)local + ZIP_LOCAL_SIZE > z->cd_offset ||
            (uint64_t)csize > z->cd_offset - local - ZIP_LOCAL_SIZE)
            return cg_error_set(err, CG_PARSE, "'%s': entry %zu lies outside the archive data",
                                z->path, i);
        size_t key_len = name_len;
        if (key_len > 4 && memcmp(e + ZIP_CENTRAL_SIZE + key_len - 4, ".npy", 4) == 0)
            key_len -= 4;
        char *key = malloc(key_len + 1);
        if (!key)
            return cg_error_set(err, CG_NOMEM, "out of memory");
        memcpy(key, e + ZIP_CENTRAL_SIZE, key_len);
        key[key_len] = '\0';
        for (size_t j = 0; j < z->count; j++)
            if (strcmp(z->members[j].key, key) == 0) {
                cg_error_set(err, CG_PARSE, "'%s': duplicate member '%s'", z->path, key);
                free(key);
                return CG_PARSE;
            }
        npz_member *m = &z->members[z->count++];
        m->key = key;
        m->method = method;
        m->crc = crc;
        m->csize = csize;
        m->usize = usize;
        m->local_offset = local;
        pos += ZIP_CENTRAL_SIZE + var;
    }
    return CG_OK;
}

cg_status cg_npz_open(const char *path, size_t max_bytes, cg_npz **out, cg_error *err)
{
    cg_status st = CG_OK;
    uint8_t *tail = NULL, *cd = NULL;
    struct stat sb;
    cg_npz *z = calloc(1, sizeof *z);
    *out = NULL;
    if (!z || !(z->path = strdup(path))) {
        free(z);
        return cg_error_set(err, CG_NOMEM, "out of memory");
    }
    z->max_bytes = cg_io_limit(max_bytes);
    z->file = cg_file_fopen_read(path, err);
    if (!z->file) {
        st = err ? err->status : CG_IO;
        goto fail;
    }
    if (fstat(fileno(z->file), &sb) != 0 || !S_ISREG(sb.st_mode) || sb.st_size < 0) {
        st = cg_error_set(err, CG_IO, "'%s' is not a regular file", path);
        goto fail;
    }
    z->file_size = (uint64_t)sb.st_size;
    if (z->file_size < ZIP_EOCD_SIZE) {
        st = cg_error_set(err, CG_PARSE, "'%s': too small to be an .npz (ZIP) archive", path);
        goto fail;
    }
    /* The EOCD record sits in the last 22 + (comment up to 65535) bytes. */
    size_t tail_len = z->file_size < ZIP_EOCD_SIZE + 65535u ? (size_t)z->file_size
                                                            : ZIP_EOCD_SIZE + 65535u;
    uint64_t tail_off = z->file_size - tail_len;
    tail = malloc(tail_len);
    if (!tail) {
        st = cg_error_set(err, CG_NOMEM, "out of memory");
        goto fail;
    }
    if (!read_at(z->file, tail_off, tail, tail_len)) {
        st = cg_error_set(err, CG_IO, "'%s': read failed", path);
        goto fail;
    }
    size_t eocd = SIZE_MAX;
    for (size_t p = tail_len - ZIP_EOCD_SIZE + 1; p-- > 0;)
        if (cg_io_le32(tail + p) == ZIP_EOCD_SIG &&
            p + ZIP_EOCD_SIZE + cg_io_le16(tail + p + 20) == tail_len) {
            eocd = p;
            break;
        }
    if (eocd == SIZE_MAX) {
        st = cg_error_set(err, CG_PARSE, "'%s': not an .npz (no ZIP end-of-central-directory "
                          "record)", path);
        goto fail;
    }
    const uint8_t *e = tail + eocd;
    uint16_t disk = cg_io_le16(e + 4), cd_disk = cg_io_le16(e + 6);
    uint16_t entries_here = cg_io_le16(e + 8), entries = cg_io_le16(e + 10);
    uint32_t cd_size = cg_io_le32(e + 12), cd_offset = cg_io_le32(e + 16);
    if (entries == 0xFFFF || cd_size == 0xFFFFFFFFu || cd_offset == 0xFFFFFFFFu ||
        (eocd >= 20 && cg_io_le32(tail + eocd - 20) == ZIP64_LOCATOR_SIG)) {
        st = cg_error_set(err, CG_UNSUPPORTED, "'%s': ZIP64 archives are not supported", path);
        goto fail;
    }
    if (disk != 0 || cd_disk != 0 || entries_here != entries) {
        st = cg_error_set(err, CG_UNSUPPORTED, "'%s': multi-disk archives are not supported",
                          path);
        goto fail;
    }
    uint64_t eocd_off = tail_off + eocd;
    if ((uint64_t)cd_offset > eocd_off || (uint64_t)cd_size > eocd_off - cd_offset) {
        st = cg_error_set(err, CG_PARSE, "'%s': central directory (offset %u, %u bytes) lies "
                          "outside the file", path, cd_offset, cd_size);
        goto fail;
    }
    if ((uint64_t)entries * ZIP_CENTRAL_SIZE > cd_size) {
        st = cg_error_set(err, CG_PARSE, "'%s': %u entries cannot fit in a %u-byte central "
                          "directory", path, entries, cd_size);
        goto fail;
    }
    z->cd_offset = cd_offset;
    cd = malloc(cd_size ? cd_size : 1);
    if (!cd) {
        st = cg_error_set(err, CG_NOMEM, "out of memory");
        goto fail;
    }
    if (!read_at(z->file, cd_offset, cd, cd_size)) {
        st = cg_error_set(err, CG_IO, "'%s': read failed", path);
        goto fail;
    }
    st = parse_central(z, cd, cd_size, entries, err);
    if (st != CG_OK)
        goto fail;
    free(tail);
    free(cd);
    *out = z;
    return CG_OK;
fail:
    free(tail);
    free(cd);
    cg_npz_free(z);
    return st;
}

/* Inflates raw deflate data into exactly usize bytes. */
static cg_status inflate_exact(const cg_npz *z, const npz_member *m, const uint8_t *src,
                               uint8_t *dst, cg_error *err)
{
    z_stream zs;
    uint8_t extra;
    memset(&zs, 0, sizeof zs);
    if (inflateInit2(&zs, -MAX_WBITS) != Z_OK)
        return cg_error_set(err, CG_NOMEM, "zlib init failed");
    zs.next_in = (Bytef *)(uintptr_t)src;
    zs.avail_in = m->csize;
    zs.next_out = dst;
    zs.avail_out = m->usize;
    cg_status st = CG_OK;
    /* Once the declared size is reached, output goes to a one-byte spill
     * buffer: any byte landing there means the member is larger than it says. */
    bool spilled = false;
    if (m->usize == 0) {
        zs.next_out = &extra;
        zs.avail_out = 1;
        spilled = true;
    }
    for (;;) {
        int rc = inflate(&zs, Z_NO_FLUSH);
        if (rc == Z_STREAM_END)
            break;
        if (rc != Z_OK && rc != Z_BUF_ERROR) {
            st = cg_error_set(err, CG_PARSE, "'%s': member '%s' has corrupt deflate data (%s)",
                              z->path, m->key, zs.msg ? zs.msg : "zlib error");
            goto done;
        }
        if (zs.avail_out == 0) {
            if (spilled) {
                st = cg_error_set(err, CG_PARSE, "'%s': member '%s' inflates past its declared "
                                  "size of %u bytes", z->path, m->key, m->usize);
                goto done;
            }
            zs.next_out = &extra;
            zs.avail_out = 1;
            spilled = true;
            continue;
        }
        if (zs.avail_in == 0 || rc == Z_BUF_ERROR) {
            st = cg_error_set(err, CG_PARSE, "'%s': member '%s' has truncated deflate data",
                              z->path, m->key);
            goto done;
        }
    }
    if (zs.total_out != m->usize) {
        st = cg_error_set(err, CG_PARSE, "'%s': member '%s' inflates to %lu bytes, declared %u",
                          z->path, m->key, (unsigned long)zs.total_out, m->usize);
        goto done;
    }
done:
    inflateEnd(&zs);
    return st;
}

cg_status cg_npz_load(cg_npz *z, const char *key, cg_tensor *out, cg_error *err)
{
    cg_status st = CG_OK;
    uint8_t *comp = NULL, *data = NULL;
    uint8_t lh[ZIP_LOCAL_SIZE];
    const npz_member *m = NULL;
    memset(out, 0, sizeof *out);
    for (size_t i = 0; i < z->count; i++)
        if (strcmp(z->members[i].key, key) == 0)
            m = &z->members[i];
    if (!m) {
        char keys[256];
        size_t n = 0;
        keys[0] = '\0';
        for (size_t i = 0; i < z->count && n + 4 < sizeof keys; i++) {
            int w = snprintf(keys + n, sizeof keys - n, "%s'%s'", i ? ", " : "",
                             z->members[i].key);
            if (w < 0)
                break;
            n += (size_t)w < sizeof keys - n ? (size_t)w : sizeof keys - n - 1;
        }
        return cg_error_set(err, CG_INVALID, "'%s' has no array '%s' (keys: %s)", z->path, key,
                            z->count ? keys : "none");
    }
    if (m->usize > z->max_bytes)
        return cg_error_set(err, CG_LIMIT, "'%s': member '%s' declares %u bytes, over the "
                            "limit of %zu", z->path, key, m->usize, z->max_bytes);
    if (!read_at(z->file, m->local_offset, lh, sizeof lh) || cg_io_le32(lh) != ZIP_LOCAL_SIG)
        return cg_error_set(err, CG_PARSE, "'%s': member '%s' has a bad local header", z->path,
                            key);
    uint64_t data_off = (uint64_t)m->local_offset + ZIP_LOCAL_SIZE + cg_io_le16(lh + 26) +
                        cg_io_le16(lh + 28);
    if (cg_io_le16(lh + 8) != m->method)
        return cg_error_set(err, CG_PARSE, "'%s': member '%s': local and central headers "
                            "disagree on the method", z->path, key);
    if (data_off > z->cd_offset || m->csize > z->cd_offset - data_off)
        return cg_error_set(err, CG_PARSE, "'%s': member '%s' data overruns the archive",
                            z->path, key);
    if (m->method == 0 && m->csize != m->usize)
        return cg_error_set(err, CG_PARSE, "'%s': stored member '%s' has compressed size %u "
                            "but size %u", z->path, key, m->csize, m->usize);
    comp = malloc(m->csize ? m->csize : 1);
    if (!comp) {
        st = cg_error_set(err, CG_NOMEM, "out of memory");
        goto done;
    }
    if (!read_at(z->file, data_off, comp, m->csize)) {
        st = cg_error_set(err, CG_IO, "'%s': read failed", z->path);
        goto done;
    }
    if (m->method == 8) {
        data = malloc(m->usize ? m->usize : 1);
        if (!data) {
            st = cg_error_set(err, CG_NOMEM, "out of memory for %u bytes", m->usize);
            goto done;
        }
        st = inflate_exact(z, m, comp, data, err);
        if (st != CG_OK)
            goto done;
    } else {
        data = comp;
        comp = NULL;
    }
    if ((uint32_t)crc32(0L, data, m->usize) != m->crc) {
        st = cg_error_set(err, CG_PARSE, "'%s': member '%s' fails its CRC-32 check", z->path,
                          key);
        goto done;
    }
    char what[512];
    snprintf(what, sizeof what, "%s:%s", z->path, key);
    /* the inflated member stays allocated while it is decoded: the two
     * together are held to the limit */
    size_t left = z->max_bytes > m->usize ? z->max_bytes - m->usize : 1;
    st = cg_npy_parse(data, m->usize, what, left, out, err);
done:
    free(comp);
    free(data);
    return st;
}

/* --- writing ------------------------------------------------------------------ */

static bool put_bytes(FILE *f, const void *p, size_t n) { return fwrite(p, 1, n, f) == n; }

/* Raw-deflates src into a malloc'd buffer. */
static cg_status deflate_raw(const uint8_t *src, size_t n, uint8_t **out, size_t *out_n,
                             cg_error *err)
{
    z_stream zs;
    memset(&zs, 0, sizeof zs);
    if (deflateInit2(&zs, Z_DEFAULT_COMPRESSION, Z_DEFLATED, -MAX_WBITS, 8,
                     Z_DEFAULT_STRATEGY) != Z_OK)
        return cg_error_set(err, CG_NOMEM, "zlib init failed");
    uLong bound = deflateBound(&zs, (uLong)n);
    uint8_t *buf = malloc(bound ? bound : 1);
    if (!buf) {
        deflateEnd(&zs);
        return cg_error_set(err, CG_NOMEM, "out of memory");
    }
    zs.next_in = (Bytef *)(uintptr_t)src;
    zs.avail_in = (uInt)n;
    zs.next_out = buf;
    zs.avail_out = (uInt)bound;
    int rc = deflate(&zs, Z_FINISH);
    *out_n = zs.total_out;
    deflateEnd(&zs);
    if (rc != Z_STREAM_END) {
        free(buf);
        return cg_error_set(err, CG_RUNTIME, "deflate failed");
    }
    *out = buf;
    return CG_OK;
}

cg_status cg_npz_save(const char *path, size_t count, const char *const *keys,
                      const cg_tensor *const *tensors, bool compress, cg_error *err)
{
    cg_status st = CG_OK;
    uint8_t *central = NULL;
    size_t central_len = 0;
    uint32_t offset = 0;
    cg_atomic_file af;
    FILE *f = NULL;
    if (count >= 0xFFFF)
        return cg_error_set(err, CG_UNSUPPORTED, "writing '%s': %zu arrays need ZIP64", path,
                            count);
    if ((st = cg_atomic_begin(&af, path, err)) != CG_OK)
        return st;
    f = af.f;
    for (size_t i = 0; i < count; i++) {
        uint8_t *npy = NULL, *packed = NULL;
        size_t npy_n = 0, packed_n = 0;
        size_t key_len = strlen(keys[i]);
        if (key_len + 4 > 0xFFFF) {
            st = cg_error_set(err, CG_LIMIT, "writing '%s': key %zu is too long", path, i);
            goto done;
        }
        st = cg_npy_serialize(tensors[i], &npy, &npy_n, err);
        if (st != CG_OK) {
            cg_error_prefix(err, "writing '%s' array '%s': ", path, keys[i]);
            goto done;
        }
        uint16_t method = 0;
        const uint8_t *payload = npy;
        size_t payload_n = npy_n;
        if (compress && npy_n <= 0xFFFFFFFFu) {
            st = deflate_raw(npy, npy_n, &packed, &packed_n, err);
            if (st != CG_OK) {
                free(npy);
                goto done;
            }
            method = 8;
            payload = packed;
            payload_n = packed_n;
        }
        uint32_t crc = (uint32_t)crc32(0L, npy, (uInt)npy_n);
        size_t record = ZIP_LOCAL_SIZE + key_len + 4 + payload_n;
        if (npy_n > 0xFFFFFFFEu || payload_n > 0xFFFFFFFEu ||
            record > 0xFFFFFFFEu - offset) {
            free(npy);
            free(packed);
            st = cg_error_set(err, CG_UNSUPPORTED, "writing '%s': archive over 4 GiB needs ZIP64",
                              path);
            goto done;
        }
        uint8_t hdr[ZIP_LOCAL_SIZE];
        memset(hdr, 0, sizeof hdr);
        cg_io_put32(hdr, ZIP_LOCAL_SIG);
        cg_io_put16(hdr + 4, 20);
        cg_io_put16(hdr + 8, method);
        cg_io_put16(hdr + 12, 0x21); /* 1980-01-01: reproducible bytes */
        cg_io_put32(hdr + 14, crc);
        cg_io_put32(hdr + 18, (uint32_t)payload_n);
        cg_io_put32(hdr + 22, (uint32_t)npy_n);
        cg_io_put16(hdr + 26, (uint16_t)(key_len + 4));
        bool ok = put_bytes(f, hdr, sizeof hdr) && put_bytes(f, keys[i], key_len) &&
                  put_bytes(f, ".npy", 4) && put_bytes(f, payload, payload_n);
        free(npy);
        free(packed);
        if (!ok) {
            st = cg_error_set(err, CG_IO, "write to '%s' failed", path);
            goto done;
        }
        uint8_t *grown = realloc(central, central_len + ZIP_CENTRAL_SIZE + key_len + 4);
        if (!grown) {
            st = cg_error_set(err, CG_NOMEM, "out of memory");
            goto done;
        }
        central = grown;
        uint8_t *c = central + central_len;
        memset(c, 0, ZIP_CENTRAL_SIZE);
        cg_io_put32(c, ZIP_CENTRAL_SIG);
        cg_io_put16(c + 4, 20);
        cg_io_put16(c + 6, 20);
        cg_io_put16(c + 10, method);
        cg_io_put16(c + 14, 0x21);
        cg_io_put32(c + 16, crc);
        cg_io_put32(c + 20, (uint32_t)payload_n);
        cg_io_put32(c + 24, (uint32_t)npy_n);
        cg_io_put16(c + 28, (uint16_t)(key_len + 4));
        cg_io_put32(c + 42, offset);
        memcpy(c + ZIP_CENTRAL_SIZE, keys[i], key_len);
        memcpy(c + ZIP_CENTRAL_SIZE + key_len, ".npy", 4);
        central_len += ZIP_CENTRAL_SIZE + key_len + 4;
        offset += (uint32_t)record;
    }
    if (central_len > 0xFFFFFFFEu - offset) {
        st = cg_error_set(err, CG_UNSUPPORTED, "writing '%s': archive over 4 GiB needs ZIP64",
                          path);
        goto done;
    }
    uint8_t eocd[ZIP_EOCD_SIZE];
    memset(eocd, 0, sizeof eocd);
    cg_io_put32(eocd, ZIP_EOCD_SIG);
    cg_io_put16(eocd + 8, (uint16_t)count);
    cg_io_put16(eocd + 10, (uint16_t)count);
    cg_io_put32(eocd + 12, (uint32_t)central_len);
    cg_io_put32(eocd + 16, offset);
    if (!put_bytes(f, central ? central : eocd, central_len) || !put_bytes(f, eocd, sizeof eocd))
        st = cg_error_set(err, CG_IO, "write to '%s' failed", path);
done:
    free(central);
    if (st == CG_OK)
        return cg_atomic_commit(&af, err);
    cg_atomic_abort(&af);
    return st;
}
