/* Opening files to read and writing them atomically (see file.h). */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/file.h"

static const char *file_kind(mode_t m)
{
    if (S_ISDIR(m))
        return "a directory";
    if (S_ISFIFO(m))
        return "a FIFO";
    if (S_ISCHR(m))
        return "a character device";
    if (S_ISBLK(m))
        return "a block device";
    if (S_ISSOCK(m))
        return "a socket";
    return "not a regular file";
}

/* Checks an fd opened with O_NONBLOCK is a regular file, then makes it
 * blocking again; closes it and returns -1 otherwise. */
static int keep_if_regular(int fd, const char *label, cg_error *err)
{
    struct stat st;
    if (fstat(fd, &st) != 0) {
        int e = errno;
        close(fd);
        cg_error_set(err, CG_IO, "%s: cannot stat: %s", label, strerror(e));
        return -1;
    }
    if (!S_ISREG(st.st_mode)) {
        close(fd);
        cg_error_set(err, CG_IO, "%s: is %s, not a regular file (refused: reading it could block "
                     "or never end)", label, file_kind(st.st_mode));
        return -1;
    }
    int fl = fcntl(fd, F_GETFL);
    if (fl < 0 || fcntl(fd, F_SETFL, fl & ~O_NONBLOCK) != 0) {
        int e = errno;
        close(fd);
        cg_error_set(err, CG_IO, "%s: fcntl: %s", label, strerror(e));
        return -1;
    }
    return fd;
}

int cg_file_open_read(const char *path, const char *label, cg_error *err)
{
    if (!label)
        label = path;
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
    if (fd < 0) {
        int e = errno;
        cg_error_set(err, CG_IO, "%s: cannot open: %s", label, strerror(e));
        errno = e; /* callers tell a missing file (ENOENT) apart */
        return -1;
    }
    return keep_if_regular(fd, label, err);
}

int cg_file_openat_read(int dirfd, const char *name, int extra_flags, const char *label,
                        cg_error *err)
{
    if (!label)
        label = name;
    int fd = openat(dirfd, name, O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY | extra_flags);
    if (fd < 0) {
        /* the caller words link refusals (ELOOP) itself: keep errno */
        int e = errno;
        cg_error_set(err, CG_IO, "%s: cannot open: %s", label, strerror(e));
        errno = e;
        return -1;
    }
    return keep_if_regular(fd, label, err);
}

FILE *cg_file_fopen_read(const char *path, cg_error *err)
{
    int fd = cg_file_open_read(path, NULL, err);
    if (fd < 0)
        return NULL;
    FILE *f = fdopen(fd, "rb");
    if (!f) {
        cg_error_set(err, CG_IO, "%s: %s", path, strerror(errno));
        close(fd);
    }
    return f;
}

/* Reads all of regular file fd (closing it) into a NUL-terminated buffer. */
static cg_status read_fd_all(int fd, const char *path, size_t max_bytes, char **out, size_t *len,
                             cg_error *err)
{
    struct stat st;
    cg_status s = CG_OK;
    char *buf = NULL;
    if (fstat(fd, &st) != 0) {
        s = cg_error_set(err, CG_IO, "%s: cannot stat: %s", path, strerror(errno));
        goto done;
    }
    if ((uint64_t)st.st_size > max_bytes || (uint64_t)st.st_size >= SIZE_MAX - 1) {
        s = cg_error_set(err, CG_LIMIT, "%s: %lld bytes, over the limit of %zu bytes", path,
                         (long long)st.st_size, max_bytes);
        goto done;
    }
    /* The size can change under us: read up to the limit, not the stat size. */
    size_t cap = (size_t)st.st_size + 1, used = 0;
    buf = malloc(cap + 1);
    if (!buf) {
        s = cg_error_set(err, CG_NOMEM, "%s: out of memory", path);
        goto done;
    }
    for (;;) {
        if (used == cap) {
            if (cap > max_bytes) {
                s = cg_error_set(err, CG_LIMIT, "%s: over the limit of %zu bytes", path,
                                 max_bytes);
                goto done;
            }
            size_t ncap = cap < max_bytes / 2 ? cap * 2 : max_bytes + 1;
            char *nb = realloc(buf, ncap + 1);
            if (!nb) {
                s = cg_error_set(err, CG_NOMEM, "%s: out of memory", path);
                goto done;
            }
            buf = nb;
            cap = ncap;
        }
        ssize_t n = read(fd, buf + used, cap - used);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            s = cg_error_set(err, CG_IO, "%s: read error: %s", path, strerror(errno));
            goto done;
        }
        if (n == 0)
            break;
        used += (size_t)n;
    }
    if (used > max_bytes) {
        s = cg_error_set(err, CG_LIMIT, "%s: over the limit of %zu bytes", path, max_bytes);
        goto done;
    }
    buf[used] = '\0';
    *out = buf;
    *len = used;
    buf = NULL;
