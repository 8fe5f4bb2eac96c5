/* libFuzzer target: arbitrary bytes as a --tol tolerance file (defaults,
 * per-output entries, types, ranges, unknown keys and output names),
 * resolved for a model with three outputs. */
#include <stdint.h>

#include "convgate/compare.h"
#include "fuzz_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *path = fuzz_scratch_path("tol.json");
    if (!path || fuzz_write(path, data, size) != 0)
        return 0;
    static const char *const outputs[3] = {"logits", "boxes", "y"};
    cg_tolerance_args args = {false, false, 0, 0, false, path};
    cg_output_tolerance tols[3];
    cg_error err;
    cg_error_clear(&err);
    if (cg_tolerances_resolve(outputs, 3, &args, size % 2 == 0, tols, &err) == CG_OK)
        cg_tolerances_free(tols, 3);
    return 0;
}
