/*
 * Capability profiles: one tiny model per rule kind (tests/data/profiles,
 * made by tools/make_target_tests.py) in which node 'n' breaks exactly that
 * rule of a test profile, asserting the reason names the rule and the value;
 * passing variants that must be supported; malformed profiles rejected with
 * file and JSON path; the registry; every shipped profile parses; and the
 * type environment (constness, dynamic dims, notes).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "convgate/lower.h"
#include "convgate/partition.h"
#include "convgate/target.h"
#include "target/registry.h"
#include "testlib.h"

#define DATA CG_SOURCE_DIR "/tests/data/profiles"

static cg_target *load_profile(const char *file)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s", DATA, file);
    cg_error err;
    cg_error_clear(&err);
    cg_target *t = NULL;
    if (cg_profile_load(path, &t, &err) != CG_OK) {
        EXPECT(0, "loading %s: %s", path, err.msg);
        return NULL;
    }
    return t;
}

/* Asks t about the node named `node` of models/<model>.onnx (in a subgraph
 * when sub != NULL: the node named `node` of the first graph attribute of
 * main-graph node 'n'). Returns 1 supported, 0 refused, -1 setup failure. */
static int ask_in(const cg_target *t, const char *model, const char *node, bool sub,
                  char *reason, size_t len)
{
    char path[512];
    snprintf(path, sizeof path, "%s/models/%s.onnx", DATA, model);
    cg_error err;
    cg_error_clear(&err);
    cg_model *m = NULL;
    cg_type_env *env = NULL;
    int rc = -1;
    if (cg_model_load(path, NULL, &m, &err) != CG_OK ||
        cg_type_env_build(m, NULL, 0, &env, &err) != CG_OK) {
        EXPECT(0, "%s: %s", model, err.msg);
        goto done;
    }
    /* the main graph, or each graph attribute of its nodes in turn */
    const cg_graph *graphs[8] = {m->graph};
    size_t graph_count = 1;
    if (sub) {
        graph_count = 0;
        for (size_t i = 0; i < m->graph->node_count; i++)
            for (size_t a = 0; a < m->graph->nodes[i].attr_count && graph_count < 8; a++)
                if (m->graph->nodes[i].attrs[a].g)
                    graphs[graph_count++] = m->graph->nodes[i].attrs[a].g;
    }
    for (size_t k = 0; k < graph_count && rc == -1; k++) {
        const cg_graph *g = graphs[k];
        for (size_t i = 0; i < g->node_count; i++) {
            if (strcmp(g->nodes[i].name, node) != 0)
                continue;
            cg_support_query q = {m, g, &g->nodes[i], cg_model_opset(m, ""), env};
            rc = t->vt->supports(t, &q, reason, len) ? 1 : 0;
            break;
        }
    }
    EXPECT(rc != -1, "%s: no node '%s'", model, node);
done:
    cg_type_env_free(env);
    cg_model_free(m);
    return rc;
}

static int ask(const cg_target *t, const char *model, char *reason, size_t len)
{
    return ask_in(t, model, "n", false, reason, len);
}

/* The first refusal of the model placed on t as assign places it (its
 * preprocess, convgate/lower.h); false when nothing is refused. */
static bool lowered_refusal(const cg_target *t, const char *model, char *reason, size_t len)
{
    char path[512];
    snprintf(path, sizeof path, "%s/models/%s.onnx", DATA, model);
    cg_error err;
    cg_error_clear(&err);
    cg_model *m = NULL;
    cg_lowered *l = NULL;
    cg_type_env *env = NULL;
    cg_assignment *a = NULL;
    bool refused = false;
    reason[0] = '\0';
    if (cg_model_load(path, NULL, &m, &err) != CG_OK ||
        cg_lower_for_targets(m, &t, 1, NULL, 0, &l, &err) != CG_OK ||
        cg_lowered_types(l, NULL, 0, NULL, &env, &err) != CG_OK ||
        cg_assign(l->model, env, &t, 1, &a, &err) != CG_OK) {
        EXPECT(0, "%s: %s", model, err.msg);
    } else if (a->unsupported_count) {
        snprintf(reason, len, "%s", a->unsupported[0].reason);
        refused = true;
    }
    cg_assignment_free(a);
    cg_type_env_free(env);
    cg_lowered_free(l);
    cg_model_free(m);
    return refused;
}