done:
    free(buf);
    close(fd);
    return s;
}

cg_status cg_file_read_all(const char *path, size_t max_bytes, char **out, size_t *len,
                           cg_error *err)
{
    *out = NULL;
    *len = 0;
    int fd = cg_file_open_read(path, NULL, err);
    if (fd < 0)
        return err ? err->status : CG_IO;
    return read_fd_all(fd, path, max_bytes, out, len, err);
}

cg_status cg_file_read_beneath(const char *base_dir, const char *relpath, size_t max_bytes,
                               char **out, size_t *len, cg_error *err)
{
    *out = NULL;
    *len = 0;
    int fd = cg_file_open_beneath(base_dir, relpath, NULL, err);
    if (fd < 0)
        return err ? err->status : CG_IO;
    return read_fd_all(fd, relpath, max_bytes, out, len, err);
}

int cg_file_open_beneath(const char *base_dir, const char *relpath, const char *label,
                         cg_error *err)
{
    if (!label)
        label = relpath;
    if (!*relpath || relpath[0] == '/') {
        cg_error_set(err, CG_SECURITY, "%s: '%s' is not a relative path", label, relpath);
        return -1;
    }
    int dirfd = open(base_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dirfd < 0) {
        cg_error_set(err, CG_IO, "%s: cannot open folder '%s': %s", label, base_dir,
                     strerror(errno));
        return -1;
    }
    char comp[4096];
    const char *p = relpath;
    for (int depth = 0;; depth++) {
        while (*p == '/')
            p++;
        const char *slash = strchr(p, '/');
        size_t n = slash ? (size_t)(slash - p) : strlen(p);
        if (n == 0 || n >= sizeof comp || depth >= CG_FILE_MAX_COMPONENTS ||
            (n == 2 && p[0] == '.' && p[1] == '.')) {
            close(dirfd);
            cg_error_set(err, CG_SECURITY, "%s: bad relative path '%s'", label, relpath);
            return -1;
        }
        memcpy(comp, p, n);
        comp[n] = '\0';
        bool last = !slash || !slash[strspn(slash, "/")];
        int fd = last ? openat(dirfd, comp, O_RDONLY | O_NONBLOCK | O_NOFOLLOW | O_CLOEXEC |
                                                O_NOCTTY)
                      : openat(dirfd, comp, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        int e = errno;
        if (fd < 0) {
            struct stat lst;
            bool is_link = fstatat(dirfd, comp, &lst, AT_SYMLINK_NOFOLLOW) == 0 &&
                           S_ISLNK(lst.st_mode);
            close(dirfd);
            if (is_link || e == ELOOP)
                cg_error_set(err, CG_SECURITY, "%s: '%s' in '%s' is a symbolic link (refused: "
                             "it could point outside '%s')", label, comp, relpath, base_dir);
            else
                cg_error_set(err, CG_IO, "%s: cannot open '%s': %s", label, relpath,
                             strerror(e));
            errno = e; /* callers tell a missing file (ENOENT) apart */
            return -1;
        }
        close(dirfd);
        if (last)
            return keep_if_regular(fd, label, err);
        dirfd = fd;
        p += n;
    }
}

bool cg_file_same(const char *a, const char *b)
{
    struct stat sa, sb;
    return stat(a, &sa) == 0 && stat(b, &sb) == 0 && sa.st_dev == sb.st_dev &&
           sa.st_ino == sb.st_ino;
}

bool cg_file_exists(const char *path)
{
    struct stat st;
    return lstat(path, &st) == 0;
}

/* --- atomic writes ---------------------------------------------------------- */

/* The folder of path ("." when none); malloc'd. */
static char *folder_of(const char *path)
{
    const char *slash = strrchr(path, '/');
    size_t n = slash ? (size_t)(slash - path) : 0;
    char *d = malloc(n + 2);
    if (!d)
        return NULL;
    if (!slash)
        strcpy(d, ".");
    else if (n == 0)
        strcpy(d, "/");
    else {
        memcpy(d, path, n);
        d[n] = '\0';
    }
    return d;
}

static void atomic_release(cg_atomic_file *af)
{
    free(af->path);
    free(af->tmp);
    memset(af, 0, sizeof *af);
}

cg_status cg_atomic_begin(cg_atomic_file *af, const char *path, cg_error *err)
{
    static unsigned counter;
    memset(af, 0, sizeof *af);
    const char *slash = strrchr(path, '/');
    const char *base = slash ? slash + 1 : path;
    if (!*base)
        return cg_error_set(err, CG_USAGE, "'%s' names a folder, not a file", path);
    struct stat lst;
    if (lstat(path, &lst) == 0 && S_ISLNK(lst.st_mode))
        return cg_error_set(err, CG_SECURITY, "'%s' is a symbolic link: refusing to replace it "
                            "(remove it first)", path);
    size_t dir_len = (size_t)(base - path), cap = strlen(path) + 64;
    af->path = strdup(path);
    af->tmp = malloc(cap);
    if (!af->path || !af->tmp) {
        atomic_release(af);
        return cg_error_set(err, CG_NOMEM, "%s: out of memory", path);
    }
    /* O_EXCL with a fresh name: never an existing file or a planted link;
     * 0666 lets the umask decide the permissions, as for any new file. */
    int fd = -1;
    for (int attempt = 0; attempt < 100 && fd < 0; attempt++) {
        snprintf(af->tmp, cap, "%.*s.%s.tmp.%ld.%u", (int)dir_len, path, base, (long)getpid(),
                 counter++);
        fd = open(af->tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0666);
        if (fd < 0 && errno != EEXIST)
            break;
    }
    if (fd < 0) {
        int e = errno;
        atomic_release(af);
        return cg_error_set(err, CG_IO, "cannot create a file beside '%s': %s", path,
                            strerror(e));
    }
    af->f = fdopen(fd, "wb");
    if (!af->f) {
        int e = errno;
        close(fd);
        unlink(af->tmp);
        atomic_release(af);
        return cg_error_set(err, CG_IO, "%s: %s", path, strerror(e));
    }
    return CG_OK;
}

void cg_atomic_abort(cg_atomic_file *af)
{
    if (!af)
        return;
    if (af->f)
        fclose(af->f);
    if (af->tmp)
        unlink(af->tmp);
    atomic_release(af);
}

cg_status cg_atomic_finish(cg_atomic_file *af, cg_error *err)
{
    if (!af->f)
        return af->tmp ? CG_OK : cg_error_set(err, CG_USAGE, "cg_atomic_finish: no file in progress");
    /* ferror catches a failed earlier write (ENOSPC, EFBIG) that stdio kept. */
    int e = 0;
    errno = 0;
    if (ferror(af->f) || fflush(af->f) != 0)
        e = errno ? errno : EIO;
    else if (fsync(fileno(af->f)) != 0 && errno != EINVAL)
        e = errno;
    int ce = fclose(af->f);
    af->f = NULL;
    if (!e && ce != 0)
        e = errno ? errno : EIO;
    if (e) {
        cg_status s = cg_error_set(err, CG_IO, "writing '%s' failed: %s (the previous file, if "
                                   "any, is unchanged)", af->path, strerror(e));
        cg_atomic_abort(af);
        return s;
    }
    return CG_OK;
}

cg_status cg_atomic_commit(cg_atomic_file *af, cg_error *err)
{
    cg_status s = cg_atomic_finish(af, err);
    if (s != CG_OK) {
        atomic_release(af);
        return s;
    }
    if (rename(af->tmp, af->path) != 0) {
        cg_status s = cg_error_set(err, CG_IO, "cannot replace '%s': %s", af->path,
                                   strerror(errno));
        cg_atomic_abort(af);
        return s;
    }
    /* The rename is durable once the folder is synced; failing to sync a
     * folder (some file systems refuse) does not undo a complete file. */
    char *dir = folder_of(af->path);
    if (dir) {
        int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (dfd >= 0) {
            (void)fsync(dfd);
            close(dfd);
        }
        free(dir);
    }
    atomic_release(af);
    return CG_OK;
}

cg_status cg_atomic_write(const char *path, const void *data, size_t len, cg_error *err)
{
    cg_atomic_file af;
    cg_status s = cg_atomic_begin(&af, path, err);
    if (s != CG_OK)
        return s;
    if (len && fwrite(data, 1, len, af.f) != len) {
        int e = errno ? errno : EIO;
        cg_atomic_abort(&af);
        return cg_error_set(err, CG_IO, "writing '%s' failed: %s (the previous file, if any, "
                            "is unchanged)", path, strerror(e));
    }
    return cg_atomic_commit(&af, err);
}
