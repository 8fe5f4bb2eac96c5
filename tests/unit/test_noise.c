/*
 * Noise floors, decisions and verdicts (convgate/noise.h).
 *
 *  - statistics: quantiles, scale, relative error, non-finite pairs;
 *  - decisions.onnx (tools/make_noise_cases.py): which outputs are
 *    discontinuous (ArgMax, Greater, Round, TopK's indices, QuantizeLinear
 *    and what follows) and which are not (the logits, Relu, TopK's values);
 *  - flips: a near tie in ArgMax, a comparison, Round and a quantizer, each
 *    with its margin, counted as noise or not against the input's floor;
 *  - floors of a real model: the fp32 floor is small and not zero, the fp16
 *    storage floor far larger;
 *  - the verdict rules on constructed errors: every category, the reruns
 *    that tell precision from a wrong kernel, inf, and the contract errors.
 * The end-to-end cases of the issue (resnet50 on xnnpack, the crafted fp16
 * models, the wrong rewrite) run in tests/scripts/noise_cli.sh.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "convgate/model.h"
#include "convgate/noise.h"
#include "convgate/runtime.h"
#include "convgate/samples.h"
#include "convgate/tensor_io.h"
#include "testlib.h"
#include "verify/verify_internal.h"

/* --- statistics ------------------------------------------------------------------------ */

static void test_stats(void)
{
    double ref[8] = {1, -1, 2, -2, 1, -1, 2, -2};
    double got[8] = {1, -1 + 1e-6, 2, -2, 1 + 1e-3, -1, 2, -2 + 1e-9};
    int64_t n = 8;
    cg_tensor r = test_view(CG_DTYPE_DOUBLE, 1, &n, ref), g = test_view(CG_DTYPE_DOUBLE, 1, &n, got);
    cg_noise_stats s;
    cg_error err;
    cg_error_clear(&err);
    cg_noise_stats_init(&s);
    EXPECT(cg_noise_stats_add(&s, &r, &g, &err) == CG_OK, "%s", err.msg);
    EXPECT(fabs(s.m.max_abs - 1e-3) < 1e-15, "max %g", s.m.max_abs);
    EXPECT(s.m.mismatches == 3 && s.dist.zero == 5, "differing %llu zero %llu",
          (unsigned long long)s.m.mismatches, (unsigned long long)s.dist.zero);
    EXPECT(cg_noise_scale(&s) == 2.0, "scale (largest |ref|) %g", cg_noise_scale(&s));
    EXPECT(fabs(cg_noise_rel(&s) - 1e-3 / 2.0) < 1e-12, "rel %g", cg_noise_rel(&s));
    EXPECT(cg_noise_quantile(&s, 0.5) == 0.0, "median is an exact zero");
    double q85 = cg_noise_quantile(&s, 0.85); /* the 7th of 8: 1e-6 */
    EXPECT(q85 >= 1e-6 && q85 <= 1e-6 * 1.19 + 1e-12, "p85 %g within one bin of 1e-6", q85);
    EXPECT(cg_noise_quantile(&s, 1.0) == s.m.max_abs, "p100 is the max");
    /* merging a second sample; then an inf against a finite reference */
    got[3] = INFINITY;
    EXPECT(cg_noise_stats_add(&s, &r, &g, &err) == CG_OK, "%s", err.msg);
    EXPECT(s.dist.count == 16 && s.dist.nonfinite == 1 && isinf(s.m.max_abs), "inf kept: %g",
          s.m.max_abs);
    EXPECT(isinf(cg_noise_quantile(&s, 1.0)), "p100 inf");
    /* shapes must agree */
    int64_t four = 4;
    cg_tensor short_t = test_view(CG_DTYPE_DOUBLE, 1, &four, got);
    EXPECT(cg_noise_stats_add(&s, &r, &short_t, &err) == CG_INVALID, "shape mismatch refused");
}

/* --- decisions ------------------------------------------------------------------------- */

static void test_decision_map(void)
{
    cg_model *m = test_load_model("tests/data/noise/decisions.onnx");
    if (!m)
        return;
    cg_decision_map dm;
    cg_error err;
    cg_error_clear(&err);
    EXPECT(cg_decision_map_build(m->graph, NULL, &dm, &err) == CG_OK, "%s", err.msg);
    static const struct {
        const char *name;
        bool discontinuous;
    } want[] = {{"logits", false}, {"relu", false},        {"class", true},
                {"mask", true},    {"rounded", true},      {"top_values", false},
                {"top_indices", true}, {"q", true},        {"deq", true}};
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        size_t nodes[8];
        size_t c = cg_decision_upstream(&dm, want[i].name, nodes, 8);
        EXPECT((c > 0) == want[i].discontinuous, "%s: %zu decisions upstream", want[i].name, c);
        if (!strcmp(want[i].name, "deq"))
            EXPECT(c == 1 && !strcmp(m->graph->nodes[nodes[0]].op_type, "QuantizeLinear"),
                  "deq depends on the quantizer");
    }
    EXPECT(dm.decision_count == 5, "ArgMax, Greater, Round, TopK, QuantizeLinear: %zu",
          dm.decision_count);
    cg_decision_map_free(&dm);
    cg_model_free(m);
}

static cg_node node_of(const char *op, const char *name, cg_attr *attrs, size_t nattr)
{
    cg_node n;
    memset(&n, 0, sizeof n);
    n.op_type = op;
    n.name = name;
    n.domain = "";
    n.attrs = attrs;
    n.attr_count = nattr;
    return n;
}

