/* Placement of .tflite operators (cg_tflite_op_model, the tflite:* rules of
 * the litert-gpu profile) against the real LiteRT GPU delegate: for every
 * fixture of tests/data/tflite, convgate's litert-gpu prediction (ops on the
 * GPU, rejected ops) must equal the residency LiteRT.js's WebGPU delegate
 * logged when the fixture was made (expectations.json, kept true against
 * the real delegate by script.litert_oracle where Chromium is installed),
 * except the differences listed below, each with its reason (docs/tflite.md
 * "Placement on the real ops" has the same table). A listed difference
 * that disappears fails too, so the table stays true. */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "convgate/assign.h"
#include "convgate/tflite.h"
#include "testlib.h"

#define FIXTURES CG_SOURCE_DIR "/tests/data/tflite"

/* Where convgate's prediction and the WebGPU delegate differ, and why. */
typedef struct known_difference {
    const char *fixture;
    size_t predicted_gpu_ops;
    const char *predicted_rejected; /* ops convgate refuses, ", "-joined in node order */
    const char *reason;
} known_difference;

static const known_difference differences[] = {
    {"models/kws_if", 6, "GREATER, IF",
     "GREATER feeds IF: model_builder.cc takes a comparison op only when its single consumer is "
     "CAST/SELECT/SELECT_V2 producing float; LiteRT.js's WebGPU delegate (ML Drift) runs it"},
    {"ops/if_else_branch", 1, "GREATER, IF", "as models/kws_if"},
    {"reader/if_then_else", 1, "GREATER, IF", "as models/kws_if"},
    {"ops/round", 0, "ROUND",
     "model_builder.cc (f67457790c9c) has no ROUND parser; the WebGPU delegate runs ROUND"},
    {"ops/gather", 1, "",
     "the delegate accepts GATHER with 1-D indices, then fails to build its kernel ('Unable to "
     "parse bc coord for BATCH axis') and LiteRT.js fails the model: kernel failures are not "
     "predicted"},
    {"quant/dequantize_int8_weights", 2, "",
     "accepted, then failed to build (a shape mismatch between DEQUANTIZE's output and "
     "FULLY_CONNECTED's weights): not predicted"},
    {"reader/flex_and_custom", 0, "FlexAddV2, ConvgateTestOp",
     "LiteRT.js refuses the Flex op before the delegate logs anything (no rejected list); the "
     "op counts agree"},
};

static const known_difference *find_difference(const char *fixture)
{
    for (size_t i = 0; i < sizeof differences / sizeof differences[0]; i++)
        if (strcmp(differences[i].fixture, fixture) == 0)
            return &differences[i];
    return NULL;
}

typedef struct prediction {
    size_t ops, gpu_ops;
    char rejected[512]; /* op types, ", "-joined in node order */
    char reasons[2048];
} prediction;

static bool predict(const char *path, const cg_target *gpu, prediction *out, cg_error *err)
{
    cg_tflite_model *m = NULL;
    cg_model *model = NULL;
    cg_type_env *types = NULL;
    cg_placement *p = NULL;
    bool ok = false;
    memset(out, 0, sizeof *out);
    if (cg_tflite_load(path, NULL, &m, err) != CG_OK || cg_tflite_op_model(m, &model, err) != CG_OK ||
        cg_type_env_build_declared(model, &types, err) != CG_OK ||
        cg_placement_build(model, types, &gpu, 1, &p, err) != CG_OK)
        goto done;
    const cg_assignment *a = p->main;
    out->ops = a->graph->node_count;
    out->gpu_ops = cg_assign_count_owned(a, 0);
    size_t used = 0, rused = 0;
    for (size_t i = 0; i < a->unsupported_count; i++) {
        const cg_node *n = &a->graph->nodes[a->unsupported[i].node];
        used += (size_t)snprintf(out->rejected + used, sizeof out->rejected - used, "%s%s",
                                 i ? ", " : "", n->op_type);
        rused += (size_t)snprintf(out->reasons + rused, sizeof out->reasons - rused, "%s; ",
                                  a->unsupported[i].reason);
        if (used >= sizeof out->rejected || rused >= sizeof out->reasons)
            break;
    }
    ok = true;
done:
    cg_placement_free(p);
    cg_type_env_free(types);
    cg_model_free(model);
    cg_tflite_free(m);
    return ok;
}

/* The recorded rejected ops, ", "-joined in log order. */
static void recorded_rejected(const json_t *web, char *buf, size_t len)
{
    size_t used = 0, i;
    json_t *r;
    buf[0] = '\0';
    json_array_foreach(json_object_get(web, "rejected"), i, r) {
        const char *op = json_string_value(json_object_get(r, "op"));
        used += (size_t)snprintf(buf + used, len - used, "%s%s", i ? ", " : "", op ? op : "?");
        if (used >= len)
            return;
    }
}

