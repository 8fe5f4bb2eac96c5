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
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <pthreadpool.h>

#include "core/strmap.h"
#include "delegate/xnnpack/xnnpack.h"
#include "delegate/xnnpack/xnnpack_internal.h"
#include "run/exec.h"

typedef struct xnng_io {
    const char *name;
    int rank;
    int64_t dims[CG_MAX_RANK];
    int64_t numel;
    bool nhwc;      /* rank 4: XNNPACK holds it NHWC */
    /* inputs, crossing values and nhwc outputs always; an output that a
     * later segment reads too (with XNNPACK's over-read margin) */
    float *staging;
} xnng_io;

/* A partition whose constants reach XNNG_SEGMENT_BYTES is built as several
 * XNNPACK runtimes, one per segment of its nodes (in partition order), run
 * one after the other. xnn_create_runtime_v2 packs every filter of its
 * subgraph at once, with all their sources alive: the transient reordered
 * filters and the model's pages read in place. One segment at a time, the
 * creation holds XNNPACK's packing so far and one segment's sources
 * (resnet50: docs/BENCHMARKS.md "The XNNPACK delegate builds in segments").
 * A value one segment makes and a later one reads crosses through a buffer
 * of ours in XNNPACK's layout (NHWC for rank 4): no conversion, one more
 * external value. Each runtime plans its own workspace, so segments cost
 * some activation memory: the budget keeps them few. */
#define XNNG_SEGMENT_BYTES ((size_t)16 << 20)

/* One segment's runtime and its external values: external id e is slot
 * slot[e] (xnng_state: the partition's inputs, outputs, then the crossing
 * values). */
typedef struct xnng_segment {
    xnn_runtime_t runtime;
    size_t *slot;
    size_t ext_count;
    struct xnn_external_value *ext;
} xnng_segment;

typedef struct xnng_state {
    cg_xnnpack_report report; /* first: see xnnpack.h */
    size_t *lowered;
    xnng_segment *seg;
    size_t seg_count;
    pthreadpool_t pool; /* NULL: one thread */
    xnng_io *in, *out, *cross;
    size_t in_count, out_count, cross_count;
    /* what XNNPACK's static values point into: the build's copies */
    xnng_buffers buffers;
} xnng_state;

/* --- threads ----------------------------------------------------------------- */

/* One pthreadpool per thread count, shared by every partition alive with
 * that count (pthreadpool runs one parallel call at a time, so partitions
 * on other threads wait their turn), refcounted. A pool per partition
 * woke and parked a worker of its own at every partition: vit_b_16's 123
 * partitions ran slower at two threads than at one. */
#define SHARED_POOLS 8

typedef struct shared_pool {
    size_t threads;
    size_t refs;
    pthreadpool_t pool;
} shared_pool;

static pthread_mutex_t pools_lock = PTHREAD_MUTEX_INITIALIZER;
static shared_pool pools[SHARED_POOLS];

/* A pool of `threads` threads, shared; NULL when none could be made. */
static pthreadpool_t pool_acquire(size_t threads)
{
    pthreadpool_t got = NULL;
    pthread_mutex_lock(&pools_lock);
    for (size_t k = 0; k < SHARED_POOLS && !got; k++)
        if (pools[k].refs && pools[k].threads == threads) {
            pools[k].refs++;
            got = pools[k].pool;
        }
    for (size_t k = 0; k < SHARED_POOLS && !got; k++)
        if (!pools[k].refs && (got = pthreadpool_create(threads))) {
            pools[k] = (shared_pool){threads, 1, got};
        }
    pthread_mutex_unlock(&pools_lock);
    /* every slot taken by other counts: a pool of its own */
    return got ? got : pthreadpool_create(threads);
}

