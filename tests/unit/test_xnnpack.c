/*
 * The XNNPACK delegate against the reference runtime, on real models.
 *
 * Residency (predicted == actual): for every main-graph node, supports()
 * must agree with compile() of a one-node partition (compile succeeds and
 * reports exactly that node lowered iff supports said yes), and for the
 * assignment the partitioner makes with the xnnpack target alone, compile
 * of each partition must succeed and report exactly its nodes lowered,
 * and every supported node must be in a partition or listed as dropped.
 *
 * Parity: cg_runtime_run with that assignment (partitions on XNNPACK, the
 * rest on the reference kernels) against a pure reference run on the same
 * seeded random inputs: every output within max|diff| <= 1e-4 * max(max|ref|, 1),
 * NaN only where the reference has NaN.
 *
 * Conformance models pass weights as graph inputs, which the delegate must
 * refuse (XNNPACK needs constant filters); so each model with more than
 * input is also checked "frozen": every input but the first float one
 * becomes an initializer holding test_data_set_0's values, which puts Conv, Gemm,
 * ConvTranspose, PRelu, BatchNormalization... with their real attributes
 * through XNNPACK.
 *
 * Usage:
 *   test_xnnpack                      every conformance model under
 *                                     $CG_ONNX_NODE_DIR (default
 *                                     /usr/share/libonnx-testdata/data/node)
 *   test_xnnpack check MODEL [sym=N]  residency + parity of one model
 *   test_xnnpack bench MODEL RUNS [sym=N]  also the median time of RUNS
 *                                     runs, reference vs delegated
 * Without the xnnpack target (XNNPACK absent at build time) it reports
 * that and exits 0, unless CG_REQUIRE_XNNPACK is set.
 */
#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "convgate/model.h"
#include "convgate/partition.h"
#include "convgate/runtime.h"
#include "convgate/target.h"
#include "convgate/profile.h"
#include "convgate/samples.h"
#include "convgate/tensor_io.h"
#include "delegate/xnnpack/xnnpack.h"
#include "ir/walk.h"
#include "run/exec.h"
#include "run/kernel.h"
#include "testlib.h"

#define TOL 1e-4
#define MAX_BINDINGS 16

static const cg_target *xnn;

typedef struct model_stats {
    size_t nodes, supported, single_ok, single_mismatch;
    size_t partitions, partition_nodes, residency_errors;
    size_t layout_in, layout_out, xnn_nodes, repacked, in_place;
    double max_diff, max_ref;
    bool parity_ran, parity_ok;
    double ref_median, xnn_median;
    size_t boundaries_compared, boundaries_mismatched;
    double boundary_max_diff, boundary_max_ref;
    double in_partitions; /* seconds per run inside partitions (bench) */
} model_stats;

static double now_seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static bool is_graph_input(const cg_graph *g, const char *name)
{
    for (size_t i = 0; i < g->input_count; i++)
        if (g->inputs[i].name && strcmp(g->inputs[i].name, name) == 0)
            return true;
    return false;
}

/* The partitioner's notion of a value that carries no data at run time. */
static bool value_const(const cg_model *m, const cg_type_env *env, const char *name)
{
    if (cg_graph_initializer(m->graph, name) && !is_graph_input(m->graph, name))
        return true;
    const cg_value_type *vt = cg_type_env_get(env, name);
    return vt && vt->is_const;
}

/* --- residency -------------------------------------------------------------------- */

/* compile() of the one-node partition {i}; true when it succeeded and
 * lowered exactly that node. */
