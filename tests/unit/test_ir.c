/*
 * The IR layer's shared structures: the string map (core/strmap.h) against
 * a naive list over many keys and growth, and the graph index
 * (ir/graph_index.h) on graphs built in memory: value ids, producers,
 * consumers, predecessor/successor lists, a topological order for a graph
 * listed out of order, what a subgraph reads from outside, outer-scope
 * resolution, and the errors for a cycle and for two producers of a name.
 * Plus the small queries of ir/walk.h, and its one table of the TensorProto
 * field each dtype's values sit in (the checker and the runtime read it).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/strmap.h"
#include "ir/graph_index.h"
#include "ir/walk.h"
#include "testlib.h"

static void test_strmap(void)
{
    enum { N = 5000 };
    static char keys[N][16];
    cg_strmap m = {0};
    EXPECT(cg_strmap_get(&m, "x") == CG_STRMAP_NONE, "empty map answers");
    EXPECT(cg_strmap_get(&m, NULL) == CG_STRMAP_NONE, "NULL key");
    for (size_t i = 0; i < N; i++) {
        snprintf(keys[i], sizeof keys[i], "k%zu", i * 7919 % 100003);
        EXPECT(cg_strmap_add(&m, keys[i], i) == i, "add %s", keys[i]);
    }
    EXPECT(m.count == N, "count %zu", m.count);
    EXPECT(m.count * 2 <= m.cap, "load %zu / %zu over 1/2", m.count, m.cap);
    size_t bad = 0;
    for (size_t i = 0; i < N; i++)
        bad += cg_strmap_get(&m, keys[i]) != i;
    EXPECT(bad == 0, "%zu keys lost across growth", bad);
    /* add keeps the first value; set replaces; a copy of the key finds it */
    char copy[16];
    snprintf(copy, sizeof copy, "%s", keys[17]);
    EXPECT(cg_strmap_add(&m, copy, 99999) == 17, "add keeps the first value");
    EXPECT(cg_strmap_set(&m, copy, 4242) && cg_strmap_get(&m, keys[17]) == 4242, "set replaces");
    EXPECT(m.count == N, "set of a present key does not count");
    memset(copy, 'x', sizeof copy - 1); /* set kept the stored key, not copy */
    EXPECT(cg_strmap_get(&m, keys[17]) == 4242 && !cg_strmap_has(&m, copy),
           "set of a present key keeps its stored string");
    EXPECT(!cg_strmap_has(&m, "k-1"), "absent key");
    cg_strmap_free(&m);
    EXPECT(m.cap == 0 && m.keys == NULL, "free empties");

    cg_strmap r = {0};
    EXPECT(cg_strmap_reserve(&r, 100), "reserve");
    size_t cap = r.cap;
    for (size_t i = 0; i < 100; i++)
        cg_strmap_add(&r, keys[i], i);
    EXPECT(r.cap == cap, "reserved room does not grow (%zu -> %zu)", cap, r.cap);
    EXPECT(!cg_strmap_reserve(&r, SIZE_MAX / 2), "an impossible reserve fails");
    EXPECT(cg_strmap_get(&r, keys[42]) == 42, "a failed reserve keeps the map");
    cg_strmap_free(&r);
}

