/* Rewrite tests (src/rewrite/): the mutable graph's edits (fresh names
 * against every name of the model, subgraphs included; rewiring of graph
 * outputs by renaming or an Identity; a producer appended after its reader
 * emitted first; value_info kept only for values that still exist; the
 * source's own dead code left alone), each cleanup of the catalog alone on
 * tests/data/rewrite/cleanups.onnx, a rewrite refused on numerics, opt-in,
 * the catalog's names and the deployment lists. The compatibility rewrites'
 * residency is tested by tests/scripts/rewrite_cli.sh. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "convgate/assign.h"
#include "convgate/check.h"
#include "convgate/lower.h"
#include "convgate/rewrite.h"
#include "convgate/samples.h"
#include "rewrite/rgraph.h"
#include "testlib.h"

#define DATA CG_SOURCE_DIR "/tests/data/rewrite/"

/* x -> Relu(r) -> Neg(y); y is the output; value_info for r; a Loop-free If
 * whose branch reads "r" would complicate: keep one subgraph-free model and
 * a second with a subgraph for the names. */
static cg_model *small_model(void)
{
    cg_model *m = test_model_new(13);
    cg_graph *g = test_graph_new(m, "small", 8);
    m->graph = g;
    int64_t d[2] = {2, 3};
    test_graph_input(g, "x", test_type(m, CG_DTYPE_FLOAT, 2, d));
    test_graph_output(g, "y", test_type(m, CG_DTYPE_FLOAT, 2, d));
    test_node(m, g, "Relu", "relu", "x", "r");
    test_node(m, g, "Neg", "neg", "r", "y");
    test_node(m, g, "Sigmoid", "dead", "x", "unused");
    g->value_infos = cg_arena_alloc(m->arena, 2 * sizeof *g->value_infos);
    memset(g->value_infos, 0, 2 * sizeof *g->value_infos);
    g->value_infos[0].name = "r";
    g->value_infos[0].type = test_type(m, CG_DTYPE_FLOAT, 2, d);
    g->value_info_count = 1;
    return m;
}

static bool model_has_node(const cg_model *m, const char *op)
{
    for (size_t i = 0; i < m->graph->node_count; i++)
        if (strcmp(m->graph->nodes[i].op_type, op) == 0)
            return true;
    return false;
}

static bool checks(const cg_model *m)
{
    cg_check_report rep;
    cg_error err;
    cg_error_clear(&err);
    bool ok = cg_check_model(m, NULL, &rep, &err) == CG_OK && rep.error_count == 0;
    if (!ok)
        fprintf(stderr, "check: %s\n", err.msg);
    cg_check_report_free(&rep);
    return ok;
}