static void test_against_webgpu(const cg_target *gpu)
{
    json_error_t jerr;
    json_t *root = json_load_file(FIXTURES "/expectations.json", 0, &jerr);
    EXPECT(root, "expectations.json: %s", jerr.text);
    if (!root)
        return;
    const char *name;
    json_t *fx;
    size_t compared = 0, equal = 0, documented = 0;
    bool seen[sizeof differences / sizeof differences[0]] = {false};
    json_object_foreach(json_object_get(root, "fixtures"), name, fx) {
        const json_t *web = json_object_get(fx, "litert_webgpu");
        const char *file = json_string_value(json_object_get(fx, "file"));
        EXPECT(web && file, "%s: no recorded WebGPU residency", name);
        if (!web || !file)
            continue;
        char path[1024], rejected[512];
        snprintf(path, sizeof path, FIXTURES "/%s", file);
        prediction p;
        cg_error err;
        cg_error_clear(&err);
        EXPECT(predict(path, gpu, &p, &err), "%s: %s", name, err.msg);
        size_t rec_gpu = (size_t)json_integer_value(json_object_get(web, "gpu_ops"));
        size_t rec_cpu = (size_t)json_integer_value(json_object_get(web, "cpu_ops"));
        recorded_rejected(web, rejected, sizeof rejected);
        compared++;
        EXPECT(p.ops == rec_gpu + rec_cpu, "%s: %zu ops, the delegate counted %zu + %zu", name,
               p.ops, rec_gpu, rec_cpu);
        const known_difference *d = find_difference(name);
        bool same = p.gpu_ops == rec_gpu && strcmp(p.rejected, rejected) == 0;
        if (!d) {
            EXPECT(same,
                   "%s: predicted %zu/%zu ops on the GPU, rejected {%s} (%s); the WebGPU "
                   "delegate: %zu on the GPU, rejected {%s}",
                   name, p.gpu_ops, p.ops, p.rejected, p.reasons, rec_gpu, rejected);
            equal += same;
            continue;
        }
        seen[d - differences] = true;
        documented++;
        EXPECT(!same, "%s: listed as a difference but now agrees with the delegate: drop it "
               "from the table (and docs/tflite.md)", name);
        EXPECT(p.gpu_ops == d->predicted_gpu_ops && strcmp(p.rejected, d->predicted_rejected) == 0,
               "%s: predicted %zu ops on the GPU, rejected {%s}; the table says %zu, {%s} (%s)",
               name, p.gpu_ops, p.rejected, d->predicted_gpu_ops, d->predicted_rejected,
               d->reason);
    }
    for (size_t i = 0; i < sizeof differences / sizeof differences[0]; i++)
        EXPECT(seen[i], "difference for %s names no fixture", differences[i].fixture);
    EXPECT(compared >= 87, "only %zu fixtures compared", compared);
    printf("litert-gpu residency vs the WebGPU delegate: %zu fixtures, %zu equal, %zu documented "
           "differences\n", compared, equal, documented);
    json_decref(root);
}

/* Single rules, with the delegate's own reasons in the refusals. */
static void expect_reason(const cg_target *gpu, const char *fixture, const char *needle)
{
    char path[512];
    snprintf(path, sizeof path, FIXTURES "/%s.tflite", fixture);
    prediction p;
    cg_error err;
    cg_error_clear(&err);
    EXPECT(predict(path, gpu, &p, &err), "%s: %s", fixture, err.msg);
    EXPECT(strstr(p.reasons, needle), "%s: reason '%s' lacks '%s'", fixture, p.reasons, needle);
}

static void test_rules(const cg_target *gpu)
{
    expect_reason(gpu, "ops/softmax_beta", "beta");
    expect_reason(gpu, "ops/softmax_beta", "Softmax.beta != 1 is not supported.");
    expect_reason(gpu, "ops/strided_slice_masks", "shrink_axis_mask");
    expect_reason(gpu, "ops/gather_axis1", "Only support 1D indices");
    expect_reason(gpu, "ops/gather_nd", "tflite:GATHER_ND not in litert-gpu's supported-op list");
    expect_reason(gpu, "ops/log_softmax", "LOG_SOFTMAX");
}

