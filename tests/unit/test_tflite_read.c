/* .tflite reader: the fixtures of tests/data/tflite/reader decode field by
 * field, payloads stay in the mapping, and hostile bytes (every single-byte
 * mutation and truncation of the fixtures, plus hand-made cases) fail with
 * a message instead of crashing. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "convgate/tflite.h"
#include "testlib.h"


#define FIXTURES CG_SOURCE_DIR "/tests/data/tflite/reader/"

static cg_tflite_model *load(const char *name)
{
    char path[512];
    snprintf(path, sizeof path, FIXTURES "%s.tflite", name);
    cg_tflite_model *m = NULL;
    cg_error err;
    cg_error_clear(&err);
    cg_status st = cg_tflite_load(path, NULL, &m, &err);
    EXPECT(st == CG_OK && m, "%s: %s", path, err.msg);
    return m;
}

static bool inside(const cg_tflite_model *m, const void *p, size_t n)
{
    const uint8_t *b = p;
    return b >= m->bytes && b + n <= m->bytes + m->file_size;
}

static float f32_at(const uint8_t *p, size_t i)
{
    float f;
    memcpy(&f, p + 4 * i, sizeof f);
    return f;
}

static void test_add_signature(void)
{
    cg_tflite_model *m = load("add_signature");
    if (!m)
        return;
    EXPECT(m->version == 3, "version %u", m->version);
    EXPECT(m->description && strstr(m->description, "convgate"), "description");
    EXPECT(m->opcode_count == 1 && m->opcodes[0].builtin == CG_TFLITE_OP_ADD &&
               m->opcodes[0].version == 1 && !m->opcodes[0].custom_code,
           "opcodes");
    EXPECT(m->subgraph_count == 1, "subgraphs %zu", m->subgraph_count);
    const cg_tflite_subgraph *g = &m->subgraphs[0];
    EXPECT(g->name && strcmp(g->name, "main") == 0, "subgraph name");
    EXPECT(g->tensor_count == 3 && g->operator_count == 1, "counts %zu %zu", g->tensor_count,
           g->operator_count);
    const cg_tflite_tensor *x = &g->tensors[0], *w = &g->tensors[1];
    EXPECT(strcmp(x->name, "x") == 0 && x->rank == 2 && x->shape[0] == 1 && x->shape[1] == 4,
           "x shape");
    EXPECT(x->has_shape_signature && x->signature_rank == 2 && x->shape_signature[0] == -1 &&
               x->shape_signature[1] == 4,
           "x shape_signature");
    EXPECT(x->type == CG_TFLITE_TYPE_FLOAT32 && x->buffer == 0 && !x->quant, "x type/buffer");
    EXPECT(!w->has_shape_signature, "w has no signature");
    cg_bytes data = cg_tflite_tensor_data(m, w);
    EXPECT(data.len == 16 && inside(m, data.data, data.len), "w data %zu bytes", data.len);
    for (size_t i = 0; data.len == 16 && i < 4; i++)
        EXPECT(f32_at(data.data, i) == (float)i, "w[%zu] = %g", i, f32_at(data.data, i));
    const cg_tflite_operator *op = &g->operators[0];
    EXPECT(op->input_count == 2 && op->inputs[0] == 0 && op->inputs[1] == 1 &&
               op->output_count == 1 && op->outputs[0] == 2,
           "op io");
    EXPECT(op->options.type == CG_TFLITE_OPT_AddOptions && op->options.decoded &&
               op->options.u.activation.fused_activation_function == CG_TFLITE_ACT_RELU &&
               op->options.u.activation.pot_scale_int16,
           "AddOptions");
    EXPECT(m->signature_count == 1 && strcmp(m->signatures[0].key, "serving_default") == 0 &&
               m->signatures[0].input_count == 1 && m->signatures[0].inputs[0].tensor_index == 0 &&
               strcmp(m->signatures[0].outputs[0].name, "y") == 0,
           "signature");
    EXPECT(m->metadata_count == 1 && strcmp(m->metadata[0].name, "min_runtime_version") == 0,
           "metadata");
    if (m->metadata_count == 1) {
        cg_bytes md = m->buffers[m->metadata[0].buffer].data;
        EXPECT(md.len == 16 && memcmp(md.data, "1.5.0", 6) == 0, "metadata value");
    }
    char buf[32];
    EXPECT(strcmp(cg_tflite_op_name(&m->opcodes[0], buf, sizeof buf), "ADD") == 0, "op name");
    cg_tflite_free(m);
}

static void test_offset_buffers(void)
{
    cg_tflite_model *m = load("offset_buffers");
    if (!m)
        return;
    const cg_tflite_subgraph *g = &m->subgraphs[0];
    EXPECT(g->tensor_count == 4, "tensors");
    for (int i = 1; i <= 2 && g->tensor_count == 4; i++) {
        const cg_tflite_tensor *t = &g->tensors[i];
        const cg_tflite_buffer *b = &m->buffers[t->buffer];
        EXPECT(b->offset > 1, "tensor %d: buffer offset %llu", i, (unsigned long long)b->offset);
        /* zero-copy: the data is the file's bytes at Buffer.offset */
        EXPECT(b->data.data == m->bytes + b->offset, "tensor %d data not in place", i);
        EXPECT(b->data.len == (i == 1 ? 96u : 12u), "tensor %d size %zu", i, b->data.len);
        EXPECT(inside(m, b->data.data, b->data.len), "tensor %d outside the file", i);
    }
    EXPECT(g->operators[0].options.type == CG_TFLITE_OPT_FullyConnectedOptions &&
               g->operators[0].options.decoded,
           "FC options");
    cg_tflite_free(m);
}

