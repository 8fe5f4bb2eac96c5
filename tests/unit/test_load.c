/* Loader unit tests: wire reader edges, fp16/bf16 conversion, .pb tensors,
 * serialize/parse stability, and malformed bytes that must fail cleanly. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "convgate/check.h"
#include "convgate/model.h"
#include "core/arena.h"
#include "load/load_internal.h"
#include "load/pbwire.h"
#include "testlib.h"

static void test_varint(void)
{
    const uint8_t max[10] = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01};
    pb_reader r = {max, max + 10};
    uint64_t v = 0;
    EXPECT(pb_read_varint(&r, &v) && v == UINT64_MAX, "max varint: %llu", (unsigned long long)v);
    const uint8_t over[10] = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x02};
    r = (pb_reader){over, over + 10};
    EXPECT(!pb_read_varint(&r, &v), "65-bit varint accepted");
    const uint8_t trunc[2] = {0x80, 0x80};
    r = (pb_reader){trunc, trunc + 2};
    EXPECT(!pb_read_varint(&r, &v), "truncated varint accepted");
    /* a LEN field claiming more bytes than remain */
    const uint8_t lenf[3] = {0x0a, 0x05, 0x00};
    r = (pb_reader){lenf, lenf + 3};
    pb_field f;
    const char *why = NULL;
    EXPECT(pb_next(&r, &f, &why) == PB_ERROR && why, "overlong LEN accepted");
}

static void test_fp16(void)
{
    int bad = 0;
    for (uint32_t h = 0; h < 65536; h++) {
        float f = cg_fp16_to_f32((uint16_t)h);
        uint16_t back = cg_f32_to_fp16(f);
        if (isnan(f) ? !isnan(cg_fp16_to_f32(back)) : back != h)
            bad++;
    }
    EXPECT(bad == 0, "%d half values do not round-trip", bad);
    EXPECT(cg_f32_to_fp16(65520.0f) == 0x7c00, "65520 must overflow to inf");
    EXPECT(cg_f32_to_fp16(65504.0f) == 0x7bff, "65504 is the largest half");
    EXPECT(cg_f32_to_fp16(1.0f + 1.0f / 2048) == 0x3c00, "ties round to even");
    EXPECT(cg_bf16_to_f32(cg_f32_to_bf16(3.140625f)) == 3.140625f, "bf16 exact value");
}

static void test_pb_tensor(void)
{
    const char *path =
        "/usr/share/libonnx-testdata/data/node/test_conv_with_strides_padding/test_data_set_0/input_0.pb";
    cg_model *holder = NULL;
    cg_tensor_proto *t = NULL;
    cg_error err;
    cg_error_clear(&err);
    if (cg_tensor_proto_load(path, &holder, &t, &err) != CG_OK) {
        if (err.status == CG_IO) {
            test_skip(".pb test: %s", err.msg);
            return;
        }
        EXPECT(0, "%s", err.msg);
        return;
    }
    EXPECT(t->rank == 4 && t->dims[2] == 7 && t->dims[3] == 5, "dims of input_0");
    EXPECT(t->data_type == CG_DTYPE_FLOAT, "dtype %d", t->data_type);
    int64_t n = 0;
    EXPECT(cg_tensor_proto_numel(t, &n, &err) == CG_OK && n == 35, "numel %lld", (long long)n);
    EXPECT(t->raw_data.len == 35 * 4 || t->float_data.count == 35, "payload size");
    cg_model_free(holder);
}