static void pool_release(pthreadpool_t pool)
{
    if (!pool)
        return;
    pthread_mutex_lock(&pools_lock);
    for (size_t k = 0; k < SHARED_POOLS; k++)
        if (pools[k].refs && pools[k].pool == pool) {
            if (--pools[k].refs == 0) {
                pthreadpool_destroy(pool);
                pools[k].pool = NULL;
            }
            pthread_mutex_unlock(&pools_lock);
            return;
        }
    pthread_mutex_unlock(&pools_lock);
    pthreadpool_destroy(pool); /* its own */
}

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
    for (size_t k = 0; s->seg && k < s->seg_count; k++) {
        if (s->seg[k].runtime)
            xnn_delete_runtime(s->seg[k].runtime);
        free(s->seg[k].slot);
        free(s->seg[k].ext);
    }
    free(s->seg);
    pool_release(s->pool);
    for (size_t i = 0; i < s->in_count; i++)
        free(s->in[i].staging);
    for (size_t i = 0; i < s->out_count; i++)
        free(s->out[i].staging);
    for (size_t i = 0; i < s->cross_count; i++)
        free(s->cross[i].staging);
    free(s->in);
    free(s->out);
    free(s->cross);
    free(s->lowered);
    xnng_build owned;
    memset(&owned, 0, sizeof owned);
    owned.buffers = s->buffers;
    xnng_build_clear(&owned);
    free(s);
}

/* Fills io from the type environment: a float32 tensor of rank 1..6,
 * `what` (a partition input, output or a value crossing segments), with a
 * staging buffer when staged or NHWC. */
static cg_status io_init(const cg_partition_desc *p, const char *name, const char *what,
                         bool staged, xnng_io *io, cg_error *err)
{
    const cg_value_type *vt = p->types ? cg_type_env_get(p->types, name) : NULL;
    if (!vt || !vt->known || vt->dtype != CG_DTYPE_FLOAT || vt->rank < 1 ||
        vt->rank > XNN_MAX_TENSOR_DIMS)
        return cg_error_set(err, CG_UNSUPPORTED, "xnnpack: %s '%s' is not a float32 tensor of "
                            "rank 1..%d with a known shape", what, name, XNN_MAX_TENSOR_DIMS);
    io->name = name;
    io->rank = vt->rank;
    io->numel = 1;
    for (int d = 0; d < vt->rank; d++) {
        if (vt->dims[d] <= 0 || vt->dims[d] > INT32_MAX || io->numel > INT64_MAX / vt->dims[d])
            return cg_error_set(err, CG_UNSUPPORTED, "xnnpack: %s '%s' has a dim %lld out of "
                                "range", what, name, (long long)vt->dims[d]);
        io->dims[d] = vt->dims[d];
        io->numel *= vt->dims[d];
    }
    io->nhwc = vt->rank == 4;
    if (staged || io->nhwc) {
        if ((uint64_t)io->numel > (SIZE_MAX - XNN_EXTRA_BYTES) / sizeof(float))
            return cg_error_set(err, CG_LIMIT, "xnnpack: '%s' is too large", name);
        io->staging = malloc((size_t)io->numel * sizeof(float) + XNN_EXTRA_BYTES);
        if (!io->staging)
            return cg_error_set(err, CG_NOMEM, "xnnpack: out of memory staging '%s'", name);
    }
    return CG_OK;
}

/* Bytes of the constants node k of p reads (what its creation packs):
 * inputs that are neither partition inputs nor made by the partition. */
static size_t node_const_bytes(const cg_partition_desc *p, const cg_strmap *made, size_t k)
{
    const cg_node *n = &p->graph->nodes[p->nodes[k]];
    size_t total = 0;
    for (size_t i = 0; i < n->input_count; i++) {
        const char *nm = n->inputs[i];
        if (!nm || !nm[0] || cg_strmap_has(made, nm))
            continue;
        bool input = false;
        for (size_t q = 0; q < p->input_count && !input; q++)
            input = strcmp(p->inputs[q], nm) == 0;
        const cg_value_type *vt = p->types ? cg_type_env_get(p->types, nm) : NULL;
        int64_t numel;
        size_t bytes;
        if (input || !vt || !vt->known || !cg_shape_numel(vt->rank, vt->dims, &numel) ||
            !cg_tensor_byte_size(vt->dtype, numel, &bytes))
            continue;
        total = bytes > SIZE_MAX - total ? SIZE_MAX : total + bytes;
    }
    return total;
}