static void test_conv_int8(void)
{
    cg_tflite_model *m = load("conv_int8_per_channel");
    if (!m)
        return;
    const cg_tflite_subgraph *g = &m->subgraphs[0];
    EXPECT(g->tensor_count == 6 && g->operator_count == 3, "counts");
    const cg_tflite_tensor *xq = &g->tensors[1], *w = &g->tensors[2];
    EXPECT(xq->type == CG_TFLITE_TYPE_INT8 && xq->quant && xq->quant->scale_count == 1 &&
               fabsf(xq->quant->scale[0] - 0.02f) < 1e-9f && xq->quant->zero_point_count == 1 &&
               xq->quant->zero_point[0] == -3,
           "x_int8 quantization");
    EXPECT(w->quant && w->quant->scale_count == 4 && w->quant->zero_point_count == 4 &&
               w->quant->quantized_dimension == 0 && fabsf(w->quant->scale[3] - 0.015f) < 1e-9f,
           "per-axis weight scales");
    const cg_tflite_operator *conv = &g->operators[1];
    const cg_tflite_opcode *oc = cg_tflite_op_code(m, conv);
    EXPECT(oc->builtin == CG_TFLITE_OP_CONV_2D && oc->version == 3 &&
               oc->deprecated_builtin_code == 3 && oc->builtin_code == 3,
           "conv opcode");
    const cg_tflite_conv2d_options *c = &conv->options.u.conv2d;
    EXPECT(conv->options.type == CG_TFLITE_OPT_Conv2DOptions && c->padding == 0 &&
               c->stride_w == 1 && c->stride_h == 1 && c->dilation_w_factor == 1 &&
               c->fused_activation_function == CG_TFLITE_ACT_RELU,
           "Conv2DOptions");
    EXPECT(strcmp(cg_tflite_type_name(w->type), "int8") == 0 &&
               cg_tflite_type_dtype(w->type) == CG_DTYPE_INT8 && cg_tflite_type_bits(w->type) == 8,
           "type helpers");
    cg_tflite_free(m);
}

static void test_if(void)
{
    cg_tflite_model *m = load("if_then_else");
    if (!m)
        return;
    EXPECT(m->subgraph_count == 3, "subgraphs");
    const cg_tflite_operator *op = &m->subgraphs[0].operators[2];
    EXPECT(cg_tflite_op_code(m, op)->builtin == CG_TFLITE_OP_IF &&
               op->options.type == CG_TFLITE_OPT_IfOptions &&
               op->options.u.subgraphs.first == 1 && op->options.u.subgraphs.second == 2,
           "IfOptions");
    EXPECT(strcmp(m->subgraphs[2].name, "else") == 0, "else name");
    const cg_tflite_tensor *score = &m->subgraphs[0].tensors[2];
    EXPECT(score->rank == 0 && strcmp(score->name, "score") == 0, "scalar tensor");
    cg_tflite_free(m);
}

