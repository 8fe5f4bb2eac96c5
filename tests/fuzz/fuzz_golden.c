/* libFuzzer target: arbitrary bytes as a golden set's manifest.json (format
 * version, model record, sets, paths, dtypes, shapes, hashes). */
#include <stdint.h>

#include "convgate/golden.h"
#include "fuzz_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *path = fuzz_scratch_path("manifest.json");
    if (!path || fuzz_write(path, data, size) != 0)
        return 0;
    char dir[1024];
    snprintf(dir, sizeof dir, "%s", path);
    char *slash = strrchr(dir, '/');
    if (!slash)
        return 0;
    *slash = '\0';
    cg_error err;
    cg_error_clear(&err);
    cg_golden *g = NULL;
    if (cg_golden_open(dir, &g, &err) == CG_OK)
        cg_golden_free(g);
    return 0;
}
