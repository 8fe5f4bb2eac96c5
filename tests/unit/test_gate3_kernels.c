/*
 * Gate 3 and bisection against executing targets whose kernels we wrote to
 * be right or wrong (#14): the verdicts must tell a kernel that only sums
 * in another order from one that is wrong.
 *
 * Two executing targets take the example CNN's GlobalAveragePool (the mean
 * over each 8x8 plane feeding the classifier); everything else stays on the
 * reference CPU runtime:
 *  - "gap-reversed": a correct kernel that sums each plane in float, last
 *    element first (the reference adds four float lanes, then in double).
 *    Its difference is summation-order noise: gate 3 passes within fp32
 *    noise, and bisect finds no tensor beyond its floor.
 *  - "gap-off-by-one": the same loop stopping one element short (a classic
 *    bound error), still divided by the plane's size. Gate 3 fails with a
 *    wrong result; the bisection names the GlobalAveragePool's output as
 *    the first tensor beyond its fp32 floor, the Relu before it as the last
 *    match, and triages a wrong kernel, not precision.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "convgate/bisect.h"
#include "convgate/gate.h"
#include "convgate/lower.h"
#include "convgate/model.h"
#include "convgate/samples.h"
#include "convgate/target.h"
#include "convgate/targetpath.h"
#include "convgate/tensor.h"
#include "core/threadpool.h"
#include "run/exec.h"
#include "target/registry.h"
#include "testlib.h"
#include "verify/verify_internal.h"

/* GAP_FAIL_SECOND: as GAP_REVERSED, but its second run fails */
typedef enum gap_mode { GAP_REVERSED, GAP_OFF_BY_ONE, GAP_FAIL_SECOND } gap_mode;

static bool gap_takes(const cg_support_query *q, char *reason, size_t len)
{
    const cg_node *n = q->node;
    if (!n->op_type || strcmp(n->op_type, "GlobalAveragePool") != 0) {
        snprintf(reason, len, "takes GlobalAveragePool only, not %s",
                 n->op_type ? n->op_type : "?");
        return false;
    }
    const cg_value_type *vt = n->input_count ? cg_type_env_get(q->types, n->inputs[0]) : NULL;
    if (!vt || !vt->known || vt->dtype != CG_DTYPE_FLOAT || vt->rank != 4) {
        snprintf(reason, len, "takes float32 NCHW with a known type");
        return false;
    }
    return true;
}

static bool gap_supports(const cg_target *t, const cg_support_query *q, char *reason, size_t len)
{
    (void)t;
    return gap_takes(q, reason, len);
}

typedef struct gap_state {
    gap_mode mode;
    int runs;
} gap_state;

static cg_status gap_compile(const cg_target *t, const cg_partition_desc *p, void **state,
                             cg_error *err)
{
    if (p->node_count != 1 || p->input_count != 1 || p->output_count != 1)
        return cg_error_set(err, CG_UNSUPPORTED, "%s: one GlobalAveragePool per partition, "
                            "got %zu nodes", t->name, p->node_count);
    gap_state *s = malloc(sizeof *s);
    if (!s)
        return cg_error_set(err, CG_NOMEM, "%s: out of memory", t->name);
    s->mode = *(const gap_mode *)t->impl;
    s->runs = 0;
    *state = s;
    return CG_OK;
}

static cg_status gap_run(void *state, const cg_value *const *inputs, cg_value **outputs,
                         cg_error *err)
{
    gap_state *s = state;
    const cg_value *x = inputs[0];
    if (s->mode == GAP_FAIL_SECOND && ++s->runs == 2)
        return cg_error_set(err, CG_RUNTIME, "gap: its second run fails");
    if (!x || x->kind != CG_VALUE_TENSOR || x->tensor.dtype != CG_DTYPE_FLOAT ||
        x->tensor.rank != 4)
        return cg_error_set(err, CG_RUNTIME, "gap: no float NCHW input");
    int64_t dims[4] = {x->tensor.dims[0], x->tensor.dims[1], 1, 1};
    cg_status st = cg_value_alloc_tensor(CG_DTYPE_FLOAT, 4, dims, &outputs[0], err);
    if (st != CG_OK)
        return st;
    const float *a = x->tensor.data;
    float *y = outputs[0]->tensor.data;
    int64_t planes = dims[0] * dims[1], n = x->tensor.dims[2] * x->tensor.dims[3];
    for (int64_t p = 0; p < planes; p++) {
        const float *xp = a + p * n;
        float sum = 0;
        if (s->mode != GAP_OFF_BY_ONE)
            for (int64_t i = n - 1; i >= 0; i--)
                sum += xp[i];
        else
            for (int64_t i = 0; i < n - 1; i++) /* the bound error */
                sum += xp[i];
        y[p] = sum / (float)n;
    }
    return CG_OK;
}

