/*
 * Bisection and the gates on the models of tests/data/bisect
 * (tools/make_wrong_rewrite.py):
 *  - a rewrite that is wrong on purpose (Sigmoid of -h) is found at the
 *    Sigmoid, beyond its fp32 noise floor, with the Add before it as the
 *    last match and the triage "wrong result";
 *  - identical models do not diverge;
 *  - RMSNorm on the fp16 profile litert-gpu with fp16 accumulation (a GPU
 *    computing in f16; one partition, so the
 *    divergence is traced inside it) diverges first at the ReduceMean, both
 *    against the noise floors (the fp16 rounding of the squares is within
 *    its floor; the reduction overflows) and under a fixed tolerance, and is
 *    triaged as a precision breakdown; with fp32 accumulation it does not
 *    diverge;
 *  - the gates: tiny_cnn on xnnpack passes all three within fp32 noise,
 *    RMSNorm on litert-gpu with fp16 accumulation fails gate 3 as a
 *    precision breakdown with the bisect naming the ReduceMean, and passes
 *    at fp16 precision as litert-gpu is profiled (fp32 accumulation,
 *    measured on the real delegate), and a fail-policy target refuses a node
 *    at gate 2;
 *  - samples from examples/tiny_cnn_inputs (two sets).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "convgate/bisect.h"
#include "convgate/gate.h"
#include "convgate/model.h"
#include "convgate/noise.h"
#include "convgate/runtime.h"
#include "convgate/targetpath.h"
#include "convgate/tensor.h"
#include "report/report.h"
#include "target/registry.h"
#include "testlib.h"

static void test_wrong_rewrite(void)
{
    cg_model *orig = test_load_model("tests/data/bisect/swish_original.onnx");
    cg_model *bad = test_load_model("tests/data/bisect/swish_rewritten.onnx");
    cg_sample_set s = {0};
    cg_bisect_options bo;
    cg_bisect_result r;
    cg_error err;
    cg_error_clear(&err);
    memset(&bo, 0, sizeof bo);
    memset(&r, 0, sizeof r);
    if (!orig || !bad)
        goto done;
    EXPECT(cg_samples_random(orig, 1, &(cg_random_inputs){7, NULL, 0}, NULL, 0, 0, &s, &err) == CG_OK, "%s", err.msg);
    if (!s.count)
        goto done;
    bo.reference.model = orig;
    bo.candidate.model = bad;
    bo.triage = true;
    EXPECT(cg_bisect_run(&bo, s.samples[0].inputs, s.samples[0].input_count, &r, &err) == CG_OK,
          "%s", err.msg);
    EXPECT(r.diverged, "the wrong rewrite must diverge");
    if (r.diverged) {
        EXPECT(strcmp(r.first_divergent.tensor, "sig") == 0, "first divergent %s",
              r.first_divergent.tensor);
        EXPECT(strcmp(r.first_divergent.node, "silu_sig") == 0, "node %s",
              r.first_divergent.node);
        EXPECT(strcmp(r.first_divergent.op_type, "Sigmoid") == 0, "op %s",
              r.first_divergent.op_type);
        EXPECT(!r.first_divergent.metrics.pass && r.first_divergent.metrics.max_abs > 0.1,
              "max_abs %g", r.first_divergent.metrics.max_abs);
        EXPECT(r.input_count == 1 && strcmp(r.inputs[0].name, "h") == 0 && r.inputs[0].known &&
                  r.inputs[0].rank == 2 && r.inputs[0].dims[0] == 2 && r.inputs[0].dims[1] == 32,
              "inputs of the divergent node");
        EXPECT(r.triage == CG_TRIAGE_WRONG && r.by_noise && r.verdict == CG_VERDICT_WRONG &&
                  r.first_divergent.precision == CG_PRECISION_FP32 &&
                  r.first_divergent.judgement.ratio > 1e4,
              "triage %s, ratio %g", cg_bisect_triage_name(r.triage),
              r.first_divergent.judgement.ratio);
    }
    EXPECT(r.has_last_matching && strcmp(r.last_matching.tensor, "h") == 0,
          "last matching %s", r.has_last_matching ? r.last_matching.tensor : "(none)");
    /* 'h_neg' exists only in the rewrite: not watched */
    EXPECT(r.watched == 5 && r.compared == 5, "watched %zu compared %zu", r.watched, r.compared);
    cg_bisect_result_free(&r);

    /* the original against itself: nothing diverges */
    bo.candidate.model = orig;
    EXPECT(cg_bisect_run(&bo, s.samples[0].inputs, s.samples[0].input_count, &r, &err) == CG_OK,
          "%s", err.msg);
    EXPECT(!r.diverged && r.compared == 5 && r.triage == CG_TRIAGE_NONE,
          "self-comparison diverged at %s", r.diverged ? r.first_divergent.tensor : "-");
    EXPECT(r.has_last_matching && strcmp(r.last_matching.tensor, "y") == 0, "last match");