static void test_flips(void)
{
    cg_noise_multiples k;
    cg_noise_multiples_default(&k);
    cg_error err;
    cg_error_clear(&err);
    cg_flip_stats f;

    /* ArgMax over 3 classes, 2 rows: row 0 near-tied (1e-7 apart), row 1 clear */
    cg_attr ax[2];
    memset(ax, 0, sizeof ax);
    ax[0].name = "axis";
    ax[0].type = CG_ATTR_INT;
    ax[0].i = 1;
    ax[1].name = "keepdims";
    ax[1].type = CG_ATTR_INT;
    ax[1].i = 0;
    cg_node am = node_of("ArgMax", "argmax", ax, 2);
    double xv[6] = {0.5, 0.5000001, 0.1, 3.0, 1.0, 2.0};
    int64_t xd[2] = {2, 3}, od = 2;
    int64_t ref_idx[2] = {1, 0}, got_idx[2] = {0, 0};
    cg_tensor x = test_view(CG_DTYPE_DOUBLE, 2, xd, xv);
    cg_tensor ro = test_view(CG_DTYPE_INT64, 1, &od, ref_idx), go = test_view(CG_DTYPE_INT64, 1, &od, got_idx);
    const cg_tensor *ins[1] = {&x}, *outs[1] = {&ro};
    EXPECT(cg_decision_flips(&am, ins, 1, outs, 1, 0, &go, 1e-8, 1e-4, &k, &f, &err) == CG_OK,
          "%s", err.msg);
    EXPECT(f.decisions == 2 && f.flips == 1 && fabs(f.max_margin - 1e-7) < 1e-12,
          "one flip, margin 1e-7: %llu %g", (unsigned long long)f.flips, f.max_margin);
    EXPECT(f.noise_fp32 == 1 && f.noise_fp16 == 1, "within 16 x 1e-8");
    EXPECT(!strcmp(f.node, "argmax") && f.worst_index == 0, "named: %s", f.node);
    /* the clear row flipping is not noise */
    got_idx[1] = 2;
    EXPECT(cg_decision_flips(&am, ins, 1, outs, 1, 0, &go, 1e-8, 1e-4, &k, &f, &err) == CG_OK,
          "%s", err.msg);
    EXPECT(f.flips == 2 && f.noise_fp32 == 1 && fabs(f.max_margin - 1.0) < 1e-12 &&
              f.worst_index == 1, "margin 1 beyond: %g", f.max_margin);

    /* Less(a, b) with a broadcast b */
    cg_node lt = node_of("Less", "less", NULL, 0);
    double a[4] = {0.3, 0.30000001, 0.9, 0.1}, b[1] = {0.3};
    uint8_t rl[4] = {0, 0, 0, 1}, gl[4] = {1, 0, 0, 0};
    int64_t four = 4, one = 1;
    cg_tensor ta = test_view(CG_DTYPE_DOUBLE, 1, &four, a), tb = test_view(CG_DTYPE_DOUBLE, 1, &one, b);
    cg_tensor trl = test_view(CG_DTYPE_BOOL, 1, &four, rl), tgl = test_view(CG_DTYPE_BOOL, 1, &four, gl);
    const cg_tensor *lin[2] = {&ta, &tb}, *lout[1] = {&trl};
    EXPECT(cg_decision_flips(&lt, lin, 2, lout, 1, 0, &tgl, 1e-9, 1e-4, &k, &f, &err) == CG_OK,
          "%s", err.msg);
    EXPECT(f.flips == 2 && f.min_margin == 0.0 && fabs(f.max_margin - 0.2) < 1e-12 &&
              f.noise_fp32 == 1, "tie at 0, margin 0.2: %g %g", f.min_margin, f.max_margin);

    /* Round: 2.5000001 -> 3 in the reference, 2 on the target */
    cg_node rn = node_of("Round", "round", NULL, 0);
    double rv[2] = {2.5000001, 7.2}, rr[2] = {3, 7}, rg[2] = {2, 7};
    int64_t two = 2;
    cg_tensor trv = test_view(CG_DTYPE_DOUBLE, 1, &two, rv), trr = test_view(CG_DTYPE_DOUBLE, 1, &two, rr);
    cg_tensor trg = test_view(CG_DTYPE_DOUBLE, 1, &two, rg);
    const cg_tensor *rin[1] = {&trv}, *rout[1] = {&trr};
    EXPECT(cg_decision_flips(&rn, rin, 1, rout, 1, 0, &trg, 1e-8, 1e-3, &k, &f, &err) == CG_OK,
          "%s", err.msg);
    EXPECT(f.flips == 1 && fabs(f.max_margin - 1e-7) < 1e-12 && f.noise_fp32 == 1,
          "round margin %g", f.max_margin);

    /* QuantizeLinear, scale 0.5: x = 1.2499 is 0.0001 below the 2.5 boundary */
    cg_node qn = node_of("QuantizeLinear", "quant", NULL, 0);
    double qx[2] = {1.2499, 3.0}, qs[1] = {0.5};
    uint8_t qr[2] = {2, 6}, qg[2] = {3, 9};
    cg_tensor tqx = test_view(CG_DTYPE_DOUBLE, 1, &two, qx), tqs = test_view(CG_DTYPE_DOUBLE, 1, &one, qs);
    cg_tensor tqr = test_view(CG_DTYPE_UINT8, 1, &two, qr), tqg = test_view(CG_DTYPE_UINT8, 1, &two, qg);
    const cg_tensor *qin[2] = {&tqx, &tqs}, *qout[1] = {&tqr};
    EXPECT(cg_decision_flips(&qn, qin, 2, qout, 1, 0, &tqg, 1e-5, 1e-3, &k, &f, &err) == CG_OK,
          "%s", err.msg);
    EXPECT(f.flips == 2 && f.max_steps == 3 && f.noise_fp32 == 1 && f.noise_fp16 == 1 &&
              fabs(f.min_margin - 1e-4) < 1e-9 && fabs(f.max_margin - 0.25) < 1e-12,
          "quantizer margins %g..%g steps %lld", f.min_margin, f.max_margin,
          (long long)f.max_steps);

    /* TopK's values are not a decision output */
    cg_node tk = node_of("TopK", "topk", NULL, 0);
    EXPECT(cg_decision_flips(&tk, rin, 1, rout, 1, 0, &trg, 0, 0, &k, &f, &err) == CG_USAGE,
          "TopK output 0 refused");
    /* a different number of selections: the extra ones are flips */
    cg_node nms = node_of("NonMaxSuppression", "nms", NULL, 0);
    int64_t sel_r[6] = {0, 0, 1, 0, 0, 2}, sel_g[3] = {0, 0, 1};
    int64_t dr[2] = {2, 3}, dg[2] = {1, 3};
    cg_tensor tsr = test_view(CG_DTYPE_INT64, 2, dr, sel_r), tsg = test_view(CG_DTYPE_INT64, 2, dg, sel_g);
    const cg_tensor *nout[1] = {&tsr};
    EXPECT(cg_decision_flips(&nms, NULL, 0, nout, 1, 0, &tsg, 0, 0, &k, &f, &err) == CG_OK,
          "%s", err.msg);
    EXPECT(f.flips == 3 && !f.margin_known, "one box missing: %llu flips",
          (unsigned long long)f.flips);
}

/* --- floors of a real model ---------------------------------------------------------------- */

