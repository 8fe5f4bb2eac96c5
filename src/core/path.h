/*
 * Folders: what every command that writes files (`run -o`, `dump-ref -o`,
 * `gate --json PATH`, ...) does before writing, so "created if missing"
 * means the same everywhere (every missing folder on the way is made, as
 * `mkdir -p` does, and an existing non-folder is an error naming it); and
 * the one sorted folder listing the readers of input and test folders use.
 */
#ifndef CG_CORE_PATH_H
#define CG_CORE_PATH_H

#include "convgate/status.h"

/* Makes dir and every missing folder above it (mode 0777 before umask). */
cg_status cg_path_make_dirs(const char *dir, cg_error *err);
/* Makes the folders above the file path (nothing for a bare file name). */
cg_status cg_path_make_parents(const char *path, cg_error *err);

#include <stdbool.h>
#include <stddef.h>

/* A regular file / a folder (links followed: the user named the path). */
bool cg_path_is_file(const char *path);
bool cg_path_is_dir(const char *path);
/* The names in folder dir, hidden ones (a leading '.') skipped, sorted by
 * strcmp; with keep, only those for which keep("dir/name") holds. The array
 * and each name are malloc'd: free with cg_path_names_free. */
cg_status cg_path_list(const char *dir, bool (*keep)(const char *path), char ***names,
                       size_t *count, cg_error *err);
void cg_path_names_free(char **names, size_t count);

/* A new private folder $TMPDIR/<prefix>-XXXXXX (mkdtemp, mode 0700); the
 * malloc'd path in *out. */
cg_status cg_path_make_temp_dir(const char *prefix, char **out, cg_error *err);
/* Removes path and, for a folder, everything in it, never following a
 * link (a link is removed, not what it points to). Errors are ignored. */
void cg_path_remove_tree(const char *path);

#endif