static void test_graph_edits(void)
{
    cg_model *m = small_model();
    rw_graph g;
    cg_error err;
    cg_error_clear(&err);
    EXPECT(rw_load(&g, m, &err) == CG_OK, "%s", err.msg);
    /* fresh names avoid every name in use */
    const char *f = rw_fresh(&g, "r");
    EXPECT(f && strcmp(f, "r") != 0 && strcmp(f, "r_2") == 0, "fresh name: %s", f ? f : "NULL");
    const char *f2 = rw_fresh(&g, "r");
    EXPECT(f2 && strcmp(f2, "r_3") == 0, "second fresh name: %s", f2 ? f2 : "NULL");
    EXPECT(rw_producer(&g, "r") == 0 && rw_producer(&g, "x") == RW_NONE, "producers");
    size_t cons[4];
    EXPECT(rw_consumers(&g, "x", cons, 4) == 2 && cons[0] == 0 && cons[1] == 2, "consumers of x");
    /* replace the graph output's producer by Abs(r) appended at the end:
     * the output keeps its name through a rename of the new value */
    rw_kill(&g, 1);
    const char *in[1] = {"r"};
    size_t abs_node = rw_add_node(&g, "Abs", "abs", in, 1, NULL, 1);
    EXPECT(abs_node == 3, "appended at %zu", abs_node);
    EXPECT(rw_replace(&g, "y", rw_out(&g, abs_node, 0)), "replace the output");
    EXPECT(strcmp(rw_out(&g, abs_node, 0), "y") == 0, "the new value takes the output's name");
    /* an appended producer read by an earlier node: emission reorders */
    const char *a_out[1] = {NULL};
    size_t late = rw_add_node(&g, "Exp", "late", in, 1, a_out, 1);
    rw_set_input(&g, abs_node, 0, a_out[0]);
    (void)late;
    cg_model *out = NULL;
    EXPECT(rw_materialize(&g, &out, &err) == CG_OK, "%s", err.msg);
    if (out) {
        const cg_graph *og = out->graph;
        EXPECT(og->node_count == 4, "4 nodes (dead Sigmoid kept: the source's), got %zu",
               og->node_count);
        size_t pe = SIZE_MAX, pa = SIZE_MAX;
        for (size_t i = 0; i < og->node_count; i++) {
            if (strcmp(og->nodes[i].op_type, "Exp") == 0)
                pe = i;
            if (strcmp(og->nodes[i].op_type, "Abs") == 0)
                pa = i;
        }
        EXPECT(pe < pa && pa != SIZE_MAX, "topological: Exp %zu before Abs %zu", pe, pa);
        EXPECT(og->value_info_count == 1 && strcmp(og->value_infos[0].name, "r") == 0,
               "value_info of r kept");
        EXPECT(model_has_node(out, "Sigmoid"), "the source's dead node stays");
        EXPECT(checks(out), "the rewritten model checks");
        cg_model_free(out);
    }
    rw_free(&g);
    /* an output read straight from an input needs an Identity */
    EXPECT(rw_load(&g, m, &err) == CG_OK, "%s", err.msg);
    rw_kill(&g, 1);
    rw_kill(&g, 0);
    EXPECT(rw_replace(&g, "y", "x"), "replace by a graph input");
    EXPECT(rw_materialize(&g, &out, &err) == CG_OK, "%s", err.msg);
    if (out) {
        EXPECT(model_has_node(out, "Identity") && !model_has_node(out, "Relu"),
               "Identity x -> y, Relu gone");
        EXPECT(out->graph->value_info_count == 0, "value_info of the removed r dropped");
        cg_model_free(out);
    }
    size_t removed = rw_prune(&g, true);
    EXPECT(removed == 1, "prune(all) removes the dead Sigmoid: %zu", removed);
    rw_free(&g);
    /* a dangling read is a broken graph, named */
    EXPECT(rw_load(&g, m, &err) == CG_OK, "%s", err.msg);
    rw_kill(&g, 0);
    cg_error_clear(&err);
    EXPECT(rw_materialize(&g, &out, &err) != CG_OK && strstr(err.msg, "'r'"),
           "dangling read named: %s", err.msg);
    rw_free(&g);
    cg_model_free(m);
}

/* --- the catalog on real models ------------------------------------------------------- */

typedef struct run_case {
    const char *model;
    const char *target;
    const char *only;        /* NULL: everything needed */
    const char *opt_in;      /* NULL: none */
    const char *dim;         /* "batch" = 2 or NULL */
} run_case;

/* What a run leaves to free. */
typedef struct run_out {
    cg_rewrite_result res;
    cg_target_registry *reg;
    cg_sample_set samples;
    cg_model *model;
} run_out;

static void run_free(run_out *o)
{
    cg_rewrite_result_free(&o->res);
    cg_sample_set_free(&o->samples);
    cg_target_registry_free(o->reg);
    cg_model_free(o->model);
    memset(o, 0, sizeof *o);
}