static void test_floors(void)
{
    cg_model *m = test_load_model("tests/data/noise/decisions.onnx");
    if (!m)
        return;
    cg_noise_options o;
    memset(&o, 0, sizeof o);
    o.fp16 = true;
    cg_noise *n = NULL;
    cg_error err;
    cg_error_clear(&err);
    EXPECT(cg_noise_init(m, &o, &n, &err) == CG_OK, "%s", err.msg);
    if (!n) {
        cg_model_free(m);
        return;
    }
    int64_t dims[3] = {1, 4, 8};
    cg_value *x = NULL;
    EXPECT(cg_value_alloc_tensor(CG_DTYPE_FLOAT, 3, dims, &x, &err) == CG_OK, "%s", err.msg);
    cg_rng rng;
    cg_rng_seed(&rng, 7);
    EXPECT(cg_random_fill(&x->tensor, NULL, &rng, &err) == CG_OK, "%s", err.msg);
    cg_named_value in = {"x", x};
    cg_noise_runs runs;
    cg_noise_decision_values dec;
    EXPECT(cg_noise_add_sample(n, &in, 1, &runs, &dec, &err) == CG_OK, "%s", err.msg);
    cg_named_value *ref = runs.out[CG_RUN_FP64];
    size_t nref = runs.count[CG_RUN_FP64];
    EXPECT(runs.count[CG_RUN_FP32] == nref && runs.count[CG_RUN_FP16] == nref &&
              runs.out[CG_RUN_FP32][0].value->tensor.dtype == CG_DTYPE_FLOAT,
          "the fp32 and fp16-storage outputs come back too");
    EXPECT(cg_noise_sample_count(n) == 1 && nref == 9, "one sample, 9 outputs");
    EXPECT(nref && ref[0].value->tensor.dtype == CG_DTYPE_DOUBLE, "fp64 reference outputs");
    const cg_noise_output *lo = cg_noise_output_get(n, 0);
    EXPECT(lo && !strcmp(lo->v.name, "logits") && !lo->discontinuous, "logits continuous");
    double f32 = lo->v.fp32.m.max_abs, f16 = lo->v.fp16.m.max_abs, sc = cg_noise_scale(&lo->v.fp32);
    EXPECT(f32 > 0 && f32 < 1e-6 * sc, "fp32 floor %g of scale %g", f32, sc);
    EXPECT(f16 > 100 * f32 && f16 < 1e-2 * sc, "fp16 floor %g", f16);
    /* the decision values: the quantizer's input and its constant scale */
    EXPECT(cg_noise_decision_value(&dec, "logits") && cg_noise_decision_value(&dec, "qs") &&
              cg_noise_decision_value(&dec, "q"), "decision values kept");
    const cg_noise_value *lv = cg_noise_value_find(n, "logits");
    EXPECT(lv && lv->compared && lv->fp32.m.max_abs == f32, "the decision input's floor");
    EXPECT(cg_noise_output_get(n, 7)->discontinuous, "q discontinuous");

    /* the fp32 reference judged against the floors is (trivially) fp32 noise */
    cg_noise_tally t;
    EXPECT(cg_noise_tally_init(n, &t, &err) == CG_OK, "%s", err.msg);
    cg_runtime *rt = NULL;
    cg_runtime_options ro;
    cg_runtime_options_default(&ro);
    cg_noise_capture cap;
    memset(&cap, 0, sizeof cap);
    cap.noise = n;
    cap.err = &err;
    ro.observe = cg_noise_capture_observe;
    ro.observe_user = &cap;
    cg_named_value *got = NULL;
    size_t ngot = 0;
    EXPECT(cg_runtime_init(m, &ro, &rt, &err) == CG_OK &&
              cg_runtime_run(rt, &in, 1, &got, &ngot, &err) == CG_OK, "%s", err.msg);
    EXPECT(cg_noise_tally_add(n, &t, ref, nref, got, ngot, &dec, &cap.values, NULL, 0, &err) ==
              CG_OK, "%s", err.msg);
    for (size_t i = 0; i < nref; i++) {
        cg_judge_input ji;
        memset(&ji, 0, sizeof ji);
        ji.precision = CG_PRECISION_FP32;
        ji.floor = cg_noise_output_get(n, i);
        ji.error = &t.errors[i].m;
        ji.flips = t.flips_compared[i] ? &t.flips[i] : NULL;
        cg_judgement j;
        EXPECT(cg_noise_judge(&ji, NULL, &j, &err) == CG_OK, "%s", err.msg);
        EXPECT(j.verdict == CG_VERDICT_MATCH_FP32 && j.ratio <= 1.0, "%s: %s (%s)", ji.floor->v.name,
              cg_verdict_name(j.verdict), j.reason);
    }
    cg_noise_tally_free(&t);
    cg_noise_decision_values_free(&cap.values);
    cg_runtime_free_outputs(got, ngot);
    cg_runtime_free(rt);
    cg_noise_runs_free(&runs);
    cg_noise_decision_values_free(&dec);
    cg_value_free(x);
    cg_noise_free(n);
    cg_model_free(m);
}

/* --- verdicts ------------------------------------------------------------------------------- */

/* A floor of max |d| f32 / f16 over an output whose largest |value| is scale. */
static cg_noise_output floor_of(double f32, double f16, double scale)
{
    cg_noise_output o;
    memset(&o, 0, sizeof o);
    o.v.name = "y";
    o.v.compared = true;
    cg_noise_stats_init(&o.v.fp32);
    cg_noise_stats_init(&o.v.fp16);
    o.v.fp32.dist.count = o.v.fp16.dist.count = 100;
    o.v.fp32.m.finite_count = o.v.fp16.m.finite_count = 100;
    o.v.fp32.m.sum_sq_ref = o.v.fp16.m.sum_sq_ref = 100 * scale * scale;
    o.v.fp32.m.max_abs = f32;
    o.v.fp16.m.max_abs = f16;
    o.v.fp32.ref_max = o.v.fp16.ref_max = scale;
    return o;
}

static cg_metrics err_of(double max_abs)
{
    cg_metrics m;
    cg_metrics_init(&m);
    m.max_abs = max_abs;
    return m;
}

static cg_verdict judge(cg_precision p, const cg_noise_output *fl, double e, const double *acc32,
                        const double *fp32, cg_judgement *j)
{
    cg_metrics me = err_of(e), ma = err_of(acc32 ? *acc32 : 0), mf = err_of(fp32 ? *fp32 : 0);
    cg_judge_input in;
    memset(&in, 0, sizeof in);
    in.precision = p;
    in.floor = fl;
    in.error = &me;
    in.acc32 = acc32 ? &ma : NULL;
    in.fp32 = fp32 ? &mf : NULL;
    cg_error err;
    cg_error_clear(&err);
    memset(j, 0, sizeof *j);
    if (cg_noise_judge(&in, NULL, j, &err) != CG_OK) {
        snprintf(j->reason, sizeof j->reason, "error: %.400s", err.msg);
        return (cg_verdict)-1;
    }
    return j->verdict;
}

