/* libFuzzer target: arbitrary bytes as an .npz (ZIP directory, stored and
 * deflated members, each member's .npy). */
#include <stdint.h>

#include "convgate/tensor_io.h"
#include "fuzz_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *path = fuzz_scratch_path("input.npz");
    if (!path || fuzz_write(path, data, size) != 0)
        return 0;
    cg_error err;
    cg_error_clear(&err);
    cg_npz *z = NULL;
    if (cg_npz_open(path, (size_t)16 << 20, &z, &err) == CG_OK) {
        for (size_t i = 0; i < cg_npz_count(z) && i < 16; i++) {
            cg_tensor t;
            cg_error_clear(&err);
            if (cg_npz_load(z, cg_npz_key(z, i), &t, &err) == CG_OK)
                cg_tensor_release(&t);
        }
        cg_npz_free(z);
    }
    return 0;
}
