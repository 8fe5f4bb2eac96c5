/* Checker unit tests on models built in memory (no loader involved): a clean
 * model passes, and each rule the checker adds beyond onnx.checker, or
 * shares with it, reports the node, the op and the offending value. */
#include <stdio.h>
#include <string.h>

#include "convgate/check.h"
#include "testlib.h"

/* A tiny model: y = Relu(x) (+ whatever a test adds), IR 8, opset 17. */
typedef struct fixture {
    cg_model model;
    cg_graph graph;
    cg_opset_id opset;
    cg_shape shape;
    cg_type type;
    cg_value_info inputs[2];
    cg_value_info outputs[2];
    cg_node nodes[4];
    const char *names[4][4];
    const char *outs[4][4];
    cg_attr attrs[4];
} fixture;

static void fixture_init(fixture *f)
{
    memset(f, 0, sizeof *f);
    f->type.kind = CG_TYPE_TENSOR;
    f->type.elem_type = 1;
    f->type.has_elem_type = true;
    f->type.shape = &f->shape;
    f->inputs[0] = (cg_value_info){.name = "x", .type = &f->type};
    f->outputs[0] = (cg_value_info){.name = "y", .type = &f->type};
    f->names[0][0] = "x";
    f->outs[0][0] = "y";
    f->nodes[0] = (cg_node){.inputs = f->names[0], .input_count = 1, .outputs = f->outs[0],
                            .output_count = 1, .name = "relu1", .op_type = "Relu", .domain = ""};
    f->graph = (cg_graph){.nodes = f->nodes, .node_count = 1, .name = "main",
                          .inputs = f->inputs, .input_count = 1, .outputs = f->outputs,
                          .output_count = 1};
    f->opset = (cg_opset_id){.domain = "", .version = 17, .has_version = true};
    f->model = (cg_model){.ir_version = 8, .has_ir_version = true, .opsets = &f->opset,
                          .opset_count = 1, .graph = &f->graph};
}

/* Runs the checker; returns the number of errors, and whether some stored
 * problem has `rule` and a message containing `needle` (NULL: any). */
static size_t run(fixture *f, const char *rule, const char *needle, bool *found)
{
    cg_check_report r;
    cg_error err;
    cg_error_clear(&err);
    cg_status st = cg_check_model(&f->model, NULL, &r, &err);
    *found = false;
    for (size_t i = 0; i < r.count; i++) {
        const cg_check_problem *p = &r.problems[i];
        if (rule && strcmp(p->rule, rule) == 0 && (!needle || strstr(p->message, needle)))
            *found = true;
    }
    size_t errors = r.error_count;
    if ((st == CG_OK) != (errors == 0))
        test_failures++, fprintf(stderr, "status %d disagrees with %zu errors\n", st, errors);
    if (errors && !rule)
        for (size_t i = 0; i < r.count; i++)
            fprintf(stderr, "  unexpected: [%s] %s: %s\n", r.problems[i].rule, r.problems[i].where,
                    r.problems[i].message);
    cg_check_report_free(&r);
    return errors;
}

#define EXPECT_CLEAN(f)                                                                        \
    do {                                                                                       \
        bool found_;                                                                           \
        EXPECT(run(f, NULL, NULL, &found_) == 0, "expected a clean model");                    \
    } while (0)
#define EXPECT_RULE(f, rule, needle)                                                           \
    do {                                                                                       \
        bool found_;                                                                           \
        size_t n_ = run(f, rule, needle, &found_);                                             \
        EXPECT(n_ > 0 && found_, "expected [%s] '%s' (errors: %zu)", rule, needle, n_);        \
    } while (0)

static void test_clean_and_model_rules(void)
{
    fixture f;
    fixture_init(&f);
    EXPECT_CLEAN(&f);
    f.model.ir_version = 10;
    EXPECT_CLEAN(&f);
    f.model.ir_version = 11;
    EXPECT_RULE(&f, "ir-version", "11");
    fixture_init(&f);
    f.model.has_ir_version = false;
    f.model.ir_version = 0;
    EXPECT_RULE(&f, "ir-version", "no ir_version");
    fixture_init(&f);
    f.opset.version = 22;
    EXPECT_RULE(&f, "opset-import", "22");
    fixture_init(&f);
    f.model.opset_count = 0;
    EXPECT_RULE(&f, "opset-import", "requires");
}

