/* The TFLite checker on models built in memory: a valid one passes, and
 * each defect is reported once under its rule with a message naming the
 * offending tensor, operator or value. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "convgate/tflite.h"
#include "testlib.h"


/* y = ADD(x, w) with w a [4] float constant; outputs may be rewired. */
typedef struct fixture {
    cg_tflite_model m;
    cg_tflite_subgraph g[3];
    cg_tflite_tensor t[6];
    cg_tflite_operator op[3];
    cg_tflite_opcode oc[3];
    cg_tflite_buffer buf[3];
    int32_t ins[4], outs[4], op_in[3][3], op_out[3][2];
    int32_t shape4[1], shape14[2], sig[2];
    float wdata[4];
    float scales[4];
    int64_t zps[4];
    cg_tflite_quant q;
    cg_tflite_signature sig_def;
    cg_tflite_tensor_map sig_in, sig_out;
} fixture;

static void fixture_init(fixture *f)
{
    memset(f, 0, sizeof *f);
    f->shape4[0] = 4;
    f->shape14[0] = 1;
    f->shape14[1] = 4;
    static const char *const names[] = {"x", "w", "y", "t3", "t4", "t5"};
    for (int i = 0; i < 6; i++) {
        f->t[i].name = names[i];
        f->t[i].type = CG_TFLITE_TYPE_FLOAT32;
        f->t[i].shape = f->shape14;
        f->t[i].rank = 2;
    }
    f->t[1].shape = f->shape4;
    f->t[1].rank = 1;
    f->t[1].buffer = 1;
    f->buf[1].data.data = (const uint8_t *)f->wdata;
    f->buf[1].data.len = sizeof f->wdata;
    f->oc[0] = (cg_tflite_opcode){CG_TFLITE_OP_ADD, CG_TFLITE_OP_ADD, CG_TFLITE_OP_ADD, NULL, 1};
    f->op_in[0][0] = 0;
    f->op_in[0][1] = 1;
    f->op_out[0][0] = 2;
    f->op[0].inputs = f->op_in[0];
    f->op[0].input_count = 2;
    f->op[0].outputs = f->op_out[0];
    f->op[0].output_count = 1;
    f->op[0].options.type = CG_TFLITE_OPT_AddOptions;
    f->op[0].options.decoded = true;
    f->ins[0] = 0;
    f->outs[0] = 2;
    f->g[0] = (cg_tflite_subgraph){"main", f->t, 3, f->ins, 1, f->outs, 1, f->op, 1, -1};
    f->m.version = 3;
    f->m.opcodes = f->oc;
    f->m.opcode_count = 1;
    f->m.subgraphs = f->g;
    f->m.subgraph_count = 1;
    f->m.buffers = f->buf;
    f->m.buffer_count = 2;
}

/* Runs the checker; returns the number of errors and checks that `rule`
 * (NULL: none expected) appears with `needle` in its message. */
static size_t check(const fixture *f, const char *rule, const char *needle, const char *what)
{
    cg_check_report r;
    cg_error err;
    cg_error_clear(&err);
    cg_status st = cg_tflite_check(&f->m, NULL, &r, &err);
    bool found = rule == NULL;
    for (size_t i = 0; i < r.count; i++) {
        if (rule && strcmp(r.problems[i].rule, rule) == 0 &&
            (!needle || strstr(r.problems[i].message, needle)))
            found = true;
    }
    if (!found || (!rule && r.count)) {
        fprintf(stderr, "%s: expected %s/%s, got:\n", what, rule ? rule : "(nothing)",
                needle ? needle : "");
        for (size_t i = 0; i < r.count; i++)
            fprintf(stderr, "  [%s] %s: %s\n", r.problems[i].rule, r.problems[i].where,
                    r.problems[i].message);
    }
    EXPECT(found && (rule || r.count == 0), "%s", what);
    EXPECT((st == CG_OK) == (r.error_count == 0), "%s: status %s", what, cg_status_name(st));
    size_t errors = r.error_count;
    cg_check_report_free(&r);
    return errors;
}