static bool compile_single(const cg_model *m, const cg_type_env *env, size_t i, char *why,
                           size_t why_len)
{
    const cg_graph *g = m->graph;
    const cg_node *n = &g->nodes[i];
    const char *ins[64], *outs[64];
    size_t ni = 0, no = 0;
    for (size_t k = 0; k < n->input_count && ni < 64; k++) {
        const char *v = n->inputs[k];
        if (!v || !v[0] || value_const(m, env, v))
            continue;
        bool dup = false;
        for (size_t j = 0; j < ni; j++)
            dup = dup || strcmp(ins[j], v) == 0;
        if (!dup)
            ins[ni++] = v;
    }
    for (size_t k = 0; k < n->output_count && no < 64; k++)
        if (n->outputs[k] && n->outputs[k][0])
            outs[no++] = n->outputs[k];
    cg_partition_desc d = {m, g, &i, 1, ins, ni, outs, no, env, 1};
    void *state = NULL;
    cg_error err;
    cg_error_clear(&err);
    cg_status st = xnn->vt->compile(xnn, &d, &state, &err);
    if (st != CG_OK) {
        snprintf(why, why_len, "%s", err.msg);
        return false;
    }
    const cg_xnnpack_report *r = state;
    bool ok = r->lowered_count == 1 && r->lowered[0] == i;
    if (!ok)
        snprintf(why, why_len, "compile lowered %zu nodes", r->lowered_count);
    xnn->vt->release(state);
    return ok;
}

static void check_residency(const cg_model *m, const cg_type_env *env, const char *label,
                            model_stats *s)
{
    const cg_graph *g = m->graph;
    s->nodes = g->node_count;
    for (size_t i = 0; i < g->node_count; i++) {
        cg_support_query q = {m, g, &g->nodes[i], cg_model_opset(m, ""), env};
        char reason[512] = "", why[1024] = "";
        bool pred = xnn->vt->supports(xnn, &q, reason, sizeof reason);
        bool actual = compile_single(m, env, i, why, sizeof why);
        s->supported += pred;
        if (pred == actual) {
            s->single_ok++;
            continue;
        }
        s->single_mismatch++;
        fprintf(stderr, "RESIDENCY %s: node %zu (%s '%s'): supports=%d but compile %s: %s%s\n",
                label, i, g->nodes[i].op_type, g->nodes[i].name ? g->nodes[i].name : "", pred,
                actual ? "succeeded" : "failed", actual ? "" : why, pred ? "" : reason);
    }
}

/* --- inputs, runs, comparison ----------------------------------------------------- */

static void free_feeds(cg_named_value *feeds, size_t n)
{
    for (size_t i = 0; i < n; i++)
        cg_value_free(feeds[i].value);
    free(feeds);
}

/* The random inputs of this test: the policy of convgate/samples.h with
 * every integer input held at 0, as the test always fed them (index-like
 * inputs of conformance models; at the default 0..1 a window size of 1
 * makes the expanded symmetric Hann/Hamming/Blackman windows compute
 * 0 * inf = NaN, which this XNNPACK's binary operators (min/max-clamped
 * kernels, even at -inf..inf) turn into -inf: the runtime then puts the
 * reference's NaN back in those lanes (test_xnnpack_nan), which is not
 * what this test measures). */
static cg_input_range int_zero[64];
static cg_random_inputs test_policy(const cg_model *m)
{
    size_t n = 0;
    for (size_t i = 0; i < m->graph->input_count && n < 64; i++) {
        const cg_type *t = m->graph->inputs[i].type;
        if (m->graph->inputs[i].name && t && t->kind == CG_TYPE_TENSOR &&
            cg_dtype_is_int((cg_dtype)t->elem_type))
            int_zero[n++] = (cg_input_range){m->graph->inputs[i].name, 0, 0};
    }
    return (cg_random_inputs){0, int_zero, n};
}

/* The random inputs the type environment ran on, so shapes the delegate
 * compiled for are fed. */
static cg_status make_feeds(const cg_model *m, const cg_type_env *env, cg_named_value **out,
                            size_t *count, cg_error *err)
{
    cg_random_inputs p = test_policy(m);
    return cg_profile_feeds_make(m, env, &p, out, count, err);
}