/* The segments of p: seg_of[k] for its node k, in partition order, a new
 * one where the next node's constants would take the current one past
 * XNNG_SEGMENT_BYTES. Returns how many, 0 when out of memory. */
static size_t plan_segments(const cg_partition_desc *p, size_t *seg_of)
{
    cg_strmap made;
    memset(&made, 0, sizeof made);
    size_t seg = 0, bytes = 0, in_seg = 0;
    for (size_t k = 0; k < p->node_count; k++) {
        size_t nb = node_const_bytes(p, &made, k);
        if (in_seg && bytes + nb > XNNG_SEGMENT_BYTES) {
            seg++;
            bytes = in_seg = 0;
        }
        bytes = nb > SIZE_MAX - bytes ? SIZE_MAX : bytes + nb;
        in_seg++;
        seg_of[k] = seg;
        const cg_node *n = &p->graph->nodes[p->nodes[k]];
        for (size_t o = 0; o < n->output_count; o++)
            if (n->outputs[o] && n->outputs[o][0] &&
                cg_strmap_add(&made, n->outputs[o], k) == CG_STRMAP_NONE) {
                cg_strmap_free(&made);
                return 0;
            }
    }
    cg_strmap_free(&made);
    return p->node_count ? seg + 1 : 1;
}

/* The slot of a value (inputs, outputs, crossing values: xnng_state). */
static xnng_io *slot_io(xnng_state *s, size_t slot)
{
    if (slot < s->in_count)
        return &s->in[slot];
    slot -= s->in_count;
    return slot < s->out_count ? &s->out[slot] : &s->cross[slot - s->out_count];
}

/* Where the values cross: for every value a partition node makes, the
 * last segment that reads it (last), and the slots (slot_of: partition
 * inputs and outputs, and every value read past its segment, crossing). */
typedef struct seg_plan {
    size_t *seg_of;    /* per partition node */
    size_t *made_in;   /* per slot: the segment that makes it (SIZE_MAX: an input) */
    size_t count;
    cg_strmap last;    /* value -> the last segment reading it */
    cg_strmap slot_of; /* value -> slot */
} seg_plan;

static void seg_plan_free(seg_plan *sp)
{
    free(sp->seg_of);
    free(sp->made_in);
    cg_strmap_free(&sp->last);
    cg_strmap_free(&sp->slot_of);
}

/* Plans p's segments and makes s's crossing values (staged) and the
 * staging of outputs a later segment reads. */
