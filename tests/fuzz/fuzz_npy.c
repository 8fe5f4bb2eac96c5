/* libFuzzer target: arbitrary bytes as a .npy (header, dtype, shape, payload,
 * strings). Any crash, leak, overflow or UB report is a finding. */
#include <stdint.h>
#include <stdlib.h>

#include "convgate/tensor_io.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    cg_error err;
    cg_error_clear(&err);
    cg_tensor t;
    if (cg_npy_parse(data, size, "fuzz.npy", (size_t)16 << 20, &t, &err) == CG_OK) {
        uint8_t *out = NULL;
        size_t n = 0;
        /* what loads must serialize (or refuse cleanly) */
        if (cg_npy_serialize(&t, &out, &n, &err) == CG_OK)
            free(out);
        cg_tensor_release(&t);
    }
    return 0;
}
