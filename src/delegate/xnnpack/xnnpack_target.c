/*
 * The "xnnpack" executing target: supports/compile/run/release over the
 * lowering table of xnnpack_lower.c.
 *
 * compile builds one XNNPACK subgraph per partition: the partition's inputs
 * are external inputs (ids 0..I-1), its outputs external outputs (ids
 * I..I+O-1), every node is lowered in partition (topological) order, and
 * the runtime is created over a pthreadpool of the partition's threads (the
 * caller's runtime's; none for one thread: XNNPACK then runs on the calling
 * thread). XNNPACK splits an operator's output tiles over the pool and never
 * its reductions, so the bits do not depend on the thread count. Shapes are those
 * of the type environment the partition was formed with; a run whose input
 * shapes differ is refused rather than silently recompiled.
 *
 * run copies each input into a staging buffer with XNNPACK's over-read
 * margin (rank-4 inputs transposed NCHW -> NHWC on the way), lets XNNPACK
 * write rank-4 outputs into staging (then NHWC -> NCHW into the output
 * value) and every other output straight into the output value.
 *
 * NaN: this XNNPACK (Debian's, 2022) has only min/max-clamped kernels
 * for binary ops, convolutions, fully-connected and pooling, and the clamp
 * at -inf..inf turns a NaN into +-inf, where a modern XNNPACK (unclamped
 * binary ops) and the reference keep the NaN. The target says so
 * (nan_clamped): after a run with an infinite output lane the runtime
 * puts NaN back in the lanes where the reference has NaN (target.h), and
 * keeps XNNPACK's value everywhere else. Not restored: a NaN that a later
 * node of the same partition turns finite again (0/0 clamped to -inf, then
 * Relu gives 0 where the reference keeps NaN): the output differs from the
 * reference and the comparison reports it (a false FAIL, never a PASS).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <pthreadpool.h>

#include "core/mapfile.h"
#include "delegate/xnnpack/xnnpack.h"
#include "delegate/xnnpack/xnnpack_internal.h"
#include "run/exec.h"

typedef struct xnng_io {
    const char *name;
    int rank;
    int64_t dims[CG_MAX_RANK];
    int64_t numel;
    bool nhwc;      /* rank 4: XNNPACK holds it NHWC */
    float *staging; /* inputs always, outputs when nhwc */
} xnng_io;

typedef struct xnng_state {
    cg_xnnpack_report report; /* first: see xnnpack.h */
    size_t *lowered;
    xnn_runtime_t runtime;
    pthreadpool_t pool; /* NULL: one thread */
    xnng_io *in, *out;
    size_t in_count, out_count;
    struct xnn_external_value *ext;
    /* what XNNPACK's static values point into: the build's copies */
    xnng_buffers buffers;
} xnng_state;

/* --- supports ---------------------------------------------------------------- */

static bool xnng_supports(const cg_target *t, const cg_support_query *q, char *reason,
                          size_t reason_len)
{
    (void)t;
    const cg_node *n = q->node;
    char nm[160];
    if (n->name && n->name[0])
        snprintf(nm, sizeof nm, "'%s'", n->name);
    else
        snprintf(nm, sizeof nm, "#%zu", q->graph && n >= q->graph->nodes &&
                                                n < q->graph->nodes + q->graph->node_count
                                            ? (size_t)(n - q->graph->nodes)
                                            : (size_t)0);
    const char *op_type = n->op_type ? n->op_type : "?";
    if (!q->model || q->graph != q->model->graph) {
        snprintf(reason, reason_len, "%s %s: nodes inside control-flow bodies are not delegated "
                 "(the runtime runs delegate partitions of the main graph only)", op_type, nm);
        return false;
    }
    const xnng_op *op = xnng_find_op(n->domain, n->op_type);
    if (!op) {
        snprintf(reason, reason_len, "%s %s: no XNNPACK lowering: %s", op_type, nm,
                 xnng_missing_op_note(n->op_type));
        return false;
    }
    cg_error err;
    cg_error_clear(&err);
    xnng_build b;
    memset(&b, 0, sizeof b);
    b.model = q->model;
    b.graph = q->graph;
    b.types = q->types;
    b.dry_run = true;
    b.err = &err;
    cg_status st = op->lower(&b, n, true);
    if (st == CG_UNSUPPORTED)
        snprintf(reason, reason_len, "%s", b.reason);
    else if (st != CG_OK)
        snprintf(reason, reason_len, "%s %s: %s", op_type, nm, err.msg);
    xnng_build_clear(&b);
    return st == CG_OK;
}

