/*
 * An embedder's executing target, added without editing convgate.
 *
 * This program plays the embedder: it sees only the public headers
 * (include/convgate/) and links only the shared library, so everything it
 * does is what the public API allows. Its target, "toy-relu", takes float
 * Relu nodes, describes itself (NHWC layout, its own crossing cost), and
 * computes its partitions itself. The test registers it next to the
 * built-in targets, then does what `convgate assign` and `convgate run
 * --target` do on the example CNN: the assignment must put every Relu on
 * the toy (with layout conversions at its boundaries, from the descriptor,
 * and crossings costed at its stated rates), and the target path must run
 * the toy's partitions and give the reference runtime's logits.
 *
 * It is not a unit test of the library's internals, so it does not use
 * tests/unit/testlib.c (which links the static library and src/ headers).
 */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "convgate/model.h"
#include "convgate/partition.h"
#include "convgate/profile.h"
#include "convgate/runtime.h"
#include "convgate/target.h"
#include "convgate/targetpath.h"
#include "convgate/tensor.h"
#include "convgate/tensor_io.h"

static int failures;

#define EXPECT(cond, ...)                                                                  \
    do {                                                                                   \
        if (!(cond)) {                                                                     \
            failures++;                                                                    \
            fprintf(stderr, "%s:%d: FAILED %s: ", __FILE__, __LINE__, #cond);              \
            fprintf(stderr, __VA_ARGS__);                                                  \
            fputc('\n', stderr);                                                           \
        }                                                                                  \
    } while (0)

/* --- the toy target ------------------------------------------------------------------ */

typedef struct toy_state {
    const cg_partition_desc *desc; /* borrowed: the runtime keeps it alive */
    size_t node_count;
    const cg_node **nodes;
} toy_state;

static int toy_compiles, toy_runs, toy_destroyed;

static bool toy_takes(const cg_support_query *q, char *reason, size_t len)
{
    const cg_node *n = q->node;
    bool relu = n->op_type && strcmp(n->op_type, "Relu") == 0 &&
                (!n->domain || !n->domain[0] || strcmp(n->domain, "ai.onnx") == 0);
    if (!relu) {
        snprintf(reason, len, "toy-relu takes Relu only, not %s", n->op_type ? n->op_type : "?");
        return false;
    }
    const cg_value_type *vt = n->input_count ? cg_type_env_get(q->types, n->inputs[0]) : NULL;
    if (!vt || !vt->known || vt->dtype != CG_DTYPE_FLOAT) {
        snprintf(reason, len, "toy-relu takes float32 with a known type");
        return false;
    }
    return true;
}

static bool toy_supports(const cg_target *t, const cg_support_query *q, char *reason, size_t len)
{
    (void)t;
    return toy_takes(q, reason, len);
}

static cg_status toy_compile(const cg_target *t, const cg_partition_desc *p, void **state,
                             cg_error *err)
{
    (void)t;
    toy_state *s = calloc(1, sizeof *s);
    const cg_node **nodes = calloc(p->node_count + 1, sizeof *nodes);
    if (!s || !nodes) {
        free(s);
        free(nodes);
        return cg_error_set(err, CG_NOMEM, "toy-relu: out of memory");
    }
    for (size_t i = 0; i < p->node_count; i++) {
        cg_support_query q = {p->model, p->graph, &p->graph->nodes[p->nodes[i]], 0, p->types};
        char why[128];
        if (!toy_takes(&q, why, sizeof why)) { /* compile() accepts what supports() does */
            free(s);
            free(nodes);
            return cg_error_set(err, CG_UNSUPPORTED, "%s", why);
        }
        nodes[i] = q.node;
    }
    s->desc = p;
    s->node_count = p->node_count;
    s->nodes = nodes;
    *state = s;
    toy_compiles++;
    return CG_OK;
}

/* The value named `name`: a partition input or a value computed so far. */
static const cg_value *toy_find(const toy_state *s, const cg_value *const *inputs,
                                cg_value *const *made, const char *name)
{
    for (size_t i = 0; i < s->desc->input_count; i++)
        if (strcmp(s->desc->inputs[i], name) == 0)
            return inputs[i];
    for (size_t i = 0; i < s->node_count; i++)
        if (made[i] && strcmp(s->nodes[i]->outputs[0], name) == 0)
            return made[i];
    return NULL;
}

static cg_status toy_run(void *state, const cg_value *const *inputs, cg_value **outputs,
                         cg_error *err)
{
    toy_state *s = state;
    cg_value **made = calloc(s->node_count + 1, sizeof *made);
    cg_status st = made ? CG_OK : cg_error_set(err, CG_NOMEM, "toy-relu: out of memory");
    for (size_t i = 0; st == CG_OK && i < s->node_count; i++) {
        const cg_value *x = toy_find(s, inputs, made, s->nodes[i]->inputs[0]);
        if (!x || x->kind != CG_VALUE_TENSOR || x->tensor.dtype != CG_DTYPE_FLOAT) {
            st = cg_error_set(err, CG_RUNTIME, "toy-relu: no float input '%s'",
                              s->nodes[i]->inputs[0]);
            break;
        }
        st = cg_value_alloc_tensor(CG_DTYPE_FLOAT, x->tensor.rank, x->tensor.dims, &made[i], err);
        if (st != CG_OK)
            break;
        const float *a = x->tensor.data;
        float *y = made[i]->tensor.data;
        for (int64_t e = 0; e < x->tensor.numel; e++)
            y[e] = a[e] > 0 ? a[e] : 0;
    }
    for (size_t o = 0; st == CG_OK && o < s->desc->output_count; o++) {
        for (size_t i = 0; i < s->node_count && !outputs[o]; i++)
            if (made[i] && strcmp(s->nodes[i]->outputs[0], s->desc->outputs[o]) == 0) {
                outputs[o] = made[i]; /* the caller owns outputs */
                made[i] = NULL;
            }
        if (!outputs[o])
            st = cg_error_set(err, CG_RUNTIME, "toy-relu: output '%s' not computed",
                              s->desc->outputs[o]);
    }
    for (size_t i = 0; made && i < s->node_count; i++)
        cg_value_free(made[i]);
    free(made);
    toy_runs += st == CG_OK;
    return st;
}

static void toy_release(void *state)
{
    toy_state *s = state;
    free(s->nodes);
    free(s);
}

static void toy_destroy(cg_target *t)
{
    toy_destroyed++;
    free(t);
}

static const cg_target_vtable toy_vtable = {toy_supports, toy_compile, toy_run, toy_release,
                                            toy_destroy};

static cg_target *toy_new(const char *name)
{
    cg_target *t = calloc(1, sizeof *t);
    if (!t)
        return NULL;
    t->name = name;
    t->version = "1";
    t->description = "an embedder's Relu-only target (tests/embed/toy_target.c)";
    t->source = "compile()";
    t->kind = CG_TARGET_EXECUTING;
    t->fallback = CG_FALLBACK_CPU;
    t->precision = CG_PRECISION_FP32;
    t->layout = CG_LAYOUT_NHWC;
    t->crossing_stated = true;
    t->crossing_fixed_us = 5;
    t->crossing_gbps = 2;
    t->vt = &toy_vtable;
    return t;
}

/* --- the embedder's program ------------------------------------------------------------ */

static cg_value *load_npy(const char *path)
{
    cg_tensor t;
    cg_value *v = NULL;
    cg_error err;
    cg_error_clear(&err);
    memset(&t, 0, sizeof t);
    if (cg_npy_load(path, 0, &t, &err) != CG_OK || cg_value_from_tensor(&t, &v, &err) != CG_OK) {
        EXPECT(0, "loading %s: %s", path, err.msg);
        cg_tensor_release(&t);
        return NULL;
    }
    return v;
}

static void test_registry_rules(cg_target_registry *reg)
{
    cg_error err;
    cg_error_clear(&err);
    int before = toy_destroyed;
    EXPECT(cg_target_registry_add(reg, toy_new("toy-relu"), &err) == CG_INVALID &&
               strstr(err.msg, "toy-relu"),
           "a second target of the same name is refused: %s", err.msg);
    EXPECT(toy_destroyed == before + 1, "a refused target is destroyed (the registry owns it)");
    cg_target *half = toy_new("toy-half");
    static const cg_target_vtable no_run = {toy_supports, toy_compile, NULL, toy_release,
                                            toy_destroy};
    half->vt = &no_run;
    cg_error_clear(&err);
    EXPECT(cg_target_registry_add(reg, half, &err) == CG_USAGE && strstr(err.msg, "run"),
           "an executing target without run() is refused: %s", err.msg);
}

int main(void)
{
    cg_error err;
    cg_error_clear(&err);
    cg_model *m = NULL;
    cg_target_registry *reg = NULL;
    cg_type_env *env = NULL;
    cg_assignment *a = NULL;
    cg_target_path *tp = NULL;
    cg_runtime *rt = NULL;
    cg_named_value *ref = NULL, *got = NULL;
    size_t nref = 0, ngot = 0;
    cg_value *img = NULL;

    if (cg_model_load(CG_SOURCE_DIR "/examples/tiny_cnn.onnx", NULL, &m, &err) != CG_OK ||
        cg_target_registry_load(CG_SOURCE_DIR "/profiles", &reg, &err) != CG_OK) {
        fprintf(stderr, "setup: %s\n", err.msg);
        return 1;
    }
    EXPECT(cg_target_registry_add(reg, toy_new("toy-relu"), &err) == CG_OK, "add: %s", err.msg);
    const cg_target *toy = cg_target_registry_find(reg, "toy-relu", &err);
    EXPECT(toy != NULL, "the registry finds the embedder's target: %s", err.msg);
    test_registry_rules(reg);
    if (!toy)
        goto done;

    /* convgate assign --target toy-relu */
    cg_dim_binding batch = {"batch", 1};
    cg_error_clear(&err);
    if (cg_type_env_build(m, &batch, 1, &env, &err) != CG_OK ||
        cg_assign(m, env, &toy, 1, &a, &err) != CG_OK) {
        EXPECT(0, "assign: %s", err.msg);
        goto done;
    }
    size_t relus = 0, on_toy = 0;
    for (size_t i = 0; i < m->graph->node_count; i++) {
        bool relu = strcmp(m->graph->nodes[i].op_type, "Relu") == 0;
        relus += relu;
        on_toy += a->owner[i] == 0;
        EXPECT((a->owner[i] == 0) == relu, "node %zu (%s) owner %d", i,
               m->graph->nodes[i].op_type, a->owner[i]);
    }
    EXPECT(relus == 4 && on_toy == 4 && a->partition_count == 4, "%zu Relus, %zu on toy, %zu "
           "partitions", relus, on_toy, a->partition_count);
    cg_cost_assumptions as;
    cg_cost_assumptions_default(&as);
    EXPECT(a->boundary_count == 8, "each Relu partition has one crossing in and one out, got %zu",
           a->boundary_count);
    for (size_t i = 0; i < a->boundary_count; i++) {
        const cg_boundary *b = &a->boundaries[i];
        EXPECT(b->known && b->rank == 4 && b->layout_conversion,
               "boundary '%s': NHWC is the toy's layout, so rank 4 converts", b->tensor);
        double want = 5e-3 + (double)b->bytes / 2e6;
        EXPECT(fabs(cg_cost_crossing_ms(&as, a, b) - want) < 1e-12,
               "boundary '%s' costs %g ms at the toy's stated rates, want %g", b->tensor,
               cg_cost_crossing_ms(&as, a, b), want);
    }

    /* the layout is the target's word, not its name's: an NCHW target named
     * like the NHWC delegate converts nothing */
    cg_target lookalike = *toy;
    lookalike.name = "xnnpack";
    lookalike.layout = CG_LAYOUT_NCHW;
    const cg_target *look = &lookalike;
    cg_assignment *la = NULL;
    if (cg_assign(m, env, &look, 1, &la, &err) == CG_OK) {
        for (size_t i = 0; i < la->boundary_count; i++)
            EXPECT(!la->boundaries[i].layout_conversion, "an NCHW target named 'xnnpack' "
                   "converts '%s'", la->boundaries[i].tensor);
        cg_assignment_free(la);
    } else {
        EXPECT(0, "assign the lookalike: %s", err.msg);
    }

    /* convgate run --target toy-relu, against the reference runtime */
    img = load_npy(CG_SOURCE_DIR "/examples/tiny_cnn_inputs/image_0.npy");
    if (!img)
        goto done;
    cg_named_value in = {m->graph->inputs[0].name, img};
    cg_target_path_options po;
    memset(&po, 0, sizeof po);
    po.targets = &toy;
    po.target_count = 1;
    po.dims = &batch;
    po.dim_count = 1;
    cg_error_clear(&err);
    if (cg_runtime_init(m, NULL, &rt, &err) != CG_OK ||
        cg_runtime_run(rt, &in, 1, &ref, &nref, &err) != CG_OK ||
        cg_target_path_init(m, &po, &tp, &err) != CG_OK ||
        cg_target_path_run(tp, &in, 1, &got, &ngot, &err) != CG_OK) {
        EXPECT(0, "run: %s", err.msg);
        goto done;
    }
    EXPECT(toy_compiles == 4 && toy_runs == 4, "toy compiled %d and ran %d partitions",
           toy_compiles, toy_runs);
    const cg_runtime *prt = cg_target_path_runtime(tp);
    EXPECT(cg_runtime_partition_count(prt) == 4, "the path executes %zu partitions",
           cg_runtime_partition_count(prt));
    for (size_t i = 0; i < cg_runtime_partition_count(prt); i++) {
        cg_runtime_partition_info info;
        EXPECT(cg_runtime_partition_info_get(prt, i, &info, &err) == CG_OK &&
                   strcmp(info.target, "toy-relu") == 0 && info.runs == 1,
               "partition %zu ran on toy-relu once", i);
    }
    EXPECT(nref == 1 && ngot == 1, "one output each (%zu, %zu)", nref, ngot);
    if (nref == 1 && ngot == 1) {
        const cg_tensor *r = &ref[0].value->tensor, *g = &got[0].value->tensor;
        bool same = r->numel == g->numel && r->dtype == CG_DTYPE_FLOAT && g->dtype == r->dtype;
        for (int64_t e = 0; same && e < r->numel; e++)
            same = ((const float *)r->data)[e] == ((const float *)g->data)[e];
        EXPECT(same, "the toy's path gives the reference logits exactly (Relu is exact)");
    }

done:
    cg_runtime_free_outputs(ref, nref);
    cg_runtime_free_outputs(got, ngot);
    cg_value_free(img);
    cg_runtime_free(rt);
    cg_target_path_free(tp);
    cg_assignment_free(a);
    cg_type_env_free(env);
    int before = toy_destroyed;
    cg_target_registry_free(reg);
    EXPECT(toy_destroyed == before + 1, "freeing the registry destroys the toy once");
    cg_model_free(m);
    if (failures) {
        fprintf(stderr, "embed.toy_target: %d check(s) failed\n", failures);
        return 1;
    }
    printf("embed.toy_target: all checks passed\n");
    return 0;
}
