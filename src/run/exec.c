/*
 * The runtime: cg_runtime_init/run/free and the check of fed inputs.
 * The rest of the executor: frames and steps in frame.c, the schedule with
 * an assignment in schedule.c, the kernel-side API in kernel_api.c.
 *
 * A run binds the caller's inputs (borrowed) and the initializers (owned by
 * the plan) into a frame, runs the steps in order, drops each intermediate
 * after its last use, and moves (or copies, when not owned) the graph
 * outputs to the caller. In the main graph, a run whose input shapes match
 * the previous run's places intermediates at offsets of one arena planned
 * from that run (plan.c); any size that turns out different falls back to
 * its own allocation, so a data-dependent shape is never unsafe.
 * A runtime holds that plan and its arena, so it runs one call at a time;
 * threads that run concurrently each need their own runtime.
 *
 * In the float64 mode (opt.float64, run/fp64.c) a fed float32/16 input is
 * promoted to a DOUBLE copy the frame owns; a DOUBLE input feeds a declared
 * float type as it is.
 */
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "convgate/budget.h"
#include "core/threadpool.h"
#include "run/cpu.h"
#include "run/exec.h"
#include "run/fp64.h"
#include "run/ops/nn_common.h"

/* Initializer copies up to this many bytes are made at set-up, not at the
 * first run (cg_runtime_new). */
#define CG_INIT_COPIES_AT_SETUP ((size_t)32 << 20)

void cg_runtime_options_default(cg_runtime_options *opt)
{
    memset(opt, 0, sizeof *opt);
    opt->max_alloc_bytes = CG_DEFAULT_MAX_ALLOC;
}

/* --- runtime ------------------------------------------------------------------ */

/* runtimes made and not yet freed, in every thread (cg_runtimes_alive) */
static atomic_size_t runtimes_alive;

size_t cg_runtimes_alive(void)
{
    return atomic_load(&runtimes_alive);
}

cg_status cg_runtime_init(const cg_model *model, const cg_runtime_options *opt,
                          cg_runtime **out, cg_error *err)
{
    *out = NULL;
    if (!model || !model->graph)
        return cg_error_set(err, CG_USAGE, "cg_runtime_init: model has no graph");
    cg_runtime *rt = calloc(1, sizeof *rt);
    if (!rt)
        return cg_error_set(err, CG_NOMEM, "out of memory creating the runtime");
    atomic_fetch_add(&runtimes_alive, 1);
    rt->model = model;
    if (opt)
        rt->opt = *opt;
    else
        cg_runtime_options_default(&rt->opt);
    if (!rt->opt.max_alloc_bytes)
        rt->opt.max_alloc_bytes = CG_DEFAULT_MAX_ALLOC;
    rt->budget = rt->opt.budget ? rt->opt.budget : cg_budget_process();
    cg_status st;
    rt->simd = cg_simd_resolve(rt->opt.simd);
    cg_nn_blas_init(); /* OpenBLAS's one-time set-up belongs to set-up, not a first run */
    if (rt->opt.threads < 0) {
        st = cg_error_set(err, CG_USAGE, "thread count %d is negative", rt->opt.threads);
        goto fail;
    }
    if (rt->opt.threads > 1 && (st = cg_threadpool_new(rt->opt.threads, &rt->pool, err)) != CG_OK)
        goto fail;
    /* A duplicate kernel row is a registry bug, not the model's: the first
     * row wins and the registry unit test reports it. */
    cg_error reg_err;
    cg_error_clear(&reg_err);
    if (cg_registry_index_init(&rt->registry, &reg_err) == CG_NOMEM) {
        st = cg_error_set(err, CG_NOMEM, "%s", reg_err.msg);
        goto fail;
    }
    st = cg_plan_build(rt, model->graph, NULL, 0, &rt->main, err);
    if (st != CG_OK)
        goto fail;
    if ((st = cg_fold_constants(rt, err)) != CG_OK)
        goto fail;
    cg_fuse_activations(rt);
    rt->record_bytes = calloc(rt->main->slot_count + 1, sizeof *rt->record_bytes);
    if (!rt->record_bytes) {
        st = cg_error_set(err, CG_NOMEM, "out of memory creating the runtime");
        goto fail;
    }
    if (rt->opt.assignment && (st = cg_schedule_build(rt, err)) != CG_OK)
        goto fail;
    /* Initializer copies are left for the first run (split over the
     * threads there) when they are big: set-up stays fast for a model such
     * as vit_b_16 (346 MB of copies). A few MB cost a few ms here, and at
     * the first run of a small model they were most of what it paid over a
     * warm run (mobilenet_v3_small: 6.5 MB, 4.7 ms CPU, against 4.1 ms warm
     * runs). After the schedule: the copies only an executing partition
     * reads are dropped there. */
    if (cg_plan_pending_bytes(rt->main) <= CG_INIT_COPIES_AT_SETUP) {
        cg_plan_materialize(rt->main, rt->pool);
        rt->materialized = true;
    }
    if (rt->opt.node_precision && (st = cg_prec_init_build(rt, err)) != CG_OK)
        goto fail;
    bool subgraphs = false;
    for (size_t si = 0; si < rt->main->step_count && !subgraphs; si++)
        subgraphs = rt->main->steps[si].sub_count > 0;
    cg_heaps_prefault(rt, subgraphs);
    cg_mem_plan_predict(rt, NULL, 0); /* after the heap's reservation, which its arena takes */
    *out = rt;
    return CG_OK;
fail:
    cg_runtime_free(rt);
    return st;
}