static void test_verdicts(void)
{
    cg_judgement j;
    /* resnet50-like logits: scale 15, fp32 floor 2e-5, fp16 floor 0.036 */
    cg_noise_output fl = floor_of(2e-5, 0.036, 15.0);
    EXPECT(judge(CG_PRECISION_FP32, &fl, 6.9e-5, NULL, NULL, &j) == CG_VERDICT_MATCH_FP32 &&
              fabs(j.ratio - 3.45) < 1e-9 && strstr(j.reason, "3.45x the fp32 noise floor"),
          "3.45x: %s", j.reason);
    EXPECT(judge(CG_PRECISION_FP32, &fl, 1e-2, NULL, NULL, &j) == CG_VERDICT_WRONG &&
              strstr(j.reason, "500x"), "fp32 far above: %s", j.reason);
    EXPECT(judge(CG_PRECISION_FP32, &fl, INFINITY, NULL, NULL, &j) == CG_VERDICT_WRONG &&
              strstr(j.reason, "inf/NaN"), "inf on an fp32 target: %s", j.reason);
    /* fp16: within the storage floor; beyond it, the reruns decide */
    EXPECT(judge(CG_PRECISION_FP16, &fl, 0.028, NULL, NULL, &j) == CG_VERDICT_MATCH_FP16 &&
              j.against == CG_PRECISION_FP16, "0.78x fp16: %s", j.reason);
    EXPECT(judge(CG_PRECISION_FP16, &fl, 3.0, NULL, NULL, &j) == (cg_verdict)-1 &&
              strstr(j.reason, "fp32 rerun"), "no rerun: %s", j.reason);
    double acc_ok = 0.03, fp32_ok = 3e-5, fp32_bad = 3.0;
    EXPECT(judge(CG_PRECISION_FP16, &fl, 3.0, &acc_ok, &fp32_ok, &j) == CG_VERDICT_PRECISION &&
              strstr(j.reason, "fp16 accumulation"), "accumulation: %s", j.reason);
    EXPECT(judge(CG_PRECISION_FP16, &fl, INFINITY, &acc_ok, &fp32_ok, &j) == CG_VERDICT_PRECISION &&
              strstr(j.reason, "inf/NaN"), "overflow: %s", j.reason);
    double acc_bad = 2.0;
    EXPECT(judge(CG_PRECISION_FP16, &fl, 3.0, &acc_bad, &fp32_ok, &j) == CG_VERDICT_PRECISION &&
              strstr(j.reason, "fp16 arithmetic"), "fp32 fixes it: %s", j.reason);
    EXPECT(judge(CG_PRECISION_FP16, &fl, 3.0, &acc_bad, &fp32_bad, &j) == CG_VERDICT_WRONG,
          "still wrong in fp32: %s", j.reason);
    EXPECT(judge(CG_PRECISION_FP16, &fl, 3.0, &acc_bad, NULL, &j) == (cg_verdict)-1,
          "acc32 alone cannot convict: %s", j.reason);
    /* fp16 storage breaks the output (LayerNorm of values ~300): even at the
     * floor it is a precision breakdown, found by the fp32 rerun */
    cg_noise_output broken = floor_of(1e-6, 0.4, 1.0);
    double fp32_at_floor = 1e-6;
    EXPECT(judge(CG_PRECISION_FP16, &broken, 0.4, &acc_bad, &fp32_at_floor, &j) ==
              CG_VERDICT_PRECISION && strstr(j.reason, "fp16 storage alone"), "storage: %s",
          j.reason);
    /* the limit a decision's margin is noise within: k x the floor of the
     * precision, never below one unit of it at the output's scale */
    EXPECT(fabs(cg_noise_limit(&fl.v, CG_PRECISION_FP32, NULL) - 100 * 2e-5) < 1e-12 &&
              fabs(cg_noise_limit(&fl.v, CG_PRECISION_FP16, NULL) - 8 * 0.036) < 1e-12,
          "limits %g %g", cg_noise_limit(&fl.v, CG_PRECISION_FP32, NULL),
          cg_noise_limit(&fl.v, CG_PRECISION_FP16, NULL));
    cg_noise_output tiny = floor_of(0, 0, 4.0);
    EXPECT(cg_noise_limit(&tiny.v, CG_PRECISION_FP32, NULL) == 100 * 0x1p-24 * 4.0 &&
              cg_noise_limit(&tiny.v, CG_PRECISION_FP16, NULL) == 8 * 0x1p-11 * 4.0,
          "unit limits %g %g", cg_noise_limit(&tiny.v, CG_PRECISION_FP32, NULL),
          cg_noise_limit(&tiny.v, CG_PRECISION_FP16, NULL));
    /* an exact zero floor is floored at u x scale; an all-zero output */
    cg_noise_output exact = floor_of(0, 0, 1.0);
    EXPECT(judge(CG_PRECISION_FP32, &exact, 1e-7, NULL, NULL, &j) == CG_VERDICT_MATCH_FP32 &&
              fabs(j.floor - 0x1p-24) < 1e-20, "unit floor: %s", j.reason);
    cg_noise_output zero = floor_of(0, 0, 0.0);
    EXPECT(judge(CG_PRECISION_FP32, &zero, 0.0, NULL, NULL, &j) == CG_VERDICT_MATCH_FP32 &&
              j.ratio == 0, "all zeros: %s", j.reason);
    EXPECT(judge(CG_PRECISION_FP32, &zero, 1e-9, NULL, NULL, &j) == CG_VERDICT_WRONG,
          "anything against exact zeros: %s", j.reason);
    /* decisions: flips within the noise pass, beyond it they do not */
    cg_flip_stats f;
    cg_flip_stats_init(&f);
    f.decisions = 25600;
    f.flips = 1;
    f.noise_fp32 = 1;
    f.noise_fp16 = 1;
    f.max_margin = f.min_margin = 2e-7;
    snprintf(f.node, sizeof f.node, "peak");
    cg_metrics big = err_of(5.0);
    cg_judge_input in;
    memset(&in, 0, sizeof in);
    in.precision = CG_PRECISION_FP32;
    in.floor = &fl;
    in.error = &big;
    in.flips = &f;
    cg_error err;
    cg_error_clear(&err);
    EXPECT(cg_noise_judge(&in, NULL, &j, &err) == CG_OK && j.verdict == CG_VERDICT_MATCH_FP32 &&
              j.by_flips && strstr(j.reason, "1 of 25600 decisions flipped") &&
              strstr(j.reason, "'peak'"), "a near tie: %s", j.reason);
    f.noise_fp32 = 0;
    f.max_margin = 0.5;
    EXPECT(cg_noise_judge(&in, NULL, &j, &err) == CG_OK && j.verdict == CG_VERDICT_WRONG,
          "a clear decision flipped: %s", j.reason);
    /* contract */
    cg_noise_output none;
    memset(&none, 0, sizeof none);
    none.v.name = "s";
    in.floor = &none;
    EXPECT(cg_noise_judge(&in, NULL, &j, &err) == CG_USAGE, "no floor");
    EXPECT(strcmp(cg_verdict_name(CG_VERDICT_MATCH_FP32), "matches (fp32 noise)") == 0 &&
              cg_verdict_passes(CG_VERDICT_MATCH_FP16) && !cg_verdict_passes(CG_VERDICT_PRECISION),
          "names");
}

/* A reference output that is constant over every sample (an untrained
 * export's zero-initialized head) judges nothing: the verdict says so
 * instead of passing it as "0x the floor" (#14). zero_head.onnx has a
 * varying output (features), one that is 0 whatever the input (logits) and
 * one that is 0.5 (half); judged on the fp32 reference over two samples. */