static cg_status seg_plan_init(const cg_partition_desc *p, xnng_state *s, seg_plan *sp,
                               cg_error *err)
{
    memset(sp, 0, sizeof *sp);
    sp->seg_of = calloc(p->node_count + 1, sizeof *sp->seg_of);
    if (!sp->seg_of || !(sp->count = plan_segments(p, sp->seg_of)))
        return cg_error_set(err, CG_NOMEM, "xnnpack: out of memory planning segments");
    const cg_graph *g = p->graph;
    for (size_t k = 0; k < p->node_count; k++) {
        const cg_node *n = &g->nodes[p->nodes[k]];
        for (size_t i = 0; i < n->input_count; i++) {
            const char *nm = n->inputs[i];
            if (!nm || !nm[0])
                continue;
            size_t was = cg_strmap_get(&sp->last, nm);
            if ((was == CG_STRMAP_NONE || was < sp->seg_of[k]) &&
                !cg_strmap_set(&sp->last, nm, sp->seg_of[k]))
                return cg_error_set(err, CG_NOMEM, "xnnpack: out of memory planning segments");
        }
    }
    for (size_t i = 0; i < s->in_count + s->out_count; i++)
        if (cg_strmap_add(&sp->slot_of, slot_io(s, i)->name, i) == CG_STRMAP_NONE)
            return cg_error_set(err, CG_NOMEM, "xnnpack: out of memory planning segments");
    /* the crossing values, and outputs read past their segment */
    size_t cap = 0;
    for (int pass = 0; pass < 2; pass++) {
        size_t c = 0;
        for (size_t k = 0; k < p->node_count; k++) {
            const cg_node *n = &g->nodes[p->nodes[k]];
            for (size_t o = 0; o < n->output_count; o++) {
                const char *nm = n->outputs[o];
                size_t last = nm && nm[0] ? cg_strmap_get(&sp->last, nm) : CG_STRMAP_NONE;
                if (last == CG_STRMAP_NONE || last <= sp->seg_of[k])
                    continue;
                size_t slot = cg_strmap_get(&sp->slot_of, nm);
                if (pass == 0) {
                    c += slot == CG_STRMAP_NONE;
                    continue;
                }
                if (slot != CG_STRMAP_NONE && slot >= s->in_count) {
                    /* an output: staged, so the later segment reads it with
                     * XNNPACK's margin; copied out after the run */
                    xnng_io *io = slot_io(s, slot);
                    if (!io->staging) {
                        cg_status st = io_init(p, nm, "partition output", true, io, err);
                        if (st != CG_OK)
                            return st;
                    }
                    continue;
                }
                if (slot != CG_STRMAP_NONE)
                    continue; /* a partition input is no node's output */
                cg_status st = io_init(p, nm, "value crossing segments", true,
                                       &s->cross[s->cross_count], err);
                if (st != CG_OK)
                    return st;
                slot = s->in_count + s->out_count + s->cross_count++;
                if (cg_strmap_add(&sp->slot_of, nm, slot) == CG_STRMAP_NONE)
                    return cg_error_set(err, CG_NOMEM, "xnnpack: out of memory planning "
                                        "segments");
            }
        }
        if (pass == 0 && !(s->cross = calloc((cap = c) + 1, sizeof *s->cross)))
            return cg_error_set(err, CG_NOMEM, "xnnpack: out of memory planning segments");
    }
    (void)cap;
    size_t slots = s->in_count + s->out_count + s->cross_count;
    if (!(sp->made_in = malloc((slots + 1) * sizeof *sp->made_in)))
        return cg_error_set(err, CG_NOMEM, "xnnpack: out of memory planning segments");
    for (size_t i = 0; i < slots; i++)
        sp->made_in[i] = SIZE_MAX;
    for (size_t k = 0; k < p->node_count; k++) {
        const cg_node *n = &g->nodes[p->nodes[k]];
        for (size_t o = 0; o < n->output_count; o++) {
            size_t slot = n->outputs[o] ? cg_strmap_get(&sp->slot_of, n->outputs[o])
                                        : CG_STRMAP_NONE;
            if (slot != CG_STRMAP_NONE && slot >= s->in_count)
                sp->made_in[slot] = sp->seg_of[k];
        }
    }
    return CG_OK;
}

/* Adds slot to list (of *n) unless it is there. */
static void slot_list_add(size_t *list, size_t *n, size_t slot)
{
    for (size_t i = 0; i < *n; i++)
        if (list[i] == slot)
            return;
    list[(*n)++] = slot;
}

/* Builds segment `sg` of p into s->seg[sg]: its external inputs (partition
 * inputs it reads, values earlier segments made), its nodes, its external
 * outputs (partition outputs and crossing values it makes), its runtime. */