cg_status cg_runtime_set_threads(cg_runtime *rt, int threads, cg_error *err)
{
    if (!rt)
        return cg_error_set(err, CG_USAGE, "set_threads: no runtime");
    if (threads < 0 || threads > CG_THREADPOOL_MAX)
        return cg_error_set(err, CG_USAGE, "thread count %d is outside [0, %d]", threads,
                            CG_THREADPOOL_MAX);
    int want = threads > 1 ? threads : 1;
    if (want == cg_threadpool_size(rt->pool))
        return CG_OK;
    cg_threadpool *pool = NULL;
    if (want > 1) {
        cg_status st = cg_threadpool_new(want, &pool, err);
        if (st != CG_OK)
            return st; /* the old pool stays */
    }
    cg_threadpool_free(rt->pool);
    rt->pool = pool;
    rt->opt.threads = threads;
    return CG_OK;
}

void cg_runtime_free(cg_runtime *rt)
{
    if (!rt)
        return;
    cg_schedule_free(rt);
    cg_prec_init_free(rt);
    cg_plan_free(rt->main);
    cg_mem_plan_clear(&rt->mem);
    cg_registry_index_free(&rt->registry);
    cg_threadpool_free(rt->pool);
    cg_buffers_free(rt);
    free(rt->record_bytes);
    free(rt->warnings);
    free(rt);
    atomic_fetch_sub(&runtimes_alive, 1);
}

void cg_runtime_free_outputs(cg_named_value *outputs, size_t count)
{
    if (!outputs)
        return;
    for (size_t i = 0; i < count; i++)
        cg_value_free(outputs[i].value);
    free(outputs);
}

static const char *type_kind_name(cg_type_kind k)
{
    switch (k) {
    case CG_TYPE_TENSOR: return "tensor";
    case CG_TYPE_SEQUENCE: return "sequence";
    case CG_TYPE_MAP: return "map";
    case CG_TYPE_OPTIONAL: return "optional";
    case CG_TYPE_SPARSE_TENSOR: return "sparse tensor";
    default: return "untyped";
    }
}

const char *cg_exec_value_kind_name(cg_value_kind k)
{
    switch (k) {
    case CG_VALUE_TENSOR: return "tensor";
    case CG_VALUE_SEQUENCE: return "sequence";
    default: return "optional";
    }
}

/* A fed input against its declared type: kind, dtype, rank, fixed dims.
 * In the float64 mode any float tensor may feed a declared float type: it
 * is promoted to double either way (an fp16 conversion computed in float64
 * is fed its source's float32 inputs). */
