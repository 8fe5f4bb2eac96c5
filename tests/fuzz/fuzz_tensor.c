/* libFuzzer target: arbitrary bytes as a TensorProto (.pb test data). */
#include <stdint.h>

#include "convgate/model.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    cg_error err;
    cg_error_clear(&err);
    cg_model *holder = NULL;
    cg_tensor_proto *t = NULL;
    if (cg_tensor_proto_load_bytes(data, size, &holder, &t, &err) == CG_OK) {
        int64_t n;
        if (cg_tensor_proto_numel(t, &n, &err) != CG_OK)
            cg_error_clear(&err);
        cg_model_free(holder);
    }
    return 0;
}
