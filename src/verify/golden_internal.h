/*
 * Hashing for the library's own readers of trusted-by-hash files (golden
 * sets, artifacts): the sha256 of a descriptor the caller opened itself,
 * with cg_file_open_beneath, so the bytes hashed are the bytes of the file
 * that was checked, never a link's target swapped in between.
 */
#ifndef CG_VERIFY_GOLDEN_INTERNAL_H
#define CG_VERIFY_GOLDEN_INTERNAL_H

#include <stdint.h>

#include "convgate/golden.h"

/* The sha256 of what fd holds, read in chunks; fd is closed here. `path`
 * names the file in messages; *bytes gets its size (bytes may be NULL). */
CG_NODISCARD cg_status cg_sha256_fd(int fd, const char *path, char hex[CG_SHA256_HEX],
                                    uint64_t *bytes, cg_error *err);

#endif
