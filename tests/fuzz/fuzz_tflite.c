/* libFuzzer target: arbitrary bytes as a .tflite model -> load (verify and
 * decode), check, inspect as JSON, and a walk over every tensor's data as
 * the runtime would do it. Any crash, leak, overflow, UB report or hang is
 * a finding. */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "convgate/check.h"
#include "convgate/inspect.h"
#include "convgate/tflite.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static FILE *sink;
    if (!sink)
        sink = fopen("/dev/null", "w");
    cg_error err;
    cg_error_clear(&err);
    cg_tflite_model *m = NULL;
    if (cg_tflite_load_bytes(data, size, "fuzz.tflite", NULL, &m, &err) != CG_OK)
        return 0;
    cg_check_report report;
    if (cg_tflite_check(m, NULL, &report, &err) != CG_OK)
        cg_error_clear(&err);
    cg_check_report_free(&report);
    cg_error_clear(&err);
    if (sink)
        if (cg_inspect_write_tflite(m, NULL, true, sink, &err) != CG_OK)
            cg_error_clear(&err);
    /* What a consumer reads: every operand and constant byte. */
    volatile uint8_t acc = 0;
    for (size_t s = 0; s < m->subgraph_count; s++) {
        const cg_tflite_subgraph *g = &m->subgraphs[s];
        for (size_t i = 0; i < g->operator_count; i++) {
            const cg_tflite_operator *op = &g->operators[i];
            (void)cg_tflite_op_code(m, op);
            for (size_t k = 0; k < op->input_count; k++) {
                cg_bytes b = cg_tflite_tensor_data(m, cg_tflite_tensor_at(g, op->inputs[k]));
                for (size_t j = 0; j < b.len; j += 4093)
                    acc ^= b.data[j];
                if (b.len)
                    acc ^= b.data[b.len - 1];
            }
        }
    }
    (void)acc;
    cg_tflite_free(m);
    return 0;
}