static void gap_release(void *state)
{
    free(state);
}

static const cg_target_vtable gap_vtable = {gap_supports, gap_compile, gap_run, gap_release,
                                            NULL};

static cg_target gap_target(const char *name, const gap_mode *mode)
{
    cg_target t;
    memset(&t, 0, sizeof t);
    t.name = name;
    t.version = "1";
    t.description = "a GlobalAveragePool kernel (tests/unit/test_gate3_kernels.c)";
    t.source = "compile()";
    t.kind = CG_TARGET_EXECUTING;
    t.fallback = CG_FALLBACK_CPU;
    t.precision = CG_PRECISION_FP32;
    t.layout = CG_LAYOUT_NCHW;
    t.vt = &gap_vtable;
    t.impl = (void *)mode;
    return t;
}

static void run_gate_schedule(const cg_model *m, const cg_target *t, const cg_sample_set *s,
                              cg_gate_schedule schedule, cg_gate_report *rep)
{
    cg_gate_options opt;
    cg_error err;
    cg_error_clear(&err);
    memset(&opt, 0, sizeof opt);
    memset(rep, 0, sizeof *rep);
    opt.targets = &t;
    opt.target_count = 1;
    opt.samples = s;
    opt.schedule = schedule;
    /* the target takes one node, a sliver of the time: no bar, so gate 3
     * judges its kernel */
    opt.have_min_coverage = true;
    opt.min_coverage = 0;
    EXPECT(cg_gate_run(m, "tiny_cnn.onnx", &opt, rep, &err) == CG_OK, "%s: %s", t->name,
           err.msg);
    EXPECT(rep->converts == CG_GATE_PASS && rep->runs == CG_GATE_PASS &&
               strncmp(rep->residency, "1/18 nodes on ", 14) == 0,
           "%s: the GlobalAveragePool alone on the target: %s (%s)", t->name, rep->residency,
           rep->reason);
}

static void run_gate(const cg_model *m, const cg_target *t, const cg_sample_set *s,
                     cg_gate_report *rep)
{
    run_gate_schedule(m, t, s, CG_GATE_SCHEDULE_AUTO, rep);
}

static void bisect(const cg_model *m, const cg_target *t, const cg_sample *s,
                   cg_bisect_result *r)
{
    cg_target_path_options tpo;
    cg_bisect_options bo;
    cg_dim_binding batch = {"batch", s->inputs[0].value->tensor.dims[0]};
    cg_error err;
    cg_error_clear(&err);
    memset(&tpo, 0, sizeof tpo);
    memset(&bo, 0, sizeof bo);
    memset(r, 0, sizeof *r);
    tpo.targets = &t;
    tpo.target_count = 1;
    tpo.dims = &batch;
    tpo.dim_count = 1;
    bo.reference.model = m;
    bo.candidate.model = m;
    bo.candidate.path = &tpo;
    bo.triage = true;
    EXPECT(cg_bisect_run(&bo, s->inputs, s->input_count, r, &err) == CG_OK, "%s: %s",
           t->name, err.msg);
}

/* How gate 3 schedules a judge's samples: the two halves side by side,
 * sample by sample; the target's runs ahead on a thread of their own
 * (cg_judge_ahead); or in phases, one runtime at a time (cg_judge_phases) */
typedef enum judge_mode { JUDGE_LOCKSTEP, JUDGE_AHEAD, JUDGE_PHASES } judge_mode;

/* The judge over every sample of s, as gate 3 drives it (the figures
 * against the floors), in mode. *alive_after_phases (when not NULL): the
 * runtimes alive right after cg_judge_phases. */
