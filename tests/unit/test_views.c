/*
 * The per-node views and the binding entry points, in C (so the sanitizer
 * build covers them; tests/scripts/html_report.sh, model_explorer.sh and
 * python_binding.sh test them end to end):
 *  - the graph view of the RMSNorm gate on litert-gpu accumulating in fp16:
 *    every node placed, the bisection's error at each tensor, "inf" at the
 *    ReduceMean;
 *  - the HTML page escapes a hostile title and data, carries the CSP hash;
 *  - Model Explorer files are written, one per overlay with data;
 *  - a lowered placement (ORT's Level-1 graph of tests/data/lower/
 *    torch_like.onnx on nnapi) is drawn on the file's nodes: the 6 nodes
 *    ORT removes are owned by "removed" (the fused MatMul and Add say where
 *    the Gemm they became runs), every other node takes its runtime node's
 *    owner and partition, and the overlays key the file's node names only;
 *  - cg_bind_call: each command's envelope, tensors out, arrays in, and the
 *    errors (unknown command, option, target; bad JSON; a tensor whose
 *    bytes do not match its shape).
 */
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "convgate/bind.h"
#include "convgate/assign.h"
#include "convgate/gate.h"
#include "convgate/lower.h"
#include "convgate/model.h"
#include "report/report.h"
#include "target/registry.h"
#include "testlib.h"

static cg_model *load(const char *rel, char *path, size_t cap)
{
    cg_model *m = NULL;
    cg_error err;
    cg_error_clear(&err);
    snprintf(path, cap, "%s/%s", CG_SOURCE_DIR, rel);
    if (cg_model_load(path, NULL, &m, &err) != CG_OK)
        fprintf(stderr, "load %s: %s\n", path, err.msg);
    return m;
}

/* The node object of the view named `name`, or NULL. */
static json_t *view_node(json_t *view, const char *name)
{
    json_t *nodes = json_object_get(view, "nodes");
    for (size_t i = 0; i < json_array_size(nodes); i++)
        if (strcmp(json_string_value(json_object_get(json_array_get(nodes, i), "name")), name) ==
            0)
            return json_array_get(nodes, i);
    return NULL;
}

