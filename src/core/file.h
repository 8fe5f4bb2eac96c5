/*
 * Files: the one place convgate opens a file to read it or writes one.
 *
 * Reading: every file a user or a model names (model, external data, input
 * tensors, golden manifests, tolerance files, profiles) is opened with
 * O_NONBLOCK and checked with fstat on the open descriptor before a byte is
 * read, so a FIFO, a device, a socket or a directory is refused at once
 * instead of blocking forever or reading without end. O_NONBLOCK is cleared
 * again once the file is known to be regular.
 *
 * Writing: every file convgate produces is written atomically. The bytes go
 * to a new temporary file in the destination's folder (so the rename stays
 * on one file system), which is flushed and fsync'd, then renamed over the
 * destination, and the folder is fsync'd so the rename itself is durable. A
 * failed write (full disk, file size limit, I/O error) removes the
 * temporary file and leaves any previous file at the destination untouched:
 * a good file is never replaced by a truncated one. A symbolic link at the
 * destination is refused (a rename would replace it, never write through
 * it, but replacing a link the user made is a surprise either way).
 */
#ifndef CG_CORE_FILE_H
#define CG_CORE_FILE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "convgate/status.h"

/* Opens path read-only; -1 with err set unless it is a regular file.
 * `label` names the file in messages (NULL: path). */
int cg_file_open_read(const char *path, const char *label, cg_error *err);
/* The same for `name` relative to dirfd; extra_flags may add O_NOFOLLOW. */
int cg_file_openat_read(int dirfd, const char *name, int extra_flags, const char *label,
                        cg_error *err);
/* Opens base_dir/relpath one component at a time with O_NOFOLLOW, so no
 * symbolic link anywhere below base_dir is followed (base_dir itself is the
 * user's choice and may be a link), refusing '..', absolute paths and
 * anything but a regular file at the end (CG_SECURITY for a link). */
#define CG_FILE_MAX_COMPONENTS 64
int cg_file_open_beneath(const char *base_dir, const char *relpath, const char *label,
                         cg_error *err);
/* cg_file_open_read as a stdio stream ("rb"). */
FILE *cg_file_fopen_read(const char *path, cg_error *err);
/* Reads a whole regular file of at most max_bytes into a malloc'd buffer
 * with a NUL appended (*len excludes it). */
cg_status cg_file_read_all(const char *path, size_t max_bytes, char **out, size_t *len,
                           cg_error *err);
/* The same for base_dir/relpath opened with cg_file_open_beneath. */
cg_status cg_file_read_beneath(const char *base_dir, const char *relpath, size_t max_bytes,
                               char **out, size_t *len, cg_error *err);

typedef struct cg_atomic_file {
    FILE *f;    /* write the contents here */
    char *path; /* destination */
    char *tmp;  /* the temporary file beside it */
} cg_atomic_file;

/* Creates the temporary file for `path` (its folder must exist). */
cg_status cg_atomic_begin(cg_atomic_file *af, const char *path, cg_error *err);
/* Flushes, syncs and closes the temporary without renaming it yet (to
 * commit several files only once all of them are complete); on failure
 * the temporary is removed and af released. */
cg_status cg_atomic_finish(cg_atomic_file *af, cg_error *err);
/* Finishes (if not yet done) and renames the temporary over the destination; on any
 * failure the temporary is removed and the destination is left as it was.
 * Always releases af. */
cg_status cg_atomic_commit(cg_atomic_file *af, cg_error *err);
/* Removes the temporary file and releases af (safe on a zeroed af). */
void cg_atomic_abort(cg_atomic_file *af);
/* The whole sequence for a buffer already in memory. */
cg_status cg_atomic_write(const char *path, const void *data, size_t len, cg_error *err);

/* True when a and b name the same existing file (device and inode). */
bool cg_file_same(const char *a, const char *b);
/* True when something (a file of any kind, or a link, even a dangling one)
 * stands at path. */
bool cg_file_exists(const char *path);

#endif
