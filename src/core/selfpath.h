/* The installed data directory of convgate (see selfpath.c). */
#ifndef CG_CORE_SELFPATH_H
#define CG_CORE_SELFPATH_H

#include <stdbool.h>
#include <stddef.h>

/* Writes <prefix>/share/convgate/<sub> to out and returns true when the
 * binary or library running this code is installed under <prefix> and that
 * directory exists; false otherwise (e.g. in the build tree). */
bool cg_installed_data_dir(const char *sub, char *out, size_t out_len);

#endif