static void test_views(const cg_target_registry *reg)
{
    char path[1024], dir[1024];
    cg_model *rms = load("examples/rmsnorm_fp16.onnx", path, sizeof path);
    const cg_target *t[1] = {cg_target_registry_find(reg, "litert-gpu", NULL)};
    cg_sample_set samples = {0};
    cg_gate_options opt;
    cg_gate_report rep;
    cg_error err;
    cg_error_clear(&err);
    memset(&opt, 0, sizeof opt);
    snprintf(dir, sizeof dir, "%s/examples/rmsnorm_fp16_inputs", CG_SOURCE_DIR);
    if (!rms || !t[0] || cg_samples_load_dir(rms, dir, 0, &samples, &err) != CG_OK) {
        EXPECT(0, "setup: %s", err.msg);
        cg_model_free(rms);
        return;
    }
    opt.targets = t;
    opt.target_count = 1;
    opt.samples = &samples;
    opt.samples_desc = "examples";
    opt.accumulate = CG_ACCUMULATE_FP16; /* a GPU computing in f16: the sum of squares overflows */
    EXPECT(cg_gate_run(rms, path, &opt, &rep, &err) == CG_OK, "%s", err.msg);
    EXPECT(!rep.pass && rep.bisected && rep.assignment && rep.node_ms, "gate 3 fails, bisected");
    cg_graph_view gv = {rms, rep.assignment, rep.node_ms, &rep.bisect, NULL, 0, t, 1, rep.lowered,
                        &rep.judged};
    json_t *view = cg_report_graph_json(&gv);
    EXPECT(view != NULL, "graph view");
    EXPECT(json_array_size(json_object_get(view, "nodes")) == 6, "6 nodes");
    EXPECT(json_is_true(json_object_get(view, "placed")), "placed");
    json_t *mean_sq = view_node(view, "mean_sq");
    EXPECT(mean_sq != NULL, "node mean_sq");
    json_t *e = json_object_get(mean_sq, "error");
    EXPECT(json_is_object(e) &&
               strcmp(json_string_value(json_object_get(e, "max_abs")), "inf") == 0 &&
               strcmp(json_string_value(json_object_get(e, "source")), "bisect") == 0 &&
               json_is_false(json_object_get(e, "pass")),
           "mean_sq diverges to inf, from the bisection");
    EXPECT(strcmp(json_string_value(json_object_get(mean_sq, "owner")), "litert-gpu") == 0,
           "mean_sq on litert-gpu");
    EXPECT(json_integer_value(json_object_get(mean_sq, "partition")) == 0, "in partition 0");
    EXPECT(json_is_number(json_object_get(mean_sq, "ms")), "a reference time");
    json_t *scale = view_node(view, "scale");
    EXPECT(scale && json_is_object(json_object_get(scale, "error")),
           "the output's node has an error");
    EXPECT(json_array_size(json_object_get(view, "targets")) == 1, "the target's sources");

    /* the page: a hostile title is escaped, the data block cannot be closed */
    char *page = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&page, &len);
    json_t *env = cg_json_envelope("gate", 1, NULL, NULL, cg_gate_report_json(&rep));
    const char *said = json_string_value(
        json_object_get(json_object_get(env, "result"), "samples_source"));
    EXPECT(said && strcmp(said, "examples") == 0,
           "the gate report carries its samples' description: %s", said ? said : "(none)");
    cg_json_set(view, "graph", cg_json_text("</script><script>alert(1)</script>"));
    EXPECT(f && env && cg_report_html_write(f, "<b>t</b>&\"'", env, view, &err) == CG_OK, "%s",
           err.msg);
    if (f)
        fclose(f);
    EXPECT(page && strstr(page, "<title>&lt;b&gt;t&lt;/b&gt;&amp;&quot;&#39;</title>"),
           "the title is escaped");
    EXPECT(page && !strstr(page, "<script>alert") && strstr(page, "\\u003c/script\\u003e"),
           "the data block holds no markup");
    EXPECT(page && strstr(page, "script-src 'sha256-"), "the CSP names the script's hash");
    const char *p = page;
    size_t scripts = 0;
    while (p && (p = strstr(p, "<script")) != NULL) {
        scripts++;
        p++;
    }
    EXPECT(scripts == 2, "%zu script elements", scripts);
    free(page);
    json_decref(env);

    /* Model Explorer: three overlays, the owner one keyed by node name */
    char me[] = "/tmp/convgate_test_views_XXXXXX";
    size_t written = 0;
    EXPECT(mkdtemp(me) != NULL, "mkdtemp");
    EXPECT(cg_report_model_explorer_write(me, view, &written, &err) == CG_OK, "%s", err.msg);
    EXPECT(written == 3, "%zu files", written);
    const char *files[] = {"convgate_owner.json", "convgate_reference_ms.json",
                           "convgate_max_abs_error.json"};
    for (size_t i = 0; i < 3; i++) {
        char fp[1200];
        json_error_t je;
        snprintf(fp, sizeof fp, "%s/%s", me, files[i]);
        json_t *d = json_load_file(fp, 0, &je);
        /* the graph id is the (now hostile) graph name, a key like any other */
        json_t *g = json_object_get(d, "</script><script>alert(1)</script>");
        EXPECT(json_is_object(json_object_get(g, "results")), "%s: results", files[i]);
        if (i == 0)
            EXPECT(strcmp(json_string_value(json_object_get(
                              json_object_get(json_object_get(g, "results"), "mean_sq"), "value")),
                          "litert-gpu") == 0,
                   "owner of mean_sq");
        json_decref(d);
        unlink(fp);
    }
    rmdir(me);
    json_decref(view);
    cg_gate_report_free(&rep);
    cg_sample_set_free(&samples);
    cg_model_free(rms);
}

