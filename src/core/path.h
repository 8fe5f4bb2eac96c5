/*
 * Output folders: what every command that writes files (`run -o`,
 * `dump-ref -o`, `gate --json PATH`, ...) does before writing, so "created if
 * missing" means the same everywhere: every missing folder on the way is
 * made, as `mkdir -p` does, and an existing non-folder is an error naming it.
 */
#ifndef CG_CORE_PATH_H
#define CG_CORE_PATH_H

#include "convgate/status.h"

/* Makes dir and every missing folder above it (mode 0777 before umask). */
cg_status cg_path_make_dirs(const char *dir, cg_error *err);
/* Makes the folders above the file path (nothing for a bare file name). */
cg_status cg_path_make_parents(const char *path, cg_error *err);

#endif