static void test_vacuous(void)
{
    cg_model *m = test_load_model("tests/data/noise/zero_head.onnx");
    if (!m)
        return;
    cg_noise_options o;
    memset(&o, 0, sizeof o);
    cg_noise *n = NULL;
    cg_error err;
    cg_error_clear(&err);
    EXPECT(cg_noise_init(m, &o, &n, &err) == CG_OK, "%s", err.msg);
    cg_runtime *rt = NULL;
    cg_runtime_options ro;
    cg_runtime_options_default(&ro);
    EXPECT(cg_runtime_init(m, &ro, &rt, &err) == CG_OK, "%s", err.msg);
    cg_noise_tally t;
    memset(&t, 0, sizeof t);
    EXPECT(n && cg_noise_tally_init(n, &t, &err) == CG_OK, "%s", err.msg);
    int64_t dims[3] = {1, 4, 8};
    cg_rng rng;
    cg_rng_seed(&rng, 3);
    for (size_t s = 0; n && rt && s < 2; s++) {
        cg_value *x = NULL;
        EXPECT(cg_value_alloc_tensor(CG_DTYPE_FLOAT, 3, dims, &x, &err) == CG_OK &&
                  cg_random_fill(&x->tensor, NULL, &rng, &err) == CG_OK, "%s", err.msg);
        cg_named_value in = {"x", x};
        cg_noise_runs runs;
        memset(&runs, 0, sizeof runs);
        cg_named_value *got = NULL;
        size_t ngot = 0;
        EXPECT(cg_noise_add_sample(n, &in, 1, &runs, NULL, &err) == CG_OK &&
                  cg_runtime_run(rt, &in, 1, &got, &ngot, &err) == CG_OK &&
                  cg_noise_tally_add(n, &t, runs.out[CG_RUN_FP64], runs.count[CG_RUN_FP64], got,
                                     ngot, NULL, NULL, NULL, s, &err) == CG_OK, "%s", err.msg);
        cg_runtime_free_outputs(got, ngot);
        cg_noise_runs_free(&runs);
        cg_value_free(x);
    }
    const char *names[3] = {"features", "logits", "half"};
    const double constants[3] = {0, 0.0, 0.5};
    for (size_t i = 0; n && t.errors && i < 3; i++) {
        const cg_noise_output *no = cg_noise_output_get(n, i);
        cg_judgement j;
        EXPECT(cg_noise_judge_tally(no, i, CG_PRECISION_FP32, &t, NULL, NULL, NULL, &j, &err) ==
                  CG_OK, "%s", err.msg);
        double c = -1;
        bool constant = cg_noise_constant(&no->v.fp32, &c);
        EXPECT(!strcmp(no->v.name, names[i]), "output %zu is %s", i, no->v.name);
        /* the target matches the constant: the verdict stands, and says it is vacuous */
        EXPECT(j.verdict == CG_VERDICT_MATCH_FP32, "%s: %s", names[i], j.reason);
        if (i == 0) {
            EXPECT(!constant && !j.vacuous && !strstr(j.reason, "vacuous"),
                  "features vary: not vacuous (%s)", j.reason);
            continue;
        }
        char want[96];
        snprintf(want, sizeof want, "vacuous: the fp64 reference is %g on every one of its %d "
                 "elements", constants[i], i == 1 ? 24 : 40);
        EXPECT(constant && c == constants[i] && j.vacuous && j.constant == constants[i] &&
                  !strncmp(j.reason, want, strlen(want)), "%s: vacuous, %g (%s)", names[i],
              constants[i], j.reason);
    }
    /* one nonzero scalar on one sample is not taken as constant; zero is */
    cg_noise_stats one;
    cg_noise_stats_init(&one);
    one.dist.count = 1;
    one.ref_lo = one.ref_hi = one.ref_max = 0.495;
    EXPECT(!cg_noise_constant(&one, NULL), "a single nonzero scalar is not vacuous");
    one.ref_lo = one.ref_hi = one.ref_max = 0;
    EXPECT(cg_noise_constant(&one, NULL), "a single zero is");
    cg_noise_stats_init(&one);
    EXPECT(!cg_noise_constant(&one, NULL), "nothing seen: not constant");
    cg_noise_tally_free(&t);
    cg_runtime_free(rt);
    cg_noise_free(n);
    cg_model_free(m);
}

/* A value read by a decision whose length differs between the runs (a
 * threshold upstream keeps another number of elements in fp16 storage, as
 * SSDlite's score filter does) has no elementwise floor: the floors are
 * still measured, that value is marked not compared (it used to fail the
 * whole run: "shapes differ"). */
static void test_shape_flip(void)
{
    cg_model *m = test_load_model("tests/data/noise/shape_flip.onnx");
    if (!m)
        return;
    cg_noise_options o;
    memset(&o, 0, sizeof o);
    o.fp16 = true;
    cg_noise *n = NULL;
    cg_error err;
    cg_error_clear(&err);
    EXPECT(cg_noise_init(m, &o, &n, &err) == CG_OK, "%s", err.msg);
    /* 0.100003 > 0.1 in float32; in fp16 both are 0.0999755859375 */
    static const double xs[6] = {0.100003, 0.7, 0.3, 0.9, 0.05, 0.6};
    int64_t dims[1] = {6};
    cg_value *x = test_value(CG_DTYPE_FLOAT, 1, dims, xs);
    cg_named_value in = {"x", x};
    EXPECT(n && x && cg_noise_add_sample(n, &in, 1, NULL, NULL, &err) == CG_OK,
          "the fp16-storage run keeps one element fewer: %s", err.msg);
    const cg_noise_value *sel = n ? cg_noise_value_find(n, "sel") : NULL;
    EXPECT(sel && !sel->compared, "sel has no elementwise floor");
    const cg_noise_output *count = n ? cg_noise_output_get(n, 0) : NULL;
    EXPECT(count && count->v.compared && count->v.fp16.dist.count == 1, "the output's floors");
    cg_value_free(x);
    cg_noise_free(n);
    cg_model_free(m);
}

/* A run that stops on an inf fp16 made (docs/gate3.md "Runs that stop on inf
 * or NaN"): the values noted, the one to blame (the first the fp64
 * reference holds finite), and the fp16 storage floor of a model whose
 * fp16 storage reference stops: not measurable, named. */