static cg_status build_segment(const cg_partition_desc *p, xnng_state *s, const seg_plan *sp,
                               size_t sg, xnng_build *b, cg_error *err)
{
    const cg_graph *g = p->graph;
    xnng_segment *seg = &s->seg[sg];
    size_t slots = s->in_count + s->out_count + s->cross_count;
    size_t *ins = calloc(slots + 1, sizeof *ins), *outs = calloc(slots + 1, sizeof *outs);
    const char **out_names = calloc(slots + 1, sizeof *out_names);
    size_t nin = 0, nout = 0;
    cg_status st = CG_OK;
    if (!ins || !outs || !out_names) {
        st = cg_error_set(err, CG_NOMEM, "xnnpack: out of memory compiling a partition");
        goto done;
    }
    for (size_t k = 0; k < p->node_count; k++) {
        if (sp->seg_of[k] != sg)
            continue;
        const cg_node *n = &g->nodes[p->nodes[k]];
        for (size_t i = 0; i < n->input_count; i++) {
            size_t slot = n->inputs[i] && n->inputs[i][0]
                              ? cg_strmap_get(&sp->slot_of, n->inputs[i])
                              : CG_STRMAP_NONE;
            if (slot != CG_STRMAP_NONE && (slot < s->in_count || sp->made_in[slot] < sg))
                slot_list_add(ins, &nin, slot);
        }
        for (size_t o = 0; o < n->output_count; o++) {
            size_t slot = n->outputs[o] && n->outputs[o][0]
                              ? cg_strmap_get(&sp->slot_of, n->outputs[o])
                              : CG_STRMAP_NONE;
            if (slot != CG_STRMAP_NONE && slot >= s->in_count)
                slot_list_add(outs, &nout, slot);
        }
    }
    if (nin + nout >= XNN_INVALID_VALUE_ID / 2) {
        st = cg_error_set(err, CG_LIMIT, "xnnpack: a segment has too many inputs/outputs");
        goto done;
    }
    enum xnn_status xs = xnn_create_subgraph((uint32_t)(nin + nout), 0, &b->subgraph);
    if (xs != xnn_status_success) {
        st = cg_error_set(err, CG_RUNTIME, "xnnpack: xnn_create_subgraph failed (%s)",
                          xnng_status_name(xs));
        goto done;
    }
    for (size_t e = 0; e < nin; e++) {
        const xnng_io *io = slot_io(s, ins[e]);
        size_t xd[XNN_MAX_TENSOR_DIMS];
        for (int d = 0; d < io->rank; d++)
            xd[d] = (size_t)io->dims[d];
        if (io->nhwc) {
            xd[1] = (size_t)io->dims[2];
            xd[2] = (size_t)io->dims[3];
            xd[3] = (size_t)io->dims[1];
        }
        uint32_t id;
        xs = xnn_define_tensor_value(b->subgraph, xnn_datatype_fp32, (size_t)io->rank, xd, NULL,
                                     (uint32_t)e, XNN_VALUE_FLAG_EXTERNAL_INPUT, &id);
        if (xs != xnn_status_success) {
            st = cg_error_set(err, CG_RUNTIME, "xnnpack: defining '%s' failed (%s)", io->name,
                              xnng_status_name(xs));
            goto done;
        }
        if (b->value_count == b->value_cap) {
            size_t cap = b->value_cap ? b->value_cap * 2 : 32;
            xnng_value *nv = realloc(b->values, cap * sizeof *nv);
            if (!nv) {
                st = cg_error_set(err, CG_NOMEM, "xnnpack: out of memory compiling");
                goto done;
            }
            b->values = nv;
            b->value_cap = cap;
        }
        xnng_value *v = &b->values[b->value_count++];
        memset(v, 0, sizeof *v);
        v->name = io->name;
        v->id = id;
        v->rank = io->rank;
        memcpy(v->dims, io->dims, sizeof v->dims);
    }
    for (size_t e = 0; e < nout; e++)
        out_names[e] = slot_io(s, outs[e])->name;
    b->ext_out = out_names;
    b->ext_out_count = nout;
    b->ext_out_first = (uint32_t)nin;
    for (size_t k = 0; k < p->node_count; k++) {
        if (sp->seg_of[k] != sg)
            continue;
        if (p->nodes[k] >= g->node_count) {
            st = cg_error_set(err, CG_INVALID, "xnnpack: partition node index %zu out of range",
                              p->nodes[k]);
            goto done;
        }
        const cg_node *n = &g->nodes[p->nodes[k]];
        const xnng_op *op = xnng_find_op(n->domain, n->op_type);
        if (!op) {
            st = cg_error_set(err, CG_UNSUPPORTED, "xnnpack: %s '%s' has no XNNPACK lowering: %s",
                              n->op_type ? n->op_type : "?", n->name ? n->name : "",
                              xnng_missing_op_note(n->op_type));
            goto done;
        }
        if ((st = op->lower(b, n, false)) != CG_OK)
            goto done;
        s->lowered[s->report.lowered_count++] = p->nodes[k];
    }
    for (size_t e = 0; e < nout; e++) {
        bool produced = false;
        for (size_t v = 0; v < b->value_count && !produced; v++)
            produced = strcmp(b->values[v].name, out_names[e]) == 0 &&
                       b->values[v].id == (uint32_t)(nin + e);
        if (!produced) {
            st = cg_error_set(err, CG_INVALID, "xnnpack: partition output '%s' is not produced "
                              "by a node of the partition", out_names[e]);
            goto done;
        }
    }
    /* after the partition's last operator the pool's workers sleep instead
     * of spinning: the CPU side's kernels (and their own pool) run next.
     * With a pool per partition, a spinning worker of each took the cores
     * from them (squeezenet1_1 at two threads, nine partitions: 188 ms a
     * run against 15 at one); with the shared pool it is within noise
     * (8.4-9.0 ms), and the CPU side keeps its cores whatever runs there */
    uint32_t flags = sg + 1 == sp->count ? XNN_FLAG_YIELD_WORKERS : 0;
    xs = xnn_create_runtime_v2(b->subgraph, s->pool, flags, &seg->runtime);
    if (xs != xnn_status_success) {
        st = cg_error_set(err, CG_RUNTIME, "xnnpack: xnn_create_runtime_v2 failed (%s) for a "
                          "partition of %zu nodes", xnng_status_name(xs), p->node_count);
        goto done;
    }
    seg->ext_count = nin + nout;
    seg->slot = malloc((seg->ext_count + 1) * sizeof *seg->slot);
    seg->ext = calloc(seg->ext_count + 1, sizeof *seg->ext);
    if (!seg->slot || !seg->ext) {
        st = cg_error_set(err, CG_NOMEM, "xnnpack: out of memory compiling a partition");
        goto done;
    }
    memcpy(seg->slot, ins, nin * sizeof *ins);
    memcpy(seg->slot + nin, outs, nout * sizeof *outs);
done:
    if (b->subgraph)
        xnn_delete_subgraph(b->subgraph);
    b->subgraph = NULL;
    b->ext_out = NULL;
    b->ext_out_count = 0;
    free(ins);
    free(outs);
    free(out_names);
    return st;
}