/* --- compile ------------------------------------------------------------------- */

static void state_free(xnng_state *s)
{
    if (!s)
        return;
    if (s->runtime)
        xnn_delete_runtime(s->runtime);
    if (s->pool)
        pthreadpool_destroy(s->pool);
    for (size_t i = 0; i < s->in_count; i++)
        free(s->in[i].staging);
    for (size_t i = 0; i < s->out_count; i++)
        free(s->out[i].staging);
    free(s->in);
    free(s->out);
    free(s->ext);
    free(s->lowered);
    xnng_build owned;
    memset(&owned, 0, sizeof owned);
    owned.buffers = s->buffers;
    xnng_build_clear(&owned);
    free(s);
}

/* Fills io from the type environment: a float32 tensor of rank 1..6. */
static cg_status io_init(const cg_partition_desc *p, const char *name, bool input, xnng_io *io,
                         cg_error *err)
{
    const cg_value_type *vt = p->types ? cg_type_env_get(p->types, name) : NULL;
    if (!vt || !vt->known || vt->dtype != CG_DTYPE_FLOAT || vt->rank < 1 ||
        vt->rank > XNN_MAX_TENSOR_DIMS)
        return cg_error_set(err, CG_UNSUPPORTED, "xnnpack: partition %s '%s' is not a float32 "
                            "tensor of rank 1..%d with a known shape",
                            input ? "input" : "output", name, XNN_MAX_TENSOR_DIMS);
    io->name = name;
    io->rank = vt->rank;
    io->numel = 1;
    for (int d = 0; d < vt->rank; d++) {
        if (vt->dims[d] <= 0 || vt->dims[d] > INT32_MAX || io->numel > INT64_MAX / vt->dims[d])
            return cg_error_set(err, CG_UNSUPPORTED, "xnnpack: partition %s '%s' has a dim "
                                "%lld out of range", input ? "input" : "output", name,
                                (long long)vt->dims[d]);
        io->dims[d] = vt->dims[d];
        io->numel *= vt->dims[d];
    }
    io->nhwc = vt->rank == 4;
    if (input || io->nhwc) {
        if ((uint64_t)io->numel > (SIZE_MAX - XNN_EXTRA_BYTES) / sizeof(float))
            return cg_error_set(err, CG_LIMIT, "xnnpack: '%s' is too large", name);
        io->staging = malloc((size_t)io->numel * sizeof(float) + XNN_EXTRA_BYTES);
        if (!io->staging)
            return cg_error_set(err, CG_NOMEM, "xnnpack: out of memory staging '%s'", name);
    }
    return CG_OK;
}