/* x -> a=Relu(x) ; b=Add(a, w) ; y=Mul(b, a), listed out of order. */
static void test_index_basics(void)
{
    cg_model *m = test_model_new(13);
    cg_graph *g = m->graph = test_graph_new(m, "g", 8);
    float w[1] = {2};
    int64_t d1[1] = {1};
    test_graph_input(g, "x", NULL);
    test_graph_input(g, "w", NULL); /* an input with a default */
    test_graph_init_f32(m, g, "w", 1, d1, w);
    test_graph_output(g, "y", NULL);
    test_node(m, g, "Mul", "mul", "b,a", "y");
    test_node(m, g, "Add", "add", "a,w", "b");
    test_node(m, g, "Relu", "relu", "x", "a");
    cg_graph_index ix;
    cg_error err;
    cg_error_clear(&err);
    EXPECT(cg_graph_index_build(g, NULL, &ix, &err) == CG_OK, "build: %s", err.msg);
    if (err.status != CG_OK)
        goto done;
    size_t x = cg_graph_index_value(&ix, "x"), wv = cg_graph_index_value(&ix, "w");
    size_t a = cg_graph_index_value(&ix, "a"), y = cg_graph_index_value(&ix, "y");
    EXPECT(ix.value_count == 5, "5 values, got %zu", ix.value_count);
    EXPECT(x == 0 && wv == 1, "inputs first (x %zu, w %zu)", x, wv);
    EXPECT(cg_graph_index_value(&ix, "nope") == CG_IX_NONE, "absent name");
    EXPECT(ix.value_flags[wv] == (CG_IX_INPUT | CG_IX_INIT), "w is input and initializer");
    EXPECT(ix.value_flags[y] == CG_IX_OUTPUT, "y is an output");
    EXPECT(cg_graph_index_initializer(&ix, "w") == &g->initializers[0], "initializer lookup");
    EXPECT(cg_graph_index_initializer(&ix, "x") == NULL, "x has no initializer");
    EXPECT(ix.producer[a] == 2 && ix.producer[x] == CG_IX_NONE, "producers");
    /* a is read by mul (0) and add (1), in node order */
    EXPECT(ix.cons_off[a + 1] - ix.cons_off[a] == 2 && ix.cons[ix.cons_off[a]] == 0 &&
           ix.cons[ix.cons_off[a] + 1] == 1, "consumers of a");
    EXPECT(ix.pred_off[1] - ix.pred_off[0] == 2, "mul has two producers");
    EXPECT(ix.order[0] == 2 && ix.order[1] == 1 && ix.order[2] == 0, "topological order");
    for (size_t i = 0; i < 3; i++)
        EXPECT(ix.order[ix.pos[i]] == i, "pos inverts order at %zu", i);
    size_t id;
    int up;
    EXPECT(cg_graph_index_resolve(&ix, "a", &id, &up) == &ix && id == a && up == 0, "resolve");
    EXPECT(cg_graph_index_resolve(&ix, "q", &id, &up) == NULL, "resolve absent");
    cg_graph_index_free(&ix);
done:
    cg_model_free(m);
}

/* An If whose branch reads the outer value t: the If depends on t's
 * producer, and the branch's index resolves t one scope out. */
static void test_index_subgraph(void)
{
    cg_model *m = test_model_new(13);
    cg_graph *g = m->graph = test_graph_new(m, "main", 8);
    test_graph_input(g, "x", NULL);
    test_graph_input(g, "c", NULL);
    test_graph_output(g, "r", NULL);
    test_node(m, g, "Relu", "make_t", "x", "t");
    cg_node *n = test_node(m, g, "If", "if", "c", "r");
    cg_graph *then_g = test_graph_new(m, "then", 4), *else_g = test_graph_new(m, "else", 4);
    test_node(m, then_g, "Neg", "neg", "t", "r_then");
    test_graph_output(then_g, "r_then", NULL);
    test_node(m, else_g, "Identity", "id", "x", "r_else");
    test_graph_output(else_g, "r_else", NULL);
    test_node_add_attr(n, attr_graph("then_branch", then_g));
    test_node_add_attr(n, attr_graph("else_branch", else_g));
    cg_graph_index ix, sub;
    cg_error err;
    cg_error_clear(&err);
    EXPECT(cg_graph_index_build(g, NULL, &ix, &err) == CG_OK, "build: %s", err.msg);
    if (err.status != CG_OK)
        goto done;
    size_t t = cg_graph_index_value(&ix, "t"), x = cg_graph_index_value(&ix, "x");
    /* If reads c (input), t (then branch) and x (else branch) */
    EXPECT(ix.in_off[2] - ix.in_off[1] == 3, "If reads 3 values, got %zu",
           ix.in_off[2] - ix.in_off[1]);
    EXPECT(ix.pred_off[2] - ix.pred_off[1] == 1 && ix.pred[ix.pred_off[1]] == 0,
           "If depends on make_t through its branch");
    EXPECT(ix.cons_off[t + 1] - ix.cons_off[t] == 1, "t has one consumer (the If)");
    EXPECT(ix.cons_off[x + 1] - ix.cons_off[x] == 2, "x: make_t and the If");
    EXPECT(cg_graph_index_build(then_g, &ix, &sub, &err) == CG_OK, "branch: %s", err.msg);
    if (err.status == CG_OK) {
        size_t tv = cg_graph_index_value(&sub, "t"), id;
        int up;
        EXPECT(tv != CG_IX_NONE && (sub.value_flags[tv] & CG_IX_OUTER), "t is outer there");
        EXPECT(cg_graph_index_resolve(&sub, "t", &id, &up) == &ix && up == 1 && id == t,
               "t resolves one scope out");
        EXPECT(cg_graph_index_resolve(&sub, "r_then", &id, &up) == &sub && up == 0,
               "a local name resolves locally");
        cg_graph_index_free(&sub);
    }
    cg_graph_index_free(&ix);
done:
    cg_model_free(m);
}