static cg_status check_input(const cg_value_info *vi, const cg_value *v, bool float64,
                             cg_error *err)
{
    const cg_type *t = vi->type;
    if (!t || t->kind == CG_TYPE_NONE || t->kind == CG_TYPE_OPTIONAL)
        return CG_OK;
    if ((t->kind == CG_TYPE_TENSOR && v->kind != CG_VALUE_TENSOR) ||
        (t->kind == CG_TYPE_SEQUENCE && v->kind != CG_VALUE_SEQUENCE))
        return cg_error_set(err, CG_INVALID, "input '%s': expected a %s, got a %s", vi->name,
                            type_kind_name(t->kind), cg_exec_value_kind_name(v->kind));
    if (t->kind != CG_TYPE_TENSOR)
        return CG_OK;
    const cg_tensor *x = &v->tensor;
    bool promoted = float64 && (x->dtype == CG_DTYPE_DOUBLE || cg_fp64_promotes(x->dtype)) &&
                    cg_dtype_valid(t->elem_type) && cg_fp64_promotes((cg_dtype)t->elem_type);
    if (t->has_elem_type && t->elem_type != 0 && t->elem_type != (int32_t)x->dtype && !promoted)
        return cg_error_set(err, CG_INVALID, "input '%s': expected element type %s, got %s",
                            vi->name,
                            cg_dtype_valid(t->elem_type) ? cg_dtype_name((cg_dtype)t->elem_type)
                                                         : "unknown",
                            cg_dtype_name(x->dtype));
    if (!t->shape)
        return CG_OK;
    /* the shape is written out only for an error: snprintf on every run
     * was a few percent of a small model's run (Silero VAD) */
    char got[256];
    if (t->shape->rank != (size_t)x->rank) {
        cg_exec_format_shape(x->rank, x->dims, got, sizeof got);
        return cg_error_set(err, CG_INVALID, "input '%s': expected rank %zu, got shape %s",
                            vi->name, t->shape->rank, got);
    }
    for (size_t d = 0; d < t->shape->rank; d++) {
        const cg_dim *dim = &t->shape->dims[d];
        if (dim->has_value && dim->value >= 0 && dim->value != x->dims[d]) {
            cg_exec_format_shape(x->rank, x->dims, got, sizeof got);
            return cg_error_set(err, CG_INVALID, "input '%s': dimension %zu must be %lld, got "
                                "shape %s", vi->name, d, (long long)dim->value, got);
        }
    }
    return CG_OK;
}

/* Appends one line to the runtime's warnings of this run. */
static void add_warning(cg_runtime *rt, const char *fmt, ...)
{
    char line[CG_ERROR_MSG_MAX];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    if (n < 0)
        return;
    size_t len = strlen(line);
    char *w = realloc(rt->warnings, rt->warnings_len + len + 2);
    if (!w)
        return;
    memcpy(w + rt->warnings_len, line, len);
    w[rt->warnings_len + len] = '\n';
    w[rt->warnings_len + len + 1] = '\0';
    rt->warnings = w;
    rt->warnings_len += len + 1;
}

const char *cg_runtime_warnings(const cg_runtime *rt)
{
    return rt && rt->warnings_len ? rt->warnings : NULL;
}

/* A produced graph output against its declared type. The element type and
 * the kind must match (ONNX Runtime refuses a model whose declared output
 * type contradicts what its graph computes); a contradicting shape (rank,
 * or a dimension given as a number) is a warning, as in ONNX Runtime, or
 * an error with opt.strict_output_shapes. */