/* The node must be refused with a reason containing every needle. */
static void refused(const cg_target *t, const char *model, const char *const *needles)
{
    char reason[1024];
    int rc = ask(t, model, reason, sizeof reason);
    EXPECT(rc == 0, "%s on %s: expected a refusal, got %d", t->name, model, rc);
    for (size_t i = 0; rc == 0 && needles[i]; i++)
        EXPECT(strstr(reason, needles[i]) != NULL, "%s: reason '%s' lacks '%s'", model, reason,
              needles[i]);
}

static void supported(const cg_target *t, const char *model)
{
    char reason[1024] = "";
    int rc = ask(t, model, reason, sizeof reason);
    EXPECT(rc == 1, "%s on %s: expected support, got %d (%s)", t->name, model, rc, reason);
}

#define N(...) ((const char *const[]){__VA_ARGS__, NULL})

static void test_rules(void)
{
    cg_target *t = load_profile("rules.json");
    if (!t)
        return;
    EXPECT(t->kind == CG_TARGET_PROFILED && !t->vt->compile, "a profile is not executing");
    refused(t, "not_listed", N("Erf 'n'", "op Erf not in rules's supported-op list"));
    refused(t, "opset", N("Sigmoid 'n'", "opset 13", "[14, 19]"));
    supported(t, "opset_ok");
    refused(t, "max_inputs", N("Sum 'n'", "3 inputs", "<= 2"));
    refused(t, "min_inputs", N("Concat 'n'", "1 inputs", ">= 2"));
    refused(t, "max_outputs", N("Split 'n'", "3 outputs", "<= 2"));
    refused(t, "min_outputs", N("Split 'n'", "1 outputs", ">= 2"));
    refused(t, "runtime_inputs", N("Sub 'n'", "2 non-constant inputs", "<= 1"));
    supported(t, "runtime_inputs_ok");
    refused(t, "dtype", N("MatMul 'n': dtype float16 of input 0 (A) not in {float32}"));
    refused(t, "max_rank", N("Conv 'n': input 0 (X) has rank 5, profile allows <= 4"));
    refused(t, "ranks", N("Softmax 'n'", "rank 3", "{2, 4}"));
    refused(t, "min_rank", N("Flatten 'n'", "rank 1", ">= 2"));
    refused(t, "const", N("Gather 'n': input 1 (indices) must be a constant initializer",
                          "when input 1 has dtype in {int64}", "note: indices const if not int32"));
    supported(t, "const_ok_int32");
    supported(t, "const_ok_folded"); /* Constant -> Identity is constant too */
    refused(t, "not_const", N("Gemm 'n'", "input 0 (A) must not be a constant"));
    refused(t, "present", N("Clip 'n'", "input 1 (min) must be present"));
    refused(t, "graph_input", N("Transpose 'n'", "input 0 (data) must not be a graph input"));
    refused(t, "output_rank", N("Unsqueeze 'n'", "output 0 (expanded) has rank 4", "<= 3"));
    refused(t, "attr_in", N("Resize 'n': attribute mode='cubic' not in {nearest, linear}"));
    refused(t, "when_attr", N("Resize 'n'", "coordinate_transformation_mode='half_pixel'",
                              "{asymmetric}", "when mode in {nearest}"));
    supported(t, "when_attr_ok");
    refused(t, "attr_range", N("LeakyRelu 'n'", "alpha=2.5", "above the maximum 1"));
    refused(t, "attr_equals", N("Gemm 'n'", "transA=1 must equal 0"));
    refused(t, "absent_or_equals", N("ArgMax 'n'", "select_last_index=1 must be absent or equal 0"));
    refused(t, "absent", N("Shape 'n'", "attribute end must be absent (given 1)"));
    refused(t, "all_equal", N("AveragePool 'n'", "pads=[0,0,1,1] must have all elements equal"));
    refused(t, "last_axis", N("LogSoftmax 'n'", "axis=0", "last axis of input 0"));
    supported(t, "last_axis_ok");
    refused(t, "required", N("Elu 'n'", "attribute alpha must be present"));
    refused(t, "default", N("HardSigmoid 'n'", "alpha=0.2", "(default) must equal 0.5"));
    refused(t, "broadcast_none", N("Mul 'n'", "[2,3]", "[3]", "does not broadcast"));
    refused(t, "broadcast_gpu", N("Add 'n'", "[2,3,4,5]", "[4,5]", "not a broadcast rules accepts"));
    supported(t, "broadcast_gpu_ok");
    refused(t, "when_ranks", N("Identity 'n'", "float16", "when input 0 has rank in {2}"));
    supported(t, "when_ranks_ok");
    refused(t, "when_opset", N("Neg 'n'", "rank 2", "when opset >= 14"));
    supported(t, "when_opset_ok");
    t->vt->destroy(t);
}

