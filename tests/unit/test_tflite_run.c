/* Every .tflite fixture runs on the reference runtime (lowered by
 * cg_tflite_lower) and matches the outputs the real LiteRT (LiteRT.js,
 * XNNPACK) gave on the same inputs, recorded in
 * tests/data/tflite/expectations.json:
 *  - float outputs of float models: max |convgate - LiteRT| <= 1e-5 of the
 *    output's scale (its largest magnitude), NaN where LiteRT has NaN;
 *  - quantized models: integer outputs within 1 (one LSB), float outputs
 *    (a DEQUANTIZE of a quantized tensor) within one LSB of that tensor's
 *    scale. TFLite's reference requantization (which convgate follows)
 *    and XNNPACK's (which LiteRT.js runs) round some values to the
 *    neighbouring integer; the table printed shows by how much.
 * A fixture LiteRT refuses must not lower either, with an error naming the
 * op. The table printed is docs/tflite.md's agreement table. */
#include <float.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "convgate/model.h"
#include "convgate/runtime.h"
#include "convgate/schema.h"
#include "convgate/tensor_io.h"
#include "convgate/tflite.h"
#include "testlib.h"


#define ROOT CG_SOURCE_DIR "/tests/data/tflite/"

/* One LSB of a float output that DEQUANTIZE makes from a quantized tensor
 * (0 when the output is not one). */
static double dequantized_lsb(const cg_model *m, size_t output)
{
    const cg_tflite_model *tm = m->tflite->source;
    const cg_tflite_subgraph *g = &tm->subgraphs[0];
    int32_t t = g->outputs[output];
    for (size_t i = 0; i < g->operator_count; i++) {
        const cg_tflite_operator *op = &g->operators[i];
        if (cg_tflite_op_code(tm, op)->builtin != CG_TFLITE_OP_DEQUANTIZE ||
            op->output_count < 1 || op->outputs[0] != t || op->input_count < 1)
            continue;
        const cg_tflite_tensor *x = cg_tflite_tensor_at(g, op->inputs[0]);
        if (x && x->quant && x->quant->scale_count)
            return x->quant->scale[0];
    }
    return 0.0;
}

static bool is_quantized_model(const cg_model *m)
{
    const cg_tflite_model *tm = m->tflite->source;
    for (size_t s = 0; s < tm->subgraph_count; s++)
        for (size_t i = 0; i < tm->subgraphs[s].tensor_count; i++) {
            const cg_tflite_tensor *t = &tm->subgraphs[s].tensors[i];
            if (t->quant && t->quant->scale_count &&
                (t->type == CG_TFLITE_TYPE_INT8 || t->type == CG_TFLITE_TYPE_UINT8))
                return true;
        }
    return false;
}