static bool run_into(const run_case *rc, cg_rewrite_result *res, cg_target_registry **reg,
                     cg_sample_set *samples, cg_model **model)
{
    cg_error err;
    cg_error_clear(&err);
    char path[512];
    snprintf(path, sizeof path, DATA "%s", rc->model);
    *model = test_load_model(path);
    if (!*model)
        return false;
    const cg_target *t;
    if (cg_target_registry_load(NULL, reg, &err) != CG_OK ||
        !(t = cg_target_registry_find(*reg, rc->target, &err))) {
        EXPECT(0, "targets: %s", err.msg);
        return false;
    }
    static cg_dim_binding dims[1];
    dims[0].symbol = "batch";
    dims[0].value = 2;
    cg_random_inputs random = {0, NULL, 0};
    if (cg_samples_random(*model, 2, &random, dims, rc->dim ? 1 : 0, 0, samples, &err) != CG_OK) {
        EXPECT(0, "samples: %s", err.msg);
        return false;
    }
    static const cg_target *list[1];
    list[0] = t;
    const char *only[1] = {rc->only}, *opt[1] = {rc->opt_in};
    cg_rewrite_options o;
    memset(&o, 0, sizeof o);
    o.targets = list;
    o.target_count = 1;
    o.dims = dims;
    o.dim_count = rc->dim ? 1 : 0;
    o.random = &random;
    o.samples = samples;
    o.only = only;
    o.only_count = rc->only ? 1 : 0;
    o.opt_in = opt;
    o.opt_in_count = rc->opt_in ? 1 : 0;
    if (cg_rewrite_run(*model, &o, res, &err) != CG_OK) {
        EXPECT(0, "%s: %s", rc->model, err.msg);
        return false;
    }
    return true;
}

/* Runs rc into o (zeroed first); false when it could not run. */
static bool run(const run_case *rc, run_out *o)
{
    memset(o, 0, sizeof *o);
    return run_into(rc, &o->res, &o->reg, &o->samples, &o->model);
}

static const cg_rewrite_step *step_of(const cg_rewrite_result *r, const char *name)
{
    for (size_t i = 0; i < r->step_count; i++)
        if (strcmp(r->steps[i].info->name, name) == 0)
            return &r->steps[i];
    return NULL;
}

static size_t count_op(const cg_model *m, const char *op)
{
    size_t n = 0;
    for (size_t i = 0; m && i < m->graph->node_count; i++)
        n += strcmp(m->graph->nodes[i].op_type, op) == 0;
    return n;
}

/* One cleanup alone: applied at `sites` sites, `gone` no longer in the result. */
static void cleanup_case(const char *name, size_t sites, const char *gone, bool exact,
                         const char *dim)
{
    run_case rc = {"cleanups.onnx", "litert-gpu", name, NULL, dim};
    run_out o;
    if (run(&rc, &o)) {
        const cg_rewrite_step *s = step_of(&o.res, name);
        EXPECT(o.res.step_count == 1 && s, "%s: one step", name);
        if (s) {
            EXPECT(s->outcome == CG_STEP_APPLIED, "%s: %s (%s)", name,
                   cg_rewrite_outcome_name(s->outcome), s->detail);
            EXPECT(s->sites == sites, "%s: %zu sites, expected %zu", name, s->sites, sites);
            EXPECT(s->verified && s->exact == exact, "%s: exact %d, expected %d", name, s->exact,
                   exact);
        }
        if (gone)
            EXPECT(count_op(o.res.model, gone) == 0 && count_op(o.model, gone) > 0,
                   "%s: no %s left", name, gone);
        EXPECT(o.res.model && checks(o.res.model), "%s: the result checks", name);
    }
    run_free(&o);
}

static void test_cleanups(void)
{
    cleanup_case("identity-elimination", 2, "Dropout", true, NULL);
    cleanup_case("constant-folding", 3, "Constant", true, NULL);
    cleanup_case("bn-folding", 3, "BatchNormalization", false, NULL);
    cleanup_case("cse", 1, NULL, true, NULL);
    cleanup_case("dead-node-elimination", 1, "Sigmoid", true, NULL);
    /* Shape is folded only once --dim fixes the batch dim */
    cleanup_case("shape-folding", 1, "Shape", true, "batch");
    run_case rc = {"cleanups.onnx", "litert-gpu", "shape-folding", NULL, NULL};
    run_out o;
    if (run(&rc, &o)) {
        const cg_rewrite_step *s = step_of(&o.res, "shape-folding");
        EXPECT(s && s->outcome == CG_STEP_NOT_APPLICABLE,
               "shape-folding without --dim: %s", s ? cg_rewrite_outcome_name(s->outcome) : "?");
    }
    run_free(&o);
}

/* The whole catalog on cleanups.onnx with --dim: the result checks, runs and
 * matches the source within the noise floor of every step. */