static cg_status judge_samples_mode(const cg_model *m, const cg_target *t,
                                    const cg_sample_set *s, judge_mode mode, int threads_after,
                                    size_t *alive_after_phases, cg_parity_report *rep,
                                    cg_error *err)
{
    cg_parity_options po;
    cg_tolerance_args tol;
    cg_judge *j = NULL;
    memset(&tol, 0, sizeof tol);
    cg_error_clear(err);
    cg_parity_options_for_path(&po, &t, 1, NULL, 0, NULL, CG_ACCUMULATE_PROFILE, NULL, &tol, 0);
    po.threads_after = threads_after;
    cg_status st = cg_judge_init(m, &po, s->count, rep, &j, err);
    if (st == CG_OK && mode == JUDGE_AHEAD)
        st = cg_judge_ahead(j, s->samples, s->count, err);
    if (st == CG_OK && mode == JUDGE_PHASES) {
        st = cg_judge_phases(j, s->samples, s->count, NULL, err);
        if (alive_after_phases)
            *alive_after_phases = cg_runtimes_alive();
    }
    for (size_t i = 0; st == CG_OK && i < s->count; i++)
        st = cg_judge_add(j, &s->samples[i], i, NULL, err);
    if (st == CG_OK)
        st = cg_judge_wait(j, err);
    if (st == CG_OK)
        st = cg_judge_finish(j, err);
    cg_judge_free(j);
    return st;
}

static cg_status judge_samples_after(const cg_model *m, const cg_target *t,
                                     const cg_sample_set *s, bool ahead, int threads_after,
                                     cg_parity_report *rep, cg_error *err)
{
    return judge_samples_mode(m, t, s, ahead ? JUDGE_AHEAD : JUDGE_LOCKSTEP, threads_after,
                              NULL, rep, err);
}

static cg_status judge_samples(const cg_model *m, const cg_target *t, const cg_sample_set *s,
                               bool ahead, cg_parity_report *rep, cg_error *err)
{
    return judge_samples_after(m, t, s, ahead, 0, rep, err);
}

/* Whether two judgements of the same samples agree bit for bit. */
static bool same_judgement(const cg_parity_report *a, const cg_parity_report *b)
{
    if (a->pass != b->pass || a->output_count != b->output_count ||
        a->sample_count != b->sample_count)
        return false;
    for (size_t k = 0; k < a->output_count; k++) {
        const cg_parity_output *x = &a->outputs[k], *y = &b->outputs[k];
        if (x->merged.max_abs != y->merged.max_abs || x->merged.max_rel != y->merged.max_rel ||
            x->merged.mismatches != y->merged.mismatches ||
            x->merged.sum_abs != y->merged.sum_abs || x->error.m.max_abs != y->error.m.max_abs ||
            x->floor32.m.max_abs != y->floor32.m.max_abs ||
            x->verdict.verdict != y->verdict.verdict || x->verdict.ratio != y->verdict.ratio ||
            strcmp(x->verdict.reason, y->verdict.reason) != 0)
            return false;
        for (size_t i = 0; i < a->sample_count; i++)
            if (x->samples[i].error != y->samples[i].error ||
                x->samples[i].max_abs != y->samples[i].max_abs ||
                x->samples[i].pass != y->samples[i].pass)
                return false;
    }
    return true;
}

/* Whether a and b type every value of m's main graph alike (initializers,
 * inputs, node outputs: dtype, shape, constness, dynamic dims) and carry
 * the same notes. */