static cg_status xnng_compile(const cg_target *t, const cg_partition_desc *p, void **out,
                              cg_error *err)
{
    (void)t;
    *out = NULL;
    cg_status st = CG_OK;
    xnng_build b;
    memset(&b, 0, sizeof b);
    xnng_state *s = calloc(1, sizeof *s);
    if (!s)
        return cg_error_set(err, CG_NOMEM, "xnnpack: out of memory compiling a partition");
    if (!p->model || p->graph != p->model->graph) {
        st = cg_error_set(err, CG_UNSUPPORTED, "xnnpack: only partitions of the main graph are "
                          "compiled");
        goto fail;
    }
    if (p->input_count + p->output_count >= XNN_INVALID_VALUE_ID / 2) {
        st = cg_error_set(err, CG_LIMIT, "xnnpack: partition has too many inputs/outputs");
        goto fail;
    }
    s->in = calloc(p->input_count + 1, sizeof *s->in);
    s->out = calloc(p->output_count + 1, sizeof *s->out);
    s->ext = calloc(p->input_count + p->output_count + 1, sizeof *s->ext);
    s->lowered = calloc(p->node_count + 1, sizeof *s->lowered);
    if (!s->in || !s->out || !s->ext || !s->lowered) {
        st = cg_error_set(err, CG_NOMEM, "xnnpack: out of memory compiling a partition");
        goto fail;
    }
    b.model = p->model;
    b.graph = p->graph;
    b.types = p->types;
    b.desc = p;
    b.err = err;
    enum xnn_status xs = xnn_create_subgraph((uint32_t)(p->input_count + p->output_count), 0,
                                             &b.subgraph);
    if (xs != xnn_status_success) {
        st = cg_error_set(err, CG_RUNTIME, "xnnpack: xnn_create_subgraph failed (%s)",
                          xnng_status_name(xs));
        goto fail;
    }
    for (size_t i = 0; i < p->input_count; i++, s->in_count++) {
        xnng_io *io = &s->in[i];
        if ((st = io_init(p, p->inputs[i], true, io, err)) != CG_OK)
            goto fail;
        size_t xd[XNN_MAX_TENSOR_DIMS];
        for (int d = 0; d < io->rank; d++)
            xd[d] = (size_t)io->dims[d];
        if (io->nhwc) {
            xd[1] = (size_t)io->dims[2];
            xd[2] = (size_t)io->dims[3];
            xd[3] = (size_t)io->dims[1];
        }
        uint32_t id;
        xs = xnn_define_tensor_value(b.subgraph, xnn_datatype_fp32, (size_t)io->rank, xd, NULL,
                                     (uint32_t)i, XNN_VALUE_FLAG_EXTERNAL_INPUT, &id);
        if (xs != xnn_status_success) {
            st = cg_error_set(err, CG_RUNTIME, "xnnpack: defining partition input '%s' failed "
                              "(%s)", io->name, xnng_status_name(xs));
            goto fail;
        }
        xnng_value v;
        memset(&v, 0, sizeof v);
        if (b.value_count == b.value_cap) {
            size_t cap = b.value_cap ? b.value_cap * 2 : 32;
            xnng_value *nv = realloc(b.values, cap * sizeof *nv);
            if (!nv) {
                st = cg_error_set(err, CG_NOMEM, "xnnpack: out of memory compiling");
                goto fail;
            }
            b.values = nv;
            b.value_cap = cap;
        }
        v.name = io->name;
        v.id = id;
        v.rank = io->rank;
        memcpy(v.dims, io->dims, sizeof v.dims);
        b.values[b.value_count++] = v;
    }
    for (size_t k = 0; k < p->node_count; k++) {
        if (p->nodes[k] >= p->graph->node_count) {
            st = cg_error_set(err, CG_INVALID, "xnnpack: partition node index %zu out of range",
                              p->nodes[k]);
            goto fail;
        }
        const cg_node *n = &p->graph->nodes[p->nodes[k]];
        const xnng_op *op = xnng_find_op(n->domain, n->op_type);
        if (!op) {
            st = cg_error_set(err, CG_UNSUPPORTED, "xnnpack: %s '%s' has no XNNPACK lowering: %s",
                              n->op_type ? n->op_type : "?", n->name ? n->name : "",
                              xnng_missing_op_note(n->op_type));
            goto fail;
        }
        if ((st = op->lower(&b, n, false)) != CG_OK)
            goto fail;
        s->lowered[s->report.lowered_count++] = p->nodes[k];
    }
    for (size_t i = 0; i < p->output_count; i++, s->out_count++) {
        if ((st = io_init(p, p->outputs[i], false, &s->out[i], err)) != CG_OK)
            goto fail;
        bool produced = false;
        for (size_t v = 0; v < b.value_count && !produced; v++)
            produced = strcmp(b.values[v].name, p->outputs[i]) == 0 && b.values[v].id ==
                       (uint32_t)(p->input_count + i);
        if (!produced) {
            st = cg_error_set(err, CG_INVALID, "xnnpack: partition output '%s' is not produced "
                              "by a node of the partition", p->outputs[i]);
            goto fail;
        }
    }
    if (p->threads > 1 && !(s->pool = pthreadpool_create((size_t)p->threads))) {
        st = cg_error_set(err, CG_NOMEM, "xnnpack: creating a pool of %d threads failed",
                          p->threads);
        goto fail;
    }
    s->report.threads = s->pool ? pthreadpool_get_threads_count(s->pool) : 1;
    xs = xnn_create_runtime_v2(b.subgraph, s->pool, 0, &s->runtime);
    if (xs != xnn_status_success) {
        st = cg_error_set(err, CG_RUNTIME, "xnnpack: xnn_create_runtime_v2 failed (%s) for a "
                          "partition of %zu nodes", xnng_status_name(xs), p->node_count);
        goto fail;
    }
    xnn_delete_subgraph(b.subgraph);
    b.subgraph = NULL;
    /* XNNPACK holds its own packing of the filters and biases now, and
     * copies in the build's buffers of every other constant (xnng_const):
     * the model's pages of the weights read in place need not stay
     * resident for it (a transient copy is not a file mapping: no-op) */
    for (size_t i = 0; i < b.const_count; i++)
        if (b.consts[i].borrowed && !b.consts[i].alias)
            cg_mapping_drop_pages(b.consts[i].value->tensor.data,
                                  cg_tensor_bytes(&b.consts[i].value->tensor));
    s->report.transient_bytes_freed = b.transient.total;
    xnng_transient_free(&b.transient);
    s->report.lowered = s->lowered;
    s->report.xnn_node_count = b.xnn_nodes;
    s->report.weights_repacked = b.weights_repacked;
    s->report.weights_in_place = b.weights_in_place;
    for (size_t i = 0; i < s->in_count; i++)
        s->report.layout_inputs += s->in[i].nhwc;
    for (size_t i = 0; i < s->out_count; i++)
        s->report.layout_outputs += s->out[i].nhwc;
    /* the runtime points into these: the state keeps them */
    s->buffers = b.buffers;
    memset(&b.buffers, 0, sizeof b.buffers);
    xnng_build_clear(&b);
    *out = s;
    return CG_OK;
fail:
    if (b.subgraph)
        xnn_delete_subgraph(b.subgraph);
    state_free(s); /* the runtime, if any, goes before the data it points into */
    xnng_build_clear(&b);
    return st;
}