static void test_graph_rules(void)
{
    fixture f;
    fixture_init(&f);
    f.names[0][0] = "nope";
    EXPECT_RULE(&f, "topo-order", "'nope'");

    fixture_init(&f); /* second node redefines y */
    f.names[1][0] = "x";
    f.outs[1][0] = "y";
    f.nodes[1] = (cg_node){.inputs = f.names[1], .input_count = 1, .outputs = f.outs[1],
                           .output_count = 1, .op_type = "Relu"};
    f.graph.node_count = 2;
    EXPECT_RULE(&f, "ssa", "'y'");

    fixture_init(&f);
    f.outputs[1] = (cg_value_info){.name = "ghost", .type = &f.type};
    f.graph.output_count = 2;
    EXPECT_RULE(&f, "output-unproduced", "'ghost'");

    fixture_init(&f);
    f.graph.name = "";
    EXPECT_RULE(&f, "graph-name", "empty");
}

static void test_node_rules(void)
{
    fixture f;
    fixture_init(&f);
    f.attrs[0] = (cg_attr){.name = "alpha", .type = CG_ATTR_FLOAT, .has_type = true, .f = 1,
                           .has_f = true};
    f.nodes[0].attrs = f.attrs;
    f.nodes[0].attr_count = 1;
    EXPECT_RULE(&f, "attr-unknown", "'alpha'");

    fixture_init(&f);
    f.nodes[0].op_type = "Cast";
    EXPECT_RULE(&f, "attr-required", "'to'");

    fixture_init(&f);
    f.names[0][1] = "x";
    f.nodes[0].input_count = 2;
    EXPECT_RULE(&f, "input-count", "2 inputs");

    fixture_init(&f);
    f.nodes[0].op_type = "Gelu"; /* opset 20 */
    EXPECT_RULE(&f, "op-unknown", "Gelu");
    f.opset.version = 20;
    f.model.ir_version = 9;
    EXPECT_CLEAN(&f);

    fixture_init(&f);
    f.nodes[0].domain = "com.example";
    EXPECT_RULE(&f, "opset-missing", "com.example");

    /* A subgraph on Relu: not a control-flow op. */
    fixture_init(&f);
    static cg_graph body = {.name = "body"};
    f.attrs[0] = (cg_attr){.name = "__body", .type = CG_ATTR_GRAPH, .has_type = true, .g = &body};
    f.nodes[0].attrs = f.attrs;
    f.nodes[0].attr_count = 1;
    EXPECT_RULE(&f, "subgraph-misplaced", "'__body'");
}

static void test_control_flow(void)
{
    /* Loop(M="", cond="", v=x) with a body of the wrong arity. */
    fixture f;
    fixture_init(&f);
    static cg_value_info body_in[3];
    static cg_value_info body_out[1];
    static const char *bn_in[1] = {"v_in"};
    static const char *bn_out[1] = {"v_out"};
    static cg_node body_node;
    body_in[0] = (cg_value_info){.name = "iter"};
    body_in[1] = (cg_value_info){.name = "cond_in"};
    body_in[2] = (cg_value_info){.name = "v_in"};
    body_out[0] = (cg_value_info){.name = "v_out"};
    body_node = (cg_node){.inputs = bn_in, .input_count = 1, .outputs = bn_out,
                          .output_count = 1, .op_type = "Relu"};
    static cg_graph body;
    body = (cg_graph){.name = "body", .nodes = &body_node, .node_count = 1, .inputs = body_in,
                      .input_count = 3, .outputs = body_out, .output_count = 1};
    f.names[0][0] = "";
    f.names[0][1] = "";
    f.names[0][2] = "x";
    f.nodes[0] = (cg_node){.inputs = f.names[0], .input_count = 3, .outputs = f.outs[0],
                           .output_count = 1, .name = "loop1", .op_type = "Loop"};
    f.attrs[0] = (cg_attr){.name = "body", .type = CG_ATTR_GRAPH, .has_type = true, .g = &body};
    f.nodes[0].attrs = f.attrs;
    f.nodes[0].attr_count = 1;
    /* body outputs 1, node outputs 1: needs 2 (cond first) */
    EXPECT_RULE(&f, "body-signature", "Loop body has 1 outputs");

    /* Outer-scope reference from a body is fine: body reads x directly. */
    static cg_value_info body_out2[2];
    static const char *bn_in2[1] = {"x"};
    static const char *bn_out2[1] = {"v_out"};
    body_out2[0] = (cg_value_info){.name = "cond_in"};
    body_out2[1] = (cg_value_info){.name = "v_out"};
    body_node.inputs = bn_in2;
    body_node.outputs = bn_out2;
    body.outputs = body_out2;
    body.output_count = 2;
    EXPECT_CLEAN(&f);

    /* ... but redefining an outer name inside it breaks SSA. */
    static const char *bn_out3[1] = {"x"};
    body_node.outputs = bn_out3;
    EXPECT_RULE(&f, "ssa", "'x'");
}