static bool same_types(const cg_model *m, const cg_type_env *a, const cg_type_env *b)
{
    const cg_graph *g = m->graph;
    size_t names = g->initializer_count + g->input_count, seen = 0;
    for (size_t n = 0; n < g->node_count; n++)
        names += g->nodes[n].output_count;
    for (size_t k = 0; k < names; k++) {
        size_t i = k;
        const char *name;
        if (i < g->initializer_count) {
            name = g->initializers[i].name;
        } else if ((i -= g->initializer_count) < g->input_count) {
            name = g->inputs[i].name;
        } else {
            i -= g->input_count;
            size_t n = 0;
            while (i >= g->nodes[n].output_count)
                i -= g->nodes[n++].output_count;
            name = g->nodes[n].outputs[i];
        }
        const cg_value_type *x = cg_type_env_get(a, name), *y = cg_type_env_get(b, name);
        if (!x || !y || x->known != y->known || x->dtype != y->dtype || x->rank != y->rank ||
            memcmp(x->dims, y->dims, sizeof x->dims) != 0 || x->is_const != y->is_const ||
            x->is_graph_input != y->is_graph_input ||
            cg_type_env_dynamic_dims(a, name) != cg_type_env_dynamic_dims(b, name))
            return false;
        seen += x->known;
    }
    if (cg_type_env_note_count(a) != cg_type_env_note_count(b))
        return false;
    for (size_t i = 0; i < cg_type_env_note_count(a); i++)
        if (strcmp(cg_type_env_note(a, i), cg_type_env_note(b, i)) != 0)
            return false;
    return seen > 0;
}

/* Gives every dim declared 'batch' the size 1: the model then declares
 * numbers only. */
static void fix_batch(cg_model *m)
{
    cg_value_info *vis[2] = {m->graph->inputs, m->graph->outputs};
    size_t counts[2] = {m->graph->input_count, m->graph->output_count};
    for (int w = 0; w < 2; w++)
        for (size_t i = 0; i < counts[w]; i++)
            for (size_t d = 0; vis[w][i].type && vis[w][i].type->shape &&
                               d < vis[w][i].type->shape->rank; d++) {
                cg_dim *dim = &vis[w][i].type->shape->dims[d];
                if (dim->param && strcmp(dim->param, "batch") == 0)
                    *dim = (cg_dim){.value = 1, .has_value = true};
            }
}