static void test_run_stops(void)
{
    cg_nonfinite_watch w;
    memset(&w, 0, sizeof w);
    const char *no_inputs[1] = {""};
    cg_node mask_node = {no_inputs, 0, no_inputs, 0, "add_mask", "Add", "", NULL, 0, NULL, {0}};
    cg_node cast_node = {no_inputs, 0, no_inputs, 0, "acc_cast", "Cast", "", NULL, 0, NULL, {0}};
    static const double mask[4] = {0, -INFINITY, 0, 0};
    static const double acc[4] = {INFINITY, 3, -INFINITY, 5};
    static const double fine[4] = {1, 2, 3, 4};
    int64_t dims[1] = {4};
    cg_value *vm = test_value(CG_DTYPE_FLOAT, 1, dims, mask);
    cg_value *va = test_value(CG_DTYPE_FLOAT, 1, dims, acc);
    cg_value *vf = test_value(CG_DTYPE_FLOAT, 1, dims, fine);
    cg_nonfinite_note(&w, &mask_node, "m", vm);
    EXPECT(w.count == 0, "a watch that is off notes nothing");
    w.on = true;
    cg_nonfinite_note(&w, &mask_node, "m", vm);
    cg_nonfinite_note(&w, &cast_node, "acc_f", vf);
    cg_nonfinite_note(&w, &cast_node, "acc_f", va);
    cg_nonfinite_note(&w, &mask_node, "m", vm);
    EXPECT(w.count == 2 && strcmp(w.sites[0].value, "m") == 0 && w.sites[0].index == 1 &&
               strcmp(w.sites[1].node, "acc_cast") == 0 && w.sites[1].index == 0 &&
               w.sites[1].count == 2 && w.sites[1].numel == 4 && isinf(w.sites[1].got),
           "the non-finite values in run order, once each (%zu)", w.count);
    /* the mask's -inf is the fp64 reference's too: the Cast's inf is the new one */
    w.sites[0].ref = -INFINITY;
    w.sites[0].ref_known = true;
    w.sites[1].ref = 247200;
    w.sites[1].ref_known = true;
    cg_nonfinite_site site;
    EXPECT(cg_nonfinite_first_new(&w, &site) && strcmp(site.value, "acc_f") == 0,
           "the first value the fp64 reference holds finite");
    cg_run_stop stop;
    memset(&stop, 0, sizeof stop);
    stop.stopped = true;
    stop.site = site;
    snprintf(stop.message, sizeof stop.message, "node 'q' (DynamicQuantizeLinear): input holds "
             "an infinity at 0 (no quantization range)");
    char line[640];
    cg_run_stop_describe(&stop, line, sizeof line);
    EXPECT(strstr(line, "fp16 overflow in Cast 'acc_cast' ('acc_f' is inf where the fp64 "
                        "reference is 247200; fp16 holds at most 65504), and the run stopped: "
                        "node 'q'") == line, "%s", line);
    w.sites[1].ref = INFINITY;
    EXPECT(!cg_nonfinite_first_new(&w, &site), "every non-finite value is the reference's too");
    /* a value read in blocks of 512: non-finite elements on both sides of a
     * block edge and last in the tail */
    static double big[1300];
    for (int i = 0; i < 1300; i++)
        big[i] = (double)i / 7.0;
    big[511] = NAN;
    big[512] = -INFINITY;
    big[1299] = INFINITY;
    int64_t bd[1] = {1300};
    cg_value *vb = test_value(CG_DTYPE_FLOAT, 1, bd, big);
    cg_nonfinite_note(&w, &cast_node, "wide", vb);
    EXPECT(w.count == 3 && strcmp(w.sites[2].value, "wide") == 0 && w.sites[2].index == 511 &&
               w.sites[2].count == 3 && w.sites[2].numel == 1300 && isnan(w.sites[2].got),
           "block edges: %zu sites, first %lld, count %llu", w.count,
           (long long)(w.count == 3 ? w.sites[2].index : -1),
           (unsigned long long)(w.count == 3 ? w.sites[2].count : 0));
    cg_value_free(vb);
    cg_value_free(vm);
    cg_value_free(va);
    cg_value_free(vf);

    cg_model *m = test_load_model("tests/data/fp16/dynquant_overflow.onnx");
    if (!m)
        return;
    cg_noise_options o;
    memset(&o, 0, sizeof o);
    o.fp16 = true;
    o.fp16_sums = true;
    cg_noise *n = NULL;
    cg_error err;
    cg_error_clear(&err);
    EXPECT(cg_noise_init(m, &o, &n, &err) == CG_OK, "%s", err.msg);
    double xs[36];
    for (int i = 0; i < 36; i++)
        xs[i] = (i % 9) / 8.0;
    int64_t xd[4] = {1, 1, 6, 6};
    cg_value *x = test_value(CG_DTYPE_FLOAT, 4, xd, xs);
    cg_named_value in = {"x", x};
    EXPECT(n && x && cg_noise_add_sample(n, &in, 1, NULL, NULL, &err) == CG_OK,
           "the fp16 storage reference stops, the floors go on: %s", err.msg);
    const cg_run_stop *s = n ? cg_noise_fp16_stop(n) : NULL;
    EXPECT(s && strcmp(s->site.node, "acc_cast") == 0 && s->site.ref_known &&
               s->site.ref > 65504 && strstr(s->message, "y_quant") && s->sample == 0,
           "the fp16 floor's stop names the Cast");
    const cg_noise_output *y = n ? cg_noise_output_get(n, 0) : NULL;
    EXPECT(y && y->v.fp32.dist.count == 32 && y->v.fp16.dist.count == 0 &&
               y->v.fp16_sums.dist.count == 0, "fp32 floor measured, fp16 floors not");
    cg_noise_free(n);
    /* without fp16 nothing stops */
    o.fp16 = o.fp16_sums = false;
    n = NULL;
    EXPECT(cg_noise_init(m, &o, &n, &err) == CG_OK &&
               cg_noise_add_sample(n, &in, 1, NULL, NULL, &err) == CG_OK && !cg_noise_fp16_stop(n),
           "fp32 and fp64 only: %s", err.msg);
    cg_noise_free(n);
    cg_value_free(x);
    cg_model_free(m);
}

/* The references run unobserved when no decision value is watched
 * (tiny_cnn: Conv, BatchNormalization, Relu, no decision): they fold and
 * fuse as a plain runtime does, and give its outputs bit for bit, fp32 and
 * fp64. A model with decision values keeps its observed references. */