static void test_all_cleanups(void)
{
    run_case rc = {"cleanups.onnx", "litert-gpu", NULL, NULL, "batch"};
    run_out o;
    if (run(&rc, &o)) {
        EXPECT(o.res.applied == 6, "6 cleanups applied, got %zu", o.res.applied);
        EXPECT(o.res.model && o.res.model->graph->node_count == 8, "22 -> 8 nodes, got %zu",
               o.res.model ? o.res.model->graph->node_count : 0);
        /* counted on the converter's graph, which drops Identity, Dropout
         * and the folded constants itself: what the cleanups gain is the
         * BatchNormalization after a Gemm it does not fold (fewer on the CPU) */
        EXPECT(o.res.after.cpu < o.res.before.cpu, "fewer on the CPU: %zu -> %zu",
               o.res.before.cpu, o.res.after.cpu);
        EXPECT(o.res.noise_floor, "verified against the noise floor");
    }
    run_free(&o);
}

/* A rewrite whose result is not within the floor is refused and the model
 * is left as it was; an approximation waits for --opt-in. */
static void test_refusals(void)
{
    run_case rc = {"where_mask_inf.onnx", "nnapi", NULL, NULL, NULL};
    run_out o;
    if (run(&rc, &o)) {
        const cg_rewrite_step *s = step_of(&o.res, "where-to-arithmetic");
        EXPECT(s && s->outcome == CG_STEP_REFUSED, "-inf mask: %s",
               s ? cg_rewrite_outcome_name(s->outcome) : "?");
        EXPECT(s && strstr(s->detail, "refused") && strstr(s->detail, "wrong result"),
               "the reason: %s", s ? s->detail : "");
        EXPECT(o.res.applied == 0 && count_op(o.res.model, "Where") == 1, "model unchanged");
    }
    run_free(&o);
    for (int opted = 0; opted < 2; opted++) {
        run_case gc = {"gelu.onnx", "litert-gpu", "gelu-tanh", opted ? "gelu-tanh" : NULL, NULL};
        if (run(&gc, &o)) {
            const cg_rewrite_step *s = step_of(&o.res, "gelu-tanh");
            EXPECT(s && s->outcome == (opted ? CG_STEP_APPLIED : CG_STEP_NOT_OPTED_IN),
                   "gelu-tanh opted %d: %s", opted, s ? cg_rewrite_outcome_name(s->outcome) : "?");
            EXPECT(count_op(o.res.model, "Erf") == (opted ? 0u : 1u), "Erf count");
            if (opted && s)
                EXPECT(!s->exact && s->checks[0].max_abs > 0 && s->checks[0].max_abs < 1e-3 &&
                           strstr(s->detail, "accepted: opted in"),
                       "the measured change is stated: %s", s->detail);
        }
        run_free(&o);
    }
}

static void test_catalog(void)
{
    EXPECT(cg_rewrite_count() >= 15, "catalog size %zu", cg_rewrite_count());
    for (size_t i = 0; i < cg_rewrite_count(); i++) {
        const cg_rewrite_info *a = cg_rewrite_at(i);
        EXPECT(cg_rewrite_find(a->name) == a, "find %s", a->name);
        EXPECT(a->summary[0] && a->addresses[0], "%s documented", a->name);
        for (size_t k = 0; k < i; k++)
            EXPECT(strcmp(cg_rewrite_at(k)->name, a->name) != 0, "duplicate %s", a->name);
    }
    const char *bad[1] = {"gathernd-to-gatherr"};
    cg_error err;
    cg_error_clear(&err);
    EXPECT(cg_rewrite_check_names(bad, 1, "--only", &err) == CG_USAGE &&
               strstr(err.msg, "gathernd-to-gatherr") && strstr(err.msg, "gathernd-to-gather,"),
           "unknown name listed with the catalog: %s", err.msg);
}