done:
    cg_bisect_result_free(&r);
    cg_sample_set_free(&s);
    cg_model_free(orig);
    cg_model_free(bad);
}

static void test_rmsnorm_fp16(const cg_target_registry *reg)
{
    cg_model *m = test_load_model("tests/data/bisect/rmsnorm_fp16.onnx");
    cg_error err;
    cg_sample_set s = {0};
    cg_bisect_options bo;
    cg_target_path_options po;
    cg_bisect_result r;
    cg_error_clear(&err);
    memset(&bo, 0, sizeof bo);
    memset(&po, 0, sizeof po);
    memset(&r, 0, sizeof r);
    const cg_target *t = cg_target_registry_find(reg, "litert-gpu", &err);
    EXPECT(t != NULL, "%s", err.msg);
    if (!m || !t)
        goto done;
    EXPECT(cg_samples_random(m, 1, &(cg_random_inputs){3, NULL, 0}, NULL, 0, 0, &s, &err) == CG_OK, "%s", err.msg);
    if (!s.count)
        goto done;
    po.targets = &t;
    po.target_count = 1;
    po.accumulate = CG_ACCUMULATE_FP16;
    bo.reference.model = m;
    bo.candidate.model = m;
    bo.candidate.path = &po;
    bo.triage = true;
    /* against the floors: the fp16 rounding of the squares is within the
     * fp16 storage floor, the overflowing sum is not */
    size_t typed = cg_type_env_runs_made();
    EXPECT(cg_bisect_run(&bo, s.samples[0].inputs, s.samples[0].input_count, &r, &err) == CG_OK,
          "%s", err.msg);
    typed = cg_type_env_runs_made() - typed;
    /* the passes and triage reruns borrow one path per model (the graph,
     * then the graph with the partition's values exposed): 4 typing runs
     * each (the lowering's two, the lowered graph's, the source's), not 4
     * per path built (20 with the probe, both passes and two reruns) */
    EXPECT(r.refined && typed == 8, "a refined, triaged bisection typed the graph by %zu runs, "
           "want 8", typed);
    EXPECT(r.diverged && r.by_noise && strcmp(r.first_divergent.tensor, "ms") == 0 &&
              r.first_divergent.precision == CG_PRECISION_FP16 &&
              r.triage == CG_TRIAGE_PRECISION && r.verdict == CG_VERDICT_PRECISION &&
              strstr(r.verdict_reason, "fp16 overflow in ReduceMean"),
          "noise: first %s, verdict %s", r.diverged ? r.first_divergent.tensor : "-",
          r.verdict_reason);
    EXPECT(r.has_last_matching && strcmp(r.last_matching.tensor, "sq") == 0, "last matching %s",
          r.has_last_matching ? r.last_matching.tensor : "(none)");
    cg_bisect_result_free(&r);
    /* a tolerance that fp16 rounding of the squares passes (up to 3 ulps
     * relative): only a real failure of the reduction may trip it */
    bo.by_tolerance = true;
    bo.tol.atol = 1e-2;
    bo.tol.rtol = 1e-2;
    EXPECT(cg_bisect_run(&bo, s.samples[0].inputs, s.samples[0].input_count, &r, &err) == CG_OK,
          "%s", err.msg);
    EXPECT(r.diverged && r.refined, "diverged %d refined %d", r.diverged, r.refined);
    if (r.diverged) {
        EXPECT(strcmp(r.first_divergent.tensor, "ms") == 0 &&
                  strcmp(r.first_divergent.op_type, "ReduceMean") == 0,
              "first divergent %s (%s)", r.first_divergent.tensor, r.first_divergent.op_type);
        EXPECT(r.first_divergent.placed_on && strcmp(r.first_divergent.placed_on, "litert-gpu") == 0,
              "placed on %s", r.first_divergent.placed_on ? r.first_divergent.placed_on : "-");
        EXPECT(r.triage == CG_TRIAGE_PRECISION && r.triage_ran && r.triage_metrics.pass,
              "triage %s", cg_bisect_triage_name(r.triage));
    }
    EXPECT(r.has_last_matching && strcmp(r.last_matching.tensor, "sq") == 0, "last matching %s",
          r.has_last_matching ? r.last_matching.tensor : "(none)");
    cg_bisect_result_free(&r);

    /* with fp32 accumulation the sum does not overflow: no divergence,
     * under the tolerance or against the floors */
    po.accumulate = CG_ACCUMULATE_FP32;
    EXPECT(cg_bisect_run(&bo, s.samples[0].inputs, s.samples[0].input_count, &r, &err) == CG_OK,
          "%s", err.msg);
    EXPECT(!r.diverged, "fp32 accumulation diverged at %s",
          r.diverged ? r.first_divergent.tensor : "-");
    cg_bisect_result_free(&r);
    bo.by_tolerance = false;
    EXPECT(cg_bisect_run(&bo, s.samples[0].inputs, s.samples[0].input_count, &r, &err) == CG_OK,
          "%s", err.msg);
    EXPECT(!r.diverged, "fp32 accumulation beyond the floor at %s",
          r.diverged ? r.first_divergent.tensor : "-");
done:
    cg_bisect_result_free(&r);
    cg_sample_set_free(&s);
    cg_model_free(m);
}