static void test_unobserved_references(void)
{
    cg_model *cnn = test_load_model("examples/tiny_cnn.onnx");
    cg_model *dec = test_load_model("tests/data/noise/decisions.onnx");
    cg_noise_options o;
    cg_noise *n = NULL, *nd = NULL;
    cg_error err;
    cg_error_clear(&err);
    memset(&o, 0, sizeof o);
    if (!cnn || !dec)
        goto done;
    EXPECT(cg_noise_init(cnn, &o, &n, &err) == CG_OK && cg_noise_init(dec, &o, &nd, &err) == CG_OK,
           "%s", err.msg);
    if (!n || !nd)
        goto done;
    EXPECT(!cg_noise_references_observed(n), "nothing to watch in tiny_cnn: unobserved");
    EXPECT(cg_noise_references_observed(nd), "decisions.onnx has decision values: observed");
    int64_t dims[4] = {1, 3, 64, 64};
    cg_rng rng;
    cg_rng_seed(&rng, 11);
    cg_value *x = NULL;
    EXPECT(cg_value_alloc_tensor(CG_DTYPE_FLOAT, 4, dims, &x, &err) == CG_OK &&
               cg_random_fill(&x->tensor, NULL, &rng, &err) == CG_OK, "%s", err.msg);
    cg_named_value in = {cnn->graph->inputs[0].name, x};
    cg_noise_runs runs;
    memset(&runs, 0, sizeof runs);
    EXPECT(x && cg_noise_add_sample(n, &in, 1, &runs, NULL, &err) == CG_OK, "%s", err.msg);
    for (int fp64 = 0; fp64 < 2 && runs.count[CG_RUN_FP32]; fp64++) {
        cg_runtime_options ro;
        cg_runtime_options_default(&ro);
        ro.float64 = fp64;
        cg_runtime *rt = NULL;
        cg_named_value *got = NULL;
        size_t ngot = 0;
        EXPECT(cg_runtime_init(cnn, &ro, &rt, &err) == CG_OK &&
                   cg_runtime_run(rt, &in, 1, &got, &ngot, &err) == CG_OK, "%s", err.msg);
        const cg_named_value *ref = runs.out[fp64 ? CG_RUN_FP64 : CG_RUN_FP32];
        size_t nref = runs.count[fp64 ? CG_RUN_FP64 : CG_RUN_FP32];
        EXPECT(ngot == nref && ngot > 0, "%zu outputs, %zu from the noise", ngot, nref);
        for (size_t i = 0; i < ngot && i < nref; i++) {
            const cg_tensor *a = &got[i].value->tensor, *b = &ref[i].value->tensor;
            size_t bytes = 0;
            EXPECT(a->dtype == b->dtype && a->numel == b->numel &&
                       cg_tensor_byte_size(a->dtype, a->numel, &bytes) &&
                       memcmp(a->data, b->data, bytes) == 0,
                   "output '%s' (%s): the noise's reference is a plain runtime's bit for bit",
                   got[i].name, fp64 ? "fp64" : "fp32");
        }
        cg_runtime_free_outputs(got, ngot);
        cg_runtime_free(rt);
    }
    cg_noise_runs_free(&runs);
    cg_value_free(x);
done:
    cg_noise_free(n);
    cg_noise_free(nd);
    cg_model_free(cnn);
    cg_model_free(dec);
}

/* The references change their threads between samples (cg_noise_set_
 * threads, as a judge does once its target half is done): the outputs
 * and floors are those of references that keep one thread, bit for bit. */
static void test_thread_switch(void)
{
    cg_model *m = test_load_model("examples/tiny_cnn.onnx");
    if (!m)
        return;
    cg_noise *fixed = NULL, *moved = NULL;
    cg_noise_options o;
    memset(&o, 0, sizeof o);
    cg_error err;
    cg_error_clear(&err);
    EXPECT(cg_noise_init(m, &o, &fixed, &err) == CG_OK, "%s", err.msg);
    o.threads = 1;
    EXPECT(cg_noise_init(m, &o, &moved, &err) == CG_OK, "%s", err.msg);
    int64_t dims[4] = {1, 3, 64, 64};
    const int threads[4] = {1, 3, 2, 0};
    cg_rng rng;
    cg_rng_seed(&rng, 11);
    size_t before = cg_noise_thread_switches();
    for (int s = 0; fixed && moved && s < 4; s++) {
        cg_value *x = NULL;
        EXPECT(cg_value_alloc_tensor(CG_DTYPE_FLOAT, 4, dims, &x, &err) == CG_OK &&
                   cg_random_fill(&x->tensor, NULL, &rng, &err) == CG_OK,
               "%s", err.msg);
        cg_named_value in = {"image", x};
        cg_noise_runs a, b;
        memset(&a, 0, sizeof a);
        memset(&b, 0, sizeof b);
        cg_noise_set_threads(moved, threads[s]);
        EXPECT(cg_noise_add_sample(fixed, &in, 1, &a, NULL, &err) == CG_OK &&
                   cg_noise_add_sample(moved, &in, 1, &b, NULL, &err) == CG_OK,
               "sample %d: %s", s, err.msg);
        for (int r = CG_RUN_FP64; r <= CG_RUN_FP32; r++) {
            bool same = a.count[r] == 1 && b.count[r] == 1;
            const cg_tensor *ta = same ? &a.out[r][0].value->tensor : NULL;
            const cg_tensor *tb = same ? &b.out[r][0].value->tensor : NULL;
            same = same && ta->numel == tb->numel && ta->dtype == tb->dtype &&
                   memcmp(ta->data, tb->data, cg_tensor_bytes(ta)) == 0;
            EXPECT(same, "sample %d at %d threads: the %s reference differs from one thread's",
                   s, threads[s], r == CG_RUN_FP64 ? "fp64" : "fp32");
        }
        cg_noise_runs_free(&a);
        cg_noise_runs_free(&b);
        cg_value_free(x);
    }
    /* 1 -> 3 -> 2 -> 0 (one thread): three changes, each made once */
    size_t switched = cg_noise_thread_switches() - before;
    EXPECT(switched == 3, "the references changed threads %zu times, want 3", switched);
    for (size_t i = 0; fixed && moved && i < cg_noise_output_count(fixed); i++) {
        const cg_noise_output *x = cg_noise_output_get(fixed, i), *y = cg_noise_output_get(moved, i);
        EXPECT(x->v.fp32.dist.count == y->v.fp32.dist.count &&
                   x->v.fp32.ref_max == y->v.fp32.ref_max &&
                   x->v.fp32.m.max_abs == y->v.fp32.m.max_abs &&
                   memcmp(x->v.fp32.dist.bins, y->v.fp32.dist.bins, sizeof x->v.fp32.dist.bins) ==
                       0,
               "output %zu: the same fp32 floor", i);
    }
    cg_noise_free(fixed);
    cg_noise_free(moved);
    /* the runtime's own call: a count outside [0, 256] is refused and the
     * runtime keeps its threads (and runs) */
    cg_runtime *rt = NULL;
    cg_runtime_options ro;
    cg_runtime_options_default(&ro);
    ro.threads = 2;
    EXPECT(cg_runtime_init(m, &ro, &rt, &err) == CG_OK, "%s", err.msg);
    EXPECT(cg_runtime_set_threads(rt, -1, &err) == CG_USAGE && strstr(err.msg, "-1"),
           "-1 threads refused: %s", err.msg);
    EXPECT(cg_runtime_set_threads(rt, 257, &err) == CG_USAGE, "257 threads refused");
    EXPECT(cg_runtime_set_threads(NULL, 2, &err) == CG_USAGE, "no runtime refused");
    cg_value *x = NULL;
    cg_named_value *outs = NULL;
    size_t nouts = 0;
    EXPECT(rt && cg_value_alloc_tensor(CG_DTYPE_FLOAT, 4, dims, &x, &err) == CG_OK &&
               cg_runtime_set_threads(rt, 1, &err) == CG_OK &&
               cg_runtime_run(rt, &(cg_named_value){"image", x}, 1, &outs, &nouts, &err) ==
                   CG_OK && nouts == 1,
           "a run after the refusals and at one thread: %s", err.msg);
    cg_runtime_free_outputs(outs, nouts);
    cg_value_free(x);
    cg_runtime_free(rt);
    cg_model_free(m);
}

