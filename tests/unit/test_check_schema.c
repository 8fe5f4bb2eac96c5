/* Schema table tests: every row is reachable by binary search (so both row
 * arrays are sorted and free of duplicates), each row's min/max counts match
 * what OpSchema::Finalize derives from its formals (this checks the
 * hand-written opset 18-21 rows), lookups pick the newest version not above
 * the opset, and defaults parsed by tools/gen_schemas.py came through. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "convgate/schema.h"
#include "testlib.h"

static void test_every_row_found(void)
{
    size_t n = cg_schema_count();
    EXPECT(n > 500, "only %zu rows", n);
    for (size_t i = 0; i < n; i++) {
        const cg_schema *s = cg_schema_at(i);
        const cg_schema *found = cg_schema_find(s->domain, s->name, s->since_version);
        EXPECT(found == s, "row %zu %s '%s'-%d: lookup returned %s-%d", i, s->domain, s->name,
               s->since_version, found ? found->name : "NULL", found ? found->since_version : -1);
    }
    EXPECT(cg_schema_at(n) == NULL, "row past the end");
}

/* OpSchema::Finalize: singles raise min and max, optionals raise max, a
 * trailing variadic sets min += min_arity and max = INT32_MAX. */
static void derive(const cg_schema_formal *f, size_t count, int *min, int *max)
{
    *min = 0;
    *max = 0;
    for (size_t i = 0; i < count; i++) {
        if (f[i].option == CG_FORMAL_SINGLE) {
            ++*max;
            *min = *max;
        } else if (f[i].option == CG_FORMAL_OPTIONAL) {
            ++*max;
        } else {
            *min = *max + f[i].min_arity;
            *max = INT32_MAX;
        }
    }
}

static void test_counts_match_formals(void)
{
    for (size_t i = 0; i < cg_schema_count(); i++) {
        const cg_schema *s = cg_schema_at(i);
        int min, max;
        derive(s->inputs, s->input_count, &min, &max);
        EXPECT(min == s->min_input && max == s->max_input, "%s-%d inputs [%d,%d] vs formals [%d,%d]",
               s->name, s->since_version, s->min_input, s->max_input, min, max);
        derive(s->outputs, s->output_count, &min, &max);
        EXPECT(min == s->min_output && max == s->max_output,
               "%s-%d outputs [%d,%d] vs formals [%d,%d]", s->name, s->since_version,
               s->min_output, s->max_output, min, max);
        for (size_t a = 0; a < s->attr_count; a++)
            EXPECT(!(s->attrs[a].required && s->attrs[a].has_default),
                   "%s-%d attribute %s is required and has a default", s->name, s->since_version,
                   s->attrs[a].name);
        for (size_t c = 0; c < s->constraint_count; c++)
            EXPECT(s->constraints[c].allowed_count > 0, "%s-%d constraint %s is empty", s->name,
                   s->since_version, s->constraints[c].param);
    }
}