static void test_gates(const cg_target_registry *reg)
{
    cg_model *cnn = test_load_model("examples/tiny_cnn.onnx");
    cg_model *rms = test_load_model("tests/data/bisect/rmsnorm_fp16.onnx");
    cg_sample_set s = {0};
    cg_gate_options opt;
    cg_gate_report rep;
    cg_error err;
    char dir[1024];
    cg_error_clear(&err);
    memset(&opt, 0, sizeof opt);
    memset(&rep, 0, sizeof rep);
    if (!cnn || !rms)
        goto done;
    const cg_target *x = cg_target_registry_find(reg, "xnnpack", &err);
    const cg_target *gpu = cg_target_registry_find(reg, "litert-gpu", &err);
    const cg_target *tflm = cg_target_registry_find(reg, "tflm", &err);
    EXPECT(x && gpu && tflm, "targets: %s", err.msg);
    if (!x || !gpu || !tflm)
        goto done;

    /* samples: examples/tiny_cnn_inputs holds image_0.npy and image_1.npy */
    snprintf(dir, sizeof dir, "%s/examples/tiny_cnn_inputs", CG_SOURCE_DIR);
    EXPECT(cg_samples_load_dir(cnn, dir, 0, &s, &err) == CG_OK, "%s", err.msg);
    EXPECT(s.count == 2 && s.samples[1].input_count == 1 &&
              s.samples[1].inputs[0].value->tensor.dims[0] == 2,
          "%zu samples", s.count);

    opt.targets = &x;
    opt.target_count = 1;
    opt.samples = &s;
    EXPECT(cg_gate_run(cnn, "tiny_cnn.onnx", &opt, &rep, &err) == CG_OK, "%s", err.msg);
    EXPECT(rep.pass && rep.converts == CG_GATE_PASS && rep.runs == CG_GATE_PASS &&
              rep.matches == CG_GATE_PASS,
          "tiny_cnn on xnnpack: %s", rep.reason);
    EXPECT(strcmp(rep.residency, "18/18 nodes on xnnpack, 0 on CPU") == 0, "residency %s", rep.residency);
    EXPECT(rep.sample_count == 2 && rep.judged.output_count == 1 && rep.judged.by_noise &&
              rep.judged.outputs[0].verdict.verdict == CG_VERDICT_MATCH_FP32,
          "samples %zu: %s", rep.sample_count, rep.matches_detail);
    cg_gate_report_free(&rep);

    /* tflm places the ops a converter emits: the CNN's BatchNormalization
     * folds into its conv, and every op is one TFLM registers; gate 3 runs
     * on the device what gate 2 placed there */
    opt.targets = &tflm;
    EXPECT(cg_gate_run(cnn, "tiny_cnn.onnx", &opt, &rep, &err) == CG_OK, "%s", err.msg);
    EXPECT(rep.pass && rep.runs == CG_GATE_PASS && rep.matches == CG_GATE_PASS, "tflm: %s",
           rep.reason);
    cg_gate_report_free(&rep);
    cg_sample_set_free(&s);

    /* tflm has no fallback: an op it cannot take (the RMSNorm's POW) fails
     * gate 2 */
    EXPECT(cg_samples_random(rms, 2, NULL, NULL, 0, 0, &s, &err) == CG_OK, "%s", err.msg);
    EXPECT(cg_gate_run(rms, "rmsnorm_fp16.onnx", &opt, &rep, &err) == CG_OK, "%s", err.msg);
    EXPECT(!rep.pass && rep.runs == CG_GATE_FAIL && rep.matches == CG_GATE_NOT_RUN &&
              strstr(rep.reason, "gate 2") && strstr(rep.reason, "POW"),
          "%s", rep.reason);
    cg_gate_report_free(&rep);

    /* RMSNorm on litert-gpu: judged as both device classes, it fails on
     * F16 devices (fp16 sums overflow), bisected as that class, and
     * matches on F32_F16 devices (fp32 sums, as measured) */
    opt.targets = &gpu;
    EXPECT(cg_gate_run(rms, "rmsnorm_fp16.onnx", &opt, &rep, &err) == CG_OK, "%s", err.msg);
    EXPECT(rep.matches == CG_GATE_FAIL && rep.judged.output_count == 1 &&
              rep.judged.outputs[0].verdict.verdict == CG_VERDICT_PRECISION &&
              rep.judged.outputs[0].class_verdict[0].verdict == CG_VERDICT_PRECISION &&
              rep.judged.outputs[0].class_verdict[1].verdict == CG_VERDICT_MATCH_FP16 &&
              rep.judged.device_class[0] && strstr(rep.judged.device_class[0], "F16 devices") &&
              rep.bisect_class == rep.judged.device_class[0] &&
              strstr(rep.reason, "fp16 overflow in ReduceMean"),
          "rmsnorm, litert-gpu, both classes: %s", rep.reason);
    cg_gate_report_free(&rep);
    /* ... the F32_F16 class alone passes */
    opt.accumulate = CG_ACCUMULATE_FP32;
    EXPECT(cg_gate_run(rms, "rmsnorm_fp16.onnx", &opt, &rep, &err) == CG_OK, "%s", err.msg);
    EXPECT(rep.matches == CG_GATE_PASS && rep.judged.output_count == 1 &&
              rep.judged.outputs[0].verdict.verdict == CG_VERDICT_MATCH_FP16 &&
              !rep.judged.device_class[0],
          "rmsnorm, litert-gpu --accumulate fp32: %s", rep.reason);
    cg_gate_report_free(&rep);
    /* ... and with fp16 accumulation gate 3 fails at the reduction */
    opt.accumulate = CG_ACCUMULATE_FP16;
    size_t typed = cg_type_env_runs_made();
    EXPECT(cg_gate_run(rms, "rmsnorm_fp16.onnx", &opt, &rep, &err) == CG_OK, "%s", err.msg);
    typed = cg_type_env_runs_made() - typed;
    /* it bisects sample 0, whose lowering and types gate 2 made: the
     * bisection's paths on the model as given borrow them (12 runs
     * without; the paths on the model with the partition exposed type
     * that model themselves) */
    EXPECT(rep.bisect_sample == 0 && typed == 9,
           "a gate that bisects sample 0 typed the graph by %zu runs, want 9", typed);
    EXPECT(!rep.pass && rep.converts == CG_GATE_PASS && rep.runs == CG_GATE_PASS &&
              rep.matches == CG_GATE_FAIL && rep.reduced_precision,
          "rmsnorm: %s", rep.reason);
    EXPECT(rep.judged.output_count == 1 && rep.judged.outputs[0].merged.max_abs > 0.5 &&
              rep.judged.outputs[0].verdict.verdict == CG_VERDICT_PRECISION,
          "output error %g", rep.judged.output_count ? rep.judged.outputs[0].merged.max_abs : 0.0);
    EXPECT(rep.bisected && rep.bisect.diverged &&
              strcmp(rep.bisect.first_divergent.op_type, "ReduceMean") == 0 &&
              rep.bisect.triage == CG_TRIAGE_PRECISION,
          "bisect: %s", rep.reason);
    EXPECT(strstr(rep.reason, "ReduceMean") && strstr(rep.reason, "precision breakdown") &&
              !strstr(rep.reason, "wrong"),
          "%s", rep.reason);
    json_t *j = cg_gate_report_json(&rep);
    EXPECT(j && json_is_false(json_object_get(j, "pass")), "json pass");
    json_t *fd = json_object_get(json_object_get(json_object_get(j, "matches"), "bisect"),
                                 "first_divergent");
    EXPECT(fd && strcmp(json_string_value(json_object_get(fd, "tensor")), "ms") == 0,
          "json first_divergent");
    json_decref(j);
done:
    cg_gate_report_free(&rep);
    cg_sample_set_free(&s);
    cg_model_free(cnn);
    cg_model_free(rms);
}