static cg_status check_output(cg_runtime *rt, const cg_value_info *vi, const cg_value *v,
                              cg_error *err)
{
    const cg_type *t = vi->type;
    if (!t || t->kind == CG_TYPE_NONE || t->kind == CG_TYPE_OPTIONAL || !v)
        return CG_OK;
    if ((t->kind == CG_TYPE_TENSOR && v->kind != CG_VALUE_TENSOR) ||
        (t->kind == CG_TYPE_SEQUENCE && v->kind != CG_VALUE_SEQUENCE))
        return cg_error_set(err, CG_INVALID, "graph output '%s': the model declares a %s, the "
                            "graph produced a %s", vi->name, type_kind_name(t->kind),
                            cg_exec_value_kind_name(v->kind));
    if (t->kind != CG_TYPE_TENSOR)
        return CG_OK;
    const cg_tensor *x = &v->tensor;
    /* the float64 reference mode returns DOUBLE for every float type */
    bool promoted = rt->opt.float64 && x->dtype == CG_DTYPE_DOUBLE &&
                    cg_dtype_valid(t->elem_type) && cg_fp64_promotes((cg_dtype)t->elem_type);
    if (t->has_elem_type && t->elem_type != 0 && t->elem_type != (int32_t)x->dtype && !promoted)
        return cg_error_set(err, CG_INVALID, "graph output '%s': the model declares element "
                            "type %s, the graph produced %s (ONNX Runtime refuses this model)",
                            vi->name,
                            cg_dtype_valid(t->elem_type) ? cg_dtype_name((cg_dtype)t->elem_type)
                                                         : "unknown",
                            cg_dtype_name(x->dtype));
    if (!t->shape)
        return CG_OK;
    bool same = t->shape->rank == (size_t)x->rank;
    for (size_t d = 0; same && d < t->shape->rank; d++) {
        const cg_dim *dim = &t->shape->dims[d];
        same = !dim->has_value || dim->value < 0 || dim->value == x->dims[d];
    }
    if (same)
        return CG_OK;
    char want[256], got[256];
    size_t used = 0;
    want[0] = '\0';
    for (size_t d = 0; d < t->shape->rank && used + 24 < sizeof want; d++) {
        const cg_dim *dim = &t->shape->dims[d];
        int n = dim->has_value ? snprintf(want + used, sizeof want - used, "%s%lld", d ? "," : "",
                                          (long long)dim->value)
                               : snprintf(want + used, sizeof want - used, "%s?", d ? "," : "");
        used += n > 0 ? (size_t)n : 0;
    }
    cg_exec_format_shape(x->rank, x->dims, got, sizeof got);
    if (rt->opt.strict_output_shapes)
        return cg_error_set(err, CG_INVALID, "graph output '%s': the model declares shape [%s], "
                            "the graph produced %s", vi->name, want, got);
    add_warning(rt, "graph output '%s': the model declares shape [%s], the graph produced %s "
                "(ONNX Runtime warns about this too)", vi->name, want, got);
    return CG_OK;
}

/* Input shapes that key the memory plan; false when an input is not a
 * tensor (sequence contents are not captured by a shape). */
static bool build_signature(const cg_exec *f, int64_t **out, size_t *len)
{
    const cg_plan *p = f->plan;
    size_t n = 0, cap = p->graph->input_count * (CG_MAX_RANK + 2) + 1;
    int64_t *sig = malloc(cap * sizeof *sig);
    if (!sig)
        return false;
    for (size_t i = 0; i < p->graph->input_count; i++) {
        const cg_value *v = f->vals[p->input_slots[i]];
        if (!v || v->kind != CG_VALUE_TENSOR) {
            free(sig);
            return false;
        }
        n += cg_mem_key(sig + n, v->tensor.dtype, v->tensor.rank, v->tensor.dims);
    }
    *out = sig;
    *len = n;
    return true;
}

/* After the first run on a plan predicted at set-up: a value that found no
 * place in it (a size the prediction got wrong) drops the plan, so that
 * the next run records one; none confirms it. */
static void settle_predicted(cg_runtime *rt)
{
    if (rt->mem.misses)
        cg_mem_plan_clear(&rt->mem);
    else
        rt->mem.predicted = false;
}

