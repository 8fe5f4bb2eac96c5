/* libFuzzer target: arbitrary bytes as a capability profile (JSON schema
 * validation, op rules, sources). */
#include <stdint.h>

#include "convgate/model.h"
#include "fuzz_common.h"
#include "target/registry.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *path = fuzz_scratch_path("profile.json");
    if (!path || fuzz_write(path, data, size) != 0)
        return 0;
    cg_error err;
    cg_error_clear(&err);
    cg_target *t = NULL;
    if (cg_profile_load(path, &t, &err) == CG_OK && t) {
        cg_profile_source_count(t);
        cg_profile_op_count(t);
        t->vt->destroy(t);
    }
    return 0;
}