static void test_malformed(void)
{
    cg_error err;
    cg_model *m = NULL;
    /* graph field (7) with a length past the end */
    const uint8_t trunc[] = {0x08, 0x07, 0x3a, 0x40, 0x0a};
    cg_error_clear(&err);
    EXPECT(cg_model_load_bytes(trunc, sizeof trunc, NULL, &m, &err) == CG_PARSE && !m,
           "truncated graph: %s", err.msg);
    EXPECT(strstr(err.msg, "byte") != NULL, "message names the offset: %s", err.msg);
    /* deep nesting: TypeProto.sequence_type.elem_type ... 150 deep inside a value_info */
    enum { DEPTH = 150 };
    uint8_t *buf = malloc(DEPTH * 8 + 64);
    size_t len = 0;
    /* build innermost-out: each level is field 4 (sequence_type) -> field 1 (elem_type) */
    uint8_t inner[4096 * 4];
    size_t ilen = 0;
    for (int i = 0; i < DEPTH; i++) {
        /* wrap current bytes: Sequence{ elem_type(1): TypeProto{current} } then TypeProto{ seq(4): ... } */
        uint8_t tmp[sizeof inner];
        size_t t = 0;
        tmp[t++] = 0x0a; /* Sequence.elem_type, LEN */
        tmp[t++] = (uint8_t)ilen; /* lengths stay < 128 only for small depth: use varint */
        if (ilen >= 128) {
            t = 0;
            tmp[t++] = 0x0a;
            size_t v = ilen;
            while (v >= 0x80) {
                tmp[t++] = (uint8_t)(v | 0x80);
                v >>= 7;
            }
            tmp[t++] = (uint8_t)v;
        }
        memcpy(tmp + t, inner, ilen);
        t += ilen;
        /* TypeProto.sequence_type (field 4) */
        size_t t2 = 0;
        inner[t2++] = 0x22;
        size_t v = t;
        while (v >= 0x80) {
            inner[t2++] = (uint8_t)(v | 0x80);
            v >>= 7;
        }
        inner[t2++] = (uint8_t)v;
        memcpy(inner + t2, tmp, t);
        ilen = t2 + t;
    }
    /* ModelProto{graph(7): GraphProto{input(11): ValueInfo{type(2): inner}}} */
    uint8_t vi[sizeof inner + 16], g[sizeof inner + 32];
    size_t vl = 0, gl = 0;
    vi[vl++] = 0x12;
    for (size_t v = ilen; ; v >>= 7) {
        vi[vl++] = (uint8_t)(v >= 0x80 ? (v | 0x80) : v);
        if (v < 0x80)
            break;
    }
    memcpy(vi + vl, inner, ilen);
    vl += ilen;
    g[gl++] = 0x5a;
    for (size_t v = vl; ; v >>= 7) {
        g[gl++] = (uint8_t)(v >= 0x80 ? (v | 0x80) : v);
        if (v < 0x80)
            break;
    }
    memcpy(g + gl, vi, vl);
    gl += vl;
    free(buf);
    buf = malloc(gl + 16);
    buf[len++] = 0x3a;
    for (size_t v = gl; ; v >>= 7) {
        buf[len++] = (uint8_t)(v >= 0x80 ? (v | 0x80) : v);
        if (v < 0x80)
            break;
    }
    memcpy(buf + len, g, gl);
    len += gl;
    cg_error_clear(&err);
    EXPECT(cg_model_load_bytes(buf, len, NULL, &m, &err) == CG_LIMIT, "deep nesting: %s", err.msg);
    EXPECT(strstr(err.msg, "deeper than 100") != NULL, "message: %s", err.msg);
    free(buf);
}

static void test_serialize_stable(void)
{
    const char *path = "/usr/share/libonnx-testdata/data/node/test_if/model.onnx";
    cg_model *m = NULL;
    cg_error err;
    cg_error_clear(&err);
    if (cg_model_load(path, NULL, &m, &err) != CG_OK) {
        EXPECT(err.status == CG_IO, "%s", err.msg);
        return;
    }
    uint8_t *a = NULL, *b = NULL;
    size_t na = 0, nb = 0;
    EXPECT(cg_model_serialize(m, &a, &na, &err) == CG_OK, "%s", err.msg);
    EXPECT(na == m->file_size, "re-serialized %zu bytes vs %zu in the file", na, m->file_size);
    cg_model *m2 = NULL;
    EXPECT(cg_model_load_bytes(a, na, NULL, &m2, &err) == CG_OK, "%s", err.msg);
    if (m2) {
        EXPECT(cg_model_serialize(m2, &b, &nb, &err) == CG_OK, "%s", err.msg);
        EXPECT(na == nb && memcmp(a, b, na) == 0, "second serialization differs");
        EXPECT(m2->graph && m2->graph->node_count == 1 &&
                   strcmp(m2->graph->nodes[0].op_type, "If") == 0,
               "If node lost");
        EXPECT(cg_model_opset(m2, "") == 11, "opset %lld", (long long)cg_model_opset(m2, ""));
    }
    free(a);
    free(b);
    cg_model_free(m2);
    cg_model_free(m);
}

static void test_external_from_bytes(void)
{
    /* TensorProto{dims:4, data_type:1, name:"w", external_data{location:"w.bin"}, data_location:1} */
    const uint8_t t[] = {0x08, 0x04, 0x10, 0x01, 0x42, 0x01, 'w', 0x6a, 0x11, 0x0a, 0x08, 'l',
                         'o',  'c',  'a',  't',  'i',  'o',  'n', 0x12, 0x05, 'w',  '.',  'b',
                         'i',  'n',  0x70, 0x01};
    cg_model *holder = NULL;
    cg_tensor_proto *out = NULL;
    cg_error err;
    cg_error_clear(&err);
    EXPECT(cg_tensor_proto_load_bytes(t, sizeof t, &holder, &out, &err) == CG_SECURITY,
           "external data without a base directory must be refused: %s", err.msg);
    cg_model_free(holder);
}