static void run_fixture(const char *key, json_t *fx, size_t *ran, size_t *refused)
{
    char path[1024];
    cg_error err;
    cg_error_clear(&err);
    json_t *cpu = json_object_get(fx, "litert_cpu");
    const char *status = json_string_value(json_object_get(cpu, "status"));
    snprintf(path, sizeof path, ROOT "%s", json_string_value(json_object_get(fx, "file")));
    cg_model *m = NULL;
    cg_status st = cg_model_load_any(path, NULL, &m, &err);
    if (status && strcmp(status, "refused") == 0) {
        EXPECT(st == CG_UNSUPPORTED && strstr(err.msg, "Flex"), "%s: LiteRT refuses it; "
               "convgate lowered it (status %d: %s)", key, (int)st, err.msg);
        printf("| %-40s | refused by both: %.60s |\n", key, err.msg);
        (*refused)++;
        cg_model_free(m);
        return;
    }
    EXPECT(st == CG_OK, "%s: %s", key, err.msg);
    if (st != CG_OK)
        return;
    EXPECT(m->tflite && m->tflite->source, "%s: no lowering recorded", key);
    for (size_t i = 0; i < m->graph->node_count; i++)
        EXPECT(cg_tflite_node_origin(m, &m->graph->nodes[i]) != NULL, "%s: node %zu has no "
               "origin", key, i);
    json_t *ins = json_object_get(fx, "inputs");
    size_t nin = json_array_size(ins);
    EXPECT(nin == m->graph->input_count, "%s: %zu input files, %zu graph inputs", key, nin,
           m->graph->input_count);
    cg_named_value *inputs = calloc(nin + 1, sizeof *inputs);
    for (size_t i = 0; i < nin && i < m->graph->input_count; i++) {
        cg_tensor t;
        snprintf(path, sizeof path, ROOT "%s",
                 json_string_value(json_object_get(json_array_get(ins, i), "file")));
        if (cg_npy_load(path, 0, &t, &err) != CG_OK ||
            cg_value_from_tensor(&t, &inputs[i].value, &err) != CG_OK) {
            EXPECT(0, "%s: %s", key, err.msg);
            continue;
        }
        inputs[i].name = m->graph->inputs[i].name;
    }
    cg_runtime *rt = NULL;
    cg_named_value *outs = NULL;
    size_t nout = 0;
    st = cg_runtime_init(m, NULL, &rt, &err);
    if (st == CG_OK)
        st = cg_runtime_run(rt, inputs, nin, &outs, &nout, &err);
    EXPECT(st == CG_OK, "%s: %s", key, err.msg);
    json_t *want = json_object_get(cpu, "outputs");
    bool quant = is_quantized_model(m);
    for (size_t j = 0; st == CG_OK && j < json_array_size(want); j++) {
        cg_tensor ref;
        snprintf(path, sizeof path, ROOT "%s",
                 json_string_value(json_object_get(json_array_get(want, j), "file")));
        if (cg_npy_load(path, 0, &ref, &err) != CG_OK) {
            EXPECT(0, "%s: %s", key, err.msg);
            continue;
        }
        const cg_tensor *got = j < nout ? &outs[j].value->tensor : NULL;
        EXPECT(got && got->numel == ref.numel && got->dtype == ref.dtype && got->rank == ref.rank,
               "%s: output %zu has another type or shape", key, j);
        if (!got || got->numel != ref.numel || got->dtype != ref.dtype) {
            cg_tensor_release(&ref);
            continue;
        }
        for (int d = 0; d < ref.rank && d < got->rank; d++)
            EXPECT(got->dims[d] == ref.dims[d], "%s: output %zu dim %d is %lld, LiteRT's %lld",
                   key, j, d, (long long)got->dims[d], (long long)ref.dims[d]);
        double worst = 0, scale = 0, tol;
        bool nan_mismatch = false;
        for (int64_t e = 0; e < ref.numel; e++) {
            double a = cg_tensor_get_f64(got, e), b = cg_tensor_get_f64(&ref, e);
            if (isnan(a) || isnan(b)) {
                nan_mismatch = nan_mismatch || isnan(a) != isnan(b);
                continue;
            }
            worst = fmax(worst, fabs(a - b));
            scale = fmax(scale, fabs(b));
        }
        const char *rule;
        if (!cg_dtype_is_float(ref.dtype)) {
            tol = quant ? 1.0 : 0.0;
            rule = quant ? "1 LSB" : "exact";
        } else if (quant && dequantized_lsb(m, j) > 0) {
            /* one LSB, plus the float32 rounding of the two dequantized values */
            tol = dequantized_lsb(m, j) + 2 * FLT_EPSILON * scale;
            rule = "1 LSB of scale";
        } else {
            tol = 1e-5 * fmax(scale, 1e-30);
            rule = "1e-5 x scale";
        }
        EXPECT(!nan_mismatch && worst <= tol, "%s: output %zu '%s' is %g from LiteRT's "
               "(scale %g, tolerance %g: %s)", key, j, outs[j].name, worst, scale, tol, rule);
        printf("| %-40s | %-24.24s | %10.3g | %10.3g | %-14s | %s |\n", key, outs[j].name,
               worst, scale, rule, !nan_mismatch && worst <= tol ? "ok" : "FAIL");
        cg_tensor_release(&ref);
    }
    (*ran)++;
    if (outs)
        cg_runtime_free_outputs(outs, nout);
    cg_runtime_free(rt);
    for (size_t i = 0; i < nin; i++)
        cg_value_free(inputs[i].value);
    free(inputs);
    cg_model_free(m);
}

int main(void)
{
    json_error_t je;
    json_t *root = json_load_file(ROOT "expectations.json", 0, &je);
    EXPECT(root != NULL, "expectations.json: %s", je.text);
    if (!root)
        return 1;
    /* the schema rows spell the domain out (the check stage precedes tflite) */
    static const char *const domain_ops[] = {"ADD", "CONV_2D", "DEPTHWISE_CONV_2D",
                                             "FULLY_CONNECTED", "MEAN", "MUL", "QUANTIZE"};
    for (size_t i = 0; i < sizeof domain_ops / sizeof domain_ops[0]; i++)
        EXPECT(cg_schema_find(CG_TFLITE_DOMAIN, domain_ops[i], 1) != NULL,
               "no schema row for %s in %s", domain_ops[i], CG_TFLITE_DOMAIN);
    json_t *fixtures = json_object_get(root, "fixtures");
    const char *key;
    json_t *fx;
    size_t ran = 0, refused = 0;
    printf("| fixture | output | max abs diff | scale | tolerance | |\n");
    json_object_foreach(fixtures, key, fx) {
        run_fixture(key, fx, &ran, &refused);
    }
    EXPECT(ran >= 86 && refused == 1, "%zu fixtures ran, %zu refused", ran, refused);
    printf("test_tflite_run: %zu fixtures match LiteRT, %zu refused by both\n", ran, refused);
    json_decref(root);
    return test_done("test_tflite_run");
}