static void test_index_errors(void)
{
    cg_model *m = test_model_new(13);
    cg_graph *g = m->graph = test_graph_new(m, "cyc", 4);
    test_node(m, g, "Relu", "p", "b", "a");
    test_node(m, g, "Relu", "q", "a", "b");
    cg_graph_index ix;
    cg_error err;
    cg_error_clear(&err);
    EXPECT(cg_graph_index_build(g, NULL, &ix, &err) == CG_INVALID &&
               strstr(err.msg, "cycle") && strstr(err.msg, "'cyc'"),
           "cycle: %s", err.msg);
    EXPECT(ix.value_name == NULL, "a failed build leaves the index empty");
    cg_graph *d = test_graph_new(m, "dup", 4);
    test_node(m, d, "Relu", "one", "x", "a");
    test_node(m, d, "Relu", "two", "x", "a");
    cg_error_clear(&err);
    EXPECT(cg_graph_index_build(d, NULL, &ix, &err) == CG_INVALID && strstr(err.msg, "'one'") &&
               strstr(err.msg, "'two'"),
           "two producers: %s", err.msg);
    cg_graph *s = test_graph_new(m, "self", 4);
    test_node(m, s, "Relu", "loop", "a", "a");
    cg_error_clear(&err);
    EXPECT(cg_graph_index_build(s, NULL, &ix, &err) == CG_INVALID && strstr(err.msg, "own"),
           "self read: %s", err.msg);
    cg_model_free(m);
}

static void test_queries(void)
{
    EXPECT(cg_domain_is_default(NULL) && cg_domain_is_default("") &&
               cg_domain_is_default("ai.onnx") && !cg_domain_is_default("com.microsoft") &&
               !cg_domain_is_default("ai.onnx.ml"),
           "default domain spellings");
    cg_model *m = test_model_new(13);
    test_model_import(m, "com.x", 2);
    EXPECT(cg_model_opset(m, "") == 13 && cg_model_opset(m, "ai.onnx") == 13 &&
               cg_model_opset(m, "com.x") == 2 && cg_model_opset(m, "com.y") == -1,
           "opset lookup");
    cg_graph *g = m->graph = test_graph_new(m, "g", 2);
    cg_node *n = test_node(m, g, "Conv", NULL, "x", "y");
    int64_t pads[4] = {1, 1, 2, 2};
    test_node_add_attr(n, attr_int("group", 3));
    test_node_add_attr(n, attr_ints("pads", pads, 4));
    test_node_add_attr(n, attr_float("alpha", 0.5f));
    size_t count;
    EXPECT(cg_node_attr(n, "pads") == &n->attrs[1] && cg_node_attr(n, "dilations") == NULL,
           "attribute by name");
    EXPECT(cg_node_attr_int(n, "group", 1) == 3 && cg_node_attr_int(n, "axis", -1) == -1,
           "int attribute and default");
    EXPECT(cg_node_attr_int(n, "alpha", 7) == 7, "a FLOAT is not an INT");
    EXPECT(cg_node_attr_float(n, "group", 0) == 3.0f, "an INT reads as FLOAT");
    EXPECT(cg_node_attr_ints(n, "pads", &count) == pads && count == 4, "ints");
    EXPECT(cg_node_attr_ints(n, "group", &count) == NULL && count == 0, "not ints");
    char buf[32];
    EXPECT(strcmp(cg_graph_node_name(g, 0, buf, sizeof buf), "#0") == 0, "unnamed node");
    cg_model_free(m);
}