cg_status cg_runtime_run(cg_runtime *rt, const cg_named_value *inputs, size_t input_count,
                         cg_named_value **outputs, size_t *output_count, cg_error *err)
{
    cg_error local;
    if (!err) {
        cg_error_clear(&local);
        err = &local;
    }
    *outputs = NULL;
    *output_count = 0;
    if (!rt)
        return cg_error_set(err, CG_USAGE, "cg_runtime_run: no runtime");
    rt->warnings_len = 0;
    if (rt->warnings)
        rt->warnings[0] = '\0';
    if (!rt->materialized) { /* initializer copies left for the first run */
        cg_plan_materialize(rt->main, rt->pool);
        rt->materialized = true;
    }
    const cg_plan *p = rt->main;
    const cg_graph *g = p->graph;
    cg_exec f;
    cg_value **outs = NULL;
    cg_named_value *named = NULL;
    int64_t *sig = NULL;
    size_t sig_len = 0;
    bool *fed = NULL;
    size_t *input_of_slot = NULL;
    bool recording, f_arena;
    /* the outputs returned (cg_runtime_options.returned_outputs) */
    size_t n_out = rt->opt.returned_outputs && rt->opt.returned_outputs < g->output_count
                       ? rt->opt.returned_outputs
                       : g->output_count;
    cg_status st = cg_frame_init(&f, rt, p, NULL, err);
    if (st != CG_OK)
        return st;
    f.is_main = true;
    fed = calloc(g->input_count + 1, sizeof *fed);
    outs = calloc(n_out + 1, sizeof *outs);
    if (!fed || !outs) {
        st = cg_error_set(err, CG_NOMEM, "out of memory starting a run");
        goto done;
    }

    /* name -> slot by the plan's hash, slot -> input by this inverse: a
     * linear search per input would make binding quadratic */
    input_of_slot = cg_plan_input_index(p);
    if (!input_of_slot) {
        st = cg_error_set(err, CG_NOMEM, "out of memory starting a run");
        goto done;
    }
    for (size_t j = 0; j < input_count; j++) {
        const char *name = inputs[j].name;
        size_t slot = cg_strmap_get(&p->names, name); /* CG_STRMAP_NONE for NULL too */
        size_t i = slot != CG_STRMAP_NONE && input_of_slot[slot] ? input_of_slot[slot] - 1
                                                                 : g->input_count;
        if (i == g->input_count) {
            st = cg_error_set(err, CG_USAGE, "the model has no input named '%s'",
                              name ? name : "(null)");
            goto done;
        }
        if (fed[i] || !inputs[j].value) {
            st = cg_error_set(err, CG_USAGE, "input '%s' is %s", name,
                              fed[i] ? "given twice" : "NULL");
            goto done;
        }
        st = check_input(&g->inputs[i], inputs[j].value, rt->opt.float64, err);
        if (st != CG_OK)
            goto done;
        fed[i] = true;
        f.vals[p->input_slots[i]] = inputs[j].value;
        f.own[p->input_slots[i]] = CG_OWN_NONE;
        if (rt->opt.float64 && cg_fp64_leaks(inputs[j].value)) {
            /* promoted once per run, owned by the frame */
            cg_value *wide = NULL;
            st = cg_fp64_promoted_copy(inputs[j].value, &wide, err);
            if (st != CG_OK) {
                cg_error_prefix(err, "input '%s': ", name);
                goto done;
            }
            f.vals[p->input_slots[i]] = wide;
            f.own[p->input_slots[i]] = CG_OWN_FULL;
        }
    }
    for (size_t i = 0; i < g->input_count; i++) {
        if (!fed[i] && p->slot_kind[p->input_slots[i]] != CG_SLOT_INIT) {
            st = cg_error_set(err, CG_USAGE, "input '%s' was not given", g->inputs[i].name);
            goto done;
        }
    }

    if (build_signature(&f, &sig, &sig_len)) {
        if (cg_mem_plan_for(&rt->mem, sig, sig_len)) {
            f.use_arena = true;
            rt->mem.misses = 0;
        } else {
            f.recording = true;
            memset(rt->record_bytes, 0, (p->slot_count + 1) * sizeof *rt->record_bytes);
        }
    }

    cg_threadpool_set_hot(rt->pool, true); /* kernels come back to back now */
    st = cg_frame_run(&f);
    cg_threadpool_set_hot(rt->pool, false);
    if (st != CG_OK)
        goto done;
    st = cg_frame_take_outputs(&f, outs, n_out, err);
    if (st != CG_OK)
        goto done;
    for (size_t i = 0; i < n_out && st == CG_OK; i++)
        st = check_output(rt, &g->outputs[i], outs[i], err);
    if (st != CG_OK) {
        for (size_t i = 0; i < n_out; i++)
            cg_value_free(outs[i]);
        goto done;
    }
    named = calloc(n_out + 1, sizeof *named);
    if (!named) {
        for (size_t i = 0; i < n_out; i++)
            cg_value_free(outs[i]);
        st = cg_error_set(err, CG_NOMEM, "out of memory returning outputs");
        goto done;
    }
    for (size_t i = 0; i < n_out; i++) {
        named[i].name = g->outputs[i].name;
        named[i].value = outs[i];
    }
    *outputs = named;
    *output_count = n_out;
done:
    recording = f.recording;
    f_arena = f.use_arena;
    cg_frame_free(&f);
    /* after the frame has given every value back to the heap, whose
     * reservation the plan takes as its arena; a plan that cannot be built
     * just means no arena */
    if (recording && st == CG_OK)
        (void)cg_mem_plan_build(rt, sig, sig_len, NULL);
    else if (f_arena && rt->mem.predicted && st == CG_OK)
        settle_predicted(rt);
    cg_heap_release(rt); /* what the plan did not take */
    free(fed);
    free(input_of_slot);
    free(outs);
    free(sig);
    return st;
}