/* --- in phases ------------------------------------------------------------------------------ */

static bool same_stats(const cg_noise_stats *a, const cg_noise_stats *b)
{
    return a->m.max_abs == b->m.max_abs && a->m.sum_abs == b->m.sum_abs &&
           a->m.count == b->m.count && a->ref_max == b->ref_max && a->ref_lo == b->ref_lo &&
           a->ref_hi == b->ref_hi && memcmp(&a->dist, &b->dist, sizeof a->dist) == 0;
}

static bool same_value(const cg_noise_value *a, const cg_noise_value *b)
{
    return a && b && a->compared == b->compared && same_stats(&a->fp32, &b->fp32) &&
           same_stats(&a->fp16, &b->fp16);
}

/* Three samples of decisions.onnx the lockstep way (cg_noise_add_sample)
 * and the phased way (every float32 run first, then every float64 run,
 * each runtime freed after its phase, then cg_noise_add_rest): the
 * floors of every output and every watched decision value are the same,
 * bit for bit, and so are the decision values kept. */
static void test_phases(void)
{
    cg_model *m = test_load_model("tests/data/noise/decisions.onnx");
    if (!m)
        return;
    cg_noise_options o;
    memset(&o, 0, sizeof o);
    o.fp16 = true;
    cg_noise *lock = NULL, *ph = NULL;
    cg_error err;
    cg_error_clear(&err);
    EXPECT(cg_noise_init(m, &o, &lock, &err) == CG_OK && cg_noise_init(m, &o, &ph, &err) == CG_OK,
           "%s", err.msg);
    enum { N = 3 };
    cg_value *x[N] = {NULL};
    cg_named_value in[N];
    int64_t dims[3] = {1, 4, 8};
    cg_rng rng;
    cg_rng_seed(&rng, 11);
    for (int i = 0; i < N; i++) {
        EXPECT(cg_value_alloc_tensor(CG_DTYPE_FLOAT, 3, dims, &x[i], &err) == CG_OK &&
                   cg_random_fill(&x[i]->tensor, NULL, &rng, &err) == CG_OK,
               "%s", err.msg);
        in[i] = (cg_named_value){"x", x[i]};
    }
    cg_noise_fp32 f32[N];
    cg_noise_fp64 f64[N];
    memset(f32, 0, sizeof f32);
    memset(f64, 0, sizeof f64);
    size_t kept = 0;
    for (int i = 0; lock && ph && i < N; i++) {
        EXPECT(cg_noise_add_fp32(ph, &in[i], 1, &f32[i], &err) == CG_OK, "%s", err.msg);
        kept += f32[i].seen_count;
    }
    EXPECT(kept > 0, "the float32 runs kept their decision inputs (%zu values)", kept);
    cg_noise_release(ph, false, true);
    for (int i = 0; lock && ph && i < N; i++)
        EXPECT(cg_noise_add_fp64(ph, &in[i], 1, &f64[i], &err) == CG_OK, "%s", err.msg);
    cg_noise_release(ph, true, false);
    for (int i = 0; lock && ph && i < N; i++) {
        cg_noise_runs r1, r2;
        cg_noise_decision_values d1, d2;
        EXPECT(cg_noise_add_sample(lock, &in[i], 1, &r1, &d1, &err) == CG_OK, "%s", err.msg);
        EXPECT(cg_noise_add_rest(ph, &in[i], 1, &f64[i], &f32[i], &r2, &d2, &err) == CG_OK,
               "%s", err.msg);
        EXPECT(d1.count == d2.count && d1.count > 0, "decision values kept: %zu / %zu",
               d1.count, d2.count);
        for (size_t k = 0; k < d1.count && k < d2.count; k++)
            EXPECT(strcmp(d1.names[k], d2.names[k]) == 0 &&
                       d1.values[k]->tensor.numel == d2.values[k]->tensor.numel &&
                       memcmp(d1.values[k]->tensor.data, d2.values[k]->tensor.data,
                              (size_t)d1.values[k]->tensor.numel *
                                  cg_dtype_size(d1.values[k]->tensor.dtype)) == 0,
                   "decision value %s", d1.names[k]);
        cg_noise_runs_free(&r1);
        cg_noise_runs_free(&r2);
        cg_noise_decision_values_free(&d1);
        cg_noise_decision_values_free(&d2);
    }
    if (lock && ph) {
        EXPECT(cg_noise_sample_count(lock) == N && cg_noise_sample_count(ph) == N, "%d samples",
               N);
        for (size_t i = 0; i < cg_noise_output_count(lock); i++) {
            const cg_noise_output *a = cg_noise_output_get(lock, i), *b = cg_noise_output_get(ph, i);
            EXPECT(same_value(&a->v, &b->v), "output %s: the same floors (fp32 %g / %g)",
                   a->v.name, a->v.fp32.m.max_abs, b->v.fp32.m.max_abs);
        }
        const char *watched[] = {"logits", "sel", "qs"};
        size_t found = 0;
        for (size_t k = 0; k < sizeof watched / sizeof *watched; k++) {
            const cg_noise_value *a = cg_noise_value_find(lock, watched[k]);
            const cg_noise_value *b = cg_noise_value_find(ph, watched[k]);
            if (!a && !b)
                continue;
            found += a && a->compared && a->fp32.m.count > 0;
            EXPECT(same_value(a, b), "watched %s: the same floors (fp32 %g / %g)", watched[k],
                   a ? a->fp32.m.max_abs : -1, b ? b->fp32.m.max_abs : -1);
        }
        EXPECT(found > 0, "a watched decision input has an fp32 floor");
    }
    for (int i = 0; i < N; i++) {
        cg_noise_fp32_free(&f32[i]);
        cg_noise_fp64_free(&f64[i]);
        cg_value_free(x[i]);
    }
    cg_noise_free(lock);
    cg_noise_free(ph);
    cg_model_free(m);
}

int main(void)
{
    test_stats();
    test_decision_map();
    test_flips();
    test_floors();
    test_verdicts();
    test_vacuous();
    test_shape_flip();
    test_run_stops();
    test_unobserved_references();
    test_thread_switch();
    test_phases();
    return test_done("test_noise");
}