static void test_lookup(void)
{
    const cg_schema *s0;
    EXPECT(cg_schema_max_opset("") == 21, "max ai.onnx opset %d", cg_schema_max_opset(""));
    EXPECT(cg_schema_max_opset("ai.onnx") == 21, "alias: %d", cg_schema_max_opset("ai.onnx"));
    /* ai.onnx.ml 5: ONNX Runtime writes it into every model it saves */
    EXPECT(cg_schema_max_opset("ai.onnx.ml") == 5, "ml: %d", cg_schema_max_opset("ai.onnx.ml"));
    s0 = cg_schema_find("ai.onnx.ml", "LabelEncoder", 5);
    EXPECT(s0 && s0->since_version == 4, "LabelEncoder@ml5 -> %d", s0 ? s0->since_version : -1);
    s0 = cg_schema_find("ai.onnx.ml", "TreeEnsemble", 4);
    EXPECT(s0 == NULL, "TreeEnsemble exists before ai.onnx.ml 5");
    s0 = cg_schema_find("ai.onnx.ml", "TreeEnsemble", 5);
    EXPECT(s0 && s0->since_version == 5 && cg_schema_find_attr(s0, "tree_roots") &&
               cg_schema_find_attr(s0, "tree_roots")->required,
           "TreeEnsemble@ml5");
    EXPECT(cg_schema_known_domain("ai.onnx.preview.training"), "preview.training");
    EXPECT(!cg_schema_known_domain("com.example"), "custom domain known");

    const cg_schema *s = cg_schema_find("", "Relu", 21);
    EXPECT(s && s->since_version == 14, "Relu@21 -> %d", s ? s->since_version : -1);
    s = cg_schema_find("", "Relu", 5);
    EXPECT(s && s->since_version == 1, "Relu@5 -> %d", s ? s->since_version : -1);
    EXPECT(cg_schema_find("", "Gelu", 19) == NULL, "Gelu exists before opset 20");
    s = cg_schema_find("ai.onnx", "Gelu", 20);
    EXPECT(s && s->since_version == 20, "Gelu@20");
    s = cg_schema_find("", "ReduceMax", 19);
    EXPECT(s && s->since_version == 18 && s->max_input == 2, "ReduceMax@19 -> %d",
           s ? s->since_version : -1);
    s = cg_schema_find("", "ReduceMax", 21);
    EXPECT(s && s->since_version == 20, "ReduceMax@21 -> %d", s ? s->since_version : -1);
    s = cg_schema_find("", "Cast", 20);
    EXPECT(s && s->since_version == 19 && cg_schema_find_attr(s, "saturate"), "Cast@20");
    EXPECT(cg_schema_find("", "NoSuchOp", 21) == NULL, "unknown op found");
    EXPECT(cg_schema_known_op("", "Mish") && !cg_schema_known_op("", "Mish2"), "known_op");
    EXPECT(cg_schema_find("", "Relu", 0) == NULL, "opset 0");

    /* Deprecations come from onnx itself. */
    s = cg_schema_find("", "Upsample", 10);
    EXPECT(s && s->deprecated, "Upsample-10 not deprecated");
}

static void test_defaults(void)
{
    const cg_schema *s = cg_schema_find("", "Conv", 17);
    const cg_schema_attr *a = cg_schema_find_attr(s, "group");
    EXPECT(a && a->type == CG_ATTR_INT && a->has_default && a->default_i == 1, "Conv group");
    a = cg_schema_find_attr(s, "auto_pad");
    EXPECT(a && a->default_s && strcmp(a->default_s, "NOTSET") == 0, "Conv auto_pad");
    a = cg_schema_find_attr(s, "kernel_shape");
    EXPECT(a && !a->has_default && !a->required, "Conv kernel_shape");
    s = cg_schema_find("", "Resize", 19);
    a = cg_schema_find_attr(s, "cubic_coeff_a");
    EXPECT(a && a->has_default && a->default_f == -0.75f, "Resize cubic_coeff_a");
    a = cg_schema_find_attr(s, "coordinate_transformation_mode");
    EXPECT(a && strcmp(a->default_s, "half_pixel") == 0, "Resize ctm");
    s = cg_schema_find("", "Cast", 13);
    a = cg_schema_find_attr(s, "to");
    EXPECT(a && a->required && a->type == CG_ATTR_INT, "Cast to");
    s = cg_schema_find("", "LeakyRelu", 16);
    a = cg_schema_find_attr(s, "alpha");
    EXPECT(a && fabsf(a->default_f - 0.01f) < 1e-9f, "LeakyRelu alpha %g", a ? a->default_f : 0);
    s = cg_schema_find("", "LayerNormalization", 17);
    EXPECT(s && s->allows_unchecked_attributes, "LayerNormalization unchecked attributes");
    s = cg_schema_find("", "Loop", 21);
    EXPECT(s && s->input_count == 3 && s->inputs[2].option == CG_FORMAL_VARIADIC &&
               !s->inputs[2].homogeneous,
           "Loop-21 formals");
}

int main(void)
{
    test_every_row_found();
    test_counts_match_formals();
    test_lookup();
    test_defaults();
    return test_done("test_check_schema");
}