static void test_flex(void)
{
    cg_tflite_model *m = load("flex_and_custom");
    if (!m)
        return;
    EXPECT(m->opcode_count == 2, "opcodes");
    EXPECT(m->opcodes[0].builtin == CG_TFLITE_OP_CUSTOM && cg_tflite_op_is_flex(&m->opcodes[0]),
           "Flex op");
    EXPECT(!cg_tflite_op_is_flex(&m->opcodes[1]) &&
               strcmp(m->opcodes[1].custom_code, "ConvgateTestOp") == 0,
           "custom op");
    const cg_tflite_operator *op = &m->subgraphs[0].operators[1];
    EXPECT(op->custom_options.len == 4 && memcmp(op->custom_options.data, "\1\2\3\4", 4) == 0 &&
               inside(m, op->custom_options.data, 4),
           "custom options in place");
    cg_tflite_free(m);
}

static uint8_t *slurp(const char *name, size_t *size)
{
    char path[512];
    snprintf(path, sizeof path, FIXTURES "%s.tflite", name);
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    uint8_t *b = malloc((size_t)n);
    if (b && fread(b, 1, (size_t)n, f) != (size_t)n) {
        free(b);
        b = NULL;
    }
    fclose(f);
    *size = (size_t)n;
    return b;
}

/* Loads bytes; on failure the message must name the label. Returns the status. */
static cg_status try_bytes(const uint8_t *b, size_t n, const char *what)
{
    cg_tflite_model *m = NULL;
    cg_error err;
    cg_error_clear(&err);
    cg_status st = cg_tflite_load_bytes(b, n, "mutant.tflite", NULL, &m, &err);
    if (st == CG_OK) {
        /* walking the model must be safe too */
        for (size_t s = 0; s < m->subgraph_count; s++)
            for (size_t i = 0; i < m->subgraphs[s].tensor_count; i++)
                (void)cg_tflite_tensor_data(m, &m->subgraphs[s].tensors[i]);
        cg_tflite_free(m);
    } else {
        EXPECT(m == NULL && strncmp(err.msg, "mutant.tflite: ", 15) == 0,
               "%s: message '%s'", what, err.msg);
    }
    return st;
}

static void test_mutations(void)
{
    static const char *const names[] = {"add_signature", "offset_buffers",
                                        "conv_int8_per_channel", "if_then_else",
                                        "flex_and_custom"};
    size_t loads = 0, refused = 0;
    for (size_t k = 0; k < sizeof names / sizeof names[0]; k++) {
        size_t n;
        uint8_t *orig = slurp(names[k], &n);
        EXPECT(orig, "cannot read %s", names[k]);
        if (!orig)
            continue;
        uint8_t *b = malloc(n);
        for (size_t i = 0; b && i < n; i++) {
            static const int deltas[] = {-1, 0x00, 0xff, 0x01, 0x80, 0x7f};
            for (size_t d = 0; d < sizeof deltas / sizeof deltas[0]; d++) {
                memcpy(b, orig, n);
                b[i] = deltas[d] < 0 ? (uint8_t)(orig[i] + 1)
                       : d >= 3      ? (uint8_t)(orig[i] ^ deltas[d])
                                     : (uint8_t)deltas[d];
                char what[96];
                snprintf(what, sizeof what, "%s byte %zu", names[k], i);
                refused += try_bytes(b, n, what) != CG_OK;
                loads++;
            }
        }
        /* every truncation */
        for (size_t len = 0; b && len < n; len++) {
            char what[96];
            snprintf(what, sizeof what, "%s cut to %zu", names[k], len);
            refused += try_bytes(orig, len, what) != CG_OK;
            loads++;
        }
        EXPECT(try_bytes(orig, n / 2, "half") != CG_OK, "%s cut in half loaded", names[k]);
        free(b);
        free(orig);
    }
    EXPECT(refused > loads / 4, "only %zu of %zu mutants refused", refused, loads);
    printf("mutations: %zu loads, %zu refused with a message, none crashed\n", loads, refused);
}

static void expect_refused(const uint8_t *b, size_t n, const char *needle, const char *what)
{
    cg_tflite_model *m = NULL;
    cg_error err;
    cg_error_clear(&err);
    cg_status st = cg_tflite_load_bytes(b, n, "crafted", NULL, &m, &err);
    EXPECT(st != CG_OK && strstr(err.msg, needle), "%s: status %s, message '%s' lacks '%s'", what,
           cg_status_name(st), err.msg, needle);
    cg_tflite_free(m);
}

static void put32(uint8_t *p, uint32_t v)
{
    p[0] = (uint8_t)v;
    p[1] = (uint8_t)(v >> 8);
    p[2] = (uint8_t)(v >> 16);
    p[3] = (uint8_t)(v >> 24);
}