/* --- run ------------------------------------------------------------------------ */

static cg_status xnng_run(void *state, const cg_value *const *inputs, cg_value **outputs,
                          cg_error *err)
{
    xnng_state *s = state;
    cg_status st = CG_OK;
    size_t made = 0;
    for (size_t i = 0; i < s->in_count; i++) {
        const xnng_io *io = &s->in[i];
        const cg_value *v = inputs[i];
        if (!v || v->kind != CG_VALUE_TENSOR || v->tensor.dtype != CG_DTYPE_FLOAT ||
            !cg_shape_equal(v->tensor.rank, v->tensor.dims, io->rank, io->dims)) {
            char want[160], got[160] = "(not a float tensor)";
            cg_exec_format_shape(io->rank, io->dims, want, sizeof want);
            if (v && v->kind == CG_VALUE_TENSOR && v->tensor.dtype == CG_DTYPE_FLOAT)
                cg_exec_format_shape(v->tensor.rank, v->tensor.dims, got, sizeof got);
            return cg_error_set(err, CG_UNSUPPORTED, "xnnpack: partition input '%s' was "
                                "compiled for float32 %s, got %s (XNNPACK shapes are fixed at "
                                "compile)", io->name, want, got);
        }
        const float *src = v->tensor.data;
        if (io->nhwc) {
            size_t N = (size_t)io->dims[0], C = (size_t)io->dims[1];
            size_t HW = (size_t)(io->dims[2] * io->dims[3]);
            for (size_t nn = 0; nn < N; nn++)
                for (size_t c = 0; c < C; c++) {
                    const float *sp = src + (nn * C + c) * HW;
                    float *dp = io->staging + nn * HW * C + c;
                    for (size_t q = 0; q < HW; q++)
                        dp[q * C] = sp[q];
                }
            s->report.layout_conversions++;
        } else {
            memcpy(io->staging, src, (size_t)io->numel * sizeof(float));
        }
        s->ext[i].id = (uint32_t)i;
        s->ext[i].data = io->staging;
    }
    for (; made < s->out_count; made++) {
        const xnng_io *io = &s->out[made];
        st = cg_value_alloc_tensor(CG_DTYPE_FLOAT, io->rank, io->dims, &outputs[made], err);
        if (st != CG_OK)
            goto fail;
        s->ext[s->in_count + made].id = (uint32_t)(s->in_count + made);
        s->ext[s->in_count + made].data = io->nhwc ? io->staging : outputs[made]->tensor.data;
    }
    enum xnn_status xs = xnn_setup_runtime(s->runtime, s->in_count + s->out_count, s->ext);
    if (xs == xnn_status_success)
        xs = xnn_invoke_runtime(s->runtime);
    if (xs != xnn_status_success) {
        st = cg_error_set(err, CG_RUNTIME, "xnnpack: running the partition failed (%s)",
                          xnng_status_name(xs));
        goto fail;
    }
    for (size_t i = 0; i < s->out_count; i++) {
        const xnng_io *io = &s->out[i];
        if (!io->nhwc)
            continue;
        float *dst = outputs[i]->tensor.data;
        size_t N = (size_t)io->dims[0], C = (size_t)io->dims[1];
        size_t HW = (size_t)(io->dims[2] * io->dims[3]);
        for (size_t nn = 0; nn < N; nn++)
            for (size_t c = 0; c < C; c++) {
                float *dp = dst + (nn * C + c) * HW;
                const float *sp = io->staging + nn * HW * C + c;
                for (size_t q = 0; q < HW; q++)
                    dp[q] = sp[q * C];
            }
        s->report.layout_conversions++;
    }
    s->report.runs++;
    return CG_OK;
fail:
    for (size_t i = 0; i < made; i++) {
        cg_value_free(outputs[i]);
        outputs[i] = NULL;
    }
    return st;
}