static cg_status xnng_compile(const cg_target *t, const cg_partition_desc *p, void **out,
                              cg_error *err)
{
    (void)t;
    *out = NULL;
    cg_status st = CG_OK;
    seg_plan sp;
    memset(&sp, 0, sizeof sp);
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
    for (size_t k = 0; k < p->node_count; k++)
        if (p->nodes[k] >= p->graph->node_count) {
            st = cg_error_set(err, CG_INVALID, "xnnpack: partition node index %zu out of range",
                              p->nodes[k]);
            goto fail;
        }
    s->in = calloc(p->input_count + 1, sizeof *s->in);
    s->out = calloc(p->output_count + 1, sizeof *s->out);
    s->lowered = calloc(p->node_count + 1, sizeof *s->lowered);
    if (!s->in || !s->out || !s->lowered) {
        st = cg_error_set(err, CG_NOMEM, "xnnpack: out of memory compiling a partition");
        goto fail;
    }
    for (; s->in_count < p->input_count; s->in_count++)
        if ((st = io_init(p, p->inputs[s->in_count], "partition input", true,
                          &s->in[s->in_count], err)) != CG_OK)
            goto fail;
    for (; s->out_count < p->output_count; s->out_count++)
        if ((st = io_init(p, p->outputs[s->out_count], "partition output", false,
                          &s->out[s->out_count], err)) != CG_OK)
            goto fail;
    if ((st = seg_plan_init(p, s, &sp, err)) != CG_OK)
        goto fail;
    if (!(s->seg = calloc(sp.count, sizeof *s->seg))) {
        st = cg_error_set(err, CG_NOMEM, "xnnpack: out of memory compiling a partition");
        goto fail;
    }
    s->seg_count = sp.count;
    if (p->threads > 1 && !(s->pool = pool_acquire((size_t)p->threads))) {
        st = cg_error_set(err, CG_NOMEM, "xnnpack: creating a pool of %d threads failed",
                          p->threads);
        goto fail;
    }
    s->report.threads = s->pool ? pthreadpool_get_threads_count(s->pool) : 1;
    b.model = p->model;
    b.graph = p->graph;
    b.types = p->types;
    b.desc = p;
    b.err = err;
    for (size_t sg = 0; sg < sp.count; sg++) {
        if ((st = build_segment(p, s, &sp, sg, &b, err)) != CG_OK)
            goto fail;
        /* its sources go before the next segment reads its own */
        xnng_segment_end(&b);
    }
    s->report.segments = sp.count;
    s->report.crossing_values = s->cross_count;
    s->report.transient_bytes_freed = b.transient_freed;
    s->report.transient_bytes_peak = b.transient_peak;
    s->report.lowered = s->lowered;
    s->report.xnn_node_count = b.xnn_nodes;
    s->report.weights_repacked = b.weights_repacked;
    s->report.weights_in_place = b.weights_in_place;
    for (size_t i = 0; i < s->in_count; i++)
        s->report.layout_inputs += s->in[i].nhwc;
    for (size_t i = 0; i < s->out_count; i++)
        s->report.layout_outputs += s->out[i].nhwc;
    /* the runtimes point into these: the state keeps them */
    s->buffers = b.buffers;
    memset(&b.buffers, 0, sizeof b.buffers);
    xnng_build_clear(&b);
    seg_plan_free(&sp);
    *out = s;
    return CG_OK;
fail:
    state_free(s); /* the runtimes, if any, go before the data they point into */
    xnng_build_clear(&b);
    seg_plan_free(&sp);
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
    }
    for (; made < s->out_count; made++) {
        const xnng_io *io = &s->out[made];
        st = cg_value_alloc_tensor(CG_DTYPE_FLOAT, io->rank, io->dims, &outputs[made], err);
        if (st != CG_OK)
            goto fail;
    }
    /* the segments in order, each on its slots' buffers */
    for (size_t k = 0; k < s->seg_count; k++) {
        xnng_segment *seg = &s->seg[k];
        for (size_t e = 0; e < seg->ext_count; e++) {
            size_t slot = seg->slot[e];
            const xnng_io *io = slot_io(s, slot);
            seg->ext[e].id = (uint32_t)e;
            seg->ext[e].data = io->staging ? (void *)io->staging
                                           : outputs[slot - s->in_count]->tensor.data;
        }
        enum xnn_status xs = xnn_setup_runtime(seg->runtime, seg->ext_count, seg->ext);
        if (xs == xnn_status_success)
            xs = xnn_invoke_runtime(seg->runtime);
        if (xs != xnn_status_success) {
            st = cg_error_set(err, CG_RUNTIME, "xnnpack: running the partition failed (%s)",
                              xnng_status_name(xs));
            goto fail;
        }
    }
    for (size_t i = 0; i < s->out_count; i++) {
        const xnng_io *io = &s->out[i];
        float *dst = outputs[i]->tensor.data;
        if (!io->nhwc) {
            /* staged only when a later segment read it too */
            if (io->staging)
                memcpy(dst, io->staging, (size_t)io->numel * sizeof(float));
            continue;
        }
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