/* Every dtype's typed field, written here from onnx.proto's comments
 * (python3-onnx 1.12.0, onnx/onnx.proto, TensorProto fields 4-11: float
 * and complex64 in float_data; int32, int16, int8, uint16, uint8, bool and
 * float16 in int32_data; string_data; int64_data; double and complex128 in
 * double_data; uint32 and uint64 in uint64_data). bfloat16, the float8s
 * and the 4-bit types are int32_data in later revisions of the file. */
static void test_proto_fields(void)
{
    static const struct {
        cg_dtype dt;
        const char *field;
    } want[] = {
        {CG_DTYPE_FLOAT, "float_data"},        {CG_DTYPE_COMPLEX64, "float_data"},
        {CG_DTYPE_INT32, "int32_data"},        {CG_DTYPE_INT16, "int32_data"},
        {CG_DTYPE_INT8, "int32_data"},         {CG_DTYPE_UINT16, "int32_data"},
        {CG_DTYPE_UINT8, "int32_data"},        {CG_DTYPE_BOOL, "int32_data"},
        {CG_DTYPE_FLOAT16, "int32_data"},      {CG_DTYPE_BFLOAT16, "int32_data"},
        {CG_DTYPE_FLOAT8E4M3FN, "int32_data"}, {CG_DTYPE_FLOAT8E4M3FNUZ, "int32_data"},
        {CG_DTYPE_FLOAT8E5M2, "int32_data"},   {CG_DTYPE_FLOAT8E5M2FNUZ, "int32_data"},
        {CG_DTYPE_UINT4, "int32_data"},        {CG_DTYPE_INT4, "int32_data"},
        {CG_DTYPE_STRING, "string_data"},      {CG_DTYPE_INT64, "int64_data"},
        {CG_DTYPE_DOUBLE, "double_data"},      {CG_DTYPE_COMPLEX128, "double_data"},
        {CG_DTYPE_UINT32, "uint64_data"},      {CG_DTYPE_UINT64, "uint64_data"},
    };
    EXPECT(sizeof want / sizeof want[0] == CG_DTYPE_COUNT - 1, "every dtype listed");
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        const char *got = cg_proto_field_name(cg_proto_field_of(want[i].dt));
        EXPECT(got && strcmp(got, want[i].field) == 0, "%s: %s, expected %s",
               cg_dtype_name(want[i].dt), got ? got : "(none)", want[i].field);
    }
    EXPECT(cg_proto_field_of(CG_DTYPE_UNDEFINED) == CG_PROTO_FIELD_NONE &&
               cg_proto_field_of(CG_DTYPE_COUNT) == CG_PROTO_FIELD_NONE &&
               cg_proto_field_of(-1) == CG_PROTO_FIELD_NONE &&
               cg_proto_field_name(CG_PROTO_FIELD_NONE) == NULL,
           "no field for UNDEFINED or a value outside the list");
    /* how many values: two per complex element, two 4-bit elements per value */
    EXPECT(cg_proto_field_values(CG_DTYPE_FLOAT, 5) == 5 &&
               cg_proto_field_values(CG_DTYPE_COMPLEX64, 5) == 10 &&
               cg_proto_field_values(CG_DTYPE_COMPLEX128, INT64_MAX) == (uint64_t)INT64_MAX * 2 &&
               cg_proto_field_values(CG_DTYPE_INT4, 5) == 3 &&
               cg_proto_field_values(CG_DTYPE_UINT4, 4) == 2 &&
               cg_proto_field_values(CG_DTYPE_STRING, 0) == 0,
           "value counts");
    /* the count read from the field the table names */
    cg_tensor_proto t;
    memset(&t, 0, sizeof t);
    t.int64_data.count = 3;
    t.string_count = 2;
    EXPECT(cg_proto_field_count(&t, cg_proto_field_of(CG_DTYPE_INT64)) == 3 &&
               cg_proto_field_count(&t, cg_proto_field_of(CG_DTYPE_STRING)) == 2 &&
               cg_proto_field_count(&t, cg_proto_field_of(CG_DTYPE_FLOAT)) == 0 &&
               cg_proto_field_count(&t, CG_PROTO_FIELD_NONE) == 0,
           "field counts");
}

int main(void)
{
    test_strmap();
    test_index_basics();
    test_index_subgraph();
    test_index_errors();
    test_queries();
    test_proto_fields();
    return test_done("test_ir");
}