/* A value of 64K elements and more has its three statistics made side by
 * side (bisect.c stats_jobs_run): x * x + x on a [1, 16, 64, 64] input on
 * litert-gpu, judged against the floors. Each watched tensor's figures
 * against the float64 reference, and the last matching one's fp32 floor
 * (made on a thread of its own), are the ones cg_noise_stats_add gives on
 * the same two values made apart (the float64 and float32 reference
 * runtimes, the target path): the same pass, wherever it ran. */
static void test_big_statistics(const cg_target_registry *reg)
{
    static const int64_t dims[4] = {1, 16, 64, 64};
    cg_error err;
    cg_error_clear(&err);
    cg_model *m = test_model_new(17);
    cg_graph *g = m->graph = test_graph_new(m, "big", 4);
    test_graph_input(g, "x", test_type(m, CG_DTYPE_FLOAT, 4, dims));
    test_node(m, g, "Mul", "square", "x,x", "sq");
    test_node(m, g, "Add", "plus", "sq,x", "y");
    test_graph_output(g, "sq", test_type(m, CG_DTYPE_FLOAT, 4, dims));
    test_graph_output(g, "y", test_type(m, CG_DTYPE_FLOAT, 4, dims));
    const cg_target *t = cg_target_registry_find(reg, "litert-gpu", &err);
    cg_sample_set s = {0};
    cg_bisect_result r;
    memset(&r, 0, sizeof r);
    EXPECT(t != NULL, "%s", err.msg);
    if (!t || cg_samples_random(m, 1, NULL, NULL, 0, 0, &s, &err) != CG_OK || !s.count) {
        EXPECT(false, "samples: %s", err.msg);
        goto done;
    }
    cg_target_path_options po;
    memset(&po, 0, sizeof po);
    po.targets = &t;
    po.target_count = 1;
    po.accumulate = CG_ACCUMULATE_FP16;
    cg_bisect_options bo;
    memset(&bo, 0, sizeof bo);
    bo.reference.model = m;
    bo.candidate.model = m;
    bo.candidate.path = &po;
    EXPECT(cg_bisect_run(&bo, s.samples[0].inputs, s.samples[0].input_count, &r, &err) == CG_OK,
           "%s", err.msg);
    EXPECT(r.by_noise && r.compared == 2 && r.point_count == 2, "compared %zu of %zu points",
           r.compared, r.point_count);
    /* the same two values, made apart */
    cg_runtime_options ro;
    cg_runtime_options_default(&ro);
    ro.float64 = true;
    cg_runtime *rt = NULL;
    cg_target_path *path = NULL;
    cg_named_value *ref = NULL, *cand = NULL;
    size_t nref = 0, ncand = 0;
    bool ran = cg_runtime_init(m, &ro, &rt, &err) == CG_OK &&
               cg_runtime_run(rt, s.samples[0].inputs, s.samples[0].input_count, &ref, &nref,
                              &err) == CG_OK &&
               cg_target_path_init(m, &po, &path, &err) == CG_OK &&
               cg_target_path_run(path, s.samples[0].inputs, s.samples[0].input_count, &cand,
                                  &ncand, &err) == CG_OK;
    EXPECT(ran && nref == 2 && ncand == 2, "%s", err.msg);
    for (size_t i = 0; ran && i < r.point_count && i < 2; i++) {
        const cg_bisect_point *pt = &r.points[i];
        size_t k = strcmp(pt->tensor, "sq") == 0 ? 0 : 1;
        cg_noise_stats st;
        cg_noise_stats_init(&st);
        EXPECT(cg_noise_stats_add(&st, &ref[k].value->tensor, &cand[k].value->tensor, &err) ==
                   CG_OK, "%s", err.msg);
        EXPECT(pt->compared && pt->metrics.count == 65536 &&
                   pt->metrics.max_abs == st.m.max_abs && pt->metrics.sum_abs == st.m.sum_abs &&
                   pt->metrics.worst_index == st.m.worst_index && st.m.max_abs > 0,
               "%s: max_abs %g (apart %g), sum_abs %g (apart %g)", pt->tensor,
               pt->metrics.max_abs, st.m.max_abs, pt->metrics.sum_abs, st.m.sum_abs);
    }
    /* a floor, made on a thread of its own: the fp32 reference's max |d| */
    cg_runtime *rt32 = NULL;
    cg_named_value *f32 = NULL;
    size_t n32 = 0;
    ro.float64 = false;
    ran = ran && r.has_last_matching &&
          cg_runtime_init(m, &ro, &rt32, &err) == CG_OK &&
          cg_runtime_run(rt32, s.samples[0].inputs, s.samples[0].input_count, &f32, &n32,
                         &err) == CG_OK && n32 == 2;
    EXPECT(ran, "the fp32 reference: %s", err.msg);
    if (ran) {
        size_t k = strcmp(r.last_matching.tensor, "sq") == 0 ? 0 : 1;
        cg_noise_stats st;
        cg_noise_stats_init(&st);
        EXPECT(cg_noise_stats_add(&st, &ref[k].value->tensor, &f32[k].value->tensor, &err) ==
                   CG_OK, "%s", err.msg);
        EXPECT(r.last_matching.floor32 == st.m.max_abs && st.m.max_abs > 0 &&
                   r.last_matching.floor16_measured && r.last_matching.floor16 > 0,
               "%s: fp32 floor %g (apart %g), fp16 floor %g", r.last_matching.tensor,
               r.last_matching.floor32, st.m.max_abs, r.last_matching.floor16);
    }
    cg_runtime_free_outputs(f32, n32);
    cg_runtime_free(rt32);
    cg_runtime_free_outputs(ref, nref);
    cg_runtime_free_outputs(cand, ncand);
    cg_runtime_free(rt);
    cg_target_path_free(path);
done:
    cg_bisect_result_free(&r);
    cg_sample_set_free(&s);
    cg_model_free(m);
}

int main(void)
{
    cg_target_registry *reg = NULL;
    cg_error err;
    cg_error_clear(&err);
    char dir[1024];
    snprintf(dir, sizeof dir, "%s/profiles", CG_SOURCE_DIR);
    if (cg_target_registry_load(dir, &reg, &err) != CG_OK) {
        fprintf(stderr, "registry: %s\n", err.msg);
        return 1;
    }
    test_wrong_rewrite();
    test_rmsnorm_fp16(reg);
    test_gates(reg);
    test_big_statistics(reg);
    cg_target_registry_free(reg);
    return test_done("test_bisect");
}