/* An op version above the parser's maximum is refused, naming both. */
static void test_version(const cg_target *gpu)
{
    cg_tflite_model *m = NULL;
    cg_model *model = NULL;
    cg_type_env *types = NULL;
    cg_placement *p = NULL;
    cg_error err;
    cg_error_clear(&err);
    EXPECT(cg_tflite_load(FIXTURES "/ops/conv_2d_same_relu.tflite", NULL, &m, &err) == CG_OK,
           "%s", err.msg);
    if (!m)
        return;
    for (size_t i = 0; i < m->opcode_count; i++)
        if (m->opcodes[i].builtin == CG_TFLITE_OP_CONV_2D)
            m->opcodes[i].version = 7; /* Conv2DOperationParser takes <= 6 */
    EXPECT(cg_tflite_op_model(m, &model, &err) == CG_OK, "%s", err.msg);
    EXPECT(model && cg_type_env_build_declared(model, &types, &err) == CG_OK, "%s", err.msg);
    EXPECT(model && cg_placement_build(model, types, &gpu, 1, &p, &err) == CG_OK, "%s", err.msg);
    if (p) {
        EXPECT(p->main->unsupported_count == 1 && strstr(p->main->unsupported[0].reason, "version") &&
                   strstr(p->main->unsupported[0].reason, "7") &&
                   strstr(p->main->unsupported[0].reason, "CheckMaxSupportedOpVersion(registration, 6)"),
               "%s", p->main->unsupported_count ? p->main->unsupported[0].reason : "(accepted)");
    }
    cg_placement_free(p);
    cg_type_env_free(types);
    cg_model_free(model);
    cg_tflite_free(m);
}

/* The operator graph itself: nodes, attributes, constants, names. */
static void test_op_model(void)
{
    cg_tflite_model *m = NULL;
    cg_model *model = NULL;
    cg_type_env *types = NULL;
    cg_error err;
    cg_error_clear(&err);
    EXPECT(cg_tflite_load(FIXTURES "/models/cnn.tflite", NULL, &m, &err) == CG_OK, "%s", err.msg);
    if (!m)
        return;
    EXPECT(cg_tflite_op_model(m, &model, &err) == CG_OK, "%s", err.msg);
    if (model) {
        const cg_graph *g = model->graph;
        EXPECT(g->node_count == m->subgraphs[0].operator_count, "%zu nodes", g->node_count);
        const cg_node *n = &g->nodes[0];
        EXPECT(strcmp(n->op_type, "CONV_2D") == 0 && strcmp(n->domain, "tflite") == 0 &&
                   strcmp(n->name, "#0") == 0,
               "%s:%s '%s'", n->domain, n->op_type, n->name);
        bool version = false, padding = false, act = false;
        for (size_t a = 0; a < n->attr_count; a++) {
            version |= strcmp(n->attrs[a].name, "version") == 0 && n->attrs[a].i >= 1;
            padding |= strcmp(n->attrs[a].name, "padding") == 0 && n->attrs[a].s.len == 4 &&
                       memcmp(n->attrs[a].s.data, "SAME", 4) == 0;
            act |= strcmp(n->attrs[a].name, "fused_activation_function") == 0 &&
                   n->attrs[a].s.len == 4 && memcmp(n->attrs[a].s.data, "RELU", 4) == 0;
        }
        EXPECT(version && padding && act, "CONV_2D attributes: version %d padding %d act %d",
               version, padding, act);
        /* the weights are constants pointing into the file */
        EXPECT(cg_type_env_build_declared(model, &types, &err) == CG_OK, "%s", err.msg);
        const cg_value_type *w = cg_type_env_get(types, n->inputs[1]);
        const cg_value_type *x = cg_type_env_get(types, n->inputs[0]);
        EXPECT(w && w->is_const && w->known && w->rank == 4, "weights '%s'", n->inputs[1]);
        EXPECT(x && !x->is_const && x->is_graph_input && x->known && x->rank == 4 &&
                   x->dims[3] == 3,
               "input '%s'", n->inputs[0]);
        const cg_value_type *y = cg_type_env_get(types, n->outputs[0]);
        EXPECT(y && y->known && !y->is_const, "output '%s'", n->outputs[0]);
        bool in_file = false;
        for (size_t i = 0; i < g->initializer_count; i++)
            in_file |= g->initializers[i].raw_data.data >= m->bytes &&
                       g->initializers[i].raw_data.data < m->bytes + m->file_size;
        EXPECT(g->initializer_count > 0 && in_file, "initializers not in the mapping");
    }
    cg_type_env_free(types);
    cg_model_free(model);
    cg_tflite_free(m);
}

int main(void)
{
    cg_target_registry *reg = NULL;
    cg_error err;
    cg_error_clear(&err);
    EXPECT(cg_target_registry_load(CG_SOURCE_DIR "/profiles", &reg, &err) == CG_OK, "%s", err.msg);
    const cg_target *gpu = reg ? cg_target_registry_find(reg, "litert-gpu", &err) : NULL;
    EXPECT(gpu, "%s", err.msg);
    test_op_model();
    if (gpu) {
        test_against_webgpu(gpu);
        test_rules(gpu);
        test_version(gpu);
    }
    cg_target_registry_free(reg);
    return test_done("tflite_place");
}