/* Compares b against reference a; false on a shape/dtype/NaN/integer mismatch. */
static bool compare_values(const cg_value *a, const cg_value *b, double *max_diff,
                           double *max_ref)
{
    if (a->kind != CG_VALUE_TENSOR || b->kind != CG_VALUE_TENSOR)
        return a->kind == b->kind;
    const cg_tensor *x = &a->tensor, *y = &b->tensor;
    if (x->dtype != y->dtype || x->rank != y->rank ||
        memcmp(x->dims, y->dims, (size_t)x->rank * sizeof *x->dims) != 0)
        return false;
    if (x->dtype == CG_DTYPE_STRING)
        return true;
    if (!cg_dtype_is_float(x->dtype))
        return memcmp(x->data, y->data, cg_tensor_bytes(x)) == 0;
    for (int64_t i = 0; i < x->numel; i++) {
        double p = cg_tensor_get_f64(x, i), q = cg_tensor_get_f64(y, i);
        if (isnan(p) || isnan(q)) {
            if (isnan(p) != isnan(q))
                return false;
            continue;
        }
        if (isinf(p) || isinf(q)) {
            if (p != q)
                return false;
            continue;
        }
        if (fabs(p) > *max_ref)
            *max_ref = fabs(p);
        if (fabs(p - q) > *max_diff)
            *max_diff = fabs(p - q);
    }
    return true;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* Runs rt `runs` times on feeds; *median in seconds; *outs from the last run. */
static cg_status timed_runs(cg_runtime *rt, const cg_named_value *feeds, size_t nf, int runs,
                            double *median, cg_named_value **outs, size_t *no, cg_error *err)
{
    double *t = calloc((size_t)runs + 1, sizeof *t);
    if (!t)
        return cg_error_set(err, CG_NOMEM, "out of memory");
    cg_status st = CG_OK;
    *outs = NULL;
    for (int r = 0; r < runs; r++) {
        if (*outs)
            cg_runtime_free_outputs(*outs, *no);
        *outs = NULL;
        double t0 = now_seconds();
        st = cg_runtime_run(rt, feeds, nf, outs, no, err);
        t[r] = now_seconds() - t0;
        if (st != CG_OK)
            break;
    }
    qsort(t, (size_t)runs, sizeof *t, cmp_double);
    *median = t[runs / 2];
    free(t);
    return st;
}

/* Values leaving partitions, recorded from the reference run and compared
 * in the delegated run (a model's final output can be near zero on random
 * weights, e.g. ViT's zero-initialised head; its boundaries are not). */
typedef struct boundary_log {
    const cg_assignment *a;
    const char **names;
    cg_value **ref;
    size_t count;
    double max_diff, max_ref;
    size_t compared, mismatched;
} boundary_log;

static long boundary_index(const boundary_log *bl, const char *name)
{
    for (size_t i = 0; i < bl->count; i++)
        if (strcmp(bl->names[i], name) == 0)
            return (long)i;
    return -1;
}

static cg_status observe_ref(void *user, const cg_node *node, const char *name,
                             const cg_value *v)
{
    (void)node;
    boundary_log *bl = user;
    long i = boundary_index(bl, name);
    if (i < 0 || bl->ref[i])
        return CG_OK;
    cg_error err;
    cg_error_clear(&err);
    return cg_value_copy(v, &bl->ref[i], &err);
}

static cg_status observe_del(void *user, const cg_node *node, const char *name,
                             const cg_value *v)
{
    (void)node;
    boundary_log *bl = user;
    long i = boundary_index(bl, name);
    if (i < 0 || !bl->ref[i])
        return CG_OK;
    double d = 0, r = 0;
    bl->compared++;
    if (!compare_values(bl->ref[i], v, &d, &r) || d > TOL * (r > 1.0 ? r : 1.0))
        bl->mismatched++;
    if (d > bl->max_diff)
        bl->max_diff = d;
    if (r > bl->max_ref)
        bl->max_ref = r;
    return CG_OK;
}

static void boundary_log_free(boundary_log *bl)
{
    for (size_t i = 0; i < bl->count; i++)
        cg_value_free(bl->ref[i]);
    free(bl->ref);
    free(bl->names);
    memset(bl, 0, sizeof *bl);
}

/* Median times of `runs` runs (after one warm-up) on runtimes without
 * observers: reference, then delegated. */
static cg_status bench(const cg_model *m, const cg_assignment *a, const cg_type_env *env,
                       const cg_named_value *feeds, size_t nf, int runs, model_stats *s,
                       cg_error *err)
{
    cg_runtime *rt = NULL;
    cg_named_value *o = NULL;
    size_t no = 0;
    double warm;
    cg_runtime_options opt;
    cg_runtime_options_default(&opt);
    cg_status st = CG_OK;
    for (int pass = 0; pass < 2 && st == CG_OK; pass++) {
        if (pass) {
            opt.assignment = a;
            opt.types = env;
        }
        if ((st = cg_runtime_init(m, &opt, &rt, err)) != CG_OK)
            break;
        st = timed_runs(rt, feeds, nf, 1, &warm, &o, &no, err);
        cg_runtime_free_outputs(o, no);
        o = NULL;
        if (st == CG_OK)
            st = timed_runs(rt, feeds, nf, runs, pass ? &s->xnn_median : &s->ref_median, &o, &no,
                            err);
        cg_runtime_free_outputs(o, no);
        o = NULL;
        for (size_t p = 0; pass && st == CG_OK && p < cg_runtime_partition_count(rt); p++) {
            cg_runtime_partition_info info;
            if ((st = cg_runtime_partition_info_get(rt, p, &info, err)) == CG_OK && info.runs)
                s->in_partitions += info.seconds / (double)info.runs;
            if (getenv("CG_XNN_VERBOSE") && st == CG_OK)
                printf("  partition %d: %zu nodes, %.3f ms/run\n", info.id, info.node_count,
                       info.runs ? info.seconds / (double)info.runs * 1e3 : 0.0);
        }
        cg_runtime_free(rt);
        rt = NULL;
    }
    return st;
}

/* Assignment, per-partition compile check, parity (and timing with runs > 1). */
static cg_status check_model(const cg_model *m, const cg_type_env *env, const char *label,
                             int runs, model_stats *s, cg_error *err)
{
    cg_assignment *a = NULL;
    cg_runtime *ref = NULL, *del = NULL;
    cg_named_value *feeds = NULL, *ro = NULL, *xo = NULL;
    size_t nf = 0, nro = 0, nxo = 0;
    const cg_target *targets[1] = {xnn};
    boundary_log bl;
    memset(&bl, 0, sizeof bl);
    cg_status st = cg_assign(m, env, targets, 1, &a, err);
    if (st != CG_OK)
        return st;
    s->partitions = a->partition_count;
    bool *in_part = calloc(m->graph->node_count + 1, sizeof *in_part);
    if (!in_part) {
        st = cg_error_set(err, CG_NOMEM, "out of memory");
        goto done;
    }
    for (size_t p = 0; p < a->partition_count; p++) {
        s->partition_nodes += a->partitions[p].node_count;
        for (size_t k = 0; k < a->partitions[p].node_count; k++)
            in_part[a->partitions[p].nodes[k]] = true;
    }
    for (size_t d = 0; d < a->dropped_count; d++)
        in_part[a->dropped[d].node] = true;
    for (size_t i = 0; i < m->graph->node_count; i++) {
        cg_support_query q = {m, m->graph, &m->graph->nodes[i], cg_model_opset(m, ""), env};
        char reason[512];
        bool pred = xnn->vt->supports(xnn, &q, reason, sizeof reason);
        if (pred != in_part[i]) {
            s->residency_errors++;
            fprintf(stderr, "RESIDENCY %s: node %zu (%s) supported=%d but in a partition=%d\n",
                    label, i, m->graph->nodes[i].op_type, pred, in_part[i]);
        }
    }
    free(in_part);

    for (size_t p = 0; p < a->partition_count; p++)
        bl.count += a->partitions[p].output_count;
    bl.names = calloc(bl.count + 1, sizeof *bl.names);
    bl.ref = calloc(bl.count + 1, sizeof *bl.ref);
    if (!bl.names || !bl.ref) {
        st = cg_error_set(err, CG_NOMEM, "out of memory");
        goto done;
    }
    bl.count = 0;
    for (size_t p = 0; p < a->partition_count; p++)
        for (size_t k = 0; k < a->partitions[p].output_count; k++)
            bl.names[bl.count++] = a->partitions[p].outputs[k];
    cg_runtime_options opt;
    cg_runtime_options_default(&opt);
    opt.observe = observe_ref;
    opt.observe_user = &bl;
    if ((st = cg_runtime_init(m, &opt, &ref, err)) != CG_OK)
        goto done;
    opt.assignment = a;
    opt.types = env;
    opt.observe = observe_del;
    if ((st = cg_runtime_init(m, &opt, &del, err)) != CG_OK) {
        s->residency_errors++;
        goto done;
    }
    for (size_t p = 0; p < cg_runtime_partition_count(del); p++) {
        cg_runtime_partition_info info;
        if ((st = cg_runtime_partition_info_get(del, p, &info, err)) != CG_OK)
            goto done;
        const cg_xnnpack_report *r = info.state;
        const cg_partition *part = &a->partitions[info.id];
        bool same = r->lowered_count == part->node_count;
        for (size_t k = 0; same && k < part->node_count; k++)
            same = r->lowered[k] == part->nodes[k];
        if (!same) {
            s->residency_errors++;
            fprintf(stderr, "RESIDENCY %s: partition %d: compile lowered %zu of %zu nodes\n",
                    label, info.id, r->lowered_count, part->node_count);
        }
        s->layout_in += r->layout_inputs;
        s->layout_out += r->layout_outputs;
        s->xnn_nodes += r->xnn_node_count;
        s->repacked += r->weights_repacked;
        s->in_place += r->weights_in_place;
    }
    if ((st = make_feeds(m, env, &feeds, &nf, err)) != CG_OK)
        goto done;
    if ((st = timed_runs(ref, feeds, nf, 1, &s->ref_median, &ro, &nro, err)) != CG_OK) {
        cg_error_prefix(err, "reference run: ");
        goto done;
    }
    if ((st = timed_runs(del, feeds, nf, 1, &s->xnn_median, &xo, &nxo, err)) != CG_OK) {
        cg_error_prefix(err, "delegated run: ");
        goto done;
    }
    if (runs > 1 && (st = bench(m, a, env, feeds, nf, runs, s, err)) != CG_OK)
        goto done;
    s->parity_ran = true;
    s->parity_ok = nro == nxo;
    for (size_t i = 0; i < nro && s->parity_ok; i++)
        s->parity_ok = compare_values(ro[i].value, xo[i].value, &s->max_diff, &s->max_ref);
    if (s->max_diff > TOL * (s->max_ref > 1.0 ? s->max_ref : 1.0))
        s->parity_ok = false;
    s->boundaries_compared = bl.compared;
    s->boundaries_mismatched = bl.mismatched;
    s->boundary_max_diff = bl.max_diff;
    s->boundary_max_ref = bl.max_ref;
    if (bl.mismatched || bl.compared < bl.count)
        s->parity_ok = false;
done:
    boundary_log_free(&bl);
    cg_runtime_free_outputs(ro, nro);
    cg_runtime_free_outputs(xo, nxo);
    free_feeds(feeds, nf);
    cg_runtime_free(del);
    cg_runtime_free(ref);
    cg_assignment_free(a);
    return st;
}

/* --- frozen variants ------------------------------------------------------------------ */

typedef struct frozen {
    cg_tensor_proto *inits, *old_inits;
    size_t old_init_count;
    cg_value_info *inputs, *old_inputs;
    size_t old_input_count;
    cg_value **vals;
    size_t val_count;
} frozen;

static void unfreeze(cg_model *m, frozen *fz)
{
    if (fz->inits) {
        m->graph->initializers = fz->old_inits;
        m->graph->initializer_count = fz->old_init_count;
        m->graph->inputs = fz->old_inputs;
        m->graph->input_count = fz->old_input_count;
    }
    for (size_t i = 0; i < fz->val_count; i++)
        cg_value_free(fz->vals[i]);
    free(fz->vals);
    free(fz->inits);
    free(fz->inputs);
    memset(fz, 0, sizeof *fz);
}

/* Turns graph inputs other than the first float one into initializers with the
 * values of dir/test_data_set_0; false when there is nothing to freeze. */
static bool freeze_inputs(cg_model *m, const char *dir, frozen *fz)
{
    cg_graph *g = m->graph;
    memset(fz, 0, sizeof *fz);
    size_t n = g->input_count;
    fz->vals = calloc(n + 1, sizeof *fz->vals);
    fz->inits = calloc(g->initializer_count + n + 1, sizeof *fz->inits);
    fz->inputs = calloc(n + 1, sizeof *fz->inputs);
    if (!fz->vals || !fz->inits || !fz->inputs)
        goto none;
    if (g->initializer_count)
        memcpy(fz->inits, g->initializers, g->initializer_count * sizeof *fz->inits);
    size_t ninit = g->initializer_count, nin = 0;
    bool kept_first = false; /* the first float input stays a runtime input */
    for (size_t i = 0; i < n; i++) {
        const cg_value_info *vi = &g->inputs[i];
        const cg_type *ty = vi->type;
        bool is_tensor = ty && ty->kind == CG_TYPE_TENSOR && ty->elem_type != CG_DTYPE_STRING &&
                         !cg_graph_initializer(g, vi->name);
        bool is_float = is_tensor && ty->elem_type == CG_DTYPE_FLOAT;
        if (!is_tensor || (is_float && !kept_first)) {
            kept_first = kept_first || is_float;
            fz->inputs[nin++] = *vi;
            continue;
        }
        char path[4200];
        snprintf(path, sizeof path, "%.4000s/test_data_set_0/input_%zu.pb", dir, i);
        cg_error err;
        cg_error_clear(&err);
        cg_value *v = NULL;
        if (cg_io_pb_load(path, ty, 0, &v, &err) != CG_OK || v->kind != CG_VALUE_TENSOR) {
            cg_value_free(v);
            fz->inputs[nin++] = *vi;
            continue;
        }
        fz->vals[fz->val_count++] = v;
        cg_tensor_proto *tp = &fz->inits[ninit++];
        tp->name = vi->name;
        tp->dims = v->tensor.dims;
        tp->rank = (size_t)v->tensor.rank;
        tp->data_type = (int32_t)v->tensor.dtype;
        tp->has_data_type = true;
        tp->raw_data.data = v->tensor.data;
        tp->raw_data.len = cg_tensor_bytes(&v->tensor);
    }
    if (!fz->val_count)
        goto none;
    fz->old_inits = g->initializers;
    fz->old_init_count = g->initializer_count;
    fz->old_inputs = g->inputs;
    fz->old_input_count = g->input_count;
    g->initializers = fz->inits;
    g->initializer_count = ninit;
    g->inputs = fz->inputs;
    g->input_count = nin;
    return true;
none:
    unfreeze(m, fz);
    return false;
}

/* --- drivers ------------------------------------------------------------------------ */

static int parse_bindings(int argc, char **argv, cg_dim_binding *b, size_t *nb)
{
    *nb = 0;
    for (int i = 0; i < argc; i++) {
        char *eq = strchr(argv[i], '=');
        if (!eq || *nb >= MAX_BINDINGS) {
            fprintf(stderr, "bad binding '%s' (want symbol=N)\n", argv[i]);
            return -1;
        }
        *eq = '\0';
        b[*nb].symbol = argv[i];
        b[(*nb)++].value = strtoll(eq + 1, NULL, 10);
    }
    return 0;
}

/* One model from the command line: prints a report line; 0 when it passes. */
static int run_one(const char *path, int runs, const cg_dim_binding *b, size_t nb)
{
    cg_error err;
    cg_error_clear(&err);
    cg_model *m = NULL;
    cg_type_env *env = NULL;
    model_stats s;
    memset(&s, 0, sizeof s);
    const char *label = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;
    int rc = 1;
    char dirlabel[256];
    if (strcmp(label, "model.onnx") == 0 && label - path > 1) {
        /* conformance layout: name the test directory */
        size_t end = (size_t)(label - 1 - path), begin = end;
        while (begin > 0 && path[begin - 1] != '/')
            begin--;
        snprintf(dirlabel, sizeof dirlabel, "%.*s", (int)(end - begin), path + begin);
        label = dirlabel;
    }
    cg_random_inputs policy = {0};
    if (cg_model_load(path, NULL, &m, &err) == CG_OK)
        policy = test_policy(m);
    if (!m || cg_type_env_build_with(m, b, nb, &policy, &env, &err) != CG_OK) {
        printf("%-34s ERROR %s\n", label, err.msg);
        goto done;
    }
    check_residency(m, env, label, &s);
    if (check_model(m, env, label, runs, &s, &err) != CG_OK) {
        printf("%-34s ERROR %s\n", label, err.msg);
        goto done;
    }
    bool pass = s.parity_ok && !s.single_mismatch && !s.residency_errors;
    printf("%-34s %s nodes=%zu supported=%zu partitions=%zu (%zu nodes, %zu xnn nodes) "
           "residency single=%zu/%zu assign_errors=%zu layout in/out=%zu/%zu weights "
           "repacked/in-place=%zu/%zu outputs max|diff|=%.3g max|ref|=%.3g boundaries "
           "%zu compared, %zu over tolerance, max|diff|=%.3g max|ref|=%.3g",
           label, pass ? "PASS" : "FAIL", s.nodes, s.supported, s.partitions, s.partition_nodes,
           s.xnn_nodes, s.single_ok, s.nodes, s.residency_errors, s.layout_in, s.layout_out,
           s.repacked, s.in_place, s.max_diff, s.max_ref, s.boundaries_compared,
           s.boundaries_mismatched, s.boundary_max_diff, s.boundary_max_ref);
    if (runs > 1)
        printf(" ref=%.2fms xnnpack=%.2fms (mean %.2fms inside partitions) speedup=%.2fx",
               s.ref_median * 1e3, s.xnn_median * 1e3, s.in_partitions * 1e3,
               s.xnn_median > 0 ? s.ref_median / s.xnn_median : 0.0);
    printf("\n");
    rc = pass ? 0 : 1;
done:
    cg_type_env_free(env);
    cg_model_free(m);
    return rc;
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Totals over the conformance models of one variant. */
typedef struct conf_totals {
    size_t models, no_env, nodes, supported, single_ok, mismatch;
    size_t with_parts, parity_pass, parity_fail, assign_err, run_err;
} conf_totals;

static void conformance_model(cg_model *m, const char *label, conf_totals *t)
{
    cg_error err;
    cg_error_clear(&err);
    cg_type_env *env = NULL;
    model_stats s;
    memset(&s, 0, sizeof s);
    t->models++;
    cg_random_inputs policy = test_policy(m);
    if (cg_type_env_build_with(m, NULL, 0, &policy, &env, &err) != CG_OK) {
        t->no_env++; /* the reference cannot run it: nothing to place */
        return;
    }
    check_residency(m, env, label, &s);
    t->nodes += s.nodes;
    t->supported += s.supported;
    t->single_ok += s.single_ok;
    t->mismatch += s.single_mismatch;
    if (s.supported) {
        cg_status st = check_model(m, env, label, 1, &s, &err);
        t->assign_err += s.residency_errors;
        if (st != CG_OK) {
            t->run_err++;
            fprintf(stderr, "RUN %s: %s\n", label, err.msg);
        } else if (s.partitions) {
            t->with_parts++;
            if (s.parity_ok) {
                t->parity_pass++;
            } else {
                t->parity_fail++;
                fprintf(stderr, "PARITY %s: max|diff|=%.3g max|ref|=%.3g\n", label, s.max_diff,
                        s.max_ref);
            }
        }
    }
    if (getenv("CG_XNN_VERBOSE"))
        printf("%-50s supported=%zu/%zu partitions=%zu parity=%s\n", label, s.supported,
               s.nodes, s.partitions, !s.parity_ran ? "-" : s.parity_ok ? "pass" : "FAIL");
    cg_type_env_free(env);
}

static void print_totals(const char *what, const conf_totals *t)
{
    printf("%s: %zu models (%zu without a type environment), %zu nodes, %zu supported; "
           "supports()==compile() on %zu/%zu nodes (%zu mismatches); %zu models with "
           "partitions: parity %zu pass, %zu fail; %zu assignment residency errors, %zu run "
           "errors\n",
           what, t->models, t->no_env, t->nodes, t->supported, t->single_ok,
           t->single_ok + t->mismatch, t->mismatch, t->with_parts, t->parity_pass,
           t->parity_fail, t->assign_err, t->run_err);
}

static bool totals_bad(const conf_totals *t)
{
    return t->mismatch || t->parity_fail || t->assign_err || t->run_err;
}

/* Every conformance model: residency always, parity where a partition
 * forms; the same again with weights frozen into initializers. */
static int run_conformance(void)
{
    const char *dir = getenv("CG_ONNX_NODE_DIR");
    if (!dir)
        dir = "/usr/share/libonnx-testdata/data/node";
    DIR *d = opendir(dir);
    if (!d) {
        test_skip("no conformance data at %s", dir);
        return 77;
    }
    char **names = NULL;
    size_t count = 0, cap = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.')
            continue;
        if (count == cap) {
            cap = cap ? cap * 2 : 256;
            char **nn = realloc(names, cap * sizeof *nn);
            if (!nn)
                break;
            names = nn;
        }
        names[count] = malloc(strlen(e->d_name) + 1);
        if (!names[count])
            break;
        strcpy(names[count++], e->d_name);
    }
    closedir(d);
    qsort(names, count, sizeof *names, cmp_str);
    conf_totals plain, frz;
    memset(&plain, 0, sizeof plain);
    memset(&frz, 0, sizeof frz);
    for (size_t i = 0; i < count; i++) {
        char path[4200], sub[4000], label[600];
        snprintf(sub, sizeof sub, "%.2000s/%.1900s", dir, names[i]);
        snprintf(path, sizeof path, "%s/model.onnx", sub);
        cg_error err;
        cg_error_clear(&err);
        cg_model *m = NULL;
        if (cg_model_load(path, NULL, &m, &err) == CG_OK) {
            conformance_model(m, names[i], &plain);
            frozen fz;
            if (freeze_inputs(m, sub, &fz)) {
                snprintf(label, sizeof label, "%s (frozen)", names[i]);
                conformance_model(m, label, &frz);
                unfreeze(m, &fz);
            }
            cg_model_free(m);
        }
        free(names[i]);
    }
    free(names);
    print_totals("conformance", &plain);
    print_totals("conformance, weights frozen", &frz);
    return totals_bad(&plain) || totals_bad(&frz) || plain.supported == 0 || frz.supported == 0;
}

int main(int argc, char **argv)
{
    cg_error err;
    cg_error_clear(&err);
    cg_target_registry *reg = NULL;
    if (cg_target_registry_load(NULL, &reg, &err) != CG_OK) {
        fprintf(stderr, "loading targets: %s\n", err.msg);
        return 1;
    }
    xnn = cg_target_registry_find(reg, "xnnpack", &err);
    int rc = 0;
    if (!xnn) {
        if (getenv("CG_REQUIRE_XNNPACK")) {
            fprintf(stderr, "xnnpack target required but not available: %s\n", err.msg);
            rc = 1;
        } else {
            test_skip("xnnpack target not available (%s)", err.msg);
            rc = 77;
        }
    } else if (argc >= 3 && strcmp(argv[1], "check") == 0) {
        cg_dim_binding b[MAX_BINDINGS];
        size_t nb;
        rc = parse_bindings(argc - 3, argv + 3, b, &nb) ? 2 : run_one(argv[2], 1, b, nb);
    } else if (argc >= 4 && strcmp(argv[1], "bench") == 0) {
        cg_dim_binding b[MAX_BINDINGS];
        size_t nb;
        int runs = atoi(argv[3]);
        rc = parse_bindings(argc - 4, argv + 4, b, &nb) ? 2
                                                       : run_one(argv[2], runs > 0 ? runs : 1, b, nb);
    } else if (argc == 1) {
        rc = run_conformance();
    } else {
        fprintf(stderr, "usage: %s [check MODEL [sym=N...] | bench MODEL RUNS [sym=N...]]\n",
                argv[0]);
        rc = 2;
    }
    cg_target_registry_free(reg);
    return rc;
}