static void test_limits(void)
{
    cg_target *t = load_profile("limits.json");
    if (!t)
        return;
    /* what the profile says about the target itself */
    EXPECT(t->layout == CG_LAYOUT_NHWC, "limits.json: layout nhwc");
    EXPECT(t->crossing_stated && t->crossing_fixed_us == 7.5 && t->crossing_gbps == 3,
           "limits.json: crossing 7.5 us + bytes / 3 GB/s");
    cg_target *plain = load_profile("rules.json");
    EXPECT(plain && plain->layout == CG_LAYOUT_NCHW && !plain->crossing_stated,
           "rules.json: nchw and no stated crossing by default");
    if (plain)
        plain->vt->destroy(plain);
    char reason[1024];
    refused(t, "lim_rank", N("Relu 'n': input 0 (X) 'x' has rank 5, limits allows <= 4"));
    refused(t, "lim_dim", N("dim 1 is 200, limits allows <= 100", "test max dim"));
    refused(t, "lim_dynamic", N("Relu 'n': dynamic shape: dim 0 of input 'x' is unknown and "
                                "limits requires static shapes"));
    /* the probe: r depends on 'batch', Shape's output [2] does not */
    EXPECT(ask_in(t, "lim_dynamic", "j", false, reason, sizeof reason) == 0 &&
              strstr(reason, "dim 0 of input 'r'"), "Identity of a dynamic value: %s", reason);
    EXPECT(ask_in(t, "lim_dynamic", "i", false, reason, sizeof reason) == 1,
          "Identity of Shape's static output refused: %s", reason);
    refused(t, "lim_zero", N("zero-sized dim 0", "[0,3]", "limits does not allow zero-sized dims"));
    supported(t, "lim_zero_ok"); /* Resize's empty roi is exempt */
    refused(t, "lim_dtype", N("dtype float16 of input 0 (X) not in {float32, int64}"));
    refused(t, "lim_mixed", N("Pow 'n'", "input 0 is float32, input 1 is int64"));
    EXPECT(ask_in(t, "lim_subgraph", "sub", true, reason, sizeof reason) == 0 &&
              strstr(reason, "Relu 'sub': node is inside a control-flow subgraph"),
          "subgraph node: %s", reason);
    t->vt->destroy(t);
}