/* The string at key of obj, or "" (never NULL, for strcmp). */
static const char *str_at(json_t *obj, const char *key)
{
    const char *s = json_string_value(json_object_get(obj, key));
    return s ? s : "";
}

static void test_views_lowered(const cg_target_registry *reg)
{
    char path[1024];
    cg_model *m = load("tests/data/lower/torch_like.onnx", path, sizeof path);
    const cg_target *t[1] = {cg_target_registry_find(reg, "nnapi", NULL)};
    cg_lowered *l = NULL;
    cg_placement *p = NULL;
    cg_type_env *types = NULL;
    cg_error err;
    cg_error_clear(&err);
    if (!m || !t[0] || cg_lower_for_targets(m, t, 1, NULL, 0, &l, &err) != CG_OK ||
        cg_type_env_build(l->model, NULL, 0, &types, &err) != CG_OK ||
        cg_placement_build(l->model, types, t, 1, &p, &err) != CG_OK) {
        EXPECT(0, "setup: %s", err.msg);
        cg_placement_free(p);
        cg_type_env_free(types);
        cg_lowered_free(l);
        cg_model_free(m);
        return;
    }
    EXPECT(l->model->graph->node_count == 5 && cg_lowered_removed_count(l, "") == 6,
           "ORT's graph: 5 nodes, 6 removed");
    /* times of the runtime's 5 nodes: each goes to its first origin */
    const double ms[5] = {1, 2, 4, 8, 16};
    cg_graph_view gv = {m, p->main, ms, NULL, NULL, 0, t, 1, l, NULL};
    json_t *view = cg_report_graph_json(&gv);
    json_t *nodes = json_object_get(view, "nodes");
    EXPECT(json_array_size(nodes) == 10, "the file's 10 nodes drawn");
    double total = 0;
    for (size_t i = 0; i < json_array_size(nodes); i++)
        total += json_number_value(json_object_get(json_array_get(nodes, i), "ms"));
    EXPECT(total == 31, "the runtime's time, all of it and once: %g ms", total);
    EXPECT(json_integer_value(json_object_get(view, "removed_by_runtime")) == 6 &&
               json_integer_value(json_object_get(view, "nodes_partitioned")) == 5 &&
               strcmp(str_at(view, "lowering"), "ort-basic") == 0,
           "the lowering's figures");
    size_t removed = 0;
    for (size_t i = 0; i < json_array_size(nodes); i++)
        removed += strcmp(str_at(json_array_get(nodes, i), "owner"), "removed") == 0;
    EXPECT(removed == 6, "%zu nodes owned by 'removed'", removed);
    json_t *conv = view_node(view, "conv"), *bn = view_node(view, "bn");
    json_t *mm = view_node(view, "matmul"), *id = view_node(view, "identity_w");
    EXPECT(conv && strcmp(str_at(conv, "owner"), "nnapi") == 0 &&
               json_integer_value(json_object_get(conv, "partition")) == 0,
           "conv on nnapi, partition 0");
    EXPECT(bn && strcmp(str_at(bn, "owner"), "removed") == 0 &&
               strcmp(str_at(bn, "removed_by"), "ConvBNFusion") == 0 &&
               strcmp(str_at(bn, "runs_on"), "nnapi") == 0 &&
               strstr(str_at(bn, "reason"), "fused into 'conv'"),
           "bn fused into the Conv, which runs on nnapi");
    EXPECT(mm && strcmp(str_at(mm, "owner"), "removed") == 0 &&
               strcmp(str_at(mm, "runtime_node"), "matmul/MatMulAddFusion") == 0 &&
               strcmp(str_at(mm, "runs_on"), "nnapi") == 0 &&
               json_integer_value(json_object_get(mm, "partition")) == 0,
           "matmul: fused into the Gemm, drawn in its partition");
    EXPECT(id && strcmp(str_at(id, "owner"), "removed") == 0 &&
               json_is_null(json_object_get(id, "runs_on")) &&
               json_integer_value(json_object_get(id, "partition")) == -1,
           "identity_w: removed, runs nowhere");
    /* the partition lists the file's nodes: conv, bn, relu, flatten,
     * reshape, matmul, add (the Dropout, Identity and Constant are gone) */
    json_t *parts = json_object_get(view, "partitions");
    EXPECT(json_array_size(parts) == 1 &&
               json_array_size(json_object_get(json_array_get(parts, 0), "nodes")) == 7,
           "one partition of 7 file nodes");

    /* Model Explorer: keyed by the file's names, never the runtime's */
    char me[] = "/tmp/convgate_test_views_XXXXXX", fp[1200];
    size_t written = 0;
    EXPECT(mkdtemp(me) != NULL, "mkdtemp");
    EXPECT(cg_report_model_explorer_write(me, view, &written, &err) == CG_OK && written == 2,
           "%s (%zu files)", err.msg, written);
    snprintf(fp, sizeof fp, "%s/convgate_owner.json", me);
    json_error_t je;
    json_t *d = json_load_file(fp, 0, &je);
    json_t *res = json_object_get(json_object_get(d, "torch_like"), "results");
    EXPECT(json_object_size(res) == 10, "an owner for each of the file's nodes");
    EXPECT(!json_object_get(res, "matmul/MatMulAddFusion"), "no runtime-only name");
    EXPECT(strcmp(str_at(json_object_get(res, "matmul"), "value"), "nnapi (fused)") == 0 &&
               strcmp(str_at(json_object_get(res, "identity_w"), "value"),
                      "removed by ONNX Runtime's basic graph optimizations") == 0 &&
               strcmp(str_at(json_object_get(res, "relu"), "value"), "nnapi") == 0,
           "fused, removed and placed nodes");
    json_decref(d);
    unlink(fp);
    snprintf(fp, sizeof fp, "%s/convgate_reference_ms.json", me);
    unlink(fp);
    rmdir(me);
    json_decref(view);
    cg_placement_free(p);
    cg_type_env_free(types);
    cg_lowered_free(l);
    cg_model_free(m);
}