int main(void)
{
    fixture f;

    fixture_init(&f);
    check(&f, NULL, NULL, "valid ADD");

    fixture_init(&f);
    f.m.version = 2;
    check(&f, "schema-version", "version 2", "schema version");

    fixture_init(&f);
    f.m.subgraph_count = 0;
    check(&f, "subgraphs", NULL, "no subgraphs");

    fixture_init(&f);
    f.buf[1].data.len = 12;
    check(&f, "buffer-size", "holds 12 bytes, but shape [4] of float32 needs 16", "short buffer");

    fixture_init(&f);
    f.buf[0].data = f.buf[1].data;
    check(&f, "buffer-sentinel", "buffer 0 holds 16 bytes", "buffer 0 not empty");

    fixture_init(&f);
    f.sig[0] = -1;
    f.sig[1] = 5;
    f.t[0].shape_signature = f.sig;
    f.t[0].signature_rank = 2;
    f.t[0].has_shape_signature = true;
    check(&f, "shape", "disagrees with shape [1, 4] at dim 1", "signature dim");
    f.t[0].signature_rank = 1;
    check(&f, "shape", "has rank 1 but shape [1, 4] has rank 2", "signature rank");

    fixture_init(&f);
    f.sig[0] = -1;
    f.sig[1] = 4;
    f.t[0].shape = f.sig;
    check(&f, "shape", "dim 0 = -1", "negative static dim");

    fixture_init(&f);
    f.t[2].type = 77;
    check(&f, "tensor-type", "type 77", "unknown type");

    /* data flow */
    fixture_init(&f);
    f.op_in[0][0] = 3;
    f.g[0].tensor_count = 4;
    check(&f, "dataflow", "tensor 3 't3', is never produced", "never produced");

    fixture_init(&f);
    f.g[0].tensor_count = 4;
    f.oc[1] = (cg_tflite_opcode){CG_TFLITE_OP_RELU, CG_TFLITE_OP_RELU, CG_TFLITE_OP_RELU, NULL, 1};
    f.m.opcode_count = 2;
    /* op 0: y = ADD(x, t3); op 1: t3 = RELU(x): t3 read before it is written */
    f.op_in[0][1] = 3;
    f.op_in[1][0] = 0;
    f.op_out[1][0] = 3;
    f.op[1] = (cg_tflite_operator){.opcode_index = 1, .inputs = f.op_in[1], .input_count = 1,
                                   .outputs = f.op_out[1], .output_count = 1};
    f.g[0].operator_count = 2;
    check(&f, "dataflow", "is read before operator #1 writes it", "read before write");

    fixture_init(&f);
    f.g[0].tensor_count = 4;
    f.outs[0] = 3;
    check(&f, "dataflow", "subgraph output 0 is never produced", "output never produced");

    fixture_init(&f);
    f.op_out[0][0] = 1;
    f.outs[0] = 1;
    check(&f, "dataflow", "is a constant", "writes a constant");

    fixture_init(&f);
    f.m.opcode_count = 2;
    f.oc[1] = f.oc[0];
    f.op[1] = f.op[0];
    f.g[0].operator_count = 2;
    check(&f, "dataflow", "already written by operator #0", "written twice");

    /* optional inputs (-1) are fine */
    fixture_init(&f);
    f.op_in[0][2] = CG_TFLITE_OPTIONAL;
    f.op[0].input_count = 3;
    check(&f, NULL, NULL, "omitted optional input");

    /* operator codes */
    fixture_init(&f);
    f.oc[0].builtin = f.oc[0].builtin_code = 400;
    f.oc[0].deprecated_builtin_code = 127;
    check(&f, "opcode", "builtin code 400", "unknown builtin");

    fixture_init(&f);
    f.oc[0].version = 0;
    check(&f, "opcode", "version 0", "version 0");

    fixture_init(&f);
    f.oc[0].builtin = f.oc[0].builtin_code = CG_TFLITE_OP_CUSTOM;
    f.oc[0].deprecated_builtin_code = CG_TFLITE_OP_CUSTOM;
    f.op[0].options.type = CG_TFLITE_OPT_NONE;
    check(&f, "opcode", "without a custom_code", "custom without code");
    f.oc[0].custom_code = "FlexConv2D";
    EXPECT(check(&f, "flex-op", "FlexConv2D", "flex op") == 0, "flex is a warning");
    f.oc[0].custom_code = "MyOp";
    EXPECT(check(&f, "custom-op", "MyOp", "custom op") == 0, "custom is a warning");

    fixture_init(&f);
    f.oc[0] = (cg_tflite_opcode){5, 3, 5, NULL, 1}; /* resolves to the larger, 5 */
    EXPECT(check(&f, "opcode", "disagree", "code fields disagree") == 0, "only a warning");

    /* options */
    fixture_init(&f);
    f.op[0].options.type = CG_TFLITE_OPT_MulOptions;
    EXPECT(check(&f, "options", "carries MulOptions, but TFLite reads AddOptions",
                 "options of another op") == 0,
           "mismatched options are a warning");

    fixture_init(&f);
    f.op[0].options.u.activation.fused_activation_function = 9;
    check(&f, "options", "fused_activation_function 9", "bad activation");

    fixture_init(&f);
    f.oc[0] = (cg_tflite_opcode){CG_TFLITE_OP_CONV_2D, CG_TFLITE_OP_CONV_2D,
                                 CG_TFLITE_OP_CONV_2D, NULL, 1};
    f.op[0].options.type = CG_TFLITE_OPT_Conv2DOptions;
    f.op[0].options.u.conv2d = (cg_tflite_conv2d_options){2, 0, 0, 1, 1, 1, 0};
    check(&f, "options", "padding 2", "bad padding");
    check(&f, "options", "stride_w is 0", "zero stride");

    /* quantization */
    fixture_init(&f);
    f.t[2].type = CG_TFLITE_TYPE_INT8;
    f.q.scale = f.scales;
    f.q.zero_point = f.zps;
    f.scales[0] = 0.5f;
    f.q.scale_count = 1;
    f.q.zero_point_count = 2;
    f.t[2].quant = &f.q;
    check(&f, "quantization", "1 scales but 2 zero points", "count mismatch");
    f.q.zero_point_count = 1;
    f.zps[0] = 300;
    check(&f, "quantization", "zero_point[0] is 300, outside int8's range", "zero point range");
    f.zps[0] = 0;
    f.scales[0] = -1.0f;
    check(&f, "quantization", "scale[0] is -1", "negative scale");
    f.scales[0] = 0.5f;
    f.q.scale_count = f.q.zero_point_count = 3;
    f.q.quantized_dimension = 1;
    check(&f, "quantization", "3 per-axis scales for dimension 1, which has size 4", "axis size");
    f.q.quantized_dimension = 2;
    check(&f, "quantization", "dimension 2 of a rank-2 tensor", "axis out of rank");

    /* IF arity: then/else subgraphs take one input less than the op */
    fixture_init(&f);
    f.oc[0] = (cg_tflite_opcode){CG_TFLITE_OP_IF, CG_TFLITE_OP_IF, CG_TFLITE_OP_IF, NULL, 1};
    f.op[0].options.type = CG_TFLITE_OPT_IfOptions;
    f.op[0].options.u.subgraphs.first = 1;
    f.op[0].options.u.subgraphs.second = 2;
    f.t[1].type = CG_TFLITE_TYPE_BOOL;
    f.t[1].shape = NULL;
    f.t[1].rank = 0;
    f.buf[1].data.len = 1;
    /* op: y = IF(w (cond), x); then: 1 in, 1 out; else: 2 in */
    f.op_in[0][0] = 1;
    f.op_in[0][1] = 0;
    static int32_t one[1] = {0}, two[2] = {0, 1}, out1[1] = {1};
    cg_tflite_tensor branch_t[2] = {{.name = "a", .shape = f.shape14, .rank = 2},
                                    {.name = "b", .shape = f.shape14, .rank = 2}};
    f.g[1] = (cg_tflite_subgraph){"then", branch_t, 2, one, 1, one, 1, NULL, 0, -1};
    f.g[2] = (cg_tflite_subgraph){"else", branch_t, 2, two, 2, out1, 1, NULL, 0, -1};
    f.m.subgraph_count = 3;
    check(&f, "control-flow", "else subgraph 2 'else' takes 2 inputs", "IF arity");

    /* signatures */
    fixture_init(&f);
    f.sig_in = (cg_tflite_tensor_map){"x", 1};
    f.sig_out = (cg_tflite_tensor_map){"y", 2};
    f.sig_def = (cg_tflite_signature){"serving_default", 0, &f.sig_in, &f.sig_out, 1, 1};
    f.m.signatures = &f.sig_def;
    f.m.signature_count = 1;
    check(&f, "signature", "input 'x' is tensor 1, which is not an input", "signature input");

    /* mutating inputs */
    fixture_init(&f);
    static const uint8_t flags[1] = {0};
    f.op[0].mutating_variable_inputs = flags;
    f.op[0].mutating_count = 1;
    check(&f, "mutating-inputs", "1 mutating_variable_inputs flags for 2 inputs",
          "mutating flags");

    return test_done("test_tflite_check");
}