static void xnng_release(void *state)
{
    state_free(state);
}

static void xnng_destroy(cg_target *t)
{
    free(t);
}

static const cg_target_vtable xnng_vtable = {
    xnng_supports, xnng_compile, xnng_run, xnng_release, xnng_destroy,
};

static const char *const xnng_not_modelled[] = {
    "runs in fp32 on the runtime's threads (a pthreadpool of --threads); XNNPACK's fp16 and "
    "sparse inference are off",
    "shapes are fixed at compile: a run with other input shapes is refused",
    "NaN: this XNNPACK's clamped kernels turn NaN into +-inf; NaN is put back in the output "
    "lanes where the reference has NaN, and a NaN a later node of the partition makes finite "
    "again is not",
};

cg_target *cg_xnnpack_target_new(void)
{
    if (xnn_initialize(NULL) != xnn_status_success)
        return NULL;
    cg_target *t = calloc(1, sizeof *t);
    if (!t)
        return NULL;
    t->name = "xnnpack";
    t->version = "git ae108ef (2022-02-16)";
    t->description = "XNNPACK subgraph delegate: float32 CNN ops, NHWC inside partitions";
    t->source = "compile()";
    t->kind = CG_TARGET_EXECUTING;
    t->fallback = CG_FALLBACK_CPU;
    t->precision = CG_PRECISION_FP32;
    t->layout = CG_LAYOUT_NHWC; /* rank-4 values are transposed at the boundary */
    /* the runtime folds constant nodes when it is built (src/run/fold.c):
     * the graph it partitions and runs is the folded one */
    t->lowering = "convgate-init";
    t->nan_clamped = true;
    t->not_modelled = xnng_not_modelled;
    t->not_modelled_count = sizeof xnng_not_modelled / sizeof xnng_not_modelled[0];
    t->vt = &xnng_vtable;
    return t;
}