/* The envelope of a bind result, parsed. */
static json_t *envelope(const cg_bind_result *r)
{
    json_error_t je;
    return r ? json_loads(cg_bind_result_json(r), 0, &je) : NULL;
}

static bool has_error(json_t *env, const char *text)
{
    json_t *errs = json_object_get(env, "errors");
    for (size_t i = 0; i < json_array_size(errs); i++)
        if (strstr(json_string_value(json_object_get(json_array_get(errs, i), "message")), text))
            return true;
    return false;
}

static void test_bind(void)
{
    char path[1024], opts[2048];
    cg_model *rms = load("examples/rmsnorm_fp16.onnx", path, sizeof path);
    if (!rms) {
        EXPECT(0, "load");
        return;
    }
    cg_bind_result *r = cg_bind_call("inspect", rms, path, NULL, NULL, 0);
    json_t *env = envelope(r);
    EXPECT(env && strcmp(json_string_value(json_object_get(env, "status")), "ok") == 0 &&
               json_is_object(json_object_get(env, "result")),
           "inspect");
    json_decref(env);
    cg_bind_result_free(r);

    /* gate on the examples' folder: fails, the divergent tensor comes back */
    snprintf(opts, sizeof opts,
             "{\"target\": \"litert-gpu\", \"accumulate\": \"fp16\", "
             "\"inputs\": \"%s/examples/rmsnorm_fp16_inputs\"}",
             CG_SOURCE_DIR);
    r = cg_bind_call("gate", rms, path, opts, NULL, 0);
    env = envelope(r);
    EXPECT(cg_bind_result_exit_code(r) == 1, "gate fails");
    EXPECT(env && strcmp(json_string_value(json_object_get(json_object_get(env, "result"),
                                                           "verdict")),
                         "FAIL") == 0,
           "verdict FAIL");
    bool ref = false, tgt = false, x = false;
    for (size_t i = 0; i < cg_bind_result_tensor_count(r); i++) {
        const char *name;
        int32_t dtype, rank;
        int64_t dims[CG_MAX_RANK];
        const void *data;
        size_t bytes;
        EXPECT(cg_bind_result_tensor(r, i, &name, &dtype, &rank, dims, &data, &bytes), "tensor");
        ref = ref || (strcmp(name, "first_divergent/reference") == 0 && rank == 3 && dims[1] == 4);
        if (strcmp(name, "first_divergent/target") == 0 && dtype == CG_DTYPE_FLOAT) {
            const float *v = data;
            for (size_t k = 0; k < bytes / 4; k++)
                tgt = tgt || isinf(v[k]);
        }
        x = x || (strcmp(name, "sample/x") == 0 && bytes == 4 * 4 * 64);
    }
    EXPECT(ref && tgt && x, "the first divergent tensor (target inf) and the sample");
    EXPECT(!cg_bind_result_tensor(r, 99, NULL, NULL, NULL, NULL, NULL, NULL), "out of range");
    json_decref(env);
    cg_bind_result_free(r);

    /* run with an array in */
    float xs[64 * 4];
    for (size_t i = 0; i < 64 * 4; i++)
        xs[i] = (float)i / 256.0f - 0.5f;
    int64_t dims[3] = {1, 4, 64};
    cg_bind_tensor in = {NULL, "x", CG_DTYPE_FLOAT, 3, dims, xs, sizeof xs};
    r = cg_bind_call("run", rms, path, "{\"watch\": [\"mean_sq\"]}", &in, 1);
    EXPECT(cg_bind_result_exit_code(r) == 0 && cg_bind_result_tensor_count(r) == 2,
           "run: %s", cg_bind_result_json(r));
    cg_bind_result_free(r);

    /* errors, in the envelope */
    struct {
        const char *command, *opts, *want;
        size_t bytes;
    } bad[] = {
        {"nope", NULL, "unknown command", sizeof xs},
        {"gate", "{\"target\": \"litert-gpu\", \"atl\": 1}", "unknown option 'atl'", sizeof xs},
        {"gate", "{\"target\": \"tpu\"}", "no target named 'tpu'", sizeof xs},
        {"gate", "[1, 2]", "not a JSON object", sizeof xs},
        {"gate", "{\"target\": ", "not a JSON object", sizeof xs},
        {"run", NULL, "not a dense tensor", sizeof xs - 4},
        {"assign", "{\"target\": \"xnnpack\", \"dim\": {\"nope\": 2}}", "nope", sizeof xs},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        cg_bind_tensor t = in;
        t.bytes = bad[i].bytes;
        r = cg_bind_call(bad[i].command, rms, path, bad[i].opts, &t, 1);
        env = envelope(r);
        EXPECT(cg_bind_result_exit_code(r) == 2 && env &&
                   strcmp(json_string_value(json_object_get(env, "status")), "error") == 0 &&
                   has_error(env, bad[i].want),
               "%s %s: expected an error with '%s', got %s", bad[i].command,
               bad[i].opts ? bad[i].opts : "", bad[i].want, r ? cg_bind_result_json(r) : "NULL");
        json_decref(env);
        cg_bind_result_free(r);
    }
    cg_model_free(rms);
}

int main(void)
{
    cg_target_registry *reg = NULL;
    cg_error err;
    cg_error_clear(&err);
    char dir[1024];
    snprintf(dir, sizeof dir, "%s/profiles", CG_SOURCE_DIR);
    if (cg_target_registry_load(dir, &reg, &err) != CG_OK) {
        test_fatal("registry: %s", err.msg);
    }
    test_views(reg);
    test_views_lowered(reg);
    test_bind();
    cg_target_registry_free(reg);
    return test_done("test_views");
}