static void test_tensors(void)
{
    fixture f;
    fixture_init(&f);
    static int64_t dims[2] = {2, 3};
    static const uint8_t raw[20] = {0};
    static cg_tensor_proto init;
    init = (cg_tensor_proto){.dims = dims, .rank = 2, .data_type = 1, .has_data_type = true,
                             .name = "w", .raw_data = {raw, sizeof raw}};
    f.graph.initializers = &init;
    f.graph.initializer_count = 1;
    EXPECT_RULE(&f, "tensor-data-size", "20 bytes");
    init.raw_data.len = 24;
    EXPECT_CLEAN(&f);
    static int64_t huge[3] = {INT64_MAX / 2, 4, 1};
    init.dims = huge;
    init.rank = 3;
    EXPECT_RULE(&f, "tensor-numel-overflow", "'w'");
    init.dims = dims;
    init.rank = 2;
    init.data_type = 8; /* STRING in raw_data */
    EXPECT_RULE(&f, "tensor-string-raw", "'w'");
    init.data_type = 0;
    EXPECT_RULE(&f, "tensor-dtype", "UNDEFINED");

    /* sparse: indices out of order */
    fixture_init(&f);
    static int64_t vdims[1] = {2}, idims[1] = {2}, sdims[1] = {5};
    static const float vals[2] = {1, 2};
    static const int64_t idx[2] = {3, 1};
    static cg_tensor_proto values, indices;
    values = (cg_tensor_proto){.dims = vdims, .rank = 1, .data_type = 1, .has_data_type = true,
                               .name = "sp", .float_data = {vals, 2}};
    indices = (cg_tensor_proto){.dims = idims, .rank = 1, .data_type = 7, .has_data_type = true,
                                .int64_data = {idx, 2}};
    static cg_sparse_tensor_proto sp;
    sp = (cg_sparse_tensor_proto){.values = &values, .indices = &indices, .dims = sdims, .rank = 1};
    f.graph.sparse_initializers = &sp;
    f.graph.sparse_initializer_count = 1;
    EXPECT_RULE(&f, "sparse", "sorted");
}

static void test_function_cycle(void)
{
    fixture f;
    fixture_init(&f);
    static cg_function fns[2];
    static cg_node fa, fb;
    static const char *a_in[1] = {"i"}, *a_out[1] = {"o"};
    static cg_opset_id fops[1];
    fops[0] = (cg_opset_id){.domain = "local", .version = 1, .has_version = true};
    fa = (cg_node){.inputs = a_in, .input_count = 1, .outputs = a_out, .output_count = 1,
                   .op_type = "B", .domain = "local"};
    fb = (cg_node){.inputs = a_in, .input_count = 1, .outputs = a_out, .output_count = 1,
                   .op_type = "A", .domain = "local"};
    fns[0] = (cg_function){.name = "A", .domain = "local", .inputs = a_in, .input_count = 1,
                           .outputs = a_out, .output_count = 1, .nodes = &fa, .node_count = 1,
                           .opsets = fops, .opset_count = 1};
    fns[1] = fns[0];
    fns[1].name = "B";
    fns[1].nodes = &fb;
    f.model.functions = fns;
    f.model.function_count = 2;
    EXPECT_RULE(&f, "function-cycle", "leads back");
}

static void test_report_shape(void)
{
    /* Several problems are all collected, with node label and op. */
    fixture f;
    fixture_init(&f);
    f.names[0][0] = "missing";
    f.nodes[0].name = NULL;
    f.nodes[0].op_type = "Cast"; /* also misses 'to' */
    cg_check_report r;
    cg_status st = cg_check_model(&f.model, NULL, &r, NULL);
    EXPECT(st == CG_INVALID && r.error_count == 2, "errors %zu", r.error_count);
    EXPECT(r.count == 2 && r.problems[0].node && strcmp(r.problems[0].node, "#0") == 0 &&
               r.problems[0].op_type && strcmp(r.problems[0].op_type, "Cast") == 0,
           "node label");
    EXPECT(r.count > 0 && strstr(r.problems[0].where, "graph 'main' > node #0 (Cast)") != NULL,
           "where: %s", r.count ? r.problems[0].where : "");
    cg_check_report_free(&r);

    cg_check_options opt = {.max_problems = 1};
    st = cg_check_model(&f.model, &opt, &r, NULL);
    EXPECT(r.count == 1 && r.dropped == 1 && r.error_count == 2, "cap: %zu/%zu", r.count,
           r.dropped);
    cg_check_report_free(&r);
    EXPECT(cg_check_model(NULL, NULL, &r, NULL) == CG_USAGE, "NULL model");
    cg_check_report_free(&r);
}

int main(void)
{
    test_clean_and_model_rules();
    test_graph_rules();
    test_node_rules();
    test_control_flow();
    test_tensors();
    test_function_cycle();
    test_report_shape();
    return test_done("test_check");
}