static void test_deploy(void)
{
    cg_model *m = test_load_model(DATA "gelu.onnx");
    char *text = NULL;
    size_t missing = 99;
    cg_error err;
    cg_error_clear(&err);
    if (!m)
        return;
    EXPECT(cg_deploy_ort_config(m, "model.onnx", &text, &err) == CG_OK, "%s", err.msg);
    EXPECT(text && strcmp(text, "# Generated by convgate from model/s:\n# - model.onnx\n"
                                "ai.onnx;13;Add,Div,Erf,Mul,Relu,Sub\n") == 0,
           "ORT config:\n%s", text ? text : "");
    free(text);
    text = NULL;
    EXPECT(cg_deploy_tflm_resolver(m, &text, &missing, &err) == CG_OK, "%s", err.msg);
    EXPECT(missing == 1 && text && strstr(text, "//   Erf (1 node)") &&
               strstr(text, "MicroMutableOpResolver<kConvgateOpCount>") &&
               strstr(text, "kConvgateOpCount = 5;") &&
               strstr(text, "resolver.AddAdd());\n  TF_LITE_ENSURE_STATUS(resolver.AddDiv());"),
           "TFLM resolver (%zu missing):\n%s", missing, text ? text : "");
    free(text);
    cg_model_free(m);
}

/* rewrite places a model as assign does: on the graph the target partitions
 * (litert-gpu, tflm: the TFLite ops a converter emits, GlobalAveragePool as
 * MEAN, Flatten as RESHAPE, BatchNormalization folded, Identity, Dropout
 * and Constant gone; nnapi, coreml-mlprogram: ONNX Runtime's basic
 * optimizations), at the same dims and inputs, so its residency before any
 * rewrite is assign's, node for node. */
static void test_placed_as_assign(void)
{
    static const run_case cases[] = {
        {"../../../examples/tiny_cnn.onnx", "litert-gpu", "cse", NULL, "batch"},
        {"cleanups.onnx", "litert-gpu", "cse", NULL, "batch"},
        {"cleanups.onnx", "tflm", "cse", NULL, "batch"},
        {"cleanups.onnx", "nnapi", "cse", NULL, "batch"},
        {"cleanups.onnx", "coreml-mlprogram", "cse", NULL, "batch"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        const run_case *rc = &cases[i];
        run_out o;
        cg_lowered *l = NULL;
        cg_type_env *types = NULL;
        cg_assignment *a = NULL;
        cg_error err;
        cg_error_clear(&err);
        if (!run(rc, &o)) {
            run_free(&o);
            continue;
        }
        const cg_target *t = cg_target_registry_find(o.reg, rc->target, &err);
        const cg_target *list[1] = {t};
        cg_dim_binding dims[1] = {{"batch", 2}};
        cg_random_inputs random = {0, NULL, 0};
        char residency[256] = "";
        bool placed = t && cg_lower_for_targets(o.model, list, 1, dims, 1, &l, &err) == CG_OK &&
                      cg_lowered_types(l, dims, 1, &random, &types, &err) == CG_OK &&
                      cg_assign(l->model, types, list, 1, &a, &err) == CG_OK;
        EXPECT(placed, "%s on %s: assign: %s", rc->model, rc->target, err.msg);
        if (placed) {
            cg_assign_residency(a, residency, sizeof residency);
            const cg_rewrite_placement *b = &o.res.before;
            EXPECT(cg_lowered_removed_count(l, "") > 0, "%s on %s: the preprocess removes nodes",
                   rc->model, rc->target);
            EXPECT(b->placed && strcmp(b->residency, residency) == 0,
                   "%s on %s: rewrite's residency '%s' (%s), assign's '%s'", rc->model,
                   rc->target, b->residency, b->note, residency);
            EXPECT(b->nodes == l->model->graph->node_count &&
                       b->removed_by_runtime == cg_lowered_removed_count(l, "") &&
                       b->partitions == a->partition_count &&
                       b->boundaries == a->boundary_count,
                   "%s on %s: %zu nodes (%zu removed), %zu partitions, %zu boundaries; assign "
                   "%zu (%zu), %zu, %zu",
                   rc->model, rc->target, b->nodes, b->removed_by_runtime, b->partitions,
                   b->boundaries, l->model->graph->node_count, cg_lowered_removed_count(l, ""),
                   a->partition_count, a->boundary_count);
            EXPECT(o.res.source_nodes == o.model->graph->node_count, "%s: source nodes %zu",
                   rc->model, o.res.source_nodes);
        }
        cg_assignment_free(a);
        cg_type_env_free(types);
        cg_lowered_free(l);
        run_free(&o);
    }
}

int main(void)
{
    test_graph_edits();
    test_catalog();
    test_deploy();
    test_cleanups();
    test_all_cleanups();
    test_refusals();
    test_placed_as_assign();
    return test_done("test_rewrite");
}