static void test_bad_profiles(void)
{
    static const struct {
        const char *file;
        const char *needle; /* besides the file name */
    } cases[] = {
        {"bad_json.json", ":3:"},
        {"unknown_key.json", "$.ops.Conv.inputs[0]: unknown key 'max_rnak'"},
        {"wrong_type.json", "$.ops.Conv.inputs[0].max_rank: expected an integer, got a string"},
        {"bad_dtype.json", "$.limits.dtypes.value[0]: unknown dtype 'float33'"},
        {"no_sources.json", "$.sources: missing"},
        {"format2.json", "$.format_version"},
        {"bad_fallback.json", "$.fallback: 'gpu' is not"},
        {"dup_op.json", "$.ops: op Relu is listed twice"},
        {"bad_when.json", "$.ops.Gemm.attributes[0].when"},
        {"bad_name.json", "$.name: 'Bad Name'"},
        {"no_rule.json", "$.ops.Conv.attributes[0]: states no rule"},
        {"top_unknown.json", "$: unknown key 'colour'"},
        {"bad_range.json", "$.ops.LeakyRelu.attributes[0]: min 2 > max 1"},
        {"bad_layout.json", "$.layout: 'hwc' is not"},
        {"bad_crossing.json", "$.crossing: needs both"},
        {"bad_bandwidth.json", "$.crossing.bandwidth_gbps: 0 is not a bandwidth"},
        {"bad_param.json", "$.ops.Relu.requires: parameter 'api' is not declared"},
        {"bad_param_default.json", "$.parameters.api: needs min <= default <= max"},
        {"bad_preprocess.json", "$.preprocess: 'magic' is not a known preprocess"},
        {"bad_classes_one.json", "$.precision.device_classes: must list two classes"},
        {"bad_classes_twice.json", "$.precision.device_classes[1]: a second class with "
                                   "\"accumulate\": \"fp32\""},
        {"bad_classes_fp32.json", "$.precision.device_classes: device classes of accumulation "
                                  "need fp16 compute"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char path[512];
        snprintf(path, sizeof path, "%s/bad/%s", DATA, cases[i].file);
        cg_error err;
        cg_error_clear(&err);
        cg_target *t = NULL;
        cg_status st = cg_profile_load(path, &t, &err);
        EXPECT(st != CG_OK && t == NULL, "%s accepted", cases[i].file);
        EXPECT(strstr(err.msg, cases[i].file) != NULL, "%s: message lacks the file: %s",
              cases[i].file, err.msg);
        EXPECT(strstr(err.msg, cases[i].needle) != NULL, "%s: message lacks '%s': %s",
              cases[i].file, cases[i].needle, err.msg);
        if (t)
            t->vt->destroy(t);
    }
    cg_error err;
    cg_error_clear(&err);
    cg_target *t = NULL;
    EXPECT(cg_profile_load(DATA "/missing.json", &t, &err) == CG_IO, "missing file: %s", err.msg);
}

/* Target parameters ("nnapi@27"), condition lists, constant-value rules and
 * the dims-of-input attribute rule, on the test profile params.json. */
static void test_params(void)
{
    cg_target *t = load_profile("params.json");
    if (!t)
        return;
    cg_error err;
    cg_error_clear(&err);
    cg_profile_param_info info;
    EXPECT(cg_profile_param_count(t) == 1 && cg_profile_param(t, 0, &info) &&
              !strcmp(info.name, "level") && info.value == 3 && info.is_default,
          "the default level");
    /* level 3 (default): Softmax-13 must be 2-D; level 4 lifts it; level 1 lacks the op */
    refused(t, "softmax_3d",
            N("Softmax 'n'", "rank 3", "{2}", "when opset >= 13 and level <= 3"));
    supported(t, "softmax_2d");
    cg_target *four = NULL, *one = NULL, *bad = NULL;
    EXPECT(cg_profile_bind(t, "level=4", &four, &err) == CG_OK, "%s", err.msg);
    EXPECT(cg_profile_bind(t, "1", &one, &err) == CG_OK, "%s", err.msg);
    if (four) {
        EXPECT(!strcmp(four->name, "params@level=4") && cg_profile_param(four, 0, &info) &&
                  info.value == 4 && !info.is_default, "bound name and value");
        supported(four, "softmax_3d");
    }
    if (one)
        refused(one, "softmax_2d", N("Softmax 'n'", "Softmax needs level >= 2 on params@1",
                                     "(this target: level=1)"));
    cg_error_clear(&err);
    EXPECT(cg_profile_bind(t, "9", &bad, &err) == CG_USAGE && !bad &&
              strstr(err.msg, "level must be an integer in [1, 5], got '9'"), "range: %s",
          err.msg);
    cg_error_clear(&err);
    EXPECT(cg_profile_bind(t, "api=2", &bad, &err) == CG_USAGE &&
              strstr(err.msg, "'api=2' names no parameter") && strstr(err.msg, "has: level"),
          "unknown name: %s", err.msg);
    /* constant values */
    supported(t, "clip_relu6");
    supported(t, "clip_relu1");
    refused(t, "clip_0_5", N("Clip 'n'", "input 2 (max) must be a constant with every value in "
                             "{6} ('hi' is 5)", "when input 1 is a constant with values in {0}"));
    refused(t, "clip_2_6", N("Clip 'n'", "input 1 (min) must be a constant with every value in "
                             "{0, -1} ('lo' is 2)"));
    refused(t, "clip_runtime_min", N("Clip 'n'", "('lo' is not a constant the graph holds)"));
    /* kernel_shape [2,2] against input 0's dims 2.. [4,4] */
    refused(t, "all_equal", N("AveragePool 'n'", "kernel_shape=[2,2]",
                              "does not match dims 2.. of input 0"));
    if (four)
        four->vt->destroy(four);
    if (one)
        one->vt->destroy(one);
    t->vt->destroy(t);
    cg_target *plain = load_profile("rules.json");
    if (plain) {
        cg_error_clear(&err);
        EXPECT(cg_profile_bind(plain, "1", &bad, &err) == CG_USAGE &&
                  strstr(err.msg, "declares no parameters"), "no parameters: %s", err.msg);
        plain->vt->destroy(plain);
    }
}

/* The per-node rules of the ORT 1.22 EP profiles that follow the EP sources
 * at v1.22.0 (f217402897), through the registry (nnapi@API binds the level). */
static void test_shipped_ort_rules(void)
{
    cg_error err;
    cg_error_clear(&err);
    cg_target_registry *reg = NULL;
    EXPECT(cg_target_registry_load(CG_SOURCE_DIR "/profiles", &reg, &err) == CG_OK, "%s", err.msg);
    if (!reg)
        return;
    const cg_target *nnapi = cg_target_registry_find(reg, "nnapi", &err);
    const cg_target *n28 = cg_target_registry_find(reg, "nnapi@28", &err);
    const cg_target *n27 = cg_target_registry_find(reg, "nnapi@android_api=27", &err);
    const cg_target *nn = cg_target_registry_find(reg, "coreml-nn", &err);
    const cg_target *ml = cg_target_registry_find(reg, "coreml-mlprogram", &err);
    EXPECT(nnapi && n28 && n27 && nn && ml, "targets: %s", err.msg);
    EXPECT(cg_target_registry_find(reg, "nnapi@28", &err) == n28, "a bound target is made once");
    cg_error_clear(&err);
    EXPECT(!cg_target_registry_find(reg, "nnapi@26", &err) &&
              strstr(err.msg, "android_api must be an integer in [27, 35]"), "%s", err.msg);
    if (!nnapi || !n28 || !n27 || !nn || !ml) {
        cg_target_registry_free(reg);
        return;
    }
    cg_profile_param_info info;
    EXPECT(cg_profile_param(nnapi, 0, &info) && !strcmp(info.name, "android_api") &&
              info.value == 29 && info.is_default, "nnapi's stated default");
    /* NNAPI Softmax: rank/axis limits only below feature level 3 (API 29) */
    supported(nnapi, "softmax_3d");
    supported(nnapi, "softmax_4d_axis1");
    refused(n28, "softmax_3d", N("Softmax 'n'", "rank 3", "{2, 4}", "android_api <= 28"));
    refused(n28, "softmax_4d_axis1", N("Softmax 'n'", "axis=1", "last axis of input 0"));
    refused(n27, "softmax_2d", N("Softmax needs android_api >= 28"));
    /* an op-level requirement the unbound target's default fails names the default */
    refused(nnapi, "elu", N("Elu 'n'", "Elu needs android_api >= 30 on nnapi",
                            "(this target: android_api=29)"));
    /* NNAPI MatMul: 2-D with constant B, or batched (> 2-D) from API 29 */
    supported(nnapi, "matmul_2d_const");
    refused(nnapi, "matmul_2d_runtime", N("MatMul 'n'", "input 1 (B) must be a constant"));
    supported(nnapi, "matmul_3d");
    refused(n28, "matmul_3d", N("MatMul 'n'", "rank 3", "android_api <= 28"));
    refused(nnapi, "matmul_1d", N("MatMul 'n'", "rank 1", ">= 2"));
    /* NNAPI Clip: RELU6 or RELU1 only */
    supported(nnapi, "clip_relu6");
    supported(nnapi, "clip_relu1");
    refused(nnapi, "clip_0_5", N("Clip 'n'", "every value in {6}", "('hi' is 5)"));
    supported(nnapi, "clip6_relu1");
    refused(nnapi, "clip6_0_1", N("Clip 'n'", "attribute max=1", "{6}", "when min in {0}"));
    /* CoreML NeuralNetwork: no Unsqueeze; MatMul 2-D with constant B */
    refused(nn, "unsqueeze13", N("op Unsqueeze not in coreml-nn's supported-op list"));
    supported(nn, "matmul_2d_const");
    refused(nn, "matmul_3d", N("MatMul 'n'", "rank 3", "{2}"));
    refused(nn, "matmul_2d_runtime", N("MatMul 'n'", "must be a constant"));
    /* CoreML MLProgram: Unsqueeze, ConvTranspose with a matching kernel_shape,
     * BatchNormalization; Clip's min must be constant */
    supported(ml, "unsqueeze13");
    supported(ml, "convtranspose_ks");
    supported(ml, "convtranspose_no_ks");
    supported(ml, "batchnorm_4d");
    supported(ml, "matmul_2d_runtime");
    supported(ml, "clip_relu6");
    refused(ml, "clip_runtime_min", N("Clip 'n'", "input 1 (min) must be a constant initializer"));
    cg_target_registry_free(reg);
}

static void test_registry(void)
{
    cg_error err;
    cg_error_clear(&err);
    cg_target_registry *reg = NULL;
    EXPECT(cg_target_registry_load(DATA, &reg, &err) == CG_OK, "%s", err.msg);
    if (reg) {
        EXPECT(cg_target_registry_find(reg, "rules", &err) != NULL, "rules not found");
        EXPECT(cg_target_registry_find(reg, "limits", &err) != NULL, "limits not found");
        EXPECT(cg_target_registry_find(reg, "nope", &err) == NULL &&
                  strstr(err.msg, "no target named 'nope'") && strstr(err.msg, "limits") &&
                  strstr(err.msg, "rules"),
              "unknown name: %s", err.msg);
        cg_target_registry_free(reg);
    }
    cg_error_clear(&err);
    reg = NULL;
    EXPECT(cg_target_registry_load(DATA "/bad", &reg, &err) != CG_OK && !reg &&
              strstr(err.msg, "bad/"),
          "a bad profile must fail the registry: %s", err.msg);
    cg_error_clear(&err);
    EXPECT(cg_target_registry_load(DATA "/dup", &reg, &err) != CG_OK &&
              strstr(err.msg, "two targets are named 'same'"),
          "duplicate names: %s", err.msg);
    cg_error_clear(&err);
    EXPECT(cg_target_registry_load(DATA "/nowhere", &reg, &err) == CG_IO &&
              strstr(err.msg, "nowhere"), "missing dir: %s", err.msg);
}

static void test_shipped(void)
{
    static const char *const names[] = {"nnapi", "coreml-nn", "coreml-mlprogram", "ort-xnnpack",
                                        "litert-gpu", "tflite-xnnpack", "tflm",
                                        "executorch-xnnpack", "openvino"};
    cg_error err;
    cg_error_clear(&err);
    cg_target_registry *reg = NULL;
    EXPECT(cg_target_registry_load(CG_SOURCE_DIR "/profiles", &reg, &err) == CG_OK, "%s", err.msg);
    if (!reg)
        return;
    size_t profiled = 0;
    for (size_t i = 0; i < cg_target_registry_count(reg); i++) {
        const cg_target *t = cg_target_registry_at(reg, i);
        if (t->kind != CG_TARGET_PROFILED)
            continue;
        profiled++;
        EXPECT(t->not_modelled_count > 0, "%s says nothing about what it leaves out", t->name);
        EXPECT(cg_profile_source_count(t) > 0 && cg_profile_op_count(t) > 0, "%s: empty", t->name);
    }
    EXPECT(profiled == sizeof names / sizeof names[0], "%zu shipped profiles", profiled);
    const cg_target *by[sizeof names / sizeof names[0]];
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        by[i] = cg_target_registry_find(reg, names[i], &err);
        EXPECT(by[i] != NULL, "shipped profile '%s' missing: %s", names[i], err.msg);
    }
    if (by[0] && by[4] && by[6] && by[8]) {
        const cg_target *nnapi = by[0], *gpu = by[4], *tflm = by[6], *ov = by[8];
        EXPECT(nnapi->rules.stop_op_count == 1 &&
                  !strcmp(nnapi->rules.stop_ops[0], "NonMaxSuppression") &&
                  nnapi->rules.no_single_op_count == 3, "nnapi partition rules");
        EXPECT(gpu->precision == CG_PRECISION_FP16 && gpu->rules.max_partitions == 1,
              "litert-gpu precision / max partitions");
        /* TFLite GPU's F16 and F32_F16 (GetPrecision, use_f32_accum_for_fp16),
         * judged both by default; the measured fallback stays run's default */
        EXPECT(gpu->accumulate_fp32 && gpu->device_class[0] && gpu->device_class[1] &&
                  !strcmp(gpu->device_class[0], "F16 devices (fp16 sums)") &&
                  !strcmp(gpu->device_class[1],
                          "F32_F16 devices / use_f32_accum_for_fp16 (fp32 sums)") &&
                  !nnapi->device_class[0] && !tflm->device_class[0],
              "litert-gpu device classes");
        EXPECT(tflm->fallback == CG_FALLBACK_FAIL && ov->fallback == CG_FALLBACK_FAIL,
              "tflm and openvino fail on unsupported ops");
        /* ORT's NNAPI and XNNPACK EPs run NHWC kernels behind ORT's NCHW CPU
         * EP (edge-constraints.md 1.2 and the XNNPACK EP section) */
        EXPECT(nnapi->layout == CG_LAYOUT_NHWC && by[3] && by[3]->layout == CG_LAYOUT_NHWC &&
                   gpu->layout == CG_LAYOUT_NCHW,
               "shipped layouts: nnapi and ort-xnnpack NHWC, the others as stated");
        char reason[1024];
        /* a 3-D conv: NNAPI and the GPU refuse it, OpenVINO converts it */
        EXPECT(ask(nnapi, "max_rank", reason, sizeof reason) == 0 &&
                  strstr(reason, "input 0 (X) has rank 5, profile allows {4}"), "nnapi: %s",
              reason);
        /* litert-gpu judges the TFLite ops a converter emits: an ONNX node
         * asked directly is in no rule; lowered (onnx-to-tflite, as every
         * placement does) the 3-D conv is refused by its rank */
        EXPECT(ask(gpu, "max_rank", reason, sizeof reason) == 0 &&
                   strstr(reason, "op Conv not in litert-gpu's supported-op list"),
               "litert-gpu, unlowered: %s", reason);
        EXPECT(lowered_refusal(gpu, "max_rank", reason, sizeof reason) &&
                   strstr(reason, "has rank 5, litert-gpu allows <= 4"),
               "litert-gpu: %s", reason);
        EXPECT(ask(ov, "max_rank", reason, sizeof reason) == 1, "openvino: %s", reason);
        EXPECT(ask(nnapi, "lim_dynamic", reason, sizeof reason) == 0 &&
                  strstr(reason, "nnapi requires static shapes"), "nnapi dynamic: %s", reason);
        EXPECT(ask(tflm, "not_listed", reason, sizeof reason) == 0 &&
                  strstr(reason, "op Erf not in tflm's supported-op list"), "tflm: %s", reason);
    }
    cg_target_registry_free(reg);
}