/* Out-of-order but acyclic graphs are sorted at load (stably) and the
 * checker warns; a real cycle is left as written and stays an error. */
static void test_topological_sort(void)
{
    char path[512];
    cg_model *m = NULL;
    cg_error err;
    cg_error_clear(&err);
    snprintf(path, sizeof path, "%s/tests/data/bad/graph/not_topological.onnx", CG_SOURCE_DIR);
    EXPECT(cg_model_load(path, NULL, &m, &err) == CG_OK, "%s", err.msg);
    if (m) {
        const cg_graph *g = m->graph;
        EXPECT(g->node_count == 2 && strcmp(g->nodes[0].name, "first") == 0 &&
                   strcmp(g->nodes[1].name, "second") == 0 && g->reordered_nodes == 2,
               "sorted order: %s, %s (moved %zu)", g->nodes[0].name, g->nodes[1].name,
               g->reordered_nodes);
        cg_check_report r;
        EXPECT(cg_check_model(m, NULL, &r, &err) == CG_OK && r.error_count == 0 &&
                   r.warning_count == 1 && r.count == 1 &&
                   strcmp(r.problems[0].rule, "topo-order") == 0 &&
                   strstr(r.problems[0].message, "sorted them") != NULL,
               "one topo-order warning, no error");
        cg_check_report_free(&r);
        cg_model_free(m);
    }
    m = NULL;
    snprintf(path, sizeof path, "%s/tests/data/bad/graph/cycle.onnx", CG_SOURCE_DIR);
    EXPECT(cg_model_load(path, NULL, &m, &err) == CG_OK, "%s", err.msg);
    if (m) {
        EXPECT(m->graph->reordered_nodes == 0 && strcmp(m->graph->nodes[0].name, "a") == 0,
               "a cycle is left as written");
        cg_check_report r;
        EXPECT(cg_check_model(m, NULL, &r, NULL) == CG_INVALID && r.error_count >= 1 &&
                   strcmp(r.problems[0].rule, "topo-order") == 0,
               "a cycle is a topo-order error");
        cg_check_report_free(&r);
        cg_model_free(m);
    }

    /* In memory: a node whose If body reads a value produced after it must
     * move after the producer; the independent node keeps its place. */
    cg_model mm;
    memset(&mm, 0, sizeof mm);
    mm.arena = cg_arena_new();
    EXPECT(mm.arena != NULL, "arena");
    if (!mm.arena)
        return;
    static const char *body_in[1] = {"t"}, *body_out[1] = {"u"};
    static cg_node body_node;
    body_node = (cg_node){.inputs = body_in, .input_count = 1, .outputs = body_out,
                          .output_count = 1, .op_type = "Identity", .name = "inner"};
    static cg_value_info body_outputs[1];
    body_outputs[0] = (cg_value_info){.name = "u"};
    static cg_graph body;
    body = (cg_graph){.name = "then", .nodes = &body_node, .node_count = 1,
                      .outputs = body_outputs, .output_count = 1};
    static cg_attr then_attr;
    then_attr = (cg_attr){.name = "then_branch", .type = CG_ATTR_GRAPH, .has_type = true,
                          .g = &body};
    static const char *if_in[1] = {"c"}, *if_out[1] = {"y"}, *p_in[1] = {"x"}, *p_out[1] = {"t"},
                      *z_in[1] = {"x"}, *z_out[1] = {"z"};
    cg_node nodes[3] = {
        {.inputs = if_in, .input_count = 1, .outputs = if_out, .output_count = 1,
         .op_type = "If", .name = "if", .attrs = &then_attr, .attr_count = 1},
        {.inputs = z_in, .input_count = 1, .outputs = z_out, .output_count = 1,
         .op_type = "Relu", .name = "independent"},
        {.inputs = p_in, .input_count = 1, .outputs = p_out, .output_count = 1,
         .op_type = "Relu", .name = "producer"}};
    cg_graph g = {.name = "main", .nodes = nodes, .node_count = 3};
    mm.graph = &g;
    EXPECT(cg_sort_topological(&mm, &err) == CG_OK, "%s", err.msg);
    EXPECT(strcmp(g.nodes[0].name, "independent") == 0 &&
               strcmp(g.nodes[1].name, "producer") == 0 && strcmp(g.nodes[2].name, "if") == 0 &&
               g.reordered_nodes == 3,
           "body reads count as dependencies: %s, %s, %s", g.nodes[0].name, g.nodes[1].name,
           g.nodes[2].name);
    cg_arena_free(mm.arena);
}

int main(void)
{
    test_varint();
    test_fp16();
    test_pb_tensor();
    test_malformed();
    test_serialize_stable();
    test_external_from_bytes();
    test_topological_sort();
    return test_done("test_load");
}