int main(void)
{
    static const gap_mode reversed = GAP_REVERSED, off_by_one = GAP_OFF_BY_ONE,
                          fail_second = GAP_FAIL_SECOND;
    cg_target rev = gap_target("gap-reversed", &reversed);
    cg_target bad = gap_target("gap-off-by-one", &off_by_one);
    cg_model *cnn = test_load_model("examples/tiny_cnn.onnx");
    cg_sample_set s = {0};
    cg_gate_report rep;
    cg_bisect_result br;
    cg_error err;
    char dir[1024];
    cg_error_clear(&err);
    memset(&rep, 0, sizeof rep);
    memset(&br, 0, sizeof br);
    if (!cnn)
        return test_done("test_gate3_kernels");
    snprintf(dir, sizeof dir, "%s/examples/tiny_cnn_inputs", CG_SOURCE_DIR);
    EXPECT(cg_samples_load_dir(cnn, dir, 0, &s, &err) == CG_OK && s.count == 2, "%s", err.msg);
    if (s.count != 2)
        goto done;

    /* summation order: noise, not a failure */
    run_gate(cnn, &rev, &s, &rep);
    EXPECT(rep.pass && rep.matches == CG_GATE_PASS && rep.judged.by_noise &&
               rep.judged.output_count == 1 &&
               rep.judged.outputs[0].verdict.verdict == CG_VERDICT_MATCH_FP32 && !rep.bisected,
           "reversed sums: %s", rep.reason);
    /* --timings: gate 3's phases were timed, the peak RSS noted */
    EXPECT(rep.timings.cpu_s[CG_GATE_PHASE_REFERENCE] > 0 &&
               rep.timings.cpu_s[CG_GATE_PHASE_TARGET] > 0 &&
               rep.timings.wall_s[CG_GATE_PHASE_SAMPLES] > 0 &&
               rep.timings.peak_rss_mib[CG_GATE_PHASE_SAMPLES] > 0 &&
               rep.timings.total_wall_s >= rep.timings.wall_s[CG_GATE_PHASE_SAMPLES],
           "timings: reference %g s, target %g s, samples %g s wall, total %g s",
           rep.timings.cpu_s[CG_GATE_PHASE_REFERENCE], rep.timings.cpu_s[CG_GATE_PHASE_TARGET],
           rep.timings.wall_s[CG_GATE_PHASE_SAMPLES], rep.timings.total_wall_s);
    /* the reference and the target run side by side: the figures are
     * those of every other run, bit for bit */
    {
        cg_gate_report again;
        const cg_parity_output *a = &rep.judged.outputs[0], *b;
        run_gate(cnn, &rev, &s, &again);
        b = &again.judged.outputs[0];
        EXPECT(again.judged.output_count == 1 && a->merged.max_abs == b->merged.max_abs &&
                   a->error.m.max_abs == b->error.m.max_abs &&
                   a->floor32.m.max_abs == b->floor32.m.max_abs &&
                   a->samples[1].error == b->samples[1].error,
               "a second gate: max_abs %g / %g, error %g / %g", a->merged.max_abs,
               b->merged.max_abs, a->error.m.max_abs, b->error.m.max_abs);
        cg_gate_report_free(&again);
    }
    cg_gate_report_free(&rep);
    for (size_t i = 0; i < s.count; i++) {
        bisect(cnn, &rev, &s.samples[i], &br);
        EXPECT(br.by_noise && !br.diverged && br.divergent == 0 && br.compared >= 18,
               "reversed sums, sample %zu: %zu of %zu compared beyond the floor (first '%s')", i,
               br.divergent, br.compared, br.diverged ? br.first_divergent.tensor : "");
        /* the kernel's own output does differ from the reference's, a little */
        bool seen = false;
        for (size_t k = 0; k < br.point_count; k++)
            if (br.points[k].compared &&
                strcmp(cnn->graph->nodes[br.points[k].node_index].op_type,
                       "GlobalAveragePool") == 0) {
                seen = true;
                EXPECT(br.points[k].metrics.max_abs > 0 && br.points[k].metrics.max_abs < 1e-6,
                       "GlobalAveragePool max_abs %g", br.points[k].metrics.max_abs);
            }
        EXPECT(seen, "the GlobalAveragePool's output was compared");
        cg_bisect_result_free(&br);
    }

    /* one element short: a wrong kernel, caught, and called wrong */
    run_gate(cnn, &bad, &s, &rep);
    EXPECT(!rep.pass && rep.matches == CG_GATE_FAIL && rep.judged.output_count == 1 &&
               rep.judged.outputs[0].verdict.verdict == CG_VERDICT_WRONG,
           "off by one: %s", rep.reason);
    EXPECT(rep.bisected && rep.bisect.diverged && rep.bisect.by_noise &&
               strcmp(rep.bisect.first_divergent.op_type, "GlobalAveragePool") == 0 &&
               strcmp(rep.bisect.first_divergent.placed_on, "gap-off-by-one") == 0 &&
               rep.bisect.first_divergent.precision == CG_PRECISION_FP32 &&
               rep.bisect.first_divergent.judgement.ratio > 1e3 &&
               rep.bisect.triage == CG_TRIAGE_WRONG && rep.bisect.verdict == CG_VERDICT_WRONG,
           "off by one, bisect: %s", rep.reason);
    EXPECT(rep.bisect.has_last_matching &&
               strcmp(rep.bisect.last_matching.op_type, "Relu") == 0,
           "the last match is the Relu feeding the pool: %s",
           rep.bisect.has_last_matching ? rep.bisect.last_matching.op_type : "(none)");
    EXPECT(strstr(rep.reason, "wrong") && strstr(rep.reason, "GlobalAveragePool") &&
               !strstr(rep.reason, "precision"),
           "%s", rep.reason);
    cg_gate_report_free(&rep);

    /* the target's runs ahead of the references, on a thread of their own
     * (cg_judge_ahead, as gate 3 runs them): the figures and verdicts are
     * those of the two halves side by side, sample by sample, and a target
     * run that fails gives the same error. Three random samples of one
     * batch size (the files' two differ: those run side by side) */
    {
        cg_parity_report lock, ahead;
        cg_error e2;
        cg_dim_binding one = {"batch", 1};
        cg_sample_set rs = {0};
        EXPECT(cg_samples_random(cnn, 3, NULL, &one, 1, 0, &rs, &err) == CG_OK && rs.count == 3,
               "%s", err.msg);
        size_t before = cg_judge_samples_ahead();
        EXPECT(judge_samples(cnn, &rev, &rs, false, &lock, &err) == CG_OK, "%s", err.msg);
        EXPECT(cg_judge_samples_ahead() == before, "side by side: no sample ahead");
        EXPECT(judge_samples(cnn, &rev, &rs, true, &ahead, &err) == CG_OK, "%s", err.msg);
        size_t ran = cg_judge_samples_ahead() - before;
        if (cg_threadpool_cpu_count() >= 2)
            EXPECT(ran == rs.count, "two cores: the target ran %zu of %zu samples ahead", ran,
                   rs.count);
        else
            EXPECT(ran == 0, "one core: nothing ahead, ran %zu", ran);
        EXPECT(same_judgement(&lock, &ahead) && ahead.pass &&
                   ahead.outputs[0].verdict.verdict == CG_VERDICT_MATCH_FP32,
               "ahead: the same figures (max_abs %g / %g, error %g / %g)",
               lock.outputs[0].merged.max_abs, ahead.outputs[0].merged.max_abs,
               lock.outputs[0].error.m.max_abs, ahead.outputs[0].error.m.max_abs);
        /* the target half done, the references take its core (threads_
         * after, the CLI's default): the same figures, side by side and
         * ahead. When the switch lands depends on which half finishes
         * first, so test_noise counts it on fixed points */
        for (int mode = 0; mode < 2; mode++) {
            cg_parity_report more;
            EXPECT(judge_samples_after(cnn, &rev, &rs, mode == 1, 3, &more, &err) == CG_OK,
                   "%s", err.msg);
            EXPECT(same_judgement(&lock, &more),
                   "%s, 3 threads after the target: the same figures (max_abs %g / %g)",
                   mode ? "ahead" : "side by side", lock.outputs[0].merged.max_abs,
                   more.outputs[0].merged.max_abs);
            cg_parity_report_free(&more);
        }
        /* in phases (gate --schedule phased): the target path on every
         * sample, then the float64 reference, then the rest, one runtime
         * alive at a time: once cg_judge_phases is done none of the
         * judge's runtimes is left (the float32 one comes back for the
         * adds), and the figures are bit for bit those of lockstep, at
         * one thread and at three */
        for (int th = 0; th < 2; th++) {
            cg_parity_report phased;
            size_t alive0 = cg_runtimes_alive(), alive = SIZE_MAX;
            EXPECT(judge_samples_mode(cnn, &rev, &rs, JUDGE_PHASES, th ? 3 : 0, &alive,
                                      &phased, &err) == CG_OK,
                   "%s", err.msg);
            EXPECT(alive == alive0, "phases: %zu runtimes alive after the phases, %zu before",
                   alive, alive0);
            EXPECT(cg_runtimes_alive() == alive0, "phases: every runtime freed");
            EXPECT(same_judgement(&lock, &phased) && phased.pass,
                   "phases, %d threads: the same figures (max_abs %g / %g, error %g / %g)",
                   th ? 3 : 1, lock.outputs[0].merged.max_abs,
                   phased.outputs[0].merged.max_abs, lock.outputs[0].error.m.max_abs,
                   phased.outputs[0].error.m.max_abs);
            cg_parity_report_free(&phased);
        }
        cg_parity_report_free(&lock);
        cg_parity_report_free(&ahead);
        cg_target fails = gap_target("gap-fails-second", &fail_second);
        cg_error e3;
        cg_status s1 = judge_samples(cnn, &fails, &rs, false, &lock, &err);
        cg_status s2 = judge_samples(cnn, &fails, &rs, true, &ahead, &e2);
        cg_parity_report phased;
        cg_status s3 = judge_samples_mode(cnn, &fails, &rs, JUDGE_PHASES, 0, NULL, &phased, &e3);
        EXPECT(s1 == CG_RUNTIME && s2 == s1 && strcmp(err.msg, e2.msg) == 0 &&
                   strstr(err.msg, "second run fails"),
               "a failing second run: '%s' / '%s'", err.msg, e2.msg);
        EXPECT(s3 == s1 && strcmp(err.msg, e3.msg) == 0,
               "a failing second run in phases: '%s' / '%s'", err.msg, e3.msg);
        cg_parity_report_free(&lock);
        cg_parity_report_free(&ahead);
        cg_parity_report_free(&phased);
        cg_sample_set_free(&rs);
        cg_error_clear(&err);
    }

    /* targets that partition a lowering (convgate-init, xnnpack's): gate 2
     * lowers the model once, and gate 3's target path places by that
     * lowering instead of lowering again (a typing run and a copy of the
     * graph); the verdicts and the bisection are those of every gate. On
     * image_0 alone: a sample of other dims needs its own lowering. */
    rev.lowering = bad.lowering = "convgate-init";
    {
        cg_sample_set one = s;
        one.count = 1;
        size_t before = cg_lowerings_made();
        run_gate(cnn, &rev, &one, &rep);
        size_t made = cg_lowerings_made() - before;
        EXPECT(rep.pass && rep.lowered && strcmp(rep.lowered->lowering, "convgate-init") == 0 &&
                   rep.judged.outputs[0].verdict.verdict == CG_VERDICT_MATCH_FP32,
               "reversed sums on a lowering: %s", rep.reason);
        EXPECT(made == 1, "a gate on a lowering lowers once, made %zu", made);
        cg_gate_report_free(&rep);
        run_gate(cnn, &bad, &s, &rep);
        EXPECT(!rep.pass && rep.judged.outputs[0].verdict.verdict == CG_VERDICT_WRONG &&
                   rep.bisected && rep.bisect.diverged &&
                   strcmp(rep.bisect.first_divergent.op_type, "GlobalAveragePool") == 0 &&
                   rep.bisect.triage == CG_TRIAGE_WRONG,
               "off by one on a lowering, bisect: %s", rep.reason);
        /* the batch is a symbol bound to the samples' 1: the lowering's
         * environment (a runtime's view: bound symbols stay dynamic) is
         * not gate 3's */
        EXPECT(rep.lowered && rep.lowered->source_types &&
                   !cg_type_env_fixed_dims(rep.lowered->source_types),
               "a bound symbol: the lowering's types are not fixed-dim");
        cg_gate_report_free(&rep);
    }

    /* every dim a number, random samples: the lowering typed the source on
     * sample 0 and gate 3 types it by that environment, which is exactly
     * the one a typing run of its own makes; two typing runs in all (the
     * lowering's, and gate 2's of the lowered graph), not three */
    fix_batch(cnn);
    {
        cg_sample_set rs = {0};
        cg_type_env *own = NULL;
        EXPECT(cg_samples_random(cnn, 2, NULL, NULL, 0, 0, &rs, &err) == CG_OK, "%s",
               err.msg);
        size_t before = cg_type_env_runs_made();
        run_gate(cnn, &rev, &rs, &rep);
        size_t runs = cg_type_env_runs_made() - before;
        EXPECT(rep.pass && rep.judged.outputs[0].verdict.verdict == CG_VERDICT_MATCH_FP32,
               "reversed sums, fixed dims, on a lowering: %s", rep.reason);
        EXPECT(runs == 2, "a gate on a lowering of a fixed-dim model types by 2 runs, made %zu",
               runs);
        /* gate 2 times the nodes on its typing run: every node has a time */
        double timed = 0;
        size_t untimed = 0;
        for (size_t v = 0; rep.node_ms && rep.lowered && v < rep.lowered->model->graph->node_count;
             v++) {
            timed += rep.node_ms[v];
            untimed += !(rep.node_ms[v] > 0);
        }
        EXPECT(rep.node_ms && timed > 0 && untimed == 0 && rep.reference_ms > 0,
               "gate 2's node times from its typing run: %g ms in all, %zu nodes without",
               timed, untimed);
        EXPECT(rep.lowered && cg_type_env_fixed_dims(rep.lowered->source_types),
               "fixed dims: the lowering's types say so");
        EXPECT(rs.count == 2 &&
                   cg_type_env_build_fed(cnn, NULL, 0, NULL, rs.samples[0].inputs,
                                         rs.samples[0].input_count, &own, &err) == CG_OK &&
                   rep.lowered && same_types(cnn, rep.lowered->source_types, own),
               "the lowering's types are those of a typing run on sample 0 (%s)", err.msg);
        cg_type_env_free(own);
        cg_gate_report_free(&rep);
        cg_sample_set_free(&rs);
    }

    /* and so gate 3 starts beside gate 2, right after the lowering (its
     * target ahead on the second core while gate 2 types and times the
     * lowered graph): the judgement is that of a judge made afterwards,
     * sample by sample, bit for bit; a gate 2 that fails frees it unused */
    {
        cg_sample_set rs = {0};
        cg_parity_report lock;
        EXPECT(cg_samples_random(cnn, 3, NULL, NULL, 0, 0, &rs, &err) == CG_OK, "%s", err.msg);
        size_t before = cg_gate3_early_starts();
        run_gate(cnn, &rev, &rs, &rep);
        EXPECT(cg_gate3_early_starts() - before == 1, "gate 3 started beside gate 2");
        EXPECT(judge_samples(cnn, &rev, &rs, false, &lock, &err) == CG_OK, "%s", err.msg);
        EXPECT(rep.pass && same_judgement(&rep.judged, &lock),
               "early: the same judgement (max_abs %g / %g, error %g / %g): %s",
               rep.judged.outputs[0].merged.max_abs, lock.outputs[0].merged.max_abs,
               rep.judged.outputs[0].error.m.max_abs, lock.outputs[0].error.m.max_abs,
               rep.reason);
        EXPECT(rep.timings.schedule == CG_GATE_SCHEDULE_OVERLAP &&
                   rep.timings.weight_bytes > 0 &&
                   rep.timings.weight_bytes < CG_GATE_PHASED_WEIGHT_BYTES,
               "auto: a small model overlaps (%s, %llu bytes of weights)",
               cg_gate_schedule_name(rep.timings.schedule),
               (unsigned long long)rep.timings.weight_bytes);
        cg_gate_report_free(&rep);
        /* --schedule phased: no early start, the same judgement; a wrong
         * kernel is still bisected (its own target path: gate 3's went
         * with its phase) */
        before = cg_gate3_early_starts();
        run_gate_schedule(cnn, &rev, &rs, CG_GATE_SCHEDULE_PHASED, &rep);
        EXPECT(cg_gate3_early_starts() == before, "phased: gate 3 does not start beside gate 2");
        EXPECT(rep.pass && rep.timings.schedule == CG_GATE_SCHEDULE_PHASED &&
                   same_judgement(&rep.judged, &lock),
               "phased: the same judgement (max_abs %g / %g): %s",
               rep.judged.outputs[0].merged.max_abs, lock.outputs[0].merged.max_abs,
               rep.reason);
        cg_gate_report_free(&rep);
        run_gate_schedule(cnn, &bad, &rs, CG_GATE_SCHEDULE_PHASED, &rep);
        EXPECT(!rep.pass && rep.judged.outputs[0].verdict.verdict == CG_VERDICT_WRONG &&
                   rep.bisected && rep.bisect.diverged &&
                   strcmp(rep.bisect.first_divergent.op_type, "GlobalAveragePool") == 0 &&
                   rep.bisect.triage == CG_TRIAGE_WRONG,
               "phased, off by one, bisect: %s", rep.reason);
        cg_parity_report_free(&lock);
        cg_gate_report_free(&rep);
        cg_gate_options opt;
        const cg_target *tp = &rev;
        memset(&opt, 0, sizeof opt);
        opt.targets = &tp;
        opt.target_count = 1;
        opt.samples = &rs;
        opt.require_full = true; /* one node of 18 on the target: gate 2 fails */
        before = cg_gate3_early_starts();
        EXPECT(cg_gate_run(cnn, "tiny_cnn.onnx", &opt, &rep, &err) == CG_OK &&
                   rep.runs == CG_GATE_FAIL && rep.matches == CG_GATE_NOT_RUN &&
                   rep.judged.output_count == 0 && cg_gate3_early_starts() - before == 1,
               "gate 2 fails: gate 3 not run (%s) %s", rep.reason, err.msg);
        cg_gate_report_free(&rep);
        cg_sample_set_free(&rs);
    }
done:
    cg_sample_set_free(&s);
    cg_model_free(cnn);
    return test_done("test_gate3_kernels");
}
