/* libFuzzer target: arbitrary bytes as a model -> load, check, inspect.
 * Any crash, leak, overflow or UB report is a finding. */
#include <stdint.h>
#include <stdio.h>

#include "convgate/check.h"
#include "convgate/inspect.h"
#include "convgate/model.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static FILE *sink;
    if (!sink)
        sink = fopen("/dev/null", "w");
    cg_error err;
    cg_error_clear(&err);
    cg_model *m = NULL;
    if (cg_model_load_bytes(data, size, NULL, &m, &err) == CG_OK) {
        cg_check_report report;
        if (cg_check_model(m, NULL, &report, &err) != CG_OK)
            cg_error_clear(&err);
        cg_check_report_free(&report);
        cg_error_clear(&err);
        if (sink)
            if (cg_inspect_write(m, NULL, true, sink, &err) != CG_OK)
                cg_error_clear(&err);
        cg_model_free(m);
    }
    return 0;
}