static void test_type_env(void)
{
    cg_error err;
    cg_error_clear(&err);
    cg_model *m = NULL;
    cg_type_env *env = NULL;
    if (cg_model_load(DATA "/models/env.onnx", NULL, &m, &err) != CG_OK) {
        EXPECT(0, "%s", err.msg);
        return;
    }
    cg_dim_binding b[] = {{"batch", 5}, {"unused", 2}};
    EXPECT(cg_type_env_build(m, b, 2, &env, &err) == CG_OK, "%s", err.msg);
    if (env) {
        const cg_value_type *x = cg_type_env_get(env, "x"), *w = cg_type_env_get(env, "w"),
                            *k = cg_type_env_get(env, "k"), *kw = cg_type_env_get(env, "kw"),
                            *y = cg_type_env_get(env, "y"), *z = cg_type_env_get(env, "z");
        EXPECT(x && x->is_graph_input && !x->is_const && x->known && x->rank == 2 &&
                  x->dims[0] == 5 && x->dims[1] == 3, "graph input x");
        EXPECT(w && w->is_const && !w->is_graph_input, "initializer w");
        EXPECT(k && k->is_const && kw && kw->is_const, "Constant and Add(const, const)");
        EXPECT(y && !y->is_const && y->known && y->dtype == CG_DTYPE_FLOAT && y->dims[0] == 5,
              "Add(x, kw)");
        EXPECT(z && z->known && z->rank == 2, "z");
        /* 'batch' is bound: the deployment fixes it, so nothing is dynamic */
        EXPECT(cg_type_env_dynamic_dims(env, "y") == 0 && cg_type_env_dynamic_dims(env, "kw") == 0,
              "bound symbol: dynamic dims y=%u kw=%u", cg_type_env_dynamic_dims(env, "y"),
              cg_type_env_dynamic_dims(env, "kw"));
        cg_type_env *free_env = NULL;
        EXPECT(cg_type_env_build(m, NULL, 0, &free_env, &err) == CG_OK, "%s", err.msg);
        if (free_env) {
            /* unbound: the probe finds y's first dim follows 'batch', kw's does not */
            EXPECT(cg_type_env_dynamic_dims(free_env, "y") == 1u &&
                      cg_type_env_dynamic_dims(free_env, "kw") == 0,
                  "unbound symbol: dynamic dims y=%u kw=%u",
                  cg_type_env_dynamic_dims(free_env, "y"), cg_type_env_dynamic_dims(free_env, "kw"));
            cg_type_env_free(free_env);
        }
        EXPECT(cg_type_env_get(env, "nope") == NULL, "unknown name");
        bool noted = false;
        for (size_t i = 0; i < cg_type_env_note_count(env); i++)
            noted = noted || strstr(cg_type_env_note(env, i), "'unused'") != NULL;
        EXPECT(noted, "an unused binding is noted");
        cg_type_env_free(env);
        env = NULL;
    }
    /* unbound: default 1, noted */
    EXPECT(cg_type_env_build(m, NULL, 0, &env, &err) == CG_OK, "%s", err.msg);
    if (env) {
        EXPECT(cg_type_env_get(env, "z")->dims[0] == 1, "default 1");
        EXPECT(cg_type_env_note_count(env) == 1 &&
                  !strcmp(cg_type_env_note(env, 0), "symbol 'batch' not bound: used 1"),
              "note: %s", cg_type_env_note_count(env) ? cg_type_env_note(env, 0) : "(none)");
        cg_type_env_free(env);
    }
    cg_dim_binding twice[] = {{"batch", 1}, {"batch", 2}};
    env = NULL;
    EXPECT(cg_type_env_build(m, twice, 2, &env, &err) == CG_USAGE && !env, "bound twice");
    cg_model_free(m);
}

int main(void)
{
    test_rules();
    test_limits();
    test_bad_profiles();
    test_params();
    test_shipped_ort_rules();
    test_registry();
    test_shipped();
    test_type_env();
    return test_done("test_profile");
}