static void test_crafted(void)
{
    uint8_t b[64];
    memset(b, 0, sizeof b);
    expect_refused(b, 4, "too small", "4 bytes");
    memcpy(b + 4, "TFL2", 4);
    expect_refused(b, sizeof b, "TFL3", "identifier");
    memcpy(b + 4, "TFL3", 4);
    put32(b, 0);
    expect_refused(b, sizeof b, "point at itself", "root offset 0");
    put32(b, 1000);
    expect_refused(b, sizeof b, "past the end", "root offset out of range");
    put32(b, 10);
    expect_refused(b, sizeof b, "not 4-byte aligned", "misaligned root");
    put32(b, 16);
    put32(b + 16, 0); /* soffset 0: the table is its own vtable, of size 0 */
    expect_refused(b, sizeof b, "its own vtable", "self vtable");
    put32(b + 16, 0xfffffff8u); /* vtable at 24: size 2 */
    b[24] = 2;
    expect_refused(b, sizeof b, "has size 2", "short vtable");
    b[24] = 6;
    b[26] = 8; /* inline size 8 */
    b[28] = 40; /* field 0 (version) at byte 40 > inline size */
    expect_refused(b, sizeof b, "outside the table", "field past the table");
    b[28] = 4;
    put32(b + 20, 3); /* version 3, no other fields: an empty model loads */
    cg_tflite_model *m = NULL;
    cg_error err;
    cg_error_clear(&err);
    EXPECT(cg_tflite_load_bytes(b, sizeof b, "crafted", NULL, &m, &err) == CG_OK && m &&
               m->version == 3 && m->subgraph_count == 0,
           "minimal model: %s", err.msg);
    cg_tflite_free(m);

    /* the table limit */
    size_t n;
    uint8_t *add = slurp("add_signature", &n);
    if (add) {
        cg_tflite_load_options opt;
        cg_tflite_load_options_default(&opt);
        opt.max_tables = 5;
        cg_error_clear(&err);
        EXPECT(cg_tflite_load_bytes(add, n, "add", &opt, &m, &err) != CG_OK &&
                   strstr(err.msg, "more than 5 tables"),
               "table limit: %s", err.msg);
        EXPECT(cg_tflite_detect(add, n) && !cg_tflite_detect(add, 7), "detect");
        free(add);
    }
    EXPECT(cg_tflite_detect_path(FIXTURES "add_signature.tflite") &&
               !cg_tflite_detect_path(CG_SOURCE_DIR "/examples/tiny_cnn.onnx"),
           "detect_path");
}

static void test_names(void)
{
    EXPECT(strcmp(cg_tflite_builtin_name(CG_TFLITE_OP_DEPTHWISE_CONV_2D), "DEPTHWISE_CONV_2D") == 0,
           "builtin name");
    EXPECT(CG_TFLITE_OP_BATCH_MATMUL == 126 && CG_TFLITE_OP_STABLEHLO_CASE == 209,
           "enum values from schema.fbs");
    EXPECT(!cg_tflite_builtin_name(-1) && !cg_tflite_builtin_name(CG_TFLITE_OP_COUNT),
           "unknown codes");
    EXPECT(strcmp(cg_tflite_options_name(CG_TFLITE_OPT_IfOptions), "IfOptions") == 0 &&
               CG_TFLITE_OPT_Conv2DOptions == 1,
           "options names");
    cg_tflite_opcode oc = {300, 300, 127, NULL, 1};
    char buf[32];
    EXPECT(strcmp(cg_tflite_op_name(&oc, buf, sizeof buf), "BUILTIN_300") == 0, "unknown op");
    uint64_t e = 0;
    const int32_t shape[] = {2, 3, 4}, bad[] = {2, -1};
    EXPECT(cg_tflite_shape_elements(shape, 3, &e) && e == 24, "elements");
    EXPECT(!cg_tflite_shape_elements(bad, 2, &e), "negative dim");
    EXPECT(strcmp(cg_tflite_type_name(CG_TFLITE_TYPE_RESOURCE), "resource") == 0 &&
               cg_tflite_type_bits(CG_TFLITE_TYPE_INT4) == 4 && !cg_tflite_type_name(99),
           "types");
}

int main(void)
{
    test_add_signature();
    test_offset_buffers();
    test_conv_int8();
    test_if();
    test_flex();
    test_names();
    test_crafted();
    test_mutations();
    return test_done("test_tflite_read");
}
